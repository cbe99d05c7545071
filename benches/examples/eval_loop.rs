//! A fixed loop of evaluations of `floor((Score-10)/2)`, timed without criterion, and usable for
//! instruction-level profiling where wall-clock timings are too noisy:
//!
//! ```sh
//! cargo build --release -p sheetd-benches --example eval_loop
//! ./target/release/examples/eval_loop 20000000
//! valgrind --tool=callgrind ./target/release/examples/eval_loop && callgrind_annotate callgrind.out.*
//! ```

use formula::{CheckEnv, Formula, Library, Limits};
use sheetd_benches::NumberVars;

fn main() {
    let vars = NumberVars::new(&[("Score", 14)]);
    let formula_arg = std::env::args().nth(2);
    let formula = formula_arg.as_deref().unwrap_or("floor((Score-10)/2)");
    let f = match Formula::compile(formula, &Library::new(), &CheckEnv::new(&vars), &Limits::default()) {
        Ok(f) => f,
        Err(e) => return eprintln!("{formula}: {}", e.message),
    };
    let iterations: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let start = std::time::Instant::now();
    let mut ok = 0usize;
    for _ in 0..iterations {
        if f.evaluate(std::hint::black_box(&vars), None).is_ok() {
            ok += 1;
        }
    }
    let per = start.elapsed().as_nanos() as f64 / iterations.max(1) as f64;
    println!("{ok} evaluations, {per:.1} ns each");
}
