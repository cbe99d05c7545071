//! Effect strings compiled to a native ruleset with event rules, on the prelude ([`PRELUDE`]):
//! players with the stocks `G`, `M`, `S`, `V`; every card of the tables an object with its
//! table, name, role, area, cost and strength, and the player who owns it (a citizen or
//! domain) or slew it (a monster).
//!
//! An `Activate {card, player, column}` runs a card's effect in a column: its head rule starts
//! each leg in order (`Leg`), and each leg is a rule, one atomic batch — a gain adjusts a
//! stock; an `exchange` pays and gains in one batch, so that a cost that cannot be paid (a
//! stock's bound) rejects the leg and changes nothing; a `count` pays so much per counted
//! thing, read when it pays; `choose` asks which option (`Chosen`), whose legs then run; a
//! citizen pick (`<citizens where …>`) asks among the citizens on the board that no one owns
//! and the filter selects, and gives the one picked (`Owned`). What a player owns is counted
//! as it changes: `OWNED_WORKER` (citizens by role), `SLAIN_HILLS` (monsters by area).

use super::syntax::{Amount, Cond, Counted, Effect, Join, Leg, LegKind, unified};
use super::tables::{Card, Table};
use crate::Error;
use crate::creature::write::{q, write_rule};
use std::collections::BTreeSet;
use std::fmt::Write;

/// The error codes of this module.
pub mod codes {
    /// An effect sheetd's effect strings do not run yet, named.
    pub const UNSUPPORTED: &str = "effects.unsupported";
    /// A card named twice, or a filter's number that is not one.
    pub const CARD: &str = "effects.card";
}

/// The prelude: players and their stocks, cards and their owners, the events.
pub const PRELUDE: &str = r#"# Effect strings' prelude: players, cards, and what runs an effect.
[ruleset]
name = "effect strings prelude"

[scopes]
"PC.PLAYER" = "PC"
"PC.CARD" = "PC"

[stocks."PC.PLAYER"]
G = { min = "0" }              # gold
M = { min = "0" }
S = { min = "0" }
V = { min = "0" }              # victory points

[variables."PC.CARD"]
TABLE = "STRING"               # citizens, domains, monsters
NAME = "STRING"
ROLE = "STRING"
AREA = "STRING"
GOLD_COST = "NUMBER"
STRENGTH = "NUMBER"

[channels."PC.CARD"]
OWNER = "STRING"               # the player who owns it (slew it, for a monster); "" for none

[kinds.PLAYER]
scope = "PC.PLAYER"

[kinds.CARD]
scope = "PC.CARD"

[[object]]
kind = "PLAYER"
key = "Player"

[events]
Activate = { card = { instance = true }, player = { instance = true }, column = {} }   # a card's effect runs
Leg = { card = { instance = true }, player = { instance = true }, leg = {} }            # one leg of it
Chosen = { card = { instance = true }, player = { instance = true }, option = {} }      # a `choose` answered
Owned = { card = { instance = true }, player = { instance = true } }                    # the player now owns it
"#;

/// What the compiler keeps while it writes.
struct Writer {
    rules: String,
    errors: Vec<(usize, Error)>,
    /// The players' counters the cards need: `OWNED_WORKER`, `SLAIN_HILLS`.
    counters: BTreeSet<String>,
}

/// The cards (each with the index of its file) as the native text after the prelude; every
/// error, each in its file.
pub fn compile(cards: &[(usize, Card)]) -> Result<String, Vec<(usize, Error)>> {
    let mut w = Writer { rules: String::new(), errors: Vec::new(), counters: BTreeSet::new() };
    let mut seen = BTreeSet::new();
    for (file, card) in cards {
        if !seen.insert(card.name.clone()) {
            let e = Error {
                code: codes::CARD,
                message: format!("the card `{}` is in the tables twice", card.name),
                span: card.name_span.clone(),
            };
            w.errors.push((*file, e));
            continue;
        }
        w.card(*file, card);
    }
    if !w.errors.is_empty() {
        return Err(w.errors);
    }
    let mut out = String::from("# The cards, compiled by sheetd's effect strings dialect.\n");
    if !w.counters.is_empty() {
        out.push_str("\n[stocks.\"PC.PLAYER\"]               # what each player owns (or slew), counted\n");
        for c in &w.counters {
            let _ = writeln!(out, "{} = {{ min = \"0\" }}", q(c));
        }
    }
    out.push_str(&w.rules);
    Ok(out)
}

/// `Hills` → `HILLS`, `holy_citizen` → `HOLY_CITIZEN`: a counter's name part.
fn ident(t: &str) -> String {
    t.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' }).collect()
}

/// The counter a card adds to when it is owned: its role (a citizen) or area (a monster).
fn counter_of(card: &Card) -> Option<String> {
    match card.table {
        Table::Citizens => {
            card.field("role").filter(|r| !r.is_empty()).map(|r| format!("OWNED_{}", ident(r)))
        }
        Table::Monsters => {
            card.field("area").filter(|a| !a.is_empty()).map(|a| format!("SLAIN_{}", ident(a)))
        }
        Table::Domains => None,
    }
}

/// The action that starts leg `id` of the rule's card, for the same player.
fn start(id: &str) -> String {
    format!(
        "{{ emit = {{ event = \"Leg\", args = {{ card = \"$this\", player = \"$player\", leg = {} }} }} }}",
        q(id)
    )
}

impl Writer {
    /// The rule that runs leg `id` of card `card`.
    fn leg_rule(&mut self, card: &str, id: &str, actions: &[String]) {
        let object = format!("object = {{ kind = \"CARD\", key = {} }}", q(card));
        let filters = ["card = \"$this\"".to_owned(), format!("leg = {}", q(id))];
        write_rule(&mut self.rules, &format!("{card}: {id}"), "Leg", &object, &filters, None, None, actions);
    }

    fn card(&mut self, file: usize, card: &Card) {
        let object = format!("object = {{ kind = \"CARD\", key = {} }}", q(&card.name));
        let mut modify = vec![
            format!("{{ var = \"TABLE\", set = {} }}", q(card.table.name())),
            format!("{{ var = \"NAME\", set = {} }}", q(&card.name)),
        ];
        for (col, var) in
            [("role", "ROLE"), ("area", "AREA"), ("gold_cost", "GOLD_COST"), ("strength", "STRENGTH")]
        {
            if let Some(v) = card.field(col) {
                modify.push(format!("{{ var = \"{var}\", set = {} }}", q(v)));
            }
        }
        let _ = write!(self.rules, "\n[[object]]\nkind = \"CARD\"\nkey = {}\nmodify = [\n", q(&card.name));
        for m in modify {
            let _ = writeln!(self.rules, "  {m},");
        }
        self.rules.push_str("]\n");
        // Owned: the owner set, and what the player owns counted.
        let mut owned =
            vec!["{ set_input = { channel = \"OWNER\", on = \"$card\", value = \"$player\" } }".to_owned()];
        if let Some(c) = counter_of(card) {
            owned.push(format!("{{ adjust = {{ channel = {}, on = \"$player\", by = \"1\" }} }}", q(&c)));
            self.counters.insert(c);
        }
        let label = &card.name;
        write_rule(
            &mut self.rules,
            &format!("{label} is owned"),
            "Owned",
            &object,
            &["card = \"$this\"".to_owned()],
            None,
            None,
            &owned,
        );
        for (col, effect, cell) in &card.effects {
            let errors = self.errors.len();
            let legs = self.legs(file, card, col, effect, cell);
            if self.errors.len() > errors {
                continue;
            }
            let head: Vec<String> = legs.iter().map(|(id, _)| start(id)).collect();
            let filters = ["card = \"$this\"".to_owned(), format!("column = {}", q(col))];
            write_rule(
                &mut self.rules,
                &format!("{label}: {col}"),
                "Activate",
                &object,
                &filters,
                None,
                None,
                &head,
            );
            for (id, actions) in legs {
                self.leg_rule(&card.name, &id, &actions);
            }
        }
    }

    /// The legs of an effect, each its id (`special_reward#1`) and actions; a `choose`'s options
    /// written as rules on `Chosen`, their legs as rules on `Leg`.
    fn legs(
        &mut self,
        file: usize,
        card: &Card,
        col: &str,
        effect: &Effect,
        cell: &super::tables::Cell,
    ) -> Vec<(String, Vec<String>)> {
        if effect.timing.is_some() {
            let e = Error {
                code: codes::UNSUPPORTED,
                message: format!(
                    "a timed effect (`{}`) is not run by sheetd's effect strings yet",
                    unified(effect)
                ),
                span: cell.span.clone(),
            };
            self.errors.push((file, e));
            return Vec::new();
        }
        let mut out = Vec::new();
        for (i, leg) in effect.legs.iter().enumerate() {
            let id = format!("{col}#{}", i + 1);
            if let Some(actions) = self.leg(file, card, &id, leg, cell) {
                out.push((id, actions));
            }
        }
        out
    }

    // long: one arm per kind of leg, each a few lines.
    fn leg(
        &mut self,
        file: usize,
        card: &Card,
        id: &str,
        leg: &Leg,
        cell: &super::tables::Cell,
    ) -> Option<Vec<String>> {
        let adjust = |a: &Amount, by: String| {
            format!(
                "{{ adjust = {{ channel = {}, on = \"$player\", by = {} }} }}",
                q(&a.res.letter().to_ascii_uppercase()),
                q(&by)
            )
        };
        Some(match &leg.kind {
            LegKind::Gain(a) => vec![adjust(a, a.n.to_string())],
            // One batch: a cost the player cannot pay (G ≥ 0) rejects the whole leg.
            LegKind::Exchange { pay, gain } => {
                vec![adjust(pay, format!("-{}", pay.n)), adjust(gain, gain.n.to_string())]
            }
            LegKind::Count { by, each } => {
                let counter = match by {
                    Counted::OwnedRole(r) => format!("OWNED_{}", ident(r)),
                    Counted::Area(a) => format!("SLAIN_{}", ident(a)),
                };
                self.counters.insert(counter.clone());
                vec![adjust(each, format!("{} * {counter}", each.n))]
            }
            LegKind::Take(f) => {
                let mut w = "TABLE == \"citizens\" && OWNER == \"\"".to_owned();
                if let Some(c) = &f.cond {
                    match cond(c) {
                        Ok(c) => w = format!("{w} && ({c})"),
                        Err(m) => {
                            self.errors.push((
                                file,
                                Error { code: codes::CARD, message: m, span: cell.inner(leg.span.clone()) },
                            ));
                            return None;
                        }
                    }
                }
                vec![
                    format!(
                        "{{ ask = {{ as = \"pick\", prompt = {}, options = {{ select = \"PC.CARD\", where = {} }} }} }}",
                        q(&format!("{}: take which citizen?", card.name)),
                        q(&w)
                    ),
                    "{ emit = { event = \"Owned\", args = { card = \"$pick\", player = \"$player\" } } }"
                        .to_owned(),
                ]
            }
            LegKind::Choose(options) => {
                let object = format!("object = {{ kind = \"CARD\", key = {} }}", q(&card.name));
                let mut labels: Vec<String> = Vec::new();
                for (k, option) in options.iter().enumerate() {
                    let mut label = String::new();
                    for (j, l) in option.iter().enumerate() {
                        if j > 0 {
                            label.push_str(" + ");
                        }
                        label.push_str(&unified(&Effect { timing: None, legs: vec![l.clone()] }));
                    }
                    if labels.contains(&label) {
                        label = format!("{label} ({})", k + 1);
                    }
                    // The option's legs, started in order when it is chosen.
                    let mut starts = Vec::new();
                    for (j, l) in option.iter().enumerate() {
                        let sub = format!("{id}/{}#{}", k + 1, j + 1);
                        let actions = self.leg(file, card, &sub, l, cell)?;
                        self.leg_rule(&card.name, &sub, &actions);
                        starts.push(start(&sub));
                    }
                    let filters = ["card = \"$this\"".to_owned(), format!("option = {}", q(&label))];
                    write_rule(
                        &mut self.rules,
                        &format!("{}: {id} chose {label}", card.name),
                        "Chosen",
                        &object,
                        &filters,
                        None,
                        None,
                        &starts,
                    );
                    labels.push(label);
                }
                let options: Vec<String> = labels.iter().map(|l| q(l)).collect();
                vec![
                    format!(
                        "{{ ask = {{ as = \"option\", prompt = {}, options = [{}] }} }}",
                        q(&format!("{}: choose one", card.name)),
                        options.join(", ")
                    ),
                    "{ emit = { event = \"Chosen\", args = { card = \"$this\", player = \"$player\", option = \"$option\" } } }"
                        .to_owned(),
                ]
            }
            other => {
                let text =
                    unified(&Effect { timing: None, legs: vec![Leg { kind: other.clone(), span: 0..0 }] });
                let e = Error {
                    code: codes::UNSUPPORTED,
                    message: format!("`{text}` is not run by sheetd's effect strings yet"),
                    span: cell.inner(leg.span.clone()),
                };
                self.errors.push((file, e));
                return None;
            }
        })
    }
}

/// A filter's condition as a native formula over a card: `role==soldier and gold_cost<=2` →
/// `(ROLE == "soldier" && GOLD_COST <= 2)`; `and` binds tighter than `or`.
fn cond(c: &Cond) -> Result<String, String> {
    let term = |t: &super::syntax::Term| -> Result<String, String> {
        let var = t.field.to_ascii_uppercase();
        if ["gold_cost", "strength"].contains(&t.field.as_str()) {
            let n: u32 =
                t.value.parse().map_err(|_| format!("`{}`: `{}` is not a number", t.field, t.value))?;
            Ok(format!("{var} {} {n}", t.op))
        } else if ["==", "!="].contains(&t.op) {
            Ok(format!("{var} {} {}", t.op, q(&t.value)))
        } else {
            Err(format!("`{}{}{}`: text compares with == or !=", t.field, t.op, t.value))
        }
    };
    let mut groups = vec![vec![term(&c.first)?]];
    for (j, t) in &c.rest {
        let t = term(t)?;
        match j {
            Join::And => groups.last_mut().map(|g| g.push(t)).unwrap_or_default(),
            Join::Or => groups.push(vec![t]),
        }
    }
    let groups: Vec<String> = groups.iter().map(|g| format!("({})", g.join(" && "))).collect();
    Ok(groups.join(" || "))
}
