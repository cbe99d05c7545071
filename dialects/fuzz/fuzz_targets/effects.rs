//! Fuzz target: any text, as a board-game effect string, reads or is an error whose span lies
//! inside the text on character boundaries; what reads prints a unified form that reads into
//! the same effect tree. The text as a card table (CSV, and JSON) compiles or is refused at a
//! place in its file, and what compiles loads and its rules check.
//!
//! Run from `dialects/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run effects corpus/effects -- -max_total_time=600`

#![no_main]

use libfuzzer_sys::fuzz_target;

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
        match dialects::effects::compile_texts(&[(file.to_owned(), text.to_owned())]) {
            Ok(c) => {
                let r = c
                    .load()
                    .unwrap_or_else(|e| panic!("the translation does not load: {e:#?}\n{}", c.files[1].1));
                if let Err(e) = events::RuleBook::compile(std::sync::Arc::new(r)) {
                    panic!("the translation's rules do not check: {e:#?}\n{}", c.files[1].1);
                }
            }
            Err(errors) => {
                for e in errors {
                    assert_eq!(e.at.as_ref().map(|a| a.file()), Some(file), "{text:?}: {e:?}");
                }
            }
        }
    }
});
