//! A fixed loop over a real ruleset (Starfinder core with Pact Worlds, from `../shared/pcgen/`):
//! a new character, then N times a copy of it with a race and an armor added in one batch, for
//! profiling with callgrind, where wall-clock timings are too noisy:
//! `valgrind --tool=callgrind ./target/release/examples/char_loop 200` (run it with 0 too: the
//! difference is the loop alone, without loading the ruleset).
use data::{Character, SheetOp};
use std::path::Path;
use std::sync::Arc;

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/pcgen/data/starfinder/paizo");
    let core = root.join("core/_starfinder_core_rulebook.pcc");
    let pact = root.join("pact_worlds/_starfinder_pact_worlds.pcc");
    if !core.is_file() {
        eprintln!("notice: {} is absent", core.display());
        return;
    }
    let ruleset = Arc::new(data::load(&[core, pact]).expect("the ruleset loads"));
    let base = Character::new(ruleset).expect("a character");
    let ops = [
        SheetOp::AddObject { kind: "RACE".into(), key: "Astrazoan".into(), id: None, parent: None },
        SheetOp::AddObject {
            kind: "EQUIPMENT".into(),
            key: "Thinplate".into(),
            id: Some("a".into()),
            parent: None,
        },
    ];
    let start = std::time::Instant::now();
    let mut changed = 0;
    for _ in 0..rounds {
        let mut c = base.clone();
        changed += c.apply(std::hint::black_box(&ops)).expect("applies").changed.len();
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / rounds.max(1) as f64;
    println!("{rounds} rounds, {changed} changes, {per:.1} µs per round");
}
