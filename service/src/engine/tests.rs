//! The engine's behaviour through its domain API, without a server.

use super::*;
use data::SheetOp;
use data::record::Variable;
use solver::{ModKind, ModifierSpec, Operation};

const RULES: &str = "[ruleset]\nname = \"t\"\nglobal = \"PC\"\n[defaults]\nNUMBER = 0\n\
                     [variables.PC]\nBase = \"NUMBER\"\n[global]\nmodify = [{ var = \"Base\", set = \"10\" }]\n";

fn open(dir: &std::path::Path) -> Engine {
    Engine::open(EngineConfig { data_dir: dir.to_owned(), ..Default::default() }).expect("open")
}

fn base(values: &[Variable]) -> String {
    values.iter().find(|v| v.var == "Base").map(|v| v.value.to_string()).unwrap_or_default()
}

fn armor(on: bool) -> SheetOp {
    if on {
        SheetOp::AddObject {
            kind: "EQUIPMENT".into(),
            key: "Ring Hauberk".into(),
            id: Some("armor".into()),
            parent: None,
        }
    } else {
        SheetOp::RemoveObject("armor".into())
    }
}

/// A request holds the version it loaded; a reload meanwhile changes what later requests get,
/// not what the one in flight computes.
#[test]
fn requests_in_flight_finish_on_the_version_they_started_with() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = open(dir.path());
    assert!(engine.load_ruleset("t", NewRuleset::Inline(RULES.into())).expect("load").ok);
    let in_flight = engine.ruleset_entry("t").expect("entry").current.load_full();
    assert!(engine.reload_ruleset("t", Some(RULES.replace("10", "20")), Some(1)).expect("reload").ok);
    let old = data::Character::new(in_flight.ruleset().clone()).expect("sheet");
    assert_eq!((in_flight.version, base(&data::record::values(&old))), (1, "10".to_owned()));
    assert_eq!(base(&engine.solve("t", &[], &[]).expect("values")), "20");
    // A failed reload swaps nothing.
    let r = engine.reload_ruleset("t", Some(RULES.replace("\"10\"", "\"Nope\"")), None).expect("answers");
    assert!(!r.ok && !r.diagnostics.is_empty());
    assert_eq!(engine.ruleset_entry("t").expect("entry").current.load().version, 2);
}

/// A reload that expects a version no longer serving swaps nothing; a delete that expects a
/// revision the sheet moved past deletes nothing. Both name what they found.
#[test]
fn preconditions_on_reload_and_delete_hold() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = open(dir.path());
    assert!(engine.load_ruleset("t", NewRuleset::Inline(RULES.into())).expect("load").ok);
    assert!(engine.reload_ruleset("t", Some(RULES.replace("10", "20")), Some(1)).expect("reload").ok);
    let e = engine.reload_ruleset("t", Some(RULES.replace("10", "30")), Some(1)).expect_err("stale");
    assert_eq!(e.to_string(), "ruleset `t` is at version 2, not the expected 1");
    assert_eq!(e.reason(), "ruleset.version_conflict");
    assert_eq!(base(&engine.solve("t", &[], &[]).expect("values")), "20", "the stale reload swapped nothing");

    let (sheet, _) = engine.create_sheet("", None, vec![]).expect("create");
    engine.apply(&sheet.id, None, vec![armor(true)]).expect("apply");
    let e = engine.delete_sheet(&sheet.id, Some(0)).expect_err("stale");
    assert_eq!(e, EngineError::revision_conflict(&sheet.id, 0, 1));
    assert_eq!(engine.sheet_info(&sheet.id).expect("still there").revision, 1);
    engine.delete_sheet(&sheet.id, Some(1)).expect("delete at the revision seen");
    assert!(matches!(engine.sheet_info(&sheet.id), Err(EngineError::NotFound { .. })));
}

/// A retried Apply with the same request id is answered, not applied again — even when it
/// expected the revision the first attempt moved past; the same id with other operations is
/// refused; a sheet forgets ids past the last RECENT_REQUESTS.
#[test]
fn an_apply_with_a_request_id_applies_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = open(dir.path());
    let (sheet, _) = engine.create_sheet("", None, vec![]).expect("create");
    let key = |id: &str, fingerprint| Some(RequestKey { id: id.to_owned(), fingerprint });
    let first = engine.apply_once(&sheet.id, Some(0), vec![armor(true)], key("r1", 1)).expect("apply");
    let again = engine.apply_once(&sheet.id, Some(0), vec![armor(true)], key("r1", 1)).expect("retry");
    assert_eq!((first.revision, again.revision), (1, 1));
    assert_eq!(again.changes, first.changes);
    assert_eq!(engine.sheet_info(&sheet.id).expect("info").revision, 1, "applied once");
    let e = engine.apply_once(&sheet.id, None, vec![armor(false)], key("r1", 2)).expect_err("reused");
    assert_eq!(e.reason(), "request.request_id_reused");
    // Without an id, or with a new one, it applies.
    engine.apply_once(&sheet.id, None, vec![armor(false)], None).expect("no id");
    for i in 0..RECENT_REQUESTS {
        let op = armor(i % 2 == 0);
        engine.apply_once(&sheet.id, None, vec![op], key(&format!("n{i}"), 3)).expect("apply");
    }
    let revision = engine.sheet_info(&sheet.id).expect("info").revision;
    assert_eq!(revision, 2 + RECENT_REQUESTS as u64);
    // `r1` is forgotten: it applies as new (and fails as an Apply expecting revision 0 would).
    let e = engine.apply_once(&sheet.id, Some(0), vec![armor(true)], key("r1", 1)).expect_err("forgotten");
    assert_eq!(e, EngineError::revision_conflict(&sheet.id, 0, revision));
}

#[test]
fn generated_sheet_ids_skip_ids_clients_chose() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = open(dir.path());
    engine.create_sheet("", Some("sheet-1"), vec![]).expect("explicit id");
    let (generated, _) = engine.create_sheet("", None, vec![]).expect("generated id");
    assert_eq!(generated.id, "sheet-2");
    let e = engine.create_sheet("", Some("sheet-1"), vec![]).expect_err("taken");
    assert!(matches!(e, EngineError::AlreadyExists { what: Resource::Sheet, .. }), "{e:?}");
    let e = engine.create_sheet("", Some("no spaces"), vec![]).expect_err("invalid");
    assert!(matches!(e, EngineError::Invalid { .. }), "{e:?}");
}

/// Errors are domain values: a stale revision is a conflict naming both revisions, a cycle is a
/// precondition with its path, an unknown object names the operation.
#[test]
fn rejections_say_what_and_where() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = open(dir.path());
    let (sheet, _) = engine.create_sheet("", None, vec![]).expect("create");
    engine.apply(&sheet.id, Some(0), vec![armor(true)]).expect("apply");
    let e = engine.apply(&sheet.id, Some(0), vec![armor(false)]).expect_err("stale");
    assert_eq!(e, EngineError::revision_conflict(&sheet.id, 0, 1));
    let cycle = SheetOp::Solver(Operation::AddModifier(ModifierSpec::new(
        "loop",
        "ArmorBonus",
        ModKind::Add,
        "AC",
        "t",
    )));
    let e = engine.apply(&sheet.id, None, vec![armor(false), cycle]).expect_err("cycle");
    let EngineError::Precondition { problems, .. } = &e else { panic!("{e:?}") };
    assert_eq!((problems[0].operation, problems[0].code.as_str()), (Some(1), "solver.cycle"));
    assert!(problems[0].cycle.contains(&"AC".to_owned()), "{e:?}");
    let unknown =
        SheetOp::AddObject { kind: "EQUIPMENT".into(), key: "Moon Boots".into(), id: None, parent: None };
    let e = engine.apply(&sheet.id, None, vec![unknown]).expect_err("unknown");
    assert_eq!(e.reason(), "sheet.unknown_object");
    assert_eq!(engine.sheet_info(&sheet.id).expect("info").revision, 1, "nothing applied");
    let e = engine.values(&sheet.id, &[], Some(9)).expect_err("future");
    assert!(matches!(e, EngineError::OutOfRange(_)), "{e:?}");
}

/// Explain reads the dependency graph: a variable in error still shows every edge.
#[test]
fn explain_shows_every_edge_of_a_variable_in_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = open(dir.path());
    let broken = SheetOp::Solver(Operation::AddModifier(ModifierSpec::new(
        "zero",
        "AC",
        ModKind::Divide,
        "ArmorBonus",
        "t",
    )));
    let (sheet, _) = engine.create_sheet("", None, vec![broken]).expect("create");
    let x = engine.explain(&sheet.id, "ac", None).expect("explain");
    assert!(x.trace.value.is_err(), "AC divides by ArmorBonus, which is 0");
    let ac = &x.nodes[0];
    assert_eq!(ac.var.to_string(), "AC");
    let reads: Vec<String> = ac.reads.iter().map(|r| r.to_string()).collect();
    assert!(reads.contains(&"ArmorBonus".to_owned()), "the edge of the failing modifier: {reads:?}");
    assert!(ac.value.to_string().starts_with("error:"), "{}", ac.value);
}

/// WhyChanged over the last few revisions of a long history replays from the nearest
/// checkpoint, not from revision 0: its cost follows the range asked.
#[test]
fn why_changed_starts_from_the_nearest_checkpoint() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = open(dir.path());
    let (sheet, _) = engine.create_sheet("", None, vec![]).expect("create");
    let id = sheet.id;
    let n = 2 * CHECKPOINT_EVERY + 40;
    for r in 0..n {
        engine.apply(&id, Some(r), vec![armor(r % 2 == 0)]).expect("apply");
    }
    let before = engine.replayed_revisions();
    let near_end = engine.why_changed(&id, "AC", n - 10, None).expect("why");
    let replayed = engine.replayed_revisions() - before;
    assert_eq!(near_end.causes.len(), 10, "every revision toggled the armor");
    assert_eq!(
        replayed,
        n - 2 * CHECKPOINT_EVERY,
        "replayed from the checkpoint at {}",
        2 * CHECKPOINT_EVERY
    );
    // The same answer as a replay from the start (a fresh engine: no Apply checkpoints, and a
    // restore's checkpoints are states it replayed itself).
    drop(engine);
    let fresh = open(dir.path());
    fresh.checkpoints.forget(&id);
    let full = fresh.why_changed(&id, "AC", n - 10, None).expect("why");
    assert_eq!(fresh.replayed_revisions(), n + 1, "no checkpoint: from revision 0");
    assert_eq!(format!("{:?}", full.causes), format!("{:?}", near_end.causes));
    assert_eq!(format!("{:?}", full.to_trace), format!("{:?}", near_end.to_trace));
}

/// Loading a stored sheet a second time (over a shared store, the follower and a request can
/// both load one another server created) keeps the copy already served: a watcher subscribed
/// to it goes on seeing every change.
#[test]
fn a_second_load_of_a_served_sheet_keeps_its_watchers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = open(dir.path());
    let (sheet, _) = engine.create_sheet("", None, vec![]).expect("create");
    let mut watch = engine.watch(&sheet.id, None).expect("watch");
    let record = engine.store.sheet_record(&sheet.id).expect("read").expect("stored");
    engine.restore_sheet(&record).expect("loaded again");
    assert!(Arc::ptr_eq(&watch.sheet, &engine.sheet(&sheet.id).expect("served")), "the served copy stays");
    engine.apply(&sheet.id, Some(0), vec![armor(true)]).expect("apply");
    let event = watch.rx.try_recv().expect("the watcher hears the change");
    assert_eq!(event.revision, 1);
}
