//! RuleScript's syntax: a card's rules text read into properties and statements, every part
//! with its byte span in the text.
//!
//! - A line is `key = value`; `#` starts a comment (outside quotes); blank lines are skipped.
//!   Keys, commands, abilities, events and strings are case-insensitive (kept lower-case here);
//!   expressions are case-sensitive.
//! - `target`, `target?` and `requisite` hold target filters (`;`- or `&&`-separated),
//!   `abilities` words, `label` text, `vars` `name := expr` pairs, `action` and `auto`
//!   statements (`;`-separated).
//! - A statement: `~events~` (auto), `{costs}:` (action), `[[may 'Q']]` or `[[if expr]]`,
//!   effects joined by `&`, `&&`, `||` (a command `name(args)`, `name?(args)`, or an ability
//!   `+name` / `-name`), `to(filters)` (also `target()`, `from()`, with `?`), an `[[else]]`
//!   branch, and a restriction (`ueot`, `unac`, `uynt`, prefixed `my` or `opp`).
//! - Expressions are the subset of Python the seed's examples use: numbers, text, `True`,
//!   `False`, `None`, attribute paths (`me.sp`, `tgt.0`, `_cards.size`), comparisons, `and`,
//!   `or`, `not`, `+ -`, `all EXPR in PATH`, and the calls `flipCoin()`, `getTargets('…')`,
//!   `isChar(…)`, `inUAttack(…)`. Anything else is refused, naming the construct: sheetd
//!   executes no Python.

use crate::Error;
use std::ops::Range;

/// A byte range in the card's rules text.
pub type Span = Range<usize>;

/// The error codes.
pub mod codes {
    /// A line or statement that does not have RuleScript's shape.
    pub const SYNTAX: &str = "rulescript.syntax";
    /// A property the seed does not define.
    pub const UNKNOWN_KEY: &str = "rulescript.unknown_key";
    /// A command the seed does not define.
    pub const UNKNOWN_COMMAND: &str = "rulescript.unknown_command";
    /// An ability the seed does not define.
    pub const UNKNOWN_ABILITY: &str = "rulescript.unknown_ability";
    /// An event the seed does not define, or a bad prefix or suffix.
    pub const UNKNOWN_EVENT: &str = "rulescript.unknown_event";
    /// A restriction on a statement none of whose effects lasts.
    pub const RESTRICTION: &str = "rulescript.restriction";
    /// Python outside the subset of expressions sheetd compiles.
    pub const PYTHON: &str = "rulescript.python";
}

/// A word as written, lower-cased, with its span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    pub text: String,
    pub span: Span,
}

/// A card's rules: its properties in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    pub properties: Vec<Property>,
}

/// `key = value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Property {
    pub key: Key,
    pub key_span: Span,
    pub value: Value,
}

/// The properties the seed defines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// `target` (`target?`: the actions run even with no target).
    Target {
        volitional: bool,
    },
    Action,
    Abilities,
    Auto,
    Label,
    Requisite,
    Vars,
}

/// A property's value, by its key.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Filters(Vec<Filter>),
    Statements(Vec<Statement>),
    Words(Vec<Word>),
    Text(String),
    Vars(Vec<(Word, Expr)>),
}

/// A target filter: `<qty> type <pick> [filter] @zone`, each segment as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub qty: Option<String>,
    pub kind: String,
    pub pick: Option<String>,
    pub filter: Option<String>,
    pub zone: Option<String>,
    /// `::selector(args)`, as written after the `::`.
    pub selector: Option<String>,
    pub span: Span,
}

/// An action or auto statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// `~event, …~` (auto statements).
    pub events: Vec<Event>,
    /// `?hook, …?` (auto statements): the statement is only its `[[if]]`, which, true, cancels
    /// what the hook decides (`?oppCanBlock:this?`: whether the opponent can block this card).
    pub hooks: Vec<Event>,
    /// `{F}:`, `{S}:`, `{D(2)}:` (action statements).
    pub costs: Vec<Cost>,
    pub cond: Option<Cond>,
    pub then: Branch,
    /// `[[else]] …`.
    pub otherwise: Option<Branch>,
    pub restriction: Option<Restriction>,
    pub span: Span,
}

/// Effects in order, each joined to the one before by an operator, and where they apply.
#[derive(Clone, Debug, PartialEq)]
pub struct Branch {
    pub effects: Vec<(Op, Effect)>,
    pub to: Option<To>,
}

/// How an effect joins the one before it (the first's is `Then`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `&`: the next effect after the left one.
    Then,
    /// `&&`: stops at the first failure.
    And,
    /// `||`: the right one only if the left failed.
    Or,
}

/// An effect: a command or an ability added or removed.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// `bp(+200)`; `ask` for `bp?(…)` (the player confirms).
    Command { name: Word, ask: bool, args: Vec<Word> },
    /// `+frosted`, `-unblockable`.
    Ability { add: bool, name: Word },
}

impl Effect {
    /// Whether the effect lasts (a change of BP or an ability), so that a restriction can end
    /// it.
    pub fn lasts(&self) -> bool {
        match self {
            Effect::Ability { .. } => true,
            Effect::Command { name, .. } => matches!(name.text.as_str(), "bp" | "modcost" | "moddamage"),
        }
    }
}

/// `to(filters)`, `target(…)`, `from(…)`; `volitional` with `?`.
#[derive(Clone, Debug, PartialEq)]
pub struct To {
    pub filters: Vec<Filter>,
    pub volitional: bool,
    pub span: Span,
}

/// `[[may 'Question']]` or `[[if expr]]`.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    May(Option<String>, Span),
    If(Expr),
}

/// A cost: `F` (freeze this card), `S` (discard it, or `S(filter)`), `D` (discard from the
/// hand: `D`, `D(2)`, `D(filter)`, `D(<r2>)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cost {
    pub kind: char,
    pub arg: Option<Word>,
    pub span: Span,
}

/// Until when a statement's effects last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restriction {
    /// `opp…`: the opponent's turn; else the current player's.
    pub opponent: bool,
    pub until: Until,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// `ueot`: the end of the turn.
    EndOfTurn,
    /// `unac`: the next action card played.
    NextAction,
    /// `uynt`: the beginning of your next turn.
    YourNextTurn,
}

/// An event listener: `myDrawPhase`, `oppEndPhase:once`, `attacks:any`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// `my` (the default), `opp` or `any`.
    pub whose: String,
    pub name: String,
    pub suffixes: Vec<String>,
    pub span: Span,
}

/// An expression of the subset.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Int(i64, Span),
    Text(String, Span),
    Bool(bool, Span),
    Nil(Span),
    /// `me.sp`, `tgt.0`, `_coin`: segments as written (case-sensitive).
    Path(Vec<String>, Span),
    Call(String, Vec<Expr>, Span),
    Not(Box<Expr>, Span),
    Binary(BinOp, Box<Expr>, Box<Expr>, Span),
    /// `all EXPR in LIST`.
    All(Box<Expr>, Box<Expr>, Span),
}

impl Expr {
    pub fn span(&self) -> Span {
        match self {
            Expr::Int(_, s)
            | Expr::Text(_, s)
            | Expr::Bool(_, s)
            | Expr::Nil(s)
            | Expr::Path(_, s)
            | Expr::Call(_, _, s)
            | Expr::Not(_, s)
            | Expr::Binary(_, _, _, s)
            | Expr::All(_, _, s) => s.clone(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Or,
    And,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    Add,
    Sub,
}

/// The commands the seed lists.
pub const COMMANDS: &[&str] = &[
    "activate",
    "altercost",
    "bp",
    "clear",
    "copyability",
    "damage",
    "destroy",
    "disablerule",
    "discard",
    "draw",
    "each",
    "enablerule",
    "freeze",
    "hp",
    "loseability",
    "loselife",
    "modcost",
    "moddamage",
    "modrule",
    "movepile",
    "moverevealedto",
    "moveto",
    "movetoslot",
    "peek",
    "pileview",
    "playextrachar",
    "prophecy",
    "removefromattack",
    "reveal",
    "rnddiscard",
    "shuffle",
    "skip",
    "sp",
    "steal",
    "swapabilities",
    "swapchars",
    "swappiles",
    "transform",
    "trash",
    "turns",
    "unfreeze",
    "unite",
];

/// The abilities the seed lists.
pub const ABILITIES: &[&str] = &[
    "unblockable",
    "cantattack",
    "cantblock",
    "unlimitedbackup",
    "unfreezable",
    "pierce",
    "preventpierce",
    "rush",
    "frosted",
    "cantplayac",
    "cantplayre",
];

/// The events the seed lists.
pub const EVENTS: &[&str] = &[
    "activatephase",
    "drawphase",
    "blockphase",
    "endphase",
    "cleanupphase",
    "handchanges",
    "ringchanges",
    "removed",
    "powerless",
    "backedup",
    "beforepaycostaction",
    "beforepaycostreaction",
    "beforedamage",
    "cancelcombatdamage",
    "playercombatdamaged",
    "attacks",
    "blocks",
    "blocked",
];

/// The hooks the seed defines.
pub const HOOKS: &[&str] = &["canblock"];

/// The event suffixes the seed lists.
pub const SUFFIXES: &[&str] = &["this", "fromthis", "any", "once", "action", "reaction", "char"];

/// The functions an expression may call.
pub const FUNCTIONS: &[&str] = &["flipCoin", "getTargets", "isChar", "inUAttack"];

fn err(code: &'static str, message: impl Into<String>, span: Span) -> Error {
    Error { code, message: message.into(), span }
}

/// Reads a card's rules text.
// long: one arm per property, each a few lines.
pub fn parse(text: &str) -> Result<Rules, Error> {
    let mut properties = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let body = strip_comment(line.trim_end_matches(['\n', '\r']));
        if body.trim().is_empty() {
            continue;
        }
        let Some(eq) = find_top(body, "=") else {
            return Err(err(codes::SYNTAX, "a rule's line is `key = value`", start..start + body.len()));
        };
        let raw_key = body[..eq].trim();
        let key_start = start + body[..eq].find(raw_key).unwrap_or(0);
        let key_span = key_start..key_start + raw_key.len();
        let key = match raw_key.to_ascii_lowercase().as_str() {
            "target" => Key::Target { volitional: false },
            "target?" => Key::Target { volitional: true },
            "action" => Key::Action,
            "abilities" => Key::Abilities,
            "auto" => Key::Auto,
            "label" => Key::Label,
            "requisite" => Key::Requisite,
            "vars" => Key::Vars,
            _ => {
                return Err(err(
                    codes::UNKNOWN_KEY,
                    format!(
                        "`{raw_key}` is no RuleScript property (target, action, abilities, auto, label, requisite, vars)"
                    ),
                    key_span,
                ));
            }
        };
        let value_start = start + eq + 1;
        let value = &body[eq + 1..];
        let value = match key {
            Key::Target { .. } => Value::Filters(filters(value, value_start, ";")?),
            Key::Requisite => Value::Filters(filters(value, value_start, "&&")?),
            Key::Action | Key::Auto => {
                let mut out = Vec::new();
                for (s, o) in split_top(value, value_start, ";") {
                    if !s.trim().is_empty() {
                        out.push(statement(s, o, key == Key::Auto)?);
                    }
                }
                Value::Statements(out)
            }
            Key::Abilities => {
                let mut out = Vec::new();
                for (s, o) in split_top(value, value_start, ",") {
                    let w = word(s, o);
                    if !ABILITIES.contains(&w.text.as_str()) {
                        return Err(err(codes::UNKNOWN_ABILITY, unknown_ability(&w.text), w.span));
                    }
                    out.push(w);
                }
                Value::Words(out)
            }
            Key::Label => Value::Text(unquote(value.trim()).to_owned()),
            Key::Vars => {
                let mut out = Vec::new();
                for (s, o) in split_top(value, value_start, ";") {
                    if s.trim().is_empty() {
                        continue;
                    }
                    let Some(i) = s.find(":=") else {
                        return Err(err(codes::SYNTAX, "a variable is `name := value`", word(s, o).span));
                    };
                    let name = word(&s[..i], o);
                    if name.text.is_empty()
                        || !name.text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    {
                        return Err(err(
                            codes::SYNTAX,
                            "a variable's name is letters, digits and `_`",
                            name.span,
                        ));
                    }
                    out.push((name, expression(&s[i + 2..], o + i + 2)?));
                }
                Value::Vars(out)
            }
        };
        properties.push(Property { key, key_span, value });
    }
    Ok(Rules { properties })
}

fn unknown_ability(name: &str) -> String {
    format!("`{name}` is no ability the seed defines ({})", ABILITIES.join(", "))
}

/// The line without its `#` comment (a `#` inside quotes is text).
fn strip_comment(line: &str) -> &str {
    let mut quote = None;
    for (i, c) in line.char_indices() {
        match (c, quote) {
            ('\'' | '"', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            ('#', None) => return &line[..i],
            _ => {}
        }
    }
    line
}

/// Where `sep` first occurs outside quotes, parentheses, brackets and braces.
fn find_top(text: &str, sep: &str) -> Option<usize> {
    split_points(text, sep).first().copied()
}

fn split_points(text: &str, sep: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote = None;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match (c, quote) {
            (b'\'' | b'"', None) => quote = Some(c),
            (q, Some(open)) if q == open => quote = None,
            (_, Some(_)) => {}
            (b'(' | b'[' | b'{', None) => depth += 1,
            (b')' | b']' | b'}', None) => depth -= 1,
            // (`sep` is ASCII: where it matches is a character boundary.)
            _ if depth == 0 && bytes[i..].starts_with(sep.as_bytes()) => {
                // `=` alone: not part of `==`, `<=`, `>=`, `!=`, `:=`.
                let lone = sep != "="
                    || (bytes.get(i + 1) != Some(&b'=')
                        && !(i > 0 && matches!(bytes[i - 1], b'=' | b'<' | b'>' | b'!' | b':')));
                if lone {
                    out.push(i);
                    i += sep.len();
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// `text` (starting at byte `at` of the card) split at `sep` outside groups, each part with its
/// offset.
fn split_top<'a>(text: &'a str, at: usize, sep: &str) -> Vec<(&'a str, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    for p in split_points(text, sep) {
        out.push((&text[from..p], at + from));
        from = p + sep.len();
    }
    out.push((&text[from..], at + from));
    out
}

/// A trimmed, lower-cased word with its span.
fn word(text: &str, at: usize) -> Word {
    let lead = text.len() - text.trim_start().len();
    let t = text.trim();
    Word { text: unquote(t).to_ascii_lowercase(), span: at + lead..at + lead + t.len() }
}

fn unquote(t: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = t.strip_prefix(q).and_then(|x| x.strip_suffix(q)) {
            return inner;
        }
    }
    t
}

fn filters(text: &str, at: usize, sep: &str) -> Result<Vec<Filter>, Error> {
    split_top(text, at, sep)
        .into_iter()
        .filter(|(s, _)| !s.trim().is_empty())
        .map(|(s, o)| filter(s, o))
        .collect()
}

/// `<qty> type <pick> [filter] @zone ::selector(args)`.
fn filter(text: &str, at: usize) -> Result<Filter, Error> {
    let w = word(text, at);
    let span = w.span.clone();
    let whole = text.trim();
    let mut rest = whole;
    let bad = |m: &str| err(codes::SYNTAX, format!("target filter `{whole}`: {m}"), span.clone());
    let mut qty = None;
    if let Some(r) = rest.strip_prefix('<') {
        let end = r.find('>').ok_or_else(|| bad("a `<` without its `>`"))?;
        qty = Some(r[..end].trim().to_owned());
        rest = r[end + 1..].trim_start();
    }
    let kind_end = rest.find(['<', '[', '@', ':']).unwrap_or(rest.len());
    let kind = rest[..kind_end].trim().to_ascii_lowercase();
    if kind.is_empty() {
        return Err(bad("it names no type (`character`, `*`, `me`, …)"));
    }
    rest = &rest[kind_end..];
    let mut pick = None;
    if let Some(r) = rest.strip_prefix('<') {
        let end = r.find('>').ok_or_else(|| bad("a `<` without its `>`"))?;
        pick = Some(r[..end].trim().to_owned());
        rest = r[end + 1..].trim_start();
    }
    let mut filter = None;
    if let Some(r) = rest.strip_prefix('[') {
        let end = r.find(']').ok_or_else(|| bad("a `[` without its `]`"))?;
        filter = Some(r[..end].trim().to_ascii_lowercase());
        rest = r[end + 1..].trim_start();
    }
    let mut zone = None;
    if let Some(r) = rest.strip_prefix('@') {
        let end = r.find("::").unwrap_or(r.len());
        zone = Some(r[..end].trim().to_ascii_lowercase());
        rest = &r[end..];
    }
    let mut selector = None;
    if let Some(r) = rest.trim_start().strip_prefix("::") {
        selector = Some(r.trim().to_owned());
    } else if !rest.trim().is_empty() {
        return Err(bad(&format!("`{}` is not part of a target filter", rest.trim())));
    }
    Ok(Filter { qty, kind, pick, filter, zone, selector, span })
}

/// A cursor over one statement.
struct Cur<'a> {
    text: &'a str,
    at: usize,
    i: usize,
}

impl<'a> Cur<'a> {
    fn ws(&mut self) {
        self.i += self.text[self.i..].len() - self.text[self.i..].trim_start().len();
    }
    fn rest(&self) -> &'a str {
        &self.text[self.i..]
    }
    fn eat(&mut self, s: &str) -> bool {
        self.ws();
        // (Compared as bytes: `s` is ASCII, so a match ends on a character boundary.)
        let ok = self.rest().as_bytes().get(..s.len()).is_some_and(|b| b.eq_ignore_ascii_case(s.as_bytes()));
        if ok {
            self.i += s.len();
        }
        ok
    }
    fn span(&self, from: usize) -> Span {
        self.at + from..self.at + self.i
    }
    /// The text up to the matching `close` (the opening one eaten), quotes and nesting aware.
    fn group(&mut self, open: char, close: char) -> Result<(&'a str, usize), Error> {
        let start = self.i;
        let mut depth = 1;
        let mut quote = None;
        for (k, c) in self.rest().char_indices() {
            match (c, quote) {
                ('\'' | '"', None) => quote = Some(c),
                (q, Some(o)) if q == o => quote = None,
                (_, Some(_)) => {}
                (c, None) if c == open => depth += 1,
                (c, None) if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        self.i = start + k + c.len_utf8();
                        return Ok((&self.text[start..start + k], self.at + start));
                    }
                }
                _ => {}
            }
        }
        let span = self.at + start.saturating_sub(1)..self.at + self.text.len();
        Err(err(codes::SYNTAX, format!("a `{open}` without its `{close}`"), span))
    }
    fn ident(&mut self) -> Option<Word> {
        self.ws();
        let n =
            self.rest().find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(self.rest().len());
        if n == 0 {
            return None;
        }
        let start = self.i;
        self.i += n;
        Some(Word { text: self.text[start..self.i].to_ascii_lowercase(), span: self.span(start) })
    }
}

// long: the statement's segments in order, each a few lines.
fn statement(text: &str, at: usize, auto: bool) -> Result<Statement, Error> {
    let mut c = Cur { text, at, i: 0 };
    c.ws();
    let start = c.i;
    let mut events = Vec::new();
    if c.eat("~") {
        let Some(close) = c.rest().find('~') else {
            return Err(err(codes::SYNTAX, "a `~` without its closing `~`", at + start..at + text.len()));
        };
        let (inner, o) = (&c.rest()[..close], at + c.i);
        c.i += close + 1;
        for (s, so) in split_top(inner, o, ",") {
            events.push(event(s, so, EVENTS)?);
        }
    } else if auto && c.eat("?") {
        // `?hook, …? [[if expr]]`: nothing else.
        let Some(close) = c.rest().find('?') else {
            return Err(err(codes::SYNTAX, "a `?` without its closing `?`", at + start..at + text.len()));
        };
        let (inner, o) = (&c.rest()[..close], at + c.i);
        c.i += close + 1;
        let mut hooks = Vec::new();
        for (s, so) in split_top(inner, o, ",") {
            hooks.push(event(s, so, HOOKS)?);
        }
        let cond = if c.eat("[[") { Some(condition(&mut c)?) } else { None };
        c.ws();
        if !matches!(cond, Some(Cond::If(_))) || !c.rest().trim_end().is_empty() {
            return Err(err(
                codes::SYNTAX,
                "a hook is followed only by its condition: `?oppCanBlock:this? [[if expr]]`",
                at + start..at + text.trim_end().len(),
            ));
        }
        return Ok(Statement {
            events,
            hooks,
            costs: Vec::new(),
            cond,
            then: Branch { effects: Vec::new(), to: None },
            otherwise: None,
            restriction: None,
            span: at + start..at + text.trim_end().len(),
        });
    }
    let mut costs = Vec::new();
    if c.eat("{") {
        if auto {
            return Err(err(
                codes::SYNTAX,
                "a cost belongs to an action, not an auto statement",
                c.span(c.i - 1),
            ));
        }
        let (inner, o) = c.group('{', '}')?;
        for (s, so) in split_top(inner, o, ",") {
            costs.push(cost(s, so)?);
        }
        if !c.eat(":") {
            return Err(err(codes::SYNTAX, "a cost `{…}` is followed by `:`", c.span(c.i)));
        }
    }
    let cond = if c.eat("[[") { Some(condition(&mut c)?) } else { None };
    let then = branch(&mut c)?;
    let otherwise = if c.eat("[[") {
        let (inner, o) = c.group('[', ']')?;
        if !inner.trim().eq_ignore_ascii_case("else") || !c.eat("]") {
            return Err(err(codes::SYNTAX, "after the effects, `[[else]]` or the end", o..o + inner.len()));
        }
        Some(branch(&mut c)?)
    } else {
        None
    };
    let restriction = restriction(&mut c)?;
    c.ws();
    if !c.rest().is_empty() {
        let r = c.rest().trim_end();
        return Err(err(
            codes::SYNTAX,
            format!("`{r}` is not part of a statement"),
            c.span(c.i).start..c.at + c.i + r.len(),
        ));
    }
    if let Some(r) = &restriction {
        let effects = then.effects.iter().chain(otherwise.iter().flat_map(|b| &b.effects));
        if !effects.clone().any(|(_, e)| e.lasts()) {
            return Err(err(
                codes::RESTRICTION,
                "a restriction ends effects that last (bp(), an ability), and this statement has none: its effects happen once",
                r.span.clone(),
            ));
        }
    }
    Ok(Statement {
        events,
        hooks: Vec::new(),
        costs,
        cond,
        then,
        otherwise,
        restriction,
        span: at + start..at + text.trim_end().len(),
    })
}

/// An event (or a hook) among `names`, with its prefix and suffixes.
fn event(text: &str, at: usize, names: &[&str]) -> Result<Event, Error> {
    let w = word(text, at);
    let mut parts = w.text.split(':');
    let head = parts.next().unwrap_or("");
    let (whose, name) = ["my", "opp", "any"]
        .iter()
        .find_map(|p| {
            head.strip_prefix(p).filter(|n| names.contains(n)).map(|n| ((*p).to_owned(), n.to_owned()))
        })
        .unwrap_or(("my".to_owned(), head.to_owned()));
    if !names.contains(&name.as_str()) {
        let what = if names == HOOKS { "hook" } else { "event" };
        return Err(err(
            codes::UNKNOWN_EVENT,
            format!("`{head}` is no {what} the seed defines (prefixed my, opp or any: {})", names.join(", ")),
            w.span,
        ));
    }
    let mut suffixes = Vec::new();
    for s in parts {
        if !SUFFIXES.contains(&s) {
            return Err(err(
                codes::UNKNOWN_EVENT,
                format!(
                    "`:{s}` is no event suffix ({})",
                    SUFFIXES.iter().map(|s| format!(":{s}")).collect::<Vec<_>>().join(", ")
                ),
                w.span,
            ));
        }
        suffixes.push(s.to_owned());
    }
    Ok(Event { whose, name, suffixes, span: w.span })
}

fn cost(text: &str, at: usize) -> Result<Cost, Error> {
    let w = word(text, at);
    let t = text.trim();
    let kind = t.chars().next().map(|c| c.to_ascii_uppercase());
    let arg = t.get(1..).map(str::trim).filter(|a| !a.is_empty());
    match (kind, arg) {
        (Some(k @ ('F' | 'S' | 'D')), None) => Ok(Cost { kind: k, arg: None, span: w.span }),
        (Some(k @ ('S' | 'D')), Some(a)) if a.starts_with('(') && a.ends_with(')') => {
            let inner = &a[1..a.len() - 1];
            let o = w.span.start + 1 + a.find(inner).unwrap_or(1);
            Ok(Cost { kind: k, arg: Some(word(inner, o)), span: w.span })
        }
        _ => Err(err(
            codes::SYNTAX,
            format!("`{t}` is no cost: F (freeze this card), S, S(filter), D, D(n), D(filter)"),
            w.span,
        )),
    }
}

fn condition(c: &mut Cur<'_>) -> Result<Cond, Error> {
    let (inner, o) = c.group('[', ']')?;
    if !c.eat("]") {
        return Err(err(codes::SYNTAX, "a condition is `[[…]]`", c.span(c.i)));
    }
    let t = inner.trim();
    let lead = inner.len() - inner.trim_start().len();
    let lower = t.to_ascii_lowercase();
    if lower == "may" || lower.starts_with("may ") {
        let q = t[3..].trim();
        return Ok(Cond::May((!q.is_empty()).then(|| unquote(q).to_owned()), o..o + inner.len()));
    }
    if lower.starts_with("if ") {
        return Ok(Cond::If(expression(&t[3..], o + lead + 3)?));
    }
    Err(err(
        codes::SYNTAX,
        format!("`[[{t}]]`: a condition is [[may]], [[may 'Question']] or [[if expr]]"),
        o..o + inner.len(),
    ))
}

// long: one effect after another, each a few lines, and the target clause.
fn branch(c: &mut Cur<'_>) -> Result<Branch, Error> {
    let mut effects = Vec::new();
    let mut to = None;
    let mut op = Op::Then;
    loop {
        c.ws();
        let start = c.i;
        if let Some(sign) = c.rest().chars().next().filter(|ch| *ch == '+' || *ch == '-') {
            c.i += 1;
            let Some(name) = c.ident() else {
                return Err(err(
                    codes::SYNTAX,
                    format!("`{sign}` adds or removes an ability: `{sign}frosted`"),
                    c.span(start),
                ));
            };
            if !ABILITIES.contains(&name.text.as_str()) {
                return Err(err(codes::UNKNOWN_ABILITY, unknown_ability(&name.text), name.span));
            }
            effects.push((op, Effect::Ability { add: sign == '+', name }));
        } else {
            let Some(name) = c.ident() else { break };
            let ask = c.rest().starts_with('?');
            if ask {
                c.i += 1;
            }
            if !c.rest().starts_with('(') {
                // Not a command: a restriction, or text the statement refuses.
                c.i = start;
                break;
            }
            c.i += 1;
            let (inner, o) = c.group('(', ')')?;
            if matches!(name.text.as_str(), "to" | "target" | "from") {
                if effects.is_empty() {
                    return Err(err(
                        codes::SYNTAX,
                        "`to()` names where effects apply: the effects come first",
                        c.span(start),
                    ));
                }
                to = Some(To { filters: filters(inner, o, ";")?, volitional: ask, span: c.span(start) });
                break;
            }
            if !COMMANDS.contains(&name.text.as_str()) {
                return Err(err(
                    codes::UNKNOWN_COMMAND,
                    format!(
                        "`{}` is no RuleScript command (bp, sp, hp, damage, destroy, moveTo, draw, discard, …)",
                        name.text
                    ),
                    name.span,
                ));
            }
            let args = if inner.trim().is_empty() {
                Vec::new()
            } else {
                split_top(inner, o, ",").into_iter().map(|(s, so)| word(s, so)).collect()
            };
            effects.push((op, Effect::Command { name, ask, args }));
        }
        op = if c.eat("&&") {
            Op::And
        } else if c.eat("||") {
            Op::Or
        } else if c.eat("&") {
            Op::Then
        } else {
            // Without an operator only the target clause may follow.
            let save = c.i;
            let next = c.ident();
            c.i = save;
            if next.is_some_and(|w| matches!(w.text.as_str(), "to" | "target" | "from")) {
                continue;
            }
            break;
        };
    }
    if effects.is_empty() {
        c.ws();
        return Err(err(
            codes::SYNTAX,
            "a statement needs at least one effect",
            c.span(c.i).start..c.at + c.text.len(),
        ));
    }
    Ok(Branch { effects, to })
}

fn restriction(c: &mut Cur<'_>) -> Result<Option<Restriction>, Error> {
    let save = c.i;
    let Some(w) = c.ident() else { return Ok(None) };
    let (opponent, rest) = match w.text.strip_prefix("opp") {
        Some(r) => (true, r),
        None => (false, w.text.strip_prefix("my").unwrap_or(&w.text)),
    };
    let until = match rest {
        "ueot" => Until::EndOfTurn,
        "unac" => Until::NextAction,
        "uynt" => Until::YourNextTurn,
        _ => {
            c.i = save;
            return Ok(None);
        }
    };
    Ok(Some(Restriction { opponent, until, span: w.span }))
}

/// Reads an expression of the subset (see the module docs).
pub fn expression(text: &str, at: usize) -> Result<Expr, Error> {
    let toks = tokens(text, at)?;
    let mut p = Parser { toks, i: 0, end: at + text.len(), depth: 0 };
    let e = p.or()?;
    match p.toks.get(p.i) {
        None => Ok(e),
        Some(t) => Err(python_or_syntax(t)),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Text(String),
    Name(String),
    Sym(&'static str),
}

fn python_or_syntax(t: &(Tok, Span)) -> Error {
    let shown = match &t.0 {
        Tok::Int(n) => n.to_string(),
        Tok::Text(s) => format!("'{s}'"),
        Tok::Name(n) => n.clone(),
        Tok::Sym(s) => (*s).to_owned(),
    };
    err(codes::SYNTAX, format!("`{shown}` is not expected here"), t.1.clone())
}

/// Python the subset does not have, named.
fn python(what: &str, span: Span) -> Error {
    err(
        codes::PYTHON,
        format!(
            "{what} is Python outside the subset sheetd compiles (paths such as me.sp, numbers, text, comparisons, and/or/not, + -, all … in …, flipCoin(), getTargets('…'), isChar(), inUAttack()); sheetd runs no Python"
        ),
        span,
    )
}

// long: one arm per kind of token, and the Python symbols refused by name.
fn tokens(text: &str, at: usize) -> Result<Vec<(Tok, Span)>, Error> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        // (`i` is always at a character boundary: tokens end on ASCII or at a whole character.)
        let Some(c) = text[i..].chars().next() else { break };
        let start = i;
        if c.is_whitespace() {
            i += c.len_utf8();
            continue;
        }
        if c.is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let fraction = i < b.len() && b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit);
            if fraction || (i < b.len() && b[i].is_ascii_alphabetic()) {
                i += 1;
                while i < b.len() && b[i].is_ascii_alphanumeric() {
                    i += 1;
                }
                return Err(python("a number that is not a whole number", at + start..at + i));
            }
            let n = text[start..i]
                .parse::<i64>()
                .map_err(|_| err(codes::SYNTAX, "a number too large", at + start..at + i))?;
            out.push((Tok::Int(n), at + start..at + i));
            continue;
        }
        if c == '\'' || c == '"' {
            let end = text[i + 1..].find(c).ok_or_else(|| {
                err(codes::SYNTAX, "text without its closing quote", at + start..at + text.len())
            })?;
            out.push((Tok::Text(text[i + 1..i + 1 + end].to_owned()), at + start..at + i + end + 2));
            i += end + 2;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let name = &text[start..i];
            if PYTHON_WORDS.contains(&name) {
                return Err(python(&format!("`{name}`"), at + start..at + i));
            }
            out.push((Tok::Name(name.to_owned()), at + start..at + i));
            continue;
        }
        let two = text.get(i..i + 2).unwrap_or("");
        let sym: &'static str = match two {
            "<=" => "<=",
            ">=" => ">=",
            "==" => "==",
            "!=" => "!=",
            "**" | "//" | ":=" | "->" | "<<" | ">>" => {
                return Err(python(&format!("`{two}`"), at + start..at + i + 2));
            }
            _ => match c {
                '<' => "<",
                '>' => ">",
                '+' => "+",
                '-' => "-",
                '.' => ".",
                ',' => ",",
                '(' => "(",
                ')' => ")",
                '[' | ']' => return Err(python("indexing or a list (`[`)", at + start..at + i + 1)),
                '{' | '}' => return Err(python("a dict or set (`{`)", at + start..at + i + 1)),
                '*' | '/' | '%' => return Err(python(&format!("`{c}`"), at + start..at + i + 1)),
                '=' => return Err(python("assignment (`=`)", at + start..at + i + 1)),
                ':' => return Err(python("`:` (a slice, lambda or dict)", at + start..at + i + 1)),
                _ => {
                    let len = c.len_utf8();
                    return Err(err(
                        codes::SYNTAX,
                        format!("`{c}` is not part of an expression"),
                        at + start..at + i + len,
                    ));
                }
            },
        };
        i += sym.len();
        out.push((Tok::Sym(sym), at + start..at + i));
    }
    Ok(out)
}

/// Python's statement and expression keywords the subset does not have.
const PYTHON_WORDS: &[&str] = &[
    "lambda", "for", "if", "else", "elif", "while", "import", "from", "yield", "await", "async", "def",
    "class", "with", "exec", "eval", "print", "global", "nonlocal", "del", "assert", "pass", "raise", "try",
    "except", "finally", "return", "break", "continue", "as",
];

/// The deepest an expression nests.
const MAX_DEPTH: usize = 64;

struct Parser {
    toks: Vec<(Tok, Span)>,
    i: usize,
    end: usize,
    /// How deeply the parentheses read so far nest (bounded by [`MAX_DEPTH`]: the parser
    /// recurses on each).
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.0)
    }
    fn is_name(&self, n: &str) -> bool {
        matches!(self.peek(), Some(Tok::Name(x)) if x == n)
    }
    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Sym(x)) if *x == s)
    }
    fn here(&self) -> Span {
        self.toks.get(self.i).map_or(self.end..self.end, |t| t.1.clone())
    }
    fn joined(a: &Expr, b: &Expr) -> Span {
        a.span().start..b.span().end
    }
    fn or(&mut self) -> Result<Expr, Error> {
        self.chain("or", BinOp::Or, Self::and)
    }
    fn and(&mut self) -> Result<Expr, Error> {
        self.chain("and", BinOp::And, Self::not)
    }
    /// `next (word next)*`, left-associative.
    fn chain(
        &mut self,
        word: &str,
        op: BinOp,
        next: fn(&mut Self) -> Result<Expr, Error>,
    ) -> Result<Expr, Error> {
        let mut a = next(self)?;
        while self.is_name(word) {
            self.i += 1;
            let b = next(self)?;
            let s = Self::joined(&a, &b);
            a = Expr::Binary(op, Box::new(a), Box::new(b), s);
        }
        Ok(a)
    }
    /// The comparison operator at the cursor, if one is.
    fn comparator(&self) -> Option<BinOp> {
        Some(match self.peek()? {
            Tok::Sym("<") => BinOp::Lt,
            Tok::Sym("<=") => BinOp::Le,
            Tok::Sym(">") => BinOp::Gt,
            Tok::Sym(">=") => BinOp::Ge,
            Tok::Sym("==") => BinOp::Eq,
            Tok::Sym("!=") => BinOp::Ne,
            _ => return None,
        })
    }
    fn not(&mut self) -> Result<Expr, Error> {
        if self.is_name("not") {
            let start = self.here().start;
            self.i += 1;
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(err(codes::SYNTAX, "an expression nested too deeply", self.here()));
            }
            let e = self.not()?;
            self.depth -= 1;
            let s = start..e.span().end;
            return Ok(Expr::Not(Box::new(e), s));
        }
        self.comparison()
    }
    fn comparison(&mut self) -> Result<Expr, Error> {
        let a = self.sum()?;
        if let Some(Tok::Name(n)) = self.peek()
            && (n == "is" || n == "in")
        {
            return Err(python(&format!("`{n}` outside `all … in …`"), self.here()));
        }
        let Some(op) = self.comparator() else { return Ok(a) };
        self.i += 1;
        let b = self.sum()?;
        if self.comparator().is_some() {
            return Err(python("a chained comparison", self.here()));
        }
        let s = Self::joined(&a, &b);
        Ok(Expr::Binary(op, Box::new(a), Box::new(b), s))
    }
    fn sum(&mut self) -> Result<Expr, Error> {
        let mut a = self.atom(0)?;
        loop {
            let op = if self.is_sym("+") {
                BinOp::Add
            } else if self.is_sym("-") {
                BinOp::Sub
            } else {
                return Ok(a);
            };
            self.i += 1;
            let b = self.atom(0)?;
            let s = Self::joined(&a, &b);
            a = Expr::Binary(op, Box::new(a), Box::new(b), s);
        }
    }
    // long: one arm per kind of atom, and the constructs refused by name.
    fn atom(&mut self, depth: usize) -> Result<Expr, Error> {
        if depth > MAX_DEPTH {
            return Err(err(codes::SYNTAX, "an expression nested too deeply", self.here()));
        }
        let Some((tok, span)) = self.toks.get(self.i).cloned() else {
            return Err(err(codes::SYNTAX, "the expression ends where a value was expected", self.here()));
        };
        self.i += 1;
        match tok {
            Tok::Int(n) => Ok(Expr::Int(n, span)),
            Tok::Text(t) => Ok(Expr::Text(t, span)),
            Tok::Sym("-") => {
                let e = self.atom(depth + 1)?;
                let s = span.start..e.span().end;
                Ok(Expr::Binary(BinOp::Sub, Box::new(Expr::Int(0, span)), Box::new(e), s))
            }
            Tok::Sym("(") => {
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err(err(codes::SYNTAX, "an expression nested too deeply", span));
                }
                let e = self.or()?;
                self.depth -= 1;
                if !self.is_sym(")") {
                    if self.is_sym(",") {
                        return Err(python("a tuple", self.here()));
                    }
                    return Err(err(codes::SYNTAX, "a `(` without its `)`", span));
                }
                self.i += 1;
                Ok(e)
            }
            Tok::Name(n) => match n.as_str() {
                "True" => Ok(Expr::Bool(true, span)),
                "False" => Ok(Expr::Bool(false, span)),
                "None" => Ok(Expr::Nil(span)),
                "all" => {
                    let item = self.sum()?;
                    if !self.is_name("in") {
                        // `all card.bp <= 300 in me.ring`: the comparison before `in`.
                        let Some(op) = self.comparator() else {
                            return Err(err(codes::SYNTAX, "`all EXPR in LIST`: no `in`", self.here()));
                        };
                        self.i += 1;
                        let b = self.sum()?;
                        let s = Self::joined(&item, &b);
                        let cmp = Expr::Binary(op, Box::new(item), Box::new(b), s);
                        return self.all_rest(cmp, span);
                    }
                    self.all_rest(item, span)
                }
                "and" | "or" | "not" | "in" | "is" => {
                    Err(err(codes::SYNTAX, format!("`{n}` where a value was expected"), span))
                }
                _ => {
                    let mut segs = vec![n.clone()];
                    let mut end = span.end;
                    if self.is_sym("(") {
                        if !FUNCTIONS.contains(&n.as_str()) {
                            return Err(python(&format!("the call `{n}()`"), span));
                        }
                        self.i += 1;
                        let mut args = Vec::new();
                        while !self.is_sym(")") {
                            args.push(self.or()?);
                            if self.is_sym(",") {
                                self.i += 1;
                            } else if !self.is_sym(")") {
                                return Err(err(
                                    codes::SYNTAX,
                                    format!("`{n}(`: a `,` or `)` expected"),
                                    self.here(),
                                ));
                            }
                        }
                        let close = self.here();
                        self.i += 1;
                        return Ok(Expr::Call(n, args, span.start..close.end));
                    }
                    while self.is_sym(".") {
                        self.i += 1;
                        match self.toks.get(self.i).cloned() {
                            Some((Tok::Name(x), s)) => {
                                if self.toks.get(self.i + 1).is_some_and(|t| t.0 == Tok::Sym("(")) {
                                    return Err(python(&format!("the method call `.{x}()`"), s));
                                }
                                segs.push(x);
                                end = s.end;
                            }
                            Some((Tok::Int(k), s)) => {
                                segs.push(k.to_string());
                                end = s.end;
                            }
                            _ => {
                                return Err(err(
                                    codes::SYNTAX,
                                    "a `.` is followed by an attribute or index",
                                    self.here(),
                                ));
                            }
                        }
                        self.i += 1;
                    }
                    Ok(Expr::Path(segs, span.start..end))
                }
            },
            Tok::Sym(s) => Err(err(codes::SYNTAX, format!("`{s}` where a value was expected"), span)),
        }
    }
    fn all_rest(&mut self, item: Expr, start: Span) -> Result<Expr, Error> {
        if !self.is_name("in") {
            return Err(err(codes::SYNTAX, "`all EXPR in LIST`: no `in`", self.here()));
        }
        self.i += 1;
        let list = self.atom(1)?;
        let s = start.start..list.span().end;
        Ok(Expr::All(Box::new(item), Box::new(list), s))
    }
}
