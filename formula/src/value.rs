//! Values: what formulas compute and variables hold.

use crate::format::{CustomData, CustomFormat, Format, FormatRegistry};
use rust_decimal::Decimal;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// A value of some [`Format`]. Cheap to clone: numbers are inline, the rest are reference counted.
#[derive(Clone, Debug)]
pub enum Value {
    /// An exact decimal number.
    Number(Decimal),
    /// A truth value.
    Boolean(bool),
    /// Text.
    String(Arc<str>),
    /// An array; its element format is known from the formula or variable it belongs to.
    Array(Arc<[Value]>),
    /// A value of a custom format (behind one pointer, so that the rare custom value does not
    /// make every value larger).
    Custom(Arc<CustomValue>),
}

// Values are stored by the thousand (a sheet's values, every change a report carries): a
// number, the common case, takes 24 bytes with its tag, and so does every other variant.
const _: () = assert!(std::mem::size_of::<Value>() == 24);

impl Value {
    /// The number inside, if this is a NUMBER.
    pub fn as_number(&self) -> Option<Decimal> {
        match self {
            Value::Number(d) => Some(*d),
            _ => None,
        }
    }

    /// The truth value inside, if this is a BOOLEAN.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Boolean(b) => Some(*b),
            _ => None,
        }
    }

    /// Whether this value belongs to `format` (array elements are checked too).
    pub fn conforms_to(&self, format: &Format) -> bool {
        match (self, format) {
            (Value::Number(_), Format::Number)
            | (Value::Boolean(_), Format::Boolean)
            | (Value::String(_), Format::String) => true,
            (Value::Array(items), Format::Array(e)) => items.iter().all(|v| v.conforms_to(e)),
            (Value::Custom(c), Format::Custom(f)) => &c.format == f,
            _ => false,
        }
    }

    /// Parses a value of `format` from its literal text as written in data: a decimal number,
    /// `true`/`false` (any case), any text for STRING, a custom format's own literal syntax.
    /// An ARRAY's elements are separated by commas (`Fire,Cold`; empty text is the empty array).
    pub fn parse_literal(format: &Format, text: &str) -> Result<Value, String> {
        let t = text.trim();
        match format {
            Format::Number => parse_decimal(t).map(Value::Number),
            Format::Boolean => match t.to_ascii_lowercase().as_str() {
                "true" => Ok(Value::Boolean(true)),
                "false" => Ok(Value::Boolean(false)),
                _ => Err(format!("`{t}` is not a BOOLEAN (expected true or false)")),
            },
            Format::String => Ok(Value::String(Arc::from(text))),
            Format::Array(e) if matches!(**e, Format::Array(_)) => {
                Err("an ARRAY of ARRAYs has no literal text".to_owned())
            }
            // `Fire,Cold`: elements separated by commas, each as its format reads it (PCGen's
            // array format); empty text is the empty array.
            Format::Array(_) if t.is_empty() => Ok(Value::Array(Arc::from(Vec::new()))),
            Format::Array(e) => t
                .split(',')
                .enumerate()
                .map(|(i, item)| {
                    let item = item.trim();
                    if item.is_empty() {
                        return Err(format!("element {} of `{t}` is empty", i + 1));
                    }
                    Value::parse_literal(e, item)
                })
                .collect::<Result<Vec<Value>, String>>()
                .map(|items| Value::Array(items.into())),
            Format::Custom(c) => c
                .kind()
                .parse_literal(t)
                .map(|d| Value::Custom(Arc::new(CustomValue::new(*c, d))))
                .map_err(|e| format!("`{t}` is not a valid {}: {e}", c.name())),
        }
    }
}

/// Parses a decimal number exactly (`12`, `-1.5`, `.5`); more than 28 significant digits or a
/// magnitude above about 7.9e28 is an error, never a rounded value.
pub fn parse_decimal(text: &str) -> Result<Decimal, String> {
    let t = text.trim();
    let valid = {
        let body = t.strip_prefix('-').unwrap_or(t);
        let (int, frac) = body.split_once('.').unwrap_or((body, ""));
        let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        // `12`, `1.5`, `.5`: digits on at least one side, and digits after any `.`.
        digits(int) && digits(frac) && !frac.is_empty()
            || (digits(int) && !int.is_empty() && !body.contains('.'))
    };
    if !valid {
        return Err(format!("`{t}` is not a decimal number"));
    }
    // A whole number of up to 18 digits (nearly every number a request sends) fits an `i64`.
    if t.len() <= 18
        && !t.contains('.')
        && let Ok(i) = t.parse::<i64>()
    {
        return Ok(Decimal::from(i));
    }
    let normalized: std::borrow::Cow<'_, str> = match t.strip_prefix("-.") {
        Some(rest) => format!("-0.{rest}").into(),
        None => match t.strip_prefix('.') {
            Some(rest) => format!("0.{rest}").into(),
            None => t.into(),
        },
    };
    Decimal::from_str_exact(&normalized)
        .map_err(|_| format!("`{t}` does not fit exact decimal arithmetic (28 significant digits)"))
}

/// Canonical decimal text: no exponent, no trailing zeros, no negative zero.
pub fn canonical_decimal(d: Decimal) -> String {
    // A whole number of scale 0 (nearly every value of game data) is its integer's digits.
    if let crate::Num::Int(i) = crate::Num::from_decimal(d) {
        // One exact allocation (the formatting machinery grows its string as it writes).
        return itoa::Buffer::new().format(i).to_owned();
    }
    let n = d.normalize();
    if n.is_zero() { "0".to_owned() } else { n.to_string() }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Number(d) => f.write_str(&canonical_decimal(*d)),
            Value::Boolean(b) => write!(f, "{b}"),
            Value::String(s) => f.write_str(s),
            Value::Array(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Value::Custom(c) => f.write_str(&c.data.literal()),
        }
    }
}

impl PartialEq for Value {
    /// NUMBERs compare numerically (`3 == 3.0`), custom values by their format's equality.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Number(a), Value::Number(b)) => a == b,
            (Value::Boolean(a), Value::Boolean(b)) => a == b,
            (Value::String(a), Value::String(b)) => a == b,
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b.iter()).all(|(x, y)| x == y)
            }
            (Value::Custom(a), Value::Custom(b)) => {
                a.format == b.format && a.format.kind().equal(&*a.data, &*b.data)
            }
            _ => false,
        }
    }
}

/// A value of a custom format: the format and its data.
#[derive(Clone, Debug)]
pub struct CustomValue {
    pub format: CustomFormat,
    pub data: Arc<dyn CustomData>,
}

impl CustomValue {
    /// Pairs data with its format.
    pub fn new(format: CustomFormat, data: Arc<dyn CustomData>) -> Self {
        CustomValue { format, data }
    }
}

impl fmt::Debug for CustomFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a format name with the core formats only (a convenience for tests and tools).
impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FormatRegistry::new().parse(s)
    }
}
