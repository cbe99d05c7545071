//! The embedded store: one redb file (`sheetd.redb`) in the data directory.
//!
//! Tables (keys → protobuf-encoded records):
//! - `meta`: counters (`next_sheet` for generated sheet ids).
//! - `rulesets`: ruleset id → [`RulesetRecord`] (where it loads from, its version).
//! - `sheets`: sheet id → [`SheetRecord`].
//! - `log`: (sheet id, revision) → [`LogEntry`]: the operations that made the revision, the
//!   ruleset version it was computed with, and the changes it made (old → new).
//! - `snapshots`: (sheet id, revision) → [`Snapshot`]: every value at that revision, written at
//!   revision 0 and every [`SNAPSHOT_EVERY`] revisions.
//!
//! The operation log is the truth: a sheet's state is its log replayed. Snapshots plus the
//! changes in the log answer Values-at-revision without replaying. Every write is one redb
//! transaction committed with immediate durability (fsync) before the caller replies.

use crate::proto as pb;
use prost::Message;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use std::path::{Path, PathBuf};

const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const RULESETS: TableDefinition<&str, &[u8]> = TableDefinition::new("rulesets");
const SHEETS: TableDefinition<&str, &[u8]> = TableDefinition::new("sheets");
const LOG: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("log");
const SNAPSHOTS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("snapshots");

/// A full snapshot of values is stored every this many revisions.
pub const SNAPSHOT_EVERY: u64 = 32;

/// Where a ruleset loads from.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RulesetRecord {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, repeated, tag = "2")]
    pub paths: Vec<String>,
    #[prost(string, tag = "3")]
    pub inline_text: String,
    #[prost(uint64, tag = "4")]
    pub version: u64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SheetRecord {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub ruleset_id: String,
}

/// One revision of a sheet.
#[derive(Clone, PartialEq, prost::Message)]
pub struct LogEntry {
    #[prost(uint64, tag = "1")]
    pub revision: u64,
    #[prost(uint64, tag = "2")]
    pub ruleset_version: u64,
    #[prost(message, repeated, tag = "3")]
    pub operations: Vec<pb::Operation>,
    /// What the revision changed, in order: a move to a new ruleset version first, then the
    /// operations' changes.
    #[prost(message, repeated, tag = "4")]
    pub changes: Vec<pb::Change>,
    /// Set when this revision moved the sheet to another ruleset version.
    #[prost(uint64, optional, tag = "5")]
    pub moved_from_version: Option<u64>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Snapshot {
    #[prost(uint64, tag = "1")]
    pub revision: u64,
    #[prost(message, repeated, tag = "2")]
    pub values: Vec<pb::VariableValue>,
}

/// A store failure, with what was being done.
#[derive(Debug)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn err(what: &str) -> impl Fn(redb::Error) -> StoreError + '_ {
    move |e| StoreError(format!("store: {what}: {e}"))
}

fn decode<M: Message + Default>(bytes: &[u8], what: &str) -> Result<M, StoreError> {
    M::decode(bytes).map_err(|e| StoreError(format!("store: corrupt {what} record: {e}")))
}

/// The store. Cheap to share: redb serializes writers and lets readers run concurrently.
pub struct Store {
    db: Database,
    path: PathBuf,
}

impl Store {
    /// Opens (creating when needed) `sheetd.redb` in `dir`, creating the directory too.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| StoreError(format!("cannot create data directory {}: {e}", dir.display())))?;
        let path = dir.join("sheetd.redb");
        let db = Database::create(&path)
            .map_err(|e| StoreError(format!("cannot open store {}: {e}", path.display())))?;
        let store = Store { db, path };
        store.write("create tables", |tx| {
            tx.open_table(META)?;
            tx.open_table(RULESETS)?;
            tx.open_table(SHEETS)?;
            tx.open_table(LOG)?;
            tx.open_table(SNAPSHOTS)?;
            Ok(())
        })?;
        Ok(store)
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
        run().map_err(err(what))
    }

    fn read<T>(
        &self,
        what: &str,
        f: impl FnOnce(&redb::ReadTransaction) -> Result<T, redb::Error>,
    ) -> Result<T, StoreError> {
        let run = || -> Result<T, redb::Error> { f(&self.db.begin_read()?) };
        run().map_err(err(what))
    }

    /// Every record of a table keyed by id.
    fn all<M: Message + Default>(
        &self,
        table: TableDefinition<&str, &[u8]>,
        what: &str,
    ) -> Result<Vec<M>, StoreError> {
        let raw = self.read(what, |tx| {
            let t = tx.open_table(table)?;
            let mut out = Vec::new();
            for row in t.iter()? {
                let (_, v) = row?;
                out.push(v.value().to_vec());
            }
            Ok(out)
        })?;
        raw.iter().map(|b| decode(b, what)).collect()
    }

    pub fn rulesets(&self) -> Result<Vec<RulesetRecord>, StoreError> {
        self.all(RULESETS, "ruleset")
    }

    pub fn put_ruleset(&self, r: &RulesetRecord) -> Result<(), StoreError> {
        let bytes = r.encode_to_vec();
        self.write("save ruleset", |tx| {
            tx.open_table(RULESETS)?.insert(r.id.as_str(), bytes.as_slice())?;
            Ok(())
        })
    }

    pub fn sheets(&self) -> Result<Vec<SheetRecord>, StoreError> {
        self.all(SHEETS, "sheet")
    }

    /// Whether a sheet record exists (loaded or not).
    pub fn has_sheet(&self, id: &str) -> Result<bool, StoreError> {
        self.read("find sheet", |tx| Ok(tx.open_table(SHEETS)?.get(id)?.is_some()))
    }

    /// Takes the next number for a generated sheet id.
    pub fn next_sheet_number(&self) -> Result<u64, StoreError> {
        self.write("count sheets", |tx| {
            let mut t = tx.open_table(META)?;
            let n = t.get("next_sheet")?.map_or(1, |v| v.value());
            t.insert("next_sheet", n + 1)?;
            Ok(n)
        })
    }

    /// Records a new sheet with its revision 0, in one transaction.
    pub fn create_sheet(
        &self,
        sheet: &SheetRecord,
        first: &LogEntry,
        snapshot: &Snapshot,
    ) -> Result<(), StoreError> {
        let (s, l, n) = (sheet.encode_to_vec(), first.encode_to_vec(), snapshot.encode_to_vec());
        self.write("create sheet", |tx| {
            tx.open_table(SHEETS)?.insert(sheet.id.as_str(), s.as_slice())?;
            tx.open_table(LOG)?.insert((sheet.id.as_str(), 0), l.as_slice())?;
            tx.open_table(SNAPSHOTS)?.insert((sheet.id.as_str(), 0), n.as_slice())?;
            Ok(())
        })
    }

    /// Appends a revision (and a snapshot, when given), durably.
    pub fn append(
        &self,
        sheet: &str,
        entry: &LogEntry,
        snapshot: Option<&Snapshot>,
    ) -> Result<(), StoreError> {
        let l = entry.encode_to_vec();
        let n = snapshot.map(Message::encode_to_vec);
        self.write("save revision", |tx| {
            tx.open_table(LOG)?.insert((sheet, entry.revision), l.as_slice())?;
            if let (Some(s), Some(bytes)) = (snapshot, &n) {
                tx.open_table(SNAPSHOTS)?.insert((sheet, s.revision), bytes.as_slice())?;
            }
            Ok(())
        })
    }

    /// Log entries `from..=to` of a sheet, in order.
    pub fn log(&self, sheet: &str, from: u64, to: u64) -> Result<Vec<LogEntry>, StoreError> {
        self.log_limited(sheet, from, to, usize::MAX)
    }

    /// The first `max` log entries in `from..=to` of a sheet, in order.
    pub fn log_limited(
        &self,
        sheet: &str,
        from: u64,
        to: u64,
        max: usize,
    ) -> Result<Vec<LogEntry>, StoreError> {
        if from > to {
            return Ok(Vec::new());
        }
        let raw = self.read("read log", |tx| {
            let t = tx.open_table(LOG)?;
            let mut out = Vec::new();
            for row in t.range((sheet, from)..=(sheet, to))?.take(max) {
                let (_, v) = row?;
                out.push(v.value().to_vec());
            }
            Ok(out)
        })?;
        raw.iter().map(|b| decode(b, "log")).collect()
    }

    /// The latest snapshot at or before `revision`.
    pub fn snapshot_at_or_before(&self, sheet: &str, revision: u64) -> Result<Option<Snapshot>, StoreError> {
        let raw = self.read("read snapshot", |tx| {
            let t = tx.open_table(SNAPSHOTS)?;
            let last = t.range((sheet, 0)..=(sheet, revision))?.next_back();
            Ok(match last {
                Some(row) => Some(row?.1.value().to_vec()),
                None => None,
            })
        })?;
        raw.map(|b| decode(&b, "snapshot")).transpose()
    }

    /// Removes a sheet with its log and snapshots.
    pub fn delete_sheet(&self, sheet: &str) -> Result<(), StoreError> {
        self.write("delete sheet", |tx| {
            tx.open_table(SHEETS)?.remove(sheet)?;
            tx.open_table(LOG)?.retain_in((sheet, 0)..=(sheet, u64::MAX), |_, _| false)?;
            tx.open_table(SNAPSHOTS)?.retain_in((sheet, 0)..=(sheet, u64::MAX), |_, _| false)?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(revision: u64) -> LogEntry {
        LogEntry { revision, ruleset_version: 1, ..Default::default() }
    }

    #[test]
    fn sheets_logs_and_snapshots_round_trip_and_survive_reopening() {
        let dir = tempfile::tempdir().expect("temp dir");
        {
            let store = Store::open(dir.path()).expect("open");
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
        let store = Store::open(dir.path()).expect("reopen");
        assert_eq!(store.next_sheet_number().expect("n"), 3);
        assert_eq!(store.sheets().expect("sheets").len(), 3);
        let log = store.log("a", 5, 9).expect("log");
        assert_eq!(log.iter().map(|e| e.revision).collect::<Vec<_>>(), vec![5, 6, 7, 8, 9]);
        // "a" and "ab" share a prefix; ranges never mix them.
        assert_eq!(store.log("a", 0, u64::MAX).expect("log").len(), 41);
        assert_eq!(store.snapshot_at_or_before("a", 31).expect("s").map(|s| s.revision), Some(0));
        assert_eq!(store.snapshot_at_or_before("a", 40).expect("s").map(|s| s.revision), Some(32));
        store.delete_sheet("a").expect("delete");
        assert!(store.log("a", 0, u64::MAX).expect("log").is_empty());
        assert!(store.snapshot_at_or_before("a", 40).expect("s").is_none());
        assert_eq!(store.log("ab", 0, u64::MAX).expect("log").len(), 41);
        assert_eq!(store.sheets().expect("sheets").len(), 2);
    }
}
