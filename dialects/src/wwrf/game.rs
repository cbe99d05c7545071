//! WWRF's game files: `{"dialect": "wwrf", "setup", "steps"}`.
//!
//! `setup` is `{"players": {"alice": "Fortune Teller", …}}`: each player by id with the role
//! they hold. Phases are numbered as the prelude counts them: `Day 0` = 0, `Night 1` = 1,
//! `Day 1` = 2, `Night 2` = 3, … The verbs:
//!
//! | verb | fields | becomes |
//! |---|---|---|
//! | `start_phase` | `phase` (`Day 0`, `Night 1`) | `emit Begin`: the phase set, `Starting` the first time, then its start triggers |
//! | `advance_phase` | none (`{}`) | `emit Advance`: the phase's end timings (fourth pre-end … end), the killings they queued resolved, then the next phase's start |
//! | `execute` | `line` (the ability's number in its role's `__Formalized__` list, from 1), `by` (the player) | `emit Execute`: the ability's prompt answered — its selection asked, then it runs now (a start or immediate trigger) or when its timing comes |
//! | `set_target` | `player`, `target` (a player id, or `""` for none) | `set_input TARGET`: the player's `@Target` |
//! | `vote` | `player`, `for` | `emit Vote`: the player's public voting power added to the votes of `for` (by day, the living) |
//!
//! The shared `choose` answers an ability's selection; `roll` a die.

use crate::creature::game::{Step, emit, fields, one_key, text};
use data::SheetOp;
use events::Step as Play;
use serde_json::Value as Json;

/// The verbs, as the game file writes them.
pub const VERBS: &[&str] = &["start_phase", "advance_phase", "execute", "set_target", "vote"];

/// `Day 1` → 2, `Night 2` → 3: the phase's place in the prelude's count.
pub fn phase_index(p: &str) -> Result<u64, String> {
    let mut w = p.split_whitespace();
    let (kind, n, rest) = (w.next(), w.next(), w.next());
    let n: u64 =
        n.and_then(|n| n.parse().ok()).ok_or_else(|| format!("`{p}` is no phase: `Day 1`, `Night 2`"))?;
    match (kind, rest) {
        (Some("Day"), None) => Ok(2 * n),
        (Some("Night"), None) if n >= 1 => Ok(2 * n - 1),
        (Some("Night"), None) => Err(format!("`{p}`: nights are numbered from 1 (Day 0, Night 1, Day 1, …)")),
        _ => Err(format!("`{p}` is no phase: `Day 1`, `Night 2`")),
    }
}

/// The batch that sets a game up: each player with their role, alive.
pub fn setup(setup: &Json) -> Result<Play, String> {
    let o = setup.as_object().ok_or("`setup` is not an object")?;
    if let Some(k) = o.keys().find(|k| k.as_str() != "players") {
        return Err(format!("unknown key `{k}` in `setup` (expected players)"));
    }
    let players = o.get("players").and_then(Json::as_object).ok_or("`setup` has no `players` object")?;
    let mut ops = Vec::new();
    for (id, role) in players {
        let role = role.as_str().ok_or_else(|| format!("player `{id}`: the role is a role's name"))?;
        ops.push(SheetOp::AddObject {
            kind: "ROLE".into(),
            key: role.to_owned(),
            id: Some(id.clone()),
            parent: None,
        });
        let own = formula::Value::String(id.as_str().into());
        ops.push(SheetOp::SetInput { channel: "ID".into(), on: Some(id.clone()), value: own });
        ops.push(SheetOp::SetInput {
            channel: "ALIVE".into(),
            on: Some(id.clone()),
            value: formula::Value::Number(1.into()),
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
        "start_phase" => {
            let o = fields(v, verb, &["phase"])?;
            let n = phase_index(&text(o, "phase", "`start_phase`")?)?;
            Ok(emit("Begin", &[("phase", n.to_string())]))
        }
        "advance_phase" => {
            fields(v, verb, &[])?;
            Ok(emit("Advance", &[]))
        }
        "execute" => {
            let o = fields(v, verb, &["line", "by"])?;
            let line = o
                .get("line")
                .and_then(Json::as_u64)
                .filter(|n| *n >= 1)
                .ok_or("`execute`: `line` is the ability's number in its role's list, from 1")?;
            Ok(emit("Execute", &[("player", text(o, "by", "`execute`")?), ("line", line.to_string())]))
        }
        "set_target" => {
            let o = fields(v, verb, &["player", "target"])?;
            let player = text(o, "player", "`set_target`")?;
            let target = text(o, "target", "`set_target`")?;
            let value = formula::Value::String(target.as_str().into());
            Ok(Step::Play(Play::Ops(vec![SheetOp::SetInput {
                channel: "TARGET".into(),
                on: Some(player),
                value,
            }])))
        }
        "vote" => {
            let o = fields(v, verb, &["player", "for"])?;
            Ok(emit("Vote", &[("voter", text(o, "player", "`vote`")?), ("vote", text(o, "for", "`vote`")?)]))
        }
        _ => Ok(Step::Generic(step.clone())),
    }
}
