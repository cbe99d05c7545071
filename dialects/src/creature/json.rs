//! Reading the creature dialect's JSON with positions: a thin layer over `jsonc-parser`'s syntax
//! tree, so that every error points at the value at fault, and a postfix formula's error at the
//! token inside its string.
//!
//! JSON as the seed writes it, plus `//` and `/* */` comments and trailing commas, which data
//! authors expect; nothing else of JSON5.

use crate::Error;
use jsonc_parser::ast::{Object, Value};
use jsonc_parser::common::Ranged;
use std::ops::Range;

/// The error codes of this module.
pub mod codes {
    /// The text is not JSON.
    pub const JSON: &str = "creature.json";
    /// A value of the wrong type, or a key that is missing or unknown.
    pub const SHAPE: &str = "creature.shape";
}

/// The deepest lists and objects may nest (the parser recurses on each).
pub const MAX_DEPTH: usize = 128;

/// Parses `text` into its syntax tree.
pub fn parse(text: &str) -> Result<Value<'_>, Error> {
    check_depth(text)?;
    let options = jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_loose_object_property_names: false,
        allow_trailing_commas: true,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let collect = jsonc_parser::CollectOptions::default();
    match jsonc_parser::parse_to_ast(text, &collect, &options) {
        Ok(r) => r.value.ok_or_else(|| Error {
            code: codes::JSON,
            message: "the file has no JSON value".to_owned(),
            span: 0..text.len().min(1),
        }),
        Err(e) => {
            let r = e.range();
            Err(Error { code: codes::JSON, message: format!("not JSON: {}", e.kind()), span: r.start..r.end })
        }
    }
}

/// A value's byte span.
pub fn span(v: &Value<'_>) -> Range<usize> {
    let r = v.range();
    r.start..r.end
}

/// What a value is, in words, for errors.
pub fn kind(v: &Value<'_>) -> &'static str {
    match v {
        Value::StringLit(_) => "a string",
        Value::NumberLit(_) => "a number",
        Value::BooleanLit(_) => "a boolean",
        Value::Object(_) => "an object",
        Value::Array(_) => "a list",
        Value::NullKeyword(_) => "null",
    }
}

/// An error at `v`: `what` should have been `expected`.
pub fn wrong(v: &Value<'_>, what: &str, expected: &str) -> Error {
    Error {
        code: codes::SHAPE,
        message: format!("{what} is {}, expected {expected}", kind(v)),
        span: span(v),
    }
}

/// A string's text and where its contents start in the file, when they are written without
/// escapes (so that a byte offset in the text is one in the file too).
#[derive(Clone, Debug)]
pub struct Str {
    pub text: String,
    /// The literal's span, quotes included.
    pub span: Range<usize>,
    /// Where the text starts in the file, if it is written as is.
    pub raw_start: Option<usize>,
}

impl Str {
    /// The span in the file of bytes `inner` of the text: exact when the string has no escapes,
    /// else the whole literal.
    pub fn inner(&self, inner: Range<usize>) -> Range<usize> {
        match self.raw_start {
            Some(s) => s + inner.start..s + inner.end,
            None => self.span.clone(),
        }
    }
}

/// `v` as a string.
pub fn string(file: &str, v: &Value<'_>, what: &str) -> Result<Str, Error> {
    let Value::StringLit(s) = v else { return Err(wrong(v, what, "a string")) };
    let span = s.range.start..s.range.end;
    let raw = file.get(span.start + 1..span.end.saturating_sub(1));
    let raw_start = (raw == Some(&*s.value)).then_some(span.start + 1);
    Ok(Str { text: s.value.to_string(), span, raw_start })
}

/// `v` as an object.
pub fn object<'a, 'b>(v: &'b Value<'a>, what: &str) -> Result<&'b Object<'a>, Error> {
    match v {
        Value::Object(o) => Ok(o),
        _ => Err(wrong(v, what, "an object")),
    }
}

/// `v` as a list.
pub fn list<'a, 'b>(v: &'b Value<'a>, what: &str) -> Result<&'b [Value<'a>], Error> {
    match v {
        Value::Array(a) => Ok(&a.elements),
        _ => Err(wrong(v, what, "a list")),
    }
}

/// Checks that an object has only the keys `known`, and returns the value of each key asked
/// for in order (`None` where absent).
pub fn fields<'a, 'b, const N: usize>(
    o: &'b Object<'a>,
    what: &str,
    known: [&str; N],
) -> Result<[Option<&'b Value<'a>>; N], Error> {
    let mut out = [None; N];
    for p in &o.properties {
        let name = p.name.as_str();
        let Some(i) = known.iter().position(|k| *k == name) else {
            let r = p.name.range();
            return Err(Error {
                code: codes::SHAPE,
                message: format!("unknown key `{name}` in {what} (expected {})", known.join(", ")),
                span: r.start..r.end,
            });
        };
        out[i] = Some(&p.value);
    }
    Ok(out)
}

/// An object's span when a required key is missing.
pub fn missing(o: &Object<'_>, what: &str, key: &str) -> Error {
    Error {
        code: codes::SHAPE,
        message: format!("{what} has no `{key}`"),
        span: o.range.start..(o.range.start + 1).min(o.range.end),
    }
}

/// A number's text, checked to be a decimal sheetd reads exactly.
pub fn number(v: &Value<'_>, what: &str) -> Result<String, Error> {
    let Value::NumberLit(n) = v else { return Err(wrong(v, what, "a number")) };
    formula::parse_decimal(n.value).map_err(|e| Error {
        code: codes::SHAPE,
        message: format!("{what} `{}` is not a number sheetd reads exactly: {e}", n.value),
        span: span(v),
    })?;
    Ok(n.value.to_owned())
}

/// `v` as a name (of a creature, a feature, a card): text that is not empty, does not start
/// with `$` (which the events layer reads as a name of its own) and has no control character.
pub fn name(file: &str, v: &Value<'_>, what: &str) -> Result<Str, Error> {
    let s = string(file, v, what)?;
    if s.text.trim().is_empty() || s.text.starts_with('$') || s.text.chars().any(char::is_control) {
        return Err(Error {
            code: codes::SHAPE,
            message: format!(
                "{what} `{}` is not a name: not empty, not starting with `$`, no control characters",
                s.text.escape_debug()
            ),
            span: s.span,
        });
    }
    Ok(s)
}

/// Refuses text whose lists and objects nest deeper than [`MAX_DEPTH`], before the parser
/// recurses into them (counted outside strings and comments, in one pass).
fn check_depth(text: &str) -> Result<(), Error> {
    let b = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(Error {
                        code: codes::JSON,
                        message: format!("lists and objects nest deeper than {MAX_DEPTH}"),
                        span: i..i + 1,
                    });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}
