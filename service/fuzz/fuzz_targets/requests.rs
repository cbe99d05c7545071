//! Fuzz target: arbitrary requests through the daemon's request path — protobuf decoding (raw
//! bytes, and structured requests encoded then decoded), then the gRPC service (conversion to
//! the domain, the engine: create, apply, load and reload rulesets, values, explain,
//! why-changed, watch replays, batch, delete; errors as standard statuses, clipped). Nothing
//! may panic; every rejection must be a status that fits a stock client's limits.
//!
//! Run from `service/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run requests -s none -- -max_total_time=1800`

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use sheetd::engine::policy::{MAX_STATUS_DETAILS, MAX_STATUS_MESSAGE};
use sheetd::engine::{Engine, EngineConfig, Limits};
use sheetd::grpc::api::Api;
use sheetd::grpc::proto::{self as pb, sheetd_service_server::SheetdService};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use tonic::Request;

/// One service for the whole run (its store on tmpfs when there is one: fsync is then cheap),
/// with a runtime to drive its calls.
type Service = (Api, Arc<Engine>, tokio::runtime::Runtime, PathBuf);

fn service() -> &'static Service {
    static SERVICE: OnceLock<Service> = OnceLock::new();
    SERVICE.get_or_init(|| {
        let base = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" };
        let dir = PathBuf::from(base).join(format!("sheetd-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let root = dir.join("rulesets");
        std::fs::create_dir_all(&root).expect("ruleset root");
        std::fs::write(root.join("tiny.toml"), TINY).expect("ruleset file");
        std::fs::write(root.join("broken.toml"), "[ruleset\nname = ").expect("ruleset file");
        let mut limits = Limits::default();
        limits.max_sheets = 64;
        let config = EngineConfig {
            data_dir: dir.join("data"),
            limits,
            ruleset_roots: vec![root],
            ..Default::default()
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let engine = Arc::new(Engine::open(config).expect("engine"));
        // The sender is leaked: the service never shuts down during the run.
        let (tx, shutdown) = tokio::sync::watch::channel(false);
        std::mem::forget(tx);
        (Api::new(engine.clone(), shutdown), engine, runtime, dir)
    })
}

const TINY: &str = "[ruleset]\nname = \"tiny\"\nglobal = \"PC\"\n[defaults]\nNUMBER = 0\n[variables.PC]\n\
                    Base = \"NUMBER\"\nTotal = \"NUMBER\"\n[global]\nmodify = [\n  { var = \"Base\", set = \"10\" },\n  \
                    { var = \"Total\", set = \"Base + 1\" },\n]\n";

/// A string: mostly one of a few that mean something to the starter ruleset, else anything.
fn pick(u: &mut Unstructured<'_>, known: &[&str]) -> arbitrary::Result<String> {
    if u.ratio(3, 4)? { Ok((*u.choose(known)?).to_owned()) } else { String::arbitrary(u) }
}

const SHEETS: &[&str] = &["sheet-1", "sheet-2", "a", "sheet-3", "x.y", ""];
const KINDS: &[&str] = &["EQUIPMENT", "RACE", "SIZE", "FEAT", "CONDITION", "EQUIPMOD", "STAT"];
const KEYS: &[&str] = &["Ring Hauberk", "Plated Harness", "Stoneborn", "Large", "Shield Ward", "Keen"];
const VARS: &[&str] = &["AC", "STR", "STR.Mod", "Walk.Speed", "HP", "Level", "armor.ArmorAC", "Nope"];
const IDS: &[&str] = &["armor", "harness", "m1", "STR", "armor#1", "x"];
const TYPES: &[&str] = &["SET", "ADD", "MULTIPLY", "DIVIDE", "MIN", "MAX", "APPEND", "BOGUS"];
const FORMULAS: &[&str] =
    &["1", "STR + 2", "floor((AC-10)/2)", "1/0", "if(1, 2", "AC", "max(AC, 3) * 99999999999999999999"];
const CHANNELS: &[&str] = &["StatScore", "Ranks", "Nope"];
const PATHS: &[&str] = &[
    "tiny.toml",
    "broken.toml",
    "/etc/passwd",
    "../../etc/passwd",
    "/dev/zero",
    "/proc/self/fd/0",
    "missing.toml",
];

fn value(u: &mut Unstructured<'_>) -> arbitrary::Result<pb::Value> {
    use pb::value::Kind;
    let kind = match u.int_in_range(0..=4)? {
        0 => Kind::Number(pick(u, &["14", "-3", "2.5", "1e5", "99999999999999999999999999999"])?),
        1 => Kind::Boolean(bool::arbitrary(u)?),
        2 => Kind::Text(String::arbitrary(u)?),
        3 => Kind::List(pb::ValueList { items: vec![] }),
        _ => Kind::Error(pb::ValueError::default()),
    };
    Ok(pb::Value { format: String::new(), kind: Some(kind) })
}

fn operation(u: &mut Unstructured<'_>) -> arbitrary::Result<pb::Operation> {
    use pb::operation::Op;
    let op = match u.int_in_range(0..=15)? {
        0 => Op::AddObject(pb::AddObject {
            kind: pick(u, KINDS)?,
            key: pick(u, KEYS)?,
            id: if bool::arbitrary(u)? { Some(pick(u, IDS)?) } else { None },
            parent: if u.ratio(1, 4)? { Some(pick(u, IDS)?) } else { None },
            until: until(u)?,
        }),
        1 => Op::RemoveObject(pick(u, IDS)?),
        2 => Op::SetInput(pb::SetInput {
            channel: pick(u, CHANNELS)?,
            on: if bool::arbitrary(u)? { Some(pick(u, &["STR", "DEX", "armor"])?) } else { None },
            value: if u.ratio(7, 8)? { Some(value(u)?) } else { None },
        }),
        3 => Op::AddModifier(pb::AddModifier {
            id: pick(u, IDS)?,
            var: pick(u, VARS)?,
            on: if u.ratio(1, 4)? { Some(pick(u, IDS)?) } else { None },
            from: if u.ratio(1, 8)? { Some(pick(u, IDS)?) } else { None },
            kind: pick(u, TYPES)?,
            value: pick(u, FORMULAS)?,
            priority: u.int_in_range(0..=200)?,
            source: String::arbitrary(u)?,
            condition: if u.ratio(1, 4)? { Some(pick(u, FORMULAS)?) } else { None },
            until: until(u)?,
        }),
        4 => Op::RemoveModifier(pick(u, IDS)?),
        5 => Op::RemoveSource(String::arbitrary(u)?),
        6 => Op::AddInstance(pb::AddInstance {
            key: pick(u, IDS)?,
            scope: pick(u, &["PC.EQUIPMENT", "PC.STAT", "PC"])?,
            parent: None,
        }),
        7 => Op::RemoveInstance(pick(u, IDS)?),
        // Guards, stocks and clocks (the fuzz ruleset has none: their errors), and the game
        // steps, which go alone in a request.
        8 => Op::Require(pb::Require {
            formula: pick(u, FORMULAS)?,
            message: String::arbitrary(u)?,
            on: if u.ratio(1, 4)? { Some(pick(u, IDS)?) } else { None },
        }),
        9 => Op::Adjust(pb::Adjust { channel: pick(u, CHANNELS)?, on: None, by: pick(u, FORMULAS)? }),
        10 => Op::Tick(pb::Tick { clock: String::arbitrary(u)?, on: None, by: String::arbitrary(u)? }),
        11 => {
            Op::SetClock(pb::SetClock { clock: String::arbitrary(u)?, on: None, to: String::arbitrary(u)? })
        }
        12 => Op::Emit(pb::Emit {
            event: String::arbitrary(u)?,
            args: vec![pb::EventArg { name: String::arbitrary(u)?, value: String::arbitrary(u)? }],
        }),
        13 => Op::Choose(pb::Choose { choice: u64::arbitrary(u)?, picks: Vec::arbitrary(u)? }),
        14 => Op::Roll(pb::Roll { die: String::arbitrary(u)?, value: i64::arbitrary(u)? }),
        _ => return Ok(pb::Operation { op: None, cause: String::new() }),
    };
    // A client may send a cause (the server's output): it must be ignored or refused.
    let cause = if u.ratio(1, 16)? { String::arbitrary(u)? } else { String::new() };
    Ok(pb::Operation { op: Some(op), cause })
}

/// How long an added object or modifier lasts, sometimes.
fn until(u: &mut Unstructured<'_>) -> arbitrary::Result<Option<pb::Until>> {
    if !u.ratio(1, 4)? {
        return Ok(None);
    }
    Ok(Some(pb::Until { clock: String::arbitrary(u)?, on: None, after: String::arbitrary(u)? }))
}

fn operations(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<pb::Operation>> {
    let n = u.int_in_range(0..=6)?;
    (0..n).map(|_| operation(u)).collect()
}

fn revision(u: &mut Unstructured<'_>) -> arbitrary::Result<Option<u64>> {
    Ok(if bool::arbitrary(u)? { Some(u.int_in_range(0..=40)?) } else { None })
}

/// Encodes then decodes, as the server receives it.
fn wire<M: Message + Default>(m: &M) -> M {
    M::decode(m.encode_to_vec().as_slice()).expect("a message decodes from its own encoding")
}

/// A rejection as it leaves the server must fit stock clients' limits, and its details must be
/// a `google.rpc.Status` with the same code.
fn check<T>(r: Result<T, tonic::Status>) {
    if let Err(s) = r {
        assert!(s.message().len() <= MAX_STATUS_MESSAGE + 4, "message of {} bytes", s.message().len());
        assert!(s.details().len() <= MAX_STATUS_DETAILS, "details of {} bytes", s.details().len());
        if !s.details().is_empty() {
            let rich = tonic_types::pb::Status::decode(s.details()).expect("details are a google.rpc.Status");
            assert_eq!(rich.code, s.code() as i32);
        }
    }
}

fn run(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let (api, engine, runtime, _) = service();
    let call = |f: std::pin::Pin<Box<dyn Future<Output = Result<(), tonic::Status>> + Send + '_>>| {
        check(runtime.block_on(f))
    };
    macro_rules! rpc {
        ($method:ident, $req:expr) => {{
            let req = $req;
            call(Box::pin(async move { api.$method(Request::new(req)).await.map(|_| ()) }))
        }};
    }
    match u.int_in_range(0..=11)? {
        // Raw bytes as each request type: decoding must fail cleanly or yield a request the
        // service handles.
        0 => {
            let bytes: Vec<u8> = Vec::arbitrary(u)?;
            if let Ok(r) = pb::ApplyRequest::decode(bytes.as_slice()) {
                rpc!(apply, r);
            }
            if let Ok(r) = pb::CreateSheetRequest::decode(bytes.as_slice()) {
                rpc!(create_sheet, r);
            }
            if let Ok(r) = pb::LoadRulesetRequest::decode(bytes.as_slice()) {
                rpc!(load_ruleset, r);
            }
        }
        1 | 2 => rpc!(
            create_sheet,
            wire(&pb::CreateSheetRequest {
                ruleset_id: pick(u, &["", "starter", "tiny", "nope"])?,
                id: pick(u, SHEETS)?,
                operations: operations(u)?,
                variables: Vec::new(),
            })
        ),
        3 | 4 => rpc!(
            apply,
            wire(&pb::ApplyRequest {
                sheet_id: pick(u, SHEETS)?,
                expected_revision: revision(u)?,
                operations: operations(u)?,
                variables: Vec::new(),
                request_id: pick(u, &["", "r1", "r2"])?,
            })
        ),
        5 => {
            let inline = if bool::arbitrary(u)? { String::arbitrary(u)? } else { String::new() };
            let paths = if inline.is_empty() || bool::arbitrary(u)? { vec![pick(u, PATHS)?] } else { vec![] };
            rpc!(
                load_ruleset,
                wire(&pb::LoadRulesetRequest {
                    id: pick(u, &["tiny", "t2", "x.y", ""])?,
                    paths,
                    inline_text: inline,
                    dialect: String::new()
                })
            )
        }
        6 => rpc!(
            reload_ruleset,
            wire(&pb::ReloadRulesetRequest {
                id: pick(u, &["tiny", "t2", "starter", "nope"])?,
                inline_text: if bool::arbitrary(u)? { String::arbitrary(u)? } else { String::new() },
                expected_version: revision(u)?,
            })
        ),
        7 => {
            let variables = (0..u.int_in_range(0..=3)?).map(|_| pick(u, VARS)).collect::<Result<_, _>>()?;
            rpc!(
                values,
                wire(&pb::ValuesRequest { sheet_id: pick(u, SHEETS)?, variables, revision: revision(u)? })
            )
        }
        8 => {
            rpc!(
                explain,
                wire(&pb::ExplainRequest {
                    sheet_id: pick(u, SHEETS)?,
                    variable: pick(u, VARS)?,
                    ..Default::default()
                })
            )
        }
        9 => rpc!(
            why_changed,
            wire(&pb::WhyChangedRequest {
                sheet_id: pick(u, SHEETS)?,
                variable: pick(u, VARS)?,
                from_revision: u.int_in_range(0..=40)?,
                to_revision: revision(u)?,
            })
        ),
        10 => {
            // A watch from a revision: its replayed events, read without waiting for live ones.
            let req = pb::WatchRequest {
                sheet_id: pick(u, SHEETS)?,
                variables: vec![],
                from_revision: revision(u)?,
            };
            call(Box::pin(async move {
                use futures_util::StreamExt;
                let mut stream = api.watch(Request::new(req)).await?.into_inner();
                while let Ok(Some(ev)) =
                    tokio::time::timeout(std::time::Duration::from_millis(1), stream.next()).await
                {
                    ev?;
                }
                Ok(())
            }));
            // One SolveBatch item, as the stream handles each.
            if let Ok(ops) = sheetd::grpc::convert::operations(
                wire(&pb::SolveBatchRequest { operations: operations(u)?, ..Default::default() }).operations,
            ) {
                let _ = engine.solve(&pick(u, &["", "tiny", "nope"])?, &ops, &[]);
            }
        }
        _ => {
            if u.ratio(1, 4)? {
                rpc!(
                    delete_sheet,
                    pb::DeleteSheetRequest { sheet_id: pick(u, SHEETS)?, expected_revision: revision(u)? }
                );
            } else {
                rpc!(upgrade, pb::UpgradeRequest { sheet_id: pick(u, SHEETS)? });
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
