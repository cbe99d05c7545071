//! A shape's instances by id and by key: a shared base, and what this shape changed since.
//!
//! Every character starts as a copy of its ruleset's starting sheet, whose instances (the
//! global one, each stat, each save) it then adds to. Copying them as one table took a
//! reference count on every instance's key and variable list, twice (the table and its index
//! by key), on a copy's first structural change, and gave them back when the copy was
//! dropped: atomic writes to the starting sheet's cache lines that every thread building
//! characters made. Here the instances a copy was made from stay in a *base* shared by `Arc`
//! (one count); a copy's own changes are an overlay beside it, as the modifiers' are
//! (`mods.rs`):
//! - instances added since, under ids after the base's, with their own index by key;
//! - base instances removed since, one bit each;
//! - ids of removed instances, for reuse (last freed first), as a sheet built alone reuses
//!   them: an instance added in a base id's slot lies in the overlay too (`over`).
//!
//! An instance's children are not kept: they are the instances whose parent it is, found by
//! a pass (only removing an instance asks), so adding an instance changes no other instance
//! and a base instance is never copied to change it.
//!
//! The invariants:
//! - an id is live in exactly one place: the base (its bit clear) or the overlay (`own`, or
//!   `over` for a base id whose bit is set);
//! - a key is live at most once: in the overlay's index, or in the base's with its id's bit
//!   clear;
//! - the base never changes while shared (it is only ever replaced, by `freeze`).

use super::{Instance, InstanceId};
use crate::Map;
use std::sync::Arc;

/// The part of a table shared by copies. Aligned to 128 bytes: every copy reads it while
/// copies made and dropped on other threads change the `Arc`'s counts.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Base {
    list: Vec<Option<Instance>>,
    keys: Map<Arc<str>, InstanceId>,
}

/// A shape's instances (see the module docs). Copied by [`Instances::copy_with_room`].
#[derive(Debug, Default)]
pub(super) struct Instances {
    base: Arc<Base>,
    /// `base.list.len()`.
    base_len: usize,
    /// Ids `base_len..`: instances added since the base was made (`None`: removed).
    own: Vec<Option<Instance>>,
    /// The index by key of the live instances in `own`.
    own_keys: Map<Arc<str>, InstanceId>,
    /// Base ids whose base instance was removed since, a bit each (empty until the first).
    gone: Vec<u64>,
    /// Instances added since in base ids' slots (their bits set), by id.
    over: Map<u32, Instance>,
    /// Ids free for reuse, the last freed last.
    free: Vec<InstanceId>,
}

impl Instances {
    fn is_gone(&self, i: usize) -> bool {
        self.gone.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn set_gone(&mut self, i: usize, gone: bool) {
        if self.gone.len() <= i / 64 {
            self.gone.resize(i / 64 + 1, 0);
        }
        let bit = 1 << (i % 64);
        if gone {
            self.gone[i / 64] |= bit;
        } else {
            self.gone[i / 64] &= !bit;
        }
    }

    /// Instance `id`, if it is live.
    #[inline(always)]
    pub(super) fn get(&self, id: InstanceId) -> Option<&Instance> {
        let i = id.0 as usize;
        if i >= self.base_len {
            return self.own.get(i - self.base_len)?.as_ref();
        }
        // (No base instance removed: no bit to read, the common case.)
        if !self.gone.is_empty() && self.is_gone(i) {
            return self.over.get(&id.0);
        }
        self.base.list.get(i)?.as_ref()
    }

    /// The id of the live instance with key `key`.
    pub(super) fn id_of(&self, key: &str) -> Option<InstanceId> {
        if let Some(&id) = self.own_keys.get(key) {
            return Some(id);
        }
        self.base.keys.get(key).copied().filter(|id| !self.is_gone(id.0 as usize))
    }

    /// How many ids there are, live or free: one more than the highest.
    pub(super) fn slots(&self) -> usize {
        self.base_len + self.own.len()
    }

    /// The id the next [`Instances::add`] gives, and whether it reuses a freed one.
    pub(super) fn next_id(&self) -> (InstanceId, bool) {
        match self.free.last() {
            Some(&id) => (id, true),
            None => (InstanceId(self.slots() as u32), false),
        }
    }

    /// Adds `inst` under [`Instances::next_id`] (a key already live is the caller's to refuse;
    /// the global instance, added first, is not indexed by key).
    pub(super) fn add(&mut self, inst: Instance) -> InstanceId {
        let (id, reused) = self.next_id();
        if inst.parent.is_some() {
            self.own_keys.insert(inst.key.clone(), id);
        }
        if reused {
            self.free.pop();
            match (id.0 as usize).checked_sub(self.base_len) {
                Some(o) => self.own[o] = Some(inst),
                None => {
                    self.over.insert(id.0, inst);
                }
            }
        } else {
            self.own.push(Some(inst));
        }
        id
    }

    /// Undoes the [`Instances::add`] of `id` (everything after it undone already): returns it.
    pub(super) fn unadd(&mut self, id: InstanceId, reused: bool) -> Option<Instance> {
        let inst = if reused {
            self.free.push(id);
            match (id.0 as usize).checked_sub(self.base_len) {
                Some(o) => self.own.get_mut(o)?.take(),
                None => self.over.remove(&id.0),
            }
        } else {
            self.own.pop().flatten()
        };
        if let Some(inst) = &inst {
            self.own_keys.remove(&inst.key);
        }
        inst
    }

    /// Removes instance `id` and returns it (a base instance is marked removed, and a copy of
    /// it returned, for [`Instances::restore`]).
    pub(super) fn remove(&mut self, id: InstanceId) -> Option<Instance> {
        let i = id.0 as usize;
        match i.checked_sub(self.base_len) {
            Some(o) => {
                let inst = self.own.get_mut(o)?.take()?;
                self.own_keys.remove(&inst.key);
                self.free.push(id);
                Some(inst)
            }
            None if self.is_gone(i) => {
                let inst = self.over.remove(&id.0)?;
                self.own_keys.remove(&inst.key);
                self.free.push(id);
                Some(inst)
            }
            None => {
                let inst = self.base.list.get(i)?.clone()?;
                self.set_gone(i, true);
                self.free.push(id);
                Some(inst)
            }
        }
    }

    /// Undoes the [`Instances::remove`] of `id`, which returned `inst` (everything after it
    /// undone already).
    pub(super) fn restore(&mut self, id: InstanceId, inst: Instance) {
        // Freed last: take it back.
        if let Some(f) = self.free.iter().rposition(|f| *f == id) {
            self.free.remove(f);
        }
        let i = id.0 as usize;
        match i.checked_sub(self.base_len) {
            Some(o) => {
                self.own_keys.insert(inst.key.clone(), id);
                if let Some(slot) = self.own.get_mut(o) {
                    *slot = Some(inst);
                }
            }
            // The base's own instance (its variable list is the base's): live again.
            None if self
                .base
                .list
                .get(i)
                .and_then(Option::as_ref)
                .is_some_and(|b| Arc::ptr_eq(&b.nodes, &inst.nodes)) =>
            {
                self.set_gone(i, false)
            }
            None => {
                self.own_keys.insert(inst.key.clone(), id);
                self.over.insert(id.0, inst);
            }
        }
    }

    /// Every live instance with its id, in id order (the order they were added, reused ids
    /// aside).
    pub(super) fn iter(&self) -> impl Iterator<Item = (InstanceId, &Instance)> {
        let base = self.base.list.iter().enumerate().map(|(i, inst)| match self.is_gone(i) {
            false => (i, inst.as_ref()),
            true => (i, self.over.get(&(i as u32))),
        });
        let own = self.own.iter().enumerate().map(|(o, inst)| (o + self.base_len, inst.as_ref()));
        base.chain(own).filter_map(|(i, inst)| Some((InstanceId(i as u32), inst?)))
    }

    /// The live instances whose parent is `id`.
    pub(super) fn children(&self, id: InstanceId) -> impl Iterator<Item = InstanceId> + '_ {
        self.iter().filter(move |(_, inst)| inst.parent == Some(id)).map(|(c, _)| c)
    }

    /// Room for `n` more instances in the overlay, at once.
    pub(super) fn reserve(&mut self, n: usize) {
        self.own.reserve(n);
        self.own_keys.reserve(n);
    }

    /// Folds the overlay into a new base (for a sheet about to be the source of copies). Ids
    /// stay as they are, and free ids stay free (empty slots of the base, their bits set).
    pub(super) fn freeze(&mut self) {
        if self.own.is_empty() && self.gone.iter().all(|w| *w == 0) && self.free.is_empty() {
            return;
        }
        let mut list: Vec<Option<Instance>> = Vec::with_capacity(self.slots());
        let mut keys: Map<Arc<str>, InstanceId> = Map::default();
        for i in 0..self.slots() {
            let inst = self.get(InstanceId(i as u32)).cloned();
            if let Some(inst) = &inst
                && inst.parent.is_some()
            {
                keys.insert(inst.key.clone(), InstanceId(i as u32));
            }
            list.push(inst);
        }
        self.base_len = list.len();
        self.base = Arc::new(Base { list, keys });
        self.own = Vec::new();
        self.own_keys = Map::default();
        self.gone = Vec::new();
        self.over = Map::default();
        // A base slot left empty is free, as it was: copies reuse it as a sheet built alone
        // would (the last freed first).
        for &id in &std::mem::take(&mut self.free) {
            self.set_gone(id.0 as usize, true);
            self.free.push(id);
        }
    }

    /// A copy for a structural change (`Arc::make_mut` of the shape), which then adds to it:
    /// the overlay with room to grow (a copy of a prepared sheet has an empty one).
    pub(super) fn copy_with_room(&self) -> Instances {
        let mut own = Vec::with_capacity(self.own.len() + self.own.len() / 8 + 16);
        own.extend(self.own.iter().cloned());
        Instances {
            base: self.base.clone(),
            base_len: self.base_len,
            own,
            own_keys: self.own_keys.clone(),
            gone: self.gone.clone(),
            over: self.over.clone(),
            free: self.free.clone(),
        }
    }
}
