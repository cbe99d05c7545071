//! # sheetd-dialects
//!
//! The front ends of the seed rule languages (`../shared/seeds/`): each reads a language in the
//! syntax its authors write, checks it, and compiles it to what sheetd runs — native formulas,
//! and in time whole native rulesets and event rules — keeping every position, so that an
//! error points into the original text.
//!
//! ## What it does
//! - [`postfix`]: the creature features' postfix formulas, `(8,INT,PROF,+,+)`, compiled to
//!   sheetd formulas with the seed's exact semantics (`&` and `|` return an operand, `!`
//!   consumes one, comparisons give 1 or 0, `ifelse`, `consume`, `duplicate`, `store`), each
//!   error at the token inside the string.
//! - [`prelude`]: the creature features' attributes and their defaults, as a native ruleset:
//!   `BREATH_HOLD_MINUTES = (1,CON,+,.5,max)` follows CON.
//! - [`template`]: the creature features' TEXT templates, `The {NAME}'s weapon deals {V0}d{V1}`,
//!   parsed once (each variable with its span) and rendered with a feature's variables.
//! - [`creature`]: the creature features dialect whole — feature dictionaries and creatures
//!   files read with positions, compiled to a native ruleset with event rules (the prelude,
//!   one object per creature, one rule per subfeature and effect); its game files' setup and
//!   verbs made into sheetd's generic steps.
//!
//! - [`rulescript`]: RuleScript whole — a card's properties and statements read with spans
//!   (commands, abilities and events checked, Python outside the expression subset refused),
//!   card databases and `.rulescript` files, compiled to a native ruleset with event rules;
//!   its game files' setup and verbs.
//! - [`effects`]: the board-game effect strings whole — both grammars read into one tree (and
//!   printed in the unified one), the card tables, compiled to a native ruleset with event
//!   rules; its game files' setup and verbs.
//! - [`wwrf`]: WWRF — role, team, group and attribute files and every ability line the guide
//!   gives a syntax for, read with spans; roles compiled to event rules (phases, voting power,
//!   killings against defenses, absences, redirections, disguises, investigations); its game
//!   files' setup and verbs.
//!
//! ## What it does not do
//! It evaluates nothing: what it writes is loaded by `data`, its rules compiled by `events`,
//! and run by the `solver`; commands and the API live in the service.
//!
//! ## Main types
//! [`postfix::compile`] → [`postfix::Compiled`] (a native formula and the `store` steps);
//! [`template::parse`] → [`template::Template`]; [`creature::compile_paths`] →
//! [`creature::Compiled`] (native files, warnings); [`creature::game::step`] →
//! [`creature::game::Step`]; [`rulescript::parse`] → [`rulescript::Rules`];
//! [`rulescript::compile_texts`]; [`effects::parse`] → [`effects::Effect`];
//! [`wwrf::parse_file`] → [`wwrf::Element`], [`wwrf::compile_texts`]; [`Error`]: every error, with its code and the byte span it points
//! at.

pub mod creature;
pub mod effects;
pub mod postfix;
pub mod prelude;
pub mod rulescript;
pub mod template;
pub mod wwrf;

use std::fmt;
use std::ops::Range;

/// Why a dialect's text does not compile: a stable code (`postfix.underflow`), a message, and
/// the byte span in the text it came from, for the front end to point at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub code: &'static str,
    pub message: String,
    pub span: Range<usize>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} [{}] at bytes {}..{}", self.message, self.code, self.span.start, self.span.end)
    }
}

impl std::error::Error for Error {}
