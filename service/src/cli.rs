//! The command-line grammar and dispatch.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// sheetd: a dependency-tracking solver for RPG character sheets.
///
/// sheetd compiles game-rule formulas once, keeps every character's values exact and up to date,
/// and explains every number.
#[derive(Debug, Parser)]
#[command(name = "sheetd", version, propagate_version = true, max_term_width = 100)]
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
    #[command(after_long_help = crate::eval::AFTER_HELP)]
    Eval(crate::eval::EvalArgs),

    /// Run a scenario, or a character sheet over a ruleset; report every change.
    ///
    /// With --scenario FILE the file declares scopes and variables itself (docs/solver.md).
    /// With --ruleset RULESET (repeatable; a native ruleset or a PCGen .pcc) and --sheet FILE the
    /// sheet file's steps add and remove game objects, set inputs and add ad-hoc modifiers
    /// (docs/ruleset-format.md). Each step's changed variables (old → new, in topological order) and the number of
    /// evaluations it took are printed, then every variable's final value, then a trace for
    /// each --trace. A rejected step (unknown name, locked variable, cycle, bad formula) has no
    /// effect and later steps still run. See docs/solver.md for the scenario format.
    Solve(crate::solve::SolveArgs),

    /// Load rulesets and report what they hold, or every problem in them.
    ///
    /// A ruleset is a native one (a .toml file or a directory of them, see
    /// docs/ruleset-format.md) or a PCGen campaign (.pcc) with the files it lists. Several
    /// rulesets load on top of each other in order (Pact Worlds after the core rulebook). On
    /// success prints counts of scopes, variables, functions, objects, modifiers and skipped
    /// tokens and exits 0; otherwise prints every error with file:line:col and exits 1.
    Check(crate::check::CheckArgs),
}

/// Parses the command line, runs the command, and returns the process exit status.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Eval(args) => crate::eval::run(args),
        Command::Solve(args) => crate::solve::run(args),
        Command::Check(args) => crate::check::run(args),
    }
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
