//! Clocks and expiring effects (`docs/examples/battle/`): effects that last until a clock
//! passes a value expire in the batch that moves it, and say so.

mod common;

use common::{add, value};
use data::{Character, SheetOp, Until};
use rust_decimal::Decimal;
use std::sync::Arc;

fn battle() -> Character {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/battle");
    let r = data::load(&[dir]).unwrap_or_else(|e| panic!("{e:?}"));
    Character::new(Arc::new(r)).unwrap()
}

fn until(clock: &str, on: Option<&str>, after: i64, relative: bool) -> Until {
    Until { clock: clock.into(), on: on.map(Into::into), after: Decimal::from(after), relative }
}

fn lasting(op: SheetOp, until: Until) -> SheetOp {
    SheetOp::Lasting { op: Box::new(op), until }
}

fn tick(clock: &str, on: Option<&str>) -> SheetOp {
    SheetOp::Tick { clock: clock.into(), on: on.map(Into::into), by: Decimal::ONE }
}

fn expired(c: &Character) -> Vec<String> {
    c.expired().iter().map(|e| e.to_string()).collect()
}

#[test]
fn effects_expire_when_their_clock_passes() {
    let mut c = battle();
    c.apply(&[
        lasting(add("SPELL", "Shield", None, None), until("Turn", None, 1, true)),
        lasting(add("SPELL", "Bless", None, None), until("Turn", None, 3, false)),
    ])
    .unwrap();
    assert_eq!((value(&c, "AC"), value(&c, "Attack")), ("14".into(), "1".into()));
    // Turn 0 → 1: Shield lasts while Turn has not passed 1.
    c.apply(&[tick("Turn", None)]).unwrap();
    assert_eq!(value(&c, "AC"), "14");
    assert!(c.expired().is_empty());
    // 1 → 2: it passes 1; Shield goes, in the same batch, and the report says so.
    let r = c.apply(&[tick("Turn", None)]).unwrap();
    assert_eq!(value(&c, "AC"), "10");
    assert!(!c.has_object("Shield"));
    assert_eq!(expired(&c), ["object `Shield` expired when Turn passed 1"]);
    assert!(r.named(c.sheet()).iter().any(|ch| ch.var.to_string() == "AC"));
    // Jumping to 5 passes 3: Bless goes.
    c.apply(&[SheetOp::SetClock { clock: "Turn".into(), on: None, to: Decimal::from(5) }]).unwrap();
    assert_eq!(value(&c, "Attack"), "0");
    assert_eq!(expired(&c), ["object `Bless` expired when Turn passed 3"]);
    assert_eq!(value(&c, "Turn"), "5");
}

/// A creature's own clock, an ad-hoc modifier that lasts until it ticks, and what is removed
/// another way stops waiting.
#[test]
fn per_instance_clocks_and_modifiers() {
    let mut c = battle();
    let slowed =
        solver::ModifierSpec::new("slowed", "Speed", solver::ModKind::Add, "-10", "spell").on("Goblin");
    c.apply(&[
        add("CREATURE", "Goblin", None, None),
        lasting(
            SheetOp::Solver(solver::Operation::AddModifier(slowed.clone())),
            until("TurnEnds", Some("Goblin"), 0, true),
        ),
    ])
    .unwrap();
    assert_eq!(value(&c, "Goblin.Speed"), "20");
    c.apply(&[tick("Turn", None)]).unwrap();
    assert_eq!(value(&c, "Goblin.Speed"), "20", "the global Turn is another clock");
    c.apply(&[tick("TurnEnds", Some("Goblin"))]).unwrap();
    assert_eq!(value(&c, "Goblin.Speed"), "30");
    assert_eq!(expired(&c), ["modifier `slowed` expired when Goblin.TurnEnds passed 0"]);
    // Removed by hand before its clock passes: nothing left to expire.
    let slowed = lasting(
        SheetOp::Solver(solver::Operation::AddModifier(slowed)),
        until("TurnEnds", Some("Goblin"), 0, true),
    );
    c.apply(&[slowed]).unwrap();
    c.apply(&[SheetOp::Solver(solver::Operation::RemoveModifier("slowed".into()))]).unwrap();
    c.apply(&[tick("TurnEnds", Some("Goblin"))]).unwrap();
    assert!(c.expired().is_empty());
    // An object removed and added again does not take the old one's expiry.
    c.apply(&[lasting(add("SPELL", "Shield", None, None), until("Turn", None, 0, true))]).unwrap();
    c.apply(&[SheetOp::RemoveObject("Shield".into()), add("SPELL", "Shield", None, None)]).unwrap();
    c.apply(&[tick("Turn", None)]).unwrap();
    assert!(c.has_object("Shield"));
}

#[test]
fn clocks_only_move_forward() {
    let mut c = battle();
    c.apply(&[SheetOp::SetClock { clock: "Turn".into(), on: None, to: Decimal::from(3) }]).unwrap();
    let e =
        c.apply(&[SheetOp::SetClock { clock: "Turn".into(), on: None, to: Decimal::from(2) }]).unwrap_err();
    assert_eq!(e.code.as_str(), "sheet.clock_backwards");
    assert_eq!(e.message, "clock `Turn` is at 3: it cannot move back to 2");
    let e = c.apply(&[SheetOp::Tick { clock: "Turn".into(), on: None, by: Decimal::from(-1) }]).unwrap_err();
    assert_eq!(e.code.as_str(), "sheet.clock_backwards");
    let set = SheetOp::SetInput { channel: "Turn".into(), on: None, value: formula::Value::Number(9.into()) };
    assert_eq!(c.apply(&[set]).unwrap_err().code.as_str(), "sheet.clock_backwards");
    assert_eq!(c.apply(&[tick("Nope", None)]).unwrap_err().code.as_str(), "sheet.unknown_channel");
    // An effect that would already have expired is refused.
    let e =
        c.apply(&[lasting(add("SPELL", "Bless", None, None), until("Turn", None, 2, false))]).unwrap_err();
    assert_eq!(e.message, "until Turn 2: clock `Turn` is already at 3, past 2");
    assert_eq!(value(&c, "Turn"), "3");
    // A failed batch moves no clock and expires nothing.
    c.apply(&[lasting(add("SPELL", "Bless", None, None), until("Turn", None, 3, false))]).unwrap();
    let e = c.apply(&[tick("Turn", None), add("SPELL", "Nope", None, None)]).unwrap_err();
    assert_eq!(e.index, 1);
    assert_eq!(value(&c, "Turn"), "3");
    assert!(c.has_object("Bless"));
    c.apply(&[tick("Turn", None)]).unwrap();
    assert!(!c.has_object("Bless"));
}

/// A STRING formula (marked `=`) follows what it reads, as any formula does.
#[test]
fn a_text_formula_follows_the_clock() {
    let mut c = battle();
    assert_eq!(value(&c, "Banner"), "Turn 0, AC 10");
    c.apply(&[lasting(add("SPELL", "Shield", None, None), until("Turn", None, 0, true)), tick("Turn", None)])
        .unwrap();
    assert_eq!(value(&c, "Banner"), "Turn 1, AC 10", "Shield came and went in one batch");
    let trace = c.sheet().trace("Banner").unwrap();
    assert_eq!(&*trace.steps[0].instruction, r#""Turn " + text(Turn) + ", AC " + text(AC)"#);
}

/// What a front end lists of a sheet: its objects (kind, key, where defined, in the order
/// added) and the channels set, each with its kind — a clock moved is a clock.
#[test]
fn a_sheet_lists_its_objects_and_channels() {
    let mut c = battle();
    c.apply(&[add("SPELL", "Shield", None, None), tick("Turn", None)]).unwrap();
    let objects = c.objects();
    let shield = objects.iter().find(|o| &*o.id == "Shield").expect("Shield on the sheet");
    assert_eq!(
        (&*shield.kind, &*shield.key, shield.parent.as_deref(), shield.listed),
        ("SPELL", "Shield", None, true)
    );
    assert!(shield.at.to_string().contains("battle.toml:"), "{}", shield.at);
    assert_eq!(objects.last().map(|o| &*o.id), Some("Shield"), "in the order added");
    let channels = c.channels();
    assert!(channels.contains(&("Turn".to_owned(), data::ChannelKind::Clock)), "{channels:?}");
}

/// A rejected batch puts the timing back exactly: the clock it moved, the effects it expired
/// (in their places, so later expiries come in the same order), the ones it registered and
/// the ones it stopped waiting for — as a twin that never saw the batch shows.
#[test]
fn a_rejected_batch_leaves_every_effect_waiting_as_before() {
    let slow = |id: &str, by: &str, after: i64| {
        let spec = solver::ModifierSpec::new(id, "Speed", solver::ModKind::Add, by, "spell").on("Goblin");
        lasting(SheetOp::Solver(solver::Operation::AddModifier(spec)), until("Turn", None, after, false))
    };
    let make = || {
        let mut c = battle();
        c.apply(&[
            add("CREATURE", "Goblin", None, None),
            lasting(add("SPELL", "Shield", None, None), until("Turn", None, 1, false)),
            slow("s1", "-1", 1),
            lasting(add("SPELL", "Bless", None, None), until("Turn", None, 2, false)),
            slow("s2", "-2", 2),
            slow("s3", "-3", 1),
        ])
        .unwrap();
        c
    };
    // A character alone, and one whose state a copy shares: both put back as they were, the
    // copy untouched.
    let (mut alone, mut shared) = (make(), make());
    let copy = shared.clone();
    let to = |n: i64| SheetOp::SetClock { clock: "Turn".into(), on: None, to: Decimal::from(n) };
    for c in [&mut alone, &mut shared] {
        // Turn to 2 expires Shield, s1 and s3, around Bless and s2; then s1 is given again,
        // Bless is removed (no longer waiting), another effect waits, and an unknown object
        // fails it.
        let batch = [
            to(2),
            slow("s1", "-10", 5),
            SheetOp::RemoveObject("Bless".into()),
            slow("s4", "-4", 5),
            add("SPELL", "Nope", None, None),
        ];
        let e = c.apply(&batch).unwrap_err();
        assert_eq!(e.index, 4);
        // The same for a batch the solver rejects after the same move: an id taken twice.
        let e = c.apply(&[to(2), slow("s5", "-5", 5), slow("s5", "-5", 5)]).unwrap_err();
        assert_eq!((e.index, e.code.as_str()), (2, "solver.duplicate_modifier"));
        // Two moves in one batch, the second past everything, then rejected.
        let e = c.apply(&[to(1), to(4), add("SPELL", "Nope", None, None)]).unwrap_err();
        assert_eq!(e.index, 2);
    }
    for mut k in [alone, shared, copy] {
        assert_eq!(value(&k, "Turn"), "0");
        assert_eq!(value(&k, "Goblin.Speed"), "24");
        k.apply(&[to(3)]).unwrap();
        assert_eq!(
            expired(&k),
            [
                "object `Shield` expired when Turn passed 1",
                "modifier `s1` expired when Turn passed 1",
                "object `Bless` expired when Turn passed 2",
                "modifier `s2` expired when Turn passed 2",
                "modifier `s3` expired when Turn passed 1",
            ]
        );
        assert_eq!(value(&k, "Goblin.Speed"), "30");
    }
}
