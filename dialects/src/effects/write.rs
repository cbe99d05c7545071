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

use super::syntax::{Amount, Cond, Counted, DieCost, Effect, Join, Leg, LegKind, Timing, unified};
use super::tables::{Card, Table};
use crate::Error;
use crate::creature::write::{literal, q, write_rule};
use std::collections::BTreeSet;
use std::fmt::Write;

/// The error codes of this module.
pub mod codes {
    /// An effect sheetd's effect strings do not run yet, named.
    pub const UNSUPPORTED: &str = "effects.unsupported";
    /// A card named twice, or a filter's number that is not one.
    pub const CARD: &str = "effects.card";
}

/// The prelude: players and their stocks, cards and their owners, phases, dice, the events.
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
FLIPPED = "NUMBER"             # a citizen flipped (concurrent_flip_one_citizen)

[channels."PC.PLAYER"]
ID = "STRING"                  # the player's own id (the game's setup writes it)

[channels.PC]
PHASE = "STRING"               # the phase now (the `phase` verb): harvest, roll, …
ACTOR = "STRING"               # the player a leg asking for another player runs for
ACTING = "STRING"              # the player whose action ends (`end_action`)
USER = "STRING"                # the player using a card (`use`)
FLIPPER = "STRING"             # the player flipping a citizen
PRICE = "NUMBER"               # what a domain is bought for (`buy_domain`)
COLUMN = "STRING"              # the effect column an `activate` names
DIE_1 = "NUMBER"               # the dice (`use` sets one)
DIE_2 = "NUMBER"

[kinds.PLAYER]
scope = "PC.PLAYER"

[kinds.CARD]
scope = "PC.CARD"

[[object]]
kind = "PLAYER"
key = "Player"

[events]
Activate = { card = { instance = true }, player = { instance = true }, column = "COLUMN" }   # a card's effect runs
Leg = { card = { instance = true }, player = { instance = true }, leg = {}, other = {} } # one leg (other: a second player, or `yes`)
Then = { card = { instance = true }, player = { instance = true }, leg = {}, other = {} } # what a leg does once its question is answered
Chosen = { card = { instance = true }, player = { instance = true }, option = {} }      # a `choose` answered
Owned = { card = { instance = true }, player = { instance = true } }                    # the player now owns it
Phase = { phase = "PHASE" }                                                             # a phase begins: harvest passives run
EndAction = { player = "ACTING" }                                                       # a player's action ends: action.end passives run
Use = { card = { instance = true }, player = "USER", die = {} }                         # a roll passive used on die 1 or 2
Buy = { card = { instance = true }, player = { instance = true }, cost = "PRICE" }     # a domain bought
Flip = { player = "FLIPPER" }                                                           # a player flips one of their citizens

[[rule]]
name = "a player flips a citizen"
on = "Flip"
do = [
  { ask = { as = "citizen", prompt = "flip one of your citizens", options = { select = "PC.CARD", where = 'TABLE == "citizens" && OWNER == FLIPPER && FLIPPED == 0' } } },
  { set_input = { channel = "FLIPPED", on = "$citizen", value = 1 } },
]
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
        // (Names are the objects' keys, which compare ignoring case.)
        if !seen.insert(card.name.to_ascii_lowercase()) {
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
    start_for(id, "$player", "")
}

/// The action that starts leg `id` of the rule's card for `player`, with `other` (a second
/// player, or `$ok`: when it reads an ask declined, nothing starts).
fn start_for(id: &str, player: &str, other: &str) -> String {
    start_on("Leg", id, player, other)
}

/// [`start_for`] through `event` (`Leg`, or `Then` for what a leg does once asked).
fn start_on(event: &str, id: &str, player: &str, other: &str) -> String {
    format!(
        "{{ emit = {{ event = \"{event}\", args = {{ card = \"$this\", player = {}, leg = {}, other = {} }} }} }}",
        q(player),
        q(id),
        q(other)
    )
}

/// An adjustment of a player's stock: `{ adjust = { channel = "G", on = "$player", by = "-2" } }`.
fn adjust(res: super::syntax::Res, on: &str, by: &str) -> String {
    format!(
        "{{ adjust = {{ channel = {}, on = {}, by = {} }} }}",
        q(&res.letter().to_ascii_uppercase()),
        q(on),
        q(by)
    )
}

impl Writer {
    /// The rule that runs leg `id` of card `card`.
    fn leg_rule(&mut self, card: &str, id: &str, actions: &[String]) {
        let object = format!("object = {{ kind = \"CARD\", key = {} }}", q(card));
        let filters = ["card = \"$this\"".to_owned(), format!("leg = {}", q(id))];
        write_rule(&mut self.rules, &format!("{card}: {id}"), "Leg", &object, &filters, None, None, actions);
    }

    /// The card's object: its table, name, role, area, cost and strength.
    fn object(&mut self, card: &Card) {
        let mut modify = vec![
            format!("{{ var = \"TABLE\", set = {} }}", q(card.table.name())),
            format!("{{ var = \"NAME\", set = {} }}", literal(&card.name)),
        ];
        for (col, var) in
            [("role", "ROLE"), ("area", "AREA"), ("gold_cost", "GOLD_COST"), ("strength", "STRENGTH")]
        {
            if let Some(v) = card.field(col) {
                modify.push(format!("{{ var = \"{var}\", set = {} }}", literal(v)));
            }
        }
        let _ = write!(self.rules, "\n[[object]]\nkind = \"CARD\"\nkey = {}\nmodify = [\n", q(&card.name));
        for m in modify {
            let _ = writeln!(self.rules, "  {m},");
        }
        self.rules.push_str("]\n");
    }

    fn card(&mut self, file: usize, card: &Card) {
        let object = format!("object = {{ kind = \"CARD\", key = {} }}", q(&card.name));
        // Each effect as written and, when it is in the current grammar, its unified form.
        let _ = writeln!(self.rules, "\n# {} ({})", card.name, card.table.name());
        for (col, effect, cell) in &card.effects {
            // (On one comment line: a quoted cell may hold a line break.)
            let written = cell.text.trim().replace(char::is_control, " ");
            let _ = writeln!(self.rules, "#   {col}: {written}");
            let u = unified(effect).replace(char::is_control, " ");
            if u != written {
                let _ = writeln!(self.rules, "#   {:w$}  unified: {u}", "", w = col.len());
            }
        }
        self.object(card);
        // Owned: the owner set, and what the player owns counted — a citizen's role and name, a
        // monster's area, a domain's flags.
        let mut counters: Vec<String> = counter_of(card).into_iter().collect();
        if card.table == Table::Citizens {
            counters.push(format!("OWNED_NAME_{}", ident(&card.name)));
        }
        let label = &card.name;
        for (col, effect, cell) in &card.effects {
            let flags: Vec<&String> = effect
                .legs
                .iter()
                .filter_map(|l| match &l.kind {
                    LegKind::AddFlag(f) => Some(f),
                    _ => None,
                })
                .collect();
            if effect.timing.is_none() && *col == "passive_effect" {
                // An untimed passive holds while the card is owned: its flags.
                if flags.len() == effect.legs.len() {
                    counters.extend(flags.iter().map(|f| format!("FLAG_{}", ident(f))));
                } else {
                    let e = Error {
                        code: codes::UNSUPPORTED,
                        message: format!(
                            "`{}`: a passive without a phase (`harvest.`, `roll.`, `action.end`) holds flags only",
                            unified(effect)
                        ),
                        span: cell.span.clone(),
                    };
                    self.errors.push((file, e));
                }
                continue;
            }
            let errors = self.errors.len();
            let legs = self.legs(file, card, col, effect, cell);
            if self.errors.len() > errors {
                continue;
            }
            self.head(card, col, effect, &legs);
            for (id, actions) in legs {
                self.leg_rule(&card.name, &id, &actions);
            }
        }
        // (Owned once: no effect changes a card's owner, so a count never counts it twice.)
        let mut owned = vec![
            "{ require = { formula = 'OWNER == \"\"', message = \"the card is owned already\" } }".to_owned(),
            "{ set_input = { channel = \"OWNER\", on = \"$card\", value = \"$player\" } }".to_owned(),
        ];
        for c in counters {
            owned.push(format!("{{ adjust = {{ channel = {}, on = \"$player\", by = \"1\" }} }}", q(&c)));
            self.counters.insert(c);
        }
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
        self.buy_rule(card);
        self.refusals(card);
    }

    /// What a card cannot do, refused saying so: an `activate` of a column it has no effect in.
    fn refusals(&mut self, card: &Card) {
        let object = format!("object = {{ kind = \"CARD\", key = {} }}", q(&card.name));
        let columns: Vec<&str> = card.effects.iter().map(|(c, _, _)| *c).collect();
        let guard = if columns.is_empty() {
            None
        } else {
            Some(columns.iter().map(|c| format!("COLUMN != \"{c}\"")).collect::<Vec<_>>().join(" && "))
        };
        let message = if columns.is_empty() {
            format!("{} has no effect to activate", card.name)
        } else {
            format!("{} has effects in {} only", card.name, columns.join(", "))
        };
        let refuse = [format!("{{ require = {{ formula = \"1 == 0\", message = {} }} }}", q(&message))];
        let name = format!("{}: no such effect", card.name);
        let this = ["card = \"$this\"".to_owned()];
        write_rule(&mut self.rules, &name, "Activate", &object, &this, None, guard.as_deref(), &refuse);
    }

    /// A domain bought: the price paid (a cost that cannot be paid refuses the purchase
    /// whole), then owned; a domain someone owns is not for sale. Another card is not for sale
    /// at all.
    fn buy_rule(&mut self, card: &Card) {
        let object = format!("object = {{ kind = \"CARD\", key = {} }}", q(&card.name));
        let (name, buy) = if card.table == Table::Domains {
            let buy = vec![
                "{ require = { formula = 'OWNER == \"\"', message = \"the domain is not for sale: someone owns it\" } }"
                    .to_owned(),
                "{ adjust = { channel = \"G\", on = \"$player\", by = \"-PRICE\" } }".to_owned(),
                "{ emit = { event = \"Owned\", args = { card = \"$this\", player = \"$player\" } } }".to_owned(),
            ];
            (format!("{} is bought", card.name), buy)
        } else {
            let no = format!("{} is no domain: only domains are bought", card.name);
            let refuse = vec![format!("{{ require = {{ formula = \"1 == 0\", message = {} }} }}", q(&no))];
            (format!("{} is not for sale", card.name), refuse)
        };
        let this = ["card = \"$this\"".to_owned()];
        write_rule(&mut self.rules, &name, "Buy", &object, &this, None, None, &buy);
    }

    /// The rule that starts an effect's legs: on `Activate` for the card and column; a
    /// `harvest.` passive on the harvest `Phase`, and an `action.end` one on `EndAction` of the
    /// card's owner, both for its owner; a `roll.` one on `Use` of the card by its owner in the
    /// roll phase, for die 1 and die 2.
    fn head(&mut self, card: &Card, col: &str, effect: &Effect, legs: &[(String, Vec<String>)]) {
        let object = format!("object = {{ kind = \"CARD\", key = {} }}", q(&card.name));
        let label = &card.name;
        let starts =
            |player: &str| -> Vec<String> { legs.iter().map(|(id, _)| start_for(id, player, "")).collect() };
        let this = "card = \"$this\"".to_owned();
        match effect.timing {
            None => {
                let filters = [this, format!("column = {}", q(col))];
                write_rule(
                    &mut self.rules,
                    &format!("{label}: {col}"),
                    "Activate",
                    &object,
                    &filters,
                    None,
                    None,
                    &starts("$player"),
                );
            }
            Some(Timing::Harvest) => {
                let mut actions = vec!["{ read = { as = \"owner\", channel = \"OWNER\" } }".to_owned()];
                actions.extend(starts("$owner"));
                let filters = ["phase = \"harvest\"".to_owned()];
                write_rule(
                    &mut self.rules,
                    &format!("{label}: {col} (harvest)"),
                    "Phase",
                    &object,
                    &filters,
                    None,
                    None,
                    &actions,
                );
            }
            Some(Timing::ActionEnd) => {
                write_rule(
                    &mut self.rules,
                    &format!("{label}: {col} (end of action)"),
                    "EndAction",
                    &object,
                    &[],
                    None,
                    Some("OWNER == ACTING"),
                    &starts("$player"),
                );
            }
            Some(Timing::Roll) => {
                // (`legs` holds the die setting for die 1 and for die 2: see `legs`.)
                // Used by its owner, in the roll phase: otherwise refused, saying which.
                let checks = [
                    "{ require = { formula = \"OWNER == USER\", message = \"only its owner uses it\" } }",
                    "{ require = { formula = 'PHASE == \"roll\"', message = \"it is used in the roll phase\" } }",
                ];
                for (die, (id, _)) in legs.iter().enumerate() {
                    let filters = [this.clone(), format!("die = \"{}\"", die + 1)];
                    let mut actions: Vec<String> = checks.iter().map(|c| (*c).to_owned()).collect();
                    actions.push(start_for(id, "$player", ""));
                    write_rule(
                        &mut self.rules,
                        &format!("{label}: {col} (roll, die {})", die + 1),
                        "Use",
                        &object,
                        &filters,
                        None,
                        None,
                        &actions,
                    );
                }
            }
        }
    }

    /// The legs of an effect, each its id (`special_reward#1`) and actions; a `choose`'s options
    /// written as rules on `Chosen`, their legs as rules on `Leg`. A `roll.` passive is one
    /// `set_one_die`, written once for each die.
    fn legs(
        &mut self,
        file: usize,
        card: &Card,
        col: &str,
        effect: &Effect,
        cell: &super::tables::Cell,
    ) -> Vec<(String, Vec<String>)> {
        if effect.timing == Some(Timing::Roll) {
            let [Leg { kind: LegKind::SetOneDie { target, cost }, .. }] = effect.legs.as_slice() else {
                let e = Error {
                    code: codes::UNSUPPORTED,
                    message: format!("`{}`: a `roll.` passive is one set_one_die", unified(effect)),
                    span: cell.span.clone(),
                };
                self.errors.push((file, e));
                return Vec::new();
            };
            let pay = match cost {
                DieCost::Amount(a) => adjust(a.res, "$player", &format!("-{}", a.n)),
                DieCost::PerOwnedRole { res, role } => {
                    let c = format!("OWNED_{}", ident(role));
                    self.counters.insert(c.clone());
                    adjust(*res, "$player", &format!("-{c}"))
                }
            };
            return (1..=2)
                .map(|die| {
                    let set = format!(
                        "{{ set_input = {{ channel = \"DIE_{die}\", on = \"global\", value = {target} }} }}"
                    );
                    (format!("{col}#die{die}"), vec![pay.clone(), set])
                })
                .collect();
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

    /// A sub-leg (`id/yes`, `id/to`) and the actions that ask and then start it: asked, the
    /// player confirms (or names the other player); declined, it does not start.
    fn asked(
        &mut self,
        card: &Card,
        id: &str,
        mut ask: Vec<String>,
        sub: &str,
        other: &str,
        actions: Vec<String>,
    ) -> Vec<String> {
        let sub = format!("{id}/{sub}");
        let object = format!("object = {{ kind = \"CARD\", key = {} }}", q(&card.name));
        let filters = ["card = \"$this\"".to_owned(), format!("leg = {}", q(&sub))];
        let name = format!("{}: {sub}", card.name);
        write_rule(&mut self.rules, &name, "Then", &object, &filters, None, None, &actions);
        // (On `Then`: a leg's rule may not emit the `Leg` it listens to.)
        ask.push(start_on("Then", &sub, "$player", other));
        ask
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
        let name = &card.name;
        let confirm = |prompt: &str, optional: bool| {
            vec![format!(
                "{{ ask = {{ as = \"ok\", prompt = {}, options = [\"yes\"], decline = {optional} }} }}",
                q(&format!("{name}: {prompt}?"))
            )]
        };
        // The other players: the acting one is written down first, and not offered.
        let player = |as_: &str, prompt: &str, optional: bool| {
            vec![
                "{ set_input = { channel = \"ACTOR\", on = \"global\", value = \"$player\" } }".to_owned(),
                format!(
                    "{{ ask = {{ as = \"{as_}\", prompt = {}, options = {{ select = \"PC.PLAYER\", where = \"ID != ACTOR\" }}, decline = {optional} }} }}",
                    q(&format!("{name}: {prompt}"))
                ),
            ]
        };
        let amount = |a: &Amount| format!("{}{}", a.n, a.res.letter());
        Some(match &leg.kind {
            LegKind::Gain(a) => vec![adjust(a.res, "$player", &a.n.to_string())],
            // One batch: a cost the player cannot pay (G ≥ 0) rejects the whole leg.
            LegKind::Exchange { pay, gain } => vec![
                adjust(pay.res, "$player", &format!("-{}", pay.n)),
                adjust(gain.res, "$player", &gain.n.to_string()),
            ],
            LegKind::Count { by, each } => {
                let counter = match by {
                    Counted::OwnedRole(r) => format!("OWNED_{}", ident(r)),
                    Counted::Area(a) => format!("SLAIN_{}", ident(a)),
                };
                self.counters.insert(counter.clone());
                vec![adjust(each.res, "$player", &format!("{} * {counter}", each.n))]
            }
            LegKind::GainPerOwnedName { name: citizen, each } => {
                let counter = format!("OWNED_NAME_{}", ident(citizen));
                self.counters.insert(counter.clone());
                vec![adjust(each.res, "$player", &format!("{} * {counter}", each.n))]
            }
            LegKind::SelfConvert { pay, gain, optional } => {
                let actions = vec![
                    adjust(pay.res, "$player", &format!("-{}", pay.n)),
                    adjust(gain.res, "$player", &gain.n.to_string()),
                ];
                let ask = confirm(&format!("pay {} to gain {}", amount(pay), amount(gain)), *optional);
                self.asked(card, id, ask, "yes", "$ok", actions)
            }
            LegKind::PayToPlayer { pay, gain, optional } => {
                let actions = vec![
                    adjust(pay.res, "$player", &format!("-{}", pay.n)),
                    adjust(pay.res, "$other", &pay.n.to_string()),
                    adjust(gain.res, "$player", &gain.n.to_string()),
                ];
                let ask = player(
                    "to",
                    &format!("pay {} to which player, for {}?", amount(pay), amount(gain)),
                    *optional,
                );
                self.asked(card, id, ask, "to", "$to", actions)
            }
            LegKind::TakeFromPlayer { take, optional } => {
                let actions = vec![
                    adjust(take.res, "$other", &format!("-{}", take.n)),
                    adjust(take.res, "$player", &take.n.to_string()),
                ];
                let ask = player("from", &format!("take {} from which player?", amount(take)), *optional);
                self.asked(card, id, ask, "from", "$from", actions)
            }
            LegKind::Opaque { key, args } if key == "modify_monster_strength" => vec![
                format!(
                    "{{ ask = {{ as = \"monster\", prompt = {}, options = {{ select = \"PC.CARD\", where = 'TABLE == \"monsters\" && OWNER == \"\"' }} }} }}",
                    q(&format!(
                        "{name}: add {} to which monster's strength?",
                        args.first().copied().unwrap_or(0)
                    ))
                ),
                format!(
                    "{{ add_modifier = {{ var = \"STRENGTH\", type = \"ADD\", value = \"{}\", on = \"$monster\" }} }}",
                    args.first().copied().unwrap_or(0)
                ),
            ],
            LegKind::Opaque { key, .. } if key == "concurrent_flip_one_citizen" => vec![
                "{ each = { as = \"each_player\", select = \"PC.PLAYER\" } }".to_owned(),
                "{ emit = { event = \"Flip\", args = { player = \"$each_player\" } } }".to_owned(),
            ],
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
                        q(&format!("{name}: take which citizen?")),
                        q(&w)
                    ),
                    "{ emit = { event = \"Owned\", args = { card = \"$pick\", player = \"$player\" } } }"
                        .to_owned(),
                ]
            }
            LegKind::Choose(options) => {
                let object = format!("object = {{ kind = \"CARD\", key = {} }}", q(name));
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
                        self.leg_rule(name, &sub, &actions);
                        starts.push(start(&sub));
                    }
                    let filters = ["card = \"$this\"".to_owned(), format!("option = {}", q(&label))];
                    write_rule(
                        &mut self.rules,
                        &format!("{name}: {id} chose {label}"),
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
                        q(&format!("{name}: choose one")),
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
                    message: format!(
                        "`{text}` is not run by sheetd's effect strings here (a flag is a passive's; a die is set by a `roll.` passive)"
                    ),
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
        } else if t.value.contains(['"', '\\']) || t.value.chars().any(char::is_control) {
            Err(format!(
                "`{}`: a value to compare with has no quotes, backslashes or control characters",
                t.value
            ))
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
