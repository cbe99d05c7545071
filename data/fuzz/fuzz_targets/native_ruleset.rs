//! Fuzz target: any bytes, as a native-format ruleset (TOML), must load to a ruleset or to
//! diagnostics — never a panic — and every diagnostic must point inside the text it names. A
//! ruleset that loads must give a character that takes its objects.
//!
//! Run from `data/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run native_ruleset -- -max_total_time=300`

#![no_main]

use data::{Character, SheetOp};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    match data::load_str(text, "fuzz.toml") {
        Err(diagnostics) => {
            for d in &diagnostics {
                // Rendering reads the line and column back out of the text.
                let _ = d.to_string();
            }
        }
        Ok(ruleset) => {
            let objects: Vec<(String, String)> = ruleset
                .objects()
                .iter()
                .map(|o| (ruleset.kind_def(o.kind).name.to_string(), o.key.to_string()))
                .collect();
            let Ok(mut character) = Character::new(Arc::new(ruleset)) else { return };
            for (kind, key) in objects.into_iter().take(32) {
                let add = SheetOp::AddObject { kind, key, id: None, parent: None };
                let _ = character.apply(&[add]);
            }
            let _ = character.sheet().values();
        }
    }
});
