//! `ddx fit --plot FILE.svg`: the data and the fitted curve above, the residuals below,
//! drawn with plotters' SVG backend (no font or bitmap dependencies: text is left to the
//! SVG viewer). One-predictor models only.
//!
//! The response values drawn are `rᵢ + prediction(xᵢ)`, so they are exactly what the fit
//! saw (a transformed response such as Nelson's `log(y)` included); the curve is the
//! prediction with the fitted parameters bound, evaluated as a one-symbol batch.

use crate::error::CliError;
use crate::fit::Problem;
use ddx::rt;
use ddx_fit::Fit;
use plotters::prelude::*;
use std::path::Path;

/// Points of the fitted curve.
const CURVE: usize = 400;

/// Draws the plot of `fit` of `problem` to `path`.
///
/// # Errors
/// [`CliError::Plot`] for a model of several predictors or none, or when the SVG cannot be
/// written.
pub fn draw(path: &Path, problem: &Problem, fit: &Fit, names: &[String]) -> Result<(), CliError> {
    let fail = |what: String| CliError::Plot {
        path: path.to_path_buf(),
        what,
    };
    let Some((xname, xs)) = &problem.predictor else {
        return Err(fail(
            "the plot needs a model of exactly one predictor".into(),
        ));
    };
    let mut bound: Vec<(&str, f64)> = names
        .iter()
        .map(String::as_str)
        .zip(fit.parameters.iter().copied())
        .collect();
    bound.extend(problem.constants.iter().map(|(n, v)| (n.as_str(), *v)));
    let curve = rt::equation(|| problem.prediction.bind(&bound))?;
    if curve.symbols() != [xname.as_str()] {
        return Err(fail(format!(
            "the fitted curve is not a function of `{xname}` alone"
        )));
    }
    let predict = |x: &[f64]| -> Result<Vec<f64>, CliError> {
        let mut out = vec![0.0; x.len()];
        curve.evaluate_batch(&[x], &mut [&mut out])?;
        Ok(out)
    };
    let residuals = problem.residuals.evaluate(&fit.parameters[..])?;
    let at_data = predict(xs)?;
    let ys: Vec<f64> = residuals.iter().zip(&at_data).map(|(r, p)| r + p).collect();

    let finite = |v: &[f64]| {
        v.iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let pad = |(lo, hi): (f64, f64)| {
        if lo.is_nan() || hi.is_nan() || lo > hi {
            return (0.0, 1.0);
        }
        let d = if hi > lo {
            0.05 * (hi - lo)
        } else {
            0.5 * lo.abs().max(1.0)
        };
        (lo - d, hi + d)
    };
    let (x0, x1) = pad(finite(xs));
    let grid: Vec<f64> = (0..CURVE)
        .map(|k| x0 + (x1 - x0) * k as f64 / (CURVE - 1) as f64)
        .collect();
    let line = predict(&grid)?;
    let (y0, y1) = pad(finite(&[ys.as_slice(), line.as_slice()].concat()));
    let (r0, r1) = pad(finite(&residuals));

    let plot_err = |e: &dyn std::fmt::Display| fail(e.to_string());
    let root = SVGBackend::new(path, (900, 700)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_err(&e))?;
    let (top, bottom) = root.split_vertically(480);
    let mut chart = ChartBuilder::on(&top)
        .margin(20)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| plot_err(&e))?;
    chart
        .configure_mesh()
        .x_desc(xname.as_str())
        .y_desc("response")
        .draw()
        .map_err(|e| plot_err(&e))?;
    chart
        .draw_series(
            xs.iter()
                .zip(&ys)
                .map(|(&x, &y)| Circle::new((x, y), 3, BLUE.filled())),
        )
        .map_err(|e| plot_err(&e))?;
    chart
        .draw_series(LineSeries::new(
            grid.iter().copied().zip(line.iter().copied()),
            RED.stroke_width(2),
        ))
        .map_err(|e| plot_err(&e))?;
    let mut chart = ChartBuilder::on(&bottom)
        .margin(20)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, r0..r1)
        .map_err(|e| plot_err(&e))?;
    chart
        .configure_mesh()
        .x_desc(xname.as_str())
        .y_desc("residual")
        .draw()
        .map_err(|e| plot_err(&e))?;
    chart
        .draw_series(LineSeries::new([(x0, 0.0), (x1, 0.0)], BLACK))
        .map_err(|e| plot_err(&e))?;
    chart
        .draw_series(
            xs.iter()
                .zip(&residuals)
                .map(|(&x, &r)| Circle::new((x, r), 3, BLUE.filled())),
        )
        .map_err(|e| plot_err(&e))?;
    root.present().map_err(|e| plot_err(&e))?;
    Ok(())
}
