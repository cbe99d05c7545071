//! `loadgen`'s in-process SolveBatch baseline alone, for comparing two builds in many short
//! alternated runs (one `loadgen` run takes a minute, and this machine's speed moves by a
//! quarter from one minute to the next): `ITEMS` starter characters as SolveBatch request
//! items, solved on every core `ROUNDS` times exactly as `loadgen` solves them (converted from
//! their wire form, built, solved, their values encoded as the reply encodes them; the items
//! copied before each clock). Prints each round's characters a second a core, then the median.
//!
//! `cargo run --release -p sheetd-benches --example batch_par -- [ITEMS] [ROUNDS]` (defaults
//! 20,000 and 5).

mod common;

use sheetd::grpc::proto as pb;

/// The daemon's allocator, as in `loadgen`.
#[global_allocator]
static ALLOCATOR: sheetd::alloc::Allocator = sheetd::alloc::Allocator;

fn main() {
    let arg = |i: usize| std::env::args().nth(i).and_then(|a| a.parse::<usize>().ok());
    let (count, rounds) = (arg(1).unwrap_or(20_000), arg(2).unwrap_or(5).max(1));
    if std::env::var_os("SHEETD_KEEP_THP").is_none() {
        // As `loadgen` and `sheetd serve` set it up.
        sheetd::cli::serve::tune_memory();
    }
    let items: Vec<pb::SolveBatchRequest> = (0..count)
        .map(|i| pb::SolveBatchRequest {
            id: i.to_string(),
            ruleset_id: String::new(),
            operations: common::example(),
            variables: vec![],
        })
        .collect();
    let ruleset = std::sync::Arc::new(data::load_starter().expect("starter"));
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut rates: Vec<f64> = (0..rounds)
        .map(|_| {
            let (wall, _) = common::solve_in_process(&items, &ruleset, threads);
            let rate = count as f64 / wall.as_secs_f64() / threads as f64;
            println!("{rate:.0} characters a second a core ({threads} cores)");
            rate
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    println!("median {:.0}", rates[rates.len() / 2]);
}
