//! The in-process half of SolveBatch in a fixed loop, for profiling: N times, the example
//! character of `data/examples/starter-character.json` built on the starter ruleset (a new
//! character, its operations applied in one batch, every value read out as records):
//! `valgrind --tool=callgrind ./target/release/examples/starter_loop 200` or under `perf record`.
//!
//! `starter_loop N reply` reads the values out as the daemon's SolveBatch does instead:
//! encoded straight into its reply (`BatchValues::from_character`), with no record per value.
//! `starter_loop N wire` does all of SolveBatch's in-process work, as `loadgen`'s baseline
//! measures it: each character's operations converted from their wire form too.

use std::hint::black_box;
use std::time::Instant;

/// The daemon's allocator (see `service/src/main.rs`): this is the daemon's SolveBatch work.
#[global_allocator]
static ALLOCATOR: sheetd::alloc::Allocator = sheetd::alloc::Allocator;

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let mode = std::env::args().nth(2);
    let wire_too = mode.as_deref() == Some("wire");
    let reply = wire_too || mode.as_deref() == Some("reply");
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/examples/starter-character.json");
    let steps = sheetd::cli::client::Steps { steps: vec![], file: Some(file), dialect: None };
    let wire = sheetd::cli::client::operations(&steps).expect("example sheet");
    let ops = sheetd::grpc::convert::operations(wire.clone()).expect("operations");
    let ruleset = std::sync::Arc::new(data::load_starter().expect("starter"));
    let start = Instant::now();
    let mut values = 0;
    for _ in 0..rounds {
        let mut c = data::Character::new(ruleset.clone()).expect("sheet");
        if wire_too {
            let ops = sheetd::grpc::convert::operations(black_box(&wire).clone()).expect("operations");
            c.apply(&ops).expect("solves");
        } else {
            c.apply(black_box(&ops)).expect("solves");
        }
        values += if reply {
            black_box(sheetd::grpc::batch_values::BatchValues::from_character(&c));
            c.sheet().variable_count()
        } else {
            black_box(data::record::values(&c)).len()
        };
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / rounds.max(1) as f64;
    println!("{rounds} characters, {values} values, {per:.1} µs each ({:.0} per second)", 1e6 / per);
}
