//! End-to-end tests of `sheetd check` and `sheetd solve --ruleset --sheet`, run as a user would.

use serde_json::Value as Json;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sheetd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sheetd")).args(args).env("NO_COLOR", "1").output().expect("sheetd runs")
}

fn repo(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(p).display().to_string()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn pcgen(c: &str) -> Option<String> {
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/pcgen/data");
    if !root.is_dir() {
        eprintln!("notice: {} is absent; skipping", root.display());
        return None;
    }
    Some(root.join(c).display().to_string())
}

#[test]
fn check_summarizes_the_starter_ruleset() {
    let out = sheetd(&["check", &repo("data/rulesets/starter")]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    for line in ["scopes", "variables", "functions", "objects", "modifiers", "skipped"] {
        assert!(stdout.lines().any(|l| l.trim_start().starts_with(line)), "{line} in {stdout}");
    }
    assert!(stdout.contains("objects         33"), "{stdout}");
}

#[test]
fn check_prints_every_error_with_its_place() {
    let dir = std::env::temp_dir().join(format!("sheetd-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "[variables.PC]\nAC = \"NUMBER\"\n[kinds.FEAT]\nscope = \"PC\"\n[[object]]\nkind = \"FEAT\"\nkey = \"A\"\nmodify = [{ var = \"AC\", add = \"Nope + 1\" }, { var = \"Ac\", add = \"1\", priority = -1 }]\n",
    )
    .unwrap();
    let out = sheetd(&["check", &file.display().to_string()]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let shown = file.display().to_string();
    assert!(stderr.contains(&format!("{shown}:8:32")), "{stderr}");
    assert!(stderr.contains("unknown variable `Nope` in scope PC"), "{stderr}");
    assert!(stderr.contains(&format!("{shown}:8:81")), "{stderr}");
    assert!(stderr.contains("PRIORITY must be a whole number"), "{stderr}");
    assert!(stderr.contains("2 errors"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn solve_runs_the_example_character() {
    let out = sheetd(&[
        "solve",
        "--ruleset",
        &repo("data/rulesets/starter"),
        "--sheet",
        &repo("data/examples/starter-character.json"),
        "--json",
        "--trace",
        "AC",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<Json> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().filter(|l| l.get("step").is_some()).all(|l| l.get("error").is_none()));
    let values = lines.iter().find_map(|l| l.get("values")).unwrap();
    assert_eq!(values["AC"], "17");
    assert_eq!(values["Walk.Speed"], "15");
    assert_eq!(values["sword#1.Damage"], "1d8");
    assert_eq!(values["Space"], "5,5");
    assert_eq!(values["Handedness"], "Left");
    assert_eq!(values["Encumbered"], false);
    let trace = lines.iter().find_map(|l| l.get("trace")).unwrap();
    assert_eq!(trace["value"], "17");
}

#[test]
fn solve_on_pcgen_data_layers_rulesets() {
    let (Some(core), Some(pw)) = (
        pcgen("starfinder/paizo/core/_starfinder_core_rulebook.pcc"),
        pcgen("starfinder/paizo/pact_worlds/_starfinder_pact_worlds.pcc"),
    ) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("sheetd-sheet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sheet = dir.join("sheet.json");
    std::fs::write(
        &sheet,
        r#"{"steps": [
            {"set_input": {"channel": "StatScore", "on": "STR", "value": 14}},
            {"add_object": {"kind": "RACE", "key": "Astrazoan"}},
            {"add_object": {"kind": "EQUIPMENT", "key": "Estex Suit I", "id": "armor1", "parent": null}},
            {"remove_object": "nothing"}
        ]}"#,
    )
    .unwrap();
    let out = sheetd(&[
        "solve",
        "--ruleset",
        &core,
        "--ruleset",
        &pw,
        "--sheet",
        &sheet.display().to_string(),
        "--json",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    let lines: Vec<Json> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let values = lines.iter().find_map(|l| l.get("values")).unwrap();
    assert_eq!(values["STR.Mod"], "2");
    assert_eq!(values["STRSCORE"], "14");
    assert_eq!(values["Walk.Speed"], "30");
    assert_eq!(values["armor1.UpgradeSlot"], "2");
    assert_eq!(values["Face"], "5,5");
    assert_eq!(values["RaceType_Humanoid"], true);
    assert_eq!(lines[3]["error"]["code"], "sheet.unknown_id", "a rejected step is reported, later steps run");
}

#[test]
fn check_takes_several_pcgen_rulesets_and_lists_skipped_tokens() {
    let (Some(core), Some(pw)) = (
        pcgen("starfinder/paizo/core/_starfinder_core_rulebook.pcc"),
        pcgen("starfinder/paizo/pact_worlds/_starfinder_pact_worlds.pcc"),
    ) else {
        return;
    };
    let out = sheetd(&["check", &core, "--ruleset", &pw, "--verbose"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("skipped tokens:"), "{stdout}");
    assert!(stdout.lines().any(|l| l.trim_start().starts_with("BONUS ")), "{stdout}");
    // Without --verbose: the total and the kinds skipped most, on the summary.
    let out = sheetd(&["check", &core, "--ruleset", &pw]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("skipped      23811 tokens"), "{stdout}");
    let by_kind = stdout.lines().find(|l| l.trim_start().starts_with("by kind: ")).expect("by kind");
    assert!(by_kind.contains("TYPE 3616, BONUS 3172") && by_kind.contains("kinds more"), "{by_kind}");
}

/// `--why REF` explains the last change of a variable: the step, its value before and after,
/// the ways the change went through the graph; an unknown variable is an error.
#[test]
fn solve_why_explains_the_last_change() {
    let (rules, sheet) = (repo("data/rulesets/starter"), repo("data/examples/starter-character.json"));
    let out =
        sheetd(&["solve", "--ruleset", &rules, "--sheet", &sheet, "--why", "AC", "--why", "SizeModifier"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let why = &stdout[stdout.find("why AC").expect("an explanation")..];
    assert!(why.starts_with("why AC changed at step 10: 12 → 17"), "{why}");
    // The ways the change went through the dependency graph, not the flattened list.
    assert!(
        why.contains(
            "add EQUIPMENT `Ring Hauberk` as armor: 12 → 17 (through armor.ArmorAC → ArmorBonus → AC; armor.Enhancement → ArmorBonus → AC; armor.MaxDex → MaxDexBonus → AC)"
        ),
        "{why}"
    );
    assert!(stdout.contains("why SizeModifier: no step changed it"), "{stdout}");

    let out = sheetd(&["solve", "--ruleset", &rules, "--sheet", &sheet, "--json", "--why", "STR.Mod"]);
    let last: Json = serde_json::from_str(text(&out.stdout).lines().last().expect("a line")).expect("json");
    assert_eq!(last["why"]["step"], 1);
    assert_eq!(last["why"]["causes"][0]["before"], "-5");
    assert_eq!(last["why"]["causes"][0]["after"], "2");
    assert_eq!(
        last["why"]["causes"][0]["paths"],
        serde_json::json!([["STR.Rolled", "STR.Score", "STR.Mod"]]),
        "{last}"
    );

    let out = sheetd(&["solve", "--ruleset", &rules, "--sheet", &sheet, "--why", "Nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no variable `Nope`"), "{}", text(&out.stderr));
}

/// A small PCGen campaign in a `data` folder, with a misspelled variable far along a long,
/// tab-separated `.lst` line.
fn broken_pcgen_campaign(dir: &Path) -> (PathBuf, usize) {
    let campaign = dir.join("data/homebrew");
    std::fs::create_dir_all(&campaign).unwrap();
    std::fs::write(
        campaign.join("hb.pcc"),
        "CAMPAIGN:Homebrew\nDATACONTROL:dc.lst\nVARIABLE:var.lst\nEQUIPMENT:eq.lst\n",
    )
    .unwrap();
    std::fs::write(campaign.join("dc.lst"), "DEFAULTVARIABLEVALUE:NUMBER|0\n").unwrap();
    std::fs::write(campaign.join("var.lst"), "LOCAL:PC.EQUIPMENT|NUMBER=ItemLevel\n").unwrap();
    let filler: Vec<String> = (0..40).map(|i| format!("BONUS:VAR|Filler{i}|{i}")).collect();
    let line = format!("Longsword\t{}\tMODIFY:ItemLevle|SET|3\t{}", filler.join("\t"), filler.join("\t"));
    let col = line.find("ItemLevle").unwrap() + 1;
    std::fs::write(campaign.join("eq.lst"), format!("# Equipment\n{line}\n")).unwrap();
    (campaign.join("hb.pcc"), col)
}

#[test]
fn check_reports_for_people_and_for_machines() {
    let dir = std::env::temp_dir().join(format!("sheetd-check-formats-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (pcc, col) = broken_pcgen_campaign(&dir);
    let pcc = pcc.display().to_string();
    let eq = dir.join("data/homebrew/eq.lst").display().to_string();

    // People: a window around the column of the 1,000-column line, tabs expanded, with a hint.
    let out = sheetd(&["check", &pcc]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("homebrew/eq.lst:2:{col}")), "{stderr}");
    assert!(stderr.contains("did you mean `ItemLevel`?"), "{stderr}");
    assert!(!stderr.contains('\t') && stderr.lines().all(|l| l.chars().count() <= 120), "{stderr}");

    // JSON: one document, the file as a path that opens.
    let out = sheetd(&["check", &pcc, "--format", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let doc: Json = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["summary"], Json::Null);
    let e = &doc["errors"][0];
    assert_eq!(doc["errors"].as_array().unwrap().len(), 1, "{doc:#}");
    assert_eq!(e["code"], "data.unknown_variable");
    assert_eq!(e["file"], eq.as_str());
    assert_eq!((e["line"].as_u64(), e["column"].as_u64()), (Some(2), Some(col as u64)));
    assert_eq!(e["end_column"].as_u64(), Some(col as u64 + 9));
    assert_eq!(e["text"], "ItemLevle");
    assert_eq!(e["help"], "did you mean `ItemLevel`?");

    // GitHub Actions: one annotation per diagnostic, the hint on the message's second line.
    let out = sheetd(&["check", &pcc, "--format", "github"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stdout),
        format!(
            "::error file={},line=2,col={col},endColumn={},title=data.unknown_variable::variable `ItemLevle` is not defined in scope PC.EQUIPMENT or its ancestors%0Ahelp: did you mean `ItemLevel`?\n",
            eq.replace(':', "%3A").replace(',', "%2C"),
            col + 9
        )
    );

    // SARIF 2.1.0: the code as the rule, the place as a region.
    let out = sheetd(&["check", &pcc, "--format", "sarif"]);
    assert_eq!(out.status.code(), Some(1));
    let log: Json = serde_json::from_slice(&out.stdout).expect("a SARIF log");
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "sheetd");
    assert_eq!(run["tool"]["driver"]["rules"][0]["id"], "data.unknown_variable");
    let r = &run["results"][0];
    assert_eq!(
        (r["ruleId"].as_str(), r["level"].as_str(), r["ruleIndex"].as_u64()),
        (Some("data.unknown_variable"), Some("error"), Some(0))
    );
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], eq.as_str());
    assert_eq!(loc["region"]["startLine"], 2);
    assert_eq!(loc["region"]["startColumn"].as_u64(), Some(col as u64));
    assert_eq!(loc["region"]["snippet"]["text"], "ItemLevle");

    // Fixed, every format says so and exits 0; JSON carries the summary.
    let fixed = std::fs::read_to_string(&eq).unwrap().replace("ItemLevle", "ItemLevel");
    std::fs::write(&eq, fixed).unwrap();
    let out = sheetd(&["check", &pcc, "--format", "json"]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    let doc: Json = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((doc["ok"].as_bool(), doc["summary"]["objects"].as_u64()), (Some(true), Some(1)));
    assert_eq!(doc["summary"]["skipped_by_kind"]["BONUS"].as_u64(), Some(80), "{doc:#}");
    for format in ["github", "sarif"] {
        let out = sheetd(&["check", &pcc, "--format", format]);
        assert!(out.status.success(), "{format}");
    }
    assert_eq!(text(&sheetd(&["check", &pcc, "--format", "github"]).stdout), "");
    let _ = std::fs::remove_dir_all(&dir);
}
