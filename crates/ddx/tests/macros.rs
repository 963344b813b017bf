//! `#[ddx::derivatives]` against the run-time equation for the same expression, bit for
//! bit: value, gradient, Hessian and derivative tensors over the operation table and the
//! conventions' special points; the specification's compile-time examples; a gradient
//! checked by the compiler in a `const` item; one-symbol derivatives against closed forms.

#![cfg(feature = "macros")]

use ddx::{rt, select, Expr};

// The specification's example: `static_assert(g[0] == 5.0)`, checked by the compiler.
#[ddx::derivatives]
fn spec(x: f64, y: f64) -> f64 {
    x * y + 2.0 * x
}
const G: [f64; 2] = spec::gradient(2.0, 3.0);
const _: () = assert!(G[0] == 5.0, "∂f/∂x");
const _: () = assert!(G[1] == 2.0, "∂f/∂y");

#[ddx::derivatives]
fn ab(a: f64, b: f64) -> f64 {
    a * b
}
const H: [[f64; 2]; 2] = ab::hessian(2.0, 3.0);
const _: () = assert!(H[0][1] == 1.0);

#[test]
fn the_specifications_compile_time_examples() {
    assert_eq!(spec(2.0, 3.0), 10.0);
    assert_eq!(spec::value(2.0, 3.0), 10.0);
    assert_eq!(spec::SYMBOLS, ["x", "y"]);
    assert_eq!(G, [5.0, 2.0]);
    assert_eq!(H, [[0.0, 1.0], [1.0, 0.0]]);
    // `Equation{x * y}.derivative_tensor<3>(1.0, 2.0)`: rank 3, all zero.
    let t: [[[f64; 2]; 2]; 2] = ab::derivative_tensor::<3>(1.0, 2.0);
    assert_eq!(t, [[[0.0; 2]; 2]; 2]);
    assert_eq!(ab::derivative_tensor::<1>(1.0, 2.0), [2.0, 1.0]);
}

// Parameters declared out of order: results are in byte order of the names.
#[ddx::derivatives(order = 2)]
#[allow(non_snake_case)]
fn reversed(y: f64, x: f64, B: f64) -> f64 {
    x * x * y + B
}

#[test]
fn symbols_are_in_byte_order_of_names() {
    assert_eq!(reversed::SYMBOLS, ["B", "x", "y"]);
    // ∂/∂B = 1, ∂/∂x = 2xy, ∂/∂y = x² at (y, x, B) = (3, 2, 7).
    assert_eq!(reversed::gradient(3.0, 2.0, 7.0), [1.0, 12.0, 4.0]);
}

/// Bits equal, any NaN matching any NaN.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

const SPECIAL: [f64; 12] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    2.0,
    -2.5,
    3.0,
    0.1,
    f64::INFINITY,
    f64::NAN,
    1e-300,
];

/// One macro function per case and the run-time equation of the same body; compares
/// value, gradient, Hessian and the order-2 and order-3 tensors at every pair of
/// special points.
macro_rules! against_runtime {
    ($($name:ident: |$x:ident, $y:ident| $body:expr;)*) => {$(
        #[allow(non_snake_case, unused_variables)]
        mod $name {
            #[ddx::derivatives(order = 3)]
            pub fn f($x: f64, $y: f64) -> f64 {
                $body
            }
        }
    )*
        #[test]
        fn macro_results_are_the_interpreters_bits_over_the_operation_table() {
            let mut compared = 0usize;
            $(
                let eq = rt::equation(|| {
                    let $x = rt::var(stringify!($x));
                    let $y = rt::var(stringify!($y));
                    #[allow(unused_imports)]
                    use ddx::*;
                    Expr::from($body)
                })
                .expect(stringify!($name));
                let name = stringify!($name);
                let n = eq.arity();
                for &a in &SPECIAL {
                    for &b in &SPECIAL {
                        let p = [a, b];
                        let here = |what: &str| format!("{name} {what} at {p:?}");
                        // Every case uses both symbols, `x` before `y` in byte order.
                        assert_eq!(n, 2);
                        let point = p;
                        let v = eq.evaluate(point).unwrap();
                        assert!(same($name::f(a, b), v), "{}", here("value"));
                        let g = eq.gradient(point).unwrap();
                        let gm = $name::f::gradient(a, b);
                        for j in 0..2 { assert!(same(gm[j], g[j]), "{}: {gm:?} vs {g:?}", here("gradient")); }
                        let h = eq.hessian(point).unwrap();
                        let hm = $name::f::hessian(a, b);
                        for i in 0..2 { for j in 0..2 {
                            assert!(same(hm[i][j], h[i * 2 + j]), "{}: {hm:?} vs {h:?}", here("hessian"));
                        } }
                        let t2 = eq.derivative_tensor(2, point).unwrap();
                        let t2m = $name::f::derivative_tensor::<2>(a, b);
                        for i in 0..2 { for j in 0..2 {
                            assert!(same(t2m[i][j], t2[i * 2 + j]), "{}", here("tensor 2"));
                        } }
                        let t3 = eq.derivative_tensor(3, point).unwrap();
                        let t3m = $name::f::derivative_tensor::<3>(a, b);
                        for i in 0..2 { for j in 0..2 { for k in 0..2 {
                            assert!(same(t3m[i][j][k], t3[i * 4 + j * 2 + k]), "{}", here("tensor 3"));
                        } } }
                        compared += 1;
                    }
                }
            )*
            assert!(compared > 1000, "{compared}");
        }
    };
}

against_runtime! {
    arith: |x, y| (x + y) * (x - y) / (x * y) - -x;
    trig: |x, y| x.sin() * y.cos() + (x * y).tan();
    exp_log: |x, y| x.exp() + y.ln() + (x * y).log10();
    roots: |x, y| x.sqrt() * y.cbrt() + (x * x + y).sqrt();
    kinks: |x, y| x.abs() * y + x.sign() + x.max(y) - x.min(y * 2.0);
    inverse_trig: |x, y| x.asin() + y.acos() + (x * y).atan();
    hyperbolic: |x, y| x.sinh() * y.cosh() + (x - y).tanh();
    inverse_hyperbolic: |x, y| x.asinh() + y.acosh() + (x * 0.5).atanh();
    error_function: |x, y| (x * y).erf() + x;
    powers: |x, y| x.powf(y) + x.powf(2.0) + y.powf(0.5) + x.powf(-1.0) + x.powf(3.0);
    binary: |x, y| x.atan2(y) + x.hypot(y);
    comparisons: |x, y| x.lt(y) * x + x.le(y) * y + x.gt(y) + x.ge(y) * x * y + x.eq(y) + x.ne(y) * y;
    selects: |x, y| select(x.lt(y), (x - y).sqrt(), y * y * x) + select(x, y.ln(), x);
}

// A one-symbol function: univariate derivatives against closed forms.
#[ddx::derivatives(order = 4)]
fn exp_sin(x: f64) -> f64 {
    x.exp() * x.sin()
}

#[test]
fn univariate_derivatives_against_closed_forms() {
    // dᵏ/dxᵏ eˣ sin x = 2^{k/2} eˣ sin(x + kπ/4).
    for x in [-1.3f64, 0.0, 0.4, 2.1] {
        let closed = |k: i32| {
            2f64.powf(k as f64 / 2.0) * x.exp() * (x + k as f64 * std::f64::consts::FRAC_PI_4).sin()
        };
        let got = [
            exp_sin::univariate_derivative::<0>(x),
            exp_sin::univariate_derivative::<1>(x),
            exp_sin::univariate_derivative::<2>(x),
            exp_sin::univariate_derivative::<3>(x),
            exp_sin::univariate_derivative::<4>(x),
        ];
        for (k, g) in got.iter().enumerate() {
            let want = closed(k as i32);
            assert!(
                (g - want).abs() <= 1e-14 * (1.0 + want.abs()),
                "k={k} x={x}: {g} vs {want}"
            );
        }
        // The run-time Taylor sweep (another method) agrees to rounding.
        let eq = rt::equation(|| {
            let x = rt::var("x");
            x.exp() * x.sin()
        })
        .unwrap();
        let taylor = eq.univariate_derivative::<4>(x).unwrap();
        assert!((taylor - got[4]).abs() <= 1e-13 * (1.0 + taylor.abs()));
        // And the run-time tensor is the same pass: the same bits.
        assert_eq!(
            eq.derivative_tensor(4, [x]).unwrap()[0].to_bits(),
            got[4].to_bits()
        );
    }
}

// Statements, loops and `if`: the same graph as the closure that does the same.
#[ddx::derivatives(order = 2)]
fn statements(x: f64, y: f64) -> f64 {
    let mut s = 0.0;
    for i in 1..=3 {
        s += (i as f64) * x.powi(2) / y;
    }
    let r = if s > 1.0 { s - 1.0 } else { 1.0 - s };
    r * std::f64::consts::PI
}

#[test]
fn statements_and_loops_build_the_runtime_graph() {
    let eq = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        let mut s = Expr::from(0.0);
        for i in 1..=3 {
            s += (i as f64) * x.powf(2.0) / y;
        }
        let r = select(s.gt(1.0), s - 1.0, 1.0 - s);
        r * std::f64::consts::PI
    })
    .unwrap();
    for p in [[0.3, 2.0], [1.5, 0.5], [-2.0, 3.0]] {
        assert_eq!(
            statements(p[0], p[1]).to_bits(),
            eq.evaluate(p).unwrap().to_bits()
        );
        let g = eq.gradient(p).unwrap();
        assert_eq!(
            statements::gradient(p[0], p[1]).map(f64::to_bits),
            [g[0].to_bits(), g[1].to_bits()]
        );
    }
}
