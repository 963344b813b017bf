//! The API users of JAX, CasADi and num-dual look for (issue 11): value and derivatives
//! from one sweep, `_into` forms of the second-order calls, options in one expression, and
//! the kernel queries without a lane.

use ddx::{rt, Backend, Equation, Errc, LaneKind, Lanes, OptLevel, Options, System};

/// `f = x²·y + sin(x·y)`, with its closed-form gradient and Hessian.
fn model() -> Equation {
    rt::equation_text("x**2 * y + sin(x * y)").unwrap()
}

fn closed(x: f64, y: f64) -> (f64, [f64; 2], [[f64; 2]; 2]) {
    let (s, c) = (x * y).sin_cos();
    let f = x * x * y + s;
    let g = [2.0 * x * y + y * c, x * x + x * c];
    let h = [
        [2.0 * y - y * y * s, 2.0 * x + c - x * y * s],
        [2.0 * x + c - x * y * s, -x * x * s],
    ];
    (f, g, h)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-13 * (1.0 + b.abs())
}

#[test]
fn value_and_gradient_is_evaluate_and_jacobian_in_one_sweep() {
    for backend in [Backend::Interpret, Backend::Compile] {
        let mut eq = model();
        eq.set_options(Options::new().backend(backend).points(1));
        if backend == Backend::Compile {
            assert!(eq.wait_for_kernel() || !cfg!(target_arch = "x86_64"));
        }
        for &(x, y) in &[(0.3, 1.7), (-2.0, 0.25), (0.0, 0.0)] {
            let (f, g) = eq.value_and_gradient([x, y]).unwrap();
            // Bit for bit what the separate calls answer.
            assert_eq!(f.to_bits(), eq.evaluate([x, y]).unwrap().to_bits());
            assert_eq!(g, eq.jacobian([x, y]).unwrap());
            let (cf, cg, _) = closed(x, y);
            assert!(
                close(f, cf) && close(g[0], cg[0]) && close(g[1], cg[1]),
                "{g:?}"
            );
        }
    }
    // A system: `m` values and the dense `m × n` Jacobian.
    let sys: Equation<System> = rt::system_text(&["x * y", "exp(x) - y"]).unwrap();
    let (f, j) = sys.value_and_gradient([0.5, 2.0]).unwrap();
    assert_eq!(f, sys.evaluate([0.5, 2.0]).unwrap());
    assert_eq!(j, sys.jacobian([0.5, 2.0]).unwrap());
    assert_eq!(j, vec![2.0, 0.5, 0.5f64.exp(), -1.0]);
    // Errors as the separate calls have them.
    assert_eq!(
        sys.value_and_gradient([1.0]).unwrap_err().code(),
        Errc::ShortPoint
    );
    let mut small = sys.clone();
    small.set_options(Options::new().answer_limit(3));
    assert_eq!(
        small.value_and_gradient([0.5, 2.0]).unwrap_err().code(),
        Errc::TooLarge
    );
}

#[test]
fn value_and_jvp_keeps_the_value_its_lane_computes() {
    let sys: Equation<System> = rt::system_text(&["x * y", "exp(x) - y"]).unwrap();
    let (v, x) = ([1.0, -3.0], [0.5, 2.0]);
    let (f, jv) = sys.value_and_jvp(v, x).unwrap();
    assert_eq!(f, sys.evaluate(x).unwrap());
    assert_eq!(jv, sys.jvp(v, x).unwrap());
    // Against the dense Jacobian: J·v.
    let j = sys.jacobian(x).unwrap();
    let dense = [j[0] * v[0] + j[1] * v[1], j[2] * v[0] + j[3] * v[1]];
    assert!(close(jv[0], dense[0]) && close(jv[1], dense[1]));
    let eq = model();
    let (f, jv) = eq
        .value_and_jvp([("y", 1.0), ("x", 0.0)], [0.3, 1.7])
        .unwrap();
    let (cf, cg, _) = closed(0.3, 1.7);
    assert!(close(f, cf) && close(jv[0], cg[1]));
    assert_eq!(
        eq.value_and_jvp([1.0], [0.3, 1.7]).unwrap_err().code(),
        Errc::WrongDirection
    );
}

#[test]
fn value_gradient_and_hvp_from_one_sweep() {
    let eq = model();
    for &(x, y) in &[(0.3, 1.7), (-2.0, 0.25)] {
        let v = [0.7, -1.1];
        let (f, g, hv) = eq.value_gradient_and_hvp(v, [x, y]).unwrap();
        assert_eq!(f.to_bits(), eq.evaluate([x, y]).unwrap().to_bits());
        assert_eq!(g, eq.jacobian([x, y]).unwrap());
        assert_eq!(hv, eq.hvp(v, [x, y]).unwrap());
        let (_, _, h) = closed(x, y);
        for i in 0..2 {
            assert!(close(hv[i], h[i][0] * v[0] + h[i][1] * v[1]), "{hv:?}");
        }
    }
    // A symbol the function holds only linearly has a structurally zero second
    // derivative, and a gradient entry all the same.
    let lin = rt::equation_text("x * x + 3 * y").unwrap();
    let (f, g, hv) = lin.value_gradient_and_hvp([1.0, 1.0], [2.0, 5.0]).unwrap();
    assert_eq!((f, g, hv), (19.0, vec![4.0, 3.0], vec![2.0, 0.0]));
    let sys: Equation<System> = rt::system_text(&["x * y", "x"]).unwrap();
    assert_eq!(
        sys.value_gradient_and_hvp([1.0, 0.0], [1.0, 1.0])
            .unwrap_err()
            .code(),
        Errc::NotScalar
    );
}

#[test]
fn second_order_into_forms_write_what_the_allocating_ones_answer() {
    let eq = model();
    let x = [0.3, 1.7];
    let mut h = [f64::NAN; 4];
    eq.hessian_into(x, &mut h).unwrap();
    assert_eq!(h.to_vec(), eq.hessian(x).unwrap());
    let (_, _, closed_h) = closed(x[0], x[1]);
    assert!(close(h[1], closed_h[0][1]) && close(h[3], closed_h[1][1]));
    let mut hv = [f64::NAN; 2];
    eq.hvp_into([1.0, 2.0], x, &mut hv).unwrap();
    assert_eq!(hv.to_vec(), eq.hvp([1.0, 2.0], x).unwrap());
    // Wrong lengths write nothing.
    let mut short = [7.0; 3];
    assert_eq!(
        eq.hessian_into(x, &mut short).unwrap_err().code(),
        Errc::WrongOutputLength
    );
    assert_eq!(short, [7.0; 3]);
    let mut short = [7.0; 1];
    assert_eq!(
        eq.hvp_into([1.0, 2.0], x, &mut short).unwrap_err().code(),
        Errc::WrongOutputLength
    );
    // A system: one n × n block per output.
    let sys: Equation<System> = rt::system_text(&["x * y * y", "exp(x)"]).unwrap();
    let mut hs = [0.0; 8];
    sys.hessian_into([1.0, 2.0], &mut hs).unwrap();
    assert_eq!(hs.to_vec(), sys.hessian([1.0, 2.0]).unwrap());
    assert_eq!(hs, [0.0, 4.0, 4.0, 2.0, 1f64.exp(), 0.0, 0.0, 0.0]);
}

#[test]
fn options_are_built_in_one_expression() {
    const COMPILED: Options = Options::new()
        .backend(Backend::Compile)
        .points(4096)
        .lanes(Lanes::Scalar)
        .opt_level(OptLevel::Off)
        .contract(true)
        .warm_points(10)
        .hot_points(20)
        .retain_object(false)
        .answer_limit(99);
    let mut by_fields = Options::default();
    by_fields.backend = Backend::Compile;
    by_fields.points = 4096;
    by_fields.codegen.lanes = Lanes::Scalar;
    by_fields.codegen.opt_level = OptLevel::Off;
    by_fields.codegen.contract = true;
    by_fields.warm_points = 10;
    by_fields.hot_points = 20;
    by_fields.retain_object = false;
    by_fields.answer_limit = 99;
    assert_eq!(COMPILED, by_fields);
    assert_eq!(Options::new(), Options::default());
    let o = Options::new().cache_dir("/tmp/ddx-cache").device("NVIDIA");
    assert_eq!(
        o.cache_dir.as_deref(),
        Some(std::path::Path::new("/tmp/ddx-cache"))
    );
    assert_eq!(o.device.as_deref(), Some("NVIDIA"));
}

#[test]
fn kernel_queries_default_to_the_jacobian_lane() {
    let mut eq = model();
    assert!(!eq.uses_kernel());
    assert!(!eq.wait_for_kernel(), "interpreting: nothing to wait for");
    assert_eq!(eq.kernel_level(), None);
    assert_eq!(eq.warming(), None);
    eq.set_options(Options::new().backend(Backend::Adapt).warm_points(100));
    let w = eq.warming().expect("under Adapt the Jacobian lane warms");
    assert_eq!((w.points, w.threshold), (0, 100));
    assert_eq!(Some(w), eq.warming_of(LaneKind::Jacobian));
    if cfg!(all(feature = "jit", target_arch = "x86_64")) {
        eq.set_options(Options::new().backend(Backend::Compile));
        assert!(eq.wait_for_kernel());
        assert!(eq.uses_kernel() && eq.uses_kernel_of(LaneKind::Jacobian));
        assert_eq!(eq.kernel_level(), Some(OptLevel::Speed));
        // Only the Jacobian lane was asked for.
        assert!(!eq.uses_kernel_of(LaneKind::Value));
    }
}
