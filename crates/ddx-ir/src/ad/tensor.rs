//! Derivative tensors of any order by nested differentiation.
//!
//! **Input**: a graph holding a model's value nodes, its outputs, the symbol count `n`
//! and an order `k ≥ 1`. **Output**, appended to the same graph: for each output `r` and
//! each *sorted* multi-index `i₁ ≤ … ≤ i_k` (in lexicographic order, [`TensorLayout`]),
//! the node `∂ᵏfᵣ/∂x_{i₁}…∂x_{i_k}`, or a structural zero.
//!
//! **Construction.** Order 1 is the reverse sweep of every output ([`super::hessian::gradients`],
//! so order-1 entries are the gradient lane's nodes). Order `t + 1` differentiates each
//! order-`t` entry `α` once more along every symbol `j ≥ max(α)`, by forward mode with
//! the tangent `e_j` (the constant `1` on symbol `j`, structural zeros elsewhere): one
//! forward sweep per symbol and order, over the entries that need it. So every distinct
//! partial is made once — `C(n+k−1, k)` per output rather than `nᵏ` — and the
//! conventions of forward mode (the `select` rule, the singular points of `pow`, `atan2`,
//! `hypot`, `max`/`min` at a tie) hold at every order because every level is the same
//! pass. Order 2 is forward over reverse seeded structurally with basis vectors: the
//! Hessian lanes' pass with other seeds, equal to them up to rounding.
//!
//! **Why nesting rather than univariate Taylor interpolation** (A. Griewank and A.
//! Walther, *Evaluating Derivatives*, 2nd ed., SIAM 2008, §13.3, and Griewank, Utke and
//! Walther, "Evaluating higher derivative tensors by forward propagation of univariate
//! Taylor series", *Math. Comp.* 69 (2000)): interpolation recovers each mixed partial as
//! a fixed linear combination of `C(n+k−1, k)` directional Taylor coefficients, with
//! rational weights whose magnitude grows with `k`, so a mixed partial carries rounding
//! from many directions (measured in the repository's [BENCHMARKS.md](https://github.com/ddx-ad/ddx/blob/main/BENCHMARKS.md)); nesting writes each partial as its
//! own graph, so order 1 and 2 are bit for bit the gradient and `hvp` passes, the tensor
//! is exactly symmetric (one node per sorted multi-index) and every engine runs it. The
//! cost is graph size: each order differentiates the previous order's graph, so a tensor
//! lane grows with `k` like repeated forward mode does.

use super::forward::forward;
use super::hessian;
use super::Deriv;
use crate::{Graph, NodeId};

/// The sorted multi-indices of one order, in lexicographic order, and the map from dense
/// row-major positions `(i₁ … i_k) ↦ Σ i_t·n^{k−t}` to them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorLayout {
    symbols: usize,
    order: usize,
    indices: Vec<Vec<u32>>,
}

impl TensorLayout {
    /// Every sorted multi-index of `order` over `symbols` symbols, lexicographically.
    pub fn new(symbols: usize, order: usize) -> Self {
        let mut indices: Vec<Vec<u32>> = (0..symbols as u32).map(|j| vec![j]).collect();
        for _ in 1..order {
            indices = indices
                .iter()
                .flat_map(|a| {
                    let last = *a.last().unwrap_or(&0);
                    (last..symbols as u32).map(move |j| {
                        let mut b = a.clone();
                        b.push(j);
                        b
                    })
                })
                .collect();
        }
        if order == 0 {
            indices = vec![Vec::new()];
        }
        Self {
            symbols,
            order,
            indices,
        }
    }

    /// How many distinct partials one output has: `C(n+k−1, k)`.
    pub fn unique(&self) -> usize {
        self.indices.len()
    }

    /// The sorted multi-indices, lexicographically.
    pub fn indices(&self) -> &[Vec<u32>] {
        &self.indices
    }

    /// The position among [`TensorLayout::indices`] of the dense row-major position
    /// `dense` (`0 ≤ dense < nᵏ`).
    pub fn unique_of(&self, dense: usize) -> usize {
        let n = self.symbols.max(1);
        let mut digits = vec![0u32; self.order];
        let mut d = dense;
        for t in (0..self.order).rev() {
            digits[t] = (d % n) as u32;
            d /= n;
        }
        digits.sort_unstable();
        self.indices.binary_search(&digits).unwrap_or(0)
    }

    /// `nᵏ`, or `None` when it overflows `usize`.
    pub fn dense(&self) -> Option<usize> {
        self.symbols.checked_pow(u32::try_from(self.order).ok()?)
    }
}

/// The order-`order` partials of every output (module doc): `out[r][u]` is the partial at
/// `layout.indices()[u]` of output `r`, or a structural zero.
pub fn tensors(
    g: &mut Graph,
    outputs: &[NodeId],
    n: usize,
    layout: &TensorLayout,
) -> Vec<Vec<Deriv>> {
    let mut level: Vec<Vec<Deriv>> = hessian::gradients(g, outputs, n);
    let mut indices: Vec<Vec<u32>> = (0..n as u32).map(|j| vec![j]).collect();
    let one = g.constant(1.0);
    for _ in 1..layout.order {
        // For each symbol j, the entries α (over every output) with max(α) ≤ j.
        let mut by_symbol: Vec<Vec<Deriv>> = Vec::with_capacity(n);
        for j in 0..n {
            let roots: Vec<NodeId> = level
                .iter()
                .flat_map(|row| {
                    row.iter()
                        .zip(&indices)
                        .filter(|(_, a)| a.last().is_some_and(|&l| l as usize <= j))
                        .filter_map(|(d, _)| *d)
                })
                .collect();
            let tangents: Vec<Deriv> = (0..n).map(|s| (s == j).then_some(one)).collect();
            by_symbol.push(forward(g, &tangents, &roots));
        }
        // Read the sweeps back in the order the roots were listed.
        let mut cursor = vec![0usize; n];
        let mut next_level: Vec<Vec<Deriv>> = Vec::with_capacity(level.len());
        for row in &level {
            let mut out = Vec::new();
            let mut entries: Vec<Vec<(usize, Deriv)>> = vec![Vec::new(); n];
            for j in 0..n {
                for (d, a) in row.iter().zip(&indices) {
                    if a.last().is_some_and(|&l| l as usize <= j) {
                        let dj = match d {
                            Some(_) => {
                                let v = by_symbol[j][cursor[j]];
                                cursor[j] += 1;
                                v
                            }
                            None => None,
                        };
                        entries[j].push((a.len(), dj));
                    }
                }
            }
            // Lexicographic order of α + [j]: α in order, then j ≥ max(α).
            let mut taken = vec![0usize; n];
            for a in &indices {
                let last = *a.last().unwrap_or(&0) as usize;
                for j in last..n {
                    out.push(entries[j][taken[j]].1);
                    taken[j] += 1;
                }
            }
            next_level.push(out);
        }
        indices = indices
            .iter()
            .flat_map(|a| {
                let last = *a.last().unwrap_or(&0);
                (last..n as u32).map(move |j| {
                    let mut b = a.clone();
                    b.push(j);
                    b
                })
            })
            .collect();
        level = next_level;
    }
    debug_assert_eq!(indices, layout.indices);
    level
}
