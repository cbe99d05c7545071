//! The lexer: formula text to tokens.
//!
//! Hand-written rather than generated because PCGen's names need a little backtracking: a name may
//! contain spaces, `.`, `:`, `~`, `_` and one `=`, but may not end in a space, `_`, `.`, `:` or `=`.
//! So `abs (-5.3)` is the name `abs` followed by `(`, `a==b` is `a`, `==`, `b`, and
//! `CL=Special Fighter` is one name.

use crate::error::{ErrorCode, FormulaError};
use crate::span::Span;

/// The kind of a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// A number literal: `12`, `1.5`, `.5`.
    Number,
    /// A string literal: `"text"` (the span includes the quotes).
    Str,
    /// A variable or function name.
    Name,
    LParen,
    RParen,
    LBracket,
    RBracket,
    Comma,
    OrOr,
    AndAnd,
    EqEq,
    NotEq,
    Lt,
    Gt,
    Le,
    Ge,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    Bang,
    /// End of input (an empty span at the end of the text).
    Eof,
}

impl TokenKind {
    /// How the token is described in error messages.
    pub fn describe(self) -> &'static str {
        match self {
            TokenKind::Number => "a number",
            TokenKind::Str => "a string",
            TokenKind::Name => "a name",
            TokenKind::LParen => "`(`",
            TokenKind::RParen => "`)`",
            TokenKind::LBracket => "`[`",
            TokenKind::RBracket => "`]`",
            TokenKind::Comma => "`,`",
            TokenKind::OrOr => "`||`",
            TokenKind::AndAnd => "`&&`",
            TokenKind::EqEq => "`==`",
            TokenKind::NotEq => "`!=`",
            TokenKind::Lt => "`<`",
            TokenKind::Gt => "`>`",
            TokenKind::Le => "`<=`",
            TokenKind::Ge => "`>=`",
            TokenKind::Plus => "`+`",
            TokenKind::Minus => "`-`",
            TokenKind::Star => "`*`",
            TokenKind::Slash => "`/`",
            TokenKind::Percent => "`%`",
            TokenKind::Caret => "`^`",
            TokenKind::Bang => "`!`",
            TokenKind::Eof => "the end of the formula",
        }
    }
}

/// A token: its kind and where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

/// A name starts with a letter, or with `@` (`@goblin.STR`: another instance's variable, which
/// the solver resolves).
fn is_name_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'@'
}

fn is_name_inner(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'~' | b' ' | b'=')
}

fn can_end_name(b: u8) -> bool {
    !matches!(b, b' ' | b'_' | b'.' | b':' | b'=')
}

/// Splits `text` into tokens, ending with one [`TokenKind::Eof`].
///
/// The caller guarantees `text.len() <= u32::MAX` (the parser checks its length limit first).
pub fn tokenize(text: &str) -> Result<Vec<Token>, FormulaError> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::with_capacity(bytes.len() / 2 + 1);
    let mut i = 0usize;
    let span = |a: usize, b: usize| Span::new(a as u32, b as u32);
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let two = |second: u8| bytes.get(i + 1) == Some(&second);
        let (kind, len) = match b {
            b'(' => (TokenKind::LParen, 1),
            b')' => (TokenKind::RParen, 1),
            b'[' => (TokenKind::LBracket, 1),
            b']' => (TokenKind::RBracket, 1),
            b',' => (TokenKind::Comma, 1),
            b'+' => (TokenKind::Plus, 1),
            b'-' => (TokenKind::Minus, 1),
            b'*' => (TokenKind::Star, 1),
            b'/' => (TokenKind::Slash, 1),
            b'%' => (TokenKind::Percent, 1),
            b'^' => (TokenKind::Caret, 1),
            b'|' if two(b'|') => (TokenKind::OrOr, 2),
            b'&' if two(b'&') => (TokenKind::AndAnd, 2),
            b'=' if two(b'=') => (TokenKind::EqEq, 2),
            b'!' if two(b'=') => (TokenKind::NotEq, 2),
            b'!' => (TokenKind::Bang, 1),
            b'<' if two(b'=') => (TokenKind::Le, 2),
            b'<' => (TokenKind::Lt, 1),
            b'>' if two(b'=') => (TokenKind::Ge, 2),
            b'>' => (TokenKind::Gt, 1),
            b'"' => match bytes[i + 1..].iter().position(|&c| c == b'"') {
                Some(close) => (TokenKind::Str, close + 2),
                None => {
                    return Err(FormulaError::new(
                        ErrorCode::UnterminatedString,
                        span(start, bytes.len()),
                        "string literal is missing its closing `\"`",
                    )
                    .with_label("string starts here")
                    .with_help("add a `\"` where the string ends"));
                }
            },
            b'0'..=b'9' | b'.' => (TokenKind::Number, lex_number(bytes, i)?),
            b if is_name_start(b) => (TokenKind::Name, lex_name(bytes, i)),
            _ => return Err(unexpected_char(text, i)),
        };
        tokens.push(Token { kind, span: span(start, start + len) });
        i += len;
    }
    tokens.push(Token { kind: TokenKind::Eof, span: span(bytes.len(), bytes.len()) });
    Ok(tokens)
}

fn unexpected_char(text: &str, i: usize) -> FormulaError {
    // `i` is at a char boundary: every byte consumed before it was ASCII or whole string
    // literals, which end at an ASCII `"`.
    let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
    let span = Span::new(i as u32, (i + ch.len_utf8()) as u32);
    let err = FormulaError::new(
        ErrorCode::UnexpectedChar,
        span,
        format!("unexpected character `{}` in formula", ch.escape_debug()),
    )
    .with_label("not part of any token");
    match ch {
        '=' => err.with_help("use `==` to compare two values"),
        '&' => err.with_help("use `&&` for logical and"),
        '|' => err.with_help("use `||` for logical or"),
        '\'' => err.with_help("string literals use double quotes: \"text\""),
        c if !c.is_ascii() => err.with_help("names and numbers use ASCII letters and digits only"),
        _ => err,
    }
}

/// Returns the length of the number literal at `start`: digits with an optional fraction, or a
/// fraction alone (`.5`). A `.` not followed by a digit is an error.
fn lex_number(bytes: &[u8], start: usize) -> Result<usize, FormulaError> {
    let mut i = start;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    if i < bytes.len() && bytes[i] == b'.' {
        let dot = i;
        i += 1;
        let frac_start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        if i == frac_start {
            return Err(FormulaError::new(
                ErrorCode::BadNumber,
                Span::new(start as u32, (dot + 1) as u32),
                "a number's `.` must be followed by digits",
            )
            .with_help("write `1.0` or `1`, and `.5` or `0.5`"));
        }
    }
    Ok(i - start)
}

/// Returns the length of the name at `start`: letters, digits and `_ . : ~ space` with at most
/// one `=`, trimmed back so that it does not end in a space, `_`, `.`, `:` or `=`.
fn lex_name(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    let mut seen_eq = false;
    while i < bytes.len() && is_name_inner(bytes[i]) {
        if bytes[i] == b'=' {
            if seen_eq || bytes.get(i + 1) == Some(&b'=') {
                break;
            }
            seen_eq = true;
        }
        i += 1;
    }
    while i > start + 1 && !can_end_name(bytes[i - 1]) {
        i -= 1;
    }
    i - start
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(TokenKind, &str)> {
        tokenize(text).unwrap().into_iter().map(|t| (t.kind, &text[t.span.range()])).collect()
    }

    #[test]
    fn names_follow_pcgen_rules() {
        use TokenKind::*;
        assert_eq!(
            kinds("CL=Special Fighter + My Var"),
            vec![(Name, "CL=Special Fighter"), (Plus, "+"), (Name, "My Var"), (Eof, "")]
        );
        assert_eq!(kinds("abs (-5.3)")[0], (Name, "abs"));
        assert_eq!(kinds("a==b"), vec![(Name, "a"), (EqEq, "=="), (Name, "b"), (Eof, "")]);
        assert_eq!(kinds("variable.variable2 ")[0], (Name, "variable.variable2"));
        assert_eq!(kinds("Race_Reach")[0], (Name, "Race_Reach"));
        assert_eq!(kinds("a~b:c")[0], (Name, "a~b:c"));
        // A second `=` ends the name, and a lone `=` is not a token.
        assert_eq!(tokenize("a=b=c").unwrap_err().span, Span::new(3, 4));
    }

    #[test]
    fn numbers() {
        use TokenKind::*;
        assert_eq!(kinds(".5")[0], (Number, ".5"));
        assert_eq!(kinds("12.25")[0], (Number, "12.25"));
        // No exponent notation: `1e3` is a number followed by a name.
        assert_eq!(kinds("1e3"), vec![(Number, "1"), (Name, "e3"), (Eof, "")]);
        assert_eq!(tokenize("1.").unwrap_err().code, ErrorCode::BadNumber);
        assert_eq!(tokenize(".").unwrap_err().code, ErrorCode::BadNumber);
    }

    #[test]
    fn operators_and_errors() {
        use TokenKind::*;
        let ops: Vec<_> = kinds("|| && == != < > <= >= + - * / % ^ !").into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            ops,
            vec![
                OrOr, AndAnd, EqEq, NotEq, Lt, Gt, Le, Ge, Plus, Minus, Star, Slash, Percent, Caret, Bang,
                Eof
            ]
        );
        // By PCGen's rules `a = 3` is one name (one `=`, spaces inside); a lone `=` elsewhere
        // is an error.
        assert_eq!(kinds("a = 3"), vec![(Name, "a = 3"), (Eof, "")]);
        let e = tokenize("2 = 3").unwrap_err();
        assert_eq!((e.code, e.span), (ErrorCode::UnexpectedChar, Span::new(2, 3)));
        assert!(e.help.unwrap().contains("=="));
        let e = tokenize("\"abc").unwrap_err();
        assert_eq!((e.code, e.span), (ErrorCode::UnterminatedString, Span::new(0, 4)));
        let e = tokenize("1 + é").unwrap_err();
        assert_eq!((e.code, e.span), (ErrorCode::UnexpectedChar, Span::new(4, 6)));
        assert_eq!(tokenize("a & b").unwrap_err().code, ErrorCode::UnexpectedChar);
    }
}
