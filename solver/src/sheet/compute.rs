//! Computing values: incremental recomputation in topological order with early cutoff, a full
//! solve, and `compute` — one variable from its default through its modifiers, which also
//! writes traces.

use super::*;

impl Sheet {
    // ---- evaluation ----

    /// Recomputes `dirty` nodes and whatever their changes reach, in topological order, each at
    /// most once; `created` nodes report `old: None`; `removed` changes are reported first.
    ///
    /// The queue is a bucket per level, scanned upwards (every edge goes up a level, so a
    /// variable's inputs are final before it is reached; no heap); within a level, variables go
    /// in index order. Each variable is evaluated through the plan when it can be
    /// ([`plan::Plan::eval`]), else by [`Sheet::compute`]; a variable whose value did not
    /// change does not wake its dependents (early cutoff).
    pub(super) fn recompute(
        &mut self,
        dirty: impl Iterator<Item = NodeIndex>,
        created: &[NodeIndex],
        removed: Vec<Change>,
    ) -> Report {
        let mut plan = std::mem::take(&mut self.plan);
        plan.refresh(self);
        let mut created = created.to_vec();
        created.sort_unstable();
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // After wrapping, clear marks so no node looks queued.
            plan.mark.fill(0);
            self.epoch = 1;
        }
        let epoch = self.epoch;
        let mut buckets = plan.take_buckets(0);
        let (mut lo, mut hi) = (usize::MAX, 0);
        for n in dirty {
            if let Some(level) = plan.enqueue(&mut buckets, n.index(), epoch) {
                (lo, hi) = (lo.min(level), hi.max(level));
            }
        }
        let mut report = Report { removed, changed: Vec::new(), recomputed: 0, evaluated: Vec::new() };
        let mut level = lo;
        while level <= hi {
            let mut bucket = std::mem::take(&mut buckets[level]);
            bucket.sort_unstable();
            for &index in &bucket {
                let i = index as usize;
                report.recomputed += 1;
                if self.record_evaluations {
                    report.evaluated.push(self.var_ref(NodeIndex::new(i)));
                }
                let is_new = created.binary_search(&NodeIndex::new(i)).is_ok();
                let Some(change) = self.reevaluate(&mut plan, i, is_new) else { continue };
                report.changed.push(change);
                for k in 0..plan.succ[i].len() {
                    let s = plan.succ[i][k] as usize;
                    if let Some(l) = plan.enqueue(&mut buckets, s, epoch) {
                        hi = hi.max(l);
                    }
                }
            }
            bucket.clear();
            buckets[level] = bucket;
            level += 1;
        }
        plan.put_buckets(buckets);
        self.plan = plan;
        report
    }

    /// Evaluates variable `i` again and stores its value; the change, unless the value is the
    /// same and the variable not `is_new` (then nothing is written: early cutoff).
    #[inline]
    fn reevaluate(&mut self, plan: &mut plan::Plan, i: usize, is_new: bool) -> Option<Delta> {
        let n = NodeIndex::new(i);
        let (old, new) = match plan.eval(i) {
            Some(num) => {
                if !is_new && plan.holds(i, num) {
                    return None;
                }
                plan.set_num(i, num);
                let new: Slot = Ok(Value::Number(num.to_decimal()));
                (std::mem::replace(&mut self.graph[n].value, new.clone()), new)
            }
            None => {
                let new = self.compute(n, None);
                if !is_new && slot_eq(&self.graph[n].value, &new) {
                    return None;
                }
                plan.mirror(n, &new);
                (std::mem::replace(&mut self.graph[n].value, new.clone()), new)
            }
        };
        Some(Delta { var: Var::new(n), old: if is_new { None } else { Some(old) }, new })
    }

    /// Recomputes every variable from scratch, in topological order; returns how many
    /// evaluations that took. Values are the same as the incremental ones (a property test
    /// checks this); this is what a full solve costs.
    pub fn solve_all(&mut self) -> usize {
        let mut plan = std::mem::take(&mut self.plan);
        plan.refresh(self);
        let order = plan.take_order(self);
        for &index in &order {
            let i = index as usize;
            let n = NodeIndex::new(i);
            match plan.eval(i) {
                Some(Num::Int(x)) if plan.holds_whole(i, x) => {}
                Some(num) => {
                    plan.set_num(i, num);
                    // Overwrite the decimal in place when the variable already holds one.
                    match &mut self.graph[n].value {
                        Ok(Value::Number(d)) => *d = num.to_decimal(),
                        other => *other = Ok(Value::Number(num.to_decimal())),
                    }
                }
                None => {
                    // Not for the plan, or an error: the reference computation says exactly what.
                    let slot = self.compute(n, None);
                    plan.mirror(n, &slot);
                    self.graph[n].value = slot;
                }
            }
        }
        let count = order.len();
        plan.put_order(order);
        self.plan = plan;
        count
    }

    /// The value of `node` from its default through its modifiers, recording each step when
    /// `trace` is given. The one function that computes values, for solving and for traces.
    pub(super) fn compute(&self, node: NodeIndex, trace: Option<&mut Vec<TraceStep>>) -> Slot {
        let n = &self.graph[node];
        if trace.is_none()
            && let Value::Number(start) = self.defaults[n.def.0 as usize]
        {
            return self.compute_number(n, start);
        }
        self.compute_any(n, trace)
    }

    /// `compute` for a NUMBER variable without a trace: the same steps on decimals, with no
    /// `Value` built per modifier. A property test and the trace tests hold it to `compute_any`.
    pub(super) fn compute_number(&self, n: &Node, start: Decimal) -> Slot {
        let mut cur = Num::from_decimal(start);
        for &k in &n.mods {
            let Some(m) = &self.mods[k.0 as usize] else { continue };
            if let Some(c) = &m.condition {
                let cx = ModContext { graph: &self.graph, reads: &m.reads, slots: &m.cond_slots };
                match c.evaluate(&cx, Some(&Value::Number(cur.to_decimal()))) {
                    Ok(Value::Boolean(true)) => {}
                    Ok(_) => continue,
                    Err(e) => return Err(self.value_error(m, e)),
                }
            }
            let v = match (m.const_num, &m.value) {
                (Some(c), _) => c,
                (None, ModValue::Formula(f)) => {
                    let cx = ModContext { graph: &self.graph, reads: &m.reads, slots: &m.value_slots };
                    let input = if f.uses_input() { Some(Value::Number(cur.to_decimal())) } else { None };
                    match f.evaluate_num(&cx, input.as_ref()) {
                        Ok(d) => d,
                        Err(e) => return Err(self.value_error(m, e)),
                    }
                }
                // A NUMBER variable's modifiers have NUMBER values (checked when added).
                (None, ModValue::Const(_)) => continue,
            };
            match m.kind.apply_num(cur, v) {
                Ok(d) => cur = d,
                Err(e) => return Err(self.value_error(m, math_error(m.kind, e))),
            }
        }
        Ok(Value::Number(cur.to_decimal()))
    }

    pub(super) fn compute_any(&self, n: &Node, mut trace: Option<&mut Vec<TraceStep>>) -> Slot {
        let mut cur = self.defaults[n.def.0 as usize].clone();
        for &k in &n.mods {
            let Some(m) = &self.mods[k.0 as usize] else { continue };
            let condition = match &m.condition {
                None => None,
                Some(c) => match c.evaluate(
                    &ModContext { graph: &self.graph, reads: &m.reads, slots: &m.cond_slots },
                    Some(&cur),
                ) {
                    Ok(Value::Boolean(b)) => Some(b),
                    Ok(_) => None,
                    Err(e) => {
                        let err = self.value_error(m, e);
                        self.record(&mut trace, m, Some(false), Some(Err(err.clone())));
                        return Err(err);
                    }
                },
            };
            if condition == Some(false) {
                self.record(&mut trace, m, condition, None);
                continue;
            }
            let result = match &m.value {
                ModValue::Const(v) => apply(m.kind, cur, v.clone()),
                ModValue::Formula(f) => match f.evaluate(
                    &ModContext { graph: &self.graph, reads: &m.reads, slots: &m.value_slots },
                    Some(&cur),
                ) {
                    Ok(v) => apply(m.kind, cur, v),
                    Err(e) => Err(e),
                },
            };
            match result {
                Ok(v) => {
                    if trace.is_some() {
                        self.record(&mut trace, m, condition, Some(Ok(v.clone())));
                    }
                    cur = v;
                }
                Err(e) => {
                    let err = self.value_error(m, e);
                    self.record(&mut trace, m, condition, Some(Err(err.clone())));
                    return Err(err);
                }
            }
        }
        Ok(cur)
    }

    pub(super) fn record(
        &self,
        trace: &mut Option<&mut Vec<TraceStep>>,
        m: &Modifier,
        condition: Option<bool>,
        after: Option<Slot>,
    ) {
        let Some(t) = trace else { return };
        t.push(TraceStep {
            modifier: m.id.clone(),
            kind: m.kind,
            instruction: m.text.clone(),
            priority: m.priority,
            inherent_priority: m.kind.inherent_priority(),
            source: m.source.clone(),
            condition,
            reads: m
                .reads
                .iter()
                .map(|&(_, n)| (self.var_ref(n), Some(self.graph[n].value.clone())))
                .collect(),
            after,
        });
    }

    pub(super) fn value_error(&self, m: &Modifier, e: FormulaError) -> Arc<ValueError> {
        // A read without a value: report the variable and its own error instead.
        if e.code == formula::ErrorCode::MissingValue
            && let Some((n, cause)) =
                m.reads.iter().find_map(|&(_, n)| self.graph[n].value.as_ref().err().map(|c| (n, c)))
        {
            return Arc::new(ValueError {
                code: "solver.depends_on_error",
                message: format!("depends on `{}`, which has no value: {}", self.var_ref(n), cause.message),
                modifier: m.id.clone(),
            });
        }
        Arc::new(ValueError {
            code: e.code.as_str(),
            message: format!("modifier `{}` (source {}): `{}`: {}", m.id, m.source, m.text, e.message),
            modifier: m.id.clone(),
        })
    }
}

pub(super) fn slot_eq(a: &Slot, b: &Slot) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => x == y,
        (Err(x), Err(y)) => x == y,
        _ => false,
    }
}

#[cold]
pub(super) fn math_error(kind: ModKind, e: number::MathError) -> FormulaError {
    let (code, what) = match e {
        number::MathError::DivisionByZero => (formula::ErrorCode::DivisionByZero, "division by zero"),
        number::MathError::Overflow => {
            (formula::ErrorCode::Overflow, "result outside the exact decimal range")
        }
        number::MathError::Domain => (formula::ErrorCode::Domain, "result is not a real number"),
    };
    FormulaError::new(code, formula::Span::default(), format!("{kind}: {what}"))
}

/// Applies one modifier's value to the value so far.
pub(super) fn apply(kind: ModKind, cur: Value, v: Value) -> Result<Value, FormulaError> {
    let num = |r: Result<Decimal, number::MathError>| r.map(Value::Number).map_err(|e| math_error(kind, e));
    match (kind, &cur, &v) {
        (ModKind::Set, _, _) => Ok(v),
        (ModKind::Add, Value::Number(a), Value::Number(b)) => num(number::add(*a, *b)),
        (ModKind::Multiply, Value::Number(a), Value::Number(b)) => num(number::mul(*a, *b)),
        (ModKind::Divide, Value::Number(a), Value::Number(b)) => num(number::div(*a, *b)),
        (ModKind::Max, Value::Number(a), Value::Number(b)) => Ok(Value::Number(*a.max(b))),
        (ModKind::Min, Value::Number(a), Value::Number(b)) => Ok(Value::Number(*a.min(b))),
        (ModKind::Append, Value::Array(items), _) => {
            let mut all = items.to_vec();
            all.push(v);
            Ok(Value::Array(all.into()))
        }
        _ => Err(FormulaError::new(
            formula::ErrorCode::FunctionFailed,
            formula::Span::default(),
            format!("{kind} cannot combine {cur} with {v}"),
        )),
    }
}
