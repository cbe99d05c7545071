//! Rules: scope definitions, variable declarations, format defaults, the function library and
//! aggregates.
//!
//! Built once with [`RulesBuilder`], then immutable and shared (`Arc<Rules>`) by every sheet.
//! Formulas are compiled against a scope through [`Rules::compile`], which resolves names through
//! the scope and its ancestors and interns identical text per scope.
//!
//! **Aggregates.** `count(SCOPE[, WHERE])`, `sum(SCOPE, EXPR[, WHERE])`, `min(…)` and `max(…)`
//! range over every instance of `SCOPE` on a sheet. Each one a ruleset writes is declared before
//! the rules are built ([`RulesBuilder::declare_aggregates`]) as a global NUMBER variable named
//! by its canonical text, with `EXPR` and `WHERE` compiled in `SCOPE`; a formula that calls it
//! reads that variable ([`Symbols::resolve_call`]). The sheet keeps it up to date with one
//! modifier per instance (see `Sheet`'s instances), so membership and the values `WHERE` reads
//! are dependencies like any other.

use crate::Map;
use crate::error::{SolveError, codes};
use crate::modifier::Instruction;
use formula::{
    CheckEnv, Compiler, Format, FormatRegistry, FormatType, Formula, Library, Symbols, Value, VarId,
};
use std::collections::HashMap;
use std::sync::Arc;

/// A scope definition (`PC`, `PC.EQUIPMENT`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeId(pub u32);

/// A declared variable: a name in a scope. Also the formula layer's [`VarId`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarDefId(pub u32);

impl From<VarDefId> for VarId {
    fn from(v: VarDefId) -> VarId {
        VarId(v.0)
    }
}

/// A scope definition.
#[derive(Debug)]
pub struct ScopeDef {
    /// The full name, e.g. `PC.EQUIPMENT`.
    pub name: Arc<str>,
    /// The parent scope; `None` for the global scope.
    pub parent: Option<ScopeId>,
    /// The variables declared in this scope, in declaration order.
    pub vars: Vec<VarDefId>,
}

/// The order a variable's modifiers apply in, at one user priority.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Order {
    /// PCGen's: by inherent priority (SET, MULTIPLY, DIVIDE, ADD, MAX, MIN), ties in the order
    /// they were added.
    #[default]
    Inherent,
    /// In the order they were added, whatever their type: `+200` then `x2` on 300 gives 1000.
    Applied,
}

impl Order {
    /// The order named `name` (`inherent` or `applied`, any case).
    pub fn named(name: &str) -> Option<Order> {
        if name.eq_ignore_ascii_case("inherent") {
            Some(Order::Inherent)
        } else if name.eq_ignore_ascii_case("applied") {
            Some(Order::Applied)
        } else {
            None
        }
    }

    /// Its name, as [`Order::named`] reads it.
    pub fn name(self) -> &'static str {
        match self {
            Order::Inherent => "inherent",
            Order::Applied => "applied",
        }
    }

    /// Where a modifier of type `kind` ranks at one user priority, before its insertion order:
    /// its inherent priority, or 0 for every type when modifiers apply as added.
    pub fn rank(self, kind: crate::ModKind) -> u8 {
        match self {
            Order::Inherent => kind.inherent_priority(),
            Order::Applied => 0,
        }
    }
}

/// A variable declaration.
#[derive(Debug)]
pub struct VarDef {
    /// The name as first declared (names compare case-insensitively).
    pub name: Arc<str>,
    pub scope: ScopeId,
    pub format: Format,
    /// Locked variables accept no modifiers from data.
    pub locked: bool,
    /// Position in its scope's `vars`.
    pub index: u32,
    /// The order its modifiers apply in (see [`RulesBuilder::set_order`]).
    pub order: Order,
    /// Set for the variable of an aggregate: what it computes.
    pub aggregate: Option<AggKind>,
    /// For a STRING variable that holds an instance's id: the scope of the instances it holds
    /// (see [`RulesBuilder::set_holds`]).
    pub holds: Option<ScopeId>,
}

impl VarDef {
    /// Whether an aggregate, a reference or a read through a holder keeps this variable: its
    /// modifiers come and go with instances, never by id or source.
    pub fn is_kept(&self) -> bool {
        self.aggregate.is_some()
    }
}

/// What an aggregate computes over the instances of its scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggKind {
    /// How many instances pass `WHERE` (0 for none).
    Count,
    /// The sum of `EXPR` over the instances that pass (0 for none).
    Sum,
    /// The least `EXPR` (no value for none: `solver.empty_aggregate`).
    Min,
    /// The greatest `EXPR` (no value for none).
    Max,
    /// A read of one instance's variable, `@id.Var`: its value while instance `id` is on the
    /// sheet, no value otherwise.
    Ref,
    /// A read through a variable that holds an instance's id, `creature.STR`: its value while
    /// the instance it names is on the sheet, no value otherwise.
    Via,
}

impl AggKind {
    /// The aggregate a call of `name` is (case-insensitive), if it is one (`Ref` is not a call).
    pub fn named(name: &str) -> Option<AggKind> {
        [AggKind::Count, AggKind::Sum, AggKind::Min, AggKind::Max]
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(name))
    }

    pub fn name(self) -> &'static str {
        match self {
            AggKind::Count => "count",
            AggKind::Sum => "sum",
            AggKind::Min => "min",
            AggKind::Max => "max",
            AggKind::Ref => "ref",
            AggKind::Via => "via",
        }
    }

    /// Whether the aggregate starts from its first member's value, not from 0.
    pub fn starts_empty(self) -> bool {
        matches!(self, AggKind::Min | AggKind::Max | AggKind::Ref | AggKind::Via)
    }
}

/// An aggregate over the instances of a scope, kept as a global variable.
#[derive(Debug)]
pub struct Aggregate {
    pub kind: AggKind,
    /// The scope whose instances it ranges over.
    pub scope: ScopeId,
    /// Its variable (global, NUMBER, named by `text`).
    pub var: VarDefId,
    /// Its canonical text: `count(PC.WORKER, Busy == 0)`.
    pub text: Arc<str>,
    /// What an instance contributes (none for `count`), compiled in `scope`.
    pub expr: Option<Arc<Formula>>,
    /// Which instances count (none: all), compiled in `scope`.
    pub filter: Option<Arc<Formula>>,
    /// For a `sum`, or a `count` with a filter: each instance's part, kept in a variable of
    /// the instance, so that a change in one instance evaluates its part alone and the
    /// aggregate adds the parts up (a whole-number pass the plan makes, not a formula per
    /// instance).
    pub part: Option<Part>,
}

/// An instance's part in an aggregate: variable `part of TEXT` in the aggregate's scope, SET to
/// `value` (`if(WHERE, EXPR, 0)`, `if(WHERE, 1, 0)`, or `EXPR`), which the aggregate's
/// modifier from the instance adds (`read`).
#[derive(Debug)]
pub struct Part {
    pub var: VarDefId,
    pub value: Arc<Formula>,
    /// A formula that reads `var` (and nothing else).
    pub read: Arc<Formula>,
}

/// A read of another instance's variable, `@id.Var`, kept as a global variable named so.
#[derive(Debug)]
pub struct Reference {
    /// The instance's key, `id`.
    pub key: Arc<str>,
    /// Its variable (global, of the read variable's format, named `@id.Var`).
    pub var: VarDefId,
    /// The variable read, compiled as a formula in each scope where the name resolves.
    pub reads: Vec<(ScopeId, Arc<Formula>)>,
    /// The scope the instance must be of (PCGen's `getOther("PC.STAT", "STR", Score)`); `None`
    /// for `@id.Var`, which reads the instance whatever its scope.
    pub within: Option<ScopeId>,
}

/// A read through a variable that holds an instance's id, `creature.STR`, kept as a variable
/// of the holder's scope named so: each instance of that scope gets it, SET by a modifier from
/// the instance its holder names, re-linked when the holder's value changes (see the solver's
/// `sheet/pointers.rs`).
#[derive(Debug)]
pub struct Pointer {
    /// The variable that holds the id (`creature`, STRING, in the holder's scope).
    pub holder: VarDefId,
    /// Its own variable (`creature.STR`, in the holder's scope, of the read variable's format).
    pub var: VarDefId,
    /// The scope of the instances the holder holds.
    pub held: ScopeId,
    /// The variable read (`STR`), compiled in `held`.
    pub read: Arc<Formula>,
}

/// A reference declared: its variable, the instance's key, the name read, the scope the
/// instance must be of.
type PendingReference = (VarDefId, Arc<str>, Arc<str>, Option<ScopeId>);

/// An aggregate declared, its formulas not compiled yet.
struct PendingAggregate {
    kind: AggKind,
    scope: ScopeId,
    var: VarDefId,
    text: Arc<str>,
    expr: Option<String>,
    filter: Option<String>,
    part: Option<VarDefId>,
}

/// Builds [`Rules`]: scopes, variables, defaults, functions.
pub struct RulesBuilder {
    scopes: Vec<ScopeDef>,
    scope_names: Map<String, ScopeId>,
    vars: Vec<VarDef>,
    var_names: HashMap<String, Vec<VarDefId>>,
    defaults: HashMap<Format, Value>,
    library: Library,
    formats: FormatRegistry,
    /// The variables whose order was set (see [`RulesBuilder::set_order`]).
    ordered: std::collections::HashSet<VarDefId>,
    /// Aggregates declared, by canonical text in lower case.
    aggregates: Vec<PendingAggregate>,
    aggregate_names: Map<String, usize>,
    /// References declared (`@id.Var`, `getOther`): the variable, the key, the name read, the
    /// scope the instance must be of.
    references: Vec<PendingReference>,
    /// Reads through holders declared (`creature.STR`): the variable, the holder, the name read.
    pointers: Vec<(VarDefId, VarDefId, Arc<str>)>,
}

impl RulesBuilder {
    /// Rules with one global scope named `global` (PCGen: `PC`).
    pub fn new(global: &str) -> Self {
        let mut b = RulesBuilder {
            scopes: Vec::new(),
            scope_names: Map::default(),
            vars: Vec::new(),
            var_names: HashMap::new(),
            defaults: HashMap::new(),
            library: Library::new(),
            formats: FormatRegistry::new(),
            ordered: Default::default(),
            aggregates: Vec::new(),
            aggregate_names: Map::default(),
            references: Vec::new(),
            pointers: Vec::new(),
        };
        b.scope_names.insert(global.to_ascii_uppercase(), ScopeId(0));
        b.scopes.push(ScopeDef { name: Arc::from(global), parent: None, vars: Vec::new() });
        b
    }

    /// The scope named `name` (case-insensitive).
    pub fn scope(&self, name: &str) -> Result<ScopeId, SolveError> {
        lookup_scope(&self.scope_names, &self.scopes, name)
    }

    /// Adds a scope under `parent`. Adding the same scope under the same parent again is
    /// harmless; under another parent it is an error.
    pub fn add_scope(&mut self, name: &str, parent: &str) -> Result<ScopeId, SolveError> {
        let parent_id = self.scope(parent)?;
        if let Some(&existing) = self.scope_names.get(&name.to_ascii_uppercase()) {
            if self.scopes[existing.0 as usize].parent == Some(parent_id) {
                return Ok(existing);
            }
            return Err(SolveError::new(
                codes::DUPLICATE_SCOPE,
                format!("scope `{name}` is already defined with another parent"),
            ));
        }
        let id = ScopeId(self.scopes.len() as u32);
        self.scopes.push(ScopeDef { name: Arc::from(name), parent: Some(parent_id), vars: Vec::new() });
        self.scope_names.insert(name.to_ascii_uppercase(), id);
        Ok(id)
    }

    /// Declares variable `name` of `format` in scope `scope`.
    ///
    /// The same name, scope and format again is harmless (and returns the first declaration).
    /// The same name and scope with another format, or the same name in an ancestor or
    /// descendant scope, is an error naming both declarations. Sibling scopes may reuse a name.
    pub fn declare(
        &mut self,
        name: &str,
        scope: &str,
        format: Format,
        locked: bool,
    ) -> Result<VarDefId, SolveError> {
        let scope_id = self.scope(scope)?;
        let key = name.to_ascii_lowercase();
        let scope_name = |b: &Self, s: ScopeId| b.scopes[s.0 as usize].name.clone();
        for &other in self.var_names.get(&key).map(Vec::as_slice).unwrap_or_default() {
            let o = &self.vars[other.0 as usize];
            if o.scope == scope_id {
                if o.format == format {
                    if locked {
                        self.vars[other.0 as usize].locked = true;
                    }
                    return Ok(other);
                }
                return Err(SolveError::new(
                    codes::VARIABLE_CONFLICT,
                    format!(
                        "variable `{name}` in scope {} is declared as {format}, but was already declared as {} (`{}`)",
                        scope_name(self, scope_id),
                        o.format,
                        o.name
                    ),
                ));
            }
            if ancestor_or_self(&self.scopes, o.scope, scope_id)
                || ancestor_or_self(&self.scopes, scope_id, o.scope)
            {
                return Err(SolveError::new(
                    codes::VARIABLE_CONFLICT,
                    format!(
                        "variable `{name}` in scope {} conflicts with `{}` in scope {}: a name may not be declared in both a scope and its {}",
                        scope_name(self, scope_id),
                        o.name,
                        scope_name(self, o.scope),
                        if ancestor_or_self(&self.scopes, o.scope, scope_id) {
                            "ancestor"
                        } else {
                            "descendant"
                        }
                    ),
                ));
            }
        }
        let id = VarDefId(self.vars.len() as u32);
        let index = self.scopes[scope_id.0 as usize].vars.len() as u32;
        self.scopes[scope_id.0 as usize].vars.push(id);
        self.vars.push(VarDef {
            name: Arc::from(name),
            scope: scope_id,
            format,
            locked,
            index,
            order: Order::Inherent,
            aggregate: None,
            holds: None,
        });
        self.var_names.entry(key).or_default().push(id);
        Ok(id)
    }

    /// Sets the order variable `def`'s modifiers apply in. A variable's order is set once:
    /// setting another one later is a `solver.variable_conflict` (the same again is harmless).
    pub fn set_order(&mut self, def: VarDefId, order: Order) -> Result<(), SolveError> {
        let Some(var) = self.vars.get_mut(def.0 as usize) else {
            return Err(SolveError::new(codes::UNKNOWN_VARIABLE, format!("no variable #{}", def.0)));
        };
        if self.ordered.insert(def) || var.order == order {
            var.order = order;
            return Ok(());
        }
        Err(SolveError::new(
            codes::VARIABLE_CONFLICT,
            format!(
                "variable `{}` applies its modifiers in {} order, so it cannot also be declared with {} order",
                var.name,
                var.order.name(),
                order.name()
            ),
        ))
    }

    /// Declares that STRING variable `def` holds the id of an instance of `scope`: a formula
    /// that sees `def` may then read `NAME.Var`, variable `Var` of the instance it names (see
    /// [`Pointer`]). Call it before [`RulesBuilder::declare_aggregates`] reads the formulas.
    pub fn set_holds(&mut self, def: VarDefId, scope: &str) -> Result<(), SolveError> {
        let scope = self.scope(scope)?;
        let Some(var) = self.vars.get_mut(def.0 as usize) else {
            return Err(SolveError::new(codes::UNKNOWN_VARIABLE, format!("no variable #{}", def.0)));
        };
        if var.format != Format::String {
            return Err(SolveError::new(
                codes::BAD_REFERENCE,
                format!(
                    "`{}` is {}: a variable that holds an instance's id is a STRING",
                    var.name, var.format
                ),
            ));
        }
        match var.holds {
            Some(other) if other != scope => Err(SolveError::new(
                codes::BAD_REFERENCE,
                format!(
                    "`{}` already holds instances of {}, so it cannot also hold instances of {}",
                    var.name, self.scopes[other.0 as usize].name, self.scopes[scope.0 as usize].name
                ),
            )),
            _ => {
                var.holds = Some(scope);
                Ok(())
            }
        }
    }

    /// Sets the default value of `format` (a variable starts there).
    pub fn set_default(&mut self, format: Format, value: Value) -> Result<(), SolveError> {
        if !value.conforms_to(&format) {
            return Err(SolveError::new(codes::BAD_DEFAULT, format!("default `{value}` is not a {format}")));
        }
        self.defaults.insert(format, value);
        Ok(())
    }

    /// Defines a user function (`d20Mod` = `floor((arg(0)-10)/2)`).
    pub fn define_function(&mut self, name: &str, body: &str) -> Result<(), SolveError> {
        self.library.define(name, body).map(drop).map_err(|e| {
            let mut err = SolveError::formula(&format!("function `{name}`"), body, e);
            err.code = codes::BAD_FUNCTION;
            err
        })
    }

    /// The function library, for adding functions of later layers.
    pub fn library_mut(&mut self) -> &mut Library {
        &mut self.library
    }

    /// Registers a custom format.
    pub fn register_format(&mut self, t: Arc<dyn FormatType>) -> Result<Format, SolveError> {
        self.formats.register(t).map(Format::Custom).map_err(|m| SolveError::new(codes::BAD_DEFAULT, m))
    }

    /// The formats known so far (core plus registered).
    pub fn formats(&self) -> &FormatRegistry {
        &self.formats
    }

    /// How many aggregates are declared.
    pub fn aggregate_count(&self) -> usize {
        self.aggregates.len()
    }

    /// The canonical texts of the aggregates declared, in the order declared.
    pub fn aggregate_texts(&self) -> impl Iterator<Item = &str> {
        self.aggregates.iter().map(|a| &*a.text)
    }

    /// Whether formula `text` may call an aggregate or read a reference — it holds `@`,
    /// `getOther(`, or a `count(`, `sum(`, `min(` or `max(` whose first argument names a scope,
    /// or a `.` where a variable holds instances — by a look at the
    /// text, without parsing it (a ruleset's formulas are mostly neither, and PCGen's use
    /// `min` and `max` of numbers a great deal).
    pub fn may_declare(&self, text: &str) -> bool {
        if text.contains('@') || (text.contains('.') && self.vars.iter().any(|v| v.holds.is_some())) {
            return true;
        }
        let lower = text.to_ascii_lowercase();
        if lower.contains("getother(") {
            return true;
        }
        ["count(", "sum(", "min(", "max("].iter().any(|call| {
            lower.match_indices(call).any(|(at, _)| {
                let rest = &text[at + call.len()..];
                let first = rest.split([',', ')']).next().unwrap_or("").trim();
                lookup_scope(&self.scope_names, &self.scopes, first).is_ok()
            })
        })
    }

    /// Declares every aggregate that formula `text` calls (nested ones first): a call of `count`,
    /// `sum`, `min` or `max` whose first argument names a scope. Text that does not parse is
    /// left to the formula's own compilation, which reports it; an aggregate with the wrong
    /// arguments is a `solver.bad_aggregate`. Declaring the same aggregate again is harmless.
    pub fn declare_aggregates(&mut self, text: &str) -> Result<(), SolveError> {
        // A STRING modifier's formula is marked with a leading `=` (`==` starts a literal).
        let text = match text.strip_prefix('=') {
            Some(f) if !f.starts_with('=') => f,
            _ => text,
        };
        match formula::parse(text, &formula::Limits::default()) {
            Ok(e) => self.aggregates_in(&e),
            Err(_) => Ok(()),
        }
    }

    fn aggregates_in(&mut self, e: &formula::ast::Expr) -> Result<(), SolveError> {
        use formula::ast::ExprKind;
        match &e.kind {
            ExprKind::Unary { expr, .. } => self.aggregates_in(expr),
            ExprKind::Binary { lhs, rhs, .. } => {
                self.aggregates_in(lhs)?;
                self.aggregates_in(rhs)
            }
            ExprKind::Index { name, index, .. } => {
                self.reference(name)?;
                self.pointer(name)?;
                self.aggregates_in(index)
            }
            ExprKind::Call { name, args, .. } if name.eq_ignore_ascii_case("getOther") => {
                self.get_other(e, args)
            }
            ExprKind::Call { name, args, .. } => {
                for a in args {
                    self.aggregates_in(a)?;
                }
                match aggregate_call(&self.scope_names, &self.scopes, e) {
                    Some((kind, scope)) => self.declare_aggregate(e, name, kind, scope, args),
                    None => Ok(()),
                }
            }
            ExprKind::Var(name) => {
                self.reference(name)?;
                self.pointer(name)
            }
            ExprKind::Number(_) | ExprKind::Str(_) => Ok(()),
        }
    }

    /// Declares `name` as a reference when it is one (`@id.Var`): a global variable of that
    /// name and of the format every declaration of `Var` shares.
    fn reference(&mut self, name: &str) -> Result<(), SolveError> {
        let Some(rest) = name.strip_prefix('@') else { return Ok(()) };
        let bad = |m: String| SolveError::new(codes::BAD_REFERENCE, format!("`{name}`: {m}"));
        let Some((key, var)) = rest.split_once('.').filter(|(k, v)| !k.is_empty() && !v.is_empty()) else {
            return Err(bad("write @id.Var: an instance's id, a dot, and one of its variables".to_owned()));
        };
        let declared = self.var_names.get(&var.to_ascii_lowercase()).cloned().unwrap_or_default();
        let Some(&first) = declared.first() else {
            return Err(bad(format!("no scope declares a variable `{var}`")));
        };
        let format = self.vars[first.0 as usize].format.clone();
        if let Some(&other) = declared.iter().find(|d| self.vars[d.0 as usize].format != format) {
            let (a, b) = (&self.vars[first.0 as usize], &self.vars[other.0 as usize]);
            return Err(bad(format!(
                "`{var}` is {} in scope {} but {} in scope {}: a reference reads one format",
                a.format,
                self.scopes[a.scope.0 as usize].name,
                b.format,
                self.scopes[b.scope.0 as usize].name
            )));
        }
        self.declare_reference(name, key, var, format, None)
    }

    /// Declares the global variable `name` reading `var` (of `format`) of the instance keyed
    /// `key`, of scope `within` if given; declaring it again is harmless.
    fn declare_reference(
        &mut self,
        name: &str,
        key: &str,
        var: &str,
        format: Format,
        within: Option<ScopeId>,
    ) -> Result<(), SolveError> {
        if self.references.iter().any(|(v, ..)| self.vars[v.0 as usize].name.eq_ignore_ascii_case(name)) {
            return Ok(());
        }
        let global = self.scopes[0].name.clone();
        let id = self.declare(name, &global, format, true)?;
        self.vars[id.0 as usize].aggregate = Some(AggKind::Ref);
        self.references.push((id, Arc::from(key), Arc::from(var), within));
        Ok(())
    }

    /// Declares PCGen's `getOther("SCOPE", OBJECT, Var)` — `Var` as seen from the instance of
    /// `SCOPE` that `OBJECT` names — as a variable named by the call's canonical text: a
    /// reference when `OBJECT` is the instance's key as a string literal
    /// (`getOther("PC.STAT", "STR", Score)`), a read through a holder when it is a variable
    /// that holds instances of `SCOPE`.
    fn get_other(
        &mut self,
        call: &formula::ast::Expr,
        args: &[formula::ast::Expr],
    ) -> Result<(), SolveError> {
        use formula::ast::ExprKind;
        let text = call.to_string();
        let bad = |m: String| SolveError::new(codes::BAD_REFERENCE, format!("`{text}`: {m}"));
        let [scope, object, var] = args else {
            return Err(bad(format!(
                "getOther takes 3 arguments, a scope, an object and a variable (getOther(\"PC.STAT\", \"STR\", Score)); this has {}",
                args.len()
            )));
        };
        let ExprKind::Str(scope) = &scope.kind else {
            return Err(bad("the scope is a string literal, e.g. \"PC.SKILL\"".to_owned()));
        };
        let scope = lookup_scope(&self.scope_names, &self.scopes, scope)?;
        let scope_name = self.scopes[scope.0 as usize].name.clone();
        let ExprKind::Var(var) = &var.kind else {
            return Err(bad("the variable read is a name, e.g. Score".to_owned()));
        };
        let read = self.var_names.get(&var.to_ascii_lowercase()).and_then(|ds| {
            ds.iter().copied().find(|d| ancestor_or_self(&self.scopes, self.vars[d.0 as usize].scope, scope))
        });
        let Some(read) = read else {
            return Err(bad(format!("scope {scope_name} has no variable `{var}`")));
        };
        let format = self.vars[read.0 as usize].format.clone();
        match &object.kind {
            ExprKind::Str(key) => self.declare_reference(&text, key, var, format, Some(scope)),
            ExprKind::Var(holder) => {
                let holders = self.var_names.get(&holder.to_ascii_lowercase()).cloned().unwrap_or_default();
                let Some(h) = holders.into_iter().find(|h| self.vars[h.0 as usize].holds == Some(scope))
                else {
                    return Err(bad(format!(
                        "`{holder}` is not a variable that holds instances of {scope_name} (the object is its key as a string literal, or such a variable)"
                    )));
                };
                self.declare_pointer(&text, h, var, format)
            }
            _ => Err(bad(format!(
                "the object is its key as a string literal (\"STR\") or a variable that holds instances of {scope_name}"
            ))),
        }
    }

    /// Declares the variable `name`, in holder `h`'s scope, reading `field` (of `format`) of the
    /// instance `h` names; declaring it again is harmless.
    fn declare_pointer(
        &mut self,
        name: &str,
        h: VarDefId,
        field: &str,
        format: Format,
    ) -> Result<(), SolveError> {
        if self
            .pointers
            .iter()
            .any(|(v, holder, _)| *holder == h && self.vars[v.0 as usize].name.eq_ignore_ascii_case(name))
        {
            return Ok(());
        }
        let scope_name = self.scopes[self.vars[h.0 as usize].scope.0 as usize].name.clone();
        let id = self.declare(name, &scope_name, format, true)?;
        self.vars[id.0 as usize].aggregate = Some(AggKind::Via);
        self.pointers.push((id, h, Arc::from(field)));
        Ok(())
    }

    /// Declares `name` as a read through a holder when it is one (`creature.STR`, where
    /// `creature` is declared to hold instances: see [`RulesBuilder::set_holds`]): a variable of
    /// that name in each holder's scope, of the format of the variable read.
    fn pointer(&mut self, name: &str) -> Result<(), SolveError> {
        if name.starts_with('@') || self.var_names.contains_key(&name.to_ascii_lowercase()) {
            return Ok(());
        }
        let Some((holder, field)) = name.split_once('.') else { return Ok(()) };
        let holders: Vec<VarDefId> = self
            .var_names
            .get(&holder.to_ascii_lowercase())
            .into_iter()
            .flatten()
            .copied()
            .filter(|h| self.vars[h.0 as usize].holds.is_some())
            .collect();
        for h in holders {
            // Filtered above: a holder holds a scope.
            let Some(held) = self.vars[h.0 as usize].holds else { continue };
            let read = self.var_names.get(&field.to_ascii_lowercase()).and_then(|ds| {
                ds.iter()
                    .copied()
                    .find(|d| ancestor_or_self(&self.scopes, self.vars[d.0 as usize].scope, held))
            });
            let Some(read) = read else {
                return Err(SolveError::new(
                    codes::BAD_REFERENCE,
                    format!(
                        "`{name}`: `{holder}` holds instances of {}, which have no variable `{field}`",
                        self.scopes[held.0 as usize].name
                    ),
                ));
            };
            let format = self.vars[read.0 as usize].format.clone();
            self.declare_pointer(name, h, field, format)?;
        }
        Ok(())
    }

    fn declare_aggregate(
        &mut self,
        call: &formula::ast::Expr,
        name: &str,
        kind: AggKind,
        scope: ScopeId,
        args: &[formula::ast::Expr],
    ) -> Result<(), SolveError> {
        let text = call.to_string();
        let key = text.to_ascii_lowercase();
        if self.aggregate_names.contains_key(&key) {
            return Ok(());
        }
        let bad = |m: String| SolveError::new(codes::BAD_AGGREGATE, format!("`{text}`: {m}"));
        if scope == ScopeId(0) {
            return Err(bad(format!(
                "`{name}` ranges over the instances of a scope, and the global scope has just one"
            )));
        }
        let (expr, filter) = match (kind, args.len()) {
            (AggKind::Count, 1) => (None, None),
            (AggKind::Count, 2) => (None, Some(args[1].to_string())),
            (AggKind::Count, _) => return Err(bad("write count(SCOPE) or count(SCOPE, WHERE)".to_owned())),
            (_, 2) => (Some(args[1].to_string()), None),
            (_, 3) => (Some(args[1].to_string()), Some(args[2].to_string())),
            (_, _) => return Err(bad(format!("write {name}(SCOPE, EXPR) or {name}(SCOPE, EXPR, WHERE)"))),
        };
        let global = self.scopes[0].name.clone();
        let var = self.declare(&text, &global, Format::Number, true)?;
        self.vars[var.0 as usize].aggregate = Some(kind);
        // A sum, or a count with a filter, keeps each instance's part in a variable of the
        // instance (see `Aggregate::part`).
        let part = match (kind, &filter) {
            (AggKind::Sum, _) | (AggKind::Count, Some(_)) => {
                let scope_name = self.scopes[scope.0 as usize].name.clone();
                let part = self.declare(&format!("part of {text}"), &scope_name, Format::Number, true)?;
                self.vars[part.0 as usize].aggregate = Some(kind);
                Some(part)
            }
            _ => None,
        };
        self.aggregate_names.insert(key, self.aggregates.len());
        self.aggregates.push(PendingAggregate { kind, scope, var, text: text.into(), expr, filter, part });
        Ok(())
    }

    /// Finishes the rules.
    pub fn build(self) -> Rules {
        let mut by_name: Map<Box<[u8]>, Vec<(ScopeId, VarDefId)>> = Map::default();
        for (i, v) in self.vars.iter().enumerate() {
            by_name
                .entry(v.name.to_ascii_lowercase().into_bytes().into())
                .or_default()
                .push((v.scope, VarDefId(i as u32)));
        }
        let pending = self.aggregates;
        let references = self.references;
        let pointers = self.pointers;
        let mut rules = Rules {
            aggregates: Vec::new(),
            aggregate_names: self.aggregate_names,
            aggregate_errors: Vec::new(),
            aggregates_of: Vec::new(),
            references: Map::default(),
            pointers: Vec::new(),
            pointers_of: Vec::new(),
            compiler: Compiler::new(Arc::new(self.library)),
            scopes: self.scopes,
            scope_names: self.scope_names,
            vars: self.vars,
            by_name,
            defaults: self.defaults,
            var_defaults: Arc::from([]),
            whole_starts: Box::default(),
            formats: self.formats,
        };
        rules.var_defaults = rules.vars.iter().map(|v| rules.default_value(&v.format)).collect();
        // Aggregates' formulas, compiled in their scope now that every name is known (one may
        // call another).
        rules.aggregates_of = vec![Vec::new(); rules.scopes.len()];
        for p in pending {
            let expr =
                p.expr.map(|t| rules.compile(&t, p.scope, None, Some(&Format::Number)).map_err(|e| (t, e)));
            let filter = p
                .filter
                .map(|t| rules.compile(&t, p.scope, None, Some(&Format::Boolean)).map_err(|e| (t, e)));
            let (expr, filter) = match (expr.transpose(), filter.transpose()) {
                (Ok(expr), Ok(filter)) => (expr, filter),
                (Err((t, e)), _) | (_, Err((t, e))) => {
                    let what =
                        format!("aggregate `{}`, in scope {}", p.text, rules.scopes[p.scope.0 as usize].name);
                    rules.aggregate_errors.push((p.text.clone(), SolveError::formula(&what, &t, e)));
                    continue;
                }
            };
            let part = match p.part {
                None => None,
                Some(var) => match rules.part(var, p.scope, p.kind, &expr, &filter) {
                    Ok(part) => Some(part),
                    Err((t, e)) => {
                        let what = format!(
                            "aggregate `{}`, in scope {}",
                            p.text, rules.scopes[p.scope.0 as usize].name
                        );
                        rules.aggregate_errors.push((p.text.clone(), SolveError::formula(&what, &t, e)));
                        continue;
                    }
                },
            };
            rules.aggregates_of[p.scope.0 as usize].push(rules.aggregates.len());
            rules.aggregates.push(Aggregate {
                kind: p.kind,
                scope: p.scope,
                var: p.var,
                text: p.text,
                expr,
                filter,
                part,
            });
        }
        rules.compile_reads(references, pointers);
        rules.whole_starts = rules.whole_starts();
        rules
    }
}

/// The aggregate `e` is — a call of `count`, `sum`, `min` or `max` whose first argument names a
/// scope — and that scope; `None` for any other expression.
fn aggregate_call(
    names: &Map<String, ScopeId>,
    scopes: &[ScopeDef],
    e: &formula::ast::Expr,
) -> Option<(AggKind, ScopeId)> {
    use formula::ast::ExprKind;
    let ExprKind::Call { name, args, .. } = &e.kind else { return None };
    let kind = AggKind::named(name)?;
    let ExprKind::Var(scope) = &args.first()?.kind else { return None };
    Some((kind, lookup_scope(names, scopes, scope).ok()?))
}

/// Whether `ancestor` is `scope` or one of its ancestors in `scopes`.
fn ancestor_or_self(scopes: &[ScopeDef], ancestor: ScopeId, mut scope: ScopeId) -> bool {
    loop {
        if ancestor == scope {
            return true;
        }
        match scopes[scope.0 as usize].parent {
            Some(p) => scope = p,
            None => return false,
        }
    }
}

/// The scope named `name` (case-insensitive) in `names`. Names are keyed in capitals, as
/// rulesets write them: the name as written is tried first, and copied to capitals only when
/// that misses.
fn lookup_scope(
    names: &Map<String, ScopeId>,
    scopes: &[ScopeDef],
    name: &str,
) -> Result<ScopeId, SolveError> {
    names
        .get(name)
        .or_else(|| names.get(&name.to_ascii_uppercase()))
        .copied()
        .ok_or_else(|| unknown_scope(name, scopes))
}

fn unknown_scope(name: &str, scopes: &[ScopeDef]) -> SolveError {
    let known: Vec<&str> = scopes.iter().map(|s| &*s.name).collect();
    SolveError::new(codes::UNKNOWN_SCOPE, format!("unknown scope `{name}` (known: {})", known.join(", ")))
}

/// Compiled, immutable rules shared by every sheet.
///
/// Aligned to 128 bytes (a cache line pair, what the processor prefetches together), so that
/// in its `Arc` the reference counts are not on the cache lines of the fields sheets read:
/// every sheet copied takes a count and gives it back when dropped, and with the counts beside
/// the fields, each of those writes made every other thread's next read of the rules a miss.
#[repr(align(128))]
pub struct Rules {
    scopes: Vec<ScopeDef>,
    scope_names: Map<String, ScopeId>,
    vars: Vec<VarDef>,
    /// Declarations by name in ASCII lower case, as bytes: every scope declaring it. (A name
    /// folded on the stack is looked up without checking it again as UTF-8.)
    by_name: Map<Box<[u8]>, Vec<(ScopeId, VarDefId)>>,
    defaults: HashMap<Format, Value>,
    /// Every declaration's default value, by `VarDefId`: computed once, shared by every sheet.
    var_defaults: Arc<[Value]>,
    /// Every declaration's first value in a new instance when that is a whole number (its
    /// default, unless it is an aggregate that starts empty), by `VarDefId`: a new sheet's
    /// thousands of variables start without converting a decimal each.
    whole_starts: Box<[Option<i64>]>,
    compiler: Compiler,
    formats: FormatRegistry,
    /// Aggregates whose formulas compiled; by canonical text in lower case (an index into
    /// `aggregates`, or one that failed); those of each scope, by `ScopeId`.
    aggregates: Vec<Aggregate>,
    aggregate_names: Map<String, usize>,
    aggregate_errors: Vec<(Arc<str>, SolveError)>,
    aggregates_of: Vec<Vec<usize>>,
    /// References (`@id.Var`), by the key of the instance they read.
    references: Map<Arc<str>, Vec<Reference>>,
    /// Reads through holders (`creature.STR`); those whose holder is in each scope, by
    /// `ScopeId`.
    pointers: Vec<Pointer>,
    pointers_of: Vec<Vec<usize>>,
}

impl Rules {
    /// Every aggregate, in the order declared.
    pub fn aggregates(&self) -> &[Aggregate] {
        &self.aggregates
    }

    /// The aggregates over the instances of `scope`.
    pub fn aggregates_of(&self, scope: ScopeId) -> impl Iterator<Item = &Aggregate> {
        self.aggregates_of.get(scope.0 as usize).into_iter().flatten().map(|&i| &self.aggregates[i])
    }

    /// The part of an aggregate of `kind` over `scope` kept in variable `var` (see
    /// [`Aggregate::part`]), from its compiled `EXPR` and `WHERE`; a formula's text and error
    /// when it does not compile.
    fn part(
        &self,
        var: VarDefId,
        scope: ScopeId,
        kind: AggKind,
        expr: &Option<Arc<Formula>>,
        filter: &Option<Arc<Formula>>,
    ) -> Result<Part, (String, formula::FormulaError)> {
        let expr = expr.as_ref().map_or("1", |f| f.text());
        let text = match filter {
            Some(f) => format!("if({}, {expr}, 0)", f.text()),
            None if kind == AggKind::Count => "1".to_owned(),
            None => expr.to_owned(),
        };
        let value = self.compile(&text, scope, None, Some(&Format::Number)).map_err(|e| (text, e))?;
        let symbols = PartSymbols(var);
        let read =
            self.compiler.compile("part", &CheckEnv::new(&symbols)).map_err(|e| ("part".to_owned(), e))?;
        Ok(Part { var, value, read })
    }

    /// Compiles the references (`@id.Var`) and the reads through holders (`creature.STR`)
    /// declared: the variable each reads, in the scopes it is read from.
    fn compile_reads(
        &mut self,
        references: Vec<PendingReference>,
        pointers: Vec<(VarDefId, VarDefId, Arc<str>)>,
    ) {
        // References: the variable read, compiled in every scope where its name resolves.
        for (var, key, name, within) in references {
            let reads = (0..self.scopes.len() as u32)
                .map(ScopeId)
                .filter(|&s| within.is_none_or(|w| w == s) && self.resolve(s, &name).is_some())
                .filter_map(|s| Some((s, self.compile(&name, s, None, None).ok()?)))
                .collect();
            self.references.entry(key.clone()).or_default().push(Reference { key, var, reads, within });
        }
        // Reads through holders: the variable read, compiled in the scope held.
        self.pointers_of = vec![Vec::new(); self.scopes.len()];
        for (var, holder, name) in pointers {
            // `pointer` found `name` declared in the scope held or an ancestor.
            let Some(held) = self.vars[holder.0 as usize].holds else { continue };
            match self.compile(&name, held, None, None) {
                Ok(read) => {
                    let scope = self.vars[holder.0 as usize].scope;
                    self.pointers_of[scope.0 as usize].push(self.pointers.len());
                    self.pointers.push(Pointer { holder, var, held, read });
                }
                Err(e) => {
                    let text = self.vars[var.0 as usize].name.clone();
                    self.aggregate_errors.push((text.clone(), SolveError::formula(&text, &name, e)));
                }
            }
        }
    }

    /// Every reference (`@id.Var`, `getOther`), in no particular order.
    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        self.references.values().flatten()
    }

    /// The references (`@id.Var`) to the instance keyed `key`.
    pub fn references_to(&self, key: &str) -> &[Reference] {
        self.references.get(key).map_or(&[], Vec::as_slice)
    }

    /// The reads through holders (`creature.STR`) whose holder is a variable of `scope`.
    pub fn pointers_of(&self, scope: ScopeId) -> impl Iterator<Item = &Pointer> {
        self.pointers_of.get(scope.0 as usize).into_iter().flatten().map(|&i| &self.pointers[i])
    }

    /// Every read through a holder, in the order declared.
    pub fn pointers(&self) -> &[Pointer] {
        &self.pointers
    }

    /// Whether any formula reads through a holder (each batch then links them: see
    /// [`Pointer`]).
    pub fn has_pointers(&self) -> bool {
        !self.pointers.is_empty()
    }

    /// Whether some scope declares a variable `name` that an aggregate, a reference or a read
    /// through a holder keeps (its modifiers come and go with instances, never by source).
    pub fn is_kept(&self, name: &str) -> bool {
        self.by_name
            .get(name.to_ascii_lowercase().as_bytes())
            .is_some_and(|ds| ds.iter().any(|(_, d)| self.vars[d.0 as usize].is_kept()))
    }

    /// Aggregates whose `EXPR` or `WHERE` did not compile: each one's text and why.
    pub fn aggregate_errors(&self) -> &[(Arc<str>, SolveError)] {
        &self.aggregate_errors
    }

    /// The global scope.
    pub fn global(&self) -> ScopeId {
        ScopeId(0)
    }

    /// A scope by name (case-insensitive).
    pub fn scope(&self, name: &str) -> Result<ScopeId, SolveError> {
        lookup_scope(&self.scope_names, &self.scopes, name)
    }

    /// A scope's definition.
    pub fn scope_def(&self, id: ScopeId) -> &ScopeDef {
        &self.scopes[id.0 as usize]
    }

    /// Every scope definition.
    pub fn scopes(&self) -> &[ScopeDef] {
        &self.scopes
    }

    /// A variable's declaration.
    pub fn var(&self, id: VarDefId) -> &VarDef {
        &self.vars[id.0 as usize]
    }

    /// Every variable declaration.
    pub fn vars(&self) -> &[VarDef] {
        &self.vars
    }

    /// The registered formats.
    pub fn formats(&self) -> &FormatRegistry {
        &self.formats
    }

    /// Calls `each` with the name of every variable visible from `scope` (declared there or
    /// in an ancestor), for "did you mean" hints (a cold path).
    pub fn visible_names(&self, scope: ScopeId, each: &mut dyn FnMut(&str)) {
        let mut chain = Vec::new();
        let mut s = Some(scope);
        while let Some(id) = s {
            chain.push(id);
            s = self.scopes[id.0 as usize].parent;
        }
        for declared in self.by_name.values() {
            if let Some((_, v)) = declared.iter().find(|(d, _)| chain.contains(d)) {
                each(&self.vars[v.0 as usize].name);
            }
        }
    }

    /// The variable `name` as seen from `scope`: declared there or in an ancestor.
    pub fn resolve(&self, scope: ScopeId, name: &str) -> Option<VarDefId> {
        let declared = if name.bytes().any(|b| b.is_ascii_uppercase()) {
            // Names are keyed in lower case: fold a short name on the stack (this runs for every
            // modifier added), a long one on the heap.
            let mut buf = [0u8; 64];
            match buf.get_mut(..name.len()) {
                Some(short) => {
                    short.copy_from_slice(name.as_bytes());
                    short.make_ascii_lowercase();
                    self.by_name.get(&*short)?
                }
                None => self.by_name.get(name.to_ascii_lowercase().as_bytes())?,
            }
        } else {
            self.by_name.get(name.as_bytes())?
        };
        // The nearest scope wins (declaration rules keep one per chain, but be exact anyway).
        let mut s = Some(scope);
        while let Some(id) = s {
            if let Some((_, v)) = declared.iter().find(|(d, _)| *d == id) {
                return Some(*v);
            }
            s = self.scopes[id.0 as usize].parent;
        }
        None
    }

    /// Whether `ancestor` is `scope` or one of its ancestors.
    pub fn is_ancestor_or_self(&self, ancestor: ScopeId, scope: ScopeId) -> bool {
        ancestor_or_self(&self.scopes, ancestor, scope)
    }

    /// Every declaration's first value in a new instance when a whole number (see
    /// `Rules::whole_starts`), computed from the defaults and the aggregates.
    fn whole_starts(&self) -> Box<[Option<i64>]> {
        self.vars
            .iter()
            .zip(self.var_defaults.iter())
            .map(|(v, d)| match d {
                _ if v.aggregate.is_some_and(AggKind::starts_empty) => None,
                Value::Number(n) => match formula::Num::from_decimal(*n) {
                    formula::Num::Int(x) => Some(x),
                    formula::Num::Dec(_) => None,
                },
                _ => None,
            })
            .collect()
    }

    /// `def`'s first value in a new instance, when that is a whole number (see `whole_starts`).
    #[inline]
    pub(crate) fn whole_start(&self, def: VarDefId) -> Option<i64> {
        self.whole_starts.get(def.0 as usize).copied().flatten()
    }

    /// The default value of every declaration, by `VarDefId` (shared: sheets hold the `Arc`).
    pub fn var_defaults(&self) -> &Arc<[Value]> {
        &self.var_defaults
    }

    /// The value a variable of `format` starts from.
    pub fn default_value(&self, format: &Format) -> Value {
        self.defaults.get(format).cloned().unwrap_or_else(|| format.builtin_default())
    }

    /// Compiles `text` for use in `scope`: names resolve there, `value()` has format `input`,
    /// and the result must have format `expected`. Identical text in the same scope is shared.
    pub fn compile(
        &self,
        text: &str,
        scope: ScopeId,
        input: Option<&Format>,
        expected: Option<&Format>,
    ) -> Result<Arc<Formula>, formula::FormulaError> {
        let symbols = ScopeSymbols { rules: self, scope };
        let mut env = CheckEnv::new(&symbols);
        env.input = input;
        env.expected = expected;
        self.compiler.compile(text, &env)
    }

    /// A modifier's value as written, made ready: a literal for `expected` formats without
    /// formula syntax ([`crate::modifier::is_literal`]), else a formula compiled in `scope`
    /// (`input` is the target variable's format, for `value()`).
    pub fn instruction(
        &self,
        text: &str,
        scope: ScopeId,
        input: &Format,
        expected: &Format,
    ) -> Result<Instruction, InstructionError> {
        if crate::modifier::is_literal(expected, text) {
            return Value::parse_literal(expected, crate::modifier::literal_text(expected, text))
                .map(|v| Instruction::Literal(v, Arc::from(text)))
                .map_err(InstructionError::Literal);
        }
        self.compile(crate::modifier::formula_text(expected, text), scope, Some(input), Some(expected))
            .map(Instruction::Compiled)
            .map_err(InstructionError::Formula)
    }
}

/// Why a modifier's value could not be made ready.
#[derive(Clone, Debug)]
pub enum InstructionError {
    /// A literal that does not parse as its format (the message says why).
    Literal(String),
    /// A formula that does not compile.
    Formula(formula::FormulaError),
}

/// The symbol table of one scope, for the formula checker.
/// Names for an aggregate's read of an instance's part: `part` is the part's variable.
struct PartSymbols(VarDefId);

impl Symbols for PartSymbols {
    fn resolve(&self, name: &str) -> Option<(VarId, Format)> {
        (name == "part").then_some((self.0.into(), Format::Number))
    }
}

struct ScopeSymbols<'a> {
    rules: &'a Rules,
    scope: ScopeId,
}

impl Symbols for ScopeSymbols<'_> {
    fn resolve(&self, name: &str) -> Option<(VarId, Format)> {
        let id = self.rules.resolve(self.scope, name)?;
        Some((id.into(), self.rules.var(id).format.clone()))
    }

    fn names(&self, each: &mut dyn FnMut(&str)) {
        self.rules.visible_names(self.scope, each);
    }

    fn resolve_call(&self, call: &formula::ast::Expr) -> Option<Result<(VarId, Format), String>> {
        use formula::ast::ExprKind;
        let r = self.rules;
        if let ExprKind::Call { name, .. } = &call.kind
            && name.eq_ignore_ascii_case("getOther")
        {
            // Declared at load (a reference, global; or a read through a holder, in the
            // holder's scope), named by the call's text.
            let text = call.to_string();
            return Some(match r.resolve(self.scope, &text) {
                Some(id) => Ok((id.into(), r.var(id).format.clone())),
                None => Err(format!(
                    "`{text}` is not set up here: getOther is set up at load, from the formulas the ruleset writes, and a read through a holder is seen where the holder is"
                )),
            });
        }
        if aggregate_call(&r.scope_names, &r.scopes, call).is_none() {
            // `count(PC.NOPE, …)`: an aggregate over a scope that does not exist (a first
            // argument that is neither a scope nor a variable here).
            if let ExprKind::Call { name, args, .. } = &call.kind
                && AggKind::named(name).is_some()
                && let Some(ExprKind::Var(first)) = args.first().map(|a| &a.kind)
                && r.resolve(self.scope, first).is_none()
            {
                return Some(Err(unknown_scope(first, &r.scopes).message));
            }
            return None;
        }
        let text = call.to_string();
        Some(match r.aggregate_names.get(&text.to_ascii_lowercase()) {
            Some(_) => {
                // Declared, so its variable is (the same text names it).
                let id = r.resolve(r.global(), &text)?;
                Ok((id.into(), Format::Number))
            }
            None => Err(format!(
                "`{text}` is an aggregate this ruleset does not set up: aggregates are set up at load, from the formulas the ruleset writes"
            )),
        })
    }

    fn scope_description(&self) -> String {
        format!("scope {}", self.rules.scope_def(self.scope).name)
    }

    fn cache_key(&self) -> Option<u64> {
        Some(self.scope.0 as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder() -> RulesBuilder {
        let mut b = RulesBuilder::new("PC");
        b.add_scope("PC.EQUIPMENT", "PC").unwrap();
        b.add_scope("PC.EQUIPMENT.PART", "PC.EQUIPMENT").unwrap();
        b.add_scope("PC.STAT", "PC").unwrap();
        b
    }

    #[test]
    fn declaration_rules() {
        let mut b = builder();
        let hands = b.declare("Hands", "PC", Format::Number, false).unwrap();
        assert_eq!(b.declare("HANDS", "pc", Format::Number, false).unwrap(), hands, "same again is harmless");
        let e = b.declare("Hands", "PC", Format::Boolean, false).unwrap_err();
        assert_eq!(e.code, codes::VARIABLE_CONFLICT);
        assert!(
            e.message.contains("declared as BOOLEAN, but was already declared as NUMBER"),
            "{}",
            e.message
        );
        let e = b.declare("hands", "PC.EQUIPMENT", Format::Number, false).unwrap_err();
        assert!(
            e.message.contains("conflicts with `Hands` in scope PC") && e.message.contains("ancestor"),
            "{}",
            e.message
        );
        b.declare("Bonus", "PC.EQUIPMENT.PART", Format::Number, false).unwrap();
        let e = b.declare("Bonus", "PC", Format::Number, false).unwrap_err();
        assert!(e.message.contains("descendant"), "{}", e.message);
        // Siblings may reuse a name, even with another format.
        b.declare("Score", "PC.STAT", Format::Number, false).unwrap();
        b.declare("Score", "PC.EQUIPMENT", Format::Boolean, false).unwrap();
        assert_eq!(b.declare("X", "PC.NOPE", Format::Number, false).unwrap_err().code, codes::UNKNOWN_SCOPE);
    }

    #[test]
    fn names_resolve_through_ancestors_only() {
        let mut b = builder();
        b.declare("Hands", "PC", Format::Number, false).unwrap();
        let plus = b.declare("MyPlus", "PC.EQUIPMENT", Format::Number, false).unwrap();
        b.declare("Score", "PC.STAT", Format::Number, false).unwrap();
        let r = b.build();
        let part = r.scope("PC.EQUIPMENT.PART").unwrap();
        assert_eq!(r.resolve(part, "myplus"), Some(plus));
        assert!(r.resolve(part, "Hands").is_some());
        assert_eq!(r.resolve(r.global(), "MyPlus"), None, "a parent does not see a child's variables");
        assert_eq!(r.resolve(r.scope("PC.STAT").unwrap(), "MyPlus"), None, "siblings do not see each other");
        let err = r.compile("MyPlus + 1", r.scope("PC.STAT").unwrap(), None, None).unwrap_err();
        assert_eq!(err.message, "unknown variable `MyPlus` in scope PC.STAT");
        let f1 = r.compile("MyPlus * 2", part, None, None).unwrap();
        let f2 = r.compile("MyPlus * 2", part, None, None).unwrap();
        assert!(Arc::ptr_eq(&f1, &f2), "interned per scope");
    }
}
