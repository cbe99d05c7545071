//! # sheetd-formula: the formula language
//!
//! This crate turns formula text such as `floor((Score-10)/2)` into a checked, immutable
//! [`Formula`] once, at load time, and evaluates it exactly (on [`rust_decimal::Decimal`]) as often
//! as needed, for any number of sheets and threads.
//!
//! The language is PCGen's formula language (see `docs/formula-language.md`): the same grammar,
//! formats, operators and functions, with exact arithmetic instead of floating point, errors that
//! point at the text, and two ambiguous shapes (`a||b&&c`, `2^3^2`) rejected with a request for
//! parentheses.
//!
//! ## What it does
//! - [`parse`]: text → syntax tree ([`ast::Expr`]), with spans; `Display` prints canonical text.
//! - [`Formula::compile`] / [`Compiler::compile`]: parse + check against a [`Symbols`] table
//!   (variable name → [`VarId`] and [`Format`] as visible where the formula is used) and a
//!   [`FunctionLibrary`]; constant subtrees are folded; the formula lists the variables it reads.
//! - [`Formula::evaluate`]: values come in through an [`EvalContext`]; the formula is never mutated.
//! - [`suggest`]: "did you mean" the nearest known name, for the hints of this crate's errors
//!   (unknown variables and functions) and the layers above.
//!
//! ## What it does not do
//! It knows nothing of scopes, modifiers, sheets or files: the solver implements [`Symbols`] and
//! [`EvalContext`] over its scoped variables, and the data layer adds formats and functions
//! through [`FormatType`] and [`ExternalFunction`].
//!
//! ## Main types
//! [`Formula`], [`Compiler`] (interning), [`Symbols`], [`EvalContext`], [`Format`], [`Value`],
//! [`Library`] and [`FunctionLibrary`], [`FormulaError`] with [`Stage`] and [`ErrorCode`].
//!
//! ```
//! use formula::{Compiler, Format, Library, Symbols, EvalContext, VarId, Value, CheckEnv};
//! use std::sync::Arc;
//!
//! struct OneVar;
//! impl Symbols for OneVar {
//!     fn resolve(&self, name: &str) -> Option<(VarId, Format)> {
//!         name.eq_ignore_ascii_case("Score").then_some((VarId(0), Format::Number))
//!     }
//! }
//! impl EvalContext for OneVar {
//!     fn value(&self, _: VarId) -> Option<Value> { Some(Value::Number(14.into())) }
//! }
//!
//! let compiler = Compiler::new(Arc::new(Library::new()));
//! let f = compiler.compile("floor((score-10)/2)", &CheckEnv::new(&OneVar)).unwrap();
//! assert_eq!(f.evaluate(&OneVar, None).unwrap(), Value::Number(2.into()));
//! assert_eq!(f.variable_names().collect::<Vec<_>>(), ["score"]);
//! ```

pub mod ast;
mod check;
mod error;
mod format;
mod function;
mod lexer;
pub mod number;
mod parser;
mod span;
pub mod suggest;
mod tree;
mod value;

pub use error::{ErrorCode, FormulaError, Stage};
pub use format::{CustomData, CustomFormat, Format, FormatRegistry, FormatType};
pub use function::{
    ArgInfo, BoundFunction, Builtin, CallSite, ExternalFunction, FunctionDef, FunctionLibrary, Library,
    UserFunction,
};
pub use number::Num;
pub use parser::{Limits, parse};
pub use span::Span;
pub use tree::program::{IntOp, IntProgram, run_int};
pub use value::{CustomValue, Value, canonical_decimal, parse_decimal};

use check::Checker;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use tree::Node;
use tree::eval::Evaluator;
use tree::program;

/// An opaque variable identity chosen by the [`Symbols`] implementation (for the solver, a
/// variable definition in a scope). The formula stores it; the [`EvalContext`] maps it to a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// Names visible where a formula is used: the load-time symbol table.
pub trait Symbols {
    /// The variable `name` (case-insensitive) as seen from here, with its format.
    fn resolve(&self, name: &str) -> Option<(VarId, Format)>;

    /// A call that this environment reads as a variable of its own: an aggregate over the
    /// instances of a scope (`count(PC.WORKER, Busy == 0)`), which the solver keeps as a
    /// variable. `Some(Ok)`: the variable and its format, read like any variable (`call` is
    /// then named by its canonical text); `Some(Err)`: why such a call is not available here;
    /// `None` (the default): an ordinary function call.
    fn resolve_call(&self, call: &ast::Expr) -> Option<Result<(VarId, Format), String>> {
        let _ = call;
        None
    }

    /// Calls `each` with every variable name visible here, for "did you mean" hints on an
    /// unknown name (a cold path). Defaults to none.
    fn names(&self, each: &mut dyn FnMut(&str)) {
        let _ = each;
    }

    /// Where "here" is, for messages: `scope PC.STAT`. Defaults to `this scope`.
    fn scope_description(&self) -> String {
        "this scope".to_owned()
    }

    /// An identity for this resolution environment: two tables with the same key resolve every
    /// name identically. When present, [`Compiler`] shares one compiled formula among all uses of
    /// the same text under the same key.
    fn cache_key(&self) -> Option<u64> {
        None
    }
}

/// Supplies variable values while a formula is evaluated.
pub trait EvalContext {
    /// The current value of variable `id`, or `None` if it has none (an evaluation error).
    fn value(&self, id: VarId) -> Option<Value>;

    /// The value of NUMBER variable `id` as a decimal. The default goes through
    /// [`EvalContext::value`]; implementations that store decimals can answer directly and save
    /// building a [`Value`] on the hot path.
    #[inline]
    fn number(&self, id: VarId) -> Option<rust_decimal::Decimal> {
        self.value(id).and_then(|v| v.as_number())
    }

    /// Reads NUMBER variable number `slot` of the formula being evaluated (the order of
    /// [`Formula::variables`]) by position: `Some(Some(n))` is its value, `Some(None)` means it
    /// has none. A context that resolved each formula's variables beforehand answers here and
    /// saves a search by id; the default `None` means "ask [`EvalContext::number`] by id".
    #[inline]
    fn num_at(&self, slot: usize) -> Option<Option<Num>> {
        let _ = slot;
        None
    }
}

/// Where a formula is being compiled: its symbols, the format of `value()` if it is a modifier,
/// and the format its result must have.
#[derive(Clone, Copy)]
pub struct CheckEnv<'a> {
    pub symbols: &'a dyn Symbols,
    /// The format `value()` returns (the modified variable's format); `None` outside modifiers.
    pub input: Option<&'a Format>,
    /// The format the result must have; `None` accepts any.
    pub expected: Option<&'a Format>,
}

impl<'a> CheckEnv<'a> {
    /// An environment with no `value()` and no required result format.
    pub fn new(symbols: &'a dyn Symbols) -> Self {
        CheckEnv { symbols, input: None, expected: None }
    }

    /// Sets the format of `value()`.
    pub fn with_input(mut self, input: &'a Format) -> Self {
        self.input = Some(input);
        self
    }

    /// Requires the result to have `format`.
    pub fn expecting(mut self, format: &'a Format) -> Self {
        self.expected = Some(format);
        self
    }
}

/// A parsed, checked, immutable formula. `Send + Sync`: one instance serves every sheet.
pub struct Formula {
    text: Arc<str>,
    tree: Arc<ast::Expr>,
    root: Node,
    format: Format,
    /// Variables read (both branches of `if`), distinct, in first-use order.
    vars: Box<[(VarId, Arc<str>)]>,
    var_formats: Box<[Format]>,
    is_static: bool,
    uses_input: bool,
    /// The whole-number form of a numeric program at the root, if it has one.
    int_program: Option<Box<program::IntProgram>>,
}

impl fmt::Debug for Formula {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Formula")
            .field("text", &self.text)
            .field("format", &self.format)
            .field("static", &self.is_static)
            .finish()
    }
}

impl Formula {
    /// Parses and checks `text` in `env`, without interning.
    pub fn compile(
        text: &str,
        library: &dyn FunctionLibrary,
        env: &CheckEnv<'_>,
        limits: &Limits,
    ) -> Result<Formula, FormulaError> {
        let tree = Arc::new(parse(text, limits)?);
        Self::from_tree(Arc::from(text), tree, library, env, limits)
    }

    fn from_tree(
        text: Arc<str>,
        tree: Arc<ast::Expr>,
        library: &dyn FunctionLibrary,
        env: &CheckEnv<'_>,
        limits: &Limits,
    ) -> Result<Formula, FormulaError> {
        // Parsing bounded the tree's own depth; expanding user functions may nest further.
        let mut checker = Checker::new(env.symbols, library, env.input, limits.max_depth + 16);
        let typed = checker.check(&tree)?;
        if let Some(expected) = env.expected
            && &typed.format != expected
        {
            return Err(FormulaError::new(
                ErrorCode::WrongResultFormat,
                tree.span,
                format!("this formula produces {}, but {expected} is required here", typed.format),
            )
            .with_label(format!("this is {}", typed.format)));
        }
        let (vars, var_formats): (Vec<_>, Vec<_>) =
            checker.vars.into_iter().map(|(id, name, format)| ((id, name), format)).unzip();
        let root = program::lower(typed.node);
        let int_program = match &root {
            Node::Program(p) => p.to_int(&|_| None),
            // A user function applied to variables and whole constants (`abilityMod(Score)`):
            // its body's program, each `arg(n)` read as the argument itself. Only the
            // whole-number form is inlined; general evaluation (and its errors, which name the
            // function) still goes through the call.
            Node::User { args, body, .. } => match &**body {
                Node::Program(p) => p.to_int(&|n| match args.get(n as usize)? {
                    Node::Var(slot) => Some(IntOp::Var(*slot)),
                    Node::Const(Value::Number(d)) => match Num::from_decimal(*d) {
                        Num::Int(k) => Some(IntOp::Const(k)),
                        Num::Dec(_) => None,
                    },
                    _ => None,
                }),
                _ => None,
            },
            // A read of one NUMBER variable (`SET STR`, an aggregate adding up its parts): the
            // one-instruction program, so that the solver's whole-number path takes it too.
            Node::Var(slot) if typed.format == Format::Number => Some(Box::from([IntOp::Var(*slot)])),
            _ => None,
        };
        Ok(Formula {
            is_static: typed.pure,
            uses_input: checker.uses_input,
            format: typed.format,
            int_program,
            root,
            vars: vars.into(),
            var_formats: var_formats.into(),
            text,
            tree,
        })
    }

    /// The text as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text as written, shared.
    pub fn text_arc(&self) -> &Arc<str> {
        &self.text
    }

    /// The syntax tree.
    pub fn tree(&self) -> &ast::Expr {
        &self.tree
    }

    /// The canonical text of the formula (parses back to the same tree).
    pub fn canonical(&self) -> String {
        self.tree.to_string()
    }

    /// The format of the result.
    pub fn format(&self) -> &Format {
        &self.format
    }

    /// Whether the formula reads no variable and no `value()`: its value never changes.
    pub fn is_static(&self) -> bool {
        self.is_static
    }

    /// The value of a static formula, computed at load (`None` if not static, or if evaluating
    /// it fails, as `1/0` does).
    pub fn static_value(&self) -> Option<&Value> {
        match &self.root {
            Node::Const(v) if self.is_static => Some(v),
            _ => None,
        }
    }

    /// The whole-number program of a NUMBER formula, when it has one: run it with
    /// [`run_int`] (see [`IntProgram`] for when it answers).
    pub fn int_program(&self) -> Option<&IntProgram> {
        self.int_program.as_deref()
    }

    /// Whether the formula calls `value()`.
    pub fn uses_input(&self) -> bool {
        self.uses_input
    }

    /// The variables the formula may read (both branches of every `if`), distinct, in order.
    pub fn variables(&self) -> impl ExactSizeIterator<Item = VarId> + '_ {
        self.vars.iter().map(|(id, _)| *id)
    }

    /// The names of [`Formula::variables`] as written in the formula.
    pub fn variable_names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.vars.iter().map(|(_, n)| &**n)
    }

    /// The formats of [`Formula::variables`].
    pub fn variable_formats(&self) -> &[Format] {
        &self.var_formats
    }

    /// Evaluates the formula. `input` is the value `value()` returns (the modified variable's
    /// value so far).
    pub fn evaluate<C: EvalContext>(&self, cx: &C, input: Option<&Value>) -> Result<Value, FormulaError> {
        match &self.root {
            Node::Const(v) => Ok(v.clone()),
            // The common shape: a numeric program at the root needs no tree dispatch.
            Node::Program(p) => p
                .run(&mut Evaluator::new(cx, &self.vars, input))
                .map(|n| Value::Number(n.to_decimal()))
                .map_err(|e| *e),
            root => Evaluator::new(cx, &self.vars, input).eval(root).map_err(|e| *e),
        }
    }

    /// Evaluates a NUMBER formula straight to a decimal (no [`Value`] built at the top).
    pub fn evaluate_number<C: EvalContext>(
        &self,
        cx: &C,
        input: Option<&Value>,
    ) -> Result<rust_decimal::Decimal, FormulaError> {
        self.evaluate_num(cx, input).map(Num::to_decimal)
    }

    /// Evaluates a NUMBER formula to a [`Num`]: whole numbers stay machine integers from the
    /// variables read to the result. The fastest way to evaluate.
    #[inline]
    pub fn evaluate_num<C: EvalContext>(&self, cx: &C, input: Option<&Value>) -> Result<Num, FormulaError> {
        let mut ev = Evaluator::new(cx, &self.vars, input);
        match &self.root {
            Node::Program(p) => p.run(&mut ev),
            root => ev.num(root).map(Num::from_decimal),
        }
        .map_err(|e| *e)
    }
}

type ParseResult = Result<Arc<ast::Expr>, FormulaError>;

/// The interning tables: looked up on every compilation (a step that adjusts a stock by a
/// formula compiles its text when it runs), so hashed with foldhash, several times faster than
/// SipHash on formula texts, still seeded per table.
type Interned<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A resolution environment a text was compiled in ([`Symbols::cache_key`], the input's and
/// the result's formats).
struct EnvKey {
    scope: u64,
    input: Option<Format>,
    expected: Option<Format>,
}

/// A text's compilations, one per environment.
type Compiled = Vec<(EnvKey, Arc<Formula>)>;

impl EnvKey {
    fn is(&self, scope: u64, env: &CheckEnv<'_>) -> bool {
        self.scope == scope && self.input.as_ref() == env.input && self.expected.as_ref() == env.expected
    }
}

/// Compiles formulas with a shared function library and limits, interning them: the same text
/// parses once, and compiles once per resolution environment ([`Symbols::cache_key`]).
pub struct Compiler {
    library: Arc<dyn FunctionLibrary>,
    limits: Limits,
    parsed: Mutex<Interned<Arc<str>, ParseResult>>,
    /// By text, then by environment (a text is nearly always compiled in one or two): a
    /// lookup hashes the text once, and parses nothing.
    compiled: Mutex<Interned<Arc<str>, Compiled>>,
}

impl Compiler {
    /// A compiler over `library` with default limits.
    pub fn new(library: Arc<dyn FunctionLibrary>) -> Self {
        Self::with_limits(library, Limits::default())
    }

    /// A compiler over `library` with `limits`.
    pub fn with_limits(library: Arc<dyn FunctionLibrary>, limits: Limits) -> Self {
        Compiler { library, limits, parsed: Mutex::default(), compiled: Mutex::default() }
    }

    /// The function library.
    pub fn library(&self) -> &Arc<dyn FunctionLibrary> {
        &self.library
    }

    /// The limits formulas are parsed under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Parses `text`, sharing the tree with earlier parses of the same text.
    pub fn parse(&self, text: &str) -> Result<(Arc<str>, Arc<ast::Expr>), FormulaError> {
        let mut parsed = self.parsed.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((k, r)) = parsed.get_key_value(text) {
            return r.clone().map(|t| (k.clone(), t));
        }
        let key: Arc<str> = Arc::from(text);
        let r = parse(text, &self.limits).map(Arc::new);
        parsed.insert(key.clone(), r.clone());
        r.map(|t| (key, t))
    }

    /// Parses and checks `text` in `env`, returning the shared instance for identical text in an
    /// identical environment.
    pub fn compile(&self, text: &str, env: &CheckEnv<'_>) -> Result<Arc<Formula>, FormulaError> {
        let scope = env.symbols.cache_key();
        if let Some(scope) = scope
            && let Some(list) = self.compiled.lock().unwrap_or_else(|p| p.into_inner()).get(text)
            && let Some((_, f)) = list.iter().find(|(k, _)| k.is(scope, env))
        {
            return Ok(f.clone());
        }
        let (text, tree) = self.parse(text)?;
        let f = Arc::new(Formula::from_tree(text.clone(), tree, &*self.library, env, &self.limits)?);
        if let Some(scope) = scope {
            let key = EnvKey { scope, input: env.input.cloned(), expected: env.expected.cloned() };
            let mut compiled = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
            let list = compiled.entry(text).or_default();
            // (Another thread may have compiled it meanwhile: one copy is kept.)
            if !list.iter().any(|(k, _)| k.is(scope, env)) {
                list.push((key, f.clone()));
            }
        }
        Ok(f)
    }

    /// How many distinct compiled formulas are interned.
    pub fn interned(&self) -> usize {
        self.compiled.lock().unwrap_or_else(|p| p.into_inner()).values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests;
