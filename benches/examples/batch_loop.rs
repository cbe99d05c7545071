//! A fixed loop adding and removing an item instance with 20 modifiers as one batch on a
//! generated sheet, for profiling with callgrind:
//! `valgrind --tool=callgrind ./target/release/examples/batch_loop 2000`.

use formula::Format;
use sheetd_benches::generator::{Rng, generate_sheet, item_modifiers};
use solver::{Instruction, Operation};

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let mut sheet = generate_sheet(2_000, 8_000, 42);
    let rules = sheet.rules().clone();
    let scope = rules.scope("PC.ITEM").expect("scope");
    let mut batch =
        vec![Operation::AddInstance { key: "item".into(), scope: "PC.ITEM".into(), parent: None }];
    for mut m in item_modifiers("item", 2_000, &mut Rng::new(7)) {
        let f = rules
            .compile(m.value.text(), scope, Some(&Format::Number), Some(&Format::Number))
            .expect("valid");
        m.value = Instruction::Compiled(f);
        batch.push(Operation::AddModifier(m));
    }
    let remove = [Operation::RemoveInstance("item".into())];
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        sheet.apply(&batch).expect("add");
        sheet.apply(&remove).expect("remove");
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / rounds.max(1) as f64;
    println!("{rounds} rounds of add + remove, {per:.1} µs each");
}
