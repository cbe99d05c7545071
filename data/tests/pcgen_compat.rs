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
