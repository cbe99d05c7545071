//! What the daemon's load examples (`loadgen`, `soak`) share: the example character and a
//! sheet made from it. (A module of the examples, not an example: Cargo builds only
//! `examples/*.rs` and `examples/*/main.rs` as examples.)

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
