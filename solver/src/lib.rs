//! # sheetd-solver: keeping a character's numbers right
//!
//! The solver holds, for each character sheet, every variable's value and keeps them correct as
//! the character changes. It is the heart of sheetd.
//!
//! ## What it does
//! - [`RulesBuilder`] / [`Rules`]: scope definitions (`PC` → `PC.EQUIPMENT` → `PC.EQUIPMENT.PART`),
//!   variable declarations with PCGen's conflict rules, format defaults and user functions,
//!   built once and shared by every sheet (`Arc<Rules>`, `Send + Sync`).
//! - [`Sheet`]: scope instances (this sword, that part), one variable node per instance variable
//!   in a petgraph dependency graph, and modifiers (SET, MULTIPLY, DIVIDE, ADD, MAX, MIN; APPEND
//!   for arrays) applied in (user priority, inherent priority, insertion) order from the default.
//!   A sheet's structure (its *shape*) is held by `Arc` and shared by its copies until one
//!   changes it; its values are its own, so a sheet copied from a built one (a ruleset's
//!   compiled starting sheet) costs its values only.
//! - [`Catalog`]: a ruleset's modifier templates, checked once and linked by index
//!   ([`Step::Template`], [`Sheet::apply_steps`]) into every sheet made with it, the linked
//!   modifier holding no reference count on the template's formulas or texts.
//! - Incremental recomputation: after each mutation, exactly the affected variables are
//!   recomputed in topological order, each at most once, stopping where a value is unchanged.
//! - Native code: [`Sheet::compile_native`] compiles a sheet's plan to machine code with
//!   Cranelift, shared by its copies; full solves and large recomputations then run as
//!   straight-line code, handing anything else back to the interpreter.
//! - Aggregates and references ([`Aggregate`], [`Reference`], [`Pointer`]): `count`/`sum`/
//!   `min`/`max` over every instance of a scope, `@id.Var` reads of one instance, and
//!   `creature.STR` reads through a variable holding an instance's id, declared with the rules
//!   and kept as variables by modifiers each instance gives them when it is added (or when a
//!   holder comes to name it) — so membership is a dependency like any other.
//! - Cycles are rejected when the modifier that would close one is added, naming the path.
//! - [`Trace`]s: a variable's default, then every modifier with its inputs and the value after.
//!
//! ## What it does not do
//! It does not read files or know about game objects (races, equipment): the data layer turns
//! those into instances and modifiers. It does not persist or serve anything.
//!
//! ## Main types
//! [`Rules`], [`Catalog`], [`Sheet`], [`ModifierSpec`] and [`Step`], [`Report`] and [`Change`],
//! [`Trace`], [`SolveError`].

/// Hash maps keyed by names and ids: foldhash is several times faster than SipHash on short
/// keys and still seeded per map.
type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

mod error;
mod modifier;
mod rules;
mod sheet;

pub use error::{Code, SolveError, codes};
pub use modifier::{Instruction, ModKind, ModValue, ModifierSpec, Target, is_literal};
pub use rules::{
    AggKind, Aggregate, InstructionError, Order, Part, Pointer, Reference, Rules, RulesBuilder, ScopeDef,
    ScopeId, VarDef, VarDefId,
};
pub use sheet::{
    Adjust, BatchError, Catalog, Change, Guard, InstanceId, Operation, Report, Sheet, Slot, Step, TemplateId,
    TemplateSpec, Trace, TraceStep, ValueError, Var, VarRef, full_name,
};

#[cfg(test)]
mod tests;
