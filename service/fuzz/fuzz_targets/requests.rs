//! Fuzz target: arbitrary requests through the daemon's request path — protobuf decoding (raw
//! bytes, and structured requests encoded then decoded), then the engine (create, apply, load
//! and reload rulesets, values, explain, why-changed, watch replays, batch, delete) and the
//! status policy (clipping). Nothing may panic; every rejection must be a status that fits a
//! stock client's limits.
//!
//! Run from `service/fuzz/` (see docs/ARCHITECTURE.md, "Testing"):
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run requests -s none -- -max_total_time=1800`

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use sheetd::proto as pb;
use sheetd::server::engine::{Engine, EngineConfig};
use sheetd::server::policy::{self, Limits, MAX_STATUS_DETAILS, MAX_STATUS_MESSAGE};
use std::path::PathBuf;
use std::sync::OnceLock;

/// One engine for the whole run, its store on tmpfs when there is one (fsync is then cheap).
fn engine() -> &'static Engine {
    static ENGINE: OnceLock<(Engine, PathBuf)> = OnceLock::new();
    &ENGINE
        .get_or_init(|| {
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
            (Engine::open(config).expect("engine"), dir)
        })
        .0
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
    let op = match u.int_in_range(0..=8)? {
        0 => Op::AddObject(pb::AddObject {
            kind: pick(u, KINDS)?,
            key: pick(u, KEYS)?,
            id: if bool::arbitrary(u)? { Some(pick(u, IDS)?) } else { None },
            parent: if u.ratio(1, 4)? { Some(pick(u, IDS)?) } else { None },
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
        }),
        4 => Op::RemoveModifier(pick(u, IDS)?),
        5 => Op::RemoveSource(String::arbitrary(u)?),
        6 => Op::AddInstance(pb::AddInstance {
            key: pick(u, IDS)?,
            scope: pick(u, &["PC.EQUIPMENT", "PC.STAT", "PC"])?,
            parent: None,
        }),
        7 => Op::RemoveInstance(pick(u, IDS)?),
        _ => return Ok(pb::Operation { op: None }),
    };
    Ok(pb::Operation { op: Some(op) })
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

/// A rejection as it would leave the server must fit stock clients' limits.
fn check(r: Result<impl Sized, tonic::Status>) {
    if let Err(s) = r {
        let s = policy::clip_status(s);
        assert!(s.message().len() <= MAX_STATUS_MESSAGE + 4, "message of {} bytes", s.message().len());
        assert!(s.details().len() <= MAX_STATUS_DETAILS, "details of {} bytes", s.details().len());
    }
}

fn run(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let e = engine();
    match u.int_in_range(0..=11)? {
        // Raw bytes as each request type: decoding must fail cleanly or yield a request the
        // engine handles.
        0 => {
            let bytes: Vec<u8> = Vec::arbitrary(u)?;
            if let Ok(r) = pb::ApplyRequest::decode(bytes.as_slice()) {
                check(e.apply(&r));
            }
            if let Ok(r) = pb::CreateSheetRequest::decode(bytes.as_slice()) {
                check(e.create_sheet(&r));
            }
            if let Ok(r) = pb::LoadRulesetRequest::decode(bytes.as_slice()) {
                check(e.load_ruleset(&r));
            }
        }
        1 | 2 => {
            let r = wire(&pb::CreateSheetRequest {
                ruleset_id: pick(u, &["", "starter", "tiny", "nope"])?,
                id: pick(u, SHEETS)?,
                operations: operations(u)?,
            });
            check(e.create_sheet(&r));
        }
        3 | 4 => {
            let r = wire(&pb::ApplyRequest {
                sheet_id: pick(u, SHEETS)?,
                expected_revision: revision(u)?,
                operations: operations(u)?,
            });
            check(e.apply(&r));
        }
        5 => {
            let inline = if bool::arbitrary(u)? { String::arbitrary(u)? } else { String::new() };
            let paths = if inline.is_empty() || bool::arbitrary(u)? { vec![pick(u, PATHS)?] } else { vec![] };
            let r = wire(&pb::LoadRulesetRequest {
                id: pick(u, &["tiny", "t2", "x.y", ""])?,
                paths,
                inline_text: inline,
            });
            check(e.load_ruleset(&r));
        }
        6 => {
            let r = wire(&pb::ReloadRulesetRequest {
                id: pick(u, &["tiny", "t2", "starter", "nope"])?,
                inline_text: if bool::arbitrary(u)? { String::arbitrary(u)? } else { String::new() },
            });
            check(e.reload_ruleset(&r));
        }
        7 => {
            let variables = (0..u.int_in_range(0..=3)?).map(|_| pick(u, VARS)).collect::<Result<_, _>>()?;
            let r =
                wire(&pb::ValuesRequest { sheet_id: pick(u, SHEETS)?, variables, revision: revision(u)? });
            check(e.values(&r));
        }
        8 => {
            let r = wire(&pb::ExplainRequest { sheet_id: pick(u, SHEETS)?, variable: pick(u, VARS)? });
            check(e.explain(&r));
        }
        9 => {
            let r = wire(&pb::WhyChangedRequest {
                sheet_id: pick(u, SHEETS)?,
                variable: pick(u, VARS)?,
                from_revision: u.int_in_range(0..=40)?,
                to_revision: revision(u)?,
            });
            check(e.why_changed(&r));
        }
        10 => {
            let id = pick(u, SHEETS)?;
            match e.watch(&id, revision(u)?) {
                Ok(sub) => check(e.replay_chunk(&id, *sub.replay.start(), *sub.replay.end(), 8)),
                Err(s) => check(Err::<(), _>(s)),
            }
            let item = wire(&pb::BatchItem {
                id: String::arbitrary(u)?,
                ruleset_id: pick(u, &["", "tiny", "nope"])?,
                operations: operations(u)?,
                variables: vec![],
            });
            let _ = e.solve_one(&item);
        }
        _ => {
            if u.ratio(1, 4)? {
                check(e.delete_sheet(&pick(u, SHEETS)?));
            } else {
                check(e.upgrade(&pick(u, SHEETS)?));
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
