//! Fuzz target: any text, as a RuleScript card's rules, reads or is an error whose span lies
//! inside the text on character boundaries.
//!
//! Run from `dialects/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run rulescript -- -max_total_time=600`

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    if let Err(e) = dialects::rulescript::parse(text) {
        assert!(e.span.start <= e.span.end && e.span.end <= text.len(), "{text:?}: {e:?}");
        assert!(text.is_char_boundary(e.span.start) && text.is_char_boundary(e.span.end), "{text:?}: {e:?}");
    }
});
