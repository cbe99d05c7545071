//! Guards (`require`) in a character's batches: the whole batch fails, with the character
//! unchanged, unless the guard holds at its point of the batch.

mod common;

use common::{add, value};
use data::{Character, SheetOp};
use formula::Value;
use solver::{Guard, Operation};
use std::sync::Arc;

fn shop() -> Character {
    // The ruleset of `docs/examples/shop/`.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/shop");
    let r = data::load(&[dir]).unwrap_or_else(|e| panic!("{e:?}"));
    let mut c = Character::new(Arc::new(r)).unwrap();
    let purse = SheetOp::SetInput { channel: "Purse".into(), on: None, value: Value::Number(4.into()) };
    c.apply(&[purse]).unwrap();
    c
}

fn require(formula: &str, message: &str) -> SheetOp {
    SheetOp::Solver(Operation::Require(Guard::new(formula, message)))
}

#[test]
fn a_purchase_is_paid_for_or_not_made() {
    let mut c = shop();
    // Buy a sword: the guard after it sees the gold it cost.
    let r = c.apply(&[add("ITEM", "Sword", None, None), require("Gold >= 0", "can pay")]).unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!((value(&c, "Gold"), value(&c, "Load")), ("1".into(), "2".into()));
    // A second sword cannot be paid for: nothing changes, the object is not added.
    let e =
        c.apply(&[add("ITEM", "Sword", Some("sword2"), None), require("Gold >= 0", "can pay")]).unwrap_err();
    assert_eq!((e.index, e.code.as_str()), (1, "solver.guard_failed"));
    let solve = e.solve.expect("the solver's error");
    assert_eq!(solve.code, solver::codes::GUARD_FAILED);
    assert!(
        solve.message.contains("guard `can pay` failed: `Gold >= 0` is false (read Gold = -2)"),
        "{}",
        solve.message
    );
    assert!(!c.has_object("sword2"));
    assert_eq!((value(&c, "Gold"), value(&c, "Load")), ("1".into(), "2".into()));
    // The character goes on as if the rejected batch never came.
    c.apply(&[add("ITEM", "Pack", None, None), require("Load <= 7", "can carry")]).unwrap();
    assert_eq!(value(&c, "Load"), "7");
}
