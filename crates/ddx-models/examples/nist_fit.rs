//! Fits all NIST StRD nonlinear-regression datasets in `data/nist-strd/` with MINPACK's
//! Levenberg–Marquardt algorithm (the `levenberg-marquardt` crate) driven by ddx's
//! Jacobian of the residual system, from NIST's Start 1 and Start 2, with the solver's
//! default tolerances for every dataset (no per-dataset tuning). Each residual system is
//! built from the dataset's own model line, read through ddx's text parser after the
//! notation translation of `ddx_models::model_text` — no model is written by hand here.
//!
//! Run: `cargo run --release --example nist_fit [DIR]`.
//!
//! Prints one row per fit — dataset, start, iterations (Jacobian evaluations), the fewest
//! significant digits any fitted parameter shares with NIST's certified value, fitted and
//! certified residual sums of squares — and a last line
//! `nist: K of N fits reach the certified parameters to >= 6 significant digits`.

use ddx::{Equation, System};
use ddx_models::nist::{self, Dataset};
use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt};
use nalgebra::{storage::Owned, DMatrix, DVector, Dyn};
use std::cell::Cell;
use std::process::ExitCode;

/// The least-squares problem: ddx's residual system at the current parameters.
struct Fit<'a> {
    eq: &'a Equation<System>,
    b: DVector<f64>,
    jacobians: Cell<usize>,
}

impl LeastSquaresProblem<f64, Dyn, Dyn> for Fit<'_> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, Dyn>;
    type ParameterStorage = Owned<f64, Dyn>;

    fn set_params(&mut self, b: &DVector<f64>) {
        self.b.copy_from(b);
    }

    fn params(&self) -> DVector<f64> {
        self.b.clone()
    }

    fn residuals(&self) -> Option<DVector<f64>> {
        let r = self.eq.evaluate(self.b.as_slice()).ok()?;
        Some(DVector::from_vec(r))
    }

    fn jacobian(&self) -> Option<DMatrix<f64>> {
        self.jacobians.set(self.jacobians.get() + 1);
        let j = self.eq.jacobian(self.b.as_slice()).ok()?;
        let (m, n) = (self.eq.outputs(), self.eq.arity());
        Some(DMatrix::from_row_slice(m, n, &j))
    }
}

fn main() -> ExitCode {
    let dir = std::env::args()
        .nth(1)
        .map(Into::into)
        .unwrap_or_else(nist::data_dir);
    let datasets = match nist::load_all(&dir) {
        Ok(d) if !d.is_empty() => d,
        Ok(_) => {
            eprintln!("no .dat files in {}", dir.display());
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "{:<10} {:>5} {:>6} {:>7}  {:<18} {:<18}",
        "dataset", "start", "iters", "digits", "fitted RSS", "certified RSS"
    );
    let mut good = 0;
    let mut total = 0;
    for ds in &datasets {
        let eq = match ds.residual_system_text() {
            Ok(eq) => eq,
            Err(e) => {
                eprintln!("{}: {e}", ds.name);
                return ExitCode::FAILURE;
            }
        };
        for start in [1, 2] {
            total += 1;
            let (iters, digits, rss) = fit(ds, &eq, start);
            if digits >= 6.0 {
                good += 1;
            }
            println!(
                "{:<10} {:>5} {:>6} {:>7.1}  {:<18.10e} {:<18.10e}",
                ds.name, start, iters, digits, rss, ds.certified_rss
            );
        }
    }
    println!(
        "nist: {good} of {total} fits reach the certified parameters to >= 6 significant digits"
    );
    ExitCode::SUCCESS
}

/// One fit from NIST's start `start`: (Jacobian evaluations, fewest shared digits, RSS).
fn fit(ds: &Dataset, eq: &Equation<System>, start: u8) -> (usize, f64, f64) {
    let b0: Vec<f64> = ds
        .parameters
        .iter()
        .map(|p| if start == 1 { p.start1 } else { p.start2 })
        .collect();
    let problem = Fit {
        eq,
        b: DVector::from_vec(b0),
        jacobians: Cell::new(0),
    };
    let (problem, _report) = LevenbergMarquardt::new().minimize(problem);
    let b = problem.b.as_slice();
    let digits = ds
        .parameters
        .iter()
        .zip(b)
        .map(|(p, &v)| nist::digits(v, p.certified))
        .fold(f64::INFINITY, f64::min);
    let rss = ds.rss(b).unwrap_or(f64::NAN);
    (problem.jacobians.get(), digits, rss)
}
