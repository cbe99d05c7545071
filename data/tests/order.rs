//! The order modifiers apply in, declared by a ruleset (`[ruleset] order`) or a variable
//! (`{ format = "NUMBER", order = "applied" }`): a card's `+200` then `x2` on 300.

mod common;

use common::{add, value};
use data::Character;
use std::sync::Arc;

/// A card game's ruleset: cards are objects on the global scope; `BP` follows the ruleset's
/// order, `PcgenBP` says PCGen's.
fn cards(order: &str) -> Arc<data::Ruleset> {
    let text = format!(
        r#"
[ruleset]
name = "cards"
{order}
[variables.PC]
BP = "NUMBER"
PcgenBP = {{ format = "NUMBER", order = "inherent" }}
[kinds.CARD]
scope = "PC"
[global]
modify = [{{ var = "BP", set = "300" }}, {{ var = "PcgenBP", set = "300" }}]
[[object]]
kind = "CARD"
key = "Boost"
modify = [{{ var = "BP", add = "200" }}, {{ var = "PcgenBP", add = "200" }}]
[[object]]
kind = "CARD"
key = "Double"
modify = [{{ var = "BP", multiply = "2" }}, {{ var = "PcgenBP", multiply = "2" }}]
"#
    );
    match data::load_str(&text, "cards.toml") {
        Ok(r) => Arc::new(r),
        Err(e) => panic!("{}", e.iter().map(|d| format!("{d}\n")).collect::<String>()),
    }
}

#[test]
fn applied_order_follows_the_order_cards_were_played() {
    let mut c = Character::new(cards(r#"order = "applied""#)).unwrap();
    c.apply(&[add("CARD", "Boost", None, None), add("CARD", "Double", None, None)]).unwrap();
    assert_eq!((value(&c, "BP"), value(&c, "PcgenBP")), ("1000".into(), "800".into()));
    // Played the other way round: doubled first, then boosted.
    let mut c = Character::new(cards(r#"order = "applied""#)).unwrap();
    c.apply(&[add("CARD", "Double", None, None), add("CARD", "Boost", None, None)]).unwrap();
    assert_eq!((value(&c, "BP"), value(&c, "PcgenBP")), ("800".into(), "800".into()));
    // Removing the boost and playing it again puts it last.
    c.apply(&[data::SheetOp::RemoveObject("Boost".into())]).unwrap();
    assert_eq!(value(&c, "BP"), "600");
}

#[test]
fn pcgen_order_is_the_default() {
    let mut c = Character::new(cards("")).unwrap();
    c.apply(&[add("CARD", "Boost", None, None), add("CARD", "Double", None, None)]).unwrap();
    assert_eq!((value(&c, "BP"), value(&c, "PcgenBP")), ("800".into(), "800".into()));
    let trace = c.sheet().trace("BP").unwrap();
    let kinds: Vec<_> = trace.steps.iter().map(|s| s.kind.name()).collect();
    assert_eq!(kinds, ["SET", "MULTIPLY", "ADD"]);
}
