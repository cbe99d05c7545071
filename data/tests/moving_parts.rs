//! Property tests over a game's moving parts — clocks and expiring effects, stocks, guards —
//! through `Character::apply`:
//! - incremental ≡ from scratch: after every batch, the values equal a full solve of the same
//!   sheet;
//! - replay: the accepted batches applied again to a new character give, batch by batch, the
//!   same values and the same expiries (a game replays exactly from its log);
//! - a rejected batch changes nothing.

mod common;

use data::{Character, SheetOp, Until};
use proptest::prelude::*;
use rust_decimal::Decimal;
use std::sync::Arc;

const RULES: &str = r#"
[scopes]
"PC.CREATURE" = "PC"
[variables.PC]
AC = "NUMBER"
Attack = "NUMBER"
Total = "NUMBER"
Banner = "STRING"
[variables."PC.CREATURE"]
Speed = "NUMBER"
[clocks.PC]
Turn = {}
[clocks."PC.CREATURE"]
TurnEnds = {}
[stocks.PC]
Gold = { min = "0" }
HP = { min = "0", max = "AC + 10", bounds = "clamp" }
[kinds.SPELL]
scope = "PC"
[kinds.CREATURE]
scope = "PC.CREATURE"
[global]
modify = [
  { var = "AC", set = "10" },
  { var = "Total", set = "AC + Attack + Gold + HP" },
  { var = "Banner", set = '="Turn " + text(Turn) + " Gold " + text(Gold)' },
]
[[object]]
kind = "SPELL"
key = "Shield"
modify = [{ var = "AC", add = "4" }]
[[object]]
kind = "SPELL"
key = "Bless"
modify = [{ var = "Attack", add = "1" }]
[[object]]
kind = "CREATURE"
key = "Goblin"
modify = [{ var = "Speed", set = "30" }]
"#;

/// One generated step.
#[derive(Clone, Debug)]
enum Move {
    /// A spell (0: Shield, 1: Bless) under id `s{id}`, lasting `after` turns from now, or
    /// for good.
    Spell {
        spell: usize,
        id: usize,
        after: Option<u8>,
    },
    Remove {
        id: usize,
    },
    Goblin,
    /// An ad-hoc ADD on the goblin's Speed, lasting until its own clock passes +`after`.
    Slow {
        id: usize,
        after: u8,
    },
    Tick {
        by: u8,
        goblin: bool,
    },
    SetClock {
        to: u8,
    },
    Adjust {
        stock: usize,
        by: i8,
    },
    /// `require Total >= bound`.
    Require {
        bound: i8,
    },
}

fn arb_move() -> impl Strategy<Value = Move> {
    prop_oneof![
        3 => (0usize..2, 0usize..4, prop::option::of(0u8..3)).prop_map(|(spell, id, after)| Move::Spell { spell, id, after }),
        1 => (0usize..4).prop_map(|id| Move::Remove { id }),
        1 => Just(Move::Goblin),
        1 => (0usize..3, 0u8..2).prop_map(|(id, after)| Move::Slow { id, after }),
        3 => (0u8..3, any::<bool>()).prop_map(|(by, goblin)| Move::Tick { by, goblin }),
        1 => (0u8..8).prop_map(|to| Move::SetClock { to }),
        2 => (0usize..2, -8i8..9).prop_map(|(stock, by)| Move::Adjust { stock, by }),
        1 => (0i8..40).prop_map(|bound| Move::Require { bound }),
    ]
}

fn op(m: &Move) -> SheetOp {
    let until = |clock: &str, on: Option<&str>, after: u8| Until {
        clock: clock.into(),
        on: on.map(Into::into),
        after: Decimal::from(after),
        relative: true,
    };
    match m {
        Move::Spell { spell, id, after } => {
            let key = ["Shield", "Bless"][*spell];
            let add = common::add("SPELL", key, Some(&format!("s{id}")), None);
            match after {
                Some(a) => SheetOp::Lasting { op: Box::new(add), until: until("Turn", None, *a) },
                None => add,
            }
        }
        Move::Remove { id } => SheetOp::RemoveObject(format!("s{id}")),
        Move::Goblin => common::add("CREATURE", "Goblin", None, None),
        Move::Slow { id, after } => {
            let spec =
                solver::ModifierSpec::new(&format!("slow{id}"), "Speed", solver::ModKind::Add, "-5", "slow")
                    .on("Goblin");
            let add = SheetOp::Solver(solver::Operation::AddModifier(spec));
            SheetOp::Lasting { op: Box::new(add), until: until("TurnEnds", Some("Goblin"), *after) }
        }
        Move::Tick { by, goblin } => SheetOp::Tick {
            clock: if *goblin { "TurnEnds" } else { "Turn" }.into(),
            on: goblin.then(|| "Goblin".into()),
            by: Decimal::from(*by),
        },
        Move::SetClock { to } => SheetOp::SetClock { clock: "Turn".into(), on: None, to: Decimal::from(*to) },
        Move::Adjust { stock, by } => SheetOp::Adjust {
            channel: ["Gold", "HP"][*stock].into(),
            on: None,
            by: by.to_string().as_str().into(),
        },
        Move::Require { bound } => SheetOp::Solver(solver::Operation::Require(solver::Guard::new(
            &format!("Total >= {bound}"),
            "enough",
        ))),
    }
}

/// An accepted batch, with the values and the expiries it left.
type Accepted = (Vec<SheetOp>, Vec<(String, String)>, Vec<String>);

fn values(c: &Character) -> Vec<(String, String)> {
    c.sheet().values().into_iter().map(|(r, v)| (r.to_string(), format!("{v:?}"))).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn clocks_stocks_and_guards_replay_and_equal_a_full_solve(
        moves in prop::collection::vec(arb_move(), 1..40),
        sizes in prop::collection::vec(1usize..4, 40),
    ) {
        let ruleset = Arc::new(data::load_str(RULES, "moving.toml").expect("the ruleset loads"));
        let mut c = Character::new(ruleset.clone()).expect("a character");
        let mut log: Vec<Accepted> = Vec::new();
        let mut moves = moves.iter();
        for size in sizes {
            let batch: Vec<SheetOp> = moves.by_ref().take(size).map(op).collect();
            if batch.is_empty() {
                break;
            }
            let before = values(&c);
            match c.apply(&batch) {
                Ok(_) => {
                    let expired: Vec<String> = c.expired().iter().map(|e| e.to_string()).collect();
                    log.push((batch, values(&c), expired));
                }
                Err(_) => prop_assert_eq!(values(&c), before, "a rejected batch changes nothing"),
            }
            // Incremental ≡ from scratch.
            let mut scratch = c.sheet().clone();
            scratch.solve_all();
            prop_assert_eq!(scratch.values(), c.sheet().values());
        }
        // Replay: the accepted batches, again, on a new character.
        let mut again = Character::new(ruleset).expect("a character");
        for (batch, want, expired) in &log {
            again.apply(batch).expect("an accepted batch applies again");
            prop_assert_eq!(&values(&again), want);
            let got: Vec<String> = again.expired().iter().map(|e| e.to_string()).collect();
            prop_assert_eq!(&got, expired);
        }
    }
}
