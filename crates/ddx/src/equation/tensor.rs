//! Derivative tensors of any order at run time: `derivative_tensor(k, point)` and its
//! batch form.
//!
//! The order-`k` lane (`ddx_ir::lane::build_tensor`, nested differentiation, see
//! `ddx_ir::ad::tensor` for the construction and why it was chosen over univariate Taylor
//! interpolation) holds one node per *sorted* multi-index; it is built and lowered on
//! first use of each order and kept with the equation. Answers are dense and row-major,
//! `nᵏ` per output, each entry read from its sorted multi-index's node, so the tensor is
//! exactly symmetric. The lane runs in the interpreter as built (it is never contracted
//! or compiled).

use super::{Equation, Shape};
use crate::interp::{Program, Schedule};
use ddx_ir::ad::tensor::TensorLayout;
use ddx_ir::{Error, Lane};
use std::sync::OnceLock;

/// The highest order [`Equation::derivative_tensor`] answers.
pub const MAX_TENSOR_ORDER: usize = ddx_ir::lane::MAX_TENSOR_ORDER;

/// The most values one dense answer may hold (`m·nᵏ`): `2²⁴` (128 MiB of `f64`). A
/// larger request is refused with [`Error::TooLarge`] before anything is built.
pub const MAX_TENSOR_VALUES: usize = 1 << 24;

/// One order's lane, its programs and its dense-to-unique map.
#[derive(Debug)]
pub(crate) struct TensorLane {
    pub(crate) lane: Lane,
    pub(crate) program: Program,
    batch: OnceLock<Program>,
    /// For each dense position `d < nᵏ`, the lane output (within one output's block).
    pub(crate) unique_of: Vec<u32>,
    /// Distinct partials per output.
    pub(crate) unique: usize,
}

impl TensorLane {
    pub(crate) fn batch(&self) -> &Program {
        self.batch
            .get_or_init(|| Program::lower_built(&self.lane, Schedule::Graph))
    }
}

impl<S: Shape> Equation<S> {
    /// `m·nᵏ`, or [`Error::TooLarge`] / [`Error::OrderTooHigh`].
    pub(crate) fn tensor_size(&self, k: usize) -> Result<usize, Error> {
        if k == 0 || k > MAX_TENSOR_ORDER {
            return Err(Error::OrderTooHigh {
                order: k,
                max: MAX_TENSOR_ORDER,
            });
        }
        // `m·nᵏ` exactly (in `u128`: n = 2¹⁶ symbols at order 8 is 2¹²⁸, the one product
        // past it, answered as `u128::MAX`), so that a refusal names the true size.
        let dense = (self.arity() as u128)
            .checked_pow(k as u32)
            .and_then(|d| d.checked_mul(self.outputs() as u128))
            .unwrap_or(u128::MAX);
        match usize::try_from(dense) {
            Ok(dense) if dense <= MAX_TENSOR_VALUES => Ok(dense),
            _ => Err(Error::TooLarge {
                call: "derivative_tensor",
                values: dense,
                limit: MAX_TENSOR_VALUES,
            }),
        }
    }

    /// The order-`k` lane, built on first use (after [`Equation::tensor_size`] passed).
    pub(crate) fn tensor_lane(&self, k: usize) -> Result<&TensorLane, Error> {
        self.tensor_size(k)?;
        if let Some(t) = self.lanes.tensors[k].get() {
            return Ok(t);
        }
        let lane = ddx_ir::lane::build_tensor(self.model(), k)?;
        let layout = TensorLayout::new(self.arity(), k);
        let dense = layout.dense().unwrap_or(0);
        let unique_of = (0..dense).map(|d| layout.unique_of(d) as u32).collect();
        let program = Program::lower_built(&lane, Schedule::Level);
        Ok(self.lanes.tensors[k].get_or_init(|| TensorLane {
            lane,
            program,
            batch: OnceLock::new(),
            unique_of,
            unique: layout.unique(),
        }))
    }

    /// Every `k`-th order partial at `point`, for any order `k ≥ 1` chosen at run time:
    /// dense and row-major, `m × nᵏ`, entry `r·nᵏ + Σ_t i_t·n^{k−1−t}` being
    /// `∂ᵏf_r/∂x_{i₀}…∂x_{i_{k−1}}` (symbols in canonical order). `k = 1` is the Jacobian
    /// (bit for bit [`Equation::gradient`]'s partials); `k = 2` the Hessians, here exactly
    /// symmetric: forward over reverse along each basis vector, seeded structurally, so
    /// [`Equation::hessian`] (colour groups) and [`Equation::hvp_along`] (numeric seeds)
    /// agree with it to rounding, not to the bit.
    ///
    /// Built by nested differentiation: order `t + 1` is forward mode along each basis
    /// vector over order `t`'s graph, one node per sorted multi-index, so every
    /// convention of the first derivatives (the `select` rule, the singular points of
    /// `pow`, `atan2`, `hypot`, `max`/`min` ties) holds at every order. The order-`k` lane
    /// is built on first use and kept.
    ///
    /// ```
    /// let eq = ddx::rt::equation(|| ddx::rt::var("x") * ddx::rt::var("y") * ddx::rt::var("y"))?;
    /// let t = eq.derivative_tensor(3, [1.0, 2.0])?; // 2 × 2 × 2
    /// assert_eq!(t, [0.0, 0.0, 0.0, 2.0, 0.0, 2.0, 2.0, 0.0]); // ∂³/∂x∂y∂y = 2
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::OrderTooHigh`] for `k = 0` or `k >` [`MAX_TENSOR_ORDER`];
    /// [`Error::TooLarge`] when `m·nᵏ` passes [`MAX_TENSOR_VALUES`] (checked before
    /// anything is built); those of [`Equation::point`].
    pub fn derivative_tensor(&self, k: usize, point: impl crate::Point) -> Result<Vec<f64>, Error> {
        let size = self.tensor_size(k)?;
        let x = self.with_inputs(&point, 0, |_| Ok(()), |x| x.to_vec())?;
        let t = self.tensor_lane(k)?;
        let mut unique = super::zeros(t.program.outputs());
        let _ = ddx_ir::user::take_failure();
        t.program.run(&x, &mut unique)?;
        if let Some(e) = ddx_ir::user::take_failure() {
            return Err(e);
        }
        let mut dense = super::zeros(size);
        for (r, block) in dense.chunks_exact_mut(t.unique_of.len().max(1)).enumerate() {
            let base = r * t.unique;
            for (d, u) in block.iter_mut().zip(&t.unique_of) {
                *d = unique[base + *u as usize];
            }
        }
        Ok(dense)
    }

    /// Columns [`Equation::derivative_tensor_batch`] fills for order `k`: `m·nᵏ`.
    ///
    /// # Errors
    /// As [`Equation::derivative_tensor`] for the order.
    pub fn tensor_columns(&self, k: usize) -> Result<usize, Error> {
        self.tensor_size(k)
    }
}
