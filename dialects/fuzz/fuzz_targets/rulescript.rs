//! Fuzz target: any text, as a RuleScript card's rules, reads or is an error whose span lies
//! inside the text on character boundaries; a card with rules that read compiles or is
//! refused at a place in its file, and what compiles loads and its rules check.
//!
//! Run from `dialects/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run rulescript corpus/rulescript seeds/ -- -max_total_time=600`

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    if let Err(e) = dialects::rulescript::parse(text) {
        assert!(e.span.start <= e.span.end && e.span.end <= text.len(), "{text:?}: {e:?}");
        assert!(text.is_char_boundary(e.span.start) && text.is_char_boundary(e.span.end), "{text:?}: {e:?}");
        return;
    }
    let lines: Vec<&str> = text.lines().collect();
    let card = format!(
        r#"[{{"name": "X", "type": "character", "bp": 100, "rules": {}}}, {{"name": "Y", "type": "action"}}]"#,
        serde_json::to_string(&lines).expect("strings encode")
    );
    common::translation_loads(
        dialects::rulescript::compile_texts(&[("cards.json".to_owned(), card.clone())]),
        "cards.json",
        &card,
    );
});
