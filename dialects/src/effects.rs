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
//!
//! Not yet: compiling the trees to rules and running games (issue 16).

pub mod syntax;
pub mod tables;

pub use syntax::*;

#[cfg(test)]
mod tests;
