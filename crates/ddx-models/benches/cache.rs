//! The last-call cache (`ddx::cache::LastValue`), on and off, on the banded chain of
//! `trend::Chain` (extended Rosenbrock with a coupling sine), each arm for the
//! interpreter (`…/interp`) and for compiled kernels (`…/jit`, `Backend::Compile`: a kernel
//! keeps the point but no tape, so a moved point is computed whole):
//!
//! - `value_then_gradient/{off,on}`, n = 100: at each new point, `evaluate`, `gradient`,
//!   `evaluate` again (a minimiser's pattern; the second `evaluate` is served);
//! - `forward_difference/{off,on}`, n = 1000: a forward-difference gradient, `f(x)` and then
//!   `f(x + h·eᵢ)` one coordinate at a time (each call moves one or two coordinates, so
//!   the cache re-sweeps only the terms they reach and the running sum after them);
//! - `new_points/{off,on}`, n = 100 and 1000: `evaluate` on a stream of points that all
//!   differ in every coordinate (nothing to serve: the cost of an active cache);
//! - `repeat/{off,on}`, n = 1000: `evaluate` at one point over and over.
//!
//! Run: `cargo bench -p ddx-models --bench cache -- --warm-up-time 1 --measurement-time 3`;
//! then `python3 scripts/criterion_ratios.py value_then forward new_points repeat` lists
//! the arms (medians, each as a ratio of its group's `off` arm of the same backend).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ddx::{Backend, Equation, LaneKind, LastValue, Options};
use ddx_models::trend::Chain;
use ddx_models::{equation, sample_points};
use std::hint::black_box;

/// The backends each group runs.
const BACKENDS: [&str; 2] = ["interp", "jit"];

/// `eq` for `backend`: as made (the interpreter), or compiled with the value and gradient
/// kernels in place.
fn on_backend(mut eq: Equation, backend: &str) -> Equation {
    if backend == "jit" {
        eq.set_options(Options::with_backend(Backend::Compile));
        for kind in [LaneKind::Value, LaneKind::Gradient] {
            assert!(eq.wait_for_kernel_of(kind), "{:?}", eq.jit_status());
        }
    }
    eq
}

/// The chain of `n` without and with a cache, on `backend`, and 16 points.
fn pair(n: usize, backend: &str) -> (Equation, Equation, Vec<Vec<f64>>) {
    let model = Chain::new(n).expect("n >= 2");
    let off = on_backend(equation(&model).expect("builds"), backend);
    let on = on_backend(
        equation(&model)
            .expect("builds")
            .with_cache(LastValue::new()),
        backend,
    );
    let flat = sample_points(&model, 7, 16);
    let points = flat.chunks_exact(n).map(<[f64]>::to_vec).collect();
    (off, on, points)
}

fn value_then_gradient(c: &mut Criterion) {
    let mut g = c.benchmark_group("value_then_gradient");
    for backend in BACKENDS {
        let (off, on, points) = pair(100, backend);
        for (name, eq) in [("off", &off), ("on", &on)] {
            let mut k = 0;
            g.bench_function(BenchmarkId::new(backend, format!("{name}/100")), |b| {
                b.iter(|| {
                    let x = &points[k % points.len()][..];
                    k += 1;
                    let f = eq.evaluate(x).expect("evaluates");
                    let grad = eq.gradient(x).expect("differentiates");
                    let again = eq.evaluate(x).expect("evaluates");
                    black_box((f, grad, again))
                })
            });
        }
    }
    g.finish();
}

fn forward_difference(c: &mut Criterion) {
    let mut g = c.benchmark_group("forward_difference");
    g.sample_size(20);
    let n = 1000;
    for backend in BACKENDS {
        let (off, on, points) = pair(n, backend);
        for (name, eq) in [("off", &off), ("on", &on)] {
            let mut k = 0;
            g.bench_function(BenchmarkId::new(backend, format!("{name}/{n}")), |b| {
                b.iter(|| {
                    let x = &points[k % points.len()];
                    k += 1;
                    let f0 = eq.evaluate(&x[..]).expect("evaluates");
                    let mut xh = x.clone();
                    let mut grad = vec![0.0; n];
                    for i in 0..n {
                        let h = 1e-7 * x[i].abs().max(1.0);
                        xh[i] = x[i] + h;
                        grad[i] = (eq.evaluate(&xh[..]).expect("evaluates") - f0) / h;
                        xh[i] = x[i];
                    }
                    black_box(grad)
                })
            });
        }
    }
    g.finish();
}

fn new_points(c: &mut Criterion) {
    let mut g = c.benchmark_group("new_points");
    for backend in BACKENDS {
        for n in [100, 1000] {
            let (off, on, points) = pair(n, backend);
            for (name, eq) in [("off", &off), ("on", &on)] {
                let mut k = 0;
                g.bench_function(BenchmarkId::new(backend, format!("{name}/{n}")), |b| {
                    b.iter(|| {
                        let x = &points[k % points.len()][..];
                        k += 1;
                        black_box(eq.evaluate(x).expect("evaluates"))
                    })
                });
            }
        }
    }
    g.finish();
}

fn repeat(c: &mut Criterion) {
    let mut g = c.benchmark_group("repeat");
    let n = 1000;
    for backend in BACKENDS {
        let (off, on, points) = pair(n, backend);
        for (name, eq) in [("off", &off), ("on", &on)] {
            g.bench_function(BenchmarkId::new(backend, format!("{name}/{n}")), |b| {
                b.iter(|| black_box(eq.evaluate(&points[0][..]).expect("evaluates")))
            });
        }
    }
    g.finish();
}

criterion_group!(
    benches,
    value_then_gradient,
    forward_difference,
    new_points,
    repeat
);
criterion_main!(benches);
