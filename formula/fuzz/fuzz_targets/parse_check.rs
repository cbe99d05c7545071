//! Fuzz target: any bytes, as a formula, must parse, check and (when valid) evaluate without
//! panicking, and a formula that parses must print to canonical text that parses to the same tree.
//!
//! Run from `formula/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run parse_check -- -max_total_time=60`

#![no_main]

use formula::{CheckEnv, EvalContext, Format, Formula, Library, Limits, Symbols, Value, VarId, parse};
use libfuzzer_sys::fuzz_target;

/// Variables of every core format, so checking and evaluation get past name resolution.
struct Vars;

const NAMES: [(&str, u32); 5] = [("a", 0), ("b", 1), ("Flag", 2), ("Name", 3), ("arr", 4)];

impl Symbols for Vars {
    fn resolve(&self, name: &str) -> Option<(VarId, Format)> {
        let (_, i) = NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(name))?;
        let format = match i {
            0 | 1 => Format::Number,
            2 => Format::Boolean,
            3 => Format::String,
            _ => Format::array(Format::Number),
        };
        Some((VarId(*i), format))
    }
}

impl EvalContext for Vars {
    fn value(&self, id: VarId) -> Option<Value> {
        Some(match id.0 {
            0 => Value::Number(7.into()),
            1 => Value::Number(0.into()),
            2 => Value::Boolean(true),
            3 => Value::String("x".into()),
            _ => Value::Array(vec![Value::Number(1.into()), Value::Number(2.into())].into()),
        })
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let limits = Limits::default();
    if let Ok(tree) = parse(text, &limits) {
        let printed = tree.to_string();
        let again = parse(&printed, &Limits { max_depth: 4 * limits.max_depth, ..limits })
            .expect("canonical text parses");
        assert!(tree.same_tree(&again), "{text:?} printed as {printed:?} reparsed differently");
    }
    let mut library = Library::new();
    library.define("d20Mod", "floor((arg(0)-10)/2)").expect("valid definition");
    let number = Format::Number;
    if let Ok(f) = Formula::compile(text, &library, &CheckEnv::new(&Vars).with_input(&number), &limits) {
        let _ = f.evaluate(&Vars, Some(&Value::Number(3.into())));
    }
});
