//! The anchor workload's checks on the solver: every value exactly as the generator's
//! arbitrary-precision reference computes it, and the hub and leaf changes.

use sheetd_benches::workload::{Workload, sum};

#[test]
fn the_solver_solves_the_anchor_workload_exactly() {
    let Some(w) = Workload::generate(2_000, 8_000) else { return };
    assert_eq!(w.mods.len(), 8_000);
    let mut sheet = w.build();
    let expected = w.expected.as_ref().expect("the 2,000-variable workload has expected values");
    for (i, want) in expected.iter().enumerate() {
        let got = sheet.value(&format!("V{i}")).expect("declared").expect("a value");
        assert_eq!(got, formula::Value::Number((*want).into()), "V{i}");
    }
    assert_eq!(sum(&sheet), 9_195_514);
    // The hub: 1,428 variables change and the sum becomes 9,590,433; removing it restores all.
    let report = sheet.add_modifier(&Workload::add_one(&sheet.rules().clone(), w.hub)).expect("adds");
    assert_eq!((w.hub, report.changed.len()), (1, 1_428));
    assert_eq!(sum(&sheet), 9_590_433);
    sheet.remove_modifier("add-one").expect("removes");
    assert_eq!(sum(&sheet), 9_195_514);
    // The leaf, named (resolved by the sheet): one variable changes.
    let report = sheet.add_modifier(&Workload::add_one_by_name(w.leaf)).expect("adds");
    assert_eq!(report.changed.len(), 1);
}

/// Loading the workload's modifiers one at a time while deferring, then settling once, gives
/// the generator's exact values, evaluating each variable at most once.
#[test]
fn the_workload_loaded_one_by_one_and_settled_once_is_exact() {
    let Some(w) = Workload::generate(2_000, 8_000) else { return };
    let rules = w.rules();
    let mut sheet = solver::Sheet::new(rules.clone());
    sheet.defer();
    for op in w.operations(&rules) {
        assert!(sheet.apply(&[op]).expect("applies").is_empty());
    }
    let report = sheet.settle();
    // Each variable with a modifier once (those without keep their default and are not touched).
    assert!(report.recomputed <= 2_000, "{} evaluations", report.recomputed);
    assert_eq!(sum(&sheet), 9_195_514);
}

/// The workload compiled into a catalog and linked by index gives the same sheet as the
/// modifiers given whole: every value, and the hub and leaf changes linked from templates.
#[test]
fn the_workload_linked_from_a_catalog_is_exact() {
    let Some(w) = Workload::generate(2_000, 8_000) else { return };
    let rules = w.rules();
    let linked = w.templates(&rules);
    assert_eq!(linked.catalog.len(), 8_002);
    let mut sheet = solver::Sheet::with_catalog(linked.catalog.clone());
    sheet.apply_steps(&linked.steps).expect("links");
    let expected = w.expected.as_ref().expect("the 2,000-variable workload has expected values");
    for (i, want) in expected.iter().enumerate() {
        let got = sheet.value(&format!("V{i}")).expect("declared").expect("a value");
        assert_eq!(got, formula::Value::Number((*want).into()), "V{i}");
    }
    let report = sheet.apply_steps(std::slice::from_ref(&linked.hub_one)).expect("adds");
    assert_eq!(report.changed.len(), 1_428);
    assert_eq!(sum(&sheet), 9_590_433);
    sheet.remove_modifier("add-one").expect("removes");
    assert_eq!(sum(&sheet), 9_195_514);
    let report = sheet.apply_steps(std::slice::from_ref(&linked.leaf_one)).expect("adds");
    assert_eq!(report.changed.len(), 1);
    assert_eq!(sum(&sheet), 9_195_515);
}

/// At 20,000 variables a recomputation takes each level in ascending index (sorted by radix
/// where a level is large) and asks for the next variables' records ahead: the hub change
/// and its removal give exactly the values a solve from scratch gives, and report every
/// variable whose value changed.
#[test]
fn a_large_sheet_recomputes_as_it_solves_from_scratch() {
    let Some(w) = Workload::generate(20_000, 80_000) else { return };
    let mut sheet = w.build();
    let before = sheet.values();
    let report = sheet.add_modifier(&Workload::add_one(&sheet.rules().clone(), w.hub)).expect("adds");
    assert!(report.changed.len() > 10_000, "{} changed", report.changed.len());
    let after = sheet.values();
    let mut scratch = sheet.clone();
    scratch.solve_all();
    assert_eq!(scratch.values(), after);
    let differ = before.iter().zip(&after).filter(|(a, b)| a != b).count();
    assert_eq!(differ, report.changed.len());
    sheet.remove_modifier("add-one").expect("removes");
    assert_eq!(sheet.values(), before);
}
