//! API v1's contract over a real `sheetd serve`: no reply larger than the limit Ping
//! advertises (lists paged by size, Watch messages split, committing replies that leave their
//! changes out, other replies refused naming what to narrow), safe retries of Apply by
//! `request_id`, and preconditions on DeleteSheet.

#[path = "common/server.rs"]
mod server;

use prost::Message;
use server::{Server, apply, ops, values};
use sheetd::grpc::proto as pb;
use tonic::Code;
use tonic_types::StatusExt;

/// The smallest reply limit a server takes.
const LIMIT: u64 = 64 * 1024;

/// A ruleset of `n` workers, each with a long display name, adding two variables to a sheet.
fn guild(n: usize) -> String {
    let mut t = String::from(
        "[ruleset]\nname = \"big\"\n\n[scopes]\n\"PC.WORKER\" = \"PC\"\n\n[variables.\"PC.WORKER\"]\n\
         Wage = \"NUMBER\"\nSTR = \"NUMBER\"\n\n[kinds.WORKER]\nscope = \"PC.WORKER\"\n",
    );
    for i in 0..n {
        t.push_str(&format!(
            "\n[[object]]\nkind = \"WORKER\"\nkey = \"Worker {i:04}\"\nname = \"Worker number {i:04} of the guild, {}\"\n\
             modify = [{{ var = \"Wage\", set = \"{i}\" }}, {{ var = \"STR\", set = \"{}\" }}]\n",
            "who carries a long name ".repeat(3),
            i % 18 + 3
        ));
    }
    t
}

/// A worker's id on the sheet: long, so that a few thousand changes pass the limit.
fn member(i: usize) -> String {
    format!("guild-member-number-{i:04}")
}

fn hire(from: usize, n: usize) -> Vec<pb::Operation> {
    let steps: Vec<String> = (from..from + n)
        .map(|i| {
            format!(
                r#"{{"add_object": {{"kind": "WORKER", "key": "Worker {i:04}", "id": "{}"}}}}"#,
                member(i)
            )
        })
        .collect();
    ops(&steps.iter().map(String::as_str).collect::<Vec<_>>())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_reply_is_larger_than_the_limit_ping_advertises() {
    let dir = tempfile::tempdir().expect("temp dir");
    let limit = LIMIT.to_string();
    let server = Server::start(&dir.path().join("data"), &["--max-reply-bytes", &limit]);
    let mut c = server.client().await;

    let ping = c.ping(pb::PingRequest {}).await.expect("ping").into_inner();
    let limits = ping.limits.expect("limits");
    assert_eq!(
        (limits.max_reply_bytes, limits.max_request_bytes, limits.max_page_size),
        (LIMIT, 4 << 20, 1000)
    );

    let load = pb::LoadRulesetRequest { id: "big".into(), inline_text: guild(1200), ..Default::default() };
    assert!(c.load_ruleset(load).await.expect("load").into_inner().ok);

    // The catalog: 1,000 asked, fewer sent, each page within the limit; every object once.
    let mut token = String::new();
    let mut keys = Vec::new();
    let mut pages = 0;
    loop {
        let req = pb::ListCatalogRequest {
            ruleset_id: "big".into(),
            page_size: 1000,
            page_token: token.clone(),
            ..Default::default()
        };
        let page = c.list_catalog(req).await.expect("catalog").into_inner();
        assert!(page.encoded_len() as u64 <= LIMIT, "page {pages} is {} bytes", page.encoded_len());
        assert!(page.objects.len() < 1000 || page.next_page_token.is_empty());
        keys.extend(page.objects.iter().map(|o| o.key.clone()));
        pages += 1;
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let expected: Vec<String> = (0..1200).map(|i| format!("Worker {i:04}")).collect();
    assert_eq!(keys, expected, "every object once, in order");
    assert!(pages > 2, "{pages} pages: paged by size, not only by count");

    // A Watch from revision 0 on a sheet whose next revision changes too much for one message.
    let create = pb::CreateSheetRequest { ruleset_id: "big".into(), id: "g".into(), ..Default::default() };
    c.create_sheet(create).await.expect("create");
    let mut watcher = server.client().await;
    let watch = pb::WatchRequest { sheet_id: "g".into(), variables: vec![], from_revision: Some(0) };
    let mut stream = watcher.watch(watch).await.expect("watch").into_inner();

    // An Apply that changes more than fits: made, its changes left out and said so.
    let r = c.apply(apply("g", Some(0), hire(0, 1000))).await.expect("apply").into_inner();
    assert_eq!((r.revision, r.changes_omitted), (1, true));
    assert!(r.changes.is_empty());
    // Naming the variables wanted brings them back.
    let mut narrow = apply("g", None, hire(1000, 200));
    narrow.variables = vec![format!("{}.Wage", member(1000))];
    let r = c.apply(narrow).await.expect("apply").into_inner();
    assert!(!r.changes_omitted);
    assert_eq!(r.changes.len(), 1);

    // The watcher gets revision 1 in several messages, each within the limit, all but the last
    // `continued`, together every change.
    let mut parts = Vec::new();
    while let Some(m) = stream.message().await.expect("stream") {
        assert!(m.encoded_len() as u64 <= LIMIT);
        let last = !m.continued;
        parts.push(m);
        if last {
            break;
        }
    }
    assert!(parts.len() > 1, "split into {} messages", parts.len());
    assert!(parts.iter().all(|p| p.revision == 1));
    let changed: usize = parts
        .iter()
        .map(|p| match &p.event {
            Some(pb::watch_response::Event::Changes(c)) => c.changes.len(),
            other => panic!("not changes: {other:?}"),
        })
        .sum();
    assert_eq!(changed, 2000, "a Wage and a STR for each of the 1,000 workers");

    // Values of everything no longer fit: refused, saying what to narrow; by name they come.
    let e = c.values(values("g", &[], None)).await.expect_err("too large");
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    let info = e.get_error_details().error_info().cloned().expect("info");
    assert_eq!(info.reason, "request.reply_too_large");
    assert_eq!(info.metadata["max_reply_bytes"], limit);
    assert!(info.metadata["narrow"].contains("variables"), "{info:?}");
    assert!(info.metadata["reply_bytes"].parse::<u64>().expect("a size") > LIMIT);
    let str7 = format!("{}.STR", member(7));
    let some = c.values(values("g", &[&str7], None)).await.expect("values").into_inner();
    assert_eq!(some.values.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_apply_is_applied_once_and_deletes_hold_to_their_revision() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;
    let create = pb::CreateSheetRequest { id: "hero".into(), ..Default::default() };
    c.create_sheet(create).await.expect("create");
    let armor = ops(&[r#"{"add_object": {"kind": "EQUIPMENT", "key": "Ring Hauberk", "id": "armor"}}"#]);

    // The first attempt applies; its retry (same id, same operations) gets the same reply
    // although the sheet is past the revision it expected.
    let mut req = apply("hero", Some(0), armor.clone());
    req.request_id = "5f0c9d2e-apply-1".into();
    let first = c.apply(req.clone()).await.expect("apply").into_inner();
    let retry = c.apply(req.clone()).await.expect("retry").into_inner();
    assert_eq!(first.revision, 1);
    assert_eq!(retry, first);
    let info = c.get_sheet(pb::GetSheetRequest { sheet_id: "hero".into() }).await.expect("get");
    assert_eq!(info.into_inner().sheet.expect("sheet").revision, 1, "applied once");

    // The same id with other operations is refused.
    let mut other = apply("hero", None, ops(&[r#"{"remove_object": "armor"}"#]));
    other.request_id = req.request_id.clone();
    let e = c.apply(other).await.expect_err("reused");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(e.get_error_details().error_info().expect("info").reason, "request.request_id_reused");
    // An id too long is refused before anything runs.
    let mut long = apply("hero", None, armor.clone());
    long.request_id = "x".repeat(65);
    assert_eq!(c.apply(long).await.expect_err("long").code(), Code::InvalidArgument);

    // DeleteSheet expecting a revision the sheet moved past deletes nothing.
    let stale = pb::DeleteSheetRequest { sheet_id: "hero".into(), expected_revision: Some(0) };
    let e = c.delete_sheet(stale).await.expect_err("stale");
    assert_eq!(e.code(), Code::Aborted);
    let details = e.get_error_details();
    assert_eq!(details.error_info().expect("info").reason, "sheet.revision_conflict");
    let v = &details.precondition_failure().expect("precondition").violations[0];
    assert_eq!((v.r#type.as_str(), v.subject.as_str()), ("REVISION", "sheets/hero"));
    let seen = pb::DeleteSheetRequest { sheet_id: "hero".into(), expected_revision: Some(1) };
    c.delete_sheet(seen).await.expect("delete at the revision seen");
    let e = c.get_sheet(pb::GetSheetRequest { sheet_id: "hero".into() }).await.expect_err("gone");
    assert_eq!(e.code(), Code::NotFound);
}
