//! What the text errors carry: where the problem is ([`Location`]) and what it is
//! ([`Syntax`], [`Expected`]).
//!
//! A [`Location`] displays as the line of the input holding the offending byte with a caret
//! under it. Offsets are byte offsets into the text and always fall on a character
//! boundary; the caret is placed by counting characters, so it sits under the right
//! character for any UTF-8 input, and tabs are copied so a terminal aligns them alike.
//!
//! **Invariant**: a message is bounded whatever the input. A long line is shown as a window
//! of at most [`WINDOW`] characters either side of the fault, each cut side marked `…` (as
//! rustc and Python shorten long lines), and every piece of the input quoted in a message
//! (a token found, a name) is cut to [`QUOTE`] characters and escaped by [`quoted`]. So a parse error
//! on a one-line text of megabytes is a message of a few hundred bytes.

use crate::Op;
use std::fmt;

/// The most characters of the faulty line shown on each side of the fault.
pub(crate) const WINDOW: usize = 60;

/// The most characters of a piece of input (a token, a name) quoted in a message.
pub(crate) const QUOTE: usize = 40;

/// `s` as a message quotes it (a name, a token, a key): cut to its first [`QUOTE`]
/// characters and `…` when longer, and escaped so that every character shows as itself or
/// as an escape: what Rust's `str::escape_debug` escapes (control characters such as NUL,
/// a newline or ESC, as `\0`, `\n`, `\u{1b}`; unprintable and unassigned code points; a
/// combining mark that starts `s` or follows a quote), and every invisible character
/// ([`super::is_invisible`]: the zero-width joiner, bidi controls, variation selectors, the
/// Hangul fillers), as `\u{200d}`. So a message never carries a character that draws as
/// nothing or moves the cursor, and `x\u{200d}` reads differently from `x`. Every message
/// of the workspace that quotes a user-supplied name or string quotes it through this.
pub fn quoted(s: &str) -> String {
    let cut = match s.char_indices().nth(QUOTE) {
        None => s,
        Some((cut, _)) => &s[..cut],
    };
    let mut out = escaped(cut);
    if cut.len() < s.len() {
        out.push('…');
    }
    out
}

/// `s` escaped as [`quoted`] escapes it, whole (not cut): for what a message shows in full,
/// such as a file's path.
pub fn escaped(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 3);
    // Quotes and `\\` stay as they are (a quoted `repr` keeps its quotes); each piece
    // between them is escaped as `escape_debug` does.
    for piece in s.split_inclusive(['\'', '"', '\\']) {
        let (body, kept) = match piece.char_indices().last() {
            Some((i, c @ ('\'' | '"' | '\\'))) => (&piece[..i], Some(c)),
            _ => (piece, None),
        };
        for c in body.escape_debug() {
            if super::is_invisible(c) {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            } else {
                out.push(c);
            }
        }
        out.extend(kept);
    }
    out
}

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
    /// texts), the input line, and a caret line under the byte. Control characters and
    /// invisible ones ([`super::is_invisible`]) of the line are shown as `�`, one each, so
    /// the caret still lines up and no character of the message draws as nothing. Of a long line, only
    /// [`WINDOW`] characters either side of the byte are shown, a cut side marked `…`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let line_start = self.text[..self.offset].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.text[self.offset..]
            .find('\n')
            .map_or(self.text.len(), |i| self.offset + i);
        let start = self.text[line_start..self.offset]
            .char_indices()
            .rev()
            .nth(WINDOW - 1)
            .map_or(line_start, |(i, _)| line_start + i);
        let end = self.text[self.offset..line_end]
            .char_indices()
            .nth(WINDOW + 1)
            .map_or(line_end, |(i, _)| self.offset + i);
        let (before, after) = (
            if start > line_start { "…" } else { "" },
            if end < line_end { "…" } else { "" },
        );
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
                if (c.is_control() && c != '\t') || super::is_invisible(c) {
                    '�'
                } else {
                    c
                }
            })
            .collect();
        writeln!(f, "    {before}{shown}{after}")?;
        let pad: String = before
            .chars()
            .chain(self.text[start..self.offset].chars())
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
    /// A `_` in a number that does not stand between two digits, as in `1__000`, `1_` or
    /// `1_.5` (Python refuses these too).
    MisplacedUnderscore,
    /// An integer with a leading zero, as in `007` (C would read it as octal; Python
    /// refuses it, and so does ddx).
    LeadingZero,
    /// A function name used as a value, without a call.
    FunctionNotCalled(Op),
    /// The exponent of `powi(a, n)` is not an integer literal (as `3` or `-2`): `powi`
    /// never differentiates its exponent, so a symbol or an expression there would be
    /// given a partial of 0 silently; `pow(a, n)` or `a ** n` differentiate both.
    PowiExponent,
    /// An integer literal past the `f64` range (it would round to infinity); the parser
    /// reports it as [`Error::LiteralTooLarge`](crate::Error::LiteralTooLarge), code
    /// `too_large`.
    IntegerTooLarge {
        /// How many digits it has.
        digits: usize,
    },
    /// An identifier that is not a name ([`super::why_not_a_name`]): a Python keyword
    /// (`lambda`), one holding an invisible character (`x\u{200d}`), or one not in NFKC
    /// form (`ﬁ`, which Python reads as `fi`).
    NotAName {
        /// The identifier, as written.
        name: String,
        /// The rule it breaks.
        why: &'static str,
    },
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
            } => write!(f, "expected {expected}, found `{}`", quoted(t)),
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
            Syntax::MisplacedUnderscore => {
                f.write_str("a `_` in a number must stand between two digits, as in `1_000`")
            }
            Syntax::LeadingZero => f.write_str(
                "an integer may not start with 0 (C would read it as octal); write it without \
                 the leading zeros",
            ),
            Syntax::FunctionNotCalled(op) => write!(
                f,
                "`{op}` is a function, not a symbol; call it as `{op}(…)`, or name the \
                 symbol differently"
            ),
            Syntax::PowiExponent => f.write_str(
                "the exponent of `powi(a, n)` must be an integer literal such as `3` or `-2` \
                 (it is never differentiated); for a variable exponent write `pow(a, n)` or \
                 `a ** n`",
            ),
            Syntax::IntegerTooLarge { digits } => write!(
                f,
                "this integer literal ({digits} digits) is past the float64 range"
            ),
            Syntax::NotAName { name, why } => {
                write!(f, "`{}` cannot be a name: {why}", quoted(name))?;
                if !super::is_nfkc(name) {
                    write!(f, " (Python reads it as `{}`)", quoted(&super::nfkc(name)))?;
                }
                Ok(())
            }
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
        let at = Location::new("x\u{200d}\u{202e}y $", 8);
        assert_eq!(at.to_string(), "  at byte 8:\n    x��y $\n        ^");
        let at = Location::new("é", 1);
        assert_eq!(at.offset, 0, "clamped down to a char boundary");
    }

    #[test]
    fn long_lines_show_a_window() {
        let text = format!("{}$ {}", "a".repeat(100), "é".repeat(100));
        let shown = Location::new(&text, 100).to_string();
        let lines: Vec<&str> = shown.lines().collect();
        let window = format!("    …{}$ {}…", "a".repeat(WINDOW), "é".repeat(WINDOW - 1));
        assert_eq!(lines[1], window);
        assert_eq!(lines[2], format!("    {}^", " ".repeat(WINDOW + 1)));
        let short = Location::new("ab$cd", 2).to_string();
        assert!(short.ends_with("    ab$cd\n      ^"), "{short}");
        assert_eq!(quoted(&"x".repeat(QUOTE)), "x".repeat(QUOTE));
        assert_eq!(
            quoted(&"é".repeat(QUOTE + 1)),
            format!("{}…", "é".repeat(QUOTE))
        );
    }

    /// Every kind of character that draws as nothing or moves the cursor is escaped: a
    /// control character, NUL, a default-ignorable one that `escape_debug` leaves (the
    /// Hangul filler U+3164, the zero-width joiner in some Rust versions), a bidi control;
    /// letters of every script, and marks after a base, stay as they are.
    #[test]
    fn quoted_escapes_what_does_not_show() {
        let cases = [
            ("x\u{200d}", "x\\u{200d}"),
            ("x\0", "x\\0"),
            ("a\nb\u{1b}", "a\\nb\\u{1b}"),
            ("x\u{3164}", "x\\u{3164}"),
            ("x\u{115f}y", "x\\u{115f}y"),
            ("\u{202e}x", "\\u{202e}x"),
            ("x\u{fe0f}", "x\\u{fe0f}"),
            ("x\u{e0001}", "x\\u{e0001}"),
            ("αθ1_変数", "αθ1_変数"),
            ("नमस्ते", "नमस्ते"),
            ("'a\\ud800' \"q\"", "'a\\ud800' \"q\""),
        ];
        for (raw, shown) in cases {
            assert_eq!(quoted(raw), shown, "{raw:?}");
            let q = quoted(raw);
            assert!(
                !q.chars()
                    .any(|c| c.is_control() || super::super::is_invisible(c)),
                "{q:?}"
            );
        }
        let long = format!("{}\u{200d}", "x".repeat(QUOTE - 1));
        assert_eq!(
            quoted(&long),
            format!("{}\\u{{200d}}", "x".repeat(QUOTE - 1))
        );
        assert_eq!(
            quoted(&format!("{long}y")),
            format!("{}\\u{{200d}}…", "x".repeat(QUOTE - 1))
        );
    }
}
