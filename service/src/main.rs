//! The `sheetd` binary: a thin shell over the `sheetd` library's command-line interface.

fn main() -> std::process::ExitCode {
    sheetd::cli::run()
}
