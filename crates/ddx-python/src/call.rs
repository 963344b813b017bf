//! `Call`: an equation bound to preallocated buffers, for calls in a loop.
//!
//! `Equation.buffer(x, want=…)` binds the point (or batch) `x` and the answer blocks once;
//! each `call()` reads `call.x` and fills `call.value`, `call.jacobian`, `call.hessian` in
//! place, allocating nothing. The blocks are those the allocating calls answer, in the
//! same shapes (a scalar equation's value at one point reads as a `float`). `x` is bound
//! as a float64 array whatever was passed: a C-contiguous, writeable float64 array of the
//! right shape is bound itself (so writing into it moves the point), anything else is
//! copied into a new one.
//!
//! Invariants: the arrays are checked (length, layout) at every call, so an array the
//! user reshaped or resized is refused rather than overrun; one call runs at a time on a
//! `Call` (a lock, released with the GIL for a batch), so two threads never write the
//! same blocks at once.

use crate::blocks::{self, Out};
use crate::equation::Equation;
use crate::errors::{raise, OrRaise};
use crate::points::{self, Kind, Spelled};
use ddx::{Errc, LaneKind};
use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::Mutex;

/// Buffers bound to an equation: `ddx.Call`.
#[pyclass(frozen, module = "ddx", name = "Call")]
pub(crate) struct Call {
    equation: Py<Equation>,
    kind: LaneKind,
    /// The point count of a batch; `None` for one point.
    points: Option<usize>,
    /// One output of a scalar equation at one point: `value` reads as a `float`.
    scalar_value: bool,
    x: Py<PyArrayDyn<f64>>,
    value: Option<Py<PyArrayDyn<f64>>>,
    jacobian: Option<Py<PyArrayDyn<f64>>>,
    hessian: Option<Py<PyArrayDyn<f64>>>,
    /// The compressed Hessian between sweep and scatter; held for the whole call.
    scratch: Mutex<Vec<f64>>,
}

/// Whether NumPy lets `a` be written.
fn writeable<T: numpy::Element, D>(a: &Bound<'_, numpy::PyArray<T, D>>) -> bool {
    // SAFETY: reads the flags of a live array object, under the GIL.
    unsafe { (*a.as_array_ptr()).fields.flags & numpy::npyffi::NPY_ARRAY_WRITEABLE != 0 }
}

fn zeros(py: Python<'_>, shape: &[usize]) -> Py<PyArrayDyn<f64>> {
    PyArrayDyn::<f64>::zeros(py, shape, false).unbind()
}

/// The data of a bound array, checked: C-contiguous and `len` long.
// The data is NumPy's, reached through a shared handle, as `as_slice_mut` does.
#[allow(clippy::mut_from_ref)]
fn checked<'a>(
    py: Python<'_>,
    a: &'a Bound<'_, PyArrayDyn<f64>>,
    len: usize,
    name: &str,
) -> PyResult<&'a mut [f64]> {
    // SAFETY: the slice is used only for this call, under the `Call`'s lock; no Rust code
    // holds another reference to the array's data (NumPy code running on another thread
    // without the GIL on the same array races as it would with any NumPy writer).
    match unsafe { a.as_slice_mut() } {
        Ok(s) if s.len() == len => Ok(s),
        _ => Err(raise(
            py,
            Errc::WrongOutputLength,
            format!(
                "wrong_output_length: call.{name} was reshaped or resized: it must stay a \
                 C-contiguous array of {len} float64 values, as buffer() bound it"
            ),
        )),
    }
}

impl Call {
    /// Binds `x` and the blocks `kind` fills.
    pub(crate) fn bind(
        equation: &Bound<'_, Equation>,
        x: &Bound<'_, PyAny>,
        kind: LaneKind,
    ) -> PyResult<Self> {
        let py = x.py();
        if !matches!(
            kind,
            LaneKind::Value | LaneKind::Jacobian | LaneKind::Gradient | LaneKind::Hessian
        ) {
            return Err(PyValueError::new_err(
                "buffer() binds Want.VALUE, Want.JACOBIAN, Want.GRADIENT or Want.HESSIAN",
            ));
        }
        let this = equation.get();
        let eq = this.rust();
        let (n, m) = (eq.arity(), eq.outputs());
        let (xa, points) = match points::read(x, eq.symbols(), n, Kind::Point)? {
            Spelled::One(v) => {
                let reuse = x
                    .cast::<PyArrayDyn<f64>>()
                    .ok()
                    .filter(|a| a.ndim() == 1 && a.is_c_contiguous() && writeable(a));
                let a = match reuse {
                    Some(a) => a.clone().unbind(),
                    None => {
                        let a = zeros(py, &[n]);
                        // SAFETY: made just above; held only here.
                        if let Ok(s) = unsafe { a.bind(py).as_slice_mut() } {
                            s.copy_from_slice(&v);
                        }
                        a
                    }
                };
                (a, None)
            }
            Spelled::Batch(b) => {
                let p = b.shape()[1];
                let same = x.is(&b) && writeable(&b);
                let a = if same {
                    b.to_dyn().clone().unbind()
                } else {
                    b.call_method0("copy")?
                        .cast_into::<PyArrayDyn<f64>>()?
                        .unbind()
                };
                (a, Some(p))
            }
        };
        let limit = eq.options().answer_limit;
        let call = "Equation.buffer";
        // The largest block first: the Hessian's when asked, else the Jacobian's.
        let largest = match kind {
            LaneKind::Hessian => this.symbol_shape(m, n, 2, points),
            LaneKind::Value => this.value_shape(m, points),
            _ => this.symbol_shape(m, n, 1, points),
        };
        crate::equation::check_limit(&[&largest], limit, call)?;
        let block = |shape: &[usize]| {
            crate::equation::answer_block(py, shape, limit, call, true).map(Bound::unbind)
        };
        let value = (kind != LaneKind::Gradient)
            .then(|| {
                let shape = this.value_shape(m, points);
                block(if shape.is_empty() { &[1] } else { &shape })
            })
            .transpose()?;
        let jacobian = (kind != LaneKind::Value)
            .then(|| block(&this.symbol_shape(m, n, 1, points)))
            .transpose()?;
        let hessian = (kind == LaneKind::Hessian)
            .then(|| block(&this.symbol_shape(m, n, 2, points)))
            .transpose()?;
        Ok(Call {
            equation: equation.clone().unbind(),
            kind,
            points,
            scalar_value: !this.is_system() && m == 1 && points.is_none(),
            x: xa,
            value,
            jacobian,
            hessian,
            scratch: Mutex::new(Vec::new()),
        })
    }

    fn block(
        &self,
        py: Python<'_>,
        block: &Option<Py<PyArrayDyn<f64>>>,
        name: &str,
    ) -> PyResult<Py<PyAny>> {
        match block {
            Some(a) => Ok(a.clone_ref(py).into_any()),
            None => Err(raise(
                py,
                Errc::WrongColumnCount,
                format!(
                    "wrong_column_count: this Call was bound with want={}, which does not \
                     fill `{name}`",
                    self.kind.name()
                ),
            )),
        }
    }
}

#[pymethods]
impl Call {
    /// Reads `x` and fills the bound blocks in place.
    fn __call__(&self, py: Python<'_>) -> PyResult<()> {
        let eq = self.equation.get().rust();
        let (n, m) = (eq.arity(), eq.outputs());
        let p = self.points.unwrap_or(1);
        let x = self.x.bind(py);
        let value = self.value.as_ref().map(|a| a.bind(py));
        let jacobian = self.jacobian.as_ref().map(|a| a.bind(py));
        let hessian = self.hessian.as_ref().map(|a| a.bind(py));
        let xs: &[f64] = checked(py, x, n * p, "x")?;
        let out = Out {
            values: value.map(|a| checked(py, a, m * p, "value")).transpose()?,
            jacobian: jacobian
                .map(|a| checked(py, a, m * n * p, "jacobian"))
                .transpose()?,
            hessian: hessian
                .map(|a| checked(py, a, m * n * n * p, "hessian"))
                .transpose()?,
            products: None,
            fresh: false,
        };
        let kind = self.kind;
        let run = || {
            let mut scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
            blocks::run(
                &eq,
                kind,
                &blocks::rows(xs, n, p),
                &[],
                p,
                out,
                &mut scratch,
            )
        };
        match self.points {
            None => run(),
            Some(_) => py.detach(run),
        }
        .or_raise()
    }

    /// The bound point (or batch): write the next one into it.
    #[getter]
    fn x(&self, py: Python<'_>) -> Py<PyAny> {
        self.x.clone_ref(py).into_any()
    }

    /// The value block (a `float` for a scalar equation at one point).
    #[getter]
    fn value(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if self.scalar_value {
            if let Some(a) = &self.value {
                // SAFETY: read only, under the GIL; `checked` length 1 at bind.
                let v = unsafe { a.bind(py).as_slice() }
                    .ok()
                    .and_then(|s| s.first().copied())
                    .unwrap_or(f64::NAN);
                return Ok(v.into_pyobject(py)?.into_any().unbind());
            }
        }
        self.block(py, &self.value, "value")
    }

    /// The Jacobian block.
    #[getter]
    fn jacobian(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.block(py, &self.jacobian, "jacobian")
    }

    /// The Hessian block (dense).
    #[getter]
    fn hessian(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.block(py, &self.hessian, "hessian")
    }

    /// The equation this call is bound to.
    #[getter]
    fn equation(&self, py: Python<'_>) -> Py<Equation> {
        self.equation.clone_ref(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "ddx.Call(want={}, points={})",
            self.kind.name(),
            self.points
                .map_or_else(|| "None".to_string(), |p| p.to_string())
        )
    }
}
