//! Regression tests for the holes of issue 11, each against the real `sheetd serve` binary:
//! ruleset paths confined to roots, reads bounded, tokens with roles, no auth bypass with empty
//! tokens, clipped statuses, ids that cannot forge log lines, and the sheet limit under
//! concurrency.

#[path = "common/server.rs"]
mod server;

use server::Server;
use sheetd::grpc::proto::{self as pb, sheetd_service_client::SheetdServiceClient};
use std::process::Command;
use std::time::{Duration, Instant};
use tonic::Code;
use tonic::metadata::MetadataValue;
use tonic::service::Interceptor;
use tonic::transport::Channel;

/// A client that sends `authorization: <value>` verbatim.
async fn with_authorization(
    url: &str,
    value: &'static str,
) -> SheetdServiceClient<tonic::service::interceptor::InterceptedService<Channel, impl Interceptor>> {
    let channel = Channel::from_shared(url.to_owned()).expect("url").connect().await.expect("connect");
    SheetdServiceClient::with_interceptor(channel, move |mut req: tonic::Request<()>| {
        req.metadata_mut().insert("authorization", MetadataValue::from_static(value));
        Ok(req)
    })
}

fn load(id: &str, path: &str) -> pb::LoadRulesetRequest {
    pb::LoadRulesetRequest {
        id: id.into(),
        paths: vec![path.into()],
        inline_text: String::new(),
        dialect: String::new(),
    }
}

/// Everything a status carries, as text: its message and its details' diagnostics.
fn everything_in(s: &tonic::Status) -> String {
    format!("{} {:?}", s.message(), sheetd::grpc::status::diagnostics(s))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_ruleset_reads_only_regular_files_under_the_ruleset_roots() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::write(dir.path().join("secret.toml"), "[ruleset]\nname = \"TOP-SECRET-LINE\"\n").expect("write");
    std::os::unix::fs::symlink(dir.path().join("secret.toml"), root.join("escape.toml")).expect("symlink");
    std::fs::write(
        root.join("tiny.toml"),
        "[ruleset]\nname = \"t\"\nglobal = \"PC\"\n[defaults]\nNUMBER = 0\n[variables.PC]\nBase = \"NUMBER\"\n",
    )
    .expect("write");
    // Under an address-space limit: reading /dev/zero once allocated without bound.
    let server = Server::start_limited(
        &dir.path().join("data"),
        &["--ruleset-root", root.to_str().expect("utf-8"), "--call-timeout", "5"],
        4 << 30,
    );
    let mut c = server.client().await;
    let secret = dir.path().join("secret.toml");
    let up = format!("{}/../secret.toml", root.display());
    let missing = dir.path().join("no-such-file.toml");
    for path in [
        "/etc/passwd",
        "/proc/self/environ",
        "../../../../../../etc/passwd",
        secret.to_str().expect("utf-8"),
        &up,
        missing.to_str().expect("utf-8"),
        "/dev/zero",
        "/proc/self/fd/0",
    ] {
        let start = Instant::now();
        let e = c.load_ruleset(load("x", path)).await.expect_err(path);
        // Refused at once: nothing is read (the bound allows for a busy machine).
        assert!(start.elapsed() < Duration::from_secs(4), "{path} took {:?}", start.elapsed());
        assert_eq!(e.code(), Code::InvalidArgument, "{path}: {e:?}");
        let all = everything_in(&e);
        assert!(all.contains("outside the ruleset roots"), "{path}: {all}");
        // Nothing read, so nothing echoed; existing and missing files answer alike.
        for leak in ["root:", "TOP-SECRET", "SHEETD", "PATH=", "No such file"] {
            assert!(!all.contains(leak), "{path} leaks {leak}: {all}");
        }
    }
    let e = c.load_ruleset(load("x", "escape.toml")).await.expect_err("symlink out");
    let all = everything_in(&e);
    assert!(all.contains("symbolic link") && !all.contains("TOP-SECRET"), "{all}");
    // Inside the root, by absolute or root-relative path, it loads.
    let ok = c.load_ruleset(load("tiny", "tiny.toml")).await.expect("inside").into_inner();
    assert!(ok.ok, "{ok:?}");
    let abs = root.join("tiny.toml");
    assert!(
        c.load_ruleset(load("tiny2", abs.to_str().expect("utf-8"))).await.expect("absolute").into_inner().ok
    );
    // The server is still fine.
    c.ping(pb::PingRequest {}).await.expect("alive");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ruleset_reads_and_inline_text_are_bounded() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::write(root.join("big.toml"), "# x\n".repeat(1000)).expect("write");
    let server = Server::start(
        &dir.path().join("data"),
        &[
            "--ruleset-root",
            root.to_str().expect("utf-8"),
            "--max-ruleset-file-bytes",
            "2000",
            "--max-inline-ruleset-bytes",
            "5000",
            "--max-ruleset-line-bytes",
            "100",
        ],
    );
    let mut c = server.client().await;
    let e = c.load_ruleset(load("big", "big.toml")).await.expect_err("too big");
    assert!(everything_in(&e).contains("the limit is 2000 bytes"), "{e:?}");
    let inline = |text: String| pb::LoadRulesetRequest {
        id: "i".into(),
        paths: vec![],
        inline_text: text,
        dialect: String::new(),
    };
    let e = c.load_ruleset(inline("# x\n".repeat(2000))).await.expect_err("inline too big");
    assert!(e.message().contains("the limit is 5000 bytes"), "{e:?}");
    let e = c.load_ruleset(inline(format!("# {}\n", "x".repeat(200)))).await.expect_err("long line");
    assert!(e.message().contains("line 1 is 202 bytes long"), "{e:?}");
}

/// Loading costs memory linear in the ruleset's size: 12,000 modifiers on one 300 KB line once
/// took the server past 24 GiB. Here it runs under a 3 GiB address-space limit and must load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_one_line_inline_ruleset_loads_within_a_memory_limit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start_limited(
        &dir.path().join("data"),
        &["--max-inline-ruleset-bytes", "1000000", "--max-ruleset-line-bytes", "1000000"],
        3 << 30,
    );
    let mods: Vec<String> = (0..12_000).map(|i| format!("{{ var = \"V\", add = \"{}\" }}", i % 7)).collect();
    let text = format!(
        "[ruleset]\nname = \"big\"\nglobal = \"PC\"\n[defaults]\nNUMBER = 0\n[variables.PC]\nV = \"NUMBER\"\n\
         [global]\nmodify = [{}]\n",
        mods.join(", ")
    );
    assert!(text.len() > 250_000);
    let mut c = server.client().await;
    let r = c
        .load_ruleset(pb::LoadRulesetRequest {
            id: "big".into(),
            paths: vec![],
            inline_text: text,
            dialect: String::new(),
        })
        .await
        .expect("loads")
        .into_inner();
    assert!(r.ok && r.ruleset.and_then(|r| r.summary).map(|s| s.modifiers) == Some(12_000));
    c.ping(pb::PingRequest {}).await.expect("alive");
}

fn serve_fails(args: &[&str], env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .args(args)
        .env_remove("SHEETD_TOKENS")
        .envs(env.iter().copied())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2), "must refuse to start: {out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_tokens_are_refused_and_the_scheme_is_case_insensitive() {
    for (args, env) in [
        (&["--token", ""][..], &[][..]),
        (&["--token", "  "][..], &[][..]),
        (&[][..], &[("SHEETD_TOKENS", "a,")][..]),
        (&[][..], &[("SHEETD_TOKENS", " , ")][..]),
    ] {
        let err = serve_fails(args, env);
        assert!(err.contains("empty"), "{args:?} {env:?}: {err}");
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("c.toml");
    std::fs::write(&file, "[auth]\ntokens = [\"\"]\n").expect("write");
    assert!(serve_fails(&["--config", file.to_str().expect("utf-8")], &[]).contains("empty"));

    let server =
        Server::start_with_env(&dir.path().join("data"), &[], &[("SHEETD_TOKENS", " s3cret ,other")]);
    for value in ["x", "Bearer", "Bearer ", "Bearer x", "s3cret", "Basic s3cret"] {
        let mut c = with_authorization(&server.url, value).await;
        let e = c.ping(pb::PingRequest {}).await.expect_err(value);
        assert_eq!(e.code(), Code::Unauthenticated, "{value}");
    }
    for value in ["Bearer s3cret", "bearer s3cret", "BEARER other", "Bearer  s3cret "] {
        let mut c = with_authorization(&server.url, value).await;
        c.ping(pb::PingRequest {}).await.expect(value);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_read_write_admin() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(
        &dir.path().join("data"),
        &["--token", "read=r-token", "--token", "write=w-token", "--token", "a-token"],
    );
    let connect = |t: &'static str| sheetd::cli::client::connect(&server.url, Some(t), None);
    let (mut r, mut w, mut a) = (
        connect("r-token").await.expect("c"),
        connect("w-token").await.expect("c"),
        connect("a-token").await.expect("c"),
    );
    let denied = |res: Result<_, tonic::Status>| match res {
        Err(e) => assert_eq!(e.code(), Code::PermissionDenied, "{e:?}"),
        Ok(_) => panic!("allowed"),
    };
    denied(r.create_sheet(pb::CreateSheetRequest::default()).await.map(|_| ()));
    let created =
        w.create_sheet(pb::CreateSheetRequest::default()).await.expect("write creates").into_inner();
    let id = created.sheet.expect("info").id;
    r.values(server::values(&id, &["AC"], None)).await.expect("read reads");
    r.get_sheet(pb::GetSheetRequest { sheet_id: id.clone() }).await.expect("read gets");
    denied(r.apply(server::apply(&id, None, vec![])).await.map(|_| ()));
    w.apply(server::apply(&id, None, vec![])).await.expect("write applies");
    denied(
        w.delete_sheet(pb::DeleteSheetRequest { sheet_id: id.clone(), ..Default::default() })
            .await
            .map(|_| ()),
    );
    let inline = pb::LoadRulesetRequest {
        id: "x".into(),
        paths: vec![],
        inline_text: "[ruleset\n".into(),
        dialect: String::new(),
    };
    denied(w.load_ruleset(inline.clone()).await.map(|_| ()));
    denied(
        w.reload_ruleset(pb::ReloadRulesetRequest {
            id: "starter".into(),
            inline_text: String::new(),
            expected_version: None,
        })
        .await
        .map(|_| ()),
    );
    assert_eq!(
        a.load_ruleset(inline).await.expect_err("bad text").code(),
        Code::InvalidArgument,
        "admin gets through"
    );
    a.delete_sheet(pb::DeleteSheetRequest { sheet_id: id, ..Default::default() })
        .await
        .expect("admin deletes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejections_fit_stock_clients_and_ids_cannot_forge_log_lines() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &["--max-formula-length", "100000"]);
    let mut c = server.client().await;
    let created = c.create_sheet(pb::CreateSheetRequest::default()).await.expect("create").into_inner();
    let id = created.sheet.expect("info").id;
    // A 16,000-byte formula with a syntax error at its end: the real status arrives, with the
    // span still pointing at the error in the whole formula.
    let formula = format!("{} + )", "x".repeat(16_000));
    let op =
        format!(r#"{{"add_modifier": {{"id": "m", "var": "AC", "type": "ADD", "value": "{formula}"}}}}"#);
    let e = c.apply(server::apply(&id, None, server::ops(&[&op]))).await.expect_err("bad formula");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(
        e.message().len() <= 1100 && e.details().len() <= 4096,
        "{} / {}",
        e.message().len(),
        e.details().len()
    );
    let d = &sheetd::grpc::status::diagnostics(&e)[0];
    let span = d.span.expect("span");
    let (start, offset) = (span.start as usize, d.formula_offset as usize);
    let end = span.end as usize;
    assert!(start > 15_000 && end <= formula.len(), "the span counts from the whole formula: {span:?}");
    assert!(offset > 0 && d.formula.len() <= 512, "an excerpt: {offset} {}", d.formula.len());
    assert_eq!(&d.formula[start - offset..end - offset], &formula[start..end], "the excerpt holds the span");
    // A 20,000-character id: NOT_FOUND arrives intact.
    let long = "x".repeat(20_000);
    let e = c.get_sheet(pb::GetSheetRequest { sheet_id: long.clone() }).await.expect_err("unknown");
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    let e =
        c.create_sheet(pb::CreateSheetRequest { id: long, ..Default::default() }).await.expect_err("long");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    // Ids with a dot or a line break are refused, and the log shows the line break escaped.
    for bad in ["a.b", "evil\nINFO forged line"] {
        let e = c.create_sheet(pb::CreateSheetRequest { id: bad.into(), ..Default::default() }).await;
        assert_eq!(e.expect_err(bad).code(), Code::InvalidArgument);
    }
    let e = c.get_sheet(pb::GetSheetRequest { sheet_id: "evil\nINFO forged line".into() }).await;
    assert_eq!(e.expect_err("unknown").code(), Code::NotFound);
    let log = server.stop();
    assert!(!log.lines().any(|l| l.starts_with("INFO forged line")), "{log}");
    assert!(log.contains("evil\\nINFO forged line"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sheet_limit_holds_under_concurrent_creates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &["--max-sheets", "100"]);
    let mut tasks = Vec::new();
    for _ in 0..300 {
        let mut c = server.client().await;
        tasks.push(tokio::spawn(
            async move { c.create_sheet(pb::CreateSheetRequest::default()).await.is_ok() },
        ));
    }
    let mut created = 0;
    for t in tasks {
        created += usize::from(t.await.expect("task"));
    }
    assert_eq!(created, 100);
    let mut c = server.client().await;
    let list = c.list_sheets(pb::ListSheetsRequest::default()).await.expect("list").into_inner();
    assert_eq!(list.sheets.len(), 100);
}

/// A sheet with `n` revisions, each toggling the example armor (16-odd changes each).
async fn long_sheet(c: &mut sheetd::cli::client::Client, n: u64) -> String {
    let created = c
        .create_sheet(pb::CreateSheetRequest {
            operations: server::example_character(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    let id = created.sheet.expect("info").id;
    let on = r#"{"add_object": {"kind": "EQUIPMENT", "key": "Plated Harness", "id": "harness"}}"#;
    let off = r#"{"remove_object": "harness"}"#;
    for r in 0..n {
        let op = if r % 2 == 0 { on } else { off };
        c.apply(server::apply(&id, Some(r), server::ops(&[op]))).await.expect("apply");
    }
    id
}

/// Watchers that replay a long history and never read hold one chunk each, not the history:
/// the server's memory stays near its base while they are open and returns to it after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_replay_streams_from_the_store_in_bounded_chunks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start_limited(&dir.path().join("data"), &["--watch-buffer", "64"], 4 << 30);
    let mut c = server.client().await;
    let id = long_sheet(&mut c, 3000).await;
    // Warm up: one full replay read to the end.
    let mut w = c
        .watch(pb::WatchRequest { sheet_id: id.clone(), variables: vec![], from_revision: Some(0) })
        .await
        .expect("watch")
        .into_inner();
    for _ in 0..3000 {
        w.message().await.expect("event").expect("not ended");
    }
    drop(w);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let base = server.rss();
    let mut idle = Vec::new();
    for _ in 0..20 {
        let mut c = server.client().await;
        let s = c
            .watch(pb::WatchRequest { sheet_id: id.clone(), variables: vec![], from_revision: Some(0) })
            .await
            .expect("watch")
            .into_inner();
        idle.push((c, s));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let open = server.rss();
    drop(idle);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after = server.rss();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    eprintln!(
        "rss: base {:.1} MiB, 20 idle replays {:.1} MiB, closed {:.1} MiB",
        mib(base),
        mib(open),
        mib(after)
    );
    // Building each replay whole held 20 copies of the history (~10 MiB each here).
    assert!(open < base + (48 << 20), "idle watchers hold {:.1} MiB", mib(open - base));
    // The slack is allocator noise (a run measured 0.8 MiB over an 8 MiB slack once); what
    // the test guards against, a replay held whole per watcher, is about 200 MiB here.
    assert!(
        after < base + base / 10 + (16 << 20),
        "after closing: {:.1} MiB vs base {:.1}",
        mib(after),
        mib(base)
    );
}

/// SIGTERM with calls stuck waiting for their turn (one blocking slot, hundreds of expensive
/// calls queued): the process still exits within its grace period.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_within_the_grace_period_with_calls_in_flight() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(
        &dir.path().join("data"),
        &["--max-blocking", "1", "--max-expensive", "1", "--shutdown-grace", "2", "--call-timeout", "600"],
    );
    let mut c = server.client().await;
    let id = long_sheet(&mut c, 600).await;
    let mut watch = c
        .watch(pb::WatchRequest { sheet_id: id.clone(), variables: vec![], from_revision: None })
        .await
        .expect("watch")
        .into_inner();
    let mut calls = Vec::new();
    for _ in 0..200 {
        let mut c = server.client().await;
        let req = pb::WhyChangedRequest {
            sheet_id: id.clone(),
            variable: "AC".into(),
            from_revision: 0,
            to_revision: None,
        };
        calls.push(tokio::spawn(async move { c.why_changed(req).await.map(|_| ()) }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (took, log) = tokio::task::spawn_blocking(move || server.terminate_timed(Duration::from_secs(15)))
        .await
        .expect("join");
    // The grace period is 2 s; draining the queued calls would take far longer. The bound
    // allows for a busy machine.
    assert!(took < Duration::from_secs(8), "exit took {took:?}\n{log}");
    assert!(log.contains("stopped"), "{log}");
    // The watcher was told to reconnect, not that the stream ended normally.
    match watch.message().await {
        Err(e) => assert_eq!(e.code(), Code::Unavailable, "{e:?}"),
        Ok(m) => panic!("the stream must end with UNAVAILABLE at shutdown, got {m:?}"),
    }
    for c in calls {
        let _ = c.await;
    }
}

/// Flips one byte of a stored record's payload, as a disk or an editor might.
fn damage_log_record(data: &std::path::Path, sheet: &str, revision: u64) {
    use redb::ReadableTable;
    const LOG: redb::TableDefinition<(&str, u64), &[u8]> = redb::TableDefinition::new("log");
    let db = redb::Database::create(data.join("sheetd.redb")).expect("open store");
    let tx = db.begin_write().expect("tx");
    {
        let mut t = tx.open_table(LOG).expect("log table");
        let mut bytes = t.get((sheet, revision)).expect("get").expect("record").value().to_vec();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x06;
        t.insert((sheet, revision), bytes.as_slice()).expect("insert");
    }
    tx.commit().expect("commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_record_answers_data_loss_and_the_rest_keep_serving() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    let a = long_sheet(&mut c, 3).await;
    let b = long_sheet(&mut c, 3).await;
    drop(c);
    server.stop();
    damage_log_record(&data, &a, 2);

    let verify = |dir: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_sheetd")).args(["store", "verify"]).arg(dir).output().expect("run")
    };
    let out = verify(&data);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        stdout.trim(),
        format!("log {a}@2: store: record log {a}@2 is damaged: its checksum does not match")
    );

    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    let e = c.get_sheet(pb::GetSheetRequest { sheet_id: a.clone() }).await.expect_err("damaged");
    assert_eq!(e.code(), Code::DataLoss, "{e:?}");
    assert!(e.message().contains(&format!("log {a}@2")), "names the revision: {}", e.message());
    let e = c.values(server::values(&a, &["AC"], None)).await.expect_err("damaged");
    assert_eq!(e.code(), Code::DataLoss);
    // Its id stays taken, consistently.
    let e = c.create_sheet(pb::CreateSheetRequest { id: a.clone(), ..Default::default() }).await;
    assert_eq!(e.expect_err("taken").code(), Code::AlreadyExists);
    // The other sheet serves, history included.
    let v = c.values(server::values(&b, &["AC"], Some(1))).await.expect("b serves").into_inner();
    assert_eq!(v.revision, 1);
    c.apply(server::apply(&b, Some(3), vec![])).await.expect("b takes changes");
    // Deleting the damaged sheet clears it.
    c.delete_sheet(pb::DeleteSheetRequest { sheet_id: a.clone(), ..Default::default() })
        .await
        .expect("delete");
    drop(c);
    server.stop();
    let out = verify(&data);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ok: no damaged records"));
}

/// Garbage written over the store file's pages: the server reports an error or serves what it
/// can, and never dies of a panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_damage_is_an_error_not_a_crash() {
    use std::io::{Seek, SeekFrom, Write};
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    for _ in 0..4 {
        long_sheet(&mut c, 40).await;
    }
    drop(c);
    server.stop();
    let path = data.join("sheetd.redb");
    let len = std::fs::metadata(&path).expect("meta").len();
    for at in [len / 3, len / 2, 2 * len / 3] {
        let mut f = std::fs::OpenOptions::new().write(true).open(&path).expect("open");
        f.seek(SeekFrom::Start(at)).expect("seek");
        f.write_all(&[0xA5; 4096]).expect("write");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["store", "verify"])
        .arg(&data)
        .output()
        .expect("run");
    assert!(matches!(out.status.code(), Some(0..=2)), "verify must not crash: {out:?}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).expect("read");
    if let Some(url) =
        line.trim().strip_prefix("sheetd serving on ").and_then(|r| r.split_whitespace().next())
    {
        let mut c = sheetd::cli::client::connect(url, None, None).await.expect("connect");
        let list = c.list_sheets(pb::ListSheetsRequest::default()).await.expect("list").into_inner();
        for s in list.sheets {
            let _ = c.values(server::values(&s.id, &[], Some(1))).await;
            let _ = c.apply(server::apply(&s.id, None, vec![])).await;
        }
        c.ping(pb::PingRequest {}).await.expect("still serving");
        let _ = child.kill();
    }
    let status = child.wait().expect("wait");
    assert_ne!(status.code(), Some(101), "a panic ended the server");
}

const TINY: &str = "[ruleset]\nname = \"tiny\"\nglobal = \"PC\"\n[defaults]\nNUMBER = 0\n[variables.PC]\n\
                    Base = \"NUMBER\"\nTotal = \"NUMBER\"\n[global]\nmodify = [\n  { var = \"Base\", set = \"10\" },\n  \
                    { var = \"Total\", set = \"Base + 1\" },\n]\n";

async fn total_at(c: &mut sheetd::cli::client::Client, id: &str, revision: Option<u64>) -> String {
    let v = c.values(server::values(id, &["Total"], revision)).await.expect("values").into_inner();
    server::value_of(&v.values, "Total")
}

/// A ruleset file changed while the server was down is a new version: existing revisions keep
/// the values they were made with, under their version, until the sheet moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_is_not_rewritten_by_a_ruleset_changed_between_restarts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("rules");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::write(root.join("tiny.toml"), TINY).expect("write");
    let data = dir.path().join("data");
    let args = ["--ruleset-root", root.to_str().expect("utf-8")];
    let server = Server::start(&data, &args);
    let mut c = server.client().await;
    assert!(c.load_ruleset(load("tiny", "tiny.toml")).await.expect("load").into_inner().ok);
    let created = c
        .create_sheet(pb::CreateSheetRequest { ruleset_id: "tiny".into(), ..Default::default() })
        .await
        .expect("create")
        .into_inner();
    let id = created.sheet.expect("info").id;
    let add = r#"{"add_modifier": {"id": "bonus", "var": "Total", "type": "ADD", "value": "1"}}"#;
    c.apply(server::apply(&id, Some(0), server::ops(&[add]))).await.expect("apply");
    assert_eq!(total_at(&mut c, &id, None).await, "12");
    drop(c);
    server.stop();

    std::fs::write(root.join("tiny.toml"), TINY.replace("\"10\"", "\"50\"")).expect("write");
    let server = Server::start(&data, &args);
    let mut c = server.client().await;
    let list = c.list_rulesets(pb::ListRulesetsRequest::default()).await.expect("list").into_inner();
    let tiny = list.rulesets.iter().find(|r| r.id == "tiny").expect("tiny");
    assert_eq!(tiny.version, 2, "changed content is a new version");
    let info = c
        .get_sheet(pb::GetSheetRequest { sheet_id: id.clone() })
        .await
        .expect("get")
        .into_inner()
        .sheet
        .expect("the sheet");
    assert_eq!((info.revision, info.ruleset_version), (1, 1));
    assert_eq!(total_at(&mut c, &id, None).await, "12", "revision 1 keeps its value");
    assert_eq!(total_at(&mut c, &id, Some(0)).await, "11");
    let why = c
        .why_changed(pb::WhyChangedRequest {
            sheet_id: id.clone(),
            variable: "Total".into(),
            from_revision: 0,
            to_revision: None,
        })
        .await
        .expect("why")
        .into_inner();
    assert_eq!(why.causes.len(), 1, "{why:?}");
    // The next change moves the sheet to version 2, and says so.
    let applied = c.apply(server::apply(&id, Some(1), vec![])).await.expect("apply").into_inner();
    let moved = applied.moved.expect("moved");
    assert_eq!((moved.from_version, moved.to_version), (1, 2));
    assert_eq!(total_at(&mut c, &id, None).await, "52");
    assert_eq!(total_at(&mut c, &id, Some(1)).await, "12", "history stays");
    // A sheet on version 1 restored after another restart replays version 1's stored text, even
    // with the file changed again.
    let other = c
        .create_sheet(pb::CreateSheetRequest {
            ruleset_id: "tiny".into(),
            id: "second".into(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    assert_eq!(other.sheet.expect("info").ruleset_version, 2);
    drop(c);
    server.stop();
    std::fs::write(root.join("tiny.toml"), TINY.replace("\"10\"", "\"90\"")).expect("write");
    let server = Server::start(&data, &args);
    let mut c = server.client().await;
    assert_eq!(total_at(&mut c, "second", None).await, "51", "version 2's content, not the file's");
    assert_eq!(total_at(&mut c, &id, None).await, "52");
}
