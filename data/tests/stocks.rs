//! Stocks (`[stocks]`): channels that `adjust` steps change by a formula evaluated at that
//! moment, within bounds that clamp or reject (`docs/examples/village/`).

mod common;

use common::value;
use data::{Character, SheetOp};
use formula::Value;
use std::sync::Arc;

fn village() -> Character {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/village");
    let r = data::load(&[dir]).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(r.stock(r.rules().resolve(r.rules().global(), "Gold").unwrap()).is_some());
    let mut c = Character::new(Arc::new(r)).unwrap();
    c.apply(&[set("Hired", 3), set("Gold", 10), set("HP", 12)]).unwrap();
    c
}

fn set(channel: &str, v: i64) -> SheetOp {
    SheetOp::SetInput { channel: channel.into(), on: None, value: Value::Number(v.into()) }
}

fn adjust(channel: &str, by: &str) -> SheetOp {
    SheetOp::Adjust { channel: channel.into(), on: None, by: by.into() }
}

/// "2 gold per worker" pays at the workers of that moment and stays paid.
#[test]
fn a_payout_is_paid_once() {
    let mut c = village();
    c.apply(&[adjust("Gold", "2 * Workers")]).unwrap();
    assert_eq!(value(&c, "Gold"), "16");
    c.apply(&[set("Hired", 5)]).unwrap();
    assert_eq!(value(&c, "Gold"), "16");
    let trace = c.sheet().trace("Gold").unwrap();
    assert_eq!(&*trace.steps[0].source, "input: adjust by `2 * Workers` = 6");
    // Listed as what it is: a stock.
    assert!(c.channels().contains(&("Gold".to_owned(), data::ChannelKind::Stock)), "{:?}", c.channels());
}

/// Gold rejects going below 0 — the whole batch fails and nothing changes — where HP clamps
/// to 0 and to MaxHP; a stock set directly keeps its bounds too.
#[test]
fn bounds_reject_or_clamp() {
    let mut c = village();
    let e = c.apply(&[adjust("HP", "-1"), adjust("Gold", "-11")]).unwrap_err();
    assert_eq!((e.index, e.code.as_str()), (1, "solver.out_of_bounds"));
    assert!(e.message.contains("would make it -1, past its minimum `0` = 0"), "{}", e.message);
    assert_eq!((value(&c, "Gold"), value(&c, "HP")), ("10".into(), "12".into()));
    c.apply(&[adjust("HP", "-20")]).unwrap();
    assert_eq!(value(&c, "HP"), "0");
    c.apply(&[adjust("HP", "100")]).unwrap();
    assert_eq!(value(&c, "HP"), "12");
    c.apply(&[set("HP", 50)]).unwrap();
    assert_eq!(value(&c, "HP"), "12", "set_input on a stock clamps too");
    let e = c.apply(&[set("Gold", -1)]).unwrap_err();
    assert_eq!(e.code.as_str(), "solver.out_of_bounds");
}

#[test]
fn only_stocks_are_adjusted() {
    let mut c = village();
    let e = c.apply(&[adjust("Hired", "1")]).unwrap_err();
    assert_eq!(e.code.as_str(), "sheet.not_a_stock");
    assert_eq!(e.message, "channel `Hired` is not a stock (declared in [stocks]): set it with set_input");
    let e = c.apply(&[adjust("Nope", "1")]).unwrap_err();
    assert_eq!(e.code.as_str(), "sheet.unknown_channel");
    let e = c.apply(&[adjust("Gold", "Workers >")]).unwrap_err();
    assert_eq!(e.code.as_str(), "solver.formula");
}
