//! WWRF's syntax (`../shared/seeds/wwrf-formalization-guide.txt`): element files, and the
//! ability lines in their `__Formalized__` sections, read into trees with byte spans.
//!
//! ```text
//! file     := element+
//! element  := "**" NAME "**" [ "|" header ] NL section*
//!             header: CLASS CATEGORY ["- " TEAM] (a role) | TEAM "Group" (a group)
//!                     | "Attribute" (a custom attribute); none: a team
//! section  := "__" TITLE "__" NL text      only __Formalized__ is read:
//!             "Unique Role" | "Haunted Role" | "Unique Group" | "No Abilities"
//!             | "Win Condition:" selector ("," selector)* | line
//! line     := trigger params ":" ability params      (the parameters on either side)
//! params   := ["[" restriction ("," restriction)* "]"] ["⟨" scaling "⟩"] ["{" other ("," other)* "}"]
//!             ["|" ["silent:"] PROMPT "|"]            in that order
//! ```
//!
//! Every trigger, restriction, scaling, condition, ability and duration the guide defines is
//! read; anything else is refused with a code naming what it is not. The ability types the
//! guide lists but gives no syntax for (whispering, joining, polls, …) are refused as such
//! (`wwrf.unsupported_ability`).

use crate::Error;
use std::ops::Range;

/// The error codes of this module.
pub mod codes {
    /// A file or element that is not in the guide's formats: no `**Name**` header, a class or
    /// category the guide does not list, a line outside an element.
    pub const HEADER: &str = "wwrf.header";
    /// An ability line without `Trigger: ability`, a bracket left open, parameters out of order.
    pub const SYNTAX: &str = "wwrf.syntax";
    /// A trigger the guide does not define.
    pub const UNKNOWN_TRIGGER: &str = "wwrf.unknown_trigger";
    /// A restriction the guide does not define, or one of the wrong shape.
    pub const UNKNOWN_RESTRICTION: &str = "wwrf.unknown_restriction";
    /// A scaling the guide does not define.
    pub const SCALING: &str = "wwrf.scaling";
    /// An ability type the guide does not define.
    pub const UNKNOWN_ABILITY: &str = "wwrf.unknown_ability";
    /// An ability type the guide lists but defines no syntax for.
    pub const UNSUPPORTED_ABILITY: &str = "wwrf.unsupported_ability";
    /// A condition that does not read: an unbalanced parenthesis, and/or in a shape the guide
    /// does not allow.
    pub const CONDITION: &str = "wwrf.condition";
    /// A value (selector, constant, number) that does not read.
    pub const VALUE: &str = "wwrf.value";
    /// A duration the guide does not define.
    pub const DURATION: &str = "wwrf.duration";
}

pub type Span = Range<usize>;

fn err(code: &'static str, message: impl Into<String>, span: Span) -> Error {
    Error { code, message: message.into(), span }
}

// ---------------------------------------------------------------------------------------------
// Elements

/// What an element file defines.
#[derive(Clone, Debug, PartialEq)]
pub enum ElementKind {
    /// `**Seer** | Townsfolk Investigative`; a solo role names its team (`- Pyro Team`).
    Role { class: String, category: String, team: Option<String> },
    /// `**Townsfolk**` with `Win Condition: …`.
    Team { win: Vec<Value> },
    /// `**Wolfpack** | Werewolf Group`.
    Group { team: String },
    /// `**Marker** | Attribute`: a custom attribute (the guide: "Attributes use the same shape").
    Attribute,
}

/// One element: its name, kind, flags and ability lines.
#[derive(Clone, Debug, PartialEq)]
pub struct Element {
    pub name: String,
    pub name_span: Span,
    pub kind: ElementKind,
    pub unique: bool,
    pub haunted: bool,
    pub lines: Vec<Line>,
}

/// The classes and categories the guide lists for roles.
pub const CLASSES: &[&str] = &["Townsfolk", "Werewolf", "Solo", "Unaligned", "Extra"];
pub const CATEGORIES: &[&str] =
    &["Elected", "Align", "Killing", "Group", "Investigative", "Power", "Miscellaneous"];

/// Byte lines of `text`: (start offset, line without its end).
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut at = 0;
    text.split_inclusive('\n').map(move |l| {
        let start = at;
        at += l.len();
        (start, l.trim_end_matches(['\n', '\r']))
    })
}

/// Reads an element file.
// long: one loop over the lines, one arm per kind of line.
pub fn parse_file(text: &str) -> Result<Vec<Element>, Error> {
    let mut out: Vec<Element> = Vec::new();
    let mut formalized = false;
    for (at, line) in lines(text) {
        let trimmed = line.trim();
        let lead = at + (line.len() - line.trim_start().len());
        if let Some(rest) = trimmed.strip_prefix("**") {
            let Some(end) = rest.find("**") else {
                return Err(err(
                    codes::HEADER,
                    "an element header `**Name**` is not closed",
                    lead..at + line.len(),
                ));
            };
            let name = rest[..end].trim();
            let name_at = lead + 2 + (rest[..end].len() - rest[..end].trim_start().len());
            if name.is_empty() {
                return Err(err(codes::HEADER, "an element header with no name", lead..at + line.len()));
            }
            let after = rest[end + 2..].trim();
            // (Offsets from the trimmed line's start: its end may have been trimmed.)
            let tail = &rest[end + 2..];
            let after_at = lead + 2 + end + 2 + (tail.len() - tail.trim_start().len());
            let kind = header(after, after_at, lead + trimmed.len())?;
            out.push(Element {
                name: name.to_owned(),
                name_span: name_at..name_at + name.len(),
                kind,
                unique: false,
                haunted: false,
                lines: Vec::new(),
            });
            formalized = false;
            continue;
        }
        if trimmed.starts_with("__") && trimmed.ends_with("__") && trimmed.len() > 4 {
            formalized = trimmed == "__Formalized__";
            if formalized && out.is_empty() {
                return Err(err(
                    codes::HEADER,
                    "`__Formalized__` before any `**Name**` header",
                    lead..lead + trimmed.len(),
                ));
            }
            continue;
        }
        if !formalized || trimmed.is_empty() {
            if out.is_empty() && !trimmed.is_empty() {
                return Err(err(
                    codes::HEADER,
                    "text before the first element header: an element file starts with `**Name**`",
                    lead..lead + trimmed.len(),
                ));
            }
            continue;
        }
        let Some(el) = out.last_mut() else { continue };
        let span = lead..lead + trimmed.len();
        match trimmed {
            "Unique Role" | "Unique Group" => el.unique = true,
            "Haunted Role" => el.haunted = true,
            "No Abilities" => {}
            _ => {
                if let Some(rest) = trimmed.strip_prefix("Win Condition:") {
                    let ElementKind::Team { win } = &mut el.kind else {
                        return Err(err(codes::HEADER, "`Win Condition:` belongs to a team", span));
                    };
                    let base = lead + "Win Condition:".len();
                    for (s, piece) in split_top(rest, ',') {
                        win.push(value(piece, base + s)?);
                    }
                    continue;
                }
                let number = el.lines.len() + 1;
                el.lines.push(parse_line(trimmed, lead, number)?);
            }
        }
    }
    if out.is_empty() {
        return Err(err(codes::HEADER, "no element: a file holds `**Name** | …` headers", 0..0));
    }
    Ok(out)
}

/// What follows `**Name**`: its kind.
fn header(after: &str, at: usize, end: usize) -> Result<ElementKind, Error> {
    let Some(h) = after.strip_prefix('|') else {
        if after.is_empty() {
            return Ok(ElementKind::Team { win: Vec::new() });
        }
        return Err(err(codes::HEADER, "after `**Name**` comes `| …` or nothing (a team)", at..end));
    };
    let h = h.trim();
    let span = at..end;
    if h == "Attribute" {
        return Ok(ElementKind::Attribute);
    }
    if let Some(team) = h.strip_suffix("Group") {
        let team = team.trim();
        if team.is_empty() {
            return Err(err(codes::HEADER, "a group header names its team: `| Werewolf Group`", span));
        }
        return Ok(ElementKind::Group { team: team.to_owned() });
    }
    let (classes, team) = match h.split_once(" - ") {
        Some((c, t)) => (c.trim(), Some(t.trim().to_owned())),
        None => (h, None),
    };
    let mut words = classes.split_whitespace();
    let (Some(class), Some(category), None) = (words.next(), words.next(), words.next()) else {
        return Err(err(
            codes::HEADER,
            format!("`{h}`: a role header is `| CLASS CATEGORY` (and `- TEAM` for a solo role)"),
            span,
        ));
    };
    if !CLASSES.contains(&class) {
        return Err(err(
            codes::HEADER,
            format!("`{class}` is no role class (the guide's: {})", CLASSES.join(", ")),
            span,
        ));
    }
    if !CATEGORIES.contains(&category) {
        return Err(err(
            codes::HEADER,
            format!("`{category}` is no role category (the guide's: {})", CATEGORIES.join(", ")),
            span,
        ));
    }
    if team.is_some() != (class == "Solo") {
        return Err(err(
            codes::HEADER,
            "a solo role, and only a solo role, names its team: `- Pyro Team`",
            span,
        ));
    }
    Ok(ElementKind::Role { class: class.to_owned(), category: category.to_owned(), team })
}

// ---------------------------------------------------------------------------------------------
// Splitting with depth

/// Whether `c` opens or closes a nesting the splitters respect.
fn depth_delta(c: char) -> i32 {
    match c {
        '(' | '[' | '{' | '⟨' => 1,
        ')' | ']' | '}' | '⟩' => -1,
        _ => 0,
    }
}

/// `s` split at `sep` outside brackets and backticks: (offset, piece), pieces trimmed.
fn split_top(s: &str, sep: char) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut tick = false;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if c == '`' {
            tick = !tick;
        } else if !tick {
            depth += depth_delta(c);
            if c == sep && depth == 0 {
                out.push(trimmed(s, start, i));
                start = i + c.len_utf8();
            }
        }
    }
    out.push(trimmed(s, start, s.len()));
    out
}

fn trimmed(s: &str, from: usize, to: usize) -> (usize, &str) {
    let piece = &s[from..to];
    let lead = piece.len() - piece.trim_start().len();
    (from + lead, piece.trim())
}

/// The first ` word ` of `s` outside brackets and backticks, from byte `from`: its offset.
fn find_word(s: &str, word: &str, from: usize) -> Option<usize> {
    let mut depth = 0;
    let mut tick = false;
    for (i, c) in s.char_indices() {
        if c == '`' {
            tick = !tick;
        } else if !tick {
            depth += depth_delta(c);
        }
        if i >= from
            && depth == 0
            && !tick
            && s[i..].starts_with(word)
            && (i == 0 || s[..i].ends_with(' '))
            && s[i + word.len()..].chars().next().is_none_or(|c| c == ' ')
        {
            return Some(i);
        }
    }
    None
}

/// Where brackets and backticks in `s` do not balance: the byte range of the first bracket
/// left open (or closed without opening, or closed by the wrong kind), or of an unclosed
/// backtick.
fn unbalanced(s: &str) -> Option<Range<usize>> {
    let mut stack: Vec<(char, usize)> = Vec::new();
    let mut tick: Option<usize> = None;
    let at = |i: usize, c: char| i..i + c.len_utf8();
    for (i, c) in s.char_indices() {
        if c == '`' {
            tick = if tick.is_some() { None } else { Some(i) };
            continue;
        }
        if tick.is_some() {
            continue;
        }
        match c {
            '(' | '[' | '{' | '⟨' => stack.push((c, i)),
            ')' | ']' | '}' | '⟩' => {
                let want = match c {
                    ')' => '(',
                    ']' => '[',
                    '}' => '{',
                    _ => '⟨',
                };
                match stack.pop() {
                    Some((o, _)) if o == want => {}
                    Some((o, j)) => return Some(at(j, o)),
                    None => return Some(at(i, c)),
                }
            }
            _ => {}
        }
    }
    tick.map(|i| i..i + 1).or(stack.last().map(|(c, i)| at(*i, *c)))
}

/// The `:` that ends a line's trigger: the first outside brackets, backticks and `|…|`.
fn trigger_colon(text: &str) -> Option<usize> {
    let (mut depth, mut tick, mut bar) = (0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            '`' => tick = !tick,
            '|' if !tick && depth == 0 => bar = !bar,
            ':' if !tick && !bar && depth == 0 => return Some(i),
            _ if !tick => depth += depth_delta(c),
            _ => {}
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Lines and their parameters

/// One ability line: its trigger, parameters and ability; `number` counts the element's lines
/// from 1 (what `execute` names).
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub span: Span,
    pub number: usize,
    pub trigger: Trigger,
    pub params: Params,
    pub ability: Ability,
}

/// Reads an ability line at byte `at` of its file.
pub fn parse_line(text: &str, at: usize, number: usize) -> Result<Line, Error> {
    let span = at..at + text.len();
    if let Some(r) = unbalanced(text) {
        let m = "a bracket or backtick here is not closed or not opened";
        return Err(err(codes::SYNTAX, m, at + r.start..at + r.end));
    }
    // The trigger ends at the first `:` outside brackets, backticks and a prompt's `|…|`.
    let Some(colon) = trigger_colon(text) else {
        return Err(err(codes::SYNTAX, "an ability line is `Trigger: ability`", span));
    };
    let (t_at, t_text) = trimmed(text, 0, colon);
    let rest_at = colon + 1;
    let rest_at = rest_at + (text[rest_at..].len() - text[rest_at..].trim_start().len());
    let rest = text[rest_at..].trim_end();
    let (t_core, t_params) = peel(t_text, at + t_at)?;
    let (a_core, a_params) = peel(rest, at + rest_at)?;
    let params = match (t_params.is_empty(), a_params.is_empty()) {
        (_, true) => t_params,
        (true, false) => a_params,
        (false, false) => {
            return Err(err(
                codes::SYNTAX,
                "trigger parameters go after the trigger or at the end of the line, not both",
                span,
            ));
        }
    };
    let trigger = trigger(t_core, at + t_at)?;
    if a_core.is_empty() {
        return Err(err(codes::SYNTAX, "no ability after the trigger's `:`", span));
    }
    let ability = ability(a_core, at + rest_at)?;
    Ok(Line { span, number, trigger, params: params.read()?, ability })
}

/// Trigger parameters as written, before they are read.
#[derive(Default)]
struct RawParams {
    blocks: Vec<(char, usize, String)>,
}

impl RawParams {
    fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// The blocks read, checking the guide's order: restrictions, scaling, other, prompt.
    fn read(self) -> Result<Params, Error> {
        let mut p = Params::default();
        let rank = |c: char| match c {
            '[' => 0,
            '⟨' => 1,
            '{' => 2,
            _ => 3,
        };
        let mut last = -1;
        for (open, at, inner) in self.blocks {
            let r = rank(open);
            let span = at..at + inner.len() + 2;
            if r <= last {
                return Err(err(
                    codes::SYNTAX,
                    "trigger parameters come in the order restrictions [], scaling ⟨⟩, other {}, prompt ||, each once",
                    span,
                ));
            }
            last = r;
            let inner_at = at + open.len_utf8();
            match open {
                '[' => {
                    for (o, piece) in split_top(&inner, ',') {
                        p.restrictions.push(restriction(piece, inner_at + o)?);
                    }
                }
                '⟨' => p.scaling = Some(scaling(&inner, inner_at)?),
                '{' => {
                    for (o, piece) in split_top(&inner, ',') {
                        p.other.push(other(piece, inner_at + o)?);
                    }
                }
                _ => {
                    let (silent, name) = match inner.trim().strip_prefix("silent:") {
                        Some(n) => (true, n.trim()),
                        None => (false, inner.trim()),
                    };
                    if name.is_empty() {
                        return Err(err(
                            codes::SYNTAX,
                            "a prompt overwrite names a prompt: `|custom.prompt.1|`",
                            span,
                        ));
                    }
                    p.prompt = Some(Prompt { silent, name: name.to_owned() });
                }
            }
        }
        Ok(p)
    }
}

/// Takes the parameter blocks off the end of `s` (at byte `at`): the rest, and the blocks in
/// written order. A `[…]` without a `:` is not a restriction block (it is a visit filter, or
/// a type annotation) and stays.
fn peel(s: &str, at: usize) -> Result<(&str, RawParams), Error> {
    let mut core = s.trim_end();
    let mut blocks = Vec::new();
    while let Some(close) = core.chars().next_back() {
        let open = match close {
            ']' => '[',
            '⟩' => '⟨',
            '}' => '{',
            '|' => '|',
            _ => break,
        };
        let body_end = core.len() - close.len_utf8();
        let start = if open == '|' {
            match core[..body_end].rfind('|') {
                Some(i) => i,
                None => {
                    return Err(err(
                        codes::SYNTAX,
                        "a prompt overwrite `|…|` is not opened",
                        at + body_end..at + core.len(),
                    ));
                }
            }
        } else {
            // The matching opener, counting nesting back from the end.
            let mut depth = 0;
            let mut found = None;
            for (i, c) in core[..body_end].char_indices().rev() {
                if c == close {
                    depth += 1;
                } else if c == open {
                    if depth == 0 {
                        found = Some(i);
                        break;
                    }
                    depth -= 1;
                }
            }
            match found {
                Some(i) => i,
                None => break,
            }
        };
        let inner = &core[start + open.len_utf8()..body_end];
        if open == '[' && (!inner.contains(':') || core[..start].ends_with('`')) {
            break;
        }
        blocks.push((open, at + start, inner.to_owned()));
        core = core[..start].trim_end();
    }
    blocks.reverse();
    Ok((core, RawParams { blocks }))
}

/// What limits and multiplies a trigger.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    pub restrictions: Vec<Restriction>,
    pub scaling: Option<Scaling>,
    pub other: Vec<Other>,
    pub prompt: Option<Prompt>,
}

/// `|silent:custom.prompt.1|`.
#[derive(Clone, Debug, PartialEq)]
pub struct Prompt {
    pub silent: bool,
    pub name: String,
}

/// `{Forced}`, `{Forced: @Self}`, `{Direct}`, `{Visitless}`, `{Vanishing}`.
#[derive(Clone, Debug, PartialEq)]
pub enum Other {
    Forced(Option<Value>),
    Direct,
    Visitless,
    Vanishing,
}

fn other(s: &str, at: usize) -> Result<Other, Error> {
    let span = at..at + s.len();
    Ok(match s {
        "Forced" => Other::Forced(None),
        "Direct" => Other::Direct,
        "Visitless" => Other::Visitless,
        "Vanishing" => Other::Vanishing,
        _ => match s.strip_prefix("Forced:") {
            Some(t) => {
                let lead = s.len() - t.len() + (t.len() - t.trim_start().len());
                Other::Forced(Some(value(t.trim(), at + lead)?))
            }
            None => {
                return Err(err(
                    codes::SYNTAX,
                    format!(
                        "`{s}` is no trigger parameter (Forced, Forced: TARGET, Direct, Visitless, Vanishing)"
                    ),
                    span,
                ));
            }
        },
    })
}

/// Living status a restriction asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Alive,
    Ghostly,
    Any,
}

/// A restriction, with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Restriction {
    pub kind: RestrictionKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RestrictionKind {
    /// `Temporal: Day 0` (in that phase), `Night 2+` (then or after), `Night` (any night).
    Temporal { day: bool, number: Option<u32>, onwards: bool },
    /// `Attribute: has Wolfish`, `Attribute: @Target lacks Wolfish`.
    Attribute { actor: Option<Value>, has: bool, attribute: String },
    /// `Succession: No Succession` (not in two phases in a row), `No Target Succession`.
    Succession { target: bool },
    /// `Quantity: 3`: at most so many times.
    Quantity(u32),
    /// `Condition: @Target is in #Wolfpack`.
    Condition(Cond),
    /// `Status: Ghostly`.
    Status(Status),
}

fn number(s: &str, span: Span, what: &str) -> Result<u32, Error> {
    s.trim().parse().map_err(|_| err(codes::VALUE, format!("`{s}`: {what} is a whole number"), span))
}

/// `Day 1` → (day, 1); `Night` → (night, none).
fn phase(s: &str, span: Span) -> Result<(bool, Option<u32>), Error> {
    let mut w = s.split_whitespace();
    let day = match w.next() {
        Some("Day") => true,
        Some("Night") => false,
        _ => return Err(err(codes::VALUE, format!("`{s}` is no phase: `Day 1`, `Night 2`"), span)),
    };
    let n = match w.next() {
        Some(n) => Some(number(n, span.clone(), "a phase's number")?),
        None => None,
    };
    if w.next().is_some() {
        return Err(err(codes::VALUE, format!("`{s}` is no phase: `Day 1`, `Night 2`"), span));
    }
    Ok((day, n))
}

// long: one arm per restriction of the guide's table.
fn restriction(s: &str, at: usize) -> Result<Restriction, Error> {
    let span = at..at + s.len();
    let Some((name, v)) = s.split_once(':') else {
        return Err(err(codes::UNKNOWN_RESTRICTION, format!("`{s}`: a restriction is `Name: value`"), span));
    };
    let v_at = at + name.len() + 1 + (v.len() - v.trim_start().len());
    let v = v.trim();
    let v_span = v_at..v_at + v.len();
    let kind = match name.trim() {
        "Temporal" => {
            let (p, onwards) = match v.strip_suffix('+') {
                Some(p) => (p.trim(), true),
                None => (v, false),
            };
            let (day, number) = phase(p, v_span.clone())?;
            if onwards && number.is_none() {
                return Err(err(
                    codes::UNKNOWN_RESTRICTION,
                    "`+` follows a phase with its number: `Night 2+`",
                    v_span,
                ));
            }
            RestrictionKind::Temporal { day, number, onwards }
        }
        "Attribute" => {
            let (actor, has, attr) = if let Some(a) = v.strip_prefix("has ") {
                (None, true, a)
            } else if let Some(a) = v.strip_prefix("lacks ") {
                (None, false, a)
            } else if let Some(i) = find_word(v, "has", 0) {
                (Some(value(v[..i].trim(), v_at)?), true, &v[i + 3..])
            } else if let Some(i) = find_word(v, "lacks", 0) {
                (Some(value(v[..i].trim(), v_at)?), false, &v[i + 5..])
            } else {
                return Err(err(
                    codes::UNKNOWN_RESTRICTION,
                    format!(
                        "`{v}`: an attribute restriction is `has NAME`, `lacks NAME` or `ACTOR has|lacks NAME`"
                    ),
                    v_span,
                ));
            };
            let attribute = attr.trim().trim_matches('`').to_owned();
            if attribute.is_empty() {
                return Err(err(
                    codes::UNKNOWN_RESTRICTION,
                    "an attribute restriction names the attribute",
                    v_span,
                ));
            }
            RestrictionKind::Attribute { actor, has, attribute }
        }
        "Succession" => match v {
            "No Succession" => RestrictionKind::Succession { target: false },
            "No Target Succession" => RestrictionKind::Succession { target: true },
            _ => {
                return Err(err(
                    codes::UNKNOWN_RESTRICTION,
                    format!("`{v}`: a succession restriction is `No Succession` or `No Target Succession`"),
                    v_span,
                ));
            }
        },
        "Quantity" => RestrictionKind::Quantity(number(v, v_span, "a quantity")?),
        "Condition" => RestrictionKind::Condition(condition(v, v_at)?),
        "Status" => RestrictionKind::Status(match v {
            "Alive" => Status::Alive,
            "Ghostly" => Status::Ghostly,
            "Any" => Status::Any,
            _ => {
                return Err(err(
                    codes::UNKNOWN_RESTRICTION,
                    format!("`{v}`: a status is Alive, Ghostly or Any"),
                    v_span,
                ));
            }
        }),
        other => {
            return Err(err(
                codes::UNKNOWN_RESTRICTION,
                format!(
                    "`{other}` is no restriction the guide defines (Temporal, Attribute, Succession, Quantity, Condition, Status)"
                ),
                at..at + name.len(),
            ));
        }
    };
    Ok(Restriction { kind, span })
}

/// The player count a dynamic scaling reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// `$total`: every player.
    Total,
    /// `$living`.
    Living,
}

/// A comparison in a dynamic scaling's case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
}

impl Cmp {
    /// The native formula's operator.
    pub fn native(self) -> &'static str {
        match self {
            Cmp::Lt => "<",
            Cmp::Gt => ">",
            Cmp::Le => "<=",
            Cmp::Ge => ">=",
            Cmp::Eq => "==",
        }
    }
}

/// How many times a trigger runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Scaling {
    /// `x2`.
    Times(u32),
    /// `$total/2`: the count divided, rounded down.
    Divide(Count, u32),
    /// `$total<10 ⇒ 1, $total≥10 ⇒ 2, 3`: the first case whose condition passes; a case that
    /// fails gives 0, so a last bare number is the default.
    Cases(Vec<(Count, Cmp, u32, u32)>, Option<u32>),
    /// `Odd: x1, Even: x2`, by the phase's number.
    OddEven { odd: u32, even: u32 },
}

fn count(s: &str) -> Option<(Count, &str)> {
    if let Some(r) = s.strip_prefix("$total") {
        Some((Count::Total, r))
    } else {
        s.strip_prefix("$living").map(|r| (Count::Living, r))
    }
}

fn times(s: &str, span: Span) -> Result<u32, Error> {
    match s.trim().strip_prefix('x') {
        Some(n) => number(n, span, "a scaling's multiplicity"),
        None => Err(err(codes::SCALING, format!("`{s}`: a multiplicity is `x2`"), span)),
    }
}

// long: one branch per scaling of the guide's table.
fn scaling(s: &str, at: usize) -> Result<Scaling, Error> {
    let t = s.trim();
    let at = at + (s.len() - s.trim_start().len());
    let span = at..at + t.len();
    if t.starts_with('x') {
        return Ok(Scaling::Times(times(t, span)?));
    }
    if t.starts_with("Odd:") || t.starts_with("Even:") {
        let (mut odd, mut even) = (None, None);
        for (o, piece) in split_top(t, ',') {
            let pspan = at + o..at + o + piece.len();
            if let Some(x) = piece.strip_prefix("Odd:") {
                odd = Some(times(x, pspan)?);
            } else if let Some(x) = piece.strip_prefix("Even:") {
                even = Some(times(x, pspan)?);
            } else {
                return Err(err(
                    codes::SCALING,
                    format!("`{piece}`: a phase scaling is `Odd: x1, Even: x2`"),
                    pspan,
                ));
            }
        }
        return match (odd, even) {
            (Some(odd), Some(even)) => Ok(Scaling::OddEven { odd, even }),
            _ => Err(err(codes::SCALING, "a phase scaling gives both `Odd: xN` and `Even: xN`", span)),
        };
    }
    if let Some((c, rest)) = count(t)
        && let Some(n) = rest.strip_prefix('/')
    {
        let n = number(n, span.clone(), "a scaling's divisor")?;
        if n == 0 {
            return Err(err(codes::SCALING, "a scaling divides by a number above 0", span));
        }
        return Ok(Scaling::Divide(c, n));
    }
    if count(t).is_some() {
        let mut cases = Vec::new();
        let mut default = None;
        let pieces = split_top(t, ',');
        let last = pieces.len() - 1;
        for (i, (o, piece)) in pieces.into_iter().enumerate() {
            let pspan = at + o..at + o + piece.len();
            let arrow = piece.find('⇒').map(|k| (k, '⇒'.len_utf8())).or(piece.find("=>").map(|k| (k, 2)));
            let Some((k, w)) = arrow else {
                if i == last {
                    default = Some(number(piece, pspan, "a scaling's default")?);
                    continue;
                }
                return Err(err(codes::SCALING, format!("`{piece}`: a case is `$total<10 ⇒ 1`"), pspan));
            };
            let (cond, n) = (piece[..k].trim(), &piece[k + w..]);
            let Some((c, rest)) = count(cond) else {
                return Err(err(
                    codes::SCALING,
                    format!("`{cond}`: a case compares $total or $living"),
                    pspan,
                ));
            };
            let ops: [(&str, Cmp); 7] = [
                ("≤", Cmp::Le),
                ("≥", Cmp::Ge),
                ("<=", Cmp::Le),
                (">=", Cmp::Ge),
                ("<", Cmp::Lt),
                (">", Cmp::Gt),
                ("=", Cmp::Eq),
            ];
            let Some((op, v)) = ops.iter().find_map(|(t, op)| rest.strip_prefix(t).map(|v| (*op, v))) else {
                return Err(err(
                    codes::SCALING,
                    format!("`{cond}`: the comparison is <, >, ≤, ≥ or ="),
                    pspan,
                ));
            };
            let v = number(v, pspan.clone(), "a player count")?;
            cases.push((c, op, v, number(n, pspan, "a case's count")?));
        }
        return Ok(Scaling::Cases(cases, default));
    }
    Err(err(
        codes::SCALING,
        format!(
            "`{t}` is no scaling the guide defines (`x2`, `$total/2`, `$total<10 ⇒ 1, 2`, `Odd: x1, Even: x2`)"
        ),
        span,
    ))
}

// ---------------------------------------------------------------------------------------------
// Triggers

/// When a timing trigger runs within its phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum When {
    Start,
    Immediate,
    /// `Fourth Pre-End` (4) … `Pre-End` (1): the higher first, all before `End`.
    PreEnd(u8),
    End,
}

/// How a death came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Death {
    /// `On Death`: any death.
    Death,
    /// `On Killed`: a kill, attack or true kill (not a lynch).
    Killed,
    Banishment,
    Banished,
    Lynch,
}

/// A visit or action filter: `[Killing]`, `[!Attack Killing]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Filter {
    pub negate: bool,
    pub ability: String,
}

/// A trigger, with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Trigger {
    pub kind: TriggerKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TriggerKind {
    /// `Start Night`, `Passive End Day`, `Third Pre-End Night`, `Immediate`, `End Phase`: `day`
    /// is which phase (none: either); `prompting` unless `Passive …`.
    Timing { when: When, day: Option<bool>, prompting: bool },
    /// `Starting`: the game's start, and the element created.
    Starting,
    /// `Passive`: whenever something significant changes.
    Passive,
    /// `On Death`, `On {Player} Killed`, …: whose (none: the current player's).
    Death { how: Death, who: Option<Value> },
    /// `On Defense` (none), `On Active Defense` (`active`), …
    Defense(Option<&'static str>),
    /// `On Visited`, `On {Player} Visited [Killing]`.
    Visited { who: Option<Value>, filter: Option<Filter> },
    /// `On Action`, `On Any Action`, `On {Player} Action`, with a filter.
    Action { who: Option<Value>, any: bool, filter: Option<Filter> },
    /// `On Poll {Poll} Win`.
    PollWin(Option<String>),
    /// `On {String} Emitted`, `On End Emitted`.
    Emitted { value: Option<String>, end: bool },
    /// The rest, by the guide's name: `On Disbandment`, `On Redirect`, `On Betrayal`, `On Poll
    /// Closed`, `On Poll Skipped`, `On Role Change`, `On Removal`, `On End`, `On Vote Add`,
    /// `On Vote Remove`, `On Vote Change`, `On Hammer`.
    Named(&'static str),
}

const NAMED: &[&str] = &[
    "On Disbandment",
    "On Redirect",
    "On Betrayal",
    "On Poll Closed",
    "On Poll Skipped",
    "On Poll Win",
    "On Role Change",
    "On Removal",
    "On End",
    "On Vote Add",
    "On Vote Remove",
    "On Vote Change",
    "On Hammer",
];

fn timing(t: &str) -> Option<TriggerKind> {
    let (prompting, t) = match t.strip_prefix("Passive ") {
        Some(r) => (false, r),
        None => (true, t),
    };
    let (pre, t) = [("Second ", 2u8), ("Third ", 3), ("Fourth ", 4)]
        .iter()
        .find_map(|(w, n)| t.strip_prefix(w).map(|r| (Some(*n), r)))
        .unwrap_or((None, t));
    let mut w = t.split(' ');
    let head = w.next()?;
    let day = match w.next() {
        Some("Day") => Some(true),
        Some("Night") => Some(false),
        Some("Phase") => None,
        Some(_) => return None,
        None if head == "Immediate" && prompting && pre.is_none() => None,
        None => return None,
    };
    if w.next().is_some() {
        return None;
    }
    let when = match (head, pre) {
        ("Start", None) => When::Start,
        ("End", None) => When::End,
        ("Immediate", None) if prompting && day.is_some() || t == "Immediate" => When::Immediate,
        ("Pre-End", None) if prompting && day.is_some() => When::PreEnd(1),
        ("Pre-End", Some(n)) if prompting && day.is_some() => When::PreEnd(n),
        _ => return None,
    };
    // Of the prompting ones, `Start Phase`, `End Phase` and `Immediate` take any phase;
    // every passive timing is Start or End.
    if !prompting && !matches!(when, When::Start | When::End) {
        return None;
    }
    Some(TriggerKind::Timing { when, day, prompting })
}

/// A trailing visit or action filter `[…]` of `t`, taken off.
fn filter(t: &str) -> (&str, Option<Filter>) {
    if let Some(inner) = t.strip_suffix(']')
        && let Some(i) = inner.rfind('[')
    {
        let f = inner[i + 1..].trim();
        let (negate, ability) = match f.strip_prefix('!') {
            Some(a) => (true, a.trim()),
            None => (false, f),
        };
        return (
            inner[..i].trim_end(),
            Some(Filter { negate, ability: ability.trim_matches('`').to_owned() }),
        );
    }
    (t, None)
}

// long: one arm per family of triggers the guide lists.
fn trigger(t: &str, at: usize) -> Result<Trigger, Error> {
    let span = at..at + t.len();
    let t1 = t.trim();
    let kind = if let Some(k) = timing(t1) {
        k
    } else if t1 == "Starting" {
        TriggerKind::Starting
    } else if t1 == "Passive" {
        TriggerKind::Passive
    } else if let Some(n) = NAMED.iter().find(|n| **n == t1) {
        if *n == "On Poll Win" { TriggerKind::PollWin(None) } else { TriggerKind::Named(n) }
    } else if let Some(d) = [
        "Defense",
        "Active Defense",
        "Passive Defense",
        "Partial Defense",
        "Recruitment Defense",
        "Absence Defense",
    ]
    .iter()
    .position(|d| t1.strip_prefix("On ") == Some(*d))
    {
        TriggerKind::Defense(
            [None, Some("active"), Some("passive"), Some("partial"), Some("recruitment"), Some("absence")][d],
        )
    } else if let Some(rest) = t1.strip_prefix("On ") {
        let (core, f) = filter(rest);
        let deaths = [
            ("Death", Death::Death),
            ("Killed", Death::Killed),
            ("Banishment", Death::Banishment),
            ("Banished", Death::Banished),
            ("Lynch", Death::Lynch),
        ];
        let who_of = |prefix: &str| -> Result<Option<Value>, Error> {
            let p = prefix.trim();
            if p.is_empty() {
                Ok(None)
            } else {
                let off = at + (t.len() - t.trim_start().len()) + 3;
                value(p, off).map(Some)
            }
        };
        if let Some((how, who)) = deaths.iter().find_map(|(w, h)| {
            core.strip_suffix(w).filter(|p| p.is_empty() || p.ends_with(' ')).map(|p| (*h, p))
        }) && f.is_none()
            && (who.is_empty() || how != Death::Lynch)
        {
            TriggerKind::Death { how, who: who_of(who)? }
        } else if let Some(who) = core.strip_suffix("Visited").filter(|p| p.is_empty() || p.ends_with(' ')) {
            TriggerKind::Visited { who: who_of(who)?, filter: f }
        } else if core == "Any Action" {
            TriggerKind::Action { who: None, any: true, filter: f }
        } else if let Some(who) = core.strip_suffix("Action").filter(|p| p.is_empty() || p.ends_with(' ')) {
            TriggerKind::Action { who: who_of(who)?, any: false, filter: f }
        } else if let Some(p) =
            core.strip_prefix("Poll ").and_then(|p| p.strip_suffix(" Win")).filter(|_| f.is_none())
        {
            TriggerKind::PollWin(Some(p.trim().trim_matches('`').to_owned()))
        } else if let Some(v) = core.strip_suffix("End Emitted").filter(|_| f.is_none()) {
            let v = v.trim().trim_matches('`');
            TriggerKind::Emitted { value: (!v.is_empty()).then(|| v.to_owned()), end: true }
        } else if let Some(v) = core.strip_suffix("Emitted").filter(|_| f.is_none()) {
            let v = v.trim().trim_matches('`');
            TriggerKind::Emitted { value: (!v.is_empty()).then(|| v.to_owned()), end: false }
        } else {
            return Err(unknown_trigger(t1, span));
        }
    } else {
        return Err(unknown_trigger(t1, span));
    };
    Ok(Trigger { kind, span })
}

fn unknown_trigger(t: &str, span: Span) -> Error {
    err(
        codes::UNKNOWN_TRIGGER,
        format!(
            "`{t}` is no trigger the guide defines (Start Night, End Day, Passive Start Phase, On Death, On Visited, …)"
        ),
        span,
    )
}

// ---------------------------------------------------------------------------------------------
// Conditions

/// A condition, with and/or in exactly the guide's shapes.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    /// `A is B`: equal (lists compare their first values).
    Is(Value, Value),
    IsNot(Value, Value),
    Greater(Value, Value),
    Less(Value, Value),
    Exists(Value),
    /// `ACTOR has ATTRIBUTE`.
    Has(Value, Value),
    /// `PLAYER is in GROUP`.
    In(Value, Value),
    /// `A is part of B`.
    PartOf(Value, Value),
    Not(Box<Cond>),
    /// Two to four conditions, all true.
    And(Vec<Cond>),
    /// Two to four, one true.
    Or(Vec<Cond>),
    /// `(A) and (B) or (C)`: A, and B or C.
    AndOr(Box<Cond>, Box<Cond>, Box<Cond>),
    /// `(A) or (B) and (C)`: C, and A or B.
    OrAnd(Box<Cond>, Box<Cond>, Box<Cond>),
}

/// Reads a condition at byte `at`.
pub fn condition(s: &str, at: usize) -> Result<Cond, Error> {
    cond_at(s, at, true)
}

// long: the and/or shapes, `not`, then the atoms, each checked in place.
fn cond_at(s: &str, at: usize, joins: bool) -> Result<Cond, Error> {
    let lead = s.len() - s.trim_start().len();
    let t = s.trim();
    let at = at + lead;
    let span = at..at + t.len();
    if let Some(r) = unbalanced(t) {
        return Err(err(
            codes::CONDITION,
            "an unbalanced parenthesis in a condition",
            at + r.start..at + r.end,
        ));
    }
    if t.starts_with('(') {
        // `(A) and (B) …`: parenthesised operands joined by `and` / `or`.
        let mut ops = Vec::new();
        let mut joins_seen = Vec::new();
        let mut i = 0;
        while i < t.len() {
            let rest = &t[i..];
            if !rest.starts_with('(') {
                return Err(err(
                    codes::CONDITION,
                    "and/or join parenthesised conditions: `(A) and (B)`",
                    at + i..at + t.len(),
                ));
            }
            let close = matching(rest).ok_or_else(|| {
                err(codes::CONDITION, "an unbalanced parenthesis in a condition", at + i..at + i + 1)
            })?;
            ops.push((at + i + 1, &rest[1..close]));
            i += close + 1;
            let after = &t[i..];
            let trimmed = after.trim_start();
            if trimmed.is_empty() {
                break;
            }
            i += after.len() - trimmed.len();
            let (j, w) = if trimmed.starts_with("and ") {
                ("and", 4)
            } else if trimmed.starts_with("or ") {
                ("or", 3)
            } else {
                return Err(err(
                    codes::CONDITION,
                    "after `(…)` comes `and (…)` or `or (…)`",
                    at + i..at + t.len(),
                ));
            };
            joins_seen.push(j);
            i += w;
            i += t[i..].len() - t[i..].trim_start().len();
        }
        if ops.len() == 1 {
            // A whole condition in parentheses.
            return cond_at(ops[0].1, ops[0].0, joins);
        }
        if !joins {
            return Err(err(
                codes::CONDITION,
                "the guide allows no and/or inside an and/or's conditions",
                span,
            ));
        }
        let conds = ops.iter().map(|(a, o)| cond_at(o, *a, false)).collect::<Result<Vec<_>, _>>()?;
        let all = |j: &str| joins_seen.iter().all(|x| *x == j);
        return match (conds.len(), joins_seen.as_slice()) {
            (2..=4, _) if all("and") => Ok(Cond::And(conds)),
            (2..=4, _) if all("or") => Ok(Cond::Or(conds)),
            (3, ["and", "or"]) => {
                let mut c = conds.into_iter();
                let (a, b, d) = (c.next(), c.next(), c.next());
                match (a, b, d) {
                    (Some(a), Some(b), Some(d)) => Ok(Cond::AndOr(Box::new(a), Box::new(b), Box::new(d))),
                    _ => Err(err(codes::CONDITION, "three conditions", span)),
                }
            }
            (3, ["or", "and"]) => {
                let mut c = conds.into_iter();
                match (c.next(), c.next(), c.next()) {
                    (Some(a), Some(b), Some(d)) => Ok(Cond::OrAnd(Box::new(a), Box::new(b), Box::new(d))),
                    _ => Err(err(codes::CONDITION, "three conditions", span)),
                }
            }
            _ => Err(err(
                codes::CONDITION,
                "and/or in a shape the guide does not allow: up to four joined by one of them, or `(A) and (B) or (C)`, `(A) or (B) and (C)`",
                span,
            )),
        };
    }
    if let Some(r) = t.strip_prefix("not") {
        let r2 = r.trim_start();
        if r2.starts_with('(') {
            let inner_at = at + 3 + (r.len() - r2.len());
            let close = matching(r2).ok_or_else(|| {
                err(codes::CONDITION, "an unbalanced parenthesis in a condition", span.clone())
            })?;
            if close + 1 != r2.len() {
                return Err(err(codes::CONDITION, "`not (…)` is the whole condition", span));
            }
            return Ok(Cond::Not(Box::new(cond_at(&r2[1..close], inner_at + 1, joins)?)));
        }
    }
    let two = |word: &str| -> Result<Option<(Value, Value)>, Error> {
        match find_word(t, word, 0) {
            Some(i) => {
                let l = t[..i].trim();
                let r = &t[i + word.len()..];
                let r_at = at + i + word.len() + (r.len() - r.trim_start().len());
                if l.is_empty() || r.trim().is_empty() {
                    return Err(err(codes::CONDITION, format!("`{word}` compares two values"), span.clone()));
                }
                Ok(Some((value(l, at)?, value(r.trim(), r_at)?)))
            }
            None => Ok(None),
        }
    };
    if let Some(l) = t.strip_suffix(" exists") {
        return Ok(Cond::Exists(value(l.trim(), at)?));
    }
    for (word, make) in [
        ("is not", Cond::IsNot as fn(Value, Value) -> Cond),
        ("is part of", Cond::PartOf),
        ("is in", Cond::In),
        ("is", Cond::Is),
        ("has", Cond::Has),
        (">", Cond::Greater),
        ("<", Cond::Less),
    ] {
        if let Some((a, b)) = two(word)? {
            return Ok(make(a, b));
        }
    }
    Err(err(
        codes::CONDITION,
        format!(
            "`{t}` is no condition the guide defines (is, is not, >, <, exists, has, is in, is part of, not, and, or)"
        ),
        span,
    ))
}

/// The offset of the `)` closing the `(` that `s` starts with.
fn matching(s: &str) -> Option<usize> {
    let mut depth = 0;
    let mut tick = false;
    for (i, c) in s.char_indices() {
        match c {
            '`' => tick = !tick,
            '(' if !tick => depth += 1,
            ')' if !tick => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Values

/// A value: a selector, a constant or a number, its property accesses and type annotation.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub base: Base,
    /// `->Role`, `->Attr(Marker)`, in order.
    pub props: Vec<String>,
    /// ``Citizen`[role]``'s `role`.
    pub annotation: Option<String>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Base {
    /// `@Self`, `^All`, `&Self`, `@Result2`: the sigil and the name.
    Selector(char, String),
    /// `@(Role:Citizen)`, `^(Cat:!Killing)`: the sigil, property and value (`!` inverts).
    Advanced { sigil: char, property: String, value: String, negate: bool },
    /// `@ID:3500…`.
    Id(String),
    /// `` `Citizen` ``.
    Constant(String),
    /// `#Wolfpack`.
    Group(String),
    /// `$living`.
    Variable(String),
    /// `%Player1%`: host information.
    Host(String),
    /// `3`.
    Number(i64),
    /// `$total/2`: rounded to the nearest.
    Division(Box<Value>, Box<Value>),
    /// `` `Citizen`+`Wolf` ``.
    List(Vec<Value>),
    /// Text as written: `Townsfolk`, `True`, `Success`.
    Word(String),
}

impl Value {
    /// The constant or word it is, as text (`` `Wolfish` `` → `Wolfish`).
    pub fn text(&self) -> Option<&str> {
        match &self.base {
            Base::Constant(t) | Base::Word(t) if self.props.is_empty() => Some(t),
            _ => None,
        }
    }

    /// Whether it is the basic selector `@NAME`.
    pub fn is(&self, name: &str) -> bool {
        matches!(&self.base, Base::Selector('@', n) if n == name) && self.props.is_empty()
    }
}

/// Reads a value at byte `at`.
// long: one branch per kind of value, then property accesses and annotations.
pub fn value(s: &str, at: usize) -> Result<Value, Error> {
    let lead = s.len() - s.trim_start().len();
    let t = s.trim();
    let at = at + lead;
    let span = at..at + t.len();
    if t.is_empty() {
        return Err(err(codes::VALUE, "a value is missing here", span));
    }
    let parts = split_top(t, '+');
    if parts.len() > 1 {
        let items = parts.iter().map(|(o, p)| value(p, at + o)).collect::<Result<Vec<_>, _>>()?;
        return Ok(Value { base: Base::List(items), props: Vec::new(), annotation: None, span });
    }
    // `N/M`: a division (outside backticks, not inside a selector's parentheses).
    let slash = split_top(t, '/');
    if slash.len() == 2 && !t.starts_with('`') {
        let (a, b) = (value(slash[0].1, at + slash[0].0)?, value(slash[1].1, at + slash[1].0)?);
        return Ok(Value {
            base: Base::Division(Box::new(a), Box::new(b)),
            props: Vec::new(),
            annotation: None,
            span,
        });
    }
    let bad = |m: String| err(codes::VALUE, m, span.clone());
    let (base, mut rest) = if let Some(sigil) = t.chars().next().filter(|c| ['@', '^', '&'].contains(c)) {
        let body = &t[1..];
        if body.starts_with('(') {
            let close = matching(body)
                .ok_or_else(|| bad(format!("`{t}`: an advanced selector's `(` is not closed")))?;
            let inner = &body[1..close];
            let Some((p, v)) = inner.split_once(':') else {
                return Err(bad(format!("`{t}`: an advanced selector is `{sigil}(Property:Value)`")));
            };
            let v = v.trim();
            let (negate, v) = match v.strip_prefix('!') {
                Some(v) => (true, v.trim()),
                None => (false, v),
            };
            let base = Base::Advanced { sigil, property: p.trim().to_owned(), value: v.to_owned(), negate };
            (base, &body[close + 1..])
        } else if sigil == '@' && body.starts_with("ID:") {
            let digits: String = body[3..].chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() {
                return Err(bad(format!("`{t}`: `@ID:` is followed by a player's id")));
            }
            (Base::Id(digits.clone()), &body[3 + digits.len()..])
        } else {
            let name: String = body.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if name.is_empty() {
                return Err(bad(format!("`{t}`: `{sigil}` is followed by a selector's name")));
            }
            (Base::Selector(sigil, name.clone()), &body[name.len()..])
        }
    } else if let Some(body) = t.strip_prefix('`') {
        let close = body.find('`').ok_or_else(|| bad(format!("`{t}`: a backtick is not closed")))?;
        (Base::Constant(body[..close].to_owned()), &body[close + 1..])
    } else if let Some(body) = t.strip_prefix('#') {
        let name: String = body.chars().take_while(|c| !c.is_whitespace() && *c != '-').collect();
        (Base::Group(name.clone()), &body[name.len()..])
    } else if let Some(body) = t.strip_prefix('$') {
        let name: String = body.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            return Err(bad(format!(
                "`{t}`: `$` is followed by a variable: $total, $living, $phase, $phname"
            )));
        }
        (Base::Variable(name.clone()), &body[name.len()..])
    } else if let Some(body) = t.strip_prefix('%') {
        let close = body.find('%').ok_or_else(|| bad(format!("`{t}`: host information is `%Name%`")))?;
        (Base::Host(body[..close].to_owned()), &body[close + 1..])
    } else if t.starts_with(|c: char| c.is_ascii_digit() || c == '-')
        && t[1..].chars().all(|c| c.is_ascii_digit())
    {
        let n = t.parse().map_err(|_| bad(format!("`{t}`: not a number sheetd reads")))?;
        (Base::Number(n), "")
    } else {
        (Base::Word(t.to_owned()), "")
    };
    let mut props = Vec::new();
    let mut annotation = None;
    loop {
        if let Some(r) = rest.strip_prefix("->") {
            let name: String = r.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if name.is_empty() {
                return Err(bad(format!("`{t}`: `->` is followed by a property")));
            }
            let mut r2 = &r[name.len()..];
            let mut prop = name;
            if r2.starts_with('(') {
                let close =
                    matching(r2).ok_or_else(|| bad(format!("`{t}`: a property's `(` is not closed")))?;
                prop.push_str(&r2[..=close]);
                r2 = &r2[close + 1..];
            }
            props.push(prop);
            rest = r2;
        } else if let Some(r) = rest.strip_prefix('[') {
            let close =
                r.find(']').ok_or_else(|| bad(format!("`{t}`: a type annotation's `[` is not closed")))?;
            annotation = Some(r[..close].trim().to_owned());
            rest = &r[close + 1..];
        } else {
            break;
        }
    }
    if !rest.trim().is_empty() {
        return Err(bad(format!("`{t}`: `{}` after the value does not read", rest.trim())));
    }
    Ok(Value { base, props, annotation, span })
}

// ---------------------------------------------------------------------------------------------
// Abilities

/// A duration (`(~Phase)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duration {
    Persistent,
    Permanent,
    Phase,
    PhaseAttribute,
    NextPhase,
    NextDay,
    NextNight,
    NextPhaseAttribute,
    NextDayAttribute,
    NextNightAttribute,
    UntilUse,
    UntilSecondUse,
    Attribute,
    UntilUseAttribute,
}

pub const DURATIONS: &[(&str, Duration)] = &[
    ("Persistent", Duration::Persistent),
    ("Permanent", Duration::Permanent),
    ("Phase", Duration::Phase),
    ("PhaseAttribute", Duration::PhaseAttribute),
    ("NextPhase", Duration::NextPhase),
    ("NextDay", Duration::NextDay),
    ("NextNight", Duration::NextNight),
    ("NextPhaseAttribute", Duration::NextPhaseAttribute),
    ("NextDayAttribute", Duration::NextDayAttribute),
    ("NextNightAttribute", Duration::NextNightAttribute),
    ("UntilUse", Duration::UntilUse),
    ("UntilSecondUse", Duration::UntilSecondUse),
    ("Attribute", Duration::Attribute),
    ("UntilUseAttribute", Duration::UntilUseAttribute),
];

impl Duration {
    pub fn name(self) -> &'static str {
        DURATIONS.iter().find(|(_, d)| *d == self).map_or("Persistent", |(n, _)| n)
    }
}

/// The subtype of a killing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kill {
    Kill,
    Attack,
    TrueKill,
    Lynch,
    Banish,
    TrueBanish,
}

impl Kill {
    /// The guide's killing type name: `attack`, `true kill`.
    pub fn name(self) -> &'static str {
        match self {
            Kill::Kill => "kill",
            Kill::Attack => "attack",
            Kill::TrueKill => "true kill",
            Kill::Lynch => "lynch",
            Kill::Banish => "banish",
            Kill::TrueBanish => "true banish",
        }
    }
}

/// What an investigation asks.
#[derive(Clone, Debug, PartialEq)]
pub enum Investigation {
    Role(Value),
    Class(Value),
    Category(Value),
    Alignment(Value),
    /// `Attribute Investigate {Player} for {Attribute}`.
    Attribute(Value, Value),
    /// `Investigate {Role} Count`.
    Count(Value),
    /// `Investigate {Player} Count`.
    PlayerCount(Value),
}

/// Which disguises an investigation sees: `(WD)`, `(SD)`, `(WD, SD)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Levels {
    pub weak: bool,
    pub strong: bool,
}

/// Which killings a defense stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillFilter {
    Attacks,
    Kills,
    Lynches,
    AttacksLynches,
    All,
    Banishments,
}

impl KillFilter {
    /// Whether it stops a killing of subtype `k` (the guide's table).
    pub fn stops(self, k: Kill) -> bool {
        use KillFilter::*;
        match k {
            Kill::Attack => matches!(self, Attacks | Kills | AttacksLynches | All),
            Kill::Kill => matches!(self, Kills | All),
            Kill::Lynch => matches!(self, Lynches | AttacksLynches | All),
            Kill::Banish => self == Banishments,
            Kill::TrueKill | Kill::TrueBanish => false,
        }
    }
}

/// A defense's subtype, in the order a killing checks them; an absence names where.
#[derive(Clone, Debug, PartialEq)]
pub enum Defense {
    Absence(Value),
    Active,
    Passive,
    Partial,
    Recruitment,
}

impl Defense {
    /// Its place in the order killings check defenses: absence 1 … recruitment 5.
    pub fn rank(&self) -> u32 {
        match self {
            Defense::Absence(_) => 1,
            Defense::Active => 2,
            Defense::Passive => 3,
            Defense::Partial => 4,
            Defense::Recruitment => 5,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Defense::Absence(_) => "absence",
            Defense::Active => "active",
            Defense::Passive => "passive",
            Defense::Partial => "partial",
            Defense::Recruitment => "recruitment",
        }
    }
}

/// Whose voting power a manipulation changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Votes {
    Public,
    /// Public, applied after every public manipulation.
    Special,
    Private,
}

/// An ability, with its span.
#[derive(Clone, Debug, PartialEq)]
pub struct Ability {
    pub kind: AbilityKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AbilityKind {
    Killing {
        how: Kill,
        target: Value,
    },
    Investigating {
        what: Investigation,
        levels: Levels,
    },
    /// `Target {*} ({**})`: the value and its type.
    Target {
        value: Value,
        ty: String,
    },
    Untarget,
    Disguise {
        strong: bool,
        target: Value,
        role: Value,
        duration: Option<Duration>,
    },
    Protect {
        target: Value,
        from: KillFilter,
        by: Option<Value>,
        through: Defense,
        during: Option<bool>,
        duration: Option<Duration>,
    },
    /// `Add {Attribute} to {Actor} (~Dur) (v1, v2, v3)`.
    Apply {
        attribute: Value,
        to: Value,
        duration: Option<Duration>,
        values: Vec<String>,
    },
    Unapply {
        attribute: Value,
        from: Value,
    },
    /// ``Change {Active Attribute} value `n` to {Any} for {Actor}``.
    Change {
        attribute: Value,
        index: u8,
        to: Value,
        actor: Value,
    },
    /// `Redirect {What} [from {Player}] to {Player} (~Dur)`.
    Redirect {
        what: Value,
        from: Option<Value>,
        to: Value,
        duration: Option<Duration>,
    },
    /// `Manipulate {Player}'s public voting power to|by {Number} (~Dur)`.
    Manipulate {
        target: Value,
        votes: Votes,
        absolute: bool,
        amount: Value,
        duration: Option<Duration>,
    },
}

/// The types a targeting annotates its value with (`Target @Selection (Player)`).
pub const TARGET_TYPES: &[&str] = &[
    "Player",
    "Dead",
    "Role",
    "Attribute",
    "Category",
    "Full Category",
    "Boolean",
    "Option",
    "Player Optional",
];

/// The ability types the guide lists with no syntax, by the words that start them.
const NO_SYNTAX: &[(&str, &str)] = &[
    ("Whisper", "whispering"),
    ("Join", "joining"),
    ("Leave", "joining"),
    ("Grant", "granting"),
    ("Revoke", "granting"),
    ("Transfer", "granting"),
    ("Loyalty", "loyalty"),
    ("Obstruct", "obstructing"),
    ("Poll", "poll"),
    ("Create Poll", "poll"),
    ("Cancel Poll", "poll"),
    ("Delete Poll", "poll"),
    ("Announce", "announcement"),
    ("Role Change", "changing"),
    ("Alignment Change", "changing"),
    ("Group Change", "changing"),
    ("Choice", "choices"),
    ("Ascend", "ascend"),
    ("Descend", "descend"),
    ("Disband", "disband"),
    ("Increment", "counting"),
    ("Decrement", "counting"),
    ("Set Counter", "counting"),
    ("Reset", "reset"),
    ("Cancel", "cancel"),
    ("Feedback", "feedback"),
    ("Success", "success"),
    ("Failure", "failure"),
    ("Log", "log"),
    ("Process", "process_evaluate"),
    ("Evaluate", "process_evaluate"),
    ("Emit", "emit"),
    ("Store", "storing"),
    ("Display", "displaying"),
    ("Win", "win"),
    ("Lock", "locking"),
    ("Unlock", "locking"),
    ("Execute", "executing"),
    ("For Each", "abilities"),
];

/// `(~Phase)` at the end of `s`: the rest and the duration.
fn duration(s: &str, at: usize) -> Result<(&str, Option<Duration>), Error> {
    let t = s.trim_end();
    if let Some(open) = t.rfind("(~")
        && t.ends_with(')')
    {
        let name = t[open + 2..t.len() - 1].trim();
        let span = at + open..at + t.len();
        let Some((_, d)) = DURATIONS.iter().find(|(n, _)| *n == name) else {
            let known: Vec<&str> = DURATIONS.iter().map(|(n, _)| *n).collect();
            return Err(err(
                codes::DURATION,
                format!("`~{name}` is no duration the guide defines ({})", known.join(", ")),
                span,
            ));
        };
        return Ok((t[..open].trim_end(), Some(*d)));
    }
    Ok((t, None))
}

/// Disguise levels at the end of `s`: `(WD, SD)`.
fn levels(s: &str) -> (&str, Levels) {
    let t = s.trim_end();
    if t.ends_with(')')
        && let Some(open) = t.rfind('(')
    {
        let inner: Vec<&str> = t[open + 1..t.len() - 1].split(',').map(str::trim).collect();
        if !inner.is_empty() && inner.iter().all(|x| *x == "WD" || *x == "SD") {
            let lv = Levels { weak: inner.contains(&"WD"), strong: inner.contains(&"SD") };
            return (t[..open].trim_end(), lv);
        }
    }
    (t, Levels::default())
}

/// `c`, or the error that `t` is not `what`.
type Cut<'a> = ((usize, &'a str), (usize, &'a str));
fn need<'a>(t: &str, span: &Span, c: Option<Cut<'a>>, what: &str) -> Result<Cut<'a>, Error> {
    c.ok_or_else(|| err(codes::SYNTAX, format!("`{t}`: {what}"), span.clone()))
}

/// Splits `s` (at byte `at`) at ` word ` outside brackets: the parts before and after, each
/// with its offset.
fn cut<'a>(s: &'a str, at: usize, word: &str) -> Option<Cut<'a>> {
    let i = find_word(s, word, 0)?;
    let after = i + word.len();
    Some((
        (at, s[..i].trim_end()),
        (at + after + (s[after..].len() - s[after..].trim_start().len()), s[after..].trim()),
    ))
}

// long: one arm per ability type of the guide, each its syntax variants.
fn ability(s: &str, at: usize) -> Result<Ability, Error> {
    let span = at..at + s.len();
    let t = s.trim();
    let v = |x: &str, a: usize| value(x, a);
    let word_after = |prefix: &str| {
        t.strip_prefix(prefix).map(|r| (at + prefix.len() + (r.len() - r.trim_start().len()), r.trim()))
    };
    let kinds = [
        ("True Kill ", Kill::TrueKill),
        ("True Banish ", Kill::TrueBanish),
        ("Kill ", Kill::Kill),
        ("Attack ", Kill::Attack),
        ("Lynch ", Kill::Lynch),
        ("Banish ", Kill::Banish),
    ];
    let kind = if let Some((how, (a, r))) = kinds.iter().find_map(|(p, k)| word_after(p).map(|x| (*k, x))) {
        AbilityKind::Killing { how, target: v(r, a)? }
    } else if let Some((which, (a, r))) = ["Role", "Class", "Category", "Alignment", "Attribute"]
        .iter()
        .find_map(|w| word_after(&format!("{w} Investigate ")).map(|x| (*w, x)))
    {
        let (r, lv) = levels(r);
        let what = match which {
            "Role" => Investigation::Role(v(r, a)?),
            "Class" => Investigation::Class(v(r, a)?),
            "Category" => Investigation::Category(v(r, a)?),
            "Alignment" => Investigation::Alignment(v(r, a)?),
            _ => {
                let ((pa, p), (fa, f)) = need(
                    t,
                    &span,
                    cut(r, a, "for"),
                    "an attribute investigation is `Attribute Investigate PLAYER for ATTRIBUTE`",
                )?;
                Investigation::Attribute(v(p, pa)?, v(f, fa)?)
            }
        };
        AbilityKind::Investigating { what, levels: lv }
    } else if let Some((a, r)) = word_after("Investigate ") {
        let (r, lv) = levels(r);
        let Some(x) = r.strip_suffix(" Count") else {
            return Err(err(
                codes::SYNTAX,
                format!(
                    "`{t}`: a count investigation is `Investigate ROLE Count` or `Investigate PLAYER Count`"
                ),
                span,
            ));
        };
        let x = v(x, a)?;
        let players =
            matches!(x.base, Base::Selector('@', _) | Base::Advanced { sigil: '@', .. } | Base::Id(_));
        let what = if players { Investigation::PlayerCount(x) } else { Investigation::Count(x) };
        AbilityKind::Investigating { what, levels: lv }
    } else if t == "Untarget" {
        AbilityKind::Untarget
    } else if let Some((a, r)) = word_after("Target ") {
        let (r2, ty) = match r.strip_suffix(')').and_then(|x| x.rfind('(').map(|i| (x, i))) {
            Some((x, i)) => (x[..i].trim_end(), x[i + 1..].trim().to_owned()),
            None => {
                return Err(err(codes::SYNTAX, format!("`{t}`: targeting is `Target VALUE (Type)`"), span));
            }
        };
        if !TARGET_TYPES.contains(&ty.as_str()) {
            return Err(err(
                codes::SYNTAX,
                format!("`{ty}` is no target type ({})", TARGET_TYPES.join(", ")),
                span,
            ));
        }
        AbilityKind::Target { value: v(r2, a)?, ty }
    } else if let Some((strong, (a, r))) = [("Weakly Disguise ", false), ("Strongly Disguise ", true)]
        .iter()
        .find_map(|(p, s)| word_after(p).map(|x| (*s, x)))
    {
        let (r, duration) = duration(r, a)?;
        let ((pa, p), (ra, role)) =
            need(t, &span, cut(r, a, "as"), "a disguise is `Weakly Disguise PLAYER as ROLE`")?;
        AbilityKind::Disguise { strong, target: v(p, pa)?, role: v(role, ra)?, duration }
    } else if let Some((a, r)) = word_after("Protect ") {
        let (r, dur) = duration(r, a)?;
        let ((ta, tgt), (fa, rest)) = need(
            t,
            &span,
            cut(r, a, "from"),
            "a protection is ``Protect PLAYER from `FILTER` through DEFENSE``",
        )?;
        let ((fa, left), (tha, th)) =
            need(t, &span, cut(rest, fa, "through"), "a protection names `through` its defense")?;
        let ((fa, filt), by) = match cut(left, fa, "by") {
            Some((f, (ba, b))) => (f, Some(v(b, ba)?)),
            None => ((fa, left), None),
        };
        let filt_name = filt.trim().trim_matches('`');
        let from = match filt_name {
            "Attacks" => KillFilter::Attacks,
            "Kills" => KillFilter::Kills,
            "Lynches" => KillFilter::Lynches,
            "Attacks & Lynches" => KillFilter::AttacksLynches,
            "All" => KillFilter::All,
            "Banishments" => KillFilter::Banishments,
            other => {
                return Err(err(
                    codes::SYNTAX,
                    format!(
                        "`{other}` is no killing filter (Attacks, Kills, Lynches, Attacks & Lynches, All, Banishments)"
                    ),
                    fa..fa + filt.len(),
                ));
            }
        };
        let (th, during) = match cut(th, tha, "during") {
            Some(((_, d), (_, p))) => match p {
                "Day" => (d, Some(true)),
                "Night" => (d, Some(false)),
                other => {
                    return Err(err(
                        codes::SYNTAX,
                        format!("`during {other}`: a defense holds during Day or Night"),
                        span,
                    ));
                }
            },
            None => (th, None),
        };
        let through = match th {
            "Active Defense" => Defense::Active,
            "Passive Defense" => Defense::Passive,
            "Partial Defense" => Defense::Partial,
            "Recruitment Defense" => Defense::Recruitment,
            _ => match th.strip_prefix("Absence at ") {
                Some(l) => Defense::Absence(v(l, tha + "Absence at ".len())?),
                None => {
                    return Err(err(
                        codes::SYNTAX,
                        format!(
                            "`{th}` is no defense (Active Defense, Passive Defense, Partial Defense, Recruitment Defense, Absence at LOCATION)"
                        ),
                        tha..tha + th.len(),
                    ));
                }
            },
        };
        AbilityKind::Protect { target: v(tgt, ta)?, from, by, through, during, duration: dur }
    } else if let Some((a, r)) = word_after("Add ") {
        // Values after the duration: `(v1, v2)`.
        let (r, values) = match r.strip_suffix(')').and_then(|x| x.rfind('(').map(|i| (x, i))) {
            Some((x, i)) if !x[i..].starts_with("(~") => {
                (x[..i].trim_end(), x[i + 1..].split(',').map(|s| s.trim().to_owned()).collect())
            }
            _ => (r, Vec::new()),
        };
        let (r, duration) = duration(r, a)?;
        let ((aa, attr), (ta, to)) =
            need(t, &span, cut(r, a, "to"), "an applying is `Add ATTRIBUTE to ACTOR`")?;
        AbilityKind::Apply { attribute: v(attr, aa)?, to: v(to, ta)?, duration, values }
    } else if let Some((a, r)) = word_after("Remove ") {
        let ((aa, attr), (fa, from)) =
            need(t, &span, cut(r, a, "from"), "an unapplying is `Remove ATTRIBUTE from ACTOR`")?;
        AbilityKind::Unapply { attribute: v(attr, aa)?, from: v(from, fa)? }
    } else if let Some((a, r)) = word_after("Change ").filter(|(_, r)| find_word(r, "value", 0).is_some()) {
        let ((aa, attr), (ia, rest)) = need(
            t,
            &span,
            cut(r, a, "value"),
            "a change is ``Change ATTRIBUTE value `1` to VALUE for ACTOR``",
        )?;
        let ((_, idx), (toa, rest)) = need(
            t,
            &span,
            cut(rest, ia, "to"),
            "a change is ``Change ATTRIBUTE value `1` to VALUE for ACTOR``",
        )?;
        let ((va, val), (fa, actor)) = need(
            t,
            &span,
            cut(rest, toa, "for"),
            "a change is ``Change ATTRIBUTE value `1` to VALUE for ACTOR``",
        )?;
        let index = match idx.trim_matches('`') {
            "1" => 1,
            "2" => 2,
            "3" => 3,
            other => {
                return Err(err(codes::SYNTAX, format!("`{other}`: a change sets value 1, 2 or 3"), span));
            }
        };
        AbilityKind::Change { attribute: v(attr, aa)?, index, to: v(val, va)?, actor: v(actor, fa)? }
    } else if let Some((a, r)) = word_after("Redirect ") {
        let (r, duration) = duration(r, a)?;
        let ((wa, what), (ta, to)) =
            need(t, &span, cut(r, a, "to"), "a redirection is `Redirect ABILITY [from PLAYER] to PLAYER`")?;
        let (what, from) = match cut(what, wa, "from") {
            Some(((wa2, w), (fa, f))) => ((wa2, w), Some(v(f, fa)?)),
            None => ((wa, what), None),
        };
        AbilityKind::Redirect { what: v(what.1, what.0)?, from, to: v(to, ta)?, duration }
    } else if let Some((a, r)) = word_after("Manipulate ") {
        let (r, duration) = duration(r, a)?;
        let Some(q) = r.find("'s ") else {
            return Err(err(
                codes::SYNTAX,
                format!("`{t}`: a manipulation is `Manipulate PLAYER's public voting power to N`"),
                span,
            ));
        };
        let target = v(&r[..q], a)?;
        let rest = &r[q + 3..];
        let (votes, rest) = if let Some(x) = rest.strip_prefix("special public voting power ") {
            (Votes::Special, x)
        } else if let Some(x) = rest.strip_prefix("public voting power ") {
            (Votes::Public, x)
        } else if let Some(x) = rest.strip_prefix("private voting power ") {
            (Votes::Private, x)
        } else {
            return Err(err(
                codes::SYNTAX,
                format!(
                    "`{rest}`: a manipulation changes `public`, `special public` or `private voting power`"
                ),
                span,
            ));
        };
        let ra = a + q + 3 + (r[q + 3..].len() - rest.len());
        let (absolute, n, na) = if let Some(n) = rest.strip_prefix("to ") {
            (true, n, ra + 3)
        } else if let Some(n) = rest.strip_prefix("by ") {
            (false, n, ra + 3)
        } else {
            return Err(err(
                codes::SYNTAX,
                format!("`{rest}`: a manipulation is `to N` (absolute) or `by N` (relative)"),
                span,
            ));
        };
        AbilityKind::Manipulate { target, votes, absolute, amount: v(n, na)?, duration }
    } else if let Some((_, ty)) = NO_SYNTAX.iter().find(|(w, _)| t == *w || t.starts_with(&format!("{w} "))) {
        return Err(err(
            codes::UNSUPPORTED_ABILITY,
            format!(
                "`{t}`: a {ty} ability — the guide lists the type but defines no syntax for it, so sheetd cannot run it"
            ),
            span,
        ));
    } else {
        let first = t.split_whitespace().next().unwrap_or(t);
        return Err(err(
            codes::UNKNOWN_ABILITY,
            format!(
                "`{first}` starts no ability the guide defines (killing, investigating, targeting, disguising, protecting, applying, redirecting, manipulating)"
            ),
            span,
        ));
    };
    Ok(Ability { kind, span })
}
