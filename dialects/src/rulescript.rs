//! RuleScript (`../shared/seeds/rulescript.txt`): the card language written in INI-like
//! properties — `target`, `action`, `abilities`, `auto`, `label`, `requisite`, `vars` — whose
//! values are statements: `{F}: [[if _coin]] bp(+500) target(tgt.0) [[else]] damage(300)
//! to(this)`.
//!
//! - [`syntax`] reads a card's rules text into a syntax tree with the byte span of every part,
//!   so that each error — an unknown property, command, ability or event, a restriction on a
//!   statement whose effects do not last, Python outside the subset of expressions the seed's
//!   examples use — points at its text.
//! - [`cards`] reads card databases (JSON: name, type, printed BP, rules) and `.rulescript`
//!   files (one card each: its rules, and `#!` lines for its name, type and BP).
//! - [`write`](mod@write) compiles the cards to a native ruleset with event rules on the prelude (players,
//!   cards, zones, turns): abilities, action and auto statements with their costs, requisites,
//!   conditions, `vars` (`flipCoin()` as a roll, `getTargets()` as a count), `[[may]]`,
//!   targets, effects in the order written (`&`, `&&`, and `||` where the left effect's
//!   failure is known) and restrictions; always-active `auto` statements as the card's
//!   modifiers; `?hooks?` as the card's ability flags; `command?()` confirmations,
//!   `prophecy()`, `shuffle()` and `discard(filter)`. Not yet: the commands that need cards'
//!   identities in piles (`each`, `transform`, `steal`, …).
//! - [`game`] reads the dialect's game files: setup and verbs.

pub mod cards;
pub mod game;
pub mod syntax;
pub mod write;

pub use syntax::*;

use data::{Diagnostic, Files, SourceFile};
use std::path::PathBuf;

/// The file name the compiled cards are written as (after the prelude's).
pub const CARDS_FILE: &str = "10-cards.toml";
pub const PRELUDE_FILE: &str = "00-prelude.toml";

/// Compiles card databases given as (name, text), in order.
pub fn compile_texts(files: &[(String, String)]) -> Result<crate::creature::Compiled, Vec<Diagnostic>> {
    let read = |src: &SourceFile| {
        if src.name.ends_with(".rulescript") {
            let stem = std::path::Path::new(&*src.name).file_stem().map(|s| s.to_string_lossy().into_owned());
            cards::rulescript_file(src.text(), stem.as_deref().unwrap_or("card")).map(|c| vec![c])
        } else {
            cards::file(src.text())
        }
    };
    crate::creature::compile_cards(files, read, write::compile, write::PRELUDE)
}

/// Reads and compiles the card databases under `paths` (`.json` files, or directories of them)
/// through `files`.
pub fn compile_with(paths: &[PathBuf], files: &Files) -> Result<crate::creature::Compiled, Vec<Diagnostic>> {
    compile_texts(&crate::creature::read_with(paths, files, &["json", "rulescript"])?)
}

#[cfg(test)]
mod tests;
