//! PCGen import on the real datasets in `../shared/pcgen/` (skipped with a notice when absent):
//! they load with zero errors, worked examples give the values the data implies, and broken
//! copies fail with errors naming file and line.

mod common;

use data::{Character, Ruleset, SheetOp};
use formula::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

fn pcgen_data() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/pcgen/data");
    if p.is_dir() {
        Some(p)
    } else {
        eprintln!("notice: {} is absent; skipping the PCGen data tests", p.display());
        None
    }
}

const SF_CORE: &str = "starfinder/paizo/core/_starfinder_core_rulebook.pcc";
const SF_PACT: &str = "starfinder/paizo/pact_worlds/_starfinder_pact_worlds.pcc";
const PF2_CORE: &str = "pathfinder_2e/core_rulebook/_.pcc";

fn load(root: &Path, campaigns: &[&str]) -> Arc<Ruleset> {
    let paths: Vec<PathBuf> = campaigns.iter().map(|c| root.join(c)).collect();
    match data::load(&paths) {
        Ok(r) => Arc::new(r),
        Err(errors) => {
            let shown: Vec<String> = errors.iter().take(10).map(|e| e.to_string()).collect();
            panic!("{} errors loading {campaigns:?}:\n{}", errors.len(), shown.join("\n"))
        }
    }
}

/// Each dataset is loaded once per test binary.
fn dataset(which: &str) -> Option<Arc<Ruleset>> {
    static SF: OnceLock<Arc<Ruleset>> = OnceLock::new();
    static SFPW: OnceLock<Arc<Ruleset>> = OnceLock::new();
    static PF2: OnceLock<Arc<Ruleset>> = OnceLock::new();
    let root = pcgen_data()?;
    Some(match which {
        "sf" => SF.get_or_init(|| load(&root, &[SF_CORE])).clone(),
        "sfpw" => SFPW.get_or_init(|| load(&root, &[SF_CORE, SF_PACT])).clone(),
        _ => PF2.get_or_init(|| load(&root, &[PF2_CORE])).clone(),
    })
}

use common::{add, value as num};

fn input(channel: &str, on: &str, v: i64) -> SheetOp {
    SheetOp::SetInput { channel: channel.into(), on: Some(on.into()), value: Value::Number(v.into()) }
}

#[test]
fn the_three_datasets_load_with_zero_errors() {
    for which in ["sf", "sfpw", "pf2"] {
        let Some(r) = dataset(which) else { return };
        let s = r.summary();
        assert!(s.objects > 2000, "{which}: {s:?}");
        assert!(s.modifiers > 40, "{which}: {s:?}");
        assert_eq!(s.functions, 1, "d20Mod");
        assert_eq!(s.channels, 1, "StatScore");
        assert!(s.skipped_tokens > 10_000, "everything outside the formula system is counted");
        assert!(r.skipped().contains_key("BONUS"), "BONUS is an old-system token, skipped");
        for scope in ["PC.MOVEMENT", "PC.VISION", "PC.EQUIPMENT.PART", "PC.STAT"] {
            assert!(r.rules().scope(scope).is_ok(), "{which}: {scope}");
        }
    }
    let (Some(core), Some(both)) = (dataset("sf"), dataset("sfpw")) else { return };
    assert!(both.summary().objects > core.summary().objects, "Pact Worlds adds objects on top of core");
    assert!(both.summary().files > core.summary().files);
}

#[test]
fn starfinder_strength_follows_its_channel() {
    let Some(r) = dataset("sf") else { return };
    let mut c = Character::new(r).unwrap();
    c.record_evaluations(true);
    let rep = c.apply(&[input("StatScore", "STR", 14)]).unwrap();
    assert_eq!(num(&c, "STR.Score"), "14");
    assert_eq!(num(&c, "STR.Mod"), "2");
    assert_eq!(num(&c, "STR"), "2");
    assert_eq!(num(&c, "STRSCORE"), "14");
    assert_eq!(num(&c, "STR.mOD"), "2", "variable names match case-insensitively");
    assert_eq!(num(&c, "strscore"), "14");
    // Exactly the dependent variables were recomputed, each once, in topological order.
    let evaluated: Vec<String> = rep.evaluated.iter().map(|v| v.to_string()).collect();
    assert_eq!(evaluated.len(), 5, "{evaluated:?}");
    for v in ["STR.StatScore", "STR.Score", "STRSCORE", "STR.Mod", "STR"] {
        assert!(evaluated.contains(&v.to_owned()), "{v} in {evaluated:?}");
    }
    let pos = |v: &str| evaluated.iter().position(|e| e == v).unwrap();
    assert!(pos("STR.Score") < pos("STR.Mod") && pos("STR.Mod") < pos("STR"));
    let rep = c.apply(&[input("StatScore", "STR", 7)]).unwrap();
    assert_eq!(num(&c, "STR.Mod"), "-2", "floor(-1.5)");
    assert_eq!(rep.len(), 5);
    assert!(rep.named(c.sheet()).iter().all(|ch| ch.var.to_string().to_uppercase().contains("STR")));
    // Other stats were untouched and sit at d20Mod(0) = -5.
    assert_eq!(num(&c, "DEX.Mod"), "-5");
    // The trace names the data line the modifier comes from.
    let t = c.sheet().trace("STR.Mod").unwrap();
    assert_eq!(t.steps.len(), 1);
    assert!(t.steps[0].source.contains("scr__stats.lst:"), "{}", t.steps[0].source);
}

#[test]
fn pathfinder_ancestries_grant_walking_and_sizes_set_face_with_priority() {
    let Some(r) = dataset("pf2") else { return };
    let mut c = Character::new(r).unwrap();
    assert!(c.sheet().value("Walk.Speed").is_err(), "no Walk until something grants it");
    assert_eq!(num(&c, "Race_Hands"), "0", "global SET if(RaceType_Humanoid,2,0) at PRIORITY=5");
    c.apply(&[add("RACE", "Dwarf", None, None)]).unwrap();
    assert_eq!(num(&c, "Walk.Speed"), "20");
    assert_eq!(num(&c, "Race_Hands"), "2");
    assert_eq!(num(&c, "Face"), "5,5");
    c.apply(&[add("SIZE", "L", None, None)]).unwrap();
    assert_eq!(num(&c, "Face"), "10,10", "the size's SET at PRIORITY=100 comes after the global one at 5");
    // Swapping the ancestry in one batch: Walk goes with the Dwarf and comes back with the Elf.
    let rep = c.apply(&[SheetOp::RemoveObject("Dwarf".into()), add("RACE", "Elf", None, None)]).unwrap();
    assert_eq!(num(&c, "Walk.Speed"), "30");
    assert!(rep.named(c.sheet()).iter().any(|ch| ch.var.to_string() == "Walk.Speed"));
    c.apply(&[SheetOp::RemoveObject("Elf".into())]).unwrap();
    assert!(c.sheet().value("Walk.Speed").is_err(), "Walk exists only while granted");
    assert_eq!(num(&c, "RaceType_Humanoid"), "false");
}

#[test]
fn pact_worlds_races_armor_and_parts() {
    let Some(r) = dataset("sfpw") else { return };
    let mut c = Character::new(r.clone()).unwrap();
    // Armor first: its MODIFYOTHER on Walk is a no-op until a race grants Walk, then applies.
    c.apply(&[add("EQUIPMENT", "Thinplate", Some("armor1"), None)]).unwrap();
    assert!(c.sheet().value("Walk.Speed").is_err());
    c.apply(&[add("RACE", "Astrazoan", None, None)]).unwrap();
    assert_eq!(num(&c, "Walk.Speed"), "20", "SET 30 from the race, ADD -10 from the armor");
    // PRIORITY dominates: the race's ADD 3 (priority 0) applies before the global SET at 5.
    assert_eq!(num(&c, "Race_Legs"), "2");
    let t = c.sheet().trace("Race_Legs").unwrap();
    let kinds: Vec<String> = t.steps.iter().map(|s| format!("{} {}", s.kind, s.priority)).collect();
    assert_eq!(kinds, ["ADD 0", "SET 5"]);
    // The same in the other order gives the same values.
    let mut d = Character::new(r).unwrap();
    d.apply(&[add("RACE", "Astrazoan", None, None), add("EQUIPMENT", "Thinplate", Some("armor1"), None)])
        .unwrap();
    assert_eq!(num(&d, "Walk.Speed"), "20");
    // An equipment modifier goes on the equipment's first part and raises the equipment's count.
    c.apply(&[add("EQUIPMOD", "Armor (Infrared sensors)", Some("ir"), Some("armor1"))]).unwrap();
    assert_eq!(num(&c, "armor1.UpgradeSlotTaken"), "1");
    // A weapon's PART:1 modifier belongs to its first part.
    c.apply(&[add("EQUIPMENT", "Laser pistol (azimuth)", Some("gun"), None)]).unwrap();
    assert_eq!(num(&c, "gun#1.Damage"), "1d4");
    assert_eq!(num(&c, "gun.ItemLevel"), "1");
    // Removing the armor takes its attached modifier and its effect on Walk with it.
    c.apply(&[SheetOp::RemoveObject("armor1".into())]).unwrap();
    assert!(!c.has_object("ir"));
    assert_eq!(num(&c, "Walk.Speed"), "30");
}

#[test]
fn starfinder_sizes_and_sheet_errors() {
    let Some(r) = dataset("sf") else { return };
    let mut c = Character::new(r).unwrap();
    c.apply(&[add("SIZE", "L", None, None)]).unwrap();
    assert_eq!(num(&c, "Race_Reach"), "10", "if(RaceIsLong,5,10) with RaceIsLong false");
    assert_eq!(num(&c, "Face"), "10,10");
    let before = c.sheet().values();
    // A batch with a bad operation is rejected whole, naming the operation.
    let e = c
        .apply(&[add("EQUIPMENT", "Estex Suit I", Some("a"), None), add("RACE", "No Such Race", None, None)])
        .unwrap_err();
    assert_eq!((e.index, e.code), (1, data::sheet_codes::UNKNOWN_OBJECT));
    assert_eq!(c.sheet().values(), before);
    assert!(!c.has_object("a"));
    let e = c.apply(&[SheetOp::RemoveObject("STR".into())]).unwrap_err();
    assert_eq!(e.code, data::sheet_codes::NOT_REMOVABLE);
    let e = c.apply(&[add("EQUIPMOD", "Armor (Infrared sensors)", None, None)]).unwrap_err();
    assert_eq!(e.code, data::sheet_codes::BAD_PARENT);
    let e = c.apply(&[input("NoSuchChannel", "STR", 1)]).unwrap_err();
    assert_eq!(e.code, data::sheet_codes::UNKNOWN_CHANNEL);
    let e = c.apply(&[add("SIZE", "L", None, None)]).unwrap_err();
    assert_eq!(e.code, data::sheet_codes::DUPLICATE_ID);
}

/// Copies the Starfinder core dataset (and `_universal`) into a temporary `data/` folder, edits
/// it and loads it.
fn edited_copy(
    name: &str,
    edit: impl FnOnce(&Path),
) -> Option<(PathBuf, Result<Ruleset, Vec<data::Diagnostic>>)> {
    let root = pcgen_data()?;
    let tmp = std::env::temp_dir().join(format!("sheetd-broken-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let data_dir = tmp.join("data");
    for sub in ["starfinder/paizo/core", "_universal"] {
        let from = root.join(sub);
        let to = data_dir.join(sub);
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(&from).unwrap() {
            let e = e.unwrap();
            if e.path().is_file() {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
    let core = data_dir.join("starfinder/paizo/core");
    edit(&core);
    let loaded = data::load(&[core.join("_starfinder_core_rulebook.pcc")]);
    let _ = std::fs::remove_dir_all(&tmp);
    Some((core, loaded))
}

/// A copy of the Starfinder core dataset, edited, that fails to load: its errors.
fn broken_copy(name: &str, edit: impl FnOnce(&Path)) -> Option<(PathBuf, Vec<data::Diagnostic>)> {
    let (core, loaded) = edited_copy(name, edit)?;
    Some((core, loaded.err().unwrap_or_else(|| panic!("{name}: the edited copy loaded"))))
}

#[test]
fn starfinder_data_tables_are_looked_up() {
    let Some((_, loaded)) = edited_copy("tables", |dir| {
        append(dir, "scr__variables.lst", "GLOBAL:NUMBER=ArmorPrice\nGLOBAL:NUMBER=CarryLimit");
        append(
            dir,
            "scr__globalmodifiers.lst",
            "MODIFY:ArmorPrice|SET|lookup(\"Item Level Cost\",5,\"Price\")\nMODIFY:CarryLimit|SET|lookup(\"Encumbrance\",STRSCORE,\"Overloaded\")",
        );
    }) else {
        return;
    };
    let r = loaded.unwrap_or_else(|e| panic!("{e:#?}"));
    let mut c = Character::new(Arc::new(r)).unwrap();
    assert_eq!(num(&c, "ArmorPrice"), "720", "scr__datatables.lst: level 5 costs 720");
    c.apply(&[input("StatScore", "STR", 9)]).unwrap();
    assert_eq!(num(&c, "STRSCORE"), "9");
    assert_eq!(num(&c, "CarryLimit"), "10", "the row `09,04,09,10`");
}

fn append(dir: &Path, file: &str, line: &str) -> u32 {
    let p = dir.join(file);
    let mut text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(line);
    text.push('\n');
    std::fs::write(&p, &text).unwrap();
    text.lines().count() as u32
}

fn expect_one(name: &str, file: &str, line: &str, code: &str, message: &str, quoted: &str) {
    let mut at_line = 0;
    let Some((_, errors)) = broken_copy(name, |dir| at_line = append(dir, file, line)) else { return };
    assert_eq!(errors.len(), 1, "{name}: {errors:#?}");
    let e = &errors[0];
    assert_eq!(e.code, code, "{name}: {e}");
    let at = e.at.as_ref().unwrap();
    assert_eq!(at.file(), format!("starfinder/paizo/core/{file}"), "{name}");
    assert_eq!(at.line(), at_line, "{name}");
    assert!(e.message.contains(message), "{name}: {}", e.message);
    assert_eq!(e.text, quoted, "{name}");
    assert_eq!(
        &line[at.col() as usize - 1..][..quoted.len()],
        quoted,
        "{name}: the column points at the text"
    );
}

#[test]
fn broken_copies_fail_with_precise_errors() {
    expect_one(
        "scope",
        "scr__variables.lst",
        "LOCAL:PC.NOPE|NUMBER=Speedy",
        "data.unknown_scope",
        "unknown scope `PC.NOPE`",
        "PC.NOPE",
    );
    expect_one(
        "undefined",
        "scr__globalmodifiers.lst",
        "MODIFY:Race_Hands|ADD|NoSuchVar+1",
        "data.formula",
        "unknown variable `NoSuchVar` in scope PC",
        "NoSuchVar",
    );
    expect_one(
        "priority",
        "scr__globalmodifiers.lst",
        "MODIFY:Race_Hands|ADD|1|PRIORITY=-1",
        "data.bad_priority",
        "PRIORITY must be a whole number",
        "-1",
    );
    expect_one(
        "format",
        "scr__variables.lst",
        "GLOBAL:BOOLEAN=Race_Reach",
        "data.variable_conflict",
        "declared as BOOLEAN, but was already declared as NUMBER",
        "Race_Reach",
    );
    expect_one(
        "parent-child",
        "scr__variables.lst",
        "LOCAL:PC.STAT|NUMBER=Race_Reach",
        "data.variable_conflict",
        "conflicts with `Race_Reach` in scope PC",
        "Race_Reach",
    );
    expect_one(
        "type",
        "scr__globalmodifiers.lst",
        "MODIFY:Race_Hands|PLUS|1",
        "data.bad_modifier_type",
        "PLUS",
        "PLUS",
    );
}

#[test]
fn a_missing_referenced_file_is_an_error_at_the_campaign_line() {
    let Some((_, errors)) =
        broken_copy("missing", |dir| std::fs::remove_file(dir.join("scr_templates.lst")).unwrap())
    else {
        return;
    };
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0];
    assert_eq!(e.code, "data.missing_file");
    let at = e.at.as_ref().unwrap();
    assert!(at.file().ends_with("_starfinder_core_rulebook.pcc"), "{}", at.file());
    assert_eq!(e.text, "scr_templates.lst");
    assert!(at.line_text().starts_with("TEMPLATE:"), "{}", at.line_text());
    insta::assert_snapshot!(e.to_string().replace(at.file(), "CAMPAIGN"));
}

/// A load through [`data::Files`] records every file it read (and checked for); loading again
/// from that bundle, with no disk, gives the same ruleset. This is how a daemon keeps each
/// ruleset version's exact content.
#[test]
fn a_campaign_loads_again_from_the_files_it_read() {
    let Some(root) = pcgen_data() else { return };
    let paths = [root.join(SF_CORE), root.join(SF_PACT)];
    let files = data::Files::disk();
    let first = data::load_with(&paths, &files).expect("loads");
    let bundle = files.into_bundle();
    assert!(bundle.files.len() > 20, "{} files read", bundle.files.len());
    let again = data::load_with(&paths, &data::Files::memory(bundle.clone())).expect("loads from memory");
    assert_eq!(format!("{:?}", first.summary()), format!("{:?}", again.summary()));
    // Confined to the data folder, the same load works; confined elsewhere, it reads nothing.
    assert!(data::load_with(&paths, &data::Files::confined(std::slice::from_ref(&root))).is_ok());
    let elsewhere = data::load_with(&paths, &data::Files::confined(&[root.join("pathfinder_2e")]));
    let errors = elsewhere.expect_err("outside the root");
    assert!(errors.iter().all(|e| e.message.contains("outside the ruleset roots")), "{errors:?}");
}
