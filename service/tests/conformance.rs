//! PCGen formula conformance: every case in `../shared/conformance/pcgen-formula.jsonl` runs
//! through `sheetd eval --jsonl`'s request handler. All must pass except the deviations listed by
//! id in `docs/formula-language.md` (section "Deviations from the conformance cases"), and each
//! listed deviation must really deviate, so the list cannot go stale.

use rust_decimal::Decimal;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::str::FromStr;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn documented_deviations() -> Vec<String> {
    let doc =
        std::fs::read_to_string(root().join("docs/formula-language.md")).expect("docs/formula-language.md");
    let section = doc
        .split("## Deviations from the conformance cases")
        .nth(1)
        .expect("the deviations section exists")
        .split("\n## ")
        .next()
        .unwrap_or_default();
    section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

fn number(j: &Json) -> Option<Decimal> {
    match j {
        Json::Number(n) => {
            let t = n.to_string();
            Decimal::from_str(&t).or_else(|_| Decimal::from_scientific(&t)).ok()
        }
        Json::String(s) => Decimal::from_str(s).ok(),
        _ => None,
    }
}

/// Whether `got` (a response value) matches `expected` (a reference value) within `tolerance`.
fn same(got: &Json, expected: &Json, tolerance: Option<f64>) -> bool {
    match (got, expected) {
        (Json::Array(a), Json::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y, tolerance))
        }
        (Json::Bool(a), Json::Bool(b)) => a == b,
        (g, e) if number(e).is_some() && !matches!(e, Json::String(_)) => {
            let (Some(g), Some(e)) = (number(g), number(e)) else { return false };
            match tolerance {
                None => g == e,
                Some(t) => {
                    let diff = (g - e).abs();
                    let scale = e.abs().max(Decimal::ONE);
                    diff <= scale * Decimal::from_f64_retain(t).unwrap_or_default()
                }
            }
        }
        (g, e) => g == e,
    }
}

/// Runs one case; `Ok` if it passes, `Err(reason)` otherwise.
fn run_case(case: &Json) -> Result<(), String> {
    let line = serde_json::to_string(&case["case"]).map_err(|e| e.to_string())?;
    let got = sheetd::cli::eval::eval_request(&line);
    let tolerance = case["tolerance"].as_f64();
    if let Some(stage) = case.get("expect_error") {
        return match got.get("error") {
            Some(e) if e["stage"] != "input" => Ok(()),
            _ => Err(format!("expected an error (reference: {stage}), got {got}")),
        };
    }
    let expected = &case["expect"];
    if let Some(err) = got.get("error") {
        let ambiguity_ok =
            case["either_error"] == Json::Bool(true) && err["code"] == "parse.ambiguous_precedence";
        return if ambiguity_ok { Ok(()) } else { Err(format!("expected {expected}, got error {err}")) };
    }
    if got["format"] != expected["format"] {
        return Err(format!("expected format {}, got {}", expected["format"], got["format"]));
    }
    if same(&got["value"], &expected["value"], tolerance) {
        Ok(())
    } else {
        Err(format!("expected {}, got {}", expected["value"], got["value"]))
    }
}

#[test]
fn pcgen_conformance_cases() {
    let path = root().join("../shared/conformance/pcgen-formula.jsonl");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("notice: {} is absent; skipping the conformance cases", path.display());
        return;
    };
    let deviations = documented_deviations();
    let mut failures = Vec::new();
    let mut seen_deviations = Vec::new();
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Json = serde_json::from_str(line).expect("conformance lines are JSON");
        let id = case["id"].as_str().unwrap_or("?").to_owned();
        count += 1;
        let result = run_case(&case);
        if deviations.contains(&id) {
            assert!(result.is_err(), "{id} is listed as a deviation but passes; remove it from the docs");
            seen_deviations.push(id);
        } else if let Err(why) = result {
            failures.push(format!("{id}: {} → {why}", case["case"]));
        }
    }
    assert!(count > 100, "expected the full case file, read {count} cases");
    assert!(failures.is_empty(), "{} of {count} cases fail:\n{}", failures.len(), failures.join("\n"));
    let stale: Vec<_> = deviations.iter().filter(|d| !seen_deviations.contains(d)).collect();
    assert!(stale.is_empty(), "documented deviations not in the case file: {stale:?}");
    eprintln!(
        "{count} conformance cases: {} pass, {} documented deviations",
        count - seen_deviations.len(),
        seen_deviations.len()
    );
}
