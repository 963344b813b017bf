//! Instruction counts of per-point calls with and without the last-call cache, for
//! `valgrind --tool=callgrind` (BENCHMARKS.md, "The last-call cache"): the three patterns
//! of issue 14's benchmarks on `trend::Chain(n)` (the banded extended Rosenbrock with a
//! coupling sine, a running sum of `n − 1` terms).
//!
//! `cache_overhead WORKLOAD CACHE BACKEND [n] [reps] [SUM]`
//!
//! - `WORKLOAD`: `new` — `reps` calls of `evaluate` at 16 points that differ in every
//!   coordinate, in turn (an active cache never serves one: its cost); `fd` — `reps`
//!   forward-difference gradients, `f(x)` then `f(x + h·eᵢ)` for each `i`, one coordinate
//!   moved at a time (`n + 1` evaluations each); `vg` — `reps` rounds of `evaluate`,
//!   `gradient`, `evaluate` at a new point each (a minimiser's pattern).
//! - `CACHE`: `off` — no cache; `inactive` — a cache whose `active()` is `false`; `on` — a
//!   `LastValue`.
//! - `BACKEND`: `interp` (the interpreter answers) or `jit` (`Backend::Compile`, the
//!   kernels of the lanes used waited for before the measured loop).
//! - `SUM`: `chain` (the default: `trend::Chain`, whose terms are added left to right, so
//!   coordinate `i` reaches the `n − i` additions after its terms) or `tree` (the same
//!   terms added pairwise, a balanced tree: each coordinate reaches `log₂ n` additions).
//!
//! A warm-up round runs first, outside the count (one gradient for `fd`, one pass over the
//! 16 points otherwise), so that what is built once per lane and kept (the interpreter's
//! programs, the cache's tape program and per-symbol reach lists) is not in the figure;
//! the `on` arm prints the cache's counts and the bytes the tape holds. Every run prints the
//! loop's wall time per rep (`ns/rep`; run natively for it, arms interleaved, the machine
//! being shared). Only the loop is
//! meant to be counted: it is the function `measured`, so
//!
//! ```sh
//! CARGO_INCREMENTAL=0 cargo build --release -p ddx-models --example cache_overhead
//! valgrind --tool=callgrind --toggle-collect='*measured*' --callgrind-out-file=/tmp/cg \
//!     $CARGO_TARGET_DIR/release/examples/cache_overhead new on interp 100 2000
//! ```
//!
//! The lines between `CACHE-ONLY-BEGIN` and `CACHE-ONLY-END` are the only ones that need
//! the cache; deleting them (`sed '/CACHE-ONLY-BEGIN/,/CACHE-ONLY-END/d'`) builds the same
//! program on a tree from before the cache existed, for the `off` arms there.

use ddx::{rt, Backend, Equation, Expr, LaneKind, Options};
use ddx_models::trend::Chain;
use ddx_models::{equation, sample_points};
use std::hint::black_box;

/// What callgrind counts (`--toggle-collect='*measured*'`): [`run`].
#[inline(never)]
fn measured(eq: &Equation, workload: &str, points: &[Vec<f64>], reps: usize) -> f64 {
    run(eq, workload, points, reps)
}

/// `reps` rounds of `workload` over `points` (each `n` long).
#[inline(never)]
fn run(eq: &Equation, workload: &str, points: &[Vec<f64>], reps: usize) -> f64 {
    let n = points[0].len();
    let mut sum = 0.0;
    match workload {
        "new" => {
            for k in 0..reps {
                let x = &points[k % points.len()][..];
                sum += eq.evaluate(black_box(x)).expect("evaluates");
            }
        }
        "fd" => {
            let mut xh = vec![0.0; n];
            for k in 0..reps {
                let x = &points[k % points.len()];
                let f0 = eq.evaluate(black_box(&x[..])).expect("evaluates");
                xh.copy_from_slice(x);
                for i in 0..n {
                    let h = 1e-7 * x[i].abs().max(1.0);
                    xh[i] = x[i] + h;
                    sum += (eq.evaluate(black_box(&xh[..])).expect("evaluates") - f0) / h;
                    xh[i] = x[i];
                }
            }
        }
        "vg" => {
            for k in 0..reps {
                let x = &points[k % points.len()][..];
                let f = eq.evaluate(black_box(x)).expect("evaluates");
                let g = eq.gradient(black_box(x)).expect("differentiates");
                let again = eq.evaluate(black_box(x)).expect("evaluates");
                sum += f + g[0] + again;
            }
        }
        other => panic!("unknown workload {other:?} (new, fd or vg)"),
    }
    sum
}

// CACHE-ONLY-BEGIN
/// A cache that is never active: every call must cost what it costs without one.
#[derive(Debug)]
struct Inactive;

impl ddx::ValueCache for Inactive {
    fn active(&self) -> bool {
        false
    }
    fn read(&self, _: &ddx::cache::Extent, _: &mut dyn FnMut(&ddx::cache::Entry)) -> bool {
        false
    }
    fn write(&self, _: &ddx::cache::Extent, _: &mut dyn FnMut(&mut ddx::cache::Entry)) -> bool {
        false
    }
}
// CACHE-ONLY-END

/// `trend::Chain(n)`'s terms, added as a balanced tree (pairwise, level by level).
fn tree_chain(n: usize) -> Equation {
    rt::equation(|| {
        let x: Vec<Expr> = (0..n).map(|i| rt::var(&format!("x{i:04}"))).collect();
        let mut terms: Vec<Expr> = (0..n - 1)
            .map(|i| {
                let (a, b) = (x[i], x[i + 1]);
                let u = b - a * a;
                let v = 1.0 - a;
                u * u * 100.0 + v * v + (a * b).sin()
            })
            .collect();
        while terms.len() > 1 {
            terms = terms
                .chunks(2)
                .map(|c| if c.len() == 2 { c[0] + c[1] } else { c[0] })
                .collect();
        }
        terms[0]
    })
    .expect("builds")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize, default: &'static str| args.get(i).map_or(default, String::as_str);
    let (workload, cache, backend) = (arg(1, "new"), arg(2, "off"), arg(3, "interp"));
    let n: usize = arg(4, "100").parse().expect("n is a number");
    let reps: usize = arg(5, "2000").parse().expect("reps is a number");
    let model = Chain::new(n).expect("n >= 2");
    let mut eq = match arg(6, "chain") {
        "tree" => tree_chain(n),
        _ => equation(&model).expect("builds"),
    };
    // CACHE-ONLY-BEGIN
    eq = match cache {
        "on" => eq.with_cache(ddx::LastValue::new()),
        "inactive" => eq.with_cache(Inactive),
        _ => eq,
    };
    // CACHE-ONLY-END
    if backend == "jit" {
        eq.set_options(Options::with_backend(Backend::Compile));
        for kind in [LaneKind::Value, LaneKind::Gradient] {
            assert!(eq.wait_for_kernel_of(kind), "{:?}", eq.jit_status());
        }
    }
    let flat = sample_points(&model, 7, 16);
    let points: Vec<Vec<f64>> = flat.chunks_exact(n).map(<[f64]>::to_vec).collect();
    let warm = run(
        &eq,
        workload,
        &points,
        if workload == "fd" { 1 } else { 16 },
    );
    let clock = std::time::Instant::now();
    let sum = measured(&eq, workload, &points, reps);
    let ns = clock.elapsed().as_nanos() as f64 / reps as f64;
    println!(
        "{workload} {cache} {backend} n={n} reps={reps} {} sum={sum} warm={warm} ns/rep={ns:.0}",
        arg(6, "chain")
    );
    // CACHE-ONLY-BEGIN
    if let Some(stats) = eq.cache_stats() {
        println!(
            "{stats:?}; tape bytes: value lane {}, gradient lane {}",
            eq.tape_memory(LaneKind::Value),
            eq.tape_memory(LaneKind::Gradient)
        );
    }
    // CACHE-ONLY-END
}
