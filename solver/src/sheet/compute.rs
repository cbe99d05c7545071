//! Computing values: incremental recomputation in topological order with early cutoff, a full
//! solve, and `compute` — one variable from its default through its modifiers, which also
//! writes traces.

use super::*;

/// Queued variables from which a recomputation considers handing over to native code (in
/// tests, any: so that the property tests run it).
const SWEEP_WAITING: usize = if cfg!(test) { 1 } else { 8 };

/// What a variable the buckets reach costs, in variables native code passes over: a sweep
/// runs from the first queued variable's code to the end, so it pays off when the queued
/// variables and those they wake, times this, outnumber the variables it passes. Measured
/// (issue 14's tick, 100 leaves queued on 2,000 variables; the anchor workload's hub change at
/// 2,000 and 20,000): 16 keeps the hub's sweep and lets the leaves, with the clock queued at
/// the first level, go through the buckets (at 32, with the queued variables alone counted,
/// the tick swept 1,800 variables for 101 changes: 11.1 → 10.5 µs). In tests, a sweep always.
const SWEEP_SKIPS_PER_WAITING: usize = if cfg!(test) { usize::MAX / 2 } else { 16 };

/// Variables from which a recomputation takes each level's variables in ascending index
/// rather than in the order they were queued (in tests, always, so that the property tests run
/// it). Ascending index is the order the plan lays entries out in within a level (by level,
/// then index), and the order of the per-variable arrays: so a large change walks its entries,
/// values and dependents forward through memory, which the processor prefetches, instead of
/// jumping about. Measured on the anchor workload's hub change (`anchor_loop hub`, alternated,
/// issue 13's ninth session): at 200,000 variables 209–214 → 158–159 ns an evaluation, at
/// 20,000 111 → 105–106 ns; at 2,000, where everything is in cache, the sort only costs
/// (61 → 64–65 ns), hence a threshold: about where a sheet's plan outgrows the 2 MiB L2.
const SORTED_LEVELS_MIN: usize = if cfg!(test) { 1 } else { 16_384 };

/// Variables queued at the start (targets touched — once each in a bulk batch, with repeats
/// otherwise — and variables created) from which a recomputation that queues at least half as
/// many as the sheet has variables (a sheet built in one batch) takes one pass over the full
/// solve's order instead of its buckets (in tests, from 2, so that the property tests run it;
/// there, levels are sorted, so both give the same order).
const DENSE_MIN: usize = if cfg!(test) { 2 } else { 1_024 };

/// How far ahead in a sorted level a recomputation asks for a variable's entry record, value,
/// queue bit and dependents' run: far enough for a fetch from memory to arrive in time (at
/// 200,000 variables 8, 16 and 24 measured alike).
const PREFETCH_FAR: usize = 16;
/// How far ahead it asks for the variable's steps and dependents, whose addresses are in the
/// records asked for at [`PREFETCH_FAR`].
const PREFETCH_NEAR: usize = 8;

impl Sheet {
    // ---- evaluation ----

    /// Recomputes `dirty` nodes and whatever their changes reach, in topological order, each at
    /// most once; `created` nodes report `old: None`. The report's `removed` is left empty, for
    /// the caller (a removal's changes are its own, not the recomputation's; and a batch
    /// that removed nothing moves no list of them).
    ///
    /// The queue is a bucket per level, scanned upwards (every edge goes up a level, so a
    /// variable's inputs are final before it is reached; no heap); within a level, variables go
    /// in the order they were queued, or on a large sheet in ascending index
    /// (`SORTED_LEVELS_MIN`). Each variable is evaluated through the plan when it can be
    /// ([`plan::Plan::eval`]), else by [`Sheet::compute`]; a variable whose value did not
    /// change does not wake its dependents (early cutoff). A change to one variable is
    /// evaluated before any queue is set up, so one that stops there (its value unchanged, or
    /// nothing reading it: a leaf) takes no bucket. A change that queues about every variable
    /// goes by [`Sheet::recompute_dense`] instead.
    // long: the loop over levels kept whole, so that its hot path reads top to bottom (the
    // sweep to native code, the sort and the prefetches are functions of their own).
    pub(super) fn recompute(&mut self, dirty: &[NodeIndex], created: &[NodeIndex]) -> Report {
        let queued = dirty.len() + created.len();
        if queued >= DENSE_MIN
            && 2 * queued >= self.shape.plan.variable_slots()
            && ShapeArc::count(&self.shape) == 1
        {
            return self.recompute_dense(dirty, created);
        }
        self.refresh_plan(false);
        // A change to one variable (a modifier added to it, removed or replaced) is evaluated
        // before any queue is set up: when its value stays, or nothing reads it, that is the
        // whole recomputation (a leaf change: no buckets taken, no report sized ahead).
        let mut report = Report::default();
        let first = match dirty.split_first() {
            Some((&n, rest))
                if created.is_empty()
                    && rest.iter().all(|&d| d == n)
                    && self.shape.graph.contains_node(n) =>
            {
                let i = n.index();
                let Some(change) = self.reevaluate_counted(i, created, &mut report) else {
                    self.vals.changed_hint = 0;
                    return report;
                };
                if self.shape.plan.succ.of(i).is_empty() {
                    report.changed = vec![change];
                    self.vals.changed_hint = 1;
                    return report;
                }
                Some((i, change))
            }
            _ => None,
        };
        // The shape does not change while values are computed: hold it apart from `self`, so
        // the values can be written while the plan is read.
        let shape = ShapeArc::clone(&self.shape);
        let plan = &shape.plan;
        let mut created = created.to_vec();
        created.sort_unstable();
        let mut buckets = std::mem::take(&mut self.vals.buckets);
        let (mut lo, mut hi) = (usize::MAX, 0);
        // Sized like the last report (a change's reach is usually much like the one before's;
        // doubling copies thousands of changes again), and at least for what is queued now.
        report.changed = Vec::with_capacity(self.vals.changed_hint.max(dirty.len() + created.len()));
        // The variable evaluated above wakes its dependents; otherwise the touched variables
        // are queued.
        let queued: &[NodeIndex] = if first.is_some() { &[] } else { dirty };
        if let Some((i, change)) = first {
            report.changed.push(change);
            for &s in plan.succ.of(i) {
                if let Some(level) = self.enqueue(plan, &mut buckets, s as usize) {
                    (lo, hi) = (lo.min(level), hi.max(level));
                }
            }
        }
        for &n in queued.iter().chain(&created) {
            // Variables removed since they were touched are gone.
            if !shape.graph.contains_node(n) {
                continue;
            }
            if let Some(level) = self.enqueue(plan, &mut buckets, n.index()) {
                (lo, hi) = (lo.min(level), hi.max(level));
            }
        }
        // Native code, when there is some, takes over once a change reaches many variables.
        let sweep = !self.record_evaluations && created.is_empty() && plan.native().is_some();
        let mut waiting: usize = buckets.iter().skip(lo).take(hi.saturating_sub(lo) + 1).map(Vec::len).sum();
        // On a sheet whose plan outgrows the caches, each level's variables go in ascending
        // index (see `SORTED_LEVELS_MIN`); otherwise in the order they were queued.
        let sorted = plan.variable_slots() >= SORTED_LEVELS_MIN;
        let mut level = lo;
        // The sort's second buffer (see `sort_indexes`).
        let mut scratch = Vec::new();
        while level <= hi {
            if sweep
                && waiting >= SWEEP_WAITING
                && self.sweep_native(plan, &mut buckets[level..=hi], &mut report)
            {
                break;
            }
            // Within a level, variables do not read each other: they go in the order they were
            // queued, or sorted (either is deterministic for a given sheet and change).
            let mut bucket = std::mem::take(&mut buckets[level]);
            if sorted {
                sort_indexes(&mut bucket, &mut scratch);
            }
            for (at, &index) in bucket.iter().enumerate() {
                let i = index as usize;
                if sorted {
                    self.prefetch_ahead(plan, &bucket, at);
                }
                self.vals.dequeue(i);
                waiting -= 1;
                if !self.evaluate_queued(i, &created, &mut report) {
                    continue;
                }
                for &s in plan.succ.of(i) {
                    if let Some(l) = self.enqueue(plan, &mut buckets, s as usize) {
                        hi = hi.max(l);
                        waiting += 1;
                    }
                }
            }
            bucket.clear();
            buckets[level] = bucket;
            level += 1;
        }
        self.vals.buckets = buckets;
        self.vals.changed_hint = report.changed.len();
        // A report kept by the caller (a history, a replay) holds no more than it needs when
        // this change reached far fewer variables than the last.
        if report.changed.capacity() > 2 * report.changed.len() + 8 {
            report.changed.shrink_to_fit();
        }
        report
    }

    /// [`Sheet::recompute`] for a change that queued about every variable (a sheet built in one
    /// batch): one pass over the full solve's order (by level, then index), each variable
    /// evaluated when its queue bit is set, its dependents' bits set when its value changed.
    /// The same variables are evaluated as through the buckets, in the order a sorted
    /// recomputation takes them, with no bucket to fill or empty: every variable queued comes
    /// after the one that queued it, so each is reached while queued. The shape must be this
    /// sheet's own (sorting the order may change it).
    fn recompute_dense(&mut self, dirty: &[NodeIndex], created: &[NodeIndex]) -> Report {
        let mut created = created.to_vec();
        created.sort_unstable();
        for &n in dirty.iter().chain(&created) {
            // Variables removed since they were touched are gone.
            if self.shape.graph.contains_node(n) {
                self.vals.queue(n.index());
            }
        }
        let changed = Vec::with_capacity(self.vals.changed_hint.max(self.shape.graph.node_count()));
        let mut report = Report { changed, ..Report::default() };
        // A plan laid out from scratch (a sheet built in one batch) has each variable evaluated
        // as soon as its entry is written, while its steps are in the cache, until one needs
        // more than the plan's whole numbers (then the loop below goes on from there).
        let mut taken = 0;
        if !self.record_evaluations && !self.shape.plan.is_fresh(true) {
            let Sheet { shape, vals, .. } = self;
            let (plan, source) = ShapeArc::make_mut(shape).plan_and_source();
            let settle = |plan: &plan::Plan, fs: plan::Formulas<'_>, i| {
                settle_queued(plan, fs, vals, i, &created, &mut report)
            };
            let fused = plan.refresh_each(&source, settle);
            plan.sort_order(&source);
            if let Some(fused) = fused {
                taken = fused;
                count_fused(taken, plan.order().len());
            }
        }
        self.refresh_plan(true);
        let shape = ShapeArc::clone(&self.shape);
        let plan = &shape.plan;
        for &index in plan.order().get(taken..).unwrap_or_default() {
            let i = index as usize;
            if !self.vals.take_queued(i) || !self.evaluate_queued(i, &created, &mut report) {
                continue;
            }
            for &s in plan.succ.of(i) {
                self.vals.queue(s as usize);
            }
        }
        self.vals.changed_hint = report.changed.len();
        report
    }

    /// Variable `i`, just taken from the queue, evaluated again and counted in `report`, its
    /// change recorded there (`created`, sorted: the variables the change created). Returns
    /// whether it changed: then its dependents are to be queued.
    #[inline(always)]
    fn evaluate_queued(&mut self, i: usize, created: &[NodeIndex], report: &mut Report) -> bool {
        match self.reevaluate_counted(i, created, report) {
            Some(change) => {
                report.changed.push(change);
                true
            }
            None => false,
        }
    }

    /// Variable `i` evaluated again and counted in `report` (its evaluation recorded there when
    /// the sheet records evaluations): its change, if any, for the caller to record.
    #[inline(always)]
    fn reevaluate_counted(&mut self, i: usize, created: &[NodeIndex], report: &mut Report) -> Option<Delta> {
        report.recomputed += 1;
        if self.record_evaluations {
            report.evaluated.push(self.shape.var_ref(NodeIndex::new(i)));
        }
        let is_new = !created.is_empty() && created.binary_search(&NodeIndex::new(i)).is_ok();
        self.reevaluate(i, is_new)
    }

    /// Asks for what evaluating the variables after the `at`-th of a sorted level will read,
    /// ahead of it: on a large sheet each is likely a miss, and the level's next variables are
    /// known. The entry record, value, queue bit and dependents' run [`PREFETCH_FAR`] places
    /// ahead; the steps and dependents, whose addresses those records hold, [`PREFETCH_NEAR`]
    /// places ahead. (The values a variable's steps read are not asked for: finding them means
    /// walking its steps twice, which cost more than it saved.)
    #[inline(always)]
    fn prefetch_ahead(&self, plan: &plan::Plan, bucket: &[u32], at: usize) {
        if let Some(&ahead) = bucket.get(at + PREFETCH_FAR) {
            plan.prefetch_var(ahead as usize);
            self.vals.prefetch(ahead as usize);
        }
        if let Some(&ahead) = bucket.get(at + PREFETCH_NEAR) {
            plan.prefetch_steps(ahead as usize);
        }
    }

    /// Hands every variable queued in `buckets` to the native code, which evaluates them and
    /// whatever their changes reach, each once, in its compiled order (a topological one);
    /// appends what it evaluated and changed to `report`. Returns `false`, doing nothing, when
    /// that would cost more than the buckets: the queued variables lie early in the order but
    /// are few (the code looks at every variable after the first queued one), or the code does
    /// not cover one of them.
    fn sweep_native(&mut self, plan: &plan::Plan, buckets: &mut [Vec<u32>], report: &mut Report) -> bool {
        let Some((code, ok)) = plan.native() else { return false };
        // Decided at a level that has variables (at one between, the buckets pass through).
        if buckets.first().is_none_or(Vec::is_empty) {
            return false;
        }
        // What the buckets would take at least: the variables queued and those they wake.
        let (mut from, mut reach) = (usize::MAX, 0usize);
        for &i in buckets.iter().flatten() {
            let Some(p) = code.position(i as usize) else { return false };
            from = from.min(p);
            reach += 1 + plan.succ.of(i as usize).len();
        }
        let (vars, _) = code.coverage();
        // About what a variable costs in the buckets, in variables the code skips.
        if reach.saturating_mul(SWEEP_SKIPS_PER_WAITING) < vars.saturating_sub(from) {
            return false;
        }
        let buffers = self.vals.native_buffers(code.span, true);
        for bucket in buckets.iter_mut() {
            for &i in bucket.iter() {
                self.vals.dequeue(i as usize);
                self.vals.mark_pending(i as usize);
            }
            bucket.clear();
        }
        let mut slow_changes = Vec::new();
        let sheet: *mut Sheet = self;
        // SAFETY: as in `solve_all`; `reevaluate` and `mark_pending` write through `Values`
        // only existing elements of the buffers.
        let ran = unsafe {
            code.run(from, &buffers, ok, &mut |i| {
                let sheet = &mut *sheet;
                let Some(change) = sheet.reevaluate(i as usize, false) else { return false };
                for &s in plan.succ.of(i as usize) {
                    sheet.vals.mark_pending(s as usize);
                }
                slow_changes.push(change);
                true
            })
        };
        report.recomputed += ran.evaluated;
        // The log, in order, as the report's changes: whole numbers as they are, and the
        // interpreter's own changes where it took a variable.
        let mut slow = slow_changes.into_iter();
        let log = self.vals.log.get(..ran.logged).unwrap_or_default();
        let delta =
            |&[i, old, new]: &[i64; 3]| Delta::whole(Var::new(NodeIndex::new(i as usize)), Some(old), new);
        // Runs of whole-number changes between the interpreter's, each as one exact-size copy
        // (one variable the interpreter took, say a leaf whose modifiers changed since
        // compiling, must not turn a hub change's thousands of changes into pushes one by one).
        report.changed.reserve(log.len());
        let mut rest = log;
        while let Some(k) = rest.iter().position(|e| e[0] & plan::SLOW_CHANGE != 0) {
            report.changed.extend(rest[..k].iter().map(delta));
            report.changed.extend(slow.next());
            rest = &rest[k + 1..];
        }
        report.changed.extend(rest.iter().map(delta));
        true
    }

    /// Queues variable `i` in `buckets` at its level, unless it is queued; returns the level
    /// when queued.
    #[inline(always)]
    fn enqueue(&mut self, plan: &plan::Plan, buckets: &mut Vec<Vec<u32>>, i: usize) -> Option<usize> {
        if !self.vals.queue(i) {
            return None;
        }
        let level = plan.level[i] as usize;
        if buckets.len() <= level {
            buckets.resize_with(level + 1, Vec::new);
        }
        let bucket = &mut buckets[level];
        // A copy's buckets start empty (`Values::clone`): room for a level's worth at once,
        // not grown 4, 8, 16 on the copy's first recomputation.
        if bucket.capacity() == 0 {
            bucket.reserve(16);
        }
        bucket.push(i as u32);
        Some(level)
    }

    /// Brings everything the shape keeps lazily up to date (the plan's entries and the full
    /// solve's order), so that copies of this sheet can solve without a shape of their own. Call
    /// it on a sheet that is to be copied many times (a ruleset's starting sheet); it costs at
    /// most one sort of the variables.
    ///
    /// It also makes the sheet's modifiers and instances the bases its copies share
    /// (`ModTable::freeze`, `Instances::freeze`: a copy's first structural change then copies
    /// none of them, only its own go in its overlays), and gives the index of modifiers by
    /// source, when built, room for as many entries again as it holds: a copy's first
    /// structural change copies it with the shape, capacity included, and then adds to it
    /// without growing it (growing a hash table moves every entry).
    pub fn prepare_to_share(&mut self) {
        self.refresh_plan(true);
        // (A shape shared already is left as it is: reserving would copy it.)
        let Some(shape) = ShapeArc::get_mut(&mut self.shape) else { return };
        shape.mods.freeze();
        if let Some(sources) = &mut shape.sources {
            sources.reserve(sources.len());
        }
        shape.instances.freeze();
    }

    /// Brings the plan's entries up to date with the structure, and with `order` also the full
    /// solve's order (a no-op unless a structural change left them stale — and then the shape
    /// is this sheet's own already).
    fn refresh_plan(&mut self, order: bool) {
        if self.shape.plan.is_fresh(order) {
            return;
        }
        let (plan, source) = self.shape_mut().plan_and_source();
        plan.refresh(&source);
        if order {
            plan.sort_order(&source);
        }
    }

    /// Evaluates variable `i` again and stores its value; the change, unless the value is the
    /// same and the variable not `is_new` (then nothing is written: early cutoff).
    #[inline]
    fn reevaluate(&mut self, i: usize, is_new: bool) -> Option<Delta> {
        let n = NodeIndex::new(i);
        let new = match self.shape.plan.eval(&self.vals, i, self.shape.formulas()) {
            Some(num) => {
                if let Some(delta) = settle_whole(&mut self.vals, i, num, is_new) {
                    return delta;
                }
                let old = if is_new { None } else { Some(self.value_of(n)) };
                self.vals.set_num(i, num);
                return Some(Delta::any(Var::new(n), old, Ok(Value::Number(num.to_decimal()))));
            }
            None => self.compute(n, None),
        };
        // The old value compared where it is, and copied only for a change to report: a copy of
        // a text or custom value takes counts on what it shares with the ruleset, which every
        // core making characters writes.
        let old = if is_new {
            None
        } else {
            let same = match self.vals.other_ref(i) {
                Some(old) => slot_eq(old, &new),
                None => slot_eq(&self.value_of(n), &new),
            };
            if same {
                return None;
            }
            Some(self.value_of(n))
        };
        self.vals.set(i, new.clone());
        Some(Delta::any(Var::new(n), old, new))
    }

    /// Recomputes every variable from scratch, in topological order; returns how many
    /// evaluations that took. Values are the same as the incremental ones (a property test
    /// checks this); this is what a full solve costs.
    pub fn solve_all(&mut self) -> usize {
        self.refresh_plan(true);
        let shape = ShapeArc::clone(&self.shape);
        let plan = &shape.plan;
        let order = plan.order();
        if let Some((code, ok)) = plan.native() {
            // Native code computes what it compiled; each other variable, in its place in the
            // order, goes through `solve_one` as below.
            let buffers = self.vals.native_buffers(code.span, false);
            self.vals.mark_all_pending(true);
            let sheet: *mut Sheet = self;
            // SAFETY: the buffers hold `span` elements and do not move while the code runs:
            // `solve_one(i)` writes through `Values` only variable `i`'s existing element.
            // `sheet` is this sheet, not otherwise used during the run.
            unsafe {
                code.run(0, &buffers, ok, &mut |i| {
                    (*sheet).solve_one(plan, i as usize);
                    false
                })
            };
            // Variables without a node were marked too, and not evaluated.
            self.vals.mark_all_pending(false);
            return order.len();
        }
        for &index in order {
            self.solve_one(plan, index as usize);
        }
        order.len()
    }

    /// Variable `i` computed again in a full solve: through the plan, else `compute`.
    #[inline(always)]
    fn solve_one(&mut self, plan: &plan::Plan, i: usize) {
        match plan.eval(&self.vals, i, self.shape.formulas()) {
            Some(Num::Int(x)) if self.vals.holds_whole(i, x) => {}
            Some(num) => self.vals.set_num(i, num),
            None => {
                // Not for the plan, or an error: the reference computation says exactly what.
                let slot = self.compute(NodeIndex::new(i), None);
                self.vals.set(i, slot);
            }
        }
    }

    /// Compiles this sheet's plan into native code for full solves and for recomputations
    /// that reach many variables, when the host supports it and the sheet has at least
    /// `min_vars` variables (see `plan/native.rs`): straight-line machine code per variable
    /// instead of the interpreter's dispatch per step. It costs about 70 µs a variable, once.
    /// The code is part of the shape, shared by copies (on a shape shared already, this sheet
    /// gets a copy of its own first); a change to the modifiers of a variable hands just that
    /// variable back to the interpreter, and a change of the variables or their order drops
    /// the code. Returns whether there is native code now.
    pub fn compile_native(&mut self, min_vars: usize) -> bool {
        self.refresh_plan(true);
        if self.shape.plan.native().is_none() && self.shape.plan.order().len() >= min_vars {
            self.shape_mut().plan.compile_native();
        }
        self.shape.plan.native().is_some()
    }

    /// How many variables the native code covers and how many of them it computes itself
    /// (the others call back into the interpreter); `None` without native code.
    pub fn native_coverage(&self) -> Option<(usize, usize)> {
        self.shape.plan.native().map(|(code, _)| code.coverage())
    }

    /// The size of the native code, in bytes, when there is some (it lives in pages of its
    /// own, which an allocator does not count).
    pub fn native_code_bytes(&self) -> Option<usize> {
        self.shape.plan.native().map(|(code, _)| code.code_bytes)
    }

    /// The value of `node` from its default through its modifiers, recording each step when
    /// `trace` is given. The one function that computes values, for solving and for traces.
    pub(super) fn compute(&self, node: NodeIndex, trace: Option<&mut Vec<TraceStep>>) -> Slot {
        let n = &self.shape.graph[node];
        if trace.is_none()
            && let Value::Number(start) = self.shape.defaults[n.def.0 as usize]
        {
            return self.compute_number(n, start);
        }
        self.compute_any(n, trace)
    }

    /// `compute` for a NUMBER variable without a trace: the same steps on decimals, with no
    /// `Value` built per modifier. A property test and the trace tests hold it to `compute_any`.
    pub(super) fn compute_number(&self, n: &Node, start: Decimal) -> Slot {
        let mut cur = Num::from_decimal(start);
        // A `min` or `max` aggregate starts from its first member's value (see `starts_empty`).
        let mut started = !self.starts_empty(n);
        for &k in &n.mods {
            let Some(m) = self.shape.mods.get(k) else { continue };
            let body = m.held.body(self.shape.catalog.as_deref());
            if let Some(c) = &body.condition {
                let cx = ModContext { vals: &self.vals, reads: &m.reads, slots: Slots::Nodes(&m.cond_slots) };
                match c.evaluate(&cx, Some(&Value::Number(cur.to_decimal()))) {
                    Ok(Value::Boolean(true)) => {}
                    Ok(_) => continue,
                    Err(e) => return Err(self.value_error(m, e)),
                }
            }
            let v = match (m.const_num, &body.value) {
                (Some(c), _) => c,
                (None, ModValue::Formula(f)) => {
                    let cx = ModContext {
                        vals: &self.vals,
                        reads: &m.reads,
                        slots: Slots::Reads(m.value_slots()),
                    };
                    let input = if f.uses_input() { Some(Value::Number(cur.to_decimal())) } else { None };
                    match f.evaluate_num(&cx, input.as_ref()) {
                        Ok(d) => d,
                        Err(e) => return Err(self.value_error(m, e)),
                    }
                }
                // A NUMBER variable's modifiers have NUMBER values (checked when added).
                (None, ModValue::Const(_)) => continue,
            };
            if !started {
                (cur, started) = (v, true);
                continue;
            }
            match m.kind.apply_num(cur, v) {
                Ok(d) => cur = d,
                Err(e) => return Err(self.value_error(m, math_error(m.kind, e))),
            }
        }
        if !started {
            return Err(self.empty_aggregate(n));
        }
        Ok(Value::Number(cur.to_decimal()))
    }

    /// Whether `n` is a `min` or `max` aggregate's variable: its value is its first member's,
    /// then folded with the others', and it has none without members.
    fn starts_empty(&self, n: &Node) -> bool {
        self.shape.rules.var(n.def).aggregate.is_some_and(AggKind::starts_empty)
    }

    /// The value of a `min` or `max` aggregate that no instance counts towards.
    fn empty_aggregate(&self, n: &Node) -> Arc<ValueError> {
        empty_aggregate(self.shape.rules.var(n.def))
    }

    pub(super) fn compute_any(&self, n: &Node, mut trace: Option<&mut Vec<TraceStep>>) -> Slot {
        let mut cur = self.shape.defaults[n.def.0 as usize].clone();
        let mut started = !self.starts_empty(n);
        for &k in &n.mods {
            let Some(m) = self.shape.mods.get(k) else { continue };
            let body = m.held.body(self.shape.catalog.as_deref());
            let condition = match &body.condition {
                None => None,
                Some(c) => match c.evaluate(
                    &ModContext { vals: &self.vals, reads: &m.reads, slots: Slots::Nodes(&m.cond_slots) },
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
            let fold = |cur: Value, v: Value| if started { apply(m.kind, cur, v) } else { Ok(v) };
            let result = match &body.value {
                ModValue::Const(v) => fold(cur, v.clone()),
                ModValue::Formula(f) => match f.evaluate(
                    &ModContext { vals: &self.vals, reads: &m.reads, slots: Slots::Reads(m.value_slots()) },
                    Some(&cur),
                ) {
                    Ok(v) => fold(cur, v),
                    Err(e) => Err(e),
                },
            };
            started = true;
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
        if !started {
            return Err(self.empty_aggregate(n));
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
        let body = m.held.body(self.shape.catalog.as_deref());
        t.push(TraceStep {
            modifier: m.id.clone(),
            kind: m.kind,
            instruction: body.text(),
            priority: m.priority,
            inherent_priority: m.kind.inherent_priority(),
            source: body.source.clone(),
            condition,
            reads: m.reads.iter().map(|&(_, n)| (self.shape.var_ref(n), Some(self.value_of(n)))).collect(),
            after,
        });
    }

    pub(super) fn value_error(&self, m: &Modifier, e: FormulaError) -> Arc<ValueError> {
        // A read without a value: report the variable and its own error instead.
        if e.code == formula::ErrorCode::MissingValue
            && let Some((n, cause)) =
                m.reads.iter().find_map(|&(_, n)| self.vals.error(n.index()).map(|c| (n, c)))
        {
            return Arc::new(ValueError {
                code: "solver.depends_on_error",
                message: format!(
                    "depends on `{}`, which has no value: {}",
                    self.shape.var_ref(n),
                    cause.message
                ),
                modifier: m.id.clone(),
            });
        }
        let body = m.held.body(self.shape.catalog.as_deref());
        Arc::new(ValueError {
            code: e.code.as_str(),
            message: format!(
                "modifier `{}` (source {}): `{}`: {}",
                m.id,
                body.source,
                body.text(),
                e.message
            ),
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
        (ModKind::Union, Value::Array(items), Value::Array(new)) => {
            // A set union that keeps the order the elements were first seen in (PCGen's is a
            // hash set, unordered): the value so far, then what is new. Arrays are short.
            let mut all: Vec<Value> = Vec::with_capacity(items.len() + new.len());
            for x in items.iter().chain(new.iter()) {
                if !all.contains(x) {
                    all.push(x.clone());
                }
            }
            Ok(Value::Array(all.into()))
        }
        _ => Err(FormulaError::new(
            formula::ErrorCode::FunctionFailed,
            formula::Span::default(),
            format!("{kind} cannot combine {cur} with {v}"),
        )),
    }
}

/// The value of `min` or `max` aggregate `var` that no instance counts towards (also what its
/// variable holds before anything is computed).
pub(super) fn empty_aggregate(var: &crate::VarDef) -> Arc<ValueError> {
    Arc::new(match var.aggregate {
        Some(AggKind::Ref) => ValueError {
            code: "solver.missing_instance",
            message: format!(
                "no instance `{}` on the sheet",
                var.name.trim_start_matches('@').split('.').next().unwrap_or_default()
            ),
            modifier: var.name.clone(),
        },
        Some(AggKind::Via) => ValueError {
            code: "solver.missing_instance",
            message: format!(
                "`{}` holds no id of an instance on the sheet that has `{}`",
                var.name.split('.').next().unwrap_or_default(),
                var.name.split_once('.').map_or("", |(_, f)| f)
            ),
            modifier: var.name.clone(),
        },
        _ => ValueError {
            code: "solver.empty_aggregate",
            message: "no instance counts towards it".to_owned(),
            modifier: var.name.clone(),
        },
    })
}

/// Sorts a level's variable indexes (distinct, below the sheet's node count) ascending: by
/// comparisons when they are few, else by radix, 11 bits a pass (two passes up to 4 million
/// variables), each pass counting then placing, with `scratch` as the other buffer. At 200,000
/// variables a hub change's levels hold thousands of variables each, where sorting by
/// comparisons took about a twentieth of the change.
fn sort_indexes(v: &mut Vec<u32>, scratch: &mut Vec<u32>) {
    const BITS: u32 = 11;
    const MASK: u32 = (1 << BITS) - 1;
    if v.len() < 256 {
        v.sort_unstable();
        return;
    }
    let max = v.iter().copied().max().unwrap_or(0);
    let passes = (u32::BITS - max.leading_zeros()).div_ceil(BITS);
    let mut count = [0u32; 1 << BITS];
    for pass in 0..passes {
        let shift = pass * BITS;
        count.fill(0);
        for &x in v.iter() {
            count[((x >> shift) & MASK) as usize] += 1;
        }
        let mut at = 0;
        for c in count.iter_mut() {
            let n = *c;
            *c = at;
            at += n;
        }
        scratch.clear();
        scratch.resize(v.len(), 0);
        for &x in v.iter() {
            let slot = &mut count[((x >> shift) & MASK) as usize];
            scratch[*slot as usize] = x;
            *slot += 1;
        }
        std::mem::swap(v, scratch);
    }
}

#[cfg(test)]
thread_local! {
    static FUSED: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// How many variables this thread evaluated as their entries were written (see
/// `Sheet::recompute_dense`), and how many such passes stopped before the end of the order
/// (for tests: that both ways are reached).
#[cfg(test)]
pub(crate) fn fused_evaluations() -> (usize, usize) {
    FUSED.with(|c| c.get())
}

/// Counts a pass that evaluated `taken` of `order` variables as their entries were written
/// (tests only).
fn count_fused(taken: usize, order: usize) {
    #[cfg(test)]
    FUSED.with(|c| {
        let (t, stopped) = c.get();
        c.set((t + taken, stopped + usize::from(taken < order)));
    });
    let _ = (taken, order);
}

/// The value `num` the plan computed for variable `i` stored, as [`Sheet::reevaluate`] does, when
/// it is recorded as a whole number (the common case): its change, if any. `None` (nothing
/// done) when it is not: the caller records it otherwise.
#[inline(always)]
fn settle_whole(vals: &mut values::Values, i: usize, num: Num, is_new: bool) -> Option<Option<Delta>> {
    if !is_new && vals.holds(i, num) {
        return Some(None);
    }
    let old = vals.int(i);
    if let (Num::Int(new), true) = (num, is_new || old.is_some()) {
        vals.set_num(i, num);
        return Some(Some(Delta::whole(Var::new(NodeIndex::new(i)), old.filter(|_| !is_new), new)));
    }
    None
}

/// Variable `i`, just written in a plan laid out from scratch, taken from the queue and
/// evaluated through the plan, as [`Sheet::recompute_dense`]'s loop does (see
/// [`plan::Plan::refresh_each`]). `false`, with `i` left queued, when it needs more than the
/// plan's whole numbers (`Sheet::compute`, or a value recorded otherwise).
#[inline(always)]
fn settle_queued(
    plan: &plan::Plan,
    fs: plan::Formulas<'_>,
    vals: &mut values::Values,
    i: usize,
    created: &[NodeIndex],
    report: &mut Report,
) -> bool {
    if !vals.take_queued(i) {
        return true;
    }
    let is_new = !created.is_empty() && created.binary_search(&NodeIndex::new(i)).is_ok();
    let Some(delta) = plan.eval(vals, i, fs).and_then(|num| settle_whole(vals, i, num, is_new)) else {
        vals.queue(i);
        return false;
    };
    report.recomputed += 1;
    if let Some(delta) = delta {
        report.changed.push(delta);
        for &s in plan.succ.of(i) {
            vals.queue(s as usize);
        }
    }
    true
}

#[cfg(test)]
mod sort_tests {
    use proptest::prelude::*;

    proptest! {
        /// The radix sort of a level's indexes gives what sorting by comparisons gives: for
        /// few indexes and many, small ones (one pass) and large ones (two or three passes).
        #[test]
        fn level_indexes_sort_as_by_comparison(
            set in prop::collection::hash_set(0u32..4_000_000, 0..3_000),
            small in prop::collection::hash_set(0u32..2_048, 0..1_500),
        ) {
            for set in [set, small] {
                let mut v: Vec<u32> = set.into_iter().collect();
                let mut expected = v.clone();
                expected.sort_unstable();
                let mut scratch = Vec::new();
                super::sort_indexes(&mut v, &mut scratch);
                prop_assert_eq!(v, expected);
            }
        }
    }
}
