//! `sheetd store verify DIR`: checks a daemon's store without changing it.

use std::process::ExitCode;

/// Prints each damaged record (exit 1), or that there is none (exit 0); exit 2 when the store
/// cannot be opened.
pub fn verify(dir: &std::path::Path) -> ExitCode {
    match crate::store::verify(dir) {
        Ok(damage) if damage.is_empty() => {
            println!("ok: no damaged records in {}", dir.display());
            ExitCode::SUCCESS
        }
        Ok(damage) => {
            for d in &damage {
                println!("{}: {}", d.record, d.why);
            }
            eprintln!("error: {} damaged records in {}", damage.len(), dir.display());
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
