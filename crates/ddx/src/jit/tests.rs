//! Every compiled kernel against the interpreter, bit for bit.
//!
//! Random graphs (the shared generator, `ddx_ir::testing::random_model`, and a local one
//! that favours the inline `pow` exponents) over every operation (fused multiply-adds included, which only graph
//! passes make), every lane kind in `LaneKind::ALL`, every kernel shape (point, column of
//! width 1 and 2) at both optimisation levels; per point and in batches of odd lengths, at
//! awkward inputs: ±0, ±inf, NaN, subnormals, the largest and smallest normals. The oracle
//! is the interpreter on the same model (per point: the level-scheduled program; in
//! batches: the block program). "Bit for bit" means every non-NaN result, signed zeros
//! included; a NaN must be a NaN, with any sign and payload (see [`same`]).

use super::lower::Shape;
use super::Kernel;
use crate::equation::{Equation, System};
use crate::options::{Backend, Lanes, OptLevel, Options};
use ddx_ir::{Graph, LaneKind, Model, Node, NodeId, Op, SymbolId};
use proptest::prelude::*;

/// Inputs and constants that find bugs.
const AWKWARD: [f64; 22] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    0.5,
    -0.5,
    3.0,
    -2.5,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    5e-324,
    -5e-324,
    1e-310,
    f64::MIN_POSITIVE,
    1e300,
    -1e300,
    f64::MAX,
    0.1,
    710.0,
    -745.5,
];

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn value(&mut self) -> f64 {
        if self.below(5) < 2 {
            AWKWARD[self.below(AWKWARD.len())]
        } else {
            ((self.next() >> 11) as f64 / (1u64 << 53) as f64) * 8.0 - 4.0
        }
    }
}

/// A model over `symbols` symbols with about `nodes` operations drawn from every operation
/// in `Op::ALL`, and `outputs` outputs; unlike the shared generator
/// (`ddx_ir::testing::random_model`), half its powers have one of the constant exponents
/// engines answer inline (`2`, `-1`, `0.5`) or a neighbour of them.
pub(crate) fn random_model(seed: u64, nodes: usize, symbols: usize, outputs: usize) -> Model {
    let mut rng = Rng(seed);
    let mut g = Graph::new();
    let mut made: Vec<NodeId> = (0..symbols)
        .map(|s| g.symbol(SymbolId::from_index(s)))
        .collect();
    for _ in 0..nodes {
        if rng.below(6) == 0 {
            let c = rng.value();
            made.push(g.constant(c));
            continue;
        }
        let op = Op::ALL[rng.below(Op::ALL.len())];
        let mut args = Vec::with_capacity(3);
        for _ in 0..op.arity() {
            let recent = made.len() - 1 - rng.below(made.len().min(5));
            args.push(if rng.below(3) == 0 {
                made[rng.below(made.len())]
            } else {
                made[recent]
            });
        }
        if op == Op::Pow && rng.below(2) == 0 {
            // The exponents engines answer inline.
            args[1] = g.constant([2.0, -1.0, 0.5, 3.0, -2.0][rng.below(5)]);
        }
        if op == Op::Powi && rng.below(4) != 0 {
            // Integer exponents (elsewhere powi is NaN), the inline ones among them.
            args[1] = g.constant([2.0, -1.0, 3.0, -2.0, 7.0][rng.below(5)]);
        }
        made.push(g.apply(op, &args));
    }
    let mut outs = vec![made[made.len() - 1]];
    for _ in 1..outputs {
        outs.push(made[symbols + rng.below(made.len() - symbols)]);
    }
    let names = (0..symbols).map(|s| format!("x{s}")).collect();
    Model::seal(&g, &outs, names)
}

/// The kernel shapes and levels every lane is compiled at.
fn configs() -> Vec<Options> {
    let mut all = Vec::new();
    for level in [OptLevel::Off, OptLevel::Speed] {
        for (points, lanes) in [
            (1, Lanes::Derived),
            (64, Lanes::Derived),
            (64, Lanes::Scalar),
        ] {
            let mut o = Options::with_backend(Backend::Compile);
            o.points = points;
            o.codegen.lanes = lanes;
            o.codegen.opt_level = level;
            all.push(o);
        }
    }
    all
}

/// The same bits, except that any NaN matches any NaN: which NaN an operation with two
/// NaN operands answers (its sign, its payload) is fixed neither by IEEE 754 nor by Rust,
/// and both rustc and Cranelift commute `+` and `*` freely (x86 answers the first
/// operand's NaN). Every non-NaN result, signed zeros included, must match exactly.
fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// Checks every lane of `model` under every config against the interpreter, at `points`
/// per-point inputs and in batches of the lengths in `batches`.
fn check_model(model: &Model, rng: &mut Rng, batches: &[usize]) -> Result<(), TestCaseError> {
    let oracle = Equation::<System>::from_model(model.clone());
    for options in configs() {
        let mut eq = Equation::<System>::from_model(model.clone());
        eq.set_options(options.clone());
        for kind in LaneKind::ALL {
            prop_assert!(
                eq.wait_for_kernel_of(kind),
                "{kind:?} under {options:?}: {:?}",
                eq.jit_status()
            );
            prop_assert_eq!(eq.kernel_level_of(kind), Some(options.codegen.opt_level));
            let lane = oracle.lane(kind).unwrap();
            let (inputs, outputs) = (lane.symbols + lane.seeds, lane.outputs.len());
            for _ in 0..4 {
                let x: Vec<f64> = (0..inputs).map(|_| rng.value()).collect();
                let (mut want, mut got) = (vec![0.0; outputs], vec![0.0; outputs]);
                oracle.eval_into(kind, &x, &mut want);
                eq.eval_into(kind, &x, &mut got);
                prop_assert!(
                    same(&want, &got),
                    "{kind:?} at {x:?} under {options:?}\n  interpreter {want:?}\n  kernel      {got:?}\n{:?}",
                    lane.graph
                );
            }
            for &len in batches {
                let xs: Vec<Vec<f64>> = (0..inputs)
                    .map(|_| (0..len).map(|_| rng.value()).collect())
                    .collect();
                let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
                let mut want = vec![vec![0.0; len]; outputs];
                let mut got = vec![vec![0.0; len]; outputs];
                let mut w: Vec<&mut [f64]> = want.iter_mut().map(Vec::as_mut_slice).collect();
                let mut o: Vec<&mut [f64]> = got.iter_mut().map(Vec::as_mut_slice).collect();
                oracle.lane_batch(kind, &cols, &mut w).map_err(fail)?;
                eq.lane_batch(kind, &cols, &mut o).map_err(fail)?;
                for (c, (a, b)) in want.iter().zip(&got).enumerate() {
                    let bits = |v: &[f64]| {
                        v.iter()
                            .map(|x| format!("{:016x}", x.to_bits()))
                            .collect::<Vec<_>>()
                    };
                    prop_assert!(
                        same(a, b),
                        "{kind:?} batch of {len}, output {c}, under {options:?}\n  interpreter {:?}\n  kernel      {:?}\n inputs {xs:?}\n{:?}",
                        bits(a), bits(b), lane.graph
                    );
                }
            }
        }
        prop_assert_eq!(eq.jit_status().error, None);
    }
    Ok(())
}

fn fail(e: ddx_ir::Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Every lane, shape and level, per point and in batches; the two batches of 1 100
    /// points run the trials that choose a batch's engine (kernel and block interpreter
    /// in turns of 256 points), then the rest on the engine chosen: every point, on
    /// either side of every seam, to the bit.
    #[test]
    fn kernels_agree_with_the_interpreter_to_the_bit(
        seed in any::<u64>(),
        nodes in 1usize..40,
        symbols in 1usize..4,
        outputs in 1usize..3,
    ) {
        let mut rng = Rng(seed ^ 0x5555);
        let size = ddx_ir::testing::ModelSize { nodes, symbols, outputs, ..Default::default() };
        let batches = [1, 2, 3, 7, 33, 1100, 1100];
        check_model(&ddx_ir::testing::random_model(seed, &size), &mut rng, &batches)?;
        check_model(&random_model(seed, nodes, symbols, outputs), &mut rng, &batches)?;
    }
}

/// Runs `f` with lanes split into segments of at most `per` nodes (at least 2; see
/// `lower::Plan`) for options set on this thread.
fn with_segments<T>(per: usize, f: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            super::compile::SEGMENT_OVERRIDE.with(|c| c.set(None));
        }
    }
    super::compile::SEGMENT_OVERRIDE.with(|c| c.set(Some(per)));
    let _reset = Reset;
    f()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Segmented kernels (a long lane split into functions that pass values through a
    /// heap scratch area) with segments of a few nodes, so that values cross many
    /// boundaries, inputs, constants and outputs sit in every segment, and a segment may
    /// hold nothing but constants: every lane, shape and level, to the bit.
    #[test]
    fn segmented_kernels_agree_with_the_interpreter_to_the_bit(
        seed in any::<u64>(),
        nodes in 1usize..60,
        symbols in 1usize..4,
        outputs in 1usize..4,
        per in 1usize..9,
    ) {
        let mut rng = Rng(seed ^ 0xAAAA);
        with_segments(per, || {
            let size = ddx_ir::testing::ModelSize { nodes, symbols, outputs, ..Default::default() };
            check_model(&ddx_ir::testing::random_model(seed, &size), &mut rng, &[1, 3, 33])?;
            check_model(&random_model(seed, nodes, symbols, outputs), &mut rng, &[1, 3, 33])
        })?;
    }
}

/// `Σᵢ sin(xᵢ)·xᵢ₊₁` (indices mod `k`) as a user function of `k ≥ 3` arguments, with
/// first and second partials.
fn ring(k: usize) -> ddx_ir::UserFunction {
    let next = move |i: usize| (i + 1) % k;
    let prev = move |i: usize| (i + k - 1) % k;
    ddx_ir::UserFunction::new(
        &format!("ring{k}"),
        k,
        move |x| (0..k).map(|i| x[i].sin() * x[next(i)]).sum(),
        move |x, g| {
            for j in 0..k {
                g[j] = x[j].cos() * x[next(j)] + x[prev(j)].sin();
            }
        },
    )
    .unwrap()
    .with_second(move |x, h| {
        h.fill(0.0);
        for j in 0..k {
            h[j * k + j] = -x[j].sin() * x[next(j)];
            h[j * k + next(j)] += x[j].cos();
            h[next(j) * k + j] += x[j].cos();
        }
    })
    .unwrap()
}

/// Calls of user functions of 3, 4 and 7 arguments (their arguments read through pack
/// chains, shared between the value and its partials), in every lane, shape and level,
/// whole and in segments of a few nodes (so a call's arguments cross segment
/// boundaries): the kernels call the same user code as the interpreter, to the bit.
#[test]
fn k_argument_user_calls_agree_with_the_interpreter_to_the_bit() {
    let (r3, r4, r7) = (ring(3), ring(4), ring(7));
    let model = ddx_ir::build(|| {
        let (x, y, z) = (ddx_ir::var("x"), ddx_ir::var("y"), ddx_ir::var("z"));
        let a = r3.call(&[x, y * z, z]);
        let b = r4.call(&[a, x, y.exp(), ddx_ir::Expr::from(0.5)]);
        let c = r7.call(&[x, y, z, a, b, x * y, z.sin()]);
        vec![c + x, a * b]
    })
    .unwrap();
    assert!(model
        .graph()
        .nodes()
        .iter()
        .any(|n| n.op() == Some(Op::Pack)));
    let mut rng = Rng(17);
    check_model(&model, &mut rng, &[1, 3, 33]).unwrap();
    for per in [2, 5] {
        with_segments(per, || check_model(&model, &mut rng, &[1, 33])).unwrap();
    }
}

/// A segmented lane's kernel really is several functions, and answers as one.
#[test]
fn a_long_lane_runs_as_segments() {
    let kind = LaneKind::Jacobian;
    let model = long_sum(40);
    let oracle = Equation::<System>::from_model(model.clone());
    let mut eq = Equation::<System>::from_model(model);
    with_segments(16, || eq.set_options(compile_options(64)));
    assert!(eq.wait_for_kernel_of(kind), "{:?}", eq.jit_status());
    let state = eq.jit.state.as_ref().expect("compiling");
    let kernel = state.slot(kind).current().expect("a kernel");
    let lane = eq.lane(kind).unwrap();
    let nodes = lane.graph.len();
    assert!(nodes > 64, "{nodes} nodes");
    let plan = super::lower::Plan::new(lane, 16).expect("segmented");
    assert_eq!(kernel.functions(), plan.segments(), "{nodes} nodes");
    assert!(plan.segments() >= nodes.div_ceil(16), "{nodes} nodes");
    let x = [0.3, -1.25];
    let (mut want, mut got) = (vec![0.0; lane.outputs.len()], vec![0.0; lane.outputs.len()]);
    oracle.eval_into(kind, &x, &mut want);
    eq.eval_into(kind, &x, &mut got);
    assert!(same(&want, &got), "{want:?} vs {got:?}");
}

/// The plan puts every value a later segment reads in scratch, and nothing else; its
/// segments cover the lane in order, each of at most `per` nodes and (but the last) at
/// least `per / 2`, and each cut is a place of its window where the fewest values cross,
/// counted here by brute force over every place.
#[test]
fn a_plan_gives_a_slot_to_exactly_the_values_crossing_a_boundary() {
    for seed in [9, 10, 11] {
        let model = random_model(seed, 200, 3, 3);
        let eq = Equation::<System>::from_model(model);
        for kind in LaneKind::ALL {
            let lane = eq.lane(kind).unwrap();
            let nodes = lane.graph.nodes();
            for per in [7, 16] {
                let Some(plan) = super::lower::Plan::new(lane, per) else {
                    assert!(nodes.len() <= per);
                    continue;
                };
                let mut covered = 0;
                for s in 0..plan.segments() {
                    let r = plan.range(s);
                    assert_eq!(r.start, covered, "{kind:?} segment {s}");
                    assert!(r.len() <= per && (s + 1 == plan.segments() || r.len() >= per / 2));
                    covered = r.end;
                }
                assert_eq!(covered, nodes.len());
                // Operations made before `k` and read at or after it (a call's pack
                // arguments are read by the call: operands, not args).
                let reads = |id: usize| -> Vec<usize> {
                    let mut v = Vec::new();
                    lane.graph
                        .operands_into(ddx_ir::NodeId::from_index(id), &mut v);
                    v.into_iter().map(|a| a.index()).collect()
                };
                let readers: Vec<Vec<usize>> = (0..nodes.len()).map(reads).collect();
                let crossing = |k: usize| {
                    (0..k)
                        .filter(|&a| matches!(nodes[a], ddx_ir::Node::Apply(..)))
                        .filter(|&a| (k..nodes.len()).any(|r| readers[r].contains(&a)))
                        .count()
                };
                for s in 1..plan.segments() {
                    let (start, cut) = (plan.range(s - 1).start, plan.range(s).start);
                    let best = (start + per / 2..=start + per).map(crossing).min();
                    assert_eq!(Some(crossing(cut)), best, "{kind:?} cut {s} at {cut}");
                }
                let mut slots = 0;
                for (id, node) in nodes.iter().enumerate() {
                    let read_later = (id + 1..nodes.len()).any(|r| {
                        plan.segment_of(r) > plan.segment_of(id) && readers[r].contains(&id)
                    });
                    let wants = read_later && matches!(node, ddx_ir::Node::Apply(..));
                    assert_eq!(plan.has_slot(id), wants, "{kind:?} node {id}");
                    slots += usize::from(wants);
                }
                assert_eq!(plan.scratch, slots);
            }
        }
    }
}

/// Pairs whose two lanes both cross a cut get side-by-side slots, low lane first, and the
/// renumbering keeps every slot once: so the stores and loads of one `f64x2` are the
/// scalar slots' bits (the packed proptest above runs them against the interpreter).
#[test]
fn pairs_crossing_a_cut_sit_side_by_side_in_scratch() {
    let mut side_by_side = 0;
    for seed in 0..8u64 {
        let model = component_model(seed, 3, 6 + seed as usize);
        let eq = Equation::<System>::from_model(model);
        for kind in LaneKind::ALL {
            let lane = eq.lane(kind).unwrap();
            for per in [5, 9, 16] {
                let Some(mut plan) = super::lower::Plan::new(lane, per) else {
                    continue;
                };
                let packs = super::slp::find(lane, true, &plan.starts, &[]);
                let before: Vec<bool> = (0..lane.graph.len()).map(|i| plan.has_slot(i)).collect();
                plan.pair_slots(&packs);
                let mut seen = vec![false; plan.scratch];
                for (id, had) in before.iter().enumerate() {
                    assert_eq!(plan.has_slot(id), *had);
                    if let Some(k) = plan.slot_of(id) {
                        assert!(!std::mem::replace(&mut seen[k], true), "slot {k} twice");
                    }
                    let lo = ddx_ir::NodeId::from_index(id);
                    if let (Some(hi), 0) = (packs.partner(lo), packs.lane(lo)) {
                        if let (Some(a), Some(b)) = (plan.slot_of(id), plan.slot_of(hi.index())) {
                            assert_eq!(b, a + 1, "{kind:?} pair {id}");
                            side_by_side += 1;
                        }
                    }
                }
                assert!(seen.iter().all(|s| *s));
            }
        }
    }
    assert!(side_by_side > 0, "no pair crossed a cut");
    // Compiled here (on this thread), the segments store such pairs and read them back
    // with one instruction each.
    let compiler = super::compile::compiler().expect("a host compiler");
    super::lower::SCRATCH_PAIRS.with(|c| c.set([0, 0]));
    for seed in 0..8u64 {
        let model = component_model(seed, 3, 6 + seed as usize);
        let eq = Equation::<System>::from_model(model);
        for kind in LaneKind::ALL {
            let lane = eq.lane(kind).unwrap();
            compiler
                .compile(lane, Shape::Point, OptLevel::Speed, 9, false, &|| false)
                .expect("compiles")
                .expect("not stopped");
        }
    }
    let [stores, loads] = super::lower::SCRATCH_PAIRS.with(std::cell::Cell::get);
    assert!(
        stores > 0 && loads > 0,
        "{stores} pair stores, {loads} pair loads"
    );
}

#[test]
fn every_operation_is_covered_by_the_random_models() {
    let mut seen = std::collections::HashSet::new();
    for seed in 0..24u64 {
        let m = random_model(seed, 40, 3, 2);
        for n in m.graph().nodes() {
            if let Some(op) = n.op() {
                seen.insert(op);
            }
        }
    }
    let missing: Vec<Op> = Op::ALL
        .into_iter()
        .filter(|op| !seen.contains(op))
        .collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}

#[test]
fn a_batch_split_across_threads_agrees() {
    // Large enough (instruction-points above PARALLEL_WORK) to be split into chunks, so
    // column kernels run from nonzero starts.
    let model = random_model(7, 120, 3, 2);
    let mut rng = Rng(99);
    let nodes = Equation::<System>::from_model(model.clone())
        .lane(LaneKind::Jacobian)
        .unwrap()
        .graph
        .len();
    let len = (crate::PARALLEL_WORK / nodes.max(1)) * 2 + 77;
    check_model(&model, &mut rng, &[len]).expect("agrees");
}

/// Holds the compile pool: no job starts until the guard drops.
fn pause() -> std::sync::MutexGuard<'static, ()> {
    super::compile::PAUSE
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// Blocks until no job of `kind` is pending in `state`.
fn settle(state: &super::State, kind: LaneKind) {
    let slot = state.slot(kind);
    let mut inner = slot.lock();
    while inner.pending > 0 {
        inner = slot.done.wait(inner).unwrap_or_else(|e| e.into_inner());
    }
}

fn compile_options(points: usize) -> Options {
    let mut o = Options::with_backend(Backend::Compile);
    o.points = points;
    o
}

#[test]
fn calls_never_wait_for_the_compiler_and_stay_exact_across_the_switch() {
    let kind = LaneKind::Jacobian;
    let model = random_model(11, 60, 3, 2);
    let oracle = Equation::<System>::from_model(model.clone());
    let lane = oracle.lane(kind).unwrap();
    let (inputs, outputs) = (lane.symbols + lane.seeds, lane.outputs.len());
    let mut rng = Rng(3);
    let points: Vec<Vec<f64>> = (0..64)
        .map(|_| (0..inputs).map(|_| rng.value()).collect())
        .collect();
    let want: Vec<Vec<f64>> = points
        .iter()
        .map(|x| {
            let mut out = vec![0.0; outputs];
            oracle.eval_into(kind, x, &mut out);
            out
        })
        .collect();
    let n = points.len();
    let check = &|eq: &Equation<System>, k: usize| {
        let mut got = vec![0.0; outputs];
        eq.eval_into(kind, &points[k], &mut got);
        assert!(same(&want[k], &got), "point {k}: {:?} vs {got:?}", want[k]);
    };

    let mut eq = Equation::<System>::from_model(model);
    let held = pause();
    eq.set_options(compile_options(1));
    // The compile pool cannot start a job, yet every call from every thread answers: no call
    // waits for the compiler.
    std::thread::scope(|s| {
        for t in 0..4 {
            let eq = &eq;
            s.spawn(move || {
                for k in 0..n {
                    check(eq, (k + t) % n);
                }
            });
        }
    });
    assert!(!eq.uses_kernel_of(kind), "nothing can have compiled yet");
    let state = std::sync::Arc::clone(eq.jit.state.as_ref().expect("compiling"));
    assert_eq!(
        state.slot(kind).lock().pending,
        1,
        "the lane was asked for once"
    );
    drop(held);
    // Now the kernel lands while the threads call; each goes on until it has seen it.
    std::thread::scope(|s| {
        for t in 0..4 {
            let eq = &eq;
            s.spawn(move || {
                let mut k = t;
                let mut after = 0;
                while after < 64 {
                    if eq.uses_kernel_of(kind) {
                        after += 1;
                    }
                    assert_eq!(eq.jit_status().error, None);
                    check(eq, k % n);
                    k += 1;
                }
            });
        }
    });
    assert!(eq.wait_for_kernel_of(kind));
    assert_eq!(eq.kernel_level_of(kind), Some(OptLevel::Speed));
    assert_eq!(eq.jit_status().compiled, 2, "quick, then optimised");
}

#[test]
fn a_change_of_options_abandons_the_compile_in_flight() {
    let kind = LaneKind::Value;
    let mut eq = Equation::<System>::from_model(random_model(5, 30, 2, 1));
    let mut out = vec![0.0; eq.lane(kind).unwrap().outputs.len()];
    eq.eval_into(kind, &[0.5, 0.25], &mut out); // the lane is prepared: asked at once
    let held = pause();
    eq.set_options(compile_options(1));
    let old = std::sync::Arc::clone(eq.jit.state.as_ref().expect("compiling"));
    assert_eq!(old.slot(kind).lock().pending, 1);
    // Setting the value already held changes nothing.
    eq.set_options(compile_options(1));
    assert!(std::sync::Arc::ptr_eq(
        &old,
        eq.jit.state.as_ref().expect("compiling")
    ));
    eq.set_options(Options::default());
    assert!(old.abandoned());
    assert!(!eq.wait_for_kernel_of(kind), "Interpret answers at once");
    eq.set_options(compile_options(64));
    drop(held);
    assert!(eq.wait_for_kernel_of(kind));
    settle(&old, kind);
    assert!(old.slot(kind).current().is_none(), "nothing installed");
    assert_eq!(
        old.stats.compiled(),
        0,
        "nothing compiled for the abandoned options"
    );
    assert_eq!(eq.jit_status().compiled, 2);
}

/// A job is counted pending before `asked` shows it. The waiter below is held at the
/// slot's lock, wherever in `ask` it needs it; whatever it has published by then must
/// already be counted, or a second waiter could read "asked" and "nothing pending" and
/// answer `false` while the kernel is still coming (the reviewer's race: about one round
/// in 3 000–8 000 of four threads calling `wait_for_kernel` at once).
#[test]
fn a_job_is_pending_before_it_shows_as_asked() {
    use std::sync::atomic::Ordering::Acquire;
    let kind = LaneKind::Value;
    let mut eq = Equation::<System>::from_model(random_model(21, 20, 2, 1));
    let held = pause();
    eq.set_options(compile_options(1)); // the lane is not prepared: nothing asked yet
    let state = std::sync::Arc::clone(eq.jit.state.as_ref().expect("compiling"));
    let slot = state.slot(kind);
    assert_eq!(slot.asked.load(Acquire), super::Tier::Nothing as u8);
    let eq = &eq;
    std::thread::scope(|s| {
        let inner = slot.lock();
        let waiter = s.spawn(move || eq.wait_for_kernel_of(kind));
        // Let the waiter run as far as it can without the lock (a bounded count of
        // yields, not a time: the check below holds whatever the waiter reached).
        for _ in 0..20_000 {
            if slot.asked.load(Acquire) != super::Tier::Nothing as u8 {
                break;
            }
            std::thread::yield_now();
        }
        let asked = slot.asked.load(Acquire);
        assert!(
            asked == super::Tier::Nothing as u8 || inner.pending > 0,
            "tier {asked} shows as asked with nothing pending"
        );
        drop(inner);
        drop(held);
        assert!(waiter.join().expect("the waiter returns"));
    });
    assert!(eq.uses_kernel_of(kind));
}

/// The reviewer's input: four threads call `wait_for_kernel` at once on a fresh `Compile`
/// equation; every one must answer `true`, since the kernel lands. Many rounds, with the
/// threads kept between rounds so that a round costs about one small compile.
#[test]
fn simultaneous_waiters_all_see_the_kernel() {
    use std::sync::{Barrier, RwLock};
    const ROUNDS: usize = 5000;
    const THREADS: usize = 4;
    let model = random_model(3, 6, 2, 1);
    let mut o = compile_options(1);
    o.codegen.opt_level = OptLevel::Off; // one tier: the cheapest round
    let current: RwLock<Option<Equation<System>>> = RwLock::new(None);
    let start = Barrier::new(THREADS + 1);
    let end = Barrier::new(THREADS + 1);
    let failures = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for _ in 0..ROUNDS {
                    start.wait();
                    {
                        let eq = current.read().unwrap_or_else(|e| e.into_inner());
                        let eq = eq.as_ref().expect("a round's equation");
                        if !eq.wait_for_kernel_of(LaneKind::Value) {
                            failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                    end.wait();
                }
            });
        }
        for round in 0..ROUNDS {
            let mut eq = Equation::<System>::from_model(model.clone());
            eq.set_options(o.clone());
            *current.write().unwrap_or_else(|e| e.into_inner()) = Some(eq);
            start.wait();
            end.wait();
            let guard = current.read().unwrap_or_else(|e| e.into_inner());
            let eq = guard.as_ref().expect("this round's equation");
            assert!(eq.uses_kernel_of(LaneKind::Value), "round {round}");
            assert_eq!(eq.jit_status().error, None, "round {round}");
            assert_eq!(
                failures.load(std::sync::atomic::Ordering::Relaxed),
                0,
                "round {round}: a waiter answered false, yet the kernel landed"
            );
        }
    });
}

/// A clone shares the kernels and the compile in flight: dropping the original while its
/// compile waits does not abandon it (the clone still holds it), and the clone's own option
/// change leaves the original's kernels alone.
#[test]
fn clones_share_kernels_and_keep_a_compile_alive() {
    let kind = LaneKind::Gradient;
    let model = random_model(5, 30, 3, 1);
    let oracle = Equation::<System>::from_model(model.clone());
    let x = [0.3, -1.1, 2.5];
    let want = oracle.gradient(x).expect("fits");
    let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();

    let mut original = Equation::<System>::from_model(model);
    let held = pause();
    original.set_options(compile_options(1));
    // Asks for the kernel; nothing compiles yet.
    assert_eq!(
        bits(original.gradient(x).expect("fits")),
        bits(want.clone())
    );
    let clone = original.clone();
    drop(original); // the clone still holds the state: the compile must go on
    drop(held);
    assert!(clone.wait_for_kernel_of(kind), "{:?}", clone.jit_status());
    assert_eq!(clone.jit_status().compiled, 2);
    assert_eq!(bits(clone.gradient(x).expect("fits")), bits(want.clone()));

    // A clone of a compiled equation answers from the same kernels, compiling nothing.
    let mut second = clone.clone();
    assert!(second.uses_kernel_of(kind));
    assert_eq!(second.jit_status().compiled, 2);
    // Its own options change; the first keeps its kernels.
    second.set_options(Options::default());
    assert!(!second.uses_kernel_of(kind));
    assert!(clone.uses_kernel_of(kind));
    assert_eq!(bits(second.gradient(x).expect("fits")), bits(want));
    let state = std::sync::Arc::clone(clone.jit.state.as_ref().expect("compiling"));
    assert!(!state.abandoned());
    drop(clone);
    assert!(state.abandoned(), "the last holder lets go");
}

/// Where a job of one state stops ([`super::State::hold`]). Armed by a test, the next job
/// to start records that it started and stays until the test releases it — or, failing
/// safe, for two minutes, so that a compiler that cannot run a second job meanwhile fails
/// the test below instead of hanging it.
#[derive(Debug, Default)]
pub(crate) struct Hold {
    at: std::sync::Mutex<Held>,
    changed: std::sync::Condvar,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Held {
    #[default]
    Off,
    Armed,
    Holding,
    Released,
}

impl Hold {
    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.at.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by every job after it starts.
    pub(crate) fn enter(&self) {
        let mut at = self.lock();
        if *at != Held::Armed {
            return;
        }
        *at = Held::Holding;
        self.changed.notify_all();
        let wait = std::time::Duration::from_secs(120);
        let (mut at, _) = self
            .changed
            .wait_timeout_while(at, wait, |h| *h == Held::Holding)
            .unwrap_or_else(|e| e.into_inner());
        *at = Held::Released;
    }

    fn arm(&self) {
        *self.lock() = Held::Armed;
    }

    /// Blocks until a job is held.
    fn wait_holding(&self) {
        let at = self.lock();
        drop(
            self.changed
                .wait_while(at, |h| *h == Held::Armed)
                .unwrap_or_else(|e| e.into_inner()),
        );
    }

    /// Whether the held job is still held.
    fn holding(&self) -> bool {
        *self.lock() == Held::Holding
    }

    fn release(&self) {
        *self.lock() = Held::Released;
        self.changed.notify_all();
    }
}

/// `Σₖ term(a, b, cₖ)` over two symbols `a`, `b` and `terms` distinct constants `cₖ =
/// c(k)`, summed in order from `0`.
fn sum_over(
    terms: usize,
    c: impl Fn(usize) -> f64,
    term: impl Fn(&mut Graph, NodeId, NodeId, NodeId) -> NodeId,
) -> Model {
    let mut g = Graph::new();
    let a = g.symbol(SymbolId::from_index(0));
    let b = g.symbol(SymbolId::from_index(1));
    let mut y = g.constant(0.0);
    for k in 0..terms {
        let ck = g.constant(c(k));
        let t = term(&mut g, a, b, ck);
        y = g.binary(Op::Add, y, t);
    }
    Model::seal(&g, &[y], vec!["a".into(), "b".into()])
}

/// `Σₖ (a·cₖ + b)·a` with distinct constants `cₖ`: a value lane of about 5 nodes a term.
fn long_sum(terms: usize) -> Model {
    sum_over(
        terms,
        |k| 1.0 + k as f64 * 1e-6,
        |g, a, b, c| {
            let ac = g.binary(Op::Mul, a, c);
            let t = g.binary(Op::Add, ac, b);
            g.binary(Op::Mul, t, a)
        },
    )
}

/// Issue 11: a small lane's kernel lands while another equation's large lane is being
/// compiled (one compile thread used to queue it behind). Asserted by events: the large
/// job is held inside the pool until the small kernel has landed.
#[test]
fn a_small_lane_compiles_while_a_large_one_is_compiling() {
    let kind = LaneKind::Value;
    let mut large = Equation::<System>::from_model(long_sum(super::compile::SMALL_NODES / 4 + 16));
    let mut o = compile_options(1);
    o.codegen.opt_level = OptLevel::Off;
    large.set_options(o.clone()); // no lane is prepared yet: nothing is asked
    let state = std::sync::Arc::clone(large.jit.state.as_ref().expect("compiling"));
    state.hold.arm();
    let mut out = [0.0];
    large.eval_into(kind, &[0.5, 0.25], &mut out); // asks for the large kernel
    assert!(large.lane(kind).unwrap().graph.len() > super::compile::SMALL_NODES);
    state.hold.wait_holding();

    let mut small = Equation::<System>::from_model(random_model(1, 2, 1, 1));
    small.set_options(o);
    assert!(small.wait_for_kernel_of(kind), "{:?}", small.jit_status());
    // The small kernel is in place, and the large job has not been let go.
    assert!(
        state.hold.holding(),
        "the small kernel waited for the large compile"
    );
    assert!(!large.uses_kernel_of(kind));
    state.hold.release();
    assert!(large.wait_for_kernel_of(kind), "{:?}", large.jit_status());
}

/// Small lanes overtake large ones in the queue, and jobs of equal length keep their
/// order; at most `workers − 1` large jobs run at once.
#[test]
fn the_queue_takes_the_fewest_nodes_first_and_keeps_a_worker_for_small_lanes() {
    use super::compile::{Queue, SMALL_NODES};
    let big = SMALL_NODES + 1;
    let mut q = Queue::new(2);
    q.push(big, "large 1");
    q.push(big, "large 2");
    q.push(5, "small 1");
    q.push(3, "smaller");
    q.push(5, "small 2");
    assert_eq!(q.take(), Some(("smaller", false)));
    assert_eq!(q.take(), Some(("small 1", false)));
    assert_eq!(q.take(), Some(("small 2", false)));
    assert_eq!(q.take(), Some(("large 1", true)));
    // One large job runs: the second worker stays for small lanes.
    assert_eq!(q.take(), None, "the second large job waits");
    q.push(7, "late small");
    assert_eq!(q.take(), Some(("late small", false)));
    q.done(false);
    assert_eq!(q.take(), None);
    q.done(true);
    assert_eq!(q.take(), Some(("large 2", true)));
    assert_eq!(q.take(), None);
}

/// Issue 11: each lane's failure is reported as that lane's; a later lane's failure does
/// not hide an earlier one's, and a lane that compiled reports its kernel.
#[test]
fn the_status_reports_each_lane() {
    let mut eq = Equation::<System>::from_model(random_model(2, 20, 2, 1));
    let mut o = compile_options(1);
    o.codegen.opt_level = OptLevel::Off;
    eq.set_options(o);
    assert!(eq.wait_for_kernel_of(LaneKind::Value));
    let state = std::sync::Arc::clone(eq.jit.state.as_ref().expect("compiling"));
    // Two failures, one after the other, as a job reports them.
    let fail = |lane: &'static str| ddx_ir::Error::JitModule {
        lane,
        detail: format!("{lane} failed"),
    };
    state.stats.fail(LaneKind::Gradient, fail("gradient"));
    state.stats.fail(LaneKind::Jacobian, fail("jacobian"));
    let s = eq.jit_status();
    let value = s.lane(LaneKind::Value).expect("asked");
    assert_eq!(value.level, Some(OptLevel::Off));
    assert_eq!((value.compiled, value.error.clone()), (1, None));
    let gradient = s.lane(LaneKind::Gradient).expect("asked");
    assert_eq!(gradient.error, Some(fail("gradient")));
    let jacobian = s.lane(LaneKind::Jacobian).expect("asked");
    assert_eq!(jacobian.error, Some(fail("jacobian")));
    assert_eq!(s.error, Some(fail("jacobian")), "the most recent of all");
    assert!(s.lane(LaneKind::Hessian).is_none(), "never asked");
    assert_eq!(
        s.compiled,
        s.lanes.iter().map(|l| l.compiled).sum::<usize>()
    );
}

/// Where an argument of a [`repeated_model`] term comes from.
#[derive(Clone, Copy)]
enum Src {
    /// Symbol `(k + copy) mod symbols`: evenly spaced, except across the wrap.
    Symbol(usize),
    /// A constant drawn afresh for each copy (awkward values among them).
    Constant,
    /// One of the values every copy reads.
    Shared(usize),
    /// Value `k` of the same copy.
    Earlier(usize),
    /// The previous copy's last value (for copy 0, the first symbol).
    Carried,
}

/// A model that loops over data, as the models re-rolling is for (issue 20): `copies`
/// copies of one random term of a few operations (any operation of `Op::ALL`), each
/// reading symbols that shift with the copy, its own constants, values shared by every
/// copy, its own earlier values and the previous copy's result, folded into an
/// accumulation by one operation in copy order. Sometimes one copy has one operation
/// changed (a run broken in the middle), and some copies' values are also outputs of
/// their own. Copies whose constants coincide share nodes (the graph interns them).
fn repeated_model(seed: u64, copies: usize, symbols: usize) -> Model {
    let mut rng = Rng(seed);
    let mut g = Graph::new();
    let xs: Vec<NodeId> = (0..symbols)
        .map(|s| g.symbol(SymbolId::from_index(s)))
        .collect();
    let shared = [
        g.binary(Op::Mul, xs[0], xs[symbols - 1]),
        g.unary(Op::Exp, xs[symbols / 2]),
    ];
    let len = 2 + rng.below(6);
    let template: Vec<(Op, Vec<Src>)> = (0..len)
        .map(|j| {
            let op = Op::ALL[rng.below(Op::ALL.len())];
            let srcs = (0..op.arity())
                .map(|_| match rng.below(6) {
                    0 | 1 if j > 0 => Src::Earlier(j - 1 - rng.below(j.min(3))),
                    0 => Src::Symbol(rng.below(symbols)),
                    2 => Src::Constant,
                    3 => Src::Shared(rng.below(shared.len())),
                    4 => Src::Carried,
                    _ => Src::Symbol(rng.below(symbols)),
                })
                .collect();
            (op, srcs)
        })
        .collect();
    let exponent = [2.0, -1.0, 0.5, 3.0, -2.0][rng.below(5)];
    let broken = (rng.below(3) == 0).then(|| (rng.below(copies), rng.below(len)));
    let fold = [Op::Add, Op::Add, Op::Sub, Op::Mul, Op::Max][rng.below(5)];
    let (mut acc, mut carried) = (g.constant(0.0), xs[0]);
    let mut outs = Vec::new();
    for c in 0..copies {
        let mut v: Vec<NodeId> = Vec::with_capacity(len);
        for (j, (op, srcs)) in template.iter().enumerate() {
            let mut args: Vec<NodeId> = srcs
                .iter()
                .map(|s| match *s {
                    Src::Symbol(k) => xs[(k + c) % symbols],
                    Src::Constant => g.constant(rng.value()),
                    Src::Shared(k) => shared[k],
                    Src::Earlier(k) => v[k],
                    Src::Carried => carried,
                })
                .collect();
            if matches!(op, Op::Pow | Op::Powi) {
                args[1] = g.constant(exponent);
            }
            let op = match broken {
                Some((bc, bj)) if (bc, bj) == (c, j) => *Op::ALL
                    .iter()
                    .find(|o| o.arity() == op.arity() && *o != op)
                    .unwrap_or(op),
                _ => *op,
            };
            v.push(g.apply(op, &args));
        }
        carried = v[len - 1];
        acc = g.binary(fold, acc, carried);
        if outs.len() < 2 && rng.below(8) == 0 {
            outs.push(v[rng.below(len)]);
        }
    }
    outs.insert(0, acc);
    let names = (0..symbols).map(|s| format!("x{s}")).collect();
    Model::seal(&g, &outs, names)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Re-rolled point kernels (issue 20): models made of many copies of one term, odd
    /// trip counts among them, runs broken by a changed operation, copies sharing nodes
    /// and copies whose values are read elsewhere: every lane, shape and level, to the bit.
    #[test]
    fn rerolled_kernels_agree_with_the_interpreter_to_the_bit(
        seed in any::<u64>(),
        copies in 6usize..40,
        symbols in 1usize..4,
    ) {
        let mut rng = Rng(seed ^ 0x3C3C);
        check_model(&repeated_model(seed, copies, symbols), &mut rng, &[1, 3])?;
    }
}

/// The models of the test above are re-rolled: most of their lanes hold runs, and the
/// kernels of those lanes still agree with the interpreter.
#[test]
fn repeated_models_are_rerolled() {
    let (mut lanes, mut rolled) = (0, 0);
    for seed in 0..12u64 {
        let model = repeated_model(seed, 21 + 2 * seed as usize, 1 + seed as usize % 3);
        let eq = Equation::<System>::from_model(model);
        for kind in LaneKind::ALL {
            lanes += 1;
            let rolls = super::reroll::find(
                &eq.lane(kind).unwrap().graph,
                super::reroll::Rule::EVERY_RUN,
            );
            rolled += usize::from(!rolls.runs.is_empty());
        }
    }
    assert!(rolled * 2 > lanes, "{rolled} of {lanes} lanes re-rolled");
}

/// The random models of `rerolled_kernels_agree_with_the_interpreter_to_the_bit` reach
/// both loops: one copy an iteration, and two (`lower::PairRule::Parity` in tests), among
/// them loops of two copies over odd trip counts (an odd copy left after the loop).
#[test]
fn repeated_models_give_loops_of_one_copy_and_of_two() {
    super::lower::LOOPS.with(|c| c.set([0, 0]));
    let mut odd = 0;
    for seed in 0..12u64 {
        let copies = 21 + 2 * seed as usize;
        let model = repeated_model(seed, copies, 1 + seed as usize % 3);
        let eq = Equation::<System>::from_model(model);
        for kind in LaneKind::ALL {
            let lane = eq.lane(kind).unwrap();
            let rolls = super::reroll::find(&lane.graph, super::reroll::Rule::EVERY_RUN);
            odd += rolls
                .runs
                .iter()
                .step_by(2)
                .filter(|r| r.copies % 2 == 1)
                .count();
            compile_point_kernel(lane);
        }
    }
    let [one, two] = super::lower::LOOPS.with(std::cell::Cell::get);
    assert!(
        one > 0 && two > 0 && odd > 0,
        "{one} loops of one copy, {two} of two, {odd} odd"
    );
}

/// `Σₖ exp(−(a·cₖ − b)²)·cₖ` over `copies` copies: each copy's work depends on no other
/// copy but through the sums.
fn sum_of_copies(copies: usize) -> Model {
    sum_over(
        copies,
        |k| 0.5 + k as f64 * 1e-3,
        |g, a, b, c| {
            let ac = g.binary(Op::Mul, a, c);
            let d = g.binary(Op::Sub, ac, b);
            let d2 = g.binary(Op::Mul, d, d);
            let n = g.unary(Op::Neg, d2);
            let e = g.unary(Op::Exp, n);
            g.binary(Op::Mul, e, c)
        },
    )
}

/// `y ← y/2 + sin(a·cₖ) + sin(b·cₖ)·a` over `links` links: a recurrence whose links do
/// more work that reads no other link than work that does.
fn mostly_independent_recurrence(links: usize) -> Model {
    let mut g = Graph::new();
    let a = g.symbol(SymbolId::from_index(0));
    let b = g.symbol(SymbolId::from_index(1));
    let half = g.constant(0.5);
    let mut y = b;
    for k in 0..links {
        let c = g.constant(1.0 + k as f64 * 1e-3);
        let ac = g.binary(Op::Mul, a, c);
        let s = g.unary(Op::Sin, ac);
        let bc = g.binary(Op::Mul, b, c);
        let t = g.unary(Op::Sin, bc);
        let ta = g.binary(Op::Mul, t, a);
        let w = g.binary(Op::Add, s, ta);
        let yh = g.binary(Op::Mul, y, half);
        y = g.binary(Op::Add, yh, w);
    }
    Model::seal(&g, &[y], vec!["a".into(), "b".into()])
}

/// The tiers' rule as users get it (`lower::keeps_loops`, `AS_SHIPPED`): a lane that
/// re-rolls keeps its loops at the quick tier; at the optimised tier only past
/// `BACKTRACKING_NODES` nodes, or when its copies are mostly one recurrence (half of
/// their operations or more carried); a lane of independent copies under the limit is
/// straight-line there, with its `f64x2` pairs. Every kernel answers the interpreter's
/// bits.
#[test]
fn the_optimised_tier_keeps_loops_only_past_the_allocator_limit_or_for_recurrences() {
    use super::compile::{compiler, BACKTRACKING_NODES, SEGMENT_NODES};
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            super::lower::AS_SHIPPED.set(false);
        }
    }
    super::lower::AS_SHIPPED.set(true);
    let _reset = Reset;
    // (model, over the limit, mostly a recurrence): independent copies under the limit
    // and over it; a recurrence (`long_chain`: each link reads the one before) under it;
    // a recurrence whose links mostly do independent work under it.
    let cases = [
        (sum_of_copies(200), false, false),
        (sum_of_copies(1_300), true, false),
        (long_chain(120), false, true),
        (mostly_independent_recurrence(150), false, false),
    ];
    for (case, (model, long, recurrence)) in cases.into_iter().enumerate() {
        let oracle = Equation::<System>::from_model(model);
        let lane = oracle.lane(LaneKind::Gradient).unwrap();
        let nodes = lane.graph.len();
        assert_eq!(
            nodes > BACKTRACKING_NODES,
            long,
            "case {case}: {nodes} nodes"
        );
        assert!(nodes <= SEGMENT_NODES);
        let rolls = super::reroll::find(&lane.graph, super::reroll::Rule::KERNEL);
        assert!(!rolls.runs.is_empty(), "case {case} re-rolls");
        assert_eq!(
            2 * rolls.carried() >= rolls.covered(),
            recurrence,
            "case {case}: {} of {} carried",
            rolls.carried(),
            rolls.covered()
        );
        let mut rng = Rng(23);
        for level in [OptLevel::Off, OptLevel::Speed] {
            super::lower::LOOPS.with(|c| c.set([0, 0]));
            let made = compiler()
                .expect("a host compiler")
                .compile(lane, Shape::Point, level, SEGMENT_NODES, false, &|| false)
                .expect("compiles")
                .expect("not stopped");
            let [one, two] = super::lower::LOOPS.with(std::cell::Cell::get);
            let looped = one + two > 0;
            assert_eq!(
                looped,
                level == OptLevel::Off || long || recurrence,
                "case {case} at {level:?}"
            );
            let kernel = Kernel::new(&made.code, lane, Shape::Point, level, false, SEGMENT_NODES)
                .expect("a kernel");
            assert_eq!(kernel.scratch() > 0, looped);
            for _ in 0..8 {
                let x = [rng.value(), rng.value()];
                let (mut want, mut got) = ([0.0; 2], [0.0; 2]);
                oracle.gradient_into(x, &mut want).expect("fits");
                kernel.run_point(&x, &mut got);
                assert!(
                    same(&want, &got),
                    "case {case} at {level:?}: {want:?} vs {got:?}"
                );
            }
        }
    }
}

/// Which lanes keep their runs (issue 20, `reroll::Rule::KERNEL`): a long lane made of
/// copies of one term is re-rolled; the same term fewer times, or beside as much work that
/// does not repeat, stays straight-line (while `Rule::EVERY_RUN` finds the runs of both).
#[test]
fn kernels_reroll_only_long_lanes_made_of_copies() {
    use super::reroll::{find, Rule};
    fn lane(copies: usize, other: usize) -> Graph {
        let mut g = Graph::new();
        let (x, y) = (
            g.symbol(SymbolId::from_index(0)),
            g.symbol(SymbolId::from_index(1)),
        );
        let mut acc = g.constant(0.0);
        for i in 0..copies {
            let c = g.constant(1.0 + i as f64);
            let t = g.binary(Op::Mul, x, c);
            let s = g.unary(Op::Sin, t);
            let u = g.binary(Op::Mul, s, s);
            acc = g.binary(Op::Add, acc, u);
        }
        let (mut rng, mut v) = (Rng(5), y);
        for i in 0..other {
            let ops = [
                Op::Add,
                Op::Sub,
                Op::Mul,
                Op::Div,
                Op::Sin,
                Op::Exp,
                Op::Atan,
            ];
            v = match ops[rng.below(ops.len())] {
                op if op.arity() == 1 => g.unary(op, v),
                op => {
                    let c = g.constant(i as f64);
                    g.binary(op, v, c)
                }
            };
        }
        g.binary(Op::Add, acc, v);
        g
    }
    let ops = |g: &Graph| {
        g.nodes()
            .iter()
            .filter(|n| matches!(n, Node::Apply(..)))
            .count()
    };
    let long = lane(400, 0);
    assert!(ops(&long) >= Rule::KERNEL.min_lane_ops);
    assert!(!find(&long, Rule::KERNEL).runs.is_empty());
    for (copies, other) in [(100, 0), (400, 1600)] {
        let g = lane(copies, other);
        assert!(
            find(&g, Rule::KERNEL).runs.is_empty(),
            "{copies} copies, {other} other"
        );
        assert!(
            !find(&g, Rule::EVERY_RUN).runs.is_empty(),
            "{copies} copies, {other} other"
        );
    }
}

/// A re-rolled lane whose loops would read streams they cannot read in place (values of
/// an earlier loop in a shuffled order, which the kernel copies one store each before
/// the loop) stays straight-line, though its runs cover nearly all of it: its loops save
/// no code.
#[test]
fn lanes_whose_loops_copy_their_streams_stay_straight_line() {
    use super::reroll::{find, Rule};
    let n = 400;
    let mut g = Graph::new();
    let x = g.symbol(SymbolId::from_index(0));
    let v: Vec<NodeId> = (0..n)
        .map(|k| {
            let c = g.constant(1.0 + k as f64 * 1e-3);
            let t = g.binary(Op::Mul, x, c);
            g.unary(Op::Exp, t)
        })
        .collect();
    let mut acc = g.constant(0.0);
    for i in 0..n {
        // Two shuffled readings of the first loop's values: not evenly spaced.
        let (p, q) = (v[(i * 7 + 3) % n], v[(i * 13 + 5) % n]);
        let t = g.binary(Op::Mul, p, q);
        let s = g.unary(Op::Sin, t);
        acc = g.binary(Op::Add, acc, s);
    }
    let rolls = find(&g, Rule::EVERY_RUN);
    assert!(
        rolls.straight() * 10 < rolls.ops.len(),
        "{} straight",
        rolls.straight()
    );
    assert!(
        rolls.copied(&g) >= 2 * n - 16,
        "{} copied",
        rolls.copied(&g)
    );
    assert!(find(&g, Rule::KERNEL).runs.is_empty());
}

/// `y ← f(u(y·b), y·cₖ)` for `links` links with distinct constants `cₖ`: a long reverse
/// chain, as the `long_lanes` example's (`u = sin`, `f = +`), whose lanes re-roll.
fn chain_model(u: Op, f: Op, links: usize) -> Model {
    let mut g = Graph::new();
    let a = g.symbol(SymbolId::from_index(0));
    let b = g.symbol(SymbolId::from_index(1));
    let mut y = a;
    for k in 0..links {
        let c = g.constant(0.5 + k as f64 * 1e-6);
        let yb = g.binary(Op::Mul, y, b);
        let s = g.unary(u, yb);
        let yc = g.binary(Op::Mul, y, c);
        y = g.binary(f, s, yc);
    }
    Model::seal(&g, &[y], vec!["a".into(), "b".into()])
}

/// `y ← sin(y·b) + y·cₖ` for `links` links ([`chain_model`]).
fn long_chain(links: usize) -> Model {
    chain_model(Op::Sin, Op::Add, links)
}

/// A long lane that re-rolls is compiled as one function however short the segments
/// (its loops keep their values in heap scratch, not in its frame), also when a column
/// kernel is asked for (a long lane's kernel is a point kernel); it answers as the
/// interpreter does, point by point and in batches, on this thread and on others.
#[test]
fn a_long_lane_that_re_rolls_is_one_function() {
    let model = long_chain(300);
    let oracle = Equation::<System>::from_model(model.clone());
    for points in [1, 64] {
        let mut eq = Equation::<System>::from_model(model.clone());
        with_segments(64, || eq.set_options(compile_options(points)));
        for kind in [LaneKind::Value, LaneKind::Gradient, LaneKind::Hessian] {
            assert!(eq.wait_for_kernel_of(kind), "{:?}", eq.jit_status());
            let lane = oracle.lane(kind).unwrap();
            assert!(lane.graph.len() > 64);
            let state = eq.jit.state.as_ref().expect("compiling");
            let kernel = state.slot(kind).current().expect("a kernel");
            assert_eq!(kernel.functions(), 1, "{kind:?}");
            assert!(super::lower::Plan::new(lane, 64).is_none(), "{kind:?}");
            let rolls = super::reroll::find(&lane.graph, super::reroll::Rule::KERNEL);
            assert!(!rolls.runs.is_empty(), "{kind:?}");
            assert!(kernel.scratch() > 0, "{kind:?}");
            let mut rng = Rng(17);
            let width = lane.inputs();
            let xs: Vec<Vec<f64>> = (0..width)
                .map(|_| (0..5).map(|_| rng.value()).collect())
                .collect();
            let outputs = lane.outputs.len();
            for k in 0..5 {
                let x: Vec<f64> = xs.iter().map(|c| c[k]).collect();
                let (mut want, mut got) = (vec![0.0; outputs], vec![0.0; outputs]);
                oracle.eval_into(kind, &x, &mut want);
                eq.eval_into(kind, &x, &mut got);
                assert!(same(&want, &got), "{kind:?}: {want:?} vs {got:?}");
                // On another thread, whose scratch starts empty.
                let other = std::thread::scope(|s| {
                    s.spawn(|| {
                        let mut out = vec![0.0; outputs];
                        eq.eval_into(kind, &x, &mut out);
                        out
                    })
                    .join()
                    .expect("no panic")
                });
                assert!(same(&want, &other), "{kind:?} on another thread");
            }
            let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
            let mut want = vec![vec![0.0; 5]; outputs];
            let mut got = vec![vec![0.0; 5]; outputs];
            let mut w: Vec<&mut [f64]> = want.iter_mut().map(Vec::as_mut_slice).collect();
            let mut o: Vec<&mut [f64]> = got.iter_mut().map(Vec::as_mut_slice).collect();
            oracle.lane_batch(kind, &cols, &mut w).expect("fits");
            eq.lane_batch(kind, &cols, &mut o).expect("fits");
            for (a, b) in want.iter().zip(&got) {
                assert!(same(a, b), "{kind:?} batch: {a:?} vs {b:?}");
            }
        }
        assert_eq!(eq.jit_status().error, None);
    }
}

/// A re-rolled kernel whose user function evaluates another re-rolled kernel on the same
/// thread: the inner call runs while the outer one holds the thread's scratch, so it gets
/// a buffer of its own, and both answer as the interpreter does.
#[test]
fn a_kernel_re_entered_through_a_user_function_keeps_its_scratch() {
    let mut inner = Equation::<System>::from_model(long_chain(300));
    inner.set_options(compile_options(1));
    assert!(inner.wait_for_kernel_of(LaneKind::Value));
    assert!(inner.wait_for_kernel_of(LaneKind::Jacobian));
    let inner = std::sync::Arc::new(inner);
    let (vi, gi) = (inner.clone(), inner.clone());
    let f = ddx_ir::UserFunction::new(
        "inner",
        2,
        move |x| {
            let mut out = [0.0];
            vi.eval_into(LaneKind::Value, x, &mut out);
            out[0]
        },
        move |x, g| gi.eval_into(LaneKind::Jacobian, x, g),
    )
    .unwrap();
    let model = ddx_ir::build(|| {
        let (a, b) = (ddx_ir::var("a"), ddx_ir::var("b"));
        let mut y = a;
        for k in 0..300 {
            y = (y * b).sin() + y * (0.5 + k as f64 * 1e-6);
        }
        vec![y + f.call(&[y, b])]
    })
    .unwrap();
    let oracle = Equation::<System>::from_model(model.clone());
    let mut eq = Equation::<System>::from_model(model);
    with_segments(64, || eq.set_options(compile_options(1)));
    let mut rng = Rng(23);
    for kind in [LaneKind::Value, LaneKind::Gradient] {
        assert!(eq.wait_for_kernel_of(kind), "{:?}", eq.jit_status());
        let state = eq.jit.state.as_ref().expect("compiling");
        let kernel = state.slot(kind).current().expect("a kernel");
        assert!(kernel.functions() == 1 && kernel.scratch() > 0, "{kind:?}");
        let lane = oracle.lane(kind).unwrap();
        for _ in 0..4 {
            let x: Vec<f64> = (0..lane.inputs()).map(|_| rng.value()).collect();
            let (mut want, mut got) =
                (vec![0.0; lane.outputs.len()], vec![0.0; lane.outputs.len()]);
            oracle.eval_into(kind, &x, &mut want);
            eq.eval_into(kind, &x, &mut got);
            assert!(same(&want, &got), "{kind:?}: {want:?} vs {got:?}");
        }
    }
}

/// [`chain_model`] with a random unary `u` and binary `f` of `Op::ALL` (any, `pow` among
/// them).
fn random_chain(seed: u64, links: usize) -> Model {
    let mut rng = Rng(seed);
    let pick = |rng: &mut Rng, arity: usize| {
        let ops: Vec<Op> = Op::ALL
            .iter()
            .copied()
            .filter(|o| o.arity() == arity && !matches!(o, Op::Call | Op::Pack))
            .collect();
        ops[rng.below(ops.len())]
    };
    let (u, f) = (pick(&mut rng, 1), pick(&mut rng, 2));
    chain_model(u, f, links)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, ..ProptestConfig::default() })]

    /// Long random chains under short segments: the lanes that re-roll are one function
    /// with heap scratch, the others are split; every lane, shape and level, to the bit.
    #[test]
    fn long_rerolled_lanes_agree_with_the_interpreter_to_the_bit(
        seed in any::<u64>(),
        links in 110usize..160,
        per in prop::sample::select(vec![64usize, 256]),
    ) {
        let mut rng = Rng(seed ^ 0x7E7E);
        with_segments(per, || check_model(&random_chain(seed, links), &mut rng, &[1, 3]))?;
    }
}

/// The models of the test above exercise both: over a few seeds, some long lanes stay
/// one function and some are split.
#[test]
fn long_random_chains_have_whole_and_split_lanes() {
    let (mut whole, mut split) = (0, 0);
    for seed in 0..8u64 {
        let eq = Equation::<System>::from_model(random_chain(seed, 110));
        for kind in LaneKind::ALL {
            let lane = eq.lane(kind).unwrap();
            if lane.graph.len() > 128 {
                match super::lower::Plan::new(lane, 128) {
                    None => whole += 1,
                    Some(_) => split += 1,
                }
            }
        }
    }
    assert!(whole >= 8 && split >= 2, "{whole} whole, {split} split");
}

/// Per-copy constants are read in place from the kernel's constant table (issue 20): the
/// point kernels of repeated models with constant streams carry tables, and answer as the
/// interpreter does (every bit: the proptest above runs the same models).
#[test]
fn constant_streams_are_read_from_the_kernel_table() {
    let (mut tabled, mut rng) = (0, Rng(29));
    for seed in 0..12u64 {
        let model = repeated_model(seed, 23 + seed as usize, 1 + seed as usize % 3);
        let oracle = Equation::<System>::from_model(model.clone());
        let mut eq = Equation::<System>::from_model(model);
        eq.set_options(compile_options(1));
        for kind in LaneKind::ALL {
            assert!(eq.wait_for_kernel_of(kind), "{:?}", eq.jit_status());
            let state = eq.jit.state.as_ref().expect("compiling");
            tabled += usize::from(state.slot(kind).current().expect("a kernel").constants() > 0);
            let lane = oracle.lane(kind).unwrap();
            let x: Vec<f64> = (0..lane.inputs()).map(|_| rng.value()).collect();
            let (mut want, mut got) =
                (vec![0.0; lane.outputs.len()], vec![0.0; lane.outputs.len()]);
            oracle.eval_into(kind, &x, &mut want);
            eq.eval_into(kind, &x, &mut got);
            assert!(same(&want, &got), "{kind:?}: {want:?} vs {got:?}");
        }
    }
    assert!(tabled >= 6, "{tabled} kernels with a constant table");
}

/// A point kernel whose constant table's place is damaged is refused, not run.
#[test]
fn a_damaged_constant_table_is_refused() {
    let model = repeated_model(3, 25, 2);
    let eq = Equation::<System>::from_model(model);
    let lane = eq.lane(LaneKind::Gradient).unwrap();
    let c = super::compile::compiler().expect("host");
    let code = c
        .compile(
            lane,
            Shape::Point,
            OptLevel::Off,
            usize::MAX,
            false,
            &|| false,
        )
        .expect("compiles")
        .expect("not stopped")
        .code;
    let new = |code: &[u8]| Kernel::new(code, lane, Shape::Point, OptLevel::Off, false, usize::MAX);
    assert!(new(&code).is_ok());
    // The table's offset, its length and the scratch's length (too large when its top
    // byte is set).
    let end = code.len() - 12;
    for (at, byte) in [
        (end, 1u8),
        (end + 4, 1),
        (end + 3, 0x80),
        (end + 7, 0x80),
        (end + 11, 0x80),
    ] {
        let mut bad = code.clone();
        bad[at] ^= byte;
        assert!(
            matches!(new(&bad), Err(ddx_ir::Error::JitObject { .. })),
            "byte {at} changed"
        );
    }
    assert!(new(&code[..7]).is_err());
    // A scratch longer than a lane of this length can need.
    let mut long = code.clone();
    let most = (super::lower::MAX_SCRATCH_PER_NODE * lane.graph.len()) as u32;
    long[end + 8..end + 12].copy_from_slice(&(most + 1).to_le_bytes());
    assert!(matches!(new(&long), Err(ddx_ir::Error::JitObject { .. })));
    long[end + 8..end + 12].copy_from_slice(&most.to_le_bytes());
    assert!(new(&long).is_ok());
}

/// A model of `copies` (2 or 3, too few to make a run) components computed alike, as a
/// mixture model computes each component's term: one random template of `len` operations
/// applied to each component, reading the component's own symbols (symbol `k·copies + c`
/// is the `k`-th of component `c`: adjacent across components, so pairs of them are one
/// load), its own constants (pairs of them come from
/// the kernel's table), values every component reads, its own earlier values and values
/// of the component before; then the components' results summed, multiplied or folded by
/// `max`, and each component's result also an output of its own (adjacent outputs, stored
/// by one vector store when paired). The AD passes then pair the components' adjoints too
/// (issue 20's packed point kernels).
fn component_model(seed: u64, copies: usize, len: usize) -> Model {
    let mut rng = Rng(seed);
    let mut g = Graph::new();
    let per = 2;
    let symbols = per * copies + 1;
    let xs: Vec<NodeId> = (0..symbols)
        .map(|s| g.symbol(SymbolId::from_index(s)))
        .collect();
    let shared = [
        xs[symbols - 1],
        g.binary(Op::Mul, xs[0], xs[symbols - 1]),
        g.unary(Op::Exp, xs[symbols - 1]),
    ];
    #[derive(Clone, Copy)]
    enum From {
        Own(usize),
        Constant,
        Shared(usize),
        Earlier(usize),
        Before(usize),
    }
    let template: Vec<(Op, Vec<From>)> = (0..len)
        .map(|j| {
            // Mostly the operations packed inline; now and then a call or a rare one.
            let op = if rng.below(4) == 0 {
                Op::ALL[rng.below(Op::ALL.len())]
            } else {
                [
                    Op::Add,
                    Op::Sub,
                    Op::Mul,
                    Op::Div,
                    Op::Mul,
                    Op::Add,
                    Op::Neg,
                    Op::Sqrt,
                    Op::Abs,
                    Op::Max,
                    Op::Min,
                    Op::Lt,
                    Op::Select,
                    Op::Pow,
                    Op::Powi,
                    Op::Recip,
                    Op::Sign,
                    Op::Ne,
                ][rng.below(18)]
            };
            let srcs = (0..op.arity())
                .map(|_| match rng.below(8) {
                    0..=2 if j > 0 => From::Earlier(j - 1 - rng.below(j.min(4))),
                    3 => From::Constant,
                    4 => From::Shared(rng.below(shared.len())),
                    5 if j > 0 => From::Before(rng.below(j)),
                    _ => From::Own(rng.below(per)),
                })
                .collect();
            (op, srcs)
        })
        .collect();
    let exponent = [2.0, -1.0, 0.5, 2.0, 3.0][rng.below(5)];
    let mut made: Vec<Vec<NodeId>> = Vec::new();
    let mut outs = vec![NodeId::from_index(0)];
    for c in 0..copies {
        let mut v: Vec<NodeId> = Vec::with_capacity(len);
        for (op, srcs) in &template {
            let mut args: Vec<NodeId> = srcs
                .iter()
                .map(|s| match *s {
                    From::Own(k) => xs[k * copies + c],
                    From::Constant => g.constant(rng.value()),
                    From::Shared(k) => shared[k],
                    From::Earlier(k) => v[k],
                    From::Before(k) => made.last().map_or(xs[0], |p| p[k]),
                })
                .collect();
            if matches!(op, Op::Pow | Op::Powi) {
                args[1] = g.constant(exponent);
            }
            v.push(g.apply(*op, &args));
        }
        outs.push(v[len - 1]);
        made.push(v);
    }
    let fold = [Op::Add, Op::Mul, Op::Max][rng.below(3)];
    outs[0] = made
        .iter()
        .map(|v| v[len - 1])
        .reduce(|a, b| g.binary(fold, a, b))
        .unwrap_or(xs[0]);
    let names = (0..symbols).map(|s| format!("x{s}")).collect();
    Model::seal(&g, &outs, names)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Packed point kernels (issue 20): models whose components are computed alike, so
    /// that their operations, and their adjoints', are paired into `f64x2` operations
    /// (vector operands built from pairs, splats, gathers, constant pairs from the table,
    /// adjacent inputs; pairs read as scalars; outputs stored in pairs), whole and split
    /// into segments of a few nodes: every lane, shape and level, to the bit.
    #[test]
    fn packed_kernels_agree_with_the_interpreter_to_the_bit(
        seed in any::<u64>(),
        copies in 2usize..4,
        len in 1usize..14,
        per in 2usize..24,
    ) {
        let mut rng = Rng(seed ^ 0x7E7E);
        let model = component_model(seed, copies, len);
        check_model(&model, &mut rng, &[1, 3])?;
        // Segmented: pairs within a segment, values crossing segments through scratch.
        with_segments(per, || check_model(&model, &mut rng, &[1]))?;
    }
}

/// The models of the test above are packed: most of their lanes hold pairs, nearly every
/// operation of the value lane of a model of inline operations is paired, and the kernels
/// stay exact (the proptest above checks the bits).
#[test]
fn component_models_are_packed() {
    let (mut lanes, mut packed) = (0, 0);
    for seed in 0..16u64 {
        let model = component_model(seed, 2 + seed as usize % 2, 3 + seed as usize % 9);
        let eq = Equation::<System>::from_model(model);
        for kind in LaneKind::ALL {
            let lane = eq.lane(kind).unwrap();
            lanes += 1;
            packed += usize::from(!super::slp::find(lane, true, &[0], &[]).is_empty());
        }
    }
    assert!(packed * 2 > lanes, "{packed} of {lanes} lanes packed");
}

/// `exp` is computed inline (`Emit::exp`), in vector lanes too, with a branch to the table's
/// function off its plain path (`2⁻⁵⁴ ≤ |x| < 512`). At and beside every edge of that path
/// and of the result's range, in every pair of neighbouring points a column kernel takes
/// at once, every kernel answers `ddx_ir::math::exp`'s bits.
#[test]
fn inline_exp_agrees_at_the_edges_of_its_plain_path() {
    let mut edges = vec![
        0.0,
        f64::INFINITY,
        f64::NAN,
        5e-324,
        1e-310,
        1e-300,
        0.3,
        3.7,
    ];
    for b in [
        ddx_ir::math::EXP_PLAIN_MIN,
        ddx_ir::math::EXP_PLAIN_MAX,
        1024.0,
        709.782_712_893_384,   // the last finite result
        745.133_219_101_941_1, // the last nonzero result, at −x
        708.396_418_532_264_1, // the smallest normal result, at −x
    ] {
        edges.extend([b, b.next_up(), b.next_down()]);
    }
    let edges: Vec<f64> = edges.iter().flat_map(|&e| [e, -e]).collect();
    let mut g = Graph::new();
    let x = g.symbol(SymbolId::from_index(0));
    let y = g.symbol(SymbolId::from_index(1));
    let ex = g.apply(Op::Exp, &[x]);
    let xy = g.apply(Op::Mul, &[x, y]);
    let exy = g.apply(Op::Exp, &[xy]);
    let model = Model::seal(&g, &[ex, exy], vec!["x".into(), "y".into()]);
    // Every ordered pair of edges, side by side in a column (and y = 1: exy = exp(x) too).
    let xs: Vec<f64> = edges
        .iter()
        .flat_map(|&a| edges.iter().flat_map(move |&b| [a, b]))
        .collect();
    let ones = vec![1.0; xs.len()];
    let want: Vec<f64> = xs.iter().map(|&v| ddx_ir::math::exp(v)).collect();
    for options in configs() {
        let mut eq = Equation::<System>::from_model(model.clone());
        eq.set_options(options.clone());
        assert!(eq.wait_for_kernel_of(LaneKind::Value), "{options:?}");
        for &v in &edges {
            let mut out = [0.0; 2];
            eq.eval_into(LaneKind::Value, &[v, 1.0], &mut out);
            let e = ddx_ir::math::exp(v);
            assert!(same(&out, &[e, e]), "exp({v:e}) under {options:?}: {out:?}");
        }
        let mut got = vec![vec![0.0; xs.len()]; 2];
        let mut o: Vec<&mut [f64]> = got.iter_mut().map(Vec::as_mut_slice).collect();
        eq.lane_batch(LaneKind::Value, &[&xs, &ones], &mut o)
            .expect("a batch");
        for out in &got {
            assert!(same(out, &want), "batch under {options:?}");
        }
    }
}

/// `log` inline (where the CPU has FMA; the table's function where not) against
/// `ddx_ir::math::log` at the edges of its plain path and of its table's rows: per point,
/// where the pairing puts two `log`s in one vector (one lane on the plain path and the
/// other off it, in every ordered pair of edges), and in batches.
#[test]
fn inline_log_agrees_at_the_edges_of_its_plain_path() {
    let mut edges = vec![
        0.0,
        f64::INFINITY,
        f64::NAN,
        5e-324,
        1e-310,
        1.0,
        0.5,
        2.0,
        0.998_040_403_820_329_2, // the largest error measured (0.5127 ULP)
        std::f64::consts::E,
    ];
    for b in [
        f64::MIN_POSITIVE,
        f64::MAX,
        1.0 - 1.0 / 512.0, // the ends of the row around 1
        1.0 + 1.0 / 256.0,
        1.0 + f64::EPSILON,
        f64::from_bits(ddx_ir::math::LOG_OFF),
    ] {
        edges.extend([b, b.next_up(), b.next_down()]);
    }
    let edges: Vec<f64> = edges.iter().flat_map(|&e| [e, -e]).collect();
    let mut g = Graph::new();
    let x = g.symbol(SymbolId::from_index(0));
    let y = g.symbol(SymbolId::from_index(1));
    let lx = g.apply(Op::Log, &[x]);
    let ly = g.apply(Op::Log, &[y]);
    let xy = g.apply(Op::Mul, &[x, y]);
    let lxy = g.apply(Op::Log, &[xy]);
    let two = g.constant(2.0);
    let x2 = g.apply(Op::Mul, &[x, two]);
    let lx2 = g.apply(Op::Log, &[x2]);
    let model = Model::seal(&g, &[lx, ly, lxy, lx2], vec!["x".into(), "y".into()]);
    let want = |a: f64, b: f64| {
        use ddx_ir::math::log;
        [log(a), log(b), log(a * b), log(a * 2.0)]
    };
    let (xs, ys): (Vec<f64>, Vec<f64>) = edges
        .iter()
        .flat_map(|&a| edges.iter().map(move |&b| (a, b)))
        .unzip();
    for options in configs() {
        let mut eq = Equation::<System>::from_model(model.clone());
        eq.set_options(options.clone());
        assert!(eq.wait_for_kernel_of(LaneKind::Value), "{options:?}");
        for (&a, &b) in xs.iter().zip(&ys) {
            let mut out = [0.0; 4];
            eq.eval_into(LaneKind::Value, &[a, b], &mut out);
            assert!(
                same(&out, &want(a, b)),
                "log at ({a:e}, {b:e}) under {options:?}: {out:?}"
            );
        }
        let mut got = vec![vec![0.0; xs.len()]; 4];
        let mut o: Vec<&mut [f64]> = got.iter_mut().map(Vec::as_mut_slice).collect();
        eq.lane_batch(LaneKind::Value, &[&xs, &ys], &mut o)
            .expect("a batch");
        for (p, (&a, &b)) in xs.iter().zip(&ys).enumerate() {
            let out = [got[0][p], got[1][p], got[2][p], got[3][p]];
            assert!(
                same(&out, &want(a, b)),
                "batch at ({a:e}, {b:e}) under {options:?}"
            );
        }
    }
}

/// `Σ_k x0·sin(x1·t_k) + cos(x0 + t_k)` over `terms` data values `t_k` (NIST ENSO's shape).
fn trig_sum(terms: usize) -> Model {
    let mut g = Graph::new();
    let x0 = g.symbol(SymbolId::from_index(0));
    let x1 = g.symbol(SymbolId::from_index(1));
    let mut sum = g.constant(0.0);
    for k in 0..terms {
        let t = g.constant(0.25 + k as f64 / 7.0);
        let a = g.apply(Op::Mul, &[x1, t]);
        let s = g.apply(Op::Sin, &[a]);
        let s = g.apply(Op::Mul, &[x0, s]);
        let b = g.apply(Op::Add, &[x0, t]);
        let c = g.apply(Op::Cos, &[b]);
        let term = g.apply(Op::Add, &[s, c]);
        sum = g.apply(Op::Add, &[sum, term]);
    }
    Model::seal(&g, &[sum], vec!["x0".into(), "x1".into()])
}

/// A lane that makes `lower::BATCH_POINT_CALLS` calls out of line or more gets a point
/// kernel when a column kernel is asked for (batches run it point by point); one with
/// fewer keeps its column kernel, and `exp`, computed inline, is no call. Both answer the
/// interpreter's bits.
#[test]
fn lanes_that_call_out_often_batch_through_their_point_kernel() {
    use super::lower::{kernel_shape, BATCH_POINT_CALLS};
    let calls = |model: &Model, kind: LaneKind| {
        let eq = Equation::<System>::from_model(model.clone());
        let lane = eq.lane(kind).unwrap().clone();
        let n = (0..lane.graph.len())
            .filter(|&id| super::slp::calls_out(&lane, id))
            .count();
        (lane, n)
    };
    let many = trig_sum(BATCH_POINT_CALLS / 2 + 1);
    let few = trig_sum(BATCH_POINT_CALLS / 4);
    for kind in [LaneKind::Value, LaneKind::Gradient] {
        let (lane, n) = calls(&many, kind);
        assert!(n >= BATCH_POINT_CALLS, "{kind:?}: {n}");
        assert_eq!(
            kernel_shape(&lane, Shape::Column { width: 2 }, usize::MAX),
            Shape::Point
        );
        let (lane, n) = calls(&few, kind);
        assert!(n < BATCH_POINT_CALLS, "{kind:?}: {n}");
        assert_eq!(
            kernel_shape(&lane, Shape::Column { width: 2 }, usize::MAX),
            Shape::Column { width: 2 }
        );
    }
    // exp is inline: as many exps as sines above are no calls.
    let mut g = Graph::new();
    let x = g.symbol(SymbolId::from_index(0));
    let mut sum = g.constant(0.0);
    for k in 0..BATCH_POINT_CALLS {
        let t = g.constant(k as f64 / 100.0);
        let a = g.apply(Op::Mul, &[x, t]);
        let e = g.apply(Op::Exp, &[a]);
        sum = g.apply(Op::Add, &[sum, e]);
    }
    let exps = Model::seal(&g, &[sum], vec!["x".into()]);
    let (lane, n) = calls(&exps, LaneKind::Value);
    assert_eq!(n, 0);
    assert_eq!(
        kernel_shape(&lane, Shape::Column { width: 2 }, usize::MAX),
        Shape::Column { width: 2 }
    );
    let mut rng = Rng(29);
    check_model(&many, &mut rng, &[1, 2, 7]).expect("bits");
}

/// Compiles `lane` as the JIT's workers do a point kernel (optimised, segments of the
/// default length), on this thread, so that the lowering's thread-local counters see it.
fn compile_point_kernel(lane: &ddx_ir::Lane) {
    super::compile::compiler()
        .expect("a host compiler")
        .compile(
            lane,
            Shape::Point,
            OptLevel::Speed,
            super::compile::SEGMENT_NODES,
            false,
            &|| false,
        )
        .expect("compiles")
        .expect("not stopped");
}

/// A model of `rows` weighted sums of its 48 inputs, as a quadratic form or a linear layer
/// leaves them (`dots`): row `r` is a chain of links `s ← s + x·w`, the sum and the
/// product each on the side its block of rows draws (blocks of rows share a stride of
/// input slots, from −2 to 2, their sides, and lengths within twice the block's
/// shortest, so that they group); some rows have a
/// link off the stride or on the other side, which cuts them; a row starts from a product
/// of inputs, a constant, or (some rows) the sine of an earlier row's value, which its
/// loop must wait for. One weight in eight is drawn with `Rng::value` (infinities, NaN,
/// signed zeros, huge values among them). The output is `Σ_r value_r · x_r` and the last row's
/// value, so the gradient lane holds dots too: the inputs' adjoints, `Σ_r x_r·w_rj`.
fn dot_model(seed: u64, rows: usize) -> Model {
    const SYMBOLS: usize = 48;
    let mut rng = Rng(seed);
    let mut g = Graph::new();
    let xs: Vec<NodeId> = (0..SYMBOLS)
        .map(|s| g.symbol(SymbolId::from_index(s)))
        .collect();
    let mut block = 0;
    let (mut stride, mut term_second, mut weight_second) = (1i64, true, true);
    let (mut longest, mut shortest) = (40, 8);
    let (mut prev, mut values): (Option<NodeId>, Vec<NodeId>) = (None, Vec::new());
    let mut f: Option<NodeId> = None;
    for r in 0..rows {
        if block == 0 {
            block = 2 + rng.below(7);
            stride = [1, -1, 0, 2, -2, 1][rng.below(6)];
            term_second = rng.below(3) != 0;
            weight_second = rng.below(3) != 0;
            longest = if stride.abs() == 2 { 24 } else { 40 };
            shortest = 8 + rng.below(longest / 2 - 7);
        }
        block -= 1;
        let len = shortest + rng.below(shortest.min(longest - shortest + 1));
        let span = (len as i64 - 1) * stride;
        let base = match stride {
            0 => rng.below(SYMBOLS) as i64,
            s if s > 0 => rng.below(SYMBOLS - span as usize) as i64,
            _ => (-span) + rng.below(SYMBOLS - (-span) as usize) as i64,
        };
        let mut s = match (rng.below(4), values.is_empty()) {
            (0, false) => g.unary(Op::Sin, values[rng.below(values.len())]),
            (1, _) => g.constant(rng.value()),
            _ => g.binary(Op::Mul, xs[rng.below(SYMBOLS)], xs[rng.below(SYMBOLS)]),
        };
        let cut = (rng.below(4) == 0).then(|| (rng.below(len), rng.below(2) == 0));
        for k in 0..len {
            let mut slot = (base + k as i64 * stride) as usize;
            let (mut ts, ws) = (term_second, weight_second);
            match cut {
                Some((at, true)) if at == k => slot = (slot + 1) % SYMBOLS,
                Some((at, false)) if at == k => ts = !ts,
                _ => {}
            }
            // Mostly plain weights: an awkward one may fold (`x·1` is `x`), cutting the row.
            let w = if rng.below(8) == 0 {
                rng.value()
            } else {
                ((rng.next() >> 11) as f64 / (1u64 << 53) as f64) * 8.0 - 4.0
            };
            let w = g.constant(w);
            let t = if ws {
                g.binary(Op::Mul, xs[slot], w)
            } else {
                g.binary(Op::Mul, w, xs[slot])
            };
            s = if ts {
                g.binary(Op::Add, s, t)
            } else {
                g.binary(Op::Add, t, s)
            };
        }
        prev = Some(s);
        values.push(s);
        let term = g.binary(Op::Mul, s, xs[r % SYMBOLS]);
        f = Some(match f {
            None => term,
            Some(f) => g.binary(Op::Add, f, term),
        });
    }
    let (Some(f), Some(last)) = (f, prev) else {
        unreachable!("at least one row")
    };
    // Names that sort as the symbols are numbered (a model's symbols go in name order).
    let names = (0..SYMBOLS).map(|s| format!("x{s:02}")).collect();
    Model::seal(&g, &[f, last], names)
}

/// A model of `rows` weighted sums of computed values, as a mixture's sums over its
/// components leave them (`dots` over operations): row `r` is a chain of links
/// `s ← s + v·w` whose values `v` are a window of one of three sequences, read forwards
/// or backwards: products of neighbouring inputs (which pair), inputs and sines of
/// inputs alternating, or the values of the rows before (so a row waits on earlier rows'
/// loops through its values). Blocks of rows share a sequence, a direction, sides and
/// lengths within twice the shortest, so that they group; some rows repeat a value or
/// read one from outside the window, which cuts them; a row starts from a constant, a
/// product of inputs (an input, in the third of the models that has no products, so
/// nothing pairs and its kernels are scalar around the loops) or the sine of an earlier
/// row's value. One weight in eight is drawn with `Rng::value`. The output is
/// `Σ_r value_r · x_r` and the last row's value, so the gradient lane holds dots over
/// operations too (the adjoints of the values).
fn value_dot_model(seed: u64, rows: usize) -> Model {
    const SYMBOLS: usize = 48;
    let mut rng = Rng(seed ^ 0x7A1E);
    let mut g = Graph::new();
    let xs: Vec<NodeId> = (0..SYMBOLS)
        .map(|s| g.symbol(SymbolId::from_index(s)))
        .collect();
    let products: Vec<NodeId> = (0..40)
        .map(|k| g.binary(Op::Mul, xs[k], xs[k + 1]))
        .collect();
    let mixed: Vec<NodeId> = (0..20)
        .flat_map(|k| {
            let x = xs[2 * k + 3];
            let sin = g.unary(Op::Sin, x);
            [x, sin]
        })
        .collect();
    // A third of the models has nothing the pairs take (no products, rows starting from
    // inputs or constants), so their kernels take the scalar path.
    let plain = seed.is_multiple_of(3);
    let mut values: Vec<NodeId> = Vec::new();
    let mut block = 0;
    let (mut source, mut backwards, mut term_second, mut weight_second) = (0, false, true, true);
    let (mut shortest, mut longest) = (8, 16);
    let mut f: Option<NodeId> = None;
    for r in 0..rows {
        if block == 0 {
            block = 2 + rng.below(6);
            source = if values.len() >= 10 {
                rng.below(3)
            } else {
                rng.below(2)
            };
            if plain && source == 0 {
                source = 1;
            }
            backwards = rng.below(3) == 0;
            term_second = rng.below(3) != 0;
            weight_second = rng.below(3) != 0;
            longest = 16 + rng.below(20);
            shortest = 8 + rng.below(longest / 2 - 7);
        }
        block -= 1;
        let sequence: Vec<NodeId> = match source {
            0 => products.clone(),
            1 => mixed.clone(),
            _ => values.clone(),
        };
        let len = (shortest + rng.below(shortest.min(longest - shortest + 1))).min(sequence.len());
        let first = rng.below(sequence.len() - len + 1);
        let mut window: Vec<NodeId> = sequence[first..first + len].to_vec();
        if backwards {
            window.reverse();
        }
        match rng.below(6) {
            0 => {
                let k = rng.below(len);
                window[k] = window[k.saturating_sub(1)];
            }
            1 => {
                let k = rng.below(len);
                let foreign = if plain { &mixed } else { &products };
                window[k] = foreign[rng.below(foreign.len())];
            }
            _ => {}
        }
        let mut s = match (rng.below(3), values.is_empty()) {
            (0, false) => g.unary(Op::Sin, values[rng.below(values.len())]),
            (1, _) => g.constant(rng.value()),
            _ if plain => xs[rng.below(SYMBOLS)],
            _ => g.binary(Op::Mul, xs[rng.below(SYMBOLS)], xs[rng.below(SYMBOLS)]),
        };
        for &v in &window {
            let w = if rng.below(8) == 0 {
                rng.value()
            } else {
                ((rng.next() >> 11) as f64 / (1u64 << 53) as f64) * 8.0 - 4.0
            };
            let w = g.constant(w);
            let t = if weight_second {
                g.binary(Op::Mul, v, w)
            } else {
                g.binary(Op::Mul, w, v)
            };
            s = if term_second {
                g.binary(Op::Add, s, t)
            } else {
                g.binary(Op::Add, t, s)
            };
        }
        values.push(s);
        let term = g.binary(Op::Mul, s, xs[r % SYMBOLS]);
        f = Some(match f {
            None => term,
            Some(f) => g.binary(Op::Add, f, term),
        });
    }
    let (Some(f), Some(&last)) = (f, values.last()) else {
        unreachable!("at least one row")
    };
    let names = (0..SYMBOLS).map(|s| format!("x{s:02}")).collect();
    Model::seal(&g, &[f, last], names)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Point kernels with dot loops (issue 20): rows of weighted inputs of every stride
    /// and side, cut, grouped or alone, of lengths that leave links before each loop, in
    /// the value lane and as the gradient's adjoints: every lane, shape and level, to the
    /// bit.
    #[test]
    fn dot_kernels_agree_with_the_interpreter_to_the_bit(
        seed in any::<u64>(),
        rows in 1usize..20,
    ) {
        let mut rng = Rng(seed ^ 0xD07D);
        check_model(&dot_model(seed, rows), &mut rng, &[1, 3])?;
    }

    /// Point kernels with dot loops over computed values (issue 20): windows of shared
    /// sequences read either way, values stored to the scratch where made, rows that
    /// read earlier rows' loops, cut rows; every lane, shape and level, to the bit.
    #[test]
    fn value_dot_kernels_agree_with_the_interpreter_to_the_bit(
        seed in any::<u64>(),
        rows in 1usize..24,
    ) {
        let mut rng = Rng(seed ^ 0xD07E);
        check_model(&value_dot_model(seed, rows), &mut rng, &[1, 3])?;
    }
}

/// The models of the test above reach the dot loops: their value and gradient lanes hold
/// groups (pairs of members and a member alone among them, strides of every sign, both
/// sides), a row that starts from another's value is never in its group, and every
/// grouping has an order to emit in.
#[test]
fn dot_models_have_groups_of_every_kind() {
    use super::dots;
    let (mut lanes, mut grouped) = (0, 0);
    let (mut odd, mut even, mut strides, mut sides) = (0, 0, [0usize; 5], [0usize; 4]);
    for seed in 0..24u64 {
        let model = dot_model(seed, 6 + seed as usize % 14);
        let eq = Equation::<System>::from_model(model);
        for kind in [LaneKind::Value, LaneKind::Gradient] {
            let lane = eq.lane(kind).unwrap();
            let found = dots::find(lane);
            lanes += 1;
            grouped += usize::from(!found.is_empty());
            for group in &found.groups {
                let n = group.members.len();
                assert!((dots::MIN_GROUP..=dots::GROUP).contains(&n));
                if n % 2 == 1 {
                    odd += 1
                } else {
                    even += 1
                }
                let first = &found.dots[group.members[0]];
                strides[(first.stride + 2) as usize] += 1;
                sides[usize::from(first.term_second) * 2 + usize::from(first.weight_second)] += 1;
                // No member starts from another member's value.
                let lasts: Vec<NodeId> = group
                    .members
                    .iter()
                    .filter_map(|&m| found.dots[m].links.last().copied())
                    .collect();
                for &m in &group.members {
                    let start = found.dots[m].start;
                    let mut reads = Vec::new();
                    lane.graph.operands_into(start, &mut reads);
                    assert!(!lasts.contains(&start) && !reads.iter().any(|r| lasts.contains(r)));
                }
            }
        }
    }
    assert!(
        grouped * 2 > lanes,
        "{grouped} of {lanes} lanes hold groups"
    );
    let refused = dots::ORDERS_REFUSED.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(refused, 0, "lanes whose groups found no order");
    assert!(odd > 0 && even > 0, "odd {odd}, even {even}");
    assert!(strides.iter().all(|&k| k > 0), "strides −2…2: {strides:?}");
    assert!(sides.iter().all(|&k| k > 0), "sides: {sides:?}");
}

/// The models of `value_dot_kernels_agree_with_the_interpreter_to_the_bit` reach dot
/// loops over computed values, read forwards and backwards, in value and gradient
/// lanes; each such dot's values sit at evenly spaced scratch slots, and every grouping
/// has an order to emit in.
#[test]
fn value_dot_models_have_groups_of_every_kind() {
    use super::dots;
    let (mut forwards, mut backwards, mut lanes_with) = (0, 0, 0);
    for seed in 0..24u64 {
        let model = value_dot_model(seed, 6 + seed as usize % 18);
        let eq = Equation::<System>::from_model(model);
        for kind in [LaneKind::Value, LaneKind::Gradient] {
            let lane = eq.lane(kind).unwrap();
            let found = dots::find(lane);
            let mut valued = 0;
            for d in found.dots.iter().filter(|d| !d.values.is_empty()) {
                valued += 1;
                assert_eq!(d.values.len(), d.links.len());
                for (k, &v) in d.values.iter().enumerate() {
                    let want = d.slot as i64 + k as i64 * d.stride;
                    assert_eq!(found.slot_of(v).map(|s| s as i64), Some(want));
                    assert!(want >= 0 && (want as usize) < found.scratch);
                }
                match d.stride {
                    1 => forwards += 1,
                    -1 => backwards += 1,
                    s => panic!("a stride of {s} over the scratch"),
                }
            }
            lanes_with += usize::from(valued > 0);
        }
    }
    let refused = dots::ORDERS_REFUSED.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(refused, 0, "lanes whose groups found no order");
    assert!(
        lanes_with >= 24,
        "{lanes_with} of 48 lanes have dots over values"
    );
    assert!(
        forwards > 0 && backwards > 0,
        "{forwards} forwards, {backwards} backwards"
    );
}

/// Dots whose values are other dots' results, in a lane with nothing else to pair (the
/// starts are inputs), so its kernel takes the scalar path: each loop's results are
/// stored to their scratch slots when the loop ends. Tester 38: they were not, and the
/// outer loops read a stale scratch (the compiled value was the start alone, `x0`).
#[test]
fn dots_over_other_dots_results_without_pairs_agree() {
    const N: usize = 32;
    let mut g = Graph::new();
    let xs: Vec<NodeId> = (0..N).map(|s| g.symbol(SymbolId::from_index(s))).collect();
    let inner: Vec<NodeId> = (0..16)
        .map(|i| {
            let mut s = xs[i];
            for (j, &x) in xs.iter().enumerate() {
                let w = g.constant(1.1 + (i * N + j) as f64 * 1e-3);
                let t = g.binary(Op::Mul, x, w);
                s = g.binary(Op::Add, s, t);
            }
            s
        })
        .collect();
    let outer: Vec<NodeId> = (0..2)
        .map(|o| {
            let mut s = xs[o];
            for (k, &v) in inner.iter().enumerate() {
                let w = g.constant(0.5 + (o * 16 + k) as f64 * 1e-2);
                let t = g.binary(Op::Mul, v, w);
                s = g.binary(Op::Add, s, t);
            }
            s
        })
        .collect();
    let names = (0..N).map(|s| format!("x{s:02}")).collect();
    let model = Model::seal(&g, &outer, names);
    let eq = Equation::<System>::from_model(model.clone());
    let lane = eq.lane(LaneKind::Value).unwrap();
    let found = super::dots::find(lane);
    assert!(found
        .dots
        .iter()
        .any(|d| d.values.iter().any(|v| inner.contains(v))));
    super::lower::DOT_GROUPS.set(0);
    super::lower::PAIRED_DOT_KERNELS.set(0);
    compile_point_kernel(lane);
    assert!(super::lower::DOT_GROUPS.get() >= 2);
    assert_eq!(super::lower::PAIRED_DOT_KERNELS.get(), 0, "the scalar path");
    check_model(&model, &mut Rng(38), &[1, 3]).expect("bits");
}

/// The dot models' point kernels compile their loops among `f64x2` pairs where the rest
/// of the lane pairs (a row's starting product, the gradient's adjoints) and alone where
/// nothing outside the dots pairs, and both kinds are common; the bits of both are the
/// proptest's above.
#[test]
fn dot_models_compile_with_pairs_around_their_loops() {
    use std::sync::atomic::Ordering::Relaxed;
    let refused = super::dots::PAIRED_ORDERS_REFUSED.load(Relaxed);
    let (mut paired, mut alone) = (0, 0);
    let models = (0..24u64).flat_map(|seed| {
        [
            dot_model(seed, 6 + seed as usize % 14),
            value_dot_model(seed, 6 + seed as usize % 18),
        ]
    });
    for model in models {
        let eq = Equation::<System>::from_model(model);
        for kind in [LaneKind::Value, LaneKind::Gradient] {
            let lane = eq.lane(kind).unwrap();
            super::lower::DOT_GROUPS.set(0);
            super::lower::PAIRED_DOT_KERNELS.set(0);
            compile_point_kernel(lane);
            if super::lower::DOT_GROUPS.get() > 0 {
                if super::lower::PAIRED_DOT_KERNELS.get() > 0 {
                    paired += 1;
                } else {
                    alone += 1;
                }
            }
        }
    }
    let refused = super::dots::PAIRED_ORDERS_REFUSED.load(Relaxed) - refused;
    let prefix = super::lower::PREFIX_LINKS.get();
    eprintln!(
        "dot kernels: {paired} among pairs, {alone} alone, {refused} orders refused; links before loops {prefix:?}"
    );
    assert!(
        paired >= 8 && alone >= 4,
        "{paired} among pairs, {alone} alone"
    );
    // The links before the loops: in pairs over one slot, adjacent slots and two others,
    // and alone (the longer member's first ones, or an odd group's last member's).
    assert!(
        prefix.iter().all(|&n| n >= 4),
        "links before loops: {prefix:?}"
    );
}

/// Rows of weighted inputs (a linear layer `y = Ax + b`, 40 rows of 48 inputs) are
/// copies of one link, so they re-roll too; but one row a loop waits on its own sums,
/// and the layer's value lane ran 26.5 µs re-rolled against 6.3 µs with dot loops (the
/// interpreter 15.5 µs; tester 37). Its point kernel takes the dot loops: the lane has
/// runs under the rule users get, and its kernel emits dot groups and no run's loop.
#[test]
fn rows_of_weighted_inputs_take_dot_loops_before_runs() {
    const ROWS: usize = 40;
    const INPUTS: usize = 48;
    let mut rng = Rng(37);
    let mut g = Graph::new();
    let xs: Vec<NodeId> = (0..INPUTS)
        .map(|s| g.symbol(SymbolId::from_index(s)))
        .collect();
    let mut outs = Vec::new();
    for _ in 0..ROWS {
        let mut s = g.constant(rng.value());
        for &x in &xs {
            let w = g.constant(((rng.next() >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0);
            let t = g.binary(Op::Mul, x, w);
            s = g.binary(Op::Add, s, t);
        }
        outs.push(s);
    }
    let names = (0..INPUTS).map(|s| format!("x{s:02}")).collect();
    let model = Model::seal(&g, &outs, names);
    let eq = Equation::<System>::from_model(model.clone());
    let lane = eq.lane(LaneKind::Value).unwrap();
    let rolls = super::reroll::find(&lane.graph, super::reroll::Rule::KERNEL);
    assert!(!rolls.runs.is_empty(), "the rows re-roll");
    assert!(!super::dots::find(lane).is_empty(), "the rows are dots");
    super::lower::LOOPS.with(|c| c.set([0, 0]));
    super::lower::DOT_GROUPS.set(0);
    compile_point_kernel(lane);
    assert_eq!(
        super::lower::DOT_GROUPS.get(),
        ROWS.div_ceil(super::dots::GROUP)
    );
    assert_eq!(super::lower::LOOPS.with(std::cell::Cell::get), [0, 0]);
    check_model(&model, &mut rng, &[1, 3]).expect("bits");
}

/// A lane a kernel answers never lowers its interpreter's program: `evaluate` sized its
/// answer from the program, which lowered it (100 ms on the first call of a
/// million-node lane; tester 37). The interpreted equation lowers it on its first call.
#[test]
fn evaluate_through_a_kernel_lowers_no_program() {
    let model = dot_model(5, 6);
    let interpreted = Equation::<System>::from_model(model.clone());
    let mut eq = Equation::<System>::from_model(model);
    eq.set_options(Options::with_backend(Backend::Compile));
    assert!(
        eq.wait_for_kernel_of(LaneKind::Value),
        "{:?}",
        eq.jit_status()
    );
    let x: Vec<f64> = (0..eq.symbols().len())
        .map(|k| 0.1 * k as f64 - 2.0)
        .collect();
    let got = eq.evaluate(x.as_slice()).expect("fits");
    assert!(eq.prepared(LaneKind::Value).program_if_built().is_none());
    let want = interpreted.evaluate(x.as_slice()).expect("fits");
    assert!(interpreted
        .prepared(LaneKind::Value)
        .program_if_built()
        .is_some());
    assert!(same(&got, &want));
}

/// The host fingerprint that keys cached and saved kernels names every code generator
/// setting but the verifier's, which changes no code and differs between debug and
/// release builds: a kernel saved by one loads in the other.
#[test]
fn the_fingerprint_leaves_out_the_verifier() {
    let compiler = super::compile::compiler().expect("a host compiler");
    let f = compiler.fingerprint();
    assert!(!f.contains("enable_verifier"), "{f}");
    assert!(
        f.contains("opt_level") && f.contains("regalloc_algorithm"),
        "{f}"
    );
    assert!(f.contains("probestack_strategy"), "{f}");
}
