//! The compiled ruleset: a [`Draft`] checked and turned into solver rules plus game objects
//! whose modifiers are ready to put on a sheet.
//!
//! Compiling checks everything once: scopes, formats, defaults, functions, declarations, and
//! every object's modifiers (variable visible from the object's scope, type fitting the format,
//! formula compiled, literal parsed, PRIORITY a whole number). Nothing is parsed again when a
//! sheet adds an object. The result is immutable and `Send + Sync`; sheets share it in an `Arc`.

mod compile;

use crate::Map;
use crate::diag::{Diagnostic, Origin, Text};
use crate::draft::{Draft, Presence};
use formula::{
    BoundFunction, CallSite, ErrorCode, EvalContext, ExternalFunction, Format, FormulaError, Value, VarId,
};
use solver::{Instruction, ModKind, Rules, ScopeId, VarDefId};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// An object kind (RACE, EQUIPMENT, MOVEMENT, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KindId(pub u32);

/// An object of the ruleset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub u32);

/// A compiled object kind.
#[derive(Debug)]
pub struct Kind {
    pub name: Arc<str>,
    /// The scope the kind's objects (and their formulas) live in.
    pub scope: ScopeId,
    pub presence: Presence,
    /// Objects attach to a parent instance of `scope` instead of having their own.
    pub attach: bool,
    /// The scope of the kind's parts.
    pub parts: Option<ScopeId>,
    pub at: Origin,
}

/// A modifier ready to put on a sheet: the variable resolved, the type parsed, the value
/// compiled or parsed.
#[derive(Clone, Debug)]
pub struct ModTemplate {
    /// The template in the ruleset's catalog: what a character links (the fields below are
    /// what it was made from).
    pub template: solver::TemplateId,
    /// The variable's declared name.
    pub var: Arc<str>,
    pub def: VarDefId,
    pub kind: ModKind,
    pub value: Instruction,
    pub priority: u32,
    pub condition: Option<Instruction>,
    /// Where the modifier is written.
    pub at: Origin,
    /// What traces show as its source: `EQUIPMENT Estex Suit I (scr_equip.lst:120)`.
    pub source: Arc<str>,
}

/// Which instances a MODIFYOTHER reaches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Select {
    /// Objects whose key is this (lower case).
    Key(Arc<str>),
    All,
    /// Objects in this group (lower case).
    Group(Arc<str>),
}

/// A modifier on other objects' instances of `scope`.
#[derive(Clone, Debug)]
pub struct OtherMod {
    pub scope: ScopeId,
    pub select: Select,
    pub m: ModTemplate,
}

/// A compiled object.
#[derive(Debug)]
pub struct Object {
    pub kind: KindId,
    pub key: Arc<str>,
    /// The key in lower case, made once at load: keys match case-insensitively (a MODIFYOTHER's
    /// `KEY=` selection compares it, with no string made per comparison).
    pub folded_key: Arc<str>,
    pub name: Arc<str>,
    /// The category within the kind (PCGen abilities).
    pub category: Option<Arc<str>>,
    /// Lower-case group names.
    pub groups: Vec<Arc<str>>,
    pub modify: Vec<ModTemplate>,
    pub other: Vec<OtherMod>,
    pub grants: Vec<ObjectId>,
    /// Modifiers on parts: (part number from 1, modifier).
    pub parts: Vec<(u32, ModTemplate)>,
    /// How many parts an instance of this object has.
    pub part_count: u32,
    pub at: Origin,
    /// `KIND key`, used as the source of its modifiers in traces.
    pub label: Arc<str>,
}

/// A stock's bounds: NUMBER formulas compiled at load in the stock's scope, and what going past
/// them does.
#[derive(Clone, Debug)]
pub struct Stock {
    pub min: Option<solver::Instruction>,
    pub max: Option<solver::Instruction>,
    /// Out of bounds: clamp to the bound, or reject the step.
    pub clamp: bool,
}

/// Counts for `sheetd check`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub files: usize,
    pub scopes: usize,
    pub formats: usize,
    pub variables: usize,
    pub channels: usize,
    /// Of the channels, how many are clocks and how many stocks.
    pub clocks: usize,
    pub stocks: usize,
    pub functions: usize,
    pub kinds: usize,
    pub objects: usize,
    pub modifiers: usize,
    pub skipped_tokens: usize,
}

/// A compiled ruleset. Immutable, `Send + Sync`, shared by every sheet that uses it.
///
/// Aligned to 128 bytes, so that in its `Arc` the reference counts (which every character
/// made and dropped changes) are not on the cache line of the fields every character reads.
#[repr(align(128))]
pub struct Ruleset {
    rules: Arc<Rules>,
    /// Every modifier template of its objects and global modifiers, checked once; each
    /// character's sheet links them by index.
    catalog: Arc<solver::Catalog>,
    kinds: Vec<Kind>,
    kind_names: Map<String, KindId>,
    objects: Vec<Object>,
    /// Objects by kind (its index), then by key in lower case.
    object_index: Vec<Map<Box<str>, Vec<ObjectId>>>,
    global_mods: Vec<ModTemplate>,
    channels: crate::Set<VarDefId>,
    /// The channels that are stocks, with their bounds.
    stocks: crate::Map<VarDefId, Stock>,
    /// The channels that are clocks.
    clocks: crate::Set<VarDefId>,
    var_origins: Vec<Origin>,
    skipped: BTreeMap<String, Vec<Origin>>,
    files: Vec<String>,
    summary: Summary,
    warnings: Vec<Diagnostic>,
    /// Sections a layer above reads (`[events]`, `[[rule]]`), as written.
    sections: Vec<(crate::Text, crate::draft::Raw)>,
    /// What is built from the ruleset on first use and kept with it.
    pub(crate) later: Later,
}

/// The parts of a ruleset built on first use, not at compile time.
#[derive(Default)]
pub(crate) struct Later {
    /// A new character's starting state — global modifiers and objects always present, solved —
    /// built once, on the first [`crate::Character::new`], and copied for every character after.
    pub(crate) blank: std::sync::OnceLock<Result<crate::character::Blank, crate::SheetError>>,
    /// What a layer above derives from the ruleset once and reads for every character (see
    /// [`Ruleset::derived`]): one slot, filled on first use.
    derived: std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>,
}

impl std::fmt::Debug for Ruleset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ruleset").field("summary", &self.summary).finish()
    }
}

impl Ruleset {
    /// Checks a draft and compiles it, or returns every problem found (never just the first).
    pub fn compile(draft: Draft) -> Result<Ruleset, Vec<Diagnostic>> {
        compile::Compiler::default().run(draft)
    }

    /// Data a layer above derives from this ruleset and reads for every character — the
    /// server's encoded variable names, say — made by `make` on first use and kept as long as
    /// the ruleset. The ruleset holds one such slot: it is `None` when the slot already holds
    /// data of another type, and the caller then does without.
    pub fn derived<T: std::any::Any + Send + Sync>(&self, make: impl FnOnce(&Ruleset) -> T) -> Option<&T> {
        self.later.derived.get_or_init(|| Box::new(make(self))).downcast_ref()
    }

    /// The solver rules: scopes, variables, defaults, functions, formats.
    pub fn rules(&self) -> &Arc<Rules> {
        &self.rules
    }

    /// The modifier templates every character links (see [`ModTemplate::template`]).
    pub fn catalog(&self) -> &Arc<solver::Catalog> {
        &self.catalog
    }

    /// The object kinds.
    pub fn kinds(&self) -> &[Kind] {
        &self.kinds
    }

    /// A kind by name (case-insensitive).
    pub fn kind(&self, name: &str) -> Option<KindId> {
        // Kinds are keyed in capitals, as requests usually write them: no copy then.
        if let Some(&k) = self.kind_names.get(name) {
            return Some(k);
        }
        self.kind_names.get(&name.to_ascii_uppercase()).copied()
    }

    /// A kind's definition.
    pub fn kind_def(&self, id: KindId) -> &Kind {
        &self.kinds[id.0 as usize]
    }

    /// Every object, in reading order.
    pub fn objects(&self) -> &[Object] {
        &self.objects
    }

    /// An object's definition.
    pub fn object(&self, id: ObjectId) -> &Object {
        &self.objects[id.0 as usize]
    }

    /// The objects of `kind` with `key` (case-insensitive); usually one. Where objects of
    /// several categories share a key (PCGen abilities), `CATEGORY=FEAT|Skill Focus` picks one.
    /// Held inline: finding an object allocates nothing.
    pub fn find(&self, kind: KindId, key: &str) -> smallvec::SmallVec<[ObjectId; 2]> {
        let (category, key) = match key.strip_prefix("CATEGORY=").and_then(|r| r.split_once('|')) {
            Some((c, k)) => (Some(c), k),
            None => (None, key),
        };
        // Lower case on the stack for a short ASCII key (nearly every key): no allocation.
        let mut buf = [0u8; 64];
        let by_key = self.object_index.get(kind.0 as usize);
        let all = match key.len() <= buf.len() && key.is_ascii() {
            true => {
                let lower = &mut buf[..key.len()];
                lower.copy_from_slice(key.as_bytes());
                lower.make_ascii_lowercase();
                // ASCII stays ASCII: valid UTF-8.
                std::str::from_utf8(lower).ok().and_then(|k| by_key?.get(k))
            }
            false => by_key.and_then(|m| m.get(key.to_lowercase().as_str())),
        };
        let all = all.map_or(&[][..], Vec::as_slice);
        all.iter()
            .copied()
            .filter(|o| match category {
                None => true,
                Some(c) => self.object(*o).category.as_deref().is_some_and(|x| x.eq_ignore_ascii_case(c)),
            })
            .collect()
    }

    /// The modifiers that always apply, on the global instance.
    pub fn global_modifiers(&self) -> &[ModTemplate] {
        &self.global_mods
    }

    /// Whether a variable is a channel (entered by the user).
    pub fn is_channel(&self, var: VarDefId) -> bool {
        self.channels.contains(&var)
    }

    /// Whether a channel is a clock (`[clocks]`): it moves only forward, by `tick` and
    /// `set_clock`.
    pub fn is_clock(&self, var: VarDefId) -> bool {
        // (Most rulesets have none: no hashing then.)
        !self.clocks.is_empty() && self.clocks.contains(&var)
    }

    /// The sections of the native format that a layer above this crate interprets
    /// ([`crate::draft::LAYER_SECTIONS`]) named `name`, as written, in reading order (an
    /// `[[rule]]` array read from two files gives two entries).
    pub fn sections<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a crate::draft::Raw> + 'a {
        self.sections.iter().filter(move |(n, _)| &*n.text == name).map(|(_, r)| r)
    }

    /// The stock a channel is, if it is one (`[stocks]`): its bounds, compiled.
    pub fn stock(&self, var: VarDefId) -> Option<&Stock> {
        // (Most rulesets have none: no hashing then.)
        if self.stocks.is_empty() { None } else { self.stocks.get(&var) }
    }

    /// Where a variable was (first) declared.
    pub fn variable_origin(&self, var: VarDefId) -> &Origin {
        &self.var_origins[var.0 as usize]
    }

    /// Tokens that were read but are not part of the formula system, with where each was.
    pub fn skipped(&self) -> &BTreeMap<String, Vec<Origin>> {
        &self.skipped
    }

    /// The files read, in order.
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// Problems that did not stop loading (an object defined twice: the first is kept).
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// Counts of everything loaded.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }
}

/// `input("CHANNEL")`: reads a channel variable visible from the formula's scope.
struct Input {
    channels: HashSet<u32>,
}

#[derive(Debug)]
struct BoundInput {
    var: VarId,
    format: Format,
}

impl ExternalFunction for Input {
    fn name(&self) -> &str {
        "input"
    }

    fn bind(&self, site: &mut CallSite<'_>) -> Result<Arc<dyn BoundFunction>, FormulaError> {
        site.expect_arity(1)?;
        let arg = site.args()[0].clone();
        let Some(Value::String(channel)) = arg.constant else {
            return Err(FormulaError::new(
                ErrorCode::InvalidArgument,
                arg.span,
                "`input` takes the channel's name as a string literal, e.g. input(\"STATSCORE\")",
            ));
        };
        let (var, format) = site.resolve_variable(&channel, arg.span)?;
        if !self.channels.contains(&var.0) {
            return Err(FormulaError::new(
                ErrorCode::InvalidArgument,
                arg.span,
                format!("`{channel}` is a variable, not a channel (declare it with CHANNEL)"),
            ));
        }
        Ok(Arc::new(BoundInput { var, format }))
    }
}

impl BoundFunction for BoundInput {
    fn format(&self) -> Format {
        self.format.clone()
    }

    fn eval(&self, _args: &[Value], read: &dyn EvalContext) -> Result<Value, String> {
        read.value(self.var).ok_or_else(|| "the channel has no value".to_owned())
    }

    fn as_variable(&self) -> Option<VarId> {
        Some(self.var)
    }
}

/// The diagnostic for a formula error in `text`, pointing at the span inside it.
pub(crate) fn formula_diag(
    code: crate::diag::DiagCode,
    text: &Text,
    e: &FormulaError,
    what: &str,
) -> Diagnostic {
    let (start, end) = (e.span.start as usize, e.span.end as usize);
    let (start, end) = (start.min(text.text.len()), end.min(text.text.len()));
    let at = if text.text.is_char_boundary(start) && text.text.is_char_boundary(end) && end >= start {
        text.slice(start, end)
    } else {
        text.clone()
    };
    let mut d = Diagnostic::at(code, &at, format!("{what} `{}`: {} [{}]", text.text, e.message, e.code));
    if let Some(h) = &e.help {
        d = d.with_help(h.clone());
    }
    d
}
