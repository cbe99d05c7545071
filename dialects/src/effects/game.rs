//! Effect strings' game files: `{"dialect": "effects", "setup", "steps"}`.
//!
//! `setup` is `{"players": {"p1": {"g", "m", "s", "v"}, …}, "cards": [{"id", "card"}]}`: the
//! players with their stocks, and each card in play by its id (default: its name) of a card of
//! the tables. The verbs:
//!
//! | verb | fields | becomes |
//! |---|---|---|
//! | `activate` | `card`, `player`, `column` (the card's effect column: `special_payout_on_turn`, …) | `emit Activate`: the effect's legs run, each atomic |
//! | `own` | `card`, `player` | `emit Owned`: the player owns the citizen or domain, or slew the monster |
//! | `phase` | `phase` (`harvest`, `roll`, …) | `emit Phase`: the owners' `harvest.` passives run in the harvest phase |
//! | `use` | `card`, `player`, `die` (1 or 2) | `emit Use`: the owner's `roll.` passive sets that die, in the roll phase |
//! | `end_action` | `player` | `emit EndAction`: the player's `action.end` passives run |
//! | `buy_domain` | `player`, `domain`, `cost` | `emit Buy`: the cost paid (refused whole if it cannot be), the domain owned |
//! | `accept`, `decline` | `choice` | answers an `optional` question: yes, or none |
//!
//! A `choose` leg, a citizen pick, an `optional` or a player to pay or take from ends the step
//! on a question, answered by the generic `choose` step (or `accept`, `decline`).

use crate::creature::game::{Step, arg, emit, fields, input, one_key, text};
use data::SheetOp;
use events::Step as Play;
use serde_json::Value as Json;

/// The verbs, as the game file writes them.
pub const VERBS: &[&str] =
    &["activate", "own", "phase", "use", "end_action", "buy_domain", "accept", "decline"];

/// The batch that sets a game up.
pub fn setup(setup: &Json) -> Result<Play, String> {
    let o = setup.as_object().ok_or("`setup` is not an object")?;
    if let Some(k) = o.keys().find(|k| !["players", "cards"].contains(&k.as_str())) {
        return Err(format!("unknown key `{k}` in `setup` (expected players, cards)"));
    }
    let mut ops = Vec::new();
    let players =
        o.get("players").map_or(Ok(None), |p| p.as_object().map(Some).ok_or("`players` is not an object"))?;
    for (id, stocks) in players.into_iter().flatten() {
        ops.push(SheetOp::AddObject {
            kind: "PLAYER".into(),
            key: "Player".into(),
            id: Some(id.clone()),
            parent: None,
        });
        let own_id = formula::Value::String(id.as_str().into());
        ops.push(SheetOp::SetInput { channel: "ID".into(), on: Some(id.clone()), value: own_id });
        let stocks = stocks.as_object().ok_or_else(|| format!("player `{id}` is not an object"))?;
        for (k, v) in stocks {
            let channel = k.to_ascii_uppercase();
            if !["G", "M", "S", "V"].contains(&channel.as_str()) {
                return Err(format!("player `{id}`: `{k}` is not g, m, s or v"));
            }
            let value = input(v).map_err(|m| format!("player `{id}`: `{k}`: {m}"))?;
            ops.push(SheetOp::SetInput { channel, on: Some(id.clone()), value });
        }
    }
    for c in o.get("cards").and_then(Json::as_array).map_or(&[][..], Vec::as_slice) {
        let c = c.as_object().ok_or("a setup card is not an object")?;
        if let Some(k) = c.keys().find(|k| !["id", "card"].contains(&k.as_str())) {
            return Err(format!("unknown key `{k}` in a setup card (expected id, card)"));
        }
        let card = text(c, "card", "a setup card")?;
        let id = if c.contains_key("id") { text(c, "id", "a setup card")? } else { card.clone() };
        ops.push(SheetOp::AddObject { kind: "CARD".into(), key: card, id: Some(id.clone()), parent: None });
        ops.push(SheetOp::SetInput {
            channel: "OWNER".into(),
            on: Some(id),
            value: formula::Value::String("".into()),
        });
    }
    Ok(Play::Ops(ops))
}

/// A step of the game file: a verb made into what runs, or a generic step as it is.
pub fn step(step: &Json) -> Result<Step, String> {
    let Some((verb, v)) = one_key(step) else {
        return Ok(Step::Generic(step.clone()));
    };
    match verb.as_str() {
        "setup" => setup(v).map(Step::Play),
        "activate" => {
            let o = fields(v, verb, &["card", "player", "column"])?;
            Ok(emit(
                "Activate",
                &[
                    ("card", text(o, "card", "`activate`")?),
                    ("player", text(o, "player", "`activate`")?),
                    ("column", text(o, "column", "`activate`")?),
                ],
            ))
        }
        "own" => {
            let o = fields(v, verb, &["card", "player"])?;
            Ok(emit("Owned", &[("card", text(o, "card", "`own`")?), ("player", text(o, "player", "`own`")?)]))
        }
        "phase" => {
            let o = fields(v, verb, &["phase"])?;
            Ok(emit("Phase", &[("phase", text(o, "phase", "`phase`")?.to_ascii_lowercase())]))
        }
        "use" => {
            let o = fields(v, verb, &["card", "player", "die"])?;
            let die =
                arg(o.get("die").ok_or("`use` has no `die`")?).map_err(|m| format!("`use`: `die`: {m}"))?;
            if die != "1" && die != "2" {
                return Err(format!("`use`: `die` is 1 or 2, not {die}"));
            }
            Ok(emit(
                "Use",
                &[("card", text(o, "card", "`use`")?), ("player", text(o, "player", "`use`")?), ("die", die)],
            ))
        }
        "end_action" => {
            let o = fields(v, verb, &["player"])?;
            Ok(emit("EndAction", &[("player", text(o, "player", "`end_action`")?)]))
        }
        "buy_domain" => {
            let o = fields(v, verb, &["player", "domain", "cost"])?;
            let cost = arg(o.get("cost").ok_or("`buy_domain` has no `cost`")?)
                .map_err(|m| format!("`buy_domain`: `cost`: {m}"))?;
            Ok(emit(
                "Buy",
                &[
                    ("card", text(o, "domain", "`buy_domain`")?),
                    ("player", text(o, "player", "`buy_domain`")?),
                    ("cost", cost),
                ],
            ))
        }
        "accept" | "decline" => {
            let o = fields(v, verb, &["choice"])?;
            let choice = o
                .get("choice")
                .and_then(Json::as_u64)
                .ok_or_else(|| format!("`{verb}` needs `choice`, the question's number"))?;
            let picks = if verb == "accept" { vec!["yes".to_owned()] } else { Vec::new() };
            Ok(Step::Play(Play::Choose { choice, picks }))
        }
        _ => Ok(Step::Generic(step.clone())),
    }
}
