//! `loadgen`: measures the daemon over loopback, against a baseline in the same run.
//!
//! ```text
//! cargo run --release -p sheetd-benches --example loadgen -- [--calls N] [--batch N] [--seconds N] [--rounds N]
//! ```
//!
//! It starts `sheetd serve` in-process (starter ruleset, a fresh store in a temporary
//! directory, 127.0.0.1) and, over one client connection:
//! 1. Apply round trip: a one-object change (adding or removing the example character's armor,
//!    alternately), each durable (fsync) before the reply. Interleaved call by call with the
//!    baselines, an empty unary call (`Ping`) and one write + fsync of a file in the same
//!    directory, of the size of the Apply's reply (about what the log record holds), so all see
//!    the same machine conditions. Prints p50 and p99 of each, and Apply against Ping + fsync.
//!    (The store writes one journal frame and one fdatasync per commit: the fsync baseline
//!    is the same shape.)
//! 2. Durable Applies per second with 1, 8 and 64 concurrent clients (each on its own sheet,
//!    `--seconds` each): the store's group commit lets concurrent writers share an fsync.
//! 3. SolveBatch throughput: N example characters streamed through one SolveBatch call;
//!    prints sheets per second (and per core) against a baseline, the same sheets solved
//!    in-process on all cores (no gRPC): each built, solved and its values encoded as the
//!    server's SolveBatch encodes them (`BatchValues::from_character`). Each runs `--rounds`
//!    times (5), alternated, and the medians are printed. Client and server share this process
//!    and its cores there, so the client's own encoding and decoding count against the server.
//!    Then, when the release binary is built (`cargo build --release -p sheetd`; or `--server
//!    PATH`), the same batch `--rounds` times against the real `sheetd serve` in its own
//!    process: sheets per second of the server's CPU time (from `/proc`), against sheets per
//!    second of CPU time in-process — the per-core cost of serving a sheet over gRPC against
//!    solving it in place.
//! 4. With that real server, the Apply round trip of 1. again, from a client on its own
//!    single-threaded runtime: client and server then share no threads, as with a separate
//!    client process.

mod common;

use common::{example, example_sheet};
use sheetd::grpc::config::ServeArgs;
use sheetd::grpc::proto as pb;
use sheetd_benches::load::{arg, cpu_seconds, percentile};
use std::time::{Duration, Instant};

/// The daemon's allocator (see `service/src/main.rs`): loadgen measures the server as shipped,
/// and its in-process baseline runs with the same allocator.
#[global_allocator]
static ALLOCATOR: sheetd::alloc::Allocator = sheetd::alloc::Allocator;

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

// long: a measurement script, read top to bottom: start the server, measure, print.
fn main() {
    let calls: usize = arg("--calls", 2000);
    let batch: usize = arg("--batch", 20_000);
    let seconds: u64 = arg("--seconds", 3);
    let rounds: usize = arg("--rounds", 5).max(1);
    if std::env::var_os("SHEETD_KEEP_THP").is_none() {
        // As `sheetd serve` sets it up (`SHEETD_KEEP_THP=1` measures without).
        sheetd::cli::serve::tune_memory();
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let (runtime, url) = common::serve_in_process(dir.path(), ServeArgs::default());
    let (items, local_cpu) = runtime.block_on(async move {
        let mut client = common::client(&url).await;
        apply_round_trip(&mut client, dir.path(), calls, "in-process server").await;
        let (armor_on, armor_off) = armor_steps();

        println!("Durable Applies per second, concurrent clients each on its own sheet ({seconds} s each):");
        for clients in [1usize, 8, 64] {
            let mut ids = Vec::with_capacity(clients);
            for _ in 0..clients {
                ids.push(example_sheet(&mut client).await);
            }
            let until = Instant::now() + Duration::from_secs(seconds);
            let start = Instant::now();
            let workers: Vec<_> = ids
                .into_iter()
                .map(|id| {
                    let mut c = client.clone();
                    let (on, off) = (armor_on.clone(), armor_off.clone());
                    tokio::spawn(async move {
                        let mut done = 0u64;
                        while Instant::now() < until {
                            let ops = if done.is_multiple_of(2) { off.clone() } else { on.clone() };
                            c.apply(pb::ApplyRequest {
                                sheet_id: id.clone(),
                                expected_revision: None,
                                operations: ops,
                                ..Default::default()
                            })
                            .await
                            .expect("apply");
                            done += 1;
                        }
                        done
                    })
                })
                .collect();
            let mut total = 0;
            for w in workers {
                total += w.await.expect("client");
            }
            let rate = total as f64 / start.elapsed().as_secs_f64();
            println!("  {clients:>2} clients   {rate:>8.0} Applies/s   ({total} in all)");
        }

        let items: Vec<pb::SolveBatchRequest> = (0..batch)
            .map(|i| pb::SolveBatchRequest {
                id: i.to_string(),
                ruleset_id: String::new(),
                operations: example(),
                variables: vec![],
            })
            .collect();
        // Both halves run `rounds` times, alternately, so that each sees the machine as the
        // other does; the figures are their medians (one run of a quarter second moved by a
        // tenth from run to run on this two-core machine).
        let ruleset = std::sync::Arc::new(data::load_starter().expect("starter"));
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let (mut grpc, mut local, mut local_cpu) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            // The request stream owns its items, and so does the baseline below, as the
            // server owns the items it decodes: both copies are made before their clocks start.
            let sent = items.clone();
            let t = Instant::now();
            solve_batch(&mut client, sent).await;
            grpc.push(t.elapsed());
            let (wall, cpu) = common::solve_in_process(&items, &ruleset, threads);
            local.push(wall);
            local_cpu.extend(cpu.map(Duration::from_secs_f64));
        }
        let (grpc, local) = (median(&mut grpc).unwrap_or_default(), median(&mut local).unwrap_or_default());
        println!(
            "SolveBatch, {batch} example characters on the starter ruleset ({threads} cores), \
             medians of {rounds} alternated runs:"
        );
        println!(
            "  SolveBatch over gRPC    {:.0} sheets/s, {:.0} per core ({:.2} s)",
            batch as f64 / grpc.as_secs_f64(),
            batch as f64 / grpc.as_secs_f64() / threads as f64,
            grpc.as_secs_f64()
        );
        println!(
            "  in-process baseline     {:.0} sheets/s, {:.0} per core ({:.2} s)",
            batch as f64 / local.as_secs_f64(),
            batch as f64 / local.as_secs_f64() / threads as f64,
            local.as_secs_f64()
        );
        (items, median(&mut local_cpu).map(|d| d.as_secs_f64()))
    });
    drop(runtime);
    external(&items, local_cpu, calls, rounds);
}

/// The median of `runs` (sorted in place); `None` when there are none.
fn median(runs: &mut [Duration]) -> Option<Duration> {
    runs.sort();
    (!runs.is_empty()).then(|| percentile(runs, 0.5))
}

/// The real server in its own process: the Apply round trip (`calls` calls), then SolveBatch
/// `rounds` times as sheets per second of its CPU time (the median), against `local_cpu` (the
/// median CPU seconds the in-process baseline took for the same items).
fn external(items: &[pb::SolveBatchRequest], local_cpu: Option<f64>, calls: usize, rounds: usize) {
    let server = sheetd_benches::load::server_binary();
    if !std::path::Path::new(&server).is_file() {
        println!("(no {server}: `cargo build --release -p sheetd` to measure against the real server)");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let child = sheetd_benches::load::Server::start(&server, dir.path(), true);
    let (url, pid) = (child.url.clone(), child.pid().to_string());
    // The round trip first, from a client on a runtime of its own on this thread, as a
    // separate client process would be: nothing shared with the server.
    let client_rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    client_rt.block_on(async {
        let mut client = sheetd::cli::client::connect(&url, None, None).await.expect("connect");
        apply_round_trip(&mut client, dir.path(), calls, "`sheetd serve` in its own process").await;
    });
    drop(client_rt);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let (wall, server_cpu) = runtime.block_on(async {
        let mut client = sheetd::cli::client::connect(&url, None, None).await.expect("connect");
        // One small batch first, so the server has loaded and compiled what a sheet needs.
        solve_batch(&mut client, items.iter().take(64).cloned().collect()).await;
        let (mut walls, mut cpus) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let sent = items.to_vec();
            let before = cpu_seconds(&pid);
            let t = Instant::now();
            solve_batch(&mut client, sent).await;
            walls.push(t.elapsed());
            let cpu = cpu_seconds(&pid).zip(before).map(|(after, before)| after - before);
            cpus.extend(cpu.map(Duration::from_secs_f64));
        }
        (median(&mut walls).unwrap_or_default(), median(&mut cpus).map(|d| d.as_secs_f64()))
    });
    drop(child);
    let n = items.len() as f64;
    println!(
        "SolveBatch against `sheetd serve` in its own process ({} sheets), medians of {rounds} runs:",
        items.len()
    );
    println!("  {:.0} sheets/s over gRPC ({:.2} s)", n / wall.as_secs_f64(), wall.as_secs_f64());
    if let (Some(server), Some(local)) = (server_cpu, local_cpu) {
        println!(
            "  per second of CPU time: server {:.0} sheets ({:.2} CPU s), in-process {:.0} sheets ({:.2} CPU s): {:.2}×",
            n / server,
            server,
            n / local,
            local,
            (n / local) / (n / server)
        );
    }
}

/// Streams `items` through one SolveBatch call and checks that every one was solved.
async fn solve_batch(client: &mut sheetd::cli::client::Client, items: Vec<pb::SolveBatchRequest>) {
    let count = items.len();
    let mut stream = client.solve_batch(tokio_stream::iter(items)).await.expect("batch").into_inner();
    let mut n = 0;
    while let Some(r) = stream.message().await.expect("result") {
        assert!(matches!(r.result, Some(pb::solve_batch_response::Result::Values(_))), "{r:?}");
        n += 1;
    }
    assert_eq!(n, count);
}

/// The example character's armor put on and taken off: the Apply phases' one-object changes.
fn armor_steps() -> (Vec<pb::Operation>, Vec<pb::Operation>) {
    let steps = |json: &str| {
        sheetd::cli::client::operations(&sheetd::cli::client::Steps {
            steps: vec![json.into()],
            file: None,
            dialect: None,
        })
        .expect("step")
    };
    (
        steps(r#"{"add_object": {"kind": "EQUIPMENT", "key": "Ring Hauberk", "id": "armor"}}"#),
        steps(r#"{"remove_object": "armor"}"#),
    )
}

/// The Apply round trip against `client`'s server (named `server` in the output): on a new
/// sheet, `calls` one-object changes (and a tenth more to warm up), each interleaved with the
/// baselines, an empty call and a write + fsync in `dir` of the Apply's reply size.
async fn apply_round_trip(
    client: &mut sheetd::cli::client::Client,
    dir: &std::path::Path,
    calls: usize,
    server: &str,
) {
    let id = example_sheet(client).await;
    let (armor_on, armor_off) = armor_steps();

    let (mut apply, mut ping, mut fsync) =
        (Vec::with_capacity(calls), Vec::with_capacity(calls), Vec::with_capacity(calls));
    let baseline_file = std::fs::File::create(dir.join("fsync-baseline")).expect("baseline file");
    let mut record = vec![0u8; 512];
    for i in 0..(calls + calls / 10) {
        let t = Instant::now();
        client.ping(pb::PingRequest {}).await.expect("ping");
        let p = t.elapsed();
        let t = Instant::now();
        std::os::unix::fs::FileExt::write_all_at(&baseline_file, &record, 0).expect("write");
        baseline_file.sync_data().expect("fsync");
        let f = t.elapsed();
        let ops = if i % 2 == 0 { armor_off.clone() } else { armor_on.clone() };
        let t = Instant::now();
        let reply = client
            .apply(pb::ApplyRequest {
                sheet_id: id.clone(),
                expected_revision: None,
                operations: ops,
                ..Default::default()
            })
            .await
            .expect("apply")
            .into_inner();
        let a = t.elapsed();
        record.resize(prost::Message::encoded_len(&reply), 0x5a);
        if i >= calls / 10 {
            // The first tenth warms up.
            ping.push(p);
            apply.push(a);
            fsync.push(f);
        }
    }
    apply.sort();
    ping.sort();
    fsync.sort();
    println!("Apply round trip, one-object change, durable ({calls} calls, loopback, {server}):");
    println!(
        "  Apply          p50 {}  p99 {}",
        micros(percentile(&apply, 0.5)),
        micros(percentile(&apply, 0.99))
    );
    println!(
        "  Ping baseline  p50 {}  p99 {}",
        micros(percentile(&ping, 0.5)),
        micros(percentile(&ping, 0.99))
    );
    println!(
        "  fsync baseline p50 {}  p99 {}  (write + fsync of {} bytes)",
        micros(percentile(&fsync, 0.5)),
        micros(percentile(&fsync, 0.99)),
        record.len()
    );
    for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
        let base = percentile(&ping, p) + percentile(&fsync, p);
        println!(
            "  Apply / (Ping + fsync) at {name}: {:.2} ({} against {})",
            percentile(&apply, p).as_secs_f64() / base.as_secs_f64(),
            micros(percentile(&apply, p)),
            micros(base)
        );
    }
}
