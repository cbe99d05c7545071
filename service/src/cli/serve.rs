//! `sheetd serve`: resolves the configuration, sets up logging and the runtime, and runs the
//! gRPC server (`crate::grpc`) until a signal stops it.

use crate::grpc::config::{LogFormat, ServeArgs};
use std::process::ExitCode;

/// Runs the daemon; exit 2 for a bad configuration, 1 when it cannot start or fails.
pub fn run(args: ServeArgs) -> ExitCode {
    let config = match args.resolve() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    tune_memory();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    // The trace exporter's connection runs on the runtime.
    let telemetry = match config.otlp_endpoint.as_deref().map(|e| {
        let _on_the_runtime = runtime.enter();
        crate::telemetry::Telemetry::start(e)
    }) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    init_logging(config.log_format, telemetry.as_ref());
    // One line on stdout for people and scripts (tests read the port from it).
    let announce = |l: &crate::grpc::Listening| println!("sheetd serving on {} (store {})", l.url, l.store);
    let result = runtime.block_on(crate::grpc::serve(config, announce));
    if let Some(Err(e)) = telemetry.map(crate::telemetry::Telemetry::shutdown) {
        eprintln!("warning: {e}");
    }
    // Blocking work still running past the grace period (a call stuck in a slow disk, say) must
    // not keep the process alive: every accepted change is already durable.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The log gets the first line; the terminal the whole report.
            tracing::error!("{}", e.lines().next().unwrap_or(""));
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}

/// The process's memory settings for serving (the daemon, and `loadgen`'s in-process server):
/// glibc's arenas limited, and no transparent huge pages.
pub fn tune_memory() {
    limit_malloc_arenas();
    disable_transparent_huge_pages();
}

/// With transparent huge pages, each fresh page of the allocator's arenas is a 2 MiB page the
/// kernel zeroes at the first touch. Sheets come and go in batches, so freed arena memory is
/// returned and touched again: in a profile of a 40,000-sheet SolveBatch (`perf record -e
/// cpu-clock` on `loadgen`), zeroing huge pages (`clear_page_erms` under
/// `do_huge_pmd_anonymous_page`) took 14.8% of the time. Small pages are zeroed 4 KiB at a time,
/// only where touched.
fn disable_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_THP_DISABLE) only sets a flag on this process; it takes no pointers.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// glibc gives each thread that allocates its own malloc arena; with dozens of blocking threads
/// each keeping freed memory, the daemon's resident memory crept up for as long as it ran (from
/// 50 to 135 MiB in two minutes of the soak, with the live heap flat at 30 MiB). Two arenas keep
/// it flat; the threads mostly wait on the store, so contention costs nothing measurable.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator tunable; called before the runtime starts threads.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Logs to stderr, as text or JSON lines; `RUST_LOG` sets levels (default `info`). The calls'
/// spans also feed the metrics ([`crate::metrics::CallLayer`]), whatever the log level; and,
/// with an OTLP endpoint, sheetd's own spans and events at `info` and above go to it.
fn init_logging(format: LogFormat, telemetry: Option<&crate::telemetry::Telemetry>) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer, filter::filter_fn, fmt};
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = fmt::layer().with_writer(std::io::stderr).with_ansi(ansi);
    let logs = match format {
        LogFormat::Text => logs.boxed(),
        LogFormat::Json => {
            logs.json().flatten_event(true).with_current_span(true).with_span_list(true).boxed()
        }
    };
    let calls = crate::metrics::CallLayer.with_filter(filter_fn(|m| m.is_span() && m.name() == "call"));
    let traces = telemetry.map(|t| {
        let sheetd_only =
            tracing_subscriber::filter::Targets::new().with_target("sheetd", tracing::Level::INFO);
        tracing_opentelemetry::layer().with_tracer(t.tracer()).with_filter(sheetd_only)
    });
    let _ = tracing_subscriber::registry().with(logs.with_filter(filter)).with(calls).with(traces).try_init();
}
