//! The evaluator: a checked tree plus a context to a value.
//!
//! Formats were checked at load, so a NUMBER node always yields a number; a mismatch here would be
//! a bug in the checker and is reported as an error rather than a panic. Numeric subtrees go
//! through [`Evaluator::num`], which works on [`Decimal`] directly without building [`Value`]s.

use super::{Arith, Cmp, MathFn, Node, as_index};
use crate::error::{ErrorCode, FormulaError};
use crate::number::{self, MathError, Num};
use crate::span::Span;
use crate::value::{Value, canonical_decimal};
use crate::{EvalContext, VarId};
use rust_decimal::Decimal;
use std::sync::Arc;

/// Errors are boxed so that `Result<Decimal, _>` stays small on the hot path.
pub(crate) type EvalResult<T> = Result<T, Box<FormulaError>>;

/// A context with no variables: used to fold constant subtrees at load.
pub(crate) struct NoVariables;

impl EvalContext for NoVariables {
    fn value(&self, _: VarId) -> Option<Value> {
        None
    }
}

pub(crate) struct Evaluator<'a, C: EvalContext> {
    cx: &'a C,
    vars: &'a [(VarId, Arc<str>)],
    input: Option<&'a Value>,
    /// Argument values of the user-defined functions being evaluated; `base` is the current
    /// frame's first argument.
    args: Vec<Value>,
    base: usize,
}

#[cold]
#[inline(never)]
fn err(code: ErrorCode, span: Span, message: String) -> Box<FormulaError> {
    Box::new(FormulaError::new(code, span, message))
}

#[cold]
#[inline(never)]
fn math_error(e: MathError, span: Span, operation: &str) -> Box<FormulaError> {
    let (code, what) = match e {
        MathError::DivisionByZero => (ErrorCode::DivisionByZero, "division by zero"),
        MathError::Overflow => {
            (ErrorCode::Overflow, "result is outside the exact decimal range (about ±7.9e28)")
        }
        MathError::Domain => (ErrorCode::Domain, "result is not a real number"),
    };
    Box::new(FormulaError::new(code, span, format!("{what} in {operation}")).with_label(what))
}

#[cold]
#[inline(never)]
fn internal(what: &str) -> Box<FormulaError> {
    // Unreachable for checked trees; reported rather than panicking.
    err(
        ErrorCode::FunctionFailed,
        Span::default(),
        format!("internal error: {what} had an unexpected format"),
    )
}

impl<'a, C: EvalContext> Evaluator<'a, C> {
    pub fn new(cx: &'a C, vars: &'a [(VarId, Arc<str>)], input: Option<&'a Value>) -> Self {
        Evaluator { cx, vars, input, args: Vec::new(), base: 0 }
    }

    fn var(&self, slot: u32) -> EvalResult<Value> {
        // A number the context reads by slot needs no search by id (a plan's context answers
        // only this way); anything else is read by id.
        if let Some(Some(n)) = self.cx.num_at(slot as usize) {
            return Ok(Value::Number(n.to_decimal()));
        }
        let Some((id, name)) = self.vars.get(slot as usize) else {
            return Err(internal("a variable slot"));
        };
        self.cx.value(*id).ok_or_else(|| {
            err(
                ErrorCode::MissingValue,
                Span::default(),
                format!("no value was supplied for variable `{name}`"),
            )
        })
    }

    /// Reads a NUMBER variable as a [`Num`], through the context's slot-indexed read.
    #[inline(always)]
    pub fn var_num(&self, slot: u32) -> EvalResult<Num> {
        match self.cx.num_at(slot as usize) {
            Some(Some(n)) => Ok(n),
            Some(None) => Err(self.missing_number(slot)),
            None => self.var_number(slot).map(Num::from_decimal),
        }
    }

    #[cold]
    #[inline(never)]
    fn missing_number(&self, slot: u32) -> Box<FormulaError> {
        let name = self.vars.get(slot as usize).map_or("?", |(_, n)| &**n);
        err(
            ErrorCode::MissingValue,
            Span::default(),
            format!("no NUMBER value was supplied for variable `{name}`"),
        )
    }

    /// Reads a NUMBER variable without building a [`Value`]: by slot when the context answers
    /// by slot (as [`Evaluator::var_num`] does), else by id.
    #[inline]
    pub fn var_number(&self, slot: u32) -> EvalResult<Decimal> {
        match self.cx.num_at(slot as usize) {
            Some(Some(n)) => return Ok(n.to_decimal()),
            Some(None) => return Err(self.missing_number(slot)),
            None => {}
        }
        let Some((id, _)) = self.vars.get(slot as usize) else {
            return Err(internal("a variable slot"));
        };
        self.cx.number(*id).ok_or_else(|| self.missing_number(slot))
    }

    /// `a op b`, with errors pointing at the operator.
    #[inline]
    pub fn arith(&self, op: Arith, a: Decimal, b: Decimal, span: Span) -> EvalResult<Decimal> {
        let r = match op {
            Arith::Add => number::add(a, b),
            Arith::Sub => number::sub(a, b),
            Arith::Mul => number::mul(a, b),
            Arith::Div => number::div(a, b),
            Arith::Rem => number::rem(a, b),
            Arith::Pow => number::pow(a, b),
        };
        match r {
            Ok(d) => Ok(d),
            Err(e) => Err(math_error(
                e,
                span,
                &format!("{} {} {}", canonical_decimal(a), op.symbol(), canonical_decimal(b)),
            )),
        }
    }

    /// `abs`, `ceil`, `floor` or `round` of `a`.
    #[inline]
    pub fn math_fn(&self, f: MathFn, a: Decimal, span: Span) -> EvalResult<Decimal> {
        match f {
            MathFn::Abs => Ok(a.abs()),
            MathFn::Ceil => Ok(a.ceil()),
            MathFn::Floor => Ok(a.floor()),
            MathFn::Round => {
                number::round(a).map_err(|e| math_error(e, span, &format!("round({})", canonical_decimal(a))))
            }
        }
    }

    /// Evaluates a NUMBER node.
    pub fn num(&mut self, node: &Node) -> EvalResult<Decimal> {
        match node {
            Node::Const(Value::Number(d)) => Ok(*d),
            Node::Var(slot) => self.var_number(*slot),
            Node::Neg(a) => Ok(-self.num(a)?),
            Node::Arith { op, lhs, rhs, span } => {
                let (a, b) = (self.num(lhs)?, self.num(rhs)?);
                self.arith(*op, a, b, *span)
            }
            Node::Math { f, arg, span } => {
                let a = self.num(arg)?;
                self.math_fn(*f, a, *span)
            }
            Node::Program(p) => p.run(self).map(Num::to_decimal),
            Node::MinMax { max, args } => {
                let mut best = self.num(&args[0])?;
                for a in &args[1..] {
                    let v = self.num(a)?;
                    if (*max && v > best) || (!*max && v < best) {
                        best = v;
                    }
                }
                Ok(best)
            }
            Node::Length(a) => match self.eval(a)? {
                Value::Array(items) => Ok(Decimal::from(items.len())),
                _ => Err(internal("the argument of length()")),
            },
            other => self.eval(other)?.as_number().ok_or_else(|| internal("a NUMBER expression")),
        }
    }

    /// Evaluates a BOOLEAN node.
    pub fn boolean(&mut self, node: &Node) -> EvalResult<bool> {
        self.eval(node)?.as_bool().ok_or_else(|| internal("a BOOLEAN expression"))
    }

    // long: one arm per node kind: the reference semantics of the language in one match.
    /// Evaluates any node.
    pub fn eval(&mut self, node: &Node) -> EvalResult<Value> {
        Ok(match node {
            Node::Const(v) => v.clone(),
            Node::Var(slot) => self.var(*slot)?,
            Node::Input => self.input.cloned().ok_or_else(|| {
                err(
                    ErrorCode::MissingValue,
                    Span::default(),
                    "value() was evaluated without a value so far".into(),
                )
            })?,
            Node::Arg(n) => {
                self.args.get(self.base + *n as usize).cloned().ok_or_else(|| internal("arg()"))?
            }
            Node::Neg(_)
            | Node::Arith { .. }
            | Node::Math { .. }
            | Node::MinMax { .. }
            | Node::Length(_)
            | Node::Program(_) => Value::Number(self.num(node)?),
            Node::Index { var, index, span } => {
                let Value::Array(items) = self.var(*var)? else {
                    return Err(internal("an indexed variable"));
                };
                let i = self.num(index)?;
                match as_index(i).and_then(|i| items.get(i)) {
                    Some(v) => v.clone(),
                    None => {
                        return Err(err(
                            ErrorCode::IndexOutOfRange,
                            *span,
                            format!(
                                "index {} is outside the array of {} element{}",
                                canonical_decimal(i),
                                items.len(),
                                if items.len() == 1 { "" } else { "s" }
                            ),
                        ));
                    }
                }
            }
            Node::Not(a) => Value::Boolean(!self.boolean(a)?),
            Node::Text(a) => match self.eval(a)? {
                s @ Value::String(_) => s,
                other => Value::String(Arc::from(other.to_string())),
            },
            Node::Concat(a, b) => match (self.eval(a)?, self.eval(b)?) {
                (Value::String(x), Value::String(y)) => Value::String(Arc::from(format!("{x}{y}"))),
                _ => return Err(internal("a string concatenation")),
            },
            Node::Cmp { op, lhs, rhs } => {
                let (a, b) = (self.num(lhs)?, self.num(rhs)?);
                Value::Boolean(match op {
                    Cmp::Lt => a < b,
                    Cmp::Gt => a > b,
                    Cmp::Le => a <= b,
                    Cmp::Ge => a >= b,
                })
            }
            Node::Eq { negate, lhs, rhs } => {
                let equal = self.eval(lhs)? == self.eval(rhs)?;
                Value::Boolean(equal != *negate)
            }
            // `&&` and `||` short-circuit: PCGen evaluates both sides, but the result is the same
            // whenever both sides evaluate, and an error on the unneeded side cannot occur here.
            Node::And(a, b) => Value::Boolean(self.boolean(a)? && self.boolean(b)?),
            Node::Or(a, b) => Value::Boolean(self.boolean(a)? || self.boolean(b)?),
            Node::If { cond, then, otherwise } => {
                if self.boolean(cond)? {
                    self.eval(then)?
                } else {
                    self.eval(otherwise)?
                }
            }
            Node::IsEmpty(a) => match self.eval(a)? {
                Value::Array(items) => Value::Boolean(items.is_empty()),
                _ => return Err(internal("the argument of isEmpty()")),
            },
            Node::Slice { array, start, end, span } => {
                let Value::Array(items) = self.eval(array)? else {
                    return Err(internal("the array of slice()"));
                };
                let s = self.num(start)?;
                let e = match end {
                    Some(e) => Some(self.num(e)?),
                    None => None,
                };
                let bound = |d: Decimal| {
                    as_index(d).ok_or_else(|| {
                        err(
                            ErrorCode::IndexOutOfRange,
                            *span,
                            format!(
                                "slice() bound {} is not a whole number of 0 or more",
                                canonical_decimal(d)
                            ),
                        )
                    })
                };
                let from = bound(s)?.min(items.len());
                let to = match e {
                    Some(e) => bound(e)?.min(items.len()),
                    None => items.len(),
                };
                Value::Array(if from < to { Arc::from(&items[from..to]) } else { Arc::from(Vec::new()) })
            }
            Node::User { name, args, body, span } => {
                let mut values = Vec::with_capacity(args.len());
                for a in args.iter() {
                    values.push(self.eval(a)?);
                }
                let saved = self.base;
                self.base = self.args.len();
                self.args.extend(values);
                let result = self.eval(body);
                self.args.truncate(self.base);
                self.base = saved;
                result.map_err(|inner| {
                    let mut e =
                        FormulaError::new(inner.code, *span, format!("in `{name}`: {}", inner.message));
                    e.label = inner.label.clone();
                    Box::new(e)
                })?
            }
            Node::External { name, f, args, span } => {
                let mut values = Vec::with_capacity(args.len());
                for a in args.iter() {
                    values.push(self.eval(a)?);
                }
                f.eval(&values, self.cx)
                    .map_err(|m| err(ErrorCode::FunctionFailed, *span, format!("{name}(): {m}")))?
            }
        })
    }
}
