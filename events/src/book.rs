//! The rule book: a ruleset's `[events]` and `[[rule]]` sections, checked once.
//!
//! Everything a rule names is resolved here, at load: its event and the event's arguments, the
//! object it belongs to, the channels, stocks and clocks its actions touch, the variables its
//! modifiers target, every formula (compiled in the scope it runs in) and every `$name` it
//! reads. A firing then builds its batch from resolved parts; the only text it handles is ids
//! and keys, copied.
//!
//! Every problem is a [`Diagnostic`] at the text, with a code of this layer
//! ([`DiagCode::Layer`]): `events.syntax`, `events.unknown_event`, `events.bad_rule`,
//! `events.self_emit`, `events.unknown_name`.

use crate::Map;
use data::draft::{Raw, RawValue};
use data::{DiagCode, Diagnostic, KindId, ObjectId, Origin, Ruleset, Text, Until};
use formula::{Format, Formula};
use rust_decimal::Decimal;
use solver::{Instruction, ModKind, ScopeId, Target};
use std::sync::Arc;

/// The diagnostic codes of rule books.
pub mod codes {
    use data::DiagCode;
    /// A value of the wrong shape, or an unknown key.
    pub const SYNTAX: DiagCode = DiagCode::Layer("events.syntax");
    /// A rule or emit names an event not declared in `[events]`.
    pub const UNKNOWN_EVENT: DiagCode = DiagCode::Layer("events.unknown_event");
    /// A rule that cannot run as written: unknown object, channel, variable, argument; a formula
    /// that does not compile; a bad limit, die or option list.
    pub const BAD_RULE: DiagCode = DiagCode::Layer("events.bad_rule");
    /// A rule emits the event it listens to: every firing would fire it again.
    pub const SELF_EMIT: DiagCode = DiagCode::Layer("events.self_emit");
    /// A `$name` that is not an argument of the rule's event, an earlier `ask` or `roll`, or
    /// `$this`.
    pub const UNKNOWN_NAME: DiagCode = DiagCode::Layer("events.unknown_name");
}

/// An event's number in its book.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventId(pub u32);

/// A rule's number in its book: its place in reading order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(pub u32);

/// A declared event.
#[derive(Debug)]
pub struct EventDef {
    pub name: Arc<str>,
    /// How the operations writing its arguments name it: `event `Hit``.
    pub cause: Arc<str>,
    pub args: Vec<ArgDef>,
    pub at: Origin,
}

/// One argument of an event.
#[derive(Debug)]
pub struct ArgDef {
    pub name: Arc<str>,
    pub kind: ArgKind,
}

/// What an argument is.
#[derive(Debug)]
pub enum ArgKind {
    /// Text, for filters and `$name`s only.
    Text,
    /// Written into a global channel before the event's rules run, so that their formulas
    /// read it (`input("Channel")`); checked against the channel's format.
    Into { channel: Arc<str>, format: Format },
    /// The key of an instance on the sheet (checked when emitted): a rule filters on it with
    /// `"$this"` and acts on it with `on = "$name"`.
    Instance,
}

/// A field of an action: text written in the rule, or a name bound when it runs.
#[derive(Clone, Debug)]
pub(crate) enum Field {
    Lit(Arc<str>),
    /// The event's argument number n.
    Arg(usize),
    /// The rule's `ask` or `roll` number n (an ask may bind several picks).
    Bound(usize),
    /// The id of the object the rule belongs to.
    This,
}

/// The instance an action is on.
#[derive(Clone, Debug)]
pub(crate) enum On {
    /// The rule's instance: its object's, or the global one.
    Rule,
    /// The global instance.
    Global,
    /// An instance named by a field.
    Field(Field),
}

/// A rule's use limit.
#[derive(Clone, Debug)]
pub struct Limit {
    /// Firings allowed (per clock period, or in all).
    pub times: u32,
    /// The clock whose value delimits periods, and the formula reading it in the rule's scope.
    pub(crate) per: Option<(Arc<str>, Arc<Formula>)>,
}

impl Limit {
    /// The clock the limit counts per, if any.
    pub fn per(&self) -> Option<&str> {
        self.per.as_ref().map(|(c, _)| &**c)
    }
}

/// A filter on an argument.
#[derive(Clone, Debug)]
pub(crate) enum Filter {
    Equals(Arc<str>),
    /// The argument names the rule's own instance (or object id).
    This,
}

/// Where an `ask`'s options come from.
#[derive(Clone, Debug)]
pub(crate) enum Options {
    List(Vec<Arc<str>>),
    /// The keys of a scope's instances for which a BOOLEAN formula is true, now.
    Select {
        scope: Arc<str>,
        where_: Arc<str>,
    },
    /// The keys of a kind's objects in the ruleset.
    Kind(KindId),
}

/// Which of the instances an ordered `each` keeps: the `first` n (least first) or the `last` n.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Take {
    First(u32),
    Last(u32),
}

/// A question a rule asks: answered by a `choose` step.
#[derive(Clone, Debug)]
pub(crate) struct Ask {
    pub slot: usize,
    pub prompt: Arc<str>,
    pub options: Options,
    pub pick: u32,
    /// The fewest picks that answer (`pick` unless the rule says fewer).
    pub at_least: u32,
    pub decline: bool,
}

/// How long what an action adds lasts: `until`, on the clock of the instance `on` names (the
/// rule's own for an object's rule, a global clock by default, or one an argument names).
#[derive(Clone, Debug)]
pub(crate) struct Lasting {
    pub until: Until,
    pub on: On,
}

/// What a rule does, in order.
#[derive(Clone, Debug)]
pub(crate) enum Action {
    AddObject {
        kind: Arc<str>,
        key: Field,
        id: Option<Field>,
        parent: Option<Field>,
        until: Option<Lasting>,
        /// `as`: the slot the new object's id is bound to — its key, or `key#2`, `key#3`, …,
        /// the first that is not on the sheet.
        bind: Option<usize>,
    },
    RemoveObject(Field),
    /// `format`: the channel's, when its instance is known at load.
    SetInput {
        channel: Arc<str>,
        on: On,
        value: Field,
        format: Option<Format>,
    },
    /// `by` compiled at load when its scope is known then (`on` the rule's instance or the
    /// global one), else its text, compiled when the action runs.
    Adjust {
        channel: Arc<str>,
        on: On,
        by: Instruction,
    },
    Tick {
        clock: Arc<str>,
        on: On,
        by: Decimal,
    },
    AddModifier {
        id: Option<Field>,
        var: Target,
        kind: ModKind,
        value: Instruction,
        priority: u32,
        on: On,
        until: Option<Lasting>,
    },
    RemoveModifier(Field),
    Require {
        formula: Instruction,
        message: Arc<str>,
        on: On,
    },
    Emit {
        event: EventId,
        args: Vec<Field>,
    },
    Ask(Ask),
    /// Binds every instance of `scope` for which `where_` is true when it runs (no question);
    /// with `order`, only the `take` first (or last) by that NUMBER variable.
    Each {
        slot: usize,
        scope: Arc<str>,
        where_: Arc<str>,
        order: Option<(Arc<str>, Take)>,
    },
    /// Binds the value of channel `channel` on `on` now, as text (none when it is empty).
    Read {
        slot: usize,
        channel: Arc<str>,
        on: On,
    },
    Roll {
        slot: usize,
        die: Arc<str>,
        count: u32,
        sides: u32,
    },
}

impl Action {
    /// Whether the action waits for an answer (it ends a batch).
    pub(crate) fn asks(&self) -> bool {
        matches!(self, Action::Ask(_) | Action::Roll { .. })
    }
}

/// A rule: when its event is emitted, with arguments its filters accept, on every instance of
/// its object (or once, globally), it fires if its guard is true and its limit allows.
#[derive(Debug)]
pub struct Rule {
    pub name: Arc<str>,
    pub at: Origin,
    /// How its operations name it: `rule `Payday` (tavern.toml:85:9)`.
    pub cause: Arc<str>,
    pub event: EventId,
    /// The object it belongs to: it fires once for each on the sheet, in its scope.
    pub object: Option<ObjectId>,
    pub limit: Option<Limit>,
    pub(crate) filters: Vec<(usize, Filter)>,
    pub(crate) guard: Option<Arc<Formula>>,
    pub(crate) actions: Vec<Action>,
    /// The names its asks and rolls bind, by slot.
    pub(crate) bound: Vec<Arc<str>>,
}

/// A ruleset's events and rules, checked, immutable, shared by every game on the ruleset.
#[derive(Debug)]
pub struct RuleBook {
    ruleset: Arc<Ruleset>,
    events: Vec<EventDef>,
    event_names: Map<String, EventId>,
    rules: Vec<Rule>,
    by_event: Vec<Vec<RuleId>>,
}

impl RuleBook {
    /// Checks `ruleset`'s `[events]` and `[[rule]]` sections; every problem found, or the book.
    /// A ruleset without them gives an empty book.
    pub fn compile(ruleset: Arc<Ruleset>) -> Result<RuleBook, Vec<Diagnostic>> {
        let mut c = Checker { r: &ruleset, errors: Vec::new(), events: Vec::new(), names: Map::default() };
        for section in ruleset.sections("events") {
            c.events(section);
        }
        let events = std::mem::take(&mut c.events);
        let mut rules = Vec::new();
        for section in ruleset.sections("rule") {
            match &section.value {
                RawValue::Array(items) => {
                    for item in items {
                        if let Some(rule) = c.rule(item, &events) {
                            rules.push(rule);
                        }
                    }
                }
                _ => c.error(codes::SYNTAX, &section.at, "`rule` must be an array of tables ([[rule]])"),
            }
        }
        let mut seen: Map<String, &Rule> = Map::default();
        for r in &rules {
            if let Some(first) = seen.insert(r.name.to_lowercase(), r) {
                c.errors.push(Diagnostic {
                    code: codes::BAD_RULE,
                    message: format!("rule `{}` is defined twice (first at {})", r.name, first.at),
                    at: Some(r.at.clone()),
                    text: r.name.to_string(),
                    help: None,
                });
            }
        }
        if !c.errors.is_empty() {
            return Err(c.errors);
        }
        let mut by_event = vec![Vec::new(); events.len()];
        for (i, r) in rules.iter().enumerate() {
            by_event[r.event.0 as usize].push(RuleId(i as u32));
        }
        let event_names = c.names;
        Ok(RuleBook { ruleset, events, event_names, rules, by_event })
    }

    /// The ruleset the book was checked against.
    pub fn ruleset(&self) -> &Arc<Ruleset> {
        &self.ruleset
    }

    /// The declared events, in reading order.
    pub fn events(&self) -> &[EventDef] {
        &self.events
    }

    /// An event by name (case-insensitive).
    pub fn event(&self, name: &str) -> Option<EventId> {
        self.event_names.get(&name.to_lowercase()).copied()
    }

    /// An event's declaration.
    pub fn event_def(&self, id: EventId) -> &EventDef {
        &self.events[id.0 as usize]
    }

    /// The rules, in reading order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// A rule.
    pub fn rule(&self, id: RuleId) -> &Rule {
        &self.rules[id.0 as usize]
    }

    /// The rules listening to `event`, in reading order.
    pub(crate) fn listeners(&self, event: EventId) -> &[RuleId] {
        &self.by_event[event.0 as usize]
    }
}

/// Checks sections into events and rules, collecting every error.
struct Checker<'r> {
    r: &'r Ruleset,
    errors: Vec<Diagnostic>,
    events: Vec<EventDef>,
    names: Map<String, EventId>,
}

/// What a rule's fields may name while it is checked.
struct Names<'a> {
    event: &'a EventDef,
    bound: Vec<Arc<str>>,
    object: bool,
}

impl Names<'_> {
    /// `text` as a field: `$this`, `$arg`, `$bound`, or literal text.
    fn field(&self, text: &Text) -> Result<Field, String> {
        let Some(name) = text.text.strip_prefix('$') else { return Ok(Field::Lit(text.text.clone())) };
        if name.eq_ignore_ascii_case("this") {
            return match self.object {
                true => Ok(Field::This),
                false => {
                    Err("`$this` is the id of the rule's object, and this rule has no `object`".to_owned())
                }
            };
        }
        if let Some(i) = self.event.args.iter().position(|a| a.name.eq_ignore_ascii_case(name)) {
            return Ok(Field::Arg(i));
        }
        if let Some(i) = self.bound.iter().position(|b| b.eq_ignore_ascii_case(name)) {
            return Ok(Field::Bound(i));
        }
        let mut known: Vec<String> = self.event.args.iter().map(|a| format!("${}", a.name)).collect();
        known.extend(self.bound.iter().map(|b| format!("${b}")));
        if self.object {
            known.push("$this".to_owned());
        }
        Err(format!(
            "`${name}` is not an argument of event `{}` nor bound by an earlier ask or roll (known: {})",
            self.event.name,
            if known.is_empty() { "none".to_owned() } else { known.join(", ") }
        ))
    }
}

/// A rule's scope and the state of checking it.
struct RuleCx<'a> {
    events: &'a [EventDef],
    scope: ScopeId,
    names: Names<'a>,
    label: String,
}

impl<'r> Checker<'r> {
    fn error(&mut self, code: DiagCode, at: &Text, message: impl Into<String>) {
        self.errors.push(Diagnostic::at(code, at, message));
    }

    fn table<'x>(&mut self, v: &'x Raw, what: &str) -> Option<&'x [(Text, Raw)]> {
        match &v.value {
            RawValue::Table(t) => Some(t),
            _ => {
                self.error(codes::SYNTAX, &v.at, format!("{what} must be a table, not {}", v.type_name()));
                None
            }
        }
    }

    fn string(&mut self, v: &Raw, what: &str) -> Option<Text> {
        match &v.value {
            RawValue::String(t) => Some(t.clone()),
            _ => {
                self.error(codes::SYNTAX, &v.at, format!("{what} must be a string, not {}", v.type_name()));
                None
            }
        }
    }

    /// A string, number or boolean as text.
    fn scalar(&mut self, v: &Raw, what: &str) -> Option<Text> {
        let s = v.scalar();
        if s.is_none() {
            self.error(
                codes::SYNTAX,
                &v.at,
                format!("{what} must be a string, number or boolean, not {}", v.type_name()),
            );
        }
        s
    }

    fn whole(&mut self, v: &Raw, what: &str) -> Option<u32> {
        let n = match &v.value {
            RawValue::Number(t) => t.text.parse::<u32>().ok(),
            _ => None,
        };
        if n.is_none() {
            self.error(
                codes::SYNTAX,
                &v.at,
                format!("{what} must be a whole number from 0, not `{}`", v.at.text),
            );
        }
        n
    }

    /// `[events]`: `Name = { arg = "Channel" | { into = "Channel" } | { instance = true } | {} }`.
    fn events(&mut self, section: &Raw) {
        let Some(t) = self.table(section, "[events]") else { return };
        for (name, def) in t {
            let Some(args) = self.table(def, &format!("event `{}`", name.text)) else { continue };
            let args = args.iter().filter_map(|(a, v)| self.arg(&name.text, a, v)).collect();
            let id = EventId(self.events.len() as u32);
            if self.names.insert(name.text.to_lowercase(), id).is_some() {
                self.error(codes::SYNTAX, name, format!("event `{}` is declared twice", name.text));
                continue;
            }
            let cause = Arc::from(format!("event `{}`", name.text));
            self.events.push(EventDef { name: name.text.clone(), cause, args, at: name.at.clone() });
        }
    }

    fn arg(&mut self, event: &str, name: &Text, v: &Raw) -> Option<ArgDef> {
        let what = format!("argument `{}` of event `{event}`", name.text);
        let into = match &v.value {
            RawValue::String(c) => Some(c.clone()),
            RawValue::Table(t) if t.is_empty() => None,
            RawValue::Table(t) => {
                let mut into = None;
                let mut instance = false;
                for (k, x) in t {
                    match &*k.text {
                        "into" => into = self.string(x, &format!("{what}: `into`")),
                        "instance" => instance = matches!(x.value, RawValue::Boolean(true)),
                        other => self.error(
                            codes::SYNTAX,
                            k,
                            format!("unknown key `{other}` in {what} (expected into, instance)"),
                        ),
                    }
                }
                if instance {
                    return Some(ArgDef { name: name.text.clone(), kind: ArgKind::Instance });
                }
                into
            }
            _ => {
                self.error(codes::SYNTAX, &v.at, format!("{what} must be a channel's name or a table"));
                return None;
            }
        };
        let Some(channel) = into else {
            return Some(ArgDef { name: name.text.clone(), kind: ArgKind::Text });
        };
        let rules = self.r.rules();
        match rules.resolve(rules.global(), &channel.text) {
            Some(v) if self.r.is_channel(v) && !self.r.is_clock(v) && self.r.stock(v).is_none() => {
                let format = rules.var(v).format.clone();
                Some(ArgDef {
                    name: name.text.clone(),
                    kind: ArgKind::Into { channel: channel.text.clone(), format },
                })
            }
            _ => {
                self.error(
                    codes::BAD_RULE,
                    &channel,
                    format!(
                        "{what} is written into `{}`, which is not a channel of the global scope (a clock or a stock does not take arguments)",
                        channel.text
                    ),
                );
                None
            }
        }
    }

    // long: one match arm per key of a rule, each checked in place
    fn rule(&mut self, v: &Raw, events: &[EventDef]) -> Option<Rule> {
        let t = self.table(v, "a rule")?;
        let get = |key: &str| t.iter().find(|(k, _)| &*k.text == key).map(|(_, v)| v);
        for (k, _) in t {
            if !["name", "on", "where", "object", "guard", "limit", "do"].contains(&&*k.text) {
                self.error(
                    codes::SYNTAX,
                    k,
                    format!(
                        "unknown key `{}` in a rule (expected name, on, where, object, guard, limit, do)",
                        k.text
                    ),
                );
            }
        }
        let Some(name) = get("name").and_then(|n| self.string(n, "a rule's `name`")) else {
            self.error(codes::SYNTAX, &v.at, "a rule needs a `name`");
            return None;
        };
        let label = format!("rule `{}`", name.text);
        let Some(on) = get("on").and_then(|e| self.string(e, &format!("{label}: `on`"))) else {
            self.error(codes::SYNTAX, &name, format!("{label} needs `on`, the event it listens to"));
            return None;
        };
        let Some(&event) = self.names.get(&on.text.to_lowercase()) else {
            let known: Vec<&str> = events.iter().map(|e| &*e.name).collect();
            self.error(
                codes::UNKNOWN_EVENT,
                &on,
                format!(
                    "{label} listens to `{}`, which `[events]` does not declare (declared: {})",
                    on.text,
                    list(&known)
                ),
            );
            return None;
        };
        let object = match get("object") {
            None => None,
            Some(o) => Some(self.object(o, &label)?),
        };
        let scope = match object {
            Some(o) => self.r.kind_def(self.r.object(o).kind).scope,
            None => self.r.rules().global(),
        };
        let ev = &events[event.0 as usize];
        let mut cx = RuleCx {
            events,
            scope,
            names: Names { event: ev, bound: Vec::new(), object: object.is_some() },
            label,
        };
        let filters = get("where").map(|w| self.filters(w, &cx)).unwrap_or_default();
        let guard = get("guard").and_then(|g| {
            let g = self.string(g, &format!("{}: `guard`", cx.label))?;
            self.formula(&g, cx.scope, &Format::Boolean, &cx.label)
        });
        let limit = get("limit").and_then(|l| self.limit(l, &cx));
        let actions = match get("do") {
            Some(Raw { value: RawValue::Array(items), .. }) => {
                items.iter().filter_map(|a| self.action(a, &mut cx, event)).collect()
            }
            Some(other) => {
                self.error(
                    codes::SYNTAX,
                    &other.at,
                    format!("{}: `do` must be an array of actions", cx.label),
                );
                Vec::new()
            }
            None => {
                self.error(codes::SYNTAX, &name, format!("{} needs `do`, its actions", cx.label));
                Vec::new()
            }
        };
        let bound = std::mem::take(&mut cx.names.bound);
        let cause = Arc::from(format!("rule `{}` ({})", name.text, name.at));
        Some(Rule {
            name: name.text.clone(),
            at: name.at.clone(),
            cause,
            event,
            object,
            limit,
            filters,
            guard,
            actions,
            bound,
        })
    }

    /// `object = { kind = "CARD", key = "Thorns" }`: exactly one object.
    fn object(&mut self, v: &Raw, label: &str) -> Option<ObjectId> {
        let t = self.table(v, &format!("{label}: `object`"))?;
        let (mut kind, mut key) = (None, None);
        for (k, x) in t {
            match &*k.text {
                "kind" => kind = self.string(x, "an object's kind"),
                "key" => key = self.string(x, "an object's key"),
                other => self.error(
                    codes::SYNTAX,
                    k,
                    format!("unknown key `{other}` in `object` (expected kind, key)"),
                ),
            }
        }
        let (Some(kind), Some(key)) = (kind, key) else {
            self.error(codes::SYNTAX, &v.at, format!("{label}: `object` needs `kind` and `key`"));
            return None;
        };
        let Some(k) = self.r.kind(&kind.text) else {
            self.error(codes::BAD_RULE, &kind, format!("{label}: no kind `{}` in the ruleset", kind.text));
            return None;
        };
        match self.r.find(k, &key.text)[..] {
            [o] => Some(o),
            [] => {
                self.error(
                    codes::BAD_RULE,
                    &key,
                    format!("{label}: no {} `{}` in the ruleset", kind.text, key.text),
                );
                None
            }
            _ => {
                self.error(
                    codes::BAD_RULE,
                    &key,
                    format!("{label}: several {} objects have key `{}`", kind.text, key.text),
                );
                None
            }
        }
    }

    fn filters(&mut self, v: &Raw, cx: &RuleCx<'_>) -> Vec<(usize, Filter)> {
        let Some(t) = self.table(v, &format!("{}: `where`", cx.label)) else { return Vec::new() };
        let mut out = Vec::new();
        for (k, x) in t {
            let Some(i) = cx.names.event.args.iter().position(|a| a.name.eq_ignore_ascii_case(&k.text))
            else {
                let known: Vec<&str> = cx.names.event.args.iter().map(|a| &*a.name).collect();
                self.error(
                    codes::BAD_RULE,
                    k,
                    format!(
                        "{}: event `{}` has no argument `{}` (its arguments: {})",
                        cx.label,
                        cx.names.event.name,
                        k.text,
                        list(&known)
                    ),
                );
                continue;
            };
            let Some(text) = self.scalar(x, "a filter") else { continue };
            let filter = match text.text.strip_prefix('$') {
                Some(n) if n.eq_ignore_ascii_case("this") => Filter::This,
                Some(_) => {
                    self.error(
                        codes::UNKNOWN_NAME,
                        &text,
                        format!("{}: a filter compares with text or `$this`", cx.label),
                    );
                    continue;
                }
                None => Filter::Equals(text.text.clone()),
            };
            out.push((i, filter));
        }
        out
    }

    /// `limit = "once"`, `limit = 3`, `limit = { times = 1, per = "Turn" }`.
    fn limit(&mut self, v: &Raw, cx: &RuleCx<'_>) -> Option<Limit> {
        match &v.value {
            RawValue::String(s) if s.text.eq_ignore_ascii_case("once") => Some(Limit { times: 1, per: None }),
            RawValue::Number(_) => Some(Limit { times: self.whole(v, "a limit")?, per: None }),
            RawValue::Table(t) => {
                let (mut times, mut per) = (Some(1), None);
                for (k, x) in t {
                    match &*k.text {
                        "times" => times = self.whole(x, "a limit's `times`"),
                        "per" => per = self.string(x, "a limit's `per`"),
                        other => self.error(
                            codes::SYNTAX,
                            k,
                            format!("unknown key `{other}` in a limit (expected times, per)"),
                        ),
                    }
                }
                let per = match per {
                    None => None,
                    Some(clock) => {
                        let rules = self.r.rules();
                        let ok = rules.resolve(cx.scope, &clock.text).is_some_and(|c| self.r.is_clock(c));
                        if !ok {
                            self.error(
                                codes::BAD_RULE,
                                &clock,
                                format!(
                                    "{}: a limit counts per a clock, and `{}` is not one here",
                                    cx.label, clock.text
                                ),
                            );
                            return None;
                        }
                        let read = format!("input(\"{}\")", clock.text);
                        let f = self.formula(
                            &Text::new(&read, clock.at.clone()),
                            cx.scope,
                            &Format::Number,
                            &cx.label,
                        )?;
                        Some((clock.text.clone(), f))
                    }
                };
                Some(Limit { times: times?, per })
            }
            _ => {
                self.error(
                    codes::SYNTAX,
                    &v.at,
                    format!("{}: a limit is \"once\", a number, or {{ times, per }}", cx.label),
                );
                None
            }
        }
    }

    fn formula(
        &mut self,
        text: &Text,
        scope: ScopeId,
        expected: &Format,
        label: &str,
    ) -> Option<Arc<Formula>> {
        match self.r.rules().compile(&text.text, scope, None, Some(expected)) {
            Ok(f) => Some(f),
            Err(e) => {
                let (start, end) = (e.span.start as usize, e.span.end as usize);
                let at = match end <= text.text.len() && start < end {
                    true => text.slice(start, end),
                    false => text.clone(),
                };
                self.error(
                    codes::BAD_RULE,
                    &at,
                    format!("{label}: `{}`: {} [{}]", text.text, e.message, e.code),
                );
                None
            }
        }
    }

    fn field(&mut self, v: &Raw, what: &str, cx: &RuleCx<'_>) -> Option<Field> {
        let t = self.scalar(v, what)?;
        match cx.names.field(&t) {
            Ok(f) => Some(f),
            Err(m) => {
                self.error(codes::UNKNOWN_NAME, &t, format!("{}: {m}", cx.label));
                None
            }
        }
    }

    fn on(&mut self, v: Option<&Raw>, cx: &RuleCx<'_>) -> Option<On> {
        let Some(v) = v else { return Some(On::Rule) };
        match self.field(v, "`on`", cx)? {
            Field::Lit(t) if t.eq_ignore_ascii_case("global") => Some(On::Global),
            f => Some(On::Field(f)),
        }
    }

    /// A channel of the kind `what` (checked in the rule's scope when the action is on it).
    fn channel(&mut self, v: &Raw, on: &On, what: Kind, cx: &RuleCx<'_>) -> Option<Arc<str>> {
        let name = self.string(v, "a channel")?;
        let scope = match on {
            // `$this`: the rule's object, of the rule's scope.
            On::Rule | On::Field(Field::This) => cx.scope,
            On::Global => self.r.rules().global(),
            // The instance is known only when the rule runs: checked then.
            On::Field(_) => return Some(name.text.clone()),
        };
        let var = self.r.rules().resolve(scope, &name.text);
        let ok = var.is_some_and(|c| match what {
            Kind::Channel => self.r.is_channel(c) && !self.r.is_clock(c),
            Kind::Stock => self.r.stock(c).is_some(),
            Kind::Clock => self.r.is_clock(c),
            Kind::Value => true,
        });
        if !ok {
            let kind = match what {
                Kind::Channel => "a channel",
                Kind::Stock => "a stock",
                Kind::Clock => "a clock",
                Kind::Value => "a variable",
            };
            self.error(codes::BAD_RULE, &name, format!("{}: `{}` is not {kind} here", cx.label, name.text));
            return None;
        }
        Some(name.text.clone())
    }

    // long: one arm per action, each read and checked in place
    fn action(&mut self, v: &Raw, cx: &mut RuleCx<'_>, listening: EventId) -> Option<Action> {
        let t = self.table(v, "an action")?;
        let [(verb, body)] = t else {
            self.error(
                codes::SYNTAX,
                &v.at,
                format!("{}: an action is a table with one key, the step: {{ adjust = {{ … }} }}", cx.label),
            );
            return None;
        };
        let label = format!("{}: {}", cx.label, verb.text);
        let fields: &[(Text, Raw)] = match &body.value {
            RawValue::Table(f) => f,
            _ => &[],
        };
        let get = |key: &str| fields.iter().find(|(k, _)| &*k.text == key).map(|(_, v)| v);
        let allowed: &[&str] = match &*verb.text {
            "add_object" => &["kind", "key", "id", "parent", "until", "as"],
            "set_input" => &["channel", "on", "value"],
            "adjust" => &["channel", "on", "by"],
            "tick" => &["clock", "on", "by"],
            "add_modifier" => &["id", "var", "type", "value", "priority", "on", "until"],
            "require" => &["formula", "message", "on"],
            "emit" => &["event", "args"],
            "ask" => &["as", "prompt", "options", "pick", "at_least", "decline"],
            "each" => &["as", "select", "where", "order", "first", "last"],
            "read" => &["as", "channel", "on"],
            "roll" => &["as", "die"],
            "remove_object" | "remove_modifier" => &[],
            other => {
                self.error(
                    codes::SYNTAX,
                    verb,
                    format!(
                        "{}: unknown action `{other}` (expected add_object, remove_object, set_input, adjust, tick, add_modifier, remove_modifier, require, emit, ask, each, read, roll)",
                        cx.label
                    ),
                );
                return None;
            }
        };
        for (k, _) in fields {
            if !allowed.contains(&&*k.text) {
                self.error(
                    codes::SYNTAX,
                    k,
                    format!("{label}: unknown key `{}` (expected {})", k.text, allowed.join(", ")),
                );
            }
        }
        let need = |s: &mut Self, key: &str| -> Option<&Raw> {
            let v = get(key);
            if v.is_none() {
                s.error(codes::SYNTAX, verb, format!("{label} needs `{key}`"));
            }
            v
        };
        let until = |s: &mut Self| -> Option<Option<Lasting>> {
            let Some(u) = get("until") else { return Some(None) };
            s.until(u, &label, cx).map(Some)
        };
        Some(match &*verb.text {
            "add_object" => {
                let n_kind = need(self, "kind")?;
                let kind = self.string(n_kind, "a kind")?;
                if self.r.kind(&kind.text).is_none() {
                    self.error(
                        codes::BAD_RULE,
                        &kind,
                        format!("{label}: no kind `{}` in the ruleset", kind.text),
                    );
                    return None;
                }
                let n_key = need(self, "key")?;
                let key = self.field(n_key, "a key", cx)?;
                if let Field::Lit(k) = &key
                    && let Some(kid) = self.r.kind(&kind.text)
                    && self.r.find(kid, k).is_empty()
                {
                    self.error(
                        codes::BAD_RULE,
                        &v.at,
                        format!("{label}: no {} `{k}` in the ruleset", kind.text),
                    );
                    return None;
                }
                let id = match get("id") {
                    Some(i) => Some(self.field(i, "an id", cx)?),
                    None => None,
                };
                let parent = match get("parent") {
                    Some(p) => Some(self.field(p, "a parent", cx)?),
                    None => None,
                };
                let until = until(self)?;
                let bind = match get("as") {
                    Some(n) if id.is_some() => {
                        let s = self.string(n, "`as`")?;
                        self.error(
                            codes::SYNTAX,
                            &s,
                            format!("{label}: `as` names an id sheetd picks: no `id` with it"),
                        );
                        return None;
                    }
                    Some(n) => {
                        let s = self.string(n, "`as`")?;
                        cx.names.bound.push(s.text.clone());
                        Some(cx.names.bound.len() - 1)
                    }
                    None => None,
                };
                Action::AddObject { kind: kind.text.clone(), key, id, parent, until, bind }
            }
            "remove_object" | "remove_modifier" => {
                let f = self.field(body, "an id", cx)?;
                if &*verb.text == "remove_object" {
                    Action::RemoveObject(f)
                } else {
                    Action::RemoveModifier(f)
                }
            }
            "set_input" => {
                let on = self.on(get("on"), cx)?;
                let n_channel = need(self, "channel")?;
                let channel = self.channel(n_channel, &on, Kind::Channel, cx)?;
                let n_value = need(self, "value")?;
                let value = self.field(n_value, "a value", cx)?;
                let format = self.scope_of(&on, cx).and_then(|s| {
                    let rules = self.r.rules();
                    rules.resolve(s, &channel).map(|v| rules.var(v).format.clone())
                });
                Action::SetInput { channel, on, value, format }
            }
            "adjust" => {
                let on = self.on(get("on"), cx)?;
                let n_channel = need(self, "channel")?;
                let channel = self.channel(n_channel, &on, Kind::Stock, cx)?;
                let n_by = need(self, "by")?;
                let by = self.scalar(n_by, "`by`")?;
                let by = match self.formula_on(&by, &on, &Format::Number, cx, &label)? {
                    Some(f) => Instruction::Compiled(f),
                    None => Instruction::Text(by.text.clone()),
                };
                Action::Adjust { channel, on, by }
            }
            "tick" => {
                let on = self.on(get("on"), cx)?;
                let n_clock = need(self, "clock")?;
                let clock = self.channel(n_clock, &on, Kind::Clock, cx)?;
                let by = match get("by") {
                    None => Decimal::ONE,
                    Some(b) => {
                        let t = self.scalar(b, "`by`")?;
                        match formula::parse_decimal(&t.text) {
                            Ok(d) if d >= Decimal::ZERO => d,
                            _ => {
                                self.error(codes::BAD_RULE, &t, format!("{label}: `by` is a number from 0"));
                                return None;
                            }
                        }
                    }
                };
                Action::Tick { clock, on, by }
            }
            "add_modifier" => self.add_modifier(&label, verb, &get, cx)?,
            "require" => {
                let on = self.on(get("on"), cx)?;
                let n_formula = need(self, "formula")?;
                let f = self.scalar(n_formula, "a formula")?;
                let message = match get("message") {
                    Some(m) => self.scalar(m, "a message")?.text,
                    None => f.text.clone(),
                };
                let formula = match self.formula_on(&f, &on, &Format::Boolean, cx, &label)? {
                    Some(c) => Instruction::Compiled(c),
                    None => Instruction::Text(f.text.clone()),
                };
                Action::Require { formula, message, on }
            }
            "emit" => {
                let n_event = need(self, "event")?;
                let name = self.string(n_event, "an event")?;
                let Some(&event) = self.names.get(&name.text.to_lowercase()) else {
                    self.error(
                        codes::UNKNOWN_EVENT,
                        &name,
                        format!("{label}: no event `{}` in `[events]`", name.text),
                    );
                    return None;
                };
                if event == listening {
                    self.error(
                        codes::SELF_EMIT,
                        &name,
                        format!(
                            "{} emits `{}`, the event it listens to: every firing would fire it again",
                            cx.label, name.text
                        ),
                    );
                    return None;
                }
                let args = self.emit_args(event, get("args"), &name, cx, &label)?;
                Action::Emit { event, args }
            }
            "ask" => self.ask(&label, verb, &get, cx)?,
            "each" => self.each(&label, verb, &get, cx)?,
            "read" => {
                let on = self.on(get("on"), cx)?;
                let (name, n_channel) = self.named(&get, "channel", verb, &label)?;
                let channel = self.channel(n_channel, &on, Kind::Value, cx)?;
                cx.names.bound.push(name.text.clone());
                Action::Read { slot: cx.names.bound.len() - 1, channel, on }
            }
            "roll" => {
                let n_as = need(self, "as")?;
                let name = self.string(n_as, "`as`")?;
                let n_die = need(self, "die")?;
                let die = self.string(n_die, "a die")?;
                let Some((count, sides)) = parse_die(&die.text) else {
                    self.error(
                        codes::BAD_RULE,
                        &die,
                        format!("{label}: a die is written `d6` or `2d6` (1 to 100 dice of 2 to 1000 sides)"),
                    );
                    return None;
                };
                cx.names.bound.push(name.text.clone());
                Action::Roll { slot: cx.names.bound.len() - 1, die: die.text.clone(), count, sides }
            }
            _ => return None,
        })
    }

    /// A formula checked in the rule's scope when the action is on the rule's or the global
    /// instance; `Some(None)` when the instance is known only at run time.
    fn formula_on(
        &mut self,
        t: &Text,
        on: &On,
        expected: &Format,
        cx: &RuleCx<'_>,
        label: &str,
    ) -> Option<Option<Arc<Formula>>> {
        let Some(scope) = self.scope_of(on, cx) else { return Some(None) };
        self.formula(t, scope, expected, label).map(Some)
    }

    /// The scope an action on `on` runs in, when known at load.
    fn scope_of(&self, on: &On, cx: &RuleCx<'_>) -> Option<ScopeId> {
        match on {
            On::Rule => Some(cx.scope),
            On::Global => Some(self.r.rules().global()),
            On::Field(_) => None,
        }
    }

    /// `until = { clock, on, after }`: a clock — global, unless `on` names an instance
    /// (`$this`, an argument, an id) — and the value after which the effect ends. A clock
    /// whose instance is known at load is checked then.
    fn until(&mut self, v: &Raw, label: &str, cx: &RuleCx<'_>) -> Option<Lasting> {
        let t = self.table(v, "`until`")?;
        let (mut clock, mut after, mut on) = (None, None, None);
        for (k, x) in t {
            match &*k.text {
                "clock" => clock = Some(x),
                "after" => after = self.scalar(x, "`after`"),
                "on" => on = Some(x),
                other => self.error(
                    codes::SYNTAX,
                    k,
                    format!("unknown key `{other}` in `until` (expected clock, on, after)"),
                ),
            }
        }
        let (Some(clock), Some(after)) = (clock, after) else {
            self.error(codes::SYNTAX, &v.at, format!("{label}: `until` needs `clock` and `after`"));
            return None;
        };
        // Without `on`, a global clock (the effect may outlive the rule's object).
        let on = match on {
            None => On::Global,
            Some(o) => self.on(Some(o), cx)?,
        };
        let clock = self.channel(clock, &on, Kind::Clock, cx)?;
        match Until::parse(&clock, None, &after.text) {
            Ok(until) => Some(Lasting { until, on }),
            Err(m) => {
                self.error(codes::BAD_RULE, &after, format!("{label}: {m}"));
                None
            }
        }
    }

    fn add_modifier<'x>(
        &mut self,
        label: &str,
        verb: &Text,
        get: &dyn Fn(&str) -> Option<&'x Raw>,
        cx: &RuleCx<'_>,
    ) -> Option<Action> {
        let on = self.on(get("on"), cx)?;
        let (Some(var), Some(kind), Some(value)) = (get("var"), get("type"), get("value")) else {
            self.error(codes::SYNTAX, verb, format!("{label} needs `var`, `type` and `value`"));
            return None;
        };
        let var = self.string(var, "a variable")?;
        let kind_text = self.string(kind, "a modifier type")?;
        let kind = match ModKind::named(&kind_text.text) {
            Ok(k) => k,
            Err(e) => {
                self.error(codes::BAD_RULE, &kind_text, format!("{label}: {}", e.message));
                return None;
            }
        };
        let value_text = self.scalar(value, "a value")?;
        let mut target = Target::Name(var.text.clone());
        let value = match self.scope_of(&on, cx) {
            None => Instruction::Text(value_text.text.clone()),
            Some(scope) => {
                let rules = self.r.rules();
                let Some(def) = rules.resolve(scope, &var.text) else {
                    self.error(codes::BAD_RULE, &var, format!("{label}: no variable `{}` here", var.text));
                    return None;
                };
                let format = rules.var(def).format.clone();
                target = Target::Def(def);
                match rules.instruction(&value_text.text, scope, &format, &format) {
                    Ok(i) => i,
                    Err(e) => {
                        let m = match e {
                            solver::InstructionError::Literal(m) => m,
                            solver::InstructionError::Formula(f) => format!("{} [{}]", f.message, f.code),
                        };
                        self.error(
                            codes::BAD_RULE,
                            &value_text,
                            format!("{label}: `{}`: {m}", value_text.text),
                        );
                        return None;
                    }
                }
            }
        };
        let priority = match get("priority") {
            None => 0,
            Some(p) => self.whole(p, "a priority")?,
        };
        let id = match get("id") {
            Some(i) => Some(self.field(i, "an id", cx)?),
            None => None,
        };
        let until = match get("until") {
            Some(u) => Some(self.until(u, label, cx)?),
            None => None,
        };
        Some(Action::AddModifier { id, var: target, kind, value, priority, on, until })
    }

    fn emit_args(
        &mut self,
        event: EventId,
        args: Option<&Raw>,
        at: &Text,
        cx: &RuleCx<'_>,
        label: &str,
    ) -> Option<Vec<Field>> {
        let given: &[(Text, Raw)] = match args {
            None => &[],
            Some(a) => self.table(a, "`args`")?,
        };
        let def = &cx.events[event.0 as usize];
        let names: Vec<Arc<str>> = def.args.iter().map(|a| a.name.clone()).collect();
        let mut out = vec![None; names.len()];
        let mut ok = true;
        for (k, v) in given {
            match names.iter().position(|n| n.eq_ignore_ascii_case(&k.text)) {
                Some(i) => out[i] = self.field(v, "an argument", cx),
                None => {
                    self.error(
                        codes::BAD_RULE,
                        k,
                        format!("{label}: event `{}` has no argument `{}`", def.name, k.text),
                    );
                    ok = false;
                }
            }
        }
        for (i, n) in names.iter().enumerate() {
            if out[i].is_none() && !given.iter().any(|(k, _)| k.text.eq_ignore_ascii_case(n)) {
                self.error(codes::BAD_RULE, at, format!("{label}: argument `{n}` is missing"));
                ok = false;
            }
        }
        if !ok {
            return None;
        }
        out.into_iter().collect()
    }

    /// `each = { as, select, where }`: every instance of the scope for which the formula is
    /// true when the action runs, bound to `as`; with `order = VAR` and `first = N` (or `last`),
    /// the N with the least (greatest) VAR, a NUMBER variable of the scope.
    fn each<'x>(
        &mut self,
        label: &str,
        verb: &Text,
        get: &dyn Fn(&str) -> Option<&'x Raw>,
        cx: &mut RuleCx<'_>,
    ) -> Option<Action> {
        let (name, select) = self.named(get, "select", verb, label)?;
        let (scope, where_) = self.select(select, get("where"), label)?;
        let take = match (get("first"), get("last")) {
            (Some(n), None) => Some(Take::First(self.whole(n, "`first`")?)),
            (None, Some(n)) => Some(Take::Last(self.whole(n, "`last`")?)),
            (None, None) => None,
            (Some(_), Some(n)) => {
                self.error(codes::SYNTAX, &n.at, format!("{label}: `first` or `last`, not both"));
                return None;
            }
        };
        let order = match (get("order"), take) {
            (Some(o), Some(take)) => {
                let o = self.string(o, "a variable")?;
                let number =
                    self.r.rules().scope(&scope).ok().and_then(|s| self.r.rules().resolve(s, &o.text));
                if !number.is_some_and(|d| self.r.rules().var(d).format == Format::Number) {
                    self.error(
                        codes::BAD_RULE,
                        &o,
                        format!(
                            "{label}: `order = \"{}\"`: no NUMBER variable of that name in {scope}",
                            o.text
                        ),
                    );
                    return None;
                }
                Some((o.text.clone(), take))
            }
            (None, None) => None,
            (o, _) => {
                let at = o.map_or(verb, |o| &o.at);
                self.error(codes::SYNTAX, at, format!("{label}: `order` goes with `first` or `last`"));
                return None;
            }
        };
        cx.names.bound.push(name.text.clone());
        Some(Action::Each { slot: cx.names.bound.len() - 1, scope, where_, order })
    }

    /// An action's `as` (the name what it binds goes by) and its field `key`, both required.
    fn named<'x>(
        &mut self,
        get: &dyn Fn(&str) -> Option<&'x Raw>,
        key: &str,
        verb: &Text,
        label: &str,
    ) -> Option<(Text, &'x Raw)> {
        let (Some(name), Some(v)) = (get("as"), get(key)) else {
            self.error(codes::SYNTAX, verb, format!("{label} needs `as` (the name it binds) and `{key}`"));
            return None;
        };
        Some((self.string(name, "`as`")?, v))
    }

    /// `select = SCOPE, where = FORMULA` (`true` by default): the scope declared, the formula
    /// a BOOLEAN in it.
    fn select(&mut self, select: &Raw, where_: Option<&Raw>, label: &str) -> Option<(Arc<str>, Arc<str>)> {
        let scope = self.string(select, "a scope")?;
        let Ok(scope_id) = self.r.rules().scope(&scope.text) else {
            self.error(codes::BAD_RULE, &scope, format!("{label}: no scope `{}`", scope.text));
            return None;
        };
        let where_ = match where_ {
            Some(w) => self.string(w, "`where`")?,
            // (Formulas have no boolean literals.)
            None => Text::new("1 == 1", scope.at.clone()),
        };
        self.formula(&where_, scope_id, &Format::Boolean, label)?;
        Some((scope.text.clone(), where_.text.clone()))
    }

    fn ask<'x>(
        &mut self,
        label: &str,
        verb: &Text,
        get: &dyn Fn(&str) -> Option<&'x Raw>,
        cx: &mut RuleCx<'_>,
    ) -> Option<Action> {
        let (name, options) = self.named(get, "options", verb, label)?;
        let prompt = match get("prompt") {
            Some(p) => self.string(p, "a prompt")?.text,
            None => Arc::from(format!("choose {}", name.text)),
        };
        let options = match &options.value {
            RawValue::Array(items) => Options::List(
                items.iter().filter_map(|i| self.scalar(i, "an option")).map(|t| t.text).collect(),
            ),
            RawValue::Table(t) => {
                let get = |key: &str| t.iter().find(|(k, _)| &*k.text == key).map(|(_, v)| v);
                match (get("select"), get("where"), get("kind")) {
                    (Some(s), w, None) => {
                        let (scope, where_) = self.select(s, w, label)?;
                        Options::Select { scope, where_ }
                    }
                    (None, None, Some(k)) => {
                        let kind = self.string(k, "a kind")?;
                        let Some(kid) = self.r.kind(&kind.text) else {
                            self.error(codes::BAD_RULE, &kind, format!("{label}: no kind `{}`", kind.text));
                            return None;
                        };
                        Options::Kind(kid)
                    }
                    _ => {
                        self.error(
                            codes::SYNTAX,
                            &options.at,
                            format!("{label}: options are a list, {{ select = SCOPE, where = FORMULA }} or {{ kind = KIND }}"),
                        );
                        return None;
                    }
                }
            }
            _ => {
                self.error(codes::SYNTAX, &options.at, format!("{label}: options must be a list or a table"));
                return None;
            }
        };
        let pick = match get("pick") {
            Some(p) => self.whole(p, "`pick`")?.max(1),
            None => 1,
        };
        let at_least = match get("at_least") {
            Some(n) => {
                let least = self.whole(n, "`at_least`")?;
                if least > pick {
                    // (The ask still binds its name: one error, not one per use.)
                    self.error(
                        codes::SYNTAX,
                        &n.at,
                        format!("{label}: `at_least` {least} is more than `pick` {pick}"),
                    );
                }
                least.min(pick)
            }
            None => pick,
        };
        let decline = matches!(get("decline").map(|d| &d.value), Some(RawValue::Boolean(true)));
        cx.names.bound.push(name.text.clone());
        Some(Action::Ask(Ask { slot: cx.names.bound.len() - 1, prompt, options, pick, at_least, decline }))
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Channel,
    Stock,
    Clock,
    /// Any variable (what `read` binds: a channel, or a variable's value now).
    Value,
}

/// `d6`, `2d6`: (count, sides).
pub(crate) fn parse_die(die: &str) -> Option<(u32, u32)> {
    let lower = die.trim().to_ascii_lowercase();
    let (count, sides) = lower.split_once('d')?;
    let count = if count.is_empty() { 1 } else { count.parse().ok()? };
    let sides: u32 = sides.parse().ok()?;
    ((1..=100).contains(&count) && (2..=1000).contains(&sides)).then_some((count, sides))
}

fn list(items: &[&str]) -> String {
    if items.is_empty() { "none".to_owned() } else { items.join(", ") }
}
