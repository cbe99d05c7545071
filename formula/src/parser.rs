//! The parser: tokens to a syntax tree, following PCGen's grammar.
//!
//! ```text
//! logic   := equal (("||" | "&&") equal)*        one level, left-assoc; mixing needs parentheses
//! equal   := compare (("==" | "!=") compare)*
//! compare := sum (("<" | ">" | "<=" | ">=") sum)*
//! sum     := product (("+" | "-") product)*
//! product := negate (("*" | "/" | "%") negate)*
//! negate  := "-" not | not                       at most one unary minus
//! not     := "!" power | power                   at most one `!`
//! power   := atom ("^" atom)?                    a chain `a^b^c` needs parentheses
//! atom    := NUMBER | STRING | NAME | NAME "(" [logic ("," logic)*] ")" | NAME "[" logic "]"
//!          | "(" logic ")"
//! ```
//!
//! Two shapes are rejected with [`ErrorCode::AmbiguousPrecedence`] because PCGen's reading
//! differs from the usual convention: `a||b&&c` (PCGen: `(a||b)&&c`) and `2^3^2` (PCGen:
//! `(2^3)^2`). With parentheses both parse, and mean what they say.

use crate::ast::{BinaryOp, Expr, ExprKind, UnaryOp};
use crate::error::{ErrorCode, FormulaError};
use crate::lexer::{Token, TokenKind, tokenize};
use crate::span::Span;
use rust_decimal::Decimal;
use std::sync::Arc;

/// Size limits that keep parsing, checking and evaluation bounded for any input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Maximum formula length in bytes.
    pub max_len: usize,
    /// Maximum nesting depth of the syntax tree: each parenthesis, call, index, unary operator
    /// and each link of an operator chain (`1+1+1`) adds one level. The default, 64, is the
    /// nesting limit spreadsheet users know, and keeps every recursive pass within a 2 MiB stack
    /// even in unoptimized builds.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_len: 16 * 1024, max_depth: 64 }
    }
}

#[cold]
#[inline(never)]
fn too_deep(span: Span, max_depth: usize) -> FormulaError {
    FormulaError::new(
        ErrorCode::TooComplex,
        span,
        format!("formula is nested more than {max_depth} levels deep"),
    )
    .with_help("split the formula, or use a user-defined function or a variable")
}

fn binary_op(kind: TokenKind) -> Option<BinaryOp> {
    Some(match kind {
        TokenKind::OrOr => BinaryOp::Or,
        TokenKind::AndAnd => BinaryOp::And,
        TokenKind::EqEq => BinaryOp::Eq,
        TokenKind::NotEq => BinaryOp::Ne,
        TokenKind::Lt => BinaryOp::Lt,
        TokenKind::Gt => BinaryOp::Gt,
        TokenKind::Le => BinaryOp::Le,
        TokenKind::Ge => BinaryOp::Ge,
        TokenKind::Plus => BinaryOp::Add,
        TokenKind::Minus => BinaryOp::Sub,
        TokenKind::Star => BinaryOp::Mul,
        TokenKind::Slash => BinaryOp::Div,
        TokenKind::Percent => BinaryOp::Rem,
        _ => return None,
    })
}

#[cold]
#[inline(never)]
fn ambiguous_logic(first: BinaryOp, first_span: Span, op: BinaryOp, span: Span) -> FormulaError {
    FormulaError::new(
        ErrorCode::AmbiguousPrecedence,
        first_span.to(span),
        format!("`{}` and `{}` without parentheses are ambiguous", first.symbol(), op.symbol()),
    )
    .with_label("add parentheses around one side")
    .with_help(
        "PCGen gives `&&` and `||` the same precedence and reads `a || b && c` as \
         `(a || b) && c`; most languages read it as `a || (b && c)`. Write the parentheses you mean.",
    )
}

/// Parses `text` into a syntax tree.
pub fn parse(text: &str, limits: &Limits) -> Result<Expr, FormulaError> {
    if text.len() > limits.max_len || text.len() > u32::MAX as usize {
        return Err(FormulaError::new(
            ErrorCode::TooComplex,
            Span::new(0, 0),
            format!("formula is {} bytes long; the limit is {} bytes", text.len(), limits.max_len),
        ));
    }
    let tokens = tokenize(text)?;
    let mut p = Parser { text, tokens, pos: 0, depth: 0, max_depth: limits.max_depth };
    let expr = p.logic()?;
    let t = p.peek();
    if t.kind != TokenKind::Eof {
        let mut err = p.unexpected(t, "an operator or the end of the formula");
        if t.kind == TokenKind::Comma {
            err = err.with_help("a formula is one expression; `,` separates function arguments");
        } else if t.kind == TokenKind::RParen {
            err = err.with_label("no `(` matches this").with_help("remove the extra `)`");
        }
        return Err(err);
    }
    Ok(expr)
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
    max_depth: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Token {
        // The token list always ends with Eof and `pos` never moves past it.
        self.tokens[self.pos]
    }

    fn bump(&mut self) -> Token {
        let t = self.tokens[self.pos];
        if t.kind != TokenKind::Eof {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, kind: TokenKind) -> Option<Token> {
        if self.peek().kind == kind { Some(self.bump()) } else { None }
    }

    fn slice(&self, span: Span) -> &'a str {
        &self.text[span.range()]
    }

    #[cold]
    #[inline(never)]
    fn unexpected(&self, t: Token, expected: &str) -> FormulaError {
        if t.kind == TokenKind::Eof {
            FormulaError::new(
                ErrorCode::UnexpectedEnd,
                t.span,
                format!("formula ends where {expected} was expected"),
            )
            .with_label(format!("expected {expected}"))
        } else {
            FormulaError::new(
                ErrorCode::UnexpectedToken,
                t.span,
                format!("unexpected `{}`; expected {expected}", self.slice(t.span)),
            )
            .with_label(format!("expected {expected}"))
        }
    }

    /// Tracks nesting so that no input can overflow the stack here or in later passes.
    fn enter(&mut self, span: Span) -> Result<(), FormulaError> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(too_deep(span, self.max_depth));
        }
        Ok(())
    }

    fn binary(op: BinaryOp, op_span: Span, lhs: Expr, rhs: Expr) -> Expr {
        let span = lhs.span.to(rhs.span);
        Expr { kind: ExprKind::Binary { op, op_span, lhs: Box::new(lhs), rhs: Box::new(rhs) }, span }
    }

    /// Precedence climbing over the left-associative binary levels 1 to 5 (`||`/`&&` up to
    /// `*`/`/`/`%`): one loop handles every level, and the right operand recurses only for
    /// tighter levels, so nested input costs few stack frames per level.
    fn binary_level(&mut self, min_level: u8) -> Result<Expr, FormulaError> {
        let mut lhs = self.negate()?;
        let entry_depth = self.depth;
        // The first `&&`/`||` seen at this level, to reject mixing them without parentheses.
        let mut first_logic: Option<(BinaryOp, Span)> = None;
        loop {
            let t = self.peek();
            let Some(op) = binary_op(t.kind).filter(|op| op.level() >= min_level) else { break };
            self.bump();
            if op.level() == 1 {
                match first_logic {
                    Some((first, first_span)) if first != op => {
                        return Err(ambiguous_logic(first, first_span, op, t.span));
                    }
                    Some(_) => {}
                    None => first_logic = Some((op, t.span)),
                }
            }
            // Each link of a chain deepens the left-leaning tree by one level.
            self.enter(t.span)?;
            let rhs = self.binary_level(op.level() + 1)?;
            lhs = Self::binary(op, t.span, lhs, rhs);
        }
        self.depth = entry_depth;
        Ok(lhs)
    }

    fn logic(&mut self) -> Result<Expr, FormulaError> {
        self.binary_level(1)
    }

    fn unary(&mut self, op: UnaryOp, op_tok: Token, operand: Expr) -> Expr {
        let span = op_tok.span.to(operand.span);
        Expr { kind: ExprKind::Unary { op, op_span: op_tok.span, expr: Box::new(operand) }, span }
    }

    fn negate(&mut self) -> Result<Expr, FormulaError> {
        if let Some(minus) = self.eat(TokenKind::Minus) {
            if self.peek().kind == TokenKind::Minus {
                return Err(FormulaError::new(
                    ErrorCode::RepeatedUnary,
                    minus.span.to(self.peek().span),
                    "two unary minus signs in a row",
                )
                .with_help("write `-(-x)`, or `x` if the signs cancel"));
            }
            self.enter(minus.span)?;
            let operand = self.not()?;
            self.depth -= 1;
            return Ok(self.unary(UnaryOp::Neg, minus, operand));
        }
        self.not()
    }

    fn not(&mut self) -> Result<Expr, FormulaError> {
        if let Some(bang) = self.eat(TokenKind::Bang) {
            let next = self.peek();
            if matches!(next.kind, TokenKind::Bang | TokenKind::Minus) {
                return Err(FormulaError::new(
                    ErrorCode::RepeatedUnary,
                    bang.span.to(next.span),
                    format!("`!` cannot be followed directly by `{}`", self.slice(next.span)),
                )
                .with_help("put the operand of `!` in parentheses: `!(...)`"));
            }
            self.enter(bang.span)?;
            let operand = self.power()?;
            self.depth -= 1;
            return Ok(self.unary(UnaryOp::Not, bang, operand));
        }
        self.power()
    }

    fn power(&mut self) -> Result<Expr, FormulaError> {
        let base = self.atom()?;
        let Some(caret) = self.eat(TokenKind::Caret) else { return Ok(base) };
        if self.peek().kind == TokenKind::Minus {
            return Err(self
                .unexpected(self.peek(), "a number, name or `(`")
                .with_help("a negative exponent needs parentheses: `2^(-1)`"));
        }
        self.enter(caret.span)?;
        let exponent = self.atom()?;
        self.depth -= 1;
        if let Some(second) = self.eat(TokenKind::Caret) {
            return Err(FormulaError::new(
                ErrorCode::AmbiguousPrecedence,
                caret.span.to(second.span),
                "chained `^` without parentheses is ambiguous",
            )
            .with_label("add parentheses")
            .with_help(
                "PCGen reads `a^b^c` as `(a^b)^c`; mathematics reads it as `a^(b^c)`. \
                 Write the parentheses you mean.",
            ));
        }
        Ok(Self::binary(BinaryOp::Pow, caret.span, base, exponent))
    }

    fn atom(&mut self) -> Result<Expr, FormulaError> {
        let t = self.bump();
        match t.kind {
            TokenKind::Number => {
                let text = self.slice(t.span);
                let digits = if text.starts_with('.') { format!("0{text}") } else { text.to_owned() };
                let value = Decimal::from_str_exact(&digits).map_err(|_| {
                    FormulaError::new(
                        ErrorCode::BadNumber,
                        t.span,
                        format!("number `{text}` does not fit exact decimal arithmetic"),
                    )
                    .with_help("numbers have at most 28 significant digits and must be below 7.9e28")
                })?;
                Ok(Expr { kind: ExprKind::Number(value), span: t.span })
            }
            TokenKind::Str => {
                let inner = Span::new(t.span.start + 1, t.span.end - 1);
                Ok(Expr { kind: ExprKind::Str(Arc::from(self.slice(inner))), span: t.span })
            }
            TokenKind::Name => {
                let name: Arc<str> = Arc::from(self.slice(t.span));
                if let Some(open) = self.eat(TokenKind::LParen) {
                    self.enter(open.span)?;
                    let args = self.arguments(open)?;
                    self.depth -= 1;
                    let span = t.span.to(self.tokens[self.pos - 1].span);
                    return Ok(Expr { kind: ExprKind::Call { name, name_span: t.span, args }, span });
                }
                if let Some(open) = self.eat(TokenKind::LBracket) {
                    self.enter(open.span)?;
                    if self.peek().kind == TokenKind::RBracket {
                        return Err(self
                            .unexpected(self.peek(), "an index expression")
                            .with_help("an array index is one expression: `name[0]`"));
                    }
                    let index = self.logic()?;
                    self.close(open, TokenKind::RBracket)?;
                    self.depth -= 1;
                    let span = t.span.to(self.tokens[self.pos - 1].span);
                    return Ok(Expr {
                        kind: ExprKind::Index { name, name_span: t.span, index: Box::new(index) },
                        span,
                    });
                }
                Ok(Expr { kind: ExprKind::Var(name), span: t.span })
            }
            TokenKind::LParen => {
                if self.peek().kind == TokenKind::RParen {
                    return Err(self.unexpected(self.peek(), "an expression inside `()`"));
                }
                self.enter(t.span)?;
                let inner = self.logic()?;
                self.close(t, TokenKind::RParen)?;
                self.depth -= 1;
                Ok(inner)
            }
            _ => {
                let mut err = self.unexpected(t, "a number, string, name or `(`");
                if t.kind == TokenKind::Plus {
                    err = err.with_help("there is no unary `+`; write the number alone");
                }
                Err(err)
            }
        }
    }

    /// Arguments after `name(`: none, or expressions separated by single commas.
    fn arguments(&mut self, open: Token) -> Result<Vec<Expr>, FormulaError> {
        let mut args = Vec::new();
        if self.eat(TokenKind::RParen).is_some() {
            return Ok(args);
        }
        loop {
            if matches!(self.peek().kind, TokenKind::Comma | TokenKind::RParen) {
                let t = self.peek();
                return Err(FormulaError::new(
                    ErrorCode::EmptyArgument,
                    t.span,
                    "empty argument in function call",
                )
                .with_label("argument missing before this")
                .with_help("remove the extra `,` or write the missing argument"));
            }
            args.push(self.logic()?);
            if self.eat(TokenKind::Comma).is_some() {
                continue;
            }
            if self.peek().kind == TokenKind::Eof {
                return self.close(open, TokenKind::RParen).map(|()| args);
            }
            if self.eat(TokenKind::RParen).is_none() {
                return Err(self.unexpected(self.peek(), "an operator, `,` or `)`"));
            }
            return Ok(args);
        }
    }

    fn close(&mut self, open: Token, kind: TokenKind) -> Result<(), FormulaError> {
        if self.eat(kind).is_some() {
            return Ok(());
        }
        let t = self.peek();
        if t.kind == TokenKind::Eof {
            return Err(FormulaError::new(
                ErrorCode::UnclosedDelimiter,
                open.span,
                format!("`{}` is never closed", self.slice(open.span)),
            )
            .with_label("opened here")
            .with_help(format!("add {} at the end", kind.describe())));
        }
        Err(self.unexpected(t, &format!("an operator or {}", kind.describe())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> Result<Expr, FormulaError> {
        parse(text, &Limits::default())
    }

    fn canon(text: &str) -> String {
        p(text).unwrap().to_string()
    }

    fn code(text: &str) -> ErrorCode {
        p(text).unwrap_err().code
    }

    #[test]
    fn precedence_follows_pcgen() {
        let table = [
            ("1+2*3", "1 + 2 * 3"),
            ("(1+2)*3", "(1 + 2) * 3"),
            ("1-2-3", "1 - 2 - 3"),
            ("1-(2-3)", "1 - (2 - 3)"),
            ("-2^2", "-2^2"),
            ("(-2)^2", "(-2)^2"),
            ("2^(-1)", "2^(-1)"),
            ("(2^3)^2", "(2^3)^2"),
            ("2^(3^2)", "2^(3^2)"),
            ("a<b==c", "a < b == c"),
            ("a||b||c", "a || b || c"),
            ("(a||b)&&c", "(a || b) && c"),
            ("a||(b&&c)", "a || (b && c)"),
            ("!a&&b", "!a && b"),
            ("-!a", "-(!a)"),
            ("2*-3", "2 * -3"),
            ("2--3", "2 - -3"),
            ("abs (-5.3 )", "abs(-5.3)"),
            ("f()", "f()"),
            ("max(1,  2 ,3)", "max(1, 2, 3)"),
            ("x[i+1]", "x[i + 1]"),
            ("\"a b\"", "\"a b\""),
            ("CL=Special Fighter*2", "CL=Special Fighter * 2"),
            ("1.50", "1.50"),
            (".5", "0.5"),
        ];
        for (input, expected) in table {
            assert_eq!(canon(input), expected, "canonical form of {input}");
            let again = p(expected).unwrap();
            assert!(again.same_tree(&p(input).unwrap()), "{expected} reparses to the same tree");
        }
    }

    #[test]
    fn rejected_shapes() {
        use ErrorCode::*;
        let table = [
            ("2+", UnexpectedEnd),
            ("*3", UnexpectedToken),
            ("==3", UnexpectedToken),
            ("1++2", UnexpectedToken),
            ("1*/2", UnexpectedToken),
            ("1&&||2", UnexpectedToken),
            ("+3", UnexpectedToken),
            ("()", UnexpectedToken),
            ("2)", UnexpectedToken),
            ("(3.4", UnclosedDelimiter),
            ("((3.2)", UnclosedDelimiter),
            ("1,2", UnexpectedToken),
            ("(5,5)", UnexpectedToken),
            ("f(,3)", EmptyArgument),
            ("f(4,)", EmptyArgument),
            ("f(5,,6)", EmptyArgument),
            ("x[]", UnexpectedToken),
            ("x[a,b]", UnexpectedToken),
            ("BracketFunction[,3]", UnexpectedToken),
            ("2^-1", UnexpectedToken),
            ("--3", RepeatedUnary),
            ("!!a", RepeatedUnary),
            ("!-a", RepeatedUnary),
            ("a||b&&c", AmbiguousPrecedence),
            ("a&&b||c", AmbiguousPrecedence),
            ("2^3^2", AmbiguousPrecedence),
            ("1e3", UnexpectedToken),
            ("99999999999999999999999999999", BadNumber),
            ("f(1", UnclosedDelimiter),
            ("", UnexpectedEnd),
        ];
        for (input, expected) in table {
            assert_eq!(code(input), expected, "error code for {input:?}");
        }
    }

    #[test]
    fn spans_point_at_the_offender() {
        let e = p("1 + * 2").unwrap_err();
        assert_eq!(e.span, Span::new(4, 5));
        let e = p("abs(1").unwrap_err();
        assert_eq!(e.span, Span::new(3, 4), "points at the unclosed paren");
        let e = p("a || b && c").unwrap_err();
        assert_eq!(e.span, Span::new(2, 9));
    }

    #[test]
    fn limits_bound_nesting_and_length() {
        let deep = "(".repeat(300) + "1" + &")".repeat(300);
        assert_eq!(code(&deep), ErrorCode::TooComplex);
        let long_chain = vec!["1"; 500].join("+");
        assert_eq!(code(&long_chain), ErrorCode::TooComplex);
        let ok_chain = vec!["1"; 60].join("+");
        assert!(p(&ok_chain).is_ok());
        let huge = "1".repeat(20_000);
        assert_eq!(code(&huge), ErrorCode::TooComplex);
    }
}
