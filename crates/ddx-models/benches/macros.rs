//! Compile-time derivatives (`#[ddx::derivatives]`) against one native evaluation, the
//! JIT and num-dual, and `derivative_tensor(3)` against num-dual's third-order duals.
//!
//! Run: `cargo bench -p ddx-models --bench macros`. Every arm is timed in the same run,
//! interleaved round by round (five rounds, the median taken), over a pool of 256 distinct points
//! (`RegularSolution::sample`), each call's inputs and outputs through `black_box`.
//! Before timing, each arm's answers are checked against ddx's run-time equation.

use ddx::{Backend, LaneKind, Options};
use ddx_models::points::SplitMix64;
use ddx_models::thermo::RegularSolution;
use ddx_models::BenchModel;
use num_dual::{third_partial_derivative_vec, Dual3_64, DualSVec64};
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

/// Instruction-count mode, for `valgrind --tool=callgrind`: `DDX_BENCH_ONLY=ROW:ARM:REPS`
/// (ROW `4`, `8`, `16` or `tensor`; ARM the column, 0 the native evaluation) runs that
/// row's checks, then only arm ARM, REPS times over the pool, untimed. The instructions
/// of `REPS = R` less those of `REPS = 0`, over `R · 256`, are one call's.
fn only() -> Option<(String, usize, usize)> {
    let v = std::env::var("DDX_BENCH_ONLY").ok()?;
    let mut it = v.split(':');
    let row = it.next()?.to_string();
    let arm = it.next()?.parse().ok()?;
    let reps = it.next()?.parse().ok()?;
    Some((row, arm, reps))
}

/// Whether row `row` runs (every row, unless `DDX_BENCH_ONLY` names another).
fn runs(row: &str) -> bool {
    only().is_none_or(|(r, ..)| r == row)
}

/// One timed call: a point in, its answer through `black_box`.
type Arm<'a> = &'a mut dyn FnMut(&[f64]);

/// Nanoseconds per call of each arm over the pool: every arm calibrated to about 0.05 s a
/// round, then five rounds, each running every arm in turn (so a change of machine load
/// hits every arm alike), the median round taken per arm.
fn time(points: &[Vec<f64>], arms: &mut [Arm<'_>]) -> Vec<f64> {
    if let Some((_, arm, reps)) = only() {
        for _ in 0..reps {
            for p in points {
                arms[arm](black_box(p));
            }
        }
        return vec![1.0; arms.len()];
    }
    let reps: Vec<usize> = arms
        .iter_mut()
        .map(|f| {
            let mut reps = 1usize;
            loop {
                let t = Instant::now();
                for _ in 0..reps {
                    for p in points {
                        f(black_box(p));
                    }
                }
                if t.elapsed().as_secs_f64() > 0.05 {
                    return reps;
                }
                reps *= 2;
            }
        })
        .collect();
    let mut rounds = vec![Vec::new(); arms.len()];
    for _ in 0..5 {
        for ((f, &reps), r) in arms.iter_mut().zip(&reps).zip(&mut rounds) {
            let t = Instant::now();
            for _ in 0..reps * 4 {
                for p in points {
                    f(black_box(p));
                }
            }
            r.push(t.elapsed().as_secs_f64() * 1e9 / (reps * 4 * points.len()) as f64);
        }
    }
    rounds
        .into_iter()
        .map(|mut r| {
            r.sort_by(f64::total_cmp);
            r[2]
        })
        .collect()
}

macro_rules! gradient_row {
    ($n:literal, $f:ident, [$($i:literal),*]) => { if runs(stringify!($n)) {
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
        let ns = time(&points, &mut [
            &mut |p: &[f64]| { black_box(model.eval::<f64>(p)); },
            &mut |p: &[f64]| { black_box($f::gradient($(p[$i]),*)); },
            &mut |p: &[f64]| { jit.gradient_into(p, &mut out).expect("gradient"); black_box(&out); },
            &mut |p: &[f64]| {
                let x = nalgebra_num_dual::SVector::<f64, $n>::from_column_slice(p);
                black_box(num_dual::gradient(|v: nalgebra_num_dual::SVector<DualSVec64<$n>, $n>| model.eval(v.as_slice()), x));
            },
        ]);
        let (native, mac, jit_ns, dual) = (ns[0], ns[1], ns[2], ns[3]);
        println!(
            "| regular-{} | {:.2}x | {:.2}x{} | {:.2}x | {:.1} |",
            $n, mac / native, jit_ns / native, if compiled { "" } else { " (interpreted)" }, dual / native, native
        );
    }};
}

/// The sorted triples `a ≤ b ≤ c` of `0..s`, in lexicographic order.
fn triples_of(s: usize) -> Vec<[usize; 3]> {
    (0..s)
        .flat_map(|a| (a..s).flat_map(move |b| (b..s).map(move |c| [a, b, c])))
        .collect()
}

/// One support size's local triples and the inverse of its interpolation matrix.
type Support = (Vec<[usize; 3]>, Vec<Vec<f64>>);

/// Univariate Taylor interpolation of third partials (Griewank, Utke & Walther, "Evaluating
/// higher derivative tensors by forward propagation of univariate Taylor series", Math.
/// Comp. 69, 2000; Griewank & Walther, *Evaluating Derivatives*, §13.3): the directions
/// are the `j ∈ ℕⁿ` with `|j| = 3`, i.e. `e_a + e_b + e_c` for each sorted triple, and a
/// partial on a support of `s` symbols is a fixed combination of the third directional
/// derivatives along the `C(s+2, 3)` directions on that support. The weights are the
/// rows of the inverse of `A[j][m] = (3!/m!)·jᵐ` (`D³_j f = Σ_m A[j][m] ∂ᵐf`), solved once
/// per support size by Gauss–Jordan elimination.
struct Interpolation {
    /// Per support size `s = 1, 2, 3`: the local triples and `A⁻¹` (row per triple).
    local: Vec<Support>,
}

impl Interpolation {
    fn new() -> Self {
        let local = (1..=3)
            .map(|s| {
                let t = triples_of(s);
                let counts = |x: &[usize; 3]| {
                    let mut c = [0u32; 3];
                    for &v in x {
                        c[v] += 1;
                    }
                    c
                };
                let fact = |k: u32| (1..=k).product::<u32>() as f64;
                let m = t.len();
                let mut a: Vec<Vec<f64>> = t
                    .iter()
                    .map(|j| {
                        let jc = counts(j);
                        t.iter()
                            .map(|mi| {
                                let mc = counts(mi);
                                let multinomial =
                                    6.0 / mc.iter().map(|&k| fact(k)).product::<f64>();
                                multinomial
                                    * (0..3)
                                        .map(|l| f64::from(jc[l]).powi(mc[l] as i32))
                                        .product::<f64>()
                            })
                            .collect()
                    })
                    .collect();
                let mut inv: Vec<Vec<f64>> = (0..m)
                    .map(|r| (0..m).map(|c| if r == c { 1.0 } else { 0.0 }).collect())
                    .collect();
                for col in 0..m {
                    let piv = (col..m)
                        .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
                        .expect("a pivot");
                    a.swap(col, piv);
                    inv.swap(col, piv);
                    let d = a[col][col];
                    for c in 0..m {
                        a[col][c] /= d;
                        inv[col][c] /= d;
                    }
                    for r in 0..m {
                        if r != col {
                            let f = a[r][col];
                            for c in 0..m {
                                a[r][c] -= f * a[col][c];
                                inv[r][c] -= f * inv[col][c];
                            }
                        }
                    }
                }
                // inv maps directional derivatives (indexed by j) to partials (by m):
                // partial m = Σ_j inv[m][j] · D³_j f.
                (t, inv)
            })
            .collect();
        Interpolation { local }
    }

    /// Every sorted-triple partial of `f` at `p` into `out` (dense `n³`), from the 220
    /// third directional derivatives, each one `Dual3` pass of `f` along `e_a + e_b + e_c`.
    fn tensor(
        &self,
        f: impl Fn(&[Dual3_64]) -> Dual3_64,
        p: &[f64],
        directional: &mut Vec<f64>,
        out: &mut [f64],
    ) {
        let n = p.len();
        let all = triples_of(n);
        directional.clear();
        let mut x: Vec<Dual3_64> = p.iter().map(|&v| Dual3_64::from_re(v)).collect();
        for j in &all {
            for (i, xi) in x.iter_mut().enumerate() {
                xi.v1 = j.iter().filter(|&&v| v == i).count() as f64;
            }
            directional.push(f(&x).v3);
        }
        let index = |t: &[usize; 3]| all.binary_search(t).expect("a triple");
        for i in &all {
            let mut support: Vec<usize> = i.to_vec();
            support.dedup();
            let (local, inv) = &self.local[support.len() - 1];
            let to_local = |g: usize| {
                support
                    .iter()
                    .position(|&v| v == g)
                    .expect("on the support")
            };
            let li = [to_local(i[0]), to_local(i[1]), to_local(i[2])];
            let row = &inv[local.iter().position(|t| *t == li).expect("a local triple")];
            let mut v = 0.0;
            for (lj, w) in local.iter().zip(row) {
                let gj = [support[lj[0]], support[lj[1]], support[lj[2]]];
                v += w * directional[index(&gj)];
            }
            out[(i[0] * n + i[1]) * n + i[2]] = v;
        }
    }
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

    if !runs("tensor") {
        return;
    }
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
    let interpolation = Interpolation::new();
    let mut directional = Vec::new();
    let mut interpolated = vec![0.0; n * n * n];
    // Accuracy against num-dual's hyper-hyper-dual partials, relative to the tensor's
    // largest entry at each point: nesting (ddx) and interpolation.
    let (mut nested_err, mut interp_err) = (0.0f64, 0.0f64);
    for p in &points {
        dual_tensor(p, &mut dense);
        interpolation.tensor(|v| model.eval(v), p, &mut directional, &mut interpolated);
        let t = eq.derivative_tensor(3, &p[..]).expect("tensor");
        let scale = triples
            .iter()
            .map(|&(i, j, k)| dense[(i * n + j) * n + k].abs())
            .fold(0.0, f64::max);
        for &(i, j, k) in &triples {
            let at = (i * n + j) * n + k;
            nested_err = nested_err.max((t[at] - dense[at]).abs() / scale);
            interp_err = interp_err.max((interpolated[at] - dense[at]).abs() / scale);
        }
    }
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
    let ns = time(
        &points,
        &mut [
            &mut |p: &[f64]| {
                black_box(model.eval::<f64>(p));
            },
            &mut |p: &[f64]| {
                black_box(eq.derivative_tensor(3, p).expect("tensor"));
            },
            &mut |p: &[f64]| {
                black_box(at(p));
            },
            &mut |p: &[f64]| {
                dual_tensor(p, &mut dense);
                black_box(&dense);
            },
            &mut |p: &[f64]| {
                interpolation.tensor(|v| model.eval(v), p, &mut directional, &mut interpolated);
                black_box(&interpolated);
            },
        ],
    );
    let (native, interp, mac, dual, taylor) = (ns[0], ns[1], ns[2], ns[3], ns[4]);
    println!();
    println!("| regular-10, all third partials | ddx derivative_tensor(3), interpreted | macro derivative_tensor::<3> | num-dual, 220 HyperHyperDual64 passes | Taylor interpolation, 220 Dual3 passes | one evaluation, ns |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| ratio to one evaluation | {:.1}x | {:.2}x | {:.1}x | {:.1}x | {:.1} |",
        interp / native,
        mac / native,
        dual / native,
        taylor / native,
        native
    );
    println!("| ns per tensor | {interp:.0} | {mac:.0} | {dual:.0} | {taylor:.0} | |");
    println!(
        "| largest difference from num-dual, relative to the largest partial | {nested_err:.1e} | {nested_err:.1e} | 0 | {interp_err:.1e} | |"
    );
}
