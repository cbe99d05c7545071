//! A sheet's values: the one part of a sheet that is its own. Everything else — variables,
//! modifiers, the dependency graph, the plan — is the sheet's [`Shape`](super::Shape), shared
//! by every copy of the sheet until one of them changes its structure.
//!
//! **Representation.** Values are indexed by node. A whole number of scale 0 that fits in an
//! `i64` (nearly every value of game data) is stored in `ints`, 8 bytes; any other value — a
//! fraction, a number with a scale, a string, a boolean, an array, a custom value, an error —
//! is stored in `other`, and `ints` holds [`NOT_WHOLE`] for it. A 2,000-variable sheet of whole
//! numbers holds 16 KB of values.
//!
//! **Invariants.**
//! - A live variable has exactly one value: `ints[i] != NOT_WHOLE` (the value is that integer,
//!   scale 0) and `i` is not in `other`; or `ints[i] == NOT_WHOLE` and `other[i]` is the value.
//!   Every write goes through [`Values::set`] or [`Values::set_num`], which keep this.
//! - Outside a recomputation, no variable is queued (`queued` is all zeros): every variable
//!   queued is dequeued before the recomputation ends.

use super::Slot;
use crate::Map;
use formula::{Num, Value};
use std::sync::Arc;

/// Marks a value in [`Values::ints`] that is not a whole `i64` (`i64::MIN` itself is also
/// stored in `other`: it then just takes the general path).
pub(super) const NOT_WHOLE: i64 = i64::MIN;

/// The values of one sheet, by node index (see the module docs).
#[derive(Debug, Default)]
pub(super) struct Values {
    /// Each variable's value when it is a whole `i64` of scale 0, else [`NOT_WHOLE`].
    ints: Vec<i64>,
    /// Every other value.
    other: Map<u32, Slot>,
    /// The recomputation's queue: which variables are queued, one bit each.
    queued: Vec<u64>,
    /// The recomputation's buckets, by level (reused between runs; empty outside one).
    pub(super) buckets: Vec<Vec<u32>>,
    /// How many variables the last recomputation changed: the next report's starting capacity.
    pub(super) changed_hint: usize,
    /// For native code (`plan/native.rs`), allocated on its first run: which variables are to
    /// be evaluated (all zeros outside a run), and the run's change log.
    pending: Vec<u8>,
    pub(super) log: Vec<[i64; 3]>,
}

impl Clone for Values {
    /// The values and the queue; a recomputation's scratch (buckets, native buffers) starts
    /// empty in the copy, which allocates its own when it first needs them.
    fn clone(&self) -> Values {
        Values {
            // Room to grow: a copy of a sheet is usually made to change it (a new character
            // from a ruleset's starting one), and new instances add variables.
            ints: super::plan::with_room(&self.ints),
            other: self.other.clone(),
            queued: self.queued.clone(),
            buckets: Vec::new(),
            changed_hint: self.changed_hint,
            pending: Vec::new(),
            log: Vec::new(),
        }
    }
}

impl Values {
    /// Makes room for variables with indexes below `bound`.
    pub(super) fn reserve(&mut self, bound: usize) {
        self.ints.reserve(bound.saturating_sub(self.ints.len()));
        self.queued.reserve(bound.div_ceil(64).saturating_sub(self.queued.len()));
    }

    /// Makes room for node index `i`.
    pub(super) fn grow(&mut self, i: usize) {
        if self.ints.len() <= i {
            self.ints.resize(i + 1, NOT_WHOLE);
            self.queued.resize(self.ints.len().div_ceil(64), 0);
        }
    }

    /// The buffers native code runs on (see `Native::run`), with room for `span` variables;
    /// with `log`, a change log with room for each (else one entry: a full solve reports
    /// nothing, and a copy that is only solved holds no log).
    pub(super) fn native_buffers(&mut self, span: usize, log: bool) -> super::plan::Buffers {
        if span > 0 {
            self.grow(span - 1);
        }
        if self.pending.len() < span {
            self.pending.resize(span, 0);
        }
        let entries = if log { span.max(1) } else { 1 };
        if self.log.len() < entries {
            self.log.resize(entries, [0, 0, 0]);
        }
        super::plan::Buffers {
            ints: self.ints.as_mut_ptr(),
            pending: self.pending.as_mut_ptr(),
            log: self.log.as_mut_ptr(),
            log_mask: if log { u64::MAX } else { 0 },
        }
    }

    /// Marks variable `i` to be evaluated by a native run (its buffers exist).
    #[inline(always)]
    pub(super) fn mark_pending(&mut self, i: usize) {
        if let Some(p) = self.pending.get_mut(i) {
            *p = 1;
        }
    }

    /// Marks every variable to be evaluated by a native run, or (`false`) none.
    pub(super) fn mark_all_pending(&mut self, marked: bool) {
        self.pending.fill(u8::from(marked));
    }

    /// Every whole value replaced by another whole number (for tests).
    #[cfg(test)]
    pub(super) fn scramble(&mut self) {
        for x in &mut self.ints {
            if *x != NOT_WHOLE {
                *x = x.wrapping_mul(31).wrapping_add(1_234_567).max(NOT_WHOLE + 1);
            }
        }
    }

    /// The value of variable `i` (`None`: no variable there).
    pub(super) fn get(&self, i: usize) -> Option<Slot> {
        match *self.ints.get(i)? {
            NOT_WHOLE => self.other.get(&(i as u32)).cloned(),
            x => Some(Ok(Value::Number(Num::Int(x).to_decimal()))),
        }
    }

    /// Variable `i`'s value as a number, if it is one.
    #[inline]
    pub(super) fn num(&self, i: usize) -> Option<Num> {
        match *self.ints.get(i)? {
            NOT_WHOLE => match self.other.get(&(i as u32))? {
                Ok(Value::Number(d)) => Some(Num::from_decimal(*d)),
                _ => None,
            },
            x => Some(Num::Int(x)),
        }
    }

    /// Variable `i`'s value when it is a whole `i64`.
    #[inline(always)]
    pub(super) fn int(&self, i: usize) -> Option<i64> {
        self.ints.get(i).copied().filter(|x| *x != NOT_WHOLE)
    }

    /// Variable `i`'s value when it is not a whole `i64`: the slot itself, not a copy (a copy
    /// of a text or custom value takes counts on what it shares).
    pub(super) fn other_ref(&self, i: usize) -> Option<&Slot> {
        match self.ints.get(i) {
            Some(&NOT_WHOLE) => self.other.get(&(i as u32)),
            _ => None,
        }
    }

    /// Variable `i`'s error, if its value is one.
    pub(super) fn error(&self, i: usize) -> Option<&Arc<super::ValueError>> {
        match self.ints.get(i) {
            Some(&NOT_WHOLE) => self.other.get(&(i as u32))?.as_ref().err(),
            _ => None,
        }
    }

    /// Stores `slot` as variable `i`'s value.
    pub(super) fn set(&mut self, i: usize, slot: Slot) {
        if let Ok(Value::Number(d)) = &slot
            && let Num::Int(x) = Num::from_decimal(*d)
        {
            self.set_num(i, Num::Int(x));
            return;
        }
        self.grow(i);
        self.ints[i] = NOT_WHOLE;
        self.other.insert(i as u32, slot);
    }

    /// Stores the number `num` as variable `i`'s value.
    #[inline(always)]
    pub(super) fn set_num(&mut self, i: usize, num: Num) {
        match num {
            Num::Int(x) if x != NOT_WHOLE => {
                let Some(slot) = self.ints.get_mut(i) else {
                    self.grow(i);
                    self.ints[i] = x;
                    return;
                };
                if *slot == NOT_WHOLE {
                    self.other.remove(&(i as u32));
                }
                *slot = x;
            }
            num => {
                self.grow(i);
                self.ints[i] = NOT_WHOLE;
                self.other.insert(i as u32, Ok(Value::Number(num.to_decimal())));
            }
        }
    }

    /// Forgets variable `i`'s value (its variable was removed).
    pub(super) fn clear(&mut self, i: usize) {
        if let Some(slot) = self.ints.get_mut(i) {
            *slot = NOT_WHOLE;
            self.other.remove(&(i as u32));
        }
    }

    /// Whether variable `i` currently holds the number `num` (`3` and `3.0` are the same).
    #[inline(always)]
    pub(super) fn holds(&self, i: usize, num: Num) -> bool {
        match (num, self.ints.get(i)) {
            (Num::Int(x), Some(&y)) if y != NOT_WHOLE => x == y,
            (_, Some(&NOT_WHOLE)) => match self.other.get(&(i as u32)) {
                Some(Ok(Value::Number(d))) => *d == num.to_decimal(),
                _ => false,
            },
            (num, Some(&y)) => num.to_decimal() == Num::Int(y).to_decimal(),
            (_, None) => false,
        }
    }

    /// Whether variable `i` holds exactly the whole number `x` (same value and representation).
    #[inline(always)]
    pub(super) fn holds_whole(&self, i: usize, x: i64) -> bool {
        x != NOT_WHOLE && self.ints.get(i) == Some(&x)
    }

    /// Queues variable `i`, unless it is queued; returns whether it was queued now.
    #[inline(always)]
    pub(super) fn queue(&mut self, i: usize) -> bool {
        let Some(word) = self.queued.get_mut(i / 64) else { return false };
        let bit = 1u64 << (i % 64);
        let fresh = *word & bit == 0;
        *word |= bit;
        fresh
    }

    /// Prefetches variable `i`'s value and queue bit.
    #[inline(always)]
    pub(super) fn prefetch(&self, i: usize) {
        if let Some(v) = self.ints.get(i) {
            super::plan::prefetch(v);
        }
        if let Some(w) = self.queued.get(i / 64) {
            super::plan::prefetch(w);
        }
    }

    /// Takes variable `i` out of the queue; returns whether it was queued.
    #[inline(always)]
    pub(super) fn take_queued(&mut self, i: usize) -> bool {
        let Some(word) = self.queued.get_mut(i / 64) else { return false };
        let bit = 1u64 << (i % 64);
        let was = *word & bit != 0;
        *word &= !bit;
        was
    }

    /// Variable `i` left the queue.
    #[inline(always)]
    pub(super) fn dequeue(&mut self, i: usize) {
        if let Some(word) = self.queued.get_mut(i / 64) {
            *word &= !(1u64 << (i % 64));
        }
    }

    /// About how many bytes the values hold.
    pub(super) fn footprint(&self) -> usize {
        self.ints.capacity() * 8
            + self.queued.capacity() * 8
            + self.other.capacity() * (std::mem::size_of::<(u32, Slot)>() + 1)
            + self.buckets.iter().map(|b| 24 + 4 * b.capacity()).sum::<usize>()
            + self.pending.capacity()
            + self.log.capacity() * 24
    }
}
