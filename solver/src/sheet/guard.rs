//! Guards: a step that fails its batch, with nothing changed, unless a BOOLEAN formula is true
//! at that point of the batch — "can pay", "uses left", a prerequisite.
//!
//! A batch changes the structure operation by operation and recomputes values once, at its
//! end (see `batch.rs`). A guard needs the values as the operations before it left them, so
//! at a guard the batch first recomputes what it has touched so far (an *interim*
//! recomputation), then evaluates the guard's formula in its instance's scope. The batch goes
//! on from there; its report still gives old → new across the whole batch:
//! - the interim changes are kept in the batch (`Pending::interim`), and merged with the
//!   final recomputation's at the commit: a variable's `old` is its value before the batch,
//!   its `new` the last one, and a variable that came back to where it was is left out (the
//!   report's evaluations count the interim ones too: a variable may be evaluated at a guard
//!   and again at the end);
//! - a variable created by the batch and removed later in it is reported by neither;
//! - a variable removed after an interim recomputation is reported with its value before
//!   the batch.
//!
//! When the batch fails — the guard, or any later operation — the rollback undoes the
//! structure as always and puts back every value an interim recomputation changed.
//!
//! A guard reads values, so a sheet deferring its recomputations (`Sheet::defer`) refuses
//! one: its values are not the ones the operations describe until it settles.

use super::batch::Pending;
use super::*;
use std::collections::HashMap;

/// A guard step ([`Operation::Require`]): the batch fails, with nothing changed, unless
/// `formula` is true at this point of it.
#[derive(Clone, Debug)]
pub struct Guard {
    /// A BOOLEAN formula, read in the scope of instance `on`.
    pub formula: Instruction,
    /// The instance its names resolve in (`None`: the global instance).
    pub on: Option<String>,
    /// What it checks, in words: "can pay the cost". Errors name the guard by it.
    pub message: String,
}

impl Guard {
    /// A guard on the global instance with formula text `formula`.
    pub fn new(formula: &str, message: &str) -> Guard {
        Guard { formula: Instruction::Text(Arc::from(formula)), on: None, message: message.to_owned() }
    }

    /// The same guard, its names read in the scope of instance `on`.
    pub fn on(mut self, on: &str) -> Guard {
        self.on = Some(on.to_owned());
        self
    }
}

/// A formula an operation evaluates at its point of the batch, compiled, with the nodes it reads
/// (see [`Sheet::formula_now`]).
pub(super) struct NowFormula {
    pub(super) formula: Arc<Formula>,
    pub(super) reads: super::Reads,
}

impl Sheet {
    /// Checks guard `g` at this point of the batch (see the module docs).
    pub(super) fn op_require(&mut self, g: &Guard, pending: &mut Pending) -> Result<(), SolveError> {
        if self.deferred.is_some() {
            return Err(SolveError::new(
                codes::BAD_STEP,
                format!(
                    "guard `{}`: the sheet defers its recomputation; settle it before a guard",
                    g.message
                ),
            ));
        }
        let on = self.shape.lookup_instance_hinted(g.on.as_deref(), &mut None)?;
        let label = format!("guard `{}`", g.message);
        let f = self.formula_now(&|| label.clone(), &g.formula, on, &Format::Boolean)?;
        self.settle_pending(pending);
        match self.evaluate_now(&f) {
            Ok(Value::Boolean(true)) => Ok(()),
            Ok(_) => Err(SolveError::new(
                codes::GUARD_FAILED,
                format!("{label} failed: `{}` is false{}", f.formula.text(), self.read_values(&f)),
            )),
            Err(e) => Err(SolveError::new(
                codes::GUARD_FAILED,
                format!(
                    "{label} failed: `{}` has no value: {} [{}]{}",
                    f.formula.text(),
                    e.message,
                    e.code,
                    self.read_values(&f)
                ),
            )),
        }
    }

    /// A formula an operation evaluates at its point of the batch (a guard's, an adjustment's):
    /// `ins` compiled in instance `on`'s scope when given as text, checked to produce
    /// `expected`, with the nodes it reads from there. `label` names the operation in errors
    /// (made only for one).
    pub(super) fn formula_now(
        &self,
        label: &dyn Fn() -> String,
        ins: &Instruction,
        on: InstanceId,
        expected: &Format,
    ) -> Result<NowFormula, SolveError> {
        let scope = self.shape.instance(on).scope;
        let formula = match ins {
            Instruction::Text(t) | Instruction::Literal(_, t) => self
                .shape
                .rules
                .compile(t, scope, None, Some(expected))
                .map_err(|e| SolveError::formula(&label(), t, e))?,
            Instruction::Compiled(f) if f.format() == expected => f.clone(),
            Instruction::Compiled(f) => {
                return Err(SolveError::new(
                    codes::BAD_VALUE,
                    format!(
                        "{}: `{}` produces {}, but {expected} is required",
                        label(),
                        f.text(),
                        f.format()
                    ),
                ));
            }
        };
        // (Named in the error only: `reads` names a modifier, and this is an operation.)
        let reads = self.shape.reads("", on, [Some(&formula), None]).map_err(|mut e| {
            e.message = e.message.replacen("modifier ``", &label(), 1);
            e
        })?;
        Ok(NowFormula { formula, reads })
    }

    /// `f`'s value now (after [`Sheet::settle_pending`]).
    pub(super) fn evaluate_now(&self, f: &NowFormula) -> Result<Value, FormulaError> {
        let cx = ModContext { vals: &self.vals, reads: &f.reads, slots: Slots::Reads(&f.reads) };
        f.formula.evaluate(&cx, None)
    }

    /// What `f` reads, with the values now, for an error: ` (read Gold = 2, Cost = 3)`.
    pub(super) fn read_values(&self, f: &NowFormula) -> String {
        let shown: Vec<String> = f
            .reads
            .iter()
            .map(|&(_, n)| {
                let v = match self.value_of(n) {
                    Ok(v) => v.to_string(),
                    Err(e) => format!("error ({})", e.code),
                };
                format!("{} = {v}", self.shape.var_ref(n))
            })
            .collect();
        if shown.is_empty() { String::new() } else { format!(" (read {})", shown.join(", ")) }
    }

    /// Recomputes what the batch touched so far, keeping the changes in `pending` for the
    /// commit's report and the rollback (see the module docs).
    pub(super) fn settle_pending(&mut self, pending: &mut Pending) {
        if pending.dirty.is_empty() && pending.created.is_empty() {
            return;
        }
        // The variables of instances the batch removed stay in the graph, isolated, until it
        // commits (see `batch.rs`): they are not recomputed.
        if !pending.removed.is_empty() {
            let gone: std::collections::HashSet<NodeIndex> =
                pending.removed.iter().map(|(n, _)| *n).collect();
            pending.dirty.retain(|n| !gone.contains(n));
            pending.created.retain(|n| !gone.contains(n));
        }
        let mut report = self.recompute(&pending.dirty, &pending.created);
        pending.dirty.clear();
        pending.created.clear();
        let interim = &mut pending.interim;
        merge(&mut interim.changed, report.changed);
        interim.recomputed += report.recomputed;
        interim.evaluated.append(&mut report.evaluated);
    }

    /// Puts back the values the batch's interim recomputations changed (a failed batch's
    /// rollback, before it undoes the structure).
    pub(super) fn restore_interim(&mut self, pending: &mut Pending) {
        if pending.interim.recomputed == 0 {
            return;
        }
        pending.interim.recomputed = 0;
        pending.interim.evaluated.clear();
        for d in pending.interim.changed.drain(..) {
            if let Some(old) = d.old_value() {
                self.vals.set(d.var.0.index(), old);
            }
        }
    }
}

/// Merges `later` changes into `into`: a variable already there keeps its old value and takes
/// the new one; one that came back to its old value is dropped; the others are appended.
pub(super) fn merge(into: &mut Vec<Delta>, later: Vec<Delta>) {
    if into.is_empty() {
        *into = later;
        return;
    }
    let mut at: HashMap<Var, usize> = into.iter().enumerate().map(|(i, d)| (d.var, i)).collect();
    let mut back = Vec::new();
    for d in later {
        match at.get(&d.var) {
            Some(&i) => {
                into[i].new = d.new;
                if into[i].old.as_ref().is_some_and(|o| compute::slot_eq(&o.slot(), &into[i].new.slot())) {
                    back.push(i);
                }
            }
            None => {
                at.insert(d.var, into.len());
                into.push(d);
            }
        }
    }
    if !back.is_empty() {
        back.sort_unstable();
        let mut i = 0;
        into.retain(|_| {
            let keep = back.binary_search(&i).is_err();
            i += 1;
            keep
        });
    }
}

#[cfg(test)]
mod tests {
    use crate::{Guard, ModKind, ModifierSpec, Operation, Rules, RulesBuilder, Sheet, Slot, codes};
    use formula::Format;
    use std::sync::Arc;

    /// Gold and Cost, Total = Gold - Cost, and an item scope with a Weight.
    fn rules() -> Arc<Rules> {
        let mut b = RulesBuilder::new("PC");
        b.add_scope("PC.ITEM", "PC").unwrap();
        for v in ["Gold", "Cost", "Total"] {
            b.declare(v, "PC", Format::Number, false).unwrap();
        }
        b.declare("Weight", "PC.ITEM", Format::Number, false).unwrap();
        Arc::new(b.build())
    }

    fn set(id: &str, var: &str, value: &str) -> Operation {
        Operation::AddModifier(ModifierSpec::new(id, var, ModKind::Set, value, "test"))
    }

    fn require(formula: &str, message: &str) -> Operation {
        Operation::Require(Guard::new(formula, message))
    }

    fn val(sheet: &Sheet, r: &str) -> String {
        match sheet.value(r).unwrap() {
            Ok(v) => v.to_string(),
            Err(e) => format!("error: {}", e.message),
        }
    }

    fn changes(sheet: &Sheet, r: &crate::Report) -> Vec<String> {
        let show =
            |s: &Option<Slot>| s.as_ref().map_or("null".to_owned(), |s| format!("{}", s.clone().unwrap()));
        r.named(sheet).iter().map(|c| format!("{} {}→{}", c.var, show(&c.old), show(&c.new))).collect()
    }

    fn sheet() -> Sheet {
        let mut s = Sheet::new(rules());
        s.apply(&[set("gold", "Gold", "5"), set("total", "Total", "Gold - Cost")]).unwrap();
        s
    }

    /// A guard reads the values the operations before it in the batch left: paying 3 of 5
    /// gold passes, and the batch's report gives old → new across the whole batch.
    #[test]
    fn a_guard_sees_the_batch_so_far() {
        let mut s = sheet();
        let r = s
            .apply(&[set("cost", "Cost", "3"), require("Gold >= Cost", "can pay"), set("gold2", "Gold", "2")])
            .unwrap();
        assert_eq!(changes(&s, &r), ["Cost 0→3", "Total 5→-1", "Gold 5→2"]);
        assert_eq!((val(&s, "Gold"), val(&s, "Total")), ("2".into(), "-1".into()));
        // Total was evaluated at the guard and again at the end; the report counts both.
        assert_eq!(r.recomputed, 4);
    }

    /// A guard that does not hold fails the batch at its index, names the guard and what it
    /// read, and leaves the sheet exactly as it was — values an interim recomputation changed
    /// included.
    #[test]
    fn a_failed_guard_changes_nothing() {
        let mut s = sheet();
        let before = s.values();
        let e = s
            .apply(&[
                set("cost", "Cost", "7"),
                Operation::AddModifier(ModifierSpec::new("g", "Gold", ModKind::Add, "1", "test")),
                require("Gold >= Cost", "can pay 7"),
            ])
            .unwrap_err();
        assert_eq!(e.index, 2);
        assert_eq!(e.error.code, codes::GUARD_FAILED);
        assert_eq!(
            e.error.message,
            "guard `can pay 7` failed: `Gold >= Cost` is false (read Gold = 6, Cost = 7)"
        );
        assert_eq!(s.values(), before);
        assert_eq!(s.modifier_count(), 2);
        let mut fresh = s.clone();
        fresh.solve_all();
        assert_eq!(fresh.values(), before);
        // A later operation failing after a guard passed undoes the interim values too.
        let e = s.apply(&[set("cost", "Cost", "1"), require("Total == 4", "four"), set("gold", "Gold", "1")]);
        assert_eq!(e.unwrap_err().error.code, codes::DUPLICATE_MODIFIER);
        assert_eq!(s.values(), before);
    }

    /// A variable changed before a guard and back after it is not reported; one created and
    /// removed around a guard is reported by neither list; one removed after a guard is
    /// reported with its value before the batch.
    #[test]
    fn reports_across_a_guard() {
        let mut s = sheet();
        let r = s.apply(&[
            set("cost", "Cost", "2"),
            require("Total == 3", "t"),
            Operation::RemoveModifier("cost".into()),
        ]);
        assert_eq!(changes(&s, &r.unwrap()), Vec::<String>::new());
        let add_item =
            |k: &str| Operation::AddInstance { key: k.into(), scope: "PC.ITEM".into(), parent: None };
        let weight =
            Operation::AddModifier(ModifierSpec::new("w", "Weight", ModKind::Set, "4", "t").on("bag"));
        let r = s
            .apply(&[
                add_item("bag"),
                weight.clone(),
                require("Weight == 4", "heavy").map_on("bag"),
                Operation::RemoveInstance("bag".into()),
            ])
            .unwrap();
        assert_eq!(changes(&s, &r), Vec::<String>::new());
        s.apply(&[add_item("bag"), weight]).unwrap();
        let r = s
            .apply(&[
                Operation::AddModifier(ModifierSpec::new("w2", "Weight", ModKind::Add, "1", "t").on("bag")),
                require("Weight == 5", "five").map_on("bag"),
                Operation::RemoveInstance("bag".into()),
            ])
            .unwrap();
        assert_eq!(changes(&s, &r), ["bag.Weight 4→null"]);
    }

    /// Bad guards: a formula that does not compile, one that is not BOOLEAN, an unknown
    /// instance, a formula with no value; and a deferring sheet refuses guards.
    #[test]
    fn bad_guards_are_errors() {
        let mut s = sheet();
        let code = |s: &mut Sheet, op: Operation| s.apply(&[op]).unwrap_err().error.code;
        assert_eq!(code(&mut s, require("Gold >=", "x")), codes::FORMULA);
        assert_eq!(code(&mut s, require("Gold + 1", "x")), codes::FORMULA);
        assert_eq!(code(&mut s, require("Nope > 1", "x")), codes::FORMULA);
        assert_eq!(code(&mut s, require("Weight > 1", "x").map_on("nowhere")), codes::UNKNOWN_INSTANCE);
        s.apply(&[set("cost", "Cost", "0")]).unwrap();
        let e = s.apply(&[require("Gold / Cost > 1", "divides")]).unwrap_err().error;
        assert_eq!(e.code, codes::GUARD_FAILED);
        assert!(e.message.contains("has no value"), "{}", e.message);
        s.defer();
        assert_eq!(code(&mut s, require("1 == 1", "x")), codes::BAD_STEP);
        s.settle();
        assert!(s.apply(&[require("1 == 1", "always")]).unwrap().is_empty());
    }

    trait OnInstance {
        fn map_on(self, on: &str) -> Operation;
    }

    impl OnInstance for Operation {
        fn map_on(self, on: &str) -> Operation {
            match self {
                Operation::Require(g) => Operation::Require(g.on(on)),
                other => other,
            }
        }
    }
}
