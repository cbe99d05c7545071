//! # sheetd: the daemon and the command-line tool
//!
//! This crate holds the `sheetd` binary: the daemon ([`server`], `sheetd serve`, the gRPC API of
//! `proto/sheetd/v1/sheetd.proto`) and the other subcommands. Each subcommand lives in its own
//! module and is a thin layer over the library crates: it parses arguments and input, calls the
//! library, and renders results and diagnostics for people (rustc-like, via miette) or programs
//! (JSON).
//!
//! ## What it does
//! - `sheetd eval`: evaluate one formula, or a stream of JSON requests (`--jsonl`) — see
//!   [`eval`].
//! - `sheetd solve --scenario`: build a sheet from a scenario file and report every step,
//!   the final values and traces — see [`solve`].
//! - `sheetd check`: load rulesets and report — see [`check`].
//! - `sheetd serve`: live sheets over gRPC with revisions, change streams, explanations, batch
//!   and an embedded store — see [`server`] and `docs/api.md`.
//! - `sheetd client` and `sheetd batch`: a client for people, and offline batch solving — see
//!   [`client`] and [`batch`].
//!
//! ## What it does not do
//! No language, solving or data logic lives here; that is in `sheetd-formula` and the crates
//! after it.
//!
//! ## Main types
//! [`cli::Cli`] (the argument grammar), [`server::engine::Engine`] (the daemon's state),
//! [`server::api::Api`] (the gRPC service), [`server::store::Store`], [`proto`] (the generated
//! API), [`json`] (the value encoding shared by every JSON output), [`eval::eval_request`] (one
//! `--jsonl` request to one response).

pub mod batch;
pub mod check;
pub mod cli;
pub mod client;
pub mod eval;
pub mod json;
pub mod proto;
pub mod render;
pub mod server;
pub mod sheet;
pub mod solve;
