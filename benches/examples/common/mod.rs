//! What the daemon's load examples (`loadgen`, `batch_par`, `soak`, `builder`) share: a server
//! started in the process, the example character and a sheet made from it, and SolveBatch's
//! in-process baseline. (A module of the examples, not an example: Cargo builds only
//! `examples/*.rs` and `examples/*/main.rs` as examples.)
#![allow(dead_code, reason = "each example uses part of it")]

use sheetd::grpc::proto as pb;
use sheetd_benches::load::cpu_seconds;
use std::time::{Duration, Instant};

/// The operations of `data/examples/starter-character.json`.
pub fn example() -> Vec<pb::Operation> {
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/examples/starter-character.json");
    sheetd::cli::client::operations(&sheetd::cli::client::Steps {
        steps: vec![],
        file: Some(file),
        dialect: None,
    })
    .expect("example sheet")
}

/// A new sheet built from the example character on `client`'s server; its id.
pub async fn example_sheet(client: &mut sheetd::cli::client::Client) -> String {
    let created = client
        .create_sheet(pb::CreateSheetRequest { operations: example(), ..Default::default() })
        .await
        .expect("create")
        .into_inner();
    created.sheet.expect("info").id
}

/// `sheetd serve` started in this process on a free loopback port, with a fresh store in `dir`
/// and `config`'s other settings (`listen` and `data_dir` are set here), on a new runtime; the
/// runtime and the server's URL.
pub fn serve_in_process(
    dir: &std::path::Path,
    config: sheetd::grpc::config::ServeArgs,
) -> (tokio::runtime::Runtime, String) {
    let port =
        std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
    let config = sheetd::grpc::config::ServeArgs {
        listen: Some(([127, 0, 0, 1], port).into()),
        data_dir: Some(dir.to_owned()),
        ..config
    }
    .resolve()
    .expect("config");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.spawn(async move {
        if let Err(e) = sheetd::grpc::serve(config, |_| {}).await {
            eprintln!("server: {e}");
            std::process::exit(1);
        }
    });
    (runtime, format!("http://127.0.0.1:{port}"))
}

/// A client of the server at `url`, once it listens.
pub async fn client(url: &str) -> sheetd::cli::client::Client {
    loop {
        match sheetd::cli::client::connect(url, None, None).await {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
        }
    }
}

/// The baseline of SolveBatch: `items` solved in-process on `threads` threads, no gRPC — each
/// converted from its wire form, built, solved and its values encoded as the server's
/// SolveBatch encodes them. Returns the wall time and the process's CPU seconds it took (from
/// `/proc`, when readable). The items are copied before the clock starts.
pub fn solve_in_process(
    items: &[pb::SolveBatchRequest],
    ruleset: &std::sync::Arc<data::Ruleset>,
    threads: usize,
) -> (Duration, Option<f64>) {
    let chunks: Vec<Vec<pb::SolveBatchRequest>> =
        items.chunks(items.len().div_ceil(threads).max(1)).map(<[_]>::to_vec).collect();
    let cpu_before = cpu_seconds("self");
    let t = Instant::now();
    std::thread::scope(|s| {
        for chunk in chunks {
            let ruleset = ruleset.clone();
            s.spawn(move || {
                for item in chunk {
                    let ops = sheetd::grpc::convert::operations(item.operations).expect("operations");
                    let mut c = data::Character::new(ruleset.clone()).expect("sheet");
                    c.apply(&ops).expect("solves");
                    // The values as the server's SolveBatch reads them out: encoded straight
                    // into the reply, with no record per value.
                    std::hint::black_box(sheetd::grpc::batch_values::BatchValues::from_character(&c));
                }
            });
        }
    });
    let wall = t.elapsed();
    (wall, cpu_seconds("self").zip(cpu_before).map(|(after, before)| after - before))
}
