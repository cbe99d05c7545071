//! WWRF, Werewolves Revamped's formalization language
//! (`../shared/seeds/wwrf-formalization-guide.txt`): a folder of element files — roles, teams,
//! groups and custom attributes in the guide's formats — whose `__Formalized__` ability lines
//! (`End Night: Attack @Selection [Temporal: Night 2+, Quantity: 3]`) compile to a native
//! ruleset with event rules.
//!
//! - [`syntax`] reads the files and every line: triggers, restrictions, scaling, the other
//!   parameters and prompt overwrites, conditions (with and/or only in the guide's shapes),
//!   values and selectors, and every ability type the guide gives a syntax for, each part with
//!   its byte span; anything else is refused naming it.
//! - [`write`](mod@write) compiles them onto the prelude ([`write::PRELUDE`]): players as
//!   instances holding their role, phases on a stock and a clock, voting power as variables
//!   whose manipulations are modifiers in the order applied, killings queued and resolved
//!   against defenses in the guide's order, absences, disguises seen by investigations, the
//!   restrictions as guards and the uses they count, scaling as repeated runs.
//! - [`game`] makes a game file's setup and verbs (`execute`, `advance_phase`, `start_phase`,
//!   `set_target`, `vote`) into steps.
//!
//! Not yet: groups' and teams' own abilities, polls, redirections, the ability types the guide
//! lists without a syntax, and the other triggers (`On Visited`, `On Action`, …): each is
//! refused with `wwrf.unsupported` naming it.

pub mod game;
pub mod syntax;
pub mod write;

pub use syntax::*;

use data::Diagnostic;

/// Compiles element files given as (file name, text), in order.
pub fn compile_texts(files: &[(String, String)]) -> Result<crate::creature::Compiled, Vec<Diagnostic>> {
    let read = |src: &data::SourceFile| parse_file(src.text());
    let mut compiled = crate::creature::compile_cards(files, read, write::compile, write::PRELUDE)?;
    compiled.files[1].0 = ELEMENTS_FILE.to_owned();
    let elements = compiled.counts.iter().map(|(_, n)| *n).sum();
    compiled.counts = vec![("elements", elements)];
    Ok(compiled)
}

/// The file name the compiled elements are written as (`sheetd translate`).
pub const ELEMENTS_FILE: &str = "10-elements.toml";

/// Reads and compiles the element files under `paths` (`.md` and `.txt` files, or directories
/// of them) through `files`.
pub fn compile_with(
    paths: &[std::path::PathBuf],
    files: &data::Files,
) -> Result<crate::creature::Compiled, Vec<Diagnostic>> {
    compile_texts(&crate::creature::read_with(paths, files, &["md", "txt"])?)
}

#[cfg(test)]
mod tests;
