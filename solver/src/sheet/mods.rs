//! A shape's modifiers by key and by id: a shared base, and what this shape changed since.
//!
//! Every sheet starts as a copy of a compiled one (a ruleset's starting character, the anchor
//! workload's 8,000 modifiers), and its first structural change copies the shape. Copying the
//! modifiers as one table meant a reference count up per modifier and a copy of the index by
//! id (a count up per id) on that first change, and as many down when the copy was dropped:
//! about a third of copying the anchor workload's shape. Here the modifiers the copy was made
//! from stay in a *base* shared by `Arc` with every other copy; a copy's own changes are an
//! overlay beside it:
//! - modifiers linked since the copy, under keys after the base's, with their own index by id
//!   (each entry the id's hash and the key: the id itself is the record's, so linking and
//!   unlinking count no reference to it — an atomic write each, which a tick expiring hundreds
//!   of effects felt);
//! - base modifiers unlinked since, one bit each;
//! - keys freed since, for reuse (only the overlay's: a base key is the base's record).
//!
//! Records are held in place, in the tables' arrays, not each in an allocation of its own:
//! linking a modifier allocates nothing (the arrays grow once for a batch: `reserve`), and
//! dropping a sheet frees its table in one piece. At 8,000 modifiers an allocation and a free
//! each were about a fifth of building and dropping a sheet. So a record moves by value: an
//! overlay record taken out is moved out; a base record, shared, is copied out when unlinked
//! (and put back by clearing its bit); the overlay is copied record by record with the shape,
//! which is why copies are made from a frozen table, whose overlay is empty.
//!
//! [`ModTable::freeze`] folds the overlay into a new base, once, when a sheet is made the
//! source of copies (`Sheet::prepare_to_share`).
//!
//! The invariants:
//! - a key is live in exactly one place: the base (its bit clear) or the overlay;
//! - an id is live at most once: in the overlay's index, or in the base's with its key's bit
//!   clear;
//! - the base never changes while shared (it is only ever replaced, by `freeze`).

mod index;

use super::{ModKey, Modifier};
use crate::Map;
use index::IdIndex;
use std::hash::BuildHasher;
use std::sync::Arc;

/// The part of a table shared by copies. Aligned to 128 bytes: every copy reads it while
/// copies made and dropped on other threads change the `Arc`'s counts (see `Rules`).
#[derive(Clone, Debug, Default)]
#[repr(align(128))]
struct Base {
    mods: Vec<Option<Modifier>>,
    ids: Map<Arc<str>, ModKey>,
}

/// A shape's modifiers (see the module docs).
#[derive(Clone, Debug, Default)]
pub(super) struct ModTable {
    base: Arc<Base>,
    /// `base.mods.len()`, kept here: every lookup by key compares with it, and reading it
    /// through the `Arc` was one more dependent load on each.
    base_len: usize,
    /// Keys `base.mods.len()..`: modifiers linked since the base was made.
    own: Vec<Option<Modifier>>,
    /// The index by id of the live modifiers in `own`: keys by their ids' hashes by `hasher`
    /// (`mods/index.rs`).
    own_ids: IdIndex,
    /// Hashes the overlay's ids (copied with the table, so its hashes stay valid).
    hasher: foldhash::fast::RandomState,
    /// Base keys unlinked since, a bit each (empty until the first).
    gone: Vec<u64>,
    /// How many bits of `gone` are set.
    gone_count: usize,
    /// Keys of `own` free for reuse, the last freed last.
    free: Vec<ModKey>,
}

/// Whether bit `k` of `bits` is set.
fn is_set(bits: &[u64], k: usize) -> bool {
    bits.get(k / 64).is_some_and(|w| w & (1 << (k % 64)) != 0)
}

impl ModTable {
    #[inline(always)]
    fn base_len(&self) -> usize {
        self.base_len
    }

    fn is_gone(&self, k: usize) -> bool {
        is_set(&self.gone, k)
    }

    /// The live modifier under `key`.
    #[inline(always)]
    pub(super) fn get(&self, key: ModKey) -> Option<&Modifier> {
        let k = key.0 as usize;
        // One bounds check finds an overlay key (a base key wraps past the end).
        match self.own.get(k.wrapping_sub(self.base_len)) {
            Some(m) => m.as_ref(),
            None => self.get_base(k),
        }
    }

    /// [`ModTable::get`] for a key that is not the overlay's.
    #[inline(never)]
    fn get_base(&self, k: usize) -> Option<&Modifier> {
        if k >= self.base_len || (self.gone_count > 0 && self.is_gone(k)) {
            return None;
        }
        self.base.mods.get(k)?.as_ref()
    }

    /// The id of the overlay's record under `key`, if live.
    #[inline(always)]
    fn own_id(own: &[Option<Modifier>], base_len: usize, key: ModKey) -> Option<&str> {
        own.get((key.0 as usize).wrapping_sub(base_len))?.as_ref().map(|m| &*m.id)
    }

    /// Whether the overlay's record under `key` has id `id`: the same text, most often the same
    /// allocation (a removal names a modifier by the id it was added with), then not compared.
    #[inline(always)]
    fn has_own_id(own: &[Option<Modifier>], base_len: usize, key: ModKey, id: &str) -> bool {
        Self::own_id(own, base_len, key)
            .is_some_and(|o| (std::ptr::eq(o.as_ptr(), id.as_ptr()) && o.len() == id.len()) || o == id)
    }

    /// The key of the overlay's live modifier with id `id`, by its hash `h`.
    #[inline]
    fn own_key(&self, id: &str, h: u64) -> Option<ModKey> {
        let (own, base_len) = (&self.own, self.base_len);
        self.own_ids.find(h, |k| Self::has_own_id(own, base_len, k, id))
    }

    /// The key of the live modifier with id `id`.
    #[inline]
    pub(super) fn key_of(&self, id: &str) -> Option<ModKey> {
        if let Some(k) = self.own_key(id, self.id_hash(id)) {
            return Some(k);
        }
        if self.base_len == 0 {
            return None;
        }
        self.base.ids.get(id).copied().filter(|k| !self.is_gone(k.0 as usize))
    }

    /// Whether a live modifier has id `id`.
    pub(super) fn has_id(&self, id: &str) -> bool {
        self.key_of(id).is_some()
    }

    /// How many modifiers are live.
    pub(super) fn len(&self) -> usize {
        self.base.ids.len() - self.gone_count + self.own_ids.len()
    }

    /// How many keys there are, live or free (one more than the highest).
    pub(super) fn key_count(&self) -> usize {
        self.base_len() + self.own.len()
    }

    /// Every live modifier with its key, base first, each in key order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (ModKey, &Modifier)> {
        let base = self.base.mods.iter().enumerate().filter(|(k, _)| !self.is_gone(*k));
        let own = self.own.iter().enumerate().map(|(o, m)| (o + self.base_len(), m));
        base.chain(own).filter_map(|(k, m)| Some((ModKey(k as u32), m.as_ref()?)))
    }

    /// The ids of the live modifiers.
    pub(super) fn ids(&self) -> impl Iterator<Item = &Arc<str>> {
        let base = self.base.ids.iter().filter(|(_, k)| !self.is_gone(k.0 as usize)).map(|(id, _)| id);
        // A live overlay record is in the overlay's index, and only those are.
        base.chain(self.own.iter().flatten().map(|m| &m.id))
    }

    /// Room for `adds` more modifiers without growing.
    pub(super) fn reserve(&mut self, adds: usize) {
        self.own.reserve(adds.saturating_sub(self.free.len()));
        self.own_ids.reserve(adds);
    }

    /// A key for a new modifier: the last one freed, or a new one.
    pub(super) fn new_key(&mut self) -> ModKey {
        match self.free.pop() {
            Some(k) => k,
            None => {
                // (A full table doubles, as any `Vec`: records one at a time cost a copy of
                // about two records each in all. A sheet built in one batch holds no room, and
                // its first addition after makes room for as many again.)
                self.own.push(None);
                ModKey((self.key_count() - 1) as u32)
            }
        }
    }

    /// Takes `key` off the free list, where it went last (a failed batch putting back a
    /// modifier it removed).
    pub(super) fn unfree(&mut self, key: ModKey) {
        if let Some(i) = self.free.iter().rposition(|k| *k == key) {
            self.free.remove(i);
        }
    }

    /// The hash of `id` in the overlay's index: what every entry is under and every lookup
    /// probes with (a bulk batch takes it early, for [`ModTable::claim_id_hashed`] and
    /// [`ModTable::prefetch_id`] ahead of it).
    #[inline(always)]
    pub(super) fn id_hash(&self, id: &str) -> u64 {
        self.hasher.hash_one(id)
    }

    /// Asks for the line of the overlay's index where an id hashed `h` is looked for: a bulk
    /// batch enters thousands of ids in a row, each at a random place (see `link_collected`).
    #[inline(always)]
    pub(super) fn prefetch_id(&self, h: u64) {
        self.own_ids.prefetch(h);
    }

    /// Enters the id of the overlay's record under `key` (put without its id: a bulk batch's,
    /// see `bulk.rs`) unless another live modifier has that id; returns that modifier's key
    /// then, entering nothing. `h` is the id's hash ([`ModTable::id_hash`]). One probe of the
    /// overlay's index (and one of the base's, when there is a base). The record and its id are
    /// read only to compare: with a base, or when another entry's tag matches.
    #[inline(always)]
    pub(super) fn claim_id_hashed(&mut self, key: ModKey, h: u64) -> Option<ModKey> {
        let Self { base, base_len, own, own_ids, gone, .. } = self;
        let base_len = *base_len;
        if base_len > 0
            && let Some(id) = Self::own_id(own, base_len, key)
            && let Some(&k) = base.ids.get(id)
            && !is_set(gone, k.0 as usize)
        {
            return Some(k);
        }
        // One probe finds a taken id or the place for this one.
        own_ids.claim(h, key, |k| {
            Self::own_id(own, base_len, key).is_some_and(|id| Self::has_own_id(own, base_len, k, id))
        })
    }

    /// Enters the overlay key `key` under `id`'s hash (its id checked free by the caller).
    fn enter(&mut self, id: &str, key: ModKey) {
        let h = self.id_hash(id);
        self.own_ids.insert_unique(h, key);
    }

    /// Takes the overlay key `key`, of a modifier with id `id`, out of the index.
    fn leave(&mut self, id: &str, key: ModKey) {
        let h = self.id_hash(id);
        self.own_ids.remove(h, |k| k == key);
    }

    /// Puts `m` under `key`, its id entered already ([`ModTable::claim_id_hashed`]) — or, for a base
    /// key, the base's own record put back (a failed batch undoing a removal).
    #[inline(always)]
    pub(super) fn put(&mut self, key: ModKey, m: Modifier) {
        let k = key.0 as usize;
        if let Some(slot) = k.checked_sub(self.base_len()).and_then(|o| self.own.get_mut(o)) {
            *slot = Some(m);
            return;
        }
        self.put_base(key, m);
    }

    /// [`ModTable::put`] for a base key: the base's own record put back, which is `m` (a
    /// removal undone; the base never changes while shared, so the record there is the one
    /// taken out) — its key live again.
    fn put_base(&mut self, key: ModKey, m: Modifier) {
        let k = key.0 as usize;
        match k.checked_sub(self.base_len()) {
            Some(_) => {}
            None if self.base.mods.get(k).is_some_and(Option::is_some) => {
                drop(m);
                if let Some(w) = self.gone.get_mut(k / 64)
                    && *w & (1 << (k % 64)) != 0
                {
                    *w &= !(1 << (k % 64));
                    self.gone_count -= 1;
                }
            }
            None => {
                // Another record under a base key: never done (base keys are not reused), but
                // kept correct by making the whole table the overlay's.
                self.thaw();
                self.put(key, m);
            }
        }
    }

    /// Puts `m` in place of the overlay's live record under `key` and returns that one; `None`
    /// (and `m` dropped) when `key` is not the overlay's or not live.
    pub(super) fn replace(&mut self, key: ModKey, m: Modifier) -> Option<Modifier> {
        let slot = self.own.get_mut((key.0 as usize).wrapping_sub(self.base_len))?.as_mut()?;
        Some(std::mem::replace(slot, m))
    }

    /// Whether `key` is one of this table's own (not its base's): its record may be replaced
    /// in place ([`ModTable::put`]) without copying the base.
    pub(super) fn is_own(&self, key: ModKey) -> bool {
        key.0 as usize >= self.base_len
    }

    /// Links the record in `src` under `key` with its id, moved into its slot (`src` left
    /// empty): its id entered and [`ModTable::put`] (the caller has checked the id is
    /// free).
    #[inline(always)]
    pub(super) fn link_from(&mut self, key: ModKey, src: &mut Option<Modifier>) {
        if let Some(m) = src.as_ref()
            && (key.0 as usize) >= self.base_len()
        {
            self.enter(&m.id, key);
        }
        self.put_from(key, src);
    }

    /// [`ModTable::put`] of the record in `src` (left empty). An empty overlay slot (a new key's)
    /// takes it in line: through `put` instead, a linked build ran 56.6M → 57.2M instructions
    /// (callgrind, `anchor_loop linked 5`).
    #[inline(always)]
    pub(super) fn put_from(&mut self, key: ModKey, src: &mut Option<Modifier>) {
        let k = key.0 as usize;
        if let Some(slot) = k.checked_sub(self.base_len()).and_then(|o| self.own.get_mut(o))
            && slot.is_none()
        {
            *slot = src.take();
            return;
        }
        if let Some(m) = src.take() {
            self.put(key, m);
        }
    }

    /// Unlinks the modifier under `key` and returns it; its key is freed (an overlay key for
    /// reuse; a base key is marked gone).
    pub(super) fn unlink(&mut self, key: ModKey) -> Option<Modifier> {
        let k = key.0 as usize;
        match k.checked_sub(self.base_len()) {
            Some(o) => {
                let m = self.own.get_mut(o)?.take()?;
                self.leave(&m.id, key);
                self.free.push(key);
                Some(m)
            }
            None => {
                if self.is_gone(k) {
                    return None;
                }
                let m = self.base.mods.get(k)?.clone()?;
                if self.gone.is_empty() {
                    self.gone = vec![0; self.base_len().div_ceil(64)];
                }
                if let Some(w) = self.gone.get_mut(k / 64) {
                    *w |= 1 << (k % 64);
                    self.gone_count += 1;
                }
                Some(m)
            }
        }
    }

    /// [`ModTable::unlink`] of the live modifier with id `id`, found and taken out of the index
    /// in one probe when it is the overlay's (an effect expiring, an input replaced): returns
    /// its key and record.
    pub(super) fn unlink_id(&mut self, id: &str) -> Option<(ModKey, Modifier)> {
        let h = self.id_hash(id);
        let Self { own_ids, own, base_len, .. } = self;
        if let Some(key) = own_ids.remove(h, |k| Self::has_own_id(own, *base_len, k, id)) {
            // An overlay index entry names a live overlay slot (the module's invariants).
            let m = self.own.get_mut((key.0 as usize).wrapping_sub(self.base_len)).and_then(Option::take)?;
            self.free.push(key);
            return Some((key, m));
        }
        let key = self.key_of(id)?;
        Some((key, self.unlink(key)?))
    }

    /// Puts back a modifier [`ModTable::unlink_id`] or [`ModTable::unlink`] just took out (a
    /// removal refused after the lookup), with its key and id as they were.
    pub(super) fn relink(&mut self, key: ModKey, m: Modifier) {
        if self.is_own(key) {
            self.unfree(key);
            self.enter(&m.id, key);
        }
        self.put(key, m);
    }

    /// Folds the overlay into a new base shared by the copies made from now on. Keys do not
    /// change: the base's gone records become empty slots, the overlay's follow. O(modifiers),
    /// once; a no-op when there is no overlay.
    pub(super) fn freeze(&mut self) {
        if self.own.is_empty() && self.gone_count == 0 && self.free.is_empty() {
            return;
        }
        let mut base = std::mem::take(&mut self.base);
        let b = Arc::make_mut(&mut base);
        for (w, bits) in self.gone.iter().enumerate() {
            for bit in 0..64 {
                if bits & (1 << bit) != 0 {
                    let k = w * 64 + bit;
                    if let Some(Some(m)) = b.mods.get(k) {
                        b.ids.remove(&m.id);
                    }
                    if let Some(slot) = b.mods.get_mut(k) {
                        *slot = None;
                    }
                }
            }
        }
        b.ids.reserve(self.own_ids.len());
        let base_len = self.base_len;
        for (o, m) in self.own.iter().enumerate() {
            if let Some(m) = m {
                b.ids.insert(m.id.clone(), ModKey((base_len + o) as u32));
            }
        }
        self.own_ids.clear();
        b.mods.append(&mut self.own);
        self.base_len = b.mods.len();
        self.base = base;
        self.gone = Vec::new();
        self.gone_count = 0;
        // Freed overlay keys are now empty base slots, which stay holes (a base key is never
        // reused). They are few: what was removed before the sheet was made a source.
        self.free.clear();
    }

    /// Makes every record the overlay's (the base empty).
    fn thaw(&mut self) {
        let base = std::mem::take(&mut self.base);
        self.base_len = 0;
        let mut own: Vec<Option<Modifier>> = Vec::with_capacity(base.mods.len() + self.own.len());
        for (k, m) in base.mods.iter().enumerate() {
            let m = m.clone().filter(|_| !self.is_gone(k));
            if let Some(m) = &m {
                let h = self.id_hash(&m.id);
                self.own_ids.insert_unique(h, ModKey(k as u32));
            }
            own.push(m);
        }
        // The overlay's keys do not change (the base's come first, as before).
        own.append(&mut self.own);
        self.own = own;
        self.gone = Vec::new();
        self.gone_count = 0;
    }
}
