//! Points, directions and weights from Python: every spelling a call accepts.
//!
//! - a sequence of numbers (a `list`, a `tuple`, a 1-D array), one value per symbol in
//!   canonical (alphabetical) order; a bare number for a one-symbol equation;
//! - a `dict` keyed by symbol name, in any order (points and directions only: weights are
//!   one per function and positional);
//! - a 2-D array of shape `(rows, points)`: a **batch**, one row per symbol (or per
//!   function, for weights). Any float64 array-like is read: a C-contiguous float64 array
//!   is used in place, without a copy; another layout or a real dtype (integers, `bool`,
//!   `float32`) is copied once into a C-contiguous float64 array. Any other dtype, or more
//!   than two dimensions, is a `ddx.Error` naming the shape expected.
//!
//! - for the point block of a call that takes batches ([`read_points`]), on an equation
//!   with `q` parameters: a 2-D array of `n + q` rows (symbols, then parameters); a dict
//!   of columns by name holding at least one sequence or array (a parameter left out is
//!   its bound value); a list of `n` or `n + q` rows. Any row of length 1 (or a number) is
//!   broadcast to the batch's length, the longest row's.
//!
//! Invariant: a [`Spelled::Batch`] has exactly the rows its role needs and is C-contiguous
//! float64, so its rows are the columns the Rust batch calls take.

use crate::args::real;
use crate::errors::{raise, OrRaise};
use crate::names;
use ddx::ir::text::quoted;
use ddx::ir::words::{agree, count};
use ddx::point::{Point, Role};
use ddx::{Errc, Error, VectorRole};
use numpy::{
    PyArray1, PyArray2, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use smallvec::SmallVec;

/// Values of one point, on the stack for up to 16 symbols.
pub(crate) type Values = SmallVec<[f64; 16]>;

/// What a vector passed to a call stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A point: one value per symbol.
    Point,
    /// A direction (`jvp`, `hvp`): one value per symbol.
    Direction,
    /// Weights (`vjp`): one per function, positional only.
    Weights,
    /// Parameter values (`with_params`): one per parameter, never a batch.
    Params,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Point => "point",
            Kind::Direction => "direction",
            Kind::Weights => "weight vector",
            Kind::Params => "parameter vector",
        }
    }

    /// The error code of a vector of the wrong shape or dtype.
    fn code(self) -> Errc {
        match self {
            Kind::Point | Kind::Params => Errc::WrongArity,
            Kind::Direction | Kind::Weights => Errc::WrongDirection,
        }
    }
}

/// The parameters of the equation a point is read for, so that messages about a point's
/// shape or names can say where the parameter values go.
#[derive(Clone, Copy)]
pub(crate) struct Context<'a> {
    /// The symbols' names.
    symbols: &'a [String],
    /// The parameters' names (none: nothing to add).
    params: &'a [String],
    /// Whether they are bound (`Equation.with_params`).
    bound: bool,
}

impl<'a> Context<'a> {
    /// No parameters: messages as the Rust library words them.
    const NONE: Context<'static> = Context {
        symbols: &[],
        params: &[],
        bound: false,
    };

    /// `(n + q, points)` and what its rows are.
    fn full_batch(&self) -> String {
        let (n, q) = (self.symbols.len(), self.params.len());
        format!(
            "({}, points): {} ({}), then {} ({})",
            n + q,
            count(n, "symbol row"),
            self.symbols.join(", "),
            count(q, "parameter row"),
            self.params.join(", ")
        )
    }

    /// Where a point's parameter values come from, for a message about a single point:
    /// empty without parameters.
    fn single_point_hint(&self) -> String {
        let q = self.params.len();
        if q == 0 {
            return String::new();
        }
        let names = self.params.join(", ");
        let example = format!(
            "eq.with_params({{{}}})",
            self.params
                .iter()
                .map(|p| format!("\"{p}\": ..."))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let source = if self.bound {
            agree(q, "takes its bound value", "take their bound values").to_string()
        } else {
            format!(
                "{} not bound: bind {} with {example}",
                agree(q, "is", "are"),
                agree(q, "it", "them")
            )
        };
        format!(
            "; a single point holds the symbols only ({}), and the {} ({names}) {source}, or \
             give {} per point in a batch of shape {}",
            self.symbols.join(", "),
            agree(q, "parameter", "parameters"),
            agree(q, "it", "them"),
            self.full_batch()
        )
    }

    /// The batch shapes accepted, for a message about a batch of the wrong row count.
    fn batch_shapes(&self, rows: usize) -> String {
        if self.params.is_empty() {
            return format!("({rows}, points)");
        }
        if self.bound {
            format!(
                "({}, points) (the symbols; the bound parameters broadcast) or {}",
                self.symbols.len(),
                self.full_batch()
            )
        } else {
            format!("{}, as the parameters are not bound", self.full_batch())
        }
    }
}

/// A shape as Python spells it: `(2,)`, `(2, 3)`, `()`.
pub(crate) fn py_shape(shape: &[usize]) -> String {
    match shape {
        [one] => format!("({one},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A point (direction, weights) as read.
pub(crate) enum Spelled<'py> {
    /// One vector, in canonical order, of the length its role needs.
    One(Values),
    /// A batch: a C-contiguous float64 array of shape `(rows, points)`.
    Batch(Bound<'py, PyArray2<f64>>),
}

static NUMPY_ASARRAY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn asarray<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let f = NUMPY_ASARRAY.get_or_try_init(py, || {
        py.import("numpy")
            .and_then(|m| m.getattr("asarray"))
            .map(Bound::unbind)
    })?;
    f.bind(py).call1((obj,))
}

/// The error for a vector of `got` values where `rows` are needed.
fn length_error(kind: Kind, rows: usize, got: usize) -> Error {
    match kind {
        // For parameters `fill` raises these with its own message (the Rust ones count
        // symbols).
        Kind::Params | Kind::Point if got < rows => Error::ShortPoint {
            expected: rows,
            got,
        },
        Kind::Params | Kind::Point => Error::WrongArity {
            expected: rows,
            got,
        },
        Kind::Direction => Error::WrongDirection {
            role: VectorRole::Direction,
            expected: rows,
            got,
        },
        Kind::Weights => Error::WrongDirection {
            role: VectorRole::Covector,
            expected: rows,
            got,
        },
    }
}

/// A `ddx.Error` for an array of the wrong shape, naming the shape expected.
fn shape_error(py: Python<'_>, kind: Kind, rows: usize, what: String) -> PyErr {
    shape_or_dtype_error(py, kind.code(), kind, rows, what)
}

/// A `ddx.Error` `wrong_dtype` for an array (or row) whose values are not real numbers.
fn dtype_error(py: Python<'_>, kind: Kind, rows: usize, what: String) -> PyErr {
    shape_or_dtype_error(py, Errc::WrongDtype, kind, rows, what)
}

/// A `ddx.Error` of `code` saying what a `kind` vector is and what was given.
fn shape_or_dtype_error(
    py: Python<'_>,
    code: Errc,
    kind: Kind,
    rows: usize,
    what: String,
) -> PyErr {
    let values = count(rows, "float64 value");
    let batch = if kind == Kind::Params {
        " (one per parameter; not a batch)".to_string()
    } else {
        format!(" or a batch of shape ({rows}, points)")
    };
    raise(
        py,
        code,
        format!(
            "{code}: a {} here is {values} (shape ({rows},)){batch}; got {what}{}",
            kind.noun(),
            if code == Errc::WrongDtype {
                " (real dtypes are read: floats, integers, bool)"
            } else {
                ""
            }
        ),
    )
}

/// Reads `obj` as a `kind` vector for an equation over `symbols` (`rows` values: the
/// symbol count, or the function count for weights).
///
/// # Errors
/// The codes of the Rust [`Point`] spellings (`short_point`, `wrong_arity`,
/// `unknown_symbol`, `duplicate_symbol`, `wrong_direction`); `wrong_arity` or
/// `wrong_direction` for an array of the wrong shape or a dtype that is not real;
/// `TypeError` for a dict key that is not a string.
pub(crate) fn read<'py>(
    obj: &Bound<'py, PyAny>,
    symbols: &[String],
    rows: usize,
    kind: Kind,
) -> PyResult<Spelled<'py>> {
    read_in(obj, symbols, rows, kind, Context::NONE)
}

/// [`read`], its messages saying where the parameters of `ctx` go.
fn read_in<'py>(
    obj: &Bound<'py, PyAny>,
    symbols: &[String],
    rows: usize,
    kind: Kind,
    ctx: Context<'_>,
) -> PyResult<Spelled<'py>> {
    let role = match kind {
        Kind::Point | Kind::Params => Role::Point,
        Kind::Direction | Kind::Weights => Role::Direction,
    };
    let mut out: Values = SmallVec::from_elem(0.0, rows);
    if let Ok(d) = obj.cast::<PyDict>() {
        if kind == Kind::Weights {
            return Err(raise(
                obj.py(),
                Errc::WrongDirection,
                "wrong_direction: weights are one per function, in order: pass a sequence, \
                 not a dict"
                    .to_string(),
            ));
        }
        named(d, symbols, &mut out, kind, role, ctx)?;
        return Ok(Spelled::One(out));
    }
    if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyInt>() {
        let v = real(obj, kind.what())?;
        fill(&[v], &mut out, kind, symbols, ctx)?;
        return Ok(Spelled::One(out));
    }
    if let Some(values) = flat_sequence(obj, kind)? {
        fill(&values, &mut out, kind, symbols, ctx)?;
        return Ok(Spelled::One(out));
    }
    array(obj, rows, symbols, &mut out, kind, ctx)
}

/// The values of a list or tuple of plain numbers, or `None` when it is anything else (a
/// nested list, say: read as an array).
fn flat_sequence(obj: &Bound<'_, PyAny>, kind: Kind) -> PyResult<Option<Values>> {
    let items = if let Ok(l) = obj.cast::<PyList>() {
        l.iter().collect::<SmallVec<[_; 16]>>()
    } else if let Ok(t) = obj.cast::<PyTuple>() {
        t.iter().collect()
    } else {
        return Ok(None);
    };
    let mut values = Values::with_capacity(items.len());
    for item in items {
        if item.is_instance_of::<PyFloat>() || item.is_instance_of::<PyInt>() {
            values.push(real(&item, kind.what())?);
        } else {
            return Ok(None);
        }
    }
    Ok(Some(values))
}

/// Positional values into `out`, with the role's error on a length mismatch (`names`:
/// the symbols, or the parameters for [`Kind::Params`]).
fn fill(
    values: &[f64],
    out: &mut [f64],
    kind: Kind,
    names: &[String],
    ctx: Context<'_>,
) -> PyResult<()> {
    if values.len() == out.len() {
        out.copy_from_slice(values);
        return Ok(());
    }
    let e = length_error(kind, out.len(), values.len());
    if kind == Kind::Point && !ctx.params.is_empty() {
        let code = e.code();
        let message = format!(
            "{}{}",
            crate::errors::python_message(&e),
            ctx.single_point_hint()
        );
        return Err(Python::attach(|py| raise(py, code, message)));
    }
    if kind != Kind::Params {
        return Err(e).or_raise();
    }
    let code = e.code();
    Err(Python::attach(|py| {
        raise(
            py,
            code,
            format!(
                "{code}: {} given, but the equation has {} ({})",
                count(values.len(), "parameter value"),
                count(out.len(), "parameter"),
                names.join(", ")
            ),
        )
    }))
}

impl Kind {
    /// What a number given for this kind is, for messages.
    fn what(self) -> &'static str {
        match self {
            Kind::Point => "the point",
            Kind::Direction => "the direction",
            Kind::Weights => "the weight vector",
            Kind::Params => "the parameter values",
        }
    }
}

/// A dict keyed by symbol name into `out`, through the Rust named spelling (so the same
/// errors: unknown, duplicate or missing names; for [`Kind::Params`], said of
/// parameters).
fn named(
    d: &Bound<'_, PyDict>,
    symbols: &[String],
    out: &mut [f64],
    kind: Kind,
    role: Role,
    ctx: Context<'_>,
) -> PyResult<()> {
    let maps = if kind == Kind::Params {
        "parameter values map each parameter".to_string()
    } else {
        format!("{}, a dict, maps each symbol", kind.what())
    };
    let mut keys: SmallVec<[(Bound<'_, PyAny>, f64); 16]> = SmallVec::new();
    for (k, v) in d.iter() {
        let value = if v.is_instance_of::<PyInt>() {
            real(&v, kind.what())?
        } else {
            v.extract::<f64>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "{maps} to one number; `{}` maps to {}",
                    quoted(&k.to_string()),
                    v.get_type()
                        .name()
                        .map_or_else(|_| "?".to_string(), |n| n.to_string())
                ))
            })?
        };
        keys.push((k, value));
    }
    let mut pairs: SmallVec<[(&str, f64); 16]> = SmallVec::with_capacity(keys.len());
    for (k, v) in &keys {
        let s = k.cast::<PyString>().map_err(|_| {
            PyTypeError::new_err(format!(
                "{}, a dict, is keyed by symbol names; got key `{}`",
                kind.what(),
                quoted(&k.to_string())
            ))
        })?;
        pairs.push((names::utf8(s, Errc::BadName, "a key")?, *v));
    }
    let what = if kind == Kind::Params {
        "a parameter"
    } else {
        "a symbol"
    };
    let filled = pairs.as_slice().fill_as(symbols, out, role);
    if let Err(Error::UnknownSymbol { name, .. }) = &filled {
        if let Some(e) = Python::attach(|py| names::not_a_key(py, name, what)) {
            return Err(e);
        }
    }
    match filled {
        Err(e) if kind == Kind::Params => {
            let code = e.code();
            let message = match e {
                Error::UnknownSymbol { name, nearest } => format!(
                    "{code}: the equation has no parameter `{}`{}",
                    quoted(&name),
                    nearest.map_or_else(String::new, |n| format!(
                        " (did you mean `{}`?)",
                        quoted(&n)
                    ))
                ),
                Error::MissingSymbol { name } => format!(
                    "{code}: the parameter values give no value for parameter `{}`: an \
                     equation whose parameters are not bound yet is bound whole, every \
                     parameter at once ({}); one already bound may be given some of them, \
                     the others keeping their values",
                    quoted(&name),
                    symbols.join(", ")
                ),
                other => other.to_string(),
            };
            Err(Python::attach(|py| raise(py, code, message)))
        }
        Err(Error::UnknownSymbol { name, .. })
            if kind == Kind::Point && ctx.params.contains(&name) =>
        {
            let code = Errc::UnknownSymbol;
            let message = format!(
                "{code}: `{}` is a parameter of the equation, not a symbol{}",
                quoted(&name),
                ctx.single_point_hint()
            );
            Err(Python::attach(|py| raise(py, code, message)))
        }
        r => r.or_raise(),
    }
}

/// An array-like: a point (0-D, 1-D) or a batch (2-D).
fn array<'py>(
    obj: &Bound<'py, PyAny>,
    rows: usize,
    names: &[String],
    out: &mut Values,
    kind: Kind,
    ctx: Context<'_>,
) -> PyResult<Spelled<'py>> {
    let py = obj.py();
    let any = if obj.cast::<PyUntypedArray>().is_ok() {
        obj.clone()
    } else {
        asarray(py, obj).map_err(|e| {
            shape_error(
                py,
                kind,
                rows,
                format!("something not read as an array ({e})"),
            )
        })?
    };
    let arr = any
        .cast::<PyUntypedArray>()
        .map_err(|_| shape_error(py, kind, rows, "something not read as an array".into()))?;
    let dtype = arr.dtype();
    let kind_char = dtype.kind();
    let shape: SmallVec<[usize; 4]> = arr.shape().into();
    let describe = || format!("an array of shape {} and dtype {dtype}", py_shape(&shape));
    if !matches!(kind_char, b'f' | b'i' | b'u' | b'b') {
        let what = if obj.is_none() {
            "None".to_string()
        } else {
            describe()
        };
        return Err(dtype_error(py, kind, rows, what));
    }
    match shape.len() {
        0 => {
            let v: f64 = as_float64(arr)?.call_method0("item")?.extract()?;
            fill(&[v], out, kind, names, ctx)?;
            Ok(Spelled::One(std::mem::take(out)))
        }
        1 => {
            let floats = as_float64(arr)?.cast_into::<PyArray1<f64>>()?;
            // SAFETY: read at once, under the GIL, into `out`.
            match unsafe { floats.as_slice() } {
                Ok(s) => fill(s, out, kind, names, ctx)?,
                Err(_) => {
                    // SAFETY: as above; a strided view, read once.
                    let v: Values = unsafe { floats.as_array() }.iter().copied().collect();
                    fill(&v, out, kind, names, ctx)?
                }
            }
            Ok(Spelled::One(std::mem::take(out)))
        }
        2 if kind == Kind::Params => Err(shape_error(py, kind, rows, describe())),
        2 => {
            if shape[0] != rows {
                let e = length_error(kind, rows, shape[0]);
                let message = if kind == Kind::Point && !ctx.params.is_empty() {
                    format!(
                        "{}: a batch of points here has shape {}; got {}",
                        e.code(),
                        ctx.batch_shapes(rows),
                        py_shape(&shape)
                    )
                } else {
                    format!(
                        "{e} (a batch here has shape ({rows}, points); got {})",
                        py_shape(&shape)
                    )
                };
                return Err(raise(py, e.code(), message));
            }
            let floats = as_float64(arr)?;
            let mut batch = floats.cast_into::<PyArray2<f64>>()?;
            // The engines read the batch as one slice: a strided view, or an unaligned
            // buffer (arrays rebuilt from network frames, e.g. by Dask's `distributed`),
            // is copied once into an aligned C-contiguous array.
            if !batch.is_c_contiguous() || !batch.is_aligned() {
                batch = batch.call_method0("copy")?.cast_into::<PyArray2<f64>>()?;
            }
            Ok(Spelled::Batch(batch))
        }
        _ => Err(shape_error(py, kind, rows, describe())),
    }
}

/// The array itself when it is float64, else a float64 copy.
fn as_float64<'py>(arr: &Bound<'py, PyUntypedArray>) -> PyResult<Bound<'py, PyAny>> {
    if arr.cast::<numpy::PyArrayDyn<f64>>().is_ok() {
        Ok(arr.clone().into_any())
    } else {
        arr.call_method1("astype", ("float64",))
    }
}

/// A point block as a batch call reads it ([`read_points`]).
pub(crate) enum PointBlock<'py> {
    /// A spelling [`read`] takes: one point of `n` symbol values, or a `(rows, points)`
    /// batch of `n` rows, or of `n + q` rows (symbols, then parameters).
    Spelled(Spelled<'py>),
    /// A batch given row by row (a dict of columns by name, a list of rows): `n + q` or
    /// `n` C-contiguous float64 rows, each `points` long or of length 1 (broadcast).
    Rows(Vec<Bound<'py, PyArray1<f64>>>),
}

/// Whether `obj` is one plain number (not a container, not an array of one or more axes).
fn plain_number(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyInt>() {
        return Ok(true);
    }
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return Ok(a.ndim() == 0);
    }
    Ok(obj.hasattr("__float__")? && !obj.hasattr("__len__")?)
}

/// One row of a batch given row by row: a 1-D float64 C-contiguous array (a number is a
/// row of length 1), or `None` when `obj` is not one.
fn row<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyArray1<f64>>>> {
    let py = obj.py();
    // An int past float64 (alone, or in a sequence NumPy reads as objects) is `too_large`.
    let huge = |item: &Bound<'py, PyAny>| -> PyResult<()> {
        if item.is_instance_of::<PyInt>() {
            real(item, "a row of the points")?;
        }
        Ok(())
    };
    huge(obj)?;
    let Ok(any) = asarray(py, obj) else {
        return Ok(None);
    };
    let Ok(arr) = any.cast::<PyUntypedArray>() else {
        return Ok(None);
    };
    if arr.dtype().kind() == b'O' && arr.ndim() == 1 {
        for item in obj.try_iter()? {
            huge(&item?)?;
        }
    }
    if arr.ndim() > 1 {
        return Ok(None);
    }
    if !matches!(arr.dtype().kind(), b'f' | b'i' | b'u' | b'b') {
        let code = Errc::WrongDtype;
        return Err(raise(
            py,
            code,
            format!(
                "{code}: a row of the points holds real numbers (floats, integers, bool); got \
                 {} of dtype {}",
                if obj.is_none() {
                    "None".to_string()
                } else {
                    format!("a {}", type_name(obj))
                },
                arr.dtype()
            ),
        ));
    }
    let flat = as_float64(arr)?.call_method0("ravel")?;
    let mut a = flat.cast_into::<PyArray1<f64>>()?;
    if !a.is_c_contiguous() || !a.is_aligned() {
        a = a.call_method0("copy")?.cast_into::<PyArray1<f64>>()?;
    }
    Ok(Some(a))
}

/// Reads the point block of a batch-capable call on an equation over `symbols` (`n`) and
/// `params` (`q`, bound to `bound` when bound). Beyond [`read`]'s spellings (with `n`
/// rows) it takes:
/// - a 2-D array of shape `(n + q, points)`: the symbol rows, then one row per parameter;
/// - a dict of columns by name (`{"x": xs, "k": 2.0}`) holding at least one sequence or
///   array: every symbol, and any of the parameters (one not given is its bound value);
///   each column is `points` long or one value (a number, or length 1), broadcast;
/// - a list or tuple of `n` or `n + q` rows (sequences, arrays or numbers) of such lengths.
///
/// # Errors
/// As [`read`]; `missing_symbol`'s `short_point` for a symbol the dict lacks,
/// `short_point` (unbound parameter) for a parameter neither given nor bound,
/// `unknown_symbol` for a name that is neither; `wrong_arity` for a row that is not a
/// 1-D real array.
pub(crate) fn read_points<'py>(
    obj: &Bound<'py, PyAny>,
    symbols: &[String],
    params: &[String],
    bound: Option<&[f64]>,
) -> PyResult<PointBlock<'py>> {
    let py = obj.py();
    let (n, q) = (symbols.len(), params.len());
    let ctx = Context {
        symbols,
        params,
        bound: bound.is_some_and(|b| b.len() == q),
    };
    if let Ok(d) = obj.cast::<PyDict>() {
        // A column is a sequence or an array; a string is neither (the named point's
        // `TypeError` says what is wrong with it).
        let mut columnar = false;
        for (_, v) in d.iter() {
            columnar |= !plain_number(&v)? && !v.is_instance_of::<PyString>();
        }
        if columnar {
            return columns(d, symbols, params, bound).map(PointBlock::Rows);
        }
    } else if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        if flat_sequence(obj, Kind::Point)?.is_none() {
            let items: Vec<Bound<'py, PyAny>> = obj.try_iter()?.collect::<PyResult<_>>()?;
            if items.len() == n || items.len() == n + q {
                let mut rows = Vec::with_capacity(items.len());
                for item in &items {
                    match row(item)? {
                        Some(r) => rows.push(r),
                        None => return Err(row_error(py, n, q, item)),
                    }
                }
                return Ok(PointBlock::Rows(rows));
            }
        }
    } else if q > 0 {
        if let Ok(a) = obj.cast::<PyUntypedArray>() {
            if a.ndim() == 2 && a.shape()[0] == n + q {
                let mut names = symbols.to_vec();
                names.extend_from_slice(params);
                return read(obj, &names, n + q, Kind::Point).map(PointBlock::Spelled);
            }
        }
    }
    read_in(obj, symbols, n, Kind::Point, ctx).map(PointBlock::Spelled)
}

fn row_error(py: Python<'_>, n: usize, q: usize, item: &Bound<'_, PyAny>) -> PyErr {
    raise(
        py,
        Errc::WrongArity,
        format!(
            "wrong_arity: a batch given row by row has {} (then {}, optionally), each a 1-D \
             real sequence or a number; got {}",
            count(n, "symbol row"),
            count(q, "parameter row"),
            type_name(item)
        ),
    )
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".to_string(), |n| n.to_string())
}

/// A dict of columns by name into the `n + q` rows, symbols then parameters.
fn columns<'py>(
    d: &Bound<'py, PyDict>,
    symbols: &[String],
    params: &[String],
    bound: Option<&[f64]>,
) -> PyResult<Vec<Bound<'py, PyArray1<f64>>>> {
    let py = d.py();
    let (n, q) = (symbols.len(), params.len());
    let mut rows: Vec<Option<Bound<'py, PyArray1<f64>>>> = (0..n + q).map(|_| None).collect();
    for (k, v) in d.iter() {
        let key = k.cast::<PyString>().map_err(|_| {
            PyTypeError::new_err(format!(
                "columns are keyed by symbol names; got key `{}`",
                quoted(&k.to_string())
            ))
        })?;
        let name = names::utf8(key, Errc::BadName, "a key")?;
        let at = symbols
            .iter()
            .position(|s| s == name)
            .or_else(|| params.iter().position(|s| s == name).map(|j| n + j));
        let Some(at) = at else {
            if let Some(e) = names::not_a_key(py, name, "a symbol") {
                return Err(e);
            }
            let names = symbols.iter().chain(params).map(String::as_str);
            return Err(Error::UnknownSymbol {
                name: name.to_string(),
                nearest: ddx::ir::error::nearest_name(name, names),
            })
            .or_raise();
        };
        rows[at] = Some(row(&v)?.ok_or_else(|| row_error(py, n, q, &v))?);
    }
    let mut out = Vec::with_capacity(n + q);
    for (i, r) in rows.into_iter().enumerate() {
        match r {
            Some(r) => out.push(r),
            None if i < n => {
                return Err(Error::MissingSymbol {
                    name: symbols[i].clone(),
                })
                .or_raise()
            }
            None => match bound {
                Some(b) if b.len() == q => out.push(PyArray1::from_slice(py, &b[i - n..=i - n])),
                _ => {
                    return Err(Error::UnboundParameter {
                        name: params[i - n].clone(),
                    })
                    .or_raise()
                }
            },
        }
    }
    Ok(out)
}
