//! Changing a sheet's modifiers: checking a modifier against the sheet (`prepare`), linking
//! it into the graph and its target's ordered list, and unlinking it.

use super::*;

impl Sheet {
    // ---- modifiers ----

    /// Adds a modifier. Rejected, with the sheet unchanged, when the id is taken, an instance or
    /// the variable is unknown, the variable is locked, the type does not fit the format, a
    /// formula is invalid in the `from` instance's scope, or the modifier would close a cycle.
    pub fn add_modifier(&mut self, spec: &ModifierSpec) -> Result<Report, SolveError> {
        self.single(|s, p| s.op_add_modifier(spec, p))
    }

    /// Removes the modifier with id `id`.
    pub fn remove_modifier(&mut self, id: &str) -> Result<Report, SolveError> {
        self.single(|s, p| s.op_remove_modifier(id, p))
    }

    /// Removes every modifier whose source is `source`.
    pub fn remove_source(&mut self, source: &str) -> Result<Report, SolveError> {
        self.single(|s, p| s.op_remove_source(source, p))
    }
}

impl Shape {
    /// Checks a modifier against the sheet and makes it ready to link: its target node, type,
    /// value, condition and the nodes it reads.
    /// `hint` is the instance the batch's previous modifier named (see
    /// [`Shape::lookup_instance_hinted`]). Unless `bulk`, a modifier whose id is taken or that
    /// would close a cycle is rejected; a bulk batch finds a taken id when it inserts the id,
    /// and cycles once, at its end (see `bulk.rs`). The record is written into `out` (empty
    /// before), where the caller moves it once, into the table (see [`Shape::record_into`]).
    #[inline(always)]
    pub(super) fn prepare(
        &self,
        spec: &ModifierSpec,
        hint: &mut Option<InstanceId>,
        bulk: bool,
        out: &mut Option<Modifier>,
    ) -> Result<(), SolveError> {
        self.check_id(&spec.id, bulk)?;
        let on = self.lookup_instance_hinted(spec.on.as_deref(), hint)?;
        let from = match &spec.from {
            Some(f) => self.lookup_instance_hinted(Some(f), hint)?,
            None => on,
        };
        let (def, target) = self.target(spec, on)?;
        let from_scope = self.instance(from).scope;
        let (kind, body, const_num) = check_body(
            &self.rules,
            &spec.id,
            def,
            spec.kind,
            &spec.value,
            spec.condition.as_ref(),
            from_scope,
            spec.source.clone(),
        )?;
        let held = Held::Own(Box::new(body));
        let reads = self.resolve_reads(&spec.id, from, held.body(None))?;
        let link = Link {
            id: &spec.id,
            on,
            from,
            target,
            kind,
            rank: self.rules.var(def).order.rank(kind),
            priority: spec.priority,
            const_num,
        };
        self.record_into(link, held, reads, self.rules.var(def).is_kept(), bulk, out)
    }

    /// [`Shape::prepare`] for template `t` of the sheet's catalog, as modifier `id` on and from
    /// instance `on`, written into `out`: the template was checked when the catalog was made,
    /// so what is left is finding its nodes here.
    #[inline(always)]
    pub(super) fn prepare_template(
        &self,
        id: &Arc<str>,
        t: TemplateId,
        on: Option<&str>,
        hint: &mut Option<InstanceId>,
        bulk: bool,
        out: &mut Option<Modifier>,
    ) -> Result<(), SolveError> {
        let Some(template) = self.catalog.as_deref().and_then(|c| c.get(t)) else {
            return Err(SolveError::new(
                codes::UNKNOWN_TEMPLATE,
                format!("modifier `{id}`: this sheet's catalog has no template {}", t.0),
            ));
        };
        self.check_id(id, bulk)?;
        let on_id = match on {
            None => GLOBAL,
            Some(_) => self.lookup_instance_hinted(on, hint)?,
        };
        // The instance found once for the target and every read.
        let inst = self.instance(on_id);
        let target = self.node_at(inst, template.def, template.place).ok_or_else(|| {
            SolveError::new(
                codes::UNKNOWN_VARIABLE,
                format!(
                    "modifier `{id}`: `{}` has no instance from {}",
                    self.rules.var(template.def).name,
                    on.map_or("the global instance".to_owned(), |o| format!("instance `{o}`"))
                ),
            )
        })?;
        // The template's variables were found once, in the catalog: what is left is their
        // nodes as seen from the instance.
        let node = |(v, place): (VarId, catalog::Place)| {
            self.node_at(inst, VarDefId(v.0), place).map(|n| (v, n)).ok_or_else(|| self.not_visible(id, v))
        };
        let reads = match *template.vars {
            // Most templates read two variables or fewer: the list made in place, in one piece
            // (pushing each checked the list's room and length).
            [] => Reads::new(),
            [a] => Reads::from_buf_and_len([node(a)?, (a.0, NodeIndex::end())], 1),
            [a, b] => Reads::from_buf([node(a)?, node(b)?]),
            ref vars => vars.iter().map(|&r| node(r)).collect::<Result<_, _>>()?,
        };
        // (`cond_pos` holds positions in `vars`, which `reads` follows.) Most templates have no
        // condition: collecting nothing into a box still cost about 90 instructions a link.
        let cond_slots = match &*template.cond_pos {
            [] => Box::default(),
            pos => pos.iter().filter_map(|&p| reads.get(p as usize).map(|r| r.1)).collect(),
        };
        let link = Link {
            id,
            on: on_id,
            from: on_id,
            target,
            kind: template.kind,
            rank: template.rank,
            priority: template.priority,
            const_num: template.const_num,
        };
        let reads = (reads, template.value_vars, cond_slots);
        self.record_into(link, Held::Template(t), reads, template.kept, bulk, out)
    }

    /// The error for a formula of modifier `id` reading `v`, which its instance does not see.
    fn not_visible(&self, id: &str, v: VarId) -> SolveError {
        SolveError::new(
            codes::UNKNOWN_VARIABLE,
            format!(
                "modifier `{id}`: its formula reads `{}`, which is not visible from its instance",
                self.rules.var(VarDefId(v.0)).name
            ),
        )
    }

    /// The modifier through which instance `from` (keyed `key`) takes part in aggregate `agg`:
    /// on the aggregate's global variable, its formulas read from `from`, its id
    /// `count(PC.WORKER, Busy == 0)@worker1` and its source the aggregate's text. `count` adds 1,
    /// `sum` adds `EXPR`, `min` and `max` fold `EXPR`; `WHERE` is its condition.
    pub(super) fn member_modifier(
        &self,
        agg: &crate::rules::Aggregate,
        from: InstanceId,
        key: &str,
        bulk: bool,
    ) -> Result<Modifier, SolveError> {
        if let Some(part) = &agg.part {
            // The instance's part (kept by `part_of`), added up.
            let name = self.rules.var(part.var).name.clone();
            let body = Body {
                value: ModValue::Formula(part.read.clone()),
                condition: None,
                text: Some(name),
                source: agg.text.clone(),
            };
            return self.part_modifier(agg.var, GLOBAL, from, key, ModKind::Add, body, None, bulk);
        }
        let (kind, value, text, const_num) = match (&agg.kind, &agg.expr) {
            (AggKind::Count, _) | (_, None) => {
                (ModKind::Add, ModValue::Const(Value::Number(Decimal::ONE)), None, Some(Num::Int(1)))
            }
            (AggKind::Sum, Some(f)) => (ModKind::Add, ModValue::Formula(f.clone()), None, None),
            (AggKind::Min, Some(f)) => (ModKind::Min, ModValue::Formula(f.clone()), None, None),
            (AggKind::Max, Some(f)) => (ModKind::Max, ModValue::Formula(f.clone()), None, None),
            // (References and reads through holders are not aggregates: see
            // `reference_modifier` and `pointer_modifier`.)
            (AggKind::Ref | AggKind::Via, Some(f)) => {
                (ModKind::Set, ModValue::Formula(f.clone()), None, None)
            }
        };
        let body = Body { value, condition: agg.filter.clone(), text, source: agg.text.clone() };
        self.part_modifier(agg.var, GLOBAL, from, key, kind, body, const_num, bulk)
    }

    /// The modifier that keeps instance `from`'s part in aggregate `agg` (when it keeps parts:
    /// see [`crate::Aggregate::part`]): SET, on the instance's part variable, to its value.
    pub(super) fn part_of(
        &self,
        agg: &crate::rules::Aggregate,
        from: InstanceId,
        key: &str,
        bulk: bool,
    ) -> Option<Result<Modifier, SolveError>> {
        let part = agg.part.as_ref()?;
        let body = Body {
            value: ModValue::Formula(part.value.clone()),
            condition: None,
            text: None,
            source: agg.text.clone(),
        };
        Some(self.part_modifier(part.var, from, from, key, ModKind::Set, body, None, bulk))
    }

    /// The modifier through which instance `from`, keyed `key`, is read by reference `r`
    /// (`@key.Var`): SET, on the reference's global variable, to the variable as read from
    /// `from` — `None` when the instance's scope does not see that variable.
    pub(super) fn reference_modifier(
        &self,
        r: &crate::rules::Reference,
        from: InstanceId,
        bulk: bool,
    ) -> Option<Result<Modifier, SolveError>> {
        let scope = self.instance(from).scope;
        let (_, read) = r.reads.iter().find(|(s, _)| *s == scope)?;
        let name = self.rules.var(r.var).name.clone();
        let body = Body { value: ModValue::Formula(read.clone()), condition: None, text: None, source: name };
        Some(self.part_modifier(r.var, GLOBAL, from, &r.key, ModKind::Set, body, None, bulk))
    }

    /// The modifier through which instance `from` is read by pointer `p` (`creature.STR`) on
    /// holder instance `on`: SET, on the pointer's variable there, to the variable as read from
    /// `from`; its id `creature.STR@HOLDER:TARGET`, its source the pointer's name.
    pub(super) fn pointer_modifier(
        &self,
        p: &crate::rules::Pointer,
        on: InstanceId,
        from: InstanceId,
    ) -> Result<Modifier, SolveError> {
        let name = self.rules.var(p.var).name.clone();
        let key = |i: InstanceId| match &*self.instance(i).key {
            // The global instance has no key: its scope's name stands for it.
            "" => self.rules.scope_def(self.instance(i).scope).name.clone(),
            k => Arc::from(k),
        };
        let body =
            Body { value: ModValue::Formula(p.read.clone()), condition: None, text: None, source: name };
        let key = format!("{}:{}", key(on), key(from));
        self.part_modifier(p.var, on, from, &key, ModKind::Set, body, None, false)
    }

    /// A modifier an instance gives an aggregate or a reference (variable `var`, on instance
    /// `on`): its id `VAR@key`, read from the instance.
    #[allow(clippy::too_many_arguments)]
    fn part_modifier(
        &self,
        var: VarDefId,
        on: InstanceId,
        from: InstanceId,
        key: &str,
        kind: ModKind,
        body: Body,
        const_num: Option<Num>,
        bulk: bool,
    ) -> Result<Modifier, SolveError> {
        let target = self.node_from(on, var).ok_or_else(|| {
            SolveError::new(
                codes::UNKNOWN_VARIABLE,
                format!("`{}` has no variable on this sheet", self.rules.var(var).name),
            )
        })?;
        let id: Arc<str> = Arc::from(format!("{}@{key}", self.rules.var(var).name));
        let link = Link {
            id: &id,
            on,
            from,
            target,
            kind,
            rank: self.rules.var(var).order.rank(kind),
            priority: 0,
            const_num,
        };
        self.make(link, Held::Own(Box::new(body)), bulk)
    }

    /// Rejects a taken id (unless `bulk`: see [`Shape::prepare`]).
    #[inline]
    fn check_id(&self, id: &str, bulk: bool) -> Result<(), SolveError> {
        if !bulk && self.mods.has_id(id) {
            return Err(SolveError::new(
                codes::DUPLICATE_MODIFIER,
                format!("modifier `{id}` already exists"),
            ));
        }
        Ok(())
    }

    /// The record of a checked modifier: the nodes its formulas read, resolved from its `from`
    /// instance, and (unless `bulk`) checked for a cycle.
    fn make(&self, link: Link<'_>, held: Held, bulk: bool) -> Result<Modifier, SolveError> {
        let reads = self.resolve_reads(link.id, link.from, held.body(self.catalog.as_deref()))?;
        let kept = self.graph.node_weight(link.target).is_some_and(|n| self.rules.var(n.def).is_kept());
        self.record(link, held, reads, kept, bulk)
    }

    /// The record of a checked modifier that reads `reads` (see [`ReadsOf`]) and whose variable
    /// is `kept` or not, unless `bulk` checked for a cycle.
    fn record(
        &self,
        link: Link<'_>,
        held: Held,
        reads: ReadsOf,
        kept: bool,
        bulk: bool,
    ) -> Result<Modifier, SolveError> {
        let mut out = None;
        self.record_into(link, held, reads, kept, bulk, &mut out)?;
        // `record_into` fills `out` when it succeeds.
        Ok(out.expect("a record"))
    }

    /// [`Shape::record`] written into `out` (empty before): the record is about 170 bytes,
    /// built where it is written, and moved once more, into its table's slot (each move of a
    /// record just written is a copy that waits for the writes).
    #[inline(always)]
    fn record_into(
        &self,
        link: Link<'_>,
        held: Held,
        (reads, value_vars, cond_slots): ReadsOf,
        kept: bool,
        bulk: bool,
        out: &mut Option<Modifier>,
    ) -> Result<(), SolveError> {
        if !bulk {
            self.check_cycles(link.id, link.target, &reads)?;
        }
        *out = Some(Modifier {
            value_vars,
            cond_slots,
            const_num: link.const_num,
            id: link.id.clone(),
            target: link.target,
            kind: link.kind,
            rank: link.rank,
            kept,
            held,
            priority: link.priority,
            seq: self.next_seq,
            on: link.on,
            from: link.from,
            reads,
        });
        Ok(())
    }

    /// The nodes a modifier's formulas read, seen from instance `from`: every variable once,
    /// the value formula's first and in its order (so its slots need no list of their own),
    /// how many of them are the value's, and the condition's nodes by its slots.
    #[inline(always)]
    fn resolve_reads(&self, id: &str, from: InstanceId, body: &Body) -> Result<ReadsOf, SolveError> {
        let value_formula = match &body.value {
            ModValue::Formula(f) => Some(f),
            ModValue::Const(_) => None,
        };
        let reads = self.reads(id, from, [value_formula, body.condition.as_ref()])?;
        let value_vars = value_formula.map_or(0, |f| f.variables().len()) as u32;
        // Every variable of both formulas is in `reads` (built just above).
        let cond_slots: Box<[NodeIndex]> = body.condition.as_ref().map_or(Box::default(), |f| {
            f.variables().filter_map(|v| reads.iter().find(|(r, _)| *r == v).map(|(_, n)| *n)).collect()
        });
        Ok((reads, value_vars, cond_slots))
    }

    /// The variable a modifier changes as seen from instance `on`: its declaration and its
    /// node.
    pub(super) fn target(
        &self,
        spec: &ModifierSpec,
        on: InstanceId,
    ) -> Result<(VarDefId, NodeIndex), SolveError> {
        let on_scope = self.instance(on).scope;
        let def = match &spec.var {
            Target::Def(def) => *def,
            Target::Name(name) => self.rules.resolve(on_scope, name).ok_or_else(|| {
                SolveError::new(
                    codes::UNKNOWN_VARIABLE,
                    format!(
                        "modifier `{}`: no variable `{name}` is visible from {} (scope {})",
                        spec.id,
                        spec.on
                            .as_deref()
                            .map_or("the global instance".to_owned(), |o| format!("instance `{o}`")),
                        self.rules.scope_def(on_scope).name
                    ),
                )
            })?,
        };
        let var = self.rules.var(def);
        if var.locked {
            return Err(locked(&spec.id, &var.name));
        }
        let node = self.node_from(on, def).ok_or_else(|| {
            SolveError::new(
                codes::UNKNOWN_VARIABLE,
                format!("modifier `{}`: `{}` has no instance here", spec.id, var.name),
            )
        })?;
        Ok((def, node))
    }

    /// Every variable the formulas read, each once, with its node as seen from instance `from`.
    pub(super) fn reads(
        &self,
        id: &str,
        from: InstanceId,
        formulas: [Option<&Arc<Formula>>; 2],
    ) -> Result<Reads, SolveError> {
        // Room for every variable of both (a formula's variables are distinct, so this is exact
        // unless the condition reads what the value reads).
        let mut reads = Reads::with_capacity(formulas.iter().flatten().map(|f| f.variables().len()).sum());
        // The instance found once for every read.
        let inst = self.instance(from);
        for f in formulas.into_iter().flatten() {
            for v in f.variables() {
                if reads.iter().any(|(r, _)| *r == v) {
                    continue;
                }
                let node = self.node_in(inst, VarDefId(v.0)).ok_or_else(|| self.not_visible(id, v))?;
                reads.push((v, node));
            }
        }
        Ok(reads)
    }
}

/// What a checked modifier reads: every variable once with its node (the value formula's first,
/// in its slots' order), how many of them are the value's, and the condition's nodes by its
/// slots — `Modifier::reads`, `value_vars` and `cond_slots`.
type ReadsOf = (Reads, u32, Box<[NodeIndex]>);

/// Where a checked modifier applies, and what of it the hot loops read in place.
struct Link<'a> {
    id: &'a Arc<str>,
    on: InstanceId,
    from: InstanceId,
    target: NodeIndex,
    kind: ModKind,
    rank: u8,
    priority: u32,
    const_num: Option<Num>,
}

fn locked(id: &str, var: &str) -> SolveError {
    SolveError::new(
        codes::LOCKED,
        format!("modifier `{id}`: variable `{var}` is locked and accepts no modifiers"),
    )
}

/// What a modifier on variable `def` is apart from where it applies, checked: its type as it
/// applies to the variable's format (see [`check_kind`]), its value and condition (formulas
/// compiled in `scope` when given as text) with its text and `source`, and its value as a
/// number when it is a constant one. What [`Shape::prepare`] checks of a modifier given whole
/// and `Catalog::add` of a template, once. `id` names the modifier in errors.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn check_body(
    rules: &Rules,
    id: &str,
    def: VarDefId,
    kind: ModKind,
    value: &Instruction,
    condition: Option<&Instruction>,
    scope: ScopeId,
    source: Arc<str>,
) -> Result<(ModKind, Body, Option<Num>), SolveError> {
    let kind = check_kind(rules, id, def, kind)?;
    let format = &rules.var(def).format;
    let value_format = kind.value_format(format);
    let written = value;
    let value = instruction_value(rules, id, value, scope, format, &value_format)?;
    let text = Body::written(&value, written);
    let condition = match condition {
        None => None,
        Some(c) => Some(formula(rules, id, "condition", c, scope, format, &Format::Boolean)?),
    };
    let const_num = match &value {
        ModValue::Const(Value::Number(d)) => Some(Num::from_decimal(*d)),
        _ => None,
    };
    Ok((kind, Body { value, condition, text, source }, const_num))
}

/// The modifier type `kind` as it applies to variable `def`: rejected on a locked variable,
/// or when the variable's format does not take the type. `id` names the modifier in errors.
#[inline(always)]
fn check_kind(rules: &Rules, id: &str, def: VarDefId, kind: ModKind) -> Result<ModKind, SolveError> {
    let var = rules.var(def);
    if var.locked {
        return Err(locked(id, &var.name));
    }
    kind.for_format(&var.format).map_err(|m| {
        SolveError::new(codes::BAD_MODIFIER_TYPE, format!("modifier `{id}` on `{}`: {m}", var.name))
    })
}

/// A modifier's formula (its value's, or its condition's: `what`), compiled in `scope` when
/// given as text, and checked to produce `expected`.
#[inline(always)]
fn formula(
    rules: &Rules,
    id: &str,
    what: &str,
    ins: &Instruction,
    scope: ScopeId,
    input: &Format,
    expected: &Format,
) -> Result<Arc<Formula>, SolveError> {
    let wrap = |e: FormulaError, text: &str| SolveError::formula(&format!("modifier `{id}` {what}"), text, e);
    match ins {
        Instruction::Text(t) | Instruction::Literal(_, t) => {
            let t = crate::modifier::formula_text(expected, t);
            rules.compile(t, scope, Some(input), Some(expected)).map_err(|e| wrap(e, t))
        }
        Instruction::Compiled(f) => {
            if f.format() != expected {
                return Err(SolveError::new(
                    codes::BAD_VALUE,
                    format!(
                        "modifier `{id}` {what}: `{}` produces {}, but {expected} is required",
                        f.text(),
                        f.format()
                    ),
                ));
            }
            Ok(f.clone())
        }
    }
}

/// A modifier's value: a constant, or a formula (see [`formula`]) unless it is static.
#[inline(always)]
fn instruction_value(
    rules: &Rules,
    id: &str,
    ins: &Instruction,
    scope: ScopeId,
    target: &Format,
    expected: &Format,
) -> Result<ModValue, SolveError> {
    if let Instruction::Literal(v, t) = ins {
        if !v.conforms_to(expected) {
            return Err(SolveError::new(
                codes::BAD_VALUE,
                format!("modifier `{id}`: `{t}` is not a {expected}"),
            ));
        }
        return Ok(ModValue::Const(v.clone()));
    }
    // Text formats take literals unless marked as formulas (the one rule: `is_literal`).
    if let Instruction::Text(t) = ins
        && crate::modifier::is_literal(expected, t)
    {
        let v = Value::parse_literal(expected, crate::modifier::literal_text(expected, t))
            .map_err(|m| SolveError::new(codes::BAD_VALUE, format!("modifier `{id}`: {m}")))?;
        return Ok(ModValue::Const(v));
    }
    let f = formula(rules, id, "value", ins, scope, target, expected)?;
    // A static formula (a constant) never goes through the evaluator again.
    Ok(match f.static_value() {
        Some(v) => ModValue::Const(v.clone()),
        None => ModValue::Formula(f),
    })
}

impl Shape {
    /// Adds a prepared modifier under a new key, and returns the key. With `plan_now`, a
    /// modifier linked last in its target's order has its steps appended to the target's plan
    /// entry at once; without (a sheet deferring its recomputation, whose entries are written
    /// when it settles), the entry is only marked stale.
    #[inline(always)]
    pub(super) fn insert_modifier(&mut self, m: &mut Option<Modifier>, plan_now: bool) -> ModKey {
        let key = self.new_key();
        self.link_modifier_from(key, m, plan_now);
        key
    }

    /// A key for a new modifier (the last one freed, or a new slot), its sequence number taken.
    pub(super) fn new_key(&mut self) -> ModKey {
        self.next_seq += 1;
        self.mods.new_key()
    }

    /// Attaches modifier `m` under `key`: edges, indexes, and its place in its target's list
    /// (`plan_now`: see [`Shape::insert_modifier`]).
    pub(super) fn link_modifier(&mut self, key: ModKey, m: Modifier, plan_now: bool) {
        self.link_modifier_from(key, &mut Some(m), plan_now);
    }

    /// [`Shape::link_modifier`] of the record in `src`, which is left empty: the record is read
    /// where it is and moved once, into the table.
    #[inline(always)]
    fn link_modifier_from(&mut self, key: ModKey, src: &mut Option<Modifier>, plan_now: bool) {
        let Some(m) = src.as_ref() else { return };
        let target = m.target;
        for &(_, read) in m.reads.iter() {
            self.add_edge(read, target);
        }
        self.index_modifier(key, m);
        let pos = self.place_in_order(m);
        // Last in the list (a new modifier usually is: the latest applies last among equals),
        // it is appended to the plan's entry; anywhere else, the entry is written again.
        if plan_now && pos == self.graph[target].mods.len() {
            let catalog = self.catalog.as_deref();
            self.plan.appended(target, key.0, m, (m.held.body(catalog), m.held.recipe(catalog)));
        } else {
            self.plan.touch(target);
        }
        self.mods.link_from(key, src);
        self.graph[target].mods.insert(pos, key);
    }

    /// Puts `m` in place of the modifier under `key` and returns that one: the same id, target,
    /// type and reads (the caller's to ensure), another value, source or sequence number — in
    /// its target's list where its sequence number puts it, as if the old one were removed and
    /// `m` added. The key must be the table's own ([`mods::ModTable::is_own`]).
    pub(super) fn replace_modifier(&mut self, key: ModKey, m: Modifier) -> Modifier {
        // Steps made for the old record are not the new one's (see `plan::Ready`).
        self.plan.forget_ready();
        let catalog = self.catalog.as_deref();
        // The caller found `key` live.
        let was = self.mods.get(key).expect("live modifier").held.body(catalog).source.clone();
        let now = &m.held.body(catalog).source;
        if was != *now
            && let Some(sources) = &mut self.sources
        {
            if let Some(list) = sources.get_mut(&was) {
                list.retain(|k| *k != key);
                self.empty_sources += usize::from(list.is_empty());
            }
            match sources.get_mut(now) {
                Some(list) => {
                    self.empty_sources -= usize::from(list.is_empty());
                    list.push(key);
                }
                None => {
                    sources.insert(now.clone(), vec![key]);
                }
            }
        }
        let target = m.target;
        self.plan.touch(target);
        self.graph[target].mods.retain(|k| *k != key);
        let pos = self.place_in_order(&m);
        // The key is the table's own and live (the caller's to ensure).
        let old = self.mods.replace(key, m).expect("an own live modifier");
        self.graph[target].mods.insert(pos, key);
        old
    }

    /// Where modifier `m` goes in its target's list, which is kept sorted by (priority, inherent
    /// priority, insertion) — (priority, insertion) on a variable whose modifiers apply as
    /// added: the search reads only the modifiers before it.
    ///
    /// Most modifiers go last (a batch links in order of its sequence numbers, and most of a
    /// variable's modifiers share a priority and a rank): one record read for those, here, and
    /// the search out of line.
    #[inline(always)]
    pub(super) fn place_in_order(&self, m: &Modifier) -> usize {
        let list = &self.graph[m.target].mods;
        match list.last().map(|k| self.mods.get(*k)) {
            None => 0,
            Some(Some(last)) if last.order() < m.order() => list.len(),
            Some(_) => self.search_place(m),
        }
    }

    /// [`Shape::place_in_order`] for a modifier that does not go last: a binary search.
    #[inline(never)]
    fn search_place(&self, m: &Modifier) -> usize {
        let order = m.order();
        let mods = &self.mods;
        self.graph[m.target].mods.partition_point(|k| mods.get(*k).is_some_and(|x| x.order() < order))
    }

    /// Enters modifier `m`, under `key`, in the indexes by source (when that index is built)
    /// and by instance (the index by id is the caller's).
    #[inline(always)]
    pub(super) fn index_modifier(&mut self, key: ModKey, m: &Modifier) {
        // Most modifiers are on and from the global instance, on a sheet that has not built
        // its index by source: nothing to do, decided here, before a call.
        if self.sources.is_some() || m.on != GLOBAL || m.from != GLOBAL {
            self.index_modifier_in(key, m);
        }
    }

    /// [`Shape::index_modifier`] when there is something to enter.
    #[inline(never)]
    fn index_modifier_in(&mut self, key: ModKey, m: &Modifier) {
        if let Some(sources) = &mut self.sources {
            match sources.get_mut(&m.held.body(self.catalog.as_deref()).source) {
                Some(list) => {
                    self.empty_sources -= usize::from(list.is_empty());
                    list.push(key);
                }
                None => {
                    sources.insert(m.held.body(self.catalog.as_deref()).source.clone(), vec![key]);
                }
            }
        }
        // The global instance is never removed, so it needs no index (and would hold nearly
        // every modifier).
        for i in [m.on, m.from] {
            if i != GLOBAL && self.by_instance[i.0 as usize].last() != Some(&key) {
                self.by_instance[i.0 as usize].push(key);
            }
        }
    }

    /// Whether a live modifier has source `source`: from the index when it is built, else by a
    /// pass over the modifiers (the index is built only by a change that uses it, so that a
    /// rejected one leaves a shared shape shared).
    pub(super) fn has_source(&self, source: &str) -> bool {
        match &self.sources {
            Some(sources) => sources.get(source).is_some_and(|l| !l.is_empty()),
            None => self.mods.iter().any(|(_, m)| &*m.held.body(self.catalog.as_deref()).source == source),
        }
    }

    /// The live modifiers with source `source`, in the order they were linked, from the index
    /// by source (see `Shape::sources`), built first if it is not yet.
    pub(super) fn source_keys(&mut self, source: &str) -> Vec<ModKey> {
        self.index_sources();
        self.sources.as_ref().and_then(|s| s.get(source)).cloned().unwrap_or_default()
    }

    /// Builds the index of modifiers by source (see `Shape::sources`) if it is not built yet.
    fn index_sources(&mut self) {
        if self.sources.is_some() {
            return;
        }
        let mut by_seq: Vec<(u64, ModKey, Arc<str>)> = self
            .mods
            .iter()
            .map(|(k, m)| (m.seq, k, m.held.body(self.catalog.as_deref()).source.clone()))
            .collect();
        by_seq.sort_unstable_by_key(|&(seq, ..)| seq);
        let mut sources: Map<Arc<str>, Vec<ModKey>> = Map::default();
        for (_, key, source) in by_seq {
            sources.entry(source).or_default().push(key);
        }
        self.sources = Some(sources);
        self.empty_sources = 0;
    }

    /// Detaches a modifier from everything and returns it.
    pub(super) fn unlink_modifier(&mut self, key: ModKey) -> Modifier {
        // Keys handed out are live until this function frees them.
        let m = self.mods.unlink(key).expect("live modifier");
        self.unlinked(key, &m);
        m
    }

    /// What [`Shape::unlink_modifier`] does after taking `m` (under `key`) out of the table:
    /// the plan's entry, the edges of what it read, its variable's, source's and instances'
    /// lists.
    pub(super) fn unlinked(&mut self, key: ModKey, m: &Modifier) {
        // Its key may be linked again, with other steps (see `plan::Ready`).
        self.plan.forget_ready();
        // The last of its variable's modifiers, a whole-number constant (an effect expiring, an
        // input replaced): its step leaves the plan's entry; anything else rewrites the entry.
        let last = self.graph.node_weight(m.target).is_some_and(|n| n.mods.last() == Some(&key));
        match m.const_num {
            Some(Num::Int(k)) if last => self.plan.popped(m.target, m.kind, k),
            _ => self.plan.touch(m.target),
        }
        for &(_, read) in m.reads.iter() {
            if self.graph.contains_node(read) {
                self.remove_edge(read, m.target);
            }
        }
        if let Some(list) = self.graph.node_weight_mut(m.target) {
            list.mods.retain(|k| *k != key);
        }
        if let Some(sources) = &mut self.sources
            && let Some(list) = sources.get_mut(&m.held.body(self.catalog.as_deref()).source)
        {
            list.retain(|k| *k != key);
            if list.is_empty() {
                self.empty_sources += 1;
                if self.empty_sources > 64 && self.empty_sources * 2 > sources.len() {
                    sources.retain(|_, l| !l.is_empty());
                    self.empty_sources = 0;
                }
            }
        }
        for i in [m.on, m.from] {
            if i != GLOBAL {
                self.by_instance[i.0 as usize].retain(|k| *k != key);
            }
        }
    }
}
