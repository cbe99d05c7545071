//! End-to-end tests of the `sheetd` binary, run as a user would run it.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn sheetd(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sheetd starts");
    if let Some(input) = stdin {
        child.stdin.take().expect("stdin is piped").write_all(input.as_bytes()).expect("write stdin");
    }
    drop(child.stdin.take());
    child.wait_with_output().expect("sheetd finishes")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn eval_prints_the_value() {
    let out = sheetd(&["eval", "--var", "Score=14", "floor((Score-10)/2)"], None);
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "2\n");
    let out = sheetd(&["eval", "0.1+0.2"], None);
    assert_eq!(text(&out.stdout), "0.3\n");
    let out =
        sheetd(&["eval", "--function", "d20Mod=floor((arg(0)-10)/2)", "--var", "STR=7", "d20Mod(STR)"], None);
    assert_eq!(text(&out.stdout), "-2\n");
    let out = sheetd(&["eval", "--input", "6", "value() * 2"], None);
    assert_eq!(text(&out.stdout), "12\n");
    let out = sheetd(&["eval", "--var", "CL=Special Fighter=3", "CL=Special Fighter + 1"], None);
    assert_eq!(text(&out.stdout), "4\n");
}

#[test]
fn verbose_describes_the_formula() {
    let out = sheetd(&["eval", "-v", "--var", "a=1", "--var", "Flag=true", "if(Flag,a,2)*(1+1)"], None);
    let s = text(&out.stdout);
    assert!(s.starts_with("2\n"), "{s}");
    assert!(s.contains("format:    NUMBER"), "{s}");
    assert!(s.contains("static:    no"), "{s}");
    assert!(s.contains("reads:     Flag, a"), "{s}");
    assert!(s.contains("canonical: if(Flag, a, 2) * (1 + 1)"), "{s}");
}

#[test]
fn errors_are_rendered_with_the_text_and_exit_1() {
    let out = sheetd(&["eval", "--var", "Score=14", "floor((Scroe-10)/2)"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(err.contains("semantics.unknown_variable"), "{err}");
    assert!(err.contains("unknown variable `Scroe`"), "{err}");
    assert!(err.contains("floor((Scroe-10)/2)"), "quotes the formula: {err}");
    assert!(err.contains("──┬──"), "underlines the offender: {err}");

    let out = sheetd(&["eval", "1/0"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("evaluation.division_by_zero"));

    let out = sheetd(&["eval", "--function", "f=arg(0)+", "f(1)"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("function f"), "{}", text(&out.stderr));
}

#[test]
fn bad_arguments_exit_2() {
    let out = sheetd(&["eval", "--var", "novalue", "1"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("expected NAME=VALUE"));
    let out = sheetd(&["eval"], None);
    assert_eq!(out.status.code(), Some(2));
    let out = sheetd(&["eval", "--help"], None);
    assert!(text(&out.stdout).contains("Examples:"));
}

#[test]
fn jsonl_answers_every_line_in_order() {
    let input = concat!(
        r#"{"formula": "5/2"}"#,
        "\n",
        "this is not json\n",
        r#"{"formula": "a*2", "vars": {"a": {"format": "NUMBER", "value": "1.25"}}}"#,
        "\n",
        r#"{"formula": "2+"}"#,
        "\n",
    );
    let out = sheetd(&["eval", "--jsonl"], Some(input));
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0], serde_json::json!({"format": "NUMBER", "value": "2.5"}));
    assert_eq!(lines[1]["error"]["stage"], "input");
    assert_eq!(lines[2], serde_json::json!({"format": "NUMBER", "value": "2.5"}));
    assert_eq!(lines[3]["error"]["code"], "parse.unexpected_end");
    assert_eq!(lines[3]["error"]["span"], serde_json::json!([2, 2]));
}

/// Output piped into a reader that stops early (`| head`) ends sheetd quietly, by SIGPIPE as
/// for other Unix tools, not with a "broken pipe" panic.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_quietly() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["eval", "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sheetd starts");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let writer = std::thread::spawn(move || {
        for _ in 0..50_000 {
            if stdin.write_all(b"{\"formula\": \"1 + 1\"}\n").is_err() {
                break;
            }
        }
    });
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout is piped")).read_line(&mut first).expect("a line");
    assert!(first.contains("\"2\""), "{first}");
    // The reader is gone: the next writes hit a closed pipe.
    let out = child.wait_with_output().expect("sheetd finishes");
    writer.join().expect("writer");
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
    assert!(!out.status.success());
}

/// `--dialect creature`: a creature feature's postfix formula, compiled and evaluated; its
/// errors point at the token inside the formula, and evaluation errors at the compiled one.
#[test]
fn eval_takes_a_creature_features_postfix_formula() {
    let out = sheetd(
        &["eval", "--dialect", "creature", "--var", "INT=3", "--var", "PROF=2", "(8,INT,PROF,+,+)"],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "13\n");
    let out = sheetd(
        &[
            "eval",
            "--dialect",
            "creature",
            "-v",
            "--var",
            "STR=16",
            "--var",
            "NV1=0",
            "(self.STR,2,*,NV1,store,1,+)",
        ],
        None,
    );
    let s = text(&out.stdout);
    assert!(s.starts_with("33\n"), "{s}");
    assert!(s.contains("stores:    NV1 = STR * 2"), "{s}");
    for (formula, code, says, underlined) in [
        ("(1,+)", "postfix.underflow", "`+` takes 2 values, but the stack has 1", "   ·    ┬"),
        ("(8,INT,PROF,+,+)", "postfix.unknown_name", "unknown variable `PROF`", "   ·        ──┬─"),
        ("(1,2)", "postfix.leftover", "`1` here is never used", "   ·  ┬"),
    ] {
        let out = sheetd(&["eval", "--dialect", "creature", "--var", "INT=3", formula], None);
        assert_eq!(out.status.code(), Some(1), "{formula}");
        let err = text(&out.stderr);
        assert!(err.contains(code) && err.contains(says), "{formula}: {err}");
        assert!(err.contains(formula) && err.contains(underlined), "{formula}: {err}");
    }
    let out = sheetd(&["eval", "--dialect", "creature", "(1,0,/)"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("evaluation.division_by_zero"));
    let out = sheetd(&["eval", "--dialect", "klingon", "1"], None);
    assert_eq!(out.status.code(), Some(2));
}
