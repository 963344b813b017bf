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

use crate::errors::{keep_raised, raise, OrRaise};
use crate::expression::{argument, Expression};
use ddx::ir::user::report;
use ddx::ir::words::{agree, count, real};
use ddx::ir::{UserFunction, UserProblem};
use ddx::{Errc, Expr};
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyTuple};

/// A registered user function: `ddx.Function`.
#[pyclass(frozen, module = "ddx", name = "Function")]
pub(crate) struct Function {
    pub(crate) f: UserFunction,
    /// The callables it was made from, `value`, `first`, `second`: what pickling it
    /// (with `cloudpickle`, which pickles functions by value) carries.
    value: Py<PyAny>,
    first: Py<PyAny>,
    second: Option<Py<PyAny>>,
}

/// Which callable of a user function answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// `value`: one number.
    Value,
    /// `first`: `k` numbers, flat (one number when `k` is 1).
    First,
    /// `second`: `k × k` numbers, as `k` rows of `k` or flat row-major (one number when
    /// `k` is 1); symmetric.
    Second,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Value => "value",
            Role::First => "first",
            Role::Second => "second",
        }
    }
}

/// The largest difference allowed between `h[i][j]` and `h[j][i]` of a `second`, in
/// units of the float64 epsilon (2⁻⁵²) times the largest finite magnitude in the matrix: 16·ε
/// covers partials written as two formulas that agree mathematically but round apart
/// (`∂²f/∂x∂y` and `∂²f/∂y∂x` generated separately), and no more.
pub(crate) const SYMMETRY_ULPS: f64 = 16.0;

/// One number: a `float`, an `int`, or anything with `__float__` and no length (NumPy
/// scalars) or a 0-d NumPy array; `Ok(None)` when `o` is none of these; a message for an
/// `int` past the float64 range.
fn number(o: &Bound<'_, PyAny>) -> Result<Option<f64>, String> {
    let plain = o.is_instance_of::<PyFloat>() || o.is_instance_of::<PyInt>();
    let zero_d = o.cast::<PyUntypedArray>().is_ok_and(|a| a.ndim() == 0);
    let scalar = plain
        || zero_d
        || (o.hasattr("__float__").unwrap_or(false) && !o.hasattr("__len__").unwrap_or(true));
    if !scalar {
        return Ok(None);
    }
    match o.extract::<f64>() {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_instance_of::<PyOverflowError>(o.py()) => {
            Err("returned an int past the float64 range (too_large)".to_string())
        }
        Err(e) => Err(format!(
            "returned {} that is not a number ({e})",
            type_name(o)
        )),
    }
}

/// The numbers `obj` holds as `role` answers them for a function of `k` arguments, into
/// `out` (`1`, `k` or `k²` long); a message saying what was wrong otherwise. The formats:
/// - `value`: one number (a `float`, an `int`, a NumPy scalar or 0-d array);
/// - `first`: an iterable of `k` numbers (a list, a tuple, a 1-D NumPy array, a
///   generator), or one number when `k` is 1;
/// - `second`: an iterable of `k` rows, each an iterable of `k` numbers (nested lists, a
///   2-D NumPy array), or of `k²` numbers flat, row-major; one number when `k` is 1.
fn numbers(obj: &Bound<'_, PyAny>, role: Role, k: usize, out: &mut [f64]) -> Result<(), String> {
    if let Some(v) = number(obj)? {
        if out.len() == 1 {
            out[0] = v;
            return Ok(());
        }
        return Err(format!(
            "returned one number where {} {} needed",
            out.len(),
            agree(out.len(), "is", "are")
        ));
    }
    let needs = match role {
        Role::Value => "one number (a float, an int or a NumPy scalar)".to_string(),
        Role::First => format!("{}, flat", count(k, "number")),
        Role::Second => format!(
            "{} of {}, or {} flat",
            count(k, "row"),
            count(k, "number"),
            count(k * k, "number")
        ),
    };
    if role == Role::Value {
        return Err(format!("returned {}, not {needs}", type_name(obj)));
    }
    let items = obj
        .try_iter()
        .map_err(|_| format!("returned {}, not {needs}", type_name(obj)))?;
    let failed = |e: PyErr| format!("returned an iterable that failed: {e}");
    let (mut got, needed) = (0usize, out.len());
    let mut push = |got: &mut usize, v: f64| {
        if let Some(cell) = out.get_mut(*got) {
            *cell = v;
        }
        *got += 1;
    };
    let (mut flat, mut rows) = (false, 0usize);
    for item in items {
        let item = item.map_err(failed)?;
        if let Some(v) = number(&item)? {
            flat = true;
            push(&mut got, v);
            continue;
        }
        if role == Role::First {
            return Err(format!(
                "returned a sequence holding {}, not {needs}",
                type_name(&item)
            ));
        }
        rows += 1;
        let row = item.try_iter().map_err(|_| {
            format!(
                "returned a sequence holding {}, not {needs}",
                type_name(&item)
            )
        })?;
        let before = got;
        for v in row {
            let v = v.map_err(failed)?;
            let v = number(&v)?
                .ok_or_else(|| format!("returned a row holding {}, not {needs}", type_name(&v)))?;
            push(&mut got, v);
        }
        if got - before != k {
            return Err(format!(
                "returned a row of {}, not {needs}",
                count(got - before, "number")
            ));
        }
    }
    if flat && rows > 0 {
        return Err(format!("returned numbers and rows mixed, not {needs}"));
    }
    if rows > 0 && rows != k {
        return Err(format!(
            "returned {} where {k} {} needed ({needs})",
            count(rows, "row"),
            agree(k, "is", "are")
        ));
    }
    if got != needed {
        return Err(format!(
            "returned {} where {needed} {} needed ({needs})",
            count(got, "number"),
            agree(needed, "is", "are")
        ));
    }
    Ok(())
}

/// The first pair `(i, j)`, `i < j`, of the `k × k` row-major `h` whose entries differ by
/// more than [`SYMMETRY_ULPS`]·ε times the largest finite magnitude in `h`; a pair with
/// an infinite or NaN entry agrees only when equal (two NaNs agree), so an infinity
/// elsewhere never widens the tolerance.
fn asymmetry(h: &[f64], k: usize) -> Option<(usize, usize)> {
    let scale = h
        .iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let tol = SYMMETRY_ULPS * f64::EPSILON * scale;
    (0..k)
        .flat_map(|i| (i + 1..k).map(move |j| (i, j)))
        .find(|&(i, j)| {
            let (a, b) = (h[i * k + j], h[j * k + i]);
            let close = a.is_finite() && b.is_finite() && (a - b).abs() <= tol;
            !(a == b || (a.is_nan() && b.is_nan()) || close)
        })
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string())
}

/// Calls `callable(*x)` with the GIL, writing its numbers into `out`; a failure is
/// reported for `name` (`role` says which callable) and `out` is filled with NaN. A
/// Python exception is kept ([`keep_raised`]) to become the `__cause__` of the
/// `ddx.Error` the call raises (or, for `KeyboardInterrupt` and `SystemExit`, to be
/// raised itself).
fn run(name: &str, role: Role, callable: &Py<PyAny>, x: &[f64], out: &mut [f64]) {
    Python::attach(|py| {
        let r = role.name();
        let answer = PyTuple::new(py, x).and_then(|args| callable.bind(py).call1(args));
        let message = match answer {
            Err(e) => {
                let message = format!("`{r}` raised {e}");
                keep_raised(py, name, &message, e);
                Some(message)
            }
            Ok(a) => match numbers(&a, role, x.len(), out) {
                Err(m) => Some(format!("`{r}` {m}")),
                Ok(()) if role == Role::Second => asymmetry(out, x.len()).map(|(i, j)| {
                    let k = x.len();
                    format!(
                        "`second` returned an asymmetric matrix: entry ({i}, {j}) is {} and \
                         ({j}, {i}) is {}; second partials are symmetric, so the two must \
                         agree (within {SYMMETRY_ULPS}·ε of the largest entry)",
                        real(out[i * k + j]),
                        real(out[j * k + i])
                    )
                }),
                Ok(()) => None,
            },
        };
        if let Some(message) = message {
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

/// Registers the user function `name` of `arity` arguments (an `int` from 1 to
/// [`ddx::ir::user::MAX_ARITY`]; not a `bool`): `value(*x)` answers its value, `first(*x)`
/// its `arity` first partials and `second(*x)`, when given, its `arity × arity` second
/// partials, in the formats [`numbers`] reads (a symmetric matrix: entries `(i, j)` and
/// `(j, i)` agree within [`SYMMETRY_ULPS`]·ε of the largest entry, else the call fails
/// with `user_function`; the upper triangle is used). Each is called with the GIL, with
/// one float per argument; they must be pure (a call may run any number of times, and
/// each call of a partial runs the whole `first` or `second` and keeps one entry).
///
/// Raises `ddx.Error` `user_function` for an arity out of range, or a name the text
/// syntax cannot spell (`ddx::ir::text::is_name`: a Python identifier, Unicode letters
/// included, as symbols' names are) or a built-in function's; `TypeError` when a callable
/// is not, or `arity` is not an `int` (a `bool` included).
#[pyfunction]
#[pyo3(signature = (name, arity, value, first, second = None))]
fn function(
    py: Python<'_>,
    name: crate::names::Name,
    arity: &Bound<'_, PyAny>,
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
    let max = ddx::ir::user::MAX_ARITY;
    let meaning = "an argument count";
    let arity = arity.extract::<crate::args::Int>()?.within_from(
        py,
        "ddx.function",
        "arity",
        (1, max),
        ddx::Errc::UserFunction,
        meaning,
    )?;
    let name = name.0.as_str();
    if ddx::ir::text::is_name(name) && crate::names::why_not_a_name(py, name).is_some() {
        // A name by the Unicode tables of ddx but not of this Python: refused as
        // `UserFunction::new` refuses a name that breaks the rule.
        return Err(ddx::Error::UserFunction {
            name: name.to_string(),
            problem: UserProblem::Name,
        })
        .or_raise();
    }
    let (v, g) = (value.clone().unbind(), first.clone().unbind());
    let (n1, n2) = (name.to_string(), name.to_string());
    let (v1, g1) = (v.clone_ref(py), g.clone_ref(py));
    let f = UserFunction::new(
        name,
        arity,
        move |x| {
            let mut out = [0.0];
            run(&n1, Role::Value, &v1, x, &mut out);
            out[0]
        },
        move |x, out| run(&n2, Role::First, &g1, x, out),
    )
    .or_raise()?;
    let f = match second {
        Some(h) => {
            let (h, n3) = (h.clone().unbind(), name.to_string());
            f.with_second(move |x, out| run(&n3, Role::Second, &h, x, out))
                .or_raise()?
        }
        None => f,
    };
    Ok(Function {
        f,
        value: v,
        first: g,
        second: second.map(|h| h.clone().unbind()),
    })
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

    /// The callable answering its value.
    #[getter]
    fn value(&self, py: Python<'_>) -> Py<PyAny> {
        self.value.clone_ref(py)
    }

    /// The callable answering its first partials.
    #[getter]
    fn first(&self, py: Python<'_>) -> Py<PyAny> {
        self.first.clone_ref(py)
    }

    /// The callable answering its second partials, or `None`.
    #[getter]
    fn second(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.second.as_ref().map(|h| h.clone_ref(py))
    }

    /// Pickles as `ddx.function(name, arity, value, first, second)`: the callables are
    /// pickled as the pickler pickles them (`pickle` by reference, so a module-level
    /// `def` travels and a lambda does not; `cloudpickle` by value, as `ddx.dask` does).
    /// Unpickling registers a new function.
    #[allow(clippy::type_complexity)]
    fn __reduce__(
        &self,
        py: Python<'_>,
    ) -> PyResult<(
        Py<PyAny>,
        (String, usize, Py<PyAny>, Py<PyAny>, Option<Py<PyAny>>),
    )> {
        let make = py.import("ddx._ddx")?.getattr("function")?.unbind();
        Ok((
            make,
            (
                self.f.name().to_string(),
                self.f.arity(),
                self.value(py),
                self.first(py),
                self.second(py),
            ),
        ))
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
