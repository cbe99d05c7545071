//! Starting the real `sheetd serve` binary on an ephemeral loopback port, for end-to-end tests.

use sheetd::cli::client::{Client, Steps};
use sheetd::grpc::proto as pb;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server; killed when dropped, unless stopped with [`Server::stop`].
pub struct Server {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT` (or https).
    pub url: String,
    /// host:port
    #[allow(dead_code, reason = "not every test file reads it")]
    pub addr: String,
    log: PathBuf,
}

impl Server {
    /// Starts `sheetd serve --listen 127.0.0.1:0 --data-dir DIR ARGS...` and waits until it
    /// listens.
    #[allow(dead_code, reason = "not every test file uses it")]
    pub fn start(data_dir: &Path, args: &[&str]) -> Server {
        Server::start_with_env(data_dir, args, &[])
    }

    /// Like [`Server::start`], with the server's address space limited to `bytes`
    /// (`RLIMIT_AS`): an abuse that would exhaust the machine fails inside the test instead.
    #[allow(dead_code, reason = "not every test file uses it")]
    pub fn start_limited(data_dir: &Path, args: &[&str], bytes: u64) -> Server {
        Server::spawn(data_dir, args, &[], &[(libc::RLIMIT_AS, bytes)])
    }

    /// Like [`Server::start`], with the server's open files limited to `files` (`RLIMIT_NOFILE`).
    #[allow(dead_code, reason = "not every test file uses it")]
    pub fn start_with_open_files(data_dir: &Path, args: &[&str], files: u64) -> Server {
        Server::spawn(data_dir, args, &[], &[(libc::RLIMIT_NOFILE, files)])
    }

    /// Like [`Server::start`], with extra environment variables.
    pub fn start_with_env(data_dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        Server::spawn(data_dir, args, env, &[])
    }

    fn spawn(
        data_dir: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        rlimits: &[(libc::__rlimit_resource_t, u64)],
    ) -> Server {
        let log = data_dir.with_extension(format!("log-{}", std::process::id()));
        let log_file = std::fs::File::create(&log).expect("log file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_sheetd"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(args)
            .env("RUST_LOG", "info")
            .env_remove("SHEETD_CONFIG")
            .env_remove("SHEETD_TOKENS")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(log_file);
        if !rlimits.is_empty() {
            use std::os::unix::process::CommandExt;
            let rlimits = rlimits.to_vec();
            // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    for &(resource, value) in &rlimits {
                        let lim = libc::rlimit { rlim_cur: value, rlim_max: value };
                        if libc::setrlimit(resource, &lim) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
        }
        let mut child = command.spawn().expect("start sheetd serve");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout is piped");
        BufReader::new(stdout).read_line(&mut line).expect("read stdout");
        let Some(rest) = line.trim().strip_prefix("sheetd serving on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the server did not start: {line:?}\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        };
        let url = rest.split_whitespace().next().expect("url").to_owned();
        let addr = url.split("://").nth(1).expect("host:port").to_owned();
        Server { child: Some(child), url, addr, log }
    }

    /// The server's resident memory now, in bytes (from /proc).
    #[allow(dead_code, reason = "not every test file uses it")]
    pub fn rss(&self) -> u64 {
        let pid = self.child.as_ref().expect("running").id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS");
        kb * 1024
    }

    /// Sends SIGTERM and returns how long the process took to exit, and its log.
    #[allow(dead_code, reason = "not every test file uses it")]
    pub fn terminate_timed(mut self, limit: Duration) -> (Duration, String) {
        let mut child = self.child.take().expect("running");
        let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
        assert!(status.success());
        let start = Instant::now();
        loop {
            if child.try_wait().expect("wait").is_some() {
                return (start.elapsed(), self.log());
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!("sheetd did not exit within {limit:?} of SIGTERM\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A client of this server, without a token.
    #[allow(dead_code, reason = "not every test file uses it")]
    pub async fn client(&self) -> Client {
        sheetd::cli::client::connect(&self.url, None, None).await.expect("connect")
    }

    /// Kills the server with SIGKILL: no graceful anything.
    #[allow(dead_code, reason = "not every test file uses it")]
    pub fn crash(mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().expect("SIGKILL");
        child.wait().expect("wait");
    }

    /// Sends SIGTERM and waits for a clean exit; returns the log.
    #[allow(dead_code, reason = "not every test file uses it")]
    pub fn stop(mut self) -> String {
        let mut child = self.child.take().expect("running");
        let pid = child.id().to_string();
        let status = Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
        assert!(status.success());
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                assert!(status.success(), "sheetd exited with {status}\n{}", self.log());
                break;
            }
            assert!(Instant::now() < deadline, "sheetd did not stop on SIGTERM\n{}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        self.log()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_file(&self.log);
    }
}

/// A new empty sheet, and a Watch on it from its current revision.
#[allow(dead_code, reason = "not every test file uses it")]
pub async fn new_watched_sheet(c: &mut Client) -> (String, tonic::Streaming<pb::WatchResponse>) {
    let created = c.create_sheet(pb::CreateSheetRequest::default()).await.expect("create").into_inner();
    let id = created.sheet.expect("info").id;
    let w = c
        .watch(pb::WatchRequest { sheet_id: id.clone(), variables: vec![], from_revision: None })
        .await
        .expect("watch")
        .into_inner();
    (id, w)
}

/// Operations from JSON steps, as `sheetd client --step` takes them.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn ops(steps: &[&str]) -> Vec<pb::Operation> {
    sheetd::cli::client::operations(&Steps {
        steps: steps.iter().map(|s| s.to_string()).collect(),
        file: None,
        dialect: None,
    })
    .expect("valid steps")
}

/// The example character's operations.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn example_character() -> Vec<pb::Operation> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/examples/starter-character.json");
    sheetd::cli::client::operations(&Steps { steps: vec![], file: Some(file), dialect: None })
        .expect("example sheet")
}

/// A value as people read it.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn shown(v: &Option<pb::Value>) -> String {
    v.as_ref().map_or("(none)".to_owned(), sheetd::grpc::convert::show)
}

/// The value of `r` among `values`.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn value_of(values: &[pb::VariableValue], r: &str) -> String {
    shown(&values.iter().find(|v| v.r#ref == r).unwrap_or_else(|| panic!("no {r}")).value)
}

/// An Apply request.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn apply(sheet: &str, expected: Option<u64>, operations: Vec<pb::Operation>) -> pb::ApplyRequest {
    pb::ApplyRequest {
        sheet_id: sheet.to_owned(),
        expected_revision: expected,
        operations,
        ..Default::default()
    }
}

/// A Values request.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn values(sheet: &str, vars: &[&str], revision: Option<u64>) -> pb::ValuesRequest {
    pb::ValuesRequest {
        sheet_id: sheet.to_owned(),
        variables: vars.iter().map(|v| v.to_string()).collect(),
        revision,
    }
}

/// Sends raw bytes to `addr` over one TCP connection and returns everything the server sends
/// back until it closes (a plain HTTP/1.1 exchange with `Connection: close`).
#[allow(dead_code, reason = "not every test file uses it")]
pub fn http1(addr: &str, request: &[u8]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.write_all(request).expect("send");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}
