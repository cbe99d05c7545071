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
