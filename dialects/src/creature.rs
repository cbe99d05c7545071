//! The creature features dialect (`../shared/seeds/creature-features.txt`): feature
//! dictionaries and creatures files, in the seed's own JSON, compiled to a native ruleset with
//! event rules that sheetd checks and runs like any other.
//!
//! - A **feature file** (`*.json`) is one feature, `{"name", "text", "subfeatures"}`, or a list
//!   of them. A subfeature has a `trigger`, `conditions` (a postfix formula), `effects` and a
//!   `recharge`.
//! - A **creatures file** is `{"attributes": {…}, "creatures": [{"name", "attributes",
//!   "features"}]}`: each creature's attributes (numbers or postfix formulas) and its features,
//!   by name or as `{"feature", "vars": [V0, V1, …]}`. Its `attributes` table overrides the
//!   prelude's defaults or adds attributes.
//!
//! What they become (`sheetd translate --dialect creature` writes it out):
//! - the [prelude](crate::prelude): every creature's attributes and defaults, the events
//!   triggers listen to, the turn clocks, and the rule that makes a hit deal damage;
//! - each creature, an object of kind `CREATURE` whose modifiers set its attributes, its
//!   features' rendered TEXT (`Angelic_Weapons.TEXT`) and their use counters;
//! - each subfeature with a trigger, an event rule of that object, whose guard is its
//!   conditions and its uses left; each effect, a rule the first fires through the `Effect`
//!   event, with the effect's condition read for its target; a passive subfeature, modifiers
//!   of the creature (its conditions as their `when`).
//!
//! Every error has a stable code and points into the file it came from, a postfix formula's at
//! the token inside its string. [`game`] reads the dialect's game files.

pub mod game;
pub mod json;
pub mod read;
pub mod write;

use data::{DiagCode, Diagnostic, Files, SourceFile};
use std::path::PathBuf;
use std::sync::Arc;

/// The file names the compiled ruleset is written as (`sheetd translate`).
pub const PRELUDE_FILE: &str = "00-prelude.toml";
pub const CREATURES_FILE: &str = "10-creatures.toml";

/// The dialect's files compiled: the native ruleset's files, the warnings, and counts.
#[derive(Debug)]
pub struct Compiled {
    /// (file name, TOML text), loaded in this order.
    pub files: Vec<(String, String)>,
    /// Effects and durations that load and do nothing, each at its text.
    pub warnings: Vec<Diagnostic>,
    /// What the dialect read, counted: `("features", 8)`, `("creatures", 2)`.
    pub counts: Vec<(&'static str, usize)>,
}

impl Compiled {
    /// Loads the compiled ruleset (as `sheetd check` would load its translation).
    pub fn load(&self) -> Result<data::Ruleset, Vec<Diagnostic>> {
        data::load_texts(self.files.iter().map(|(n, t)| (n.as_str(), t.as_str())))
    }
}

/// A dialect error as a diagnostic at its place in `file`.
/// A card dialect's files (name, text) compiled: each file read into cards by `read`, then
/// all of them by `compile` into the native text loaded after `prelude`; every error mapped into
/// the file it came from.
pub fn compile_cards<C>(
    files: &[(String, String)],
    read: impl Fn(&SourceFile) -> Result<Vec<C>, crate::Error>,
    compile: impl Fn(&[(usize, C)]) -> Result<String, Vec<(usize, crate::Error)>>,
    prelude: &str,
) -> Result<Compiled, Vec<Diagnostic>> {
    let sources: Vec<Arc<SourceFile>> =
        files.iter().map(|(n, t)| SourceFile::new(n, Arc::from(t.as_str()))).collect();
    let mut cards = Vec::new();
    let mut errors = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        match read(src) {
            Ok(c) => cards.extend(c.into_iter().map(|c| (i, c))),
            Err(e) => errors.push(diagnostic(src, &e)),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    match compile(&cards) {
        Ok(body) => Ok(Compiled {
            files: vec![
                (PRELUDE_FILE.to_owned(), prelude.to_owned()),
                (crate::rulescript::CARDS_FILE.to_owned(), body),
            ],
            warnings: Vec::new(),
            counts: vec![("cards", cards.len())],
        }),
        Err(errors) => Err(errors.iter().map(|(i, e)| diagnostic(&sources[*i], e)).collect()),
    }
}

pub fn diagnostic(file: &Arc<SourceFile>, e: &crate::Error) -> Diagnostic {
    let text = file.text();
    let start = e.span.start.min(text.len());
    let end = e.span.end.clamp(start, text.len());
    // The underlined text stops at the end of its first line.
    let mut shown = text.get(start..end).unwrap_or("");
    if let Some(nl) = shown.find('\n') {
        shown = &shown[..nl];
    }
    Diagnostic {
        code: DiagCode::Layer(e.code),
        message: e.message.clone(),
        at: Some(file.origin(start)),
        text: shown.to_owned(),
        help: None,
    }
}

/// Compiles the dialect's files given as (name, text), in order.
pub fn compile_texts(files: &[(String, String)]) -> Result<Compiled, Vec<Diagnostic>> {
    let sources: Vec<Arc<SourceFile>> =
        files.iter().map(|(n, t)| SourceFile::new(n, Arc::from(t.as_str()))).collect();
    let mut reads = Vec::new();
    let mut errors = Vec::new();
    for (i, src) in sources.iter().enumerate() {
        match read::file(src.text(), i) {
            Ok(r) => reads.push(r),
            Err(e) => {
                errors.push(diagnostic(src, &e));
                reads.push(read::Read::default());
            }
        }
    }
    let warnings: Vec<Diagnostic> = reads
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.warnings.iter().map(move |w| (i, w)))
        .map(|(i, w)| diagnostic(&sources[i], w))
        .collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    let features = reads.iter().map(|r| r.features.len()).sum();
    let creatures = reads.iter().map(|r| r.creatures.len()).sum();
    match write::compile(&reads) {
        Ok((prelude, body)) => Ok(Compiled {
            files: vec![(PRELUDE_FILE.to_owned(), prelude), (CREATURES_FILE.to_owned(), body)],
            warnings,
            counts: vec![("features", features), ("creatures", creatures)],
        }),
        Err(errors) => Err(errors.iter().map(|(i, e)| diagnostic(&sources[*i], e)).collect()),
    }
}

/// The dialect's files under `paths`, read through `files` (its confinement and limits): each
/// a `.json` file, or a directory whose `.json` files (not its subdirectories') are read in
/// name order.
pub fn files_of(paths: &[PathBuf], files: &Files) -> Result<Vec<PathBuf>, Vec<Diagnostic>> {
    files_with(paths, files, &["json"])
}

/// The files under `paths` whose extension is one of `exts`: each path a file, or a directory
/// whose such files (not its subdirectories') are taken in name order.
pub fn files_with(paths: &[PathBuf], files: &Files, exts: &[&str]) -> Result<Vec<PathBuf>, Vec<Diagnostic>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        if files.is_dir(p) {
            let mut found = Vec::new();
            for ext in exts {
                match files.list(p, ext) {
                    Ok(f) => found.extend(f),
                    Err(e) => errors.push(Diagnostic::nowhere(DiagCode::File, e)),
                }
            }
            found.sort();
            if found.is_empty() {
                let exts: Vec<String> = exts.iter().map(|e| format!(".{e}")).collect();
                errors.push(Diagnostic::nowhere(
                    DiagCode::File,
                    format!("{}: a directory with no {} file", p.display(), exts.join(" or ")),
                ));
            }
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    if errors.is_empty() { Ok(out) } else { Err(errors) }
}

/// Reads and compiles the dialect's files under `paths` from disk (see [`files_of`]).
pub fn compile_paths(paths: &[PathBuf]) -> Result<Compiled, Vec<Diagnostic>> {
    compile_with(paths, &Files::disk())
}

/// Reads and compiles the dialect's files under `paths` through `files`.
pub fn compile_with(paths: &[PathBuf], files: &Files) -> Result<Compiled, Vec<Diagnostic>> {
    compile_texts(&read_all(paths, files)?)
}

/// The `.json` files under `paths` (see [`files_of`]), read through `files`: (name, text).
pub fn read_all(paths: &[PathBuf], files: &Files) -> Result<Vec<(String, String)>, Vec<Diagnostic>> {
    read_with(paths, files, &["json"])
}

/// The files under `paths` with one of the extensions `exts` (see [`files_with`]), read
/// through `files`: (name, text).
pub fn read_with(
    paths: &[PathBuf],
    files: &Files,
    exts: &[&str],
) -> Result<Vec<(String, String)>, Vec<Diagnostic>> {
    let mut texts = Vec::new();
    let mut errors = Vec::new();
    for f in files_with(paths, files, exts)? {
        match files.read(&f) {
            Ok(t) => texts.push((f.display().to_string(), t.to_string())),
            Err(e) => errors.push(Diagnostic::nowhere(DiagCode::File, e)),
        }
    }
    if errors.is_empty() { Ok(texts) } else { Err(errors) }
}

#[cfg(test)]
mod tests;
