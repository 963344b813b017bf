//! `ddx check` (parse; print the canonical form with its derivative rows, the symbols and
//! each lane's node count) and `ddx dot` (the gradient lane in Graphviz form).

use crate::error::{emit, CliError};
use clap::Args;
use ddx::{rt, LaneKind};
use std::path::PathBuf;

/// Parse an expression and show what ddx makes of it.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  ddx check 'sin(x)*y + 3'")]
pub struct CheckArgs {
    /// The expression, e.g. `sin(x)*y + 3`.
    pub expr: String,
}

/// Print an expression's gradient lane as a Graphviz (DOT) graph.
#[derive(Debug, Args)]
#[command(after_help = "Example:\n  ddx dot 'sin(x)*y + 3' | dot -Tsvg > f.svg")]
pub struct DotArgs {
    /// The expression, e.g. `sin(x)*y + 3`.
    pub expr: String,
    /// Also draw the value nodes the gradient does not need (dashed, grey).
    #[arg(long)]
    pub all: bool,
    /// Write the graph to FILE instead of stdout.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Runs `ddx check`: the canonical form (`f0: …` and one `d/dx: …` row per structurally
/// nonzero partial), `symbols: …` and `nodes: value N, …` (one count per lane kind).
///
/// # Errors
/// The parse error, with its caret display.
pub fn check(a: &CheckArgs) -> Result<(), CliError> {
    let eq = rt::equation_text(&a.expr)?;
    let mut text = format!("{eq}\nsymbols: {}\n", eq.symbols().join(", "));
    let counts = LaneKind::ALL
        .iter()
        .map(|&k| Ok(format!("{} {}", k.name(), eq.nodes(k)?)))
        .collect::<Result<Vec<String>, ddx::Error>>()?;
    text += &format!("nodes: {}\n", counts.join(", "));
    emit(&text)
}

/// Runs `ddx dot`.
///
/// # Errors
/// The parse error; a failure to write the output file.
pub fn dot(a: &DotArgs) -> Result<(), CliError> {
    let eq = rt::equation_text(&a.expr)?;
    let text = eq.to_dot(a.all);
    match &a.output {
        Some(path) => std::fs::write(path, text).map_err(CliError::io(path))?,
        None => emit(&text)?,
    }
    Ok(())
}
