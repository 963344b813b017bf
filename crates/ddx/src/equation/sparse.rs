//! Sparse per-point answers: the Jacobian and the Hessians as a sparsity pattern and the
//! values of its cells, for problems whose dense answers are too large to hold.
//!
//! They reuse what the batch calls already compute: the Jacobian's values are the gradient
//! lane's outputs, one per cell of [`Equation::jacobian_pattern`] in its order; the
//! Hessians' values are gathered from the Hessian lane's colour-compressed blocks, one per
//! cell of [`Equation::hessian_pattern`] ([`ddx_ir::HessianLayout::gather`]). Nothing of
//! size `m·n` or `n²` is ever allocated, so these are the way past
//! [`Options::answer_limit`](crate::Options::answer_limit) and the dense calls' sizes.
//!
//! **Invariant.** Cell `k` of the answer's pattern (`pattern().entries()[k]`) holds the
//! same bits the dense call answers at that cell: both read the same lane output.

use super::{check_output, Equation, Shape};
use crate::point::Point;
use ddx_ir::{Error, LaneKind, Sparsity};

/// A sparse per-point answer: a sparsity pattern and, for each of its blocks, the value of
/// every cell of the pattern, in [`Sparsity::entries`] order.
///
/// [`Equation::sparse_jacobian`] answers one block over the `m × n` Jacobian pattern;
/// [`Equation::sparse_hessian`] answers `m` blocks (one per output) over the symmetric
/// `n × n` Hessian pattern. Cells off the pattern are structurally zero.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseAnswer<'e> {
    pattern: &'e Sparsity,
    values: Vec<f64>,
}

impl<'e> SparseAnswer<'e> {
    /// The pattern every block follows.
    pub fn pattern(&self) -> &'e Sparsity {
        self.pattern
    }

    /// Every block's values, one after the other: `blocks() × pattern().nonzeros()`.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The values, owned.
    pub fn into_values(self) -> Vec<f64> {
        self.values
    }

    /// The block count: 1 for a Jacobian, `m` for Hessians.
    pub fn blocks(&self) -> usize {
        match self.pattern.nonzeros() {
            0 => 0,
            nnz => self.values.len() / nnz,
        }
    }

    /// Block `b`'s values (one per cell of the pattern), or `None` past the last block.
    pub fn block(&self, b: usize) -> Option<&[f64]> {
        let nnz = self.pattern.nonzeros();
        let start = b.checked_mul(nnz)?;
        self.values.get(start..start.checked_add(nnz)?)
    }

    /// The value at `(row, column)` of block `b`: `Some(0.0)` for a structural zero inside
    /// the pattern's shape, `None` outside it or past the last block.
    pub fn get(&self, b: usize, row: usize, column: usize) -> Option<f64> {
        let block = self.block(b)?;
        if row >= self.pattern.rows() || column >= self.pattern.columns() {
            return None;
        }
        Some(self.pattern.at(row, column).map_or(0.0, |k| block[k]))
    }

    /// Block `b` as `(row, column, value)` triplets (coordinate format), in row-major
    /// order; empty past the last block.
    pub fn triplets(&self, b: usize) -> impl Iterator<Item = (usize, usize, f64)> + '_ {
        let block = self.block(b).unwrap_or(&[]);
        self.pattern
            .entries()
            .iter()
            .zip(block)
            .map(|(c, &v)| (c.row, c.column, v))
    }
}

impl<S: Shape> Equation<S> {
    /// The Jacobian at `point` as its structural nonzeros: one block of
    /// [`Equation::jacobian_pattern`]`().nonzeros()` values, value `k` being the cell
    /// `jacobian_pattern().entries()[k]` — the same bits [`Equation::jacobian`] answers
    /// there. Holds only the nonzeros, so it serves systems whose dense `m × n` Jacobian
    /// is too large.
    ///
    /// ```
    /// use ddx::rt;
    /// // f = (x·y, y + z): cells (0, x), (0, y), (1, y), (1, z).
    /// let eq = rt::equation(|| {
    ///     let (x, y, z) = (rt::var("x"), rt::var("y"), rt::var("z"));
    ///     vec![x * y, y + z]
    /// })?;
    /// let j = eq.sparse_jacobian([2.0, 3.0, 5.0])?;
    /// assert_eq!(j.values(), [3.0, 2.0, 1.0, 1.0]);
    /// assert_eq!(j.get(0, 1, 0), Some(0.0));     // structurally zero
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::TooLarge`] when the nonzeros exceed
    /// [`Options::answer_limit`](crate::Options::answer_limit); those of
    /// [`Equation::point`].
    pub fn sparse_jacobian(&self, point: impl Point) -> Result<SparseAnswer<'_>, Error> {
        let pattern = self.jacobian_pattern();
        let len = self.answer_len("sparse_jacobian", &[pattern.nonzeros()])?;
        let mut values = super::zeros(len);
        self.sparse_jacobian_into(point, &mut values)?;
        Ok(SparseAnswer { pattern, values })
    }

    /// [`Equation::sparse_jacobian`]'s values written into `values`
    /// (`jacobian_pattern().nonzeros()` long), for calls in a loop.
    ///
    /// # Errors
    /// [`Error::WrongOutputLength`] unless `values` has one value per cell of the pattern
    /// (nothing is written); those of [`Equation::point`].
    pub fn sparse_jacobian_into(&self, point: impl Point, values: &mut [f64]) -> Result<(), Error> {
        check_output(values, Some(self.jacobian_pattern().nonzeros()))?;
        self.with_inputs(
            &point,
            0,
            |_| Ok(()),
            |x| self.eval_into(LaneKind::Gradient, x, values),
        )
    }

    /// The Hessians at `point` as their structural nonzeros: `m` blocks (one per output)
    /// of [`Equation::hessian_pattern`]`().nonzeros()` values each, value `k` of block `r`
    /// being `Hᵣ` at the cell `hessian_pattern().entries()[k]` — the same bits
    /// [`Equation::hessian`] answers there. The pattern is symmetric and holds both
    /// `(i, j)` and `(j, i)`; for a system it is the union of the outputs' patterns, so a
    /// cell one output lacks reads as an exact `0` in its block. Holds only the nonzeros,
    /// so it serves problems whose dense `m × n × n` answer is too large (past
    /// [`Options::answer_limit`](crate::Options::answer_limit)).
    ///
    /// ```
    /// use ddx::rt;
    /// // f = x² y + z: H has cells (x, x), (x, y), (y, x) only.
    /// let eq = rt::equation(|| {
    ///     let (x, y, z) = (rt::var("x"), rt::var("y"), rt::var("z"));
    ///     x * x * y + z
    /// })?;
    /// let h = eq.sparse_hessian([2.0, 3.0, 5.0])?;
    /// let cells: Vec<_> = h.triplets(0).collect();
    /// assert_eq!(cells, [(0, 0, 6.0), (0, 1, 4.0), (1, 0, 4.0)]);
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::TooLarge`] when `m ×` the nonzeros exceed the answer limit; those of
    /// [`Equation::point`].
    pub fn sparse_hessian(&self, point: impl Point) -> Result<SparseAnswer<'_>, Error> {
        let pattern = self.hessian_pattern();
        let len = self.answer_len("sparse_hessian", &[self.outputs(), pattern.nonzeros()])?;
        let mut values = super::zeros(len);
        self.sparse_hessian_into(point, &mut values)?;
        Ok(SparseAnswer { pattern, values })
    }

    /// [`Equation::sparse_hessian`]'s values written into `values`
    /// (`m · hessian_pattern().nonzeros()` long), for calls in a loop.
    ///
    /// # Errors
    /// [`Error::WrongOutputLength`] unless `values` is that long (nothing is written);
    /// those of [`Equation::point`].
    pub fn sparse_hessian_into(&self, point: impl Point, values: &mut [f64]) -> Result<(), Error> {
        let layout = self.hessian_layout();
        let nnz = layout.pattern().nonzeros();
        check_output(values, self.outputs().checked_mul(nnz))?;
        self.with_inputs(&point, 0, |_| Ok(()), |x| self.gather_hessian(x, values))?
    }

    /// Runs the Hessian lane at `x` and gathers each output's block into its part of
    /// `values`, one compressed block at a time (never all `m` at once).
    fn gather_hessian(&self, x: &[f64], values: &mut [f64]) -> Result<(), Error> {
        let p = self.prepared(LaneKind::Hessian);
        let layout = self.hessian_layout();
        let (c, nnz) = (layout.columns(), layout.pattern().nonzeros());
        if c == 0 || nnz == 0 {
            values.fill(0.0);
            return Ok(());
        }
        let skip = p.lane.values + p.lane.pattern.as_ref().map_or(0, Sparsity::nonzeros);
        let mut block = Vec::with_capacity(c);
        let mut out = values.chunks_exact_mut(nnz);
        let mut result = Ok(());
        self.eval(LaneKind::Hessian, x, |k, v| {
            if k < skip {
                return;
            }
            block.push(v);
            if block.len() == c {
                if let Some(dst) = out.next() {
                    if let Err(e) = layout.gather(&block, dst) {
                        result = Err(e);
                    }
                }
                block.clear();
            }
        });
        result
    }
}
