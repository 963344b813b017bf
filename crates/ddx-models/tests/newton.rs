//! Newton's method on the residual sum of squares of NIST StRD datasets, driven by ddx's
//! exact Hessian: started near the certified solution, the relative step shrinks
//! quadratically (each step about the square of the one before) down to rounding, and the
//! fixed point is NIST's certified parameters and residual sum of squares.
//!
//! Newton's step solves `H·s = ∇f` with the Hessian symmetrised (its transposed cells may
//! differ in the last ULP, each being its own sweep) and factored by Cholesky, which also
//! shows `H` positive definite at every iterate.

use ddx_models::nist;
use nalgebra::{DMatrix, DVector};

/// Runs Newton from the certified parameters perturbed by ±`delta` (relative, alternating
/// sign) and answers the relative step sizes `max_i |s_i / x_i|` and the final point.
fn newton(name: &str, delta: f64, steps: usize) -> (Vec<f64>, Vec<f64>, nist::Dataset) {
    let ds = nist::load(&nist::data_dir().join(format!("{name}.dat"))).expect("dataset loads");
    let eq = ds.rss_equation().expect("model builds");
    let p = ds.parameters.len();
    let mut x: Vec<f64> = ds
        .certified()
        .iter()
        .enumerate()
        .map(|(i, c)| c * (1.0 + if i % 2 == 0 { delta } else { -delta }))
        .collect();
    let mut sizes = Vec::new();
    for _ in 0..steps {
        let g = eq.jacobian(&x).expect("gradient");
        let h = eq.hessian(&x).expect("hessian");
        let h = DMatrix::from_fn(p, p, |i, j| 0.5 * (h[i * p + j] + h[j * p + i]));
        let chol = h
            .cholesky()
            .unwrap_or_else(|| panic!("{name}: H not positive definite"));
        let s = chol.solve(&DVector::from_column_slice(&g));
        sizes.push((0..p).map(|i| (s[i] / x[i]).abs()).fold(0.0, f64::max));
        for (xi, si) in x.iter_mut().zip(s.iter()) {
            *xi -= si;
        }
    }
    (sizes, x, ds)
}

fn converges_quadratically(name: &str) {
    let (sizes, x, ds) = newton(name, 1e-3, 6);
    eprintln!(
        "{name}: relative steps {sizes:?}",
        sizes = sizes.iter().map(|s| format!("{s:.2e}")).collect::<Vec<_>>()
    );
    // Quadratic: while the step is above the rounding floor, the next is at most a modest
    // constant times its square. (Linear convergence at any rate fails this from 1e-4
    // down: it would need the ratio of successive steps to keep shrinking.)
    let mut quadratic_steps = 0;
    for w in sizes.windows(2) {
        if w[0] >= 1e-7 {
            assert!(
                w[1] <= 1e3 * w[0] * w[0],
                "{name}: {:e} after {:e}",
                w[1],
                w[0]
            );
            quadratic_steps += 1;
        }
    }
    assert!(quadratic_steps >= 2, "{name}: {sizes:?}");
    // From a 1e-3 perturbation to the rounding floor in at most four steps (a linearly
    // convergent method with rate 0.1 would need ten).
    let floor = sizes
        .iter()
        .position(|&s| s < 1e-13)
        .expect("reaches rounding");
    assert!(floor <= 4, "{name}: {sizes:?}");
    // The fixed point is NIST's: parameters and RSS to at least 9 of the 11 certified
    // digits (what remains is the certified values' own rounding).
    for (p, xi) in ds.parameters.iter().zip(&x) {
        let d = nist::digits(*xi, p.certified);
        assert!(
            d >= 9.0,
            "{name} {}: {xi} vs {} ({d:.1} digits)",
            p.name,
            p.certified
        );
    }
    let rss = ds.rss(&x).expect("rss");
    assert!(
        nist::digits(rss, ds.certified_rss) >= 9.0,
        "{name}: rss {rss}"
    );
}

#[test]
fn newton_on_misra1a_converges_quadratically() {
    // y = b1·(1 − exp(−b2·x)), 14 observations; b1 ≈ 239 and b2 ≈ 5.5e-4, so the Hessian
    // is badly scaled — Newton is affine invariant and does not mind.
    converges_quadratically("Misra1a");
}

#[test]
fn newton_on_chwirut2_converges_quadratically() {
    // y = exp(−b1·x)/(b2 + b3·x), 54 observations.
    converges_quadratically("Chwirut2");
}

#[test]
fn newton_on_gauss1_converges_quadratically() {
    // Two Gaussian peaks on an exponential baseline: 8 parameters, 250 observations.
    converges_quadratically("Gauss1");
}
