//! PCGen behaviours beyond the formula-system tokens, each on a small campaign held in memory:
//! ADD to an ARRAY as a set, the DICE literal `d4`, a campaign's own `MODIFY`.

mod common;

use common::{load_pcgen_memory, value};
use data::Character;
use std::sync::Arc;

const DATACONTROL: &str =
    "DEFAULTVARIABLEVALUE:NUMBER|0\nDEFAULTVARIABLEVALUE:STRING|\nDEFAULTVARIABLEVALUE:DICE|0\n";

fn character(files: &[(&str, &str)]) -> Character {
    let r = load_pcgen_memory(files).unwrap_or_else(|e| panic!("{e:#?}"));
    Character::new(Arc::new(r)).expect("a character")
}

#[test]
fn add_to_an_array_adds_its_elements_as_a_set() {
    let c = character(&[
        ("t.pcc", "DATACONTROL:dc.lst\nVARIABLE:var.lst\nGLOBALMODIFIER:gm.lst\n"),
        ("dc.lst", DATACONTROL),
        ("var.lst", "GLOBAL:ARRAY[STRING]=Resist\nGLOBAL:ARRAY[NUMBER]=Levels\n"),
        (
            "gm.lst",
            "MODIFY:Resist|ADD|Fire,Cold\nMODIFY:Resist|ADD|Cold,Acid\nMODIFY:Levels|ADD|1,2,2\nMODIFY:Levels|ADD|3\n",
        ),
    ]);
    assert_eq!(value(&c, "Resist"), "[Fire, Cold, Acid]", "Cold once");
    assert_eq!(value(&c, "Levels"), "[1, 2, 3]");
    let t = c.sheet().trace("Resist").unwrap();
    let kinds: Vec<String> = t.steps.iter().map(|s| s.kind.to_string()).collect();
    assert_eq!(kinds, ["ADD", "ADD"], "traced as the data wrote it");
}

#[test]
fn an_array_element_of_the_wrong_format_is_an_error_at_its_line() {
    let errors = load_pcgen_memory(&[
        ("t.pcc", "DATACONTROL:dc.lst\nVARIABLE:var.lst\nGLOBALMODIFIER:gm.lst\n"),
        ("dc.lst", DATACONTROL),
        ("var.lst", "GLOBAL:ARRAY[NUMBER]=Levels\n"),
        ("gm.lst", "MODIFY:Levels|ADD|1,two\n"),
    ])
    .unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].code, "data.bad_value");
    assert!(errors[0].message.contains("`two`"), "{}", errors[0].message);
    assert_eq!(errors[0].at.as_ref().unwrap().line(), 1);
}

#[test]
fn a_die_written_without_its_count_is_one_die() {
    let c = character(&[
        ("t.pcc", "DATACONTROL:dc.lst\nVARIABLE:var.lst\nGLOBALMODIFIER:gm.lst\n"),
        ("dc.lst", DATACONTROL),
        ("var.lst", "GLOBAL:DICE=Bite\nGLOBAL:DICE=Claw\n"),
        ("gm.lst", "MODIFY:Bite|SET|d4\nMODIFY:Claw|SET|d6+1\n"),
    ]);
    assert_eq!(value(&c, "Bite"), "1d4");
    assert_eq!(value(&c, "Claw"), "1d6+1");
}

#[test]
fn a_campaigns_own_modify_applies() {
    let c = character(&[
        (
            "t.pcc",
            "CAMPAIGN:T\nDATACONTROL:dc.lst\nVARIABLE:var.lst\nMODIFY:Hands|SET|2\nMODIFY:Hands|ADD|1\n",
        ),
        ("dc.lst", DATACONTROL),
        ("var.lst", "GLOBAL:NUMBER=Hands\n"),
    ]);
    assert_eq!(value(&c, "Hands"), "3");
    let t = c.sheet().trace("Hands").unwrap();
    assert!(t.steps[0].source.contains("t.pcc:4"), "{}", t.steps[0].source);
    // Written wrong, it is an error at the campaign's line.
    let errors = load_pcgen_memory(&[
        ("t.pcc", "DATACONTROL:dc.lst\nVARIABLE:var.lst\nMODIFY:Hands|SET\n"),
        ("dc.lst", DATACONTROL),
        ("var.lst", "GLOBAL:NUMBER=Hands\n"),
    ])
    .unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0].code, "data.syntax");
    assert!(errors[0].at.as_ref().unwrap().file().ends_with("t.pcc"));
    assert_eq!(errors[0].at.as_ref().unwrap().line(), 3);
}

const TABLES: &str = "# Costs by level\n\nSTARTTABLE:Item Level Cost,\nItemLevel,Price,Name\nNUMBER,NUMBER,STRING\n01,120,\"One, first\"\n2,360,Two\n3,440,Three\nENDTABLE:Item Level Cost,\n";

fn with_tables(tables: &str, modifiers: &str) -> Result<data::Ruleset, Vec<data::Diagnostic>> {
    load_pcgen_memory(&[
        ("t.pcc", "DATACONTROL:dc.lst\nDATATABLE:tables.lst\nVARIABLE:var.lst\nGLOBALMODIFIER:gm.lst\n"),
        ("dc.lst", DATACONTROL),
        ("tables.lst", tables),
        ("var.lst", "CHANNEL:NUMBER=Rolled\nGLOBAL:NUMBER=Level\nGLOBAL:NUMBER=Price\nGLOBAL:STRING=Label\n"),
        ("gm.lst", modifiers),
    ])
}

#[test]
fn lookup_reads_a_datatable_row_by_its_first_column() {
    let gm = "MODIFY:Level|SET|input(\"Rolled\")+2\nMODIFY:Price|SET|lookup(\"Item Level Cost\",Level,\"Price\")\nMODIFY:Label|SET|=lookup(\"item level cost\",1,\"Name\")\n";
    let r = with_tables(TABLES, gm).unwrap_or_else(|e| panic!("{e:#?}"));
    let mut c = Character::new(Arc::new(r)).expect("a character");
    assert_eq!(value(&c, "Label"), "One, first", "a quoted cell keeps its comma; `01` is the number 1");
    assert_eq!(value(&c, "Price"), "360", "the row whose ItemLevel is Level = 0 + 2");
    // Price follows Level.
    let roll = data::SheetOp::SetInput {
        channel: "Rolled".into(),
        on: None,
        value: formula::Value::Number(1.into()),
    };
    c.apply(&[roll]).expect("applied");
    assert_eq!(value(&c, "Price"), "440", "Level = 3");
}

#[test]
fn a_value_no_row_has_is_an_error_naming_the_table() {
    let gm = "MODIFY:Level|SET|9\nMODIFY:Price|SET|lookup(\"Item Level Cost\",Level,\"Price\")\n";
    let r = with_tables(TABLES, gm).unwrap_or_else(|e| panic!("{e:#?}"));
    let c = Character::new(Arc::new(r)).expect("a character");
    let err = match c.sheet().value("Price") {
        Ok(Err(e)) => format!("{}: {}", e.code, e.message),
        other => panic!("expected an evaluation error, got {other:?}"),
    };
    assert!(err.contains("table `Item Level Cost` has no row `9`"), "{err}");
}

/// Loads `gm` against `tables` and returns its one error: (code, message, line, column, text,
/// help).
fn one_error(tables: &str, gm: &str) -> (String, String, u32, u32, String, String) {
    let errors = with_tables(tables, gm).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0];
    let at = e.at.as_ref().expect("a place");
    (
        e.code.to_string(),
        e.message.clone(),
        at.line(),
        at.col(),
        e.text.clone(),
        e.help.clone().unwrap_or_default(),
    )
}

#[test]
fn lookups_are_checked_at_load() {
    let bad_table = one_error(TABLES, "MODIFY:Price|SET|lookup(\"Item Level Costs\",1,\"Price\")\n");
    assert_eq!(bad_table.0, "data.formula");
    assert!(bad_table.1.contains("there is no table `Item Level Costs`"), "{}", bad_table.1);
    assert!(bad_table.5.contains("Item Level Cost"), "a hint names the table meant: {:?}", bad_table.5);
    assert_eq!((bad_table.2, bad_table.3), (1, 25), "at the table's name");

    let bad_column = one_error(TABLES, "MODIFY:Price|SET|lookup(\"Item Level Cost\",1,\"Prize\")\n");
    assert!(bad_column.1.contains("has no column `Prize`"), "{}", bad_column.1);
    assert!(bad_column.5.contains("Price"), "{:?}", bad_column.5);

    let bad_key = one_error(TABLES, "MODIFY:Price|SET|lookup(\"Item Level Cost\",Label,\"Price\")\n");
    assert!(bad_key.1.contains("looked up by its first column, `ItemLevel`, a NUMBER"), "{}", bad_key.1);

    let not_literal = one_error(TABLES, "MODIFY:Price|SET|lookup(Label,1,\"Price\")\n");
    assert!(not_literal.1.contains("as a string literal"), "{}", not_literal.1);

    let wrong_result = one_error(TABLES, "MODIFY:Price|SET|lookup(\"Item Level Cost\",1,\"Name\")\n");
    assert!(wrong_result.1.contains("STRING"), "a STRING column for a NUMBER variable: {}", wrong_result.1);
}

#[test]
fn malformed_tables_are_errors_at_their_lines() {
    let short_row = "STARTTABLE:T\nA,B\nNUMBER,NUMBER\n1,2\n3\nENDTABLE:T\n";
    let e = one_error(short_row, "");
    assert_eq!(e.0, "data.syntax");
    assert!(e.1.contains("has 1 cells; the table has 2 columns"), "{}", e.1);
    assert_eq!(e.2, 5);

    let bad_cell = "STARTTABLE:T\nA,B\nNUMBER,NUMBER\n1,two\nENDTABLE:T\n";
    let e = one_error(bad_cell, "");
    assert_eq!(e.0, "data.bad_value");
    assert!(e.1.contains("column `B` of table `T`"), "{}", e.1);
    assert_eq!((e.2, e.3, e.4.as_str()), (4, 3, "two"));

    let bad_format = "STARTTABLE:T\nA,B\nNUMBER,NUMBR\nENDTABLE:T\n";
    let e = one_error(bad_format, "");
    assert_eq!(e.0, "data.unknown_format");
    assert_eq!((e.2, e.4.as_str()), (3, "NUMBR"));

    let unended = "STARTTABLE:T\nA\nNUMBER\n1\n";
    let e = one_error(unended, "");
    assert!(e.1.contains("table `T` has no ENDTABLE"), "{}", e.1);
    assert_eq!(e.2, 1);

    let twice = "STARTTABLE:T\nA\nNUMBER\nENDTABLE:T\nSTARTTABLE:t\nA\nNUMBER\nENDTABLE:t\n";
    let e = one_error(twice, "");
    assert!(e.1.contains("table `t` is defined twice"), "{}", e.1);
    assert_eq!(e.2, 5);

    let outside = "1,2\n";
    let e = one_error(outside, "");
    assert!(e.1.contains("outside STARTTABLE"), "{}", e.1);
}

/// A small campaign with stats, races, deities, domains and companion mods, the facts they
/// carry, and `gm` as its global modifiers.
fn campaign(gm: &str) -> Result<data::Ruleset, Vec<data::Diagnostic>> {
    load_pcgen_memory(&[
        (
            "t.pcc",
            "DATACONTROL:dc.lst\nVARIABLE:var.lst\nGLOBALMODIFIER:gm.lst\nSTAT:stats.lst\nRACE:races.lst\nDEITY:deities.lst\nDOMAIN:domains.lst\nCOMPANIONMOD:companions.lst\n",
        ),
        (
            "dc.lst",
            "DEFAULTVARIABLEVALUE:NUMBER|0\nDEFAULTVARIABLEVALUE:STRING|\nDEFAULTVARIABLEVALUE:BOOLEAN|false\nDEFAULTVARIABLEVALUE:DEITY|None\nFACTDEF:RACE|BaseSize\tDATAFORMAT:SIZEADJUSTMENT\tVISIBLE:YES\nFACTDEF:RACE|Hands\tDATAFORMAT:Number\nFACTDEF:RACE|IsPC\tDATAFORMAT:BOOLEAN\nFACTDEF:DEITY|Symbol\nFACTDEF:CLASS|Abb\tDATAFORMAT:String\n",
        ),
        (
            "var.lst",
            "LOCAL:PC.STAT|NUMBER=Score\nCHANNEL:PC.STAT|NUMBER=Rolled\nGLOBAL:NUMBER=StrScore\nGLOBAL:NUMBER=Hands\nGLOBAL:STRING=Size\nGLOBAL:STRING=RaceKey\nGLOBAL:BOOLEAN=Playable\nGLOBAL:NUMBER=Races\nGLOBAL:ARRAY[STRING]=Shown\nGLOBAL:ARRAY[DEITY]=Gods\nGLOBAL:DEITY=Patron\nGLOBAL:STRING=Sign\nGLOBAL:NUMBER=Blessed\nGLOBAL:NUMBER=Loyal\n",
        ),
        ("gm.lst", gm),
        (
            "stats.lst",
            "Strength\tABB:STR\tMODIFY:Score|SET|input(\"Rolled\")\nDexterity\tABB:DEX\tMODIFY:Score|SET|12\n",
        ),
        (
            "races.lst",
            "Human\tFACT:BaseSize|M\tFACT:Hands|2\tFACT:IsPC|True\nVesk\tFACT:BaseSize|M\tFACT:Hands|2\tFACT:IsPC|true\tVISIBLE:DISPLAY\nSecret\tFACT:Hands|4\tVISIBLE:NO\n",
        ),
        (
            "deities.lst",
            "None\tVISIBLE:NO\nAbadar\tFACT:Symbol|A golden key\nBesmara\tFACT:Symbol|A skull\tVISIBLE:EXPORT\n",
        ),
        (
            "domains.lst",
            "# Domain\nAir\tDESC:You can control winds.\tMODIFY:Blessed|ADD|1\nFire\tDESC:You control flame.\n",
        ),
        (
            "companions.lst",
            "FOLLOWER:AnimalCompanionLVL=1\tTYPE:Animal Companion\tMODIFY:Loyal|ADD|2\tBONUS:VAR|X|1\nFOLLOWER:AnimalCompanionLVL=2\tTYPE:Animal Companion\n",
        ),
    ])
}

fn campaign_character(gm: &str) -> Character {
    Character::new(Arc::new(campaign(gm).unwrap_or_else(|e| panic!("{e:#?}")))).expect("a character")
}

#[test]
fn get_other_reads_a_variable_of_another_object() {
    let mut c = campaign_character("MODIFY:StrScore|SET|getOther(\"PC.STAT\",\"STR\",Score)+1\n");
    let roll = |v: i64| data::SheetOp::SetInput {
        channel: "Rolled".into(),
        on: Some("STR".into()),
        value: formula::Value::Number(v.into()),
    };
    c.apply(&[roll(14)]).expect("rolled");
    assert_eq!(value(&c, "StrScore"), "15", "Strength's Score, read from the global scope");
    c.apply(&[roll(9)]).expect("rolled again");
    assert_eq!(value(&c, "StrScore"), "10", "followed as Strength's Score changes");
    let t = c.sheet().trace("StrScore").unwrap();
    let read = &t.steps[0].reads[0];
    assert_eq!(read.0.to_string(), "getOther(\"PC.STAT\", \"STR\", Score)", "explained as what it reads");
}

#[test]
fn get_other_written_wrong_is_an_error_at_its_text() {
    for (gm, code, says) in [
        (
            "MODIFY:StrScore|SET|getOther(\"PC.STAT\",\"STRR\",Score)\n",
            "data.unknown_object",
            "no object `STRR` of STAT",
        ),
        (
            "MODIFY:StrScore|SET|getOther(\"PC.NOPE\",\"STR\",Score)\n",
            "data.bad_aggregate",
            "unknown scope `PC.NOPE`",
        ),
        (
            "MODIFY:StrScore|SET|getOther(\"PC.STAT\",\"STR\",Hands2)\n",
            "data.bad_reference",
            "scope PC.STAT has no variable `Hands2`",
        ),
        (
            "MODIFY:StrScore|SET|getOther(\"PC.STAT\",RaceKey,Score)\n",
            "data.bad_reference",
            "`RaceKey` is not a variable that holds instances of PC.STAT",
        ),
        (
            "MODIFY:StrScore|SET|getOther(\"PC.STAT\",\"STR\")\n",
            "data.bad_reference",
            "getOther takes 3 arguments",
        ),
    ] {
        let errors = campaign(gm).expect_err(gm);
        let e = errors.iter().find(|e| e.code == code).unwrap_or_else(|| panic!("{gm}: {errors:#?}"));
        assert!(e.message.contains(says), "{gm}: {}", e.message);
        let at = e.at.as_ref().expect("a place");
        assert_eq!((at.file(), at.line()), ("t/gm.lst", 1), "{gm}");
    }
    let errors = campaign("MODIFY:StrScore|SET|getOther(\"PC.STAT\",\"STRR\",Score)\n").unwrap_err();
    assert_eq!(errors[0].text, "\"STRR\"", "underlines the key");
    assert!(errors[0].help.as_deref().unwrap_or("").contains("STR"), "{:?}", errors[0].help);
}

#[test]
fn get_fact_reads_an_objects_fact() {
    let gm = "MODIFY:Hands|SET|getFact(\"RACE\",\"Vesk\",\"Hands\")\nMODIFY:Size|SET|=getFact(\"race\",RaceKey,\"basesize\")\nMODIFY:RaceKey|SET|Human\nMODIFY:Playable|SET|getFact(\"RACE\",RaceKey,\"IsPC\")\nMODIFY:Patron|SET|Abadar\nMODIFY:Sign|SET|=getFact(\"DEITY\",Patron,\"Symbol\")\n";
    let c = campaign_character(gm);
    assert_eq!(value(&c, "Hands"), "2");
    assert_eq!(value(&c, "Size"), "M", "by a STRING variable naming the key, names in any case");
    assert_eq!(value(&c, "Playable"), "true", "a BOOLEAN fact written True");
    assert_eq!(value(&c, "Sign"), "A golden key", "a deity's fact, by a DEITY value");
    // A key no race has, named by a variable, is an error value, not a failed load.
    let c = campaign_character(
        "MODIFY:RaceKey|SET|Elf\nMODIFY:Size|SET|=getFact(\"RACE\",RaceKey,\"BaseSize\")\n",
    );
    let e = c.sheet().value("Size").unwrap().unwrap_err();
    assert!(e.message.contains("there is no RACE `Elf`"), "{}", e.message);
    let c = campaign_character(
        "MODIFY:RaceKey|SET|Secret\nMODIFY:Size|SET|=getFact(\"RACE\",RaceKey,\"BaseSize\")\n",
    );
    let e = c.sheet().value("Size").unwrap().unwrap_err();
    assert!(e.message.contains("RACE `Secret` has no fact `BaseSize`"), "{}", e.message);
}

#[test]
fn facts_written_wrong_are_errors_at_their_text() {
    for (gm, says, text) in [
        (
            "MODIFY:Hands|SET|getFact(\"RACES\",\"Vesk\",\"Hands\")\n",
            "there is no kind of object `RACES`",
            "\"RACES\"",
        ),
        ("MODIFY:Hands|SET|getFact(\"RACE\",\"Vesk\",\"Handz\")\n", "RACE has no fact `Handz`", "\"Handz\""),
        ("MODIFY:Hands|SET|getFact(\"RACE\",\"Elf\",\"Hands\")\n", "there is no RACE `Elf`", "\"Elf\""),
        ("MODIFY:Hands|SET|getFact(\"RACE\",\"Secret\",\"IsPC\")\n", "has no fact `IsPC`", "\"Secret\""),
        ("MODIFY:Hands|SET|getFact(\"RACE\",3,\"Hands\")\n", "named by its key, a STRING", "3"),
        (
            "MODIFY:Hands|SET|getFact(\"RACE\",\"Vesk\",\"BaseSize\")\n",
            "STRING",
            "getFact(\"RACE\",\"Vesk\",\"BaseSize\")",
        ),
    ] {
        let errors = campaign(gm).expect_err(gm);
        assert_eq!(errors.len(), 1, "{gm}: {errors:#?}");
        assert_eq!(errors[0].code, "data.formula", "{gm}");
        assert!(errors[0].message.contains(says), "{gm}: {}", errors[0].message);
        assert!(errors[0].text.contains(text), "{gm}: {:?}", errors[0].text);
    }
    let errors = campaign("MODIFY:Hands|SET|getFact(\"RACE\",\"Vesk\",\"Handz\")\n").unwrap_err();
    assert!(errors[0].message.contains("Hands") || errors[0].help.as_deref().unwrap_or("").contains("Hands"));
    // The data's own facts are checked: a fact no FACTDEF declares, a value of the wrong format.
    let base = campaign("").map(|_| ()).map_err(|e| format!("{e:#?}"));
    assert_eq!(base, Ok(()));
    let bad = load_pcgen_memory(&[
        ("t.pcc", "DATACONTROL:dc.lst\nRACE:races.lst\n"),
        ("dc.lst", "DEFAULTVARIABLEVALUE:NUMBER|0\nFACTDEF:RACE|Hands\tDATAFORMAT:Number\n"),
        ("races.lst", "Human\tFACT:Hands|two\nVesk\tFACT:Handz|2\tVISIBLE:MAYBE\n"),
    ])
    .unwrap_err();
    let codes: Vec<(&str, u32, &str)> =
        bad.iter().map(|e| (e.code.as_str(), e.at.as_ref().unwrap().line(), e.text.as_str())).collect();
    assert_eq!(
        codes,
        [("data.bad_value", 1, "two"), ("data.bad_value", 2, "MAYBE"), ("data.unknown_fact", 2, "Handz")],
        "{bad:#?}"
    );
}

#[test]
fn list_all_lists_a_kinds_objects_by_view() {
    let gm = "MODIFY:Races|SET|length(listAll(\"RACE\"))\nMODIFY:Shown|SET|=listAll(\"RACE\",\"VISIBLE_DISPLAY\")\nMODIFY:Gods|SET|=listAll(\"DEITY\",\"VISIBLE_EXPORT\")\n";
    let c = campaign_character(gm);
    assert_eq!(value(&c, "Races"), "3");
    assert_eq!(value(&c, "Shown"), "[Human, Vesk]", "Secret is VISIBLE:NO");
    assert_eq!(value(&c, "Gods"), "[Abadar, Besmara]", "DEITY values; EXPORT shows on export");
    for (gm, says) in [
        ("MODIFY:Races|SET|length(listAll(\"RACE\",\"SOMETIMES\"))\n", "there is no view `SOMETIMES`"),
        ("MODIFY:Races|SET|length(listAll(\"RACEZ\"))\n", "there is no kind of object `RACEZ`"),
        ("MODIFY:Races|SET|length(listAll(RaceKey))\n", "as a string literal"),
        ("MODIFY:Races|SET|length(listAll())\n", "takes a kind and, optionally, a view"),
    ] {
        let errors = campaign(gm).expect_err(gm);
        assert!(errors[0].message.contains(says), "{gm}: {}", errors[0].message);
    }
}

#[test]
fn domains_and_companion_mods_are_objects() {
    let mut c = campaign_character("");
    let r = c.ruleset().clone();
    let kinds: Vec<&str> = r.kinds().iter().map(|k| &*k.name).collect();
    assert!(kinds.contains(&"DOMAIN") && kinds.contains(&"COMPANIONMOD"), "{kinds:?}");
    c.apply(&[
        common::add("DOMAIN", "Air", None, None),
        common::add("COMPANIONMOD", "AnimalCompanionLVL=1", Some("companion"), None),
    ])
    .expect("added");
    assert_eq!(value(&c, "Blessed"), "1", "the domain's MODIFY applies");
    assert_eq!(value(&c, "Loyal"), "2", "the companion mod's, keyed by what it follows");
    c.apply(&[data::SheetOp::RemoveObject("Air".into())]).expect("removed");
    assert_eq!(value(&c, "Blessed"), "0");
}
