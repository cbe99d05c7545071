//! `replicas`: sheetd over PostgreSQL against the embedded store, measured in the same run.
//!
//! ```text
//! cargo build --release -p sheetd
//! cargo run --release -p sheetd-benches --example replicas -- [--calls N] [--seconds N] [--watch N]
//! ```
//!
//! It starts a PostgreSQL server of its own (Debian's `postgresql`: `initdb` and `pg_ctl` on a
//! temporary folder, a Unix socket, `fsync` on) and real `sheetd serve` processes (the release
//! binary, or `--server PATH`): one on the embedded store, and two replicas on one database.
//! Then, each on the example character, each against the embedded store:
//! 1. Apply round trip from one client, p50/p99: the embedded server and a PostgreSQL replica,
//!    interleaved call by call (`--calls`, a tenth more first to warm up).
//! 2. Durable Applies per second with 32 clients per server, each on its own sheet
//!    (`--seconds` each): the embedded server; one replica; two replicas (32 clients on each).
//! 3. Watch latency across replicas: a Watch on replica A, an Apply through replica B; from
//!    sending the Apply to A's event, p50/p99 (`--watch` Applies); against a Watch and the
//!    Apply on the same embedded server.
//! 4. Catch-up: in this process, two engines on one database (no follower: a sheet catches up
//!    when used). B applies 100 revisions; A's next read of the sheet plays them. The read that
//!    catches up against a read that finds the sheet current (each over 30 rounds, medians).

mod common;
#[path = "../../service/tests/common/postgres.rs"]
mod postgres;

use common::example_sheet;
use sheetd::cli::client::Client;
use sheetd::grpc::proto as pb;
use sheetd_benches::load::{Server, arg, percentile, server_binary};
use std::time::{Duration, Instant};

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn armor(on: bool) -> Vec<pb::Operation> {
    let step = if on {
        r#"{"add_object": {"kind": "EQUIPMENT", "key": "Ring Hauberk", "id": "armor"}}"#
    } else {
        r#"{"remove_object": "armor"}"#
    };
    sheetd::cli::client::operations(&sheetd::cli::client::Steps {
        steps: vec![step.into()],
        file: None,
        dialect: None,
    })
    .expect("step")
}

async fn apply(c: &mut Client, id: &str, n: u64) -> u64 {
    let req = pb::ApplyRequest { sheet_id: id.into(), operations: armor(n % 2 == 1), ..Default::default() };
    c.apply(req).await.expect("apply").into_inner().revision
}

fn quantiles(mut d: Vec<Duration>) -> (Duration, Duration) {
    d.sort();
    (percentile(&d, 0.5), percentile(&d, 0.99))
}

/// The machine's CPU time so far, busy and in all, in clock ticks (`/proc/stat`'s first line).
fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<u64> =
        stat.lines().next().unwrap_or("").split_whitespace().skip(1).filter_map(|t| t.parse().ok()).collect();
    let all: u64 = ticks.iter().sum();
    // idle and iowait are the 4th and 5th.
    let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
    (all - idle, all)
}

/// Applies per second from `per_server` clients on each of `servers`, each on its own sheet,
/// and how busy the machine's cores were meanwhile (0 to 1).
async fn throughput(servers: &[&str], per_server: usize, seconds: u64) -> (f64, f64) {
    let mut ids = Vec::new();
    for url in servers {
        let mut c = common::client(url).await;
        for _ in 0..per_server {
            ids.push((url.to_string(), example_sheet(&mut c).await));
        }
    }
    let until = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let (busy0, all0) = machine_ticks();
    let mut workers = Vec::new();
    for (url, id) in ids {
        workers.push(tokio::spawn(async move {
            let mut c = common::client(&url).await;
            let mut done = 0u64;
            while Instant::now() < until {
                apply(&mut c, &id, done).await;
                done += 1;
            }
            done
        }));
    }
    let mut total = 0;
    for w in workers {
        total += w.await.expect("worker");
    }
    let (busy1, all1) = machine_ticks();
    let busy = (busy1 - busy0) as f64 / ((all1 - all0) as f64).max(1.0);
    (total as f64 / start.elapsed().as_secs_f64(), busy)
}

/// Sends `n` Applies through `apply_to` and times each until `watch_on`'s Watch reports it.
async fn watch_latency(watch_on: &str, apply_to: &str, n: usize) -> Vec<Duration> {
    let mut w = common::client(watch_on).await;
    let mut a = common::client(apply_to).await;
    let id = example_sheet(&mut a).await;
    let req = pb::WatchRequest { sheet_id: id.clone(), variables: vec![], from_revision: None };
    let mut stream = w.watch(req).await.expect("watch").into_inner();
    let mut out = Vec::with_capacity(n);
    for i in 0..(n + n / 10) as u64 {
        let t = Instant::now();
        let revision = apply(&mut a, &id, i).await;
        loop {
            let m = stream.message().await.expect("message").expect("an event");
            if m.revision == revision && !m.continued {
                break;
            }
        }
        if i as usize >= n / 10 {
            out.push(t.elapsed());
        }
    }
    out
}

/// The catch-up row, in this process through the engine (see the module docs).
fn catch_up(url: &str, rounds: usize) -> (Duration, Duration) {
    use sheetd::engine::{Engine, EngineConfig};
    use sheetd::store::PostgresStore;
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = |name: &str| {
        let config = EngineConfig { data_dir: dir.path().join(name), ..Default::default() };
        Engine::with_store(config, Box::new(PostgresStore::open(url).expect("store"))).expect("engine")
    };
    let (a, b) = (engine("a"), engine("b"));
    let ops = |on: bool| -> Vec<data::SheetOp> {
        let step = if on {
            serde_json::json!({"add_modifier": {"id": "m", "var": "AC", "type": "ADD", "value": "1"}})
        } else {
            serde_json::json!({"remove_modifier": "m"})
        };
        vec![sheetd::cli::steps::sheet_op(&step).map_err(|_| "a step").expect("ops")]
    };
    let (info, _) = a.create_sheet("", None, ops(true)).expect("create");
    let (mut behind, mut current) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for i in 0..100 {
            b.apply(&info.id, None, ops(i % 2 == 1)).expect("apply through B");
        }
        let t = Instant::now();
        a.values(&info.id, &["AC".to_owned()], None).expect("A catches up");
        behind.push(t.elapsed());
        let t = Instant::now();
        a.values(&info.id, &["AC".to_owned()], None).expect("A is current");
        current.push(t.elapsed());
    }
    (quantiles(behind).0, quantiles(current).0)
}

// long: a measurement script, read top to bottom: start everything, measure, print.
fn main() {
    let calls: usize = arg("--calls", 1000);
    let seconds: u64 = arg("--seconds", 5);
    let watches: usize = arg("--watch", 500);
    let Some(pg) = postgres::Postgres::start() else { return };
    let url = pg.database();
    let dir = tempfile::tempdir().expect("temp dir");
    let binary = server_binary();
    let embedded = Server::start(&binary, &dir.path().join("embedded"), false);
    let a = Server::start_with(&binary, &dir.path().join("a"), &["--store", &url], false);
    let b = Server::start_with(&binary, &dir.path().join("b"), &["--store", &url], false);
    println!("PostgreSQL at {url}; servers {} (embedded), {} and {} (replicas)", embedded.url, a.url, b.url);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        // 1. Apply round trip, interleaved.
        let (mut ce, mut ca) = (common::client(&embedded.url).await, common::client(&a.url).await);
        let (ie, ia) = (example_sheet(&mut ce).await, example_sheet(&mut ca).await);
        let (mut te, mut ta) = (Vec::new(), Vec::new());
        for i in 0..(calls + calls / 10) as u64 {
            let t = Instant::now();
            apply(&mut ce, &ie, i).await;
            let e = t.elapsed();
            let t = Instant::now();
            apply(&mut ca, &ia, i).await;
            let p = t.elapsed();
            if i as usize >= calls / 10 {
                te.push(e);
                ta.push(p);
            }
        }
        let ((e50, e99), (p50, p99)) = (quantiles(te), quantiles(ta));
        println!("1. Apply round trip ({calls} calls each, interleaved):");
        println!("   embedded store     p50 {}  p99 {}", ms(e50), ms(e99));
        println!(
            "   PostgreSQL replica p50 {}  p99 {}   ({:.2}× / {:.2}× the embedded store)",
            ms(p50),
            ms(p99),
            p50.as_secs_f64() / e50.as_secs_f64(),
            p99.as_secs_f64() / e99.as_secs_f64()
        );

        // 2. Throughput, 32 clients per server.
        println!("2. Durable Applies per second, 32 clients per server, {seconds} s each:");
        for (name, servers) in [
            ("embedded store, 1 server    ", vec![embedded.url.as_str()]),
            ("PostgreSQL, 1 replica       ", vec![a.url.as_str()]),
            ("PostgreSQL, 2 replicas (×32)", vec![a.url.as_str(), b.url.as_str()]),
        ] {
            let (rate, busy) = throughput(&servers, 32, seconds).await;
            println!("   {name}  {rate:.0}/s   (the machine's cores {:.0}% busy)", busy * 100.0);
        }

        // 3. Watch latency.
        let ((s50, s99), (x50, x99)) = (
            quantiles(watch_latency(&embedded.url, &embedded.url, watches).await),
            quantiles(watch_latency(&a.url, &b.url, watches).await),
        );
        println!("3. Apply sent → event on the Watch ({watches} each):");
        println!("   same server, embedded store    p50 {}  p99 {}", ms(s50), ms(s99));
        println!("   Apply on B → Watch on A        p50 {}  p99 {}", ms(x50), ms(x99));
    });
    // 4. Catch-up, in process.
    let (behind, current) = catch_up(&url, 30);
    println!(
        "4. A read of a sheet 100 revisions behind: {} (median of 30); of a current sheet: {}",
        ms(behind),
        ms(current)
    );
    println!(
        "   the catch-up: {} for 100 revisions, {:.1} µs a revision",
        ms(behind.saturating_sub(current)),
        behind.saturating_sub(current).as_secs_f64() * 1e6 / 100.0
    );
}
