//! `sheetd check RULESET...`: load rulesets (each on top of the ones before) and their event
//! rules, and print a summary, or every problem found with its place and the offending text:
//! for people (rustc-like, with "did you mean" hints) or, with `--format`, for machines
//! ([`super::check_format`]).

use super::check_format::{self, Format, Item, Places};
use clap::Args;
use data::Diagnostic;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `sheetd check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Rulesets: a native ruleset (a .toml file or a directory of them) or a PCGen campaign
    /// (.pcc). Later ones load on top of earlier ones.
    #[arg(value_name = "RULESET")]
    pub paths: Vec<PathBuf>,

    /// More rulesets, loaded after the positional ones (same as listing them).
    #[arg(long = "ruleset", value_name = "RULESET")]
    pub rulesets: Vec<PathBuf>,

    /// Also list every skipped token with how often it occurs and where it first appears.
    #[arg(long, short)]
    pub verbose: bool,

    /// Read the paths in a dialect: `creature` (feature dictionaries and creatures files),
    /// `rulescript` (card databases, `.rulescript` files), `effects` (card tables) or `wwrf`
    /// (role, team, group and attribute files, `.md` or `.txt`); see docs/dialects.md. Errors point into the dialect's files; the summary adds what the
    /// dialect read.
    #[arg(long, value_name = "DIALECT")]
    pub dialect: Option<String>,

    /// How to report: `human` (rustc-like diagnostics on stderr, a summary on stdout), `json`
    /// (one document on stdout), `github` (GitHub Actions annotations) or `sarif` (SARIF 2.1.0,
    /// for code scanning and editors). The exit status is 1 when there are errors, in every
    /// format.
    #[arg(long, value_enum, default_value = "human", value_name = "FORMAT")]
    pub format: Format,
}

/// What one check found.
struct Checked {
    /// The ruleset and its rule book, or the errors.
    loaded: Result<(std::sync::Arc<data::Ruleset>, events::RuleBook), Vec<Diagnostic>>,
    /// A dialect's own counts (`features 12`).
    compiled: Option<Vec<(&'static str, usize)>>,
    warnings: Vec<Diagnostic>,
    elapsed: std::time::Duration,
}

/// Runs `sheetd check`.
pub fn run(args: CheckArgs) -> ExitCode {
    let paths: Vec<PathBuf> = args.paths.iter().chain(&args.rulesets).cloned().collect();
    if paths.is_empty() {
        eprintln!("error: give at least one ruleset (a .toml file, a directory, or a .pcc)");
        return ExitCode::from(2);
    }
    // With --dialect, the paths are that dialect's: read as `DIALECT:PATH`.
    let specs: Vec<PathBuf> = match &args.dialect {
        None => paths.clone(),
        Some(d) => match crate::dialect::dialect(d) {
            Ok(d) => paths.iter().map(|p| crate::dialect::prefixed(d, p)).collect(),
            Err(m) => {
                eprintln!("error: {m}");
                return ExitCode::from(2);
            }
        },
    };
    let checked = check(&specs);
    let failed = checked.loaded.is_err();
    match args.format {
        Format::Human => human(&args, &paths, checked),
        format => {
            let places = Places::new(&paths);
            let errors: &[Diagnostic] = checked.loaded.as_ref().err().map_or(&[], Vec::as_slice);
            let rule_warnings: &[Diagnostic] = checked.loaded.as_ref().map_or(&[], |(r, _)| r.warnings());
            let mut items: Vec<Item<'_>> = Vec::new();
            for d in errors {
                items.push(Item { path: place(&places, d), d, warning: false });
            }
            for d in checked.warnings.iter().chain(rule_warnings) {
                items.push(Item { path: place(&places, d), d, warning: true });
            }
            let out = match format {
                Format::Json => {
                    let summary =
                        checked.loaded.as_ref().ok().map(|(r, book)| summary_json(&checked, r, book));
                    check_format::json_report(&items, summary)
                }
                Format::Github => check_format::github_report(&items),
                _ => check_format::sarif_report(&items),
            };
            print!("{out}");
            if failed { ExitCode::from(1) } else { ExitCode::SUCCESS }
        }
    }
}

fn place(places: &Places, d: &Diagnostic) -> Option<String> {
    d.at.as_ref().filter(|a| a.line() > 0).map(|a| places.path(a.file()))
}

/// Loads the rulesets and their rule book, timing it.
fn check(specs: &[PathBuf]) -> Checked {
    let start = Instant::now();
    let mut compiled = None;
    let mut warnings = Vec::new();
    let loaded = crate::dialect::load(specs).and_then(|l| {
        warnings = l.warnings;
        compiled = l.compiled.map(|c| c.counts);
        let r = std::sync::Arc::new(l.ruleset);
        events::RuleBook::compile(r.clone()).map(|book| (r, book))
    });
    Checked { loaded, compiled, warnings, elapsed: start.elapsed() }
}

/// The summary as JSON: what loaded, the time, the skipped tokens by kind.
fn summary_json(c: &Checked, r: &data::Ruleset, book: &events::RuleBook) -> serde_json::Value {
    let s = r.summary();
    let mut skipped: Vec<(&String, usize)> = r.skipped().iter().map(|(t, p)| (t, p.len())).collect();
    skipped.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let by_kind: serde_json::Map<String, serde_json::Value> =
        skipped.into_iter().map(|(t, n)| (t.clone(), n.into())).collect();
    let dialect: serde_json::Map<String, serde_json::Value> =
        c.compiled.iter().flatten().map(|(what, n)| ((*what).to_owned(), (*n).into())).collect();
    serde_json::json!({
        "elapsed_ms": c.elapsed.as_secs_f64() * 1000.0,
        "files": s.files,
        "scopes": s.scopes,
        "formats": s.formats,
        "variables": s.variables,
        "channels": s.channels,
        "clocks": s.clocks,
        "stocks": s.stocks,
        "functions": s.functions,
        "kinds": s.kinds,
        "objects": s.objects,
        "modifiers": s.modifiers,
        "events": book.events().len(),
        "rules": book.rules().len(),
        "dialect": dialect,
        "skipped_tokens": s.skipped_tokens,
        "skipped_by_kind": by_kind,
    })
}

// long: the summary lines, each one line.
/// `--format human`: warnings and errors rendered on stderr, the summary on stdout.
fn human(args: &CheckArgs, paths: &[PathBuf], checked: Checked) -> ExitCode {
    for w in &checked.warnings {
        eprint!("{}", crate::render::warning(&crate::problem::Problem::of_diagnostic(w)));
    }
    match checked.loaded {
        Ok((r, book)) => {
            let s = r.summary();
            println!("ok: {} loaded in {:.1} ms", describe(paths), checked.elapsed.as_secs_f64() * 1000.0);
            println!("  files      {:>7}", s.files);
            println!("  scopes     {:>7}", s.scopes);
            println!("  formats    {:>7}", s.formats);
            println!("  variables  {:>7}", s.variables);
            for (what, n) in checked.compiled.iter().flatten() {
                println!("  {what:<10} {n:>7}");
            }
            println!("  channels   {:>7}", s.channels);
            if s.clocks > 0 {
                println!("  clocks     {:>7}", s.clocks);
            }
            if s.stocks > 0 {
                println!("  stocks     {:>7}", s.stocks);
            }
            println!("  functions  {:>7}", s.functions);
            println!("  kinds      {:>7}", s.kinds);
            println!("  objects    {:>7}", s.objects);
            println!("  modifiers  {:>7}", s.modifiers);
            if !book.events().is_empty() || !book.rules().is_empty() {
                println!("  events     {:>7}", book.events().len());
                println!("  rules      {:>7}", book.rules().len());
            }
            let listed = if args.verbose { "listed below" } else { "--verbose lists them all" };
            println!(
                "  skipped    {:>7} tokens (not part of the formula system; {listed})",
                s.skipped_tokens
            );
            if !args.verbose && !r.skipped().is_empty() {
                // The kinds skipped most, so the summary says what a character leaves out.
                let mut kinds: Vec<(&String, usize)> =
                    r.skipped().iter().map(|(t, p)| (t, p.len())).collect();
                kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
                let top: Vec<String> = kinds.iter().take(8).map(|(t, n)| format!("{t} {n}")).collect();
                let more = if kinds.len() > 8 {
                    format!(", and {} kinds more", kinds.len() - 8)
                } else {
                    String::new()
                };
                println!("             by kind: {}{more}", top.join(", "));
            }
            for w in r.warnings() {
                eprint!("{}", crate::render::warning(&crate::problem::Problem::of_diagnostic(w)));
            }
            if args.verbose {
                let mut skipped: Vec<_> = r.skipped().iter().collect();
                skipped.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(b.0)));
                println!("\nskipped tokens:");
                for (token, places) in skipped {
                    let first = places.first().map_or(String::new(), |o| format!("first at {o}"));
                    println!("  {:<24} {:>7}  {first}", token, places.len());
                }
            }
            ExitCode::SUCCESS
        }
        Err(errors) => {
            for e in &errors {
                eprint!("{}", crate::render::problem(&crate::problem::Problem::of_diagnostic(e)));
            }
            eprintln!(
                "error: {} could not be loaded: {} error{}",
                describe(paths),
                errors.len(),
                if errors.len() == 1 { "" } else { "s" }
            );
            ExitCode::from(1)
        }
    }
}

fn describe(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" + ")
}
