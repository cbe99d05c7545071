//! A sheet: the per-character state the solver keeps correct.
//!
//! A sheet owns scope instances (the character, each equipment, each part, each stat), one
//! graph node per variable of each instance, and the modifiers applied to them. Every mutation
//! validates first (names, instances, formats, locks, cycles) and changes nothing when it
//! fails; then it applies the change and recomputes exactly the affected variables, in
//! topological order, each at most once, stopping where a value did not change.

use crate::Map;
use crate::error::{SolveError, codes};
use crate::modifier::{Instruction, ModKind, ModValue, ModifierSpec, Target};
use crate::rules::{AggKind, Rules, ScopeId, VarDefId};
use formula::{EvalContext, Format, Formula, FormulaError, Num, Value, VarId, number};
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use rust_decimal::Decimal;
use std::fmt;
use std::sync::Arc;

mod adjust;
mod batch;
mod bulk;
mod catalog;
mod compute;
mod graph;
mod guard;
mod instances;
mod modify;
mod mods;
mod plan;
mod pointers;
mod query;
mod values;

pub use adjust::Adjust;
pub use batch::{BatchError, Operation, Step};
#[cfg(test)]
pub(crate) use bulk::bulk_batches;
use catalog::Body;
pub use catalog::{Catalog, TemplateId, TemplateSpec};
#[cfg(test)]
pub(crate) use compute::fused_evaluations;
pub use guard::Guard;
pub use query::Var;

/// A scope instance in a sheet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InstanceId(u32);

/// The global instance of every sheet.
const GLOBAL: InstanceId = InstanceId(0);

/// Why a variable has no value: a modifier failed to evaluate, or a variable it reads has no
/// value. The variable shows this error instead of a value until the cause is fixed.
#[derive(Clone, Debug, PartialEq)]
pub struct ValueError {
    /// Stable code: the formula error's code (`evaluation.division_by_zero`) or
    /// `solver.depends_on_error`.
    pub code: &'static str,
    pub message: String,
    /// The modifier that failed.
    pub modifier: Arc<str>,
}

/// A variable's value, or why it has none.
pub type Slot = Result<Value, Arc<ValueError>>;

// A value is as small as a `Value`; a report's change record is a handle and an old and a new
// value, each a whole number in place of a `Decimal` when it can be.
const _: () = assert!(std::mem::size_of::<Slot>() == 24 && std::mem::size_of::<Delta>() <= 56);

/// How output names a variable: `Hands` (global) or `sword1.MyPlusValue` (local).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VarRef {
    /// The instance id for local variables; `None` for globals.
    pub instance: Option<Arc<str>>,
    /// The name as declared.
    pub name: Arc<str>,
}

impl VarRef {
    /// The name as output shows it (the same text as `Display`, without the formatting
    /// machinery: this runs for every variable a sheet's values or changes list).
    pub fn full_name(&self) -> String {
        full_name(self.instance.as_deref(), &self.name)
    }
}

/// A variable's reference as output names it: `name`, or `instance.name` (what
/// [`VarRef::full_name`] gives, from the parts [`Sheet::for_each_value`] hands out).
pub fn full_name(instance: Option<&str>, name: &str) -> String {
    match instance {
        Some(i) => {
            let mut s = String::with_capacity(i.len() + 1 + name.len());
            s.push_str(i);
            s.push('.');
            s.push_str(name);
            s
        }
        None => name.to_owned(),
    }
}

impl fmt::Display for VarRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.instance {
            Some(i) => write!(f, "{i}.{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// One variable whose value changed, named: `old` is `None` for a variable created by the
/// operation, `new` is `None` for one removed. [`Report::named`] gives these.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub var: VarRef,
    /// The variable's format.
    pub format: Format,
    pub old: Option<Slot>,
    pub new: Option<Slot>,
}

/// One variable whose value changed, as the solver records it: the variable's handle, not its
/// name (names are made only when a caller asks, by [`Report::named`] or [`Sheet::name`]), and
/// its old and new values — a whole number as itself, anything else as its `Slot` — made into
/// [`Slot`]s only when asked, by [`Delta::old_value`] and [`Delta::new_value`].
#[derive(Clone, Debug)]
pub struct Delta {
    pub var: Var,
    /// `None`: the variable was created by the operation.
    old: Option<Recorded>,
    new: Recorded,
}

/// A value in a [`Delta`].
#[derive(Clone, Debug)]
enum Recorded {
    /// A whole number of scale 0.
    Whole(i64),
    /// Any other value, in place (no allocation per change).
    Other(Slot),
}

impl Recorded {
    fn slot(&self) -> Slot {
        match self {
            Recorded::Whole(x) => Ok(Value::Number(Decimal::from(*x))),
            Recorded::Other(slot) => slot.clone(),
        }
    }
}

/// Two changes are equal when they are of the same variable with the same values, however each
/// recorded them (a whole number as itself or as a `Slot`).
impl PartialEq for Delta {
    fn eq(&self, other: &Delta) -> bool {
        self.var == other.var
            && self.old_value() == other.old_value()
            && self.new_value() == other.new_value()
    }
}

impl Delta {
    /// A change of whole numbers (`old` `None`: the variable was created).
    #[inline]
    pub(super) fn whole(var: Var, old: Option<i64>, new: i64) -> Delta {
        Delta { var, old: old.map(Recorded::Whole), new: Recorded::Whole(new) }
    }

    /// Any change (`old` `None`: the variable was created).
    pub(super) fn any(var: Var, old: Option<Slot>, new: Slot) -> Delta {
        Delta { var, old: old.map(Recorded::Other), new: Recorded::Other(new) }
    }

    /// The value before the change; `None` for a variable the operation created.
    pub fn old_value(&self) -> Option<Slot> {
        self.old.as_ref().map(Recorded::slot)
    }

    /// The value after the change.
    pub fn new_value(&self) -> Slot {
        self.new.slot()
    }
}

/// What a mutation did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Variables the operation removed (with their instances), named — their handles end with
    /// the operation — in name order.
    pub removed: Vec<Change>,
    /// The other variables whose value changed, in topological order.
    pub changed: Vec<Delta>,
    /// How many variable evaluations the mutation performed.
    pub recomputed: usize,
    /// The variables evaluated, in order — filled only when
    /// [`Sheet::record_evaluations`] is on (for diagnostics and tests).
    pub evaluated: Vec<VarRef>,
}

impl Report {
    /// How many variables changed (removed ones included).
    pub fn len(&self) -> usize {
        self.removed.len() + self.changed.len()
    }

    /// Whether no variable changed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every change, named: removed variables first, then the rest in topological order.
    /// `sheet` is the sheet the report came from, before any later change to its instances
    /// (a handle outlives its variable only until the instance is removed; a change to a
    /// variable that is gone is left out).
    pub fn named(&self, sheet: &Sheet) -> Vec<Change> {
        let mut all = Vec::with_capacity(self.removed.len() + self.changed.len());
        all.extend_from_slice(&self.removed);
        all.extend(self.changed.iter().filter_map(|d| {
            Some(Change {
                var: sheet.name(d.var)?,
                format: sheet.format(d.var)?.clone(),
                old: d.old_value(),
                new: Some(d.new_value()),
            })
        }));
        all
    }

    /// Every change as [`Report::named`] gives it, in the same order, without making a
    /// [`Change`] of each: `f` gets the variable's instance key (`None` for a global), its
    /// name, its format, and its old and new values. For callers that turn the changes into
    /// records of their own (the daemon's reply and log), so nothing is made twice.
    pub fn for_each_named(
        &self,
        sheet: &Sheet,
        mut f: impl FnMut(Option<&str>, &str, &Format, Option<Slot>, Option<Slot>),
    ) {
        for c in &self.removed {
            f(c.var.instance.as_deref(), &c.var.name, &c.format, c.old.clone(), c.new.clone());
        }
        for d in &self.changed {
            if let Some((key, name, format)) = sheet.parts(d.var) {
                f(key, name, format, d.old_value(), Some(d.new_value()));
            }
        }
    }
}

#[derive(Clone, Debug)]
struct Instance {
    key: Arc<str>,
    scope: ScopeId,
    parent: Option<InstanceId>,
    /// One node per variable of the scope, by `VarDef::index`.
    /// Shared by copies of the sheet (fixed when the instance is made).
    nodes: Arc<[NodeIndex]>,
}

#[derive(Debug)]
struct Node {
    def: VarDefId,
    owner: InstanceId,
    /// Modifiers on this variable, in application order.
    mods: ModList,
}

/// A node is copied with every shape copy (a sheet's first structural change): its list as
/// one block copy (`from_slice` of `Copy` keys), not the element-by-element `extend` that
/// `SmallVec`'s own `Clone` runs.
impl Clone for Node {
    fn clone(&self) -> Node {
        Node { def: self.def, owner: self.owner, mods: ModList::from_slice(&self.mods) }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct ModKey(u32);

/// A short list of modifiers: up to four held in place, in the 24 bytes a `Vec` takes. Nearly
/// every variable and instance has that few, so a variable's first modifiers take no
/// allocation (a `Vec` allocated on the first and grew on the second), and copying or dropping
/// a shape (a character's first structural change copies its ruleset's starting shape) copies
/// them in place and frees nothing for them. For a starter character, modifiers linked
/// 33.7k → 29.0k instructions, and the shape's copy and drop about 2.5k fewer.
type ModList = smallvec::SmallVec<[ModKey; 4]>;

/// How a sheet holds its shape: by reference count, shared with its copies. Without a weak
/// count, so that asking whether the shape is this sheet's alone (`make_mut`, before every
/// structural change: once per modifier of a batch linked in bulk) is one load, not the atomic
/// compare-and-swap and store `std::sync::Arc` needs to rule out weak references.
type ShapeArc = triomphe::Arc<Shape>;

/// What a modifier's formulas read: each variable and its node. Most modifiers read two
/// variables or fewer (the anchor workload's formulas, a ruleset's `Score`/`Level` reads), which
/// are held in place: no allocation to link such a modifier, none to free when it goes.
type Reads = smallvec::SmallVec<[(VarId, NodeIndex); 2]>;

/// A linked modifier: where it applies, what it reads, and its value (its own or its
/// template's). Held in place in its shape's table (`mods.rs`), by value.
#[derive(Clone, Debug)]
struct Modifier {
    id: Arc<str>,
    target: NodeIndex,
    /// The type as it applies to the target's format.
    kind: ModKind,
    /// Where it ranks at one user priority before its insertion order: the type's inherent
    /// priority, or 0 on a variable whose modifiers apply as added ([`crate::Order`]).
    rank: u8,
    /// Its value, condition, text and source: its own, or its template's (see `catalog.rs`).
    held: Held,
    priority: u32,
    seq: u64,
    on: InstanceId,
    from: InstanceId,
    /// Every variable the value and condition read, and the node it is in this sheet.
    reads: Reads,
    /// How many of `reads` are the value formula's variables: its first reads, in the order of
    /// its variables (its slots), so that evaluation indexes instead of searching
    /// ([`Modifier::value_slots`]; no list of their own to allocate).
    value_vars: u32,
    /// The nodes the condition reads, by its slots.
    cond_slots: Box<[NodeIndex]>,
    /// A constant NUMBER value, ready for the numeric path.
    const_num: Option<Num>,
    /// Whether its variable is an aggregate's, a reference's or a holder read's, kept by its
    /// instance ([`crate::VarDef::is_kept`]): such a modifier is removed only with the instance. Read
    /// from the declaration once, when the record is made, so that a removal need not look.
    kept: bool,
}

/// Where a modifier's [`catalog::Body`] is.
#[derive(Clone, Debug)]
enum Held {
    /// Its own: a modifier given whole ([`ModifierSpec`]). Boxed, so that a record is 128
    /// bytes, which moves in line rather than through a call to copy memory (at 176 bytes, the
    /// copy's first wide load waited on the narrow stores that had just built the record, and
    /// moving each record into its table was a tenth of a sheet's build).
    Own(Box<catalog::Body>),
    /// Its template's, in the sheet's catalog (a [`Step::Template`]).
    Template(TemplateId),
}

// See `Held::Own`.
const _: () = assert!(std::mem::size_of::<Option<Modifier>>() == 128);

impl Modifier {
    fn order(&self) -> (u32, u8, u64) {
        (self.priority, self.rank, self.seq)
    }

    /// The value formula's reads, by slot (see `value_vars`).
    fn value_slots(&self) -> &[(VarId, NodeIndex)] {
        self.reads.get(..self.value_vars as usize).unwrap_or_default()
    }
}

/// One step of a [`Trace`].
#[derive(Clone, Debug, PartialEq)]
pub struct TraceStep {
    pub modifier: Arc<str>,
    pub kind: ModKind,
    /// The formula as written, or the constant.
    pub instruction: Arc<str>,
    pub priority: u32,
    pub inherent_priority: u8,
    pub source: Arc<str>,
    /// The condition's result, when the modifier has one; `false` means it was skipped.
    pub condition: Option<bool>,
    /// The variables its value and condition read, with their values.
    pub reads: Vec<(VarRef, Option<Slot>)>,
    /// The value after this step (`None` when skipped).
    pub after: Option<Slot>,
}

/// How a variable got its value: from the default through every modifier, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    pub var: VarRef,
    pub format: Format,
    /// The order the variable's modifiers apply in: the steps are in it.
    pub order: crate::Order,
    pub default: Value,
    pub steps: Vec<TraceStep>,
    pub value: Slot,
}

/// The per-character state. Owned by one writer.
///
/// A sheet is its *shape* — instances, variables, modifiers, the dependency graph and the
/// plan, everything but values — held by `Arc` and shared, plus its own values. `Clone` copies
/// only the values (a 2,000-variable sheet of whole numbers: 16 KB) and shares the shape; the
/// first structural change to either copy (an instance or a modifier added or removed) gives
/// that copy a shape of its own (copy on write, O(variables) once: the modifiers of a sheet
/// prepared to share stay shared, the copy's own beside them). So a ruleset's
/// starting sheet, built once, is the compiled form every sheet of the ruleset starts from, and
/// a what-if copy costs its values.
#[derive(Clone)]
pub struct Sheet {
    /// The structure, shared with every copy until one of them changes it.
    shape: ShapeArc,
    /// The values: this sheet's own.
    vals: values::Values,
    record_evaluations: bool,
    /// The bookkeeping buffers of a batch, kept empty between batches.
    spare: batch::Spare,
    /// While deferring ([`Sheet::defer`]): what operations touched since, to recompute at
    /// [`Sheet::settle`].
    deferred: Option<batch::Deferred>,
}

/// Everything about a sheet but its values: what sheets copied from one another share (see
/// [`Sheet`]). It changes only through `Arc::make_mut`, so a change never shows in another
/// sheet.
///
/// Aligned to 128 bytes: a ruleset's starting shape is read by every character copied from it
/// while each copy changes the `Arc`'s counts (see `Rules`).
#[repr(align(128))]
struct Shape {
    rules: Arc<Rules>,
    /// The templates this sheet links by index, when it was made with a catalog (see
    /// `catalog.rs`); every copy keeps the same one.
    catalog: Option<Arc<Catalog>>,
    graph: StableDiGraph<Node, u32>,
    /// Instances by id and by key: those of the shape it was copied from stay shared with it,
    /// a copy's changes are an overlay (`instances.rs`).
    instances: instances::Instances,
    /// Modifiers by key and by id; each immutable once linked, shared by `Arc`. Those of the
    /// shape it was copied from stay shared with it: a copy's changes are an overlay.
    mods: mods::ModTable,
    /// Modifiers by source, in the order they were linked — built only when first needed (a
    /// `RemoveSource`), then kept up to date: building a sheet, or every character of a
    /// batch, never pays for it. A source's list is kept when it empties (a modifier
    /// replaced, an object taken off and put back: the next one reuses it) until the empty
    /// lists outnumber the others.
    sources: Option<Map<Arc<str>, Vec<ModKey>>>,
    /// How many lists in `sources` are empty.
    empty_sources: usize,
    /// The modifiers on or from each instance other than the global one, by instance id: what
    /// removing the instance must remove.
    by_instance: Vec<ModList>,
    next_seq: u64,
    /// Default value of each variable definition, by `VarDefId` (the rules': shared).
    defaults: Arc<[Value]>,
    /// The plan every evaluation goes through.
    plan: plan::Plan,
}

/// A shape is copied for a structural change (`Arc::make_mut`), which then adds to it: its
/// tables by instance are copied with room to grow (`plan::with_room`), as the plan's are.
impl Clone for Shape {
    fn clone(&self) -> Shape {
        Shape {
            rules: self.rules.clone(),
            catalog: self.catalog.clone(),
            graph: self.graph.clone(),
            instances: self.instances.copy_with_room(),
            mods: self.mods.clone(),
            sources: self.sources.clone(),
            empty_sources: self.empty_sources,
            by_instance: {
                // Each list as one block copy (`from_slice` of `Copy` keys, not `SmallVec`'s
                // element-by-element `Clone`), with room for more instances.
                let mut lists = Vec::with_capacity(self.by_instance.len() + self.by_instance.len() / 8 + 16);
                lists.extend(self.by_instance.iter().map(|l| ModList::from_slice(l)));
                lists
            },
            next_seq: self.next_seq,
            defaults: self.defaults.clone(),
            plan: self.plan.clone(),
        }
    }
}

/// The modifier's formulas read variables through this context.
struct ModContext<'a> {
    vals: &'a values::Values,
    reads: &'a [(VarId, NodeIndex)],
    /// The nodes of the formula being evaluated, by slot.
    slots: Slots<'a>,
}

/// Where a [`ModContext`] finds the nodes of its formula's slots.
#[derive(Clone, Copy)]
enum Slots<'a> {
    /// The modifier's reads, the first of which are its value formula's (`Modifier::value_slots`).
    Reads(&'a [(VarId, NodeIndex)]),
    /// A list of their own (a condition's).
    Nodes(&'a [NodeIndex]),
}

impl EvalContext for ModContext<'_> {
    fn value(&self, id: VarId) -> Option<Value> {
        let (_, node) = self.reads.iter().find(|(v, _)| *v == id)?;
        self.vals.get(node.index())?.ok()
    }

    #[inline]
    fn number(&self, id: VarId) -> Option<Decimal> {
        let (_, node) = self.reads.iter().find(|(v, _)| *v == id)?;
        self.vals.num(node.index()).map(Num::to_decimal)
    }

    #[inline(always)]
    fn num_at(&self, slot: usize) -> Option<Option<Num>> {
        let node = match self.slots {
            Slots::Reads(reads) => reads.get(slot)?.1,
            Slots::Nodes(nodes) => *nodes.get(slot)?,
        };
        Some(self.vals.num(node.index()))
    }
}

impl Sheet {
    /// A new sheet over `rules`, with the global instance and its variables at their defaults.
    pub fn new(rules: Arc<Rules>) -> Sheet {
        // The defaults are the rules': every sheet shares them.
        let defaults = rules.var_defaults().clone();
        let shape = Shape {
            graph: StableDiGraph::default(),
            instances: instances::Instances::default(),
            mods: mods::ModTable::default(),
            sources: None,
            empty_sources: 0,
            by_instance: Vec::new(),
            next_seq: 0,
            defaults,
            rules,
            catalog: None,
            plan: plan::Plan::default(),
        };
        let mut sheet = Sheet {
            shape: ShapeArc::new(shape),
            vals: values::Values::default(),
            record_evaluations: false,
            spare: batch::Spare::default(),
            deferred: None,
        };
        let global_key: Arc<str> = sheet.shape.rules.scope_def(sheet.shape.rules.global()).name.clone();
        let global = sheet.shape.rules.global();
        sheet.create_instance(global_key, global, None);
        sheet
    }

    /// Whether reports list every variable evaluated, in order ([`Report::evaluated`]).
    pub fn record_evaluations(&mut self, on: bool) {
        self.record_evaluations = on;
    }

    /// Whether this sheet and `other` share one shape (neither has changed its structure since
    /// one was copied from the other): what a copy costs, and what the isolation tests check.
    pub fn shares_structure_with(&self, other: &Sheet) -> bool {
        ShapeArc::ptr_eq(&self.shape, &other.shape)
    }

    /// The shape, to change: this sheet's own from now on (copied first when shared).
    fn shape_mut(&mut self) -> &mut Shape {
        ShapeArc::make_mut(&mut self.shape)
    }

    /// A copy whose plan is laid out again from nothing, then solved by the interpreter: what
    /// the kept plan and native code must agree with (for tests).
    #[cfg(test)]
    pub(crate) fn replanned(&self) -> Sheet {
        let mut copy = self.clone();
        let (plan, source) = copy.shape_mut().plan_and_source();
        plan.compact(&source);
        plan.levels_changed();
        plan.drop_native();
        copy.solve_all();
        copy
    }

    /// Forgets the native code, if any: this sheet interprets (for tests).
    #[cfg(test)]
    pub(crate) fn drop_native(&mut self) {
        if self.shape.plan.native().is_some() {
            self.shape_mut().plan.drop_native();
        }
    }

    /// Whether the native code computes variable `r` now (it compiled its entry, and the entry
    /// is that one again), for tests.
    #[cfg(test)]
    pub(crate) fn native_computes(&self, r: &str) -> bool {
        let Ok(var) = self.lookup(r) else { return false };
        self.shape.plan.native().is_some_and(|(_, ok)| ok.get(var.0.index()) == Some(&1))
    }

    /// Replaces every whole value by another whole number, as if the values were stale, so that
    /// a full solve must compute each again (for tests).
    #[cfg(test)]
    pub(crate) fn forget_values(&mut self) {
        self.vals.scramble();
    }

    /// How many times the plan was laid out again from scratch (for tests).
    #[cfg(test)]
    pub(crate) fn plan_compactions(&self) -> usize {
        self.shape.plan.compactions()
    }

    /// How many instance slots the sheet holds, live or free (for tests of reuse).
    #[cfg(test)]
    pub(crate) fn instance_slots(&self) -> usize {
        self.shape.instances.slots()
    }

    /// About how many bytes the sheet holds: its values, plus its shape (variables, edges,
    /// modifiers, instances, plan; not the rules) when no other sheet shares it. For memory
    /// budgets, not accounting.
    pub fn footprint(&self) -> usize {
        let own = self.vals.footprint() + std::mem::size_of::<Sheet>();
        if ShapeArc::count(&self.shape) > 1 { own } else { own + self.shape.footprint() }
    }

    /// The rules this sheet follows.
    pub fn rules(&self) -> &Arc<Rules> {
        &self.shape.rules
    }

    /// Creates an instance in a free slot (the last freed) or a new one at the end; its
    /// variables hold their defaults.
    fn create_instance(&mut self, key: Arc<str>, scope: ScopeId, parent: Option<InstanceId>) -> InstanceId {
        let Sheet { shape, vals, .. } = self;
        let s = ShapeArc::make_mut(shape);
        let (id, reused) = s.instances.next_id();
        let Shape { rules, graph, plan, defaults, .. } = s;
        let vars = &rules.scope_def(scope).vars;
        // Room for its variables in the graph and the values once, and the plan's arrays grown
        // once for them all (`Plan::nodes_added`): grown a node at a time, the arrays were
        // copied again and again (about a third of making a 2,000-variable sheet).
        graph.reserve_nodes(vars.len());
        vals.reserve(petgraph::visit::NodeIndexable::node_bound(&*graph) + vars.len());
        // Collected straight into its `Arc` (one allocation: the length is known).
        let nodes: Arc<[NodeIndex]> = vars
            .iter()
            .map(|&def| {
                let node = graph.add_node(Node { def, owner: id, mods: ModList::new() });
                if let Some(x) = rules.whole_start(def) {
                    vals.set_num(node.index(), Num::Int(x));
                    return node;
                }
                let var = rules.var(def);
                let start = match var.aggregate {
                    // A `min` or `max` aggregate has no value until an instance counts.
                    Some(a) if a.starts_empty() => Err(compute::empty_aggregate(var)),
                    _ => Ok(defaults[def.0 as usize].clone()),
                };
                vals.set(node.index(), start);
                node
            })
            .collect();
        plan.nodes_added(&nodes);
        // The global instance (no parent) is not keyed: output names globals without one.
        s.instances.add(Instance { key, scope, parent, nodes });
        if reused {
            s.by_instance[id.0 as usize].clear();
        } else {
            s.by_instance.push(ModList::new());
        }
        id
    }

    /// The value of the variable in `node` (an error value if, against the invariants, it has
    /// none).
    fn value_of(&self, node: NodeIndex) -> Slot {
        self.vals.get(node.index()).unwrap_or_else(|| {
            Err(Arc::new(ValueError {
                code: "solver.no_value",
                message: format!("`{}` has no value", self.shape.var_ref(node)),
                modifier: Arc::from(""),
            }))
        })
    }

    // ---- instances ----

    /// Adds instance `key` of `scope` under `parent` (`None`: the global instance). The scope's
    /// parent must be the parent instance's scope. Its variables start at their defaults.
    pub fn add_instance(
        &mut self,
        key: &str,
        scope: &str,
        parent: Option<&str>,
    ) -> Result<Report, SolveError> {
        self.single(|s, p| s.op_add_named_instance(key, scope, parent, p))
    }

    /// Removes instance `key`, its descendants, their variables, and every modifier on or from
    /// any of them.
    pub fn remove_instance(&mut self, key: &str) -> Result<Report, SolveError> {
        self.single(|s, p| s.op_remove_instance(key, p))
    }
}

impl Shape {
    #[inline]
    fn instance(&self, id: InstanceId) -> &Instance {
        // Ids in live structures always name live instances: removal clears every reference.
        self.instances.get(id).expect("live instance")
    }

    /// The instance with id `key`, or the global instance for `None`.
    fn lookup_instance(&self, key: Option<&str>) -> Result<InstanceId, SolveError> {
        match key {
            None => Ok(GLOBAL),
            Some(k) => self.instances.id_of(k).ok_or_else(|| {
                SolveError::new(codes::UNKNOWN_INSTANCE, format!("there is no instance `{k}` on this sheet"))
            }),
        }
    }

    /// [`Shape::lookup_instance`], trying `hint` first: an object's modifiers come in a row
    /// and name the same instance, which a comparison of its key confirms for much less than
    /// hashing it. The answer is always the table's (a live instance's key is unique); `hint`
    /// becomes the instance found.
    pub(super) fn lookup_instance_hinted(
        &self,
        key: Option<&str>,
        hint: &mut Option<InstanceId>,
    ) -> Result<InstanceId, SolveError> {
        let Some(k) = key else { return Ok(GLOBAL) };
        if let Some(id) = *hint
            && let Some(inst) = self.instances.get(id)
            && &*inst.key == k
        {
            return Ok(id);
        }
        let id = self.lookup_instance(Some(k))?;
        *hint = Some(id);
        Ok(id)
    }

    /// The node of variable `def` as seen from instance `from`: the variable of the nearest
    /// ancestor-or-self instance whose scope declares it.
    fn node_from(&self, from: InstanceId, def: VarDefId) -> Option<NodeIndex> {
        let scope = self.rules.var(def).scope;
        let mut i = Some(from);
        while let Some(id) = i {
            let inst = self.instance(id);
            if inst.scope == scope {
                return inst.nodes.get(self.rules.var(def).index as usize).copied();
            }
            i = inst.parent;
        }
        None
    }

    /// [`Shape::node_from`] with the instance looked up already: the variable of `inst` when
    /// its scope declares it (most often), else of the nearest ancestor that does.
    #[inline(always)]
    fn node_in(&self, inst: &Instance, def: VarDefId) -> Option<NodeIndex> {
        self.node_at(inst, def, catalog::Place::of(&self.rules, def))
    }

    /// [`Shape::node_in`] for `def`, which is at `place` (see [`catalog::Place`]).
    #[inline(always)]
    fn node_at(&self, inst: &Instance, def: VarDefId, place: catalog::Place) -> Option<NodeIndex> {
        if inst.scope == place.scope {
            return inst.nodes.get(place.index as usize).copied();
        }
        self.node_from(inst.parent?, def)
    }

    /// How output names the variable in `node`.
    fn var_ref(&self, node: NodeIndex) -> VarRef {
        let n = &self.graph[node];
        let name = self.rules.var(n.def).name.clone();
        let instance = if n.owner == GLOBAL { None } else { Some(self.instance(n.owner).key.clone()) };
        VarRef { instance, name }
    }

    /// About how many bytes the shape holds (not the rules).
    fn footprint(&self) -> usize {
        use std::mem::size_of;
        let mods: usize = self
            .mods
            .iter()
            .map(|(_, m)| {
                let own = if matches!(m.held, Held::Own(_)) { size_of::<catalog::Body>() } else { 0 };
                size_of::<Modifier>() + own + if m.reads.spilled() { 8 * m.reads.capacity() } else { 0 }
            })
            .sum();
        let nodes: usize = self.graph.node_weights().map(|n| size_of::<Node>() + 8 * n.mods.len()).sum();
        nodes
            + self.plan.footprint()
            + mods
            + self.instances.slots() * (size_of::<Option<Instance>>() + 32)
            + self.mods.len() * 48
    }
}
