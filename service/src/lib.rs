//! # sheetd: the command-line tool (and, later, the daemon)
//!
//! This crate holds the `sheetd` binary's subcommands. Each lives in its own module and is a thin
//! layer over the library crates: it parses arguments and input, calls the library, and renders
//! results and diagnostics for people (rustc-like, via miette) or programs (JSON).
//!
//! ## What it does
//! - `sheetd eval`: evaluate one formula, or a stream of JSON requests (`--jsonl`) — see
//!   [`eval`].
//! - `sheetd solve --scenario`: build a sheet from a scenario file and report every step,
//!   the final values and traces — see [`solve`].
//!
//! ## What it does not do
//! No language, solving or data logic lives here; that is in `sheetd-formula` and the crates
//! after it.
//!
//! ## Main types
//! [`cli::Cli`] (the argument grammar), [`json`] (the value encoding shared by every JSON
//! output), [`eval::eval_request`] (one `--jsonl` request to one response).

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
