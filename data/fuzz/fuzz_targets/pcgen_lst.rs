//! Fuzz target: any bytes, as one PCGen LST file of a campaign (the first byte picks which
//! kind of file it is listed as, among those the reader reads), must load to a ruleset or to
//! diagnostics — never a panic.
//!
//! Run from `data/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run pcgen_lst -- -max_total_time=300`

#![no_main]

use data::{Bundle, Files};
use libfuzzer_sys::fuzz_target;
use std::path::Path;
use std::sync::Arc;

fuzz_target!(|bytes: &[u8]| {
    let Some((&first, rest)) = bytes.split_first() else { return };
    let Ok(lst) = std::str::from_utf8(rest) else { return };
    let kinds = data::pcgen::READ_ORDER;
    let kind = kinds[first as usize % kinds.len()];
    let key = |p: &str| data::source::normalize(Path::new(p)).display().to_string();
    let mut bundle = Bundle::default();
    let pcc = format!("CAMPAIGN:Fuzz\n{kind}:fuzz.lst\n");
    bundle.files.insert(key("/fuzz/fuzz.pcc"), Arc::from(pcc));
    bundle.files.insert(key("/fuzz/fuzz.lst"), Arc::from(lst));
    match data::load_with(&[Path::new("/fuzz/fuzz.pcc")], &Files::memory(bundle)) {
        Ok(ruleset) => {
            let _ = data::Character::new(Arc::new(ruleset));
        }
        Err(diagnostics) => {
            for d in &diagnostics {
                let _ = d.to_string();
            }
        }
    }
});
