//! `sheetd check RULESET...`: load rulesets (each on top of the ones before) and their event
//! rules, and print a summary, or every problem found with its place and the offending text.

use clap::Args;
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
}

/// Runs `sheetd check`.
// long: the summary lines, each one line, and the two ways of loading.
pub fn run(args: CheckArgs) -> ExitCode {
    let paths: Vec<PathBuf> = args.paths.into_iter().chain(args.rulesets).collect();
    if paths.is_empty() {
        eprintln!("error: give at least one ruleset (a .toml file, a directory, or a .pcc)");
        return ExitCode::from(2);
    }
    let start = Instant::now();
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
    let mut compiled = None;
    let loaded = crate::dialect::load(&specs).and_then(|l| {
        for w in &l.warnings {
            eprint!("{}", crate::render::warning(&crate::problem::Problem::of_diagnostic(w)));
        }
        compiled = l.compiled.map(|c| c.counts);
        let r = l.ruleset;
        let r = std::sync::Arc::new(r);
        events::RuleBook::compile(r.clone()).map(|book| (r, book))
    });
    match loaded {
        Ok((r, book)) => {
            let elapsed = start.elapsed();
            let s = r.summary();
            println!("ok: {} loaded in {:.1} ms", describe(&paths), elapsed.as_secs_f64() * 1000.0);
            println!("  files      {:>7}", s.files);
            println!("  scopes     {:>7}", s.scopes);
            println!("  formats    {:>7}", s.formats);
            println!("  variables  {:>7}", s.variables);
            for (what, n) in compiled.iter().flatten() {
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
                eprintln!("warning: {w}");
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
                describe(&paths),
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
