//! A sheet: the per-character state the solver keeps correct.
//!
//! A sheet owns scope instances (the character, each equipment, each part, each stat), one
//! graph node per variable of each instance, and the modifiers applied to them. Every mutation
//! validates first (names, instances, formats, locks, cycles) and changes nothing when it
//! fails; then it applies the change and recomputes exactly the affected variables, in
//! topological order, each at most once, stopping where a value did not change.

use crate::Map;
use crate::error::{SolveError, codes};
use crate::modifier::{Instruction, ModKind, ModValue, ModifierSpec};
use crate::rules::{Rules, ScopeId, VarDefId};
use formula::{EvalContext, Format, Formula, FormulaError, Num, Value, VarId, number};
use petgraph::Direction;
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use rust_decimal::Decimal;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::sync::Arc;

mod batch;
mod plan;
mod query;

pub use batch::{BatchError, Operation};
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

/// How output names a variable: `Hands` (global) or `sword1.MyPlusValue` (local).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VarRef {
    /// The instance id for local variables; `None` for globals.
    pub instance: Option<Arc<str>>,
    /// The name as declared.
    pub name: Arc<str>,
}

impl fmt::Display for VarRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.instance {
            Some(i) => write!(f, "{i}.{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// One variable whose value changed: `old` is `None` for a variable created by the operation,
/// `new` is `None` for one removed.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub var: VarRef,
    /// The variable's format.
    pub format: Format,
    pub old: Option<Slot>,
    pub new: Option<Slot>,
}

/// What a mutation did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Variables whose value changed: removed ones first, then the rest in topological order.
    pub changed: Vec<Change>,
    /// How many variable evaluations the mutation performed.
    pub recomputed: usize,
    /// The variables evaluated, in order — filled only when
    /// [`Sheet::record_evaluations`] is on (for diagnostics and tests).
    pub evaluated: Vec<VarRef>,
}

#[derive(Clone, Debug)]
struct Instance {
    key: Arc<str>,
    scope: ScopeId,
    parent: Option<InstanceId>,
    children: Vec<InstanceId>,
    /// One node per variable of the scope, by `VarDef::index`.
    nodes: Box<[NodeIndex]>,
}

#[derive(Clone, Debug)]
struct Node {
    def: VarDefId,
    owner: InstanceId,
    value: Slot,
    /// Modifiers on this variable, in application order.
    mods: Vec<ModKey>,
    /// Topological level: for every edge u → v, level(u) < level(v).
    level: u32,
    /// Recomputation epoch in which this node was queued.
    mark: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct ModKey(u32);

#[derive(Clone, Debug)]
struct Modifier {
    id: Arc<str>,
    target: NodeIndex,
    kind: ModKind,
    value: ModValue,
    condition: Option<Arc<Formula>>,
    /// The value as written.
    text: Arc<str>,
    priority: u32,
    seq: u64,
    source: Arc<str>,
    on: InstanceId,
    from: InstanceId,
    /// Every variable the value and condition read, and the node it is in this sheet.
    reads: Box<[(VarId, NodeIndex)]>,
    /// The nodes the value formula reads, in the order of its variables (its slots), so that
    /// evaluation indexes instead of searching.
    value_slots: Box<[NodeIndex]>,
    /// The same for the condition.
    cond_slots: Box<[NodeIndex]>,
    /// A constant NUMBER value, ready for the numeric path.
    const_num: Option<Num>,
}

impl Modifier {
    fn order(&self) -> (u32, u8, u64) {
        (self.priority, self.kind.inherent_priority(), self.seq)
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
    pub default: Value,
    pub steps: Vec<TraceStep>,
    pub value: Slot,
}

/// The per-character state. Owned by one writer; `Clone` gives an independent what-if copy
/// (cost: a copy of every instance, node, edge and modifier — O(variables + modifiers)).
#[derive(Clone)]
pub struct Sheet {
    rules: Arc<Rules>,
    graph: StableDiGraph<Node, u32>,
    instances: Vec<Option<Instance>>,
    instance_keys: Map<Arc<str>, InstanceId>,
    mods: Vec<Option<Modifier>>,
    free_mods: Vec<ModKey>,
    mod_ids: Map<Arc<str>, ModKey>,
    sources: Map<Arc<str>, Vec<ModKey>>,
    /// The modifiers on or from each instance other than the global one, by instance id: what
    /// removing the instance must remove.
    by_instance: Vec<Vec<ModKey>>,
    /// Slots of removed instances, reused by the next instances created (last freed first), so
    /// a sheet whose objects come and go does not grow.
    free_instances: Vec<InstanceId>,
    next_seq: u64,
    epoch: u32,
    /// Default value of each variable definition, by `VarDefId` (copied from the rules once).
    defaults: Arc<[Value]>,
    record_evaluations: bool,
    /// The full-solve plan; `None` after any structural change (built again when needed).
    plan: Option<Box<plan::Plan>>,
}

/// The modifier's formulas read variables through this context.
struct ModContext<'a> {
    graph: &'a StableDiGraph<Node, u32>,
    reads: &'a [(VarId, NodeIndex)],
    /// The nodes of the formula being evaluated, by slot.
    slots: &'a [NodeIndex],
}

impl ModContext<'_> {
    #[inline]
    fn slot(&self, id: VarId) -> Option<&Slot> {
        let (_, node) = self.reads.iter().find(|(v, _)| *v == id)?;
        Some(&self.graph[*node].value)
    }
}

impl EvalContext for ModContext<'_> {
    fn value(&self, id: VarId) -> Option<Value> {
        self.slot(id)?.as_ref().ok().cloned()
    }

    #[inline]
    fn number(&self, id: VarId) -> Option<Decimal> {
        match self.slot(id)? {
            Ok(Value::Number(d)) => Some(*d),
            _ => None,
        }
    }

    #[inline(always)]
    fn num_at(&self, slot: usize) -> Option<Option<Num>> {
        let node = *self.slots.get(slot)?;
        Some(match &self.graph[node].value {
            Ok(Value::Number(d)) => Some(Num::from_decimal(*d)),
            _ => None,
        })
    }
}

impl Sheet {
    /// A new sheet over `rules`, with the global instance and its variables at their defaults.
    pub fn new(rules: Arc<Rules>) -> Sheet {
        let defaults: Arc<[Value]> = rules.vars().iter().map(|v| rules.default_value(&v.format)).collect();
        let mut sheet = Sheet {
            graph: StableDiGraph::default(),
            instances: Vec::new(),
            instance_keys: Map::default(),
            mods: Vec::new(),
            free_mods: Vec::new(),
            mod_ids: Map::default(),
            sources: Map::default(),
            by_instance: Vec::new(),
            free_instances: Vec::new(),
            next_seq: 0,
            epoch: 0,
            defaults,
            rules,
            record_evaluations: false,
            plan: None,
        };
        let global_key: Arc<str> = sheet.rules.scope_def(sheet.rules.global()).name.clone();
        sheet.create_instance(global_key, sheet.rules.global(), None);
        sheet
    }

    /// Whether reports list every variable evaluated, in order ([`Report::evaluated`]).
    pub fn record_evaluations(&mut self, on: bool) {
        self.record_evaluations = on;
    }

    /// How many instance slots the sheet holds, live or free (for tests of reuse).
    #[cfg(test)]
    pub(crate) fn instance_slots(&self) -> usize {
        self.instances.len()
    }

    /// About how many bytes the sheet holds (its variables, edges, modifiers and instances; not
    /// the shared rules): for memory budgets, not accounting.
    pub fn footprint(&self) -> usize {
        use std::mem::size_of;
        let mods: usize = self.mods.iter().flatten().map(|m| size_of::<Modifier>() + 8 * m.reads.len()).sum();
        let nodes: usize = self.graph.node_weights().map(|n| size_of::<Node>() + 8 * n.mods.len()).sum();
        nodes
            + self.graph.edge_count() * 24
            + mods
            + self.instances.len() * (size_of::<Option<Instance>>() + 32)
            + self.mod_ids.len() * 48
    }

    /// The rules this sheet follows.
    pub fn rules(&self) -> &Arc<Rules> {
        &self.rules
    }

    /// Creates an instance in a free slot (the last freed) or a new one at the end.
    fn create_instance(&mut self, key: Arc<str>, scope: ScopeId, parent: Option<InstanceId>) -> InstanceId {
        self.plan = None;
        let reused = self.free_instances.pop();
        let id = reused.unwrap_or(InstanceId(self.instances.len() as u32));
        let vars = self.rules.scope_def(scope).vars.clone();
        let nodes: Box<[NodeIndex]> = vars
            .iter()
            .map(|&def| {
                self.graph.add_node(Node {
                    def,
                    owner: id,
                    value: Ok(self.defaults[def.0 as usize].clone()),
                    mods: Vec::new(),
                    level: 0,
                    mark: 0,
                })
            })
            .collect();
        let instance = Instance { key: key.clone(), scope, parent, children: Vec::new(), nodes };
        if reused.is_some() {
            self.instances[id.0 as usize] = Some(instance);
            self.by_instance[id.0 as usize].clear();
        } else {
            self.instances.push(Some(instance));
            self.by_instance.push(Vec::new());
        }
        if let Some(p) = parent
            && let Some(pi) = self.instances[p.0 as usize].as_mut()
        {
            pi.children.push(id);
        }
        // The global instance is not keyed: output names globals without an instance.
        if parent.is_some() {
            self.instance_keys.insert(key, id);
        }
        id
    }

    fn instance(&self, id: InstanceId) -> &Instance {
        // Ids in live structures always name live instances: removal clears every reference.
        self.instances[id.0 as usize].as_ref().expect("live instance")
    }

    /// The instance with id `key`, or the global instance for `None`.
    fn lookup_instance(&self, key: Option<&str>) -> Result<InstanceId, SolveError> {
        match key {
            None => Ok(GLOBAL),
            Some(k) => self.instance_keys.get(k).copied().ok_or_else(|| {
                SolveError::new(codes::UNKNOWN_INSTANCE, format!("there is no instance `{k}` on this sheet"))
            }),
        }
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

    /// How output names the variable in `node`.
    fn var_ref(&self, node: NodeIndex) -> VarRef {
        let n = &self.graph[node];
        let name = self.rules.var(n.def).name.clone();
        let instance = if n.owner == GLOBAL { None } else { Some(self.instance(n.owner).key.clone()) };
        VarRef { instance, name }
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
        self.single(|s, p| s.op_add_instance(key, scope, parent, p))
    }

    /// Removes instance `key`, its descendants, their variables, and every modifier on or from
    /// any of them.
    pub fn remove_instance(&mut self, key: &str) -> Result<Report, SolveError> {
        self.single(|s, p| s.op_remove_instance(key, p))
    }

    // ---- modifiers ----

    /// Adds a modifier. Rejected, with the sheet unchanged, when the id is taken, an instance or
    /// the variable is unknown, the variable is locked, the type does not fit the format, a
    /// formula is invalid in the `from` instance's scope, or the modifier would close a cycle.
    pub fn add_modifier(&mut self, spec: &ModifierSpec) -> Result<Report, SolveError> {
        self.single(|s, p| s.op_add_modifier(spec, p))
    }

    fn prepare(&self, spec: &ModifierSpec) -> Result<Modifier, SolveError> {
        if self.mod_ids.contains_key(&spec.id) {
            return Err(SolveError::new(
                codes::DUPLICATE_MODIFIER,
                format!("modifier `{}` already exists", spec.id),
            ));
        }
        let on = self.lookup_instance(spec.on.as_deref())?;
        let from = match &spec.from {
            Some(f) => self.lookup_instance(Some(f))?,
            None => on,
        };
        let on_scope = self.instance(on).scope;
        let def = self.rules.resolve(on_scope, &spec.var).ok_or_else(|| {
            SolveError::new(
                codes::UNKNOWN_VARIABLE,
                format!(
                    "modifier `{}`: no variable `{}` is visible from {} (scope {})",
                    spec.id,
                    spec.var,
                    spec.on
                        .as_deref()
                        .map_or("the global instance".to_owned(), |o| format!("instance `{o}`")),
                    self.rules.scope_def(on_scope).name
                ),
            )
        })?;
        let var = self.rules.var(def);
        if var.locked {
            return Err(SolveError::new(
                codes::LOCKED,
                format!("modifier `{}`: variable `{}` is locked and accepts no modifiers", spec.id, var.name),
            ));
        }
        let target = self.node_from(on, def).ok_or_else(|| {
            SolveError::new(
                codes::UNKNOWN_VARIABLE,
                format!("modifier `{}`: `{}` has no instance here", spec.id, var.name),
            )
        })?;
        let kind = ModKind::parse(&spec.kind, &var.format).map_err(|m| {
            SolveError::new(
                codes::BAD_MODIFIER_TYPE,
                format!("modifier `{}` on `{}`: {m}", spec.id, var.name),
            )
        })?;
        let value_format = kind.value_format(&var.format);
        let from_scope = self.instance(from).scope;
        let value = self.instruction_value(spec, &spec.value, from_scope, &var.format, &value_format)?;
        let condition = match &spec.condition {
            None => None,
            Some(c) => {
                let f = self.formula(spec, "condition", c, from_scope, &var.format, &Format::Boolean)?;
                Some(f)
            }
        };
        let mut reads: Vec<(VarId, NodeIndex)> = Vec::new();
        let formulas = [
            match &value {
                ModValue::Formula(f) => Some(f),
                ModValue::Const(_) => None,
            },
            condition.as_ref(),
        ];
        for f in formulas.into_iter().flatten() {
            for v in f.variables() {
                if reads.iter().any(|(r, _)| *r == v) {
                    continue;
                }
                let node = self.node_from(from, VarDefId(v.0)).ok_or_else(|| {
                    SolveError::new(
                        codes::UNKNOWN_VARIABLE,
                        format!(
                            "modifier `{}`: its formula reads `{}`, which is not visible from its instance",
                            spec.id,
                            self.rules.var(VarDefId(v.0)).name
                        ),
                    )
                })?;
                reads.push((v, node));
            }
        }
        let slots = |f: Option<&Arc<Formula>>| -> Box<[NodeIndex]> {
            // Every variable of both formulas is in `reads` (built just above).
            f.map_or(Box::default(), |f| {
                f.variables().filter_map(|v| reads.iter().find(|(r, _)| *r == v).map(|(_, n)| *n)).collect()
            })
        };
        let value_slots = slots(match &value {
            ModValue::Formula(f) => Some(f),
            ModValue::Const(_) => None,
        });
        let cond_slots = slots(condition.as_ref());
        let const_num = match &value {
            ModValue::Const(Value::Number(d)) => Some(Num::from_decimal(*d)),
            _ => None,
        };
        let m = Modifier {
            value_slots,
            cond_slots,
            const_num,
            id: spec.id.clone(),
            target,
            kind,
            value,
            condition,
            text: match &spec.value {
                Instruction::Compiled(f) => f.text_arc().clone(),
                Instruction::Text(t) | Instruction::Literal(_, t) => t.clone(),
            },
            priority: spec.priority,
            seq: self.next_seq,
            source: spec.source.clone(),
            on,
            from,
            reads: reads.into(),
        };
        self.check_cycles(&m)?;
        Ok(m)
    }

    fn formula(
        &self,
        spec: &ModifierSpec,
        what: &str,
        ins: &Instruction,
        scope: ScopeId,
        input: &Format,
        expected: &Format,
    ) -> Result<Arc<Formula>, SolveError> {
        let wrap = |e: FormulaError, text: &str| {
            SolveError::formula(&format!("modifier `{}` {what}", spec.id), text, e)
        };
        match ins {
            Instruction::Text(t) | Instruction::Literal(_, t) => {
                self.rules.compile(t, scope, Some(input), Some(expected)).map_err(|e| wrap(e, t))
            }
            Instruction::Compiled(f) => {
                if f.format() != expected {
                    return Err(SolveError::new(
                        codes::BAD_VALUE,
                        format!(
                            "modifier `{}` {what}: `{}` produces {}, but {expected} is required",
                            spec.id,
                            f.text(),
                            f.format()
                        ),
                    ));
                }
                Ok(f.clone())
            }
        }
    }

    fn instruction_value(
        &self,
        spec: &ModifierSpec,
        ins: &Instruction,
        scope: ScopeId,
        target: &Format,
        expected: &Format,
    ) -> Result<ModValue, SolveError> {
        if let Instruction::Literal(v, t) = ins {
            if !v.conforms_to(expected) {
                return Err(SolveError::new(
                    codes::BAD_VALUE,
                    format!("modifier `{}`: `{t}` is not a {expected}", spec.id),
                ));
            }
            return Ok(ModValue::Const(v.clone()));
        }
        if let Instruction::Text(t) = ins {
            match expected {
                // Formats without formula syntax take literals only.
                Format::String | Format::Custom(_) => {
                    return Value::parse_literal(expected, t).map(ModValue::Const).map_err(|m| {
                        SolveError::new(codes::BAD_VALUE, format!("modifier `{}`: {m}", spec.id))
                    });
                }
                Format::Boolean
                    if t.trim().eq_ignore_ascii_case("true") || t.trim().eq_ignore_ascii_case("false") =>
                {
                    return Ok(ModValue::Const(Value::Boolean(t.trim().eq_ignore_ascii_case("true"))));
                }
                _ => {}
            }
        }
        let f = self.formula(spec, "value", ins, scope, target, expected)?;
        // A static formula (a constant) never goes through the evaluator again.
        Ok(match f.static_value() {
            Some(v) => ModValue::Const(v.clone()),
            None => ModValue::Formula(f),
        })
    }

    /// Rejects the modifier if an edge from something it reads to its target would close a cycle.
    fn check_cycles(&self, m: &Modifier) -> Result<(), SolveError> {
        for &(_, read) in m.reads.iter() {
            if let Some(path) = self.path(m.target, read) {
                // path: target → … → read; the new edge read → target closes it.
                let mut cycle: Vec<NodeIndex> = vec![read];
                cycle.extend(path);
                let names: Vec<String> = cycle.iter().map(|&n| self.var_ref(n).to_string()).collect();
                let mut modifiers = vec![m.id.to_string()];
                for pair in cycle.windows(2) {
                    let (a, b) = (pair[0], pair[1]);
                    if b == m.target && a == read {
                        continue;
                    }
                    for &k in &self.graph[b].mods {
                        if let Some(x) = &self.mods[k.0 as usize]
                            && x.reads.iter().any(|(_, n)| *n == a)
                        {
                            modifiers.push(x.id.to_string());
                        }
                    }
                }
                let mut err = SolveError::new(
                    codes::CYCLE,
                    format!(
                        "modifier `{}` on `{}` would create a cycle: {} (modifiers: {})",
                        m.id,
                        self.var_ref(m.target),
                        names.join(" → "),
                        modifiers.join(", ")
                    ),
                );
                err.cycle = names;
                err.cycle_modifiers = modifiers;
                return Err(err);
            }
        }
        Ok(())
    }

    /// A path `from → … → to` along dependency edges, if any (`[from]` when they are equal).
    /// Levels increase along every edge, so the search skips nodes above `to`'s level.
    fn path(&self, from: NodeIndex, to: NodeIndex) -> Option<Vec<NodeIndex>> {
        if from == to {
            return Some(vec![from]);
        }
        let limit = self.graph[to].level;
        if self.graph[from].level >= limit {
            // Levels increase along every edge: nothing at or above `to`'s level reaches it.
            return None;
        }
        let mut parent: Map<NodeIndex, NodeIndex> = Map::default();
        let mut stack = vec![from];
        while let Some(n) = stack.pop() {
            for next in self.graph.neighbors_directed(n, Direction::Outgoing) {
                if next == to {
                    let mut path = vec![to, n];
                    let mut cur = n;
                    while let Some(&p) = parent.get(&cur) {
                        path.push(p);
                        cur = p;
                    }
                    path.reverse();
                    return Some(path);
                }
                if self.graph[next].level < limit && next != from && !parent.contains_key(&next) {
                    parent.insert(next, n);
                    stack.push(next);
                }
            }
        }
        None
    }

    /// Adds a prepared modifier under a new key, and returns the key.
    fn insert_modifier(&mut self, m: Modifier) -> ModKey {
        self.next_seq += 1;
        let key = match self.free_mods.pop() {
            Some(k) => k,
            None => {
                self.mods.push(None);
                ModKey(self.mods.len() as u32 - 1)
            }
        };
        self.link_modifier(key, m);
        key
    }

    /// Attaches modifier `m` under `key`: edges, indexes, and its place in its target's list.
    fn link_modifier(&mut self, key: ModKey, m: Modifier) {
        self.plan = None;
        let target = m.target;
        for &(_, read) in m.reads.iter() {
            self.add_edge(read, target);
        }
        self.mod_ids.insert(m.id.clone(), key);
        self.sources.entry(m.source.clone()).or_default().push(key);
        // The global instance is never removed, so it needs no index (and would hold nearly
        // every modifier).
        for i in [m.on, m.from] {
            if i != GLOBAL && self.by_instance[i.0 as usize].last() != Some(&key) {
                self.by_instance[i.0 as usize].push(key);
            }
        }
        let order = m.order();
        let mods = &self.mods;
        let list = &self.graph[target].mods;
        // Keep the target's list sorted by (priority, inherent priority, insertion).
        let pos = list.partition_point(|k| mods[k.0 as usize].as_ref().is_some_and(|x| x.order() < order));
        self.mods[key.0 as usize] = Some(m);
        self.graph[target].mods.insert(pos, key);
    }

    fn add_edge(&mut self, from: NodeIndex, to: NodeIndex) {
        self.plan = None;
        if let Some(e) = self.graph.find_edge(from, to) {
            self.graph[e] += 1;
            return;
        }
        self.graph.add_edge(from, to, 1);
        let needed = self.graph[from].level + 1;
        if self.graph[to].level < needed {
            // Raise `to` and everything after it that would no longer be above its inputs.
            self.graph[to].level = needed;
            let mut stack = vec![to];
            while let Some(n) = stack.pop() {
                let level = self.graph[n].level + 1;
                let mut next = self.graph.neighbors_directed(n, Direction::Outgoing).detach();
                while let Some(s) = next.next_node(&self.graph) {
                    if self.graph[s].level < level {
                        self.graph[s].level = level;
                        stack.push(s);
                    }
                }
            }
        }
    }

    fn remove_edge(&mut self, from: NodeIndex, to: NodeIndex) {
        if let Some(e) = self.graph.find_edge(from, to) {
            if self.graph[e] > 1 {
                self.graph[e] -= 1;
            } else {
                self.graph.remove_edge(e);
            }
        }
    }

    /// Detaches a modifier from everything and returns it.
    fn unlink_modifier(&mut self, key: ModKey) -> Modifier {
        self.plan = None;
        // Keys handed out are live until this function frees them.
        let m = self.mods[key.0 as usize].take().expect("live modifier");
        for &(_, read) in m.reads.iter() {
            if self.graph.contains_node(read) {
                self.remove_edge(read, m.target);
            }
        }
        if let Some(list) = self.graph.node_weight_mut(m.target) {
            list.mods.retain(|k| *k != key);
        }
        self.mod_ids.remove(&m.id);
        if let Some(list) = self.sources.get_mut(&m.source) {
            list.retain(|k| *k != key);
            if list.is_empty() {
                self.sources.remove(&m.source);
            }
        }
        for i in [m.on, m.from] {
            if i != GLOBAL {
                self.by_instance[i.0 as usize].retain(|k| *k != key);
            }
        }
        self.free_mods.push(key);
        m
    }

    /// Removes the modifier with id `id`.
    pub fn remove_modifier(&mut self, id: &str) -> Result<Report, SolveError> {
        self.single(|s, p| s.op_remove_modifier(id, p))
    }

    /// Removes every modifier whose source is `source`.
    pub fn remove_source(&mut self, source: &str) -> Result<Report, SolveError> {
        self.single(|s, p| s.op_remove_source(source, p))
    }

    // ---- evaluation ----

    /// Recomputes `dirty` nodes and whatever their changes reach, in topological order, each at
    /// most once; `created` nodes report `old: None`; `removed` changes are reported first.
    fn recompute(
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
    fn compute(&self, node: NodeIndex, trace: Option<&mut Vec<TraceStep>>) -> Slot {
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
    fn compute_number(&self, n: &Node, start: Decimal) -> Slot {
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

    fn compute_any(&self, n: &Node, mut trace: Option<&mut Vec<TraceStep>>) -> Slot {
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

    fn record(
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

    fn value_error(&self, m: &Modifier, e: FormulaError) -> Arc<ValueError> {
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

fn slot_eq(a: &Slot, b: &Slot) -> bool {
    match (a, b) {
        (Ok(x), Ok(y)) => x == y,
        (Err(x), Err(y)) => x == y,
        _ => false,
    }
}

#[cold]
fn math_error(kind: ModKind, e: number::MathError) -> FormulaError {
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
fn apply(kind: ModKind, cur: Value, v: Value) -> Result<Value, FormulaError> {
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
