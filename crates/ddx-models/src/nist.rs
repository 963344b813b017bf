//! NIST's Statistical Reference Datasets for nonlinear regression (StRD), read as NIST ships
//! them, and their models.
//!
//! Each `.dat` file holds a model, two starting points, certified parameter values with
//! standard deviations, the certified residual sum of squares and the observations. The
//! datasets are public domain, from the U.S. National Institute of Standards and
//! Technology, Information Technology Laboratory: <https://www.itl.nist.gov/div898/strd/>.
//!
//! The models are written once, generic over [`Real`], so the same arithmetic runs on
//! `f64` (the native baseline) and on [`Expr`] (inside a ddx model closure).

use ddx::{rt, Equation, Expr, Scalar, System};
use std::fmt;
use std::ops::{Add, Div, Mul, Neg, Sub};
use std::path::{Path, PathBuf};

/// A failure to read a dataset file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NistError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not in NIST's StRD layout.
    #[error("{path}: {what}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What was expected and not found.
        what: String,
    },
    /// The dataset's model is not one this module knows.
    #[error("no model is known for dataset {0}")]
    UnknownModel(String),
    /// Building the equation failed.
    #[error(transparent)]
    Ddx(#[from] ddx::Error),
}

/// One parameter of a model: its name, the two starts and the certified value.
#[derive(Clone, Debug, PartialEq)]
pub struct Parameter {
    /// `b1`, `b2`, …
    pub name: String,
    /// NIST's Start 1 (the harder start: farther from the solution).
    pub start1: f64,
    /// NIST's Start 2 (closer to the solution).
    pub start2: f64,
    /// The certified value (NIST prints 11 significant digits).
    pub certified: f64,
    /// The certified standard deviation of the estimate.
    pub std_dev: f64,
}

/// One observation: the response `y` and the predictors `x` (one, or two for Nelson).
#[derive(Clone, Debug, PartialEq)]
pub struct Observation {
    /// The response.
    pub y: f64,
    /// The predictors.
    pub x: Vec<f64>,
}

/// A dataset as NIST ships it.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    /// The dataset name, e.g. `Misra1a`.
    pub name: String,
    /// NIST's level of difficulty: `Lower`, `Average` or `Higher`.
    pub difficulty: String,
    /// The model as NIST writes it (its notation: `exp[...]`, `arctan`, `pi`, `**`, `+ e`).
    pub model_text: String,
    /// The parameters, in order `b1, b2, …` (also the canonical symbol order).
    pub parameters: Vec<Parameter>,
    /// The certified residual sum of squares.
    pub certified_rss: f64,
    /// The observations.
    pub observations: Vec<Observation>,
}

/// The directory holding the datasets in this repository (`data/nist-strd`).
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/nist-strd")
}

/// Every dataset in `dir` (files `*.dat`), sorted by name.
///
/// # Errors
/// [`NistError::Io`] or [`NistError::Format`] for the first file that cannot be read.
pub fn load_all(dir: &Path) -> Result<Vec<Dataset>, NistError> {
    let io = |source| NistError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "dat"))
        .collect();
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

/// Reads one dataset file.
///
/// # Errors
/// [`NistError::Io`] when the file cannot be read, [`NistError::Format`] when it is not in
/// NIST's layout.
pub fn load(path: &Path) -> Result<Dataset, NistError> {
    let text = std::fs::read_to_string(path).map_err(|source| NistError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text).map_err(|what| NistError::Format {
        path: path.to_path_buf(),
        what,
    })
}

fn number(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .map_err(|_| format!("`{s}` is not a number"))
}

/// Parses a dataset from NIST's text.
fn parse(text: &str) -> Result<Dataset, String> {
    let lines: Vec<&str> = text.lines().collect();
    let field = |key: &str| {
        lines
            .iter()
            .find_map(|l| l.trim_start().strip_prefix(key).map(str::trim))
            .ok_or_else(|| format!("no `{key}` line"))
    };
    let name = field("Dataset Name:")?
        .split_whitespace()
        .next()
        .ok_or("empty dataset name")?
        .to_string();
    let difficulty = lines
        .iter()
        .find_map(|l| {
            let l = l.trim();
            l.strip_suffix("Level of Difficulty")
                .map(|d| d.trim().to_string())
        })
        .ok_or("no level of difficulty")?;

    // The model: the lines after "Model:" and its class/parameter-count lines, up to the
    // starting values.
    let model_at = lines
        .iter()
        .position(|l| l.starts_with("Model:"))
        .ok_or("no Model: line")?;
    let starts_at = lines
        .iter()
        .position(|l| l.to_ascii_lowercase().contains("starting values") && !l.contains("(lines"))
        .ok_or("no starting values table")?;
    let model_text = lines[model_at + 1..starts_at]
        .iter()
        .map(|l| l.trim())
        // The equation starts at the first `=` (past Roszman1's `pi = …` line) and runs on
        // over its continuation lines (ENSO, Gauss, Hahn1, Kirby2) up to a blank line.
        .skip_while(|l| !l.contains('=') || l.starts_with("pi ="))
        .take_while(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if model_text.is_empty() {
        return Err("no model equation".into());
    }

    let mut parameters = Vec::new();
    for l in &lines[starts_at..] {
        let t = l.trim();
        let Some((lhs, rhs)) = t.split_once('=') else {
            continue;
        };
        let lhs = lhs.trim();
        if !(lhs.starts_with('b') && lhs[1..].chars().all(|c| c.is_ascii_digit()) && lhs.len() > 1)
        {
            continue;
        }
        let v: Vec<&str> = rhs.split_whitespace().collect();
        if v.len() != 4 {
            return Err(format!("parameter line `{t}` does not have four numbers"));
        }
        parameters.push(Parameter {
            name: lhs.to_string(),
            start1: number(v[0])?,
            start2: number(v[1])?,
            certified: number(v[2])?,
            std_dev: number(v[3])?,
        });
    }
    if parameters.is_empty() {
        return Err("no parameters".into());
    }
    let certified_rss = number(
        field("Residual Sum of Squares:")?
            .split_whitespace()
            .next()
            .ok_or("empty RSS")?,
    )?;

    // Observations: the header says "Data (lines A to B)", 1-based and inclusive.
    let span = lines
        .iter()
        .find_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("Data")?.trim().strip_prefix("(lines")?;
            let rest = rest.trim().strip_suffix(')')?;
            let (a, b) = rest.split_once("to")?;
            Some((
                a.trim().parse::<usize>().ok()?,
                b.trim().parse::<usize>().ok()?,
            ))
        })
        .ok_or("no `Data (lines A to B)` header")?;
    let (first, last) = span;
    if first == 0 || last < first || last > lines.len() {
        return Err(format!("data lines {first} to {last} are outside the file"));
    }
    let mut observations = Vec::with_capacity(last - first + 1);
    for l in &lines[first - 1..last] {
        let v = l
            .split_whitespace()
            .map(number)
            .collect::<Result<Vec<f64>, String>>()?;
        if v.len() < 2 {
            return Err(format!("data line `{l}` has fewer than two columns"));
        }
        observations.push(Observation {
            y: v[0],
            x: v[1..].to_vec(),
        });
    }
    Ok(Dataset {
        name,
        difficulty,
        model_text,
        parameters,
        certified_rss,
        observations,
    })
}

/// The arithmetic the models need, on `f64` and on [`Expr`] alike.
pub trait Real:
    Copy
    + From<f64>
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// `e^self`.
    fn exp(self) -> Self;
    /// The natural logarithm.
    fn ln(self) -> Self;
    /// `self ** p`.
    fn powf(self, p: Self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Arctangent.
    fn atan(self) -> Self;
}

impl Real for f64 {
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn ln(self) -> Self {
        f64::ln(self)
    }
    fn powf(self, p: Self) -> Self {
        f64::powf(self, p)
    }
    fn sin(self) -> Self {
        f64::sin(self)
    }
    fn cos(self) -> Self {
        f64::cos(self)
    }
    fn atan(self) -> Self {
        f64::atan(self)
    }
}

impl Real for Expr {
    fn exp(self) -> Self {
        Expr::exp(self)
    }
    fn ln(self) -> Self {
        Expr::ln(self)
    }
    fn powf(self, p: Self) -> Self {
        Expr::powf(self, p)
    }
    fn sin(self) -> Self {
        Expr::sin(self)
    }
    fn cos(self) -> Self {
        Expr::cos(self)
    }
    fn atan(self) -> Self {
        Expr::atan(self)
    }
}

/// The model families of the datasets here, as NIST states them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Family {
    /// `b1*(1-exp(-b2*x))`
    Misra1a,
    /// `b1 * (1-(1+b2*x/2)**(-2))`
    Misra1b,
    /// `b1 * (1-(1+2*b2*x)**(-.5))`
    Misra1c,
    /// `b1*b2*x*((1+b2*x)**(-1))`
    Misra1d,
    /// `exp(-b1*x)/(b2+b3*x)`
    Chwirut,
    /// `b1*x**b2`
    DanWood,
    /// Three harmonics: annual and two fitted periods.
    Enso,
    /// `b1*exp(-b2*x) + b3*exp(-(x-b4)**2/b5**2) + b6*exp(-(x-b7)**2/b8**2)`
    Gauss,
    /// Cubic over cubic.
    Hahn1,
    /// Quadratic over quadratic.
    Kirby2,
    /// `b1*exp(-b2*x) + b3*exp(-b4*x) + b5*exp(-b6*x)`
    Lanczos,
    /// `b1 + b2*exp(-x*b4) + b3*exp(-x*b5)`
    Mgh17,
    /// `log(y) = b1 - b2*x1*exp(-b3*x2)`: the response is `log(y)`.
    Nelson,
    /// `b1 - b2*x - arctan(b3/(x-b4))/pi`
    Roszman1,
}

impl Family {
    /// The family of dataset `name`.
    ///
    /// # Errors
    /// [`NistError::UnknownModel`] for a dataset this module has no model for.
    pub fn of(name: &str) -> Result<Family, NistError> {
        Ok(match name {
            "Misra1a" => Family::Misra1a,
            "Misra1b" => Family::Misra1b,
            "Misra1c" => Family::Misra1c,
            "Misra1d" => Family::Misra1d,
            "Chwirut1" | "Chwirut2" => Family::Chwirut,
            "DanWood" => Family::DanWood,
            "ENSO" => Family::Enso,
            "Gauss1" | "Gauss2" | "Gauss3" => Family::Gauss,
            "Hahn1" => Family::Hahn1,
            "Kirby2" => Family::Kirby2,
            "Lanczos1" | "Lanczos2" | "Lanczos3" => Family::Lanczos,
            "MGH17" => Family::Mgh17,
            "Nelson" => Family::Nelson,
            "Roszman1" => Family::Roszman1,
            other => return Err(NistError::UnknownModel(other.to_string())),
        })
    }

    /// The model's prediction at predictors `x` with parameters `b` (`b[0]` is `b1`), in
    /// NIST's arithmetic. For [`Family::Nelson`] it predicts `log(y)`.
    pub fn predict<T: Real>(self, b: &[T], x: &[f64]) -> T {
        let c = |v: f64| T::from(v);
        let x0 = x[0];
        let xe = c(x0);
        match self {
            Family::Misra1a => b[0] * (c(1.0) - (-b[1] * xe).exp()),
            Family::Misra1b => b[0] * (c(1.0) - (c(1.0) + b[1] * xe / c(2.0)).powf(c(-2.0))),
            Family::Misra1c => b[0] * (c(1.0) - (c(1.0) + c(2.0) * b[1] * xe).powf(c(-0.5))),
            Family::Misra1d => b[0] * b[1] * xe * (c(1.0) + b[1] * xe).powf(c(-1.0)),
            Family::Chwirut => (-b[0] * xe).exp() / (b[1] + b[2] * xe),
            Family::DanWood => b[0] * xe.powf(b[1]),
            Family::Enso => {
                let pi2x = c(2.0 * std::f64::consts::PI * x0);
                b[0] + b[1] * (pi2x / c(12.0)).cos()
                    + b[2] * (pi2x / c(12.0)).sin()
                    + b[4] * (pi2x / b[3]).cos()
                    + b[5] * (pi2x / b[3]).sin()
                    + b[7] * (pi2x / b[6]).cos()
                    + b[8] * (pi2x / b[6]).sin()
            }
            Family::Gauss => {
                let bump = |h: T, mu: T, w: T| h * (-(xe - mu).powf(c(2.0)) / w.powf(c(2.0))).exp();
                b[0] * (-b[1] * xe).exp() + bump(b[2], b[3], b[4]) + bump(b[5], b[6], b[7])
            }
            Family::Hahn1 => {
                let (x2, x3) = (c(x0.powf(2.0)), c(x0.powf(3.0)));
                (b[0] + b[1] * xe + b[2] * x2 + b[3] * x3)
                    / (c(1.0) + b[4] * xe + b[5] * x2 + b[6] * x3)
            }
            Family::Kirby2 => {
                let x2 = c(x0.powf(2.0));
                (b[0] + b[1] * xe + b[2] * x2) / (c(1.0) + b[3] * xe + b[4] * x2)
            }
            Family::Lanczos => {
                b[0] * (-b[1] * xe).exp() + b[2] * (-b[3] * xe).exp() + b[4] * (-b[5] * xe).exp()
            }
            Family::Mgh17 => b[0] + b[1] * (-xe * b[3]).exp() + b[2] * (-xe * b[4]).exp(),
            Family::Nelson => b[0] - b[1] * xe * (-b[2] * c(x[1])).exp(),
            Family::Roszman1 => {
                b[0] - b[1] * xe - (b[2] / (xe - b[3])).atan() / c(std::f64::consts::PI)
            }
        }
    }

    /// The response the model fits: `log(y)` for [`Family::Nelson`], `y` otherwise.
    pub fn response(self, y: f64) -> f64 {
        match self {
            Family::Nelson => y.ln(),
            _ => y,
        }
    }
}

impl Dataset {
    /// The model family of this dataset.
    ///
    /// # Errors
    /// [`NistError::UnknownModel`].
    pub fn family(&self) -> Result<Family, NistError> {
        Family::of(&self.name)
    }

    /// The residuals `rᵢ = yᵢ − model(xᵢ)` (`log(yᵢ) − model` for Nelson) at `b`, natively.
    ///
    /// # Errors
    /// [`NistError::UnknownModel`].
    pub fn residuals(&self, b: &[f64]) -> Result<Vec<f64>, NistError> {
        let fam = self.family()?;
        Ok(self
            .observations
            .iter()
            .map(|o| fam.response(o.y) - fam.predict(b, &o.x))
            .collect())
    }

    /// The residual sum of squares at `b`, natively (left-to-right sum).
    ///
    /// # Errors
    /// [`NistError::UnknownModel`].
    pub fn rss(&self, b: &[f64]) -> Result<f64, NistError> {
        Ok(self.residuals(b)?.iter().fold(0.0, |s, r| s + r * r))
    }

    /// The certified parameter values, in order.
    pub fn certified(&self) -> Vec<f64> {
        self.parameters.iter().map(|p| p.certified).collect()
    }

    fn symbols(&self) -> Vec<Expr> {
        self.parameters.iter().map(|p| rt::var(&p.name)).collect()
    }

    /// The residual system: one output per observation, one symbol per parameter
    /// (`b1 … bp`, which is also the canonical order), built by looping over the data in a
    /// model closure.
    ///
    /// # Errors
    /// [`NistError::UnknownModel`]; a ddx build error.
    pub fn residual_system(&self) -> Result<Equation<System>, NistError> {
        let fam = self.family()?;
        Ok(rt::equation(|| {
            let b = self.symbols();
            self.observations
                .iter()
                .map(|o| fam.response(o.y) - fam.predict(&b, &o.x))
                .collect::<Vec<Expr>>()
        })?)
    }

    /// The residual sum of squares as a scalar equation over the parameters.
    ///
    /// # Errors
    /// [`NistError::UnknownModel`]; a ddx build error.
    pub fn rss_equation(&self) -> Result<Equation<Scalar>, NistError> {
        let fam = self.family()?;
        Ok(rt::equation(|| {
            let b = self.symbols();
            let mut rss = Expr::from(0.0);
            for o in &self.observations {
                let r = fam.response(o.y) - fam.predict(&b, &o.x);
                rss += r * r;
            }
            rss
        })?)
    }
}

impl fmt::Display for Dataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} difficulty, {} parameters, {} observations): {}",
            self.name,
            self.difficulty,
            self.parameters.len(),
            self.observations.len(),
            self.model_text
        )
    }
}

/// How many significant digits `value` shares with `certified`: the log relative error
/// `−log₁₀(|value − certified| / |certified|)`, clamped to `[0, 11]` (NIST certifies 11
/// digits). Equal values score 11; a NaN scores 0.
pub fn digits(value: f64, certified: f64) -> f64 {
    if value == certified {
        return 11.0;
    }
    let rel = if certified == 0.0 {
        (value - certified).abs()
    } else {
        ((value - certified) / certified).abs()
    };
    let d = -rel.log10();
    if d.is_nan() {
        0.0
    } else {
        d.clamp(0.0, 11.0)
    }
}
