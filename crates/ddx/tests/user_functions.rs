//! User functions with their own partials (`ddx::UserFunction`), through every lane.
//!
//! The truths: closed forms of the functions the user code implements, central finite
//! differences of the values, the same model written with built-in operations (a user
//! function whose code is `exp`/`sin` and whose partials are theirs gives the built-in
//! model's bits), and interpreter against JIT, bit for bit.

mod common;

use ddx::{rt, Backend, Equation, Errc, Formula, Functions, LaneKind, Options, UserFunction};

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// `g(x, y) = x·exp(y)` with its partials; second partials when `second`.
fn xexp(second: bool) -> UserFunction {
    let f = UserFunction::new(
        "xexp",
        2,
        |x| x[0] * x[1].exp(),
        |x, g| {
            let e = x[1].exp();
            g[0] = e;
            g[1] = x[0] * e;
        },
    )
    .unwrap();
    if !second {
        return f;
    }
    f.with_second(|x, h| {
        let e = x[1].exp();
        h.copy_from_slice(&[0.0, e, e, x[0] * e]);
    })
    .unwrap()
}

#[test]
fn derivatives_through_a_user_function_match_closed_forms_and_differences() {
    let g = xexp(true);
    // F = g(a·b, sin b) + a.
    let eq = rt::equation(|| {
        let (a, b) = (rt::var("a"), rt::var("b"));
        g.call(&[a * b, b.sin()]) + a
    })
    .unwrap();
    let (a, b) = (0.7_f64, -0.3_f64);
    let f = |a: f64, b: f64| a * b * b.sin().exp() + a;
    assert_eq!(eq.evaluate([a, b]).unwrap(), f(a, b));
    // ∂F/∂a = b·e^{sin b} + 1; ∂F/∂b = a·e^{sin b} + ab·cos b·e^{sin b}.
    let e = b.sin().exp();
    let want = [b * e + 1.0, a * e + a * b * b.cos() * e];
    let got = eq.gradient([a, b]).unwrap();
    for k in 0..2 {
        assert!((got[k] - want[k]).abs() < 1e-15, "{got:?} {want:?}");
    }
    // Central differences of the value, step 1e-6.
    let h = 1e-6;
    let fd = [
        (f(a + h, b) - f(a - h, b)) / (2.0 * h),
        (f(a, b + h) - f(a, b - h)) / (2.0 * h),
    ];
    for k in 0..2 {
        assert!((got[k] - fd[k]).abs() < 1e-8);
    }
    // Second order: the Hessian against differences of the gradient.
    let hess = eq.hessian([a, b]).unwrap();
    let gp = |a: f64, b: f64| eq.gradient([a, b]).unwrap();
    for j in 0..2 {
        let (p, m) = if j == 0 {
            (gp(a + h, b), gp(a - h, b))
        } else {
            (gp(a, b + h), gp(a, b - h))
        };
        for i in 0..2 {
            let d = (p[i] - m[i]) / (2.0 * h);
            assert!((hess[i * 2 + j] - d).abs() < 1e-7, "H({i},{j})");
        }
    }
    // jvp, vjp, hvp agree with the Jacobian and the Hessian.
    let v = [0.25, -1.5];
    let jv = eq.jvp(v, [a, b]).unwrap()[0];
    assert!((jv - (got[0] * v[0] + got[1] * v[1])).abs() < 1e-15);
    let hv = eq.hvp(v, [a, b]).unwrap();
    for i in 0..2 {
        assert!((hv[i] - (hess[i * 2] * v[0] + hess[i * 2 + 1] * v[1])).abs() < 1e-14);
    }
    // Taylor to degree 2 along the one symbol of a univariate model.
    let u = rt::equation(|| {
        let t = rt::var("t");
        g.call(&[t, t * t])
    })
    .unwrap();
    // u(t) = t·e^{t²}: u' = e^{t²}(1 + 2t²), u'' = e^{t²}(6t + 4t³).
    let t = 0.4_f64;
    let d = u.univariate_derivatives(2, t).unwrap();
    let et = (t * t).exp();
    assert!((d[1] - et * (1.0 + 2.0 * t * t)).abs() < 1e-14);
    assert!((d[2] - et * (6.0 * t + 4.0 * t * t * t)).abs() < 1e-13);
    // Order 3 needs partials the function does not give: refused, naming it (the Taylor
    // route falls back on the derivative-tensor lanes, which meet the missing order).
    let e = u.univariate_derivative_of_order(3, t).unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction, "{e}");
    assert!(e.to_string().contains("xexp"), "{e}");
}

/// A user function that is `exp` with `exp`'s partials gives the built-in model's bits;
/// the interpreter and the JIT agree to the bit, per point and in batches.
#[test]
fn user_code_gives_the_builtin_bits_in_every_engine() {
    let uexp = UserFunction::new("uexp", 1, |x| x[0].exp(), |x, g| g[0] = x[0].exp())
        .unwrap()
        .with_second(|x, h| h[0] = x[0].exp())
        .unwrap();
    let user = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        uexp.call(&[x * y]) * y + x
    })
    .unwrap();
    let builtin = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        (x * y).exp() * y + x
    })
    .unwrap();
    let p = [0.3, 1.7];
    assert_eq!(
        user.evaluate(p).unwrap().to_bits(),
        builtin.evaluate(p).unwrap().to_bits()
    );
    assert!(same_bits(
        &user.jacobian(p).unwrap(),
        &builtin.jacobian(p).unwrap()
    ));
    let mut jit = user.clone();
    jit.set_options(Options::with_backend(Backend::Compile));
    for k in LaneKind::ALL {
        jit.wait_for_kernel_of(k);
    }
    assert!(
        jit.uses_kernel_of(LaneKind::Jacobian),
        "{:?}",
        jit.jit_status().error
    );
    let n = 700;
    let xs: Vec<f64> = (0..n).map(|k| -2.0 + 4.0 * k as f64 / n as f64).collect();
    let ys: Vec<f64> = (0..n).map(|k| 1.0 - (k as f64 * 0.37).sin()).collect();
    for k in (0..n).step_by(7) {
        let q = [xs[k], ys[k]];
        assert_eq!(
            jit.evaluate(q).unwrap().to_bits(),
            user.evaluate(q).unwrap().to_bits()
        );
        assert!(same_bits(
            &jit.gradient(q).unwrap(),
            &user.gradient(q).unwrap()
        ));
        assert!(same_bits(
            &jit.hessian(q).unwrap(),
            &user.hessian(q).unwrap()
        ));
        assert!(same_bits(
            &jit.hessian(q).unwrap(),
            &builtin.hessian(q).unwrap()
        ));
    }
    let cells = user.jacobian_columns();
    let run = |eq: &Equation| {
        let mut v = vec![0.0; n];
        let mut parts = vec![vec![0.0; n]; cells];
        let mut pr: Vec<&mut [f64]> = parts.iter_mut().map(|c| &mut c[..]).collect();
        eq.jacobian_batch(&[&xs, &ys], &mut [&mut v], &mut pr)
            .unwrap();
        (v, parts)
    };
    assert_eq!(run(&jit), run(&user));
}

#[test]
fn a_missing_order_is_refused_naming_the_function() {
    let g = xexp(false);
    let eq = rt::equation(|| {
        let (a, b) = (rt::var("a"), rt::var("b"));
        g.call(&[a, b]) * a
    })
    .unwrap();
    assert!(eq.gradient([1.0, 2.0]).is_ok());
    for e in [
        eq.hessian([1.0, 2.0]).unwrap_err(),
        eq.hvp([1.0, 0.0], [1.0, 2.0]).unwrap_err(),
    ] {
        assert_eq!(e.code(), Errc::UserFunction);
        assert!(e.to_string().contains("`xexp`"), "{e}");
        assert!(e.to_string().contains("second partials"), "{e}");
    }
    let mut jit = eq.clone();
    jit.set_options(Options::with_backend(Backend::Compile));
    jit.wait_for_kernel_of(LaneKind::Hessian);
    assert_eq!(
        jit.hessian([1.0, 2.0]).unwrap_err().code(),
        Errc::UserFunction
    );
    // Batches report it too.
    let (xs, ys) = (vec![1.0; 300], vec![2.0; 300]);
    let hc = eq.hessian_columns();
    let mut v = vec![0.0; 300];
    let mut p = vec![vec![0.0; 300]; eq.jacobian_columns()];
    let mut h = vec![vec![0.0; 300]; hc];
    let mut pr: Vec<&mut [f64]> = p.iter_mut().map(|c| &mut c[..]).collect();
    let mut hr: Vec<&mut [f64]> = h.iter_mut().map(|c| &mut c[..]).collect();
    let e = eq
        .hessian_batch(&[&xs, &ys], &mut [&mut v], &mut pr, &mut hr)
        .unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
    // Third order is refused for every user function.
    let g2 = xexp(true);
    let cube = rt::equation(|| g2.call(&[rt::var("a"), rt::var("b")])).unwrap();
    assert!(cube.derivative_tensor(2, [1.0, 2.0]).is_ok());
    let e = cube.derivative_tensor(3, [1.0, 2.0]).unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
}

#[test]
fn a_panicking_function_is_an_error_and_the_process_survives() {
    let bad = common::fragile();
    let nan = UserFunction::new("nan", 1, |_| f64::NAN, |_, g| g[0] = f64::NAN).unwrap();
    let eq = rt::equation(|| bad.call(&[rt::var("x")]) + nan.call(&[rt::var("y")]) * 0.0).unwrap();
    // A NaN flows as IEEE says.
    assert!(eq.evaluate([0.5, 0.0]).unwrap().is_nan());
    let e = eq.evaluate([2.0, 0.0]).unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
    assert!(e.to_string().contains("x is too large"), "{e}");
    assert!(
        eq.evaluate([0.5, 0.0]).unwrap().is_nan(),
        "still answers afterwards"
    );
    for backend in [Backend::Interpret, Backend::Compile] {
        let mut b = eq.clone();
        b.set_options(Options::with_backend(backend));
        b.wait_for_kernel_of(LaneKind::Value);
        let xs: Vec<f64> = (0..5000).map(|k| k as f64 / 2000.0).collect();
        let ys = vec![0.0; 5000];
        let mut out = vec![0.0; 5000];
        let e = b.evaluate_batch(&[&xs, &ys], &mut [&mut out]).unwrap_err();
        assert!(e.to_string().contains("`fragile`"), "{e}");
        // The points below 1 were answered all the same.
        let ok = vec![0.25; 5000];
        assert!(b.evaluate_batch(&[&ok, &ys], &mut [&mut out]).is_ok());
    }
}

#[test]
fn a_failure_at_constant_arguments_fails_the_build() {
    // A call at constant arguments is folded, so the user code runs while the model is
    // built: its failure is the build's error, not a silent NaN constant.
    let bad = UserFunction::new(
        "fragile_constant",
        1,
        |x| {
            if x[0] > 1.0 {
                panic!("x is too large");
            }
            x[0] * 2.0
        },
        |_, g| g[0] = 2.0,
    )
    .unwrap();
    let e = rt::equation(|| bad.call(&[ddx::Expr::from(2.0)]) + rt::var("x")).unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
    assert!(e.to_string().contains("fragile_constant"), "{e}");
    let mut functions = Functions::new();
    functions.add(&bad);
    let e = rt::equation_text_with_functions("fragile_constant(3) * x", &functions).unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
    assert!(e.to_string().contains("x is too large"), "{e}");
    // At a constant it answers, the call folds to its value.
    let eq = rt::equation(|| bad.call(&[ddx::Expr::from(0.5)]) + rt::var("x")).unwrap();
    assert_eq!(eq.evaluate([1.0]).unwrap(), 2.0);
    let eq = rt::equation_text_with_functions("fragile_constant(0.25) * x", &functions).unwrap();
    assert_eq!(eq.evaluate([2.0]).unwrap(), 1.0);
}

#[test]
fn text_calls_user_functions_through_a_registry() {
    let g = xexp(true);
    let mut functions = Functions::new();
    functions.add(&g);
    let eq = rt::equation_text_with_functions("xexp(a, b) - sin(a)", &functions).unwrap();
    let closure = rt::equation(|| {
        let (a, b) = (rt::var("a"), rt::var("b"));
        g.call(&[a, b]) - a.sin()
    })
    .unwrap();
    let p = [0.4, 0.9];
    assert!(same_bits(
        &eq.hessian(p).unwrap(),
        &closure.hessian(p).unwrap()
    ));
    assert_eq!(
        eq.to_string().lines().next(),
        Some("f0: xexp(a, b) - sin(a)")
    );
    // Without the registry the name is unknown; with the wrong count, refused.
    assert_eq!(
        rt::equation_text("xexp(a, b)").unwrap_err().code(),
        Errc::UnknownFunction
    );
    assert_eq!(
        Formula::parse_with("xexp(a)", &functions)
            .unwrap_err()
            .code(),
        Errc::UserFunction
    );
    // A built-in name cannot be registered; arity is 1 to `MAX_ARITY` (issue 17 took
    // functions of more than two arguments: `user_functions_k.rs`).
    assert!(UserFunction::new("sin", 1, |x| x[0], |_, g| g[0] = 1.0).is_err());
    assert!(UserFunction::new("f0", 0, |_| 0.0, |_, _| {}).is_err());
    assert!(UserFunction::new("f257", 257, |x| x[0], |_, g| g[0] = 1.0).is_err());
}

#[test]
fn saving_the_device_and_emitted_source_refuse_a_user_function() {
    let g = xexp(true);
    let eq = rt::equation(|| g.call(&[rt::var("a"), rt::var("b")])).unwrap();
    let e = eq.to_bytes().unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
    assert!(e.to_string().contains("saved equation"), "{e}");
    assert_eq!(
        eq.to_rust_source("f", LaneKind::Gradient)
            .unwrap_err()
            .code(),
        Errc::UserFunction
    );
    // Under the device backend the lane answers from the CPU, with the reason.
    let mut dev = eq.clone();
    dev.set_options(Options::with_backend(Backend::Device));
    let xs = vec![0.5; 64];
    let mut out = vec![0.0; 64];
    dev.evaluate_batch(&[&xs, &xs], &mut [&mut out]).unwrap();
    assert_eq!(out[0], 0.5 * 0.5f64.exp());
    dev.wait_for_kernel_of(LaneKind::Value);
    if let Some(Err(e)) = dev.device_status() {
        // No device here, or the refusal: either way the CPU answered.
        eprintln!("device: {e}");
    }
}

/// A sweep through user code that failed is never remembered: asked again at the same
/// point, a remembering equation calls the user's code again and answers the error again.
#[test]
fn a_failed_call_is_not_remembered() {
    let bad = common::fragile();
    let eq = rt::equation(|| bad.call(&[rt::var("x")]) * rt::var("y"))
        .unwrap()
        .with_cache(ddx::LastValue::new());
    for _ in 0..3 {
        let e = eq.evaluate([2.0, 1.0]).unwrap_err();
        assert_eq!(e.code(), Errc::UserFunction);
        let e = eq.gradient([2.0, 1.0]).unwrap_err();
        assert_eq!(e.code(), Errc::UserFunction);
    }
    // Moving a coordinate the failing call does not depend on re-sweeps nothing stale.
    assert_eq!(eq.evaluate([0.5, 1.0]).unwrap(), 1.0);
    assert_eq!(eq.evaluate([0.5, 1.0]).unwrap(), 1.0);
    assert!(eq.evaluate([2.0, 3.0]).is_err());
    assert!(eq.evaluate([2.0, 3.0]).is_err());
    // Re-sweeps through user code over the tape give a full sweep's bits.
    let off = eq.clone().without_cache();
    for p in [
        [0.5, 1.0],
        [0.5, 2.5],
        [0.75, 2.5],
        [0.75, 2.5],
        [0.25, -1.0],
    ] {
        assert_eq!(
            eq.evaluate(p).unwrap().to_bits(),
            off.evaluate(p).unwrap().to_bits()
        );
        assert!(same_bits(
            &eq.gradient(p).unwrap(),
            &off.gradient(p).unwrap()
        ));
    }
    assert!(eq.cache_stats().unwrap().resweeps > 0);
}

/// `lane_point_into` reports user code's failures as every per-point call does, with a
/// cache and without: a Hessian through a function without second partials is refused.
#[test]
fn lane_point_into_reports_a_missing_order() {
    let f = xexp(false);
    let plain = rt::equation(|| f.call(&[rt::var("a"), rt::var("b")])).unwrap();
    for eq in [
        plain.clone(),
        plain.clone().with_cache(ddx::LastValue::new()),
    ] {
        let mut out = vec![0.0; eq.lane(LaneKind::Hessian).unwrap().outputs.len()];
        for _ in 0..2 {
            let e = eq
                .lane_point_into(LaneKind::Hessian, &[0.5, 0.25], &mut out)
                .unwrap_err();
            assert_eq!(e.code(), Errc::UserFunction, "{e}");
        }
        let mut g = vec![0.0; eq.lane(LaneKind::Gradient).unwrap().outputs.len()];
        eq.lane_point_into(LaneKind::Gradient, &[0.5, 0.25], &mut g)
            .unwrap();
        assert!(same_bits(&g, &eq.gradient([0.5, 0.25]).unwrap()));
    }
}

/// After user code panics, the rest of the call does not run it again: a batch of 40 000
/// failing points enters the function a handful of times (once per task at most), not
/// 40 000, and the next call runs it afresh.
#[test]
fn a_failed_function_is_not_reentered_for_the_rest_of_a_batch() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static PANICS: AtomicUsize = AtomicUsize::new(0);
    let bad = UserFunction::new(
        "brittle",
        1,
        |x| {
            if x[0] > 1.0 {
                PANICS.fetch_add(1, Ordering::Relaxed);
                panic!("x is too large");
            }
            x[0]
        },
        |_, g| g[0] = 1.0,
    )
    .unwrap();
    let eq = rt::equation(|| bad.call(&[rt::var("x")]) * rt::var("y")).unwrap();
    for backend in [Backend::Interpret, Backend::Compile] {
        let mut b = eq.clone();
        b.set_options(Options::with_backend(backend));
        b.wait_for_kernel_of(LaneKind::Value);
        PANICS.store(0, Ordering::Relaxed);
        let xs = vec![2.0; 40_000];
        let ys = vec![1.0; 40_000];
        let mut out = vec![0.0; 40_000];
        let e = b.evaluate_batch(&[&xs, &ys], &mut [&mut out]).unwrap_err();
        assert_eq!(e.code(), Errc::UserFunction);
        let entered = PANICS.load(Ordering::Relaxed);
        assert!(
            (1..=256).contains(&entered),
            "{entered} panics for one batch"
        );
        // The next call runs the function again (and fails again).
        PANICS.store(0, Ordering::Relaxed);
        assert!(b.evaluate([2.0, 1.0]).is_err());
        assert_eq!(PANICS.load(Ordering::Relaxed), 1);
        assert_eq!(b.evaluate([0.5, 2.0]).unwrap(), 1.0);
    }
}

/// User code may run a batch of another equation while this thread's block interpreter
/// runs one (the fresh-user tester's Python `inner.gradient(...)` inside `first` panicked
/// with "RefCell already borrowed" and failed as a user-function error).
#[test]
fn user_code_may_run_another_batch_inside_a_batch() {
    use std::sync::Arc;
    // inner(t) = t·sin t, evaluated by a batch of its own inside the user function.
    let inner = Arc::new(rt::equation(|| rt::var("t") * rt::var("t").sin()).unwrap());
    let by_batch = |eq: &Equation, t: f64| {
        let mut out = [0.0];
        eq.evaluate_batch(&[&[t]], &mut [&mut out]).map(|()| out[0])
    };
    let (iv, ig) = (Arc::clone(&inner), Arc::clone(&inner));
    let f = UserFunction::new(
        "nested",
        1,
        move |x| by_batch(&iv, x[0]).unwrap_or(f64::NAN),
        move |x, g| {
            let mut d = [0.0];
            g[0] = match ig.gradient_batch(&[&[x[0]]], &mut [&mut d[..]]) {
                Ok(()) => d[0],
                Err(_) => f64::NAN,
            };
        },
    )
    .unwrap();
    let eq = rt::equation(|| f.call(&[rt::var("x")]) * rt::var("y")).unwrap();
    let n = 300;
    let xs: Vec<f64> = (0..n).map(|i| 0.01 * i as f64 - 1.0).collect();
    let ys: Vec<f64> = (0..n).map(|i| 1.0 + 0.001 * i as f64).collect();
    let cells = eq.jacobian_columns();
    let mut v = vec![0.0; n];
    let mut parts = vec![vec![0.0; n]; cells];
    let mut pr: Vec<&mut [f64]> = parts.iter_mut().map(|c| &mut c[..]).collect();
    eq.jacobian_batch(&[&xs, &ys], &mut [&mut v], &mut pr)
        .unwrap();
    for i in 0..n {
        let (x, y) = (xs[i], ys[i]);
        // Closed forms: d/dx (x sin x)·y = (sin x + x cos x)·y; d/dy = x sin x.
        assert_eq!(v[i], (x * x.sin()) * y, "value at {x}");
        let dx = (x.sin() + x * x.cos()) * y;
        assert!(
            (parts[0][i] - dx).abs() <= 1e-15 * (1.0 + dx.abs()),
            "d/dx at {x}"
        );
        assert_eq!(parts[1][i], x * x.sin(), "d/dy at {x}");
    }
}
