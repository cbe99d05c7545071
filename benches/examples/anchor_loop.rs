//! One row of the anchor workload's table in a fixed loop, for profiling with perf or
//! callgrind: `anchor_loop <resolve|first|copy|build|linked|hub|leaf|linkedhub|linkedleaf|onebyone|deferred> [rounds] [variables]`.
//! Example: `valgrind --tool=callgrind ./target/release/examples/anchor_loop hub 200`. With
//! `SHEETD_NATIVE=1` the built sheet's plan is compiled to native code first; with
//! `SHEETD_SHARED=1` it is first prepared to share (its modifiers folded into the shared base,
//! as the criterion rows after `sheet_from_compiled` run on).

use sheetd_benches::workload::Workload;

/// The daemon's allocator, as in the anchor benches.
#[global_allocator]
static ALLOCATOR: sheetd::alloc::Allocator = sheetd::alloc::Allocator;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Compiles the sheet's plan to native code (with `SHEETD_NATIVE` set), saying how long it took.
fn compile_native(sheet: &mut solver::Sheet) {
    let t = Instant::now();
    let compiled = sheet.compile_native(0);
    let (vars, native) = sheet.native_coverage().unwrap_or_default();
    eprintln!(
        "native code: {compiled}, {native} of {vars} variables compiled in {:.1} ms, {:.1} KiB of machine code",
        t.elapsed().as_secs_f64() * 1e3,
        sheet.native_code_bytes().unwrap_or(0) as f64 / 1024.0
    );
    sheet.solve_all();
    eprintln!("sum after a native solve: {}", sheetd_benches::workload::sum(sheet));
}

// long: one match arm per row of the table, each its own small loop body.
fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "hub".to_owned());
    let rounds: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let vars: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let Some(w) = Workload::generate(vars, vars * 4) else {
        eprintln!("the anchor generator (../shared/bench/anchor-workload/gen.py) is not reachable");
        std::process::exit(2);
    };
    let rules = w.rules();
    let ops = w.operations(&rules);
    let linked = w.templates(&rules);
    let mut sheet = w.build();
    sheet.solve_all();
    if what == "copy" || std::env::var_os("SHEETD_SHARED").is_some() {
        // Copies are made from a compiled sheet, prepared as a ruleset's starting one is.
        sheet.prepare_to_share();
    }
    if std::env::var_os("SHEETD_NATIVE").is_some() {
        compile_native(&mut sheet);
    }
    let mut linked_sheet = solver::Sheet::with_catalog(linked.catalog.clone());
    linked_sheet.apply_steps(&linked.steps).expect("the workload links");
    linked_sheet.solve_all();
    // A change row's first addition to a built sheet grows its modifier table (records held
    // in place: at 200,000 variables, 100 MB copied and twice that faulted in), once: that
    // round is run untimed, as criterion's warm-up does, so a row times the change itself.
    match what.as_str() {
        "hub" | "leaf" => {
            let target = if what == "hub" { w.hub } else { w.leaf };
            sheet.add_modifier(&Workload::add_one(&rules, target)).expect("adds");
            sheet.remove_modifier("add-one").expect("removes");
        }
        "linkedhub" | "linkedleaf" => {
            let step = if what == "linkedhub" { &linked.hub_one } else { &linked.leaf_one };
            linked_sheet.apply_steps(std::slice::from_ref(step)).expect("adds");
            linked_sheet.remove_modifier("add-one").expect("removes");
        }
        _ => {}
    }
    let mut timed = Duration::ZERO;
    let mut evaluations = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        match what.as_str() {
            "resolve" => {
                black_box(sheet.solve_all());
            }
            "first" => {
                sheet.add_modifier(&Workload::add_one(&rules, w.leaf)).expect("adds");
                sheet.remove_modifier("add-one").expect("removes");
                let t = Instant::now();
                black_box(sheet.solve_all());
                timed += t.elapsed();
                continue;
            }
            "copy" => {
                // A sheet from the compiled one, then its first structural change (a shape copy).
                let mut c = sheet.clone();
                c.add_modifier(&Workload::add_one(&rules, w.leaf)).expect("adds");
                black_box(c);
            }
            "build" => {
                let mut s = solver::Sheet::new(rules.clone());
                s.apply(&ops).expect("applies");
                black_box(s);
            }
            "linked" => {
                // The same build, the modifiers compiled once into a catalog and linked by index.
                let mut s = solver::Sheet::with_catalog(linked.catalog.clone());
                s.apply_steps(&linked.steps).expect("applies");
                black_box(s);
            }
            "deferred" => {
                let mut s = solver::Sheet::new(rules.clone());
                s.defer();
                for op in &ops {
                    s.apply(std::slice::from_ref(op)).expect("applies");
                }
                black_box(s.settle());
            }
            "onebyone" => {
                let mut s = solver::Sheet::new(rules.clone());
                for op in &ops {
                    s.apply(std::slice::from_ref(op)).expect("applies");
                }
                black_box(s);
            }
            "hub" | "leaf" => {
                let target = if what == "hub" { w.hub } else { w.leaf };
                let report = sheet.add_modifier(&Workload::add_one(&rules, target)).expect("adds");
                timed += t.elapsed();
                evaluations = black_box(report).recomputed;
                sheet.remove_modifier("add-one").expect("removes");
                continue;
            }
            "linkedhub" | "linkedleaf" => {
                // The hub and leaf changes on the sheet built from the catalog, their `ADD 1`
                // linked from a template.
                let step = if what == "linkedhub" { &linked.hub_one } else { &linked.leaf_one };
                let t = Instant::now();
                let report = linked_sheet.apply_steps(std::slice::from_ref(step)).expect("adds");
                timed += t.elapsed();
                evaluations = black_box(report).recomputed;
                linked_sheet.remove_modifier("add-one").expect("removes");
                continue;
            }
            other => {
                eprintln!(
                    "unknown row `{other}`: resolve, first, build, linked, hub, leaf, linkedhub, linkedleaf, onebyone or deferred"
                );
                std::process::exit(2);
            }
        }
        timed += t.elapsed();
    }
    let per = timed.as_nanos() as f64 / rounds.max(1) as f64 / 1000.0;
    if evaluations > 0 {
        let each = per * 1000.0 / evaluations as f64;
        println!(
            "{what} at {vars} variables: {rounds} rounds, {per:.2} µs each, {evaluations} evaluations ({each:.1} ns each)"
        );
    } else {
        println!("{what} at {vars} variables: {rounds} rounds, {per:.2} µs each");
    }
}
