//! Equations written as text: the same [`Equation`] a model closure builds, from a string.
//!
//! The grammar is Python's arithmetic over the functions of the expression table; see
//! [`ddx_ir::text`] for all of it. In short: `+ - * /`, `**` (right-associative, binding
//! tighter than a sign on its left: `-x**2` is `-(x**2)`, `2**-1` is legal), signs,
//! parentheses, decimals and exponent notation, calls such as `sin(x)`, `pow(a, b)`,
//! `select(c, t, f)`, and comparisons (`< <= > >= == !=`), binding loosest, which do not
//! chain: at most one per parenthesised expression or call argument, so `a < b < c` is
//! refused while `(x < y) < z` and `select(x < 1, y, z < 2)` parse. `^` is refused. Free
//! names are the symbols, ordered by the bytes of the name (`B` before `a`, `x10` before
//! `x2`); function names are reserved, and `pi`, `e`, `inf`, `nan` are ordinary symbol
//! names.

use crate::{Equation, Error, Expr, Formula, Scalar, System};
use std::str::FromStr;

/// The scalar equation `text` describes, e.g. `"sin(x)*y + 3"`.
///
/// # Errors
/// - [`Error::BadSyntax`], [`Error::UnknownFunction`], [`Error::WrongArgumentCount`] when the
///   text does not parse (each says where, with a caret under the input);
/// - [`Error::NoGraph`] when it parses but names no symbol (`"2 + 3"`).
///
/// ```
/// use ddx::rt;
///
/// let eq = rt::equation_text("sin(x)*y + 3")?;
/// assert_eq!(eq.symbols(), ["x", "y"]);
/// assert_eq!(eq.evaluate([0.0, 2.0])?, 3.0);
/// assert_eq!(eq.to_string(), "f0: sin(x) * y + 3\n  d/dx: y * cos(x)\n  d/dy: sin(x)");
///
/// let err = rt::equation_text("x ^ 2").unwrap_err();
/// assert_eq!(err.code(), ddx::Errc::BadSyntax);
/// assert!(err.to_string().ends_with("    x ^ 2\n      ^"));
/// # Ok::<(), ddx::Error>(())
/// ```
pub fn equation_text(text: &str) -> Result<Equation<Scalar>, Error> {
    let model = ddx_ir::text::model(&[Formula::parse(text)?])?;
    Ok(Equation::from_model(model))
}

/// The system whose function `i` is `texts[i]`, e.g. `["x*x + y*y - 4", "x*y - 1"]`; a
/// name used in several texts is one symbol.
///
/// # Errors
/// - the first parse error, as [`equation_text`], saying which text failed: its
///   [`Location::output`](crate::ir::text::Location::output) is the text's index in
///   `texts`, and the message reads `in text 1, at byte 4:` above the caret;
/// - [`Error::NoOutputs`] when there are no texts;
/// - [`Error::NoGraph`] when no text names a symbol (every output is a literal).
pub fn system_text<S: AsRef<str>>(texts: &[S]) -> Result<Equation<System>, Error> {
    Ok(Equation::from_model(ddx_ir::text::parse_model(texts)?))
}

/// The scalar equation `text` describes, with each name in `params` a parameter (an
/// input never differentiated, bound with [`Equation::with_params`]) and every other
/// free name a symbol. A listed name the text does not use is a parameter all the same.
///
/// ```
/// let eq = ddx::rt::equation_text_with_params("k * x**2", &["k"])?;
/// assert_eq!((eq.symbols(), eq.parameters()), (&["x".to_string()][..], &["k".to_string()][..]));
/// assert_eq!(eq.with_params([3.0])?.gradient([2.0])?, [12.0]);
/// # Ok::<(), ddx::Error>(())
/// ```
///
/// # Errors
/// As [`equation_text`].
pub fn equation_text_with_params<P: AsRef<str>>(
    text: &str,
    params: &[P],
) -> Result<Equation<Scalar>, Error> {
    let model = ddx_ir::text::model_with_params(&[Formula::parse(text)?], params)?;
    Ok(Equation::from_model(model))
}

/// The scalar equation `text` describes, where a call may also name one of the user
/// functions in `functions` ([`Formula::parse_with`]): `"xexp(a, b) - sin(a)"`.
///
/// # Errors
/// As [`equation_text`]; [`Error::UserFunction`] for a call of a user function with the
/// wrong number of arguments.
pub fn equation_text_with_functions(
    text: &str,
    functions: &crate::Functions,
) -> Result<Equation<Scalar>, Error> {
    let model = ddx_ir::text::model(&[Formula::parse_with(text, functions)?])?;
    Ok(Equation::from_model(model))
}

/// The system of `texts` ([`system_text`]) with each name in `params` a parameter
/// ([`equation_text_with_params`]).
///
/// # Errors
/// As [`system_text`].
pub fn system_text_with_params<S: AsRef<str>, P: AsRef<str>>(
    texts: &[S],
    params: &[P],
) -> Result<Equation<System>, Error> {
    Ok(Equation::from_model(ddx_ir::text::parse_model_with_params(
        texts, params,
    )?))
}

/// Parses `text` inside a model closure into an [`Expr`] of the model being built: each
/// name listed in `bindings` becomes its value (an `f64` or an `Expr`), every other name the
/// symbol [`rt::var`](crate::rt::var) of that name.
///
/// To instantiate one text many times (once per data point), parse it once with
/// [`Formula::parse`] outside the closure and call [`Formula::bind`] inside it. With no
/// bindings the value type cannot be inferred: write `rt::parse_expr::<f64>(text, &[])`,
/// or `Formula::parse(text)?.expr()`.
///
/// # Errors
/// The parse errors of [`equation_text`]. Outside a model closure the parse still succeeds
/// and answers a handle poisoned with [`Error::NoArena`], as `rt::var` does.
pub fn parse_expr<V: Into<Expr> + Copy>(text: &str, bindings: &[(&str, V)]) -> Result<Expr, Error> {
    Ok(Formula::parse(text)?.bind(bindings))
}

impl FromStr for Equation<Scalar> {
    type Err = Error;
    /// [`equation_text`]: `let eq: Equation = "x * y".parse()?;`.
    fn from_str(text: &str) -> Result<Self, Error> {
        equation_text(text)
    }
}
