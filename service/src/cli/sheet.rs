//! `sheetd solve --ruleset RULESET... --sheet SHEET.json`: load rulesets, build a character from
//! a sheet file's steps, and print what each step changed, the final values and traces — the
//! same output as `--scenario`.
//!
//! The sheet file is `{"steps": [...]}`. Besides the scenario steps (`add_modifier`,
//! `remove_modifier`, `remove_source`, `add_instance`, `remove_instance`) it takes:
//!
//! ```json
//! {"add_object": {"kind": "EQUIPMENT", "key": "Estex Suit I", "id": "armor1", "parent": null}}
//! {"remove_object": "armor1"}
//! {"set_input": {"channel": "StatScore", "on": "STR", "value": 14}}
//! ```

use super::solve::{Stepped, print_results};
use super::steps::{self, Rejection};
use data::history::{DiffKind, Log, Revision, Typed, WhyChanged, why_changed};
use data::record;
use events::Game;
use serde::Deserialize;
use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// A sheet file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SheetFile {
    pub steps: Vec<Json>,
}

/// Runs `sheetd solve --ruleset ... --sheet ...`.
pub fn run(
    rulesets: &[PathBuf],
    sheet_path: &Path,
    traces: &[String],
    selects: &[String],
    why: &[String],
    as_json: bool,
) -> ExitCode {
    let name = sheet_path.display().to_string();
    let text = match std::fs::read_to_string(sheet_path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {name}: {e}");
            return ExitCode::from(1);
        }
    };
    let file: SheetFile = match serde_json::from_str(&text) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("error: {name}:{}:{}: {e}", e.line(), e.column());
            return ExitCode::from(1);
        }
    };
    let (ruleset, mut game) = match load_game(rulesets) {
        Ok(x) => x,
        Err(code) => return code,
    };
    // Each accepted step is one revision (revision 0: the sheet as created).
    let mut history = vec![Revision { number: 0, ruleset_version: 1, operations: vec![], moved_from: None }];
    let mut step_of_revision = vec![None];
    let outcomes: Vec<(String, Result<Stepped, Rejection>)> = file
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let r = steps::game_step(s).and_then(|step| {
                let report = game.apply(&step).map_err(|e| match (&e.sheet, steps::is_batch(s)) {
                    (Some(se), true) if matches!(step, events::Step::Ops(_)) => {
                        Rejection::InBatch(se.index, Box::new(Rejection::Sheet(*se.clone())))
                    }
                    (Some(se), false) if matches!(step, events::Step::Ops(_)) => {
                        Rejection::Sheet(*se.clone())
                    }
                    _ => Rejection::Game(e),
                })?;
                let number = history.len() as u64;
                let operations = report.applied.clone();
                history.push(Revision { number, ruleset_version: 1, operations, moved_from: None });
                step_of_revision.push(Some(i));
                Ok(Stepped::of_game(report))
            });
            (steps::describe(s), r)
        })
        .collect();
    let character = game.character();
    let mut ok = print_results(character.sheet(), &outcomes, traces, selects, as_json);
    if let Some(p) = game.pending() {
        match as_json {
            true => println!("{}", serde_json::json!({"pending": crate::json::pending(p)})),
            false => println!("\npending: {p}"),
        }
    }
    for var in why {
        if character.sheet().find(var).is_none() {
            eprintln!("error: --why {var}: no variable `{var}` on this sheet");
            ok = false;
            continue;
        }
        ok &= explain_last_change(&ruleset, &history, &step_of_revision, &outcomes, var, as_json);
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// The rulesets loaded, their rules checked, and a new game on them; on failure every problem
/// printed.
fn load_game(rulesets: &[PathBuf]) -> Result<(Arc<data::Ruleset>, Game), ExitCode> {
    let ruleset = match data::load(rulesets) {
        Ok(r) => Arc::new(r),
        Err(errors) => {
            for e in &errors {
                eprint!("{}", crate::render::problem(&crate::problem::Problem::of_diagnostic(e)));
            }
            eprintln!(
                "error: the ruleset could not be loaded: {} errors (run `sheetd check` for details)",
                errors.len()
            );
            return Err(ExitCode::from(1));
        }
    };
    let book = match events::RuleBook::compile(ruleset.clone()) {
        Ok(b) => Arc::new(b),
        Err(errors) => {
            for e in &errors {
                eprint!("{}", crate::render::problem(&crate::problem::Problem::of_diagnostic(e)));
            }
            eprintln!("error: the ruleset's rules could not be loaded: {} errors", errors.len());
            return Err(ExitCode::from(1));
        }
    };
    let game = match Game::new(book) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {}", e.message);
            return Err(ExitCode::from(1));
        }
    };
    Ok((ruleset, game))
}

/// Prints why `var` last changed: the last accepted step that changed it, explained by
/// [`data::history::why_changed`] over the sheet's steps as revisions.
fn explain_last_change(
    ruleset: &Arc<data::Ruleset>,
    history: &[Revision],
    step_of_revision: &[Option<usize>],
    outcomes: &[(String, Result<Stepped, Rejection>)],
    var: &str,
    as_json: bool,
) -> bool {
    let changed_var = |r: &Stepped| r.changed.iter().any(|c| c.var.to_string().eq_ignore_ascii_case(var));
    let last = (1..history.len())
        .rev()
        .find(|&rev| step_of_revision[rev].is_some_and(|i| outcomes[i].1.as_ref().is_ok_and(changed_var)));
    let Some(revision) = last.map(|r| r as u64) else {
        if as_json {
            println!("{}", serde_json::json!({"why": {"ref": var, "changed": false}}));
        } else {
            println!("\nwhy {var}: no step changed it");
        }
        return true;
    };
    let log = Log { revisions: history, rulesets: &|v| (v == 1).then(|| ruleset.clone()) };
    let w = match why_changed(&log, None, var, revision - 1, revision, &mut |_, _, _| {}) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: --why {var}: {e}");
            return false;
        }
    };
    let step = step_of_revision[revision as usize].unwrap_or(0);
    print_why(var, step, &w, as_json);
    true
}

fn print_why(var: &str, step: usize, w: &WhyChanged, as_json: bool) {
    use crate::json;
    let shown = |t: &Option<Typed>| {
        t.as_ref().map_or("(none)".to_owned(), |t| record::Value::of(&t.format, &t.slot).to_string())
    };
    if as_json {
        let causes: Vec<Json> = w
            .causes
            .iter()
            .map(|c| {
                serde_json::json!({
                    "description": c.description,
                    "before": c.before.as_ref().map_or(Json::Null, |t| json::record(&record::Value::of(&t.format, &t.slot))),
                    "after": c.after.as_ref().map_or(Json::Null, |t| json::record(&record::Value::of(&t.format, &t.slot))),
                    "via": c.via.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({"why": {"ref": var, "changed": true, "step": step, "causes": causes}})
        );
        return;
    }
    println!("\nwhy {var} changed at step {step}: {} → {}", shown(&w.from_value), shown(&w.to_value));
    for c in &w.causes {
        let via: Vec<String> = c.via.iter().map(|v| v.to_string()).collect();
        let via = if via.is_empty() { String::new() } else { format!(" (via {})", via.join(", ")) };
        println!("    {}: {} → {}{via}", c.description, shown(&c.before), shown(&c.after));
    }
    for d in w.diff.iter().filter(|d| d.kind != DiffKind::Unchanged) {
        let kind = match d.kind {
            DiffKind::Added => "added",
            DiffKind::Removed => "removed",
            _ => "changed",
        };
        // What it is now, with its source: an adjusted stock's says by what and how much
        // (`input: adjust by `-Workers` = -5`).
        let now =
            d.to.as_ref().map_or(String::new(), |t| format!(": {} {} ({})", t.kind, t.instruction, t.source));
        println!("    modifier {} {kind}{now}", d.modifier);
    }
}
