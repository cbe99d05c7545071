//! Formats (the types of values) and the extension point for formats defined by later layers.
//!
//! The core knows NUMBER, BOOLEAN, STRING and ARRAY[x]. Later layers add formats such as
//! ORDEREDPAIR, DICE or a data-defined enumeration by implementing [`FormatType`] and registering
//! it in a [`FormatRegistry`]; the core needs no edits. BOOLEAN and NUMBER are separate domains.

use crate::value::{CustomValue, Value};
use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The format (type) of a value.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Format {
    /// Exact decimal numbers.
    Number,
    /// `true` / `false`; not interchangeable with numbers.
    Boolean,
    /// Text.
    String,
    /// An ordered list of values of one format.
    Array(Arc<Format>),
    /// A format registered by a later layer.
    Custom(CustomFormat),
}

impl Format {
    /// `ARRAY[element]`.
    pub fn array(element: Format) -> Format {
        Format::Array(Arc::new(element))
    }

    /// The element format when this is an array.
    pub fn element(&self) -> Option<&Format> {
        match self {
            Format::Array(e) => Some(e),
            _ => None,
        }
    }

    /// The format's built-in default value: NUMBER 0, BOOLEAN false, STRING "", ARRAY empty, a
    /// custom format's [`FormatType::default_value`]. Rulesets may configure other defaults.
    pub fn builtin_default(&self) -> Value {
        match self {
            Format::Number => Value::Number(rust_decimal::Decimal::ZERO),
            Format::Boolean => Value::Boolean(false),
            Format::String => Value::String(Arc::from("")),
            Format::Array(_) => Value::Array(Arc::from(Vec::new())),
            Format::Custom(c) => Value::Custom(Arc::new(CustomValue::new(*c, c.0.default_value()))),
        }
    }
}

impl Format {
    /// The format's name as `Display` writes it, borrowed when it is a fixed name (every format
    /// but an array's): cheaper than `to_string` for code that names many values.
    pub fn name(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Format::Number => "NUMBER".into(),
            Format::Boolean => "BOOLEAN".into(),
            Format::String => "STRING".into(),
            Format::Array(_) => self.to_string().into(),
            Format::Custom(c) => c.name().into(),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Format::Number => f.write_str("NUMBER"),
            Format::Boolean => f.write_str("BOOLEAN"),
            Format::String => f.write_str("STRING"),
            Format::Array(e) => write!(f, "ARRAY[{e}]"),
            Format::Custom(c) => f.write_str(c.name()),
        }
    }
}

impl fmt::Debug for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The data of a custom value (an ordered pair, a dice expression, an enumeration key).
pub trait CustomData: fmt::Debug + Send + Sync + 'static {
    /// The canonical literal text, as it would be written in data (`5,5`, `2d6+1`).
    fn literal(&self) -> String;
    /// Access to the concrete type, for [`FormatType::equal`] and for functions that use it.
    fn as_any(&self) -> &dyn Any;
}

/// A format defined outside the core: its name, literal syntax, equality and default.
pub trait FormatType: fmt::Debug + Send + Sync + 'static {
    /// The format's name in upper case, e.g. `ORDEREDPAIR`.
    fn name(&self) -> &str;
    /// Parses a literal of this format as written in data (`5,5`). The error says what is wrong.
    fn parse_literal(&self, text: &str) -> Result<Arc<dyn CustomData>, String>;
    /// The value a variable of this format starts from unless the ruleset sets another.
    fn default_value(&self) -> Arc<dyn CustomData>;
    /// Whether two values of this format are equal (`==`). By default, equal canonical literals.
    fn equal(&self, a: &dyn CustomData, b: &dyn CustomData) -> bool {
        a.literal() == b.literal()
    }
}

/// A handle on a registered custom format; two handles are equal when their names are.
///
/// A plain reference, copied without a count: every custom value holds its format, and values
/// are copied and dropped on every core that solves sheets. Held by `Arc`, the format's one
/// count was written by all of them, each write taking its cache line from the other cores
/// (see the fifth round in `docs/solver.md`). Formats
/// are therefore kept for the life of the process, interned by definition (see
/// [`CustomFormat::new`]).
#[derive(Clone, Copy)]
pub struct CustomFormat(&'static dyn FormatType);

/// Every custom format made in this process, by definition: its name and its `Debug` text
/// (which shows its fields). A ruleset loaded again (a reload, a test) finds its formats here,
/// so what is kept grows with the distinct formats defined, not with the loads.
static INTERNED: std::sync::Mutex<Vec<(String, &'static dyn FormatType)>> = std::sync::Mutex::new(Vec::new());

impl CustomFormat {
    /// A handle on format type `t`: the one made before for the same definition (the same
    /// name and `Debug` text), or `t`, kept for the life of the process.
    pub fn new(t: Arc<dyn FormatType>) -> Self {
        let key = format!("{}\u{0}{t:?}", t.name());
        // (A panic while the list was held left it whole: each change is one push.)
        let mut interned = INTERNED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(&(_, f)) = interned.iter().find(|(k, _)| *k == key) {
            return CustomFormat(f);
        }
        let f: &'static dyn FormatType = &**Box::leak(Box::new(t));
        interned.push((key, f));
        CustomFormat(f)
    }

    /// The format's name.
    pub fn name(&self) -> &str {
        self.0.name()
    }

    /// The format's behaviour.
    pub fn kind(&self) -> &'static dyn FormatType {
        self.0
    }
}

impl PartialEq for CustomFormat {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for CustomFormat {}

impl std::hash::Hash for CustomFormat {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state)
    }
}

/// Maps format names (case-insensitive) to formats: the core ones plus registered custom ones.
#[derive(Clone, Default)]
pub struct FormatRegistry {
    custom: HashMap<String, CustomFormat>,
}

impl FormatRegistry {
    /// A registry with only the core formats.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a custom format. Fails if the name is a core format or already registered.
    pub fn register(&mut self, t: Arc<dyn FormatType>) -> Result<CustomFormat, String> {
        let key = t.name().to_ascii_uppercase();
        if matches!(key.as_str(), "NUMBER" | "BOOLEAN" | "STRING" | "ARRAY") {
            return Err(format!("`{}` is a core format and cannot be redefined", t.name()));
        }
        if self.custom.contains_key(&key) {
            return Err(format!("format `{}` is already defined", t.name()));
        }
        let f = CustomFormat::new(t);
        self.custom.insert(key, f);
        Ok(f)
    }

    /// Looks up a format by name: `NUMBER`, `ARRAY[NUMBER]`, `ORDEREDPAIR`, case-insensitive.
    pub fn parse(&self, name: &str) -> Result<Format, String> {
        let trimmed = name.trim();
        let upper = trimmed.to_ascii_uppercase();
        if let Some(inner) = upper.strip_prefix("ARRAY[").and_then(|r| r.strip_suffix(']')) {
            return self.parse(inner).map(Format::array);
        }
        match upper.as_str() {
            "NUMBER" => Ok(Format::Number),
            "BOOLEAN" => Ok(Format::Boolean),
            "STRING" => Ok(Format::String),
            _ => self.custom.get(&upper).cloned().map(Format::Custom).ok_or_else(|| {
                let mut known: Vec<&str> = vec!["NUMBER", "BOOLEAN", "STRING", "ARRAY[...]"];
                let mut custom: Vec<&str> = self.custom.values().map(|c| c.name()).collect();
                custom.sort_unstable();
                known.extend(custom);
                format!("unknown format `{trimmed}` (known: {})", known.join(", "))
            }),
        }
    }

    /// The registered custom formats.
    pub fn custom_formats(&self) -> impl Iterator<Item = &CustomFormat> {
        self.custom.values()
    }
}
