//! User functions of more than two arguments (issue 17): a call reads its arguments
//! through a chain of pack nodes, and every lane, engine, the text parser and the cache
//! read through it.
//!
//! The truths: the same model written with built-in operations (closed forms of what the
//! user code computes), central finite differences, a second AD mode (`jvp`/`hvp` against
//! the Jacobian and the Hessian), and interpreter against JIT, bit for bit.

use ddx::{rt, Backend, Equation, Errc, Expr, Formula, Functions, LaneKind, Options, UserFunction};

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

fn close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (k, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}[{k}]: {x} vs {y}\n{a:?}\n{b:?}"
        );
    }
}

/// `f3(a, b, c) = a·b·eᶜ`, with second partials when `second`.
fn f3(second: bool) -> UserFunction {
    let f = UserFunction::new(
        "abexp",
        3,
        |x| x[0] * x[1] * x[2].exp(),
        |x, g| {
            let e = x[2].exp();
            g[0] = x[1] * e;
            g[1] = x[0] * e;
            g[2] = x[0] * x[1] * e;
        },
    )
    .unwrap();
    if !second {
        return f;
    }
    f.with_second(|x, h| {
        let e = x[2].exp();
        let (a, b) = (x[0], x[1]);
        h.copy_from_slice(&[0.0, e, b * e, e, 0.0, a * e, b * e, a * e, a * b * e]);
    })
    .unwrap()
}

/// `f4(a, b, c, d) = sin(a·b) + c·d²`, with second partials.
fn f4() -> UserFunction {
    UserFunction::new(
        "sinsq",
        4,
        |x| (x[0] * x[1]).sin() + x[2] * x[3] * x[3],
        |x, g| {
            let c = (x[0] * x[1]).cos();
            g[0] = x[1] * c;
            g[1] = x[0] * c;
            g[2] = x[3] * x[3];
            g[3] = 2.0 * x[2] * x[3];
        },
    )
    .unwrap()
    .with_second(|x, h| {
        let (a, b, c, d) = (x[0], x[1], x[2], x[3]);
        let (s, co) = ((a * b).sin(), (a * b).cos());
        h.fill(0.0);
        h[0] = -b * b * s;
        h[1] = co - a * b * s;
        h[4] = co - a * b * s;
        h[5] = -a * a * s;
        h[2 * 4 + 3] = 2.0 * d;
        h[3 * 4 + 2] = 2.0 * d;
        h[3 * 4 + 3] = 2.0 * c;
    })
    .unwrap()
}

const W7: [f64; 7] = [0.5, -0.25, 1.0, 0.125, -0.5, 0.75, 0.375];

/// `f7(x) = exp(Σ wᵢ xᵢ) + x₀·x₆`, with second partials.
fn f7() -> UserFunction {
    let s = |x: &[f64]| W7.iter().zip(x).map(|(w, x)| w * x).sum::<f64>();
    UserFunction::new(
        "expsum7",
        7,
        move |x| s(x).exp() + x[0] * x[6],
        move |x, g| {
            let e = s(x).exp();
            for (gi, w) in g.iter_mut().zip(W7) {
                *gi = w * e;
            }
            g[0] += x[6];
            g[6] += x[0];
        },
    )
    .unwrap()
    .with_second(move |x, h| {
        let e = s(x).exp();
        for i in 0..7 {
            for j in 0..7 {
                h[i * 7 + j] = W7[i] * W7[j] * e;
            }
        }
        h[6] += 1.0;
        h[6 * 7] += 1.0;
    })
    .unwrap()
}

/// The three models through user calls, and each written with built-in operations; the
/// arguments are functions of the symbols, so the chain rule runs through every one.
fn models() -> Vec<(Equation, Equation, usize)> {
    let (g3, g4, g7) = (f3(true), f4(), f7());
    let three = rt::equation(|| {
        let (x, y, z) = (rt::var("x"), rt::var("y"), rt::var("z"));
        g3.call(&[x * y, y.sin(), z - x]) + x
    })
    .unwrap();
    let three_b = rt::equation(|| {
        let (x, y, z) = (rt::var("x"), rt::var("y"), rt::var("z"));
        x * y * y.sin() * (z - x).exp() + x
    })
    .unwrap();
    let four = rt::equation(|| {
        let (x, y, z) = (rt::var("x"), rt::var("y"), rt::var("z"));
        // An argument used twice, and a constant argument (a pack holding a constant).
        g4.call(&[x, y * z, x, Expr::from(1.5)]) * z
    })
    .unwrap();
    let four_b = rt::equation(|| {
        let (x, y, z) = (rt::var("x"), rt::var("y"), rt::var("z"));
        ((x * (y * z)).sin() + x * 1.5 * 1.5) * z
    })
    .unwrap();
    let seven = rt::equation(|| {
        let (x, y, z) = (rt::var("x"), rt::var("y"), rt::var("z"));
        g7.call(&[x, y, z, x * y, y * z, x.cos(), z * z]) - y
    })
    .unwrap();
    let seven_b = rt::equation(|| {
        let (x, y, z) = (rt::var("x"), rt::var("y"), rt::var("z"));
        let a = [x, y, z, x * y, y * z, x.cos(), z * z];
        let s = a
            .iter()
            .zip(W7)
            .map(|(&a, w)| a * w)
            .reduce(|s, t| s + t)
            .unwrap();
        s.exp() + a[0] * a[6] - y
    })
    .unwrap();
    vec![(three, three_b, 3), (four, four_b, 4), (seven, seven_b, 7)]
}

const POINTS: [[f64; 3]; 4] = [
    [0.7, -0.3, 0.4],
    [-1.1, 0.9, 0.2],
    [0.25, 1.5, -0.75],
    [1.3, 0.1, 0.6],
];

#[test]
fn k_argument_functions_match_builtin_forms_differences_and_a_second_mode() {
    for (eq, builtin, k) in models() {
        let what = format!("k = {k}");
        for p in POINTS {
            close(
                &[eq.evaluate(p).unwrap()],
                &[builtin.evaluate(p).unwrap()],
                1e-15,
                &what,
            );
            let g = eq.gradient(p).unwrap();
            close(&g, &builtin.gradient(p).unwrap(), 1e-14, &what);
            // Central differences of the value.
            let h = 1e-6;
            for i in 0..3 {
                let (mut a, mut b) = (p, p);
                a[i] += h;
                b[i] -= h;
                let d = (eq.evaluate(a).unwrap() - eq.evaluate(b).unwrap()) / (2.0 * h);
                assert!((g[i] - d).abs() < 1e-7 * (1.0 + d.abs()), "{what} ∂{i}");
            }
            let hess = eq.hessian(p).unwrap();
            close(&hess, &builtin.hessian(p).unwrap(), 1e-13, &what);
            // Differences of the gradient.
            for j in 0..3 {
                let (mut a, mut b) = (p, p);
                a[j] += h;
                b[j] -= h;
                let (ga, gb) = (eq.gradient(a).unwrap(), eq.gradient(b).unwrap());
                for i in 0..3 {
                    let d = (ga[i] - gb[i]) / (2.0 * h);
                    assert!(
                        (hess[i * 3 + j] - d).abs() < 1e-6 * (1.0 + d.abs()),
                        "{what} H({i},{j})"
                    );
                }
            }
            // Forward mode against reverse mode and the Hessian.
            let v = [0.25, -1.5, 0.5];
            let jv = eq.jvp(v, p).unwrap()[0];
            let want: f64 = (0..3).map(|i| g[i] * v[i]).sum();
            assert!((jv - want).abs() < 1e-13 * (1.0 + want.abs()), "{what} jvp");
            let hv = eq.hvp(v, p).unwrap();
            let want: Vec<f64> = (0..3)
                .map(|i| (0..3).map(|j| hess[i * 3 + j] * v[j]).sum())
                .collect();
            close(&hv, &want, 1e-13, &what);
        }
    }
}

#[test]
fn interpreter_and_jit_agree_to_the_bit_per_point_and_in_batches() {
    for (eq, _, k) in models() {
        let mut jit = eq.clone();
        jit.set_options(Options::with_backend(Backend::Compile));
        for kind in LaneKind::ALL {
            jit.wait_for_kernel_of(kind);
        }
        for kind in [LaneKind::Value, LaneKind::Jacobian, LaneKind::Hessian] {
            assert!(
                jit.uses_kernel_of(kind),
                "k = {k} {kind:?}: {:?}",
                jit.jit_status().error
            );
        }
        let n = 300;
        let col =
            |f: fn(f64) -> f64| -> Vec<f64> { (0..n).map(|i| f(i as f64 / n as f64)).collect() };
        let xs = col(|t| -1.0 + 2.0 * t);
        let ys = col(|t| (7.0 * t).sin());
        let zs = col(|t| 0.5 - t * t);
        for i in (0..n).step_by(13) {
            let p = [xs[i], ys[i], zs[i]];
            let v = [ys[i], 0.5, -zs[i]];
            assert_eq!(
                jit.evaluate(p).unwrap().to_bits(),
                eq.evaluate(p).unwrap().to_bits(),
                "k = {k}"
            );
            assert!(same_bits(
                &jit.gradient(p).unwrap(),
                &eq.gradient(p).unwrap()
            ));
            assert!(same_bits(&jit.hessian(p).unwrap(), &eq.hessian(p).unwrap()));
            assert!(same_bits(&jit.jvp(v, p).unwrap(), &eq.jvp(v, p).unwrap()));
            assert!(same_bits(&jit.hvp(v, p).unwrap(), &eq.hvp(v, p).unwrap()));
        }
        // A batch: both engines, and the loop of per-point calls.
        let cells = eq.jacobian_columns();
        let run = |e: &Equation| {
            let mut v = vec![0.0; n];
            let mut parts = vec![vec![0.0; n]; cells];
            let mut pr: Vec<&mut [f64]> = parts.iter_mut().map(|c| &mut c[..]).collect();
            e.jacobian_batch(&[&xs, &ys, &zs], &mut [&mut v], &mut pr)
                .unwrap();
            (v, parts)
        };
        let (a, b) = (run(&jit), run(&eq));
        assert!(same_bits(&a.0, &b.0), "k = {k}");
        for c in 0..cells {
            assert!(same_bits(&a.1[c], &b.1[c]), "k = {k} column {c}");
        }
        for i in 0..n {
            let p = [xs[i], ys[i], zs[i]];
            assert_eq!(b.0[i].to_bits(), eq.evaluate(p).unwrap().to_bits());
            let g = eq.gradient(p).unwrap();
            assert_eq!(g.len(), cells);
            for (column, gc) in b.1.iter().zip(&g) {
                assert_eq!(column[i].to_bits(), gc.to_bits(), "k = {k} point {i}");
            }
        }
    }
}

#[test]
fn a_k_argument_function_without_second_partials_is_refused_for_hessians() {
    let g = f3(false);
    let eq = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        g.call(&[x, y, x * y])
    })
    .unwrap();
    let p = [0.5, 2.0];
    // f = x·y·e^{xy}: ∂x = y e^{xy}(1 + xy).
    let want = 2.0 * 1f64.exp() * 2.0;
    assert!((eq.gradient(p).unwrap()[0] - want).abs() < 1e-14);
    for e in [
        eq.hessian(p).unwrap_err(),
        eq.hvp([1.0, 0.0], p).unwrap_err(),
    ] {
        assert_eq!(e.code(), Errc::UserFunction);
        assert!(e.to_string().contains("`abexp`"), "{e}");
        assert!(e.to_string().contains("second partials"), "{e}");
    }
    let mut jit = eq.clone();
    jit.set_options(Options::with_backend(Backend::Compile));
    jit.wait_for_kernel_of(LaneKind::Hessian);
    let e = jit.hessian(p).unwrap_err();
    assert!(e.to_string().contains("`abexp`"), "{e}");
    // Taylor to degree 2 needs second partials too; with them it answers the closed form.
    let u = rt::equation(|| {
        let t = rt::var("t");
        g.call(&[t, t, t])
    })
    .unwrap();
    assert_eq!(
        u.univariate_derivatives(2, 0.3).unwrap_err().code(),
        Errc::UserFunction
    );
    let g2 = f3(true);
    let u = rt::equation(|| {
        let t = rt::var("t");
        g2.call(&[t, t * t, -t])
    })
    .unwrap();
    // u(t) = t³e^{−t}: u' = (3t² − t³)e^{−t}, u'' = (6t − 6t² + t³)e^{−t}.
    let t = 0.3_f64;
    let d = u.univariate_derivatives(2, t).unwrap();
    let e = (-t).exp();
    assert!((d[0] - t.powi(3) * e).abs() < 1e-16);
    assert!(
        (d[1] - (3.0 * t * t - t.powi(3)) * e).abs() < 1e-15,
        "{d:?}"
    );
    assert!(
        (d[2] - (6.0 * t - 6.0 * t * t + t.powi(3)) * e).abs() < 1e-14,
        "{d:?}"
    );
    // Third order is given by no user function.
    let e = u.univariate_derivative_of_order(3, t).unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction, "{e}");
    assert!(e.to_string().contains("abexp"), "{e}");
}

#[test]
fn a_panicking_k_argument_function_is_an_error_and_the_process_survives() {
    let bad = UserFunction::new(
        "fragile3",
        3,
        |x| {
            if x[2] > 1.0 {
                panic!("z is too large");
            }
            x[0] + x[1] + x[2]
        },
        |_, g| g.fill(1.0),
    )
    .unwrap();
    let eq = rt::equation(|| bad.call(&[rt::var("x"), rt::var("y"), rt::var("z")])).unwrap();
    assert_eq!(eq.evaluate([1.0, 2.0, 0.5]).unwrap(), 3.5);
    let e = eq.evaluate([1.0, 2.0, 3.0]).unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
    assert!(e.to_string().contains("z is too large"), "{e}");
    assert_eq!(eq.gradient([1.0, 2.0, 0.5]).unwrap(), [1.0, 1.0, 1.0]);
    for backend in [Backend::Interpret, Backend::Compile] {
        let mut b = eq.clone();
        b.set_options(Options::with_backend(backend));
        b.wait_for_kernel_of(LaneKind::Value);
        let zs: Vec<f64> = (0..3000).map(|k| k as f64 / 1000.0).collect();
        let ones = vec![1.0; 3000];
        let mut out = vec![0.0; 3000];
        let e = b
            .evaluate_batch(&[&ones, &ones, &zs], &mut [&mut out])
            .unwrap_err();
        assert!(e.to_string().contains("`fragile3`"), "{backend:?}: {e}");
        let small = vec![0.25; 3000];
        assert!(b
            .evaluate_batch(&[&ones, &ones, &small], &mut [&mut out])
            .is_ok());
        assert_eq!(out[17], 2.25);
    }
    // At constant arguments the call runs while the model is built: its failure fails it.
    let e = rt::equation(|| {
        bad.call(&[Expr::from(1.0), Expr::from(1.0), Expr::from(5.0)]) * rt::var("x")
    })
    .unwrap_err();
    assert!(e.to_string().contains("z is too large"), "{e}");
    let eq = rt::equation(|| {
        bad.call(&[Expr::from(1.0), Expr::from(1.0), Expr::from(0.5)]) * rt::var("x")
    })
    .unwrap();
    assert_eq!(eq.evaluate([2.0]).unwrap(), 5.0);
    // The wrong number of arguments fails the build.
    let e = rt::equation(|| bad.call(&[rt::var("x"), rt::var("y")])).unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
}

#[test]
fn text_calls_k_argument_functions_and_prints_them_back() {
    let (g3, g7) = (f3(true), f7());
    let mut functions = Functions::new();
    functions.add(&g3).add(&g7);
    let text = "abexp(a, b * c, c) + expsum7(a, b, c, a, b, c, sin(a)) - a";
    let eq = rt::equation_text_with_functions(text, &functions).unwrap();
    let closure = rt::equation(|| {
        let (a, b, c) = (rt::var("a"), rt::var("b"), rt::var("c"));
        g3.call(&[a, b * c, c]) + g7.call(&[a, b, c, a, b, c, a.sin()]) - a
    })
    .unwrap();
    let p = [0.4, 0.9, -0.2];
    assert_eq!(
        eq.evaluate(p).unwrap().to_bits(),
        closure.evaluate(p).unwrap().to_bits()
    );
    assert!(same_bits(
        &eq.hessian(p).unwrap(),
        &closure.hessian(p).unwrap()
    ));
    // Printing round-trips through the parser.
    let printed = eq.to_string();
    let line = printed.lines().next().unwrap();
    assert_eq!(line, format!("f0: {text}"));
    let again = rt::equation_text_with_functions(&line[4..], &functions).unwrap();
    assert!(same_bits(
        &again.gradient(p).unwrap(),
        &eq.gradient(p).unwrap()
    ));
    // Constant arguments fold the call; the wrong count is refused.
    let c = rt::equation_text_with_functions("abexp(1, 2, 0) * a", &functions).unwrap();
    assert_eq!(c.evaluate([3.0]).unwrap(), 6.0);
    let e = Formula::parse_with("abexp(a, b)", &functions).unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
    assert!(e.to_string().contains("abexp"), "{e}");
}

#[test]
fn two_functions_of_one_name_in_one_registry_are_refused() {
    let (a, b) = (f3(false), f3(true));
    let mut functions = Functions::new();
    // The same function twice is one function.
    functions.add(&a).add(&a);
    assert!(Formula::parse_with("abexp(x, y, z)", &functions).is_ok());
    // Another function of the same name (here: the same code with second partials).
    functions.add(&b);
    let e = Formula::parse_with("abexp(x, y, z)", &functions).unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
    assert!(e.to_string().contains("`abexp`"), "{e}");
    assert!(e.to_string().contains("two different functions"), "{e}");
    let e = rt::equation_text_with_functions("x + 1", &functions).unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
}

#[test]
fn the_cache_resweeps_a_k_argument_equation_to_a_full_sweeps_bits() {
    let g = f4();
    let eq = rt::equation(|| {
        let (x, y, z, w) = (rt::var("x"), rt::var("y"), rt::var("z"), rt::var("w"));
        g.call(&[x, y, z * w, w]) + x * w
    })
    .unwrap()
    .with_cache(ddx::LastValue::new());
    let off = eq.clone().without_cache();
    for p in [
        [0.5, 1.0, 0.25, 2.0],
        [0.5, 1.0, 0.25, 2.5],
        [0.75, 1.0, 0.25, 2.5],
        [0.75, 1.0, 0.25, 2.5],
        [0.75, -1.0, 0.5, 2.5],
        [0.25, -1.0, 0.5, -1.0],
    ] {
        assert_eq!(
            eq.evaluate(p).unwrap().to_bits(),
            off.evaluate(p).unwrap().to_bits()
        );
        assert!(same_bits(
            &eq.gradient(p).unwrap(),
            &off.gradient(p).unwrap()
        ));
        assert!(same_bits(&eq.hessian(p).unwrap(), &off.hessian(p).unwrap()));
    }
    assert!(eq.cache_stats().unwrap().resweeps > 0);
}

#[test]
fn saving_the_device_and_emitted_source_refuse_a_k_argument_function() {
    let g = f3(true);
    let eq = rt::equation(|| g.call(&[rt::var("x"), rt::var("y"), rt::var("z")])).unwrap();
    let e = eq.to_bytes().unwrap_err();
    assert_eq!(e.code(), Errc::UserFunction);
    assert!(e.to_string().contains("abexp"), "{e}");
    for kind in [LaneKind::Value, LaneKind::Gradient] {
        assert_eq!(
            eq.to_rust_source("f", kind).unwrap_err().code(),
            Errc::UserFunction
        );
    }
    // Under the device backend the lane answers from the CPU, with the reason.
    let mut dev = eq.clone();
    dev.set_options(Options::with_backend(Backend::Device));
    let (xs, ys, zs) = (vec![0.5; 64], vec![2.0; 64], vec![0.25; 64]);
    let mut out = vec![0.0; 64];
    dev.evaluate_batch(&[&xs, &ys, &zs], &mut [&mut out])
        .unwrap();
    assert_eq!(
        out[0].to_bits(),
        eq.evaluate([0.5, 2.0, 0.25]).unwrap().to_bits()
    );
    dev.wait_for_kernel_of(LaneKind::Value);
    if let Some(Err(e)) = dev.device_status() {
        eprintln!("device: {e}");
    }
}
