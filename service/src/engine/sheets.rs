//! Live sheets: create, apply, upgrade, delete.
//!
//! Each sheet has one writer at a time: its state sits behind a mutex, held for the whole of a
//! change, including the durable write, so revisions are written in order. A change is
//! `Engine::migrate` (move to the ruleset's current version, if it moved on) then
//! `Engine::apply_and_log` (apply the operations, write the revision, publish the event).

use super::error::{Code, EngineError, Problem, Resource};
use super::rulesets::RulesetEntry;
use super::watch::{Event, EventKind};
use super::{CHECKPOINT_EVERY, Engine, lock, policy};
use crate::store::{Logged, SNAPSHOT_EVERY, SheetRecord, Snapshot, StoreError};
use data::history::Revision;
use data::record::{self, Change, Variable};
use data::{Expired, SheetOp};
use events::{Fired, Game, GameError, Pending, Step};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

/// A sheet the daemon serves.
pub struct LiveSheet {
    pub id: String,
    pub ruleset: Arc<RulesetEntry>,
    state: Mutex<SheetState>,
    /// Every accepted revision's changes (unfiltered), and a final `deleted` event.
    pub events: broadcast::Sender<Arc<Event>>,
}

/// What one writer at a time may change.
pub(super) struct SheetState {
    /// The character, played under the rule book of `version`: its rules' uses and the
    /// question pending, if one is.
    pub game: Game,
    /// The ruleset version `game` uses.
    pub version: u64,
    pub revision: u64,
    pub deleted: bool,
    /// The last [`RECENT_REQUESTS`] Applies that carried a request id, oldest first, with
    /// their answers: a retry gets the first answer back instead of applying again.
    pub recent: VecDeque<Answered>,
    /// The game may hold a step the store did not take (its write failed, and so did reading
    /// the log back): it is replayed from the store before its next use.
    pub stale: bool,
}

/// How many request-id'd Applies a sheet remembers (docs/api.md, `request_id`).
pub const RECENT_REQUESTS: usize = 32;

/// An Apply's identity for safe retries: the client's request id, and a fingerprint of its
/// operations (the same id with other operations is refused, not answered).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestKey {
    pub id: String,
    pub fingerprint: u64,
}

/// An Apply a sheet remembers by its request id.
pub struct Answered {
    key: RequestKey,
    applied: Applied,
}

/// What a sheet is, for listings.
#[derive(Clone, Debug)]
pub struct SheetInfo {
    pub id: String,
    pub ruleset_id: String,
    /// The ruleset version the sheet's values are computed with.
    pub ruleset_version: u64,
    pub revision: u64,
    /// Instance ids of the objects the sheet has, sorted.
    pub objects: Vec<String>,
    /// The question a rule asked that waits for a `choose` or `roll`.
    pub pending: Option<Pending>,
    /// What is on it (GetSheet's answer; not ListSheets').
    pub contents: Option<Contents>,
}

/// What a sheet holds, as a front end lists it: its objects, and the channels set.
#[derive(Clone, Debug, Default)]
pub struct Contents {
    /// In the order they were added.
    pub objects: Vec<data::Placed>,
    /// Inputs, clocks and stocks with their values, by reference.
    pub channels: Vec<(String, data::ChannelKind, record::Value)>,
}

/// A move to another version of the sheet's ruleset.
#[derive(Clone, Debug, PartialEq)]
pub struct Moved {
    pub from_version: u64,
    pub to_version: u64,
    /// What moving changed, before the request's operations.
    pub changes: Vec<Change>,
}

/// What an accepted change did.
#[derive(Clone, Debug, Default)]
pub struct Applied {
    pub revision: u64,
    /// Changed variables, old → new, in topological order.
    pub changes: Vec<Change>,
    /// How many variables were recomputed.
    pub recomputed: usize,
    pub moved: Option<Moved>,
    /// The effects its clock moves expired.
    pub expired: Vec<Expired>,
    /// For an emit, choose or roll: the rules that fired, in order (each with its origin, and
    /// its error when its batch failed).
    pub fired: Vec<Fired>,
    /// The question the step ended on, waiting for an answer.
    pub pending: Option<Pending>,
    /// Why the step's cascade stopped before its end (`events.cascade_loop`, with the chain).
    pub stopped: Option<GameError>,
}

/// A trace, with for each of its steps when the effect that brought the modifier expires
/// (`Turn passes 3`, or empty).
pub type ExpiringTrace = (solver::Trace, Vec<String>);

/// What a step did to a game, ready to be logged.
#[derive(Default)]
struct Played {
    /// The revision's operations: the batch, or the operations the step's rules applied.
    operations: Vec<SheetOp>,
    /// The step, when it was an emit, choose or roll.
    step: Option<Step>,
    changes: Vec<Change>,
    recomputed: usize,
    expired: Vec<Expired>,
    fired: Vec<Fired>,
    pending: Option<Pending>,
    stopped: Option<GameError>,
}

/// Plays one step on a game; a refused step changes nothing.
fn play(game: &mut Game, step: Step) -> Result<Played, EngineError> {
    match step {
        Step::Ops(ops) => {
            let report = game.apply_ops(&ops).map_err(|e| EngineError::game(&e, &ops))?;
            Ok(Played {
                changes: record::changes(&report, game.character().sheet()),
                recomputed: report.recomputed,
                expired: game.character().expired().to_vec(),
                operations: ops,
                ..Played::default()
            })
        }
        step => {
            let r = game.apply(&step).map_err(|e| EngineError::game(&e, &[]))?;
            Ok(Played {
                operations: r.applied,
                step: Some(step),
                changes: record::named_changes(&r.changed),
                recomputed: r.recomputed,
                expired: r.expired,
                fired: r.fired,
                pending: r.pending,
                stopped: r.stopped,
            })
        }
    }
}

/// An id reserved by a create in progress; released when dropped (created or failed).
struct Reservation<'e> {
    engine: &'e Engine,
    id: String,
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        lock(&self.engine.creating).remove(&self.id);
    }
}

impl LiveSheet {
    pub(super) fn new(
        id: &str,
        ruleset: Arc<RulesetEntry>,
        state: SheetState,
        watch_buffer: usize,
    ) -> Arc<LiveSheet> {
        let (events, _) = broadcast::channel(watch_buffer.max(1));
        Arc::new(LiveSheet { id: id.to_owned(), ruleset, state: Mutex::new(state), events })
    }

    pub(super) fn state(&self) -> MutexGuard<'_, SheetState> {
        lock(&self.state)
    }

    /// The state, unless the sheet was deleted meanwhile.
    fn live_state(&self) -> Result<MutexGuard<'_, SheetState>, EngineError> {
        let st = self.state();
        if st.deleted {
            return Err(EngineError::not_found(Resource::Sheet, &self.id));
        }
        Ok(st)
    }

    /// What the sheet is now.
    pub fn info(&self) -> SheetInfo {
        let st = self.state();
        let mut objects: Vec<String> =
            st.game.character().object_ids().iter().map(|o| o.to_string()).collect();
        objects.sort();
        SheetInfo {
            id: self.id.clone(),
            ruleset_id: self.ruleset.id.clone(),
            ruleset_version: st.version,
            revision: st.revision,
            objects,
            pending: st.game.pending().cloned(),
            contents: None,
        }
    }
}

impl Engine {
    /// Creates a sheet on a ruleset (the default one for an empty id), playing `step` (a batch
    /// of operations, or a game step) as its revision 0; the id is generated when not given.
    /// Returns the sheet and every value.
    pub fn create_sheet(
        &self,
        ruleset_id: &str,
        id: Option<&str>,
        step: impl Into<Step>,
    ) -> Result<(SheetInfo, Vec<Variable>), EngineError> {
        let step = step.into();
        let ruleset = self.ruleset_entry(ruleset_id)?;
        policy::check_step(&step, &self.limits.ops)?;
        self.check_room(self.read_sheets().len())?;
        let id = match id {
            Some(id) => {
                policy::check_id("sheet", id)?;
                id.to_owned()
            }
            None => self.generated_id()?,
        };
        let loaded = ruleset.current.load_full();
        let mut game = Game::new(loaded.book.clone()).map_err(|e| EngineError::game(&e, &[]))?;
        let played = play(&mut game, step)?;
        let values = record::values(game.character());
        let reservation = self.reserve(&id)?;
        let first = Logged {
            revision: Revision {
                number: 0,
                ruleset_version: loaded.version,
                operations: played.operations,
                moved_from: None,
            },
            changes: played.changes,
            step: played.step,
        };
        let record = SheetRecord { id: id.clone(), ruleset_id: ruleset.id.clone() };
        let snapshot = Snapshot { revision: 0, values: values.clone() };
        self.store.create_sheet(&record, &first, &snapshot).map_err(|e| match e {
            StoreError::Conflict(m) => EngineError::already_exists(Resource::Sheet, &id, m),
            e => e.into(),
        })?;
        let state = SheetState {
            game,
            version: loaded.version,
            revision: 0,
            deleted: false,
            recent: VecDeque::new(),
            stale: false,
        };
        let sheet = LiveSheet::new(&id, ruleset, state, self.limits.watch_buffer);
        let info = sheet.info();
        // The follower may have loaded it from the store meanwhile (this server's own
        // notification): the same revision 0, and possibly watched already.
        self.serve(sheet);
        drop(reservation);
        Ok((info, values))
    }

    /// A generated id (`sheet-N`), skipping numbers a client already took as explicit ids.
    fn generated_id(&self) -> Result<String, EngineError> {
        loop {
            let id = format!("sheet-{}", self.store.next_sheet_number()?);
            if !self.read_sheets().contains_key(&id) && !self.store.has_sheet(&id)? {
                return Ok(id);
            }
        }
    }

    /// Reserves an id (and a place under --max-sheets) under the lock, so that the durable
    /// write happens without it: readers of other sheets never wait for a create's fsync.
    fn reserve(&self, id: &str) -> Result<Reservation<'_>, EngineError> {
        let sheets = self.write_sheets();
        let mut creating = lock(&self.creating);
        // Checked again under the lock: concurrent creates cannot pass the limit together.
        self.check_room(sheets.len() + creating.len())?;
        // A stored sheet that cannot be served is not in memory, but its id is taken.
        if sheets.contains_key(id) || creating.contains(id) || self.store.has_sheet(id)? {
            return Err(EngineError::already_exists(
                Resource::Sheet,
                id,
                format!("sheet `{id}` already exists"),
            ));
        }
        creating.insert(id.to_owned());
        Ok(Reservation { engine: self, id: id.to_owned() })
    }

    /// Whether one more sheet fits under `--max-sheets`, given how many there are.
    fn check_room(&self, held: usize) -> Result<(), EngineError> {
        if held >= self.limits.max_sheets {
            return Err(EngineError::Exhausted(format!(
                "the server holds its limit of {} sheets (--max-sheets)",
                self.limits.max_sheets
            )));
        }
        Ok(())
    }

    /// What a sheet is now, with what is on it.
    pub fn sheet_info(&self, id: &str) -> Result<SheetInfo, EngineError> {
        let sheet = self.fresh_sheet(id)?;
        let mut info = sheet.info();
        let st = sheet.state();
        let c = st.game.character();
        let channels = c
            .channels()
            .into_iter()
            .filter_map(|(r, kind)| {
                let (_, format, slot) = c.sheet().typed_value(&r).ok()?;
                Some((r, kind, record::Value::of(&format, &slot)))
            })
            .collect();
        info.contents = Some(Contents { objects: c.objects(), channels });
        Ok(info)
    }

    /// A page of the served sheets by id: those on ruleset `ruleset` (any when empty) whose id
    /// starts with `prefix`, after the one `page_token` names (see [`super::catalog::paged`]);
    /// the next page's token and how many pass. Only the page's sheets are read.
    pub fn sheets_page(
        &self,
        ruleset: &str,
        prefix: &str,
        page_size: usize,
        page_token: &str,
    ) -> Result<(Vec<SheetInfo>, String, usize), EngineError> {
        let mut all: Vec<Arc<LiveSheet>> = self
            .read_sheets()
            .values()
            .filter(|s| (ruleset.is_empty() || s.ruleset.id == ruleset) && s.id.starts_with(prefix))
            .cloned()
            .collect();
        all.sort_by(|a, b| a.id.cmp(&b.id));
        let (page, next, total) = super::catalog::paged(all, |s| &s.id, page_size, page_token)?;
        Ok((page.iter().map(|s| s.info()).collect(), next, total))
    }

    /// Deletes a sheet with its history, if it is at revision `expected` (when given);
    /// watchers get a final `deleted` event.
    pub fn delete_sheet(&self, id: &str, expected: Option<u64>) -> Result<(), EngineError> {
        // A sheet that cannot be served (damaged, or its ruleset missing) can still be deleted,
        // but not on a condition about a revision nobody can read.
        if self.read_unservable().contains_key(id) {
            if expected.is_some() {
                return Err(EngineError::precondition(format!(
                    "sheet `{id}` cannot be served, so its revision cannot be checked: delete it without `expected_revision`"
                )));
            }
            self.checkpoints.forget(id);
            self.write_unservable().remove(id);
            return Ok(self.store.delete_sheet(id)?);
        }
        let sheet = self.sheet_or_stored(id)?;
        let mut st = sheet.live_state()?;
        self.catch_up(&sheet, &mut st)?;
        if let Some(expected) = expected
            && expected != st.revision
        {
            return Err(EngineError::revision_conflict(id, expected, st.revision));
        }
        // Under the sheet's lock: no Apply runs between the check and the removal.
        self.write_sheets().remove(id);
        self.checkpoints.forget(id);
        st.deleted = true;
        self.store.delete_sheet(id)?;
        let _ = sheet.events.send(Arc::new(Event { revision: st.revision, kind: EventKind::Deleted }));
        Ok(())
    }

    /// Plays a step — an atomic batch of operations, or an emit, choose or roll — if the sheet
    /// is at `expected` (when given), moved to its ruleset's current version first when that
    /// changed.
    pub fn apply(
        &self,
        id: &str,
        expected: Option<u64>,
        step: impl Into<Step>,
    ) -> Result<Applied, EngineError> {
        self.apply_once(id, expected, step, None)
    }

    /// [`Engine::apply`], at most once per request id: when the sheet remembers `key`'s id
    /// (its last [`RECENT_REQUESTS`] such Applies), the first answer comes back and nothing
    /// is applied — before the revision is checked, as a retry's expected revision is the one
    /// the first attempt moved past. The same id with other operations is INVALID_ARGUMENT.
    pub fn apply_once(
        &self,
        id: &str,
        expected: Option<u64>,
        step: impl Into<Step>,
        key: Option<RequestKey>,
    ) -> Result<Applied, EngineError> {
        let mut step = step.into();
        let sheet = self.sheet_or_stored(id)?;
        policy::check_step(&step, &self.limits.ops)?;
        // Over a shared store, another server may append between this server's catching up and
        // its own append: then it catches up and tries once more (see `replicas`).
        let mut tries = if self.store.shared() { 2 } else { 1 };
        loop {
            tries -= 1;
            let mut st = sheet.live_state()?;
            self.catch_up(&sheet, &mut st)?;
            if let Some(key) = &key
                && let Some(seen) = st.recent.iter().find(|a| a.key.id == key.id)
            {
                if seen.key.fingerprint != key.fingerprint {
                    let message = format!(
                        "request id `{}` was used on sheet `{id}` for other operations; a retry sends the same ones",
                        key.id
                    );
                    let problem = Problem::of(Code::RequestIdReused, message.clone());
                    return Err(EngineError::Invalid { message, problems: vec![problem] });
                }
                return Ok(seen.applied.clone());
            }
            if let Some(expected) = expected
                && expected != st.revision
            {
                return Err(EngineError::revision_conflict(id, expected, st.revision));
            }
            let migrated = self.migrate(&sheet, &st)?;
            // The last try takes the step; an earlier one plays a copy.
            let this_try =
                if tries > 0 { step.clone() } else { std::mem::replace(&mut step, Step::Ops(Vec::new())) };
            let applied = match self.apply_and_log(&sheet, &mut st, migrated, this_try) {
                Ok(a) => a,
                Err(Failure::Raced(_)) if tries > 0 => continue,
                Err(Failure::Raced(m)) => {
                    let head = self.store.head(id)?.unwrap_or(st.revision);
                    tracing::warn!(sheet = %policy::LogSafe(id), "{m}");
                    return Err(EngineError::revision_conflict(id, st.revision, head));
                }
                Err(Failure::Failed(e)) => return Err(e),
            };
            if let Some(key) = key {
                if st.recent.len() == RECENT_REQUESTS {
                    st.recent.pop_front();
                }
                st.recent.push_back(Answered { key, applied: applied.clone() });
            }
            return Ok(applied);
        }
    }

    /// What [`Engine::apply`] would do, on a copy: the same answer (its revision the one it
    /// would make), and the traces of `explain` after it; the sheet, its log and its watchers
    /// see nothing. Returns the revision the sheet stays at too.
    pub fn preview(
        &self,
        id: &str,
        expected: Option<u64>,
        step: impl Into<Step>,
        explain: &[String],
    ) -> Result<(u64, Applied, Vec<ExpiringTrace>), EngineError> {
        let step = step.into();
        let sheet = self.sheet_or_stored(id)?;
        policy::check_step(&step, &self.limits.ops)?;
        let mut st = sheet.live_state()?;
        self.catch_up(&sheet, &mut st)?;
        if let Some(expected) = expected
            && expected != st.revision
        {
            return Err(EngineError::revision_conflict(id, expected, st.revision));
        }
        let now = st.revision;
        let (mut game, moved) = match self.migrate(&sheet, &st)? {
            Some(m) => (m.game, Some(m.moved)),
            None => (st.game.clone(), None),
        };
        // The copy is the preview's own: the sheet's lock is not held while it plays.
        drop(st);
        let Played { changes, recomputed, expired, fired, pending, stopped, .. } = play(&mut game, step)?;
        let s = game.character().sheet();
        let mut traces = Vec::with_capacity(explain.len());
        for v in explain {
            let var = s.lookup(v).map_err(|e| EngineError::NotFound {
                what: Resource::Variable,
                name: v.clone(),
                message: e.message,
            })?;
            // Invariant: `var` was just found on this sheet, which nothing else changes.
            let trace = s.trace_of(var).expect("a variable just found has a trace");
            let expires = super::history::expiries(game.character(), &trace);
            traces.push((trace, expires));
        }
        let applied =
            Applied { revision: now + 1, changes, recomputed, moved, expired, fired, pending, stopped };
        Ok((now, applied, traces))
    }

    /// Moves a sheet to its ruleset's current version: a new revision when any value moved.
    pub fn upgrade(&self, id: &str) -> Result<Applied, EngineError> {
        let sheet = self.sheet_or_stored(id)?;
        let mut st = sheet.live_state()?;
        self.catch_up(&sheet, &mut st)?;
        let Some(migrated) = self.migrate(&sheet, &st)? else {
            return Ok(Applied { revision: st.revision, ..Default::default() });
        };
        if migrated.moved.changes.is_empty() {
            // Nothing observable moved: adopt the new version without a revision.
            st.version = migrated.moved.to_version;
            st.game = migrated.game;
            return Ok(Applied { revision: st.revision, moved: Some(migrated.moved), ..Default::default() });
        }
        self.apply_and_log(&sheet, &mut st, Some(migrated), Step::Ops(Vec::new())).map_err(|f| match f {
            Failure::Raced(m) => {
                EngineError::precondition(format!("the store changed meanwhile: {m}; upgrade again"))
            }
            Failure::Failed(e) => e,
        })
    }

    /// The sheet replayed against its ruleset's current version, when that is not the one it
    /// uses; `None` when it is.
    fn migrate(&self, sheet: &LiveSheet, st: &SheetState) -> Result<Option<Migrated>, EngineError> {
        let current = sheet.ruleset.current.load_full();
        if current.version == st.version {
            return Ok(None);
        }
        let log = crate::store::log_all(&*self.store, &sheet.id, 0, st.revision)?;
        let game = super::history::replay(current.book.clone(), &log).map_err(|e| {
            EngineError::precondition(format!(
                "sheet `{}` cannot move to version {} of ruleset `{}`: {e}",
                sheet.id, current.version, sheet.ruleset.id
            ))
        })?;
        let changes = record::diff(&record::values(st.game.character()), &record::values(game.character()));
        let moved = Moved { from_version: st.version, to_version: current.version, changes };
        Ok(Some(Migrated { game, moved }))
    }

    /// Plays `step` (on the migrated game when given), writes the revision durably, then
    /// publishes it. Nothing changes unless the write succeeds.
    // long: the move, the step, the durable write and its undo, and the event, in one order
    fn apply_and_log(
        &self,
        sheet: &LiveSheet,
        st: &mut SheetState,
        migrated: Option<Migrated>,
        step: Step,
    ) -> Result<Applied, Failure> {
        // The step plays on a copy when the sheet moves (the move is only real once logged)
        // and in place otherwise (a refused step changes nothing; a failed write is undone).
        let (mut moved_to, moved) = match migrated {
            Some(m) => (Some(m.game), Some(m.moved)),
            None => (None, None),
        };
        let game = moved_to.as_mut().unwrap_or(&mut st.game);
        let Played { operations, step, changes, recomputed, expired, fired, pending, stopped } =
            play(game, step)?;
        let revision = st.revision + 1;
        // The revision's changes are the move's, then the operations'. Without a move they are
        // the reply's too: the entry holds them and gives them back (copied only for
        // watchers, who get the entry's own).
        let (all_changes, own_reply) = match &moved {
            None => (changes, None),
            Some(m) => {
                let mut all = m.changes.clone();
                all.extend(changes.iter().cloned());
                (all, Some(changes))
            }
        };
        let version = moved.as_ref().map_or(st.version, |m| m.to_version);
        let entry = Logged {
            revision: Revision {
                number: revision,
                ruleset_version: version,
                operations,
                moved_from: moved.as_ref().map(|m| m.from_version),
            },
            changes: all_changes,
            step,
        };
        let snapshot = revision
            .is_multiple_of(SNAPSHOT_EVERY)
            .then(|| Snapshot { revision, values: record::values(game.character()) });
        let commit = std::time::Instant::now();
        let written = self.store.append(&sheet.id, &entry, snapshot.as_ref());
        crate::metrics::METRICS.store_commit_seconds.observe(commit.elapsed().as_secs_f64());
        if let Err(e) = written {
            // Not durable, so not accepted: put the sheet back as the log has it.
            if moved_to.is_none() {
                self.restore_from_log(sheet, st);
            }
            return Err(match e {
                StoreError::Conflict(m) => Failure::Raced(m),
                e => Failure::Failed(e.into()),
            });
        }
        if let Some(g) = moved_to {
            st.game = g;
        }
        st.version = version;
        st.revision = revision;
        if revision.is_multiple_of(CHECKPOINT_EVERY) {
            self.checkpoints.put(&sheet.id, revision, st.version, st.game.character());
        }
        // The logged changes go on to the watchers (the log entry is done with). Watchers
        // subscribe under the sheet's lock, which this holds: one that is not counted now
        // starts from this revision or a later one, and needs no event for it.
        let changes = if sheet.events.receiver_count() > 0 {
            let reply = own_reply.unwrap_or_else(|| entry.changes.clone());
            let event = Event { revision, kind: EventKind::Changes(entry.changes) };
            let _ = sheet.events.send(Arc::new(event));
            reply
        } else {
            own_reply.unwrap_or(entry.changes)
        };
        Ok(Applied { revision, changes, recomputed, moved, expired, fired, pending, stopped })
    }

    /// After a failed write: the sheet as its log has it.
    fn restore_from_log(&self, sheet: &LiveSheet, st: &mut SheetState) {
        let restored = crate::store::log_all(&*self.store, &sheet.id, 0, st.revision)
            .map_err(|e| e.to_string())
            .and_then(|log| super::history::replay(st.game.book().clone(), &log));
        match restored {
            Ok(g) => st.game = g,
            Err(e) => {
                // Replayed from the store before its next use (`catch_up`).
                st.stale = true;
                tracing::error!(sheet = %sheet.id, error = %e, "cannot restore the sheet after a store failure; it is read again before its next use")
            }
        }
    }
}

/// Why a change was not made: another server appended the revision first (over a shared
/// store), or anything else.
pub(super) enum Failure {
    Raced(String),
    Failed(EngineError),
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Failure {
        Failure::Failed(e)
    }
}

/// A sheet replayed against a newer ruleset version, and what the move changed.
struct Migrated {
    game: Game,
    moved: Moved,
}
