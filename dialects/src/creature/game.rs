//! The creature dialect's game files: `{"dialect": "creature", "setup", "steps"}`.
//!
//! `setup` is `{"creatures": [{"id", "creature", "attributes"}]}`: each creature on the sheet,
//! by its id (default: its creature's name), made from a creature of the creatures file, with
//! attributes set for this game. A creature starts at full hit points (HP = MAXHP) unless its
//! `attributes` set `HP`. `steps` are sheetd's generic steps or the dialect's verbs,
//! `{"VERB": {fields}}`, each of which this module turns into the generic step it stands for
//! (an `events::Step`: so that a game runs the same on the dialect's files and on their
//! translation, through the CLI and through the API) or into a question about the sheet:
//!
//! | verb | fields | becomes |
//! |---|---|---|
//! | `evaluate` | `creature`, `formula` (postfix) | the formula's value, read on the creature |
//! | `render_text` | `creature`, `feature` | the feature's TEXT as the creature has it |
//! | `set` | `creature`, `attribute`, `value` | `set_input` |
//! | `use` | `creature`, `feature`, `target` | `emit Use` |
//! | `rest` | `kind`: `short` or `long` | `emit ShortRest` / `LongRest` |
//! | `recharge_roll` | `creature`, `feature`, `d6` | `emit RechargeRoll` |
//! | `trigger` | `event` (`turnstart`, `turnend`, `damaged`, `hits`, `attacks`), `creature`, `target`, `amount` | `emit` of that event |

use data::SheetOp;
use events::Step as Play;
use serde_json::{Map, Value as Json};

/// The verbs, as the game file writes them.
pub const VERBS: &[&str] = &["evaluate", "render_text", "set", "use", "rest", "recharge_roll", "trigger"];

/// A step of a game file, ready to run.
#[derive(Clone, Debug)]
pub enum Step {
    /// Not a verb: a generic step, as sheetd's step JSON, for the caller to read.
    Generic(Json),
    /// A verb made into the generic step it stands for.
    Play(Play),
    /// A NUMBER formula's value, read on a creature.
    Evaluate { creature: String, formula: String },
    /// A variable's value (`deva.Angelic_Weapons.TEXT`).
    Read { reference: String },
}

/// The batch that sets a game up.
pub fn setup(setup: &Json) -> Result<Play, String> {
    let o = setup.as_object().ok_or("`setup` is not an object")?;
    if let Some(k) = o.keys().find(|k| *k != "creatures") {
        return Err(format!("unknown key `{k}` in `setup` (expected creatures)"));
    }
    let mut steps = Vec::new();
    for c in o.get("creatures").and_then(Json::as_array).map_or(&[][..], Vec::as_slice) {
        let c = c.as_object().ok_or("a setup creature is not an object")?;
        if let Some(k) = c.keys().find(|k| !["id", "creature", "attributes"].contains(&k.as_str())) {
            return Err(format!("unknown key `{k}` in a setup creature (expected id, creature, attributes)"));
        }
        let kind = text(c, "creature", "a setup creature")?;
        let id = match c.get("id") {
            Some(_) => text(c, "id", "a setup creature")?,
            None => kind.clone(),
        };
        steps.push(SheetOp::AddObject {
            kind: crate::prelude::KIND.to_owned(),
            key: kind,
            id: Some(id.clone()),
            parent: None,
        });
        let mut hp = false;
        if let Some(a) = c.get("attributes") {
            let a = a.as_object().ok_or_else(|| format!("`{id}`: `attributes` is not an object"))?;
            for (name, value) in a {
                hp |= name.eq_ignore_ascii_case("HP");
                let value = input(value).map_err(|m| format!("`{id}`: attribute `{name}`: {m}"))?;
                steps.push(SheetOp::SetInput { channel: name.clone(), on: Some(id.clone()), value });
            }
        }
        // A creature enters the game at full hit points, unless the setup says otherwise.
        if !hp {
            steps.push(SheetOp::Adjust { channel: "HP".into(), on: Some(id), by: "MAXHP - HP".into() });
        }
    }
    Ok(Play::Ops(steps))
}

/// A value given in JSON as an input: a number (exactly), a boolean or text.
pub(crate) fn input(v: &Json) -> Result<formula::Value, String> {
    match v {
        Json::Number(n) => formula::parse_decimal(&n.to_string()).map(formula::Value::Number),
        Json::String(s) => Ok(formula::parse_decimal(s)
            .map(formula::Value::Number)
            .unwrap_or_else(|_| formula::Value::String(s.as_str().into()))),
        Json::Bool(b) => Ok(formula::Value::Boolean(*b)),
        other => Err(format!("`{other}` is not a number, a boolean or text")),
    }
}

/// A value given in JSON as an event argument's text.
pub(crate) fn arg(v: &Json) -> Result<String, String> {
    match v {
        Json::String(s) => Ok(s.clone()),
        Json::Number(n) => Ok(n.to_string()),
        Json::Bool(b) => Ok(b.to_string()),
        other => Err(format!("`{other}` is not a number, a boolean or text")),
    }
}

pub(crate) fn text(o: &Map<String, Json>, key: &str, what: &str) -> Result<String, String> {
    match o.get(key) {
        Some(Json::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("{what}: `{key}` is not a string")),
        None => Err(format!("{what} has no `{key}`")),
    }
}

pub(crate) fn fields<'a>(v: &'a Json, verb: &str, known: &[&str]) -> Result<&'a Map<String, Json>, String> {
    let o = v.as_object().ok_or_else(|| format!("`{verb}` takes an object of fields"))?;
    if let Some(k) = o.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!("unknown field `{k}` of `{verb}` (expected {})", known.join(", ")));
    }
    Ok(o)
}

/// An `emit` of `event` with its arguments, as a step.
pub(crate) fn emit(event: &str, args: &[(&str, String)]) -> Step {
    let args = args.iter().map(|(n, v)| ((*n).to_owned(), v.clone())).collect();
    Step::Play(Play::Emit { event: event.to_owned(), args })
}

/// A step's one key and its value: a verb and its fields (none: not a verb).
pub(crate) fn one_key(step: &Json) -> Option<(&String, &Json)> {
    step.as_object().filter(|o| o.len() == 1).and_then(|o| o.iter().next())
}

/// Whether a step is one of the dialect's verbs (or a game's `setup`).
pub fn is_verb(step: &Json) -> bool {
    let key = step.as_object().filter(|o| o.len() == 1).and_then(|o| o.keys().next());
    key.is_some_and(|k| VERBS.contains(&k.as_str()) || k == "setup")
}

/// A step of the game file: a verb made into what runs, or a generic step as it is. A game's
/// `{"setup": {…}}` is a verb too (the API's way to send it).
// long: one arm per verb, each a few lines.
pub fn step(step: &Json) -> Result<Step, String> {
    if !is_verb(step) {
        return Ok(Step::Generic(step.clone()));
    }
    // `is_verb` checked there is exactly one key.
    let (verb, v) = step.as_object().and_then(|o| o.iter().next()).ok_or("a verb is one key")?;
    match verb.as_str() {
        "setup" => setup(v).map(Step::Play),
        "evaluate" => {
            let o = fields(v, verb, &["creature", "formula"])?;
            let creature = text(o, "creature", "`evaluate`")?;
            let postfix = text(o, "formula", "`evaluate`")?;
            let (s, shift) = if postfix.trim_start().starts_with('(') {
                (postfix.clone(), 0)
            } else {
                (format!("({postfix})"), 1)
            };
            let c = crate::postfix::compile(&s, &mut |name| {
                let bare = name
                    .strip_prefix("self.")
                    .or_else(|| name.strip_prefix("creature."))
                    .filter(|_| !crate::prelude::ATTRIBUTES.iter().any(|a| a.name.eq_ignore_ascii_case(name)))
                    .unwrap_or(name);
                Ok(bare.to_owned())
            })
            .map_err(|e| {
                let at = e.span.start.saturating_sub(shift) + 1;
                format!("`evaluate`: `{postfix}`, column {at}: {} [{}]", e.message, e.code)
            })?;
            if !c.stores.is_empty() {
                return Err("`evaluate` reads: a formula that stores belongs to a feature".to_owned());
            }
            Ok(Step::Evaluate { creature, formula: c.formula })
        }
        "render_text" => {
            let o = fields(v, verb, &["creature", "feature"])?;
            let creature = text(o, "creature", "`render_text`")?;
            let feature = text(o, "feature", "`render_text`")?;
            Ok(Step::Read { reference: format!("{creature}.{}.TEXT", super::write::ident(&feature)) })
        }
        "set" => {
            let o = fields(v, verb, &["creature", "attribute", "value"])?;
            let creature = text(o, "creature", "`set`")?;
            let attribute = text(o, "attribute", "`set`")?;
            let value = o.get("value").ok_or("`set` has no `value`")?;
            let value = input(value).map_err(|m| format!("`set`: {m}"))?;
            Ok(Step::Play(Play::Ops(vec![SheetOp::SetInput {
                channel: attribute,
                on: Some(creature),
                value,
            }])))
        }
        "use" => {
            let o = fields(v, verb, &["creature", "feature", "target"])?;
            let target = o.get("target").map(|_| text(o, "target", "`use`")).transpose()?.unwrap_or_default();
            let who = text(o, "creature", "`use`")?;
            Ok(emit("Use", &[("who", who), ("feature", text(o, "feature", "`use`")?), ("target", target)]))
        }
        "rest" => {
            let o = fields(v, verb, &["kind"])?;
            match text(o, "kind", "`rest`")?.to_ascii_lowercase().as_str() {
                "short" | "short rest" => Ok(emit("ShortRest", &[])),
                "long" | "long rest" => Ok(emit("LongRest", &[])),
                k => Err(format!("`rest`: `{k}` is not `short` or `long`")),
            }
        }
        "recharge_roll" => {
            let o = fields(v, verb, &["creature", "feature", "d6"])?;
            let d6 = o.get("d6").and_then(Json::as_u64).filter(|d| (1..=6).contains(d));
            let d6 = d6.ok_or("`recharge_roll`: `d6` is what the die showed, 1 to 6")?;
            let who = text(o, "creature", "`recharge_roll`")?;
            let feature = text(o, "feature", "`recharge_roll`")?;
            Ok(emit("RechargeRoll", &[("who", who), ("feature", feature), ("roll", d6.to_string())]))
        }
        "trigger" => {
            let o = fields(v, verb, &["event", "creature", "target", "amount"])?;
            let creature = text(o, "creature", "`trigger`")?;
            let event = text(o, "event", "`trigger`")?;
            let target = || text(o, "target", "`trigger`");
            match event.to_ascii_lowercase().as_str() {
                "turnstart" => Ok(emit("TurnStart", &[("who", creature)])),
                "turnend" => Ok(emit("TurnEnd", &[("who", creature)])),
                "damaged" => Ok(emit("Damaged", &[("who", creature)])),
                "attacks" => Ok(emit("Attacks", &[("by", creature), ("target", target()?)])),
                "hits" => {
                    let amount = o.get("amount").ok_or("`trigger hits` needs the `amount` of damage")?;
                    let amount = arg(amount).map_err(|m| format!("`trigger hits`: `amount`: {m}"))?;
                    Ok(emit("Hits", &[("by", creature), ("target", target()?), ("amount", amount)]))
                }
                e => Err(format!("`trigger`: `{e}` is not turnstart, turnend, damaged, hits or attacks")),
            }
        }
        // `is_verb` admits only the verbs above.
        other => Err(format!("`{other}` is not a verb of the creature dialect")),
    }
}
