//! # sheetd-data: rulesets from files, and character sheets
//!
//! This crate turns game data into a compiled, immutable [`Ruleset`] and defines what a
//! character sheet is ([`Character`]).
//!
//! ## What it does
//! - Reads rulesets in sheetd's native TOML format ([`native`], documented in
//!   `docs/ruleset-format.md`) and PCGen campaigns (`.pcc` plus the `.lst` files they list,
//!   [`pcgen`]), into one [`Draft`]; several rulesets load on top of each other in order.
//! - Checks the draft once ([`Ruleset::compile`]): scopes, formats (ORDEREDPAIR, DICE,
//!   enumerations — [`formats`]), defaults, functions, declarations, every object's modifiers.
//!   Every problem is a [`Diagnostic`] pointing at file:line:col with the offending text.
//! - Adds the functions that read the data rather than the character: `input` (channels),
//!   `lookup` over data tables ([`tables`]), `getFact` and `listAll` over objects' facts
//!   ([`facts`]); each call checked when its formula compiles.
//! - [`Character`]: a ruleset plus the objects a character has, channel inputs and ad-hoc
//!   modifiers, changed by atomic batches of [`SheetOp`]s, following PCGen's activation rules.
//!
//! ## What it does not do
//! It evaluates nothing itself: values, recomputation and traces are the solver's. It does not
//! serve or persist anything.
//!
//! ## Main types
//! [`load`] (paths to a [`Ruleset`]), [`Ruleset`], [`Character`], [`SheetOp`], [`Diagnostic`].

/// Hash maps keyed by names and ids.
type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// Sets of ids looked up on every step (which variables are channels, clocks): foldhash, as
/// [`Map`].
type Set<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

mod character;
pub mod diag;
pub mod draft;
pub mod facts;
pub mod formats;
pub mod history;
pub mod native;
pub mod pcgen;
pub mod record;
mod ruleset;
pub mod source;
pub mod tables;

pub use character::{
    ChannelKind, Character, Expired, ExpiredEffect, ExpiredRef, Expiries, Placed, SheetCode, SheetError,
    SheetOp, Until, codes as sheet_codes,
};
pub use diag::{DiagCode, Diagnostic, Origin, SourceFile, Text};
pub use draft::{Draft, Presence};
pub use ruleset::{Kind, KindId, ModTemplate, Object, ObjectId, OtherMod, Ruleset, Select, Stock, Summary};
pub use source::{Bundle, Files, ReadLimits};

use std::path::Path;

/// Reads rulesets into one draft, each on top of the ones before: a `.pcc` is a PCGen campaign;
/// a directory or a `.toml` file is a native ruleset.
pub fn read(paths: &[impl AsRef<Path>]) -> Draft {
    read_with(paths, &Files::disk())
}

/// Like [`read`], reading every file through `files` (confined, limited, or from a bundle).
pub fn read_with(paths: &[impl AsRef<Path>], files: &Files) -> Draft {
    let mut draft = Draft::default();
    for p in paths {
        let p = p.as_ref();
        if p.extension().is_some_and(|e| e.eq_ignore_ascii_case("pcc")) {
            let mut reader = pcgen::PcgenReader::new(&mut draft);
            reader.read_campaign(p, files);
            reader.finish();
        } else {
            native::read(p, files, &mut draft);
        }
    }
    draft
}

/// Reads and compiles rulesets (see [`read`]); on failure, every problem found.
pub fn load(paths: &[impl AsRef<Path>]) -> Result<Ruleset, Vec<Diagnostic>> {
    Ruleset::compile(read(paths))
}

/// Like [`load`], reading through `files`.
pub fn load_with(paths: &[impl AsRef<Path>], files: &Files) -> Result<Ruleset, Vec<Diagnostic>> {
    Ruleset::compile(read_with(paths, files))
}

/// The bundled starter ruleset's directory (`data/rulesets/starter`), when sheetd runs from a
/// checkout or the path is given at build time.
pub fn starter_ruleset_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("rulesets").join("starter")
}

/// The bundled starter ruleset's files (name, text), embedded in the binary so that
/// `sheetd serve` has it wherever it runs.
pub const STARTER_FILES: &[(&str, &str)] = &[
    ("starter/00-core.toml", include_str!("../rulesets/starter/00-core.toml")),
    ("starter/10-abilities.toml", include_str!("../rulesets/starter/10-abilities.toml")),
    ("starter/20-skills.toml", include_str!("../rulesets/starter/20-skills.toml")),
    ("starter/30-equipment.toml", include_str!("../rulesets/starter/30-equipment.toml")),
    ("starter/40-races.toml", include_str!("../rulesets/starter/40-races.toml")),
    ("starter/50-sizes.toml", include_str!("../rulesets/starter/50-sizes.toml")),
    ("starter/60-feats-conditions.toml", include_str!("../rulesets/starter/60-feats-conditions.toml")),
];

/// Compiles the embedded starter ruleset ([`STARTER_FILES`]).
pub fn load_starter() -> Result<Ruleset, Vec<Diagnostic>> {
    load_texts(STARTER_FILES.iter().copied())
}

/// Compiles native-format TOML documents given as (name, text), each on top of the ones before.
pub fn load_texts<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Ruleset, Vec<Diagnostic>> {
    let mut draft = Draft::default();
    for (name, text) in files {
        native::read_str(text, name, &mut draft);
    }
    Ruleset::compile(draft)
}

/// Compiles one native-format TOML document given as text (`name` is shown in diagnostics).
pub fn load_str(text: &str, name: &str) -> Result<Ruleset, Vec<Diagnostic>> {
    let mut draft = Draft::default();
    native::read_str(text, name, &mut draft);
    Ruleset::compile(draft)
}

#[cfg(test)]
mod tests {
    /// The embedded copy lists every file of the starter directory, so it matches what
    /// `sheetd check data/rulesets/starter` loads.
    #[test]
    fn embedded_starter_lists_every_file() {
        let mut on_disk: Vec<String> = std::fs::read_dir(super::starter_ruleset_dir())
            .expect("the starter directory is part of the crate")
            .map(|e| format!("starter/{}", e.expect("readable entry").file_name().to_string_lossy()))
            .filter(|n| n.ends_with(".toml"))
            .collect();
        on_disk.sort();
        let embedded: Vec<&str> = super::STARTER_FILES.iter().map(|(n, _)| *n).collect();
        assert_eq!(on_disk, embedded);
        let from_dir = super::load(&[super::starter_ruleset_dir()]).expect("starter loads");
        let embedded = super::load_starter().expect("embedded starter loads");
        assert_eq!(from_dir.summary(), embedded.summary());
    }
}
