//! Each variable's dependents, every list in one array.
//!
//! A list per variable as a `Vec` of its own costs an allocation for every variable that is
//! read, a 24-byte header per variable, and on every copy of a shape (a sheet's first
//! structural change) an allocation and a copy per list, then a free per list when the copy is
//! dropped. Here a variable's dependents are a run of one shared array, `targets[at..at + len]`,
//! with room reserved up to `at + cap`; a list that outgrows its room moves to the end of the
//! array with twice the room, leaving its old run as garbage, and the array is laid out again
//! when garbage outweighs the lists. Copying every list is then two block copies.
//!
//! Each dependent is counted: `counts[k]` is how many modifiers of `targets[k]` read the
//! variable (an edge of the dependency graph with its multiplicity). These lists are the
//! graph's edges; the graph itself holds only the nodes.
//!
//! The invariants: runs with room (`cap > 0`) never overlap, and each lies inside `targets`;
//! `counts` is as long as `targets`, and every count in a run is at least 1.

/// Where a variable's dependents lie in [`Dependents::targets`].
#[derive(Clone, Copy, Debug, Default)]
struct Run {
    at: u32,
    len: u32,
    cap: u32,
}

/// Each variable's dependents (see the module docs), by node index.
#[derive(Debug, Default)]
pub(in crate::sheet) struct Dependents {
    runs: Vec<Run>,
    targets: Vec<u32>,
    /// Beside each of `targets`: how many modifiers of that dependent read the variable.
    counts: Vec<u32>,
    /// Elements of `targets` in no run's room.
    garbage: usize,
}

/// Copied with room to grow (see `plan::with_room`).
impl Clone for Dependents {
    fn clone(&self) -> Dependents {
        Dependents {
            runs: super::with_room(&self.runs),
            targets: super::with_room(&self.targets),
            counts: super::with_room(&self.counts),
            garbage: self.garbage,
        }
    }
}

impl Dependents {
    /// How many variables have a list (empty or not): one more than the highest node index.
    pub(in crate::sheet) fn len(&self) -> usize {
        self.runs.len()
    }

    /// Prefetches variable `i`'s run (where its dependents are).
    #[inline(always)]
    pub(in crate::sheet) fn prefetch_run(&self, i: usize) {
        if let Some(r) = self.runs.get(i) {
            super::prefetch(r);
        }
    }

    /// Prefetches variable `i`'s dependents, its run being in the cache by now.
    #[inline(always)]
    pub(in crate::sheet) fn prefetch_targets(&self, i: usize) {
        if let Some(t) = self.runs.get(i).and_then(|r| self.targets.get(r.at as usize)) {
            super::prefetch(t);
        }
    }

    /// Variable `i`'s dependents (none for an index past the end).
    #[inline(always)]
    pub(in crate::sheet) fn of(&self, i: usize) -> &[u32] {
        match self.runs.get(i) {
            Some(r) if r.len > 0 => {
                self.targets.get(r.at as usize..(r.at + r.len) as usize).unwrap_or_default()
            }
            _ => &[],
        }
    }

    /// Every variable's dependents, by node index.
    pub(in crate::sheet) fn iter(&self) -> impl Iterator<Item = &[u32]> {
        (0..self.runs.len()).map(|i| self.of(i))
    }

    /// Makes room for variables up to index `i` (their lists empty).
    pub(in crate::sheet) fn grow_to(&mut self, i: usize) {
        if self.runs.len() <= i {
            self.runs.resize(i + 1, Run::default());
        }
    }

    /// Empties variable `i`'s list, keeping its room.
    pub(in crate::sheet) fn clear(&mut self, i: usize) {
        if let Some(r) = self.runs.get_mut(i) {
            r.len = 0;
        }
    }

    /// Makes room in variable `i`'s list for `extra` more dependents.
    pub(in crate::sheet) fn reserve(&mut self, i: usize, extra: usize) {
        let Some(&r) = self.runs.get(i) else { return };
        let need = r.len as usize + extra;
        if need > r.cap as usize {
            self.relocate(i, need.max(2 * r.cap as usize));
        }
    }

    /// Makes room for lists holding `extra` more elements in all to move to the end of the
    /// array (see [`Dependents::reserve`]).
    pub(in crate::sheet) fn reserve_moves(&mut self, extra: usize) {
        self.targets.reserve(extra);
        self.counts.reserve(extra);
    }

    /// Makes `edges` (target, count) variable `i`'s list, which is empty: one move and one
    /// copy for all of them (a source's edges in a bulk batch).
    pub(in crate::sheet) fn fill(&mut self, i: usize, edges: &[(u32, u32)]) {
        let Some(&r) = self.runs.get(i) else { return };
        if r.len > 0 {
            for &(t, count) in edges {
                self.add(i, t, count);
            }
            return;
        }
        if (r.cap as usize) < edges.len() {
            // Moved to the end (as `relocate` does, without laying out the whole again): written
            // there in one pass, not zeroed first. Most lists, when a sheet is built.
            if self.garbage + (r.cap as usize) <= self.targets.len() / 2 + 64 {
                self.garbage += r.cap as usize;
                let at = self.targets.len() as u32;
                self.targets.extend(edges.iter().map(|&(t, _)| t));
                self.counts.extend(edges.iter().map(|&(_, count)| count));
                if let Some(run) = self.runs.get_mut(i) {
                    *run = Run { at, len: edges.len() as u32, cap: edges.len() as u32 };
                }
                return;
            }
            self.relocate(i, edges.len());
        }
        let Some(r) = self.runs.get_mut(i) else { return };
        let at = r.at as usize;
        let (Some(targets), Some(counts)) =
            (self.targets.get_mut(at..at + edges.len()), self.counts.get_mut(at..at + edges.len()))
        else {
            return;
        };
        for ((slot, c), &(t, count)) in targets.iter_mut().zip(counts.iter_mut()).zip(edges) {
            *slot = t;
            *c = count;
        }
        r.len = edges.len() as u32;
    }

    /// Counts `count` more edges `i → t`: `true` when the edge is new (`t` then goes last in
    /// `i`'s list).
    pub(in crate::sheet) fn add(&mut self, i: usize, t: u32, count: u32) -> bool {
        let Some(&r) = self.runs.get(i) else { return false };
        let at = r.at as usize;
        let run = self.targets.get(at..at + r.len as usize).unwrap_or_default();
        if let Some(p) = run.iter().position(|&x| x == t) {
            if let Some(c) = self.counts.get_mut(at + p) {
                *c += count;
            }
            return false;
        }
        if r.len == r.cap {
            self.relocate(i, (2 * r.cap as usize).max(2));
        }
        if let Some(r) = self.runs.get_mut(i) {
            let k = (r.at + r.len) as usize;
            if let (Some(slot), Some(c)) = (self.targets.get_mut(k), self.counts.get_mut(k)) {
                *slot = t;
                *c = count;
                r.len += 1;
            }
        }
        true
    }

    /// Counts one edge `i → t` fewer: `true` when that was its last (`t` then leaves `i`'s
    /// list, the last one taking its place). `false` also when there is no such edge.
    pub(in crate::sheet) fn remove(&mut self, i: usize, t: u32) -> bool {
        let Some(r) = self.runs.get_mut(i) else { return false };
        let (at, len) = (r.at as usize, r.len as usize);
        let Some(run) = self.targets.get_mut(at..at + len) else { return false };
        let Some(p) = run.iter().position(|&x| x == t) else { return false };
        let Some(counts) = self.counts.get_mut(at..at + len) else { return false };
        if counts[p] > 1 {
            counts[p] -= 1;
            return false;
        }
        run.swap(p, len - 1);
        counts.swap(p, len - 1);
        r.len -= 1;
        true
    }

    /// How many edges `i → t` there are.
    #[cfg(test)]
    fn count(&self, i: usize, t: u32) -> u32 {
        let Some(r) = self.runs.get(i) else { return 0 };
        let at = r.at as usize;
        let run = self.targets.get(at..at + r.len as usize).unwrap_or_default();
        run.iter().position(|&x| x == t).and_then(|p| self.counts.get(at + p).copied()).unwrap_or(0)
    }

    /// How many distinct edges there are (every list's length).
    #[cfg(test)]
    fn edge_count(&self) -> usize {
        self.runs.iter().map(|r| r.len as usize).sum()
    }

    /// Moves variable `i`'s list to the end of the array with room for `cap`, or lays every
    /// list out again when garbage would outweigh them.
    fn relocate(&mut self, i: usize, cap: usize) {
        let Some(&r) = self.runs.get(i) else { return };
        self.garbage += r.cap as usize;
        if self.garbage > self.targets.len() / 2 + 64 {
            self.compact(i, cap);
            return;
        }
        let at = self.targets.len();
        // (A new list has nothing to copy: most lists are new when a sheet is built.)
        if r.len > 0 {
            self.targets.extend_from_within(r.at as usize..(r.at + r.len) as usize);
            self.counts.extend_from_within(r.at as usize..(r.at + r.len) as usize);
        }
        self.targets.resize(at + cap, 0);
        self.counts.resize(at + cap, 0);
        self.runs[i] = Run { at: at as u32, len: r.len, cap: cap as u32 };
    }

    /// Lays every list out again in index order, each with room for a quarter more (at least
    /// one), and list `grow` with room for `cap`.
    fn compact(&mut self, grow: usize, cap: usize) {
        let room =
            |i: usize, r: &Run| if i == grow { cap.max(r.len as usize) } else { r.len as usize * 5 / 4 + 1 };
        let total: usize = self.runs.iter().enumerate().map(|(i, r)| room(i, r)).sum();
        let mut targets = Vec::with_capacity(total);
        let mut counts = Vec::with_capacity(total);
        for (i, r) in self.runs.iter_mut().enumerate() {
            let at = targets.len();
            let live = r.at as usize..(r.at + r.len) as usize;
            targets.extend_from_slice(self.targets.get(live.clone()).unwrap_or_default());
            counts.extend_from_slice(self.counts.get(live).unwrap_or_default());
            let cap = room(i, r);
            targets.resize(at + cap, 0);
            counts.resize(at + cap, 0);
            *r = Run { at: at as u32, len: r.len, cap: cap as u32 };
        }
        self.targets = targets;
        self.counts = counts;
        self.garbage = 0;
    }

    /// About how many bytes the lists hold.
    pub(in crate::sheet) fn footprint(&self) -> usize {
        self.runs.len() * std::mem::size_of::<Run>() + self.targets.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::Dependents;
    use proptest::prelude::*;

    proptest! {
        /// The lists in one array hold what a `Vec` of counted edges per variable holds,
        /// through additions, removals, clears, reservations and the moves and layouts they
        /// cause.
        #[test]
        fn lists_in_one_array_hold_what_a_vec_each_holds(
            ops in prop::collection::vec((0u8..5, 0usize..12, 0u32..40), 0..400),
        ) {
            let mut d = Dependents::default();
            let mut model: Vec<Vec<(u32, u32)>> = Vec::new();
            for (op, i, t) in ops {
                if model.len() <= i {
                    model.resize_with(i + 1, Vec::new);
                    d.grow_to(i);
                }
                match op {
                    0 | 1 => {
                        let count = 1 + t % 3;
                        let new = match model[i].iter_mut().find(|(x, _)| *x == t) {
                            Some((_, c)) => {
                                *c += count;
                                false
                            }
                            None => {
                                model[i].push((t, count));
                                true
                            }
                        };
                        prop_assert_eq!(d.add(i, t, count), new);
                    }
                    2 => {
                        let v = &mut model[i];
                        let last = match v.iter().position(|(x, _)| *x == t) {
                            Some(p) if v[p].1 > 1 => {
                                v[p].1 -= 1;
                                false
                            }
                            Some(p) => {
                                v.swap_remove(p);
                                true
                            }
                            None => false,
                        };
                        prop_assert_eq!(d.remove(i, t), last);
                    }
                    // A list filled at once (counted up one by one when not empty).
                    4 => {
                        let edges = [(t, 1 + t % 3), (t + 40, 1), (t + 80, 2)];
                        for &(x, c) in &edges {
                            match model[i].iter_mut().find(|(y, _)| *y == x) {
                                Some((_, n)) => *n += c,
                                None => model[i].push((x, c)),
                            }
                        }
                        d.fill(i, &edges);
                    }
                    _ if t % 2 == 0 => {
                        model[i].clear();
                        d.clear(i);
                    }
                    _ => d.reserve(i, t as usize),
                }
                prop_assert_eq!(d.len(), model.len());
                for (k, v) in model.iter().enumerate() {
                    let targets: Vec<u32> = v.iter().map(|e| e.0).collect();
                    prop_assert_eq!(d.of(k), targets.as_slice());
                    for &(x, c) in v {
                        prop_assert_eq!(d.count(k, x), c);
                    }
                }
                prop_assert_eq!(d.edge_count(), model.iter().map(Vec::len).sum::<usize>());
            }
            prop_assert_eq!(d.of(model.len() + 3), &[] as &[u32]);
        }
    }
}
