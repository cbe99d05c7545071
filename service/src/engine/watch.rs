//! Change events: what a watcher of a sheet receives, and where a watch starts.
//!
//! Every accepted revision is published once, unfiltered, on the sheet's bounded broadcast
//! channel; each watcher filters what it receives. A watcher that falls behind the buffer gets a
//! [`EventKind::Resync`] with the values now instead of what it missed (the stream loop is in
//! `grpc/api.rs`). A watcher resuming from a revision first gets the logged revisions since,
//! read from the store a chunk at a time ([`Engine::replay_chunk`]).

use super::Engine;
use super::error::EngineError;
use super::sheets::LiveSheet;
use data::record::{self, Change, Variable};
use std::sync::Arc;
use tokio::sync::broadcast;

/// One event of a sheet.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub revision: u64,
    pub kind: EventKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EventKind {
    /// The changes one revision made.
    Changes(Vec<Change>),
    /// The watcher fell behind: every (filtered) value now.
    Resync { reason: String, values: Vec<Variable> },
    /// The sheet was deleted; the stream ends.
    Deleted,
}

/// Which variables a watcher is about: all, or references matched case-insensitively.
#[derive(Clone, Debug, Default)]
pub struct Filter(Vec<String>);

impl Filter {
    pub fn new(refs: &[String]) -> Filter {
        Filter(refs.iter().map(|r| r.to_ascii_lowercase()).collect())
    }

    pub fn matches(&self, r: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|f| f.eq_ignore_ascii_case(r))
    }

    /// A `changes` event narrowed to the filter; `None` when nothing in it matches (or it is
    /// another kind of event).
    pub fn changes_event(&self, ev: &Event) -> Option<Event> {
        let EventKind::Changes(c) = &ev.kind else { return None };
        let changes: Vec<Change> = c.iter().filter(|c| self.matches(&c.var)).cloned().collect();
        (!changes.is_empty()).then_some(Event { revision: ev.revision, kind: EventKind::Changes(changes) })
    }
}

/// A new watcher's start: the sheet, its event receiver, the revision at subscription, and the
/// logged revisions to replay first.
pub struct Subscription {
    pub sheet: Arc<LiveSheet>,
    pub rx: broadcast::Receiver<Arc<Event>>,
    /// Revisions `replay.start..=replay.end` are to be replayed; empty when none.
    pub replay: std::ops::RangeInclusive<u64>,
    pub current: u64,
}

impl Engine {
    /// Subscribes to a sheet's events; with `from`, the revisions after `from` up to the one at
    /// subscription are to be replayed first (later ones arrive on the receiver).
    pub fn watch(&self, id: &str, from: Option<u64>) -> Result<Subscription, EngineError> {
        let sheet = self.fresh_sheet(id)?;
        let (rx, current) = {
            let st = sheet.state();
            (sheet.events.subscribe(), st.revision)
        };
        let replay = match from {
            Some(from) if from > current => {
                return Err(EngineError::OutOfRange(format!(
                    "sheet `{id}` is at revision {current}; cannot resume from {from}"
                )));
            }
            Some(from) => from + 1..=current,
            #[allow(clippy::reversed_empty_ranges, reason = "an empty range: nothing to replay")]
            None => 1..=0,
        };
        Ok(Subscription { sheet, rx, replay, current })
    }

    /// Up to `max` logged revisions of a sheet from `from` through `to`, as change events.
    pub fn replay_chunk(&self, id: &str, from: u64, to: u64, max: usize) -> Result<Vec<Event>, EngineError> {
        let log = self.store.log(id, from, to, max)?;
        Ok(log
            .into_iter()
            .map(|e| Event { revision: e.revision.number, kind: EventKind::Changes(e.changes) })
            .collect())
    }

    /// A resync event: the sheet's current (filtered) values.
    pub fn resync(&self, sheet: &LiveSheet, filter: &Filter, reason: &str) -> Event {
        let st = sheet.state();
        let values =
            record::values(st.game.character()).into_iter().filter(|v| filter.matches(&v.var)).collect();
        Event { revision: st.revision, kind: EventKind::Resync { reason: reason.to_owned(), values } }
    }
}
