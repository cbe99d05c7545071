//! One diagnosed problem, as every layer reports it: [`Problem`] (a stable code, a message, and
//! where: the operation and field, the file position, the formula span, the cycle), built from
//! the formula, solver and data layers' errors. The engine carries problems in its errors, the
//! wire edge sends them as details, the CLI renders them (`render.rs`) or writes them as JSON
//! (`json.rs`).

use data::{Diagnostic, SheetError};
use solver::SolveError;
use std::fmt;

/// The service's own stable codes: problems with a request (`request.*`), a batch line, and
/// the reasons of errors that carry no diagnosed problem (`sheet.not_found`, …). The layers
/// below have theirs: `formula::ErrorCode`, `solver::Code`, `data::SheetCode`, `data::DiagCode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// A formula longer than `--max-formula-length`.
    FormulaTooLong,
    /// A formula nested deeper than `--max-formula-depth`.
    FormulaTooDeep,
    /// An operation message with no operation in it.
    MissingOperation,
    /// An input value that is not a number, boolean or text.
    BadValue,
    /// An emit, choose or roll sent with other operations (each is a step of its own).
    StepNotAlone,
    /// A dialect's verb that is not one, or whose fields are wrong.
    BadVerb,
    /// A ruleset id that is not loaded (SolveBatch).
    UnknownRuleset,
    /// A message that is not valid protobuf for the method.
    Malformed,
    /// Any other invalid request.
    Invalid,
    /// A revision outside the sheet's history.
    RevisionOutOfRange,
    /// A line of `sheetd batch` input that is not a sheet specification.
    BadLine,
    SheetNotFound,
    RulesetNotFound,
    VariableNotFound,
    SheetAlreadyExists,
    RulesetAlreadyExists,
    /// The sheet is not at the expected revision.
    RevisionConflict,
    /// The ruleset is not at the expected version.
    VersionConflict,
    /// An Apply's `request_id` seen before with other operations.
    RequestIdReused,
    /// A reply that would pass the server's `max_reply_bytes`.
    ReplyTooLarge,
    /// The sheet's state refuses the request.
    FailedPrecondition,
    /// A server limit is reached.
    LimitReached,
    /// The store or the sheet's ruleset is not available.
    Unavailable,
    /// A stored record is damaged.
    Damaged,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::FormulaTooLong => "request.formula_too_long",
            Code::FormulaTooDeep => "request.formula_too_deep",
            Code::MissingOperation => "request.missing_operation",
            Code::BadValue => "request.bad_value",
            Code::StepNotAlone => "request.step_not_alone",
            Code::BadVerb => "request.bad_verb",
            Code::UnknownRuleset => "request.unknown_ruleset",
            Code::Malformed => "request.malformed",
            Code::Invalid => "request.invalid",
            Code::RevisionOutOfRange => "request.revision_out_of_range",
            Code::BadLine => "batch.bad_line",
            Code::SheetNotFound => "sheet.not_found",
            Code::RulesetNotFound => "ruleset.not_found",
            Code::VariableNotFound => "variable.not_found",
            Code::SheetAlreadyExists => "sheet.already_exists",
            Code::RulesetAlreadyExists => "ruleset.already_exists",
            Code::RevisionConflict => "sheet.revision_conflict",
            Code::VersionConflict => "ruleset.version_conflict",
            Code::RequestIdReused => "request.request_id_reused",
            Code::ReplyTooLarge => "request.reply_too_large",
            Code::FailedPrecondition => "sheet.failed_precondition",
            Code::LimitReached => "server.limit_reached",
            Code::Unavailable => "server.unavailable",
            Code::Damaged => "store.damaged",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A position in a ruleset file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub line_text: String,
    /// How many characters the offending text spans on the line.
    pub len: u32,
}

/// A formula and the problem in it: the byte span, and the formula error's stage and code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormulaSpan {
    pub text: String,
    pub start: u32,
    pub end: u32,
    /// `parse`, `semantics`, `evaluation`, … (formula's `Stage`).
    pub stage: &'static str,
    /// The formula's `ErrorCode` (`semantics.unknown_variable`).
    pub code: &'static str,
}

impl FormulaSpan {
    pub fn of(text: &str, e: &formula::FormulaError) -> FormulaSpan {
        FormulaSpan {
            text: text.to_owned(),
            start: e.span.start,
            end: e.span.end,
            stage: e.stage().as_str(),
            code: e.code.as_str(),
        }
    }
}

/// One diagnosed problem.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Problem {
    /// A stable code of the layer that found it: `data.*`, `sheet.*`, `solver.*`, `request.*`
    /// (the formula's own code is in `formula`).
    pub code: String,
    pub message: String,
    /// The offending operation's index in its batch.
    pub operation: Option<usize>,
    /// The offending field of the operation (`add_modifier.value`), when one is to blame.
    pub field: Option<&'static str>,
    pub location: Option<Box<Location>>,
    pub formula: Option<Box<FormulaSpan>>,
    pub help: Option<String>,
    /// For cycles: the variables around it (first repeated last) and the modifiers making it.
    pub cycle: Vec<String>,
    pub cycle_modifiers: Vec<String>,
}

impl Problem {
    pub fn new(code: &str, message: impl Into<String>) -> Problem {
        Problem { code: code.to_owned(), message: message.into(), ..Default::default() }
    }

    /// A problem with one of the service's own codes.
    pub fn of(code: Code, message: impl Into<String>) -> Problem {
        Problem::new(code.as_str(), message)
    }

    /// The code as the API reports it: the solver's formula errors carry the formula's code after
    /// a colon (`solver.formula:semantics.unknown_variable`).
    pub fn full_code(&self) -> String {
        match &self.formula {
            Some(f) if self.code == solver::codes::FORMULA.as_str() => format!("{}:{}", self.code, f.code),
            _ => self.code.clone(),
        }
    }

    pub fn at_operation(mut self, index: usize, field: Option<&'static str>) -> Problem {
        self.operation = Some(index);
        self.field = field.or(self.field);
        self
    }

    /// A ruleset diagnostic.
    pub fn of_diagnostic(d: &Diagnostic) -> Problem {
        Problem {
            code: d.code.as_str().to_owned(),
            message: d.message.clone(),
            location: d.at.as_ref().map(|o| {
                Box::new(Location {
                    file: o.file().to_owned(),
                    line: o.line(),
                    col: o.col(),
                    line_text: o.line_text().to_owned(),
                    len: u32::try_from(d.text.chars().count()).unwrap_or(u32::MAX),
                })
            }),
            help: d.help.clone(),
            ..Default::default()
        }
    }

    /// A solver error.
    pub fn of_solve_error(e: &SolveError) -> Problem {
        let mut p = Problem {
            code: e.code.as_str().to_owned(),
            message: e.message.clone(),
            cycle: e.cycle.clone(),
            cycle_modifiers: e.cycle_modifiers.clone(),
            ..Default::default()
        };
        if let Some(f) = &e.formula {
            let (err, text) = &**f;
            p.formula = Some(Box::new(FormulaSpan::of(text, err)));
            p.help = err.help.clone();
        }
        p
    }

    /// A rejected batch of `ops`: the solver's error when the solver rejected it, with the
    /// operation — and, for a formula, the field of that operation that holds it.
    pub fn of_sheet_error(e: &SheetError, ops: &[data::SheetOp]) -> Problem {
        let p = match &e.solve {
            Some(s) => Problem::of_solve_error(s),
            None => Problem::new(e.code.as_str(), e.message.clone()),
        };
        let field = p.formula.as_ref().and_then(|_| formula_field(ops.get(e.index)?));
        p.at_operation(e.index, field)
    }
}

impl Problem {
    /// A game step's error: the sheet's, as [`Problem::of_sheet_error`]; or the events layer's
    /// (a pending choice, a bad pick, a cascade that does not end: its chain is in the message).
    pub fn of_game_error(e: &events::GameError, ops: &[data::SheetOp]) -> Problem {
        match &e.sheet {
            Some(s) => Problem { message: e.message.clone(), ..Problem::of_sheet_error(s, ops) },
            None => Problem::new(e.code.as_str(), e.message.clone()),
        }
    }
}

/// The field of operation `op` that holds a formula: a guard's, an adjustment's, a modifier's
/// value (an object's formulas are the ruleset's, checked at load).
fn formula_field(op: &data::SheetOp) -> Option<&'static str> {
    use data::SheetOp;
    use solver::Operation;
    match op {
        SheetOp::Solver(Operation::Require(_)) => Some("require.formula"),
        SheetOp::Adjust { .. } => Some("adjust.by"),
        SheetOp::Solver(Operation::AddModifier(_)) => Some("add_modifier.value"),
        SheetOp::Lasting { op, .. } | SheetOp::Because { op, .. } => formula_field(op),
        _ => None,
    }
}

/// One line for several problems: `operation 1: sheet.unknown_object: …; …`.
pub fn summary(problems: &[Problem]) -> String {
    problems
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
        .join("; ")
}

/// An error with its causes: `transport error: tcp connect error: Connection refused (os error
/// 111)`, each cause once.
pub fn causes(e: &dyn std::error::Error) -> String {
    let mut said = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !said.contains(&text) {
            said.push_str(": ");
            said.push_str(&text);
        }
        next = cause.source();
    }
    said
}
