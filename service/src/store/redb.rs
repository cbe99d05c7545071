//! The embedded store, [`RedbStore`]: one redb file (`sheetd.redb`) in the data directory.
//!
//! Tables (keys → the store's protobuf records, [`super::records`]):
//! - `meta`: counters (`next_sheet` for generated sheet ids).
//! - `rulesets`: ruleset id → [`RulesetRecord`] (where it loads from, its version).
//! - `sheets`: sheet id → [`SheetRecord`].
//! - `log`: (sheet id, revision) → [`LogRecord`].
//! - `snapshots`: (sheet id, revision) → [`SnapshotRecord`].
//! - `ruleset_versions`: (ruleset id, version) → [`RulesetVersion`].
//!
//! Every write other than an append is one redb transaction committed with immediate
//! durability (fsync). Appends — one per Apply — go to the journal first
//! ([`super::journal`], `sheetd.journal` beside the redb file).
//!
//! **Group commit.** Appends to sheets' logs are committed together: an append joins a queue;
//! the first appender to find no commit in progress becomes the *leader*, takes every append
//! queued, checks each against its sheet's last revision in turn (so two appends to one sheet
//! behave as if one after the other), writes the accepted ones as one journal frame (one
//! `fdatasync`), and hands each waiting appender its own result. Appenders that arrive during the
//! commit wait for the next one. So concurrent writers share an fsync while every caller still
//! returns only once its own record is durable; a lone writer pays one small write and one
//! fsync, where a redb transaction wrote about eight scattered pages.
//!
//! **Checkpoints.** Journaled revisions are moved into the `log` and `snapshots` tables in one
//! transaction, and the journal emptied, by a leader: once the journal holds 2 MiB or 4,096
//! revisions, before anything reads the log or snapshots or deletes a sheet (reads then see
//! every answered revision), and when the store is dropped. Opening the store replays what the
//! journal holds before anything reads. The last revision of each sheet appended since the
//! store opened is kept in memory for the revision check; other sheets' come from the B-tree.
//!
//! Integrity: every record is sealed as `0xFF 'S'`, a CRC-32 of its key and payload, then the
//! payload. A record whose checksum or decoding fails is reported as [`StoreError::Damaged`]
//! naming the table and key (the sheet and revision), so one damaged sheet answers DATA_LOSS
//! while the rest keep serving; [`verify`] lists every damaged record. Records written before
//! checksums existed are sealed when the store is opened. A panic inside redb (some page damage
//! does that) becomes an error, never a crash.

use super::journal::{Append, Journal};
use super::records::{LogRecord, RulesetRecord, RulesetVersion, SheetRecord, SnapshotRecord};
use super::seal::{SEAL, decode, domain, id_key, rev_key, seal, seal_log, seal_message};
use super::{Logged, Record, Snapshot, Store, StoreError};
use prost::Message;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition, TableHandle};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const RULESETS: TableDefinition<&str, &[u8]> = TableDefinition::new("rulesets");
const SHEETS: TableDefinition<&str, &[u8]> = TableDefinition::new("sheets");
const LOG: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("log");
const SNAPSHOTS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("snapshots");
const RULESET_VERSIONS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("ruleset_versions");

fn err(what: &str) -> impl Fn(redb::Error) -> StoreError + '_ {
    move |e| StoreError::Failed(format!("store: {what}: {e}"))
}

/// Runs `f`, turning a panic inside it (redb panics on some damaged pages) into an error.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(StoreError::Damaged(format!("store: {what}: the store file is damaged ({why})")))
    })
}

/// The embedded store. Cheap to share: redb serializes writers and lets readers run
/// concurrently.
pub struct RedbStore {
    db: Database,
    path: PathBuf,
    /// Appends waiting for a commit, and the results of committed ones (see the module docs).
    group: Mutex<Group>,
    /// Signalled when a group commit ends.
    committed: Condvar,
    /// The journal and what it holds; locked only by the leader (see [`Group::leader`]).
    wal: Mutex<Wal>,
}

/// Journaled revisions: only the group commit's leader touches this.
#[derive(Default)]
struct Wal {
    /// `None` for a store opened read-only (`verify`).
    journal: Option<Journal>,
    /// Revisions in the journal, not yet in the B-tree, in order.
    pending: Vec<Append>,
    /// The last revision of every sheet appended to since the store opened.
    last: HashMap<String, u64>,
}

/// A checkpoint runs once the journal holds this many bytes of frames …
const CHECKPOINT_BYTES: u64 = 2 << 20;
/// … or this many revisions (few in tests, so that tests reach it).
const CHECKPOINT_REVISIONS: usize = if cfg!(test) { 16 } else { 4096 };

/// The group commit's state, under [`RedbStore::group`].
#[derive(Default)]
struct Group {
    /// Appends not yet taken by a leader, by ticket.
    queue: Vec<(u64, Append)>,
    /// Results not yet collected by their appender, by ticket.
    done: HashMap<u64, Result<(), StoreError>>,
    /// The next ticket.
    next: u64,
    /// Whether a leader is committing.
    leader: bool,
    /// How many group commits ran (for tests).
    commits: u64,
    /// How many appenders wait on `committed` for a leader: when none does (a lone writer),
    /// the leader skips the wake-up, a system call per commit.
    waiting: usize,
}

impl RedbStore {
    /// Opens (creating when needed) `sheetd.redb` in `dir`, creating the directory too, with a
    /// page cache of `cache_bytes`.
    pub fn open(dir: &Path, cache_bytes: usize) -> Result<RedbStore, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Failed(format!("cannot create data directory {}: {e}", dir.display()))
        })?;
        let path = dir.join("sheetd.redb");
        let db = guarded("open", || {
            redb::Builder::new()
                .set_cache_size(cache_bytes)
                .create(&path)
                .map_err(|e| StoreError::Failed(format!("cannot open store {}: {e}", path.display())))
        })?;
        let store =
            RedbStore { db, path, group: Mutex::default(), committed: Condvar::new(), wal: Mutex::default() };
        store.write("create tables", |tx| {
            tx.open_table(META)?;
            tx.open_table(RULESETS)?;
            tx.open_table(SHEETS)?;
            tx.open_table(LOG)?;
            tx.open_table(SNAPSHOTS)?;
            tx.open_table(RULESET_VERSIONS)?;
            Ok(())
        })?;
        store.seal_legacy_records()?;
        // What the journal holds goes into the B-tree before anything reads it.
        let (journal, found) = Journal::open(&dir.join("sheetd.journal"))?;
        let mut wal = Wal { journal: Some(journal), pending: found, last: HashMap::new() };
        store.checkpoint_locked(&mut wal)?;
        *store.wal() = wal;
        Ok(store)
    }

    /// The journal's state. (As with the group: nothing panics while holding it.)
    fn wal(&self) -> MutexGuard<'_, Wal> {
        self.wal.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Moves the journal's revisions into the B-tree (one transaction, synced), then empties
    /// the journal. Called by the leader, or with no other user (opening, dropping).
    fn checkpoint_locked(&self, wal: &mut Wal) -> Result<(), StoreError> {
        if wal.pending.is_empty() {
            return Ok(());
        }
        let pending = &wal.pending;
        self.write("move journaled revisions into the log", |tx| {
            let mut log = tx.open_table(LOG)?;
            let mut snapshots = tx.open_table(SNAPSHOTS)?;
            for a in pending {
                log.insert((a.sheet.as_str(), a.revision), a.log.as_slice())?;
                if let Some((r, bytes)) = &a.snapshot {
                    snapshots.insert((a.sheet.as_str(), *r), bytes.as_slice())?;
                }
            }
            Ok(())
        })?;
        // In the B-tree now: replaying the journal again would write the same bytes.
        wal.pending.clear();
        if let Some(j) = wal.journal.as_mut() {
            j.reset()?;
        }
        Ok(())
    }

    /// Makes every answered revision readable from the B-tree: a checkpoint, taken as the
    /// leader (appends queue meanwhile), when the journal holds any.
    fn settle(&self) -> Result<(), StoreError> {
        let mut group = self.group();
        while group.leader {
            group.waiting += 1;
            group = self.committed.wait(group).unwrap_or_else(PoisonError::into_inner);
            group.waiting -= 1;
        }
        group.leader = true;
        drop(group);
        let result = {
            let mut wal = self.wal();
            self.checkpoint_locked(&mut wal)
        };
        let mut group = self.group();
        group.leader = false;
        drop(group);
        // Appenders that queued meanwhile: one of them leads next.
        self.committed.notify_all();
        result
    }

    /// The last revision logged for `sheet` in the B-tree.
    fn last_logged(&self, sheet: &str) -> Result<Option<u64>, StoreError> {
        self.read("read the last revision", |tx| {
            let log = tx.open_table(LOG)?;
            let last = log.range((sheet, 0)..=(sheet, u64::MAX))?.next_back().transpose()?;
            Ok(last.map(|(k, _)| k.value().1))
        })
    }

    /// Seals records written before checksums existed (a record that does not start with the
    /// seal), once, in one transaction.
    fn seal_legacy_records(&self) -> Result<(), StoreError> {
        self.write("add checksums", |tx| {
            for table in [RULESETS, SHEETS] {
                let mut t = tx.open_table(table)?;
                let mut legacy = Vec::new();
                for row in t.iter()? {
                    let (k, v) = row?;
                    if !v.value().starts_with(&SEAL) {
                        legacy.push((k.value().to_owned(), v.value().to_vec()));
                    }
                }
                let name = table.name().to_owned();
                for (k, v) in legacy {
                    t.insert(k.as_str(), seal(&id_key(&name, &k), &v).as_slice())?;
                }
            }
            for table in [LOG, SNAPSHOTS, RULESET_VERSIONS] {
                let mut t = tx.open_table(table)?;
                let mut legacy = Vec::new();
                for row in t.iter()? {
                    let (k, v) = row?;
                    if !v.value().starts_with(&SEAL) {
                        let (sheet, rev) = k.value();
                        legacy.push((sheet.to_owned(), rev, v.value().to_vec()));
                    }
                }
                let name = table.name().to_owned();
                for (sheet, rev, v) in legacy {
                    t.insert((sheet.as_str(), rev), seal(&rev_key(&name, &sheet, rev), &v).as_slice())?;
                }
            }
            Ok(())
        })
    }

    /// The group commit's state. (No code panics while holding it: a poisoned lock is still
    /// consistent, so it is taken as it is.)
    fn group(&self) -> MutexGuard<'_, Group> {
        self.group.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `batch` as one journal frame, each append checked against its sheet's last
    /// revision as the batch has it so far; returns each ticket's result. When the write fails,
    /// every append in it fails with that error. Called by the leader only.
    fn commit_appends(&self, batch: Vec<(u64, Append)>) -> Vec<(u64, Result<(), StoreError>)> {
        let mut wal = self.wal();
        let mut results = Vec::with_capacity(batch.len());
        // Whether each append passed its check, in batch order.
        let mut passed = Vec::with_capacity(batch.len());
        {
            // Last revisions as this batch leaves them (an append may follow another to its
            // sheet).
            let mut last: HashMap<&str, u64> = HashMap::new();
            for (ticket, a) in &batch {
                let sheet = a.sheet.as_str();
                let known = match last.get(sheet).or_else(|| wal.last.get(sheet)) {
                    Some(&r) => Ok(Some(r)),
                    None => self.last_logged(sheet),
                };
                let refused = match known {
                    Err(e) => Some(e),
                    Ok(known) if a.revision == 0 || known != Some(a.revision - 1) => {
                        Some(StoreError::Conflict(match known {
                            Some(l) => format!(
                                "sheet `{sheet}` is at revision {l}, not {}",
                                a.revision.saturating_sub(1)
                            ),
                            None => format!("sheet `{sheet}` has no log"),
                        }))
                    }
                    Ok(_) => None,
                };
                passed.push(refused.is_none());
                match refused {
                    Some(e) => results.push((*ticket, Err(e))),
                    None => {
                        last.insert(sheet, a.revision);
                    }
                }
            }
        }
        let accepted: Vec<(u64, Append)> =
            batch.into_iter().zip(passed).filter_map(|(item, ok)| ok.then_some(item)).collect();
        if accepted.is_empty() {
            return results;
        }
        let frame: Vec<&Append> = accepted.iter().map(|(_, a)| a).collect();
        let written = match wal.journal.as_mut() {
            Some(j) => guarded("save revisions", || j.write(&frame)),
            None => Err(StoreError::Failed("store: opened read-only".into())),
        };
        match written {
            Ok(()) => {
                for (ticket, a) in accepted {
                    wal.last.insert(a.sheet.clone(), a.revision);
                    wal.pending.push(a);
                    results.push((ticket, Ok(())));
                }
                let full = wal.pending.len() >= CHECKPOINT_REVISIONS
                    || wal.journal.as_ref().is_some_and(|j| j.used() >= CHECKPOINT_BYTES);
                if full && let Err(e) = self.checkpoint_locked(&mut wal) {
                    // The revisions are durable in the journal; the next checkpoint retries.
                    tracing::warn!("store: checkpoint failed: {e}");
                }
            }
            Err(e) => results.extend(accepted.into_iter().map(|(ticket, _)| (ticket, Err(e.clone())))),
        }
        results
    }

    /// The store file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write<T>(
        &self,
        what: &str,
        f: impl FnOnce(&redb::WriteTransaction) -> Result<T, redb::Error>,
    ) -> Result<T, StoreError> {
        let run = || -> Result<T, redb::Error> {
            let tx = self.db.begin_write()?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        };
        guarded(what, || run().map_err(err(what)))
    }

    fn read<T>(
        &self,
        what: &str,
        f: impl FnOnce(&redb::ReadTransaction) -> Result<T, redb::Error>,
    ) -> Result<T, StoreError> {
        let run = || -> Result<T, redb::Error> { f(&self.db.begin_read()?) };
        guarded(what, || run().map_err(err(what)))
    }

    /// Every record of a table keyed by id: each decoded, or why not (with its id).
    fn all<M: Message + Default>(
        &self,
        table: TableDefinition<&str, &[u8]>,
        what: &str,
    ) -> Result<Vec<Record<M>>, StoreError> {
        let raw = self.read(what, |tx| {
            let t = tx.open_table(table)?;
            let mut out = Vec::new();
            for row in t.iter()? {
                let (k, v) = row?;
                out.push((k.value().to_owned(), v.value().to_vec()));
            }
            Ok(out)
        })?;
        let name = table.name();
        Ok(raw.into_iter().map(|(k, b)| decode(&id_key(name, &k), &b).map_err(|e| (k, e))).collect())
    }
}

impl Store for RedbStore {
    fn runs_in_place(&self) -> bool {
        // File writes and fdatasync, on the calling thread (the group commit's leader is a
        // caller, followers wait on a condition variable): nothing enters a runtime.
        true
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn rulesets(&self) -> Result<Vec<Record<RulesetRecord>>, StoreError> {
        self.all(RULESETS, "read rulesets")
    }

    fn put_ruleset(&self, r: &RulesetRecord, content: Option<&RulesetVersion>) -> Result<(), StoreError> {
        let bytes = seal(&id_key("rulesets", &r.id), &r.encode_to_vec());
        let version = content.map(|v| {
            (
                v.version,
                &v.content_hash,
                seal(&rev_key("ruleset_versions", &r.id, v.version), &v.encode_to_vec()),
            )
        });
        // The stored record and version, read in the write transaction: what they say decides.
        let conflict = self.write("save ruleset", |tx| {
            let mut rulesets = tx.open_table(RULESETS)?;
            let stored = rulesets.get(r.id.as_str())?.map(|v| v.value().to_vec());
            if let Some(Ok(stored)) = stored.map(|b| decode::<RulesetRecord>(&id_key("rulesets", &r.id), &b))
                && stored.version > r.version
            {
                return Ok(Some(format!("ruleset `{}` is stored at a version after {}", r.id, r.version)));
            }
            let mut versions = tx.open_table(RULESET_VERSIONS)?;
            if let Some((v, hash, b)) = &version {
                let key = rev_key("ruleset_versions", &r.id, *v);
                let before = versions.get((r.id.as_str(), *v))?.map(|x| x.value().to_vec());
                if let Some(Ok(before)) = before.map(|x| decode::<RulesetVersion>(&key, &x))
                    && before.content_hash != **hash
                {
                    return Ok(Some(format!(
                        "version {v} of ruleset `{}` was stored with other content",
                        r.id
                    )));
                }
                versions.insert((r.id.as_str(), *v), b.as_slice())?;
            }
            rulesets.insert(r.id.as_str(), bytes.as_slice())?;
            Ok(None)
        })?;
        conflict.map_or(Ok(()), |m| Err(StoreError::Conflict(m)))
    }

    fn ruleset_version(&self, id: &str, version: u64) -> Result<Option<RulesetVersion>, StoreError> {
        let raw = self.read("read ruleset version", |tx| {
            Ok(tx.open_table(RULESET_VERSIONS)?.get((id, version))?.map(|v| v.value().to_vec()))
        })?;
        raw.map(|b| decode(&rev_key("ruleset_versions", id, version), &b)).transpose()
    }

    fn sheets(&self) -> Result<Vec<Record<SheetRecord>>, StoreError> {
        self.all(SHEETS, "read sheets")
    }

    fn has_sheet(&self, id: &str) -> Result<bool, StoreError> {
        self.read("find sheet", |tx| Ok(tx.open_table(SHEETS)?.get(id)?.is_some()))
    }

    fn next_sheet_number(&self) -> Result<u64, StoreError> {
        self.write("count sheets", |tx| {
            let mut t = tx.open_table(META)?;
            let n = t.get("next_sheet")?.map_or(1, |v| v.value());
            t.insert("next_sheet", n + 1)?;
            Ok(n)
        })
    }

    fn create_sheet(
        &self,
        sheet: &SheetRecord,
        first: &Logged,
        snapshot: &Snapshot,
    ) -> Result<(), StoreError> {
        let id = sheet.id.as_str();
        let [s, l, n] = super::seal::new_sheet(sheet, first, snapshot);
        let created = self.write("create sheet", |tx| {
            let mut sheets = tx.open_table(SHEETS)?;
            if sheets.get(id)?.is_some() {
                return Ok(false);
            }
            sheets.insert(id, s.as_slice())?;
            tx.open_table(LOG)?.insert((id, 0), l.as_slice())?;
            tx.open_table(SNAPSHOTS)?.insert((id, 0), n.as_slice())?;
            Ok(true)
        })?;
        if created { Ok(()) } else { Err(StoreError::Conflict(format!("sheet `{id}` already exists"))) }
    }

    fn append(&self, sheet: &str, entry: &Logged, snapshot: Option<&Snapshot>) -> Result<(), StoreError> {
        let revision = entry.revision.number;
        let append = Append {
            sheet: sheet.to_owned(),
            revision,
            // Room guessed from the entry's size, so the buffer rarely grows.
            log: seal_log(&rev_key("log", sheet, revision), entry),
            snapshot: snapshot.map(|s| {
                let key = rev_key("snapshots", sheet, s.revision);
                (s.revision, seal_message(&key, &SnapshotRecord::of(s), 48 * s.values.len() + 16))
            }),
        };
        let mut group = self.group();
        let ticket = group.next;
        group.next += 1;
        group.queue.push((ticket, append));
        loop {
            if let Some(result) = group.done.remove(&ticket) {
                return result;
            }
            if !group.leader {
                // Lead: commit everything queued (our own append included, unless an earlier
                // leader took it, in which case its result is in `done` by now).
                group.leader = true;
                let batch = std::mem::take(&mut group.queue);
                drop(group);
                let results = self.commit_appends(batch);
                group = self.group();
                group.leader = false;
                group.commits += 1;
                group.done.extend(results);
                if group.waiting > 0 {
                    self.committed.notify_all();
                }
                continue;
            }
            group.waiting += 1;
            group = self.committed.wait(group).unwrap_or_else(PoisonError::into_inner);
            group.waiting -= 1;
        }
    }

    fn log(&self, sheet: &str, from: u64, to: u64, max: usize) -> Result<Vec<Logged>, StoreError> {
        if from > to {
            return Ok(Vec::new());
        }
        self.settle()?;
        let raw = self.read("read log", |tx| {
            let t = tx.open_table(LOG)?;
            let mut out = Vec::new();
            for row in t.range((sheet, from)..=(sheet, to))?.take(max) {
                let (k, v) = row?;
                out.push((k.value().1, v.value().to_vec()));
            }
            Ok(out)
        })?;
        raw.iter().map(|(rev, b)| domain(&rev_key("log", sheet, *rev), b, LogRecord::into_domain)).collect()
    }

    fn snapshot_at_or_before(&self, sheet: &str, revision: u64) -> Result<Option<Snapshot>, StoreError> {
        self.settle()?;
        let raw = self.read("read snapshot", |tx| {
            let t = tx.open_table(SNAPSHOTS)?;
            let last = t.range((sheet, 0)..=(sheet, revision))?.next_back();
            Ok(match last {
                Some(row) => {
                    let (k, v) = row?;
                    Some((k.value().1, v.value().to_vec()))
                }
                None => None,
            })
        })?;
        raw.map(|(rev, b)| domain(&rev_key("snapshots", sheet, rev), &b, SnapshotRecord::into_domain))
            .transpose()
    }

    fn delete_sheet(&self, sheet: &str) -> Result<(), StoreError> {
        // Its journaled revisions first, so that no later checkpoint brings them back.
        self.settle()?;
        self.write("delete sheet", |tx| {
            tx.open_table(SHEETS)?.remove(sheet)?;
            tx.open_table(LOG)?.retain_in((sheet, 0)..=(sheet, u64::MAX), |_, _| false)?;
            tx.open_table(SNAPSHOTS)?.retain_in((sheet, 0)..=(sheet, u64::MAX), |_, _| false)?;
            Ok(())
        })?;
        self.wal().last.remove(sheet);
        Ok(())
    }

    fn heads(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.settle()?;
        let mut out = Vec::new();
        for r in self.sheets()? {
            let id = match r {
                Ok(r) => r.id,
                Err((id, _)) => id,
            };
            if let Some(h) = self.last_logged(&id)? {
                out.push((id, h));
            }
        }
        Ok(out)
    }

    fn head(&self, id: &str) -> Result<Option<u64>, StoreError> {
        if !self.has_sheet(id)? {
            return Ok(None);
        }
        if let Some(&last) = self.wal().last.get(id) {
            return Ok(Some(last));
        }
        self.last_logged(id)
    }
}

impl Drop for RedbStore {
    /// Leaves the journal's revisions in the B-tree (best effort: the next open replays them
    /// anyway).
    fn drop(&mut self) {
        let wal = self.wal.get_mut().unwrap_or_else(PoisonError::into_inner);
        let mut wal = std::mem::take(wal);
        if let Err(e) = self.checkpoint_locked(&mut wal) {
            tracing::warn!("store: checkpoint at close failed: {e}");
        }
    }
}

/// One damaged record found by [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The table and key, e.g. `log sheet-1@5`.
    pub record: String,
    pub why: String,
}

/// Checks a store without changing it: redb's own page checks, then every record's checksum and
/// decoding. Returns the damaged records (empty when all is well), or why the store cannot be
/// read at all.
pub fn verify(dir: &Path) -> Result<Vec<Damage>, StoreError> {
    let path = dir.join("sheetd.redb");
    if !path.is_file() {
        return Err(StoreError::Failed(format!("no store at {}", path.display())));
    }
    let mut damage = Vec::new();
    let mut db = guarded("open", || {
        Database::open(&path)
            .map_err(|e| StoreError::Failed(format!("cannot open store {}: {e}", path.display())))
    })?;
    match guarded("check pages", || {
        db.check_integrity().map_err(|e| StoreError::Damaged(format!("redb integrity check failed: {e}")))
    }) {
        Ok(true) => {}
        Ok(false) => {
            damage.push(Damage { record: "(pages)".into(), why: "redb repaired damaged pages".into() })
        }
        Err(e) => damage.push(Damage { record: "(pages)".into(), why: e.to_string() }),
    }
    let store =
        RedbStore { db, path, group: Mutex::default(), committed: Condvar::new(), wal: Mutex::default() };
    let ids = |r: Vec<Result<(), (String, StoreError)>>, table: &str, damage: &mut Vec<Damage>| {
        for e in r.into_iter().filter_map(Result::err) {
            damage.push(Damage { record: id_key(table, &e.0), why: e.1.to_string() });
        }
    };
    let rulesets: Vec<_> = store.rulesets()?.into_iter().map(|r| r.map(|_| ())).collect();
    ids(rulesets, "rulesets", &mut damage);
    let sheets: Vec<_> = store.sheets()?.into_iter().map(|r| r.map(|_| ())).collect();
    ids(sheets, "sheets", &mut damage);
    for (table, def) in [("log", LOG), ("snapshots", SNAPSHOTS), ("ruleset_versions", RULESET_VERSIONS)] {
        let raw = store.read("read records", |tx| {
            let t = tx.open_table(def)?;
            let mut out = Vec::new();
            for row in t.iter()? {
                let (k, v) = row?;
                let (sheet, rev) = k.value();
                out.push((sheet.to_owned(), rev, v.value().to_vec()));
            }
            Ok(out)
        })?;
        for (sheet, rev, bytes) in raw {
            let key = rev_key(table, &sheet, rev);
            let result = match table {
                "log" => domain(&key, &bytes, LogRecord::into_domain).map(|_| ()),
                "snapshots" => domain(&key, &bytes, SnapshotRecord::into_domain).map(|_| ()),
                _ => decode::<RulesetVersion>(&key, &bytes).map(|_| ()),
            };
            if let Err(e) = result {
                damage.push(Damage { record: key, why: e.to_string() });
            }
        }
    }
    // Revisions still in the journal (a server that stopped without its last checkpoint): the
    // next open moves them into the B-tree, so they are checked the same way.
    let journal = dir.join("sheetd.journal");
    if journal.is_file() {
        let bytes = std::fs::read(&journal)
            .map_err(|e| StoreError::Failed(format!("cannot read {}: {e}", journal.display())))?;
        match super::journal::read(&journal, &bytes) {
            Ok((_, _, appends)) => {
                for a in appends {
                    let key = rev_key("log", &a.sheet, a.revision);
                    if let Err(e) = domain(&key, &a.log, LogRecord::into_domain) {
                        damage.push(Damage { record: format!("journal {key}"), why: e.to_string() });
                    }
                    if let Some((r, bytes)) = &a.snapshot {
                        let key = rev_key("snapshots", &a.sheet, *r);
                        if let Err(e) = domain(&key, bytes, SnapshotRecord::into_domain) {
                            damage.push(Damage { record: format!("journal {key}"), why: e.to_string() });
                        }
                    }
                }
            }
            Err(e) => damage.push(Damage { record: "(journal)".into(), why: e.to_string() }),
        }
    }
    Ok(damage)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::SNAPSHOT_EVERY;
    use data::history::Revision;

    fn entry(revision: u64) -> Logged {
        Logged {
            revision: Revision { number: revision, ruleset_version: 1, operations: vec![], moved_from: None },
            changes: vec![],
            step: None,
        }
    }

    /// Records sheet `id` with its revision 0.
    fn create(store: &RedbStore, id: &str) {
        let rec = SheetRecord { id: id.into(), ruleset_id: "starter".into() };
        store.create_sheet(&rec, &entry(0), &Snapshot::default()).expect("create");
    }

    /// A message sealed in one pass is the message encoded, then sealed.
    #[test]
    fn sealing_a_message_equals_sealing_its_encoding() {
        let entry = Logged {
            revision: Revision {
                number: 7,
                ruleset_version: 2,
                operations: vec![data::SheetOp::RemoveObject("armor-1".into())],
                moved_from: Some(1),
            },
            changes: vec![data::record::Change {
                var: "AC".into(),
                old: Some(data::record::Value {
                    format: "NUMBER".into(),
                    kind: data::record::Kind::Number("17".into()),
                }),
                new: None,
            }],
            step: None,
        };
        let rec = LogRecord::of(&entry);
        for hint in [0, 3, 1000] {
            assert_eq!(seal_message("log a@7", &rec, hint), seal("log a@7", &rec.encode_to_vec()));
        }
        let sealed = seal_message("log a@7", &rec, 0);
        let back: LogRecord = decode("log a@7", &sealed).expect("unseals");
        assert_eq!(back, rec);
    }

    /// A log record sealed with its changes written straight from the entry is the record
    /// prost writes, sealed: for every kind of value, absent and empty ones, lengths past one
    /// varint byte, and with or without a move (from version 0 too: present, so written).
    #[test]
    fn a_log_record_sealed_from_its_entry_equals_prost_s() {
        use data::record::{Change, Kind, Value};
        let v = |format: &str, kind: Kind| Value { format: format.into(), kind };
        let long = "x".repeat(300);
        let values = [
            v("NUMBER", Kind::Number("-2.5".into())),
            v("BOOLEAN", Kind::Boolean(false)),
            v("STRING", Kind::Text(String::new())),
            v("", Kind::Text(long.clone())),
            v(
                "ARRAY[NUMBER]",
                Kind::List(vec![
                    v("NUMBER", Kind::Number("1".into())),
                    v("ARRAY[NUMBER]", Kind::List(vec![])),
                ]),
            ),
            v(
                "NUMBER",
                Kind::Error {
                    code: "formula.div_zero".into(),
                    message: long.clone(),
                    modifier: String::new(),
                },
            ),
        ];
        let mut changes: Vec<Change> = values
            .iter()
            .map(|x| Change { var: "AC".into(), old: Some(x.clone()), new: Some(values[0].clone()) })
            .collect();
        changes.push(Change { var: long.clone(), old: None, new: Some(values[1].clone()) });
        changes.push(Change { var: "sword.Bonus".into(), old: Some(values[2].clone()), new: None });
        changes.push(Change { var: String::new(), old: None, new: None });
        let emit = events::Step::Emit { event: "payday".into(), args: vec![("amount".into(), "2".into())] };
        let choose = events::Step::Choose { choice: 3, picks: vec!["Ale".into()] };
        for (changes, moved_from, step) in
            [(changes.clone(), Some(0), Some(emit)), (changes, Some(3), None), (vec![], None, Some(choose))]
        {
            let entry = Logged {
                revision: Revision {
                    number: 300,
                    ruleset_version: 2,
                    operations: vec![
                        data::SheetOp::RemoveObject("armor-1".into()),
                        data::SheetOp::Because {
                            op: Box::new(data::SheetOp::AddObject {
                                kind: "EQUIPMENT".into(),
                                key: "Ring Hauberk".into(),
                                id: Some("armor".into()),
                                parent: None,
                            }),
                            cause: "rule `gift` (gifts.toml:3:1)".into(),
                        },
                    ],
                    moved_from,
                },
                changes,
                step,
            };
            let want = seal("log a@300", &LogRecord::of(&entry).encode_to_vec());
            let sealed = seal_log("log a@300", &entry);
            assert_eq!(sealed, want, "moved from {moved_from:?}");
            // And it reads back as it was: the step, and each operation's cause.
            let back =
                decode::<LogRecord>("log a@300", &sealed).expect("decodes").into_domain().expect("reads");
            assert_eq!(format!("{:?}", back.step), format!("{:?}", entry.step));
            assert_eq!(format!("{:?}", back.revision.operations), format!("{:?}", entry.revision.operations));
        }
    }

    fn revisions(log: &[Logged]) -> Vec<u64> {
        log.iter().map(|e| e.revision.number).collect()
    }

    #[test]
    fn sheets_logs_and_snapshots_round_trip_and_survive_reopening() {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let store = RedbStore::open(dir.path(), 1 << 20).expect("open");
            assert_eq!(store.next_sheet_number().expect("n"), 1);
            assert_eq!(store.next_sheet_number().expect("n"), 2);
            for id in ["a", "ab", "b"] {
                let rec = SheetRecord { id: id.into(), ruleset_id: "starter".into() };
                let snap = Snapshot { revision: 0, values: vec![] };
                store.create_sheet(&rec, &entry(0), &snap).expect("create");
                for r in 1..=40 {
                    let snap = Snapshot { revision: r, values: vec![] };
                    store.append(id, &entry(r), (r % SNAPSHOT_EVERY == 0).then_some(&snap)).expect("append");
                }
            }
        }
        let store = RedbStore::open(dir.path(), 1 << 20).expect("reopen");
        assert_eq!(store.next_sheet_number().expect("n"), 3);
        assert_eq!(store.sheets().expect("sheets").len(), 3);
        assert_eq!(revisions(&store.log("a", 5, 9, usize::MAX).expect("log")), vec![5, 6, 7, 8, 9]);
        assert_eq!(revisions(&store.log("a", 5, 9, 2).expect("log")), vec![5, 6]);
        // "a" and "ab" share a prefix; ranges never mix them.
        assert_eq!(store.log("a", 0, u64::MAX, usize::MAX).expect("log").len(), 41);
        assert_eq!(store.snapshot_at_or_before("a", 31).expect("s").map(|s| s.revision), Some(0));
        assert_eq!(store.snapshot_at_or_before("a", 40).expect("s").map(|s| s.revision), Some(32));
        store.delete_sheet("a").expect("delete");
        assert!(store.log("a", 0, u64::MAX, usize::MAX).expect("log").is_empty());
        assert!(store.snapshot_at_or_before("a", 40).expect("s").is_none());
        assert_eq!(store.log("ab", 0, u64::MAX, usize::MAX).expect("log").len(), 41);
        assert_eq!(store.sheets().expect("sheets").len(), 2);
        drop(store);
        assert_eq!(verify(dir.path()).expect("verify"), vec![]);
    }

    /// What a crash leaves: revisions answered (their journal frames synced) but never moved
    /// into the B-tree. Reopening replays them; the revision check continues from them; a sheet
    /// deleted after its revisions were journaled stays deleted.
    #[test]
    fn journaled_revisions_survive_a_crash() {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let store = RedbStore::open(dir.path(), 1 << 20).expect("open");
            for id in ["a", "gone"] {
                create(&store, id);
                for r in 1..=40 {
                    let snap = Snapshot { revision: r, values: vec![] };
                    store.append(id, &entry(r), (r % SNAPSHOT_EVERY == 0).then_some(&snap)).expect("append");
                }
            }
            store.delete_sheet("gone").expect("delete");
            store.append("a", &entry(41), None).expect("append");
            assert_eq!(store.wal().pending.len(), 1, "revision 41 is in the journal only");
            // The process dies here: nothing moves the journal into the B-tree.
            store.wal().pending.clear();
            let read = |tx: &redb::ReadTransaction| -> Result<bool, redb::Error> {
                Ok(tx.open_table(LOG)?.get(("a", 41))?.is_some())
            };
            assert!(!store.read("probe", read).expect("read"), "not in the B-tree");
        }
        assert!(std::fs::metadata(dir.path().join("sheetd.journal")).expect("journal").len() > 0);
        assert_eq!(verify(dir.path()).expect("verify"), vec![], "journaled records are checked too");
        let store = RedbStore::open(dir.path(), 1 << 20).expect("reopen");
        assert_eq!(revisions(&store.log("a", 39, u64::MAX, usize::MAX).expect("log")), vec![39, 40, 41]);
        assert_eq!(store.snapshot_at_or_before("a", 41).expect("s").map(|s| s.revision), Some(32));
        assert!(store.log("gone", 0, u64::MAX, usize::MAX).expect("log").is_empty());
        assert!(matches!(store.append("a", &entry(41), None), Err(StoreError::Conflict(_))));
        store.append("a", &entry(42), None).expect("the next revision");
        assert!(matches!(store.append("gone", &entry(41), None), Err(StoreError::Conflict(_))));
    }

    /// Past the threshold, the commit that crosses it moves the journal into the B-tree: what
    /// the journal holds stays bounded, and the revisions read back the same.
    #[test]
    fn a_full_journal_is_checkpointed_by_the_commit_that_fills_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = RedbStore::open(dir.path(), 1 << 20).expect("open");
        create(&store, "a");
        let in_btree = |store: &RedbStore, r: u64| {
            let read = |tx: &redb::ReadTransaction| -> Result<bool, redb::Error> {
                Ok(tx.open_table(LOG)?.get(("a", r))?.is_some())
            };
            store.read("probe", read).expect("read")
        };
        for r in 1..=40 {
            store.append("a", &entry(r), None).expect("append");
            assert!(store.wal().pending.len() < CHECKPOINT_REVISIONS, "after revision {r}");
        }
        // Revisions 1..=32 went in two checkpoints (at 16 and 32); 33..=40 wait in the journal.
        assert!(in_btree(&store, 32) && !in_btree(&store, 33));
        assert_eq!(store.wal().pending.len(), 8);
        assert_eq!(
            revisions(&store.log("a", 30, 40, usize::MAX).expect("log")),
            (30..=40).collect::<Vec<_>>()
        );
        assert!(in_btree(&store, 40), "a read checkpoints first");
    }

    /// A damaged journal frame that still passes its CRC is reported by `verify`, naming it.
    #[test]
    fn verify_reports_a_damaged_journaled_record() {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let store = RedbStore::open(dir.path(), 1 << 20).expect("open");
            create(&store, "a");
            // A record whose seal does not match its key, journaled as if it were revision 1.
            let append = Append {
                sheet: "a".into(),
                revision: 1,
                log: seal("log a@2", &LogRecord::of(&entry(1)).encode_to_vec()),
                snapshot: None,
            };
            store.wal().journal.as_mut().expect("journal").write(&[&append]).expect("frame");
        }
        // (Dropping the store moved nothing: the frame was written behind its back.)
        let damage = verify(dir.path()).expect("verify");
        assert_eq!(damage.len(), 1, "{damage:?}");
        assert_eq!(damage[0].record, "journal log a@1");
    }

    /// Appends check the expected revision and creates the id, in the write's transaction.
    #[test]
    fn writes_that_find_the_store_changed_are_conflicts() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = RedbStore::open(dir.path(), 1 << 20).expect("open");
        let rec = SheetRecord { id: "a".into(), ruleset_id: "starter".into() };
        store.create_sheet(&rec, &entry(0), &Snapshot::default()).expect("create");
        let again = store.create_sheet(&rec, &entry(0), &Snapshot::default()).expect_err("taken");
        assert!(matches!(again, StoreError::Conflict(_)), "{again:?}");
        store.append("a", &entry(1), None).expect("1 follows 0");
        for stale in [1, 3, 0] {
            let e = store.append("a", &entry(stale), None).expect_err("not next");
            assert!(matches!(e, StoreError::Conflict(_)), "{stale}: {e:?}");
        }
        assert!(matches!(store.append("nope", &entry(1), None), Err(StoreError::Conflict(_))));
        assert_eq!(revisions(&store.log("a", 0, 9, usize::MAX).expect("log")), [0, 1]);
    }

    /// Appends that queue while a commit is in progress are committed together, in one
    /// transaction: every one durable when its call returns, each checked in turn (two appends
    /// to one sheet in a group behave as one after the other: the second conflicts if it does
    /// not follow the first).
    #[test]
    fn concurrent_appends_share_one_commit() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = std::sync::Arc::new(RedbStore::open(dir.path(), 1 << 20).expect("open"));
        let sheets: Vec<String> = (0..12).map(|i| format!("s{i}")).collect();
        for id in &sheets {
            let rec = SheetRecord { id: id.clone(), ruleset_id: "starter".into() };
            store.create_sheet(&rec, &entry(0), &Snapshot::default()).expect("create");
        }
        // Hold the leader's place, so that every append below queues; then let them go.
        store.group().leader = true;
        let mut calls: Vec<(String, u64)> = sheets.iter().map(|s| (s.clone(), 1)).collect();
        // Two appends of revision 1 to one sheet: one of them must conflict.
        calls.push(("s0".into(), 1));
        let threads: Vec<_> = calls
            .into_iter()
            .map(|(sheet, r)| {
                let store = store.clone();
                std::thread::spawn(move || (sheet.clone(), store.append(&sheet, &entry(r), None)))
            })
            .collect();
        while store.group().queue.len() < sheets.len() + 1 {
            std::thread::yield_now();
        }
        let before = store.group().commits;
        {
            let mut g = store.group();
            g.leader = false;
        }
        store.committed.notify_all();
        let results: Vec<(String, Result<(), StoreError>)> =
            threads.into_iter().map(|t| t.join().expect("appender")).collect();
        assert_eq!(store.group().commits - before, 1, "all thirteen appends in one commit");
        let s0: Vec<&Result<(), StoreError>> =
            results.iter().filter(|(s, _)| s == "s0").map(|(_, r)| r).collect();
        assert_eq!(s0.iter().filter(|r| r.is_ok()).count(), 1, "{s0:?}");
        assert!(s0.iter().any(|r| matches!(r, Err(StoreError::Conflict(_)))), "{s0:?}");
        assert!(results.iter().filter(|(s, _)| s != "s0").all(|(_, r)| r.is_ok()), "{results:?}");
        drop(store);
        // Durable: a reopened store has every sheet at revision 1.
        let store = RedbStore::open(dir.path(), 1 << 20).expect("reopen");
        for id in &sheets {
            assert_eq!(revisions(&store.log(id, 0, 9, usize::MAX).expect("log")), [0, 1], "{id}");
        }
    }

    /// A changed byte in a record, or a record moved to another key, is found by its checksum;
    /// records written before checksums are sealed on open.
    #[test]
    fn damaged_records_are_reported_with_their_key() {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let store = RedbStore::open(dir.path(), 1 << 20).expect("open");
            let rec = SheetRecord { id: "a".into(), ruleset_id: "starter".into() };
            store.create_sheet(&rec, &entry(0), &Snapshot { revision: 0, values: vec![] }).expect("create");
            let mut first = entry(1);
            first.revision.ruleset_version = 7;
            store.append("a", &first, None).expect("a");
            // A legacy record: no seal.
            store
                .write("legacy", |tx| {
                    let legacy =
                        SheetRecord { id: "old".into(), ruleset_id: "starter".into() }.encode_to_vec();
                    tx.open_table(SHEETS)?.insert("old", legacy.as_slice())?;
                    Ok(())
                })
                .expect("legacy");
        }
        {
            let store = RedbStore::open(dir.path(), 1 << 20).expect("reopen seals the legacy record");
            assert!(store.sheets().expect("sheets").iter().all(Result::is_ok));
            // Change one byte of revision 1's payload (the ruleset version 7 → 6).
            store
                .write("damage", |tx| {
                    let mut t = tx.open_table(LOG)?;
                    let mut bytes = t.get(("a", 1))?.map(|v| v.value().to_vec()).unwrap_or_default();
                    let last = bytes.len() - 1;
                    bytes[last] ^= 1;
                    t.insert(("a", 1), bytes.as_slice())?;
                    Ok(())
                })
                .expect("damage");
            let e = store.log("a", 0, 5, usize::MAX).expect_err("damaged");
            assert_eq!(
                e,
                StoreError::Damaged("store: record log a@1 is damaged: its checksum does not match".into())
            );
            assert_eq!(store.log("a", 0, 0, usize::MAX).expect("revision 0 is fine").len(), 1);
        }
        let damage = verify(dir.path()).expect("verify");
        assert_eq!(damage.iter().map(|d| d.record.as_str()).collect::<Vec<_>>(), ["log a@1"]);
    }
}
