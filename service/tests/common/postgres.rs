//! A real PostgreSQL server for tests, from Debian's `postgresql` package: `initdb` and `pg_ctl`
//! on a temporary folder, listening on a Unix socket only (no TCP port), with trust
//! authentication for the user `sheetd`; stopped and removed when dropped.
//!
//! Where the binaries are missing the tests print a notice and skip — unless `CI` is set, where
//! they must run (`.ci/run` installs the package). PostgreSQL refuses to run as root: as root the
//! server runs as the `postgres` user the package creates, through `runuser`.

#![allow(dead_code, reason = "each test file uses a part")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// A running PostgreSQL server.
pub struct Postgres {
    bin: PathBuf,
    /// Holds the cluster (`data/`) and the socket; removed when dropped.
    dir: tempfile::TempDir,
    /// Run the server's commands as this user (`postgres` when the tests run as root).
    user: Option<String>,
    /// Options the server starts with besides the socket's (TLS on a TCP port, say).
    options: String,
    /// With TLS: the loopback port, and the certificate's PEM (its own CA).
    pub tls: Option<(u16, String)>,
}

/// Where `initdb` and `pg_ctl` are: on the PATH, or the newest of Debian's versions.
fn binaries() -> Option<PathBuf> {
    let on_path =
        std::env::var_os("PATH").into_iter().flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>());
    if let Some(dir) = on_path.into_iter().find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
    {
        // Through a symbolic link, to the folder holding psql too.
        let real = std::fs::canonicalize(dir.join("initdb")).ok();
        return Some(real.and_then(|r| r.parent().map(Path::to_path_buf)).unwrap_or(dir));
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|b| b.join("initdb").is_file() && b.join("pg_ctl").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

static DATABASES: AtomicU32 = AtomicU32::new(0);

impl Postgres {
    /// Starts a server, or `None` (with a notice) where PostgreSQL is not installed and the
    /// tests are not in CI.
    pub fn start() -> Option<Postgres> {
        Postgres::start_with(false)
    }

    /// [`Postgres::start`], also listening on a loopback TCP port with TLS only there
    /// (`hostssl`), its certificate for `localhost` self-signed.
    pub fn start_tls() -> Option<Postgres> {
        Postgres::start_with(true)
    }

    fn start_with(tls: bool) -> Option<Postgres> {
        let Some(bin) = binaries() else {
            let missing = "PostgreSQL's initdb and pg_ctl are not installed (Debian: postgresql)";
            assert!(std::env::var_os("CI").is_none(), "{missing}; CI must run the PostgreSQL tests");
            eprintln!("notice: skipping a PostgreSQL test: {missing}");
            return None;
        };
        let dir = tempfile::Builder::new().prefix("sheetd-pg-").tempdir().expect("temp dir");
        let user = is_root().then(|| "postgres".to_owned());
        if let Some(u) = &user {
            // The server's user owns its folder.
            let status = Command::new("chown").args(["-R", u]).arg(dir.path()).status().expect("chown");
            assert!(status.success(), "chown {u} {}", dir.path().display());
        }
        let mut pg = Postgres { bin, dir, user, options: String::new(), tls: None };
        let data = pg.data();
        pg.run("initdb", &["-D", &data, "-U", "sheetd", "--auth=trust", "-E", "UTF8", "--no-sync"]);
        if tls {
            pg.tls_on();
        }
        pg.start_server();
        Some(pg)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    /// The folder holding the server's socket.
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Runs one of the server's commands (as its user), panicking with its output on failure.
    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(tool);
        let mut c = match &self.user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        let out =
            c.args(args).current_dir(self.dir.path()).output().unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(
            out.status.success(),
            "{tool} {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// A certificate and key for `localhost` in the cluster's folder, TLS on, a free loopback
    /// port, and TCP connections accepted with TLS only.
    fn tls_on(&mut self) {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).expect("certificate");
        let (pem, key) = (cert.cert.pem(), cert.signing_key.serialize_pem());
        let data = self.dir.path().join("data");
        std::fs::write(data.join("server.crt"), &pem).expect("write");
        std::fs::write(data.join("server.key"), key).expect("write");
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(data.join("server.key"), private).expect("chmod");
        // Only TLS over TCP: the socket stays as it is.
        let hba = std::fs::read_to_string(data.join("pg_hba.conf")).expect("pg_hba.conf");
        let hba: String = hba
            .lines()
            .map(|l| if l.starts_with("host ") { l.replacen("host ", "hostssl ", 1) } else { l.to_owned() })
            .map(|l| l + "\n")
            .collect();
        std::fs::write(data.join("pg_hba.conf"), hba).expect("write");
        if let Some(u) = &self.user {
            let status = Command::new("chown").args(["-R", u]).arg(&data).status().expect("chown");
            assert!(status.success());
        }
        let free = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        let port = free.local_addr().expect("address").port();
        drop(free);
        self.options = format!("-p {port} -c listen_addresses=127.0.0.1 -c ssl=on");
        self.tls = Some((port, pem));
    }

    fn start_server(&self) {
        let options = format!(
            "-k {} -c listen_addresses='' -c fsync=on -c shared_buffers=16MB -c max_connections=60 {}",
            self.dir.path().display(),
            self.options
        );
        let log = self.dir.path().join("server.log").display().to_string();
        self.run("pg_ctl", &["-D", &self.data(), "-o", &options, "-l", &log, "-w", "-t", "60", "start"]);
    }

    /// Stops the server (fast: connections are closed, transactions rolled back).
    pub fn stop(&self) {
        self.run("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"]);
    }

    /// Starts the server again after [`Postgres::stop`].
    pub fn restart(&self) {
        self.start_server();
    }

    /// The server's port (its socket's name has it too).
    pub fn port(&self) -> u16 {
        self.tls.as_ref().map_or(5432, |(p, _)| *p)
    }

    /// A URL for database `db` over the socket.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://sheetd@/{db}?host={}&port={}", self.dir.path().display(), self.port())
    }

    /// A new, empty database; its URL.
    pub fn database(&self) -> String {
        let name = format!("t{}_{}", std::process::id(), DATABASES.fetch_add(1, Ordering::Relaxed));
        let socket = self.dir.path().display().to_string();
        let psql = self.bin.join("psql");
        let mut c = Command::new(psql);
        let port = self.port().to_string();
        c.args(["-h", &socket, "-p", &port, "-U", "sheetd", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c"])
            .arg(format!("CREATE DATABASE {name}"));
        let out = c.output().expect("psql");
        assert!(out.status.success(), "CREATE DATABASE: {}", String::from_utf8_lossy(&out.stderr));
        self.url(&name)
    }

    /// Runs SQL on database `url`'s database with psql; its output, unaligned.
    pub fn psql(&self, url: &str, sql: &str) -> String {
        let db =
            url.strip_prefix("postgres://sheetd@/").and_then(|s| s.split('?').next()).unwrap_or("postgres");
        let socket = self.dir.path().display().to_string();
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                &socket,
                "-p",
                &self.port().to_string(),
                "-U",
                "sheetd",
                "-d",
                db,
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ])
            .output()
            .expect("psql");
        assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let exe = self.bin.join("pg_ctl");
        let data = self.data();
        let args = ["-D", data.as_str(), "-m", "immediate", "-w", "stop"];
        let _ = match &self.user {
            Some(u) => Command::new("runuser").args(["-u", u, "--"]).arg(&exe).args(args).output(),
            None => Command::new(&exe).args(args).output(),
        };
    }
}
