//! # sheetd: the daemon and the command-line tool
//!
//! This crate holds the `sheetd` binary: the daemon (`sheetd serve`, the gRPC API of
//! `proto/sheetd/v1/sheetd.proto`) and the other subcommands.
//!
//! ## Layers
//! - [`engine`]: rulesets, live sheets, history, change events and limits, in domain terms
//!   (`data::SheetOp`, `data::record` values, [`engine::EngineError`]). No protocol, no JSON,
//!   no printing.
//! - [`store`]: the [`store::Store`] trait and its records; [`store::RedbStore`] is the
//!   embedded implementation.
//! - [`grpc`]: the wire edge — the only module (with the CLI's client) that names tonic, prost
//!   or the generated types; it converts each call once in and once out, and maps errors to
//!   standard `google.rpc.Status` details.
//! - [`cli`]: one file per subcommand; offline subcommands call the library crates directly.
//! - [`json`] and [`render`]: the JSON encoding of values and the rustc-like renderer of
//!   diagnostics, shared by every output.
//! - [`alloc`]: the global allocator of the binary and the benches (mimalloc).
//! - [`metrics`] and [`telemetry`]: Prometheus metrics from the calls' spans, and the optional
//!   OpenTelemetry export of the spans (OTLP, with `traceparent` from the caller).
//!
//! ## What it does not do
//! No language, solving or data logic lives here; that is in `sheetd-formula` and the crates
//! after it.
//!
//! ## Main types
//! [`cli::Cli`] (the argument grammar), [`engine::Engine`] (the daemon's state),
//! [`grpc::api::Api`] (the gRPC service), [`store::Store`], [`grpc::proto`] (the generated API).

pub mod alloc;
pub mod cli;
pub mod dialect;
pub mod engine;
pub mod grpc;
pub mod json;
pub mod metrics;
pub mod problem;
pub mod render;
pub mod store;
pub mod telemetry;
pub mod wire;
