//! Board-game effect strings (`../shared/seeds/effect-strings.txt`): the short strings in the
//! citizens', domains' and monsters' tables — `choose g 2 m 2`, `exchange s 1 g 2`,
//! `action.end manipulate_resources mode=pay_to_player gain=v:1 pay=g:1 optional=true` — in
//! both grammars the document describes: the current one, table by table, and the proposed
//! unified one.
//!
//! - [`syntax`] reads either grammar into one effect tree ([`Effect`]), every part with its
//!   byte span, so that an error points at the token inside the string; [`syntax::unified`]
//!   prints a tree in the unified grammar (what `translate` shows for an old string). An old
//!   string and its unified form read into the same tree.
//! - [`tables`] reads the card tables (CSV or JSON, the document's columns), every effect
//!   string read with them and its errors mapped into the file.
//! - [`write`](mod@write) compiles the cards to a native ruleset with event rules: gains,
//!   exchanges, counted payouts, `choose`, citizen picks, optional conversions, payments to and
//!   from players, passives by phase, dice, flags and the opaque keys' handlers; [`game`] makes
//!   a game file's setup and verbs into steps.
//!
//! Not yet: a card changing owner.

pub mod game;
pub mod syntax;
pub mod tables;
pub mod write;

pub use syntax::*;

use data::Diagnostic;

/// Compiles card tables given as (file name, text), in order: each file's stem names its table.
pub fn compile_texts(files: &[(String, String)]) -> Result<crate::creature::Compiled, Vec<Diagnostic>> {
    let read = |src: &data::SourceFile| {
        let path = std::path::Path::new(&*src.name);
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let ext = path.extension().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        tables::read(src.text(), &stem, &ext)
    };
    crate::creature::compile_cards(files, read, write::compile, write::PRELUDE)
}

/// Reads and compiles the card tables under `paths` (`.csv` and `.json` files, or directories of
/// them) through `files`.
pub fn compile_with(
    paths: &[std::path::PathBuf],
    files: &data::Files,
) -> Result<crate::creature::Compiled, Vec<Diagnostic>> {
    compile_texts(&crate::creature::read_with(paths, files, &["csv", "json"])?)
}

#[cfg(test)]
mod tests;
