//! One lane over columns, into dense answers: the layer between NumPy's arrays and the
//! Rust batch calls.
//!
//! Every buffer here is C-contiguous and row-major with the point axis last: values
//! `(m, p)`, Jacobian `(m, n, p)`, Hessian `(m, n, n, p)`, products `(k, p)`. Each row of
//! `p` values is one column of the Rust batch calls, so inputs and the dense Jacobian are
//! passed in place: the structural nonzeros of the Jacobian are written straight into
//! their rows, and rows off the pattern are never touched (callers zero them once). The
//! Hessian arrives colour-compressed and is scattered into its dense rows. A single point
//! is a batch of `p = 1`, whose buffers have exactly the layout of the per-point shapes
//! (`(m,)`, `(m, n)`, `(m, n, n)`), so single points and batches share this code and give
//! the same bits (the Rust batch calls equal the per-point calls to the bit).
//!
//! Nothing here touches Python: it runs with the GIL released.

use crate::shape::{on, AnyEquation};
use ddx::{Equation, Error, LaneKind, Shape};
use smallvec::SmallVec;

/// Rows of `p` values (or of 1, broadcast): the columns of the Rust batch calls.
pub(crate) type Rows<'a> = SmallVec<[&'a [f64]; 16]>;
type RowsMut<'a> = SmallVec<[&'a mut [f64]; 16]>;

/// The `rows` rows of `p` values of `data` (`rows · p` long).
pub(crate) fn rows(data: &[f64], rows: usize, p: usize) -> Rows<'_> {
    if p == 0 {
        return (0..rows).map(|_| &[][..]).collect();
    }
    data.chunks_exact(p).take(rows).collect()
}

fn rows_mut(data: &mut [f64], rows: usize, p: usize) -> RowsMut<'_> {
    if p == 0 {
        return (0..rows).map(|_| &mut [][..]).collect();
    }
    data.chunks_exact_mut(p).take(rows).collect()
}

/// The rows of a dense `(m, n, p)` Jacobian that hold its structural nonzeros, in slot
/// order (the pattern's cells are row-major, so this is one pass); with `fresh`, the rows
/// off the pattern are zeroed on the way.
fn pattern_rows<'a, S: Shape>(
    eq: &Equation<S>,
    data: &'a mut [f64],
    p: usize,
    fresh: bool,
) -> RowsMut<'a> {
    let n = eq.arity();
    let mut all = rows_mut(data, eq.outputs() * n, p).into_iter().enumerate();
    let mut out = RowsMut::new();
    for c in eq.jacobian_pattern().entries() {
        let want = c.row * n + c.column;
        for (k, row) in all.by_ref() {
            if k == want {
                out.push(row);
                break;
            }
            if fresh {
                row.fill(0.0);
            }
        }
    }
    if fresh {
        all.for_each(|(_, row)| row.fill(0.0));
    }
    out
}

/// Where a call's answers go (each `None` when the call does not fill it).
#[derive(Default)]
pub(crate) struct Out<'a> {
    /// `(m, p)`.
    pub(crate) values: Option<&'a mut [f64]>,
    /// `(m, n, p)`, dense; rows off the pattern are left as they are.
    pub(crate) jacobian: Option<&'a mut [f64]>,
    /// `(m, n, n, p)`, dense; rows off the pattern are left as they are.
    pub(crate) hessian: Option<&'a mut [f64]>,
    /// `(k, p)`: `J·v` (`k = m`), `wᵀ·J` or `H·v` (`k = n`).
    pub(crate) products: Option<&'a mut [f64]>,
    /// The buffers are new and uninitialised: the cells off the Jacobian's and the
    /// Hessian's patterns are zeroed here (a bound `Call` zeroes them once, when bound).
    pub(crate) fresh: bool,
}

/// Rows of products `kind` fills (0 for a kind without products).
fn product_count(n: usize, m: usize, kind: LaneKind) -> usize {
    match kind {
        LaneKind::Jvp => m,
        LaneKind::Vjp | LaneKind::Hvp => n,
        _ => 0,
    }
}

/// Runs lane `kind` over `p` points: `xs` is the `n` symbol rows (then, optionally, the
/// `q` parameter rows; with none, bound parameters are broadcast), `seeds` the `n`
/// direction or `m` weight rows the kind takes (empty otherwise); each row is `p` long or
/// of length 1 (broadcast, as the Rust batch calls do). `scratch` holds the compressed
/// Hessian between the sweep and the scatter.
///
/// An equation calling user functions (Python code, under the GIL) runs on the calling
/// thread whatever the batch's size ([`ddx::on_calling_thread`]): the GIL lets one call
/// run at a time anyway, and the calling thread has its Python thread state, while each
/// call on one of rayon's threads would make and discard one.
///
/// # Errors
/// Those of the Rust batch calls (`not_scalar` for `hvp` on a system; a buffer missing
/// or of the wrong length is `wrong_column_count`, which the callers never cause).
pub(crate) fn run(
    eq: &AnyEquation,
    kind: LaneKind,
    xs: &[&[f64]],
    seeds: &[&[f64]],
    p: usize,
    out: Out<'_>,
    scratch: &mut Vec<f64>,
) -> Result<(), Error> {
    on!(eq, e => {
        if e.calls_user_functions() {
            ddx::on_calling_thread(|| run_shape(e, kind, xs, seeds, p, out, scratch))
        } else {
            run_shape(e, kind, xs, seeds, p, out, scratch)
        }
    })
}

fn run_shape<S: Shape>(
    eq: &Equation<S>,
    kind: LaneKind,
    xs: &[&[f64]],
    seeds: &[&[f64]],
    p: usize,
    out: Out<'_>,
    scratch: &mut Vec<f64>,
) -> Result<(), Error> {
    let (n, m) = (eq.arity(), eq.outputs());
    if p == 1 && xs.len() == n && eq.remembers() && (kind != LaneKind::Hvp || m == 1) {
        return remembered(eq, kind, xs, seeds, out, scratch);
    }
    let mut values = out.values.map(|v| rows_mut(v, m, p)).unwrap_or_default();
    let mut partials = match out.jacobian {
        Some(j) => pattern_rows(eq, j, p, out.fresh),
        None => RowsMut::new(),
    };
    let vs = seeds;
    let mut products = match out.products {
        Some(v) => rows_mut(v, product_count(n, m, kind), p),
        None => RowsMut::new(),
    };
    match kind {
        LaneKind::Value => eq.evaluate_batch(xs, &mut values),
        LaneKind::Jacobian => eq.jacobian_batch(xs, &mut values, &mut partials),
        LaneKind::Gradient => eq.gradient_batch(xs, &mut partials),
        LaneKind::Jvp => eq.jvp_batch(xs, vs, &mut values, &mut products),
        LaneKind::Vjp => eq.vjp_batch(xs, vs, &mut values, &mut products),
        LaneKind::Hvp => eq.hvp_batch(xs, vs, &mut values, &mut partials, &mut products),
        LaneKind::Hessian => {
            let columns = m * eq.hessian_columns();
            scratch.clear();
            scratch.resize(columns * p, 0.0);
            {
                let mut compressed = rows_mut(scratch, columns, p);
                eq.hessian_batch(xs, &mut values, &mut partials, &mut compressed)?;
            }
            if let Some(h) = out.hessian {
                if out.fresh {
                    h.fill(0.0);
                }
                scatter_hessian(eq, scratch, h, p);
            }
            Ok(())
        }
        // Not one of `LaneKind::ALL`, the kinds this module is asked for: derivative
        // tensors are a call of their own, with an order (`derivative_tensor_batch`).
        LaneKind::Tensor => Ok(()),
    }
}

/// One point through the Rust per-point call (`lane_point_into`), so an equation made
/// with `remember=True` answers it from its last-call cache; the lane's outputs are laid
/// out as the batch path lays out a batch of one (the same bits: batches equal per-point
/// calls).
fn remembered<S: Shape>(
    eq: &Equation<S>,
    kind: LaneKind,
    xs: &[&[f64]],
    seeds: &[&[f64]],
    out: Out<'_>,
    scratch: &mut Vec<f64>,
) -> Result<(), Error> {
    let n = eq.arity();
    let lane = eq.lane(kind)?;
    let (values, outputs) = (lane.values, lane.outputs.len());
    let cells = match kind {
        LaneKind::Jacobian | LaneKind::Gradient | LaneKind::Hessian | LaneKind::Hvp => {
            eq.jacobian_pattern().nonzeros()
        }
        _ => 0,
    };
    let inputs: SmallVec<[f64; 32]> = xs
        .iter()
        .chain(seeds)
        .flat_map(|r| r.iter())
        .copied()
        .collect();
    scratch.clear();
    scratch.resize(outputs, 0.0);
    eq.lane_point_into(kind, &inputs, scratch)?;
    let short = |expected: usize, got: usize| Error::WrongOutputLength { expected, got };
    let (head, rest) = scratch.split_at(values.min(outputs));
    if let Some(v) = out.values {
        if v.len() != head.len() {
            return Err(short(head.len(), v.len()));
        }
        v.copy_from_slice(head);
    }
    let (partials, rest) = rest.split_at(cells.min(rest.len()));
    if let Some(j) = out.jacobian {
        if out.fresh {
            j.fill(0.0);
        }
        for (c, &v) in eq.jacobian_pattern().entries().iter().zip(partials) {
            if let Some(cell) = j.get_mut(c.row * n + c.column) {
                *cell = v;
            }
        }
    }
    if let Some(prod) = out.products {
        if prod.len() != rest.len() {
            return Err(short(rest.len(), prod.len()));
        }
        prod.copy_from_slice(rest);
    }
    if let Some(h) = out.hessian {
        if out.fresh {
            h.fill(0.0);
        }
        scatter_hessian(eq, rest, h, 1);
    }
    Ok(())
}

/// The compressed Hessian `(m · hessian_columns(), p)` into the dense `(m, n, n, p)`.
fn scatter_hessian<S: Shape>(eq: &Equation<S>, compressed: &[f64], dense: &mut [f64], p: usize) {
    let (n, m) = (eq.arity(), eq.outputs());
    let columns = eq.hessian_columns();
    let cells = eq.hessian_pattern().entries();
    for r in 0..m {
        for c in cells {
            let Some(k) = eq.hessian_cell(c.row, c.column) else {
                continue;
            };
            let from = (r * columns + k) * p;
            let to = ((r * n + c.row) * n + c.column) * p;
            if let (Some(src), Some(dst)) =
                (compressed.get(from..from + p), dense.get_mut(to..to + p))
            {
                dst.copy_from_slice(src);
            }
        }
    }
}
