//! The store's contract (`sheetd::store::Store`), one suite run against both implementations:
//! the embedded redb store and PostgreSQL (a real server started by the test; skipped with a
//! notice where PostgreSQL is not installed, outside CI). And what only a shared store does:
//! another server's writes arrive as changes.

#[path = "common/postgres.rs"]
mod postgres;

use data::history::Revision;
use sheetd::store::{
    FileRecord, Logged, PostgresStore, RedbStore, RulesetRecord, RulesetVersion, SheetRecord, Snapshot,
    Store, StoreChange, StoreError,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn entry(revision: u64) -> Logged {
    Logged {
        revision: Revision { number: revision, ruleset_version: 1, operations: vec![], moved_from: None },
        changes: vec![],
        step: None,
    }
}

fn create(store: &dyn Store, id: &str) -> Result<(), StoreError> {
    let rec = SheetRecord { id: id.into(), ruleset_id: "starter".into() };
    store.create_sheet(&rec, &entry(0), &Snapshot { revision: 0, values: vec![] })
}

fn numbers(log: &[Logged]) -> Vec<u64> {
    log.iter().map(|l| l.revision.number).collect()
}

fn is_conflict<T: std::fmt::Debug>(r: Result<T, StoreError>) -> String {
    match r {
        Err(StoreError::Conflict(m)) => m,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

/// Sheets, logs and snapshots: written, read back by range, counted by head, deleted.
fn sheets_and_logs(store: &dyn Store) {
    assert_eq!(store.head("s1").unwrap(), None);
    create(store, "s1").unwrap();
    create(store, "s2").unwrap();
    for r in 1..=5 {
        let snap = (r == 4).then(|| Snapshot { revision: 4, values: vec![] });
        store.append("s1", &entry(r), snap.as_ref()).unwrap();
    }
    assert_eq!(numbers(&store.log("s1", 0, u64::MAX, usize::MAX).unwrap()), [0, 1, 2, 3, 4, 5]);
    assert_eq!(numbers(&store.log("s1", 2, 4, usize::MAX).unwrap()), [2, 3, 4]);
    assert_eq!(numbers(&store.log("s1", 1, 5, 2).unwrap()), [1, 2], "at most `max`");
    assert!(store.log("s1", 4, 2, 10).unwrap().is_empty());
    assert_eq!(store.snapshot_at_or_before("s1", 3).unwrap().map(|s| s.revision), Some(0));
    assert_eq!(store.snapshot_at_or_before("s1", 5).unwrap().map(|s| s.revision), Some(4));
    assert_eq!(store.head("s1").unwrap(), Some(5));
    assert_eq!(store.head("s2").unwrap(), Some(0));
    let mut heads = store.heads().unwrap();
    heads.sort();
    assert_eq!(heads, [("s1".to_owned(), 5), ("s2".to_owned(), 0)]);
    assert!(store.has_sheet("s2").unwrap());
    assert_eq!(store.sheet_record("s2").unwrap().map(|r| r.ruleset_id), Some("starter".to_owned()));
    let ids: Vec<String> = store.sheets().unwrap().into_iter().map(|r| r.unwrap().id).collect();
    assert_eq!(ids.len(), 2);
    store.delete_sheet("s1").unwrap();
    assert!(!store.has_sheet("s1").unwrap());
    assert_eq!(store.head("s1").unwrap(), None);
    assert!(store.log("s1", 0, u64::MAX, usize::MAX).unwrap().is_empty(), "the log goes with it");
    assert_eq!(store.snapshot_at_or_before("s1", 9).unwrap(), None);
    // The id may be used again, from revision 0.
    create(store, "s1").unwrap();
    assert_eq!(store.head("s1").unwrap(), Some(0));
}

/// Writes that find the store otherwise than their writer expected.
fn conflicts(store: &dyn Store) {
    create(store, "c").unwrap();
    assert!(is_conflict(create(store, "c")).contains("already exists"));
    store.append("c", &entry(1), None).unwrap();
    is_conflict(store.append("c", &entry(1), None));
    is_conflict(store.append("c", &entry(3), None));
    is_conflict(store.append("nobody", &entry(1), None));
    assert_eq!(numbers(&store.log("c", 0, 9, 9).unwrap()), [0, 1], "nothing refused was written");
}

fn version(v: u64, text: &str) -> RulesetVersion {
    RulesetVersion {
        version: v,
        content_hash: text.as_bytes().to_vec(),
        paths: vec![],
        files: vec![FileRecord { path: "r.toml".into(), text: text.into() }],
        inline_text: String::new(),
        builtin: false,
        present: vec![],
    }
}

fn record(v: u64, text: &str) -> RulesetRecord {
    RulesetRecord {
        id: "r".into(),
        paths: vec!["r.toml".into()],
        inline_text: String::new(),
        version: v,
        confined: true,
        content_hash: text.as_bytes().to_vec(),
    }
}

/// Rulesets and their versions' content; a version saved twice with other content is refused.
fn rulesets(store: &dyn Store) {
    store.put_ruleset(&record(1, "a"), Some(&version(1, "a"))).unwrap();
    store.put_ruleset(&record(1, "a"), Some(&version(1, "a"))).unwrap();
    assert!(
        is_conflict(store.put_ruleset(&record(1, "b"), Some(&version(1, "b")))).contains("other content")
    );
    store.put_ruleset(&record(2, "b"), Some(&version(2, "b"))).unwrap();
    is_conflict(store.put_ruleset(&record(1, "a"), None));
    let stored: Vec<RulesetRecord> = store.rulesets().unwrap().into_iter().map(|r| r.unwrap()).collect();
    assert_eq!(stored, [record(2, "b")]);
    assert_eq!(store.ruleset_version("r", 1).unwrap(), Some(version(1, "a")));
    assert_eq!(store.ruleset_version("r", 2).unwrap(), Some(version(2, "b")));
    assert_eq!(store.ruleset_version("r", 3).unwrap(), None);
    let a = store.next_sheet_number().unwrap();
    let b = store.next_sheet_number().unwrap();
    assert!(b > a, "{a} then {b}");
}

/// Writers racing for a sheet's next revision: each revision is won once, none is lost.
fn racing_writers(store: Arc<dyn Store>) {
    create(&*store, "race").unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let store = store.clone();
            std::thread::spawn(move || {
                let mut won = Vec::new();
                while won.len() < 10 {
                    let head = store.head("race").unwrap().unwrap();
                    match store.append("race", &entry(head + 1), None) {
                        Ok(()) => won.push(head + 1),
                        Err(StoreError::Conflict(_)) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                won
            })
        })
        .collect();
    let mut all: Vec<u64> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    all.sort();
    assert_eq!(all, (1..=40).collect::<Vec<_>>(), "every revision won by exactly one writer");
    assert_eq!(numbers(&store.log("race", 0, u64::MAX, usize::MAX).unwrap()), (0..=40).collect::<Vec<_>>());
}

fn suite(make: impl Fn() -> Arc<dyn Store>) {
    sheets_and_logs(&*make());
    conflicts(&*make());
    rulesets(&*make());
    racing_writers(make());
}

#[test]
fn the_embedded_store_keeps_the_contract() {
    let dirs = std::sync::Mutex::new(Vec::new());
    suite(|| {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(dir.path(), 1 << 20).unwrap();
        dirs.lock().unwrap().push(dir);
        Arc::new(store)
    });
}

#[test]
fn the_postgres_store_keeps_the_contract() {
    let Some(pg) = postgres::Postgres::start() else { return };
    suite(|| Arc::new(PostgresStore::open(&pg.database()).unwrap()));
    // Opening again runs no migration twice; a schema from a later sheetd is refused.
    let url = pg.database();
    drop(PostgresStore::open(&url).unwrap());
    drop(PostgresStore::open(&url).unwrap());
    assert_eq!(pg.psql(&url, "SELECT count(*) FROM sheetd_schema"), "1");
    pg.psql(&url, "INSERT INTO sheetd_schema (version, description) VALUES (99, 'from the future')");
    let Err(StoreError::Failed(m)) = PostgresStore::open(&url) else { panic!("opened") };
    assert!(m.contains("schema is at version 99, newer than this sheetd knows"), "{m}");
}

/// Waits for `want` among the changes `rx` brings (others are skipped), for up to 10 s.
fn expect_change(rx: &std::sync::mpsc::Receiver<StoreChange>, want: StoreChange) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(c) if c == want => return,
            Ok(_) => {}
            Err(e) => panic!("waiting for {want:?}: {e}"),
        }
    }
    panic!("no {want:?} within 10 s");
}

#[test]
fn another_servers_writes_arrive_as_changes() {
    let Some(pg) = postgres::Postgres::start() else { return };
    let url = pg.database();
    let (a, b) = (PostgresStore::open(&url).unwrap(), PostgresStore::open(&url).unwrap());
    assert!(a.shared() && b.shared());
    let rx = a.changes().expect("a shared store's changes");
    assert!(a.changes().is_none(), "taken once");
    expect_change(&rx, StoreChange::Resync);
    create(&b, "w").unwrap();
    expect_change(&rx, StoreChange::Sheet { id: "w".into(), revision: 0 });
    b.append("w", &entry(1), None).unwrap();
    expect_change(&rx, StoreChange::Sheet { id: "w".into(), revision: 1 });
    b.put_ruleset(&record(1, "a"), Some(&version(1, "a"))).unwrap();
    expect_change(&rx, StoreChange::Ruleset { id: "r".into(), version: 1 });
    b.delete_sheet("w").unwrap();
    expect_change(&rx, StoreChange::Deleted { id: "w".into() });
    // The database restarted: calls fail while it is down, then work again, and the listener
    // connects again and says to compare everything.
    pg.stop();
    let Err(StoreError::Failed(m)) = b.head("w") else { panic!("a head read with the database down") };
    assert!(m.contains("store: read head"), "{m}");
    pg.restart();
    expect_change(&rx, StoreChange::Resync);
    let deadline = Instant::now() + Duration::from_secs(10);
    while b.head("w").is_err() {
        assert!(Instant::now() < deadline, "the pool did not reconnect");
        std::thread::sleep(Duration::from_millis(100));
    }
    create(&b, "after").unwrap();
    expect_change(&rx, StoreChange::Sheet { id: "after".into(), revision: 0 });
}

/// TLS to the database: verified against `sslrootcert`; refused when the certificate is not
/// trusted; `sslmode=disable` refused by a server that takes TLS only.
#[test]
fn the_postgres_store_connects_over_verified_tls() {
    let Some(pg) = postgres::Postgres::start_tls() else { return };
    let (port, pem) = pg.tls.clone().expect("TLS");
    let over_socket = pg.database();
    let db = over_socket.split('?').next().unwrap().rsplit('/').next().unwrap().to_owned();
    let ca = pg.socket_dir().join("ca.pem");
    std::fs::write(&ca, pem).unwrap();
    let tcp = format!("postgres://sheetd@localhost:{port}/{db}");
    let store = PostgresStore::open(&format!("{tcp}?sslmode=require&sslrootcert={}", ca.display()))
        .unwrap_or_else(|e| panic!("{e}"));
    create(&store, "t").unwrap();
    let encrypted = pg.psql(
        &over_socket,
        "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'sheetd' AND s.ssl",
    );
    assert_ne!(encrypted, "0", "the store's connections are encrypted");
    drop(store);
    let Err(StoreError::Failed(m)) = PostgresStore::open(&format!("{tcp}?sslmode=require")) else {
        panic!("connected to a server whose certificate nobody trusts")
    };
    assert!(m.contains("certificate"), "{m}");
    let Err(StoreError::Failed(m)) = PostgresStore::open(&format!("{tcp}?sslmode=disable")) else {
        panic!("connected in plain text to a server that takes TLS only")
    };
    assert!(m.contains("no encryption") || m.contains("pg_hba.conf"), "{m}");
    let Err(StoreError::Failed(m)) = PostgresStore::open(&format!("{tcp}?sslrootcert=/nonexistent.pem"))
    else {
        panic!("opened with a CA file that does not exist")
    };
    assert!(m.contains("sslrootcert /nonexistent.pem"), "{m}");
}
