//! Phase 2: a trust-region Newton method on the exact Hessian of `f(b) = ½‖r(b)‖²`,
//! `∇²f = JᵀJ + Σ rᵢ ∇²rᵢ`, with ddx's Jacobian and per-output Hessians of `r`.
//!
//! Each iteration minimises the quadratic model `gᵀp + ½pᵀHp` over a ball `‖Dp‖ ≤ Δ`
//! exactly, from the eigendecomposition of the scaled Hessian `D⁻¹HD⁻¹`: the Newton step
//! where it is inside and `H` is positive definite; otherwise the boundary step
//! `p(λ) = −(H̃ + λI)⁻¹g̃` with `λ ≥ max(0, −λ_min)` chosen by bisection so `‖p(λ)‖ = Δ`,
//! and in the hard case (`g̃` orthogonal to the lowest eigenvector) that step plus a move
//! along the eigenvector to the boundary. Moré & Sorensen, "Computing a trust region step",
//! *SIAM J. Sci. Stat. Comput.* 4(3):553–572, 1983; Nocedal & Wright, *Numerical
//! Optimization*, 2nd ed., Algorithms 4.1 and 4.3. `n` is a model's parameter count, so an
//! `n × n` eigendecomposition per step costs nothing next to the Hessian.
//!
//! The scaling `D` is MINPACK's: `dⱼ` is the largest norm column `j` of `J` has had, so
//! the region is round in units the data resolve. The radius follows Algorithm 4.1
//! (shrink to a quarter of the step below ρ = ¼, double above ¾ at the boundary); a step
//! is taken when ρ > 10⁻⁴.
//!
//! Input: a residual system and a finite start. Output: the last accepted parameters, the
//! iterations and why it stopped.

use crate::{gradient_cosine, residuals_jacobian, sum_of_squares, NewtonStop, Options};
use ddx::{Equation, System};
use nalgebra::{DMatrix, DVector, SymmetricEigen};

/// What phase 2 ended with.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The last accepted parameters.
    pub parameters: Vec<f64>,
    /// Steps tried.
    pub iterations: usize,
    /// Why it stopped.
    pub stop: NewtonStop,
    /// `‖D·p‖ / ‖D·b‖` for the Newton step `p = −H⁻¹g` at the last accepted point `b`
    /// (infinite where `H` is not positive definite there).
    pub newton_step: f64,
}

/// `f`, `g = Jᵀr`, `H = JᵀJ + Σ rᵢ∇²rᵢ` and the column norms of `J` at `b`; `None` when a
/// residual is not finite there.
struct Local {
    f: f64,
    g: DVector<f64>,
    h: DMatrix<f64>,
    column_norms: Vec<f64>,
    cosine: f64,
}

fn local(eq: &Equation<System>, b: &[f64]) -> Result<Option<Local>, ddx::Error> {
    let (r, j) = residuals_jacobian(eq, b)?;
    let f = 0.5 * sum_of_squares(&r);
    if !f.is_finite() {
        return Ok(None);
    }
    let n = eq.arity();
    let hs = eq.hessian(b)?;
    let rv = DVector::from_column_slice(&r);
    let g = j.transpose() * &rv;
    let mut h = j.transpose() * &j;
    for (i, ri) in r.iter().enumerate() {
        let block = &hs[i * n * n..(i + 1) * n * n];
        for a in 0..n {
            for c in 0..n {
                h[(a, c)] += ri * block[a * n + c];
            }
        }
    }
    // Each row of a Hessian is its own sweep: symmetrise the last-ULP differences.
    let h = (&h + h.transpose()) * 0.5;
    let column_norms = j.column_iter().map(|c| c.norm()).collect();
    let cosine = gradient_cosine(&r, &j);
    Ok(Some(Local {
        f,
        g,
        h,
        column_norms,
        cosine,
    }))
}

/// The exact minimiser of `gᵀp + ½pᵀHp` over `‖p‖ ≤ radius` (Moré–Sorensen, by the
/// eigendecomposition of the symmetric `h`), and the decrease the model predicts for it.
pub fn trust_region_step(h: &DMatrix<f64>, g: &DVector<f64>, radius: f64) -> (DVector<f64>, f64) {
    let n = g.len();
    let eig = SymmetricEigen::new(h.clone());
    let (lambda, q) = (&eig.eigenvalues, &eig.eigenvectors);
    let a: Vec<f64> = (0..n).map(|i| q.column(i).dot(g)).collect();
    let (lowest, lmin) =
        lambda
            .iter()
            .copied()
            .enumerate()
            .fold(
                (0, f64::INFINITY),
                |(k, m), (i, v)| if v < m { (i, v) } else { (k, m) },
            );
    let step = |shift: f64, skip: &dyn Fn(usize) -> bool| {
        let mut p = DVector::zeros(n);
        for i in (0..n).filter(|&i| !skip(i)) {
            p -= q.column(i) * (a[i] / (lambda[i] + shift));
        }
        p
    };
    let none = |_: usize| false;
    let model = |p: &DVector<f64>| -(g.dot(p) + 0.5 * p.dot(&(h * p)));
    if lmin > 0.0 {
        let p = step(0.0, &none);
        if p.norm() <= radius {
            let pred = model(&p);
            return (p, pred);
        }
    }
    let lo = (-lmin).max(0.0);
    let gnorm = g.norm();
    // Hard case: g has (almost) no component along the eigenvectors of λ_min, so p(λ)
    // stays inside as λ → −λ_min; step to −λ_min and along the lowest eigenvector.
    let tiny = 1e-12 * gnorm.max(f64::MIN_POSITIVE);
    let degenerate = |i: usize| lambda[i] - lmin <= 1e-12 * lmin.abs().max(1.0);
    if lmin <= 0.0
        && (0..n)
            .filter(|&i| degenerate(i))
            .all(|i| a[i].abs() <= tiny)
    {
        let p = step(lo, &degenerate);
        if p.norm() <= radius {
            let e = q.column(lowest).into_owned();
            // τ ≥ 0 with ‖p + τe‖ = radius (e is a unit vector orthogonal to p).
            let tau = (radius * radius - p.norm_squared()).max(0.0).sqrt();
            let p = p + e * tau;
            let pred = model(&p);
            return (p, pred);
        }
    }
    // ‖p(λ)‖ decreases from above `radius` (at lo) to at most `radius` (at hi).
    let norm = |shift: f64| step(shift, &none).norm();
    let (mut a_lo, mut a_hi) = (lo, lo + gnorm / radius);
    for _ in 0..200 {
        let mid = 0.5 * (a_lo + a_hi);
        if mid <= a_lo || mid >= a_hi {
            break;
        }
        if norm(mid) > radius {
            a_lo = mid;
        } else {
            a_hi = mid;
        }
    }
    let p = step(a_hi, &none);
    let pred = model(&p);
    (p, pred)
}

/// Runs trust-region Newton from `start` (finite residuals there).
///
/// # Errors
/// A ddx call refused (it is not expected once the start was evaluated).
pub fn minimize(
    eq: &Equation<System>,
    start: &[f64],
    options: &Options,
) -> Result<Outcome, ddx::Error> {
    let n = start.len();
    let mut b = DVector::from_column_slice(start);
    let Some(mut here) = local(eq, b.as_slice())? else {
        return Ok(Outcome {
            parameters: start.to_vec(),
            iterations: 0,
            stop: NewtonStop::NoFurtherDecrease,
            newton_step: f64::INFINITY,
        });
    };
    // MINPACK's scaling: the largest column norms seen (1 for a column that was always 0).
    let mut d: Vec<f64> = here
        .column_norms
        .iter()
        .map(|&c| if c > 0.0 { c } else { 1.0 })
        .collect();
    let mut fresh = true;
    let mut radius = f64::NAN;
    let mut iterations = 0;
    let mut newton_step = f64::INFINITY;
    let mut flat_steps = 0;
    let stop = loop {
        if fresh {
            if here.cosine <= options.gradient_tolerance {
                break NewtonStop::Stationary;
            }
            for (dj, &c) in d.iter_mut().zip(&here.column_norms) {
                *dj = dj.max(c);
            }
        }
        if iterations >= options.newton_iterations {
            break NewtonStop::IterationLimit;
        }
        let dinv = DVector::from_iterator(n, d.iter().map(|v| 1.0 / v));
        let scaled_b = DVector::from_iterator(n, b.iter().zip(&d).map(|(v, s)| v * s));
        if radius.is_nan() {
            radius = scaled_b.norm().max(1.0);
        }
        let hs = DMatrix::from_fn(n, n, |i, j| here.h[(i, j)] * dinv[i] * dinv[j]);
        let gs = here.g.component_mul(&dinv);
        let (ps, pred) = trust_region_step(&hs, &gs, radius);
        if fresh {
            newton_step = relative_newton_step(&hs, &gs, scaled_b.norm());
            if newton_step <= options.step_tolerance {
                break NewtonStop::StepBelowTolerance;
            }
        }
        iterations += 1;
        let p = ps.component_mul(&dinv);
        let trial = &b + &p;
        if pred.is_nan() || pred <= 4.0 * f64::EPSILON * here.f {
            // The decrease is below what f resolves, but the gradient still points
            // somewhere: an interior Newton step (H positive definite) is still trusted
            // where f does not grow beyond rounding or the scaled gradient shrinks (Newton
            // on ∇f = 0); a few such steps at most.
            let full = hs.clone().cholesky().map(|c| -c.solve(&gs));
            let (Some(full), true) = (full, flat_steps < 8) else {
                break NewtonStop::NoFurtherDecrease;
            };
            let trial = &b + full.component_mul(&dinv);
            let g_now = gs.norm();
            match local(eq, trial.as_slice())? {
                Some(l)
                    if l.f <= here.f * (1.0 + 8.0 * f64::EPSILON)
                        || l.g.component_mul(&dinv).norm() < g_now =>
                {
                    flat_steps += 1;
                    b = trial;
                    here = l;
                    fresh = true;
                    continue;
                }
                _ => break NewtonStop::NoFurtherDecrease,
            }
        }
        let next = local(eq, trial.as_slice())?;
        let rho = next
            .as_ref()
            .map_or(f64::NEG_INFINITY, |l| (here.f - l.f) / pred);
        let pn = ps.norm();
        if rho < 0.25 {
            radius = 0.25 * pn;
        } else if rho > 0.75 && pn >= 0.99 * radius {
            radius *= 2.0;
        }
        match next {
            Some(l) if rho > 1e-4 => {
                b = trial;
                here = l;
                fresh = true;
            }
            _ => {
                fresh = false;
                if radius <= 4.0 * f64::EPSILON * scaled_b.norm() {
                    break NewtonStop::RadiusCollapsed;
                }
            }
        }
    };
    Ok(Outcome {
        parameters: b.as_slice().to_vec(),
        iterations,
        stop,
        newton_step,
    })
}

/// `‖H⁻¹g‖ / scale` where `h` is positive definite, else infinity.
fn relative_newton_step(h: &DMatrix<f64>, g: &DVector<f64>, scale: f64) -> f64 {
    match h.clone().cholesky() {
        Some(c) => c.solve(g).norm() / scale.max(f64::MIN_POSITIVE),
        None => f64::INFINITY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Independent check of the subproblem: sample the ball densely in 2-D and compare the
    /// best model value found with the step's.
    #[test]
    fn trust_region_step_is_the_ball_minimiser() {
        let cases = [
            (
                DMatrix::from_row_slice(2, 2, &[2.0, 0.0, 0.0, 1.0]),
                [1.0, 1.0],
                10.0,
            ),
            (
                DMatrix::from_row_slice(2, 2, &[2.0, 0.0, 0.0, 1.0]),
                [1.0, 1.0],
                0.3,
            ),
            (
                DMatrix::from_row_slice(2, 2, &[1.0, 2.0, 2.0, -3.0]),
                [0.5, -0.2],
                1.0,
            ),
            // The hard case: g orthogonal to the lowest eigenvector.
            (
                DMatrix::from_row_slice(2, 2, &[-1.0, 0.0, 0.0, 2.0]),
                [0.0, 1.0],
                1.0,
            ),
            // A saddle with zero gradient.
            (
                DMatrix::from_row_slice(2, 2, &[-1.0, 0.0, 0.0, 2.0]),
                [0.0, 0.0],
                0.5,
            ),
        ];
        for (h, g, radius) in cases {
            let g = DVector::from_column_slice(&g);
            let (p, pred) = trust_region_step(&h, &g, radius);
            assert!(p.norm() <= radius * (1.0 + 1e-12), "{p} outside {radius}");
            let model = |p: &DVector<f64>| -(g.dot(p) + 0.5 * p.dot(&(&h * p)));
            assert!((pred - model(&p)).abs() <= 1e-12);
            let mut best = 0.0f64;
            let k = 400;
            for i in 0..=k {
                for t in 0..k {
                    let rr = radius * i as f64 / k as f64;
                    let th = std::f64::consts::TAU * t as f64 / k as f64;
                    let q = DVector::from_column_slice(&[rr * th.cos(), rr * th.sin()]);
                    best = best.max(model(&q));
                }
            }
            assert!(
                pred >= best - 1e-9 * best.abs().max(1e-9),
                "{pred} < sampled {best}"
            );
        }
    }
}
