//! What the column-count accessors cost on a least-squares model of 10⁵ terms (issue 11,
//! BENCHMARKS.md "Column-count accessors"): each accessor on a fresh equation, and after the
//! call that builds the lane it reads. Pass the term count as the first argument.
//!
//! ```sh
//! cargo run --release -p ddx --no-default-features --example column_counts -- 100000
//! ```

use ddx::{rt, Expr};
use std::time::Instant;

fn model(terms: usize) -> ddx::Equation {
    rt::equation(|| {
        let (a, b, c) = (rt::var("a"), rt::var("b"), rt::var("c"));
        let mut acc = Expr::from(0.0);
        for i in 0..terms {
            let t = i as f64 / terms as f64;
            let r = (1.0 + t * t) - a * (-b * t).exp() - c * t;
            acc += r * r;
        }
        acc
    })
    .unwrap()
}

fn main() {
    let terms: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let t0 = Instant::now();
    let eq = model(terms);
    println!(
        "build model ({} nodes): {:?}",
        eq.model().graph().len(),
        t0.elapsed()
    );
    let t0 = Instant::now();
    let j = eq.jacobian_columns();
    println!("fresh: jacobian_columns = {j}: {:?}", t0.elapsed());
    let eq = model(terms);
    let t0 = Instant::now();
    let _ = eq.jacobian([1.0, 1.0, 1.0]).unwrap();
    println!(
        "fresh: first jacobian() (builds the Jacobian lane): {:?}",
        t0.elapsed()
    );
    let t0 = Instant::now();
    let j = eq.jacobian_columns();
    println!(
        "after jacobian(): jacobian_columns = {j}: {:?}",
        t0.elapsed()
    );
    let eq = model(terms);
    let t0 = Instant::now();
    let h = (eq.hessian_columns(), eq.hessian_colors());
    println!(
        "fresh: hessian_columns, hessian_colors = {h:?}: {:?}",
        t0.elapsed()
    );
    let t0 = Instant::now();
    let _ = eq.hessian([1.0, 1.0, 1.0]).unwrap();
    println!(
        "then: first hessian() (builds the Hessian lane): {:?}",
        t0.elapsed()
    );
    let t0 = Instant::now();
    let v = (
        eq.value_columns(),
        eq.jvp_columns(),
        eq.vjp_columns(),
        eq.hvp_columns(),
    );
    println!("value/jvp/vjp/hvp columns = {v:?}: {:?}", t0.elapsed());
}
