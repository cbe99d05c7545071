//! The plan: a sheet's NUMBER modifiers flattened into contiguous arrays, indexed by variable,
//! kept up to date across structural changes, with each variable's level and dependents. Part of
//! the sheet's shared [`Shape`]; it reads the values, which are each sheet's own
//! ([`Values`]). Both the incremental recomputation and the full solve evaluate through it.
//!
//! Evaluating a variable by walking the graph means chasing a pointer per modifier into a
//! heap-scattered table and then into its formula, and reading every input through the graph's
//! node weights: on a sheet of thousands of modifiers the time goes to cache misses, not
//! arithmetic. The plan lays out, per variable, its NUMBER modifiers in application order (24
//! bytes each), the whole-number programs of their formulas copied inline with inputs renumbered
//! to variable indexes, which read whole values straight from the sheet's dense `i64` array, so
//! an evaluation streams through memory and, in the common case, never touches a formula. An
//! entry's leading whole constants are applied when it is written: it starts from their result.
//!
//! **Kept, not rebuilt.** A structural change marks only what it touched:
//! - a modifier linked or unlinked marks its target *stale*; the target's entry is written again
//!   (appended at the end of the arrays, the old range left as garbage) before the next
//!   evaluation, once however many modifiers the batch changed;
//! - a variable added or removed, or a level raised, marks the full solve's order stale; it is
//!   sorted again (by level) only when a full solve needs it;
//! - when garbage outweighs the live entries, every entry is written again from scratch.
//!
//! **Invariants.**
//! - Before an evaluation, no entry is stale (`refresh`); before a full solve, the order is
//!   sorted. Both are brought up to date only on a sheet that owns its shape (a structural change
//!   made it its own), or by `Sheet::prepare_to_share` before copies are made.
//!
//! The plan is an optimisation only: a variable it cannot handle — not a NUMBER, a modifier
//! with a condition, an input without a value, any evaluation error — is computed by
//! [`Sheet::compute`], the one function that defines values, and the property tests hold both
//! paths to the same results. Within the plan, a step that does not stay whole (7/2, overflow of
//! `i64`) continues on [`Num`]s with the formula's general evaluation, which is exact.

use super::values::Values;
use super::{ModValue, Modifier, Node, Shape};
use crate::modifier::ModKind;
use formula::{EvalContext, Formula, IntOp, Num, Value, VarId, run_int};
use petgraph::stable_graph::NodeIndex;
use petgraph::stable_graph::StableDiGraph;
use rust_decimal::Decimal;
use std::sync::Arc;

/// No formula: in [`Plan::formula_of`].
const NONE: u32 = u32::MAX;

/// Garbage (abandoned modifier records) tolerated before every entry is written again (small
/// in tests, so that tests reach compaction).
const GARBAGE_SLACK: usize = if cfg!(test) { 64 } else { 4096 };

/// What the plan is laid out from: the rest of its shape.
pub(super) struct Source<'a> {
    graph: &'a StableDiGraph<Node, u32>,
    mods: &'a [Option<Arc<Modifier>>],
    defaults: &'a [Value],
}

impl Shape {
    /// The plan, to change, and what it is laid out from.
    pub(super) fn plan_and_source(&mut self) -> (&mut Plan, Source<'_>) {
        let Shape { plan, graph, mods, defaults, .. } = self;
        (plan, Source { graph, mods, defaults })
    }
}

/// The plan of a sheet (see the module docs). Every per-variable vector is indexed by the
/// variable's node index.
#[derive(Clone, Debug, Default)]
pub(super) struct Plan {
    vars: Vec<PlanVar>,
    /// Modifier records, variable after variable (with garbage between).
    mods: Vec<PlanMod>,
    /// Decimal constants (rare), by `PlanValue::Dec`.
    decimals: Vec<Decimal>,
    /// Formulas, by `PlanValue::Formula`: one per planned modifier, kept while it is linked.
    formulas: Vec<PlanFormula>,
    /// The formula of each modifier, by modifier key (`NONE`: none yet).
    formula_of: Vec<u32>,
    /// Slots of `formulas` free for reuse.
    free_formulas: Vec<u32>,
    /// Inputs of formulas for the general path: node indexes, in slot order.
    reads: Vec<u32>,
    /// Whole-number programs of formulas, with variables renumbered to node indexes.
    int_ops: Vec<IntOp>,
    /// Records in `mods`, and formulas in `formulas`, that no entry refers to any more.
    garbage: usize,
    /// Where an entry's records are built before they are copied into place (reused).
    scratch: Vec<PlanMod>,
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
    /// Each variable's dependents: the targets of its outgoing edges, each once.
    pub(super) succ: Vec<Vec<u32>>,
}

#[derive(Clone, Copy, Debug, Default)]
struct PlanVar {
    /// The default, when the plan computes this variable; `None` sends it to `Sheet::compute`.
    start: Option<Num>,
    /// Its modifiers: `mods[first..end]`.
    first: u32,
    end: u32,
    /// The records reserved for it, `mods[first..cap]`: an entry that grows within them is
    /// written in place.
    cap: u32,
    stale: bool,
}

#[derive(Clone, Copy, Debug)]
struct PlanMod {
    kind: ModKind,
    value: PlanValue,
}

#[derive(Clone, Copy, Debug)]
enum PlanValue {
    /// A whole constant.
    Whole(i64),
    /// Another constant: `decimals[i]`.
    Dec(u32),
    /// `formulas[index]`, whose whole-number program (if any) is `int_ops[ops..ops + len]`
    /// (copied from the formula's record so that the whole-number path never reads it).
    Formula { index: u32, ops: u32, len: u32 },
}

#[derive(Clone, Debug)]
struct PlanFormula {
    formula: Arc<Formula>,
    /// Its inputs: `reads[first..first + count]`.
    first: u32,
    count: u32,
    /// Its whole-number program: `int_ops[ops..ops + len]` (`len` 0: none).
    ops: u32,
    len: u32,
}

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
        ModKind::Append => None,
    }
}

/// Formulas on the general path read their inputs from the sheet's values, by slot.
struct PlanContext<'a> {
    values: &'a Values,
    reads: &'a [u32],
}

impl EvalContext for PlanContext<'_> {
    fn value(&self, _: VarId) -> Option<Value> {
        // Plan formulas are NUMBER formulas whose numeric parts read by slot; a formula that
        // needs a `Value` fails here and its variable goes to `Sheet::compute`.
        None
    }

    #[inline(always)]
    fn num_at(&self, slot: usize) -> Option<Option<Num>> {
        let pos = *self.reads.get(slot)?;
        Some(self.values.num(pos as usize))
    }
}

impl Plan {
    // ---- keeping the plan ----

    /// A variable was created in node `n`.
    pub(super) fn node_added(&mut self, n: NodeIndex) {
        let i = n.index();
        if self.vars.len() <= i {
            self.vars.resize(i + 1, PlanVar::default());
            self.level.resize(i + 1, 0);
            self.succ.resize_with(i + 1, Vec::new);
        }
        self.level[i] = 0;
        self.succ[i].clear();
        let old = self.vars[i];
        self.garbage += (old.cap - old.first) as usize;
        self.vars[i] = PlanVar::default();
        self.touch(n);
        self.order_stale = true;
    }

    /// Node `n`'s variable was removed.
    pub(super) fn node_removed(&mut self, n: NodeIndex) {
        self.touch(n);
        if let Some(s) = self.succ.get_mut(n.index()) {
            s.clear();
        }
        self.order_stale = true;
    }

    /// The level of node `n`.
    #[inline(always)]
    pub(super) fn level_of(&self, n: NodeIndex) -> u32 {
        self.level.get(n.index()).copied().unwrap_or(0)
    }

    /// A first edge `from → to` was added.
    pub(super) fn edge_added(&mut self, from: NodeIndex, to: NodeIndex) {
        if let Some(s) = self.succ.get_mut(from.index()) {
            s.push(to.index() as u32);
        }
    }

    /// The last edge `from → to` was removed.
    pub(super) fn edge_removed(&mut self, from: NodeIndex, to: NodeIndex) {
        if let Some(s) = self.succ.get_mut(from.index())
            && let Some(p) = s.iter().position(|x| *x == to.index() as u32)
        {
            s.swap_remove(p);
        }
    }

    /// Node `n`'s modifiers changed.
    #[inline]
    pub(super) fn touch(&mut self, n: NodeIndex) {
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
    pub(super) fn levels_changed(&mut self) {
        self.order_stale = true;
    }

    /// Writes every stale entry again (or all of them, when garbage outweighs the rest), so
    /// the plan matches `sheet`.
    pub(super) fn refresh(&mut self, sheet: &Source<'_>) {
        if self.stale.is_empty() {
            return;
        }
        // Lay everything out again when garbage outweighs the rest, or when a change touched a
        // large part of the sheet (a sheet being built): the full layout is in topological
        // order, which a full solve then streams through.
        if self.garbage > GARBAGE_SLACK.max(self.mods.len() / 2) || self.stale.len() * 4 > self.vars.len() {
            self.compact(sheet);
            return;
        }
        let stale = std::mem::take(&mut self.stale);
        for &i in &stale {
            self.write(sheet, i as usize, true);
        }
        self.stale = stale;
        self.stale.clear();
    }

    /// Writes every entry again from scratch, dropping the garbage.
    pub(super) fn compact(&mut self, sheet: &Source<'_>) {
        #[cfg(test)]
        {
            self.compactions += 1;
        }
        self.mods.clear();
        self.decimals.clear();
        self.formulas.clear();
        self.formula_of.clear();
        self.free_formulas.clear();
        self.reads.clear();
        self.int_ops.clear();
        self.garbage = 0;
        self.stale.clear();
        for v in &mut self.vars {
            *v = PlanVar::default();
        }
        // Live variables in topological order (variables without a node keep empty entries),
        // packed without room to grow: the records a solve streams through stay as few cache
        // lines as they can be (an entry that grows later moves to the end, with room).
        let order = self.take_order(sheet);
        for &i in &order {
            self.write(sheet, i as usize, false);
        }
        self.put_order(order);
    }

    /// Writes variable `i`'s entry from the sheet: its default and modifiers, in place when they
    /// fit in the records reserved for it, else appended — with `room`, with room to grow.
    fn write(&mut self, sheet: &Source<'_>, i: usize, room: bool) {
        let old = self.vars[i];
        // Decimal constants are written again with the entry: the old ones are garbage.
        let decimals = self
            .mods
            .get(old.first as usize..old.end as usize)
            .map_or(0, |m| m.iter().filter(|m| matches!(m.value, PlanValue::Dec(_))).count());
        self.garbage += decimals;
        let Some(n) = sheet.graph.node_weight(NodeIndex::new(i)) else {
            self.vars[i] = PlanVar { start: None, end: old.first, stale: false, ..old };
            return;
        };
        let mut start = match &sheet.defaults[n.def.0 as usize] {
            Value::Number(d) => Some(Num::from_decimal(*d)),
            _ => None,
        };
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        for (key, m) in n.mods.iter().filter_map(|k| Some((k.0, sheet.mods[k.0 as usize].as_ref()?))) {
            match self.step(key, m) {
                Some(pm) => scratch.push(pm),
                None => {
                    start = None;
                    break;
                }
            }
        }
        if start.is_none() {
            scratch.clear();
        }
        // Leading whole constants are applied now, once: the entry starts from their result
        // (what every evaluation would compute first). A step that does not stay whole stays
        // in the entry, for the exact path to take at evaluation.
        if let Some(Num::Int(mut whole)) = start {
            let mut folded = 0;
            for m in &scratch {
                let PlanValue::Whole(k) = m.value else { break };
                let Some(next) = combine_whole(m.kind, whole, k) else { break };
                whole = next;
                folded += 1;
            }
            if folded > 0 {
                start = Some(Num::Int(whole));
                scratch.drain(..folded);
            }
        }
        let len = scratch.len() as u32;
        let (first, cap) = if len <= old.cap - old.first {
            (old.first, old.cap)
        } else {
            self.garbage += (old.cap - old.first) as usize;
            let first = self.mods.len() as u32;
            (first, first + if room { (2 * len).max(4) } else { len })
        };
        let end = first + len;
        if cap as usize > self.mods.len() {
            self.mods.resize(cap as usize, PlanMod { kind: ModKind::Set, value: PlanValue::Whole(0) });
        }
        self.mods[first as usize..end as usize].copy_from_slice(&scratch);
        self.scratch = scratch;
        self.vars[i] = PlanVar { start, first, end, cap, stale: false };
    }

    /// Modifier `key` was unlinked: its formula's slot is free.
    pub(super) fn release(&mut self, key: u32) {
        if let Some(f) = self.formula_of.get_mut(key as usize)
            && *f != NONE
        {
            self.free_formulas.push(*f);
            *f = NONE;
            self.garbage += 1;
        }
    }

    /// `m` (modifier `key`) as a plan step, or `None` when the plan cannot compute it (a
    /// condition, a value that is not a NUMBER).
    fn step(&mut self, key: u32, m: &Modifier) -> Option<PlanMod> {
        if m.condition.is_some() || m.kind == ModKind::Append {
            return None;
        }
        let value = match (&m.value, m.const_num) {
            (_, Some(Num::Int(k))) => PlanValue::Whole(k),
            (_, Some(Num::Dec(d))) => {
                self.decimals.push(d);
                PlanValue::Dec(self.decimals.len() as u32 - 1)
            }
            (ModValue::Formula(f), None)
                if *f.format() == formula::Format::Number && m.value_slots.len() == f.variables().len() =>
            {
                let index = match self.formula_of.get(key as usize) {
                    Some(&index) if index != NONE => index,
                    _ => self.add_formula(key, m, f),
                };
                let pf = self.formulas.get(index as usize)?;
                PlanValue::Formula { index, ops: pf.ops, len: pf.len }
            }
            _ => return None,
        };
        Some(PlanMod { kind: m.kind, value })
    }

    /// Lays out modifier `key`'s formula `f`: its inputs and whole-number program, renumbered to
    /// node indexes. Returns its slot in `formulas`.
    fn add_formula(&mut self, key: u32, m: &Modifier, f: &Arc<Formula>) -> u32 {
        let first = self.reads.len() as u32;
        self.reads.extend(m.value_slots.iter().map(|n| n.index() as u32));
        let ops = self.int_ops.len() as u32;
        if let Some(program) = f.int_program() {
            // An unknown slot reads as "not whole": the general path decides.
            let node = |slot: u32| m.value_slots.get(slot as usize).map_or(u32::MAX, |n| n.index() as u32);
            let renumbered = program.iter().map(|op| op.renumber(node));
            self.int_ops.extend(renumbered);
        }
        let len = self.int_ops.len() as u32 - ops;
        let pf = PlanFormula { formula: f.clone(), first, count: m.value_slots.len() as u32, ops, len };
        let index = match self.free_formulas.pop() {
            Some(i) => {
                self.formulas[i as usize] = pf;
                i
            }
            None => {
                self.formulas.push(pf);
                self.formulas.len() as u32 - 1
            }
        };
        if self.formula_of.len() <= key as usize {
            self.formula_of.resize(key as usize + 1, NONE);
        }
        self.formula_of[key as usize] = index;
        index
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
            let graph = &sheet.graph;
            let mut keyed: Vec<(u32, u32)> =
                graph.node_indices().map(|n| (self.level_of(n), n.index() as u32)).collect();
            keyed.sort_unstable();
            self.order.clear();
            self.order.extend(keyed.into_iter().map(|(_, i)| i));
            self.order_stale = false;
        }
    }

    pub(super) fn put_order(&mut self, order: Vec<u32>) {
        self.order = order;
    }

    // ---- evaluating ----

    /// The value of variable `i` as the plan computes it, or `None` when the plan does not
    /// compute it or hit an error (the caller then uses `Sheet::compute`).
    #[inline(always)]
    pub(super) fn eval(&self, vals: &Values, i: usize) -> Option<Num> {
        let v = self.vars.get(i)?;
        let start = v.start?;
        self.run_var(vals, v, start)
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
            + self.mods.len() * size_of::<PlanMod>()
            + self.formulas.len() * size_of::<PlanFormula>()
            + (self.reads.len() + self.order.len()) * 4
            + self.succ.iter().map(|s| 24 + 4 * s.capacity()).sum::<usize>()
            + self.level.len() * 8
            + self.int_ops.len() * size_of::<IntOp>()
    }

    /// One variable's value: on machine integers while every step stays whole, then on
    /// [`Num`]s; `None` on any error.
    #[inline(always)]
    fn run_var(&self, vals: &Values, v: &PlanVar, start: Num) -> Option<Num> {
        let mods = self.mods.get(v.first as usize..v.end as usize)?;
        let (mut cur, mut rest) = (start, mods);
        if let Num::Int(mut whole) = start {
            let mut done = 0;
            for m in mods {
                match self.apply_int(vals, m, whole) {
                    Some(x) => whole = x,
                    None => break,
                }
                done += 1;
            }
            cur = Num::Int(whole);
            rest = &mods[done..];
        }
        rest.iter().try_fold(cur, |cur, m| self.apply(vals, m, cur))
    }

    /// A step on whole numbers, or `None` when it does not stay whole (the caller goes on with
    /// [`Plan::apply`] from here, which also reports errors).
    #[inline(always)]
    fn apply_int(&self, vals: &Values, m: &PlanMod, cur: i64) -> Option<i64> {
        let v = match (m.kind, m.value) {
            (ModKind::Set, PlanValue::Whole(k)) => return Some(k),
            (ModKind::Add, PlanValue::Whole(k)) => return cur.checked_add(k),
            (ModKind::Set, PlanValue::Formula { ops, len, .. }) => return self.whole_formula(vals, ops, len),
            (_, PlanValue::Whole(k)) => k,
            (_, PlanValue::Dec(_)) => return None,
            (_, PlanValue::Formula { ops, len, .. }) => self.whole_formula(vals, ops, len)?,
        };
        combine_whole(m.kind, cur, v)
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

    /// A step on [`Num`]s, or `None` on any error (the caller recomputes the variable the
    /// reference way, which reports the error).
    fn apply(&self, vals: &Values, m: &PlanMod, cur: Num) -> Option<Num> {
        let v = match m.value {
            PlanValue::Whole(k) => Num::Int(k),
            PlanValue::Dec(i) => Num::Dec(*self.decimals.get(i as usize)?),
            PlanValue::Formula { index, ops, len } => {
                if let Some(i) = self.whole_formula(vals, ops, len) {
                    Num::Int(i)
                } else {
                    let f = self.formulas.get(index as usize)?;
                    let reads = self.reads.get(f.first as usize..(f.first + f.count) as usize)?;
                    let cx = PlanContext { values: vals, reads };
                    let input =
                        if f.formula.uses_input() { Some(Value::Number(cur.to_decimal())) } else { None };
                    f.formula.evaluate_num(&cx, input.as_ref()).ok()?
                }
            }
        };
        m.kind.apply_num(cur, v).ok()
    }
}
