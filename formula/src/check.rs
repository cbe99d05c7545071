//! The checker: syntax tree to a typed, folded, ready-to-evaluate tree.
//!
//! Checking resolves every name once — variables through [`Symbols`], functions through the
//! [`FunctionLibrary`] — and checks every operand and argument format, so evaluation never looks
//! anything up by name and never meets a format it does not expect. Subtrees that read no
//! variable are evaluated here and replaced by their value (constant folding).

use crate::ast::{BinaryOp, Expr, ExprKind, UnaryOp};
use crate::error::{ErrorCode, FormulaError};
use crate::format::Format;
use crate::function::{ArgInfo, Builtin, CallSite, FunctionDef, FunctionLibrary, UserFunction, arity_error};
use crate::span::Span;
use crate::tree::eval::{Evaluator, NoVariables};
use crate::tree::{Arith, Cmp, MathFn, Node};
use crate::value::Value;
use crate::{Symbols, VarId};
use std::sync::Arc;

/// A checked subtree and what is known about it.
pub(crate) struct Typed {
    pub node: Node,
    pub format: Format,
    /// Reads no variable, no `value()`, and calls no non-static external function.
    pub pure: bool,
    /// Reads `arg(n)` of the enclosing user function.
    pub uses_arg: bool,
}

impl Typed {
    fn constant(&self) -> Option<&Value> {
        match &self.node {
            Node::Const(v) => Some(v),
            _ => None,
        }
    }
}

/// A user function being expanded at a call site.
struct Frame {
    function: Arc<UserFunction>,
    args: Vec<Format>,
}

pub(crate) struct Checker<'a> {
    pub symbols: &'a dyn Symbols,
    pub library: &'a dyn FunctionLibrary,
    pub input: Option<&'a Format>,
    /// Distinct variables read, in first-use order: ids and names as written.
    pub vars: Vec<(VarId, Arc<str>, Format)>,
    pub uses_input: bool,
    frames: Vec<Frame>,
    /// Nodes produced so far, bounding user-function expansion.
    budget: usize,
    /// Current and maximum nesting while checking (user-function bodies nest inside calls).
    depth: usize,
    max_depth: usize,
}

const NODE_BUDGET: usize = 100_000;

fn mismatch(span: Span, what: &str, expected: &str, found: &Format) -> FormulaError {
    FormulaError::new(
        ErrorCode::FormatMismatch,
        span,
        format!("{what} must be {expected}, but this is {found}"),
    )
    .with_label(format!("this is {found}"))
}

impl<'a> Checker<'a> {
    pub fn new(
        symbols: &'a dyn Symbols,
        library: &'a dyn FunctionLibrary,
        input: Option<&'a Format>,
        max_depth: usize,
    ) -> Self {
        Checker {
            symbols,
            library,
            input,
            vars: Vec::new(),
            uses_input: false,
            frames: Vec::new(),
            budget: 0,
            depth: 0,
            max_depth,
        }
    }

    /// The slot of variable `id` (named `name`, of `format`): its existing one, or a new one.
    fn slot_of(&mut self, id: VarId, name: &Arc<str>, format: Format) -> (u32, Format) {
        if let Some(i) = self.vars.iter().position(|(v, _, _)| *v == id) {
            return (i as u32, format);
        }
        self.vars.push((id, name.clone(), format.clone()));
        ((self.vars.len() - 1) as u32, format)
    }

    /// "did you mean" the visible variable nearest to `name`.
    #[cold]
    fn suggest_variable(&self, name: &str) -> Option<String> {
        let mut names = Vec::new();
        self.symbols.names(&mut |n| names.push(n.to_owned()));
        crate::suggest::did_you_mean(name, names.iter().map(String::as_str))
    }

    fn variable_slot(&mut self, name: &Arc<str>, span: Span) -> Result<(u32, Format), FormulaError> {
        let Some((id, format)) = self.symbols.resolve(name) else {
            let mut err = FormulaError::new(
                ErrorCode::UnknownVariable,
                span,
                format!("unknown variable `{name}` in {}", self.symbols.scope_description()),
            )
            .with_label("not a variable visible here");
            if self.library.lookup(name).is_some() {
                err = err.with_help(format!("`{name}` is a function; call it as `{name}(...)`"));
            } else if name.eq_ignore_ascii_case("true") || name.eq_ignore_ascii_case("false") {
                err = err.with_help("formulas have no boolean literals; use a comparison such as `1 == 1`");
            } else if let Some(h) = self.suggest_variable(name) {
                err = err.with_help(h);
            }
            return Err(err);
        };
        Ok(self.slot_of(id, name, format))
    }

    /// Wraps a node, folding it to a constant when it reads nothing from outside.
    fn finish(
        &mut self,
        node: Node,
        format: Format,
        pure: bool,
        uses_arg: bool,
    ) -> Result<Typed, FormulaError> {
        self.budget += 1;
        if self.budget > NODE_BUDGET {
            return Err(FormulaError::new(
                ErrorCode::TooComplex,
                Span::default(),
                format!("formula expands to more than {NODE_BUDGET} nodes through user-defined functions"),
            ));
        }
        // An error while folding (such as `1/0`) is kept for evaluation time: the branch
        // holding it may never run.
        if pure
            && !uses_arg
            && !matches!(node, Node::Const(_))
            && let Ok(v) = Evaluator::new(&NoVariables, &[], None).eval(&node)
        {
            return Ok(Typed { node: Node::Const(v), format, pure, uses_arg });
        }
        Ok(Typed { node, format, pure, uses_arg })
    }

    pub fn check(&mut self, e: &Expr) -> Result<Typed, FormulaError> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(FormulaError::new(
                ErrorCode::TooComplex,
                e.span,
                format!(
                    "formula nests more than {} levels deep once user-defined functions are expanded",
                    self.max_depth
                ),
            ));
        }
        let r = self.check_node(e);
        self.depth -= 1;
        r
    }

    fn check_node(&mut self, e: &Expr) -> Result<Typed, FormulaError> {
        match &e.kind {
            ExprKind::Number(d) => self.finish(Node::Const(Value::Number(*d)), Format::Number, true, false),
            ExprKind::Str(s) => {
                self.finish(Node::Const(Value::String(s.clone())), Format::String, true, false)
            }
            ExprKind::Var(name) => {
                let (slot, format) = self.variable_slot(name, e.span)?;
                self.finish(Node::Var(slot), format, false, false)
            }
            ExprKind::Index { name, name_span, index } => {
                let (slot, format) = self.variable_slot(name, *name_span)?;
                let Some(element) = format.element().cloned() else {
                    return Err(FormulaError::new(
                        ErrorCode::ArrayMisuse,
                        *name_span,
                        format!("`{name}` is {format}, not an ARRAY, so it cannot be indexed"),
                    )
                    .with_label(format!("this is {format}")));
                };
                let idx = self.check(index)?;
                self.expect_number(&idx, index.span, "an array index")?;
                let uses_arg = idx.uses_arg;
                self.finish(
                    Node::Index { var: slot, index: Box::new(idx.node), span: e.span },
                    element,
                    false,
                    uses_arg,
                )
            }
            ExprKind::Unary { op, expr, .. } => {
                let inner = self.check(expr)?;
                let (pure, uses_arg) = (inner.pure, inner.uses_arg);
                match op {
                    UnaryOp::Neg => {
                        self.expect_number(&inner, expr.span, "the operand of unary `-`")?;
                        self.finish(Node::Neg(Box::new(inner.node)), Format::Number, pure, uses_arg)
                    }
                    UnaryOp::Not => {
                        self.expect_format(&inner, expr.span, "the operand of `!`", &Format::Boolean)?;
                        self.finish(Node::Not(Box::new(inner.node)), Format::Boolean, pure, uses_arg)
                    }
                }
            }
            ExprKind::Binary { op, op_span, lhs, rhs } => self.binary(*op, *op_span, lhs, rhs),
            ExprKind::Call { name, name_span, args } => match self.symbols.resolve_call(e) {
                None => self.call(e, name, *name_span, args),
                Some(Ok((id, format))) => {
                    let (slot, format) = self.slot_of(id, &Arc::from(e.to_string()), format);
                    self.finish(Node::Var(slot), format, false, false)
                }
                Some(Err(message)) => Err(FormulaError::new(ErrorCode::UnknownVariable, e.span, message)
                    .with_label("not available here")),
            },
        }
    }

    fn expect_number(&self, t: &Typed, span: Span, what: &str) -> Result<(), FormulaError> {
        self.expect_format(t, span, what, &Format::Number)
    }

    fn expect_format(
        &self,
        t: &Typed,
        span: Span,
        what: &str,
        expected: &Format,
    ) -> Result<(), FormulaError> {
        if &t.format == expected {
            return Ok(());
        }
        let mut err = mismatch(span, what, &expected.to_string(), &t.format);
        if matches!(t.format, Format::Array(_)) {
            err.code = ErrorCode::ArrayMisuse;
            err = err.with_help("index the array (`name[0]`) or use length(), isEmpty() or slice()");
        } else if *expected == Format::Number && t.format == Format::Boolean {
            err = err.with_help(
                "BOOLEAN and NUMBER are separate; use if(condition, 1, 0) to turn a condition into a number",
            );
        } else if *expected == Format::Boolean && t.format == Format::Number {
            err = err.with_help("BOOLEAN and NUMBER are separate; compare the number, e.g. `x != 0`");
        }
        Err(err)
    }

    fn binary(&mut self, op: BinaryOp, op_span: Span, lhs: &Expr, rhs: &Expr) -> Result<Typed, FormulaError> {
        let l = self.check(lhs)?;
        let r = self.check(rhs)?;
        let pure = l.pure && r.pure;
        let uses_arg = l.uses_arg || r.uses_arg;
        let sym = op.symbol();
        let (node, format) = match op {
            BinaryOp::Or | BinaryOp::And => {
                self.expect_format(&l, lhs.span, &format!("the left operand of `{sym}`"), &Format::Boolean)?;
                self.expect_format(&r, rhs.span, &format!("the right operand of `{sym}`"), &Format::Boolean)?;
                let (a, b) = (Box::new(l.node), Box::new(r.node));
                (if op == BinaryOp::Or { Node::Or(a, b) } else { Node::And(a, b) }, Format::Boolean)
            }
            BinaryOp::Eq | BinaryOp::Ne => {
                if l.format != r.format {
                    return Err(FormulaError::new(
                        ErrorCode::FormatMismatch,
                        lhs.span.to(rhs.span),
                        format!(
                            "`{sym}` compares two values of one format, but these are {} and {}",
                            l.format, r.format
                        ),
                    )
                    .with_label(format!("{} {sym} {}", l.format, r.format)));
                }
                (
                    Node::Eq { negate: op == BinaryOp::Ne, lhs: Box::new(l.node), rhs: Box::new(r.node) },
                    Format::Boolean,
                )
            }
            BinaryOp::Lt | BinaryOp::Gt | BinaryOp::Le | BinaryOp::Ge => {
                self.expect_number(&l, lhs.span, &format!("the left operand of `{sym}`"))?;
                self.expect_number(&r, rhs.span, &format!("the right operand of `{sym}`"))?;
                let c = match op {
                    BinaryOp::Lt => Cmp::Lt,
                    BinaryOp::Gt => Cmp::Gt,
                    BinaryOp::Le => Cmp::Le,
                    _ => Cmp::Ge,
                };
                (Node::Cmp { op: c, lhs: Box::new(l.node), rhs: Box::new(r.node) }, Format::Boolean)
            }
            BinaryOp::Add if l.format == Format::String && r.format == Format::String => {
                (Node::Concat(Box::new(l.node), Box::new(r.node)), Format::String)
            }
            _ => {
                let a = match op {
                    BinaryOp::Add => Arith::Add,
                    BinaryOp::Sub => Arith::Sub,
                    BinaryOp::Mul => Arith::Mul,
                    BinaryOp::Div => Arith::Div,
                    BinaryOp::Rem => Arith::Rem,
                    _ => Arith::Pow,
                };
                let both = if op == BinaryOp::Add { " (or two STRINGs)" } else { "" };
                for (t, side, span) in [(&l, "left", lhs.span), (&r, "right", rhs.span)] {
                    if t.format != Format::Number {
                        let mut err = mismatch(
                            span,
                            &format!("the {side} operand of `{sym}`"),
                            &format!("NUMBER{both}"),
                            &t.format,
                        );
                        if let Err(e) = self.expect_number(t, span, "") {
                            err.code = e.code;
                            err.help = e.help;
                        }
                        return Err(err);
                    }
                }
                (
                    Node::Arith { op: a, lhs: Box::new(l.node), rhs: Box::new(r.node), span: op_span },
                    Format::Number,
                )
            }
        };
        self.finish(node, format, pure, uses_arg)
    }

    fn call(
        &mut self,
        e: &Expr,
        name: &Arc<str>,
        name_span: Span,
        args: &[Expr],
    ) -> Result<Typed, FormulaError> {
        let Some(def) = self.library.lookup(name) else {
            let mut err = FormulaError::new(
                ErrorCode::UnknownFunction,
                name_span,
                format!("unknown function `{name}`"),
            )
            .with_label("no function of this name");
            if self.symbols.resolve(name).is_some() {
                err = err.with_help(format!("`{name}` is a variable; write it without parentheses"));
            } else {
                let mut names = Vec::new();
                self.library.names(&mut |n| names.push(n.to_owned()));
                if let Some(h) = crate::suggest::did_you_mean(name, names.iter().map(String::as_str)) {
                    err = err.with_help(h);
                }
            }
            return Err(err);
        };
        match def {
            FunctionDef::Builtin(b) => self.builtin(b, e, name, args),
            FunctionDef::User(f) => self.user_call(f, e, args),
            FunctionDef::External(f) => {
                let checked = args.iter().map(|a| self.check(a)).collect::<Result<Vec<_>, _>>()?;
                let infos: Vec<ArgInfo> = checked
                    .iter()
                    .zip(args)
                    .map(|(t, a)| ArgInfo {
                        format: t.format.clone(),
                        span: a.span,
                        constant: t.constant().cloned(),
                    })
                    .collect();
                let mut resolved: Vec<(Arc<str>, Span)> = Vec::new();
                let bound = {
                    let mut resolver = |n: &str, s: Span| {
                        let found = self.symbols.resolve(n).ok_or_else(|| {
                            FormulaError::new(
                                ErrorCode::UnknownVariable,
                                s,
                                format!("unknown variable `{n}` in {}", self.symbols.scope_description()),
                            )
                        })?;
                        resolved.push((Arc::from(n), s));
                        Ok(found)
                    };
                    let mut site = CallSite { name, span: e.span, args: &infos, resolver: &mut resolver };
                    f.bind(&mut site)?
                };
                let mut slots = Vec::with_capacity(resolved.len());
                for (n, s) in &resolved {
                    slots.push(self.variable_slot(n, *s)?);
                }
                // A plain read (`input("Rolled")`) is compiled as the variable it reads.
                if let (Some(var), [(n, _)]) = (bound.as_variable(), resolved.as_slice())
                    && self.symbols.resolve(n).is_some_and(|(id, _)| id == var)
                    && let [(slot, format)] = slots.as_slice()
                {
                    return self.finish(Node::Var(*slot), format.clone(), false, false);
                }
                let pure = bound.is_static() && checked.iter().all(|t| t.pure);
                let uses_arg = checked.iter().any(|t| t.uses_arg);
                let args: Box<[Node]> = checked.into_iter().map(|t| t.node).collect();
                let format = bound.format();
                self.finish(
                    Node::External { name: name.clone(), f: bound, args, span: e.span },
                    format,
                    pure,
                    uses_arg,
                )
            }
        }
    }

    fn arity(
        &self,
        name: &str,
        e: &Expr,
        args: &[Expr],
        min: usize,
        max: Option<usize>,
    ) -> Result<(), FormulaError> {
        let n = args.len();
        if n >= min && max.is_none_or(|m| n <= m) {
            return Ok(());
        }
        let expected = match max {
            Some(m) if m == min => min.to_string(),
            Some(m) => format!("{min} to {m}"),
            None => format!("{min} or more"),
        };
        Err(arity_error(name, e.span, &expected, n))
    }

    // long: one arm per built-in function, the table of their signatures in one place.
    fn builtin(
        &mut self,
        b: Builtin,
        e: &Expr,
        name: &Arc<str>,
        args: &[Expr],
    ) -> Result<Typed, FormulaError> {
        let fname = b.name();
        match b {
            Builtin::Abs | Builtin::Ceil | Builtin::Floor | Builtin::Round => {
                self.arity(fname, e, args, 1, Some(1))?;
                let a = self.check(&args[0])?;
                self.expect_number(&a, args[0].span, &format!("the argument of {fname}()"))?;
                let f = match b {
                    Builtin::Abs => MathFn::Abs,
                    Builtin::Ceil => MathFn::Ceil,
                    Builtin::Floor => MathFn::Floor,
                    _ => MathFn::Round,
                };
                let (pure, uses_arg) = (a.pure, a.uses_arg);
                self.finish(
                    Node::Math { f, arg: Box::new(a.node), span: e.span },
                    Format::Number,
                    pure,
                    uses_arg,
                )
            }
            Builtin::Min | Builtin::Max => {
                self.arity(fname, e, args, 2, None)?;
                let mut nodes = Vec::with_capacity(args.len());
                let (mut pure, mut uses_arg) = (true, false);
                for (i, a) in args.iter().enumerate() {
                    let t = self.check(a)?;
                    self.expect_number(&t, a.span, &format!("argument {} of {fname}()", i + 1))?;
                    pure &= t.pure;
                    uses_arg |= t.uses_arg;
                    nodes.push(t.node);
                }
                let node = Node::MinMax { max: b == Builtin::Max, args: nodes.into() };
                self.finish(node, Format::Number, pure, uses_arg)
            }
            Builtin::If => {
                self.arity(fname, e, args, 3, Some(3))?;
                let c = self.check(&args[0])?;
                self.expect_format(&c, args[0].span, "the condition of if()", &Format::Boolean)?;
                let t = self.check(&args[1])?;
                let f = self.check(&args[2])?;
                if t.format != f.format {
                    return Err(FormulaError::new(
                        ErrorCode::FormatMismatch,
                        args[1].span.to(args[2].span),
                        format!(
                            "both branches of if() must have one format, but they are {} and {}",
                            t.format, f.format
                        ),
                    )
                    .with_label(format!("{} and {}", t.format, f.format)));
                }
                let pure = c.pure && t.pure && f.pure;
                let uses_arg = c.uses_arg || t.uses_arg || f.uses_arg;
                let format = t.format.clone();
                let node =
                    Node::If { cond: Box::new(c.node), then: Box::new(t.node), otherwise: Box::new(f.node) };
                self.finish(node, format, pure, uses_arg)
            }
            Builtin::Value => {
                self.arity(fname, e, args, 0, Some(0))?;
                let Some(format) = self.input.cloned() else {
                    return Err(FormulaError::new(
                        ErrorCode::NoInput,
                        e.span,
                        "value() has no value here",
                    )
                    .with_label("only available in a modifier")
                    .with_help("value() is the modified variable's value so far; it exists only in a modifier's formula"));
                };
                self.uses_input = true;
                self.finish(Node::Input, format, false, false)
            }
            Builtin::Length | Builtin::IsEmpty => {
                self.arity(fname, e, args, 1, Some(1))?;
                let a = self.check(&args[0])?;
                self.expect_array(&a, args[0].span, fname)?;
                let (pure, uses_arg) = (a.pure, a.uses_arg);
                let (node, format) = if b == Builtin::Length {
                    (Node::Length(Box::new(a.node)), Format::Number)
                } else {
                    (Node::IsEmpty(Box::new(a.node)), Format::Boolean)
                };
                self.finish(node, format, pure, uses_arg)
            }
            Builtin::Text => {
                self.arity(fname, e, args, 1, Some(1))?;
                let a = self.check(&args[0])?;
                if !matches!(a.format, Format::Number | Format::Boolean | Format::String) {
                    return Err(FormulaError::new(
                        ErrorCode::FormatMismatch,
                        args[0].span,
                        format!("text() takes a NUMBER, BOOLEAN or STRING, but this is {}", a.format),
                    )
                    .with_label(format!("this is {}", a.format)));
                }
                let (pure, uses_arg) = (a.pure, a.uses_arg);
                self.finish(Node::Text(Box::new(a.node)), Format::String, pure, uses_arg)
            }
            Builtin::Slice => self.slice(e, args),
            Builtin::Arg => self.arg(e, name, args),
        }
    }

    fn expect_array(&self, t: &Typed, span: Span, fname: &str) -> Result<(), FormulaError> {
        if matches!(t.format, Format::Array(_)) {
            return Ok(());
        }
        Err(FormulaError::new(
            ErrorCode::FormatMismatch,
            span,
            format!("the first argument of {fname}() must be an ARRAY, but this is {}", t.format),
        )
        .with_label(format!("this is {}", t.format)))
    }

    fn slice(&mut self, e: &Expr, args: &[Expr]) -> Result<Typed, FormulaError> {
        self.arity("slice", e, args, 2, Some(3))?;
        let array = self.check(&args[0])?;
        self.expect_array(&array, args[0].span, "slice")?;
        let mut bounds = Vec::new();
        for (i, a) in args[1..].iter().enumerate() {
            let what = if i == 0 { "the start of slice()" } else { "the end of slice()" };
            let t = self.check(a)?;
            self.expect_number(&t, a.span, what)?;
            if let Some(Value::Number(d)) = t.constant()
                && (d.is_sign_negative() && !d.is_zero() || !d.fract().is_zero())
            {
                return Err(FormulaError::new(
                    ErrorCode::InvalidArgument,
                    a.span,
                    format!(
                        "{what} must be a whole number of 0 or more, but it is {}",
                        crate::value::canonical_decimal(*d)
                    ),
                ));
            }
            bounds.push((t, a.span));
        }
        if let [(s, _), (t, end_span)] = &bounds[..]
            && let (Some(Value::Number(start)), Some(Value::Number(end))) = (s.constant(), t.constant())
            && start >= end
        {
            return Err(FormulaError::new(
                ErrorCode::InvalidArgument,
                args[1].span.to(*end_span),
                format!(
                    "slice() from {} to {} is always empty: the end must be greater than the start",
                    crate::value::canonical_decimal(*start),
                    crate::value::canonical_decimal(*end)
                ),
            ));
        }
        let pure = array.pure && bounds.iter().all(|(t, _)| t.pure);
        let uses_arg = array.uses_arg || bounds.iter().any(|(t, _)| t.uses_arg);
        let format = array.format.clone();
        let mut it = bounds.into_iter().map(|(t, _)| Box::new(t.node));
        let (Some(start), end) = (it.next(), it.next()) else {
            unreachable!("arity was checked to be 2 or 3, so a start bound exists")
        };
        let node = Node::Slice { array: Box::new(array.node), start, end, span: e.span };
        self.finish(node, format, pure, uses_arg)
    }

    fn arg(&mut self, e: &Expr, name: &str, args: &[Expr]) -> Result<Typed, FormulaError> {
        let Some(frame) = self.frames.last() else {
            return Err(FormulaError::new(
                ErrorCode::BadArg,
                e.span,
                format!("`{name}(...)` is only allowed in the body of a user-defined function"),
            ));
        };
        // UserFunction::new validated every arg(n) of the body: one integer literal below arity.
        let Some(n) = crate::function::arg_index(args) else {
            unreachable!("UserFunction::new validated every arg() call of the body")
        };
        let format = frame.args[n].clone();
        self.finish(Node::Arg(n as u32), format, true, true)
    }

    fn user_call(&mut self, f: Arc<UserFunction>, e: &Expr, args: &[Expr]) -> Result<Typed, FormulaError> {
        if args.len() != f.arity() {
            return Err(arity_error(f.name(), e.span, &f.arity().to_string(), args.len()));
        }
        if let Some(pos) = self.frames.iter().position(|fr| Arc::ptr_eq(&fr.function, &f)) {
            let chain: Vec<&str> =
                self.frames[pos..].iter().map(|fr| fr.function.name()).chain([f.name()]).collect();
            return Err(FormulaError::new(
                ErrorCode::RecursiveFunction,
                e.span,
                format!("user-defined function `{}` calls itself: {}", f.name(), chain.join(" → ")),
            ));
        }
        let checked = args.iter().map(|a| self.check(a)).collect::<Result<Vec<_>, _>>()?;
        let formats = checked.iter().map(|t| t.format.clone()).collect();
        self.frames.push(Frame { function: f.clone(), args: formats });
        let body = self.check(f.body());
        self.frames.pop();
        let body = body.map_err(|inner| {
            let mut outer = FormulaError::new(
                inner.code,
                e.span,
                format!(
                    "in user-defined function `{}` (body `{}`), at `{}`: {}",
                    f.name(),
                    f.text(),
                    f.text().get(inner.span.range()).unwrap_or(""),
                    inner.message
                ),
            );
            outer.help = inner.help;
            outer
        })?;
        let pure = body.pure && checked.iter().all(|t| t.pure);
        let uses_arg = checked.iter().any(|t| t.uses_arg);
        let format = body.format.clone();
        let node = Node::User {
            name: Arc::from(f.name()),
            args: checked.into_iter().map(|t| t.node).collect(),
            body: Box::new(body.node),
            span: e.span,
        };
        self.finish(node, format, pure, uses_arg)
    }
}
