//! Modifier types and values.

use crate::error::{SolveError, codes};
use crate::rules::VarDefId;
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
    /// Append one element (ARRAY; written `APPEND`).
    Append,
    /// Add the elements of an array not already present, as a set (ARRAY; written `ADD`,
    /// as in PCGen: `ADD|Fire,Cold`).
    Union,
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
            ModKind::Append | ModKind::Union => Ok(cur),
        }
    }

    /// The inherent priority: SET 0, MULTIPLY 1, DIVIDE 2, ADD 3, MAX 4, MIN 5; APPEND and
    /// ADD on an array 3.
    pub fn inherent_priority(self) -> u8 {
        match self {
            ModKind::Set => 0,
            ModKind::Multiply => 1,
            ModKind::Divide => 2,
            ModKind::Add | ModKind::Append | ModKind::Union => 3,
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
            ModKind::Add | ModKind::Union => "ADD",
            ModKind::Max => "MAX",
            ModKind::Min => "MIN",
            ModKind::Append => "APPEND",
        }
    }

    /// The modifier type written `name` (case-insensitive): SET, MULTIPLY, DIVIDE, ADD, MAX,
    /// MIN or APPEND. Whether it fits a variable is [`ModKind::for_format`]'s question.
    pub fn named(name: &str) -> Result<ModKind, SolveError> {
        let upper = name.trim().to_ascii_uppercase();
        Ok(match upper.as_str() {
            "SET" => ModKind::Set,
            "MULTIPLY" => ModKind::Multiply,
            "DIVIDE" => ModKind::Divide,
            "ADD" => ModKind::Add,
            "MAX" => ModKind::Max,
            "MIN" => ModKind::Min,
            "APPEND" => ModKind::Append,
            _ => {
                return Err(SolveError::new(
                    codes::BAD_MODIFIER_TYPE,
                    format!("`{name}` is not a modifier type (SET, MULTIPLY, DIVIDE, ADD, MAX, MIN, APPEND)"),
                ));
            }
        })
    }

    /// This type as it applies to a variable of `format` (ADD on an ARRAY is a set union, APPEND
    /// appends one element), or the list of types that format accepts.
    pub fn for_format(self, format: &Format) -> Result<ModKind, String> {
        let kind = match (format, self) {
            (_, ModKind::Set) => ModKind::Set,
            (
                Format::Number,
                k @ (ModKind::Multiply | ModKind::Divide | ModKind::Add | ModKind::Max | ModKind::Min),
            ) => k,
            (Format::Array(_), ModKind::Add | ModKind::Union) => ModKind::Union,
            (Format::Array(_), ModKind::Append) => ModKind::Append,
            _ => {
                let allowed = match format {
                    Format::Number => "SET, MULTIPLY, DIVIDE, ADD, MAX, MIN",
                    Format::Array(_) => "SET, ADD (the elements not already present), APPEND (one element)",
                    _ => "SET",
                };
                let name = self.name();
                return Err(format!(
                    "modifier type `{name}` does not apply to {format} (allowed: {allowed})"
                ));
            }
        };
        Ok(kind)
    }

    /// [`ModKind::named`] then [`ModKind::for_format`], with the error as text.
    pub fn parse(name: &str, format: &Format) -> Result<ModKind, String> {
        ModKind::named(name).map_err(|e| e.message)?.for_format(format)
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

    /// The text as written, shared.
    pub fn text_arc(&self) -> Arc<str> {
        match self {
            Instruction::Compiled(f) => f.text_arc().clone(),
            Instruction::Text(t) | Instruction::Literal(_, t) => t.clone(),
        }
    }
}

impl From<&str> for Instruction {
    fn from(t: &str) -> Self {
        Instruction::Text(Arc::from(t))
    }
}

/// Whether a modifier's value for `expected` is written as a literal rather than a formula:
/// for formats whose values are text (STRING, data formats) unless it is marked as a formula
/// with a leading `=` (`="Level " + text(Level)`; a literal that starts with `=` doubles it:
/// `==5` is the text `=5`), BOOLEAN when the text is `true` or `false`. The one place this
/// rule lives; [`crate::Rules::instruction`] applies it, with `literal_text` and
/// `formula_text`.
pub fn is_literal(expected: &Format, text: &str) -> bool {
    match expected {
        Format::String | Format::Custom(_) | Format::Array(_) => {
            !text.starts_with('=') || text.starts_with("==")
        }
        Format::Boolean => {
            let t = text.trim();
            t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("false")
        }
        _ => false,
    }
}

/// The text of a literal value for `expected` as its format reads it: a text format's doubled
/// leading `=` made single (see [`is_literal`]).
pub fn literal_text<'a>(expected: &Format, text: &'a str) -> &'a str {
    match expected {
        Format::String | Format::Custom(_) | Format::Array(_) if text.starts_with("==") => &text[1..],
        _ => text,
    }
}

/// The formula of a value for `expected` that is one: a text format's formula without its
/// marking `=` (see [`is_literal`]).
pub fn formula_text<'a>(expected: &Format, text: &'a str) -> &'a str {
    match expected {
        Format::String | Format::Custom(_) | Format::Array(_) => text.strip_prefix('=').unwrap_or(text),
        _ => text,
    }
}

/// The variable a modifier changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A name resolved from the `on` instance's scope when the modifier is added (ad-hoc
    /// modifiers from requests).
    Name(Arc<str>),
    /// A declaration resolved at load (rulesets); its node is the `on` instance's.
    Def(VarDefId),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Name(n) => f.write_str(n),
            Target::Def(d) => write!(f, "#{}", d.0),
        }
    }
}

/// A modifier to add to a sheet.
#[derive(Clone, Debug)]
pub struct ModifierSpec {
    /// Unique id within the sheet.
    pub id: Arc<str>,
    /// The variable modified, seen from `on` (or the global instance).
    pub var: Target,
    /// The instance where resolving `var` starts; `None` for the global instance.
    pub on: Option<Arc<str>>,
    /// The instance whose scope the formula's names resolve in; `None` means `on`.
    pub from: Option<Arc<str>>,
    /// `SET`, `ADD`, … (ADD on an ARRAY adds elements as a set, APPEND appends one).
    pub kind: ModKind,
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
    /// A modifier on the variable named `var`, with priority 0, no condition, applied on and
    /// from the global instance.
    pub fn new(id: &str, var: &str, kind: ModKind, value: &str, source: &str) -> Self {
        ModifierSpec {
            id: Arc::from(id),
            var: Target::Name(Arc::from(var)),
            on: None,
            from: None,
            kind,
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

    /// Sets where the modifier goes and its condition, each when given: the instance the
    /// variable is resolved from, the instance its formulas' names resolve in, and a condition
    /// formula (as requests, stored logs and step files carry them).
    pub fn placed(mut self, on: Option<&str>, from: Option<&str>, condition: Option<&str>) -> Self {
        self.on = on.map(Arc::from);
        self.from = from.map(Arc::from);
        self.condition = condition.map(Instruction::from);
        self
    }

    /// Sets a condition.
    pub fn when(mut self, condition: &str) -> Self {
        self.condition = Some(Instruction::from(condition));
        self
    }
}
