//! Errors of solver operations: every rejected declaration or sheet operation.

use formula::FormulaError;
use std::fmt;

/// Why a declaration or a sheet operation was rejected. A rejected operation leaves the sheet
/// unchanged.
#[derive(Clone, Debug, PartialEq)]
pub struct SolveError {
    /// Stable code, e.g. `solver.cycle`.
    pub code: &'static str,
    /// What went wrong, naming the offending things.
    pub message: String,
    /// For `solver.cycle`: the variables around the cycle, first repeated last
    /// (`Appendages → Hands → Appendages`).
    pub cycle: Vec<String>,
    /// For `solver.cycle`: the ids of the modifiers forming the cycle.
    pub cycle_modifiers: Vec<String>,
    /// A formula error behind this one, with its span into `formula_text`.
    pub formula: Option<Box<(FormulaError, String)>>,
}

impl SolveError {
    pub(crate) fn new(code: &'static str, message: impl Into<String>) -> Self {
        SolveError {
            code,
            message: message.into(),
            cycle: Vec::new(),
            cycle_modifiers: Vec::new(),
            formula: None,
        }
    }

    pub(crate) fn formula(what: &str, text: &str, err: FormulaError) -> Self {
        let mut e =
            SolveError::new("solver.formula", format!("{what}: `{text}`: {} [{}]", err.message, err.code));
        e.formula = Some(Box::new((err, text.to_owned())));
        e
    }
}

impl fmt::Display for SolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SolveError {}

/// The stable codes, documented in `docs/solver.md`.
pub mod codes {
    pub const UNKNOWN_SCOPE: &str = "solver.unknown_scope";
    pub const DUPLICATE_SCOPE: &str = "solver.duplicate_scope";
    pub const VARIABLE_CONFLICT: &str = "solver.variable_conflict";
    pub const UNKNOWN_VARIABLE: &str = "solver.unknown_variable";
    pub const UNKNOWN_INSTANCE: &str = "solver.unknown_instance";
    pub const DUPLICATE_INSTANCE: &str = "solver.duplicate_instance";
    pub const WRONG_PARENT: &str = "solver.wrong_parent";
    pub const UNKNOWN_MODIFIER: &str = "solver.unknown_modifier";
    pub const DUPLICATE_MODIFIER: &str = "solver.duplicate_modifier";
    pub const BAD_MODIFIER_TYPE: &str = "solver.bad_modifier_type";
    pub const BAD_VALUE: &str = "solver.bad_value";
    pub const LOCKED: &str = "solver.locked";
    pub const CYCLE: &str = "solver.cycle";
    pub const FORMULA: &str = "solver.formula";
    pub const BAD_DEFAULT: &str = "solver.bad_default";
    pub const BAD_FUNCTION: &str = "solver.bad_function";
}
