//! Modifier types and values.

use formula::number::MathError;
use formula::{Format, Formula, Num, Value};
use std::fmt;
use std::sync::Arc;

/// What a modifier does to the value so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModKind {
    /// Replace the value.
    Set,
    /// Multiply (NUMBER).
    Multiply,
    /// Divide (NUMBER); division by zero makes the variable an error.
    Divide,
    /// Add (NUMBER).
    Add,
    /// At least this value (NUMBER): `max(current, value)`.
    Max,
    /// At most this value (NUMBER): `min(current, value)`.
    Min,
    /// Append an element (ARRAY; written `ADD` or `APPEND`).
    Append,
}

impl ModKind {
    /// Applies a NUMBER modifier of this type with value `v` to the value so far, `cur`
    /// (APPEND, which never reaches a NUMBER variable, leaves it unchanged).
    #[inline(always)]
    pub fn apply_num(self, cur: Num, v: Num) -> Result<Num, MathError> {
        match self {
            ModKind::Set => Ok(v),
            ModKind::Add => cur.checked_add(v),
            ModKind::Multiply => cur.checked_mul(v),
            ModKind::Divide => cur.checked_div(v),
            ModKind::Max => Ok(cur.max(v)),
            ModKind::Min => Ok(cur.min(v)),
            ModKind::Append => Ok(cur),
        }
    }

    /// The inherent priority: SET 0, MULTIPLY 1, DIVIDE 2, ADD 3, MAX 4, MIN 5; APPEND 3.
    pub fn inherent_priority(self) -> u8 {
        match self {
            ModKind::Set => 0,
            ModKind::Multiply => 1,
            ModKind::Divide => 2,
            ModKind::Add | ModKind::Append => 3,
            ModKind::Max => 4,
            ModKind::Min => 5,
        }
    }

    /// The type's name as written in data.
    pub fn name(self) -> &'static str {
        match self {
            ModKind::Set => "SET",
            ModKind::Multiply => "MULTIPLY",
            ModKind::Divide => "DIVIDE",
            ModKind::Add => "ADD",
            ModKind::Max => "MAX",
            ModKind::Min => "MIN",
            ModKind::Append => "APPEND",
        }
    }

    /// The modifier type `name` (case-insensitive) for a variable of `format`, or the list of
    /// types that format accepts.
    pub fn parse(name: &str, format: &Format) -> Result<ModKind, String> {
        let upper = name.trim().to_ascii_uppercase();
        let kind = match (format, upper.as_str()) {
            (_, "SET") => ModKind::Set,
            (Format::Number, "MULTIPLY") => ModKind::Multiply,
            (Format::Number, "DIVIDE") => ModKind::Divide,
            (Format::Number, "ADD") => ModKind::Add,
            (Format::Number, "MAX") => ModKind::Max,
            (Format::Number, "MIN") => ModKind::Min,
            (Format::Array(_), "ADD" | "APPEND") => ModKind::Append,
            _ => {
                let allowed = match format {
                    Format::Number => "SET, MULTIPLY, DIVIDE, ADD, MAX, MIN",
                    Format::Array(_) => "SET, ADD (append)",
                    _ => "SET",
                };
                return Err(format!(
                    "modifier type `{name}` does not apply to {format} (allowed: {allowed})"
                ));
            }
        };
        Ok(kind)
    }

    /// The format the modifier's value must have for a target of `format`.
    pub fn value_format(self, format: &Format) -> Format {
        match (self, format) {
            (ModKind::Append, Format::Array(e)) => (**e).clone(),
            _ => format.clone(),
        }
    }
}

impl fmt::Display for ModKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A modifier's value: a constant (never evaluated) or a formula.
#[derive(Clone, Debug)]
pub enum ModValue {
    Const(Value),
    Formula(Arc<Formula>),
}

/// How a modifier's value or condition is given to [`crate::Sheet::add_modifier`].
#[derive(Clone, Debug)]
pub enum Instruction {
    /// Text: a formula, or a literal for formats without formulas (STRING, custom formats).
    Text(Arc<str>),
    /// A formula compiled earlier (by [`crate::Rules::compile`] in the `from` instance's scope).
    Compiled(Arc<Formula>),
    /// A constant parsed and checked earlier (by the data layer at load), with its text as
    /// written. Its format must be the one the modifier type requires.
    Literal(Value, Arc<str>),
}

impl Instruction {
    /// The text as written.
    pub fn text(&self) -> &str {
        match self {
            Instruction::Text(t) => t,
            Instruction::Compiled(f) => f.text(),
            Instruction::Literal(_, t) => t,
        }
    }
}

impl From<&str> for Instruction {
    fn from(t: &str) -> Self {
        Instruction::Text(Arc::from(t))
    }
}

/// A modifier to add to a sheet.
#[derive(Clone, Debug)]
pub struct ModifierSpec {
    /// Unique id within the sheet.
    pub id: Arc<str>,
    /// The variable modified, resolved from `on` (or the global scope).
    pub var: Arc<str>,
    /// The instance where resolving `var` starts; `None` for the global instance.
    pub on: Option<Arc<str>>,
    /// The instance whose scope the formula's names resolve in; `None` means `on`.
    pub from: Option<Arc<str>>,
    /// `SET`, `ADD`, …
    pub kind: Arc<str>,
    pub value: Instruction,
    /// User priority (lower applies first); default 0.
    pub priority: u32,
    /// A label for where the modifier comes from (an object, a template); used by
    /// `remove_source` and traces.
    pub source: Arc<str>,
    /// A BOOLEAN formula; when false the modifier is skipped.
    pub condition: Option<Instruction>,
}

impl ModifierSpec {
    /// A modifier with priority 0, no condition, applied on and from the global instance.
    pub fn new(id: &str, var: &str, kind: &str, value: &str, source: &str) -> Self {
        ModifierSpec {
            id: Arc::from(id),
            var: Arc::from(var),
            on: None,
            from: None,
            kind: Arc::from(kind),
            value: Instruction::from(value),
            priority: 0,
            source: Arc::from(source),
            condition: None,
        }
    }

    /// Sets the user priority.
    pub fn priority(mut self, p: u32) -> Self {
        self.priority = p;
        self
    }

    /// Sets the instance the variable is resolved from.
    pub fn on(mut self, instance: &str) -> Self {
        self.on = Some(Arc::from(instance));
        self
    }

    /// Sets the instance the formula's names resolve in.
    pub fn from(mut self, instance: &str) -> Self {
        self.from = Some(Arc::from(instance));
        self
    }

    /// Sets a condition.
    pub fn when(mut self, condition: &str) -> Self {
        self.condition = Some(Instruction::from(condition));
        self
    }
}
