//! Sheet states at past revisions, where replays of history start.

use super::lock;
use data::Character;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// About how much memory checkpoints may hold, over all sheets (the least recently used go).
const CHECKPOINT_BUDGET: usize = 16 << 20;

/// Sheet states at past revisions (a clone of the character as it was after revision r, with the
/// ruleset version of revision r), so that replaying history starts near where it is asked for.
/// Made by restores at start, by replays, and by Apply every [`super::CHECKPOINT_EVERY`] revisions; in
/// memory only (a restart's restore makes them again), within [`CHECKPOINT_BUDGET`] bytes by the
/// solver's estimate.
#[derive(Default)]
pub struct Checkpoints {
    inner: Mutex<CheckpointMap>,
}

#[derive(Default)]
struct CheckpointMap {
    /// By (sheet, revision).
    map: HashMap<(String, u64), Checkpoint>,
    bytes: usize,
    clock: u64,
}

struct Checkpoint {
    version: u64,
    state: Arc<Character>,
    /// The state's size estimate.
    bytes: usize,
    last_use: u64,
}

impl Checkpoints {
    pub fn put(&self, sheet: &str, revision: u64, version: u64, c: &Character) {
        let mut c = c.clone();
        c.record_evaluations(false);
        let size = c.sheet().footprint();
        if size > CHECKPOINT_BUDGET / 4 {
            return;
        }
        let mut m = lock(&self.inner);
        m.clock += 1;
        let now = m.clock;
        while m.bytes + size > CHECKPOINT_BUDGET {
            let Some(oldest) = m.map.iter().min_by_key(|(_, v)| v.last_use).map(|(k, _)| k.clone()) else {
                break;
            };
            if let Some(gone) = m.map.remove(&oldest) {
                m.bytes -= gone.bytes;
            }
        }
        let checkpoint = Checkpoint { version, state: Arc::new(c), bytes: size, last_use: now };
        if let Some(old) = m.map.insert((sheet.to_owned(), revision), checkpoint) {
            m.bytes -= old.bytes;
        }
        m.bytes += size;
    }

    /// The latest checkpoint of `sheet` at or before `revision`: (revision, version, state).
    pub fn before(&self, sheet: &str, revision: u64) -> Option<(u64, u64, Character)> {
        let mut m = lock(&self.inner);
        m.clock += 1;
        let now = m.clock;
        let key =
            m.map.keys().filter(|(s, r)| s == sheet && *r <= revision).max_by_key(|(_, r)| *r).cloned()?;
        let entry = m.map.get_mut(&key)?;
        entry.last_use = now;
        Some((key.1, entry.version, (*entry.state).clone()))
    }

    pub fn forget(&self, sheet: &str) {
        let mut m = lock(&self.inner);
        let mut freed = 0;
        m.map.retain(|(s, _), v| {
            let keep = s != sheet;
            if !keep {
                freed += v.bytes;
            }
            keep
        });
        m.bytes -= freed;
    }
}
