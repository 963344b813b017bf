//! Points per second for the Jacobian of a NIST model's residual sum of squares (Kirby2:
//! 151 observations, 5 parameters; the Jacobian of the scalar RSS is its gradient row):
//! per-point calls in a loop, the batch interpreter on one thread, and on all cores.
//!
//! A second table sets the interpreter's batch against compiled kernels (`Backend::Compile`,
//! `points` = the batch, so an `f64x2` column kernel, or the block interpreter where the
//! compiled equation's first batches timed it faster: warmed until the choice is made, and
//! printed), one thread and all cores: the "interp ÷ jit" columns are time ratios within
//! one repetition set.
//!
//! Run: `cargo bench -p ddx-models --bench batch`. Each cell is the median of 3
//! interleaved repetitions; the ratio column is the batch rate over the per-point rate in
//! the same repetition set. Pass `--quick` to stop at 10⁵ points.

use ddx::{Backend, Equation, LaneKind, Options};
use ddx_models::nist;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let ds = nist::load(&nist::data_dir().join("Kirby2.dat")).expect("Kirby2 loads");
    let eq = ds.rss_equation().expect("Kirby2 builds");
    let (n, c) = (eq.arity(), eq.jacobian_columns());
    let cores = rayon::current_num_threads();
    let single = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    {
        // Prepare the lanes (and lower the block program) before timing anything.
        let p = ds.certified();
        eq.jacobian(&p).expect("point fits");
        let cols: Vec<Vec<f64>> = p.iter().map(|v| vec![*v; 1]).collect();
        let cols: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
        let (mut v, mut g) = (vec![vec![0.0]; 1], vec![vec![0.0]; c]);
        let mut vc: Vec<&mut [f64]> = v.iter_mut().map(Vec::as_mut_slice).collect();
        let mut gc: Vec<&mut [f64]> = g.iter_mut().map(Vec::as_mut_slice).collect();
        eq.jacobian_batch(&cols, &mut vc, &mut gc)
            .expect("columns fit");
        let prog = eq.lane(ddx::LaneKind::Jacobian).unwrap();
        println!("lane: {} nodes", prog.graph.len());
    }
    println!("Kirby2 RSS Jacobian (n = {n}, {c} partial columns), {cores} cores");
    println!(
        "{:>9} {:>14} {:>14} {:>14} {:>8} {:>8}",
        "points", "per-point/s", "batch 1t/s", "batch all/s", "1t ×", "all ×"
    );
    let sizes: &[usize] = if quick {
        &[1_000, 10_000, 100_000]
    } else {
        &[1_000, 10_000, 100_000, 1_000_000]
    };
    for &len in sizes {
        let xs: Vec<Vec<f64>> = ds
            .parameters
            .iter()
            .map(|p| {
                (0..len)
                    .map(|k| p.start2 * (1.0 + 1e-3 * ((k % 97) as f64 / 97.0 - 0.5)))
                    .collect()
            })
            .collect();
        let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
        let mut values = vec![vec![0.0; len]; 1];
        let mut partials = vec![vec![0.0; len]; c];
        let (mut per, mut one, mut all) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..3 {
            let t = Instant::now();
            let mut p = vec![0.0; n];
            let mut sink = 0.0;
            for k in 0..len {
                for (pj, col) in p.iter_mut().zip(&xs) {
                    *pj = col[k];
                }
                sink += eq.jacobian(&p).expect("point fits")[0];
            }
            std::hint::black_box(sink);
            per.push(len as f64 / t.elapsed().as_secs_f64());
            let mut vcols: Vec<&mut [f64]> = values.iter_mut().map(Vec::as_mut_slice).collect();
            let mut pcols: Vec<&mut [f64]> = partials.iter_mut().map(Vec::as_mut_slice).collect();
            let t = Instant::now();
            single
                .install(|| eq.jacobian_batch(&cols, &mut vcols, &mut pcols))
                .expect("columns fit");
            one.push(len as f64 / t.elapsed().as_secs_f64());
            let t = Instant::now();
            eq.jacobian_batch(&cols, &mut vcols, &mut pcols)
                .expect("columns fit");
            all.push(len as f64 / t.elapsed().as_secs_f64());
        }
        let (per, one, all) = (median(per), median(one), median(all));
        println!(
            "{len:>9} {per:>14.3e} {one:>14.3e} {all:>14.3e} {:>7.2}× {:>7.2}×",
            one / per,
            all / per
        );
    }
    jit_table(&ds, sizes, &single);
}

/// Seconds for one Jacobian batch of `xs` through `eq`.
fn time_batch(eq: &Equation, xs: &[Vec<f64>], pool: Option<&rayon::ThreadPool>) -> f64 {
    let len = xs[0].len();
    let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let mut values = vec![vec![0.0; len]; 1];
    let mut partials = vec![vec![0.0; len]; eq.jacobian_columns()];
    let mut v: Vec<&mut [f64]> = values.iter_mut().map(Vec::as_mut_slice).collect();
    let mut p: Vec<&mut [f64]> = partials.iter_mut().map(Vec::as_mut_slice).collect();
    let t = Instant::now();
    match pool {
        Some(pool) => pool.install(|| eq.jacobian_batch(&cols, &mut v, &mut p)),
        None => eq.jacobian_batch(&cols, &mut v, &mut p),
    }
    .expect("columns fit");
    t.elapsed().as_secs_f64()
}

fn jit_table(ds: &nist::Dataset, sizes: &[usize], single: &rayon::ThreadPool) {
    let interp = ds.rss_equation().expect("Kirby2 builds");
    println!("\nKirby2 RSS Jacobian batch: interpreter ÷ compiled kernel (time ratio)");
    println!(
        "{:>9} {:>14} {:>14} {:>8} {:>14} {:>14} {:>8}",
        "points", "interp 1t/s", "jit 1t/s", "1t ×", "interp all/s", "jit all/s", "all ×"
    );
    for &len in sizes {
        let mut jit = ds.rss_equation().expect("Kirby2 builds");
        let mut o = Options::with_backend(Backend::Compile);
        o.points = len;
        jit.set_options(o);
        assert!(
            jit.wait_for_kernel_of(LaneKind::Jacobian),
            "{:?}",
            jit.jit_status()
        );
        let xs: Vec<Vec<f64>> = ds
            .parameters
            .iter()
            .map(|p| {
                (0..len)
                    .map(|k| p.start2 * (1.0 + 1e-3 * ((k % 97) as f64 / 97.0 - 0.5)))
                    .collect()
            })
            .collect();
        let (mut r1, mut ra, mut i1, mut j1, mut ia, mut ja) = (
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
            Vec::new(),
        );
        time_batch(&interp, &xs, Some(single)); // lower the block program first
                                                // The compiled equation's first batches time its kernel against the block
                                                // interpreter (three trials of 256 points each, the block program lowered for
                                                // them) and then run on the faster: warm them until the choice is made.
        for _ in 0..6 {
            time_batch(&jit, &xs, Some(single));
        }
        let engine = jit
            .jit_status()
            .lanes
            .iter()
            .find(|l| l.kind == LaneKind::Jacobian)
            .and_then(|l| l.batch_engine);
        for _ in 0..3 {
            let (a, b) = (
                time_batch(&interp, &xs, Some(single)),
                time_batch(&jit, &xs, Some(single)),
            );
            let (c, d) = (time_batch(&interp, &xs, None), time_batch(&jit, &xs, None));
            r1.push(a / b);
            ra.push(c / d);
            i1.push(len as f64 / a);
            j1.push(len as f64 / b);
            ia.push(len as f64 / c);
            ja.push(len as f64 / d);
        }
        println!(
            "{len:>9} {:>14.3e} {:>14.3e} {:>7.2}× {:>14.3e} {:>14.3e} {:>7.2}×  (batches on {engine:?})",
            median(i1),
            median(j1),
            median(r1),
            median(ia),
            median(ja),
            median(ra)
        );
    }
}
