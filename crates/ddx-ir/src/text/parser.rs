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
//! **Invariant**: the parser never recurses. Each level of nesting (a parenthesis, a call
//! argument, a sign's operand, an infix operator's right operand) is a [`Level`] on an
//! explicit stack, so the machine stack it needs does not grow with the input, whatever its
//! nesting; [`MAX_DEPTH`] bounds the levels open at once. Left-associative chains
//! (`a + b + c + …`) are a loop and cost no depth.

use super::diagnostic::{Expected, Location, Syntax};
use super::lexer::{Kind, Lexer, Token};
use super::{Formula, Item, NEG_TOKEN, PLUS_TOKEN};
use crate::error::nearest_name;
use crate::{Assoc, Error, Notation, Op, PREFIX_POWER};
use rustc_hash::FxHashMap;

/// The deepest nesting the parser accepts: each parenthesis, call argument, sign and
/// right operand of an infix operator opens one level, and the whole text is one.
///
/// No stage after the parser recurses either: folding is local to each new node, the
/// printer walks with an explicit stack, the archive writes and reads nodes in order, and
/// every pass is one loop over the nodes. So the limit is not what keeps the stack safe
/// (any text parses, or is refused, in a fixed amount of stack); it bounds the work a text
/// can ask for before it is refused. It is 2¹⁶ = 65 536 levels: machine-written formulas
/// fit (a Horner polynomial of degree 10⁴ nests 2·10⁴ levels, a continued fraction of
/// depth 10⁴ as many), where the former limit of 256 refused a Horner polynomial of degree
/// 128. Folding can make a graph nest deeper than the text it was parsed from (see
/// [`infix`](super::infix)), so printed text may exceed it.
pub const MAX_DEPTH: usize = 1 << 16;

pub(crate) struct Parser<'a> {
    text: &'a str,
    lexer: Lexer<'a>,
    peek: Token<'a>,
    /// The open levels, innermost last.
    levels: Vec<Level>,
    code: Vec<Item>,
    names: Vec<String>,
    index: FxHashMap<&'a str, u32>,
    /// User functions the text may call.
    functions: Option<&'a crate::Functions>,
}

/// One open level: an expression whose infix operations all bind at least `min`, and what
/// to do when it ends.
#[derive(Clone, Copy, Debug)]
struct Level {
    min: u8,
    then: Then,
}

/// What ends a level, and what follows.
#[derive(Clone, Copy, Debug)]
enum Then {
    /// The whole text: the end of the input follows.
    Whole,
    /// The right operand of `op`: apply it, and go on with the enclosing level's infix
    /// operations.
    Infix { op: Op, flip: bool },
    /// The operand of a sign: negate it for `-`; it is an operand of the enclosing level.
    Sign { negate: bool },
    /// A parenthesised expression: `)` follows.
    Paren,
    /// Argument `given` (0-based) of a call of `op`: `,` or `)` follows.
    Argument { op: Callee, given: usize },
}

/// What a call calls: an operation of the table, or a user function (`crate::user`).
#[derive(Clone, Copy, Debug)]
enum Callee {
    Op(Op),
    /// The tag of the function's value node, and its arity.
    User {
        tag: f64,
        arity: usize,
    },
}

impl Callee {
    fn arity(self) -> usize {
        match self {
            Callee::Op(op) => op.arity(),
            Callee::User { arity, .. } => arity,
        }
    }

    /// The error for a call of this callee with `given` arguments, at `at`.
    fn wrong_count(self, text: &str, at: usize, given: usize) -> Error {
        match self {
            Callee::Op(op) => Error::WrongArgumentCount {
                at: Location::new(text, at),
                function: op,
                expected: op.arity(),
                given,
            },
            Callee::User { tag, .. } => Error::UserFunction {
                name: crate::user::name_of(tag).unwrap_or_default(),
                problem: crate::UserProblem::ArgumentCount(given),
            },
        }
    }
}

/// Where the parser is within the innermost level.
#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    /// An operand is next.
    Operand,
    /// An operand has just been read; an infix operator may follow.
    Operator,
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
        Parser::parse_with(text, None)
    }

    /// [`Parser::parse`], where a call may also name one of `functions`.
    pub fn parse_with(
        text: &'a str,
        functions: Option<&'a crate::Functions>,
    ) -> Result<Formula, Error> {
        let mut lexer = Lexer::new(text);
        let peek = lexer
            .next_token()
            .map_err(|(at, problem)| bad(text, at, problem))?;
        let mut p = Parser {
            text,
            lexer,
            peek,
            levels: Vec::new(),
            code: Vec::new(),
            names: Vec::new(),
            index: FxHashMap::default(),
            functions,
        };
        p.run()?;
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

    /// Opens a level whose infix operations all bind at least `min`, ended by `then`; an
    /// operand is next.
    fn open(&mut self, min: u8, then: Then) -> Result<State, Error> {
        if self.levels.len() >= MAX_DEPTH {
            return Err(bad(
                self.text,
                self.peek.start,
                Syntax::TooDeep { limit: MAX_DEPTH },
            ));
        }
        self.levels.push(Level { min, then });
        Ok(State::Operand)
    }

    /// The whole text: levels open and close until the outermost one ends.
    fn run(&mut self) -> Result<(), Error> {
        let mut state = self.open(0, Then::Whole)?;
        loop {
            state = match state {
                State::Operand => self.operand()?,
                State::Operator => {
                    let Some(level) = self.levels.last().copied() else {
                        return Ok(());
                    };
                    match self.infix() {
                        Some((op, flip)) if power(op) >= level.min => {
                            self.advance()?;
                            let right_min = match op.assoc() {
                                Assoc::Right => power(op),
                                Assoc::Left | Assoc::None => power(op) + 1,
                            };
                            self.open(right_min, Then::Infix { op, flip })?
                        }
                        _ => {
                            self.levels.pop();
                            match self.close(level.then)? {
                                Some(state) => state,
                                None => return Ok(()),
                            }
                        }
                    }
                }
            };
        }
    }

    /// A number, a name, a call, a parenthesised expression, or a signed operand: reads
    /// it whole if it is a leaf, else opens its first level.
    fn operand(&mut self) -> Result<State, Error> {
        let tok = self.peek;
        match tok.kind {
            Kind::Number(v) => {
                self.advance()?;
                self.code.push(Item::Number(v));
                Ok(State::Operator)
            }
            Kind::Operator(t) if t == NEG_TOKEN || t == PLUS_TOKEN => {
                self.advance()?;
                self.open(
                    PREFIX_POWER,
                    Then::Sign {
                        negate: t == NEG_TOKEN,
                    },
                )
            }
            Kind::Open => {
                self.advance()?;
                self.open(0, Then::Paren)
            }
            Kind::Name(name) => {
                // A keyword, an invisible character, a name Python would normalise: refused
                // here as in `is_name` (a built-in's name is the function, below).
                if Op::from_call_name(name).is_none() {
                    if let Some(why) = super::why_not_a_name(name) {
                        let name = name.to_string();
                        return Err(bad(self.text, tok.start, Syntax::NotAName { name, why }));
                    }
                }
                self.advance()?;
                if self.peek.kind == Kind::Open {
                    self.call(name, tok.start)
                } else if let Some(op) = Op::from_call_name(name) {
                    Err(bad(self.text, tok.start, Syntax::FunctionNotCalled(op)))
                } else {
                    let next = self.names.len() as u32;
                    let i = *self.index.entry(name).or_insert(next);
                    if i == next {
                        self.names.push(name.to_string());
                    }
                    self.code.push(Item::Name(i));
                    Ok(State::Operator)
                }
            }
            _ => Err(self.expected(Expected::Operand)),
        }
    }

    /// A call of `name` (at byte `at`); the next token is its `(`.
    fn call(&mut self, name: &str, at: usize) -> Result<State, Error> {
        let callee = match Op::from_call_name(name) {
            Some(op) => Callee::Op(op),
            None => match self.functions.and_then(|f| f.get(name)) {
                Some(f) => Callee::User {
                    tag: f.value_tag(),
                    arity: f.arity(),
                },
                None => {
                    return Err(Error::UnknownFunction {
                        at: Location::new(self.text, at),
                        name: name.to_string(),
                        nearest: Op::other_spelling(name)
                            .map(|op| op.name().to_string())
                            .or_else(|| nearest_name(name, Op::call_names())),
                    })
                }
            },
        };
        self.advance()?;
        self.argument(callee, 0)
    }

    /// Where argument `given` (0-based) of a call of `op` may start: the call's `)`, or the
    /// argument, which opens a level.
    fn argument(&mut self, op: Callee, given: usize) -> Result<State, Error> {
        if self.peek.kind == Kind::Close {
            return self.end_call(op, given);
        }
        if given == op.arity() {
            let given = given + 1 + self.count_more_arguments();
            return Err(op.wrong_count(self.text, self.peek.start, given));
        }
        self.open(0, Then::Argument { op, given })
    }

    /// The value of the code read last where it is an integer literal `k` or `-k` (with any
    /// parentheses or `+` signs, which leave no code): what `powi` takes as exponent. Any
    /// integer the lexer reads (every one below 2¹⁰²⁴), not only an `i32`: the graph's
    /// `powi` holds any integer exponent ([`crate::math::powi`]), and its derivatives step
    /// past the `i32` range (`d/dx powi(x, −2³¹)` reads `powi(x, −2³¹ − 1)`), so every
    /// printed graph parses back.
    fn integer_literal(&self) -> Option<f64> {
        let neg = Item::Apply {
            op: Op::Neg,
            flip: false,
        };
        let v = match self.code.as_slice() {
            [.., Item::Number(v), last] if *last == neg => -*v,
            [.., Item::Number(v)] => *v,
            _ => return None,
        };
        (v.fract() == 0.0).then_some(v)
    }

    /// The `)` of a call of `op` with `given` arguments is next.
    fn end_call(&mut self, op: Callee, given: usize) -> Result<State, Error> {
        if given < op.arity() {
            return Err(op.wrong_count(self.text, self.peek.start, given));
        }
        if matches!(op, Callee::Op(Op::Powi)) && self.integer_literal().is_none() {
            return Err(bad(self.text, self.peek.start, Syntax::PowiExponent));
        }
        self.advance()?;
        self.code.push(match op {
            Callee::Op(op) => Item::Apply { op, flip: false },
            Callee::User { tag, arity } => Item::User { tag, arity },
        });
        Ok(State::Operator)
    }

    /// A level ended by `then` is complete (and popped): what follows it, or `None` when
    /// it was the whole text.
    fn close(&mut self, then: Then) -> Result<Option<State>, Error> {
        match then {
            Then::Whole => {
                if self.peek.kind != Kind::End {
                    return Err(self.expected(Expected::OperatorOrEnd));
                }
                return Ok(None);
            }
            Then::Infix { op, flip } => {
                self.code.push(Item::Apply { op, flip });
                if op.assoc() == Assoc::None {
                    if let Some((next, _)) = self.infix() {
                        if power(next) == power(op) {
                            return Err(bad(self.text, self.peek.start, Syntax::ChainedComparison));
                        }
                    }
                }
            }
            Then::Sign { negate } => {
                if negate {
                    self.code.push(Item::Apply {
                        op: Op::Neg,
                        flip: false,
                    });
                }
            }
            Then::Paren => {
                if self.peek.kind != Kind::Close {
                    return Err(self.expected(Expected::OperatorOrClose));
                }
                self.advance()?;
            }
            Then::Argument { op, given } => {
                let given = given + 1;
                return match self.peek.kind {
                    Kind::Comma => {
                        self.advance()?;
                        self.argument(op, given).map(Some)
                    }
                    Kind::Close => self.end_call(op, given).map(Some),
                    _ => Err(self.expected(Expected::OperatorCommaOrClose)),
                };
            }
        }
        Ok(Some(State::Operator))
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
    let at = Location::new(text, at);
    match problem {
        Syntax::IntegerTooLarge { digits } => Error::LiteralTooLarge { at, digits },
        problem => Error::BadSyntax { at, problem },
    }
}
