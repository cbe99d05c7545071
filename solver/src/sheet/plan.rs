//! The plan: a sheet's NUMBER modifiers flattened into contiguous arrays, indexed by variable,
//! kept up to date across structural changes, with each variable's level and dependents. Part of
//! the sheet's shared [`Shape`]; it reads the values, which are each sheet's own
//! ([`Values`]). Both the incremental recomputation and the full solve evaluate through it.
//!
//! Evaluating a variable by walking the graph means chasing a pointer per modifier into a
//! heap-scattered table and then into its formula, and reading every input through the graph's
//! node weights: on a sheet of thousands of modifiers the time goes to cache misses, not
//! arithmetic. The plan lays out, per variable, its NUMBER modifiers in application order as
//! one run of 16-byte [steps](Step): the whole-number programs of their formulas copied in with
//! inputs renumbered to variable indexes, which read whole values straight from the sheet's
//! dense `i64` array, each followed by a fold into the variable's value. An evaluation streams
//! through one array and, in the common case, never touches a formula; each step costs one
//! dispatch, so common pairs of instructions are fused into one step. An entry's leading whole
//! constants are applied when it is written: it starts from their result.
//!
//! **Kept, not rebuilt.** A structural change marks only what it touched:
//! - a modifier linked last in its target's order (a new modifier usually is) has its steps
//!   appended to the target's entry at once ([`Plan::appended`]), in the room reserved after it
//!   or with the entry moved to the end of the arrays;
//! - any other modifier linked, or one unlinked, marks its target *stale*; the target's entry is
//!   written again (in place when it fits, else at the end of the arrays, the old range left as
//!   garbage) before the next evaluation, once however many modifiers the batch changed;
//! - a variable added or removed, or a level raised, marks the full solve's order stale; it is
//!   sorted again (by level) only when a full solve needs it;
//! - when garbage outweighs the live entries, every entry is written again from scratch.
//!
//! **Invariants.**
//! - Before an evaluation, no entry is stale (`refresh`); before a full solve, the order is
//!   sorted. Both are brought up to date only on a sheet that owns its shape (a structural change
//!   made it its own), or by `Sheet::prepare_to_share` before copies are made.
//!
//! The plan can also be compiled to machine code (`native.rs`), which runs the same entries
//! without a dispatch per step and hands back to this module what it does not compute.
//!
//! The plan is an optimisation only: a variable it cannot handle — not a NUMBER, a modifier
//! with a condition, an input without a value, any evaluation error — is computed by
//! [`Sheet::compute`], the one function that defines values, and the property tests hold both
//! paths to the same results. Within the plan, when a step does not stay whole (7/2, overflow
//! of `i64`), the entry is evaluated again from its start on [`Num`]s, each formula by its
//! whole-number steps when they answer and else its general evaluation, which is exact. A
//! formula's fold holds its modifier's key, through which that evaluation finds the formula and
//! its inputs (the modifier's reads): the plan copies neither.

use super::values::Values;
use super::{Body, ModKey, ModValue, Modifier, Node, Shape};
use crate::modifier::ModKind;
use formula::{EvalContext, Formula, IntOp, Num, Value, VarId, run_int};
use petgraph::stable_graph::NodeIndex;
use petgraph::stable_graph::StableDiGraph;
use rust_decimal::Decimal;
use std::sync::Arc;

mod dependents;
mod native;
#[cfg(target_os = "linux")]
mod pages;

pub(super) use dependents::Dependents;
pub(super) use native::{Buffers, SLOW_CHANGE};

/// Garbage (abandoned modifier records) tolerated before every entry is written again (small
/// in tests, so that tests reach compaction).
const GARBAGE_SLACK: usize = if cfg!(test) { 64 } else { 4096 };

/// Stale entries from which a change to a quarter of the variables lays the plan out again
/// (small in tests, so that tests reach it).
const COMPACT_STALE_MIN: usize = if cfg!(test) { 8 } else { 1024 };

/// What the plan is laid out from: the rest of its shape.
/// Where the plan finds a modifier's formula by its key: the sheet's modifiers and catalog.
#[derive(Clone, Copy)]
pub(super) struct Formulas<'a> {
    pub(super) mods: &'a super::mods::ModTable,
    pub(super) catalog: Option<&'a super::Catalog>,
}

impl<'a> Formulas<'a> {
    /// Modifier `key`'s value formula, with the modifier (whose reads are its inputs, by slot).
    fn formula(self, key: u32) -> Option<(&'a Formula, &'a Modifier)> {
        let m = self.mods.get(ModKey(key))?;
        match &m.held.body(self.catalog).value {
            ModValue::Formula(f) => Some((f, m)),
            ModValue::Const(_) => None,
        }
    }
}

impl Shape {
    /// Where the plan finds its formulas (see [`Formulas`]).
    pub(super) fn formulas(&self) -> Formulas<'_> {
        Formulas { mods: &self.mods, catalog: self.catalog.as_deref() }
    }
}

pub(super) struct Source<'a> {
    rules: &'a crate::Rules,
    graph: &'a StableDiGraph<Node, u32>,
    mods: &'a super::mods::ModTable,
    catalog: Option<&'a super::Catalog>,
    defaults: &'a [Value],
}

impl Shape {
    /// The plan, to change, and what it is laid out from.
    pub(super) fn plan_and_source(&mut self) -> (&mut Plan, Source<'_>) {
        let Shape { plan, graph, mods, defaults, catalog, rules, .. } = self;
        (plan, Source { rules, graph, mods, catalog: catalog.as_deref(), defaults })
    }
}

/// The plan of a sheet (see the module docs). Every per-variable vector is indexed by the
/// variable's node index.
#[derive(Debug, Default)]
pub(super) struct Plan {
    vars: Vec<PlanVar>,
    /// Entries' steps, variable after variable (with garbage between).
    steps: Vec<Step>,
    /// Decimal constants (rare), by `Step::FoldDec`.
    decimals: Vec<Decimal>,
    /// Instructions of whole-number programs that are not steps of their own, with variables
    /// renumbered to node indexes: by `Step::OpAt` and `Step::Program` (rare: nearly every
    /// program is straight, and every instruction of it a step).
    int_ops: Vec<IntOp>,
    /// Steps in `steps`, decimals and instructions in `int_ops` that no entry refers to any more.
    garbage: usize,
    /// Where an entry's records are built before they are copied into place (reused).
    scratch: Vec<Step>,
    /// Variables whose entry must be written again before the next evaluation.
    stale: Vec<u32>,
    /// Every live variable in ascending (level, index): the full solve's order.
    order: Vec<u32>,
    /// Whether `order` must be sorted again.
    order_stale: bool,
    /// How many compactions ran (tests check that they happen).
    #[cfg(test)]
    compactions: usize,
    /// Each variable's topological level: for every edge u → v, `level[u] < level[v]`.
    pub(super) level: Vec<u32>,
    /// Each variable's dependents: the targets of its outgoing edges, each once ([`Dependents`]:
    /// every list in one array).
    pub(super) succ: Dependents,
    /// The entries as native code (full solves, large recomputations), once compiled
    /// ([`Plan::compile_native`]);
    /// shared by copies of the shape, dropped when the order may change.
    native: Option<Arc<native::Native>>,
    /// Per variable: 1 while the native code computes its current entry, 0 once its modifiers
    /// changed (the code then hands it to the interpreter).
    native_ok: Vec<u8>,
    /// Per variable: its entry's length when the code was compiled, while the entry has only
    /// had whole-number constants appended at its end since ([`Plan::appended`]) and taken off
    /// again ([`Plan::popped`]): once it is back at that length it is the entry the code was
    /// compiled from, and the code computes it again (an effect added and then expired costs
    /// the code nothing). [`NO_LEN`] once the entry was written anew, or the code would not wake
    /// a dependent of it.
    native_len: Vec<u32>,
    /// The steps of modifiers linked in bulk, made as each was linked ([`Plan::make_ready`]),
    /// for the entries written at the batch's end to copy.
    ready: Ready,
}

/// [`Plan::native_len`] of an entry that is not the one the code was compiled from.
const NO_LEN: u32 = u32::MAX;

/// The steps of the modifiers a bulk batch links, made while each modifier's record and
/// template were in the cache (the link loop reads them in the batch's order). Writing the
/// entries at the batch's end copies them from here: it goes through the variables in
/// topological order, where reading each record and its template again was a cache miss apiece
/// (a third of a sheet's build went to those entries).
///
/// **Invariant: a modifier's span holds exactly the steps `Plan::push_steps` gives its record,
/// and only while that record is linked under its key.** A modifier's steps depend on its
/// record alone (and its template, which never changes), and a bulk batch only adds; so spans
/// are made only by bulk linking, and all of them are dropped when any modifier is unlinked or
/// replaced ([`Plan::forget_ready`]) and when the batch ends (`Sheet::commit`, after its
/// recomputation has copied them into their entries).
#[derive(Debug, Default)]
struct Ready {
    /// The key of `spans[0]`.
    from: u32,
    /// Per key from `from`: its steps in `steps` (`start << 32 | len`), or [`NOT_READY`].
    spans: Vec<u64>,
    steps: Vec<Step>,
}

/// A key in [`Ready::spans`] without steps made.
const NOT_READY: u64 = u64::MAX;

/// What [`push_plain`] did with a modifier.
enum Plain {
    /// Its steps are appended.
    Done,
    /// The plan does not compute it (a condition, a value that is not a NUMBER).
    NotComputed,
    /// Its steps need records beside them (a decimal, instructions in `int_ops`), or its formula
    /// read: left to [`Plan::push_steps`].
    Other,
}

/// Appends the steps of modifier `key` (`m`, with its `body` and its template's `recipe`) to
/// `out` when they need nothing beside them and no formula read: a whole constant, or a
/// template's recipe — nearly every modifier. What [`Plan::push_steps`] and
/// [`Plan::make_ready`] start with.
#[inline(always)]
fn push_plain(key: u32, m: &Modifier, body: &Body, recipe: Option<&[Step]>, out: &mut Vec<Step>) -> Plain {
    if body.condition.is_some() || matches!(m.kind, ModKind::Append | ModKind::Union) {
        return Plain::NotComputed;
    }
    match (&body.value, m.const_num) {
        (_, Some(Num::Int(k))) => out.push(Step::fold_whole(m.kind, k)),
        // A template's steps, translated once: only its variables to renumber, to node
        // indexes (an unknown slot reads as "not whole": the general path decides). Its
        // template keeps them only for a NUMBER formula, whose variables are the template's
        // value reads and so the record's (`Template::reads_of`): the formula itself, on
        // the heap apart, is not read (at 8,000 modifiers, reading it was a cache miss each).
        (ModValue::Formula(_), None) if let Some(recipe) = recipe => {
            let slots = m.value_slots();
            let node = |slot: u32| slots.get(slot as usize).map_or(u32::MAX, |(_, n)| n.index() as u32);
            out.extend(recipe.iter().map(|step| step.renumber(node)));
            out.push(Step::fold_formula(m.kind, key, true));
        }
        _ => return Plain::Other,
    }
    Plain::Done
}

impl Ready {
    /// Modifier `key`'s steps, when they were made.
    #[inline(always)]
    fn get(&self, key: u32) -> Option<&[Step]> {
        let span = *self.spans.get(key.wrapping_sub(self.from) as usize)?;
        if span == NOT_READY {
            return None;
        }
        let start = (span >> 32) as usize;
        self.steps.get(start..start + (span & u64::from(u32::MAX)) as usize)
    }
}

/// A variable's entry record: 32 bytes, aligned to 32, so that a record never straddles two
/// cache lines (at 40 bytes, some did, and a large recomputation waited on the second line for
/// their steps' position).
#[derive(Clone, Copy, Debug, Default)]
#[repr(align(32))]
struct PlanVar {
    /// The default as a whole number, when the plan computes this variable; `None` sends it to
    /// `Sheet::compute`. A default that is not whole starts the entry from 0 with a first step
    /// that sets it (`FoldDec(Set, d)`), which takes the entry to the exact path as a decimal
    /// start did.
    start: Option<i64>,
    /// Its steps: `steps[first..end]`.
    first: u32,
    end: u32,
    /// The steps reserved for it, `steps[first..cap]`: an entry that grows within them is
    /// written in place.
    cap: u32,
    stale: bool,
}

/// One step of an entry. An entry is its variable's modifiers in application order, each as the
/// steps that compute its value into a register `acc` (none for a constant) and one *fold* that
/// combines it into the value so far, `cur`. A formula's whole-number program is copied in as
/// steps when it runs in one register (nearly all do: `A - B + C`, `floor(A / 2)`), so that an
/// evaluation is one loop over one array, with one dispatch per step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Step {
    /// `acc` = variable `v` (the first instruction of a formula's whole-number program).
    Load(u32),
    /// `acc` = `k`.
    LoadK(i64),
    /// `acc` = `op(acc)` for the common [top-only](IntOp::is_top_only) instructions of a
    /// program, each its own step (one dispatch, not two): `AddK(k)` is `IntOp::AddK(k)`.
    AddK(i64),
    SubK(i64),
    MulK(i64),
    FloorDivK(i64),
    MinK(i64),
    MaxK(i64),
    AddVar(u32),
    SubVar(u32),
    MulVar(u32),
    MinVar(u32),
    MaxVar(u32),
    /// `acc` = `int_ops[at](acc)`: any other top-only instruction.
    OpAt(u32),
    /// `Load(v)` and the instruction after it, as one step: `LoadAddK(v, k)` is
    /// `Load(v), AddK(k)`. Most formulas start this way (`A + 2`, `floor(A / 2)`, `max(A, B)`),
    /// and every step saved is a dispatch the processor need not predict.
    LoadAddK(u32, i64),
    LoadFloorDivK(u32, i64),
    LoadMinK(u32, i64),
    LoadMaxK(u32, i64),
    LoadAddVar(u32, u32),
    LoadSubVar(u32, u32),
    LoadMinVar(u32, u32),
    LoadMaxVar(u32, u32),
    /// `acc` = the whole-number program `int_ops[ops..ops + len]` (one that needs a stack).
    Program {
        ops: u32,
        len: u32,
    },
    /// A formula modifier with a whole-number program, computed in `acc` by the steps since the
    /// previous fold: `cur` = `kind(cur, acc)`. It holds the modifier's key, by which the exact
    /// path finds the formula and its inputs (the modifier's reads) when a step does not stay
    /// whole: the plan keeps no copy of either. The common types have a step each
    /// (`FoldAdd(key)` is `Fold(Add, key)`).
    FoldSet(u32),
    FoldAdd(u32),
    FoldMul(u32),
    FoldMax(u32),
    Fold(ModKind, u32),
    /// A formula modifier without a whole-number program (its key), the general way.
    General(ModKind, u32),
    /// A constant modifier: `cur` = `kind(cur, k)`; the common types have a step each.
    SetK(i64),
    CurAddK(i64),
    FoldK(ModKind, i64),
    /// A decimal constant modifier: `cur` = `kind(cur, decimals[d])`.
    FoldDec(ModKind, u32),
}

/// What a fold combines into `cur` (see [`Step::fold`]).
enum FoldOf {
    /// The value of modifier `key`'s formula: `acc` when its whole-number steps answer, else
    /// the general way.
    Formula(u32),
    /// Modifier `key`'s formula, which has no whole-number steps.
    General(u32),
    Whole(i64),
    Dec(u32),
}

impl Step {
    /// Instruction `op` of a straight program (renumbered) as a step: its own, or `OpAt` an
    /// entry of `int_ops`, where it is put.
    fn op(op: IntOp, int_ops: &mut Vec<IntOp>) -> Step {
        match op {
            IntOp::AddK(k) => Step::AddK(k),
            IntOp::SubK(k) => Step::SubK(k),
            IntOp::MulK(k) => Step::MulK(k),
            IntOp::FloorDivK(k) => Step::FloorDivK(k),
            IntOp::MinK(k) => Step::MinK(k),
            IntOp::MaxK(k) => Step::MaxK(k),
            IntOp::AddVar(v) => Step::AddVar(v),
            IntOp::SubVar(v) => Step::SubVar(v),
            IntOp::MulVar(v) => Step::MulVar(v),
            IntOp::MinVar(v) => Step::MinVar(v),
            IntOp::MaxVar(v) => Step::MaxVar(v),
            op => {
                int_ops.push(op);
                Step::OpAt(int_ops.len() as u32 - 1)
            }
        }
    }

    /// How many records beside the steps this step refers to: a decimal, instructions in
    /// `int_ops` (counted as garbage when its entry is written again).
    fn side_records(&self) -> usize {
        match *self {
            Step::FoldDec(..) | Step::OpAt(_) => 1,
            Step::Program { len, .. } => len as usize,
            _ => 0,
        }
    }

    /// The same step reading variable `f(v)` for every variable `v` it reads.
    #[inline(always)]
    fn renumber(self, f: impl Fn(u32) -> u32) -> Step {
        match self {
            Step::Load(v) => Step::Load(f(v)),
            Step::AddVar(v) => Step::AddVar(f(v)),
            Step::SubVar(v) => Step::SubVar(f(v)),
            Step::MulVar(v) => Step::MulVar(f(v)),
            Step::MinVar(v) => Step::MinVar(f(v)),
            Step::MaxVar(v) => Step::MaxVar(f(v)),
            Step::LoadAddK(v, k) => Step::LoadAddK(f(v), k),
            Step::LoadFloorDivK(v, k) => Step::LoadFloorDivK(f(v), k),
            Step::LoadMinK(v, k) => Step::LoadMinK(f(v), k),
            Step::LoadMaxK(v, k) => Step::LoadMaxK(f(v), k),
            Step::LoadAddVar(v, w) => Step::LoadAddVar(f(v), f(w)),
            Step::LoadSubVar(v, w) => Step::LoadSubVar(f(v), f(w)),
            Step::LoadMinVar(v, w) => Step::LoadMinVar(f(v), f(w)),
            Step::LoadMaxVar(v, w) => Step::LoadMaxVar(f(v), f(w)),
            step => step,
        }
    }

    /// `Load(v)` followed by `self`, as one step, when there is such a step.
    fn after_load(self, v: u32) -> Option<Step> {
        Some(match self {
            Step::AddK(k) => Step::LoadAddK(v, k),
            Step::FloorDivK(k) => Step::LoadFloorDivK(v, k),
            Step::MinK(k) => Step::LoadMinK(v, k),
            Step::MaxK(k) => Step::LoadMaxK(v, k),
            Step::AddVar(w) => Step::LoadAddVar(v, w),
            Step::SubVar(w) => Step::LoadSubVar(v, w),
            Step::MinVar(w) => Step::LoadMinVar(v, w),
            Step::MaxVar(w) => Step::LoadMaxVar(v, w),
            _ => return None,
        })
    }

    /// The fold of formula modifier `key`, of type `kind`; `whole`: its formula has a
    /// whole-number program.
    fn fold_formula(kind: ModKind, key: u32, whole: bool) -> Step {
        match (whole, kind) {
            (false, kind) => Step::General(kind, key),
            (true, ModKind::Set) => Step::FoldSet(key),
            (true, ModKind::Add) => Step::FoldAdd(key),
            (true, ModKind::Multiply) => Step::FoldMul(key),
            (true, ModKind::Max) => Step::FoldMax(key),
            (true, kind) => Step::Fold(kind, key),
        }
    }

    /// A constant modifier's fold, of type `kind`.
    fn fold_whole(kind: ModKind, k: i64) -> Step {
        match kind {
            ModKind::Set => Step::SetK(k),
            ModKind::Add => Step::CurAddK(k),
            kind => Step::FoldK(kind, k),
        }
    }

    /// When this step is a fold: its modifier's type and what it combines.
    fn fold(self) -> Option<(ModKind, FoldOf)> {
        Some(match self {
            Step::FoldSet(f) => (ModKind::Set, FoldOf::Formula(f)),
            Step::FoldAdd(f) => (ModKind::Add, FoldOf::Formula(f)),
            Step::FoldMul(f) => (ModKind::Multiply, FoldOf::Formula(f)),
            Step::FoldMax(f) => (ModKind::Max, FoldOf::Formula(f)),
            Step::Fold(kind, f) => (kind, FoldOf::Formula(f)),
            Step::General(kind, f) => (kind, FoldOf::General(f)),
            Step::SetK(k) => (ModKind::Set, FoldOf::Whole(k)),
            Step::CurAddK(k) => (ModKind::Add, FoldOf::Whole(k)),
            Step::FoldK(kind, k) => (kind, FoldOf::Whole(k)),
            Step::FoldDec(kind, d) => (kind, FoldOf::Dec(d)),
            _ => return None,
        })
    }
}

// A step is two words: the evaluation streams through as few cache lines as it can. An entry
// record is half a line.
const _: () = assert!(std::mem::size_of::<Step>() == 16 && std::mem::size_of::<PlanVar>() == 32);

/// `cur` combined with `v` by a modifier of type `kind` on whole numbers, or `None` when the
/// result is not a whole `i64` (the caller then takes the exact general path).
#[inline(always)]
fn combine_whole(kind: ModKind, cur: i64, v: i64) -> Option<i64> {
    match kind {
        ModKind::Set => Some(v),
        ModKind::Add => cur.checked_add(v),
        ModKind::Multiply => cur.checked_mul(v),
        ModKind::Divide => cur.checked_div(v).filter(|q| q.wrapping_mul(v) == cur),
        ModKind::Max => Some(cur.max(v)),
        ModKind::Min => Some(cur.min(v)),
        ModKind::Append | ModKind::Union => None,
    }
}

/// Applies an entry's leading whole constants to its start, once, when the entry is written:
/// the entry starts from their result (what every evaluation would compute first). A step that
/// does not stay whole stays in the entry, for the exact path to take at evaluation. The entry
/// is `steps[from..]`.
fn fold_leading(start: &mut Option<i64>, steps: &mut Vec<Step>, from: usize) {
    if let Some(mut whole) = *start {
        let mut folded = 0;
        for s in steps.iter().skip(from) {
            let Some((kind, FoldOf::Whole(k))) = s.fold() else { break };
            let Some(next) = combine_whole(kind, whole, k) else { break };
            whole = next;
            folded += 1;
        }
        if folded > 0 {
            *start = Some(whole);
            steps.drain(from..from + folded);
        }
    }
}

/// Formulas on the general path read their inputs from the sheet's values, by slot: the
/// modifier's reads, whose first are its value formula's, in slot order.
struct PlanContext<'a> {
    values: &'a Values,
    reads: &'a [(VarId, NodeIndex)],
}

impl EvalContext for PlanContext<'_> {
    fn value(&self, _: VarId) -> Option<Value> {
        // Plan formulas are NUMBER formulas whose numeric parts read by slot; a formula that
        // needs a `Value` fails here and its variable goes to `Sheet::compute`.
        None
    }

    #[inline(always)]
    fn num_at(&self, slot: usize) -> Option<Option<Num>> {
        let (_, node) = self.reads.get(slot)?;
        Some(self.values.num(node.index()))
    }
}

/// The most room [`with_room`] gives beyond an eighth: arrays up to this long double.
const ROOM_DOUBLED: usize = 256;

/// A copy of `v` with room to grow: a copy of a shape is made for a structural change, which
/// then adds to these arrays, and a copy of exactly their length would move them all again on
/// its first addition (on a Starfinder character, growing the copied arrays was a fifth of
/// adding a race and an armor). Room for an eighth more, and a short array room to double (up
/// to [`ROOM_DOUBLED`] more): a new character on a small ruleset adds about half again its
/// starting sheet's variables (the starter character: each growth of a copied array was a
/// reallocation and a copy, about 3.5k of its 250k instructions in all).
pub(super) fn with_room<T: Clone>(v: &[T]) -> Vec<T> {
    let mut out = Vec::with_capacity(v.len() + (v.len() / 8).max(v.len().min(ROOM_DOUBLED)) + 16);
    out.extend_from_slice(v);
    out
}

/// Copied as a shape's first structural change copies it: the arrays it adds to get room
/// ([`with_room`]); the scratch starts empty.
impl Clone for Plan {
    fn clone(&self) -> Plan {
        Plan {
            vars: with_room(&self.vars),
            steps: with_room(&self.steps),
            decimals: self.decimals.clone(),
            int_ops: with_room(&self.int_ops),
            garbage: self.garbage,
            scratch: Vec::new(),
            stale: self.stale.clone(),
            order: self.order.clone(),
            order_stale: self.order_stale,
            #[cfg(test)]
            compactions: self.compactions,
            level: with_room(&self.level),
            succ: self.succ.clone(),
            native: self.native.clone(),
            native_ok: with_room(&self.native_ok),
            native_len: with_room(&self.native_len),
            // Made and dropped within a batch: a copy is taken between batches.
            ready: Ready::default(),
        }
    }
}

impl Plan {
    // ---- keeping the plan ----

    /// Nodes `nodes` were added (an instance's variables): each starts at level 0 with no
    /// dependents and a stale entry. The per-node arrays grow once for them all.
    pub(super) fn nodes_added(&mut self, nodes: &[NodeIndex]) {
        let Some(top) = nodes.iter().map(|n| n.index()).max() else { return };
        if self.vars.len() <= top {
            self.vars.resize(top + 1, PlanVar::default());
            self.level.resize(top + 1, 0);
            self.succ.grow_to(top);
        }
        for &n in nodes {
            let i = n.index();
            self.level[i] = 0;
            self.succ.clear(i);
            let old = self.vars[i];
            self.garbage += (old.cap - old.first) as usize;
            self.vars[i] = PlanVar::default();
            self.touch(n);
        }
        self.order_stale = true;
        self.drop_native();
    }

    /// Node `n`'s variable was removed.
    pub(super) fn node_removed(&mut self, n: NodeIndex) {
        self.touch(n);
        self.succ.clear(n.index());
        self.order_stale = true;
        self.drop_native();
    }

    /// The level of node `n`.
    #[inline(always)]
    pub(super) fn level_of(&self, n: NodeIndex) -> u32 {
        self.level.get(n.index()).copied().unwrap_or(0)
    }

    /// Counts `count` more edges `from → to` (a modifier of `to` reading `from`, `count`
    /// times); `true` when the edge is new.
    pub(super) fn add_edge(&mut self, from: NodeIndex, to: NodeIndex, count: u32) -> bool {
        if !self.succ.add(from.index(), to.index() as u32, count) {
            return false;
        }
        // The native code runs in the order it was compiled in: an edge backwards in it breaks
        // it. A forward one is a dependent the code of `from` does not wake: `from` goes to
        // the interpreter, which wakes its dependents from `succ`.
        if let Some(code) = &self.native {
            if code.precedes(from.index(), to.index()) {
                if let Some(ok) = self.native_ok.get_mut(from.index()) {
                    *ok = 0;
                }
                if let Some(len) = self.native_len.get_mut(from.index()) {
                    *len = NO_LEN;
                }
            } else {
                self.drop_native();
            }
        }
        true
    }

    /// The edges (target, count) of `from`, which has none yet, all new: added at once (see
    /// `Dependents::fill`), unless native code has to hear of each.
    pub(super) fn add_new_edges(&mut self, from: NodeIndex, edges: &[(u32, u32)]) {
        if self.native.is_some() {
            for &(t, count) in edges {
                self.add_edge(from, NodeIndex::new(t as usize), count);
            }
            return;
        }
        self.succ.fill(from.index(), edges);
    }

    /// Counts one edge `from → to` fewer; `true` when that was its last.
    pub(super) fn remove_edge(&mut self, from: NodeIndex, to: NodeIndex) -> bool {
        self.succ.remove(from.index(), to.index() as u32)
    }

    /// Node `n`'s modifiers changed.
    #[inline]
    pub(super) fn touch(&mut self, n: NodeIndex) {
        if let Some(ok) = self.native_ok.get_mut(n.index()) {
            *ok = 0;
        }
        if let Some(len) = self.native_len.get_mut(n.index()) {
            *len = NO_LEN;
        }
        if let Some(v) = self.vars.get_mut(n.index())
            && !v.stale
        {
            v.stale = true;
            self.stale.push(n.index() as u32);
        }
    }

    /// How many times every entry was written again from scratch (for tests).
    #[cfg(test)]
    pub(super) fn compactions(&self) -> usize {
        self.compactions
    }

    /// Some variable's level changed.
    /// (The native code keeps the order it was compiled in: see `edge_added`.)
    pub(super) fn levels_changed(&mut self) {
        self.order_stale = true;
    }

    /// Forgets the native code: the order it was compiled in may no longer be topological.
    pub(super) fn drop_native(&mut self) {
        if self.native.is_some() {
            self.native = None;
            self.native_ok = Vec::new();
            self.native_len = Vec::new();
        }
    }

    /// Compiles the entries into native code (see [`native`]), unless it
    /// is compiled already. The plan must be fresh, order included (`refresh`, `sort_order`).
    /// On a host Cranelift does not support, the plan keeps interpreting.
    pub(super) fn compile_native(&mut self) {
        if self.native.is_some() || !self.is_fresh(true) {
            return;
        }
        if let Ok(code) = native::compile(self, &self.order) {
            self.native_ok = vec![1; code.span];
            self.native_len = (0..code.span)
                .map(|i| match self.vars.get(i) {
                    Some(v) if v.start.is_some() && !v.stale => v.end - v.first,
                    _ => NO_LEN,
                })
                .collect();
            self.native = Some(Arc::new(code));
        }
    }

    /// The native code and which variables it computes, when there is one for this order.
    pub(super) fn native(&self) -> Option<(&native::Native, &[u8])> {
        let code = self.native.as_deref()?;
        // Compiling sets one flag per variable the code may address; without them, no code.
        (self.native_ok.len() >= code.span).then_some((code, &self.native_ok))
    }

    /// Writes every stale entry again (or all of them, when garbage outweighs the rest), so
    /// the plan matches `sheet`.
    pub(super) fn refresh(&mut self, sheet: &Source<'_>) {
        self.refresh_each(sheet, |_, _, _| false);
    }

    /// [`Plan::refresh`]; when it lays the plan out from scratch, each variable in the full
    /// solve's order is handed to `each` as soon as its entry is written (its steps then in
    /// the cache), with the plan as written so far (every entry before it in the order, every
    /// variable's dependents) and the formulas — until `each` says `false`. Returns how many
    /// variables of the order `each` took, counting none it said `false` for; `None` when
    /// the plan was not laid out from scratch (`each` not called).
    pub(super) fn refresh_each(
        &mut self,
        sheet: &Source<'_>,
        each: impl FnMut(&Plan, Formulas<'_>, usize) -> bool,
    ) -> Option<usize> {
        if self.stale.is_empty() {
            return None;
        }
        // Lay everything out again when garbage outweighs the rest, or when a change touched a
        // large part of a large sheet (one being built): the full layout is in topological
        // order, which a full solve then streams through. A small sheet fits in cache laid out
        // as it is; rewriting all of it for a change to a quarter of it (a character's objects
        // added to its ruleset's starting sheet) cost 7% of building the character.
        let many = self.stale.len() >= COMPACT_STALE_MIN && self.stale.len() * 4 > self.vars.len();
        if self.garbage > GARBAGE_SLACK.max(self.steps.len() / 2) || many {
            return Some(self.compact_each(sheet, each));
        }
        let stale = std::mem::take(&mut self.stale);
        for &i in &stale {
            self.write(sheet, i as usize, true);
        }
        self.stale = stale;
        self.stale.clear();
        None
    }

    /// Writes every entry again from scratch, dropping the garbage (for tests: see
    /// `Sheet::replanned`; otherwise [`Plan::refresh_each`] decides).
    #[cfg(test)]
    pub(super) fn compact(&mut self, sheet: &Source<'_>) {
        self.compact_each(sheet, |_, _, _| false);
    }

    /// Writes every entry again from scratch, dropping the garbage, each variable handed to
    /// `each` as its entry is written (see [`Plan::refresh_each`]). Returns how many `each`
    /// took.
    fn compact_each(
        &mut self,
        sheet: &Source<'_>,
        mut each: impl FnMut(&Plan, Formulas<'_>, usize) -> bool,
    ) -> usize {
        #[cfg(test)]
        {
            self.compactions += 1;
        }
        self.steps.clear();
        self.decimals.clear();
        self.int_ops.clear();
        self.garbage = 0;
        self.stale.clear();
        for v in &mut self.vars {
            *v = PlanVar::default();
        }
        // Live variables in topological order (variables without a node keep empty entries),
        // packed without room to grow: the records a solve streams through stay as few cache
        // lines as they can be (an entry that grows later moves to the end, with room).
        // Room for the steps at once, not by doubling (at 8,000 modifiers, doubling copied
        // about 6% of a sheet's build): a constant is one step, a formula its instructions
        // (fewer when fused) and a fold, and most formulas read one to three variables — two
        // steps a modifier, about.
        self.steps.reserve(2 * sheet.mods.len() + 16);
        let order = self.take_order(sheet);
        let fs = Formulas { mods: sheet.mods, catalog: sheet.catalog };
        let mut taken = 0;
        for (at, &i) in order.iter().enumerate() {
            self.write(sheet, i as usize, false);
            if taken == at && each(self, fs, i as usize) {
                taken += 1;
            }
        }
        self.put_order(order);
        taken
    }

    /// Asks the processor to bring variable `i`'s entry record into the cache ahead of its
    /// evaluation (a large recomputation's next variables: see `Sheet::recompute`).
    #[inline(always)]
    pub(super) fn prefetch_var(&self, i: usize) {
        if let Some(v) = self.vars.get(i) {
            // One line: a record lies on one (see `PlanVar`).
            prefetch(v);
        }
        self.succ.prefetch_run(i);
    }

    /// Asks for variable `i`'s steps and dependents, its record being in the cache by now.
    #[inline(always)]
    pub(super) fn prefetch_steps(&self, i: usize) {
        if let Some(s) = self.vars.get(i).and_then(|v| self.steps.get(v.first as usize)) {
            prefetch(s);
        }
        self.succ.prefetch_targets(i);
    }

    /// Writes variable `i`'s entry from the sheet: its default and modifiers, in place when they
    /// fit in the records reserved for it, else appended — with `room`, with room to grow.
    fn write(&mut self, sheet: &Source<'_>, i: usize, room: bool) {
        // Written anew (perhaps otherwise than the code was compiled from, perhaps not).
        if let Some(len) = self.native_len.get_mut(i) {
            *len = NO_LEN;
        }
        let old = self.vars[i];
        // Decimal constants and instructions in `int_ops` are written again with the entry: the
        // old ones are garbage. (A plan without any has nothing to count: most plans, and the
        // scan is a pass over the entry.)
        if !self.decimals.is_empty() || !self.int_ops.is_empty() {
            let old_steps = self.steps.get(old.first as usize..old.end as usize).unwrap_or_default();
            self.garbage += old_steps.iter().map(Step::side_records).sum::<usize>();
        }
        let Some(n) = sheet.graph.node_weight(NodeIndex::new(i)) else {
            self.vars[i] = PlanVar { start: None, end: old.first, stale: false, ..old };
            return;
        };
        // The entry is made at the end of the steps: where it stays when it does not fit in
        // place (always, when the plan is laid out from scratch), else copied from.
        let mut steps = std::mem::take(&mut self.steps);
        let made = steps.len();
        let mark = self.side_mark();
        let mut start = match &sheet.defaults[n.def.0 as usize] {
            // Most variables: a whole default, read from a dense array rather than from the
            // declaration (a cache miss apiece, the entries written in topological order).
            _ if let Some(whole) = sheet.rules.whole_start(n.def) => Some(whole),
            // A `min` or `max` aggregate does not start from its default (`Sheet::compute`).
            _ if sheet.rules.var(n.def).aggregate.is_some_and(crate::AggKind::starts_empty) => None,
            Value::Number(d) => match Num::from_decimal(*d) {
                Num::Int(whole) => Some(whole),
                // From 0, set to the decimal first (see `PlanVar::start`).
                Num::Dec(d) => {
                    self.decimals.push(d);
                    steps.push(Step::FoldDec(ModKind::Set, self.decimals.len() as u32 - 1));
                    Some(0)
                }
            },
            _ => None,
        };
        for &ModKey(key) in n.mods.iter() {
            if let Some(ready) = self.ready.get(key) {
                steps.extend_from_slice(ready);
                continue;
            }
            let Some(m) = sheet.mods.get(ModKey(key)) else { continue };
            if self
                .push_steps(key, m, m.held.body(sheet.catalog), m.held.recipe(sheet.catalog), &mut steps)
                .is_none()
            {
                start = None;
                break;
            }
        }
        if start.is_none() {
            steps.truncate(made);
            self.take_back(mark);
        }
        fold_leading(&mut start, &mut steps, made);
        let len = (steps.len() - made) as u32;
        let (first, cap) = if len <= old.cap - old.first {
            steps.copy_within(made.., old.first as usize);
            steps.truncate(made);
            (old.first, old.cap)
        } else {
            self.garbage += (old.cap - old.first) as usize;
            let first = made as u32;
            let cap = first + if room { (2 * len).max(4) } else { len };
            steps.resize(cap as usize, Step::LoadK(0));
            (first, cap)
        };
        self.steps = steps;
        self.vars[i] = PlanVar { start, first, end: first + len, cap, stale: false };
    }

    /// Modifier `key` (`m`) was linked last in node `n`'s list (it applies after every other):
    /// its steps go at the end of `n`'s entry, which is what writing the whole entry again would
    /// give, at the cost of one modifier. An entry stale already, or one the plan does not
    /// compute, is left to `touch`.
    pub(super) fn appended(
        &mut self,
        n: NodeIndex,
        key: u32,
        m: &Modifier,
        (body, recipe): (&Body, Option<&[Step]>),
    ) {
        let i = n.index();
        let v = match self.vars.get(i) {
            Some(v) if !v.stale && v.start.is_some() => *v,
            _ => return self.touch(n),
        };
        if let Some(ok) = self.native_ok.get_mut(i) {
            *ok = 0;
        }
        // Constants leading an empty entry fold into its start, which the code was compiled
        // with: taking them off again does not restore it.
        if v.first == v.end
            && let Some(len) = self.native_len.get_mut(i)
        {
            *len = NO_LEN;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let mark = self.side_mark();
        if self.push_steps(key, m, body, recipe, &mut scratch).is_none() {
            // The plan cannot compute this modifier: the variable leaves the plan (as `write`
            // would leave it), and what its steps added is taken back.
            self.take_back(mark);
            self.vars[i] = PlanVar { start: None, end: v.first, ..v };
            self.scratch = scratch;
            return;
        }
        // Leading constants fold into the start only while nothing is left before them.
        let mut start = v.start;
        if v.first == v.end {
            fold_leading(&mut start, &mut scratch, 0);
        }
        let len = scratch.len() as u32;
        let (first, end, cap) = if v.end + len <= v.cap {
            (v.first, v.end + len, v.cap)
        } else {
            // Moved to the end, with room to grow; the old records become garbage.
            let have = v.end - v.first;
            let first = self.steps.len() as u32;
            let cap = first + (2 * (have + len)).max(4);
            self.steps.resize(cap as usize, Step::LoadK(0));
            self.steps.copy_within(v.first as usize..v.end as usize, first as usize);
            self.garbage += (v.cap - v.first) as usize;
            (first, first + have + len, cap)
        };
        self.steps[(end - len) as usize..end as usize].copy_from_slice(&scratch);
        self.scratch = scratch;
        self.vars[i] = PlanVar { start, first, end, cap, stale: false };
    }

    /// The last modifier of `n`'s list, a whole-number constant of type `kind` (`k`), was
    /// removed: a fresh entry that ends with its step drops that step (the step a constant
    /// writes is its modifier's whole record: constants fold into the start only while nothing
    /// is before them, so an entry with steps ends with the last one's). Any other entry is
    /// written again ([`Plan::touch`]).
    pub(super) fn popped(&mut self, n: NodeIndex, kind: ModKind, k: i64) {
        let i = n.index();
        match self.vars.get(i) {
            Some(v)
                if !v.stale
                    && v.start.is_some()
                    && v.end > v.first
                    && self.steps.get(v.end as usize - 1) == Some(&Step::fold_whole(kind, k)) =>
            {
                self.vars[i].end -= 1;
                // Back to the entry the code was compiled from, or not.
                let len = self.vars[i].end - self.vars[i].first;
                let compiled = self.native_len.get(i) == Some(&len);
                if let Some(ok) = self.native_ok.get_mut(i) {
                    *ok = u8::from(compiled);
                }
            }
            _ => self.touch(n),
        }
    }

    /// Where the records beside the steps end now (decimals, instructions in `int_ops`): what
    /// steps about to be written add goes after it.
    fn side_mark(&self) -> (usize, usize) {
        (self.decimals.len(), self.int_ops.len())
    }

    /// Takes back the records added beside the steps since `mark` (steps the plan then did not
    /// keep: their entry cannot be computed by it).
    fn take_back(&mut self, (decimals, int_ops): (usize, usize)) {
        self.decimals.truncate(decimals);
        self.int_ops.truncate(int_ops);
    }

    /// Makes the steps of modifier `key` (`m`, just linked in bulk, its template's `body` and
    /// `recipe`) for its entry to copy when it is written (see [`Ready`]). A modifier whose steps
    /// need decimals or instructions beside them (rare), or that the plan does not compute, is
    /// left to the entry's writing.
    #[inline]
    pub(super) fn make_ready(&mut self, key: u32, m: &Modifier, body: &Body, recipe: Option<&[Step]>) {
        let ready = &mut self.ready;
        if ready.spans.is_empty() {
            ready.from = key;
        }
        let Some(at) = key.checked_sub(ready.from).map(|at| at as usize) else { return };
        if ready.spans.len() <= at {
            ready.spans.resize(at + 1, NOT_READY);
        }
        let start = ready.steps.len();
        // Nearly every modifier: written straight into the made steps.
        match push_plain(key, m, body, recipe, &mut ready.steps) {
            Plain::Done => {
                ready.spans[at] = (start as u64) << 32 | (ready.steps.len() - start) as u64;
                return;
            }
            Plain::NotComputed => return,
            Plain::Other => {}
        }
        let mut out = std::mem::take(&mut ready.steps);
        let mark = self.side_mark();
        let made = self.push_steps(key, m, body, recipe, &mut out).is_some() && self.side_mark() == mark;
        if made {
            self.ready.spans[at] = (start as u64) << 32 | (out.len() - start) as u64;
        } else {
            out.truncate(start);
            self.take_back(mark);
        }
        self.ready.steps = out;
    }

    /// Room for the steps of `mods` modifiers linked in bulk (about two each).
    pub(super) fn reserve_ready(&mut self, mods: usize) {
        self.ready.spans.reserve(mods);
        self.ready.steps.reserve(2 * mods);
    }

    /// Drops every modifier's made steps (a modifier was unlinked or replaced, or the batch
    /// ended: see [`Ready`]).
    #[inline]
    pub(super) fn forget_ready(&mut self) {
        if !self.ready.spans.is_empty() {
            self.ready.spans.clear();
            self.ready.steps.clear();
        }
    }

    /// Whether modifiers' steps are held made (see [`Ready`]).
    pub(super) fn holds_ready(&self) -> bool {
        !self.ready.spans.is_empty()
    }

    /// Appends `m` (modifier `key`) to `out` as steps, or `None` when the plan cannot compute it
    /// (a condition, a value that is not a NUMBER).
    #[inline(always)]
    fn push_steps(
        &mut self,
        key: u32,
        m: &Modifier,
        body: &Body,
        recipe: Option<&[Step]>,
        out: &mut Vec<Step>,
    ) -> Option<()> {
        match push_plain(key, m, body, recipe, out) {
            Plain::Done => return Some(()),
            Plain::NotComputed => return None,
            Plain::Other => {}
        }
        match (&body.value, m.const_num) {
            (_, Some(Num::Dec(d))) => {
                self.decimals.push(d);
                out.push(Step::FoldDec(m.kind, self.decimals.len() as u32 - 1));
            }
            (ModValue::Formula(f), None)
                if *f.format() == formula::Format::Number && m.value_slots().len() == f.variables().len() =>
            {
                let slots = m.value_slots();
                let node = |slot: u32| slots.get(slot as usize).map_or(u32::MAX, |(_, n)| n.index() as u32);
                let program = f.int_program().unwrap_or_default();
                if !self.program_steps(program, node, out) {
                    return None;
                }
                out.push(Step::fold_formula(m.kind, key, !program.is_empty()));
            }
            _ => return None,
        }
        Some(())
    }

    /// Appends the steps of whole-number program `program` (its variables through `node`) to
    /// `out`: each instruction a step of its own when the program runs in one register, else
    /// one `Program` step over its instructions copied into `int_ops`. `false` when the
    /// program cannot be laid out (never, for a program [`Formula::int_program`] gives).
    fn program_steps(
        &mut self,
        program: &[IntOp],
        node: impl Fn(u32) -> u32 + Copy,
        out: &mut Vec<Step>,
    ) -> bool {
        let straight = matches!(program.first(), Some(IntOp::Var(_) | IntOp::Const(_)))
            && program[1..].iter().all(|op| op.is_top_only());
        match program.split_first() {
            Some((first, rest)) if straight => {
                let int_ops = &mut self.int_ops;
                let mut rest = rest.iter().map(|op| Step::op(op.renumber(node), int_ops)).peekable();
                out.push(match first.renumber(node) {
                    IntOp::Var(v) => match rest.peek().and_then(|s| s.after_load(v)) {
                        Some(fused) => {
                            rest.next();
                            fused
                        }
                        None => Step::Load(v),
                    },
                    IntOp::Const(k) => Step::LoadK(k),
                    // `straight` says the first instruction is one of those.
                    _ => return false,
                });
                out.extend(rest);
            }
            Some(_) => {
                let ops = self.int_ops.len() as u32;
                self.int_ops.extend(program.iter().map(|op| op.renumber(node)));
                out.push(Step::Program { ops, len: program.len() as u32 });
            }
            None => {}
        }
        true
    }

    /// The steps of formula `f`'s whole-number program with its slots for variables, when they
    /// are steps of their own (no `int_ops`): what a template keeps, so that linking it only
    /// renumbers them ([`Step::renumber`]) rather than translating its program each time.
    pub(super) fn recipe(f: &Formula) -> Option<Box<[Step]>> {
        if *f.format() != formula::Format::Number {
            return None;
        }
        let program = f.int_program().filter(|p| !p.is_empty())?;
        let mut plan = Plan::default();
        let mut out = Vec::new();
        (plan.program_steps(program, |slot| slot, &mut out) && plan.int_ops.is_empty()).then(|| out.into())
    }

    /// Takes out every live variable of `sheet` in ascending (level, index), sorted again if
    /// needed (to iterate it while evaluating); give it back with `put_order`.
    pub(super) fn take_order(&mut self, sheet: &Source<'_>) -> Vec<u32> {
        self.sort_order(sheet);
        std::mem::take(&mut self.order)
    }

    /// Sorts the full solve's order again, if a change left it stale.
    pub(super) fn sort_order(&mut self, sheet: &Source<'_>) {
        if self.order_stale {
            // A counting sort by level (levels are below the number of variables), each level
            // in ascending index: linear, where sorting the pairs compared them.
            let graph = &sheet.graph;
            let top = graph.node_indices().map(|n| self.level_of(n) as usize).max().unwrap_or(0);
            let mut start = vec![0u32; top + 2];
            for n in graph.node_indices() {
                start[self.level_of(n) as usize + 1] += 1;
            }
            for l in 0..=top {
                start[l + 1] += start[l];
            }
            self.order.clear();
            self.order.resize(graph.node_count(), 0);
            for n in graph.node_indices() {
                let at = &mut start[self.level_of(n) as usize];
                self.order[*at as usize] = n.index() as u32;
                *at += 1;
            }
            self.order_stale = false;
        }
    }

    pub(super) fn put_order(&mut self, order: Vec<u32>) {
        self.order = order;
    }

    // ---- evaluating ----

    /// The value of variable `i` as the plan computes it, or `None` when the plan does not
    /// compute it or hit an error (the caller then uses `Sheet::compute`): on machine integers
    /// while every step stays whole, else (from the start) on [`Num`]s.
    #[inline(always)]
    pub(super) fn eval(&self, vals: &Values, i: usize, fs: Formulas<'_>) -> Option<Num> {
        let v = self.vars.get(i)?;
        let start = v.start?;
        let steps = self.steps.get(v.first as usize..v.end as usize)?;
        if let Some(x) = self.run_whole(vals, start, steps) {
            return Some(Num::Int(x));
        }
        self.run_num(vals, Num::Int(start), steps, fs)
    }

    /// How many variable slots the plan has (one more than the highest node index).
    pub(super) fn variable_slots(&self) -> usize {
        self.vars.len()
    }

    /// Whether the plan is up to date: no entry is stale and, with `order`, the full solve's
    /// order is sorted.
    pub(super) fn is_fresh(&self, order: bool) -> bool {
        self.stale.is_empty() && !(order && self.order_stale)
    }

    /// Every live variable in ascending (level, index) — sorted when the plan is fresh.
    pub(super) fn order(&self) -> &[u32] {
        &self.order
    }

    /// About how many bytes the plan holds.
    pub(super) fn footprint(&self) -> usize {
        use std::mem::size_of;
        self.vars.len() * size_of::<PlanVar>()
            + self.steps.len() * size_of::<Step>()
            + self.order.len() * 4
            + self.succ.footprint()
            + self.level.len() * 8
            + self.int_ops.len() * size_of::<IntOp>()
            + self.native_ok.len()
            + self.native_len.len() * 4
    }

    /// An entry's value on machine integers from `cur`, or `None` when a step does not stay
    /// whole (or is not for this path: a decimal, a formula without a whole-number program).
    #[inline(always)]
    fn run_whole(&self, vals: &Values, mut cur: i64, steps: &[Step]) -> Option<i64> {
        let mut acc = 0i64;
        for &s in steps {
            match s {
                Step::FoldSet(_) => cur = combine_whole(ModKind::Set, cur, acc)?,
                Step::FoldAdd(_) => cur = combine_whole(ModKind::Add, cur, acc)?,
                Step::FoldMul(_) => cur = combine_whole(ModKind::Multiply, cur, acc)?,
                Step::FoldMax(_) => cur = combine_whole(ModKind::Max, cur, acc)?,
                Step::Fold(kind, _) => cur = combine_whole(kind, cur, acc)?,
                Step::SetK(k) => cur = combine_whole(ModKind::Set, cur, k)?,
                Step::CurAddK(k) => cur = combine_whole(ModKind::Add, cur, k)?,
                Step::FoldK(kind, k) => cur = combine_whole(kind, cur, k)?,
                Step::General(..) | Step::FoldDec(..) => return None,
                s => acc = self.acc_step(vals, s, acc)?,
            }
        }
        Some(cur)
    }

    /// `acc` after step `s`, one of a formula's whole-number steps; `None` when it does not stay
    /// whole, or `s` is a fold. Every step is its `IntOp` (its semantics are defined there once),
    /// with the operation fixed by the step, so each arm compiles to the instruction itself.
    #[inline(always)]
    fn acc_step(&self, vals: &Values, s: Step, acc: i64) -> Option<i64> {
        let read = |v: u32| vals.int(v as usize);
        Some(match s {
            Step::Load(v) => read(v)?,
            Step::LoadK(k) => k,
            Step::AddK(k) => IntOp::AddK(k).apply_top(acc, read)?,
            Step::SubK(k) => IntOp::SubK(k).apply_top(acc, read)?,
            Step::MulK(k) => IntOp::MulK(k).apply_top(acc, read)?,
            Step::FloorDivK(k) => IntOp::FloorDivK(k).apply_top(acc, read)?,
            Step::MinK(k) => IntOp::MinK(k).apply_top(acc, read)?,
            Step::MaxK(k) => IntOp::MaxK(k).apply_top(acc, read)?,
            Step::AddVar(v) => IntOp::AddVar(v).apply_top(acc, read)?,
            Step::SubVar(v) => IntOp::SubVar(v).apply_top(acc, read)?,
            Step::MulVar(v) => IntOp::MulVar(v).apply_top(acc, read)?,
            Step::MinVar(v) => IntOp::MinVar(v).apply_top(acc, read)?,
            Step::MaxVar(v) => IntOp::MaxVar(v).apply_top(acc, read)?,
            Step::OpAt(at) => self.int_ops.get(at as usize)?.apply_top(acc, read)?,
            Step::LoadAddK(v, k) => IntOp::AddK(k).apply_top(read(v)?, read)?,
            Step::LoadFloorDivK(v, k) => IntOp::FloorDivK(k).apply_top(read(v)?, read)?,
            Step::LoadMinK(v, k) => IntOp::MinK(k).apply_top(read(v)?, read)?,
            Step::LoadMaxK(v, k) => IntOp::MaxK(k).apply_top(read(v)?, read)?,
            Step::LoadAddVar(v, w) => IntOp::AddVar(w).apply_top(read(v)?, read)?,
            Step::LoadSubVar(v, w) => IntOp::SubVar(w).apply_top(read(v)?, read)?,
            Step::LoadMinVar(v, w) => IntOp::MinVar(w).apply_top(read(v)?, read)?,
            Step::LoadMaxVar(v, w) => IntOp::MaxVar(w).apply_top(read(v)?, read)?,
            Step::Program { ops, len } => self.whole_formula(vals, ops, len)?,
            _ => return None,
        })
    }

    /// The value in `acc` after `steps`, a formula's whole-number steps (before its fold).
    fn run_acc(&self, vals: &Values, steps: &[Step]) -> Option<i64> {
        steps.iter().try_fold(0, |acc, &s| self.acc_step(vals, s, acc))
    }

    /// An entry's value on [`Num`]s from `cur`, exact; `None` on any error (the caller
    /// recomputes the variable the reference way, which reports it). A formula takes its
    /// whole-number steps when they answer, else its general evaluation.
    fn run_num(&self, vals: &Values, mut cur: Num, steps: &[Step], fs: Formulas<'_>) -> Option<Num> {
        // Where the current modifier's steps begin.
        let mut group = 0;
        for (i, &s) in steps.iter().enumerate() {
            // A formula's whole-number steps: its fold runs them.
            let Some((kind, of)) = s.fold() else { continue };
            let v = match of {
                FoldOf::Whole(k) => Num::Int(k),
                FoldOf::Dec(d) => Num::Dec(*self.decimals.get(d as usize)?),
                FoldOf::Formula(f) => match self.run_acc(vals, steps.get(group..i)?) {
                    Some(x) => Num::Int(x),
                    None => self.general(vals, f, cur, fs)?,
                },
                FoldOf::General(f) => self.general(vals, f, cur, fs)?,
            };
            cur = kind.apply_num(cur, v).ok()?;
            group = i + 1;
        }
        Some(cur)
    }

    /// Modifier `key`'s formula's value the general way, exact, with `cur` as its input.
    fn general(&self, vals: &Values, key: u32, cur: Num, fs: Formulas<'_>) -> Option<Num> {
        let (formula, m) = fs.formula(key)?;
        let cx = PlanContext { values: vals, reads: m.value_slots() };
        let input = if formula.uses_input() { Some(Value::Number(cur.to_decimal())) } else { None };
        formula.evaluate_num(&cx, input.as_ref()).ok()
    }

    /// The value of the whole-number program `int_ops[ops..ops + len]`, when it answers.
    #[inline(always)]
    fn whole_formula(&self, vals: &Values, ops: u32, len: u32) -> Option<i64> {
        if len == 0 {
            return None;
        }
        let program = self.int_ops.get(ops as usize..(ops + len) as usize)?;
        run_int(program, |i| vals.int(i as usize))
    }
}

/// A hint that `p`'s cache line is wanted soon (nothing on targets without one).
#[inline(always)]
pub(super) fn prefetch<T>(p: &T) {
    prefetch_at(std::ptr::from_ref(p).cast::<u8>());
}

/// A hint that the line holding address `at` is wanted soon. Any address will do: a prefetch
/// reads nothing and cannot fault.
#[inline(always)]
fn prefetch_at(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it reads nothing and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch(at.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}
