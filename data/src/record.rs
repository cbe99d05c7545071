//! Values as they are recorded and reported: owned, with their format by name, independent of
//! any ruleset version.
//!
//! A live sheet's values are [`solver::Slot`]s whose formats belong to one compiled ruleset. What
//! outlives the sheet — a revision's changes in a log, a snapshot, a reply to a client — uses
//! these types instead: a [`Value`] is its format's name and the value in text form (numbers
//! as canonical exact decimals), so it can be stored, compared and sent without the ruleset.
//!
//! [`Value`]'s `Display` is the one text rendering of values for people: numbers and literals as
//! written, strings quoted, lists in brackets, errors as `error: <message>`.

use crate::Character;
use formula::{Format, canonical_decimal};
use solver::{Slot, VarRef};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// A value with its format's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    /// NUMBER, BOOLEAN, STRING, ARRAY[...], or a data format's name (DICE, ...); empty for an
    /// error read without its variable's format.
    pub format: String,
    pub kind: Kind,
}

/// What a [`Value`] holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An exact decimal in canonical text (`2.5`, `-3`).
    Number(String),
    Boolean(bool),
    /// A STRING, or the literal text of a data format's value (`1d8`, `5,5`).
    Text(String),
    List(Vec<Value>),
    /// The variable could not be computed.
    Error {
        code: String,
        message: String,
        modifier: String,
    },
}

/// One variable's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    /// The reference: `Name` or `<instance>.<Name>`, as declared.
    pub var: String,
    pub value: Value,
}

/// One variable's change: `old` is `None` when it appeared, `new` when it went away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub var: String,
    pub old: Option<Value>,
    pub new: Option<Value>,
}

impl Value {
    /// A slot of a variable whose format is known.
    pub fn of(format: &Format, slot: &Slot) -> Value {
        Value { format: format.name().into_owned(), kind: Kind::of(slot) }
    }

    /// A slot whose variable's format is not at hand (a value a formula read): the format is
    /// read off the value.
    pub fn untyped(slot: &Slot) -> Value {
        let format = match slot {
            Ok(v) => format_of(v),
            Err(_) => String::new(),
        };
        Value { format, kind: Kind::of(slot) }
    }
}

impl Value {
    /// The value as a channel input receives it: numbers exactly, booleans, text (a data
    /// format's literal is parsed by the channel's format when applied). Lists and errors are
    /// not inputs.
    pub fn input(&self) -> Result<formula::Value, String> {
        let kind = match &self.kind {
            Kind::Number(n) => InputKind::Number(n),
            Kind::Boolean(b) => InputKind::Boolean(*b),
            Kind::Text(t) => InputKind::Text(t),
            Kind::List(_) => InputKind::List,
            Kind::Error { .. } => InputKind::Error,
        };
        kind.input()
    }
}

/// A value's kind, borrowed, as [`Value::input`] reads it: what another representation of a
/// value (a request's message) gives to be read as an input without making a record first.
#[derive(Clone, Copy, Debug)]
pub enum InputKind<'a> {
    /// A number's text.
    Number(&'a str),
    Boolean(bool),
    Text(&'a str),
    List,
    Error,
}

impl InputKind<'_> {
    /// The value a channel input receives (see [`Value::input`]).
    pub fn input(self) -> Result<formula::Value, String> {
        match self {
            InputKind::Number(n) => formula::parse_decimal(n).map(formula::Value::Number),
            InputKind::Boolean(b) => Ok(formula::Value::Boolean(b)),
            InputKind::Text(t) => Ok(formula::Value::String(std::sync::Arc::from(t))),
            InputKind::List => Err("a list is not an input value".to_owned()),
            InputKind::Error => Err("an error is not an input value".to_owned()),
        }
    }
}

impl Kind {
    fn of(slot: &Slot) -> Kind {
        use formula::Value as V;
        match slot {
            Ok(V::Number(d)) => Kind::Number(canonical_decimal(*d)),
            Ok(V::Boolean(b)) => Kind::Boolean(*b),
            Ok(V::String(s)) => Kind::Text(s.to_string()),
            Ok(V::Custom(c)) => Kind::Text(c.data.literal()),
            Ok(V::Array(items)) => Kind::List(items.iter().map(|i| Value::untyped(&Ok(i.clone()))).collect()),
            Err(e) => Kind::Error {
                code: e.code.to_owned(),
                message: e.message.clone(),
                modifier: e.modifier.to_string(),
            },
        }
    }
}

fn format_of(v: &formula::Value) -> String {
    use formula::Value as V;
    match v {
        V::Number(_) => "NUMBER".to_owned(),
        V::Boolean(_) => "BOOLEAN".to_owned(),
        V::String(_) => "STRING".to_owned(),
        V::Custom(c) => c.format.name().to_owned(),
        V::Array(items) => match items.first() {
            Some(first) => format!("ARRAY[{}]", format_of(first)),
            None => "ARRAY".to_owned(),
        },
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Number(n) => f.write_str(n),
            Kind::Boolean(b) => write!(f, "{b}"),
            Kind::Text(t) if self.format == "STRING" => write!(f, "{t:?}"),
            Kind::Text(t) => f.write_str(t),
            Kind::List(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Kind::Error { message, .. } => write!(f, "error: {message}"),
        }
    }
}

impl Variable {
    pub fn of(var: &VarRef, format: &Format, slot: &Slot) -> Variable {
        Variable { var: var.full_name(), value: Value::of(format, slot) }
    }
}

/// Every change `report` records, as records, named against `sheet` right after the operation
/// (removed variables first, then the rest in topological order).
pub fn changes(report: &solver::Report, sheet: &solver::Sheet) -> Vec<Change> {
    let mut out = Vec::with_capacity(report.len());
    report.for_each_named(sheet, |instance, name, format, old, new| {
        // The format's name looked up once for both sides, and made a `String` once per side
        // (this runs for every variable a change touches).
        let format = format.name();
        let old = old.map(|s| Value { format: format.clone().into_owned(), kind: Kind::of(&s) });
        let new = new.map(|s| Value { format: format.into_owned(), kind: Kind::of(&s) });
        out.push(Change { var: solver::full_name(instance, name), old, new });
    });
    out
}

/// Named changes (a game step's, already named against the sheet as it was after each batch)
/// as records, in their order.
pub fn named_changes(changes: &[solver::Change]) -> Vec<Change> {
    changes
        .iter()
        .map(|c| Change {
            var: c.var.full_name(),
            old: c.old.as_ref().map(|s| Value::of(&c.format, s)),
            new: c.new.as_ref().map(|s| Value::of(&c.format, s)),
        })
        .collect()
}

/// Every value of a character, in the solver's order (globals, then instances as added).
pub fn values(c: &Character) -> Vec<Variable> {
    let mut out = Vec::with_capacity(c.sheet().variable_count());
    c.sheet().for_each_value(|instance, name, format, slot| {
        out.push(Variable { var: solver::full_name(instance, name), value: Value::of(format, &slot) });
    });
    out
}

/// The changes from one set of values to another: removed variables first (as in a solver
/// report), then the rest in the order of `new`.
pub fn diff(old: &[Variable], new: &[Variable]) -> Vec<Change> {
    let new_vars: HashSet<&str> = new.iter().map(|v| v.var.as_str()).collect();
    let mut changes: Vec<Change> = old
        .iter()
        .filter(|v| !new_vars.contains(v.var.as_str()))
        .map(|v| Change { var: v.var.clone(), old: Some(v.value.clone()), new: None })
        .collect();
    let before: HashMap<&str, &Value> = old.iter().map(|v| (v.var.as_str(), &v.value)).collect();
    for v in new {
        let old = before.get(v.var.as_str()).copied();
        if old != Some(&v.value) {
            changes.push(Change { var: v.var.clone(), old: old.cloned(), new: Some(v.value.clone()) });
        }
    }
    changes
}

/// Values after `changes` are applied to `values` in order (a snapshot rolled forward).
pub fn roll_forward(values: Vec<Variable>, changes: impl IntoIterator<Item = Change>) -> Vec<Variable> {
    let mut out: Vec<Option<Variable>> = values.into_iter().map(Some).collect();
    let mut index: HashMap<String, usize> =
        out.iter().enumerate().filter_map(|(i, v)| Some((v.as_ref()?.var.clone(), i))).collect();
    for c in changes {
        match (c.new, index.get(&c.var)) {
            (Some(value), Some(&i)) => out[i] = Some(Variable { var: c.var, value }),
            (Some(value), None) => {
                index.insert(c.var.clone(), out.len());
                out.push(Some(Variable { var: c.var, value }));
            }
            (None, Some(&i)) => {
                out[i] = None;
                index.remove(&c.var);
            }
            (None, None) => {}
        }
    }
    out.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(var: &str, n: &str) -> Variable {
        Variable { var: var.into(), value: Value { format: "NUMBER".into(), kind: Kind::Number(n.into()) } }
    }

    #[test]
    fn diff_and_roll_forward_agree() {
        let old = vec![num("A", "1"), num("B", "2"), num("C", "3")];
        let new = vec![num("A", "1"), num("C", "4"), num("D", "5")];
        let changes = diff(&old, &new);
        let shown: Vec<String> = changes
            .iter()
            .map(|c| {
                let s = |v: &Option<Value>| v.as_ref().map_or("-".to_owned(), |v| v.to_string());
                format!("{} {}→{}", c.var, s(&c.old), s(&c.new))
            })
            .collect();
        assert_eq!(shown, ["B 2→-", "C 3→4", "D -→5"]);
        assert_eq!(roll_forward(old, changes), new);
    }

    #[test]
    fn values_show_as_people_read_them() {
        let text = |format: &str, t: &str| Value { format: format.into(), kind: Kind::Text(t.into()) };
        assert_eq!(text("STRING", "hi").to_string(), "\"hi\"");
        assert_eq!(text("DICE", "1d8").to_string(), "1d8");
        let list = Value {
            format: "ARRAY[NUMBER]".into(),
            kind: Kind::List(vec![num("x", "1").value, num("y", "2.5").value]),
        };
        assert_eq!(list.to_string(), "[1, 2.5]");
        let e = Value {
            format: "NUMBER".into(),
            kind: Kind::Error { code: "c".into(), message: "division by zero".into(), modifier: "m".into() },
        };
        assert_eq!(e.to_string(), "error: division by zero");
    }
}
