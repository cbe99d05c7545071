//! The overlay's index by id: from an id's hash to the key of the record holding that id.
//!
//! An open-addressing table with linear probing, one `u64` per slot: the hash's high 32 bits
//! (its *tag*, its lowest bit set so that it is never 0) beside the key. The slot a probe
//! starts from is the tag's other bits. The ids themselves stay in the records, which the
//! caller compares through a closure only when a tag matches: another id's tag matches about
//! once in 2^31 entries passed. Removal shifts the entries after a freed slot back (no
//! tombstones), so a probe always ends at the first empty slot.
//!
//! Why not `hashbrown`: entering 8,000 ids at the end of a bulk batch (`bulk.rs`) went through
//! its general entry API at about 100 instructions an id, and its slots took 16 bytes (a 64-bit
//! hash and a 32-bit key, padded). Here an entry is a few instructions and 8 bytes, so the
//! table of a 2,000-variable sheet's 8,000 modifiers is 128 KB rather than 272 KB.
//!
//! The invariants:
//! - a slot is 0 (empty) or `tag << 32 | key`, with `tag != 0`;
//! - every entry sits at its home slot (`home(tag)`) or after it, with no empty slot between;
//! - at most half the slots are full (`len * 2 <= slots.len()`), and the number of slots is 0
//!   or a power of two.

use crate::sheet::ModKey;

/// The fewest slots a table that holds anything has.
const MIN_SLOTS: usize = 16;

/// See the module docs.
#[derive(Clone, Debug, Default)]
pub(super) struct IdIndex {
    slots: Vec<u64>,
    len: usize,
}

/// The tag of a 64-bit hash: its high half, never 0 (the empty slot's).
#[inline(always)]
fn tag(h: u64) -> u32 {
    ((h >> 32) as u32) | 1
}

impl IdIndex {
    /// How many entries it holds.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Forgets every entry, keeping its room.
    pub(super) fn clear(&mut self) {
        self.slots.fill(0);
        self.len = 0;
    }

    /// The slot an entry with tag `t` is looked for from (`mask`: the number of slots less one).
    /// The tag's low bit is always 1, so the slot comes from the bits above it.
    #[inline(always)]
    fn home(t: u32, mask: usize) -> usize {
        (t >> 1) as usize & mask
    }

    /// Room for `adds` more entries without growing.
    pub(super) fn reserve(&mut self, adds: usize) {
        let want = self.len.saturating_add(adds);
        if want.saturating_mul(2) > self.slots.len() {
            self.resize(want.saturating_mul(2).max(MIN_SLOTS).next_power_of_two());
        }
    }

    /// Lays the entries out again in `slots` slots (a power of two, at least twice the entries).
    fn resize(&mut self, slots: usize) {
        let old = std::mem::replace(&mut self.slots, vec![0; slots]);
        let mask = slots - 1;
        for e in old.into_iter().filter(|&e| e != 0) {
            let mut i = Self::home((e >> 32) as u32, mask);
            // A free slot is found: at most half are full.
            while self.slots[i] != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = e;
        }
    }

    /// Asks for the slot an entry under hash `h` is looked for from.
    #[inline(always)]
    pub(super) fn prefetch(&self, h: u64) {
        if let Some(slot) = self.slots.get(Self::home(tag(h), self.slots.len().wrapping_sub(1))) {
            crate::sheet::plan::prefetch(slot);
        }
    }

    /// The key of the entry under hash `h` for which `is` holds (`is` compares the id sought
    /// with the record's under the key).
    #[inline]
    pub(super) fn find(&self, h: u64, is: impl FnMut(ModKey) -> bool) -> Option<ModKey> {
        self.locate(h, is).map(|i| ModKey(self.slots[i] as u32))
    }

    /// The slot of the entry under hash `h` for which `is` holds.
    #[inline(always)]
    fn locate(&self, h: u64, mut is: impl FnMut(ModKey) -> bool) -> Option<usize> {
        if self.len == 0 {
            return None;
        }
        let (t, mask) = (tag(h), self.slots.len() - 1);
        let mut i = Self::home(t, mask);
        loop {
            let e = self.slots[i];
            if e == 0 {
                return None;
            }
            if (e >> 32) as u32 == t && is(ModKey(e as u32)) {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
    }

    /// Enters `key` under hash `h` unless an entry for which `is` holds is there already:
    /// returns that entry's key then, entering nothing. One probe either way.
    #[inline(always)]
    pub(super) fn claim(
        &mut self,
        h: u64,
        key: ModKey,
        mut is: impl FnMut(ModKey) -> bool,
    ) -> Option<ModKey> {
        if (self.len + 1) * 2 > self.slots.len() {
            self.reserve(1);
        }
        let (t, mask) = (tag(h), self.slots.len() - 1);
        let mut i = Self::home(t, mask);
        loop {
            let e = self.slots[i];
            if e == 0 {
                self.slots[i] = u64::from(t) << 32 | u64::from(key.0);
                self.len += 1;
                return None;
            }
            if (e >> 32) as u32 == t && is(ModKey(e as u32)) {
                return Some(ModKey(e as u32));
            }
            i = (i + 1) & mask;
        }
    }

    /// Enters `key` under hash `h` (its id known to be free).
    pub(super) fn insert_unique(&mut self, h: u64, key: ModKey) {
        self.claim(h, key, |_| false);
    }

    /// Takes out the entry under hash `h` for which `is` holds; returns its key.
    pub(super) fn remove(&mut self, h: u64, is: impl FnMut(ModKey) -> bool) -> Option<ModKey> {
        let i = self.locate(h, is)?;
        let key = ModKey(self.slots[i] as u32);
        self.vacate(i);
        self.len -= 1;
        Some(key)
    }

    /// Empties slot `i`, moving back each later entry of its run that may sit there (one whose
    /// home is not between the freed slot and it), so that no probe meets a gap before its entry.
    fn vacate(&mut self, mut i: usize) {
        let mask = self.slots.len() - 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let e = self.slots[j];
            if e == 0 {
                self.slots[i] = 0;
                return;
            }
            let home = Self::home((e >> 32) as u32, mask);
            // How far the entry at j is from its home, and from the gap at i: it may move back
            // to i when i is no nearer to j than its home is.
            if (j.wrapping_sub(home) & mask) >= (j.wrapping_sub(i) & mask) {
                self.slots[i] = e;
                i = j;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// A hash whose high half is `bucket` (so that tests choose collisions) and low half `low`.
    fn h(bucket: u32, low: u32) -> u64 {
        u64::from(bucket) << 32 | u64::from(low)
    }

    #[derive(Clone, Debug)]
    enum Op {
        Claim(u8),
        Remove(u8),
        Find(u8),
        Reserve(u8),
        Clear,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => any::<u8>().prop_map(Op::Claim),
            4 => any::<u8>().prop_map(Op::Remove),
            3 => any::<u8>().prop_map(Op::Find),
            1 => any::<u8>().prop_map(Op::Reserve),
            1 => Just(Op::Clear),
        ]
    }

    proptest! {
        /// Ids 0..=255 hashed into a few buckets (so runs overlap and wrap), against a map:
        /// every claim, removal and lookup answers as the map does, and the invariants hold.
        #[test]
        fn the_index_answers_as_a_map_does(ops in proptest::collection::vec(op(), 1..400), spread in 1u32..40) {
            // id -> key; keys are ids + 1000.
            let hash = |id: u8| h((u32::from(id) % spread).wrapping_mul(0x9E37_79B9), u32::from(id));
            let mut model: HashMap<u8, ModKey> = HashMap::new();
            let mut index = IdIndex::default();
            // Which id each key stands for (the record's id, as the table's callers read it).
            let id_of = |k: ModKey| (k.0 - 1000) as u8;
            for op in ops {
                match op {
                    Op::Claim(id) => {
                        let got = index.claim(hash(id), ModKey(1000 + u32::from(id)), |k| id_of(k) == id);
                        let want = model.get(&id).copied();
                        prop_assert_eq!(got, want);
                        model.entry(id).or_insert(ModKey(1000 + u32::from(id)));
                    }
                    Op::Remove(id) => {
                        prop_assert_eq!(index.remove(hash(id), |k| id_of(k) == id), model.remove(&id));
                    }
                    Op::Find(id) => {
                        prop_assert_eq!(index.find(hash(id), |k| id_of(k) == id), model.get(&id).copied());
                    }
                    Op::Reserve(n) => index.reserve(usize::from(n)),
                    Op::Clear => {
                        index.clear();
                        model.clear();
                    }
                }
                prop_assert_eq!(index.len(), model.len());
                prop_assert!(index.len() * 2 <= index.slots.len());
                prop_assert!(index.slots.is_empty() || index.slots.len().is_power_of_two());
                prop_assert_eq!(index.slots.iter().filter(|&&e| e != 0).count(), model.len());
            }
            for (&id, &k) in &model {
                prop_assert_eq!(index.find(hash(id), |k| id_of(k) == id), Some(k));
            }
        }
    }

    #[test]
    fn an_empty_index_finds_nothing_and_removes_nothing() {
        let mut index = IdIndex::default();
        assert_eq!(index.find(h(1, 1), |_| true), None);
        assert_eq!(index.remove(h(1, 1), |_| true), None);
        assert_eq!(index.claim(h(1, 1), ModKey(7), |_| true), None);
        assert_eq!(index.find(h(1, 1), |_| true), Some(ModKey(7)));
    }
}
