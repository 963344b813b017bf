//! `Expression`, `var`, the free math functions and `select`.
//!
//! An `Expression` wraps the Rust [`Expr`] handle: a constant, a node of the model being
//! built, or a poisoned handle that carries the reason it is not one. Operators mix with
//! Python numbers on either side (`2 * x`, `x ** 0.5`, `1 / x`); comparisons answer an
//! `Expression` of 1.0 or 0.0, never a `bool`, so an `Expression` refuses `bool()` (and with
//! it `if x < 1:` and Python's chained `a < b < c`): the conditional is `ddx.select`.
//!
//! Invariant: nothing here touches an arena directly; every node is made by the Rust
//! builder on the calling thread, so a handle used outside its model is poisoned, exactly
//! as in Rust, and the equation that uses it reports `no_arena` or `sealed_arena`.

use crate::args::{real, Int};
use crate::names::{self, Name};
use ddx::{Errc, Expr};
use pyo3::basic::CompareOp;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt};

/// An expression of the model being built: `ddx.Expression`.
#[pyclass(frozen, module = "ddx", name = "Expression")]
#[derive(Clone, Copy)]
pub(crate) struct Expression(pub(crate) Expr);

/// Anything an operand may be: an `Expression`, or a real number.
pub(crate) fn operand(obj: &Bound<'_, PyAny>) -> PyResult<Option<Expr>> {
    if let Ok(e) = obj.cast::<Expression>() {
        return Ok(Some(e.get().0));
    }
    if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyInt>() {
        return Ok(Some(Expr::from(real(obj, "a constant of the model")?)));
    }
    // NumPy scalars and other numbers: anything with `__float__` but not a container.
    if obj.hasattr("__float__")? && !obj.hasattr("__len__")? {
        if let Ok(v) = obj.extract::<f64>() {
            return Ok(Some(Expr::from(v)));
        }
    }
    Ok(None)
}

/// An operand of a free function, or a `TypeError` naming what was passed.
pub(crate) fn argument(obj: &Bound<'_, PyAny>) -> PyResult<Expr> {
    operand(obj)?.ok_or_else(|| {
        let ty = obj
            .get_type()
            .name()
            .map_or_else(|_| "?".to_string(), |n| n.to_string());
        PyTypeError::new_err(format!("expected an Expression or a real number, got {ty}"))
    })
}

fn wrap(py: Python<'_>, e: Expr) -> PyResult<Py<PyAny>> {
    Ok(Py::new(py, Expression(e))?.into_any())
}

/// A binary operator: `NotImplemented` for an operand it does not know, so Python tries
/// the other side.
fn binary(
    py: Python<'_>,
    other: &Bound<'_, PyAny>,
    f: impl FnOnce(Expr) -> Expr,
) -> PyResult<Py<PyAny>> {
    match operand(other)? {
        Some(o) => wrap(py, f(o)),
        None => Ok(py.NotImplemented()),
    }
}

#[pymethods]
impl Expression {
    /// A constant expression (`Expression(2.0)`); a model's nodes come from `var` and from
    /// arithmetic on them.
    #[new]
    fn new(value: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(Expression(Expr::from(real(
            value,
            "ddx.Expression(value)",
        )?)))
    }

    /// NumPy defers to these operators instead of broadcasting over an object array.
    #[classattr]
    fn __array_ufunc__(py: Python<'_>) -> Py<PyAny> {
        py.None()
    }

    /// The value if this is a constant (a literal, or folded from literals), else `None`.
    #[getter]
    fn constant(&self) -> Option<f64> {
        self.0.as_constant()
    }

    fn __add__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, o, |o| self.0 + o)
    }
    fn __radd__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, o, |o| o + self.0)
    }
    fn __sub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, o, |o| self.0 - o)
    }
    fn __rsub__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, o, |o| o - self.0)
    }
    fn __mul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, o, |o| self.0 * o)
    }
    fn __rmul__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, o, |o| o * self.0)
    }
    fn __truediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, o, |o| self.0 / o)
    }
    fn __rtruediv__(&self, py: Python<'_>, o: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, o, |o| o / self.0)
    }
    fn __pow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        modulo: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        if !modulo.is_none() {
            return Ok(py.NotImplemented());
        }
        binary(py, o, |o| self.0.powf(o))
    }
    fn __rpow__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        modulo: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        if !modulo.is_none() {
            return Ok(py.NotImplemented());
        }
        binary(py, o, |o| o.powf(self.0))
    }
    fn __neg__(&self) -> Self {
        Expression(-self.0)
    }
    fn __pos__(&self) -> Self {
        *self
    }
    fn __abs__(&self) -> Self {
        Expression(self.0.abs())
    }

    /// Comparisons answer an `Expression` of 1.0 or 0.0 (0.0 when an operand is NaN,
    /// `!=` included).
    fn __richcmp__(
        &self,
        py: Python<'_>,
        o: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<Py<PyAny>> {
        binary(py, o, |o| match op {
            CompareOp::Lt => self.0.lt(o),
            CompareOp::Le => self.0.le(o),
            CompareOp::Gt => self.0.gt(o),
            CompareOp::Ge => self.0.ge(o),
            CompareOp::Eq => self.0.eq(o),
            CompareOp::Ne => self.0.ne(o),
        })
    }

    /// Refused: a comparison is an `Expression`, not a `bool`.
    fn __bool__(&self) -> PyResult<bool> {
        Err(PyTypeError::new_err(
            "an Expression has no truth value (comparisons answer Expressions of 1.0 or 0.0): \
             choose between two expressions with ddx.select(cond, if_true, if_false), and \
             write a range test as (a < b) * (b < c)",
        ))
    }

    /// Refused, as for `bool()`: a number is read off an equation, not an expression.
    fn __float__(&self) -> PyResult<f64> {
        self.0.as_constant().ok_or_else(|| {
            PyTypeError::new_err(
                "an Expression of the model has no value until it is an equation: build one \
                 with ddx.equation and evaluate it",
            )
        })
    }

    fn __repr__(&self) -> String {
        if let Some(v) = self.0.as_constant() {
            format!("ddx.Expression({v:?})")
        } else if let Some(e) = self.0.error() {
            format!("<ddx.Expression poisoned: {}>", e.code())
        } else {
            "<ddx.Expression of a model>".to_string()
        }
    }
}

/// The symbol `name` of the model being built: `ddx.var("x")`. Outside a model callable
/// the handle is poisoned (`errc.no_arena` when an equation uses it). `name` is a name of
/// the text syntax ([`ddx::ir::text::why_not_a_name`]: a Python identifier in NFKC form,
/// holding no invisible character, no Python keyword and no built-in function's name) and
/// an identifier to the running Python ([`crate::names`]); another is `ddx.Error`
/// `bad_name` saying which rule it breaks (a lone surrogate included).
#[pyfunction]
fn var(py: Python<'_>, name: Name) -> PyResult<Expression> {
    names::check(py, &name.0, "a symbol")?;
    Ok(Expression(ddx::rt::var(&name.0)))
}

/// The parameter `name` of the model being built: `ddx.param("T")`, an input never
/// differentiated (no partial, no Hessian row); bind its value with
/// `Equation.with_params`. `name` follows `var`'s rule (`bad_name` otherwise).
#[pyfunction]
fn param(py: Python<'_>, name: Name) -> PyResult<Expression> {
    names::check(py, &name.0, "a parameter")?;
    Ok(Expression(ddx::rt::param(&name.0)))
}

macro_rules! unary {
    ($($name:ident => $method:ident),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($name), "(x)`, for an `Expression` or a number.")]
            #[pyfunction]
            fn $name(x: &Bound<'_, PyAny>) -> PyResult<Expression> {
                Ok(Expression(argument(x)?.$method()))
            }
        )*
        fn register_unary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add_function(wrap_pyfunction!($name, m)?)?;)*
            Ok(())
        }
    };
}

unary! {
    sin => sin, cos => cos, tan => tan, exp => exp, log => ln, log10 => log10,
    sqrt => sqrt, cbrt => cbrt, abs => abs, sign => sign, asin => asin, acos => acos,
    atan => atan, sinh => sinh, cosh => cosh, tanh => tanh, asinh => asinh,
    acosh => acosh, atanh => atanh, erf => erf, log1p => ln_1p, expm1 => exp_m1,
    log2 => log2, recip => recip,
}

/// `powi(x, n)`: `x` to the integer power `n` (binary powering, the same bits on every
/// engine); `n` is never differentiated. Raises `ddx.Error` `too_large` for `n` outside
/// the 32-bit range (`x ** y` takes any power); `TypeError` naming `n` for an `n` that is
/// not an `int` (a `float`, a `bool`).
#[pyfunction]
fn powi(py: Python<'_>, x: &Bound<'_, PyAny>, n: Int) -> PyResult<Expression> {
    let range = (i64::from(i32::MIN), i64::from(i32::MAX));
    let n = n.signed_within(py, "ddx.powi", "n", range, Errc::TooLarge, "the exponent")?;
    // In range: checked just above.
    let n = i32::try_from(n).unwrap_or_default();
    Ok(Expression(argument(x)?.powi(n)))
}

/// `ln(x)`: the natural logarithm, the same as `log(x)`.
#[pyfunction]
fn ln(x: &Bound<'_, PyAny>) -> PyResult<Expression> {
    Ok(Expression(argument(x)?.ln()))
}

macro_rules! binary_fns {
    ($($name:ident($a:ident, $b:ident) => $f:path),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($name), "(", stringify!($a), ", ", stringify!($b),
                            ")`, for `Expression`s or numbers.")]
            #[pyfunction]
            fn $name($a: &Bound<'_, PyAny>, $b: &Bound<'_, PyAny>) -> PyResult<Expression> {
                Ok(Expression($f(argument($a)?, argument($b)?)))
            }
        )*
        fn register_binary(m: &Bound<'_, PyModule>) -> PyResult<()> {
            $(m.add_function(wrap_pyfunction!($name, m)?)?;)*
            Ok(())
        }
    };
}

binary_fns! {
    pow(base, exponent) => ddx::pow,
    atan2(y, x) => ddx::atan2,
    hypot(a, b) => ddx::hypot,
    max(a, b) => ddx::max,
    min(a, b) => ddx::min,
}

/// `select(cond, if_true, if_false)`: `if_true` where `cond` is nonzero (or NaN), else
/// `if_false`. Both arms are evaluated; the derivative is the taken arm's, and the
/// untaken arm's never reaches a result.
#[pyfunction]
fn select(
    cond: &Bound<'_, PyAny>,
    if_true: &Bound<'_, PyAny>,
    if_false: &Bound<'_, PyAny>,
) -> PyResult<Expression> {
    Ok(Expression(ddx::select(
        argument(cond)?,
        argument(if_true)?,
        argument(if_false)?,
    )))
}

/// Adds `Expression` and the functions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Expression>()?;
    m.add_function(wrap_pyfunction!(var, m)?)?;
    m.add_function(wrap_pyfunction!(param, m)?)?;
    m.add_function(wrap_pyfunction!(ln, m)?)?;
    m.add_function(wrap_pyfunction!(select, m)?)?;
    m.add_function(wrap_pyfunction!(powi, m)?)?;
    register_unary(m)?;
    register_binary(m)
}
