//! Numeric programs: the fast path for NUMBER subtrees.
//!
//! After checking and folding, every maximal subtree built from arithmetic, unary minus,
//! `abs`/`ceil`/`floor`/`round` and `min`/`max` is lowered into a flat [`Program`] for a small
//! stack machine: `floor((Score-10)/2)` becomes `var 0; sub 10; div 2; floor`. Constant operands
//! are fused into their operator and variables are read as decimals (no `Value` built), so a
//! typical formula runs as a few dispatches of a tight loop instead of a recursion per node.
//! Any other subtree inside (an `if`, a user function call) stays a tree and runs through the
//! tree evaluator as one instruction.
//!
//! The tree is the reference semantics: a property test checks that programs and trees agree on
//! every value and error.

use crate::EvalContext;
use crate::check::{Arith, MathFn, Node};
use crate::eval::{EvalResult, Evaluator};
use crate::number::{from_small, small};
use crate::span::Span;
use rust_decimal::Decimal;

/// A number on the machine's stack: a whole number of scale 0 that fits in `i64` is kept as
/// one, so that chains of integer operations never convert to and from [`Decimal`]. `Int(x)`
/// means exactly the decimal `x` with scale 0.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Num {
    Int(i64),
    Dec(Decimal),
}

impl Num {
    #[inline(always)]
    fn from_dec(d: Decimal) -> Num {
        match small(d) {
            Some(i) => Num::Int(i),
            None => Num::Dec(d),
        }
    }

    #[inline(always)]
    fn dec(self) -> Decimal {
        match self {
            Num::Int(i) => from_small(i),
            Num::Dec(d) => d,
        }
    }

    #[inline(always)]
    fn less(self, other: Num) -> bool {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a < b,
            (a, b) => a.dec() < b.dec(),
        }
    }
}

/// Integer arithmetic when it is exact, else `None` (the caller takes the decimal path, which
/// also reports division by zero and overflow).
#[inline(always)]
fn int_arith(op: Arith, x: i64, y: i64) -> Option<i64> {
    match op {
        Arith::Add => x.checked_add(y),
        Arith::Sub => x.checked_sub(y),
        Arith::Mul => x.checked_mul(y),
        // Exact quotients only: 7/2 is 3.5, a decimal.
        Arith::Div if y != 0 => x.checked_div(y).filter(|q| q.wrapping_mul(y) == x),
        Arith::Rem if y != 0 => x.checked_rem(y),
        _ => None,
    }
}

/// Programs deeper than this stay trees (the machine's stack is a fixed array).
const MAX_STACK: usize = 8;

#[derive(Debug)]
pub(crate) enum Op {
    Const(Num),
    Var(u32),
    /// Any other NUMBER subtree, run by the tree evaluator.
    Tree(Box<Node>),
    Neg,
    /// Pops two values, pushes `a op b`.
    Arith(Arith, Span),
    /// `top = top op k` with a constant right operand.
    ArithK(Arith, Num, Span),
    /// `top = k op top` with a constant left operand.
    KArith(Arith, Num, Span),
    Math(MathFn, Span),
    /// Pops `n` values, pushes the least or greatest.
    MinMax {
        max: bool,
        n: u32,
    },
}

#[derive(Debug)]
pub(crate) struct Program {
    ops: Box<[Op]>,
}

fn is_numeric(node: &Node) -> bool {
    matches!(node, Node::Neg(_) | Node::Arith { .. } | Node::Math { .. } | Node::MinMax { .. })
}

/// Lowers every maximal numeric subtree of `node` into a program.
pub(crate) fn lower(node: Node) -> Node {
    if is_numeric(&node) {
        let mut ops = Vec::new();
        let mut depth = 0;
        let mut max_depth = 0;
        emit(node, &mut ops, &mut depth, &mut max_depth);
        return if max_depth <= MAX_STACK {
            Node::Program(Program { ops: ops.into() })
        } else {
            // Too deep for the fixed stack: rebuild nothing, run the ops' trees instead.
            unlower(ops)
        };
    }
    map_children(node, lower)
}

/// Applies `f` to each direct child of `node`.
fn map_children(node: Node, f: fn(Node) -> Node) -> Node {
    let b = |n: Box<Node>| Box::new(f(*n));
    match node {
        Node::Index { var, index, span } => Node::Index { var, index: b(index), span },
        Node::Not(a) => Node::Not(b(a)),
        Node::Concat(x, y) => Node::Concat(b(x), b(y)),
        Node::Cmp { op, lhs, rhs } => Node::Cmp { op, lhs: b(lhs), rhs: b(rhs) },
        Node::Eq { negate, lhs, rhs } => Node::Eq { negate, lhs: b(lhs), rhs: b(rhs) },
        Node::And(x, y) => Node::And(b(x), b(y)),
        Node::Or(x, y) => Node::Or(b(x), b(y)),
        Node::If { cond, then, otherwise } => {
            Node::If { cond: b(cond), then: b(then), otherwise: b(otherwise) }
        }
        Node::Length(a) => Node::Length(b(a)),
        Node::IsEmpty(a) => Node::IsEmpty(b(a)),
        Node::Slice { array, start, end, span } => {
            Node::Slice { array: b(array), start: b(start), end: end.map(b), span }
        }
        Node::User { name, args, body, span } => {
            Node::User { name, args: args.into_vec().into_iter().map(f).collect(), body: b(body), span }
        }
        Node::External { name, f: func, args, span } => {
            Node::External { name, f: func, args: args.into_vec().into_iter().map(f).collect(), span }
        }
        Node::Neg(a) => Node::Neg(b(a)),
        Node::Arith { op, lhs, rhs, span } => Node::Arith { op, lhs: b(lhs), rhs: b(rhs), span },
        Node::Math { f: m, arg, span } => Node::Math { f: m, arg: b(arg), span },
        Node::MinMax { max, args } => {
            Node::MinMax { max, args: args.into_vec().into_iter().map(f).collect() }
        }
        leaf @ (Node::Const(_) | Node::Var(_) | Node::Input | Node::Arg(_) | Node::Program(_)) => leaf,
    }
}

fn push(ops: &mut Vec<Op>, op: Op, depth: &mut usize, max_depth: &mut usize) {
    *depth += 1;
    *max_depth = (*max_depth).max(*depth);
    ops.push(op);
}

fn emit(node: Node, ops: &mut Vec<Op>, depth: &mut usize, max_depth: &mut usize) {
    match node {
        Node::Const(crate::Value::Number(d)) => push(ops, Op::Const(Num::from_dec(d)), depth, max_depth),
        Node::Var(slot) => push(ops, Op::Var(slot), depth, max_depth),
        Node::Neg(a) => {
            emit(*a, ops, depth, max_depth);
            ops.push(Op::Neg);
        }
        Node::Arith { op, lhs, rhs, span } => match (*lhs, *rhs) {
            (l, Node::Const(crate::Value::Number(k))) => {
                emit(l, ops, depth, max_depth);
                ops.push(Op::ArithK(op, Num::from_dec(k), span));
            }
            (Node::Const(crate::Value::Number(k)), r) => {
                emit(r, ops, depth, max_depth);
                ops.push(Op::KArith(op, Num::from_dec(k), span));
            }
            (l, r) => {
                emit(l, ops, depth, max_depth);
                emit(r, ops, depth, max_depth);
                ops.push(Op::Arith(op, span));
                *depth -= 1;
            }
        },
        Node::Math { f, arg, span } => {
            emit(*arg, ops, depth, max_depth);
            ops.push(Op::Math(f, span));
        }
        Node::MinMax { max, args } => {
            let n = args.len() as u32;
            for a in args.into_vec() {
                emit(a, ops, depth, max_depth);
            }
            ops.push(Op::MinMax { max, n });
            *depth -= n as usize - 1;
        }
        other => push(ops, Op::Tree(Box::new(lower(other))), depth, max_depth),
    }
}

/// Rebuilds a tree from ops (used only when a program would be too deep for the fixed stack).
fn unlower(ops: Vec<Op>) -> Node {
    let mut stack: Vec<Node> = Vec::new();
    let num = |d| Node::Const(crate::Value::Number(d));
    for op in ops {
        // Every op pops what earlier ops pushed; the ops came from a well-formed tree.
        let mut pop = || stack_pop(&mut stack);
        let node = match op {
            Op::Const(d) => num(d.dec()),
            Op::Var(s) => Node::Var(s),
            Op::Tree(t) => *t,
            Op::Neg => Node::Neg(Box::new(pop())),
            Op::Arith(op, span) => {
                let r = pop();
                let l = pop();
                Node::Arith { op, lhs: Box::new(l), rhs: Box::new(r), span }
            }
            Op::ArithK(op, k, span) => {
                Node::Arith { op, lhs: Box::new(pop()), rhs: Box::new(num(k.dec())), span }
            }
            Op::KArith(op, k, span) => {
                Node::Arith { op, lhs: Box::new(num(k.dec())), rhs: Box::new(pop()), span }
            }
            Op::Math(f, span) => Node::Math { f, arg: Box::new(pop()), span },
            Op::MinMax { max, n } => {
                let mut args: Vec<Node> = (0..n).map(|_| pop()).collect();
                args.reverse();
                Node::MinMax { max, args: args.into() }
            }
        };
        stack.push(node);
    }
    stack_pop(&mut stack)
}

fn stack_pop(stack: &mut Vec<Node>) -> Node {
    // Ops from a well-formed tree never pop an empty stack; a constant keeps this panic-free.
    stack.pop().unwrap_or(Node::Const(crate::Value::Number(Decimal::ZERO)))
}

impl Program {
    /// Runs the program.
    #[inline]
    pub(crate) fn run<C: EvalContext>(&self, ev: &mut Evaluator<'_, C>) -> EvalResult<Decimal> {
        let mut stack = [Num::Int(0); MAX_STACK];
        // `sp` is the number of values on the stack; lowering guaranteed it stays within
        // MAX_STACK and never pops an empty stack, so indexing cannot fail.
        let mut sp = 0usize;
        for op in self.ops.iter() {
            match op {
                Op::Const(n) => {
                    stack[sp] = *n;
                    sp += 1;
                }
                Op::Var(slot) => {
                    stack[sp] = Num::from_dec(ev.var_number(*slot)?);
                    sp += 1;
                }
                Op::Tree(node) => {
                    stack[sp] = Num::from_dec(ev.num(node)?);
                    sp += 1;
                }
                Op::Neg => {
                    stack[sp - 1] = match stack[sp - 1] {
                        Num::Int(i) if i != i64::MIN => Num::Int(-i),
                        n => Num::from_dec(-n.dec()),
                    }
                }
                Op::Arith(op, span) => {
                    sp -= 1;
                    stack[sp - 1] = arith(ev, *op, stack[sp - 1], stack[sp], *span)?;
                }
                Op::ArithK(op, k, span) => stack[sp - 1] = arith(ev, *op, stack[sp - 1], *k, *span)?,
                Op::KArith(op, k, span) => stack[sp - 1] = arith(ev, *op, *k, stack[sp - 1], *span)?,
                Op::Math(f, span) => {
                    stack[sp - 1] = match (f, stack[sp - 1]) {
                        // Whole numbers are their own floor, ceiling and rounding.
                        (MathFn::Floor | MathFn::Ceil | MathFn::Round, n @ Num::Int(_)) => n,
                        (MathFn::Abs, Num::Int(i)) if i != i64::MIN => Num::Int(i.abs()),
                        (f, n) => Num::from_dec(ev.math_fn(*f, n.dec(), *span)?),
                    }
                }
                Op::MinMax { max, n } => {
                    let n = *n as usize;
                    let args = &stack[sp - n..sp];
                    let mut best = args[0];
                    for v in &args[1..] {
                        if (*max && best.less(*v)) || (!*max && v.less(best)) {
                            best = *v;
                        }
                    }
                    sp -= n - 1;
                    stack[sp - 1] = best;
                }
            }
        }
        Ok(stack[0].dec())
    }
}

/// `a op b` on stack numbers: integers natively when exact, else the decimal path.
#[inline(always)]
fn arith<C: EvalContext>(ev: &Evaluator<'_, C>, op: Arith, a: Num, b: Num, span: Span) -> EvalResult<Num> {
    if let (Num::Int(x), Num::Int(y)) = (a, b)
        && let Some(r) = int_arith(op, x, y)
    {
        return Ok(Num::Int(r));
    }
    ev.arith(op, a.dec(), b.dec(), span).map(Num::from_dec)
}
