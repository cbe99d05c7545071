//! The prelude loads as a native ruleset; a creature made from it has the seed's defaults, and
//! the defaults written as formulas follow what they read until an input overrides them; the
//! table lists every attribute the seed names.

use super::*;
use data::{Character, SheetOp};
use formula::Value;
use std::sync::Arc;

fn creature() -> Character {
    let text = ruleset_text().expect("the prelude's defaults compile");
    let r = data::load_str(&text, "prelude.toml").unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let mut c = Character::new(Arc::new(r)).expect("a character");
    let add =
        SheetOp::AddObject { kind: KIND.into(), key: OBJECT.into(), id: Some("goblin".into()), parent: None };
    c.apply(&[add]).expect("a creature");
    c
}

fn set(c: &mut Character, attribute: &str, v: &str) {
    let value = Value::Number(formula::parse_decimal(v).expect("a number"));
    c.apply(&[SheetOp::SetInput { channel: attribute.into(), on: Some("goblin".into()), value }])
        .expect("set");
}

fn get(c: &Character, attribute: &str) -> String {
    match c.sheet().value(&format!("goblin.{attribute}")) {
        Ok(Ok(v)) => v.to_string(),
        other => panic!("{attribute}: {other:?}"),
    }
}

#[test]
fn a_creature_has_the_seeds_defaults_and_they_follow_what_they_read() {
    let mut c = creature();
    for (a, want) in
        [("REGAINS_HP", "1"), ("ALIGNMENT", "11"), ("HEADS", "1"), ("BLINDED", "0"), ("DAMAGE.AMOUNT", "0")]
    {
        assert_eq!(get(&c, a), want, "{a}");
    }
    // BREATH_HOLD_MINUTES = (1,CON,+,.5,max): it follows CON.
    assert_eq!(get(&c, "BREATH_HOLD_MINUTES"), "1");
    set(&mut c, "CON", "3");
    assert_eq!(get(&c, "BREATH_HOLD_MINUTES"), "4");
    set(&mut c, "CON", "-2");
    assert_eq!(get(&c, "BREATH_HOLD_MINUTES"), "0.5");
    // CARRY_CAPACITY: 240 for a Medium (SIZE 5) creature with STR 16; for a Tiny one (SIZE
    // 2.5) the ifelse gives 0, so 2^((0-5)/5) = 0.5 of that.
    set(&mut c, "SIZE", "5");
    set(&mut c, "STR", "16");
    assert_eq!(get(&c, "CARRY_CAPACITY"), "240");
    assert_eq!(get(&c, "MIN_SPACE_WITHOUT_SQUEEZING"), "5");
    set(&mut c, "SIZE", "2.5");
    assert_eq!(get(&c, "MIN_SPACE_WITHOUT_SQUEEZING"), "2.5");
    assert_eq!(get(&c, "CARRY_CAPACITY"), "120", "2^((0-5)/5) = 0.5: 0.5 × 15 × 16");
    set(&mut c, "PERFORMANCE", "4");
    set(&mut c, "DECEPTION", "6");
    assert_eq!(get(&c, "MIMIC_SOUNDS_VOICES_INSIGHT_DC"), "6");
    // An input wins over the default.
    set(&mut c, "BREATH_HOLD_MINUTES", "9");
    assert_eq!(get(&c, "BREATH_HOLD_MINUTES"), "9");
}

/// Every attribute the seed's *Variables* section names (read in place from
/// `../shared/seeds/`) is in the prelude, a field of `DAMAGE` or `ATTACK` as `DAMAGE.AMOUNT`.
#[test]
fn the_prelude_lists_every_attribute_the_seed_names() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/seeds/creature-features.txt");
    let Ok(seed) = std::fs::read_to_string(path) else {
        eprintln!("notice: {path} is not here; skipped");
        return;
    };
    let start = seed.find("may be probed").expect("the section");
    let end = seed.find("The above attributes").expect("its end");
    let section = seed[start..end].replace("\\_", "_");
    let mut parent = "";
    let mut named = Vec::new();
    for item in section.split("* ").skip(1) {
        let word: String = item.chars().take_while(|c| c.is_ascii_uppercase() || *c == '_').collect();
        if word.len() < 2 || word.starts_with("NV") {
            continue;
        }
        let name = match word.as_str() {
            "DAMAGE" | "ATTACK" => {
                parent = if word == "DAMAGE" { "DAMAGE" } else { "ATTACK" };
                continue;
            }
            "AMOUNT" | "CRITICAL" | "TYPE" | "MELEE" | "ADVANTAGE" | "DISADVANTAGE" | "WEAPON" => {
                format!("{parent}.{word}")
            }
            _ => word,
        };
        named.push(name);
    }
    assert!(named.len() > 80, "the section's attributes were found: {named:?}");
    for name in &named {
        assert!(ATTRIBUTES.iter().any(|a| a.name == name), "`{name}` is missing from the prelude");
    }
    // And each default the seed gives as a number is the prelude's.
    for a in ATTRIBUTES {
        if let Default::Number(v) = a.default
            && v != "0"
        {
            assert!(
                section.contains(&format!("{} = {v}", a.name)),
                "{}'s default {v} is not the seed's",
                a.name
            );
        }
    }
}
