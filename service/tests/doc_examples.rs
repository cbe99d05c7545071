//! The examples of `README.md` and `docs/*.md`, run, so they cannot drift:
//! - each block after a `<!-- session: NAME -->` marker is a console session whose
//!   `$ sheetd client …` lines are run against a real `sheetd serve` (fresh, auth off) and whose
//!   other lines must appear in the command's output, in order (a line `…` stands for lines left
//!   out; a line ending in `…` for the rest of its line);
//! - each TOML block after a `<!-- check: ruleset -->` marker must load: `sheetd check` on it
//!   succeeds;
//! - each JSON block after a `<!-- check: scenario -->` marker runs with `sheetd solve --scenario`
//!   with every step accepted;
//! - each YAML block after a `<!-- check: manifest -->` marker (Kubernetes manifests) runs
//!   sheetd with arguments its CLI accepts.

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
        let mut continued = false;
        for l in lines.by_ref().take_while(|l| *l != "```") {
            if continued {
                // A command's line ending in `\` goes on on the next.
                let command = &mut commands.last_mut().expect("a command").0;
                command.push(' ');
                command.push_str(l.trim().trim_end_matches('\\').trim_end());
                continued = l.ends_with('\\');
                continue;
            }
            match l.strip_prefix("$ ") {
                Some(c) => {
                    continued = c.ends_with('\\');
                    commands.push((c.trim_end_matches('\\').trim_end().to_owned(), Vec::new()));
                }
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

/// README.md and every page of docs/, with their text.
fn documents() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut paths = vec![root.join("README.md")];
    let mut pages: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    paths.extend(pages);
    paths
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read_to_string(&p).expect("a page")))
        .collect()
}

/// The blocks marked `<!-- check: WHAT -->`, whose fence says `lang`.
fn marked(doc: &str, what: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = doc.lines();
    let marker = format!("<!-- check: {what} -->");
    let fence = format!("```{lang}");
    while let Some(line) = lines.next() {
        if line == marker {
            assert_eq!(lines.next(), Some(fence.as_str()), "a {lang} block follows {marker}");
            out.push(lines.by_ref().take_while(|l| *l != "```").map(|l| format!("{l}\n")).collect());
        }
    }
    out
}

/// The TOML blocks marked `<!-- check: ruleset -->`.
fn rulesets(doc: &str) -> Vec<String> {
    marked(doc, "ruleset", "toml")
}

#[test]
fn the_scenarios_shown_in_the_docs_run_with_every_step_accepted() {
    let mut checked = 0;
    for (page, text) in documents() {
        for (i, scenario) in marked(&text, "scenario", "json").into_iter().enumerate() {
            let dir = tempfile::tempdir().expect("temp dir");
            let file = dir.path().join(format!("scenario-{i}.json"));
            std::fs::write(&file, scenario).expect("write");
            let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
                .args(["solve", "--json", "--scenario"])
                .arg(&file)
                .output()
                .expect("runs");
            let said = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{page}: scenario {i}: {said}{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!said.contains("\"error\""), "{page}: scenario {i} has a rejected step:\n{said}");
            checked += 1;
        }
    }
    assert!(checked > 0, "docs/solver.md's scenario is marked");
}

#[test]
fn the_rulesets_shown_in_the_docs_load() {
    let mut checked = 0;
    for (page, text) in documents() {
        for (i, toml) in rulesets(&text).into_iter().enumerate() {
            let dir = tempfile::tempdir().expect("temp dir");
            let file = dir.path().join(format!("example-{i}.toml"));
            std::fs::write(&file, toml).expect("write");
            let out =
                Command::new(env!("CARGO_BIN_EXE_sheetd")).arg("check").arg(&file).output().expect("runs");
            let said =
                format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(out.status.success(), "{page}: ruleset example {i} does not load:\n{said}");
            checked += 1;
        }
    }
    assert!(checked > 0, "the annotated example of docs/ruleset-format.md is marked");
}

#[test]
fn the_sessions_in_the_docs_run_as_shown() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let all: Vec<_> = documents().into_iter().flat_map(|(_, text)| sessions(&text)).collect();
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"readme") && names.contains(&"api-v1"), "{names:?}");
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

/// The `sheetd` command lines of the YAML manifests marked `<!-- check: manifest -->`
/// (docs/deploy.md): each `args:` (and each `command:` running sheetd) is a flow sequence of
/// strings, parsed as the CLI parses its arguments, with `$(JOB_COMPLETION_INDEX)` as Kubernetes
/// would give it.
#[test]
fn the_manifests_shown_in_the_docs_run_sheetd_with_valid_arguments() {
    use clap::Parser;
    let mut checked = 0;
    for (page, text) in documents() {
        for (i, yaml) in marked(&text, "manifest", "yaml").into_iter().enumerate() {
            for line in yaml.lines() {
                let t = line.trim_start().trim_start_matches("- ");
                let list = t.strip_prefix("args: ").or_else(|| {
                    t.find("command: ").map(|at| t[at + "command: ".len()..].trim_end_matches(" }"))
                });
                let Some(list) = list else { continue };
                let words: Vec<String> = serde_json::from_str(list).unwrap_or_else(|e| {
                    panic!("{page}: manifest {i}: `{list}` is not a list of strings: {e}")
                });
                let words: Vec<String> =
                    words.into_iter().map(|w| w.replace("$(JOB_COMPLETION_INDEX)", "3")).collect();
                let words = match words.first() {
                    Some(w) if w.ends_with("/sheetd") => words[1..].to_vec(),
                    _ => words,
                };
                let argv = std::iter::once("sheetd".to_owned()).chain(words.iter().cloned());
                if let Err(e) = sheetd::cli::Cli::try_parse_from(argv) {
                    panic!("{page}: manifest {i}: sheetd {words:?}:\n{e}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 3, "docs/deploy.md's Deployment (args, probe) and Job are checked: {checked}");
}
