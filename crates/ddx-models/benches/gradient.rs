//! Per-point gradient against one native `f64` evaluation of the same function.
//!
//! Models: the reference specification's opening example (the Huber loss of an exponential
//! fit over four samples) and the residual sum of squares of NIST's Gauss1 (250
//! observations, 8 parameters). The point changes every call (a cycle of 64 points), so no
//! engine can answer from a cache.
//!
//! Run: `cargo bench -p ddx-models --bench gradient`; then
//! `python3 scripts/criterion_ratios.py gradient` prints each arm ÷ `native`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ddx::{rt, select, Backend, Equation, Expr, LaneKind, Options};
use ddx_models::nist;
use std::hint::black_box;

const DATA: [(f64, f64); 4] = [(0.0, 2.00), (1.0, 1.21), (2.0, 0.74), (3.0, 0.45)];
const DELTA: f64 = 0.05;

fn huber_native(a: f64, b: f64) -> f64 {
    let mut loss = 0.0;
    for &(t, y) in &DATA {
        let r = y - a * (-b * t).exp();
        loss += if r.abs() < DELTA {
            r * r
        } else {
            DELTA * (2.0 * r.abs() - DELTA)
        };
    }
    loss
}

/// `eq` compiled for per-point calls, its gradient kernel in place.
fn compiled(mut eq: Equation) -> Equation {
    eq.set_options(Options::with_backend(Backend::Compile));
    assert!(
        eq.wait_for_kernel_of(LaneKind::Gradient),
        "{:?}",
        eq.jit_status()
    );
    eq
}

fn points(base: &[f64], count: usize) -> Vec<Vec<f64>> {
    (0..count)
        .map(|k| {
            base.iter()
                .map(|v| v * (1.0 + 1e-3 * (k as f64 - 32.0) / 32.0))
                .collect()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let huber = rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        let mut loss = Expr::from(0.0);
        for &(t, y) in &DATA {
            let r = y - a * (-b * t).exp();
            loss += select(r.abs().lt(DELTA), r * r, DELTA * (2.0 * r.abs() - DELTA));
        }
        loss
    })
    .expect("Huber model builds");
    let pts = points(&[2.0, 0.5], 64);
    let mut g = c.benchmark_group("gradient/huber");
    g.bench_function(BenchmarkId::new("native", "eval"), |bch| {
        let mut k = 0;
        bch.iter(|| {
            k = (k + 1) % pts.len();
            huber_native(black_box(pts[k][0]), black_box(pts[k][1]))
        })
    });
    g.bench_function(BenchmarkId::new("ddx-interp", "gradient"), |bch| {
        let mut k = 0;
        bch.iter(|| {
            k = (k + 1) % pts.len();
            huber.gradient(black_box(&pts[k][..])).expect("point fits")
        })
    });
    let huber = compiled(huber);
    g.bench_function(BenchmarkId::new("ddx-jit", "gradient"), |bch| {
        let mut k = 0;
        bch.iter(|| {
            k = (k + 1) % pts.len();
            huber.gradient(black_box(&pts[k][..])).expect("point fits")
        })
    });
    g.finish();

    let ds = nist::load(&nist::data_dir().join("Gauss1.dat")).expect("Gauss1 loads");
    let fam = ds.family().expect("known model");
    let eq = ds.rss_equation().expect("Gauss1 builds");
    let pts = points(&ds.certified(), 64);
    let mut g = c.benchmark_group("gradient/gauss1");
    g.bench_function(BenchmarkId::new("native", "eval"), |bch| {
        let mut k = 0;
        bch.iter(|| {
            k = (k + 1) % pts.len();
            let b = black_box(&pts[k][..]);
            ds.observations.iter().fold(0.0, |s, o| {
                let r = o.y - fam.predict(b, &o.x);
                s + r * r
            })
        })
    });
    g.bench_function(BenchmarkId::new("ddx-interp", "gradient"), |bch| {
        let mut k = 0;
        bch.iter(|| {
            k = (k + 1) % pts.len();
            eq.gradient(black_box(&pts[k][..])).expect("point fits")
        })
    });
    let eq = compiled(eq);
    g.bench_function(BenchmarkId::new("ddx-jit", "gradient"), |bch| {
        let mut k = 0;
        bch.iter(|| {
            k = (k + 1) % pts.len();
            eq.gradient(black_box(&pts[k][..])).expect("point fits")
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
