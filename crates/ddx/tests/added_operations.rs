//! `log1p`, `expm1`, `log2`, `recip` and `powi` (issue 11) in every lane: values and
//! first, second and third derivatives against closed forms (the textbook derivatives,
//! written independently of ddx's rule table), against finite differences of the lane
//! below, and through every call kind; `log1p`/`expm1` near 0 against their power series
//! (the reason to have them); the text grammar, printing and both engines; integer
//! literals on either side of an operator; Taylor coefficients at a run-time order.
//!
//! Power-series references near 0: `log1p(x) = x − x²/2 + x³/3 − …` and
//! `expm1(x) = x + x²/2 + x³/6 + …`, truncated where the next term is below `1e−20`
//! of the first, so each is the true value to within half an ULP before its own rounding.

use ddx::ir::testing::canonical;
use ddx::{rt, Equation, Errc, Error, Expr};

/// `|got − want| ≤ rel·|want|`.
fn close(got: f64, want: f64, rel: f64) -> bool {
    got == want || (got - want).abs() <= rel * want.abs()
}

type Case = (
    &'static str,
    fn(Expr) -> Expr,
    // f, f', f'', f'''
    [fn(f64) -> f64; 4],
    &'static [f64],
);

const LN2: f64 = std::f64::consts::LN_2;

/// (name, ddx op, closed forms f … f''', points).
const CASES: &[Case] = &[
    (
        "log1p",
        Expr::ln_1p,
        [
            f64::ln_1p,
            |x| 1.0 / (1.0 + x),
            |x| -1.0 / ((1.0 + x) * (1.0 + x)),
            |x| 2.0 / ((1.0 + x) * (1.0 + x) * (1.0 + x)),
        ],
        &[-0.75, -0.1, 0.0, 1e-9, 0.5, 3.0, 40.0],
    ),
    (
        "expm1",
        Expr::exp_m1,
        [f64::exp_m1, f64::exp, f64::exp, f64::exp],
        &[-30.0, -1.0, -1e-9, 0.0, 0.25, 2.0, 20.0],
    ),
    (
        "log2",
        Expr::log2,
        [
            f64::log2,
            |x| 1.0 / (x * LN2),
            |x| -1.0 / (x * x * LN2),
            |x| 2.0 / (x * x * x * LN2),
        ],
        &[1e-3, 0.3, 1.0, 2.0, 7.5, 1e6],
    ),
    (
        "recip",
        Expr::recip,
        [
            |x| 1.0 / x,
            |x| -1.0 / (x * x),
            |x| 2.0 / (x * x * x),
            |x| -6.0 / (x * x * x * x),
        ],
        &[-3.0, -0.2, 0.01, 0.5, 1.0, 9.0],
    ),
    (
        "powi 7",
        |x| x.powi(7),
        [
            |x| x.powf(7.0),
            |x| 7.0 * x.powf(6.0),
            |x| 42.0 * x.powf(5.0),
            |x| 210.0 * x.powf(4.0),
        ],
        &[-2.0, -0.3, 0.0, 0.7, 1.5],
    ),
    (
        "powi 2",
        |x| x.powi(2),
        [|x| x * x, |x| 2.0 * x, |_| 2.0, |_| 0.0],
        &[-2.0, 0.0, 0.7, 3.0],
    ),
    (
        "powi -3",
        |x| x.powi(-3),
        [
            |x| x.powf(-3.0),
            |x| -3.0 * x.powf(-4.0),
            |x| 12.0 * x.powf(-5.0),
            |x| -60.0 * x.powf(-6.0),
        ],
        &[-2.0, -0.3, 0.7, 1.5, 10.0],
    ),
];

fn unary(f: fn(Expr) -> Expr) -> Equation {
    rt::equation(|| f(rt::var("x"))).expect("builds")
}

/// Every lane of every case against the closed forms, to a few ULP.
#[test]
fn every_lane_against_closed_forms() {
    for &(name, op, forms, points) in CASES {
        let eq = unary(op);
        for &x in points {
            let want: Vec<f64> = forms.iter().map(|f| f(x)).collect();
            let v = eq.evaluate(x).unwrap();
            assert!(
                close(v, want[0], 4e-16),
                "{name}({x}) = {v}, want {}",
                want[0]
            );
            let checks = [
                ("gradient", eq.gradient(x).unwrap()[0], want[1]),
                ("jacobian", eq.jacobian(x).unwrap()[0], want[1]),
                ("jvp", eq.jvp([1.0], x).unwrap()[0], want[1]),
                ("vjp", eq.vjp(&[1.0], x).unwrap()[0], want[1]),
                ("hessian", eq.hessian(x).unwrap()[0], want[2]),
                ("hvp", eq.hvp([2.0], x).unwrap()[0], 2.0 * want[2]),
            ];
            for (lane, got, w) in checks {
                assert!(
                    close(got, w, 1e-15),
                    "{name} {lane} at {x}: {got}, want {w}"
                );
            }
            let taylor = eq.univariate_derivatives(3, x).unwrap();
            for k in 0..4 {
                assert!(
                    close(taylor[k], want[k], 1e-14),
                    "{name} Taylor K = {k} at {x}: {}, want {}",
                    taylor[k],
                    want[k]
                );
            }
        }
    }
}

/// The Hessian is the derivative of the gradient lane, the gradient that of the value
/// lane: sixth-order central differences, away from 0 for `log2`/`recip`.
#[test]
fn derivatives_against_finite_differences() {
    let fd6 = |f: &dyn Fn(f64) -> f64, x: f64| {
        let h = 1e-3 * x.abs().max(1.0);
        let d = |k: f64| f(x + k * h) - f(x - k * h);
        (45.0 * d(1.0) - 9.0 * d(2.0) + d(3.0)) / (60.0 * h)
    };
    for &(name, op, _, points) in CASES {
        let eq = unary(op);
        for &x in points.iter().filter(|x| x.abs() > 0.2 && x.abs() < 50.0) {
            let g = eq.gradient(x).unwrap()[0];
            let h = eq.hessian(x).unwrap()[0];
            let fg = fd6(&|t| eq.evaluate(t).unwrap(), x);
            let fh = fd6(&|t| eq.gradient(t).unwrap()[0], x);
            assert!(
                close(g, fg, 1e-8) || (g - fg).abs() < 1e-9,
                "{name}' at {x}"
            );
            assert!(
                close(h, fh, 1e-7) || (h - fh).abs() < 1e-8,
                "{name}'' at {x}"
            );
        }
    }
}

/// `log1p(x) ≈ x − x²/2 + x³/3` and `expm1(x) ≈ x + x²/2 + x³/6` for tiny `x`.
fn log1p_series(x: f64) -> f64 {
    x - x * x / 2.0 + x * x * x / 3.0
}
fn expm1_series(x: f64) -> f64 {
    x + x * x / 2.0 + x * x * x / 6.0
}

/// Near 0 the two keep every digit, where `log(1 + x)` and `exp(x) − 1` keep none or few;
/// so do their derivatives and Taylor coefficients.
#[test]
fn log1p_and_expm1_are_accurate_near_zero() {
    let log1p = unary(Expr::ln_1p);
    let expm1 = unary(Expr::exp_m1);
    let naive_log = rt::equation_text("log(1 + x)").unwrap();
    let naive_exp = rt::equation_text("exp(x) - 1").unwrap();
    for x in [1e-7, -3.3e-9, 1e-12, -1e-15, 2.5e-17, 1e-300, 5e-324] {
        let l = log1p.evaluate(x).unwrap();
        let e = expm1.evaluate(x).unwrap();
        assert!(close(l, log1p_series(x), 2.3e-16), "log1p({x}) = {l}");
        assert!(close(e, expm1_series(x), 2.3e-16), "expm1({x}) = {e}");
        // What the textbook spellings lose (at least 7 digits from 1e−9 down).
        if x.abs() < 1e-8 {
            let nl = naive_log.evaluate(x).unwrap();
            let ne = naive_exp.evaluate(x).unwrap();
            assert!(!close(nl, l, 1e-9) && !close(ne, e, 1e-9), "{x}: {nl} {ne}");
        }
        // Derivatives: 1/(1 + x) ≈ 1 − x + x², −1/(1 + x)² ≈ −(1 − 2x + 3x²);
        // exp(x) ≈ 1 + x + x²/2.
        // (1 + x rounds once, the quotient once, the reference once: 3 half-ULPs.)
        let g = log1p.gradient(x).unwrap()[0];
        assert!(close(g, 1.0 - x + x * x, 3.4e-16), "log1p'({x}) = {g}");
        let h = -(1.0 - 2.0 * x + 3.0 * x * x);
        assert!(close(log1p.hessian(x).unwrap()[0], h, 5.6e-16));
        let ex = 1.0 + x + x * x / 2.0;
        assert!(close(expm1.gradient(x).unwrap()[0], ex, 2.3e-16));
        assert!(close(expm1.hessian(x).unwrap()[0], ex, 2.3e-16));
    }
    // Taylor coefficients at 0: log1p has (−1)^(k+1)/k, expm1 has 1/k! (k ≥ 1).
    let l = log1p.taylor_coefficients(12, 0.0).unwrap();
    let e = expm1.taylor_coefficients(12, 0.0).unwrap();
    let mut fact = 1.0;
    for k in 1..=12 {
        fact *= k as f64;
        let sign = if k % 2 == 1 { 1.0 } else { -1.0 };
        assert!(close(l[k], sign / k as f64, 1e-15), "log1p c{k} = {}", l[k]);
        assert!(close(e[k], 1.0 / fact, 1e-15), "expm1 c{k} = {}", e[k]);
    }
    assert_eq!((l[0], e[0]), (0.0, 0.0));
    // At a tiny x0 the series keeps the digits of x0 in c₀ and the 1 − x0 in c₁.
    let x0 = 1e-13;
    let l = log1p.taylor_coefficients(2, x0).unwrap();
    assert!(close(l[0], log1p_series(x0), 2.3e-16) && close(l[1], 1.0 - x0, 2.3e-16));
    // expm1 far below 0: the derivative exp(x) keeps its digits where expm1 is −1.
    let far = expm1.gradient(-50.0).unwrap()[0];
    assert!(close(far, (-50.0f64).exp(), 1e-15), "{far}");
}

/// `powi` is binary powering in every lane: exact where the products are exact, and with
/// no singular point at 0 for a natural exponent at any order.
#[test]
fn powi_at_zero_and_in_extremes() {
    let p5 = unary(|x| x.powi(5));
    assert_eq!(p5.evaluate(0.0).unwrap(), 0.0);
    assert_eq!(p5.gradient(0.0).unwrap(), [0.0]);
    assert_eq!(p5.hessian(0.0).unwrap(), [0.0]);
    let d = p5.univariate_derivatives(7, 0.0).unwrap();
    assert_eq!(d, [0.0, 0.0, 0.0, 0.0, 0.0, 120.0, 0.0, 0.0]);
    // 3⁵ exactly, and the derivatives 5·3⁴, 20·3³, 60·3².
    assert_eq!(p5.evaluate(3.0).unwrap(), 243.0);
    assert_eq!(p5.gradient(3.0).unwrap(), [405.0]);
    assert_eq!(p5.hessian(3.0).unwrap(), [540.0]);
    assert_eq!(
        p5.univariate_derivatives(6, 3.0).unwrap(),
        [243.0, 405.0, 540.0, 540.0, 360.0, 120.0, 0.0]
    );
    // A negative exponent has its pole at 0, as 1/x³: values and derivatives are IEEE's.
    let m1 = unary(|x| x.powi(-1));
    let r = unary(Expr::recip);
    for x in [0.3, -7.0, 1e-300, 1e300] {
        assert_eq!(
            m1.evaluate(x).unwrap().to_bits(),
            r.evaluate(x).unwrap().to_bits()
        );
    }
    // powi(x, 0) is 1 and powi(x, 1) is x, as graphs.
    let zero = rt::equation(|| rt::var("x").powi(0) + rt::var("x")).unwrap();
    let plain = rt::equation(|| 1.0 + rt::var("x")).unwrap();
    assert_eq!(canonical(zero.model()), canonical(plain.model()));
    let one = rt::equation(|| rt::var("x").powi(1) * 2.0).unwrap();
    let plain = rt::equation(|| rt::var("x") * 2.0).unwrap();
    assert_eq!(canonical(one.model()), canonical(plain.model()));
    // The exponent is never differentiated, so text refuses a symbol there (it would get a
    // partial of 0 silently) and points to `pow`.
    let e = rt::equation_text("powi(x, n)").unwrap_err();
    assert_eq!(e.code(), Errc::BadSyntax);
    assert!(e.to_string().contains("pow(a, n)"), "{e}");
}

/// The text grammar spells every new operation, printing parses back to the same graph,
/// and Graphviz names them.
#[test]
fn text_printing_and_graphviz() {
    let text = "log1p(x*y) + expm1(x - y)*log2(y) - recip(x + 2) + powi(x, 7) - powi(y, -2)";
    let eq = rt::equation_text(text).unwrap();
    let closure = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        ddx::log1p(x * y) + ddx::expm1(x - y) * ddx::log2(y) - ddx::recip(x + 2.0) + ddx::powi(x, 7)
            - y.powi(-2)
    })
    .unwrap();
    assert_eq!(canonical(eq.model()), canonical(closure.model()));
    let printed = eq.to_string();
    let first = printed.lines().next().unwrap().trim_start();
    let again = rt::equation_text(first.strip_prefix("f0: ").unwrap()).unwrap();
    assert_eq!(canonical(again.model()), canonical(eq.model()));
    for line in printed.lines() {
        let (_, row) = line.trim_start().split_once(": ").unwrap();
        let back = rt::equation_text(row).unwrap();
        assert_eq!(
            back.to_string().lines().next().unwrap(),
            format!("f0: {row}")
        );
    }
    let dot = eq.to_dot(true);
    for name in ["log1p", "expm1", "log2", "recip", "powi"] {
        assert!(dot.contains(name), "{name} missing from\n{dot}");
        assert!(printed.contains(name), "{name} missing from\n{printed}");
    }
    // Misspellings are still refused with a suggestion.
    let err = rt::equation_text("log1q(x)").unwrap_err();
    assert_eq!(err.code(), Errc::UnknownFunction, "{err}");
}

/// Integer literals mix on either side, as `f64` ones do, and build the same graph.
#[test]
#[allow(clippy::op_ref)]
fn integer_literals_on_either_side() {
    let ints = rt::equation(|| {
        let x = rt::var("x");
        let mut y = 2 * x + x * 3 - 1 / x + (4 - x) / 5;
        y += 1;
        y *= 2;
        y -= 7;
        y /= 3;
        y
    })
    .unwrap();
    let floats = rt::equation(|| {
        let x = rt::var("x");
        let mut y = 2.0 * x + x * 3.0 - 1.0 / x + (4.0 - x) / 5.0;
        y += 1.0;
        y *= 2.0;
        y -= 7.0;
        y /= 3.0;
        y
    })
    .unwrap();
    assert_eq!(canonical(ints.model()), canonical(floats.model()));
    assert_eq!(
        ints.evaluate(2.0).unwrap(),
        ((4.0 + 6.0 - 0.5 + 0.4 + 1.0) * 2.0 - 7.0) / 3.0
    );
}

/// Taylor coefficients at a run-time order: one sweep answers every order up to K, each
/// the const-generic call's bits; exp(2x) has 2ᵏ/k!.
#[test]
fn taylor_coefficients_at_a_run_time_order() {
    let eq = rt::equation_text("exp(2*x) * log1p(x)").unwrap();
    let x0 = 0.3;
    let all = eq.univariate_derivatives(6, x0).unwrap();
    let each = [
        eq.univariate_derivative::<0>(x0).unwrap(),
        eq.univariate_derivative::<1>(x0).unwrap(),
        eq.univariate_derivative::<2>(x0).unwrap(),
        eq.univariate_derivative::<3>(x0).unwrap(),
        eq.univariate_derivative::<4>(x0).unwrap(),
        eq.univariate_derivative::<5>(x0).unwrap(),
        eq.univariate_derivative::<6>(x0).unwrap(),
    ];
    for k in 0..=6 {
        assert_eq!(all[k].to_bits(), each[k].to_bits(), "K = {k}");
        let dynamic = eq.univariate_derivative_of_order(k, x0).unwrap();
        assert_eq!(dynamic.to_bits(), each[k].to_bits(), "K = {k}");
    }
    // The gradient lane's arithmetic differs (its rule graph, not the series).
    assert!(close(all[1], eq.gradient(x0).unwrap()[0], 1e-15));
    let e = rt::equation_text("exp(2*x)").unwrap();
    let c = e.taylor_coefficients(20, 0.0).unwrap();
    let mut want = 1.0;
    for (k, ck) in c.iter().enumerate() {
        if k > 0 {
            want *= 2.0 / k as f64;
        }
        assert!(close(*ck, want, 1e-15), "c{k} = {ck}, want {want}");
    }
    // Coefficients stay finite where the derivatives overflow: 1/(1 − 2x) at 0 has
    // c_k = 2ᵏ (exact), while the derivative 2¹⁷⁰·170! ≈ 1.1e358 is past f64.
    let big = rt::equation_text("1/(1 - 2*x)").unwrap();
    let c = big.taylor_coefficients(170, 0.0).unwrap();
    for (k, ck) in c.iter().enumerate() {
        assert_eq!(*ck, 2f64.powi(k as i32), "c{k}");
    }
    assert_eq!(
        big.univariate_derivative_of_order(170, 0.0).unwrap(),
        f64::INFINITY
    );
    // The bounds and shapes are checked as for the const-generic call.
    assert!(matches!(
        eq.taylor_coefficients(171, x0),
        Err(Error::OrderTooHigh { order: 171, .. })
    ));
    let two = rt::equation_text("x*y").unwrap();
    assert!(matches!(
        two.univariate_derivatives(2, 1.0),
        Err(Error::NotUnivariate { .. })
    ));
}

/// Both engines answer every call kind with the same bits on a model of the new
/// operations.
#[cfg(feature = "jit")]
#[test]
fn the_compiled_kernels_agree_to_the_bit() {
    use ddx::{Backend, LaneKind, Options};
    let build = || {
        rt::equation_text(
            "log1p(x*y) + expm1(x - y)*log2(y) - recip(x + 2) + powi(x, 7) - powi(y, -2) \
             + powi(x, 2) * powi(y, 0) + powi(x, -1)",
        )
        .unwrap()
    };
    let oracle = build();
    let mut eq = build();
    eq.set_options(Options::with_backend(Backend::Compile));
    for kind in LaneKind::ALL {
        assert!(
            eq.wait_for_kernel_of(kind),
            "{kind:?}: {:?}",
            eq.jit_status()
        );
    }
    let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
    for p in [
        [0.3, 1.7],
        [-0.4, 0.2],
        [2.5, 1e-3],
        [0.0, 3.0],
        [-1.5, 1e8],
    ] {
        assert_eq!(
            eq.evaluate(p).unwrap().to_bits(),
            oracle.evaluate(p).unwrap().to_bits()
        );
        assert_eq!(
            bits(eq.jacobian(p).unwrap()),
            bits(oracle.jacobian(p).unwrap())
        );
        assert_eq!(
            bits(eq.gradient(p).unwrap()),
            bits(oracle.gradient(p).unwrap())
        );
        let v = [0.5, -2.0];
        assert_eq!(bits(eq.jvp(v, p).unwrap()), bits(oracle.jvp(v, p).unwrap()));
        assert_eq!(
            bits(eq.vjp(&[3.0], p).unwrap()),
            bits(oracle.vjp(&[3.0], p).unwrap())
        );
        assert_eq!(
            bits(eq.hessian(p).unwrap()),
            bits(oracle.hessian(p).unwrap())
        );
        assert_eq!(bits(eq.hvp(v, p).unwrap()), bits(oracle.hvp(v, p).unwrap()));
    }
}
