//! `Equation`: a built model and its calls, with the specification's return shapes.
//!
//! Shapes: `n` symbols, `q` parameters, `m` outputs, `p` points. A batch's point block
//! is `(n, p)` (bound parameters broadcast) or `(n + q, p)`, symbols then parameters, or
//! the same rows given one by one (a dict of columns, a list of rows), each `p` long or of
//! length 1 (broadcast); the answers have symbol axes only. A single point answers a `float` value,
//! an `(n,)` gradient and an `(n, n)` Hessian; a batch appends the point axis (`(p,)`,
//! `(n, p)`, `(n, n, p)`); a system (a model that returned a tuple, or a list of texts)
//! prepends its output axis (`(m,)`, `(m, n)`, `(m, n, n)`, and `(m, p)`… for a batch).
//! `jvp` answers one value per output (a `float` for a scalar function at one point);
//! `vjp` and `hvp` one per symbol.
//!
//! Each call runs one lane once: the value comes out of the same sweep as the derivatives.
//! Batches run with the GIL released (and across cores, in the Rust batch calls); single
//! points keep it, since they take a microsecond.
//!
//! Invariant: the Rust equation is held as `Arc<ddx::Equation<System>>` behind a lock
//! that is held only to clone or replace the `Arc`, so a call never holds it while it
//! runs and assigning `options` never waits for a batch in flight (the batch finishes
//! under the options it started with).

use crate::args::{real_argument, Int};
use crate::blocks::{self, Out};
use crate::errors::{method_of, raise, OrRaise};
use crate::expression::Expression;
use crate::names::{self, FilePath, Name, Text};
use crate::options;
use crate::points::{self, Kind, Spelled, Values};
use crate::shape::{on, AnyEquation};
use ddx::ir::text::quoted;
use ddx::ir::words::count;
use ddx::{Errc, Expr, LaneKind};
use numpy::{PyArray2, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyBytes;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use smallvec::SmallVec;
use std::sync::{Arc, RwLock};

/// A built equation: `ddx.Equation`.
#[pyclass(frozen, weakref, module = "ddx", name = "Equation")]
pub(crate) struct Equation {
    inner: RwLock<Arc<AnyEquation>>,
    /// Built as a system (a tuple of outputs, a list of texts): answers keep the output
    /// axis even when there is one output.
    system: bool,
    /// How it was built, for rebuilding it where its bytes cannot go (an equation calling
    /// Python user functions, on a `ddx.dask` worker): `("text", text, params,
    /// functions)`, `("system", texts, params, functions)` or `("model", callable)`;
    /// `None` for one loaded from bytes or a file.
    recipe: Option<Py<PyAny>>,
}

/// The lane kind the `want` argument of `call` names (`ddx.Want`'s values are
/// `LaneKind`'s order).
///
/// # Errors
/// `ddx.Error` `index_out_of_range` for a number that names no `ddx.Want`.
pub(crate) fn lane_kind(py: Python<'_>, want: &Int, call: &str) -> PyResult<LaneKind> {
    let i = want.within(
        py,
        call,
        "want",
        LaneKind::ALL.len() - 1,
        Errc::IndexOutOfRange,
        "a lane (a ddx.Want)",
    )?;
    LaneKind::ALL.get(i).copied().ok_or_else(|| {
        raise(
            py,
            Errc::IndexOutOfRange,
            format!("index_out_of_range: {call}: want={i} names no ddx.Want"),
        )
    })
}

/// `ddx._options`, imported on first use.
static OPTIONS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn options_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    OPTIONS
        .get_or_try_init(py, || py.import("ddx._options").map(Bound::unbind))
        .map(|m| m.bind(py))
}

/// A fresh zeroed float64 array of `shape`.
fn zeros<'py>(py: Python<'py>, shape: &[usize]) -> Bound<'py, PyArrayDyn<f64>> {
    PyArrayDyn::<f64>::zeros(py, shape, false)
}

/// A fresh, uninitialised, C-contiguous float64 array of `shape`, for a call that writes
/// every element before anyone reads it ([`blocks::run`] with `fresh`).
fn empty<'py>(py: Python<'py>, shape: &[usize]) -> Bound<'py, PyArrayDyn<f64>> {
    // SAFETY: float64 has no invalid bit patterns, and the array is filled (or dropped
    // on an error) before Python sees it.
    unsafe { PyArrayDyn::<f64>::new(py, shape, false) }
}

/// Blocks up to this many values are made directly; larger ones through NumPy, so that an
/// allocation NumPy cannot make is Python's `MemoryError` rather than a panic.
const DIRECT_VALUES: u128 = 1 << 16;

/// A fresh float64 array of `shape` for an answer block of `call` — zeroed, or left
/// uninitialised for a call that writes every element ([`empty`]'s contract).
///
/// # Errors
/// `ddx.Error` `too_large` when the block would hold more than `limit` values (the
/// equation's `Options.answer_limit`), checked before anything is allocated;
/// `MemoryError` when NumPy cannot allocate it.
pub(crate) fn answer_block<'py>(
    py: Python<'py>,
    shape: &[usize],
    limit: usize,
    call: &'static str,
    zeroed: bool,
) -> PyResult<Bound<'py, PyArrayDyn<f64>>> {
    let values: u128 = shape.iter().map(|&d| d as u128).product();
    if values > limit as u128 {
        return Err(crate::errors::to_py(ddx::Error::TooLarge {
            call,
            values,
            limit,
        }));
    }
    if values <= DIRECT_VALUES {
        return Ok(if zeroed {
            zeros(py, shape)
        } else {
            empty(py, shape)
        });
    }
    let numpy = py.import("numpy")?;
    let made = numpy.call_method1(if zeroed { "zeros" } else { "empty" }, (shape.to_vec(),))?;
    Ok(made.cast_into::<PyArrayDyn<f64>>()?)
}

/// Refuses a call whose largest answer block (of `shapes`, the blocks it will make) holds
/// more than `limit` values, before any of them is allocated, so the message names the
/// limit that lets the whole call through.
///
/// # Errors
/// `ddx.Error` `too_large` naming `call` and the largest block's size.
pub(crate) fn check_limit(shapes: &[&[usize]], limit: usize, call: &'static str) -> PyResult<()> {
    let values = shapes
        .iter()
        .map(|s| s.iter().map(|&d| d as u128).product::<u128>())
        .max()
        .unwrap_or(0);
    if values > limit as u128 {
        return Err(crate::errors::to_py(ddx::Error::TooLarge {
            call,
            values,
            limit,
        }));
    }
    Ok(())
}

/// The data of an array made by [`zeros`], for the Rust calls to fill.
///
/// # Safety
/// `a` was just made and no one else holds it: no alias of its data exists.
// The data is NumPy's, reached through a shared handle, as `as_slice_mut` does.
#[allow(clippy::mut_from_ref)]
unsafe fn data<'a>(a: &'a Bound<'_, PyArrayDyn<f64>>) -> &'a mut [f64] {
    // SAFETY: the caller's contract; an array from `zeros` or `empty` is C-contiguous
    // (the bytes of `empty` come from NumPy's allocator, across FFI: unknown, not invalid).
    unsafe { a.as_slice_mut() }.unwrap_or(&mut [])
}

/// One input block as read: a single vector, the rows of a batch as one array, or a batch
/// given row by row (rows of the batch's length or of length 1).
enum Block<'py> {
    One(Values),
    Batch(Bound<'py, PyArray2<f64>>),
    Rows(Vec<Bound<'py, numpy::PyArray1<f64>>>),
}

impl Block<'_> {
    fn points(&self) -> Option<usize> {
        match self {
            Block::One(_) => None,
            Block::Batch(a) => Some(a.shape()[1]),
            Block::Rows(r) => Some(ddx::broadcast_points(r.iter().map(|a| a.len())).unwrap_or(0)),
        }
    }

    /// The block's rows for a call over `p` points: a single vector's values each as a
    /// row of length 1 (broadcast by the batch calls when the other block is a batch), or
    /// empty rows for a batch of no points.
    fn rows(&self, p: Option<usize>) -> blocks::Rows<'_> {
        match self {
            Block::One(v) if p == Some(0) => v.iter().map(|_| &[][..]).collect(),
            Block::One(v) => v.chunks(1).collect(),
            // SAFETY: a batch array is C-contiguous float64 (`points::read`), and it is
            // only read while the call holds it.
            Block::Batch(a) => blocks::rows(
                unsafe { a.as_slice() }.unwrap_or(&[]),
                a.shape()[0],
                a.shape()[1],
            ),
            // SAFETY: as above (`points::read_points` makes each row C-contiguous).
            Block::Rows(r) => r
                .iter()
                .map(|a| unsafe { a.as_slice() }.unwrap_or(&[]))
                .collect(),
        }
    }
}

impl<'py> From<Spelled<'py>> for Block<'py> {
    fn from(s: Spelled<'py>) -> Self {
        match s {
            Spelled::One(v) => Block::One(v),
            Spelled::Batch(a) => Block::Batch(a),
        }
    }
}

impl<'py> From<points::PointBlock<'py>> for Block<'py> {
    fn from(s: points::PointBlock<'py>) -> Self {
        match s {
            points::PointBlock::Spelled(s) => s.into(),
            points::PointBlock::Rows(r) => Block::Rows(r),
        }
    }
}

impl Equation {
    pub(crate) fn new(eq: AnyEquation) -> Self {
        Self {
            system: eq.is_system(),
            inner: RwLock::new(Arc::new(eq)),
            recipe: None,
        }
    }

    /// [`Equation::new`], remembering how it was built (the `recipe` field).
    fn built(eq: AnyEquation, recipe: Bound<'_, PyAny>) -> Self {
        Self {
            recipe: Some(recipe.unbind()),
            ..Self::new(eq)
        }
    }

    /// The Rust equation now in force.
    pub(crate) fn rust(&self) -> Arc<AnyEquation> {
        Arc::clone(&self.inner.read().unwrap_or_else(|e| e.into_inner()))
    }

    fn replace(&self, eq: AnyEquation) {
        *self.inner.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(eq);
    }

    pub(crate) fn is_system(&self) -> bool {
        self.system
    }

    /// Shape of the value block: `()` / `(m,)`, with `(p,)` appended for a batch.
    pub(crate) fn value_shape(&self, m: usize, p: Option<usize>) -> Vec<usize> {
        let mut s = if self.system { vec![m] } else { vec![] };
        s.extend(p);
        s
    }

    /// Shape of a per-symbol block of `axes` symbol axes (`(n,)`, `(n, n)`), with the
    /// output axis in front for a system and `p` appended for a batch.
    pub(crate) fn symbol_shape(
        &self,
        m: usize,
        n: usize,
        axes: usize,
        p: Option<usize>,
    ) -> Vec<usize> {
        let mut s = if self.system { vec![m] } else { vec![] };
        s.extend(std::iter::repeat_n(n, axes));
        s.extend(p);
        s
    }

    /// Runs `kind` at `x` (and `seed`), answering `(values, jacobian, hessian, product)`
    /// for the blocks the kind fills.
    fn answer<'py>(
        &self,
        py: Python<'py>,
        kind: LaneKind,
        x: &Bound<'py, PyAny>,
        seed: Option<(&Bound<'py, PyAny>, Kind)>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let eq = self.rust();
        let (n, m) = (eq.arity(), eq.outputs());
        let symbols = eq.symbols();
        let xb: Block<'py> =
            points::read_points(x, symbols, eq.parameters(), eq.bound_params())?.into();
        let sb: Option<Block<'py>> = match seed {
            Some((s, k)) => {
                let rows = if k == Kind::Weights { m } else { n };
                Some(points::read(s, symbols, rows, k)?.into())
            }
            None => None,
        };
        let p = match (xb.points(), sb.as_ref().and_then(Block::points)) {
            (Some(a), Some(b)) if a != b => {
                return Err(raise(
                    py,
                    Errc::ColumnLength,
                    format!(
                        "column_length: the point batch has {} and the {} batch {b}",
                        count(a, "point"),
                        if kind == LaneKind::Vjp {
                            "weight"
                        } else {
                            "direction"
                        }
                    ),
                ))
            }
            (a, b) => a.or(b),
        };
        let pp = p.unwrap_or(1);
        let xs = xb.rows(p);
        let seeds = sb.as_ref().map(|b| b.rows(p)).unwrap_or_default();

        let wants_values = kind != LaneKind::Gradient;
        let wants_jacobian = matches!(
            kind,
            LaneKind::Jacobian | LaneKind::Gradient | LaneKind::Hessian | LaneKind::Hvp
        );
        // `hvp` answers the gradient of its one output: no output axis.
        let jac_shape = if kind == LaneKind::Hvp {
            let mut s = vec![n];
            s.extend(p);
            s
        } else {
            self.symbol_shape(m, n, 1, p)
        };
        // A scalar function's value (and `J·v`) at one point is a `float`: kept on the
        // stack, no array made.
        let value_shape = self.value_shape(m, p);
        let product_shape = if kind == LaneKind::Jvp {
            value_shape.clone()
        } else {
            let mut s = vec![n];
            s.extend(p);
            s
        };
        let (mut value_cell, mut product_cell) = ([0.0], [0.0]);
        let limit = eq.options().answer_limit;
        let hessian_shape = self.symbol_shape(m, n, 2, p);
        // Even with no rows (`wᵀ·J` and `H·v` of an equation of parameters only: length 0).
        let wants_product = matches!(kind, LaneKind::Jvp | LaneKind::Vjp | LaneKind::Hvp);
        let shapes = [
            (wants_values, &value_shape),
            (wants_jacobian, &jac_shape),
            (kind == LaneKind::Hessian, &hessian_shape),
            (wants_product, &product_shape),
        ];
        let wanted: SmallVec<[&[usize]; 4]> = shapes
            .iter()
            .filter(|(wanted, _)| *wanted)
            .map(|(_, s)| s.as_slice())
            .collect();
        check_limit(&wanted, limit, method_of(kind))?;
        let block = |shape: &[usize]| answer_block(py, shape, limit, method_of(kind), false);
        let values = (wants_values && !value_shape.is_empty())
            .then(|| block(&value_shape))
            .transpose()?;
        let jacobian = wants_jacobian.then(|| block(&jac_shape)).transpose()?;
        let hessian = (kind == LaneKind::Hessian)
            .then(|| block(&hessian_shape))
            .transpose()?;
        let product = (wants_product && !product_shape.is_empty())
            .then(|| block(&product_shape))
            .transpose()?;
        {
            // SAFETY: every array was made just above and is held only here.
            let out = unsafe {
                Out {
                    values: wants_values.then(|| match &values {
                        Some(a) => data(a),
                        None => &mut value_cell[..],
                    }),
                    jacobian: jacobian.as_ref().map(|a| data(a)),
                    hessian: hessian.as_ref().map(|a| data(a)),
                    products: wants_product.then(|| match &product {
                        Some(a) => data(a),
                        None => &mut product_cell[..],
                    }),
                    fresh: true,
                }
            };
            let mut scratch = Vec::new();
            let run = || blocks::run(&eq, kind, &xs, &seeds, pp, out, &mut scratch);
            match p {
                None => run(),
                Some(_) => py.detach(run),
            }
            .or_raise()?;
        }
        let float =
            |v: f64| -> PyResult<Py<PyAny>> { Ok(v.into_pyobject(py)?.into_any().unbind()) };
        let mut answers = Vec::with_capacity(4);
        if wants_values {
            answers.push(match values {
                Some(a) => a.into_any().unbind(),
                None => float(value_cell[0])?,
            });
        }
        if let Some(j) = jacobian {
            answers.push(j.into_any().unbind());
        }
        if let Some(h) = hessian {
            answers.push(h.into_any().unbind());
        }
        if wants_product {
            answers.push(match product {
                Some(a) => a.into_any().unbind(),
                None => float(product_cell[0])?,
            });
        }
        Ok(answers)
    }
}

/// `dot -Tsvg` over `source`, or `None` when Graphviz is missing or fails.
fn render_svg(source: &str) -> Option<String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let source = source.to_string();
    // Written from another thread, so a large graph cannot deadlock on a full pipe.
    let writer = std::thread::spawn(move || stdin.write_all(source.as_bytes()));
    let out = child.wait_with_output().ok()?;
    writer.join().ok()?.ok()?;
    (out.status.success()).then(|| String::from_utf8(out.stdout).ok())?
}

/// The order `k` of `call` (a `univariate_derivative*` method), in `0..=ddx.MAX_ORDER`.
///
/// # Errors
/// `ddx.Error` `order_too_high` for a negative order or one past `ddx.MAX_ORDER` (the
/// same code the Rust call answers past it).
fn order(py: Python<'_>, k: &Int, call: &str) -> PyResult<usize> {
    k.within(
        py,
        call,
        "k",
        ddx::MAX_ORDER,
        Errc::OrderTooHigh,
        "a derivative order",
    )
}

fn tuple(py: Python<'_>, items: Vec<Py<PyAny>>) -> PyResult<Py<PyAny>> {
    Ok(PyTuple::new(py, items)?.into_any().unbind())
}

fn single(mut items: Vec<Py<PyAny>>) -> PyResult<Py<PyAny>> {
    items
        .pop()
        .ok_or_else(|| PyValueError::new_err("the call answered nothing"))
}

#[pymethods]
impl Equation {
    /// Refused: equations are made by `ddx.equation` and `ddx.load`.
    #[new]
    fn py_new() -> PyResult<Self> {
        Err(PyTypeError::new_err(
            "make an equation with ddx.equation(model) or ddx.load(path)",
        ))
    }

    /// The symbol names, in canonical (alphabetical, by bytes) order.
    #[getter]
    fn symbols(&self) -> Vec<String> {
        self.rust().symbols().to_vec()
    }

    /// The symbol count `n`.
    #[getter]
    fn arity(&self) -> usize {
        self.rust().arity()
    }

    /// The parameter names (inputs never differentiated), in canonical order.
    #[getter]
    fn parameters(&self) -> Vec<String> {
        self.rust().parameters().to_vec()
    }

    /// This equation with its parameters bound to `values` (one per parameter: a
    /// sequence in the order of `parameters`, or a dict by name). Every call of the
    /// answer reads them, and a batch of `(n, points)` broadcasts them to every point (a
    /// batch of `(n + q, points)`, or a dict of columns naming a parameter, gives it per
    /// point instead); the answer shares
    /// every lane and kernel with this one, so binding compiles nothing.
    ///
    /// On an equation already bound a dict may name some of the parameters: those are
    /// rebound and the others keep their values. An equation not bound yet is bound whole
    /// (the Rust equation binds all its parameters at once): a dict leaving one out is
    /// `short_point` naming it.
    fn with_params(&self, values: &Bound<'_, PyAny>) -> PyResult<Equation> {
        let eq = self.rust();
        let names = eq.parameters().to_vec();
        let merged;
        let mut values = values;
        if let (Ok(given), Some(bound)) = (values.cast::<PyDict>(), eq.bound_params()) {
            if !names.is_empty() && bound.len() == names.len() {
                let all = PyDict::new(values.py());
                for (name, v) in names.iter().zip(bound) {
                    all.set_item(name, v)?;
                }
                all.update(given.as_mapping())?;
                merged = all.into_any();
                values = &merged;
            }
        }
        let v = match points::read(values, &names, names.len(), Kind::Params)? {
            Spelled::One(v) => v,
            // `read` refuses a batch of parameter values.
            Spelled::Batch(_) => return Err(PyTypeError::new_err("not a batch")),
        };
        Ok(Equation {
            system: self.system,
            inner: RwLock::new(Arc::new(eq.with_params(&v).or_raise()?)),
            recipe: self.recipe.as_ref().map(|r| r.clone_ref(values.py())),
        })
    }

    /// How this equation was built and its bound parameter values, for `ddx.dask` to
    /// rebuild it on a worker: `(recipe, bound)`, `recipe` as the field says (`None`
    /// when loaded), `bound` a list of floats or `None`.
    fn _recipe(&self, py: Python<'_>) -> (Option<Py<PyAny>>, Option<Vec<f64>>) {
        let eq = self.rust();
        let bound = eq
            .bound_params()
            .filter(|b| !b.is_empty())
            .map(<[f64]>::to_vec);
        (self.recipe.as_ref().map(|r| r.clone_ref(py)), bound)
    }

    /// The output count `m`.
    #[getter]
    fn outputs(&self) -> usize {
        self.rust().outputs()
    }

    /// Whether this equation was read from a file rather than built.
    #[getter]
    fn loaded(&self) -> bool {
        self.rust().loaded()
    }

    /// Whether single-point calls are remembered (`ddx.equation(..., remember=True)`):
    /// a repeated point is answered with no sweep, a point with some symbols moved
    /// re-sweeps only what they reach, with the same bits.
    #[getter]
    fn remember(&self) -> bool {
        self.rust().remembers()
    }

    /// Turns the last-call cache on (a fresh, empty one) or off.
    #[pyo3(name = "_set_remember")]
    fn set_remember(&self, on: bool) {
        fn switch<S: ddx::Shape>(e: ddx::Equation<S>, on: bool) -> ddx::Equation<S> {
            if on {
                e.with_cache(ddx::LastValue::new())
            } else {
                e.without_cache()
            }
        }
        self.replace(match (*self.rust()).clone() {
            AnyEquation::Scalar(e) => AnyEquation::Scalar(switch(e, on)),
            AnyEquation::System(e) => AnyEquation::System(switch(e, on)),
        });
    }

    /// What the last-call cache has counted (`hits`, `resweeps`, `sweeps`, `busy`,
    /// `instructions`), or `None` when the equation does not remember.
    fn cache_stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(s) = on!(&*self.rust(), e => e.cache_stats()) else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("hits", s.hits)?;
        d.set_item("resweeps", s.resweeps)?;
        d.set_item("sweeps", s.sweeps)?;
        d.set_item("busy", s.busy)?;
        d.set_item("instructions", s.instructions)?;
        Ok(Some(d))
    }

    /// `f` at the point or batch.
    fn evaluate(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let eq = self.rust();
        // One point straight to the per-point call; a batch (in any spelling the other
        // calls take: parameter rows, rows one by one, a dict of columns) as theirs.
        let one = points::read_points(x, eq.symbols(), eq.parameters(), eq.bound_params())?;
        if let points::PointBlock::Spelled(Spelled::One(v)) = one {
            let m = eq.outputs();
            // The answer is one value (a float) or `m`: within the limit as any block.
            let shape: &[usize] = if self.system || m != 1 { &[m] } else { &[] };
            check_limit(&[shape], eq.options().answer_limit, "Equation.evaluate")?;
            if !self.system && m == 1 {
                let mut out = [0.0];
                eq.evaluate_into(&v[..], &mut out).or_raise()?;
                return Ok(out[0].into_pyobject(py)?.into_any().unbind());
            }
            let a = zeros(py, &[m]);
            // SAFETY: `a` was just made and is held only here.
            eq.evaluate_into(&v[..], unsafe { data(&a) }).or_raise()?;
            return Ok(a.into_any().unbind());
        }
        single(self.answer(py, LaneKind::Value, x, None)?)
    }

    /// `f` at the point or batch: the same as `evaluate`.
    fn __call__(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        self.evaluate(py, x)
    }

    /// `(f, J)`: `f` a float (`(m,)` for a system), `J` `(n,)` (`(m, n)`); a batch appends
    /// the point axis. The point block of a batch may hold parameter rows (module doc).
    fn jacobian(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let a = self.answer(py, LaneKind::Jacobian, x, None)?;
        tuple(py, a)
    }

    /// `J` alone, from a lane that does not compute `f`.
    fn gradient(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        single(self.answer(py, LaneKind::Gradient, x, None)?)
    }

    /// `(f, J, H)`, the Hessian dense.
    fn hessian(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let a = self.answer(py, LaneKind::Hessian, x, None)?;
        tuple(py, a)
    }

    /// `(f, J·v)`: `v` over the symbols, in any spelling a point takes.
    fn jvp(
        &self,
        py: Python<'_>,
        v: &Bound<'_, PyAny>,
        x: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let a = self.answer(py, LaneKind::Jvp, x, Some((v, Kind::Direction)))?;
        tuple(py, a)
    }

    /// `(f, wᵀ·J)`: `w` one weight per function, positional.
    fn vjp(
        &self,
        py: Python<'_>,
        w: &Bound<'_, PyAny>,
        x: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let a = self.answer(py, LaneKind::Vjp, x, Some((w, Kind::Weights)))?;
        tuple(py, a)
    }

    /// `(f, ∇f, H·v)`: one output only.
    fn hvp(
        &self,
        py: Python<'_>,
        v: &Bound<'_, PyAny>,
        x: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let eq = self.rust();
        if eq.outputs() != 1 {
            return Err(ddx::Error::NotScalar {
                call: "hvp",
                outputs: eq.outputs(),
            })
            .or_raise();
        }
        let a = self.answer(py, LaneKind::Hvp, x, Some((v, Kind::Direction)))?;
        tuple(py, a)
    }

    /// The `k`-th derivative `dᵏf/dxᵏ` at `x0` of a function of one symbol and one output
    /// (`k = 0` is the value), by one sweep of Taylor arithmetic; `k ≤ ddx.MAX_ORDER`.
    fn univariate_derivative(
        &self,
        py: Python<'_>,
        k: Int,
        x0: &Bound<'_, PyAny>,
    ) -> PyResult<f64> {
        let k = order(py, &k, "Equation.univariate_derivative")?;
        let x0 = real_argument(x0, "Equation.univariate_derivative: x0")?;
        on!(&*self.rust(), e => e.univariate_derivative_of_order(k, x0)).or_raise()
    }

    /// Every derivative `f(x0), f'(x0), …, f⁽ᵏ⁾(x0)` (`k + 1` values) from one sweep, each
    /// the bits `univariate_derivative` answers.
    fn univariate_derivatives<'py>(
        &self,
        py: Python<'py>,
        k: Int,
        x0: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, numpy::PyArray1<f64>>> {
        let k = order(py, &k, "Equation.univariate_derivatives")?;
        let x0 = real_argument(x0, "Equation.univariate_derivatives: x0")?;
        let d = on!(&*self.rust(), e => e.univariate_derivatives(k, x0)).or_raise()?;
        Ok(numpy::PyArray1::from_vec(py, d))
    }

    /// How many colour groups compress the Hessian (products `H·v_k` per Hessian).
    #[getter]
    fn hessian_colors(&self, py: Python<'_>) -> usize {
        let eq = self.rust();
        py.detach(|| eq.hessian_colors())
    }

    /// The Jacobian's structural nonzeros, as `(function, symbol)` pairs in row-major order.
    #[getter]
    fn jacobian_pattern(&self) -> Vec<(usize, usize)> {
        let eq = self.rust();
        eq.jacobian_pattern()
            .entries()
            .iter()
            .map(|c| (c.row, c.column))
            .collect()
    }

    /// The gradient lane in Graphviz form; `all=True` draws the pruned nodes too.
    #[pyo3(signature = (*, all = false))]
    fn to_dot(&self, all: bool) -> String {
        self.rust().to_dot(all)
    }

    /// The gradient lane as SVG, for notebooks: rendered by Graphviz's `dot` when it is on
    /// the `PATH`, else `None` (Graphviz is never required).
    fn _repr_svg_(&self, py: Python<'_>) -> Option<String> {
        let dot = self.rust().to_dot(false);
        py.detach(|| render_svg(&dot))
    }

    /// How many nodes a call for `want` evaluates.
    #[pyo3(signature = (*, want = Int::JACOBIAN), text_signature = "($self, *, want=1)")]
    fn nodes(&self, py: Python<'_>, want: Int) -> PyResult<usize> {
        self.rust()
            .nodes(lane_kind(py, &want, "Equation.nodes")?)
            .or_raise()
    }

    /// Whether calls of the Jacobian lane are answered by compiled code now.
    #[getter]
    fn uses_kernel(&self) -> bool {
        self.rust().uses_kernel_of(LaneKind::Jacobian)
    }

    /// Blocks (with the GIL released) until no compile of lane `want` is queued or
    /// running; answers whether a kernel now answers it.
    #[pyo3(signature = (*, want = Int::JACOBIAN), text_signature = "($self, *, want=1)")]
    fn wait_for_kernel(&self, py: Python<'_>, want: Int) -> PyResult<bool> {
        let kind = lane_kind(py, &want, "Equation.wait_for_kernel")?;
        let eq = self.rust();
        Ok(py.detach(|| eq.wait_for_kernel_of(kind)))
    }

    /// Under `Backend.DEVICE`, the device answering, as `"<platform> / <device> / <driver>
    /// / <version>"`; `None` under every other backend. Raises `ddx.Error` when no device
    /// answers (`no_device`: no OpenCL library, no platform, no double-precision device,
    /// nothing matching `Options.device`, a build without OpenCL; `device_compile` with the
    /// driver's build log; `device_launch`): the calls answer from the CPU then. Chooses
    /// the device if no lane has yet (with the GIL released while OpenCL loads).
    #[getter]
    fn device_status(&self, py: Python<'_>) -> PyResult<Option<String>> {
        let eq = self.rust();
        match py.detach(|| eq.device_status()) {
            None => Ok(None),
            Some(r) => r.map(|info| Some(info.to_string())).or_raise(),
        }
    }

    /// Columns of `points` points for lane `want` kept in device memory across calls, with
    /// the lane's kernel (a `ddx.DeviceColumns`: `write`, `run`, `read`, each only when
    /// asked). Waits for the lane's device kernel first, with the GIL released. Raises
    /// `ddx.Error`: `no_device` unless the backend is `DEVICE` and a device answers, the
    /// lane's `device_compile`, `device_launch` when the device cannot hold the columns.
    #[pyo3(
        signature = (points, *, want = Int::JACOBIAN),
        text_signature = "($self, points, *, want=1)"
    )]
    fn device_columns(
        &self,
        py: Python<'_>,
        points: Int,
        want: Int,
    ) -> PyResult<crate::device::DeviceColumns> {
        crate::device::make(py, &self.rust(), &want, &points)
    }

    /// What the code generator has done: a dict of counts and the last failures, and under
    /// `"lanes"` (empty unless the backend compiles) one dict per lane by name
    /// (`"gradient"`, …): the kernel's `level` (`None`
    /// while interpreted, `"off"`, `"speed"`), its `compiled` and `loaded` counts, its last
    /// `error`, whether it is `refined` or `refining`, and `batch_engine`: the engine its
    /// batches run on once the first ones measured it (`"kernel"` or `"interpreter"`,
    /// `None` before).
    #[getter]
    fn jit_status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.rust().jit_status();
        let d = PyDict::new(py);
        d.set_item("compiled", s.compiled)?;
        d.set_item("loaded", s.loaded)?;
        d.set_item("refused", s.refused)?;
        d.set_item("written", s.written)?;
        d.set_item("error", s.error.map(|e| e.to_string()))?;
        d.set_item("cache_error", s.cache_error.map(|e| e.to_string()))?;
        let lanes = PyDict::new(py);
        for l in s.lanes {
            let lane = PyDict::new(py);
            // `Off` → "off", `Speed` → "speed"; the engines likewise.
            let name = |d: &dyn std::fmt::Debug| format!("{d:?}").to_lowercase();
            let level = l.level.map(|o| name(&o));
            lane.set_item("level", level)?;
            lane.set_item("compiled", l.compiled)?;
            lane.set_item("loaded", l.loaded)?;
            lane.set_item("error", l.error.map(|e| e.to_string()))?;
            lane.set_item("refined", l.refined)?;
            lane.set_item("refining", l.refining)?;
            let engine = l.batch_engine.map(|e| name(&e));
            lane.set_item("batch_engine", engine)?;
            lanes.set_item(l.kind.name(), lane)?;
        }
        d.set_item("lanes", lanes)?;
        Ok(d)
    }

    /// The options in force, as a `ddx.Options`.
    #[getter]
    fn get_options(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let raw = options::to_raw(self.rust().options());
        Ok(options_module(py)?
            .call_method1("_from_raw", (raw,))?
            .unbind())
    }

    /// Sets the options (validated as a `ddx.Options`); never blocks: calls interpret until
    /// a kernel lands.
    #[setter]
    fn set_options(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let raw: options::Raw = options_module(py)?
            .call_method1("_to_raw", (value,))?
            .extract()?;
        self.apply(options::from_raw(raw)?);
        Ok(())
    }

    /// Sets the options with `fields` changed (and `backend=COMPILE` unless given), waits
    /// for the Jacobian lane's kernel with the GIL released, and answers this equation.
    #[pyo3(signature = (**fields))]
    fn compile<'py>(
        slf: &Bound<'py, Self>,
        fields: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, Self>> {
        let py = slf.py();
        let this = slf.get();
        let current = options::to_raw(this.rust().options());
        let raw: options::Raw = options_module(py)?
            .call_method1("_compiled", (current, fields))?
            .extract()?;
        this.apply(options::from_raw(raw)?);
        let eq = this.rust();
        py.detach(|| eq.wait_for_kernel_of(LaneKind::Jacobian));
        Ok(slf.clone())
    }

    /// `Call` buffers bound to `x` for calls in a loop; `want` picks the blocks filled.
    #[pyo3(signature = (x, *, want = Int::JACOBIAN), text_signature = "($self, x, *, want=1)")]
    fn buffer(
        slf: &Bound<'_, Self>,
        x: &Bound<'_, PyAny>,
        want: Int,
    ) -> PyResult<crate::call::Call> {
        let kind = lane_kind(slf.py(), &want, "Equation.buffer")?;
        crate::call::Call::bind(slf, x, kind)
    }

    /// This equation as bytes: its symbols, graph, the lanes prepared so far, its options
    /// and the kernels it kept (`Options.retain_object`), as `save` writes them.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let eq = self.rust();
        let bytes = py.detach(|| eq.to_bytes()).or_raise()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Writes this equation to `path` (atomically: a reader sees the old file or the new).
    fn save(&self, py: Python<'_>, path: FilePath) -> PyResult<()> {
        let path = path.0;
        let eq = self.rust();
        py.detach(|| eq.save(&path)).or_raise()
    }

    /// Raises `ddx.Error` unless the file at `path` holds this equation (`archive_io`,
    /// `bad_archive`, `archive_corrupt`, `archive_mismatch` say why).
    fn verify(&self, py: Python<'_>, path: FilePath) -> PyResult<()> {
        let path = path.0;
        let eq = self.rust();
        py.detach(|| eq.verify(&path)).or_raise()
    }

    /// Pickles through the archive bytes (kernels and bound parameter values included; a
    /// kernel made for another host or build is never run: its lane compiles instead),
    /// with whether it remembers its last calls (an unpickled one starts with an empty
    /// cache).
    #[allow(clippy::type_complexity)]
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Py<PyAny>, (Bound<'py, PyBytes>, bool))> {
        let f = py.import("ddx._ddx")?.getattr("_unpickle")?.unbind();
        Ok((f, (self.to_bytes(py)?, self.remember())))
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let eq = self.rust();
        let symbols = PyList::new(py, eq.symbols())?.repr()?;
        Ok(format!(
            "ddx.Equation(symbols={symbols}, outputs={}{})",
            eq.outputs(),
            if self.system { ", system=True" } else { "" }
        ))
    }

    /// Each output with its structurally nonzero partials underneath.
    fn __str__(&self) -> String {
        self.rust().text()
    }
}

impl Equation {
    fn apply(&self, options: ddx::Options) {
        let mut eq = (*self.rust()).clone();
        eq.set_options(options);
        self.replace(eq);
    }
}

/// The outputs a model callable returned: one expression (or number), or a tuple or list of
/// them (a system).
fn model_outputs(out: &Bound<'_, PyAny>) -> PyResult<(Vec<Expr>, bool)> {
    if let Some(e) = crate::expression::operand(out)? {
        return Ok((vec![e], false));
    }
    let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = out.cast::<PyTuple>() {
        t.iter().collect()
    } else if let Ok(l) = out.cast::<PyList>() {
        l.iter().collect()
    } else {
        return Err(not_an_output(out));
    };
    let mut exprs = Vec::with_capacity(items.len());
    for item in &items {
        exprs.push(crate::expression::operand(item)?.ok_or_else(|| not_an_output(item))?);
    }
    Ok((exprs, true))
}

fn not_an_output(obj: &Bound<'_, PyAny>) -> PyErr {
    let ty = obj
        .get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string());
    PyTypeError::new_err(format!(
        "a model returns a ddx.Expression, or a tuple of them for a system; this one returned {ty}"
    ))
}

/// Runs `model` (a callable of no arguments) as a model and builds its equation. An
/// exception the model raises propagates as it is.
#[pyfunction]
fn equation_model(model: &Bound<'_, PyAny>) -> PyResult<Equation> {
    let model_fn = model;
    let mut failure: Option<PyErr> = None;
    let mut system = false;
    let built = ddx::ir::build(|| -> Vec<Expr> {
        match model.call0().and_then(|out| model_outputs(&out)) {
            Ok((exprs, sys)) => {
                system = sys;
                exprs
            }
            Err(e) => {
                failure = Some(e);
                Vec::new()
            }
        }
    });
    if let Some(e) = failure {
        return Err(e);
    }
    let model = built.or_raise()?;
    let recipe = ("model", model_fn).into_pyobject(model_fn.py())?;
    Ok(Equation::built(
        AnyEquation::from_model(model, system).or_raise()?,
        recipe.into_any(),
    ))
}

/// The scalar equation `text` describes, e.g. `"exp(x) * sin(y)"`; each name in `params`
/// is a parameter, and a call may name one of the user `functions`.
#[pyfunction]
#[pyo3(signature = (text, params = Vec::new(), functions = Vec::new()))]
fn equation_text(
    text: &Bound<'_, PyString>,
    params: Vec<Name>,
    functions: Vec<Bound<'_, crate::function::Function>>,
) -> PyResult<Equation> {
    let py = text.py();
    let registry = crate::function::registry(&functions);
    let source = names::utf8(text, Errc::BadSyntax, "a text")?;
    let formula = ddx::Formula::parse_with(source, &registry).or_raise()?;
    let params: Vec<String> = params.into_iter().map(|p| p.0).collect();
    check_params(py, std::slice::from_ref(&formula), &params)?;
    let model = ddx::ir::text::model_with_params(&[formula], &params).or_raise()?;
    let recipe = ("text", text, params, functions).into_pyobject(py)?;
    Ok(Equation::built(
        AnyEquation::from_model(model, false).or_raise()?,
        recipe.into_any(),
    ))
}

/// The system whose function `i` is `texts[i]`; each name in `params` is a parameter, and
/// a call may name one of the user `functions`.
#[pyfunction]
#[pyo3(signature = (texts, params = Vec::new(), functions = Vec::new()))]
fn system_text(
    py: Python<'_>,
    texts: Vec<Text>,
    params: Vec<Name>,
    functions: Vec<Bound<'_, crate::function::Function>>,
) -> PyResult<Equation> {
    let texts: Vec<String> = texts.into_iter().map(|t| t.0).collect();
    let params: Vec<String> = params.into_iter().map(|p| p.0).collect();
    let registry = crate::function::registry(&functions);
    let formulas = ddx::ir::text::parse_all(&texts, &registry).or_raise()?;
    check_params(py, &formulas, &params)?;
    let model = ddx::ir::text::model_with_params(&formulas, &params).or_raise()?;
    let recipe = ("system", texts, params, functions).into_pyobject(py)?;
    Ok(Equation::built(
        AnyEquation::from_model(model, true).or_raise()?,
        recipe.into_any(),
    ))
}

/// Refuses texts that use a name the running Python could not write
/// ([`names::why_not_a_name`]: the text's grammar takes it, but the Python's Unicode tables
/// are older; `bad_syntax`, as the grammar refuses a non-name, so that every equation the
/// package builds loads back), and a `params=` list holding what is not a name
/// ([`names::check`]: `bad_name`, as `ddx.param` refuses it), naming a parameter twice
/// (`duplicate_symbol`) or a name the texts do not use (`unknown_symbol`, with the nearest
/// name they use), where the Rust library would keep one of the two, or add an input
/// nothing reads.
fn check_params(py: Python<'_>, formulas: &[ddx::Formula], params: &[String]) -> PyResult<()> {
    let mut used: Vec<&str> = formulas
        .iter()
        .flat_map(|f| f.names().iter().map(String::as_str))
        .collect();
    used.sort_unstable();
    used.dedup();
    for name in &used {
        if let Some(why) = names::why_not_a_name(py, name) {
            let code = Errc::BadSyntax;
            return Err(raise(
                py,
                code,
                format!(
                    "{code}: the text's name `{}` cannot name a symbol: {why}",
                    quoted(name)
                ),
            ));
        }
    }
    for (i, p) in params.iter().enumerate() {
        names::check(py, p, "a parameter")?;
        if params[..i].contains(p) {
            let code = Errc::DuplicateSymbol;
            return Err(raise(
                py,
                code,
                format!("{code}: params names the parameter `{}` twice", quoted(p)),
            ));
        }
        if used.binary_search(&p.as_str()).is_err() {
            let code = Errc::UnknownSymbol;
            let nearest = ddx::ir::error::nearest_name(p, used.iter().copied())
                .map_or_else(String::new, |n| {
                    format!(" (did you mean `{}`?)", quoted(&n))
                });
            return Err(raise(
                py,
                code,
                format!(
                    "{code}: params names `{}`, which the text does not use{nearest}; its \
                     names are {}",
                    quoted(p),
                    if used.is_empty() {
                        "none".to_string()
                    } else {
                        used.join(", ")
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// The equation saved at `path` (no model runs, nothing is rebuilt).
#[pyfunction]
fn load(py: Python<'_>, path: FilePath) -> PyResult<Equation> {
    let path = path.0;
    let eq = py.detach(|| AnyEquation::load(&path)).or_raise()?;
    loaded(py, eq)
}

/// `eq`, loaded from a file or bytes, as an `Equation` of the package: refused when one
/// of its names is not a name for Python ([`names::why_not_a_name`]). The Rust library's
/// `rt::var` and `rt::param` take any non-empty name (`"a b"`, `"sin"`, `"ﬁ"`), and an
/// equation saved from Rust keeps them; the package takes only the names it could build
/// itself, so that every equation it holds prints as a text that parses back, and names
/// Python takes for one are one.
///
/// # Errors
/// `ddx.Error` `bad_name` naming the first such symbol or parameter and the rule.
fn loaded(py: Python<'_>, eq: AnyEquation) -> PyResult<Equation> {
    let what = [
        (
            eq.symbols(),
            "a symbol of an equation the Python package loads",
        ),
        (
            eq.parameters(),
            "a parameter of an equation the Python package loads",
        ),
    ];
    for (list, what) in what {
        for name in list {
            names::check(py, name, what)?;
        }
    }
    Ok(Equation::new(eq))
}

/// The equation `data` holds (as `Equation.to_bytes` made them, in this or another
/// process): `ddx.from_bytes`, and what unpickling calls. Nothing is rebuilt.
///
/// # Errors
/// `ddx.Error` `bad_archive` for bytes that are not a ddx archive (or a format this build
/// does not read), `archive_corrupt` for damaged or truncated ones, `bad_name` for an
/// equation whose names Python could not write ([`loaded`]).
#[pyfunction]
fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Equation> {
    let eq = py.detach(|| AnyEquation::from_bytes(data)).or_raise()?;
    loaded(py, eq)
}

/// The unpickler of `Equation`: the equation `data` holds, remembering its last calls
/// when `remember` (a fresh cache).
#[pyfunction]
fn _unpickle(py: Python<'_>, data: &[u8], remember: bool) -> PyResult<Equation> {
    let eq = from_bytes(py, data)?;
    if remember {
        eq.set_remember(true);
    }
    Ok(eq)
}

/// Raises unless this build can read the equation file at `path` at all.
#[pyfunction]
fn verify_file(py: Python<'_>, path: FilePath) -> PyResult<()> {
    let path = path.0;
    py.detach(|| ddx::verify(&path)).or_raise()
}

/// Adds `Equation` and its constructors to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Equation>()?;
    m.add_class::<Expression>()?;
    m.add_function(wrap_pyfunction!(equation_model, m)?)?;
    m.add_function(wrap_pyfunction!(equation_text, m)?)?;
    m.add_function(wrap_pyfunction!(system_text, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_unpickle, m)?)?;
    m.add_function(wrap_pyfunction!(verify_file, m)?)?;
    Ok(())
}
