//! `ddx fit`: nonlinear least squares through the shared fitter `ddx_fit`.
//!
//! Two sources of a problem:
//! - `MODEL --data FILE --response EXPR --start b1=…,b2=…`: the names given a start are
//!   the parameters; every other name of the model and of the response is a column of the
//!   CSV file. Residual `i` is `response(rowᵢ) − model(rowᵢ)`.
//! - `--nist FILE`: a NIST StRD file — its model line (read through ddx's parser after
//!   `ddx_models::model_text`'s translation), its data and its two starts; the report adds
//!   the certified values and the significant digits each estimate shares with them.
//!
//! The report gives each parameter with its standard error (from `JᵀJ`), the RSS, the
//! iterations of each phase and why each stopped. `--plot FILE.svg` draws the data, the
//! fitted curve and the residuals for a one-predictor model.

use crate::batch::cell;
use crate::error::{emit, CliError};
use crate::eval::pairs;
use crate::plot;
use clap::Args;
use ddx::{rt, Equation, Expr, Formula, System};
use ddx_fit::Fit;
use ddx_models::nist;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Fit a model to data by nonlinear least squares.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  ddx fit 'b1*(1-exp(-b2*x))' --data misra1a.csv --response y --start b1=500,b2=1e-4\n  ddx fit --nist data/nist-strd/Misra1a.dat --start-set 1 --plot misra1a.svg"
)]
pub struct FitArgs {
    /// The model's prediction, e.g. `b1*(1-exp(-b2*x))`: parameters and column names.
    #[arg(required_unless_present = "nist", conflicts_with = "nist")]
    pub model: Option<String>,
    /// The CSV file of observations (a header row names the columns).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "nist",
        conflicts_with = "nist"
    )]
    pub data: Option<PathBuf>,
    /// The response each row predicts: a column name or an expression of columns.
    #[arg(long, value_name = "EXPR", default_value = "y")]
    pub response: String,
    /// The parameters' starting values, `b1=500,b2=1e-4`; they name the parameters.
    #[arg(
        long,
        value_name = "PAIRS",
        required_unless_present = "nist",
        conflicts_with = "nist"
    )]
    pub start: Vec<String>,
    /// A NIST StRD nonlinear-regression file: model, data, starts and certified values.
    #[arg(long, value_name = "FILE")]
    pub nist: Option<PathBuf>,
    /// Which of the NIST file's starts to fit from: 1, 2, or both.
    #[arg(long, value_name = "N", default_value = "both", value_parser = ["1", "2", "both"], requires = "nist")]
    pub start_set: String,
    /// Draw the data, the fitted curve and the residuals to an SVG file (one predictor).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// A problem ready to fit: the residual system and what the report and the plot need.
pub struct Problem {
    /// The residual system: one output per observation, the parameters as symbols.
    pub residuals: Equation<System>,
    /// The prediction, with the parameters and predictors free.
    pub prediction: Formula,
    /// The one predictor's name and values, when there is exactly one.
    pub predictor: Option<(String, Vec<f64>)>,
    /// Names bound to constants in the prediction (`pi` for NIST files).
    pub constants: Vec<(String, f64)>,
}

/// Runs `ddx fit`.
///
/// # Errors
/// A file that cannot be read; a malformed CSV row or cell; a parse error; a name that is
/// neither a parameter nor a column; a start for a parameter the model lacks; a fit that
/// diverges; a plot that cannot be drawn.
pub fn run(a: &FitArgs) -> Result<(), CliError> {
    if let Some(path) = &a.nist {
        return run_nist(a, path);
    }
    let (Some(model), Some(data)) = (&a.model, &a.data) else {
        return Err(CliError::argument(
            "fit",
            "give MODEL and --data, or --nist FILE",
        ));
    };
    let start = pairs(&a.start)?;
    let problem = from_csv(model, &a.response, data, &start)?;
    let names = problem.residuals.symbols().to_vec();
    let b0 = problem.residuals.point(&start[..])?;
    let fit = ddx_fit::fit(&problem.residuals, &b0)?;
    let mut text = format!(
        "{model}: {} parameters, {} observations\n",
        names.len(),
        problem.residuals.outputs()
    );
    report(&mut text, &names, &fit, None);
    if let Some(svg) = &a.plot {
        plot::draw(svg, &problem, &fit, &names)?;
    }
    emit(&text)
}

fn run_nist(a: &FitArgs, path: &Path) -> Result<(), CliError> {
    let ds = nist::load(path)?;
    let residuals = ds.residual_system_text()?;
    let names: Vec<String> = ds.parameters.iter().map(|p| p.name.clone()).collect();
    let starts: &[u8] = match a.start_set.as_str() {
        "1" => &[1],
        "2" => &[2],
        _ => &[1, 2],
    };
    let mut text = String::new();
    let mut last = None;
    for &s in starts {
        let b0: Vec<f64> = ds
            .parameters
            .iter()
            .map(|p| if s == 1 { p.start1 } else { p.start2 })
            .collect();
        let fit = ddx_fit::fit(&residuals, &b0).map_err(|e| CliError::File {
            path: path.to_path_buf(),
            what: format!("start {s}: {e}"),
        })?;
        let _ = writeln!(
            text,
            "{} start {s}: {} parameters, {} observations",
            ds.name,
            names.len(),
            ds.observations.len()
        );
        report(&mut text, &names, &fit, Some(&ds));
        last = Some(fit);
    }
    if let (Some(svg), Some(fit)) = (&a.plot, &last) {
        let (_, prediction) = ds.model_formulas()?;
        let predictor = match ds.predictor_names().as_slice() {
            [one] => Some((
                one.clone(),
                ds.observations.iter().map(|o| o.x[0]).collect(),
            )),
            _ => None,
        };
        let problem = Problem {
            residuals,
            prediction,
            predictor,
            constants: vec![("pi".into(), std::f64::consts::PI)],
        };
        plot::draw(svg, &problem, fit, &names)?;
    }
    emit(&text)
}

/// The report of one fit: a table of parameters, then the RSS and the iterations. With a
/// NIST dataset each row adds the certified value and standard deviation and the digits
/// shared with each.
fn report(text: &mut String, names: &[String], fit: &Fit, ds: Option<&nist::Dataset>) {
    match ds {
        Some(_) => text.push_str(
            "  parameter  estimate  std_error  certified  certified_sd  digits  sd_digits\n",
        ),
        None => text.push_str("  parameter  estimate  std_error\n"),
    }
    for (k, name) in names.iter().enumerate() {
        let (v, se) = (fit.parameters[k], fit.std_errors[k]);
        let _ = write!(text, "  {name}  {v:e}  {se:e}");
        if let Some(p) = ds.and_then(|d| d.parameters.get(k)) {
            let _ = write!(
                text,
                "  {:e}  {:e}  {:.1}  {:.1}",
                p.certified,
                p.std_dev,
                nist::digits(v, p.certified),
                nist::digits(se, p.std_dev)
            );
        }
        text.push('\n');
    }
    let _ = write!(text, "  rss {:e}", fit.rss);
    if let Some(d) = ds {
        let _ = write!(
            text,
            "  certified {:e}  digits {:.1}",
            d.certified_rss,
            nist::digits(fit.rss, d.certified_rss)
        );
    }
    let _ = writeln!(
        text,
        "\n  residual_sd {:e}  dof {}",
        fit.residual_sd, fit.dof
    );
    let _ = writeln!(
        text,
        "  iterations {} (levenberg-marquardt {}: {}; newton {}: {})",
        fit.iterations(),
        fit.lm_iterations,
        fit.lm_stop,
        fit.newton_iterations,
        fit.newton_stop
    );
}

/// The residual system of `model` against `response` over the rows of a CSV file.
fn from_csv(
    model: &str,
    response: &str,
    path: &Path,
    start: &[(String, f64)],
) -> Result<Problem, CliError> {
    let prediction = Formula::parse(model)?;
    let response = Formula::parse(response)?;
    let is_parameter = |n: &str| start.iter().any(|(p, _)| p == n);
    if let Some((p, _)) = start.iter().find(|(p, _)| !prediction.names().contains(p)) {
        return Err(CliError::argument(
            &format!("--start {p}=…"),
            format!("the model `{model}` has no parameter `{p}`"),
        ));
    }
    if let Some(p) = response.names().iter().find(|n| is_parameter(n)) {
        return Err(CliError::argument(
            &format!("--start {p}=…"),
            format!("`{p}` is in the response; a parameter must be in the model only"),
        ));
    }
    let mut columns: Vec<String> = prediction
        .names()
        .iter()
        .chain(response.names())
        .filter(|n| !is_parameter(n))
        .cloned()
        .collect();
    columns.sort();
    columns.dedup();

    let file = std::fs::File::open(path).map_err(CliError::io(path))?;
    let mut reader = csv::Reader::from_reader(file);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| crate::batch::csv_error(path, &e))?
        .iter()
        .map(|h| h.trim().to_string())
        .collect();
    let mut index = Vec::with_capacity(columns.len());
    for c in &columns {
        match header.iter().position(|h| h == c) {
            Some(k) => index.push(k),
            None => {
                return Err(CliError::File {
                    path: path.to_path_buf(),
                    what: format!(
                        "`{c}` is neither a parameter (--start) nor a column (the header has {})",
                        header.join(", ")
                    ),
                })
            }
        }
    }
    let mut rows: Vec<Vec<f64>> = Vec::new();
    let mut rec = csv::ByteRecord::new();
    loop {
        match reader.read_byte_record(&mut rec) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(crate::batch::csv_error(path, &e)),
        }
        let mut row = Vec::with_capacity(index.len());
        for &k in &index {
            let raw = rec.get(k).unwrap_or_default();
            let Some(v) = cell(raw) else {
                return Err(CliError::Cell {
                    path: path.to_path_buf(),
                    row: rows.len() as u64 + 1,
                    line: rec.position().map_or(0, |p| p.line()),
                    column: k + 1,
                    name: header[k].clone(),
                    cell: String::from_utf8_lossy(raw).into_owned(),
                });
            };
            row.push(v);
        }
        rows.push(row);
    }
    if rows.is_empty() {
        return Err(CliError::File {
            path: path.to_path_buf(),
            what: "no data rows".into(),
        });
    }
    let residuals = rt::equation(|| {
        let mut bindings: Vec<(&str, f64)> = columns.iter().map(|c| (c.as_str(), 0.0)).collect();
        rows.iter()
            .map(|row| {
                for (slot, &v) in bindings.iter_mut().zip(row) {
                    slot.1 = v;
                }
                response.bind(&bindings) - prediction.bind(&bindings)
            })
            .collect::<Vec<Expr>>()
    })?;
    let predictor_columns: Vec<usize> = (0..columns.len())
        .filter(|&k| prediction.names().contains(&columns[k]))
        .collect();
    let predictor = match predictor_columns.as_slice() {
        [k] => Some((columns[*k].clone(), rows.iter().map(|r| r[*k]).collect())),
        _ => None,
    };
    Ok(Problem {
        residuals,
        prediction,
        predictor,
        constants: Vec::new(),
    })
}
