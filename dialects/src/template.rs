//! The creature features' TEXT templates (`../shared/seeds/creature-features.txt`, *TEXT*):
//! explanatory text with embedded variables in the form `{VARNAME}` — the creature's `{NAME}`
//! and the feature's runtime variables `{V0}`, `{V1}`, …
//!
//! "The {NAME}'s weapon attacks are magical." applied to a deva reads "The deva's weapon attacks
//! are magical."
//!
//! A template is parsed once, at load ([`parse`]): text and variables, each variable with its
//! byte span, so that a loader checks every name against what a feature provides and points at
//! the one it lacks. Rendering ([`Template::render`]) fills the variables in.

use std::ops::Range;

/// A parsed template: literal text and variables, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    /// A variable's name and its span in the template, braces included.
    Var(String, Range<usize>),
}

/// Why a template does not parse or render: its span is in the template.
pub type TextError = crate::Error;

/// The error codes.
pub mod codes {
    /// A `{` without its `}`, a `}` without its `{`, or `{}`.
    pub const BRACES: &str = "text.braces";
    /// A name in braces that is not a name (`{V 0}`, `{{x}}`).
    pub const BAD_NAME: &str = "text.bad_name";
    /// A variable the feature does not provide.
    pub const UNKNOWN_VARIABLE: &str = "text.unknown_variable";
}

/// Parses template `text`.
pub fn parse(text: &str) -> Result<Template, TextError> {
    let err = |code, message: String, span| TextError { code, message, span };
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    let mut at = 0;
    while let Some(i) = rest.find(['{', '}']) {
        literal.push_str(&rest[..i]);
        let start = at + i;
        if rest.as_bytes()[i] == b'}' {
            return Err(err(codes::BRACES, "a `}` without its `{`".to_owned(), start..start + 1));
        }
        let after = &rest[i + 1..];
        let Some(close) = after.find('}') else {
            return Err(err(codes::BRACES, "a `{` without its `}`".to_owned(), start..text.len()));
        };
        let name = &after[..close];
        let span = start..start + close + 2;
        if name.is_empty() {
            return Err(err(codes::BRACES, "`{}` names no variable".to_owned(), span));
        }
        let is_name = name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !is_name {
            return Err(err(
                codes::BAD_NAME,
                format!("`{{{name}}}` is not a variable: write {{NAME}}, {{V0}}, …"),
                span,
            ));
        }
        if !literal.is_empty() {
            parts.push(Part::Text(std::mem::take(&mut literal)));
        }
        parts.push(Part::Var(name.to_owned(), span));
        let consumed = i + close + 2;
        rest = &rest[consumed..];
        at += consumed;
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        parts.push(Part::Text(literal));
    }
    Ok(Template { parts })
}

impl Template {
    /// The variables the template reads, each with its span, in order.
    pub fn variables(&self) -> impl Iterator<Item = (&str, Range<usize>)> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(n, span) => Some((n.as_str(), span.clone())),
            Part::Text(_) => None,
        })
    }

    /// The text with every variable filled in by `value` (`None`: the feature does not provide
    /// it, an error at that variable).
    pub fn render(&self, value: &mut dyn FnMut(&str) -> Option<String>) -> Result<String, TextError> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Var(name, span) => match value(name) {
                    Some(v) => out.push_str(&v),
                    None => {
                        return Err(TextError {
                            code: codes::UNKNOWN_VARIABLE,
                            message: format!("`{{{name}}}`: the feature has no variable `{name}`"),
                            span: span.clone(),
                        });
                    }
                },
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A feature's variables: the creature's name and its runtime variables, as the seed gives
    /// them to a feature ("NAME", "V0, V1, … VN").
    fn feature<'a>(name: &'a str, vars: &'a [i64]) -> impl FnMut(&str) -> Option<String> + 'a {
        move |v: &str| {
            if v == "NAME" {
                return Some(name.to_owned());
            }
            let i: usize = v.strip_prefix('V')?.parse().ok()?;
            vars.get(i).map(i64::to_string)
        }
    }

    /// The seed's example (*TEXT*): the deva, with runtime variables (4, 8).
    #[test]
    fn the_devas_text_renders_as_the_seed_shows() {
        let text = "The {NAME}'s weapon attacks are magical. When the {NAME} hits with any weapon, the weapon deals an extra {V0}d{V1} radiant damage.";
        let t = parse(text).unwrap();
        let names: Vec<&str> = t.variables().map(|(n, _)| n).collect();
        assert_eq!(names, ["NAME", "NAME", "V0", "V1"]);
        assert_eq!(
            t.render(&mut feature("deva", &[4, 8])).unwrap(),
            "The deva's weapon attacks are magical. When the deva hits with any weapon, the weapon deals an extra 4d8 radiant damage."
        );
        // No variables, and variables at either end.
        assert_eq!(parse("plain").unwrap().render(&mut feature("x", &[])).unwrap(), "plain");
        assert_eq!(parse("{V0}+{V1}").unwrap().render(&mut feature("x", &[1, 2])).unwrap(), "1+2");
        assert_eq!(parse("").unwrap().render(&mut feature("x", &[])).unwrap(), "");
    }

    /// Each error: its code, and what it points at.
    #[test]
    fn errors_point_at_their_text() {
        for (text, code, at) in [
            ("a {NAME b", codes::BRACES, "{NAME b"),
            ("a } b", codes::BRACES, "}"),
            ("a {} b", codes::BRACES, "{}"),
            ("deals {V 0} damage", codes::BAD_NAME, "{V 0}"),
            ("{{x}}", codes::BAD_NAME, "{{x}"),
        ] {
            let e = parse(text).expect_err(text);
            assert_eq!(e.code, code, "{text}: {e}");
            assert_eq!(&text[e.span.clone()], at, "{text}: {e}");
        }
        let text = "an extra {V0}d{V2} damage";
        let e = parse(text).unwrap().render(&mut feature("deva", &[4, 8])).unwrap_err();
        assert_eq!(e.code, codes::UNKNOWN_VARIABLE);
        assert_eq!(&text[e.span.clone()], "{V2}");
        assert_eq!(e.message, "`{V2}`: the feature has no variable `V2`");
    }

    proptest::proptest! {
        /// Any text parses or is an error inside it; text without braces renders as itself.
        #[test]
        fn any_text_parses_or_is_an_error_inside_it(text in "[a-z {}V0-9]{0,24}") {
            match parse(&text) {
                Ok(t) => {
                    if !text.contains(['{', '}']) {
                        proptest::prop_assert_eq!(t.render(&mut |_| None).unwrap(), text.clone());
                    }
                    for (_, span) in t.variables() {
                        let opens = text[span.clone()].starts_with('{');
                        proptest::prop_assert!(opens, "{:?} at {:?}", text, span);
                    }
                }
                Err(e) => proptest::prop_assert!(e.span.start < e.span.end && e.span.end <= text.len(), "{}: {}", text, e),
            }
        }
    }
}
