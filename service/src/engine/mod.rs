//! The engine: rulesets (hot-swappable), live sheets, their history and change events, over a
//! [`Store`]. It speaks the domain — operations are [`data::SheetOp`]s, values are
//! [`data::record`]s, errors are [`EngineError`]s — and knows nothing of gRPC, protobuf or JSON;
//! it prints nothing (it logs through `tracing`).
//!
//! Every method is synchronous and may block (solving, the store's durable writes); the gRPC
//! layer calls it from blocking threads (or in place for a lone call, when the store
//! [runs in place](Store::runs_in_place)).
//!
//! Read in this order: [`rulesets`] (load, reload, versions), [`sheets`] (create, apply, upgrade,
//! delete: `migrate` then `apply_and_log`), [`history`] (values now and past, explain,
//! why-changed), `watch` (change events), `batch` (independent sheets), `checkpoints`,
//! `replicas` (several servers over one shared store: catching up, following the others),
//! [`policy`] (limits and ids), [`error`].
//!
//! Concurrency:
//! - A ruleset is an `ArcSwap` of its current compiled version. A request loads the `Arc` once
//!   and finishes on that version even if a reload swaps in another meanwhile.
//! - Each sheet has one writer at a time: its state sits behind a mutex, held for the whole of a
//!   change, including the durable write, so revisions are written in order.
//! - Change events go out on a bounded broadcast channel per sheet.

pub mod batch;
pub mod catalog;
mod checkpoints;
pub mod error;
pub mod history;
pub mod policy;
mod replicas;
pub mod rulesets;
pub mod sheets;
pub mod watch;

pub use error::{EngineError, Problem, Resource};
pub use history::{Explanation, Node};
pub use policy::{Limits, OpLimits};
pub use rulesets::{NewRuleset, RulesetInfo, RulesetOutcome, STARTER};
pub use sheets::{Applied, LiveSheet, Moved, RECENT_REQUESTS, RequestKey, SheetInfo};
pub use watch::{Event, EventKind, Filter, Subscription};

use crate::store::{RedbStore, RulesetRecord, SheetRecord, Store, StoreError, log_all};
use checkpoints::Checkpoints;
use rulesets::Source;
use sheets::SheetState;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

/// A checkpoint of a sheet's state is kept every this many revisions.
pub const CHECKPOINT_EVERY: u64 = 128;

/// What the engine starts with.
#[derive(Clone, Debug, Default)]
pub struct EngineConfig {
    pub data_dir: PathBuf,
    /// A PostgreSQL URL: the store several servers share; `None`: the embedded store in
    /// `data_dir`.
    pub store: Option<String>,
    /// Rulesets to load at start (id → paths), besides the starter and those in the store.
    pub preload: Vec<(String, Vec<PathBuf>)>,
    /// The ruleset used when a request names none.
    pub default_ruleset: String,
    pub limits: Limits,
    /// Where paths named by clients may lead (preloaded paths are the operator's own).
    pub ruleset_roots: Vec<PathBuf>,
}

/// The engine.
pub struct Engine {
    store: Box<dyn Store>,
    rulesets: RwLock<BTreeMap<String, Arc<rulesets::RulesetEntry>>>,
    sheets: RwLock<BTreeMap<String, Arc<LiveSheet>>>,
    /// Stored sheets that cannot be served, with the answer calls on them get: DATA_LOSS for a
    /// damaged record, UNAVAILABLE while their ruleset is not loaded. Their ids stay taken.
    unservable: RwLock<BTreeMap<String, EngineError>>,
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

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks (no input can make the engine panic), and even
    // then the guarded data is consistent between statements: keep serving.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Engine {
    /// Opens the store — PostgreSQL when a URL is given, else the embedded store in the data
    /// directory — then as [`Engine::with_store`].
    ///
    /// The preloaded rulesets are compiled first: when any fails, every error of every one is
    /// reported (at file:line:col, paths as given) and no store is created.
    pub fn open(config: EngineConfig) -> Result<Engine, String> {
        let compiled = preload(&config)?;
        let store: Box<dyn Store> = match &config.store {
            Some(url) => Box::new(crate::store::PostgresStore::open(url).map_err(|e| e.to_string())?),
            None => Box::new(
                RedbStore::open(&config.data_dir, config.limits.store_cache_bytes)
                    .map_err(|e| e.to_string())?,
            ),
        };
        // The default ruleset root, ready for the operator's files.
        let _ = std::fs::create_dir_all(config.data_dir.join("rulesets"));
        Engine::with_compiled(config, store, compiled)
    }

    /// Loads the starter, configured and stored rulesets, and replays every stored sheet. A
    /// stored sheet or ruleset that cannot be loaded is logged and skipped (its records stay in
    /// the store); its calls get the reason.
    pub fn with_store(config: EngineConfig, store: Box<dyn Store>) -> Result<Engine, String> {
        Engine::with_compiled(config, store, HashMap::new())
    }

    /// [`Engine::with_store`], with preloaded rulesets already compiled (by id).
    fn with_compiled(
        config: EngineConfig,
        store: Box<dyn Store>,
        mut compiled: HashMap<String, rulesets::Compiled>,
    ) -> Result<Engine, String> {
        let default_ruleset = if config.default_ruleset.is_empty() {
            STARTER.to_owned()
        } else {
            config.default_ruleset.clone()
        };
        let engine = Engine {
            store,
            rulesets: RwLock::default(),
            sheets: RwLock::default(),
            unservable: RwLock::default(),
            creating: Mutex::default(),
            checkpoints: Checkpoints::default(),
            replayed: Default::default(),
            default_ruleset,
            limits: config.limits,
            ruleset_roots: config.ruleset_roots.clone(),
        };
        engine.load_at_start(&config, &mut compiled)?;
        if !engine.read_rulesets().contains_key(&engine.default_ruleset) {
            return Err(format!("the default ruleset `{}` is not loaded", engine.default_ruleset));
        }
        engine.restore_sheets()?;
        Ok(engine)
    }

    /// Loads the starter, the preloaded rulesets and the stored ones. A stored ruleset whose
    /// content changed since it was stored comes back as a new version.
    fn load_at_start(
        &self,
        config: &EngineConfig,
        compiled: &mut HashMap<String, rulesets::Compiled>,
    ) -> Result<(), String> {
        let mut stored: HashMap<String, RulesetRecord> = HashMap::new();
        for r in self.store.rulesets().map_err(|e| e.to_string())? {
            match r {
                Ok(r) => {
                    stored.insert(r.id.clone(), r);
                }
                Err((id, e)) => {
                    tracing::error!(ruleset = %id, error = %e, "stored ruleset record damaged; not loaded")
                }
            }
        }
        let mut sources: Vec<(String, Source)> = vec![(STARTER.to_owned(), Source::Builtin)];
        for (id, paths) in &config.preload {
            sources.push((id.clone(), Source::Paths { paths: paths.clone(), confined: false }));
        }
        let mut rest: Vec<&RulesetRecord> = stored.values().collect();
        rest.sort_by(|a, b| a.id.cmp(&b.id));
        rest.retain(|r| !sources.iter().any(|(id, _)| *id == r.id));
        for r in rest {
            let source = if !r.inline_text.is_empty() {
                Source::Inline(r.inline_text.clone())
            } else {
                Source::Paths { paths: r.paths.iter().map(PathBuf::from).collect(), confined: true }
            };
            sources.push((r.id.clone(), source));
        }
        for (id, source) in sources {
            let ready = compiled.remove(&id).map(Ok);
            let compiled = match ready.unwrap_or_else(|| self.compile(&id, &source)) {
                Ok(c) => c,
                Err(diags) => {
                    let message = error::ruleset_summary(&id, &diags);
                    if matches!(source, Source::Builtin) || config.preload.iter().any(|(p, _)| *p == id) {
                        return Err(message);
                    }
                    tracing::error!(ruleset = %id, "{message}; its sheets are not served");
                    continue;
                }
            };
            // A ruleset whose content changed since it was stored is a new version; sheets stay
            // on the version their revisions were made with until they move.
            let version = match stored.get(&id) {
                None => 1,
                Some(r) if r.content_hash.is_empty() || r.content_hash == compiled.content.content_hash => {
                    r.version.max(1)
                }
                Some(r) => {
                    tracing::info!(ruleset = %id, version = r.version + 1, "ruleset changed since it was stored: a new version");
                    r.version + 1
                }
            };
            tracing::info!(ruleset = %id, version, "ruleset loaded");
            self.insert_ruleset(&id, source, version, compiled).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Restores every stored sheet; those that cannot be are kept as unservable, with why.
    fn restore_sheets(&self) -> Result<(), String> {
        for rec in self.store.sheets().map_err(|e| e.to_string())? {
            let (id, failure) = match rec {
                Ok(rec) => match self.restore_sheet(&rec) {
                    Ok(()) => continue,
                    Err(f) => (rec.id, f),
                },
                Err((id, e)) => (id, EngineError::DataLoss(e.to_string())),
            };
            tracing::error!(sheet = %policy::LogSafe(&id), error = %failure, "sheet not restored");
            let message = format!("sheet `{id}` cannot be served: {failure}");
            let answer = match failure {
                EngineError::DataLoss(_) => EngineError::DataLoss(message),
                EngineError::Unavailable(_) => EngineError::Unavailable(message),
                _ => EngineError::precondition(message),
            };
            self.write_unservable().insert(id, answer);
        }
        Ok(())
    }

    /// Restores a stored sheet by replaying its log, on the version its last revision was made
    /// with.
    fn restore_sheet(&self, rec: &SheetRecord) -> Result<(), EngineError> {
        let entry = self.ruleset_entry(&rec.ruleset_id).map_err(|_| {
            EngineError::Unavailable(format!("its ruleset `{}` is not loaded", rec.ruleset_id))
        })?;
        let log = log_all(&*self.store, &rec.id, 0, u64::MAX).map_err(|e| match e {
            StoreError::Damaged(m) => EngineError::DataLoss(m),
            e => EngineError::Unavailable(e.to_string()),
        })?;
        let last = log.last().ok_or_else(|| EngineError::DataLoss("it has no revisions".to_owned()))?;
        let (revision, version) = (last.revision.number, last.revision.ruleset_version);
        let ruleset = self.ruleset_at(&entry, version)?;
        let game =
            self.replay_checkpointed(&rec.id, ruleset, version, &log).map_err(EngineError::precondition)?;
        let state =
            SheetState { game, version, revision, deleted: false, recent: Default::default(), stale: false };
        let sheet = LiveSheet::new(&rec.id, entry, state, self.limits.watch_buffer);
        self.serve(sheet);
        Ok(())
    }

    /// Serves a sheet under its id, unless one is served there already: then that one stays.
    /// Over a shared store the follower and a request may load the same stored
    /// sheet at once, and a watcher may already hold the first: replacing it would leave that
    /// watcher on a copy nothing catches up.
    fn serve(&self, sheet: Arc<LiveSheet>) {
        self.write_sheets().entry(sheet.id.clone()).or_insert(sheet);
    }

    /// A served sheet by id; a stored sheet that cannot be served answers why.
    pub fn sheet(&self, id: &str) -> Result<Arc<LiveSheet>, EngineError> {
        if let Some(s) = self.read_sheets().get(id) {
            return Ok(s.clone());
        }
        Err(match self.read_unservable().get(id) {
            Some(e) => e.clone(),
            None => EngineError::not_found(Resource::Sheet, id),
        })
    }

    /// What the server holds now, for metrics: sheets, open watch streams, and the version each
    /// ruleset serves.
    pub fn stats(&self) -> Stats {
        let sheets = self.read_sheets();
        let watchers = sheets.values().map(|s| s.events.receiver_count()).sum();
        let rulesets = self.rulesets().into_iter().map(|r| (r.id, r.version)).collect();
        Stats { sheets: sheets.len(), watchers, rulesets }
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether a call may run on an async runtime's thread ([`Store::runs_in_place`]).
    pub fn runs_in_place(&self) -> bool {
        self.store.runs_in_place()
    }

    /// Where the store is.
    pub fn store_location(&self) -> String {
        self.store.location()
    }

    fn read_rulesets(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<rulesets::RulesetEntry>>> {
        self.rulesets.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn read_sheets(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<LiveSheet>>> {
        self.sheets.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_sheets(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<LiveSheet>>> {
        self.sheets.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn read_unservable(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, EngineError>> {
        self.unservable.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write_unservable(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, EngineError>> {
        self.unservable.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The preloaded rulesets (`--ruleset ID=PATH…`), compiled, by id; or a report of every error of
/// every one that fails, each at its file:line:col.
fn preload(config: &EngineConfig) -> Result<HashMap<String, rulesets::Compiled>, String> {
    let mut compiled = HashMap::new();
    let mut report = Vec::new();
    for (id, paths) in &config.preload {
        let source = rulesets::Source::Paths { paths: paths.clone(), confined: false };
        match rulesets::compile(&config.limits, &config.ruleset_roots, id, &source) {
            Ok(c) => {
                compiled.insert(id.clone(), c);
            }
            Err(diags) => {
                let files: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                let n = diags.len();
                let mut text = format!(
                    "ruleset `{id}` ({}) has {n} error{}:\n",
                    files.join(", "),
                    if n == 1 { "" } else { "s" }
                );
                for d in &diags {
                    text.push_str(&format!("  {d}\n"));
                }
                report.push(text);
            }
        }
    }
    if report.is_empty() { Ok(compiled) } else { Err(report.join("\n")) }
}

/// What [`Engine::stats`] reads.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub sheets: usize,
    /// Watch streams open (over every sheet).
    pub watchers: usize,
    /// Each ruleset's id and the version it serves.
    pub rulesets: Vec<(String, u64)>,
}

#[cfg(test)]
mod tests;
