//! Deep machine-written text end to end (issue 21): a Horner polynomial of degree 10⁴
//! (2·10⁴ levels of nesting) through the parser, every lane and both engines, printing,
//! parsing again and the archive; references by direct summation of the power series,
//! which shares nothing with the nested form.

use ddx::ir::testing::canonical;
use ddx::ir::text::{infix, MAX_DEPTH};
use ddx::{rt, Equation};

const DEGREE: usize = 10_000;

/// Coefficient `k` of the polynomial: small integers of both signs.
fn coefficient(k: usize) -> f64 {
    ((k * 7 + 3) % 11) as f64 - 5.0
}

/// `c₀ + x*(c₁ + x*(c₂ + … x*(c_d)…))`.
fn horner(degree: usize) -> String {
    let mut s = String::new();
    for k in 0..degree {
        s.push_str(&format!("{} + x*(", coefficient(k)));
    }
    s.push_str(&format!("{}", coefficient(degree)));
    s.push_str(&")".repeat(degree));
    s
}

/// `Σ c_k · k(k−1)…(k−j+1) · x^(k−j)`: the `j`-th derivative summed term by term.
fn series(x: f64, j: usize) -> f64 {
    (j..=DEGREE)
        .map(|k| {
            let falling: f64 = (0..j).map(|i| (k - i) as f64).product();
            coefficient(k) * falling * x.powi((k - j) as i32)
        })
        .sum()
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-12 * want.abs().max(1.0)
}

fn check(eq: &Equation, x: f64) {
    let (f, d1, d2, d3) = (series(x, 0), series(x, 1), series(x, 2), series(x, 3));
    assert!(close(eq.evaluate(x).unwrap(), f), "value");
    assert!(close(eq.gradient(x).unwrap()[0], d1), "gradient");
    assert!(close(eq.jacobian(x).unwrap()[0], d1), "jacobian");
    assert!(close(eq.jvp([1.0], x).unwrap()[0], d1), "jvp");
    assert!(close(eq.vjp(&[1.0], x).unwrap()[0], d1), "vjp");
    assert!(close(eq.hessian(x).unwrap()[0], d2), "hessian");
    assert!(close(eq.hvp([1.0], x).unwrap()[0], d2), "hvp");
    let t = eq.univariate_derivatives(3, x).unwrap();
    assert!(close(t[0], f) && close(t[1], d1) && close(t[2], d2) && close(t[3], d3));
}

#[test]
fn a_horner_polynomial_of_degree_ten_thousand_end_to_end() {
    const _: () = assert!(2 * DEGREE + 2 <= MAX_DEPTH);
    let text = horner(DEGREE);
    let eq = rt::equation_text(&text).unwrap();
    for x in [0.5, -0.75, 0.9] {
        check(&eq, x);
    }
    // Printed, it is the same text (the printer adds spaces), and parses back to the same
    // graph.
    let m = eq.model();
    let printed = infix(m.graph(), m.outputs()[0], m.symbols()).to_string();
    let back = rt::equation_text(&printed).unwrap();
    assert_eq!(canonical(back.model()), canonical(m));
    let again = infix(back.model().graph(), back.model().outputs()[0], m.symbols()).to_string();
    assert_eq!(again, printed);
    // Through the archive, with every lane prepared.
    let bytes = eq.to_bytes().unwrap();
    let loaded = Equation::from_bytes(&bytes).unwrap();
    assert_eq!(canonical(loaded.model()), canonical(m));
    check(&loaded, 0.5);
}

#[cfg(feature = "jit")]
#[test]
fn the_compiled_kernels_answer_the_deep_polynomial_alike() {
    use ddx::{Backend, LaneKind, Options};
    let text = horner(DEGREE);
    let oracle = rt::equation_text(&text).unwrap();
    let mut eq = rt::equation_text(&text).unwrap();
    eq.set_options(Options::with_backend(Backend::Compile));
    for kind in [LaneKind::Value, LaneKind::Gradient, LaneKind::Hessian] {
        assert!(
            eq.wait_for_kernel_of(kind),
            "{kind:?}: {:?}",
            eq.jit_status()
        );
    }
    for x in [0.5, -0.75] {
        assert_eq!(
            eq.evaluate(x).unwrap().to_bits(),
            oracle.evaluate(x).unwrap().to_bits()
        );
        assert_eq!(
            eq.gradient(x).unwrap()[0].to_bits(),
            oracle.gradient(x).unwrap()[0].to_bits()
        );
        assert_eq!(
            eq.hessian(x).unwrap()[0].to_bits(),
            oracle.hessian(x).unwrap()[0].to_bits()
        );
    }
}

/// A continued fraction `1 + x/(1 + x/(1 + …))` of depth 10⁴ (the iteration contracts by
/// ½ per level at `x = 2`, so the truncation is far below rounding): its value is the
/// fixed point of `t = 1 + x/t`, `t = 2`; implicit differentiation gives
/// `t' = t/(t² + x) = 1/3` and `t'' = (t'(t² + x) − t(2t·t' + 1))/(t² + x)² = −2/27`.
#[test]
fn a_deep_continued_fraction() {
    let depth = 10_000;
    let text = format!("{}1{}", "1 + x/(".repeat(depth), ")".repeat(depth));
    let eq = rt::equation_text(&text).unwrap();
    assert!(close(eq.evaluate(2.0).unwrap(), 2.0));
    assert!(close(eq.gradient(2.0).unwrap()[0], 1.0 / 3.0));
    assert!(close(eq.hessian(2.0).unwrap()[0], -2.0 / 27.0));
    let t = eq.univariate_derivatives(2, 2.0).unwrap();
    assert!(close(t[1], 1.0 / 3.0) && close(t[2], -2.0 / 27.0), "{t:?}");
}
