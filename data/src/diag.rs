//! Where things come from, and errors that point there.
//!
//! Every definition and modifier in a ruleset remembers its [`Origin`]: file, line and column.
//! Every problem found while loading is a [`Diagnostic`] with a stable code, a message naming the
//! offending thing, its origin, and the offending text, so that it can be rendered like rustc:
//!
//! ```text
//! error[data.unknown_scope]: unknown scope `PC.NOPE`
//!   --> core/variables.lst:3:7
//!    |
//!  3 | LOCAL:PC.NOPE|NUMBER=Speed
//!    |       ^^^^^^^
//! ```

use std::fmt;
use std::sync::Arc;

/// One source file's text, kept once and shared by every [`Origin`] in it. Lines and columns
/// are derived from byte offsets on demand, so a position costs a pointer and an offset however
/// long its line is.
#[derive(Debug)]
pub struct SourceFile {
    /// The file, as given to the loader (or relative to the ruleset's root).
    pub name: Arc<str>,
    text: Arc<str>,
    /// Byte offset of each line's start.
    line_starts: Box<[u32]>,
}

impl SourceFile {
    /// A file's text. Offsets are `u32`: callers limit file sizes far below 4 GiB (a longer
    /// text's positions past 4 GiB point at its end).
    pub fn new(name: &str, text: Arc<str>) -> Arc<SourceFile> {
        let mut line_starts = vec![0u32];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| u32::try_from(i + 1).unwrap_or(u32::MAX)));
        Arc::new(SourceFile { name: Arc::from(name), text, line_starts: line_starts.into_boxed_slice() })
    }

    /// The whole text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The origin at byte `offset` (clamped to the text).
    pub fn origin(self: &Arc<Self>, offset: usize) -> Origin {
        let offset = u32::try_from(offset.min(self.text.len())).unwrap_or(u32::MAX);
        Origin { file: self.clone(), offset: Some(offset) }
    }

    /// 0-based line index of a byte offset.
    fn line_index(&self, offset: u32) -> usize {
        self.line_starts.partition_point(|&s| s <= offset).saturating_sub(1)
    }

    /// The bytes of line `index` without its line break (and without a leading byte-order mark).
    fn line_range(&self, index: usize) -> std::ops::Range<usize> {
        let start = self.line_starts.get(index).map_or(self.text.len(), |&s| s as usize);
        let end = self.line_starts.get(index + 1).map_or(self.text.len(), |&s| s as usize - 1);
        let end = end.max(start).min(self.text.len());
        let line = &self.text[start..end];
        let line = line.strip_suffix('\r').unwrap_or(line);
        let bom = if line.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
        start + bom..start + line.len()
    }
}

/// A place in a source file: the file and a byte offset into its kept text. Line, column and
/// the line's text are derived when asked for (rendering an error or a trace), not stored.
#[derive(Clone, Debug)]
pub struct Origin {
    file: Arc<SourceFile>,
    /// `None` for something with no position in a file (a built-in definition).
    offset: Option<u32>,
}

impl PartialEq for Origin {
    fn eq(&self, other: &Origin) -> bool {
        self.offset == other.offset && self.file.name == other.file.name
    }
}

impl Eq for Origin {}

impl Origin {
    /// An origin for something that has no position in a file (a built-in definition).
    pub fn builtin(what: &str) -> Origin {
        Origin { file: SourceFile::new(what, Arc::from("")), offset: None }
    }

    /// The file's name.
    pub fn file(&self) -> &str {
        &self.file.name
    }

    /// The byte offset in the file, if this is a place in one.
    pub fn offset(&self) -> Option<usize> {
        self.offset.map(|o| o as usize)
    }

    /// 1-based line; 0 when there is no position.
    pub fn line(&self) -> u32 {
        self.offset.map_or(0, |o| u32::try_from(self.file.line_index(o) + 1).unwrap_or(u32::MAX))
    }

    /// 1-based column in characters; 0 when there is no position.
    pub fn col(&self) -> u32 {
        let Some(o) = self.offset else { return 0 };
        let range = self.file.line_range(self.file.line_index(o));
        let upto = (o as usize).clamp(range.start, self.file.text.len());
        let before = self.file.text.get(range.start..upto).map_or(0, |s| s.chars().count());
        u32::try_from(before + 1).unwrap_or(u32::MAX)
    }

    /// The whole source line, for rendering; empty when there is no position.
    pub fn line_text(&self) -> &str {
        match self.offset {
            Some(o) => &self.file.text[self.file.line_range(self.file.line_index(o))],
            None => "",
        }
    }

    /// The same file, `bytes` bytes further on.
    pub fn shifted(&self, bytes: usize) -> Origin {
        let offset = self.offset.map(|o| {
            let to = (o as usize).saturating_add(bytes).min(self.file.text.len());
            u32::try_from(to).unwrap_or(u32::MAX)
        });
        Origin { file: self.file.clone(), offset }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.offset.is_none() {
            return f.write_str(self.file());
        }
        write!(f, "{}:{}:{}", self.file(), self.line(), self.col())
    }
}

/// Text from a source file with where it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text {
    pub text: Arc<str>,
    pub at: Origin,
}

impl Text {
    pub fn new(text: &str, at: Origin) -> Text {
        Text { text: Arc::from(text), at }
    }

    /// The part of this text from byte `start` to byte `end`, with its origin.
    pub fn slice(&self, start: usize, end: usize) -> Text {
        Text { text: Arc::from(&self.text[start..end]), at: self.at.shifted(start) }
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A problem found while loading a ruleset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// A stable code, e.g. [`DiagCode::UnknownScope`] (`data.unknown_scope`).
    pub code: DiagCode,
    pub message: String,
    /// Where; `None` for problems with no place (a missing root file is reported at its path).
    pub at: Option<Origin>,
    /// The offending text, underlined when rendered.
    pub text: String,
    /// An extra hint.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A problem with `text` at its origin.
    pub fn at(code: DiagCode, text: &Text, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            message: message.into(),
            at: Some(text.at.clone()),
            text: text.text.to_string(),
            help: None,
        }
    }

    /// A problem with no position in a file.
    pub fn nowhere(code: DiagCode, message: impl Into<String>) -> Diagnostic {
        Diagnostic { code, message: message.into(), at: None, text: String::new(), help: None }
    }

    /// Adds a hint.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Adds "did you mean `X`?" when one of `candidates` is near `name` (see
    /// [`formula::suggest`]).
    pub fn suggest<'a>(self, name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Diagnostic {
        match formula::suggest::did_you_mean(name, candidates) {
            Some(h) => self.with_help(h),
            None => self,
        }
    }
}

impl fmt::Display for Diagnostic {
    /// One line: `file:line:col: message [code]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.at {
            Some(at) => write!(f, "{at}: {} [{}]", self.message, self.code),
            None => write!(f, "{} [{}]", self.message, self.code),
        }
    }
}

/// The stable diagnostic codes.
/// The stable codes of ruleset diagnostics, documented in `docs/ruleset-format.md`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DiagCode {
    /// A file cannot be read (missing, unreadable).
    File,
    /// A line or value does not have the shape its token requires.
    Syntax,
    /// A scope name is not defined.
    UnknownScope,
    /// A scope is defined twice with different parents, or its parent is unknown.
    BadScope,
    /// A format name is not defined.
    UnknownFormat,
    /// A format is defined twice, or a default or literal does not fit its format.
    BadFormat,
    /// A variable declaration conflicts with another.
    VariableConflict,
    /// A function definition is invalid.
    BadFunction,
    /// A modifier's variable is not visible from the object's scope.
    UnknownVariable,
    /// A modifier type does not exist or does not fit the variable's format.
    BadModifierType,
    /// A PRIORITY is not a whole number from 0 up.
    BadPriority,
    /// A formula does not parse or check; the message carries the formula error.
    Formula,
    /// A modifier's literal value does not fit the variable's format.
    BadValue,
    /// An object kind is not defined.
    UnknownKind,
    /// An object referred to (by `.MOD`, `.COPY=`, `GRANT`) does not exist.
    UnknownObject,
    /// An object key is defined twice in one kind.
    DuplicateObject,
    /// A campaign file refers to a file that does not exist.
    MissingFile,
    /// A `PART:n` is not a whole number from 1 up, or the kind has no parts.
    BadPart,
    /// An `order` that is not `inherent` or `applied`.
    BadOrder,
    /// A stock's `bounds` that is not `clamp` or `reject`.
    BadBounds,
    /// An aggregate (`count(SCOPE, WHERE)`, …) with the wrong arguments, over the global scope,
    /// or whose `EXPR` or `WHERE` does not compile in its scope.
    BadAggregate,
    /// A reference to another instance's variable (`@id.Var`) naming a variable no scope
    /// declares, or one declared with different formats.
    BadReference,
    /// *(warning)* A STRING (or data-format) literal that reads as a formula: it is taken as
    /// the text it is; a formula is written `=…`.
    LiteralLikeFormula,
    /// A declared variable name outside PCGen's rule: a letter, then letters, digits and `_`.
    BadName,
    /// A `FACT:` no `FACTDEF` declares for its object's kind.
    UnknownFact,
    /// A code of a layer above this crate that reports through its diagnostics (the events
    /// layer's `events.unknown_event`): documented by that layer.
    Layer(&'static str),
}

impl DiagCode {
    /// The code as written in outputs: `data.unknown_scope`.
    pub fn as_str(self) -> &'static str {
        match self {
            DiagCode::File => "data.file",
            DiagCode::Syntax => "data.syntax",
            DiagCode::UnknownScope => "data.unknown_scope",
            DiagCode::BadScope => "data.bad_scope",
            DiagCode::UnknownFormat => "data.unknown_format",
            DiagCode::BadFormat => "data.bad_format",
            DiagCode::VariableConflict => "data.variable_conflict",
            DiagCode::BadFunction => "data.bad_function",
            DiagCode::UnknownVariable => "data.unknown_variable",
            DiagCode::BadModifierType => "data.bad_modifier_type",
            DiagCode::BadPriority => "data.bad_priority",
            DiagCode::Formula => "data.formula",
            DiagCode::BadValue => "data.bad_value",
            DiagCode::UnknownKind => "data.unknown_kind",
            DiagCode::UnknownObject => "data.unknown_object",
            DiagCode::DuplicateObject => "data.duplicate_object",
            DiagCode::MissingFile => "data.missing_file",
            DiagCode::BadPart => "data.bad_part",
            DiagCode::BadOrder => "data.bad_order",
            DiagCode::BadBounds => "data.bad_bounds",
            DiagCode::BadAggregate => "data.bad_aggregate",
            DiagCode::BadReference => "data.bad_reference",
            DiagCode::LiteralLikeFormula => "data.literal_like_formula",
            DiagCode::BadName => "data.bad_name",
            DiagCode::UnknownFact => "data.unknown_fact",
            DiagCode::Layer(code) => code,
        }
    }
}

impl fmt::Display for DiagCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for DiagCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The codes as constants.
pub mod codes {
    use super::DiagCode;
    pub const FILE: DiagCode = DiagCode::File;
    pub const SYNTAX: DiagCode = DiagCode::Syntax;
    pub const UNKNOWN_SCOPE: DiagCode = DiagCode::UnknownScope;
    pub const BAD_SCOPE: DiagCode = DiagCode::BadScope;
    pub const UNKNOWN_FORMAT: DiagCode = DiagCode::UnknownFormat;
    pub const BAD_FORMAT: DiagCode = DiagCode::BadFormat;
    pub const VARIABLE_CONFLICT: DiagCode = DiagCode::VariableConflict;
    pub const BAD_FUNCTION: DiagCode = DiagCode::BadFunction;
    pub const UNKNOWN_VARIABLE: DiagCode = DiagCode::UnknownVariable;
    pub const BAD_MODIFIER_TYPE: DiagCode = DiagCode::BadModifierType;
    pub const BAD_PRIORITY: DiagCode = DiagCode::BadPriority;
    pub const FORMULA: DiagCode = DiagCode::Formula;
    pub const BAD_VALUE: DiagCode = DiagCode::BadValue;
    pub const UNKNOWN_KIND: DiagCode = DiagCode::UnknownKind;
    pub const UNKNOWN_OBJECT: DiagCode = DiagCode::UnknownObject;
    pub const DUPLICATE_OBJECT: DiagCode = DiagCode::DuplicateObject;
    pub const MISSING_FILE: DiagCode = DiagCode::MissingFile;
    pub const BAD_PART: DiagCode = DiagCode::BadPart;
    pub const BAD_ORDER: DiagCode = DiagCode::BadOrder;
    pub const BAD_BOUNDS: DiagCode = DiagCode::BadBounds;
    pub const BAD_AGGREGATE: DiagCode = DiagCode::BadAggregate;
    pub const BAD_REFERENCE: DiagCode = DiagCode::BadReference;
    pub const LITERAL_LIKE_FORMULA: DiagCode = DiagCode::LiteralLikeFormula;
    pub const BAD_NAME: DiagCode = DiagCode::BadName;
    pub const UNKNOWN_FACT: DiagCode = DiagCode::UnknownFact;
}
