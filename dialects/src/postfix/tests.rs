//! The seed's postfix formulas and rules, as a table: each compiles to the formula shown and,
//! evaluated by the `formula` crate over the variables below, gives the value the seed says;
//! every error has its code and points at its token.

use super::*;
use formula::{CheckEnv, EvalContext, Format, Formula, Library, Limits, Symbols, Value, VarId};
use rust_decimal::Decimal;
use std::str::FromStr;

/// The variables formulas read here, by name: attributes and a runtime variable.
const VARS: [(&str, &str); 11] = [
    ("STR", "16"),
    ("INT", "3"),
    ("PROF", "2"),
    ("CON", "-1"),
    ("SIZE", "5"),
    ("PERFORMANCE", "4"),
    ("DECEPTION", "6"),
    ("creature.STR", "11"),
    ("NV1", "0"),
    ("ZERO", "0"),
    ("ZERO_ONE", "0"),
];

struct Vars;

impl Symbols for Vars {
    fn resolve(&self, name: &str) -> Option<(VarId, Format)> {
        let i = VARS.iter().position(|(n, _)| n.eq_ignore_ascii_case(name))?;
        Some((VarId(i as u32), Format::Number))
    }
}

impl EvalContext for Vars {
    fn value(&self, id: VarId) -> Option<Value> {
        let (_, v) = VARS.get(id.0 as usize)?;
        Some(Value::Number(Decimal::from_str(v).ok()?))
    }
}

/// The seed's names: attributes, `self.X` (the creature's own), `creature.X`, `V0…` (the
/// feature's runtime variables: 4 and 8, as for the deva), `NVn`.
fn names(n: &str) -> Result<String, String> {
    let runtime = ["4", "8"];
    if let Some(i) = n.strip_prefix('V').and_then(|i| i.parse::<usize>().ok()) {
        return runtime.get(i).map(|v| (*v).to_owned()).ok_or_else(|| format!("no runtime variable `{n}`"));
    }
    let own = n.strip_prefix("self.").unwrap_or(n);
    match VARS.iter().find(|(v, _)| v.eq_ignore_ascii_case(own)) {
        Some((v, _)) => Ok((*v).to_owned()),
        None => Err(format!("unknown attribute `{n}`")),
    }
}

fn value(formula: &str) -> String {
    let f = Formula::compile(formula, &Library::new(), &CheckEnv::new(&Vars), &Limits::default())
        .unwrap_or_else(|e| panic!("`{formula}` compiles: {e:?}"));
    match f.evaluate(&Vars, None) {
        Ok(v) => v.to_string(),
        Err(e) => format!("error: {}", e.message),
    }
}

#[test]
fn the_seeds_formulas_and_rules() {
    // (postfix, sheetd formula, value)
    let table: &[(&str, &str, &str)] = &[
        // The seed's examples.
        ("(8,INT,PROF,+,+)", "8 + (INT + PROF)", "13"),
        ("(1,CON,+,.5,max)", "max(1 + CON, 0.5)", "0.5"),
        (
            "(2,SIZE,2.5,-,SIZE,0,ifelse,5,-,5,/,^,15,*,STR,*)",
            "((2 ^ ((if((SIZE - 2.5) != 0, SIZE, 0) - 5) / 5)) * 15) * STR",
            "240",
        ),
        ("(PERFORMANCE,DECEPTION,max)", "max(PERFORMANCE, DECEPTION)", "6"),
        // The rules, order mattering: & and | return an operand, ! takes one.
        ("(5,3,&)", "if(3 == 0, 0, 5)", "5"),
        ("(5,0,&)", "if(0 == 0, 0, 5)", "0"),
        ("(0,7,|)", "if(0 == 0, 7, 0)", "7"),
        ("(4,7,|)", "if(4 == 0, 7, 4)", "4"),
        ("(0,!)", "if(0 == 0, 1, 0)", "1"),
        ("(3,!)", "if(3 == 0, 1, 0)", "0"),
        ("(2,3,<)", "if(2 < 3, 1, 0)", "1"),
        ("(3,2,<)", "if(3 < 2, 1, 0)", "0"),
        ("(3,3,<=)", "if(3 <= 3, 1, 0)", "1"),
        ("(4,3,>=)", "if(4 >= 3, 1, 0)", "1"),
        ("(4,3,>)", "if(4 > 3, 1, 0)", "1"),
        ("(3,3.0,==)", "if(3 == 3, 1, 0)", "1"),
        ("(1,8,9,ifelse)", "if(1 != 0, 8, 9)", "8"),
        ("(0,8,9,ifelse)", "if(0 != 0, 8, 9)", "9"),
        ("(5,7,consume)", "5", "5"),
        ("(5,duplicate,*)", "5 * 5", "25"),
        // Names: the creature's own, another's, runtime variables; case-insensitive operators.
        ("(self.STR,creature.STR,MAX)", "max(STR, creature.STR)", "16"),
        ("(ZERO_ONE,1,+)", "ZERO_ONE + 1", "1"),
        ("(V0,V1,*)", "4 * 8", "32"),
        // Exact arithmetic: .5 is 0.5, a third to 28 digits, negative literals.
        ("(.5,.25,+)", "0.5 + 0.25", "0.75"),
        ("(1,3,/)", "1 / 3", "0.3333333333333333333333333333"),
        ("(-2,3,*)", "(-2) * 3", "-6"),
        ("( 8 , INT ,+ )", "8 + INT", "11"),
    ];
    for (postfix, formula, want) in table {
        let c = compile(postfix, &mut names).unwrap_or_else(|e| panic!("{postfix}: {e}"));
        assert_eq!(c.formula, *formula, "{postfix}");
        assert_eq!(value(&c.formula), *want, "{postfix} = {formula}");
        assert!(c.stores.is_empty());
    }
}

/// `(X,Y,store)` leaves X and stores it into Y (a variable); several stores run in order.
#[test]
fn store_leaves_its_value_and_records_the_write() {
    let c = compile("(STR,2,*,NV1,store,1,+)", &mut names).unwrap();
    assert_eq!(c.formula, "(STR * 2) + 1");
    assert_eq!(value(&c.formula), "33");
    assert_eq!(c.stores, [Store { var: "NV1".into(), value: "STR * 2".into(), at: 13..18 }]);
    let c = compile("(1,NV1,store,2,NV1,store,+)", &mut names).unwrap();
    assert_eq!(c.stores.iter().map(|s| s.value.as_str()).collect::<Vec<_>>(), ["1", "2"]);
    assert_eq!(value(&c.formula), "3");
}

/// Each error: its code, and the token it points at in the text.
#[test]
fn errors_point_at_their_token() {
    let table: &[(&str, &str, &str)] = &[
        ("(1,+)", codes::UNDERFLOW, "+"),
        ("(1,2,3,ifelse,ifelse)", codes::UNDERFLOW, "ifelse"),
        ("(!)", codes::UNDERFLOW, "!"),
        ("(1,2)", codes::LEFTOVER, "1"),
        ("(STR,INT,PROF,+)", codes::LEFTOVER, "STR"),
        ("(1,,2,+)", codes::EMPTY_TOKEN, ""),
        ("(1,2,%)", codes::BAD_TOKEN, "%"),
        ("(1.2.3)", codes::BAD_TOKEN, "1.2.3"),
        // Found by the fuzzer: a name's every word starts with a letter.
        ("(5,Q.,&)", codes::BAD_TOKEN, "Q."),
        ("(self..STR)", codes::BAD_TOKEN, "self..STR"),
        ("(creature.2)", codes::BAD_TOKEN, "creature.2"),
        ("(__)", codes::BAD_TOKEN, "__"),
        ("(STR_)", codes::BAD_TOKEN, "STR_"),
        ("(1,DEX,+)", codes::UNKNOWN_NAME, "DEX"),
        ("(1,V7,+)", codes::UNKNOWN_NAME, "V7"),
        ("(1,2,store)", codes::STORE_TARGET, "2"),
        ("8,INT,+", codes::SHAPE, "8,INT,+"),
        ("()", codes::SHAPE, "()"),
    ];
    for (text, code, at) in table {
        let e = compile(text, &mut names).expect_err(text);
        assert_eq!(e.code, *code, "{text}: {e}");
        assert_eq!(&text[e.span.clone()], *at, "{text}: {e}");
        assert!(!e.message.is_empty());
    }
    // A value that doubles past the limit: an error at the token that doubles it.
    let text = format!("(STR{})", ",duplicate,+".repeat(20));
    let e = compile(&text, &mut names).unwrap_err();
    assert_eq!(e.code, codes::TOO_COMPLEX);
    assert_eq!(&text[e.span.clone()], "+");
    // Values consumed to nothing: no value left, pointed at the end.
    let e = compile("(1,consume)", &mut names).unwrap_err();
    assert_eq!(e.code, codes::LEFTOVER);
    assert!(e.message.contains("leaves no value"), "{e}");
    // The message says what is wrong.
    let e = compile("(1,+)", &mut names).unwrap_err();
    assert_eq!(e.message, "`+` takes 2 values, but the stack has 1");
    let e = compile("(1,2)", &mut names).unwrap_err();
    assert_eq!(e.message, "the formula leaves 2 values, and must leave exactly one: `1` here is never used");
}

proptest::proptest! {
    /// Any text compiles or is an error with a span inside the text; what compiles is a
    /// formula the `formula` crate accepts.
    #[test]
    fn any_text_compiles_or_is_an_error_inside_it(tokens in proptest::collection::vec(
        proptest::sample::select(vec![
            "1", ".5", "-2", "STR", "INT", "V0", "NV1", "+", "-", "*", "/", "^", "max", "min", "&", "|",
            "!", "<", ">=", "==", "ifelse", "consume", "duplicate", "store", "%", "", "DEX",
        ]),
        0..12,
    )) {
        let text = format!("({})", tokens.join(","));
        match compile(&text, &mut names) {
            Ok(c) => {
                let f = Formula::compile(&c.formula, &Library::new(), &CheckEnv::new(&Vars), &Limits::default());
                proptest::prop_assert!(f.is_ok(), "{text} → {}: {f:?}", c.formula);
                for s in &c.stores {
                    proptest::prop_assert!(text[s.at.clone()].eq_ignore_ascii_case("store"));
                }
            }
            Err(e) => {
                proptest::prop_assert!(e.span.start <= e.span.end && e.span.end <= text.len(), "{text}: {e}");
                proptest::prop_assert!(text.is_char_boundary(e.span.start));
            }
        }
    }
}

/// `docs/dialects.md`'s table of examples: each postfix formula compiles to the sheetd formula
/// shown and has the value shown (the table's variables are this file's).
#[test]
fn the_documented_examples_hold() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/dialects.md"))
        .expect("docs/dialects.md");
    let start = doc.find("<!-- postfix examples").expect("the examples' start marker");
    let end = doc.find("<!-- end postfix examples -->").expect("the examples' end marker");
    let rows: Vec<Vec<String>> = doc[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            // Cells split at `|` not escaped as `\|`; a cell's code spans unwrapped.
            let cells = l.replace("\\|", "\u{1}");
            cells
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().trim_matches('`').replace('\u{1}', "|"))
                .collect()
        })
        .collect();
    assert!(rows.len() >= 10, "the table has its examples: {rows:?}");
    for row in rows {
        let [postfix, formula, want] = &row[..] else { panic!("three cells: {row:?}") };
        let c = compile(postfix, &mut names).unwrap_or_else(|e| panic!("{postfix}: {e}"));
        assert_eq!(&c.formula, formula, "{postfix}");
        assert_eq!(&value(&c.formula), want, "{postfix}");
    }
}
