//! What the text errors carry: where the problem is ([`Location`]) and what it is
//! ([`Syntax`], [`Expected`]).
//!
//! A [`Location`] displays as the line of the input holding the offending byte with a caret
//! under it. Offsets are byte offsets into the text and always fall on a character
//! boundary; the caret is placed by counting characters, so it sits under the right
//! character for any UTF-8 input, and tabs are copied so a terminal aligns them alike.

use crate::Op;
use std::fmt;

/// A byte in a text: the text itself and the byte offset of the problem (the text's length
/// for the end of the input), and which of several texts it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The whole text that was parsed.
    pub text: String,
    /// The byte offset of the problem; `text.len()` means the end of the input.
    pub offset: usize,
    /// For a text parsed as one of several ([`parse_model`](super::parse_model),
    /// `ddx::rt::system_text`), its index among them: the output `f{i}` it defines. `None`
    /// for a text parsed alone ([`Formula::parse`](super::Formula::parse)).
    pub output: Option<usize>,
}

impl Location {
    /// The location `offset` of `text` (clamped to the text, and down to a character
    /// boundary).
    pub fn new(text: &str, offset: usize) -> Self {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        Self {
            text: text.to_string(),
            offset,
            output: None,
        }
    }

    /// The same location, in text `output` of several.
    #[must_use]
    pub fn in_output(self, output: usize) -> Self {
        Self {
            output: Some(output),
            ..self
        }
    }

    /// The 1-based line and column (in characters) of the offset.
    pub fn line_column(&self) -> (usize, usize) {
        let before = &self.text[..self.offset];
        let line = before.matches('\n').count() + 1;
        let start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[start..].chars().count() + 1)
    }
}

impl fmt::Display for Location {
    /// `  at byte N (line L, column C):` (`  in text I, at byte N …:` for one of several
    /// texts), the input line, and a caret line under the byte. Control characters of the
    /// line are shown as `�`, one each, so the caret still lines up.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let start = self.text[..self.offset].rfind('\n').map_or(0, |i| i + 1);
        let end = self.text[self.offset..]
            .find('\n')
            .map_or(self.text.len(), |i| self.offset + i);
        let (line, column) = self.line_column();
        if let Some(i) = self.output {
            write!(f, "  in text {i}, at byte {}", self.offset)?;
        } else {
            write!(f, "  at byte {}", self.offset)?;
        }
        if self.text.contains('\n') {
            writeln!(f, " (line {line}, column {column}):")?;
        } else {
            writeln!(f, ":")?;
        }
        let shown: String = self.text[start..end]
            .trim_end_matches('\r')
            .chars()
            .map(|c| {
                if c.is_control() && c != '\t' {
                    '�'
                } else {
                    c
                }
            })
            .collect();
        writeln!(f, "    {shown}")?;
        let pad: String = self.text[start..self.offset]
            .chars()
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        write!(f, "    {pad}^")
    }
}

/// What the parser needed where it found something else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expected {
    /// A number, a name, a call, `(`, or a sign.
    Operand,
    /// An infix operator, or the end of the input.
    OperatorOrEnd,
    /// An infix operator, or the `)` closing a parenthesis.
    OperatorOrClose,
    /// An infix operator, the `,` before the next argument, or the `)` closing a call.
    OperatorCommaOrClose,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expected::Operand => "a number, a name, a call or `(`",
            Expected::OperatorOrEnd => "an operator or the end of the input",
            Expected::OperatorOrClose => "an operator or `)`",
            Expected::OperatorCommaOrClose => "an operator, `,` or `)`",
        })
    }
}

/// Why a text is [`bad_syntax`](crate::Error::BadSyntax).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Syntax {
    /// Something other than what the grammar allows here.
    Expected {
        /// What would have been read.
        expected: Expected,
        /// The token found, as written; `None` at the end of the input.
        found: Option<String>,
    },
    /// A character the grammar has no use for.
    UnexpectedChar(char),
    /// `^`, which is not an operator (exponentiation is `**`).
    Caret,
    /// A single `=` (equality is `==`; there is no assignment).
    SingleEquals,
    /// A second comparison at one level: `a < b < c`.
    ChainedComparison,
    /// A number runs straight into a name, as in `2x`.
    NumberThenName,
    /// An exponent marker with no digits, as in `1e` or `2.5e+`.
    EmptyExponent,
    /// An integer with a leading zero, as in `007` (C would read it as octal; Python
    /// refuses it, and so does ddx).
    LeadingZero,
    /// A function name used as a value, without a call.
    FunctionNotCalled(Op),
    /// Parentheses, calls, signs and `**` nest deeper than the parser allows.
    TooDeep {
        /// The most levels allowed.
        limit: usize,
    },
}

impl fmt::Display for Syntax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Syntax::Expected {
                expected,
                found: Some(t),
            } => write!(f, "expected {expected}, found `{t}`"),
            Syntax::Expected {
                expected,
                found: None,
            } => write!(f, "expected {expected}, found the end of the input"),
            Syntax::UnexpectedChar(c) => write!(f, "unexpected character {c:?}"),
            Syntax::Caret => f.write_str("`^` is not an operator; write `**` for a power"),
            Syntax::SingleEquals => {
                f.write_str("`=` is not an operator; write `==` to compare for equality")
            }
            Syntax::ChainedComparison => f.write_str(
                "comparisons do not chain: Python would read `a < b < c` as \
                 `a < b and b < c` and C as `(a < b) < c`, so write the one you mean, \
                 e.g. `(a < b) * (b < c)`",
            ),
            Syntax::NumberThenName => {
                f.write_str("a number runs into a name; write `*` between them for a product")
            }
            Syntax::EmptyExponent => f.write_str("the exponent of this number has no digits"),
            Syntax::LeadingZero => f.write_str(
                "an integer may not start with 0 (C would read it as octal); write it without \
                 the leading zeros",
            ),
            Syntax::FunctionNotCalled(op) => write!(
                f,
                "`{op}` is a function, not a symbol; call it as `{op}(…)`, or name the \
                 symbol differently"
            ),
            Syntax::TooDeep { limit } => write!(
                f,
                "the expression nests deeper than {limit} levels (parentheses, calls, signs \
                 and `**` each add one)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_sits_under_the_byte() {
        let at = Location::new("x + é + )", 9);
        assert_eq!(at.to_string(), "  at byte 9:\n    x + é + )\n            ^");
        let at = Location::new("a\n\tb $", 5);
        assert_eq!(at.line_column(), (2, 4));
        assert_eq!(
            at.to_string(),
            "  at byte 5 (line 2, column 4):\n    \tb $\n    \t  ^"
        );
        let at = Location::new("x\u{1b}y", 99);
        assert_eq!(at.offset, 3);
        assert_eq!(at.to_string(), "  at byte 3:\n    x�y\n       ^");
        let at = Location::new("é", 1);
        assert_eq!(at.offset, 0, "clamped down to a char boundary");
    }
}
