//! Synthetic families whose size is a free parameter, for scaling trends (`compare --trend`).

use crate::model::BenchModel;
use crate::points::{synthetic, SplitMix64};
use crate::scalar::Real;
use ddx::Expr;

/// A banded chain: the extended Rosenbrock function with a coupling sine,
///
/// ```text
/// f(x) = Σ_{i<n−1} [ 100 (xᵢ₊₁ − xᵢ²)² + (1 − xᵢ)² + sin(xᵢ xᵢ₊₁) ]
/// ```
///
/// `O(n)` operations, a tridiagonal Hessian. Points draw every input in `[0.5, 1.5)`.
/// Source: Rosenbrock, Comput. J. 3 (1960) 175, in its usual chained extension.
#[derive(Clone, Debug)]
pub struct Chain {
    n: usize,
}

impl Chain {
    /// The chain of `n ≥ 2` inputs, or `None` for fewer.
    pub fn new(n: usize) -> Option<Self> {
        (n >= 2).then_some(Self { n })
    }
}

impl BenchModel for Chain {
    fn family(&self) -> &'static str {
        "chain"
    }

    fn arity(&self) -> usize {
        self.n
    }

    fn eval<D: Real>(&self, x: &[D]) -> D {
        let mut f = D::from(0.0);
        for i in 0..self.n - 1 {
            let (a, b) = (x[i], x[i + 1]);
            let u = b - a * a;
            let v = D::from(1.0) - a;
            let t = u * u * 100.0 + v * v + (a * b).sin();
            f = if i == 0 { t } else { f + t };
        }
        f
    }

    fn build(&self, x: &[Expr]) -> Expr {
        let mut f = Expr::from(0.0);
        for i in 0..self.n - 1 {
            let (a, b) = (x[i], x[i + 1]);
            let u = b - a * a;
            let v = 1.0 - a;
            let t = u * u * 100.0 + v * v + (a * b).sin();
            f = if i == 0 { t } else { f + t };
        }
        f
    }

    fn sample(&self, rng: &mut SplitMix64, out: &mut [f64]) {
        for v in out {
            *v = rng.uniform(0.5, 1.5);
        }
    }
}

/// A dense quadratic form, `f(x) = ½ xᵀQx + Σᵢ cᵢxᵢ`, evaluated over the upper triangle
/// as `Σᵢ xᵢ (½Qᵢᵢxᵢ + cᵢ + Σ_{j>i} Qᵢⱼxⱼ)`: `O(n²)` operations, a dense gradient.
///
/// **Synthetic parameters**: `Qᵢⱼ = Qⱼᵢ = −1 + 2·u(i, j)`, `cᵢ = −1 + 2·u(i, 0)` (`u` the hash
/// [`synthetic`], tables 6 and 7). Points draw every input in `[−1, 1)`.
#[derive(Clone, Debug)]
pub struct Quadratic {
    /// `Q`, row-major `n × n`; only `j ≥ i` is read.
    pub q: Vec<f64>,
    /// `c`.
    pub c: Vec<f64>,
}

impl Quadratic {
    /// The form of `n ≥ 2` inputs, or `None` for fewer.
    pub fn new(n: usize) -> Option<Self> {
        if n < 2 {
            return None;
        }
        let mut q = vec![0.0; n * n];
        for i in 0..n {
            for j in i..n {
                let v = -1.0 + 2.0 * synthetic(6, i, j);
                q[i * n + j] = v;
                q[j * n + i] = v;
            }
        }
        let c = (0..n).map(|i| -1.0 + 2.0 * synthetic(7, i, 0)).collect();
        Some(Self { q, c })
    }
}

impl BenchModel for Quadratic {
    fn family(&self) -> &'static str {
        "quadratic"
    }

    fn arity(&self) -> usize {
        self.c.len()
    }

    fn eval<D: Real>(&self, x: &[D]) -> D {
        let n = self.c.len();
        let mut f = D::from(0.0);
        for i in 0..n {
            let row = &self.q[i * n..(i + 1) * n];
            let mut s = x[i] * (row[i] * 0.5) + self.c[i];
            for j in i + 1..n {
                s += x[j] * row[j];
            }
            let t = x[i] * s;
            f = if i == 0 { t } else { f + t };
        }
        f
    }

    fn build(&self, x: &[Expr]) -> Expr {
        let n = self.c.len();
        let mut f = Expr::from(0.0);
        for i in 0..n {
            let row = &self.q[i * n..(i + 1) * n];
            let mut s = x[i] * (row[i] * 0.5) + self.c[i];
            for j in i + 1..n {
                s += x[j] * row[j];
            }
            let t = x[i] * s;
            f = if i == 0 { t } else { f + t };
        }
        f
    }

    fn sample(&self, rng: &mut SplitMix64, out: &mut [f64]) {
        for v in out {
            *v = rng.uniform(-1.0, 1.0);
        }
    }
}

/// A sum over `n` symbols with local and one long-range coupling, as one closure:
///
/// ```text
/// f(x) = Σᵢ (xᵢ − xᵢ₊₁)² · exp(0.1 xᵢ) + sin(xᵢ) · x₍ᵢ₊₇₎ mod n      (indices mod n)
/// ```
///
/// Its gradient lane has about 16 nodes a symbol (4 866 at `n = 256`). The model of the
/// compile benchmark (`benches/compile.rs`) and of the `long_lanes` example.
///
/// # Errors
/// As [`ddx::rt::equation`]; none for `n ≥ 1`.
pub fn coupled_sum(n: usize) -> ddx::Result<ddx::Equation> {
    ddx::rt::equation(|| {
        let x: Vec<Expr> = (0..n).map(|i| ddx::rt::var(&format!("x{i:06}"))).collect();
        let mut f = Expr::from(0.0);
        for i in 0..n {
            let d = x[i] - x[(i + 1) % n];
            f += d * d * (0.1 * x[i]).exp() + x[i].sin() * x[(i + 7) % n];
        }
        f
    })
}
