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
//! Every write is one redb transaction committed with immediate durability (fsync).
//!
//! **Group commit.** Appends to sheets' logs (one per Apply) are committed together: an append
//! joins a queue; the first appender to find no commit in progress becomes the *leader*, takes
//! every append queued, writes them in one transaction — each checked against its sheet's last
//! revision in turn, so two appends to one sheet behave as if one after the other — commits
//! (one fsync), and hands each waiting appender its own result. Appenders that arrive during the
//! commit wait for the next one. So concurrent writers share an fsync while every caller still
//! returns only once its own record is durable; a lone writer pays one transaction, as before.
//!
//! Integrity: every record is sealed as `0xFF 'S'`, a CRC-32 of its key and payload, then the
//! payload. A record whose checksum or decoding fails is reported as [`StoreError::Damaged`]
//! naming the table and key (the sheet and revision), so one damaged sheet answers DATA_LOSS
//! while the rest keep serving; [`verify`] lists every damaged record. Records written before
//! checksums existed are sealed when the store is opened. A panic inside redb (some page damage
//! does that) becomes an error, never a crash.

use super::records::{LogRecord, RulesetRecord, RulesetVersion, SheetRecord, SnapshotRecord};
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

/// The start of every sealed record: 0xFF is never the first byte of a protobuf message.
const SEAL: [u8; 2] = [0xFF, b'S'];

fn checksum(key: &str, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(key.as_bytes());
    h.update(&[0]);
    h.update(payload);
    h.finalize()
}

/// A record as stored: the seal, the checksum of its key and payload, the payload.
fn seal(key: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 6);
    out.extend_from_slice(&SEAL);
    out.extend_from_slice(&checksum(key, payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// A stored record's payload, checked; `key` names it in errors ("log sheet-1@5").
fn unseal<'a>(key: &str, raw: &'a [u8]) -> Result<&'a [u8], StoreError> {
    let damaged = |why: &str| StoreError::Damaged(format!("store: record {key} is damaged: {why}"));
    let rest = raw.strip_prefix(&SEAL).ok_or_else(|| damaged("it has no checksum"))?;
    let (sum, payload) = rest.split_at_checked(4).ok_or_else(|| damaged("it is truncated"))?;
    let sum = u32::from_le_bytes([sum[0], sum[1], sum[2], sum[3]]);
    if sum != checksum(key, payload) {
        return Err(damaged("its checksum does not match"));
    }
    Ok(payload)
}

fn decode<M: Message + Default>(key: &str, raw: &[u8]) -> Result<M, StoreError> {
    M::decode(unseal(key, raw)?)
        .map_err(|e| StoreError::Damaged(format!("store: record {key} is damaged: it does not decode: {e}")))
}

fn id_key(table: &str, id: &str) -> String {
    format!("{table} {id}")
}

fn rev_key(table: &str, sheet: &str, revision: u64) -> String {
    format!("{table} {sheet}@{revision}")
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
}

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
}

/// One append, sealed and ready to write.
struct Append {
    sheet: String,
    revision: u64,
    log: Vec<u8>,
    snapshot: Option<(u64, Vec<u8>)>,
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
        let store = RedbStore { db, path, group: Mutex::default(), committed: Condvar::new() };
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
        Ok(store)
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

    /// Writes `batch` in one transaction, each append checked against its sheet's last revision
    /// as the transaction has it so far; returns each ticket's result. When the transaction
    /// fails, every append in it fails with that error.
    fn commit_appends(&self, batch: &[(u64, Append)]) -> Vec<(u64, Result<(), StoreError>)> {
        let written = self.write("save revisions", |tx| {
            let mut log = tx.open_table(LOG)?;
            let mut snapshots = tx.open_table(SNAPSHOTS)?;
            let mut results = Vec::with_capacity(batch.len());
            for (ticket, a) in batch {
                let sheet = a.sheet.as_str();
                let last = log
                    .range((sheet, 0)..=(sheet, u64::MAX))?
                    .next_back()
                    .transpose()?
                    .map(|(k, _)| k.value().1);
                if a.revision == 0 || last != Some(a.revision - 1) {
                    results.push((
                        *ticket,
                        Err(StoreError::Conflict(match last {
                            Some(l) => format!(
                                "sheet `{sheet}` is at revision {l}, not {}",
                                a.revision.saturating_sub(1)
                            ),
                            None => format!("sheet `{sheet}` has no log"),
                        })),
                    ));
                    continue;
                }
                log.insert((sheet, a.revision), a.log.as_slice())?;
                if let Some((r, bytes)) = &a.snapshot {
                    snapshots.insert((sheet, *r), bytes.as_slice())?;
                }
                results.push((*ticket, Ok(())));
            }
            Ok(results)
        });
        match written {
            Ok(results) => results,
            Err(e) => batch.iter().map(|(ticket, _)| (*ticket, Err(e.clone()))).collect(),
        }
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

    /// Decodes a stored log or snapshot record and converts it to its domain type.
    fn domain<R: Message + Default, T>(
        key: &str,
        raw: &[u8],
        into: impl FnOnce(R) -> Result<T, String>,
    ) -> Result<T, StoreError> {
        into(decode(key, raw)?)
            .map_err(|e| StoreError::Damaged(format!("store: record {key} is damaged: {e}")))
    }
}

impl Store for RedbStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn rulesets(&self) -> Result<Vec<Record<RulesetRecord>>, StoreError> {
        self.all(RULESETS, "read rulesets")
    }

    fn put_ruleset(&self, r: &RulesetRecord, content: Option<&RulesetVersion>) -> Result<(), StoreError> {
        let bytes = seal(&id_key("rulesets", &r.id), &r.encode_to_vec());
        let version = content
            .map(|v| (v.version, seal(&rev_key("ruleset_versions", &r.id, v.version), &v.encode_to_vec())));
        self.write("save ruleset", |tx| {
            tx.open_table(RULESETS)?.insert(r.id.as_str(), bytes.as_slice())?;
            if let Some((v, b)) = &version {
                tx.open_table(RULESET_VERSIONS)?.insert((r.id.as_str(), *v), b.as_slice())?;
            }
            Ok(())
        })
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
        let s = seal(&id_key("sheets", id), &sheet.encode_to_vec());
        let l = seal(&rev_key("log", id, 0), &LogRecord::of(first).encode_to_vec());
        let n = seal(&rev_key("snapshots", id, 0), &SnapshotRecord::of(snapshot).encode_to_vec());
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
            log: seal(&rev_key("log", sheet, revision), &LogRecord::of(entry).encode_to_vec()),
            snapshot: snapshot.map(|s| {
                (
                    s.revision,
                    seal(&rev_key("snapshots", sheet, s.revision), &SnapshotRecord::of(s).encode_to_vec()),
                )
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
                let results = self.commit_appends(&batch);
                group = self.group();
                group.leader = false;
                group.commits += 1;
                group.done.extend(results);
                self.committed.notify_all();
                continue;
            }
            group = self.committed.wait(group).unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn log(&self, sheet: &str, from: u64, to: u64, max: usize) -> Result<Vec<Logged>, StoreError> {
        if from > to {
            return Ok(Vec::new());
        }
        let raw = self.read("read log", |tx| {
            let t = tx.open_table(LOG)?;
            let mut out = Vec::new();
            for row in t.range((sheet, from)..=(sheet, to))?.take(max) {
                let (k, v) = row?;
                out.push((k.value().1, v.value().to_vec()));
            }
            Ok(out)
        })?;
        raw.iter()
            .map(|(rev, b)| Self::domain(&rev_key("log", sheet, *rev), b, LogRecord::into_domain))
            .collect()
    }

    fn snapshot_at_or_before(&self, sheet: &str, revision: u64) -> Result<Option<Snapshot>, StoreError> {
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
        raw.map(|(rev, b)| Self::domain(&rev_key("snapshots", sheet, rev), &b, SnapshotRecord::into_domain))
            .transpose()
    }

    fn delete_sheet(&self, sheet: &str) -> Result<(), StoreError> {
        self.write("delete sheet", |tx| {
            tx.open_table(SHEETS)?.remove(sheet)?;
            tx.open_table(LOG)?.retain_in((sheet, 0)..=(sheet, u64::MAX), |_, _| false)?;
            tx.open_table(SNAPSHOTS)?.retain_in((sheet, 0)..=(sheet, u64::MAX), |_, _| false)?;
            Ok(())
        })
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
    let store = RedbStore { db, path, group: Mutex::default(), committed: Condvar::new() };
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
                "log" => RedbStore::domain(&key, &bytes, LogRecord::into_domain).map(|_| ()),
                "snapshots" => RedbStore::domain(&key, &bytes, SnapshotRecord::into_domain).map(|_| ()),
                _ => decode::<RulesetVersion>(&key, &bytes).map(|_| ()),
            };
            if let Err(e) = result {
                damage.push(Damage { record: key, why: e.to_string() });
            }
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
