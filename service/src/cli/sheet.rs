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

use super::solve::{Keys, Stepped, print_results_with};
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
    /// A dialect's game file (`"creature"`): its `setup` and verbs (see docs/dialects.md).
    #[serde(default)]
    pub dialect: Option<String>,
    /// The dialect's initial state, made into steps applied as one batch before `steps`.
    #[serde(default)]
    pub setup: Option<Json>,
    pub steps: Vec<Json>,
}

/// A game file's step, made ready: a generic step, or a dialect's question about the sheet.
fn ready(dialect: Option<&str>, s: &Json) -> Result<dialects::creature::game::Step, Rejection> {
    use dialects::creature::game;
    match dialect {
        Some(d) => crate::dialect::game_step(d, s).map_err(steps::bad_object_step),
        None => Ok(game::Step::Generic(s.clone())),
    }
}

/// Answers a dialect's question about the sheet: a formula's value on a creature, or a
/// variable's value.
fn answer(game: &Game, step: &dialects::creature::game::Step) -> Result<Stepped, Rejection> {
    use dialects::creature::game::Step as D;
    let sheet = game.character().sheet();
    let value = match step {
        D::Evaluate { creature, formula } => {
            let rules = game.character().ruleset().rules();
            let scope = rules.scope(dialects::prelude::SCOPE).map_err(Rejection::Solve)?;
            let f = rules
                .compile(formula, scope, None, Some(&formula::Format::Number))
                .map_err(|e| steps::bad_object_step(format!("`{formula}`: {} [{}]", e.message, e.code)))?;
            Ok(sheet.evaluate("evaluate", &f, Some(creature)).map_err(Rejection::Solve)?)
        }
        D::Read { reference } => sheet.value(reference).map_err(Rejection::Solve)?,
        D::Generic(_) | D::Play(_) => return Ok(Stepped::of_game(events::StepReport::default())),
    };
    let mut out = Stepped::of_game(events::StepReport::default());
    out.value = Some(value);
    Ok(out)
}

/// Runs `sheetd solve --ruleset ... --sheet ...`.
// long: reading the file, the dialect and setup, then one closure per step; each part is short.
pub fn run(
    rulesets: &[PathBuf],
    sheet_path: &Path,
    traces: &[String],
    selects: &[String],
    why: &[String],
    graphs: &super::solve::GraphArgs,
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
    let dialect = match file.dialect.as_deref().map(crate::dialect::dialect).transpose() {
        Ok(d) => d,
        Err(m) => {
            eprintln!("error: {name}: {m}");
            return ExitCode::from(1);
        }
    };
    if let Err(m) = set_up(&mut game, dialect, file.setup.as_ref()) {
        eprintln!("error: {name}: `setup`: {m}");
        return ExitCode::from(1);
    }
    // Each accepted step is one revision (revision 0: the sheet as created).
    let mut history = vec![Revision { number: 0, ruleset_version: 1, operations: vec![], moved_from: None }];
    let mut step_of_revision = vec![None];
    let outcomes: Vec<(String, Result<Stepped, Rejection>)> = file
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let r = ready(dialect, s).and_then(|d| {
                use dialects::creature::game::Step as D;
                let (step, batch) = match d {
                    D::Generic(s) => (steps::game_step(&s)?, steps::is_batch(&s)),
                    D::Play(step) => (step, false),
                    question => return answer(&game, &question),
                };
                let report = game.apply(&step).map_err(|e| match (&e.sheet, batch) {
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
    // A dialect's game prints every key on every step line (docs/dialects.md).
    let keys = if dialect.is_some() { Keys::All } else { Keys::Present };
    let mut ok = print_results_with(character.sheet(), &outcomes, traces, selects, as_json, keys);
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
    ok &= graphs.print(character.sheet(), as_json);
    if ok { ExitCode::SUCCESS } else { ExitCode::from(1) }
}

/// Applies a dialect game's `setup` as one batch.
fn set_up(game: &mut Game, dialect: Option<&str>, setup: Option<&Json>) -> Result<(), String> {
    let Some(setup) = setup else { return Ok(()) };
    if dialect.is_none() {
        return Err("a `setup` belongs to a dialect's game file: name its `dialect`".to_owned());
    }
    let step = crate::dialect::game_setup(dialect.unwrap_or("creature"), setup)?;
    game.apply(&step).map_err(|e| format!("{} [{}]", e.message, e.code))?;
    Ok(())
}

/// The rulesets loaded, their rules checked, and a new game on them; on failure every problem
/// printed.
fn load_game(rulesets: &[PathBuf]) -> Result<(Arc<data::Ruleset>, Game), ExitCode> {
    let ruleset = match crate::dialect::load(rulesets) {
        Ok(l) => {
            for w in &l.warnings {
                eprint!("{}", crate::render::warning(&crate::problem::Problem::of_diagnostic(w)));
            }
            Arc::new(l.ruleset)
        }
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
                    "paths": c.paths.iter().map(|p| p.iter().map(|v| v.to_string()).collect::<Vec<_>>()).collect::<Vec<_>>(),
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
        // The ways the change went through the graph (else, what it changed on the way).
        let ways: Vec<String> =
            c.paths.iter().map(|p| p.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" → ")).collect();
        let via: Vec<String> = c.via.iter().map(|v| v.to_string()).collect();
        let via = if !ways.is_empty() {
            format!(" (through {})", ways.join("; "))
        } else if via.is_empty() {
            String::new()
        } else {
            format!(" (via {})", via.join(", "))
        };
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
