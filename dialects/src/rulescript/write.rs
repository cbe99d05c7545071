//! RuleScript cards compiled to a native ruleset with event rules, on the prelude
//! ([`PRELUDE`]): players `me` and `opp` with HP, SP and pile counts as stocks; cards as
//! instances with BP (its modifiers applied in the order they are added, so that
//! `bp(+200) & bp(x2)` on 300 gives 1000), ability flags, a zone and a controller.
//!
//! Each action statement becomes a rule on the `Action` event for its card (its cost
//! required and paid, its `[[if]]` the guard of it and of the `[[else]]` rule, its target asked
//! when it is a choice) that starts the effects; each effect is a rule on the `Step` event,
//! which starts the next when it succeeds, so that effects apply in the order written and a
//! failure stops the rest. Restrictions end lasting effects on the turn clocks.

use super::cards::Card;
use super::syntax::{self, BinOp, Cond, Effect, Expr, Filter, Op, Statement, Until, Value};
use crate::Error;
use crate::creature::write::{literal, q};
use std::fmt::Write;
use std::ops::Range;

/// The error codes of this module.
pub mod codes {
    /// Something RuleScript has that sheetd does not run yet, named.
    pub const UNSUPPORTED: &str = "rulescript.unsupported";
    /// A card defined twice.
    pub const DUPLICATE: &str = "rulescript.duplicate";
}

/// The prelude: the players, the cards, their zones and turns.
pub const PRELUDE: &str = r#"# RuleScript's prelude: players, cards, zones and turns.
[ruleset]
name = "rulescript prelude"
order = "applied"              # effects apply in the order they are written

[scopes]
"PC.PLAYER" = "PC"
"PC.CARD" = "PC"

[stocks."PC.PLAYER"]
HP = {}
SP = { min = "0", bounds = "clamp" }
HAND = { min = "0" }           # how many cards each pile holds
DECK = { min = "0" }
DISCARDS = { min = "0" }
REMOVED = { min = "0" }

[variables."PC.PLAYER"]
CANTPLAYAC = "NUMBER"
CANTPLAYRE = "NUMBER"

[clocks."PC.PLAYER"]
TURN_STARTS = {}
TURN_ENDS = {}
SHUFFLES = {}                  # times shuffle() shuffled the player's deck (the front end shuffles it)

[clocks.PC]
ACTIONS_PLAYED = {}            # action cards played: `unac` ends there

[channels.PC]
PLAYED = { format = "STRING", holds = "PC.CARD" }   # the card a Play is about
TRIGGER = { format = "STRING", holds = "PC.CARD" }  # the card a Happened event is about

[variables."PC.CARD"]
BP = "NUMBER"
TYPE = "STRING"
NAME = "STRING"                # the card's name, lower case (`"Emulate"` in a target)
RULES = "NUMBER"               # 1: it has rules (`powerful`); 0: none (`powerless`)
ABTRIGGER = "NUMBER"           # 1: it has an `action` (an activated ability)
ABAUTO = "NUMBER"              # 1: it has an `auto` ability
UNBLOCKABLE = "NUMBER"
CANTATTACK = "NUMBER"
CANTBLOCK = "NUMBER"
UNLIMITEDBACKUP = "NUMBER"
UNFREEZABLE = "NUMBER"
PIERCE = "NUMBER"
PREVENTPIERCE = "NUMBER"
RUSH = "NUMBER"
FROSTED = "NUMBER"

[channels."PC.CARD"]
ZONE = "STRING"                # ring, hand, deck, discards, removed
CONTROLLER = "STRING"          # me or opp
FROZEN = "NUMBER"
POSITION = "NUMBER"            # its place in its pile, as the front end gives it: lower is nearer the top
FRESH = "NUMBER"               # entered the ring this turn
ATTACKING = "NUMBER"           # combat this turn, from the `attacks`, `blocks`, `blocked` and
BLOCKING = "NUMBER"            # `backedUp` events (or a `set` step); cleared when a turn ends
BLOCKED = "NUMBER"
BACKEDUP = "NUMBER"
UATTACK = "NUMBER"             # in a united attack (a `set` step)

[kinds.PLAYER]
scope = "PC.PLAYER"

[kinds.CARD]
scope = "PC.CARD"

[[object]]
kind = "PLAYER"
key = "Player"

[events]
Action = { card = { instance = true }, n = {} }
Step = { step = {}, card = { instance = true }, target = {}, ok = {} }   # an effect starts
Next = { step = {}, card = { instance = true }, target = {}, ok = {} }   # … (a rule may not emit the event it listens to:
Then = { step = {}, card = { instance = true }, target = {}, ok = {} }   #    an effect listens to one its starters do not)
Decide = { step = {}, card = { instance = true } }   # a statement's coins are in: its branches start
Confirmed = { step = {}, card = { instance = true }, target = {}, ok = {} }   # the player said yes to a `command?()`
Phase = { player = { instance = true }, phase = {} }  # a player's phase begins (drawphase, endphase, …)
Happened = { event = {}, card = "TRIGGER", player = {} }   # a game event (attacks, ringchanges, …) by a card
BeginTurn = { player = { instance = true } }
EndTurn = { player = { instance = true } }
Play = { card = "PLAYED" }

[[rule]]
name = "a card is played into the ring"
on = "Play"
do = [
  { set_input = { channel = "ZONE", on = "$card", value = "ring" } },
  { set_input = { channel = "FRESH", on = "$card", value = 1 } },
]

[[rule]]
name = "a card attacks"
on = "Happened"
where = { event = "attacks" }
do = [{ set_input = { channel = "ATTACKING", on = "$card", value = 1 } }]

[[rule]]
name = "a card blocks"
on = "Happened"
where = { event = "blocks" }
do = [{ set_input = { channel = "BLOCKING", on = "$card", value = 1 } }]

[[rule]]
name = "a card is blocked"
on = "Happened"
where = { event = "blocked" }
do = [{ set_input = { channel = "BLOCKED", on = "$card", value = 1 } }]

[[rule]]
name = "a card is backed up"
on = "Happened"
where = { event = "backedup" }
do = [{ set_input = { channel = "BACKEDUP", on = "$card", value = 1 } }]

[[rule]]
name = "an action card is played"
on = "Play"
guard = 'PLAYED.TYPE == "action"'
do = [{ tick = { clock = "ACTIONS_PLAYED" } }]

[[rule]]
name = "a turn begins"
on = "BeginTurn"
do = [{ tick = { clock = "TURN_STARTS", on = "$player" } }]

[[rule]]
name = "a turn ends"
on = "EndTurn"
do = [
  { tick = { clock = "TURN_ENDS", on = "$player" } },
  { each = { as = "c", select = "PC.CARD", where = "FRESH == 1 || ATTACKING == 1 || BLOCKING == 1 || BLOCKED == 1 || BACKEDUP == 1 || UATTACK == 1" } },
  { set_input = { channel = "FRESH", on = "$c", value = 0 } },
  { set_input = { channel = "ATTACKING", on = "$c", value = 0 } },
  { set_input = { channel = "BLOCKING", on = "$c", value = 0 } },
  { set_input = { channel = "BLOCKED", on = "$c", value = 0 } },
  { set_input = { channel = "BACKEDUP", on = "$c", value = 0 } },
  { set_input = { channel = "UATTACK", on = "$c", value = 0 } },
]
"#;

/// The commands on the current player by default (the others are on the card).
const PLAYER_COMMANDS: &[&str] =
    &["sp", "hp", "loselife", "draw", "trash", "discard", "damage", "prophecy", "shuffle"];

struct Writer<'a> {
    card: &'a Card,
    rules: String,
    errors: Vec<Error>,
    /// The card's `vars`, by name.
    vars: Vec<(String, Var)>,
    /// The coins the condition being compiled reads (their channels).
    coins: Vec<String>,
    /// Channels of cards to declare (a coin's).
    channels: std::collections::BTreeSet<String>,
    /// Subtypes the filters name (each card's `IS_…` flag).
    subtypes: std::collections::BTreeSet<String>,
}

/// A `vars` entry.
enum Var {
    /// `flipCoin()`: a d2 rolled when the rule runs, kept in this card channel (1 or 2).
    Coin(String),
    /// `getTargets('…')`: how many cards match.
    Count(String),
    /// Any other value, as a formula.
    Value(String),
}

/// What a statement runs on.
enum On {
    /// The card's nth `action`.
    Action(usize),
    /// Its `~event~`.
    Auto,
}

/// The cards (each with the index of its file) compiled: the native text after the prelude;
/// every error, each in its file.
pub fn compile(cards: &[(usize, Card)]) -> Result<String, Vec<(usize, Error)>> {
    let mut out = String::from("# The cards, compiled by sheetd's RuleScript dialect.\n");
    let mut rules = String::new();
    let mut channels = std::collections::BTreeSet::new();
    let mut subtypes = std::collections::BTreeSet::new();
    let mut errors = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (file, card) in cards {
        if !seen.insert(card.name.text.to_ascii_lowercase()) {
            let e = Error {
                code: codes::DUPLICATE,
                message: format!("the card `{}` is defined twice", card.name.text),
                span: card.name.span.clone(),
            };
            errors.push((*file, e));
            continue;
        }
        let mut w = Writer {
            card,
            rules: String::new(),
            errors: Vec::new(),
            vars: Vec::new(),
            coins: Vec::new(),
            channels: std::collections::BTreeSet::new(),
            subtypes: card.subtypes.iter().cloned().collect(),
        };
        let object = w.object();
        w.statements();
        channels.extend(w.channels);
        subtypes.extend(w.subtypes);
        rules.push_str(&object);
        rules.push_str(&w.rules);
        errors.extend(w.errors.into_iter().map(|e| (*file, e)));
    }
    if !channels.is_empty() {
        out.push_str("\n[channels.\"PC.CARD\"]              # coins flipped by `vars` (1 or 2)\n");
        for c in &channels {
            let _ = writeln!(out, "{} = \"NUMBER\"", q(c));
        }
    }
    if !subtypes.is_empty() {
        out.push_str("\n[variables.\"PC.CARD\"]             # a card's subtypes (1: it has it)\n");
        for t in &subtypes {
            let _ = writeln!(out, "{} = \"NUMBER\"", q(&format!("IS_{}", t.to_ascii_uppercase())));
        }
    }
    out.push_str(&rules);
    if errors.is_empty() { Ok(out) } else { Err(errors) }
}

impl Writer<'_> {
    /// An error at `span` of the card's rules text.
    fn error(&mut self, code: &'static str, message: String, span: Range<usize>) {
        let span = self.card.file_span(span);
        self.errors.push(Error { code, message, span });
    }

    fn unsupported(&mut self, what: &str, span: Range<usize>) {
        self.error(codes::UNSUPPORTED, format!("{what} is not supported by sheetd's RuleScript yet"), span);
    }

    /// The card's object: its type, printed BP and abilities.
    fn object(&mut self) -> String {
        let c = self.card;
        let mut modify = vec![
            format!("{{ var = \"TYPE\", set = {} }}", q(&c.kind)),
            format!("{{ var = \"NAME\", set = {} }}", literal(&c.name.text.to_ascii_lowercase())),
        ];
        for t in &c.subtypes {
            modify.push(format!("{{ var = {}, set = \"1\" }}", q(&format!("IS_{}", t.to_ascii_uppercase()))));
        }
        let has = |k: syntax::Key| c.rules.properties.iter().any(|p| p.key == k);
        for (flag, yes) in [
            ("RULES", !c.rules.properties.is_empty()),
            ("ABTRIGGER", has(syntax::Key::Action)),
            ("ABAUTO", has(syntax::Key::Auto)),
        ] {
            if yes {
                modify.push(format!("{{ var = \"{flag}\", set = \"1\" }}"));
            }
        }
        if let Some(bp) = &c.bp {
            modify.push(format!("{{ var = \"BP\", set = {} }}", q(bp)));
        }
        for p in &c.rules.properties {
            match (&p.key, &p.value) {
                (_, Value::Words(abilities)) => {
                    for a in abilities {
                        modify.push(format!("{{ var = {}, set = \"1\" }}", q(&a.text.to_ascii_uppercase())));
                    }
                }
                (syntax::Key::Auto, Value::Statements(st)) => {
                    for s in st.iter().filter(|s| s.events.is_empty()) {
                        if s.hooks.is_empty() {
                            self.always(s, &mut modify);
                        } else {
                            self.hook(s, &mut modify);
                        }
                    }
                }
                _ => {}
            }
        }
        let mut text = format!("\n[[object]]\nkind = \"CARD\"\nkey = {}\nmodify = [\n", q(&c.name.text));
        for m in modify {
            let _ = writeln!(text, "  {m},");
        }
        text.push_str("]\n");
        text
    }

    /// An `auto` statement with no `~event~`: always active while the card is in the ring —
    /// its changes of the card's BP and abilities are the object's modifiers, with the card in
    /// the ring (and its `[[if]]`) as their condition.
    fn always(&mut self, s: &Statement, modify: &mut Vec<String>) {
        let simple =
            s.costs.is_empty() && s.otherwise.is_none() && s.restriction.is_none() && s.then.to.is_none();
        if !simple || matches!(s.cond, Some(Cond::May(..))) {
            self.unsupported(
                "an always-active auto statement with costs, a target, [[may]], [[else]] or a restriction",
                s.span.clone(),
            );
            return;
        }
        let mut when = "ZONE == \"ring\"".to_owned();
        if let Some(Cond::If(e)) = &s.cond {
            match self.boolean(e) {
                Some(c) => when = format!("{when} && ({c})"),
                None => return,
            }
        }
        for (_, e) in &s.then.effects {
            let m = match e {
                Effect::Ability { add, name } => {
                    format!(
                        "{{ var = {}, set = \"{}\"",
                        q(&name.text.to_ascii_uppercase()),
                        if *add { 1 } else { 0 }
                    )
                }
                Effect::Command { name, args, .. } if name.text == "bp" => {
                    let a = args.first().map(|a| a.text.clone()).unwrap_or_default();
                    let (kind, n) = match (a.strip_prefix('x'), a.strip_prefix('=')) {
                        (Some(x), _) => ("multiply", x.to_owned()),
                        (_, Some(x)) => ("set", x.to_owned()),
                        _ => ("add", a.trim_start_matches('+').to_owned()),
                    };
                    if n.parse::<i64>().is_err() {
                        self.unsupported(&format!("the amount `{a}`"), name.span.clone());
                        continue;
                    }
                    format!("{{ var = \"BP\", {kind} = \"{n}\"")
                }
                Effect::Command { name, .. } => {
                    self.unsupported(
                        &format!(
                            "`{}()` in an always-active auto statement (only bp() and abilities last)",
                            name.text
                        ),
                        name.span.clone(),
                    );
                    continue;
                }
            };
            modify.push(format!("{m}, when = {} }}", q(&when)));
        }
    }

    /// `?hook? [[if expr]]`: while the card is in the ring and the condition holds, what the
    /// hook decides is cancelled. `?myCanBlock?` (this card may not block): its `CANTBLOCK`;
    /// `?oppCanBlock?` (the opponent may not block it): its `UNBLOCKABLE`; `any`: both.
    fn hook(&mut self, s: &Statement, modify: &mut Vec<String>) {
        // (The reader gives a hook only with its `[[if]]`.)
        let Some(Cond::If(e)) = &s.cond else { return };
        let Some(c) = self.boolean(e) else { return };
        let when = format!("ZONE == \"ring\" && ({c})");
        for h in &s.hooks {
            if let Some(x) = h.suffixes.iter().find(|x| !["this", "fromthis"].contains(&x.as_str())) {
                self.unsupported(&format!("a hook about other cards than this one (`:{x}`)"), h.span.clone());
                continue;
            }
            let flags: &[&str] = match h.whose.as_str() {
                "opp" => &["UNBLOCKABLE"],
                "my" => &["CANTBLOCK"],
                _ => &["CANTBLOCK", "UNBLOCKABLE"],
            };
            for flag in flags {
                modify.push(format!("{{ var = \"{flag}\", set = \"1\", when = {} }}", q(&when)));
            }
        }
    }

    fn statements(&mut self) {
        let card = self.card;
        let mut target: Vec<Filter> = Vec::new();
        let mut requisite = Vec::new();
        let mut n = 0;
        // `vars` and `requisite` apply to the card's rule: read them first.
        for p in &card.rules.properties {
            match (&p.key, &p.value) {
                (syntax::Key::Vars, Value::Vars(vars)) => {
                    for (name, e) in vars {
                        self.var(name, e);
                    }
                }
                (syntax::Key::Requisite, Value::Filters(f)) => {
                    for filter in f {
                        // `character<1>@oppRing`: at least one (the `<pick>` keeps the dialog
                        // away in OCTGN; here nothing is asked).
                        let n = filter.pick.as_deref().or(filter.qty.as_deref()).unwrap_or("1");
                        let n = n.trim_start_matches(['-', 'r']);
                        match (self.target_of(filter, true), n.parse::<u32>()) {
                            (Some(Target::Choice(w, _) | Target::All(w)), Ok(n)) => requisite.push((
                                format!("count(PC.CARD, {w}) >= {n}"),
                                "the requisite's targets exist",
                            )),
                            (Some(Target::Choice(..) | Target::All(_)), Err(_)) => self.unsupported(
                                &format!("the quantity `{n}` of a requisite"),
                                filter.span.clone(),
                            ),
                            (Some(_), _) => {
                                self.unsupported("a requisite that is not a card", filter.span.clone())
                            }
                            (None, _) => {}
                        }
                    }
                }
                _ => {}
            }
        }
        for p in &card.rules.properties {
            match (&p.key, &p.value) {
                (syntax::Key::Target { .. }, Value::Filters(f)) => target = f.clone(),
                (syntax::Key::Action, Value::Statements(s)) => {
                    n += 1;
                    for (i, st) in s.iter().enumerate() {
                        let on = On::Action(n);
                        self.statement(&format!("action {n}.{i}", i = i + 1), on, st, &target, &requisite);
                    }
                }
                (syntax::Key::Auto, Value::Statements(s)) => {
                    // (Those with no `~event~` are the object's modifiers: see `always`.)
                    for (i, st) in s.iter().enumerate().filter(|(_, st)| !st.events.is_empty()) {
                        // `~powerless,backedUp~`: the statement once for each event.
                        if st.events.len() > 1 {
                            for e in &st.events {
                                let one = Statement { events: vec![e.clone()], ..st.clone() };
                                let what = format!("auto {} on {}", i + 1, e.name);
                                self.statement(&what, On::Auto, &one, &target, &[]);
                            }
                        } else {
                            self.statement(&format!("auto {}", i + 1), On::Auto, st, &target, &[]);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// A `vars` entry: a coin flipped when the rule runs, targets counted, or a value.
    fn var(&mut self, name: &syntax::Word, e: &Expr) {
        let kind = match e {
            Expr::Call(f, args, _) if f == "flipCoin" && args.is_empty() => {
                let channel = format!("VAR{}", name.text);
                self.channels.insert(channel.clone());
                Var::Coin(channel)
            }
            Expr::Call(f, args, span) if f == "getTargets" => match args.as_slice() {
                [Expr::Text(t, _)] => match super::syntax::parse(&format!("target = {t}")) {
                    Ok(r) => match r.properties.first().map(|p| &p.value) {
                        Some(Value::Filters(fs)) if fs.len() == 1 => match self.target_of(&fs[0], true) {
                            Some(Target::Choice(w, _) | Target::All(w)) => {
                                Var::Count(format!("count(PC.CARD, {w})"))
                            }
                            _ => return,
                        },
                        _ => {
                            self.unsupported("`getTargets()` of several filters", span.clone());
                            return;
                        }
                    },
                    Err(_) => {
                        self.unsupported(&format!("the filter `{t}`"), span.clone());
                        return;
                    }
                },
                _ => {
                    self.unsupported("`getTargets()` without its filter text", span.clone());
                    return;
                }
            },
            other => match self.expr(other) {
                Some((f, _)) => Var::Value(f),
                None => return,
            },
        };
        self.vars.push((name.text.clone(), kind));
    }

    /// Where a filter points: a fixed target (`"$this"`, `"me"`, `"opp"`), the players, or
    /// cards — picked (how many), all of them (`characters`, `*s`), or the top or bottom ones of
    /// their pile (`character<1>@anyDeck`, `*s<-2>@deck`) — by the native `where` that selects
    /// them. Where the cards are only `counted` (`requisite`), the `<pick>` is not a place.
    fn target_of(&mut self, f: &Filter, counted: bool) -> Option<Target> {
        let span = f.span.clone();
        let mut top = None;
        if let Some(p) = f.pick.as_ref().filter(|_| !counted) {
            let n =
                p.trim().parse::<i64>().ok().filter(|n| *n != 0 && n.unsigned_abs() <= u64::from(u32::MAX));
            let (Some(n), None) = (n, &f.qty) else {
                self.unsupported(
                    &format!("the pick `<{p}>` (a whole number of cards, not 0, and no <qty>)"),
                    span,
                );
                return None;
            };
            let k = u32::try_from(n.unsigned_abs()).unwrap_or(u32::MAX);
            top = Some(if n > 0 { ("first", k) } else { ("last", k) });
        }
        if let Some(x) = &f.selector {
            self.unsupported(&format!("the selector `::{x}`"), span);
            return None;
        }
        match f.kind.as_str() {
            "this" => return Some(Target::Fixed("$this".into())),
            "me" | "opp" => return Some(Target::Fixed(f.kind.clone())),
            "players" => return Some(Target::Players),
            "player" => return Some(Target::Player),
            _ => {}
        }
        let (kind, plural) = self.kind_formula(&f.kind, &span)?;
        let mut parts = Vec::new();
        if kind != ALWAYS {
            parts.push(kind);
        }
        let zone = f.zone.as_deref().unwrap_or("arena");
        let (whose, place) = ["opp", "my", "ctrl", "same", "any"]
            .iter()
            .find_map(|p| zone.strip_prefix(p).map(|z| (*p, z)))
            .unwrap_or(("my", zone));
        match place {
            "ring" | "hand" | "deck" | "discards" | "removed" if whose != "ctrl" && whose != "same" => {
                parts.push(format!("ZONE == \"{place}\""))
            }
            "arena" if whose != "ctrl" && whose != "same" => parts.push("ZONE == \"ring\"".to_owned()),
            _ => {
                self.unsupported(&format!("the zone `{zone}`"), span);
                return None;
            }
        }
        match whose {
            "opp" => parts.push("CONTROLLER == \"opp\"".to_owned()),
            "my" if zone != "arena" => parts.push("CONTROLLER == \"me\"".to_owned()),
            _ => {}
        }
        if let Some(filter) = &f.filter {
            parts.push(self.filter_formula(filter, &span)?);
        }
        let w = parts.join(" && ");
        if let Some((end, n)) = top {
            return Some(Target::Top(w, end, n));
        }
        if plural && !counted {
            if let Some(q) = &f.qty {
                self.unsupported(&format!("the quantity `<{q}>` of a plural target"), span);
                return None;
            }
            return Some(Target::All(w));
        }
        Some(Target::Choice(w, self.quantity(f)?))
    }

    /// The type segment as a formula over a card, and whether it is plural: types joined by
    /// `,` (or) and `&` (and), each `character`, `action`, `reaction`, `*`, `card`, `all`, a
    /// card's `"name"` or a subtype, `!` before one negating it; `characters`, `*s`, `all`:
    /// every card that matches.
    fn kind_formula(&mut self, kind: &str, span: &Range<usize>) -> Option<(String, bool)> {
        let mut plural = false;
        let mut any = Vec::new();
        for alternative in kind.split(',') {
            let mut all = Vec::new();
            for atom in alternative.split('&') {
                let atom = atom.trim();
                let (not, core) = match atom.strip_prefix('!') {
                    Some(rest) => (true, rest.trim()),
                    None => (false, atom),
                };
                let (core, s) = match core.strip_suffix('s') {
                    Some(single) if ["character", "action", "reaction", "card", "*"].contains(&single) => {
                        (single, true)
                    }
                    Some(single) if single.len() > 2 && single.starts_with('"') && single.ends_with('"') => {
                        (single, true)
                    }
                    _ => (core, false),
                };
                plural |= s || core == "all";
                let f = match core {
                    "*" | "card" | "all" => ALWAYS.to_owned(),
                    "character" | "action" | "reaction" => format!("TYPE == \"{core}\""),
                    _ if core.len() > 2 && core.starts_with('"') && core.ends_with('"') => {
                        let name = &core[1..core.len() - 1];
                        if name.contains(['"', '\\']) {
                            self.unsupported(&format!("the card name `{name}`"), span.clone());
                            return None;
                        }
                        format!("NAME == \"{name}\"")
                    }
                    other => self.subtype(other, span)?,
                };
                all.push(if not { format!("!({f})") } else { f });
            }
            // `*&warrior`: what `*` adds is nothing.
            if all.len() > 1 {
                all.retain(|f| f != ALWAYS);
            }
            any.push(all.join(" && "));
        }
        let f = if any.len() == 1 {
            any.pop().unwrap_or_default()
        } else {
            format!("({})", any.iter().map(|a| format!("({a})")).collect::<Vec<_>>().join(" || "))
        };
        Some((f, plural))
    }

    /// A subtype as a formula over a card (`warrior`: `IS_WARRIOR == 1`), declared for every card.
    fn subtype(&mut self, word: &str, span: &Range<usize>) -> Option<String> {
        let ok = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok || RESERVED.contains(&word) {
            self.unsupported(&format!("the target `{word}`"), span.clone());
            return None;
        }
        self.subtypes.insert(word.to_owned());
        Some(format!("IS_{} == 1", word.to_ascii_uppercase()))
    }

    /// A filter segment (`[bp<=300]`, `[backedup & attack, -frozen]`) as a formula over a card:
    /// terms joined by `,` (or) and `&` (and), `-` or `^` before one negating it; each a `bp`
    /// comparison (`==`, `>=`, `<=`), a state (`frozen`, `fresh`, `attack`, `block`,
    /// `blocked`, `backedup`, `uattack`), `powerful`/`powerless`, `abtrigger`, `abauto`, a card
    /// type or a subtype.
    fn filter_formula(&mut self, filter: &str, span: &Range<usize>) -> Option<String> {
        let mut any = Vec::new();
        for alternative in filter.split(',') {
            let mut all = Vec::new();
            for atom in alternative.split('&') {
                let atom = atom.trim();
                let (not, core) = match atom.strip_prefix(['-', '^']) {
                    Some(rest) => (true, rest.trim()),
                    None => (false, atom),
                };
                let compact = core.replace(' ', "");
                let bp = ["<=", ">=", "=="].iter().find_map(|op| {
                    let n = compact.strip_prefix("bp")?.strip_prefix(op)?;
                    n.parse::<i64>().ok().map(|n| format!("BP {op} {n}"))
                });
                let state = [
                    ("frozen", "FROZEN == 1"),
                    ("fresh", "FRESH == 1"),
                    ("attack", "ATTACKING == 1"),
                    ("block", "BLOCKING == 1"),
                    ("blocked", "BLOCKED == 1"),
                    ("backedup", "BACKEDUP == 1"),
                    ("uattack", "UATTACK == 1"),
                    ("powerful", "RULES == 1"),
                    ("powerless", "RULES == 0"),
                    ("abtrigger", "ABTRIGGER == 1"),
                    ("abauto", "ABAUTO == 1"),
                ]
                .iter()
                .find(|(k, _)| *k == core)
                .map(|(_, f)| (*f).to_owned());
                let f = match (bp.or(state), core) {
                    (Some(f), _) => f,
                    (None, t @ ("character" | "action" | "reaction")) => format!("TYPE == \"{t}\""),
                    (None, k) if RESERVED.contains(&k) || k.starts_with("bp") || k.starts_with("sp") => {
                        self.unsupported(&format!("the filter `{k}`"), span.clone());
                        return None;
                    }
                    (None, other) => self.subtype(other, span)?,
                };
                all.push(if not { format!("!({f})") } else { f });
            }
            any.push(all.join(" && "));
        }
        Some(if any.len() == 1 {
            any.pop().unwrap_or_default()
        } else {
            format!("({})", any.iter().map(|a| format!("({a})")).collect::<Vec<_>>().join(" || "))
        })
    }

    // long: the head rules (the statement's branches) and one rule per effect, in order.
    // long: the head rules (the statement's branches, after a coin is flipped when it reads
    // one) and one rule per effect, in order.
    fn statement(
        &mut self,
        what: &str,
        on: On,
        s: &Statement,
        property_targets: &[Filter],
        requisite: &[(String, &'static str)],
    ) {
        let card = self.card.name.text.clone();
        let label = format!("{card}: {what}");
        let mut require: Vec<(String, &str)> = requisite.to_vec();
        let mut pay = Vec::new();
        for c in &s.costs {
            match (c.kind, &c.arg) {
                ('F', None) => {
                    require.push(("FROZEN == 0".to_owned(), "{F}: the card is not frozen"));
                    pay.push("{ set_input = { channel = \"FROZEN\", value = 1 } }".to_owned());
                }
                ('S', None) => {
                    pay.push("{ set_input = { channel = \"ZONE\", value = \"discards\" } }".to_owned())
                }
                ('D', None) => {
                    require.push(("@me.HAND >= 1".to_owned(), "{D}: a card in the hand to discard"));
                    pay.push("{ adjust = { channel = \"HAND\", on = \"me\", by = \"-1\" } }".to_owned());
                    pay.push("{ adjust = { channel = \"DISCARDS\", on = \"me\", by = \"1\" } }".to_owned());
                }
                _ => self.unsupported(&format!("the cost `{}`", c.kind), c.span.clone()),
            }
        }
        self.coins.clear();
        let (cond, may) = match &s.cond {
            Some(Cond::If(e)) => (self.boolean(e), None),
            Some(Cond::May(q, _)) => (None, Some(q.clone().unwrap_or_else(|| format!("{label}?")))),
            None => (None, None),
        };
        let coins = std::mem::take(&mut self.coins);
        let branches: Vec<(&syntax::Branch, Option<String>, &str)> = match (&s.otherwise, &cond) {
            (None, c) => vec![(&s.then, c.clone(), "")],
            (Some(e), Some(c)) => vec![(&s.then, Some(c.clone()), ""), (e, Some(format!("!({c})")), " else")],
            (Some(e), None) => vec![(&s.then, None, ""), (e, Some(NEVER.into()), " else")],
        };
        let until = s.restriction.as_ref().map(|r| {
            let who = if r.opponent { "opp" } else { "me" };
            match r.until {
                Until::EndOfTurn => format!("{{ clock = \"TURN_ENDS\", on = \"{who}\", after = \"+0\" }}"),
                Until::YourNextTurn => {
                    format!("{{ clock = \"TURN_STARTS\", on = \"{who}\", after = \"+0\" }}")
                }
                Until::NextAction => "{ clock = \"ACTIONS_PLAYED\", after = \"+0\" }".to_owned(),
            }
        });
        let mut prelude: Vec<String> = require
            .iter()
            .map(|(f, m)| format!("{{ require = {{ formula = {}, message = {} }} }}", q(f), q(m)))
            .collect();
        prelude.extend(pay);
        // What starts the branches: the event itself, or — when the condition reads a coin
        // flipped as the rule runs — a `Decide` the first rule emits once the coins are in.
        let (trigger, filters, limit, in_play) = self.trigger(&on, s);
        let (branch_on, branch_filters) = if coins.is_empty() {
            (trigger, filters)
        } else {
            let mut actions = prelude.clone();
            for (k, c) in coins.iter().enumerate() {
                actions.push(format!("{{ roll = {{ as = \"coin{k}\", die = \"d2\" }} }}"));
                actions.push(format!("{{ set_input = {{ channel = {}, value = \"$coin{k}\" }} }}", q(c)));
            }
            actions.push(format!(
                "{{ emit = {{ event = \"Decide\", args = {{ step = {}, card = \"$this\" }} }} }}",
                q(&label)
            ));
            self.rule(&format!("{label} flips"), trigger, &filters, limit, in_play.as_deref(), &actions);
            prelude.clear();
            ("Decide", vec![format!("step = {}", q(&label)), "card = \"$this\"".to_owned()])
        };
        for (b, guard, suffix) in branches {
            let head = format!("{label}{suffix}");
            // `tgt`, `tgt.0`: the targets the `target` property chose.
            let own: Vec<&Filter> =
                b.to.as_ref()
                    .map(|t| t.filters.iter().filter(|f| !f.kind.starts_with("tgt")).collect())
                    .unwrap_or_default();
            let filters: Vec<&Filter> = if own.is_empty() { property_targets.iter().collect() } else { own };
            let mut actions = prelude.clone();
            // What each filter gives: a fixed target, or cards asked for or all selected.
            let mut slots: Vec<String> = Vec::new();
            for (i, f) in filters.iter().enumerate() {
                let name = if i == 0 { "tgt".to_owned() } else { format!("tgt{i}") };
                let prompt = if filters.len() == 1 {
                    format!("target for {card}")
                } else {
                    format!("target {} for {card}", i + 1)
                };
                match self.target_of(f, false) {
                    Some(Target::Choice(w, n)) => {
                        // `<2>`: two cards (all there are, if fewer); `<,5>`: one to five.
                        let pick = n.fields();
                        actions.push(format!(
                            "{{ ask = {{ as = {}, prompt = {}, options = {{ select = \"PC.CARD\", where = {} }}{pick} }} }}",
                            q(&name),
                            q(&prompt),
                            q(&w)
                        ));
                        slots.push(format!("${name}"));
                    }
                    Some(Target::All(w)) => {
                        actions.push(format!(
                            "{{ each = {{ as = {}, select = \"PC.CARD\", where = {} }} }}",
                            q(&name),
                            q(&w)
                        ));
                        slots.push(format!("${name}"));
                    }
                    Some(Target::Top(w, end, n)) => {
                        actions.push(format!(
                            "{{ each = {{ as = {}, select = \"PC.CARD\", where = {}, order = \"POSITION\", {end} = {n} }} }}",
                            q(&name),
                            q(&w)
                        ));
                        slots.push(format!("${name}"));
                    }
                    Some(Target::Player) => {
                        actions.push(format!(
                            "{{ ask = {{ as = {}, prompt = {}, options = [\"me\", \"opp\"] }} }}",
                            q(&name),
                            q(&prompt)
                        ));
                        slots.push(format!("${name}"));
                    }
                    Some(Target::Players) => slots.extend(["me".to_owned(), "opp".to_owned()]),
                    Some(Target::Fixed(t)) => slots.push(t),
                    None => {}
                }
            }
            // One target known when the rule is written, or `$…`: chosen as it runs.
            let chosen = match slots.as_slice() {
                [] => String::new(),
                [one] => one.clone(),
                _ => "$targets".to_owned(),
            };
            // [[may]]: the player confirms; declined, the effects do not start.
            let ok = match &may {
                Some(question) => {
                    actions.push(format!(
                        "{{ ask = {{ as = \"may\", prompt = {}, options = [\"yes\"], decline = true }} }}",
                        q(question)
                    ));
                    "$may"
                }
                None => "yes",
            };
            // Effects joined only by `&` each start from here, in order, whatever the one
            // before did; otherwise each starts the next: after it (`&`), when it succeeds
            // (`&&`), when it fails (`||`).
            let independent = b.effects.iter().skip(1).all(|(op, _)| *op == Op::Then);
            let starts = if independent { b.effects.len() } else { 1 };
            let ops: Vec<Op> = b.effects.iter().map(|(op, _)| *op).collect();
            let ev = step_events(&ops, independent);
            if slots.is_empty() {
                slots.push(String::new());
            }
            for slot in &slots {
                for (j, event) in ev.iter().enumerate().take(starts) {
                    actions.push(step(event, &format!("{head} effect {}", j + 1), slot, ok));
                }
            }
            let guard = match (&guard, coins.is_empty(), &in_play) {
                (Some(g), true, Some(p)) => Some(format!("({p}) && ({g})")),
                (None, true, Some(p)) => Some(p.clone()),
                (g, _, _) => g.clone(),
            };
            let limit = if coins.is_empty() { limit } else { None };
            self.rule(&head, branch_on, &branch_filters, limit, guard.as_deref(), &actions);
            let passed = if chosen.is_empty() { "" } else { "$target" };
            for (j, (_, e)) in b.effects.iter().enumerate() {
                let id = format!("{head} effect {}", j + 1);
                let filters = [format!("step = {}", q(&id)), "card = \"$this\"".to_owned()];
                // `A || B`: B starts when A fails — a rule before A's, on A's step, whose guard
                // is that A cannot be done (only effects that can fail have one).
                if ops.get(j + 1) == Some(&Op::Or) {
                    match self.failure(e, &chosen) {
                        Some(Failure::Never) => {}
                        Some(Failure::When(cond)) => {
                            let next = step(ev[j + 1], &format!("{head} effect {}", j + 2), passed, "yes");
                            self.rule(&format!("{id} fails"), ev[j], &filters, None, Some(&cond), &[next]);
                        }
                        None => self.unsupported("`||` after an effect on a chosen target", s.span.clone()),
                    }
                }
                let Some(mut acts) = self.effect(e, &chosen, until.as_deref()) else { continue };
                // The next effect not behind an `||`: `&&` starts it when this one succeeds;
                // `&` after this one (and the one behind its `||`), whatever they did.
                let mut then = None;
                match next_effect(&ops, j).filter(|_| !independent) {
                    Some(k) if ops[k] == Op::And => {
                        acts.push(step(ev[k], &format!("{head} effect {}", k + 1), passed, "yes"))
                    }
                    Some(k) if ops[j] != Op::Or => then = Some(k),
                    _ => {}
                }
                match e {
                    // `command?()`: the player confirms first; the effect runs on `Confirmed`
                    // when they do (declined, it does not, and a chain behind it stops).
                    Effect::Command { ask: true, name, args } => {
                        let written: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
                        let prompt = format!("{card}: {}({})?", name.text, written.join(", "));
                        let confirm = [
                            format!(
                                "{{ ask = {{ as = \"sure\", prompt = {}, options = [\"yes\"], decline = true }} }}",
                                q(&prompt)
                            ),
                            format!(
                                "{{ emit = {{ event = \"Confirmed\", args = {{ step = {}, card = \"$this\", target = \"$target\", ok = \"$sure\" }} }} }}",
                                q(&id)
                            ),
                        ];
                        self.rule(&id, ev[j], &filters, None, None, &confirm);
                        self.rule(&format!("{id} confirmed"), "Confirmed", &filters, None, None, &acts);
                    }
                    _ => self.rule(&id, ev[j], &filters, None, None, &acts),
                }
                if let Some(k) = then {
                    let next = step(ev[k], &format!("{head} effect {}", k + 1), passed, "yes");
                    self.rule(&format!("{id} then"), ev[j], &filters, None, None, &[next]);
                }
            }
        }
    }

    /// When an effect fails: never (it always can be done), when a formula read in the card's
    /// scope is true (a pile too small to draw, trash or discard from), or unknown (`None`:
    /// its target is chosen when it runs).
    fn failure(&mut self, e: &Effect, chosen: &str) -> Option<Failure> {
        let Effect::Command { name, args, .. } = e else { return Some(Failure::Never) };
        if name.text == "discard" {
            // `discard(filter)` fails when too few cards match (its errors are the effect's).
            let errors = self.errors.len();
            let choice = self.discard_choice(args, &name.span);
            self.errors.truncate(errors);
            if let Ok(Some((w, n))) = choice {
                let least = n.map_or(1, |n| n.least);
                return Some(Failure::When(format!("count(PC.CARD, {w}) < {least}")));
            }
        }
        let pile = match name.text.as_str() {
            "draw" | "trash" => "DECK",
            "discard" => "HAND",
            _ => return Some(Failure::Never),
        };
        let who = match chosen {
            "" => "me",
            "me" | "opp" => chosen,
            _ => return None,
        };
        let n = args.first().and_then(|a| a.text.trim_start_matches('+').parse::<i64>().ok()).unwrap_or(1);
        Some(Failure::When(format!("@{who}.{pile} < {n}")))
    }

    /// `discard(filter)`: the `where` of the cards it offers (in the player's hand unless the
    /// filter names a zone) and how many to pick; `None` for `discard()` and `discard(n)`.
    fn discard_choice(
        &mut self,
        args: &[syntax::Word],
        span: &Range<usize>,
    ) -> Result<Option<(String, Option<Picks>)>, ()> {
        let Some(a) = args.first().filter(|a| a.text.trim_start_matches('+').parse::<i64>().is_err()) else {
            return Ok(None);
        };
        let filter = match super::syntax::parse(&format!("target = {}", a.text)) {
            Ok(r) => match r.properties.into_iter().next().map(|p| p.value) {
                Some(Value::Filters(fs)) if fs.len() == 1 => fs.into_iter().next(),
                _ => None,
            },
            Err(_) => None,
        };
        let Some(mut f) = filter else {
            self.unsupported(&format!("discarding `{}`", a.text), span.clone());
            return Err(());
        };
        f.zone.get_or_insert_with(|| "myhand".to_owned());
        f.span = a.span.clone();
        match self.target_of(&f, false) {
            Some(Target::Choice(w, n)) => Ok(Some((w, Some(n)))),
            Some(Target::All(w)) => Ok(Some((w, None))),
            Some(Target::Top(..)) => {
                self.unsupported(&format!("discarding `{}` from the top of the hand", a.text), span.clone());
                Err(())
            }
            Some(_) => {
                self.unsupported(
                    &format!("discarding `{}` (a player's cards: discard(n))", a.text),
                    span.clone(),
                );
                Err(())
            }
            None => Err(()),
        }
    }

    /// How many cards a filter picks: `<2>` two, one by default; `<,5>` one to five, `<2,5>`
    /// two to five, `<**>` any number but at least one. `<r2>` (two at random) is a choice
    /// too: sheetd draws no randomness, the front end picks at random.
    fn quantity(&mut self, f: &Filter) -> Option<Picks> {
        let whole = |t: &str| t.trim().parse::<u32>().ok().filter(|n| *n >= 1);
        let q = f.qty.as_deref().map(str::trim);
        let picks = match q.map(|n| n.strip_prefix('r').unwrap_or(n)) {
            None | Some("") => Some(Picks { most: 1, least: 1 }),
            Some("**") => Some(Picks { most: u32::MAX, least: 1 }),
            Some(n) => match n.split_once(',') {
                Some((l, m)) => {
                    let least = if l.trim().is_empty() { Some(1) } else { whole(l) };
                    match (least, whole(m)) {
                        (Some(least), Some(most)) if least <= most => Some(Picks { most, least }),
                        _ => None,
                    }
                }
                None => whole(n).map(|n| Picks { most: n, least: n }),
            },
        };
        if picks.is_none() {
            self.unsupported(
                &format!("the quantity `<{}>` (a number, `min,max`, `,max` or `**`)", q.unwrap_or_default()),
                f.span.clone(),
            );
        }
        picks
    }

    /// The event a statement runs on, its filters, its limit, and (auto) the guard that the
    /// card is in play.
    fn trigger(
        &mut self,
        on: &On,
        s: &Statement,
    ) -> (&'static str, Vec<String>, Option<&'static str>, Option<String>) {
        match on {
            On::Action(n) => {
                if !s.events.is_empty() {
                    self.unsupported("events in an action", s.span.clone());
                }
                ("Action", vec!["card = \"$this\"".to_owned(), format!("n = \"{n}\"")], None, None)
            }
            On::Auto => {
                let mut in_play = Some("ZONE == \"ring\"".to_owned());
                let Some(e) = s.events.first() else {
                    // `statements` passes only auto statements with events.
                    return ("Phase", Vec::new(), None, in_play);
                };
                let once = e.suffixes.iter().any(|x| x == "once").then_some("once");
                let mut filters = Vec::new();
                if e.whose != "any" {
                    filters.push(format!("player = {}", q(if e.whose == "opp" { "opp" } else { "me" })));
                }
                if e.name.ends_with("phase") {
                    filters.push(format!("phase = {}", q(&e.name)));
                    return ("Phase", filters, once, in_play);
                }
                filters.push(format!("event = {}", q(&e.name)));
                let any = e.suffixes.iter().any(|x| x == "any");
                // `:char`, `:action`, `:reaction`: only for a card of that type.
                if let Some(x) =
                    e.suffixes.iter().find(|x| ["action", "reaction", "char"].contains(&x.as_str()))
                {
                    let kind = if x == "char" { "character" } else { x.as_str() };
                    in_play = Some(format!("ZONE == \"ring\" && TRIGGER.TYPE == \"{kind}\""));
                }
                if !any {
                    filters.push("card = \"$this\"".to_owned());
                }
                ("Happened", filters, once, in_play)
            }
        }
    }

    /// One effect's actions on `target` (`$target` in its rule when the head chose it).
    // long: one arm per command, each a few lines.
    fn effect(&mut self, e: &Effect, chosen: &str, until: Option<&str>) -> Option<Vec<String>> {
        let until = until.map_or(String::new(), |u| format!(", until = {u}"));
        let (name, args, span) = match e {
            Effect::Ability { add, name } => {
                let on = if chosen.is_empty() { "$this".to_owned() } else { "$target".to_owned() };
                let flag = name.text.to_ascii_uppercase();
                let v = if *add { "1" } else { "0" };
                return Some(vec![format!(
                    "{{ add_modifier = {{ var = {}, type = \"SET\", value = \"{v}\", on = {}{until} }} }}",
                    q(&flag),
                    q(&on)
                )]);
            }
            Effect::Command { name, args, .. } => (name.text.as_str(), args, name.span.clone()),
        };
        let on = if !chosen.is_empty() {
            "$target"
        } else if PLAYER_COMMANDS.contains(&name) {
            "me"
        } else {
            "$this"
        };
        let arg = |k: usize| args.get(k).map(|a| a.text.clone());
        let amount = |me: &mut Self, a: Option<String>| -> Option<String> {
            let a = a.unwrap_or_else(|| "1".into());
            match a.trim_start_matches('+').parse::<i64>() {
                Ok(n) => Some(n.to_string()),
                Err(_) => {
                    me.unsupported(&format!("the amount `{a}`"), span.clone());
                    None
                }
            }
        };
        let modifier = |kind: &str, value: &str| {
            format!(
                "{{ add_modifier = {{ var = \"BP\", type = \"{kind}\", value = {}, on = {}{until} }} }}",
                q(value),
                q(on)
            )
        };
        let adjust = |channel: &str, on: &str, by: &str| {
            format!("{{ adjust = {{ channel = \"{channel}\", on = {}, by = {} }} }}", q(on), q(by))
        };
        Some(match name {
            "bp" => {
                let a = arg(0).unwrap_or_default();
                if let Some(x) = a.strip_prefix('x') {
                    vec![modifier("MULTIPLY", &amount(self, Some(x.to_owned()))?)]
                } else if let Some(x) = a.strip_prefix('=') {
                    vec![modifier("SET", &amount(self, Some(x.to_owned()))?)]
                } else {
                    vec![modifier("ADD", &amount(self, Some(a))?)]
                }
            }
            "sp" | "hp" => {
                let channel = name.to_ascii_uppercase();
                let a = arg(0).unwrap_or_default();
                match a.strip_prefix('=') {
                    Some(x) => vec![adjust(
                        &channel,
                        on,
                        &format!("{} - {channel}", amount(self, Some(x.to_owned()))?),
                    )],
                    None => vec![adjust(&channel, on, &amount(self, Some(a))?)],
                }
            }
            "loselife" => vec![adjust("HP", on, &format!("-{}", amount(self, arg(0))?))],
            "damage" => {
                let n = amount(self, arg(0))?;
                if on == "me" || on == "opp" {
                    vec![adjust("HP", on, &format!("-{n}"))]
                } else {
                    // Damage to a character lowers its BP.
                    vec![format!(
                        "{{ add_modifier = {{ var = \"BP\", type = \"ADD\", value = \"-{n}\", on = {} }} }}",
                        q(on)
                    )]
                }
            }
            "draw" => {
                let n = amount(self, arg(0))?;
                vec![adjust("DECK", on, &format!("-{n}")), adjust("HAND", on, &n)]
            }
            "trash" => {
                let n = amount(self, arg(0))?;
                vec![adjust("DECK", on, &format!("-{n}")), adjust("DISCARDS", on, &n)]
            }
            "discard" => match self.discard_choice(args, &span).ok()? {
                // `discard(character)`: the player picks the cards (`discard(*s@hand)`: all of
                // them, no question), which go to the discards.
                Some((w, n)) => {
                    let least = n.map_or(1, |n| n.least);
                    let take = match n {
                        Some(n) => format!(
                            "{{ ask = {{ as = \"pick\", prompt = {}, options = {{ select = \"PC.CARD\", where = {} }}{} }} }}",
                            q(&format!("{}: discard which?", self.card.name.text)),
                            q(&w),
                            n.fields()
                        ),
                        None => format!(
                            "{{ each = {{ as = \"pick\", select = \"PC.CARD\", where = {} }} }}",
                            q(&w)
                        ),
                    };
                    vec![
                        format!(
                            "{{ require = {{ formula = {}, message = {} }} }}",
                            q(&format!("count(PC.CARD, {w}) >= {least}")),
                            q(&format!("discard(): {least} matching card(s) to discard"))
                        ),
                        take,
                        "{ set_input = { channel = \"ZONE\", on = \"$pick\", value = \"discards\" } }"
                            .to_owned(),
                    ]
                }
                None => {
                    let n = amount(self, arg(0))?;
                    vec![adjust("HAND", on, &format!("-{n}")), adjust("DISCARDS", on, &n)]
                }
            },
            "prophecy" => {
                let n = amount(self, arg(0))?;
                let at = arg(1).unwrap_or_else(|| "top".into());
                if at != "top" && at != "bottom" {
                    self.unsupported(&format!("the position `{at}` (top or bottom)"), span);
                    return None;
                }
                let whose = match chosen {
                    "" | "me" => "your",
                    "opp" => "the opponent's",
                    _ => {
                        self.unsupported("`prophecy()` on a card", span);
                        return None;
                    }
                };
                // The deck is a count here: which cards they are, and their order, are the
                // front end's. The player looks, puts them back, and answers.
                let prompt = format!(
                    "{}: look at the top {n} card(s) of {whose} deck (all of it, if it holds fewer) and put them back on the {at}",
                    self.card.name.text
                );
                vec![format!(
                    "{{ ask = {{ as = \"seen\", prompt = {}, options = [\"done\"] }} }}",
                    q(&prompt)
                )]
            }
            "shuffle" => {
                let pile = arg(0).unwrap_or_else(|| "deck".into());
                if pile != "deck" || !["", "me", "opp"].contains(&chosen) {
                    self.unsupported(&format!("shuffling `{pile}` (only a player's deck)"), span);
                    return None;
                }
                vec![format!("{{ tick = {{ clock = \"SHUFFLES\", on = {} }} }}", q(on))]
            }
            "destroy" => vec![format!(
                "{{ set_input = {{ channel = \"ZONE\", on = {}, value = \"discards\" }} }}",
                q(on)
            )],
            "moveto" => {
                let zone = arg(0).unwrap_or_default();
                if !["ring", "hand", "deck", "discards", "removed"].contains(&zone.as_str()) {
                    self.unsupported(&format!("moving to `{zone}`"), span);
                    return None;
                }
                vec![format!(
                    "{{ set_input = {{ channel = \"ZONE\", on = {}, value = {} }} }}",
                    q(on),
                    q(&zone)
                )]
            }
            "freeze" | "unfreeze" => {
                let v = if name == "freeze" { 1 } else { 0 };
                vec![format!("{{ set_input = {{ channel = \"FROZEN\", on = {}, value = {v} }} }}", q(on))]
            }
            other => {
                self.unsupported(&format!("the command `{other}()`"), span);
                return None;
            }
        })
    }

    fn rule(
        &mut self,
        name: &str,
        on: &str,
        filters: &[String],
        limit: Option<&str>,
        guard: Option<&str>,
        actions: &[String],
    ) {
        let object = format!("object = {{ kind = \"CARD\", key = {} }}", q(&self.card.name.text));
        crate::creature::write::write_rule(
            &mut self.rules,
            name,
            on,
            &object,
            filters,
            limit,
            guard,
            actions,
        );
    }

    /// An expression as a native BOOLEAN formula (a number: not 0).
    fn boolean(&mut self, e: &Expr) -> Option<String> {
        let (text, boolean) = self.expr(e)?;
        Some(if boolean { text } else { format!("({text}) != 0") })
    }

    /// An expression as a native formula, and whether it is BOOLEAN.
    // long: one arm per kind of expression of the subset.
    fn expr(&mut self, e: &Expr) -> Option<(String, bool)> {
        Some(match e {
            Expr::Int(n, _) => (n.to_string(), false),
            Expr::Bool(b, _) => ((if *b { ALWAYS } else { NEVER }).to_owned(), true),
            Expr::Path(p, span) => match self.var_value(p) {
                Some(f) => (f, false),
                None => (self.path(p, span.clone())?, false),
            },
            Expr::Not(x, _) => (format!("!({})", self.boolean(x)?), true),
            Expr::Binary(op @ (BinOp::And | BinOp::Or), a, b, _) => {
                let sym = if *op == BinOp::And { "&&" } else { "||" };
                (format!("({}) {sym} ({})", self.boolean(a)?, self.boolean(b)?), true)
            }
            Expr::Binary(op, a, b, _) => {
                let (x, _) = self.expr(a)?;
                let (y, _) = self.expr(b)?;
                let (sym, boolean) = match op {
                    BinOp::Lt => ("<", true),
                    BinOp::Le => ("<=", true),
                    BinOp::Gt => (">", true),
                    BinOp::Ge => (">=", true),
                    BinOp::Eq => ("==", true),
                    BinOp::Ne => ("!=", true),
                    BinOp::Add => ("+", false),
                    _ => ("-", false),
                };
                (format!("({x}) {sym} ({y})"), boolean)
            }
            Expr::All(item, list, span) => {
                let Expr::Path(p, lspan) = &**list else {
                    self.unsupported("`all … in` over anything but a pile (me.ring)", span.clone());
                    return None;
                };
                let zone = self.zone_where(p, lspan.clone())?;
                let Expr::Binary(op, a, b, _) = &**item else {
                    self.unsupported("`all` over anything but a comparison of the card", item.span());
                    return None;
                };
                let side = |me: &mut Self, x: &Expr| -> Option<String> {
                    match x {
                        Expr::Path(q, _)
                            if q.len() == 2 && ["card", "char"].contains(&q[0].as_str()) && q[1] == "bp" =>
                        {
                            Some("BP".to_owned())
                        }
                        other => me.expr(other).map(|(t, _)| t),
                    }
                };
                let (x, y) = (side(self, a)?, side(self, b)?);
                let sym = match op {
                    BinOp::Lt => "<",
                    BinOp::Le => "<=",
                    BinOp::Gt => ">",
                    BinOp::Ge => ">=",
                    BinOp::Eq => "==",
                    BinOp::Ne => "!=",
                    _ => {
                        self.unsupported("`all` over anything but a comparison of the card", item.span());
                        return None;
                    }
                };
                (format!("count(PC.CARD, {zone} && !(({x}) {sym} ({y}))) == 0"), true)
            }
            Expr::Text(_, span) | Expr::Nil(span) | Expr::Call(_, _, span) => {
                self.unsupported("this expression (text, None, a call)", span.clone());
                return None;
            }
        })
    }

    /// A path that names a `vars` entry: `_coin` (0 or 1), `_cards.size`, `_cards`.
    fn var_value(&mut self, p: &[String]) -> Option<String> {
        let (name, rest) = p.split_first()?;
        let (_, v) = self.vars.iter().find(|(n, _)| n == name)?;
        let f = match (v, rest) {
            (Var::Coin(channel), []) => {
                let c = channel.clone();
                self.coins.push(c.clone());
                format!("({c} - 1)")
            }
            (Var::Count(f), [] | [_]) => f.clone(),
            (Var::Value(f), []) => f.clone(),
            _ => return None,
        };
        Some(f)
    }

    /// The `where` of the cards of a pile in play: `me.ring`.
    fn zone_where(&mut self, p: &[String], span: Range<usize>) -> Option<String> {
        match p {
            [who, zone] if (who == "me" || who == "opp") && zone == "ring" => {
                Some(format!("ZONE == \"ring\" && CONTROLLER == \"{who}\""))
            }
            _ => {
                self.unsupported(&format!("the list `{}`", p.join(".")), span);
                None
            }
        }
    }

    /// A path's value: `me.sp`, `opp.hp`, `me.hand.size`, `me.ring.size`, `this.bp`.
    fn path(&mut self, p: &[String], span: Range<usize>) -> Option<String> {
        let lower: Vec<String> = p.iter().map(|s| s.to_ascii_lowercase()).collect();
        let l: Vec<&str> = lower.iter().map(String::as_str).collect();
        match l.as_slice() {
            [who @ ("me" | "opp"), attr @ ("hp" | "sp")] => {
                Some(format!("@{who}.{}", attr.to_ascii_uppercase()))
            }
            [who @ ("me" | "opp"), pile @ ("hand" | "deck" | "discards" | "removed"), "size"] => {
                Some(format!("@{who}.{}", pile.to_ascii_uppercase()))
            }
            [who @ ("me" | "opp"), "ring", "size"] => {
                Some(format!("count(PC.CARD, ZONE == \"ring\" && CONTROLLER == \"{who}\")"))
            }
            ["this", "bp"] => Some("BP".to_owned()),
            _ => {
                self.unsupported(&format!("the value `{}`", p.join(".")), span);
                None
            }
        }
    }
}

/// When an effect fails.
enum Failure {
    Never,
    /// When this formula (read in the card's scope) is true.
    When(String),
}

/// Where an effect applies.
enum Target {
    /// `$this`, `me`, `opp`.
    Fixed(String),
    /// `players`: both.
    Players,
    /// `player`: the player picks one.
    Player,
    /// Cards the player picks (how many), among those the native `where` selects.
    Choice(String, Picks),
    /// Every card the native `where` selects (`characters`, `*s`, `all`), no question asked.
    All(String),
    /// The `first` (top) or `last` (bottom) n cards the native `where` selects, by `POSITION`.
    Top(String, &'static str, u32),
}

/// A formula that is always true (formulas have no boolean literals).
const ALWAYS: &str = "1 == 1";
/// … and one never true.
const NEVER: &str = "1 == 0";

/// How many cards a question takes: at most `most` (all there are, if fewer), at least `least`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Picks {
    most: u32,
    least: u32,
}

impl Picks {
    /// The ask's fields after `options`: `, pick = 2`, `, pick = 5, at_least = 1`.
    fn fields(self) -> String {
        match (self.most, self.least) {
            (1, 1) => String::new(),
            (m, l) if l == m => format!(", pick = {m}"),
            (m, l) => format!(", pick = {m}, at_least = {l}"),
        }
    }
}

/// Words a target or filter gives a meaning of its own: no subtype is named so.
pub const RESERVED: &[&str] = &[
    "character",
    "characters",
    "action",
    "actions",
    "reaction",
    "reactions",
    "card",
    "cards",
    "all",
    "player",
    "players",
    "me",
    "opp",
    "this",
    "frozen",
    "backedup",
    "attack",
    "uattack",
    "block",
    "blocked",
    "fresh",
    "powerful",
    "powerless",
    "abinstant",
    "abtrigger",
    "abauto",
    "bp",
    "sp",
];

/// The next effect after number `j` that is not behind an `||`.
fn next_effect(ops: &[Op], j: usize) -> Option<usize> {
    (j + 1..ops.len()).find(|&k| ops[k] != Op::Or)
}

/// The event each effect listens to, `Step`, `Next` or `Then`: none the same as an effect's
/// that starts it, since a rule may not emit the event it listens to.
fn step_events(ops: &[Op], independent: bool) -> Vec<&'static str> {
    let mut ev: Vec<&'static str> = Vec::with_capacity(ops.len());
    for k in 0..ops.len() {
        // (Every effect that starts `k` comes before it.)
        let starts_k =
            |j: usize| (!independent && next_effect(ops, j) == Some(k)) || (ops[k] == Op::Or && j + 1 == k);
        let e = ["Step", "Next", "Then"]
            .into_iter()
            .find(|e| (0..k).all(|j| !starts_k(j) || ev[j] != *e))
            .unwrap_or("Step");
        ev.push(e);
    }
    ev
}

/// The action that starts an effect, `id`, on `target` by emitting `event`; `ok` is `yes`, or
/// `$may` (declined, the emit is skipped).
fn step(event: &str, id: &str, target: &str, ok: &str) -> String {
    format!(
        "{{ emit = {{ event = \"{}\", args = {{ step = {}, card = \"$this\", target = {}, ok = {} }} }} }}",
        event,
        q(id),
        q(target),
        q(ok)
    )
}
