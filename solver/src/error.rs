//! Errors of solver operations: every rejected declaration or sheet operation.

use formula::FormulaError;
use std::fmt;

/// Why a declaration or a sheet operation was rejected. A rejected operation leaves the sheet
/// unchanged.
#[derive(Clone, Debug, PartialEq)]
pub struct SolveError {
    /// Stable code, e.g. [`Code::Cycle`] (`solver.cycle`).
    pub code: Code,
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
    /// An error with a code and a message (for code outside the solver that reports in the
    /// solver's terms, such as a scenario step that is not one of the step kinds).
    pub fn new(code: Code, message: impl Into<String>) -> Self {
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
            SolveError::new(Code::Formula, format!("{what}: `{text}`: {} [{}]", err.message, err.code));
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

/// The stable codes of solver errors, documented in `docs/solver.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    UnknownScope,
    DuplicateScope,
    VariableConflict,
    UnknownVariable,
    UnknownInstance,
    DuplicateInstance,
    WrongParent,
    UnknownModifier,
    DuplicateModifier,
    BadModifierType,
    BadValue,
    /// A priority that is negative or not a whole number.
    BadPriority,
    /// A step of a scenario that is not one of the step kinds.
    BadStep,
    Locked,
    Cycle,
    Formula,
    BadDefault,
    BadFunction,
    /// A template index that the sheet's catalog does not have (or a sheet made without one).
    UnknownTemplate,
    /// A guard (`require`) whose formula is not true at its point of the batch.
    GuardFailed,
    /// An adjustment of a stock past a bound it rejects (or whose amount or bound has no value).
    OutOfBounds,
    /// An aggregate call (`count(SCOPE, WHERE)`, …) with the wrong arguments, or over the
    /// global scope.
    BadAggregate,
    /// A reference to another instance's variable (`@id.Var`) naming a variable no scope
    /// declares, or one declared with different formats.
    BadReference,
    /// Reads through holders (`creature.STR`) whose links do not settle: a holder's value
    /// depends on what it reads, and each link changes it again.
    PointerLoop,
}

impl Code {
    /// The code as written in outputs: `solver.cycle`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::UnknownScope => "solver.unknown_scope",
            Code::DuplicateScope => "solver.duplicate_scope",
            Code::VariableConflict => "solver.variable_conflict",
            Code::UnknownVariable => "solver.unknown_variable",
            Code::UnknownInstance => "solver.unknown_instance",
            Code::DuplicateInstance => "solver.duplicate_instance",
            Code::WrongParent => "solver.wrong_parent",
            Code::UnknownModifier => "solver.unknown_modifier",
            Code::DuplicateModifier => "solver.duplicate_modifier",
            Code::BadModifierType => "solver.bad_modifier_type",
            Code::BadValue => "solver.bad_value",
            Code::BadPriority => "solver.bad_priority",
            Code::BadStep => "solver.bad_step",
            Code::Locked => "solver.locked",
            Code::Cycle => "solver.cycle",
            Code::Formula => "solver.formula",
            Code::BadDefault => "solver.bad_default",
            Code::BadFunction => "solver.bad_function",
            Code::UnknownTemplate => "solver.unknown_template",
            Code::GuardFailed => "solver.guard_failed",
            Code::OutOfBounds => "solver.out_of_bounds",
            Code::BadAggregate => "solver.bad_aggregate",
            Code::BadReference => "solver.bad_reference",
            Code::PointerLoop => "solver.pointer_loop",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The codes as constants, for matching and for building errors.
pub mod codes {
    use super::Code;
    pub const UNKNOWN_SCOPE: Code = Code::UnknownScope;
    pub const DUPLICATE_SCOPE: Code = Code::DuplicateScope;
    pub const VARIABLE_CONFLICT: Code = Code::VariableConflict;
    pub const UNKNOWN_VARIABLE: Code = Code::UnknownVariable;
    pub const UNKNOWN_INSTANCE: Code = Code::UnknownInstance;
    pub const DUPLICATE_INSTANCE: Code = Code::DuplicateInstance;
    pub const WRONG_PARENT: Code = Code::WrongParent;
    pub const UNKNOWN_MODIFIER: Code = Code::UnknownModifier;
    pub const DUPLICATE_MODIFIER: Code = Code::DuplicateModifier;
    pub const BAD_MODIFIER_TYPE: Code = Code::BadModifierType;
    pub const BAD_VALUE: Code = Code::BadValue;
    pub const BAD_PRIORITY: Code = Code::BadPriority;
    pub const BAD_STEP: Code = Code::BadStep;
    pub const LOCKED: Code = Code::Locked;
    pub const CYCLE: Code = Code::Cycle;
    pub const FORMULA: Code = Code::Formula;
    pub const BAD_DEFAULT: Code = Code::BadDefault;
    pub const BAD_FUNCTION: Code = Code::BadFunction;
    pub const UNKNOWN_TEMPLATE: Code = Code::UnknownTemplate;
    pub const GUARD_FAILED: Code = Code::GuardFailed;
    pub const OUT_OF_BOUNDS: Code = Code::OutOfBounds;
    pub const BAD_AGGREGATE: Code = Code::BadAggregate;
    pub const BAD_REFERENCE: Code = Code::BadReference;
    pub const POINTER_LOOP: Code = Code::PointerLoop;
}
