//! A fixed loop of full solves of a generated sheet (2,000 variables, 8,000 modifiers), for
//! profiling with callgrind: `valgrind --tool=callgrind ./target/release/examples/solve_loop 20`.

use sheetd_benches::generator::generate_sheet;

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200);
    let mut sheet = generate_sheet(2_000, 8_000, 42);
    let start = std::time::Instant::now();
    let mut evaluations = 0;
    for _ in 0..rounds {
        evaluations += sheet.solve_all();
    }
    let per = start.elapsed().as_micros() as f64 / rounds.max(1) as f64;
    println!("{evaluations} evaluations in {rounds} full solves, {per:.1} µs each");
}
