//! A mixed-solvent electrolyte: extended Debye–Hückel long range plus a short-range mixing
//! term.

use crate::model::BenchModel;
use crate::points::{synthetic, SplitMix64};
use crate::scalar::Real;
use ddx::Expr;

/// A solvent of the electrolyte model: data that `data/thermo` does not carry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Solvent {
    /// Name (a row of `data/thermo/components.csv`).
    pub name: &'static str,
    /// Molar mass, g/mol (from the formula, IUPAC 2021 atomic weights).
    pub molar_mass: f64,
    /// Liquid density at 25 °C, g/cm³ (rounded handbook value).
    pub density: f64,
    /// Relative permittivity at 25 °C (rounded handbook value).
    pub permittivity: f64,
}

/// The solvents, in the order the model takes them (`n/4` of them for `n` species).
/// Densities and permittivities are rounded values as commonly tabulated (e.g. the CRC
/// Handbook of Chemistry and Physics); they set the model's shape, not a prediction.
pub const SOLVENTS: [Solvent; 8] = [
    Solvent {
        name: "water",
        molar_mass: 18.015,
        density: 0.997,
        permittivity: 78.4,
    },
    Solvent {
        name: "methanol",
        molar_mass: 32.042,
        density: 0.787,
        permittivity: 32.7,
    },
    Solvent {
        name: "ethanol",
        molar_mass: 46.069,
        density: 0.785,
        permittivity: 24.5,
    },
    Solvent {
        name: "acetone",
        molar_mass: 58.080,
        density: 0.785,
        permittivity: 20.7,
    },
    Solvent {
        name: "ethylene glycol",
        molar_mass: 62.068,
        density: 1.110,
        permittivity: 37.7,
    },
    Solvent {
        name: "dimethyl sulfoxide",
        molar_mass: 78.13,
        density: 1.095,
        permittivity: 46.7,
    },
    Solvent {
        name: "acetonitrile",
        molar_mass: 41.053,
        density: 0.777,
        permittivity: 35.9,
    },
    Solvent {
        name: "1-propanol",
        molar_mass: 60.096,
        density: 0.800,
        permittivity: 20.1,
    },
];

/// Debye–Hückel `A` (natural-log basis) in water at 25 °C, (kg/mol)^½.
pub const DH_A_WATER: f64 = 1.1762;
/// Debye–Hückel `B` in water at 25 °C, Å⁻¹ (kg/mol)^½.
pub const DH_B_WATER: f64 = 0.3286;
/// The constant `a₁` under the square root of the short-range term, mol/kg.
pub const SR_A1: f64 = 0.01;

/// The reduced Gibbs energy `g/(RT)` of a mixed-solvent electrolyte solution of `n` species,
/// `n/4` solvents (symbols `x00` … first) and `3n/4` ions,
///
/// ```text
/// Xₛ = Σ_solvents xₛ;  ε = Σₛ xₛεₛ/Xₛ;  ρ = Σₛ xₛρₛ/Xₛ;  M = Σₛ xₛMₛ/Xₛ   (mole-fraction mixing)
/// I  = ½ Σ_ions zᵢ² xᵢ / (Xₛ M/1000)                       (ionic strength, mol/kg solvent)
/// A  = A_w (ε_w/ε)^{3/2} √(ρ/ρ_w)       B = B_w (ε_w/ε)^{1/2} √(ρ/ρ_w)
/// g_LR = −A √I Σ_ions xᵢzᵢ² / (1 + B aᵢ √I)                  (extended Debye–Hückel)
/// g_SR = Σ_{k<l} xₖxₗ (bₖₗ + cₖₗ exp(−√(I + a₁)))            (short-range mixing)
/// g/RT = Σₖ xₖ ln xₖ + g_LR + g_SR
/// ```
///
/// dimensionless, at 25 °C. `A_w`, `B_w` are the water values ([`DH_A_WATER`],
/// [`DH_B_WATER`]), scaled with the mixed solvent's permittivity and density as the
/// Debye–Hückel theory scales them (`A ∝ ρ^½ (εT)^{-3/2}`, `B ∝ ρ^½ (εT)^{-1/2}`).
///
/// Sources: the extended Debye–Hückel law, Debye and Hückel, Phys. Z. 24 (1923) 185, in the
/// form of Robinson and Stokes, *Electrolyte Solutions* (2nd ed., 1959), ch. 9; the
/// ionic-strength-dependent short-range term follows the middle-range term of the
/// mixed-solvent electrolyte model of Wang, Anderko and Young, Fluid Phase Equilib. 203
/// (2002) 141. Here the long-range term is written per ion as the extended law's activity
/// expression weighted by `xᵢ`, a benchmark function of realistic shape rather than the
/// integrated excess Gibbs energy.
///
/// **Synthetic parameters**: the data has no ions, so charges and sizes are deterministic:
/// charges cycle `+1, −1, +2, −1, +1, −2` (each cycle of six is neutral), sizes
/// `aᵢ = 3 + 6·u(i)` Å, and `bₖₗ = −2 + 4·u`, `cₖₗ = −1 + 2·u` (`u` the hash [`synthetic`],
/// tables 3, 4, 5). Solvent data: [`SOLVENTS`]. Points lie in the open simplex; they are
/// not made electroneutral (the inputs are independent).
#[derive(Clone, Debug)]
pub struct Electrolyte {
    /// The solvents (the first `n/4` of [`SOLVENTS`]).
    pub solvents: Vec<Solvent>,
    /// Ion charges `zᵢ`.
    pub charge: Vec<f64>,
    /// Ion sizes `aᵢ`, Å.
    pub size: Vec<f64>,
    /// `bₖₗ`, row-major `n × n`; only `l > k` is read.
    pub b: Vec<f64>,
    /// `cₖₗ`, row-major `n × n`; only `l > k` is read.
    pub c: Vec<f64>,
}

const CHARGES: [f64; 6] = [1.0, -1.0, 2.0, -1.0, 1.0, -2.0];

impl Electrolyte {
    /// The model with `n` species, `n/4` of them solvents; `None` unless `8 ≤ n ≤ 32` and
    /// `n` is a multiple of 4.
    pub fn new(n: usize) -> Option<Self> {
        if !(8..=32).contains(&n) || !n.is_multiple_of(4) {
            return None;
        }
        let ns = n / 4;
        let ions = n - ns;
        let mut b = vec![0.0; n * n];
        let mut c = vec![0.0; n * n];
        for k in 0..n {
            for l in k + 1..n {
                b[k * n + l] = -2.0 + 4.0 * synthetic(4, k, l);
                c[k * n + l] = -1.0 + 2.0 * synthetic(5, k, l);
            }
        }
        Some(Self {
            solvents: SOLVENTS[..ns].to_vec(),
            charge: (0..ions).map(|i| CHARGES[i % CHARGES.len()]).collect(),
            size: (0..ions).map(|i| 3.0 + 6.0 * synthetic(3, i, 0)).collect(),
            b,
            c,
        })
    }

    fn n(&self) -> usize {
        self.solvents.len() + self.charge.len()
    }
}

impl BenchModel for Electrolyte {
    fn family(&self) -> &'static str {
        "electrolyte"
    }

    fn arity(&self) -> usize {
        self.n()
    }

    fn eval<D: Real>(&self, x: &[D]) -> D {
        let n = self.n();
        let ns = self.solvents.len();
        let w = SOLVENTS[0];
        let (s0, xs) = (self.solvents[0], x[0]);
        let mut xsum = xs;
        let mut eps = xs * s0.permittivity;
        let mut rho = xs * s0.density;
        let mut mm = xs * s0.molar_mass;
        for (s, &xk) in self.solvents.iter().zip(x).skip(1) {
            xsum += xk;
            eps += xk * s.permittivity;
            rho += xk * s.density;
            mm += xk * s.molar_mass;
        }
        let eps = eps / xsum;
        let rho = rho / xsum;
        let mm = mm / xsum;
        let mut zx = x[ns] * (self.charge[0] * self.charge[0]);
        for i in 1..n - ns {
            zx += x[ns + i] * (self.charge[i] * self.charge[i]);
        }
        let ionic = zx * 0.5 / (xsum * mm / 1000.0);
        let sqrt_i = ionic.sqrt();
        let ratio = D::from(w.permittivity) / eps;
        let dens = (rho / w.density).sqrt();
        let a = ratio.powf(1.5) * dens * DH_A_WATER;
        let bsi = ratio.sqrt() * dens * DH_B_WATER * sqrt_i;
        let mut lr = D::from(0.0);
        for i in 0..n - ns {
            let zz = self.charge[i] * self.charge[i];
            let t = x[ns + i] * zz / (bsi * self.size[i] + 1.0);
            lr = if i == 0 { t } else { lr + t };
        }
        let g_lr = -(a * sqrt_i * lr);
        let e = (-(ionic + SR_A1).sqrt()).exp();
        let mut ideal = x[0] * x[0].ln();
        for &xk in &x[1..] {
            ideal += xk * xk.ln();
        }
        let mut g_sr = D::from(0.0);
        for k in 0..n - 1 {
            let (brow, crow) = (&self.b[k * n..(k + 1) * n], &self.c[k * n..(k + 1) * n]);
            let mut sb = x[k + 1] * brow[k + 1];
            let mut sc = x[k + 1] * crow[k + 1];
            for l in k + 2..n {
                sb += x[l] * brow[l];
                sc += x[l] * crow[l];
            }
            let t = x[k] * (sb + e * sc);
            g_sr = if k == 0 { t } else { g_sr + t };
        }
        ideal + g_lr + g_sr
    }

    fn build(&self, x: &[Expr]) -> Expr {
        let n = self.n();
        let ns = self.solvents.len();
        let w = SOLVENTS[0];
        let (s0, xs) = (self.solvents[0], x[0]);
        let mut xsum = xs;
        let mut eps = xs * s0.permittivity;
        let mut rho = xs * s0.density;
        let mut mm = xs * s0.molar_mass;
        for (s, &xk) in self.solvents.iter().zip(x).skip(1) {
            xsum += xk;
            eps += xk * s.permittivity;
            rho += xk * s.density;
            mm += xk * s.molar_mass;
        }
        let eps = eps / xsum;
        let rho = rho / xsum;
        let mm = mm / xsum;
        let mut zx = x[ns] * (self.charge[0] * self.charge[0]);
        for i in 1..n - ns {
            zx += x[ns + i] * (self.charge[i] * self.charge[i]);
        }
        let ionic = zx * 0.5 / (xsum * mm / 1000.0);
        let sqrt_i = ionic.sqrt();
        let ratio = w.permittivity / eps;
        let dens = (rho / w.density).sqrt();
        let a = ratio.powf(1.5) * dens * DH_A_WATER;
        let bsi = ratio.sqrt() * dens * DH_B_WATER * sqrt_i;
        let mut lr = Expr::from(0.0);
        for i in 0..n - ns {
            let zz = self.charge[i] * self.charge[i];
            let t = x[ns + i] * zz / (bsi * self.size[i] + 1.0);
            lr = if i == 0 { t } else { lr + t };
        }
        let g_lr = -(a * sqrt_i * lr);
        let e = (-(ionic + SR_A1).sqrt()).exp();
        let mut ideal = x[0] * x[0].ln();
        for &xk in &x[1..] {
            ideal += xk * xk.ln();
        }
        let mut g_sr = Expr::from(0.0);
        for k in 0..n - 1 {
            let (brow, crow) = (&self.b[k * n..(k + 1) * n], &self.c[k * n..(k + 1) * n]);
            let mut sb = x[k + 1] * brow[k + 1];
            let mut sc = x[k + 1] * crow[k + 1];
            for l in k + 2..n {
                sb += x[l] * brow[l];
                sc += x[l] * crow[l];
            }
            let t = x[k] * (sb + e * sc);
            g_sr = if k == 0 { t } else { g_sr + t };
        }
        ideal + g_lr + g_sr
    }

    fn sample(&self, rng: &mut SplitMix64, out: &mut [f64]) {
        rng.fractions(out);
    }
}
