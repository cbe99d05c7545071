//! A fixed loop of one million evaluations of `floor((Score-10)/2)`, for instruction-level
//! profiling where wall-clock timings are too noisy:
//!
//! ```sh
//! cargo build --release -p sheetd-benches --example eval_loop
//! valgrind --tool=callgrind ./target/release/examples/eval_loop && callgrind_annotate callgrind.out.*
//! ```

use formula::{CheckEnv, Formula, Library, Limits};
use sheetd_benches::NumberVars;
fn main() {
    let vars = NumberVars::new(&[("Score", 14)]);
    let f =
        Formula::compile("floor((Score-10)/2)", &Library::new(), &CheckEnv::new(&vars), &Limits::default())
            .unwrap();
    let mut n = 0usize;
    for _ in 0..1_000_000 {
        if f.evaluate(std::hint::black_box(&vars), None).is_ok() {
            n += 1;
        }
    }
    println!("{n}");
}
