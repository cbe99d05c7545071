//! `sheetd check --format`: the diagnostics of a check for machines. `json` (one document),
//! `github` (GitHub Actions workflow commands, which annotate the lines of a pull request) and
//! `sarif` (SARIF 2.1.0, for code-scanning tools and editors). The human format is rendered by
//! [`crate::render`]; every format carries the same code, message, place and hint.

use data::Diagnostic;
use serde_json::{Value as Json, json};
use std::path::{Path, PathBuf};

/// How `sheetd check` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// rustc-like diagnostics on stderr and a summary on stdout.
    Human,
    /// One JSON document on stdout: `ok`, `errors`, `warnings`, and the summary when it loads.
    Json,
    /// GitHub Actions workflow commands (`::error file=…,line=…::message`) on stdout.
    Github,
    /// A SARIF 2.1.0 log on stdout.
    Sarif,
}

/// One diagnostic, as the machine formats show it.
pub struct Item<'a> {
    pub d: &'a Diagnostic,
    pub warning: bool,
    /// The file as a path the user can open (see [`Places`]); `None` when it has no place.
    pub path: Option<String>,
}

/// Turns the file names diagnostics carry (a PCGen file is named from PCGen's `data` folder)
/// into paths that open from the current directory, for annotations and editors.
pub struct Places {
    roots: Vec<PathBuf>,
}

impl Places {
    /// For the rulesets `paths`: a name is looked for as given, then under each ruleset's
    /// folder and the `data` folder above it.
    pub fn new(paths: &[PathBuf]) -> Places {
        let mut roots = Vec::new();
        for p in paths {
            let abs = std::path::absolute(p).unwrap_or_else(|_| p.clone());
            let dir = if abs.is_dir() {
                abs.clone()
            } else {
                abs.parent().map(Path::to_path_buf).unwrap_or_default()
            };
            roots.push(dir);
            if let Some(data) = abs.ancestors().find(|a| a.file_name().is_some_and(|n| n == "data")) {
                roots.push(data.to_path_buf());
            }
        }
        Places { roots }
    }

    /// The path of file `name`, relative to the current directory when it is under it.
    pub fn path(&self, name: &str) -> String {
        let given = Path::new(name);
        let found = if given.exists() {
            Some(given.to_path_buf())
        } else {
            self.roots.iter().map(|r| r.join(name)).find(|p| p.exists())
        };
        let Some(found) = found else { return name.to_owned() };
        let cwd = std::env::current_dir().unwrap_or_default();
        let abs = std::path::absolute(&found).unwrap_or(found);
        abs.strip_prefix(&cwd).map(|r| r.display().to_string()).unwrap_or_else(|_| abs.display().to_string())
    }
}

/// The JSON of one diagnostic: code, severity, message, file, line, column, end column (the
/// offending text's end, exclusive), the text, help.
fn diagnostic_json(i: &Item<'_>) -> Json {
    let d = i.d;
    let at = d.at.as_ref().filter(|a| a.line() > 0);
    json!({
        "code": d.code.as_str(),
        "severity": if i.warning { "warning" } else { "error" },
        "message": d.message,
        "file": at.and(i.path.clone()),
        "line": at.map(|a| a.line()),
        "column": at.map(|a| a.col()),
        "end_column": at.map(|a| a.col() as usize + d.text.chars().count()),
        "text": d.text,
        "help": d.help,
    })
}

/// `sheetd check --format json`.
pub fn json_report(items: &[Item<'_>], summary: Option<Json>) -> String {
    let errors: Vec<Json> = items.iter().filter(|i| !i.warning).map(diagnostic_json).collect();
    let warnings: Vec<Json> = items.iter().filter(|i| i.warning).map(diagnostic_json).collect();
    let doc = json!({ "ok": errors.is_empty(), "errors": errors, "warnings": warnings, "summary": summary });
    format!("{doc:#}\n")
}

/// Escapes a workflow command's message (`%`, CR, LF).
fn escape_data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// Escapes a workflow command's property value (also `:` and `,`).
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `sheetd check --format github`: one `::error` or `::warning` line per diagnostic.
pub fn github_report(items: &[Item<'_>]) -> String {
    let mut out = String::new();
    for i in items {
        let d = i.d;
        let mut props = vec![format!("title={}", escape_property(d.code.as_str()))];
        if let (Some(at), Some(path)) = (d.at.as_ref().filter(|a| a.line() > 0), &i.path) {
            props.insert(0, format!("file={}", escape_property(path)));
            props.insert(1, format!("line={}", at.line()));
            props.insert(2, format!("col={}", at.col()));
            if !d.text.is_empty() {
                props.insert(3, format!("endColumn={}", at.col() as usize + d.text.chars().count()));
            }
        }
        let mut message = d.message.clone();
        if let Some(h) = &d.help {
            message.push_str("\nhelp: ");
            message.push_str(h);
        }
        let level = if i.warning { "warning" } else { "error" };
        out.push_str(&format!("::{level} {}::{}\n", props.join(","), escape_data(&message)));
    }
    out
}

/// `sheetd check --format sarif`: a SARIF 2.1.0 log with one run; each code is a rule.
pub fn sarif_report(items: &[Item<'_>]) -> String {
    let mut rules: Vec<&str> = items.iter().map(|i| i.d.code.as_str()).collect();
    rules.sort_unstable();
    rules.dedup();
    let results: Vec<Json> = items
        .iter()
        .map(|i| {
            let d = i.d;
            let mut text = d.message.clone();
            if let Some(h) = &d.help {
                text.push_str(" (help: ");
                text.push_str(h);
                text.push(')');
            }
            let mut r = json!({
                "ruleId": d.code.as_str(),
                "ruleIndex": rules.iter().position(|c| *c == d.code.as_str()),
                "level": if i.warning { "warning" } else { "error" },
                "message": { "text": text },
            });
            if let (Some(at), Some(path)) = (d.at.as_ref().filter(|a| a.line() > 0), &i.path) {
                let mut region = json!({ "startLine": at.line(), "startColumn": at.col() });
                if !d.text.is_empty() {
                    region["endColumn"] = json!(at.col() as usize + d.text.chars().count());
                    region["snippet"] = json!({ "text": d.text });
                }
                r["locations"] = json!([{
                    "physicalLocation": {
                        "artifactLocation": { "uri": path.replace('\\', "/") },
                        "region": region,
                    }
                }]);
            }
            r
        })
        .collect();
    let doc = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "sheetd",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules.iter().map(|c| json!({ "id": c, "name": c })).collect::<Vec<_>>(),
            }},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    });
    format!("{doc:#}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_commands_escape_what_github_reads_as_syntax() {
        assert_eq!(escape_data("50% a\nb"), "50%25 a%0Ab");
        assert_eq!(escape_property("a:b,c"), "a%3Ab%2Cc");
    }
}
