//! End-to-end tests of `sheetd solve --scenario`, run as a user would.

use serde_json::{Value as Json, json};
use std::path::Path;
use std::process::{Command, Output};

fn sheetd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sheetd")).args(args).env("NO_COLOR", "1").output().expect("sheetd runs")
}

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/appendages.json").display().to_string()
}

fn json_lines(out: &Output) -> Vec<Json> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

#[test]
fn the_walkthrough_scenario_reports_every_step() {
    let out =
        sheetd(&["solve", "--scenario", &example(), "--json", "--trace", "AC", "--trace", "Appendages"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 15 + 1 + 2);
    assert_eq!(
        lines[0],
        json!({"step": 0, "changed": [{"var": "Fingers", "old": "0", "new": "5"}], "recomputed": 1})
    );
    // f) Toes, then Feet, then Appendages: each once, in topological order.
    assert_eq!(
        lines[5],
        json!({"step": 5, "changed": [
            {"var": "Toes", "old": "0", "new": "10"},
            {"var": "Feet", "old": "0", "new": "2"},
            {"var": "Appendages", "old": "12", "new": "24"}], "recomputed": 3})
    );
    // g) priority 1000 SET to the same value: one evaluation, no change.
    assert_eq!(lines[6], json!({"step": 6, "changed": [], "recomputed": 1}));
    // The cycle is rejected with its path; later steps still run.
    assert_eq!(lines[7]["step"], 7);
    assert_eq!(lines[7]["error"]["code"], "solver.cycle");
    assert_eq!(lines[7]["error"]["cycle"], json!(["Appendages", "Hands", "Appendages"]));
    assert_eq!(lines[7]["error"]["modifiers"], json!(["loop", "e"]));
    // A new instance's variables appear with old: null.
    assert_eq!(lines[8]["changed"], json!([{"var": "sword1.MyPlusValue", "old": null, "new": "0"}]));
    assert_eq!(lines[12]["changed"], json!([{"var": "AC", "old": "0", "new": "4"}]));
    // Removing the sword removes its part, their variables and the AC modifier from the part.
    assert_eq!(
        lines[13]["changed"],
        json!([
            {"var": "sword1#1.PartBonus", "old": "4", "new": null},
            {"var": "sword1.MyPlusValue", "old": "2", "new": null},
            {"var": "AC", "old": "4", "new": "0"}])
    );
    // Removing Template1 takes Fingers back to 5; Toes stays 10 (Template2's SET).
    let changed: Vec<&str> =
        lines[14]["changed"].as_array().unwrap().iter().map(|c| c["var"].as_str().unwrap()).collect();
    assert_eq!(changed, ["Fingers", "Hands", "Appendages"]);
    assert_eq!(
        lines[15],
        json!({"values": {"AC": "0", "Appendages": "18", "Feet": "2", "Fingers": "5", "Hands": "1", "Toes": "10"}})
    );
    let trace = &lines[17]["trace"];
    assert_eq!(trace["ref"], "Appendages");
    assert_eq!(trace["default"], "0");
    assert_eq!(trace["value"], "18");
    assert_eq!(
        trace["steps"][0],
        json!({"modifier": "e", "kind": "SET", "instruction": "Fingers+Toes+Hands+Feet", "priority": 0,
               "inherent_priority": 0, "source": "Rules", "condition": null,
               "reads": {"Fingers": "5", "Toes": "10", "Hands": "1", "Feet": "2"}, "after": "18"})
    );
}

#[test]
fn readable_output_without_json() {
    let out = sheetd(&["solve", "--scenario", &example(), "--trace", "Toes"]);
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("step 5: add_modifier f (3 recomputed)"), "{s}");
    assert!(s.contains("rejected [solver.cycle]: modifier `loop` on `Hands` would create a cycle: Appendages → Hands → Appendages"), "{s}");
    assert!(s.contains("trace of Toes (NUMBER):"), "{s}");
    assert!(s.contains("SET 10 (priority 1000/0, Template2)"), "{s}");
}

/// `docs/examples/cards`: a ruleset whose modifiers apply as added, beside one variable in
/// PCGen's order, run as the example's comment says.
#[test]
fn the_cards_example_applies_modifiers_as_added() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let (rules, game) =
        (docs.join("cards").display().to_string(), docs.join("cards-game.json").display().to_string());
    let out = sheetd(&["solve", "--ruleset", &rules, "--sheet", &game, "--json", "--trace", "BP"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out);
    assert_eq!(lines[2], json!({"values": {"BP": "1000", "PcgenBP": "800"}}));
    assert_eq!(lines[3]["trace"]["order"], "applied");
    let after: Vec<&Json> =
        lines[3]["trace"]["steps"].as_array().expect("steps").iter().map(|s| &s["after"]).collect();
    assert_eq!(after, [&json!("300"), &json!("500"), &json!("1000")]);
    let text = String::from_utf8_lossy(
        &sheetd(&["solve", "--ruleset", &rules, "--sheet", &game, "--trace", "BP"]).stdout,
    )
    .to_string();
    assert!(text.contains("trace of BP (NUMBER, modifiers in applied order):"), "{text}");
    // The scenario format declares the order per variable too.
    let dir = tempfile::tempdir().expect("temp dir");
    let p = dir.path().join("order.json");
    std::fs::write(
        &p,
        r#"{"variables": [{"name": "BP", "format": "NUMBER", "order": "applied"}, {"name": "X", "format": "NUMBER", "order": "sideways"}],
        "steps": []}"#,
    )
    .unwrap();
    let out = sheetd(&["solve", "--scenario", &p.display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("variable `X`: unknown order `sideways` (expected inherent or applied)"), "{err}");
}

/// `docs/examples/shop`: purchases as batches with a guard; the one that cannot be paid for is
/// rejected whole, naming the guard, the operation and what it read. A scenario takes `batch`
/// and `require` too.
#[test]
fn the_shop_example_rejects_what_cannot_be_paid_for() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let (rules, game) =
        (docs.join("shop").display().to_string(), docs.join("shop-game.json").display().to_string());
    let out = sheetd(&["solve", "--ruleset", &rules, "--sheet", &game, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out);
    assert_eq!(
        lines[1]["changed"],
        json!([{"var": "Load", "old": "0", "new": "2"}, {"var": "Gold", "old": "4", "new": "1"}])
    );
    assert_eq!(
        lines[2],
        json!({"step": 2, "error": {"code": "solver.guard_failed", "operation": 1,
            "message": "guard `can pay for the sword` failed: `Gold >= 0` is false (read Gold = -2)"}})
    );
    assert_eq!(lines[4], json!({"values": {"Gold": "1", "Load": "7", "Purse": "4"}}));
    let text = String::from_utf8_lossy(&sheetd(&["solve", "--ruleset", &rules, "--sheet", &game]).stdout)
        .to_string();
    assert!(text.contains("step 2: batch [add_object sword2, require can pay for the sword]"), "{text}");

    let dir = tempfile::tempdir().expect("temp dir");
    let p = dir.path().join("guards.json");
    std::fs::write(
        &p,
        r#"{"variables": [{"name": "Uses", "format": "NUMBER"}],
        "steps": [
          {"batch": [{"add_modifier": {"id": "u1", "var": "Uses", "type": "ADD", "value": "1"}},
                     {"require": {"formula": "Uses <= 1", "message": "once per day"}}]},
          {"batch": [{"add_modifier": {"id": "u2", "var": "Uses", "type": "ADD", "value": "1"}},
                     {"require": {"formula": "Uses <= 1", "message": "once per day"}}]},
          {"batch": [{"batch": []}]},
          {"require": {"formula": "Uses == 1", "message": "used once", "colour": "red"}}
        ]}"#,
    )
    .unwrap();
    let lines = json_lines(&sheetd(&["solve", "--scenario", &p.display().to_string(), "--json"]));
    assert_eq!(lines[0]["changed"], json!([{"var": "Uses", "old": "0", "new": "1"}]));
    // A STRING value marked `=` is a formula, in a step as in a ruleset.
    let p2 = dir.path().join("text.json");
    std::fs::write(
        &p2,
        r#"{"variables": [{"name": "Uses", "format": "NUMBER"}, {"name": "Label", "format": "STRING"}],
        "steps": [{"add_modifier": {"id": "u", "var": "Uses", "type": "SET", "value": "2"}},
                  {"add_modifier": {"id": "l", "var": "Label", "type": "SET", "value": "=\"used \" + text(Uses)"}},
                  {"add_modifier": {"id": "u2", "var": "Uses", "type": "ADD", "value": "1"}}]}"#,
    )
    .unwrap();
    let text = json_lines(&sheetd(&["solve", "--scenario", &p2.display().to_string(), "--json"]));
    assert_eq!(text[3], json!({"values": {"Uses": "3", "Label": "used 3"}}));
    assert_eq!(lines[1]["error"]["code"], "solver.guard_failed");
    assert_eq!(lines[1]["error"]["operation"], 1);
    assert_eq!(lines[2]["error"]["code"], "solver.bad_step");
    assert_eq!(lines[2]["error"]["operation"], 0);
    assert_eq!(lines[3]["error"]["code"], "solver.bad_step");
    assert_eq!(lines[4], json!({"values": {"Uses": "1"}}));
}

/// `docs/examples/village`: stocks adjusted by formulas evaluated at the time, within bounds;
/// `--why` names the adjustment and the formula's value then.
#[test]
fn the_village_example_adjusts_stocks() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let (rules, game) =
        (docs.join("village").display().to_string(), docs.join("village-game.json").display().to_string());
    let out = sheetd(&["solve", "--ruleset", &rules, "--sheet", &game, "--json", "--why", "Gold"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out);
    assert_eq!(lines[1]["changed"], json!([{"var": "Gold", "old": "10", "new": "16"}]));
    assert_eq!(
        lines[2]["changed"],
        json!([{"var": "Hired", "old": "3", "new": "5"}, {"var": "Workers", "old": "3", "new": "5"}])
    );
    assert_eq!(lines[3]["changed"], json!([{"var": "HP", "old": "12", "new": "0"}]));
    assert_eq!(lines[4]["error"]["code"], "solver.out_of_bounds");
    assert_eq!(
        lines[4]["error"]["message"],
        "adjustment of `Gold` by `-20` = -20 would make it -4, past its minimum `0` = 0"
    );
    assert_eq!(
        lines[6],
        json!({"values": {"Workers": "5", "MaxHP": "12", "Hired": "5", "Gold": "11", "HP": "5"}})
    );
    assert_eq!(lines[7]["why"]["step"], 5);
    assert_eq!(lines[7]["why"]["causes"][0]["description"], "adjust Gold by -Workers");
    let text = String::from_utf8_lossy(
        &sheetd(&["solve", "--ruleset", &rules, "--sheet", &game, "--why", "Gold"]).stdout,
    )
    .to_string();
    assert!(
        text.contains("modifier input:PC:Gold changed: SET 11 (input: adjust by `-Workers` = -5)"),
        "{text}"
    );
}

/// `docs/examples/battle`: effects that last until a clock passes a value expire in the step
/// that moves it, and the step's report and `--why` say so; a clock cannot go back.
#[test]
fn the_battle_example_expires_effects() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let (rules, game) =
        (docs.join("battle").display().to_string(), docs.join("battle-game.json").display().to_string());
    let out = sheetd(&["solve", "--ruleset", &rules, "--sheet", &game, "--json", "--why", "AC"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out);
    assert_eq!(
        lines[4],
        json!({"step": 4, "changed": [
            {"var": "Turn", "old": "0", "new": "1"},
            {"var": "Banner", "old": "Turn 0, AC 14", "new": "Turn 1, AC 14"}], "recomputed": 2})
    );
    assert_eq!(
        lines[5]["expired"],
        json!([{"what": "object `Shield`", "clock": "Turn", "after": "1", "now": "2"}])
    );
    assert_eq!(lines[6]["expired"][0]["what"], "modifier `slowed`");
    assert_eq!(lines[6]["expired"][0]["clock"], "Goblin.TurnEnds");
    assert_eq!(lines[7]["expired"][0]["what"], "object `Bless`");
    assert_eq!(lines[8]["error"]["code"], "sheet.clock_backwards");
    assert_eq!(lines[9]["values"]["Turn"], "5");
    assert_eq!(lines[9]["values"]["Banner"], "Turn 5, AC 10");
    assert_eq!(
        lines[10]["why"]["causes"][0]["description"],
        "tick Turn by 1 (object `Shield` expired when Turn passed 1)"
    );
    let text = String::from_utf8_lossy(&sheetd(&["solve", "--ruleset", &rules, "--sheet", &game]).stdout)
        .to_string();
    assert!(text.contains("step 5: tick Turn (3 recomputed)"), "{text}");
    assert!(text.contains("    expired: object `Shield` expired when Turn passed 1"), "{text}");
    // A read-only query over a scope's instances, after the steps.
    let select = |w: &str| {
        let out = sheetd(&["solve", "--ruleset", &rules, "--sheet", &game, "--json", "--select", w]);
        json_lines(&out).pop().expect("a line")
    };
    assert_eq!(
        select("PC.CREATURE: Speed > 20"),
        json!({"select": {"scope": "PC.CREATURE", "where": "Speed > 20", "ids": ["Goblin"]}})
    );
    assert_eq!(select("PC.CREATURE: TurnEnds > 5")["select"]["ids"], json!([]));
    assert_eq!(select("PC.NOPE: 1 == 1")["select"]["error"]["code"], "solver.unknown_scope");
    let out = sheetd(&["solve", "--ruleset", &rules, "--sheet", &game, "--select", "no colon"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("write the scope, a colon"));
}

#[test]
fn bad_scenarios_are_errors_with_locations() {
    let dir = std::env::temp_dir().join(format!("sheetd-solve-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let p = write("syntax.json", "{\"steps\": [\n  {\"add_instance\": }\n]}");
    let out = sheetd(&["solve", "--scenario", &p]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("syntax.json:2:"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = write(
        "conflict.json",
        r#"{"scopes": [{"name": "PC.EQUIPMENT", "parent": "PC"}],
        "variables": [{"name": "X", "scope": "PC", "format": "NUMBER"}, {"name": "x", "scope": "PC.EQUIPMENT", "format": "NUMBER"}],
        "steps": []}"#,
    );
    let err = String::from_utf8_lossy(&sheetd(&["solve", "--scenario", &p]).stderr).to_string();
    assert!(err.contains("variable `x`") && err.contains("solver.variable_conflict"), "{err}");
    let p = write(
        "steps.json",
        r#"{"variables": [{"name": "X", "format": "NUMBER"}],
        "steps": [{"add_modifier": {"id": "m", "var": "X", "type": "SET", "value": "1", "priority": -1}},
                  {"add_modifier": {"id": "m", "var": "X", "type": "SET", "value": "Y + 1"}},
                  {"explode": 1},
                  {"add_modifier": {"id": "m", "var": "X", "type": "SET", "value": "2"}}]}"#,
    );
    let out = sheetd(&["solve", "--scenario", &p, "--json"]);
    let lines = json_lines(&out);
    assert_eq!(lines[0]["error"]["code"], "solver.bad_priority");
    assert_eq!(lines[1]["error"]["code"], "solver.formula");
    assert_eq!(
        lines[1]["error"]["formula"],
        json!({"text": "Y + 1", "stage": "semantics", "code": "semantics.unknown_variable", "span": [0, 1]})
    );
    assert_eq!(lines[2]["error"]["code"], "solver.bad_step");
    assert_eq!(lines[3]["changed"], json!([{"var": "X", "old": "0", "new": "2"}]));
    let out = sheetd(&["solve", "--scenario", &p, "--json", "--trace", "nope"]);
    assert_eq!(out.status.code(), Some(1), "an unknown --trace reference fails the run");
    std::fs::remove_dir_all(&dir).ok();
}

/// `docs/examples/tavern`: events fire rules (with where they are written), a question holds
/// every other step until answered, a die comes in as a step, and `--why` names the rule.
#[test]
fn the_tavern_example_fires_rules() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let (rules, game) =
        (docs.join("tavern").display().to_string(), docs.join("tavern-game.json").display().to_string());
    let out = sheetd(&["solve", "--ruleset", &rules, "--sheet", &game, "--json", "--why", "Gold"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out);
    let at = |line: u32| format!("{}:{line}:9", docs.join("tavern/tavern.toml").display());
    assert_eq!(
        lines[1]["fired"],
        json!([
            {"rule": "Take the hit", "at": at(59), "event": "Hit"},
            {"rule": "Spiked Shield", "at": at(67), "event": "Hit", "this": "Spiked Shield"}
        ])
    );
    assert_eq!(lines[1]["changed"][0], json!({"var": "Damage", "old": "0", "new": "6"}));
    assert_eq!(
        lines[2]["pending"],
        json!({"choice": 1, "rule": "Second Wind", "at": at(75), "prompt": "Drink something?",
               "options": ["Healing Draught", "Strong Ale"], "pick": 1, "decline": true})
    );
    assert_eq!(lines[3]["error"]["code"], "events.choice_pending");
    assert_eq!(lines[4]["changed"], json!([{"var": "Armor", "old": "1", "new": "3"}]));
    assert_eq!(lines[6]["pending"]["die"], "d6");
    assert_eq!(lines[7]["changed"][1], json!({"var": "Gold", "old": "1", "new": "5"}));
    assert_eq!(lines[8]["expired"][0]["what"], "object `Healing Draught`");
    assert_eq!(lines[9]["values"]["HP"], "9");
    assert_eq!(
        lines[10]["why"]["causes"][0]["description"],
        format!(
            "adjust Gold by Coins, by rule `Payday` ({})",
            docs.join("tavern/tavern.toml:85:9").display()
        )
    );
    let text = String::from_utf8_lossy(&sheetd(&["solve", "--ruleset", &rules, "--sheet", &game]).stdout)
        .to_string();
    assert!(
        text.contains("    pending: #1 Drink something?: pick 1 of [Healing Draught, Strong Ale] (or none)"),
        "{text}"
    );
    assert!(text.contains("step 7: roll d6 = 4 (2 recomputed)"), "{text}");
    // `sheetd check` counts events and rules; a bad rule is an error at its text.
    let check = String::from_utf8_lossy(&sheetd(&["check", &rules]).stdout).to_string();
    assert!(check.contains("  events           4\n  rules            5\n"), "{check}");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[events]\nHit = {}\n[[rule]]\nname = \"R\"\non = \"Hit\"\ndo = [{ emit = { event = \"Hit\" } }]\n",
    )
    .expect("written");
    let out = sheetd(&["check", &bad.display().to_string()]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(err.contains("events.self_emit") && err.contains("bad.toml:6:27"), "{err}");
}

/// `docs/examples/guild`: aggregates over the workers follow them as they join, work and
/// leave, and a rule pays by one at the moment its event fires.
#[test]
fn the_guild_example_counts_its_workers() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples");
    let (rules, game) =
        (docs.join("guild").display().to_string(), docs.join("guild-game.json").display().to_string());
    let out = sheetd(&["solve", "--ruleset", &rules, "--sheet", &game, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&out);
    let changed = |i: usize, var: &str| {
        lines[i]["changed"].as_array().expect("changes").iter().find(|c| c["var"] == var).cloned()
    };
    assert_eq!(changed(0, "Payroll"), Some(json!({"var": "Payroll", "old": "0", "new": "7"})));
    assert_eq!(changed(1, "Idle"), Some(json!({"var": "Idle", "old": "2", "new": "1"})));
    assert_eq!(changed(1, "Weakest").map(|c| c["new"].clone()), Some(json!("16")));
    // Payday: two gold for each busy worker then (one), and after a second one got to work and
    // the first left, one again.
    assert_eq!(changed(3, "Gold"), Some(json!({"var": "Gold", "old": "10", "new": "12"})));
    assert_eq!(changed(5, "Strongest"), Some(json!({"var": "Strongest", "old": "16", "new": "14"})));
    assert_eq!(changed(6, "Gold"), Some(json!({"var": "Gold", "old": "12", "new": "14"})));
    // `Foreman.STR` reads the STR of the worker `Foreman` names: the smith's, none once the
    // smith left, the porter's once named.
    assert_eq!(changed(0, "ForemanSTR").map(|c| c["new"].clone()), Some(json!("16")));
    let gone = changed(5, "ForemanSTR").expect("the foreman left");
    assert!(gone["new"].to_string().contains("`Foreman` holds no id of an instance"), "{gone}");
    assert_eq!(changed(7, "ForemanSTR").map(|c| c["new"].clone()), Some(json!("14")));
    let values = &lines[8]["values"];
    assert_eq!(
        [&values["Payroll"], &values["Idle"], &values["Strongest"], &values["Weakest"]],
        [&json!("5"), &json!("1"), &json!("14"), &json!("8")]
    );
}

/// `--graph REF` draws the dependency graph around a variable after the steps, both ways, as
/// DOT, Mermaid or JSON; a variable that is not there is an error naming it.
#[test]
fn graphs_are_drawn_around_a_variable() {
    let ruleset = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/rulesets/starter");
    let sheet = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/examples/starter-character.json");
    let run = |extra: &[&str]| {
        let mut args = vec!["solve", "--ruleset", ruleset, "--sheet", sheet];
        args.extend(extra);
        sheetd(&args)
    };
    let out = run(&["--graph", "DEX", "--graph-depth", "1"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let dot = &text[text.find("digraph dependencies {").expect("a DOT graph")..];
    // What DEX reads, and what reads it: one step each way.
    assert!(dot.contains("\"DEX\" [label=\"DEX = 2\", style=bold, peripheries=2];"), "{dot}");
    assert!(dot.contains("\"DEX.Mod\" -> \"DEX\";") && dot.contains("\"DEX\" -> \"AC\";"), "{dot}");
    assert!(!dot.contains("armor.ArmorAC"), "depth 1: {dot}");
    let out = run(&["--graph", "DEX", "--graph-format", "mermaid"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("flowchart LR\n  n0[\"DEX = 2\"]"), "{text}");
    let out = run(&["--graph", "DEX", "--json"]);
    let last = json_lines(&out).pop().expect("a line");
    let nodes = last["graph"]["nodes"].as_array().expect("nodes");
    assert!(nodes.iter().any(|n| n["ref"] == "AC") && nodes.iter().any(|n| n["ref"] == "DEX.Mod"), "{last}");
    let out = run(&["--graph", "Nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--graph Nope"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
