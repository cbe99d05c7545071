//! Fuzz target: any text, as a board-game effect string, reads or is an error whose span lies
//! inside the text on character boundaries; what reads prints a unified form that reads into
//! the same effect tree. The text as a card table (CSV, and JSON) compiles or is refused at a
//! place in its file, and what compiles loads and its rules check.
//!
//! Run from `dialects/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run effects corpus/effects -- -max_total_time=600`

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    match dialects::effects::parse(text) {
        Err(e) => {
            assert!(e.span.start <= e.span.end && e.span.end <= text.len(), "{text:?}: {e:?}");
            assert!(
                text.is_char_boundary(e.span.start) && text.is_char_boundary(e.span.end),
                "{text:?}: {e:?}"
            );
        }
        Ok(tree) => {
            let u = dialects::effects::unified(&tree);
            let again = dialects::effects::parse(&u).unwrap_or_else(|e| panic!("{text:?} → {u:?}: {e}"));
            assert_eq!(again, tree, "{text:?} → {u:?}");
        }
    }
    for file in ["citizens.csv", "domains.json"] {
        common::translation_loads(
            dialects::effects::compile_texts(&[(file.to_owned(), text.to_owned())]),
            file,
            &text,
        );
    }
});
