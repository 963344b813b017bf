//! UNIQUAC: the combinatorial and residual parts of the excess Gibbs energy.

use crate::model::BenchModel;
use crate::points::{synthetic, SplitMix64};
use crate::scalar::{Real, Scratch};
use crate::thermo::data::ThermoData;
use ddx::Expr;

/// The reduced excess Gibbs energy `gᴱ/(RT)` of an `n`-component liquid by UNIQUAC,
///
/// ```text
/// φᵢ = rᵢxᵢ / Σⱼ rⱼxⱼ        θᵢ = qᵢxᵢ / Σⱼ qⱼxⱼ        τⱼᵢ = exp(−aⱼᵢ / T)
/// gᴱ/RT = Σᵢ xᵢ ln(φᵢ/xᵢ) + (z/2) Σᵢ qᵢxᵢ ln(θᵢ/φᵢ)          (combinatorial)
///       − Σᵢ qᵢxᵢ ln(Σⱼ θⱼ τⱼᵢ)                              (residual)
/// ```
///
/// dimensionless, over the `n` mole fractions (symbols `x00`, …), with `z = 10`,
/// `T = 330 K`. Points lie in the open simplex.
///
/// Sources: Abrams and Prausnitz, AIChE J. 21 (1975) 116; the form of Poling, Prausnitz and
/// O'Connell, *The Properties of Gases and Liquids* (5th ed.), §8-5. `rᵢ`, `qᵢ` are the
/// ChemSep 8.32 values of the first `n` rows of `data/thermo/components.csv`.
///
/// **Synthetic parameters**: the data has no UNIQUAC binary parameters, so the interaction
/// temperatures are deterministic: `aᵢᵢ = 0`, `aⱼᵢ = −100 + 500·u(j, i)` K (`u` the hash
/// [`synthetic`], table 2), giving `τⱼᵢ` in about `[0.22, 1.35]`.
#[derive(Clone, Debug)]
pub struct Uniquac {
    /// Volume parameters `rᵢ`.
    pub r: Vec<f64>,
    /// Surface-area parameters `qᵢ`.
    pub q: Vec<f64>,
    /// `τⱼᵢ`, row-major `n × n` (row `j`, column `i`).
    pub tau: Vec<f64>,
    /// Half the coordination number, `z/2 = 5`.
    pub half_z: f64,
}

/// Temperature of the UNIQUAC benchmark, K.
pub const UNIQUAC_T: f64 = 330.0;

impl Uniquac {
    /// The model over the first `n` components of `data` (`2 ≤ n ≤` the row count), or
    /// `None` when the data has fewer than `n` rows.
    pub fn new(data: &ThermoData, n: usize) -> Option<Self> {
        let comps = data.components().get(..n)?;
        let mut tau = vec![1.0; n * n];
        for j in 0..n {
            for i in 0..n {
                if i != j {
                    let a = -100.0 + 500.0 * synthetic(2, j, i);
                    tau[j * n + i] = (-a / UNIQUAC_T).exp();
                }
            }
        }
        Some(Self {
            r: comps.iter().map(|c| c.r).collect(),
            q: comps.iter().map(|c| c.q).collect(),
            tau,
            half_z: 5.0,
        })
    }
}

impl BenchModel for Uniquac {
    fn family(&self) -> &'static str {
        "uniquac"
    }

    fn arity(&self) -> usize {
        self.r.len()
    }

    fn eval<D: Real>(&self, x: &[D]) -> D {
        let n = self.r.len();
        let mut rsum = x[0] * self.r[0];
        let mut qsum = x[0] * self.q[0];
        for i in 1..n {
            rsum += x[i] * self.r[i];
            qsum += x[i] * self.q[i];
        }
        // On the stack up to 40 components: the native baseline allocates nothing.
        let phi: Scratch<D> = (0..n).map(|i| x[i] * self.r[i] / rsum).collect();
        let theta: Scratch<D> = (0..n).map(|i| x[i] * self.q[i] / qsum).collect();
        let mut g = D::from(0.0);
        for i in 0..n {
            let qx = x[i] * self.q[i];
            let mut s = theta[0] * self.tau[i];
            for j in 1..n {
                s += theta[j] * self.tau[j * n + i];
            }
            let comb = x[i] * (phi[i] / x[i]).ln() + qx * (theta[i] / phi[i]).ln() * self.half_z;
            let term = comb - qx * s.ln();
            g = if i == 0 { term } else { g + term };
        }
        g
    }

    fn build(&self, x: &[Expr]) -> Expr {
        let n = self.r.len();
        let mut rsum = x[0] * self.r[0];
        let mut qsum = x[0] * self.q[0];
        for i in 1..n {
            rsum += x[i] * self.r[i];
            qsum += x[i] * self.q[i];
        }
        let phi: Vec<Expr> = (0..n).map(|i| x[i] * self.r[i] / rsum).collect();
        let theta: Vec<Expr> = (0..n).map(|i| x[i] * self.q[i] / qsum).collect();
        let mut g = Expr::from(0.0);
        for i in 0..n {
            let qx = x[i] * self.q[i];
            let mut s = theta[0] * self.tau[i];
            for j in 1..n {
                s += theta[j] * self.tau[j * n + i];
            }
            let comb = x[i] * (phi[i] / x[i]).ln() + qx * (theta[i] / phi[i]).ln() * self.half_z;
            let term = comb - qx * s.ln();
            g = if i == 0 { term } else { g + term };
        }
        g
    }

    fn sample(&self, rng: &mut SplitMix64, out: &mut [f64]) {
        rng.fractions(out);
    }
}
