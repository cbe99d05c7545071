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

/// A formula or a value that starts with `-` is a formula or a value, not a flag.
#[test]
fn negative_numbers_are_not_flags() {
    let out = sheetd(&["eval", "-7%3"], None);
    assert_eq!((text(&out.stdout).as_str(), out.status.code()), ("-1\n", Some(0)), "{}", text(&out.stderr));
    let out = sheetd(&["eval", "--input", "-3", "value() * 2"], None);
    assert_eq!(text(&out.stdout), "-6\n");
    let out = sheetd(&["eval", "--var", "X=-2", "X * 3", "--verbose"], None);
    assert!(text(&out.stdout).starts_with("-6\n"), "{}", text(&out.stdout));
}

/// A server that is not there: the cause, down to the system's word for it.
#[test]
fn a_refused_connection_says_why() {
    let out = sheetd(&["client", "--server", "127.0.0.1:1", "sheets"], None);
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        said.contains("cannot connect to http://127.0.0.1:1") && said.contains("Connection refused"),
        "{said}"
    );
}

/// A misspelled step is said before anything is sent, with the step meant and every step.
#[test]
fn a_misspelled_step_lists_the_steps() {
    let out = sheetd(
        &[
            "client",
            "--server",
            "127.0.0.1:1",
            "create",
            "--step",
            r#"{"add_objekt": {"kind": "RACE", "key": "x"}}"#,
        ],
        None,
    );
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(said.contains("unknown step `add_objekt` (did you mean `add_object`?)"), "{said}");
    assert!(said.contains("add_object, remove_object, set_input"), "{said}");
    assert!(!said.contains("cannot connect"), "read before connecting: {said}");
}

/// Completion scripts and manual pages come from the command line's own grammar.
#[test]
fn completions_and_manual_pages_cover_every_subcommand() {
    for shell in ["bash", "zsh", "fish"] {
        let out = sheetd(&["completions", shell], None);
        let script = text(&out.stdout);
        assert!(
            out.status.success() && script.contains("why-changed") && script.contains("request-id"),
            "{shell}"
        );
    }
    let out = sheetd(&["man"], None);
    assert!(text(&out.stdout).contains(".TH sheetd 1"), "{}", text(&out.stdout));
    let dir = tempfile::tempdir().expect("temp dir");
    let out = sheetd(&["man", "--out", &dir.path().display().to_string()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for page in
        ["sheetd.1", "sheetd-serve.1", "sheetd-client.1", "sheetd-client-apply.1", "sheetd-store-verify.1"]
    {
        let roff = std::fs::read_to_string(dir.path().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(roff.contains(".TH"), "{page}");
    }
    let apply = std::fs::read_to_string(dir.path().join("sheetd-client-apply.1")).expect("page");
    assert!(apply.contains("request\\-id"), "the flags are on the page: {apply}");
    // Rendered by man(1) where it is installed.
    if let Ok(out) = Command::new("man")
        .arg("-l")
        .arg(dir.path().join("sheetd-client-apply.1"))
        .env("MANPAGER", "cat")
        .output()
    {
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("sheetd-client-apply"), "{}", text(&out.stdout));
    }
}

/// `--version` names the commit built, as git has it.
#[test]
fn the_version_names_its_commit() {
    let out = sheetd(&["--version"], None);
    let said = text(&out.stdout);
    assert!(said.starts_with(&format!("sheetd {} (commit ", env!("CARGO_PKG_VERSION"))), "{said}");
    let head = Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output();
    if let Some(head) = head.ok().filter(|o| o.status.success()) {
        assert!(said.contains(text(&head.stdout).trim()), "{said}");
    }
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
