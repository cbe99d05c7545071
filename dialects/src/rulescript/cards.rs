//! RuleScript card databases: JSON, a card or a list of them, `{"name", "type", "bp",
//! "subtypes", "rules"}`, the rules written as one string or as a list of lines (a list keeps every
//! position exact: a string's `\n` escapes make its offsets differ from the file's); or a
//! `.rulescript` file, one card: its rules as they are, and comment lines `#! type =
//! character`, `#! bp = 300`, `#! subtypes = warrior, pilot`, `#! name = …` (default: the
//! file's name) for what is not rules.

use super::syntax::{self, Rules};
use crate::Error;
use crate::creature::json::{self, Str, fields, list, missing, object, string, wrong};
use jsonc_parser::ast::Value;
use std::ops::Range;

/// A card of the database.
#[derive(Debug)]
pub struct Card {
    pub name: Str,
    /// `character`, `action` or `reaction`.
    pub kind: String,
    /// The printed BP (characters).
    pub bp: Option<String>,
    /// Its subtypes (`warrior`, `pilot`), lower case: what a filter's `character&warrior`
    /// names.
    pub subtypes: Vec<String>,
    pub rules: Rules,
    /// Where each line of the rules text starts in the text, and the string it came from.
    lines: Vec<(usize, Str)>,
}

impl Card {
    /// The span in the file of `span` in the card's rules text.
    pub fn file_span(&self, span: Range<usize>) -> Range<usize> {
        let i = self.lines.partition_point(|(start, _)| *start <= span.start).saturating_sub(1);
        match self.lines.get(i) {
            Some((start, s)) => {
                let len = s.text.len();
                s.inner((span.start - start).min(len)..(span.end.saturating_sub(*start)).min(len))
            }
            None => 0..0,
        }
    }
}

/// The error codes of this module.
pub mod codes {
    /// A card type that is not `character`, `action` or `reaction`.
    pub const TYPE: &str = "rulescript.card_type";
    /// A subtype that is not a word of letters, digits and `_`.
    pub const SUBTYPE: &str = "rulescript.subtype";
}

/// A subtype as a filter names it: a word of letters, digits and `_` (lower case), that is not
/// a card type or a filter keyword.
fn subtype(t: &str) -> Result<String, String> {
    let lower = t.trim().to_ascii_lowercase();
    let word = !lower.is_empty() && lower.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !word || super::write::RESERVED.contains(&lower.as_str()) {
        return Err(format!(
            "`{t}` is no subtype: a word of letters, digits and `_` that is not a card type or a filter keyword"
        ));
    }
    Ok(lower)
}

/// Reads a card database file.
pub fn file(text: &str) -> Result<Vec<Card>, Error> {
    let root = json::parse(text)?;
    match &root {
        Value::Object(_) => Ok(vec![card(text, &root)?]),
        Value::Array(a) => a.elements.iter().map(|c| card(text, c)).collect(),
        v => Err(wrong(v, "a card database", "a card or a list of cards")),
    }
}

fn card(text: &str, v: &Value<'_>) -> Result<Card, Error> {
    let o = object(v, "a card")?;
    let [name, kind, bp, subtypes, rules] = fields(o, "a card", ["name", "type", "bp", "subtypes", "rules"])?;
    let name = json::name(text, name.ok_or_else(|| missing(o, "a card", "name"))?, "a card's `name`")?;
    let kind_v = kind.ok_or_else(|| missing(o, "a card", "type"))?;
    let kind = string(text, kind_v, "a card's `type`")?;
    let lower = kind.text.to_ascii_lowercase();
    if !["character", "action", "reaction"].contains(&lower.as_str()) {
        return Err(Error {
            code: codes::TYPE,
            message: format!("`{}` is no card type (character, action, reaction)", kind.text),
            span: kind.span,
        });
    }
    let bp = bp.map(|b| json::number(b, "a card's `bp`")).transpose()?;
    let mut types = Vec::new();
    if let Some(st) = subtypes {
        for t in list(st, "`subtypes`")? {
            let s = string(text, t, "a subtype")?;
            types.push(subtype(&s.text).map_err(|message| Error {
                code: codes::SUBTYPE,
                message,
                span: s.span,
            })?);
        }
    }
    let mut lines = Vec::new();
    let mut joined = String::new();
    match rules {
        None => {}
        Some(Value::Array(_)) => {
            for l in list(rules.unwrap_or(kind_v), "`rules`")? {
                let s = string(text, l, "a line of `rules`")?;
                lines.push((joined.len(), s.clone()));
                joined.push_str(&s.text);
                joined.push('\n');
            }
        }
        Some(r) => {
            let s = string(text, r, "`rules`")?;
            // Each line of the string, with its own place in the file when written as is.
            let mut at = 0;
            for line in s.text.split_inclusive('\n') {
                let inner = Str {
                    text: line.to_owned(),
                    span: s.span.clone(),
                    raw_start: s.raw_start.map(|r| r + at),
                };
                lines.push((at, inner));
                at += line.len();
            }
            joined = s.text.clone();
        }
    }
    let mut out =
        Card { name, kind: lower, bp, subtypes: types, rules: Rules { properties: Vec::new() }, lines };
    out.rules = syntax::parse(&joined).map_err(|e| Error { span: out.file_span(e.span.clone()), ..e })?;
    Ok(out)
}

/// Reads a `.rulescript` file: one card named `stem` unless a `#! name =` line says otherwise.
pub fn rulescript_file(text: &str, stem: &str) -> Result<Card, Error> {
    let mut name = stem.to_owned();
    let mut kind = "character".to_owned();
    let mut bp = None;
    let mut subtypes = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let Some(meta) = line.trim_start().strip_prefix("#!") else { continue };
        let span = start..start + line.trim_end().len();
        let Some((k, v)) = meta.split_once('=') else {
            return Err(Error {
                code: syntax::codes::SYNTAX,
                message: "a `#!` line is `#! key = value` (name, type, bp, subtypes)".into(),
                span,
            });
        };
        let v = v.trim().trim_matches(['"', '\'']).to_owned();
        match k.trim().to_ascii_lowercase().as_str() {
            "name" => name = v,
            "type" => kind = v.to_ascii_lowercase(),
            "bp" => {
                formula::parse_decimal(&v).map_err(|e| Error {
                    code: syntax::codes::SYNTAX,
                    message: format!("`#! bp`: `{v}` is not a number: {e}"),
                    span: span.clone(),
                })?;
                bp = Some(v);
            }
            "subtypes" => {
                for t in v.split(',') {
                    let t = subtype(t).map_err(|message| Error {
                        code: codes::SUBTYPE,
                        message,
                        span: span.clone(),
                    })?;
                    subtypes.push(t);
                }
            }
            other => {
                return Err(Error {
                    code: syntax::codes::SYNTAX,
                    message: format!("`#! {other}` is not name, type, bp or subtypes"),
                    span,
                });
            }
        }
    }
    if !["character", "action", "reaction"].contains(&kind.as_str()) {
        return Err(Error {
            code: codes::TYPE,
            message: format!("`{kind}` is no card type (character, action, reaction)"),
            span: 0..text.find('\n').unwrap_or(text.len()),
        });
    }
    if name.trim().is_empty() || name.starts_with('$') || name.chars().any(char::is_control) {
        return Err(Error {
            code: json::codes::SHAPE,
            message: format!("`{}` is not a card's name", name.escape_debug()),
            span: 0..0,
        });
    }
    // The whole text is the rules, each offset the file's own.
    let whole = Str { text: text.to_owned(), span: 0..text.len(), raw_start: Some(0) };
    let rules = syntax::parse(text)?;
    Ok(Card {
        name: Str { text: name, span: 0..0, raw_start: None },
        kind,
        bp,
        subtypes,
        rules,
        lines: vec![(0, whole)],
    })
}
