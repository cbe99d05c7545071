//! Starter characters solved on several threads at once, as SolveBatch solves them on every
//! core: each thread builds `ROUNDS` characters (the example character of
//! `data/examples/starter-character.json`, its operations applied in one batch, every value
//! encoded as SolveBatch's reply encodes it) and prints its time per character.
//!
//! `starter_par ROUNDS THREADS shared|separate [OPS] [novalues]`
//! - `shared`: every thread builds on one ruleset, as the daemon does;
//! - `separate`: each thread loads a ruleset of its own, so the threads share nothing — the
//!   baseline the shared run is measured against, in the same run. What the shared run takes
//!   beyond it is the cost of the threads writing the same cache lines (reference counts on
//!   the ruleset's data, and fields beside them);
//! - `OPS`: only the first `OPS` operations of the example (to see where that cost grows);
//! - `novalues`: the values are not read out.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

/// The daemon's allocator (see `service/src/main.rs`).
#[global_allocator]
static ALLOCATOR: sheetd::alloc::Allocator = sheetd::alloc::Allocator;

fn main() {
    let arg = |i: usize| std::env::args().nth(i);
    let rounds: usize = arg(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let threads: usize = arg(2).and_then(|a| a.parse().ok()).unwrap_or(2);
    let separate = arg(3).is_some_and(|a| a == "separate");
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/examples/starter-character.json");
    let steps = sheetd::cli::client::Steps { steps: vec![], file: Some(file), dialect: None };
    let wire = sheetd::cli::client::operations(&steps).expect("example sheet");
    let mut ops = sheetd::grpc::convert::operations(wire).expect("operations");
    ops.truncate(arg(4).and_then(|a| a.parse().ok()).unwrap_or(ops.len()));
    let values = arg(5).is_none_or(|a| a != "novalues");
    let shared = Arc::new(data::load_starter().expect("starter"));
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let ruleset =
                if separate { Arc::new(data::load_starter().expect("starter")) } else { shared.clone() };
            let ops = &ops;
            s.spawn(move || {
                // The ruleset's starting character is built on first use: not timed.
                drop(data::Character::new(ruleset.clone()));
                let start = Instant::now();
                for _ in 0..rounds {
                    let mut c = data::Character::new(ruleset.clone()).expect("sheet");
                    c.apply(black_box(ops)).expect("solves");
                    if values {
                        black_box(sheetd::grpc::batch_values::BatchValues::from_character(&c));
                    }
                }
                let per = start.elapsed().as_secs_f64() * 1e6 / rounds.max(1) as f64;
                println!("thread {t}: {per:.1} µs a character");
            });
        }
    });
    let all = (threads * rounds) as f64 / start.elapsed().as_secs_f64();
    let mode = if separate { "separate rulesets" } else { "one shared ruleset" };
    println!(
        "{threads} threads, {mode}: {all:.0} characters a second ({:.0} a thread)",
        all / threads as f64
    );
}
