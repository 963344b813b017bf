//! Peng–Robinson: the reduced Gibbs energy of a mixture with van der Waals mixing rules.

use crate::model::{indexed_names, BenchModel};
use crate::points::SplitMix64;
use crate::scalar::{Real, Scratch};
use crate::thermo::data::ThermoData;
use crate::thermo::GAS_CONSTANT;
use ddx::Expr;
use std::f64::consts::SQRT_2;

/// The reduced Gibbs energy `g/(RT)` of an `N`-component mixture at fixed `T`, `P` by the
/// Peng–Robinson equation of state,
///
/// ```text
/// aᵢ = 0.45724 R²Tcᵢ²/Pcᵢ · [1 + κᵢ(1 − √(T/Tcᵢ))]²,  κᵢ = 0.37464 + 1.54226ωᵢ − 0.26992ωᵢ²
/// bᵢ = 0.07780 R Tcᵢ/Pcᵢ
/// A = P/(RT)² Σᵢ Σⱼ xᵢxⱼ √(aᵢaⱼ)(1 − kᵢⱼ)          B = P/(RT) Σᵢ xᵢbᵢ     (van der Waals)
/// g/RT = Σᵢ xᵢ ln xᵢ + Z − 1 − ln(Z − B) − A/(2√2 B) · ln[(Z + (1+√2)B) / (Z + (1−√2)B)]
/// ```
///
/// dimensionless (ideal mixing plus the residual Gibbs energy, reference: the pure ideal
/// gases at `T`, `P`). The inputs are the first `N − 1` mole fractions (symbols `x00`, …)
/// and the compressibility factor `Z` (symbol `z`), so `n = N`; `x_N = 1 − Σᵢ xᵢ`. `Z` is an
/// independent input, not the root of the cubic. `T = 350 K`, `P = 3 MPa`; points keep
/// `Z ∈ [0.5, 1.1)`, well above `B` (at most about 0.2 here).
///
/// Sources: Peng and Robinson, Ind. Eng. Chem. Fundam. 15 (1976) 59; the residual Gibbs
/// energy as in Michelsen and Mollerup, *Thermodynamic Models: Fundamentals and
/// Computational Aspects* (2nd ed., 2007), ch. 3. `Tc`, `Pc`, `ω` are the first `N` rows of
/// `data/thermo/components.csv`; `kᵢⱼ` from `kij.csv`, `0` where absent (all pairs beyond the
/// 17 natural-gas components have none, so `N = 33` adds 16 components with `kᵢⱼ = 0`).
#[derive(Clone, Debug)]
pub struct PengRobinson {
    /// `P/(RT)² · √(aᵢaⱼ)(1 − kᵢⱼ)`, row-major `N × N`, symmetric.
    pub a: Vec<f64>,
    /// `P/(RT) · bᵢ`.
    pub b: Vec<f64>,
}

/// Temperature of the Peng–Robinson benchmark, K.
pub const PR_T: f64 = 350.0;
/// Pressure of the Peng–Robinson benchmark, Pa.
pub const PR_P: f64 = 3.0e6;

impl PengRobinson {
    /// The model over the first `n` components of `data` (`n ≥ 2`), or `None` when the data
    /// has fewer rows.
    pub fn new(data: &ThermoData, n: usize) -> Option<Self> {
        let comps = data.components().get(..n)?;
        let rt = GAS_CONSTANT * PR_T;
        let ai: Vec<f64> = comps
            .iter()
            .map(|c| {
                let kappa = 0.37464 + 1.54226 * c.omega - 0.26992 * c.omega * c.omega;
                let alpha = 1.0 + kappa * (1.0 - (PR_T / c.tc).sqrt());
                0.45724 * (GAS_CONSTANT * c.tc).powi(2) / c.pc * alpha * alpha
            })
            .collect();
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                a[i * n + j] = PR_P / (rt * rt) * (ai[i] * ai[j]).sqrt() * (1.0 - data.kij(i, j));
            }
        }
        let b = comps
            .iter()
            .map(|c| PR_P / rt * 0.07780 * GAS_CONSTANT * c.tc / c.pc)
            .collect();
        Some(Self { a, b })
    }
}

const C_PLUS: f64 = 1.0 + SQRT_2;
const C_MINUS: f64 = 1.0 - SQRT_2;
const TWO_SQRT_2: f64 = 2.0 * SQRT_2;

impl BenchModel for PengRobinson {
    fn family(&self) -> &'static str {
        "peng-robinson"
    }

    fn arity(&self) -> usize {
        self.b.len()
    }

    fn symbols(&self) -> Vec<String> {
        let mut s = indexed_names("x", self.b.len() - 1);
        s.push("z".to_string());
        s
    }

    fn eval<D: Real>(&self, input: &[D]) -> D {
        let n = self.b.len();
        let z = input[n - 1];
        // On the stack up to 40 components: the native baseline allocates nothing.
        let mut x: Scratch<D> = input[..n - 1].iter().copied().collect();
        let mut sum = x[0];
        for &xi in &x[1..] {
            sum += xi;
        }
        x.push(D::from(1.0) - sum);
        let mut ideal = x[0] * x[0].ln();
        let mut bm = x[0] * self.b[0];
        for i in 1..n {
            ideal += x[i] * x[i].ln();
            bm += x[i] * self.b[i];
        }
        // A = Σᵢ xᵢ (aᵢᵢxᵢ + 2 Σ_{j>i} aᵢⱼxⱼ), the symmetric double sum.
        let mut am = D::from(0.0);
        for i in 0..n {
            let row = &self.a[i * n..(i + 1) * n];
            let mut s = x[i] * row[i];
            let mut off = D::from(0.0);
            for j in i + 1..n {
                off = if j == i + 1 {
                    x[j] * row[j]
                } else {
                    off + x[j] * row[j]
                };
            }
            if i + 1 < n {
                s += off * 2.0;
            }
            am = if i == 0 { x[i] * s } else { am + x[i] * s };
        }
        let log_ratio = ((z + bm * C_PLUS) / (z + bm * C_MINUS)).ln();
        ideal + z - 1.0 - (z - bm).ln() - am / (bm * TWO_SQRT_2) * log_ratio
    }

    fn build(&self, input: &[Expr]) -> Expr {
        let n = self.b.len();
        let z = input[n - 1];
        let mut x: Vec<Expr> = input[..n - 1].to_vec();
        let mut sum = x[0];
        for &xi in &x[1..] {
            sum += xi;
        }
        x.push(1.0 - sum);
        let mut ideal = x[0] * x[0].ln();
        let mut bm = x[0] * self.b[0];
        for i in 1..n {
            ideal += x[i] * x[i].ln();
            bm += x[i] * self.b[i];
        }
        let mut am = Expr::from(0.0);
        for i in 0..n {
            let row = &self.a[i * n..(i + 1) * n];
            let mut s = x[i] * row[i];
            let mut off = Expr::from(0.0);
            for j in i + 1..n {
                off = if j == i + 1 {
                    x[j] * row[j]
                } else {
                    off + x[j] * row[j]
                };
            }
            if i + 1 < n {
                s += off * 2.0;
            }
            am = if i == 0 { x[i] * s } else { am + x[i] * s };
        }
        let log_ratio = ((z + bm * C_PLUS) / (z + bm * C_MINUS)).ln();
        ideal + z - 1.0 - (z - bm).ln() - am / (bm * TWO_SQRT_2) * log_ratio
    }

    fn sample(&self, rng: &mut SplitMix64, out: &mut [f64]) {
        let n = out.len();
        if let Some((z, x)) = out.split_last_mut() {
            rng.fractions(x);
            *z = rng.uniform(0.5, 1.1);
        }
        debug_assert_eq!(n, self.b.len());
    }
}
