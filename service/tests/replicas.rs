//! Several `sheetd serve` replicas over one PostgreSQL database (`--store postgres://…`), end to
//! end: real servers on loopback, a real PostgreSQL started by the test (skipped with a notice
//! where it is not installed, outside CI). Applies interleaved through two replicas, a Watch on
//! one seeing the other's changes, a replica killed with SIGKILL mid-load, the database
//! restarted under load, rulesets loaded through one served by the other.

#[path = "common/postgres.rs"]
mod postgres;
#[path = "common/server.rs"]
mod server;

use server::{Server, ops};
use sheetd::cli::client::Client;
use sheetd::grpc::proto as pb;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// Two replicas on one new database, and the database.
fn replicas(pg: &postgres::Postgres, dir: &std::path::Path) -> (Server, Server, String) {
    let url = pg.database();
    let a = Server::start(&dir.join("a"), &["--store", &url]);
    let b = Server::start(&dir.join("b"), &["--store", &url]);
    (a, b, url)
}

fn add_one(n: usize) -> Vec<pb::Operation> {
    let step = format!(r#"{{"add_modifier": {{"id": "m{n}", "var": "AC", "type": "ADD", "value": "1"}}}}"#);
    ops(&[&step])
}

async fn create(c: &mut Client, id: &str) {
    let req = pb::CreateSheetRequest { id: id.into(), ..Default::default() };
    c.create_sheet(req).await.expect("create");
}

async fn apply(c: &mut Client, id: &str, n: usize, expected: Option<u64>) -> Result<u64, tonic::Status> {
    let req = pb::ApplyRequest {
        sheet_id: id.into(),
        expected_revision: expected,
        operations: add_one(n),
        ..Default::default()
    };
    c.apply(req).await.map(|r| r.into_inner().revision)
}

async fn revision(c: &mut Client, id: &str) -> u64 {
    let req = pb::GetSheetRequest { sheet_id: id.into() };
    c.get_sheet(req).await.expect("get sheet").into_inner().sheet.expect("info").revision
}

async fn ac(c: &mut Client, id: &str) -> String {
    let req = pb::ValuesRequest { sheet_id: id.into(), variables: vec!["AC".into()], revision: None };
    let v = c.values(req).await.expect("values").into_inner();
    match v.values[0].value.as_ref().and_then(|v| v.kind.clone()) {
        Some(pb::value::Kind::Number(n)) => n,
        other => panic!("AC is {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interleaved_applies_through_two_replicas_lose_nothing() {
    let Some(pg) = postgres::Postgres::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (a, b, _) = replicas(&pg, dir.path());
    let (mut ca, mut cb) = (a.client().await, b.client().await);
    create(&mut ca, "hero").await;
    let base: i64 = ac(&mut cb, "hero").await.parse().unwrap();
    assert_eq!(revision(&mut cb, "hero").await, 0, "created through A, served by B");
    // Four writers, two on each replica, none naming a revision. A replica that loses the race
    // for a revision catches up and tries once more; losing again, it answers ABORTED, and
    // the client sends the Apply again (what ABORTED asks).
    let mut tasks = Vec::new();
    for w in 0..4 {
        let server = if w % 2 == 0 { &a } else { &b };
        let mut c = server.client().await;
        tasks.push(tokio::spawn(async move {
            let mut got = Vec::new();
            for i in 0..15 {
                loop {
                    match apply(&mut c, "hero", w * 100 + i, None).await {
                        Ok(r) => break got.push(r),
                        Err(e) if e.code() == tonic::Code::Aborted => continue,
                        Err(e) => panic!("an apply: {e:?}"),
                    }
                }
            }
            got
        }));
    }
    let mut acknowledged = BTreeSet::new();
    for t in tasks {
        for r in t.await.unwrap() {
            assert!(acknowledged.insert(r), "revision {r} acknowledged twice");
        }
    }
    assert_eq!(acknowledged, (1..=60).collect(), "contiguous revisions, each acknowledged once");
    for c in [&mut ca, &mut cb] {
        assert_eq!(revision(c, "hero").await, 60);
        assert_eq!(ac(c, "hero").await, (base + 60).to_string(), "no lost update");
    }
    // Two writers naming the same revision: one wins, the other is ABORTED, on either replica.
    let (ra, rb) = tokio::join!(apply(&mut ca, "hero", 900, Some(60)), apply(&mut cb, "hero", 901, Some(60)));
    let outcomes = [ra.map_err(|e| e.code()), rb.map_err(|e| e.code())];
    assert!(outcomes.contains(&Ok(61)), "{outcomes:?}");
    assert!(outcomes.contains(&Err(tonic::Code::Aborted)), "{outcomes:?}");
    // The revisions in the store: 0..=61, once each.
    let log = pg.psql(
        &pg_url_of(&a),
        "SELECT count(*), min(revision), max(revision) FROM sheetd_log WHERE sheet = 'hero'",
    );
    assert_eq!(log, "62|0|61");
}

/// The database URL a server was started with, from its log's "serving" line.
fn pg_url_of(s: &Server) -> String {
    let log = s.log();
    let line = log.lines().find(|l| l.contains("store=postgres://")).unwrap_or_else(|| panic!("{log}"));
    let at = line.find("store=postgres://").unwrap() + "store=".len();
    let loc = line[at..].split_whitespace().next().unwrap();
    // postgres://sheetd@/tmp/…:5432/DB → the socket folder and the database.
    let rest = loc.strip_prefix("postgres://sheetd@").unwrap();
    let (host_port, db) = rest.rsplit_once('/').unwrap();
    let host = host_port.rsplit_once(':').unwrap().0;
    format!("postgres://sheetd@/{db}?host={host}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_watch_on_one_replica_sees_every_change_made_through_the_other() {
    let Some(pg) = postgres::Postgres::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (a, b, _) = replicas(&pg, dir.path());
    let (mut ca, mut cb) = (a.client().await, b.client().await);
    create(&mut cb, "w").await;
    let watch = pb::WatchRequest { sheet_id: "w".into(), variables: vec![], from_revision: None };
    let mut stream = ca.watch(watch).await.expect("watch on A").into_inner();
    for n in 0..10 {
        apply(&mut cb, "w", n, None).await.expect("apply through B");
    }
    let mut seen = Vec::new();
    while seen.len() < 10 {
        let m = tokio::time::timeout(Duration::from_secs(10), stream.message())
            .await
            .expect("an event within 10 s")
            .expect("a message")
            .expect("the stream goes on");
        assert!(matches!(m.event, Some(pb::watch_response::Event::Changes(_))), "{m:?}");
        seen.push(m.revision);
    }
    assert_eq!(seen, (1..=10).collect::<Vec<_>>(), "in revision order, no gap");
    // Resuming on A from revision 3 replays the rest.
    let resume = pb::WatchRequest { sheet_id: "w".into(), variables: vec![], from_revision: Some(3) };
    let mut again = ca.watch(resume).await.expect("resume").into_inner();
    let mut replayed = Vec::new();
    while replayed.len() < 7 {
        let m = again.message().await.expect("message").expect("event");
        replayed.push(m.revision);
    }
    assert_eq!(replayed, (4..=10).collect::<Vec<_>>());
    // Deleted through B: A's watchers are told, and A no longer serves it.
    let delete = pb::DeleteSheetRequest { sheet_id: "w".into(), expected_revision: None };
    cb.delete_sheet(delete).await.expect("delete through B");
    let m =
        tokio::time::timeout(Duration::from_secs(10), stream.message()).await.expect("the end").expect("msg");
    assert!(matches!(m.and_then(|m| m.event), Some(pb::watch_response::Event::Deleted(_)) | None));
    let gone = ca.get_sheet(pb::GetSheetRequest { sheet_id: "w".into() }).await.unwrap_err();
    assert_eq!(gone.code(), tonic::Code::NotFound);
    // Made anew under the same id through B: A serves the new one, from revision 0.
    create(&mut cb, "w").await;
    assert_eq!(revision(&mut ca, "w").await, 0);
    apply(&mut cb, "w", 1, Some(0)).await.expect("the new sheet's first change");
    assert_eq!(revision(&mut ca, "w").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_killed_mid_load_loses_nothing_it_acknowledged() {
    let Some(pg) = postgres::Postgres::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (a, b, _) = replicas(&pg, dir.path());
    let mut ca = a.client().await;
    for s in 0..4 {
        create(&mut ca, &format!("k{s}")).await;
    }
    // Writers on A, each on its own sheet, recording what A acknowledged, until A dies.
    let mut tasks = Vec::new();
    for s in 0..4 {
        let mut c = a.client().await;
        tasks.push(tokio::spawn(async move {
            let mut last = 0;
            for n in 0.. {
                match apply(&mut c, &format!("k{s}"), n, None).await {
                    Ok(r) => last = r,
                    Err(_) => break,
                }
            }
            last
        }));
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    tokio::task::spawn_blocking(move || a.crash()).await.unwrap();
    let mut cb = b.client().await;
    for (s, t) in tasks.into_iter().enumerate() {
        let acked = t.await.unwrap();
        assert!(acked > 0, "sheet k{s}: A acknowledged nothing before it died");
        let id = format!("k{s}");
        let mut at_b = revision(&mut cb, &id).await;
        assert!(at_b >= acked, "sheet {id}: A acknowledged revision {acked}, B serves {at_b}");
        // And B goes on from the revision it serves. A may have committed one more change
        // than it acknowledged just before it died, which B hears of a moment later: until
        // then a change expecting B's revision is refused as a conflict (ABORTED), as any
        // client's would be, and the client reads the revision again.
        let mut conflicts = 0;
        loop {
            match apply(&mut cb, &id, 9999, Some(at_b)).await {
                Ok(r) => {
                    assert_eq!(r, at_b + 1);
                    break;
                }
                Err(e) if e.code() == tonic::Code::Aborted && conflicts < 50 => {
                    conflicts += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    at_b = revision(&mut cb, &id).await;
                }
                Err(e) => panic!("apply on B: {e:?}"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_restart_fails_calls_cleanly_and_loses_nothing() {
    let Some(pg) = postgres::Postgres::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (a, b, _) = replicas(&pg, dir.path());
    let (mut ca, mut cb) = (a.client().await, b.client().await);
    create(&mut ca, "r").await;
    let mut acknowledged = BTreeSet::new();
    let mut unavailable = 0;
    let mut stopped = false;
    let started = Instant::now();
    let mut n = 0;
    while started.elapsed() < Duration::from_secs(60) {
        n += 1;
        if n == 20 {
            pg.stop();
            stopped = true;
        }
        if stopped && unavailable >= 5 {
            pg.restart();
            stopped = false;
        }
        let c = if n % 2 == 0 { &mut ca } else { &mut cb };
        match apply(c, "r", n, None).await {
            Ok(r) => {
                assert!(acknowledged.insert(r), "revision {r} acknowledged twice");
                if n > 20 && acknowledged.len() >= 40 {
                    break;
                }
            }
            Err(e) => {
                assert_eq!(e.code(), tonic::Code::Unavailable, "{e:?}");
                unavailable += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    assert!(unavailable >= 5, "calls failed while the database was down");
    assert!(acknowledged.len() >= 40, "calls succeeded again after it came back: {acknowledged:?}");
    let last = *acknowledged.last().unwrap();
    assert_eq!(acknowledged, (1..=last).collect(), "every acknowledged revision, contiguous");
    for c in [&mut ca, &mut cb] {
        assert_eq!(revision(c, "r").await, last, "both replicas serve every acknowledged revision");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rulesets_loaded_through_one_replica_serve_on_the_other() {
    let Some(pg) = postgres::Postgres::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (a, b, _) = replicas(&pg, dir.path());
    let (mut ca, mut cb) = (a.client().await, b.client().await);
    let text = |n: u32| {
        format!(
            "[ruleset]\nname = \"tiny\"\n[variables.PC]\nX = \"NUMBER\"\n[global]\nmodify = [{{ var = \"X\", set = \"{n}\" }}]\n"
        )
    };
    let load = pb::LoadRulesetRequest { id: "tiny".into(), inline_text: text(1), ..Default::default() };
    assert!(ca.load_ruleset(load.clone()).await.expect("load through A").into_inner().ok);
    // B serves it at once (loaded from the store on first use).
    let req = pb::CreateSheetRequest { ruleset_id: "tiny".into(), id: "t".into(), ..Default::default() };
    cb.create_sheet(req).await.expect("a sheet on it through B");
    let e = cb.load_ruleset(load).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::AlreadyExists, "{e:?}");
    // Reloaded through B: version 2, served by A; A's sheet moves to it on its next Apply.
    let reload =
        pb::ReloadRulesetRequest { id: "tiny".into(), inline_text: text(2), expected_version: Some(1) };
    let r = cb.reload_ruleset(reload.clone()).await.expect("reload through B").into_inner();
    assert_eq!(r.ruleset.map(|r| r.version), Some(2));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let list = ca.list_rulesets(pb::ListRulesetsRequest::default()).await.unwrap().into_inner();
        if list.rulesets.iter().any(|r| r.id == "tiny" && r.version == 2) {
            break;
        }
        assert!(Instant::now() < deadline, "A never served version 2");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The same reload again, expecting version 1: ABORTED on either replica.
    let e = ca.reload_ruleset(reload).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::Aborted, "{e:?}");
    let moved = ca.upgrade(pb::UpgradeRequest { sheet_id: "t".into() }).await.expect("upgrade").into_inner();
    let x = moved.result.and_then(|r| r.moved).expect("moved");
    assert_eq!((x.from_version, x.to_version), (1, 2));
}
