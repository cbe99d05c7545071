//! The effect strings' syntax, both grammars of `../shared/seeds/effect-strings.txt`, read into
//! one tree.
//!
//! ```text
//! effect  := [timing] leg ("+" leg)*         timing: `harvest.` / `roll.` before the verb, or
//!                                            the word `action.end` before the first leg
//! leg     := R N                             gain: `m 4` (R one of g, m, s, v)
//!          | choose option+                  `choose g 1 m 1`, `choose g 3 <citizens where name==Knight>`
//!          | exchange R N R N                pay, then gain
//!          | count (owned_ROLE | area AREA) R N
//!          | self_convert R N R N [optional] | pay_to_player R N R N [optional]
//!          | take_from_player R N [optional]
//!          | manipulate_resources mode=M pay=R:N gain=R:N take=R:N optional=true   (current)
//!          | gain_per_owned_citizen_name NAME R N
//!          | set_one_die target=N cost=R:N | cost=R_per_owned_role:ROLE
//!          | effect.add FLAG
//!          | modify_monster_strength N       (current: `action.modify_monster_strength +N`)
//!          | concurrent_flip_one_citizen
//! option  := R N | "<" group ">"             group: legs joined by `+`, where `citizens [where
//!                                            cond]` takes a citizen
//! cond    := term (("and" | "or") term)*    term: FIELD OP VALUE, FIELD one of role, name,
//!                                            gold_cost, area, strength; OP ==, !=, <=, >=
//! ```
//!
//! Inside `<…>`, `<=` and `>=` are comparisons; `<` and `>` open and close. A condition's
//! `and` and `or` are read left to right, `and` binding tighter. The current grammar's forms
//! (`manipulate_resources mode=…`, `action.modify_monster_strength +3`) read into the same tree
//! as their unified rewrites; [`unified`] prints a tree in the unified grammar.

use crate::Error;
use std::fmt::Write;
use std::ops::Range;

/// The error codes of this module.
pub mod codes {
    /// Text that is no effect: an unclosed `<`, a missing amount, a `+` with nothing after it.
    pub const SYNTAX: &str = "effects.syntax";
    /// A first word that is no verb the document defines.
    pub const UNKNOWN_VERB: &str = "effects.unknown_verb";
    /// A resource that is not g, m, s or v.
    pub const RESOURCE: &str = "effects.resource";
    /// A filter's field that is not role, name, gold_cost, area or strength.
    pub const FIELD: &str = "effects.field";
}

/// Groups nested deeper than this are refused (the document's go one deep).
const MAX_DEPTH: usize = 16;

/// A resource: gold, and the document's `m`, `s` and `v` (victory points).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Res {
    G,
    M,
    S,
    V,
}

impl Res {
    fn parse(t: &str) -> Option<Res> {
        Some(match t {
            "g" => Res::G,
            "m" => Res::M,
            "s" => Res::S,
            "v" => Res::V,
            _ => return None,
        })
    }

    /// The letter: `g`.
    pub fn letter(self) -> &'static str {
        match self {
            Res::G => "g",
            Res::M => "m",
            Res::S => "s",
            Res::V => "v",
        }
    }
}

/// An amount of a resource: `g 2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Amount {
    pub res: Res,
    pub n: u32,
}

/// When an effect happens, for a passive: `harvest.`, `roll.`, `action.end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    Harvest,
    Roll,
    ActionEnd,
}

/// An effect string: its timing and its legs, each an atomic step of its own.
#[derive(Clone, Debug)]
pub struct Effect {
    pub timing: Option<Timing>,
    pub legs: Vec<Leg>,
}

/// Two effects are the same when their trees are: where they are written does not count.
impl PartialEq for Effect {
    fn eq(&self, other: &Effect) -> bool {
        self.timing == other.timing && self.legs == other.legs
    }
}

/// One leg of an effect, with the bytes of the string it was read from.
#[derive(Clone, Debug)]
pub struct Leg {
    pub kind: LegKind,
    pub span: Range<usize>,
}

impl PartialEq for Leg {
    fn eq(&self, other: &Leg) -> bool {
        self.kind == other.kind
    }
}

/// What a leg does.
#[derive(Clone, Debug, PartialEq)]
pub enum LegKind {
    /// `m 4`.
    Gain(Amount),
    /// `choose g 2 m 2`: one of the options, each its legs.
    Choose(Vec<Vec<Leg>>),
    /// `citizens where role==shadow` (inside `<…>`): a citizen taken from the board.
    Take(Filter),
    /// `exchange s 1 g 2`: pay 1s (a cost that must be paid), gain 2g.
    Exchange { pay: Amount, gain: Amount },
    /// `count owned_worker g 2`, `count area Hills g 1`: so much per counted thing, when paid.
    Count { by: Counted, each: Amount },
    /// `self_convert g 3 v 3 optional`: pay, gain.
    SelfConvert { pay: Amount, gain: Amount, optional: bool },
    /// `pay_to_player g 1 v 1 optional`: pay another player, gain.
    PayToPlayer { pay: Amount, gain: Amount, optional: bool },
    /// `take_from_player g 1 optional`: take from another player.
    TakeFromPlayer { take: Amount, optional: bool },
    /// `gain_per_owned_citizen_name Knight g 1`.
    GainPerOwnedName { name: String, each: Amount },
    /// `set_one_die target=6 cost=g:2`.
    SetOneDie { target: u32, cost: DieCost },
    /// `effect.add action.emeraldstronghold`: a flag the player holds.
    AddFlag(String),
    /// A key dispatched to a named handler: `modify_monster_strength 3`,
    /// `concurrent_flip_one_citizen`.
    Opaque { key: String, args: Vec<u32> },
}

/// What a `count` counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Counted {
    /// `owned_worker`: citizens of that role the player owns.
    OwnedRole(String),
    /// `area Hills`: monsters of that area the player has slain.
    Area(String),
}

/// What setting a die costs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DieCost {
    /// `cost=g:2`.
    Amount(Amount),
    /// `cost=g_per_owned_role:holy_citizen`: 1 of the resource per citizen of the role owned.
    PerOwnedRole { res: Res, role: String },
}

/// `citizens where …`: the table, and the condition its rows meet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    pub table: String,
    pub cond: Option<Cond>,
}

/// `role==soldier and gold_cost<=2`: terms joined left to right.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cond {
    pub first: Term,
    pub rest: Vec<(Join, Term)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    And,
    Or,
}

/// `gold_cost<=2`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Term {
    pub field: String,
    pub op: &'static str,
    pub value: String,
}

/// The fields a filter may compare.
pub const FIELDS: &[&str] = &["role", "name", "gold_cost", "area", "strength"];

/// The verbs, in either grammar.
pub const VERBS: &[&str] = &[
    "choose",
    "exchange",
    "count",
    "self_convert",
    "pay_to_player",
    "take_from_player",
    "manipulate_resources",
    "gain_per_owned_citizen_name",
    "set_one_die",
    "effect.add",
    "modify_monster_strength",
    "action.modify_monster_strength",
    "concurrent_flip_one_citizen",
];

fn err(code: &'static str, message: impl Into<String>, span: Range<usize>) -> Error {
    Error { code, message: message.into(), span }
}

/// A token: a word, a `<…>` group (its inside, and where that starts), or `+`.
#[derive(Clone, Debug)]
enum Tok {
    Word(String),
    Group(String, usize),
    Plus,
}

type Token = (Tok, Range<usize>);

/// Reads an effect string, in either grammar.
pub fn parse(text: &str) -> Result<Effect, Error> {
    effect(text, 0, 0)
}

fn effect(text: &str, at: usize, depth: usize) -> Result<Effect, Error> {
    let mut toks = lex(text, at)?;
    if toks.is_empty() {
        return Err(err(codes::SYNTAX, "an empty effect", at..at + text.len()));
    }
    // `action.end …`, `harvest.verb …`, `roll.verb …`.
    let mut timing = None;
    if let (Tok::Word(w), span) = &toks[0] {
        let (w, span) = (w.clone(), span.clone());
        if w == "action.end" {
            timing = Some(Timing::ActionEnd);
            toks.remove(0);
            if toks.is_empty() {
                return Err(err(codes::SYNTAX, "`action.end` is followed by the effect it times", span));
            }
        } else if let Some((t, verb)) = [("harvest.", Timing::Harvest), ("roll.", Timing::Roll)]
            .iter()
            .find_map(|(p, t)| w.strip_prefix(p).map(|v| (*t, v.to_owned())))
        {
            timing = Some(t);
            let skip = w.len() - verb.len();
            toks[0] = (Tok::Word(verb), span.start + skip..span.end);
        }
    }
    let legs = legs(&toks, depth, false)?;
    Ok(Effect { timing, legs })
}

/// Legs joined by `+`; `group`: inside `<…>`, where `citizens …` takes a citizen.
fn legs(toks: &[Token], depth: usize, group: bool) -> Result<Vec<Leg>, Error> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..=toks.len() {
        if i < toks.len() && !matches!(toks[i].0, Tok::Plus) {
            continue;
        }
        let part = &toks[start..i];
        if part.is_empty() {
            let at = toks.get(i).or(toks.get(i.wrapping_sub(1))).map_or(0..0, |t| t.1.clone());
            return Err(err(codes::SYNTAX, "`+` joins two effects: one is missing", at));
        }
        out.push(leg(part, depth, group)?);
        start = i + 1;
    }
    Ok(out)
}

/// The words of a leg after its verb, read one by one.
struct Words<'a> {
    toks: &'a [Token],
    i: usize,
    verb: &'a str,
    span: Range<usize>,
}

impl Words<'_> {
    fn next_word(&mut self, what: &str) -> Result<(String, Range<usize>), Error> {
        match self.toks.get(self.i) {
            Some((Tok::Word(w), s)) => {
                self.i += 1;
                Ok((w.clone(), s.clone()))
            }
            Some((_, s)) => {
                Err(err(codes::SYNTAX, format!("`{}`: {what} expected here", self.verb), s.clone()))
            }
            None => Err(err(
                codes::SYNTAX,
                format!("`{}`: {what} expected after it", self.verb),
                self.span.end..self.span.end,
            )),
        }
    }

    fn number(&mut self, what: &str) -> Result<u32, Error> {
        let (w, s) = self.next_word(what)?;
        number(&w, &s, what)
    }

    fn amount(&mut self) -> Result<Amount, Error> {
        let (r, s) = self.next_word("a resource (g, m, s, v)")?;
        let res = resource(&r, &s)?;
        Ok(Amount { res, n: self.number("an amount")? })
    }

    /// A trailing `optional`.
    fn optional(&mut self) -> bool {
        let yes = matches!(self.toks.get(self.i), Some((Tok::Word(w), _)) if w == "optional");
        if yes {
            self.i += 1;
        }
        yes
    }

    /// Nothing may follow.
    fn end(&self) -> Result<(), Error> {
        match self.toks.get(self.i) {
            None => Ok(()),
            Some((_, s)) => Err(err(
                codes::SYNTAX,
                format!("`{}` takes no more: `{}` is extra", self.verb, self.span_text(s)),
                s.start..self.span.end,
            )),
        }
    }

    fn span_text(&self, s: &Range<usize>) -> String {
        match self.toks.iter().find(|(_, t)| t == s) {
            Some((Tok::Word(w), _)) => w.clone(),
            Some((Tok::Group(g, _), _)) => format!("<{g}>"),
            _ => "+".to_owned(),
        }
    }
}

fn number(w: &str, s: &Range<usize>, what: &str) -> Result<u32, Error> {
    w.parse::<u32>()
        .map_err(|_| err(codes::SYNTAX, format!("`{w}` is not {what} (a whole number)"), s.clone()))
}

fn resource(r: &str, s: &Range<usize>) -> Result<Res, Error> {
    Res::parse(r).ok_or_else(|| err(codes::RESOURCE, format!("`{r}` is no resource (g, m, s, v)"), s.clone()))
}

/// `g:3` in a `key=value`.
fn colon_amount(v: &str, s: &Range<usize>) -> Result<Amount, Error> {
    let Some((r, n)) = v.split_once(':') else {
        return Err(err(codes::SYNTAX, format!("`{v}` is not an amount `R:N` (g:3)"), s.clone()));
    };
    Ok(Amount { res: resource(r, s)?, n: number(n, s, "an amount")? })
}

// long: one arm per verb, each a few lines.
fn leg(toks: &[Token], depth: usize, group: bool) -> Result<Leg, Error> {
    let span = toks[0].1.start..toks[toks.len() - 1].1.end;
    let (verb, vspan) = match &toks[0] {
        (Tok::Word(w), s) => (w.as_str(), s.clone()),
        (Tok::Group(..), s) => {
            return Err(err(codes::SYNTAX, "`<…>` is an option of `choose`, not an effect", s.clone()));
        }
        (Tok::Plus, s) => return Err(err(codes::SYNTAX, "`+` joins two effects", s.clone())),
    };
    let mut w = Words { toks, i: 1, verb, span: span.clone() };
    let kind = if let Some(res) = Res::parse(verb) {
        let n = w.number("an amount")?;
        w.end()?;
        LegKind::Gain(Amount { res, n })
    } else {
        match verb {
            "choose" => {
                let mut options = Vec::new();
                while let Some((t, s)) = toks.get(w.i) {
                    match t {
                        Tok::Group(inner, at) => {
                            if depth >= MAX_DEPTH {
                                return Err(err(codes::SYNTAX, "groups `<…>` nested too deep", s.clone()));
                            }
                            let inner_toks = lex(inner, *at)?;
                            if inner_toks.is_empty() {
                                return Err(err(codes::SYNTAX, "an empty option `<>`", s.clone()));
                            }
                            options.push(legs(&inner_toks, depth + 1, true)?);
                            w.i += 1;
                        }
                        _ => {
                            let a = w.amount()?;
                            options.push(vec![Leg {
                                kind: LegKind::Gain(a),
                                span: s.start..toks[w.i - 1].1.end,
                            }]);
                        }
                    }
                }
                if options.is_empty() {
                    return Err(err(codes::SYNTAX, "`choose` needs its options: `choose g 2 m 2`", vspan));
                }
                LegKind::Choose(options)
            }
            "citizens" if group => {
                let cond = match toks.get(1) {
                    None => None,
                    Some((Tok::Word(x), _)) if x == "where" => Some(cond(&toks[2..], &span)?),
                    Some((_, s)) => {
                        return Err(err(
                            codes::SYNTAX,
                            "after `citizens`, `where` and a condition",
                            s.clone(),
                        ));
                    }
                };
                LegKind::Take(Filter { table: "citizens".into(), cond })
            }
            "exchange" => {
                let (pay, gain) = (w.amount()?, w.amount()?);
                w.end()?;
                LegKind::Exchange { pay, gain }
            }
            "count" => {
                let (by, s) = w.next_word("what to count (`owned_worker`, `area Hills`)")?;
                let by = if by == "area" {
                    Counted::Area(w.next_word("an area")?.0)
                } else if let Some(role) = by.strip_prefix("owned_").filter(|r| !r.is_empty()) {
                    Counted::OwnedRole(role.to_owned())
                } else {
                    return Err(err(
                        codes::SYNTAX,
                        format!("`count {by}`: count `owned_ROLE` or `area AREA`"),
                        s,
                    ));
                };
                let each = w.amount()?;
                w.end()?;
                LegKind::Count { by, each }
            }
            "self_convert" | "pay_to_player" => {
                let (pay, gain) = (w.amount()?, w.amount()?);
                let optional = w.optional();
                w.end()?;
                if verb == "self_convert" {
                    LegKind::SelfConvert { pay, gain, optional }
                } else {
                    LegKind::PayToPlayer { pay, gain, optional }
                }
            }
            "take_from_player" => {
                let take = w.amount()?;
                let optional = w.optional();
                w.end()?;
                LegKind::TakeFromPlayer { take, optional }
            }
            "manipulate_resources" => manipulate(&mut w)?,
            "gain_per_owned_citizen_name" => {
                let name = w.next_word("a citizen's name")?.0;
                let each = w.amount()?;
                w.end()?;
                LegKind::GainPerOwnedName { name, each }
            }
            "set_one_die" => set_one_die(&mut w)?,
            "effect.add" => {
                let flag = w.next_word("a flag (`action.emeraldstronghold`)")?.0;
                w.end()?;
                LegKind::AddFlag(flag)
            }
            "modify_monster_strength" | "action.modify_monster_strength" => {
                let (n, s) = w.next_word("an amount")?;
                let n = number(n.strip_prefix('+').unwrap_or(&n), &s, "an amount")?;
                w.end()?;
                LegKind::Opaque { key: "modify_monster_strength".into(), args: vec![n] }
            }
            "concurrent_flip_one_citizen" => {
                w.end()?;
                LegKind::Opaque { key: verb.to_owned(), args: Vec::new() }
            }
            other => {
                return Err(err(
                    codes::UNKNOWN_VERB,
                    format!(
                        "`{other}` is no effect: a resource amount (`g 2`) or one of {}",
                        VERBS
                            .iter()
                            .filter(|v| !v.starts_with("action."))
                            .copied()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    vspan,
                ));
            }
        }
    };
    Ok(Leg { kind, span })
}

/// `manipulate_resources mode=… pay=R:N gain=R:N take=R:N optional=true`: the current
/// grammar's form of `self_convert`, `pay_to_player` and `take_from_player`.
fn manipulate(w: &mut Words<'_>) -> Result<LegKind, Error> {
    let (mut mode, mut pay, mut gain, mut take, mut optional) = (None, None, None, None, false);
    while w.i < w.toks.len() {
        let (kv, s) = w.next_word("`key=value`")?;
        let Some((k, v)) = kv.split_once('=') else {
            return Err(err(codes::SYNTAX, format!("`{kv}` is not `key=value`"), s));
        };
        match k {
            "mode" => mode = Some((v.to_owned(), s)),
            "pay" => pay = Some(colon_amount(v, &s)?),
            "gain" => gain = Some(colon_amount(v, &s)?),
            "take" => take = Some(colon_amount(v, &s)?),
            "optional" => {
                optional = match v {
                    "true" => true,
                    "false" => false,
                    _ => return Err(err(codes::SYNTAX, format!("`optional={v}`: true or false"), s)),
                }
            }
            _ => {
                return Err(err(
                    codes::SYNTAX,
                    format!("`{k}` is not a key of manipulate_resources (mode, pay, gain, take, optional)"),
                    s,
                ));
            }
        }
    }
    let Some((mode, s)) = mode else {
        return Err(err(codes::SYNTAX, "manipulate_resources needs `mode=`", w.span.clone()));
    };
    let missing = |k: &str| err(codes::SYNTAX, format!("mode={mode} needs `{k}=R:N`"), w.span.clone());
    Ok(match mode.as_str() {
        "self_convert" | "pay_to_player" => {
            let (pay, gain) = (pay.ok_or_else(|| missing("pay"))?, gain.ok_or_else(|| missing("gain"))?);
            if take.is_some() {
                return Err(err(codes::SYNTAX, format!("mode={mode} takes no `take=`"), w.span.clone()));
            }
            if mode == "self_convert" {
                LegKind::SelfConvert { pay, gain, optional }
            } else {
                LegKind::PayToPlayer { pay, gain, optional }
            }
        }
        "take_from_player" => {
            if pay.is_some() || gain.is_some() {
                return Err(err(codes::SYNTAX, "mode=take_from_player takes only `take=`", w.span.clone()));
            }
            LegKind::TakeFromPlayer { take: take.ok_or_else(|| missing("take"))?, optional }
        }
        other => {
            return Err(err(
                codes::SYNTAX,
                format!("`mode={other}`: self_convert, pay_to_player or take_from_player"),
                s,
            ));
        }
    })
}

/// `set_one_die target=6 cost=g:2` or `cost=g_per_owned_role:holy_citizen`.
fn set_one_die(w: &mut Words<'_>) -> Result<LegKind, Error> {
    let (mut target, mut cost) = (None, None);
    while w.i < w.toks.len() {
        let (kv, s) = w.next_word("`target=N` or `cost=…`")?;
        match kv.split_once('=') {
            Some(("target", v)) => target = Some(number(v, &s, "a die's face")?),
            Some(("cost", v)) => {
                cost = Some(match v.split_once(':') {
                    Some((r, role)) if r.ends_with("_per_owned_role") => DieCost::PerOwnedRole {
                        res: resource(r.trim_end_matches("_per_owned_role"), &s)?,
                        role: role.to_owned(),
                    },
                    _ => DieCost::Amount(colon_amount(v, &s)?),
                })
            }
            _ => {
                return Err(err(
                    codes::SYNTAX,
                    format!("`{kv}`: set_one_die takes `target=N` and `cost=…`"),
                    s,
                ));
            }
        }
    }
    match (target, cost) {
        (Some(target), Some(cost)) if (1..=6).contains(&target) => Ok(LegKind::SetOneDie { target, cost }),
        (Some(t), Some(_)) => {
            Err(err(codes::SYNTAX, format!("`target={t}`: a die shows 1 to 6"), w.span.clone()))
        }
        _ => Err(err(codes::SYNTAX, "set_one_die needs `target=N` and `cost=…`", w.span.clone())),
    }
}

/// A filter's condition: `role==soldier and gold_cost<=2`.
fn cond(toks: &[Token], span: &Range<usize>) -> Result<Cond, Error> {
    let mut terms: Vec<(Option<Join>, Term)> = Vec::new();
    let mut join = None;
    let mut text = String::new();
    let mut tspan: Option<Range<usize>> = None;
    let mut flush =
        |text: &mut String, tspan: &mut Option<Range<usize>>, join: Option<Join>| -> Result<(), Error> {
            let Some(s) = tspan.take() else {
                return Err(err(codes::SYNTAX, "a condition's term is missing", span.end..span.end));
            };
            terms.push((join, term(&std::mem::take(text), s)?));
            Ok(())
        };
    for (t, s) in toks {
        let Tok::Word(w) = t else {
            return Err(err(codes::SYNTAX, "a condition is terms joined by `and` and `or`", s.clone()));
        };
        let j = match w.as_str() {
            "and" => Some(Join::And),
            "or" => Some(Join::Or),
            _ => None,
        };
        match j {
            Some(j) => {
                flush(&mut text, &mut tspan, join)?;
                join = Some(j);
            }
            None => {
                text.push_str(w);
                tspan = Some(tspan.map_or(s.clone(), |t| t.start..s.end));
            }
        }
    }
    flush(&mut text, &mut tspan, join)?;
    let mut it = terms.into_iter();
    let (_, first) = it.next().ok_or_else(|| err(codes::SYNTAX, "an empty condition", span.clone()))?;
    Ok(Cond { first, rest: it.map(|(j, t)| (j.unwrap_or(Join::And), t)).collect() })
}

/// `gold_cost<=2` (spaces removed).
fn term(text: &str, span: Range<usize>) -> Result<Term, Error> {
    for op in ["==", "!=", "<=", ">="] {
        if let Some((f, v)) = text.split_once(op) {
            if !FIELDS.contains(&f) {
                return Err(err(
                    codes::FIELD,
                    format!("`{f}` is no field of a citizen ({})", FIELDS.join(", ")),
                    span,
                ));
            }
            if v.is_empty() {
                return Err(err(codes::SYNTAX, format!("`{text}`: a value after `{op}`"), span));
            }
            return Ok(Term { field: f.to_owned(), op, value: v.to_owned() });
        }
    }
    Err(err(codes::SYNTAX, format!("`{text}` is not `field==value` (==, !=, <=, >=)"), span))
}

/// The tokens of `text`, whose first byte is at `at`.
fn lex(text: &str, at: usize) -> Result<Vec<Token>, Error> {
    let b = text.as_bytes();
    // `<` and `>` that open and close (`<=` and `>=` are comparisons).
    let bracket = |i: usize| matches!(b[i], b'<' | b'>') && b.get(i + 1) != Some(&b'=');
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'<' && bracket(i) {
            // Up to the `>` that closes it (`<=` and `>=` inside are comparisons).
            let (mut depth, mut j) = (1, i + 1);
            while j < b.len() {
                match b[j] {
                    b'<' if bracket(j) => depth += 1,
                    b'>' if bracket(j) => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            if j >= b.len() {
                return Err(err(codes::SYNTAX, "a `<` without its `>`", at + i..at + text.len()));
            }
            out.push((Tok::Group(text[i + 1..j].to_owned(), at + i + 1), at + i..at + j + 1));
            i = j + 1;
        } else if c == b'+' && b.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()) {
            out.push((Tok::Plus, at + i..at + i + 1));
            i += 1;
        } else if c == b'>' && bracket(i) {
            return Err(err(codes::SYNTAX, "a `>` without its `<`", at + i..at + i + 1));
        } else {
            let start = i;
            while i < b.len() && !b[i].is_ascii_whitespace() && !bracket(i) {
                i += 1;
            }
            // (Whitespace, `<` and `>` are ASCII: `start..i` ends on a character boundary.)
            out.push((Tok::Word(text[start..i].to_owned()), at + start..at + i));
        }
    }
    Ok(out)
}

/// An effect in the unified grammar: `action.end pay_to_player g 1 v 1 optional`.
pub fn unified(e: &Effect) -> String {
    let mut out = String::new();
    match e.timing {
        Some(Timing::ActionEnd) => out.push_str("action.end "),
        Some(Timing::Harvest) => out.push_str("harvest."),
        Some(Timing::Roll) => out.push_str("roll."),
        None => {}
    }
    write_legs(&mut out, &e.legs);
    out
}

fn write_legs(out: &mut String, legs: &[Leg]) {
    for (i, l) in legs.iter().enumerate() {
        if i > 0 {
            out.push_str(" + ");
        }
        write_leg(out, &l.kind);
    }
}

fn amount(a: &Amount) -> String {
    format!("{} {}", a.res.letter(), a.n)
}

fn write_leg(out: &mut String, k: &LegKind) {
    let opt = |o: bool| if o { " optional" } else { "" };
    let _ = match k {
        LegKind::Gain(a) => write!(out, "{}", amount(a)),
        LegKind::Choose(options) => {
            out.push_str("choose");
            for o in options {
                match o.as_slice() {
                    [Leg { kind: LegKind::Gain(a), .. }] => {
                        let _ = write!(out, " {}", amount(a));
                    }
                    legs => {
                        out.push_str(" <");
                        write_legs(out, legs);
                        out.push('>');
                    }
                }
            }
            Ok(())
        }
        LegKind::Take(f) => {
            out.push_str(&f.table);
            if let Some(c) = &f.cond {
                let _ = write!(out, " where {}{}{}", c.first.field, c.first.op, c.first.value);
                for (j, t) in &c.rest {
                    let j = if *j == Join::And { "and" } else { "or" };
                    let _ = write!(out, " {j} {}{}{}", t.field, t.op, t.value);
                }
            }
            Ok(())
        }
        LegKind::Exchange { pay, gain } => write!(out, "exchange {} {}", amount(pay), amount(gain)),
        LegKind::Count { by: Counted::OwnedRole(r), each } => write!(out, "count owned_{r} {}", amount(each)),
        LegKind::Count { by: Counted::Area(a), each } => write!(out, "count area {a} {}", amount(each)),
        LegKind::SelfConvert { pay, gain, optional } => {
            write!(out, "self_convert {} {}{}", amount(pay), amount(gain), opt(*optional))
        }
        LegKind::PayToPlayer { pay, gain, optional } => {
            write!(out, "pay_to_player {} {}{}", amount(pay), amount(gain), opt(*optional))
        }
        LegKind::TakeFromPlayer { take, optional } => {
            write!(out, "take_from_player {}{}", amount(take), opt(*optional))
        }
        LegKind::GainPerOwnedName { name, each } => {
            write!(out, "gain_per_owned_citizen_name {name} {}", amount(each))
        }
        LegKind::SetOneDie { target, cost: DieCost::Amount(a) } => {
            write!(out, "set_one_die target={target} cost={}:{}", a.res.letter(), a.n)
        }
        LegKind::SetOneDie { target, cost: DieCost::PerOwnedRole { res, role } } => {
            write!(out, "set_one_die target={target} cost={}_per_owned_role:{role}", res.letter())
        }
        LegKind::AddFlag(f) => write!(out, "effect.add {f}"),
        LegKind::Opaque { key, args } => {
            out.push_str(key);
            for a in args {
                let _ = write!(out, " {a}");
            }
            Ok(())
        }
    };
}
