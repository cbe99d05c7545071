//! Aggregates over the instances of a scope (`count`, `sum`, `min`, `max`), references to
//! one instance's variable (`@id.Var`) and reads through a variable holding an instance's id
//! (`Foreman.STR`), `docs/examples/guild/`: set up at load from the formulas the ruleset
//! writes, following the workers as they join, work and leave; and the load errors of each
//! written wrong, at its text.

mod common;

use common::{add, value};
use data::{Character, SheetOp};
use formula::Value;
use std::sync::Arc;

fn guild() -> Character {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/guild");
    let r = data::load(&[dir]).unwrap_or_else(|e| panic!("{e:?}"));
    Character::new(Arc::new(r)).unwrap()
}

fn busy(worker: &str, v: i64) -> SheetOp {
    SheetOp::SetInput { channel: "Busy".into(), on: Some(worker.into()), value: Value::Number(v.into()) }
}

fn row(c: &Character) -> [String; 4] {
    let shown = |r: &str| match c.sheet().value(r) {
        Ok(Ok(v)) => v.to_string(),
        Ok(Err(e)) => e.code.to_owned(),
        Err(e) => panic!("{r}: {e}"),
    };
    ["Payroll", "Idle", "Strongest", "Weakest"].map(shown)
}

#[test]
fn the_guild_follows_its_workers() {
    let mut c = guild();
    // No worker: no strongest (min and max of nothing have no value).
    assert_eq!(row(&c), ["0", "0", "solver.depends_on_error", "solver.depends_on_error"]);
    let e = c.sheet().value("max(PC.WORKER, STR)").unwrap().unwrap_err();
    assert_eq!((e.code, e.message.as_str()), ("solver.empty_aggregate", "no instance counts towards it"));
    c.apply(&[add("WORKER", "Porter", Some("porter"), None), add("WORKER", "Smith", Some("smith"), None)])
        .unwrap();
    assert_eq!(row(&c), ["7", "2", "16", "solver.depends_on_error"]);
    c.apply(&[busy("smith", 1)]).unwrap();
    assert_eq!(row(&c), ["7", "1", "16", "16"]);
    c.apply(&[add("WORKER", "Scribe", Some("scribe"), None), busy("scribe", 1)]).unwrap();
    assert_eq!(row(&c), ["10", "1", "16", "8"]);
    assert_eq!(value(&c, "SmithSTR"), "16", "`@smith.STR` reads the smith's STR by its id");
    c.apply(&[SheetOp::RemoveObject("smith".into())]).unwrap();
    assert_eq!(row(&c), ["5", "1", "14", "8"]);
    let e = c.sheet().value("@smith.STR").unwrap().unwrap_err();
    assert_eq!((e.code, e.message.as_str()), ("solver.missing_instance", "no instance `smith` on the sheet"));
    // Explain names each worker's part, from the worker.
    let t = c.sheet().trace("sum(PC.WORKER, Wage)").unwrap();
    let parts: Vec<String> = t.steps.iter().map(|s| format!("{} {}", s.modifier, s.instruction)).collect();
    assert_eq!(
        parts,
        [
            "sum(PC.WORKER, Wage)@porter part of sum(PC.WORKER, Wage)",
            "sum(PC.WORKER, Wage)@scribe part of sum(PC.WORKER, Wage)"
        ]
    );
    assert_eq!(
        value(&c, "scribe.part of sum(PC.WORKER, Wage)"),
        "3",
        "each worker's part, kept in the worker"
    );
    assert_eq!(value(&c, "count(PC.WORKER, Busy == 1)"), "1", "the rule's aggregate is set up too");
}

fn foreman(who: &str) -> SheetOp {
    SheetOp::SetInput { channel: "Foreman".into(), on: None, value: Value::String(who.into()) }
}

/// `Foreman.STR` reads the STR of the worker whose id the `Foreman` channel holds: none while
/// it names no worker on the sheet; the named worker's, followed as it changes; another's once
/// the channel names another — and explain says whose.
#[test]
fn the_foreman_is_read_through_the_channel_that_names_him() {
    let mut c = guild();
    let missing = "`Foreman` holds no id of an instance on the sheet that has `STR`";
    let e = c.sheet().value("Foreman.STR").unwrap().unwrap_err();
    assert_eq!((e.code, e.message.as_str()), ("solver.missing_instance", missing));
    c.apply(&[foreman("smith")]).unwrap();
    assert_eq!(c.sheet().value("Foreman.STR").unwrap().unwrap_err().message, missing, "no smith yet");
    c.apply(&[add("WORKER", "Porter", Some("porter"), None), add("WORKER", "Smith", Some("smith"), None)])
        .unwrap();
    assert_eq!(value(&c, "ForemanSTR"), "16");
    let t = c.sheet().trace("Foreman.STR").unwrap();
    let steps: Vec<String> = t.steps.iter().map(|s| format!("{} {}", s.modifier, s.instruction)).collect();
    assert_eq!(steps, ["Foreman.STR@PC:smith STR"]);
    let report = c.apply(&[foreman("porter")]).unwrap();
    assert_eq!(value(&c, "ForemanSTR"), "14");
    assert!(report.named(c.sheet()).iter().any(|ch| ch.var.to_string() == "ForemanSTR"));
    c.apply(&[SheetOp::RemoveObject("porter".into())]).unwrap();
    assert_eq!(c.sheet().value("Foreman.STR").unwrap().unwrap_err().message, missing);
}

/// Holders declared wrong, and reads through them written wrong, are errors at their text.
#[test]
fn holders_written_wrong_are_errors_at_their_text() {
    let head = "[scopes]\n\"PC.WORKER\" = \"PC\"\n[variables.\"PC.WORKER\"]\nWage = \"NUMBER\"\n";
    for (decl, modify, code, says) in [
        (
            "{ format = \"NUMBER\", holds = \"PC.WORKER\" }",
            "1",
            "data.bad_reference",
            "a variable that holds an instance's id is a STRING",
        ),
        (
            "{ format = \"STRING\", holds = \"PC.NOPE\" }",
            "1",
            "data.unknown_scope",
            "unknown scope `PC.NOPE`",
        ),
        (
            "{ format = \"STRING\", holds = \"PC.WORKER\" }",
            "Boss.Salary",
            "data.bad_reference",
            "`Boss` holds instances of PC.WORKER, which have no variable `Salary`",
        ),
    ] {
        let text = format!(
            "{head}[variables.PC]\nN = \"NUMBER\"\nBoss = {decl}\n[global]\nmodify = [{{ var = \"N\", set = \"{modify}\" }}]\n"
        );
        let errors = data::load_str(&text, "guild.toml").expect_err(decl);
        let e =
            errors.iter().find(|e| e.code.as_str() == code).unwrap_or_else(|| panic!("{decl}: {errors:?}"));
        let shown = e.to_string();
        let line = if modify == "1" { "guild.toml:7:" } else { "guild.toml:9:" };
        assert!(shown.starts_with(line), "{decl}: {shown}");
        assert!(shown.contains(says), "{decl}: {shown}");
    }
}

/// Each aggregate written wrong is an error at its text, and nothing loads.
#[test]
fn aggregates_written_wrong_are_errors_at_their_text() {
    let head = "[scopes]\n\"PC.WORKER\" = \"PC\"\n[variables.PC]\nN = \"NUMBER\"\n[variables.\"PC.WORKER\"]\nWage = \"NUMBER\"\n";
    for (modify, code, says) in [
        ("count(PC.NOPE)", "data.formula", "unknown scope `PC.NOPE` (known: PC, PC.WORKER)"),
        ("count(PC.WORKER, Wage > 1, 2)", "data.bad_aggregate", "write count(SCOPE) or count(SCOPE, WHERE)"),
        ("sum(PC.WORKER, Salary)", "data.bad_aggregate", "unknown variable `Salary` in scope PC.WORKER"),
        ("count(PC.WORKER, Wage)", "data.bad_aggregate", "produces NUMBER, but BOOLEAN is required"),
        ("count(PC)", "data.bad_aggregate", "the global scope has just one"),
        ("@smith.Salary", "data.bad_reference", "no scope declares a variable `Salary`"),
        ("@smith + 1", "data.bad_reference", "write @id.Var"),
    ] {
        let text = format!("{head}[global]\nmodify = [{{ var = \"N\", set = \"{modify}\" }}]\n");
        let errors = data::load_str(&text, "guild.toml").expect_err(modify);
        let e =
            errors.iter().find(|e| e.code.as_str() == code).unwrap_or_else(|| panic!("{modify}: {errors:?}"));
        let shown = e.to_string();
        assert!(shown.starts_with("guild.toml:8:"), "{modify}: {shown}");
        assert!(shown.contains(says), "{modify}: {shown}");
        assert!(shown.contains(code), "{modify}: {shown}");
    }
}

/// PCGen's `getOther("SCOPE", OBJECT, Var)` in a native ruleset: with the object's key as a
/// literal it reads the instance added under that key; with a variable that holds instances of
/// SCOPE it reads through it, as `Foreman.STR` does.
#[test]
fn get_other_reads_by_key_or_through_a_holder() {
    let guild = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/guild/guild.toml"),
    )
    .unwrap();
    let text = guild
        .replace(
            "  { var = \"ForemanSTR\", set = \"Foreman.STR\" },",
            "  { var = \"ForemanSTR\", set = \"getOther(\\\"PC.WORKER\\\", Foreman, STR)\" },\n  { var = \"KeySTR\", set = \"getOther(\\\"PC.WORKER\\\", \\\"Smith\\\", STR)\" },",
        )
        .replace("[variables.PC]\n", "[variables.PC]\nKeySTR = \"NUMBER\"\n");
    assert_ne!(text, guild);
    let r = data::load_str(&text, "guild.toml").unwrap_or_else(|e| panic!("{e:#?}"));
    let mut c = Character::new(Arc::new(r)).unwrap();
    c.apply(&[
        add("WORKER", "Smith", Some("smith"), None),
        add("WORKER", "Porter", None, None),
        foreman("Porter"),
    ])
    .unwrap();
    assert_eq!(value(&c, "ForemanSTR"), "14", "through the holder");
    c.apply(&[foreman("smith")]).unwrap();
    assert_eq!(value(&c, "ForemanSTR"), "16", "the edge moved with the holder");
    // `"Smith"` is the key: the instance added as `smith` is not it, so KeySTR has no value.
    let e = c.sheet().value("KeySTR").unwrap().unwrap_err();
    assert_eq!(e.code, "solver.depends_on_error");
    c.apply(&[SheetOp::RemoveObject("smith".into()), add("WORKER", "Smith", None, None)]).unwrap();
    assert_eq!(value(&c, "KeySTR"), "16", "the instance added under the key");
}
