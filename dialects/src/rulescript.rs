//! RuleScript (`../shared/seeds/rulescript.txt`): the card language written in INI-like
//! properties — `target`, `action`, `abilities`, `auto`, `label`, `requisite`, `vars` — whose
//! values are statements: `{F}: [[if _coin]] bp(+500) target(tgt.0) [[else]] damage(300)
//! to(this)`.
//!
//! [`syntax`] reads a card's rules text into a syntax tree with the byte span of every part, so
//! that each error — an unknown property, command, ability or event, a restriction on a
//! statement whose effects do not last, Python outside the subset of expressions the seed's
//! examples use — points at its text. Compiling the tree to native rules is not built yet.

pub mod syntax;

pub use syntax::*;

#[cfg(test)]
mod tests;
