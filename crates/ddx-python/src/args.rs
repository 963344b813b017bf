//! Integer arguments from Python: orders, indices, counts and lane numbers, read as any
//! Python `int` and checked here, so that a negative or oversized one is a `ddx.Error`
//! naming the method and the argument rather than PyO3's bare `OverflowError`.
//!
//! A parameter typed [`Int`] accepts every `int` (and `int` subclasses such as `IntEnum`
//! members, `ddx.Want.HESSIAN`; NumPy integers through `__index__`) but a `bool`: `True`
//! is no order, index or count. Anything else (a `bool`, a `float`, a `str`) is read as
//! [`Int::Other`], which [`Int::within`] refuses with a `TypeError` naming the call, the
//! argument, its value and what is expected (`ddx.powi: n=2.0 is a float; the exponent
//! is an int from -2147483648 to 2147483647`). The range is checked by [`Int::within`],
//! which raises with
//! the code the call raises for the same argument out of range the other way (a column
//! index past the lane: `wrong_column_count`; an order past `ddx.MAX_ORDER`:
//! `order_too_high`, …).
//!
//! Invariant: no method of the package takes a Rust unsigned integer from Python directly;
//! each takes an [`Int`] and calls [`Int::within`].
//!
//! Real numbers likewise: a Python `int` past the `float64` range (|n| ≥ 2¹⁰²⁴, where
//! `float(n)` raises `OverflowError`) given as a value — a constant of a model, a point's
//! coordinate, a parameter's value, `x0` — is a `ddx.Error` `too_large` saying so
//! ([`real`]). A real number given as a method's argument (`x0`) is no `bool` either
//! ([`real_argument`]); data (points, columns, NumPy arrays of dtype `bool`) is read as
//! the batch calls document.

use crate::errors::raise;
use ddx::Errc;
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyInt};

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
    /// Not an `int` (a `float`, a `bool`, a `str`): refused by the range check, which
    /// knows the call and the argument's name.
    Other {
        /// `repr(value)`, clipped.
        repr: String,
        /// Its type with an article: `"a float"`.
        a_type: String,
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
        self.within_from(py, call, name, (0, max), code, meaning)
    }

    /// The value when it lies in `min..=max`; as [`Int::within`], whose range starts at 0
    /// (a value below `min` that is not negative "is too small").
    ///
    /// # Errors
    /// As [`Int::within`].
    pub(crate) fn within_from(
        &self,
        py: Python<'_>,
        call: &str,
        name: &str,
        (min, max): (usize, usize),
        code: Errc,
        meaning: &str,
    ) -> PyResult<usize> {
        let range = || {
            if max == usize::MAX && min == 0 {
                "a non-negative int".to_string()
            } else {
                format!("an int from {min} to {max}")
            }
        };
        let (fits, text) = match self {
            Int::Fits(v) => (
                usize::try_from(*v).ok().filter(|u| (min..=max).contains(u)),
                v.to_string(),
            ),
            Int::Huge { text, .. } => (None, text.clone()),
            Int::Other { .. } => return Err(self.not_int(call, name, meaning, &range())),
        };
        fits.ok_or_else(|| {
            let why = if self.negative() {
                "is negative"
            } else if matches!(self, Int::Fits(v) if (*v as u128) < min as u128) {
                "is too small"
            } else {
                "is too large"
            };
            let range = range();
            raise(
                py,
                code,
                format!("{code}: {call}: {name}={text} {why}; {meaning} is {range}"),
            )
        })
    }

    /// The value when it lies in `min..=max` (a signed argument: `powi`'s exponent).
    ///
    /// # Errors
    /// `ddx.Error` of `code` otherwise, its message as [`Int::within`]'s.
    pub(crate) fn signed_within(
        &self,
        py: Python<'_>,
        call: &str,
        name: &str,
        (min, max): (i64, i64),
        code: Errc,
        meaning: &str,
    ) -> PyResult<i64> {
        let (fits, text) = match self {
            Int::Fits(v) => (Some(*v).filter(|v| (min..=max).contains(v)), v.to_string()),
            Int::Huge { text, .. } => (None, text.clone()),
            Int::Other { .. } => {
                let range = format!("an int from {min} to {max}");
                return Err(self.not_int(call, name, meaning, &range));
            }
        };
        fits.ok_or_else(|| {
            let why = if self.negative() {
                "is too small"
            } else {
                "is too large"
            };
            raise(
                py,
                code,
                format!(
                    "{code}: {call}: {name}={text} {why}; {meaning} is an int from {min} to {max}"
                ),
            )
        })
    }

    /// The `TypeError` for a value that is no `int`, naming `call`, the argument `name`
    /// and its value, and saying what `meaning` is (`range`: `"an int from 1 to 256"`).
    fn not_int(&self, call: &str, name: &str, meaning: &str, range: &str) -> PyErr {
        let (repr, a_type) = match self {
            Int::Other { repr, a_type } => (repr.as_str(), a_type.as_str()),
            _ => ("?", "not an int"),
        };
        PyTypeError::new_err(format!(
            "{call}: {name}={repr} is {a_type}; {meaning} is {range}"
        ))
    }

    fn negative(&self) -> bool {
        match self {
            Int::Fits(v) => *v < 0,
            Int::Huge { negative, .. } => *negative,
            Int::Other { .. } => false,
        }
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for Int {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if obj.is_instance_of::<PyBool>() {
            return Ok(not_an_int(&obj));
        }
        match obj.extract::<i64>() {
            Ok(v) => Ok(Int::Fits(v)),
            Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => {
                let index = obj.call_method0("__index__")?;
                Ok(Int::Huge {
                    negative: index.lt(0)?,
                    text: index.str()?.to_string(),
                })
            }
            Err(e) if e.is_instance_of::<PyTypeError>(obj.py()) => Ok(not_an_int(&obj)),
            Err(e) => Err(e),
        }
    }
}

/// Something given where an `int` is expected, kept for the range check to refuse.
fn not_an_int(obj: &Bound<'_, PyAny>) -> Int {
    Int::Other {
        repr: repr(obj),
        a_type: a_type(obj),
    }
}

/// `repr(obj)` as a message quotes it ([`ddx::ir::text::quoted`]: clipped to 40
/// characters, nothing invisible; `?` when `repr` fails).
fn repr(obj: &Bound<'_, PyAny>) -> String {
    let r = obj
        .repr()
        .map_or_else(|_| "?".to_string(), |r| r.to_string());
    ddx::ir::text::quoted(&r)
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string())
}

/// `a float`, `a bool`, `a str`: the type of `obj` with its article, for messages.
fn a_type(obj: &Bound<'_, PyAny>) -> String {
    let t = type_name(obj);
    let an = t.starts_with(['a', 'e', 'i', 'o', 'u', 'A', 'E', 'I', 'O', 'U']);
    format!("{} {t}", if an { "an" } else { "a" })
}

/// The real number `obj` given as the argument `what` of a method (`"Equation.
/// univariate_derivative: x0"`), as [`real`] reads it, but no `bool`.
///
/// # Errors
/// `TypeError` for a `bool`, or anything `float()` does not read (a `str`, `None`, a
/// `complex`, an array of more than zero dimensions), naming `what`, the value and its
/// type (`Equation.univariate_derivatives: x0='0.5' is a str; a real number (a float or
/// an int) is expected`); `too_large` as [`real`] says.
pub(crate) fn real_argument(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    let not_real = || {
        PyTypeError::new_err(format!(
            "{what}={} is {}; a real number (a float or an int) is expected",
            repr(obj),
            a_type(obj)
        ))
    };
    if obj.is_instance_of::<PyBool>() {
        return Err(not_real());
    }
    match real(obj, what) {
        Err(e) if e.is_instance_of::<PyTypeError>(obj.py()) => Err(not_real()),
        r => r,
    }
}

/// The `f64` value of the Python real number `obj` (a `float`, an `int`, anything with
/// `__float__`), as `float(obj)` gives it.
///
/// # Errors
/// `ddx.Error` `too_large` for an `int` past the `float64` range, naming `what` (`"the
/// point"`, `"a constant of the model"`) and the int's size; otherwise the conversion's
/// own error (`TypeError` for something that is not a number).
pub(crate) fn real(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<f64> {
    match obj.extract::<f64>() {
        Ok(v) => Ok(v),
        Err(e) if e.is_instance_of::<PyOverflowError>(obj.py()) => Err(too_large(obj, what)),
        Err(e) => Err(e),
    }
}

fn too_large(obj: &Bound<'_, PyAny>, what: &str) -> PyErr {
    let py = obj.py();
    let int = if obj.is_instance_of::<PyInt>() {
        let digits = obj
            .str()
            .map_or(0, |s| s.to_string().trim_start_matches('-').len());
        format!("an int of {digits} digits")
    } else {
        "a number".to_string()
    };
    let code = Errc::TooLarge;
    raise(
        py,
        code,
        format!(
            "{code}: {what}: {int} is past the float64 range (magnitudes up to about \
             1.8e308), which a float64 cannot hold"
        ),
    )
}
