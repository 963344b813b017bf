//! Parameters (`rt::param`): inputs never differentiated, bound with `with_params`.
//!
//! The truths: a parameter bound to `v` gives the bits of the model built with `v` as a
//! literal; a model with parameter `T` gives the bits of the same model with `T` a symbol,
//! restricted to the other symbols' partials; rebinding compiles nothing; the closed
//! forms of small models.

// Points and columns are indexed as the batch layout states them.
#![allow(clippy::needless_range_loop)]

use ddx::ir::testing::{random_model, ModelSize, Rng};
use ddx::{rt, Backend, Equation, Errc, LaneKind, Model, Options, Scalar, System};

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

#[test]
fn a_parameter_has_no_partial_in_any_lane() {
    // f = T·x² + sin(T·y): symbols x, y; parameter T.
    let eq = rt::equation(|| {
        let (x, y, t) = (rt::var("x"), rt::var("y"), rt::param("T"));
        t * x * x + (t * y).sin()
    })
    .unwrap();
    assert_eq!(eq.symbols(), ["x", "y"]);
    assert_eq!(eq.parameters(), ["T"]);
    assert_eq!(eq.arity(), 2);
    assert_eq!(eq.param_count(), 1);
    for kind in LaneKind::ALL {
        let lane = eq.lane(kind).unwrap();
        assert_eq!((lane.symbols, lane.params), (2, 1), "{kind:?}");
        if let Some(p) = &lane.pattern {
            assert_eq!(p.columns(), 2, "{kind:?}");
        }
        if let Some(h) = &lane.hessian {
            assert_eq!(h.symbols(), 2, "{kind:?}");
        }
    }
    let (t, x, y) = (1.7_f64, 0.3_f64, -1.1_f64);
    let b = eq.with_params([t]).unwrap();
    // Closed forms: ∂f/∂x = 2Tx, ∂f/∂y = T·cos(Ty); ∂²f/∂x² = 2T, ∂²f/∂y² = −T²·sin(Ty).
    let g = b.gradient([x, y]).unwrap();
    assert_eq!(g.len(), 2);
    assert!((g[0] - 2.0 * t * x).abs() < 1e-15);
    assert!((g[1] - t * (t * y).cos()).abs() < 1e-15);
    let h = b.hessian([x, y]).unwrap();
    assert_eq!(h.len(), 4);
    assert!((h[0] - 2.0 * t).abs() < 1e-15);
    assert_eq!((h[1], h[2]), (0.0, 0.0));
    assert!((h[3] + t * t * (t * y).sin()).abs() < 1e-14);
    assert_eq!(b.jvp([1.0, 0.0], [x, y]).unwrap().len(), 1);
    assert_eq!(b.vjp(&[1.0], [x, y]).unwrap().len(), 2);
    assert_eq!(b.hvp([0.0, 1.0], [x, y]).unwrap().len(), 2);
    assert_eq!(b.jacobian_pattern().columns(), 2);
    // Named binding, any order; the value reads the bound T.
    let named = eq.with_params([("T", t)]).unwrap();
    assert_eq!(
        named.evaluate([x, y]).unwrap().to_bits(),
        b.evaluate([x, y]).unwrap().to_bits()
    );
}

#[test]
fn unbound_conflicting_and_misnamed_parameters_are_errors() {
    let eq = rt::equation(|| rt::param("k") * rt::var("x")).unwrap();
    let e = eq.evaluate([1.0]).unwrap_err();
    assert_eq!(e.code(), Errc::ShortPoint);
    assert!(e.to_string().contains("parameter `k` has no value"), "{e}");
    assert_eq!(eq.bound_params(), None);
    assert_eq!(
        eq.with_params([1.0, 2.0]).unwrap_err().code(),
        Errc::WrongArity
    );
    assert_eq!(
        eq.with_params([("q", 1.0)]).unwrap_err().code(),
        Errc::UnknownSymbol
    );
    let both = rt::equation(|| rt::param("x") * rt::var("x")).unwrap_err();
    assert_eq!(both.code(), Errc::DuplicateSymbol);
    assert!(both.to_string().contains("both a symbol and a parameter"));
    // Batch: the symbol columns alone need bound parameters.
    let xs = [1.0, 2.0];
    let mut out = [0.0; 2];
    let e = eq.evaluate_batch(&[&xs], &mut [&mut out]).unwrap_err();
    assert_eq!(e.code(), Errc::ShortPoint);
    let e = eq
        .evaluate_batch(&[&xs, &xs, &xs], &mut [&mut out])
        .unwrap_err();
    assert_eq!(e.code(), Errc::WrongColumnCount);
    assert_eq!(out, [0.0, 0.0], "nothing written on an error");
}

/// A parameter bound to `v` gives the bits of the model with `v` a literal: values,
/// Jacobians, Hessians, products, in the interpreter and the JIT.
#[test]
fn rebinding_gives_the_bits_of_the_literal_model() {
    let model = |t: ddx::Expr, x: ddx::Expr, y: ddx::Expr| {
        (t * x).exp() / (1.0 + y * y) + t * t * x.sin() - (y / t).atan()
    };
    let with_param = rt::equation(|| model(rt::param("T"), rt::var("x"), rt::var("y"))).unwrap();
    for backend in [Backend::Interpret, Backend::Compile] {
        let mut eq = with_param.clone();
        eq.set_options(Options::with_backend(backend));
        for t in [0.5, -2.25, 3.0, 1e-3] {
            let mut literal = rt::equation(|| model(t.into(), rt::var("x"), rt::var("y"))).unwrap();
            literal.set_options(eq.options().clone());
            let b = eq.with_params([t]).unwrap();
            for k in LaneKind::ALL {
                b.wait_for_kernel_of(k);
                literal.wait_for_kernel_of(k);
            }
            let p = [0.7, -0.4];
            assert_eq!(
                b.evaluate(p).unwrap().to_bits(),
                literal.evaluate(p).unwrap().to_bits()
            );
            assert!(same_bits(
                &b.jacobian(p).unwrap(),
                &literal.jacobian(p).unwrap()
            ));
            assert!(same_bits(
                &b.gradient(p).unwrap(),
                &literal.gradient(p).unwrap()
            ));
            assert!(same_bits(
                &b.hessian(p).unwrap(),
                &literal.hessian(p).unwrap()
            ));
            let v = [0.3, 1.9];
            assert!(same_bits(
                &b.jvp(v, p).unwrap(),
                &literal.jvp(v, p).unwrap()
            ));
            assert!(same_bits(
                &b.hvp(v, p).unwrap(),
                &literal.hvp(v, p).unwrap()
            ));
            assert!(same_bits(
                &b.vjp(&[2.0], p).unwrap(),
                &literal.vjp(&[2.0], p).unwrap()
            ));
        }
    }
}

/// Rebinding compiles nothing: the kernels compiled for the first binding answer every
/// later one (the compile count does not move, and the kernels still answer).
#[test]
fn rebinding_compiles_nothing() {
    let mut eq = rt::equation(|| {
        let (k, x) = (rt::param("k"), rt::var("x"));
        (k * x).sin() * x
    })
    .unwrap();
    eq.set_options(Options::with_backend(Backend::Compile));
    let eq = eq.with_params([1.0]).unwrap();
    let _ = eq.gradient([0.5]).unwrap();
    let _ = eq.evaluate([0.5]).unwrap();
    if !(eq.wait_for_kernel_of(LaneKind::Gradient) && eq.wait_for_kernel_of(LaneKind::Value)) {
        eprintln!("no kernels on this host: {:?}", eq.jit_status().error);
        return;
    }
    let compiled = eq.jit_status().compiled;
    assert!(compiled >= 2);
    for i in 0..50 {
        let k = 0.1 * f64::from(i);
        let b = eq.with_params([k]).unwrap();
        assert!(b.uses_kernel_of(LaneKind::Gradient));
        // d/dx sin(kx)·x = k·cos(kx)·x + sin(kx).
        let g = b.gradient([0.5]).unwrap()[0];
        assert!((g - (k * (k * 0.5).cos() * 0.5 + (k * 0.5).sin())).abs() < 1e-15);
    }
    assert_eq!(eq.jit_status().compiled, compiled);
}

/// The model `model` with the inputs `is_param` marks as parameters.
fn with_params(model: &Model, is_param: &[bool]) -> Model {
    Model::seal_with_params(
        model.graph(),
        model.outputs(),
        model.inputs().to_vec(),
        is_param,
    )
}

/// Random models, some symbols made parameters: the same bits as the all-symbol model,
/// restricted to the other symbols' partials — values, Jacobians (and the gradient
/// lane), `vjp` — in the interpreter and the JIT; `jvp` with a zero direction component
/// for each parameter, and Hessian cells, agree in value (a zero tangent's `±0`
/// contributions may flip the sign of a zero sum, and the all-symbol `jvp` is NaN where a
/// parameter's partial is infinite: `∞·0`).
#[test]
fn parameters_give_the_bits_of_symbols_restricted() {
    let size = ModelSize {
        nodes: 30,
        symbols: 4,
        outputs: 2,
        ..ModelSize::default()
    };
    for seed in 0..60u64 {
        let all = random_model(seed, &size);
        let names = all.inputs().to_vec();
        let is_param: Vec<bool> = (0..names.len()).map(|i| (seed >> i) & 1 == 1).collect();
        if is_param.iter().all(|&b| b) {
            continue;
        }
        let part = with_params(&all, &is_param);
        let kept: Vec<usize> = (0..names.len()).filter(|&i| !is_param[i]).collect();
        let params: Vec<usize> = (0..names.len()).filter(|&i| is_param[i]).collect();
        assert_eq!(part.arity(), kept.len());
        for backend in [Backend::Interpret, Backend::Compile] {
            let opts = Options::with_backend(backend);
            let mut a = Equation::<System>::from(all.clone());
            a.set_options(opts.clone());
            let mut p = Equation::<System>::from(part.clone());
            p.set_options(opts);
            let mut rng = Rng::new(seed);
            for _ in 0..3 {
                let x: Vec<f64> = (0..names.len()).map(|_| rng.unit() * 4.0 - 2.0).collect();
                let xp: Vec<f64> = kept.iter().map(|&i| x[i]).collect();
                let tp: Vec<f64> = params.iter().map(|&i| x[i]).collect();
                let b = p.with_params(&tp[..]).unwrap();
                assert!(same_bits(
                    &a.evaluate(&x[..]).unwrap(),
                    &b.evaluate(&xp[..]).unwrap()
                ));
                let (m, n, np) = (all.outputs().len(), names.len(), kept.len());
                let restrict = |full: &[f64]| -> Vec<f64> {
                    (0..m)
                        .flat_map(|r| kept.iter().map(move |&j| full[r * n + j]))
                        .collect()
                };
                let ja = a.jacobian(&x[..]).unwrap();
                assert!(
                    same_bits(&restrict(&ja), &b.jacobian(&xp[..]).unwrap()),
                    "seed {seed} {backend:?}"
                );
                let ga = a.gradient(&x[..]).unwrap();
                assert!(same_bits(&restrict(&ga), &b.gradient(&xp[..]).unwrap()));
                let w: Vec<f64> = (0..m).map(|_| rng.unit() - 0.5).collect();
                let va = a.vjp(&w, &x[..]).unwrap();
                let vk: Vec<f64> = kept.iter().map(|&j| va[j]).collect();
                assert!(same_bits(&vk, &b.vjp(&w, &xp[..]).unwrap()));
                let close = |u: f64, v: f64| u == v || (u.is_nan() && v.is_nan());
                let mut dir = vec![0.0; n];
                for &j in &kept {
                    dir[j] = rng.unit() - 0.5;
                }
                let dp: Vec<f64> = kept.iter().map(|&j| dir[j]).collect();
                let (ua, ub) = (
                    a.jvp(&dir[..], &x[..]).unwrap(),
                    b.jvp(&dp[..], &xp[..]).unwrap(),
                );
                for r in 0..m {
                    // The all-symbol jvp multiplies the parameter columns by their zero
                    // direction: an infinite or NaN cell there makes its product NaN
                    // (plain IEEE), which the parameter's lane never computes.
                    if params.iter().all(|&j| ja[r * n + j].is_finite()) {
                        assert!(close(ua[r], ub[r]), "jvp seed {seed}: {ua:?} {ub:?}");
                    }
                }
                if m == 1 {
                    let ha = Equation::<Scalar>::try_from(all.clone()).unwrap();
                    let hb = Equation::<Scalar>::try_from(part.clone())
                        .unwrap()
                        .with_params(&tp[..])
                        .unwrap();
                    let (h1, h2) = (ha.hessian(&x[..]).unwrap(), hb.hessian(&xp[..]).unwrap());
                    for (r, &i) in kept.iter().enumerate() {
                        for (c, &j) in kept.iter().enumerate() {
                            assert!(close(h1[i * n + j], h2[r * np + c]), "hessian seed {seed}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn text_marks_parameters_and_lists_each_in_byte_order() {
    let eq = rt::equation_text_with_params("b * x + a * y + B", &["b", "B", "unused"]).unwrap();
    assert_eq!(eq.symbols(), ["a", "x", "y"]);
    assert_eq!(eq.parameters(), ["B", "b", "unused"]);
    let b = eq.with_params([10.0, 2.0, 0.0]).unwrap();
    // ∂/∂a = y, ∂/∂x = b, ∂/∂y = a.
    assert_eq!(b.gradient([3.0, 5.0, 7.0]).unwrap(), [7.0, 2.0, 3.0]);
    assert_eq!(
        b.evaluate([3.0, 5.0, 7.0]).unwrap(),
        2.0 * 5.0 + 3.0 * 7.0 + 10.0
    );
    let sys = rt::system_text_with_params(&["k * x", "k + y"], &["k"]).unwrap();
    assert_eq!(
        (sys.symbols().len(), sys.parameters()),
        (2, &["k".to_string()][..])
    );
    assert_eq!(
        sys.with_params([4.0])
            .unwrap()
            .jacobian([1.0, 1.0])
            .unwrap(),
        [4.0, 0.0, 0.0, 1.0]
    );
    // Printed, a parameter reads by its name.
    assert!(b.to_string().contains("d/dx: b"), "{b}");
}

/// Batch calls take parameter columns after the symbol columns (each as long as the
/// batch, or broadcast), or broadcast the bound values; each point equals its per-point
/// call, bit for bit, in the interpreter and the JIT.
#[test]
fn batches_with_parameter_columns_equal_per_point_calls() {
    let base = rt::equation(|| {
        let (x, y, t) = (rt::var("x"), rt::var("y"), rt::param("t"));
        [(x * t).sin() * y, x.hypot(y) - t]
    })
    .unwrap();
    let len = 2500;
    let mut rng = Rng::new(7);
    let col = |rng: &mut Rng| -> Vec<f64> { (0..len).map(|_| rng.unit() * 3.0 - 1.5).collect() };
    let (xs, ys, ts) = (col(&mut rng), col(&mut rng), col(&mut rng));
    for backend in [Backend::Interpret, Backend::Compile] {
        let mut eq = base.clone();
        eq.set_options(Options::with_backend(backend));
        eq.wait_for_kernel_of(LaneKind::Jacobian);
        let cells = eq.jacobian_columns();
        let run = |eq: &Equation<System>, inputs: &[&[f64]]| {
            let mut v = vec![vec![0.0; len]; 2];
            let mut p = vec![vec![0.0; len]; cells];
            {
                let mut vr: Vec<&mut [f64]> = v.iter_mut().map(|c| &mut c[..]).collect();
                let mut pr: Vec<&mut [f64]> = p.iter_mut().map(|c| &mut c[..]).collect();
                eq.jacobian_batch(inputs, &mut vr, &mut pr).unwrap();
            }
            (v, p)
        };
        // A full parameter column.
        let (v, p) = run(&eq, &[&xs, &ys, &ts]);
        for k in 0..len {
            let b = eq.with_params([ts[k]]).unwrap();
            let want = b.jacobian([xs[k], ys[k]]).unwrap();
            let vals = b.evaluate([xs[k], ys[k]]).unwrap();
            assert!(same_bits(&[v[0][k], v[1][k]], &vals));
            let got: Vec<f64> = p.iter().map(|c| c[k]).collect();
            let pattern = b.jacobian_pattern();
            let dense: Vec<f64> = pattern
                .entries()
                .iter()
                .map(|c| want[c.row * 2 + c.column])
                .collect();
            assert!(same_bits(&got, &dense));
        }
        // A broadcast parameter column, and the bound value: the same bits.
        let t0 = [0.625];
        let (v1, p1) = run(&eq, &[&xs, &ys, &t0]);
        let bound = eq.with_params(t0).unwrap();
        let (v2, p2) = run(&bound, &[&xs, &ys]);
        assert_eq!((&v1, &p1), (&v2, &p2));
        for k in (0..len).step_by(97) {
            let vals = bound.evaluate([xs[k], ys[k]]).unwrap();
            assert!(same_bits(&[v1[0][k], v1[1][k]], &vals));
        }
    }
}

/// Every batch kind with broadcast columns (a symbol, a parameter, a direction component,
/// a weight) equals the loop of per-point calls, bit for bit, interpreted and compiled,
/// across stage boundaries and on every thread count rayon picks.
#[test]
fn broadcast_batches_equal_the_loop_of_per_point_calls() {
    let base = rt::equation(|| {
        let (x, y, t) = (rt::var("x"), rt::var("y"), rt::param("t"));
        (x * t).sin() * y * y + (y - t).exp() / (1.0 + x * x)
    })
    .unwrap();
    let len = 3 * 1024 + 17;
    let mut rng = Rng::new(11);
    let xs: Vec<f64> = (0..len).map(|_| rng.unit() * 3.0 - 1.5).collect();
    let (y0, t0) = ([0.75], [-0.5]);
    let vx: Vec<f64> = (0..len).map(|_| rng.unit() - 0.5).collect();
    let vy = [0.25];
    for backend in [Backend::Interpret, Backend::Compile] {
        let mut eq = base.clone();
        eq.set_options(Options::with_backend(backend));
        for k in LaneKind::ALL {
            eq.wait_for_kernel_of(k);
        }
        let b = eq.with_params(t0).unwrap();
        let at = |k: usize| [xs[k], y0[0]];
        let inputs: [&[f64]; 3] = [&xs, &y0, &t0];
        let column = || vec![0.0; len];
        // evaluate
        let mut v = column();
        eq.evaluate_batch(&inputs, &mut [&mut v]).unwrap();
        // jacobian
        let cells = eq.jacobian_columns();
        let (mut jv, mut jp) = (column(), vec![column(); cells]);
        {
            let mut pr: Vec<&mut [f64]> = jp.iter_mut().map(|c| &mut c[..]).collect();
            eq.jacobian_batch(&inputs, &mut [&mut jv], &mut pr).unwrap();
        }
        // jvp with a broadcast direction component
        let (mut uv, mut up) = (column(), column());
        eq.jvp_batch(&inputs, &[&vx, &vy], &mut [&mut uv], &mut [&mut up])
            .unwrap();
        // vjp with a broadcast weight
        let (mut wv, mut wx, mut wy) = (column(), column(), column());
        eq.vjp_batch(&inputs, &[&[2.0]], &mut [&mut wv], &mut [&mut wx, &mut wy])
            .unwrap();
        // hessian
        let hc = eq.hessian_columns();
        let (mut hv, mut hp, mut hh) = (column(), vec![column(); cells], vec![column(); hc]);
        {
            let mut pr: Vec<&mut [f64]> = hp.iter_mut().map(|c| &mut c[..]).collect();
            let mut hr: Vec<&mut [f64]> = hh.iter_mut().map(|c| &mut c[..]).collect();
            eq.hessian_batch(&inputs, &mut [&mut hv], &mut pr, &mut hr)
                .unwrap();
        }
        let pattern = b.jacobian_pattern().clone();
        for k in 0..len {
            let p = at(k);
            assert_eq!(
                v[k].to_bits(),
                b.evaluate(p).unwrap().to_bits(),
                "{backend:?} {k}"
            );
            let j = b.jacobian(p).unwrap();
            assert_eq!(jv[k].to_bits(), v[k].to_bits());
            for (c, cell) in pattern.entries().iter().enumerate() {
                assert_eq!(
                    jp[c][k].to_bits(),
                    j[cell.column].to_bits(),
                    "{backend:?} {k}"
                );
            }
            let u = b.jvp([vx[k], vy[0]], p).unwrap();
            assert_eq!(up[k].to_bits(), u[0].to_bits());
            let w = b.vjp(&[2.0], p).unwrap();
            assert_eq!(
                (wx[k].to_bits(), wy[k].to_bits()),
                (w[0].to_bits(), w[1].to_bits())
            );
            let h = b.hessian(p).unwrap();
            for i in 0..2 {
                for jj in 0..2 {
                    if let Some(c) = b.hessian_cell(i, jj) {
                        assert_eq!(hh[c][k].to_bits(), h[i * 2 + jj].to_bits(), "{k} {i} {jj}");
                    }
                }
            }
        }
        // Lengths other than the batch's and 1 are still refused, and nothing is written.
        let short = vec![0.0; 5];
        let mut out = column();
        let e = eq
            .evaluate_batch(&[&xs, &short, &t0], &mut [&mut out])
            .unwrap_err();
        assert_eq!(e.code(), Errc::ColumnLength);
        assert!(out.iter().all(|&o| o == 0.0));
    }
}

/// A saved equation keeps its parameters; the loaded one answers the same bits.
#[test]
fn parameters_survive_saving_and_loading() {
    let eq = rt::equation(|| rt::param("k") * rt::var("x").exp() + rt::param("c")).unwrap();
    let _ = eq.with_params([1.0, 2.0]).unwrap().hessian([0.5]).unwrap();
    let bytes = eq.to_bytes().unwrap();
    let back = Equation::<Scalar>::from_bytes(&bytes).unwrap();
    assert_eq!(back.symbols(), ["x"]);
    assert_eq!(back.parameters(), ["c", "k"]);
    let (a, b) = (
        eq.with_params([1.0, 2.0]).unwrap(),
        back.with_params([1.0, 2.0]).unwrap(),
    );
    assert!(same_bits(
        &a.hessian([0.5]).unwrap(),
        &b.hessian([0.5]).unwrap()
    ));
    assert_eq!(b.evaluate([0.5]).unwrap(), 2.0 * 0.5f64.exp() + 1.0);
}

/// The last-call cache keys an entry on the whole input block, bound parameters included:
/// rebinding at the same point is never served the answer of the old binding, in any
/// per-point call (Taylor included), and a binding seen before is served again.
#[test]
fn the_last_call_cache_tells_bindings_apart() {
    let model = |t: ddx::Expr, x: ddx::Expr, y: ddx::Expr| (t * x).exp() + t * y * y;
    let plain = rt::equation(|| model(rt::param("T"), rt::var("x"), rt::var("y"))).unwrap();
    let remembering = plain.clone().with_cache(ddx::LastValue::new());
    let p = [0.7, -0.4];
    for t in [0.5, 2.0, 0.5, 0.5] {
        let on = remembering.with_params([t]).unwrap();
        let off = plain.with_params([t]).unwrap();
        assert_eq!(
            on.evaluate(p).unwrap().to_bits(),
            off.evaluate(p).unwrap().to_bits()
        );
        assert!(same_bits(
            &on.gradient(p).unwrap(),
            &off.gradient(p).unwrap()
        ));
        assert!(same_bits(&on.hessian(p).unwrap(), &off.hessian(p).unwrap()));
        let v = [0.3, 1.9];
        assert!(same_bits(&on.hvp(v, p).unwrap(), &off.hvp(v, p).unwrap()));
    }
    let stats = remembering.cache_stats().unwrap();
    assert!(stats.hits > 0, "the repeated binding is served: {stats:?}");

    let one = rt::equation(|| (rt::param("T") * rt::var("x")).sin()).unwrap();
    let on = one.clone().with_cache(ddx::LastValue::new());
    for t in [1.0, 3.0, 1.0] {
        let a = on
            .with_params([t])
            .unwrap()
            .univariate_derivatives(4, 0.3)
            .unwrap();
        let b = one
            .with_params([t])
            .unwrap()
            .univariate_derivatives(4, 0.3)
            .unwrap();
        assert!(same_bits(&a, &b), "T = {t}: {a:?} vs {b:?}");
    }
}

/// A bound equation saved and loaded keeps its binding; an unbound one stays unbound.
#[test]
fn a_binding_survives_saving_and_loading() {
    let eq = rt::equation(|| rt::param("k") * rt::var("x").exp() + rt::param("c")).unwrap();
    let bound = eq.with_params([1.0, 2.0]).unwrap();
    let back = Equation::<Scalar>::from_bytes(&bound.to_bytes().unwrap()).unwrap();
    assert_eq!(back.bound_params(), Some(&[1.0, 2.0][..]));
    assert_eq!(
        back.evaluate([0.5]).unwrap().to_bits(),
        bound.evaluate([0.5]).unwrap().to_bits()
    );
    // Unbound stays unbound.
    let back = Equation::<Scalar>::from_bytes(&eq.to_bytes().unwrap()).unwrap();
    assert_eq!(back.bound_params(), None);
    assert_eq!(back.evaluate([0.5]).unwrap_err().code(), Errc::ShortPoint);
}

/// `lane_point_into` takes the lane's whole input block (symbols, parameters, seeds) or,
/// bound, the symbols and seeds alone; both give the per-point calls' bits, with a cache
/// and without (the Python package answers remembered points through it).
#[test]
fn lane_point_into_reads_the_parameters() {
    let plain =
        rt::equation(|| rt::param("k") * rt::var("x").exp() + rt::var("y") * rt::param("c"))
            .unwrap();
    for eq in [
        plain.clone(),
        plain.clone().with_cache(ddx::LastValue::new()),
    ] {
        let bound = eq.with_params([0.5, 2.0]).unwrap(); // c, k
        let g = bound.gradient([0.3, -1.0]).unwrap();
        let mut out = vec![0.0; bound.lane(LaneKind::Gradient).unwrap().outputs.len()];
        for _ in 0..2 {
            bound
                .lane_point_into(LaneKind::Gradient, &[0.3, -1.0], &mut out)
                .unwrap();
            assert!(same_bits(&out, &g), "{out:?} vs {g:?}");
            eq.lane_point_into(LaneKind::Gradient, &[0.3, -1.0, 0.5, 2.0], &mut out)
                .unwrap();
            assert!(same_bits(&out, &g), "{out:?} vs {g:?}");
        }
        // Unbound, the symbols alone are short.
        let e = eq
            .lane_point_into(LaneKind::Gradient, &[0.3, -1.0], &mut out)
            .unwrap_err();
        assert_eq!(e.code(), Errc::ShortPoint, "{e}");
    }
}

#[test]
fn an_empty_column_beside_broadcast_ones_is_a_batch_of_no_points() {
    // As NumPy broadcasts lengths 0 and 1 to 0: nothing to compute, nothing refused.
    let eq = rt::equation(|| {
        let (x, y, t) = (rt::var("x"), rt::var("y"), rt::param("t"));
        x * t + y
    })
    .unwrap();
    let empty: [f64; 0] = [];
    let mut v: Vec<f64> = Vec::new();
    eq.evaluate_batch(&[&empty, &[0.75], &[-0.5]], &mut [&mut v])
        .expect("no points");
    let bound = eq.with_params([-0.5]).unwrap();
    bound
        .evaluate_batch(&[&empty, &[0.75]], &mut [&mut v])
        .expect("no points, the parameter bound");
    let (mut jv, mut jp) = (Vec::new(), vec![Vec::new(); bound.jacobian_columns()]);
    let mut pr: Vec<&mut [f64]> = jp.iter_mut().map(|c| &mut c[..]).collect();
    bound
        .jacobian_batch(&[&empty, &[0.75]], &mut [&mut jv], &mut pr)
        .expect("no points");
    // An output column that is not empty is refused: the batch has no point.
    let mut one = vec![0.0];
    let e = eq
        .evaluate_batch(&[&empty, &[0.75], &[-0.5]], &mut [&mut one])
        .expect_err("one output value for no point");
    assert_eq!(e.code(), Errc::ColumnLength, "{e}");
    // An empty column beside one of two points is still refused.
    let mut two = vec![0.0; 2];
    let e = eq
        .evaluate_batch(&[&empty, &[0.75, 1.0], &[-0.5]], &mut [&mut two])
        .expect_err("lengths 0 and 2");
    assert_eq!(e.code(), Errc::ColumnLength, "{e}");
}
