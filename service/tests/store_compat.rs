//! Data directories written by earlier releases still load: the store's records keep the field
//! numbers of the messages they were written with.
//!
//! `fixtures/store-0.1.0-52651dc.redb.gz` is the `sheetd.redb` of release 0.1.0 (commit
//! 52651dc, before the store had its own records), made with that build's `sheetd serve` and
//! `sheetd client`: sheet `hero` on the starter ruleset with 47 revisions that use every kind
//! of operation (objects, inputs, modifiers with a priority, source and condition, instances,
//! removals), then `villain` and a generated `sheet-1`.

#[path = "common/server.rs"]
mod server;

use server::{Server, value_of, values};
use sheetd::grpc::proto as pb;
use std::io::Read;

fn unpack_fixture(data_dir: &std::path::Path) {
    let gz =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/store-0.1.0-52651dc.redb.gz"))
            .expect("the fixture is in the repository");
    let mut redb = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice()).read_to_end(&mut redb).expect("gunzip");
    std::fs::create_dir_all(data_dir).expect("data dir");
    std::fs::write(data_dir.join("sheetd.redb"), redb).expect("write store");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_written_by_release_0_1_0_serves_as_it_did() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    unpack_fixture(&data);
    assert_eq!(sheetd::store::verify(&data).expect("verify"), vec![], "every record decodes");
    let server = Server::start(&data, &[]);
    let mut c = server.client().await;

    let sheets = c.list_sheets(pb::ListSheetsRequest::default()).await.expect("list").into_inner().sheets;
    let ids: Vec<(&str, u64)> = sheets.iter().map(|s| (s.id.as_str(), s.revision)).collect();
    assert_eq!(ids, [("hero", 47), ("sheet-1", 0), ("villain", 0)], "{}", server.log());

    // The values the release reported, now and in the past (snapshot + logged changes).
    let now =
        c.values(values("hero", &["AC", "STR.Mod", "DEX.Mod"], None)).await.expect("values").into_inner();
    let shown: Vec<String> = ["AC", "STR.Mod", "DEX.Mod"].iter().map(|v| value_of(&now.values, v)).collect();
    assert_eq!(shown, ["19", "2", "2"]);
    for (revision, ac) in [(33, "7"), (3, "11")] {
        let past = c.values(values("hero", &["AC"], Some(revision))).await.expect("past").into_inner();
        assert_eq!(value_of(&past.values, "AC"), ac, "AC at revision {revision}");
    }

    // The log's operations read back whole: why-changed over revision 2 describes the modifier
    // with its condition, and replays everything after it.
    let why = c
        .why_changed(pb::WhyChangedRequest {
            sheet_id: "hero".into(),
            variable: "AC".into(),
            from_revision: 1,
            to_revision: Some(6),
        })
        .await
        .expect("why")
        .into_inner();
    let causes: Vec<(u64, &str)> = why.causes.iter().map(|c| (c.revision, c.description.as_str())).collect();
    assert_eq!(
        causes,
        [
            (2, "add modifier bless: ADD AC 1"),
            (4, "remove modifier bless"),
            (5, "add modifier haste: ADD AC 2"),
            (5, "remove source haste"),
            (6, "add modifier shield: ADD AC 2")
        ]
    );
    let Some(pb::operation::Op::AddModifier(bless)) =
        why.causes[0].operation.as_ref().and_then(|o| o.op.clone())
    else {
        panic!("{:?}", why.causes[0])
    };
    assert_eq!(
        (bless.priority, bless.source.as_str(), bless.condition.as_deref()),
        (5, "spell", Some("Armored"))
    );

    // It takes new revisions, and the next generated id follows the stored counter.
    let applied = c
        .apply(server::apply("hero", Some(47), server::ops(&[r#"{"remove_object": "armor"}"#])))
        .await
        .expect("apply")
        .into_inner();
    assert_eq!(applied.revision, 48);
    let created = c.create_sheet(pb::CreateSheetRequest::default()).await.expect("create").into_inner();
    assert_eq!(created.sheet.expect("info").id, "sheet-2");
}
