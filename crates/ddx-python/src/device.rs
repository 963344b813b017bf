//! `DeviceColumns`: a lane's columns kept in OpenCL device memory across calls
//! (`Equation.device_columns`), so a sequence of batch calls over the same points pays
//! no transfer.
//!
//! Layout (the Rust [`ddx::cl::DeviceColumns`]'s): the inputs are the lane's symbols in
//! `Equation.symbols` order, then its seeds (a direction for `JVP`/`HVP`, weights for
//! `VJP`); the outputs are the lane's blocks one after another, each row a column of
//! `points` values — the values, then the partials or products in the order the batch
//! calls lay them out.
//!
//! Invariants: every array is checked (2-D, rows within the lane's columns, `points`
//! long) before anything is copied; the copies and the launch run with the GIL released,
//! one at a time per `DeviceColumns` (a lock), so two threads never race on the device
//! buffers.

use crate::args::Int;
use crate::equation::lane_kind;
use crate::errors::{raise, OrRaise};
use ddx::{Errc, LaneKind};
use numpy::{PyArray2, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use std::sync::{Mutex, MutexGuard};

/// Device-resident columns of one lane: `ddx.DeviceColumns`.
#[pyclass(frozen, module = "ddx", name = "DeviceColumns")]
pub(crate) struct DeviceColumns {
    inner: Mutex<ddx::cl::DeviceColumns>,
    kind: LaneKind,
    points: usize,
    inputs: usize,
    outputs: usize,
}

static ASCONTIGUOUS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `columns` as a C-contiguous float64 array of shape `(rows, points)`.
fn columns<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    points: usize,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let f = ASCONTIGUOUS.get_or_try_init(py, || {
        py.import("numpy")
            .and_then(|m| m.getattr("ascontiguousarray"))
            .map(Bound::unbind)
    })?;
    let wrong = |what: String| {
        raise(
            py,
            Errc::ColumnLength,
            format!(
                "column_length: device columns are written as a float64 array of shape \
                 (columns, {points}); got {what}"
            ),
        )
    };
    let any = f
        .bind(py)
        .call1((obj, "float64"))
        .map_err(|e| wrong(format!("something not read as a float64 array ({e})")))?;
    let arr = any.cast_into::<PyArray2<f64>>().map_err(|e| {
        let shape = e
            .into_inner()
            .getattr("shape")
            .map(|s| s.to_string())
            .unwrap_or_default();
        wrong(format!("an array of shape {shape}"))
    })?;
    if arr.shape()[1] != points {
        return Err(wrong(format!(
            "an array of shape {}",
            crate::points::py_shape(arr.shape())
        )));
    }
    Ok(arr)
}

impl DeviceColumns {
    pub(crate) fn new(inner: ddx::cl::DeviceColumns, kind: LaneKind) -> Self {
        Self {
            points: inner.len(),
            inputs: inner.inputs(),
            outputs: inner.outputs(),
            kind,
            inner: Mutex::new(inner),
        }
    }

    fn lock(&self) -> MutexGuard<'_, ddx::cl::DeviceColumns> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl DeviceColumns {
    /// The point count: every column's length.
    #[getter]
    fn points(&self) -> usize {
        self.points
    }

    /// The lane's input column count: its symbols, then its seeds.
    #[getter]
    fn inputs(&self) -> usize {
        self.inputs
    }

    /// The lane's output column count: its blocks, one after another.
    #[getter]
    fn outputs(&self) -> usize {
        self.outputs
    }

    /// The lane these columns belong to, as a `ddx.Want` number.
    #[getter]
    fn want(&self) -> u8 {
        self.kind as u8
    }

    /// Copies the rows of `columns` (shape `(k, points)`, any real array-like) to the
    /// device as input columns `first … first + k − 1`. Raises `ddx.Error`
    /// (`wrong_column_count` past the lane's inputs, `column_length` for another shape,
    /// `device_launch` when the device refuses the copy); nothing is copied then.
    #[pyo3(signature = (columns, first = Int::ZERO), text_signature = "($self, columns, first=0)")]
    fn write(&self, py: Python<'_>, columns: &Bound<'_, PyAny>, first: Int) -> PyResult<()> {
        let first = first.within(
            py,
            "DeviceColumns.write",
            "first",
            usize::MAX,
            Errc::WrongColumnCount,
            "the first input column",
        )?;
        let arr = self::columns(py, columns, self.points)?;
        let view = arr.readonly();
        let data = view.as_slice()?;
        let rows: Vec<&[f64]> = if self.points == 0 {
            vec![&[]; arr.shape()[0]]
        } else {
            data.chunks_exact(self.points).collect()
        };
        py.detach(|| self.lock().write(first, &rows)).or_raise()
    }

    /// Runs the lane's kernel over the resident columns and waits for it (with the GIL
    /// released). Raises `ddx.Error` (`device_launch`) when the launch fails.
    fn run(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.lock().run()).or_raise()
    }

    /// Output columns `first … first + count − 1` (all from `first` when `count` is
    /// `None`) copied from the device: a new float64 array of shape `(count, points)`.
    /// For a `jvp` or `hvp` lane, a point whose products read hold a NaN is answered on
    /// the CPU by the zero-skipping lane, as the batch calls answer it (`0 · ∞` from a zero
    /// direction does not make a NaN), from the inputs on the device now: read a run's
    /// outputs before writing the next inputs.
    /// Raises `ddx.Error` (`wrong_column_count` past the lane's outputs, `device_launch`).
    #[pyo3(
        signature = (first = Int::ZERO, count = None),
        text_signature = "($self, first=0, count=None)"
    )]
    fn read<'py>(
        &self,
        py: Python<'py>,
        first: Int,
        count: Option<Int>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let call = "DeviceColumns.read";
        let first = first.within(
            py,
            call,
            "first",
            usize::MAX,
            Errc::WrongColumnCount,
            "the first output column",
        )?;
        let count = match count {
            Some(c) => c.within(
                py,
                call,
                "count",
                usize::MAX,
                Errc::WrongColumnCount,
                "a column count",
            )?,
            None => self.outputs.saturating_sub(first),
        };
        if first.saturating_add(count) > self.outputs {
            return Err(raise(
                py,
                Errc::WrongColumnCount,
                format!(
                    "wrong_column_count: output columns {first}..{} asked of a lane with {}",
                    first.saturating_add(count),
                    self.outputs
                ),
            ));
        }
        let mut flat = vec![0.0; count * self.points];
        {
            let mut rows: Vec<&mut [f64]> = if self.points == 0 {
                (0..count).map(|_| <&mut [f64]>::default()).collect()
            } else {
                flat.chunks_exact_mut(self.points).collect()
            };
            py.detach(|| self.lock().read(first, &mut rows))
                .or_raise()?;
        }
        numpy::PyArray1::from_vec(py, flat).reshape([count, self.points])
    }

    fn __repr__(&self) -> String {
        format!(
            "DeviceColumns(want={}, points={}, inputs={}, outputs={})",
            self.kind.name(),
            self.points,
            self.inputs,
            self.outputs
        )
    }
}

/// `Equation.device_columns`'s work: the columns of `points` points for lane `want`.
/// Waits (with the GIL released) for the lane's device kernel.
pub(crate) fn make(
    py: Python<'_>,
    eq: &crate::shape::AnyEquation,
    want: &Int,
    points: &Int,
) -> PyResult<DeviceColumns> {
    let kind = lane_kind(py, want, "Equation.device_columns")?;
    let points = points.within(
        py,
        "Equation.device_columns",
        "points",
        usize::MAX,
        Errc::ColumnLength,
        "a point count (the columns' length)",
    )?;
    let cols = py.detach(|| eq.device_columns(kind, points)).or_raise()?;
    Ok(DeviceColumns::new(cols, kind))
}
