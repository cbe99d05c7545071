//! Large batches of additions, linked in bulk.
//!
//! A batch that only adds — a sheet being built, a ruleset's starting character, a scenario's
//! objects — is checked operation by operation as always (ids, instances, names, types,
//! formulas), but its modifiers are not linked into the dependency graph one at a time. Linking
//! one at a time costs, per modifier, a search for a cycle, a walk of the reading variable's
//! edge list for an edge to count, a raise of levels, an insertion into the target's ordered
//! list and a write of the target's plan entry, most of which a later modifier of the same
//! batch does again. In bulk:
//! - the link loop does only what reads and writes memory in the batch's order: each record
//!   is prepared and put in the table, its plan steps made (`plan::Ready`), its edges, key and
//!   target collected. What lands at random places in a large sheet — the id's entry in the
//!   index by id, the target's list and plan entry — is done at the end, in one short loop
//!   (`link_collected`), whose cache misses overlap;
//! - each modifier goes last in its target's list, and its target's plan entry is marked
//!   stale (not written: a later modifier may change it again); every list is put in order
//!   once, at the end (`order_lists`: most are in order already);
//! - its edges are collected, then grouped by source (a counting sort) and added to the graph
//!   once each, with their counts;
//! - one topological pass over the whole graph (Kahn's) gives every variable its level and
//!   finds a cycle if there is one;
//! - the plan is written once, at the commit (every stale entry; laid out again from scratch
//!   when the batch touched a large part of the sheet).
//!
//! **Invariant: a batch gives the same result in bulk as one operation at a time.** The same
//! modifiers, in the same order of application, with the same values; when it fails, the same
//! error at the same operation. Bulk linking skips the cycle check and enters ids at the end,
//! so a failure — any error of any operation, a taken id found at the end, or a cycle found
//! by the final pass — rolls the batch back and runs it
//! again one operation at a time, which names the operation that fails first. Rolling back
//! adds the collected edges to the graph first, so that unlinking each modifier finds the
//! edges it expects (levels are not touched until the final pass succeeds). Levels may differ
//! from those the one-at-a-time path would have raised — both keep every edge going up a
//! level — so only the order among variables of one level, which nothing depends on, can
//! differ.
//!
//! A batch goes in bulk when it holds at least [`BULK_MIN`] additions, nothing else, and adds
//! at least as many modifiers as the sheet holds already (the final pass visits the whole
//! graph). The property tests lower both thresholds so that every batch of additions they make
//! goes in bulk.

use super::*;

/// The fewest additions for which a batch goes in bulk (small in tests, so that their batches
/// do).
pub(super) const BULK_MIN: usize = if cfg!(test) { 2 } else { 64 };

/// A batch goes in bulk only when it adds at least 1/`BULK_SHARE` as many modifiers as the
/// sheet holds (the final pass visits the whole graph); in tests, whatever the sheet holds.
pub(super) const BULK_SHARE: usize = if cfg!(test) { usize::MAX / 2 } else { 1 };

#[cfg(test)]
thread_local! {
    static BULK_BATCHES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many batches this thread started in bulk (for tests: that the property tests reach it).
#[cfg(test)]
pub(crate) fn bulk_batches() -> usize {
    BULK_BATCHES.with(|c| c.get())
}

/// Counts a batch started in bulk (tests only).
pub(super) fn count_bulk_batch() {
    #[cfg(test)]
    BULK_BATCHES.with(|c| c.set(c.get() + 1));
}

/// What a bulk batch collects as it links, for its end (`Sheet::finish_bulk`).
#[derive(Default, Clone)]
pub(super) struct Links {
    /// One per read: `from << 32 | to` in node indexes, for `add_collected_edges`.
    pub(super) edges: Vec<u64>,
    /// One per modifier, in the order linked: `target << 32 | key`, for `link_collected`.
    pub(super) linked: Vec<u64>,
}

impl Links {
    /// Room for `adds` modifiers.
    pub(super) fn reserve(&mut self, adds: usize) {
        // About two reads a modifier: the list of edges grows once or twice, not by doubling
        // from nothing (it is dropped at the end of the batch).
        self.edges.reserve(2 * adds);
        self.linked.reserve(adds);
    }

    /// Forgets what the batch collected.
    pub(super) fn clear(&mut self) {
        self.edges.clear();
        self.linked.clear();
    }

    /// Whether a large batch left these buffers large (a sheet does not keep them).
    pub(super) fn is_large(&self) -> bool {
        self.edges.capacity() > 256 || self.linked.capacity() > 256
    }
}

impl Shape {
    /// Puts the modifier prepared into `src` (left empty) in the table under a new key, as part
    /// of a bulk batch: its edges go to `links.edges`, and its key and target to
    /// `links.linked`, for `link_collected` to enter its id, add it to its target's list and
    /// mark the target's plan entry stale. Returns its key and target.
    ///
    /// Every step here reads or writes what the batch reads in its order (the record, its
    /// template, the ends of growing arrays). The rest — the index by id, the target's node, its
    /// plan entry — is a cache miss apiece in a large sheet, and waits for the end of the
    /// batch, where one short loop takes them all, many at once.
    #[inline(always)]
    pub(super) fn insert_modifier_bulk(
        &mut self,
        src: &mut Option<Modifier>,
        links: &mut Links,
    ) -> (ModKey, NodeIndex) {
        // The caller has just prepared the record into `src`.
        let m = src.as_ref().expect("a prepared modifier");
        let key = self.new_key();
        let target = m.target;
        let to = target.index() as u64;
        links.edges.extend(m.reads.iter().map(|&(_, read)| (read.index() as u64) << 32 | to));
        links.linked.push(to << 32 | u64::from(key.0));
        self.index_modifier(key, m);
        // Its steps, while its record and template are in the cache (see `plan::Ready`).
        let catalog = self.catalog.as_deref();
        self.plan.make_ready(key.0, m, m.held.body(catalog), m.held.recipe(catalog));
        self.mods.put_from(key, src);
        (key, target)
    }

    /// Ends the linking of a bulk batch's modifiers (`links.linked`, left empty): enters each
    /// one's id in the index by id, adds it last to its target's list, and marks the target's
    /// plan entry stale. `false` at a taken id (an earlier modifier's, or one of the batch's):
    /// the batch then runs again one operation at a time, which names it.
    pub(super) fn link_collected(&mut self, links: &mut Links) -> bool {
        for &e in &links.linked {
            let (target, key) = (NodeIndex::new((e >> 32) as usize), ModKey(e as u32));
            if self.mods.claim_id(key).is_some() {
                links.linked.clear();
                return false;
            }
            if let Some(n) = self.graph.node_weight_mut(target) {
                n.mods.push(key);
            }
            self.plan.touch(target);
        }
        links.linked.clear();
        true
    }

    /// Puts every variable's list of modifiers in the order they apply (priority, inherent
    /// priority, insertion: `Modifier::order`) at the end of a bulk batch, which left each
    /// batch's modifiers last in its target's list in the order linked. A list in order already
    /// (most: a variable's modifiers mostly share a priority and a rank) is only read.
    pub(super) fn order_lists(&mut self) {
        let Shape { graph, mods, .. } = self;
        // A list is the modifiers it held before the batch, in order, then the batch's in the
        // order linked, each later than all before it: so sorting it *stably* by (priority,
        // inherent priority) alone keeps insertion order among equals, which is the order.
        // Each record is read once, its rank kept beside its key for the comparisons. (Every
        // key in a list is live: lists hold exactly the live modifiers of their node.)
        let mut keyed: Vec<(u64, ModKey)> = Vec::new();
        for n in graph.node_weights_mut() {
            if n.mods.len() < 2 {
                continue;
            }
            keyed.clear();
            keyed.extend(n.mods.iter().map(|&k| {
                let (priority, rank, _) = mods.get(k).map_or((u32::MAX, u8::MAX, 0), |m| m.order());
                ((u64::from(priority) << 8) | u64::from(rank), k)
            }));
            if keyed.windows(2).all(|w| w[0].0 <= w[1].0) {
                continue;
            }
            keyed.sort_by_key(|e| e.0);
            for (slot, &(_, k)) in n.mods.iter_mut().zip(keyed.iter()) {
                *slot = k;
            }
        }
    }

    /// Adds the collected edges to the graph, each distinct edge once with its count (an edge
    /// already there counts up), without touching levels. Leaves `edges` empty.
    ///
    /// The edges are grouped by source with a counting sort (linear: no comparisons), and each
    /// source's are added in the order they were collected, so that every variable lists its
    /// dependents in the order linking one modifier at a time gives.
    pub(super) fn add_collected_edges(&mut self, edges: &mut Vec<u64>) {
        let n = self.plan.succ.len();
        // Every node index read is below `n` (the plan has an entry per node); anything else is
        // left out rather than trusted.
        edges.retain(|&e| ((e >> 32) as usize) < n && ((e & u64::from(u32::MAX)) as usize) < n);
        if edges.is_empty() {
            return;
        }
        // `start[f]..start[f + 1]`: source f's targets in `to`, in the order collected.
        let mut start = vec![0u32; n + 1];
        for &e in edges.iter() {
            start[(e >> 32) as usize + 1] += 1;
        }
        for f in 0..n {
            start[f + 1] += start[f];
        }
        let mut fill = start.clone();
        let mut to = vec![0u32; edges.len()];
        for &e in edges.iter() {
            let f = (e >> 32) as usize;
            to[fill[f] as usize] = e as u32;
            fill[f] += 1;
        }
        edges.clear();
        // Per source: its distinct targets with their counts; `seen[t]` is the last source that
        // had target `t`, `slot[t]` its place in `distinct`.
        let (mut seen, mut slot) = (vec![u32::MAX; n], vec![0u32; n]);
        // Room at the end of the lists' array for every list that moves there (as many
        // elements as edges at most), taken once rather than by doubling.
        self.plan.succ.reserve_moves(to.len());
        let mut distinct: Vec<(u32, u32)> = Vec::new();
        for f in 0..n {
            let targets = &to[start[f] as usize..start[f + 1] as usize];
            if targets.is_empty() {
                continue;
            }
            distinct.clear();
            for &t in targets {
                let t_ = t as usize;
                if seen[t_] == f as u32 {
                    distinct[slot[t_] as usize].1 += 1;
                } else {
                    seen[t_] = f as u32;
                    slot[t_] = distinct.len() as u32;
                    distinct.push((t, 1));
                }
            }
            // A new source's edges are all new, and go in at once; a source that had edges
            // counts each up or adds it.
            let a = NodeIndex::new(f);
            if self.plan.succ.of(f).is_empty() {
                self.plan.add_new_edges(a, &distinct);
                continue;
            }
            self.plan.succ.reserve(f, distinct.len());
            for &(t, count) in &distinct {
                self.plan.add_edge(a, NodeIndex::new(t as usize), count);
            }
        }
    }

    /// Gives every variable its level again, by one topological pass over the whole graph
    /// (Kahn's): 0 for a variable that reads nothing, else one more than the highest level it
    /// reads. `false`, with levels unchanged, when the graph has a cycle.
    pub(super) fn relevel(&mut self) -> bool {
        let n = self.plan.succ.len();
        let mut indegree = vec![0u32; n];
        for s in self.plan.succ.iter() {
            for &t in s {
                indegree[t as usize] += 1;
            }
        }
        let mut level = vec![0u32; n];
        let mut queue: Vec<u32> = self
            .graph
            .node_indices()
            .map(|v| v.index() as u32)
            .filter(|&v| indegree[v as usize] == 0)
            .collect();
        let mut done = 0;
        while done < queue.len() {
            let v = queue[done] as usize;
            done += 1;
            let next = level[v] + 1;
            for &t in self.plan.succ.of(v) {
                let t = t as usize;
                level[t] = level[t].max(next);
                indegree[t] -= 1;
                if indegree[t] == 0 {
                    queue.push(t as u32);
                }
            }
        }
        if done < self.graph.node_count() {
            return false;
        }
        self.plan.level = level;
        self.plan.levels_changed();
        true
    }
}
