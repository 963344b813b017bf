//! Long lanes through the JIT (issue 11): lanes of hundreds of thousands to a million
//! nodes compile — split into segments that pass values through a heap scratch area, so
//! no stack frame grows with the lane — and answer with the interpreter's bits.
//!
//! The lanes are built and compiled in a debug build too: the code generator (Cranelift)
//! is optimised in every profile (the workspace's `profile.dev.package` settings), and
//! the kernels are compiled at the quick tier's cost (a lane over 16 384 nodes is
//! optimised with the single-pass register allocator).

#![cfg(feature = "jit")]

use ddx::{rt, Backend, Equation, LaneKind, Options};

/// `Σᵢ (a·exp(−b·tᵢ) + c − yᵢ)²` over `terms` observations: a least-squares objective.
fn least_squares(terms: usize) -> Equation {
    rt::equation(|| {
        let (a, b, c) = (rt::var("a"), rt::var("b"), rt::var("c"));
        let mut sum = a * 0.0;
        for i in 0..terms {
            let t = i as f64 / terms as f64;
            let y = 2.0 * (-0.7 * t).exp() + 0.1 + 1e-3 * (i % 7) as f64;
            let r = a * (-(b * t)).exp() + c - y;
            sum += r * r;
        }
        sum
    })
    .expect("builds")
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Issue 11: a 5000-term least-squares Hessian (about 205 000 nodes) was refused for a
/// 1.8 MB stack frame and interpreted.
#[test]
fn a_5000_term_least_squares_hessian_compiles_and_agrees() {
    let mut eq = least_squares(5000);
    let nodes = eq.lane(LaneKind::Hessian).unwrap().graph.len();
    assert!(nodes > 200_000, "{nodes} nodes");
    let oracle = eq.clone(); // shares the lanes; stays `Interpret`
    eq.set_options(Options::with_backend(Backend::Compile));
    assert!(
        eq.wait_for_kernel_of(LaneKind::Hessian),
        "{:?}",
        eq.jit_status()
    );
    let status = eq.jit_status();
    let lane = status.lane(LaneKind::Hessian).expect("asked");
    assert_eq!(lane.error, None);
    assert!(lane.level.is_some());
    for x in [[1.9, 0.65, 0.12], [-3.0, 2.5, 1e-3], [0.0, -0.0, 7.5]] {
        assert_eq!(
            bits(&eq.hessian(x).expect("fits")),
            bits(&oracle.hessian(x).expect("fits")),
            "at {x:?}"
        );
    }
}

/// A value lane of a million nodes (`y ← y·sin(a·cₖ) + b`, five nodes a term) compiles
/// and agrees to the bit. (Its gradient lane would be 2.4 million nodes, past
/// [`ddx::MAX_KERNEL_NODES`]; the Hessian above is the reverse sweep whose values cross
/// segment boundaries.)
#[test]
fn a_lane_of_a_million_nodes_compiles_and_agrees() {
    const TERMS: usize = 200_000;
    let mut eq = rt::equation(|| {
        let (a, b) = (rt::var("a"), rt::var("b"));
        let mut y = b;
        for k in 0..TERMS {
            y = y * (a * (1.0 + k as f64 * 1e-6)).sin() + b;
        }
        y
    })
    .expect("builds");
    let nodes = eq.lane(LaneKind::Value).unwrap().graph.len();
    assert!(nodes >= 1_000_000, "{nodes} nodes");
    assert!(nodes <= ddx::MAX_KERNEL_NODES);
    // A clone shares the lane; its options stay `Interpret`.
    let oracle = eq.clone();
    eq.set_options(Options::with_backend(Backend::Compile));
    assert!(
        eq.wait_for_kernel_of(LaneKind::Value),
        "{:?}",
        eq.jit_status()
    );
    assert!(!oracle.uses_kernel_of(LaneKind::Value));
    for x in [[0.5, -0.25], [1e300, 3.0], [-0.0, f64::NAN], [2.0, 1e-3]] {
        let (got, want) = (
            eq.evaluate(x).expect("fits"),
            oracle.evaluate(x).expect("fits"),
        );
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "at {x:?}: {got} vs {want}"
        );
    }
    assert_eq!(eq.jit_status().error, None);
}

/// A long lane of operations that do not repeat (so it does not re-roll): each of `ops`
/// steps combines two of the last 64 values by one of six formulas, chosen by a fixed
/// generator, with its own constant; the answer sums the last eight.
fn tangle(ops: usize) -> Equation {
    rt::equation(|| {
        let mut v = vec![rt::var("a"), rt::var("b"), rt::var("c")];
        let mut s = 0x2545_F491_4F6C_DD1D_u64;
        let mut next = |n: usize| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % n as u64) as usize
        };
        for i in 0..ops {
            let back = v.len().min(64);
            let p = v[v.len() - 1 - next(back)];
            let q = v[v.len() - 1 - next(back)];
            let c = 1.0 + i as f64 * 1e-6;
            let t = match next(6) {
                0 => (p * q).sin(),
                1 => p + q * c,
                2 => (p - q * c).cos(),
                3 => p / (q * q + c),
                4 => (p * 0.5).sin() * q,
                _ => p - q * c,
            };
            v.push(t);
        }
        v.iter()
            .rev()
            .take(8)
            .fold(rt::var("a") * 0.0, |acc, &t| acc + t)
    })
    .expect("builds")
}

/// Equal bits, any NaN matching any NaN.
fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// A long straight-line lane's first optimised kernel (the single-pass register
/// allocator, so that it comes quickly) is compiled again in the background with the
/// backtracking allocator and replaced; `wait_for_kernel` does not wait for that, the
/// status says when it is done, the refined kernel answers the interpreter's bits, goes
/// to the cache under its own key (a later equation takes it at once) and is saved and
/// loaded as refined.
#[test]
fn a_long_lanes_kernel_is_refined_in_the_background() {
    let kind = LaneKind::Value;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut eq = tangle(12_000);
    let nodes = eq.lane(kind).unwrap().graph.len();
    assert!(nodes > 16_384, "{nodes} nodes");
    let oracle = eq.clone(); // shares the lanes; stays `Interpret`
    let mut o = Options::with_backend(Backend::Compile);
    o.cache_dir = Some(dir.path().join("kernels"));
    eq.set_options(o.clone());
    assert!(eq.wait_for_kernel_of(kind), "{:?}", eq.jit_status());
    let lane = |eq: &Equation| eq.jit_status().lane(kind).cloned().expect("asked");
    // The first kernel answers; its refinement is under way (it was asked before the
    // first kernel's job finished).
    let first = lane(&eq);
    assert!(first.refining || first.refined, "{first:?}");
    assert!(eq.wait_for_refined_kernel_of(kind));
    let status = lane(&eq);
    assert!(!status.refining, "{status:?}");
    assert!(status.refined, "{status:?}");
    assert_eq!((status.compiled, status.loaded), (2, 0), "{status:?}");
    assert_eq!(eq.jit_status().written, 2);
    let outputs = eq.lane(kind).unwrap().outputs.len();
    let answers = |eq: &Equation, x: &[f64]| {
        let mut out = vec![0.0; outputs];
        eq.lane_point_into(kind, x, &mut out).expect("fits");
        out
    };
    let points = [[0.3, -1.25, 2.0], [1.5, 0.0, -0.5], [-3.0, 7.5, 1e-3]];
    for x in &points {
        assert!(same(&answers(&eq, x), &answers(&oracle, x)), "at {x:?}");
    }
    // A second equation over the same cache takes the refined kernel, compiling nothing.
    let mut again = tangle(12_000);
    again.set_options(o);
    assert!(again.wait_for_kernel_of(kind));
    let status = lane(&again);
    assert!(status.refined && !status.refining, "{status:?}");
    assert_eq!((status.compiled, status.loaded), (0, 1), "{status:?}");
    // Saved with its code and loaded: adopted as refined, not refused.
    let path = dir.path().join("tangle.ddx");
    eq.save(&path).expect("saves");
    let back = Equation::load(&path).expect("loads");
    let status = lane(&back);
    assert!(status.refined, "{status:?}");
    assert_eq!(back.jit_status().refused, 0);
    for x in &points {
        assert!(
            same(&answers(&back, x), &answers(&oracle, x)),
            "loaded, at {x:?}"
        );
    }
}

/// A long lane whose kernel already has the backtracking allocator everywhere (a chain
/// that re-rolls into a short function) is not refined: neither when compiled nor when
/// its kernel comes from the cache (whose allocators are not recorded).
#[test]
fn a_kernel_that_needs_no_refining_is_left_as_it_is() {
    let kind = LaneKind::Value;
    let chain = || {
        rt::equation(|| {
            let (a, b) = (rt::var("a"), rt::var("b"));
            let mut y = b;
            for k in 0..5_000 {
                y = y * (a * (1.0 + k as f64 * 1e-6)).sin() + b;
            }
            y
        })
        .expect("builds")
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let mut o = Options::with_backend(Backend::Compile);
    o.cache_dir = Some(dir.path().to_path_buf());
    for (round, compiled, loaded) in [(0, 1, 0), (1, 0, 1)] {
        let mut eq = chain();
        assert!(eq.lane(kind).unwrap().graph.len() > 16_384);
        eq.set_options(o.clone());
        assert!(eq.wait_for_refined_kernel_of(kind));
        let status = eq.jit_status().lane(kind).cloned().expect("asked");
        assert!(
            !status.refined && !status.refining,
            "round {round}: {status:?}"
        );
        assert_eq!(
            (status.compiled, status.loaded),
            (compiled, loaded),
            "round {round}: {status:?}"
        );
    }
}

/// `½ xᵀQx + cᵀx` over `n` symbols, summed over the upper triangle row by row (as
/// `ddx_models::trend::Quadratic` writes it), with `Q` and `c` from a fixed hash; answers
/// the equation, `Q` (row-major, symmetric) and `c`.
fn quadratic(n: usize) -> (Equation, Vec<f64>, Vec<f64>) {
    let u = |i: usize, j: usize| {
        let h = ((i * 7919 + j * 104_729 + 13) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (h >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let mut q = vec![0.0; n * n];
    for i in 0..n {
        for j in i..n {
            q[i * n + j] = u(i, j);
            q[j * n + i] = u(i, j);
        }
    }
    let c: Vec<f64> = (0..n).map(|i| u(i, n)).collect();
    let (qq, cc) = (q.clone(), c.clone());
    let eq = rt::equation(move || {
        let x: Vec<ddx::Expr> = (0..n).map(|i| rt::var(&format!("x{i:04}"))).collect();
        let mut f = x[0] * 0.0;
        for i in 0..n {
            let mut s = x[i] * (qq[i * n + i] * 0.5) + cc[i];
            for j in i + 1..n {
                s += x[j] * qq[i * n + j];
            }
            f += x[i] * s;
        }
        f
    })
    .expect("builds");
    (eq, q, c)
}

/// Issue 20's dot loops, under the rule users get: a dense quadratic form's gradient
/// lane at 160 symbols (about 64 000 nodes, past the segment length) is nearly all long
/// sums of weighted inputs (the rows of `Qx`, and the adjoints' columns), which its point
/// kernel computes in loops. The compiled gradient answers the interpreter's bits at
/// awkward points, loads with its code and weight table, and answers the closed form
/// `Qx + c` to rounding.
#[test]
fn a_dense_quadratic_forms_gradient_compiles_to_dot_loops_and_agrees() {
    let n = 160;
    let (mut eq, q, c) = quadratic(n);
    let nodes = eq.lane(LaneKind::Gradient).unwrap().graph.len();
    assert!(nodes > 1 << 15, "{nodes} nodes");
    let oracle = eq.clone();
    eq.set_options(Options::with_backend(Backend::Compile));
    assert!(
        eq.wait_for_kernel_of(LaneKind::Gradient),
        "{:?}",
        eq.jit_status()
    );
    let status = eq.jit_status();
    assert_eq!(status.lane(LaneKind::Gradient).expect("asked").error, None);
    let points: Vec<Vec<f64>> = vec![
        (0..n).map(|i| (i as f64 * 0.37).sin()).collect(),
        (0..n)
            .map(|i| if i % 3 == 0 { -0.0 } else { 1e300 })
            .collect(),
        (0..n)
            .map(|i| [f64::INFINITY, 2.5, f64::NAN, 5e-324][i % 4])
            .collect(),
    ];
    for x in &points {
        let got = eq.gradient(x.as_slice()).expect("fits");
        let want = oracle.gradient(x.as_slice()).expect("fits");
        // Any NaN matches any NaN (which NaN a sum of two answers is not fixed).
        let same = got
            .iter()
            .zip(&want)
            .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
        assert!(same, "at {:?}…", &x[..4]);
    }
    // Saved with its code and loaded: the gradient's kernel (code and weight table) is
    // loaded, not compiled again, and answers the same bits.
    let back: Equation = Equation::from_bytes(&eq.to_bytes().expect("encodes")).expect("decodes");
    assert!(back.uses_kernel_of(LaneKind::Gradient));
    assert_eq!(back.jit_status().compiled, 0);
    for x in &points {
        let a = back.gradient(x.as_slice()).expect("fits");
        let b = eq.gradient(x.as_slice()).expect("fits");
        assert!(a
            .iter()
            .zip(&b)
            .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())));
    }
    let x = &points[0];
    let got = eq.gradient(x.as_slice()).expect("fits");
    for k in 0..n {
        let exact: f64 = (0..n).map(|j| q[k * n + j] * x[j]).sum::<f64>() + c[k];
        let scale: f64 = (0..n).map(|j| (q[k * n + j] * x[j]).abs()).sum::<f64>() + 1.0;
        assert!(
            (got[k] - exact).abs() <= 1e-13 * scale,
            "∂f/∂x{k}: {} against {exact}",
            got[k]
        );
    }
}
