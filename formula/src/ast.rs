//! The syntax tree and its canonical printer.
//!
//! The tree is what the parser produces: it keeps names as written and the span of every node, and
//! drops parentheses (the shape of the tree records grouping). [`Expr`]'s `Display` prints the
//! canonical text: single spaces around binary operators, none inside calls, and exactly the
//! parentheses needed to parse back to the same tree.

use crate::span::Span;
use rust_decimal::Decimal;
use std::fmt;
use std::sync::Arc;

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Or,
    And,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
}

impl BinaryOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Or => "||",
            BinaryOp::And => "&&",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Gt => ">",
            BinaryOp::Le => "<=",
            BinaryOp::Ge => ">=",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::Pow => "^",
        }
    }

    /// Binding strength: higher binds tighter. `||` and `&&` share level 1 as in PCGen; unary
    /// minus is level 6 and `!` level 7, between `*` and `^`.
    pub fn level(self) -> u8 {
        match self {
            BinaryOp::Or | BinaryOp::And => 1,
            BinaryOp::Eq | BinaryOp::Ne => 2,
            BinaryOp::Lt | BinaryOp::Gt | BinaryOp::Le | BinaryOp::Ge => 3,
            BinaryOp::Add | BinaryOp::Sub => 4,
            BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => 5,
            BinaryOp::Pow => 8,
        }
    }
}

/// A unary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `!x`
    Not,
}

const LEVEL_NEG: u8 = 6;
const LEVEL_NOT: u8 = 7;
const LEVEL_ATOM: u8 = 9;

/// A node of the syntax tree.
#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    /// The text the node covers (for a binary node, from its left to its right operand).
    pub span: Span,
}

/// What a node is.
#[derive(Clone, Debug)]
pub enum ExprKind {
    /// A number literal, exactly as a decimal (the literal's own digits: `1.0` keeps scale 1).
    Number(Decimal),
    /// A string literal, without its quotes.
    Str(Arc<str>),
    /// A variable name as written.
    Var(Arc<str>),
    /// `op expr`; the node's span starts at the operator.
    Unary { op: UnaryOp, op_span: Span, expr: Box<Expr> },
    /// `lhs op rhs`
    Binary { op: BinaryOp, op_span: Span, lhs: Box<Expr>, rhs: Box<Expr> },
    /// `name(args)`
    Call { name: Arc<str>, name_span: Span, args: Vec<Expr> },
    /// `name[index]`
    Index { name: Arc<str>, name_span: Span, index: Box<Expr> },
}

impl Expr {
    fn level(&self) -> u8 {
        match &self.kind {
            ExprKind::Binary { op, .. } => op.level(),
            ExprKind::Unary { op: UnaryOp::Neg, .. } => LEVEL_NEG,
            ExprKind::Unary { op: UnaryOp::Not, .. } => LEVEL_NOT,
            _ => LEVEL_ATOM,
        }
    }

    /// Whether two trees are the same, ignoring spans and the spelling of numbers (`1.0` and
    /// `1.00` are the same literal value but not the same scale; scale is compared too).
    pub fn same_tree(&self, other: &Expr) -> bool {
        use ExprKind::*;
        match (&self.kind, &other.kind) {
            (Number(a), Number(b)) => a == b && a.scale() == b.scale(),
            (Str(a), Str(b)) | (Var(a), Var(b)) => a == b,
            (Unary { op: o1, expr: e1, .. }, Unary { op: o2, expr: e2, .. }) => o1 == o2 && e1.same_tree(e2),
            (Binary { op: o1, lhs: l1, rhs: r1, .. }, Binary { op: o2, lhs: l2, rhs: r2, .. }) => {
                o1 == o2 && l1.same_tree(l2) && r1.same_tree(r2)
            }
            (Call { name: n1, args: a1, .. }, Call { name: n2, args: a2, .. }) => {
                n1 == n2 && a1.len() == a2.len() && a1.iter().zip(a2).all(|(x, y)| x.same_tree(y))
            }
            (Index { name: n1, index: i1, .. }, Index { name: n2, index: i2, .. }) => {
                n1 == n2 && i1.same_tree(i2)
            }
            _ => false,
        }
    }

    /// Calls `f` on every variable name the tree reads (in `Var` and `Index` nodes), in order.
    pub fn for_each_name(&self, f: &mut impl FnMut(&Arc<str>, Span)) {
        match &self.kind {
            ExprKind::Number(_) | ExprKind::Str(_) => {}
            ExprKind::Var(n) => f(n, self.span),
            ExprKind::Unary { expr, .. } => expr.for_each_name(f),
            ExprKind::Binary { lhs, rhs, .. } => {
                lhs.for_each_name(f);
                rhs.for_each_name(f);
            }
            ExprKind::Call { args, .. } => args.iter().for_each(|a| a.for_each_name(f)),
            ExprKind::Index { name, name_span, index } => {
                f(name, *name_span);
                index.for_each_name(f);
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ExprKind::Number(d) => write!(f, "{d}"),
            ExprKind::Str(s) => write!(f, "\"{s}\""),
            ExprKind::Var(n) => f.write_str(n),
            ExprKind::Unary { op, expr, .. } => {
                let (sym, level) = match op {
                    UnaryOp::Neg => ("-", LEVEL_NEG),
                    UnaryOp::Not => ("!", LEVEL_NOT),
                };
                f.write_str(sym)?;
                // The operand of `-` is a `!` or `^` expression or an atom; of `!`, a `^` or an
                // atom. Anything looser, and any second unary operator, needs parentheses.
                let inner = expr.level();
                let bare = inner > level && !matches!(expr.kind, ExprKind::Unary { .. });
                write_operand(f, expr, !bare)
            }
            ExprKind::Binary { op, lhs, rhs, .. } => {
                let level = op.level();
                // Left-associative levels: the left operand may be at the same level, the right
                // one must bind tighter. Two exceptions keep the printed text unambiguous, as the
                // parser requires: a chained `^` and a mixed `&&`/`||` are parenthesized.
                let lhs_parens = lhs.level() < level
                    || (level == 8 && lhs.level() == 8)
                    || (level == 1 && matches!(&lhs.kind, ExprKind::Binary { op: l, .. } if l != op));
                let rhs_parens =
                    if *op == BinaryOp::Pow { rhs.level() != LEVEL_ATOM } else { rhs.level() <= level };
                write_operand(f, lhs, lhs_parens)?;
                if *op == BinaryOp::Pow {
                    f.write_str("^")?;
                } else {
                    write!(f, " {} ", op.symbol())?;
                }
                write_operand(f, rhs, rhs_parens)
            }
            ExprKind::Call { name, args, .. } => {
                write!(f, "{name}(")?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
            ExprKind::Index { name, index, .. } => write!(f, "{name}[{index}]"),
        }
    }
}

fn write_operand(f: &mut fmt::Formatter<'_>, e: &Expr, parens: bool) -> fmt::Result {
    if parens { write!(f, "({e})") } else { write!(f, "{e}") }
}
