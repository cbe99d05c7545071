//! `soak`: the daemon under a steady mixed load for a long time; reports errors, memory and
//! Apply latency.
//!
//! ```text
//! cargo build --release -p sheetd
//! cargo run --release -p sheetd-benches --example soak -- [--minutes 10] [--sheets 200] [--clients 32] [--warmup-secs 120]
//! ```
//!
//! It starts the real `sheetd serve` (`target/release/sheetd`, or `--server PATH`) as its own
//! process on 127.0.0.1 with a fresh store, creates the sheets (the example character), then runs
//! the clients, each on its own connection, until the time is up. Each client owns the sheets
//! whose number is its own modulo the client count and makes a random mix of calls:
//! Apply (the armor on or off, 40%), Values now (20%) and at a past revision (10%), Explain
//! (10%), WhyChanged over the last few revisions (5%), GetSheet (5%), a short Watch replay (5%),
//! ListRulesets (5%). The server's resident memory is sampled every 5 s.
//!
//! It prints every sample, then: calls and errors by kind, Apply p50/p99, and memory after the
//! warm-up (default 120 s: the time the server's bounded caches — the store's page cache and the
//! history checkpoints — take to fill under this load): its first sample, its largest, its last,
//! and the spread (largest / smallest − 1). Exits 1 on any error.

mod common;

use common::example_sheet;
use sheetd::grpc::proto as pb;
use sheetd_benches::generator::Rng;
use sheetd_benches::load::{arg, percentile, server_binary};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn steps(json: &[&str]) -> Vec<pb::Operation> {
    sheetd::cli::client::operations(&sheetd::cli::client::Steps {
        steps: json.iter().map(|s| s.to_string()).collect(),
        file: None,
        dialect: None,
    })
    .expect("valid steps")
}

fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

#[derive(Default)]
struct Tally {
    calls: BTreeMap<&'static str, u64>,
    errors: BTreeMap<&'static str, u64>,
    first_errors: Vec<String>,
    apply: Vec<Duration>,
}

/// One client's sheet: its id, revision and whether the armor is on.
struct Owned {
    id: String,
    revision: u64,
    armored: bool,
}

// long: one client's loop of mixed calls, each call kind one arm.
async fn client_loop(
    url: String,
    mut sheets: Vec<Owned>,
    seed: u64,
    until: Instant,
    tally: Arc<Mutex<Tally>>,
) {
    let mut c = sheetd::cli::client::connect(&url, None, None).await.expect("connect");
    let mut rng = Rng::new(seed);
    let on = steps(&[r#"{"add_object": {"kind": "EQUIPMENT", "key": "Plated Harness", "id": "harness"}}"#]);
    let off = steps(&[r#"{"remove_object": "harness"}"#]);
    while Instant::now() < until {
        let s = rng.below(sheets.len());
        let sheet = &mut sheets[s];
        let roll = rng.below(100);
        let start = Instant::now();
        let (kind, result): (&'static str, Result<(), tonic::Status>) = match roll {
            0..40 => {
                let ops = if sheet.armored { off.clone() } else { on.clone() };
                let req = pb::ApplyRequest {
                    sheet_id: sheet.id.clone(),
                    expected_revision: Some(sheet.revision),
                    operations: ops,
                    ..Default::default()
                };
                let r = c.apply(req).await.map(|r| {
                    sheet.revision = r.into_inner().revision;
                    sheet.armored = !sheet.armored;
                });
                let took = start.elapsed();
                tally.lock().expect("tally").apply.push(took);
                ("Apply", r)
            }
            40..60 => {
                let req = pb::ValuesRequest {
                    sheet_id: sheet.id.clone(),
                    variables: vec!["AC".into()],
                    revision: None,
                };
                ("Values", c.values(req).await.map(|_| ()))
            }
            60..70 => {
                let revision = Some(rng.next_u64() % (sheet.revision + 1));
                let req = pb::ValuesRequest { sheet_id: sheet.id.clone(), variables: vec![], revision };
                ("Values@revision", c.values(req).await.map(|_| ()))
            }
            70..80 => {
                let req =
                    pb::ExplainRequest { sheet_id: sheet.id.clone(), variable: "AC".into(), depth: None };
                ("Explain", c.explain(req).await.map(|_| ()))
            }
            80..85 => {
                let req = pb::WhyChangedRequest {
                    sheet_id: sheet.id.clone(),
                    variable: "AC".into(),
                    from_revision: sheet.revision.saturating_sub(5),
                    to_revision: None,
                };
                ("WhyChanged", c.why_changed(req).await.map(|_| ()))
            }
            85..90 => (
                "GetSheet",
                c.get_sheet(pb::GetSheetRequest { sheet_id: sheet.id.clone() }).await.map(|_| ()),
            ),
            90..95 => {
                let from = sheet.revision.saturating_sub(3);
                let want = sheet.revision - from;
                let req = pb::WatchRequest {
                    sheet_id: sheet.id.clone(),
                    variables: vec![],
                    from_revision: Some(from),
                };
                let r = async {
                    let mut stream = c.watch(req).await?.into_inner();
                    for _ in 0..want {
                        stream.message().await?;
                    }
                    Ok(())
                }
                .await;
                ("Watch", r)
            }
            _ => ("ListRulesets", c.list_rulesets(pb::ListRulesetsRequest::default()).await.map(|_| ())),
        };
        let mut t = tally.lock().expect("tally");
        *t.calls.entry(kind).or_default() += 1;
        if let Err(e) = result {
            *t.errors.entry(kind).or_default() += 1;
            if t.first_errors.len() < 10 {
                t.first_errors.push(format!("{kind} on {}: {e:?}", sheet.id));
            }
        }
    }
}

// long: a measurement script, read top to bottom: start the server, run, sample, report.
fn main() {
    let minutes: u64 = arg("--minutes", 10);
    let n_sheets: usize = arg("--sheets", 200);
    let n_clients: usize = arg("--clients", 32);
    let dir = tempfile::tempdir().expect("temp dir");
    let server = sheetd_benches::load::Server::start(&server_binary(), dir.path(), false);
    let url = server.url.clone();
    let pid = server.pid();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    let tally = Arc::new(Mutex::new(Tally::default()));
    let duration = Duration::from_secs(minutes * 60);
    let warmup = Duration::from_secs(arg::<u64>("--warmup-secs", 120)).min(duration);
    let samples = runtime.block_on(async {
        let mut c = sheetd::cli::client::connect(&url, None, None).await.expect("connect");
        let mut owned: Vec<Vec<Owned>> = (0..n_clients).map(|_| Vec::new()).collect();
        for i in 0..n_sheets {
            let id = example_sheet(&mut c).await;
            owned[i % n_clients].push(Owned { id, revision: 0, armored: false });
        }
        let start = Instant::now();
        let until = start + duration;
        let mut tasks = Vec::new();
        for (k, sheets) in owned.into_iter().enumerate() {
            if !sheets.is_empty() {
                tasks.push(tokio::spawn(client_loop(
                    url.clone(),
                    sheets,
                    0x9E37_79B9 + k as u64,
                    until,
                    tally.clone(),
                )));
            }
        }
        let mut samples = Vec::new();
        while Instant::now() < until {
            let rss = rss_bytes(pid);
            let t = start.elapsed();
            println!("t={:>5.0}s  rss={:>7.1} MiB", t.as_secs_f64(), rss as f64 / 1048576.0);
            samples.push((t, rss));
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        for t in tasks {
            t.await.expect("client task");
        }
        samples
    });
    drop(server);

    let mut t = tally.lock().expect("tally");
    let total: u64 = t.calls.values().sum();
    let errors: u64 = t.errors.values().sum();
    println!("\n{n_clients} clients, {n_sheets} sheets, {minutes} min: {total} calls, {errors} errors");
    for (k, n) in &t.calls {
        println!("  {k:<16} {n:>9} calls  {:>5} errors", t.errors.get(k).copied().unwrap_or(0));
    }
    for e in &t.first_errors {
        println!("  error: {e}");
    }
    t.apply.sort();
    println!(
        "Apply: p50 {:.0} µs, p99 {:.0} µs ({} calls)",
        percentile(&t.apply, 0.5).as_secs_f64() * 1e6,
        percentile(&t.apply, 0.99).as_secs_f64() * 1e6,
        t.apply.len()
    );
    let after: Vec<u64> = samples.iter().filter(|(at, _)| *at >= warmup).map(|(_, r)| *r).collect();
    if let (Some(first), Some(max), Some(min), Some(last)) =
        (after.first(), after.iter().max(), after.iter().min(), after.last())
    {
        let mib = |b: u64| b as f64 / 1048576.0;
        println!(
            "RSS after the {:.0} s warm-up: first {:.1} MiB, largest {:.1} MiB, last {:.1} MiB; spread {:.1}%",
            warmup.as_secs_f64(),
            mib(*first),
            mib(*max),
            mib(*last),
            (*max as f64 / *min as f64 - 1.0) * 100.0
        );
    }
    if errors > 0 {
        std::process::exit(1);
    }
}
