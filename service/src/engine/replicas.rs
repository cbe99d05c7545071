//! Several servers over one shared store (PostgreSQL): each caches the sheets and rulesets it
//! serves, and keeps them as the store has them.
//!
//! The store is the one truth; a server's cached sheet is a copy that may be behind it. So:
//! - **Before a sheet is used** — an Apply, a read, a Watch — the server asks the store for the
//!   sheet's head (one indexed read) and, when its copy is behind, plays the revisions it lacks
//!   from the log ([`Engine::catch_up`]), telling its watchers each one in order. Reads through
//!   any server therefore see every revision acknowledged before they started, whatever server
//!   made it: correctness does not depend on which server a request reaches.
//! - **An Apply** appends its revision only if the sheet's head is still the revision it played
//!   on (the store checks, in the append's transaction). Another server may append between the
//!   catch-up and the append: then this server catches up again and plays the step once more
//!   — or answers ABORTED when the client named the revision it expected, which has passed.
//! - **Changes other servers make** arrive from the store as [`StoreChange`]s
//!   ([`Engine::follow`], on a thread of its own): a sheet's new head (caught up at once, so
//!   its watchers here see the change), a sheet created (loaded) or deleted (dropped, its
//!   watchers told), a ruleset's new version (compiled from the content stored with it and
//!   swapped in), and after the store's connection was lost, a resync comparing everything.
//!   Every [`RESYNC_EVERY`] the follower also compares everything, in case a change went missing.
//! - A sheet or ruleset this server has not seen (created through another one a moment ago) is
//!   loaded from the store on first use.
//!
//! What it does not do: share a sheet's request-id memory (`request_id`) between servers, or
//! the checkpoints of history; each server keeps its own.

use super::rulesets::{RulesetEntry, Source, Version, compile_content};
use super::sheets::{LiveSheet, SheetState};
use super::watch::{Event, EventKind};
use super::{CHECKPOINT_EVERY, Engine, Resource, lock};
use crate::engine::error::EngineError;
use crate::store::{Logged, RulesetRecord, StoreChange};
use events::{Game, GameError};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How often the follower compares everything with the store, besides when told to.
pub const RESYNC_EVERY: Duration = Duration::from_secs(5);

/// Plays one logged revision on a game: the step again (its rules fire again, with the same
/// answers and rolls), or the batch's operations.
pub(super) fn play_logged(game: &mut Game, e: &Logged) -> Result<(), String> {
    let failed = |err: GameError| format!("revision {}: {err}", e.revision.number);
    match &e.step {
        Some(step) => game.apply(step).map(drop).map_err(failed),
        None => game.apply_ops(&e.revision.operations).map(drop).map_err(failed),
    }
}

impl Engine {
    /// A served sheet; over a shared store, one another server created is loaded on first use.
    pub(super) fn sheet_or_stored(&self, id: &str) -> Result<Arc<LiveSheet>, EngineError> {
        match self.sheet(id) {
            Err(EngineError::NotFound { .. }) if self.store.shared() => {
                self.load_stored(id)?.ok_or_else(|| EngineError::not_found(Resource::Sheet, id))
            }
            other => other,
        }
    }

    /// A served sheet as the store has it now (see the module docs).
    pub(super) fn fresh_sheet(&self, id: &str) -> Result<Arc<LiveSheet>, EngineError> {
        let sheet = self.sheet_or_stored(id)?;
        let mut st = sheet.state();
        if st.deleted {
            return Err(EngineError::not_found(Resource::Sheet, id));
        }
        self.catch_up(&sheet, &mut st)?;
        drop(st);
        Ok(sheet)
    }

    /// Brings a sheet's state to the store's head, under its lock: the revisions it lacks
    /// played in order and published; the whole log replayed when one of them moved to another
    /// ruleset version or the state is stale. A sheet the store no longer has is dropped
    /// (NOT_FOUND). Nothing to do over a store only this server writes, unless stale.
    pub(super) fn catch_up(&self, sheet: &LiveSheet, st: &mut SheetState) -> Result<(), EngineError> {
        let head = if self.store.shared() {
            match self.store.head(&sheet.id)? {
                Some(h) => h,
                None => {
                    self.drop_sheet(sheet, st);
                    return Err(EngineError::not_found(Resource::Sheet, &sheet.id));
                }
            }
        } else if st.stale {
            st.revision
        } else {
            return Ok(());
        };
        if st.stale {
            return self.reload(sheet, st);
        }
        if head < st.revision {
            // Its log is shorter than this copy: the sheet was deleted and made anew under the
            // same id. This copy is of the old one.
            self.drop_sheet(sheet, st);
            return Err(EngineError::Unavailable(format!(
                "sheet `{}` was deleted and created again through another server meanwhile: try again",
                sheet.id
            )));
        }
        if head == st.revision {
            return Ok(());
        }
        let log = self.store.log(&sheet.id, st.revision + 1, head, usize::MAX)?;
        if log.iter().any(|e| e.revision.ruleset_version != st.version || e.revision.moved_from.is_some()) {
            return self.reload(sheet, st);
        }
        for e in log {
            if let Err(why) = play_logged(&mut st.game, &e) {
                st.stale = true;
                return Err(EngineError::DataLoss(format!(
                    "sheet `{}` cannot follow its log: {why}",
                    sheet.id
                )));
            }
            st.revision = e.revision.number;
            if st.revision.is_multiple_of(CHECKPOINT_EVERY) {
                self.checkpoints.put(&sheet.id, st.revision, st.version, st.game.character());
            }
            publish(sheet, e);
        }
        Ok(())
    }

    /// Replays a sheet's whole log into its state, on the version its last revision was made
    /// with, and publishes the revisions the state did not have.
    fn reload(&self, sheet: &LiveSheet, st: &mut SheetState) -> Result<(), EngineError> {
        let log = crate::store::log_all(&*self.store, &sheet.id, 0, u64::MAX)?;
        let Some(last) = log.last() else {
            return Err(EngineError::DataLoss(format!("sheet `{}` has no revisions", sheet.id)));
        };
        let (revision, version) = (last.revision.number, last.revision.ruleset_version);
        let book = self.ruleset_at(&sheet.ruleset, version)?;
        let game =
            self.replay_checkpointed(&sheet.id, book, version, &log).map_err(EngineError::precondition)?;
        let had = st.revision;
        st.game = game;
        st.version = version;
        st.revision = revision;
        st.stale = false;
        for e in log.into_iter().filter(|e| e.revision.number > had) {
            publish(sheet, e);
        }
        Ok(())
    }

    /// Loads a sheet another server created (its record and log from the store) and serves it;
    /// `None` when the store has no such sheet.
    fn load_stored(&self, id: &str) -> Result<Option<Arc<LiveSheet>>, EngineError> {
        let Some(record) = self.store.sheet_record(id)? else { return Ok(None) };
        // Its ruleset may be new here too.
        if !self.read_rulesets().contains_key(&record.ruleset_id) {
            self.refresh_ruleset(&record.ruleset_id)?;
        }
        if let Ok(s) = self.sheet(id) {
            // Loaded meanwhile, by the follower or another call.
            return Ok(Some(s));
        }
        self.restore_sheet(&record)?;
        self.sheet(id).map(Some)
    }

    /// Stops serving a sheet the store no longer has; its watchers get a final `deleted`.
    fn drop_sheet(&self, sheet: &LiveSheet, st: &mut SheetState) {
        if st.deleted {
            return;
        }
        st.deleted = true;
        self.write_sheets().remove(&sheet.id);
        self.checkpoints.forget(&sheet.id);
        let _ = sheet.events.send(Arc::new(Event { revision: st.revision, kind: EventKind::Deleted }));
    }

    /// Serves the version of ruleset `id` the store holds, when it is newer than the one here
    /// (or the ruleset is new here): compiled from the content stored with that version.
    pub(super) fn refresh_ruleset(&self, id: &str) -> Result<(), EngineError> {
        let record = self.stored_ruleset(id)?;
        let Some(record) = record else { return Ok(()) };
        let entry = self.read_rulesets().get(id).cloned();
        if entry.as_ref().is_some_and(|e| e.current.load().version >= record.version) {
            return Ok(());
        }
        let content = self.store.ruleset_version(id, record.version)?.ok_or_else(|| {
            EngineError::DataLoss(format!(
                "version {} of ruleset `{id}` has no stored content",
                record.version
            ))
        })?;
        let book = Arc::new(
            compile_content(id, &content)
                .map_err(|d| EngineError::precondition(super::error::ruleset_summary(id, &d)))?,
        );
        let version = Version { version: record.version, book };
        match entry {
            Some(e) => {
                *lock(&e.source) = source_of(&record);
                e.current.store(Arc::new(version));
            }
            None => {
                let entry = Arc::new(RulesetEntry {
                    id: id.to_owned(),
                    source: Mutex::new(source_of(&record)),
                    current: arc_swap::ArcSwap::from_pointee(version),
                    earlier: Mutex::default(),
                });
                self.rulesets
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(id.to_owned(), entry);
            }
        }
        tracing::info!(ruleset = %id, version = record.version, "ruleset version from another server");
        Ok(())
    }

    /// The store's record of ruleset `id`.
    fn stored_ruleset(&self, id: &str) -> Result<Option<RulesetRecord>, EngineError> {
        for r in self.store.rulesets()? {
            match r {
                Ok(r) if r.id == id => return Ok(Some(r)),
                Err((rid, e)) if rid == id => return Err(e.into()),
                _ => {}
            }
        }
        Ok(None)
    }

    /// Follows the changes other servers make to a shared store, on a thread of its own, for
    /// as long as the engine lives; nothing for a store only this server writes.
    pub fn follow(self: &Arc<Self>) -> Option<std::thread::JoinHandle<()>> {
        let changes = self.store.changes()?;
        let engine: Weak<Engine> = Arc::downgrade(self);
        let spawned = std::thread::Builder::new().name("sheetd-follow".to_owned()).spawn(move || {
            loop {
                let change = match changes.recv_timeout(RESYNC_EVERY) {
                    Ok(c) => c,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => StoreChange::Resync,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                };
                let Some(engine) = engine.upgrade() else { return };
                if let Err(e) = engine.on_change(change.clone()) {
                    tracing::warn!(?change, error = %e, "following the store: not applied; compared again later");
                }
            }
        });
        match spawned {
            Ok(h) => Some(h),
            Err(e) => {
                tracing::error!(error = %e, "cannot start following the store; sheets catch up when used");
                None
            }
        }
    }

    /// Applies one change another server made.
    fn on_change(&self, change: StoreChange) -> Result<(), EngineError> {
        match change {
            StoreChange::Sheet { id, revision } => self.follow_sheet(&id, Some(revision)),
            StoreChange::Deleted { id } => {
                // Dropped even when the id is taken again already (deleted, then created anew
                // through another server): that is another sheet, loaded when next used.
                if let Ok(sheet) = self.sheet(&id) {
                    self.drop_sheet(&sheet, &mut sheet.state());
                }
                Ok(())
            }
            StoreChange::Ruleset { id, .. } => self.refresh_ruleset(&id),
            StoreChange::Resync => self.compare_with_store(),
        }
    }

    /// A sheet another server changed: caught up (loaded, when new here) if it is behind.
    fn follow_sheet(&self, id: &str, head: Option<u64>) -> Result<(), EngineError> {
        match self.sheet(id) {
            Ok(sheet) => {
                let mut st = sheet.state();
                if !st.deleted && head.is_none_or(|h| h > st.revision) {
                    self.catch_up(&sheet, &mut st)?;
                }
                Ok(())
            }
            Err(EngineError::NotFound { .. }) => self.load_stored(id).map(drop),
            // Kept as unservable (damaged, or its ruleset missing): nothing to follow.
            Err(_) => Ok(()),
        }
    }

    /// Compares everything with the store: every sheet's head, sheets created or deleted
    /// elsewhere, every ruleset's version.
    fn compare_with_store(&self) -> Result<(), EngineError> {
        for r in self.store.rulesets()? {
            if let Ok(r) = r
                && self.read_rulesets().get(&r.id).is_none_or(|e| e.current.load().version < r.version)
                && let Err(e) = self.refresh_ruleset(&r.id)
            {
                tracing::warn!(ruleset = %r.id, error = %e, "cannot take another server's ruleset version");
            }
        }
        let heads = self.store.heads()?;
        let stored: std::collections::HashSet<&str> = heads.iter().map(|(id, _)| id.as_str()).collect();
        let gone: Vec<Arc<LiveSheet>> =
            self.read_sheets().values().filter(|s| !stored.contains(s.id.as_str())).cloned().collect();
        for sheet in gone {
            let mut st = sheet.state();
            // Checked again: created here since the heads were read.
            if matches!(self.store.head(&sheet.id), Ok(None)) {
                self.drop_sheet(&sheet, &mut st);
            }
        }
        for (id, head) in heads {
            if let Err(e) = self.follow_sheet(&id, Some(head)) {
                tracing::warn!(sheet = %super::policy::LogSafe(&id), error = %e, "cannot follow a sheet");
            }
        }
        Ok(())
    }
}

/// Tells a sheet's watchers about a revision.
fn publish(sheet: &LiveSheet, e: Logged) {
    if sheet.events.receiver_count() > 0 {
        let event = Event { revision: e.revision.number, kind: EventKind::Changes(e.changes) };
        let _ = sheet.events.send(Arc::new(event));
    }
}

/// Where a ruleset loads from, as its record says.
fn source_of(r: &RulesetRecord) -> Source {
    if !r.inline_text.is_empty() {
        Source::Inline(r.inline_text.clone())
    } else if r.paths.is_empty() {
        Source::Builtin
    } else {
        Source::Paths { paths: r.paths.iter().map(std::path::PathBuf::from).collect(), confined: r.confined }
    }
}
