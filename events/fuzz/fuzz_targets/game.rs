//! Fuzz target: games. The first byte picks the ruleset: an example's rules with `[[rule]]`
//! and `[events]` sections of the fuzzer's own text appended (the rule book's parser), or the
//! example alone; then arbitrary steps — events with arguments, answers, rolls, objects —
//! are played. Nothing may panic: a bad rule is a diagnostic, a bad step an error that
//! changes nothing (the values stay what they were).
//!
//! Run from `events/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run game -- -max_total_time=300`

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use data::SheetOp;
use events::{Game, RuleBook, Step};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

/// The examples with rules: their text, read once.
fn examples() -> &'static [String] {
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    TEXTS.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples");
        ["tavern/tavern.toml", "guild/guild.toml", "village/village.toml", "shop/shop.toml"]
            .iter()
            .map(|f| std::fs::read_to_string(dir.join(f)).expect("the examples are part of the repository"))
            .collect()
    })
}

#[derive(Arbitrary, Debug)]
enum FuzzStep {
    Emit { event: u8, args: Vec<(u8, String)> },
    Choose { choice: u8, picks: Vec<String> },
    Roll { die: String, value: i64 },
    Add { object: u8 },
    Remove { object: u8 },
}

fuzz_target!(|bytes: &[u8]| {
    let mut u = Unstructured::new(bytes);
    let Ok(pick) = u8::arbitrary(&mut u) else { return };
    let base = &examples()[pick as usize % examples().len()];
    let text = if pick & 0x80 != 0 {
        let Ok(extra) = <&str>::arbitrary(&mut u) else { return };
        format!("{base}\n{extra}\n")
    } else {
        base.clone()
    };
    let Ok(ruleset) = data::load_str(&text, "fuzz.toml") else { return };
    let book = match RuleBook::compile(Arc::new(ruleset)) {
        Ok(b) => Arc::new(b),
        Err(diagnostics) => {
            for d in &diagnostics {
                let _ = d.to_string();
            }
            return;
        }
    };
    let Ok(mut game) = Game::new(book.clone()) else { return };
    let events: Vec<(String, Vec<String>)> = book
        .events()
        .iter()
        .map(|e| (e.name.to_string(), e.args.iter().map(|a| a.name.to_string()).collect()))
        .collect();
    let objects: Vec<(String, String)> = {
        let r = game.character().ruleset();
        r.objects().iter().map(|o| (r.kind_def(o.kind).name.to_string(), o.key.to_string())).collect()
    };
    let Ok(steps) = Vec::<FuzzStep>::arbitrary(&mut u) else { return };
    for s in steps.into_iter().take(64) {
        let step = match s {
            FuzzStep::Emit { event, args } if !events.is_empty() => {
                let (name, names) = &events[event as usize % events.len()];
                let args = args
                    .into_iter()
                    .filter(|_| !names.is_empty())
                    .map(|(i, v)| (names[i as usize % names.len()].clone(), v))
                    .collect();
                Step::Emit { event: name.clone(), args }
            }
            FuzzStep::Emit { .. } => continue,
            FuzzStep::Choose { choice, picks } => Step::Choose { choice: u64::from(choice), picks },
            FuzzStep::Roll { die, value } => Step::Roll { die, value },
            FuzzStep::Add { object } if !objects.is_empty() => {
                let (kind, key) = objects[object as usize % objects.len()].clone();
                Step::Ops(vec![SheetOp::AddObject { kind, key, id: None, parent: None }])
            }
            FuzzStep::Remove { object } if !objects.is_empty() => {
                Step::Ops(vec![SheetOp::RemoveObject(objects[object as usize % objects.len()].1.clone())])
            }
            FuzzStep::Add { .. } | FuzzStep::Remove { .. } => continue,
        };
        let before = game.character().sheet().values();
        if game.apply(&step).is_err() {
            assert_eq!(game.character().sheet().values(), before, "a failed step changed nothing");
        }
    }
});
