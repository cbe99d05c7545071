//! The boundary rules of `docs/ARCHITECTURE.md`, checked over the source tree (as
//! rust-analyzer's tidy tests do): who may import whom, who may name tonic, prost and the
//! generated API, who may print, how long a function may be, and that the code map lists the
//! tree as it is.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir` (relative to the repository root), sorted.
fn sources(dir: &str) -> Vec<PathBuf> {
    fn walk(p: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(p) else { return };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join(dir), &mut out);
    out.sort();
    out.into_iter().map(|p| p.strip_prefix(root()).expect("under the root").to_owned()).collect()
}

/// The code of a file: its lines without comments (doc comments name things freely).
fn code(path: &Path) -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(root().join(path)).expect("readable source");
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.split(" // ").next().unwrap_or(l).to_owned()))
        .collect()
}

/// Whether `line` names `word` as a whole identifier path segment.
fn names(line: &str, word: &str) -> bool {
    line.match_indices(word).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + word.len()..].chars().next();
        let ident = |c: char| c.is_alphanumeric() || c == '_';
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// Lines of the files under `dirs` (except those allowed) that name any of `words`.
fn offenders(dirs: &[&str], allowed: &[&str], words: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for dir in dirs {
        for file in sources(dir) {
            let shown = file.display().to_string();
            if allowed.iter().any(|a| shown.starts_with(a)) {
                continue;
            }
            for (n, line) in code(&file) {
                for w in words {
                    if names(&line, w) {
                        out.push(format!("{shown}:{n}: names `{w}`: {}", line.trim()));
                    }
                }
            }
        }
    }
    out
}

/// Rule 1: the crates depend one way, formula ← solver ← data ← events ← dialects ← service.
#[test]
fn crates_depend_one_way() {
    let layers = ["formula", "solver", "data", "events", "dialects", "service"];
    let packages =
        ["sheetd-formula", "sheetd-solver", "sheetd-data", "sheetd-events", "sheetd-dialects", "sheetd"];
    for (i, crate_dir) in layers.iter().enumerate() {
        let manifest = std::fs::read_to_string(root().join(crate_dir).join("Cargo.toml")).expect("manifest");
        let deps = manifest.split("[dependencies]").nth(1).unwrap_or("").split("\n[").next().unwrap_or("");
        for higher in &packages[i + 1..] {
            let named = deps.lines().any(|l| l.split(['=', '.', ' ']).next() == Some(higher));
            assert!(!named, "{crate_dir} must not depend on {higher}");
        }
        for (higher_lib, _) in layers[i + 1..].iter().map(|l| (*l, ())) {
            let lib = if higher_lib == "service" { "sheetd" } else { higher_lib };
            let bad = offenders(&[&format!("{crate_dir}/src")], &[], &[&format!("{lib}::")]);
            assert!(bad.is_empty(), "{crate_dir} names a higher layer:\n{}", bad.join("\n"));
        }
    }
}

/// Rule 2: only `service/src/grpc/` and the CLI's client (`cli/client.rs`, `cli/client_ops.rs`)
/// name tonic or the generated API;
/// prost also in `service/src/store/`, whose records are its own protobuf messages, and in
/// `service/src/wire.rs`, the hand-written encodings both share.
#[test]
fn only_the_wire_edge_names_the_wire() {
    let bad = offenders(
        &["service/src"],
        &["service/src/grpc/", "service/src/cli/client.rs", "service/src/cli/client_ops.rs"],
        &["tonic", "tonic_types", "tonic_web", "proto", "pb"],
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    let bad = offenders(
        &["service/src"],
        &[
            "service/src/grpc/",
            "service/src/cli/client.rs",
            "service/src/cli/client_ops.rs",
            "service/src/store/",
            "service/src/wire.rs",
        ],
        &["prost"],
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    for lib in ["formula/src", "solver/src", "data/src", "events/src", "dialects/src"] {
        let bad = offenders(&[lib], &[], &["tonic", "prost"]);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }
}

/// Rule 3: only the CLI prints; libraries, the engine, the store and the wire edge return values
/// and log through `tracing`.
#[test]
fn only_the_cli_prints() {
    let prints = ["println!", "eprintln!", "print!", "eprint!", "dbg!"];
    let words: Vec<&str> = prints.iter().map(|p| p.trim_end_matches('!')).collect();
    let mut bad = Vec::new();
    for dir in ["formula/src", "solver/src", "data/src", "events/src", "dialects/src", "service/src"] {
        for file in sources(dir) {
            let shown = file.display().to_string();
            if shown.starts_with("service/src/cli/") || shown.ends_with("/tests.rs") {
                continue;
            }
            for (n, line) in code(&file) {
                if words.iter().any(|w| line.contains(&format!("{w}!("))) {
                    bad.push(format!("{shown}:{n}: {}", line.trim()));
                }
            }
        }
    }
    assert!(bad.is_empty(), "prints outside the CLI:\n{}", bad.join("\n"));
}

/// Rule 4: inside the service, layers import one way: store ← engine ← grpc ← cli; the engine
/// knows no JSON; json and render are output helpers below grpc and cli.
#[test]
fn service_layers_import_one_way() {
    let rules: &[(&str, &[&str])] = &[
        ("service/src/store/", &["crate::engine", "crate::grpc", "crate::cli", "crate::json", "serde_json"]),
        ("service/src/engine/", &["crate::grpc", "crate::cli", "crate::json", "crate::render", "serde_json"]),
        ("service/src/grpc/", &["crate::cli", "crate::json", "crate::render"]),
        ("service/src/json.rs", &["crate::grpc", "crate::cli"]),
        (
            "service/src/wire.rs",
            &["crate::engine", "crate::grpc", "crate::store", "crate::cli", "crate::json", "serde_json"],
        ),
        (
            "service/src/problem.rs",
            &["crate::engine", "crate::grpc", "crate::cli", "crate::json", "serde_json"],
        ),
        ("service/src/render.rs", &["crate::grpc", "crate::cli", "crate::engine"]),
    ];
    let mut bad = Vec::new();
    for (scope, forbidden) in rules {
        for file in sources("service/src").into_iter().filter(|f| f.display().to_string().starts_with(scope))
        {
            for (n, line) in code(&file) {
                for f in *forbidden {
                    if line.contains(f) {
                        bad.push(format!(
                            "{}:{n}: {scope} must not use {f}: {}",
                            file.display(),
                            line.trim()
                        ));
                    }
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Rule 5: no function over 80 lines without a reason written beside it (a `// long:` comment
/// on one of the lines just above it).
#[test]
fn long_functions_say_why() {
    let mut bad = Vec::new();
    for dir in
        ["formula/src", "solver/src", "data/src", "events/src", "dialects/src", "service/src", "benches"]
    {
        for file in sources(dir) {
            let text = std::fs::read_to_string(root().join(&file)).expect("readable");
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let t = line.trim_start();
                let is_fn =
                    ["fn ", "pub fn ", "pub(crate) fn ", "pub(super) fn ", "async fn ", "pub async fn "]
                        .iter()
                        .any(|p| t.starts_with(p));
                if !is_fn || line.trim_end().ends_with(';') {
                    continue;
                }
                let indent = &line[..line.len() - t.len()];
                let end = lines[i..]
                    .iter()
                    .position(|l| l.starts_with(indent) && l.trim_end() == format!("{indent}}}"))
                    .map_or(0, |p| p + 1);
                let reason = lines[i.saturating_sub(6)..i].iter().any(|l| l.contains("// long:"));
                if end > 80 && !reason {
                    bad.push(format!("{}:{}: {end} lines: {}", file.display(), i + 1, t));
                }
            }
        }
    }
    assert!(bad.is_empty(), "functions over 80 lines with no `// long:` reason:\n{}", bad.join("\n"));
}

/// Rule 6: the code map in `docs/ARCHITECTURE.md` names every source file, and every file it
/// names exists.
#[test]
fn the_code_map_matches_the_tree() {
    let map = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).expect("architecture");
    let mut named = BTreeSet::new();
    let mut section = String::new();
    for line in map.lines() {
        if let Some(rest) = line.strip_prefix("### `") {
            section = rest.split('`').next().unwrap_or("").to_owned();
            continue;
        }
        if !line.starts_with("| `") || section.is_empty() {
            continue;
        }
        let cell = line.split('|').nth(1).unwrap_or("");
        for path in cell.split('`').skip(1).step_by(2) {
            named.insert(format!("{section}{path}"));
        }
    }
    let missing: Vec<&String> =
        named.iter().filter(|p| p.ends_with(".rs") && !root().join(p.as_str()).exists()).collect();
    assert!(missing.is_empty(), "the code map names files that do not exist: {missing:?}");
    let mut unlisted = Vec::new();
    for dir in [
        "formula/src",
        "solver/src",
        "data/src",
        "events/src",
        "events/tests",
        "dialects/src",
        "service/src",
        "service/tests",
    ] {
        for file in sources(dir) {
            let shown = file.display().to_string();
            let listed = named.contains(&shown)
                || named.iter().any(|n| n.ends_with('/') && shown.starts_with(n.as_str()));
            if !listed {
                unlisted.push(shown);
            }
        }
    }
    assert!(unlisted.is_empty(), "source files missing from the code map: {unlisted:?}");
}
