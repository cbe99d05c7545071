//! Fuzz target: sheet and game files' steps. Any bytes, as JSON, read as a game file's steps
//! (`emit`, `choose`, `roll`, batches, object and input steps) and as a scenario's solver
//! operations, then played on the tavern example: nothing may panic, a step that cannot be
//! read is a rejection with a code, a refused step changes nothing.
//!
//! Run from `service/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run steps -s none -- -max_total_time=300`

#![no_main]

use libfuzzer_sys::fuzz_target;
use sheetd::cli::steps::{describe, game_step, solver_op};
use std::sync::{Arc, OnceLock};

/// The tavern example's rules, loaded once.
fn book() -> &'static Arc<events::RuleBook> {
    static BOOK: OnceLock<Arc<events::RuleBook>> = OnceLock::new();
    BOOK.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/tavern");
        let ruleset = data::load(&[dir]).expect("the example loads");
        Arc::new(events::RuleBook::compile(Arc::new(ruleset)).expect("its rules compile"))
    })
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(bytes) else { return };
    let steps = match &json {
        serde_json::Value::Object(o) => match o.get("steps") {
            Some(serde_json::Value::Array(a)) => a.clone(),
            _ => vec![json.clone()],
        },
        serde_json::Value::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    let Ok(mut game) = events::Game::new(book().clone()) else { return };
    for s in steps.iter().take(64) {
        let _ = describe(s);
        let _ = solver_op(s).map_err(|e| assert!(!e.message.is_empty()));
        match game_step(s) {
            Ok(step) => {
                let before = game.character().sheet().values();
                if game.apply(&step).is_err() {
                    assert_eq!(game.character().sheet().values(), before, "a refused step changes nothing");
                }
            }
            Err(rejection) => assert!(!rejection.code().is_empty()),
        }
    }
});
