//! Loading a ruleset costs memory linear in its size with a small constant, however the text is
//! laid out: one line holding thousands of modifiers must not copy that line per position.
//!
//! A counting allocator measures the peak bytes allocated while loading. This file holds one
//! test, so no other test's allocations are counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: defers to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// A native ruleset whose `n` global modifiers all sit on one line.
fn one_line_ruleset(n: usize) -> String {
    let mods: Vec<String> = (0..n).map(|i| format!("{{ var = \"V\", add = \"{}\" }}", i % 7)).collect();
    format!(
        "[ruleset]\nname = \"big\"\nglobal = \"PC\"\n[defaults]\nNUMBER = 0\n[variables.PC]\nV = \"NUMBER\"\n\
         [global]\nmodify = [{}]\n",
        mods.join(", ")
    )
}

/// Peak bytes allocated beyond what was live before, while loading `text`.
fn peak_while_loading(text: &str, n: usize) -> usize {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let ruleset = data::load_str(text, "big.toml").expect("the generated ruleset loads");
    assert_eq!(ruleset.global_modifiers().len(), n);
    drop(ruleset);
    PEAK.load(Ordering::Relaxed) - base
}

#[test]
fn loading_memory_is_linear_in_size_even_on_one_line() {
    let mut ratios = Vec::new();
    for n in [1_000, 4_000, 12_000] {
        let text = one_line_ruleset(n);
        let peak = peak_while_loading(&text, n);
        let ratio = peak as f64 / text.len() as f64;
        eprintln!(
            "{n} modifiers on one line: {} bytes of text, peak {peak} bytes ({ratio:.1}× the text)",
            text.len()
        );
        ratios.push(ratio);
    }
    // Quadratic copying (a line per position) made 4,000 modifiers cost ~1.3 GiB, over 15,000×
    // the text. Linear: a bounded multiple of the size, the same at every size.
    for r in &ratios {
        assert!(*r < 100.0, "peak memory per byte of ruleset text: {ratios:?}");
    }
    assert!(ratios[2] < ratios[0] * 1.5, "memory grows faster than the text: {ratios:?}");
}
