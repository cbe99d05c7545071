//! Reading feature dictionaries and creatures files into the dialect's model, checking their
//! shape and every name the seed defines (triggers, nouns, effects, durations, recharges).
//! Postfix formulas are kept as written here and compiled per creature by `write`, where the
//! runtime variables are known.

use super::json::{self, Str, fields, list, missing, object, string, wrong};
use crate::Error;
use jsonc_parser::ast::Value;
use std::ops::Range;

/// The error codes of this module.
pub mod codes {
    /// A trigger the seed does not define, or one with the wrong nouns.
    pub const TRIGGER: &str = "creature.trigger";
    /// A noun the seed does not define, or one that cannot be used where it is.
    pub const NOUN: &str = "creature.noun";
    /// An effect the seed does not define, or one with the wrong variables.
    pub const EFFECT: &str = "creature.effect";
    /// A duration the seed does not define.
    pub const DURATION: &str = "creature.duration";
    /// A recharge that is not `[uses, "turn" | "short rest" | "long rest" | "X-Y"]`.
    pub const RECHARGE: &str = "creature.recharge";
    /// An effect or duration the seed marks under construction (a warning: it does nothing).
    pub const UNDER_CONSTRUCTION: &str = "creature.under_construction";
    /// An effect that changes no number sheetd keeps (a warning: it does nothing).
    pub const NOT_MODELLED: &str = "creature.not_modelled";
}

/// A value a feature writes: a number, or a postfix formula (a bare name such as `V0` is the
/// one-token formula `(V0)`).
#[derive(Clone, Debug)]
pub enum Val {
    Number(String, Range<usize>),
    Postfix(Str),
}

/// A feature dictionary.
#[derive(Debug)]
pub struct Feature {
    pub name: Str,
    pub text: Option<Str>,
    pub subfeatures: Vec<Subfeature>,
    /// The file it was read from (an index into the files read).
    pub file: usize,
}

/// One subfeature: what triggers it, the condition, the effects and the recharge.
#[derive(Debug)]
pub struct Subfeature {
    pub trigger: Trigger,
    pub conditions: Option<Val>,
    pub effects: Vec<Effect>,
    pub recharge: Option<Recharge>,
}

/// A noun of a trigger or an effect's target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Noun {
    /// The creature with the feature.
    Itself,
    /// The other creature of the trigger (or, in an effect condition, the target).
    Creature,
    /// Any creature (a trigger's noun only).
    Any,
    /// A creature on the sheet by its id.
    Named(String),
}

/// What makes a subfeature run.
#[derive(Debug)]
pub enum Trigger {
    /// Always on while the creature is on the sheet.
    Passive,
    /// Used by the `use` verb: `action`, `bonus`, `free`, `legendary X`.
    Use(&'static str),
    /// An event: its name in the prelude, and the nouns it was written with, each with its
    /// span (the first is the event's creature, the second, when there is one, the other).
    Event { event: &'static str, nouns: Vec<(Noun, Range<usize>)>, other: bool },
    /// A rest: `ShortRest` or `LongRest`.
    Rest(&'static str),
}

/// An effect of a subfeature.
#[derive(Debug)]
pub struct Effect {
    pub target: (Noun, Range<usize>),
    pub condition: Option<Val>,
    pub what: What,
    pub duration: Option<(Duration, Range<usize>)>,
    pub span: Range<usize>,
}

/// What an effect does.
#[derive(Debug)]
pub enum What {
    /// "Set N = N": the target's attribute (as written, with its span) and its value.
    Set(String, Range<usize>, Val),
    /// "Regain X hp".
    Regain(Val),
    /// "Reduce incoming damage by X".
    Reduce(Val),
    /// "Deal X damage".
    Deal(Val),
    /// An advantage or disadvantage flag set to 1 on the target.
    Flag(&'static str),
    /// An effect that changes nothing sheetd keeps (it was warned about).
    Nothing,
}

/// How long a lasting effect lasts.
#[derive(Clone, Debug, PartialEq)]
pub enum Duration {
    /// Until a creature's turn clock passes its value plus `after`: the clock
    /// (`TURN_ENDS`/`TURN_STARTS`), whose it is, and the offset.
    Turn { clock: &'static str, target: bool, after: u32 },
    /// A time: seconds on the global `SECONDS` clock.
    Seconds(rust_decimal::Decimal),
    /// Until removed (a duration the seed marks under construction; it was warned about).
    UntilRemoved,
}

/// A recharge: how many uses, and what refills them.
#[derive(Clone, Debug)]
pub struct Recharge {
    pub uses: u32,
    pub refill: Refill,
}

/// What refills a recharge's uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refill {
    Turn,
    ShortRest,
    LongRest,
    /// A d6 showing from..=to (`recharge_roll`).
    Roll(u8, u8),
}

/// A creature of a creatures file.
#[derive(Debug)]
pub struct Creature {
    pub name: Str,
    pub attributes: Vec<(Str, Val)>,
    pub features: Vec<Use>,
}

/// A feature a creature has, with its runtime variables.
#[derive(Debug)]
pub struct Use {
    pub feature: Str,
    pub vars: Vec<(String, Range<usize>)>,
}

/// Everything read from one file.
#[derive(Debug, Default)]
pub struct Read {
    pub features: Vec<Feature>,
    pub creatures: Vec<Creature>,
    /// The prelude's attributes a creatures file overrides or adds, with their defaults.
    pub attributes: Vec<(Str, Val)>,
    pub warnings: Vec<Error>,
}

/// The effects the seed lists that change numbers sheetd keeps, by their name.
const FLAGS: &[(&str, &str)] = &[
    ("grant advantage", "ADVANTAGE_GRANTED"),
    ("impose disadvantage", "DISADVANTAGE_IMPOSED"),
    ("impose disadvantage on attack rolls", "DISADVANTAGE_ON_ATTACK_ROLLS"),
    ("impose disadvantage on ability checks", "DISADVANTAGE_ON_ABILITY_CHECKS"),
    ("impose disadvantage on saving throws", "DISADVANTAGE_ON_SAVING_THROWS"),
];

/// The effects the seed marks under construction (`x`).
const UNDER_CONSTRUCTION: &[&str] = &[
    "move up to x ft toward n",
    "increase movement speed by x",
    "increase jump distance by x",
    "destroyed",
    "death",
    "surprised",
    "pushed x feet in direction direction",
    "immune to feature feature",
    "grant critical hit",
    "advantage on rolls roll_class",
    "automatic fail on rolls roll_class",
    "automatic succeed on rolls roll_class",
    "move x distance",
    "specific feature",
    "disable other feature",
    "polymorph n into creature <= x cr",
    "weapon/armor corrodes",
    "ignite flammable objects",
    "expend spell slot",
    "special movement",
    "plane shift",
    "grant spell effect",
    "transparency (perpetual hidenness?)",
    "prescribed actions (randomized)",
    "telepathic command",
    "learns creature's desires",
    "spell storing",
];

/// The effects the seed lists (not under construction) that change no number sheetd keeps.
const NOT_MODELLED: &[&str] = &[
    "increase jump height by x",
    "immune to spells with trait spell_trait",
    "inflict xdx type damage",
    "inflict xdx type damage, dc x ability save halves",
    "deal +x weapon die damage",
    "damage dealt is magical",
    "take action action",
    "cantrip",
    "cast spell",
    "attack",
    "know distance/direction to creature/object within x distance",
    "creates x diameter tunnel",
];

/// The durations the seed lists beyond the ones sheetd maps to clocks, all under construction.
const DURATIONS_UNDER_CONSTRUCTION: &[&str] =
    &["until action is taken to end", "until lesser restoration is cast", "until overridden or dead"];

/// Reads one file: a feature, a list of features, or a creatures file (an object with
/// `creatures`).
pub fn file(text: &str, index: usize) -> Result<Read, Error> {
    let root = json::parse(text)?;
    let mut out = Read::default();
    match &root {
        Value::Object(o) if o.get("creatures").is_some() => {
            let [attributes, creatures] = fields(o, "a creatures file", ["attributes", "creatures"])?;
            if let Some(a) = attributes {
                out.attributes = attribute_table(text, a, "`attributes`")?;
            }
            for c in
                list(creatures.ok_or_else(|| missing(o, "a creatures file", "creatures"))?, "`creatures`")?
            {
                out.creatures.push(creature(text, c)?);
            }
        }
        Value::Object(_) => out.features.push(feature(text, &root, index, &mut out.warnings)?),
        Value::Array(a) => {
            for f in &a.elements {
                out.features.push(feature(text, f, index, &mut out.warnings)?);
            }
        }
        v => return Err(wrong(v, "a feature file", "a feature, a list of features or a creatures file")),
    }
    Ok(out)
}

fn attribute_table(text: &str, v: &Value<'_>, what: &str) -> Result<Vec<(Str, Val)>, Error> {
    let o = object(v, what)?;
    let mut out = Vec::new();
    for p in &o.properties {
        let name = p.name.as_str();
        let r = jsonc_parser::common::Ranged::range(&p.name);
        let key = Str { text: name.to_owned(), span: r.start..r.end, raw_start: None };
        out.push((key, value(text, &p.value, &format!("attribute `{name}`"))?));
    }
    Ok(out)
}

fn creature(text: &str, v: &Value<'_>) -> Result<Creature, Error> {
    let o = object(v, "a creature")?;
    let [name, attributes, features] = fields(o, "a creature", ["name", "attributes", "features"])?;
    let name =
        json::name(text, name.ok_or_else(|| missing(o, "a creature", "name"))?, "a creature's `name`")?;
    let attributes = match attributes {
        Some(a) => attribute_table(text, a, "a creature's `attributes`")?,
        None => Vec::new(),
    };
    let mut uses = Vec::new();
    for f in features.map(|f| list(f, "a creature's `features`")).transpose()?.unwrap_or_default() {
        uses.push(match f {
            Value::StringLit(_) => Use { feature: string(text, f, "a feature")?, vars: Vec::new() },
            Value::Object(u) => {
                let [feature, vars] = fields(u, "a creature's feature", ["feature", "vars"])?;
                let feature = string(
                    text,
                    feature.ok_or_else(|| missing(u, "a creature's feature", "feature"))?,
                    "`feature`",
                )?;
                let mut out = Vec::new();
                for x in vars.map(|v| list(v, "`vars`")).transpose()?.unwrap_or_default() {
                    out.push((json::number(x, "a runtime variable")?, json::span(x)));
                }
                Use { feature, vars: out }
            }
            other => return Err(wrong(other, "a creature's feature", "its name or {\"feature\", \"vars\"}")),
        });
    }
    Ok(Creature { name, attributes, features: uses })
}

/// A number or a postfix formula.
fn value(text: &str, v: &Value<'_>, what: &str) -> Result<Val, Error> {
    match v {
        Value::NumberLit(_) => Ok(Val::Number(json::number(v, what)?, json::span(v))),
        Value::StringLit(_) => Ok(Val::Postfix(string(text, v, what)?)),
        _ => Err(wrong(v, what, "a number or a postfix formula")),
    }
}

fn feature(text: &str, v: &Value<'_>, index: usize, warnings: &mut Vec<Error>) -> Result<Feature, Error> {
    let o = object(v, "a feature")?;
    let [name, body, subs] = fields(o, "a feature", ["name", "text", "subfeatures"])?;
    let name = json::name(text, name.ok_or_else(|| missing(o, "a feature", "name"))?, "a feature's `name`")?;
    let body = body.map(|t| string(text, t, "a feature's `text`")).transpose()?;
    let mut subfeatures = Vec::new();
    for s in subs.map(|s| list(s, "`subfeatures`")).transpose()?.unwrap_or_default() {
        subfeatures.push(subfeature(text, s, warnings)?);
    }
    Ok(Feature { name, text: body, subfeatures, file: index })
}

fn subfeature(text: &str, v: &Value<'_>, warnings: &mut Vec<Error>) -> Result<Subfeature, Error> {
    let o = object(v, "a subfeature")?;
    let [trig, conditions, effects, recharge] =
        fields(o, "a subfeature", ["trigger", "conditions", "effects", "recharge"])?;
    let trigger = trigger(text, trig.ok_or_else(|| missing(o, "a subfeature", "trigger"))?)?;
    let conditions = conditions.map(|c| value(text, c, "`conditions`")).transpose()?;
    let mut out = Vec::new();
    for e in effects.map(|e| list(e, "`effects`")).transpose()?.unwrap_or_default() {
        out.push(effect(text, e, warnings)?);
    }
    let recharge = recharge.map(|r| self::recharge(text, r)).transpose()?;
    Ok(Subfeature { trigger, conditions, effects: out, recharge })
}

fn err(code: &'static str, message: String, span: Range<usize>) -> Error {
    Error { code, message, span }
}

fn noun(text: &str, v: &Value<'_>) -> Result<(Noun, Range<usize>), Error> {
    let s = string(text, v, "a noun")?;
    let n = match s.text.to_ascii_lowercase().as_str() {
        "self" => Noun::Itself,
        "creature" => Noun::Creature,
        "any" | "creatures" => Noun::Any,
        "object" | "structure" | "point in space" | "terrain" => {
            return Err(err(
                codes::NOUN,
                format!("the noun `{}` names no creature, and sheetd models only creatures", s.text),
                s.span,
            ));
        }
        _ if s.text.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            Noun::Named(s.text.clone())
        }
        _ => {
            return Err(err(
                codes::NOUN,
                format!(
                    "`{}` is no noun: self, creature, creatures, any, or a creature's id (a letter, then letters, digits and `_`)",
                    s.text
                ),
                s.span,
            ));
        }
    };
    Ok((n, s.span))
}

fn trigger(text: &str, v: &Value<'_>) -> Result<Trigger, Error> {
    let items: Vec<&Value<'_>> = match v {
        Value::StringLit(_) => vec![v],
        Value::Array(a) if !a.elements.is_empty() => a.elements.iter().collect(),
        _ => return Err(wrong(v, "`trigger`", "a trigger's name, or a list of it and its nouns")),
    };
    let head = string(text, items[0], "a trigger")?;
    let mut nouns = Vec::new();
    for n in &items[1..] {
        if matches!(n, Value::NumberLit(_)) {
            continue; // `legendary X`: the cost is not kept
        }
        nouns.push(noun(text, n)?);
    }
    let lower = head.text.to_ascii_lowercase();
    let (event, arity) = match lower.as_str() {
        "passive" => return Ok(Trigger::Passive),
        "action" | "bonus" | "free" | "legendary" => {
            let kind = match lower.as_str() {
                "action" => "action",
                "bonus" => "bonus",
                "free" => "free",
                _ => "legendary",
            };
            return Ok(Trigger::Use(kind));
        }
        "short rest" => return Ok(Trigger::Rest("ShortRest")),
        "long rest" => return Ok(Trigger::Rest("LongRest")),
        "turnstart" => ("TurnStart", 1),
        "turnend" => ("TurnEnd", 1),
        "damaged" => ("Damaged", 1),
        "hits" => ("Hits", 2),
        "attacks" => ("Attacks", 2),
        "moves" | "checkagainst" | "forcesave" | "rolls" | "targetspell" | "touches" => {
            return Err(err(
                codes::TRIGGER,
                format!(
                    "the trigger `{}` is not supported: sheetd runs passive, action, bonus, free, legendary, turnstart, turnend, damaged, hits, attacks, short rest and long rest",
                    head.text
                ),
                head.span,
            ));
        }
        _ => {
            return Err(err(
                codes::TRIGGER,
                format!(
                    "`{}` is no trigger the seed defines (passive, action, bonus, free, legendary, turnstart, turnend, damaged, moves, checkagainst, forcesave, rolls, targetspell, attacks, hits, touches; and short rest, long rest)",
                    head.text
                ),
                head.span,
            ));
        }
    };
    if nouns.len() > arity {
        return Err(err(
            codes::TRIGGER,
            format!(
                "`{}` takes {arity} noun{}, and {} are given",
                head.text,
                if arity == 1 { "" } else { "s" },
                nouns.len()
            ),
            json::span(v),
        ));
    }
    Ok(Trigger::Event { event, nouns, other: arity == 2 })
}

// long: one arm per kind of effect the seed lists, each a few lines.
fn effect(text: &str, v: &Value<'_>, warnings: &mut Vec<Error>) -> Result<Effect, Error> {
    let o = object(v, "an effect")?;
    let [target, condition, what, duration] =
        fields(o, "an effect", ["target", "condition", "effect", "duration"])?;
    let target = match target {
        Some(t) => noun(text, t)?,
        None => (Noun::Itself, json::span(v)),
    };
    if target.0 == Noun::Any {
        return Err(err(
            codes::NOUN,
            "an effect on every creature (`creatures`, `any`) is not supported: name one target (self, creature, or a creature's id)".to_owned(),
            target.1,
        ));
    }
    let condition = condition.map(|c| value(text, c, "an effect's `condition`")).transpose()?;
    let what_v = what.ok_or_else(|| missing(o, "an effect", "effect"))?;
    let items: Vec<&Value<'_>> = match what_v {
        Value::StringLit(_) => vec![what_v],
        Value::Array(a) if !a.elements.is_empty() => a.elements.iter().collect(),
        _ => return Err(wrong(what_v, "`effect`", "[EFFECT, variables…]")),
    };
    let name = string(text, items[0], "an effect's name")?;
    let lower = name.text.to_ascii_lowercase();
    let args = &items[1..];
    let arg = |i: usize, what: &str| -> Result<Val, Error> {
        let a = args.get(i).ok_or_else(|| {
            err(codes::EFFECT, format!("`{}` needs {what} after its name", name.text), json::span(what_v))
        })?;
        value(text, a, what)
    };
    let what = match lower.as_str() {
        "set n = n" => {
            let var = string(text, args.first().copied().unwrap_or(what_v), "the attribute set")?;
            if args.is_empty() {
                return Err(err(
                    codes::EFFECT,
                    "`Set N = N` needs the attribute and its value".into(),
                    name.span,
                ));
            }
            What::Set(var.text.clone(), var.span.clone(), arg(1, "the value")?)
        }
        "regain x hp" => What::Regain(arg(0, "X")?),
        "reduce incoming damage by x" => What::Reduce(arg(0, "X")?),
        "deal x damage" => What::Deal(arg(0, "X")?),
        "impose disadvantage on type" => {
            let t = string(text, args.first().copied().unwrap_or(what_v), "TYPE")?;
            let key = format!("impose disadvantage on {}", t.text.to_ascii_lowercase());
            match FLAGS.iter().find(|(n, _)| *n == key) {
                Some((_, flag)) => What::Flag(flag),
                None => {
                    return Err(err(
                        codes::EFFECT,
                        format!(
                            "`{}` is no TYPE of `Impose disadvantage on TYPE` (attack rolls, ability checks, saving throws)",
                            t.text
                        ),
                        t.span,
                    ));
                }
            }
        }
        _ => {
            if let Some((_, flag)) = FLAGS.iter().find(|(n, _)| *n == lower) {
                What::Flag(flag)
            } else if UNDER_CONSTRUCTION.contains(&lower.as_str()) {
                warnings.push(err(
                    codes::UNDER_CONSTRUCTION,
                    format!(
                        "the effect `{}` is under construction in the seed: it loads and does nothing",
                        name.text
                    ),
                    name.span.clone(),
                ));
                What::Nothing
            } else if NOT_MODELLED.contains(&lower.as_str()) {
                warnings.push(err(
                    codes::NOT_MODELLED,
                    format!(
                        "the effect `{}` changes no number sheetd keeps: it loads and does nothing",
                        name.text
                    ),
                    name.span.clone(),
                ));
                What::Nothing
            } else {
                return Err(err(
                    codes::EFFECT,
                    format!(
                        "`{}` is no effect the seed defines (the ones that change numbers: Set N = N, Regain X hp, Reduce incoming damage by X, Deal X damage, Grant advantage, Impose disadvantage, Impose disadvantage on TYPE)",
                        name.text
                    ),
                    name.span,
                ));
            }
        }
    };
    let duration = duration.map(|d| self::duration(text, d, warnings)).transpose()?;
    Ok(Effect { target, condition, what, duration, span: json::span(v) })
}

fn duration(text: &str, v: &Value<'_>, warnings: &mut Vec<Error>) -> Result<(Duration, Range<usize>), Error> {
    let s = string(text, v, "a duration")?;
    let lower = s.text.trim().to_ascii_lowercase();
    let turn = |clock, target, after| Duration::Turn { clock, target, after };
    let d = match lower.as_str() {
        "end of turn" => turn("TURN_ENDS", false, 0),
        "start of next turn" => turn("TURN_STARTS", false, 0),
        "end of self next turn" => turn("TURN_ENDS", false, 1),
        "end of target next turn" => turn("TURN_ENDS", true, 0),
        l if DURATIONS_UNDER_CONSTRUCTION.contains(&l) => {
            warnings.push(err(
                codes::UNDER_CONSTRUCTION,
                format!("the duration `{}` is under construction in the seed: the effect lasts until it is removed", s.text),
                s.span.clone(),
            ));
            Duration::UntilRemoved
        }
        l => {
            let mut words = l.split_whitespace();
            let (Some(n), Some(unit), None) = (words.next(), words.next(), words.next()) else {
                return Err(bad_duration(&s));
            };
            let seconds: u64 = match unit.trim_end_matches('s') {
                "sec" | "second" => 1,
                "min" | "minute" => 60,
                "hr" | "hour" => 3_600,
                "day" => 86_400,
                "month" => 2_592_000,
                "year" => 31_536_000,
                _ => return Err(bad_duration(&s)),
            };
            let n = formula::parse_decimal(n).map_err(|_| bad_duration(&s))?;
            let total =
                n.checked_mul(rust_decimal::Decimal::from(seconds)).ok_or_else(|| bad_duration(&s))?;
            if total.is_sign_negative() {
                return Err(bad_duration(&s));
            }
            Duration::Seconds(total)
        }
    };
    Ok((d, s.span))
}

fn bad_duration(s: &Str) -> Error {
    err(
        codes::DURATION,
        format!(
            "`{}` is no duration sheetd runs: End of turn, Start of next turn, End of self next turn, End of target next turn, or a time `X units` (sec, min, hr, day, month, year)",
            s.text
        ),
        s.span.clone(),
    )
}

fn recharge(text: &str, v: &Value<'_>) -> Result<Recharge, Error> {
    let bad = || {
        err(
            codes::RECHARGE,
            "a recharge is [uses, \"turn\" | \"short rest\" | \"long rest\" | \"X-Y\"]".to_owned(),
            json::span(v),
        )
    };
    let items = list(v, "`recharge`")?;
    let [n, what] = items else { return Err(bad()) };
    let uses = match n {
        Value::NumberLit(x) => x.value.parse::<u32>().map_err(|_| bad())?,
        _ => return Err(bad()),
    };
    let s = string(text, what, "what refills it")?;
    let refill = match s.text.to_ascii_lowercase().as_str() {
        "turn" => Refill::Turn,
        "short rest" => Refill::ShortRest,
        "long rest" => Refill::LongRest,
        r => {
            let range = r
                .split_once('-')
                .and_then(|(a, b)| Some((a.trim().parse::<u8>().ok()?, b.trim().parse::<u8>().ok()?)));
            match range {
                Some((a, b)) if (1..=6).contains(&a) && (a..=6).contains(&b) => Refill::Roll(a, b),
                _ => {
                    return Err(err(
                        codes::RECHARGE,
                        format!(
                            "`{}` is not `turn`, `short rest`, `long rest` or a d6 range `X-Y` (1 ≤ X ≤ Y ≤ 6)",
                            s.text
                        ),
                        s.span,
                    ));
                }
            }
        }
    };
    Ok(Recharge { uses, refill })
}

/// A postfix value's text as a formula: a bare name or number in a string is the one-token
/// formula around it. Returns the text and how far its bytes are shifted from the string's.
pub fn as_postfix(s: &Str) -> (String, isize) {
    let t = s.text.trim_start();
    if t.starts_with('(') { (s.text.clone(), 0) } else { (format!("({})", s.text), 1) }
}

/// The span in the file of a postfix error at `span` of the text [`as_postfix`] gave.
pub fn postfix_span(s: &Str, shift: isize, span: Range<usize>) -> Range<usize> {
    let len = s.text.len();
    let back = |x: usize| (x as isize - shift).clamp(0, len as isize) as usize;
    s.inner(back(span.start)..back(span.end).max(back(span.start)))
}
