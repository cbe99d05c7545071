//! Rulesets: loading, reloading with a hot swap, versions, and the content each version was
//! compiled from.
//!
//! A ruleset is an [`ArcSwap`] of its current compiled [`Version`]. A request loads the `Arc`
//! once and finishes on that version even if a reload swaps in another meanwhile. Every
//! version's content (the text of every file read) is kept in the store, so sheets replay their
//! history against the rules each revision was made with (`Engine::ruleset_at`).

use super::error::{EngineError, Problem, Resource, ruleset_failed, ruleset_summary};
use super::{Engine, lock, policy};
use crate::store::{FileRecord, RulesetRecord, RulesetVersion};
use arc_swap::ArcSwap;
use data::Ruleset;
use events::RuleBook;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The id of the bundled starter ruleset.
pub const STARTER: &str = "starter";

/// How many earlier versions of one ruleset stay compiled in memory.
const EARLIER_VERSIONS_KEPT: usize = 4;

/// Where a ruleset comes from.
#[derive(Clone, Debug)]
pub(super) enum Source {
    Builtin,
    /// Files on disk; `confined` when a client named them (they must lie under the ruleset roots).
    Paths {
        paths: Vec<PathBuf>,
        confined: bool,
    },
    Inline(String),
}

/// What a client asks to load.
#[derive(Clone, Debug)]
pub enum NewRuleset {
    /// Paths the server can read (relative ones are relative to a ruleset root).
    Paths(Vec<String>),
    /// A dialect's paths (`creature`), read the same way.
    Dialect(String, Vec<String>),
    /// One native-format TOML document.
    Inline(String),
}

/// One compiled version of a ruleset: its book holds the ruleset ([`RuleBook::ruleset`]) and
/// its events and rules (none for a ruleset without them).
pub struct Version {
    pub version: u64,
    pub book: Arc<RuleBook>,
}

impl Version {
    /// The compiled ruleset.
    pub fn ruleset(&self) -> &Arc<Ruleset> {
        self.book.ruleset()
    }
}

/// A loaded ruleset.
pub struct RulesetEntry {
    pub id: String,
    pub(super) source: Mutex<Source>,
    /// The version serving now; swapped whole by a successful reload.
    pub current: ArcSwap<Version>,
    /// Earlier versions compiled again from their stored content, for replaying history.
    pub(super) earlier: Mutex<HashMap<u64, Arc<RuleBook>>>,
}

/// A compiled ruleset (its rules compiled too) and the content it was compiled from.
pub(super) struct Compiled {
    pub book: Arc<RuleBook>,
    pub content: RulesetVersion,
    /// A dialect's warnings (an effect it loads and ignores), besides the ruleset's own.
    pub warnings: Vec<data::Diagnostic>,
}

/// What a ruleset is, for listings.
#[derive(Clone, Debug)]
pub struct RulesetInfo {
    pub id: String,
    /// 1 for the first load; each successful reload adds one.
    pub version: u64,
    pub paths: Vec<String>,
    pub inline: bool,
    pub summary: data::Summary,
}

/// The answer to a load or reload: `ok` when the new version serves; otherwise the old one
/// keeps serving and `diagnostics` say why.
#[derive(Clone, Debug)]
pub struct RulesetOutcome {
    pub ok: bool,
    pub info: RulesetInfo,
    pub diagnostics: Vec<Problem>,
    pub warnings: Vec<Problem>,
}

impl RulesetEntry {
    /// What the ruleset is now.
    pub fn info(&self) -> RulesetInfo {
        let loaded = self.current.load();
        let source = lock(&self.source);
        RulesetInfo {
            id: self.id.clone(),
            version: loaded.version,
            paths: match &*source {
                Source::Paths { paths, .. } => paths.iter().map(|p| p.display().to_string()).collect(),
                Source::Builtin => vec!["(built in: data/rulesets/starter)".to_owned()],
                Source::Inline(_) => vec![],
            },
            inline: matches!(&*source, Source::Inline(_)),
            summary: loaded.ruleset().summary().clone(),
        }
    }
}

fn warnings(c: &Compiled) -> Vec<Problem> {
    c.warnings.iter().chain(c.book.ruleset().warnings()).map(Problem::of_diagnostic).collect()
}

impl Engine {
    /// Registers a compiled ruleset at `version` and stores its record and content.
    pub(super) fn insert_ruleset(
        &self,
        id: &str,
        source: Source,
        version: u64,
        compiled: Compiled,
    ) -> Result<(), EngineError> {
        let Compiled { book, mut content, .. } = compiled;
        content.version = version;
        let record = record_of(id, &source, version, &content);
        self.store.put_ruleset(&record, Some(&content)).map_err(|e| match e {
            // Another server stored this version of it first, from other content.
            crate::store::StoreError::Conflict(m) => EngineError::already_exists(
                Resource::Ruleset,
                id,
                format!("ruleset `{id}` is already loaded by another server: {m}"),
            ),
            e => e.into(),
        })?;
        let entry = Arc::new(RulesetEntry {
            id: id.to_owned(),
            source: Mutex::new(source),
            current: ArcSwap::from_pointee(Version { version, book }),
            earlier: Mutex::default(),
        });
        self.rulesets.write().unwrap_or_else(PoisonError::into_inner).insert(id.to_owned(), entry);
        Ok(())
    }

    /// A version of a ruleset, as its rule book: the current one, or an earlier one compiled
    /// again from the content stored with it. (A version stored before versions kept their
    /// content is served by the current one, with a warning.)
    pub(super) fn ruleset_at(
        &self,
        entry: &RulesetEntry,
        version: u64,
    ) -> Result<Arc<RuleBook>, EngineError> {
        let current = entry.current.load_full();
        if current.version == version {
            return Ok(current.book.clone());
        }
        if let Some(r) = lock(&entry.earlier).get(&version) {
            return Ok(r.clone());
        }
        let Some(content) = self.store.ruleset_version(&entry.id, version)? else {
            tracing::warn!(ruleset = %entry.id, version, "no stored content for this version; using the current one");
            return Ok(current.book.clone());
        };
        let ruleset = Arc::new(compile_content(&entry.id, &content).map_err(|d| {
            EngineError::precondition(format!(
                "version {version} of ruleset `{}` no longer compiles: {}",
                entry.id,
                ruleset_summary(&entry.id, &d)
            ))
        })?);
        let mut earlier = lock(&entry.earlier);
        if earlier.len() >= EARLIER_VERSIONS_KEPT
            && let Some(&oldest) = earlier.keys().min()
        {
            earlier.remove(&oldest);
        }
        earlier.insert(version, ruleset.clone());
        Ok(ruleset)
    }

    /// A loaded ruleset by id; the default ruleset for an empty id.
    pub fn ruleset_entry(&self, id: &str) -> Result<Arc<RulesetEntry>, EngineError> {
        let id = if id.is_empty() { &self.default_ruleset } else { id };
        if let Some(e) = self.read_rulesets().get(id) {
            return Ok(e.clone());
        }
        // Over a shared store, one another server loaded is served here on first use.
        if self.store.shared() {
            self.refresh_ruleset(id)?;
            if let Some(e) = self.read_rulesets().get(id) {
                return Ok(e.clone());
            }
        }
        Err(EngineError::not_found(Resource::Ruleset, id))
    }

    /// Compiles a ruleset, reading files through the policy: confined to the ruleset roots when a
    /// client named them, always within the read limits. Returns the content read with it.
    pub(super) fn compile(&self, id: &str, source: &Source) -> Result<Compiled, Vec<data::Diagnostic>> {
        compile(&self.limits, &self.ruleset_roots, id, source)
    }
}

/// Compiles a ruleset from its source, reading files within `limits` (and, for a client's
/// paths, within `roots`): what [`Engine::compile`] does, without an engine (the preloaded
/// rulesets are checked before the store is opened).
pub(super) fn compile(
    limits: &policy::Limits,
    roots: &[PathBuf],
    id: &str,
    source: &Source,
) -> Result<Compiled, Vec<data::Diagnostic>> {
    let mut content = RulesetVersion::default();
    let mut dialect_warnings = Vec::new();
    let ruleset = match source {
        Source::Builtin => {
            content.builtin = true;
            content.files = data::STARTER_FILES
                .iter()
                .map(|(path, text)| FileRecord { path: (*path).to_owned(), text: (*text).to_owned() })
                .collect();
            data::load_starter()?
        }
        Source::Paths { paths, confined } => {
            let files = if *confined { data::Files::confined(roots) } else { data::Files::disk() };
            let files = files.with_limits(limits.read);
            let loaded = crate::dialect::load_with(paths, &files)?;
            dialect_warnings = loaded.warnings;
            let ruleset = loaded.ruleset;
            content.paths = paths.iter().map(|p| p.display().to_string()).collect();
            let bundle = files.into_bundle();
            content.present = bundle.present.into_iter().collect();
            content.files = bundle
                .files
                .into_iter()
                .map(|(path, text)| FileRecord { path, text: text.to_string() })
                .collect();
            ruleset
        }
        Source::Inline(text) => {
            content.inline_text = text.clone();
            data::load_str(text, &format!("<inline {id}>"))?
        }
    };
    content.content_hash = content_hash(&content);
    let book = Arc::new(RuleBook::compile(Arc::new(ruleset))?);
    Ok(Compiled { book, content, warnings: dialect_warnings })
}

impl Engine {
    /// A client's path: a relative one is relative to the first ruleset root that has it (or to
    /// the first root). Whether it may be read is decided when it is read ([`data::Files`]).
    fn under_roots(&self, path: &Path) -> PathBuf {
        if path.is_absolute() {
            return path.to_owned();
        }
        self.ruleset_roots
            .iter()
            .map(|r| r.join(path))
            .find(|p| p.exists())
            .or_else(|| self.ruleset_roots.first().map(|r| r.join(path)))
            .unwrap_or_else(|| path.to_owned())
    }

    /// Inline ruleset text within the limits: its size and its longest line.
    fn check_inline(&self, text: &str) -> Result<(), EngineError> {
        let max = self.limits.max_inline_ruleset_bytes;
        if text.len() > max {
            return Err(EngineError::invalid(format!(
                "the inline ruleset is {} bytes; the limit is {max} bytes (--max-inline-ruleset-bytes)",
                text.len()
            )));
        }
        self.limits.read.check_lines("the inline ruleset", text).map_err(EngineError::invalid)
    }

    /// Loads a new ruleset; a ruleset that does not compile is INVALID_ARGUMENT with every
    /// problem.
    pub fn load_ruleset(&self, id: &str, new: NewRuleset) -> Result<RulesetOutcome, EngineError> {
        policy::check_id("ruleset", id)?;
        if self.store.shared() {
            // Loaded through another server, perhaps: then it is here now.
            self.refresh_ruleset(id)?;
        }
        if self.read_rulesets().contains_key(id) {
            let message = format!("ruleset `{id}` is already loaded (use ReloadRuleset to change it)");
            return Err(EngineError::already_exists(Resource::Ruleset, id, message));
        }
        let source = match new {
            NewRuleset::Paths(paths) if !paths.is_empty() => Source::Paths {
                paths: paths.iter().map(|p| self.under_roots(Path::new(p))).collect(),
                confined: true,
            },
            NewRuleset::Dialect(dialect, paths) if !paths.is_empty() => {
                let d = crate::dialect::dialect(&dialect).map_err(EngineError::invalid)?;
                Source::Paths {
                    paths: paths
                        .iter()
                        .map(|p| crate::dialect::prefixed(d, &self.under_roots(Path::new(p))))
                        .collect(),
                    confined: true,
                }
            }
            NewRuleset::Inline(text) if !text.is_empty() => {
                self.check_inline(&text)?;
                Source::Inline(text)
            }
            _ => {
                return Err(EngineError::invalid(
                    "give either `paths` or `inline_text`, not both or neither",
                ));
            }
        };
        let compiled = self.compile(id, &source).map_err(|d| ruleset_failed(id, &d))?;
        let warnings = warnings(&compiled);
        self.insert_ruleset(id, source, 1, compiled)?;
        let info = self.ruleset_entry(id)?.info();
        Ok(RulesetOutcome { ok: true, info, diagnostics: vec![], warnings })
    }

    /// Reloads a ruleset (from its files, or from new inline text) and swaps it in; on failure
    /// the old version keeps serving and the outcome (ok = false) carries the diagnostics.
    /// With `expected_version`, only if that version is the one serving (else ABORTED).
    pub fn reload_ruleset(
        &self,
        id: &str,
        inline_text: Option<String>,
        expected_version: Option<u64>,
    ) -> Result<RulesetOutcome, EngineError> {
        if self.store.shared() {
            // The version checked is the latest any server made.
            self.refresh_ruleset(id)?;
        }
        let entry = self.ruleset_entry(id)?;
        // Reloads take the source's lock: the version checked is the one replaced.
        let mut source = lock(&entry.source);
        let serving = entry.current.load().version;
        if let Some(expected) = expected_version
            && expected != serving
        {
            return Err(EngineError::Conflict {
                what: Resource::Ruleset,
                name: entry.id.clone(),
                expected,
                actual: serving,
            });
        }
        let new_source = match (&*source, inline_text) {
            (Source::Inline(_), Some(text)) if !text.is_empty() => {
                self.check_inline(&text)?;
                Source::Inline(text)
            }
            (Source::Inline(_), _) => {
                return Err(EngineError::invalid(format!(
                    "ruleset `{id}` was loaded from inline text: give the new `inline_text`"
                )));
            }
            (other, _) => other.clone(),
        };
        match self.compile(&entry.id, &new_source) {
            Ok(compiled) => {
                let warnings = warnings(&compiled);
                let Compiled { book, mut content, .. } = compiled;
                let version = serving + 1;
                content.version = version;
                let record = record_of(&entry.id, &new_source, version, &content);
                if let Err(e) = self.store.put_ruleset(&record, Some(&content)) {
                    drop(source);
                    return Err(match e {
                        // Another server made this version first, with other content.
                        crate::store::StoreError::Conflict(_) => {
                            let _ = self.refresh_ruleset(id);
                            let actual = entry.current.load().version.max(version);
                            EngineError::Conflict {
                                what: Resource::Ruleset,
                                name: entry.id.clone(),
                                expected: serving,
                                actual,
                            }
                        }
                        e => e.into(),
                    });
                }
                entry.current.store(Arc::new(Version { version, book }));
                *source = new_source;
                drop(source);
                tracing::info!(ruleset = %entry.id, version, "ruleset reloaded");
                Ok(RulesetOutcome { ok: true, info: entry.info(), diagnostics: vec![], warnings })
            }
            Err(diags) => {
                drop(source);
                tracing::warn!(ruleset = %entry.id, errors = diags.len(), "reload failed; the old version keeps serving");
                let diagnostics = diags.iter().map(Problem::of_diagnostic).collect();
                Ok(RulesetOutcome { ok: false, info: entry.info(), diagnostics, warnings: vec![] })
            }
        }
    }

    /// Every loaded ruleset, by id.
    pub fn rulesets(&self) -> Vec<RulesetInfo> {
        self.read_rulesets().values().map(|e| e.info()).collect()
    }
}

/// The SHA-256 of a version's content: what kind of source, its paths, every file's path and
/// text, and inline text, each length-prefixed.
pub(super) fn content_hash(c: &RulesetVersion) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut field = |b: &[u8]| {
        h.update((b.len() as u64).to_le_bytes());
        h.update(b);
    };
    field(if c.builtin { b"builtin" } else { b"files" });
    for p in &c.paths {
        field(p.as_bytes());
    }
    for f in &c.files {
        field(f.path.as_bytes());
        field(f.text.as_bytes());
    }
    for p in &c.present {
        field(p.as_bytes());
    }
    field(c.inline_text.as_bytes());
    h.finalize().to_vec()
}

/// Compiles a stored version's content, and its rules, without reading any file.
pub(super) fn compile_content(id: &str, c: &RulesetVersion) -> Result<RuleBook, Vec<data::Diagnostic>> {
    RuleBook::compile(Arc::new(compile_ruleset(id, c)?))
}

fn compile_ruleset(id: &str, c: &RulesetVersion) -> Result<Ruleset, Vec<data::Diagnostic>> {
    if c.builtin {
        data::load_texts(c.files.iter().map(|f| (f.path.as_str(), f.text.as_str())))
    } else if !c.inline_text.is_empty() {
        data::load_str(&c.inline_text, &format!("<inline {id}>"))
    } else {
        let bundle = data::Bundle {
            files: c.files.iter().map(|f| (f.path.clone(), Arc::from(f.text.as_str()))).collect(),
            present: c.present.iter().cloned().collect(),
        };
        data::load_with(&c.paths, &data::Files::memory(bundle))
    }
}

fn record_of(id: &str, source: &Source, version: u64, content: &RulesetVersion) -> RulesetRecord {
    let confined = matches!(source, Source::Paths { confined: true, .. });
    let (paths, inline_text) = match source {
        Source::Builtin => (vec![], String::new()),
        Source::Paths { paths, .. } => {
            (paths.iter().map(|p| p.display().to_string()).collect(), String::new())
        }
        Source::Inline(t) => (vec![], t.clone()),
    };
    RulesetRecord {
        id: id.to_owned(),
        paths,
        inline_text,
        version,
        confined,
        content_hash: content.content_hash.clone(),
    }
}
