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

/// A place in a source file: 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    /// The file, as given to the loader (or relative to the ruleset's root).
    pub file: Arc<str>,
    pub line: u32,
    pub col: u32,
    /// The whole source line, for rendering; shared by every origin on the line.
    pub line_text: Arc<str>,
}

impl Origin {
    /// An origin for something that has no position in a file (a built-in definition).
    pub fn builtin(what: &str) -> Origin {
        Origin { file: Arc::from(what), line: 0, col: 0, line_text: Arc::from("") }
    }

    /// The same line, `chars` characters further right.
    pub fn shifted(&self, chars: usize) -> Origin {
        Origin { col: self.col + chars as u32, ..self.clone() }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return f.write_str(&self.file);
        }
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
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
        let chars = self.text[..start].chars().count();
        Text { text: Arc::from(&self.text[start..end]), at: self.at.shifted(chars) }
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
    /// A stable code, e.g. `data.unknown_scope` (see [`codes`]).
    pub code: &'static str,
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
    pub fn at(code: &'static str, text: &Text, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            message: message.into(),
            at: Some(text.at.clone()),
            text: text.text.to_string(),
            help: None,
        }
    }

    /// A problem with no position in a file.
    pub fn nowhere(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic { code, message: message.into(), at: None, text: String::new(), help: None }
    }

    /// Adds a hint.
    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Renders like rustc: the message, the place, the source line with the text underlined.
    pub fn render(&self) -> String {
        let mut out = format!("error[{}]: {}\n", self.code, self.message);
        if let Some(at) = &self.at {
            out.push_str(&format!("  --> {at}\n"));
            if at.line > 0 && !at.line_text.is_empty() {
                let num = at.line.to_string();
                let pad = " ".repeat(num.len());
                let width = self.text.chars().count().max(1);
                let indent: String = at
                    .line_text
                    .chars()
                    .take(at.col.saturating_sub(1) as usize)
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                out.push_str(&format!(" {pad} |\n"));
                out.push_str(&format!(" {num} | {}\n", at.line_text));
                out.push_str(&format!(" {pad} | {indent}{}\n", "^".repeat(width)));
            }
        }
        if let Some(h) = &self.help {
            out.push_str(&format!("  = help: {h}\n"));
        }
        out
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
pub mod codes {
    /// A file cannot be read (missing, unreadable).
    pub const FILE: &str = "data.file";
    /// A line or value does not have the shape its token requires.
    pub const SYNTAX: &str = "data.syntax";
    /// A scope name is not defined.
    pub const UNKNOWN_SCOPE: &str = "data.unknown_scope";
    /// A scope is defined twice with different parents, or its parent is unknown.
    pub const BAD_SCOPE: &str = "data.bad_scope";
    /// A format name is not defined.
    pub const UNKNOWN_FORMAT: &str = "data.unknown_format";
    /// A format is defined twice, or a default or literal does not fit its format.
    pub const BAD_FORMAT: &str = "data.bad_format";
    /// A variable declaration conflicts with another.
    pub const VARIABLE_CONFLICT: &str = "data.variable_conflict";
    /// A function definition is invalid.
    pub const BAD_FUNCTION: &str = "data.bad_function";
    /// A modifier's variable is not visible from the object's scope.
    pub const UNKNOWN_VARIABLE: &str = "data.unknown_variable";
    /// A modifier type does not exist or does not fit the variable's format.
    pub const BAD_MODIFIER_TYPE: &str = "data.bad_modifier_type";
    /// A PRIORITY is not a whole number from 0 up.
    pub const BAD_PRIORITY: &str = "data.bad_priority";
    /// A formula does not parse or check; the message carries the formula error.
    pub const FORMULA: &str = "data.formula";
    /// A modifier's literal value does not fit the variable's format.
    pub const BAD_VALUE: &str = "data.bad_value";
    /// An object kind is not defined.
    pub const UNKNOWN_KIND: &str = "data.unknown_kind";
    /// An object referred to (by `.MOD`, `.COPY=`, `GRANT`) does not exist.
    pub const UNKNOWN_OBJECT: &str = "data.unknown_object";
    /// An object key is defined twice in one kind.
    pub const DUPLICATE_OBJECT: &str = "data.duplicate_object";
    /// A campaign file refers to a file that does not exist.
    pub const MISSING_FILE: &str = "data.missing_file";
    /// A `PART:n` is not a whole number from 1 up, or the kind has no parts.
    pub const BAD_PART: &str = "data.bad_part";
}
