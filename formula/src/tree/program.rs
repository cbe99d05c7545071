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

use super::eval::{EvalResult, Evaluator};
use super::{Arith, MathFn, Node};
use crate::EvalContext;
use crate::number::{Num, int_div_ceil, int_div_exact, int_div_floor};
use crate::span::Span;
use rust_decimal::Decimal;

/// Integer arithmetic when it is exact, else `None` (the caller takes the decimal path, which
/// also reports division by zero and overflow).
#[inline(always)]
fn int_arith(op: Arith, x: i64, y: i64) -> Option<i64> {
    match op {
        Arith::Add => x.checked_add(y),
        Arith::Sub => x.checked_sub(y),
        Arith::Mul => x.checked_mul(y),
        // Exact quotients only: 7/2 is 3.5, a decimal.
        Arith::Div => int_div_exact(x, y),
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
    /// `floor(a / b)` or `ceil(a / b)` (fused so that whole numbers never take the decimal
    /// path: `floor((Score-10)/2)` is the commonest formula in d20 data). Pops two values.
    DivRound {
        f: MathFn,
        div: Span,
        math: Span,
    },
    /// The same with a constant divisor: `top = f(top / k)`.
    DivRoundK {
        f: MathFn,
        k: Num,
        div: Span,
        math: Span,
    },
    /// The same with a constant dividend: `top = f(k / top)`.
    KDivRound {
        f: MathFn,
        k: Num,
        div: Span,
        math: Span,
    },
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
        Node::Text(a) => Node::Text(b(a)),
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
        Node::Const(crate::Value::Number(d)) => push(ops, Op::Const(Num::from_decimal(d)), depth, max_depth),
        Node::Var(slot) => push(ops, Op::Var(slot), depth, max_depth),
        Node::Neg(a) => {
            emit(*a, ops, depth, max_depth);
            ops.push(Op::Neg);
        }
        Node::Arith { op, lhs, rhs, span } => match (*lhs, *rhs) {
            (l, Node::Const(crate::Value::Number(k))) => {
                emit(l, ops, depth, max_depth);
                ops.push(Op::ArithK(op, Num::from_decimal(k), span));
            }
            (Node::Const(crate::Value::Number(k)), r) => {
                emit(r, ops, depth, max_depth);
                ops.push(Op::KArith(op, Num::from_decimal(k), span));
            }
            (l, r) => {
                emit(l, ops, depth, max_depth);
                emit(r, ops, depth, max_depth);
                ops.push(Op::Arith(op, span));
                *depth -= 1;
            }
        },
        Node::Math { f, arg, span: math } => match (f, *arg) {
            (MathFn::Floor | MathFn::Ceil, Node::Arith { op: Arith::Div, lhs, rhs, span: div }) => {
                match (*lhs, *rhs) {
                    (l, Node::Const(crate::Value::Number(k))) => {
                        emit(l, ops, depth, max_depth);
                        ops.push(Op::DivRoundK { f, k: Num::from_decimal(k), div, math });
                    }
                    (Node::Const(crate::Value::Number(k)), r) => {
                        emit(r, ops, depth, max_depth);
                        ops.push(Op::KDivRound { f, k: Num::from_decimal(k), div, math });
                    }
                    (l, r) => {
                        emit(l, ops, depth, max_depth);
                        emit(r, ops, depth, max_depth);
                        ops.push(Op::DivRound { f, div, math });
                        *depth -= 1;
                    }
                }
            }
            (f, arg) => {
                emit(arg, ops, depth, max_depth);
                ops.push(Op::Math(f, math));
            }
        },
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
            Op::Const(d) => num(d.to_decimal()),
            Op::Var(s) => Node::Var(s),
            Op::Tree(t) => *t,
            Op::Neg => Node::Neg(Box::new(pop())),
            Op::Arith(op, span) => {
                let r = pop();
                let l = pop();
                Node::Arith { op, lhs: Box::new(l), rhs: Box::new(r), span }
            }
            Op::ArithK(op, k, span) => {
                Node::Arith { op, lhs: Box::new(pop()), rhs: Box::new(num(k.to_decimal())), span }
            }
            Op::KArith(op, k, span) => {
                Node::Arith { op, lhs: Box::new(num(k.to_decimal())), rhs: Box::new(pop()), span }
            }
            Op::Math(f, span) => Node::Math { f, arg: Box::new(pop()), span },
            Op::DivRound { f, div, math } => {
                let r = pop();
                let l = pop();
                div_round_node(f, l, r, div, math)
            }
            Op::DivRoundK { f, k, div, math } => div_round_node(f, pop(), num(k.to_decimal()), div, math),
            Op::KDivRound { f, k, div, math } => div_round_node(f, num(k.to_decimal()), pop(), div, math),
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

fn div_round_node(f: MathFn, lhs: Node, rhs: Node, div: Span, math: Span) -> Node {
    let arg = Node::Arith { op: Arith::Div, lhs: Box::new(lhs), rhs: Box::new(rhs), span: div };
    Node::Math { f, arg: Box::new(arg), span: math }
}

fn stack_pop(stack: &mut Vec<Node>) -> Node {
    // Ops from a well-formed tree never pop an empty stack; a constant keeps this panic-free.
    stack.pop().unwrap_or(Node::Const(crate::Value::Number(Decimal::ZERO)))
}

impl Program {
    /// Runs the program.
    #[inline]
    pub(crate) fn run<C: EvalContext>(&self, ev: &mut Evaluator<'_, C>) -> EvalResult<Num> {
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
                    stack[sp] = ev.var_num(*slot)?;
                    sp += 1;
                }
                Op::Tree(node) => {
                    stack[sp] = Num::from_decimal(ev.num(node)?);
                    sp += 1;
                }
                Op::Neg => {
                    stack[sp - 1] = match stack[sp - 1] {
                        Num::Int(i) if i != i64::MIN => Num::Int(-i),
                        n => Num::from_decimal(-n.to_decimal()),
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
                        (f, n) => Num::from_decimal(ev.math_fn(*f, n.to_decimal(), *span)?),
                    }
                }
                Op::DivRound { f, div, math } => {
                    sp -= 1;
                    stack[sp - 1] = div_round(ev, *f, stack[sp - 1], stack[sp], *div, *math)?;
                }
                Op::DivRoundK { f, k, div, math } => {
                    stack[sp - 1] = div_round(ev, *f, stack[sp - 1], *k, *div, *math)?
                }
                Op::KDivRound { f, k, div, math } => {
                    stack[sp - 1] = div_round(ev, *f, *k, stack[sp - 1], *div, *math)?
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
        Ok(stack[0])
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
    ev.arith(op, a.to_decimal(), b.to_decimal(), span).map(Num::from_decimal)
}

/// `floor(a / b)` or `ceil(a / b)`: one hardware division for whole numbers, else the decimal
/// division (which reports division by zero at the `/`) and then the rounding.
#[inline(always)]
fn div_round<C: EvalContext>(
    ev: &Evaluator<'_, C>,
    f: MathFn,
    a: Num,
    b: Num,
    div: Span,
    math: Span,
) -> EvalResult<Num> {
    if let (Num::Int(x), Num::Int(y)) = (a, b) {
        let q = match f {
            MathFn::Ceil => int_div_ceil(x, y),
            _ => int_div_floor(x, y),
        };
        if let Some(q) = q {
            return Ok(Num::Int(q));
        }
    }
    let d = ev.arith(Arith::Div, a.to_decimal(), b.to_decimal(), div)?;
    Ok(Num::from_decimal(ev.math_fn(f, d, math)?))
}

/// One instruction of an [`IntProgram`]: the whole-number subset of a numeric program, flat
/// (one dispatch per instruction), small and `Copy` so a caller can lay many programs out in one
/// array. `K` marks a constant operand: `AddK(k)` is `top + k`, `KSub(k)` is `k - top`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOp {
    /// Pushes a constant.
    Const(i64),
    /// Pushes variable number `slot` of the formula (the order of `Formula::variables`). A
    /// caller that copies the program may renumber these to its own positions.
    Var(u32),
    Neg,
    Abs,
    /// Pop two values `a`, `b`; push `a op b`.
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    /// `floor(a / b)` and `ceil(a / b)`, popping two.
    FloorDiv,
    CeilDiv,
    AddK(i64),
    SubK(i64),
    MulK(i64),
    DivK(i64),
    RemK(i64),
    FloorDivK(i64),
    CeilDivK(i64),
    KSub(i64),
    KDiv(i64),
    KRem(i64),
    KFloorDiv(i64),
    KCeilDiv(i64),
    /// Pop `n` values; push the least or the greatest.
    Min(u32),
    Max(u32),
    /// Fused forms of `Var(slot)` (or `Const(k)`) followed by a binary instruction: the top
    /// combined with variable `slot` (or `k`) without a push. `AddVar(s)` is `top + var(s)`,
    /// `SubVar(s)` is `top - var(s)`; `MaxK(k)` is `max(top, k)`. The peephole pass of
    /// `Program::to_int` makes them; they cut the instructions of typical formulas
    /// (`A - B + C`, `max(A, B)`, `min(max(A, 1), 2)`) by a third or more.
    AddVar(u32),
    SubVar(u32),
    MulVar(u32),
    MinVar(u32),
    MaxVar(u32),
    MinK(i64),
    MaxK(i64),
}

impl IntOp {
    /// Whether this instruction reads and writes only the top of the stack (no push, no pop):
    /// a program whose first instruction pushes one value (`Var`, `Const`) and whose others are
    /// all such runs in one register, and a caller may run it step by step with
    /// [`IntOp::apply_top`].
    pub fn is_top_only(self) -> bool {
        !matches!(top_step(0, self, &|_| Some(0)), Top::NeedsStack)
    }

    /// This instruction applied to the top `acc`, reading variables through `read`; `None` when
    /// the whole-number path does not apply (as for [`run_int`]) or the instruction is not
    /// [top-only](IntOp::is_top_only).
    #[inline(always)]
    pub fn apply_top(self, acc: i64, read: impl Fn(u32) -> Option<i64>) -> Option<i64> {
        match top_step(acc, self, &read) {
            Top::Value(v) => Some(v),
            Top::Fails | Top::NeedsStack => None,
        }
    }

    /// The same instruction reading variable `f(slot)` instead of `slot` (for callers that
    /// copy a program and renumber its variables to their own positions).
    pub fn renumber(self, f: impl Fn(u32) -> u32) -> IntOp {
        match self {
            IntOp::Var(s) => IntOp::Var(f(s)),
            IntOp::AddVar(s) => IntOp::AddVar(f(s)),
            IntOp::SubVar(s) => IntOp::SubVar(f(s)),
            IntOp::MulVar(s) => IntOp::MulVar(f(s)),
            IntOp::MinVar(s) => IntOp::MinVar(f(s)),
            IntOp::MaxVar(s) => IntOp::MaxVar(f(s)),
            op => op,
        }
    }
}

/// A numeric program that only ever needs whole numbers, when its inputs are whole: the fastest
/// way to evaluate the formulas that fill game data (`floor((Score-10)/2)`, `Base + Ranks`).
///
/// [`run_int`] returns `None` whenever the whole-number path does not apply — an input that
/// is not a whole `i64`, a result that is not whole (7/2), overflow, division by zero — and the
/// caller then evaluates the formula the general way ([`crate::Formula::evaluate_num`]), which
/// gives the value or the precise error. When `run_int` answers, it is the value the general
/// way gives (a property test checks this).
pub type IntProgram = [IntOp];

impl Program {
    /// The whole-number form of this program, if every instruction has one (no decimal
    /// constant, no `^`, no tree).
    ///
    /// `arg` gives the instruction for `arg(n)` when this program is a user function's body
    /// applied to simple arguments (a variable or a whole constant each); `None` elsewhere.
    pub(crate) fn to_int(&self, arg: &dyn Fn(u32) -> Option<IntOp>) -> Option<Box<IntProgram>> {
        let whole = |n: &Num| match n {
            Num::Int(i) => Some(*i),
            Num::Dec(_) => None,
        };
        self.ops
            .iter()
            .map(|op| {
                Some(match op {
                    Op::Const(n) => IntOp::Const(whole(n)?),
                    Op::Var(s) => IntOp::Var(*s),
                    Op::Tree(node) => match **node {
                        Node::Arg(n) => arg(n)?,
                        _ => return None,
                    },
                    Op::Neg => IntOp::Neg,
                    Op::Arith(op, _) => match op {
                        Arith::Add => IntOp::Add,
                        Arith::Sub => IntOp::Sub,
                        Arith::Mul => IntOp::Mul,
                        Arith::Div => IntOp::Div,
                        Arith::Rem => IntOp::Rem,
                        Arith::Pow => return None,
                    },
                    Op::ArithK(op, n, _) => {
                        let k = whole(n)?;
                        match op {
                            Arith::Add => IntOp::AddK(k),
                            Arith::Sub => IntOp::SubK(k),
                            Arith::Mul => IntOp::MulK(k),
                            Arith::Div => IntOp::DivK(k),
                            Arith::Rem => IntOp::RemK(k),
                            Arith::Pow => return None,
                        }
                    }
                    Op::KArith(op, n, _) => {
                        let k = whole(n)?;
                        match op {
                            Arith::Add => IntOp::AddK(k),
                            Arith::Sub => IntOp::KSub(k),
                            Arith::Mul => IntOp::MulK(k),
                            Arith::Div => IntOp::KDiv(k),
                            Arith::Rem => IntOp::KRem(k),
                            Arith::Pow => return None,
                        }
                    }
                    Op::Math(MathFn::Abs, _) => IntOp::Abs,
                    // Whole numbers are their own floor, ceiling and rounding.
                    Op::Math(_, _) => IntOp::AddK(0),
                    Op::DivRound { f: MathFn::Ceil, .. } => IntOp::CeilDiv,
                    Op::DivRound { .. } => IntOp::FloorDiv,
                    Op::DivRoundK { f: MathFn::Ceil, k, .. } => IntOp::CeilDivK(whole(k)?),
                    Op::DivRoundK { k, .. } => IntOp::FloorDivK(whole(k)?),
                    Op::KDivRound { f: MathFn::Ceil, k, .. } => IntOp::KCeilDiv(whole(k)?),
                    Op::KDivRound { k, .. } => IntOp::KFloorDiv(whole(k)?),
                    Op::MinMax { max: true, n } => IntOp::Max(*n),
                    Op::MinMax { max: false, n } => IntOp::Min(*n),
                })
            })
            .collect::<Option<Vec<IntOp>>>()
            .map(|ops| fuse(&ops).into_boxed_slice())
    }
}

/// The peephole pass: a variable or constant pushed only to be combined with the value below
/// it at once becomes one fused instruction (see [`IntOp::AddVar`]); a no-op `AddK(0)` (the
/// floor of a whole number) goes. Every fusion computes exactly what the pair did.
fn fuse(ops: &[IntOp]) -> Vec<IntOp> {
    let mut out: Vec<IntOp> = Vec::with_capacity(ops.len());
    for &op in ops {
        let fused = match (out.last().copied(), op) {
            (_, IntOp::AddK(0)) => continue,
            (Some(IntOp::Var(s)), IntOp::Add) => IntOp::AddVar(s),
            (Some(IntOp::Var(s)), IntOp::Sub) => IntOp::SubVar(s),
            (Some(IntOp::Var(s)), IntOp::Mul) => IntOp::MulVar(s),
            (Some(IntOp::Var(s)), IntOp::Min(2)) => IntOp::MinVar(s),
            (Some(IntOp::Var(s)), IntOp::Max(2)) => IntOp::MaxVar(s),
            (Some(IntOp::Const(k)), IntOp::Min(2)) => IntOp::MinK(k),
            (Some(IntOp::Const(k)), IntOp::Max(2)) => IntOp::MaxK(k),
            _ => {
                out.push(op);
                continue;
            }
        };
        out.pop();
        out.push(fused);
    }
    out
}

/// Runs an [`IntProgram`], reading variables through `read` (by the number in `IntOp::Var`;
/// `None`: not a whole number). `None` when the whole-number path does not apply (see
/// [`IntProgram`]).
///
/// Most programs, once fused, push one operand and then only combine the top with constants
/// and variables (`A - B + C`, `floor(A / 2)`, `min(max(A, 1), 2)`): those run in a register,
/// with no stack at all. A program that needs the stack starts over on the general loop (the
/// program reads nothing but `read`, so running part of it twice changes nothing).
#[inline(always)]
pub fn run_int(ops: &IntProgram, read: impl Fn(u32) -> Option<i64>) -> Option<i64> {
    let (first, rest) = ops.split_first()?;
    let mut acc = match *first {
        IntOp::Var(s) => read(s)?,
        IntOp::Const(k) => k,
        _ => return run_stack(ops, &read),
    };
    for &op in rest {
        acc = match top_step(acc, op, &read) {
            Top::Value(v) => v,
            Top::Fails => return None,
            Top::NeedsStack => return run_stack(ops, &read),
        };
    }
    Some(acc)
}

/// What an instruction does to the top of the stack alone.
enum Top {
    Value(i64),
    /// Not whole, overflow, division by zero, an input without a whole value.
    Fails,
    /// The instruction pushes or pops.
    NeedsStack,
}

/// `op` applied to the top `acc`, for the instructions that read and write only the top.
#[inline(always)]
fn top_step(acc: i64, op: IntOp, read: &impl Fn(u32) -> Option<i64>) -> Top {
    let v = match op {
        IntOp::Neg => acc.checked_neg(),
        IntOp::Abs => acc.checked_abs(),
        IntOp::AddK(k) => acc.checked_add(k),
        IntOp::SubK(k) => acc.checked_sub(k),
        IntOp::MulK(k) => acc.checked_mul(k),
        IntOp::DivK(k) => int_div_exact(acc, k),
        IntOp::RemK(k) => acc.checked_rem(k),
        IntOp::FloorDivK(k) => int_div_floor(acc, k),
        IntOp::CeilDivK(k) => int_div_ceil(acc, k),
        IntOp::KSub(k) => k.checked_sub(acc),
        IntOp::KDiv(k) => int_div_exact(k, acc),
        IntOp::KRem(k) => k.checked_rem(acc),
        IntOp::KFloorDiv(k) => int_div_floor(k, acc),
        IntOp::KCeilDiv(k) => int_div_ceil(k, acc),
        IntOp::AddVar(s) => read(s).and_then(|x| acc.checked_add(x)),
        IntOp::SubVar(s) => read(s).and_then(|x| acc.checked_sub(x)),
        IntOp::MulVar(s) => read(s).and_then(|x| acc.checked_mul(x)),
        IntOp::MinVar(s) => read(s).map(|x| acc.min(x)),
        IntOp::MaxVar(s) => read(s).map(|x| acc.max(x)),
        IntOp::MinK(k) => Some(acc.min(k)),
        IntOp::MaxK(k) => Some(acc.max(k)),
        IntOp::Const(_)
        | IntOp::Var(_)
        | IntOp::Add
        | IntOp::Sub
        | IntOp::Mul
        | IntOp::Div
        | IntOp::Rem
        | IntOp::FloorDiv
        | IntOp::CeilDiv
        | IntOp::Min(_)
        | IntOp::Max(_) => return Top::NeedsStack,
    };
    match v {
        Some(v) => Top::Value(v),
        None => Top::Fails,
    }
}

/// [`run_int`] for any program: the general loop, with a stack.
fn run_stack(ops: &IntProgram, read: &impl Fn(u32) -> Option<i64>) -> Option<i64> {
    // The top of the stack lives in `acc` (a register), the rest in `stack`: most instructions
    // only touch the top, so values rarely go through memory. A push spills `acc` first; the
    // very first push spills a meaningless zero, which is why a finished program leaves exactly
    // one value in `stack`.
    let mut acc = 0i64;
    let mut stack = [0i64; MAX_STACK + 1];
    let mut sp = 0usize;
    // Programs come from well-formed trees within MAX_STACK (or were copied from such by a
    // caller); checked indexing keeps a malformed copy from panicking: it just fails.
    macro_rules! push {
        ($v:expr) => {{
            *stack.get_mut(sp)? = acc;
            sp += 1;
            acc = $v;
        }};
    }
    macro_rules! binary {
        ($f:expr) => {{
            sp = sp.checked_sub(1)?;
            acc = $f(*stack.get(sp)?, acc)?;
        }};
    }
    for &op in ops {
        match op {
            IntOp::Const(k) => push!(k),
            IntOp::Var(s) => push!(read(s)?),
            IntOp::Add => binary!(i64::checked_add),
            IntOp::Sub => binary!(i64::checked_sub),
            IntOp::Mul => binary!(i64::checked_mul),
            IntOp::Div => binary!(int_div_exact),
            IntOp::Rem => binary!(i64::checked_rem),
            IntOp::FloorDiv => binary!(int_div_floor),
            IntOp::CeilDiv => binary!(int_div_ceil),
            IntOp::Min(n) | IntOp::Max(n) => {
                // The other n - 1 operands are the top n - 1 entries of `stack`.
                let below = sp.checked_sub((n as usize).checked_sub(1)?)?;
                let max = matches!(op, IntOp::Max(_));
                for &v in stack.get(below..sp)? {
                    acc = if max { acc.max(v) } else { acc.min(v) };
                }
                sp = below;
            }
            op => match top_step(acc, op, read) {
                Top::Value(v) => acc = v,
                Top::Fails | Top::NeedsStack => return None,
            },
        }
    }
    if sp == 1 { Some(acc) } else { None }
}
