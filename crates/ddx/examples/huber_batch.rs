//! The Rust side of the Python package's batch benchmark (`crates/ddx-python/bench/bench.py`):
//! the README's Huber loss, a batch Jacobian over `(2, 10⁶)` points, interpreted and
//! compiled. Prints the median of 7 calls in milliseconds, one line per backend, in the
//! form the Python script reads.
//!
//! ```sh
//! cargo run --release -p ddx --example huber_batch
//! ```

use ddx::{rt, select, Backend, Expr, LaneKind, Options};
use std::time::Instant;

const DATA: [(f64, f64); 4] = [(0.0, 2.00), (1.0, 1.21), (2.0, 0.74), (3.0, 0.45)];
const DELTA: f64 = 0.05;
const POINTS: usize = 1_000_000;

/// The benchmark's points, as `bench.py` makes them: `a ∈ [1.5, 2.5)`, `b ∈ [0.3, 0.7)`.
fn points() -> (Vec<f64>, Vec<f64>) {
    let a = (0..POINTS)
        .map(|k| 1.5 + (k % 1000) as f64 / 1000.0)
        .collect();
    let b = (0..POINTS)
        .map(|k| 0.3 + ((k * 7919) % 1000) as f64 / 2500.0)
        .collect();
    (a, b)
}

fn main() -> Result<(), ddx::Error> {
    let mut eq = rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        let mut loss = Expr::from(0.0);
        for &(t, y) in &DATA {
            let r = y - a * (-b * t).exp();
            loss += select(r.abs().lt(DELTA), r * r, DELTA * (2.0 * r.abs() - DELTA));
        }
        loss
    })?;
    let (a, b) = points();
    let (mut f, mut da, mut db) = (vec![0.0; POINTS], vec![0.0; POINTS], vec![0.0; POINTS]);
    for backend in [Backend::Interpret, Backend::Compile] {
        let mut options = Options::with_backend(backend);
        options.points = POINTS;
        eq.set_options(options);
        eq.wait_for_kernel_of(LaneKind::Jacobian);
        let mut times = Vec::new();
        for _ in 0..8 {
            let start = Instant::now();
            eq.jacobian_batch(&[&a, &b], &mut [&mut f], &mut [&mut da, &mut db])?;
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        times.remove(0); // the first call lowers the batch program
        times.sort_by(f64::total_cmp);
        println!(
            "rust {backend:?} {:.3} ms (f[7] = {:e})",
            times[times.len() / 2],
            f[7]
        );
    }
    Ok(())
}
