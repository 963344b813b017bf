//! Every route answers alike at the hard points (issue 21): the accumulation order each
//! mode documents (`ARCHITECTURE.md`, "Semantics").

use ddx::rt;

/// Reverse mode sums a shared node's adjoints before its partial, forward mode after:
/// where a term cancels, the two round differently, as documented.
#[test]
fn accumulation_order_is_the_documented_one() {
    let eq = rt::equation_text("50*x*exp(100*x) + (50*x - 50*x*exp(100*x))").unwrap();
    let x = 0.6;
    // In double, 50x = 30 is lost beside 50x·e^(100x) ≈ 3.4e27, so the value is 0.
    assert_eq!(eq.evaluate(x).unwrap(), 0.0);
    // Forward: ȧ + (50 − ȧ), with ȧ ≈ 3.5e29, rounds the 50 away.
    assert_eq!(eq.jvp([1.0], x).unwrap(), [0.0]);
    // Reverse: the adjoint of a is 1 − 1 = 0 exactly, and 50 comes in alone (the true
    // derivative of 50x, to which the function is equal).
    assert_eq!(eq.gradient(x).unwrap(), [50.0]);
    assert_eq!(eq.vjp(&[1.0], x).unwrap(), [50.0]);
    assert_eq!(eq.jacobian(x).unwrap(), [50.0]);
}

/// Every engine this build has, as options: the interpreter, the JIT (each lane waited
/// for) and the OpenCL device (where one answers).
fn engines(eq: &ddx::Equation) -> Vec<(&'static str, ddx::Equation)> {
    use ddx::{Backend, LaneKind, Options};
    let mut out = vec![("interpreter", eq.clone())];
    for (name, backend) in [("jit", Backend::Compile), ("device", Backend::Device)] {
        let mut e = eq.clone();
        e.set_options(Options::with_backend(backend));
        let ready = [
            LaneKind::Jacobian,
            LaneKind::Jvp,
            LaneKind::Hvp,
            LaneKind::Hessian,
        ]
        .into_iter()
        .all(|k| e.wait_for_kernel_of(k));
        if ready {
            out.push((name, e));
        } else {
            eprintln!(
                "{name}: not every lane runs there ({:?})",
                e.device_status()
            );
        }
    }
    out
}

fn basis(n: usize, j: usize) -> Vec<f64> {
    (0..n).map(|i| f64::from(u8::from(i == j))).collect()
}

/// `a` and `b` agree: both NaN, or equal to `ulps` units in the last place (infinities
/// exactly).
fn close(a: f64, b: f64, ulps: u64) -> bool {
    (a.is_nan() && b.is_nan())
        || a == b
        || (a.is_finite() && b.is_finite() && {
            let (x, y) = (a.to_bits() as i64, b.to_bits() as i64);
            (a.signum() == b.signum()) && x.abs_diff(y) <= ulps
        })
}

fn bits_equal(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// A direction's exact zeros contribute nothing (`ARCHITECTURE.md`, "Exact zeros in a
/// direction"): `jvp` along each basis vector is the Jacobian's column, in every engine,
/// where the partials are infinite; and the engines answer one another's bits.
#[test]
fn jvp_along_a_basis_vector_is_the_jacobians_column() {
    // (formula, point, the Jacobian in closed form)
    let inf = f64::INFINITY;
    let cases: [(&str, Vec<f64>, Vec<f64>); 8] = [
        // The issue's: reverse decides ∂u = 0 (a literal-zero partial), ∂v = 1/0.
        ("log(0*u + v)", vec![1.0, 0.0], vec![0.0, inf]),
        // e^800 overflows: (e^800, −c·e^800).
        ("c*exp(-d)", vec![1.0, -800.0], vec![inf, -inf]),
        ("sqrt(x) + 3*y", vec![0.0, 2.0], vec![inf, 3.0]),
        // cbrt'(0) = ∞ meets y's partial cbrt(0) = 0.
        ("cbrt(x)*y", vec![0.0, 2.0], vec![inf, 0.0]),
        ("asin(x) - y*y", vec![1.0, 0.5], vec![inf, -1.0]),
        ("x**0.25 + exp(y)", vec![0.0, 0.0], vec![inf, 1.0]),
        // 1/x at 0 and log(x) at 0 beside a finite partial.
        ("y/x + y", vec![0.0, 1.0], vec![-inf, inf]),
        ("log(x)*y", vec![0.0, 0.0], vec![f64::NAN, -inf]),
    ];
    for (text, p, want) in cases {
        let base = rt::equation_text(text).unwrap();
        let n = base.arity();
        let oracle: Vec<Vec<f64>> = (0..n)
            .map(|j| base.jvp(basis(n, j), &p[..]).unwrap())
            .collect();
        for (engine, eq) in engines(&base) {
            let jac = eq.jacobian(&p[..]).unwrap();
            let grad = eq.gradient(&p[..]).unwrap();
            assert!(bits_equal(&jac, &grad), "{text} {engine}: {jac:?} {grad:?}");
            for j in 0..n {
                let jv = eq.jvp(basis(n, j), &p[..]).unwrap();
                assert!(
                    close(jv[0], want[j], 0),
                    "{text} {engine}: jvp(e_{j}) = {}, want {}",
                    jv[0],
                    want[j]
                );
                assert!(close(jac[j], want[j], 0), "{text} {engine}: J = {jac:?}");
                assert!(
                    bits_equal(&jv, &oracle[j]),
                    "{text} {engine}: {jv:?} {:?}",
                    oracle[j]
                );
            }
        }
    }
}

/// Where only some directions are zero, only those terms drop: along `(1, 1)` the
/// infinite partials still meet (`∞ − ∞`), and a direction in which the function does not
/// move has the derivative `0` exactly (`sqrt(x − y)` along `(1, 1)` at `x = y`).
#[test]
fn only_exact_zeros_are_skipped() {
    let eq = rt::equation_text("c*exp(-d)").unwrap();
    assert!(eq.jvp([1.0, 1.0], [1.0, -800.0]).unwrap()[0].is_nan());
    assert_eq!(eq.jvp([2.0, 0.0], [1.0, -800.0]).unwrap()[0], f64::INFINITY);
    // A tiny but nonzero component is a number: ∞ times it.
    assert_eq!(
        eq.jvp([0.0, 1e-300], [1.0, -800.0]).unwrap()[0],
        -f64::INFINITY
    );
    let eq = rt::equation_text("sqrt(x - y)").unwrap();
    for (engine, e) in engines(&eq) {
        assert_eq!(e.jvp([1.0, 1.0], [2.0, 2.0]).unwrap(), [0.0], "{engine}");
        assert_eq!(e.jvp([-0.0, 0.0], [2.0, 2.0]).unwrap()[0], 0.0, "{engine}");
        assert_eq!(
            e.jvp([1.0, 0.0], [2.0, 2.0]).unwrap()[0],
            f64::INFINITY,
            "{engine}"
        );
    }
    // A NaN in the direction is a number too: it propagates.
    assert!(eq.jvp([f64::NAN, 0.0], [3.0, 2.0]).unwrap()[0].is_nan());
}

/// `hvp` along each basis vector is the Hessian's column wherever the Hessian answers a
/// number, in every engine, at points where first or second partials are infinite.
#[test]
fn hvp_along_a_basis_vector_is_the_hessians_column() {
    let inf = f64::INFINITY;
    // (formula, point, the Hessian in closed form, row-major)
    let cases: [(&str, Vec<f64>, Vec<f64>); 4] = [
        // ∂²/∂c² = 0, ∂²/∂c∂d = −e^(−d), ∂²/∂d² = c·e^(−d) at e^800 = ∞.
        ("c*exp(-d)", vec![1.0, -800.0], vec![0.0, -inf, -inf, inf]),
        // sqrt''(x) = −x^(−3/2)/4 = −∞ at 0; y² beside it.
        ("sqrt(x) + y*y", vec![0.0, 1.5], vec![-inf, 0.0, 0.0, 2.0]),
        // ∂²/∂x∂y = cbrt'(0) = ∞; ∂²/∂x² is NaN by plain IEEE (cbrt' = 1/(3·cbrt(x)²),
        // whose own derivative meets 0·∞ in cbrt(x)·cbrt'(x)), in every route alike.
        ("cbrt(x)*y", vec![0.0, 2.0], vec![f64::NAN, inf, inf, 0.0]),
        // log(v): ∂²/∂v² = −1/v² = −∞; u moves nothing.
        (
            "log(0*u + v) + u*u",
            vec![1.0, 0.0],
            vec![2.0, 0.0, 0.0, -inf],
        ),
    ];
    for (text, p, want) in cases {
        let base = rt::equation_text(text).unwrap();
        let n = base.arity();
        let oracle: Vec<Vec<f64>> = (0..n)
            .map(|j| base.hvp(basis(n, j), &p[..]).unwrap())
            .collect();
        for (engine, eq) in engines(&base) {
            let h = eq.hessian(&p[..]).unwrap();
            for j in 0..n {
                let hv = eq.hvp(basis(n, j), &p[..]).unwrap();
                assert!(
                    bits_equal(&hv, &oracle[j]),
                    "{text} {engine}: {hv:?} {:?}",
                    oracle[j]
                );
                assert!(bits_equal(&hv, &eq.hvp_along(j, &p[..]).unwrap()));
                for i in 0..n {
                    let w = want[i * n + j];
                    assert!(
                        close(hv[i], w, 0),
                        "{text} {engine}: (H e_{j})_{i} = {}, want {w}",
                        hv[i]
                    );
                    assert!(close(h[i * n + j], w, 0), "{text} {engine}: H = {h:?}");
                }
            }
        }
    }
}

/// `x*(2 − x**1.3)` at 0: the product rule meets `x·pow''(x) = 0·∞`, plain IEEE and
/// documented (`ARCHITECTURE.md`, "What the rules guard"); every second-order route
/// answers the same NaN, and the first order is the limit `2`. Of the same kind, where
/// the factors' rates make the true answer `0`, `1` or `∞`, the rules cannot tell them
/// apart and answer NaN alike; where no value-zero factor meets the infinite partial
/// (`2x − x**2.3`, the same function written out), the answer is the limit.
#[test]
fn zero_times_an_infinite_second_partial_is_plain_ieee_in_every_route() {
    for text in ["x*(2 - x**1.3)", "x*x**0.3", "x*cbrt(x)", "x*sqrt(x)"] {
        let eq = rt::equation_text(text).unwrap();
        let h = eq.hessian(0.0).unwrap()[0];
        assert!(h.is_nan(), "{text}: {h}");
        assert!(eq.hvp([1.0], 0.0).unwrap()[0].is_nan(), "{text}");
        assert!(eq.derivative_tensor(2, 0.0).unwrap()[0].is_nan(), "{text}");
        assert!(
            eq.univariate_derivative::<2>(0.0).unwrap().is_nan(),
            "{text}"
        );
        for (engine, e) in engines(&eq) {
            assert!(e.hessian(0.0).unwrap()[0].is_nan(), "{text} {engine}");
        }
    }
    let eq = rt::equation_text("x*(2 - x**1.3)").unwrap();
    assert_eq!(eq.gradient(0.0).unwrap(), [2.0]);
    assert_eq!(eq.univariate_derivative::<1>(0.0), Ok(2.0));
    // Written out, pow'' stands alone: 2x − x^2.3 has second derivative −2.3·1.3·0^0.3 = 0.
    let eq = rt::equation_text("2*x - x**2.3").unwrap();
    assert_eq!(eq.hessian(0.0).unwrap()[0], 0.0);
    assert_eq!(eq.univariate_derivative::<2>(0.0), Ok(0.0));
    assert_eq!(eq.hvp([1.0], 0.0).unwrap(), [0.0]);
}

/// Batches answer each point as the per-point call does, in every engine: the plain lane
/// everywhere, and its zero-skipping twin at the points where the plain lane gives a NaN
/// (`ddx_ir::lane::build_twin`) — points that need the twin mixed with points that do
/// not, and a broadcast direction (one value per symbol for every point).
#[test]
fn batches_mend_exactly_the_points_the_per_point_calls_mend() {
    let cases: [(&str, Vec<[f64; 2]>); 3] = [
        // (c, d): e^800 = ∞ at d = −800, finite elsewhere.
        (
            "c*exp(-d) + c*d",
            vec![
                [1.0, -800.0],
                [2.0, 1.5],
                [-1.0, -800.0],
                [0.5, -0.25],
                [3.0, 2.0],
            ],
        ),
        // (x, y): sqrt'(0) = ∞ where x = 0, and a negative zero at y = −0.
        (
            "sqrt(x)*y - x*y",
            vec![[0.0, 2.0], [4.0, -0.0], [0.0, -3.0], [1.0, 1.0], [9.0, 0.5]],
        ),
        (
            "log(0*x + y) + x*x",
            vec![[1.0, 0.0], [2.0, 1.0], [-1.0, 0.0], [0.5, 3.0], [1.0, 2.0]],
        ),
    ];
    let directions: [[f64; 2]; 4] = [[1.0, 0.0], [0.0, 1.0], [-0.0, 0.5], [2.0, -1.0]];
    for (text, points) in cases {
        let base = rt::equation_text(text).unwrap();
        for (engine, eq) in engines(&base) {
            let p = points.len();
            let xs: Vec<Vec<f64>> = (0..2)
                .map(|j| points.iter().map(|x| x[j]).collect())
                .collect();
            // Each point along each direction, and every point along one broadcast one.
            for (d, v) in directions.iter().enumerate() {
                let vs: Vec<Vec<f64>> = (0..2)
                    .map(|j| (0..p).map(|k| directions[(d + k) % 4][j]).collect())
                    .collect();
                let broadcast: Vec<Vec<f64>> = (0..2).map(|j| vec![v[j]]).collect();
                for (shape, vs) in [("per point", &vs), ("broadcast", &broadcast)] {
                    let x: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
                    let v_cols: Vec<&[f64]> = vs.iter().map(Vec::as_slice).collect();
                    let along = |k: usize| -> Vec<f64> {
                        (0..2)
                            .map(|j| vs[j][if vs[j].len() == 1 { 0 } else { k }])
                            .collect()
                    };
                    let (mut f, mut jv) = (vec![0.0; p], vec![0.0; p]);
                    eq.jvp_batch(&x, &v_cols, &mut [&mut f], &mut [&mut jv])
                        .unwrap();
                    let (mut hf, mut g0, mut g1, mut h0, mut h1) = (
                        vec![0.0; p],
                        vec![0.0; p],
                        vec![0.0; p],
                        vec![0.0; p],
                        vec![0.0; p],
                    );
                    let cells = eq.jacobian_columns();
                    assert_eq!(cells, 2, "{text}");
                    eq.hvp_batch(
                        &x,
                        &v_cols,
                        &mut [&mut hf],
                        &mut [&mut g0, &mut g1],
                        &mut [&mut h0, &mut h1],
                    )
                    .unwrap();
                    for (k, point) in points.iter().enumerate() {
                        let v = along(k);
                        let one = eq.jvp(&v[..], &point[..]).unwrap();
                        assert!(
                            bits_equal(&[jv[k]], &one),
                            "{text} {engine} {shape}: jvp batch {} vs call {one:?} at {point:?} along {v:?}",
                            jv[k]
                        );
                        let hv = eq.hvp(&v[..], &point[..]).unwrap();
                        assert!(
                            bits_equal(&[h0[k], h1[k]], &hv),
                            "{text} {engine} {shape}: hvp batch {:?} vs call {hv:?} at {point:?} along {v:?}",
                            [h0[k], h1[k]]
                        );
                    }
                }
            }
        }
    }
}

/// The pow family's Hessian is symmetric where a partial is infinite or a base is `0`, in
/// every engine, and every second-order route agrees with it: `hvp` along a basis vector
/// is the Hessian's column, `derivative_tensor(2)` is the Hessian, and `jvp` along a basis
/// vector is the gradient's entry. `pow`'s exponent does not move the function at `a = 0`
/// (`∂/∂b = 0` there) and `powi`'s never does, so neither moves the partial `∂/∂a` either
/// (`ad::rules`): before, `∂/∂b` of `b·a^(b−1)` kept `a^(b−1)`, and `x**y` at `(0, 0.5)`
/// had `H = [−∞, ∞; 0, 0]`.
#[test]
fn the_pow_familys_hessian_is_symmetric_and_every_route_agrees() {
    let inf = f64::INFINITY;
    let texts = [
        "x**y",
        "x**y*y",
        "x**(y*y)",
        "powi(x, 2)*y",
        "powi(x, -2)*y",
        "x**0.5*y",
        "x**1.5*y",
        "sqrt(x)*y",
        "cbrt(x)*y",
        "powi(x, 3)*y",
        "sqrt(x*y)",
        "(x + y)**y",
    ];
    let points: [[f64; 2]; 14] = [
        // x + y = 0 for `(x + y)**y`: a zero base that moves with both symbols.
        [-0.5, 0.5],
        [-2.0, 2.0],
        [0.0, 0.5],
        [0.0, 1.0],
        [0.0, 2.0],
        [0.0, 3.0],
        [0.0, -1.0],
        [0.0, 0.0],
        [0.0, 1.5],
        [-0.0, 2.0],
        [1.0, 0.0],
        [2.0, 3.0],
        [0.5, -2.0],
        [3.0, 0.5],
    ];
    // Closed forms where they are numbers (row-major Hessians).
    let ln2 = std::f64::consts::LN_2;
    let closed: [(&str, [f64; 2], [f64; 4]); 6] = [
        // x^y: y(y−1)x^(y−2), x^(y−1)(1 + y ln x), x^y ln²x.
        (
            "x**y",
            [2.0, 3.0],
            [
                12.0,
                4.0 * (1.0 + 3.0 * ln2),
                4.0 * (1.0 + 3.0 * ln2),
                8.0 * ln2 * ln2,
            ],
        ),
        // At a = 0 the exponent does not move: only ∂²/∂x² is left, b(b−1)·0^(b−2).
        ("x**y", [0.0, 0.5], [-inf, 0.0, 0.0, 0.0]),
        ("x**y", [0.0, 2.0], [2.0, 0.0, 0.0, 0.0]),
        ("x**y", [0.0, 1.0], [0.0, 0.0, 0.0, 0.0]),
        // x²y and x³y: [2y, 2x; 2x, 0] and [6xy, 3x²; 3x², 0]. (Text takes only a literal
        // exponent for powi; a graph read from a file may hold a moving one, which the
        // rules hold: `ad::rules`.)
        ("powi(x, 2)*y", [2.0, 3.0], [6.0, 4.0, 4.0, 0.0]),
        ("powi(x, 3)*y", [2.0, 3.0], [36.0, 12.0, 12.0, 0.0]),
    ];
    // Exactly where either is infinite, zero or NaN; within rounding elsewhere (each
    // Hessian row is its own sweep, ARCHITECTURE.md "Second order").
    let same = |a: f64, b: f64| close(a, b, 4);
    for text in texts {
        let base = rt::equation_text(text).unwrap();
        for (engine, eq) in engines(&base) {
            for p in points {
                let h = eq.hessian(&p[..]).unwrap();
                let g = eq.gradient(&p[..]).unwrap();
                let t = eq.derivative_tensor(2, &p[..]).unwrap();
                let at = format!("{text} {engine} at {p:?}: H = {h:?}");
                assert!(same(h[1], h[2]), "{at}: not symmetric");
                // The dense order-2 tensor, row-major like the Hessian.
                assert_eq!(t.len(), 4);
                for k in 0..4 {
                    assert!(same(t[k], h[k]), "{at}: tensor {t:?}");
                }
                for j in 0..2 {
                    let hv = eq.hvp(basis(2, j), &p[..]).unwrap();
                    for i in 0..2 {
                        // Where the Hessian meets a value 0 times an infinite partial
                        // (plain IEEE: NaN), `hvp` along e_j may skip the zero tangent.
                        if !h[i * 2 + j].is_nan() {
                            assert!(same(hv[i], h[i * 2 + j]), "{at}: hvp(e_{j}) = {hv:?}");
                        }
                    }
                    let jv = eq.jvp(basis(2, j), &p[..]).unwrap();
                    // Forward mode skips the zero tangent where reverse meets 0·∞
                    // (`sqrt(x*y)` at an axis): agreement wherever both are numbers.
                    if !g[j].is_nan() {
                        assert!(same(jv[0], g[j]), "{at}: jvp(e_{j}) = {jv:?}, g = {g:?}");
                    }
                }
            }
        }
    }
    for (text, p, want) in closed {
        let eq = rt::equation_text(text).unwrap();
        for (engine, e) in engines(&eq) {
            let h = e.hessian(&p[..]).unwrap();
            for (k, (&got, &w)) in h.iter().zip(&want).enumerate() {
                assert!(
                    close(got, w, 2),
                    "{text} {engine} at {p:?}: H[{k}] = {got}, want {w}"
                );
            }
        }
    }
}

/// A batch longer than one piece of the NaN scan (scanned across threads, the mended
/// points gathered and run as one batch of the twin): every point is the per-point call's.
#[test]
fn a_long_batch_mends_every_point_the_calls_mend() {
    let base = rt::equation_text("c*exp(-d) + c*d").unwrap();
    let p = 40_000;
    let c: Vec<f64> = (0..p).map(|k| 1.0 + (k % 7) as f64).collect();
    // Every third point overflows e^(−d).
    let d: Vec<f64> = (0..p)
        .map(|k| {
            if k % 3 == 0 {
                -800.0
            } else {
                (k % 5) as f64 * 0.25
            }
        })
        .collect();
    for (engine, eq) in engines(&base) {
        for v in [[1.0, 0.0], [0.0, 1.0], [0.5, -2.0]] {
            let (mut f, mut jv) = (vec![0.0; p], vec![0.0; p]);
            eq.jvp_batch(
                &[&c, &d],
                &[&[v[0]], &[v[1]]],
                &mut [&mut f],
                &mut [&mut jv],
            )
            .unwrap();
            let mended = (0..p).filter(|&k| k % 3 == 0).count();
            for k in 0..p {
                let one = eq.jvp(&v[..], [c[k], d[k]]).unwrap();
                assert!(
                    bits_equal(&[jv[k]], &one),
                    "{engine}: point {k} along {v:?}: batch {} vs call {one:?}",
                    jv[k]
                );
            }
            // Along e_c the overflowing points are ∞ (mended), not NaN.
            if v == [1.0, 0.0] {
                assert_eq!(
                    (0..p).filter(|&k| jv[k] == f64::INFINITY).count(),
                    mended,
                    "{engine}"
                );
            }
        }
    }
}
