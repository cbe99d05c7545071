//! Ruleset loading and character building:
//!
//! - `load`: read and compile each ruleset from disk — the bundled starter ruleset and, when
//!   `../shared/pcgen/` is present, the Starfinder core rulebook, Pact Worlds on top of it, and
//!   the Pathfinder 2e core rulebook (a notice is printed and they are skipped otherwise);
//!   baseline: reading the same files' bytes without parsing them.
//! - `character`: a new Starfinder character (stats, saves, global modifiers) and adding a race
//!   plus an armor (one batch); baseline: cloning the ruleset's `Arc`.

use criterion::{Criterion, criterion_group, criterion_main};
use data::{Character, SheetOp};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn pcgen(c: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/pcgen/data").join(c);
    if p.is_file() {
        Some(p)
    } else {
        eprintln!("notice: {} is absent; skipping that dataset", p.display());
        None
    }
}

/// Every file a load reads, for the read-only baseline.
fn files_of(paths: &[PathBuf]) -> Vec<PathBuf> {
    let draft = data::read(paths);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/pcgen/data");
    draft.files.iter().map(|f| if Path::new(f).exists() { PathBuf::from(f) } else { root.join(f) }).collect()
}

fn bench_load(c: &mut Criterion) {
    let mut sets: Vec<(&str, Vec<PathBuf>)> = vec![("starter", vec![data::starter_ruleset_dir()])];
    let core = pcgen("starfinder/paizo/core/_starfinder_core_rulebook.pcc");
    let pact = pcgen("starfinder/paizo/pact_worlds/_starfinder_pact_worlds.pcc");
    let pf2 = pcgen("pathfinder_2e/core_rulebook/_.pcc");
    if let Some(core) = &core {
        sets.push(("starfinder_core", vec![core.clone()]));
        if let Some(pact) = &pact {
            sets.push(("starfinder_core_plus_pact_worlds", vec![core.clone(), pact.clone()]));
        }
    }
    if let Some(pf2) = pf2 {
        sets.push(("pathfinder2e_core", vec![pf2]));
    }
    let mut g = c.benchmark_group("load");
    g.sample_size(20);
    for (name, paths) in &sets {
        assert!(data::load(paths).is_ok(), "{name} loads");
        let files = files_of(paths);
        g.bench_function(format!("baseline_read_bytes_{name}"), |b| {
            b.iter(|| files.iter().map(|f| std::fs::read(f).map_or(0, |v| v.len())).sum::<usize>())
        });
        g.bench_function(format!("load_{name}"), |b| b.iter(|| data::load(black_box(paths))));
    }
    g.finish();
}

fn bench_character(c: &mut Criterion) {
    let Some(core) = pcgen("starfinder/paizo/core/_starfinder_core_rulebook.pcc") else { return };
    let Some(pact) = pcgen("starfinder/paizo/pact_worlds/_starfinder_pact_worlds.pcc") else { return };
    let r = Arc::new(data::load(&[core, pact]).expect("loads"));
    let mut g = c.benchmark_group("character");
    g.bench_function("baseline_clone_ruleset_arc", |b| b.iter(|| black_box(&r).clone()));
    g.bench_function("new_starfinder_character", |b| b.iter(|| Character::new(black_box(r.clone()))));
    let base = Character::new(r.clone()).expect("character");
    let ops = [
        SheetOp::AddObject { kind: "RACE".into(), key: "Astrazoan".into(), id: None, parent: None },
        SheetOp::AddObject {
            kind: "EQUIPMENT".into(),
            key: "Thinplate".into(),
            id: Some("a".into()),
            parent: None,
        },
    ];
    g.bench_function("add_race_and_armor_batch", |b| {
        b.iter_batched(|| base.clone(), |mut c| c.apply(black_box(&ops)), criterion::BatchSize::SmallInput)
    });
    g.finish();
}

criterion_group!(benches, bench_load, bench_character);
criterion_main!(benches);
