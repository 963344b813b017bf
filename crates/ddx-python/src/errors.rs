//! Errors across the boundary: the one conversion from [`ddx::Error`] (and from the checks
//! this module's callers make on Python input) to the Python exception `ddx.Error`.
//!
//! `ddx.Error` and the `errc` enum live in the pure-Python module `ddx._errors`, built from
//! [`names`]; this module imports it once and raises through it. The code of every error
//! is an `errc` member, found by its spelling ([`ddx::Errc::as_str`]), so the Rust and the
//! Python codes cannot drift apart: `errc` is numbered from 1 in the order of [`CODES`].
//!
//! The code is the Rust one; the message is respelled for Python ([`python_message`]):
//! the Rust library's texts name Rust items (`rt::equation`, `Backend::Device`,
//! `Options::answer_limit`, `Equation<Scalar>`, model *closures*), which a Python user has
//! never seen, so each is said as the Python package spells it (`ddx.equation`,
//! `Backend.DEVICE`, `Options.answer_limit`, a model *function*). The Rust messages stay
//! as they are for Rust users.

use ddx::{Errc, LaneKind, UserProblem};
use pyo3::exceptions::{PyException, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::collections::VecDeque;
use std::sync::Mutex;

/// Every code, in the order `errc` numbers them (from 1): the Rust declaration order.
pub(crate) const CODES: &[Errc] = Errc::ALL;

/// The spellings of [`CODES`], for `ddx._errors` to build `errc` from.
pub(crate) fn names() -> Vec<&'static str> {
    CODES.iter().map(|c| c.as_str()).collect()
}

/// `ddx._errors.Error`, imported on first use.
static ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The Python exception for `err`, its message in Python's spellings. A user function's
/// failure that was a Python exception ([`keep_raised`]) is chained: the `ddx.Error` has
/// it as `__cause__`; a `KeyboardInterrupt`, `SystemExit` or any other `BaseException`
/// that is not an `Exception` is answered itself, so Ctrl-C stops the program as usual.
pub(crate) fn to_py(err: ddx::Error) -> PyErr {
    Python::attach(|py| {
        let cause = match &err {
            ddx::Error::UserFunction {
                name,
                problem: UserProblem::Raised(message),
            } => take_raised(name, message),
            _ => None,
        };
        let cause = cause.map(|c| PyErr::from_value(c.into_bound(py)));
        if let Some(c) = &cause {
            if !c.is_instance_of::<PyException>(py) {
                return c.clone_ref(py);
            }
        }
        let e = raise(py, err.code(), python_message(&err));
        if cause.is_some() {
            e.set_cause(py, cause);
        }
        e
    })
}

/// The Python exceptions user functions raised lately, with the function's name and the
/// message their failure was reported with, for [`to_py`] to chain. A batch stops at its
/// first failure, but other worker threads may fail before they notice: their
/// exceptions are never asked for, so only the last [`RAISED_KEPT`] are kept.
static RAISED: Mutex<VecDeque<(String, String, Py<PyAny>)>> = Mutex::new(VecDeque::new());

/// How many exceptions [`RAISED`] keeps.
const RAISED_KEPT: usize = 32;

/// Keeps `exception`, raised by the user function `name` and reported with `message`,
/// for the `ddx.Error` of the call to chain.
pub(crate) fn keep_raised(py: Python<'_>, name: &str, message: &str, exception: PyErr) {
    let value = exception.into_value(py).into_any();
    let dropped = {
        let Ok(mut kept) = RAISED.lock() else {
            return;
        };
        kept.push_back((name.to_string(), message.to_string(), value));
        (kept.len() > RAISED_KEPT).then(|| kept.pop_front())
    };
    drop(dropped);
}

/// The exception kept for `name`'s failure reported with `message` (the latest such),
/// taken out.
fn take_raised(name: &str, message: &str) -> Option<Py<PyAny>> {
    let mut kept = RAISED.lock().ok()?;
    let at = kept
        .iter()
        .rposition(|(n, m, _)| n == name && m == message)?;
    kept.remove(at).map(|(_, _, e)| e)
}

/// The Python method that answers a lane's calls, for messages (`Equation.hessian`).
pub(crate) fn method_of(kind: LaneKind) -> &'static str {
    match kind {
        LaneKind::Value => "Equation.evaluate",
        LaneKind::Jacobian => "Equation.jacobian",
        LaneKind::Gradient => "Equation.gradient",
        LaneKind::Jvp => "Equation.jvp",
        LaneKind::Vjp => "Equation.vjp",
        LaneKind::Hessian => "Equation.hessian",
        LaneKind::Hvp => "Equation.hvp",
        _ => "Equation",
    }
}

/// Rust spellings in the library's free-text details, and how Python says each; applied
/// in order, longest first where one contains another.
const RESPELLED: &[(&str, &str)] = &[
    ("asked for Equation<Scalar>", "this equation has one output"),
    ("asked for Equation<System>", "this equation is a system"),
    ("Equation::<Scalar>::try_from", "ddx.equation"),
    ("`rt::equation`", "`ddx.equation`"),
    ("rt::equation", "ddx.equation"),
    ("rt::var", "ddx.var"),
    ("Backend::Device", "Backend.DEVICE"),
    ("Backend::Compile", "Backend.COMPILE"),
    ("Backend::Adapt", "Backend.ADAPT"),
    ("Backend::Interpret", "Backend.INTERPRET"),
    ("Options::answer_limit", "Options.answer_limit"),
    ("Options::", "Options."),
    ("LaneKind::", "ddx.Want."),
    (
        "this build of ddx has no device backend (cargo feature \"opencl\")",
        "this build of ddx has no device backend (ddx.has_opencl is False)",
    ),
    ("model closure", "model function"),
    ("closure", "model function"),
    ("Vec<f64>", "float64 array"),
    ("&[f64]", "float64 array"),
];

/// `text` with every Rust spelling of [`RESPELLED`] replaced.
fn respell(text: String) -> String {
    RESPELLED.iter().fold(text, |t, (rust, python)| {
        if t.contains(rust) {
            t.replace(rust, python)
        } else {
            t
        }
    })
}

/// The message Python shows for `err`: its code, then the text in Python's terms.
pub(crate) fn python_message(err: &ddx::Error) -> String {
    use ddx::Error as E;
    match err {
        E::NoArena => "no_arena: an expression was made outside a model: call ddx.var, and \
                       combine expressions, inside the function passed to ddx.equation"
            .into(),
        E::SealedArena => "sealed_arena: an expression was used outside the model function \
                           that made it, which has already returned or is running on another \
                           thread; build every expression inside the function passed to \
                           ddx.equation, on the thread that calls it"
            .into(),
        E::ForeignExpression => "foreign_expression: an expression of an enclosing model was \
                                 used inside a nested ddx.equation; each model's expressions \
                                 stay in its own function"
            .into(),
        E::TooLarge {
            call,
            values,
            limit,
        } => format!(
            "too_large: {} would answer {}, more than the limit of {limit} \
             (Options.answer_limit: raise it by assigning eq.options, e.g. \
             eq.options = eq.options.model_copy(update={{\"answer_limit\": {values}}}))",
            python_call(call),
            ddx::ir::words::count(*values, "value")
        ),
        E::NotScalar { call, outputs } => format!(
            "not_scalar: {} needs an equation of one output; this one has {outputs}",
            python_call(call)
        ),
        E::UnboundParameter { name } => {
            let name = ddx::ir::text::quoted(name);
            format!(
                "short_point: parameter `{name}` has no value: bind the parameters first, \
                 with Equation.with_params (eq = eq.with_params({{\"{name}\": ...}})), or give \
                 them per point in a batch (rows after the symbol rows of an (n + q, points) \
                 array, or entries of a dict of rows by name)"
            )
        }
        other => respell(other.to_string()),
    }
}

/// A Rust call name in a message as Python names it: a lane's (`"hvp"`) is the method of
/// `Equation`; one already spelled for Python (`"Equation.hvp"`) stays.
fn python_call(call: &str) -> String {
    match LaneKind::ALL.iter().find(|k| k.name() == call) {
        Some(&k) => method_of(k).to_string(),
        None => respell(call.to_string()),
    }
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
