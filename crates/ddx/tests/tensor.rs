//! `derivative_tensor(k, point)`: k = 1, 2 against `gradient`, `hvp_along` and `hessian`;
//! k = 3, 4 against closed forms and against `univariate_derivative` along basis
//! vectors; exact symmetry of mixed partials; the size limit; the batch form against the
//! per-point call.

mod common;

use common::{point, random_model, Rng};
use ddx::{rt, Errc, Expr};

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn order_one_is_the_gradient_and_order_two_the_hessian() {
    let mut rng = Rng::new(3);
    for seed in 0..24 {
        let eq = random_model(seed, 3, 14, seed % 2 == 0);
        let n = eq.arity();
        let x = point(&mut rng, n);
        let g = eq.gradient(&x[..]).unwrap();
        let t1 = eq.derivative_tensor(1, &x[..]).unwrap();
        // The same reverse sweep: the same bits.
        assert_eq!(
            t1.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            g.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "seed {seed}"
        );
        let t2 = eq.derivative_tensor(2, &x[..]).unwrap();
        let h = eq.hessian(&x[..]).unwrap();
        for j in 0..n {
            // The hvp pass along e_j, with numeric seeds rather than structural ones: a
            // graph of other sums, so equal to rounding.
            let col = eq.hvp_along(j, &x[..]).unwrap();
            for i in 0..n {
                let t = t2[i * n + j];
                assert!(
                    close(t, col[i], 1e-12) || (t.is_nan() && col[i].is_nan()),
                    "seed {seed} ({i},{j}): {t} vs hvp {}",
                    col[i]
                );
                assert!(
                    close(t, h[i * n + j], 1e-12) || (t.is_nan() && h[i * n + j].is_nan()),
                    "seed {seed} ({i},{j}): {t} vs hessian {}",
                    h[i * n + j]
                );
            }
        }
    }
}

/// f = x²·y³ + sin(x)·z + exp(y·z), and its partials of orders 3 and 4 in closed form.
fn closed_form() -> ddx::Equation {
    rt::equation(|| {
        let (x, y, z) = (rt::var("x"), rt::var("y"), rt::var("z"));
        x * x * y.powf(3.0) + x.sin() * z + (y * z).exp()
    })
    .unwrap()
}

#[test]
fn orders_three_and_four_against_closed_forms() {
    let eq = closed_form();
    let (x, y, z) = (0.7, -1.3, 0.4);
    let t3 = eq.derivative_tensor(3, [x, y, z]).unwrap();
    let at3 = |i: usize, j: usize, k: usize| t3[(i * 3 + j) * 3 + k];
    let e = (y * z).exp();
    // ∂³/∂x³ = −cos x·z; ∂³/∂x²∂y = 6y²; ∂³/∂x∂y² = 12xy; ∂³(x²y³)/∂y³ = 6x².
    let want3 = [
        ((0, 0, 0), -x.cos() * z),
        ((0, 0, 1), 6.0 * y * y),
        ((0, 1, 1), 12.0 * x * y),
        ((1, 1, 1), 6.0 * x * x + z * z * z * e),
        ((0, 0, 2), -x.sin()),
        ((0, 1, 2), 0.0),
        ((1, 1, 2), (2.0 * z + y * z * z) * e),
        ((1, 2, 2), (2.0 * y + y * y * z) * e),
        ((2, 2, 2), y * y * y * e),
        ((0, 2, 2), 0.0),
    ];
    for ((i, j, k), w) in want3 {
        assert!(
            close(at3(i, j, k), w, 1e-13),
            "({i},{j},{k}): {} vs {w}",
            at3(i, j, k)
        );
    }
    let t4 = eq.derivative_tensor(4, [x, y, z]).unwrap();
    let at4 = |i: usize, j: usize, k: usize, l: usize| t4[((i * 3 + j) * 3 + k) * 3 + l];
    let want4 = [
        ((0, 0, 0, 0), x.sin() * z),
        ((0, 0, 1, 1), 12.0 * y),
        ((0, 1, 1, 1), 12.0 * x),
        ((0, 0, 0, 2), -x.cos()),
        ((2, 2, 2, 2), y.powi(4) * e),
        ((1, 1, 2, 2), (2.0 + 4.0 * y * z + y * y * z * z) * e),
        ((0, 0, 1, 2), 0.0),
    ];
    for ((i, j, k, l), w) in want4 {
        assert!(
            close(at4(i, j, k, l), w, 1e-13),
            "({i},{j},{k},{l}): {} vs {w}",
            at4(i, j, k, l)
        );
    }
}

type Body = fn(&[Expr]) -> Expr;

const BODIES: [Body; 3] = [
    |v| v[0] * v[0] * v[1].powf(3.0) + v[0].sin() * v[2] + (v[1] * v[2]).exp(),
    |v| v[0].atan2(v[1]) * v[2].tanh() + (v[0] * v[1] * v[2]).cos(),
    |v| (v[0] * v[0] + v[1] * v[1] + 1.0).sqrt() / (1.0 + v[2].exp()) + v[0].ln() * v[1],
];

#[test]
fn diagonals_against_univariate_derivative_along_basis_vectors() {
    let x = [0.8, -0.6, 1.1];
    for (b, body) in BODIES.iter().enumerate() {
        let eq = rt::equation(|| body(&[rt::var("x"), rt::var("y"), rt::var("z")])).unwrap();
        for j in 0..3 {
            // The function of x_j alone, the other symbols fixed at the point.
            let line = rt::equation(|| {
                let t = rt::var("t");
                let v: Vec<Expr> = (0..3)
                    .map(|s| if s == j { t } else { Expr::from(x[s]) })
                    .collect();
                body(&v)
            })
            .unwrap();
            for k in [3usize, 4] {
                let t = eq.derivative_tensor(k, x).unwrap();
                let diag = (0..k).fold(0, |d, _| d * 3 + j);
                let u = match k {
                    3 => line.univariate_derivative::<3>(x[j]).unwrap(),
                    _ => line.univariate_derivative::<4>(x[j]).unwrap(),
                };
                assert!(
                    close(t[diag], u, 1e-12),
                    "body {b} j={j} k={k}: {} vs Taylor {u}",
                    t[diag]
                );
            }
        }
    }
}

#[test]
fn mixed_partials_are_exactly_symmetric() {
    let eq = closed_form();
    let t = eq.derivative_tensor(3, [0.3, 0.9, -0.2]).unwrap();
    for i in 0..3 {
        for j in 0..3 {
            for k in 0..3 {
                let v = t[(i * 3 + j) * 3 + k].to_bits();
                for (a, b, c) in [(i, k, j), (j, i, k), (j, k, i), (k, i, j), (k, j, i)] {
                    assert_eq!(v, t[(a * 3 + b) * 3 + c].to_bits());
                }
            }
        }
    }
}

#[test]
fn sizes_and_orders_past_the_limits_are_refused() {
    let eq = rt::equation(|| (0..40).map(|i| rt::var(&format!("x{i:02}"))).sum::<Expr>()).unwrap();
    let x = vec![1.0; 40];
    assert_eq!(
        eq.derivative_tensor(5, &x[..]).unwrap_err().code(),
        Errc::TooLarge
    );
    let zero = eq.derivative_tensor(0, &x[..]).unwrap_err();
    assert_eq!(zero.code(), Errc::OrderTooHigh);
    // Order 0 is named as what it is, not as too high.
    assert!(
        zero.to_string().contains("order 0") && zero.to_string().contains("use `value`"),
        "{zero}"
    );
    // The refused size is the true one (40⁵ = 102 400 000), past `usize` too: 4096⁸ = 2⁹⁶.
    let five = eq.derivative_tensor(5, &x[..]).unwrap_err();
    assert!(five.to_string().contains(" 102400000 values"), "{five}");
    let wide = rt::equation(|| {
        (0..1 << 12)
            .map(|i| rt::var(&format!("x{i:04}")))
            .sum::<Expr>()
    })
    .unwrap();
    let big = wide.tensor_columns(8).unwrap_err();
    let want = 1u128 << 96;
    assert!(
        big.to_string().contains(&format!(" {want} values")),
        "{big}"
    );
    // The advice is the tensor's (a fixed limit), not `answer_limit`'s (tester 38); past
    // `u128` the size is named as such.
    assert!(big.to_string().contains("MAX_TENSOR_VALUES"), "{big}");
    assert!(!big.to_string().contains("answer_limit"), "{big}");
    let huge = wide.tensor_columns(12).unwrap_err();
    assert!(
        huge.to_string().contains("more than 3.4e38 values"),
        "{huge}"
    );
    assert_eq!(
        eq.derivative_tensor(ddx::MAX_TENSOR_ORDER + 1, &x[..])
            .unwrap_err()
            .code(),
        Errc::OrderTooHigh
    );
    assert_eq!(eq.derivative_tensor(2, &x[..]).unwrap(), vec![0.0; 1600]);
}

#[test]
fn the_batch_form_answers_the_per_point_bits() {
    let eq = closed_form();
    let mut rng = Rng::new(5);
    let points: Vec<Vec<f64>> = (0..37).map(|_| point(&mut rng, 3)).collect();
    let xs: Vec<Vec<f64>> = (0..3)
        .map(|s| points.iter().map(|p| p[s]).collect())
        .collect();
    let xs: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let cols = eq.tensor_columns(3).unwrap();
    assert_eq!(cols, 27);
    let mut out = vec![vec![f64::NAN; points.len()]; cols];
    let mut refs: Vec<&mut [f64]> = out.iter_mut().map(Vec::as_mut_slice).collect();
    eq.derivative_tensor_batch(3, &xs, &mut refs).unwrap();
    for (k, p) in points.iter().enumerate() {
        let t = eq.derivative_tensor(3, &p[..]).unwrap();
        for (c, v) in t.iter().enumerate() {
            assert_eq!(v.to_bits(), out[c][k].to_bits(), "point {k} column {c}");
        }
    }
    // A wrong column count writes nothing.
    let mut short: Vec<&mut [f64]> = out.iter_mut().take(26).map(Vec::as_mut_slice).collect();
    assert_eq!(
        eq.derivative_tensor_batch(3, &xs, &mut short)
            .unwrap_err()
            .code(),
        Errc::WrongColumnCount
    );
}
