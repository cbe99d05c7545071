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
//!
//! A `choose` leg or a citizen pick ends the step on a question, answered by the generic
//! `choose` step.

use crate::creature::game::{Step, fields, input, text};
use data::SheetOp;
use events::Step as Play;
use serde_json::Value as Json;

/// The verbs, as the game file writes them.
pub const VERBS: &[&str] = &["activate", "own"];

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
    let Some((verb, v)) = step.as_object().filter(|o| o.len() == 1).and_then(|o| o.iter().next()) else {
        return Ok(Step::Generic(step.clone()));
    };
    let emit = |event: &str, args: Vec<(&str, String)>| {
        Step::Play(Play::Emit {
            event: event.to_owned(),
            args: args.into_iter().map(|(n, v)| (n.to_owned(), v)).collect(),
        })
    };
    match verb.as_str() {
        "setup" => setup(v).map(Step::Play),
        "activate" => {
            let o = fields(v, verb, &["card", "player", "column"])?;
            Ok(emit(
                "Activate",
                vec![
                    ("card", text(o, "card", "`activate`")?),
                    ("player", text(o, "player", "`activate`")?),
                    ("column", text(o, "column", "`activate`")?),
                ],
            ))
        }
        "own" => {
            let o = fields(v, verb, &["card", "player"])?;
            Ok(emit(
                "Owned",
                vec![("card", text(o, "card", "`own`")?), ("player", text(o, "player", "`own`")?)],
            ))
        }
        _ => Ok(Step::Generic(step.clone())),
    }
}
