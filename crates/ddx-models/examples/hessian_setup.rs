//! The cost of setting up a Hessian (sparsity pattern, colouring, lane) for many symbols:
//! the measurement in BENCHMARKS.md, "Hessian setup".
//!
//! `/usr/bin/time -f "%M KB" cargo run --release -p ddx-models --example hessian_setup -- N`
//! builds the chained Rosenbrock function of `ddx_models::trend::Chain` over `N` symbols
//! (a tridiagonal Hessian) and prints the build time, the time to the colour count, the
//! colours and the Hessian lane's length. `-- N dense` builds `(Σ xᵢ)² + Σ xᵢ³` instead,
//! whose Hessian is dense (`N` colours).

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
    let dense = std::env::args().nth(2).as_deref() == Some("dense");
    let t = Instant::now();
    let eq = if dense {
        ddx::rt::equation(|| {
            let xs: Vec<ddx::Expr> = (0..n).map(|i| ddx::rt::var(&format!("x{i:05}"))).collect();
            let sum = xs.iter().fold(ddx::Expr::from(0.0), |a, &x| a + x);
            xs.iter().fold(sum * sum, |a, &x| a + x * x * x)
        })
        .expect("the model builds")
    } else {
        let chain = Chain::new(n).expect("n >= 2");
        ddx_models::equation(&chain).expect("the model builds")
    };
    let built = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let colours = eq.hessian_colors();
    let setup = t.elapsed().as_secs_f64();
    let nodes = eq.lane(LaneKind::Hessian).unwrap().graph.len();
    println!(
        "n = {n}: build {built:.3} s, Hessian setup {setup:.3} s, {colours} colours, \
         {nodes} lane nodes"
    );
}
