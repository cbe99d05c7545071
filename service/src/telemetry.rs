//! Optional OpenTelemetry export. With `sheetd serve --otlp-endpoint URL` the server's spans —
//! `request` (peer, request id), `call` (method, sheet, revision, status, duration) and `watch`
//! (a stream's life) with their events — go to an OTLP collector over gRPC, batched off the
//! request path. A request carrying a W3C `traceparent` header joins the caller's trace: its
//! `request` span is a child of the caller's span.
//!
//! What it does not do: metrics and logs go their own ways (`/metrics`, stderr); without an
//! endpoint nothing here runs and a `traceparent` header is ignored.

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Whether spans are exported (a request's `traceparent` is only read then).
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// The exporter and its batching, started on the current Tokio runtime (the gRPC channel's
/// connection runs there). Call [`Telemetry::shutdown`] before the runtime stops, to send what
/// is still batched.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl Telemetry {
    /// Starts exporting to `endpoint` (`http://collector:4317`): builds the exporter and the
    /// provider; the connection is made when the first batch goes.
    pub fn start(endpoint: &str) -> Result<Telemetry, String> {
        use opentelemetry_otlp::WithExportConfig;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .with_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| format!("cannot export traces to {endpoint}: {e}"))?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name("sheetd")
            .with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider =
            SdkTracerProvider::builder().with_batch_exporter(exporter).with_resource(resource).build();
        EXPORTING.store(true, Ordering::Relaxed);
        Ok(Telemetry { provider })
    }

    /// The tracer the `tracing` layer records into.
    pub fn tracer(&self) -> Tracer {
        self.provider.tracer("sheetd")
    }

    /// Sends what is batched and stops; why the last export failed, if it did.
    pub fn shutdown(self) -> Result<(), String> {
        EXPORTING.store(false, Ordering::Relaxed);
        self.provider.shutdown().map_err(|e| format!("exporting the last traces failed: {e}"))
    }
}

/// Makes `span` (a request's) a child of the caller's span named in the request's W3C
/// `traceparent` (and `tracestate`) headers, when spans are exported and the header is valid.
pub fn join_caller_trace(span: &tracing::Span, headers: &http::HeaderMap) {
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    if !EXPORTING.load(Ordering::Relaxed) || !headers.contains_key("traceparent") {
        return;
    }
    let cx = TraceContextPropagator::new().extract(&Headers(headers));
    let _ = span.set_parent(cx);
}

/// Request headers as the propagator reads them.
struct Headers<'a>(&'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}
