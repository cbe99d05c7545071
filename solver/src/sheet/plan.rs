//! The full-solve plan: a sheet's modifiers flattened into contiguous arrays in topological
//! order, for recomputing every variable from scratch.
//!
//! A full solve touches every modifier once. Walking the graph for it means chasing a pointer
//! per modifier into a heap-scattered table and then into its formula, and reading every input
//! through the graph's node weights: on a sheet of thousands of modifiers the time goes to cache
//! misses, not arithmetic. The plan lays out, per variable in topological order, its NUMBER
//! modifiers in application order (24 bytes each), the whole-number programs of their formulas
//! copied inline with inputs renumbered to positions in a dense array of integers, so a full
//! solve streams through memory and, in the common case, never touches a formula.
//!
//! The plan is built on the first full solve after a structural change (any modifier, instance
//! or edge added or removed) and reused until the next one. It is an optimisation only: a
//! variable the plan cannot handle — not a NUMBER, a modifier with a condition, an input
//! without a value, any evaluation error — is computed by [`Sheet::compute`], the one function
//! that defines values, and the property tests hold both paths to the same results. Within the
//! plan, a step that does not stay whole (7/2, overflow of `i64`) continues on [`Num`]s with
//! the formula's general evaluation, which is exact.

use super::{ModValue, Modifier, Sheet};
use crate::modifier::ModKind;
use formula::{EvalContext, Formula, IntOp, Num, Value, VarId, run_int};
use petgraph::stable_graph::NodeIndex;
use petgraph::visit::NodeIndexable;
use rust_decimal::Decimal;
use std::sync::Arc;

/// Marks a value in [`Plan::ints`] that is not a whole `i64` (`i64::MIN` itself is also stored
/// this way: it then just takes the general path).
const NOT_WHOLE: i64 = i64::MIN;

/// The plan of a sheet (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct Plan {
    /// Every variable, in topological order.
    vars: Vec<PlanVar>,
    /// The modifiers of the planned variables, variable after variable.
    mods: Vec<PlanMod>,
    /// Decimal constants (rare), by `PlanValue::Dec`.
    decimals: Vec<Decimal>,
    /// Formulas, by `PlanValue::Formula`.
    formulas: Vec<PlanFormula>,
    /// Inputs of formulas for the general path: positions in `vars`, in slot order.
    reads: Vec<u32>,
    /// Whole-number programs of formulas, with variables renumbered to positions in `vars`.
    int_ops: Vec<IntOp>,
    /// The values of the solve in progress, by position; `None`: not a number (or an error).
    values: Vec<Option<Num>>,
    /// The same values when whole, else [`NOT_WHOLE`]: what whole-number programs read.
    ints: Vec<i64>,
}

#[derive(Clone, Debug)]
struct PlanVar {
    node: NodeIndex,
    /// The default, when the plan computes this variable; `None` sends it to `Sheet::compute`.
    start: Option<Num>,
    /// Its modifiers: `mods[first..end]`.
    first: u32,
    end: u32,
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
    /// `formulas[index]`, whose whole-number program (if any) is `int_ops[ops..ops + len]`.
    Formula { index: u32, ops: u32, len: u32 },
}

#[derive(Clone, Debug)]
struct PlanFormula {
    formula: Arc<Formula>,
    /// Its inputs: `reads[first..first + count]`.
    first: u32,
    count: u32,
}

/// Formulas on the general path read their inputs from the dense array of numbers, by slot.
struct PlanContext<'a> {
    values: &'a [Option<Num>],
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
        Some(self.values.get(pos as usize).copied().flatten())
    }
}

impl Plan {
    /// The plan of `sheet` as it is now.
    pub(super) fn build(sheet: &Sheet) -> Plan {
        let graph = &sheet.graph;
        let mut order: Vec<(u32, NodeIndex)> = graph.node_indices().map(|n| (graph[n].level, n)).collect();
        order.sort_unstable_by_key(|(l, n)| (*l, n.index()));
        let mut position = vec![u32::MAX; graph.node_bound()];
        for (i, (_, n)) in order.iter().enumerate() {
            position[n.index()] = i as u32;
        }
        let mut plan = Plan {
            vars: Vec::with_capacity(order.len()),
            mods: Vec::new(),
            decimals: Vec::new(),
            formulas: Vec::new(),
            reads: Vec::new(),
            int_ops: Vec::new(),
            values: vec![None; order.len()],
            ints: vec![NOT_WHOLE; order.len()],
        };
        for &(_, node) in &order {
            let n = &graph[node];
            let first = plan.mods.len() as u32;
            let mut start = match &sheet.defaults[n.def.0 as usize] {
                Value::Number(d) => Some(Num::from_decimal(*d)),
                _ => None,
            };
            for m in n.mods.iter().filter_map(|k| sheet.mods[k.0 as usize].as_ref()) {
                if start.is_none() {
                    break;
                }
                match plan.step(m, &position) {
                    Some(pm) => plan.mods.push(pm),
                    None => start = None,
                }
            }
            if start.is_none() {
                plan.mods.truncate(first as usize);
            }
            plan.vars.push(PlanVar { node, start, first, end: plan.mods.len() as u32 });
        }
        plan
    }

    /// `m` as a plan step, or `None` when the plan cannot compute it (a condition, a value that
    /// is not a NUMBER).
    fn step(&mut self, m: &Modifier, position: &[u32]) -> Option<PlanMod> {
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
                let first = self.reads.len() as u32;
                for node in m.value_slots.iter() {
                    self.reads.push(*position.get(node.index())?);
                }
                let ops = self.int_ops.len() as u32;
                if let Some(program) = f.int_program() {
                    let renumbered = program.iter().map(|op| match *op {
                        IntOp::Var(slot) => {
                            let pos = m.value_slots.get(slot as usize).and_then(|n| position.get(n.index()));
                            // An unknown position reads as "not whole": the general path decides.
                            IntOp::Var(pos.copied().unwrap_or(u32::MAX))
                        }
                        op => op,
                    });
                    self.int_ops.extend(renumbered);
                }
                let len = self.int_ops.len() as u32 - ops;
                self.formulas.push(PlanFormula {
                    formula: f.clone(),
                    first,
                    count: m.value_slots.len() as u32,
                });
                PlanValue::Formula { index: self.formulas.len() as u32 - 1, ops, len }
            }
            _ => return None,
        };
        Some(PlanMod { kind: m.kind, value })
    }

    /// Recomputes every variable of `sheet` in topological order; returns how many.
    pub(super) fn run(&mut self, sheet: &mut Sheet) -> usize {
        for (i, v) in self.vars.iter().enumerate() {
            let fast = v.start.and_then(|start| self.run_var(v, start));
            let value = match fast {
                Some(n) => {
                    // Overwrite the decimal in place when the variable already holds one.
                    match &mut sheet.graph[v.node].value {
                        Ok(Value::Number(d)) => *d = n.to_decimal(),
                        other => *other = Ok(Value::Number(n.to_decimal())),
                    }
                    Some(n)
                }
                None => {
                    // Not for the plan, or an error: the reference computation says exactly what.
                    let slot = sheet.compute(v.node, None);
                    let n = match &slot {
                        Ok(Value::Number(d)) => Some(Num::from_decimal(*d)),
                        _ => None,
                    };
                    sheet.graph[v.node].value = slot;
                    n
                }
            };
            self.values[i] = value;
            self.ints[i] = match value {
                Some(Num::Int(x)) => x,
                _ => NOT_WHOLE,
            };
        }
        self.vars.len()
    }

    /// One variable's value: on machine integers while every step stays whole, then on
    /// [`Num`]s; `None` on any error.
    #[inline(always)]
    fn run_var(&self, v: &PlanVar, start: Num) -> Option<Num> {
        let mods = self.mods.get(v.first as usize..v.end as usize)?;
        let (mut cur, mut rest) = (start, mods);
        if let Num::Int(mut whole) = start {
            let mut done = 0;
            for m in mods {
                match self.apply_int(m, whole) {
                    Some(x) => whole = x,
                    None => break,
                }
                done += 1;
            }
            cur = Num::Int(whole);
            rest = &mods[done..];
        }
        rest.iter().try_fold(cur, |cur, m| self.apply(m, cur))
    }

    /// A step on whole numbers, or `None` when it does not stay whole (the caller goes on with
    /// [`Plan::apply`] from here, which also reports errors).
    #[inline(always)]
    fn apply_int(&self, m: &PlanMod, cur: i64) -> Option<i64> {
        let v = match (m.kind, m.value) {
            (ModKind::Set, PlanValue::Whole(k)) => return Some(k),
            (ModKind::Add, PlanValue::Whole(k)) => return cur.checked_add(k),
            (ModKind::Set, PlanValue::Formula { ops, len, .. }) => return self.whole_formula(ops, len),
            (_, PlanValue::Whole(k)) => k,
            (_, PlanValue::Dec(_)) => return None,
            (_, PlanValue::Formula { ops, len, .. }) => self.whole_formula(ops, len)?,
        };
        match m.kind {
            ModKind::Set => Some(v),
            ModKind::Add => cur.checked_add(v),
            ModKind::Multiply => cur.checked_mul(v),
            ModKind::Divide => cur.checked_div(v).filter(|q| q.wrapping_mul(v) == cur),
            ModKind::Max => Some(cur.max(v)),
            ModKind::Min => Some(cur.min(v)),
            ModKind::Append => None,
        }
    }

    /// The value of the whole-number program `int_ops[ops..ops + len]`, when it answers.
    #[inline(always)]
    fn whole_formula(&self, ops: u32, len: u32) -> Option<i64> {
        if len == 0 {
            return None;
        }
        let program = self.int_ops.get(ops as usize..(ops + len) as usize)?;
        run_int(program, |pos| self.ints.get(pos as usize).copied().filter(|x| *x != NOT_WHOLE))
    }

    /// A step on [`Num`]s, or `None` on any error (the caller recomputes the variable the
    /// reference way, which reports the error).
    fn apply(&self, m: &PlanMod, cur: Num) -> Option<Num> {
        let v = match m.value {
            PlanValue::Whole(k) => Num::Int(k),
            PlanValue::Dec(i) => Num::Dec(*self.decimals.get(i as usize)?),
            PlanValue::Formula { index, ops, len } => {
                if let Some(i) = self.whole_formula(ops, len) {
                    Num::Int(i)
                } else {
                    let f = self.formulas.get(index as usize)?;
                    let reads = self.reads.get(f.first as usize..(f.first + f.count) as usize)?;
                    let cx = PlanContext { values: &self.values, reads };
                    let input =
                        if f.formula.uses_input() { Some(Value::Number(cur.to_decimal())) } else { None };
                    f.formula.evaluate_num(&cx, input.as_ref()).ok()?
                }
            }
        };
        m.kind.apply_num(cur, v).ok()
    }
}
