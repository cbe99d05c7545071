//! Diagnostics: every failure of parsing, checking or evaluating a formula.
//!
//! An error carries the [`Stage`] it happened in, a stable [`ErrorCode`], a message that names
//! the offending thing, and the [`Span`] of the text it points at. It implements
//! [`miette::Diagnostic`], so a caller that attaches the formula text gets a rustc-like rendering.

use crate::span::Span;
use std::fmt;

/// The stage a formula failed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The text is not a formula (lexing and parsing).
    Parse,
    /// The formula is well formed but not valid where it is used: unknown names, wrong argument
    /// counts or formats, wrong result format.
    Semantics,
    /// Evaluating a valid formula failed: division by zero, overflow, index out of range.
    Evaluation,
}

impl Stage {
    /// The stage's name as used in JSON output: `parse`, `semantics`, `evaluation`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Parse => "parse",
            Stage::Semantics => "semantics",
            Stage::Evaluation => "evaluation",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! codes {
    ($( $(#[$doc:meta])* $variant:ident => ($stage:ident, $code:literal), )*) => {
        /// A stable error code. The string form (`parse.unexpected_token`) never changes once
        /// released; `docs/formula-language.md` lists every code.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $( $(#[$doc])* $variant, )*
        }

        impl ErrorCode {
            /// The stable string form of the code.
            pub fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$variant => $code, )* }
            }

            /// The stage this code belongs to.
            pub fn stage(self) -> Stage {
                match self { $( ErrorCode::$variant => Stage::$stage, )* }
            }

            /// Every code, for documentation and tests.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant, )* ];
        }
    };
}

codes! {
    /// A character that cannot start any token (`#`, a lone `=`, `&`, `|`).
    UnexpectedChar => (Parse, "parse.unexpected_char"),
    /// A string literal without its closing quote.
    UnterminatedString => (Parse, "parse.unterminated_string"),
    /// A number literal that is malformed or too large for exact arithmetic.
    BadNumber => (Parse, "parse.bad_number"),
    /// A token where another was expected (`2+*3`, `(5,5)`, `2)`).
    UnexpectedToken => (Parse, "parse.unexpected_token"),
    /// The text ended where more was expected (`2+`, `abs(`).
    UnexpectedEnd => (Parse, "parse.unexpected_end"),
    /// An opening `(` or `[` that is never closed.
    UnclosedDelimiter => (Parse, "parse.unclosed_delimiter"),
    /// An empty argument in a call (`f(,3)`, `f(5,,6)`, `f(4,)`).
    EmptyArgument => (Parse, "parse.empty_argument"),
    /// `a||b&&c` or `2^3^2`: PCGen's reading differs from the usual one; parentheses are required.
    AmbiguousPrecedence => (Parse, "parse.ambiguous_precedence"),
    /// Two unary operators of one kind in a row (`--3`, `!!a`) or `!-a`; PCGen allows one.
    RepeatedUnary => (Parse, "parse.repeated_unary"),
    /// The formula is longer or nested deeper than the configured limits.
    TooComplex => (Parse, "parse.too_complex"),
    /// A name that is not a function in the library.
    UnknownFunction => (Semantics, "semantics.unknown_function"),
    /// A name that is not a variable visible where the formula is used.
    UnknownVariable => (Semantics, "semantics.unknown_variable"),
    /// A call with the wrong number of arguments.
    WrongArgumentCount => (Semantics, "semantics.wrong_argument_count"),
    /// An operand or argument of the wrong format (`true + 1`, `if(2,4,5)`).
    FormatMismatch => (Semantics, "semantics.format_mismatch"),
    /// The formula's result format is not the one its place requires.
    WrongResultFormat => (Semantics, "semantics.wrong_result_format"),
    /// Indexing something that is not an array, or an array where a single value is needed.
    ArrayMisuse => (Semantics, "semantics.array_misuse"),
    /// `value()` used where there is no value so far (outside a modifier).
    NoInput => (Semantics, "semantics.no_input"),
    /// `arg(n)` outside a user-defined function body, or not an integer literal.
    BadArg => (Semantics, "semantics.bad_arg"),
    /// An argument that can be rejected at load (`slice(a, 3, 1)`).
    InvalidArgument => (Semantics, "semantics.invalid_argument"),
    /// A user-defined function that calls itself, directly or through others.
    RecursiveFunction => (Semantics, "semantics.recursive_function"),
    /// A user-defined function definition that is invalid (bad name, clash with a built-in).
    BadFunctionDefinition => (Semantics, "semantics.bad_function_definition"),
    /// Division or remainder by zero.
    DivisionByZero => (Evaluation, "evaluation.division_by_zero"),
    /// A result outside the exact decimal range (about ±7.9e28).
    Overflow => (Evaluation, "evaluation.overflow"),
    /// A result with no real value (a negative number to a fractional power).
    Domain => (Evaluation, "evaluation.domain"),
    /// An array index or slice bound outside the array, negative or not an integer.
    IndexOutOfRange => (Evaluation, "evaluation.index_out_of_range"),
    /// The context supplied no value for a variable the formula reads.
    MissingValue => (Evaluation, "evaluation.missing_value"),
    /// A function added by a later layer failed.
    FunctionFailed => (Evaluation, "evaluation.function_failed"),
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error in a formula: what went wrong, where, and at which stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormulaError {
    /// Stable code; its stage is [`FormulaError::stage`].
    pub code: ErrorCode,
    /// Human-readable message naming the offending text or thing.
    pub message: String,
    /// The byte span of the offending text in the formula.
    pub span: Span,
    /// The short text under the caret in a rendered diagnostic.
    pub label: Option<String>,
    /// A suggestion for fixing the formula.
    pub help: Option<String>,
}

impl FormulaError {
    /// A new error with no label or help.
    pub fn new(code: ErrorCode, span: Span, message: impl Into<String>) -> Self {
        FormulaError { code, message: message.into(), span, label: None, help: None }
    }

    /// Adds a label shown under the caret.
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Adds a suggestion.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// The stage the error belongs to.
    pub fn stage(&self) -> Stage {
        self.code.stage()
    }
}

impl fmt::Display for FormulaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FormulaError {}

impl miette::Diagnostic for FormulaError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code.as_str()))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let label = self.label.clone().or_else(|| Some(self.code.stage().to_string() + " error"));
        Some(Box::new(std::iter::once(miette::LabeledSpan::new_with_span(label, self.span))))
    }
}
