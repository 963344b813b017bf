//! Peak memory of an equation with every lane built (issue 20, BENCHMARKS.md "Memory of
//! every lane"): a sum of `N` terms over 2 symbols, `Σ (yᵢ − a·exp(−b·tᵢ))²`, each of the
//! seven fixed lanes built and called once (so the interpreter's per-point program is
//! lowered), the process's resident set read after each step, and how many of each lane's
//! nodes it stores alone (the rest it shares with the model or the Jacobian lane). Pass
//! `N` as the first argument (default 10⁵).
//!
//! ```sh
//! cargo build --release -p ddx --no-default-features --example lane_memory
//! /usr/bin/time -f "%M KB" target/release/examples/lane_memory 100000
//! ```

use ddx::{rt, Expr, LaneKind};
use std::time::Instant;

/// `(current, peak)` resident set of this process in MiB, from `/proc/self/status`
/// (`(0, 0)` where it cannot be read).
fn rss() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn main() {
    let terms: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let t0 = Instant::now();
    let eq = rt::equation(|| {
        let (a, b) = (rt::var("a"), rt::var("b"));
        let mut acc = Expr::from(0.0);
        for i in 0..terms {
            let t = i as f64 / terms as f64;
            let r = (1.0 + t * t) - a * (-b * t).exp();
            acc += r * r;
        }
        acc
    })
    .unwrap();
    let (now, peak) = rss();
    println!(
        "model ({} nodes): {:.2?}, rss {now:.0} MiB, peak {peak:.0} MiB",
        eq.model().graph().len(),
        t0.elapsed()
    );
    let x = [0.9, 1.1];
    for kind in LaneKind::ALL {
        let t0 = Instant::now();
        let graph = &eq.lane(kind).unwrap().graph;
        let nodes = graph.len();
        let built = t0.elapsed();
        // The nodes stored for this lane alone: not in a run it shares with the model or
        // (the second-order lanes) with the Jacobian lane.
        let mut shared = graph.shared_with(eq.model().graph());
        if matches!(kind, LaneKind::Hessian | LaneKind::Hvp) {
            // Built already: these lanes are built on it.
            shared = shared.max(graph.shared_with(&eq.lane(LaneKind::Jacobian).unwrap().graph));
        }
        let t1 = Instant::now();
        let out = match kind {
            LaneKind::Value => vec![eq.evaluate(x).unwrap()],
            LaneKind::Jacobian => eq.jacobian(x).unwrap(),
            LaneKind::Gradient => eq.gradient(x).unwrap(),
            LaneKind::Jvp => eq.jvp([1.0, 0.5], x).unwrap(),
            LaneKind::Vjp => eq.vjp(&[1.0], x).unwrap(),
            LaneKind::Hessian => eq.hessian(x).unwrap(),
            LaneKind::Hvp => eq.hvp([1.0, 0.5], x).unwrap(),
            LaneKind::Tensor => unreachable!("not a fixed lane"),
        };
        let (now, peak) = rss();
        println!(
            "{:>8} ({nodes} nodes, {} its own): build {built:.2?}, first call {:.2?}, \
             rss {now:.0} MiB, peak {peak:.0} MiB, out[0] = {:.17e}",
            kind.name(),
            nodes - shared,
            t1.elapsed(),
            out[0]
        );
    }
}
