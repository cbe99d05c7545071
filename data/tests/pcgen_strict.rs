//! PCGen's own token tests, as a table: the lines PCGen rejects are errors at file:line:col,
//! and the lines it accepts load. Each case adds one line to a small campaign held in memory.

use std::path::Path;
use std::sync::Arc;

/// The campaign every case starts from: a format default for NUMBER and STRING (`STRING|`,
/// an empty string, is legal), one global variable and one global modifier.
const BASE: &[(&str, &str)] = &[
    ("t.pcc", "CAMPAIGN:Strict\nDATACONTROL:dc.lst\nVARIABLE:var.lst\nGLOBALMODIFIER:gm.lst\n"),
    ("dc.lst", "DEFAULTVARIABLEVALUE:NUMBER|0\nDEFAULTVARIABLEVALUE:STRING|\n"),
    ("var.lst", "GLOBAL:NUMBER=Hands\n"),
    ("gm.lst", "MODIFY:Hands|SET|2\n"),
];

const ROOT: &str = "/pcgen-strict/data/t";

/// Loads the base campaign with `line` appended to `file`; returns the errors (empty when it
/// loads) and the 1-based line number the appended line has.
fn load_with_line(file: &str, line: &str) -> (Vec<data::Diagnostic>, u32) {
    let mut bundle = data::Bundle::default();
    let mut at_line = 0;
    for (name, text) in BASE {
        let mut text = (*text).to_owned();
        if *name == file {
            text.push_str(line);
            text.push('\n');
            at_line = text.lines().count() as u32;
        }
        bundle.files.insert(format!("{ROOT}/{name}"), Arc::from(text));
    }
    assert!(at_line > 0, "no base file `{file}`");
    let files = data::Files::memory(bundle);
    let errors = match data::load_with(&[Path::new(ROOT).join("t.pcc")], &files) {
        Ok(_) => Vec::new(),
        Err(errors) => errors,
    };
    (errors, at_line)
}

/// (case, file, line, code, part of the message, the text the error points at)
const REJECTED: &[(&str, &str, &str, &str, &str, &str)] = &[
    (
        "second GLOBAL on a line",
        "var.lst",
        "GLOBAL:NUMBER=Legs\tGLOBAL:NUMBER=Arms",
        "data.syntax",
        "GLOBAL must be the first token on its line",
        "GLOBAL:NUMBER=Arms",
    ),
    (
        "LOCAL after GLOBAL",
        "var.lst",
        "GLOBAL:NUMBER=Legs\tEXPLANATION:legs\tLOCAL:PC.STAT|NUMBER=Arms",
        "data.syntax",
        "LOCAL must be the first token on its line",
        "LOCAL:PC.STAT|NUMBER=Arms",
    ),
    (
        "bad name",
        "var.lst",
        "GLOBAL:Bad-Name",
        "data.bad_name",
        "`Bad-Name` is not a valid variable name",
        "Bad-Name",
    ),
    (
        "name with a space",
        "var.lst",
        "GLOBAL:NUMBER=Illegal Name!",
        "data.bad_name",
        "`Illegal Name!` is not a valid variable name",
        "Illegal Name!",
    ),
    (
        "local bad name",
        "var.lst",
        "LOCAL:PC.EQUIPMENT|NUMBER=Illegal Name!",
        "data.bad_name",
        "not a valid variable name",
        "Illegal Name!",
    ),
    ("bare bad name", "var.lst", "Bad-Name", "data.bad_name", "not a valid variable name", "Bad-Name"),
    (
        "name from a digit",
        "var.lst",
        "GLOBAL:NUMBER=2Hands",
        "data.bad_name",
        "start with a letter",
        "2Hands",
    ),
    ("double equal", "var.lst", "GLOBAL:STRING==Pipe", "data.syntax", "`STRING==Pipe` has 2 `=`", "=Pipe"),
    ("only equal", "var.lst", "GLOBAL:=", "data.syntax", "names no format before `=`", "="),
    ("empty format", "var.lst", "GLOBAL:=Pipe", "data.syntax", "names no format before `=`", "=Pipe"),
    ("empty name", "var.lst", "GLOBAL:NUMBER=", "data.syntax", "the variable has no name", "NUMBER="),
    (
        "local three parts",
        "var.lst",
        "LOCAL:PC.EQUIPMENT|STRING|Pipe",
        "data.syntax",
        "LOCAL is written LOCAL:SCOPE|FORMAT=Name with one `|`",
        "|Pipe",
    ),
    (
        "local double pipe",
        "var.lst",
        "LOCAL:PC.EQUIPMENT||STRING=Pipe",
        "data.syntax",
        "`PC.EQUIPMENT||STRING=Pipe` has 2",
        "|STRING=Pipe",
    ),
    (
        "local empty scope",
        "var.lst",
        "LOCAL:|STRING=Value",
        "data.syntax",
        "LOCAL names no scope",
        "|STRING=Value",
    ),
    (
        "local three equals",
        "var.lst",
        "LOCAL:PC.EQUIPMENT|STRING=Pipe=Too",
        "data.syntax",
        "`STRING=Pipe=Too` has 2 `=`",
        "=Too",
    ),
    ("local only equal", "var.lst", "LOCAL:PC.EQUIPMENT|=", "data.syntax", "names no format", "="),
    ("local empty name", "var.lst", "LOCAL:PC.EQUIPMENT|NUMBER=", "data.syntax", "no name", "NUMBER="),
    (
        "local bad scope",
        "var.lst",
        "LOCAL:BADSCOPE|STRING=Illegal",
        "data.unknown_scope",
        "BADSCOPE",
        "BADSCOPE",
    ),
    ("bad format", "var.lst", "GLOBAL:BADFORMAT=Illegal", "data.unknown_format", "BADFORMAT", "BADFORMAT"),
    (
        "a name re-declared with another format",
        "var.lst",
        "GLOBAL:STRING=Hands",
        "data.variable_conflict",
        "already declared as NUMBER",
        "Hands",
    ),
    (
        "default with a double pipe",
        "dc.lst",
        "DEFAULTVARIABLEVALUE:BOOLEAN||False",
        "data.syntax",
        "`BOOLEAN||False` has 2",
        "|False",
    ),
    (
        "default with too many parts",
        "dc.lst",
        "DEFAULTVARIABLEVALUE:BOOLEAN|False|True",
        "data.syntax",
        "with one `|`",
        "|True",
    ),
    ("default with no format", "dc.lst", "DEFAULTVARIABLEVALUE:|3", "data.syntax", "names no format", "|3"),
    (
        "default of an unknown format",
        "dc.lst",
        "DEFAULTVARIABLEVALUE:BADTYPE|45",
        "data.unknown_format",
        "BADTYPE",
        "BADTYPE",
    ),
    (
        "default that is not a number",
        "dc.lst",
        "DEFAULTVARIABLEVALUE:NUMBER|3r",
        "data.bad_format",
        "3r",
        "3r",
    ),
    (
        "function with two values",
        "dc.lst",
        "FUNCTION:MyFunction\tVALUE:3+4\tVALUE:2+3",
        "data.bad_function",
        "FUNCTION:MyFunction has two different VALUE: tokens: `3+4`, then `2+3`",
        "2+3",
    ),
    (
        "function with a bad formula",
        "dc.lst",
        "FUNCTION:MyFunction\tVALUE:2+",
        "data.bad_function",
        "MyFunction",
        "",
    ),
];

#[test]
fn lines_pcgen_rejects_are_errors_at_their_text() {
    let mut failures = Vec::new();
    for (case, file, line, code, message, quoted) in REJECTED {
        let (errors, at_line) = load_with_line(file, line);
        let found = errors.iter().find(|e| e.code == *code && e.message.contains(message));
        let Some(e) = found else {
            failures.push(format!("{case}: expected {code} containing {message:?}, got {errors:#?}"));
            continue;
        };
        if errors.len() != 1 {
            failures.push(format!("{case}: expected one error, got {errors:#?}"));
        }
        let Some(at) = &e.at else {
            failures.push(format!("{case}: no location in {e}"));
            continue;
        };
        if at.file() != format!("t/{file}") && !at.file().ends_with(&format!("/{file}")) {
            failures.push(format!("{case}: file {} (expected {file})", at.file()));
        }
        if at.line() != at_line {
            failures.push(format!("{case}: line {} (expected {at_line})", at.line()));
        }
        if !quoted.is_empty() {
            let col = at.col() as usize;
            let pointed = line.get(col - 1..col - 1 + quoted.len());
            if e.text != *quoted || pointed != Some(quoted) {
                failures.push(format!(
                    "{case}: points at {:?} (text {:?}), expected {quoted:?}",
                    pointed, e.text
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// (case, file, line): lines PCGen's token tests accept.
const ACCEPTED: &[(&str, &str, &str)] = &[
    ("a bare name is a global NUMBER", "var.lst", "IsANumberVar"),
    ("GLOBAL with no format", "var.lst", "GLOBAL:IsANumberVar"),
    ("GLOBAL with a format", "var.lst", "GLOBAL:NUMBER=IsANumberVar"),
    (
        "an explanation after the declaration",
        "var.lst",
        "GLOBAL:STRING=Named\tEXPLANATION:Alternate Explanation!",
    ),
    ("LOCAL with no format", "var.lst", "LOCAL:PC.EQUIPMENT|IsANumberVar"),
    ("LOCAL with a format", "var.lst", "LOCAL:PC.EQUIPMENT|STRING=StringVar"),
    ("underscores and digits", "var.lst", "GLOBAL:NUMBER=Race_Reach2"),
    ("the same declaration twice", "var.lst", "GLOBAL:NUMBER=Hands"),
    ("an ordered-pair default", "dc.lst", "DEFAULTVARIABLEVALUE:ORDEREDPAIR|0,3"),
    ("the same VALUE twice", "dc.lst", "FUNCTION:MyFunction\tVALUE:3+4\tVALUE:3+4"),
];

#[test]
fn lines_pcgen_accepts_load() {
    for (case, file, line) in ACCEPTED {
        let (errors, _) = load_with_line(file, line);
        assert!(errors.is_empty(), "{case}: {errors:#?}");
    }
}
