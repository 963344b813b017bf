//! Instruction counts of per-point `evaluate` calls with and without the last-call cache,
//! for `valgrind --tool=callgrind` (BENCHMARKS.md, "The last-call cache").
//!
//! `cache_overhead [off|on] [n] [calls]`: `calls` evaluations of `trend::Chain(n)` at 16
//! points that differ in every coordinate, in turn (so an active cache never serves one).
//! `off` makes the equation without a cache; `on` gives it a `LastValue`.
//!
//! ```sh
//! cargo build --release -p ddx-models --example cache_overhead
//! valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.off target/release/examples/cache_overhead off 100 20000
//! ```

use ddx_models::trend::Chain;
use ddx_models::{equation, sample_points};
use std::hint::black_box;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("off", String::as_str);
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100);
    let calls: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let model = Chain::new(n).expect("n >= 2");
    let eq = equation(&model).expect("builds");
    let eq = match mode {
        "on" => eq.with_cache(ddx::LastValue::new()), // CACHE-ONLY
        _ => eq,
    };
    let points = sample_points(&model, 7, 16);
    let mut sum = 0.0;
    for k in 0..calls {
        let x = &points[(k % 16) * n..(k % 16 + 1) * n];
        sum += eq.evaluate(black_box(x)).expect("evaluates");
    }
    println!("{mode} n={n} calls={calls} sum={sum}");
}
