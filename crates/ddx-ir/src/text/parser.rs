//! The parser: tokens to a [`Formula`]'s postfix code, by precedence climbing.
//!
//! Input: a text. Output: postfix code in which every operation's arguments come before it
//! and every name is an index into the formula's name list (first appearance order), or
//! the first error, with its byte offset.
//!
//! Precedence and grouping come from the operator table: each infix operation's binding
//! power ([`Notation::Infix`]) and [`Op::assoc`], and [`PREFIX_POWER`] for a sign. So `**`
//! binds tighter than a sign on its left and its right operand may itself be signed
//! (`-x**2` is `-(x**2)`, `2**-1` is legal, `x**-y**2` is `x**(-(y**2))`), as in Python.
//! Comparisons bind loosest and do not chain. A unary `+` makes no node.
//!
//! **Invariant**: recursion goes through [`Parser::expr`] only, which counts levels and
//! refuses past [`MAX_DEPTH`], so no input can exhaust the stack. Left-associative chains
//! (`a + b + c + …`) are a loop and cost no depth.

use super::diagnostic::{Expected, Location, Syntax};
use super::lexer::{Kind, Lexer, Token};
use super::{Formula, Item, NEG_TOKEN, PLUS_TOKEN};
use crate::error::nearest_name;
use crate::{Assoc, Error, Notation, Op, PREFIX_POWER};
use rustc_hash::FxHashMap;

/// The deepest nesting the parser accepts: each parenthesis, call argument, sign and
/// right operand of an infix operator opens one level.
pub const MAX_DEPTH: usize = 256;

pub(crate) struct Parser<'a> {
    text: &'a str,
    lexer: Lexer<'a>,
    peek: Token<'a>,
    depth: usize,
    code: Vec<Item>,
    names: Vec<String>,
    index: FxHashMap<&'a str, u32>,
}

/// The binding power of an infix operation.
fn power(op: Op) -> u8 {
    match op.notation() {
        Notation::Infix { power, .. } => power,
        _ => 0,
    }
}

impl<'a> Parser<'a> {
    /// Parses the whole of `text` as one expression (with at most one comparison at its
    /// outer level).
    pub fn parse(text: &'a str) -> Result<Formula, Error> {
        let mut lexer = Lexer::new(text);
        let peek = lexer
            .next_token()
            .map_err(|(at, problem)| bad(text, at, problem))?;
        let mut p = Parser {
            text,
            lexer,
            peek,
            depth: 0,
            code: Vec::new(),
            names: Vec::new(),
            index: FxHashMap::default(),
        };
        p.expr(0)?;
        if p.peek.kind != Kind::End {
            return Err(p.expected(Expected::OperatorOrEnd));
        }
        Ok(Formula {
            text: text.to_string(),
            code: p.code,
            names: p.names,
        })
    }

    fn advance(&mut self) -> Result<Token<'a>, Error> {
        let next = self
            .lexer
            .next_token()
            .map_err(|(at, problem)| bad(self.text, at, problem))?;
        Ok(std::mem::replace(&mut self.peek, next))
    }

    fn expected(&self, expected: Expected) -> Error {
        bad(
            self.text,
            self.peek.start,
            Syntax::Expected {
                expected,
                found: self.peek.spelling(self.text).map(str::to_string),
            },
        )
    }

    /// The infix operation the next token spells, and whether it swaps its operands.
    fn infix(&self) -> Option<(Op, bool)> {
        match self.peek.kind {
            Kind::Operator(t) => Op::from_infix_token(t),
            _ => None,
        }
    }

    /// An expression whose infix operations all bind at least `min`; the caller checks
    /// what follows it.
    fn expr(&mut self, min: u8) -> Result<(), Error> {
        if self.depth >= MAX_DEPTH {
            return Err(bad(
                self.text,
                self.peek.start,
                Syntax::TooDeep { limit: MAX_DEPTH },
            ));
        }
        self.depth += 1;
        let r = self.climb(min);
        self.depth -= 1;
        r
    }

    fn climb(&mut self, min: u8) -> Result<(), Error> {
        self.operand()?;
        while let Some((op, flip)) = self.infix() {
            let p = power(op);
            if p < min {
                break;
            }
            self.advance()?;
            let right_min = match op.assoc() {
                Assoc::Right => p,
                Assoc::Left | Assoc::None => p + 1,
            };
            self.expr(right_min)?;
            self.code.push(Item::Apply { op, flip });
            if op.assoc() == Assoc::None {
                if let Some((next, _)) = self.infix() {
                    if power(next) == p {
                        return Err(bad(self.text, self.peek.start, Syntax::ChainedComparison));
                    }
                }
            }
        }
        Ok(())
    }

    /// A number, a name, a call, a parenthesised expression, or a signed operand.
    fn operand(&mut self) -> Result<(), Error> {
        let tok = self.peek;
        match tok.kind {
            Kind::Number(v) => {
                self.advance()?;
                self.code.push(Item::Number(v));
            }
            Kind::Operator(t) if t == NEG_TOKEN || t == PLUS_TOKEN => {
                self.advance()?;
                self.expr(PREFIX_POWER)?;
                if t == NEG_TOKEN {
                    self.code.push(Item::Apply {
                        op: Op::Neg,
                        flip: false,
                    });
                }
            }
            Kind::Open => {
                self.advance()?;
                self.expr(0)?;
                if self.peek.kind != Kind::Close {
                    return Err(self.expected(Expected::OperatorOrClose));
                }
                self.advance()?;
            }
            Kind::Name(name) => {
                self.advance()?;
                if self.peek.kind == Kind::Open {
                    self.call(name, tok.start)?;
                } else if let Some(op) = Op::from_call_name(name) {
                    return Err(bad(self.text, tok.start, Syntax::FunctionNotCalled(op)));
                } else {
                    let next = self.names.len() as u32;
                    let i = *self.index.entry(name).or_insert(next);
                    if i == next {
                        self.names.push(name.to_string());
                    }
                    self.code.push(Item::Name(i));
                }
            }
            _ => return Err(self.expected(Expected::Operand)),
        }
        Ok(())
    }

    /// The arguments of a call of `name` (at byte `at`); the next token is its `(`.
    fn call(&mut self, name: &str, at: usize) -> Result<(), Error> {
        let Some(op) = Op::from_call_name(name) else {
            return Err(Error::UnknownFunction {
                at: Location::new(self.text, at),
                name: name.to_string(),
                nearest: nearest_name(name, Op::call_names()),
            });
        };
        self.advance()?;
        let mut given = 0;
        loop {
            if self.peek.kind == Kind::Close {
                break;
            }
            if given == op.arity() {
                return Err(Error::WrongArgumentCount {
                    at: Location::new(self.text, self.peek.start),
                    function: op,
                    expected: op.arity(),
                    given: given + 1 + self.count_more_arguments(),
                });
            }
            self.expr(0)?;
            given += 1;
            match self.peek.kind {
                Kind::Comma => {
                    self.advance()?;
                }
                Kind::Close => break,
                _ => return Err(self.expected(Expected::OperatorCommaOrClose)),
            }
        }
        if given < op.arity() {
            return Err(Error::WrongArgumentCount {
                at: Location::new(self.text, self.peek.start),
                function: op,
                expected: op.arity(),
                given,
            });
        }
        self.advance()?;
        self.code.push(Item::Apply { op, flip: false });
        Ok(())
    }

    /// How many more arguments follow the surplus one that starts at the next token, for
    /// the count in the message: top-level commas before the call's `)`, counted on the
    /// tokens alone (a lexing problem or an unclosed call just stops the count).
    fn count_more_arguments(&self) -> usize {
        let mut lx = Lexer::new(self.text);
        let mut skipped = lx.next_token();
        while let Ok(t) = skipped {
            if t.start >= self.peek.start || t.kind == Kind::End {
                break;
            }
            skipped = lx.next_token();
        }
        let (mut depth, mut more, mut comma_last) = (0usize, 0, false);
        let mut tok = skipped;
        while let Ok(t) = tok {
            match t.kind {
                Kind::Open => depth += 1,
                Kind::Close if depth == 0 => return more - usize::from(comma_last),
                Kind::Close => depth -= 1,
                Kind::Comma if depth == 0 => more += 1,
                Kind::End => break,
                _ => {}
            }
            comma_last = t.kind == Kind::Comma && depth == 0;
            tok = lx.next_token();
        }
        more
    }
}

fn bad(text: &str, at: usize, problem: Syntax) -> Error {
    Error::BadSyntax {
        at: Location::new(text, at),
        problem,
    }
}
