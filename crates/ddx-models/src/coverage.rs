//! The operation-coverage function: every operation of ddx's expression table.

use crate::model::BenchModel;
use crate::points::SplitMix64;
use crate::scalar::{self, Real};
use ddx::{select, Expr};

/// A function of `n` inputs that uses every operation of the expression table: the 20
/// unary functions, negation, `+ − × ÷`, `pow`, `atan2`, `hypot`, `max`, `min`, the six
/// comparisons and `select`.
///
/// With `a = xᵢ`, `b = x₍ᵢ₊₁₎ mod n`, term `i` is one of four groups (`i mod 4`):
///
/// ```text
/// 0: sin a·cos b + tan a + exp(−b) + ln b + log10(a + b)
/// 1: √a + ∛b + |a − b| + sign(a − b)·a + asin(0.9a) + acos(0.9b) + atan(a − b)
/// 2: sinh a + cosh b + tanh(ab) + asinh a + acosh(1 + b) + atanh(0.9a) + erf(a − b)
/// 3: aᵇ + atan2(a, b) + hypot(a, b) + max(a, b) + min(a, b) + select(a < b, ab, a/b)
///    + (a ≤ b)·a + (a > b)·b + select(a ≥ b, a − b, b − a)·0.5 + (a = b) + (a ≠ b)·b
/// f = Σᵢ termᵢ
/// ```
///
/// Points draw every input in `[0.2, 0.8)`, inside every function's domain, so no
/// function is at a singular point; a tie `a = b` (where `max`, `min` and the comparisons
/// switch) has probability zero. Sources: none needed — a synthetic test function.
#[derive(Clone, Debug)]
pub struct Coverage {
    n: usize,
}

impl Coverage {
    /// The function of `n ≥ 4` inputs (the benchmark uses 16), or `None` for fewer.
    pub fn new(n: usize) -> Option<Self> {
        (n >= 4).then_some(Self { n })
    }
}

impl BenchModel for Coverage {
    fn family(&self) -> &'static str {
        "coverage"
    }

    fn arity(&self) -> usize {
        self.n
    }

    fn eval<D: Real>(&self, x: &[D]) -> D {
        use scalar::{erf, ge, gt, hypot, le, lt, max, min, ne, sign};
        let n = self.n;
        let mut f = D::from(0.0);
        for i in 0..n {
            let (a, b) = (x[i], x[(i + 1) % n]);
            let t = match i % 4 {
                0 => a.sin() * b.cos() + a.tan() + (-b).exp() + b.ln() + (a + b).log10(),
                1 => {
                    a.sqrt()
                        + b.cbrt()
                        + (a - b).abs()
                        + sign(a - b) * a
                        + (a * 0.9).asin()
                        + (b * 0.9).acos()
                        + (a - b).atan()
                }
                2 => {
                    a.sinh()
                        + b.cosh()
                        + (a * b).tanh()
                        + a.asinh()
                        + (b + 1.0).acosh()
                        + (a * 0.9).atanh()
                        + erf(a - b)
                }
                _ => {
                    a.powd(b)
                        + a.atan2(b)
                        + hypot(a, b)
                        + max(a, b)
                        + min(a, b)
                        + scalar::select(lt(a, b), a * b, a / b)
                        + le(a, b) * a
                        + gt(a, b) * b
                        + scalar::select(ge(a, b), a - b, b - a) * 0.5
                        + scalar::eq(a, b)
                        + ne(a, b) * b
                }
            };
            f = if i == 0 { t } else { f + t };
        }
        f
    }

    fn build(&self, x: &[Expr]) -> Expr {
        let n = self.n;
        let mut f = Expr::from(0.0);
        for i in 0..n {
            let (a, b) = (x[i], x[(i + 1) % n]);
            let t = match i % 4 {
                0 => a.sin() * b.cos() + a.tan() + (-b).exp() + b.ln() + (a + b).log10(),
                1 => {
                    a.sqrt()
                        + b.cbrt()
                        + (a - b).abs()
                        + (a - b).sign() * a
                        + (a * 0.9).asin()
                        + (b * 0.9).acos()
                        + (a - b).atan()
                }
                2 => {
                    a.sinh()
                        + b.cosh()
                        + (a * b).tanh()
                        + a.asinh()
                        + (b + 1.0).acosh()
                        + (a * 0.9).atanh()
                        + (a - b).erf()
                }
                _ => {
                    a.powf(b)
                        + a.atan2(b)
                        + a.hypot(b)
                        + a.max(b)
                        + a.min(b)
                        + select(a.lt(b), a * b, a / b)
                        + a.le(b) * a
                        + a.gt(b) * b
                        + select(a.ge(b), a - b, b - a) * 0.5
                        + a.eq(b)
                        + a.ne(b) * b
                }
            };
            f = if i == 0 { t } else { f + t };
        }
        f
    }

    fn sample(&self, rng: &mut SplitMix64, out: &mut [f64]) {
        for v in out {
            *v = rng.uniform(0.2, 0.8);
        }
    }
}
