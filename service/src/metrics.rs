//! The daemon's metrics, in the OpenMetrics text format Prometheus scrapes
//! (`sheetd serve --metrics-listen ADDR`, then `GET /metrics`).
//!
//! - Calls are counted and timed from the `call` spans the API already writes for its logs
//!   ([`CallLayer`], a tracing layer): `sheetd_calls_total{method, status}`,
//!   `sheetd_call_duration_seconds{method}` and `sheetd_recomputed_variables_total`.
//! - What happens inside calls is counted where it happens: store commits
//!   (`sheetd_store_commit_seconds`), Watch resyncs (`sheetd_watch_resyncs_total`), SolveBatch
//!   sheets (`sheetd_batch_sheets_total`).
//! - What the server holds is read when scraped ([`render`]): `sheetd_sheets`,
//!   `sheetd_watchers`, `sheetd_ruleset_version{ruleset}`.
//!
//! Every metric lives in one process-wide [`METRICS`]; its handles are atomics, cheap to update
//! from any thread.

use crate::engine::Engine;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::LazyLock;
use std::time::Duration;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabels {
    pub method: String,
    pub status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MethodLabels {
    pub method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RulesetLabels {
    pub ruleset: String,
}

/// Every metric the daemon keeps.
pub struct Metrics {
    registry: Registry,
    pub calls: Family<CallLabels, Counter>,
    pub call_seconds: Family<MethodLabels, Histogram>,
    pub recomputed: Counter,
    pub store_commit_seconds: Histogram,
    pub resyncs: Counter,
    pub batch_sheets: Counter,
    sheets: Gauge,
    watchers: Gauge,
    ruleset_version: Family<RulesetLabels, Gauge>,
}

/// The process's metrics.
pub static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("sheetd");
        let calls = Family::<CallLabels, Counter>::default();
        registry.register("calls", "API calls answered, by method and status", calls.clone());
        // 50 µs to about 13 s.
        let call_seconds = Family::<MethodLabels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.000_05, 2.0, 19))
        });
        registry.register(
            "call_duration_seconds",
            "Time to answer an API call, by method",
            call_seconds.clone(),
        );
        let recomputed = Counter::default();
        registry.register("recomputed_variables", "Variables recomputed by changes", recomputed.clone());
        let store_commit_seconds = Histogram::new(exponential_buckets(0.000_02, 2.0, 18));
        registry.register(
            "store_commit_seconds",
            "Time to make a revision durable (write and sync)",
            store_commit_seconds.clone(),
        );
        let resyncs = Counter::default();
        registry.register(
            "watch_resyncs",
            "Watchers that fell behind and were sent a resync",
            resyncs.clone(),
        );
        let batch_sheets = Counter::default();
        registry.register("batch_sheets", "Sheets solved by SolveBatch", batch_sheets.clone());
        let sheets = Gauge::default();
        registry.register("sheets", "Sheets the server holds", sheets.clone());
        let watchers = Gauge::default();
        registry.register("watchers", "Watch streams open", watchers.clone());
        let ruleset_version = Family::<RulesetLabels, Gauge>::default();
        registry.register("ruleset_version", "The version each ruleset serves", ruleset_version.clone());
        Metrics {
            registry,
            calls,
            call_seconds,
            recomputed,
            store_commit_seconds,
            resyncs,
            batch_sheets,
            sheets,
            watchers,
            ruleset_version,
        }
    }

    /// A call answered: its method, its status (`OK`, `NotFound`, …) and how long it took.
    pub fn call(&self, method: &str, status: &str, took: Duration) {
        self.calls.get_or_create(&CallLabels { method: method.to_owned(), status: status.to_owned() }).inc();
        self.call_seconds
            .get_or_create(&MethodLabels { method: method.to_owned() })
            .observe(took.as_secs_f64());
    }
}

/// The metrics as OpenMetrics text, with what `engine` holds read now.
pub fn render(engine: &Engine) -> String {
    let m = &*METRICS;
    let stats = engine.stats();
    m.sheets.set(i64::try_from(stats.sheets).unwrap_or(i64::MAX));
    m.watchers.set(i64::try_from(stats.watchers).unwrap_or(i64::MAX));
    for (id, version) in &stats.rulesets {
        m.ruleset_version
            .get_or_create(&RulesetLabels { ruleset: id.clone() })
            .set(i64::try_from(*version).unwrap_or(i64::MAX));
    }
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &m.registry);
    out
}

/// Counts and times API calls from their `call` spans (`grpc/api.rs`): the method when the
/// span opens, the status, recomputations and duration as they are recorded, all counted when
/// the span closes.
pub struct CallLayer;

#[derive(Default)]
struct CallFields {
    method: Option<String>,
    status: Option<String>,
    duration_us: Option<u64>,
    recomputed: Option<u64>,
}

impl Visit for CallFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "method" => self.method = Some(value.to_owned()),
            "status" => self.status = Some(value.to_owned()),
            _ => {}
        }
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "duration_us" => self.duration_us = Some(value),
            "recomputed" => self.recomputed = Some(value),
            _ => {}
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if matches!(field.name(), "method" | "status") {
            self.record_str(field, format!("{value:?}").trim_matches('"'));
        }
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> tracing_subscriber::Layer<S> for CallLayer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != "call" {
            return;
        }
        let mut fields = CallFields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<CallFields>()
        {
            values.record(fields);
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(fields) = span.extensions_mut().remove::<CallFields>() else { return };
        // A span that never finished (a stream's) has no status: only answered calls count.
        if let (Some(method), Some(status)) = (&fields.method, &fields.status) {
            let took = Duration::from_micros(fields.duration_us.unwrap_or(0));
            METRICS.call(method, status, took);
            if let Some(n) = fields.recomputed {
                METRICS.recomputed.inc_by(n);
            }
        }
    }
}

/// Serves `GET /metrics` on `listener` until the process ends: a request's head is read (at most
/// 8 KiB, within 5 s), the answer written, the connection closed.
pub async fn serve(listener: tokio::net::TcpListener, engine: std::sync::Arc<Engine>) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else { continue };
        let engine = engine.clone();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut head = Vec::with_capacity(512);
            let mut buf = [0u8; 1024];
            let read = async {
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
            };
            if tokio::time::timeout(Duration::from_secs(5), read).await.is_err() {
                return;
            }
            let (status, kind, body) =
                if head.starts_with(b"GET /metrics ") || head.starts_with(b"GET /metrics?") {
                    ("200 OK", "application/openmetrics-text; version=1.0.0; charset=utf-8", render(&engine))
                } else {
                    (
                        "404 Not Found",
                        "text/plain; charset=utf-8",
                        "sheetd serves its metrics at /metrics\n".to_owned(),
                    )
                };
            let response = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}
