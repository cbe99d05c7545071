//! `sheetd translate --dialect D PATH… [--out DIR]`: what a dialect's files compile to, as
//! native ruleset files — the readable answer to "what did my card become?". The files load
//! back with `sheetd check DIR` and run a game the same as the dialect's own files.

use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `sheetd translate`.
#[derive(Debug, Args)]
pub struct TranslateArgs {
    /// The dialect the paths are written in: `creature` (feature dictionaries and creatures
    /// files), `rulescript` (card databases, `.rulescript` files), `effects` (card tables,
    /// `.csv` or `.json`) or `wwrf` (element files, `.md` or `.txt`); see docs/dialects.md.
    #[arg(long, value_name = "DIALECT")]
    pub dialect: String,

    /// The dialect's files, or directories of them.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,

    /// Write the native files into this directory (created if missing; files of the same name
    /// are replaced). Without it they are printed, each after a `# file: NAME` line.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Runs `sheetd translate`.
pub fn run(args: TranslateArgs) -> ExitCode {
    let dialect = match crate::dialect::dialect(&args.dialect) {
        Ok(d) => d,
        Err(m) => {
            eprintln!("error: {m}");
            return ExitCode::from(2);
        }
    };
    let compiled = match crate::dialect::compile(dialect, &args.paths) {
        Ok(c) => c,
        Err(errors) => {
            for e in &errors {
                eprint!("{}", crate::render::problem(&crate::problem::Problem::of_diagnostic(e)));
            }
            eprintln!("error: the {dialect} files could not be translated: {} errors", errors.len());
            return ExitCode::from(1);
        }
    };
    for w in &compiled.warnings {
        eprint!("{}", crate::render::warning(&crate::problem::Problem::of_diagnostic(w)));
    }
    // What is written must load: a translation that does not is sheetd's bug, said as such.
    if let Err(errors) = compiled.load() {
        for e in &errors {
            eprint!("{}", crate::render::problem(&crate::problem::Problem::of_diagnostic(e)));
        }
        eprintln!(
            "error: internal: the translation does not load ({} errors); please report it",
            errors.len()
        );
        return ExitCode::from(1);
    }
    let Some(dir) = args.out else {
        for (name, text) in &compiled.files {
            println!("# file: {name}\n{text}");
        }
        return ExitCode::SUCCESS;
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("error: cannot create {}: {e}", dir.display());
        return ExitCode::from(1);
    }
    for (name, text) in &compiled.files {
        let path = dir.join(name);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("error: cannot write {}: {e}", path.display());
            return ExitCode::from(1);
        }
        println!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
