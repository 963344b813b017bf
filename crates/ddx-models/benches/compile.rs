//! Build and compile time: a model of `n` symbols, from the closure to the Jacobian lane's
//! optimised kernel in place; then the same from `cache_dir` (a second run, which loads).
//!
//! Model: `Σᵢ (xᵢ − xᵢ₊₁)²·exp(0.1·xᵢ) + sin(xᵢ)·x_{(i+7) mod n}` over `n` symbols (a
//! Jacobian lane of a few thousand nodes at 256).
//!
//! Run: `cargo bench -p ddx-models --bench compile`. Each cell is the median of 5 runs
//! (min–max in brackets); every run builds a fresh equation.

use ddx::{Backend, Equation, LaneKind, Options};
use std::path::Path;
use std::time::Instant;

fn build(n: usize) -> Equation {
    ddx_models::trend::coupled_sum(n).expect("model builds")
}

/// Milliseconds to build the model and have its Jacobian kernel in place.
fn compile(n: usize, cache: Option<&Path>) -> (f64, usize) {
    let t = Instant::now();
    let mut eq = build(n);
    let mut o = Options::with_backend(Backend::Compile);
    o.cache_dir = cache.map(Path::to_path_buf);
    eq.set_options(o);
    assert!(
        eq.wait_for_kernel_of(LaneKind::Jacobian),
        "{:?}",
        eq.jit_status()
    );
    let ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(
        eq.jit_status().compiled,
        if cache.is_some() { 0 } else { 2 }
    );
    (ms, eq.lane(LaneKind::Jacobian).unwrap().graph.len())
}

fn stats(mut v: Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    format!("{:8.2} [{:.2}–{:.2}]", v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() {
    let dir = std::env::temp_dir().join(format!("ddx-compile-bench-{}", std::process::id()));
    println!(
        "{:>7} {:>7} {:>24} {:>24} {:>24}",
        "symbols", "nodes", "build ms", "build+compile ms", "build+load ms"
    );
    for n in [64, 128, 256] {
        let warm = compile(n, None); // the compiler itself is set up once per process
        let _ = std::fs::remove_dir_all(&dir);
        let mut seed = Options::with_backend(Backend::Compile);
        seed.cache_dir = Some(dir.clone());
        let mut eq = build(n);
        eq.set_options(seed);
        eq.wait_for_kernel_of(LaneKind::Jacobian);
        let (mut b, mut c, mut l) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..5 {
            let t = Instant::now();
            let eq = build(n);
            eq.lane(LaneKind::Jacobian).unwrap();
            b.push(t.elapsed().as_secs_f64() * 1e3);
            c.push(compile(n, None).0);
            l.push(compile(n, Some(&dir)).0);
        }
        println!(
            "{n:>7} {:>7} {:>24} {:>24} {:>24}",
            warm.1,
            stats(b),
            stats(c),
            stats(l)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
