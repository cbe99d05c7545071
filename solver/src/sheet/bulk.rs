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
//!   is prepared and put in the table, its plan steps made (`plan::Ready`), its edges, key,
//!   target, rank and id's hash collected. What lands at random places in a large sheet — the
//!   id's entry in the index by id, the target's list and plan entry — is done at the end
//!   (`link_collected`): the ids in one short loop, each index line asked for a few ids ahead;
//! - the modifiers are then grouped by target (a counting sort), and each target's list is
//!   written once, in order (by the ranks collected: no record is read, unless a list that
//!   held modifiers before the batch now needs sorting), its plan entry marked stale (written
//!   at the commit);
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
    /// One per modifier, in the order linked, for `link_collected`.
    pub(super) linked: Vec<Linked>,
}

/// A modifier linked in bulk, for the end of its batch (`Shape::link_collected`).
#[derive(Clone, Copy)]
pub(super) struct Linked {
    target: u32,
    key: ModKey,
    /// Where it ranks in its target's list (`rank_of`), read while its record was at hand, so
    /// that ordering the lists reads no record.
    rank: u64,
    /// Its id's hash in the index by id, taken while the id was at hand (its record was just
    /// made from it), so that entering the ids reads neither records nor ids.
    hash: u64,
}

/// Where modifier `m` ranks in its target's list before its insertion order: by user
/// priority, then inherent priority (see [`Modifier::order`]).
#[inline(always)]
fn rank_of(m: &Modifier) -> u64 {
    let (priority, rank, _) = m.order();
    (u64::from(priority) << 8) | u64::from(rank)
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
    /// mark the target's plan entry stale and the target dirty. Returns its key.
    ///
    /// Every step here reads or writes what the batch reads in its order (the record, its
    /// template, the ends of growing arrays). The rest — the index by id, the target's node, its
    /// plan entry — is a cache miss apiece in a large sheet, and waits for the end of the
    /// batch, where one short loop takes them all, many at once.
    #[inline(always)]
    pub(super) fn insert_modifier_bulk(&mut self, src: &mut Option<Modifier>, links: &mut Links) -> ModKey {
        // The caller has just prepared the record into `src`.
        let m = src.as_ref().expect("a prepared modifier");
        let key = self.new_key();
        let target = m.target;
        let to = target.index() as u64;
        links.edges.extend(m.reads.iter().map(|&(_, read)| (read.index() as u64) << 32 | to));
        let hash = self.mods.id_hash(&m.id);
        links.linked.push(Linked { target: target.index() as u32, key, rank: rank_of(m), hash });
        self.index_modifier(key, m);
        // Its steps, while its record and template are in the cache (see `plan::Ready`).
        let catalog = self.catalog.as_deref();
        self.plan.make_ready(key.0, m, m.held.body(catalog), m.held.recipe(catalog));
        self.mods.put_from(key, src);
        key
    }

    /// Ends the linking of a bulk batch's modifiers (`links.linked`, left empty): enters each
    /// one's id in the index by id, adds it to its target's list, in order, marks the target's
    /// plan entry stale and the target dirty (in `dirty`, once). `false` at a taken id (an
    /// earlier modifier's, or one of the batch's): the batch then runs again one operation at a
    /// time, which names it.
    pub(super) fn link_collected(&mut self, links: &mut Links, dirty: &mut Vec<NodeIndex>) -> bool {
        let claimed = self.claim_collected(&links.linked);
        if claimed {
            self.list_collected(links, dirty);
        }
        links.linked.clear();
        claimed
    }

    /// Enters the id of each modifier of `linked` in the index by id; `false` at a taken one.
    fn claim_collected(&mut self, linked: &[Linked]) -> bool {
        // Each id lands at a random place in the index: its line is asked for `AHEAD` ids
        // before it is entered.
        const AHEAD: usize = 8;
        for e in linked.iter().take(AHEAD) {
            self.mods.prefetch_id(e.hash);
        }
        for (i, e) in linked.iter().enumerate() {
            if let Some(ahead) = linked.get(i + AHEAD) {
                self.mods.prefetch_id(ahead.hash);
            }
            if self.mods.claim_id_hashed(e.key, e.hash).is_some() {
                return false;
            }
        }
        true
    }

    /// Adds each modifier of `links.linked` to its target's list, in the order the list
    /// applies (priority, inherent priority, insertion: `Modifier::order`), and marks the
    /// target's plan entry stale and the target dirty (in `dirty`).
    ///
    /// The modifiers are grouped by target first (a counting sort over node indexes, stable:
    /// each target's in the order linked, which is their insertion order), so that every list
    /// is written once, in node order. A target's new modifiers go after those it held
    /// before the batch, each later than all before it: so sorting a list *stably* by
    /// (priority, inherent priority) alone keeps insertion order among equals, which is the
    /// order. The new ones' ranks came with them (`Linked::rank`); only a list that held
    /// modifiers before and is now out of order reads its old ones' records.
    fn list_collected(&mut self, links: &Links, dirty: &mut Vec<NodeIndex>) {
        let Shape { graph, mods, plan, .. } = self;
        // (The plan has an entry per node.)
        let bound = plan.succ.len();
        let target_of = |e: &Linked| e.target as usize;
        // `start[t]..start[t + 1]`: target t's modifiers in `by_target`, as positions in
        // `linked`. (A target is a node of the graph; anything else is left out.)
        let mut start = vec![0u32; bound + 1];
        for e in &links.linked {
            if let Some(c) = start.get_mut(target_of(e) + 1) {
                *c += 1;
            }
        }
        for t in 0..bound {
            start[t + 1] += start[t];
        }
        let mut fill = start.clone();
        let mut by_target = vec![0u32; start[bound] as usize];
        for (i, e) in links.linked.iter().enumerate() {
            if let Some(f) = fill.get_mut(target_of(e)) {
                by_target[*f as usize] = i as u32;
                *f += 1;
            }
        }
        let mut keyed: Vec<(u64, ModKey)> = Vec::new();
        let rank = |i: u32| links.linked.get(i as usize).map_or(u64::MAX, |e| e.rank);
        let key = |i: u32| links.linked.get(i as usize).map_or(ModKey(u32::MAX), |e| e.key);
        for t in 0..bound {
            let run = &mut by_target[start[t] as usize..start[t + 1] as usize];
            let Some(node) = run.first().and_then(|_| graph.node_weight_mut(NodeIndex::new(t))) else {
                continue;
            };
            plan.touch(NodeIndex::new(t));
            dirty.push(NodeIndex::new(t));
            // The new ones in order among themselves, stably (insertion order among equals: a
            // short insertion sort, a pass when they are in order already).
            run.sort_by_key(|&i| rank(i));
            // The old list is in order; so is the whole when the first new one is not below the
            // last old one. (Every key in a list is live: lists hold exactly the live modifiers
            // of their node.)
            let last_old = node.mods.last().map(|&k| mods.get(k).map_or(u64::MAX, rank_of));
            if last_old.is_none_or(|r| r <= rank(run[0])) {
                node.mods.extend(run.iter().map(|&i| key(i)));
                continue;
            }
            keyed.clear();
            keyed.extend(node.mods.iter().map(|&k| (mods.get(k).map_or(u64::MAX, rank_of), k)));
            keyed.extend(run.iter().map(|&i| (rank(i), key(i))));
            keyed.sort_by_key(|e| e.0);
            node.mods.clear();
            node.mods.extend(keyed.iter().map(|&(_, k)| k));
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
