//! What `contrib/` ships for running sheetd, exercised: the systemd unit verifies with
//! `systemd-analyze verify` (its binary pointed at the one built, its man page generated), the
//! server tells a service manager it is ready and stopping (`Type=notify`), and the Dockerfile's
//! health check is a command sheetd understands. (No container runtime or image registry is
//! reachable here: the image build is documented in the Dockerfile and docs/api.md.)
//!
//! Also the metrics endpoint an operator scrapes (`--metrics-listen`).
//!
//! A machine without `systemd-analyze` skips the unit's check, saying so; CI fails instead.

#[path = "common/server.rs"]
mod server;

use server::Server;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn contrib(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../contrib").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_systemd_unit_verifies() {
    let verify = Command::new("systemd-analyze").arg("--version").output();
    if !verify.is_ok_and(|o| o.status.success()) {
        assert!(std::env::var_os("CI").is_none(), "CI must verify the systemd unit: install systemd");
        eprintln!("skipping the unit's check: systemd-analyze is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let unit = contrib("sheetd.service");
    assert!(unit.contains("Type=notify") && unit.contains("StateDirectory=sheetd"), "{unit}");
    let unit = unit.replace("/usr/local/bin/sheetd", env!("CARGO_BIN_EXE_sheetd"));
    let path = dir.path().join("sheetd.service");
    std::fs::write(&path, unit).expect("write the unit");
    // Its Documentation= names man:sheetd(1): the pages, generated, where man finds them.
    let man = dir.path().join("man");
    let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["man", "--out"])
        .arg(man.join("man1"))
        .output()
        .expect("sheetd man");
    assert!(out.status.success());
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .env("MANPATH", &man)
        .output()
        .expect("verify");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.trim().is_empty(), "systemd-analyze verify: {said}");
}

#[test]
fn serve_tells_the_service_manager_when_it_is_ready_and_when_it_stops() {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket_path = dir.path().join("notify");
    let socket = UnixDatagram::bind(&socket_path).expect("bind");
    socket.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let notify = socket_path.display().to_string();
    let server = Server::start_with_env(&dir.path().join("data"), &[], &[("NOTIFY_SOCKET", &notify)]);
    let mut buf = [0u8; 64];
    let n = socket.recv(&mut buf).expect("READY=1 within 20 s");
    assert_eq!(&buf[..n], b"READY=1");
    // It serves when it says so.
    let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["client", "--server", &server.addr, "health"])
        .output()
        .expect("health");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "SERVING\n");
    server.stop();
    let n = socket.recv(&mut buf).expect("STOPPING=1");
    assert_eq!(&buf[..n], b"STOPPING=1");
}

#[test]
fn the_dockerfile_builds_the_binary_and_checks_its_health_with_a_real_command() {
    let docker = contrib("Dockerfile");
    assert!(
        docker.contains("cargo build --release --locked -p sheetd")
            && docker.contains("strip target/release/sheetd")
    );
    assert!(docker.contains("USER sheetd") && docker.contains("VOLUME [\"/var/lib/sheetd\"]"));
    // The health check's command, as the image runs it: against no server it fails, saying why.
    let line = docker
        .lines()
        .find(|l| l.contains("CMD [\"/usr/local/bin/sheetd\", \"client\""))
        .expect("HEALTHCHECK");
    let args: Vec<String> = line
        .split('[')
        .nth(1)
        .and_then(|l| l.split(']').next())
        .expect("a JSON list")
        .split(',')
        .map(|a| a.trim().trim_matches('"').to_owned())
        .collect();
    assert_eq!(args[1..], ["client", "--server", "127.0.0.1:50051", "health"]);
    let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["client", "--server", "127.0.0.1:1", "health"])
        .output()
        .expect("health");
    assert_eq!(out.status.code(), Some(1), "unhealthy without a server");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Connection refused"));
}

/// `GET path` on `addr`; the response's status line and body.
fn get(addr: &str, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").expect("send");
    let mut all = String::new();
    s.read_to_string(&mut all).expect("read");
    let (head, body) = all.split_once("\r\n\r\n").expect("a response");
    (head.lines().next().unwrap_or("").to_owned(), body.to_owned())
}

#[test]
fn metrics_count_calls_by_method_and_status_and_read_what_the_server_holds() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port =
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a port").port();
    let metrics = format!("127.0.0.1:{port}");
    let server = Server::start(&dir.path().join("data"), &["--metrics-listen", &metrics]);
    let client = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_sheetd"))
            .args(["client", "--server", &server.addr])
            .args(args)
            .output()
            .expect("client")
    };
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../data/examples/starter-character.json");
    assert!(client(&["create", "--file", example]).status.success());
    assert!(client(&["apply", "sheet-1", "--step", r#"{"remove_object": "armor"}"#]).status.success());
    assert!(!client(&["values", "nope"]).status.success());
    let (status, body) = get(&metrics, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    for line in [
        r#"sheetd_calls_total{method="CreateSheet",status="OK"} 1"#,
        r#"sheetd_calls_total{method="Apply",status="OK"} 1"#,
        r#"sheetd_calls_total{method="Values",status="NotFound"} 1"#,
        r#"sheetd_call_duration_seconds_count{method="Apply"} 1"#,
        "sheetd_sheets 1",
        "sheetd_watchers 0",
        r#"sheetd_ruleset_version{ruleset="starter"} 1"#,
    ] {
        assert!(body.lines().any(|l| l == line), "no `{line}` in:\n{body}");
    }
    let commits =
        body.lines().find_map(|l| l.strip_prefix("sheetd_store_commit_seconds_count ")).expect("commits");
    assert!(commits.parse::<u64>().expect("a count") >= 1, "{body}");
    let recomputed =
        body.lines().find_map(|l| l.strip_prefix("sheetd_recomputed_variables_total ")).expect("recomputed");
    assert!(recomputed.parse::<u64>().expect("a count") > 0, "{body}");
    assert!(body.ends_with("# EOF\n"), "OpenMetrics ends with # EOF");
    assert_eq!(get(&metrics, "/elsewhere").0, "HTTP/1.1 404 Not Found");
}

/// `serve` checks its preloaded rulesets before it creates a store, and reports every error of
/// every one, at its place in the file, with the paths as given.
#[test]
fn serve_reports_every_preload_error_before_creating_a_store() {
    let dir = tempfile::tempdir().expect("temp dir");
    let one = dir.path().join("one.toml");
    std::fs::write(&one, "x = [\n").expect("write");
    let two = dir.path().join("two.toml");
    std::fs::write(&two, "[ruleset]\nname = \"b\"\n[global]\nmodify = [{ var = \"Nope\", set = \"1\" }]\n")
        .expect("write");
    let data = dir.path().join("data");
    let out = Command::new(env!("CARGO_BIN_EXE_sheetd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .arg("--ruleset")
        .arg(format!("one={}", one.display()))
        .arg("--ruleset")
        .arg(format!("two={}", two.display()))
        .env("NO_COLOR", "1")
        .output()
        .expect("serve");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("ruleset `one` ({}) has 1 error", one.display())), "{said}");
    assert!(said.contains(&format!("ruleset `two` ({}) has 1 error", two.display())), "{said}");
    assert!(said.contains("data.unknown_variable") && said.contains("two.toml:4:20"), "{said}");
    assert!(!data.exists(), "no store was created");
}
