//! Fuzz target: any text, as a WWRF ability line, reads or is an error whose span lies inside
//! the text on character boundaries; as a condition, the same. The text inside a role file
//! (after a header, in `__Formalized__`), and as a whole element file, compiles or is refused
//! at a place in its file, and what compiles loads and its rules check.
//!
//! Run from `dialects/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run wwrf corpus/wwrf -- -max_total_time=600`

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fn inside(text: &str, span: &std::ops::Range<usize>, what: &str) {
    assert!(span.start <= span.end && span.end <= text.len(), "{what}: {text:?}: {span:?}");
    assert!(
        text.is_char_boundary(span.start) && text.is_char_boundary(span.end),
        "{what}: {text:?}: {span:?}"
    );
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else { return };
    if let Err(e) = dialects::wwrf::parse_line(text, 0, 1) {
        inside(text, &e.span, "line");
    }
    if let Err(e) = dialects::wwrf::condition(text, 0) {
        inside(text, &e.span, "condition");
    }
    let role = format!("**Fuzz** | Townsfolk Power\n__Formalized__\n{text}\n");
    for (file, body) in [("role.md", role.as_str()), ("element.md", text)] {
        if let Err(e) = dialects::wwrf::parse_file(body) {
            inside(body, &e.span, file);
        }
        common::translation_loads(
            dialects::wwrf::compile_texts(&[(file.to_owned(), body.to_owned())]),
            file,
            &body,
        );
    }
});
