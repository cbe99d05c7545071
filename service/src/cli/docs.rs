//! `sheetd completions SHELL` and `sheetd man`: shell completion scripts and manual pages, made
//! from the command-line grammar itself (clap), so they cannot drift from it.

use super::Cli;
use clap::CommandFactory;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `sheetd man`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write `sheetd.1` and a page per subcommand (`sheetd-client.1`, …) into this directory
    /// instead of printing `sheetd.1`. Install them with, e.g., `sudo cp DIR/*.1
    /// /usr/local/share/man/man1/`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Prints the completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut cmd = Cli::command();
    clap_complete::generate(shell, &mut cmd, "sheetd", &mut std::io::stdout());
    ExitCode::SUCCESS
}

/// Prints `sheetd.1`, or writes every page into `--out`.
pub fn man(args: ManArgs) -> ExitCode {
    let result = match &args.out {
        None => {
            page(&Cli::command(), &mut std::io::stdout()).map_err(|e| format!("cannot print the page: {e}"))
        }
        Some(dir) => write_all(dir),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

fn page(cmd: &clap::Command, out: &mut dyn Write) -> std::io::Result<()> {
    clap_mangen::Man::new(cmd.clone()).render(out)
}

/// `sheetd.1`, and `sheetd-SUB.1` for each subcommand (and theirs: `sheetd-client-apply.1`).
fn write_all(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut cmd = Cli::command();
    cmd.build();
    let mut queue = vec![("sheetd".to_owned(), cmd)];
    while let Some((name, cmd)) = queue.pop() {
        let path = dir.join(format!("{name}.1"));
        let mut file =
            std::fs::File::create(&path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        let cmd = cmd.name(name.clone());
        page(&cmd, &mut file).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            queue.push((format!("{name}-{}", sub.get_name()), sub.clone()));
        }
    }
    println!("wrote the manual pages into {}", dir.display());
    Ok(())
}
