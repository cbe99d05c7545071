//! `builder`: what a character builder's calls cost on real data, each against an Apply in the
//! same run.
//!
//! ```text
//! cargo run --release -p sheetd-benches --example builder -- [--rounds N]
//! ```
//!
//! It starts `sheetd serve` in-process with Starfinder core and Pact Worlds (read in place from
//! `../shared/pcgen/`; without them it says so and stops), makes a Starfinder character
//! (Astrazoan), and then, round after round, interleaved so that all see the same machine:
//! 1. **the catalog**: every object of the ruleset listed through ListCatalog, page after page
//!    (`page_size` 1,000, the most a page holds; the reply limit may end a page sooner);
//! 2. **a what-if**: Preview of putting on Thinplate armor, with the trace of every variable the
//!    armor changes whose name holds `AC`;
//! 3. **the baseline**: the Apply of the same change (durable), and the Apply taking it off.
//!
//! It prints the medians, and each against the Apply's.

mod common;

use sheetd::grpc::config::ServeArgs;
use sheetd::grpc::proto as pb;
use sheetd_benches::load::arg;
use std::path::Path;
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: sheetd::alloc::Allocator = sheetd::alloc::Allocator;

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn add(kind: &str, key: &str, id: &str) -> pb::Operation {
    let step = format!(r#"{{"add_object": {{"kind": "{kind}", "key": "{key}", "id": "{id}"}}}}"#);
    sheetd::cli::client::operations(&sheetd::cli::client::Steps {
        steps: vec![step],
        file: None,
        dialect: None,
    })
    .expect("a step")
    .remove(0)
}

fn remove(id: &str) -> pb::Operation {
    pb::Operation { op: Some(pb::operation::Op::RemoveObject(id.to_owned())), ..Default::default() }
}

// long: a measurement script, read top to bottom: start the server, measure, print.
fn main() {
    let rounds: usize = arg("--rounds", 21);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/pcgen/data/starfinder/paizo");
    let core = root.join("core/_starfinder_core_rulebook.pcc");
    let pact = root.join("pact_worlds/_starfinder_pact_worlds.pcc");
    if !core.is_file() {
        eprintln!("notice: {} is absent: nothing to measure", core.display());
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let rulesets = vec![format!("starfinder={},{}", core.display(), pact.display())];
    let (runtime, url) = common::serve_in_process(dir.path(), ServeArgs { rulesets, ..Default::default() });
    runtime.block_on(async move {
        let mut c = common::client(&url).await;
        let create = pb::CreateSheetRequest {
            ruleset_id: "starfinder".into(),
            id: "sf".into(),
            operations: vec![add("RACE", "Astrazoan", "race")],
            variables: vec!["none".into()],
        };
        c.create_sheet(create).await.expect("a Starfinder character");
        let on = vec![add("EQUIPMENT", "Thinplate", "armor")];
        let off = vec![remove("armor")];
        // What the armor changes, and which of those are armor classes: the what-if explains them.
        let probe = c
            .preview(pb::PreviewRequest {
                sheet_id: "sf".into(),
                operations: on.clone(),
                ..Default::default()
            })
            .await
            .expect("preview")
            .into_inner();
        let changes = probe.result.expect("result").changes;
        let explain: Vec<String> =
            changes.iter().map(|c| c.r#ref.clone()).filter(|r| r.contains("AC")).collect();
        println!(
            "Starfinder character: Thinplate changes {} values; the what-if explains {explain:?}",
            changes.len()
        );

        let (mut catalog, mut preview, mut apply_on, mut apply_off) = (vec![], vec![], vec![], vec![]);
        let (mut objects, mut pages) = (0, 0);
        for _ in 0..rounds {
            let t = Instant::now();
            let (mut token, mut n, mut p) = (String::new(), 0, 0);
            loop {
                let req = pb::ListCatalogRequest {
                    ruleset_id: "starfinder".into(),
                    page_size: 1000,
                    page_token: token,
                    ..Default::default()
                };
                let page = c.list_catalog(req).await.expect("catalog").into_inner();
                n += page.objects.len();
                p += 1;
                if page.next_page_token.is_empty() {
                    break;
                }
                token = page.next_page_token;
            }
            catalog.push(t.elapsed());
            (objects, pages) = (n, p);

            let t = Instant::now();
            let req = pb::PreviewRequest {
                sheet_id: "sf".into(),
                operations: on.clone(),
                explain: explain.clone(),
                ..Default::default()
            };
            let r = c.preview(req).await.expect("preview").into_inner();
            preview.push(t.elapsed());
            assert_eq!(r.traces.len(), explain.len());

            for (ops, times) in [(&on, &mut apply_on), (&off, &mut apply_off)] {
                let t = Instant::now();
                let req =
                    pb::ApplyRequest { sheet_id: "sf".into(), operations: ops.clone(), ..Default::default() };
                c.apply(req).await.expect("apply");
                times.push(t.elapsed());
            }
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let base = median(apply_on.clone());
        println!("{rounds} rounds, medians (Apply: the same armor put on, durable):");
        println!("  Apply (armor on)            {:8.2} ms", ms(base));
        println!("  Apply (armor off)           {:8.2} ms", ms(median(apply_off)));
        let c = median(catalog);
        println!(
            "  catalog, all {objects} objects in {pages} pages {:8.2} ms  = {:.1} × Apply",
            ms(c),
            ms(c) / ms(base)
        );
        let p = median(preview);
        println!("  what-if (Preview + traces)  {:8.2} ms  = {:.2} × Apply", ms(p), ms(p) / ms(base));
    });
}
