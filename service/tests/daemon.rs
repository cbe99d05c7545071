//! End-to-end tests of `sheetd serve`: the real binary on an ephemeral loopback port, called
//! through the generated client.

#[path = "common/server.rs"]
mod server;

use server::{Server, apply, example_character, ops, shown, value_of, values};
use sheetd::grpc::proto as pb;
use sheetd::grpc::status::diagnostics as status_diagnostics;
use tonic::Code;

const REMOVE_ARMOR: &str = r#"{"remove_object": "armor"}"#;
const HARNESS: &str = r#"{"add_object": {"kind": "EQUIPMENT", "key": "Plated Harness", "id": "armor"}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_apply_values_explain_and_why_changed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;

    // Create with the example character: revision 0, AC 17.
    let created = c
        .create_sheet(pb::CreateSheetRequest { operations: example_character(), ..Default::default() })
        .await
        .expect("create")
        .into_inner();
    let sheet = created.sheet.expect("info");
    assert_eq!((sheet.id.as_str(), sheet.revision, sheet.ruleset_id.as_str()), ("sheet-1", 0, "starter"));
    assert!(sheet.objects.contains(&"armor".to_owned()) && sheet.objects.contains(&"sword".to_owned()));
    assert_eq!(value_of(&created.values, "AC"), "17");
    assert_eq!(value_of(&created.values, "sword#1.Damage"), "1d8");

    // Apply: the changes come old → new in topological order.
    let r = c.apply(apply("sheet-1", Some(0), ops(&[REMOVE_ARMOR]))).await.expect("apply").into_inner();
    assert_eq!(r.revision, 1);
    let refs: Vec<&str> = r.changes.iter().map(|c| c.r#ref.as_str()).collect();
    let pos =
        |name: &str| refs.iter().position(|r| *r == name).unwrap_or_else(|| panic!("{name} in {refs:?}"));
    assert!(pos("ArmorBonus") < pos("AC"));
    let ac = &r.changes[pos("AC")];
    assert_eq!((shown(&ac.old), shown(&ac.new)), ("17".to_owned(), "12".to_owned()));
    assert_eq!(shown(&r.changes[pos("armor.ArmorAC")].new), "(none)");
    assert!(r.recomputed > 0);

    // A wrong expected revision: ABORTED, nothing changes.
    let e = c.apply(apply("sheet-1", Some(0), ops(&[HARNESS]))).await.expect_err("stale");
    assert_eq!(e.code(), Code::Aborted, "{e:?}");
    assert!(e.message().contains("revision 1"), "{}", e.message());

    // An invalid operation rejects the whole batch: the valid one before it has no effect.
    let e = c
        .apply(apply(
            "sheet-1",
            None,
            ops(&[HARNESS, r#"{"add_object": {"kind": "EQUIPMENT", "key": "Moon Boots", "id": "boots"}}"#]),
        ))
        .await
        .expect_err("invalid");
    assert_eq!(e.code(), Code::InvalidArgument);
    let d = status_diagnostics(&e);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!((d[0].operation, d[0].code.as_str()), (Some(1), "sheet.unknown_object"));
    assert!(d[0].message.contains("Moon Boots"), "{}", d[0].message);
    let now = c.values(values("sheet-1", &["AC"], None)).await.expect("values").into_inner();
    assert_eq!((now.revision, value_of(&now.values, "AC")), (1, "12".to_owned()));

    // A bad formula: INVALID_ARGUMENT with the formula and the span of the offending text.
    let bad_formula =
        r#"{"add_modifier": {"id": "m1", "var": "AC", "type": "ADD", "value": "2 + NoSuchVar"}}"#;
    let e = c.apply(apply("sheet-1", None, ops(&[bad_formula]))).await.expect_err("bad formula");
    assert_eq!(e.code(), Code::InvalidArgument);
    let d = &status_diagnostics(&e)[0];
    assert_eq!((d.operation, d.formula.as_str()), (Some(0), "2 + NoSuchVar"));
    let span = d.span.expect("span");
    assert_eq!(&d.formula[span.start as usize..span.end as usize], "NoSuchVar");

    // A cycle: FAILED_PRECONDITION with the path.
    let cycle = r#"{"add_modifier": {"id": "loop", "var": "ArmorBonus", "type": "ADD", "value": "AC"}}"#;
    let e = c.apply(apply("sheet-1", None, ops(&[cycle]))).await.expect_err("cycle");
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    let d = &status_diagnostics(&e)[0];
    assert!(d.cycle.contains(&"AC".to_owned()) && d.cycle.contains(&"ArmorBonus".to_owned()), "{d:?}");
    assert!(d.cycle_modifiers.contains(&"loop".to_owned()), "{d:?}");

    // Limits: an over-long formula and too many operations.
    let long = format!(
        r#"{{"add_modifier": {{"id": "m2", "var": "AC", "type": "ADD", "value": "{}1"}}}}"#,
        "1+".repeat(9000)
    );
    let e = c.apply(apply("sheet-1", None, ops(&[&long]))).await.expect_err("too long");
    assert_eq!(
        (e.code(), status_diagnostics(&e)[0].code.as_str()),
        (Code::InvalidArgument, "request.formula_too_long")
    );
    let deep = format!(
        r#"{{"add_modifier": {{"id": "m3", "var": "AC", "type": "ADD", "value": "{}1{}"}}}}"#,
        "(".repeat(100),
        ")".repeat(100)
    );
    let e = c.apply(apply("sheet-1", None, ops(&[&deep]))).await.expect_err("too deep");
    let d = &status_diagnostics(&e)[0];
    assert_eq!(
        (e.code(), d.code.as_str(), d.operation),
        (Code::InvalidArgument, "request.formula_too_deep", Some(0))
    );
    assert!(d.span.is_some() && d.message.contains("64"), "{d:?}");
    let many: Vec<pb::Operation> = (0..1001).flat_map(|_| ops(&[REMOVE_ARMOR])).collect();
    let e = c.apply(apply("sheet-1", None, many)).await.expect_err("too many");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("1001 operations"), "{}", e.message());

    let r = c.apply(apply("sheet-1", Some(1), ops(&[HARNESS]))).await.expect("apply").into_inner();
    assert_eq!(r.revision, 2);

    // Values now, at earlier revisions, and past the end.
    let v = |rev| values("sheet-1", &["AC", "Walk.Speed"], rev);
    let at =
        |r: pb::ValuesResponse| (r.revision, value_of(&r.values, "AC"), value_of(&r.values, "Walk.Speed"));
    assert_eq!(at(c.values(v(None)).await.expect("now").into_inner()), (2, "19".into(), "10".into()));
    assert_eq!(at(c.values(v(Some(0))).await.expect("rev 0").into_inner()), (0, "17".into(), "15".into()));
    assert_eq!(at(c.values(v(Some(1))).await.expect("rev 1").into_inner()), (1, "12".into(), "20".into()));
    let all_then = c.values(values("sheet-1", &[], Some(1))).await.expect("all at 1").into_inner();
    assert!(all_then.values.iter().all(|v| !v.r#ref.starts_with("armor.")), "armor was off at revision 1");
    assert_eq!(c.values(v(Some(3))).await.expect_err("future").code(), Code::OutOfRange);
    let e = c.values(values("sheet-1", &["armor.ArmorAC"], Some(1))).await.expect_err("absent then");
    assert_eq!(e.code(), Code::NotFound);

    // Explain: the trace and the dependency tree with values.
    let x = c
        .explain(pb::ExplainRequest { sheet_id: "sheet-1".into(), variable: "ac".into(), depth: None })
        .await
        .expect("explain")
        .into_inner();
    let trace = x.trace.expect("trace");
    assert_eq!((trace.r#ref.as_str(), shown(&trace.value)), ("AC", "19".to_owned()));
    assert_eq!(trace.order, "inherent", "the starter ruleset keeps PCGen's order");
    assert!(trace.steps.iter().any(|s| s.source.contains("00-core.toml")), "{:?}", trace.steps);
    assert_eq!(x.nodes[0].r#ref, "AC");
    let node = |r: &str| x.nodes.iter().find(|n| n.r#ref == r).unwrap_or_else(|| panic!("node {r}"));
    assert!(node("AC").reads.contains(&"ArmorBonus".to_owned()));
    assert!(node("ArmorBonus").reads.contains(&"armor.ArmorAC".to_owned()));
    assert_eq!(shown(&node("armor.ArmorAC").value), "8");
    assert_eq!(shown(&node("DEX.Rolled").value), "14");

    // WhyChanged: both values, both traces, the operations that reached AC, and the diff.
    let w = c
        .why_changed(pb::WhyChangedRequest {
            sheet_id: "sheet-1".into(),
            variable: "AC".into(),
            from_revision: 0,
            to_revision: None,
        })
        .await
        .expect("why")
        .into_inner();
    assert_eq!((shown(&w.from_value), shown(&w.to_value), w.to_revision), ("17".into(), "19".into(), 2));
    assert!(w.from_trace.is_some() && w.to_trace.is_some());
    let causes: Vec<(u64, String, String, String)> = w
        .causes
        .iter()
        .map(|c| (c.revision, c.description.clone(), shown(&c.before), shown(&c.after)))
        .collect();
    assert_eq!(
        causes,
        vec![
            (1, "remove object armor".into(), "17".into(), "12".into()),
            (2, "add EQUIPMENT `Plated Harness` as armor".into(), "12".into(), "19".into()),
        ]
    );
    assert!(w.causes[1].via.contains(&"ArmorBonus".to_owned()), "{:?}", w.causes[1].via);
    assert!(w.diff.iter().any(|d| d.kind == pb::step_diff::Kind::Changed as i32));
    // A variable the operations did not reach has no causes.
    let w = c
        .why_changed(pb::WhyChangedRequest {
            sheet_id: "sheet-1".into(),
            variable: "STR".into(),
            from_revision: 0,
            to_revision: Some(2),
        })
        .await
        .expect("why STR")
        .into_inner();
    assert!(w.causes.is_empty(), "{:?}", w.causes);
    assert!(w.diff.iter().all(|d| d.kind == pb::step_diff::Kind::Unchanged as i32));

    // Unknown ids: NOT_FOUND everywhere.
    assert_eq!(c.values(values("nope", &[], None)).await.expect_err("x").code(), Code::NotFound);
    assert_eq!(c.apply(apply("nope", None, vec![])).await.expect_err("x").code(), Code::NotFound);
    let e = c
        .explain(pb::ExplainRequest { sheet_id: "sheet-1".into(), variable: "Nope".into(), depth: None })
        .await;
    assert_eq!(e.expect_err("x").code(), Code::NotFound);
    let e = c.create_sheet(pb::CreateSheetRequest { ruleset_id: "nope".into(), ..Default::default() }).await;
    assert_eq!(e.expect_err("x").code(), Code::NotFound);

    // Get, list, delete.
    let info =
        c.get_sheet(pb::GetSheetRequest { sheet_id: "sheet-1".into() }).await.expect("get").into_inner();
    let info = info.sheet.expect("the sheet");
    assert_eq!(info.revision, 2);
    // What is on it: each object with its kind, key, parent and origin; the inputs set.
    let keen = info.contents.iter().find(|o| o.id == "keen").expect("the enhancement");
    assert_eq!(
        (keen.kind.as_str(), keen.key.as_str(), keen.parent.as_str()),
        ("ENHANCEMENT", "Keen Edge", "sword")
    );
    assert!(keen.origin.contains("30-equipment.toml:"), "{}", keen.origin);
    let walk = info.contents.iter().find(|o| o.id == "Walk").expect("a granted movement");
    assert!(!walk.listed, "granted by the race");
    let rolled = info.channels.iter().find(|ch| ch.r#ref == "STR.Rolled").expect("an input");
    assert_eq!((rolled.kind, shown(&rolled.value)), (pb::sheet_channel::Kind::Input as i32, "15".to_owned()));
    let list = c.list_sheets(pb::ListSheetsRequest::default()).await.expect("list").into_inner();
    assert_eq!(list.sheets.len(), 1);
    assert!(list.sheets[0].contents.is_empty() && list.sheets[0].channels.is_empty(), "GetSheet's alone");
    c.delete_sheet(pb::DeleteSheetRequest { sheet_id: "sheet-1".into(), ..Default::default() })
        .await
        .expect("delete");
    let e = c.get_sheet(pb::GetSheetRequest { sheet_id: "sheet-1".into() }).await.expect_err("gone");
    assert_eq!(e.code(), Code::NotFound);

    let log = server.stop();
    assert!(log.contains("method=\"Apply\"") && log.contains("recomputed="), "{log}");
    assert!(log.contains("stopped"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_streams_changes_and_resumes_after_a_disconnect() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;
    let created = c
        .create_sheet(pb::CreateSheetRequest {
            operations: example_character(),
            id: "hero".into(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    assert_eq!(created.sheet.expect("info").id, "hero");
    let watch = |from| pb::WatchRequest {
        sheet_id: "hero".into(),
        variables: vec!["ac".into()],
        from_revision: from,
    };
    let mut stream = c.watch(watch(None)).await.expect("watch").into_inner();
    c.apply(apply("hero", None, ops(&[REMOVE_ARMOR]))).await.expect("apply");
    let ev = next_event(&mut stream).await.expect("open");
    let Some(pb::watch_response::Event::Changes(ch)) = ev.event else { panic!("{ev:?}") };
    assert_eq!(ev.revision, 1);
    assert_eq!(ch.changes.iter().map(|c| c.r#ref.as_str()).collect::<Vec<_>>(), ["AC"], "filtered to AC");
    drop(stream);

    // Missed while disconnected: revisions 2 and 3. A change that does not touch AC (revision 4)
    // sends nothing to this watcher.
    c.apply(apply("hero", None, ops(&[HARNESS]))).await.expect("apply");
    c.apply(apply("hero", None, ops(&[REMOVE_ARMOR]))).await.expect("apply");
    let rank = r#"{"set_input": {"channel": "Ranks", "on": "Athletics", "value": 4}}"#;
    c.apply(apply("hero", None, ops(&[rank]))).await.expect("apply");
    let mut stream = c.watch(watch(Some(1))).await.expect("resume").into_inner();
    let mut seen = Vec::new();
    for _ in 0..2 {
        let ev = next_event(&mut stream).await.expect("open");
        let Some(pb::watch_response::Event::Changes(ch)) = ev.event else { panic!("{ev:?}") };
        seen.push((ev.revision, shown(&ch.changes[0].old), shown(&ch.changes[0].new)));
    }
    assert_eq!(seen, vec![(2, "12".into(), "19".into()), (3, "19".into(), "12".into())]);
    // Then live.
    c.apply(apply("hero", None, ops(&[HARNESS]))).await.expect("apply");
    let ev = next_event(&mut stream).await.expect("open");
    assert_eq!(ev.revision, 5);
    assert_eq!(c.watch(watch(Some(9))).await.expect_err("future").code(), Code::OutOfRange);

    // Deleting the sheet ends the stream with a `deleted` event.
    c.delete_sheet(pb::DeleteSheetRequest { sheet_id: "hero".into(), ..Default::default() })
        .await
        .expect("delete");
    let ev = next_event(&mut stream).await.expect("deleted event");
    assert!(matches!(ev.event, Some(pb::watch_response::Event::Deleted(_))), "{ev:?}");
    assert!(stream.message().await.expect("end").is_none());

    // Shutdown ends open streams.
    c.create_sheet(pb::CreateSheetRequest { id: "other".into(), ..Default::default() })
        .await
        .expect("create");
    let mut stream = c
        .watch(pb::WatchRequest { sheet_id: "other".into(), variables: vec![], from_revision: None })
        .await
        .expect("watch")
        .into_inner();
    let stopping = std::thread::spawn(move || server.stop());
    let end = tokio::time::timeout(std::time::Duration::from_secs(20), stream.message()).await.expect("ends");
    assert!(matches!(end, Ok(None) | Err(_)), "{end:?}");
    stopping.join().expect("stopped cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn solve_batch_streams_results_matched_by_id() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;
    let mut items = Vec::new();
    for i in 0..60 {
        let mut operations = example_character();
        if i % 3 == 1 {
            operations.extend(ops(&[REMOVE_ARMOR]));
        }
        if i % 10 == 7 {
            operations.extend(ops(&[r#"{"remove_object": "no-such-id"}"#]));
        }
        items.push(pb::SolveBatchRequest {
            id: format!("item-{i}"),
            ruleset_id: String::new(),
            operations,
            variables: vec!["AC".into()],
        });
    }
    let mut results = c.solve_batch(tokio_stream::iter(items.clone())).await.expect("batch").into_inner();
    let mut got = std::collections::BTreeMap::new();
    while let Some(r) = results.message().await.expect("result") {
        got.insert(r.id.clone(), r.result.expect("result"));
    }
    assert_eq!(got.len(), 60);
    for i in 0..60 {
        let r = &got[&format!("item-{i}")];
        match r {
            pb::solve_batch_response::Result::Values(v) if i % 10 != 7 => {
                let want = if i % 3 == 1 { "12" } else { "17" };
                assert_eq!(value_of(&v.values, "AC"), want, "item-{i}");
                assert_eq!(v.values.len(), 1);
            }
            pb::solve_batch_response::Result::Error(e) if i % 10 == 7 => {
                let d = &e.diagnostics[0];
                assert_eq!(d.operation, Some(items[i].operations.len() as u32 - 1), "item-{i}: {d:?}");
            }
            other => panic!("item-{i}: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sheets_history_and_explanations_survive_a_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    c.create_sheet(pb::CreateSheetRequest { operations: example_character(), ..Default::default() })
        .await
        .expect("create");
    // 40 revisions: past the first stored snapshot (every 32).
    for i in 1..=40 {
        let step =
            format!(r#"{{"set_input": {{"channel": "Rolled", "on": "DEX", "value": {}}}}}"#, 10 + i % 9);
        let r = c.apply(apply("sheet-1", Some(i - 1), ops(&[&step]))).await.expect("apply").into_inner();
        assert_eq!(r.revision, i);
    }
    let mut before = Vec::new();
    for rev in [0, 5, 31, 32, 33, 40] {
        before.push(c.values(values("sheet-1", &[], Some(rev))).await.expect("values").into_inner());
    }
    let why = pb::WhyChangedRequest {
        sheet_id: "sheet-1".into(),
        variable: "DEX.Mod".into(),
        from_revision: 30,
        to_revision: Some(35),
    };
    let why_before = c.why_changed(why.clone()).await.expect("why").into_inner();
    assert!(!why_before.causes.is_empty());
    drop(c);
    server.stop();

    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    for (rev, old) in [0, 5, 31, 32, 33, 40].into_iter().zip(&before) {
        let now = c.values(values("sheet-1", &[], Some(rev))).await.expect("values").into_inner();
        assert_eq!(&now, old, "values at revision {rev} after the restart");
    }
    let current = c.values(values("sheet-1", &[], None)).await.expect("current").into_inner();
    assert_eq!(current, before[5], "the replayed sheet equals the stored history");
    assert_eq!(c.why_changed(why).await.expect("why").into_inner(), why_before);
    let r = c.apply(apply("sheet-1", Some(40), ops(&[REMOVE_ARMOR]))).await.expect("apply").into_inner();
    assert_eq!(r.revision, 41);
    let created = c.create_sheet(pb::CreateSheetRequest::default()).await.expect("create").into_inner();
    assert_eq!(created.sheet.expect("info").id, "sheet-2", "generated ids continue");

    // An acknowledged Apply is durable: kill the server without any shutdown right after.
    let r = c.apply(apply("sheet-1", Some(41), ops(&[HARNESS]))).await.expect("apply").into_inner();
    assert_eq!(r.revision, 42);
    drop(c);
    server.crash();
    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    let v = c.values(values("sheet-1", &["AC"], None)).await.expect("values").into_inner();
    assert_eq!((v.revision, value_of(&v.values, "AC")), (42, "19".to_owned()));
}

/// `sheetd serve` with no flags: 127.0.0.1:50051, the starter ruleset, a store under
/// $XDG_DATA_HOME/sheetd. Environment variables configure it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_needs_no_flags_and_reads_the_environment() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .arg("serve")
        .env("XDG_DATA_HOME", dir.path())
        .env("SHEETD_TOKENS", "from-env")
        .env_remove("SHEETD_LISTEN")
        .env_remove("SHEETD_DATA_DIR")
        .env_remove("SHEETD_CONFIG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("read");
    if line.is_empty() {
        let _ = child.wait();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err).expect("stderr");
        if err.contains("cannot listen") {
            eprintln!("notice: port 50051 is in use here; skipping the no-flags test ({err})");
            return;
        }
        panic!("serve failed: {err}");
    }
    let store = dir.path().join("sheetd").join("sheetd.redb");
    assert_eq!(line.trim(), format!("sheetd serving on http://127.0.0.1:50051 (store {})", store.display()));
    let mut anonymous =
        sheetd::cli::client::connect("http://127.0.0.1:50051", None, None).await.expect("connect");
    assert_eq!(anonymous.ping(pb::PingRequest {}).await.expect_err("token").code(), Code::Unauthenticated);
    let mut c = sheetd::cli::client::connect("http://127.0.0.1:50051", Some("from-env"), None)
        .await
        .expect("connect");
    let created = c.create_sheet(pb::CreateSheetRequest::default()).await.expect("create").into_inner();
    assert_eq!(created.sheet.expect("info").ruleset_id, "starter");
    assert_eq!(value_of(&created.values, "AC"), "5");
    drop((anonymous, c));
    let _ = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    assert!(child.wait().expect("wait").success());
    assert!(store.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_on_sheets_and_request_size() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server =
        Server::start(&dir.path().join("data"), &["--max-sheets", "2", "--max-request-bytes", "2000"]);
    let mut c = server.client().await;
    for _ in 0..2 {
        c.create_sheet(pb::CreateSheetRequest::default()).await.expect("create");
    }
    let e = c.create_sheet(pb::CreateSheetRequest::default()).await.expect_err("full");
    assert_eq!(e.code(), Code::ResourceExhausted);
    let big: Vec<pb::Operation> = (0..200).flat_map(|_| ops(&[HARNESS])).collect();
    let e = c.apply(apply("sheet-1", None, big)).await.expect_err("too big");
    assert_eq!(e.code(), Code::OutOfRange, "{e:?}");
    // Still serving.
    c.ping(pb::PingRequest {}).await.expect("ping");
}

/// The example character's values written straight from its sheet are the bytes its
/// records give, for whole numbers, decimals, text, dice and booleans alike.
#[test]
fn a_character_encodes_as_its_records() {
    use prost::Message;
    use sheetd::grpc::batch_values::BatchValues;
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/examples/starter-character.json");
    let ruleset = std::sync::Arc::new(data::load_starter().expect("starter"));
    // The example, then a level that is not whole (decimals downstream) and a name.
    let extra = [
        r#"{"set_input": {"channel": "Level", "on": null, "value": 2.5}}"#,
        r#"{"set_input": {"channel": "Handedness", "on": null, "value": "Right"}}"#,
    ];
    for steps in [vec![], extra.iter().map(|s| s.to_string()).collect::<Vec<_>>()] {
        let with_extra = !steps.is_empty();
        let ops = sheetd::cli::client::operations(&sheetd::cli::client::Steps {
            steps,
            file: Some(file.clone()),
            dialect: None,
        })
        .expect("steps");
        let ops = sheetd::grpc::convert::operations(ops).expect("operations");
        let mut c = data::Character::new(ruleset.clone()).expect("sheet");
        c.apply(&ops).expect("solves");
        let records = data::record::values(&c);
        let kinds: std::collections::BTreeSet<&str> = records
            .iter()
            .map(|v| match &v.value.kind {
                data::record::Kind::Number(n) if n.contains('.') => "decimal",
                data::record::Kind::Number(_) => "whole",
                data::record::Kind::Boolean(_) => "boolean",
                data::record::Kind::Text(_) => "text",
                data::record::Kind::List(_) => "list",
                data::record::Kind::Error { .. } => "error",
            })
            .collect();
        assert!(kinds.contains("whole") && kinds.contains("text"), "{kinds:?}");
        assert_eq!(kinds.contains("decimal"), with_extra, "{kinds:?}");
        let direct = BatchValues::from_character(&c);
        assert_eq!(direct.encode_to_vec(), BatchValues::from_records(&records).encode_to_vec(), "{kinds:?}");
        assert_eq!(direct.all().expect("decodes"), sheetd::grpc::convert::variables(records));
    }
}

/// The stream's next message, failing (not waiting forever) when none comes within 10 s: an
/// event the server never sends fails the test.
async fn next_event(stream: &mut tonic::Streaming<pb::WatchResponse>) -> Option<pb::WatchResponse> {
    tokio::time::timeout(std::time::Duration::from_secs(10), stream.message())
        .await
        .expect("no event within 10 s")
        .expect("event")
}

/// Preview: what an Apply would do — its changes, and the traces asked for as they would be —
/// with nothing committed: the revision, the values and the log stay; a stale expected
/// revision is ABORTED and an unknown variable to explain NOT_FOUND, as for Apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_shows_what_an_apply_would_do_and_commits_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;
    c.create_sheet(pb::CreateSheetRequest { operations: example_character(), ..Default::default() })
        .await
        .expect("create");
    let preview = |explain: &[&str], expected: Option<u64>| pb::PreviewRequest {
        sheet_id: "sheet-1".into(),
        expected_revision: expected,
        operations: ops(&[REMOVE_ARMOR]),
        explain: explain.iter().map(|s| s.to_string()).collect(),
    };
    let p = c.preview(preview(&["AC"], Some(0))).await.expect("preview").into_inner();
    assert_eq!(p.revision, 0);
    let result = p.result.expect("the Apply it would be");
    assert_eq!(result.revision, 1);
    let ac = result.changes.iter().find(|c| c.r#ref == "AC").expect("AC changes");
    assert_eq!((shown(&ac.old), shown(&ac.new)), ("17".to_owned(), "12".to_owned()));
    let trace = &p.traces[0];
    assert_eq!((trace.r#ref.as_str(), shown(&trace.value)), ("AC", "12".to_owned()));
    // Nothing committed: still revision 0, AC 17, and the same Apply then gives the same.
    let now = c.values(values("sheet-1", &["AC"], None)).await.expect("values").into_inner();
    assert_eq!((now.revision, value_of(&now.values, "AC")), (0, "17".to_owned()));
    let e = c.preview(preview(&["Nope"], None)).await.expect_err("unknown");
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    let r = c.apply(apply("sheet-1", Some(0), ops(&[REMOVE_ARMOR]))).await.expect("apply").into_inner();
    assert_eq!((r.revision, r.changes.len()), (1, result.changes.len()));
    let e = c.preview(preview(&[], Some(0))).await.expect_err("stale");
    assert_eq!(e.code(), Code::Aborted, "{e:?}");
    drop(c);
    server.stop();
}

/// The catalog: a ruleset's kinds, and its objects — filtered by kind, key prefix and text,
/// paged — each with what it modifies, its grants and where it is defined; a token the server
/// did not give is INVALID_ARGUMENT, an unknown ruleset NOT_FOUND.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_lists_what_a_ruleset_offers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;
    let ask = |kind: &str, prefix: &str, text: &str, size: u32, token: &str| pb::ListCatalogRequest {
        ruleset_id: String::new(),
        kind: kind.into(),
        key_prefix: prefix.into(),
        text: text.into(),
        page_size: size,
        page_token: token.into(),
    };
    let all = c.list_catalog(ask("", "", "", 0, "")).await.expect("catalog").into_inner();
    let equipment = all.kinds.iter().find(|k| k.name == "EQUIPMENT").expect("a kind");
    assert_eq!((equipment.presence.as_str(), equipment.parts), ("listed", true));
    assert!(all.kinds.iter().any(|k| k.name == "ENHANCEMENT" && k.attach), "{:?}", all.kinds);
    assert_eq!(all.total_size as usize, all.objects.len(), "one page holds the starter ruleset");
    // One object, by kind and key prefix: what it modifies, where it is written.
    let ring = c.list_catalog(ask("equipment", "ring", "", 0, "")).await.expect("catalog").into_inner();
    assert_eq!(ring.objects.len(), 1);
    let o = &ring.objects[0];
    assert_eq!((o.kind.as_str(), o.key.as_str()), ("EQUIPMENT", "Ring Hauberk"));
    assert!(o.modifies.iter().any(|m| m.variable == "ArmorBonus" && m.r#type == "ADD"), "{:?}", o.modifies);
    assert!(o.origin.contains("30-equipment.toml:"), "{}", o.origin);
    // A race grants its movements.
    let race = c.list_catalog(ask("RACE", "stoneborn", "", 0, "")).await.expect("catalog").into_inner();
    assert!(race.objects[0].grants.iter().any(|g| g.starts_with("MOVEMENT")), "{:?}", race.objects);
    // Pages: two at a time, every object once.
    let (mut seen, mut token) = (Vec::new(), String::new());
    loop {
        let page = c.list_catalog(ask("EQUIPMENT", "", "", 2, &token)).await.expect("page").into_inner();
        assert!(page.objects.len() <= 2);
        seen.extend(page.objects.iter().map(|o| o.key.clone()));
        if page.next_page_token.is_empty() {
            assert_eq!(seen.len(), page.total_size as usize);
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(seen.len(), equipment.objects as usize);
    let e = c.list_catalog(ask("", "", "", 0, "not-a-token")).await.expect_err("bad token");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    let e = c
        .list_catalog(pb::ListCatalogRequest { ruleset_id: "nope".into(), ..Default::default() })
        .await
        .expect_err("unknown ruleset");
    assert_eq!(e.code(), Code::NotFound, "{e:?}");
    drop(c);
    server.stop();
}

/// ListSheets and ListRulesets page: by id, `page_size` at a time, each sheet once even while
/// sheets come and go; filters by ruleset and id prefix; a token the server did not give is
/// INVALID_ARGUMENT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_come_a_page_at_a_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;
    for i in 0..7 {
        let id = format!("hero-{i}");
        c.create_sheet(pb::CreateSheetRequest { id, ..Default::default() }).await.expect("create");
    }
    c.create_sheet(pb::CreateSheetRequest { id: "villain".into(), ..Default::default() })
        .await
        .expect("create");
    let page = |token: &str| pb::ListSheetsRequest {
        ruleset_id: "starter".into(),
        id_prefix: "hero-".into(),
        page_size: 3,
        page_token: token.into(),
    };
    let (mut seen, mut token) = (Vec::new(), String::new());
    loop {
        let r = c.list_sheets(page(&token)).await.expect("a page").into_inner();
        assert!(r.sheets.len() <= 3 && r.total_size >= 6, "{r:?}");
        seen.extend(r.sheets.iter().map(|s| s.id.clone()));
        if seen.len() == 3 {
            // A sheet deleted between pages does not shift the next page.
            c.delete_sheet(pb::DeleteSheetRequest { sheet_id: "hero-0".into(), ..Default::default() })
                .await
                .expect("delete");
        }
        if r.next_page_token.is_empty() {
            break;
        }
        token = r.next_page_token;
    }
    assert_eq!(seen, ["hero-0", "hero-1", "hero-2", "hero-3", "hero-4", "hero-5", "hero-6"]);
    let all = c.list_sheets(pb::ListSheetsRequest::default()).await.expect("all").into_inner();
    assert_eq!((all.sheets.len(), all.total_size, all.next_page_token.as_str()), (7, 7, ""));
    let e = c.list_sheets(page("7")).await.expect_err("not a token");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    let rulesets = |id_prefix: &str| pb::ListRulesetsRequest {
        page_size: 1,
        id_prefix: id_prefix.into(),
        ..Default::default()
    };
    let r = c.list_rulesets(rulesets("")).await.expect("rulesets").into_inner();
    assert_eq!((r.rulesets.len(), r.total_size), (1, 1));
    let r = c.list_rulesets(rulesets("st")).await.expect("rulesets").into_inner();
    assert_eq!((r.rulesets[0].id.as_str(), r.total_size), ("starter", 1));
    let r = c.list_rulesets(rulesets("nope")).await.expect("rulesets").into_inner();
    assert_eq!((r.rulesets.len(), r.total_size), (0, 0), "filtered out");
    drop(c);
    server.stop();
}

/// Field selection: CreateSheet's values and Apply's changes only for the variables asked for
/// (case-insensitive); the sheet itself is whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_carry_only_the_variables_asked_for() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;
    let created = c
        .create_sheet(pb::CreateSheetRequest {
            operations: example_character(),
            variables: vec!["ac".into(), "Walk.Speed".into()],
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    let refs: Vec<&str> = created.values.iter().map(|v| v.r#ref.as_str()).collect();
    assert_eq!(refs, ["AC", "Walk.Speed"]);
    let mut req = apply("sheet-1", Some(0), ops(&[REMOVE_ARMOR]));
    req.variables = vec!["AC".into()];
    let r = c.apply(req).await.expect("apply").into_inner();
    assert_eq!(r.changes.iter().map(|c| c.r#ref.as_str()).collect::<Vec<_>>(), ["AC"]);
    // The revision is whole: every other change is there.
    let now = c.values(values("sheet-1", &["ArmorBonus"], None)).await.expect("values").into_inner();
    assert_eq!((now.revision, value_of(&now.values, "ArmorBonus")), (1, "0".to_owned()));
    drop(c);
    server.stop();
}
