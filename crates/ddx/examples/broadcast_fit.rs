//! The 10⁶-observation exponential fit's Jacobian two ways (issue 17's benchmark):
//!
//! - **broadcast**: one residual `r = y − b1·(1 − exp(−b2·x))` with `x`, `y` parameters;
//!   one batch Jacobian call over the observation columns, `b1`, `b2` given as columns of
//!   length 1 (broadcast); the lane compiled once (`Backend::Compile`);
//! - **system**: the residual system, one output per observation (`rt::equation` looping
//!   over the data), its dense `N × 2` Jacobian from one per-point call, interpreted (the
//!   default backend; its lane grows with `N`, to millions of nodes).
//!
//! For each size it prints the time to build (model, lane, compile) and to evaluate (median
//! of 5 calls), and the peak heap each takes beyond the data columns (a counting
//! allocator), one Markdown row per size and form.
//!
//! ```sh
//! cargo run --release -p ddx --example broadcast_fit
//! ```

use ddx::{rt, Backend, Expr, LaneKind, Options};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout, as given.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Starts a peak measurement; `peak_since(base)` answers the peak above `base`.
fn mark() -> usize {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    base
}

fn peak_since(base: usize) -> usize {
    PEAK.load(Ordering::Relaxed).saturating_sub(base)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn ms(s: f64) -> String {
    format!("{:.3} ms", s * 1e3)
}

/// Misra1a-like data: `y = 240·(1 − exp(−5.5·10⁻⁴·x))` with a small wobble.
fn data(n: usize) -> (Vec<f64>, Vec<f64>) {
    let x: Vec<f64> = (0..n).map(|k| 10.0 + 800.0 * k as f64 / n as f64).collect();
    let y = x
        .iter()
        .enumerate()
        .map(|(k, &x)| 240.0 * (1.0 - (-5.5e-4 * x).exp()) + 0.1 * ((k % 7) as f64 - 3.0))
        .collect();
    (x, y)
}

fn main() -> Result<(), ddx::Error> {
    let b = [250.0, 5.0e-4];
    println!("| observations | form | build | evaluate (median of 5) | peak heap, build | peak heap, evaluate |");
    println!("|---|---|---|---|---|---|");
    for n in [1_000usize, 10_000, 100_000, 1_000_000] {
        let (x, y) = data(n);
        // Broadcast: a dozen nodes, compiled once.
        let base = mark();
        let t = Instant::now();
        let mut eq = rt::equation(|| {
            let (b1, b2) = (rt::var("b1"), rt::var("b2"));
            let (x, y) = (rt::param("x"), rt::param("y"));
            y - b1 * (1.0 - (-b2 * x).exp())
        })?;
        eq.set_options(Options::with_backend(Backend::Compile));
        let _ = eq.lane(LaneKind::Jacobian);
        let compiled = eq.wait_for_kernel_of(LaneKind::Jacobian);
        let build = t.elapsed().as_secs_f64();
        let build_peak = peak_since(base);
        let nodes = eq.nodes(LaneKind::Jacobian);
        let cells = eq.jacobian_columns();
        let mut times = Vec::new();
        let base = mark();
        let (mut r, mut jac) = (vec![0.0; n], vec![vec![0.0; n]; cells]);
        let mut first = None;
        for _ in 0..5 {
            let t = Instant::now();
            let mut parts: Vec<&mut [f64]> = jac.iter_mut().map(|c| &mut c[..]).collect();
            eq.jacobian_batch(&[&b[..1], &b[1..], &x, &y], &mut [&mut r], &mut parts)?;
            times.push(t.elapsed().as_secs_f64());
            first.get_or_insert((r[n - 1], jac[0][n - 1], jac[1][n - 1]));
        }
        let eval_peak = peak_since(base);
        drop((r, jac));
        println!(
            "| {n} | broadcast ({nodes}-node lane{}) | {} | {} | {} | {} |",
            if compiled {
                ", compiled"
            } else {
                ", interpreted"
            },
            ms(build),
            ms(median(times)),
            mib(build_peak),
            mib(eval_peak)
        );
        // The residual system: one output per observation.
        let base = mark();
        let t = Instant::now();
        let sys = rt::equation(|| {
            let (b1, b2) = (rt::var("b1"), rt::var("b2"));
            x.iter()
                .zip(&y)
                .map(|(&x, &y)| y - b1 * (1.0 - (-b2 * x).exp()))
                .collect::<Vec<Expr>>()
        })?;
        let _ = sys.lane(LaneKind::Jacobian);
        let _ = sys.jacobian(&b[..])?; // the interpreter's program is lowered on first use
        let build = t.elapsed().as_secs_f64();
        let build_peak = peak_since(base);
        let nodes = sys.nodes(LaneKind::Jacobian);
        let base = mark();
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..5 {
            let t = Instant::now();
            let j = sys.jacobian(&b[..])?;
            times.push(t.elapsed().as_secs_f64());
            last = Some((j[2 * n - 2], j[2 * n - 1]));
        }
        let eval_peak = peak_since(base);
        println!(
            "| {n} | system ({nodes}-node lane, interpreted) | {} | {} | {} | {} |",
            ms(build),
            ms(median(times)),
            mib(build_peak),
            mib(eval_peak)
        );
        // The two forms answer the same partials at the last observation.
        let (f, l) = (first.unwrap_or_default(), last.unwrap_or_default());
        assert!(f.1 == l.0 && f.2 == l.1, "{f:?} vs {l:?}");
    }
    Ok(())
}
