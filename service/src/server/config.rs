//! `sheetd serve` configuration: command-line flags, environment variables (`SHEETD_*`) and an
//! optional TOML file (`--config`), in that order of precedence, over built-in defaults.
//!
//! ```toml
//! listen = "127.0.0.1:50051"
//! data_dir = "/var/lib/sheetd"
//! default_ruleset = "starter"
//! log_format = "text"                 # or "json"
//!
//! [rulesets]                          # preloaded: id = [paths], loaded in order
//! starfinder = ["/srv/pcgen/data/starfinder/paizo/core/_starfinder_core_rulebook.pcc"]
//!
//! [limits]
//! max_request_bytes = 4194304
//! max_operations = 1000
//! max_formula_length = 16384
//! max_formula_depth = 64
//! max_sheets = 100000
//! watch_buffer = 256
//!
//! [tls]
//! cert = "cert.pem"                   # relative paths are relative to this file
//! key = "key.pem"
//!
//! [auth]
//! tokens = ["change-me"]
//!
//! [cors]
//! origins = ["https://builder.example"]
//! ```

use crate::server::convert::OpLimits;
use crate::server::engine::{Limits, STARTER};
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

    /// Preload a ruleset: `ID=PATH[,PATH...]` (native directory or .toml, or PCGen .pcc; later
    /// paths load on top). Repeatable. The bundled starter ruleset is always loaded as `starter`.
    #[arg(long = "ruleset", value_name = "ID=PATHS")]
    pub rulesets: Vec<String>,

    /// The ruleset for requests that name none [default: starter].
    #[arg(long, value_name = "ID", env = "SHEETD_DEFAULT_RULESET")]
    pub default_ruleset: Option<String>,

    /// Largest request message, in bytes [default: 4194304].
    #[arg(long, value_name = "BYTES", env = "SHEETD_MAX_REQUEST_BYTES")]
    pub max_request_bytes: Option<usize>,

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

    /// TLS certificate chain (PEM); with --tls-key, serves HTTPS only.
    #[arg(long, value_name = "FILE", env = "SHEETD_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// TLS private key (PEM).
    #[arg(long, value_name = "FILE", env = "SHEETD_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// A bearer token clients must send (`authorization: Bearer <token>`); repeatable, or
    /// comma-separated in SHEETD_TOKENS. With none, no authentication. Health checks never need one.
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
    data_dir: Option<PathBuf>,
    default_ruleset: Option<String>,
    log_format: Option<LogFormat>,
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
    max_operations: Option<usize>,
    max_formula_length: Option<usize>,
    max_formula_depth: Option<usize>,
    max_sheets: Option<usize>,
    watch_buffer: Option<usize>,
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
    pub rulesets: Vec<(String, Vec<PathBuf>)>,
    pub default_ruleset: String,
    pub max_request_bytes: usize,
    pub limits: Limits,
    pub tls: Option<(PathBuf, PathBuf)>,
    pub tokens: Vec<String>,
    pub cors_origins: Vec<String>,
    pub log_format: LogFormat,
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
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
                let file: FileConfig = toml::from_str(&text).map_err(|e| {
                    let at = e.span().map(|s| line_col(&text, s.start)).unwrap_or_default();
                    format!("{}{at}: {}", path.display(), e.message())
                })?;
                (file, path.parent().map(Path::to_owned).unwrap_or_default())
            }
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
        let tls = match (self.tls_cert, self.tls_key, file.tls) {
            (Some(c), Some(k), _) => Some((c, k)),
            (None, None, Some(t)) => Some((rel(t.cert), rel(t.key))),
            _ => None,
        };
        let limits = Limits {
            ops: OpLimits {
                max_operations: self.max_operations.or(file.limits.max_operations).unwrap_or(1000),
                formula: formula::Limits {
                    max_len: self.max_formula_length.or(file.limits.max_formula_length).unwrap_or(16 * 1024),
                    max_depth: self.max_formula_depth.or(file.limits.max_formula_depth).unwrap_or(64),
                },
            },
            max_sheets: self.max_sheets.or(file.limits.max_sheets).unwrap_or(100_000),
            watch_buffer: self.watch_buffer.or(file.limits.watch_buffer).unwrap_or(256).max(1),
        };
        if limits.ops.formula.max_depth > 256 {
            return Err(
                "max_formula_depth is at most 256 (deeper formulas could exhaust the stack)".to_owned()
            );
        }
        Ok(ServeConfig {
            listen: self.listen.or(file.listen).unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 50051))),
            data_dir: self.data_dir.or(file.data_dir.map(rel)).unwrap_or_else(default_data_dir),
            rulesets,
            default_ruleset: self
                .default_ruleset
                .or(file.default_ruleset)
                .unwrap_or_else(|| STARTER.to_owned()),
            max_request_bytes: self
                .max_request_bytes
                .or(file.limits.max_request_bytes)
                .unwrap_or(4 * 1024 * 1024),
            limits,
            tls,
            tokens: if self.tokens.is_empty() { file.auth.tokens } else { self.tokens },
            cors_origins: if self.cors_origins.is_empty() { file.cors.origins } else { self.cors_origins },
            log_format: self.log_format.or(file.log_format).unwrap_or_default(),
        })
    }
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
        assert_eq!(c.tokens, ["a"]);
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
    }
}
