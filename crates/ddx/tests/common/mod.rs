//! Shared helpers for the integration tests: a reproducible random-model generator and
//! floating-point distance measures.

#![allow(dead_code)]

use ddx::{rt, select, Equation, Expr};

pub use ddx::ir::testing::Rng;

/// A random scalar model; see [`ddx::ir::testing::smooth_model`].
pub fn random_model(seed: u64, n: usize, steps: usize, kinks: bool) -> Equation {
    Equation::try_from(ddx::ir::testing::smooth_model(seed, n, steps, kinks)).expect("one output")
}

/// Uniform in `[lo, hi)`.
pub fn uniform(rng: &mut Rng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.unit()
}

/// The distance between two doubles in units in the last place (`0` for equal values,
/// `+0` and `-0` included; `u64::MAX` if either is NaN).
pub fn ulps(a: f64, b: f64) -> u64 {
    if a == b {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 {
            i64::MIN - bits
        } else {
            bits
        }
    };
    key(a).abs_diff(key(b))
}

/// A random point with coordinates in `[-1.5, 1.5)`.
pub fn point(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| uniform(rng, -1.5, 1.5)).collect()
}

/// The reference specification's opening example: the Huber loss of the exponential fit
/// `a·exp(−b·t)` over four samples, `δ = 0.05`.
pub fn huber() -> Equation {
    let data = [(0.0, 2.00), (1.0, 1.21), (2.0, 0.74), (3.0, 0.45)];
    let delta = 0.05;
    rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        let mut loss = Expr::from(0.0);
        for &(t, y) in &data {
            let r = y - a * (-b * t).exp();
            loss += select(r.abs().lt(delta), r * r, delta * (2.0 * r.abs() - delta));
        }
        loss
    })
    .expect("the Huber model builds")
}

/// `fragile(x) = 2x` for `x ≤ 1`, with its partial; above 1 its code panics with "x is too
/// large" (the failure of user code the tests provoke).
pub fn fragile() -> ddx::UserFunction {
    ddx::UserFunction::new(
        "fragile",
        1,
        |x| {
            if x[0] > 1.0 {
                panic!("x is too large");
            }
            x[0] * 2.0
        },
        |_, g| g[0] = 2.0,
    )
    .expect("a user function")
}
