//! The compiled ruleset: a [`Draft`] checked and turned into solver rules plus game objects
//! whose modifiers are ready to put on a sheet.
//!
//! Compiling checks everything once: scopes, formats, defaults, functions, declarations, and
//! every object's modifiers (variable visible from the object's scope, type fitting the format,
//! formula compiled, literal parsed, PRIORITY a whole number). Nothing is parsed again when a
//! sheet adds an object. The result is immutable and `Send + Sync`; sheets share it in an `Arc`.

use crate::Map;
use crate::diag::{Diagnostic, Origin, Text, codes};
use crate::draft::{Draft, FormatKind, ModDraft, Presence, Selector};
use crate::formats::{Dice, Enumeration, OrderedPair};
use formula::{
    BoundFunction, CallSite, ErrorCode, EvalContext, ExternalFunction, Format, FormulaError, Value, VarId,
};
use solver::{Instruction, ModKind, Rules, RulesBuilder, ScopeId, VarDefId};
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

/// Counts for `sheetd check`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub files: usize,
    pub scopes: usize,
    pub formats: usize,
    pub variables: usize,
    pub channels: usize,
    pub functions: usize,
    pub kinds: usize,
    pub objects: usize,
    pub modifiers: usize,
    pub skipped_tokens: usize,
}

/// A compiled ruleset. Immutable, `Send + Sync`, shared by every sheet that uses it.
pub struct Ruleset {
    rules: Arc<Rules>,
    kinds: Vec<Kind>,
    kind_names: Map<String, KindId>,
    objects: Vec<Object>,
    object_index: Map<(KindId, String), Vec<ObjectId>>,
    global_mods: Vec<ModTemplate>,
    channels: HashSet<VarDefId>,
    var_origins: Vec<Origin>,
    skipped: BTreeMap<String, Vec<Origin>>,
    files: Vec<String>,
    summary: Summary,
    warnings: Vec<Diagnostic>,
}

impl std::fmt::Debug for Ruleset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ruleset").field("summary", &self.summary).finish()
    }
}

impl Ruleset {
    /// Checks a draft and compiles it, or returns every problem found (never just the first).
    pub fn compile(draft: Draft) -> Result<Ruleset, Vec<Diagnostic>> {
        Compiler::default().run(draft)
    }

    /// The solver rules: scopes, variables, defaults, functions, formats.
    pub fn rules(&self) -> &Arc<Rules> {
        &self.rules
    }

    /// The object kinds.
    pub fn kinds(&self) -> &[Kind] {
        &self.kinds
    }

    /// A kind by name (case-insensitive).
    pub fn kind(&self, name: &str) -> Option<KindId> {
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
    pub fn find(&self, kind: KindId, key: &str) -> Vec<ObjectId> {
        let (category, key) = match key.strip_prefix("CATEGORY=").and_then(|r| r.split_once('|')) {
            Some((c, k)) => (Some(c), k),
            None => (None, key),
        };
        let all = self.object_index.get(&(kind, key.to_lowercase())).map_or(&[][..], Vec::as_slice);
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
}

/// The diagnostic for a formula error in `text`, pointing at the span inside it.
pub(crate) fn formula_diag(code: &'static str, text: &Text, e: &FormulaError, what: &str) -> Diagnostic {
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

#[derive(Default)]
struct Compiler {
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
}

impl Compiler {
    fn run(mut self, draft: Draft) -> Result<Ruleset, Vec<Diagnostic>> {
        self.errors = draft.errors.clone();
        let global_name = draft.global.as_ref().map_or("PC", |t| &*t.text).to_owned();
        let mut b = RulesBuilder::new(&global_name);

        // Scopes, parents first whatever the order they were written in.
        let mut pending: Vec<_> = draft.scopes.iter().collect();
        while !pending.is_empty() {
            let before = pending.len();
            let mut later = Vec::new();
            for sc in pending {
                if b.scope(&sc.parent.text).is_ok() {
                    if let Err(e) = b.add_scope(&sc.name.text, &sc.parent.text) {
                        self.errors.push(Diagnostic::at(codes::BAD_SCOPE, &sc.name, e.message));
                    }
                } else {
                    later.push(sc);
                }
            }
            if later.len() == before {
                for sc in later {
                    self.errors.push(Diagnostic::at(
                        codes::UNKNOWN_SCOPE,
                        &sc.parent,
                        format!("scope `{}`: its parent `{}` is not defined", sc.name, sc.parent),
                    ));
                }
                break;
            }
            pending = later;
        }

        // Formats, with the enumeration values data files add.
        for f in &draft.formats {
            let t: Arc<dyn formula::FormatType> = match &f.kind {
                FormatKind::OrderedPair => Arc::new(OrderedPair),
                FormatKind::Dice => Arc::new(Dice),
                FormatKind::Enumeration(values) => {
                    let mut all: Vec<Arc<str>> = Vec::new();
                    let extra = draft
                        .enum_values
                        .iter()
                        .filter(|(n, _)| n.eq_ignore_ascii_case(&f.name.text))
                        .map(|(_, v)| v);
                    for v in values.iter().chain(extra) {
                        if !all.iter().any(|a| a.eq_ignore_ascii_case(&v.text)) {
                            all.push(v.text.clone());
                        }
                    }
                    Arc::new(Enumeration::new(&f.name.text.to_ascii_uppercase(), all))
                }
            };
            if let Err(e) = b.register_format(t) {
                self.errors.push(Diagnostic::at(codes::BAD_FORMAT, &f.name, e.message));
            }
        }
        for (name, v) in &draft.enum_values {
            if !draft.formats.iter().any(|f| f.name.text.eq_ignore_ascii_case(name)) {
                self.errors.push(Diagnostic::at(
                    codes::UNKNOWN_FORMAT,
                    v,
                    format!("`{}` is a value of format `{name}`, which is not defined", v.text),
                ));
            }
        }
        for (format, value) in &draft.defaults {
            let f = match b.formats().parse(&format.text) {
                Ok(f) => f,
                Err(m) => {
                    self.errors.push(Diagnostic::at(codes::UNKNOWN_FORMAT, format, m));
                    continue;
                }
            };
            match Value::parse_literal(&f, &value.text) {
                Ok(v) => {
                    if let Err(e) = b.set_default(f, v) {
                        self.errors.push(Diagnostic::at(codes::BAD_FORMAT, value, e.message));
                    }
                }
                Err(m) => self.errors.push(Diagnostic::at(
                    codes::BAD_FORMAT,
                    value,
                    format!("default for {format}: {m}"),
                )),
            }
        }
        for (name, body) in &draft.functions {
            if let Err(e) = b.define_function(&name.text, &body.text) {
                match e.formula.as_deref() {
                    Some((fe, _)) if fe.code != ErrorCode::BadFunctionDefinition => self.errors.push(
                        formula_diag(codes::BAD_FUNCTION, body, fe, &format!("function `{}`", name.text)),
                    ),
                    Some((fe, _)) => {
                        self.errors.push(Diagnostic::at(codes::BAD_FUNCTION, name, fe.message.clone()))
                    }
                    None => self.errors.push(Diagnostic::at(codes::BAD_FUNCTION, name, e.message)),
                }
            }
        }

        // Variables and channels.
        let mut channels = HashSet::new();
        let mut var_origins: Vec<Option<Origin>> = Vec::new();
        for v in &draft.variables {
            let format = match b.formats().parse(&v.format.text) {
                Ok(f) => f,
                Err(m) => {
                    self.errors.push(Diagnostic::at(codes::UNKNOWN_FORMAT, &v.format, m));
                    continue;
                }
            };
            if b.scope(&v.scope.text).is_err() {
                self.errors.push(Diagnostic::at(
                    codes::UNKNOWN_SCOPE,
                    &v.scope,
                    format!("variable `{}`: unknown scope `{}`", v.name, v.scope),
                ));
                continue;
            }
            match b.declare(&v.name.text, &v.scope.text, format, false) {
                Ok(id) => {
                    if var_origins.len() <= id.0 as usize {
                        var_origins.resize(id.0 as usize + 1, None);
                    }
                    var_origins[id.0 as usize].get_or_insert_with(|| v.name.at.clone());
                    if v.channel {
                        channels.insert(id.0);
                    }
                }
                Err(e) => self.errors.push(Diagnostic::at(codes::VARIABLE_CONFLICT, &v.name, e.message)),
            }
        }
        let channel_set: HashSet<VarDefId> = channels.iter().map(|&c| VarDefId(c)).collect();
        if let Err(e) = b.library_mut().add_external(Arc::new(Input { channels })) {
            // Only possible when the data defines its own `input` function.
            let at = draft.functions.iter().find(|(n, _)| n.text.eq_ignore_ascii_case("input"));
            match at {
                Some((n, _)) => self.errors.push(Diagnostic::at(
                    codes::BAD_FUNCTION,
                    n,
                    format!("`input` reads channels and cannot be redefined ({})", e.message),
                )),
                None => self.errors.push(Diagnostic::nowhere(codes::BAD_FUNCTION, e.message)),
            }
        }

        // Kinds.
        let mut kinds: Vec<Kind> = Vec::new();
        let mut kind_names: Map<String, KindId> = Map::default();
        for k in &draft.kinds {
            let key = k.name.text.to_ascii_uppercase();
            if kind_names.contains_key(&key) {
                self.errors.push(Diagnostic::at(
                    codes::BAD_SCOPE,
                    &k.name,
                    format!("object kind `{}` is defined twice", k.name),
                ));
                continue;
            }
            let Ok(scope) = b.scope(&k.scope.text) else {
                self.errors.push(Diagnostic::at(
                    codes::UNKNOWN_SCOPE,
                    &k.scope,
                    format!("object kind `{}`: unknown scope `{}`", k.name, k.scope),
                ));
                continue;
            };
            let parts = match &k.parts {
                None => None,
                Some(p) => match b.scope(&p.text) {
                    Ok(s) => Some(s),
                    Err(_) => {
                        self.errors.push(Diagnostic::at(
                            codes::UNKNOWN_SCOPE,
                            p,
                            format!("object kind `{}`: unknown part scope `{}`", k.name, p),
                        ));
                        None
                    }
                },
            };
            kind_names.insert(key, KindId(kinds.len() as u32));
            kinds.push(Kind {
                name: k.name.text.clone(),
                scope,
                presence: k.presence,
                attach: k.attach,
                parts,
                at: k.name.at.clone(),
            });
        }

        let rules = Arc::new(b.build());
        let var_origins: Vec<Origin> = (0..rules.vars().len())
            .map(|i| var_origins.get(i).cloned().flatten().unwrap_or_else(|| Origin::builtin("(built in)")))
            .collect();
        for (k, kd) in draft.kinds.iter().zip(&kinds) {
            if let Some(p) = kd.parts
                && rules.scope_def(p).parent != Some(kd.scope)
            {
                self.errors.push(Diagnostic::at(
                    codes::BAD_SCOPE,
                    k.parts.as_ref().unwrap_or(&k.scope),
                    format!(
                        "object kind `{}`: its part scope {} must be a child of its scope {}",
                        kd.name,
                        rules.scope_def(p).name,
                        rules.scope_def(kd.scope).name
                    ),
                ));
            }
        }

        // Objects: index first (GRANT refers to objects defined anywhere), then compile.
        let mut object_index: Map<(KindId, String), Vec<ObjectId>> = Map::default();
        let mut object_kinds: Vec<Option<KindId>> = Vec::new();
        for (i, o) in draft.objects.iter().enumerate() {
            let kind = kind_names.get(&o.kind.text.to_ascii_uppercase()).copied();
            match kind {
                None => self.errors.push(Diagnostic::at(
                    codes::UNKNOWN_KIND,
                    &o.kind,
                    format!("object `{}`: unknown object kind `{}`", o.key, o.kind),
                )),
                Some(k) => {
                    let ids = object_index.entry((k, o.key.text.to_lowercase())).or_default();
                    let same_category = |x: &ObjectId| {
                        let c = |o: &crate::draft::ObjectDraft| {
                            o.category.as_ref().map(|c| c.text.to_lowercase())
                        };
                        c(&draft.objects[x.0 as usize]) == c(o)
                    };
                    match ids.iter().find(|x| same_category(x)) {
                        None => ids.push(ObjectId(i as u32)),
                        Some(first) => {
                            // PCGen data has a few of these; the first definition is kept.
                            let first = &draft.objects[first.0 as usize];
                            self.warnings.push(Diagnostic::at(
                                codes::DUPLICATE_OBJECT,
                                &o.key,
                                format!(
                                    "{} `{}` is already defined at {}; this definition is ignored",
                                    kinds[k.0 as usize].name, o.key, first.key.at
                                ),
                            ));
                        }
                    }
                }
            }
            object_kinds.push(kind);
        }
        let mut objects: Vec<Object> = Vec::with_capacity(draft.objects.len());
        for (o, kind) in draft.objects.iter().zip(&object_kinds) {
            // Objects of an unknown kind keep their place so ids stay aligned; they were reported.
            let (kind, scope) = match kind {
                Some(k) => (*k, kinds[k.0 as usize].scope),
                None => (KindId(u32::MAX), rules.global()),
            };
            let known = kind.0 != u32::MAX;
            let kind_name = if known { kinds[kind.0 as usize].name.clone() } else { o.kind.text.clone() };
            let label = format!("{kind_name} {}", o.key.text);
            let mut modify = Vec::new();
            if known {
                for m in &o.modify {
                    if let Some(t) = self.modifier(&rules, scope, m, &label) {
                        modify.push(t);
                    }
                }
            }
            let mut other = Vec::new();
            for od in &o.other {
                let Ok(target) = rules.scope(&od.scope.text) else {
                    self.errors.push(Diagnostic::at(
                        codes::UNKNOWN_SCOPE,
                        &od.scope,
                        format!("unknown scope `{}`", od.scope),
                    ));
                    continue;
                };
                let select = match &od.select {
                    Selector::All => Select::All,
                    Selector::Key(k) => Select::Key(Arc::from(k.text.to_lowercase())),
                    Selector::Group(g) => Select::Group(Arc::from(g.text.to_lowercase())),
                };
                // PCGen reads a MODIFYOTHER's formula in the target's scope.
                if let Some(m) = self.modifier(&rules, target, &od.m, &label) {
                    other.push(OtherMod { scope: target, select, m });
                }
            }
            let mut grants = Vec::new();
            for g in &o.grants {
                let Some(&gk) = kind_names.get(&g.kind.text.to_ascii_uppercase()) else {
                    self.errors.push(Diagnostic::at(
                        codes::UNKNOWN_KIND,
                        &g.kind,
                        format!("GRANT: unknown object kind `{}`", g.kind),
                    ));
                    continue;
                };
                match object_index.get(&(gk, g.key.text.to_lowercase())) {
                    Some(ids) if kinds[gk.0 as usize].presence == Presence::Granted => grants.push(ids[0]),
                    Some(_) => self.errors.push(Diagnostic::at(
                        codes::UNKNOWN_OBJECT,
                        &g.kind,
                        format!(
                            "GRANT: {} objects are not granted (only dynamic objects are)",
                            kinds[gk.0 as usize].name
                        ),
                    )),
                    None => self.errors.push(Diagnostic::at(
                        codes::UNKNOWN_OBJECT,
                        &g.key,
                        format!("GRANT: there is no {} `{}`", kinds[gk.0 as usize].name, g.key),
                    )),
                }
            }
            let mut parts = Vec::new();
            let mut part_count = o.part_count;
            if known && !o.parts.is_empty() {
                match kinds[kind.0 as usize].parts {
                    None => {
                        for (_, m) in &o.parts {
                            self.errors.push(Diagnostic::at(
                                codes::BAD_PART,
                                &m.var,
                                format!("{} objects have no parts", kinds[kind.0 as usize].name),
                            ));
                        }
                    }
                    Some(ps) => {
                        for (n, m) in &o.parts {
                            if let Some(t) = self.modifier(&rules, ps, m, &label) {
                                parts.push((*n, t));
                            }
                            part_count = part_count.max(*n);
                        }
                    }
                }
            }
            if known && kinds[kind.0 as usize].parts.is_some() {
                part_count = part_count.max(1);
            }
            objects.push(Object {
                kind,
                key: o.key.text.clone(),
                name: o.name.text.clone(),
                category: o.category.as_ref().map(|c| c.text.clone()),
                groups: o.groups.iter().map(|g| Arc::from(g.text.to_lowercase())).collect(),
                modify,
                other,
                grants,
                parts,
                part_count,
                at: o.at.clone(),
                label: Arc::from(label),
            });
        }
        let mut global_mods = Vec::new();
        for m in &draft.global_mods {
            if let Some(t) = self.modifier(&rules, rules.global(), m, "global modifier") {
                global_mods.push(t);
            }
        }

        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        let modifiers = global_mods.len()
            + objects.iter().map(|o| o.modify.len() + o.other.len() + o.parts.len()).sum::<usize>();
        let summary = Summary {
            files: draft.files.len(),
            scopes: rules.scopes().len(),
            formats: draft.formats.len(),
            variables: rules.vars().len() - channel_set.len(),
            channels: channel_set.len(),
            functions: draft.functions.len(),
            kinds: kinds.len(),
            objects: objects.len(),
            modifiers,
            skipped_tokens: draft.skipped.values().map(Vec::len).sum(),
        };
        Ok(Ruleset {
            rules,
            kinds,
            kind_names,
            objects,
            object_index,
            global_mods,
            channels: channel_set,
            var_origins,
            skipped: draft.skipped,
            files: draft.files,
            summary,
            warnings: self.warnings,
        })
    }

    /// Checks one modifier as seen from `scope`; reports and returns `None` when it is wrong.
    fn modifier(&mut self, rules: &Rules, scope: ScopeId, m: &ModDraft, label: &str) -> Option<ModTemplate> {
        let scope_name = &rules.scope_def(scope).name;
        let Some(def) = rules.resolve(scope, &m.var.text) else {
            self.errors.push(Diagnostic::at(
                codes::UNKNOWN_VARIABLE,
                &m.var,
                format!("variable `{}` is not defined in scope {scope_name} or its ancestors", m.var),
            ));
            return None;
        };
        let var = rules.var(def);
        let kind = match ModKind::parse(&m.kind.text, &var.format) {
            Ok(k) => k,
            Err(msg) => {
                self.errors.push(Diagnostic::at(
                    codes::BAD_MODIFIER_TYPE,
                    &m.kind,
                    format!("modifier on `{}`: {msg}", var.name),
                ));
                return None;
            }
        };
        let priority = match &m.priority {
            None => 0,
            Some(p) => match p.text.parse::<u32>() {
                Ok(n) if p.text.bytes().all(|b| b.is_ascii_digit()) => n,
                _ => {
                    self.errors.push(Diagnostic::at(
                        codes::BAD_PRIORITY,
                        p,
                        format!("PRIORITY must be a whole number from 0 to {}, not `{}`", u32::MAX, p.text),
                    ));
                    return None;
                }
            },
        };
        let value_format = kind.value_format(&var.format);
        let value = self.value(rules, scope, &m.value, &var.format, &value_format)?;
        let condition = match &m.condition {
            None => None,
            Some(c) => match rules.compile(&c.text, scope, Some(&var.format), Some(&Format::Boolean)) {
                Ok(f) => Some(Instruction::Compiled(f)),
                Err(e) => {
                    self.errors.push(formula_diag(codes::FORMULA, c, &e, "condition"));
                    return None;
                }
            },
        };
        let source = match m.at.line() {
            0 => Arc::from(label),
            line => Arc::from(format!("{label} ({}:{line})", m.at.file())),
        };
        Some(ModTemplate {
            var: var.name.clone(),
            def,
            kind,
            value,
            priority,
            condition,
            at: m.at.clone(),
            source,
        })
    }

    /// A modifier value: a literal for formats without formulas, else a compiled formula.
    fn value(
        &mut self,
        rules: &Rules,
        scope: ScopeId,
        text: &Text,
        input: &Format,
        expected: &Format,
    ) -> Option<Instruction> {
        let literal = match expected {
            Format::String | Format::Custom(_) => true,
            Format::Boolean => {
                let t = text.text.trim();
                t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("false")
            }
            _ => false,
        };
        if literal {
            return match Value::parse_literal(expected, &text.text) {
                Ok(v) => Some(Instruction::Literal(v, text.text.clone())),
                Err(m) => {
                    self.errors.push(Diagnostic::at(codes::BAD_VALUE, text, m));
                    None
                }
            };
        }
        match rules.compile(&text.text, scope, Some(input), Some(expected)) {
            Ok(f) => Some(Instruction::Compiled(f)),
            Err(e) => {
                self.errors.push(formula_diag(codes::FORMULA, text, &e, "formula"));
                None
            }
        }
    }
}
