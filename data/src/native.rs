//! sheetd's native ruleset format: TOML, documented in `docs/ruleset-format.md`.
//!
//! A ruleset is one `.toml` file or a directory of them (read in file-name order, each on top of
//! the ones before). Every value keeps its position, so each problem points at file:line:col
//! with the offending text. Sections:
//!
//! ```toml
//! [ruleset]       # name = "...", global = "PC"
//! [scopes]        # "PC.EQUIPMENT" = "PC"          (scope = parent)
//! [formats]       # DICE = "dice", ORDEREDPAIR = "ordered-pair", HANDED = ["Right", "Left"]
//! [defaults]      # NUMBER = 0, HANDED = "Right"
//! [functions]     # abilityMod = "floor((arg(0)-10)/2)"
//! [variables.PC]  # AC = "NUMBER"                  (per scope: name = format)
//! [channels."PC.ABILITY"]  # Score = "NUMBER"      (values the user enters)
//! [kinds.EQUIPMENT]        # scope, presence = "listed" | "always" | "granted", attach, parts
//! [global]        # modify = [...]                 (modifiers that always apply)
//! [[object]]      # kind, key, name, groups, modify, modify_other, grant, parts, part_modify
//! ```
//!
//! A modifier is a table: `{ var = "AC", add = "2", priority = 10, when = "Armored" }` — the
//! variable, exactly one type key (`set`, `add`, `multiply`, `divide`, `max`, `min`, `append`)
//! with the value, and optionally a user priority and a condition.

use crate::diag::{Diagnostic, Origin, SourceFile, Text, codes};
use crate::draft::{
    Draft, FormatDecl, FormatKind, GrantDraft, KindDecl, ModDraft, ObjectDraft, OtherDraft, Presence,
    ScopeDecl, Selector, StockDecl, VarDecl,
};
use crate::source::Files;
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The sections of a native ruleset file.
const SECTIONS: &[&str] = &[
    "ruleset",
    "scopes",
    "formats",
    "defaults",
    "functions",
    "variables",
    "channels",
    "stocks",
    "clocks",
    "kinds",
    "global",
    "object",
    "events",
    "rule",
];

/// The keys of an `[[object]]`.
const OBJECT_KEYS: &[&str] =
    &["kind", "key", "name", "groups", "modify", "modify_other", "grant", "parts", "part_modify"];

/// Reads a native ruleset (a `.toml` file or a directory of them) into `draft`, through `files`.
pub fn read(path: &Path, files: &Files, draft: &mut Draft) {
    if files.is_dir(path) {
        let list = match files.list(path, "toml") {
            Ok(list) => list,
            Err(e) => {
                draft.errors.push(Diagnostic::nowhere(codes::FILE, e));
                return;
            }
        };
        if list.is_empty() {
            draft.errors.push(Diagnostic::nowhere(
                codes::FILE,
                format!(
                    "{} holds no .toml files (a ruleset is a .toml file, a directory of them, or a .pcc)",
                    path.display()
                ),
            ));
        }
        for f in list {
            read_file(&f, files, draft);
        }
    } else {
        read_file(path, files, draft);
    }
}

/// Reads native ruleset text (as if from file `name`) into `draft`.
pub fn read_str(text: &str, name: &str, draft: &mut Draft) {
    read_source(SourceFile::new(name, Arc::from(text)), draft);
}

/// Reads a source file's text into `draft`; its origins share the file's text.
fn read_source(file: Arc<SourceFile>, draft: &mut Draft) {
    draft.files.push(file.name.to_string());
    let source = file.clone();
    let text = source.text();
    let cx = Cx::new(file, text);
    let table = match DeTable::parse(text) {
        Ok(t) => t,
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            let mut d = Diagnostic::at(
                codes::SYNTAX,
                &cx.text_at(span.clone(), false),
                e.message().trim().to_owned(),
            );
            if d.text.is_empty() {
                d.text = " ".to_owned();
            }
            draft.errors.push(d);
            return;
        }
    };
    Reader { cx, draft }.document(table.get_ref());
}

fn read_file(path: &Path, files: &Files, draft: &mut Draft) {
    match files.read(path) {
        Ok(text) => read_source(SourceFile::new(&path.display().to_string(), text), draft),
        Err(e) => draft.errors.push(Diagnostic::nowhere(codes::FILE, e)),
    }
}

/// A file's text, for turning byte spans into origins.
struct Cx<'s> {
    file: Arc<SourceFile>,
    src: &'s str,
}

impl<'s> Cx<'s> {
    fn new(file: Arc<SourceFile>, src: &'s str) -> Self {
        Cx { file, src }
    }

    fn origin(&self, at: usize) -> Origin {
        self.file.origin(at)
    }

    /// The source text of `span`; for a string value (`strip`), the content inside its quotes.
    fn text_at(&self, span: std::ops::Range<usize>, strip: bool) -> Text {
        let raw = self.src.get(span.clone()).unwrap_or("");
        let quote = if !strip {
            0
        } else if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
            3
        } else if raw.starts_with('"') || raw.starts_with('\'') {
            1
        } else {
            0
        };
        Text { text: Arc::from(raw), at: self.origin(span.start + quote) }
    }

    /// A value as text: a string's content, a number's or boolean's literal.
    fn value_text(&self, v: &Spanned<DeValue<'_>>) -> Option<Text> {
        let mut t = self.text_at(v.span(), true);
        t.text = match v.get_ref() {
            DeValue::String(s) => Arc::from(&**s),
            DeValue::Integer(i) => Arc::from(i.as_str()),
            DeValue::Float(f) => Arc::from(f.as_str()),
            DeValue::Boolean(b) => Arc::from(if *b { "true" } else { "false" }),
            _ => return None,
        };
        Some(t)
    }

    fn key_text(&self, k: &Spanned<std::borrow::Cow<'_, str>>) -> Text {
        let mut t = self.text_at(k.span(), true);
        t.text = Arc::from(&**k.get_ref());
        t
    }
}

struct Reader<'a, 's> {
    cx: Cx<'s>,
    draft: &'a mut Draft,
}

type Entry<'x, 'i> = (&'x Spanned<std::borrow::Cow<'i, str>>, &'x Spanned<DeValue<'i>>);

impl Reader<'_, '_> {
    fn error(&mut self, span: std::ops::Range<usize>, message: String) {
        let t = self.cx.text_at(span, false);
        self.draft.errors.push(Diagnostic::at(codes::SYNTAX, &t, message));
    }

    /// `unknown key `other` in WHERE (expected …)`, with "did you mean" the nearest expected key.
    fn unknown_key(&mut self, span: std::ops::Range<usize>, what: &str, other: &str, expected: &[&str]) {
        let t = self.cx.text_at(span, false);
        let message = format!("unknown {what} (expected {})", expected.join(", "));
        let d = Diagnostic::at(codes::SYNTAX, &t, message).suggest(other, expected.iter().copied());
        self.draft.errors.push(d);
    }

    fn table<'x, 'i>(&mut self, v: &'x Spanned<DeValue<'i>>, what: &str) -> Option<&'x DeTable<'i>> {
        match v.get_ref() {
            DeValue::Table(t) => Some(t),
            other => {
                self.error(v.span(), format!("{what} must be a table, not a {}", other.type_str()));
                None
            }
        }
    }

    fn text(&mut self, v: &Spanned<DeValue<'_>>, what: &str) -> Option<Text> {
        let t = self.cx.value_text(v);
        if t.is_none() {
            self.error(v.span(), format!("{what} must be a string, number or boolean"));
        }
        t
    }

    fn string(&mut self, v: &Spanned<DeValue<'_>>, what: &str) -> Option<Text> {
        match v.get_ref() {
            DeValue::String(_) => self.cx.value_text(v),
            other => {
                self.error(v.span(), format!("{what} must be a string, not a {}", other.type_str()));
                None
            }
        }
    }

    fn document(&mut self, doc: &DeTable<'_>) {
        for (k, v) in doc.iter() {
            match &**k.get_ref() {
                "ruleset" => self.ruleset(v),
                "scopes" => self.pairs(v, "[scopes]", |r, name, parent| {
                    let parent = r.string(parent, "a scope's parent")?;
                    r.draft.scopes.push(ScopeDecl { name, parent });
                    Some(())
                }),
                "formats" => self.pairs(v, "[formats]", |r, name, kind| r.format(name, kind)),
                "defaults" => self.pairs(v, "[defaults]", |r, format, value| {
                    let value = r.text(value, "a default")?;
                    r.draft.defaults.push((format, value));
                    Some(())
                }),
                "functions" => self.pairs(v, "[functions]", |r, name, body| {
                    let body = r.string(body, "a function body")?;
                    r.draft.functions.push((name, body));
                    Some(())
                }),
                "variables" | "channels" | "stocks" | "clocks" => self.declarations(k.get_ref(), v),
                "kinds" => self.pairs(v, "[kinds]", |r, name, def| r.kind(name, def)),
                "global" => {
                    let Some(t) = self.table(v, "[global]") else { continue };
                    for (gk, gv) in t.iter() {
                        if &**gk.get_ref() == "modify" {
                            let mods = self.mods(gv);
                            self.draft.global_mods.extend(mods);
                        } else {
                            let what = format!("key `{}` in [global]", gk.get_ref());
                            self.unknown_key(gk.span(), &what, gk.get_ref(), &["modify"]);
                        }
                    }
                }
                "object" => match v.get_ref() {
                    DeValue::Array(items) => {
                        for item in items.iter() {
                            self.object(item);
                        }
                    }
                    other => self.error(
                        v.span(),
                        format!(
                            "`object` must be an array of tables ([[object]]), not a {}",
                            other.type_str()
                        ),
                    ),
                },
                other if crate::draft::LAYER_SECTIONS.contains(&other) => {
                    let raw = self.raw(v);
                    self.draft.sections.push((self.cx.key_text(k), raw));
                }
                other => self.unknown_key(k.span(), &format!("section `{other}`"), other, SECTIONS),
            }
        }
    }

    /// A value kept as written, with positions, for the layer that owns its section.
    fn raw(&mut self, v: &Spanned<DeValue<'_>>) -> crate::draft::Raw {
        use crate::draft::{Raw, RawValue};
        let at = self.cx.value_text(v).unwrap_or_else(|| self.cx.text_at(v.span(), false));
        let value = match v.get_ref() {
            DeValue::String(_) => RawValue::String(at.clone()),
            DeValue::Integer(_) | DeValue::Float(_) => RawValue::Number(at.clone()),
            DeValue::Boolean(b) => RawValue::Boolean(*b),
            DeValue::Datetime(_) => {
                self.error(v.span(), "a date or time has no meaning here".to_owned());
                RawValue::String(at.clone())
            }
            DeValue::Array(items) => RawValue::Array(items.iter().map(|i| self.raw(i)).collect()),
            DeValue::Table(t) => {
                RawValue::Table(t.iter().map(|(k, v)| (self.cx.key_text(k), self.raw(v))).collect())
            }
        };
        Raw { at, value }
    }

    /// A section of variables: `[variables.SCOPE]` and `[channels.SCOPE]` (`Name = "FORMAT"`,
    /// or with an order), `[stocks.SCOPE]` (`Name = { min, max, bounds }`), `[clocks.SCOPE]`
    /// (`Name = {}`).
    fn declarations(&mut self, section: &str, v: &Spanned<DeValue<'_>>) {
        match section {
            "variables" | "channels" => {
                let channel = section == "channels";
                let what = if channel { "[channels]" } else { "[variables]" };
                self.pairs(v, what, |r, scope, vars| {
                    let t = r.table(vars, "a scope's variables")?;
                    for (name, decl) in t.iter() {
                        let name = r.cx.key_text(name);
                        if let Some((format, order, holds)) = r.variable(decl, channel) {
                            let (scope, stock, clock) = (scope.clone(), None, false);
                            let decl = VarDecl { name, scope, format, channel, order, stock, clock, holds };
                            r.draft.variables.push(decl);
                        }
                    }
                    Some(())
                })
            }
            "stocks" => self.pairs(v, "[stocks]", |r, scope, stocks| {
                let t = r.table(stocks, "a scope's stocks")?;
                for (name, decl) in t.iter() {
                    let name = r.cx.key_text(name);
                    if let Some(stock) = r.stock(decl) {
                        let decl =
                            VarDecl { stock: Some(stock), ..VarDecl::number_channel(name, scope.clone()) };
                        r.draft.variables.push(decl);
                    }
                }
                Some(())
            }),
            "clocks" => self.pairs(v, "[clocks]", |r, scope, clocks| {
                let t = r.table(clocks, "a scope's clocks")?;
                for (name, decl) in t.iter() {
                    let name = r.cx.key_text(name);
                    // `Name = {}`: a clock has nothing to declare but its name and scope.
                    match r.table(decl, "a clock's declaration (`{}`)") {
                        Some(t) if t.is_empty() => {}
                        Some(_) => {
                            r.error(decl.span(), "a clock's declaration is empty: `Turn = {}`".to_owned());
                            continue;
                        }
                        None => continue,
                    }
                    let decl = VarDecl { clock: true, ..VarDecl::number_channel(name, scope.clone()) };
                    r.draft.variables.push(decl);
                }
                Some(())
            }),
            _ => {}
        }
    }

    /// Calls `f` for each `key = value` of table `v`.
    fn pairs(
        &mut self,
        v: &Spanned<DeValue<'_>>,
        what: &str,
        mut f: impl FnMut(&mut Self, Text, &Spanned<DeValue<'_>>) -> Option<()>,
    ) {
        let Some(t) = self.table(v, what) else { return };
        for (k, v) in t.iter() {
            let key = self.cx.key_text(k);
            f(self, key, v);
        }
    }

    /// A variable's declaration: its format, `"NUMBER"`, or a table with the format, the
    /// order its modifiers apply in (not for a channel, which takes no modifiers) and the
    /// scope whose instances it holds, `{ format = "NUMBER", order = "applied" }`,
    /// `{ format = "STRING", holds = "PC.CREATURE" }`.
    fn variable(
        &mut self,
        v: &Spanned<DeValue<'_>>,
        channel: bool,
    ) -> Option<(Text, Option<Text>, Option<Text>)> {
        if !matches!(v.get_ref(), DeValue::Table(_)) {
            return Some((self.string(v, "a variable's format")?, None, None));
        }
        let t = self.table(v, "a variable's declaration")?;
        let (mut format, mut order, mut holds) = (None, None, None);
        for (k, v) in t.iter() {
            match &**k.get_ref() {
                "format" => format = self.string(v, "a variable's format"),
                "order" if !channel => order = self.string(v, "a variable's order"),
                "holds" => holds = self.string(v, "the scope whose instances a variable holds"),
                other => {
                    let expected: &[&str] =
                        if channel { &["format", "holds"] } else { &["format", "order", "holds"] };
                    let what = format!("key `{other}` in a variable's declaration");
                    self.unknown_key(k.span(), &what, other, expected);
                }
            }
        }
        if format.is_none() && !t.iter().any(|(k, _)| &**k.get_ref() == "format") {
            self.error(v.span(), "a variable's declaration needs a `format`".to_owned());
        }
        Some((format?, order, holds))
    }

    /// A stock's declaration: a table of its bounds, `{ min = "0", max = "MaxHP", bounds =
    /// "clamp" }`, each optional (`{}`: an unbounded stock).
    fn stock(&mut self, v: &Spanned<DeValue<'_>>) -> Option<StockDecl> {
        let t = self.table(v, "a stock's declaration (a table: `{ min = \"0\" }`, or `{}`)")?;
        let mut stock = StockDecl::default();
        for (k, v) in t.iter() {
            match &**k.get_ref() {
                "min" => stock.min = self.text(v, "a stock's minimum"),
                "max" => stock.max = self.text(v, "a stock's maximum"),
                "bounds" => stock.bounds = self.string(v, "what a stock does out of bounds"),
                other => {
                    let what = format!("key `{other}` in a stock's declaration");
                    self.unknown_key(k.span(), &what, other, &["min", "max", "bounds"]);
                }
            }
        }
        Some(stock)
    }

    fn ruleset(&mut self, v: &Spanned<DeValue<'_>>) {
        let Some(t) = self.table(v, "[ruleset]") else { return };
        for (k, v) in t.iter() {
            match &**k.get_ref() {
                "name" | "description" => {
                    self.string(v, "the ruleset's name");
                }
                "global" => {
                    if let Some(g) = self.string(v, "the global scope's name") {
                        match &self.draft.global {
                            Some(prev) if !prev.text.eq_ignore_ascii_case(&g.text) => {
                                self.draft.errors.push(Diagnostic::at(
                                    codes::BAD_SCOPE,
                                    &g,
                                    format!(
                                        "the global scope is already named `{}` ({})",
                                        prev.text, prev.at
                                    ),
                                ));
                            }
                            _ => self.draft.global = Some(g),
                        }
                    }
                }
                "order" => {
                    if let Some(o) = self.string(v, "the ruleset's order") {
                        match &self.draft.order {
                            Some(prev) if !prev.text.eq_ignore_ascii_case(&o.text) => {
                                self.draft.errors.push(Diagnostic::at(
                                    codes::BAD_ORDER,
                                    &o,
                                    format!("the ruleset's order is already `{}` ({})", prev.text, prev.at),
                                ));
                            }
                            _ => self.draft.order = Some(o),
                        }
                    }
                }
                other => {
                    let what = format!("key `{other}` in [ruleset]");
                    self.unknown_key(k.span(), &what, other, &["name", "description", "global", "order"]);
                }
            }
        }
    }

    fn format(&mut self, name: Text, kind: &Spanned<DeValue<'_>>) -> Option<()> {
        let k = match kind.get_ref() {
            DeValue::String(s) if s.eq_ignore_ascii_case("ordered-pair") => FormatKind::OrderedPair,
            DeValue::String(s) if s.eq_ignore_ascii_case("dice") => FormatKind::Dice,
            DeValue::Array(items) => {
                let mut values = Vec::new();
                for item in items.iter() {
                    values.push(self.string(item, "an enumeration value")?);
                }
                FormatKind::Enumeration(values)
            }
            _ => {
                self.error(
                    kind.span(),
                    "a format is \"ordered-pair\", \"dice\", or an array of enumeration values".to_owned(),
                );
                return None;
            }
        };
        self.draft.formats.push(FormatDecl { name, kind: k });
        Some(())
    }

    fn kind(&mut self, name: Text, def: &Spanned<DeValue<'_>>) -> Option<()> {
        let t = self.table(def, "an object kind")?;
        let (mut scope, mut presence, mut attach, mut parts) = (None, Presence::Listed, false, None);
        for (k, v) in t.iter() {
            match &**k.get_ref() {
                "scope" => scope = self.string(v, "a kind's scope"),
                "parts" => parts = self.string(v, "a kind's part scope"),
                "attach" => match v.get_ref() {
                    DeValue::Boolean(b) => attach = *b,
                    _ => self.error(v.span(), "`attach` is true or false".to_owned()),
                },
                "presence" => match v.get_ref() {
                    DeValue::String(s) if s == "listed" => presence = Presence::Listed,
                    DeValue::String(s) if s == "always" => presence = Presence::Always,
                    DeValue::String(s) if s == "granted" => presence = Presence::Granted,
                    _ => {
                        self.error(v.span(), "`presence` is \"listed\", \"always\" or \"granted\"".to_owned())
                    }
                },
                other => {
                    let what = format!("key `{other}` in a kind");
                    self.unknown_key(k.span(), &what, other, &["scope", "presence", "attach", "parts"]);
                }
            }
        }
        let Some(scope) = scope else {
            self.draft.errors.push(Diagnostic::at(
                codes::SYNTAX,
                &name,
                format!("kind `{}` has no `scope`", name.text),
            ));
            return None;
        };
        self.draft.kinds.push(KindDecl { name, scope, presence, attach, parts });
        Some(())
    }

    // long: one arm per key of an [[object]] table, the native format's object schema in one place.
    fn object(&mut self, item: &Spanned<DeValue<'_>>) {
        let Some(t) = self.table(item, "an [[object]]") else { return };
        let at = self.cx.origin(item.span().start);
        let get = |key: &str| t.iter().find(|(k, _)| &**k.get_ref() == key);
        let kind = get("kind").and_then(|(_, v)| self.string(v, "an object's kind"));
        let key = get("key").and_then(|(_, v)| self.string(v, "an object's key"));
        let (Some(kind), Some(key)) = (kind, key) else {
            let t = Text::new("[[object]]", at);
            self.draft.errors.push(Diagnostic::at(
                codes::SYNTAX,
                &t,
                "an [[object]] needs a `kind` and a `key`",
            ));
            return;
        };
        let mut obj = ObjectDraft::new(kind, key, at);
        for (k, v) in t.iter() {
            match &**k.get_ref() {
                "kind" | "key" => {}
                "name" => {
                    if let Some(n) = self.string(v, "an object's name") {
                        obj.name = n;
                    }
                }
                "groups" => obj.groups = self.strings(v, "`groups`"),
                "modify" => obj.modify = self.mods(v),
                "modify_other" => {
                    for e in self.array(v, "`modify_other`") {
                        if let Some(o) = self.other(e) {
                            obj.other.push(o);
                        }
                    }
                }
                "grant" => {
                    for e in self.array(v, "`grant`") {
                        let Some(g) = self.table(e, "a grant") else { continue };
                        let kind = g.iter().find(|(k, _)| &**k.get_ref() == "kind");
                        let key = g.iter().find(|(k, _)| &**k.get_ref() == "key");
                        match (kind, key) {
                            (Some((_, kv)), Some((_, keyv))) if g.len() == 2 => {
                                if let (Some(kind), Some(key)) =
                                    (self.string(kv, "a grant's kind"), self.string(keyv, "a grant's key"))
                                {
                                    obj.grants.push(GrantDraft { kind, key });
                                }
                            }
                            _ => self.error(
                                e.span(),
                                "a grant is { kind = \"MOVEMENT\", key = \"Walk\" }".to_owned(),
                            ),
                        }
                    }
                }
                "parts" => match v.get_ref() {
                    DeValue::Integer(i) => match i.as_str().parse::<u32>() {
                        Ok(n) if n >= 1 => obj.part_count = n,
                        _ => self.error(v.span(), "`parts` is a whole number from 1 up".to_owned()),
                    },
                    _ => self.error(v.span(), "`parts` is a whole number from 1 up".to_owned()),
                },
                "part_modify" => {
                    for e in self.array(v, "`part_modify`") {
                        let Some(mt) = self.table(e, "a part modifier") else { continue };
                        let part = mt.iter().find(|(k, _)| &**k.get_ref() == "part");
                        let n = match part.map(|(_, pv)| (pv, pv.get_ref())) {
                            Some((_, DeValue::Integer(i))) => {
                                i.as_str().parse::<u32>().ok().filter(|n| *n >= 1)
                            }
                            _ => None,
                        };
                        let Some(n) = n else {
                            self.error(
                                e.span(),
                                "a part modifier needs `part = n` (1 for the first part)".to_owned(),
                            );
                            continue;
                        };
                        if let Some(m) = self.modifier(e, &["part"]) {
                            obj.parts.push((n, m));
                        }
                    }
                }
                other => {
                    self.unknown_key(k.span(), &format!("key `{other}` in an object"), other, OBJECT_KEYS)
                }
            }
        }
        self.draft.objects.push(obj);
    }

    fn array<'x, 'i>(&mut self, v: &'x Spanned<DeValue<'i>>, what: &str) -> Vec<&'x Spanned<DeValue<'i>>> {
        match v.get_ref() {
            DeValue::Array(items) => items.iter().collect(),
            other => {
                self.error(v.span(), format!("{what} must be an array, not a {}", other.type_str()));
                Vec::new()
            }
        }
    }

    fn strings(&mut self, v: &Spanned<DeValue<'_>>, what: &str) -> Vec<Text> {
        self.array(v, what).into_iter().filter_map(|e| self.string(e, "an array element")).collect()
    }

    fn mods(&mut self, v: &Spanned<DeValue<'_>>) -> Vec<ModDraft> {
        self.array(v, "`modify`").into_iter().filter_map(|e| self.modifier(e, &[])).collect()
    }

    fn other(&mut self, e: &Spanned<DeValue<'_>>) -> Option<OtherDraft> {
        let t = self.table(e, "a modify_other entry")?;
        let find = |key: &str| t.iter().find(|(k, _)| &**k.get_ref() == key).map(|(_, v)| v);
        let scope = match find("scope") {
            Some(s) => self.string(s, "`scope`")?,
            None => {
                self.error(
                    e.span(),
                    "a modify_other entry needs `scope` (the target objects' scope)".to_owned(),
                );
                return None;
            }
        };
        let select = match (find("key"), find("group"), find("all")) {
            (Some(k), None, None) => Selector::Key(self.string(k, "`key`")?),
            (None, Some(g), None) => Selector::Group(self.string(g, "`group`")?),
            (None, None, Some(a)) if matches!(a.get_ref(), DeValue::Boolean(true)) => Selector::All,
            _ => {
                self.error(
                    e.span(),
                    "a modify_other entry selects its targets with exactly one of key = \"...\", group = \"...\", all = true"
                        .to_owned(),
                );
                return None;
            }
        };
        let m = self.modifier(e, &["scope", "key", "group", "all"])?;
        Some(OtherDraft { scope, select, m })
    }

    /// A modifier table: `var`, one type key with the value, `priority`, `when`; `extra` keys
    /// belong to the caller.
    fn modifier(&mut self, e: &Spanned<DeValue<'_>>, extra: &[&str]) -> Option<ModDraft> {
        let t = self.table(e, "a modifier")?;
        let at = self.cx.origin(e.span().start);
        let (mut var, mut kind, mut value, mut priority, mut condition) = (None, None, None, None, None);
        for entry in t.iter() {
            let (k, v): Entry<'_, '_> = entry;
            match &**k.get_ref() {
                "var" => var = self.string(v, "`var`"),
                "priority" => {
                    priority = Some(self.cx.value_text(v).unwrap_or_else(|| self.cx.text_at(v.span(), false)))
                }
                "when" => condition = self.string(v, "`when`"),
                x if extra.contains(&x) => {}
                _ => {
                    if kind.is_some() {
                        self.error(
                            k.span(),
                            format!(
                                "a modifier has one type, but has both `{}` and `{}`",
                                kind.as_ref().map_or("", |k: &Text| &k.text),
                                k.get_ref()
                            ),
                        );
                        return None;
                    }
                    let mut kt = self.cx.key_text(k);
                    kt.text = Arc::from(kt.text.to_ascii_uppercase());
                    kind = Some(kt);
                    value = self.text(v, "a modifier's value");
                }
            }
        }
        let Some(var) = var else {
            self.error(e.span(), "a modifier needs `var` (the variable it modifies)".to_owned());
            return None;
        };
        let (Some(kind), Some(value)) = (kind, value) else {
            self.error(
                e.span(),
                format!(
                    "the modifier on `{}` needs a type and value, e.g. set = \"2\" or add = \"1\"",
                    var.text
                ),
            );
            return None;
        };
        Some(ModDraft { var, kind, value, priority, condition, at })
    }
}

#[cfg(test)]
mod tests {
    use crate::{Draft, Ruleset};

    const BASE: &str = r#"
[scopes]
"PC.ITEM" = "PC"
[variables.PC]
AC = "NUMBER"
Armored = "BOOLEAN"
[variables."PC.ITEM"]
Bonus = "NUMBER"
[kinds.ITEM]
scope = "PC.ITEM"
"#;

    /// Loads BASE plus `extra`; returns the errors as `line:col code text`.
    fn errors(extra: &str) -> Vec<String> {
        errors_in(&format!("{BASE}{extra}"))
    }

    /// Loads `text`; returns the errors as `line:col code text`.
    fn errors_in(text: &str) -> Vec<String> {
        let mut d = Draft::default();
        super::read_str(text, "t.toml", &mut d);
        match Ruleset::compile(d) {
            Ok(_) => Vec::new(),
            Err(es) => es
                .iter()
                .map(|e| {
                    let at = e.at.as_ref().map_or("-".to_owned(), |a| format!("{}:{}", a.line(), a.col()));
                    format!("{at} {} {}", e.code, e.text)
                })
                .collect(),
        }
    }

    #[test]
    fn a_valid_ruleset_compiles() {
        let ok = r#"
[[object]]
kind = "ITEM"
key = "Shield"
modify = [{ var = "Bonus", set = "2" }, { var = "AC", add = "Bonus", when = "Armored", priority = 3 }]
"#;
        assert_eq!(errors(ok), Vec::<String>::new());
    }

    #[test]
    fn errors_point_at_the_offending_text() {
        // BASE has 10 lines (it starts with a newline); the extra text starts on line 11.
        let table = [
            ("[nope]\n", "11:2 data.syntax nope"),
            ("[[object]]\nkind = \"ITEM\"\nkey = \"X\"\ncolour = \"red\"\n", "14:1 data.syntax colour"),
            ("[[object]]\nkind = \"GADGET\"\nkey = \"X\"\n", "12:9 data.unknown_kind GADGET"),
            (
                "[[object]]\nkind = \"ITEM\"\nkey = \"X\"\nmodify = [{ var = \"Nope\", set = \"1\" }]\n",
                "14:20 data.unknown_variable Nope",
            ),
            (
                "[[object]]\nkind = \"ITEM\"\nkey = \"X\"\nmodify = [{ var = \"AC\", add = \"Bonus + Missing\" }]\n",
                "14:40 data.formula Missing",
            ),
            (
                "[[object]]\nkind = \"ITEM\"\nkey = \"X\"\nmodify = [{ var = \"AC\", plus = \"1\" }]\n",
                "14:25 data.bad_modifier_type PLUS",
            ),
            (
                "[[object]]\nkind = \"ITEM\"\nkey = \"X\"\nmodify = [{ var = \"AC\", add = \"1\", priority = -1 }]\n",
                "14:47 data.bad_priority -1",
            ),
            ("[channels.PC]\nAC = \"BOOLEAN\"\n", "12:1 data.variable_conflict AC"),
            ("[channels.\"PC.ITEM\"]\nAC = \"NUMBER\"\n", "12:1 data.variable_conflict AC"),
            ("[variables.\"PC.NOPE\"]\nX = \"NUMBER\"\n", "11:13 data.unknown_scope PC.NOPE"),
            ("[defaults]\nNUMBER = \"abc\"\n", "12:11 data.bad_format abc"),
            ("key = = 1\n", "11:7 data.syntax ="),
            ("[ruleset]\norder = \"sideways\"\n", "12:10 data.bad_order sideways"),
            (
                "[channels.PC]\nGold = { format = \"NUMBER\", order = \"applied\" }\n",
                "12:29 data.syntax order",
            ),
        ];
        for (extra, want) in table {
            let got = errors(extra);
            assert_eq!(got, [want], "{extra}");
        }
    }

    #[test]
    fn a_variable_declares_its_order() {
        let ok = "[variables.PC]\nBP = { format = \"NUMBER\", order = \"Applied\" }\nHP = \"NUMBER\"\n";
        assert_eq!(errors_in(ok), Vec::<String>::new());
        let table = [
            ("[variables.PC]\nBP = { format = \"NUMBER\", order = \"odd\" }\n", "2:36 data.bad_order odd"),
            ("[variables.PC]\nBP = { order = \"applied\" }\n", "2:6 data.syntax { order = \"applied\" }"),
            ("[variables.PC]\nBP = { format = \"NUMBER\", by = 1 }\n", "2:27 data.syntax by"),
            // The ruleset says one order, the variable another: the variable's wins.
            (
                "[ruleset]\norder = \"applied\"\n[variables.PC]\nBP = { format = \"NUMBER\", order = \"inherent\" }\n",
                "",
            ),
        ];
        for (text, want) in table {
            let got = errors_in(text);
            if want.is_empty() {
                assert_eq!(got, Vec::<String>::new(), "{text}");
            } else {
                assert_eq!(got, [want], "{text}");
            }
        }
    }

    #[test]
    fn stocks_declare_their_bounds() {
        let ok = "[variables.PC]\nMaxHP = \"NUMBER\"\n[stocks.PC]\nHP = { min = 0, max = \"MaxHP\", bounds = \"Clamp\" }\nGold = {}\n";
        assert_eq!(errors_in(ok), Vec::<String>::new());
        let table = [
            ("[stocks.PC]\nHP = { bounds = \"bounce\" }\n", "2:18 data.bad_bounds bounce"),
            ("[stocks.PC]\nHP = { min = \"1 +\" }\n", "2:18 data.formula "),
            ("[stocks.PC]\nHP = { max = \"Nope\" }\n", "2:15 data.formula Nope"),
            ("[stocks.PC]\nHP = { colour = 1 }\n", "2:8 data.syntax colour"),
            ("[stocks.PC]\nHP = \"NUMBER\"\n", "2:6 data.syntax \"NUMBER\""),
            ("[stocks.PC]\nHP = {}\n[variables.PC]\nHP = \"BOOLEAN\"\n", "4:1 data.variable_conflict HP"),
        ];
        for (text, want) in table {
            assert_eq!(errors_in(text), [want], "{text}");
        }
    }

    #[test]
    fn every_error_is_reported() {
        let two = "[[object]]\nkind = \"ITEM\"\nkey = \"X\"\nmodify = [{ var = \"Nope\", set = \"1\" }, { var = \"AC\", set = \"1+\" }]\n";
        assert_eq!(errors(two).len(), 2);
    }

    #[test]
    fn a_rendered_error() {
        let mut d = Draft::default();
        let text = format!(
            "{BASE}[[object]]\nkind = \"ITEM\"\nkey = \"X\"\nmodify = [{{ var = \"AC\", add = \"Bonus * (2 +\" }}]\n"
        );
        super::read_str(&text, "starter/items.toml", &mut d);
        let es = Ruleset::compile(d).unwrap_err();
        insta::assert_snapshot!(es[0].to_string());
    }
}
