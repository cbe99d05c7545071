//! The error model on the wire: every [`EngineError`] becomes a gRPC status whose details
//! (`grpc-status-details-bin`) are a standard `google.rpc.Status` with the same code and
//! message, so every gRPC library's rich-error support reads it (tonic-types, Connect,
//! `grpc_status.rpc_status` in Python, …).
//!
//! The details, in order:
//! - `google.rpc.ErrorInfo`: `reason` (the stable sheetd code, e.g. `sheet.unknown_object`),
//!   `domain` `sheetd`, and `metadata` (the sheet, the revisions, the operation index);
//! - by kind: `google.rpc.BadRequest` field violations naming the operation and field
//!   (`operations[1].add_modifier.value`) for INVALID_ARGUMENT; `google.rpc.PreconditionFailure`
//!   for cycles (the path) and stale revisions; `google.rpc.ResourceInfo` for NOT_FOUND and
//!   ALREADY_EXISTS;
//! - `sheetd.v1.ErrorInfo`: sheetd's own diagnostics (spans, file positions, cycles), when any.
//!
//! A status never carries more than [`MAX_STATUS_MESSAGE`] bytes of message and
//! [`MAX_STATUS_DETAILS`] of details, so it fits the header limits of stock clients.

use super::convert;
use super::proto as pb;
use crate::engine::policy::{MAX_STATUS_DETAILS, MAX_STATUS_MESSAGE, clip};
use crate::engine::{EngineError, Problem, Resource};
use prost::Message;
use prost_types::Any;
use std::collections::HashMap;
use tonic::{Code, Status};
use tonic_types::pb as rpc;

/// The code of a guard that did not hold (`solver.guard_failed`).
const GUARD_FAILED: &str = "solver.guard_failed";
/// The code of a stock adjusted past a bound it rejects (`solver.out_of_bounds`).
const OUT_OF_BOUNDS: &str = "solver.out_of_bounds";
/// The code of a clock moved backwards (`sheet.clock_backwards`).
const CLOCK_BACKWARDS: &str = "sheet.clock_backwards";

/// The `PreconditionFailure` violation type of a problem the sheet's state refuses, other
/// than a cycle: a guard, a stock's bound, a clock.
fn refusal(code: &str) -> Option<&'static str> {
    match code {
        GUARD_FAILED => Some("GUARD"),
        OUT_OF_BOUNDS => Some("BOUNDS"),
        CLOCK_BACKWARDS => Some("CLOCK"),
        _ => None,
    }
}

/// The `ErrorInfo.domain` of every sheetd error.
pub const DOMAIN: &str = "sheetd";

/// The type URL of sheetd's diagnostics detail.
pub const DIAGNOSTICS_TYPE_URL: &str = "type.googleapis.com/sheetd.v1.ErrorInfo";

fn any<M: Message>(type_name: &str, m: &M) -> Any {
    Any { type_url: format!("type.googleapis.com/{type_name}"), value: m.encode_to_vec() }
}

/// The status code of an engine error.
pub fn code(e: &EngineError) -> Code {
    match e {
        EngineError::NotFound { .. } => Code::NotFound,
        EngineError::AlreadyExists { .. } => Code::AlreadyExists,
        EngineError::Conflict { .. } => Code::Aborted,
        EngineError::OutOfRange(_) => Code::OutOfRange,
        EngineError::Invalid { .. } => Code::InvalidArgument,
        EngineError::Precondition { .. } => Code::FailedPrecondition,
        EngineError::Exhausted(_) => Code::ResourceExhausted,
        EngineError::Unavailable(_) => Code::Unavailable,
        EngineError::DataLoss(_) => Code::DataLoss,
    }
}

/// An engine error as a status with standard details.
pub fn status(e: &EngineError) -> Status {
    let code = code(e);
    let message = clip(&e.to_string(), MAX_STATUS_MESSAGE);
    let mut standard = vec![any("google.rpc.ErrorInfo", &error_info(e))];
    standard.extend(kind_detail(e));
    let mut diagnostics: Vec<pb::Diagnostic> = e.diagnosed().iter().map(convert::diagnostic).collect();
    for d in &mut diagnostics {
        shrink(d);
    }
    // Fit the limit: drop diagnostics from the end, then the standard details after ErrorInfo.
    loop {
        let details = rich_status(code, &message, &standard, &diagnostics);
        if details.len() <= MAX_STATUS_DETAILS {
            return Status::with_details(code, message, details.into());
        }
        if diagnostics.pop().is_none() && standard.len() > 1 {
            standard.truncate(standard.len() - 1);
        } else if diagnostics.is_empty() && standard.len() <= 1 {
            standard.clear();
        }
    }
}

fn rich_status(code: Code, message: &str, standard: &[Any], diagnostics: &[pb::Diagnostic]) -> Vec<u8> {
    let mut details = standard.to_vec();
    if !diagnostics.is_empty() {
        details.push(any("sheetd.v1.ErrorInfo", &pb::ErrorInfo { diagnostics: diagnostics.to_vec() }));
    }
    rpc::Status { code: code as i32, message: message.to_owned(), details }.encode_to_vec()
}

/// RESOURCE_EXHAUSTED for a reply of `size` bytes over the server's `limit`
/// (`request.reply_too_large`): ErrorInfo's metadata has both, and `narrow`, what the caller
/// can ask for instead.
pub fn reply_too_large(size: usize, limit: usize, narrow: &str) -> Status {
    let message = format!(
        "the reply would be {size} bytes, over the server's limit of {limit} (max_reply_bytes): {narrow}"
    );
    let metadata = HashMap::from([
        ("reply_bytes".to_owned(), size.to_string()),
        ("max_reply_bytes".to_owned(), limit.to_string()),
        ("narrow".to_owned(), narrow.to_owned()),
    ]);
    let reason = crate::problem::Code::ReplyTooLarge.as_str().to_owned();
    let info = rpc::ErrorInfo { reason, domain: DOMAIN.to_owned(), metadata };
    let details = rich_status(Code::ResourceExhausted, &message, &[any("google.rpc.ErrorInfo", &info)], &[]);
    Status::with_details(Code::ResourceExhausted, message, details.into())
}

/// A status made here (not by the engine) with the same standard details: ErrorInfo with a
/// reason.
pub fn plain(code: Code, reason: &str, message: impl Into<String>) -> Status {
    let message = clip(&message.into(), MAX_STATUS_MESSAGE);
    let info =
        rpc::ErrorInfo { reason: reason.to_owned(), domain: DOMAIN.to_owned(), metadata: HashMap::new() };
    let details = rich_status(code, &message, &[any("google.rpc.ErrorInfo", &info)], &[]);
    Status::with_details(code, message, details.into())
}

fn error_info(e: &EngineError) -> rpc::ErrorInfo {
    let mut metadata = HashMap::new();
    match e {
        EngineError::NotFound { what, name, .. } | EngineError::AlreadyExists { what, name, .. } => {
            metadata.insert(what.name().to_owned(), clip(name, 128));
        }
        EngineError::Conflict { what: Resource::Ruleset, name, expected, actual } => {
            metadata.insert("ruleset".to_owned(), name.clone());
            metadata.insert("expected_version".to_owned(), expected.to_string());
            metadata.insert("version".to_owned(), actual.to_string());
        }
        EngineError::Conflict { name, expected, actual, .. } => {
            metadata.insert("sheet".to_owned(), name.clone());
            metadata.insert("expected_revision".to_owned(), expected.to_string());
            metadata.insert("revision".to_owned(), actual.to_string());
        }
        _ => {}
    }
    if let Some(i) = e.diagnosed().first().and_then(|p| p.operation) {
        metadata.insert("operation".to_owned(), i.to_string());
    }
    rpc::ErrorInfo { reason: clip(&e.reason(), 64), domain: DOMAIN.to_owned(), metadata }
}

/// The standard detail for the kind of error, when there is one.
fn kind_detail(e: &EngineError) -> Option<Any> {
    match e {
        EngineError::NotFound { what, name, message }
        | EngineError::AlreadyExists { what, name, message } => {
            let info = rpc::ResourceInfo {
                resource_type: resource_type(*what).to_owned(),
                resource_name: clip(name, 128),
                owner: String::new(),
                description: clip(message, 256),
            };
            Some(any("google.rpc.ResourceInfo", &info))
        }
        EngineError::Conflict { what, name, expected, actual } => {
            let v = if *what == Resource::Ruleset {
                rpc::precondition_failure::Violation {
                    r#type: "VERSION".to_owned(),
                    subject: format!("rulesets/{name}"),
                    description: format!("the ruleset is at version {actual}, not the expected {expected}"),
                }
            } else {
                rpc::precondition_failure::Violation {
                    r#type: "REVISION".to_owned(),
                    subject: format!("sheets/{name}"),
                    description: format!("the sheet is at revision {actual}, not the expected {expected}"),
                }
            };
            Some(any("google.rpc.PreconditionFailure", &rpc::PreconditionFailure { violations: vec![v] }))
        }
        EngineError::Precondition { problems, .. }
            if problems.iter().any(|p| !p.cycle.is_empty() || refusal(&p.code).is_some()) =>
        {
            // A cycle (its path); a guard that did not hold, a stock past a bound or a clock
            // moved back (the operation).
            let violations = problems
                .iter()
                .filter_map(|p| {
                    let (kind, subject) = if !p.cycle.is_empty() {
                        ("CYCLE", p.cycle.join(" → "))
                    } else if let Some(kind) = refusal(&p.code) {
                        (kind, p.operation.map_or_else(String::new, |i| format!("operations[{i}]")))
                    } else {
                        return None;
                    };
                    Some(rpc::precondition_failure::Violation {
                        r#type: kind.to_owned(),
                        subject: clip(&subject, 512),
                        description: clip(&p.message, 256),
                    })
                })
                .collect();
            Some(any("google.rpc.PreconditionFailure", &rpc::PreconditionFailure { violations }))
        }
        EngineError::Invalid { problems, message } => {
            let field_violations = if problems.is_empty() {
                vec![violation(None, message, crate::problem::Code::Invalid.as_str())]
            } else {
                problems.iter().map(|p| violation(Some(p), &p.message, &p.full_code())).collect()
            };
            Some(any("google.rpc.BadRequest", &rpc::BadRequest { field_violations }))
        }
        _ => None,
    }
}

fn violation(p: Option<&Problem>, message: &str, code: &str) -> rpc::bad_request::FieldViolation {
    let field = match p {
        Some(Problem { operation: Some(i), field: Some(f), .. }) => format!("operations[{i}].{f}"),
        Some(Problem { operation: Some(i), .. }) => format!("operations[{i}]"),
        Some(Problem { location: Some(l), .. }) => format!("{}:{}:{}", l.file, l.line, l.col),
        _ => String::new(),
    };
    rpc::bad_request::FieldViolation {
        field: clip(&field, 256),
        description: clip(message, 256),
        reason: clip(code, 64),
        localized_message: None,
    }
}

fn resource_type(r: Resource) -> &'static str {
    match r {
        Resource::Sheet => "sheetd.v1.Sheet",
        Resource::Ruleset => "sheetd.v1.Ruleset",
        Resource::Variable => "sheetd.v1.Variable",
    }
}

/// A diagnostic cut down: each text clipped, a long formula replaced by an excerpt around its
/// span (`formula_offset` says where it starts; the span still counts from the whole formula's
/// start), long cycles cut.
fn shrink(d: &mut pb::Diagnostic) {
    const TEXT: usize = 256;
    const FORMULA: usize = 512;
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

/// A status from anywhere (tonic's own, a timeout) as it may leave the server: its message at
/// most [`MAX_STATUS_MESSAGE`] bytes, and details over the limit dropped.
pub fn clip_status(s: Status) -> Status {
    if s.message().len() <= MAX_STATUS_MESSAGE && s.details().len() <= MAX_STATUS_DETAILS {
        return s;
    }
    let message = clip(s.message(), MAX_STATUS_MESSAGE);
    let details = if s.details().len() <= MAX_STATUS_DETAILS { s.details().to_vec() } else { Vec::new() };
    Status::with_details(s.code(), message, details.into())
}

// ---------------------------------------------------------------------------------------------
// Reading statuses (clients)

/// The `google.rpc.Status` in a status's details, as any client decodes it.
pub fn rich(status: &Status) -> Option<rpc::Status> {
    rpc::Status::decode(status.details()).ok()
}

/// sheetd's diagnostics in a status's details (empty when it has none).
pub fn diagnostics(status: &Status) -> Vec<pb::Diagnostic> {
    let Some(rich) = rich(status) else { return Vec::new() };
    rich.details
        .iter()
        .filter(|a| a.type_url == DIAGNOSTICS_TYPE_URL)
        .filter_map(|a| pb::ErrorInfo::decode(a.value.as_slice()).ok())
        .flat_map(|i| i.diagnostics)
        .collect()
}

/// The `ErrorInfo.reason` of a status, when it has one.
pub fn reason(status: &Status) -> Option<String> {
    let rich = rich(status)?;
    let info = rich.details.iter().find(|a| a.type_url == "type.googleapis.com/google.rpc.ErrorInfo")?;
    rpc::ErrorInfo::decode(info.value.as_slice()).ok().map(|i| i.reason)
}
