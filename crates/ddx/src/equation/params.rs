//! Parameters: inputs of a model that are never differentiated (`rt::param`).
//!
//! A parameter is read like a symbol (the lanes' input block is `[symbols | parameters |
//! seeds]`, see [`ddx_ir::Lane`]), but no lane has a partial, a pattern cell or a Hessian
//! row for it. Its values are *bound*: [`Equation::with_params`] answers a clone of the
//! equation — sharing the graph, every lane built and every compiled kernel — that reads
//! those values in every per-point call. Binding other values is a copy of `p` numbers:
//! nothing is rebuilt and nothing compiles again, since kernels read parameters as inputs.
//!
//! Batch calls take the parameters as columns after the symbol columns (each as long as
//! the batch, or of length 1 and broadcast), or, given only the symbol columns, broadcast
//! the bound values (`crate::batch`).
//!
//! What each part of ddx does with parameters: the interpreter, the JIT and the OpenCL
//! device read them from the input block like symbols (a device batch with a broadcast
//! column gets that column spelled out at the batch's length, since the device reads whole
//! columns); saving keeps the parameter names with the equation (archive format 2), and a
//! loaded equation has them unbound; the Python package has `ddx.param`, `params=` for
//! text, `Equation.parameters` and `Equation.with_params` (its batches broadcast the bound
//! values; parameter columns are Rust-only); emitted source takes the parameters after the
//! symbols in `x`. The CLI does not yet name parameters.
//!
//! A parameter bound to `v` answers the bits of the model built with the literal `v`, with
//! one exception by design: a literal `0` makes the partials it multiplies *structural*
//! zeros (no pattern cell, answered `+0`, see DESIGN's "literal zeros are structural"),
//! while a parameter whose value is `0` is arithmetic like any other input — its products
//! are computed, so they may be `-0`, or NaN beside an infinite factor. The pattern of an
//! equation never depends on the values bound.
//!
//! **Invariant**: `Equation::bound` is empty (unbound) or exactly `p` values long.

use super::{Equation, Shape};
use crate::point::Point;
use ddx_ir::Error;
use std::sync::Arc;

impl<S: Shape> Equation<S> {
    /// The parameter names in canonical order (byte order of the name): the order
    /// [`Equation::with_params`] reads positional values in, and batch calls their
    /// parameter columns. Empty for a model without parameters.
    pub fn parameters(&self) -> &[String] {
        self.lanes.model.parameters()
    }

    /// The parameter count `p`.
    pub fn param_count(&self) -> usize {
        self.lanes.model.param_count()
    }

    /// The values bound to the parameters (`p` of them, in canonical order), or `None`
    /// while none are bound.
    pub fn bound_params(&self) -> Option<&[f64]> {
        (self.param_count() == 0 || !self.bound.is_empty()).then_some(&self.bound[..])
    }

    /// This equation with its parameters bound to `values` (one per parameter, in any
    /// [`Point`] spelling: positional in the order of [`Equation::parameters`], or
    /// `(name, value)` pairs). Every per-point call of the answer reads them. The answer
    /// shares everything built so far with `self` (the graph, the lanes, the kernels and
    /// any compile in flight): binding builds nothing and compiles nothing.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let eq = rt::equation(|| rt::param("k") * rt::var("x") * rt::var("x"))?;
    /// assert_eq!(eq.symbols(), ["x"]);
    /// assert_eq!(eq.parameters(), ["k"]);
    /// let k3 = eq.with_params([3.0])?;
    /// assert_eq!(k3.gradient([2.0])?, [12.0]); // d/dx k·x² = 2kx; no partial in k
    /// assert_eq!(eq.with_params([("k", 0.5)])?.evaluate([2.0])?, 2.0);
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Equation::point`] for the parameters: [`Error::WrongArity`],
    /// [`Error::ShortPoint`], [`Error::MissingSymbol`], [`Error::UnknownSymbol`],
    /// [`Error::DuplicateSymbol`] (the words say "symbol" for a parameter too).
    pub fn with_params(&self, values: impl Point) -> Result<Equation<S>, Error> {
        let mut eq = self.clone();
        eq.set_params(values)?;
        Ok(eq)
    }

    /// Binds the parameters to `values` in place (as [`Equation::with_params`]); on an
    /// error the binding is left as it was.
    ///
    /// # Errors
    /// As [`Equation::with_params`].
    pub fn set_params(&mut self, values: impl Point) -> Result<&mut Self, Error> {
        let mut v = vec![0.0; self.param_count()];
        values.fill(self.parameters(), &mut v)?;
        self.bound = Arc::from(v);
        Ok(self)
    }

    /// Writes the bound parameters into `out` (`p` long).
    ///
    /// # Errors
    /// [`Error::UnboundParameter`] when `p > 0` and none are bound.
    pub(crate) fn fill_params(&self, out: &mut [f64]) -> Result<(), Error> {
        if out.is_empty() {
            return Ok(());
        }
        if self.bound.len() != out.len() {
            return Err(self.unbound());
        }
        out.copy_from_slice(&self.bound);
        Ok(())
    }

    /// The error for a call that needs the parameters while none are bound.
    pub(crate) fn unbound(&self) -> Error {
        Error::UnboundParameter {
            name: self.parameters().first().cloned().unwrap_or_default(),
        }
    }
}
