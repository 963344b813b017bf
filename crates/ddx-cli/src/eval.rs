//! `ddx eval`: the value of a text expression at one point and, on request, its gradient,
//! Hessian and a Jacobian–vector product, labelled by symbol (`f`, `df/dx`, `d2f/dxdy`,
//! `jvp`), as text or JSON.
//!
//! A point is `name=value` arguments naming every symbol once; a direction (`--jvp`) is
//! either the same pairs joined by commas or plain numbers in symbol order. Names listed
//! with `--params` are parameters (inputs never differentiated: no `df/dT`, no Hessian
//! row); each is given a value with `--param T=300` (or among the point's pairs).

use crate::error::{emit, CliError};
use clap::Args;
use ddx::{rt, Equation};
use serde_json::{json, Map, Value};
use std::fmt::Write;

/// Evaluate an expression and its derivatives at one point.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  ddx eval 'x*exp(-y)' x=2 y=0.5 --gradient --hessian --jvp 1,0")]
pub struct EvalArgs {
    /// The expression, in Python's arithmetic (`**` is power), e.g. `sin(x)*y + 3`.
    pub expr: String,
    /// The point: `name=value` for every symbol of the expression.
    pub point: Vec<String>,
    /// Names of the expression that are parameters, never differentiated: `--params T,P`.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub params: Vec<String>,
    /// What to print besides the value.
    #[command(flatten)]
    pub wants: Wants,
}

/// What `eval` and `load` print besides the value.
#[derive(Debug, Args)]
pub struct Wants {
    /// Also print the gradient, `df/dx` per symbol.
    #[arg(long)]
    pub gradient: bool,
    /// Also print the Hessian, `d2f/dxdy` per pair of symbols (upper triangle).
    #[arg(long)]
    pub hessian: bool,
    /// Also print the Jacobian–vector product along V: `x=1,y=0`, or `1,0` in symbol order.
    #[arg(long, value_name = "V")]
    pub jvp: Option<String>,
    /// Print one JSON object instead of text (a NaN or infinity is `null`).
    #[arg(long)]
    pub json: bool,
    /// A parameter's value, `T=300` (repeatable, or several joined by commas).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub param: Vec<String>,
}

/// A number from a command-line argument, spelled as in the expressions (and Python):
/// `1.5`, `-2e-3`, `inf`, and `1_000` — an underscore between two digits groups them.
pub fn number(arg: &str, text: &str) -> Result<f64, CliError> {
    let t = text.trim();
    let b = t.as_bytes();
    let grouped = (0..b.len()).filter(|&i| b[i] == b'_').all(|i| {
        i > 0 && b[i - 1].is_ascii_digit() && b.get(i + 1).is_some_and(u8::is_ascii_digit)
    });
    if !grouped {
        return Err(CliError::argument(
            arg,
            format!("`{text}` is not a number (an underscore stands between two digits: `1_000`)"),
        ));
    }
    t.replace('_', "")
        .parse::<f64>()
        .map_err(|_| CliError::argument(arg, format!("`{text}` is not a number")))
}

/// `name=value` pairs from `args` (each may hold several, joined by commas).
pub fn pairs(args: &[String]) -> Result<Vec<(String, f64)>, CliError> {
    let mut out = Vec::new();
    for arg in args {
        for part in arg.split(',').filter(|p| !p.trim().is_empty()) {
            let Some((name, value)) = part.split_once('=') else {
                return Err(CliError::argument(
                    arg,
                    "expected `name=value` (e.g. `x=1.5`)",
                ));
            };
            out.push((name.trim().to_string(), number(arg, value)?));
        }
    }
    Ok(out)
}

/// The direction `--jvp` gives: named pairs, or numbers in symbol order.
fn direction(eq: &Equation, text: &str) -> Result<Vec<f64>, CliError> {
    let v = if text.contains('=') {
        let named = pairs(&[text.to_string()])?;
        let mut v = vec![0.0; eq.arity()];
        ddx::Point::fill_as(&named[..], eq.symbols(), &mut v, ddx::Role::Direction)?;
        v
    } else {
        text.split(',')
            .map(|t| number(text, t))
            .collect::<Result<Vec<f64>, CliError>>()?
    };
    Ok(v)
}

/// A JSON number, or `null` where JSON has none (NaN, infinities).
fn num(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// Runs `ddx eval`.
///
/// # Errors
/// A parse error; a point that misses, repeats or invents a symbol; a parameter without a
/// value, or given two; a value that is not a number; a direction of the wrong length.
pub fn run(a: &EvalArgs) -> Result<(), CliError> {
    let eq = rt::equation_text_with_params(&a.expr, &a.params)?;
    at_point(&eq, &a.point, &a.wants)
}

/// The `--param` pairs of `given`, each naming a parameter of `eq` once.
///
/// # Errors
/// A pair that is malformed, names no parameter, or names one twice.
pub fn param_values(eq: &Equation, given: &[String]) -> Result<Vec<(String, f64)>, CliError> {
    let values = pairs(given)?;
    for (i, (name, _)) in values.iter().enumerate() {
        let arg = format!("--param {name}");
        if !eq.parameters().contains(name) {
            let list = if eq.param_count() == 0 {
                "the expression has none (mark them with --params)".to_string()
            } else {
                format!("the parameters are {}", eq.parameters().join(", "))
            };
            return Err(CliError::argument(
                &arg,
                format!("`{name}` is not a parameter: {list}"),
            ));
        }
        if values[..i].iter().any(|(n, _)| n == name) {
            return Err(CliError::argument(&arg, format!("`{name}` is given twice")));
        }
    }
    Ok(values)
}

/// `eq` with its parameters bound to the pairs that name one (from the point's pairs and
/// `--param`), and the other pairs (the point).
///
/// # Errors
/// A parameter left without a value; a value given twice; a malformed pair.
fn bind(
    eq: &Equation,
    point: &[String],
    a: &Wants,
) -> Result<(Equation, Vec<(String, f64)>), CliError> {
    let mut given = pairs(point)?;
    given.extend(param_values(eq, &a.param)?);
    let (params, point): (Vec<_>, Vec<_>) = given
        .into_iter()
        .partition(|(name, _)| eq.parameters().contains(name));
    if eq.param_count() == 0 {
        return Ok((eq.clone(), point));
    }
    if let Some(name) = eq
        .parameters()
        .iter()
        .find(|p| !params.iter().any(|(n, _)| n == *p))
    {
        return Err(CliError::argument(
            &format!("--param {name}"),
            format!("no value for the parameter `{name}`: give one with --param {name}=VALUE"),
        ));
    }
    Ok((eq.with_params(&params[..])?, point))
}

/// Prints `eq`'s value at `point` (`name=value` arguments) and what `a` asks for.
///
/// # Errors
/// As [`run`], less the parse error.
pub fn at_point(eq: &Equation, point: &[String], a: &Wants) -> Result<(), CliError> {
    let (eq, point) = bind(eq, point, a)?;
    let eq = &eq;
    let point = eq.point(&point[..])?;
    let names = eq.symbols();
    let n = names.len();
    let f = eq.evaluate(&point[..])?;
    let gradient = if a.gradient {
        Some(eq.gradient(&point[..])?)
    } else {
        None
    };
    let hessian = if a.hessian {
        Some(eq.hessian(&point[..])?)
    } else {
        None
    };
    let jvp = match &a.jvp {
        Some(v) => {
            let v = direction(eq, v)?;
            Some(eq.jvp(&v[..], &point[..])?[0])
        }
        None => None,
    };

    if a.json {
        let mut o = Map::new();
        o.insert("symbols".into(), json!(names));
        let at: Map<String, Value> = names
            .iter()
            .cloned()
            .zip(point.iter().map(|&v| num(v)))
            .collect();
        o.insert("point".into(), Value::Object(at));
        if let Some(bound) = eq.bound_params().filter(|b| !b.is_empty()) {
            let at: Map<String, Value> = eq
                .parameters()
                .iter()
                .cloned()
                .zip(bound.iter().map(|&v| num(v)))
                .collect();
            o.insert("parameters".into(), Value::Object(at));
        }
        o.insert("value".into(), num(f));
        if let Some(g) = &gradient {
            let g: Map<String, Value> = names
                .iter()
                .cloned()
                .zip(g.iter().map(|&v| num(v)))
                .collect();
            o.insert("gradient".into(), Value::Object(g));
        }
        if let Some(h) = &hessian {
            let rows: Vec<Value> = h
                .chunks(n.max(1))
                .map(|r| Value::Array(r.iter().map(|&v| num(v)).collect()))
                .collect();
            o.insert("hessian".into(), Value::Array(rows));
        }
        if let Some(p) = jvp {
            o.insert("jvp".into(), num(p));
        }
        return emit(&format!("{}\n", Value::Object(o)));
    }
    let mut t = format!("f = {f}\n");
    if let Some(g) = &gradient {
        for (name, d) in names.iter().zip(g) {
            let _ = writeln!(t, "df/d{name} = {d}");
        }
    }
    if let Some(h) = &hessian {
        for i in 0..n {
            for j in i..n {
                let _ = writeln!(t, "d2f/d{}d{} = {}", names[i], names[j], h[i * n + j]);
            }
        }
    }
    if let Some(p) = jvp {
        let _ = writeln!(t, "jvp = {p}");
    }
    emit(&t)
}
