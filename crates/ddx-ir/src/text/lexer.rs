//! The lexer: text to tokens, one at a time, on the parser's demand.
//!
//! Input: any `&str`. Output: tokens with their byte span, or a [`Syntax`] problem at a
//! byte offset. Whitespace (any Unicode white space) separates tokens and is otherwise
//! ignored. Lexing is lazy, so a problem late in the text is reported only if the parser
//! gets that far, and the first problem reported is the leftmost one.
//!
//! - numbers are Python's decimal float and integer literals: `2`, `2.`, `.5`, `1.5e-3`,
//!   `1E3`, `1_000`, `1_000.5e1_0` (all read as `f64`; `1e999` is infinity, as in Python,
//!   while an integer literal past the `f64` range, which Python's `float()` refuses, is
//!   [`Error::LiteralTooLarge`](crate::Error::LiteralTooLarge));
//!   as in Python, a `_` may stand only between two digits, and an integer may not start
//!   with `0` unless it is all zeros (`007` is refused, where C would read octal), while
//!   `007.5` and `00` are fine;
//! - names follow Python's identifier rule: a character of Unicode's `XID_Start` or `_`,
//!   then characters of `XID_Continue` (so `α`, `θ1`, `T_K` and `変数` are names; `x₁` is not, as in Python). Unlike
//!   Python, names are compared as written, without NFKC normalisation: `ﬁ` and `fi` are
//!   two symbols, where Python would read one;
//! - operators are the infix spellings of the operator table ([`Op::infix_tokens`]), read
//!   longest first, and the punctuation `(`, `)`, `,`.

use super::diagnostic::Syntax;
use crate::Op;
use std::borrow::Cow;

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Kind<'a> {
    /// A numeric literal's value.
    Number(f64),
    /// A name.
    Name(&'a str),
    /// An operator spelling (`+`, `**`, `>=`): infix, or a sign in operand position.
    Operator(&'static str),
    /// `(`
    Open,
    /// `)`
    Close,
    /// `,`
    Comma,
    /// The end of the input.
    End,
}

/// A token and the bytes it spans.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Token<'a> {
    pub kind: Kind<'a>,
    pub start: usize,
    pub end: usize,
}

impl Token<'_> {
    /// The token as written, or `None` for the end of the input.
    pub fn spelling<'t>(&self, text: &'t str) -> Option<&'t str> {
        (self.kind != Kind::End).then(|| &text[self.start..self.end])
    }
}

/// A problem found by the lexer, at a byte offset.
pub(crate) type LexError = (usize, Syntax);

/// Tokens of one text.
pub(crate) struct Lexer<'a> {
    text: &'a str,
    pos: usize,
}

/// Whether a name may start with `c` (Python's rule: `XID_Start` or `_`).
pub(crate) fn is_name_start(c: char) -> bool {
    c == '_' || unicode_ident::is_xid_start(c)
}

/// Whether a name may go on with `c` (`XID_Continue`, which holds `_` and the digits).
pub(crate) fn is_name_continue(c: char) -> bool {
    unicode_ident::is_xid_continue(c)
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Self {
        Self { text, pos: 0 }
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.text.as_bytes().get(at).copied()
    }

    /// The next token, or the problem at the next non-space byte.
    pub fn next_token(&mut self) -> Result<Token<'a>, LexError> {
        let rest = &self.text[self.pos..];
        let trimmed = rest.trim_start();
        self.pos += rest.len() - trimmed.len();
        let start = self.pos;
        let Some(c) = trimmed.chars().next() else {
            return Ok(Token {
                kind: Kind::End,
                start,
                end: start,
            });
        };
        let kind = match c {
            '0'..='9' | '.' => return self.number(),
            _ if is_name_start(c) => {
                let end = trimmed
                    .char_indices()
                    .find(|&(_, c)| !is_name_continue(c))
                    .map_or(self.text.len(), |(i, _)| start + i);
                self.pos = end;
                return Ok(Token {
                    kind: Kind::Name(&self.text[start..end]),
                    start,
                    end,
                });
            }
            '(' => Kind::Open,
            ')' => Kind::Close,
            ',' => Kind::Comma,
            _ => match Op::infix_tokens()
                .filter(|t| trimmed.starts_with(t))
                .max_by_key(|t| t.len())
            {
                Some(t) => {
                    self.pos = start + t.len();
                    return Ok(Token {
                        kind: Kind::Operator(t),
                        start,
                        end: self.pos,
                    });
                }
                None => {
                    return Err((
                        start,
                        match c {
                            '^' => Syntax::Caret,
                            '=' => Syntax::SingleEquals,
                            _ => Syntax::UnexpectedChar(c),
                        },
                    ))
                }
            },
        };
        self.pos = start + 1;
        Ok(Token {
            kind,
            start,
            end: self.pos,
        })
    }

    /// The end of the run of digits starting at `at` (`at` itself when there is none), in
    /// which a `_` may stand between two digits; a `_` anywhere else is the error.
    fn digits(&self, mut at: usize) -> Result<usize, LexError> {
        let first = at;
        loop {
            match self.byte(at) {
                Some(b) if b.is_ascii_digit() => at += 1,
                Some(b'_')
                    if at > first && self.byte(at + 1).is_some_and(|b| b.is_ascii_digit()) =>
                {
                    at += 1;
                }
                Some(b'_') if at > first => return Err((at, Syntax::MisplacedUnderscore)),
                _ => return Ok(at),
            }
        }
    }

    /// A numeric literal starting at `self.pos` (a digit or `.`).
    fn number(&mut self) -> Result<Token<'a>, LexError> {
        let start = self.pos;
        let digits = |lx: &Self, at: usize| lx.digits(at);
        let mut end = digits(self, start)?;
        let whole = end > start;
        if self.byte(end) == Some(b'.') {
            if self.byte(end + 1) == Some(b'_') {
                return Err((end + 1, Syntax::MisplacedUnderscore));
            }
            let frac_end = digits(self, end + 1)?;
            if !whole && frac_end == end + 1 {
                return Err((start, Syntax::UnexpectedChar('.')));
            }
            end = frac_end;
        }
        if matches!(self.byte(end), Some(b'e' | b'E')) {
            let mut at = end + 1;
            if matches!(self.byte(at), Some(b'+' | b'-')) {
                at += 1;
            }
            if self.byte(at) == Some(b'_') {
                return Err((at, Syntax::MisplacedUnderscore));
            }
            let exp_end = digits(self, at)?;
            if exp_end == at {
                return Err((end, Syntax::EmptyExponent));
            }
            end = exp_end;
        }
        if self.text[end..].chars().next().is_some_and(is_name_start) {
            return Err((
                end,
                if self.byte(end) == Some(b'_') {
                    Syntax::MisplacedUnderscore
                } else {
                    Syntax::NumberThenName
                },
            ));
        }
        let literal: Cow<'_, str> = match &self.text[start..end] {
            l if l.contains('_') => Cow::Owned(l.replace('_', "")),
            l => Cow::Borrowed(l),
        };
        if literal.len() > 1
            && literal.starts_with('0')
            && literal.bytes().all(|b| b.is_ascii_digit())
            && literal.bytes().any(|b| b != b'0')
        {
            return Err((start, Syntax::LeadingZero));
        }
        let value = literal
            .parse::<f64>()
            .map_err(|_| (start, Syntax::UnexpectedChar('.')))?;
        // An integer literal past the range is refused, as Python's `float(n)` refuses
        // it; a float literal past it is infinity (`1e999`), as in Python.
        if value.is_infinite() && literal.bytes().all(|b| b.is_ascii_digit()) {
            return Err((
                start,
                Syntax::IntegerTooLarge {
                    digits: literal.len(),
                },
            ));
        }
        self.pos = end;
        Ok(Token {
            kind: Kind::Number(value),
            start,
            end,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Result<Vec<Kind<'_>>, LexError> {
        let mut lx = Lexer::new(text);
        let mut out = Vec::new();
        loop {
            let t = lx.next_token()?;
            if t.kind == Kind::End {
                return Ok(out);
            }
            out.push(t.kind);
        }
    }

    #[test]
    fn numbers_in_every_spelling() {
        use Kind::Number as N;
        assert_eq!(
            kinds("2 2. .5 1.5e-3 1E3 1e+2 007.0 1e999").unwrap(),
            [
                N(2.0),
                N(2.0),
                N(0.5),
                N(1.5e-3),
                N(1e3),
                N(100.0),
                N(7.0),
                N(f64::INFINITY)
            ]
        );
        assert_eq!(kinds("1.e3").unwrap(), [N(1000.0)]);
        assert_eq!(
            kinds("00 0 0e5 07e1").unwrap(),
            [N(0.0), N(0.0), N(0.0), N(70.0)]
        );
        assert_eq!(kinds("x + 007"), Err((4, Syntax::LeadingZero)));
    }

    #[test]
    fn underscores_between_digits_as_in_python() {
        use Kind::Number as N;
        assert_eq!(
            kinds("1_000 1_000.000_5 1e1_0 .5_5 0_0 1_0e-1_0").unwrap(),
            [N(1000.0), N(1000.0005), N(1e10), N(0.55), N(0.0), N(1e-9)]
        );
        // Python refuses each of these ("invalid decimal literal").
        for (text, at) in [
            ("1__0", 1),
            ("1_", 1),
            ("1_.5", 1),
            ("1._5", 2),
            ("1e_5", 2),
            ("1_e5", 1),
            ("1.5_", 3),
            ("0_7", 0),
        ] {
            let problem = if text == "0_7" {
                Syntax::LeadingZero
            } else {
                Syntax::MisplacedUnderscore
            };
            assert_eq!(kinds(text), Err((at, problem)), "{text}");
        }
        assert_eq!(
            kinds("_1").unwrap(),
            [Kind::Name("_1")],
            "a name, as in Python"
        );
    }

    #[test]
    fn names_follow_pythons_identifier_rule() {
        assert_eq!(
            kinds("α + θ1 * 変数 - _T_K2 + ñ").unwrap(),
            [
                Kind::Name("α"),
                Kind::Operator("+"),
                Kind::Name("θ1"),
                Kind::Operator("*"),
                Kind::Name("変数"),
                Kind::Operator("-"),
                Kind::Name("_T_K2"),
                Kind::Operator("+"),
                Kind::Name("ñ"),
            ]
        );
        // Not XID_Start (Python: `"₁x".isidentifier()` is False), nor a symbol.
        assert_eq!(kinds("₁x"), Err((0, Syntax::UnexpectedChar('₁'))));
        assert_eq!(kinds("x + €"), Err((4, Syntax::UnexpectedChar('€'))));
        assert_eq!(kinds("2α"), Err((1, Syntax::NumberThenName)));
    }

    #[test]
    fn operators_longest_first() {
        use Kind::Operator as O;
        assert_eq!(
            kinds("x**-y<=z").unwrap(),
            [
                Kind::Name("x"),
                O("**"),
                O("-"),
                Kind::Name("y"),
                O("<="),
                Kind::Name("z")
            ]
        );
        assert_eq!(
            kinds(">= > == != < * /").unwrap(),
            [O(">="), O(">"), O("=="), O("!="), O("<"), O("*"), O("/")]
        );
    }

    #[test]
    fn problems_and_where() {
        assert_eq!(kinds("x ^ 2"), Err((2, Syntax::Caret)));
        assert_eq!(kinds("x = 2"), Err((2, Syntax::SingleEquals)));
        assert_eq!(kinds("2x"), Err((1, Syntax::NumberThenName)));
        assert_eq!(kinds("1e"), Err((1, Syntax::EmptyExponent)));
        assert_eq!(kinds("1e+ 2"), Err((1, Syntax::EmptyExponent)));
        assert_eq!(kinds(" . "), Err((1, Syntax::UnexpectedChar('.'))));
        assert_eq!(kinds("x $"), Err((2, Syntax::UnexpectedChar('$'))));
        assert_eq!(kinds("é").unwrap(), [Kind::Name("é")]);
        assert_eq!(kinds("!x"), Err((0, Syntax::UnexpectedChar('!'))));
    }
}
