//! WWRF elements compiled to a native ruleset with event rules, on the prelude ([`PRELUDE`]).
//!
//! - **Players** are instances of `PC.PLAYER`; a player *is* their role: every role is an
//!   object of kind `ROLE` whose modifiers set `ROLE`, `CLASS`, `CATEGORY`, `ALIGNMENT` and
//!   the base voting powers, and whose rules are the role's ability lines, firing once for
//!   each player holding it.
//! - **Phases**: the stock `PHASE` counts phases (`Day 0` = 0, `Night 1` = 1, `Day 1` = 2, …);
//!   `IS_NIGHT` and `PHASE_NUMBER` follow it; the clock `ENDS` counts phase ends, and what lasts
//!   `~Phase`, `~NextPhase`, `~NextDay` waits on it.
//! - **Voting power**: `PUBLIC_VOTES` and `PRIVATE_VOTES`, variables whose modifiers apply in
//!   the order they were added (an absolute manipulation is a SET, a relative one an ADD); a
//!   special one has priority 1, after every public one. When one expires, the one beneath
//!   shows again.
//! - **Killings** are queued as `Kill` events and resolved after the rest of the trigger:
//!   each hits the victim and everyone absent at the victim (`Hit`); a hit lands unless a
//!   defense (`PC.DEFENSE` instances, each with its filters as the formula `MATCH`) evades
//!   it, the first by the guide's order (absence, active, passive, partial, recruitment).
//! - **Prompting triggers** wait for `execute`: at `Start …`/`Immediate …` the ability runs when
//!   executed; at `End …` and the pre-ends the selection is kept (`SEL_n`) and the ability runs
//!   when the phase ends. Automatic triggers run by themselves.

use super::syntax::*;
use crate::Error;
use crate::creature::write::{literal, q, write_rule};

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// The error codes of this module.
pub mod codes {
    /// What the guide defines and sheetd does not run yet, named.
    pub const UNSUPPORTED: &str = "wwrf.unsupported";
    /// Two elements of one name, or an ability naming a role no file defines.
    pub const ELEMENT: &str = "wwrf.element";
}

/// The most times a scaling by division repeats an automatic ability (`$total/2` with 40
/// players is 20).
pub const MAX_REPEAT: u32 = 20;

/// The prelude: players, phases, voting power, killings and defenses.
pub const PRELUDE: &str = r#"# WWRF's prelude: players, phases, votes, killings and defenses.
[ruleset]
name = "WWRF prelude"

[scopes]
"PC.PLAYER" = "PC"
"PC.DEFENSE" = "PC"
"PC.REDIRECT" = "PC"

[variables.PC]
IS_NIGHT = "BOOLEAN"            # the phase is a night
PHASE_NUMBER = "NUMBER"         # `Night 2` → 2 ($phase)
TOTAL = "NUMBER"                # every player ($total)
LIVING = "NUMBER"               # the living players ($living)

[stocks.PC]
PHASE = {}                      # Day 0 = 0, Night 1 = 1, Day 1 = 2, …
REDIRECTS = {}                  # redirections applied so far (their order)

[clocks.PC]
ENDS = {}                       # phase ends so far: what lasts ~Phase waits on it

[channels.PC]
STARTED = "NUMBER"              # the game has started (Starting has run)
NEW_PHASE = "NUMBER"            # the phase `start_phase` begins
ACTOR = { format = "STRING", holds = "PC.PLAYER" }     # the player whose ability runs
VICTIM = { format = "STRING", holds = "PC.PLAYER" }    # a killing's victim
ATTACKER = { format = "STRING", holds = "PC.PLAYER" }  # a killing's attacker
KILL_TYPE = "STRING"            # attack, kill, true kill, lynch, banish, true banish
HIT_AT = "STRING"               # where a hit lands: "" at home, or where its victim is absent
VOTER = { format = "STRING", holds = "PC.PLAYER" }     # who votes
DEAD = { format = "STRING", holds = "PC.PLAYER" }      # who died (or was banished)
KILLER = "STRING"               # who killed them
DEATH_TYPE = "STRING"           # how
LINE = "NUMBER"                 # the ability an `execute` names
REDIRECT_FOR = { format = "STRING", holds = "PC.PLAYER" }  # the target an ability is about to use
ABILITY_TYPE = "STRING"         # … the ability's type (`killing`) and subtype (`attack killing`)
ABILITY_SUBTYPE = "STRING"
FINAL = "STRING"                # … and where it lands, redirected or not
VISITOR = { format = "STRING", holds = "PC.PLAYER" }   # a visit: who visits whom, with what
VISITED = { format = "STRING", holds = "PC.PLAYER" }
VISIT_TYPE = "STRING"           # `killing`
VISIT_SUBTYPE = "STRING"        # `attack killing`
ACTED = { format = "STRING", holds = "PC.PLAYER" }     # an action: who acted, with what
ACTION_TYPE = "STRING"
ACTION_SUBTYPE = "STRING"

[variables."PC.PLAYER"]
ROLE = "STRING"
CLASS = "STRING"
CATEGORY = "STRING"
ALIGNMENT = "STRING"
PUBLIC_VOTES = { format = "NUMBER", order = "applied" }    # public voting power
PRIVATE_VOTES = { format = "NUMBER", order = "applied" }   # private voting power
DW_ROLE = { format = "STRING", order = "applied" }         # a weak disguise's role, class, …
DW_CLASS = { format = "STRING", order = "applied" }
DW_CATEGORY = { format = "STRING", order = "applied" }
DW_ALIGNMENT = { format = "STRING", order = "applied" }
DS_ROLE = { format = "STRING", order = "applied" }         # a strong disguise's
DS_CLASS = { format = "STRING", order = "applied" }
DS_CATEGORY = { format = "STRING", order = "applied" }
DS_ALIGNMENT = { format = "STRING", order = "applied" }

[channels."PC.PLAYER"]
ID = "STRING"                   # the player's own id (the setup writes it)
TARGET = { format = "STRING", holds = "PC.PLAYER" }   # @Target
RESULT = "STRING"               # @Result: what the player's last ability found
SUCCESS = "STRING"              # Success or Failure
FEEDBACK = "STRING"             # @ActionFeedback
DEATH = "STRING"                # how the player died (or was banished)

[stocks."PC.PLAYER"]
ALIVE = { min = "0", max = "1" }    # 1 living, 0 dead or banished
GHOST = { min = "0", max = "1" }    # banished: a ghost
VOTES = { min = "0" }               # votes received this day

[clocks."PC.PLAYER"]
VOTES_CAST = {}                 # votes the player cast: what lasts ~UntilUse waits on it

[variables."PC.DEFENSE"]
KIND = "STRING"                 # absence, active, passive, partial, recruitment
RANK = "NUMBER"                 # the order killings check defenses: absence 1 … recruitment 5
LIMIT = "NUMBER"                # uses it lasts (0: no limit)
MATCH = "BOOLEAN"               # it evades the killing being resolved

[channels."PC.DEFENSE"]
HOLDER = { format = "STRING", holds = "PC.PLAYER" }   # the player it protects
CREATOR = "STRING"              # the player who made it
LOCATION = "STRING"             # an absence: where the holder is

[stocks."PC.DEFENSE"]
USES = { min = "0" }

[variables."PC.REDIRECT"]
LIMIT = "NUMBER"                # uses it lasts (0: no limit)
MATCH = "BOOLEAN"               # it redirects the ability about to land

[channels."PC.REDIRECT"]
HOLDER = { format = "STRING", holds = "PC.PLAYER" }   # the player whose visitors it redirects
TO = "STRING"                   # where to

[stocks."PC.REDIRECT"]
USES = { min = "0" }
SEQ = {}                        # its place among the redirections (the oldest applies)

[kinds.ROLE]
scope = "PC.PLAYER"

[kinds.REDIRECT]
scope = "PC.REDIRECT"

[kinds.DEFENSE]
scope = "PC.DEFENSE"

[kinds.ATTRIBUTE]
scope = "PC.PLAYER"
attach = true                   # a custom attribute goes on its player

[kinds.WEAK_DISGUISE]           # a disguise as a role (keyed by the role), on its player
scope = "PC.PLAYER"
attach = true

[kinds.STRONG_DISGUISE]
scope = "PC.PLAYER"
attach = true

[global]
modify = [
  { var = "IS_NIGHT", set = "PHASE % 2 == 1" },
  { var = "PHASE_NUMBER", set = "floor((PHASE + 1) / 2)" },
  { var = "TOTAL", set = "count(PC.PLAYER)" },
  { var = "LIVING", set = "count(PC.PLAYER, ALIVE == 1)" },
]

[events]
Begin = { phase = "NEW_PHASE" }             # start_phase: the phase begins
Starting = {}                               # the game starts
Advance = {}                                # advance_phase: the phase ends …
PreEnd4 = {}
PreEnd3 = {}
PreEnd2 = {}
PreEnd1 = {}
End = {}
Settle1 = {}                                # (the killings the end queued resolve)
Settle2 = {}
Next = {}                                   # … the clock moves …
Start = {}                                  # … and the next begins
Execute = { player = { instance = true }, line = "LINE" }   # a player answers an ability's prompt
Kill = { victim = "VICTIM", attacker = "ATTACKER", type = "KILL_TYPE" }   # a killing, queued
Hit = { victim = "VICTIM", attacker = "ATTACKER", type = "KILL_TYPE", at = "HIT_AT" }  # it hits a player
Applied = { attribute = {} }                # a custom attribute is applied (its Starting)
Changed = {}                                # something significant changed (Passive)
Died = { player = "DEAD", attacker = "KILLER", type = "DEATH_TYPE" }
Defended = { defense = { instance = true }, creator = {}, kind = {}, attacker = {}, attacked = {} }
Vote = { voter = "VOTER", vote = { instance = true } }
Visit = { visitor = {}, player = {}, type = {}, subtype = {} }    # an ability visits a player …
Visited = { visitor = "VISITOR", player = "VISITED", type = "VISIT_TYPE", subtype = "VISIT_SUBTYPE" }   # … relayed (On Visited)
Act = { player = {}, source = {}, target = {}, type = {}, subtype = {} }   # a player's ability ran …
Acted = { player = "ACTED", source = {}, target = {}, type = "ACTION_TYPE", subtype = "ACTION_SUBTYPE" }  # … relayed (On Action)

[[rule]]
name = "the game starts"
on = "Begin"
guard = "STARTED == 0"
do = [
  { set_input = { channel = "STARTED", on = "global", value = 1 } },
  { emit = { event = "Starting" } },
]

[[rule]]
name = "the phase begins"
on = "Begin"
do = [
  { adjust = { channel = "PHASE", on = "global", by = "NEW_PHASE - PHASE" } },
  { emit = { event = "Start" } },
]

[[rule]]
name = "a new day's votes"
on = "Start"
guard = "!IS_NIGHT"
do = [
  { each = { as = "p", select = "PC.PLAYER" } },
  { set_input = { channel = "VOTES", on = "$p", value = 0 } },
]

[[rule]]
name = "a vote"
on = "Vote"
do = [
  { require = { formula = "VOTER.ALIVE == 1", message = "the dead do not vote" } },
  { require = { formula = "!IS_NIGHT", message = "votes are cast by day" } },
  { adjust = { channel = "VOTES", on = "$vote", by = "VOTER.PUBLIC_VOTES" } },
  { tick = { clock = "VOTES_CAST", on = "$voter" } },
]

[[rule]]
name = "a killing hits its victim and whoever is absent there"
on = "Kill"
do = [
  { emit = { event = "Hit", args = { victim = "$victim", attacker = "$attacker", type = "$type", at = "" } } },
  { each = { as = "absence", select = "PC.DEFENSE", where = "RANK == 1 && LOCATION == VICTIM" } },
  { read = { as = "absent", channel = "HOLDER", on = "$absence" } },
  { emit = { event = "Hit", args = { victim = "$absent", attacker = "$attacker", type = "$type", at = "$victim" } } },
]

[[rule]]
name = "a hit lands"
on = "Hit"
guard = 'count(PC.DEFENSE, MATCH) == 0 && VICTIM.ALIVE == 1'
do = [
  { set_input = { channel = "ALIVE", on = "$victim", value = 0 } },
  { set_input = { channel = "DEATH", on = "$victim", value = "$type" } },
  { set_input = { channel = "SUCCESS", on = "$attacker", value = "Success" } },
  { set_input = { channel = "FEEDBACK", on = "$attacker", value = "the killing succeeded" } },
  { emit = { event = "Died", args = { player = "$victim", attacker = "$attacker", type = "$type" } } },
]

[[rule]]
name = "a banishment leaves a ghost"
on = "Died"
guard = 'DEATH_TYPE == "banish" || DEATH_TYPE == "true banish"'
do = [{ set_input = { channel = "GHOST", on = "$player", value = 1 } }]

[[rule]]
name = "a defense evades a hit"
on = "Hit"
guard = 'VICTIM.ALIVE == 1'
do = [
  { each = { as = "defense", select = "PC.DEFENSE", where = "MATCH", order = "RANK", first = 1 } },
  { adjust = { channel = "USES", on = "$defense", by = "1" } },
  { set_input = { channel = "SUCCESS", on = "$attacker", value = "Failure" } },
  { set_input = { channel = "FEEDBACK", on = "$attacker", value = "the killing was evaded" } },
  { read = { as = "creator", channel = "CREATOR", on = "$defense" } },
  { read = { as = "kind", channel = "KIND", on = "$defense" } },
  { emit = { event = "Defended", args = { defense = "$defense", creator = "$creator", kind = "$kind", attacker = "$attacker", attacked = "$victim" } } },
]

[[rule]]
name = "a defense used up goes"
on = "Defended"
do = [
  { each = { as = "spent", select = "PC.DEFENSE", where = "LIMIT > 0 && USES >= LIMIT" } },
  { remove_object = "$spent" },
]

# `Passive` lines run whenever something significant changes: the game starts, a phase begins,
# someone dies.
[[rule]]
name = "the game starting is a change"
on = "Starting"
do = [{ emit = { event = "Changed" } }]

[[rule]]
name = "a phase beginning is a change"
on = "Start"
do = [{ emit = { event = "Changed" } }]

[[rule]]
name = "a death is a change"
on = "Died"
do = [{ emit = { event = "Changed" } }]

# Visits and actions reach their triggers through a relay, so that an ability a visit or an
# action triggers may itself visit and act.
[[rule]]
name = "a visit"
on = "Visit"
do = [{ emit = { event = "Visited", args = { visitor = "$visitor", player = "$player", type = "$type", subtype = "$subtype" } } }]

[[rule]]
name = "an action"
on = "Act"
do = [{ emit = { event = "Acted", args = { player = "$player", source = "$source", target = "$target", type = "$type", subtype = "$subtype" } } }]

[[rule]]
name = "the phase ends"
on = "Advance"
do = [{ emit = { event = "PreEnd4" } }]
"#;

/// The rules that chain a phase's end, written after every ability (so that what an ability
/// queues at one timing runs before the next timing): each timing's event, when its rules are
/// done, emits the next; the two settling events let the killings the end queued resolve (Kill →
/// Hit → Died) while the phase's defenses last; then the clock moves and the next phase begins.
fn chain() -> String {
    const LINKS: &[(&str, &str, &str)] = &[
        ("fourth pre-end done", "PreEnd4", "PreEnd3"),
        ("third pre-end done", "PreEnd3", "PreEnd2"),
        ("second pre-end done", "PreEnd2", "PreEnd1"),
        ("pre-end done", "PreEnd1", "End"),
        ("end done", "End", "Settle1"),
        ("killings hit", "Settle1", "Settle2"),
        ("hits land", "Settle2", "Next"),
    ];
    let mut out = String::from("\n# The end of a phase, timing after timing, then the next phase.\n");
    for (name, on, next) in LINKS {
        let emit = [format!("{{ emit = {{ event = \"{next}\" }} }}")];
        write_rule(&mut out, name, on, "", &[], None, None, &emit);
    }
    let next = [
        "{ tick = { clock = \"ENDS\" } }".to_owned(),
        "{ adjust = { channel = \"PHASE\", on = \"global\", by = \"1\" } }".to_owned(),
        "{ emit = { event = \"Start\" } }".to_owned(),
    ];
    write_rule(&mut out, "the next phase", "Next", "", &[], None, None, &next);
    out
}

/// One action, or one by day and another by night (what lasts `~NextDay` ends a different
/// number of phase ends away).
#[derive(Clone, Debug)]
enum Act {
    Same(String),
    ByPhase { day: String, night: String },
}

/// An ability's actions; whether it reads `@Selection`.
#[derive(Default)]
struct Body {
    acts: Vec<Act>,
    selection: bool,
    /// Selectors bound so far (`$who1`, `$who2`).
    binds: usize,
    /// The ability's first target visited (`@ActionTarget`).
    visited: Option<String>,
}

impl Body {
    fn push(&mut self, a: String) {
        self.acts.push(Act::Same(a));
    }

    fn by_phase(&self) -> bool {
        self.acts.iter().any(|a| matches!(a, Act::ByPhase { .. }))
    }

    /// The actions for a day (`night` false) or a night.
    fn render(&self, night: bool) -> Vec<String> {
        self.acts
            .iter()
            .map(|a| match a {
                Act::Same(s) => s.clone(),
                Act::ByPhase { day, night: n } => {
                    if night {
                        n.clone()
                    } else {
                        day.clone()
                    }
                }
            })
            .collect()
    }
}

/// How long something lasts, as an `until` (`, until = { … }`): the same whenever it is
/// added, or by day and by night.
enum Until {
    Same(String),
    ByPhase { day: String, night: String },
}

/// The trigger's names for `@Attacker`, `@This`, `@Attacked` in its rule.
type Names = &'static [(&'static str, &'static str)];

/// What the compiler keeps while it writes.
struct Writer {
    rules: String,
    objects: String,
    errors: Vec<(usize, Error)>,
    /// The most ability lines one element has (each line number has its channels).
    lines: usize,
    /// Custom attributes named anywhere: each a counter `ATTR_<NAME>` on players.
    attributes: BTreeSet<String>,
    /// Roles by name: (class, category, alignment).
    roles: BTreeMap<String, (String, String, String)>,
    /// Variables of every player, with the formula every role sets them to.
    player_vars: Vec<(String, &'static str, String)>,
    /// Global variables and their formulas.
    global_vars: Vec<(String, &'static str, String)>,
    /// Some ability disguises: every role gets its disguise objects.
    disguises: bool,
}

/// `Fortune Teller` → `FORTUNE_TELLER`: letters and digits, every other run of characters one
/// `_`, none at the end (a formula's name cannot end in one); `X` for none.
pub fn ident(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    for c in t.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_uppercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    if out.is_empty() { "X".to_owned() } else { out }
}

fn unsupported(what: impl Into<String>, span: Span) -> Error {
    Error { code: codes::UNSUPPORTED, message: what.into(), span }
}

/// The elements (each with its file's index) as the native text after the prelude; every
/// error, each in its file.
pub fn compile(elements: &[(usize, Element)]) -> Result<String, Vec<(usize, Error)>> {
    let mut w = Writer {
        rules: String::new(),
        objects: String::new(),
        errors: Vec::new(),
        lines: 0,
        attributes: BTreeSet::new(),
        roles: BTreeMap::new(),
        player_vars: Vec::new(),
        global_vars: Vec::new(),
        disguises: false,
    };
    let mut seen = BTreeSet::new();
    for (file, e) in elements {
        if !seen.insert(e.name.to_ascii_lowercase()) {
            let m = format!("the element `{}` is defined twice", e.name);
            w.errors.push((*file, Error { code: codes::ELEMENT, message: m, span: e.name_span.clone() }));
        }
        w.lines = w.lines.max(e.lines.len());
        match &e.kind {
            ElementKind::Role { class, category, team } => {
                let align = team.clone().unwrap_or_else(|| class.clone());
                w.roles.insert(e.name.clone(), (class.clone(), category.clone(), align));
            }
            ElementKind::Attribute => {
                // Each attribute's counter is named after it: two names, one counter, refused.
                let id = ident(&e.name);
                if let Some(other) = w.attributes.iter().find(|a| ident(a) == id && **a != e.name) {
                    let m = format!(
                        "the attribute `{}` counts as ATTR_{id}, as `{other}` does: rename one",
                        e.name
                    );
                    w.errors
                        .push((*file, Error { code: codes::ELEMENT, message: m, span: e.name_span.clone() }));
                }
                w.attributes.insert(e.name.clone());
            }
            _ => {}
        }
    }
    for (file, e) in elements {
        w.element(*file, e);
    }
    if !w.errors.is_empty() {
        return Err(w.errors);
    }
    Ok(w.finish(elements))
}

impl Writer {
    /// The native text: declarations, objects, rules, the phase chain.
    fn finish(&self, elements: &[(usize, Element)]) -> String {
        let mut out = String::from("# The elements, compiled by sheetd's WWRF dialect.\n");
        if !self.global_vars.is_empty() {
            out.push_str("\n[variables.PC]\n");
            for (v, format, _) in &self.global_vars {
                let _ = writeln!(out, "{} = \"{format}\"", q(v));
            }
        }
        out.push_str("\n[variables.\"PC.PLAYER\"]\n");
        // (One counter for names that read alike: see `compile`.)
        let mut counters: BTreeSet<String> = self.attributes.iter().map(|a| ident(a)).collect();
        // … and every one a selector or condition reads (`@(Attr:Marked)`), applied or not.
        let formulas = self.global_vars.iter().chain(&self.player_vars).map(|(_, _, f)| f.as_str());
        for text in [self.rules.as_str(), self.objects.as_str()].into_iter().chain(formulas) {
            counters.extend(text.match_indices("ATTR_").map(|(i, _)| {
                let rest = &text[i + 5..];
                let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
                rest[..end].to_owned()
            }));
        }
        counters.retain(|c| !c.is_empty());
        for a in &counters {
            let _ = writeln!(out, "ATTR_{a} = \"NUMBER\"              # custom attributes held");
        }
        for (v, format, _) in &self.player_vars {
            let _ = writeln!(out, "{} = \"{format}\"", q(v));
        }
        out.push_str("\n[channels.\"PC.PLAYER\"]\n");
        for a in &counters {
            let _ = writeln!(
                out,
                "LAST_{} = \"STRING\"               # the last applied (a remove applying's)",
                a
            );
        }
        for n in 1..=self.lines {
            let _ = writeln!(
                out,
                "SEL_{n} = \"STRING\"                 # line {n}'s selection, kept until its timing"
            );
            let _ = writeln!(out, "LAST_TARGET_{n} = \"STRING\"");
        }
        out.push_str("\n[stocks.\"PC.PLAYER\"]\n");
        for n in 1..=self.lines {
            let _ =
                writeln!(out, "ARMED_{n} = {{ min = \"0\", max = \"1\" }}  # line {n} waits for its timing");
            let _ = writeln!(
                out,
                "USES_{n} = {{}}                      # its uses in the phase USED_AT_{n} counts"
            );
            let _ = writeln!(out, "USED_AT_{n} = {{}}");
            let _ = writeln!(out, "TOTAL_USES_{n} = {{}}");
        }
        if !self.global_vars.is_empty() {
            out.push_str("\n[global]\nmodify = [\n");
            for (v, _, f) in &self.global_vars {
                let _ = writeln!(out, "  {{ var = {}, set = {} }},", q(v), q(f));
            }
            out.push_str("]\n");
        }
        self.role_objects(elements, &mut out);
        out.push_str(&self.objects);
        out.push_str(&self.rules);
        out.push_str(&chain());
        out
    }

    /// Every role: what it is, the base voting powers, what investigations see; and, when some
    /// ability disguises, the disguises as it.
    fn role_objects(&self, elements: &[(usize, Element)], out: &mut String) {
        // Every role: what it is, the base voting powers, and what investigations see.
        for (_, e) in elements {
            let ElementKind::Role { class, category, team } = &e.kind else { continue };
            let align = team.clone().unwrap_or_else(|| class.clone());
            let _ = write!(out, "\n[[object]]\nkind = \"ROLE\"\nkey = {}\nmodify = [\n", q(&e.name));
            for (var, v) in
                [("ROLE", &e.name), ("CLASS", class), ("CATEGORY", category), ("ALIGNMENT", &align)]
            {
                let _ = writeln!(out, "  {{ var = \"{var}\", set = {} }},", q(&text_value(v)));
            }
            out.push_str(
                "  { var = \"PUBLIC_VOTES\", set = \"1\" },\n  { var = \"PRIVATE_VOTES\", set = \"1\" },\n",
            );
            for (v, format, f) in &self.player_vars {
                let f = if *format == "STRING" { format!("={f}") } else { f.clone() };
                let _ = writeln!(out, "  {{ var = {}, set = {} }},", q(v), q(&f));
            }
            out.push_str("]\n");
            if self.disguises {
                // Disguised as this role: weakly, strongly (attached to the disguised player).
                for (kind, pre) in [("WEAK_DISGUISE", "DW"), ("STRONG_DISGUISE", "DS")] {
                    let _ =
                        write!(out, "\n[[object]]\nkind = \"{kind}\"\nkey = {}\nmodify = [\n", q(&e.name));
                    for (var, v) in
                        [("ROLE", &e.name), ("CLASS", class), ("CATEGORY", category), ("ALIGNMENT", &align)]
                    {
                        let _ = writeln!(out, "  {{ var = \"{pre}_{var}\", set = {} }},", q(&text_value(v)));
                    }
                    out.push_str("]\n");
                }
            }
        }
    }

    fn element(&mut self, file: usize, e: &Element) {
        match &e.kind {
            ElementKind::Role { .. } => {
                let _ = writeln!(self.rules, "\n# {} (role)", e.name.replace(char::is_control, " "));
                let object = format!("object = {{ kind = \"ROLE\", key = {} }}", q(&e.name));
                for l in &e.lines {
                    self.line(file, e, &object, false, l);
                }
            }
            ElementKind::Attribute => {
                let _ = writeln!(self.rules, "\n# {} (attribute)", e.name.replace(char::is_control, " "));
                // What lasts as long as the attribute (`~Attribute`, from its `Starting`) is the
                // attribute object's own modifiers, on its player: gone when it goes.
                let mut modify = vec![format!("{{ var = \"ATTR_{}\", add = \"1\" }}", ident(&e.name))];
                let object = format!("object = {{ kind = \"ATTRIBUTE\", key = {} }}", q(&e.name));
                for l in &e.lines {
                    match while_applied(l) {
                        Some(Ok(m)) => modify.push(m),
                        Some(Err(err)) => self.errors.push((file, err)),
                        None => self.line(file, e, &object, true, l),
                    }
                }
                let _ = write!(
                    self.objects,
                    "\n[[object]]\nkind = \"ATTRIBUTE\"\nkey = {}\nmodify = [{}]\n",
                    q(&e.name),
                    modify.join(", ")
                );
            }
            ElementKind::Team { win } => {
                let mut sels = Vec::new();
                for v in win {
                    match player_where(v, "ACTOR") {
                        Ok(w) => sels.push(format!("({w})")),
                        Err(m) => self.errors.push((file, unsupported(m, v.span.clone()))),
                    }
                }
                if !sels.is_empty() {
                    // The team wins when every living player matches one of its selectors.
                    let f = format!("count(PC.PLAYER, ALIVE == 1 && !({})) == 0", sels.join(" || "));
                    let var = self.fresh_global(&format!("WINS_{}", ident(&e.name)));
                    self.global_vars.push((var, "BOOLEAN", f));
                }
                if let Some(l) = e.lines.first() {
                    let m = format!(
                        "`{}`: a team's own abilities (sheetd runs a role's and an attribute's)",
                        e.name
                    );
                    self.errors.push((file, unsupported(m, l.span.clone())));
                }
            }
            ElementKind::Group { .. } => {
                if let Some(l) = e.lines.first() {
                    let m = format!("`{}`: a group's abilities (sheetd does not run groups yet)", e.name);
                    self.errors.push((file, unsupported(m, l.span.clone())));
                }
            }
        }
    }

    // long: the trigger's event and filters, the guard from restrictions and scaling, then the
    // ability's rules, for a prompting or an automatic trigger.
    fn line(&mut self, file: usize, e: &Element, object: &str, attribute: bool, l: &Line) {
        let n = l.number;
        let name = format!("{}: {n}", e.name);
        let mut guard: Vec<String> = Vec::new();
        // Who may act: the living by default; a haunted role's ghosts too.
        let status = l.params.restrictions.iter().find_map(|r| match r.kind {
            RestrictionKind::Status(s) => Some(s),
            _ => None,
        });
        // (One's own death triggers on dying; a haunted role acts alive or ghostly.)
        let own_death = matches!(l.trigger.kind, TriggerKind::Death { who: None, .. });
        guard.push(
            match status {
                Some(Status::Alive) => "ALIVE == 1",
                Some(Status::Ghostly) => "GHOST == 1",
                Some(Status::Any) => "1 == 1",
                None if own_death => "1 == 1",
                None if e.haunted => "(ALIVE == 1 || GHOST == 1)",
                None => "ALIVE == 1",
            }
            .to_owned(),
        );
        for r in &l.params.restrictions {
            match self.restriction(r, n) {
                Ok(Some(g)) => guard.push(format!("({g})")),
                Ok(None) => {}
                Err(err) => return self.errors.push((file, err)),
            }
        }
        let scale = l.params.scaling.as_ref().map_or_else(|| "1".to_owned(), scale_formula);
        guard.push(format!("if(USED_AT_{n} == ENDS, USES_{n}, 0) < ({scale})"));
        // The trigger: its event, filters, names, and whether `execute` answers it.
        let mut filters: Vec<String> = Vec::new();
        let mut names: Names = &[];
        let (event, prompting, now) = match &l.trigger.kind {
            TriggerKind::Timing { when, day, prompting } => {
                if let Some(d) = day {
                    guard.push(if *d { "!IS_NIGHT" } else { "IS_NIGHT" }.to_owned());
                }
                let event = match when {
                    When::Start | When::Immediate => "Start",
                    When::PreEnd(4) => "PreEnd4",
                    When::PreEnd(3) => "PreEnd3",
                    When::PreEnd(2) => "PreEnd2",
                    When::PreEnd(_) => "PreEnd1",
                    When::End => "End",
                };
                (event, *prompting, matches!(when, When::Start | When::Immediate))
            }
            TriggerKind::Starting if attribute => {
                filters.push("attribute = \"$this\"".to_owned());
                ("Applied", false, true)
            }
            TriggerKind::Starting => ("Starting", false, true),
            // Whenever something significant changes: the game starts, a phase, a death.
            TriggerKind::Passive => ("Changed", false, true),
            TriggerKind::Death { how, who } => {
                names = &[("Attacker", "$attacker"), ("This", "$player")];
                match who {
                    None if attribute => guard.push("DEAD == ID".to_owned()),
                    None => filters.push("player = \"$this\"".to_owned()),
                    Some(v) => match player_test(v, "__ME__") {
                        // Read on the dead player; `@Self` is the trigger's player.
                        Ok(w) => guard.push(format!("({})", on_holder(&w, "DEAD").replace("__ME__", "ID"))),
                        Err(m) => return self.errors.push((file, unsupported(m, v.span.clone()))),
                    },
                }
                match how {
                    Death::Death => {}
                    Death::Killed => guard.push(
                        "(DEATH_TYPE == \"attack\" || DEATH_TYPE == \"kill\" || DEATH_TYPE == \"true kill\")"
                            .to_owned(),
                    ),
                    Death::Lynch => filters.push("type = \"lynch\"".to_owned()),
                    Death::Banishment | Death::Banished => {
                        guard.push("(DEATH_TYPE == \"banish\" || DEATH_TYPE == \"true banish\")".to_owned())
                    }
                }
                ("Died", false, true)
            }
            TriggerKind::Visited { who, filter } => {
                names = &[("Visitor", "$visitor"), ("This", "$player")];
                match who {
                    None if attribute => guard.push("VISITED == ID".to_owned()),
                    None => filters.push("player = \"$this\"".to_owned()),
                    Some(v) => match player_test(v, "__ME__") {
                        Ok(w) => {
                            guard.push(format!("({})", on_holder(&w, "VISITED").replace("__ME__", "ID")))
                        }
                        Err(m) => return self.errors.push((file, unsupported(m, v.span.clone()))),
                    },
                }
                if let Some(f) = filter {
                    guard.push(filter_guard(f, "VISIT_TYPE", "VISIT_SUBTYPE"));
                }
                ("Visited", false, true)
            }
            TriggerKind::Action { who, any, filter } => {
                names = &[("ActionTarget", "$target"), ("This", "$player")];
                match who {
                    None if attribute => guard.push("ACTED == ID".to_owned()),
                    None => filters.push("player = \"$this\"".to_owned()),
                    Some(v) => match player_test(v, "__ME__") {
                        Ok(w) => guard.push(format!("({})", on_holder(&w, "ACTED").replace("__ME__", "ID"))),
                        Err(m) => return self.errors.push((file, unsupported(m, v.span.clone()))),
                    },
                }
                // `On Action` matches the source: done through this very role (or attribute).
                if !any && who.is_none() {
                    let source = match &e.kind {
                        ElementKind::Attribute => format!("attribute:{}", e.name),
                        _ => format!("role:{}", e.name),
                    };
                    filters.push(format!("source = {}", q(&source)));
                }
                if let Some(f) = filter {
                    guard.push(filter_guard(f, "ACTION_TYPE", "ACTION_SUBTYPE"));
                }
                ("Acted", false, true)
            }
            TriggerKind::Defense(kind) if !attribute => {
                names = &[("Attacker", "$attacker"), ("Attacked", "$attacked")];
                filters.push("creator = \"$this\"".to_owned());
                if let Some(k) = kind {
                    filters.push(format!("kind = \"{k}\""));
                }
                ("Defended", false, true)
            }
            other => {
                let m = format!(
                    "the trigger `{}` here (sheetd runs the phase timings, Starting, Passive, On Death, On Killed, On Lynch, On Banishment, On Visited, On Action, On Any Action and, for roles, On Defense)",
                    trigger_name(other)
                );
                return self.errors.push((file, unsupported(m, l.trigger.span.clone())));
            }
        };
        if prompting && attribute {
            let m = "a prompting trigger in an attribute (sheetd prompts a role's abilities)";
            return self.errors.push((file, unsupported(m, l.trigger.span.clone())));
        }
        let direct = l.params.other.iter().any(|o| matches!(o, Other::Direct | Other::Visitless));
        let visits = !l.params.other.contains(&Other::Visitless);
        let source = match &e.kind {
            ElementKind::Attribute => format!("attribute:{}", e.name),
            _ => format!("role:{}", e.name),
        };
        let body = match self.ability(names, prompting, (direct, visits), &source, &l.ability, e, n) {
            Ok(b) => b,
            Err(err) => return self.errors.push((file, err)),
        };
        let uses = [
            format!(
                "{{ adjust = {{ channel = \"USES_{n}\", by = \"if(USED_AT_{n} == ENDS, 1, 1 - USES_{n})\" }} }}"
            ),
            format!("{{ adjust = {{ channel = \"USED_AT_{n}\", by = \"ENDS - USED_AT_{n}\" }} }}"),
            format!("{{ adjust = {{ channel = \"TOTAL_USES_{n}\", by = \"1\" }} }}"),
        ];
        let me = "{ read = { as = \"self\", channel = \"ID\" } }".to_owned();
        if prompting {
            // Answered by `execute`: the selection asked (if the ability takes one), then the
            // ability run now (a start or immediate timing) or kept until its timing.
            let mut ask = vec![me.clone()];
            if body.selection {
                ask.push(format!(
                    "{{ ask = {{ as = \"sel\", prompt = {}, options = {{ select = \"PC.PLAYER\", where = \"ALIVE == 1\" }} }} }}",
                    q(&format!("{}: {} — whom?", e.name, trigger_name(&l.trigger.kind)))
                ));
                ask.push(format!("{{ set_input = {{ channel = \"SEL_{n}\", value = \"$sel\" }} }}"));
                if l.params
                    .restrictions
                    .iter()
                    .any(|r| r.kind == RestrictionKind::Succession { target: true })
                {
                    ask.push(format!(
                        "{{ require = {{ formula = \"TOTAL_USES_{n} == 0 || ENDS - USED_AT_{n} > 2 || SEL_{n} != LAST_TARGET_{n}\", message = \"not the same target twice in succession\" }} }}"
                    ));
                }
                ask.push(format!("{{ set_input = {{ channel = \"LAST_TARGET_{n}\", value = \"$sel\" }} }}"));
            }
            ask.extend(uses.iter().cloned());
            let filters = ["player = \"$this\"".to_owned(), format!("line = \"{n}\"")];
            if now {
                self.rules_by_phase(&name, "Execute", object, &filters, &guard, &ask, &body);
            } else {
                ask.push(format!("{{ set_input = {{ channel = \"ARMED_{n}\", value = 1 }} }}"));
                let g = guard.join(" && ");
                write_rule(&mut self.rules, &name, "Execute", object, &filters, None, Some(&g), &ask);
                // At its timing: run once with the kept selection.
                let mut pre = vec![me];
                if body.selection {
                    pre.push(format!("{{ read = {{ as = \"sel\", channel = \"SEL_{n}\" }} }}"));
                }
                pre.push(format!("{{ set_input = {{ channel = \"ARMED_{n}\", value = 0 }} }}"));
                let mut g: Vec<String> =
                    guard.iter().filter(|g| !g.starts_with("if(USED_AT_")).cloned().collect();
                g.push(format!("ARMED_{n} == 1"));
                self.rules_by_phase(&format!("{name} (at its timing)"), event, object, &[], &g, &pre, &body);
            }
        } else {
            // Automatic: repeated as its scaling says, each run counted.
            let most = match &l.params.scaling {
                None => 1,
                Some(Scaling::Times(k)) => *k,
                Some(Scaling::OddEven { odd, even }) => (*odd).max(*even),
                Some(Scaling::Cases(c, d)) => c.iter().map(|x| x.3).chain(*d).max().unwrap_or(1),
                Some(Scaling::Divide(..)) => MAX_REPEAT,
            };
            let mut pre = vec![me];
            pre.extend(uses.iter().cloned());
            for k in 1..=most {
                let rule = if most == 1 { name.clone() } else { format!("{name} (run {k})") };
                self.rules_by_phase(&rule, event, object, &filters, &guard, &pre, &body);
            }
        }
    }

    /// A rule doing `pre` then the ability; twice (by day, by night) when what the ability adds
    /// lasts by the phase.
    #[allow(clippy::too_many_arguments)]
    fn rules_by_phase(
        &mut self,
        name: &str,
        event: &str,
        object: &str,
        filters: &[String],
        guard: &[String],
        pre: &[String],
        body: &Body,
    ) {
        let variants: &[(Option<bool>, &str)] = if body.by_phase() {
            &[(Some(false), " (by day)"), (Some(true), " (by night)")]
        } else {
            &[(None, "")]
        };
        for (night, suffix) in variants {
            let mut g = guard.to_vec();
            match night {
                Some(true) => g.push("IS_NIGHT".to_owned()),
                Some(false) => g.push("!IS_NIGHT".to_owned()),
                None => {}
            }
            let mut actions = pre.to_vec();
            actions.extend(body.render(night.unwrap_or(false)));
            let g = g.join(" && ");
            write_rule(
                &mut self.rules,
                &format!("{name}{suffix}"),
                event,
                object,
                filters,
                None,
                Some(&g),
                &actions,
            );
        }
    }

    /// A restriction as a guard, read on the acting player (none: checked elsewhere).
    fn restriction(&mut self, r: &Restriction, n: usize) -> Result<Option<String>, Error> {
        Ok(Some(match &r.kind {
            RestrictionKind::Temporal { day, number, onwards } => {
                let kind = if *day { "!IS_NIGHT" } else { "IS_NIGHT" };
                match number {
                    None => kind.to_owned(),
                    Some(k) => {
                        let at = if *day { 2 * k } else { (2 * k).saturating_sub(1) };
                        if *onwards { format!("{kind} && PHASE >= {at}") } else { format!("PHASE == {at}") }
                    }
                }
            }
            RestrictionKind::Attribute { actor, has, attribute } => {
                self.attributes.insert(attribute.clone());
                let var = format!("ATTR_{}", ident(attribute));
                let on = match actor {
                    None => String::new(),
                    Some(v) if v.is("Self") => String::new(),
                    Some(v) if v.is("Target") => "TARGET.".to_owned(),
                    Some(v) => {
                        let m = format!(
                            "an attribute restriction on `{}` (sheetd reads @Self and @Target)",
                            show(v)
                        );
                        return Err(unsupported(m, v.span.clone()));
                    }
                };
                if *has { format!("{on}{var} > 0") } else { format!("{on}{var} == 0") }
            }
            // Not in the previous phase of its kind (two phase ends ago).
            RestrictionKind::Succession { target: false } => {
                format!("TOTAL_USES_{n} == 0 || ENDS - USED_AT_{n} > 2")
            }
            RestrictionKind::Succession { target: true } | RestrictionKind::Status(_) => return Ok(None),
            RestrictionKind::Quantity(k) => format!("TOTAL_USES_{n} < {k}"),
            RestrictionKind::Condition(c) => {
                self.note_attributes(c);
                cond_formula(c).map_err(|m| unsupported(m, r.span.clone()))?
            }
        }))
    }

    /// The custom attributes a condition names (each is a counter on players).
    fn note_attributes(&mut self, c: &Cond) {
        match c {
            Cond::Has(_, a) => {
                if let Some(t) = a.text() {
                    self.attributes.insert(t.to_owned());
                }
            }
            Cond::Not(c) => self.note_attributes(c),
            Cond::And(cs) | Cond::Or(cs) => cs.iter().for_each(|c| self.note_attributes(c)),
            Cond::AndOr(a, b, d) | Cond::OrAnd(a, b, d) => {
                for c in [a, b, d] {
                    self.note_attributes(c);
                }
            }
            _ => {}
        }
    }

    /// An ability's actions, then `Acted` (what `On Action` and its kin listen to).
    #[allow(clippy::too_many_arguments)]
    fn ability(
        &mut self,
        names: Names,
        prompting: bool,
        flags: (bool, bool),
        source: &str,
        a: &Ability,
        e: &Element,
        n: usize,
    ) -> Result<Body, Error> {
        let mut b = self.ability_body(names, prompting, flags, a, e, n)?;
        let (ty, sub) = ability_type(&a.kind);
        let target = b.visited.clone().unwrap_or_default();
        b.push(format!(
            "{{ emit = {{ event = \"Act\", args = {{ player = \"$self\", source = {}, target = {}, type = {}, subtype = {} }} }} }}",
            q(source),
            q(&target),
            q(ty),
            q(&sub)
        ));
        Ok(b)
    }

    // long: one arm per ability type.
    fn ability_body(
        &mut self,
        names: Names,
        prompting: bool,
        (direct, visits): (bool, bool),
        a: &Ability,
        e: &Element,
        n: usize,
    ) -> Result<Body, Error> {
        let mut b = Body::default();
        let player = |w: &mut Writer, v: &Value, b: &mut Body| w.player(names, prompting, v, b);
        // A target the ability visits: redirected, unless the trigger is direct or visitless.
        // A target the ability visits: redirected (unless the trigger is direct or visitless),
        // then visited (`Visited`, unless visitless).
        let visit = |w: &mut Writer, v: &Value, b: &mut Body, ty: &str, sub: &str| -> Result<String, Error> {
            let p = w.player(names, prompting, v, b)?;
            let p = if direct { p } else { redirected(b, p, ty, sub) };
            // (Not one's own house: an ability on oneself visits no one.)
            if visits && p != "$self" {
                b.push(format!(
                    "{{ emit = {{ event = \"Visit\", args = {{ visitor = \"$self\", player = {}, type = {}, subtype = {} }} }} }}",
                    q(&p),
                    q(ty),
                    q(sub)
                ));
            }
            b.visited.get_or_insert_with(|| p.clone());
            Ok(p)
        };
        match &a.kind {
            AbilityKind::Killing { how, target } => {
                let p = visit(
                    self,
                    target,
                    &mut b,
                    "killing",
                    &format!("{} killing", how.name().replace(' ', "-")),
                )?;
                b.push(format!(
                    "{{ emit = {{ event = \"Kill\", args = {{ victim = {}, attacker = \"$self\", type = \"{}\" }} }} }}",
                    q(&p),
                    how.name()
                ));
                b.push(feedback(&format!("{} queued", how.name())));
            }
            AbilityKind::Investigating { what, levels } => {
                let seen = |x: &str| match (levels.strong, levels.weak) {
                    (true, true) => format!("if(DS_{x} != \"\", DS_{x}, if(DW_{x} != \"\", DW_{x}, {x}))"),
                    (true, false) => format!("if(DS_{x} != \"\", DS_{x}, {x})"),
                    (false, true) => format!("if(DW_{x} != \"\", DW_{x}, {x})"),
                    (false, false) => x.to_owned(),
                };
                let (target, formula, format) = match what {
                    Investigation::Role(t) => (t, seen("ROLE"), "STRING"),
                    Investigation::Class(t) => (t, seen("CLASS"), "STRING"),
                    Investigation::Category(t) => (t, seen("CATEGORY"), "STRING"),
                    Investigation::Alignment(t) => (t, seen("ALIGNMENT"), "STRING"),
                    Investigation::Attribute(t, attr) => {
                        let Some(name) = attr.text() else {
                            return Err(unsupported(
                                "an attribute investigation of a constant attribute",
                                attr.span.clone(),
                            ));
                        };
                        self.attributes.insert(name.to_owned());
                        (t, format!("if(ATTR_{} > 0, \"Success\", \"Failure\")", ident(name)), "STRING")
                    }
                    Investigation::Count(role) => {
                        let Some(r) = role.text().filter(|r| !r.contains(['"', '\\'])) else {
                            return Err(unsupported(
                                "a count investigation of a constant role",
                                role.span.clone(),
                            ));
                        };
                        let f = format!("count(PC.PLAYER, ALIVE == 1 && {} == \"{r}\")", seen("ROLE"));
                        return Ok(self.counted(b, &format!("{}_{n}", ident(&e.name)), f));
                    }
                    Investigation::PlayerCount(sel) => {
                        let w = player_where(sel, "ACTOR").map_err(|m| unsupported(m, sel.span.clone()))?;
                        b.push(
                            "{ set_input = { channel = \"ACTOR\", on = \"global\", value = \"$self\" } }"
                                .to_owned(),
                        );
                        return Ok(self.counted(
                            b,
                            &format!("{}_{n}", ident(&e.name)),
                            format!("count(PC.PLAYER, {w})"),
                        ));
                    }
                };
                let p = visit(
                    self,
                    target,
                    &mut b,
                    "investigating",
                    &format!("{} investigating", investigation_name(what)),
                )?;
                // What it sees: a variable of every player, read on the target now.
                // (One variable for each kind of look, shared by every line that looks so.)
                let var = match what {
                    Investigation::Attribute(_, attr) => {
                        format!("SEEN_HAS_{}", ident(attr.text().unwrap_or("")))
                    }
                    other => format!(
                        "SEEN_{}{}{}",
                        investigation_name(other).to_ascii_uppercase(),
                        if levels.weak { "_WD" } else { "" },
                        if levels.strong { "_SD" } else { "" }
                    ),
                };
                if !self.player_vars.iter().any(|(v, _, _)| *v == var) {
                    self.player_vars.push((var.clone(), format, formula));
                }
                b.push(format!("{{ read = {{ as = \"seen\", channel = {}, on = {} }} }}", q(&var), q(&p)));
                b.push(
                    "{ set_input = { channel = \"RESULT\", on = \"$self\", value = \"$seen\" } }".to_owned(),
                );
                b.push(
                    "{ set_input = { channel = \"SUCCESS\", on = \"$self\", value = \"Success\" } }"
                        .to_owned(),
                );
                b.push(feedback("investigated"));
            }
            AbilityKind::Target { value, ty } => {
                if !["Player", "Dead", "Player Optional"].contains(&ty.as_str()) {
                    return Err(unsupported(
                        format!("targeting a {ty} (sheetd keeps players as targets)"),
                        a.span.clone(),
                    ));
                }
                let p = visit(self, value, &mut b, "targeting", "target targeting")?;
                b.push(format!(
                    "{{ set_input = {{ channel = \"TARGET\", on = \"$self\", value = {} }} }}",
                    q(&p)
                ));
                b.push(feedback("targeted"));
            }
            AbilityKind::Untarget => {
                b.push("{ set_input = { channel = \"TARGET\", on = \"$self\", value = \"\" } }".to_owned());
                b.push(feedback("untargeted"));
            }
            AbilityKind::Disguise { strong, target, role, duration } => {
                self.disguises = true;
                let p = visit(
                    self,
                    target,
                    &mut b,
                    "disguising",
                    if *strong { "strongly disguising" } else { "weakly disguising" },
                )?;
                // The role: a constant one of these files, or one the player chooses (the
                // Tanner's, the Disguised Fox's): asked among the roles.
                let key = if let Some(r) = role.text() {
                    if !self.roles.contains_key(r) {
                        let m = format!("`{r}` is no role these files define");
                        return Err(Error { code: codes::ELEMENT, message: m, span: role.span.clone() });
                    }
                    r.to_owned()
                } else if role.is("SecondarySelection") || role.is("Selection") && !target.is("Selection") {
                    if !prompting {
                        return Err(unsupported(
                            "a role chosen in an automatic trigger: nobody is asked",
                            role.span.clone(),
                        ));
                    }
                    b.push(format!(
                        "{{ ask = {{ as = \"role\", prompt = {}, options = {{ kind = \"ROLE\" }} }} }}",
                        q(&format!("{}: disguised as which role?", e.name))
                    ));
                    "$role".to_owned()
                } else {
                    let m = "a disguise's role: a constant role, or @Selection (@SecondarySelection when the player is @Selection)";
                    return Err(unsupported(m, role.span.clone()));
                };
                let until = lasting(duration, &p, a)?;
                let kind = if *strong { "STRONG_DISGUISE" } else { "WEAK_DISGUISE" };
                b.acts.push(by_until(&until, |u| {
                    format!(
                        "{{ add_object = {{ kind = \"{kind}\", key = {}, parent = {}, as = \"disguise\"{u} }} }}",
                        q(&key),
                        q(&p)
                    )
                }));
                b.push(feedback("disguised"));
            }
            AbilityKind::Protect { target, from, by, through, during, duration } => {
                let key = format!("{}#{n}", e.name);
                self.defense(&key, *from, by.as_ref(), through, *during, duration)?;
                let p = visit(self, target, &mut b, "protecting", &format!("{} protecting", through.name()))?;
                let until = match duration {
                    Some(Duration::UntilUse | Duration::UntilSecondUse) => Until::Same(String::new()),
                    _ => lasting(duration, &p, a)?,
                };
                b.acts.push(by_until(&until, |u| {
                    format!(
                        "{{ add_object = {{ kind = \"DEFENSE\", key = {}, as = \"defense\"{u} }} }}",
                        q(&key)
                    )
                }));
                b.push(format!(
                    "{{ set_input = {{ channel = \"HOLDER\", on = \"$defense\", value = {} }} }}",
                    q(&p)
                ));
                b.push(
                    "{ set_input = { channel = \"CREATOR\", on = \"$defense\", value = \"$self\" } }"
                        .to_owned(),
                );
                if let Defense::Absence(loc) = through {
                    let l = player(self, loc, &mut b)?;
                    b.push(format!(
                        "{{ set_input = {{ channel = \"LOCATION\", on = \"$defense\", value = {} }} }}",
                        q(&l)
                    ));
                }
                b.push(feedback("protected"));
            }
            AbilityKind::Manipulate { target, votes, absolute, amount, duration } => {
                let p = visit(
                    self,
                    target,
                    &mut b,
                    "manipulating",
                    if *absolute { "absolute manipulating" } else { "relative manipulating" },
                )?;
                let value = number_formula(amount).map_err(|m| unsupported(m, amount.span.clone()))?;
                let (var, priority) = match votes {
                    Votes::Public => ("PUBLIC_VOTES", 0),
                    Votes::Special => ("PUBLIC_VOTES", 1),
                    Votes::Private => ("PRIVATE_VOTES", 0),
                };
                let ty = if *absolute { "SET" } else { "ADD" };
                let until = lasting(duration, &p, a)?;
                b.acts.push(by_until(&until, |u| {
                    format!(
                        "{{ add_modifier = {{ var = \"{var}\", type = \"{ty}\", value = {}, priority = {priority}, on = {}{u} }} }}",
                        q(&value),
                        q(&p)
                    )
                }));
                b.push(feedback("manipulated"));
            }
            AbilityKind::Apply { attribute, to, duration, values } => {
                let Some(name) = attribute.text() else {
                    return Err(unsupported(
                        "an applying of an attribute named in play",
                        attribute.span.clone(),
                    ));
                };
                if !values.is_empty() {
                    return Err(unsupported(
                        "an attribute's values (sheetd applies attributes without them)",
                        a.span.clone(),
                    ));
                }
                if !self.attributes.contains(name) {
                    let m = format!("`{name}` is no attribute these files define (`**{name}** | Attribute`)");
                    return Err(Error { code: codes::ELEMENT, message: m, span: attribute.span.clone() });
                }
                let p = visit(self, to, &mut b, "applying", "add applying")?;
                let until = lasting(duration, &p, a)?;
                b.acts.push(by_until(&until, |u| {
                    format!(
                        "{{ add_object = {{ kind = \"ATTRIBUTE\", key = {}, parent = {}, as = \"attribute\"{u} }} }}",
                        q(name),
                        q(&p)
                    )
                }));
                b.push(format!(
                    "{{ set_input = {{ channel = \"LAST_{}\", on = {}, value = \"$attribute\" }} }}",
                    ident(name),
                    q(&p)
                ));
                b.push(
                    "{ emit = { event = \"Applied\", args = { attribute = \"$attribute\" } } }".to_owned(),
                );
                b.push(feedback("applied"));
            }
            AbilityKind::Unapply { attribute, from } => {
                let Some(name) = attribute.text() else {
                    return Err(unsupported(
                        "a remove applying of an attribute named in play",
                        attribute.span.clone(),
                    ));
                };
                self.attributes.insert(name.to_owned());
                let p = visit(self, from, &mut b, "applying", "remove applying")?;
                let last = format!("LAST_{}", ident(name));
                b.push(format!("{{ read = {{ as = \"applied\", channel = \"{last}\", on = {} }} }}", q(&p)));
                b.push("{ remove_object = \"$applied\" }".to_owned());
                b.push(format!("{{ set_input = {{ channel = \"{last}\", on = {}, value = \"\" }} }}", q(&p)));
                b.push(feedback("removed"));
            }
            AbilityKind::Change { .. } => {
                return Err(unsupported(
                    "a change applying (sheetd keeps no attribute values yet)",
                    a.span.clone(),
                ));
            }
            AbilityKind::Redirect { what, from, to, duration } => {
                let key = format!("{}#{n}", e.name);
                self.redirect(&key, what, from.as_ref(), duration)?;
                // Applying a redirection is no visit, and is not redirected.
                let p = player(self, to, &mut b)?;
                let until = match duration {
                    Some(Duration::UntilUse | Duration::UntilSecondUse) => Until::Same(String::new()),
                    _ => lasting(duration, &p, a)?,
                };
                b.push("{ adjust = { channel = \"REDIRECTS\", on = \"global\", by = \"1\" } }".to_owned());
                b.acts.push(by_until(&until, |u| {
                    format!(
                        "{{ add_object = {{ kind = \"REDIRECT\", key = {}, as = \"redirect\"{u} }} }}",
                        q(&key)
                    )
                }));
                b.push(
                    "{ set_input = { channel = \"HOLDER\", on = \"$redirect\", value = \"$self\" } }"
                        .to_owned(),
                );
                b.push(format!(
                    "{{ set_input = {{ channel = \"TO\", on = \"$redirect\", value = {} }} }}",
                    q(&p)
                ));
                b.push(
                    "{ adjust = { channel = \"SEQ\", on = \"$redirect\", by = \"REDIRECTS\" } }".to_owned(),
                );
                b.push(feedback("redirecting"));
            }
        }
        Ok(b)
    }

    /// `base`, or `base_2`, `base_3`, … the first no global variable of this file is named.
    fn fresh_global(&self, base: &str) -> String {
        let taken = |v: &str| self.global_vars.iter().any(|(g, _, _)| g.eq_ignore_ascii_case(v));
        if !taken(base) {
            return base.to_owned();
        }
        (2..).map(|k| format!("{base}_{k}")).find(|v| !taken(v)).unwrap_or_default()
    }

    /// A counting investigation: the count, a global variable, read into `RESULT` now.
    fn counted(&mut self, mut b: Body, tag: &str, formula: String) -> Body {
        let var = self.fresh_global(&format!("COUNT_{tag}"));
        self.global_vars.push((var.clone(), "NUMBER", formula));
        b.push(format!("{{ read = {{ as = \"seen\", channel = {}, on = \"global\" }} }}", q(&var)));
        b.push("{ set_input = { channel = \"RESULT\", on = \"$self\", value = \"$seen\" } }".to_owned());
        b.push("{ set_input = { channel = \"SUCCESS\", on = \"$self\", value = \"Success\" } }".to_owned());
        b.push(feedback("counted"));
        b
    }

    /// A protecting ability's defense object: its kind, rank, how many uses it lasts, and the
    /// formula `MATCH` (it evades the killing being resolved).
    fn defense(
        &mut self,
        key: &str,
        from: KillFilter,
        by: Option<&Value>,
        through: &Defense,
        during: Option<bool>,
        duration: &Option<Duration>,
    ) -> Result<(), Error> {
        let stops: Vec<String> = [Kill::Attack, Kill::Kill, Kill::Lynch, Kill::Banish]
            .into_iter()
            .filter(|k| from.stops(*k))
            .map(|k| format!("KILL_TYPE == \"{}\"", k.name()))
            .collect();
        let mut m = vec!["HOLDER == VICTIM".to_owned(), format!("({})", stops.join(" || "))];
        if let Defense::Absence(_) = through {
            // An absence keeps its holder from a hit at home; the hit where they are comes
            // through.
            m.push("HIT_AT == \"\"".to_owned());
        }
        if let Some(d) = during {
            m.push(if d { "!IS_NIGHT" } else { "IS_NIGHT" }.to_owned());
        }
        if let Some(by) = by {
            // Read on the attacker; `@Self` is the defense's creator.
            let w = player_test(by, "__ME__").map_err(|msg| unsupported(msg, by.span.clone()))?;
            m.push(format!("({})", on_holder(&w, "ATTACKER").replace("__ME__", "CREATOR")));
        }
        let limit = match duration {
            Some(Duration::UntilUse) => 1,
            Some(Duration::UntilSecondUse) => 2,
            _ => 0,
        };
        let _ = write!(
            self.objects,
            "\n[[object]]\nkind = \"DEFENSE\"\nkey = {}\nmodify = [\n  {{ var = \"KIND\", set = \"{}\" }},\n  {{ var = \"RANK\", set = \"{}\" }},\n  {{ var = \"LIMIT\", set = \"{limit}\" }},\n  {{ var = \"MATCH\", set = {} }},\n]\n",
            q(key),
            through.name(),
            through.rank(),
            q(&m.join(" && "))
        );
        Ok(())
    }

    /// A redirecting line's redirection object: how many uses it lasts, and the formula `MATCH`
    /// (it redirects the ability about to land: on its holder, of its ability type, subtype or
    /// category, by one of its sources).
    fn redirect(
        &mut self,
        key: &str,
        what: &Value,
        from: Option<&Value>,
        duration: &Option<Duration>,
    ) -> Result<(), Error> {
        let Some(w) = what.text() else {
            return Err(unsupported("a redirection of abilities named in play", what.span.clone()));
        };
        let w = w.to_ascii_lowercase();
        if w.contains(['"', '\\']) || w.chars().any(char::is_control) {
            return Err(unsupported("an ability type with quotes or backslashes", what.span.clone()));
        }
        let abilities = match w.as_str() {
            "all" => "1 == 1".to_owned(),
            "non-killing abilities" => "ABILITY_TYPE != \"killing\"".to_owned(),
            t if t.contains(' ') => format!("ABILITY_SUBTYPE == \"{t}\""),
            t => format!("ABILITY_TYPE == \"{t}\""),
        };
        let mut m = vec!["HOLDER == REDIRECT_FOR".to_owned(), format!("({abilities})")];
        if let Some(f) = from {
            // Read on the acting player; `@Self` is the redirection's holder.
            let t = player_test(f, "__ME__").map_err(|msg| unsupported(msg, f.span.clone()))?;
            m.push(format!("({})", on_holder(&t, "ACTOR").replace("__ME__", "HOLDER")));
        }
        let limit = match duration {
            Some(Duration::UntilUse) => 1,
            Some(Duration::UntilSecondUse) => 2,
            _ => 0,
        };
        let _ = write!(
            self.objects,
            "\n[[object]]\nkind = \"REDIRECT\"\nkey = {}\nmodify = [\n  {{ var = \"LIMIT\", set = \"{limit}\" }},\n  {{ var = \"MATCH\", set = {} }},\n]\n",
            q(key),
            q(&m.join(" && "))
        );
        Ok(())
    }

    /// A player value as a field (`$self`, `$sel`, `$target`, an event's name, or `$who1` bound
    /// by an `each`), the actions binding it pushed first.
    fn player(&mut self, names: Names, prompting: bool, v: &Value, b: &mut Body) -> Result<String, Error> {
        if v.is("Self") {
            return Ok("$self".to_owned());
        }
        if v.is("Selection") {
            if !prompting {
                return Err(unsupported(
                    "`@Selection` in an automatic trigger: nobody is asked",
                    v.span.clone(),
                ));
            }
            b.selection = true;
            return Ok("$sel".to_owned());
        }
        if v.is("Target") || v.is("TargetDead") {
            b.push("{ read = { as = \"target\", channel = \"TARGET\" } }".to_owned());
            return Ok("$target".to_owned());
        }
        if let Base::Selector('@', name) = &v.base
            && v.props.is_empty()
            && let Some((_, field)) = names.iter().find(|(n, _)| n == name)
        {
            return Ok((*field).to_owned());
        }
        if let Base::Id(id) = &v.base {
            return Ok(id.clone());
        }
        let w = player_where(v, "ACTOR").map_err(|m| unsupported(m, v.span.clone()))?;
        b.binds += 1;
        let name = format!("who{}", b.binds);
        b.push("{ set_input = { channel = \"ACTOR\", on = \"global\", value = \"$self\" } }".to_owned());
        b.push(format!("{{ each = {{ as = \"{name}\", select = \"PC.PLAYER\", where = {} }} }}", q(&w)));
        Ok(format!("${name}"))
    }
}

/// An attribute's line whose effect lasts `~Attribute`: as a modifier of the attribute object
/// (a manipulation of its holder's voting power, from its `Starting`); an error for one that
/// is not; none for a line without `~Attribute`.
fn while_applied(l: &Line) -> Option<Result<String, Error>> {
    let d = match &l.ability.kind {
        AbilityKind::Manipulate { duration, .. }
        | AbilityKind::Disguise { duration, .. }
        | AbilityKind::Protect { duration, .. }
        | AbilityKind::Apply { duration, .. }
        | AbilityKind::Redirect { duration, .. } => *duration,
        _ => None,
    };
    if d != Some(Duration::Attribute) {
        return None;
    }
    let no = |m: &str| Some(Err(unsupported(m, l.span.clone())));
    let AbilityKind::Manipulate { target, votes, absolute, amount, .. } = &l.ability.kind else {
        return no(
            "`~Attribute` on this ability (sheetd keeps a manipulation of the holder's voting power while its attribute lasts)",
        );
    };
    if l.trigger.kind != TriggerKind::Starting || !target.is("Self") || !l.params.restrictions.is_empty() {
        return no(
            "`~Attribute` outside `Starting: Manipulate @Self's …` (what lasts while the attribute does starts with it)",
        );
    }
    let value = match number_formula(amount) {
        Ok(v) => v,
        Err(m) => return Some(Err(unsupported(m, amount.span.clone()))),
    };
    let (var, priority) = match votes {
        Votes::Public => ("PUBLIC_VOTES", 0),
        Votes::Special => ("PUBLIC_VOTES", 1),
        Votes::Private => ("PRIVATE_VOTES", 0),
    };
    let ty = if *absolute { "set" } else { "add" };
    Some(Ok(format!("{{ var = \"{var}\", {ty} = {}, priority = {priority} }}", q(&value))))
}

/// `p`, the target an ability visits, redirected: the oldest redirection on it that matches
/// the ability (its type or subtype, the acting player) sends it where it points, and counts a
/// use. Many targets at once (`@All`), and the acting player itself, are not redirected.
fn redirected(b: &mut Body, p: String, ty: &str, sub: &str) -> String {
    if p == "$self" || p.starts_with("$who") || !p.starts_with('$') {
        return p;
    }
    b.binds += 1;
    let k = b.binds;
    let set = |channel: &str, value: &str| {
        format!("{{ set_input = {{ channel = \"{channel}\", on = \"global\", value = {} }} }}", q(value))
    };
    for a in [
        set("FINAL", ""),
        set("FINAL", &p),
        set("REDIRECT_FOR", &p),
        set("ABILITY_TYPE", ty),
        set("ABILITY_SUBTYPE", sub),
        set("ACTOR", "$self"),
        format!(
            "{{ each = {{ as = \"redirect{k}\", select = \"PC.REDIRECT\", where = \"MATCH\", order = \"SEQ\", first = 1 }} }}"
        ),
        format!("{{ read = {{ as = \"to{k}\", channel = \"TO\", on = \"$redirect{k}\" }} }}"),
        set("FINAL", &format!("$to{k}")),
        format!("{{ adjust = {{ channel = \"USES\", on = \"$redirect{k}\", by = \"1\" }} }}"),
        format!(
            "{{ each = {{ as = \"spent{k}\", select = \"PC.REDIRECT\", where = \"LIMIT > 0 && USES >= LIMIT\" }} }}"
        ),
        format!("{{ remove_object = \"$spent{k}\" }}"),
        format!("{{ read = {{ as = \"final{k}\", channel = \"FINAL\", on = \"global\" }} }}"),
    ] {
        b.push(a);
    }
    format!("$final{k}")
}

/// An ability's type and subtype as the guide names them, lowercase: `killing`, `attack
/// killing` (`true-kill killing`: a subtype's spaces are dashes).
fn ability_type(k: &AbilityKind) -> (&'static str, String) {
    match k {
        AbilityKind::Killing { how, .. } => ("killing", format!("{} killing", how.name().replace(' ', "-"))),
        AbilityKind::Investigating { what, .. } => {
            ("investigating", format!("{} investigating", investigation_name(what)))
        }
        AbilityKind::Target { .. } => ("targeting", "target targeting".to_owned()),
        AbilityKind::Untarget => ("targeting", "untarget targeting".to_owned()),
        AbilityKind::Disguise { strong, .. } => {
            ("disguising", if *strong { "strongly disguising" } else { "weakly disguising" }.to_owned())
        }
        AbilityKind::Protect { through, .. } => ("protecting", format!("{} protecting", through.name())),
        AbilityKind::Apply { .. } => ("applying", "add applying".to_owned()),
        AbilityKind::Unapply { .. } => ("applying", "remove applying".to_owned()),
        AbilityKind::Change { .. } => ("applying", "change applying".to_owned()),
        AbilityKind::Redirect { .. } => ("redirecting", "redirecting".to_owned()),
        AbilityKind::Manipulate { absolute, .. } => (
            "manipulating",
            if *absolute { "absolute manipulating" } else { "relative manipulating" }.to_owned(),
        ),
    }
}

/// A visit or action filter (`[Killing]`, `[!Attack Killing]`) as a guard on the event's
/// type and subtype channels.
fn filter_guard(f: &Filter, ty: &str, sub: &str) -> String {
    let name = f.ability.to_ascii_lowercase().replace(['"', '\\'], "");
    let (channel, value) = if name.contains(' ') { (sub, name) } else { (ty, name) };
    let op = if f.negate { "!=" } else { "==" };
    format!("{channel} {op} \"{value}\"")
}

/// An investigation's subtype, as the guide names it.
fn investigation_name(i: &Investigation) -> &'static str {
    match i {
        Investigation::Role(_) => "role",
        Investigation::Class(_) => "class",
        Investigation::Category(_) => "category",
        Investigation::Alignment(_) => "alignment",
        Investigation::Attribute(..) => "attribute",
        Investigation::Count(_) => "count",
        Investigation::PlayerCount(_) => "player_count",
    }
}

fn by_until(u: &Until, make: impl Fn(&str) -> String) -> Act {
    match u {
        Until::Same(s) => Act::Same(make(s)),
        Until::ByPhase { day, night } => Act::ByPhase { day: make(day), night: make(night) },
    }
}

/// A STRING modifier's value that is the text `v`: a formula of one text literal (`="Seer"`,
/// which no name can be mistaken for), or the literal as written when it holds a quote.
fn text_value(v: &str) -> String {
    if v.contains(['"', '\\']) || v.chars().any(char::is_control) { literal(v) } else { format!("=\"{v}\"") }
}

fn feedback(what: &str) -> String {
    format!("{{ set_input = {{ channel = \"FEEDBACK\", on = \"$self\", value = {} }} }}", q(what))
}

/// How long what an ability adds lasts, as an `until`.
fn lasting(d: &Option<Duration>, player: &str, a: &Ability) -> Result<Until, Error> {
    let ends = |after: u32| format!(", until = {{ clock = \"ENDS\", after = \"+{after}\" }}");
    let cast = |after: u32| {
        format!(", until = {{ clock = \"VOTES_CAST\", on = {}, after = \"+{after}\" }}", q(player))
    };
    Ok(match d {
        None | Some(Duration::Persistent | Duration::Permanent) => Until::Same(String::new()),
        Some(Duration::Phase) => Until::Same(ends(0)),
        Some(Duration::NextPhase) => Until::Same(ends(1)),
        // By day, the next day ends after this day and a night: two ends away; by night, one.
        Some(Duration::NextDay) => Until::ByPhase { day: ends(2), night: ends(1) },
        Some(Duration::NextNight) => Until::ByPhase { day: ends(1), night: ends(2) },
        Some(Duration::UntilUse) => Until::Same(cast(0)),
        Some(Duration::UntilSecondUse) => Until::Same(cast(1)),
        Some(other) => {
            let m = format!(
                "the duration `~{}` (sheetd runs ~Persistent, ~Permanent, ~Phase, ~NextPhase, ~NextDay, ~NextNight, ~UntilUse, ~UntilSecondUse, and ~Attribute in an attribute's `Starting` manipulation of its holder)",
                other.name()
            );
            return Err(unsupported(m, a.span.clone()));
        }
    })
}

fn trigger_name(k: &TriggerKind) -> String {
    match k {
        TriggerKind::Timing { when, day, prompting } => {
            let when = match when {
                When::Start => "Start".to_owned(),
                When::Immediate => "Immediate".to_owned(),
                When::End => "End".to_owned(),
                When::PreEnd(1) => "Pre-End".to_owned(),
                When::PreEnd(n) => {
                    format!("{} Pre-End", ["", "", "Second", "Third", "Fourth"][(*n as usize).min(4)])
                }
            };
            let day = match day {
                Some(true) => " Day",
                Some(false) => " Night",
                None if when == "Immediate" => "",
                None => " Phase",
            };
            format!("{}{when}{day}", if *prompting { "" } else { "Passive " })
        }
        TriggerKind::Starting => "Starting".to_owned(),
        TriggerKind::Passive => "Passive".to_owned(),
        TriggerKind::Death { how, who } => {
            let who = who.as_ref().map(|w| format!("{} ", show(w))).unwrap_or_default();
            format!("On {who}{how:?}")
        }
        TriggerKind::Defense(None) => "On Defense".to_owned(),
        TriggerKind::Defense(Some(k)) => format!("On {}{} Defense", k[..1].to_ascii_uppercase(), &k[1..]),
        TriggerKind::Visited { .. } => "On Visited".to_owned(),
        TriggerKind::Action { any: true, .. } => "On Any Action".to_owned(),
        TriggerKind::Action { .. } => "On Action".to_owned(),
        TriggerKind::PollWin(_) => "On Poll Win".to_owned(),
        TriggerKind::Emitted { end: true, .. } => "On End Emitted".to_owned(),
        TriggerKind::Emitted { .. } => "On Emitted".to_owned(),
        TriggerKind::Named(n) => (*n).to_owned(),
    }
}

/// A value as the guide writes it, for messages.
pub fn show(v: &Value) -> String {
    let mut s = match &v.base {
        Base::Selector(c, n) => format!("{c}{n}"),
        Base::Advanced { sigil, property, value, negate } => {
            format!("{sigil}({property}:{}{value})", if *negate { "!" } else { "" })
        }
        Base::Id(i) => format!("@ID:{i}"),
        Base::Constant(c) => format!("`{c}`"),
        Base::Group(g) => format!("#{g}"),
        Base::Variable(x) => format!("${x}"),
        Base::Host(h) => format!("%{h}%"),
        Base::Number(n) => n.to_string(),
        Base::Division(a, b) => format!("{}/{}", show(a), show(b)),
        Base::List(l) => l.iter().map(show).collect::<Vec<_>>().join("+"),
        Base::Word(w) => w.clone(),
    };
    for p in &v.props {
        s.push_str("->");
        s.push_str(p);
    }
    s
}

/// What a player selector tests of a player (`ROLE == "Wolf"`), read in the player's scope;
/// `me` is the acting player's id there (`ID` on the player itself, `ACTOR` in an `each`).
pub fn player_test(v: &Value, me: &str) -> Result<String, String> {
    if !v.props.is_empty() {
        return Err(format!("`{}`: a property of a player selector", show(v)));
    }
    Ok(match &v.base {
        Base::Selector('@', n) => match n.as_str() {
            "All" | "DeadAlive" => "1 == 1".to_owned(),
            "Others" => format!("ID != {me}"),
            "Dead" => "ALIVE == 0".to_owned(),
            "Nobody" => "1 == 0".to_owned(),
            "Self" => format!("ID == {me}"),
            _ => {
                return Err(format!(
                    "the selector `@{n}` here (sheetd selects @All, @Others, @Dead, @DeadAlive, @Nobody, @Self and @(Property:Value))"
                ));
            }
        },
        Base::Advanced { sigil: '@', property, value, negate } => {
            let not = if *negate { "!" } else { "" };
            match property.as_str() {
                "Attr" | "Attribute" => format!("{not}(ATTR_{} > 0)", ident(value)),
                p => {
                    let var = match p {
                        "Role" => "ROLE",
                        "Cat" | "Category" => "CATEGORY",
                        "Class" => "CLASS",
                        "Align" | "Alignment" => "ALIGNMENT",
                        other => {
                            return Err(format!(
                                "`@({other}:…)` (sheetd selects by Role, Cat, Class, Align and Attr)"
                            ));
                        }
                    };
                    if value.contains(['"', '\\']) || value.chars().any(char::is_control) {
                        return Err(format!("`{value}`: a value to select by has no quotes or backslashes"));
                    }
                    format!("{not}({var} == \"{value}\")")
                }
            }
        }
        _ => return Err(format!("`{}` is no player selector sheetd reads here", show(v))),
    })
}

/// A player selector as the formula its players pass: living ones (unless it says dead), and
/// what it tests.
pub fn player_where(v: &Value, me: &str) -> Result<String, String> {
    let test = player_test(v, me)?;
    Ok(match &v.base {
        Base::Selector('@', n) if n == "Dead" || n == "DeadAlive" => test,
        _ => format!("ALIVE == 1 && {test}"),
    })
}

/// A formula read on a player, made to read through a holder channel instead: `ROLE ==
/// "Wolf"` through `ATTACKER` is `ATTACKER.ROLE == "Wolf"`.
fn on_holder(w: &str, holder: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let mut quoted = false;
    let flush = |word: &mut String, out: &mut String| {
        if word.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
            out.push_str(holder);
            out.push('.');
        }
        out.push_str(word);
        word.clear();
    };
    for c in w.chars() {
        if quoted {
            out.push(c);
            quoted = c != '"';
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            quoted = c == '"';
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// A number as a formula: `2`, `-1`, `$living`, `$total/2` (rounded to the nearest, as the
/// guide's number type says).
pub fn number_formula(v: &Value) -> Result<String, String> {
    if !v.props.is_empty() {
        return Err(format!("`{}`: a number with a property", show(v)));
    }
    Ok(match &v.base {
        Base::Number(n) => n.to_string(),
        Base::Variable(x) => match x.as_str() {
            "total" => "TOTAL".to_owned(),
            "living" => "LIVING".to_owned(),
            "phase" => "PHASE_NUMBER".to_owned(),
            other => return Err(format!("`${other}` is no number variable ($total, $living, $phase)")),
        },
        Base::Division(a, b) => format!("round(({}) / ({}))", number_formula(a)?, number_formula(b)?),
        _ => {
            return Err(format!(
                "`{}` is no number sheetd reads here (a number, $total, $living, $phase, N/M)",
                show(v)
            ));
        }
    })
}

/// A scaling's count as a formula: `$total/2` rounded down, the first passing case (a failing
/// one gives 0, the bare number is the default), odd or even phases.
pub fn scale_formula(s: &Scaling) -> String {
    let count = |c: Count| if c == Count::Total { "TOTAL" } else { "LIVING" };
    match s {
        Scaling::Times(k) => k.to_string(),
        Scaling::Divide(c, k) => format!("floor({} / {k})", count(*c)),
        Scaling::OddEven { odd, even } => format!("if(PHASE_NUMBER % 2 == 1, {odd}, {even})"),
        Scaling::Cases(cases, default) => {
            let mut f = default.unwrap_or(0).to_string();
            for (c, op, v, k) in cases.iter().rev() {
                f = format!("if({} {} {v}, {k}, {f})", count(*c), op.native());
            }
            f
        }
    }
}

/// A condition as a BOOLEAN formula read on the acting player.
pub fn cond_formula(c: &Cond) -> Result<String, String> {
    let join = |cs: &[Cond], op: &str| -> Result<String, String> {
        Ok(cs
            .iter()
            .map(|c| cond_formula(c).map(|f| format!("({f})")))
            .collect::<Result<Vec<_>, _>>()?
            .join(op))
    };
    Ok(match c {
        Cond::Is(a, b) => format!("{} == {}", operand(a)?, operand(b)?),
        Cond::IsNot(a, b) => format!("{} != {}", operand(a)?, operand(b)?),
        Cond::Greater(a, b) => format!("{} > {}", operand(a)?, operand(b)?),
        Cond::Less(a, b) => format!("{} < {}", operand(a)?, operand(b)?),
        Cond::Exists(a) if a.is("Target") => "TARGET != \"\"".to_owned(),
        Cond::Exists(a) => {
            format!("count(PC.PLAYER, {}) > 0", player_where(a, "__ME__")?).replace("__ME__", "ACTOR")
        }
        Cond::Has(a, attr) => {
            let Some(name) = attr.text() else {
                return Err(format!("`{}`: `has` names an attribute", show(attr)));
            };
            let var = format!("ATTR_{}", ident(name));
            if a.is("Self") {
                format!("{var} > 0")
            } else if a.is("Target") {
                format!("TARGET.{var} > 0")
            } else {
                return Err(format!("`{}` has …: sheetd reads @Self and @Target", show(a)));
            }
        }
        Cond::PartOf(a, b) => {
            let w = player_where(b, "__ME__")?;
            if a.is("Self") {
                w.replace("__ME__", "ID")
            } else if a.is("Target") {
                format!("TARGET != \"\" && ({})", on_holder(&w, "TARGET").replace("__ME__", "ID"))
            } else {
                return Err(format!("`{}` is part of …: sheetd reads @Self and @Target", show(a)));
            }
        }
        Cond::In(a, _) => return Err(format!("`{}` is in a group: sheetd does not run groups yet", show(a))),
        Cond::Not(c) => format!("!({})", cond_formula(c)?),
        Cond::And(cs) => join(cs, " && ")?,
        Cond::Or(cs) => join(cs, " || ")?,
        Cond::AndOr(a, b, d) => {
            format!("({}) && (({}) || ({}))", cond_formula(a)?, cond_formula(b)?, cond_formula(d)?)
        }
        Cond::OrAnd(a, b, d) => {
            format!("(({}) || ({})) && ({})", cond_formula(a)?, cond_formula(b)?, cond_formula(d)?)
        }
    })
}

/// A condition's operand as a formula: a number, a constant text, @Self or @Target or a
/// property of one, a selector's `->Count`.
fn operand(v: &Value) -> Result<String, String> {
    // Lists compare by their first values (the guide: [a,b] is [a,c]).
    if let (Base::List(items), []) = (&v.base, v.props.as_slice())
        && let Some(first) = items.first()
    {
        return operand(first);
    }
    if let Ok(n) = number_formula(v) {
        return Ok(n);
    }
    match (&v.base, v.props.as_slice()) {
        (Base::Constant(t) | Base::Word(t), []) => {
            if t.contains(['"', '\\']) || t.chars().any(char::is_control) {
                return Err(format!("`{t}`: a text to compare with has no quotes or backslashes"));
            }
            Ok(format!("\"{t}\""))
        }
        (Base::Selector('@', who), [p]) if who == "Self" || who == "Target" => {
            let var = match p.as_str() {
                "Role" => "ROLE",
                "Category" => "CATEGORY",
                "Class" => "CLASS",
                "Alignment" => "ALIGNMENT",
                "PublicVotingPower" => "PUBLIC_VOTES",
                "PrivateVotingPower" => "PRIVATE_VOTES",
                "Target" => "TARGET",
                other => {
                    return Err(format!(
                        "the property `->{other}` (sheetd reads Role, Category, Class, Alignment, Target, PublicVotingPower, PrivateVotingPower)"
                    ));
                }
            };
            Ok(if who == "Self" { var.to_owned() } else { format!("TARGET.{var}") })
        }
        (Base::Selector('@', who), []) if who == "Self" => Ok("ID".to_owned()),
        (Base::Selector('@', who), []) if who == "Target" => Ok("TARGET".to_owned()),
        (_, [p]) if p == "Count" => {
            let bare = Value { props: Vec::new(), ..v.clone() };
            Ok(format!("count(PC.PLAYER, {})", player_where(&bare, "__ME__")?.replace("__ME__", "ACTOR")))
        }
        _ => Err(format!("`{}` is no value sheetd compares here", show(v))),
    }
}
