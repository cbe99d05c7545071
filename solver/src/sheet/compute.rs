//! Computing values: incremental recomputation in topological order with early cutoff, a full
//! solve, and `compute` — one variable from its default through its modifiers, which also
//! writes traces.

use super::*;

impl Sheet {
    // ---- evaluation ----

    /// Recomputes `dirty` nodes and whatever their changes reach, in topological order, each at
    /// most once; `created` nodes report `old: None`; `removed` changes are reported first.
    pub(super) fn recompute(
        &mut self,
        dirty: impl Iterator<Item = NodeIndex>,
        created: &[NodeIndex],
        removed: Vec<Change>,
    ) -> Report {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // After wrapping, clear marks so no node looks queued.
            for w in self.graph.node_weights_mut() {
                w.mark = 0;
            }
            self.epoch = 1;
        }
        let epoch = self.epoch;
        let mut heap: BinaryHeap<Reverse<(u32, u32)>> = BinaryHeap::new();
        for n in dirty {
            let node = &mut self.graph[n];
            if node.mark != epoch {
                node.mark = epoch;
                heap.push(Reverse((node.level, n.index() as u32)));
            }
        }
        let mut report = Report { changed: removed, recomputed: 0, evaluated: Vec::new() };
        while let Some(Reverse((_, index))) = heap.pop() {
            let n = NodeIndex::new(index as usize);
            let new = self.compute(n, None);
            report.recomputed += 1;
            if self.record_evaluations {
                report.evaluated.push(self.var_ref(n));
            }
            let is_new = created.contains(&n);
            let old = &self.graph[n].value;
            if !is_new && slot_eq(old, &new) {
                continue;
            }
            let old = std::mem::replace(&mut self.graph[n].value, new.clone());
            report.changed.push(Change {
                var: self.var_ref(n),
                format: self.rules.var(self.graph[n].def).format.clone(),
                old: if is_new { None } else { Some(old) },
                new: Some(new),
            });
            let mut next = self.graph.neighbors_directed(n, Direction::Outgoing).detach();
            while let Some(s) = next.next_node(&self.graph) {
                let w = &mut self.graph[s];
                if w.mark != epoch {
                    w.mark = epoch;
                    heap.push(Reverse((w.level, s.index() as u32)));
                }
            }
        }
        report
    }

    /// Recomputes every variable from scratch, in topological order; returns how many
    /// evaluations that took. Values are the same as the incremental ones (a property test
    /// checks this); this is what a full solve costs.
    pub fn solve_all(&mut self) -> usize {
        let mut plan = self.plan.take().unwrap_or_else(|| Box::new(plan::Plan::build(self)));
        let count = plan.run(self);
        self.plan = Some(plan);
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
