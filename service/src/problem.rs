//! One diagnosed problem, as every layer reports it: [`Problem`] (a stable code, a message, and
//! where: the operation and field, the file position, the formula span, the cycle), built from
//! the formula, solver and data layers' errors. The engine carries problems in its errors, the
//! wire edge sends them as details, the CLI renders them (`render.rs`) or writes them as JSON
//! (`json.rs`).

use data::{Diagnostic, SheetError};
use solver::SolveError;

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

    /// A rejected batch: the solver's error when the solver rejected it, with the operation.
    pub fn of_sheet_error(e: &SheetError) -> Problem {
        let p = match &e.solve {
            Some(s) => Problem::of_solve_error(s),
            None => Problem::new(e.code.as_str(), e.message.clone()),
        };
        let field = p.formula.as_ref().map(|_| "add_modifier.value");
        p.at_operation(e.index, field)
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
