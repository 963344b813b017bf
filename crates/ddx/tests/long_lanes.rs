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
