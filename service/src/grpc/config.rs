//! `sheetd serve` configuration: command-line flags, environment variables (`SHEETD_*`) and an
//! optional TOML file (`--config`), in that order of precedence, over built-in defaults.
//!
//! ```toml
//! listen = "127.0.0.1:50051"
//! data_dir = "/var/lib/sheetd"
//! store = "postgres://sheetd@db.internal/sheetd"  # a shared PostgreSQL store (default: embedded)
//! default_ruleset = "starter"
//! log_format = "text"                 # or "json"
//! inspector = true                    # the web inspector at / (--no-inspector)
//! metrics_listen = "127.0.0.1:9090"   # Prometheus metrics at /metrics (off when absent)
//! otlp_endpoint = "http://127.0.0.1:4317"  # OpenTelemetry traces over OTLP/gRPC (off when absent)
//! ruleset_roots = ["/srv/sheetd/rulesets"]  # where LoadRuleset may read (docs/api.md#security)
//!
//! [rulesets]                          # preloaded: id = [paths], loaded in order
//! starfinder = ["/srv/pcgen/data/starfinder/paizo/core/_starfinder_core_rulebook.pcc"]
//!
//! [limits]                            # every limit, with its default
//! max_request_bytes = 4194304
//! max_reply_bytes = 4194304           # no reply is larger (docs/api.md#limits)
//! max_operations = 1000
//! max_formula_length = 16384
//! max_formula_depth = 64
//! max_sheets = 100000
//! watch_buffer = 256
//! max_ruleset_file_bytes = 16777216
//! max_ruleset_bytes = 268435456
//! max_ruleset_line_bytes = 65536
//! max_inline_ruleset_bytes = 1048576
//! max_blocking = 64
//! max_expensive = 2                   # default: the number of cores
//! call_timeout = 60                   # seconds
//! max_connections = 512
//! max_streams = 128                   # calls in flight on one connection
//! handshake_timeout = 10              # seconds
//! idle_timeout = 300                  # seconds
//! keepalive_interval = 60             # seconds
//! keepalive_timeout = 20              # seconds
//! store_cache_bytes = 33554432
//! shutdown_grace = 10                 # seconds
//!
//! [tls]
//! cert = "cert.pem"                   # relative paths are relative to this file
//! key = "key.pem"
//!
//! [auth]                              # TOKEN (admin) or ROLE=TOKEN, ROLE: read, write, admin
//! tokens = ["admin-token", "read=viewer-token", "write=builder-token"]
//!
//! [cors]
//! origins = ["https://builder.example"]
//! ```

use super::auth::TokenSpec;
use crate::engine::Limits;
use crate::engine::OpLimits;
use crate::engine::STARTER;
use clap::{Args, ValueEnum};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Arguments of `sheetd serve`. Every flag has an environment variable; flags win over the
/// environment, which wins over the config file.
#[derive(Debug, Default, Args)]
pub struct ServeArgs {
    /// A TOML config file (see docs/api.md#configuration).
    #[arg(long, value_name = "FILE", env = "SHEETD_CONFIG")]
    pub config: Option<PathBuf>,

    /// Address to listen on [default: 127.0.0.1:50051]. Port 0 picks a free port.
    #[arg(long, value_name = "ADDR", env = "SHEETD_LISTEN")]
    pub listen: Option<SocketAddr>,

    /// Directory of the embedded store [default: $XDG_DATA_HOME/sheetd, else
    /// ~/.local/share/sheetd].
    #[arg(long, value_name = "DIR", env = "SHEETD_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    /// Keep sheets and rulesets in PostgreSQL instead of the embedded store: a URL,
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` or `postgres://USER@/DB?host=/socket/dir`.
    /// Any number of servers may share one database (docs/deploy.md); the schema is created
    /// and migrated at start. [default: the embedded store in --data-dir]
    #[arg(long, value_name = "URL", env = "SHEETD_STORE")]
    pub store: Option<String>,

    /// Preload a ruleset: `ID=PATH[,PATH...]` (native directory or .toml, or PCGen .pcc; later
    /// paths load on top). Repeatable. The bundled starter ruleset is always loaded as `starter`.
    #[arg(long = "ruleset", value_name = "ID=PATHS")]
    pub rulesets: Vec<String>,

    /// A directory LoadRuleset may read ruleset files from (after resolving links); repeatable,
    /// or comma-separated in SHEETD_RULESET_ROOTS [default: DATA_DIR/rulesets]. Paths clients
    /// name are confined to these; --ruleset paths are the operator's and are not.
    #[arg(long = "ruleset-root", value_name = "DIR", env = "SHEETD_RULESET_ROOTS", value_delimiter = ',')]
    pub ruleset_roots: Vec<PathBuf>,

    /// The ruleset for requests that name none [default: starter].
    #[arg(long, value_name = "ID", env = "SHEETD_DEFAULT_RULESET")]
    pub default_ruleset: Option<String>,

    /// Largest request message, in bytes [default: 4194304].
    #[arg(long, value_name = "BYTES", env = "SHEETD_MAX_REQUEST_BYTES")]
    pub max_request_bytes: Option<usize>,

    /// Largest reply message, in bytes [default: 4194304, at least 65536]: lists page by it,
    /// Watch splits a message over it, and a reply over it is refused naming what to narrow.
    #[arg(long, value_name = "BYTES", env = "SHEETD_MAX_REPLY_BYTES")]
    pub max_reply_bytes: Option<usize>,

    /// Most operations in one batch [default: 1000].
    #[arg(long, value_name = "N", env = "SHEETD_MAX_OPERATIONS")]
    pub max_operations: Option<usize>,

    /// Longest formula in a request, in bytes [default: 16384].
    #[arg(long, value_name = "BYTES", env = "SHEETD_MAX_FORMULA_LENGTH")]
    pub max_formula_length: Option<usize>,

    /// Deepest formula nesting in a request [default: 64].
    #[arg(long, value_name = "N", env = "SHEETD_MAX_FORMULA_DEPTH")]
    pub max_formula_depth: Option<usize>,

    /// Most sheets the server holds [default: 100000].
    #[arg(long, value_name = "N", env = "SHEETD_MAX_SHEETS")]
    pub max_sheets: Option<usize>,

    /// Change events buffered per sheet before a slow watcher must resync [default: 256].
    #[arg(long, value_name = "N", env = "SHEETD_WATCH_BUFFER")]
    pub watch_buffer: Option<usize>,

    /// Largest ruleset file read, in bytes [default: 16777216].
    #[arg(long, value_name = "BYTES", env = "SHEETD_MAX_RULESET_FILE_BYTES")]
    pub max_ruleset_file_bytes: Option<u64>,

    /// Most bytes one ruleset load reads over all its files [default: 268435456].
    #[arg(long, value_name = "BYTES", env = "SHEETD_MAX_RULESET_BYTES")]
    pub max_ruleset_bytes: Option<u64>,

    /// Longest line in a ruleset file or inline text, in bytes [default: 65536].
    #[arg(long, value_name = "BYTES", env = "SHEETD_MAX_RULESET_LINE_BYTES")]
    pub max_ruleset_line_bytes: Option<usize>,

    /// Largest inline ruleset text, in bytes [default: 1048576].
    #[arg(long, value_name = "BYTES", env = "SHEETD_MAX_INLINE_RULESET_BYTES")]
    pub max_inline_ruleset_bytes: Option<usize>,

    /// Calls that may run on blocking threads at once; more wait for a turn [default: 64].
    #[arg(long, value_name = "N", env = "SHEETD_MAX_BLOCKING")]
    pub max_blocking: Option<usize>,

    /// Expensive calls (WhyChanged, history replays) that may run at once [default: cores].
    #[arg(long, value_name = "N", env = "SHEETD_MAX_EXPENSIVE")]
    pub max_expensive: Option<usize>,

    /// Seconds a call may wait for its turn and run before DEADLINE_EXCEEDED [default: 60].
    #[arg(long, value_name = "SECONDS", env = "SHEETD_CALL_TIMEOUT")]
    pub call_timeout: Option<u64>,

    /// Most open connections; more are refused until one closes [default: 512].
    #[arg(long, value_name = "N", env = "SHEETD_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,

    /// Calls in flight at once on one connection (HTTP/2 streams; a Watch counts while it
    /// streams); a client's further calls wait for one to end [default: 128].
    #[arg(long, value_name = "N", env = "SHEETD_MAX_STREAMS")]
    pub max_streams: Option<u32>,

    /// Seconds a new connection has to complete its TLS and HTTP handshakes [default: 10].
    #[arg(long, value_name = "SECONDS", env = "SHEETD_HANDSHAKE_TIMEOUT")]
    pub handshake_timeout: Option<u64>,

    /// Seconds a connection may stay open with no call in flight [default: 300].
    #[arg(long, value_name = "SECONDS", env = "SHEETD_IDLE_TIMEOUT")]
    pub idle_timeout: Option<u64>,

    /// Seconds between HTTP/2 keepalive pings [default: 60].
    #[arg(long, value_name = "SECONDS", env = "SHEETD_KEEPALIVE_INTERVAL")]
    pub keepalive_interval: Option<u64>,

    /// Seconds to wait for a keepalive ping's answer before closing [default: 20].
    #[arg(long, value_name = "SECONDS", env = "SHEETD_KEEPALIVE_TIMEOUT")]
    pub keepalive_timeout: Option<u64>,

    /// The store's page cache, in bytes [default: 33554432].
    #[arg(long, value_name = "BYTES", env = "SHEETD_STORE_CACHE_BYTES")]
    pub store_cache_bytes: Option<usize>,

    /// Seconds calls in flight get after SIGTERM/SIGINT before the process exits anyway
    /// [default: 10].
    #[arg(long, value_name = "SECONDS", env = "SHEETD_SHUTDOWN_GRACE")]
    pub shutdown_grace: Option<u64>,

    /// TLS certificate chain (PEM); with --tls-key, serves HTTPS only.
    #[arg(long, value_name = "FILE", env = "SHEETD_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// TLS private key (PEM).
    #[arg(long, value_name = "FILE", env = "SHEETD_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// A bearer token clients must send (`authorization: Bearer <token>`): `TOKEN` (role admin)
    /// or `ROLE=TOKEN` with ROLE read, write or admin; repeatable, or comma-separated in
    /// SHEETD_TOKENS. Empty tokens are refused. With none, no authentication. Health checks
    /// never need one.
    #[arg(
        long = "token",
        value_name = "TOKEN",
        env = "SHEETD_TOKENS",
        value_delimiter = ',',
        hide_env_values = true
    )]
    pub tokens: Vec<String>,

    /// An origin allowed to call from a browser (grpc-web); repeatable; `*` for any.
    #[arg(long = "cors-origin", value_name = "ORIGIN", env = "SHEETD_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,

    /// Serve metrics for Prometheus at http://ADDR/metrics (OpenMetrics text: calls and their
    /// latency by method and status, sheets, watchers, store commit latency, …; docs/api.md#metrics).
    /// Off by default.
    #[arg(long, value_name = "ADDR", env = "SHEETD_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,

    /// Export traces to an OpenTelemetry collector over OTLP/gRPC (`http://host:4317`): the
    /// request, call and Watch spans; a request's W3C `traceparent` joins the caller's trace.
    /// Off by default.
    #[arg(long, value_name = "URL", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otlp_endpoint: Option<String>,

    /// Do not serve the web inspector's page at `/` (it is served by default; its calls need
    /// the same tokens as any client's).
    #[arg(long, env = "SHEETD_NO_INSPECTOR")]
    pub no_inspector: bool,

    /// Log format on stderr (levels via RUST_LOG, default info).
    #[arg(long, value_enum, env = "SHEETD_LOG_FORMAT")]
    pub log_format: Option<LogFormat>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The TOML config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<SocketAddr>,
    metrics_listen: Option<SocketAddr>,
    otlp_endpoint: Option<String>,
    inspector: Option<bool>,
    data_dir: Option<PathBuf>,
    store: Option<String>,
    default_ruleset: Option<String>,
    log_format: Option<LogFormat>,
    ruleset_roots: Option<Vec<PathBuf>>,
    #[serde(default)]
    rulesets: BTreeMap<String, Vec<PathBuf>>,
    #[serde(default)]
    limits: FileLimits,
    tls: Option<FileTls>,
    #[serde(default)]
    auth: FileAuth,
    #[serde(default)]
    cors: FileCors,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLimits {
    max_request_bytes: Option<usize>,
    max_reply_bytes: Option<usize>,
    max_operations: Option<usize>,
    max_formula_length: Option<usize>,
    max_formula_depth: Option<usize>,
    max_sheets: Option<usize>,
    watch_buffer: Option<usize>,
    max_ruleset_file_bytes: Option<u64>,
    max_ruleset_bytes: Option<u64>,
    max_ruleset_line_bytes: Option<usize>,
    max_inline_ruleset_bytes: Option<usize>,
    max_blocking: Option<usize>,
    max_expensive: Option<usize>,
    call_timeout: Option<u64>,
    max_connections: Option<usize>,
    max_streams: Option<u32>,
    handshake_timeout: Option<u64>,
    idle_timeout: Option<u64>,
    keepalive_interval: Option<u64>,
    keepalive_timeout: Option<u64>,
    store_cache_bytes: Option<usize>,
    shutdown_grace: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTls {
    cert: PathBuf,
    key: PathBuf,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAuth {
    #[serde(default)]
    tokens: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileCors {
    #[serde(default)]
    origins: Vec<String>,
}

/// The resolved configuration.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    /// A PostgreSQL URL, when the store is PostgreSQL (else the embedded store in `data_dir`).
    pub store: Option<String>,
    pub rulesets: Vec<(String, Vec<PathBuf>)>,
    /// Where paths named by clients may lead.
    pub ruleset_roots: Vec<PathBuf>,
    pub default_ruleset: String,
    pub limits: Limits,
    pub tls: Option<(PathBuf, PathBuf)>,
    pub tokens: Vec<TokenSpec>,
    pub cors_origins: Vec<String>,
    pub log_format: LogFormat,
    /// Serve the web inspector at `/`.
    pub inspector: bool,
    /// Where `/metrics` is served, if anywhere.
    pub metrics_listen: Option<SocketAddr>,
    /// Where traces are exported, if anywhere.
    pub otlp_endpoint: Option<String>,
}

/// The default data directory: `$XDG_DATA_HOME/sheetd`, else `~/.local/share/sheetd`, else
/// `./sheetd-data`.
pub fn default_data_dir() -> PathBuf {
    let non_empty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(d) = non_empty("XDG_DATA_HOME") {
        return d.join("sheetd");
    }
    if let Some(h) = non_empty("HOME") {
        return h.join(".local").join("share").join("sheetd");
    }
    PathBuf::from("sheetd-data")
}

fn parse_ruleset_flag(s: &str) -> Result<(String, Vec<PathBuf>), String> {
    let (id, paths) =
        s.split_once('=').ok_or_else(|| format!("--ruleset `{s}`: expected ID=PATH[,PATH...]"))?;
    let paths: Vec<PathBuf> = paths.split(',').filter(|p| !p.is_empty()).map(PathBuf::from).collect();
    if id.is_empty() || paths.is_empty() {
        return Err(format!("--ruleset `{s}`: expected ID=PATH[,PATH...]"));
    }
    if id == STARTER {
        return Err(format!("--ruleset `{s}`: the id `{STARTER}` is the bundled starter ruleset"));
    }
    Ok((id.to_owned(), paths))
}

impl ServeArgs {
    /// Merges flags and environment (already in `self`) over the config file over defaults.
    pub fn resolve(self) -> Result<ServeConfig, String> {
        let (file, base) = match &self.config {
            Some(path) => read_config_file(path)?,
            None => (FileConfig::default(), PathBuf::new()),
        };
        let rel = |p: PathBuf| if p.is_relative() { base.join(p) } else { p };
        let mut rulesets: Vec<(String, Vec<PathBuf>)> =
            file.rulesets.into_iter().map(|(id, paths)| (id, paths.into_iter().map(rel).collect())).collect();
        for flag in &self.rulesets {
            let (id, paths) = parse_ruleset_flag(flag)?;
            rulesets.retain(|(i, _)| *i != id);
            rulesets.push((id, paths));
        }
        if let Some((id, _)) = rulesets.iter().find(|(id, _)| id == STARTER) {
            return Err(format!("ruleset id `{id}` is reserved for the bundled starter ruleset"));
        }
        let limits = self.limits(&file.limits)?;
        let tls = match (self.tls_cert, self.tls_key, file.tls) {
            (Some(c), Some(k), _) => Some((c, k)),
            (None, None, Some(t)) => Some((rel(t.cert), rel(t.key))),
            _ => None,
        };
        let token_texts = if self.tokens.is_empty() { file.auth.tokens } else { self.tokens };
        let tokens = token_texts
            .iter()
            .enumerate()
            .map(|(i, t)| TokenSpec::parse(t).map_err(|e| format!("token {}: {e}", i + 1)))
            .collect::<Result<Vec<_>, _>>()?;
        let data_dir = self.data_dir.or(file.data_dir.map(rel)).unwrap_or_else(default_data_dir);
        let store = match self.store.or(file.store).filter(|s| !s.is_empty()) {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => Some(url),
            Some(other) => {
                return Err(format!(
                    "--store `{}`: a store is a PostgreSQL URL (postgres://user@host/db); leave it out for the embedded store in --data-dir",
                    crate::engine::policy::LogSafe(&other)
                ));
            }
            None => None,
        };
        let ruleset_roots = if !self.ruleset_roots.is_empty() {
            self.ruleset_roots
        } else if let Some(roots) = file.ruleset_roots {
            roots.into_iter().map(rel).collect()
        } else {
            vec![data_dir.join("rulesets")]
        };
        Ok(ServeConfig {
            listen: self.listen.or(file.listen).unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 50051))),
            data_dir,
            store,
            rulesets,
            ruleset_roots,
            default_ruleset: self
                .default_ruleset
                .or(file.default_ruleset)
                .unwrap_or_else(|| STARTER.to_owned()),
            limits,
            tls,
            tokens,
            cors_origins: if self.cors_origins.is_empty() { file.cors.origins } else { self.cors_origins },
            log_format: self.log_format.or(file.log_format).unwrap_or_default(),
            inspector: !self.no_inspector && file.inspector.unwrap_or(true),
            metrics_listen: self.metrics_listen.or(file.metrics_listen),
            otlp_endpoint: self.otlp_endpoint.or(file.otlp_endpoint).filter(|e| !e.is_empty()),
        })
    }

    /// Every limit: the flag, else the config file, else the default; then checked.
    fn limits(&self, f: &FileLimits) -> Result<Limits, String> {
        let d = Limits::default();
        let secs = |flag: Option<u64>, file: Option<u64>, default: std::time::Duration| {
            flag.or(file).map_or(default, std::time::Duration::from_secs)
        };
        let limits = Limits {
            max_request_bytes: self.max_request_bytes.or(f.max_request_bytes).unwrap_or(d.max_request_bytes),
            max_reply_bytes: self
                .max_reply_bytes
                .or(f.max_reply_bytes)
                .unwrap_or(d.max_reply_bytes)
                .max(crate::engine::policy::MIN_REPLY_BYTES),
            ops: OpLimits {
                max_operations: self.max_operations.or(f.max_operations).unwrap_or(d.ops.max_operations),
                formula: formula::Limits {
                    max_len: self.max_formula_length.or(f.max_formula_length).unwrap_or(16 * 1024),
                    max_depth: self.max_formula_depth.or(f.max_formula_depth).unwrap_or(64),
                },
            },
            max_sheets: self.max_sheets.or(f.max_sheets).unwrap_or(d.max_sheets),
            watch_buffer: self.watch_buffer.or(f.watch_buffer).unwrap_or(d.watch_buffer).max(1),
            read: data::ReadLimits {
                max_file_bytes: self
                    .max_ruleset_file_bytes
                    .or(f.max_ruleset_file_bytes)
                    .unwrap_or(d.read.max_file_bytes),
                max_total_bytes: self
                    .max_ruleset_bytes
                    .or(f.max_ruleset_bytes)
                    .unwrap_or(d.read.max_total_bytes),
                max_line_bytes: self
                    .max_ruleset_line_bytes
                    .or(f.max_ruleset_line_bytes)
                    .unwrap_or(d.read.max_line_bytes),
            },
            max_inline_ruleset_bytes: self
                .max_inline_ruleset_bytes
                .or(f.max_inline_ruleset_bytes)
                .unwrap_or(d.max_inline_ruleset_bytes),
            max_blocking: self.max_blocking.or(f.max_blocking).unwrap_or(d.max_blocking).max(1),
            max_expensive: self.max_expensive.or(f.max_expensive).unwrap_or(d.max_expensive).max(1),
            call_timeout: secs(self.call_timeout, f.call_timeout, d.call_timeout),
            max_connections: self.max_connections.or(f.max_connections).unwrap_or(d.max_connections).max(1),
            max_streams: self.max_streams.or(f.max_streams).unwrap_or(d.max_streams).max(1),
            handshake_timeout: secs(self.handshake_timeout, f.handshake_timeout, d.handshake_timeout),
            idle_timeout: secs(self.idle_timeout, f.idle_timeout, d.idle_timeout),
            keepalive_interval: secs(self.keepalive_interval, f.keepalive_interval, d.keepalive_interval),
            keepalive_timeout: secs(self.keepalive_timeout, f.keepalive_timeout, d.keepalive_timeout),
            store_cache_bytes: self.store_cache_bytes.or(f.store_cache_bytes).unwrap_or(d.store_cache_bytes),
            shutdown_grace: secs(self.shutdown_grace, f.shutdown_grace, d.shutdown_grace),
        };
        if limits.ops.formula.max_depth > 256 {
            return Err(
                "max_formula_depth is at most 256 (deeper formulas could exhaust the stack)".to_owned()
            );
        }
        for (name, d) in [
            ("call_timeout", limits.call_timeout),
            ("handshake_timeout", limits.handshake_timeout),
            ("idle_timeout", limits.idle_timeout),
            ("keepalive_interval", limits.keepalive_interval),
            ("keepalive_timeout", limits.keepalive_timeout),
        ] {
            if d.is_zero() {
                return Err(format!("{name} must be at least 1 second"));
            }
        }
        Ok(limits)
    }
}

/// A config file and the directory its relative paths are relative to.
fn read_config_file(path: &Path) -> Result<(FileConfig, PathBuf), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
    let file: FileConfig = toml::from_str(&text).map_err(|e| {
        let at = e.span().map(|s| line_col(&text, s.start)).unwrap_or_default();
        format!("{}{at}: {}", path.display(), e.message())
    })?;
    Ok((file, path.parent().map(Path::to_owned).unwrap_or_default()))
}

fn line_col(text: &str, offset: usize) -> String {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!(":{line}:{col}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_need_no_flags() {
        let c = ServeArgs::default().resolve().expect("defaults");
        assert_eq!(c.listen.to_string(), "127.0.0.1:50051");
        assert_eq!(c.default_ruleset, "starter");
        assert!(c.tokens.is_empty() && c.tls.is_none() && c.rulesets.is_empty());
        assert_eq!(c.limits.ops.max_operations, 1000);
        assert!(c.data_dir.ends_with("sheetd") || c.data_dir.ends_with("sheetd-data"));
    }

    #[test]
    fn the_store_is_embedded_unless_a_postgres_url_is_given() {
        assert_eq!(ServeArgs::default().resolve().expect("defaults").store, None);
        let url = "postgres://sheetd@/sheets?host=/run/postgresql";
        let c = ServeArgs { store: Some(url.into()), ..Default::default() }.resolve().expect("a URL");
        assert_eq!(c.store.as_deref(), Some(url));
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("sheetd.toml");
        std::fs::write(&file, "store = \"postgresql://db.internal/sheetd\"\n").expect("write");
        let c = ServeArgs { config: Some(file), ..Default::default() }.resolve().expect("from the file");
        assert_eq!(c.store.as_deref(), Some("postgresql://db.internal/sheetd"));
        let e = ServeArgs { store: Some("mysql://x".into()), ..Default::default() }.resolve().unwrap_err();
        assert!(e.contains("--store `mysql://x`: a store is a PostgreSQL URL"), "{e}");
    }

    #[test]
    fn flags_win_over_the_file_and_file_paths_are_relative_to_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("sheetd.toml");
        std::fs::write(
            &file,
            r#"
listen = "127.0.0.1:7000"
data_dir = "store"
[rulesets]
sf = ["pcgen/core.pcc"]
[limits]
max_operations = 5
max_sheets = 7
[tls]
cert = "c.pem"
key = "k.pem"
[auth]
tokens = ["a"]
"#,
        )
        .expect("write");
        let args = ServeArgs {
            config: Some(file.clone()),
            listen: Some("127.0.0.1:9000".parse().expect("addr")),
            max_operations: Some(9),
            rulesets: vec!["pf=x.pcc,y.pcc".into()],
            ..Default::default()
        };
        let c = args.resolve().expect("config");
        assert_eq!(c.listen.to_string(), "127.0.0.1:9000");
        assert_eq!(c.data_dir, dir.path().join("store"));
        assert_eq!(c.limits.ops.max_operations, 9);
        assert_eq!(c.limits.max_sheets, 7);
        assert_eq!(c.tokens, [TokenSpec::parse("a").expect("token")]);
        assert_eq!(c.tls, Some((dir.path().join("c.pem"), dir.path().join("k.pem"))));
        assert_eq!(
            c.rulesets,
            vec![
                ("sf".to_owned(), vec![dir.path().join("pcgen/core.pcc")]),
                ("pf".to_owned(), vec![PathBuf::from("x.pcc"), PathBuf::from("y.pcc")])
            ]
        );
    }

    #[test]
    fn config_errors_say_where() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, "listen = \"127.0.0.1:7000\"\nport = 5\n").expect("write");
        let e = ServeArgs { config: Some(file), ..Default::default() }.resolve().expect_err("unknown key");
        assert!(e.contains("bad.toml:2:1") && e.contains("port"), "{e}");
        let e = ServeArgs { rulesets: vec!["nopaths".into()], ..Default::default() }
            .resolve()
            .expect_err("bad flag");
        assert!(e.contains("ID=PATH"), "{e}");
        let e = ServeArgs { rulesets: vec!["starter=x".into()], ..Default::default() }
            .resolve()
            .expect_err("reserved");
        assert!(e.contains("starter"), "{e}");
        for tokens in [vec!["".to_owned()], vec!["a".to_owned(), "".to_owned()], vec!["  ".to_owned()]] {
            let e = ServeArgs { tokens, ..Default::default() }.resolve().expect_err("empty token");
            assert!(e.contains("empty"), "{e}");
        }
        let file = dir.path().join("empty-token.toml");
        std::fs::write(&file, "[auth]\ntokens = [\"read=\"]\n").expect("write");
        let e = ServeArgs { config: Some(file), ..Default::default() }.resolve().expect_err("empty");
        assert!(e.contains("empty"), "{e}");
    }
}
