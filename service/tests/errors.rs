//! The error model as a third-party client sees it: the `grpc-status-details-bin` header is a
//! standard `google.rpc.Status` (same code and message) whose details are the standard types,
//! decoded here with `tonic-types` (what a Rust client uses) and by hand from the raw header
//! bytes (what any protobuf library can do), never with sheetd's own helpers.

#[path = "common/server.rs"]
mod server;

use prost::Message;
use server::{Server, apply, ops};
use sheetd::grpc::proto as pb;
use tonic::Code;
use tonic_types::{StatusExt, pb as rpc};

const HARNESS: &str = r#"{"add_object": {"kind": "EQUIPMENT", "key": "Plated Harness", "id": "armor"}}"#;
const MOON_BOOTS: &str = r#"{"add_object": {"kind": "EQUIPMENT", "key": "Moon Boots", "id": "boots"}}"#;

/// The raw header as a `google.rpc.Status`: the header value is the base64 of these bytes; tonic
/// has already decoded the base64 into `details()`.
fn raw(s: &tonic::Status) -> rpc::Status {
    let status = rpc::Status::decode(s.details()).expect("the details are a google.rpc.Status");
    assert_eq!(
        (status.code, status.message.as_str()),
        (s.code() as i32, s.message()),
        "same code and message"
    );
    status
}

fn type_urls(s: &rpc::Status) -> Vec<&str> {
    s.details.iter().map(|a| a.type_url.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejections_carry_standard_details() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;
    let created = c.create_sheet(pb::CreateSheetRequest::default()).await.expect("create").into_inner();
    let id = created.sheet.expect("info").id;

    // An unknown object in operation 1: INVALID_ARGUMENT, BadRequest naming the operation,
    // ErrorInfo with the stable reason, then sheetd's diagnostics.
    let e = c.apply(apply(&id, None, ops(&[HARNESS, MOON_BOOTS]))).await.expect_err("invalid");
    assert_eq!(e.code(), Code::InvalidArgument);
    let details = e.check_error_details().expect("tonic-types decodes the details");
    let info = details.error_info().expect("ErrorInfo");
    assert_eq!((info.reason.as_str(), info.domain.as_str()), ("sheet.unknown_object", "sheetd"));
    assert_eq!(info.metadata.get("operation").map(String::as_str), Some("1"));
    let bad = details.bad_request().expect("BadRequest");
    assert_eq!(bad.field_violations[0].field, "operations[1]");
    assert!(bad.field_violations[0].description.contains("Moon Boots"), "{bad:?}");
    let status = raw(&e);
    assert_eq!(
        type_urls(&status),
        [
            "type.googleapis.com/google.rpc.ErrorInfo",
            "type.googleapis.com/google.rpc.BadRequest",
            "type.googleapis.com/sheetd.v1.ErrorInfo"
        ]
    );
    let ours = pb::ErrorInfo::decode(status.details[2].value.as_slice()).expect("sheetd.v1.ErrorInfo");
    assert_eq!(
        (ours.diagnostics[0].operation, ours.diagnostics[0].code.as_str()),
        (Some(1), "sheet.unknown_object")
    );

    // A bad formula: the field is the modifier's value.
    let bad_formula =
        r#"{"add_modifier": {"id": "m1", "var": "AC", "type": "ADD", "value": "2 + NoSuchVar"}}"#;
    let e = c.apply(apply(&id, None, ops(&[bad_formula]))).await.expect_err("bad formula");
    let bad = e.get_details_bad_request().expect("BadRequest");
    assert_eq!(bad.field_violations[0].field, "operations[0].add_modifier.value");
    assert_eq!(bad.field_violations[0].reason, "solver.formula:semantics.unknown_variable");

    // A cycle: FAILED_PRECONDITION with the path as a violation.
    let cycle = r#"{"add_modifier": {"id": "loop", "var": "ArmorBonus", "type": "ADD", "value": "AC"}}"#;
    let e = c.apply(apply(&id, None, ops(&[cycle]))).await.expect_err("cycle");
    assert_eq!(e.code(), Code::FailedPrecondition);
    let failure = e.get_details_precondition_failure().expect("PreconditionFailure");
    assert_eq!(failure.violations[0].r#type, "CYCLE");
    assert!(
        failure.violations[0].subject.contains("AC") && failure.violations[0].subject.contains("ArmorBonus")
    );
    assert_eq!(e.get_details_error_info().map(|i| i.reason), Some("solver.cycle".to_owned()));

    // A stale revision: ABORTED with a REVISION violation and the revisions as metadata.
    let e = c.apply(apply(&id, Some(7), ops(&[HARNESS]))).await.expect_err("stale");
    assert_eq!(e.code(), Code::Aborted);
    let failure = e.get_details_precondition_failure().expect("PreconditionFailure");
    assert_eq!(
        (failure.violations[0].r#type.as_str(), failure.violations[0].subject.as_str()),
        ("REVISION", "sheets/sheet-1")
    );
    let info = e.get_details_error_info().expect("ErrorInfo");
    assert_eq!(info.reason, "sheet.revision_conflict");
    assert_eq!(
        (
            info.metadata.get("expected_revision").map(String::as_str),
            info.metadata.get("revision").map(String::as_str)
        ),
        (Some("7"), Some("0"))
    );

    // NOT_FOUND: ResourceInfo naming the sheet.
    let e = c.get_sheet(pb::GetSheetRequest { sheet_id: "nope".into() }).await.expect_err("missing");
    assert_eq!(e.code(), Code::NotFound);
    let resource = e.get_details_resource_info().expect("ResourceInfo");
    assert_eq!(
        (resource.resource_type.as_str(), resource.resource_name.as_str()),
        ("sheetd.v1.Sheet", "nope")
    );
    assert_eq!(
        type_urls(&raw(&e)),
        ["type.googleapis.com/google.rpc.ErrorInfo", "type.googleapis.com/google.rpc.ResourceInfo"]
    );

    // A ruleset with a syntax error: BadRequest with the file position.
    let e = c
        .load_ruleset(pb::LoadRulesetRequest {
            id: "bad".into(),
            paths: vec![],
            inline_text: "[ruleset\n".into(),
            dialect: String::new(),
        })
        .await
        .expect_err("syntax error");
    let bad = e.get_details_bad_request().expect("BadRequest");
    assert!(bad.field_violations[0].field.starts_with("<inline bad>:1:"), "{bad:?}");
}

/// The raw `grpc-status-details-bin` header of a grpc-web call over plain HTTP/1.1, as a
/// browser client (Connect-ES, grpc-web) receives it: base64 of a `google.rpc.Status`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_raw_header_is_a_google_rpc_status() {
    use base64::Engine as _;
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;
    c.create_sheet(pb::CreateSheetRequest::default()).await.expect("create");
    let message = apply("sheet-1", None, ops(&[MOON_BOOTS])).encode_to_vec();
    let mut body = vec![0u8];
    body.extend_from_slice(&u32::try_from(message.len()).expect("small").to_be_bytes());
    body.extend_from_slice(&message);
    let mut request = format!(
        "POST /sheetd.v1.SheetdService/Apply HTTP/1.1\r\nHost: {}\r\nContent-Type: application/grpc-web+proto\r\n\
         X-Grpc-Web: 1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.addr,
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    let reply = server::http1(&server.addr, &request);
    let reply = String::from_utf8_lossy(&reply).into_owned();
    // In the headers (a trailers-only reply) or in the trailer frame: `name: value` either way.
    let header = |name: &str| {
        reply
            .split("\r\n")
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
            })
            .unwrap_or_else(|| panic!("no {name} in {reply}"))
    };
    assert_eq!(header("grpc-status"), "3", "{reply}");
    let b64 = header("grpc-status-details-bin");
    let bytes =
        base64::engine::general_purpose::STANDARD_NO_PAD.decode(b64.trim_end_matches('=')).expect("base64");
    let status = rpc::Status::decode(bytes.as_slice()).expect("a google.rpc.Status");
    assert_eq!(status.code, Code::InvalidArgument as i32);
    assert!(status.message.contains("Moon Boots"), "{}", status.message);
    let info = rpc::ErrorInfo::decode(status.details[0].value.as_slice()).expect("ErrorInfo");
    assert_eq!((info.reason.as_str(), info.domain.as_str()), ("sheet.unknown_object", "sheetd"));
}

/// A request body that is not valid protobuf for the method: INVALID_ARGUMENT with an
/// ErrorInfo, over the real HTTP/2 transport (a client with a mismatched schema sends such).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_are_invalid_argument() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let channel = tonic::transport::Channel::from_shared(server.url.clone())
        .expect("url")
        .connect()
        .await
        .expect("connect");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("ready");
    // Field 1 (sheet_id) as a varint where a string is expected, then a truncated length.
    let garbage = bytes::Bytes::from_static(&[0x08, 0x96, 0x01, 0x12, 0x7f]);
    let path = http::uri::PathAndQuery::from_static("/sheetd.v1.SheetdService/GetSheet");
    let e = grpc
        .unary::<_, pb::SheetInfo, _>(tonic::Request::new(garbage), path, RawCodec)
        .await
        .expect_err("malformed");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert_eq!(e.get_details_error_info().map(|i| i.reason), Some("request.malformed".to_owned()));
    raw(&e);
}

/// Sends bytes as they are; decodes replies as `M`.
#[derive(Clone, Copy)]
struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = bytes::Bytes;
    type Decode = pb::SheetInfo;
    type Encoder = RawEncoder;
    type Decoder = tonic_prost::ProstDecoder<pb::SheetInfo>;

    fn encoder(&mut self) -> RawEncoder {
        RawEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        tonic_prost::ProstCodec::<pb::SheetInfo, pb::SheetInfo>::raw_decoder(
            tonic::codec::BufferSettings::default(),
        )
    }
}

struct RawEncoder;

impl tonic::codec::Encoder for RawEncoder {
    type Item = bytes::Bytes;
    type Error = tonic::Status;

    fn encode(
        &mut self,
        item: bytes::Bytes,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        use bytes::BufMut;
        dst.put_slice(&item);
        Ok(())
    }
}

/// Loads the example ruleset `docs/examples/NAME/NAME.toml` inline as `NAME`, and creates a
/// sheet of it; returns the sheet's id.
async fn sheet_of_example(c: &mut sheetd::cli::client::Client, name: &str) -> String {
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../docs/examples/{name}/{name}.toml"));
    let inline_text = std::fs::read_to_string(file).expect("the example");
    let load = pb::LoadRulesetRequest { id: name.into(), paths: vec![], inline_text, dialect: String::new() };
    assert!(c.load_ruleset(load).await.expect("loads").into_inner().ok);
    let create = pb::CreateSheetRequest { ruleset_id: name.into(), ..Default::default() };
    c.create_sheet(create).await.expect("creates").into_inner().sheet.expect("info").id
}

/// A guard that does not hold: FAILED_PRECONDITION, a GUARD violation naming the operation, the
/// code as ErrorInfo's reason; the sheet is unchanged. A batch whose guard holds is logged
/// with it and replays after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_that_does_not_hold_is_a_failed_precondition() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    let id = sheet_of_example(&mut c, "shop").await;
    let purse = r#"{"set_input": {"channel": "Purse", "value": 4}}"#;
    let sword = |id: &str| format!(r#"{{"add_object": {{"kind": "ITEM", "key": "Sword", "id": "{id}"}}}}"#);
    let can_pay = r#"{"require": {"formula": "Gold >= 0", "message": "can pay"}}"#;
    c.apply(apply(&id, Some(0), ops(&[purse]))).await.expect("purse");
    let r = c.apply(apply(&id, Some(1), ops(&[&sword("s1"), can_pay]))).await.expect("paid").into_inner();
    assert_eq!(r.revision, 2);
    let e = c.apply(apply(&id, Some(2), ops(&[&sword("s2"), can_pay]))).await.expect_err("cannot pay");
    assert_eq!(e.code(), Code::FailedPrecondition);
    let failure = e.get_details_precondition_failure().expect("PreconditionFailure");
    assert_eq!(
        (failure.violations[0].r#type.as_str(), failure.violations[0].subject.as_str()),
        ("GUARD", "operations[1]")
    );
    assert!(failure.violations[0].description.contains("(read Gold = -2)"), "{failure:?}");
    assert_eq!(e.get_details_error_info().map(|i| i.reason), Some("solver.guard_failed".to_owned()));
    // A guard's bad formula is a bad request, its field the guard's formula.
    let bad = r#"{"require": {"formula": "Gold >=", "message": "broken"}}"#;
    let e = c.apply(apply(&id, Some(2), ops(&[bad]))).await.expect_err("bad formula");
    assert_eq!(e.code(), Code::InvalidArgument);
    let bad = e.get_details_bad_request().expect("BadRequest");
    assert_eq!(bad.field_violations[0].field, "operations[0].require.formula");
    let gold =
        |v: pb::ValuesResponse| v.values.iter().find(|v| v.r#ref == "Gold").and_then(|v| v.value.clone());
    let values = pb::ValuesRequest { sheet_id: id.clone(), ..Default::default() };
    let before = gold(c.values(values.clone()).await.expect("values").into_inner());
    drop(c);
    server.stop();
    // The log holds the guard; the sheet replays to the same values.
    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    let after = c.values(values).await.expect("values after a restart").into_inner();
    assert_eq!(after.revision, 2);
    assert_eq!(gold(after), before);
    drop(c);
    server.stop();
}

/// Stocks through the API (`docs/examples/village`): a payout adjusted at the time stays paid,
/// an adjustment past a bound that rejects is FAILED_PRECONDITION with a BOUNDS violation, and
/// the log replays the adjustments to the same values after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stocks_are_adjusted_at_the_time_and_replay() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    let id = sheet_of_example(&mut c, "village").await;
    let set = |ch: &str, v: i64| format!(r#"{{"set_input": {{"channel": "{ch}", "value": {v}}}}}"#);
    let adjust = |ch: &str, by: &str| format!(r#"{{"adjust": {{"channel": "{ch}", "by": "{by}"}}}}"#);
    c.apply(apply(&id, Some(0), ops(&[&set("Hired", 3), &set("Gold", 10)]))).await.expect("start");
    let r = c.apply(apply(&id, Some(1), ops(&[&adjust("Gold", "2 * Workers")]))).await.expect("payout");
    assert_eq!(r.into_inner().changes.len(), 1);
    c.apply(apply(&id, Some(2), ops(&[&set("Hired", 5)]))).await.expect("hire");
    let e =
        c.apply(apply(&id, Some(3), ops(&[&adjust("Gold", "-Workers * 4")]))).await.expect_err("too dear");
    assert_eq!(e.code(), Code::FailedPrecondition);
    let failure = e.get_details_precondition_failure().expect("PreconditionFailure");
    assert_eq!(
        (failure.violations[0].r#type.as_str(), failure.violations[0].subject.as_str()),
        ("BOUNDS", "operations[0]")
    );
    assert_eq!(e.get_details_error_info().map(|i| i.reason), Some("solver.out_of_bounds".to_owned()));
    // An amount that does not compile is a bad request at the adjustment's formula.
    let e =
        c.apply(apply(&id, Some(3), ops(&[&adjust("Gold", "Workers +")]))).await.expect_err("bad formula");
    assert_eq!(e.code(), Code::InvalidArgument);
    let bad = e.get_details_bad_request().expect("BadRequest");
    assert_eq!(bad.field_violations[0].field, "operations[0].adjust.by");
    let values = pb::ValuesRequest { sheet_id: id.clone(), ..Default::default() };
    let gold =
        |v: pb::ValuesResponse| v.values.iter().find(|v| v.r#ref == "Gold").and_then(|v| v.value.clone());
    let before = c.values(values.clone()).await.expect("values").into_inner();
    assert_eq!(before.revision, 3);
    let before = gold(before);
    assert_eq!(before.as_ref().map(sheetd::grpc::convert::show), Some("16".to_owned()));
    drop(c);
    server.stop();
    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    assert_eq!(gold(c.values(values).await.expect("values after a restart").into_inner()), before);
    drop(c);
    server.stop();
}

/// Clocks through the API (`docs/examples/battle`): an object added to last until Turn passes
/// 1 expires in the Apply whose tick passes it, and the reply says so; a clock moved back is
/// FAILED_PRECONDITION; the log replays the expiry after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effects_expire_when_a_clock_passes_and_replay() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    let id = sheet_of_example(&mut c, "battle").await;
    let until = pb::Until { clock: "Turn".into(), on: None, after: "+1".into() };
    let shield = pb::AddObject {
        kind: "SPELL".into(),
        key: "Shield".into(),
        until: Some(until),
        ..Default::default()
    };
    let op = |op| pb::Operation { op: Some(op), cause: String::new() };
    use pb::operation::Op;
    c.apply(apply(&id, Some(0), vec![op(Op::AddObject(shield))])).await.expect("shield");
    let tick = || op(Op::Tick(pb::Tick { clock: "Turn".into(), on: None, by: String::new() }));
    let r = c.apply(apply(&id, Some(1), vec![tick()])).await.expect("tick").into_inner();
    assert!(r.expired.is_empty());
    let r = c.apply(apply(&id, Some(2), vec![tick()])).await.expect("tick").into_inner();
    assert_eq!(
        r.expired,
        [pb::Expired {
            what: "object `Shield`".into(),
            clock: "Turn".into(),
            after: "1".into(),
            now: "2".into()
        }]
    );
    let back = op(Op::SetClock(pb::SetClock { clock: "Turn".into(), on: None, to: "1".into() }));
    let e = c.apply(apply(&id, Some(3), vec![back])).await.expect_err("backwards");
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(e.get_details_error_info().map(|i| i.reason), Some("sheet.clock_backwards".to_owned()));
    let failure = e.get_details_precondition_failure().expect("PreconditionFailure");
    assert_eq!(failure.violations[0].r#type, "CLOCK");
    // Select: the instances of a scope whose formula holds now.
    let goblin = pb::AddObject { kind: "CREATURE".into(), key: "Goblin".into(), ..Default::default() };
    c.apply(apply(&id, Some(3), vec![op(Op::AddObject(goblin))])).await.expect("goblin");
    let select = |scope: &str, w: &str| pb::SelectRequest {
        sheet_id: id.clone(),
        scope: scope.into(),
        r#where: w.into(),
    };
    let r = c.select(select("PC.CREATURE", "Speed > 20")).await.expect("select").into_inner();
    assert_eq!((r.revision, r.ids), (4, vec!["Goblin".to_owned()]));
    let r = c.select(select("PC.CREATURE", "Speed > 40")).await.expect("select").into_inner();
    assert!(r.ids.is_empty());
    let e = c.select(select("PC.NOPE", "1 == 1")).await.expect_err("unknown scope");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(e.get_details_error_info().map(|i| i.reason), Some("solver.unknown_scope".to_owned()));
    let ac = |v: pb::ValuesResponse| v.values.iter().find(|v| v.r#ref == "AC").and_then(|v| v.value.clone());
    let values = pb::ValuesRequest { sheet_id: id.clone(), ..Default::default() };
    let at1 = pb::ValuesRequest { revision: Some(1), ..values.clone() };
    assert_eq!(
        ac(c.values(at1.clone()).await.expect("at 1").into_inner()).as_ref().map(sheetd::grpc::convert::show),
        Some("14".to_owned())
    );
    let now = ac(c.values(values.clone()).await.expect("values").into_inner());
    assert_eq!(now.as_ref().map(sheetd::grpc::convert::show), Some("10".to_owned()));
    drop(c);
    server.stop();
    let server = Server::start(&data, &[]);
    let mut c = server.client().await;
    assert_eq!(ac(c.values(values).await.expect("after a restart").into_inner()), now);
    assert_eq!(
        ac(c.values(at1).await.expect("at 1").into_inner()).as_ref().map(sheetd::grpc::convert::show),
        Some("14".to_owned())
    );
    drop(c);
    server.stop();
}

/// CreateSheet takes the same operations as Apply: a new sheet made with a lasting effect, a
/// tick that expires it and a guard, in its first batch; a guard that fails refuses the sheet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sheet_is_created_with_clocks_and_guards() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Server::start(&dir.path().join("data"), &[]);
    let mut c = server.client().await;
    sheet_of_example(&mut c, "battle").await;
    use pb::operation::Op;
    let op = |op| pb::Operation { op: Some(op), cause: String::new() };
    let until = pb::Until { clock: "Turn".into(), on: None, after: "+0".into() };
    let shield = pb::AddObject {
        kind: "SPELL".into(),
        key: "Shield".into(),
        until: Some(until),
        ..Default::default()
    };
    let tick = op(Op::Tick(pb::Tick { clock: "Turn".into(), on: None, by: "1".into() }));
    let guard =
        |f: &str| op(Op::Require(pb::Require { formula: f.into(), message: "checked".into(), on: None }));
    let create = |ops| pb::CreateSheetRequest {
        ruleset_id: "battle".into(),
        id: String::new(),
        operations: ops,
        variables: Vec::new(),
    };
    let made = c
        .create_sheet(create(vec![
            op(Op::AddObject(shield.clone())),
            guard("AC == 14"),
            tick.clone(),
            guard("AC == 10"),
        ]))
        .await
        .expect("created")
        .into_inner();
    let value = |name: &str| made.values.iter().find(|v| v.r#ref == name).and_then(|v| v.value.clone());
    let shown = |v: Option<pb::Value>| v.as_ref().map(sheetd::grpc::convert::show);
    assert_eq!((shown(value("Turn")), shown(value("AC"))), (Some("1".into()), Some("10".into())));
    let e = c
        .create_sheet(create(vec![op(Op::AddObject(shield)), guard("AC == 10")]))
        .await
        .expect_err("the guard fails");
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert_eq!(e.get_details_error_info().map(|i| i.reason), Some("solver.guard_failed".to_owned()));
    drop(c);
    server.stop();
}
