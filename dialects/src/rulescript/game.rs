//! RuleScript's game files: `{"dialect": "rulescript", "setup", "steps"}`.
//!
//! `setup` is `{"players": {"me": {"hp", "sp", "hand", "deck", "discards", "removed"}, "opp":
//! {…}}, "cards": [{"id", "card", "controller", "zone", "position"}]}`: the two players with
//! their stocks, and each card on the table by its id (default: its name), of a card of the
//! database, its controller (`me` by default), zone (`ring` by default) and place in its pile
//! (`position`, lower nearer the top; 0 by default). The verbs:
//!
//! | verb | fields | becomes |
//! |---|---|---|
//! | `run_action` | `card`, `action` (1 by default: the card's first `action` property) | `emit Action` |
//! | `play` | `card` | `emit Play`: the card enters the ring; an action card ticks `ACTIONS_PLAYED` (`unac` ends) |
//! | `put` | `card`, `zone`, `position` (optional) | the card's `ZONE` (and `POSITION`) set |
//! | `begin_turn`, `end_turn` | `player` | `emit BeginTurn` / `EndTurn` (`uynt`, `ueot` end) |
//! | `set` | `target` (a player or card id), `attribute` (`HP`, `SP`, `BP`…), `value` | `set_input` |
//! | `phase` | `player`, `phase` (`draw` or `drawphase`, …) | `emit Phase`: `~myDrawPhase~` listeners run |
//! | `event` | `event` (`attacks`, `ringchanges`, …), `card` (the card it is about), `player` (`me`) | `emit Happened` |

use crate::creature::game::{Step, arg, fields, input, text};
use data::SheetOp;
use events::Step as Play;
use serde_json::Value as Json;

/// The verbs, as the game file writes them.
pub const VERBS: &[&str] = &["run_action", "play", "put", "begin_turn", "end_turn", "set", "event", "phase"];

/// The batch that sets a game up.
pub fn setup(setup: &Json) -> Result<Play, String> {
    let o = setup.as_object().ok_or("`setup` is not an object")?;
    if let Some(k) = o.keys().find(|k| !["players", "cards"].contains(&k.as_str())) {
        return Err(format!("unknown key `{k}` in `setup` (expected players, cards)"));
    }
    let mut ops = Vec::new();
    for who in ["me", "opp"] {
        ops.push(SheetOp::AddObject {
            kind: "PLAYER".into(),
            key: "Player".into(),
            id: Some(who.into()),
            parent: None,
        });
        let Some(p) = o.get("players").and_then(|p| p.get(who)) else { continue };
        let p = p.as_object().ok_or_else(|| format!("player `{who}` is not an object"))?;
        for (k, v) in p {
            let channel = k.to_ascii_uppercase();
            if !["HP", "SP", "HAND", "DECK", "DISCARDS", "REMOVED"].contains(&channel.as_str()) {
                return Err(format!("player `{who}`: `{k}` is not hp, sp, hand, deck, discards or removed"));
            }
            let value = input(v).map_err(|m| format!("player `{who}`: `{k}`: {m}"))?;
            ops.push(SheetOp::SetInput { channel, on: Some(who.into()), value });
        }
    }
    for c in o.get("cards").and_then(Json::as_array).map_or(&[][..], Vec::as_slice) {
        let c = c.as_object().ok_or("a setup card is not an object")?;
        if let Some(k) =
            c.keys().find(|k| !["id", "card", "controller", "zone", "position"].contains(&k.as_str()))
        {
            return Err(format!(
                "unknown key `{k}` in a setup card (expected id, card, controller, zone, position)"
            ));
        }
        let card = text(c, "card", "a setup card")?;
        let id = if c.contains_key("id") { text(c, "id", "a setup card")? } else { card.clone() };
        let controller =
            if c.contains_key("controller") { text(c, "controller", "a setup card")? } else { "me".into() };
        let zone = if c.contains_key("zone") { text(c, "zone", "a setup card")? } else { "ring".into() };
        ops.push(SheetOp::AddObject { kind: "CARD".into(), key: card, id: Some(id.clone()), parent: None });
        for (channel, v) in [("CONTROLLER", controller), ("ZONE", zone)] {
            ops.push(SheetOp::SetInput {
                channel: channel.into(),
                on: Some(id.clone()),
                value: formula::Value::String(v.as_str().into()),
            });
        }
        if let Some(p) = c.get("position") {
            let value = input(p).map_err(|m| format!("a setup card: `position`: {m}"))?;
            ops.push(SheetOp::SetInput { channel: "POSITION".into(), on: Some(id.clone()), value });
        }
    }
    Ok(Play::Ops(ops))
}

fn emit(event: &str, args: Vec<(&str, String)>) -> Step {
    Step::Play(Play::Emit {
        event: event.to_owned(),
        args: args.into_iter().map(|(n, v)| (n.to_owned(), v)).collect(),
    })
}

/// A step of the game file: a verb made into what runs, or a generic step as it is.
pub fn step(step: &Json) -> Result<Step, String> {
    let Some((verb, v)) = step.as_object().filter(|o| o.len() == 1).and_then(|o| o.iter().next()) else {
        return Ok(Step::Generic(step.clone()));
    };
    match verb.as_str() {
        "setup" => setup(v).map(Step::Play),
        "run_action" => {
            let o = fields(v, verb, &["card", "action"])?;
            let n = match o.get("action") {
                Some(a) => arg(a).map_err(|m| format!("`run_action`: `action`: {m}"))?,
                None => "1".to_owned(),
            };
            Ok(emit("Action", vec![("card", text(o, "card", "`run_action`")?), ("n", n)]))
        }
        "play" => {
            let o = fields(v, verb, &["card"])?;
            Ok(emit("Play", vec![("card", text(o, "card", "`play`")?)]))
        }
        "put" => {
            let o = fields(v, verb, &["card", "zone", "position"])?;
            let zone = text(o, "zone", "`put`")?.to_ascii_lowercase();
            let on = Some(text(o, "card", "`put`")?);
            let mut ops = vec![SheetOp::SetInput {
                channel: "ZONE".into(),
                on: on.clone(),
                value: formula::Value::String(zone.as_str().into()),
            }];
            if let Some(p) = o.get("position") {
                let value = input(p).map_err(|m| format!("`put`: `position`: {m}"))?;
                ops.push(SheetOp::SetInput { channel: "POSITION".into(), on, value });
            }
            Ok(Step::Play(Play::Ops(ops)))
        }
        "begin_turn" | "end_turn" => {
            let o = fields(v, verb, &["player"])?;
            let event = if verb == "begin_turn" { "BeginTurn" } else { "EndTurn" };
            Ok(emit(event, vec![("player", text(o, "player", verb)?)]))
        }
        "set" => {
            let o = fields(v, verb, &["target", "attribute", "value"])?;
            let value =
                input(o.get("value").ok_or("`set` has no `value`")?).map_err(|m| format!("`set`: {m}"))?;
            let channel = text(o, "attribute", "`set`")?.to_ascii_uppercase();
            Ok(Step::Play(Play::Ops(vec![SheetOp::SetInput {
                channel,
                on: Some(text(o, "target", "`set`")?),
                value,
            }])))
        }
        "phase" => {
            let o = fields(v, verb, &["player", "phase"])?;
            let phase = text(o, "phase", "`phase`")?.to_ascii_lowercase();
            let phase = if phase.ends_with("phase") { phase } else { format!("{phase}phase") };
            Ok(emit("Phase", vec![("player", text(o, "player", "`phase`")?), ("phase", phase)]))
        }
        "event" => {
            let o = fields(v, verb, &["event", "card", "player"])?;
            let card = if o.contains_key("card") { text(o, "card", "`event`")? } else { String::new() };
            let player =
                if o.contains_key("player") { text(o, "player", "`event`")? } else { "me".to_owned() };
            let event = text(o, "event", "`event`")?.to_ascii_lowercase();
            Ok(emit("Happened", vec![("event", event), ("card", card), ("player", player)]))
        }
        _ => Ok(Step::Generic(step.clone())),
    }
}
