//! "Did you mean" hints, as a table: each misspelled name gets the nearest known one as its
//! diagnostic's help, and a name near nothing gets no hint.

mod common;

const BASE: &str = r#"
[scopes]
"PC.ITEM" = "PC"
[variables.PC]
Strength = "NUMBER"
ArmorClass = "NUMBER"
Armored = "BOOLEAN"
[variables."PC.ITEM"]
Bonus = "NUMBER"
[functions]
halfOf = "arg(0) / 2"
[kinds.ITEM]
scope = "PC.ITEM"
[kinds.MOVEMENT]
scope = "PC"
presence = "granted"
[[object]]
kind = "MOVEMENT"
key = "Walk"
"#;

/// The errors of BASE with `extra` added: (code, offending text, help).
fn errors(extra: &str) -> Vec<(String, String, Option<String>)> {
    match data::load_str(&format!("{BASE}{extra}"), "t.toml") {
        Ok(_) => Vec::new(),
        Err(es) => es.into_iter().map(|e| (e.code.to_string(), e.text, e.help)).collect(),
    }
}

/// (case, extra text, code, offending text, help)
const CASES: &[(&str, &str, &str, &str, Option<&str>)] = &[
    (
        "a modifier's variable",
        "[[object]]\nkind = \"ITEM\"\nkey = \"X\"\nmodify = [{ var = \"Strenght\", add = \"1\" }]\n",
        "data.unknown_variable",
        "Strenght",
        Some("did you mean `Strength`?"),
    ),
    (
        "a variable of a parent scope, seen from a child",
        "[[object]]\nkind = \"ITEM\"\nkey = \"X\"\nmodify = [{ var = \"Bonus\", add = \"ArmourClass\" }]\n",
        "data.formula",
        "ArmourClass",
        Some("did you mean `ArmorClass`?"),
    ),
    (
        "a variable in a formula",
        "[global]\nmodify = [{ var = \"ArmorClass\", add = \"Strengh + 1\" }]\n",
        "data.formula",
        "Strengh",
        Some("did you mean `Strength`?"),
    ),
    (
        "a user function",
        "[global]\nmodify = [{ var = \"ArmorClass\", add = \"halfof2(Strength)\" }]\n",
        "data.formula",
        "halfof2",
        Some("did you mean `halfOf`?"),
    ),
    (
        "a built-in function",
        "[global]\nmodify = [{ var = \"ArmorClass\", add = \"flor(Strength / 2)\" }]\n",
        "data.formula",
        "flor",
        Some("did you mean `floor`?"),
    ),
    (
        "an object's kind",
        "[[object]]\nkind = \"ITEMS\"\nkey = \"X\"\n",
        "data.unknown_kind",
        "ITEMS",
        Some("did you mean `ITEM`?"),
    ),
    (
        "a granted object's key",
        "[[object]]\nkind = \"ITEM\"\nkey = \"Boots\"\ngrant = [{ kind = \"MOVEMENT\", key = \"Wlak\" }]\n",
        "data.unknown_object",
        "Wlak",
        Some("did you mean `Walk`?"),
    ),
    (
        "a granted object's kind",
        "[[object]]\nkind = \"ITEM\"\nkey = \"Boots\"\ngrant = [{ kind = \"MOVEMNT\", key = \"Walk\" }]\n",
        "data.unknown_kind",
        "MOVEMNT",
        Some("did you mean `MOVEMENT`?"),
    ),
    (
        "a section",
        "[variable.PC]\nX = \"NUMBER\"\n",
        "data.syntax",
        "variable",
        Some("did you mean `variables`?"),
    ),
    (
        "an object's key",
        "[[object]]\nkind = \"ITEM\"\nkey = \"X\"\ngroup = [\"a\"]\n",
        "data.syntax",
        "group",
        Some("did you mean `groups`?"),
    ),
    ("a kind's key", "[kinds.TOOL]\nscop = \"PC\"\n", "data.syntax", "scop", Some("did you mean `scope`?")),
    (
        "a modifier type",
        "[global]\nmodify = [{ var = \"ArmorClass\", ad = \"1\" }]\n",
        "data.bad_modifier_type",
        "AD",
        Some("did you mean `ADD`?"),
    ),
    (
        "a name near nothing",
        "[global]\nmodify = [{ var = \"ArmorClass\", add = \"Charisma\" }]\n",
        "data.formula",
        "Charisma",
        None,
    ),
];

#[test]
fn misspelled_names_get_the_nearest_known_one() {
    let mut failures = Vec::new();
    for (case, extra, code, text, help) in CASES {
        let es = errors(extra);
        let got: Vec<_> = es.iter().filter(|(c, t, _)| c == code && t == text).collect();
        match got.as_slice() {
            [(_, _, h)] if h.as_deref() == *help => {}
            _ => {
                failures.push(format!("{case}: expected {code} at `{text}` with help {help:?}, got {es:#?}"))
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_pcgen_mod_of_a_misspelled_object_names_the_nearest() {
    let errors = common::load_pcgen_memory(&[
        ("t.pcc", "DATACONTROL:dc.lst\nVARIABLE:var.lst\nEQUIPMENT:eq.lst\n"),
        ("dc.lst", "DEFAULTVARIABLEVALUE:NUMBER|0\n"),
        ("var.lst", "LOCAL:PC.EQUIPMENT|NUMBER=ItemLevel\n"),
        ("eq.lst", "Longsword\tMODIFY:ItemLevel|SET|1\nLongsowrd.MOD\tMODIFY:ItemLevle|ADD|1\n"),
    ])
    .unwrap_err();
    let found: Vec<(String, String, Option<String>)> =
        errors.into_iter().map(|e| (e.code.to_string(), e.text, e.help)).collect();
    assert_eq!(
        found,
        [(
            "data.unknown_object".to_owned(),
            "Longsowrd".to_owned(),
            Some("did you mean `Longsword`?".to_owned())
        )],
    );
}
