//! Fuzz target: any text as a creature dialect's files (a feature file and a creatures file,
//! split at the first NUL byte) compiles or is refused with errors inside the files; what
//! compiles is a native ruleset that loads and whose event rules check — a translation that
//! does not load would be sheetd's bug, not the author's.
//!
//! Run from `dialects/fuzz/` (see docs/ARCHITECTURE.md, "Testing"), seeded with the example:
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run creature corpus/creature seeds/ -- -max_total_time=600`

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    let (features, creatures) = text.split_once('\0').unwrap_or((text, "{\"creatures\": []}"));
    let files = vec![("f.json".to_owned(), features.to_owned()), ("c.json".to_owned(), creatures.to_owned())];
    match dialects::creature::compile_texts(&files) {
        Ok(c) => {
            let r = c
                .load()
                .unwrap_or_else(|e| panic!("the translation does not load: {e:#?}\n{}", c.files[1].1));
            if let Err(e) = events::RuleBook::compile(Arc::new(r)) {
                panic!("the translation's rules do not check: {e:#?}\n{}", c.files[1].1);
            }
        }
        Err(errors) => {
            assert!(!errors.is_empty());
            for e in errors {
                // Every error is in one of the files, at a place inside it.
                let at = e.at.expect("a place");
                assert!(at.file() == "f.json" || at.file() == "c.json", "{}", at.file());
            }
        }
    }
});
