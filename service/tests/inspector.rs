//! The web inspector in a real browser: Debian's `chromium`, driven through `chromedriver`
//! (WebDriver), against the real `sheetd serve` with auth on. The page is opened without a token
//! (a readable refusal), then with one: a sheet's waterfall and graph for AC, a change applied by
//! a second client showing up live, why AC changed, a what-if previewed without committing, and
//! an unreachable server. Screenshots of each step go to `target/tmp/inspector/`, with the
//! first-paint figures against a 2,000-variable sheet (and an Apply measured in the same run).
//!
//! A machine without `chromium` and `chromedriver` skips the test, saying so; in CI (`CI` set) it
//! fails instead (`.ci/run` installs both).

#[path = "common/server.rs"]
mod server;

use fantoccini::{Client as Browser, ClientBuilder, Locator};
use server::{Server, example_character, ops};
use sheetd::grpc::proto as pb;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WRITE: &str = "inspect-secret";
const ADMIN: &str = "inspect-admin";

/// Where the screenshots and figures go.
fn artefacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("inspector");
    std::fs::create_dir_all(&dir).expect("artefact directory");
    dir
}

/// `chromium` and `chromedriver`, or `None` (said) where the test may be skipped.
fn browser_binaries() -> Option<(PathBuf, PathBuf)> {
    let find = |name: &str| {
        std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| p.is_file()))
    };
    match (find("chromium"), find("chromedriver")) {
        (Some(c), Some(d)) => Some((c, d)),
        _ => {
            let missing = "chromium and chromedriver are not installed (Debian: chromium chromium-driver)";
            assert!(std::env::var_os("CI").is_none(), "{missing}: CI must run the browser test");
            eprintln!("skipping the inspector's browser test: {missing}");
            None
        }
    }
}

/// A chromedriver on a free loopback port; killed when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// `scratch`: the browser's temporary files go there (removed with it), not into /tmp.
fn driver(binary: &Path, scratch: &Path) -> Driver {
    let port = free_port();
    let child = Command::new(binary)
        .arg(format!("--port={port}"))
        .env("TMPDIR", scratch)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let d = Driver { child, url: format!("http://127.0.0.1:{port}") };
    let until = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "chromedriver did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    d
}

async fn open_browser(chromium: &Path, driver: &Driver) -> Browser {
    let caps = serde_json::json!({
        "goog:chromeOptions": {
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1500,1150"]
        }
    });
    let serde_json::Value::Object(caps) = caps else { unreachable!("an object literal") };
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(&driver.url)
        .await
        .expect("a browser session")
}

/// Waits until the page's JavaScript expression is true (15 s at most).
async fn until(b: &Browser, what: &str, condition: &str) {
    let limit = Instant::now() + Duration::from_secs(15);
    let script = format!("try {{ return Boolean({condition}); }} catch (e) {{ return false; }}");
    loop {
        if b.execute(&script, vec![]).await.expect("script runs") == serde_json::Value::Bool(true) {
            return;
        }
        if Instant::now() > limit {
            let text = b.execute("return document.body.innerText", vec![]).await.expect("page text");
            panic!("waited 15 s for {what} ({condition}); the page says:\n{}", text.as_str().unwrap_or(""));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn text(b: &Browser, css: &str) -> String {
    b.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}")).text().await.expect("text")
}

async fn click(b: &Browser, css: &str) {
    b.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css}: {e}")).click().await.expect("click");
}

async fn shot(b: &Browser, name: &str) {
    let png = b.screenshot().await.expect("screenshot");
    std::fs::write(artefacts().join(format!("{name}.png")), png).expect("write screenshot");
}

async fn grpc(url: &str, token: &str) -> sheetd::cli::client::Client {
    sheetd::cli::client::connect(url, (!token.is_empty()).then_some(token), None).await.expect("connect")
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// A ruleset of `n` workers: a sheet with all of them has 3 variables each, and Payroll.
fn guild(n: usize) -> String {
    let mut t = String::from(
        "[ruleset]\nname = \"big\"\n\n[scopes]\n\"PC.WORKER\" = \"PC\"\n\n[variables.PC]\nPayroll = \"NUMBER\"\n\n\
         [variables.\"PC.WORKER\"]\nWage = \"NUMBER\"\nSTR = \"NUMBER\"\n\n[kinds.WORKER]\nscope = \"PC.WORKER\"\n\n\
         [global]\nmodify = [{ var = \"Payroll\", set = \"sum(PC.WORKER, Wage)\" }]\n",
    );
    for i in 0..n {
        t.push_str(&format!(
            "\n[[object]]\nkind = \"WORKER\"\nkey = \"W{i}\"\nmodify = [{{ var = \"Wage\", set = \"{}\" }}, {{ var = \"STR\", set = \"{}\" }}]\n",
            i % 7 + 1,
            i % 18 + 3
        ));
    }
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inspector_shows_explains_and_previews_a_live_sheet_in_chromium() {
    let Some((chromium, chromedriver)) = browser_binaries() else { return };
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = [format!("write={WRITE}"), format!("admin={ADMIN}")];
    let server = Server::start(&dir.path().join("data"), &["--token", &tokens[0], "--token", &tokens[1]]);
    let mut c = grpc(&server.url, WRITE).await;
    let create =
        pb::CreateSheetRequest { id: "hero".into(), operations: example_character(), ..Default::default() };
    c.create_sheet(create).await.expect("create");
    let scratch = dir.path().join("browser");
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    let driver = driver(&chromedriver, &scratch);
    let b = open_browser(&chromium, &driver).await;

    // Without a token the server refuses, and the page says what to do.
    b.goto(&format!("{}/", server.url)).await.expect("open the page");
    until(
        &b,
        "the refusal",
        "document.querySelector('#error:not([hidden])').textContent.includes('needs a valid token')",
    )
    .await;
    shot(&b, "01-token-needed").await;

    // With it: the sheet list, the sheet, and AC's waterfall and graph.
    b.find(Locator::Css("#token")).await.expect("token field").send_keys(WRITE).await.expect("type");
    click(&b, "#connect").await;
    until(&b, "the sheet list", "document.querySelector('button[data-sheet=\"hero\"]')").await;
    click(&b, "button[data-sheet=\"hero\"]").await;
    until(
        &b,
        "AC's row",
        "document.querySelector('#values tr[data-ref=\"AC\"] td.value').textContent === '17'",
    )
    .await;
    click(&b, "#values tr[data-ref=\"AC\"] button").await;
    until(&b, "AC's waterfall", "document.querySelector('table.waterfall[data-ref=\"AC\"]')").await;
    let waterfall = text(&b, "table.waterfall[data-ref=\"AC\"]").await;
    assert!(waterfall.contains("default") && waterfall.contains("SET"), "{waterfall}");
    assert!(waterfall.contains("ArmorBonus = 5") && waterfall.contains("00-core.toml"), "{waterfall}");
    let total = text(&b, "table.waterfall[data-ref=\"AC\"] tr.total td.after").await;
    assert_eq!(total.trim(), "17");
    // The graph: AC in focus, read from ArmorBonus, which reads the armor's ArmorAC.
    until(&b, "the graph", "document.querySelector('#graph g.node.focus[data-ref=\"AC\"]')").await;
    until(
        &b,
        "an edge into AC",
        "document.querySelector('#graph path.edge[data-from=\"ArmorBonus\"][data-to=\"AC\"]')",
    )
    .await;
    until(
        &b,
        "a second step",
        "document.querySelector('#graph path.edge[data-from=\"armor.ArmorAC\"][data-to=\"ArmorBonus\"]')",
    )
    .await;
    shot(&b, "02-waterfall-and-graph").await;
    // Clicking ArmorBonus opens it: AC is now drawn as what reads it.
    click(&b, "#graph g.node[data-ref=\"ArmorBonus\"]").await;
    until(&b, "ArmorBonus opened", "document.querySelector('#graph g.node.focus[data-ref=\"ArmorBonus\"]') && document.querySelector('#graph g.node.reader[data-ref=\"AC\"]')").await;
    assert!(text(&b, "#var-title").await.starts_with("ArmorBonus = 5"));
    click(&b, "#graph g.node.reader[data-ref=\"AC\"]").await;
    until(&b, "AC again", "document.querySelector('#graph g.node.focus[data-ref=\"AC\"]')").await;

    // Live: another client takes the armor off; the page follows, the changed values marked.
    let off = ops(&[r#"{"remove_object": "armor"}"#]);
    c.apply(pb::ApplyRequest { sheet_id: "hero".into(), operations: off, ..Default::default() })
        .await
        .expect("apply");
    until(
        &b,
        "AC live",
        "document.querySelector('#values tr[data-ref=\"AC\"].changed td.value').textContent === '12'",
    )
    .await;
    until(&b, "the revision", "document.querySelector('#revision').dataset.revision === '1'").await;
    until(
        &b,
        "the waterfall refreshed",
        "document.querySelector('table.waterfall tr.total td.after').textContent.startsWith('12')",
    )
    .await;
    shot(&b, "03-live-change").await;

    // Why AC changed between revisions 0 and 1: the operation, and its paths through the graph.
    b.execute(
        "document.querySelector('#why-from').value = '0'; document.querySelector('#why-to').value = '1';",
        vec![],
    )
    .await
    .expect("set the revisions");
    click(&b, "#why-go").await;
    until(&b, "the causes", "document.querySelector('#why-result .cause')").await;
    let why = text(&b, "#why-result").await;
    assert!(why.contains("AC: 17 at revision 0 → 12 at revision 1"), "{why}");
    assert!(why.contains("remove object armor: 17 → 12") && why.contains("ArmorBonus → AC"), "{why}");
    b.execute("document.querySelector('#why-result').scrollIntoView()", vec![]).await.expect("scroll");
    shot(&b, "04-why-changed").await;

    // Try it: the Plated Harness from the catalog, previewed with AC's trace; nothing committed.
    b.find(Locator::Css("#catalog-text")).await.expect("search").send_keys("Plated").await.expect("type");
    until(
        &b,
        "the harness in the catalog",
        "document.querySelector('#catalog button[data-key=\"Plated Harness\"]')",
    )
    .await;
    click(&b, "#catalog button[data-key=\"Plated Harness\"]").await;
    click(&b, "#preview-go").await;
    until(&b, "the preview", "document.querySelector('#tryit-result table.preview tr[data-ref=\"AC\"]')")
        .await;
    let preview = text(&b, "#tryit-result").await;
    assert!(preview.contains("nothing committed"), "{preview}");
    let ac = text(&b, "#tryit-result table.preview tr[data-ref=\"AC\"]").await;
    assert!(ac.starts_with("AC") && ac.contains("12") && ac.ends_with("19"), "{ac}");
    let trace = text(&b, "#tryit-result table.waterfall[data-ref=\"AC\"]").await;
    assert!(
        trace.contains("ArmorBonus = 8") && trace.contains("MaxDexBonus = 1"),
        "AC's trace as it would be: {trace}"
    );
    b.execute("document.querySelector('#tryit-result').scrollIntoView()", vec![]).await.expect("scroll");
    shot(&b, "05-what-if").await;
    // An input set instead: DEX rolled 18 (the armor is off, so nothing caps it).
    click(&b, "#clear-go").await;
    b.execute(
        "const s = document.querySelector('#input-channel'); s.value = 'DEX.Rolled'; \
         document.querySelector('#input-value').value = '18';",
        vec![],
    )
    .await
    .expect("choose the input");
    click(&b, "#input-go").await;
    click(&b, "#preview-go").await;
    until(
        &b,
        "the input's preview",
        "document.querySelector('#tryit-result table.preview tr[data-ref=\"DEX\"]')",
    )
    .await;
    let dex = text(&b, "#tryit-result table.preview tr[data-ref=\"AC\"]").await;
    assert!(dex.starts_with("AC") && dex.ends_with("14"), "{dex}");
    let now = c.get_sheet(pb::GetSheetRequest { sheet_id: "hero".into() }).await.expect("get").into_inner();
    assert_eq!(now.sheet.expect("sheet").revision, 1, "the previews committed nothing");

    // First paint against a 2,000-variable sheet, against an Apply in the same run.
    let mut admin = grpc(&server.url, ADMIN).await;
    let load = pb::LoadRulesetRequest { id: "big".into(), inline_text: guild(666), ..Default::default() };
    assert!(admin.load_ruleset(load).await.expect("load").into_inner().ok);
    let hire: Vec<String> =
        (0..666).map(|i| format!(r#"{{"add_object": {{"kind": "WORKER", "key": "W{i}"}}}}"#)).collect();
    let hire = ops(&hire.iter().map(String::as_str).collect::<Vec<_>>());
    let big = pb::CreateSheetRequest {
        ruleset_id: "big".into(),
        id: "big".into(),
        operations: hire,
        variables: vec!["Payroll".into()],
    };
    c.create_sheet(big).await.expect("the big sheet");
    let vars =
        c.values(pb::ValuesRequest { sheet_id: "big".into(), ..Default::default() }).await.expect("values");
    let variables = vars.into_inner().values.len();
    assert!(variables >= 2000, "{variables} variables");
    let (mut shown, mut painted) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        b.goto("about:blank").await.expect("blank");
        b.goto(&format!("{}/#sheet=big", server.url)).await.expect("open the big sheet");
        until(&b, "the big sheet's values", "window.sheetdTimings.valuesShown !== undefined").await;
        let t = b.execute("return [window.sheetdTimings.valuesShown, (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0]", vec![]).await.expect("timings");
        shown.push(t[0].as_f64().expect("ms"));
        painted.push(t[1].as_f64().expect("ms"));
    }
    let rows = b
        .execute("return document.querySelectorAll('#values tr[data-ref]').length", vec![])
        .await
        .expect("rows");
    assert_eq!(rows.as_u64(), Some(variables as u64), "every value shown");
    shot(&b, "06-two-thousand-variables").await;
    let mut applies = Vec::new();
    for i in 0..21 {
        let step = if i % 2 == 0 {
            r#"{"remove_object": "W0"}"#
        } else {
            r#"{"add_object": {"kind": "WORKER", "key": "W0"}}"#
        };
        let t = Instant::now();
        let req = pb::ApplyRequest { sheet_id: "big".into(), operations: ops(&[step]), ..Default::default() };
        c.apply(req).await.expect("apply");
        applies.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let figures = format!(
        "inspector against a {variables}-variable sheet, 5 page loads: first contentful paint median {:.1} ms, \
         every value shown median {:.1} ms; Apply round trip on the same server, 21 calls: median {:.2} ms\n",
        median(painted),
        median(shown),
        median(applies)
    );
    std::fs::write(artefacts().join("figures.txt"), &figures).expect("figures");
    eprintln!("{figures}screenshots: {}", artefacts().display());

    // The server gone: the page says it cannot reach it.
    b.goto(&format!("{}/#sheet=hero", server.url)).await.expect("back to hero");
    until(&b, "hero", "document.body.dataset.sheet === 'hero'").await;
    drop(server);
    click(&b, "#connect").await;
    until(
        &b,
        "the unreachable server",
        "document.querySelector('#error:not([hidden])').textContent.includes('Cannot reach the server')",
    )
    .await;
    shot(&b, "07-server-unreachable").await;

    // Auth off: no token needed, the page lists and opens sheets as it is.
    let open = Server::start(&dir.path().join("open"), &[]);
    let mut c = grpc(&open.url, "").await;
    let create =
        pb::CreateSheetRequest { id: "free".into(), operations: example_character(), ..Default::default() };
    c.create_sheet(create).await.expect("create");
    b.execute("sessionStorage.clear()", vec![]).await.expect("forget the token");
    b.goto(&format!("{}/#sheet=free&var=AC", open.url)).await.expect("open the page");
    until(&b, "the open server's sheet", "document.querySelector('table.waterfall[data-ref=\"AC\"]')").await;
    assert!(text(&b, "#server").await.contains("1 sheet"));
    shot(&b, "08-auth-off").await;
    b.close().await.expect("close the browser");
}
