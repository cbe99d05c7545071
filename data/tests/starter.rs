//! The bundled starter ruleset: the example character of `data/examples/starter-character.json`
//! built through the API, and how it changes.

mod common;

use data::{Character, Ruleset, SheetOp};
use formula::Value;
use std::sync::Arc;

fn starter() -> Arc<Ruleset> {
    match data::load(&[data::starter_ruleset_dir()]) {
        Ok(r) => Arc::new(r),
        Err(e) => panic!("{}", e.iter().map(|d| format!("{d}\n")).collect::<String>()),
    }
}

use common::{add, value as v};

fn input(channel: &str, on: Option<&str>, value: Value) -> SheetOp {
    SheetOp::SetInput { channel: channel.into(), on: on.map(Into::into), value }
}

fn n(x: i64) -> Value {
    Value::Number(x.into())
}

/// The example character, as in `data/examples/starter-character.json`.
fn example() -> Character {
    example_on(starter())
}

/// The example character on `ruleset`.
fn example_on(ruleset: Arc<Ruleset>) -> Character {
    let mut c = Character::new(ruleset).unwrap();
    let mut ops = vec![input("Level", None, n(3))];
    for (ability, rolled) in [("STR", 15), ("DEX", 14), ("CON", 13), ("INT", 10), ("WIS", 12), ("CHA", 8)] {
        ops.push(input("Rolled", Some(ability), n(rolled)));
    }
    ops.extend([
        input("Handedness", None, Value::String(Arc::from("left"))),
        add("RACE", "Stoneborn", None, None),
        add("SIZE", "M", None, None),
        add("EQUIPMENT", "Ring Hauberk", Some("armor"), None),
        add("EQUIPMENT", "Arming Sword", Some("sword"), None),
        add("ENHANCEMENT", "Keen Edge", Some("keen"), Some("sword")),
        add("EQUIPMENT", "Travel Pack", Some("pack"), None),
        add("SKILL", "Athletics", None, None),
        input("Ranks", Some("Athletics"), n(3)),
        add("SKILL", "Perception", None, None),
        input("Ranks", Some("Perception"), n(2)),
        add("FEAT", "Toughness", None, None),
        add("CONDITION", "Shaken", None, None),
    ]);
    c.apply(&ops).unwrap();
    c
}

#[test]
fn the_example_character() {
    let c = example();
    let expect = [
        ("STR", "2"),
        ("DEX", "2"),
        ("CON.Score", "15"), // 13 rolled + 2 from Stoneborn (modify_other on the ability)
        ("CON", "2"),
        ("CHA.Score", "6"),
        ("CHA", "-2"),
        ("MaxHP", "24"), // max(1, 3 * (5 + 2)) + Toughness max(3, 3)
        ("ArmorBonus", "5"),
        ("MaxDexBonus", "3"), // 99, then the armor's MIN 3
        ("AC", "17"),         // 10 + 5 + min(2, 3) + 0
        ("Walk.Speed", "15"), // Stoneborn 20, Ring Hauberk -5
        ("Climb.Speed", "10"),
        ("sword.Enhancement", "1"),
        ("sword#1.Damage", "1d8"),
        ("sword#1.AttackBonus", "3"), // STR 2 + Keen Edge 1
        ("armor.Enhancement", "0"),   // the enhancement raised one item only
        ("Load", "48"),
        ("CarryingCapacity", "225"),
        ("Encumbered", "false"),
        ("Athletics.Total", "1"),  // 3 ranks + STR 2 - Shaken 2 - armor check 2
        ("Perception.Total", "1"), // 2 + WIS 1 - 2, no armor penalty
        ("Handedness", "Left"),
        ("Space", "5,5"),
        ("HitDie", "1d8"),
    ];
    for (r, want) in expect {
        assert_eq!(v(&c, r), want, "{r}");
    }
    let t = c.sheet().trace("AC").unwrap();
    assert!(t.steps[0].source.contains("00-core.toml:"), "{}", t.steps[0].source);
}

#[test]
fn the_example_character_changes() {
    let mut c = example();
    // Taking the armor off: AC loses its bonus but DEX is no longer capped; Walk speeds up.
    let rep = c.apply(&[SheetOp::RemoveObject("armor".into())]).unwrap();
    assert_eq!(v(&c, "AC"), "12");
    assert_eq!(v(&c, "Walk.Speed"), "20");
    assert_eq!(v(&c, "Athletics.Total"), "3", "no armor check penalty when not armored");
    assert!(rep.named(c.sheet()).iter().any(|ch| ch.var.to_string() == "AC"));
    // A ward sets a floor under the armor bonus (MAX at priority 50).
    c.apply(&[add("CONDITION", "Warded", None, None)]).unwrap();
    assert_eq!(v(&c, "ArmorBonus"), "4");
    c.apply(&[add("EQUIPMENT", "Plated Harness", Some("plate"), None)]).unwrap();
    assert_eq!(v(&c, "ArmorBonus"), "8", "8 is above the ward's floor");
    assert_eq!(v(&c, "AC"), "19", "10 + 8 + min(DEX 2, MaxDex 1)");
    c.apply(&[add("FEAT", "Armor Training", None, None)]).unwrap();
    assert_eq!(v(&c, "MaxDexBonus"), "2", "the feat adds 1 after the armor's MIN");
    // A weak character is encumbered: the conditional modifier on Walk applies.
    c.apply(&[input("Rolled", Some("STR"), n(3))]).unwrap();
    assert_eq!(v(&c, "CarryingCapacity"), "45");
    assert_eq!(v(&c, "Encumbered"), "true", "load 68 > 45");
    assert_eq!(v(&c, "Walk.Speed"), "0", "20 - 10 (plate) - 10 (encumbered)");
    // Growing large doubles the carrying capacity, lifting the encumbrance.
    c.apply(&[SheetOp::RemoveObject("M".into()), add("SIZE", "L", None, None)]).unwrap();
    assert_eq!(v(&c, "CarryingCapacity"), "90");
    assert_eq!(v(&c, "Encumbered"), "false");
    assert_eq!(v(&c, "Reach"), "10");
    assert_eq!(v(&c, "Space"), "10,10");
    assert_eq!(v(&c, "AC"), "19", "10 + 8 + min(DEX 2, MaxDex 2) - 1 for the size");
    // Swapping the race replaces the movement types it granted.
    c.apply(&[SheetOp::RemoveObject("Stoneborn".into()), add("RACE", "Wavekin", None, None)]).unwrap();
    assert!(c.sheet().value("Climb.Speed").is_err());
    assert_eq!(v(&c, "Swim.Speed"), "40");
    assert_eq!(v(&c, "Walk.Speed"), "20", "30 - 10 (plate)");
    assert_eq!(v(&c, "CON.Score"), "13");
    assert_eq!(v(&c, "DEX.Score"), "16");
}

#[test]
fn sheet_operations_are_checked() {
    let mut c = example();
    let before = c.sheet().values();
    let bad = [
        (add("EQUIPMENT", "Ring Hauberk", Some("sword"), None), data::sheet_codes::DUPLICATE_ID),
        (add("ENHANCEMENT", "Keen Edge", Some("k2"), Some("nowhere")), data::sheet_codes::BAD_PARENT),
        (add("MOVEMENT", "Swim", None, None), data::sheet_codes::NOT_ADDABLE),
        (add("ABILITY", "STR", None, None), data::sheet_codes::NOT_ADDABLE),
        (add("SPELL", "Fireball", None, None), data::sheet_codes::UNKNOWN_KIND),
        (SheetOp::RemoveObject("Walk".into()), data::sheet_codes::NOT_REMOVABLE),
        (SheetOp::RemoveObject("nothing".into()), data::sheet_codes::UNKNOWN_ID),
        (input("Handedness", None, Value::String(Arc::from("Up"))), data::sheet_codes::BAD_VALUE),
        (input("Ranks", Some("STR"), n(1)), data::sheet_codes::UNKNOWN_CHANNEL),
        (SheetOp::Solver(solver::Operation::RemoveModifier("armor:1".into())), data::sheet_codes::MANAGED),
    ];
    for (op, code) in bad {
        // Each bad operation is second in its batch: the first is undone with it.
        let e = c.apply(&[add("FEAT", "Fleet", None, None), op.clone()]).unwrap_err();
        assert_eq!((e.index, e.code), (1, code), "{op:?}: {}", e.message);
        assert_eq!(c.sheet().values(), before, "{op:?} left the sheet unchanged");
        assert!(!c.has_object("Fleet"));
    }
    // Removing an item removes what is attached to it.
    c.apply(&[SheetOp::RemoveObject("sword".into())]).unwrap();
    assert!(!c.has_object("keen"));
    assert!(c.sheet().value("sword#1.Damage").is_err());
}

#[test]
fn rulesets_and_characters_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Ruleset>();
    fn send<T: Send>() {}
    send::<Character>();
    // One compiled ruleset serves characters on several threads.
    let r = starter();
    let handles: Vec<_> = (10..14)
        .map(|score| {
            let r = r.clone();
            std::thread::spawn(move || {
                let mut c = Character::new(r).unwrap();
                c.apply(&[input("Rolled", Some("STR"), n(score))]).unwrap();
                v(&c, "STR")
            })
        })
        .collect();
    let got: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(got, ["0", "0", "1", "1"]);
}

/// Characters of one ruleset start from one blank, built once and copied: a new character has
/// the same values, modifiers and traces as the first, whatever was done to the first since,
/// and a change to one character never shows in another.
#[test]
fn new_characters_are_copies_of_one_blank_and_stay_apart() {
    let ruleset = starter();
    let blank = Character::new(ruleset.clone()).unwrap().sheet().values();
    let mut first = Character::new(ruleset.clone()).unwrap();
    first.apply(&[add("EQUIPMENT", "Ring Hauberk", Some("armor"), None)]).unwrap();
    let first_values = first.sheet().values();
    assert_ne!(first_values, blank);
    let second = Character::new(ruleset.clone()).unwrap();
    assert_eq!(second.sheet().values(), blank, "the blank is untouched by the first character");
    // The bookkeeping of objects is shared copy on write too: the first character's are its own.
    assert!(first.has_object("armor") && !second.has_object("armor"));
    assert_eq!(second.object_ids(), Character::new(ruleset.clone()).unwrap().object_ids());
    first.apply(&[SheetOp::RemoveObject("armor".into())]).unwrap();
    assert_ne!(first.sheet().values(), first_values);
    let third = Character::new(ruleset).unwrap();
    assert_eq!(third.sheet().values(), blank);
    assert_eq!(second.sheet().values(), blank);
    for (r, v) in third.sheet().values() {
        assert_eq!(third.sheet().trace(&r.to_string()).unwrap().value, v, "{r}");
    }
}

/// Each thread copies new characters from a starting character of its own (on a small
/// ruleset): the example character made on other threads is the one made here — the same
/// values, traces, objects and modifiers.
#[test]
fn characters_made_on_other_threads_are_the_same() {
    let ruleset = starter();
    let here = example_on(ruleset.clone());
    let there: Vec<Character> = (0..3)
        .map(|_| {
            let r = ruleset.clone();
            std::thread::spawn(move || example_on(r))
        })
        .map(|h| h.join().expect("thread"))
        .collect();
    for c in &there {
        assert_eq!(c.sheet().values(), here.sheet().values());
        assert_eq!(c.object_ids(), here.object_ids());
        // (Modifier ids come in no particular order.)
        let ids = |c: &Character| {
            let mut ids: Vec<String> = c.sheet().modifier_ids().map(str::to_owned).collect();
            ids.sort();
            ids
        };
        assert_eq!(ids(c), ids(&here));
        for (r, _) in here.sheet().values() {
            let r = r.to_string();
            assert_eq!(c.sheet().trace(&r).unwrap(), here.sheet().trace(&r).unwrap(), "{r}");
        }
    }
}

/// A thread's starting character of a ruleset is let go once the ruleset is dropped: the next
/// new character the thread makes (of another ruleset) evicts it, and with it the last hold on
/// the ruleset's rules.
#[test]
fn a_threads_starting_character_goes_with_its_ruleset() {
    let a = starter();
    let rules = Arc::downgrade(a.rules());
    std::thread::spawn(move || {
        drop(Character::new(a.clone()).unwrap());
        drop(a);
        assert!(rules.upgrade().is_some(), "the thread's starting character holds the rules");
        drop(Character::new(starter()).unwrap());
        assert!(rules.upgrade().is_none(), "evicted with its ruleset");
    })
    .join()
    .expect("thread");
}

/// A thread keeps the starting characters of a few rulesets; characters of more rulesets used
/// on it at once are copies of each ruleset's shared one, and are the same.
#[test]
fn characters_of_many_rulesets_on_one_thread_are_the_same() {
    let rulesets: Vec<Arc<Ruleset>> = (0..6).map(|_| starter()).collect();
    std::thread::spawn(move || {
        let first: Vec<Character> = rulesets.iter().map(|r| example_on(r.clone())).collect();
        for (r, c) in rulesets.iter().zip(&first) {
            let again = example_on(r.clone());
            assert_eq!(again.sheet().values(), c.sheet().values());
            assert_eq!(again.object_ids(), c.object_ids());
        }
    })
    .join()
    .expect("thread");
}
