//! Formula benchmarks: parse + check of a typical formula, and evaluation of a compiled
//! `floor((Score-10)/2)` with one variable lookup.
//!
//! Baselines in the same run: for parse + check, parsing alone; for evaluation, reading the
//! variable through the context alone (the floor of any evaluator).

use criterion::{Criterion, criterion_group, criterion_main};
use formula::{CheckEnv, EvalContext, Formula, Library, Limits, VarId, parse};
use sheetd_benches::NumberVars;
use std::hint::black_box;

/// A formula of the kind real data uses: a user function, a conditional, arithmetic.
const TYPICAL: &str = "if(RaceType_Humanoid > 0, d20Mod(Score) + 2, max(Base, 10)) * Size";

fn bench_compile(c: &mut Criterion) {
    let vars = NumberVars::new(&[("RaceType_Humanoid", 1), ("Score", 14), ("Base", 3), ("Size", 1)]);
    let mut library = Library::new();
    library.define("d20Mod", "floor((arg(0)-10)/2)").expect("valid function");
    let limits = Limits::default();
    let mut g = c.benchmark_group("formula_compile");
    g.bench_function("baseline_parse_only", |b| b.iter(|| parse(black_box(TYPICAL), &limits)));
    g.bench_function("parse_and_check", |b| {
        b.iter(|| Formula::compile(black_box(TYPICAL), &library, &CheckEnv::new(&vars), &limits))
    });
    g.finish();
}

fn bench_eval(c: &mut Criterion) {
    let vars = NumberVars::new(&[("Score", 14)]);
    let library = Library::new();
    let f = Formula::compile("floor((Score-10)/2)", &library, &CheckEnv::new(&vars), &Limits::default())
        .expect("valid formula");
    assert_eq!(f.evaluate(&vars, None).expect("evaluates").to_string(), "2");
    let mut g = c.benchmark_group("formula_eval");
    g.bench_function("baseline_variable_lookup", |b| b.iter(|| black_box(&vars).value(black_box(VarId(0)))));
    g.bench_function("floor_score_minus_10_div_2", |b| {
        b.iter(|| black_box(&f).evaluate(black_box(&vars), None))
    });
    g.bench_function("floor_score_minus_10_div_2_as_number", |b| {
        b.iter(|| black_box(&f).evaluate_number(black_box(&vars), None))
    });
    g.finish();
}

criterion_group!(benches, bench_compile, bench_eval);
criterion_main!(benches);
