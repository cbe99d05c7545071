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
];

/// The scope of creatures, and the kind and object every creature is made from.
pub const SCOPE: &str = "PC.CREATURE";
pub const KIND: &str = "CREATURE";
pub const OBJECT: &str = "Creature";

/// The prelude as a native ruleset (see `docs/ruleset-format.md`): the scope, the attributes
/// as channels, and the kind and object that give a creature its defaults. A default written
/// as a postfix formula that does not compile is an error naming the attribute (the table
/// above is the prelude's own, so a test keeps it clean).
pub fn ruleset_text() -> Result<String, crate::Error> {
    let mut text =
        String::from("# The creature features' prelude: every creature's attributes and defaults.\n");
    text.push_str("[ruleset]\nname = \"creature prelude\"\n\n[scopes]\n");
    // (`write!` to a `String` cannot fail.)
    let _ = writeln!(text, "\"{SCOPE}\" = \"PC\"\n\n[channels.\"{SCOPE}\"]");
    for a in ATTRIBUTES {
        let _ = writeln!(text, "\"{}\" = \"NUMBER\"", a.name);
    }
    let _ = writeln!(
        text,
        "\n[kinds.{KIND}]\nscope = \"{SCOPE}\"\n\n[[object]]\nkind = \"{KIND}\"\nkey = \"{OBJECT}\""
    );
    text.push_str("modify = [\n");
    for a in ATTRIBUTES {
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
        let _ = writeln!(text, "  {{ var = \"{}\", set = \"{value}\" }},", a.name);
    }
    text.push_str("]\n");
    Ok(text)
}

#[cfg(test)]
mod tests;
