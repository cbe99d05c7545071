//! Conversions between the API's messages ([`crate::proto`]) and the library types: values,
//! changes, traces, operations, and errors as gRPC statuses with structured details.

use crate::proto as pb;
use data::{Diagnostic, SheetError, SheetOp};
use formula::{Format, Value, canonical_decimal, parse_decimal};
use prost::Message;
use solver::{Change, Instruction, ModifierSpec, Operation, Slot, SolveError, Trace, TraceStep, VarRef};
use std::sync::Arc;
use tonic::{Code, Status};

/// A value with its format as a message.
pub fn value(format: &Format, slot: &Slot) -> pb::Value {
    pb::Value { format: format.to_string(), kind: Some(kind(slot)) }
}

/// A value whose variable's format is not at hand: the format is read off the value (for values
/// read by formulas in traces).
pub fn untyped_value(slot: &Slot) -> pb::Value {
    let format = match slot {
        Ok(v) => format_of(v),
        Err(_) => String::new(),
    };
    pb::Value { format, kind: Some(kind(slot)) }
}

fn format_of(v: &Value) -> String {
    match v {
        Value::Number(_) => "NUMBER".to_owned(),
        Value::Boolean(_) => "BOOLEAN".to_owned(),
        Value::String(_) => "STRING".to_owned(),
        Value::Custom(c) => c.format.name().to_owned(),
        Value::Array(items) => match items.first() {
            Some(first) => format!("ARRAY[{}]", format_of(first)),
            None => "ARRAY".to_owned(),
        },
    }
}

fn kind(slot: &Slot) -> pb::value::Kind {
    use pb::value::Kind;
    match slot {
        Ok(Value::Number(d)) => Kind::Number(canonical_decimal(*d)),
        Ok(Value::Boolean(b)) => Kind::Boolean(*b),
        Ok(Value::String(s)) => Kind::Text(s.to_string()),
        Ok(Value::Custom(c)) => Kind::Text(c.data.literal()),
        Ok(Value::Array(items)) => {
            Kind::List(pb::ValueList { items: items.iter().map(|i| untyped_value(&Ok(i.clone()))).collect() })
        }
        Err(e) => Kind::Error(pb::ValueError {
            code: e.code.to_owned(),
            message: e.message.clone(),
            modifier: e.modifier.to_string(),
        }),
    }
}

/// A message value as an input value: numbers exactly, booleans, text (literals of data formats
/// are parsed by the channel's format).
pub fn input_value(v: &pb::Value) -> Result<Value, String> {
    use pb::value::Kind;
    match &v.kind {
        Some(Kind::Number(n)) => parse_decimal(n).map(Value::Number),
        Some(Kind::Boolean(b)) => Ok(Value::Boolean(*b)),
        Some(Kind::Text(t)) => Ok(Value::String(Arc::from(t.as_str()))),
        Some(Kind::List(_)) => Err("a list is not an input value".to_owned()),
        Some(Kind::Error(_)) => Err("an error is not an input value".to_owned()),
        None => Err("the value is missing".to_owned()),
    }
}

/// A library value as a message value for an input (the channel decides the format).
pub fn input_message(v: &Value) -> pb::Value {
    untyped_value(&Ok(v.clone()))
}

pub fn change(c: &Change) -> pb::Change {
    pb::Change {
        r#ref: c.var.to_string(),
        old: c.old.as_ref().map(|s| value(&c.format, s)),
        new: c.new.as_ref().map(|s| value(&c.format, s)),
    }
}

pub fn variable(var: &VarRef, format: &Format, slot: &Slot) -> pb::VariableValue {
    pb::VariableValue { r#ref: var.to_string(), value: Some(value(format, slot)) }
}

pub fn trace(t: &Trace) -> pb::Trace {
    pb::Trace {
        r#ref: t.var.to_string(),
        format: t.format.to_string(),
        default: Some(value(&t.format, &Ok(t.default.clone()))),
        steps: t.steps.iter().map(|s| trace_step(&t.format, s)).collect(),
        value: Some(value(&t.format, &t.value)),
    }
}

fn trace_step(format: &Format, s: &TraceStep) -> pb::TraceStep {
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
            .map(|(r, v)| pb::VariableValue { r#ref: r.to_string(), value: v.as_ref().map(untyped_value) })
            .collect(),
        after: s.after.as_ref().map(|a| value(format, a)),
    }
}

/// Size limits on operations, checked before anything is applied.
#[derive(Clone, Copy, Debug)]
pub struct OpLimits {
    pub max_operations: usize,
    pub formula: formula::Limits,
}

/// Converts a batch of operations, checking limits; an error names the offending operation.
pub fn operations(ops: &[pb::Operation], limits: &OpLimits) -> Result<Vec<SheetOp>, Status> {
    if ops.len() > limits.max_operations {
        return Err(Status::invalid_argument(format!(
            "the batch has {} operations; the limit is {} (--max-operations)",
            ops.len(),
            limits.max_operations
        )));
    }
    ops.iter()
        .enumerate()
        .map(|(i, op)| operation(op, &limits.formula).map_err(|d| invalid(vec![with_index(*d, i)])))
        .collect()
}

fn with_index(mut d: pb::Diagnostic, i: usize) -> pb::Diagnostic {
    d.operation = Some(u32::try_from(i).unwrap_or(u32::MAX));
    d
}

fn request_error(code: &str, message: String) -> pb::Diagnostic {
    pb::Diagnostic { code: code.to_owned(), message, ..Default::default() }
}

/// Checks a formula against the size limits: its length, and (when it parses) its nesting.
/// Other formula errors are left to the solver, which reports them with more context.
fn check_formula(text: &str, limits: &formula::Limits) -> Result<(), Box<pb::Diagnostic>> {
    let error = if text.len() > limits.max_len {
        Some(request_error(
            "request.formula_too_long",
            format!(
                "formula is {} bytes long; the limit is {} (--max-formula-length)",
                text.len(),
                limits.max_len
            ),
        ))
    } else {
        match formula::parse(text, limits) {
            Err(e) if e.code == formula::ErrorCode::TooComplex => {
                let mut d = request_error("request.formula_too_deep", e.message.clone());
                d.formula = text.to_owned();
                d.span = Some(pb::Span { start: e.span.start, end: e.span.end });
                Some(d)
            }
            _ => None,
        }
    };
    error.map_or(Ok(()), |d| Err(Box::new(d)))
}

/// One operation message as a sheet operation.
pub fn operation(op: &pb::Operation, limits: &formula::Limits) -> Result<SheetOp, Box<pb::Diagnostic>> {
    use pb::operation::Op;
    let missing =
        || Box::new(request_error("request.missing_operation", "the operation is empty".to_owned()));
    Ok(match op.op.as_ref().ok_or_else(missing)? {
        Op::AddObject(o) => SheetOp::AddObject {
            kind: o.kind.clone(),
            key: o.key.clone(),
            id: o.id.clone(),
            parent: o.parent.clone(),
        },
        Op::RemoveObject(id) => SheetOp::RemoveObject(id.clone()),
        Op::SetInput(i) => SheetOp::SetInput {
            channel: i.channel.clone(),
            on: i.on.clone(),
            value: i
                .value
                .as_ref()
                .ok_or_else(|| "the value is missing".to_owned())
                .and_then(input_value)
                .map_err(|m| {
                    Box::new(request_error("request.bad_value", format!("set_input `{}`: {m}", i.channel)))
                })?,
        },
        Op::AddModifier(m) => {
            check_formula(&m.value, limits)?;
            if let Some(c) = &m.condition {
                check_formula(c, limits)?;
            }
            let source = if m.source.is_empty() { "request" } else { &m.source };
            let mut spec = ModifierSpec::new(&m.id, &m.var, &m.kind, &m.value, source).priority(m.priority);
            spec.on = m.on.as_deref().map(Arc::from);
            spec.from = m.from.as_deref().map(Arc::from);
            spec.condition = m.condition.as_deref().map(Instruction::from);
            SheetOp::Solver(Operation::AddModifier(spec))
        }
        Op::RemoveModifier(id) => SheetOp::Solver(Operation::RemoveModifier(id.clone())),
        Op::RemoveSource(s) => SheetOp::Solver(Operation::RemoveSource(s.clone())),
        Op::AddInstance(i) => SheetOp::Solver(Operation::AddInstance {
            key: i.key.clone(),
            scope: i.scope.clone(),
            parent: i.parent.clone(),
        }),
        Op::RemoveInstance(k) => SheetOp::Solver(Operation::RemoveInstance(k.clone())),
    })
}

/// A sheet operation as a message (the client's direction).
pub fn operation_message(op: &SheetOp) -> pb::Operation {
    use pb::operation::Op;
    let op = match op {
        SheetOp::AddObject { kind, key, id, parent } => Op::AddObject(pb::AddObject {
            kind: kind.clone(),
            key: key.clone(),
            id: id.clone(),
            parent: parent.clone(),
        }),
        SheetOp::RemoveObject(id) => Op::RemoveObject(id.clone()),
        SheetOp::SetInput { channel, on, value } => Op::SetInput(pb::SetInput {
            channel: channel.clone(),
            on: on.clone(),
            value: Some(input_message(value)),
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
        }),
        SheetOp::Solver(Operation::RemoveModifier(id)) => Op::RemoveModifier(id.clone()),
        SheetOp::Solver(Operation::RemoveSource(s)) => Op::RemoveSource(s.clone()),
        SheetOp::Solver(Operation::AddInstance { key, scope, parent }) => Op::AddInstance(pb::AddInstance {
            key: key.clone(),
            scope: scope.clone(),
            parent: parent.clone(),
        }),
        SheetOp::Solver(Operation::RemoveInstance(k)) => Op::RemoveInstance(k.clone()),
    };
    pb::Operation { op: Some(op) }
}

/// A one-line description of an operation, for explanations.
pub fn describe(op: &pb::Operation) -> String {
    use pb::operation::Op;
    match &op.op {
        Some(Op::AddObject(o)) => {
            let id = o.id.as_deref().map(|i| format!(" as {i}")).unwrap_or_default();
            let parent = o.parent.as_deref().map(|p| format!(" on {p}")).unwrap_or_default();
            format!("add {} `{}`{id}{parent}", o.kind, o.key)
        }
        Some(Op::RemoveObject(id)) => format!("remove object {id}"),
        Some(Op::SetInput(i)) => {
            let on = i.on.as_deref().map(|o| format!("{o}.")).unwrap_or_default();
            let v = i.value.as_ref().map(show).unwrap_or_default();
            format!("set input {on}{} = {v}", i.channel)
        }
        Some(Op::AddModifier(m)) => {
            let on = m.on.as_deref().map(|o| format!("{o}.")).unwrap_or_default();
            format!("add modifier {}: {} {on}{} {}", m.id, m.kind, m.var, m.value)
        }
        Some(Op::RemoveModifier(id)) => format!("remove modifier {id}"),
        Some(Op::RemoveSource(s)) => format!("remove source {s}"),
        Some(Op::AddInstance(i)) => format!("add instance {} of {}", i.key, i.scope),
        Some(Op::RemoveInstance(k)) => format!("remove instance {k}"),
        None => "(empty operation)".to_owned(),
    }
}

/// A value for people: numbers and literals as written, strings quoted, errors as `error: ...`.
pub fn show(v: &pb::Value) -> String {
    use pb::value::Kind;
    match &v.kind {
        Some(Kind::Number(n)) => n.clone(),
        Some(Kind::Boolean(b)) => b.to_string(),
        Some(Kind::Text(t)) if v.format == "STRING" => format!("{t:?}"),
        Some(Kind::Text(t)) => t.clone(),
        Some(Kind::List(l)) => format!("[{}]", l.items.iter().map(show).collect::<Vec<_>>().join(", ")),
        Some(Kind::Error(e)) => format!("error: {}", e.message),
        None => "(none)".to_owned(),
    }
}

/// A ruleset diagnostic as a message.
pub fn diagnostic(d: &Diagnostic) -> pb::Diagnostic {
    pb::Diagnostic {
        code: d.code.to_owned(),
        message: d.message.clone(),
        location: d.at.as_ref().map(|o| pb::Location {
            file: o.file().to_owned(),
            line: o.line(),
            col: o.col(),
            line_text: o.line_text().to_owned(),
        }),
        help: d.help.clone().unwrap_or_default(),
        ..Default::default()
    }
}

/// A solver error as a message.
pub fn solve_diagnostic(e: &SolveError) -> pb::Diagnostic {
    let mut d = pb::Diagnostic {
        code: e.code.to_owned(),
        message: e.message.clone(),
        cycle: e.cycle.clone(),
        cycle_modifiers: e.cycle_modifiers.clone(),
        ..Default::default()
    };
    if let Some(f) = &e.formula {
        let (err, text) = &**f;
        d.formula = text.clone();
        d.span = Some(pb::Span { start: err.span.start, end: err.span.end });
        d.help = err.help.clone().unwrap_or_default();
        d.code = format!("{}:{}", e.code, err.code.as_str());
    }
    d
}

/// A rejected batch as a status: FAILED_PRECONDITION for a cycle (with its path), otherwise
/// INVALID_ARGUMENT; the details hold the diagnostic with the operation's index.
pub fn sheet_error(e: &SheetError) -> Status {
    let mut d = match &e.solve {
        Some(s) => solve_diagnostic(s),
        None => request_error(e.code, e.message.clone()),
    };
    d.operation = Some(u32::try_from(e.index).unwrap_or(u32::MAX));
    if d.cycle.is_empty() { invalid(vec![d]) } else { with_details(Code::FailedPrecondition, vec![d]) }
}

/// INVALID_ARGUMENT with diagnostics.
pub fn invalid(diagnostics: Vec<pb::Diagnostic>) -> Status {
    with_details(Code::InvalidArgument, diagnostics)
}

/// A status whose message summarizes the diagnostics and whose details carry them all.
pub fn with_details(code: Code, diagnostics: Vec<pb::Diagnostic>) -> Status {
    let message = diagnostics
        .iter()
        .map(|d| {
            let at = d.operation.map(|i| format!("operation {i}: ")).unwrap_or_default();
            let cycle = if d.cycle.is_empty() {
                String::new()
            } else {
                format!(" (cycle: {})", d.cycle.join(" → "))
            };
            format!("{at}{}: {}{cycle}", d.code, d.message)
        })
        .collect::<Vec<_>>()
        .join("; ");
    let details = pb::ErrorInfo { diagnostics }.encode_to_vec();
    Status::with_details(code, message, details.into())
}

/// The diagnostics in a status's details (empty when it has none).
pub fn status_diagnostics(status: &Status) -> Vec<pb::Diagnostic> {
    pb::ErrorInfo::decode(status.details()).map(|i| i.diagnostics).unwrap_or_default()
}

/// Status details (an encoded [`pb::ErrorInfo`]) cut down to fit
/// [`MAX_STATUS_DETAILS`](crate::server::policy::MAX_STATUS_DETAILS): each text clipped, a long
/// formula replaced by an excerpt around its span (`formula_offset` says where it starts, and
/// the span still counts from the whole formula's start), then diagnostics dropped from the end
/// until it fits. Details that are not an `ErrorInfo` are dropped.
pub fn shrink_details(details: &[u8]) -> Vec<u8> {
    use crate::server::policy::{MAX_STATUS_DETAILS, clip};
    let Ok(mut info) = pb::ErrorInfo::decode(details) else { return Vec::new() };
    const TEXT: usize = 256;
    const FORMULA: usize = 512;
    for d in &mut info.diagnostics {
        d.message = clip(&d.message, TEXT);
        d.help = clip(&d.help, TEXT);
        d.code = clip(&d.code, 64);
        if let Some(l) = &mut d.location {
            l.file = clip(&l.file, TEXT);
            l.line_text = clip(&l.line_text, TEXT);
        }
        if d.formula.len() > FORMULA {
            let (start, end) = d.span.map_or((0, 0), |s| (s.start as usize, s.end as usize));
            let mut from = start.saturating_sub(FORMULA / 4).min(d.formula.len());
            while !d.formula.is_char_boundary(from) {
                from -= 1;
            }
            let mut to = end.max(start).saturating_add(FORMULA / 4).min(from + FORMULA).min(d.formula.len());
            while !d.formula.is_char_boundary(to) {
                to -= 1;
            }
            d.formula = d.formula[from..to].to_owned();
            d.formula_offset = u32::try_from(from).unwrap_or(u32::MAX);
        }
        for c in d.cycle.iter_mut().chain(d.cycle_modifiers.iter_mut()) {
            *c = clip(c, 64);
        }
        d.cycle.truncate(32);
        d.cycle_modifiers.truncate(32);
    }
    while info.encoded_len() > MAX_STATUS_DETAILS && !info.diagnostics.is_empty() {
        info.diagnostics.pop();
    }
    info.encode_to_vec()
}
