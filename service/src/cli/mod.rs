//! The command line: the grammar ([`Cli`]) and dispatch, with one file per subcommand. Each
//! subcommand parses its input, calls the library crates (or, for `client`, a server), and
//! renders results for people or as JSON; `eval`, `solve`, `check` and `batch` work offline,
//! on the libraries directly.

pub mod batch;
pub mod check;
pub mod check_format;
pub mod client;
pub mod client_ops;
pub mod docs;
pub mod eval;
pub mod graph;
pub mod serve;
pub mod sheet;
pub mod solve;
pub mod steps;
pub mod store;
pub mod translate;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// `sheetd --version`: the version and the commit it was built from.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("SHEETD_COMMIT"), ")");

/// sheetd: a dependency-tracking solver for RPG character sheets.
///
/// sheetd compiles game-rule formulas once, keeps every character's values exact and up to date,
/// and explains every number.
#[derive(Debug, Parser)]
#[command(name = "sheetd", version = VERSION, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Evaluate a formula, or a stream of JSON requests with --jsonl.
    ///
    /// The formula language is PCGen's (see docs/formula-language.md): numbers are exact decimals,
    /// `floor((Score-10)/2)` with `--var Score=14` prints 2. Errors are printed with the offending
    /// text underlined, and the exit status is 1.
    #[command(after_long_help = eval::AFTER_HELP)]
    Eval(eval::EvalArgs),

    /// Run a scenario, or a character sheet over a ruleset; report every change.
    ///
    /// With --scenario FILE the file declares scopes and variables itself (docs/solver.md).
    /// With --ruleset RULESET (repeatable; a native ruleset or a PCGen .pcc) and --sheet FILE the
    /// sheet file's steps add and remove game objects, set inputs and add ad-hoc modifiers
    /// (docs/ruleset-format.md). Each step's changed variables (old → new, in topological order) and the number of
    /// evaluations it took are printed, then every variable's final value, then a trace for
    /// each --trace. With --sheet, each --why REF explains the last change of REF: the step, the
    /// value before and after, the variables the change went through. A rejected step (unknown
    /// name, locked variable, cycle, bad formula) has no effect and later steps still run. See
    /// docs/solver.md for the scenario format and the JSON step format.
    Solve(solve::SolveArgs),

    /// Load rulesets and report what they hold, or every problem in them.
    ///
    /// A ruleset is a native one (a .toml file or a directory of them, see
    /// docs/ruleset-format.md) or a PCGen campaign (.pcc) with the files it lists. Several
    /// rulesets load on top of each other in order (Pact Worlds after the core rulebook). On
    /// success prints counts of scopes, variables, functions, objects, modifiers and skipped
    /// tokens and exits 0; otherwise prints every error with file:line:col and exits 1.
    Check(check::CheckArgs),

    /// Write what a dialect's files compile to, as native ruleset files.
    ///
    /// `sheetd translate --dialect creature docs/examples/creature --out /tmp/deva` writes the
    /// prelude and the creatures' objects and event rules as TOML (docs/ruleset-format.md);
    /// without --out they are printed. The translation loads with `sheetd check DIR` and plays
    /// a game exactly as the dialect's own files do (docs/dialects.md).
    Translate(translate::TranslateArgs),

    /// Run the daemon: the gRPC API (also grpc-web), with health checks and reflection.
    ///
    /// With no flags it listens on 127.0.0.1:50051, serves the bundled starter ruleset as
    /// `starter`, and keeps sheets in an embedded store under ~/.local/share/sheetd. Clients may
    /// load rulesets only from --ruleset-root directories; every limit has a safe default
    /// (docs/api.md#security). Stop it with Ctrl-C or SIGTERM: calls in flight get
    /// --shutdown-grace (10 s) to finish, streams end, the store is closed. Logs go to stderr
    /// (RUST_LOG sets levels). See docs/api.md.
    Serve(Box<crate::grpc::config::ServeArgs>),

    /// Call a running server: create sheets, apply changes, read values and explanations.
    ///
    /// Operations are given as JSON steps, the same as in sheet files
    /// (docs/ruleset-format.md): `--step '{"add_object": {"kind": "RACE", "key": "Stoneborn"}}'`.
    /// Output is for people, or JSON with --json.
    Client(client::ClientArgs),

    /// Solve many sheets offline, in parallel: JSON lines in, JSON lines out.
    ///
    /// Each input line is `{"id": "...", "steps": [...], "variables": [...]}` (variables
    /// optional: all when absent); each output line, in input order, is
    /// `{"id": "...", "values": {...}}` or `{"id": "...", "error": [...]}`. Shows a progress bar
    /// (total, rate, time left) when stderr is a terminal, nothing otherwise.
    Batch(batch::BatchArgs),

    /// Inspect a daemon's store (the data directory of `sheetd serve`).
    #[command(subcommand)]
    Store(StoreCommand),

    /// Print a shell completion script: `sheetd completions bash > /etc/bash_completion.d/sheetd`.
    ///
    /// For bash, zsh, fish, elvish and PowerShell; made from this command line, so it always
    /// knows every subcommand and flag.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },

    /// Print the manual page (`sheetd man | man -l -`), or write every page with --out DIR.
    Man(docs::ManArgs),
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Check every record's checksum and encoding, and redb's pages; list each damaged record.
    ///
    /// Prints `ok: no damaged records in DIR` and exits 0, or one line per damaged record
    /// (`log sheet-1@5: …`: the table, the sheet and the revision) and exits 1; exits 2 when the
    /// store cannot be opened. Stop the server first: the store is opened exclusively. Changes
    /// nothing.
    Verify {
        /// The data directory (the one holding sheetd.redb).
        #[arg(value_name = "DIR")]
        dir: std::path::PathBuf,
    },
}

/// Parses the command line, runs the command, and returns the process exit status.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        // Sockets must report a closed peer as an error, not a signal that ends the process
        // without a word: for the server, and for the client's connection to it.
        Command::Serve(_) => {}
        Command::Client(_) => end_quietly_when_stdout_closes(),
        _ => die_quietly_on_closed_stdout(),
    }
    match cli.command {
        Command::Eval(args) => eval::run(args),
        Command::Solve(args) => solve::run(args),
        Command::Check(args) => check::run(args),
        Command::Translate(args) => translate::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::Client(args) => client::run(args),
        Command::Batch(args) => batch::run(args),
        Command::Store(StoreCommand::Verify { dir }) => store::verify(&dir),
        Command::Completions { shell } => docs::completions(shell),
        Command::Man(args) => docs::man(args),
    }
}

/// Output piped into a program that stops reading (`sheetd client values … | head`) ends the
/// process quietly, as for other Unix tools, instead of a "broken pipe" panic from `println!`.
/// Not for `serve`, whose sockets must report a closed peer as an error, not a signal.
fn die_quietly_on_closed_stdout() {
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE at start-up, before any other thread
    // exists; no signal handler is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// For `client`, whose connection must see a closed socket as an error (SIGPIPE stays ignored,
/// as Rust sets it): output piped into a program that stops reading ends the process quietly,
/// with status 0, instead of the "failed printing to stdout" panic. Any other panic is reported
/// as usual.
fn end_quietly_when_stdout_closes() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        report(info)
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
