//! The PostgreSQL store, [`PostgresStore`]: sheets, their logs and snapshots, and rulesets in a
//! database that any number of `sheetd serve` processes share (`--store postgres://…`).
//!
//! Tables (created and upgraded by versioned migrations when the store opens, under an advisory
//! lock, so replicas starting together migrate once; `sheetd_schema` lists those applied):
//! - `sheetd_rulesets (id, version, record)`: each ruleset's [`RulesetRecord`];
//! - `sheetd_ruleset_versions (id, version, content_hash, content)`: the content each version was
//!   compiled from, [`RulesetVersion`];
//! - `sheetd_sheets (id, head, record)`: each sheet's [`SheetRecord`] and its last revision;
//! - `sheetd_log (sheet, revision, entry)` and `sheetd_snapshots (sheet, revision, snapshot)`,
//!   keyed by (sheet, revision), deleted with their sheet;
//! - the sequence `sheetd_sheet_numbers` for generated ids.
//!
//! Records are the same sealed protobuf messages the embedded store keeps ([`super::seal`]), so a
//! damaged one is named when read.
//!
//! **One truth for several writers.** An append is one statement (one round trip, its own
//! transaction): it moves the sheet's `head` from `revision - 1` to `revision` with a
//! conditional `UPDATE`, and inserts the revision (and a snapshot) and notifies only for the row
//! it moved. Of two servers appending revision N, the second finds the head moved (the row lock
//! makes it wait for the first's commit) and gets [`StoreError::Conflict`]; the (sheet,
//! revision) key backs that up. Every write returns only once PostgreSQL has committed it.
//!
//! **Changes for the other servers.** Each write's transaction also sends a notification on the
//! channel `sheetd` (delivered at commit): `s REVISION ID` (a sheet's new head), `d ID` (deleted),
//! `r VERSION ID` (a ruleset's version). A connection of its own LISTENs and turns them into
//! [`StoreChange`]s for the engine ([`Store::changes`]); when that connection drops it is made
//! again (after 0.2 s, doubling to 5 s) and the engine is told to compare everything
//! ([`StoreChange::Resync`]), since notifications sent meanwhile are lost.
//!
//! **Blocking.** The [`Store`] methods block: each runs its queries on this store's own Tokio
//! runtime (two threads, which also drive the pooled connections and the listener), waiting
//! for the result on the calling thread — never an async runtime's thread (the engine calls the
//! store from blocking threads). While the database is unreachable every call fails promptly
//! with [`StoreError::Failed`] (connecting gives up after 5 s); the pool makes new connections
//! once it is back.
//!
//! **TLS.** Connections to the database use TLS as the URL's `sslmode` says (tokio-postgres's
//! `prefer` when it says nothing: TLS when the server offers it; `require`: TLS or no
//! connection; `disable`: never), always verifying the server's certificate and name with
//! rustls against the system's CAs, and those of the PEM file `sslrootcert=FILE` names.
//!
//! What it does not do: client certificates, or keep any state a restart would need:
//! everything is in the database.

use super::records::{LogRecord, RulesetRecord, RulesetVersion, SheetRecord, SnapshotRecord};
use super::seal::{decode, domain, id_key, rev_key, seal, seal_log, seal_message};
use super::{Logged, Record, Snapshot, Store, StoreChange, StoreError};
use crate::problem::causes;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use prost::Message;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;
use tokio_postgres::Transaction;
use tokio_postgres_rustls::MakeRustlsConnect;

/// The notification channel every write notifies on.
const CHANNEL: &str = "sheetd";

/// How long connecting, or waiting for a pooled connection, may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema, in order: each migration runs once, in one transaction with its record in
/// `sheetd_schema`. Add new ones at the end; never change one that shipped.
const MIGRATIONS: &[(i32, &str, &str)] = &[(
    1,
    "rulesets, sheets, logs and snapshots",
    "CREATE TABLE sheetd_rulesets (
        id text PRIMARY KEY,
        version bigint NOT NULL,
        record bytea NOT NULL
    );
    CREATE TABLE sheetd_ruleset_versions (
        id text NOT NULL,
        version bigint NOT NULL,
        content_hash bytea NOT NULL,
        content bytea NOT NULL,
        PRIMARY KEY (id, version)
    );
    CREATE TABLE sheetd_sheets (
        id text PRIMARY KEY,
        head bigint NOT NULL,
        record bytea NOT NULL
    );
    CREATE TABLE sheetd_log (
        sheet text NOT NULL REFERENCES sheetd_sheets (id) ON DELETE CASCADE,
        revision bigint NOT NULL,
        entry bytea NOT NULL,
        PRIMARY KEY (sheet, revision)
    );
    CREATE TABLE sheetd_snapshots (
        sheet text NOT NULL REFERENCES sheetd_sheets (id) ON DELETE CASCADE,
        revision bigint NOT NULL,
        snapshot bytea NOT NULL,
        PRIMARY KEY (sheet, revision)
    );
    CREATE SEQUENCE sheetd_sheet_numbers START 1;",
)];

/// The advisory lock migrations hold (any number; this one spells "sheetd" in ASCII).
const MIGRATION_LOCK: i64 = 0x7368_6565_7464;

/// The PostgreSQL store. Cheap to share: calls take a pooled connection each.
pub struct PostgresStore {
    /// This store's runtime: the pool's connections and the listener run on it. An `Option`
    /// only so that dropping the store can shut it down without blocking (a store may be
    /// dropped on an async runtime's thread).
    runtime: Option<tokio::runtime::Runtime>,
    pool: Pool,
    location: String,
    /// Changes other servers make, until the engine takes them.
    changes: Mutex<Option<mpsc::Receiver<StoreChange>>>,
}

/// A database error as the store reports it: `what` failed, and why.
fn failed(what: &str) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
    move |e| StoreError::Failed(format!("store: {what}: {}", causes(&e)))
}

fn pool_failed(what: &str) -> impl Fn(deadpool_postgres::PoolError) -> StoreError + '_ {
    move |e| {
        let why = match &e {
            // The connection's own error, with its causes.
            deadpool_postgres::PoolError::Backend(b) => causes(b),
            _ => causes(&e),
        };
        StoreError::Failed(format!("store: {what}: cannot connect to the database: {why}"))
    }
}

/// A revision or version as PostgreSQL's `bigint`.
fn big(n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| {
        StoreError::Failed(format!("store: {n} is past the largest revision a database row holds"))
    })
}

/// Where the database is, for people: the user, hosts, ports and database, no password.
fn location_of(c: &tokio_postgres::Config) -> String {
    let hosts: Vec<String> = c
        .get_hosts()
        .iter()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = c.get_ports().iter().map(u16::to_string).collect();
    format!(
        "postgres://{}@{}:{}/{}",
        c.get_user().unwrap_or(""),
        hosts.join(","),
        if ports.is_empty() { "5432".to_owned() } else { ports.join(",") },
        c.get_dbname().unwrap_or("")
    )
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user@host/db`, or with `?host=/socket/dir`),
    /// runs the migrations it lacks, and starts listening for other servers' changes.
    pub fn open(url: &str) -> Result<PostgresStore, StoreError> {
        let (url, root) = split_root_cert(url);
        let tls = tls(root.as_deref())?;
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| StoreError::Failed(format!("store: the store URL is not a PostgreSQL URL: {e}")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("sheetd");
        }
        let location = location_of(&config);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("sheetd-postgres")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Failed(format!("store: cannot start its threads: {e}")))?;
        let manager = Manager::from_config(
            config.clone(),
            tls.clone(),
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(16)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(CONNECT_TIMEOUT))
            .create_timeout(Some(CONNECT_TIMEOUT))
            .recycle_timeout(Some(CONNECT_TIMEOUT))
            .build()
            .map_err(|e| StoreError::Failed(format!("store: {e}")))?;
        runtime.block_on(migrate(&pool)).map_err(|e| match e {
            StoreError::Failed(m) => StoreError::Failed(format!("cannot open the store at {location}: {m}")),
            other => other,
        })?;
        let (tx, rx) = mpsc::channel();
        runtime.spawn(listen(config, tls, tx));
        Ok(PostgresStore { runtime: Some(runtime), pool, location, changes: Mutex::new(Some(rx)) })
    }

    /// Runs `f` on this store's runtime and waits for it.
    fn run<T>(&self, f: impl std::future::Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
        match &self.runtime {
            Some(rt) => rt.block_on(f),
            None => Err(StoreError::Failed("store: closed".to_owned())),
        }
    }

    /// Runs `f` in one transaction on a pooled connection, committed before it returns.
    fn transaction<T>(
        &self,
        what: &str,
        f: impl for<'t> AsyncFnOnce(&'t Transaction<'t>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.run(async {
            let mut conn = self.pool.get().await.map_err(pool_failed(what))?;
            let tx = conn.transaction().await.map_err(failed(what))?;
            let out = f(&tx).await?;
            tx.commit().await.map_err(failed(what))?;
            Ok(out)
        })
    }

    /// Runs one query and returns its rows.
    fn query(
        &self,
        what: &str,
        sql: &str,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        self.run(async {
            let conn = self.pool.get().await.map_err(pool_failed(what))?;
            let statement = conn.prepare_cached(sql).await.map_err(failed(what))?;
            conn.query(&statement, params).await.map_err(failed(what))
        })
    }

    /// Every record of a table of `(id, record)` rows: each decoded, or why not (with its id).
    fn all<M: Message + Default>(
        &self,
        what: &str,
        sql: &str,
        table: &str,
    ) -> Result<Vec<Record<M>>, StoreError> {
        let rows = self.query(what, sql, &[])?;
        Ok(rows
            .iter()
            .map(|r| {
                let (id, raw): (String, &[u8]) = (r.get(0), r.get(1));
                decode(&id_key(table, &id), raw).map_err(|e| (id, e))
            })
            .collect())
    }
}

/// The URL without its `sslrootcert=FILE` parameter (tokio-postgres does not take it), and
/// the file.
fn split_root_cert(url: &str) -> (String, Option<PathBuf>) {
    let Some((base, query)) = url.split_once('?') else { return (url.to_owned(), None) };
    let mut root = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|p| match p.strip_prefix("sslrootcert=") {
            Some(file) => {
                root = Some(PathBuf::from(percent_decoded(file)));
                false
            }
            None => true,
        })
        .collect();
    let url = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
    (url, root)
}

/// `%2F` and the like decoded (a URL's parameter); text that is not an escape stays as it is.
fn percent_decoded(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (b[i], b.get(i + 1).copied().and_then(hex), b.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, ..) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// TLS for the database's connections: rustls, trusting the system's CAs and those of `root`.
fn tls(root: Option<&Path>) -> Result<MakeRustlsConnect, StoreError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    if let Some(file) = root {
        let bad = |e: String| StoreError::Failed(format!("store: sslrootcert {}: {e}", file.display()));
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(file)
            .map_err(|e| bad(e.to_string()))?
            .collect::<Result<_, _>>()
            .map_err(|e| bad(e.to_string()))?;
        if certs.is_empty() {
            return Err(bad("no PEM certificate in it".to_owned()));
        }
        for c in certs {
            roots.add(c).map_err(|e| bad(e.to_string()))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Failed(format!("store: TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// Applies the migrations the database lacks, under the migration lock.
async fn migrate(pool: &Pool) -> Result<(), StoreError> {
    let what = "migrate the schema";
    let mut conn = pool.get().await.map_err(pool_failed(what))?;
    let tx = conn.transaction().await.map_err(failed(what))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await.map_err(failed(what))?;
    // `CREATE … IF NOT EXISTS` says NOTICE when it exists: not worth a log line each start.
    tx.batch_execute("SET LOCAL client_min_messages = warning").await.map_err(failed(what))?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS sheetd_schema (
            version integer PRIMARY KEY,
            description text NOT NULL,
            applied_at timestamptz NOT NULL DEFAULT now()
        )",
    )
    .await
    .map_err(failed(what))?;
    let row = tx
        .query_one("SELECT coalesce(max(version), 0) FROM sheetd_schema", &[])
        .await
        .map_err(failed(what))?;
    let at: i32 = row.get(0);
    let latest = MIGRATIONS.last().map_or(0, |m| m.0);
    if at > latest {
        return Err(StoreError::Failed(format!(
            "the database's schema is at version {at}, newer than this sheetd knows ({latest}): run a newer sheetd"
        )));
    }
    for (version, description, sql) in MIGRATIONS.iter().filter(|m| m.0 > at) {
        tx.batch_execute(sql).await.map_err(failed(what))?;
        tx.execute(
            "INSERT INTO sheetd_schema (version, description) VALUES ($1, $2)",
            &[version, description],
        )
        .await
        .map_err(failed(what))?;
        tracing::info!(version, description, "store: schema migrated");
    }
    tx.commit().await.map_err(failed(what))
}

/// Listens on [`CHANNEL`] for as long as the store's runtime runs, connecting again whenever
/// the connection drops; sends each change, and a [`StoreChange::Resync`] after each (re)connect.
async fn listen(config: tokio_postgres::Config, tls: MakeRustlsConnect, tx: mpsc::Sender<StoreChange>) {
    use futures_util::StreamExt;
    let mut backoff = Duration::from_millis(200);
    loop {
        match config.connect(tls.clone()).await {
            Ok((client, mut connection)) => {
                let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                let listening = async {
                    client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
                    Ok::<_, tokio_postgres::Error>(())
                };
                // The LISTEN is answered through the connection: drive both.
                let mut listening = std::pin::pin!(listening);
                let mut listened = false;
                loop {
                    tokio::select! {
                        r = &mut listening, if !listened => {
                            listened = true;
                            if let Err(e) = r {
                                tracing::warn!(error = %e, "store: LISTEN failed");
                                break;
                            }
                            backoff = Duration::from_millis(200);
                            if tx.send(StoreChange::Resync).is_err() {
                                return;
                            }
                        }
                        m = messages.next() => match m {
                            Some(Ok(tokio_postgres::AsyncMessage::Notification(n))) => {
                                if let Some(change) = StoreChange::parse(n.payload())
                                    && tx.send(change).is_err()
                                {
                                    return;
                                }
                            }
                            Some(Ok(_)) => {}
                            Some(Err(e)) => {
                                tracing::warn!(error = %e, "store: the listening connection failed");
                                break;
                            }
                            None => break,
                        },
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "store: cannot connect to listen for changes"),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

impl StoreChange {
    /// The notification's payload this change is written as (see the module docs).
    fn payload(&self) -> String {
        match self {
            StoreChange::Sheet { id, revision } => format!("s {revision} {id}"),
            StoreChange::Deleted { id } => format!("d {id}"),
            StoreChange::Ruleset { id, version } => format!("r {version} {id}"),
            StoreChange::Resync => "x".to_owned(),
        }
    }

    /// A change from a notification's payload; `None` for one this version does not know.
    fn parse(payload: &str) -> Option<StoreChange> {
        let (kind, rest) = payload.split_once(' ')?;
        let numbered = || {
            let (n, id) = rest.split_once(' ')?;
            Some((n.parse::<u64>().ok()?, id.to_owned()))
        };
        Some(match kind {
            "s" => numbered().map(|(revision, id)| StoreChange::Sheet { id, revision })?,
            "r" => numbered().map(|(version, id)| StoreChange::Ruleset { id, version })?,
            "d" => StoreChange::Deleted { id: rest.to_owned() },
            _ => return None,
        })
    }
}

/// Tells the other servers, at commit.
async fn notify(tx: &Transaction<'_>, change: &StoreChange, what: &str) -> Result<(), StoreError> {
    tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &change.payload()]).await.map_err(failed(what))?;
    Ok(())
}

impl Store for PostgresStore {
    fn location(&self) -> String {
        self.location.clone()
    }

    fn shared(&self) -> bool {
        true
    }

    fn changes(&self) -> Option<mpsc::Receiver<StoreChange>> {
        self.changes.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take()
    }

    fn rulesets(&self) -> Result<Vec<Record<RulesetRecord>>, StoreError> {
        self.all("read rulesets", "SELECT id, record FROM sheetd_rulesets ORDER BY id", "rulesets")
    }

    fn put_ruleset(&self, r: &RulesetRecord, content: Option<&RulesetVersion>) -> Result<(), StoreError> {
        let what = "save ruleset";
        let record = seal(&id_key("rulesets", &r.id), &r.encode_to_vec());
        let version = big(r.version)?;
        let content = content
            .map(|v| {
                Ok::<_, StoreError>((
                    big(v.version)?,
                    v.content_hash.clone(),
                    seal(&rev_key("ruleset_versions", &r.id, v.version), &v.encode_to_vec()),
                ))
            })
            .transpose()?;
        self.transaction(what, async |tx| {
            if let Some((v, hash, bytes)) = &content {
                let added = tx
                    .execute(
                        "INSERT INTO sheetd_ruleset_versions (id, version, content_hash, content) VALUES ($1, $2, $3, $4) ON CONFLICT (id, version) DO NOTHING",
                        &[&r.id, v, hash, bytes],
                    )
                    .await
                    .map_err(failed(what))?;
                if added == 0 {
                    let row = tx
                        .query_one("SELECT content_hash FROM sheetd_ruleset_versions WHERE id = $1 AND version = $2", &[&r.id, v])
                        .await
                        .map_err(failed(what))?;
                    let stored: &[u8] = row.get(0);
                    if stored != hash.as_slice() {
                        return Err(StoreError::Conflict(format!(
                            "version {v} of ruleset `{}` was stored with other content (by another server?)",
                            r.id
                        )));
                    }
                }
            }
            let saved = tx
                .execute(
                    "INSERT INTO sheetd_rulesets (id, version, record) VALUES ($1, $2, $3)
                     ON CONFLICT (id) DO UPDATE SET version = excluded.version, record = excluded.record
                     WHERE sheetd_rulesets.version <= excluded.version",
                    &[&r.id, &version, &record],
                )
                .await
                .map_err(failed(what))?;
            if saved == 0 {
                return Err(StoreError::Conflict(format!(
                    "ruleset `{}` is stored at a version after {}",
                    r.id, r.version
                )));
            }
            notify(tx, &StoreChange::Ruleset { id: r.id.clone(), version: r.version }, what).await
        })
    }

    fn ruleset_version(&self, id: &str, version: u64) -> Result<Option<RulesetVersion>, StoreError> {
        let rows = self.query(
            "read ruleset version",
            "SELECT content FROM sheetd_ruleset_versions WHERE id = $1 AND version = $2",
            &[&id, &big(version)?],
        )?;
        rows.first().map(|r| decode(&rev_key("ruleset_versions", id, version), r.get(0))).transpose()
    }

    fn sheets(&self) -> Result<Vec<Record<SheetRecord>>, StoreError> {
        self.all("read sheets", "SELECT id, record FROM sheetd_sheets ORDER BY id", "sheets")
    }

    fn has_sheet(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self.head(id)?.is_some())
    }

    fn next_sheet_number(&self) -> Result<u64, StoreError> {
        let rows = self.query("count sheets", "SELECT nextval('sheetd_sheet_numbers')", &[])?;
        let n: i64 = rows.first().map_or(1, |r| r.get(0));
        Ok(n as u64)
    }

    fn create_sheet(
        &self,
        sheet: &SheetRecord,
        first: &Logged,
        snapshot: &Snapshot,
    ) -> Result<(), StoreError> {
        let what = "create sheet";
        let id = sheet.id.as_str();
        let [s, l, n] = super::seal::new_sheet(sheet, first, snapshot);
        self.transaction(what, async |tx| {
            let added = tx
                .execute(
                    "INSERT INTO sheetd_sheets (id, head, record) VALUES ($1, 0, $2) ON CONFLICT (id) DO NOTHING",
                    &[&id, &s],
                )
                .await
                .map_err(failed(what))?;
            if added == 0 {
                return Err(StoreError::Conflict(format!("sheet `{id}` already exists")));
            }
            tx.execute("INSERT INTO sheetd_log (sheet, revision, entry) VALUES ($1, 0, $2)", &[&id, &l])
                .await
                .map_err(failed(what))?;
            tx.execute("INSERT INTO sheetd_snapshots (sheet, revision, snapshot) VALUES ($1, 0, $2)", &[&id, &n])
                .await
                .map_err(failed(what))?;
            notify(tx, &StoreChange::Sheet { id: id.to_owned(), revision: 0 }, what).await
        })
    }

    fn append(&self, sheet: &str, entry: &Logged, snapshot: Option<&Snapshot>) -> Result<(), StoreError> {
        let what = "append to the log";
        let number = entry.revision.number;
        let revision = big(number)?;
        let log = seal_log(&rev_key("log", sheet, number), entry);
        let snap = snapshot
            .map(|s| {
                let key = rev_key("snapshots", sheet, s.revision);
                Ok::<_, StoreError>((
                    big(s.revision)?,
                    seal_message(&key, &SnapshotRecord::of(s), 48 * s.values.len() + 16),
                ))
            })
            .transpose()?;
        let (snap_revision, snap_bytes) = match snap {
            Some((r, b)) => (Some(r), Some(b)),
            None => (None, None),
        };
        let payload = StoreChange::Sheet { id: sheet.to_owned(), revision: number }.payload();
        // One statement, so one round trip and its own transaction: the head moved, the
        // revision (and the snapshot) inserted and the other servers notified only if the head
        // was the revision before; else nothing is written, and the head found is returned.
        let rows = self.query(
            what,
            "WITH moved AS (
                UPDATE sheetd_sheets SET head = $2::bigint WHERE id = $1 AND head = $2::bigint - 1 RETURNING id
            ), logged AS (
                INSERT INTO sheetd_log (sheet, revision, entry) SELECT id, $2::bigint, $3 FROM moved RETURNING sheet
            ), snapped AS (
                INSERT INTO sheetd_snapshots (sheet, revision, snapshot)
                SELECT id, $4::bigint, $5 FROM moved WHERE $4::bigint IS NOT NULL RETURNING sheet
            ), told AS (
                SELECT pg_notify('sheetd', $6) FROM moved
            )
            SELECT (SELECT count(*) FROM logged), (SELECT count(*) FROM told), (SELECT count(*) FROM snapped),
                   (SELECT head FROM sheetd_sheets WHERE id = $1)",
            &[&sheet, &revision, &log, &snap_revision, &snap_bytes, &payload],
        )?;
        let row = rows.first().ok_or_else(|| StoreError::Failed(format!("store: {what}: no answer")))?;
        if row.get::<_, i64>(0) == 1 {
            return Ok(());
        }
        Err(StoreError::Conflict(match row.get::<_, Option<i64>>(3) {
            Some(head) => {
                format!("sheet `{sheet}` is at revision {head}, so revision {number} cannot follow it")
            }
            None => format!("sheet `{sheet}` does not exist"),
        }))
    }

    fn log(&self, sheet: &str, from: u64, to: u64, max: usize) -> Result<Vec<Logged>, StoreError> {
        if from > to || max == 0 {
            return Ok(Vec::new());
        }
        let (from, to) = (big(from)?, big(to.min(i64::MAX as u64))?);
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let rows = self.query(
            "read log",
            "SELECT revision, entry FROM sheetd_log WHERE sheet = $1 AND revision BETWEEN $2 AND $3 ORDER BY revision LIMIT $4",
            &[&sheet, &from, &to, &limit],
        )?;
        rows.iter()
            .map(|r| {
                let key = rev_key("log", sheet, r.get::<_, i64>(0) as u64);
                domain(&key, r.get(1), LogRecord::into_domain)
            })
            .collect()
    }

    fn snapshot_at_or_before(&self, sheet: &str, revision: u64) -> Result<Option<Snapshot>, StoreError> {
        let rows = self.query(
            "read snapshot",
            "SELECT revision, snapshot FROM sheetd_snapshots WHERE sheet = $1 AND revision <= $2 ORDER BY revision DESC LIMIT 1",
            &[&sheet, &big(revision.min(i64::MAX as u64))?],
        )?;
        rows.first()
            .map(|r| {
                let key = rev_key("snapshots", sheet, r.get::<_, i64>(0) as u64);
                domain(&key, r.get(1), SnapshotRecord::into_domain)
            })
            .transpose()
    }

    fn delete_sheet(&self, sheet: &str) -> Result<(), StoreError> {
        let what = "delete sheet";
        self.transaction(what, async |tx| {
            tx.execute("DELETE FROM sheetd_sheets WHERE id = $1", &[&sheet]).await.map_err(failed(what))?;
            notify(tx, &StoreChange::Deleted { id: sheet.to_owned() }, what).await
        })
    }

    fn heads(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let rows = self.query("read heads", "SELECT id, head FROM sheetd_sheets", &[])?;
        Ok(rows.iter().map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1) as u64)).collect())
    }

    fn head(&self, id: &str) -> Result<Option<u64>, StoreError> {
        let rows = self.query("read head", "SELECT head FROM sheetd_sheets WHERE id = $1", &[&id])?;
        Ok(rows.first().map(|r| r.get::<_, i64>(0) as u64))
    }

    fn sheet_record(&self, id: &str) -> Result<Option<SheetRecord>, StoreError> {
        let rows = self.query("read sheet", "SELECT record FROM sheetd_sheets WHERE id = $1", &[&id])?;
        rows.first().map(|r| decode(&id_key("sheets", id), r.get(0))).transpose()
    }
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        // Without waiting: a store may be dropped on an async runtime's thread, where waiting
        // is not allowed. Every write has been committed already.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_round_trip_through_their_payloads() {
        for c in [
            StoreChange::Sheet { id: "a b".into(), revision: 7 },
            StoreChange::Deleted { id: "sheet-1".into() },
            StoreChange::Ruleset { id: "starter".into(), version: 3 },
        ] {
            assert_eq!(StoreChange::parse(&c.payload()), Some(c));
        }
        assert_eq!(StoreChange::parse("q 1 x"), None, "a kind this version does not know");
        assert_eq!(StoreChange::parse("s x y"), None);
    }

    #[test]
    fn errors_say_their_causes() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("error connecting to server")
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        assert_eq!(causes(&Outer(io)), "error connecting to server: Connection refused");
    }

    #[test]
    fn locations_name_no_password() {
        let c: tokio_postgres::Config = "postgres://ann:secret@db.example:6432/sheets".parse().unwrap();
        assert_eq!(location_of(&c), "postgres://ann@db.example:6432/sheets");
        let c: tokio_postgres::Config = "postgres://ann@/sheets?host=/run/pg".parse().unwrap();
        assert_eq!(location_of(&c), "postgres://ann@/run/pg:5432/sheets");
    }
}
