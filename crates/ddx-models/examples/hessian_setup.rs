//! The cost of setting up a Hessian (sparsity pattern, colouring, lane) for many symbols:
//! the measurement in BENCHMARKS.md, "Hessian setup".
//!
//! `/usr/bin/time -f "%M KB" cargo run --release -p ddx-models --example hessian_setup -- N`
//! builds the chained Rosenbrock function of `ddx_models::trend::Chain` over `N` symbols
//! (a tridiagonal Hessian) and prints the build time, the time to the colour count, the
//! colours and the Hessian lane's length.

use ddx::LaneKind;
use ddx_models::trend::Chain;
use std::time::Instant;

fn main() {
    let n: usize = match std::env::args().nth(1).map(|a| a.parse()) {
        Some(Ok(n)) if n >= 2 => n,
        _ => {
            eprintln!("usage: hessian_setup N   (N >= 2 symbols)");
            std::process::exit(2);
        }
    };
    let t = Instant::now();
    let chain = Chain::new(n).expect("n >= 2");
    let eq = ddx_models::equation(&chain).expect("the model builds");
    let built = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let colours = eq.hessian_colors();
    let setup = t.elapsed().as_secs_f64();
    let nodes = eq.lane(LaneKind::Hessian).graph.len();
    println!(
        "n = {n}: build {built:.3} s, Hessian setup {setup:.3} s, {colours} colours, \
         {nodes} lane nodes"
    );
}
