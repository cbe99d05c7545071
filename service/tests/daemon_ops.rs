//! End-to-end tests of running `sheetd serve`: authentication, TLS, health, reflection,
//! grpc-web with CORS, ruleset reloads, malformed requests, JSON logs, and the command-line
//! client and offline batch.

#[path = "common/server.rs"]
mod server;

use server::{Server, apply, http1, ops, shown, value_of, values};
use sheetd::cli::client::Client;
use sheetd::grpc::proto as pb;
use std::process::Command;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
use tonic_reflection::pb::v1::{
    ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
    server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
};

async fn services(url: &str, token: Option<&str>) -> Result<Vec<String>, tonic::Status> {
    let channel = tonic::transport::Channel::from_shared(url.to_owned())
        .expect("url")
        .connect()
        .await
        .expect("connect");
    let token = sheetd::cli::client::Token::new(token).expect("token");
    let mut client = ServerReflectionClient::with_interceptor(channel, token);
    let req = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut stream = client.server_reflection_info(tokio_stream::iter(vec![req])).await?.into_inner();
    let reply = stream.message().await?.expect("a reply");
    match reply.message_response {
        Some(MessageResponse::ListServicesResponse(l)) => Ok(l.service.into_iter().map(|s| s.name).collect()),
        other => panic!("unexpected reflection reply {other:?}"),
    }
}

async fn health(url: &str) -> ServingStatus {
    let channel = tonic::transport::Channel::from_shared(url.to_owned())
        .expect("url")
        .connect()
        .await
        .expect("connect");
    let r = HealthClient::new(channel)
        .check(HealthCheckRequest { service: "sheetd.v1.SheetdService".into() })
        .await
        .expect("health")
        .into_inner();
    ServingStatus::try_from(r.status).expect("status")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_guard_every_call_but_health() {
    let dir = tempfile::tempdir().expect("temp dir");
    // Off: no token needed.
    let open = Server::start(&dir.path().join("open"), &[]);
    open.client().await.ping(pb::PingRequest {}).await.expect("no auth needed");
    assert!(
        services(&open.url, None).await.expect("reflection").contains(&"sheetd.v1.SheetdService".to_owned())
    );
    drop(open);

    let server = Server::start(&dir.path().join("closed"), &["--token", "s3cret", "--token", "second"]);
    let mut anonymous = server.client().await;
    let e = anonymous.ping(pb::PingRequest {}).await.expect_err("needs a token");
    assert_eq!(e.code(), Code::Unauthenticated);
    let e = anonymous.create_sheet(pb::CreateSheetRequest::default()).await.expect_err("needs a token");
    assert_eq!(e.code(), Code::Unauthenticated);
    let mut wrong = sheetd::cli::client::connect(&server.url, Some("guess"), None).await.expect("connect");
    assert_eq!(wrong.ping(pb::PingRequest {}).await.expect_err("bad token").code(), Code::Unauthenticated);
    for token in ["s3cret", "second"] {
        let mut c = sheetd::cli::client::connect(&server.url, Some(token), None).await.expect("connect");
        c.create_sheet(pb::CreateSheetRequest::default()).await.expect("authorized");
    }
    // Health needs no token; reflection does.
    assert_eq!(health(&server.url).await, ServingStatus::Serving);
    assert_eq!(services(&server.url, None).await.expect_err("needs a token").code(), Code::Unauthenticated);
    let names = services(&server.url, Some("s3cret")).await.expect("reflection");
    assert!(
        names.contains(&"sheetd.v1.SheetdService".to_owned())
            && names.contains(&"grpc.health.v1.Health".to_owned())
    );
    // Every request has an id, the client's or the server's, echoed in the reply and in the
    // logs with the peer; refused calls are logged too.
    let mut c = sheetd::cli::client::connect(&server.url, Some("s3cret"), None).await.expect("connect");
    let mut list = tonic::Request::new(pb::ListRulesetsRequest::default());
    list.metadata_mut().insert("x-request-id", "trace-me-42".parse().expect("ascii"));
    let r = c.list_rulesets(list).await.expect("rulesets");
    assert_eq!(r.metadata().get("x-request-id").and_then(|v| v.to_str().ok()), Some("trace-me-42"));
    let r = c.ping(pb::PingRequest {}).await.expect("ping");
    let made = r.metadata().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("");
    assert!(made.starts_with("sheetd-"), "{made:?}");
    let log = server.stop();
    assert!(log.contains("request_id=trace-me-42") && log.contains("peer=127.0.0.1:"), "{log}");
    let refused = log.lines().find(|l| l.contains("call refused")).expect("a refused call logged");
    assert!(
        refused.contains("/sheetd.v1.SheetdService/Ping") && refused.contains("Unauthenticated"),
        "{refused}"
    );
    assert!(!log.contains("guess"), "no token in the logs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_serves_https_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("certificate");
    let (cert_pem, key_pem) = (cert.cert.pem(), cert.signing_key.serialize_pem());
    let (cert_file, key_file) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_file, &cert_pem).expect("write");
    std::fs::write(&key_file, &key_pem).expect("write");
    let server = Server::start(
        &dir.path().join("data"),
        &["--tls-cert", cert_file.to_str().expect("utf-8"), "--tls-key", key_file.to_str().expect("utf-8")],
    );
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let mut c = sheetd::cli::client::connect(&server.url, None, Some(cert_pem.as_bytes()))
        .await
        .expect("TLS connect");
    let created =
        c.create_sheet(pb::CreateSheetRequest::default()).await.expect("create over TLS").into_inner();
    assert_eq!(created.sheet.expect("info").revision, 0);
    // Plain text to the TLS port fails.
    let plain = format!("http://{}", server.addr);
    match sheetd::cli::client::connect(&plain, None, None).await {
        Err(_) => {}
        Ok(mut c) => assert!(c.ping(pb::PingRequest {}).await.is_err(), "plain text must not be served"),
    }
    // The command-line client with --ca-cert.
    let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args([
            "client",
            "--server",
            &server.url,
            "--ca-cert",
            cert_file.to_str().expect("utf-8"),
            "values",
            "sheet-1",
            "AC",
        ])
        .output()
        .expect("run client");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("AC = 5"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

const RULES_V1: &str = r#"
[ruleset]
name = "tiny"
global = "PC"

[defaults]
NUMBER = 0

[variables.PC]
Base = "NUMBER"
Total = "NUMBER"

[global]
modify = [
  { var = "Base", set = "10" },
  { var = "Total", set = "Base + 1" },
]
"#;

/// Reloads ruleset `tiny` from its file.
async fn reload_tiny(c: &mut Client) -> pb::ReloadRulesetResponse {
    let req =
        pb::ReloadRulesetRequest { id: "tiny".into(), inline_text: String::new(), expected_version: None };
    c.reload_ruleset(req).await.expect("reload answers").into_inner()
}

/// A sheet as GetSheet describes it.
async fn sheet(c: &mut Client, id: &str) -> pb::SheetInfo {
    let r = c.get_sheet(pb::GetSheetRequest { sheet_id: id.into() }).await.expect("get sheet").into_inner();
    r.sheet.expect("the sheet")
}

/// What Upgrade did.
async fn upgrade(c: &mut Client, id: &str) -> pb::ApplyResponse {
    let r = c.upgrade(pb::UpgradeRequest { sheet_id: id.into() }).await.expect("upgrade").into_inner();
    r.result.expect("the result")
}

/// `Total` of a sheet, now or at a revision.
async fn total(c: &mut Client, sheet: &str, revision: Option<u64>) -> String {
    let v = c.values(values(sheet, &["Total"], revision)).await.expect("values").into_inner();
    value_of(&v.values, "Total")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_swap_rulesets_and_a_broken_reload_keeps_the_old_one_serving() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rules = dir.path().join("tiny.toml");
    std::fs::write(&rules, RULES_V1).expect("write");
    let root = dir.path().to_str().expect("utf-8").to_owned();
    let server = Server::start(&dir.path().join("data"), &["--ruleset-root", &root]);
    let mut c = server.client().await;
    let loaded = c
        .load_ruleset(pb::LoadRulesetRequest {
            id: "tiny".into(),
            paths: vec![rules.display().to_string()],
            inline_text: String::new(),
            dialect: String::new(),
        })
        .await
        .expect("load")
        .into_inner();
    assert!(loaded.ok);
    assert_eq!(loaded.ruleset.as_ref().map(|r| r.version), Some(1));
    let list = c.list_rulesets(pb::ListRulesetsRequest::default()).await.expect("list").into_inner();
    assert_eq!(list.rulesets.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["starter", "tiny"]);

    let created = c
        .create_sheet(pb::CreateSheetRequest { ruleset_id: "tiny".into(), ..Default::default() })
        .await
        .expect("create")
        .into_inner();
    assert_eq!(value_of(&created.values, "Total"), "11");

    // A good reload: version 2 serves new sheets; the existing sheet moves on its next change.
    std::fs::write(&rules, RULES_V1.replace("set = \"10\"", "set = \"20\"")).expect("write");
    let r = reload_tiny(&mut c).await;
    assert!(r.ok && r.diagnostics.is_empty(), "{r:?}");
    assert_eq!(r.ruleset.as_ref().map(|r| r.version), Some(2));
    let info = sheet(&mut c, "sheet-1").await;
    assert_eq!(info.ruleset_version, 1, "not moved until it changes");
    assert_eq!(total(&mut c, "sheet-1", None).await, "11");
    let add = r#"{"add_modifier": {"id": "bonus", "var": "Total", "type": "ADD", "value": "1"}}"#;
    let applied = c.apply(apply("sheet-1", Some(0), ops(&[add]))).await.expect("apply").into_inner();
    let moved = applied.moved.expect("the change report shows the move");
    assert_eq!((moved.from_version, moved.to_version), (1, 2));
    let moved_changes: Vec<(String, String, String)> =
        moved.changes.iter().map(|c| (c.r#ref.clone(), shown(&c.old), shown(&c.new))).collect();
    assert!(moved_changes.contains(&("Base".into(), "10".into(), "20".into())), "{moved_changes:?}");
    assert!(moved_changes.contains(&("Total".into(), "11".into(), "21".into())), "{moved_changes:?}");
    assert_eq!(shown(&applied.changes[0].new), "22");
    // Values at the revision before the move are still the old version's.
    assert_eq!(total(&mut c, "sheet-1", Some(0)).await, "11");

    // A sheet moves when asked, too: Upgrade. A sheet created on version 2 then reloaded to 3.
    let on_v2 = c
        .create_sheet(pb::CreateSheetRequest {
            ruleset_id: "tiny".into(),
            id: "v2".into(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    assert_eq!(on_v2.sheet.expect("info").ruleset_version, 2);
    std::fs::write(&rules, RULES_V1.replace("set = \"10\"", "set = \"20\"").replace("Base + 1", "Base + 2"))
        .expect("write");
    let r = reload_tiny(&mut c).await;
    assert_eq!(r.ruleset.map(|r| r.version), Some(3));
    let up = upgrade(&mut c, "v2").await;
    let moved = up.moved.expect("moved");
    assert_eq!((up.revision, moved.from_version, moved.to_version), (1, 2, 3));
    assert_eq!(
        moved.changes.iter().map(|c| (c.r#ref.as_str(), shown(&c.new))).collect::<Vec<_>>(),
        [("Total", "22".into())]
    );
    let again = upgrade(&mut c, "v2").await;
    assert_eq!((again.revision, again.moved), (1, None), "nothing left to move");
    c.delete_sheet(pb::DeleteSheetRequest { sheet_id: "v2".into(), ..Default::default() })
        .await
        .expect("delete");
    std::fs::write(&rules, RULES_V1.replace("set = \"10\"", "set = \"20\"")).expect("write");
    let r = reload_tiny(&mut c).await;
    assert_eq!(r.ruleset.map(|r| r.version), Some(4));

    // A broken reload: the reply carries diagnostics with file:line; the current version keeps serving.
    std::fs::write(&rules, RULES_V1.replace("set = \"Base + 1\"", "set = \"Base + Missing\""))
        .expect("write");
    let r = reload_tiny(&mut c).await;
    assert!(!r.ok);
    assert_eq!(r.ruleset.as_ref().map(|r| r.version), Some(4));
    let d = &r.diagnostics[0];
    let at = d.location.as_ref().expect("location");
    assert!(at.file.ends_with("tiny.toml") && at.line == 16 && at.col == 34, "{d:?}");
    assert!(d.message.contains("Missing"), "{d:?}");
    let created = c
        .create_sheet(pb::CreateSheetRequest { ruleset_id: "tiny".into(), ..Default::default() })
        .await
        .expect("still serving")
        .into_inner();
    assert_eq!(value_of(&created.values, "Total"), "21");
    assert_eq!(created.sheet.expect("info").ruleset_version, 4);

    // Inline rulesets load, reject bad text with positions, and reload with new text.
    let e = c
        .load_ruleset(pb::LoadRulesetRequest {
            id: "bad".into(),
            paths: vec![],
            inline_text: "[ruleset\n".into(),
            dialect: String::new(),
        })
        .await
        .expect_err("syntax error");
    assert_eq!(e.code(), Code::InvalidArgument);
    let d = sheetd::grpc::status::diagnostics(&e);
    assert_eq!(d[0].location.as_ref().map(|l| l.line), Some(1), "{d:?}");
    let inline = pb::LoadRulesetRequest {
        id: "inline".into(),
        paths: vec![],
        inline_text: RULES_V1.into(),
        dialect: String::new(),
    };
    assert!(c.load_ruleset(inline.clone()).await.expect("inline").into_inner().ok);
    assert_eq!(c.load_ruleset(inline).await.expect_err("twice").code(), Code::AlreadyExists);
    let reload = |expected_version| pb::ReloadRulesetRequest {
        id: "inline".into(),
        inline_text: RULES_V1.replace("10", "30"),
        expected_version,
    };
    let r = c.reload_ruleset(reload(Some(1))).await.expect("reload inline").into_inner();
    assert!(r.ok);
    // A second reload expecting version 1 finds 2 serving: ABORTED, with the standard detail.
    let e = c.reload_ruleset(reload(Some(1))).await.expect_err("stale");
    assert_eq!(e.code(), Code::Aborted, "{e:?}");
    let details = tonic_types::StatusExt::get_error_details(&e);
    assert_eq!(details.error_info().expect("info").reason, "ruleset.version_conflict");
    let v = &details.precondition_failure().expect("precondition").violations[0];
    assert_eq!((v.r#type.as_str(), v.subject.as_str()), ("VERSION", "rulesets/inline"));
    let e = c
        .reload_ruleset(pb::ReloadRulesetRequest {
            id: "nope".into(),
            inline_text: String::new(),
            expected_version: None,
        })
        .await;
    assert_eq!(e.expect_err("unknown").code(), Code::NotFound);

    // Loaded rulesets come back after a restart, at their version. tiny.toml is still broken
    // on disk: it is not loaded, the log says why, and its sheets wait in the store.
    drop(c);
    let log = server.stop();
    assert!(log.contains("reload failed"), "{log}");
    let server = Server::start(&dir.path().join("data"), &["--ruleset-root", &root]);
    let mut c = server.client().await;
    let list = c.list_rulesets(pb::ListRulesetsRequest::default()).await.expect("list").into_inner();
    let versions: Vec<(&str, u64)> = list.rulesets.iter().map(|r| (r.id.as_str(), r.version)).collect();
    assert_eq!(versions, [("inline", 2), ("starter", 1)]);
    let log = server.log();
    assert!(log.contains("ruleset `tiny` has 1 errors") && log.contains("sheet not restored"), "{log}");
    drop(c);
    server.stop();
    // Fixed on disk (the same text as version 4): back with its sheets and their history.
    std::fs::write(&rules, RULES_V1.replace("set = \"10\"", "set = \"20\"")).expect("write");
    let server = Server::start(&dir.path().join("data"), &["--ruleset-root", &root]);
    let mut c = server.client().await;
    let info = sheet(&mut c, "sheet-1").await;
    // Revision 1 was made with version 2: the sheet comes back on it (it moves on its next change).
    assert_eq!((info.ruleset_id.as_str(), info.ruleset_version, info.revision), ("tiny", 2, 1));
    assert_eq!(total(&mut c, "sheet-1", None).await, "22");
}

/// `docs/examples/guild` over gRPC: its game's steps applied one by one (a batch, inputs, objects,
/// events); the aggregates, the `@smith.STR` reference and the `Foreman.STR` read through a
/// channel come out as the CLI's; naming another foreman moves the read in the same Apply, and
/// Explain says whose STR it reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guild_over_grpc_reads_through_its_foreman() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let guild = format!("guild={}", examples.join("guild").display());
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(examples.join("guild-game.json")).expect("the game"))
            .expect("json");
    let steps: Vec<serde_json::Value> = file["steps"].as_array().expect("steps").clone();
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &["--ruleset", &guild]);
    let mut c = server.client().await;
    let first: Vec<String> =
        steps[0]["batch"].as_array().expect("a batch").iter().map(|s| s.to_string()).collect();
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let create = pb::CreateSheetRequest {
        ruleset_id: "guild".into(),
        id: "g".into(),
        operations: ops(&first),
        variables: Vec::new(),
    };
    c.create_sheet(create).await.expect("creates");
    let shown = |v: &pb::ValuesResponse, r: &str| value_of(&v.values, r);
    let names = ["ForemanSTR", "SmithSTR", "Payroll", "Strongest", "Gold"];
    let now = c.values(values("g", &names, None)).await.expect("values").into_inner();
    assert_eq!(names.map(|n| shown(&now, n)), ["16", "16", "7", "16", "10"]);
    for s in &steps[1..steps.len() - 1] {
        c.apply(apply("g", None, ops(&[&s.to_string()]))).await.expect("plays");
    }
    // The smith left: neither the reference nor the foreman's read has a value.
    let now = c.values(values("g", &names, None)).await.expect("values").into_inner();
    assert!(shown(&now, "ForemanSTR").contains("`Foreman` holds no id of an instance"), "{now:?}");
    assert_eq!(names.map(|n| shown(&now, n))[2..], ["5", "14", "14"]);
    // The last step names the porter: the read moves, and the reply says what changed.
    let last = steps.last().expect("a last step").to_string();
    let r = c.apply(apply("g", None, ops(&[&last]))).await.expect("names the porter").into_inner();
    let changed: Vec<&str> = r.changes.iter().map(|ch| ch.r#ref.as_str()).collect();
    assert_eq!(changed, ["Foreman", "Foreman.STR", "ForemanSTR"]);
    let now = c.values(values("g", &["ForemanSTR"], None)).await.expect("values").into_inner();
    assert_eq!(shown(&now, "ForemanSTR"), "14");
    let explain = pb::ExplainRequest { sheet_id: "g".into(), variable: "Foreman.STR".into(), depth: None };
    let trace = c.explain(explain).await.expect("explains").into_inner().trace.expect("trace");
    let steps: Vec<(&str, &str)> =
        trace.steps.iter().map(|s| (s.modifier.as_str(), s.instruction.as_str())).collect();
    assert_eq!(steps, [("Foreman.STR@PC:porter", "STR")]);
    drop(c);
    server.stop();
}

/// The creature dialect over gRPC: LoadRuleset with `dialect = "creature"` compiles the
/// example's files (read under the ruleset roots); the game file's setup and verbs are sent as
/// `Verb` operations and play as through the CLI; the asking verbs are answered by Values; a
/// restart loads the dialect again from the stored record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deva_game_over_grpc() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let root = examples.display().to_string();
    let file: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(examples.join("creature-game.json")).expect("the game"),
    )
    .expect("json");
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let server = Server::start(&data, &["--ruleset-root", &root]);
    let mut c = server.client().await;
    let load = |dialect: &str| pb::LoadRulesetRequest {
        id: "deva".into(),
        paths: vec!["creature".into()],
        inline_text: String::new(),
        dialect: dialect.into(),
    };
    // An unknown dialect is refused; the known one loads, with the warning the CLI shows.
    let e = c.load_ruleset(load("klingon")).await.expect_err("unknown dialect");
    assert_eq!(e.code(), Code::InvalidArgument);
    let reply = c.load_ruleset(load("creature")).await.expect("loads").into_inner();
    assert!(reply.ok, "{reply:?}");
    assert!(reply.warnings.iter().any(|w| w.code == "creature.under_construction"), "{reply:?}");
    let verb = |json: &serde_json::Value| pb::Operation {
        op: Some(pb::operation::Op::Verb(pb::Verb { dialect: "creature".into(), json: json.to_string() })),
        cause: String::new(),
    };
    let setup = verb(&serde_json::json!({"setup": file["setup"]}));
    // `sheetd client --dialect creature` sends a verb as the same operation.
    let client_steps = sheetd::cli::client::Steps {
        steps: vec![serde_json::json!({"setup": file["setup"]}).to_string()],
        file: None,
        dialect: Some("creature".into()),
    };
    assert_eq!(sheetd::cli::client::operations(&client_steps).expect("a verb"), std::slice::from_ref(&setup));
    let create = pb::CreateSheetRequest {
        ruleset_id: "deva".into(),
        id: "g".into(),
        operations: vec![setup],
        variables: Vec::new(),
    };
    c.create_sheet(create).await.expect("creates");
    let mut rejected = Vec::new();
    for (i, s) in file["steps"].as_array().expect("steps").iter().enumerate() {
        let key = s.as_object().and_then(|o| o.keys().next()).expect("a step").as_str();
        if matches!(key, "evaluate" | "render_text") {
            // Questions: Apply refuses them, pointing at Values.
            let e = c.apply(apply("g", None, vec![verb(s)])).await.expect_err("a question");
            assert!(e.message().contains("Values"), "{e:?}");
            continue;
        }
        let op = if key == "tick" { ops(&[&s.to_string()]) } else { vec![verb(s)] };
        if let Err(e) = c.apply(apply("g", None, op)).await {
            rejected.push((i, e.code()));
        }
    }
    // The one step the game file expects rejected: the lich is not on the sheet.
    assert_eq!(rejected, [(20, Code::InvalidArgument)]);
    let names = [
        "deva.HP",
        "ogre.HP",
        "deva.SPELLDC",
        "ogre.BREATH_HOLD_MINUTES",
        "deva.Healing_Touch_1.USES",
        "ogre.BERSERK",
        "deva.Angelic_Weapons.TEXT",
    ];
    let want = [
        "129",
        "49",
        "15",
        "0.5",
        "3",
        "0",
        "\"The deva's weapon attacks are magical. When the deva hits with any weapon, the weapon deals an extra 4d8 radiant damage.\"",
    ];
    let now = c.values(values("g", &names, None)).await.expect("values").into_inner();
    assert_eq!(names.map(|n| value_of(&now.values, n)), want);
    drop(c);
    server.stop();
    // Restarted, the server compiles the dialect's files again and the sheet is as it was.
    let server = Server::start(&data, &["--ruleset-root", &root]);
    let mut c = server.client().await;
    let now = c.values(values("g", &names, None)).await.expect("values after a restart").into_inner();
    assert_eq!(names.map(|n| value_of(&now.values, n)), want);
    drop(c);
    server.stop();
}

/// A dialect's example game played over gRPC as a front end would: the dialect's files (under
/// `docs/examples`) loaded with `LoadRuleset`, the game's setup and verbs sent as `Verb`
/// operations and its `choose` and `roll` steps as they are. The steps rejected, with their
/// status codes; the data directory, server and client to read it with.
async fn dialect_game(
    dialect: &str,
    paths: &[&str],
    game: &str,
) -> (tempfile::TempDir, Server, Client, Vec<(usize, Code)>) {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let root = examples.display().to_string();
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(examples.join(game)).expect("the game")).expect("json");
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &["--ruleset-root", &root]);
    let mut c = server.client().await;
    let load = pb::LoadRulesetRequest {
        id: "cards".into(),
        paths: paths.iter().map(|p| p.to_string()).collect(),
        inline_text: String::new(),
        dialect: dialect.into(),
    };
    assert!(c.load_ruleset(load).await.expect("loads").into_inner().ok);
    let verb = |json: &serde_json::Value| pb::Operation {
        op: Some(pb::operation::Op::Verb(pb::Verb { dialect: dialect.into(), json: json.to_string() })),
        cause: String::new(),
    };
    let setup = verb(&serde_json::json!({"setup": file["setup"]}));
    let create = pb::CreateSheetRequest {
        ruleset_id: "cards".into(),
        id: "g".into(),
        operations: vec![setup],
        variables: Vec::new(),
    };
    c.create_sheet(create).await.expect("creates");
    let mut rejected = Vec::new();
    for (i, s) in file["steps"].as_array().expect("steps").iter().enumerate() {
        let generic = s.get("choose").is_some() || s.get("roll").is_some();
        let op = if generic { ops(&[&s.to_string()]) } else { vec![verb(s)] };
        if let Err(e) = c.apply(apply("g", None, op)).await {
            rejected.push((i, e.code()));
        }
    }
    (dir, server, c, rejected)
}

/// RuleScript over gRPC: the example's cards loaded as a dialect, the game's setup and verbs
/// sent as `Verb` operations, a target chosen with `choose`: the same values as the CLI's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rulescript_game_over_grpc() {
    let (_dir, server, mut c, rejected) =
        dialect_game("rulescript", &["rulescript"], "rulescript-game.json").await;
    // The pick that was not offered.
    assert_eq!(rejected, [(5, Code::InvalidArgument)]);
    let names = [
        "w1.BP",
        "g1.BP",
        "me.SP",
        "me.HP",
        "me.HAND",
        "s1.BP",
        "c1.BP",
        "t1.BP",
        "g1.ZONE",
        "hm1.ZONE",
        "me.SHUFFLES",
        "gk1.UNBLOCKABLE",
        "oa3.ZONE",
        "og1.BP",
    ];
    let now = c.values(values("g", &names, None)).await.expect("values").into_inner();
    let want = [
        "1200",
        "-100",
        "9",
        "3502",
        "8",
        "600",
        "800",
        "700",
        "\"discards\"",
        "\"discards\"",
        "1",
        "0",
        "\"hand\"",
        "200",
    ];
    assert_eq!(names.map(|n| value_of(&now.values, n)), want);
    drop(c);
    server.stop();
}

/// Effect strings over gRPC: the example's citizens and monsters loaded as a dialect, the
/// game's setup and verbs sent as `Verb` operations, choices answered with `choose`: the same
/// values as the CLI's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_effects_game_over_grpc() {
    let (_dir, server, mut c, rejected) = dialect_game("effects", &["effects"], "effects-game.json").await;
    // The exchange refused whole is a firing's error, not a rejected step; the pick not
    // offered is.
    assert_eq!(rejected, [(10, Code::InvalidArgument)]);
    let names =
        ["p1.G", "p1.M", "p1.V", "p2.G", "p1.OWNED_SOLDIER", "DIE_1", "knight.FLIPPED", "ettercap.STRENGTH"];
    let now = c.values(values("g", &names, None)).await.expect("values").into_inner();
    let want = ["3", "6", "4", "3", "1", "6", "1", "6"];
    assert_eq!(names.map(|n| value_of(&now.values, n)), want);
    drop(c);
    server.stop();
}

/// The WWRF round (`docs/examples/wwrf/`, `docs/examples/wwrf-game.json`) over gRPC: the
/// same verbs through `Apply`, the same values after — the day's manipulations gone, the
/// attack on the protected player evaded, the hermit absent at her house killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wwrf_game_over_grpc() {
    let (_dir, server, mut c, rejected) = dialect_game("wwrf", &["wwrf"], "wwrf-game.json").await;
    assert_eq!(rejected, []);
    let names = [
        "ann.PUBLIC_VOTES",
        "ann.PRIVATE_VOTES",
        "bob.VOTES",
        "eve.ALIVE",
        "ivy.ALIVE",
        "fay.RESULT",
        "LIVING",
    ];
    let now = c.values(values("g", &names, None)).await.expect("values").into_inner();
    let want = ["2", "3", "0", "1", "0", "\"Werewolf\"", "8"];
    assert_eq!(names.map(|n| value_of(&now.values, n)), want);
    drop(c);
    server.stop();
}

/// A ruleset that applies modifiers as added (`docs/examples/cards`), loaded inline: the
/// card played first applies first, and Explain says which order its steps follow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ruleset_in_applied_order_over_grpc() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;
    let cards = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/cards/cards.toml");
    let inline_text = std::fs::read_to_string(cards).expect("the example");
    let load =
        pb::LoadRulesetRequest { id: "cards".into(), paths: vec![], inline_text, dialect: String::new() };
    assert!(c.load_ruleset(load).await.expect("loads").into_inner().ok);
    let created = c
        .create_sheet(pb::CreateSheetRequest { ruleset_id: "cards".into(), ..Default::default() })
        .await
        .expect("creates")
        .into_inner();
    let id = created.sheet.expect("info").id;
    let boost = r#"{"add_object": {"kind": "CARD", "key": "Boost"}}"#;
    let double = r#"{"add_object": {"kind": "CARD", "key": "Double"}}"#;
    let r = c.apply(apply(&id, Some(0), ops(&[boost, double]))).await.expect("applies").into_inner();
    let new = |r: &str| r.to_owned();
    let changed: Vec<(String, String)> =
        r.changes.iter().map(|ch| (ch.r#ref.clone(), shown(&ch.new))).collect();
    assert_eq!(changed, [(new("BP"), new("1000")), (new("PcgenBP"), new("800"))]);
    let explain =
        |variable: &str| pb::ExplainRequest { sheet_id: id.clone(), variable: variable.into(), depth: None };
    let trace = c.explain(explain("BP")).await.expect("explains").into_inner().trace.expect("trace");
    assert_eq!(trace.order, "applied");
    let kinds: Vec<&str> = trace.steps.iter().map(|s| s.kind.as_str()).collect();
    assert_eq!(kinds, ["SET", "ADD", "MULTIPLY"]);
    let trace = c.explain(explain("PcgenBP")).await.expect("explains").into_inner().trace.expect("trace");
    assert_eq!(trace.order, "inherent");
    let kinds: Vec<&str> = trace.steps.iter().map(|s| s.kind.as_str()).collect();
    assert_eq!(kinds, ["SET", "MULTIPLY", "ADD"]);
    drop(c);
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_web_with_cors_and_malformed_requests() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &["--cors-origin", "https://builder.example"]);
    // CORS preflight from the allowed origin, and from another one.
    let preflight = |origin: &str| {
        let req = format!(
            "OPTIONS /sheetd.v1.SheetdService/Ping HTTP/1.1\r\nHost: {}\r\nOrigin: {origin}\r\n\
             Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type,x-grpc-web\r\n\
             Connection: close\r\n\r\n",
            server.addr
        );
        String::from_utf8_lossy(&http1(&server.addr, req.as_bytes())).to_ascii_lowercase()
    };
    let ok = preflight("https://builder.example");
    assert!(ok.contains("access-control-allow-origin: https://builder.example"), "{ok}");
    assert!(ok.contains("x-grpc-web"), "{ok}");
    let other = preflight("https://evil.example");
    assert!(!other.contains("access-control-allow-origin"), "{other}");

    // A grpc-web call over HTTP/1.1: Ping, framed (flag 0, length 0).
    let grpc_web = |path: &str, body: &[u8]| {
        let mut req = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nOrigin: https://builder.example\r\n\
             Content-Type: application/grpc-web+proto\r\nX-Grpc-Web: 1\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n",
            server.addr,
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        String::from_utf8_lossy(&http1(&server.addr, &req)).into_owned()
    };
    let reply = grpc_web("/sheetd.v1.SheetdService/Ping", &[0, 0, 0, 0, 0]);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("grpc-status:0"), "{reply}");
    assert!(reply.to_ascii_lowercase().contains("access-control-allow-origin: https://builder.example"));

    // Malformed: bytes that are not a CreateSheetRequest. INVALID_ARGUMENT (the client's fault),
    // and the server lives on.
    let garbage = [0u8, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff];
    let reply = grpc_web("/sheetd.v1.SheetdService/CreateSheet", &garbage);
    assert!(reply.contains("grpc-status:3\r") || reply.contains("grpc-status: 3\r"), "{reply}");
    assert!(reply.to_ascii_lowercase().contains("decode"), "{reply}");
    let reply = grpc_web("/sheetd.v1.SheetdService/NoSuchMethod", &[0, 0, 0, 0, 0]);
    assert!(reply.contains("grpc-status: 12") || reply.contains("grpc-status:12"), "{reply}");
    server.client().await.ping(pb::PingRequest {}).await.expect("still serving");
}

#[test]
fn json_logs_and_config_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("sheetd.toml");
    std::fs::write(&config, "log_format = \"json\"\n[limits]\nmax_sheets = 1\n").expect("write");
    let server = Server::start(&dir.path().join("data"), &["--config", config.to_str().expect("utf-8")]);
    let client = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sheetd"))
            .args(["client", "--server", &server.url])
            .args(args)
            .output()
            .expect("run client")
    };
    assert!(client(&["create"]).status.success());
    let full = client(&["create"]);
    assert!(!full.status.success());
    assert!(String::from_utf8_lossy(&full.stderr).contains("ResourceExhausted"));
    let log = server.stop();
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    let create = lines
        .iter()
        .find(|l| l["span"]["method"] == "CreateSheet" && l["span"]["status"] == "OK")
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(create["span"]["sheet"], "sheet-1");
    assert!(create["span"]["duration_us"].is_number(), "{create}");
    // The request around it: the peer and the request id.
    let request = &create["spans"][0];
    assert_eq!(request["name"], "request", "{create}");
    assert!(request["peer"].as_str().is_some_and(|p| p.starts_with("127.0.0.1:")), "{create}");
    assert!(request["request_id"].as_str().is_some_and(|r| r.starts_with("sheetd-")), "{create}");
}

#[test]
fn the_command_line_client_builds_changes_and_explains_a_character() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/examples/starter-character.json");
    // `host:port` alone is the server too (plain HTTP/2).
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
            .args(["client", "--server", &server.addr])
            .args(args)
            .output()
            .expect("run client");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{args:?}: {text}{}", String::from_utf8_lossy(&out.stderr));
        text
    };
    let created = run(&["create", "--file", example]);
    assert!(created.starts_with("created sheet-1 at revision 0"), "{created}");
    // SolveBatch from the sample lines: a line per sheet, in any order; the bad one an error.
    let sheets = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/examples/sheets.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["client", "--server", &server.addr, "batch", sheets])
        .output()
        .expect("run client");
    assert_eq!(out.status.code(), Some(1), "one sheet fails");
    assert!(String::from_utf8_lossy(&out.stderr).contains("error: 1 of 3 sheets failed"));
    let mut lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    lines.sort_by_key(|l| l["id"].as_str().unwrap_or("").to_owned());
    assert_eq!(lines[0], serde_json::json!({"id": "fighter", "values": {"AC": "17", "Walk.Speed": "5"}}));
    assert_eq!(lines[1], serde_json::json!({"id": "scout", "values": {"AC": "15"}}));
    assert_eq!(lines[2]["error"][0]["code"], "sheet.unknown_object");
    // A call past the client's deadline is abandoned, saying so: against a server that takes
    // the connection and never answers (the real one may answer a call within the timer's
    // first tick, a millisecond, and a release build does).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let silent_addr = silent.local_addr().expect("its address").to_string();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in silent.incoming().flatten() {
            held.push(conn);
        }
    });
    let late = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["client", "--server", &silent_addr, "--timeout", "0", "values", "sheet-1"])
        .output()
        .expect("run client");
    assert_eq!(late.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&late.stderr).contains("Timeout expired"), "{late:?}");
    // Its output read by a program that stops at once: the client ends quietly, with 0.
    let mut closed = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["client", "--server", &server.addr, "values", "sheet-1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run client");
    drop(closed.stdout.take());
    let out = closed.wait_with_output().expect("client ends");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), said.as_ref()), (Some(0), ""), "a closed stdout");
    assert!(created.contains("AC") && created.contains("= 17"), "{created}");
    let applied = run(&["apply", "sheet-1", "--expect", "0", "--step", r#"{"remove_object": "armor"}"#]);
    assert!(applied.contains("sheet-1 is at revision 1") && applied.contains("AC: 17 → 12"), "{applied}");
    let why = run(&["why-changed", "sheet-1", "AC", "--from", "0"]);
    assert!(why.contains("AC: 17 at revision 0 → 12 at revision 1"), "{why}");
    assert!(why.contains("revision 1, operation 0: remove object armor: 17 → 12"), "{why}");
    // The ways the change went through the graph.
    assert!(why.contains("(through ArmorBonus → AC; MaxDexBonus → AC)"), "{why}");
    let explain = run(&["explain", "sheet-1", "AC"]);
    assert!(explain.contains("AC = 12") && explain.contains("└─ SizeModifier = 0"), "{explain}");
    // Drawn: what AC depends on, as Graphviz, Mermaid and JSON.
    let dot = run(&["explain", "sheet-1", "AC", "--format", "dot"]);
    assert!(dot.starts_with("digraph dependencies {"), "{dot}");
    assert!(
        dot.contains("\"AC\" [label=\"AC = 12\", style=bold") && dot.contains("\"SizeModifier\" -> \"AC\";"),
        "{dot}"
    );
    let mermaid = run(&["explain", "sheet-1", "AC", "--format", "mermaid"]);
    assert!(
        mermaid.starts_with("flowchart LR\n  n0[\"AC = 12\"]") && mermaid.contains(" --> n0"),
        "{mermaid}"
    );
    let graph: serde_json::Value =
        serde_json::from_str(&run(&["explain", "sheet-1", "AC", "--format", "json"])).expect("JSON");
    assert_eq!(graph["nodes"][0]["ref"], "AC", "{graph}");
    assert!(graph["edges"].as_array().is_some_and(|e| e.iter().any(|e| e["to"] == "AC")), "{graph}");
    // Both ways, bounded: DEX.Mod one step out is what it reads (DEX.Score) and what reads it
    // (DEX); three steps out reaches DEX.Rolled behind and AC ahead.
    let near = |depth: &str| -> serde_json::Value {
        let out = run(&["explain", "sheet-1", "DEX.Mod", "--format", "json", "--depth", depth]);
        serde_json::from_str(&out).expect("JSON")
    };
    let edge = |from: &str, to: &str| serde_json::json!({"from": from, "to": to});
    let edges = |g: &serde_json::Value| g["edges"].as_array().cloned().unwrap_or_default();
    let one = near("1");
    assert_eq!(edges(&one), [edge("DEX.Score", "DEX.Mod"), edge("DEX.Mod", "DEX")], "{one}");
    let three = edges(&near("3"));
    assert!(
        three.contains(&edge("DEX.Rolled", "DEX.Score")) && three.contains(&edge("DEX", "AC")),
        "{three:?}"
    );
    // What-if: a harness previewed, its AC trace shown, nothing committed.
    let harness = r#"{"add_object": {"kind": "EQUIPMENT", "key": "Plated Harness", "id": "harness"}}"#;
    let preview = run(&["preview", "sheet-1", "--step", harness, "--explain", "AC"]);
    assert!(preview.starts_with("sheet-1 stays at revision 1"), "{preview}");
    assert!(preview.contains("AC: 12 → ") && preview.contains("AC = "), "{preview}");
    let still = run(&["values", "sheet-1", "AC"]);
    assert!(still.contains("sheet-1 at revision 1") && still.contains("AC = 12"), "{still}");
    // watch: replays from revision 0, then ends when the sheet is deleted.
    let watcher = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["client", "--server", &server.url, "watch", "sheet-1", "AC", "--from", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("watch");
    let json = run(&["--json", "values", "sheet-1", "AC", "--revision", "0"]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["values"][0]["value"]["number"], "17", "{v}");
    // A rejected call exits 1 with the status and the diagnostic.
    let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["client", "--server", &server.url, "apply", "sheet-1", "--step"])
        .arg(r#"{"add_modifier": {"id": "m", "var": "AC", "type": "ADD", "value": "1 +"}}"#)
        .output()
        .expect("run client");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("InvalidArgument") && err.contains("in formula `1 +`"), "{err}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    run(&["delete", "sheet-1"]);
    let watched = watcher.wait_with_output().expect("watch ends");
    assert!(watched.status.success());
    let text = String::from_utf8_lossy(&watched.stdout);
    assert_eq!(text, "revision 1:\n  AC: 17 → 12\nthe sheet was deleted\n");
}

#[test]
fn offline_batch_solves_jsonl_in_input_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("sheets.jsonl");
    let output = dir.path().join("results.jsonl");
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../data/examples/starter-character.json"
    ))
    .expect("example");
    let steps: serde_json::Value = serde_json::from_str(&example).expect("json");
    let mut lines = String::new();
    for i in 0..300 {
        let mut s = steps["steps"].clone();
        if i % 2 == 1 {
            s.as_array_mut().expect("array").push(serde_json::json!({"remove_object": "armor"}));
        }
        let line = if i == 150 {
            serde_json::json!({"id": i, "steps": [{"remove_object": "ghost"}]})
        } else {
            serde_json::json!({"id": i, "steps": s, "variables": ["AC", "Walk.Speed"]})
        };
        lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(&input, lines).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["batch", "--ruleset"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/rulesets/starter"))
        .arg("--in")
        .arg(&input)
        .arg("--out")
        .arg(&output)
        .output()
        .expect("run batch");
    assert_eq!(out.status.code(), Some(1), "one sheet failed");
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(summary.contains("300 sheets: 299 solved, 1 failed"), "{summary}");
    let results: Vec<serde_json::Value> = std::fs::read_to_string(&output)
        .expect("output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(results.len(), 300);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["id"], i, "input order");
        if i == 150 {
            assert_eq!(r["error"][0]["code"], "sheet.unknown_id", "{r}");
        } else {
            let (ac, speed) = if i % 2 == 1 { ("12", "20") } else { ("17", "15") };
            assert_eq!(
                (r["values"]["AC"].as_str(), r["values"]["Walk.Speed"].as_str()),
                (Some(ac), Some(speed)),
                "{r}"
            );
        }
    }
    // Not a terminal: no progress bar, only the summary.
    assert!(!summary.contains("ETA") && !summary.contains('\u{1b}'), "{summary}");

    // On a terminal (a pseudo-terminal from util-linux's `script`): a bar with the total, the
    // rate and the time left, cleared at the end, then the summary.
    let Some(script) =
        ["/usr/bin/script", "/bin/script"].into_iter().find(|p| std::path::Path::new(p).exists())
    else {
        assert!(std::env::var_os("CI").is_none(), "CI needs util-linux's `script` for the terminal test");
        eprintln!("notice: no `script`; skipping the progress bar's terminal test");
        return;
    };
    let quote = |p: &std::path::Path| format!("'{}'", p.display().to_string().replace('\'', "'\\''"));
    let command = format!(
        "{} batch --ruleset {} --in {} --out {}",
        quote(std::path::Path::new(env!("CARGO_BIN_EXE_sheetd"))),
        quote(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../data/rulesets/starter"))),
        quote(&input),
        quote(&dir.path().join("tty-results.jsonl")),
    );
    let tty = Command::new(script)
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env("TERM", "xterm")
        .output()
        .expect("run script");
    let shown = String::from_utf8_lossy(&tty.stdout);
    assert_eq!(tty.status.code(), Some(1), "{shown}");
    assert!(shown.contains("/300 sheets") && shown.contains("ETA") && shown.contains("/s"), "{shown}");
    assert!(shown.contains("300 sheets: 299 solved, 1 failed"), "{shown}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("tty-results.jsonl")).expect("output").lines().count(),
        300
    );
}

/// The tavern example's game (`docs/examples/tavern-game.json`) over gRPC, with a restart in
/// the middle: each emit reports the rules it fired, with their origin; a rule's question is
/// pending in the reply and on GetSheet, and every other step is refused until a choose (or a
/// roll) answers it; a restarted server replays the log to the same pending roll; WhyChanged
/// names the rule behind each change; and the final values are those of the same steps played
/// in process from scratch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_over_grpc_fires_rules_asks_and_replays_after_a_restart() {
    use tonic_types::StatusExt;
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let tavern = format!("tavern={}", examples.join("tavern").display());
    let game_file = examples.join("tavern-game.json");
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&game_file).expect("the game")).expect("json");
    let steps: Vec<String> = file["steps"].as_array().expect("steps").iter().map(|s| s.to_string()).collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let server = Server::start(&data, &["--ruleset", &tavern]);
    let mut c = server.client().await;
    let create = pb::CreateSheetRequest {
        ruleset_id: "tavern".into(),
        id: "t".into(),
        operations: ops(&[&steps[0]]),
        variables: Vec::new(),
    };
    c.create_sheet(create).await.expect("creates");
    let fired = |r: &pb::ApplyResponse| -> Vec<String> {
        r.fired
            .iter()
            .map(|f| {
                format!(
                    "{} @{} for {}",
                    f.rule,
                    f.at.rsplit('/').next().unwrap_or(""),
                    f.this.as_deref().unwrap_or("-")
                )
            })
            .collect()
    };
    // A melee hit: the hit's rule, then the Spiked Shield's (once per placement).
    let r = c.apply(apply("t", Some(0), ops(&[&steps[1]]))).await.expect("hit").into_inner();
    assert_eq!(
        fired(&r),
        ["Take the hit @tavern.toml:59:9 for -", "Spiked Shield @tavern.toml:67:9 for Spiked Shield"]
    );
    assert!(r.pending.is_none() && r.stopped.is_none());
    // The second hit drops HP to 9: Hurt fires Second Wind, which asks.
    let r = c.apply(apply("t", Some(1), ops(&[&steps[2]]))).await.expect("hit").into_inner();
    assert_eq!(fired(&r), ["Take the hit @tavern.toml:59:9 for -", "Second Wind @tavern.toml:75:9 for -"]);
    let pending = r.pending.expect("a question");
    assert_eq!(
        (pending.choice, pending.prompt.as_str(), pending.pick, pending.decline),
        (1, "Drink something?", 1, true)
    );
    assert_eq!(pending.options, ["Healing Draught", "Strong Ale"]);
    let info = sheet(&mut c, "t").await;
    assert_eq!(info.pending.as_ref(), Some(&pending));
    // Until it is answered, nothing else goes: FAILED_PRECONDITION, and the sheet is unchanged.
    let e = c.apply(apply("t", None, ops(&[&steps[3]]))).await.expect_err("pending");
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert_eq!(e.get_details_error_info().map(|i| i.reason), Some("events.choice_pending".to_owned()));
    let bad = r#"{"choose": {"choice": 1, "picks": ["Mead"]}}"#;
    let e = c.apply(apply("t", None, ops(&[bad]))).await.expect_err("not an option");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert_eq!(e.get_details_error_info().map(|i| i.reason), Some("events.bad_pick".to_owned()));
    // A game step goes alone.
    let both = ops(&[&steps[4], r#"{"remove_object": "Spiked Shield"}"#]);
    let e = c.apply(apply("t", None, both)).await.expect_err("not alone");
    assert_eq!(e.get_details_error_info().map(|i| i.reason), Some("request.step_not_alone".to_owned()));
    let (_, now) = (0, c.values(values("t", &["HP", "Armor"], None)).await.expect("values").into_inner());
    assert_eq!(
        (now.revision, value_of(&now.values, "HP"), value_of(&now.values, "Armor")),
        (2, "9".into(), "1".into())
    );
    // The answer: the draught is added, by the rule.
    let r = c.apply(apply("t", Some(2), ops(&[&steps[4]]))).await.expect("chooses").into_inner();
    assert_eq!(fired(&r), ["Second Wind @tavern.toml:75:9 for -"]);
    assert!(r.pending.is_none());
    // Its Armor bonus lasts until Turn passes the next value: the waterfall says so.
    let explain = pb::ExplainRequest { sheet_id: "t".into(), variable: "Armor".into(), depth: None };
    let trace = c.explain(explain).await.expect("explain").into_inner().trace.expect("trace");
    let expires: Vec<(&str, &str)> =
        trace.steps.iter().map(|s| (s.instruction.as_str(), s.expires.as_str())).collect();
    assert_eq!(expires, [("1", ""), ("2", "Turn passes 1")], "{trace:?}");
    for s in &steps[5..7] {
        c.apply(apply("t", None, ops(&[s]))).await.expect("plays");
    }
    let info = sheet(&mut c, "t").await;
    let roll = info.pending.expect("payday asks for a roll");
    assert_eq!((roll.choice, roll.die.as_deref()), (2, Some("d6")));
    drop(c);
    server.stop();

    // Restarted: the log replays through the rules, to the same question.
    let server = Server::start(&data, &["--ruleset", &tavern]);
    let mut c = server.client().await;
    let info = sheet(&mut c, "t").await;
    assert_eq!((info.revision, info.pending.as_ref()), (5, Some(&roll)));
    let e =
        c.apply(apply("t", None, ops(&[r#"{"roll": {"die": "d6", "value": 7}}"#]))).await.expect_err("a d6");
    assert_eq!(e.get_details_error_info().map(|i| i.reason), Some("events.bad_roll".to_owned()));
    for s in &steps[7..] {
        c.apply(apply("t", None, ops(&[s]))).await.expect("plays");
    }
    // Why Armor changed: the draught the rule added (and its expiry, when the turn ended).
    let why = pb::WhyChangedRequest {
        sheet_id: "t".into(),
        variable: "Armor".into(),
        from_revision: 2,
        to_revision: Some(3),
    };
    let why = c.why_changed(why).await.expect("why").into_inner();
    assert_eq!(why.causes.len(), 1, "{why:?}");
    let cause = &why.causes[0];
    assert!(cause.description.contains("by rule `Second Wind`"), "{}", cause.description);
    assert!(cause.operation.as_ref().is_some_and(|o| o.cause.starts_with("rule `Second Wind`")), "{cause:?}");
    let over_grpc = c.values(values("t", &[], None)).await.expect("values").into_inner().values;

    // The same steps, played in process from scratch.
    let ruleset = std::sync::Arc::new(data::load(&[examples.join("tavern")]).expect("loads"));
    let book = std::sync::Arc::new(events::RuleBook::compile(ruleset).expect("rules"));
    let mut game = events::Game::new(book).expect("game");
    for (i, s) in steps.iter().enumerate() {
        let json: serde_json::Value = serde_json::from_str(s).expect("json");
        let played = game.apply(&sheetd::cli::steps::game_step(&json).expect("a step"));
        // Step 3 (an end of turn while the question waits) is refused, as it was over gRPC.
        assert_eq!(played.is_err(), i == 3, "step {i}");
    }
    let in_process: Vec<(String, String)> =
        data::record::values(game.character()).into_iter().map(|v| (v.var, v.value.to_string())).collect();
    let grpc: Vec<(String, String)> = over_grpc.iter().map(|v| (v.r#ref.clone(), shown(&v.value))).collect();
    assert_eq!(grpc, in_process);
    drop(c);
    server.stop();
}

/// A Watch stream has a span of its own for its whole life, inside its call's request (peer,
/// request id): "watch started" when it opens, "watch ended" with what it sent when it closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_span_covers_the_streams_life() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &["--log-format", "json"]);
    let mut c = server.client().await;
    let (id, mut w) = server::new_watched_sheet(&mut c).await;
    for (n, v) in ["1", "2"].iter().enumerate() {
        let add =
            format!(r#"{{"add_modifier": {{"id": "m{v}", "var": "AC", "type": "ADD", "value": "{v}"}}}}"#);
        c.apply(apply(&id, Some(n as u64), ops(&[&add]))).await.expect("apply");
        w.message().await.expect("a message").expect("an event");
    }
    drop(w);
    // The server sees the stream end when the client's reset arrives.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !server.log().contains("watch ended") && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let log = server.stop();
    let lines: Vec<serde_json::Value> = log.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let event = |what: &str| {
        lines.iter().find(|l| l["message"] == what).unwrap_or_else(|| panic!("{what} in {log}")).clone()
    };
    let (started, ended) = (event("watch started"), event("watch ended"));
    for e in [&started, &ended] {
        assert_eq!(e["span"]["name"], "watch", "{e}");
        assert_eq!(e["span"]["sheet"], id.as_str(), "{e}");
        let request = &e["spans"][0];
        assert_eq!(request["name"], "request", "{e}");
        assert!(request["peer"].as_str().is_some_and(|p| p.starts_with("127.0.0.1:")), "{e}");
    }
    assert_eq!(started["spans"][0]["request_id"], ended["spans"][0]["request_id"], "one stream, one request");
    assert_eq!(ended["sent"], 2, "{ended}");
    assert!(ended["duration_ms"].is_number(), "{ended}");
}

/// `sheetd batch --shard I/N`: N runs, each solving its share, whose outputs concatenated in
/// order are the unsharded output — from a file and from stdin, with more shards than some
/// shares have sheets; a shard written wrong is refused before anything runs.
#[test]
fn sharded_batches_concatenate_to_the_whole() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("sheets.jsonl");
    let mut lines = String::new();
    for i in 0..23 {
        let armor = if i % 3 == 0 {
            r#"{"remove_object": "armor"}"#
        } else {
            r#"{"set_input": {"channel": "Rolled", "on": "STR", "value": 15}}"#
        };
        let ops = if i == 7 { r#"[{"remove_object": "ghost"}]"#.to_owned() } else { format!("[{armor}]") };
        lines.push_str(&format!("{{\"id\": {i}, \"steps\": {ops}, \"variables\": [\"AC\"]}}\n"));
        if i % 5 == 0 {
            lines.push('\n');
        }
    }
    std::fs::write(&input, &lines).expect("write");
    let batch = |shard: Option<&str>, stdin: bool| -> String {
        let out = dir.path().join(format!("out-{}.jsonl", shard.unwrap_or("all").replace('/', "-")));
        let mut c = Command::new(env!("CARGO_BIN_EXE_sheetd"));
        c.args(["batch", "--in"])
            .arg(if stdin { std::path::Path::new("-") } else { &input })
            .arg("--out")
            .arg(&out);
        if let Some(s) = shard {
            c.args(["--shard", s]);
        }
        if stdin {
            c.stdin(std::fs::File::open(&input).expect("input"));
        }
        let status = c.output().expect("run batch").status;
        assert!(status.code().is_some_and(|c| c <= 1), "{shard:?}: {status}");
        std::fs::read_to_string(out).expect("output")
    };
    let whole = batch(None, false);
    assert_eq!(whole.lines().count(), 23);
    for n in [1, 2, 3, 7, 30] {
        let parts: Vec<String> = (0..n).map(|i| batch(Some(&format!("{i}/{n}")), n == 3)).collect();
        assert_eq!(parts.concat(), whole, "{n} shards");
        let sizes: Vec<usize> = parts.iter().map(|p| p.lines().count()).collect();
        assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "even shares: {sizes:?}");
    }
    for bad in ["3/3", "1", "a/2", "0/0"] {
        let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
            .args(["batch", "--in", "-", "--out", "-", "--shard", bad])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("a shard is I/N"), "{bad}");
    }
}
