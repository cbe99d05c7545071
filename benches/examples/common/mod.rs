//! What the daemon's load examples (`loadgen`, `soak`, `builder`) share: a server started in
//! the process, the example character and a sheet made from it. (A module of the examples, not
//! an example: Cargo builds only `examples/*.rs` and `examples/*/main.rs` as examples.)
#![allow(dead_code, reason = "each example uses part of it")]

use sheetd::grpc::proto as pb;

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
