//! Fits all NIST StRD nonlinear-regression datasets in `data/nist-strd/` (or `DIR`) with
//! the shared fitter `ddx_fit` — MINPACK's Levenberg–Marquardt with ddx's Jacobian, then a
//! trust-region Newton method on ddx's exact Hessian of the sum of squares — from NIST's
//! Start 1 and Start 2, with the same defaults for every dataset (no per-dataset tuning).
//! Each residual system is built from the dataset's own model line, read through ddx's
//! text parser after the notation translation of `ddx_models::model_text` — no model is
//! written by hand here, so a NIST file this program has never seen is fitted the same way.
//!
//! Run: `cargo run --release --example nist_fit [DIR]`.
//!
//! Prints one row per fit — dataset, start, iterations (LM Jacobians + Newton steps), the
//! fewest significant digits any fitted parameter and any standard error shares with
//! NIST's certified values, the fitted RSS (evaluated through the fitted residual
//! equation) and the certified RSS — and a last line
//! `nist: K of N fits reach the certified parameters to >= 6 significant digits`.

use ddx_models::nist;
use std::process::ExitCode;

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
        "{:<10} {:>5} {:>6} {:>7} {:>7}  {:<18} {:<18} stopped",
        "dataset", "start", "iters", "digits", "se dig", "fitted RSS", "certified RSS"
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
            let b0: Vec<f64> = ds
                .parameters
                .iter()
                .map(|p| if start == 1 { p.start1 } else { p.start2 })
                .collect();
            let fit = match ddx_fit::fit(&eq, &b0) {
                Ok(fit) => fit,
                Err(e) => {
                    println!("{:<10} {:>5} failed: {e}", ds.name, start);
                    continue;
                }
            };
            let digits = |values: &[f64], certified: &dyn Fn(&nist::Parameter) -> f64| {
                ds.parameters
                    .iter()
                    .zip(values)
                    .map(|(p, &v)| nist::digits(v, certified(p)))
                    .fold(f64::INFINITY, f64::min)
            };
            let d = digits(&fit.parameters, &|p| p.certified);
            let se = digits(&fit.std_errors, &|p| p.std_dev);
            if d >= 6.0 {
                good += 1;
            }
            println!(
                "{:<10} {:>5} {:>6} {:>7.1} {:>7.1}  {:<18.10e} {:<18.10e} {}",
                ds.name,
                start,
                fit.iterations(),
                d,
                se,
                fit.rss,
                ds.certified_rss,
                fit.newton_stop
            );
        }
    }
    println!(
        "nist: {good} of {total} fits reach the certified parameters to >= 6 significant digits"
    );
    ExitCode::SUCCESS
}
