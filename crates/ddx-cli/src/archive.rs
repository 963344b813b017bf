//! `ddx compile` (build an expression's lanes, and with `--jit` their machine code, once,
//! and save them with `Equation::save`) and `ddx load` (read such a file back with
//! `Equation::load`: describe it, or evaluate it at a point as `ddx eval` does). Loading
//! checks the whole file first (ddx's archive format), so a damaged or foreign file is an
//! error message, never a crash.

use crate::error::{emit, CliError};
use crate::eval::{at_point, Wants};
use clap::Args;
use ddx::{rt, Backend, Equation, LaneKind, Options};
use std::path::PathBuf;

/// Build an expression's lanes (and machine code) once and save them to a file.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  ddx compile 'x*exp(-y)' -o f.ddx --jit && ddx load f.ddx x=2 y=0.5 --gradient"
)]
pub struct CompileArgs {
    /// The expression, e.g. `x*exp(-y)`.
    pub expr: String,
    /// Names of the expression that are parameters, never differentiated: `--params T,P`
    /// (saved with the equation; `load` takes their values with `--param`).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub params: Vec<String>,
    /// The file to write.
    #[arg(long, short, value_name = "FILE")]
    pub output: PathBuf,
    /// Also compile each lane to machine code (Cranelift) and keep the code in the file;
    /// a later `load` on this host and build runs it at once.
    #[arg(long)]
    pub jit: bool,
}

/// Read a file `ddx compile` wrote: describe it, or evaluate it at a point.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  ddx load f.ddx x=2 y=0.5 --gradient --hessian")]
pub struct LoadArgs {
    /// The file `ddx compile` (or `Equation::save`) wrote.
    pub file: PathBuf,
    /// A point, `name=value` for every symbol: evaluate there, as `ddx eval` does.
    pub point: Vec<String>,
    /// What to print besides the value (with a point).
    #[command(flatten)]
    pub wants: Wants,
}

/// The lanes a saved file carries: what `eval`, `batch` and `fit` use.
const LANES: [LaneKind; 4] = [
    LaneKind::Value,
    LaneKind::Jacobian,
    LaneKind::Gradient,
    LaneKind::Hessian,
];

/// Runs `ddx compile`.
///
/// # Errors
/// A parse error; a file that cannot be written.
pub fn compile(a: &CompileArgs) -> Result<(), CliError> {
    let mut eq = rt::equation_text_with_params(&a.expr, &a.params)?;
    if a.jit {
        eq.set_options(Options::with_backend(Backend::Compile));
    }
    let mut text = String::new();
    for kind in LANES {
        let nodes = eq.nodes(kind)?;
        let kernel = a.jit && eq.wait_for_kernel_of(kind);
        text += &format!(
            "  {} lane: {nodes} nodes{}\n",
            kind.name(),
            if kernel { ", machine code" } else { "" }
        );
    }
    eq.save(&a.output)?;
    emit(&format!(
        "{}: {} ({})\n{text}",
        a.output.display(),
        a.expr,
        eq.symbols().join(", ")
    ))
}

/// Runs `ddx load`.
///
/// # Errors
/// A file that cannot be read or is not a scalar ddx equation (damaged, foreign, a system,
/// a version this build does not read); with a point, those of `ddx eval`.
pub fn load(a: &LoadArgs) -> Result<(), CliError> {
    let eq: Equation = Equation::load(&a.file)?;
    if !a.point.is_empty() {
        return at_point(&eq, &a.point, &a.wants);
    }
    let status = eq.jit_status();
    let params = if eq.param_count() == 0 {
        String::new()
    } else {
        format!("parameters: {}\n", eq.parameters().join(", "))
    };
    emit(&format!(
        "{eq}\nsymbols: {}\n{params}kernels loaded: {}\n",
        eq.symbols().join(", "),
        status.loaded
    ))
}
