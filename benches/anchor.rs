//! The anchor workload (`../shared/bench/anchor-workload/`, see `workload.rs`) at 2,000 and
//! 20,000 variables — and 200,000 with `SHEETD_BENCH_200K=1` — one row per measure of the
//! solver's performance table (issue 13): re-solve with the plan cached, the first solve after a
//! structural change and the hub and leaf changes (each interpreted, then with the plan compiled
//! to native code: `*_interpreted` is the same-run baseline of the row without the suffix),
//! building the sheet in one batch (its modifiers given whole, then linked from a catalog, with
//! the hub and leaf changes on that sheet), a sheet from the compiled (built) sheet,
//! the hub and leaf changes, and (at 2,000)
//! the modifiers added one by one in file order, each recomputed at once or deferred to one
//! `settle`. Each group has baselines measured in the same run: reading one value, and timing
//! nothing the way the hub and leaf rows time a change (the clock's own cost, under both).
//!
//! The rows run on the daemon's allocator (mimalloc), as `sheetd serve` does.

/// The daemon's allocator (see `service/src/main.rs`): the rows measure what `sheetd serve` runs.
#[global_allocator]
static ALLOCATOR: sheetd::alloc::Allocator = sheetd::alloc::Allocator;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use sheetd_benches::workload::Workload;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn sizes() -> Vec<(usize, usize)> {
    let mut s = vec![(2_000, 8_000), (20_000, 80_000)];
    if std::env::var_os("SHEETD_BENCH_200K").is_some() {
        s.push((200_000, 800_000));
    }
    s
}

/// Times `f` on a fresh copy of `sheet`'s state per iteration, leaving out `undo`.
fn timed_change(
    b: &mut criterion::Bencher<'_>,
    sheet: &mut solver::Sheet,
    mut f: impl FnMut(&mut solver::Sheet),
    mut undo: impl FnMut(&mut solver::Sheet),
) {
    b.iter_custom(|iters| {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let t = Instant::now();
            f(sheet);
            total += t.elapsed();
            undo(sheet);
        }
        total
    });
}

/// The hub and leaf changes (`ADD 1` on V1 and on V1998, timed; then removed, untimed), as rows
/// `hub_change{suffix}` and `leaf_change{suffix}` — and, without a suffix, the leaf change with
/// its target named, `leaf_change_by_name`.
fn bench_changes(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    sheet: &mut solver::Sheet,
    w: &Workload,
    suffix: &str,
) {
    let rules = sheet.rules().clone();
    let mut rows = vec![
        (format!("hub_change{suffix}"), Workload::add_one(&rules, w.hub)),
        (format!("leaf_change{suffix}"), Workload::add_one(&rules, w.leaf)),
    ];
    // The leaf change again with the target named, as a request names it: the sheet resolves
    // the name (the rows above add by index, as a ruleset's objects do).
    if suffix.is_empty() {
        rows.push(("leaf_change_by_name".into(), Workload::add_one_by_name(w.leaf)));
    }
    for (name, spec) in rows {
        g.bench_function(name, |b| {
            timed_change(
                b,
                sheet,
                |s| {
                    black_box(s.add_modifier(&spec).expect("adds"));
                },
                |s| {
                    s.remove_modifier("add-one").expect("removes");
                },
            )
        });
    }
}

/// A structural change (a modifier added to the leaf and removed), then the full solve timed.
fn first_solve(b: &mut criterion::Bencher<'_>, sheet: &mut solver::Sheet, touch: &solver::ModifierSpec) {
    b.iter_custom(|iters| {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            sheet.add_modifier(touch).expect("adds");
            sheet.remove_modifier("add-one").expect("removes");
            let t = Instant::now();
            black_box(sheet.solve_all());
            total += t.elapsed();
        }
        total
    })
}

/// A sheet from the compiled ruleset: a copy of the built sheet shares its shape (variables,
/// modifiers, graph, plan) and allocates only its values; then one plan run solves it. And a
/// copy's first structural change, which copies the shape but not its modifiers (the copy's
/// own go in its overlay), dropped with the copy.
fn bench_compiled(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    sheet: &mut solver::Sheet,
    touch: &solver::ModifierSpec,
) {
    sheet.prepare_to_share();
    let compiled = sheet.clone();
    g.bench_function("sheet_from_compiled", |b| b.iter_with_large_drop(|| black_box(&compiled).clone()));
    g.bench_function("sheet_from_compiled_and_solved", |b| {
        b.iter_with_large_drop(|| {
            let mut s = black_box(&compiled).clone();
            s.solve_all();
            s
        })
    });
    g.bench_function("first_change_of_a_copy", |b| {
        b.iter_with_large_drop(|| {
            let mut s = black_box(&compiled).clone();
            s.add_modifier(touch).expect("adds");
            s
        })
    });
}

/// The workload compiled into a catalog, as a ruleset's modifiers are (`Workload::templates`):
/// the sheet built by linking every template in one batch, and the hub and leaf changes on it,
/// their `ADD 1` linked from a template too (interpreted; the `*_interpreted` rows above are
/// the same changes given whole).
fn bench_linked(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    w: &Workload,
    rules: &std::sync::Arc<solver::Rules>,
) {
    let linked = w.templates(rules);
    g.bench_function("build_sheet_linked", |b| {
        b.iter_batched(
            || (),
            |()| {
                let mut s = solver::Sheet::with_catalog(linked.catalog.clone());
                s.apply_steps(black_box(&linked.steps)).expect("links");
                s
            },
            BUILT,
        )
    });
    let mut sheet = solver::Sheet::with_catalog(linked.catalog.clone());
    sheet.apply_steps(&linked.steps).expect("links");
    sheet.solve_all();
    for (name, step) in [("hub_change_linked", &linked.hub_one), ("leaf_change_linked", &linked.leaf_one)] {
        g.bench_function(name, |b| {
            timed_change(
                b,
                &mut sheet,
                |s| {
                    black_box(s.apply_steps(std::slice::from_ref(step)).expect("adds"));
                },
                |s| {
                    s.remove_modifier("add-one").expect("removes");
                },
            )
        });
    }
}

/// The modifiers added one by one in file order, recomputed at once or deferred to one settle.
fn bench_one_by_one(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rules: &std::sync::Arc<solver::Rules>,
    ops: &[solver::Operation],
) {
    g.sample_size(10);
    g.bench_function("modifiers_one_by_one_in_file_order", |b| {
        b.iter_batched(
            || (),
            |()| {
                let mut s = solver::Sheet::new(rules.clone());
                for op in ops {
                    s.apply(std::slice::from_ref(op)).expect("applies");
                }
                s
            },
            BUILT,
        )
    });
    g.bench_function("modifiers_one_by_one_deferred", |b| {
        b.iter_batched(
            || (),
            |()| {
                let mut s = solver::Sheet::new(rules.clone());
                s.defer();
                for op in ops {
                    s.apply(std::slice::from_ref(op)).expect("applies");
                }
                black_box(s.settle());
                s
            },
            BUILT,
        )
    });
}

/// How the rows that build a whole sheet run: one build per timing, the sheet dropped after
/// it, untimed, before the next. Every build row (in one batch, linked, one by one) is timed
/// alike, without its drop, on memory the allocator has had back: a criterion batch that kept
/// each sample's sheets (`iter_with_large_drop`, `LargeInput`) made every build allocate fresh
/// pages, and the page faults and cold lines — about 3 MB a build — cost the batch rows a
/// third more than the same builds in `anchor_loop`, where each sheet is dropped at once.
const BUILT: BatchSize = BatchSize::PerIteration;

fn bench_anchor(c: &mut Criterion) {
    for (vars, mods) in sizes() {
        let Some(w) = Workload::generate(vars, mods) else { return };
        let mut g = c.benchmark_group(format!("anchor_{vars}"));
        if vars >= 20_000 {
            g.sample_size(10);
        }
        let mut sheet = w.build();
        sheet.solve_all();
        let probe = format!("V{}", w.hub);
        g.bench_function("baseline_value_of_one_variable", |b| b.iter(|| sheet.value(black_box(&probe))));
        // What timing one change costs by itself (two clock reads): the floor under the hub and
        // leaf rows, which time each change alone so as to leave its undo out.
        g.bench_function("baseline_timed_nothing", |b| {
            timed_change(
                b,
                &mut sheet,
                |s| {
                    black_box(s);
                },
                |_| {},
            )
        });
        g.bench_function("resolve_plan_cached", |b| b.iter(|| black_box(&mut sheet).solve_all()));
        let touch = Workload::add_one(&sheet.rules().clone(), w.leaf);
        g.bench_function("first_solve_after_structural_change", |b| first_solve(b, &mut sheet, &touch));
        bench_changes(&mut g, &mut sheet, &w, "_interpreted");
        // The same two rows with the plan compiled to native code (the interpreted rows above
        // are their baseline, in the same run).
        let t = Instant::now();
        assert!(sheet.compile_native(0), "Cranelift supports this host");
        eprintln!("anchor_{vars}: native code compiled in {:.1} ms", t.elapsed().as_secs_f64() * 1e3);
        g.bench_function("resolve_native", |b| b.iter(|| black_box(&mut sheet).solve_all()));
        g.bench_function("first_solve_after_structural_change_native", |b| {
            first_solve(b, &mut sheet, &touch)
        });
        let rules = w.rules();
        let ops = w.operations(&rules);
        g.bench_function("build_sheet_one_batch", |b| {
            b.iter_batched(
                || ops.clone(),
                |ops| {
                    let mut s = solver::Sheet::new(rules.clone());
                    s.apply(&ops).expect("applies");
                    // The operations are dropped with the sheet, untimed: the batch borrows them.
                    (s, ops)
                },
                BUILT,
            )
        });
        bench_linked(&mut g, &w, &rules);
        bench_compiled(&mut g, &mut sheet, &touch);
        bench_changes(&mut g, &mut sheet, &w, "");
        if vars == 2_000 {
            bench_one_by_one(&mut g, &rules, &ops);
        }
        g.finish();
    }
}

criterion_group!(benches, bench_anchor);
criterion_main!(benches);
