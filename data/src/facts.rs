//! Facts about a ruleset's objects, and lists of them: PCGen's `getFact(KIND, OBJECT, "Fact")`
//! and `listAll(KIND[, VIEW])`.
//!
//! A PCGen dataset declares the facts objects of a kind may carry (`FACTDEF:RACE|BaseSize` with
//! `DATAFORMAT:`), and objects carry them (`FACT:BaseSize|M`). `getFact("RACE", "Human",
//! "BaseSize")` is the Human race's BaseSize; the object may also be a STRING formula naming the
//! key (`getFact("RACE", RaceKey, "BaseSize")`) or, for the enumeration formats DEITY and
//! ALIGNMENT, a value of that format. `listAll("RACE")` is every race's key, in the order the
//! data defines them (an ARRAY of STRING; for DEITY and ALIGNMENT an ARRAY of that format),
//! `listAll("RACE", "VISIBLE_DISPLAY")` those a view shows (PCGen's `VISIBLE:` token).
//!
//! Everything is checked at load: the kind, the fact's definition, each fact's value against its
//! format, each `VISIBLE:` value, a constant object's existence and its having the fact. Facts
//! never change while a ruleset lives, so both functions depend on their arguments alone (a
//! constant call is a constant).
//!
//! What it does not do: sets of facts (`FACTSET`), and objects of kinds sheetd does not read
//! (CLASS, SKILL, …) have no facts.

use crate::Map;
use crate::diag::{Diagnostic, Text, codes};
use crate::draft::Draft;
use formula::{
    BoundFunction, CallSite, ErrorCode, EvalContext, ExternalFunction, Format, FormulaError, Value,
};
use std::sync::Arc;

/// Where an object shows (PCGen's `VISIBLE:` values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Visibility {
    /// `YES`, or no `VISIBLE:`: everywhere.
    Default,
    /// `NO`.
    Hidden,
    /// `EXPORT`: on output sheets, not on screen.
    OutputOnly,
    /// `DISPLAY`: on screen, not on output sheets.
    DisplayOnly,
    /// `QUALIFY`: where the character qualifies for it.
    Qualify,
}

impl Visibility {
    fn named(text: &str) -> Option<Visibility> {
        Some(match text.to_ascii_uppercase().as_str() {
            "YES" => Visibility::Default,
            "NO" => Visibility::Hidden,
            "EXPORT" => Visibility::OutputOnly,
            "DISPLAY" => Visibility::DisplayOnly,
            "QUALIFY" => Visibility::Qualify,
            _ => return None,
        })
    }
}

/// `listAll`'s views, as PCGen names them.
const VIEWS: &[&str] = &["ALL", "VISIBLE_DISPLAY", "VISIBLE_EXPORT", "HIDDEN_DISPLAY", "HIDDEN_EXPORT"];

/// Whether an object of visibility `v` is in view `view` (one of [`VIEWS`]), as PCGen decides.
fn in_view(v: Visibility, view: &str) -> bool {
    use Visibility::*;
    match view {
        "ALL" => true,
        "HIDDEN_DISPLAY" => matches!(v, Hidden | OutputOnly),
        "HIDDEN_EXPORT" => matches!(v, Hidden | DisplayOnly),
        "VISIBLE_EXPORT" => matches!(v, Default | OutputOnly),
        // VISIBLE_DISPLAY
        _ => matches!(v, Default | DisplayOnly),
    }
}

/// One object (or enumeration value) of a kind.
#[derive(Debug)]
struct Entry {
    /// As `listAll` lists it: its key as a STRING, or the enumeration's value.
    value: Value,
    visibility: Visibility,
    /// Its facts' values, by the fact's name in lower case.
    facts: Map<String, Value>,
}

/// The objects of one kind, and the facts they may carry.
#[derive(Debug)]
struct Kind {
    name: Arc<str>,
    /// What identifies an object: STRING (its key), or the enumeration format (DEITY).
    element: Format,
    entries: Vec<Entry>,
    /// An entry by its key in lower case (the first, when several share it).
    by_key: Map<String, usize>,
    /// The facts defined for the kind: by name in lower case, its name and format.
    defs: Map<String, (Arc<str>, Format)>,
}

impl Kind {
    fn entry(&self, key: &str) -> Option<&Entry> {
        self.by_key.get(&key.to_lowercase()).map(|&i| &self.entries[i])
    }

    /// The key an argument's value names: a STRING's text, an enumeration value's.
    fn key_of(v: &Value) -> String {
        match v {
            Value::String(s) => s.to_string(),
            other => other.to_string(),
        }
    }
}

/// The kinds of a ruleset with their objects' facts, checked.
#[derive(Debug, Default)]
pub struct Facts {
    kinds: Map<String, Arc<Kind>>,
}

impl Facts {
    /// Checks the facts of `draft`'s objects and enumeration values against its FACTDEFs.
    /// `format` parses a format's name.
    pub fn compile(
        draft: &Draft,
        format: impl Fn(&str) -> Result<Format, String>,
        errors: &mut Vec<Diagnostic>,
    ) -> Facts {
        let mut kinds: Map<String, Kind> = Map::default();
        let mut add_kind = |name: &str, element: Format| {
            kinds.entry(name.to_ascii_uppercase()).or_insert_with(|| Kind {
                name: Arc::from(name.to_ascii_uppercase()),
                element,
                entries: Vec::new(),
                by_key: Map::default(),
                defs: Map::default(),
            });
        };
        for k in &draft.kinds {
            add_kind(&k.name.text, Format::String);
        }
        for (kind, _) in &draft.enum_values {
            if let Ok(f) = format(kind) {
                add_kind(kind, f);
            }
        }
        let names = kind_names(draft);
        for d in &draft.fact_defs {
            let Some(kind) = kinds.get_mut(&d.kind.text.to_ascii_uppercase()) else {
                // Facts of kinds sheetd does not read (CLASS, SKILL, …) are not kept.
                continue;
            };
            let Some(f) = fact_format(d.format.as_ref(), &names, &format, errors) else {
                continue;
            };
            kind.defs.insert(d.name.text.to_lowercase(), (d.name.text.clone(), f));
        }
        let objects = draft.objects.iter().map(|o| (&o.kind.text, &o.key, &o.facts, &o.visible));
        let values = draft.enum_facts.iter().map(|v| (&v.kind, &v.key, &v.facts, &v.visible));
        for (kind, key, facts, visible) in objects.chain(values) {
            let Some(k) = kinds.get_mut(&kind.to_ascii_uppercase()) else { continue };
            let Some(entry) = Facts::entry(k, key, facts, visible.as_ref(), errors) else { continue };
            k.by_key.entry(key.text.to_lowercase()).or_insert(k.entries.len());
            k.entries.push(entry);
        }
        Facts { kinds: kinds.into_iter().map(|(n, k)| (n, Arc::new(k))).collect() }
    }

    /// One object's entry: its facts checked against the kind's definitions.
    fn entry(
        k: &Kind,
        key: &Text,
        facts: &[(Text, Text)],
        visible: Option<&Text>,
        errors: &mut Vec<Diagnostic>,
    ) -> Option<Entry> {
        let value = match &k.element {
            Format::String => Value::String(key.text.clone()),
            f => Value::parse_literal(f, &key.text).ok()?,
        };
        let visibility = match visible {
            None => Visibility::Default,
            Some(v) => Visibility::named(&v.text).unwrap_or_else(|| {
                errors.push(Diagnostic::at(
                    codes::BAD_VALUE,
                    v,
                    format!("VISIBLE is YES, NO, EXPORT, DISPLAY or QUALIFY, not `{}`", v.text),
                ));
                Visibility::Default
            }),
        };
        let mut values = Map::default();
        for (name, text) in facts {
            let Some((_, f)) = k.defs.get(&name.text.to_lowercase()) else {
                let e = Diagnostic::at(
                    codes::UNKNOWN_FACT,
                    name,
                    format!(
                        "{} has no fact `{}`: a FACTDEF:{}|{} declares it",
                        k.name, name.text, k.name, name.text
                    ),
                )
                .suggest(&name.text, k.defs.values().map(|(n, _)| &**n));
                errors.push(e);
                continue;
            };
            match Value::parse_literal(f, &text.text) {
                Ok(v) => {
                    values.insert(name.text.to_lowercase(), v);
                }
                Err(m) => {
                    errors.push(Diagnostic::at(codes::BAD_VALUE, text, format!("fact `{}`: {m}", name.text)))
                }
            }
        }
        Some(Entry { value, visibility, facts: values })
    }
}

/// The kinds' names in upper case (a fact of format SIZEADJUSTMENT or RACE holds a key).
fn kind_names(draft: &Draft) -> Vec<String> {
    draft.kinds.iter().map(|k| k.name.text.to_ascii_uppercase()).collect()
}

/// A FACTDEF's format: NUMBER, BOOLEAN or STRING in any case (STRING when absent); a kind's
/// name, or SIZEADJUSTMENT (PCGen's sizes), for a fact naming an object by its key (STRING);
/// else a format of the ruleset's.
fn fact_format(
    written: Option<&Text>,
    kinds: &[String],
    format: &impl Fn(&str) -> Result<Format, String>,
    errors: &mut Vec<Diagnostic>,
) -> Option<Format> {
    let Some(w) = written else { return Some(Format::String) };
    let upper = w.text.to_ascii_uppercase();
    if upper == "SIZEADJUSTMENT" || kinds.contains(&upper) {
        return Some(Format::String);
    }
    match format(&upper) {
        Ok(f) => Some(f),
        Err(m) => {
            errors.push(Diagnostic::at(codes::UNKNOWN_FORMAT, w, m));
            None
        }
    }
}

/// A string literal argument naming something, or an error saying so (`example` shows a call).
fn literal(site: &CallSite<'_>, i: usize, what: &str, example: &str) -> Result<Arc<str>, FormulaError> {
    let arg = &site.args()[i];
    match &arg.constant {
        Some(Value::String(s)) if arg.format == Format::String => Ok(s.clone()),
        _ => Err(FormulaError::new(
            ErrorCode::InvalidArgument,
            arg.span,
            format!("`{}` takes the {what} as a string literal, e.g. {example}", site.name()),
        )),
    }
}

/// The kind named by argument 0.
fn kind_arg(facts: &Facts, site: &CallSite<'_>, example: &str) -> Result<Arc<Kind>, FormulaError> {
    let name = literal(site, 0, "kind", example)?;
    facts.kinds.get(&name.to_ascii_uppercase()).cloned().ok_or_else(|| {
        let mut e = FormulaError::new(
            ErrorCode::InvalidArgument,
            site.args()[0].span,
            format!("there is no kind of object `{name}`"),
        );
        if let Some(h) = formula::suggest::did_you_mean(&name, facts.kinds.values().map(|k| &*k.name)) {
            e = e.with_help(h);
        }
        e
    })
}

/// `getFact(KIND, OBJECT, "Fact")`.
pub(crate) struct GetFact {
    pub facts: Arc<Facts>,
}

#[derive(Debug)]
struct BoundGetFact {
    kind: Arc<Kind>,
    /// The fact's name in lower case, and as defined.
    fact: String,
    shown: Arc<str>,
    format: Format,
}

impl BoundGetFact {
    fn get(&self, key: &str) -> Result<&Value, String> {
        let Some(entry) = self.kind.entry(key) else {
            return Err(format!("there is no {} `{key}`", self.kind.name));
        };
        entry
            .facts
            .get(&self.fact)
            .ok_or_else(|| format!("{} `{key}` has no fact `{}`", self.kind.name, self.shown))
    }
}

const GET_FACT: &str = "getFact(\"RACE\", \"Human\", \"BaseSize\")";

impl ExternalFunction for GetFact {
    fn name(&self) -> &str {
        "getFact"
    }

    fn bind(&self, site: &mut CallSite<'_>) -> Result<Arc<dyn BoundFunction>, FormulaError> {
        site.expect_arity(3)?;
        let kind = kind_arg(&self.facts, site, GET_FACT)?;
        let fact = literal(site, 2, "fact's name", GET_FACT)?;
        let Some((shown, format)) = kind.defs.get(&fact.to_lowercase()).cloned() else {
            let mut e = FormulaError::new(
                ErrorCode::InvalidArgument,
                site.args()[2].span,
                format!(
                    "{} has no fact `{fact}` (a FACTDEF:{}|{fact} would declare it)",
                    kind.name, kind.name
                ),
            );
            if let Some(h) = formula::suggest::did_you_mean(&fact, kind.defs.values().map(|(n, _)| &**n)) {
                e = e.with_help(h);
            }
            return Err(e);
        };
        let object = &site.args()[1];
        if object.format != Format::String && object.format != kind.element {
            return Err(FormulaError::new(
                ErrorCode::FormatMismatch,
                object.span,
                format!(
                    "the object is named by its key, a STRING (or a {}); this is a {}",
                    kind.element, object.format
                ),
            ));
        }
        let bound = BoundGetFact { kind, fact: fact.to_lowercase(), shown, format };
        // A constant object is checked now: it exists and has the fact.
        if let Some(v) = &object.constant
            && let Err(m) = bound.get(&Kind::key_of(v))
        {
            let mut e = FormulaError::new(ErrorCode::InvalidArgument, object.span, m);
            let keys = bound.kind.entries.iter().map(|e| Kind::key_of(&e.value)).collect::<Vec<_>>();
            if let Some(h) = formula::suggest::did_you_mean(&Kind::key_of(v), keys.iter().map(String::as_str))
            {
                e = e.with_help(h);
            }
            return Err(e);
        }
        Ok(Arc::new(bound))
    }
}

impl BoundFunction for BoundGetFact {
    fn format(&self) -> Format {
        self.format.clone()
    }

    fn is_static(&self) -> bool {
        // Facts never change while the ruleset lives.
        true
    }

    fn eval(&self, args: &[Value], _read: &dyn EvalContext) -> Result<Value, String> {
        self.get(&Kind::key_of(&args[1])).cloned()
    }
}

/// `listAll(KIND[, VIEW])`.
pub(crate) struct ListAll {
    pub facts: Arc<Facts>,
}

/// A `listAll` call: its list, made when it was checked.
#[derive(Debug)]
struct BoundListAll {
    format: Format,
    list: Value,
}

const LIST_ALL: &str = "listAll(\"DEITY\") or listAll(\"RACE\", \"VISIBLE_DISPLAY\")";

impl ExternalFunction for ListAll {
    fn name(&self) -> &str {
        "listAll"
    }

    fn bind(&self, site: &mut CallSite<'_>) -> Result<Arc<dyn BoundFunction>, FormulaError> {
        if !(1..=2).contains(&site.args().len()) {
            return Err(FormulaError::new(
                ErrorCode::WrongArgumentCount,
                site.span(),
                format!("`listAll` takes a kind and, optionally, a view: {LIST_ALL}"),
            ));
        }
        let kind = kind_arg(&self.facts, site, LIST_ALL)?;
        let view = match site.args().len() {
            1 => "ALL".to_owned(),
            _ => {
                let v = literal(site, 1, "view", LIST_ALL)?.to_ascii_uppercase();
                if !VIEWS.contains(&v.as_str()) {
                    return Err(FormulaError::new(
                        ErrorCode::InvalidArgument,
                        site.args()[1].span,
                        format!("there is no view `{v}` (views: {})", VIEWS.join(", ")),
                    ));
                }
                v
            }
        };
        let items: Vec<Value> =
            kind.entries.iter().filter(|e| in_view(e.visibility, &view)).map(|e| e.value.clone()).collect();
        let format = Format::Array(Arc::new(kind.element.clone()));
        Ok(Arc::new(BoundListAll { format, list: Value::Array(items.into()) }))
    }
}

impl BoundFunction for BoundListAll {
    fn format(&self) -> Format {
        self.format.clone()
    }

    fn is_static(&self) -> bool {
        true
    }

    fn eval(&self, _args: &[Value], _read: &dyn EvalContext) -> Result<Value, String> {
        Ok(self.list.clone())
    }
}
