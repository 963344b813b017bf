//! Integer arguments from Python: orders, indices, counts and lane numbers, read as any
//! Python `int` and checked here, so that a negative or oversized one is a `ddx.Error`
//! naming the method and the argument rather than PyO3's bare `OverflowError`.
//!
//! A parameter typed [`Int`] accepts every `int` (and `int` subclasses: `bool`, `IntEnum`
//! members such as `ddx.Want.HESSIAN`, NumPy integers through `__index__`); a value that
//! is not an integer stays Python's `TypeError` (`argument 'k': 'float' object cannot be
//! interpreted as an integer`). The range is checked by [`Int::within`], which raises with
//! the code the call raises for the same argument out of range the other way (a column
//! index past the lane: `wrong_column_count`; an order past `ddx.MAX_ORDER`:
//! `order_too_high`, …).
//!
//! Invariant: no method of the package takes a Rust unsigned integer from Python directly;
//! each takes an [`Int`] and calls [`Int::within`].

use crate::errors::raise;
use ddx::Errc;
use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;

/// A Python `int` as given: its value when it fits an `i64`, else its decimal text.
#[derive(Clone, Debug)]
pub(crate) enum Int {
    /// The value.
    Fits(i64),
    /// Past the `i64` range: its sign and its text.
    Huge {
        /// Below zero.
        negative: bool,
        /// `str(value)`.
        text: String,
    },
}

impl Int {
    /// `want = 1` (`ddx.Want.JACOBIAN`): the default lane of `nodes`, `buffer`, ….
    pub(crate) const JACOBIAN: Int = Int::Fits(1);
    /// `0`: a default first index.
    pub(crate) const ZERO: Int = Int::Fits(0);

    /// The value when it lies in `0..=max`.
    ///
    /// # Errors
    /// `ddx.Error` of `code` otherwise, its message naming `call` (the Python method, e.g.
    /// `"Equation.univariate_derivative"`), the argument `name` and its value, and saying
    /// what `meaning` is (`"a derivative order"`) and its range (`max` = `usize::MAX`: no
    /// bound but the machine's, left to the call to check).
    pub(crate) fn within(
        &self,
        py: Python<'_>,
        call: &str,
        name: &str,
        max: usize,
        code: Errc,
        meaning: &str,
    ) -> PyResult<usize> {
        let (fits, text) = match self {
            Int::Fits(v) => (
                usize::try_from(*v).ok().filter(|&u| u <= max),
                v.to_string(),
            ),
            Int::Huge { text, .. } => (None, text.clone()),
        };
        fits.ok_or_else(|| {
            let why = if self.negative() {
                "is negative"
            } else {
                "is too large"
            };
            let range = if max == usize::MAX {
                "a non-negative int".to_string()
            } else {
                format!("an int from 0 to {max}")
            };
            raise(
                py,
                code,
                format!("{code}: {call}: {name}={text} {why}; {meaning} is {range}"),
            )
        })
    }

    fn negative(&self) -> bool {
        match self {
            Int::Fits(v) => *v < 0,
            Int::Huge { negative, .. } => *negative,
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Int {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match obj.extract::<i64>() {
            Ok(v) => Ok(Int::Fits(v)),
            Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
                let index = obj.call_method0("__index__")?;
                Ok(Int::Huge {
                    negative: index.lt(0)?,
                    text: index.str()?.to_string(),
                })
            }
            Err(e) => Err(e),
        }
    }
}
