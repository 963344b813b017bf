//! Nonlinear least squares over a ddx residual system: `min_b ½‖r(b)‖²`, where `r` is an
//! `Equation<System>` with one output per observation and one symbol per parameter.
//!
//! One fitter, shared by the `ddx fit` command and the NIST example
//! (`crates/ddx-models/examples/nist_fit.rs`), with one set of defaults for every problem
//! ([`Options::default`]); no per-dataset tuning. It runs in two phases:
//!
//! 1. **Levenberg–Marquardt** as MINPACK's `lmder` does it (the `levenberg-marquardt`
//!    crate, its default tolerances), driven by ddx's Jacobian of `r`
//!    ([`lm`]). J. J. Moré, "The Levenberg–Marquardt algorithm: implementation and
//!    theory", *Numerical Analysis*, LNM 630, Springer, 1978.
//! 2. **A trust-region Newton method on the exact Hessian** of `½‖r‖²`,
//!    `JᵀJ + Σ rᵢ ∇²rᵢ`, which ddx computes ([`newton`]), from where phase 1 stopped. Each
//!    step solves the trust-region subproblem exactly (Moré & Sorensen, "Computing a trust
//!    region step", *SIAM J. Sci. Stat. Comput.* 4(3), 1983; Nocedal & Wright, *Numerical
//!    Optimization*, 2nd ed., §4.3), hard case included, so it moves along negative
//!    curvature where Gauss–Newton models cannot see it. Where LM has converged this costs
//!    a step or two and adds digits (Newton converges quadratically); where LM stalls far
//!    from a minimum (large residuals, a saddle, a valley it crawls along) it finishes the
//!    job.
//!
//! Standard errors are NIST's: `sᵢ = sqrt(σ² · [(JᵀJ)⁻¹]ᵢᵢ)` with `σ² = RSS / (m − n)`,
//! `(JᵀJ)⁻¹` taken from the singular value decomposition of `J` (more accurate than forming
//! `JᵀJ`; NaN where `J` is rank deficient).

#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod lm;
pub mod newton;

use ddx::{Equation, System};
use nalgebra::DMatrix;
use std::fmt;

/// The fitter's settings. The defaults serve every problem; nothing is tuned per dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Residual evaluations phase 1 (LM) may spend, per parameter (MINPACK's `maxfev` is
    /// `100·(n+1)`; this is the same).
    pub lm_patience: usize,
    /// Newton iterations (accepted or rejected steps) phase 2 may take.
    pub newton_iterations: usize,
    /// Phase 2 stops when every Jacobian column `Jⱼ` is this nearly orthogonal to the
    /// residuals: `|Jⱼᵀr| ≤ tolerance · ‖Jⱼ‖ · ‖r‖`.
    pub gradient_tolerance: f64,
    /// Phase 2 stops when the Newton step is this small relative to the parameters (both
    /// in the scaled norm `‖D·‖`).
    pub step_tolerance: f64,
    /// A fit has converged when its gradient cosine is at most this, or its last Newton
    /// step at most [`Options::converged_step`]; otherwise it is [`FitError::Diverged`].
    pub converged_cosine: f64,
    /// See [`Options::converged_cosine`] (MINPACK's default `xtol`).
    pub converged_step: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            lm_patience: 100,
            newton_iterations: 2000,
            gradient_tolerance: 1e-15,
            step_tolerance: 1e-13,
            converged_cosine: 1e-6,
            converged_step: 1.49012e-8,
        }
    }
}

/// Why phase 2 (trust-region Newton) stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NewtonStop {
    /// The gradient vanished: every Jacobian column is orthogonal to the residuals within
    /// [`Options::gradient_tolerance`].
    Stationary,
    /// The Newton step fell below [`Options::step_tolerance`].
    StepBelowTolerance,
    /// The model predicts no decrease that double precision can resolve.
    NoFurtherDecrease,
    /// The trust region shrank to rounding size around the point.
    RadiusCollapsed,
    /// [`Options::newton_iterations`] were spent.
    IterationLimit,
}

impl fmt::Display for NewtonStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NewtonStop::Stationary => "the gradient vanished",
            NewtonStop::StepBelowTolerance => "the Newton step is below tolerance",
            NewtonStop::NoFurtherDecrease => "no further decrease is representable",
            NewtonStop::RadiusCollapsed => "the trust region collapsed",
            NewtonStop::IterationLimit => "the iteration limit was reached",
        })
    }
}

/// A finished fit.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// The fitted parameters, in the equation's symbol order.
    pub parameters: Vec<f64>,
    /// Their standard errors (NaN where `J` is rank deficient or `m == n`).
    pub std_errors: Vec<f64>,
    /// The residual sum of squares `Σ rᵢ²` at the fitted parameters, evaluated through the
    /// residual equation.
    pub rss: f64,
    /// The residual standard deviation `sqrt(RSS / (m − n))`.
    pub residual_sd: f64,
    /// Degrees of freedom `m − n`.
    pub dof: usize,
    /// Phase 1's Jacobian evaluations (its iterations).
    pub lm_iterations: usize,
    /// Why phase 1 stopped, in MINPACK's terms.
    pub lm_stop: String,
    /// Phase 2's iterations (Newton steps tried).
    pub newton_iterations: usize,
    /// Why phase 2 stopped.
    pub newton_stop: NewtonStop,
    /// The largest `|Jⱼᵀr| / (‖Jⱼ‖·‖r‖)` at the fitted parameters (0 at an exact fit).
    pub gradient_cosine: f64,
}

impl Fit {
    /// Both phases' iterations.
    pub fn iterations(&self) -> usize {
        self.lm_iterations + self.newton_iterations
    }
}

/// A fit that could not be made.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FitError {
    /// ddx refused a call.
    #[error(transparent)]
    Ddx(#[from] ddx::Error),
    /// The start gives the wrong number of parameters.
    #[error("the start gives {got} parameters, the model has {expected}")]
    WrongStart {
        /// The symbol count.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// Fewer observations than parameters.
    #[error("{observations} observations cannot determine {parameters} parameters")]
    TooFewObservations {
        /// `m`.
        observations: usize,
        /// `n`.
        parameters: usize,
    },
    /// A residual is NaN or infinite at the start.
    #[error("the residual of observation {} is {value} at the start", index + 1)]
    StartNotFinite {
        /// The residual's 0-based index.
        index: usize,
        /// Its value.
        value: f64,
    },
    /// The iteration left the region where the residuals are finite, or never reached a
    /// stationary point.
    #[error(
        "the fit diverged: {why} after {iterations} iterations (RSS {rss:e}, gradient cosine \
         {cosine:e})"
    )]
    Diverged {
        /// Why it stopped.
        why: String,
        /// Iterations spent.
        iterations: usize,
        /// The RSS where it stopped.
        rss: f64,
        /// The gradient cosine there.
        cosine: f64,
    },
}

/// The residuals and the dense row-major `m × n` Jacobian at `b`.
pub(crate) fn residuals_jacobian(
    eq: &Equation<System>,
    b: &[f64],
) -> Result<(Vec<f64>, DMatrix<f64>), ddx::Error> {
    let r = eq.evaluate(b)?;
    let j = eq.jacobian(b)?;
    Ok((r, DMatrix::from_row_slice(eq.outputs(), eq.arity(), &j)))
}

/// `Σ rᵢ²`, summed left to right.
pub fn sum_of_squares(r: &[f64]) -> f64 {
    r.iter().fold(0.0, |s, v| s + v * v)
}

/// The largest `|Jⱼᵀr| / (‖Jⱼ‖·‖r‖)` over the columns (0 for a zero residual; a zero
/// column counts as orthogonal).
pub(crate) fn gradient_cosine(r: &[f64], j: &DMatrix<f64>) -> f64 {
    let rn = r.iter().map(|v| v * v).sum::<f64>().sqrt();
    if rn == 0.0 {
        return 0.0;
    }
    let mut worst = 0.0f64;
    for c in j.column_iter() {
        let cn = c.norm();
        if cn == 0.0 {
            continue;
        }
        let dot: f64 = c.iter().zip(r).map(|(a, b)| a * b).sum();
        let cos = (dot / (cn * rn)).abs();
        worst = if cos.is_nan() {
            f64::NAN
        } else {
            worst.max(cos)
        };
    }
    worst
}

/// Standard errors `sqrt(σ²·diag((JᵀJ)⁻¹))` from the SVD of `J`; NaN where `J` is rank
/// deficient (a singular value below `n·ε·σ_max`) or `dof == 0`.
pub(crate) fn std_errors(j: &DMatrix<f64>, rss: f64, dof: usize) -> Vec<f64> {
    let n = j.ncols();
    if dof == 0 {
        return vec![f64::NAN; n];
    }
    let sigma2 = rss / dof as f64;
    let svd = j.clone().svd(false, true);
    let Some(vt) = svd.v_t else {
        return vec![f64::NAN; n];
    };
    let s = &svd.singular_values;
    let smax = s.iter().copied().fold(0.0, f64::max);
    if s.iter()
        .any(|&v| v.is_nan() || v <= n as f64 * f64::EPSILON * smax)
    {
        return vec![f64::NAN; n];
    }
    // (JᵀJ)⁻¹ = V Σ⁻² Vᵀ: its diagonal is Σ_k V[i,k]² / s_k².
    (0..n)
        .map(|i| {
            let d: f64 = (0..s.len()).map(|k| (vt[(k, i)] / s[k]).powi(2)).sum();
            (sigma2 * d).sqrt()
        })
        .collect()
}

/// Fits `residuals` from `start` (one value per symbol, in symbol order) with
/// [`Options::default`]. See [`fit_with`].
///
/// # Errors
/// As [`fit_with`].
pub fn fit(residuals: &Equation<System>, start: &[f64]) -> Result<Fit, FitError> {
    fit_with(residuals, start, &Options::default())
}

/// Fits `residuals` (`m` outputs, `n` symbols) from `start`: LM, then trust-region Newton
/// on the exact Hessian (see the crate documentation).
///
/// # Errors
/// - [`FitError::WrongStart`] when `start.len() != n`;
/// - [`FitError::TooFewObservations`] when `m < n`;
/// - [`FitError::StartNotFinite`] when a residual is NaN or infinite at the start;
/// - [`FitError::Diverged`] when the fit ends at a non-finite RSS, or where neither the
///   gradient cosine nor the Newton step says it has converged
///   ([`Options::converged_cosine`]);
/// - [`FitError::Ddx`] for a refused ddx call.
pub fn fit_with(
    residuals: &Equation<System>,
    start: &[f64],
    options: &Options,
) -> Result<Fit, FitError> {
    let (m, n) = (residuals.outputs(), residuals.arity());
    if start.len() != n {
        return Err(FitError::WrongStart {
            expected: n,
            got: start.len(),
        });
    }
    if m < n {
        return Err(FitError::TooFewObservations {
            observations: m,
            parameters: n,
        });
    }
    let r0 = residuals.evaluate(start)?;
    if let Some((index, &value)) = r0.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(FitError::StartNotFinite { index, value });
    }

    let phase1 = lm::minimize(residuals, start, options.lm_patience);
    let from = if phase1.parameters.iter().all(|v| v.is_finite()) {
        &phase1.parameters
    } else {
        start
    };
    let phase2 = newton::minimize(residuals, from, options)?;

    let b = phase2.parameters;
    let (r, j) = residuals_jacobian(residuals, &b)?;
    let rss = sum_of_squares(&r);
    let cosine = gradient_cosine(&r, &j);
    let iterations = phase1.jacobians + phase2.iterations;
    let converged =
        cosine <= options.converged_cosine || phase2.newton_step <= options.converged_step;
    if !rss.is_finite() || !converged {
        return Err(FitError::Diverged {
            why: phase2.stop.to_string(),
            iterations,
            rss,
            cosine,
        });
    }
    let dof = m - n;
    Ok(Fit {
        std_errors: std_errors(&j, rss, dof),
        parameters: b,
        rss,
        residual_sd: if dof > 0 {
            (rss / dof as f64).sqrt()
        } else {
            f64::NAN
        },
        dof,
        lm_iterations: phase1.jacobians,
        lm_stop: phase1.stop,
        newton_iterations: phase2.iterations,
        newton_stop: phase2.stop,
        gradient_cosine: cosine,
    })
}
