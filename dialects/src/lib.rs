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
//!
//! ## What it does not do (yet)
//! It does not read feature dictionaries, creatures files or RuleScript cards, and it has no
//! command or API of its own: those come with the rest of the dialect issue. It evaluates
//! nothing: the formulas it writes are compiled and run by the `formula` and `solver` crates.
//!
//! ## Main types
//! [`postfix::compile`] → [`postfix::Compiled`] (a native formula and the `store` steps), or a
//! [`postfix::PostfixError`] with its code and byte span.

pub mod postfix;
