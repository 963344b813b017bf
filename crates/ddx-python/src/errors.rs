//! Errors across the boundary: the one conversion from [`ddx::Error`] (and from the checks
//! this module's callers make on Python input) to the Python exception `ddx.Error`.
//!
//! `ddx.Error` and the `errc` enum live in the pure-Python module `ddx._errors`, built from
//! [`names`]; this module imports it once and raises through it. The code of every error
//! is an `errc` member, found by its spelling ([`ddx::Errc::as_str`]), so the Rust and the
//! Python codes cannot drift apart: `errc` is numbered from 1 in the order of [`CODES`].

use ddx::Errc;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

/// Every code, in the order `errc` numbers them (from 1): the Rust declaration order.
pub(crate) const CODES: &[Errc] = Errc::ALL;

/// The spellings of [`CODES`], for `ddx._errors` to build `errc` from.
pub(crate) fn names() -> Vec<&'static str> {
    CODES.iter().map(|c| c.as_str()).collect()
}

/// `ddx._errors.Error`, imported on first use.
static ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The Python exception for `err`.
pub(crate) fn to_py(err: ddx::Error) -> PyErr {
    Python::attach(|py| raise(py, err.code(), err.to_string()))
}

/// A `ddx.Error` with `code` and `message`, for a check made on the Python side of a call
/// (an array of the wrong shape or dtype) before any Rust call could report it.
pub(crate) fn raise(py: Python<'_>, code: Errc, message: String) -> PyErr {
    let made = ERROR
        .get_or_try_init(py, || {
            py.import("ddx._errors")
                .and_then(|m| m.getattr("_make"))
                .map(Bound::unbind)
        })
        .and_then(|make| make.bind(py).call1((code.as_str(), message.as_str())));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(_) => PyRuntimeError::new_err(format!("{}: {message}", code.as_str())),
    }
}

/// Extension for `Result<T, ddx::Error>`: `?` into a `PyResult`.
pub(crate) trait OrRaise<T> {
    /// The value, or the error as `ddx.Error`.
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for Result<T, ddx::Error> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
