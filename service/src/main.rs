//! The `sheetd` binary: a thin shell over the `sheetd` library's command-line interface.

/// mimalloc instead of the system allocator, asked for plain blocks where it can: see
/// [`sheetd::alloc`].
#[global_allocator]
static ALLOCATOR: sheetd::alloc::Allocator = sheetd::alloc::Allocator;

fn main() -> std::process::ExitCode {
    sheetd::cli::run()
}
