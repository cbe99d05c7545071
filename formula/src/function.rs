//! The function library: built-ins, user-defined functions, and functions added by later layers.
//!
//! The checker asks a [`FunctionLibrary`] trait object for every name called in a formula, so a
//! later layer adds functions (for example `input("CHANNEL")`) by wrapping or extending a
//! [`Library`], never by editing this crate. Three kinds of definition exist:
//!
//! - [`Builtin`]: the core functions, evaluated natively;
//! - [`UserFunction`]: a formula over `arg(n)` (`d20Mod` = `floor((arg(0)-10)/2)`), checked at
//!   every call site with the argument formats found there;
//! - [`ExternalFunction`]: anything else, bound at load time through a [`CallSite`] (which lets it
//!   resolve variables, so its reads become dependencies) and evaluated through [`BoundFunction`].

use crate::ast::{Expr, ExprKind};
use crate::error::{ErrorCode, FormulaError};
use crate::format::Format;
use crate::parser::{Limits, parse};
use crate::span::Span;
use crate::value::Value;
use crate::{EvalContext, VarId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The core functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    Abs,
    Ceil,
    Floor,
    Round,
    Min,
    Max,
    If,
    Value,
    Length,
    IsEmpty,
    Slice,
    Arg,
    Text,
}

impl Builtin {
    /// Every built-in.
    pub const ALL: [Builtin; 13] = [
        Builtin::Abs,
        Builtin::Ceil,
        Builtin::Floor,
        Builtin::Round,
        Builtin::Min,
        Builtin::Max,
        Builtin::If,
        Builtin::Value,
        Builtin::Length,
        Builtin::IsEmpty,
        Builtin::Slice,
        Builtin::Arg,
        Builtin::Text,
    ];

    /// The name as documented (calls match it case-insensitively).
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Abs => "abs",
            Builtin::Ceil => "ceil",
            Builtin::Floor => "floor",
            Builtin::Round => "round",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::If => "if",
            Builtin::Value => "value",
            Builtin::Length => "length",
            Builtin::IsEmpty => "isEmpty",
            Builtin::Slice => "slice",
            Builtin::Arg => "arg",
            Builtin::Text => "text",
        }
    }

    /// Finds a built-in by name, case-insensitively.
    pub fn lookup(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.name().eq_ignore_ascii_case(name))
    }
}

/// What a name in a call refers to.
#[derive(Clone)]
pub enum FunctionDef {
    /// A core function.
    Builtin(Builtin),
    /// A function whose body is a formula over `arg(n)`.
    User(Arc<UserFunction>),
    /// A function provided by a later layer.
    External(Arc<dyn ExternalFunction>),
}

/// Resolves function names. Implementations compare names case-insensitively.
pub trait FunctionLibrary: Send + Sync {
    /// The function called `name`, if any.
    fn lookup(&self, name: &str) -> Option<FunctionDef>;

    /// Calls `each` with every function's name, for "did you mean" hints on an unknown one (a
    /// cold path). Defaults to none.
    fn names(&self, each: &mut dyn FnMut(&str)) {
        let _ = each;
    }
}

/// A function added by a later layer (for example `input("CHANNEL")`).
pub trait ExternalFunction: Send + Sync {
    /// The function's name as documented.
    fn name(&self) -> &str;

    /// Checks one call at load time and returns what to evaluate. It sees the arguments' formats,
    /// spans and constant values, and may resolve variables through the [`CallSite`]; such
    /// variables become dependencies of the formula.
    fn bind(&self, site: &mut CallSite<'_>) -> Result<Arc<dyn BoundFunction>, FormulaError>;
}

/// One checked call of an [`ExternalFunction`], ready to evaluate.
pub trait BoundFunction: Send + Sync + fmt::Debug {
    /// The format of the call's result.
    fn format(&self) -> Format;

    /// Whether the result depends only on the arguments (so constant calls are folded at load).
    fn is_static(&self) -> bool {
        false
    }

    /// Evaluates the call. `read` gives the value of a variable resolved at bind time.
    fn eval(&self, args: &[Value], read: &dyn EvalContext) -> Result<Value, String>;

    /// `Some(var)` when the call is nothing but a read of variable `var`, resolved at bind time
    /// (a channel read such as `input("Rolled")`): the checker then compiles it as a plain
    /// variable, which whole-number programs and the solver's plan read directly. The call is
    /// never evaluated then; a read without a value fails as any variable's does.
    fn as_variable(&self) -> Option<crate::VarId> {
        None
    }
}

/// Resolves a variable name at a call site and records it as a dependency.
pub(crate) type Resolver<'a> = dyn FnMut(&str, Span) -> Result<(VarId, Format), FormulaError> + 'a;

/// What an [`ExternalFunction`] sees of a call while binding it.
pub struct CallSite<'a> {
    pub(crate) name: &'a str,
    pub(crate) span: Span,
    pub(crate) args: &'a [ArgInfo],
    pub(crate) resolver: &'a mut Resolver<'a>,
}

/// One argument of a call being bound.
#[derive(Clone, Debug)]
pub struct ArgInfo {
    /// The argument's format.
    pub format: Format,
    /// Where the argument is in the formula.
    pub span: Span,
    /// The argument's value when it is constant (`"STATSCORE"`, `3`).
    pub constant: Option<Value>,
}

impl CallSite<'_> {
    /// The function name as written at the call.
    pub fn name(&self) -> &str {
        self.name
    }

    /// The span of the whole call.
    pub fn span(&self) -> Span {
        self.span
    }

    /// The arguments.
    pub fn args(&self) -> &[ArgInfo] {
        self.args
    }

    /// Resolves a variable name as seen from the formula's place, and records it as a dependency.
    pub fn resolve_variable(&mut self, name: &str, span: Span) -> Result<(VarId, Format), FormulaError> {
        (self.resolver)(name, span)
    }

    /// An error for an argument count other than `expected`, or `Ok` if it matches.
    pub fn expect_arity(&self, expected: usize) -> Result<(), FormulaError> {
        if self.args.len() == expected {
            return Ok(());
        }
        Err(arity_error(self.name, self.span, &expected.to_string(), self.args.len()))
    }
}

pub(crate) fn arity_error(name: &str, span: Span, expected: &str, got: usize) -> FormulaError {
    FormulaError::new(
        ErrorCode::WrongArgumentCount,
        span,
        format!(
            "function `{name}` takes {expected} argument{}, but {got} {} given",
            if expected == "1" { "" } else { "s" },
            if got == 1 { "was" } else { "were" }
        ),
    )
    .with_label(format!("{got} argument{}", if got == 1 { "" } else { "s" }))
}

/// A function defined by a formula over `arg(0)`, `arg(1)`, …
#[derive(Debug)]
pub struct UserFunction {
    name: Arc<str>,
    text: Arc<str>,
    body: Expr,
    arity: usize,
}

impl UserFunction {
    /// Parses and validates a definition. The body's `arg(n)` calls must each have one
    /// non-negative integer literal; the arity is the highest `n` plus one.
    pub fn new(name: &str, body: &str, limits: &Limits) -> Result<UserFunction, FormulaError> {
        let body_expr = parse(body, limits)?;
        let mut max_arg: Option<usize> = None;
        let mut bad: Option<FormulaError> = None;
        visit_args(&body_expr, &mut |call: &Expr, args: &[Expr]| match arg_index(args) {
            Some(n) => max_arg = Some(max_arg.map_or(n, |m: usize| m.max(n))),
            _ => {
                bad.get_or_insert_with(|| {
                    FormulaError::new(
                        ErrorCode::BadArg,
                        call.span,
                        "`arg` takes one integer literal from 0 to 255",
                    )
                    .with_help("write `arg(0)` for the first argument, `arg(1)` for the second")
                });
            }
        });
        if let Some(e) = bad {
            return Err(e);
        }
        Ok(UserFunction {
            name: Arc::from(name),
            text: Arc::from(body),
            body: body_expr,
            arity: max_arg.map_or(0, |m| m + 1),
        })
    }

    /// The function's name as defined.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The body as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The parsed body.
    pub fn body(&self) -> &Expr {
        &self.body
    }

    /// How many arguments every call must pass.
    pub fn arity(&self) -> usize {
        self.arity
    }
}

/// The `n` of `arg(n)` when its arguments are one integer literal from 0 to 255.
pub(crate) fn arg_index(args: &[Expr]) -> Option<usize> {
    match args {
        [Expr { kind: ExprKind::Number(d), .. }] if d.fract().is_zero() && !d.is_sign_negative() => {
            // The scale is at most 28, so 10^scale fits in i128.
            usize::try_from(d.mantissa() / 10i128.pow(d.scale())).ok().filter(|n| *n < 256)
        }
        _ => None,
    }
}

fn visit_args(e: &Expr, f: &mut impl FnMut(&Expr, &[Expr])) {
    match &e.kind {
        ExprKind::Call { name, args, .. } => {
            if name.eq_ignore_ascii_case("arg") {
                f(e, args);
            }
            args.iter().for_each(|a| visit_args(a, f));
        }
        ExprKind::Unary { expr, .. } => visit_args(expr, f),
        ExprKind::Binary { lhs, rhs, .. } => {
            visit_args(lhs, f);
            visit_args(rhs, f);
        }
        ExprKind::Index { index, .. } => visit_args(index, f),
        ExprKind::Number(_) | ExprKind::Str(_) | ExprKind::Var(_) => {}
    }
}

/// The standard library: the built-ins plus user-defined and external functions.
#[derive(Clone, Default)]
pub struct Library {
    user: HashMap<String, Arc<UserFunction>>,
    external: HashMap<String, Arc<dyn ExternalFunction>>,
    limits: Limits,
}

impl Library {
    /// A library with the built-ins only.
    pub fn new() -> Self {
        Self::default()
    }

    /// A library with the built-ins only, parsing user function bodies under `limits`.
    pub fn with_limits(limits: Limits) -> Self {
        Library { limits, ..Self::default() }
    }

    fn check_new_name(&self, name: &str) -> Result<String, FormulaError> {
        let whole = Span::new(0, name.len().min(u32::MAX as usize) as u32);
        let is_name = crate::lexer::tokenize(name)
            .map(|t| {
                t.len() == 2 && t[0].kind == crate::lexer::TokenKind::Name && t[0].span.len() == name.len()
            })
            .unwrap_or(false);
        if !is_name {
            return Err(FormulaError::new(
                ErrorCode::BadFunctionDefinition,
                whole,
                format!("`{name}` is not a valid function name"),
            )
            .with_help("a name starts with a letter and holds letters, digits, `_`, `.`, `:`, `~`"));
        }
        if let Some(b) = Builtin::lookup(name) {
            return Err(FormulaError::new(
                ErrorCode::BadFunctionDefinition,
                whole,
                format!("`{name}` is the built-in function `{}` and cannot be redefined", b.name()),
            ));
        }
        let key = name.to_ascii_lowercase();
        if self.user.contains_key(&key) || self.external.contains_key(&key) {
            return Err(FormulaError::new(
                ErrorCode::BadFunctionDefinition,
                whole,
                format!("function `{name}` is already defined"),
            ));
        }
        Ok(key)
    }

    /// Defines a user function `name` whose body is `body` (a formula over `arg(n)`). Errors in
    /// the body carry spans into `body`.
    pub fn define(&mut self, name: &str, body: &str) -> Result<Arc<UserFunction>, FormulaError> {
        let key = self.check_new_name(name)?;
        let f = Arc::new(UserFunction::new(name, body, &self.limits)?);
        self.user.insert(key, f.clone());
        Ok(f)
    }

    /// Adds a function implemented by a later layer.
    pub fn add_external(&mut self, f: Arc<dyn ExternalFunction>) -> Result<(), FormulaError> {
        let key = self.check_new_name(f.name())?;
        self.external.insert(key, f);
        Ok(())
    }

    /// The user-defined functions, in no particular order.
    pub fn user_functions(&self) -> impl Iterator<Item = &Arc<UserFunction>> {
        self.user.values()
    }
}

impl FunctionLibrary for Library {
    fn lookup(&self, name: &str) -> Option<FunctionDef> {
        if let Some(b) = Builtin::lookup(name) {
            return Some(FunctionDef::Builtin(b));
        }
        let key = name.to_ascii_lowercase();
        if let Some(u) = self.user.get(&key) {
            return Some(FunctionDef::User(u.clone()));
        }
        self.external.get(&key).map(|e| FunctionDef::External(e.clone()))
    }

    fn names(&self, each: &mut dyn FnMut(&str)) {
        Builtin::ALL.iter().for_each(|b| each(b.name()));
        self.user.values().for_each(|u| each(&u.name));
        self.external.values().for_each(|e| each(e.name()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arity_is_highest_arg_plus_one() {
        let l = Limits::default();
        assert_eq!(UserFunction::new("f", "floor((arg(0)-10)/2)", &l).unwrap().arity(), 1);
        assert_eq!(UserFunction::new("f", "arg(2)+arg(0)", &l).unwrap().arity(), 3);
        assert_eq!(UserFunction::new("f", "3", &l).unwrap().arity(), 0);
        for bad in ["arg(-1)", "arg(1.5)", "arg(a)", "arg()", "arg(0,1)", "arg(1000)"] {
            let e = UserFunction::new("f", bad, &l).unwrap_err();
            assert_eq!(e.code, ErrorCode::BadArg, "{bad}");
        }
    }

    #[test]
    fn definitions_are_validated() {
        let mut lib = Library::new();
        lib.define("d20Mod", "floor((arg(0)-10)/2)").unwrap();
        assert!(matches!(lib.lookup("D20MOD"), Some(FunctionDef::User(_))));
        assert!(matches!(lib.lookup("FLOOR"), Some(FunctionDef::Builtin(Builtin::Floor))));
        assert!(lib.lookup("nope").is_none());
        let code = |r: Result<Arc<UserFunction>, FormulaError>| r.unwrap_err().code;
        assert_eq!(code(lib.define("d20mod", "1")), ErrorCode::BadFunctionDefinition);
        assert_eq!(code(lib.define("Floor", "1")), ErrorCode::BadFunctionDefinition);
        assert_eq!(code(lib.define("two words ", "1")), ErrorCode::BadFunctionDefinition);
        assert_eq!(code(lib.define("1abc", "1")), ErrorCode::BadFunctionDefinition);
        assert_eq!(code(lib.define("g", "1+")), ErrorCode::UnexpectedEnd);
    }
}
