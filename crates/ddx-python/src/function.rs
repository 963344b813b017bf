//! `ddx.Function`: a user function written in Python, with its own partials (the Rust
//! [`UserFunction`] around Python callables).
//!
//! `ddx.function(name, arity, value, first, second=None)` registers it; calling the
//! `Function` on expressions in a model callable (`f(x, y)`) makes the call node, and a
//! text equation reaches it through `ddx.equation(text, functions=[f])`.
//!
//! **Calls into Python.** The Rust closures take the GIL ([`Python::attach`]) for each call
//! of user code: the thread making a single-point call already holds it; batch calls run
//! with it released, so their worker threads take it in turn (a batch through a Python
//! function runs at the speed of one thread). The interpreter and the JIT reach these
//! closures through the same entries (`ddx_ir::user::call` for one or two arguments,
//! `call_slice`/`call_n` for more), so both engines call the same Python code with the
//! same arguments and agree to the bit.
//!
//! **Failures.** A Python exception raised by user code (or an answer that is not the
//! numbers asked for) is reported with [`ddx::ir::user::report`] and the closure returns
//! NaN; the call then answers `ddx.Error` with code `user_function` naming the function
//! and quoting the exception. Nothing unwinds and no Python exception is left set.
//!
//! Invariant: the callables are held for the life of the process (the registry of user
//! functions only grows), so they are never dropped without the GIL.

use crate::errors::{raise, OrRaise};
use crate::expression::{argument, Expression};
use ddx::ir::user::report;
use ddx::ir::{UserFunction, UserProblem};
use ddx::{Errc, Expr};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyTuple};

/// A registered user function: `ddx.Function`.
#[pyclass(frozen, module = "ddx", name = "Function")]
pub(crate) struct Function {
    pub(crate) f: UserFunction,
}

/// The numbers `obj` holds, flattened one level (a float; a sequence of floats; a
/// sequence of sequences, for second partials), into `out`; a message saying what was
/// wrong otherwise.
fn numbers(obj: &Bound<'_, PyAny>, out: &mut [f64]) -> Result<(), String> {
    let number = |o: &Bound<'_, PyAny>| -> Option<f64> {
        if o.is_instance_of::<PyFloat>() || o.is_instance_of::<PyInt>() {
            return o.extract::<f64>().ok();
        }
        // NumPy scalars and 0-d arrays: `__float__` without a length.
        if o.hasattr("__float__").unwrap_or(false) && !o.hasattr("__len__").unwrap_or(true) {
            return o.extract::<f64>().ok();
        }
        None
    };
    if let Some(v) = number(obj) {
        if out.len() == 1 {
            out[0] = v;
            return Ok(());
        }
        return Err(format!(
            "returned one number where {} are needed",
            out.len()
        ));
    }
    let mut got = 0usize;
    let mut push = |v: f64| {
        if let Some(cell) = out.get_mut(got) {
            *cell = v;
        }
        got += 1;
    };
    let items = obj
        .try_iter()
        .map_err(|_| format!("returned {}, not numbers", type_name(obj)))?;
    for item in items {
        let item = item.map_err(|e| format!("returned a sequence that failed: {e}"))?;
        if let Some(v) = number(&item) {
            push(v);
            continue;
        }
        let row = item
            .try_iter()
            .map_err(|_| format!("returned a sequence holding {}", type_name(&item)))?;
        for v in row {
            let v = v.map_err(|e| format!("returned a sequence that failed: {e}"))?;
            push(
                number(&v)
                    .ok_or_else(|| format!("returned a sequence holding {}", type_name(&v)))?,
            );
        }
    }
    if got != out.len() {
        return Err(format!(
            "returned {got} numbers where {} are needed",
            out.len()
        ));
    }
    Ok(())
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string())
}

/// Calls `callable(*x)` with the GIL, writing its numbers into `out`; a failure is
/// reported for `name` (`role` says which callable) and `out` is filled with NaN.
fn run(name: &str, role: &str, callable: &Py<PyAny>, x: &[f64], out: &mut [f64]) {
    Python::attach(|py| {
        let answer = PyTuple::new(py, x)
            .and_then(|args| callable.bind(py).call1(args))
            .map_err(|e| format!("`{role}` raised {e}"))
            .and_then(|r| numbers(&r, out).map_err(|m| format!("`{role}` {m}")));
        if let Err(message) = answer {
            report(name, message);
            out.fill(f64::NAN);
        }
    });
}

/// The error for a callable argument that is not callable.
fn not_callable(role: &str, obj: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "ddx.function: `{role}` must be callable, got {}",
        type_name(obj)
    ))
}

/// Registers the user function `name` of `arity` arguments (1 to
/// [`ddx::ir::user::MAX_ARITY`]): `value(*x)` answers its value (a float), `first(*x)` its
/// `arity` first partials (a sequence; a float when `arity` is 1) and `second(*x)`, when
/// given, its `arity × arity` second partials (nested or flat, row-major, symmetric; a
/// float when `arity` is 1). Each is called with the GIL, with one float per argument;
/// they must be pure (a call may run any number of times, and each call of a partial runs
/// the whole `first` or `second` and keeps one entry).
///
/// Raises `ddx.Error` `user_function` for an arity of 0 or above the maximum, or a name
/// that is not an identifier or is a built-in function's; `TypeError` when a callable is
/// not.
#[pyfunction]
#[pyo3(signature = (name, arity, value, first, second = None))]
fn function(
    py: Python<'_>,
    name: &str,
    arity: crate::args::Int,
    value: &Bound<'_, PyAny>,
    first: &Bound<'_, PyAny>,
    second: Option<&Bound<'_, PyAny>>,
) -> PyResult<Function> {
    for (role, c) in [
        ("value", Some(value)),
        ("first", Some(first)),
        ("second", second),
    ] {
        if let Some(c) = c {
            if !c.is_callable() {
                return Err(not_callable(role, c));
            }
        }
    }
    // 0 is refused by `UserFunction::new`; too large or negative here.
    let arity = arity.within(
        py,
        "ddx.function",
        "arity",
        ddx::ir::user::MAX_ARITY,
        ddx::Errc::UserFunction,
        "an argument count",
    )?;
    let (v, g) = (value.clone().unbind(), first.clone().unbind());
    let (n1, n2) = (name.to_string(), name.to_string());
    let f = UserFunction::new(
        name,
        arity,
        move |x| {
            let mut out = [0.0];
            run(&n1, "value", &v, x, &mut out);
            out[0]
        },
        move |x, out| run(&n2, "first", &g, x, out),
    )
    .or_raise()?;
    let f = match second {
        Some(h) => {
            let (h, n3) = (h.clone().unbind(), name.to_string());
            f.with_second(move |x, out| run(&n3, "second", &h, x, out))
                .or_raise()?
        }
        None => f,
    };
    Ok(Function { f })
}

#[pymethods]
impl Function {
    /// Refused: functions are made by `ddx.function`.
    #[new]
    fn py_new() -> PyResult<Self> {
        Err(PyTypeError::new_err(
            "make a user function with ddx.function(name, arity, value, first, second=None)",
        ))
    }

    /// The call `f(*args)` in the model being built: one `Expression` or number per
    /// argument. Raises `ddx.Error` `user_function` for the wrong number of arguments.
    #[pyo3(signature = (*args))]
    fn __call__(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Expression> {
        if args.len() != self.f.arity() {
            let e = ddx::Error::UserFunction {
                name: self.f.name().to_string(),
                problem: UserProblem::ArgumentCount(args.len()),
            };
            return Err(raise(py, Errc::UserFunction, e.to_string()));
        }
        let mut xs: Vec<Expr> = Vec::with_capacity(args.len());
        for a in args.iter() {
            xs.push(argument(&a)?);
        }
        Ok(Expression(self.f.call(&xs)))
    }

    /// The function's name.
    #[getter]
    fn name(&self) -> String {
        self.f.name().to_string()
    }

    /// How many arguments it takes.
    #[getter]
    fn arity(&self) -> usize {
        self.f.arity()
    }

    /// Whether it has second partials (so Hessians through it are answered).
    #[getter]
    fn has_second(&self) -> bool {
        self.f.has_second()
    }

    fn __repr__(&self) -> String {
        format!(
            "ddx.Function({:?}, arity={}{})",
            self.f.name(),
            self.f.arity(),
            if self.f.has_second() { ", second" } else { "" }
        )
    }
}

/// The registry the text parser reads: each function under its name. Two different
/// functions of one name make the parse fail with `user_function`
/// ([`ddx::ir::Functions::check`]); the same function twice is one.
pub(crate) fn registry(functions: &[Bound<'_, Function>]) -> ddx::ir::Functions {
    let mut r = ddx::ir::Functions::new();
    for f in functions {
        r.add(&f.get().f);
    }
    r
}

/// Adds `Function` and `function` to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Function>()?;
    m.add_function(wrap_pyfunction!(function, m)?)?;
    Ok(())
}
