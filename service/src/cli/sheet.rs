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

use super::solve::{describe, parse_operation, print_results, step_error};
use data::{Character, SheetError, SheetOp};
use formula::Value;
use serde::Deserialize;
use serde_json::Value as Json;
use solver::{Report, SolveError};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// A sheet file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SheetFile {
    pub steps: Vec<Json>,
}

/// A step of a sheet file that is not a scenario step.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ObjectStepKind {
    AddObject(ObjectStep),
    RemoveObject(String),
    SetInput(InputStep),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectStep {
    pub kind: String,
    pub key: String,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub parent: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputStep {
    pub channel: String,
    #[serde(default)]
    pub on: Option<String>,
    pub value: Json,
}

fn bad_step(message: String) -> SolveError {
    step_error("sheet.bad_step", message)
}

/// A JSON value as a channel input: numbers exactly, booleans, strings (literals of data formats).
fn input_value(v: &Json) -> Result<Value, String> {
    match v {
        Json::Number(_) => crate::json::decode(&formula::Format::Number, v),
        Json::Bool(b) => Ok(Value::Boolean(*b)),
        Json::String(s) => Ok(Value::String(Arc::from(s.as_str()))),
        other => Err(format!("an input value is a number, boolean or string, not {other}")),
    }
}

/// Turns one step (as JSON) into a sheet operation: an object step, or a scenario step.
pub fn parse_step(step: &Json) -> Result<SheetOp, SolveError> {
    let is_object_step = step
        .as_object()
        .and_then(|o| o.keys().next())
        .is_some_and(|k| matches!(k.as_str(), "add_object" | "remove_object" | "set_input"));
    if !is_object_step {
        return parse_operation(step).map(SheetOp::Solver);
    }
    let step: ObjectStepKind =
        serde_json::from_value(step.clone()).map_err(|e| bad_step(format!("invalid step: {e}")))?;
    Ok(match step {
        ObjectStepKind::AddObject(o) => {
            SheetOp::AddObject { kind: o.kind, key: o.key, id: o.id, parent: o.parent }
        }
        ObjectStepKind::RemoveObject(id) => SheetOp::RemoveObject(id),
        ObjectStepKind::SetInput(i) => SheetOp::SetInput {
            channel: i.channel,
            on: i.on,
            value: input_value(&i.value).map_err(|m| bad_step(format!("set_input: {m}")))?,
        },
    })
}

/// A sheet error as the solver error the output functions print.
fn as_solve_error(e: SheetError) -> SolveError {
    e.solve.map(|b| *b).unwrap_or_else(|| step_error(e.code, e.message))
}

/// Runs `sheetd solve --ruleset ... --sheet ...`.
pub fn run(rulesets: &[PathBuf], sheet_path: &Path, traces: &[String], as_json: bool) -> ExitCode {
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
    let ruleset = match data::load(rulesets) {
        Ok(r) => Arc::new(r),
        Err(errors) => {
            for e in &errors {
                eprintln!("{}", e.render());
            }
            eprintln!(
                "error: the ruleset could not be loaded: {} errors (run `sheetd check` for details)",
                errors.len()
            );
            return ExitCode::from(1);
        }
    };
    let mut character = match Character::new(ruleset) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {}", e.message);
            return ExitCode::from(1);
        }
    };
    let outcomes: Vec<(String, Result<Report, SolveError>)> = file
        .steps
        .iter()
        .map(|s| {
            let r = parse_step(s).and_then(|op| character.apply(&[op]).map_err(as_solve_error));
            (describe(s), r)
        })
        .collect();
    if print_results(character.sheet(), &outcomes, traces, as_json) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
