//! The wire edge: `sheetd serve`'s gRPC server (with grpc-web, health and reflection) over the
//! [`crate::engine::Engine`]. This folder is the only part of the crate (with the CLI's client)
//! that names tonic, prost or the generated types: each call converts its request to the domain
//! once, calls the engine, and converts the answer (or the [`crate::engine::EngineError`]) once.
//!
//! Read in this order: [`config`] (what can be set and how: flags, environment, TOML file),
//! [`serve`] below (listening, TLS, auth, CORS, graceful shutdown), [`api`] (one method per
//! call, tracing spans, the Watch and SolveBatch streams), [`convert`] (messages ↔ domain),
//! [`status`] (errors as standard `google.rpc.Status` details), [`auth`] (tokens and roles),
//! [`conn`] (connection limits and timeouts), [`codec`] (malformed messages), [`proto`] (the
//! generated API).

pub mod api;
pub mod apply_response;
pub mod auth;
pub mod batch_values;
pub mod codec;
pub mod config;
pub mod conn;
pub mod convert;
pub mod inspector;
pub mod notify;
pub mod proto;
pub mod reply;
pub mod status;

use crate::engine::{Engine, EngineConfig};
use config::ServeConfig;
use http::{HeaderName, HeaderValue, Method};
use proto::{FILE_DESCRIPTOR_SET, sheetd_service_server::SheetdServiceServer};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_stream::StreamExt;
use tonic::transport::{Identity, Server, ServerTlsConfig};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// Where a started server listens, for the caller to announce.
#[derive(Clone, Debug)]
pub struct Listening {
    /// `http://127.0.0.1:50051` (https with TLS).
    pub url: String,
    /// Where the store is.
    pub store: String,
}

/// Runs the server until SIGINT or SIGTERM; then stops accepting connections, lets calls in
/// flight finish, ends streams, and closes the store (every accepted change is already durable).
/// `ready` is called once the server listens.
// long: the server's whole life in order — start the engine, build the stack, serve, shut down
pub async fn serve(config: ServeConfig, ready: impl FnOnce(&Listening)) -> Result<(), String> {
    let engine_config = EngineConfig {
        data_dir: config.data_dir.clone(),
        store: config.store.clone(),
        preload: config.rulesets.clone(),
        default_ruleset: config.default_ruleset.clone(),
        limits: config.limits,
        ruleset_roots: config.ruleset_roots.clone(),
    };
    let engine = tokio::task::spawn_blocking(move || Engine::open(engine_config))
        .await
        .map_err(|e| format!("starting the engine failed: {e}"))??;
    let engine = Arc::new(engine);
    // Over a shared store: other servers' changes, followed on a thread of its own.
    let _follower = engine.follow();
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr().map_err(|e| format!("cannot read the listening address: {e}"))?;

    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let shutdown_rx_for_grace = shutdown_rx.clone();
    let api = api::Api::new(engine.clone(), shutdown_rx);
    let auth = auth::Auth::new(&config.tokens);
    let sheetd = SheetdServiceServer::new(api)
        .max_decoding_message_size(config.limits.max_request_bytes)
        .max_encoding_message_size(config.limits.max_reply_bytes);
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<SheetdServiceServer<api::Api>>().await;
    let (reflection_v1, reflection_v1alpha) = reflection()?;
    let (builder, scheme) = with_tls(Server::builder(), &config)?;
    let limits = config.limits;
    let router = builder
        .accept_http1(true)
        .http2_keepalive_interval(Some(limits.keepalive_interval))
        .http2_keepalive_timeout(Some(limits.keepalive_timeout))
        .max_concurrent_streams(Some(limits.max_streams))
        .layer(conn::TrackLayer)
        .layer(cors(&config.cors_origins)?)
        .layer(inspector::InspectorLayer { enabled: config.inspector })
        .layer(tonic_web::GrpcWebLayer::new())
        .layer(auth.clone())
        .add_service(health_service)
        .add_service(sheetd)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha);

    if let Some(addr) = config.metrics_listen {
        let metrics =
            TcpListener::bind(addr).await.map_err(|e| format!("cannot listen on {addr} for metrics: {e}"))?;
        let at = metrics.local_addr().map_err(|e| format!("cannot read the metrics address: {e}"))?;
        tracing::info!(%at, "metrics at http://{at}/metrics");
        tokio::spawn(crate::metrics::serve(metrics, engine.clone()));
    }
    // Listened for before the server says it serves: a signal right after is a clean shutdown.
    let signals = Signals::install()?;
    tracing::info!(
        %addr,
        store = %engine.store_location(),
        tls = config.tls.is_some(),
        auth = auth.enabled(),
        tokens = config.tokens.len(),
        "serving"
    );
    ready(&Listening { url: format!("{scheme}://{addr}"), store: engine.store_location() });
    notify::notify("READY=1");

    let signal = async move {
        signals.recv().await;
        tracing::info!("shutting down: no new connections; finishing calls in flight");
        notify::notify("STOPPING=1");
        health.set_not_serving::<SheetdServiceServer<api::Api>>().await;
        let _ = shutdown_tx.send(true);
    };
    let serving =
        router.serve_with_incoming_shutdown(incoming(listener, &limits, config.tls.is_some()), signal);
    // Calls in flight get a grace period; clients that keep idle connections open past it do
    // not hold the server up.
    let mut down = shutdown_rx_for_grace;
    let grace_period = config.limits.shutdown_grace;
    let grace = async move {
        let _ = down.wait_for(|d| *d).await;
        tokio::time::sleep(grace_period).await;
    };
    tokio::select! {
        r = serving => r.map_err(|e| format!("server error: {e}"))?,
        () = grace => tracing::warn!("calls or connections still open {} s after shutdown began; stopping anyway", grace_period.as_secs()),
    }
    drop(engine);
    tracing::info!("stopped");
    Ok(())
}

/// Server reflection in both versions: grpcurl and older tools still ask v1alpha.
fn reflection() -> Result<
    (
        tonic_reflection::server::v1::ServerReflectionServer<
            impl tonic_reflection::server::v1::ServerReflection,
        >,
        tonic_reflection::server::v1alpha::ServerReflectionServer<
            impl tonic_reflection::server::v1alpha::ServerReflection,
        >,
    ),
    String,
> {
    let builder = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let v1 = builder().build_v1().map_err(|e| format!("server reflection: {e}"))?;
    let v1alpha = builder().build_v1alpha().map_err(|e| format!("server reflection: {e}"))?;
    Ok((v1, v1alpha))
}

/// TLS when configured; the URL scheme to announce.
fn with_tls(mut builder: Server, config: &ServeConfig) -> Result<(Server, &'static str), String> {
    let Some((cert, key)) = &config.tls else { return Ok((builder, "http")) };
    let read =
        |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let identity = Identity::from_pem(read(cert)?, read(key)?);
    builder = builder
        .tls_config(ServerTlsConfig::new().identity(identity))
        .map_err(|e| format!("TLS configuration: {e}"))?;
    Ok((builder, "https"))
}

/// Accepted connections, admitted up to the connection limit with their timeouts. No Nagle
/// delay: a large reply's frames, or a TLS connection's records, can go out in separate
/// writes, and waiting for the peer's delayed ACK would add ~40 ms to a call. `tls`: whether
/// the sockets are written by TLS (vectored writes are then kept; see `conn::GuardedIo`).
fn incoming(
    listener: TcpListener,
    limits: &crate::engine::Limits,
    tls: bool,
) -> impl tokio_stream::Stream<Item = std::io::Result<conn::GuardedIo>> {
    let admission =
        conn::Admission::new(limits.max_connections, limits.handshake_timeout, limits.idle_timeout, tls);
    tokio_stream::wrappers::TcpListenerStream::new(listener).filter_map(move |conn| match conn {
        Ok(tcp) => {
            if let Err(e) = tcp.set_nodelay(true) {
                return Some(Err(e));
            }
            admission.admit(tcp).map(Ok)
        }
        Err(e) => Some(Err(e)),
    })
}

/// SIGINT (Ctrl-C) and SIGTERM, the signals that stop the server.
///
/// Their handlers are installed when this is made, before the server announces that it
/// serves. Installed when the shutdown future is first polled, inside the accept loop, a
/// SIGTERM sent right after the `serving` line (by a supervisor, or a test that makes one call
/// and stops the server) could come first and kill the process by the signal's default action,
/// without the clean shutdown.
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Result<Signals, String> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let listen = |kind: SignalKind, name: &str| {
                signal(kind).map_err(|e| format!("cannot listen for {name}: {e}"))
            };
            Ok(Signals {
                interrupt: listen(SignalKind::interrupt(), "SIGINT")?,
                terminate: listen(SignalKind::terminate(), "SIGTERM")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Signals {})
    }

    /// Completes when either signal arrives.
    async fn recv(mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.interrupt.recv() => {},
            _ = self.terminate.recv() => {},
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// CORS for grpc-web: the configured origins (`*` for any) may call, with the headers gRPC-Web
/// needs; with none configured, no cross-origin call is allowed.
fn cors(origins: &[String]) -> Result<CorsLayer, String> {
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        let list = origins
            .iter()
            .map(|o| HeaderValue::from_str(o).map_err(|_| format!("invalid CORS origin `{o}`")))
            .collect::<Result<Vec<_>, _>>()?;
        AllowOrigin::list(list)
    };
    let h = HeaderName::from_static;
    Ok(CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::POST, Method::OPTIONS])
        .allow_headers([
            h("content-type"),
            h("x-grpc-web"),
            h("x-user-agent"),
            h("grpc-timeout"),
            h("authorization"),
            h("x-request-id"),
        ])
        .expose_headers([
            h("grpc-status"),
            h("grpc-message"),
            h("grpc-status-details-bin"),
            h("x-request-id"),
        ])
        .max_age(std::time::Duration::from_secs(24 * 3600)))
}
