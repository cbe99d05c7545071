//! The engine behind the API: rulesets (hot-swappable), live sheets, their history, and the
//! store. Every method is synchronous and may block (solving, fsync); the gRPC layer calls it
//! from blocking threads.
//!
//! Concurrency:
//! - A ruleset is an [`ArcSwap`] of its current compiled version. A request loads the `Arc` once
//!   and finishes on that version even if a reload swaps in another meanwhile.
//! - Each sheet has one writer at a time: its state sits behind a mutex, held for the whole
//!   of an Apply, including the durable write, so revisions are written in order.
//! - Change events go out on a bounded broadcast channel per sheet; a watcher that falls
//!   behind sees a lag and resyncs (see `api.rs`).

use crate::proto as pb;
use crate::server::convert::{self, OpLimits};
use crate::server::policy;
use crate::server::store::{
    FileRecord, LogEntry, RulesetRecord, RulesetVersion, SNAPSHOT_EVERY, SheetRecord, Snapshot, Store,
    StoreError,
};
use arc_swap::ArcSwap;
use data::{Character, Ruleset, SheetOp};
use solver::Trace;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use tokio::sync::broadcast;
use tonic::{Code, Status};

/// The id of the bundled starter ruleset.
pub const STARTER: &str = "starter";

pub use crate::server::policy::Limits;

/// What the engine starts with.
#[derive(Clone, Debug, Default)]
pub struct EngineConfig {
    pub data_dir: PathBuf,
    /// Rulesets to load at start (id → paths), besides the starter and those in the store.
    pub preload: Vec<(String, Vec<PathBuf>)>,
    /// The ruleset used when a request names none.
    pub default_ruleset: String,
    pub limits: Limits,
    /// Where paths named by clients may lead (preloaded paths are the operator's own).
    pub ruleset_roots: Vec<PathBuf>,
}

/// Where a ruleset comes from.
#[derive(Clone, Debug)]
enum Source {
    Builtin,
    /// Files on disk; `confined` when a client named them (they must lie under the ruleset roots).
    Paths {
        paths: Vec<PathBuf>,
        confined: bool,
    },
    Inline(String),
}

/// One compiled version of a ruleset.
pub struct Loaded {
    pub version: u64,
    pub ruleset: Arc<Ruleset>,
}

pub struct RulesetEntry {
    pub id: String,
    source: Mutex<Source>,
    /// The version serving now; swapped whole by a successful reload.
    pub current: ArcSwap<Loaded>,
    /// Earlier versions compiled again from their stored content, for replaying history.
    earlier: Mutex<HashMap<u64, Arc<Ruleset>>>,
}

/// How many earlier versions of one ruleset stay compiled in memory.
const EARLIER_VERSIONS_KEPT: usize = 4;

/// A compiled ruleset and the content it was compiled from.
struct Compiled {
    ruleset: Ruleset,
    content: RulesetVersion,
}

/// A live sheet.
pub struct SheetEntry {
    pub id: String,
    pub ruleset: Arc<RulesetEntry>,
    state: Mutex<SheetState>,
    /// Every accepted revision's changes (unfiltered), and a final `deleted` event.
    pub events: broadcast::Sender<Arc<pb::WatchEvent>>,
}

struct SheetState {
    character: Character,
    /// The ruleset version `character` uses.
    version: u64,
    revision: u64,
    deleted: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks (no input can make the engine panic), and even
    // then the guarded data is consistent between statements: keep serving.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A store failure as a status: DATA_LOSS for a damaged record, UNAVAILABLE otherwise.
fn internal(e: StoreError) -> Status {
    tracing::error!(error = %e, "store failure");
    match e {
        StoreError::Damaged(m) => Status::data_loss(m),
        StoreError::Failed(m) => Status::unavailable(m),
    }
}

/// Limits used when replaying the log: what was accepted once is replayed even if limits were
/// lowered since.
const REPLAY_LIMITS: OpLimits =
    OpLimits { max_operations: usize::MAX, formula: formula::Limits { max_len: usize::MAX, max_depth: 256 } };

/// Which variables a request is about: all, or references matched case-insensitively.
#[derive(Clone, Debug, Default)]
pub struct Filter(Vec<String>);

impl Filter {
    pub fn new(refs: &[String]) -> Filter {
        Filter(refs.iter().map(|r| r.to_ascii_lowercase()).collect())
    }
    pub fn matches(&self, r: &str) -> bool {
        self.0.is_empty() || self.0.iter().any(|f| f.eq_ignore_ascii_case(r))
    }
    pub fn changes(&self, changes: &[pb::Change]) -> Vec<pb::Change> {
        changes.iter().filter(|c| self.matches(&c.r#ref)).cloned().collect()
    }
    /// A `changes` event narrowed to the filter; `None` when nothing in it matches (or it is
    /// another kind of event).
    pub fn changes_event(&self, ev: &pb::WatchEvent) -> Option<pb::WatchEvent> {
        let Some(pb::watch_event::Event::Changes(c)) = &ev.event else { return None };
        let changes = self.changes(&c.changes);
        (!changes.is_empty()).then_some(pb::WatchEvent {
            revision: ev.revision,
            event: Some(pb::watch_event::Event::Changes(pb::Changes { changes })),
        })
    }
}

/// A new watcher's start: the sheet, its event receiver, the revision at subscription, and the
/// logged revisions to replay first (read from the store a chunk at a time, as the client reads,
/// with [`Engine::replay_chunk`]).
pub struct Subscription {
    pub entry: Arc<SheetEntry>,
    pub rx: broadcast::Receiver<Arc<pb::WatchEvent>>,
    /// Revisions `replay.start..=replay.end` are to be replayed; empty when none.
    pub replay: std::ops::RangeInclusive<u64>,
    pub current: u64,
}

/// A checkpoint of a sheet's state is kept every this many revisions.
pub const CHECKPOINT_EVERY: u64 = 128;

/// About how much memory checkpoints may hold, over all sheets (the least recently used go).
const CHECKPOINT_BUDGET: usize = 16 << 20;

/// Sheet states at past revisions (a clone of the character as it was after revision r, with the
/// ruleset version of revision r), so that replaying history starts near where it is asked for.
/// Made by restores at start, by replays, and by Apply every [`CHECKPOINT_EVERY`] revisions; in
/// memory only (a restart's restore makes them again), within [`CHECKPOINT_BUDGET`] bytes by the
/// solver's estimate.
#[derive(Default)]
struct Checkpoints {
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
    fn put(&self, sheet: &str, revision: u64, version: u64, c: &Character) {
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
    fn before(&self, sheet: &str, revision: u64) -> Option<(u64, u64, Character)> {
        let mut m = lock(&self.inner);
        m.clock += 1;
        let now = m.clock;
        let key =
            m.map.keys().filter(|(s, r)| s == sheet && *r <= revision).max_by_key(|(_, r)| *r).cloned()?;
        let entry = m.map.get_mut(&key)?;
        entry.last_use = now;
        Some((key.1, entry.version, (*entry.state).clone()))
    }

    fn forget(&self, sheet: &str) {
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

/// The engine.
pub struct Engine {
    store: Store,
    rulesets: RwLock<BTreeMap<String, Arc<RulesetEntry>>>,
    sheets: RwLock<BTreeMap<String, Arc<SheetEntry>>>,
    /// Stored sheets that cannot be served, with the answer calls on them get: DATA_LOSS for a
    /// damaged record, UNAVAILABLE while their ruleset is not loaded. Their ids stay taken.
    unservable: RwLock<BTreeMap<String, (Code, String)>>,
    /// Ids of sheets being created (reserved while their first revision is written).
    creating: Mutex<HashSet<String>>,
    /// Sheet states at past revisions, where replays of history start.
    checkpoints: Checkpoints,
    /// Revisions replayed by WhyChanged since start (observability, and tests of its cost).
    replayed: std::sync::atomic::AtomicU64,
    default_ruleset: String,
    limits: Limits,
    ruleset_roots: Vec<PathBuf>,
}

fn diagnostics_status(id: &str, diagnostics: &[data::Diagnostic]) -> String {
    let first = diagnostics.first().map(|d| d.to_string()).unwrap_or_default();
    format!("ruleset `{id}` has {} errors; first: {first}", diagnostics.len())
}

impl Engine {
    /// Opens the store, loads the starter, configured and stored rulesets, and replays every
    /// stored sheet. A stored sheet or ruleset that cannot be loaded is logged and skipped (its
    /// records stay in the store).
    pub fn open(config: EngineConfig) -> Result<Engine, String> {
        let store =
            Store::open(&config.data_dir, config.limits.store_cache_bytes).map_err(|e| e.to_string())?;
        // The default ruleset root, ready for the operator's files.
        let _ = std::fs::create_dir_all(config.data_dir.join("rulesets"));
        let mut stored: HashMap<String, RulesetRecord> = HashMap::new();
        for r in store.rulesets().map_err(|e| e.to_string())? {
            match r {
                Ok(r) => {
                    stored.insert(r.id.clone(), r);
                }
                Err((id, e)) => {
                    tracing::error!(ruleset = %id, error = %e, "stored ruleset record damaged; not loaded")
                }
            }
        }
        let engine = Engine {
            store,
            rulesets: RwLock::default(),
            sheets: RwLock::default(),
            unservable: RwLock::default(),
            creating: Mutex::default(),
            checkpoints: Checkpoints::default(),
            replayed: Default::default(),
            default_ruleset: if config.default_ruleset.is_empty() {
                STARTER.to_owned()
            } else {
                config.default_ruleset.clone()
            },
            limits: config.limits,
            ruleset_roots: config.ruleset_roots.clone(),
        };
        let mut sources: Vec<(String, Source)> = vec![(STARTER.to_owned(), Source::Builtin)];
        for (id, paths) in &config.preload {
            sources.push((id.clone(), Source::Paths { paths: paths.clone(), confined: false }));
        }
        let mut rest: Vec<&RulesetRecord> = stored.values().collect();
        rest.sort_by(|a, b| a.id.cmp(&b.id));
        for r in rest {
            if sources.iter().any(|(id, _)| *id == r.id) {
                continue;
            }
            let source = if !r.inline_text.is_empty() {
                Source::Inline(r.inline_text.clone())
            } else {
                Source::Paths { paths: r.paths.iter().map(PathBuf::from).collect(), confined: true }
            };
            sources.push((r.id.clone(), source));
        }
        for (id, source) in sources {
            match engine.compile(&id, &source) {
                Ok(compiled) => {
                    // A ruleset whose content changed since it was stored is a new version;
                    // sheets stay on the version their revisions were made with until they move.
                    let version = match stored.get(&id) {
                        None => 1,
                        Some(r)
                            if r.content_hash.is_empty()
                                || r.content_hash == compiled.content.content_hash =>
                        {
                            r.version.max(1)
                        }
                        Some(r) => {
                            tracing::info!(ruleset = %id, version = r.version + 1, "ruleset changed since it was stored: a new version");
                            r.version + 1
                        }
                    };
                    tracing::info!(ruleset = %id, version, "ruleset loaded");
                    engine
                        .insert_ruleset(&id, source, version, compiled)
                        .map_err(|e| e.message().to_owned())?;
                }
                Err(diags) => {
                    let message = diagnostics_status(&id, &diags);
                    if matches!(source, Source::Builtin) || config.preload.iter().any(|(p, _)| *p == id) {
                        return Err(message);
                    }
                    tracing::error!(ruleset = %id, "{message}; its sheets are not served");
                }
            }
        }
        if !engine.read_rulesets().contains_key(&engine.default_ruleset) {
            return Err(format!("the default ruleset `{}` is not loaded", engine.default_ruleset));
        }
        for rec in engine.store.sheets().map_err(|e| e.to_string())? {
            let (id, failure) = match rec {
                Ok(rec) => match engine.restore_sheet(&rec) {
                    Ok(()) => continue,
                    Err(f) => (rec.id, f),
                },
                Err((id, e)) => (id, (Code::DataLoss, e.to_string())),
            };
            tracing::error!(sheet = %policy::LogSafe(&id), error = %failure.1, "sheet not restored");
            let message = format!("sheet `{id}` cannot be served: {}", failure.1);
            engine.write_unservable().insert(id, (failure.0, message));
        }
        Ok(engine)
    }

    /// Restores a stored sheet by replaying its log; on failure, the answer its calls get.
    fn restore_sheet(&self, rec: &SheetRecord) -> Result<(), (Code, String)> {
        let entry = self
            .ruleset_entry(&rec.ruleset_id)
            .map_err(|_| (Code::Unavailable, format!("its ruleset `{}` is not loaded", rec.ruleset_id)))?;
        let log = self.store.log(&rec.id, 0, u64::MAX).map_err(|e| match e {
            StoreError::Damaged(m) => (Code::DataLoss, m),
            StoreError::Failed(m) => (Code::Unavailable, m),
        })?;
        let last = log.last().ok_or((Code::DataLoss, "it has no revisions".to_owned()))?;
        let (revision, version) = (last.revision, last.ruleset_version);
        // The sheet comes back on the version its last revision was made with.
        let ruleset = self.ruleset_at(&entry, version).map_err(|s| (s.code(), s.message().to_owned()))?;
        let character = self
            .replay_checkpointed(&rec.id, ruleset, version, &log)
            .map_err(|e| (Code::FailedPrecondition, e))?;
        let sheet = self.new_entry(&rec.id, entry, character, version, revision);
        self.write_sheets().insert(rec.id.clone(), sheet);
        Ok(())
    }

    /// Replays a sheet's whole log against `version` of its ruleset, keeping a checkpoint every
    /// [`CHECKPOINT_EVERY`] revisions made with that version.
    fn replay_checkpointed(
        &self,
        id: &str,
        ruleset: Arc<Ruleset>,
        version: u64,
        log: &[LogEntry],
    ) -> Result<Character, String> {
        replay_each(ruleset, log, |e, c| {
            if e.ruleset_version == version && e.revision > 0 && e.revision.is_multiple_of(CHECKPOINT_EVERY) {
                self.checkpoints.put(id, e.revision, version, c);
            }
        })
    }

    /// Revisions replayed by WhyChanged since the engine started.
    pub fn replayed_revisions(&self) -> u64 {
        self.replayed.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn new_entry(
        &self,
        id: &str,
        ruleset: Arc<RulesetEntry>,
        character: Character,
        version: u64,
        revision: u64,
    ) -> Arc<SheetEntry> {
        let (events, _) = broadcast::channel(self.limits.watch_buffer.max(1));
        Arc::new(SheetEntry {
            id: id.to_owned(),
            ruleset,
            state: Mutex::new(SheetState { character, version, revision, deleted: false }),
            events,
        })
    }

    fn read_rulesets(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<RulesetEntry>>> {
        self.rulesets.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn read_sheets(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<SheetEntry>>> {
        self.sheets.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_sheets(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<SheetEntry>>> {
        self.sheets.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_unservable(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, (Code, String)>> {
        self.unservable.write().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The store file's path.
    pub fn store_path(&self) -> PathBuf {
        self.store.path().to_owned()
    }

    fn insert_ruleset(
        &self,
        id: &str,
        source: Source,
        version: u64,
        compiled: Compiled,
    ) -> Result<(), Status> {
        let Compiled { ruleset, mut content } = compiled;
        content.version = version;
        let record = record_of(id, &source, version, &content);
        self.store.put_ruleset(&record, Some(&content)).map_err(internal)?;
        let entry = Arc::new(RulesetEntry {
            id: id.to_owned(),
            source: Mutex::new(source),
            current: ArcSwap::from_pointee(Loaded { version, ruleset: Arc::new(ruleset) }),
            earlier: Mutex::default(),
        });
        self.rulesets.write().unwrap_or_else(PoisonError::into_inner).insert(id.to_owned(), entry);
        Ok(())
    }

    /// A version of a ruleset: the current one, or an earlier one compiled again from the content
    /// stored with it. (A version stored before versions kept their content is served by the
    /// current one, with a warning.)
    fn ruleset_at(&self, entry: &RulesetEntry, version: u64) -> Result<Arc<Ruleset>, Status> {
        let current = entry.current.load_full();
        if current.version == version {
            return Ok(current.ruleset.clone());
        }
        if let Some(r) = lock(&entry.earlier).get(&version) {
            return Ok(r.clone());
        }
        let Some(content) = self.store.ruleset_version(&entry.id, version).map_err(internal)? else {
            tracing::warn!(ruleset = %entry.id, version, "no stored content for this version; using the current one");
            return Ok(current.ruleset.clone());
        };
        let ruleset = Arc::new(compile_content(&entry.id, &content).map_err(|d| {
            Status::failed_precondition(format!(
                "version {version} of ruleset `{}` no longer compiles: {}",
                entry.id,
                diagnostics_status(&entry.id, &d)
            ))
        })?);
        let mut earlier = lock(&entry.earlier);
        if earlier.len() >= EARLIER_VERSIONS_KEPT
            && let Some(&oldest) = earlier.keys().min()
        {
            earlier.remove(&oldest);
        }
        earlier.insert(version, ruleset.clone());
        Ok(ruleset)
    }

    pub fn ruleset_entry(&self, id: &str) -> Result<Arc<RulesetEntry>, Status> {
        let id = if id.is_empty() { &self.default_ruleset } else { id };
        self.read_rulesets().get(id).cloned().ok_or_else(|| Status::not_found(format!("no ruleset `{id}`")))
    }

    pub fn sheet(&self, id: &str) -> Result<Arc<SheetEntry>, Status> {
        if let Some(s) = self.read_sheets().get(id) {
            return Ok(s.clone());
        }
        let unservable = self.unservable.read().unwrap_or_else(PoisonError::into_inner);
        Err(match unservable.get(id) {
            Some((code, message)) => Status::new(*code, message.clone()),
            None => Status::not_found(format!("no sheet `{id}`")),
        })
    }

    // -----------------------------------------------------------------------------------------
    // Rulesets

    /// Compiles a ruleset, reading files through the policy: confined to the ruleset roots when a
    /// client named them, always within the read limits. Returns the content read with it.
    fn compile(&self, id: &str, source: &Source) -> Result<Compiled, Vec<data::Diagnostic>> {
        let mut content = RulesetVersion::default();
        let ruleset = match source {
            Source::Builtin => {
                content.builtin = true;
                content.files = data::STARTER_FILES
                    .iter()
                    .map(|(path, text)| FileRecord { path: (*path).to_owned(), text: (*text).to_owned() })
                    .collect();
                data::load_starter()?
            }
            Source::Paths { paths, confined } => {
                let files =
                    if *confined { data::Files::confined(&self.ruleset_roots) } else { data::Files::disk() };
                let files = files.with_limits(self.limits.read);
                let ruleset = data::load_with(paths, &files)?;
                content.paths = paths.iter().map(|p| p.display().to_string()).collect();
                let bundle = files.into_bundle();
                content.present = bundle.present.into_iter().collect();
                content.files = bundle
                    .files
                    .into_iter()
                    .map(|(path, text)| FileRecord { path, text: text.to_string() })
                    .collect();
                ruleset
            }
            Source::Inline(text) => {
                content.inline_text = text.clone();
                data::load_str(text, &format!("<inline {id}>"))?
            }
        };
        content.content_hash = content_hash(&content);
        Ok(Compiled { ruleset, content })
    }

    /// A client's path: a relative one is relative to the first ruleset root that has it (or to
    /// the first root). Whether it may be read is decided when it is read ([`data::Files`]).
    fn under_roots(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            return path.to_owned();
        }
        self.ruleset_roots
            .iter()
            .map(|r| r.join(path))
            .find(|p| p.exists())
            .or_else(|| self.ruleset_roots.first().map(|r| r.join(path)))
            .unwrap_or_else(|| path.to_owned())
    }

    /// Inline ruleset text within the limits: its size and its longest line.
    fn check_inline(&self, text: &str) -> Result<(), Status> {
        let max = self.limits.max_inline_ruleset_bytes;
        if text.len() > max {
            return Err(Status::invalid_argument(format!(
                "the inline ruleset is {} bytes; the limit is {max} bytes (--max-inline-ruleset-bytes)",
                text.len()
            )));
        }
        self.limits.read.check_lines("the inline ruleset", text).map_err(Status::invalid_argument)
    }

    /// Loads a new ruleset from paths or inline text.
    pub fn load_ruleset(&self, req: &pb::LoadRulesetRequest) -> Result<pb::RulesetReply, Status> {
        policy::check_id("ruleset", &req.id)?;
        if self.read_rulesets().contains_key(&req.id) {
            return Err(Status::already_exists(format!(
                "ruleset `{}` is already loaded (use ReloadRuleset to change it)",
                req.id
            )));
        }
        let source = match (req.paths.is_empty(), req.inline_text.is_empty()) {
            (false, true) => Source::Paths {
                paths: req.paths.iter().map(|p| self.under_roots(Path::new(p))).collect(),
                confined: true,
            },
            (true, false) => {
                self.check_inline(&req.inline_text)?;
                Source::Inline(req.inline_text.clone())
            }
            _ => {
                return Err(Status::invalid_argument(
                    "give either `paths` or `inline_text`, not both or neither",
                ));
            }
        };
        match self.compile(&req.id, &source) {
            Ok(compiled) => {
                let warnings = compiled.ruleset.warnings().iter().map(convert::diagnostic).collect();
                self.insert_ruleset(&req.id, source, 1, compiled)?;
                let entry = self.ruleset_entry(&req.id)?;
                Ok(pb::RulesetReply { ok: true, ruleset: Some(info(&entry)), diagnostics: vec![], warnings })
            }
            Err(diags) => Err(ruleset_failed(&req.id, &diags)),
        }
    }

    /// Reloads a ruleset and swaps it in; on failure the old version keeps serving and the reply
    /// (ok = false) carries the diagnostics.
    pub fn reload_ruleset(&self, req: &pb::ReloadRulesetRequest) -> Result<pb::RulesetReply, Status> {
        let entry = self.ruleset_entry(&req.id)?;
        let mut source = lock(&entry.source);
        let new_source = match &*source {
            Source::Inline(_) if req.inline_text.is_empty() => {
                return Err(Status::invalid_argument(format!(
                    "ruleset `{}` was loaded from inline text: give the new `inline_text`",
                    req.id
                )));
            }
            Source::Inline(_) => {
                self.check_inline(&req.inline_text)?;
                Source::Inline(req.inline_text.clone())
            }
            other => other.clone(),
        };
        match self.compile(&entry.id, &new_source) {
            Ok(Compiled { ruleset, mut content }) => {
                let warnings = ruleset.warnings().iter().map(convert::diagnostic).collect();
                let version = entry.current.load().version + 1;
                content.version = version;
                let record = record_of(&entry.id, &new_source, version, &content);
                self.store.put_ruleset(&record, Some(&content)).map_err(internal)?;
                entry.current.store(Arc::new(Loaded { version, ruleset: Arc::new(ruleset) }));
                *source = new_source;
                drop(source);
                tracing::info!(ruleset = %entry.id, version, "ruleset reloaded");
                Ok(pb::RulesetReply { ok: true, ruleset: Some(info(&entry)), diagnostics: vec![], warnings })
            }
            Err(diags) => {
                drop(source);
                tracing::warn!(ruleset = %entry.id, errors = diags.len(), "reload failed; the old version keeps serving");
                Ok(pb::RulesetReply {
                    ok: false,
                    ruleset: Some(info(&entry)),
                    diagnostics: diags.iter().map(convert::diagnostic).collect(),
                    warnings: vec![],
                })
            }
        }
    }

    pub fn list_rulesets(&self) -> pb::ListRulesetsResponse {
        pb::ListRulesetsResponse { rulesets: self.read_rulesets().values().map(|e| info(e)).collect() }
    }

    // -----------------------------------------------------------------------------------------
    // Sheets

    pub fn create_sheet(&self, req: &pb::CreateSheetRequest) -> Result<pb::CreateSheetResponse, Status> {
        let ruleset = self.ruleset_entry(&req.ruleset_id)?;
        let ops = convert::operations(&req.operations, &self.limits.ops)?;
        self.check_room(self.read_sheets().len())?;
        let id = if req.id.is_empty() {
            // Skip numbers a client already took as explicit ids.
            loop {
                let id = format!("sheet-{}", self.store.next_sheet_number().map_err(internal)?);
                if !self.read_sheets().contains_key(&id) && !self.store.has_sheet(&id).map_err(internal)? {
                    break id;
                }
            }
        } else {
            policy::check_id("sheet", &req.id)?;
            req.id.clone()
        };
        let loaded = ruleset.current.load_full();
        let mut character = Character::new(loaded.ruleset.clone()).map_err(|e| convert::sheet_error(&e))?;
        let report = character.apply(&ops).map_err(|e| convert::sheet_error(&e))?;
        let values = all_values(&character);
        // Reserve the id (and a place under --max-sheets) under the lock, then write durably
        // without it: readers of other sheets never wait for this fsync.
        let reservation = {
            let sheets = self.write_sheets();
            let mut creating = lock(&self.creating);
            // Checked again under the lock: concurrent creates cannot pass the limit together.
            self.check_room(sheets.len() + creating.len())?;
            // A stored sheet that cannot be served is not in memory, but its id is taken.
            if sheets.contains_key(&id)
                || creating.contains(&id)
                || self.store.has_sheet(&id).map_err(internal)?
            {
                return Err(Status::already_exists(format!("sheet `{id}` already exists")));
            }
            creating.insert(id.clone());
            Reservation { engine: self, id: id.clone() }
        };
        let first = LogEntry {
            revision: 0,
            ruleset_version: loaded.version,
            operations: req.operations.clone(),
            changes: report.changed.iter().map(convert::change).collect(),
            moved_from_version: None,
        };
        let record = SheetRecord { id: id.clone(), ruleset_id: ruleset.id.clone() };
        self.store
            .create_sheet(&record, &first, &Snapshot { revision: 0, values: values.clone() })
            .map_err(internal)?;
        let entry = self.new_entry(&id, ruleset, character, loaded.version, 0);
        let info = sheet_info(&entry, &lock(&entry.state));
        let mut sheets = self.write_sheets();
        sheets.insert(id, entry);
        drop(reservation);
        Ok(pb::CreateSheetResponse { sheet: Some(info), values })
    }

    /// Whether one more sheet fits under `--max-sheets`, given how many there are.
    fn check_room(&self, held: usize) -> Result<(), Status> {
        if held >= self.limits.max_sheets {
            return Err(Status::resource_exhausted(format!(
                "the server holds its limit of {} sheets (--max-sheets)",
                self.limits.max_sheets
            )));
        }
        Ok(())
    }

    pub fn get_sheet(&self, id: &str) -> Result<pb::SheetInfo, Status> {
        let entry = self.sheet(id)?;
        let st = lock(&entry.state);
        Ok(sheet_info(&entry, &st))
    }

    pub fn list_sheets(&self) -> pb::ListSheetsResponse {
        let entries: Vec<Arc<SheetEntry>> = self.read_sheets().values().cloned().collect();
        pb::ListSheetsResponse { sheets: entries.iter().map(|e| sheet_info(e, &lock(&e.state))).collect() }
    }

    pub fn delete_sheet(&self, id: &str) -> Result<(), Status> {
        self.checkpoints.forget(id);
        // A sheet that cannot be served (damaged, or its ruleset missing) can still be deleted.
        if self.write_unservable().remove(id).is_some() {
            return self.store.delete_sheet(id).map_err(internal);
        }
        let entry =
            self.write_sheets().remove(id).ok_or_else(|| Status::not_found(format!("no sheet `{id}`")))?;
        let mut st = lock(&entry.state);
        st.deleted = true;
        self.store.delete_sheet(id).map_err(internal)?;
        let _ = entry.events.send(Arc::new(pb::WatchEvent {
            revision: st.revision,
            event: Some(pb::watch_event::Event::Deleted(pb::Deleted {})),
        }));
        Ok(())
    }

    /// Applies a batch; see the API's `Apply`.
    pub fn apply(&self, req: &pb::ApplyRequest) -> Result<pb::ApplyResponse, Status> {
        let entry = self.sheet(&req.sheet_id)?;
        let ops = convert::operations(&req.operations, &self.limits.ops)?;
        let mut st = lock(&entry.state);
        if st.deleted {
            return Err(Status::not_found(format!("no sheet `{}`", req.sheet_id)));
        }
        if let Some(expected) = req.expected_revision
            && expected != st.revision
        {
            return Err(Status::aborted(format!(
                "sheet `{}` is at revision {}, not the expected {expected}",
                req.sheet_id, st.revision
            )));
        }
        self.commit(&entry, &mut st, &req.operations, &ops, false)
    }

    /// Moves a sheet to its ruleset's current version (a new revision when anything moved).
    pub fn upgrade(&self, id: &str) -> Result<pb::ApplyResponse, Status> {
        let entry = self.sheet(id)?;
        let mut st = lock(&entry.state);
        if st.deleted {
            return Err(Status::not_found(format!("no sheet `{id}`")));
        }
        if entry.ruleset.current.load().version == st.version {
            return Ok(pb::ApplyResponse { revision: st.revision, ..Default::default() });
        }
        self.commit(&entry, &mut st, &[], &[], true)
    }

    /// Applies `ops` (moving to the ruleset's current version first if needed), writes the
    /// revision durably, then publishes it.
    fn commit(
        &self,
        entry: &SheetEntry,
        st: &mut SheetState,
        messages: &[pb::Operation],
        ops: &[SheetOp],
        upgrade_only: bool,
    ) -> Result<pb::ApplyResponse, Status> {
        let loaded = entry.ruleset.current.load_full();
        let mut moved = None;
        let mut migrated = None;
        if loaded.version != st.version {
            let log = self.store.log(&entry.id, 0, st.revision).map_err(internal)?;
            let character = replay(loaded.ruleset.clone(), &log).map_err(|e| {
                Status::failed_precondition(format!(
                    "sheet `{}` cannot move to version {} of ruleset `{}`: {e}",
                    entry.id, loaded.version, entry.ruleset.id
                ))
            })?;
            moved = Some(pb::RulesetMove {
                from_version: st.version,
                to_version: loaded.version,
                changes: diff_values(&st.character, &character),
            });
            migrated = Some(character);
        }
        let character = migrated.as_mut().unwrap_or(&mut st.character);
        let report = character.apply(ops).map_err(|e| convert::sheet_error(&e))?;
        let changes: Vec<pb::Change> = report.changed.iter().map(convert::change).collect();
        if upgrade_only && moved.as_ref().is_some_and(|m| m.changes.is_empty()) && changes.is_empty() {
            // Nothing observable moved: adopt the new version without a revision.
            if let Some(c) = migrated {
                st.character = c;
                st.version = loaded.version;
            }
            return Ok(pb::ApplyResponse { revision: st.revision, moved, ..Default::default() });
        }
        let revision = st.revision + 1;
        let mut all_changes = moved.as_ref().map(|m| m.changes.clone()).unwrap_or_default();
        all_changes.extend(changes.iter().cloned());
        let log = LogEntry {
            revision,
            ruleset_version: loaded.version,
            operations: messages.to_vec(),
            changes: all_changes.clone(),
            moved_from_version: moved.as_ref().map(|m| m.from_version),
        };
        let snapshot = revision
            .is_multiple_of(SNAPSHOT_EVERY)
            .then(|| Snapshot { revision, values: all_values(character) });
        if let Err(e) = self.store.append(&entry.id, &log, snapshot.as_ref()) {
            // Not durable, so not accepted: put the sheet back as the log has it.
            if migrated.is_none() {
                match self
                    .store
                    .log(&entry.id, 0, st.revision)
                    .map_err(|e| e.to_string())
                    .and_then(|log| replay(st.character.ruleset().clone(), &log))
                {
                    Ok(c) => st.character = c,
                    Err(e2) => {
                        tracing::error!(sheet = %entry.id, error = %e2, "cannot restore the sheet after a store failure");
                    }
                }
            }
            return Err(internal(e));
        }
        if let Some(c) = migrated {
            st.character = c;
            st.version = loaded.version;
        }
        st.revision = revision;
        if revision.is_multiple_of(CHECKPOINT_EVERY) {
            self.checkpoints.put(&entry.id, revision, st.version, &st.character);
        }
        let _ = entry.events.send(Arc::new(pb::WatchEvent {
            revision,
            event: Some(pb::watch_event::Event::Changes(pb::Changes { changes: all_changes })),
        }));
        Ok(pb::ApplyResponse { revision, changes, recomputed: report.recomputed as u64, moved })
    }

    // -----------------------------------------------------------------------------------------
    // Reading

    pub fn values(&self, req: &pb::ValuesRequest) -> Result<pb::ValuesResponse, Status> {
        let entry = self.sheet(&req.sheet_id)?;
        let st = lock(&entry.state);
        let revision = req.revision.unwrap_or(st.revision);
        if revision > st.revision {
            return Err(Status::out_of_range(format!(
                "sheet `{}` is at revision {}; there is no revision {revision} yet",
                req.sheet_id, st.revision
            )));
        }
        if revision == st.revision {
            let values = if req.variables.is_empty() {
                all_values(&st.character)
            } else {
                req.variables
                    .iter()
                    .map(|r| {
                        let (var, format, slot) =
                            st.character.sheet().typed_value(r).map_err(|e| Status::not_found(e.message))?;
                        Ok(convert::variable(&var, &format, &slot))
                    })
                    .collect::<Result<_, Status>>()?
            };
            return Ok(pb::ValuesResponse { revision, values });
        }
        drop(st);
        let all = self.values_at(&req.sheet_id, revision)?;
        let values = if req.variables.is_empty() {
            all
        } else {
            req.variables
                .iter()
                .map(|r| {
                    all.iter().find(|v| v.r#ref.eq_ignore_ascii_case(r)).cloned().ok_or_else(|| {
                        Status::not_found(format!(
                            "no variable `{r}` at revision {revision} of `{}`",
                            req.sheet_id
                        ))
                    })
                })
                .collect::<Result<_, Status>>()?
        };
        Ok(pb::ValuesResponse { revision, values })
    }

    /// Every value at a past revision: the latest snapshot before it plus the logged changes.
    fn values_at(&self, sheet: &str, revision: u64) -> Result<Vec<pb::VariableValue>, Status> {
        let snapshot =
            self.store.snapshot_at_or_before(sheet, revision).map_err(internal)?.ok_or_else(|| {
                Status::data_loss(format!("sheet `{sheet}` has no snapshot before revision {revision}"))
            })?;
        let mut values: Vec<Option<pb::VariableValue>> = snapshot.values.into_iter().map(Some).collect();
        let mut index: HashMap<String, usize> =
            values.iter().enumerate().filter_map(|(i, v)| Some((v.as_ref()?.r#ref.clone(), i))).collect();
        if snapshot.revision < revision {
            for entry in self.store.log(sheet, snapshot.revision + 1, revision).map_err(internal)? {
                for c in entry.changes {
                    match (c.new, index.get(&c.r#ref)) {
                        (Some(v), Some(&i)) => {
                            values[i] = Some(pb::VariableValue { r#ref: c.r#ref, value: Some(v) })
                        }
                        (Some(v), None) => {
                            index.insert(c.r#ref.clone(), values.len());
                            values.push(Some(pb::VariableValue { r#ref: c.r#ref, value: Some(v) }));
                        }
                        (None, Some(&i)) => {
                            values[i] = None;
                            index.remove(&c.r#ref);
                        }
                        (None, None) => {}
                    }
                }
            }
        }
        Ok(values.into_iter().flatten().collect())
    }

    /// The trace of a variable and the variables it depends on, transitively.
    pub fn explain(&self, req: &pb::ExplainRequest) -> Result<pb::ExplainResponse, Status> {
        let entry = self.sheet(&req.sheet_id)?;
        let st = lock(&entry.state);
        let sheet = st.character.sheet();
        let trace = sheet.trace(&req.variable).map_err(|e| Status::not_found(e.message))?;
        let mut nodes = Vec::new();
        walk_dependencies(sheet, &trace.var.to_string(), |r, t, reads| {
            nodes.push(pb::DependencyNode {
                r#ref: r.to_owned(),
                value: Some(convert::value(&t.format, &t.value)),
                reads: reads.to_vec(),
            });
        });
        Ok(pb::ExplainResponse { revision: st.revision, trace: Some(convert::trace(&trace)), nodes })
    }

    /// Why a variable changed between two revisions: replays the log, attributing each change
    /// to the operations whose recomputation reached the variable.
    pub fn why_changed(&self, req: &pb::WhyChangedRequest) -> Result<pb::WhyChangedResponse, Status> {
        let entry = self.sheet(&req.sheet_id)?;
        let current = lock(&entry.state).revision;
        let to = req.to_revision.unwrap_or(current);
        if to > current || req.from_revision > to {
            return Err(Status::out_of_range(format!(
                "revisions must satisfy from ≤ to ≤ {current} (the current revision); got from {} to {to}",
                req.from_revision
            )));
        }
        let var = req.variable.as_str();
        let is_var = |r: &str| r.eq_ignore_ascii_case(var);
        // Start from the nearest checkpoint at or before `from` (the state at that revision), so
        // the cost is the range asked plus at most CHECKPOINT_EVERY revisions; else from 0.
        let (start, mut version, mut character) =
            match self.checkpoints.before(&req.sheet_id, req.from_revision) {
                Some((revision, version, c)) => (revision + 1, version, c),
                None => {
                    let first = self.store.log_limited(&req.sheet_id, 0, 0, 1).map_err(internal)?;
                    let version = first.first().map_or(0, |e| e.ruleset_version);
                    let ruleset = self.ruleset_at(&entry.ruleset, version)?;
                    (0, version, Character::new(ruleset).map_err(|e| convert::sheet_error(&e))?)
                }
            };
        let log = self.store.log(&req.sheet_id, start, to).map_err(internal)?;
        self.replayed.fetch_add(log.len() as u64, std::sync::atomic::Ordering::Relaxed);
        character.record_evaluations(true);
        let mut out = pb::WhyChangedResponse {
            from_revision: req.from_revision,
            to_revision: to,
            ..Default::default()
        };
        let current_value =
            |c: &Character| c.sheet().typed_value(var).ok().map(|(_, f, s)| convert::value(&f, &s));
        for e in &log {
            // Each revision replays against the ruleset version it was made with: where the
            // version changes (a move), the history so far replays against the new one, as the
            // move did.
            if e.ruleset_version != version {
                version = e.ruleset_version;
                let before =
                    self.store.log(&req.sheet_id, 0, e.revision.saturating_sub(1)).map_err(internal)?;
                let before = if e.revision == 0 { &[][..] } else { &before[..] };
                character = replay(self.ruleset_at(&entry.ruleset, version)?, before)
                    .map_err(|m| Status::failed_precondition(format!("replaying the history: {m}")))?;
                character.record_evaluations(true);
            }
            let ops = convert::operations(&e.operations, &REPLAY_LIMITS)?;
            if e.revision <= req.from_revision {
                character.apply(&ops).map_err(|err| replay_failed(e.revision, &err))?;
                if e.revision > 0 && e.revision.is_multiple_of(CHECKPOINT_EVERY) {
                    self.checkpoints.put(&req.sheet_id, e.revision, version, &character);
                }
            } else {
                if let Some(from) = e.moved_from_version
                    && let Some(c) = e.changes.iter().find(|c| is_var(&c.r#ref))
                {
                    out.causes.push(pb::Cause {
                        revision: e.revision,
                        operation_index: 0,
                        operation: None,
                        description: format!(
                            "the sheet moved from version {from} to {} of ruleset `{}`",
                            e.ruleset_version, entry.ruleset.id
                        ),
                        before: c.old.clone(),
                        after: c.new.clone(),
                        via: vec![],
                    });
                }
                let mut i = 0;
                while i < ops.len() {
                    let before = current_value(&character);
                    // One operation at a time; if one cannot stand alone (it needs the rest of
                    // its batch), the rest of the batch goes together.
                    let (report, upto) = match character.apply(&ops[i..=i]) {
                        Ok(r) => (r, i + 1),
                        Err(_) => {
                            let r =
                                character.apply(&ops[i..]).map_err(|err| replay_failed(e.revision, &err))?;
                            (r, ops.len())
                        }
                    };
                    let reached = report.evaluated.iter().any(|r| is_var(&r.to_string()))
                        || report.changed.iter().any(|c| is_var(&c.var.to_string()));
                    if reached {
                        let deps = dependencies(&character, var);
                        let via = report
                            .changed
                            .iter()
                            .map(|c| c.var.to_string())
                            .filter(|r| deps.contains(&r.to_ascii_lowercase()) || is_var(r))
                            .collect();
                        let mut description = convert::describe(&e.operations[i]);
                        if upto > i + 1 {
                            description = format!(
                                "{description} (with operations {}–{} of its batch)",
                                i + 1,
                                upto - 1
                            );
                        }
                        out.causes.push(pb::Cause {
                            revision: e.revision,
                            operation_index: i as u32,
                            operation: Some(e.operations[i].clone()),
                            description,
                            before,
                            after: current_value(&character),
                            via,
                        });
                    }
                    i = upto;
                }
            }
            if e.revision == req.from_revision {
                out.from_value = current_value(&character);
                out.from_trace = character.sheet().trace(var).ok().map(|t| convert::trace(&t));
            }
        }
        out.to_value = current_value(&character);
        out.to_trace = character.sheet().trace(var).ok().map(|t| convert::trace(&t));
        if out.from_trace.is_none() && out.to_trace.is_none() {
            return Err(Status::not_found(format!(
                "no variable `{var}` on sheet `{}` at revision {} or {to}",
                req.sheet_id, req.from_revision
            )));
        }
        out.diff = diff_traces(out.from_trace.as_ref(), out.to_trace.as_ref());
        Ok(out)
    }

    // -----------------------------------------------------------------------------------------
    // Watching

    /// Subscribes to a sheet's events; with `from`, the revisions after `from` up to the one at
    /// subscription are to be replayed first (later ones arrive on the receiver).
    pub fn watch(&self, id: &str, from: Option<u64>) -> Result<Subscription, Status> {
        let entry = self.sheet(id)?;
        let (rx, current) = {
            let st = lock(&entry.state);
            (entry.events.subscribe(), st.revision)
        };
        let replay = match from {
            Some(from) if from > current => {
                return Err(Status::out_of_range(format!(
                    "sheet `{id}` is at revision {current}; cannot resume from {from}"
                )));
            }
            Some(from) => from + 1..=current,
            #[allow(clippy::reversed_empty_ranges, reason = "an empty range: nothing to replay")]
            None => 1..=0,
        };
        Ok(Subscription { entry, rx, replay, current })
    }

    /// Up to `max` logged revisions of a sheet from `from` through `to`, as change events.
    pub fn replay_chunk(
        &self,
        id: &str,
        from: u64,
        to: u64,
        max: usize,
    ) -> Result<Vec<pb::WatchEvent>, Status> {
        let log = self.store.log_limited(id, from, to, max).map_err(internal)?;
        Ok(log
            .into_iter()
            .map(|e| pb::WatchEvent {
                revision: e.revision,
                event: Some(pb::watch_event::Event::Changes(pb::Changes { changes: e.changes })),
            })
            .collect())
    }

    /// A resync event: the sheet's current (filtered) values.
    pub fn resync(&self, entry: &SheetEntry, filter: &Filter, reason: &str) -> pb::WatchEvent {
        let st = lock(&entry.state);
        let values = all_values(&st.character).into_iter().filter(|v| filter.matches(&v.r#ref)).collect();
        pb::WatchEvent {
            revision: st.revision,
            event: Some(pb::watch_event::Event::Resync(pb::Resync { reason: reason.to_owned(), values })),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Batch

    /// Solves one independent sheet specification.
    pub fn solve_one(&self, item: &pb::BatchItem) -> pb::BatchResult {
        use pb::batch_result::Result as R;
        let result = (|| {
            let ruleset = self.ruleset_entry(&item.ruleset_id).map_err(|s| {
                vec![pb::Diagnostic {
                    code: "request.unknown_ruleset".into(),
                    message: s.message().to_owned(),
                    ..Default::default()
                }]
            })?;
            solve_spec(
                ruleset.current.load().ruleset.clone(),
                &item.operations,
                &item.variables,
                &self.limits.ops,
            )
        })();
        pb::BatchResult {
            id: item.id.clone(),
            result: Some(match result {
                Ok(values) => R::Values(pb::BatchValues { values }),
                Err(diagnostics) => R::Error(pb::ErrorInfo { diagnostics }),
            }),
        }
    }
}

/// Builds one sheet from operations and returns its (selected) values; shared by SolveBatch and
/// `sheetd batch`.
pub fn solve_spec(
    ruleset: Arc<Ruleset>,
    operations: &[pb::Operation],
    variables: &[String],
    limits: &OpLimits,
) -> Result<Vec<pb::VariableValue>, Vec<pb::Diagnostic>> {
    let ops = convert::operations(operations, limits).map_err(|s| diagnostics_of(&s))?;
    let mut c = Character::new(ruleset).map_err(|e| diagnostics_of(&convert::sheet_error(&e)))?;
    c.apply(&ops).map_err(|e| diagnostics_of(&convert::sheet_error(&e)))?;
    if variables.is_empty() {
        return Ok(all_values(&c));
    }
    variables
        .iter()
        .map(|r| {
            c.sheet().typed_value(r).map(|(v, f, s)| convert::variable(&v, &f, &s)).map_err(|e| {
                vec![pb::Diagnostic { code: e.code.to_owned(), message: e.message, ..Default::default() }]
            })
        })
        .collect()
}

fn diagnostics_of(s: &Status) -> Vec<pb::Diagnostic> {
    let d = convert::status_diagnostics(s);
    if d.is_empty() {
        vec![pb::Diagnostic {
            code: "request.invalid".into(),
            message: s.message().to_owned(),
            ..Default::default()
        }]
    } else {
        d
    }
}

fn replay_failed(revision: u64, e: &data::SheetError) -> Status {
    Status::new(
        Code::FailedPrecondition,
        format!("revision {revision} no longer applies with the sheet's ruleset: {e}"),
    )
}

fn ruleset_failed(id: &str, diags: &[data::Diagnostic]) -> Status {
    convert::with_details(Code::InvalidArgument, diags.iter().map(convert::diagnostic).collect())
        .map_message(|_| diagnostics_status(id, diags))
}

trait MapMessage {
    fn map_message(self, f: impl FnOnce(&str) -> String) -> Self;
}

impl MapMessage for Status {
    fn map_message(self, f: impl FnOnce(&str) -> String) -> Status {
        Status::with_details(self.code(), f(self.message()), self.details().to_vec().into())
    }
}

/// Replays a log onto a new character.
fn replay(ruleset: Arc<Ruleset>, log: &[LogEntry]) -> Result<Character, String> {
    replay_each(ruleset, log, |_, _| {})
}

/// Replays a log onto a new character, calling `after` with each revision and the state it left.
fn replay_each(
    ruleset: Arc<Ruleset>,
    log: &[LogEntry],
    mut after: impl FnMut(&LogEntry, &Character),
) -> Result<Character, String> {
    let mut c = Character::new(ruleset).map_err(|e| e.to_string())?;
    for e in log {
        let ops = convert::operations(&e.operations, &REPLAY_LIMITS).map_err(|s| s.message().to_owned())?;
        c.apply(&ops).map_err(|err| format!("revision {}: {err}", e.revision))?;
        after(e, &c);
    }
    Ok(c)
}

fn all_values(c: &Character) -> Vec<pb::VariableValue> {
    c.sheet().typed_values().iter().map(|(v, f, s)| convert::variable(v, f, s)).collect()
}

/// The changes from one character's values to another's.
fn diff_values(old: &Character, new: &Character) -> Vec<pb::Change> {
    let before = all_values(old);
    let after = all_values(new);
    let after_refs: HashSet<&str> = after.iter().map(|v| v.r#ref.as_str()).collect();
    // Removed variables first, as in a solver report.
    let mut changes: Vec<pb::Change> = before
        .iter()
        .filter(|v| !after_refs.contains(v.r#ref.as_str()))
        .map(|v| pb::Change { r#ref: v.r#ref.clone(), old: v.value.clone(), new: None })
        .collect();
    let before: HashMap<&str, &pb::Value> =
        before.iter().filter_map(|v| Some((v.r#ref.as_str(), v.value.as_ref()?))).collect();
    for v in after {
        let old = before.get(v.r#ref.as_str()).copied();
        if old != v.value.as_ref() {
            changes.push(pb::Change { r#ref: v.r#ref, old: old.cloned(), new: v.value });
        }
    }
    changes
}

/// Visits `start` and every variable it depends on, transitively, breadth first: each once, with
/// its trace and the variables its modifiers read directly (in order, without repeats).
fn walk_dependencies(sheet: &solver::Sheet, start: &str, mut visit: impl FnMut(&str, &Trace, &[String])) {
    let mut seen = HashSet::from([start.to_owned()]);
    let mut queue = VecDeque::from([start.to_owned()]);
    while let Some(r) = queue.pop_front() {
        let Ok(t) = sheet.trace(&r) else { continue };
        let mut reads: Vec<String> = Vec::new();
        for (var, _) in t.steps.iter().flat_map(|s| s.reads.iter()) {
            let name = var.to_string();
            if !reads.contains(&name) {
                reads.push(name.clone());
            }
            if seen.insert(name.clone()) {
                queue.push_back(name);
            }
        }
        visit(&r, &t, &reads);
    }
}

/// `var` and every variable it depends on, transitively (lowercase refs).
fn dependencies(c: &Character, var: &str) -> HashSet<String> {
    let mut all = HashSet::new();
    walk_dependencies(c.sheet(), var, |r, _, _| {
        all.insert(r.to_ascii_lowercase());
    });
    all
}

/// Compares two traces modifier by modifier.
fn diff_traces(from: Option<&pb::Trace>, to: Option<&pb::Trace>) -> Vec<pb::StepDiff> {
    use pb::step_diff::Kind;
    let empty = Vec::new();
    let from_steps = from.map_or(&empty, |t| &t.steps);
    let to_steps = to.map_or(&empty, |t| &t.steps);
    let mut out = Vec::new();
    for t in to_steps {
        match from_steps.iter().find(|f| f.modifier == t.modifier) {
            Some(f) => {
                let same = f.after == t.after && f.instruction == t.instruction && f.condition == t.condition;
                out.push(pb::StepDiff {
                    kind: if same { Kind::Unchanged } else { Kind::Changed } as i32,
                    modifier: t.modifier.clone(),
                    from: Some(f.clone()),
                    to: Some(t.clone()),
                });
            }
            None => out.push(pb::StepDiff {
                kind: Kind::Added as i32,
                modifier: t.modifier.clone(),
                from: None,
                to: Some(t.clone()),
            }),
        }
    }
    for f in from_steps {
        if !to_steps.iter().any(|t| t.modifier == f.modifier) {
            out.push(pb::StepDiff {
                kind: Kind::Removed as i32,
                modifier: f.modifier.clone(),
                from: Some(f.clone()),
                to: None,
            });
        }
    }
    out
}

/// The SHA-256 of a version's content: what kind of source, its paths, every file's path and
/// text, and inline text, each length-prefixed.
fn content_hash(c: &RulesetVersion) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut field = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    field(if c.builtin { b"builtin" } else { b"files" });
    for p in &c.paths {
        field(p.as_bytes());
    }
    for f in &c.files {
        field(f.path.as_bytes());
        field(f.text.as_bytes());
    }
    for p in &c.present {
        field(p.as_bytes());
    }
    field(c.inline_text.as_bytes());
    h.finalize().to_vec()
}

/// Compiles a stored version's content, without reading any file.
fn compile_content(id: &str, c: &RulesetVersion) -> Result<Ruleset, Vec<data::Diagnostic>> {
    if c.builtin {
        data::load_texts(c.files.iter().map(|f| (f.path.as_str(), f.text.as_str())))
    } else if !c.inline_text.is_empty() {
        data::load_str(&c.inline_text, &format!("<inline {id}>"))
    } else {
        let bundle = data::Bundle {
            files: c.files.iter().map(|f| (f.path.clone(), Arc::from(f.text.as_str()))).collect(),
            present: c.present.iter().cloned().collect(),
        };
        data::load_with(&c.paths, &data::Files::memory(bundle))
    }
}

fn record_of(id: &str, source: &Source, version: u64, content: &RulesetVersion) -> RulesetRecord {
    let confined = matches!(source, Source::Paths { confined: true, .. });
    let (paths, inline_text) = match source {
        Source::Builtin => (vec![], String::new()),
        Source::Paths { paths, .. } => {
            (paths.iter().map(|p| p.display().to_string()).collect(), String::new())
        }
        Source::Inline(t) => (vec![], t.clone()),
    };
    RulesetRecord {
        id: id.to_owned(),
        paths,
        inline_text,
        version,
        confined,
        content_hash: content.content_hash.clone(),
    }
}

fn info(entry: &RulesetEntry) -> pb::RulesetInfo {
    let loaded = entry.current.load();
    let s = loaded.ruleset.summary();
    let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
    let source = lock(&entry.source);
    pb::RulesetInfo {
        id: entry.id.clone(),
        version: loaded.version,
        paths: match &*source {
            Source::Paths { paths, .. } => paths.iter().map(|p| p.display().to_string()).collect(),
            Source::Builtin => vec!["(built in: data/rulesets/starter)".to_owned()],
            Source::Inline(_) => vec![],
        },
        inline: matches!(&*source, Source::Inline(_)),
        summary: Some(pb::RulesetSummary {
            files: n(s.files),
            scopes: n(s.scopes),
            formats: n(s.formats),
            variables: n(s.variables),
            channels: n(s.channels),
            functions: n(s.functions),
            kinds: n(s.kinds),
            objects: n(s.objects),
            modifiers: n(s.modifiers),
            skipped_tokens: n(s.skipped_tokens),
        }),
    }
}

fn sheet_info(entry: &SheetEntry, st: &SheetState) -> pb::SheetInfo {
    let mut objects: Vec<String> = st.character.object_ids().iter().map(|o| o.to_string()).collect();
    objects.sort();
    pb::SheetInfo {
        id: entry.id.clone(),
        ruleset_id: entry.ruleset.id.clone(),
        ruleset_version: st.version,
        revision: st.revision,
        objects,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = "[ruleset]\nname = \"t\"\nglobal = \"PC\"\n[defaults]\nNUMBER = 0\n\
                         [variables.PC]\nBase = \"NUMBER\"\n[global]\nmodify = [{ var = \"Base\", set = \"10\" }]\n";

    fn base(values: &[pb::VariableValue]) -> String {
        values
            .iter()
            .find(|v| v.r#ref == "Base")
            .and_then(|v| v.value.as_ref())
            .map(convert::show)
            .unwrap_or_default()
    }

    /// A request holds the version it loaded; a reload meanwhile changes what later requests
    /// get, not what the one in flight computes.
    #[test]
    fn requests_in_flight_finish_on_the_version_they_started_with() {
        let dir = tempfile::tempdir().expect("temp dir");
        let engine = Engine::open(EngineConfig { data_dir: dir.path().to_owned(), ..Default::default() })
            .expect("open");
        let load = pb::LoadRulesetRequest { id: "t".into(), paths: vec![], inline_text: RULES.into() };
        assert!(engine.load_ruleset(&load).expect("load").ok);
        let in_flight = engine.ruleset_entry("t").expect("entry").current.load_full();
        let reload = pb::ReloadRulesetRequest { id: "t".into(), inline_text: RULES.replace("10", "20") };
        assert!(engine.reload_ruleset(&reload).expect("reload").ok);
        let limits = Limits::default().ops;
        let old = solve_spec(in_flight.ruleset.clone(), &[], &[], &limits).expect("solve");
        assert_eq!((in_flight.version, base(&old)), (1, "10".to_owned()));
        let item = pb::BatchItem { id: "x".into(), ruleset_id: "t".into(), ..Default::default() };
        let Some(pb::batch_result::Result::Values(new)) = engine.solve_one(&item).result else {
            panic!("values")
        };
        assert_eq!(base(&new.values), "20");
        // A failed reload swaps nothing.
        let broken =
            pb::ReloadRulesetRequest { id: "t".into(), inline_text: RULES.replace("\"10\"", "\"Nope\"") };
        let r = engine.reload_ruleset(&broken).expect("answers");
        assert!(!r.ok && !r.diagnostics.is_empty());
        assert_eq!(engine.ruleset_entry("t").expect("entry").current.load().version, 2);
    }

    #[test]
    fn generated_sheet_ids_skip_ids_clients_chose() {
        let dir = tempfile::tempdir().expect("temp dir");
        let engine = Engine::open(EngineConfig { data_dir: dir.path().to_owned(), ..Default::default() })
            .expect("open");
        let named = pb::CreateSheetRequest { id: "sheet-1".into(), ..Default::default() };
        engine.create_sheet(&named).expect("explicit id");
        let generated = engine.create_sheet(&pb::CreateSheetRequest::default()).expect("generated id");
        assert_eq!(generated.sheet.map(|s| s.id).as_deref(), Some("sheet-2"));
        let e = engine.create_sheet(&named).expect_err("taken");
        assert_eq!(e.code(), Code::AlreadyExists);
        let bad = pb::CreateSheetRequest { id: "no spaces".into(), ..Default::default() };
        assert_eq!(engine.create_sheet(&bad).expect_err("invalid").code(), Code::InvalidArgument);
    }

    /// WhyChanged over the last few revisions of a long history replays from the nearest
    /// checkpoint, not from revision 0: its cost follows the range asked.
    #[test]
    fn why_changed_starts_from_the_nearest_checkpoint() {
        let dir = tempfile::tempdir().expect("temp dir");
        let engine = Engine::open(EngineConfig { data_dir: dir.path().to_owned(), ..Default::default() })
            .expect("open");
        let created = engine.create_sheet(&pb::CreateSheetRequest::default()).expect("create");
        let id = created.sheet.expect("sheet").id;
        let armor = pb::Operation {
            op: Some(pb::operation::Op::AddObject(pb::AddObject {
                kind: "EQUIPMENT".into(),
                key: "Ring Hauberk".into(),
                id: Some("armor".into()),
                parent: None,
            })),
        };
        let off = pb::Operation { op: Some(pb::operation::Op::RemoveObject("armor".into())) };
        let n = 2 * CHECKPOINT_EVERY + 40;
        for r in 0..n {
            let op = if r % 2 == 0 { armor.clone() } else { off.clone() };
            let req =
                pb::ApplyRequest { sheet_id: id.clone(), expected_revision: Some(r), operations: vec![op] };
            engine.apply(&req).expect("apply");
        }
        let ask = |from: u64| pb::WhyChangedRequest {
            sheet_id: id.clone(),
            variable: "AC".into(),
            from_revision: from,
            to_revision: None,
        };
        let before = engine.replayed_revisions();
        let near_end = engine.why_changed(&ask(n - 10)).expect("why");
        let replayed = engine.replayed_revisions() - before;
        assert_eq!(near_end.causes.len(), 10, "every revision toggled the armor");
        assert_eq!(
            replayed,
            n - 2 * CHECKPOINT_EVERY,
            "replayed from the checkpoint at {}",
            2 * CHECKPOINT_EVERY
        );
        // The same answer as a replay from the start (a fresh engine: no Apply checkpoints, and
        // a restore's checkpoints are states it replayed itself).
        drop(engine);
        let fresh = Engine::open(EngineConfig { data_dir: dir.path().to_owned(), ..Default::default() })
            .expect("reopen");
        fresh.checkpoints.forget(&id);
        let full = fresh.why_changed(&ask(n - 10)).expect("why");
        assert_eq!(fresh.replayed_revisions(), n + 1, "no checkpoint: from revision 0");
        assert_eq!(format!("{full:?}"), format!("{near_end:?}"));
    }
}
