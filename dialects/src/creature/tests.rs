//! The creature dialect: the example compiles, loads and its rules check; every refusal has
//! its code and points at the text at fault (a table: file text, code, the text pointed at).

use super::*;

fn example() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/examples/creature");
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir).expect("the example").map(|e| e.expect("an entry").path()).collect();
    files.sort();
    files.iter().map(|f| (f.display().to_string(), std::fs::read_to_string(f).expect("readable"))).collect()
}

/// The deva example compiles to a ruleset that loads, whose event rules check, with the one
/// warning its under-construction effect deserves.
#[test]
fn the_example_compiles_loads_and_its_rules_check() {
    let c = compile_texts(&example()).unwrap_or_else(|e| panic!("{e:#?}"));
    assert_eq!(c.counts, [("features", 8), ("creatures", 2)]);
    let r = c.load().unwrap_or_else(|e| panic!("{e:#?}"));
    let book = events::RuleBook::compile(Arc::new(r)).unwrap_or_else(|e| panic!("{e:#?}"));
    // 3 prelude rules; per subfeature one, per effect one, per recharge its refills.
    assert_eq!(book.rules().len(), 22);
    let codes: Vec<&str> = c.warnings.iter().map(|w| w.code.as_str()).collect();
    assert_eq!(codes, ["creature.under_construction"]);
    assert!(c.warnings[0].message.contains("Plane shift"), "{}", c.warnings[0].message);
    assert_eq!(c.warnings[0].text, "\"Plane shift\"");
}

const CREATURES: &str = r#"{"creatures": [{"name": "deva", "attributes": {"INT": 3}, "features": [{"feature": "F", "vars": [4, 8]}]}]}"#;

/// Compiles a feature file (with a creatures file that gives `F` to a deva) and returns the
/// first error's code and the text it points at.
fn refusal(feature: &str) -> (String, String) {
    let files = vec![("f.json".to_owned(), feature.to_owned()), ("c.json".to_owned(), CREATURES.to_owned())];
    match compile_texts(&files) {
        Ok(c) => match c.warnings.first() {
            Some(w) => (w.code.as_str().to_owned(), w.text.clone()),
            None => panic!("{feature}: compiled"),
        },
        Err(e) => (e[0].code.as_str().to_owned(), e[0].text.clone()),
    }
}

fn f(subfeature: &str) -> String {
    format!(r#"{{"name": "F", "text": "The {{NAME}}", "subfeatures": [{subfeature}]}}"#)
}

/// Each refusal: its code, and the text it points at (a postfix error at its token).
// long: a table of cases, one line each.
#[test]
fn bad_features_are_refused_with_a_code_at_the_text() {
    let cases: &[(&str, &str, &str)] = &[
        // A postfix stack left unbalanced: the value left over.
        (
            r#"{"trigger": "passive", "effects": [{"effect": ["Set N = N", "SPELLDC", "(8,INT,PROF)"]}]}"#,
            "postfix.leftover",
            "8",
        ),
        // An unknown operator.
        (
            r#"{"trigger": "passive", "effects": [{"effect": ["Set N = N", "SPELLDC", "(8,INT,%)"]}]}"#,
            "postfix.bad_token",
            "%",
        ),
        (
            r#"{"trigger": "passive", "effects": [{"effect": ["Set N = N", "SPELLDC", "(8,+)"]}]}"#,
            "postfix.underflow",
            "+",
        ),
        (
            r#"{"trigger": "passive", "effects": [{"effect": ["Set N = N", "SPELLDC", "(8,NOPE,+)"]}]}"#,
            "postfix.unknown_name",
            "NOPE",
        ),
        (
            r#"{"trigger": "passive", "effects": [{"effect": ["Set N = N", "SPELLDC", "(V2)"]}]}"#,
            "postfix.unknown_name",
            "V2",
        ),
        (
            r#"{"trigger": "passive", "effects": [{"effect": ["Set N = N", "NOPE", 1]}]}"#,
            "creature.effect",
            "\"NOPE\"",
        ),
        (
            r#"{"trigger": "passive", "effects": [{"effect": ["Set N = N", "HP", 1]}]}"#,
            "creature.attribute",
            "\"HP\"",
        ),
        (
            r#"{"trigger": "passive", "effects": [{"effect": ["Fly to the moon"]}]}"#,
            "creature.effect",
            "\"Fly to the moon\"",
        ),
        (
            r#"{"trigger": "passive", "effects": [{"effect": ["Deal X damage", 3]}]}"#,
            "creature.unsupported",
            "{\"effect\": [\"Deal X damage\", 3]}",
        ),
        (
            r#"{"trigger": "passive", "effects": [{"effect": ["Surprised"]}]}"#,
            "creature.under_construction",
            "\"Surprised\"",
        ),
        (
            r#"{"trigger": "passive", "effects": [{"effect": ["Damage dealt is magical"]}]}"#,
            "creature.not_modelled",
            "\"Damage dealt is magical\"",
        ),
        (r#"{"trigger": ["sneezes", "self"]}"#, "creature.trigger", "\"sneezes\""),
        (r#"{"trigger": ["moves", "self"]}"#, "creature.trigger", "\"moves\""),
        (
            r#"{"trigger": ["turnstart", "self"], "effects": [{"target": "creature", "effect": ["Regain X hp", 1]}]}"#,
            "creature.unsupported",
            "\"creature\"",
        ),
        (
            r#"{"trigger": ["turnstart", "self"], "conditions": "(creature.HP,0,>)"}"#,
            "postfix.unknown_name",
            "creature.HP",
        ),
        (
            r#"{"trigger": ["hits", "self", "creature"], "effects": [{"target": "creature", "effect": ["Set N = N", "FLYING", "(self.STR)"]}]}"#,
            "postfix.unknown_name",
            "self.STR",
        ),
        (
            r#"{"trigger": "action", "effects": [{"target": "creatures", "effect": ["Regain X hp", 1]}]}"#,
            "creature.noun",
            "\"creatures\"",
        ),
        (
            r#"{"trigger": "action", "effects": [{"target": "object", "effect": ["Regain X hp", 1]}]}"#,
            "creature.noun",
            "\"object\"",
        ),
        (
            r#"{"trigger": "action", "effects": [{"effect": ["Grant advantage"], "duration": "Until the cows come home"}]}"#,
            "creature.duration",
            "\"Until the cows come home\"",
        ),
        (
            r#"{"trigger": "action", "effects": [{"effect": ["Grant advantage"], "duration": "Until overridden or dead"}]}"#,
            "creature.under_construction",
            "\"Until overridden or dead\"",
        ),
        (r#"{"trigger": "action", "recharge": [1, "7-8"]}"#, "creature.recharge", "\"7-8\""),
        // A creature's id is a word: `$this` would read as the events layer's own name.
        (r#"{"trigger": ["attacks", "creature", "$this"]}"#, "creature.noun", "\"$this\""),
        (r#"{"trigger": "action", "recharge": [1]}"#, "creature.recharge", "[1]"),
        (r#"{"trigger": "action", "cost": 1}"#, "creature.shape", "\"cost\""),
        (
            r#"{"trigger": "action", "effects": [{"effect": ["Impose disadvantage on TYPE", "naps"]}]}"#,
            "creature.effect",
            "\"naps\"",
        ),
    ];
    for (sub, code, at) in cases {
        let (got_code, got_at) = refusal(&f(sub));
        assert_eq!((got_code.as_str(), got_at.as_str()), (*code, *at), "{sub}");
    }
}

/// The file-level refusals: not JSON, a feature twice, a creature's unknown feature or
/// attribute, a template's unknown variable.
#[test]
fn bad_files_are_refused_with_a_code_at_the_text() {
    let one = |files: &[(&str, &str)]| {
        let files: Vec<(String, String)> =
            files.iter().map(|(n, t)| ((*n).to_owned(), (*t).to_owned())).collect();
        let e = compile_texts(&files).expect_err("refused");
        (
            e[0].code.as_str().to_owned(),
            e[0].text.clone(),
            e[0].at.as_ref().map(|a| (a.file().to_owned(), a.line(), a.col())),
        )
    };
    assert_eq!(one(&[("a.json", "{\"name\": \"F\",\n  oops}")]).0, "creature.json");
    // Nesting that would take the parser's stack is refused first.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(one(&[("a.json", &deep)]).0, "creature.json");
    // Names reach the events layer as text: one starting with `$` would read as a name there.
    let (code, text, _) = one(&[("a.json", r#"{"name": "$this"}"#)]);
    assert_eq!((code.as_str(), text.as_str()), ("creature.shape", "\"$this\""));
    let (code, text, at) = one(&[("a.json", r#"[{"name": "F"}, {"name": "f"}]"#)]);
    assert_eq!(
        (code.as_str(), text.as_str(), at),
        ("creature.duplicate", "\"f\"", Some(("a.json".into(), 1, 26)))
    );
    let (code, text, _) = one(&[("c.json", r#"{"creatures": [{"name": "d", "features": ["Nope"]}]}"#)]);
    assert_eq!((code.as_str(), text.as_str()), ("creature.unknown_feature", "\"Nope\""));
    let (code, text, _) = one(&[("c.json", r#"{"creatures": [{"name": "d", "attributes": {"LUCK": 3}}]}"#)]);
    assert_eq!((code.as_str(), text.as_str()), ("creature.attribute", "\"LUCK\""));
    let (code, text, _) = one(&[
        ("f.json", r#"{"name": "F", "text": "deals {V0}d{V3}"}"#),
        ("c.json", r#"{"creatures": [{"name": "d", "features": [{"feature": "F", "vars": [1]}]}]}"#),
    ]);
    assert_eq!((code.as_str(), text.as_str()), ("text.unknown_variable", "{V3}"));
    // A creatures file's `attributes` add one: then a creature may set it.
    let files = vec![(
        "c.json".to_owned(),
        r#"{"attributes": {"LUCK": 1, "BREATH_HOLD_MINUTES": "(2,CON,*)"}, "creatures": [{"name": "d", "attributes": {"LUCK": 3}}]}"#.to_owned(),
    )];
    let c = compile_texts(&files).unwrap_or_else(|e| panic!("{e:#?}"));
    assert!(c.files[0].1.contains("var = \"BREATH_HOLD_MINUTES\", set = \"2 * CON\""), "{}", c.files[0].1);
    c.load().unwrap_or_else(|e| panic!("{e:#?}"));
}
