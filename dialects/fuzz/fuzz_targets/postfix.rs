//! Fuzz target: any text, as a postfix formula, compiles or is an error whose span lies inside
//! the text on character boundaries; what compiles is a formula the `formula` crate accepts
//! over the names it used (every name a NUMBER variable).
//!
//! Run from `dialects/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run postfix -- -max_total_time=300`

#![no_main]

use formula::{CheckEnv, Format, Formula, Library, Limits, Symbols, VarId};
use libfuzzer_sys::fuzz_target;

/// Every name is a NUMBER variable.
struct AnyName;

impl Symbols for AnyName {
    fn resolve(&self, _name: &str) -> Option<(VarId, Format)> {
        Some((VarId(0), Format::Number))
    }
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    match dialects::postfix::compile(text, &mut |n| Ok(n.to_owned())) {
        Ok(c) => {
            let f =
                Formula::compile(&c.formula, &Library::new(), &CheckEnv::new(&AnyName), &Limits::default());
            // Deeply nested input may pass the formula parser's limits; nothing else fails.
            if let Err(e) = f {
                assert_eq!(e.code, formula::ErrorCode::TooComplex, "{text:?} → {}: {e:?}", c.formula);
            }
        }
        Err(e) => {
            assert!(e.span.start <= e.span.end && e.span.end <= text.len(), "{text:?}: {e}");
            assert!(
                text.is_char_boundary(e.span.start) && text.is_char_boundary(e.span.end),
                "{text:?}: {e}"
            );
        }
    }
});
