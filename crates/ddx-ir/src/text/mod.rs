//! Text: equations written as strings, and graphs written back as text.
//!
//! **Reading.** [`Formula::parse`] reads one expression in Python's arithmetic:
//!
//! | form | meaning |
//! |---|---|
//! | `2`, `2.`, `.5`, `1.5e-3`, `1_000`, `1e999` | numbers (`f64`; `1e999` is infinity, as in Python; `_` between digits, as in Python) |
//! | `x`, `b1`, `_t`, `α`, `θ_K` | symbols: Python identifiers (Unicode `XID_Start` or `_`, then `XID_Continue`) in NFKC form, with no invisible character and no Python keyword ([`is_name`]; a name Python would normalise, `ﬁ` for `fi`, is refused, never silently merged), ordered in the equation by the bytes of the name (`B` before `a`, `x10` before `x2`) |
//! | `sin(x)`, `pow(a, b)`, `select(c, t, f)` | every function of the operator table, by name |
//! | `a ** b` | power; right-associative, binds tighter than a sign on its left |
//! | `-a`, `+a` | signs, binding tighter than `*` and `/` |
//! | `* /`, then `+ -` | left-associative |
//! | `< <= > >= == !=` | comparisons, loosest of all (`a > b` is `b < a`); at most one per parenthesised expression or call argument |
//!
//! `^` is refused (write `**`). A comparison chain `a < b < c` is refused: Python reads it
//! as a conjunction and C as `(a < b) < c`, so the text must say which; parentheses do:
//! `(a < b) < c`. The limit is one comparison per parenthesised expression, per call
//! argument and for the whole text, so `(x < y) < z`, `x < (y < z)` and
//! `select(x < 1, y, z < 2)` all parse. Nesting (parentheses, calls, signs, `**`) is
//! limited to [`MAX_DEPTH`] levels. The parser does not recurse, so no input, however
//! deeply nested, can exhaust the stack.
//!
//! Decisions on names: a **function name is reserved** — written without a call (`sin + 1`)
//! it is `bad_syntax`, never a symbol. **`pi`, `e`, `inf` and `nan` are not keywords**:
//! they are symbol names like any other, so a text wanting π writes the number.
//! **`powi(a, n)` takes an integer literal** (`3`, `-2`, `(4)`) as `n`: its exponent is
//! never differentiated, so anything else there ([`Syntax::PowiExponent`]) would get a
//! partial of 0 silently; `pow(a, n)` and `a ** n` differentiate both operands.
//!
//! A parsed [`Formula`] is independent of any model: [`model`] seals formulas into a
//! [`Model`] (one output each), and [`Formula::bind`] instantiates one inside a model
//! closure, as an [`Expr`] of the running arena, with some names bound to values.
//!
//! **Writing.** [`infix`] prints a node of a graph as the shortest text that parses back to
//! the same graph (see `print`); [`fn@dot`] draws a lane in Graphviz form.

mod diagnostic;
mod dot;
mod lexer;
mod names;
mod parser;
mod print;

pub use diagnostic::{escaped, quoted};
pub use diagnostic::{Expected, Location, Syntax};
pub use dot::dot;
pub use names::{is_invisible, is_nfkc, nfkc, why_not_a_name, KEYWORDS};
pub use parser::MAX_DEPTH;
pub use print::{infix, write_number, Infix, MAX_TEXT_NODES};

use crate::builder::{apply, var};
use crate::{Error, Expr, Graph, Model, NodeId, Op, SymbolId};
use rustc_hash::FxHashMap;
use std::fmt;
use std::str::FromStr;

/// The sign that negates, in operand position; the same spelling prints [`Op::Neg`].
pub(crate) const NEG_TOKEN: &str = "-";
/// The sign that does nothing, in operand position.
pub(crate) const PLUS_TOKEN: &str = "+";

/// Whether `name` is a name the grammar reads as one symbol, or as a user function's
/// name in a call: a Python identifier (a character of Unicode's `XID_Start` or `_`, then
/// characters of `XID_Continue`: `x`, `_t`, `α`, `θ1`, `θ_K`; not `x₁`, as in Python) in
/// NFKC form (`fi`, not `ﬁ`, which Python reads as `fi`), holding no invisible character
/// (`x\u{200d}`), no Python keyword (`lambda`) and no built-in function's name (`sin` in
/// a text is always the function); [`why_not_a_name`] says which rule another breaks. A
/// symbol of another name (`"a b"`, `"2x"`, `"sin"`) can be built by [`var`](crate::var)
/// but not written in a text, and the text an equation prints does not parse back.
pub fn is_name(name: &str) -> bool {
    why_not_a_name(name).is_none()
}

/// Parses each text, a call in them naming a built-in or one of `functions`
/// ([`Formula::parse_with`]).
///
/// # Errors
/// The first parse error, its [`Location::output`] set to the index of the text that
/// failed.
pub fn parse_all<S: AsRef<str>>(
    texts: &[S],
    functions: &crate::Functions,
) -> Result<Vec<Formula>, Error> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| Formula::parse_with(t.as_ref(), functions).map_err(|e| in_output(e, i)))
        .collect()
}

/// One step of a formula's postfix code.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Item {
    /// A literal.
    Number(f64),
    /// The formula's name at this index.
    Name(u32),
    /// An operation on the last `op.arity()` values; `flip` swaps the two of a comparison
    /// written `>` or `>=`.
    Apply { op: Op, flip: bool },
    /// A user function's call on the last `arity` values; `tag` names its value node
    /// (`crate::user`).
    User { tag: f64, arity: usize },
}

/// A parsed expression, not yet part of any model: postfix code over its free names.
///
/// Parse once, then seal into a model with [`model`], or instantiate as often as needed
/// inside a model closure with [`Formula::bind`] — the NIST fits instantiate one model
/// line per data point this way.
#[derive(Clone, Debug, PartialEq)]
pub struct Formula {
    text: String,
    code: Vec<Item>,
    names: Vec<String>,
}

impl Formula {
    /// Parses `text` (the grammar of the [module documentation](self)).
    ///
    /// # Errors
    /// - [`Error::BadSyntax`] where the text leaves the grammar (with what was expected and
    ///   what was found, or the particular refusal: `^`, a comparison chain, nesting past
    ///   [`MAX_DEPTH`], a function name without a call, …);
    /// - [`Error::UnknownFunction`] for a call of a name the operator table lacks, with the
    ///   nearest function name when one is close;
    /// - [`Error::WrongArgumentCount`] for a call with too few or too many arguments.
    ///
    /// Each carries the text and the byte offset of the problem.
    pub fn parse(text: &str) -> Result<Formula, Error> {
        parser::Parser::parse(text)
    }

    /// [`Formula::parse`], where a call may also name one of the user functions in
    /// `functions` (the registry passed to the parser): `f(x, y)` is then the call of
    /// [`crate::UserFunction`] `f`. A name the operator table has is always the table's.
    ///
    /// # Errors
    /// As [`Formula::parse`]; a call of a user function with the wrong number of
    /// arguments, or a set `functions` holding two different functions of one name
    /// ([`crate::Functions::check`]), is [`Error::UserFunction`].
    pub fn parse_with(text: &str, functions: &crate::Functions) -> Result<Formula, Error> {
        functions.check()?;
        parser::Parser::parse_with(text, Some(functions))
    }

    /// The text the formula was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The free names (the symbols it would have), in order of first appearance.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Runs the code into `sink`.
    fn run<S: Sink>(&self, sink: &mut S) -> Option<S::Value> {
        let mut stack: Vec<S::Value> = Vec::new();
        for item in &self.code {
            let v = match *item {
                Item::Number(v) => sink.number(v),
                Item::Name(i) => sink.name(i as usize),
                Item::Apply { op, flip } => {
                    let at = stack.len().checked_sub(op.arity())?;
                    if flip && op.arity() == 2 {
                        stack.swap(at, at + 1);
                    }
                    let v = sink.apply(op, &stack[at..]);
                    stack.truncate(at);
                    v
                }
                Item::User { tag, arity } => {
                    let at = stack.len().checked_sub(arity)?;
                    let v = sink.call(tag, &stack[at..]);
                    stack.truncate(at);
                    v
                }
            };
            stack.push(v);
        }
        debug_assert_eq!(stack.len(), 1, "postfix code leaves one value");
        stack.pop()
    }

    /// The formula as an [`Expr`] of the model closure running now, every name a symbol
    /// ([`crate::var`]). Outside a model closure the result is poisoned with
    /// [`Error::NoArena`], exactly as `var` is (unless the formula names nothing).
    pub fn expr(&self) -> Expr {
        self.bind::<f64>(&[])
    }

    /// The formula as an [`Expr`] of the model closure running now, each name listed in
    /// `bindings` replaced by its value (an `f64` or an `Expr`), every other name a symbol
    /// ([`crate::var`]). A binding for a name the formula does not use is ignored; a name
    /// bound twice takes the first value.
    ///
    /// Constants fold as they do in closure arithmetic, so a formula whose names are all
    /// bound to numbers is a constant.
    pub fn bind<V: Into<Expr> + Copy>(&self, bindings: &[(&str, V)]) -> Expr {
        let bound: Vec<Option<Expr>> = self
            .names
            .iter()
            .map(|n| {
                bindings
                    .iter()
                    .find(|(b, _)| *b == n)
                    .map(|&(_, v)| v.into())
            })
            .collect();
        let mut sink = ExprSink {
            names: &self.names,
            bound,
        };
        self.run(&mut sink).unwrap_or_default()
    }
}

impl FromStr for Formula {
    type Err = Error;
    /// [`Formula::parse`].
    fn from_str(text: &str) -> Result<Self, Error> {
        Formula::parse(text)
    }
}

impl fmt::Display for Formula {
    /// The text it was parsed from.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Where a formula's code is run.
trait Sink {
    type Value: Copy;
    fn number(&mut self, v: f64) -> Self::Value;
    fn name(&mut self, i: usize) -> Self::Value;
    fn apply(&mut self, op: Op, args: &[Self::Value]) -> Self::Value;
    /// The call of the user function whose value tag is `tag` on `args` (its arity).
    fn call(&mut self, tag: f64, args: &[Self::Value]) -> Self::Value;
}

/// Runs into a graph; names map to symbols through `symbols`.
struct GraphSink<'a> {
    graph: &'a mut Graph,
    symbols: Vec<SymbolId>,
}

impl Sink for GraphSink<'_> {
    type Value = NodeId;
    fn number(&mut self, v: f64) -> NodeId {
        self.graph.constant(v)
    }
    fn name(&mut self, i: usize) -> NodeId {
        self.graph.symbol(self.symbols[i])
    }
    fn apply(&mut self, op: Op, args: &[NodeId]) -> NodeId {
        self.graph.apply(op, args)
    }
    fn call(&mut self, tag: f64, args: &[NodeId]) -> NodeId {
        crate::user::call_in(self.graph, tag, args)
    }
}

/// Runs into the model closure's arena, through the same path as `Expr` arithmetic.
struct ExprSink<'a> {
    names: &'a [String],
    bound: Vec<Option<Expr>>,
}

impl Sink for ExprSink<'_> {
    type Value = Expr;
    fn number(&mut self, v: f64) -> Expr {
        Expr::from(v)
    }
    fn name(&mut self, i: usize) -> Expr {
        self.bound[i].unwrap_or_else(|| var(&self.names[i]))
    }
    fn apply(&mut self, op: Op, args: &[Expr]) -> Expr {
        apply(op, args)
    }
    fn call(&mut self, tag: f64, args: &[Expr]) -> Expr {
        crate::user::call_tagged(tag, args)
    }
}

/// Seals `formulas` into one model, output `i` being `formulas[i]`; a name shared by
/// several formulas is one symbol.
///
/// # Errors
/// - [`Error::NoOutputs`] when there are no formulas;
/// - [`Error::NoGraph`] when every output is a literal (none names a symbol).
pub fn model(formulas: &[Formula]) -> Result<Model, Error> {
    model_with_params(formulas, &[] as &[&str])
}

/// [`model`] where each name in `params` is a parameter (an input never differentiated,
/// see [`Model`]) and every other name a symbol. A listed name the formulas do not use is
/// a parameter all the same; a name listed twice is one parameter.
///
/// # Errors
/// As [`model`].
pub fn model_with_params<P: AsRef<str>>(
    formulas: &[Formula],
    params: &[P],
) -> Result<Model, Error> {
    if formulas.is_empty() {
        return Err(Error::NoOutputs);
    }
    let mut graph = Graph::new();
    let mut names: Vec<String> = Vec::new();
    let mut index: FxHashMap<&str, SymbolId> = FxHashMap::default();
    for p in params {
        index.entry(p.as_ref()).or_insert_with(|| {
            names.push(p.as_ref().to_string());
            SymbolId::from_index(names.len() - 1)
        });
    }
    let listed = names.len();
    let mut outputs = Vec::with_capacity(formulas.len());
    // A user function called at constant arguments is folded (run) here: a failure of
    // its code fails the model, as in the builder.
    let _ = crate::user::take_failure();
    for f in formulas {
        let symbols = f
            .names
            .iter()
            .map(|n| {
                *index.entry(n).or_insert_with(|| {
                    names.push(n.clone());
                    SymbolId::from_index(names.len() - 1)
                })
            })
            .collect();
        let mut sink = GraphSink {
            graph: &mut graph,
            symbols,
        };
        let out = f.run(&mut sink).ok_or(Error::NoGraph)?;
        outputs.push(out);
    }
    if let Some(e) = crate::user::take_failure() {
        return Err(e);
    }
    if outputs.iter().all(|&o| graph.constant_of(o).is_some()) {
        return Err(Error::NoGraph);
    }
    let is_param: Vec<bool> = (0..names.len()).map(|i| i < listed).collect();
    Ok(Model::seal_with_params(&graph, &outputs, names, &is_param))
}

/// Parses each text and seals them into one model: [`Formula::parse`], then [`model`].
///
/// # Errors
/// The first parse error, its [`Location::output`] set to the index of the text that
/// failed; else those of [`model`].
pub fn parse_model<S: AsRef<str>>(texts: &[S]) -> Result<Model, Error> {
    parse_model_with_params(texts, &[] as &[&str])
}

/// [`parse_model`] where each name in `params` is a parameter ([`model_with_params`]).
///
/// # Errors
/// As [`parse_model`].
pub fn parse_model_with_params<S: AsRef<str>, P: AsRef<str>>(
    texts: &[S],
    params: &[P],
) -> Result<Model, Error> {
    parse_model_with_functions(texts, params, &crate::Functions::new())
}

/// [`parse_model_with_params`] where a call may also name one of the user functions in
/// `functions` ([`Formula::parse_with`]).
///
/// # Errors
/// As [`parse_model`]; a user function called with the wrong number of arguments is
/// [`Error::UserFunction`].
pub fn parse_model_with_functions<S: AsRef<str>, P: AsRef<str>>(
    texts: &[S],
    params: &[P],
    functions: &crate::Functions,
) -> Result<Model, Error> {
    model_with_params(&parse_all(texts, functions)?, params)
}

/// A parse error of text `i` of several, saying so.
fn in_output(e: Error, i: usize) -> Error {
    match e {
        Error::BadSyntax { at, problem } => Error::BadSyntax {
            at: at.in_output(i),
            problem,
        },
        Error::UnknownFunction { at, name, nearest } => Error::UnknownFunction {
            at: at.in_output(i),
            name,
            nearest,
        },
        Error::WrongArgumentCount {
            at,
            function,
            expected,
            given,
        } => Error::WrongArgumentCount {
            at: at.in_output(i),
            function,
            expected,
            given,
        },
        other => other,
    }
}
