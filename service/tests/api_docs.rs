//! The sessions `docs/api.md` shows, run: each block after a `<!-- session: NAME -->` marker is
//! a console session whose `$ sheetd client …` lines are run against a real `sheetd serve`
//! (fresh, auth off) and whose other lines must appear in the command's output, in order. A
//! line `…` stands for lines left out; a line ending in `…` for the rest of its line.

#[path = "common/server.rs"]
mod server;

use server::Server;
use std::path::Path;
use std::process::Command;

/// A session's commands, each with the lines expected of it.
type Session = Vec<(String, Vec<String>)>;

/// The sessions of a document, by name.
fn sessions(doc: &str) -> Vec<(String, Session)> {
    let mut out = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("<!-- session: ").and_then(|l| l.strip_suffix(" -->")) else {
            continue;
        };
        assert_eq!(lines.next(), Some("```console"), "session {name}: a console block follows its marker");
        let mut commands: Session = Vec::new();
        for l in lines.by_ref().take_while(|l| *l != "```") {
            match l.strip_prefix("$ ") {
                Some(c) => commands.push((c.to_owned(), Vec::new())),
                None => commands.last_mut().expect("output after a command").1.push(l.to_owned()),
            }
        }
        out.push((name.to_owned(), commands));
    }
    out
}

/// A command line's words: plain words and single-quoted strings, as a shell reads these.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('\'') {
            let end = quoted.find('\'').expect("a closing quote");
            out.push(quoted[..end].to_owned());
            rest = quoted[end + 1..].trim_start();
        } else {
            let end = rest.find(' ').unwrap_or(rest.len());
            out.push(rest[..end].to_owned());
            rest = rest[end..].trim_start();
        }
    }
    out
}

/// Whether `expected` (with `…` as above) appears in `actual`, in order.
fn matches(expected: &[String], actual: &str) -> Result<(), String> {
    let mut got = actual.lines();
    for e in expected.iter().filter(|e| e.as_str() != "…") {
        let found = match e.strip_suffix('…') {
            Some(prefix) => got.any(|a| a.starts_with(prefix)),
            None => got.any(|a| a == e),
        };
        if !found {
            return Err(format!("expected, in order: {e:?}"));
        }
    }
    Ok(())
}

#[test]
fn the_sessions_in_api_md_run_as_shown() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(root.join("docs/api.md")).expect("docs/api.md");
    let all = sessions(&doc);
    assert!(!all.is_empty(), "docs/api.md has sessions");
    for (name, commands) in all {
        let dir = tempfile::tempdir().expect("temp dir");
        let server = Server::start(&dir.path().join("data"), &[]);
        for (command, expected) in &commands {
            let w = words(command);
            assert_eq!((w[0].as_str(), w[1].as_str()), ("sheetd", "client"), "{name}: {command}");
            let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
                .args(["client", "--server", &server.url])
                .args(&w[2..])
                .current_dir(&root)
                .output()
                .expect("sheetd runs");
            let said =
                format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            let failed = expected.first().is_some_and(|l| l.starts_with("error:"));
            assert_eq!(!out.status.success(), failed, "{name}: `{command}` exit status; it said:\n{said}");
            if let Err(e) = matches(expected, &said) {
                panic!("{name}: `{command}`: {e}; it said:\n{said}");
            }
        }
    }
}

#[test]
fn expected_lines_match_in_order_with_ellipses() {
    let lines = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(matches(&lines(&["a", "…", "c…"]), "a\nb\ncat").is_ok());
    assert!(matches(&lines(&["c", "a"]), "a\nb\nc").is_err(), "order matters");
    assert_eq!(
        words(r#"sheetd client x --step '{"a": 1}' y"#),
        ["sheetd", "client", "x", "--step", r#"{"a": 1}"#, "y"]
    );
}
