//! Panics the public API used to reach (issue 11), each now an error or impossible.

use ddx::interp::{Program, Schedule};
use ddx::{rt, Errc, LaneKind};

#[test]
fn a_sink_may_run_another_program() {
    // `run_with` borrowed the thread's scratch for the whole run, so a sink that ran any
    // program panicked with "RefCell already borrowed".
    let eq = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        x * y.sin() + (x / y).exp()
    })
    .unwrap();
    let value = Program::lower(eq.lane(LaneKind::Value).unwrap(), Schedule::Level)
        .expect("a lane ddx built");
    let gradient = Program::lower(eq.lane(LaneKind::Gradient).unwrap(), Schedule::Level)
        .expect("a lane ddx built");
    let x = [0.7, 1.3];
    let mut g = [0.0; 2];
    gradient.run(&x, &mut g).unwrap();
    let mut f = [0.0];
    value.run(&x, &mut f).unwrap();

    let mut seen = Vec::new();
    value
        .run_with(&x, |_, v| {
            // Re-entered twice over: the same program, then another one, from the sink.
            let mut inner = [0.0];
            value.run(&x, &mut inner).unwrap();
            let mut inner_g = [0.0; 2];
            gradient
                .run_with(&x, |k, w| {
                    let mut again = [0.0];
                    value.run(&x, &mut again).unwrap();
                    assert_eq!(again, inner);
                    inner_g[k] = w;
                })
                .unwrap();
            seen.push((v, inner[0], inner_g));
        })
        .unwrap();
    assert_eq!(seen, [(f[0], f[0], g)]);
    assert_eq!(f[0], eq.evaluate(x).unwrap());
    assert_eq!(g.to_vec(), eq.gradient(x).unwrap());
    // And after the nesting, the outer scratch still serves plain runs.
    let mut after = [0.0; 2];
    gradient.run(&x, &mut after).unwrap();
    assert_eq!(after, g);
}

#[test]
fn programs_refuse_wrong_lengths() {
    // `run` and `run_with` asserted their slice lengths (a panic on user input).
    let eq = rt::equation(|| rt::var("x") * rt::var("y")).unwrap();
    let p = Program::lower(eq.lane(LaneKind::Gradient).unwrap(), Schedule::Level)
        .expect("a lane ddx built");
    let mut out = [0.0; 2];
    assert_eq!(
        p.run(&[1.0], &mut out).unwrap_err().code(),
        Errc::ShortPoint
    );
    assert_eq!(
        p.run(&[1.0, 2.0, 3.0], &mut out).unwrap_err().code(),
        Errc::WrongArity
    );
    assert_eq!(
        p.run(&[1.0, 2.0], &mut out[..1]).unwrap_err().code(),
        Errc::WrongOutputLength
    );
    let mut called = false;
    assert!(p.run_with(&[1.0], |_, _| called = true).is_err());
    assert!(!called);
    p.run(&[3.0, 5.0], &mut out).unwrap();
    assert_eq!(out, [5.0, 3.0]);
}

/// `LaneKind::Tensor` names no fixed lane: every call that takes a lane kind answers it
/// without a panic — an error where the call returns one, "no kernel" where it asks
/// about kernels — under every backend.
#[test]
fn the_tensor_lane_kind_is_refused_everywhere_without_a_panic() {
    use ddx::{Backend, Errc, Options};
    for backend in [
        Backend::Interpret,
        Backend::Compile,
        Backend::Adapt,
        Backend::Device,
    ] {
        let mut eq = rt::equation(|| rt::var("x").sin() * rt::var("y")).unwrap();
        eq.set_options(Options::with_backend(backend));
        let t = LaneKind::Tensor;
        assert_eq!(eq.lane(t).unwrap_err().code(), Errc::TensorLane);
        assert_eq!(eq.nodes(t).unwrap_err().code(), Errc::TensorLane);
        let e = eq.to_rust_source("f", t).unwrap_err();
        assert_eq!(e.code(), Errc::TensorLane);
        assert!(e.to_string().contains("derivative_tensor"), "{e}");
        assert_eq!(eq.to_c_source("f", t).unwrap_err().code(), Errc::TensorLane);
        let mut out = [0.0; 4];
        let e = eq.lane_point_into(t, &[1.0, 2.0], &mut out).unwrap_err();
        assert_eq!(e.code(), Errc::TensorLane);
        assert_eq!(
            eq.device_columns(t, 8).err().map(|e| e.code()),
            Some(Errc::TensorLane)
        );
        assert!(!eq.uses_kernel_of(t));
        assert!(!eq.wait_for_kernel_of(t));
        assert_eq!(eq.kernel_level_of(t), None);
        assert!(eq.warming_of(t).is_none());
        assert!(eq.device_build_time(t).is_none());
        assert_eq!(eq.tape_memory(t), 0);
        // The fixed lanes still answer, and the tensor lanes through their own call.
        assert!(eq.lane(LaneKind::Hessian).is_ok());
        assert_eq!(eq.derivative_tensor(3, [1.0, 2.0]).unwrap().len(), 8);
    }
}

/// A lane's fields are public, so a caller can assemble or edit one by hand. Lowering one
/// that breaks the invariants of the lanes ddx builds panicked (an output past the graph:
/// an index out of range in the lowering; too few symbols for the graph's inputs: a slot
/// out of range; input counts past 32-bit slots or an output that is a call's argument
/// pack, found by the third fresh tester of session 40); now `Program::lower` and the
/// emitters refuse it with `bad_lane`, `Lane::use_counts` ignores an output past the
/// graph, and every lane ddx builds still lowers.
#[test]
fn a_lane_edited_by_hand_is_refused_not_lowered() {
    use ddx::ir::{emit, Lane, NodeId};
    let eq = rt::equation(|| rt::var("x").sin() * rt::var("y")).unwrap();
    let good = eq.lane(LaneKind::Gradient).unwrap().clone();
    let names = ["x".to_string(), "y".to_string()];
    type Edit = fn(&mut Lane);
    let edits: [(&str, Edit); 8] = [
        ("an output past the graph", |l| {
            l.outputs = vec![NodeId::from_index(9999)]
        }),
        ("no symbols for the graph's inputs", |l| l.symbols = 0),
        ("a symbol read as a seed", |l| (l.symbols, l.seeds) = (1, 0)),
        ("input counts that overflow", |l| l.params = usize::MAX),
        ("inputs past 32-bit slots", |l| l.symbols = 1 << 32),
        ("inputs that fill the address space", |l| {
            l.symbols = usize::MAX - l.params - l.seeds
        }),
        ("a pack as an output", |l| {
            use ddx::ir::{Graph, Node, Op, SymbolId, NO_ARG};
            let (x, y) = (NodeId::from_index(0), NodeId::from_index(1));
            let nodes = vec![
                Node::Symbol(SymbolId::from_index(0)),
                Node::Symbol(SymbolId::from_index(1)),
                Node::Apply(Op::Pack, [x, y, NO_ARG]),
            ];
            l.graph = Graph::from_nodes(nodes, 2, 0).expect("a valid graph");
            l.outputs = vec![NodeId::from_index(2)];
        }),
        ("an output one past the last node", |l| {
            l.outputs.push(NodeId::from_index(l.graph.len()))
        }),
    ];
    for (what, edit) in edits {
        let mut lane = good.clone();
        edit(&mut lane);
        for schedule in [Schedule::Level, Schedule::Graph] {
            let e = Program::lower(&lane, schedule).expect_err(what);
            assert_eq!(e.code(), Errc::BadLane, "{what}: {e}");
            assert!(
                e.to_string().starts_with("bad_lane: the gradient lane"),
                "{e}"
            );
        }
        let e = emit::rust(&lane, &names, "f", &emit::RustStyle::default()).expect_err(what);
        assert_eq!(e.code(), Errc::BadLane, "{what}");
        let e = emit::c(&lane, &names, "f").expect_err(what);
        assert_eq!(e.code(), Errc::BadLane, "{what}");
    }
    let mut lane = good.clone();
    lane.outputs.push(NodeId::from_index(9999));
    assert_eq!(lane.use_counts().len(), good.graph.len());
    for kind in LaneKind::ALL {
        let lane = eq.lane(kind).unwrap();
        assert!(Program::lower(lane, Schedule::Level).is_ok(), "{kind:?}");
        assert!(
            emit::rust(lane, &names, "f", &emit::RustStyle::default()).is_ok(),
            "{kind:?}"
        );
    }
}
