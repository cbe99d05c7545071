//! Conversions between the API's messages ([`super::proto`]) and the engine's domain types,
//! once on the way in ([`step`], [`operations`]) and once on the way out (everything else).

use super::proto as pb;
use crate::engine::EngineError;
use crate::engine::{
    Applied, Event, EventKind, Explanation, Moved, Node, Problem, RequestKey, RulesetInfo, RulesetOutcome,
    SheetInfo,
};
use crate::problem::Code;
use data::SheetOp;
use data::history::{Because, Cause, DiffKind, StepDiff, Typed, WhyChanged};
use data::record::{self, Change, Kind, Variable};
use events::Step;
use formula::Value;
use solver::{ModKind, ModifierSpec, Operation, Trace, TraceStep};

// ---------------------------------------------------------------------------------------------
// In

/// A request's operations as a game step: one emit, choose or roll alone, or else a batch of
/// sheet operations ([`operations`]).
pub fn step(ops: Vec<pb::Operation>) -> Result<Step, EngineError> {
    use pb::operation::Op;
    let is_step =
        |o: &pb::Operation| matches!(o.op, Some(Op::Emit(_) | Op::Choose(_) | Op::Roll(_) | Op::Verb(_)));
    let Some(at) = ops.iter().position(is_step) else {
        return operations(ops).map(Step::Ops);
    };
    if ops.len() > 1 {
        let mut p = Problem::of(
            Code::StepNotAlone,
            format!(
                "an emit, choose or roll is a step of its own: send it as the only operation (this request has {})",
                ops.len()
            ),
        );
        p.operation = Some(at);
        return Err(EngineError::problems(vec![p]));
    }
    // Invariant: `ops` has one element, found above to be a step.
    Ok(match ops.into_iter().next().and_then(|o| o.op).expect("one step") {
        Op::Emit(e) => {
            Step::Emit { event: e.event, args: e.args.into_iter().map(|a| (a.name, a.value)).collect() }
        }
        Op::Choose(c) => Step::Choose { choice: c.choice, picks: c.picks },
        Op::Roll(r) => Step::Roll { die: r.die, value: r.value },
        Op::Verb(v) => verb(&v)?,
        _ => unreachable!("`is_step` matched one of the four"),
    })
}

/// A dialect's verb as the generic step it stands for.
fn verb(v: &pb::Verb) -> Result<Step, EngineError> {
    use dialects::creature::game;
    let bad =
        |m: String| EngineError::problems(vec![Problem::of(Code::BadVerb, m).at_operation(0, Some("verb"))]);
    let dialect = crate::dialect::dialect(&v.dialect).map_err(bad)?;
    let json: serde_json::Value =
        serde_json::from_str(&v.json).map_err(|e| bad(format!("verb: not JSON: {e}")))?;
    match crate::dialect::game_step(dialect, &json).map_err(bad)? {
        game::Step::Play(step) => Ok(step),
        game::Step::Generic(_) => Err(bad(format!(
            "`{}` is not a verb of the {dialect} dialect (verbs: setup, {})",
            v.json,
            crate::dialect::verbs(dialect).join(", ")
        ))),
        game::Step::Evaluate { .. } | game::Step::Read { .. } => Err(bad(
            "evaluate and render_text ask a question: read the variable with Values (a feature's text is `CREATURE.Feature_Name.TEXT`)".to_owned(),
        )),
    }
}

/// A batch of operation messages as sheet operations; an error names the offending operation
/// and field.
pub fn operations(ops: Vec<pb::Operation>) -> Result<Vec<SheetOp>, EngineError> {
    ops.into_iter()
        .enumerate()
        .map(|(i, op)| {
            operation(op).map_err(|p| {
                let field = p.field;
                EngineError::problems(vec![(*p).at_operation(i, field)])
            })
        })
        .collect()
}

/// One operation message as a sheet operation (its strings moved, not copied).
pub fn operation(op: pb::Operation) -> Result<SheetOp, Box<Problem>> {
    use pb::operation::Op;
    let missing = || Box::new(Problem::of(Code::MissingOperation, "the operation is empty"));
    Ok(match op.op.ok_or_else(missing)? {
        Op::Emit(_) | Op::Choose(_) | Op::Roll(_) | Op::Verb(_) => {
            return Err(Box::new(Problem::of(
                Code::StepNotAlone,
                "an emit, choose, roll or verb is a step of its own, not one of a batch's operations",
            )));
        }
        Op::AddObject(o) => {
            let add = SheetOp::AddObject { kind: o.kind, key: o.key, id: o.id, parent: o.parent };
            lasting(add, o.until, "add_object.until")?
        }
        Op::Tick(t) => SheetOp::Tick {
            by: if t.by.is_empty() { rust_decimal::Decimal::ONE } else { decimal(&t.by, "tick.by")? },
            clock: t.clock,
            on: t.on,
        },
        Op::SetClock(t) => {
            SheetOp::SetClock { to: decimal(&t.to, "set_clock.to")?, clock: t.clock, on: t.on }
        }
        Op::RemoveObject(id) => SheetOp::RemoveObject(id),
        Op::SetInput(i) => {
            let value = i
                .value
                .as_ref()
                .ok_or_else(|| "the value is missing".to_owned())
                .and_then(input_value)
                .map_err(|m| {
                    let mut p = Problem::of(Code::BadValue, format!("set_input `{}`: {m}", i.channel));
                    p.field = Some("set_input.value");
                    Box::new(p)
                })?;
            SheetOp::SetInput { channel: i.channel, on: i.on, value }
        }
        Op::AddModifier(m) => {
            let source = if m.source.is_empty() { "request" } else { &m.source };
            let kind = ModKind::named(&m.kind).map_err(|e| {
                let mut p = Problem::of_solve_error(&e);
                p.field = Some("add_modifier.kind");
                Box::new(p)
            })?;
            let spec = ModifierSpec::new(&m.id, &m.var, kind, &m.value, source).priority(m.priority).placed(
                m.on.as_deref(),
                m.from.as_deref(),
                m.condition.as_deref(),
            );
            lasting(SheetOp::Solver(Operation::AddModifier(spec)), m.until, "add_modifier.until")?
        }
        Op::RemoveModifier(id) => SheetOp::Solver(Operation::RemoveModifier(id)),
        Op::RemoveSource(s) => SheetOp::Solver(Operation::RemoveSource(s)),
        Op::AddInstance(i) => {
            SheetOp::Solver(Operation::AddInstance { key: i.key, scope: i.scope, parent: i.parent })
        }
        Op::RemoveInstance(k) => SheetOp::Solver(Operation::RemoveInstance(k)),
        Op::Adjust(a) => SheetOp::Adjust { channel: a.channel, on: a.on, by: a.by.as_str().into() },
        Op::Require(r) => SheetOp::Solver(Operation::Require(solver::Guard {
            on: r.on,
            ..solver::Guard::new(&r.formula, &r.message)
        })),
    })
}

/// `op`, lasting `until` when given (its problems at `field`).
fn lasting(op: SheetOp, until: Option<pb::Until>, field: &'static str) -> Result<SheetOp, Box<Problem>> {
    let Some(u) = until else { return Ok(op) };
    let until = data::Until::parse(&u.clock, u.on.as_deref(), &u.after).map_err(|m| {
        let mut p = Problem::of(Code::BadValue, m);
        p.field = Some(field);
        Box::new(p)
    })?;
    Ok(SheetOp::Lasting { op: Box::new(op), until })
}

/// A decimal field's text, or a problem at `field`.
fn decimal(text: &str, field: &'static str) -> Result<rust_decimal::Decimal, Box<Problem>> {
    formula::parse_decimal(text).map_err(|m| {
        let mut p = Problem::of(Code::BadValue, format!("{field}: {m}"));
        p.field = Some(field);
        Box::new(p)
    })
}

/// A message value as an input value (see [`record::Value::input`]), read where it is: no
/// record is made of it (its texts copied) only to be read and dropped.
fn input_value(v: &pb::Value) -> Result<Value, String> {
    use pb::value::Kind as K;
    use record::InputKind;
    let kind = match &v.kind {
        None => return Err("the value is missing".to_owned()),
        Some(K::Number(n)) => InputKind::Number(n),
        Some(K::Boolean(b)) => InputKind::Boolean(*b),
        Some(K::Text(t)) => InputKind::Text(t),
        Some(K::List(_)) => InputKind::List,
        Some(K::Error(_)) => InputKind::Error,
    };
    kind.input()
}

// ---------------------------------------------------------------------------------------------
// Out

/// A sheet operation as a message (the client's direction, and causes in replies).
pub fn operation_message(op: &SheetOp) -> pb::Operation {
    use pb::operation::Op;
    let op = match op {
        SheetOp::AddObject { kind, key, id, parent } => Op::AddObject(pb::AddObject {
            kind: kind.clone(),
            key: key.clone(),
            id: id.clone(),
            parent: parent.clone(),
            until: None,
        }),
        SheetOp::RemoveObject(id) => Op::RemoveObject(id.clone()),
        SheetOp::Tick { clock, on, by } => {
            Op::Tick(pb::Tick { clock: clock.clone(), on: on.clone(), by: by.to_string() })
        }
        SheetOp::SetClock { clock, on, to } => {
            Op::SetClock(pb::SetClock { clock: clock.clone(), on: on.clone(), to: to.to_string() })
        }
        SheetOp::Because { op, cause } => {
            let mut m = operation_message(op);
            m.cause = cause.to_string();
            return m;
        }
        SheetOp::Lasting { op, until } => {
            let mut m = operation_message(op);
            let u = pb::Until { clock: until.clock.clone(), on: until.on.clone(), after: until.after_text() };
            match &mut m.op {
                Some(Op::AddObject(o)) => o.until = Some(u),
                Some(Op::AddModifier(a)) => a.until = Some(u),
                // `Lasting` holds an add_object or an add_modifier (the sheet refuses others).
                _ => {}
            }
            return m;
        }
        SheetOp::SetInput { channel, on, value } => Op::SetInput(pb::SetInput {
            channel: channel.clone(),
            on: on.clone(),
            value: Some(self::value(&record::Value::untyped(&Ok(value.clone())))),
        }),
        SheetOp::Solver(Operation::AddModifier(m)) => Op::AddModifier(pb::AddModifier {
            id: m.id.to_string(),
            var: m.var.to_string(),
            on: m.on.as_deref().map(str::to_owned),
            from: m.from.as_deref().map(str::to_owned),
            kind: m.kind.to_string(),
            value: m.value.text().to_owned(),
            priority: m.priority,
            source: m.source.to_string(),
            condition: m.condition.as_ref().map(|c| c.text().to_owned()),
            until: None,
        }),
        SheetOp::Solver(Operation::RemoveModifier(id)) => Op::RemoveModifier(id.clone()),
        SheetOp::Solver(Operation::RemoveSource(s)) => Op::RemoveSource(s.clone()),
        SheetOp::Solver(Operation::AddInstance { key, scope, parent }) => Op::AddInstance(pb::AddInstance {
            key: key.clone(),
            scope: scope.clone(),
            parent: parent.clone(),
        }),
        SheetOp::Solver(Operation::RemoveInstance(k)) => Op::RemoveInstance(k.clone()),
        SheetOp::Adjust { channel, on, by } => {
            Op::Adjust(pb::Adjust { channel: channel.clone(), on: on.clone(), by: by.text().to_owned() })
        }
        // (Not a request's operation — the sheet refuses it — but the nearest one is a stock's.)
        SheetOp::Solver(Operation::Adjust(a)) => Op::Adjust(pb::Adjust {
            channel: a.var.to_string(),
            on: a.on.as_deref().map(str::to_owned),
            by: a.by.text().to_owned(),
        }),
        SheetOp::Solver(Operation::Require(g)) => Op::Require(pb::Require {
            formula: g.formula.text().to_owned(),
            message: g.message.clone(),
            on: g.on.clone(),
        }),
    };
    pb::Operation { op: Some(op), cause: String::new() }
}

/// A game step as the operation message that asks for it (the client's direction).
pub fn step_message(step: &Step) -> Vec<pb::Operation> {
    use pb::operation::Op;
    let op = match step {
        Step::Ops(ops) => return ops.iter().map(operation_message).collect(),
        Step::Emit { event, args } => Op::Emit(pb::Emit {
            event: event.clone(),
            args: args.iter().map(|(n, v)| pb::EventArg { name: n.clone(), value: v.clone() }).collect(),
        }),
        Step::Choose { choice, picks } => Op::Choose(pb::Choose { choice: *choice, picks: picks.clone() }),
        Step::Roll { die, value } => Op::Roll(pb::Roll { die: die.clone(), value: *value }),
    };
    vec![pb::Operation { op: Some(op), cause: String::new() }]
}

pub fn value(v: &record::Value) -> pb::Value {
    into_value(v.clone())
}

/// A message value as a recorded value (the client's direction: for showing it).
pub fn recorded(v: &pb::Value) -> record::Value {
    use pb::value::Kind as K;
    let kind = match &v.kind {
        Some(K::Number(n)) => Kind::Number(n.clone()),
        Some(K::Boolean(b)) => Kind::Boolean(*b),
        Some(K::Text(t)) => Kind::Text(t.clone()),
        Some(K::List(l)) => Kind::List(l.items.iter().map(recorded).collect()),
        Some(K::Error(e)) => {
            Kind::Error { code: e.code.clone(), message: e.message.clone(), modifier: e.modifier.clone() }
        }
        None => Kind::Text("(none)".to_owned()),
    };
    record::Value { format: v.format.clone(), kind }
}

/// A message value for people (see [`record::Value`]'s `Display`).
pub fn show(v: &pb::Value) -> String {
    recorded(v).to_string()
}

pub fn variable(v: &Variable) -> pb::VariableValue {
    pb::VariableValue { r#ref: v.var.clone(), value: Some(value(&v.value)) }
}

/// Values as messages, moved rather than copied: every string of a record becomes its
/// message's (a SolveBatch answers tens of thousands of sheets of them).
pub fn variables(v: Vec<Variable>) -> Vec<pb::VariableValue> {
    v.into_iter().map(|v| pb::VariableValue { r#ref: v.var, value: Some(into_value(v.value)) }).collect()
}

/// A value as a message, moving the record's strings.
fn into_value(v: record::Value) -> pb::Value {
    use pb::value::Kind as K;
    let kind = match v.kind {
        Kind::Number(n) => K::Number(n),
        Kind::Boolean(b) => K::Boolean(b),
        Kind::Text(t) => K::Text(t),
        Kind::List(items) => K::List(pb::ValueList { items: items.into_iter().map(into_value).collect() }),
        Kind::Error { code, message, modifier } => K::Error(pb::ValueError { code, message, modifier }),
    };
    pb::Value { format: v.format, kind: Some(kind) }
}

pub fn change(c: &Change) -> pb::Change {
    pb::Change { r#ref: c.var.clone(), old: c.old.as_ref().map(value), new: c.new.as_ref().map(value) }
}

fn changes(c: &[Change]) -> Vec<pb::Change> {
    c.iter().map(change).collect()
}

/// Changes as messages, moved rather than copied (an Apply's reply owns its changes).
fn into_changes(c: Vec<Change>) -> Vec<pb::Change> {
    c.into_iter()
        .map(|c| pb::Change { r#ref: c.var, old: c.old.map(into_value), new: c.new.map(into_value) })
        .collect()
}

fn typed(t: &Typed) -> pb::Value {
    into_value(record::Value::of(&t.format, &t.slot))
}

/// A trace with, for each step, when its effect expires (`expires`, one per step).
pub fn expiring_trace(t: &Trace, expires: &[String]) -> pb::Trace {
    let mut out = trace(t);
    for (step, when) in out.steps.iter_mut().zip(expires) {
        step.expires.clone_from(when);
    }
    out
}

pub fn trace(t: &Trace) -> pb::Trace {
    pb::Trace {
        r#ref: t.var.to_string(),
        format: t.format.to_string(),
        order: t.order.name().to_owned(),
        default: Some(into_value(record::Value::of(&t.format, &Ok(t.default.clone())))),
        steps: t.steps.iter().map(|s| trace_step(&t.format, s)).collect(),
        value: Some(into_value(record::Value::of(&t.format, &t.value))),
    }
}

fn trace_step(format: &formula::Format, s: &TraceStep) -> pb::TraceStep {
    pb::TraceStep {
        modifier: s.modifier.to_string(),
        kind: s.kind.name().to_owned(),
        instruction: s.instruction.to_string(),
        priority: s.priority,
        inherent_priority: u32::from(s.inherent_priority),
        source: s.source.to_string(),
        condition: s.condition,
        reads: s
            .reads
            .iter()
            .map(|(r, v)| pb::VariableValue {
                r#ref: r.to_string(),
                value: v.as_ref().map(|v| value(&record::Value::untyped(v))),
            })
            .collect(),
        after: s.after.as_ref().map(|a| into_value(record::Value::of(format, a))),
        expires: String::new(),
    }
}

/// A catalog page as a message.
pub fn catalog(c: crate::engine::catalog::Catalog) -> pb::ListCatalogResponse {
    pb::ListCatalogResponse {
        ruleset_version: c.ruleset_version,
        kinds: c
            .kinds
            .into_iter()
            .map(|k| pb::CatalogKind {
                name: k.name,
                presence: k.presence.to_owned(),
                attach: k.attach,
                parts: k.parts,
                objects: u32::try_from(k.objects).unwrap_or(u32::MAX),
            })
            .collect(),
        objects: c
            .objects
            .into_iter()
            .map(|o| pb::CatalogObject {
                kind: o.kind,
                key: o.key,
                display_name: o.name,
                category: o.category.unwrap_or_default(),
                modifies: o
                    .modifies
                    .into_iter()
                    .map(|(variable, r#type)| pb::CatalogModifier { variable, r#type })
                    .collect(),
                parts: o.parts,
                grants: o.grants,
                origin: o.origin,
            })
            .collect(),
        next_page_token: c.next_page_token,
        total_size: u32::try_from(c.total).unwrap_or(u32::MAX),
    }
}

pub fn sheet_info(s: SheetInfo) -> pb::SheetInfo {
    pb::SheetInfo {
        id: s.id,
        ruleset_id: s.ruleset_id,
        ruleset_version: s.ruleset_version,
        revision: s.revision,
        objects: s.objects,
        pending: s.pending.as_ref().map(pending),
        contents: s.contents.as_ref().map_or_else(Vec::new, |c| {
            c.objects
                .iter()
                .map(|o| pb::SheetObject {
                    id: o.id.to_string(),
                    kind: o.kind.to_string(),
                    key: o.key.to_string(),
                    parent: o.parent.as_deref().unwrap_or("").to_owned(),
                    listed: o.listed,
                    origin: o.at.to_string(),
                })
                .collect()
        }),
        channels: s.contents.as_ref().map_or_else(Vec::new, |c| {
            c.channels
                .iter()
                .map(|(r, kind, v)| {
                    let kind = match kind {
                        data::ChannelKind::Input => pb::sheet_channel::Kind::Input,
                        data::ChannelKind::Clock => pb::sheet_channel::Kind::Clock,
                        data::ChannelKind::Stock => pb::sheet_channel::Kind::Stock,
                    };
                    pb::SheetChannel { r#ref: r.clone(), kind: kind as i32, value: Some(value(v)) }
                })
                .collect()
        }),
    }
}

/// A pending question as a message.
pub fn pending(p: &events::Pending) -> pb::Pending {
    pb::Pending {
        choice: p.choice,
        rule: p.rule.to_string(),
        at: p.at.to_string(),
        prompt: p.prompt.to_string(),
        options: p.options.iter().map(|o| o.to_string()).collect(),
        pick: p.pick,
        at_least: p.at_least,
        decline: p.decline,
        die: p.die.as_deref().map(str::to_owned),
    }
}

/// A rule's firing as a message.
pub fn fired(f: &events::Fired) -> pb::Fired {
    pb::Fired {
        rule: f.rule.to_string(),
        at: f.at.to_string(),
        event: f.event.to_string(),
        this: f.this.as_deref().map(str::to_owned),
        error: f.error.as_ref().map(step_error),
    }
}

/// A firing's failure, or a stopped cascade, as a message.
pub fn step_error(e: &events::GameError) -> pb::StepError {
    pb::StepError {
        code: e.code.as_str().to_owned(),
        message: e.message.clone(),
        chain: e.chain.iter().map(|r| r.to_string()).collect(),
    }
}

pub fn ruleset_info(r: RulesetInfo) -> pb::RulesetInfo {
    let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
    let s = r.summary;
    pb::RulesetInfo {
        id: r.id,
        version: r.version,
        paths: r.paths,
        inline: r.inline,
        summary: Some(pb::RulesetSummary {
            files: n(s.files),
            scopes: n(s.scopes),
            formats: n(s.formats),
            variables: n(s.variables),
            channels: n(s.channels),
            functions: n(s.functions),
            kinds: n(s.kinds),
            objects: n(s.objects),
            modifiers: n(s.modifiers),
            skipped_tokens: n(s.skipped_tokens),
        }),
    }
}

pub fn ruleset_reply(o: RulesetOutcome) -> pb::LoadRulesetResponse {
    pb::LoadRulesetResponse {
        ok: o.ok,
        ruleset: Some(ruleset_info(o.info)),
        diagnostics: o.diagnostics.iter().map(diagnostic).collect(),
        warnings: o.warnings.iter().map(diagnostic).collect(),
    }
}

/// A reload's reply: a load's fields.
pub fn reload_reply(r: pb::LoadRulesetResponse) -> pb::ReloadRulesetResponse {
    pb::ReloadRulesetResponse {
        ok: r.ok,
        ruleset: r.ruleset,
        diagnostics: r.diagnostics,
        warnings: r.warnings,
    }
}

/// The longest `request_id` an Apply may carry.
pub const MAX_REQUEST_ID: usize = 64;

/// An Apply's retry identity: its request id (none when empty) and a fingerprint of its
/// operations as they came on the wire.
pub fn request_key(id: &str, ops: &[pb::Operation]) -> Result<Option<RequestKey>, EngineError> {
    if id.is_empty() {
        return Ok(None);
    }
    if id.chars().count() > MAX_REQUEST_ID || id.chars().any(char::is_control) {
        return Err(EngineError::invalid(format!(
            "`request_id` is at most {MAX_REQUEST_ID} characters without control characters"
        )));
    }
    let mut h = std::hash::DefaultHasher::new();
    for op in ops {
        std::hash::Hash::hash(&prost::Message::encode_to_vec(op), &mut h);
    }
    Ok(Some(RequestKey { id: id.to_owned(), fingerprint: std::hash::Hasher::finish(&h) }))
}

/// The reply, its changes encoded once from their records (see `grpc/apply_response.rs`).
pub fn applied(a: Applied) -> pb::ApplyResponse {
    let moved = a.moved.map(|m: Moved| pb::RulesetMove {
        from_version: m.from_version,
        to_version: m.to_version,
        changes: into_changes(m.changes),
    });
    let mut reply = pb::ApplyResponse::encoded(a.revision, &a.changes, a.recomputed as u64, moved);
    reply.expired = a.expired.iter().map(expired).collect();
    reply.fired = a.fired.iter().map(fired).collect();
    reply.pending = a.pending.as_ref().map(pending);
    reply.stopped = a.stopped.as_ref().map(step_error);
    reply
}

/// An expired effect as a message.
pub fn expired(e: &data::Expired) -> pb::Expired {
    pb::Expired {
        what: e.what.to_string(),
        clock: e.clock.to_string(),
        after: e.after.to_string(),
        now: e.now.to_string(),
    }
}

pub fn explanation(x: Explanation) -> pb::ExplainResponse {
    let nodes = |nodes: &[Node]| -> Vec<pb::DependencyNode> {
        nodes
            .iter()
            .map(|n| pb::DependencyNode {
                r#ref: n.var.to_string(),
                value: Some(value(&n.value)),
                reads: n.reads.iter().map(|r| r.to_string()).collect(),
            })
            .collect()
    };
    pb::ExplainResponse {
        revision: x.revision,
        trace: Some(expiring_trace(&x.trace, &x.expires)),
        nodes: nodes(&x.nodes),
        readers: nodes(&x.readers),
    }
}

pub fn why_changed(w: WhyChanged) -> pb::WhyChangedResponse {
    pb::WhyChangedResponse {
        from_revision: w.from,
        to_revision: w.to,
        from_value: w.from_value.as_ref().map(typed),
        to_value: w.to_value.as_ref().map(typed),
        from_trace: w.from_trace.as_ref().map(trace),
        to_trace: w.to_trace.as_ref().map(trace),
        causes: w.causes.iter().map(cause).collect(),
        diff: w.diff.iter().map(|d| step_diff(d, w.from_trace.as_ref(), w.to_trace.as_ref())).collect(),
    }
}

fn cause(c: &Cause) -> pb::Cause {
    let (operation_index, operation) = match &c.because {
        Because::Operation { index, operation } => {
            (u32::try_from(*index).unwrap_or(u32::MAX), Some(operation_message(operation)))
        }
        Because::Moved { .. } => (0, None),
    };
    pb::Cause {
        revision: c.revision,
        operation_index,
        operation,
        description: c.description.clone(),
        before: c.before.as_ref().map(typed),
        after: c.after.as_ref().map(typed),
        via: c.via.iter().map(|v| v.to_string()).collect(),
        paths: c.paths.iter().map(|p| pb::Path { vars: p.iter().map(|v| v.to_string()).collect() }).collect(),
    }
}

/// One step of the diff; each side's `after` value in its trace's format.
fn step_diff(d: &StepDiff, from: Option<&Trace>, to: Option<&Trace>) -> pb::StepDiff {
    use pb::step_diff::Kind as K;
    let kind = match d.kind {
        DiffKind::Unchanged => K::Unchanged,
        DiffKind::Added => K::Added,
        DiffKind::Removed => K::Removed,
        DiffKind::Changed => K::Changed,
    };
    let side =
        |s: &TraceStep, t: Option<&Trace>| trace_step(t.map_or(&formula::Format::Number, |t| &t.format), s);
    pb::StepDiff {
        kind: kind as i32,
        modifier: d.modifier.to_string(),
        from: d.from.as_ref().map(|s| side(s, from)),
        to: d.to.as_ref().map(|s| side(s, to)),
    }
}

pub fn event(e: &Event) -> pb::WatchResponse {
    use pb::watch_response::Event as E;
    let event = match &e.kind {
        EventKind::Changes(c) => E::Changes(pb::Changes { changes: changes(c) }),
        EventKind::Resync { reason, values } => {
            E::Resync(pb::Resync { reason: reason.clone(), values: variables(values.clone()) })
        }
        EventKind::Deleted => E::Deleted(pb::Deleted {}),
    };
    pb::WatchResponse { revision: e.revision, event: Some(event), continued: false }
}

/// A diagnostic message as a problem (the client's direction: for rendering it). A formula
/// excerpt is moved back to the offsets of its span.
pub fn problem(d: &pb::Diagnostic) -> Problem {
    let formula = d.span.filter(|_| !d.formula.is_empty()).map(|s| {
        let offset = d.formula_offset;
        Box::new(crate::problem::FormulaSpan {
            text: d.formula.clone(),
            start: s.start.saturating_sub(offset),
            end: s.end.saturating_sub(offset),
            stage: "",
            code: "",
        })
    });
    Problem {
        // The code as sent (a formula error's code already follows the solver's).
        code: d.code.clone(),
        message: d.message.clone(),
        operation: d.operation.map(|i| i as usize),
        field: None,
        location: d.location.as_ref().map(|l| {
            Box::new(crate::problem::Location {
                file: l.file.clone(),
                line: l.line,
                col: l.col,
                line_text: l.line_text.clone(),
                len: 1,
            })
        }),
        formula,
        help: (!d.help.is_empty()).then(|| d.help.clone()),
        cycle: d.cycle.clone(),
        cycle_modifiers: d.cycle_modifiers.clone(),
    }
}

/// A diagnosed problem as a message.
pub fn diagnostic(p: &Problem) -> pb::Diagnostic {
    pb::Diagnostic {
        code: p.full_code(),
        message: p.message.clone(),
        operation: p.operation.map(|i| u32::try_from(i).unwrap_or(u32::MAX)),
        location: p.location.as_ref().map(|l| pb::Location {
            file: l.file.clone(),
            line: l.line,
            col: l.col,
            line_text: l.line_text.clone(),
        }),
        formula: p.formula.as_ref().map(|f| f.text.clone()).unwrap_or_default(),
        span: p.formula.as_ref().map(|f| pb::Span { start: f.start, end: f.end }),
        formula_offset: 0,
        help: p.help.clone().unwrap_or_default(),
        cycle: p.cycle.clone(),
        cycle_modifiers: p.cycle_modifiers.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pb::value::Kind as K;

    fn set_input(kind: Option<K>) -> Result<SheetOp, Box<Problem>> {
        let value = pb::Value { format: "NUMBER".into(), kind };
        operation(pb::Operation {
            op: Some(pb::operation::Op::SetInput(pb::SetInput {
                channel: "Rolled".into(),
                on: Some("STR".into()),
                value: Some(value),
            })),
            ..Default::default()
        })
    }

    /// A set_input's value is read from its message as a record's would be: numbers exactly,
    /// booleans, text; a list, an error or no value is a problem naming the channel and field.
    #[test]
    fn input_values_read_from_their_messages() {
        let read = |kind| match set_input(Some(kind)) {
            Ok(SheetOp::SetInput { value, .. }) => Ok(value),
            Ok(other) => panic!("not a set_input: {other:?}"),
            Err(p) => Err((p.message, p.field)),
        };
        let exact: rust_decimal::Decimal = "15.250".parse().expect("decimal");
        assert_eq!(read(K::Number("15.250".into())), Ok(Value::Number(exact)));
        assert_eq!(read(K::Boolean(true)), Ok(Value::Boolean(true)));
        assert_eq!(read(K::Text("Left".into())), Ok(Value::String("Left".into())));
        let field = Some("set_input.value");
        assert_eq!(
            read(K::Number("1.2.3".into())).map_err(|(m, f)| (m.starts_with("set_input `Rolled`: "), f)),
            Err((true, field))
        );
        assert_eq!(
            read(K::List(pb::ValueList { items: vec![] })),
            Err(("set_input `Rolled`: a list is not an input value".into(), field))
        );
        let missing = set_input(None).map_err(|p| (p.message, p.field));
        assert_eq!(missing.map(drop), Err(("set_input `Rolled`: the value is missing".into(), field)));
    }
}
