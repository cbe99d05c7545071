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
//! The invariant: runs with room (`cap > 0`) never overlap, and each lies inside `targets`.

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
    /// Elements of `targets` in no run's room.
    garbage: usize,
}

/// Copied with room to grow (see `plan::with_room`).
impl Clone for Dependents {
    fn clone(&self) -> Dependents {
        Dependents {
            runs: super::with_room(&self.runs),
            targets: super::with_room(&self.targets),
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

    /// Adds `t` to variable `i`'s dependents (`i` must have a list: see [`Dependents::grow_to`]).
    pub(in crate::sheet) fn push(&mut self, i: usize, t: u32) {
        let Some(&r) = self.runs.get(i) else { return };
        if r.len == r.cap {
            self.relocate(i, (2 * r.cap as usize).max(2));
        }
        if let Some(r) = self.runs.get_mut(i)
            && let Some(slot) = self.targets.get_mut((r.at + r.len) as usize)
        {
            *slot = t;
            r.len += 1;
        }
    }

    /// Removes `t` from variable `i`'s dependents, if there (the last one takes its place).
    pub(in crate::sheet) fn swap_remove(&mut self, i: usize, t: u32) {
        let Some(r) = self.runs.get_mut(i) else { return };
        let (at, len) = (r.at as usize, r.len as usize);
        let Some(run) = self.targets.get_mut(at..at + len) else { return };
        if let Some(p) = run.iter().position(|&x| x == t) {
            run.swap(p, len - 1);
            r.len -= 1;
        }
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
        }
        self.targets.resize(at + cap, 0);
        self.runs[i] = Run { at: at as u32, len: r.len, cap: cap as u32 };
    }

    /// Lays every list out again in index order, each with room for a quarter more (at least
    /// one), and list `grow` with room for `cap`.
    fn compact(&mut self, grow: usize, cap: usize) {
        let room =
            |i: usize, r: &Run| if i == grow { cap.max(r.len as usize) } else { r.len as usize * 5 / 4 + 1 };
        let total: usize = self.runs.iter().enumerate().map(|(i, r)| room(i, r)).sum();
        let mut targets = Vec::with_capacity(total);
        for (i, r) in self.runs.iter_mut().enumerate() {
            let at = targets.len();
            targets.extend_from_slice(
                self.targets.get(r.at as usize..(r.at + r.len) as usize).unwrap_or_default(),
            );
            let cap = room(i, r);
            targets.resize(at + cap, 0);
            *r = Run { at: at as u32, len: r.len, cap: cap as u32 };
        }
        self.targets = targets;
        self.garbage = 0;
    }

    /// About how many bytes the lists hold.
    pub(in crate::sheet) fn footprint(&self) -> usize {
        self.runs.len() * std::mem::size_of::<Run>() + self.targets.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::Dependents;
    use proptest::prelude::*;

    proptest! {
        /// The lists in one array hold what a `Vec` per variable holds, through pushes,
        /// removals, clears, reservations and the moves and layouts they cause.
        #[test]
        fn lists_in_one_array_hold_what_a_vec_each_holds(
            ops in prop::collection::vec((0u8..4, 0usize..12, 0u32..40), 0..400),
        ) {
            let mut d = Dependents::default();
            let mut model: Vec<Vec<u32>> = Vec::new();
            for (op, i, t) in ops {
                if model.len() <= i {
                    model.resize_with(i + 1, Vec::new);
                    d.grow_to(i);
                }
                match op {
                    0 | 1 => {
                        model[i].push(t);
                        d.push(i, t);
                    }
                    2 => {
                        let v = &mut model[i];
                        if let Some(p) = v.iter().position(|&x| x == t) {
                            v.swap_remove(p);
                        }
                        d.swap_remove(i, t);
                    }
                    _ if t % 2 == 0 => {
                        model[i].clear();
                        d.clear(i);
                    }
                    _ => d.reserve(i, t as usize),
                }
                prop_assert_eq!(d.len(), model.len());
                for (k, v) in model.iter().enumerate() {
                    prop_assert_eq!(d.of(k), v.as_slice());
                }
            }
            prop_assert_eq!(d.of(model.len() + 3), &[] as &[u32]);
        }
    }
}
