//! Second order: one `hessian` against `n` `hvp`s (the Hessian assembled column by
//! column), and one `hvp` against one `hessian`, at n = 8, 16, 32, 64, 128 on dense and
//! banded coupling.
//!
//! - dense: `f = Σ sin(xᵢ) + ln(1 + (Σ (1 + i/n)·xᵢ)²)`: every pair of symbols interacts
//!   (a rank-one coupling plus a diagonal), so the colouring needs n colours;
//! - banded: `f = Σ (xᵢ − x_{i+1}·x_{i+2})² + cos(xᵢ)`: half-bandwidth 2.
//!
//! Each arm cycles through 16 points, so no engine could answer from a cache.
//!
//! Run: `cargo bench -p ddx --bench hessian -- --warm-up-time 1 --measurement-time 2`;
//! then `python3 scripts/criterion_ratios.py hessian` lists the arms (medians).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ddx::{rt, Equation, Expr};
use std::hint::black_box;

fn names(n: usize) -> Vec<String> {
    // Zero-padded, so canonical (alphabetical) order is index order.
    (0..n).map(|i| format!("x{i:03}")).collect()
}

fn dense(n: usize) -> Equation {
    let nm = names(n);
    rt::equation(|| {
        let x: Vec<Expr> = nm.iter().map(|s| rt::var(s)).collect();
        let s: Expr = x
            .iter()
            .enumerate()
            .map(|(i, &v)| (1.0 + i as f64 / n as f64) * v)
            .sum();
        x.iter().map(|v| v.sin()).sum::<Expr>() + (1.0 + s * s).ln()
    })
    .expect("dense model builds")
}

fn banded(n: usize) -> Equation {
    let nm = names(n);
    rt::equation(|| {
        let x: Vec<Expr> = nm.iter().map(|s| rt::var(s)).collect();
        (0..n)
            .map(|i| {
                let coupled = if i + 2 < n {
                    x[i] - x[i + 1] * x[i + 2]
                } else {
                    x[i]
                };
                coupled * coupled + x[i].cos()
            })
            .sum::<Expr>()
    })
    .expect("banded model builds")
}

fn points(n: usize) -> Vec<Vec<f64>> {
    (0..16)
        .map(|k| {
            (0..n)
                .map(|i| ((i * 7 + k * 3) as f64 * 0.1).sin())
                .collect()
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    for (kind, build) in [
        ("dense", dense as fn(usize) -> Equation),
        ("banded", banded),
    ] {
        for n in [8usize, 16, 32, 64, 128] {
            let eq = build(n);
            let pts = points(n);
            let v: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).cos()).collect();
            // Prepare every lane outside the timing.
            let _ = eq.hessian(&pts[0]).expect("hessian");
            let _ = eq.hvp(&v, &pts[0]).expect("hvp");
            let mut g = c.benchmark_group(format!("hessian/{kind}/{n:03}"));
            g.bench_function(BenchmarkId::new("hessian", eq.hessian_colors()), |b| {
                let mut k = 0;
                b.iter(|| {
                    k = (k + 1) % pts.len();
                    black_box(eq.hessian(black_box(&pts[k])).expect("hessian"))
                })
            });
            g.bench_function(BenchmarkId::new("n_hvps", n), |b| {
                let mut k = 0;
                b.iter(|| {
                    k = (k + 1) % pts.len();
                    for j in 0..n {
                        black_box(eq.hvp_along(j, black_box(&pts[k])).expect("hvp"));
                    }
                })
            });
            g.bench_function(BenchmarkId::new("one_hvp", 1), |b| {
                let mut k = 0;
                b.iter(|| {
                    k = (k + 1) % pts.len();
                    black_box(eq.hvp(black_box(&v), black_box(&pts[k])).expect("hvp"))
                })
            });
            g.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
