//! How the engine says no: [`EngineError`], one variant per kind of answer a caller must tell
//! apart, carrying [`Problem`]s (`crate::problem`) when problems were diagnosed.
//!
//! The gRPC edge maps each variant to a status code and standard error details
//! (`grpc/status.rs`); the CLI renders problems with the one diagnostic renderer.

pub use crate::problem::{Code, FormulaSpan, Location, Problem, summary};
use crate::store::StoreError;
use data::{Diagnostic, SheetError};
use std::fmt;

/// What a request was about, for NOT_FOUND and ALREADY_EXISTS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Sheet,
    Ruleset,
    Variable,
}

impl Resource {
    pub fn name(self) -> &'static str {
        match self {
            Resource::Sheet => "sheet",
            Resource::Ruleset => "ruleset",
            Resource::Variable => "variable",
        }
    }
}

/// Why the engine refused or failed a request.
#[derive(Clone, Debug, PartialEq)]
pub enum EngineError {
    /// No such sheet, ruleset or variable; `message` says where it was looked for.
    NotFound { what: Resource, name: String, message: String },
    /// The id is taken.
    AlreadyExists { what: Resource, name: String, message: String },
    /// The sheet is not at the revision the request expected (`what` a sheet), or the ruleset
    /// not at the version (`what` a ruleset).
    Conflict { what: Resource, name: String, expected: u64, actual: u64 },
    /// A revision outside the sheet's history.
    OutOfRange(String),
    /// The request is wrong: each problem names what and where.
    Invalid { message: String, problems: Vec<Problem> },
    /// The request is well formed but the sheet's state refuses it (a cycle, a history that no
    /// longer replays): each problem names why.
    Precondition { message: String, problems: Vec<Problem> },
    /// A server limit is reached (`--max-sheets`).
    Exhausted(String),
    /// The store cannot be reached, or the sheet's ruleset is not loaded: try again later.
    Unavailable(String),
    /// A stored record is damaged.
    DataLoss(String),
}

impl EngineError {
    pub fn not_found(what: Resource, name: &str) -> EngineError {
        let message = format!("no {} `{name}`", what.name());
        EngineError::NotFound { what, name: name.to_owned(), message }
    }

    pub fn already_exists(what: Resource, name: &str, message: String) -> EngineError {
        EngineError::AlreadyExists { what, name: name.to_owned(), message }
    }

    /// INVALID_ARGUMENT with a message and no diagnosed problem.
    pub fn invalid(message: impl Into<String>) -> EngineError {
        EngineError::Invalid { message: message.into(), problems: Vec::new() }
    }

    /// INVALID_ARGUMENT (FAILED_PRECONDITION for a cycle, a failed guard, a stock past a bound or
    /// a clock moved back) for problems, with a message that
    /// sums them up.
    pub fn problems(problems: Vec<Problem>) -> EngineError {
        let message = summary(&problems);
        // A cycle, a guard that does not hold, a stock past a bound, a clock moved back: the
        // request is well formed, the sheet's state refuses it.
        let refused = [
            solver::codes::GUARD_FAILED.as_str(),
            solver::codes::OUT_OF_BOUNDS.as_str(),
            data::sheet_codes::CLOCK_BACKWARDS.as_str(),
        ];
        if problems.iter().any(|p| !p.cycle.is_empty() || refused.contains(&p.code.as_str())) {
            EngineError::Precondition { message, problems }
        } else {
            EngineError::Invalid { message, problems }
        }
    }

    /// A batch of `ops` rejected by the sheet.
    pub fn sheet(e: &SheetError, ops: &[data::SheetOp]) -> EngineError {
        EngineError::problems(vec![Problem::of_sheet_error(e, ops)])
    }

    /// A game step refused: the sheet's refusal as [`EngineError::sheet`]; a pending question,
    /// no such question, a cascade loop or a guard without a value are FAILED_PRECONDITION (the
    /// sheet's state refuses it); an unknown event, bad arguments, picks or roll are
    /// INVALID_ARGUMENT.
    pub fn game(e: &events::GameError, ops: &[data::SheetOp]) -> EngineError {
        use events::Code as G;
        let problems = vec![Problem::of_game_error(e, ops)];
        match e.code {
            G::Sheet(_) => EngineError::problems(problems),
            G::ChoicePending | G::NoChoice | G::CascadeLoop | G::Guard => {
                EngineError::Precondition { message: summary(&problems), problems }
            }
            G::BadPick | G::BadRoll | G::BadArgs | G::UnknownEvent => {
                EngineError::Invalid { message: summary(&problems), problems }
            }
        }
    }

    /// ABORTED: sheet `name` is at revision `actual`, not `expected`.
    pub fn revision_conflict(name: &str, expected: u64, actual: u64) -> EngineError {
        EngineError::Conflict { what: Resource::Sheet, name: name.to_owned(), expected, actual }
    }

    pub fn precondition(message: impl Into<String>) -> EngineError {
        EngineError::Precondition { message: message.into(), problems: Vec::new() }
    }

    /// The stable reason sent with the error (`ErrorInfo.reason`): the first problem's code, or
    /// one per variant.
    pub fn reason(&self) -> String {
        let first = |p: &[Problem], or: Code| p.first().map_or(or.as_str().to_owned(), Problem::full_code);
        let code = match self {
            EngineError::NotFound { what: Resource::Sheet, .. } => Code::SheetNotFound,
            EngineError::NotFound { what: Resource::Ruleset, .. } => Code::RulesetNotFound,
            EngineError::NotFound { what: Resource::Variable, .. } => Code::VariableNotFound,
            EngineError::AlreadyExists { what: Resource::Ruleset, .. } => Code::RulesetAlreadyExists,
            EngineError::AlreadyExists { .. } => Code::SheetAlreadyExists,
            EngineError::Conflict { what: Resource::Ruleset, .. } => Code::VersionConflict,
            EngineError::Conflict { .. } => Code::RevisionConflict,
            EngineError::OutOfRange(_) => Code::RevisionOutOfRange,
            EngineError::Invalid { problems, .. } => return first(problems, Code::Invalid),
            EngineError::Precondition { problems, .. } => return first(problems, Code::FailedPrecondition),
            EngineError::Exhausted(_) => Code::LimitReached,
            EngineError::Unavailable(_) => Code::Unavailable,
            EngineError::DataLoss(_) => Code::Damaged,
        };
        code.as_str().to_owned()
    }

    /// The problems diagnosed, if any.
    pub fn diagnosed(&self) -> &[Problem] {
        match self {
            EngineError::Invalid { problems, .. } | EngineError::Precondition { problems, .. } => problems,
            _ => &[],
        }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::NotFound { message, .. } | EngineError::AlreadyExists { message, .. } => {
                f.write_str(message)
            }
            EngineError::Conflict { what, name, expected, actual } => {
                let at = if *what == Resource::Ruleset { "version" } else { "revision" };
                write!(f, "{} `{name}` is at {at} {actual}, not the expected {expected}", what.name())
            }
            EngineError::Invalid { message, .. } | EngineError::Precondition { message, .. } => {
                f.write_str(message)
            }
            EngineError::OutOfRange(m)
            | EngineError::Exhausted(m)
            | EngineError::Unavailable(m)
            | EngineError::DataLoss(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for EngineError {}

impl From<StoreError> for EngineError {
    /// DATA_LOSS for a damaged record, UNAVAILABLE when the store cannot be reached; a conflict
    /// means another writer got there first (another server over the same store).
    fn from(e: StoreError) -> EngineError {
        tracing::error!(error = %e, "store failure");
        match e {
            StoreError::Damaged(m) => EngineError::DataLoss(m),
            StoreError::Failed(m) => EngineError::Unavailable(m),
            StoreError::Conflict(m) => EngineError::precondition(format!("the store changed meanwhile: {m}")),
        }
    }
}

/// A ruleset that failed to compile: `ruleset `x` has N errors; first: …`.
pub fn ruleset_failed(id: &str, diagnostics: &[Diagnostic]) -> EngineError {
    EngineError::Invalid {
        message: ruleset_summary(id, diagnostics),
        problems: diagnostics.iter().map(Problem::of_diagnostic).collect(),
    }
}

pub fn ruleset_summary(id: &str, diagnostics: &[Diagnostic]) -> String {
    let first = diagnostics.first().map(|d| d.to_string()).unwrap_or_default();
    format!("ruleset `{id}` has {} errors; first: {first}", diagnostics.len())
}
