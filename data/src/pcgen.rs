//! Reading PCGen data: a campaign file (`.pcc`) and the `.lst` files it references, keeping
//! what belongs to PCGen's formula system and counting the rest.
//!
//! - DATACONTROL: `DEFAULTVARIABLEVALUE:FORMAT|value`, `FUNCTION:name` + `VALUE:body`,
//!   `DYNAMICSCOPE:NAME` (scope `PC.NAME`, object kind `NAME`).
//! - VARIABLE: `GLOBAL:FORMAT=Name`, `LOCAL:SCOPE|FORMAT=Name`, `CHANNEL:SCOPE|FORMAT=Name`,
//!   a bare `Name` (a global NUMBER); `FORMAT=` may be left out (NUMBER).
//! - DYNAMIC: `MOVEMENT:Walk` defines dynamic object `Walk` of kind `MOVEMENT`.
//! - GLOBALMODIFIER: `MODIFY:` lines that always apply; so do `MODIFY:` tokens in the `.pcc`.
//! - STAT, SAVE, SIZE, RACE, ABILITY, TEMPLATE, EQUIPMENT, EQUIPMOD: objects with `MODIFY:`,
//!   `MODIFYOTHER:`, `GRANT:`, `PART:n|MODIFY:` (equipment), `KEY:`, `ABB:` (stats and sizes
//!   are keyed by it), `TYPE:` (groups), `CATEGORY:` (abilities); `Key.MOD`, `Key.COPY=New` and
//!   `Key.FORGET` lines, applied after the base objects of their kind, as PCGen does.
//! - ALIGNMENT and DEITY files give the values of the ALIGNMENT and DEITY formats.
//! - DATATABLE files give the tables `lookup(TABLE, VALUE, COLUMN)` reads
//!   ([`crate::tables`]).
//!
//! Declarations are read as strictly as PCGen's token tests: one declaration per line, names
//! of a letter then letters, digits and `_`, exactly one `|` and one `=` where the syntax has one,
//! and a FUNCTION with one VALUE.
//!
//! Every other token is skipped and counted. Files are read as UTF-8; bytes that are not valid
//! UTF-8 (a few PCGen files hold Windows-1252 punctuation) become U+FFFD.

use crate::Map;
use crate::diag::{Diagnostic, Origin, SourceFile, Text, codes};
use crate::draft::{
    Draft, EnumFacts, FactDef, FormatDecl, FormatKind, GrantDraft, KindDecl, ModDraft, ObjectDraft,
    OtherDraft, Presence, ScopeDecl, Selector, TableDraft, VarDecl,
};
use crate::source::Files;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file kinds a campaign lists, in the order they are read (definitions before users).
pub const READ_ORDER: &[&str] = &[
    "DATACONTROL",
    "DATATABLE",
    "ALIGNMENT",
    "DEITY",
    "VARIABLE",
    "DYNAMIC",
    "GLOBALMODIFIER",
    "STAT",
    "SAVE",
    "SIZE",
    "RACE",
    "TEMPLATE",
    "ABILITY",
    "DOMAIN",
    "COMPANIONMOD",
    "EQUIPMENT",
    "EQUIPMOD",
];

/// How a FACT token is written, for its error.
const FACT_SHAPE: &str = "FACT is written FACT:Name|value, e.g. FACT:BaseSize|M";

/// Campaign tokens that name data files sheetd does not read (their existence is checked).
const OTHER_FILES: &[&str] = &[
    "ABILITYCATEGORY",
    "ARMORPROF",
    "BIOSET",
    "CLASS",
    "KIT",
    "LANGUAGE",
    "SHIELDPROF",
    "SKILL",
    "SPELL",
    "WEAPONPROF",
];

/// Object file kinds: (file kind, kind, key token).
const OBJECT_FILES: &[(&str, &str, Option<&str>)] = &[
    ("STAT", "STAT", Some("ABB")),
    ("SAVE", "SAVE", None),
    ("SIZE", "SIZE", Some("ABB")),
    ("RACE", "RACE", None),
    ("TEMPLATE", "TEMPLATE", None),
    ("ABILITY", "ABILITY", None),
    ("DOMAIN", "DOMAIN", None),
    ("COMPANIONMOD", "COMPANIONMOD", None),
    ("EQUIPMENT", "EQUIPMENT", None),
    ("EQUIPMOD", "EQUIPMOD", None),
];

/// Reads PCGen campaigns into a draft. Reading several campaigns into one reader loads each on
/// top of the ones before (Pact Worlds on top of the core rulebook).
pub struct PcgenReader<'d> {
    draft: &'d mut Draft,
    /// (kind upper, key lower) → draft object indices.
    index: Map<(String, String), Vec<usize>>,
    forgotten: Vec<bool>,
}

/// A `.MOD`, `.COPY=` or `.FORGET` line waiting for the base objects of its kind.
struct Pending {
    kind: &'static str,
    target: Text,
    category: Option<String>,
    action: Action,
    tokens: Vec<Text>,
    at: Origin,
}

enum Action {
    Mod,
    Copy(Text),
    Forget,
}

fn builtin() -> Origin {
    Origin::builtin("(PCGen import)")
}

fn t(s: &str) -> Text {
    Text::new(s, builtin())
}

impl<'d> PcgenReader<'d> {
    /// A reader filling `draft`; sets up PCGen's fixed scopes, formats and object kinds.
    pub fn new(draft: &'d mut Draft) -> Self {
        if draft.global.is_none() {
            draft.global = Some(t("PC"));
            for (name, parent) in [
                ("PC.EQUIPMENT", "PC"),
                ("PC.EQUIPMENT.PART", "PC.EQUIPMENT"),
                ("PC.STAT", "PC"),
                ("PC.SKILL", "PC"),
                ("PC.SAVE", "PC"),
                ("PC.SIZE", "PC"),
                ("PC.RACE", "PC"),
            ] {
                draft.scopes.push(ScopeDecl { name: t(name), parent: t(parent) });
            }
            draft.formats.push(FormatDecl { name: t("ORDEREDPAIR"), kind: FormatKind::OrderedPair });
            draft.formats.push(FormatDecl { name: t("DICE"), kind: FormatKind::Dice });
            let handed = ["Right", "Left", "Ambidextrous", "None", "Other"].map(t).to_vec();
            draft.formats.push(FormatDecl { name: t("HANDED"), kind: FormatKind::Enumeration(handed) });
            for e in ["ALIGNMENT", "DEITY"] {
                draft.formats.push(FormatDecl { name: t(e), kind: FormatKind::Enumeration(Vec::new()) });
            }
            let kind = |name: &str, scope: &str, presence, attach, parts: Option<&str>| KindDecl {
                name: t(name),
                scope: t(scope),
                presence,
                attach,
                parts: parts.map(t),
            };
            draft.kinds.extend([
                kind("STAT", "PC.STAT", Presence::Always, false, None),
                kind("SAVE", "PC.SAVE", Presence::Always, false, None),
                kind("SIZE", "PC.SIZE", Presence::Listed, false, None),
                kind("RACE", "PC.RACE", Presence::Listed, false, None),
                kind("TEMPLATE", "PC", Presence::Listed, false, None),
                kind("ABILITY", "PC", Presence::Listed, false, None),
                kind("DOMAIN", "PC", Presence::Listed, false, None),
                kind("COMPANIONMOD", "PC", Presence::Listed, false, None),
                kind("EQUIPMENT", "PC.EQUIPMENT", Presence::Listed, false, Some("PC.EQUIPMENT.PART")),
                kind("EQUIPMOD", "PC.EQUIPMENT.PART", Presence::Listed, true, None),
            ]);
        }
        let mut index: Map<(String, String), Vec<usize>> = Map::default();
        for (i, o) in draft.objects.iter().enumerate() {
            index.entry((o.kind.text.to_ascii_uppercase(), o.key.text.to_lowercase())).or_default().push(i);
        }
        let forgotten = vec![false; draft.objects.len()];
        PcgenReader { draft, index, forgotten }
    }

    /// Reads campaign file `pcc` and every file it references.
    pub fn read_campaign(&mut self, pcc: &Path, source: &Files) {
        let root = data_root(pcc);
        let shown = display_path(pcc, root.as_deref());
        let text = match source.read(pcc) {
            Ok(t) => t,
            Err(e) => {
                self.draft.errors.push(Diagnostic::nowhere(codes::FILE, e));
                return;
            }
        };
        self.draft.files.push(shown.clone());
        let dir = pcc.parent().unwrap_or(Path::new(".")).to_path_buf();
        let file = SourceFile::new(&shown, text);
        let mut files: Vec<(String, PathBuf, String)> = Vec::new();
        let mut campaign_mods = Vec::new();
        for (_, tokens) in lines(&file) {
            for tok in tokens {
                let (tag, value) = split_tag(&tok);
                let tag_upper = tag.to_ascii_uppercase();
                let is_read = READ_ORDER.contains(&tag_upper.as_str());
                if is_read || OTHER_FILES.contains(&tag_upper.as_str()) || tag_upper == "PCC" {
                    let Some(value) = value else { continue };
                    let Some(path) = self.campaign_file(&tag_upper, &value, &dir, root.as_deref(), source)
                    else {
                        continue;
                    };
                    if tag_upper == "PCC" {
                        self.read_campaign(&path, source);
                    } else if is_read {
                        files.push((tag_upper, path.clone(), display_path(&path, root.as_deref())));
                    } else {
                        self.draft.skip(&tag_upper, tok.at.clone());
                    }
                } else if tag_upper == "MODIFY"
                    && let Some(v) = value
                {
                    // A campaign's own MODIFY applies to every character that loads it.
                    if let Some(m) = parse_modify(&v, &tok, &mut self.draft.errors) {
                        campaign_mods.push(m);
                    }
                } else {
                    self.draft.skip(&tag_upper, tok.at.clone());
                }
            }
        }
        for kind in READ_ORDER {
            let mut pending = Vec::new();
            for (k, path, shown) in &files {
                if k == kind {
                    self.read_lst(kind, path, shown, source, &mut pending);
                }
            }
            self.apply_pending(pending);
        }
        // After the files: the variables they declare are known by then (the modifiers are
        // checked when the ruleset compiles, wherever they were read).
        self.draft.global_mods.extend(campaign_mods);
    }

    /// The file a campaign's `TAG:path` names, when it exists; else an error at the path.
    fn campaign_file(
        &mut self,
        tag_upper: &str,
        value: &Text,
        dir: &Path,
        root: Option<&Path>,
        source: &Files,
    ) -> Option<PathBuf> {
        let path_text = match value.text.find('|') {
            Some(i) => value.slice(0, i),
            None => value.clone(),
        };
        if path_text.text.len() < value.text.len() {
            self.draft.errors.push(Diagnostic::at(
                codes::SYNTAX,
                &value.slice(path_text.text.len(), value.text.len()),
                "file options such as (INCLUDE:...) and (EXCLUDE:...) are not supported",
            ));
        }
        let path = resolve(&path_text, dir, root, &mut self.draft.errors)?;
        if !source.is_file(&path) {
            self.draft.errors.push(Diagnostic::at(
                codes::MISSING_FILE,
                &path_text,
                format!(
                    "{tag_upper} file `{}` does not exist (looked for {})",
                    path_text.text,
                    display_path(&path, root)
                ),
            ));
            return None;
        }
        Some(path)
    }

    /// Reads one `.lst` file of file kind `kind`.
    fn read_lst(
        &mut self,
        kind: &'static str,
        path: &Path,
        shown: &str,
        source: &Files,
        pending: &mut Vec<Pending>,
    ) {
        let text = match source.read(path) {
            Ok(t) => t,
            Err(e) => {
                self.draft.errors.push(Diagnostic::nowhere(codes::FILE, e));
                return;
            }
        };
        self.draft.files.push(shown.to_owned());
        let file = SourceFile::new(shown, text);
        if kind == "DATATABLE" {
            self.datatable_file(&file);
            return;
        }
        for (_, tokens) in lines(&file) {
            let Some(first) = tokens.first() else { continue };
            // Source header lines (SOURCELONG:..., SOURCESHORT:...) describe the file.
            if first.text.starts_with("SOURCE") && first.text.contains(':') {
                for tok in &tokens {
                    self.draft.skip(split_tag(tok).0, tok.at.clone());
                }
                continue;
            }
            match kind {
                "DATACONTROL" => self.datacontrol_line(&tokens),
                "VARIABLE" => self.variable_line(&tokens),
                "GLOBALMODIFIER" => {
                    for tok in &tokens {
                        let (tag, value) = split_tag(tok);
                        match (tag.to_ascii_uppercase().as_str(), value) {
                            ("MODIFY", Some(v)) => {
                                if let Some(m) = parse_modify(&v, tok, &mut self.draft.errors) {
                                    self.draft.global_mods.push(m);
                                }
                            }
                            (other, _) => self.draft.skip(other, tok.at.clone()),
                        }
                    }
                }
                "ALIGNMENT" | "DEITY" => self.enum_value_line(kind, &tokens),
                "DYNAMIC" => {
                    let (tag, value) = split_tag(first);
                    let Some(key) = value.filter(|v| !v.text.is_empty()) else {
                        self.draft.errors.push(Diagnostic::at(
                            codes::SYNTAX,
                            first,
                            "a dynamic object is written SCOPE:Key, e.g. MOVEMENT:Walk",
                        ));
                        continue;
                    };
                    let kind_text = Text::new(&tag.to_ascii_uppercase(), first.at.clone());
                    let mut obj = ObjectDraft::new(kind_text, key, first.at.clone());
                    for tok in &tokens[1..] {
                        self.object_token(&mut obj, tok, None);
                    }
                    self.push_object(obj);
                }
                _ => self.object_line(kind, &tokens, pending),
            }
        }
    }

    /// A DATATABLE file: tables written `STARTTABLE:Name`, a row of column names, a row of
    /// their formats, the rows, `ENDTABLE:Name`; cells separated by commas (a cell may be
    /// quoted, `"a, b"`); blank lines and `#` comments between.
    fn datatable_file(&mut self, file: &Arc<SourceFile>) {
        let mut open: Option<(TableDraft, usize)> = None;
        for cells in csv_lines(file) {
            let Some(first) = cells.first() else { continue };
            let (tag, value) = split_tag(first);
            match (tag.to_ascii_uppercase().as_str(), value, open.as_mut()) {
                ("STARTTABLE", Some(name), None) => {
                    let table =
                        TableDraft { name, columns: Vec::new(), formats: Vec::new(), rows: Vec::new() };
                    open = Some((table, 0));
                }
                ("STARTTABLE", _, Some((t, _))) => self.draft.errors.push(Diagnostic::at(
                    codes::SYNTAX,
                    first,
                    format!("STARTTABLE inside table `{}`, which has no ENDTABLE before it", t.name),
                )),
                ("ENDTABLE", name, Some(_)) => {
                    let Some((t, _)) = open.take() else { continue };
                    if name.as_ref().is_some_and(|n| !n.text.eq_ignore_ascii_case(&t.name.text)) {
                        self.draft.errors.push(Diagnostic::at(
                            codes::SYNTAX,
                            first,
                            format!("ENDTABLE names another table than `{}`, the one it ends", t.name),
                        ));
                    }
                    self.draft.tables.push(t);
                }
                ("ENDTABLE", _, None) => self.draft.errors.push(Diagnostic::at(
                    codes::SYNTAX,
                    first,
                    "ENDTABLE with no STARTTABLE before it",
                )),
                (_, _, Some((t, seen))) => {
                    match seen {
                        0 => t.columns = cells,
                        1 => t.formats = cells,
                        _ => t.rows.push(cells),
                    }
                    *seen += 1;
                }
                (_, _, None) => self.draft.errors.push(Diagnostic::at(
                    codes::SYNTAX,
                    first,
                    "a table's line outside STARTTABLE … ENDTABLE",
                )),
            }
        }
        if let Some((t, _)) = open {
            let message = format!("table `{}` has no ENDTABLE", t.name);
            self.draft.errors.push(Diagnostic::at(codes::SYNTAX, &t.name, message));
        }
    }

    /// An ALIGNMENT or DEITY line: a value of that enumeration format (its `KEY:`, else its
    /// name), with its facts and visibility.
    fn enum_value_line(&mut self, kind: &str, tokens: &[Text]) {
        let first = &tokens[0];
        let key = tokens[1..]
            .iter()
            .find_map(|tok| match split_tag(tok) {
                (tag, Some(v)) if tag.eq_ignore_ascii_case("KEY") => Some(v),
                _ => None,
            })
            .unwrap_or_else(|| first.clone());
        self.draft.enum_values.push((kind.to_owned(), key.clone()));
        let mut value = EnumFacts { kind: Arc::from(kind), key, facts: Vec::new(), visible: None };
        for tok in &tokens[1..] {
            match split_tag(tok) {
                (tag, Some(v)) if tag.eq_ignore_ascii_case("FACT") => match v.text.find('|') {
                    Some(i) if i > 0 => value.facts.push((v.slice(0, i), v.slice(i + 1, v.text.len()))),
                    _ => self.draft.errors.push(Diagnostic::at(codes::SYNTAX, &v, FACT_SHAPE)),
                },
                (tag, Some(v)) if tag.eq_ignore_ascii_case("VISIBLE") => value.visible = Some(v),
                (tag, _) => self.draft.skip(tag, tok.at.clone()),
            }
        }
        self.draft.enum_facts.push(value);
    }

    fn datacontrol_line(&mut self, tokens: &[Text]) {
        let first = &tokens[0];
        let (tag, value) = split_tag(first);
        match (tag.to_ascii_uppercase().as_str(), value) {
            ("DEFAULTVARIABLEVALUE", Some(v)) => {
                self.default_value(&v);
                self.skip_rest(&tokens[1..]);
            }
            ("FUNCTION", Some(name)) => self.function(name, &tokens[1..]),
            ("FACTDEF", Some(v)) => self.fact_def(v, &tokens[1..]),
            ("DYNAMICSCOPE", Some(name)) => {
                let upper = name.text.to_ascii_uppercase();
                let scope = Text::new(&format!("PC.{upper}"), name.at.clone());
                if !self.draft.kinds.iter().any(|k| k.name.text.eq_ignore_ascii_case(&upper)) {
                    self.draft.scopes.push(ScopeDecl { name: scope.clone(), parent: t("PC") });
                    self.draft.kinds.push(KindDecl {
                        name: Text::new(&upper, name.at.clone()),
                        scope,
                        presence: Presence::Granted,
                        attach: false,
                        parts: None,
                    });
                }
                self.skip_rest(&tokens[1..]);
            }
            (other, _) => {
                self.draft.skip(other, first.at.clone());
                self.skip_rest(&tokens[1..]);
            }
        }
    }

    /// `DEFAULTVARIABLEVALUE:FORMAT|value`: exactly one `|` after a format, as PCGen requires
    /// (it rejects `STRING||Def`, `STRING|Def|Abc` and `|3`; `STRING|` is an empty string).
    fn default_value(&mut self, v: &Text) {
        let bars: Vec<usize> = v.text.match_indices('|').map(|(i, _)| i).collect();
        match bars[..] {
            [i] if i > 0 => self.draft.defaults.push((v.slice(0, i), v.slice(i + 1, v.text.len()))),
            [0, ..] => self.draft.errors.push(Diagnostic::at(
                codes::SYNTAX,
                v,
                "DEFAULTVARIABLEVALUE names no format before `|`: it is written FORMAT|value, e.g. NUMBER|0",
            )),
            [_, second, ..] => self.draft.errors.push(Diagnostic::at(
                codes::SYNTAX,
                &v.slice(second, v.text.len()),
                format!(
                    "DEFAULTVARIABLEVALUE is written FORMAT|value with one `|`; `{}` has {}",
                    v.text,
                    bars.len()
                ),
            )),
            _ => self.draft.errors.push(Diagnostic::at(
                codes::SYNTAX,
                v,
                "DEFAULTVARIABLEVALUE is written FORMAT|value, e.g. NUMBER|0",
            )),
        }
    }

    /// `FACTDEF:KIND|Name` with its `DATAFORMAT:` among `rest` (STRING when absent): a fact
    /// objects of `KIND` may carry, for `getFact`.
    fn fact_def(&mut self, v: Text, rest: &[Text]) {
        let bars: Vec<usize> = v.text.match_indices('|').map(|(i, _)| i).collect();
        let (kind, name) = match bars[..] {
            [i] if i > 0 && i + 1 < v.text.len() => (v.slice(0, i), v.slice(i + 1, v.text.len())),
            _ => {
                let e = Diagnostic::at(
                    codes::SYNTAX,
                    &v,
                    "FACTDEF is written FACTDEF:KIND|Name, e.g. FACTDEF:RACE|BaseSize",
                );
                self.draft.errors.push(e);
                return;
            }
        };
        let mut format = None;
        for tok in rest {
            match split_tag(tok) {
                (tag, Some(f)) if tag.eq_ignore_ascii_case("DATAFORMAT") => format = Some(f),
                (tag, _) => self.draft.skip(&tag.to_ascii_uppercase(), tok.at.clone()),
            }
        }
        self.draft.fact_defs.push(FactDef { kind, name, format });
    }

    /// `FUNCTION:name` with its `VALUE:` body among `rest`.
    fn function(&mut self, name: Text, rest: &[Text]) {
        let mut body: Option<Text> = None;
        for tok in rest {
            match split_tag(tok) {
                (tag, Some(v)) if tag.eq_ignore_ascii_case("VALUE") => match &body {
                    // PCGen accepts the same VALUE twice and rejects a different one.
                    Some(b) if b.text != v.text => self.draft.errors.push(Diagnostic::at(
                        codes::BAD_FUNCTION,
                        &v,
                        format!(
                            "FUNCTION:{} has two different VALUE: tokens: `{}`, then `{}`",
                            name.text, b.text, v.text
                        ),
                    )),
                    Some(_) => {}
                    None => body = Some(v),
                },
                (tag, _) => self.draft.skip(tag, tok.at.clone()),
            }
        }
        match body {
            Some(b) => self.draft.functions.push((name, b)),
            None => self.draft.errors.push(Diagnostic::at(
                codes::SYNTAX,
                &name,
                format!("FUNCTION:{} has no VALUE: token with its formula", name.text),
            )),
        }
    }

    fn skip_rest(&mut self, tokens: &[Text]) {
        for tok in tokens {
            self.draft.skip(split_tag(tok).0, tok.at.clone());
        }
    }

    fn variable_line(&mut self, tokens: &[Text]) {
        let first = &tokens[0];
        let (tag, value) = split_tag(first);
        let upper = tag.to_ascii_uppercase();
        match (upper.as_str(), value) {
            (_, None) => self.declare(first.clone(), Text::new("PC", first.at.clone()), false),
            ("GLOBAL", Some(v)) => self.declare(v, Text::new("PC", first.at.clone()), false),
            ("LOCAL" | "CHANNEL", Some(v)) => {
                let channel = upper == "CHANNEL";
                let bars: Vec<usize> = v.text.match_indices('|').map(|(i, _)| i).collect();
                match bars[..] {
                    [0, ..] => self.draft.errors.push(Diagnostic::at(
                        codes::SYNTAX,
                        &v,
                        format!("{upper} names no scope before `|`: it is written {upper}:SCOPE|FORMAT=Name"),
                    )),
                    [i] => self.declare(v.slice(i + 1, v.text.len()), v.slice(0, i), channel),
                    [_, second, ..] => self.draft.errors.push(Diagnostic::at(
                        codes::SYNTAX,
                        &v.slice(second, v.text.len()),
                        format!(
                            "{upper} is written {upper}:SCOPE|FORMAT=Name with one `|`; `{}` has {} \
                             (the format and the name are joined by `=`)",
                            v.text,
                            bars.len()
                        ),
                    )),
                    [] if channel => self.declare(v, Text::new("PC", first.at.clone()), true),
                    [] => self.draft.errors.push(Diagnostic::at(
                        codes::SYNTAX,
                        &v,
                        "LOCAL is written LOCAL:SCOPE|FORMAT=Name, e.g. LOCAL:PC.STAT|NUMBER=Score",
                    )),
                }
            }
            (other, _) => self.draft.skip(other, first.at.clone()),
        }
        for tok in &tokens[1..] {
            let tag = split_tag(tok).0.to_ascii_uppercase();
            if matches!(tag.as_str(), "GLOBAL" | "LOCAL" | "CHANNEL") {
                // PCGen: "GLOBAL must be the first token on the line"; one line declares one variable.
                self.draft.errors.push(Diagnostic::at(
                    codes::SYNTAX,
                    tok,
                    format!("{tag} must be the first token on its line: a line declares one variable"),
                ));
            } else {
                self.draft.skip(&tag, tok.at.clone());
            }
        }
    }

    /// Declares `FORMAT=Name` (or `Name`, a NUMBER) in `scope`, as strictly as PCGen: one `=`,
    /// a format before it, and a name that [`legal_name`] accepts.
    fn declare(&mut self, spec: Text, scope: Text, channel: bool) {
        let equals: Vec<usize> = spec.text.match_indices('=').map(|(i, _)| i).collect();
        let (format, name) = match equals[..] {
            [] => (Text::new("NUMBER", spec.at.clone()), spec.clone()),
            [i] => (spec.slice(0, i), spec.slice(i + 1, spec.text.len())),
            [_, second, ..] => {
                self.draft.errors.push(Diagnostic::at(
                    codes::SYNTAX,
                    &spec.slice(second, spec.text.len()),
                    format!(
                        "`{}` has {} `=`: a declaration is FORMAT=Name, with one",
                        spec.text,
                        equals.len()
                    ),
                ));
                return;
            }
        };
        if format.text.is_empty() {
            self.draft.errors.push(Diagnostic::at(
                codes::SYNTAX,
                &spec,
                format!("`{}` names no format before `=`: a declaration is FORMAT=Name", spec.text),
            ));
            return;
        }
        if name.text.trim().is_empty() {
            self.draft.errors.push(Diagnostic::at(codes::SYNTAX, &spec, "the variable has no name"));
            return;
        }
        if !legal_name(&name.text) {
            self.draft.errors.push(Diagnostic::at(
                codes::BAD_NAME,
                &name,
                format!(
                    "`{}` is not a valid variable name: PCGen's names start with a letter and hold only \
                     letters, digits and `_`",
                    name.text
                ),
            ));
            return;
        }
        self.draft.variables.push(VarDecl {
            name,
            scope,
            format,
            channel,
            order: None,
            stock: None,
            clock: false,
            holds: None,
        });
    }

    fn object_line(&mut self, kind: &'static str, tokens: &[Text], pending: &mut Vec<Pending>) {
        let first = &tokens[0];
        let (obj_kind, key_token) = OBJECT_FILES
            .iter()
            .find(|(f, _, _)| *f == kind)
            .map(|(_, k, key)| (*k, *key))
            .unwrap_or((kind, None));
        // `CATEGORY=Cat|Key.MOD` (abilities) names the category in front of the key.
        let (category, name) = match first.text.strip_prefix("CATEGORY=").and_then(|r| r.find('|')) {
            Some(i) => {
                let bar = "CATEGORY=".len() + i;
                (Some(first.text["CATEGORY=".len()..bar].to_owned()), first.slice(bar + 1, first.text.len()))
            }
            None => (None, first.clone()),
        };
        // A companion mod's line starts with what it applies to, `FOLLOWER:Class=Level`; PCGen
        // names it nothing of its own, sheetd keys it by that (`AnimalCompanionLVL=1`).
        let name = match split_tag(&name) {
            (tag, Some(v)) if obj_kind == "COMPANIONMOD" && tag.eq_ignore_ascii_case("FOLLOWER") => v,
            _ => name,
        };
        let special = [(".MOD", 0), (".FORGET", 1)]
            .into_iter()
            .find(|(suffix, _)| name.text.ends_with(suffix))
            .map(|(suffix, a)| (name.text.len() - suffix.len(), a));
        if let Some(i) = name.text.find(".COPY=") {
            pending.push(Pending {
                kind: obj_kind,
                target: name.slice(0, i),
                category,
                action: Action::Copy(name.slice(i + ".COPY=".len(), name.text.len())),
                tokens: tokens[1..].to_vec(),
                at: first.at.clone(),
            });
            return;
        }
        if let Some((end, a)) = special {
            pending.push(Pending {
                kind: obj_kind,
                target: name.slice(0, end),
                category,
                action: if a == 0 { Action::Mod } else { Action::Forget },
                tokens: tokens[1..].to_vec(),
                at: first.at.clone(),
            });
            return;
        }
        let mut key = name.clone();
        let mut category = None;
        for tok in &tokens[1..] {
            if let (tag, Some(v)) = split_tag(tok) {
                if (tag.eq_ignore_ascii_case("KEY") && key_token.is_none())
                    || key_token.is_some_and(|k| tag.eq_ignore_ascii_case(k))
                {
                    key = v;
                } else if tag.eq_ignore_ascii_case("CATEGORY") {
                    category = Some(v);
                }
            }
        }
        let mut obj = ObjectDraft::new(Text::new(obj_kind, first.at.clone()), key, first.at.clone());
        obj.name = name;
        obj.category = category;
        for tok in &tokens[1..] {
            self.object_token(&mut obj, tok, key_token);
        }
        self.push_object(obj);
    }

    fn push_object(&mut self, obj: ObjectDraft) {
        let i = self.draft.objects.len();
        self.index
            .entry((obj.kind.text.to_ascii_uppercase(), obj.key.text.to_lowercase()))
            .or_default()
            .push(i);
        self.draft.objects.push(obj);
        self.forgotten.push(false);
    }

    // long: one arm per PCGen object token, the dispatch table of the reader.
    /// Applies one token of an object line.
    fn object_token(&mut self, obj: &mut ObjectDraft, tok: &Text, key_token: Option<&str>) {
        let (tag, value) = split_tag(tok);
        let upper = tag.to_ascii_uppercase();
        let Some(v) = value else {
            self.draft.skip(&upper, tok.at.clone());
            return;
        };
        let errors = &mut self.draft.errors;
        match upper.as_str() {
            "MODIFY" => {
                if let Some(m) = parse_modify(&v, tok, errors) {
                    obj.modify.push(m);
                }
            }
            "MODIFYOTHER" => {
                let parts = split_bars(&v);
                if parts.len() < 5 {
                    errors.push(Diagnostic::at(
                        codes::SYNTAX,
                        &v,
                        "MODIFYOTHER is written SCOPE|GROUPING|Var|TYPE|value[|PRIORITY=n]",
                    ));
                    return;
                }
                let select = match &*parts[1].text {
                    "ALL" => Selector::All,
                    g if g.starts_with("GROUP=") => Selector::Group(parts[1].slice(6, g.len())),
                    _ => Selector::Key(parts[1].clone()),
                };
                if let Some(m) = modify_parts(&parts[2..], &v, tok, errors) {
                    obj.other.push(OtherDraft { scope: parts[0].clone(), select, m });
                }
            }
            "GRANT" => {
                let parts = split_bars(&v);
                if parts.len() < 2 {
                    errors.push(Diagnostic::at(
                        codes::SYNTAX,
                        &v,
                        "GRANT is written KIND|Key[|Key...], e.g. GRANT:MOVEMENT|Walk",
                    ));
                    return;
                }
                for key in &parts[1..] {
                    obj.grants.push(GrantDraft { kind: parts[0].clone(), key: key.clone() });
                }
            }
            "PART" => {
                let Some(bar) = v.text.find('|') else {
                    errors.push(Diagnostic::at(codes::SYNTAX, &v, "PART is written PART:n|TOKEN:..."));
                    return;
                };
                let num = v.slice(0, bar);
                let inner = v.slice(bar + 1, v.text.len());
                let (inner_tag, inner_value) = split_tag(&inner);
                if !inner_tag.eq_ignore_ascii_case("MODIFY") {
                    self.draft.skip(&format!("PART|{}", inner_tag.to_ascii_uppercase()), tok.at.clone());
                    return;
                }
                let n = match num.text.parse::<u32>() {
                    Ok(n) if n >= 1 && num.text.bytes().all(|b| b.is_ascii_digit()) => n,
                    _ => {
                        errors.push(Diagnostic::at(
                            codes::BAD_PART,
                            &num,
                            format!("a part number is a whole number from 1 up, not `{}`", num.text),
                        ));
                        return;
                    }
                };
                if let Some(iv) = inner_value
                    && let Some(m) = parse_modify(&iv, &inner, errors)
                {
                    obj.parts.push((n, m));
                }
            }
            "TYPE" => {
                let mut start = 0;
                for piece in v.text.split('.') {
                    if !piece.is_empty() {
                        obj.groups.push(v.slice(start, start + piece.len()));
                    }
                    start += piece.len() + 1;
                }
                self.draft.skip(&upper, tok.at.clone());
            }
            "FACT" => match v.text.find('|') {
                Some(i) if i > 0 => obj.facts.push((v.slice(0, i), v.slice(i + 1, v.text.len()))),
                _ => errors.push(Diagnostic::at(codes::SYNTAX, &v, FACT_SHAPE)),
            },
            "VISIBLE" => obj.visible = Some(v),
            "KEY" | "CATEGORY" => {}
            _ if key_token.is_some_and(|k| k == upper) => {}
            _ => self.draft.skip(&upper, tok.at.clone()),
        }
    }

    /// Applies `.COPY=`, then `.MOD`, then `.FORGET` lines, as PCGen does after a kind's files.
    fn apply_pending(&mut self, pending: Vec<Pending>) {
        let (mut copies, mut rest): (Vec<_>, Vec<_>) =
            pending.into_iter().partition(|p| matches!(p.action, Action::Copy(_)));
        let (mods, forgets): (Vec<_>, Vec<_>) = rest.drain(..).partition(|p| matches!(p.action, Action::Mod));
        for p in copies.drain(..).chain(mods).chain(forgets) {
            let Some(i) = self.lookup(&p) else {
                let what = match p.action {
                    Action::Copy(_) => ".COPY",
                    Action::Mod => ".MOD",
                    Action::Forget => ".FORGET",
                };
                let keys: Vec<&str> = self
                    .index
                    .iter()
                    .filter(|((kind, _), ids)| kind == p.kind && !ids.is_empty())
                    .map(|(_, ids)| &*self.draft.objects[ids[0]].key.text)
                    .collect();
                let e = Diagnostic::at(
                    codes::UNKNOWN_OBJECT,
                    &p.target,
                    format!("{what}: there is no {} `{}`", p.kind, p.target.text),
                )
                .suggest(&p.target.text, keys);
                self.draft.errors.push(e);
                continue;
            };
            match p.action {
                Action::Mod => {
                    let mut obj = std::mem::replace(
                        &mut self.draft.objects[i],
                        ObjectDraft::new(t(""), t(""), builtin()),
                    );
                    for tok in &p.tokens {
                        self.object_token(&mut obj, tok, None);
                    }
                    self.draft.objects[i] = obj;
                }
                Action::Copy(new_key) => {
                    let mut obj = self.draft.objects[i].clone();
                    obj.key = new_key.clone();
                    obj.name = new_key;
                    obj.at = p.at.clone();
                    for tok in &p.tokens {
                        self.object_token(&mut obj, tok, None);
                    }
                    self.push_object(obj);
                }
                Action::Forget => {
                    self.forgotten[i] = true;
                    let k = (p.kind.to_owned(), p.target.text.to_lowercase());
                    if let Some(v) = self.index.get_mut(&k) {
                        v.retain(|&x| x != i);
                    }
                }
            }
        }
    }

    fn lookup(&self, p: &Pending) -> Option<usize> {
        let ids = self.index.get(&(p.kind.to_owned(), p.target.text.to_lowercase()))?;
        ids.iter()
            .copied()
            .filter(|i| !self.forgotten[*i])
            .find(|i| match &p.category {
                None => true,
                Some(c) => {
                    self.draft.objects[*i].category.as_ref().is_some_and(|x| x.text.eq_ignore_ascii_case(c))
                }
            })
            .or_else(|| ids.iter().copied().find(|i| !self.forgotten[*i]))
    }

    /// Removes forgotten objects from the draft. Call after the last campaign.
    pub fn finish(self) {
        let forgotten = self.forgotten;
        let mut i = 0;
        self.draft.objects.retain(|_| {
            let keep = !forgotten.get(i).copied().unwrap_or(false);
            i += 1;
            keep
        });
    }
}

/// PCGen's rule for a declared variable name: an ASCII letter, then ASCII letters, digits and `_`.
fn legal_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Parses the value of a `MODIFY:` token: `Var|TYPE|value[|PRIORITY=n]`.
fn parse_modify(v: &Text, tok: &Text, errors: &mut Vec<Diagnostic>) -> Option<ModDraft> {
    let parts = split_bars(v);
    if parts.len() < 3 {
        errors.push(Diagnostic::at(codes::SYNTAX, v, "MODIFY is written Var|TYPE|value[|PRIORITY=n]"));
        return None;
    }
    modify_parts(&parts, v, tok, errors)
}

fn modify_parts(parts: &[Text], v: &Text, tok: &Text, errors: &mut Vec<Diagnostic>) -> Option<ModDraft> {
    let mut priority = None;
    for extra in &parts[3..] {
        match extra.text.strip_prefix("PRIORITY=") {
            Some(_) if priority.is_none() => priority = Some(extra.slice(9, extra.text.len())),
            _ => {
                errors.push(Diagnostic::at(
                    codes::SYNTAX,
                    extra,
                    format!("unexpected `{}` after the modifier's value (expected PRIORITY=n)", extra.text),
                ));
                return None;
            }
        }
    }
    let _ = v;
    Some(ModDraft {
        var: parts[0].clone(),
        kind: parts[1].clone(),
        value: parts[2].clone(),
        priority,
        condition: None,
        at: tok.at.clone(),
    })
}

/// Splits at `|` outside parentheses and quotes; `||` is the formula operator, not a separator.
fn split_bars(v: &Text) -> Vec<Text> {
    let bytes = v.text.as_bytes();
    let (mut depth, mut quoted, mut start) = (0i32, false, 0usize);
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => quoted = !quoted,
            b'(' if !quoted => depth += 1,
            b')' if !quoted => depth -= 1,
            b'|' if !quoted && bytes.get(i + 1) == Some(&b'|') => i += 1,
            b'|' if !quoted && depth <= 0 => {
                out.push(v.slice(start, i));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(v.slice(start, bytes.len()));
    out
}

/// Splits a token at its first `:` into the tag and the value.
fn split_tag(tok: &Text) -> (&str, Option<Text>) {
    match tok.text.find(':') {
        Some(i) => (&tok.text[..i], Some(tok.slice(i + 1, tok.text.len()))),
        None => (&tok.text, None),
    }
}

/// The non-comment lines of a file, each as its tab-separated, non-empty tokens; every token's
/// origin is its byte offset in the file's shared text.
fn lines(file: &Arc<SourceFile>) -> impl Iterator<Item = (u32, Vec<Text>)> + '_ {
    let text = file.text();
    let base = text.as_ptr() as usize;
    text.split('\n').enumerate().filter_map(move |(n, raw)| {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            return None;
        }
        let mut tokens = Vec::new();
        for field in line.split('\t') {
            let trimmed = field.trim();
            if !trimmed.is_empty() {
                // `trimmed` is a slice of the file's text: its offset is its distance from the start.
                let at = file.origin(trimmed.as_ptr() as usize - base);
                tokens.push(Text::new(trimmed, at));
            }
        }
        (!tokens.is_empty()).then_some((n as u32 + 1, tokens))
    })
}

/// The non-comment lines of a comma-separated file (a DATATABLE), each as its cells: trimmed,
/// a quoted cell (`"a, b"`) without its quotes, empty trailing cells dropped (PCGen's table
/// lines end in commas). Each cell's origin is its place in the file.
fn csv_lines(file: &Arc<SourceFile>) -> impl Iterator<Item = Vec<Text>> + '_ {
    let text = file.text();
    let base = text.as_ptr() as usize;
    text.split('\n').filter_map(move |raw| {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let line = line.strip_prefix('\u{feff}').unwrap_or(line);
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            return None;
        }
        let bytes = line.as_bytes();
        let mut cells = Vec::new();
        let (mut start, mut quoted) = (0usize, false);
        for i in 0..=bytes.len() {
            match bytes.get(i) {
                Some(b'"') => quoted = !quoted,
                Some(b',') if !quoted => {}
                Some(_) => continue,
                None => {}
            }
            if quoted || bytes.get(i) == Some(&b'"') {
                continue;
            }
            // At a separating comma or the end of the line: the cell before it.
            let field = line[start..i].trim();
            let field = field.strip_prefix('"').and_then(|f| f.strip_suffix('"')).unwrap_or(field);
            // `field` is a slice of the file's text: its offset is its distance from the start.
            cells.push(Text::new(field, file.origin(field.as_ptr() as usize - base)));
            start = i + 1;
        }
        while cells.last().is_some_and(|c| c.text.is_empty()) {
            cells.pop();
        }
        (!cells.is_empty()).then_some(cells)
    })
}

/// The nearest ancestor folder named `data`: where `*/` and `@/` references start.
fn data_root(pcc: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(pcc).ok()?;
    abs.ancestors().skip(1).find(|a| a.file_name().is_some_and(|n| n == "data")).map(Path::to_path_buf)
}

fn display_path(p: &Path, root: Option<&Path>) -> String {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    match root.and_then(|r| abs.strip_prefix(r).ok()) {
        Some(rel) => rel.display().to_string(),
        None => p.display().to_string(),
    }
}

/// Resolves a file reference of a campaign file.
fn resolve(path: &Text, dir: &Path, root: Option<&Path>, errors: &mut Vec<Diagnostic>) -> Option<PathBuf> {
    let p = path.text.trim();
    if let Some(rest) = p.strip_prefix("*/").or_else(|| p.strip_prefix("@/")) {
        return match root {
            Some(r) => Some(r.join(rest)),
            None => {
                errors.push(Diagnostic::at(
                    codes::MISSING_FILE,
                    path,
                    format!("`{p}` is relative to PCGen's data folder, but the campaign is not inside a folder named `data`"),
                ));
                None
            }
        };
    }
    Some(dir.join(p))
}
