//! # sheetd-events: event rules, cascades, choices and supplied randomness
//!
//! The layer above `data` that makes a character sheet a game's state: things happen to it.
//!
//! ## What it does
//! - Checks a ruleset's `[events]` and `[[rule]]` sections once, at load, into a [`RuleBook`]
//!   (`docs/ruleset-format.md`, *Events and rules*): every name a rule uses is resolved and
//!   every formula compiled in the scope it runs in; every problem is a
//!   [`data::Diagnostic`] at the text.
//! - Plays a [`Game`]: a [`data::Character`] changed by [`Step`]s. Sheet operations pass
//!   through; `emit` fires the matching rules — filters, use limits, guards — each as atomic
//!   batches, cascading breadth first and bounded; a rule may `ask` (a pending choice, answered
//!   by `choose`) or need a die (answered by `roll`). Each step reports what changed, what
//!   expired, which rules fired and what is pending ([`StepReport`]).
//!
//! ## What it does not do
//! It draws no randomness: dice come in as steps, so a game replays exactly from its log. It
//! computes no values: the solver does, through the character. It stores nothing and serves
//! nothing.
//!
//! ## Main types
//! [`RuleBook`] (compiled rules, shared), [`Game`] (one game's state, one writer), [`Step`],
//! [`StepReport`] with [`Fired`] and [`Pending`], [`GameError`] and its [`Code`].

/// Hash maps keyed by names and ids.
type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

pub mod book;
mod game;

pub use book::{EventDef, EventId, Rule, RuleBook, RuleId};
pub use game::{Code, Fired, Game, GameError, MAX_DEPTH, MAX_FIRINGS, Pending, Step, StepReport};
