//! The creature features' built-in prelude (`../shared/seeds/creature-features.txt`,
//! *Variables*): the attributes every creature has, with the defaults the seed gives, as a
//! native ruleset a creature dialect builds on.
//!
//! Every attribute is a NUMBER channel of scope `PC.CREATURE` (a creatures file or a step
//! sets it), and the kind `CREATURE` gives each creature its defaults as SET modifiers, so an
//! input set later wins: a number (`REGAINS_HP = 1`), another attribute
//! (`MIN_SPACE_WITHOUT_SQUEEZING = SIZE`) or a postfix formula compiled by [`crate::postfix`]
//! (`BREATH_HOLD_MINUTES = (1,CON,+,.5,max)`), which then follows what it reads.
//!
//! Two additions to the seed's list, each because the seed reads it: the 18 skills (its
//! default `MIMIC_SOUNDS_VOICES_INSIGHT_DC = (PERFORMANCE,DECEPTION,max)` reads two; `roll`
//! takes "an ability or skill"), default 0. `DAMAGE` and `ATTACK` are objects in the seed:
//! their fields are attributes named `DAMAGE.AMOUNT`, `ATTACK.MELEE`, … `TERRAIN` and
//! `LIGHTING` are NUMBER codes, like the seed's other enumerations (`OBJECT_TYPE`,
//! `ALIGNMENT`). A feature's private `NV1`, `NV2`, … belong to the feature, not here.

use std::fmt::Write;

/// An attribute's default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Default {
    /// A number, as the seed writes it.
    Number(&'static str),
    /// A postfix formula over other attributes, as the seed writes it.
    Postfix(&'static str),
}

/// One attribute of the prelude: its name and its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attribute {
    pub name: &'static str,
    pub default: Default,
}

const fn n(name: &'static str, value: &'static str) -> Attribute {
    Attribute { name, default: Default::Number(value) }
}

const fn p(name: &'static str, formula: &'static str) -> Attribute {
    Attribute { name, default: Default::Postfix(formula) }
}

/// The attributes, in the seed's order (the skills last), with their defaults: 0 where the
/// seed gives none.
pub const ATTRIBUTES: &[Attribute] = &[
    n("STR", "0"),
    n("DEX", "0"),
    n("CON", "0"),
    n("INT", "0"),
    n("WIS", "0"),
    n("CHA", "0"),
    n("PROF", "0"),
    n("MAXHP", "0"),
    n("HP", "0"),
    n("MOVESPEED", "0"),
    n("MOVEREMAIN", "0"),
    n("SPELLDC", "0"),
    n("SIZE", "0"),
    n("OBJECT_TYPE", "0"),
    n("OBJECT_AC", "0"),
    n("CR", "0"),
    n("PLANE", "0"),
    n("DAMAGE.AMOUNT", "0"),
    n("DAMAGE.CRITICAL", "0"),
    n("DAMAGE.TYPE", "0"),
    n("ATTACK.MELEE", "0"),
    n("ATTACK.ADVANTAGE", "0"),
    n("ATTACK.DISADVANTAGE", "0"),
    n("ATTACK.WEAPON", "0"),
    n("TURNS", "0"),
    n("FLYING", "0"),
    n("TERRAIN", "0"),
    n("LIGHTING", "0"),
    n("LANGUAGECOUNT", "0"),
    n("SURPRISED", "0"),
    n("METAL", "0"),
    n("TERRAIN_IS_DIFFICULT", "0"),
    n("BLINDED", "0"),
    n("CHARMED", "0"),
    n("DEAFENED", "0"),
    n("FRIGHTENED", "0"),
    n("GRAPPLED", "0"),
    n("INCAPACITATED", "0"),
    n("INVISIBLE", "0"),
    n("PARALYZED", "0"),
    n("PETRIFIED", "0"),
    n("POISONED", "0"),
    n("PRONE", "0"),
    n("RESTRAINED", "0"),
    n("STUNNED", "0"),
    n("UNCONSCIOUS", "0"),
    n("EXHAUSTED", "0"),
    n("REGAINS_HP", "1"),
    n("CAN_STOP_IN_HOSTILE_SPACE", "0"),
    p("MIN_SPACE_WITHOUT_SQUEEZING", "(SIZE)"),
    n("BREATHES_AIR", "1"),
    n("BREATHES_WATER", "0"),
    p("BREATH_HOLD_MINUTES", "(1,CON,+,.5,max)"),
    p("CARRY_CAPACITY", "(2,SIZE,2.5,-,SIZE,0,ifelse,5,-,5,/,^,15,*,STR,*)"),
    n("BERSERK", "0"),
    n("TELEPATHIC", "0"),
    n("DASH", "0"),
    n("DISENGAGE", "0"),
    n("HIDE", "0"),
    n("SEES_MAGICAL_DARKNESS", "0"),
    n("SEES_ETHEREAL", "0"),
    n("DETECTS_LIES", "0"),
    n("LEAVES_CORPSE", "1"),
    n("HOLDS_INVENTORY", "1"),
    n("PROVOKES_OPPORTUNITY_ATTACKS", "1"),
    n("IGNORES_DIFFICULT_TERRAIN", "0"),
    n("PASSES_THROUGH_CREATURES_AS_DIFFICULT_TERRAIN", "0"),
    n("IGNORES_WEBS", "0"),
    n("REACTIONS", "1"),
    n("BRIGHT_LIGHT", "0"),
    n("DIM_LIGHT", "0"),
    n("PERFECT_MAP_RECALL", "0"),
    p("MIMIC_SOUNDS_VOICES_INSIGHT_DC", "(PERFORMANCE,DECEPTION,max)"),
    n("SPEAKS_WITH_BEASTS", "0"),
    n("SPEAKS_WITH_PLANTS", "0"),
    n("SPIDER_CLIMB", "0"),
    n("BOILS_WATER", "0"),
    n("FORM_STATE", "0"),
    n("MUNDANE_OBJECT_WHEN_STILL", "0"),
    n("CAN_SMELL", "1"),
    n("ALIGNMENT", "11"),
    n("ANTIMAGIC_INCAPACITATES", "0"),
    n("ALIVE", "1"),
    n("BLINDSIGHT", "0"),
    n("RUST", "0"),
    n("EXPOSED", "0"),
    n("HEADS", "1"),
    n("SPELLSLOTS", "0"),
    // The skills (see the module docs).
    n("ACROBATICS", "0"),
    n("ANIMAL_HANDLING", "0"),
    n("ARCANA", "0"),
    n("ATHLETICS", "0"),
    n("DECEPTION", "0"),
    n("HISTORY", "0"),
    n("INSIGHT", "0"),
    n("INTIMIDATION", "0"),
    n("INVESTIGATION", "0"),
    n("MEDICINE", "0"),
    n("NATURE", "0"),
    n("PERCEPTION", "0"),
    n("PERFORMANCE", "0"),
    n("PERSUASION", "0"),
    n("RELIGION", "0"),
    n("SLEIGHT_OF_HAND", "0"),
    n("STEALTH", "0"),
    n("SURVIVAL", "0"),
    // What the effects that change numbers write (see `crate::creature`): the damage a
    // creature's reductions take off each hit, and the advantage and disadvantage flags.
    n("DAMAGE_REDUCTION", "0"),
    n("ADVANTAGE_GRANTED", "0"),
    n("DISADVANTAGE_IMPOSED", "0"),
    n("DISADVANTAGE_ON_ATTACK_ROLLS", "0"),
    n("DISADVANTAGE_ON_ABILITY_CHECKS", "0"),
    n("DISADVANTAGE_ON_SAVING_THROWS", "0"),
];

/// The attributes that are stocks rather than plain channels: events change them (`adjust`)
/// by what a formula is worth then. HP stays between 0 and MAXHP; `DAMAGE.AMOUNT` is the
/// damage of the most recent hit.
pub const STOCKS: &[(&str, &str)] =
    &[("HP", "{ min = \"0\", max = \"MAXHP\", bounds = \"clamp\" }"), ("DAMAGE.AMOUNT", "{}")];

/// The part of the prelude that makes creatures play: who an event is about (global channels
/// that hold a creature's id, so that formulas read `TARGET.HP`), the turn and time clocks,
/// the events the features' triggers listen to, and the rules every game has (a turn ticks
/// its clock; a hit deals its damage, less the target's reductions, and the target is
/// damaged).
pub const GAME_TEXT: &str = r#"
[channels.PC]
OWNER = { format = "STRING", holds = "PC.CREATURE" }     # the creature whose feature runs
TARGET = { format = "STRING", holds = "PC.CREATURE" }    # the creature it is aimed at
ATTACKER = { format = "STRING", holds = "PC.CREATURE" }  # who attacks or hits
WHO = { format = "STRING", holds = "PC.CREATURE" }       # whose turn starts or ends, who is damaged
AMOUNT = "NUMBER"                                        # a hit's damage
ROLL = "NUMBER"                                          # a recharge roll's d6

[clocks.PC]
SECONDS = {}                                             # game time, for durations in sec, min, hr, …

[clocks."PC.CREATURE"]
TURN_STARTS = {}
TURN_ENDS = {}

[events]
TurnStart = { who = "WHO" }
TurnEnd = { who = "WHO" }
Damaged = { who = "WHO" }
Attacks = { by = "ATTACKER", target = "TARGET" }
Hits = { by = "ATTACKER", target = "TARGET", amount = "AMOUNT" }
ShortRest = {}
LongRest = {}
Use = { who = { instance = true }, feature = {}, target = "TARGET" }
RechargeRoll = { who = { instance = true }, feature = {}, roll = "ROLL" }
Effect = { owner = "OWNER", target = "TARGET", effect = {} }

[[rule]]
name = "a turn starts"
on = "TurnStart"
do = [{ tick = { clock = "TURN_STARTS", on = "$who" } }]

[[rule]]
name = "a turn ends"
on = "TurnEnd"
do = [{ tick = { clock = "TURN_ENDS", on = "$who" } }]

[[rule]]
name = "a hit deals its damage"
on = "Hits"
do = [
  { adjust = { channel = "DAMAGE.AMOUNT", on = "$target", by = "max(AMOUNT - DAMAGE_REDUCTION, 0) - DAMAGE.AMOUNT" } },
  { adjust = { channel = "HP", on = "$target", by = "-DAMAGE.AMOUNT" } },
  { emit = { event = "Damaged", args = { who = "$target" } } },
]
"#;

/// The scope of creatures, and the kind and object every creature is made from.
pub const SCOPE: &str = "PC.CREATURE";
pub const KIND: &str = "CREATURE";
pub const OBJECT: &str = "Creature";

/// The always-present object that gives every creature the defaults (its `modify_other` on all
/// of `PC.CREATURE`), and its kind. A creatures file's creatures add their own attributes and
/// passive effects after the defaults in the same list (`key = "deva"`), so that they apply
/// after them; what a step sets or an effect adds later applies after both.
pub const DEFAULTS_KIND: &str = "CREATURE_DEFAULTS";
pub const DEFAULTS_OBJECT: &str = "creature defaults";
const ALL: &str = "scope = \"PC.CREATURE\", all = true";

/// The prelude as a native ruleset (see `docs/ruleset-format.md`): the scope, the attributes
/// as channels, and the kind and object that give a creature its defaults. A default written
/// as a postfix formula that does not compile is an error naming the attribute (the table
/// above is the prelude's own, so a test keeps it clean).
pub fn ruleset_text() -> Result<String, crate::Error> {
    ruleset_text_with(&[], &[])
}

/// The prelude with some defaults replaced or attributes added — each `(name, formula)` is an
/// attribute and its default as a native formula (a creatures file's `attributes`) — and
/// `others`, `modify_other` entries (TOML inline tables) appended after the defaults.
pub fn ruleset_text_with(overrides: &[(String, String)], others: &[String]) -> Result<String, crate::Error> {
    let mut text =
        String::from("# The creature features' prelude: every creature's attributes and defaults.\n");
    text.push_str("[ruleset]\nname = \"creature prelude\"\n\n[scopes]\n");
    // (`write!` to a `String` cannot fail.)
    let _ = writeln!(text, "\"{SCOPE}\" = \"PC\"\n\n[channels.\"{SCOPE}\"]");
    let is_stock = |name: &str| STOCKS.iter().any(|(s, _)| s.eq_ignore_ascii_case(name));
    for a in ATTRIBUTES.iter().filter(|a| !is_stock(a.name)) {
        let _ = writeln!(text, "\"{}\" = \"NUMBER\"", a.name);
    }
    let added = |o: &&(String, String)| !ATTRIBUTES.iter().any(|a| a.name.eq_ignore_ascii_case(&o.0));
    for (name, _) in overrides.iter().filter(added) {
        let _ = writeln!(text, "\"{name}\" = \"NUMBER\"");
    }
    let _ = writeln!(text, "\n[stocks.\"{SCOPE}\"]");
    for (name, bounds) in STOCKS {
        let _ = writeln!(text, "\"{name}\" = {bounds}");
    }
    let _ = writeln!(
        text,
        "\n[kinds.{KIND}]\nscope = \"{SCOPE}\"\n\n[kinds.{DEFAULTS_KIND}]\nscope = \"PC\"\npresence = \"always\"\n\n[[object]]\nkind = \"{KIND}\"\nkey = \"{OBJECT}\"\n\n[[object]]\nkind = \"{DEFAULTS_KIND}\"\nkey = \"{DEFAULTS_OBJECT}\""
    );
    text.push_str("modify_other = [\n");
    for a in ATTRIBUTES {
        if let Some((_, f)) = overrides.iter().find(|o| o.0.eq_ignore_ascii_case(a.name)) {
            let _ = writeln!(text, "  {{ {ALL}, var = \"{}\", set = \"{f}\" }},", a.name);
            continue;
        }
        let value = match a.default {
            Default::Number("0") => continue,
            Default::Number(v) => v.to_owned(),
            Default::Postfix(f) => {
                crate::postfix::compile(f, &mut |name| {
                    let own = name.strip_prefix("self.").unwrap_or(name);
                    ATTRIBUTES
                        .iter()
                        .find(|x| x.name.eq_ignore_ascii_case(own))
                        .map(|x| x.name.to_owned())
                        .ok_or_else(|| {
                            format!("`{}`'s default reads `{name}`, which is no attribute", a.name)
                        })
                })?
                .formula
            }
        };
        let _ = writeln!(text, "  {{ {ALL}, var = \"{}\", set = \"{value}\" }},", a.name);
    }
    for (name, f) in overrides.iter().filter(added) {
        let _ = writeln!(text, "  {{ {ALL}, var = \"{name}\", set = \"{f}\" }},");
    }
    for o in others {
        let _ = writeln!(text, "  {o},");
    }
    text.push_str("]\n");
    text.push_str(GAME_TEXT);
    Ok(text)
}

#[cfg(test)]
mod tests;
