//! A fixed workload for what the zero-tangent rule costs (issue 21): per-point `jvp` and
//! `hvp` along a direction with no zero component (the common case), through the
//! interpreter or the JIT. Under `valgrind --tool=callgrind` the instruction counts are
//! repeatable on a shared machine.
//!
//! `zero_tangents <model> <arm> <calls>`: `model` as in `kernel_profile` (`electrolyte-32`,
//! `chain-256`, `uniquac-32`, `regular-32`); `arm` is `jvp` or `hvp` (interpreted) or
//! `jvp-jit` / `hvp-jit` (after `wait_for_kernel`), or `jvp-batch` / `hvp-batch` (batch
//! calls of the 256 sample points through the JIT, the direction broadcast). It cycles through 256 sample points and
//! prints the lane's node count and how many of its nodes are `select`s.

use ddx::ir::{Node, Op};
use ddx::{Backend, LaneKind, Options};
use ddx_models::thermo::{Electrolyte, RegularSolution, ThermoData, Uniquac};
use ddx_models::trend::Chain;
use ddx_models::BenchModel;
use std::hint::black_box;

fn run<M: BenchModel>(model: &M, arm: &str, calls: usize) {
    let n = model.arity();
    let points = ddx_models::sample_points(model, 7, 256);
    let mut eq = ddx_models::equation(model).expect("builds");
    let (kind, jit, batch) = match arm {
        "jvp" => (LaneKind::Jvp, false, false),
        "hvp" => (LaneKind::Hvp, false, false),
        "jvp-jit" => (LaneKind::Jvp, true, false),
        "hvp-jit" => (LaneKind::Hvp, true, false),
        "jvp-batch" => (LaneKind::Jvp, true, true),
        "hvp-batch" => (LaneKind::Hvp, true, true),
        other => panic!("unknown arm {other}"),
    };
    if jit {
        eq.set_options(Options::with_backend(Backend::Compile));
        assert!(eq.wait_for_kernel_of(kind), "{:?}", eq.jit_status());
    }
    let g = &eq.lane(kind).unwrap().graph;
    let selects = g
        .nodes()
        .iter()
        .filter(|node| matches!(node, Node::Apply(Op::Select, _)))
        .count();
    eprintln!("{kind:?} lane: {} nodes, {selects} selects", g.len());
    // A direction with no zero component: 1, −0.5, 0.25, ….
    let v: Vec<f64> = (0..n).map(|j| (-0.5f64).powi(j as i32 % 8)).collect();
    let mut s = 0.0;
    if batch {
        // `calls` batch calls of the 256 sample points, one direction broadcast.
        let xs: Vec<Vec<f64>> = (0..n)
            .map(|j| (0..256).map(|k| points[k * n + j]).collect())
            .collect();
        let x: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
        let vs: Vec<[f64; 1]> = v.iter().map(|&c| [c]).collect();
        let vc: Vec<&[f64]> = vs.iter().map(|c| &c[..]).collect();
        let m = eq.outputs();
        let cells = eq.jacobian_columns();
        let mut f = vec![vec![0.0; 256]; m];
        let mut g = vec![vec![0.0; 256]; cells];
        let mut out = vec![vec![0.0; 256]; if kind == LaneKind::Jvp { m } else { n }];
        for _ in 0..calls {
            let mut fc: Vec<&mut [f64]> = f.iter_mut().map(|c| &mut c[..]).collect();
            let mut oc: Vec<&mut [f64]> = out.iter_mut().map(|c| &mut c[..]).collect();
            if kind == LaneKind::Jvp {
                eq.jvp_batch(black_box(&x), &vc, &mut fc, &mut oc)
                    .expect("fits");
            } else {
                let mut gc: Vec<&mut [f64]> = g.iter_mut().map(|c| &mut c[..]).collect();
                eq.hvp_batch(black_box(&x), &vc, &mut fc, &mut gc, &mut oc)
                    .expect("fits");
            }
            s += out[0][0];
        }
        println!("sum {s}");
        return;
    }
    for k in 0..calls {
        let x = &points[(k % 256) * n..][..n];
        let out = if kind == LaneKind::Jvp {
            eq.jvp(black_box(&v[..]), black_box(x)).expect("fits")
        } else {
            eq.hvp(black_box(&v[..]), black_box(x)).expect("fits")
        };
        s += out[0];
    }
    println!("sum {s}");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (model, arm) = (args[1].as_str(), args[2].as_str());
    let calls: usize = args[3].parse().expect("a call count");
    let data = || ThermoData::bundled().expect("data/thermo");
    match model {
        "electrolyte-32" => run(&Electrolyte::new(32).expect("n"), arm, calls),
        "chain-256" => run(&Chain::new(256).expect("n"), arm, calls),
        "uniquac-32" => run(&Uniquac::new(&data(), 32).expect("n"), arm, calls),
        "regular-32" => run(&RegularSolution::new(32), arm, calls),
        other => panic!("unknown model {other}"),
    }
}
