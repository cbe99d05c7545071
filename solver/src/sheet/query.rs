//! Reading a sheet: finding variables, their values and formats, how each got its value
//! ([`Trace`]), and the dependency graph around a variable ([`Sheet::dependencies`],
//! [`Sheet::dependents`]), the instances of a scope that match a formula ([`Sheet::select`]).
//! Nothing here changes the sheet.

use super::{GLOBAL, Sheet, Slot, Trace, VarRef};
use crate::error::{SolveError, codes};
use formula::{Format, Value};
use petgraph::stable_graph::NodeIndex;
use std::sync::Arc;

/// A variable of a sheet: a copyable handle, found once by [`Sheet::find`] (strings are parsed
/// once, at the edge) and then used for every question about the variable.
///
/// A handle is valid until the instance that owns the variable is removed (a global's handle,
/// for the sheet's life). After that, queries answer `None` (or an empty list), or, once the
/// slot is reused by an instance added later, describe that instance's variable: find the
/// variable again after removing instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Var(pub(super) NodeIndex);

impl Var {
    pub(super) fn new(node: NodeIndex) -> Var {
        Var(node)
    }
}

impl Sheet {
    /// The variable named by `reference`: `Hands` for a global, `<instance id>.<Name>` for a
    /// local (`sword1.MyPlusValue`); names match case-insensitively. `None` when there is none
    /// ([`Sheet::lookup`] says why).
    pub fn find(&self, reference: &str) -> Option<Var> {
        self.find_node(reference).ok().map(Var)
    }

    /// Like [`Sheet::find`], with an error naming the reference when there is no such variable.
    pub fn lookup(&self, reference: &str) -> Result<Var, SolveError> {
        self.find_node(reference).map(Var)
    }

    /// Whether `var` still names a variable of this sheet.
    pub fn contains(&self, var: Var) -> bool {
        self.shape.graph.node_weight(var.0).is_some_and(|n| self.shape.instances.get(n.owner).is_some())
    }

    /// How output names `var` (its instance and declared name).
    pub fn name(&self, var: Var) -> Option<VarRef> {
        self.contains(var).then(|| self.shape.var_ref(var.0))
    }

    /// `var`'s instance key (`None` for a global), name and format, borrowed: what
    /// [`Sheet::name`] and [`Sheet::format`] give, without copying.
    pub(crate) fn parts(&self, var: Var) -> Option<(Option<&str>, &str, &Format)> {
        if !self.contains(var) {
            return None;
        }
        let node = &self.shape.graph[var.0];
        let key = (node.owner != GLOBAL).then(|| &*self.shape.instance(node.owner).key);
        let def = self.shape.rules.var(node.def);
        Some((key, &def.name, &def.format))
    }

    /// The value of `var`.
    pub fn slot(&self, var: Var) -> Option<Slot> {
        self.contains(var).then(|| self.value_of(var.0))
    }

    /// The format of `var`.
    pub fn format(&self, var: Var) -> Option<&Format> {
        self.contains(var).then(|| &self.shape.rules.var(self.shape.graph[var.0].def).format)
    }

    /// The variables `var`'s modifiers read: its incoming edges in the dependency graph, in
    /// the order its modifiers apply and read them, each once. Every modifier counts, whether
    /// or not it evaluated: a variable in error still shows every edge.
    pub fn dependencies(&self, var: Var) -> Vec<Var> {
        if !self.contains(var) {
            return Vec::new();
        }
        // Every edge into `var` is a read of one of its modifiers (the graph's edges are its
        // modifiers' reads, counted).
        let mut out: Vec<Var> = Vec::new();
        for key in &self.shape.graph[var.0].mods {
            let Some(m) = self.shape.mods.get(*key) else { continue };
            for &(_, n) in m.reads.iter() {
                if !out.contains(&Var(n)) {
                    out.push(Var(n));
                }
            }
        }
        out
    }

    /// The variables whose modifiers read `var`: its outgoing edges, in topological order
    /// (then by name).
    pub fn dependents(&self, var: Var) -> Vec<Var> {
        if !self.contains(var) {
            return Vec::new();
        }
        let mut out: Vec<(u32, String, NodeIndex)> = self
            .shape
            .plan
            .succ
            .of(var.0.index())
            .iter()
            .map(|&t| NodeIndex::new(t as usize))
            .map(|n| (self.shape.plan.level_of(n), self.shape.var_ref(n).to_string(), n))
            .collect();
        out.sort();
        out.into_iter().map(|(_, _, n)| Var(n)).collect()
    }

    /// How `var` got its value (see [`Sheet::trace`]).
    pub fn trace_of(&self, var: Var) -> Option<Trace> {
        self.contains(var).then(|| self.trace_node(var.0))
    }

    /// The name of a variable found by reference: `Hands`, or `<instance id>.<name>` (`sword1.MyPlusValue`).
    /// Names match case-insensitively.
    pub fn find_ref(&self, reference: &str) -> Result<VarRef, SolveError> {
        self.find_node(reference).map(|n| self.shape.var_ref(n))
    }

    pub(super) fn find_node(&self, reference: &str) -> Result<NodeIndex, SolveError> {
        let global_scope = self.shape.rules.global();
        if let Some(def) = self.shape.rules.resolve(global_scope, reference)
            && self.shape.rules.var(def).scope == global_scope
        {
            return Ok(self.shape.instance(GLOBAL).nodes[self.shape.rules.var(def).index as usize]);
        }
        // Instance ids and names may both contain dots: try every split.
        for (i, _) in reference.match_indices('.') {
            let (key, name) = (&reference[..i], &reference[i + 1..]);
            if let Some(inst) = self.shape.instances.id_of(key) {
                let scope = self.shape.instance(inst).scope;
                if let Some(def) = self.shape.rules.resolve(scope, name)
                    && self.shape.rules.var(def).scope == scope
                {
                    return Ok(self.shape.instance(inst).nodes[self.shape.rules.var(def).index as usize]);
                }
            }
        }
        Err(SolveError::new(
            codes::UNKNOWN_VARIABLE,
            format!(
                "no variable `{reference}` on this sheet (write `Name` for a global, `<instance>.<Name>` for a local)"
            ),
        ))
    }

    /// The value of a variable by reference.
    pub fn value(&self, reference: &str) -> Result<Slot, SolveError> {
        self.find_node(reference).map(|n| self.value_of(n))
    }

    /// Every variable of every instance with its value: globals first, then instances in the
    /// order they were added, each in declaration order.
    pub fn values(&self) -> Vec<(VarRef, Slot)> {
        self.shape
            .instances
            .iter()
            .flat_map(|(_, inst)| inst.nodes.iter())
            .map(|&n| (self.shape.var_ref(n), self.value_of(n)))
            .collect()
    }

    /// Every variable with its format and value, in the order of [`Sheet::values`], handed to
    /// `f` as its instance's key (`None`: global), its name, its format and its value: no list
    /// and no [`VarRef`] per variable ([`crate::full_name`] joins the two parts).
    pub fn for_each_value(&self, mut f: impl FnMut(Option<&str>, &str, &Format, Slot)) {
        for (_, inst) in self.shape.instances.iter() {
            for &n in inst.nodes.iter() {
                let node = &self.shape.graph[n];
                let key = (node.owner != GLOBAL).then_some(&*inst.key);
                let var = self.shape.rules.var(node.def);
                f(key, &var.name, &var.format, self.value_of(n));
            }
        }
    }

    /// [`Sheet::for_each_value`], a whole number of scale 0 (nearly every value) handed over
    /// as itself, `Ok(x)`, and any other value as its slot, `Err(slot)`, lent rather than
    /// copied: for callers that write values out (the daemon's SolveBatch reply), with no
    /// `Decimal` made and taken apart again per value, and no count taken on what a text or
    /// custom value shares with the ruleset (every core writing characters out would write
    /// those counts). Each variable comes with its definition and that definition's id (its
    /// index in [`crate::Rules::vars`]), so that a caller can keep what it derives from a
    /// definition in a table of its own.
    pub fn for_each_whole_or_value(
        &self,
        mut f: impl FnMut(Option<&str>, crate::VarDefId, &crate::VarDef, Result<i64, &Slot>),
    ) {
        for (_, inst) in self.shape.instances.iter() {
            let key = (inst.parent.is_some()).then_some(&*inst.key);
            for &n in inst.nodes.iter() {
                let def = self.shape.graph[n].def;
                let missing;
                let value = match (self.vals.int(n.index()), self.vals.other_ref(n.index())) {
                    (Some(x), _) => Ok(x),
                    (None, Some(slot)) => Err(slot),
                    // (Against the invariants, no value: the error value saying so.)
                    (None, None) => {
                        missing = self.value_of(n);
                        Err(&missing)
                    }
                };
                f(key, def, self.shape.rules.var(def), value);
            }
        }
    }

    /// One variable by reference (see [`Sheet::find`]), with its format and value.
    pub fn typed_value(&self, reference: &str) -> Result<(VarRef, Format, Slot), SolveError> {
        let n = self.find_node(reference)?;
        let node = &self.shape.graph[n];
        Ok((self.shape.var_ref(n), self.shape.rules.var(node.def).format.clone(), self.value_of(n)))
    }

    /// How many variables the sheet has.
    pub fn variable_count(&self) -> usize {
        self.shape.graph.node_count()
    }

    /// The ids of every modifier on the sheet.
    pub fn modifier_ids(&self) -> impl Iterator<Item = &str> {
        self.shape.mods.ids().map(|k| &**k)
    }

    /// How many modifiers the sheet has.
    pub fn modifier_count(&self) -> usize {
        self.shape.mods.len()
    }

    /// The instances of scope `scope` for which the BOOLEAN formula `where_` — read in each
    /// instance's scope, with the values now — is true: their keys, sorted. A read-only query
    /// (`select(SCOPE, WHERE)`); the formula is compiled once, its names resolved per
    /// instance. An unknown scope, a formula that does not compile, or one that has no value
    /// for an instance (which the error names) is an error.
    pub fn select(&self, scope: &str, where_: &str) -> Result<Vec<Arc<str>>, SolveError> {
        let rules = &self.shape.rules;
        let scope_id = rules.scope(scope)?;
        let label = format!("select {scope} where `{where_}`");
        let formula = rules
            .compile(where_, scope_id, None, Some(&Format::Boolean))
            .map_err(|e| SolveError::formula(&label, where_, e))?;
        let mut keys = Vec::new();
        for (id, inst) in self.shape.instances.iter().filter(|(_, i)| i.scope == scope_id) {
            let reads = self.shape.reads(&label, id, [Some(&formula), None])?;
            let f = super::guard::NowFormula { formula: formula.clone(), reads };
            match self.evaluate_now(&f) {
                Ok(Value::Boolean(true)) => keys.push(inst.key.clone()),
                Ok(_) => {}
                Err(e) => {
                    return Err(SolveError::new(
                        codes::FORMULA,
                        format!(
                            "{label}: no value for instance `{}`: {} [{}]{}",
                            inst.key,
                            e.message,
                            e.code,
                            self.read_values(&f)
                        ),
                    ));
                }
            }
        }
        keys.sort();
        Ok(keys)
    }

    /// Whether an instance with this key is on the sheet.
    pub fn has_instance(&self, key: &str) -> bool {
        self.shape.lookup_instance(Some(key)).is_ok()
    }

    /// The value now of `formula` — compiled for the scope of instance `on` (`None`: the global
    /// instance) — read in that instance's scope: what a layer above evaluates outside a batch
    /// (an event rule's guard). `label` names it in errors. An unknown instance, a formula of
    /// another scope's names that this one cannot resolve, or a formula with no value (the error
    /// names what it read) is an error.
    pub fn evaluate(
        &self,
        label: &str,
        formula: &Arc<formula::Formula>,
        on: Option<&str>,
    ) -> Result<Value, SolveError> {
        let id = self.shape.lookup_instance_hinted(on, &mut None)?;
        let reads = self.shape.reads(label, id, [Some(formula), None])?;
        let f = super::guard::NowFormula { formula: formula.clone(), reads };
        self.evaluate_now(&f).map_err(|e| {
            SolveError::new(
                codes::FORMULA,
                format!(
                    "{label}: `{}` has no value: {} [{}]{}",
                    f.formula.text(),
                    e.message,
                    e.code,
                    self.read_values(&f)
                ),
            )
        })
    }

    /// How a variable got its value, computed by the same code that solves it.
    pub fn trace(&self, reference: &str) -> Result<Trace, SolveError> {
        Ok(self.trace_node(self.find_node(reference)?))
    }

    fn trace_node(&self, node: NodeIndex) -> Trace {
        let mut steps = Vec::new();
        let value = self.compute(node, Some(&mut steps));
        let def = self.shape.rules.var(self.shape.graph[node].def);
        Trace {
            var: self.shape.var_ref(node),
            format: def.format.clone(),
            order: def.order,
            default: self.shape.defaults[self.shape.graph[node].def.0 as usize].clone(),
            steps,
            value,
        }
    }
}
