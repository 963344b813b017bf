//! Compile-time derivatives (`#[ddx::derivatives]`) against one native evaluation, the
//! JIT and num-dual, and `derivative_tensor(3)` against num-dual's third-order duals.
//!
//! Run: `cargo bench -p ddx-models --bench macros`. Every arm is timed in the same run,
//! interleaved (five rounds, the median taken), over a pool of 256 distinct points
//! (`RegularSolution::sample`), each call's inputs and outputs through `black_box`.
//! Before timing, each arm's answers are checked against ddx's run-time equation.

use ddx::{Backend, LaneKind, Options};
use ddx_models::points::SplitMix64;
use ddx_models::thermo::RegularSolution;
use ddx_models::BenchModel;
use num_dual::{third_partial_derivative_vec, DualSVec64};
use std::hint::black_box;
use std::time::Instant;

include!("macro_models/models.rs");

const POOL: usize = 256;

fn pool(model: &RegularSolution, n: usize) -> Vec<Vec<f64>> {
    let mut rng = SplitMix64::new(16);
    (0..POOL)
        .map(|_| {
            let mut p = vec![0.0; n];
            model.sample(&mut rng, &mut p);
            p
        })
        .collect()
}

/// Nanoseconds per call of `f` over the pool, the median of five rounds of about 0.2 s.
fn time(points: &[Vec<f64>], mut f: impl FnMut(&[f64])) -> f64 {
    let mut reps = 1usize;
    loop {
        let t = Instant::now();
        for _ in 0..reps {
            for p in points {
                f(black_box(p));
            }
        }
        if t.elapsed().as_secs_f64() > 0.05 {
            break;
        }
        reps *= 2;
    }
    let mut rounds: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps * 4 {
                for p in points {
                    f(black_box(p));
                }
            }
            t.elapsed().as_secs_f64() * 1e9 / (reps * 4 * points.len()) as f64
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[2]
}

macro_rules! gradient_row {
    ($n:literal, $f:ident, [$($i:literal),*]) => {{
        let model = RegularSolution::new($n);
        let points = pool(&model, $n);
        let eq = ddx::rt::equation(|| {
            let x: Vec<ddx::Expr> = (0..$n).map(|i| ddx::rt::var(&format!("x{i:02}"))).collect();
            model.build(&x)
        })
        .expect("builds");
        // The macro answers the interpreter's bits.
        for p in &points {
            let g = eq.gradient(&p[..]).expect("gradient");
            let m = $f::gradient($(p[$i]),*);
            assert!(g.iter().zip(&m).all(|(a, b)| a.to_bits() == b.to_bits()), "regular{} gradient", $n);
        }
        let mut jit = eq.clone();
        let mut o = Options::with_backend(Backend::Compile);
        o.points = 1;
        jit.set_options(o);
        let _ = jit.gradient(&points[0][..]);
        let compiled = jit.wait_for_kernel_of(LaneKind::Gradient);
        let mut out = vec![0.0; $n];
        let native = time(&points, |p| { black_box(model.eval::<f64>(p)); });
        let mac = time(&points, |p| { black_box($f::gradient($(p[$i]),*)); });
        let jit_ns = time(&points, |p| { jit.gradient_into(p, &mut out).expect("gradient"); black_box(&out); });
        let dual = time(&points, |p| {
            let x = nalgebra_num_dual::SVector::<f64, $n>::from_column_slice(p);
            black_box(num_dual::gradient(|v: nalgebra_num_dual::SVector<DualSVec64<$n>, $n>| model.eval(v.as_slice()), x));
        });
        println!(
            "| regular-{} | {:.2}x | {:.2}x{} | {:.2}x | {:.1} |",
            $n, mac / native, jit_ns / native, if compiled { "" } else { " (interpreted)" }, dual / native, native
        );
    }};
}

fn main() {
    println!(
        "| model | macro gradient | ddx-jit gradient | num-dual gradient | one evaluation, ns |"
    );
    println!("|---|---|---|---|---|");
    gradient_row!(4, regular4, [0, 1, 2, 3]);
    gradient_row!(8, regular8, [0, 1, 2, 3, 4, 5, 6, 7]);
    gradient_row!(
        16,
        regular16,
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
    );

    // Third-order tensors of regular-10: every ∂³f/∂xᵢ∂xⱼ∂x_k.
    let n = 10;
    let model = RegularSolution::new(n);
    let points = pool(&model, n);
    let eq = ddx::rt::equation(|| {
        let x: Vec<ddx::Expr> = (0..n).map(|i| ddx::rt::var(&format!("x{i:02}"))).collect();
        model.build(&x)
    })
    .expect("builds");
    let at = |p: &[f64]| {
        regular10::derivative_tensor::<3>(
            p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8], p[9],
        )
    };
    // num-dual: one HyperHyperDual64 evaluation per sorted triple (i ≤ j ≤ k).
    let triples: Vec<(usize, usize, usize)> = (0..n)
        .flat_map(|i| (i..n).flat_map(move |j| (j..n).map(move |k| (i, j, k))))
        .collect();
    let dual_tensor = |p: &[f64], out: &mut [f64]| {
        for &(i, j, k) in &triples {
            let (.., d) = third_partial_derivative_vec(|v| model.eval(v), p, i, j, k);
            out[(i * n + j) * n + k] = d;
        }
    };
    let mut dense = vec![0.0; n * n * n];
    for p in &points {
        let t = eq.derivative_tensor(3, &p[..]).expect("tensor");
        let m = at(p);
        dual_tensor(p, &mut dense);
        for &(i, j, k) in &triples {
            let d = t[(i * n + j) * n + k];
            assert_eq!(d.to_bits(), m[i][j][k].to_bits(), "macro tensor");
            let e = dense[(i * n + j) * n + k];
            assert!(
                (d - e).abs() <= 1e-9 * (1.0 + e.abs()),
                "num-dual {i}{j}{k}: {d} vs {e}"
            );
        }
    }
    let native = time(&points, |p| {
        black_box(model.eval::<f64>(p));
    });
    let interp = time(&points, |p| {
        black_box(eq.derivative_tensor(3, p).expect("tensor"));
    });
    let mac = time(&points, |p| {
        black_box(at(p));
    });
    let dual = time(&points, |p| {
        dual_tensor(p, &mut dense);
        black_box(&dense);
    });
    println!();
    println!("| regular-10, all third partials | ddx derivative_tensor(3), interpreted | macro derivative_tensor::<3> | num-dual, 220 HyperHyperDual64 passes | one evaluation, ns |");
    println!("|---|---|---|---|---|");
    println!(
        "| ratio to one evaluation | {:.1}x | {:.2}x | {:.1}x | {:.1} |",
        interp / native,
        mac / native,
        dual / native,
        native
    );
    println!("| ns per tensor | {interp:.0} | {mac:.0} | {dual:.0} | |");
}
