//! Every derivative convention (`ARCHITECTURE.md`, "Semantics") at its special point, in every lane the core
//! has (Jacobian, gradient, jvp, vjp), and the `select` rule where the untaken arm's
//! derivative is NaN or infinite.

use ddx::{rt, select, Equation, Expr};

/// The first-order answers of every lane at `p`, as (lane, gradient) pairs.
fn all_lanes(eq: &Equation, p: &[f64]) -> Vec<(&'static str, Vec<f64>)> {
    let n = eq.arity();
    let jvp: Vec<f64> = (0..n)
        .map(|j| {
            let mut e = vec![0.0; n];
            e[j] = 1.0;
            eq.jvp(e, p).unwrap()[0]
        })
        .collect();
    vec![
        ("jacobian", eq.jacobian(p).unwrap()),
        ("gradient", eq.gradient(p).unwrap()),
        ("jvp", jvp),
        ("vjp", eq.vjp(&[1.0], p).unwrap()),
    ]
}

/// Asserts every lane answers `want` bit for bit (NaN matching NaN), `jvp` along each
/// basis vector included where `want` holds an infinity: a direction's exact zeros
/// contribute nothing, so no `∞·0` arises.
fn assert_lanes(what: &str, eq: &Equation, p: &[f64], want: &[f64]) {
    for (lane, got) in all_lanes(eq, p) {
        let same = got.len() == want.len()
            && got
                .iter()
                .zip(want)
                .all(|(g, w)| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()));
        assert!(same, "{what}: {lane} lane answers {got:?}, want {want:?}");
    }
}

fn eq1(f: impl FnOnce(Expr) -> Expr) -> Equation {
    rt::equation(|| f(rt::var("x"))).unwrap()
}

fn eq2(f: impl FnOnce(Expr, Expr) -> Expr) -> Equation {
    rt::equation(|| f(rt::var("a"), rt::var("b"))).unwrap()
}

#[test]
fn abs_and_sign() {
    assert_lanes("abs'(0)", &eq1(|x| x.abs()), &[0.0], &[0.0]);
    assert_lanes("abs'(-0)", &eq1(|x| x.abs()), &[-0.0], &[0.0]);
    assert_lanes("abs'(-2)", &eq1(|x| x.abs()), &[-2.0], &[-1.0]);
    // sign' is 0 everywhere: the lane has no column, so the dense answer is 0.
    let sign = eq1(|x| x.sign() * 3.0);
    assert_lanes("sign'", &sign, &[0.0], &[0.0]);
    assert_lanes("sign'", &sign, &[7.0], &[0.0]);
    assert_eq!(sign.jacobian_pattern().nonzeros(), 0);
    assert_eq!(sign.evaluate(0.0).unwrap().to_bits(), 0.0f64.to_bits());
    assert_eq!(sign.evaluate(-0.0).unwrap().to_bits(), 0.0f64.to_bits());
    assert!(sign.evaluate(f64::NAN).unwrap().is_nan());
}

#[test]
fn max_and_min_split_a_tie_and_follow_the_answered_operand() {
    let max = eq2(|a, b| a.max(b));
    let min = eq2(|a, b| a.min(b));
    assert_lanes("max tie", &max, &[1.0, 1.0], &[0.5, 0.5]);
    assert_lanes("min tie", &min, &[1.0, 1.0], &[0.5, 0.5]);
    assert_lanes("max", &max, &[2.0, 1.0], &[1.0, 0.0]);
    assert_lanes("min", &min, &[2.0, 1.0], &[0.0, 1.0]);
    // A NaN operand: the other is answered, and the derivative flows to it.
    assert_eq!(max.evaluate([f64::NAN, 3.0]).unwrap(), 3.0);
    assert_lanes("max(NaN, b)", &max, &[f64::NAN, 3.0], &[0.0, 1.0]);
    assert_lanes("max(a, NaN)", &max, &[3.0, f64::NAN], &[1.0, 0.0]);
    assert_lanes("min(NaN, b)", &min, &[f64::NAN, 3.0], &[0.0, 1.0]);
    // max(x, x) is x.
    assert_lanes("max(x, x)", &eq1(|x| x.max(x)), &[2.0], &[1.0]);
    // The operand not answered carries an infinite derivative that must not leak.
    let relu_sqrt = eq1(|x| x.sqrt().max(1.0));
    assert_lanes("max(sqrt(x), 1) at 0", &relu_sqrt, &[0.0], &[0.0]);
}

#[test]
fn pow_at_zero_answers_its_constant_arms() {
    let pow = eq2(|a, b| a.powf(b));
    // 0^b: ∂/∂b = 0; ∂/∂a = b·0^(b−1).
    assert_lanes("pow(0, 2)", &pow, &[0.0, 2.0], &[0.0, 0.0]);
    assert_lanes("pow(0, 1)", &pow, &[0.0, 1.0], &[1.0, 0.0]);
    assert_lanes("pow(0, 0.5)", &pow, &[0.0, 0.5], &[f64::INFINITY, 0.0]);
    // J·v with that infinite cell: along b the direction's exact 0 skips it (not ∞·0).
    assert_eq!(pow.jvp([1.0, 0.0], [0.0, 0.5]).unwrap(), [f64::INFINITY]);
    assert_eq!(pow.jvp([0.0, 1.0], [0.0, 0.5]).unwrap(), [0.0]);
    assert!(pow.jvp([1.0, 1.0], [0.0, 0.5]).unwrap()[0].is_infinite());
    // a^0 = 1: ∂/∂a = 0, even at a = 0; ∂/∂b = ln(a) away from 0.
    assert_lanes("pow(0, 0)", &pow, &[0.0, 0.0], &[0.0, 0.0]);
    assert_lanes(
        "pow(2, 0)",
        &pow,
        &[2.0, 0.0],
        &[0.0, std::f64::consts::LN_2],
    );
    // Constant exponents and bases follow the same arms.
    assert_lanes(
        "x**0.5 at 0",
        &eq1(|x| x.powf(0.5)),
        &[0.0],
        &[f64::INFINITY],
    );
    assert_lanes("x**3 at 0", &eq1(|x| x.powf(3.0)), &[0.0], &[0.0]);
    assert_lanes("0**x", &eq1(|x| ddx::pow(0.0, x)), &[2.0], &[0.0]);
    assert_lanes(
        "2**x",
        &eq1(|x| ddx::pow(2.0, x)),
        &[1.0],
        &[2.0 * std::f64::consts::LN_2],
    );
}

#[test]
fn hypot_and_atan2_are_flat_at_the_origin() {
    assert_lanes(
        "hypot at origin",
        &eq2(|a, b| a.hypot(b)),
        &[0.0, 0.0],
        &[0.0, 0.0],
    );
    assert_lanes(
        "atan2 at origin",
        &eq2(|a, b| a.atan2(b)),
        &[0.0, 0.0],
        &[0.0, 0.0],
    );
    assert_lanes("hypot(x, 0) at 0", &eq1(|x| x.hypot(0.0)), &[0.0], &[0.0]);
    assert_lanes("hypot(x, 3)", &eq1(|x| x.hypot(3.0)), &[4.0], &[0.8]);
    assert_lanes("atan2(x, 0) at 0", &eq1(|x| x.atan2(0.0)), &[0.0], &[0.0]);
}

#[test]
fn elsewhere_the_chain_rule_is_plain_ieee() {
    // sqrt'(0) = ∞ times (x²)' = 0 is NaN: documented, not smoothed.
    let eq = eq1(|x| (x * x).sqrt());
    let g = eq.jacobian(0.0).unwrap()[0];
    assert!(g.is_nan(), "sqrt(x*x)' at 0 is {g}");
    // Forward mode: the tangent of x·x is exactly 0 at 0 (x·1 + 1·x), so it contributes
    // nothing through sqrt'(0) = ∞ (a run-time zero tangent, "Exact zeros in a direction").
    assert_eq!(eq.jvp([1.0], 0.0).unwrap(), [0.0]);
    // A zero that is a value, not a tangent, still meets ∞ plainly: y·sqrt(x) at (0, 0)
    // has ∂/∂x = 0·∞ in both modes.
    let eq = eq2(|a, b| b * a.sqrt());
    assert!(eq.gradient([0.0, 0.0]).unwrap()[0].is_nan());
    assert!(eq.jvp([1.0, 0.0], [0.0, 0.0]).unwrap()[0].is_nan());
}

#[test]
fn comparisons_with_nan_are_false() {
    let x = f64::NAN;
    for (name, f) in [
        ("lt", Expr::lt as fn(Expr, Expr) -> Expr),
        ("le", Expr::le),
        ("gt", Expr::gt),
        ("ge", Expr::ge),
        ("eq", Expr::eq),
        ("ne", Expr::ne),
    ] {
        let eq = eq2(f);
        assert_eq!(eq.evaluate([x, 1.0]).unwrap(), 0.0, "{name}(NaN, 1)");
        assert_eq!(eq.evaluate([1.0, x]).unwrap(), 0.0, "{name}(1, NaN)");
        assert_eq!(
            eq.jacobian([1.0, 2.0]).unwrap(),
            [0.0, 0.0],
            "{name} has no derivative"
        );
    }
    assert_eq!(eq2(|a, b| a.ne(b)).evaluate([1.0, 2.0]).unwrap(), 1.0);
    assert_eq!(eq2(|a, b| a.gt(b)).evaluate([3.0, 2.0]).unwrap(), 1.0);
}

#[test]
fn select_takes_nonzero_and_nan_as_true() {
    let eq = rt::equation(|| select(rt::var("c"), rt::var("t"), rt::var("f"))).unwrap();
    assert_eq!(eq.symbols(), ["c", "f", "t"]);
    assert_eq!(eq.evaluate([f64::NAN, 2.0, 1.0]).unwrap(), 1.0);
    assert_eq!(eq.evaluate([-0.0, 2.0, 1.0]).unwrap(), 2.0);
    assert_eq!(eq.evaluate([0.5, 2.0, 1.0]).unwrap(), 1.0);
    // The condition is never differentiated; the taken arm gets it all.
    assert_lanes("select taken t", &eq, &[1.0, 2.0, 3.0], &[0.0, 0.0, 1.0]);
    assert_lanes("select taken f", &eq, &[0.0, 2.0, 3.0], &[0.0, 1.0, 0.0]);
}

#[test]
fn the_untaken_arm_never_reaches_the_derivative() {
    // Infinite local partial in the untaken arm: sqrt'(0).
    let eq = eq1(|x| select(x.gt(0.0), x.sqrt(), 0.0));
    assert_lanes("select(x>0, sqrt x, 0) at 0", &eq, &[0.0], &[0.0]);
    assert_lanes("... at 4", &eq, &[4.0], &[0.25]);
    // NaN value and NaN partial in the untaken arm: log(-1).
    let eq = eq1(|x| select(x.gt(0.0), x.ln(), x * 2.0));
    assert_lanes("select(x>0, log x, 2x) at -1", &eq, &[-1.0], &[2.0]);
    // The guard must survive several operations below the arm: sqrt(sqrt(x))·3 + sin x.
    let eq = eq1(|x| select(x.gt(0.0), x.sqrt().sqrt() * 3.0 + x.sin(), x.cos()));
    assert_lanes("deep arm at 0", &eq, &[0.0], &[-0.0]);
    // A subexpression shared by an arm and the rest of the function keeps its honest
    // derivative from the rest; only the arm's share is cut.
    let eq = eq1(|x| {
        let s = x.sqrt();
        select(x.lt(0.0), s, 1.0) + s * x + x
    });
    let g = eq.jacobian(0.0).unwrap()[0];
    assert!(
        g.is_nan(),
        "(s·x)' = s + x·s' is IEEE's 0·∞ outside the select: {g}"
    );
    assert_lanes("shared at 1", &eq, &[1.0], &[2.5]);
    // A literal-zero partial is structural: `s * 0.0` contributes nothing, not ∞·0.
    let eq = eq1(|x| x.sqrt() * 0.0 + x);
    assert_lanes("s·0 at 0", &eq, &[0.0], &[1.0]);
    // Nested selects, the inner one untaken.
    let eq = eq1(|x| {
        select(
            x.ge(0.0),
            select(x.gt(0.0), x.ln(), x.sqrt() * 5.0 + 1.0),
            -x,
        )
    });
    assert_lanes("nested at 0", &eq, &[0.0], &[f64::INFINITY]);
    assert_lanes("nested at -1", &eq, &[-1.0], &[-1.0]);
    // Both arms depend on x through the same infinite partial and rejoin.
    let eq = eq1(|x| {
        let r = x.sqrt();
        select(x.gt(1.0), r * 2.0, r * 3.0)
    });
    assert_lanes("rejoined arms at 4", &eq, &[4.0], &[0.5]);
    assert_lanes("rejoined arms at 0.25", &eq, &[0.25], &[3.0]);
    // A system: each output keeps its own arm.
    let sys = rt::equation(|| {
        let x = rt::var("x");
        [
            select(x.gt(0.0), x.sqrt(), x),
            select(x.le(0.0), x.sqrt(), x),
        ]
    })
    .unwrap();
    assert_eq!(sys.jacobian(0.0).unwrap(), [1.0, f64::INFINITY]);
    let jv = sys.jvp([1.0], 0.0).unwrap();
    assert_eq!(jv, [1.0, f64::INFINITY]);
    // wᵀJ is a sum over functions: a zero weight on the infinite row is IEEE's 0·∞.
    assert!(sys.vjp(&[1.0, 0.0], 0.0).unwrap()[0].is_nan());
    assert_eq!(sys.vjp(&[1.0, 1.0], 1.0).unwrap(), [1.5]);
}

#[test]
fn huber_gradient_follows_each_residual_arm() {
    // Two residuals on different arms: the gradient is the sum of the quadratic arm's
    // 2r·∂r and the linear arm's 2δ·sign(r)·∂r.
    let delta = 0.5;
    let eq = eq2(|a, b| {
        let mut loss = Expr::from(0.0);
        for (t, y) in [(0.0, 1.0), (1.0, 3.0)] {
            let r = y - (a + b * t);
            loss += select(r.abs().lt(delta), r * r, delta * (2.0 * r.abs() - delta));
        }
        loss
    });
    let (a, b) = (0.9, 1.0); // r0 = 0.1 (inside), r1 = 1.1 (outside)
    let g = eq.jacobian([a, b]).unwrap();
    // ∂r/∂a = −1 for both residuals; ∂r/∂b = −t.
    let want_a = -(2.0 * 0.1) - 2.0 * delta;
    let want_b = -(2.0 * delta);
    assert!(
        (g[0] - want_a).abs() < 1e-15 && (g[1] - want_b).abs() < 1e-15,
        "{g:?}"
    );
}

#[test]
fn forward_and_reverse_exclude_the_same_paths() {
    // The untaken arm is the constant 0: below the select nothing of x flows in that arm,
    // so the derivative is 0 in every lane, not the ∞·0 a tangent masked early would meet
    // at sqrt'(0) or at 1/0's partial.
    let eq = eq1(|x| select(x.gt(0.0), x, 0.0).sqrt());
    assert_lanes("sqrt(select(x>0, x, 0)) at 0", &eq, &[0.0], &[0.0]);
    assert_lanes("... at 4", &eq, &[4.0], &[0.25]);
    let eq = eq1(|x| 1.0 / select(x.gt(0.0), x, 0.0));
    assert_lanes("1/select(x>0, x, 0) at 0", &eq, &[0.0], &[0.0]);
    assert_eq!(eq.hessian([0.0]).unwrap(), [0.0]);
    assert_eq!(eq.hvp([1.0], [0.0]).unwrap(), [0.0]);
    // Through max's answered operand too.
    let eq = eq1(|x| x.max(0.0).sqrt());
    assert_lanes("sqrt(max(x, 0)) at -1", &eq, &[-1.0], &[0.0]);
    // A guarded path that rejoins an unguarded one keeps the unguarded share.
    let eq = eq1(|x| (select(x.gt(0.0), x, 0.0) + x * 2.0).sqrt());
    let g = eq.jacobian(0.0).unwrap()[0];
    assert!(
        g.is_infinite(),
        "d sqrt(u)/du = ∞ at u = 0 times u' = 2: {g}"
    );
    assert_eq!(eq.jvp([1.0], 0.0).unwrap()[0], g);
}

/// A residual `y − a·exp(−b·x)` of observation `k` of `n`.
fn residual(a: Expr, b: Expr, k: usize, n: usize) -> Expr {
    let x = k as f64 / n as f64;
    let y = 3.0 + (k as f64 * 0.7).sin();
    y - a * (-b * x).exp()
}

/// The running maximum, minimum or last-smaller (`select`) of `n` residuals.
fn running(kind: usize, n: usize) -> Equation {
    rt::equation(|| {
        let (a, b) = (rt::var("a"), rt::var("b"));
        let mut m = residual(a, b, 0, n);
        for k in 1..n {
            let r = residual(a, b, k, n);
            m = match kind {
                0 => m.max(r),
                1 => m.min(r),
                _ => select(r.lt(m), r, m),
            };
        }
        m
    })
    .unwrap()
}

#[test]
fn a_running_maximum_has_a_linear_lane_and_the_maximums_gradient() {
    use ddx::LaneKind;
    for kind in 0..3 {
        // Every link adds a condition to the adjoints below it; masked through one shared
        // node per guard, the lanes grow with the chain, not with its square (250 199
        // gradient nodes at 400 links before, 5 997 for a running sum).
        let nodes = |n: usize, lane| running(kind, n).nodes(lane).unwrap();
        for lane in [LaneKind::Gradient, LaneKind::Jacobian, LaneKind::Hessian] {
            let (small, large) = (nodes(200, lane), nodes(400, lane));
            assert!(
                large * 10 <= small * 22 && large <= 100 * 400,
                "kind {kind}, {lane:?}: {small} nodes at 200 links, {large} at 400"
            );
        }
        // The gradient is the winning residual's, in every lane (closed form).
        let n = 300;
        let eq = running(kind, n);
        let (a, b) = (1.3, 0.8);
        let values: Vec<f64> = (0..n)
            .map(|k| {
                let x = k as f64 / n as f64;
                3.0 + (k as f64 * 0.7).sin() - a * (-b * x).exp()
            })
            .collect();
        let mut best = 0;
        for k in 1..n {
            let better = match kind {
                0 => values[k] > values[best],
                _ => values[k] < values[best],
            };
            if better {
                best = k;
            }
        }
        let x = best as f64 / n as f64;
        let want = [-(-b * x).exp(), a * x * (-b * x).exp()];
        for (lane, got) in all_lanes(&eq, &[a, b]) {
            for (g, w) in got.iter().zip(want) {
                assert!(
                    (g - w).abs() <= 4.0 * f64::EPSILON * w.abs(),
                    "kind {kind}, {lane}: {got:?}, want {want:?} (observation {best})"
                );
            }
        }
    }
}

#[test]
fn an_untaken_arm_deep_in_a_long_chain_never_reaches_the_derivative() {
    // q grows by sqrt(x − k) for each k below x: at x = 10 the link k = 10 is untaken and
    // its arm holds sqrt'(0) = ∞, under guards folded many links deep.
    let links = 60;
    let eq = eq1(|x| {
        let mut q = Expr::from(0.0);
        for k in 0..links {
            let d = x - k as f64;
            q = select(d.gt(0.0), q + d.sqrt(), q * 1.0);
        }
        q
    });
    let x = 10.0;
    let want: f64 = (0..10).map(|k| 0.5 / (x - k as f64).sqrt()).sum();
    for (lane, got) in all_lanes(&eq, &[x]) {
        assert!(
            (got[0] - want).abs() <= 1e-14 * want,
            "{lane}: {got:?}, want {want}"
        );
    }
    let second: f64 = (0..10).map(|k| -0.25 / (x - k as f64).powf(1.5)).sum();
    let h = eq.hessian([x]).unwrap()[0];
    assert!(
        (h - second).abs() <= 1e-14 * second.abs(),
        "{h} against {second}"
    );
}

#[test]
fn guards_keep_their_contradictions_sums_order_and_zeros() {
    // Tester 40's cases, which broke guards folded at two conditions (`ad::guard`). An inner `a > 0` false
    // arm under the outer `a > 0` true arm is a contradiction: that path is dropped, and
    // ∂f/∂b is the live path's c = −0 (a term masked to +0 instead would make it +0).
    let eq: Equation =
        "select(a > 0, select(a > -1, select(a > -2, select(a > 0, 0, 3*b), 0), 0), 0) + b*c"
            .parse()
            .unwrap();
    let p = [1.0, 0.0, -0.0];
    for (lane, got) in [
        ("gradient", eq.gradient(p).unwrap()),
        ("jacobian", eq.jacobian(p).unwrap()),
        ("vjp", eq.vjp(&[1.0], p).unwrap()),
    ] {
        assert_eq!(got[1].to_bits(), (-0.0f64).to_bits(), "{lane}: {got:?}");
    }
    // Terms under equal guards are summed together before the others, as ever: the same
    // last bits (folding those guards in different orders summed them apart).
    let eq: Equation = "pow(select((c < 1), (1/(select((a < a), pow(c, 0.5), pow(b, c)) + (sign(pow(-1, 0.5)) * select((c <= c), 2, (c - 1))))), log((hypot(select((c < 1), -1, b), min(a, c)) * atan2(select((c < 1), (c - 0), a), select((c < c), (a - 0.5), a))))), 0.5)"
        .parse()
        .unwrap();
    let p = [3.0, 3.0, f64::NAN];
    assert_eq!(eq.gradient(p).unwrap()[0], 0.07595804929004515);
    assert_eq!(eq.hessian(p).unwrap()[0], -0.0052589937512715155);
    // Tester 41's: a guard of three conditions masked through one shared node changed
    // this Hessian cell's zero from −0 to +0 (the mask is differentiated again).
    let eq: Equation = "select(b > 1, 0, select(c < a, atan2(select(b != 0, b, c), c), 0))"
        .parse()
        .unwrap();
    let h = eq.hessian([2.0, 0.5, -1e300]).unwrap();
    assert_eq!(h[7].to_bits(), (-0.0f64).to_bits(), "{h:?}");
}
