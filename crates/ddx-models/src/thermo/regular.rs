//! The regular solid solution: ideal mixing plus symmetric pairwise excess.

use crate::model::BenchModel;
use crate::points::{synthetic, SplitMix64};
use crate::scalar::Real;
use crate::thermo::GAS_CONSTANT;
use ddx::Expr;

/// The molar Gibbs energy of mixing of an `n`-component regular solid solution,
///
/// ```text
/// G(x) = R·T · Σᵢ xᵢ ln xᵢ  +  Σ_{i<j} Wᵢⱼ xᵢ xⱼ        [J/mol]
/// ```
///
/// over the `n` mole fractions `xᵢ` (symbols `x00`, `x01`, …). The `n` inputs are treated as
/// independent; points lie in the open simplex (`xᵢ > 0`, `Σ xᵢ < 1`).
///
/// Sources: the regular-solution model of Hildebrand (1929), in the form of e.g. Hillert,
/// *Phase Equilibria, Phase Diagrams and Phase Transformations* (2nd ed., 2008), ch. 19.
/// `R = 8.314462618 J/(mol·K)` (CODATA 2018), `T = 1000 K`.
///
/// **Synthetic parameters**: `data/thermo` has no regular-solution parameters, so the
/// interaction energies are deterministic, `Wᵢⱼ = 5000 + 15000·u(i, j)` J/mol with `u` the
/// SplitMix64 hash [`synthetic`] (table 1) in `[0, 1)`.
#[derive(Clone, Debug)]
pub struct RegularSolution {
    /// `R·T`, J/mol.
    pub rt: f64,
    /// `Wᵢⱼ` in J/mol, row-major `n × n`; only `j > i` is read.
    pub w: Vec<f64>,
    n: usize,
}

impl RegularSolution {
    /// The model with `n` components (`n ≥ 2`; the benchmark uses 16 and 32).
    pub fn new(n: usize) -> Self {
        let mut w = vec![0.0; n * n];
        for i in 0..n {
            for j in i + 1..n {
                w[i * n + j] = 5000.0 + 15000.0 * synthetic(1, i, j);
            }
        }
        Self {
            rt: GAS_CONSTANT * 1000.0,
            w,
            n,
        }
    }
}

impl BenchModel for RegularSolution {
    fn family(&self) -> &'static str {
        "regular"
    }

    fn arity(&self) -> usize {
        self.n
    }

    fn eval<D: Real>(&self, x: &[D]) -> D {
        let n = self.n;
        let mut ideal = x[0] * x[0].ln();
        for &xi in &x[1..n] {
            ideal += xi * xi.ln();
        }
        let mut g = ideal * self.rt;
        for i in 0..n - 1 {
            let row = &self.w[i * n..(i + 1) * n];
            let mut s = x[i + 1] * row[i + 1];
            for j in i + 2..n {
                s += x[j] * row[j];
            }
            g += x[i] * s;
        }
        g
    }

    fn build(&self, x: &[Expr]) -> Expr {
        let n = self.n;
        let mut ideal = x[0] * x[0].ln();
        for &xi in &x[1..n] {
            ideal += xi * xi.ln();
        }
        let mut g = ideal * self.rt;
        for i in 0..n - 1 {
            let row = &self.w[i * n..(i + 1) * n];
            let mut s = x[i + 1] * row[i + 1];
            for j in i + 2..n {
                s += x[j] * row[j];
            }
            g += x[i] * s;
        }
        g
    }

    fn sample(&self, rng: &mut SplitMix64, out: &mut [f64]) {
        rng.fractions(out);
    }
}
