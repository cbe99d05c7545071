//! The checked tree: what the checker ([`crate::check`]) produces from a syntax tree — names
//! resolved, formats checked, constants folded — and its two evaluators: [`eval`], the
//! reference semantics, and [`program`], numeric subtrees lowered to flat stack programs (the
//! hot path), checked against the reference by property tests.
//!
//! Nothing here depends on the checker: the tree is data, and evaluating it needs only the
//! variables' values ([`crate::EvalContext`]).

pub(crate) mod eval;
pub(crate) mod program;

use crate::function::BoundFunction;
use crate::span::Span;
use crate::value::Value;
use rust_decimal::Decimal;
use std::sync::Arc;

/// Arithmetic operators on numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
}

impl Arith {
    pub fn symbol(self) -> &'static str {
        match self {
            Arith::Add => "+",
            Arith::Sub => "-",
            Arith::Mul => "*",
            Arith::Div => "/",
            Arith::Rem => "%",
            Arith::Pow => "^",
        }
    }
}

/// Numeric comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Lt,
    Gt,
    Le,
    Ge,
}

/// One-argument numeric functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MathFn {
    Abs,
    Ceil,
    Floor,
    Round,
}

/// A checked node. Formats were checked, so evaluation only matches on the shapes it expects.
#[derive(Debug)]
pub(crate) enum Node {
    Const(Value),
    /// A variable: index into the formula's variable table.
    Var(u32),
    Index {
        var: u32,
        index: Box<Node>,
        span: Span,
    },
    /// `value()`
    Input,
    /// `arg(n)` inside an expanded user function body.
    Arg(u32),
    Neg(Box<Node>),
    Not(Box<Node>),
    Arith {
        op: Arith,
        lhs: Box<Node>,
        rhs: Box<Node>,
        span: Span,
    },
    Concat(Box<Node>, Box<Node>),
    Cmp {
        op: Cmp,
        lhs: Box<Node>,
        rhs: Box<Node>,
    },
    Eq {
        negate: bool,
        lhs: Box<Node>,
        rhs: Box<Node>,
    },
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Math {
        f: MathFn,
        arg: Box<Node>,
        span: Span,
    },
    MinMax {
        max: bool,
        args: Box<[Node]>,
    },
    If {
        cond: Box<Node>,
        then: Box<Node>,
        otherwise: Box<Node>,
    },
    Length(Box<Node>),
    IsEmpty(Box<Node>),
    /// `text(x)`: a NUMBER, BOOLEAN or STRING as its text.
    Text(Box<Node>),
    Slice {
        array: Box<Node>,
        start: Box<Node>,
        end: Option<Box<Node>>,
        span: Span,
    },
    User {
        name: Arc<str>,
        args: Box<[Node]>,
        body: Box<Node>,
        span: Span,
    },
    /// A lowered numeric subtree (see [`program`]).
    Program(program::Program),
    External {
        name: Arc<str>,
        f: Arc<dyn BoundFunction>,
        args: Box<[Node]>,
        span: Span,
    },
}

/// Whether a number is a whole number usable as an index (for use by the evaluator).
pub(crate) fn as_index(d: Decimal) -> Option<usize> {
    if d.is_sign_negative() && !d.is_zero() || !d.fract().is_zero() {
        return None;
    }
    use rust_decimal::prelude::ToPrimitive;
    d.to_usize()
}
