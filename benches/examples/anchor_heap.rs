//! Heap held by one anchor-workload sheet, measured with a counting allocator:
//! `cargo run --release -p sheetd-benches --example anchor_heap -- [VARS MODS]` (default 2,000
//! and 8,000). Prints the bytes the rules take (shared by every sheet), the bytes one sheet
//! built from them adds (its shape and values), and the bytes a sheet copied from that compiled
//! sheet adds (its values only), with the live bytes before as the baseline.

use sheetd_benches::workload::Workload;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; only a counter is kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on as it is.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let (vars, mods) = (args.first().copied().unwrap_or(2_000), args.get(1).copied().unwrap_or(8_000));
    let Some(w) = Workload::generate(vars, mods) else { return };
    let before_rules = LIVE.load(Ordering::Relaxed);
    let rules = w.rules();
    let ops = w.operations(&rules);
    let with_rules = LIVE.load(Ordering::Relaxed);
    let mut sheet = solver::Sheet::new(rules.clone());
    sheet.apply(&ops).expect("applies");
    sheet.solve_all();
    let with_sheet = LIVE.load(Ordering::Relaxed);
    let estimate = sheet.footprint();
    // Sheets from the compiled one: each shares its shape and holds only its values.
    let copies: Vec<solver::Sheet> = (0..10).map(|_| sheet.clone()).collect();
    let with_copies = LIVE.load(Ordering::Relaxed);
    let mut solved = sheet.clone();
    solved.solve_all();
    let with_solved = LIVE.load(Ordering::Relaxed);
    let kib = |b: usize| b as f64 / 1024.0;
    println!("anchor workload, {vars} variables, {mods} modifiers:");
    println!("  live before the rules         {:>10.1} KiB (baseline)", kib(before_rules));
    println!("  rules and compiled modifiers  {:>10.1} KiB (shared)", kib(with_rules - before_rules));
    println!("  one sheet                     {:>10.1} KiB", kib(with_sheet - with_rules));
    println!("  solver's own estimate         {:>10.1} KiB (Sheet::footprint)", kib(estimate));
    println!(
        "  a sheet from the compiled one {:>10.1} KiB (mean of 10 copies sharing its shape)",
        kib((with_copies - with_sheet) / copies.len())
    );
    println!("  … then solved                 {:>10.1} KiB", kib(with_solved - with_copies));
    println!("  its own estimate              {:>10.1} KiB (Sheet::footprint)", kib(solved.footprint()));
    // The plan compiled to native code (shared, like the shape), and a copy solved by it: the
    // copy adds its values and the native run's buffers (a pending byte and a log entry per
    // variable). The copies go first: compiling a shape they share would copy it, and that
    // copy would count as code.
    drop((copies, solved));
    let before_native = LIVE.load(Ordering::Relaxed);
    let compiled = sheet.compile_native(0);
    let with_native = LIVE.load(Ordering::Relaxed);
    let mut native = sheet.clone();
    native.solve_all();
    let with_native_copy = LIVE.load(Ordering::Relaxed);
    println!(
        "  native code (compiled: {compiled}) {:>7.1} KiB of machine code (shared, in the JIT's own pages)",
        kib(sheet.native_code_bytes().unwrap_or(0))
    );
    println!(
        "  … its tables                   {:>9.1} KiB (shared; what the allocator counted)",
        kib(with_native.saturating_sub(before_native))
    );
    println!("  a copy solved natively        {:>10.1} KiB", kib(with_native_copy - with_native));
    drop((native, sheet));
}
