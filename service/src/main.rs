//! The `sheetd` binary: a thin shell over the `sheetd` library's command-line interface.

/// mimalloc instead of the system allocator: sheets, requests and replies are many small,
/// short-lived allocations, which glibc's malloc spends a third of a SolveBatch on (measured
/// with `perf record` on `loadgen`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    sheetd::cli::run()
}
