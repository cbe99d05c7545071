//! The creature features' postfix formulas (`../shared/seeds/creature-features.txt`):
//! `(8,INT,PROF,+,+)` is 8 + INT + PROF, `(1,CON,+,.5,max)` is max(1 + CON, 0.5).
//!
//! A formula is a parenthesized, comma-separated list of tokens run on a stack: a number or a
//! name pushes a value, an operator pops its operands and pushes its result. It compiles here
//! to a sheetd formula with the same value, so that it is checked at load, read as a
//! dependency like any formula, and evaluated in exact decimal arithmetic (`.5` is 0.5).
//!
//! The seed's rules, exactly ("0 is false, any other value true"):
//!
//! | tokens | value | sheetd formula |
//! |---|---|---|
//! | `X,Y,+` (also `-` `*` `/` `^`) | X + Y | `(X + Y)` |
//! | `X,Y,max` (also `min`) | the greater | `max(X, Y)` |
//! | `X,Y,&` | 0 if Y is 0, else X | `if(Y == 0, 0, X)` |
//! | <code>X,Y,&#124;</code> | Y if X is 0, else X | `if(X == 0, Y, X)` |
//! | `X,!` | 1 if X is 0, else 0 (one operand) | `if(X == 0, 1, 0)` |
//! | `X,Y,<` (also `>` `<=` `>=` `==` `!=`) | 1 if X < Y, else 0 | `if(X < Y, 1, 0)` |
//! | `X,Y,Z,ifelse` | Y if X is not 0, else Z | `if(X != 0, Y, Z)` |
//! | `X,consume` | nothing (X is dropped) | |
//! | `X,duplicate` | X, X | |
//! | `X,Y,store` | X, and X is stored into variable Y | (a [`Store`]) |
//!
//! A formula must leave exactly one value. Every error — a token that is neither a number, a
//! name nor an operator, an operator with too few values under it, values left over, a
//! `store` into something that is not a variable, a name the caller does not know — has a
//! stable code and the byte span of the offending token in the text, so a front end points
//! at it inside the string it came from.
//!
//! Names are the caller's: [`compile`] hands each one (`STR`, `self.STR`, `creature.STR`,
//! `V0`, `NV1`) to a function that returns the text it stands for in the sheetd formula (a
//! variable's name, or a runtime variable's value), or why it is unknown.

use std::ops::Range;

/// A postfix formula compiled: its value as a sheetd formula, and what it stores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiled {
    /// The formula's value, in sheetd's formula syntax.
    pub formula: String,
    /// The `store` steps, in the order they run: each writes a value into a variable (a
    /// feature's private `NVn`) when the formula runs at event time.
    pub stores: Vec<Store>,
}

/// One `X,Y,store`: the value X (a sheetd formula) written into variable Y.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
    /// The variable, as the caller's name function gave it.
    pub var: String,
    /// The value stored, in sheetd's formula syntax.
    pub value: String,
    /// The `store` token's byte span in the text.
    pub at: Range<usize>,
}

/// Why a postfix formula does not compile: its span is the token at fault (the whole text when
/// no token is).
pub type PostfixError = crate::Error;

/// The error codes.
pub mod codes {
    /// The text is not `( … )`, or has no token.
    pub const SHAPE: &str = "postfix.shape";
    /// An empty token (`(1,,2)`).
    pub const EMPTY_TOKEN: &str = "postfix.empty_token";
    /// A token that is neither a number, a name nor an operator.
    pub const BAD_TOKEN: &str = "postfix.bad_token";
    /// An operator with fewer values under it than it takes.
    pub const UNDERFLOW: &str = "postfix.underflow";
    /// Values left over at the end: a formula leaves exactly one.
    pub const LEFTOVER: &str = "postfix.leftover";
    /// `store` into something that is not a variable.
    pub const STORE_TARGET: &str = "postfix.store_target";
    /// A name the caller does not know.
    pub const UNKNOWN_NAME: &str = "postfix.unknown_name";
    /// A value whose formula grows past [`super::MAX_TEXT`] (`duplicate` doubles one).
    pub const TOO_COMPLEX: &str = "postfix.too_complex";
}

/// The longest formula a value may compile to, in bytes: `duplicate` copies a value's formula,
/// so a few dozen tokens could otherwise write gigabytes.
pub const MAX_TEXT: usize = 16 * 1024;

/// A value on the stack: its sheetd formula, whether it needs parentheses inside another
/// formula, the name it was pushed as (for `store`), and the token that made it.
#[derive(Clone)]
struct Operand {
    text: String,
    atom: bool,
    name: Option<String>,
    at: Range<usize>,
}

impl Operand {
    fn made(text: String, at: Range<usize>) -> Operand {
        Operand { text, atom: true, name: None, at }
    }

    /// Its text as an operand of an infix operator.
    fn grouped(&self) -> String {
        if self.atom { self.text.clone() } else { format!("({})", self.text) }
    }
}

/// Compiles postfix formula `text` (`(8,INT,PROF,+,+)`). `name` gives the sheetd text each
/// name stands for, or why it is unknown.
pub fn compile(
    text: &str,
    name: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Compiled, PostfixError> {
    let whole = 0..text.len();
    let err = |code, message: String, span: Range<usize>| PostfixError { code, message, span };
    let start = text.len() - text.trim_start().len();
    let trimmed = text.trim();
    let inner = trimmed.strip_prefix('(').and_then(|t| t.strip_suffix(')')).ok_or_else(|| {
        err(
            codes::SHAPE,
            format!("`{trimmed}` is not a postfix formula: write (VALUE, …, OPERATOR)"),
            whole.clone(),
        )
    })?;
    if inner.trim().is_empty() {
        return Err(err(
            codes::SHAPE,
            "an empty postfix formula: write (VALUE, …, OPERATOR)".to_owned(),
            whole,
        ));
    }
    let mut stack: Vec<Operand> = Vec::new();
    let mut stores = Vec::new();
    let mut offset = start + 1;
    for raw in inner.split(',') {
        let lead = raw.len() - raw.trim_start().len();
        let token = raw.trim();
        let at = offset + lead..offset + lead + token.len();
        offset += raw.len() + 1;
        if token.is_empty() {
            return Err(err(codes::EMPTY_TOKEN, "an empty token between commas".to_owned(), at));
        }
        let arity = operator_arity(token);
        if stack.len() < arity {
            let values = if arity == 1 { "a value" } else { "values" };
            return Err(err(
                codes::UNDERFLOW,
                format!("`{token}` takes {arity} {values}, but the stack has {}", stack.len()),
                at,
            ));
        }
        let ops = stack.split_off(stack.len() - arity);
        let pushed = apply(token, ops, at.clone(), &mut stores, name)?;
        if pushed.iter().any(|o| o.text.len() > MAX_TEXT) {
            return Err(err(
                codes::TOO_COMPLEX,
                format!("`{token}` makes a formula longer than {MAX_TEXT} bytes"),
                at,
            ));
        }
        stack.extend(pushed);
    }
    match stack.len() {
        1 => {
            // One value: a token made it (checked above).
            let value = stack.pop().map(|o| o.text).unwrap_or_default();
            Ok(Compiled { formula: value, stores })
        }
        0 => Err(err(
            codes::LEFTOVER,
            "the formula leaves no value: it must end with exactly one".to_owned(),
            offset.saturating_sub(1).min(text.len())..text.len(),
        )),
        n => {
            let first = &stack[0];
            Err(err(
                codes::LEFTOVER,
                format!(
                    "the formula leaves {n} values, and must leave exactly one: `{}` here is never used",
                    &text[first.at.clone()]
                ),
                first.at.clone(),
            ))
        }
    }
}

/// How many values `token` pops (0 for a number or a name).
fn operator_arity(token: &str) -> usize {
    match token.to_ascii_lowercase().as_str() {
        "+" | "-" | "*" | "/" | "^" | "max" | "min" | "&" | "|" | "<" | ">" | "<=" | ">=" | "==" | "!=" => 2,
        "store" => 2,
        "!" | "consume" | "duplicate" => 1,
        "ifelse" => 3,
        _ => 0,
    }
}

/// The values `token` pushes, given the `ops` it popped (as many as its arity).
fn apply(
    token: &str,
    ops: Vec<Operand>,
    at: Range<usize>,
    stores: &mut Vec<Store>,
    name: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Vec<Operand>, PostfixError> {
    let lower = token.to_ascii_lowercase();
    let infix = |op: &str| Operand {
        text: format!("{} {op} {}", ops[0].grouped(), ops[1].grouped()),
        atom: false,
        name: None,
        at: at.clone(),
    };
    let made = |text: String| Operand::made(text, at.clone());
    Ok(match lower.as_str() {
        "+" | "-" | "*" | "/" | "^" => vec![infix(token)],
        "max" | "min" => vec![made(format!("{lower}({}, {})", ops[0].text, ops[1].text))],
        "&" => vec![made(format!("if({} == 0, 0, {})", ops[1].grouped(), ops[0].text))],
        "|" => vec![made(format!("if({} == 0, {}, {})", ops[0].grouped(), ops[1].text, ops[0].text))],
        "!" => vec![made(format!("if({} == 0, 1, 0)", ops[0].grouped()))],
        "<" | ">" | "<=" | ">=" | "==" | "!=" => {
            vec![made(format!("if({} {token} {}, 1, 0)", ops[0].grouped(), ops[1].grouped()))]
        }
        "ifelse" => vec![made(format!("if({} != 0, {}, {})", ops[0].grouped(), ops[1].text, ops[2].text))],
        "consume" => Vec::new(),
        "duplicate" => vec![ops[0].clone(), ops[0].clone()],
        "store" => {
            let (value, target) = (&ops[0], &ops[1]);
            if target.name.is_none() {
                return Err(PostfixError {
                    code: codes::STORE_TARGET,
                    message: format!("`store` writes into a variable, and `{}` is not one", target.text),
                    span: target.at.clone(),
                });
            }
            // A name: the caller's text for it is the variable written.
            stores.push(Store { var: target.text.clone(), value: value.text.clone(), at: at.clone() });
            vec![value.clone()]
        }
        _ => vec![operand(token, at, name)?],
    })
}

/// A number or a name.
fn operand(
    token: &str,
    at: Range<usize>,
    name: &mut dyn FnMut(&str) -> Result<String, String>,
) -> Result<Operand, PostfixError> {
    if token.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-') {
        let d = formula::parse_decimal(token).map_err(|m| PostfixError {
            code: codes::BAD_TOKEN,
            message: m,
            span: at.clone(),
        })?;
        let text = formula::canonical_decimal(d);
        let atom = !text.starts_with('-');
        return Ok(Operand { text, atom, name: None, at });
    }
    // Words joined by dots (`STR`, `self.STR`, `TERRAIN_IS_DIFFICULT`), each starting with a
    // letter, and no `_` at the end: a name sheetd's formulas read as one.
    let is_name = !token.ends_with('_')
        && token.split('.').all(|w| {
            w.starts_with(|c: char| c.is_ascii_alphabetic())
                && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    if !is_name {
        return Err(PostfixError {
            code: codes::BAD_TOKEN,
            message: format!(
                "`{token}` is not a number, a name or an operator (+ - * / ^ max min & | ! < > <= >= == != ifelse consume duplicate store)"
            ),
            span: at,
        });
    }
    match name(token) {
        Ok(text) => {
            let atom = text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '@');
            Ok(Operand { text, atom, name: Some(token.to_owned()), at })
        }
        Err(message) => Err(PostfixError { code: codes::UNKNOWN_NAME, message, span: at }),
    }
}

#[cfg(test)]
mod tests;
