//! Writing what the features and creatures read become: a native ruleset (see
//! `docs/ruleset-format.md`) on top of the prelude. Each creature is an object of kind
//! `CREATURE` whose modifiers set its attributes and its features' texts and uses; each
//! subfeature is an event rule of that object, each effect another rule fired by it through the
//! prelude's `Effect` event, so that its condition is read per target; passive subfeatures are
//! the object's own modifiers. Postfix formulas are compiled here, per creature, with its
//! runtime variables, and every name resolved for where the formula runs.

use super::read::{self, Duration, Effect, Feature, Noun, Read, Refill, Subfeature, Trigger, Val, What};
use crate::Error;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::ops::Range;

/// The error codes of this module.
pub mod codes {
    /// A creature has a feature no file defines, or a feature or creature is defined twice.
    pub const UNKNOWN_FEATURE: &str = "creature.unknown_feature";
    /// A name two things define (two features, two creatures).
    pub const DUPLICATE: &str = "creature.duplicate";
    /// Something the seed allows that sheetd does not run here, said why.
    pub const UNSUPPORTED: &str = "creature.unsupported";
    /// A creature's attribute that is neither the prelude's nor a creatures file's.
    pub const ATTRIBUTE: &str = "creature.attribute";
}

/// An error in file `file`.
pub type FileError = (usize, Error);

/// A STRING literal for a modifier's `set`, quoted: one that starts with `=` is written
/// doubled, since `=` marks a formula (see docs/ruleset-format.md).
pub fn literal(text: &str) -> String {
    if text.starts_with('=') { q(&format!("={text}")) } else { q(text) }
}

/// Quotes text as a TOML basic string.
pub fn q(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A feature's names in the ruleset: its identifier (for its private variables) and the
/// variables it uses.
struct Names {
    ident: String,
}

/// Where a formula runs, which decides what its names read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cx<'a> {
    /// In the feature's creature's scope, during an event: `creature.X` reads the holder
    /// channel the trigger binds (`None`: it binds no other creature).
    Owner(Option<&'a str>),
    /// In the target's scope: `creature.X` is its own, `self.X` reads the owner through
    /// `OWNER` (not for a lasting modifier, whose owner channel moves on).
    Target { is_self: bool, lasting: bool },
    /// A passive modifier of the creature: its own attributes only.
    Passive,
}

struct Writer<'a> {
    attributes: BTreeSet<String>,
    /// Upper-case attribute name → its spelling.
    spelled: BTreeMap<String, String>,
    features: BTreeMap<String, (&'a Feature, Names)>,
    /// Private `NVn` stocks to declare.
    privates: BTreeSet<String>,
    /// Use counters (uses spent) to declare.
    counters: BTreeSet<String>,
    /// Variables to declare, with their format: features' texts, uses left.
    texts: BTreeSet<(String, &'static str)>,
    /// The creatures' attributes and passive effects, as `modify_other` entries of the
    /// prelude's defaults object (after the defaults, so that they win).
    others: Vec<String>,
    rules: String,
    objects: String,
    errors: Vec<FileError>,
    /// Checking a feature no creature has: any runtime variable is allowed.
    any_vars: bool,
}

/// The native ruleset the reads compile to: the prelude (with the creatures files' attribute
/// overrides) and the creatures' text, as two files. Every error found, each in its file.
// long: the passes in order (attributes, features, creatures, unused features, the files), each short.
pub fn compile(reads: &[Read]) -> Result<(String, String), Vec<FileError>> {
    let mut w = Writer {
        attributes: BTreeSet::new(),
        spelled: BTreeMap::new(),
        features: BTreeMap::new(),
        privates: BTreeSet::new(),
        counters: BTreeSet::new(),
        texts: BTreeSet::new(),
        others: Vec::new(),
        rules: String::new(),
        objects: String::new(),
        errors: Vec::new(),
        any_vars: false,
    };
    for a in crate::prelude::ATTRIBUTES {
        w.attributes.insert(a.name.to_ascii_uppercase());
        w.spelled.insert(a.name.to_ascii_uppercase(), a.name.to_owned());
    }
    // The creatures files' attributes: added first, so that defaults may read one another.
    let mut overrides = Vec::new();
    for (file, r) in reads.iter().enumerate() {
        for (name, _) in &r.attributes {
            let ok = name.text.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && name.text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if !ok {
                w.errors.push((
                    file,
                    err(
                        super::json::codes::SHAPE,
                        format!("`{}` is not an attribute name (letters, digits, `_`, `.`)", name.text),
                        name.span.clone(),
                    ),
                ));
                continue;
            }
            w.attributes.insert(name.text.to_ascii_uppercase());
            w.spelled.entry(name.text.to_ascii_uppercase()).or_insert_with(|| name.text.clone());
        }
    }
    for (file, r) in reads.iter().enumerate() {
        for (name, v) in &r.attributes {
            if let Some(f) = w.value(file, v, Cx::Passive, None, &[]) {
                overrides.push((w.spell(&name.text), f.0));
            }
        }
    }
    let mut seen_idents = BTreeSet::new();
    for r in reads {
        for f in &r.features {
            let key = f.name.text.to_ascii_lowercase();
            if w.features.contains_key(&key) {
                w.errors.push((
                    f.file,
                    err(
                        codes::DUPLICATE,
                        format!("the feature `{}` is defined twice", f.name.text),
                        f.name.span.clone(),
                    ),
                ));
                continue;
            }
            let mut ident = ident(&f.name.text);
            let base = ident.clone();
            let mut n = 2;
            while !seen_idents.insert(ident.to_ascii_uppercase()) {
                ident = format!("{base}_{n}");
                n += 1;
            }
            w.features.insert(key, (f, Names { ident }));
        }
    }
    let mut seen = BTreeSet::new();
    for (file, r) in reads.iter().enumerate() {
        for c in &r.creatures {
            if !seen.insert(c.name.text.to_ascii_lowercase()) {
                w.errors.push((
                    file,
                    err(
                        codes::DUPLICATE,
                        format!("the creature `{}` is defined twice", c.name.text),
                        c.name.span.clone(),
                    ),
                ));
                continue;
            }
            w.creature(file, c);
        }
    }
    // A feature no creature has is checked all the same, with any runtime variable allowed;
    // what the check writes is dropped.
    let used: BTreeSet<String> = reads
        .iter()
        .flat_map(|r| &r.creatures)
        .flat_map(|c| &c.features)
        .map(|u| u.feature.text.to_ascii_lowercase())
        .collect();
    let unused: Vec<(&Feature, String)> = w
        .features
        .iter()
        .filter(|(k, _)| !used.contains(*k))
        .map(|(_, (f, n))| (*f, n.ident.clone()))
        .collect();
    for (f, ident) in unused {
        w.check_unused(f, &ident);
    }
    let prelude = match crate::prelude::ruleset_text_with(&overrides, &w.others) {
        Ok(t) => t,
        Err(e) => {
            w.errors.push((0, e));
            String::new()
        }
    };
    if !w.errors.is_empty() {
        return Err(w.errors);
    }
    let mut body =
        String::from("# The creatures and their features, compiled by sheetd's creature dialect.\n");
    let scope = crate::prelude::SCOPE;
    if !w.privates.is_empty() || !w.counters.is_empty() {
        let _ = writeln!(body, "\n[stocks.{}]", q(scope));
        for p in w.privates.iter().chain(&w.counters) {
            let _ = writeln!(body, "{} = {{}}", q(p));
        }
    }
    if !w.texts.is_empty() {
        let _ = writeln!(body, "\n[variables.{}]", q(scope));
        for (t, format) in &w.texts {
            let _ = writeln!(body, "{} = \"{format}\"", q(t));
        }
    }
    body.push_str(&w.objects);
    body.push_str(&w.rules);
    Ok((prelude, body))
}

fn err(code: &'static str, message: String, span: Range<usize>) -> Error {
    Error { code, message, span }
}

/// A feature's name as an identifier: letters, digits and `_`, starting with a letter.
pub fn ident(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_end_matches('_').to_owned();
    if out.starts_with(|c: char| c.is_ascii_alphabetic()) { out } else { format!("F_{out}") }
}

/// A modifier's `when`, or a rule's guard, from conditions (each a native NUMBER formula).
fn all_true(parts: &[String]) -> Option<String> {
    (!parts.is_empty()).then(|| parts.join(" && "))
}

impl<'a> Writer<'a> {
    fn spell(&self, name: &str) -> String {
        self.spelled.get(&name.to_ascii_uppercase()).cloned().unwrap_or_else(|| name.to_owned())
    }

    /// Checks a feature no creature has: every subfeature compiled for a creature of no name,
    /// any runtime variable reading 0, and nothing kept but the errors.
    fn check_unused(&mut self, f: &Feature, ident: &str) {
        let kept = (self.rules.len(), self.objects.len(), self.others.len());
        let sets = (self.privates.clone(), self.counters.clone(), self.texts.clone());
        self.any_vars = true;
        if let Some(text) = &f.text
            && let Err(e) = crate::template::parse(&text.text)
        {
            let span = text.inner(e.span.clone());
            self.errors.push((f.file, Error { span, ..e }));
        }
        let mut scratch = Vec::new();
        for (i, sub) in f.subfeatures.iter().enumerate() {
            self.subfeature(f, ident, "(a creature)", i + 1, sub, &[], &mut scratch);
        }
        self.any_vars = false;
        self.rules.truncate(kept.0);
        self.objects.truncate(kept.1);
        self.others.truncate(kept.2);
        (self.privates, self.counters, self.texts) = sets;
    }

    /// The start of a `modify_other` entry on creature `name`'s instances (without its
    /// closing brace).
    fn other_of(&self, name: &str) -> String {
        format!("{{ scope = {}, key = {}", q(crate::prelude::SCOPE), q(name))
    }

    /// The attribute `name` names, spelled as declared.
    fn attribute(&self, name: &str) -> Option<String> {
        let up = name.to_ascii_uppercase();
        self.attributes.contains(&up).then(|| self.spell(name))
    }

    /// What a postfix name stands for where the formula runs.
    fn resolve(
        &mut self,
        name: &str,
        cx: Cx<'_>,
        private: Option<&str>,
        vars: &[String],
    ) -> Result<String, String> {
        let up = name.to_ascii_uppercase();
        if let Some(n) = up.strip_prefix('V').and_then(|d| d.parse::<usize>().ok()) {
            if self.any_vars {
                return Ok("0".to_owned());
            }
            return match vars.get(n) {
                Some(v) if v.starts_with('-') => Ok(format!("(0{v})")),
                Some(v) => Ok(v.clone()),
                None => {
                    Err(format!("`{name}`: the feature is given {} runtime variable(s) (V0…)", vars.len()))
                }
            };
        }
        if up.starts_with("NV") && up[2..].parse::<u32>().is_ok_and(|n| n >= 1) {
            let Some(ident) = private else {
                return Err(format!(
                    "`{name}` is a feature's private variable, and this formula belongs to no feature"
                ));
            };
            if matches!(cx, Cx::Target { is_self: false, .. } | Cx::Passive) {
                return Err(format!(
                    "`{name}` is the feature's own, and this formula is read on its target: sheetd reads a feature's private variables only where it runs"
                ));
            }
            let var = format!("{ident}.{up}");
            self.privates.insert(var.clone());
            return Ok(var);
        }
        if up == "NAME" {
            return Err("`NAME` is the creature's name, text: a formula reads numbers".to_owned());
        }
        let (who, attr) = match self.attribute(name) {
            Some(a) => ("self", a),
            None => match name.split_once('.') {
                Some((w, rest)) => match self.attribute(rest) {
                    Some(a) => (w, a),
                    None => return Err(format!("`{rest}` is no attribute of a creature")),
                },
                None => {
                    return Err(format!(
                        "`{name}` is no attribute, runtime variable (V0…) or private variable (NV1…)"
                    ));
                }
            },
        };
        let who = who.to_ascii_lowercase();
        match (who.as_str(), cx) {
            ("self", Cx::Owner(_) | Cx::Passive | Cx::Target { is_self: true, .. }) => Ok(attr),
            ("self", Cx::Target { lasting: false, .. }) => Ok(format!("OWNER.{attr}")),
            ("self", Cx::Target { lasting: true, .. }) => Err(format!(
                "`{name}`: a lasting effect on another creature reads only that creature's attributes (`creature.{attr}`), numbers and runtime variables"
            )),
            ("creature", Cx::Owner(Some(holder))) => Ok(format!("{holder}.{attr}")),
            ("creature", Cx::Owner(None)) => {
                Err(format!("`{name}`: this trigger involves no other creature"))
            }
            ("creature", Cx::Target { .. }) => Ok(attr),
            ("creature", Cx::Passive) => {
                Err(format!("`{name}`: a passive feature involves no other creature"))
            }
            (_, Cx::Target { lasting: true, .. } | Cx::Passive) => {
                Err(format!("`{name}`: a lasting or passive effect reads only its own creature's attributes"))
            }
            (id, _) => Ok(format!("@{id}.{attr}")),
        }
    }

    /// A value as a native NUMBER formula, and the stores it makes; `None` after an error
    /// (recorded).
    fn value(
        &mut self,
        file: usize,
        v: &Val,
        cx: Cx<'_>,
        private: Option<&str>,
        vars: &[String],
    ) -> Option<(String, Vec<crate::postfix::Store>)> {
        match v {
            Val::Number(n, _) if n.starts_with('-') => Some((format!("(0{n})"), Vec::new())),
            Val::Number(n, _) => Some((n.clone(), Vec::new())),
            Val::Postfix(s) => {
                let (text, shift) = read::as_postfix(s);
                let mut unknown = None;
                let r = crate::postfix::compile(&text, &mut |name| {
                    self.resolve(name, cx, private, vars).inspect_err(|_| unknown = Some(name.to_owned()))
                });
                match r {
                    Ok(c) => Some((c.formula, c.stores)),
                    Err(e) => {
                        let span = read::postfix_span(s, shift, e.span.clone());
                        self.errors.push((file, Error { span, ..e }));
                        None
                    }
                }
            }
        }
    }

    // long: one creature's object, its passive modifiers and every rule of its features, in
    // the order they are written.
    fn creature(&mut self, file: usize, c: &read::Creature) {
        let name = &c.name.text;
        let mut modify = Vec::new();
        for (attr, v) in &c.attributes {
            let Some(a) = self.attribute(&attr.text) else {
                self.errors.push((
                    file,
                    err(
                        codes::ATTRIBUTE,
                        format!(
                            "`{}` is no attribute of a creature (add it in the file's `attributes`)",
                            attr.text
                        ),
                        attr.span.clone(),
                    ),
                ));
                continue;
            };
            if crate::prelude::STOCKS.iter().any(|(n, _)| n.eq_ignore_ascii_case(&a)) {
                self.errors.push((file, stock_error(&a, attr.span.clone())));
                continue;
            }
            if let Some((f, _)) = self.value(file, v, Cx::Passive, None, &[]) {
                self.others.push(format!("{}, var = {}, set = {} }}", self.other_of(name), q(&a), q(&f)));
            }
        }
        for u in &c.features {
            let Some((feature, names)) = self.features.get(&u.feature.text.to_ascii_lowercase()) else {
                let known: Vec<&str> = self.features.values().map(|(f, _)| &*f.name.text).collect();
                self.errors.push((
                    file,
                    err(
                        codes::UNKNOWN_FEATURE,
                        format!(
                            "the creature `{name}` has the feature `{}`, which no feature file defines (known: {})",
                            u.feature.text,
                            if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                        ),
                        u.feature.span.clone(),
                    ),
                ));
                continue;
            };
            let (feature, ident) = (*feature, names.ident.clone());
            let vars: Vec<String> = u.vars.iter().map(|(v, _)| v.clone()).collect();
            if let Some(text) = &feature.text {
                match crate::template::parse(&text.text).and_then(|t| {
                    t.render(&mut |v| match v.to_ascii_uppercase().as_str() {
                        "NAME" => Some(name.clone()),
                        x => x
                            .strip_prefix('V')
                            .and_then(|n| n.parse::<usize>().ok())
                            .and_then(|n| vars.get(n).cloned()),
                    })
                }) {
                    Ok(rendered) => {
                        let var = format!("{ident}.TEXT");
                        self.texts.insert((var.clone(), "STRING"));
                        modify.push(format!("{{ var = {}, set = {} }}", q(&var), literal(&rendered)));
                    }
                    Err(e) => {
                        let span = text.inner(e.span.clone());
                        self.errors.push((feature.file, Error { span, ..e }));
                    }
                }
            }
            for (i, sub) in feature.subfeatures.iter().enumerate() {
                self.subfeature(feature, &ident, name, i + 1, sub, &vars, &mut modify);
            }
        }
        let _ = writeln!(
            self.objects,
            "\n[[object]]\nkind = {}\nkey = {}\nmodify = [",
            q(crate::prelude::KIND),
            q(name)
        );
        for m in modify {
            let _ = writeln!(self.objects, "  {m},");
        }
        self.objects.push_str("]\n");
    }

    // long: a subfeature's rule (or passive modifiers), its effects' rules and its recharge's
    // refill rules; each part is short, and they share the names they build.
    #[allow(clippy::too_many_arguments)]
    fn subfeature(
        &mut self,
        feature: &Feature,
        ident: &str,
        creature: &str,
        index: usize,
        sub: &Subfeature,
        vars: &[String],
        modify: &mut Vec<String>,
    ) {
        let file = feature.file;
        let label = format!("{creature}: {} #{index}", feature.name.text);
        let object = format!("object = {{ kind = {}, key = {} }}", q(crate::prelude::KIND), q(creature));
        if let Trigger::Passive = sub.trigger {
            let mut when = Vec::new();
            if let Some(c) = &sub.conditions
                && let Some((f, _)) = self.value(file, c, Cx::Passive, Some(ident), vars)
            {
                when.push(format!("({f}) != 0"));
            }
            for e in &sub.effects {
                self.passive_effect(file, e, creature, ident, vars, &when);
            }
            return;
        }
        // What `creature` is for this trigger: the holder channel and the `$argument`.
        let (holder, other_arg, filters) = match &sub.trigger {
            Trigger::Event { event: _, nouns, other: true } => {
                let by = nouns.first().map(|n| &n.0);
                let target = nouns.get(1).map(|n| &n.0);
                let mut filters = Vec::new();
                for (slot, n) in [("by", by), ("target", target)] {
                    match n {
                        Some(Noun::Itself) => filters.push(format!("{slot} = \"$this\"")),
                        Some(Noun::Named(id)) => filters.push(format!("{slot} = {}", q(id))),
                        _ => {}
                    }
                }
                if by == Some(&Noun::Itself) {
                    (Some("TARGET"), Some("$target"), filters)
                } else {
                    (Some("ATTACKER"), Some("$by"), filters)
                }
            }
            Trigger::Event { event: _, nouns, other: false } => match nouns.first().map(|n| &n.0) {
                Some(Noun::Itself) | None => (None, None, vec!["who = \"$this\"".to_owned()]),
                Some(Noun::Named(id)) => (Some("WHO"), Some("$who"), vec![format!("who = {}", q(id))]),
                Some(_) => (Some("WHO"), Some("$who"), Vec::new()),
            },
            Trigger::Use(_) => (
                Some("TARGET"),
                Some("$target"),
                vec!["who = \"$this\"".to_owned(), format!("feature = {}", q(&feature.name.text))],
            ),
            Trigger::Rest(_) | Trigger::Passive => (None, None, Vec::new()),
        };
        let on = match &sub.trigger {
            Trigger::Event { event, .. } => *event,
            Trigger::Use(_) => "Use",
            Trigger::Rest(e) => e,
            Trigger::Passive => return,
        };
        let mut guard = Vec::new();
        let mut actions = Vec::new();
        if let Some(c) = &sub.conditions
            && let Some((f, stores)) = self.value(file, c, Cx::Owner(holder), Some(ident), vars)
        {
            guard.push(format!("({f}) != 0"));
            actions.extend(stores.iter().map(store));
        }
        if let Some(r) = &sub.recharge {
            // The uses spent are the stock (it starts at 0, as a stock does); the uses left
            // are a variable that follows it.
            let spent = format!("{ident}_{index}.SPENT");
            let left = format!("{ident}_{index}.USES");
            self.counters.insert(spent.clone());
            self.texts.insert((left.clone(), "NUMBER"));
            modify.push(format!("{{ var = {}, set = {} }}", q(&left), q(&format!("{} - {spent}", r.uses))));
            guard.push(format!("{spent} < {}", r.uses));
            actions.insert(0, format!("{{ adjust = {{ channel = {}, by = \"1\" }} }}", q(&spent)));
            self.refill(&label, &object, &feature.name.text, &spent, r);
        }
        for (j, e) in sub.effects.iter().enumerate() {
            if matches!(e.what, What::Nothing) {
                continue;
            }
            let target = match &e.target.0 {
                Noun::Itself => "$this".to_owned(),
                Noun::Named(id) => id.clone(),
                Noun::Creature | Noun::Any => match other_arg {
                    Some(a) => a.to_owned(),
                    None => {
                        self.errors.push((
                            file,
                            err(
                                codes::UNSUPPORTED,
                                format!("{label}: the effect targets `creature`, and its trigger involves no other creature"),
                                e.target.1.clone(),
                            ),
                        ));
                        continue;
                    }
                },
            };
            let id = format!("{label} effect {}", j + 1);
            actions.push(format!(
                "{{ emit = {{ event = \"Effect\", args = {{ owner = \"$this\", target = {}, effect = {} }} }} }}",
                q(&target),
                q(&id)
            ));
            self.effect_rule(file, &id, &object, e, ident, vars);
        }
        write_rule(
            &mut self.rules,
            &label,
            on,
            &object,
            &filters,
            None,
            all_true(&guard).as_deref(),
            &actions,
        );
    }

    fn refill(&mut self, label: &str, object: &str, feature: &str, counter: &str, r: &read::Recharge) {
        let adjust =
            [format!("{{ adjust = {{ channel = {}, by = {} }} }}", q(counter), q(&format!("-{counter}")))];
        let mut rule = |on: &str, filters: &[String], guard: &[String]| {
            write_rule(
                &mut self.rules,
                &format!("{label} recharges on {on}"),
                on,
                object,
                filters,
                None,
                all_true(guard).as_deref(),
                &adjust,
            );
        };
        let this = "who = \"$this\"".to_owned();
        match r.refill {
            Refill::Turn => rule("TurnStart", &[this], &[]),
            Refill::ShortRest => {
                rule("ShortRest", &[], &[]);
                rule("LongRest", &[], &[]);
            }
            Refill::LongRest => rule("LongRest", &[], &[]),
            Refill::Roll(a, b) => rule(
                "RechargeRoll",
                &[this, format!("feature = {}", q(feature))],
                &[format!("ROLL >= {a} && ROLL <= {b}")],
            ),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn passive_effect(
        &mut self,
        file: usize,
        e: &Effect,
        creature: &str,
        ident: &str,
        vars: &[String],
        when: &[String],
    ) {
        if e.target.0 != Noun::Itself {
            self.errors.push((
                file,
                err(
                    codes::UNSUPPORTED,
                    "a passive feature's effects are on the creature itself (`self`)".to_owned(),
                    e.target.1.clone(),
                ),
            ));
            return;
        }
        let mut when = when.to_vec();
        if let Some(c) = &e.condition
            && let Some((f, _)) = self.value(file, c, Cx::Passive, Some(ident), vars)
        {
            when.push(format!("({f}) != 0"));
        }
        let when = all_true(&when).map_or(String::new(), |w| format!(", when = {}", q(&w)));
        let (var, kind, value) = match &e.what {
            What::Set(var, span, v) => {
                let Some(a) = self.target_attribute(file, var, span) else { return };
                let Some((f, _)) = self.value(file, v, Cx::Passive, Some(ident), vars) else { return };
                (a, "set", f)
            }
            What::Reduce(v) => {
                let Some((f, _)) = self.value(file, v, Cx::Passive, Some(ident), vars) else { return };
                ("DAMAGE_REDUCTION".to_owned(), "add", f)
            }
            What::Flag(flag) => ((*flag).to_owned(), "set", "1".to_owned()),
            What::Regain(_) | What::Deal(_) => {
                self.errors.push((
                    file,
                    err(
                        codes::UNSUPPORTED,
                        "a passive feature cannot regain hp or deal damage: nothing happens to make it run; give it a trigger".to_owned(),
                        e.span.clone(),
                    ),
                ));
                return;
            }
            What::Nothing => return,
        };
        let other = self.other_of(creature);
        self.others.push(format!("{other}, var = {}, {kind} = {}{when} }}", q(&var), q(&value)));
    }

    /// The attribute a "Set N = N" writes (`FLYING`, `self.FLYING`, `creature.FLYING`: the
    /// effect's target's).
    fn target_attribute(&mut self, file: usize, var: &str, span: &Range<usize>) -> Option<String> {
        let bare = var
            .strip_prefix("self.")
            .or_else(|| var.strip_prefix("creature."))
            .filter(|_| self.attribute(var).is_none())
            .unwrap_or(var);
        let a = self.attribute(bare);
        if let Some(a) = &a
            && crate::prelude::STOCKS.iter().any(|(n, _)| n.eq_ignore_ascii_case(a))
        {
            self.errors.push((file, stock_error(a, span.clone())));
            return None;
        }
        if a.is_none() {
            self.errors.push((
                file,
                err(
                    read::codes::EFFECT,
                    format!("`Set N = N` sets an attribute, and `{var}` is none"),
                    span.clone(),
                ),
            ));
        }
        a
    }

    // long: one effect's rule: its guard per target and its action, by what it does.
    fn effect_rule(&mut self, file: usize, id: &str, object: &str, e: &Effect, ident: &str, vars: &[String]) {
        let is_self = e.target.0 == Noun::Itself;
        let mut guard = Vec::new();
        let mut actions = Vec::new();
        if let Some(c) = &e.condition
            && let Some((f, stores)) = self.value(file, c, Cx::Owner(Some("TARGET")), Some(ident), vars)
        {
            guard.push(format!("({f}) != 0"));
            actions.extend(stores.iter().map(store));
        }
        let until = match e.duration.as_ref().map(|d| &d.0) {
            Some(Duration::Turn { clock, target, after }) => {
                let on = if *target { "$target" } else { "$this" };
                format!(", until = {{ clock = \"{clock}\", on = \"{on}\", after = \"+{after}\" }}")
            }
            Some(Duration::Seconds(s)) => format!(", until = {{ clock = \"SECONDS\", after = \"+{s}\" }}"),
            Some(Duration::UntilRemoved) | None => String::new(),
        };
        let lasting = Cx::Target { is_self, lasting: true };
        let now = Cx::Target { is_self, lasting: false };
        let modifier = |var: &str, kind: &str, value: &str| {
            format!(
                "{{ add_modifier = {{ var = {}, type = \"{kind}\", value = {}, on = \"$target\"{until} }} }}",
                q(var),
                q(value)
            )
        };
        match &e.what {
            What::Set(var, span, v) => {
                let Some(a) = self.target_attribute(file, var, span) else { return };
                let Some((f, _)) = self.value(file, v, lasting, Some(ident), vars) else { return };
                actions.push(modifier(&a, "SET", &f));
            }
            What::Reduce(v) => {
                let Some((f, _)) = self.value(file, v, lasting, Some(ident), vars) else { return };
                actions.push(modifier("DAMAGE_REDUCTION", "ADD", &f));
            }
            What::Flag(flag) => actions.push(modifier(flag, "SET", "1")),
            What::Regain(v) => {
                let Some((f, stores)) = self.value(file, v, now, Some(ident), vars) else { return };
                actions.extend(stores.iter().map(store));
                let by = format!("if(REGAINS_HP != 0, max({f}, 0), 0)");
                actions.push(format!(
                    "{{ adjust = {{ channel = \"HP\", on = \"$target\", by = {} }} }}",
                    q(&by)
                ));
            }
            What::Deal(v) => {
                let Some((f, stores)) = self.value(file, v, now, Some(ident), vars) else { return };
                actions.extend(stores.iter().map(store));
                let amount = format!("max(({f}) - DAMAGE_REDUCTION, 0) - DAMAGE.AMOUNT");
                actions.push(format!(
                    "{{ adjust = {{ channel = \"DAMAGE.AMOUNT\", on = \"$target\", by = {} }} }}",
                    q(&amount)
                ));
                actions.push(
                    "{ adjust = { channel = \"HP\", on = \"$target\", by = \"-DAMAGE.AMOUNT\" } }".to_owned(),
                );
                actions.push("{ emit = { event = \"Damaged\", args = { who = \"$target\" } } }".to_owned());
            }
            What::Nothing => return,
        }
        let filters = ["owner = \"$this\"".to_owned(), format!("effect = {}", q(id))];
        write_rule(
            &mut self.rules,
            id,
            "Effect",
            object,
            &filters,
            None,
            all_true(&guard).as_deref(),
            &actions,
        );
    }
}

/// Appends a `[[rule]]` (see `docs/ruleset-format.md`): its name, event, object line
/// (`object = { kind = …, key = … }`), filters, limit, guard and actions. Both dialects write
/// their rules through it.
#[allow(clippy::too_many_arguments)]
pub fn write_rule(
    out: &mut String,
    name: &str,
    on: &str,
    object: &str,
    filters: &[String],
    limit: Option<&str>,
    guard: Option<&str>,
    actions: &[String],
) {
    let _ = writeln!(out, "\n[[rule]]\nname = {}\non = {}\n{object}", q(name), q(on));
    if !filters.is_empty() {
        let _ = writeln!(out, "where = {{ {} }}", filters.join(", "));
    }
    if let Some(l) = limit {
        let _ = writeln!(out, "limit = {}", q(l));
    }
    if let Some(g) = guard {
        let _ = writeln!(out, "guard = {}", q(g));
    }
    let _ = writeln!(out, "do = [");
    for a in actions {
        let _ = writeln!(out, "  {a},");
    }
    out.push_str("]\n");
}

/// The error for setting a stock as if it were a plain attribute.
fn stock_error(a: &str, span: Range<usize>) -> Error {
    err(
        codes::ATTRIBUTE,
        format!(
            "`{a}` is a stock: events change it (Regain X hp, Deal X damage, a hit), and a creature starts the game at full HP; a game's setup may set it"
        ),
        span,
    )
}

/// A `store` as an action: the private stock adjusted to the value stored.
fn store(s: &crate::postfix::Store) -> String {
    format!("{{ adjust = {{ channel = {}, by = {} }} }}", q(&s.var), q(&format!("({}) - {}", s.value, s.var)))
}
