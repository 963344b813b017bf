//! `univariate_derivative::<K>`: truncated Taylor arithmetic against independent truths.
//!
//! - Golden derivatives `K = 0 … 6` of every unary function (and a few binary
//!   compositions), produced by mpmath at 60 digits: `tests/golden/taylor.py` prints each
//!   row below.
//! - Closed forms (the specification's `sin⁗(0.5) = sin(0.5)`).
//! - The first- and second-order lanes (`jacobian`, `hessian`), which are nested first
//!   derivatives through the rule table, independent of the Taylor recurrences.
//! - The conventions at kinks and the `select` rule, and every refusal: at a pole or
//!   branch point reached by an argument that moves with `x` (however slowly: `x*x`,
//!   `x*x*x` at 0), at every order; and above the highest order.

// Golden numbers stay as mpmath printed them, 17 digits (each rounds to the nearest
// f64), even where one happens to equal a named constant such as ln 2.
#![allow(clippy::excessive_precision, clippy::approx_constant)]

use ddx::ir::{Notation, Op};
use ddx::{rt, select, Equation, Errc, Error, Expr, MAX_ORDER};

/// A named one-symbol model and the point to differentiate it at.
type Case = (&'static str, fn(Expr) -> Expr, f64);

/// `f⁽ᴷ⁾(x0)` for `K = 0 … 6`.
fn derivatives(eq: &Equation, x0: f64) -> [f64; 7] {
    [
        eq.univariate_derivative::<0>(x0).unwrap(),
        eq.univariate_derivative::<1>(x0).unwrap(),
        eq.univariate_derivative::<2>(x0).unwrap(),
        eq.univariate_derivative::<3>(x0).unwrap(),
        eq.univariate_derivative::<4>(x0).unwrap(),
        eq.univariate_derivative::<5>(x0).unwrap(),
        eq.univariate_derivative::<6>(x0).unwrap(),
    ]
}

/// `f⁽ᴷ⁾(x0)` for `K = 1 … 6`, refusals included.
fn orders(eq: &Equation, x0: f64) -> [Result<f64, Error>; 6] {
    [
        eq.univariate_derivative::<1>(x0),
        eq.univariate_derivative::<2>(x0),
        eq.univariate_derivative::<3>(x0),
        eq.univariate_derivative::<4>(x0),
        eq.univariate_derivative::<5>(x0),
        eq.univariate_derivative::<6>(x0),
    ]
}

fn eq1(f: impl Fn(Expr) -> Expr) -> Equation {
    rt::equation(|| f(rt::var("x"))).unwrap()
}

/// Relative error, against the larger of `|want|` and 1 (so a true zero is compared
/// absolutely).
fn rel(got: f64, want: f64) -> f64 {
    (got - want).abs() / want.abs().max(1.0)
}

/// Golden rows: name, model, x0, d⁰…d⁶ (from `tests/golden/taylor.py`, mpmath 1.4.1).
#[allow(clippy::type_complexity)]
fn golden() -> Vec<(&'static str, fn(Expr) -> Expr, f64, [f64; 7])> {
    vec![
        ("neg", |x| -x, 0.5, [-0.5, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
        (
            "sin",
            |x| x.sin(),
            0.5,
            [
                0.479425538604203,
                0.87758256189037272,
                -0.479425538604203,
                -0.87758256189037272,
                0.479425538604203,
                0.87758256189037272,
                -0.479425538604203,
            ],
        ),
        (
            "cos",
            |x| x.cos(),
            0.5,
            [
                0.87758256189037272,
                -0.479425538604203,
                -0.87758256189037272,
                0.479425538604203,
                0.87758256189037272,
                -0.479425538604203,
                -0.87758256189037272,
            ],
        ),
        (
            "tan",
            |x| x.tan(),
            0.5,
            [
                0.54630248984379051,
                1.2984464104095248,
                1.4186890138709114,
                4.9219928425941819,
                16.430343835093716,
                81.155498108892967,
                441.66565455031201,
            ],
        ),
        ("exp", |x| x.exp(), 0.5, [1.6487212707001281; 7]),
        (
            "ln",
            |x| x.ln(),
            0.5,
            [-0.69314718055994531, 2.0, -4.0, 16.0, -96.0, 768.0, -7680.0],
        ),
        (
            "log10",
            |x| x.log10(),
            0.5,
            [
                -0.3010299956639812,
                0.86858896380650366,
                -1.7371779276130073,
                6.9487117104520292,
                -41.692270262712175,
                333.5381621016974,
                -3335.381621016974,
            ],
        ),
        (
            "sqrt",
            |x| x.sqrt(),
            0.5,
            [
                0.70710678118654752,
                0.70710678118654752,
                -0.70710678118654752,
                2.1213203435596426,
                -10.606601717798213,
                74.24621202458749,
                -668.21590822128741,
            ],
        ),
        (
            "cbrt",
            |x| x.cbrt(),
            0.5,
            [
                0.79370052598409974,
                0.52913368398939982,
                -0.7055115786525331,
                2.3517052621751103,
                -12.542428064933922,
                91.977805809515426,
                -858.45952088881065,
            ],
        ),
        (
            "cbrt",
            |x| x.cbrt(),
            -0.5,
            [
                -0.79370052598409974,
                0.52913368398939982,
                0.7055115786525331,
                2.3517052621751103,
                12.542428064933922,
                91.977805809515426,
                858.45952088881065,
            ],
        ),
        (
            "abs",
            |x| x.abs(),
            -0.5,
            [0.5, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        ),
        (
            "sign",
            |x| x.sign(),
            -0.5,
            [-1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        ),
        (
            "asin",
            |x| x.asin(),
            0.5,
            [
                0.52359877559829887,
                1.1547005383792515,
                0.76980035891950102,
                3.0792014356780041,
                14.369606699830686,
                104.00858182734592,
                930.60310056046345,
            ],
        ),
        (
            "acos",
            |x| x.acos(),
            0.5,
            [
                1.0471975511965977,
                -1.1547005383792515,
                -0.76980035891950102,
                -3.0792014356780041,
                -14.369606699830686,
                -104.00858182734592,
                -930.60310056046345,
            ],
        ),
        (
            "atan",
            |x| x.atan(),
            0.5,
            [
                0.46364760900080612,
                0.8,
                -0.64,
                -0.256,
                3.6864,
                -9.33888,
                -21.62688,
            ],
        ),
        (
            "sinh",
            |x| x.sinh(),
            0.5,
            [
                0.52109530549374736,
                1.1276259652063808,
                0.52109530549374736,
                1.1276259652063808,
                0.52109530549374736,
                1.1276259652063808,
                0.52109530549374736,
            ],
        ),
        (
            "cosh",
            |x| x.cosh(),
            0.5,
            [
                1.1276259652063808,
                0.52109530549374736,
                1.1276259652063808,
                0.52109530549374736,
                1.1276259652063808,
                0.52109530549374736,
                1.1276259652063808,
            ],
        ),
        (
            "tanh",
            |x| x.tanh(),
            0.5,
            [
                0.46211715726000976,
                0.78644773296592741,
                -0.72686198138358728,
                -0.56520928825977036,
                3.9522195637245831,
                -3.2666864719713927,
                -36.279540291791625,
            ],
        ),
        (
            "asinh",
            |x| x.asinh(),
            0.5,
            [
                0.48121182505960345,
                0.89442719099991588,
                -0.35777087639996635,
                -0.28621670111997308,
                1.7173002067198385,
                -2.7476803307517416,
                -12.089793455307663,
            ],
        ),
        (
            "acosh",
            |x| x.acosh(),
            1.5,
            [
                0.96242365011920689,
                0.89442719099991588,
                -1.0733126291998991,
                3.1483837123197039,
                -15.455701860478546,
                107.15953289931792,
                -959.48997149850816,
            ],
        ),
        (
            "atanh",
            |x| x.atanh(),
            0.5,
            [
                0.54930614433405485,
                1.3333333333333333,
                1.7777777777777778,
                8.2962962962962963,
                47.407407407407407,
                385.58024691358025,
                3834.7325102880658,
            ],
        ),
        (
            "erf",
            |x| x.erf(),
            0.5,
            [
                0.52049987781304654,
                0.87878257893544479,
                -0.87878257893544479,
                -0.87878257893544479,
                4.393912894677224,
                0.87878257893544479,
                -36.030085736353237,
            ],
        ),
        (
            "x ** x",
            |x| x.powf(x),
            1.3,
            [
                1.4064566732378861,
                1.7754606438173385,
                3.3231678183679804,
                6.094303328728555,
                13.490717163551946,
                27.494071883628616,
                71.227858649969781,
            ],
        ),
        (
            "x ** 2.5",
            |x| x.powf(2.5),
            1.3,
            [
                1.9268964684175432,
                3.7055701315721984,
                4.2756578441217674,
                1.6444837862006798,
                -0.63249376392333838,
                0.7298004968346212,
                -1.4034624939127331,
            ],
        ),
        (
            "atan2(x, 1 + x*x)",
            |x| x.atan2(1.0 + x * x),
            0.7,
            [
                0.43919596150268932,
                0.1881849378251725,
                -0.90349672468243282,
                2.1522934351123508,
                -2.560282184834157,
                -14.816193250569843,
                171.12836330105556,
            ],
        ),
        (
            "hypot(x, 2*x + 1)",
            |x| x.hypot(2.0 * x + 1.0),
            0.7,
            [
                2.5,
                2.2,
                0.064,
                -0.16896,
                0.589824,
                -2.55197184,
                13.1337289728,
            ],
        ),
        (
            "sin(x) / (2 + cos(x))",
            |x| x.sin() / (2.0 + x.cos()),
            0.7,
            [
                0.23300342066554422,
                0.33092200208458866,
                -0.014335439409659877,
                -0.066312363175220884,
                -0.22547430405054243,
                -0.53951527520621408,
                -1.0272595055464827,
            ],
        ),
    ]
}

#[test]
fn every_unary_function_matches_mpmath_to_the_sixth_derivative() {
    let mut worst = 0.0f64;
    for (name, f, x0, want) in golden() {
        let eq = eq1(f);
        let got = derivatives(&eq, x0);
        // The value is the value lane's, bit for bit.
        assert_eq!(
            got[0].to_bits(),
            eq.evaluate(x0).unwrap().to_bits(),
            "{name}"
        );
        for k in 0..7 {
            let e = rel(got[k], want[k]);
            worst = worst.max(e);
            // Recurrences of depth k lose a few ULP per order; 32 ULP of the larger of
            // |f⁽ᵏ⁾| and 1 bounds every row here (the worst measured is about 20).
            assert!(
                e <= 32.0 * f64::EPSILON,
                "{name} at {x0}, K = {k}: {} vs {}, rel {e:e}",
                got[k],
                want[k]
            );
        }
    }
    eprintln!("worst relative error: {worst:e}");
}

#[test]
fn closed_forms() {
    // The specification's example: sin⁗(0.5) = sin(0.5).
    let eq = rt::equation(|| rt::var("b").sin()).unwrap();
    let d4 = eq.univariate_derivative::<4>(0.5).unwrap();
    assert!(rel(d4, 0.5f64.sin()) <= 2.0 * f64::EPSILON, "{d4}");
    // erf⁗(x) = (2/√π)·e^(−x²)·(−8x³ + 12x), the derivative of the Hermite form.
    let eq = eq1(|x| x.erf());
    let x: f64 = 0.5;
    let want = std::f64::consts::FRAC_2_SQRT_PI * (-x * x).exp() * (-8.0 * x.powi(3) + 12.0 * x);
    let got = eq.univariate_derivative::<4>(x).unwrap();
    assert!(rel(got, want) <= 8.0 * f64::EPSILON, "{got} vs {want}");
    // atanh⁗(x) = 24x(1 + x²)/(1 − x²)⁴.
    let eq = eq1(|x| x.atanh());
    let want = 24.0 * x * (1.0 + x * x) / (1.0 - x * x).powi(4);
    let got = eq.univariate_derivative::<4>(x).unwrap();
    assert!(rel(got, want) <= 8.0 * f64::EPSILON, "{got} vs {want}");
    // A polynomial: every derivative exact, and zero past its degree.
    let eq = eq1(|x| 3.0 * x.powf(4.0) - 2.0 * x * x + x - 7.0);
    let d = derivatives(&eq, 2.0);
    assert_eq!(d, [35.0, 89.0, 140.0, 144.0, 72.0, 0.0, 0.0]);
    // x⁵ at x = 0: expanded by multiplication, not by the aʳ recurrence (which divides by
    // the base).
    let eq = eq1(|x| x.powf(5.0));
    assert_eq!(derivatives(&eq, 0.0), [0.0, 0.0, 0.0, 0.0, 0.0, 120.0, 0.0]);
    let eq = eq1(|x| x.powf(9.0));
    assert_eq!(derivatives(&eq, 0.0), [0.0; 7]);
}

/// The K = 1 and K = 2 derivatives against the Jacobian and Hessian lanes: nested first
/// derivatives through `ad::rules`, sharing nothing with the Taylor recurrences.
#[test]
fn agrees_with_the_first_and_second_order_lanes() {
    let models: Vec<Case> = vec![
        (
            "composite",
            |x| (x.sin() * x.exp()).tanh() + x.atan() / (1.0 + x * x),
            0.6,
        ),
        ("pow moving", |x| (1.0 + x * x).powf(x.cos()), 0.8),
        ("log-cbrt", |x| (x.cbrt() + 2.0).ln() * x.log10(), 1.7),
        (
            "inverse trig",
            |x| (0.5 * x).asin() + (0.3 * x).acos() * (x + 1.0).acosh(),
            0.9,
        ),
        (
            "hyperbolic",
            |x| x.sinh().asinh() * x.cosh() + (0.5 * x).atanh(),
            0.4,
        ),
        (
            "atan2/hypot",
            |x| (x * x - 1.0).atan2(x + 0.5) * x.hypot(x.sin()),
            1.1,
        ),
        (
            "max/min",
            |x| x.sin().max(x.cos()) + (x * x).min(0.5 * x + 1.0),
            0.3,
        ),
        (
            "abs/sign/select",
            |x| select(x.gt(0.2), (x - 1.0).abs() * x, x.sign()) + x.erf(),
            0.5,
        ),
        ("product-sum", |x| x * x.exp() + x.sqrt(), 2.0),
    ];
    for (name, f, x0) in models {
        let eq = eq1(f);
        let d1 = eq.univariate_derivative::<1>(x0).unwrap();
        let d2 = eq.univariate_derivative::<2>(x0).unwrap();
        let j = eq.jacobian(x0).unwrap()[0];
        let h = eq.hessian(x0).unwrap()[0];
        assert!(rel(d1, j) <= 16.0 * f64::EPSILON, "{name}: {d1} vs {j}");
        assert!(rel(d2, h) <= 64.0 * f64::EPSILON, "{name}: {d2} vs {h}");
    }
}

#[test]
fn kinks_follow_the_first_derivative_conventions_at_every_order() {
    // max at a tie: each side gets half, at every order. x² and 2x − 1 touch at x = 1:
    // f' = (2 + 2)/2, f'' = (2 + 0)/2; the Hessian lane says the same.
    let eq = eq1(|x| (x * x).max(2.0 * x - 1.0));
    let d = derivatives(&eq, 1.0);
    assert_eq!(d, [1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(eq.hessian(1.0).unwrap(), [1.0]);
    assert_eq!(eq.jacobian(1.0).unwrap(), [2.0]);
    let eq = eq1(|x| (x * x).min(2.0 * x - 1.0));
    assert_eq!(derivatives(&eq, 1.0), [1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
    // Off the tie, the operand answered gives everything.
    let eq = eq1(|x| x.exp().max(x));
    assert_eq!(derivatives(&eq, 0.0), [1.0; 7]);
    // abs at 0: 0 at every order, as abs'(0) = 0 and sign' = 0 (the Hessian agrees).
    let eq = eq1(|x| (x * x * x + x).abs());
    assert_eq!(derivatives(&eq, 0.0), [0.0; 7]);
    assert_eq!(eq.hessian(0.0).unwrap(), [0.0]);
    // hypot and atan2 at the origin: every derivative 0.
    let eq = eq1(|x| x.hypot(2.0 * x));
    assert_eq!(&derivatives(&eq, 0.0)[1..], &[0.0; 6]);
    let eq = eq1(|x| x.atan2(x.sin()));
    assert_eq!(&derivatives(&eq, 0.0)[1..], &[0.0; 6]);
    // Comparisons and sign are steps: derivative 0, value as evaluated.
    let eq = eq1(|x| x.lt(1.0) + x.le(1.0) + x.eq(1.0) + x.ne(1.0) + x.sign());
    assert_eq!(derivatives(&eq, 1.0), [3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    // pow with an exponent that does not move and is 0 is 1, whatever the base does
    // (a⁰ = 1). `0·x` does not move: a product with the literal 0 carries no derivative.
    let eq = eq1(|x| x.powf(0.0 * x));
    assert_eq!(derivatives(&eq, 0.0), [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(eq.hessian(0.0).unwrap(), [0.0]);
    // `x − x` moves (the graph cannot know it is 0 everywhere): a moving exponent over a
    // moving zero base has no series, so the rule routes answer: `∂/∂a = 0` where
    // `a = b = 0` and `∂/∂b = 0` at `a = 0`, so every order is 0.
    let eq = eq1(|x| x.powf(x - x));
    assert!(answered_by_rules(&eq));
    assert_eq!(derivatives(&eq, 0.0), [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn the_untaken_arm_never_reaches_a_taylor_derivative() {
    // At x = −1 the arm sqrt(x)·ln(x) is NaN at every order; the arm taken is x³.
    let eq = eq1(|x| select(x.gt(0.0), x.sqrt() * x.ln(), x * x * x));
    assert_eq!(
        derivatives(&eq, -1.0),
        [-1.0, 3.0, -6.0, 6.0, 0.0, 0.0, 0.0]
    );
    // At x = 0 the untaken arm has no expansion at all (sqrt and log at a branch point):
    // that does not reach the result either.
    let eq = eq1(|x| select(x.le(0.0), x * x * x, x.sqrt() * x.ln()));
    assert_eq!(derivatives(&eq, 0.0), [0.0, 0.0, 0.0, 6.0, 0.0, 0.0, 0.0]);
    // Nor through max/min's unanswered operand, or a comparison's argument.
    let eq = eq1(|x| (x.sqrt() - 5.0).max(x * x) + x.sqrt().lt(1.0) * x);
    assert_eq!(derivatives(&eq, 0.0), [0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0]);
    // But the taken arm's branch point is the result's: the rule routes answer it
    // (sqrt'' at 0 is −∞, the one-sided limit).
    let eq = eq1(|x| select(x.ge(0.0), x.sqrt(), x));
    assert!(answered_by_rules(&eq));
    assert_eq!(eq.univariate_derivative::<2>(0.0), Ok(f64::NEG_INFINITY));
    assert_eq!(
        eq.univariate_derivative::<2>(0.0),
        Ok(eq.hessian(0.0).unwrap()[0])
    );
    // A NaN condition takes the true arm.
    let eq = eq1(|x| select((x - 2.0).sqrt(), x * x, x.exp()));
    assert_eq!(eq.univariate_derivative::<2>(1.0).unwrap(), 2.0);
}

#[test]
fn refusals() {
    // not_univariate: two symbols, or two outputs.
    let two = rt::equation(|| rt::var("x") * rt::var("y")).unwrap();
    let e = two.univariate_derivative::<1>(1.0).unwrap_err();
    assert_eq!(e.code(), Errc::NotUnivariate);
    assert!(e.to_string().starts_with("not_univariate"), "{e}");
    let sys = rt::equation(|| {
        let x = rt::var("x");
        [x.sin(), x.cos()]
    })
    .unwrap();
    assert_eq!(
        sys.univariate_derivative::<1>(1.0).unwrap_err().code(),
        Errc::NotUnivariate
    );
    // A system of one output and one symbol is univariate.
    let one = rt::equation(|| vec![rt::var("x").sin()]).unwrap();
    assert_eq!(one.univariate_derivative::<0>(0.5).unwrap(), 0.5f64.sin());

    // At each branch point and pole the sweep has no expansion; the rule routes answer
    // the one-sided limit of f' (x → 0⁺, or from inside the domain at ±1) where the rules
    // reach it, and equal the gradient and Hessian (checked in `agrees_with_the_routes`).
    let inf = f64::INFINITY;
    type Limit = (&'static str, fn(Expr) -> Expr, f64, f64);
    let cases: Vec<Limit> = vec![
        ("sqrt", |x| x.sqrt(), 0.0, inf),
        ("cbrt", |x| x.cbrt(), 0.0, inf),
        ("log", |x| x.ln(), 0.0, inf),
        ("log10", |x| x.log10(), 0.0, inf),
        ("div", |x| 1.0 / x, 0.0, -inf),
        ("pow", |x| x.powf(1.5), 0.0, 0.0),
        ("pow", |x| x.powf(0.3), 0.0, inf),
        ("pow", |x| x.powf(-2.0), 0.0, -inf),
        // x^x: the rule table's ∂/∂a = 0 at a = b = 0 and ∂/∂b = 0 at a = 0 (a convention;
        // the one-sided limit of x^x·(ln x + 1) is −∞).
        ("pow", |x| x.powf(x), 0.0, 0.0),
        ("asin", |x| x.asin(), 1.0, inf),
        ("acos", |x| x.acos(), -1.0, -inf),
        ("acosh", |x| x.acosh(), 1.0, inf),
        ("atanh", |x| x.atanh(), -1.0, inf),
    ];
    for (op, f, x0, d1) in cases {
        let eq = eq1(f);
        let sweep = taylor_sweep(&eq, x0, 1).unwrap_err();
        assert_eq!(sweep, Error::UnsupportedScalar { op }, "{op}");
        assert_eq!(eq.univariate_derivative::<1>(x0), Ok(d1), "{op} at {x0}");
        agrees_with_the_routes(op, &eq, x0);
    }
    // Above the tensor lanes' highest order no route answers there: refused.
    let eq = eq1(|x| x.sqrt());
    let e = eq
        .univariate_derivative::<{ ddx::MAX_TENSOR_ORDER + 1 }>(0.0)
        .unwrap_err();
    assert_eq!(e, Error::UnsupportedScalar { op: "sqrt" });
    assert!(eq
        .univariate_derivative::<{ ddx::MAX_TENSOR_ORDER + 1 }>(1.0)
        .is_ok());
    // Outside the domain the value is NaN, and so is every derivative (IEEE, as the
    // other lanes answer), not a refusal.
    assert!(eq.univariate_derivative::<3>(-1.0).unwrap().is_nan());
}

/// The Taylor sweep alone (`ddx_ir::ad::taylor::expand`) along `x`, to degree `degree`.
fn taylor_sweep(eq: &Equation, x0: f64, degree: usize) -> Result<Vec<f64>, Error> {
    let m = eq.model();
    ddx::ir::ad::taylor::expand(m.graph(), m.outputs(), &[x0], &[1.0], &[], degree)
        .map(|mut c| c.swap_remove(0))
}

/// Whether the Taylor sweep has no expansion of `eq` at 0 (so the rule routes answer).
fn answered_by_rules(eq: &Equation) -> bool {
    taylor_sweep(eq, 0.0, 6).is_err()
}

fn same_bits(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// `univariate_derivative` at `x0` for `K = 1 … 6` against the rule routes bit for bit:
/// `K = 1` the gradient, `K = 2` the Hessian, `K ≥ 3` the derivative tensor; and the
/// coefficient and all-orders forms against it.
fn agrees_with_the_routes(what: &str, eq: &Equation, x0: f64) {
    let d = orders(eq, x0);
    let all = eq.univariate_derivatives(6, x0).unwrap();
    let coef = eq.taylor_coefficients(6, x0).unwrap();
    let mut fact = 1.0;
    for (k, dk) in d.iter().enumerate() {
        let k = k + 1;
        fact *= k as f64;
        let dk = *dk
            .as_ref()
            .unwrap_or_else(|e| panic!("{what}: K = {k}: {e}"));
        let want = match k {
            1 => eq.gradient(x0).unwrap()[0],
            2 => eq.hessian(x0).unwrap()[0],
            _ => eq.derivative_tensor(k, x0).unwrap()[0],
        };
        assert!(
            same_bits(dk, want),
            "{what} at {x0}, K = {k}: {dk}, routes {want}"
        );
        assert!(same_bits(all[k], dk), "{what}: univariate_derivatives[{k}]");
        assert!(
            same_bits(coef[k], dk / fact),
            "{what}: taylor_coefficients[{k}]"
        );
    }
}

/// The reviewer's inputs: an argument that moves with `x` but whose first coefficients
/// vanish at the pole or branch point (`x*x` truncated at `K = 1` is `[0, 0]`). Each was
/// answered `Ok(0.0)` at the low orders, where the Jacobian and Hessian say NaN; the
/// sweep has no expansion there, and the rule routes answer every order.
#[test]
fn a_slowly_moving_argument_at_a_pole_or_branch_point_is_answered_by_the_rules() {
    for (text, op) in [
        ("1/(x*x)", "div"),
        ("log(x*x*x*x)", "log"),
        ("sqrt(x*x)", "sqrt"),
        ("1/(x*x*x)", "div"),
        ("cbrt(x*x)", "cbrt"),
        ("log10(x*x*x*x*x*x)", "log10"),
        ("atanh(1 + x*x*x)", "atanh"),
        ("asin(1 - x*x)", "asin"),
        ("acos(-1 + x*x*x*x)", "acos"),
        ("acosh(1 + x*x)", "acosh"),
        ("(x*x)**0.5", "pow"),
        ("(x*x*x)**-2", "pow"),
        ("(x*x)**(x*x)", "pow"),
        ("x**(x*x)", "pow"),
    ] {
        let eq = rt::equation_text(text).unwrap();
        assert_eq!(
            taylor_sweep(&eq, 0.0, 1),
            Err(Error::UnsupportedScalar { op }),
            "{text}"
        );
        agrees_with_the_routes(text, &eq, 0.0);
    }
    // sqrt(x*x) at 0 meets 0·∞ in the chain rule: NaN, as the gradient says.
    let eq = rt::equation_text("sqrt(x*x)").unwrap();
    assert!(eq.univariate_derivative::<1>(0.0).unwrap().is_nan());
    // The same slow arguments off the singular point, or into an operation with a series
    // there (a polynomial, abs, a constant exponent 0 or natural), are the sweep's.
    let eq = rt::equation_text("sqrt(1 + x*x)").unwrap();
    assert_eq!(eq.univariate_derivative::<2>(0.0), Ok(1.0));
    let eq = rt::equation_text("(x*x)**3").unwrap();
    assert_eq!(eq.univariate_derivative::<6>(0.0), Ok(720.0));
    let eq = rt::equation_text("abs(x*x*x)").unwrap();
    assert_eq!(eq.univariate_derivative::<3>(0.0), Ok(0.0));
}

/// How `op` applied to the texts `args` is written.
fn call(op: Op, args: &[String]) -> String {
    match (op.notation(), args) {
        (Notation::Prefix, [a]) => format!("-({a})"),
        (Notation::Infix { token, .. }, [a, b]) => format!("({a}) {token} ({b})"),
        _ => format!("{}({})", op.name(), args.join(", ")),
    }
}

/// Whether `t` and `n` are the same number: equal, both NaN, or within 32 ULP of the
/// larger of `|n|` and 1.
fn same(t: f64, n: f64) -> bool {
    t == n || (t.is_nan() && n.is_nan()) || rel(t, n) <= 32.0 * f64::EPSILON
}

/// `text` at `x = 0`: answered at every order `1 … 6`; where the Taylor sweep has a
/// series, `K = 1` is the Jacobian lane's and `K = 2` the Hessian lane's (nested first
/// derivatives through `ad::rules`) to rounding; where it has none, the rule routes'
/// bits. Answers whether the sweep had none.
fn refuses_or_agrees(text: &str) -> bool {
    let eq = rt::equation_text(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    let refused = answered_by_rules(&eq);
    if refused {
        agrees_with_the_routes(text, &eq, 0.0);
        return true;
    }
    let d = orders(&eq, 0.0);
    let (d1, d2) = (d[0].clone().unwrap(), d[1].clone().unwrap());
    let j = eq.jacobian(0.0).unwrap()[0];
    let h = eq.hessian(0.0).unwrap()[0];
    assert!(same(d1, j), "{text}: K = 1 {d1}, Jacobian {j}");
    assert!(same(d2, h), "{text}: K = 2 {d2}, Hessian {h}");
    false
}

/// `c ± u` for `c ∈ {0, 1, −1}` and `u ∈ {x*x, x*x*x}`: arguments that move with `x`
/// but whose low coefficients vanish at 0, sitting on every singular point (`0`, `±1`).
fn slow_arguments() -> Vec<(f64, String)> {
    let mut out = Vec::new();
    for c in [0.0, 1.0, -1.0] {
        for u in ["x*x", "x*x*x"] {
            for s in ['+', '-'] {
                out.push((c, format!("{c} {s} {u}")));
            }
        }
    }
    out
}

#[test]
fn every_unary_function_of_a_slowly_moving_argument_refuses_or_agrees() {
    let unary = Op::ALL.into_iter().filter(|op| op.arity() == 1);
    let (at_zero, at_one) = (
        [Op::Sqrt, Op::Cbrt, Op::Log, Op::Log10, Op::Log2, Op::Recip],
        [Op::Asin, Op::Acos, Op::Acosh, Op::Atanh],
    );
    for op in unary {
        for (c, a) in slow_arguments() {
            let text = call(op, &[a]);
            let refused = refuses_or_agrees(&text);
            let singular = (at_zero.contains(&op) && c == 0.0)
                || (at_one.contains(&op) && c != 0.0)
                || (op == Op::Log1p && c == -1.0);
            assert_eq!(refused, singular, "{text}");
        }
    }
}

#[test]
fn division_and_pow_by_a_slowly_moving_argument_refuse_or_agree() {
    let mut others: Vec<(Option<f64>, String)> = ["x", "x + 1", "0.5 + x"]
        .into_iter()
        .map(|t| (None, t.to_string()))
        .collect();
    for r in [0.5, 1.5, -1.0, -2.0, 2.0, 3.0] {
        others.push((Some(r), format!("{r}")));
    }
    for (c, a) in slow_arguments() {
        for (b0, b) in &others {
            // A division is refused exactly where its divisor moves through 0.
            assert_eq!(refuses_or_agrees(&format!("({b}) / ({a})")), c == 0.0);
            assert_eq!(refuses_or_agrees(&format!("({a}) / ({b})")), b == "x");
            // pow(a, b) with a moving zero base: refused unless b is a constant natural
            // number; nothing else is. (Off a zero base, the moving exponent `x` through
            // 0 meets the rule table's `∂/∂a = 0 where b = 0`, a first-derivative
            // convention that drops part of the second derivative, not a singular point.)
            let natural = b0.is_some_and(|r| r >= 0.0 && r.fract() == 0.0);
            if c == 0.0 || b != "x" {
                let text = format!("pow({a}, {b})");
                assert_eq!(refuses_or_agrees(&text), c == 0.0 && !natural, "{text}");
            }
            if b0.is_some() {
                assert!(!refuses_or_agrees(&format!("pow({b}, {a})")));
            }
        }
    }
}

#[test]
fn an_order_above_the_maximum_is_refused() {
    assert_eq!(MAX_ORDER, 170);
    let eq = eq1(|x| x.sin());
    let want = |order| Error::OrderTooHigh {
        order,
        max: MAX_ORDER,
    };
    assert_eq!(
        eq.univariate_derivative::<{ usize::MAX }>(0.5),
        Err(want(usize::MAX))
    );
    assert_eq!(
        eq.univariate_derivative::<{ 1 << 40 }>(0.5),
        Err(want(1 << 40))
    );
    assert_eq!(eq.univariate_derivative::<171>(0.5), Err(want(171)));
    let e = eq.univariate_derivative::<171>(0.5).unwrap_err();
    assert_eq!(e.code(), Errc::OrderTooHigh);
    assert_eq!(e.code().as_str(), "order_too_high");
    assert!(e.to_string().starts_with("order_too_high"), "{e}");
    // The order is checked first, whatever else is wrong.
    let two = rt::equation(|| rt::var("x") * rt::var("y")).unwrap();
    assert_eq!(
        two.univariate_derivative::<{ usize::MAX }>(1.0)
            .unwrap_err()
            .code(),
        Errc::OrderTooHigh
    );
    // The highest order is computed: sin⁽¹⁷⁰⁾ = sin (170 = 4·42 + 2: −sin).
    let d = eq.univariate_derivative::<170>(0.5).unwrap();
    assert!(rel(d, -0.5f64.sin()) <= 1e-9, "{d}");
    // exp⁽¹⁷⁰⁾ = exp: K! = 170! ≈ 7.3e306 stays finite.
    let d = eq1(|x| x.exp()).univariate_derivative::<170>(0.0).unwrap();
    assert!(rel(d, 1.0) <= 1e-9, "{d}");
}

/// `K = 1, 2` are the gradient and the Hessian at every special point of
/// `ARCHITECTURE.md`'s "Semantics" (and at NaN values): bit for bit where the rule routes
/// answer (the sweep has no series), to rounding where the sweep does.
#[test]
fn k1_and_k2_are_the_gradient_and_hessian_at_every_special_point() {
    let nan = f64::NAN;
    let cases: &[(&str, f64)] = &[
        // abs and sign at 0.
        ("abs(x)", 0.0),
        ("abs(x)", -0.0),
        ("abs(x*x*x + x)", 0.0),
        ("3*sign(x)", 0.0),
        // max/min: a tie, a NaN operand, the unanswered operand's infinite derivative.
        ("max(x*x, 2*x - 1)", 1.0),
        ("min(x*x, 2*x - 1)", 1.0),
        ("max(x, x)", 2.0),
        ("max(log(x), x)", -1.0),
        ("min(x, log(x))", -1.0),
        ("max(sqrt(x), 1)", 0.0),
        // pow at a zero base: b = 2, 1, 0.5, 0, 3, 1.3, 0.3, −1, −2; a moving exponent.
        ("x**2", 0.0),
        ("x**1", 0.0),
        ("x**0.5", 0.0),
        ("x**0 + x", 0.0),
        ("x**3", 0.0),
        ("x**1.3", 0.0),
        ("x**0.3", 0.0),
        ("x**2.5", 0.0),
        ("x**-1", 0.0),
        ("x**-2", 0.0),
        ("x**x", 0.0),
        ("x**(x*x)", 0.0),
        ("0**x", 2.0),
        ("2**x", 1.0),
        ("powi(x, 3)", 0.0),
        ("powi(x, 0) + x", 0.0),
        ("powi(x, -1)", 0.0),
        ("powi(x, -2)", 0.0),
        // sqrt, cbrt, division by the moving variable, at 0.
        ("sqrt(x)", 0.0),
        ("cbrt(x)", 0.0),
        ("1/x", 0.0),
        ("3/x", -0.0),
        ("(x + 1)/x", 0.0),
        ("x/x", 0.0),
        ("sqrt(x*x)", 0.0),
        ("x*sqrt(x)", 0.0),
        ("x*(2 - x**1.3)", 0.0),
        ("x*x*(2 - x**1.3)", 0.0),
        ("recip(x)", 0.0),
        ("log(x)", 0.0),
        // hypot and atan2 at the origin.
        ("hypot(x, 0)", 0.0),
        ("hypot(x, 2*x)", 0.0),
        ("atan2(x, 0)", 0.0),
        ("atan2(x, sin(x))", 0.0),
        // select: the untaken arm NaN or singular; a NaN condition.
        ("select(x > 0, sqrt(x)*log(x), x*x*x)", -1.0),
        ("select(x <= 0, x*x*x, sqrt(x)*log(x))", 0.0),
        ("select(x >= 0, sqrt(x), x)", 0.0),
        ("select(sqrt(x - 2), x*x, exp(x))", 1.0),
        // Values that are already NaN, or infinite.
        ("sqrt(x)", nan),
        ("x**1.5", nan),
        ("cbrt(x)", nan),
        ("1/x", nan),
        ("x/x", nan),
        ("exp(x)", nan),
        ("sqrt(x)", -1.0),
        ("3*log(x)", -1.0),
        ("log(x)*x", -1.0),
        ("log10(x) + x*x", -2.0),
        ("exp(x)*2", 800.0),
        ("x**0.5", -4.0),
        ("acosh(x)", 0.5),
    ];
    for &(text, x0) in cases {
        let eq = rt::equation_text(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let g = eq.gradient(x0).unwrap()[0];
        let h = eq.hessian(x0).unwrap()[0];
        let d1 = eq.univariate_derivative::<1>(x0).unwrap();
        let d2 = eq.univariate_derivative::<2>(x0).unwrap();
        let by_rules = taylor_sweep(&eq, x0, 2).is_err();
        if by_rules {
            agrees_with_the_routes(text, &eq, x0);
        }
        let ok = |a: f64, b: f64| {
            if by_rules {
                same_bits(a, b)
            } else {
                same(a, b)
            }
        };
        assert!(ok(d1, g), "{text} at {x0}: K = 1 {d1}, gradient {g}");
        assert!(ok(d2, h), "{text} at {x0}: K = 2 {d2}, Hessian {h}");
    }
}

/// The one-sided limits at the branch points, in closed form: `x^r` at `0⁺` has
/// `f⁽ᵏ⁾ = r(r−1)…(r−k+1)·0^(r−k)`, `0` for `k < r` and `±∞` (the sign of the falling
/// factorial) for `k > r`; `sqrt`, `cbrt`, `1/x` likewise. The rules reach these for
/// `K = 1, 2` (each is one `pow`, `sqrt` or quotient, no product meets `0·∞`).
#[test]
fn branch_points_answer_the_one_sided_limits() {
    let inf = f64::INFINITY;
    for (text, d1, d2) in [
        ("x**1.5", 0.0, inf),
        ("x**2.5", 0.0, 0.0),
        ("x**0.3", inf, -inf),
        ("x**1.3", 0.0, inf),
        ("x**-0.5", -inf, inf),
        ("sqrt(x)", inf, -inf),
        ("cbrt(x)", inf, f64::NAN),
        ("1/x", -inf, inf),
    ] {
        let eq = rt::equation_text(text).unwrap();
        let got = [
            eq.univariate_derivative::<1>(0.0).unwrap(),
            eq.univariate_derivative::<2>(0.0).unwrap(),
        ];
        for (k, (g, w)) in got.into_iter().zip([d1, d2]).enumerate() {
            assert!(same_bits(g, w), "{text}: K = {} is {g}, want {w}", k + 1);
        }
    }
}

/// At arguments far from 1 the series is swept in a step near |x0| (a power of two), so no
/// coefficient overflows or underflows where the derivatives themselves are numbers: the
/// closed forms and the Hessian agree (where the value itself is a number: a series
/// cannot scale past its own value); near 1 nothing changes (the unit step).
#[test]
fn extreme_arguments_keep_their_derivatives() {
    let rel = |got: f64, want: f64| ((got - want) / want).abs();
    let xlogx = eq1(|x| x * x.ln());
    let xsqrtx = eq1(|x| x * x.sqrt());
    let inv = eq1(|x| 1.0 / x);
    for x0 in [1e200, 1e-160, 1e155, 3.7e300, 2.5e-300, -1e250, 1e-300] {
        if x0 > 0.0 {
            // (x log x)'' = 1/x, (x log x)''' = −1/x²
            let d = xlogx.univariate_derivatives(3, x0).unwrap();
            assert!(rel(d[2], 1.0 / x0) < 4e-16, "x log x at {x0}: {d:?}");
            assert!(rel(d[2], xlogx.hessian([x0]).unwrap()[0]) < 4e-16, "{x0}");
            let want3 = -1.0 / x0 / x0;
            if want3.is_normal() {
                assert!(rel(d[3], want3) < 1e-15, "x log x''' at {x0}: {d:?}");
            }
            // (x √x)'' = 3 / (4 √x)
            if (x0 * x0.sqrt()).is_normal() {
                let d = xsqrtx.univariate_derivative_of_order(2, x0).unwrap();
                assert!(rel(d, 0.75 / x0.sqrt()) < 4e-16, "x sqrt x at {x0}: {d}");
            }
        }
        // (1/x)'' = 2/x³ where it is a number
        let want = 2.0 / x0 / x0 / x0;
        if want.is_normal() {
            let d = inv.univariate_derivative_of_order(2, x0).unwrap();
            assert!(rel(d, want) < 1e-15, "1/x at {x0}: {d} vs {want}");
        }
    }
    // Near 1 the unit step: the bits of the Hessian route, as before.
    for x0 in [0.5, 3.0, 1e10, 1e-10] {
        let d = xlogx.univariate_derivative_of_order(2, x0).unwrap();
        assert_eq!(
            d.to_bits(),
            xlogx.hessian([x0]).unwrap()[0].to_bits(),
            "{x0}"
        );
    }
}
