//! Solver benchmarks on generated sheets (see `sheetd_benches::generator` for the generator):
//!
//! - `full_solve`: recompute all 2,000 variables of a sheet with 8,000 modifiers from scratch;
//!   baseline: cloning the same sheet (touching the same memory without evaluating anything).
//! - `incremental`: add an item instance carrying 20 modifiers (formulas compiled beforehand, as
//!   the data layer does at load) as one batch — how objects are added — and remove it again;
//!   also the same 21 operations one by one (21 recomputations);
//!   baseline: adding and removing one constant modifier on one variable.
//! - `trace`: the trace of one variable; baseline: reading that variable's value.

use criterion::{Criterion, criterion_group, criterion_main};
use formula::Format;
use sheetd_benches::generator::{Rng, generate_sheet, item_modifiers};
use solver::{Instruction, ModKind, ModifierSpec, Operation};
use std::hint::black_box;
use std::time::{Duration, Instant};

const VARS: usize = 2_000;
const MODS: usize = 8_000;

fn bench_full_solve(c: &mut Criterion) {
    let sheet = generate_sheet(VARS, MODS, 42);
    assert!(sheet.values().iter().all(|(_, v)| v.is_ok()), "generated values are all valid");
    let mut g = c.benchmark_group("solver_full");
    g.bench_function("baseline_clone_sheet", |b| b.iter(|| black_box(&sheet).clone()));
    let mut s = sheet.clone();
    g.bench_function("full_solve_2000_vars_8000_mods", |b| b.iter(|| black_box(&mut s).solve_all()));
    g.finish();
}

fn bench_incremental(c: &mut Criterion) {
    let mut sheet = generate_sheet(VARS, MODS, 42);
    let mut rng = Rng::new(7);
    // Formulas are compiled once, as the data layer does at load: the bench measures the
    // solver's own work on an add or remove.
    let rules = sheet.rules().clone();
    let item_scope = rules.scope("PC.ITEM").expect("scope");
    let mods: Vec<ModifierSpec> = item_modifiers("item", VARS, &mut rng)
        .into_iter()
        .map(|mut m| {
            let f = rules
                .compile(m.value.text(), item_scope, Some(&Format::Number), Some(&Format::Number))
                .expect("valid");
            m.value = Instruction::Compiled(f);
            m
        })
        .collect();
    let add_item = Operation::AddInstance { key: "item".into(), scope: "PC.ITEM".into(), parent: None };
    let batch: Vec<Operation> =
        std::iter::once(add_item).chain(mods.iter().cloned().map(Operation::AddModifier)).collect();
    let remove = [Operation::RemoveInstance("item".into())];
    // One round, to report how much an add recomputes.
    let added = sheet.apply(&batch).expect("add").recomputed;
    let removed = sheet.apply(&remove).expect("remove").recomputed;
    let one_by_one = sheet.add_instance("item", "PC.ITEM", None).expect("add").recomputed
        + mods.iter().map(|m| sheet.add_modifier(m).expect("valid").recomputed).sum::<usize>();
    sheet.remove_instance("item").expect("remove");
    eprintln!(
        "incremental: adding the item evaluates {added} variables ({one_by_one} one by one), removing it {removed}"
    );

    let mut g = c.benchmark_group("solver_incremental");
    let one = ModifierSpec::new("one", "V1999", ModKind::Add, "1", "bench");
    g.bench_function("baseline_add_remove_one_constant_modifier", |b| {
        b.iter(|| {
            sheet.add_modifier(black_box(&one)).expect("add");
            sheet.remove_modifier("one").expect("remove")
        })
    });
    g.bench_function("add_instance_with_20_modifiers", |b| {
        b.iter_custom(|n| {
            let mut total = Duration::ZERO;
            for _ in 0..n {
                let start = Instant::now();
                sheet.apply(black_box(&batch)).expect("add");
                total += start.elapsed();
                sheet.apply(&remove).expect("remove");
            }
            total
        })
    });
    g.bench_function("remove_instance_with_20_modifiers", |b| {
        b.iter_custom(|n| {
            let mut total = Duration::ZERO;
            for _ in 0..n {
                sheet.apply(&batch).expect("add");
                let start = Instant::now();
                sheet.apply(black_box(&remove)).expect("remove");
                total += start.elapsed();
            }
            total
        })
    });
    g.bench_function("add_instance_and_20_modifiers_one_by_one", |b| {
        b.iter_custom(|n| {
            let mut total = Duration::ZERO;
            for _ in 0..n {
                let start = Instant::now();
                sheet.add_instance("item", "PC.ITEM", None).expect("add");
                for m in &mods {
                    sheet.add_modifier(m).expect("valid");
                }
                total += start.elapsed();
                sheet.remove_instance("item").expect("remove");
            }
            total
        })
    });
    g.finish();
}

fn bench_trace(c: &mut Criterion) {
    let sheet = generate_sheet(VARS, MODS, 42);
    // The variable with the most modifiers in the top half: a realistic "why is my AC …".
    let target = (VARS / 2..VARS)
        .map(|i| format!("V{i}"))
        .max_by_key(|r| sheet.trace(r).map(|t| t.steps.len()).unwrap_or(0))
        .expect("variables exist");
    eprintln!("trace: {target} has {} steps", sheet.trace(&target).expect("traceable").steps.len());
    let mut g = c.benchmark_group("solver_trace");
    g.bench_function("baseline_value_of_one_variable", |b| b.iter(|| sheet.value(black_box(&target))));
    g.bench_function("trace_of_one_variable", |b| b.iter(|| sheet.trace(black_box(&target))));
    g.finish();
}

criterion_group!(benches, bench_full_solve, bench_incremental, bench_trace);
criterion_main!(benches);
