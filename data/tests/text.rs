//! Text values: a STRING modifier's value is its text unless marked `=` as a formula; a text
//! that reads as a formula gets a load warning.

mod common;

use data::Character;
use std::sync::Arc;

const RULES: &str = r#"
[variables.PC]
Level = "NUMBER"
Title = "STRING"
Motto = "STRING"
Note = "STRING"
Name = "STRING"
Handle = "STRING"
[global]
modify = [
  { var = "Level", set = "3" },
  { var = "Title", set = '="Level " + text(Level) + " " + Name' },
  { var = "Motto", set = '"Level " + text(Level)' },
  { var = "Note", set = "==5" },
  { var = "Name", set = "Ada" },
  { var = "Handle", set = "@ada" },
]
"#;

#[test]
fn string_formulas_are_marked_and_literals_that_read_as_formulas_are_said() {
    let r = data::load_str(RULES, "text.toml").unwrap_or_else(|e| panic!("{e:?}"));
    let warnings: Vec<String> = r.warnings().iter().map(|d| format!("{} {}", d.code, d.message)).collect();
    assert_eq!(
        warnings,
        [
            r#"data.literal_like_formula `"Level " + text(Level)` is taken as the text it is, but reads as a formula; write `="Level " + text(Level)` to make it one"#
        ]
    );
    let c = Character::new(Arc::new(r)).unwrap();
    assert_eq!(common::value(&c, "Title"), "Level 3 Ada");
    assert_eq!(common::value(&c, "Motto"), r#""Level " + text(Level)"#);
    assert_eq!(common::value(&c, "Note"), "=5");
    // Text that looks like a reference is text too.
    assert_eq!(common::value(&c, "Handle"), "@ada");
    // A marked formula that does not check is an error at its text.
    let bad = RULES.replace("text(Level) + \" \" + Name", "Level");
    let e = data::load_str(&bad, "text.toml").unwrap_err();
    assert_eq!(e[0].code.as_str(), "data.formula");
}
