//! The one JSON step format: sheet files, scenarios, `sheetd client --step`, `sheetd batch`
//! lines, and the API's JSON mapping of `Operation` all write an operation the same way.
//!
//! A step is an object with one key, the operation, named as in `proto/sheetd/v1/sheetd.proto`
//! (`add_object`, or the protobuf JSON name `addObject`), whose fields are the message's fields:
//!
//! ```json
//! {"add_object": {"kind": "EQUIPMENT", "key": "Ring Hauberk", "id": "armor", "parent": null}}
//! {"remove_object": "armor"}
//! {"set_input": {"channel": "Rolled", "on": "STR", "value": 15}}
//! {"add_instance": {"key": "sword1", "scope": "PC.EQUIPMENT", "parent": null}}
//! {"add_modifier": {"id": "m1", "var": "AC", "kind": "ADD", "value": "2", "priority": 10,
//!                   "source": "spell", "condition": "Armored", "on": null, "from": null}}
//! {"remove_modifier": "m1"}   {"remove_source": "spell"}   {"remove_instance": "sword1"}
//! {"require": {"formula": "input(\"Gold\") >= 3", "message": "can pay 3 gold", "on": null}}
//! {"adjust": {"channel": "Gold", "on": null, "by": "2 * Workers"}}
//! {"tick": {"clock": "Turn", "on": null, "by": 1}}   {"set_clock": {"clock": "Turn", "to": 5}}
//! {"add_object": {"kind": "SPELL", "key": "Shield", "until": {"clock": "Turn", "after": "+1"}}}
//! {"batch": [{"require": {...}}, {"set_input": {...}}, {"add_object": {...}}]}
//! ```
//!
//! `require` is a guard: its batch fails, with nothing changed, unless the formula is true at
//! that point of the batch. `batch` makes several steps one atomic batch (a sheet file's or a
//! scenario's steps are otherwise each their own); an Apply request, a `sheetd client` call and
//! a `sheetd batch` line are one batch already, and take no `batch` step.
//!
//! A `set_input` value is a JSON number (read exactly), boolean or string, or the API's `Value`
//! (`{"number": "15"}`, `{"boolean": true}`, `{"text": "Left"}`). Earlier names are accepted
//! too: `type` for `add_modifier.kind`, `id` for `add_instance.key`.

use crate::problem::Problem;
use data::{SheetError, SheetOp};
use formula::Value;
use serde::Deserialize;
use serde_json::Value as Json;
use solver::{ModKind, ModifierSpec, Operation, SolveError, codes};
use std::sync::Arc;

/// One step, as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    #[serde(alias = "addObject")]
    AddObject(ObjectStep),
    #[serde(alias = "removeObject")]
    RemoveObject(String),
    #[serde(alias = "setInput")]
    SetInput(InputStep),
    #[serde(alias = "addInstance")]
    AddInstance(InstanceStep),
    #[serde(alias = "addModifier")]
    AddModifier(ModifierStep),
    #[serde(alias = "removeModifier")]
    RemoveModifier(String),
    #[serde(alias = "removeSource")]
    RemoveSource(String),
    #[serde(alias = "removeInstance")]
    RemoveInstance(String),
    Require(RequireStep),
    Adjust(AdjustStep),
    Tick(ClockStep),
    #[serde(alias = "setClock")]
    SetClock(ClockStep),
    /// Several steps as one atomic batch (sheet files and scenarios only).
    Batch(Vec<Json>),
    /// An event (a ruleset's `[events]`), firing its rules.
    Emit(EmitStep),
    /// The answer to a pending choice.
    Choose(ChooseStep),
    /// A die's value, answering a pending roll.
    Roll(RollStep),
}

/// `{"emit": {"event": "Hit", "args": {"amount": 6, "by": "melee"}}}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmitStep {
    pub event: String,
    #[serde(default)]
    pub args: serde_json::Map<String, Json>,
}

/// `{"choose": {"choice": 1, "picks": ["Healing Draught"]}}` (`[]` declines).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChooseStep {
    pub choice: u64,
    #[serde(default)]
    pub picks: Vec<String>,
}

/// `{"roll": {"die": "d6", "value": 4}}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RollStep {
    pub die: String,
    pub value: i64,
}

/// A clock's move: `tick` by `by` (default 1), `set_clock` to `to`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClockStep {
    pub clock: String,
    #[serde(default)]
    pub on: Option<String>,
    #[serde(default)]
    pub by: Option<Json>,
    #[serde(default)]
    pub to: Option<Json>,
}

/// How long an added object or modifier lasts: `{"clock": "Turn", "on": null, "after": "+1"}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UntilStep {
    pub clock: String,
    #[serde(default)]
    pub on: Option<String>,
    /// A number, or a string: `"3"`, `"+1"` (after the clock's value now).
    pub after: Json,
}

impl UntilStep {
    fn until(&self) -> Result<data::Until, String> {
        data::Until::parse(&self.clock, self.on.as_deref(), &text(&self.after)?)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdjustStep {
    pub channel: String,
    #[serde(default)]
    pub on: Option<String>,
    /// A formula, or a number (taken as its text).
    pub by: Json,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequireStep {
    pub formula: String,
    pub message: String,
    #[serde(default)]
    pub on: Option<String>,
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
    #[serde(default)]
    pub until: Option<UntilStep>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputStep {
    pub channel: String,
    #[serde(default)]
    pub on: Option<String>,
    pub value: Json,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceStep {
    #[serde(alias = "id")]
    pub key: String,
    pub scope: String,
    #[serde(default)]
    pub parent: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModifierStep {
    pub id: String,
    pub var: String,
    #[serde(default)]
    pub on: Option<String>,
    #[serde(default)]
    pub from: Option<String>,
    #[serde(alias = "type")]
    pub kind: String,
    pub value: Json,
    #[serde(default)]
    pub priority: Option<Json>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub condition: Option<String>,
    #[serde(default)]
    pub until: Option<UntilStep>,
}

/// A rejected step: the solver's error (scenario steps), or the sheet's (object steps).
#[derive(Debug)]
pub enum Rejection {
    Solve(SolveError),
    Sheet(SheetError),
    /// The events layer's (a pending choice, a bad pick, a cascade that does not end), or a
    /// sheet's error within an event step.
    Game(events::GameError),
    /// Operation `.0` of a `batch` step was rejected, and with it the whole batch.
    InBatch(usize, Box<Rejection>),
}

impl Rejection {
    /// The stable code: `solver.*` or `sheet.*`.
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::Solve(e) => e.code.as_str(),
            Rejection::Sheet(e) => e.code.as_str(),
            Rejection::Game(e) => e.code.as_str(),
            Rejection::InBatch(_, r) => r.code(),
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Rejection::Solve(e) => &e.message,
            Rejection::Sheet(e) => &e.message,
            Rejection::Game(e) => &e.message,
            Rejection::InBatch(_, r) => r.message(),
        }
    }

    /// The rejection as a diagnosed problem: a step applies alone (no operation index); an
    /// operation of a `batch` step is named by its index in the batch.
    pub fn problem(&self) -> Problem {
        match self {
            Rejection::InBatch(i, r) => {
                let mut p = r.problem();
                p.operation = Some(*i);
                p
            }
            Rejection::Solve(e) => Problem { field: None, ..Problem::of_solve_error(e) },
            Rejection::Sheet(e) => {
                Problem { operation: None, field: None, ..Problem::of_sheet_error(e, &[]) }
            }
            Rejection::Game(e) => Problem { operation: None, field: None, ..Problem::of_game_error(e, &[]) },
        }
    }
}

/// Whether a step's key names an object step (a sheet's, needing a ruleset).
fn is_object_step(step: &Json) -> bool {
    step.as_object().and_then(|o| o.keys().next()).is_some_and(|k| {
        matches!(
            k.as_str(),
            "add_object"
                | "remove_object"
                | "set_input"
                | "adjust"
                | "tick"
                | "set_clock"
                | "addObject"
                | "removeObject"
                | "setInput"
                | "setClock"
        )
    })
}

pub fn bad_object_step(message: String) -> Rejection {
    Rejection::Sheet(SheetError { index: 0, code: data::sheet_codes::BAD_STEP, message, solve: None })
}

fn bad_step(message: String) -> SolveError {
    SolveError::new(codes::BAD_STEP, message)
}

/// Every step's name, as files write them (the camelCase spellings are accepted too).
pub const STEP_NAMES: &[&str] = &[
    "add_object",
    "remove_object",
    "set_input",
    "add_instance",
    "add_modifier",
    "remove_modifier",
    "remove_source",
    "remove_instance",
    "require",
    "adjust",
    "tick",
    "set_clock",
    "batch",
    "emit",
    "choose",
    "roll",
];

/// For a step whose one key is no step's name: which it may have meant, and every name.
pub fn unknown_step(json: &Json) -> Option<String> {
    let key = json.as_object().filter(|o| o.len() == 1)?.keys().next()?;
    let snake: String = key
        .chars()
        .flat_map(|c| {
            let lower = c.to_ascii_lowercase();
            if c.is_ascii_uppercase() { vec!['_', lower] } else { vec![c] }
        })
        .collect();
    if STEP_NAMES.contains(&snake.as_str()) {
        return None;
    }
    let near = STEP_NAMES.iter().map(|n| (edit_distance(&snake, n), *n)).min().filter(|(d, _)| *d <= 3);
    let hint = near.map_or(String::new(), |(_, n)| format!(" (did you mean `{n}`?)"));
    Some(format!("unknown step `{key}`{hint}; the steps are {}", STEP_NAMES.join(", ")))
}

/// Levenshtein distance, for "did you mean" (names are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut last = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (last + usize::from(ca != *cb)).min(row[j] + 1).min(here + 1);
            last = here;
        }
    }
    row[b.len()]
}

/// A step of a sheet file (any operation) as a sheet operation.
pub fn sheet_op(json: &Json) -> Result<SheetOp, Rejection> {
    let object = is_object_step(json);
    if let Some(message) = unknown_step(json) {
        return Err(Rejection::Solve(bad_step(message)));
    }
    let step: Step = serde_json::from_value(json.clone()).map_err(|e| {
        let message = format!("invalid step: {e}");
        if object { bad_object_step(message) } else { Rejection::Solve(bad_step(message)) }
    })?;
    let lasting = |op: SheetOp, until: Option<&UntilStep>| -> Result<SheetOp, Rejection> {
        let Some(u) = until else { return Ok(op) };
        let until = u.until().map_err(bad_object_step)?;
        Ok(SheetOp::Lasting { op: Box::new(op), until })
    };
    Ok(match step {
        Step::AddObject(o) => {
            let until = o.until.as_ref();
            let add = SheetOp::AddObject {
                kind: o.kind.clone(),
                key: o.key.clone(),
                id: o.id.clone(),
                parent: o.parent.clone(),
            };
            lasting(add, until)?
        }
        Step::AddModifier(m) if m.until.is_some() => {
            let op = SheetOp::Solver(Operation::AddModifier(modifier_spec(&m).map_err(Rejection::Solve)?));
            lasting(op, m.until.as_ref())?
        }
        Step::Tick(c) => SheetOp::Tick {
            by: match &c.by {
                None | Some(Json::Null) => rust_decimal::Decimal::ONE,
                Some(by) => {
                    clock_value(by).map_err(|m| bad_object_step(format!("tick `{}`: {m}", c.clock)))?
                }
            },
            clock: c.clock,
            on: c.on,
        },
        Step::SetClock(c) => SheetOp::SetClock {
            to: match &c.to {
                Some(to) => {
                    clock_value(to).map_err(|m| bad_object_step(format!("set_clock `{}`: {m}", c.clock)))?
                }
                None => return Err(bad_object_step(format!("set_clock `{}`: `to` is missing", c.clock))),
            },
            clock: c.clock,
            on: c.on,
        },
        Step::RemoveObject(id) => SheetOp::RemoveObject(id),
        Step::Adjust(a) => SheetOp::Adjust {
            by: text(&a.by)
                .map_err(|m| bad_object_step(format!("adjust `{}`: {m}", a.channel)))?
                .as_str()
                .into(),
            channel: a.channel,
            on: a.on,
        },
        Step::SetInput(i) => SheetOp::SetInput {
            value: input_value(&i.value).map_err(|m| bad_object_step(format!("set_input: {m}")))?,
            channel: i.channel,
            on: i.on,
        },
        other => SheetOp::Solver(solver_step(other).map_err(Rejection::Solve)?),
    })
}

/// The steps a `batch` step holds (`None`: `json` is not a batch step).
fn batch_steps(json: &Json) -> Option<&Vec<Json>> {
    let o = json.as_object().filter(|o| o.len() == 1)?;
    o.get("batch")?.as_array()
}

/// A step of a sheet file as the sheet operations of one batch: a `batch` step's steps, or
/// the step alone.
pub fn sheet_ops(json: &Json) -> Result<Vec<SheetOp>, Rejection> {
    match batch_steps(json) {
        Some(steps) => steps
            .iter()
            .enumerate()
            .map(|(i, s)| sheet_op(s).map_err(|r| Rejection::InBatch(i, Box::new(r))))
            .collect(),
        None => Ok(vec![sheet_op(json)?]),
    }
}

/// A scenario step as the solver operations of one batch (see [`sheet_ops`]).
pub fn solver_ops(json: &Json) -> Result<Vec<Operation>, Rejection> {
    match batch_steps(json) {
        Some(steps) => steps
            .iter()
            .enumerate()
            .map(|(i, s)| solver_op(s).map_err(|e| Rejection::InBatch(i, Box::new(Rejection::Solve(e)))))
            .collect(),
        None => Ok(vec![solver_op(json).map_err(Rejection::Solve)?]),
    }
}

/// A sheet file's step as a game step: `emit`, `choose` and `roll` for the events layer, any
/// other as the sheet operations of one batch ([`sheet_ops`]).
pub fn game_step(json: &Json) -> Result<events::Step, Rejection> {
    if let Some(message) = unknown_step(json) {
        return Err(Rejection::Solve(bad_step(message)));
    }
    let key = json.as_object().filter(|o| o.len() == 1).and_then(|o| o.keys().next());
    if !matches!(key.map(String::as_str), Some("emit" | "choose" | "roll")) {
        return Ok(events::Step::Ops(sheet_ops(json)?));
    }
    let step: Step =
        serde_json::from_value(json.clone()).map_err(|e| bad_object_step(format!("invalid step: {e}")))?;
    Ok(match step {
        Step::Emit(e) => events::Step::Emit {
            args: e
                .args
                .iter()
                .map(|(k, v)| {
                    Ok((
                        k.clone(),
                        text(v).map_err(|m| {
                            bad_object_step(format!("emit `{}`: argument `{k}`: {m}", e.event))
                        })?,
                    ))
                })
                .collect::<Result<_, Rejection>>()?,
            event: e.event,
        },
        Step::Choose(c) => events::Step::Choose { choice: c.choice, picks: c.picks },
        Step::Roll(r) => events::Step::Roll { die: r.die, value: r.value },
        _ => unreachable!("the key was checked: emit, choose or roll"),
    })
}

/// Whether `json` is a `batch` step (its errors then name the operation within it).
pub fn is_batch(json: &Json) -> bool {
    batch_steps(json).is_some()
}

/// A scenario step (no game objects: instances and modifiers only) as a solver operation.
pub fn solver_op(json: &Json) -> Result<Operation, SolveError> {
    let step: Step =
        serde_json::from_value(json.clone()).map_err(|e| bad_step(format!("invalid step: {e}")))?;
    solver_step(step)
}

fn solver_step(step: Step) -> Result<Operation, SolveError> {
    Ok(match step {
        Step::AddInstance(i) => Operation::AddInstance { key: i.key, scope: i.scope, parent: i.parent },
        Step::AddModifier(m) if m.until.is_some() => {
            return Err(bad_step(format!(
                "modifier `{}`: `until` needs a ruleset's clock (`sheetd solve --ruleset … --sheet …`)",
                m.id
            )));
        }
        Step::AddModifier(m) => Operation::AddModifier(modifier_spec(&m)?),
        Step::RemoveModifier(id) => Operation::RemoveModifier(id),
        Step::RemoveSource(s) => Operation::RemoveSource(s),
        Step::RemoveInstance(id) => Operation::RemoveInstance(id),
        Step::Require(r) => {
            Operation::Require(solver::Guard { on: r.on, ..solver::Guard::new(&r.formula, &r.message) })
        }
        Step::AddObject(_)
        | Step::RemoveObject(_)
        | Step::SetInput(_)
        | Step::Adjust(_)
        | Step::Tick(_)
        | Step::SetClock(_) => {
            return Err(bad_step(
                "objects and inputs need a ruleset (`sheetd solve --ruleset … --sheet …`); a scenario takes \
                 add_instance, add_modifier, remove_modifier, remove_source, remove_instance, require and batch"
                    .to_owned(),
            ));
        }
        Step::Batch(_) => {
            return Err(bad_step(
                "a `batch` step is a sheet file's or a scenario's, and holds the other steps (not another batch)"
                    .to_owned(),
            ));
        }
        Step::Emit(_) | Step::Choose(_) | Step::Roll(_) => {
            return Err(bad_step(
                "emit, choose and roll are a game's steps: they need a ruleset's events (`sheetd solve --ruleset … --sheet …`), and are not part of a batch"
                    .to_owned(),
            ));
        }
    })
}

/// A modifier step as a spec; rejects a negative or non-integer priority and an unknown type.
fn modifier_spec(m: &ModifierStep) -> Result<ModifierSpec, SolveError> {
    let value = text(&m.value)
        .map_err(|msg| SolveError::new(codes::BAD_VALUE, format!("modifier `{}`: {msg}", m.id)))?;
    let priority = match &m.priority {
        None | Some(Json::Null) => 0,
        Some(Json::Number(n)) => n.as_u64().and_then(|p| u32::try_from(p).ok()).ok_or_else(|| {
            SolveError::new(
                codes::BAD_PRIORITY,
                format!("modifier `{}`: priority {n} must be a whole number from 0 to {}", m.id, u32::MAX),
            )
        })?,
        Some(other) => {
            return Err(SolveError::new(
                codes::BAD_PRIORITY,
                format!("modifier `{}`: priority {other} is not a number", m.id),
            ));
        }
    };
    let kind = ModKind::named(&m.kind)?;
    Ok(ModifierSpec::new(&m.id, &m.var, kind, &value, m.source.as_deref().unwrap_or(&m.id))
        .priority(priority)
        .placed(m.on.as_deref(), m.from.as_deref(), m.condition.as_deref()))
}

/// A clock's value: a number (read exactly), or its text.
fn clock_value(v: &Json) -> Result<rust_decimal::Decimal, String> {
    formula::parse_decimal(&text(v)?)
}

/// A modifier's value as text: a formula or a literal, given as a string, number or boolean.
fn text(value: &Json) -> Result<String, String> {
    match value {
        Json::String(s) => Ok(s.clone()),
        Json::Number(n) => Ok(n.to_string()),
        Json::Bool(b) => Ok(b.to_string()),
        other => Err(format!("`value` must be a string, number or boolean, not {other}")),
    }
}

/// A JSON value as a channel input: numbers exactly, booleans, strings (literals of data
/// formats), or the API's `Value` object.
fn input_value(v: &Json) -> Result<Value, String> {
    match v {
        Json::Number(_) => crate::json::decode(&formula::Format::Number, v),
        Json::Bool(b) => Ok(Value::Boolean(*b)),
        Json::String(s) => Ok(Value::String(Arc::from(s.as_str()))),
        Json::Object(o) => match (o.get("number"), o.get("boolean"), o.get("text")) {
            (Some(Json::String(n)), None, None) => formula::parse_decimal(n).map(Value::Number),
            (Some(n @ Json::Number(_)), None, None) => crate::json::decode(&formula::Format::Number, n),
            (None, Some(Json::Bool(b)), None) => Ok(Value::Boolean(*b)),
            (None, None, Some(Json::String(t))) => Ok(Value::String(Arc::from(t.as_str()))),
            _ => Err(format!("an input value object has one of `number`, `boolean`, `text`; got {v}")),
        },
        other => Err(format!("an input value is a number, boolean or string, not {other}")),
    }
}

/// A step for people: its kind and what it names (`add_object armor`, `set_input STR.Rolled`).
pub fn describe(step: &Json) -> String {
    if let Some(steps) = batch_steps(step) {
        return format!("batch [{}]", steps.iter().map(describe).collect::<Vec<_>>().join(", "));
    }
    match step.as_object().and_then(|o| o.iter().next()) {
        Some((kind, Json::Object(o))) if kind == "emit" => {
            format!("emit {}", o.get("event").and_then(Json::as_str).unwrap_or(""))
        }
        Some((kind, Json::Object(o))) if kind == "choose" => {
            format!("choose #{}", o.get("choice").map(Json::to_string).unwrap_or_default())
        }
        Some((kind, Json::Object(o))) if kind == "roll" => format!(
            "roll {} = {}",
            o.get("die").and_then(Json::as_str).unwrap_or(""),
            o.get("value").map(Json::to_string).unwrap_or_default()
        ),
        Some((kind, Json::Object(o))) if kind == "require" => {
            format!("require {}", o.get("message").and_then(Json::as_str).unwrap_or(""))
        }
        Some((kind, Json::Object(o))) if o.contains_key("clock") => {
            let on = o.get("on").and_then(Json::as_str).map(|o| format!("{o}.")).unwrap_or_default();
            format!("{kind} {on}{}", o.get("clock").and_then(Json::as_str).unwrap_or(""))
        }
        Some((kind, Json::String(id))) => format!("{kind} {id}"),
        Some((kind, Json::Object(o))) => {
            let id = ["id", "key"].iter().find_map(|k| o.get(*k).and_then(Json::as_str)).unwrap_or("");
            match (o.get("channel").and_then(Json::as_str), o.get("on").and_then(Json::as_str)) {
                (Some(c), Some(on)) => format!("{kind} {on}.{c}"),
                (Some(c), None) => format!("{kind} {c}"),
                _ => format!("{kind} {id}"),
            }
        }
        _ => "invalid step".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_misspelled_step_names_the_one_meant_and_lists_every_step() {
        let said =
            super::unknown_step(&serde_json::json!({"add_objekt": {"kind": "RACE"}})).expect("unknown");
        assert!(said.starts_with("unknown step `add_objekt` (did you mean `add_object`?); the steps are add_object, remove_object, set_input,"), "{said}");
        assert!(said.ends_with("emit, choose, roll"), "{said}");
        for known in [
            serde_json::json!({"add_object": {}}),
            serde_json::json!({"setInput": {}}),
            serde_json::json!({"roll": {}}),
        ] {
            assert_eq!(super::unknown_step(&known), None, "{known}");
        }
        let far = super::unknown_step(&serde_json::json!({"zzzzzzzzzz": 1})).expect("unknown");
        assert!(!far.contains("did you mean"), "{far}");
    }

    use super::*;
    use serde_json::json;

    /// The sheet-file spelling, the proto JSON mapping's spelling and the earlier names give the
    /// same operation.
    #[test]
    fn every_spelling_of_a_step_is_one_operation() {
        let same = |a: Json, b: Json| {
            let (a, b) = (sheet_op(&a).expect("a parses"), sheet_op(&b).expect("b parses"));
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
        };
        same(
            json!({"add_modifier": {"id": "m", "var": "AC", "kind": "ADD", "value": "2", "priority": 3}}),
            json!({"addModifier": {"id": "m", "var": "AC", "type": "ADD", "value": 2, "priority": 3}}),
        );
        same(
            json!({"add_instance": {"key": "s", "scope": "PC.EQUIPMENT"}}),
            json!({"addInstance": {"id": "s", "scope": "PC.EQUIPMENT", "parent": null}}),
        );
        same(
            json!({"set_input": {"channel": "Rolled", "on": "STR", "value": 15}}),
            json!({"setInput": {"channel": "Rolled", "on": "STR", "value": {"number": "15", "format": ""}}}),
        );
        same(json!({"remove_object": "armor"}), json!({"removeObject": "armor"}));
    }

    #[test]
    fn rejections_have_the_owning_layers_codes() {
        let code = |j: Json| sheet_op(&j).expect_err("rejected").code();
        assert_eq!(code(json!({"explode": 1})), "solver.bad_step");
        assert_eq!(code(json!({"set_input": {"channel": "x", "value": [1]}})), "sheet.bad_step");
        assert_eq!(
            code(
                json!({"add_modifier": {"id": "m", "var": "X", "kind": "SET", "value": "1", "priority": -1}})
            ),
            "solver.bad_priority"
        );
        assert_eq!(
            code(json!({"add_modifier": {"id": "m", "var": "X", "kind": "PLUS", "value": "1"}})),
            "solver.bad_modifier_type"
        );
        let e = solver_op(&json!({"add_object": {"kind": "RACE", "key": "x"}})).expect_err("needs a ruleset");
        assert_eq!(e.code, codes::BAD_STEP);
    }
}
