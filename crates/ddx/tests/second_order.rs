//! `hessian`, `hvp`, `hvp_along`, `hessian_colors`, `hessian_cell` against independent
//! truths: closed forms, finite differences of the gradient lane, `n` products along the
//! basis vectors, the products along the colour groups' indicator vectors, and the
//! specification's own numbers.

mod common;

use common::{huber, point, random_model, ulps, Rng};
use ddx::{rt, select, Equation, Errc, Expr, LaneKind, System};

fn close(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= rel * want.abs().max(f64::MIN_POSITIVE)
}

#[test]
fn the_specification_example() {
    // The specification prints H[0] and H[1] of the Huber loss at (2, 0.5) to 11 digits.
    let eq = huber();
    let h = eq.hessian([2.0, 0.5]).unwrap();
    assert_eq!(h.len(), 4);
    assert!(close(h[0], 3.1060035856, 2e-11), "{h:?}");
    assert!(close(h[1], -3.1441109272, 2e-11), "{h:?}");
    assert!(ulps(h[1], h[2]) <= 1, "{h:?}");
    // The named spelling answers the same, and `hvp("a")` is the first column.
    assert_eq!(eq.hessian([("b", 0.5), ("a", 2.0)]).unwrap(), h);
    assert_eq!(eq.hvp_along("a", [2.0, 0.5]).unwrap(), [h[0], h[2]]);
    assert_eq!(eq.hvp_along("b", [2.0, 0.5]).unwrap(), [h[1], h[3]]);
}

#[test]
fn closed_forms() {
    // f = a²b + sin(a)·e^b + c·ln(b):
    // H = [[2b − sin(a)e^b, 2a + cos(a)e^b, 0], [·, sin(a)e^b − c/b², 1/b], [0, 1/b, 0]].
    let eq = rt::equation(|| {
        let (a, b, c) = (rt::var("a"), rt::var("b"), rt::var("c"));
        a * a * b + a.sin() * b.exp() + c * b.ln()
    })
    .unwrap();
    let (a, b, c): (f64, f64, f64) = (0.7, 1.3, -2.1);
    let want = [
        2.0 * b - a.sin() * b.exp(),
        2.0 * a + a.cos() * b.exp(),
        0.0,
        2.0 * a + a.cos() * b.exp(),
        a.sin() * b.exp() - c / (b * b),
        1.0 / b,
        0.0,
        1.0 / b,
        0.0,
    ];
    let h = eq.hessian([a, b, c]).unwrap();
    for (k, (&g, &w)) in h.iter().zip(&want).enumerate() {
        assert!(ulps(g, w) <= 4, "cell {k}: {g} vs {w}");
    }
    // (c, c) and (a, c) are structural zeros: exactly +0, and no compressed cell.
    for (i, j) in [(0, 2), (2, 0), (2, 2)] {
        assert_eq!(h[i * 3 + j].to_bits(), 0f64.to_bits());
        assert_eq!(eq.hessian_cell(i, j), None);
    }

    // The extended Rosenbrock function over n = 6 (tridiagonal Hessian), closed form
    // from f = Σ 100(x_{i+1} − x_i²)² + (1 − x_i)².
    let n = 6;
    let names: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
    let eq = rt::equation(|| {
        let x: Vec<Expr> = names.iter().map(|s| rt::var(s)).collect();
        (0..n - 1)
            .map(|i| 100.0 * (x[i + 1] - x[i] * x[i]).powf(2.0) + (1.0 - x[i]).powf(2.0))
            .sum::<Expr>()
    })
    .unwrap();
    let x = [0.3, -1.2, 0.8, 1.1, -0.4, 0.9];
    let mut want = vec![0.0; n * n];
    for i in 0..n {
        let mut d = 0.0;
        if i + 1 < n {
            d += 1200.0 * x[i] * x[i] - 400.0 * x[i + 1] + 2.0;
            want[i * n + i + 1] = -400.0 * x[i];
            want[(i + 1) * n + i] = -400.0 * x[i];
        }
        if i > 0 {
            d += 200.0;
        }
        want[i * n + i] = d;
    }
    let h = eq.hessian(x).unwrap();
    for k in 0..n * n {
        assert!(
            close(h[k], want[k], 4.0 * f64::EPSILON) || h[k] == want[k],
            "cell {k}: {} vs {}",
            h[k],
            want[k]
        );
    }
    // Off the band, exact zeros with no cell; on it, a cell each.
    for i in 0..n {
        for j in 0..n {
            assert_eq!(
                eq.hessian_cell(i, j).is_some(),
                i.abs_diff(j) <= 1,
                "({i}, {j})"
            );
        }
    }
    assert_eq!(eq.hessian_colors(), 3);
}

/// Fourth-order central differences of the gradient lane: column j of H.
fn fd_hessian(eq: &Equation, x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut h = vec![0.0; n * n];
    for j in 0..n {
        let step = 1e-3 * x[j].abs().max(1.0);
        let at = |k: f64| {
            let mut y = x.to_vec();
            y[j] += k * step;
            eq.jacobian(&y).unwrap()
        };
        let (p1, m1, p2, m2) = (at(1.0), at(-1.0), at(2.0), at(-2.0));
        for i in 0..n {
            h[i * n + j] = (8.0 * (p1[i] - m1[i]) - (p2[i] - m2[i])) / (12.0 * step);
        }
    }
    h
}

#[test]
fn against_finite_differences_of_the_gradient() {
    // Smooth random models (no kinks, so differences are valid); truncation error is
    // O(step⁴) ≈ 1e-12 and rounding about ε/step ≈ 1e-13, relative to the row's scale.
    let mut rng = Rng::new(0xfd);
    let mut worst = 0.0f64;
    for seed in 0..120u64 {
        let n = 1 + (seed % 6) as usize;
        let eq = random_model(seed, n, 10 + (seed % 25) as usize, false);
        let x = point(&mut rng, n);
        let h = eq.hessian(&x).unwrap();
        let fd = fd_hessian(&eq, &x);
        let scale = h.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for k in 0..n * n {
            let e = (h[k] - fd[k]).abs() / scale;
            worst = worst.max(e);
            assert!(e <= 1e-8, "seed {seed}, cell {k}: {} vs fd {}", h[k], fd[k]);
        }
    }
    eprintln!("worst scaled difference from finite differences: {worst:e}");
}

#[test]
fn equals_n_products_along_the_basis_bitwise() {
    // H(i, j) is read at (colour(j), row i) — the tangent of gᵢ along the group of j —
    // or at (colour(i), row j). `hvp_along(j)[i]` is the tangent of gᵢ along e_j: the
    // same nodes, with the group's other symbols seeded 0 instead of not at all. A
    // product by 0 of a finite partial is ±0 and adding ±0 changes no nonzero sum, so the
    // two agree bit for bit (up to the sign of a zero, which `==` ignores) wherever the
    // local partials are finite — everywhere, for these models.
    let mut rng = Rng::new(0xb17);
    for seed in 0..200u64 {
        let n = 1 + (seed % 7) as usize;
        let eq = random_model(seed, n, 8 + (seed % 24) as usize, seed % 2 == 0);
        let x = point(&mut rng, n);
        let h = eq.hessian(&x).unwrap();
        let cols: Vec<Vec<f64>> = (0..n).map(|j| eq.hvp_along(j, &x).unwrap()).collect();
        for i in 0..n {
            for j in 0..n {
                let want = match eq.hessian_cell(i, j) {
                    // A structural zero: the hvp lane, which knows no pattern, must
                    // answer an exact zero there too, both ways round.
                    None => {
                        assert!(
                            cols[j][i] == 0.0 && cols[i][j] == 0.0,
                            "seed {seed} ({i}, {j})"
                        );
                        0.0
                    }
                    Some(c) if c % n == i => cols[j][i],
                    Some(_) => cols[i][j],
                };
                assert!(
                    h[i * n + j] == want,
                    "seed {seed} ({i}, {j}): {} vs {want}",
                    h[i * n + j]
                );
            }
            // And hvp with the basis vector spelled out is hvp_along.
            let mut e = vec![0.0; n];
            e[i] = 1.0;
            assert_eq!(eq.hvp(&e, &x).unwrap(), cols[i], "seed {seed}");
        }
    }
}

#[test]
fn symmetric_to_the_last_ulp_without_cancellation_and_normwise_with_it() {
    // Where no cancellation happens, the two sweeps that give H(i, j) and H(j, i) round
    // alike to within one ULP: products of exponentials and sines of positive terms.
    let n = 5;
    let names: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
    let eq = rt::equation(|| {
        let x: Vec<Expr> = names.iter().map(|s| rt::var(s)).collect();
        let s: Expr = x.iter().map(|&v| 0.3 * v).sum();
        s.exp() * x[0] * x[1] + (x[2] * x[3] * x[4]).exp() + x[1] * x[1] * x[4]
    })
    .unwrap();
    let h = eq.hessian([0.4, 0.9, 0.2, 0.7, 0.5]).unwrap();
    for i in 0..n {
        for j in 0..n {
            assert!(ulps(h[i * n + j], h[j * n + i]) <= 1, "({i}, {j}): {h:?}");
        }
    }
    // With cancellation, a cell may lose digits differently in the two sweeps; the
    // difference stays within a few ε of the matrix's largest entry (worst measured over
    // these models: 12.4ε).
    let mut rng = Rng::new(0x5e);
    for seed in 0..300u64 {
        let n = 1 + (seed % 7) as usize;
        let eq = random_model(seed, n, 12 + (seed % 20) as usize, seed % 2 == 0);
        let x = point(&mut rng, n);
        let h = eq.hessian(&x).unwrap();
        let scale = h.iter().fold(f64::MIN_POSITIVE, |m, v| m.max(v.abs()));
        for i in 0..n {
            for j in 0..n {
                let d = (h[i * n + j] - h[j * n + i]).abs();
                assert!(d <= 32.0 * f64::EPSILON * scale, "seed {seed} ({i}, {j})");
            }
        }
    }
}

/// The compressed block, read straight off the Hessian lane's outputs.
fn compressed_block(eq: &Equation, x: &[f64]) -> Vec<f64> {
    let lane = eq.lane(LaneKind::Hessian).unwrap();
    let out = lane.graph.eval_reference(&lane.outputs, x, &[]);
    let nnz = lane.pattern.as_ref().unwrap().nonzeros();
    out[lane.values + nnz..].to_vec()
}

#[test]
fn the_compressed_block_is_the_products_along_the_colour_groups() {
    // Column k·n + row of the block must be (H·v_k)[row], v_k the indicator vector of
    // colour group k; `hessian_cell` must point into it at the dense answer.
    let mut rng = Rng::new(0xc0);
    for seed in 0..100u64 {
        let n = 2 + (seed % 9) as usize;
        let eq = random_model(seed, n, 10 + (seed % 30) as usize, seed % 3 == 0);
        let x = point(&mut rng, n);
        let block = compressed_block(&eq, &x);
        let colours = eq.hessian_colors();
        assert_eq!(block.len(), colours * n);
        assert_eq!(eq.hessian_columns(), colours * n);
        let layout = eq
            .lane(LaneKind::Hessian)
            .unwrap()
            .hessian
            .as_ref()
            .unwrap();
        for k in 0..colours {
            let v: Vec<f64> = (0..n)
                .map(|j| {
                    if layout.colouring().colour(j) == Some(k) {
                        1.0
                    } else {
                        0.0
                    }
                })
                .collect();
            let hv = eq.hvp(&v, &x).unwrap();
            for row in 0..n {
                assert!(
                    block[k * n + row] == hv[row],
                    "seed {seed}: group {k} row {row}"
                );
            }
        }
        let h = eq.hessian(&x).unwrap();
        for i in 0..n {
            for j in 0..n {
                match eq.hessian_cell(i, j) {
                    Some(c) => assert_eq!(block[c].to_bits(), h[i * n + j].to_bits()),
                    None => assert_eq!(h[i * n + j].to_bits(), 0f64.to_bits()),
                }
            }
        }
        assert_eq!(eq.hessian_cell(n, 0), None);
        assert_eq!(eq.hessian_cell(0, n + 3), None);
    }
}

#[test]
fn structural_zeros_are_exact_and_the_pattern_is_tight() {
    // f = x·y + sin(y)·z + w + exp(v)·v: w enters linearly, (x, z), (x, v), … never meet.
    let eq = rt::equation(|| {
        let (v, w, x, y, z) = (
            rt::var("v"),
            rt::var("w"),
            rt::var("x"),
            rt::var("y"),
            rt::var("z"),
        );
        x * y + y.sin() * z + w + v.exp() * v
    })
    .unwrap();
    // Canonical order v, w, x, y, z.
    let on: &[(usize, usize)] = &[(0, 0), (2, 3), (3, 2), (3, 3), (3, 4), (4, 3)];
    let p = eq.hessian_pattern();
    let cells: Vec<(usize, usize)> = p.entries().iter().map(|c| (c.row, c.column)).collect();
    assert_eq!(cells, on);
    let h = eq.hessian([0.3, 1.0, 2.0, 0.5, -1.5]).unwrap();
    for i in 0..5 {
        for j in 0..5 {
            if on.contains(&(i, j)) {
                assert_ne!(h[i * 5 + j], 0.0, "({i}, {j})");
            } else {
                assert_eq!(h[i * 5 + j].to_bits(), 0f64.to_bits(), "({i}, {j})");
                assert_eq!(eq.hessian_cell(i, j), None);
            }
        }
    }
    // w's row is empty, so it is in no colour group: the path x – y – z and v take 2.
    assert_eq!(eq.hessian_colors(), 2);
    // A function linear in everything has an empty pattern and no colours at all.
    let lin = rt::equation(|| 2.0 * rt::var("a") - rt::var("b")).unwrap();
    assert_eq!(lin.hessian_colors(), 0);
    assert_eq!(lin.hessian([1.0, 2.0]).unwrap(), [0.0; 4]);
    assert_eq!(lin.hvp([1.0, 1.0], [1.0, 2.0]).unwrap(), [0.0, 0.0]);
}

fn names(n: usize) -> Vec<String> {
    // Unpadded on purpose: alphabetical order (x0, x1, x10, x11, …) scrambles the
    // structure, and the colouring must still find it.
    (0..n).map(|i| format!("x{i}")).collect()
}

fn chain(n: usize) -> Equation {
    let names = names(n);
    rt::equation(|| {
        let x: Vec<Expr> = names.iter().map(|s| rt::var(s)).collect();
        (0..n - 1)
            .map(|i| (x[i + 1] - x[i] * x[i]).powf(2.0) + x[i].sin())
            .sum::<Expr>()
    })
    .unwrap()
}

#[test]
fn colour_counts_on_the_structures_users_have() {
    // Tridiagonal at n = 64: ≤ 3 (and a path needs 3).
    let eq = chain(64);
    assert_eq!(eq.hessian_colors(), 3);
    // Arrowhead: one symbol meets every other, the rest only themselves: ≤ 2 + 1.
    let n = 64;
    let nm = names(n);
    let eq = rt::equation(|| {
        let x: Vec<Expr> = nm.iter().map(|s| rt::var(s)).collect();
        (1..n)
            .map(|i| (x[0] * x[i]).sin() + x[i] * x[i])
            .sum::<Expr>()
    })
    .unwrap();
    assert!(eq.hessian_colors() <= 3, "{}", eq.hessian_colors());
    // Dense: every pair interacts, so n products.
    for n in [8, 64] {
        let nm = names(n);
        let eq = rt::equation(|| {
            let x: Vec<Expr> = nm.iter().map(|s| rt::var(s)).collect();
            x.iter().copied().sum::<Expr>().powf(2.0).exp()
        })
        .unwrap();
        assert_eq!(eq.hessian_colors(), n);
    }
    // And the compressed chain is right: against the n basis products.
    let eq = chain(64);
    let x: Vec<f64> = (0..64).map(|i| (i as f64 * 0.37).sin()).collect();
    let h = eq.hessian(&x).unwrap();
    for j in [0usize, 1, 10, 33, 63] {
        let col = eq.hvp_along(j, &x).unwrap();
        for i in 0..64 {
            assert_eq!(h[i * 64 + j], col[i], "({i}, {j})");
        }
    }
}

#[test]
fn the_untaken_arm_never_reaches_a_second_derivative() {
    // At x = −1 the arm x·√x·y is NaN (and so are its derivatives); x²·y is taken:
    // H = [[2y, 2x], [2x, 0]].
    let eq = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        select(x.gt(0.0), x * x.sqrt() * y, x * x * y)
    })
    .unwrap();
    assert_eq!(eq.hessian([-1.0, 3.0]).unwrap(), [6.0, -2.0, -2.0, 0.0]);
    assert_eq!(eq.hvp([1.0, 1.0], [-1.0, 3.0]).unwrap(), [4.0, -2.0]);
    // At x = 0 the untaken arm's second derivative is infinite (¾·y/√x) and its mixed
    // one 0·∞: neither reaches the result.
    let h = eq.hessian([0.0, 3.0]).unwrap();
    assert_eq!(h, [6.0, 0.0, 0.0, 0.0]);
    assert_eq!(eq.hvp_along("x", [0.0, 3.0]).unwrap(), [6.0, 0.0]);
    assert_eq!(eq.hvp_along("y", [0.0, 3.0]).unwrap(), [0.0, 0.0]);
    // Nested selects, arms sharing subexpressions, and a NaN arm on both levels.
    let eq = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        let bad = (x - 5.0).ln() * y.sqrt();
        let inner = select(y.lt(0.0), x * y * y, bad);
        select(x.lt(1.0), inner + x * x, bad * bad)
    })
    .unwrap();
    // x = 0.5, y = −2: inner = x·y², f = x·y² + x², H = [[2, 2y], [2y, 2x]].
    let h = eq.hessian([0.5, -2.0]).unwrap();
    assert_eq!(h, [2.0, -4.0, -4.0, 1.0]);
    assert!(eq
        .hvp([1.0, -1.0], [0.5, -2.0])
        .unwrap()
        .iter()
        .all(|v| v.is_finite()));
    // The Huber loss straddling δ (both arms taken by different terms) stays finite.
    let h = huber().hessian([1.8, 0.45]).unwrap();
    assert!(h.iter().all(|v| v.is_finite()), "{h:?}");
}

#[test]
fn singular_point_conventions_hold_at_second_order() {
    // pow(x, y) at x = 0, y = 2: ∂²/∂x² = y(y − 1)x^(y−2) = 2; the mixed partial follows
    // the arms (∂/∂y = 0 at x = 0, and ∂/∂x of x^(y−1) likewise): 0; ∂²/∂y² = 0.
    let eq = rt::equation(|| rt::var("x").powf(rt::var("y"))).unwrap();
    assert_eq!(eq.hessian([0.0, 2.0]).unwrap(), [2.0, 0.0, 0.0, 0.0]);
    // At y = 1, x = 0 the function is not twice differentiable (∂²f/∂x∂y =
    // x^(y−1)·(1 + y·ln x) has no limit). The convention that the exponent does not move
    // the function at a zero base (∂/∂y = 0 there) holds for the partial ∂f/∂x = y·x^(y−1)
    // too, so both mixed cells are the 0 that ∂/∂x of the arm-guarded ∂f/∂y gives: the
    // Hessian is symmetric (it was [0, 1; 0, 0] while ∂/∂y of the factor y survived).
    // ∂²/∂x² = y(y−1)·x^(y−2) takes the arm for y − 1 = 0: 0, not 0·∞.
    assert_eq!(eq.hessian([0.0, 1.0]).unwrap(), [0.0; 4]);
    // Below 1 the mixed cells were ∞ one way and 0 the other; now 0 both ways.
    assert_eq!(
        eq.hessian([0.0, 0.5]).unwrap(),
        [f64::NEG_INFINITY, 0.0, 0.0, 0.0]
    );
    // hypot and atan2 at the origin: zero partials, so zero second derivatives.
    let eq = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        x.hypot(y) + x.atan2(y)
    })
    .unwrap();
    assert_eq!(eq.hessian([0.0, 0.0]).unwrap(), [0.0; 4]);
    // max at a tie: each side half, at second order too. max(x², y²) at x = y = 1.
    let eq = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        (x * x).max(y * y)
    })
    .unwrap();
    assert_eq!(eq.hessian([1.0, 1.0]).unwrap(), [1.0, 0.0, 0.0, 1.0]);
    assert_eq!(eq.hessian([2.0, 1.0]).unwrap(), [2.0, 0.0, 0.0, 0.0]);
    // abs at 0: abs'(0) = 0 and sign' = 0, so |x³ − y| has zero Hessian there.
    let eq = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        (x * x * x - y).abs() * x
    })
    .unwrap();
    assert_eq!(eq.hessian([0.0, 0.0]).unwrap(), [0.0; 4]);
    // Elsewhere plain IEEE: √(x²) at 0 is NaN at second order, as at first.
    let eq = rt::equation(|| (rt::var("x") * rt::var("x")).sqrt()).unwrap();
    assert!(eq.hessian([0.0]).unwrap()[0].is_nan());
}

#[test]
fn a_system_gets_one_hessian_per_output() {
    // m = 3 outputs over n = 4 symbols; each block must equal the Hessian of the same
    // function built alone (to the last ULP: the system shares one colouring of the
    // union pattern, so a cell may be read from the transposed sweep).
    let fs: [fn(&[Expr]) -> Expr; 3] = [
        |x| x[0] * x[1] + x[2].sin(),
        |x| (x[1] * x[2] * x[3]).exp(),
        |x| x[0].hypot(x[3]) * x[0],
    ];
    let nm = ["a", "b", "c", "d"];
    let sys: Equation<System> = rt::equation(|| {
        let x: Vec<Expr> = nm.iter().map(|s| rt::var(s)).collect();
        fs.iter().map(|f| f(&x)).collect::<Vec<_>>()
    })
    .unwrap();
    let at = [0.3, -0.7, 1.1, 0.4];
    let h = sys.hessian(at).unwrap();
    assert_eq!(h.len(), 3 * 16);
    for (r, f) in fs.iter().enumerate() {
        let alone = rt::equation(|| {
            let x: Vec<Expr> = nm.iter().map(|s| rt::var(s)).collect();
            f(&x) + 0.0 * x.iter().copied().sum::<Expr>()
        })
        .unwrap();
        let want = alone.hessian(at).unwrap();
        for k in 0..16 {
            assert!(ulps(h[r * 16 + k], want[k]) <= 1, "output {r}, cell {k}");
        }
    }
    // One layout for every output; the union pattern is what it covers.
    assert!(sys.hessian_colors() >= 2);
    assert_eq!(sys.hessian_cell(0, 2), None, "a and c meet in no output");
    assert!(sys.hessian_cell(0, 1).is_some());
    // hvp is one output only: a clear refusal, not a panic.
    let e = sys.hvp([1.0; 4], at).unwrap_err();
    assert_eq!(e.code(), Errc::NotScalar);
    assert_eq!(
        e.to_string(),
        "not_scalar: `hvp` needs an equation of one output; this one has 3 outputs"
    );
    assert_eq!(sys.hvp_along("a", at).unwrap_err().code(), Errc::NotScalar);
    // A system of one output answers.
    let one: Equation<System> = rt::equation(|| vec![rt::var("a") * rt::var("b")]).unwrap();
    assert_eq!(one.hvp([1.0, 0.0], [2.0, 3.0]).unwrap(), [0.0, 1.0]);
}

#[test]
fn errors_are_values() {
    let eq = huber();
    // wrong_direction: positional too short or too long, or named and not whole.
    for v in [vec![1.0], vec![1.0, 2.0, 3.0]] {
        let e = eq.hvp(&v, [2.0, 0.5]).unwrap_err();
        assert_eq!(e.code(), Errc::WrongDirection, "{e}");
    }
    let e = eq.hvp([("a", 1.0)], [2.0, 0.5]).unwrap_err();
    assert_eq!(e.code(), Errc::WrongDirection);
    // unknown_symbol, with the nearest name.
    let e = eq.hvp_along("aa", [2.0, 0.5]).unwrap_err();
    assert_eq!(e.code(), Errc::UnknownSymbol);
    assert!(e.to_string().contains("did you mean `a`"), "{e}");
    let e = eq.hvp([("a", 1.0), ("c", 0.0)], [2.0, 0.5]).unwrap_err();
    assert_eq!(e.code(), Errc::UnknownSymbol);
    // index_out_of_range for a position.
    let e = eq.hvp_along(2usize, [2.0, 0.5]).unwrap_err();
    assert_eq!(e.code(), Errc::IndexOutOfRange);
    assert_eq!(
        eq.hvp_along(1usize, [2.0, 0.5]).unwrap(),
        eq.hvp_along("b", [2.0, 0.5]).unwrap()
    );
    assert_eq!(
        eq.hvp_along(String::from("b"), [2.0, 0.5]).unwrap().len(),
        2
    );
    // The point's own errors, from every new call.
    assert_eq!(eq.hessian([2.0]).unwrap_err().code(), Errc::ShortPoint);
    assert_eq!(
        eq.hessian([2.0, 0.5, 1.0]).unwrap_err().code(),
        Errc::WrongArity
    );
    assert_eq!(
        eq.hvp([1.0, 0.0], [2.0]).unwrap_err().code(),
        Errc::ShortPoint
    );
    assert_eq!(
        eq.hvp_along("a", [("a", 2.0)]).unwrap_err().code(),
        Errc::ShortPoint
    );
}

#[test]
fn pow_is_smooth_where_only_the_exponent_passes_through_zero() {
    // (1 + x)^x = exp(x·ln(1 + x)) = 1 + x² − x³/2 + …: f'' = 2, f''' = −3 at 0. pow's
    // guard on ∂/∂base acts only at base = exponent = 0, so the Hessian keeps the
    // derivative of b·a^(b−1) where b passes through 0 with a = 1.
    let eq = rt::equation_text("pow(x + 1, x)").unwrap();
    let h = eq.hessian([0.0]).unwrap()[0];
    assert!((h - 2.0).abs() < 1e-14, "{h}");
    assert!((eq.univariate_derivative::<2>(0.0).unwrap() - 2.0).abs() < 1e-14);
    assert!((eq.univariate_derivative::<3>(0.0).unwrap() + 3.0).abs() < 1e-13);
    let hv = eq.hvp([1.0], [0.0]).unwrap()[0];
    assert_eq!(hv.to_bits(), h.to_bits());
    // At the singular point itself the convention still holds: pow(x, y) at (0, 0).
    let p = rt::equation_text("pow(x, y)").unwrap();
    assert_eq!(p.jacobian([0.0, 0.0]).unwrap(), [0.0, 0.0]);
}
