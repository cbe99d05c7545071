//! OpenTelemetry export against a real OTLP/gRPC collector on loopback (a TraceService server
//! made from OpenTelemetry's own protocol definitions): `sheetd serve --otlp-endpoint` sends the
//! request, call and Watch spans, and a call carrying a W3C `traceparent` joins that trace.

#[path = "common/server.rs"]
mod server;

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use server::Server;
use sheetd::grpc::proto as pb;
use std::sync::{Arc, Mutex};

/// A collector that keeps what it is sent.
#[derive(Clone, Default)]
struct Collector(Arc<Mutex<Vec<ExportTraceServiceRequest>>>);

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        self.0.lock().expect("not poisoned").push(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

fn attribute(span: &Span, key: &str) -> Option<String> {
    span.attributes.iter().find(|a| a.key == key).and_then(|a| match a.value.as_ref()?.value.as_ref()? {
        Any::StringValue(s) => Some(s.clone()),
        Any::IntValue(i) => Some(i.to_string()),
        other => Some(format!("{other:?}")),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_go_to_the_collector_in_the_callers_trace() {
    let collector = Collector::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let at = listener.local_addr().expect("address");
    let serving = tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(collector.clone()))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let endpoint = format!("http://{at}");
    let server = Server::start(&dir.path().join("data"), &["--otlp-endpoint", &endpoint]);
    let mut c = server.client().await;
    // The caller's trace: a W3C traceparent (version, trace id, parent span id, sampled).
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let mut list = tonic::Request::new(pb::ListRulesetsRequest::default());
    list.metadata_mut()
        .insert("traceparent", format!("00-{trace_id}-{caller_span}-01").parse().expect("ascii"));
    c.list_rulesets(list).await.expect("rulesets");
    // A call without one starts a trace of its own; a Watch's span ends with its stream.
    let (_, w) = server::new_watched_sheet(&mut c).await;
    drop(w);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // Stopping sends what is still batched.
    tokio::task::spawn_blocking(move || server.stop()).await.expect("stopped");

    let sent = collector.0.lock().expect("not poisoned").clone();
    assert!(!sent.is_empty(), "the collector got nothing");
    let resource = sent[0].resource_spans[0].resource.as_ref().expect("a resource");
    let service = resource.attributes.iter().find(|a| a.key == "service.name").expect("service.name");
    let name = service.value.as_ref().and_then(|v| v.value.as_ref());
    assert!(matches!(name, Some(Any::StringValue(n)) if n == "sheetd"), "{service:?}");
    let spans: Vec<Span> = sent
        .iter()
        .flat_map(|r| &r.resource_spans)
        .flat_map(|r| &r.scope_spans)
        .flat_map(|s| s.spans.clone())
        .collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    // The ListRulesets: its request span is a child of the caller's span, in the caller's trace; its
    // call span is a child of the request span.
    let listed = spans
        .iter()
        .find(|s| s.name == "call" && attribute(s, "method").as_deref() == Some("ListRulesets"))
        .unwrap_or_else(|| panic!("no ListRulesets call span in {names:?}"));
    assert_eq!(hex(&listed.trace_id), trace_id);
    let request = spans.iter().find(|s| s.span_id == listed.parent_span_id).expect("the call's request span");
    assert_eq!(request.name, "request");
    assert_eq!(hex(&request.parent_span_id), caller_span, "the request joins the caller's span");
    assert!(attribute(request, "peer").is_some_and(|p| p.starts_with("127.0.0.1:")), "{request:?}");
    assert_eq!(attribute(listed, "status").as_deref(), Some("OK"));
    // The Watch: a span of its own, with what it sent, in a trace of its own.
    let watch =
        spans.iter().find(|s| s.name == "watch").unwrap_or_else(|| panic!("no watch span in {names:?}"));
    assert_ne!(hex(&watch.trace_id), trace_id);
    assert!(watch.events.iter().any(|e| e.name == "watch ended"), "{watch:?}");
    serving.abort();
}
