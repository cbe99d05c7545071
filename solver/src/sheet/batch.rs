//! Atomic batches: several operations, one recomputation, all or nothing.
//!
//! Every mutation of a sheet goes through here, a single operation being a batch of one. Each
//! operation validates and applies its structural change at once (so later operations see
//! earlier ones: a modifier on an instance added just before, a cycle closed by two new
//! modifiers together) and logs how to undo it. Values are not touched until the whole batch
//! has succeeded; then one recomputation evaluates each affected variable once, and the report
//! gives old → new across the whole batch. When an operation fails, the log is replayed
//! backwards and the sheet is exactly as before the batch.
//!
//! Removing an instance detaches it and its modifiers at once, but its variables stay in the
//! graph, isolated, until the batch commits: that keeps the removal undoable without
//! renumbering anything.

use super::bulk::{BULK_MIN, BULK_SHARE};
use super::{
    Adjust, Change, Delta, Guard, Instance, InstanceId, ModKey, Modifier, Report, ShapeArc, Sheet, TemplateId,
};
use crate::error::{SolveError, codes};
use crate::modifier::ModifierSpec;
use crate::rules::ScopeId;
use petgraph::stable_graph::NodeIndex;
use std::sync::Arc;

/// One change to a sheet, for [`Sheet::apply`].
#[derive(Clone, Debug)]
pub enum Operation {
    /// Adds instance `key` of `scope` under `parent` (`None`: the global instance).
    AddInstance {
        key: String,
        scope: String,
        parent: Option<String>,
    },
    /// Removes an instance, its descendants, their variables, and every modifier on or from
    /// any of them.
    RemoveInstance(String),
    AddModifier(ModifierSpec),
    RemoveModifier(String),
    /// Removes every modifier with this source.
    RemoveSource(String),
    /// Fails the batch, with nothing changed, unless the guard's formula is true at this point
    /// of the batch (see `guard.rs`).
    Require(Guard),
    /// Adjusts a stock by a formula evaluated at this point of the batch, within its bounds
    /// (see `adjust.rs`).
    Adjust(Adjust),
}

/// One step of a batch for [`Sheet::apply_steps`]: an [`Operation`], or a modifier made from a
/// template of the sheet's [`Catalog`](super::Catalog) — what a layer that compiled its
/// modifiers once (a ruleset's objects) links them with — or an instance of a scope resolved.
///
/// A step is small (40 bytes): a batch is a list of them, built for every change. An
/// [`Operation`] is boxed (a modifier given whole is about 200 bytes, which every push and
/// every growth of the list copied).
#[derive(Clone, Debug)]
pub enum Step {
    Op(Box<Operation>),
    /// Adds modifier `id` from `template`, on and from instance `on` (`None`: the global
    /// instance). Rejected when the catalog has no such template, the id is taken, the
    /// template's variable or a variable its formulas read is not visible from `on`, or it
    /// would close a cycle.
    Template {
        id: Arc<str>,
        template: TemplateId,
        on: Option<Arc<str>>,
    },
    /// [`Operation::AddInstance`] with its scope resolved and its key shared: adds instance
    /// `key` of `scope` under `parent` (`None`: the global instance).
    Instance {
        key: Arc<str>,
        scope: ScopeId,
        parent: Option<Arc<str>>,
    },
    /// [`Operation::RemoveModifier`] with its id shared (no copy of it, nothing boxed: an
    /// object taken off or a tick may remove hundreds).
    Remove(Arc<str>),
}

const _: () = assert!(std::mem::size_of::<Step>() <= 40);

/// A batch's step as the batch reads it, whichever way it was given.
enum OpRef<'a> {
    Op(&'a Operation),
    Template(&'a Arc<str>, TemplateId, Option<&'a str>),
    Instance(&'a Arc<str>, ScopeId, Option<&'a str>),
    Remove(&'a str),
}

/// What a batch is made of: [`Operation`]s ([`Sheet::apply`]) or [`Step`]s
/// ([`Sheet::apply_steps`]).
trait BatchOp {
    fn get(&self) -> OpRef<'_>;
}

impl BatchOp for Operation {
    #[inline]
    fn get(&self) -> OpRef<'_> {
        OpRef::Op(self)
    }
}

impl BatchOp for Step {
    #[inline]
    fn get(&self) -> OpRef<'_> {
        match self {
            Step::Op(op) => OpRef::Op(op),
            Step::Template { id, template, on } => OpRef::Template(id, *template, on.as_deref()),
            Step::Instance { key, scope, parent } => OpRef::Instance(key, *scope, parent.as_deref()),
            Step::Remove(id) => OpRef::Remove(id),
        }
    }
}

/// Why a batch was rejected: the operation at `index` failed; the sheet is unchanged.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchError {
    pub index: usize,
    pub error: SolveError,
}

/// What a batch in progress has done so far. Its buffers are kept between batches (empty), so
/// a small operation allocates nothing for its bookkeeping.
#[derive(Default, Clone)]
pub(super) struct Pending {
    /// Variables whose modifiers changed.
    pub(super) dirty: Vec<NodeIndex>,
    /// Variables of added instances.
    pub(super) created: Vec<NodeIndex>,
    /// What the batch's interim recomputations, at its guards, changed and evaluated (see
    /// `guard.rs`).
    pub(super) interim: Report,
    /// Variables of removed instances, with their names and values before the batch.
    pub(super) removed: Vec<(NodeIndex, Change)>,
    undo: Vec<Undo>,
    /// Modifiers and instances the batch adds, to reserve room for at its first change (then
    /// zero).
    grow: (usize, usize),
    /// The instance the last modifier named, tried first for the next
    /// ([`super::Shape::lookup_instance_hinted`]; only ever a hint, checked against the key).
    instance_hint: Option<InstanceId>,
    /// Whether the batch links its modifiers in bulk (see `bulk.rs`), and what it collected
    /// for its end (`Shape::insert_modifier_bulk`).
    bulk: bool,
    links: super::bulk::Links,
    /// The modifiers a run of removals took out of the table, before the rest of their
    /// unlinking (see `Sheet::op_remove_run`); empty between operations.
    taken: Vec<(ModKey, Modifier)>,
    /// The records of the modifiers the batch removed or replaced, in that order, for its
    /// undo log (`Undo::RemovedModifier`, `Undo::ReplacedModifier`), which stays small.
    records: Vec<Modifier>,
}

/// A sheet's spare [`Pending`], boxed: a batch takes it and gives it back by moving a pointer,
/// not the struct (one operation at a time, those moves were about 5% of the work). A copy of a
/// sheet starts without one.
#[derive(Default)]
pub(super) struct Spare(Option<Box<Pending>>);

impl Clone for Spare {
    fn clone(&self) -> Spare {
        Spare(None)
    }
}

impl Spare {
    /// The spare buffers (new ones when there are none), until `keep_spare` gives them back.
    fn take(&mut self) -> Box<Pending> {
        self.0.take().unwrap_or_default()
    }
}

/// What deferred batches touched, for the next [`Sheet::settle`] (or what one batch touched,
/// for its own recomputation).
#[derive(Default, Clone)]
pub(super) struct Deferred {
    dirty: Vec<NodeIndex>,
    created: Vec<NodeIndex>,
    /// Variables removed, named, with their values before.
    removed: Vec<Change>,
}

#[derive(Clone)]
enum Undo {
    /// An instance created, and whether it reused a free slot (else it was pushed at the end).
    AddedInstance(InstanceId, bool),
    /// Modifiers added under keys `first`, `first + 1`, … (`count` of them), one after the
    /// other with nothing else between: one entry for a run of additions (see `added`).
    AddedModifiers { first: u32, count: u32 },
    /// A modifier removed: its record is the last of `Pending::records` when this is undone.
    RemovedModifier(ModKey),
    /// A modifier replaced in place (a stock's input adjusted): the one it replaced is the last
    /// of `Pending::records` when this is undone.
    ReplacedModifier(ModKey),
    /// The instances removed (root first).
    RemovedInstances(Vec<(InstanceId, Instance)>),
}

impl Sheet {
    /// Applies `ops` in order as one atomic change: either all succeed and one recomputation
    /// follows (each affected variable evaluated once; the report gives old → new across the
    /// batch), or the first failure is returned with its index and the sheet is unchanged.
    pub fn apply(&mut self, ops: &[Operation]) -> Result<Report, BatchError> {
        self.apply_ops(ops, true)
    }

    /// [`Sheet::apply`] for a batch that may link templates of the sheet's catalog.
    pub fn apply_steps(&mut self, steps: &[Step]) -> Result<Report, BatchError> {
        self.apply_ops(steps, true)
    }

    /// [`Sheet::apply`]; `bulk`: whether a large batch of additions may link in bulk (see
    /// `bulk.rs`; a bulk batch that fails runs again with `bulk` false, to name the operation).
    fn apply_ops<T: BatchOp>(&mut self, ops: &[T], bulk: bool) -> Result<Report, BatchError> {
        let mut pending = self.spare.take();
        pending.dirty.reserve(ops.len());
        pending.undo.reserve(ops.len());
        // A batch of adds (a sheet being built, an object with its parts and modifiers) grows
        // the tables once, not by doubling: growing a hash table moves every entry.
        let (adds, instances, others) = count_kinds(ops);
        // Reserved by the first operation that gets as far as changing the shape: a batch
        // rejected before that leaves a copied sheet sharing its shape.
        pending.grow = (adds, instances);
        pending.bulk = bulk
            && others == 0
            && adds >= BULK_MIN
            && adds.saturating_mul(BULK_SHARE) >= self.shape.mods.len();
        if pending.bulk {
            super::bulk::count_bulk_batch();
            pending.links.reserve(adds);
        }
        let mut index = 0;
        while let Some(op) = ops.get(index) {
            // The index of the operation after this one (after a run, for a run of removals).
            let mut next = index + 1;
            let result = match op.get() {
                OpRef::Op(Operation::AddInstance { key, scope, parent }) => {
                    self.op_add_named_instance(key, scope, parent.as_deref(), &mut pending)
                }
                OpRef::Instance(key, scope, parent) => self
                    .check_new_instance(key)
                    .and_then(|()| self.op_add_instance(key, scope, parent, &mut pending)),
                OpRef::Op(Operation::RemoveInstance(key)) => self.op_remove_instance(key, &mut pending),
                OpRef::Op(Operation::AddModifier(spec)) => self.op_add_modifier(spec, &mut pending),
                OpRef::Op(Operation::RemoveModifier(_)) | OpRef::Remove(_) => {
                    let (done, result) = self.op_remove_run(&ops[index..], &mut pending);
                    next = index + done;
                    result
                }
                OpRef::Op(Operation::RemoveSource(source)) => self.op_remove_source(source, &mut pending),
                OpRef::Template(..) if pending.bulk => {
                    let (done, result) = self.op_template_run(&ops[index..], &mut pending);
                    next = index + done;
                    result
                }
                OpRef::Template(id, t, on) => self.op_add_template(id, t, on, &mut pending),
                OpRef::Op(Operation::Require(guard)) => self.op_require(guard, &mut pending),
                OpRef::Op(Operation::Adjust(a)) => self.op_adjust(a, &mut pending),
            };
            if let Err(error) = result {
                let bulk = pending.bulk;
                self.rollback(&mut pending);
                self.keep_spare(pending);
                if bulk {
                    // Bulk linking checks no cycles: an earlier operation may be the first to
                    // fail.
                    return self.apply_ops(ops, false);
                }
                return Err(BatchError { index: next - 1, error });
            }
            index = next;
        }
        if pending.bulk && !self.finish_bulk(&mut pending) {
            // A taken id or a cycle: one operation at a time names the operation.
            self.rollback(&mut pending);
            self.keep_spare(pending);
            return self.apply_ops(ops, false);
        }
        // Reads through holders follow what the holders name now (see `pointers.rs`).
        if self.shape.rules.has_pointers() {
            pending.bulk = false;
            if let Err(error) = self.link_pointers(&mut pending) {
                self.rollback(&mut pending);
                self.keep_spare(pending);
                return Err(BatchError { index: ops.len().saturating_sub(1), error });
            }
        }
        let report = self.commit(&mut pending);
        self.keep_spare(pending);
        Ok(report)
    }

    /// Ends the linking of a bulk batch (see `bulk.rs`): every modifier's id entered and the
    /// modifier in its variable's list, every list in order, the edges into the graph, every
    /// level given again. `false` at a taken id, or when the graph now has a cycle (levels then
    /// unchanged; the edges stay, for the rollback to remove).
    fn finish_bulk(&mut self, pending: &mut Pending) -> bool {
        if pending.undo.is_empty() {
            // Nothing linked (and a shared shape stays shared).
            return true;
        }
        let shape = self.shape_mut();
        if !shape.link_collected(&mut pending.links, &mut pending.dirty) {
            return false;
        }
        if pending.links.edges.is_empty() {
            return true;
        }
        shape.add_collected_edges(&mut pending.links.edges);
        shape.relevel()
    }

    /// Keeps a batch's emptied buffers for the next batch — unless a large batch grew them:
    /// a sheet does not hold a build's worth of bookkeeping for the rest of its life.
    fn keep_spare(&mut self, mut pending: Box<Pending>) {
        pending.grow = (0, 0);
        pending.bulk = false;
        if pending.links.is_large() {
            pending.links = super::bulk::Links::default();
        }
        const KEEP: usize = 256;
        if pending.undo.capacity() <= KEEP
            && pending.dirty.capacity() <= KEEP
            && pending.records.capacity() <= KEEP
            && pending.taken.capacity() <= KEEP
        {
            self.spare.0 = Some(pending);
        }
    }

    /// Gives the shape's tables room for what the batch adds, once (see `Pending::grow`).
    fn grow(&mut self, pending: &mut Pending) {
        let (adds, instances) = std::mem::take(&mut pending.grow);
        if adds + instances > 0 {
            let shape = self.shape_mut();
            shape.mods.reserve(adds);
            if pending.bulk {
                shape.plan.reserve_ready(adds);
            }
            // (Not `sources`: a batch's modifiers mostly share a few sources — an object's, a
            // file's — and room for one each would hold megabytes for a large batch.)
            shape.instances.reserve(instances);
        }
    }

    /// Runs one operation as a batch of one.
    pub(super) fn single(
        &mut self,
        op: impl FnOnce(&mut Sheet, &mut Pending) -> Result<(), SolveError>,
    ) -> Result<Report, SolveError> {
        let mut pending = self.spare.take();
        let result = match op(self, &mut pending).and_then(|()| {
            if self.shape.rules.has_pointers() { self.link_pointers(&mut pending) } else { Ok(()) }
        }) {
            Ok(()) => Ok(self.commit(&mut pending)),
            Err(e) => {
                self.rollback(&mut pending);
                Err(e)
            }
        };
        self.keep_spare(pending);
        result
    }

    /// [`Sheet::op_add_instance`] of a scope given by name.
    pub(super) fn op_add_named_instance(
        &mut self,
        key: &str,
        scope: &str,
        parent: Option<&str>,
        pending: &mut Pending,
    ) -> Result<(), SolveError> {
        self.check_new_instance(key)?;
        let scope = self.shape.rules.scope(scope)?;
        self.op_add_instance(&Arc::from(key), scope, parent, pending)
    }

    fn check_new_instance(&self, key: &str) -> Result<(), SolveError> {
        if self.shape.instances.id_of(key).is_some() {
            return Err(SolveError::new(
                codes::DUPLICATE_INSTANCE,
                format!("instance `{key}` already exists"),
            ));
        }
        Ok(())
    }

    /// Adds instance `key` of `scope_id` under `parent` (`None`: the global instance); the
    /// caller has checked that the key is free (`check_new_instance`).
    fn op_add_instance(
        &mut self,
        key: &Arc<str>,
        scope_id: ScopeId,
        parent: Option<&str>,
        pending: &mut Pending,
    ) -> Result<(), SolveError> {
        if self.shape.rules.scopes().get(scope_id.0 as usize).is_none() {
            return Err(SolveError::new(
                codes::UNKNOWN_SCOPE,
                format!("instance `{key}`: no scope {}", scope_id.0),
            ));
        }
        let parent_id = self.shape.lookup_instance(parent)?;
        let parent_scope = self.shape.instance(parent_id).scope;
        if self.shape.rules.scope_def(scope_id).parent != Some(parent_scope) {
            let expected = match self.shape.rules.scope_def(scope_id).parent {
                Some(p) => format!("an instance of {}", self.shape.rules.scope_def(p).name),
                None => "nothing (it is the global scope)".to_owned(),
            };
            return Err(SolveError::new(
                codes::WRONG_PARENT,
                format!(
                    "instance `{key}` of scope {} needs a parent that is {expected}, but {} is of scope {}",
                    self.shape.rules.scope_def(scope_id).name,
                    parent.map_or("the global instance".to_owned(), |p| format!("`{p}`")),
                    self.shape.rules.scope_def(parent_scope).name
                ),
            ));
        }
        self.grow(pending);
        let (_, reused) = self.shape.instances.next_id();
        let id = self.create_instance(key.clone(), scope_id, Some(parent_id));
        pending.created.extend(self.shape.instance(id).nodes.iter().copied());
        pending.undo.push(Undo::AddedInstance(id, reused));
        // It takes part in the aggregates over its scope: one modifier each (removing the
        // instance removes them, with the modifiers from it).
        let rules = Arc::clone(&self.shape.rules);
        for agg in rules.aggregates_of(scope_id) {
            if let Some(part) = self.shape.part_of(agg, id, key, pending.bulk) {
                self.op_link(part?, pending)?;
            }
            let m = self.shape.member_modifier(agg, id, key, pending.bulk)?;
            self.op_link(m, pending)?;
        }
        // And the references to it by key (`@key.Var`) read it now.
        for r in rules.references_to(key) {
            if let Some(m) = self.shape.reference_modifier(r, id, pending.bulk) {
                self.op_link(m?, pending)?;
            }
        }
        Ok(())
    }

    pub(super) fn op_remove_instance(&mut self, key: &str, pending: &mut Pending) -> Result<(), SolveError> {
        let root = self.shape.lookup_instance(Some(key))?;
        let mut doomed = vec![root];
        let mut i = 0;
        while i < doomed.len() {
            doomed.extend(self.shape.instances.children(doomed[i]));
            i += 1;
        }
        for &d in &doomed {
            for &n in self.shape.instance(d).nodes.iter() {
                let change = Change {
                    var: self.shape.var_ref(n),
                    format: self.shape.rules.var(self.shape.graph[n].def).format.clone(),
                    old: Some(self.value_of(n)),
                    new: None,
                };
                pending.removed.push((n, change));
            }
        }
        // Modifiers on or from the doomed instances. (A modifier targeting a doomed variable is
        // on a doomed instance: names resolve upwards, so its `on` is that variable's instance
        // or a descendant of it. Likewise a modifier reading a doomed variable is from one.)
        let mut keys: Vec<ModKey> =
            doomed.iter().flat_map(|d| self.shape.by_instance[d.0 as usize].iter().copied()).collect();
        keys.sort_unstable();
        keys.dedup();
        for k in keys {
            self.op_unlink(k, pending);
        }
        let shape = self.shape_mut();
        let mut taken = Vec::with_capacity(doomed.len());
        for d in doomed {
            if let Some(inst) = shape.instances.remove(d) {
                taken.push((d, inst));
            }
        }
        pending.undo.push(Undo::RemovedInstances(taken));
        Ok(())
    }

    pub(super) fn op_add_modifier(
        &mut self,
        spec: &ModifierSpec,
        pending: &mut Pending,
    ) -> Result<(), SolveError> {
        // In bulk, a taken id is found by the insertion and cycles at the end of the batch
        // (see `bulk.rs`).
        let mut m = None;
        self.shape.prepare(spec, &mut pending.instance_hint, pending.bulk, &mut m)?;
        self.op_link_from(&mut m, pending)
    }

    /// Adds modifier `id` from template `t` of the sheet's catalog, on instance `on`.
    pub(super) fn op_add_template(
        &mut self,
        id: &Arc<str>,
        t: TemplateId,
        on: Option<&str>,
        pending: &mut Pending,
    ) -> Result<(), SolveError> {
        let mut m = None;
        self.shape.prepare_template(id, t, on, &mut pending.instance_hint, pending.bulk, &mut m)?;
        self.op_link_from(&mut m, pending)
    }

    /// Links a prepared modifier (in bulk or not: see `bulk.rs`) and logs its undoing.
    pub(super) fn op_link(&mut self, m: Modifier, pending: &mut Pending) -> Result<(), SolveError> {
        self.op_link_from(&mut Some(m), pending)
    }

    /// [`Sheet::op_link`] of the record prepared into `m` (left empty), moved once, into the
    /// table.
    #[inline(always)]
    fn op_link_from(&mut self, m: &mut Option<Modifier>, pending: &mut Pending) -> Result<(), SolveError> {
        // (Every caller has just filled `m`: `prepare`, `prepare_template` or `op_link`.)
        let Some(target) = m.as_ref().map(|m| m.target) else {
            return Ok(());
        };
        self.grow(pending);
        let key = if pending.bulk {
            let Sheet { shape, .. } = self;
            ShapeArc::make_mut(shape).insert_modifier_bulk(m, &mut pending.links)
        } else {
            // While deferring, plan entries are written when the sheet settles.
            let plan_now = self.deferred.is_none();
            let key = self.shape_mut().insert_modifier(m, plan_now);
            pending.dirty.push(target);
            key
        };
        added(&mut pending.undo, key);
        Ok(())
    }

    /// A run of template links at the start of `ops` in a bulk batch (see `bulk.rs`), in one
    /// loop: the shape made this sheet's own and the catalog found once for the run, not once
    /// a link. The first is linked as any operation (a batch rejected at its first change
    /// leaves a shared shape shared). Returns how many it took, the one that failed included.
    fn op_template_run<T: BatchOp>(
        &mut self,
        ops: &[T],
        pending: &mut Pending,
    ) -> (usize, Result<(), SolveError>) {
        let Some(OpRef::Template(id, t, on)) = ops.first().map(BatchOp::get) else {
            return (1, Ok(()));
        };
        if let Err(e) = self.op_add_template(id, t, on, pending) {
            return (1, Err(e));
        }
        let shape = ShapeArc::make_mut(&mut self.shape);
        let mut done = 1;
        // Each record is prepared here, then moved once, into the table.
        let mut m = None;
        for op in &ops[1..] {
            let OpRef::Template(id, t, on) = op.get() else { break };
            done += 1;
            if let Err(e) = shape.prepare_template(id, t, on, &mut pending.instance_hint, true, &mut m) {
                return (done, Err(e));
            }
            let key = shape.insert_modifier_bulk(&mut m, &mut pending.links);
            added(&mut pending.undo, key);
        }
        (done, Ok(()))
    }

    pub(super) fn op_remove_modifier(&mut self, id: &str, pending: &mut Pending) -> Result<(), SolveError> {
        let shape = self.shape_to_remove(id)?;
        let (key, m) = shape.mods.unlink_id(id).ok_or_else(|| unknown_modifier(id))?;
        if m.kept {
            shape.mods.relink(key, m);
            return Err(member_removed(id));
        }
        record_removal(shape, key, m, pending);
        Ok(())
    }

    /// The shape, made this sheet's own, to remove modifier `id` from — or the error for an
    /// unknown id, without copying a shape shared with copies for nothing.
    fn shape_to_remove(&mut self, id: &str) -> Result<&mut super::Shape, SolveError> {
        if ShapeArc::count(&self.shape) > 1 && !self.shape.mods.has_id(id) {
            return Err(unknown_modifier(id));
        }
        Ok(self.shape_mut())
    }

    /// The removals by id at the start of `ops` (at least its first operation, which is one),
    /// the shape made this sheet's own once for them all (each `Arc::make_mut` is an atomic
    /// write: a tick expiring a hundred effects felt one per removal). Returns how many it
    /// took, the one that failed included.
    fn op_remove_run<T: BatchOp>(
        &mut self,
        ops: &[T],
        pending: &mut Pending,
    ) -> (usize, Result<(), SolveError>) {
        fn id_of<T: BatchOp>(op: &T) -> Option<&str> {
            match op.get() {
                OpRef::Op(Operation::RemoveModifier(id)) => Some(id.as_str()),
                OpRef::Remove(id) => Some(id),
                _ => None,
            }
        }
        let Some(first) = ops.first().and_then(id_of) else {
            return (1, Ok(()));
        };
        let shape = match self.shape_to_remove(first) {
            Ok(shape) => shape,
            Err(e) => return (1, Err(e)),
        };
        // Two passes: the first only takes each modifier out of the index by id and the table,
        // a short loop whose lookups, independent of each other, the processor overlaps (one
        // removal at a time waited on each in turn: its hash slot, its record, its variable);
        // the second unlinks the rest, the records then at hand.
        let mut taken = std::mem::take(&mut pending.taken);
        let mut failed = None;
        for (i, id) in ops.iter().map_while(id_of).enumerate() {
            match shape.mods.unlink_id(id) {
                Some(t) => taken.push(t),
                None => {
                    failed = Some((i + 1, unknown_modifier(id)));
                    break;
                }
            }
        }
        // Only the aggregates' own modifiers are on their (locked) variables (`Modifier::kept`):
        // checked for the whole run first, the first found ending it.
        let locked = taken.iter().position(|(_, m)| m.kept);
        if let Some(j) = locked {
            // Those taken from it on go back, newest first: keys return to the free list in the
            // order they left it.
            let error = member_removed(&taken[j].1.id);
            for (k, m) in taken.drain(j..).rev() {
                shape.mods.relink(k, m);
            }
            failed = Some((j + 1, error));
        }
        let done = taken.len();
        for (key, m) in taken.drain(..) {
            record_removal(shape, key, m, pending);
        }
        pending.taken = taken;
        match failed {
            Some((at, error)) => (at, Err(error)),
            None => (done, Ok(())),
        }
    }

    pub(super) fn op_remove_source(&mut self, source: &str, pending: &mut Pending) -> Result<(), SolveError> {
        // The modifiers instances give an aggregate, a reference or a read through a holder
        // (parts included) take its variable's name as their source: such a source is one of
        // those variables.
        if self.shape.rules.is_kept(source) {
            return Err(member_removed(source));
        }
        if !self.shape.has_source(source) {
            return Err(SolveError::new(
                codes::UNKNOWN_MODIFIER,
                format!("no modifier has source `{source}`"),
            ));
        }
        // The index pays for itself from the second removal by source on.
        let keys = self.shape_mut().source_keys(source);
        for k in keys {
            self.op_unlink(k, pending);
        }
        Ok(())
    }

    /// Puts modifier `m` in place of the one under `key` (see [`Shape::replace_modifier`]); it
    /// takes the next sequence number.
    pub(super) fn op_replace(&mut self, key: ModKey, m: Modifier, pending: &mut Pending) {
        let target = m.target;
        let shape = self.shape_mut();
        shape.next_seq += 1;
        let old = shape.replace_modifier(key, m);
        pending.dirty.push(target);
        pending.records.push(old);
        pending.undo.push(Undo::ReplacedModifier(key));
    }

    pub(super) fn op_unlink(&mut self, key: ModKey, pending: &mut Pending) {
        let m = self.shape_mut().unlink_modifier(key);
        pending.dirty.push(m.target);
        pending.records.push(m);
        pending.undo.push(Undo::RemovedModifier(key));
    }

    /// Ends a successful batch: drops the removed variables and recomputes — or, while the
    /// sheet defers (see [`Sheet::defer`]), adds what the batch touched to what the next
    /// [`Sheet::settle`] recomputes, and reports nothing. Leaves `pending` empty.
    fn commit(&mut self, pending: &mut Pending) -> Report {
        pending.undo.clear();
        pending.records.clear();
        // Only a batch with a guard or an adjustment recomputed before its end (nearly none
        // do: nothing is moved or dropped for the others).
        let mut interim = (pending.interim.recomputed > 0).then(|| std::mem::take(&mut pending.interim));
        // Variables created and removed around a guard: dropped from the graph like the others,
        // reported by neither list.
        let mut unreported = Vec::new();
        if let Some(interim) = interim.as_mut().filter(|i| !i.changed.is_empty()) {
            unreported = self.removed_after_interim(&mut interim.changed, pending);
        }
        let mut removed = Vec::new();
        // (Most batches remove no variable: they skip this.)
        if !pending.removed.is_empty() {
            let Sheet { shape, vals, .. } = self;
            let shape = ShapeArc::make_mut(shape);
            for (n, _) in &pending.removed {
                shape.graph.remove_node(*n);
                shape.plan.node_removed(*n);
                vals.clear(n.index());
            }
            for (n, change) in pending.removed.drain(..) {
                // Created and removed before a recomputation: it never existed as far as
                // reports go.
                if unreported.contains(&n) {
                    continue;
                }
                if let Some(i) = pending.created.iter().position(|c| *c == n) {
                    pending.created.swap_remove(i);
                } else if let Some(d) = self.deferred.as_mut()
                    && let Some(i) = d.created.iter().position(|c| *c == n)
                {
                    d.created.swap_remove(i);
                } else {
                    removed.push(change);
                }
            }
            // By full name, each made once (the key of a plain sort is made at every
            // comparison).
            removed.sort_by_cached_key(|c| c.var.full_name());
        }
        if let Some(d) = self.deferred.as_mut() {
            d.dirty.append(&mut pending.dirty);
            d.created.append(&mut pending.created);
            d.removed.extend(removed);
            self.forget_ready();
            return Report::default();
        }
        let mut report = self.recompute(&pending.dirty, &pending.created);
        if !removed.is_empty() {
            report.removed = removed;
        }
        self.forget_ready();
        pending.dirty.clear();
        pending.created.clear();
        if let Some(mut interim) = interim {
            super::guard::merge(&mut interim.changed, std::mem::take(&mut report.changed));
            report.changed = interim.changed;
            report.recomputed += interim.recomputed;
            interim.evaluated.append(&mut report.evaluated);
            report.evaluated = interim.evaluated;
        }
        report
    }

    /// Drops the steps made for the modifiers the batch linked in bulk, once its recomputation
    /// has copied them into their entries — or has not, on a deferring sheet, which writes its
    /// entries later, after batches that may link other modifiers under the same keys (see
    /// `plan::Ready`).
    fn forget_ready(&mut self) {
        if self.shape.plan.holds_ready() {
            self.shape_mut().plan.forget_ready();
        }
    }

    /// The variables a batch removed after an interim recomputation (see `guard.rs`): one it
    /// created is reported by neither list (returned: it still leaves the graph); another is
    /// reported removed with its value before the batch. Either leaves `interim`.
    fn removed_after_interim(&self, interim: &mut Vec<Delta>, pending: &mut Pending) -> Vec<NodeIndex> {
        let mut unreported = Vec::new();
        for (n, change) in pending.removed.iter_mut() {
            let Some(at) = interim.iter().position(|d| d.var.0 == *n) else { continue };
            let d = interim.remove(at);
            match d.old_value() {
                None => unreported.push(*n),
                Some(old) => change.old = Some(old),
            }
        }
        unreported
    }

    /// Recomputes what deferred batches touched: their dirty and created variables (those
    /// still there), reporting the removed ones first.
    fn recompute_touched(&mut self, d: Deferred) -> Report {
        let Deferred { dirty, created, mut removed } = d;
        // By full name, each made once (the key of a plain sort is made at every comparison).
        removed.sort_by_cached_key(|c| c.var.full_name());
        let mut report = self.recompute(&dirty, &created);
        report.removed = removed;
        report
    }

    /// From now on, operations change the structure and are checked as always, but values are
    /// not recomputed until [`Sheet::settle`]: loading many operations one at a time then costs
    /// one recomputation, like one batch. Until then, reads see the values as of the last
    /// recomputation. Deferring twice is the same as once.
    ///
    /// A sheet whose rules read through holders (`creature.STR`: see [`crate::Pointer`]) does
    /// not defer: each batch links those reads to what the holders name, which needs the
    /// values.
    pub fn defer(&mut self) {
        if self.deferred.is_none() && !self.shape.rules.has_pointers() {
            self.deferred = Some(Deferred::default());
        }
    }

    /// Whether operations are being deferred (values may be out of date until
    /// [`Sheet::settle`]).
    pub fn is_deferring(&self) -> bool {
        self.deferred.is_some()
    }

    /// Stops deferring and recomputes, once, everything the deferred operations affected; the
    /// report covers them all (old values as of [`Sheet::defer`]). Without deferred operations,
    /// an empty report.
    pub fn settle(&mut self) -> Report {
        match self.deferred.take() {
            Some(d) => self.recompute_touched(d),
            None => Report::default(),
        }
    }

    /// Ends a failed batch: undoes everything it did, last first.
    fn rollback(&mut self, pending: &mut Pending) {
        self.restore_interim(pending);
        pending.dirty.clear();
        pending.created.clear();
        pending.removed.clear();
        if pending.undo.is_empty() {
            // Nothing was done (and a shared shape stays shared).
            pending.links.clear();
            return;
        }
        let Sheet { shape, vals, .. } = self;
        let shape = ShapeArc::make_mut(shape);
        // Modifiers linked in bulk expect their edges in the graph when unlinked (the order of
        // their lists does not matter: unlinking removes them all).
        shape.add_collected_edges(&mut pending.links.edges);
        pending.links.clear();
        for undo in pending.undo.drain(..).rev() {
            match undo {
                Undo::AddedModifiers { first, count } => {
                    for key in (first..first + count).rev() {
                        shape.unlink_modifier(ModKey(key));
                        // Give the sequence number back, so the next modifier gets the same one.
                        shape.next_seq -= 1;
                    }
                }
                // Its record is the last left (everything after it has been undone).
                Undo::ReplacedModifier(key) => {
                    if let Some(m) = pending.records.pop() {
                        shape.replace_modifier(key, m);
                    }
                    shape.next_seq -= 1;
                }
                Undo::RemovedModifier(key) => {
                    // The key went to the free list last (everything after it has been undone).
                    shape.mods.unfree(key);
                    if let Some(m) = pending.records.pop() {
                        shape.link_modifier(key, m, true);
                    }
                }
                Undo::AddedInstance(id, reused) => {
                    // Everything done after it has been undone: its slot is either the last
                    // one (new) or the free slot it reused, which goes back to the free list.
                    if let Some(inst) = shape.instances.unadd(id, reused) {
                        for n in inst.nodes.iter() {
                            shape.graph.remove_node(*n);
                            shape.plan.node_removed(*n);
                            vals.clear(n.index());
                        }
                    }
                    shape.by_instance[id.0 as usize].clear();
                    if !reused {
                        shape.by_instance.pop();
                    }
                }
                Undo::RemovedInstances(taken) => {
                    // Restored last removed first (each was freed after those before it).
                    for (id, inst) in taken.into_iter().rev() {
                        shape.instances.restore(id, inst);
                    }
                }
            }
        }
        // (Each record went back with its entry: none is left.)
        pending.records.clear();
    }
}

/// Logs the addition of the modifier under `key`: the last entry counts it when it is the run
/// of additions just before (keys handed out one after the other), else a new entry.
#[inline(always)]
fn added(undo: &mut Vec<Undo>, key: ModKey) {
    if let Some(Undo::AddedModifiers { first, count }) = undo.last_mut()
        && first.checked_add(*count) == Some(key.0)
    {
        *count += 1;
        return;
    }
    undo.push(Undo::AddedModifiers { first: key.0, count: 1 });
}

/// How many of `ops` add modifiers, add instances, and do anything else.
fn count_kinds<T: BatchOp>(ops: &[T]) -> (usize, usize, usize) {
    let (mut adds, mut instances, mut others) = (0, 0, 0);
    for op in ops {
        match op.get() {
            OpRef::Op(Operation::AddModifier(_)) | OpRef::Template(..) => adds += 1,
            OpRef::Op(Operation::AddInstance { .. }) | OpRef::Instance(..) => instances += 1,
            OpRef::Op(_) | OpRef::Remove(_) => others += 1,
        }
    }
    (adds, instances, others)
}

fn unknown_modifier(id: &str) -> SolveError {
    SolveError::new(codes::UNKNOWN_MODIFIER, format!("there is no modifier `{id}`"))
}

/// Finishes removing modifier `m`, taken out of `shape`'s table under `key`
/// ([`super::mods::ModTable::unlink_id`]: found and taken out of the index in one probe): the
/// rest of its unlinking, its variable marked dirty, the undo record.
fn record_removal(shape: &mut super::Shape, key: ModKey, m: Modifier, pending: &mut Pending) {
    shape.unlinked(key, &m);
    pending.dirty.push(m.target);
    pending.records.push(m);
    pending.undo.push(Undo::RemovedModifier(key));
}

/// A removal of the modifiers instances give an aggregate or a reference, which come and go
/// with the instances.
fn member_removed(what: &str) -> SolveError {
    SolveError::new(
        codes::LOCKED,
        format!(
            "`{what}` belongs to an aggregate or a reference: it goes when its instance does (remove the instance)"
        ),
    )
}
