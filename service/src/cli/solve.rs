//! `sheetd solve --scenario FILE`: build rules and a sheet from a scenario file, run its steps,
//! and print what each step changed, the final values, and traces.
//!
//! The scenario format is documented in `docs/solver.md`:
//!
//! ```json
//! {"global_scope": "PC",
//!  "scopes": [{"name": "PC.EQUIPMENT", "parent": "PC"}],
//!  "defaults": {"NUMBER": 0, "BOOLEAN": false, "STRING": ""},
//!  "variables": [{"name": "Hands", "scope": "PC", "format": "NUMBER", "locked": false, "order": "inherent"}],
//!  "functions": {"d20Mod": "floor((arg(0)-10)/2)"},
//!  "steps": [{"add_instance": {"id": "sword1", "scope": "PC.EQUIPMENT", "parent": null}},
//!            {"add_modifier": {"id": "m1", "var": "Hands", "type": "SET", "value": "4"}}]}
//! ```

use super::steps::{self, Rejection};
use crate::json::{self, decode};
use crate::problem::Problem;
use clap::Args;
use formula::Value;
use serde::Deserialize;
use serde_json::{Map, Value as Json, json};
use solver::{Change, Report, Rules, RulesBuilder, Sheet, Slot, SolveError, Trace};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Arguments of `sheetd solve`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["scenario", "sheet"])))]
pub struct SolveArgs {
    /// A scenario file: scopes, variables, functions and steps (see docs/solver.md).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["ruleset", "sheet"])]
    pub scenario: Option<PathBuf>,

    /// A ruleset to load: a native one (.toml file or directory) or a PCGen campaign (.pcc).
    /// Repeatable: later rulesets load on top of earlier ones. Needed with --sheet.
    #[arg(long = "ruleset", value_name = "RULESET", requires = "sheet")]
    pub ruleset: Vec<PathBuf>,

    /// A sheet file: `{"steps": [...]}` with add_object, remove_object, set_input and the
    /// scenario steps (see docs/ruleset-format.md). Needs --ruleset.
    #[arg(long, value_name = "FILE", requires = "ruleset")]
    pub sheet: Option<PathBuf>,

    /// Print one JSON object per line instead of tables.
    #[arg(long)]
    pub json: bool,

    /// Print how a variable got its value: `Hands` for a global, `sword1.MyPlusValue` for a
    /// local. Repeatable.
    #[arg(long = "trace", value_name = "REF")]
    pub traces: Vec<String>,

    /// Explain the last change of a variable (with --sheet): the step that changed it, its value
    /// before and after, the variables the change went through, and how its trace differs.
    /// Repeatable.
    #[arg(long = "why", value_name = "REF", requires = "sheet")]
    pub why: Vec<String>,

    /// List the instances of a scope whose formula is true, read in each instance's scope after
    /// the steps: `'PC.CREATURE: Speed > 20'` (the scope, a colon, a BOOLEAN formula).
    /// Repeatable.
    #[arg(long = "select", value_name = "SCOPE: WHERE")]
    pub selects: Vec<String>,

    #[command(flatten)]
    pub graph: GraphArgs,
}

/// The dependency graphs `sheetd solve` draws after the steps.
#[derive(Debug, Clone, Args)]
pub struct GraphArgs {
    /// Draw the dependency graph around a variable after the steps: what it reads and what
    /// reads it, each node `ref = value`, an edge from a variable to one that reads it.
    /// Repeatable.
    #[arg(long = "graph", value_name = "REF")]
    pub graphs: Vec<String>,

    /// How --graph draws: `dot` (Graphviz: pipe into `dot -Tsvg`), `mermaid`, or `json`
    /// (with --json, always JSON: `{"graph": {"nodes", "edges"}}` lines).
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "dot")]
    pub graph_format: super::graph::Format,

    /// How many steps --graph follows each way.
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub graph_depth: usize,
}

impl GraphArgs {
    /// Prints each graph asked for; false if a variable is not on the sheet (said on stderr).
    pub fn print(&self, sheet: &Sheet, as_json: bool) -> bool {
        let mut ok = true;
        for r in &self.graphs {
            match super::graph::Graph::around(sheet, r, self.graph_depth) {
                Ok(g) if as_json => println!("{}", json!({ "graph": g.json() })),
                Ok(g) => print!("\n{}", g.render(self.graph_format)),
                Err(m) => {
                    eprintln!("error: --graph {r}: {m}");
                    ok = false;
                }
            }
        }
        ok
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default = "default_global")]
    pub global_scope: String,
    #[serde(default)]
    pub scopes: Vec<ScopeSpec>,
    #[serde(default)]
    pub defaults: BTreeMap<String, Json>,
    #[serde(default)]
    pub variables: Vec<VariableSpec>,
    #[serde(default)]
    pub functions: BTreeMap<String, String>,
    pub steps: Vec<Json>,
}

fn default_global() -> String {
    "PC".to_owned()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeSpec {
    pub name: String,
    pub parent: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariableSpec {
    pub name: String,
    #[serde(default = "default_global")]
    pub scope: String,
    pub format: String,
    #[serde(default)]
    pub locked: bool,
    /// The order its modifiers apply in: `inherent` (PCGen's, the default) or `applied`.
    #[serde(default)]
    pub order: Option<String>,
}

/// A problem with the scenario file itself (not one of its steps).
#[derive(Debug)]
pub struct LoadError(pub String);

/// Reads a scenario from JSON text; errors name the line and column.
pub fn parse_scenario(text: &str, name: &str) -> Result<Scenario, LoadError> {
    serde_json::from_str(text).map_err(|e| LoadError(format!("{name}:{}:{}: {e}", e.line(), e.column())))
}

/// Builds the rules a scenario declares.
pub fn build_rules(s: &Scenario) -> Result<Rules, LoadError> {
    let fail = |what: String, e: SolveError| LoadError(format!("{what}: {} [{}]", e.message, e.code));
    let mut b = RulesBuilder::new(&s.global_scope);
    // Scopes may be listed in any order: add those whose parent exists until none is left.
    let mut pending: Vec<&ScopeSpec> = s.scopes.iter().collect();
    while !pending.is_empty() {
        let before = pending.len();
        let mut later = Vec::new();
        for sc in pending {
            if b.scope(&sc.parent).is_ok() {
                b.add_scope(&sc.name, &sc.parent).map_err(|e| fail(format!("scope `{}`", sc.name), e))?;
            } else {
                later.push(sc);
            }
        }
        if later.len() == before {
            let sc = later[0];
            return Err(LoadError(format!("scope `{}`: its parent `{}` is not defined", sc.name, sc.parent)));
        }
        pending = later;
    }
    for (format_name, value) in &s.defaults {
        let format = b.formats().parse(format_name).map_err(|m| LoadError(format!("defaults: {m}")))?;
        let v = decode(&format, value).map_err(|m| LoadError(format!("default for {format_name}: {m}")))?;
        b.set_default(format, v).map_err(|e| fail(format!("default for {format_name}"), e))?;
    }
    for (name, body) in &s.functions {
        b.define_function(name, body).map_err(|e| fail(format!("function `{name}`"), e))?;
    }
    for v in &s.variables {
        let format =
            b.formats().parse(&v.format).map_err(|m| LoadError(format!("variable `{}`: {m}", v.name)))?;
        let id = b
            .declare(&v.name, &v.scope, format, v.locked)
            .map_err(|e| fail(format!("variable `{}`", v.name), e))?;
        if let Some(name) = &v.order {
            let order = solver::Order::named(name).ok_or_else(|| {
                LoadError(format!(
                    "variable `{}`: unknown order `{name}` (expected inherent or applied)",
                    v.name
                ))
            })?;
            b.set_order(id, order).map_err(|e| fail(format!("variable `{}`", v.name), e))?;
        }
    }
    Ok(b.build())
}

/// What an accepted step did, named when it was applied (later steps may remove what it
/// changed).
pub struct Stepped {
    pub changed: Vec<Change>,
    pub recomputed: usize,
    /// What the step's clock moves expired (sheets only).
    pub expired: Vec<data::Expired>,
    /// The rules the step fired (sheets with a ruleset's events only).
    pub fired: Vec<events::Fired>,
    /// The question the step ended on.
    pub pending: Option<events::Pending>,
    /// Why the step's cascade stopped early.
    pub stopped: Option<events::GameError>,
    /// A dialect's question answered (`evaluate`, `render_text`).
    pub value: Option<Slot>,
}

impl Stepped {
    /// `report`, named against `sheet` right after the step.
    pub fn of(report: &Report, sheet: &Sheet) -> Stepped {
        Stepped {
            changed: report.named(sheet),
            recomputed: report.recomputed,
            expired: Vec::new(),
            fired: Vec::new(),
            pending: None,
            stopped: None,
            value: None,
        }
    }

    /// A game step's report.
    pub fn of_game(r: events::StepReport) -> Stepped {
        Stepped {
            changed: r.changed,
            recomputed: r.recomputed,
            expired: r.expired,
            fired: r.fired,
            pending: r.pending,
            stopped: r.stopped,
            value: None,
        }
    }
}

/// Applies one step (as JSON) to a sheet.
pub fn apply_step(sheet: &mut Sheet, step: &Json) -> Result<Stepped, Rejection> {
    let ops = steps::solver_ops(step)?;
    let report = sheet.apply(&ops).map_err(|e| match steps::is_batch(step) {
        true => Rejection::InBatch(e.index, Box::new(Rejection::Solve(e.error))),
        false => Rejection::Solve(e.error),
    })?;
    Ok(Stepped::of(&report, sheet))
}

/// Which keys a step's JSON line has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keys {
    /// `step`, `changed`, `recomputed`, and `expired`, `fired`, `pending` when there are any; or
    /// `step` and `error`.
    Present,
    /// Every key on every line — `step`, `changed`, `expired`, `fired`, `pending`, `error` (and
    /// `recomputed`), empty or null where nothing is — as a dialect's game output promises.
    All,
}

/// The JSON line for a step's outcome (see [`Keys`]).
pub fn step_json(index: usize, result: &Result<Stepped, Rejection>) -> Json {
    step_json_with(index, result, Keys::Present)
}

/// The JSON line for a step's outcome, with the keys asked for.
pub fn step_json_with(index: usize, result: &Result<Stepped, Rejection>, keys: Keys) -> Json {
    let r = match (result, keys) {
        (Ok(r), _) => r,
        (Err(e), Keys::Present) => return json!({"step": index, "error": json::problem(&e.problem())}),
        (Err(e), Keys::All) => {
            return json!({"step": index, "changed": [], "expired": [], "fired": [], "pending": null,
                          "error": json::problem(&e.problem())});
        }
    };
    let mut j = json!({
        "step": index,
        "changed": r.changed.iter().map(|c| json!({
            "var": c.var.to_string(),
            "old": c.old.as_ref().map_or(Json::Null, json::slot),
            "new": c.new.as_ref().map_or(Json::Null, json::slot),
        })).collect::<Vec<_>>(),
        "recomputed": r.recomputed,
    });
    if !r.expired.is_empty() {
        j["expired"] = r
            .expired
            .iter()
            .map(|e| json!({"what": e.what.to_string(), "clock": &*e.clock, "after": e.after.to_string(), "now": e.now.to_string()}))
            .collect();
    }
    if !r.fired.is_empty() {
        j["fired"] = r.fired.iter().map(json::fired).collect();
    }
    if let Some(p) = &r.pending {
        j["pending"] = json::pending(p);
    }
    if let Some(v) = &r.value {
        j["value"] = json::slot(v);
    }
    if keys == Keys::All {
        for k in ["expired", "fired"] {
            if j.get(k).is_none() {
                j[k] = json!([]);
            }
        }
        if j.get("pending").is_none() {
            j["pending"] = Json::Null;
        }
        j["error"] = Json::Null;
    }
    if let Some(e) = &r.stopped {
        j["stopped"] = json!({"code": e.code.as_str(), "message": e.message, "chain": e.chain.iter().map(|c| &**c).collect::<Vec<_>>()});
    }
    j
}

/// A value for people, by the one text rendering ([`data::record::Value`]).
fn show(slot: &Option<Slot>) -> String {
    slot.as_ref().map_or("(none)".to_owned(), |s| data::record::Value::untyped(s).to_string())
}

fn show_value(v: &Value) -> String {
    show(&Some(Ok(v.clone())))
}

/// Prints a sheet's results: per-step outcomes, final values and traces, as JSON lines or tables.
/// Returns false when a trace was asked for a variable that does not exist.
pub fn print_results(
    sheet: &Sheet,
    outcomes: &[(String, Result<Stepped, Rejection>)],
    traces: &[String],
    selects: &[String],
    as_json: bool,
) -> bool {
    print_results_with(sheet, outcomes, traces, selects, as_json, Keys::Present)
}

/// [`print_results`], with the keys of the JSON step lines asked for.
pub fn print_results_with(
    sheet: &Sheet,
    outcomes: &[(String, Result<Stepped, Rejection>)],
    traces: &[String],
    selects: &[String],
    as_json: bool,
    keys: Keys,
) -> bool {
    if as_json {
        return print_json(sheet, outcomes, traces, keys) & print_selects(sheet, selects, true);
    }
    for (i, (what, r)) in outcomes.iter().enumerate() {
        match r {
            Ok(rep) => {
                println!("step {i}: {what} ({} recomputed)", rep.recomputed);
                for c in &rep.changed {
                    println!("    {:<30} {} → {}", c.var.to_string(), show(&c.old), show(&c.new));
                }
                for e in &rep.expired {
                    println!("    expired: {e}");
                }
                for f in &rep.fired {
                    println!("    fired: {f}");
                }
                if let Some(p) = &rep.pending {
                    println!("    pending: {p}");
                }
                if let Some(e) = &rep.stopped {
                    println!("    stopped [{}]: {}", e.code, e.message);
                }
                if let Some(v) = &rep.value {
                    println!("    value: {}", show(&Some(v.clone())));
                }
            }
            Err(e) => println!("step {i}: {what}\n    rejected [{}]: {}", e.code(), e.message()),
        }
    }
    println!("\nvalues:");
    for (r, v) in sheet.values() {
        println!("    {:<30} {}", r.to_string(), show(&Some(v)));
    }
    let mut ok = true;
    for t in traces {
        match sheet.trace(t) {
            Ok(tr) => print_trace(&tr),
            Err(e) => {
                ok = false;
                eprintln!("error: --trace {t}: {}", e.message);
            }
        }
    }
    ok & print_selects(sheet, selects, false)
}

/// Answers each `--select 'SCOPE: WHERE'`: the keys of the instances of SCOPE whose WHERE is
/// true. `false` when one cannot be answered (reported).
fn print_selects(sheet: &Sheet, selects: &[String], as_json: bool) -> bool {
    let mut ok = true;
    for s in selects {
        let Some((scope, where_)) = s.split_once(':') else {
            ok = false;
            eprintln!(
                "error: --select {s}: write the scope, a colon, then a BOOLEAN formula ('PC.CREATURE: Speed > 20')"
            );
            continue;
        };
        let (scope, where_) = (scope.trim(), where_.trim());
        match (sheet.select(scope, where_), as_json) {
            (Ok(ids), true) => {
                let ids: Vec<&str> = ids.iter().map(|i| &**i).collect();
                println!("{}", json!({"select": {"scope": scope, "where": where_, "ids": ids}}));
            }
            (Ok(ids), false) => {
                let ids: Vec<&str> = ids.iter().map(|i| &**i).collect();
                println!(
                    "
select {scope} where {where_}: {}",
                    if ids.is_empty() { "(none)".to_owned() } else { ids.join(", ") }
                );
            }
            (Err(e), true) => {
                ok = false;
                let problem = json::problem(&Problem::of_solve_error(&e));
                println!("{}", json!({"select": {"scope": scope, "where": where_, "error": problem}}));
            }
            (Err(e), false) => {
                ok = false;
                eprintln!("error: --select {s}: {} [{}]", e.message, e.code);
            }
        }
    }
    ok
}

fn print_json(
    sheet: &Sheet,
    outcomes: &[(String, Result<Stepped, Rejection>)],
    traces: &[String],
    keys: Keys,
) -> bool {
    for (i, (_, r)) in outcomes.iter().enumerate() {
        println!("{}", step_json_with(i, r, keys));
    }
    let values: Map<String, Json> =
        sheet.values().iter().map(|(r, v)| (r.to_string(), json::slot(v))).collect();
    println!("{}", json!({"values": values}));
    let mut ok = true;
    for t in traces {
        match sheet.trace(t) {
            Ok(tr) => println!("{}", json::trace(&tr)),
            Err(e) => {
                ok = false;
                println!(
                    "{}",
                    json!({"trace": {"ref": t, "error": json::problem(&Problem::of_solve_error(&e))}})
                );
            }
        }
    }
    ok
}

fn print_trace(tr: &Trace) {
    match tr.order {
        solver::Order::Inherent => println!("\ntrace of {} ({}):", tr.var, tr.format),
        // The steps' inherent priorities do not order them: say so.
        solver::Order::Applied => {
            println!("\ntrace of {} ({}, modifiers in applied order):", tr.var, tr.format)
        }
    }
    println!("    {:<44} {}", format!("default value for {}", tr.format), show_value(&tr.default));
    for s in &tr.steps {
        let cond = match s.condition {
            Some(false) => " [condition false: skipped]".to_owned(),
            Some(true) => " [condition true]".to_owned(),
            None => String::new(),
        };
        let reads: Vec<String> = s.reads.iter().map(|(r, v)| format!("{r}={}", show(v))).collect();
        let reads = if reads.is_empty() { String::new() } else { format!(" reading {}", reads.join(", ")) };
        println!(
            "    {:<44} {}{cond}{reads}",
            format!(
                "{} {} (priority {}/{}, {})",
                s.kind, s.instruction, s.priority, s.inherent_priority, s.source
            ),
            s.after.as_ref().map_or("-".to_owned(), |a| show(&Some(a.clone())))
        );
    }
    println!("    {:<44} {}", "value", show(&Some(tr.value.clone())));
}

/// Runs `sheetd solve`.
pub fn run(args: SolveArgs) -> ExitCode {
    match (&args.scenario, &args.sheet) {
        (Some(scenario), _) => run_scenario(scenario, &args),
        (None, Some(sheet)) => super::sheet::run(
            &args.ruleset,
            sheet,
            &args.traces,
            &args.selects,
            &args.why,
            &args.graph,
            args.json,
        ),
        // clap requires one of the two.
        (None, None) => ExitCode::from(2),
    }
}

fn run_scenario(path: &std::path::Path, args: &SolveArgs) -> ExitCode {
    let name = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot read {name}: {e}");
            return ExitCode::from(1);
        }
    };
    let scenario = match parse_scenario(&text, &name).and_then(|s| build_rules(&s).map(|r| (s, r))) {
        Ok(x) => x,
        Err(LoadError(m)) => {
            eprintln!("error: {m}");
            return ExitCode::from(1);
        }
    };
    let (scenario, rules) = scenario;
    let mut sheet = Sheet::new(Arc::new(rules));
    let outcomes: Vec<(String, Result<Stepped, Rejection>)> =
        scenario.steps.iter().map(|s| (steps::describe(s), apply_step(&mut sheet, s))).collect();
    let printed = print_results(&sheet, &outcomes, &args.traces, &args.selects, args.json);
    if printed & args.graph.print(&sheet, args.json) { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
