//! `ddx`: values, derivatives, batches and fits of text expressions from one command.
//!
//! Each subcommand lives in its own module: [`eval`] (one point), [`inspect`] (`check`,
//! `dot`), [`batch`] (CSV in, CSV out, streamed in chunks on all cores) and [`fit`]
//! (nonlinear least squares through the shared fitter `ddx_fit`, NIST StRD files, plots),
//! [`archive`] (`compile`, `load`: equations saved with their lanes and machine code),
//! [`codegen`] (one lane as a standalone Rust or C function).
//! Every failure is a [`CliError`]: `main` prints it on stderr after `ddx: ` and exits
//! nonzero; no input makes the binary panic.

mod archive;
mod batch;
mod codegen;
mod error;
mod eval;
mod fit;
mod inspect;
mod plot;

use clap::{Parser, Subcommand};
use error::CliError;
use std::process::ExitCode;

/// The top-level help's closing lines: one example per subcommand.
const EXAMPLES: &str = "\
Examples:
  ddx eval 'x*exp(-y)' x=2 y=0.5 --gradient --hessian
  ddx batch 'x*exp(-y)' --input points.csv --output out.csv --want jacobian
  ddx batch 'y - b1*(1-exp(-b2*x))' --params x,y --input obs.csv --want jacobian
  ddx eval 'k*x**2' --params k --param k=3 x=2 --gradient
  ddx fit 'b1*(1-exp(-b2*x))' --data misra1a.csv --response y --start b1=500,b2=1e-4
  ddx fit --nist data/nist-strd/Misra1a.dat --start-set 1
  ddx check 'sin(x)*y + 3'
  ddx dot 'sin(x)*y + 3' | dot -Tsvg > f.svg
  ddx compile 'x*exp(-y)' -o f.ddx --jit
  ddx load f.ddx x=2 y=0.5 --gradient
  ddx codegen 'x*exp(-y)' --lang c --lane gradient --name grad_f -o grad_f.c";

/// Automatic differentiation from the command line: values, derivatives, batches over CSV
/// and nonlinear least-squares fits of expressions written in Python's arithmetic.
#[derive(Debug, Parser)]
#[command(name = "ddx", version = ddx::VERSION, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Eval(eval::EvalArgs),
    Batch(batch::BatchArgs),
    Fit(fit::FitArgs),
    Check(inspect::CheckArgs),
    Dot(inspect::DotArgs),
    Compile(archive::CompileArgs),
    Load(archive::LoadArgs),
    Codegen(codegen::CodegenArgs),
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Eval(a) => eval::run(&a),
        Command::Batch(a) => batch::run(&a),
        Command::Fit(a) => fit::run(&a),
        Command::Check(a) => inspect::check(&a),
        Command::Dot(a) => inspect::dot(&a),
        Command::Compile(a) => archive::compile(&a),
        Command::Load(a) => archive::load(&a),
        Command::Codegen(a) => codegen::run(&a),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ddx: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
