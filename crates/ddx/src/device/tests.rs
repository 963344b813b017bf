//! Every device kernel against the interpreter, on whatever OpenCL device this machine has
//! (PoCL's CPU device in CI; the NVIDIA driver on the H200). Skipped, saying so, where no
//! device with double precision answers.
//!
//! Two checks, each independent of how errors propagate through a graph:
//! - **Node by node.** A kernel of the lane with *every node* an output runs on the
//!   device; each operation's device value is then compared with `ddx_ir::math::eval` of
//!   the same operation on the device's own argument values: bit for bit for the exact
//!   operations (`+ − × ÷`, `fma`, `sqrt`, comparisons, `abs`, `sign`, `max`, `min`,
//!   `select`, the inline `pow` exponents, `exp`, `log`), within [`ulp_bound`] for the other
//!   transcendentals.
//! - **End to end.** Batch calls of every lane kind through an equation under
//!   `Backend::Device` equal the interpreter's to the bit on lanes with no transcendental
//!   node.
//!
//! "Bit for bit" means every non-NaN result, signed zeros included; a NaN must be a NaN.

use super::faults::{BAD_LAUNCH, BAD_SOURCE, SERIAL};
use super::runtime::{self, HostColumns, LaneKernel};
use super::source::source_of;
use super::source::tests::family_models;
use crate::equation::{Equation, System};
use crate::options::{Backend, Options};
use ddx_ir::math;
use ddx_ir::{Errc, Graph, Lane, LaneKind, Model, Node, NodeId, Op, SymbolId};
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};

/// The lock every device test holds, and the device; `None` (after saying why) where no
/// device answers.
fn device() -> Option<(MutexGuard<'static, ()>, Arc<runtime::Gpu>)> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    match runtime::gpu("") {
        Ok(g) => Some((guard, g)),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

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

/// SplitMix64.
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

/// The operations the device answers exactly.
const EXACT: [Op; 20] = [
    Op::Exp,
    Op::Log,
    Op::Neg,
    Op::Sqrt,
    Op::Abs,
    Op::Sign,
    Op::Add,
    Op::Sub,
    Op::Mul,
    Op::Div,
    Op::Max,
    Op::Min,
    Op::Lt,
    Op::Le,
    Op::Eq,
    Op::Ne,
    Op::Select,
    Op::Fma,
    Op::Recip,
    Op::Powi,
];

/// A model of about `nodes` operations over `symbols` symbols and `outputs` outputs,
/// drawn from `ops`; half its powers have an exponent the engines answer inline.
fn random_model(seed: u64, nodes: usize, symbols: usize, outputs: usize, ops: &[Op]) -> Model {
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
        let op = ops[rng.below(ops.len())];
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
            args[1] = g.constant([2.0, -1.0, 0.5, 3.0, -2.0][rng.below(5)]);
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

/// The ULP distance of two doubles: 0 for equal bits, two NaNs, or `+0` against `−0`
/// (never asked of the exact operations, which are compared by bits); `u64::MAX` when
/// one is NaN and the other is not.
fn ulps(a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    let key = |x: f64| {
        let i = x.to_bits() as i64;
        if i < 0 {
            i64::MIN - i
        } else {
            i
        }
    };
    key(a).abs_diff(key(b))
}

/// OpenCL 1.2's stated bound for a double-precision built-in (section 7.4, table 7.2),
/// in ULP, for the operations ddx hands to the device's math library.
fn ulp_bound(op: Op) -> u64 {
    use Op::*;
    match op {
        Log1p => 2,
        Log10 | Log2 | Expm1 => 3,
        Sin | Cos | Sinh | Cosh | Asinh | Acosh | Hypot | Asin | Acos => 4,
        Tan | Atan | Tanh => 5,
        Atanh | Atan2 => 6,
        Cbrt => 2,
        Pow | Erf => 16,
        _ => 0,
    }
}

/// Whether `a` (the device) and `b` (the interpreter) agree for `op`: the same bits
/// (any NaN for a NaN) for an exact operation, within the bound for the others.
fn agree(op: Op, args: &[f64], a: f64, b: f64) -> bool {
    if a.is_nan() && b.is_nan() {
        return true;
    }
    if op == Op::Acosh && args[0] > f64::MAX / 2.0 && b.is_infinite() && a.is_finite() {
        // A defect of the CPU side, not the device: Rust's `f64::acosh` (which
        // `ddx_ir::math::acosh` calls) forms `2x` and overflows to `inf` above `f64::MAX / 2`,
        // where the device answers the finite `ln(2x)`.
        return true;
    }
    let inline_pow = op == Op::Pow && matches!(args[1], 2.0 | -1.0 | 0.5);
    if op == Op::Powi && args[1].abs() >= 2f64.powi(63) {
        return ulps(a, b) <= ulp_bound(Op::Pow); // the device's pow
    }
    if EXACT.contains(&op) || inline_pow {
        return a.to_bits() == b.to_bits();
    }
    ulps(a, b) <= ulp_bound(op)
}

/// Input columns: `len` points of awkward and ordinary values per input.
fn columns(rng: &mut Rng, inputs: usize, len: usize) -> Vec<Vec<f64>> {
    (0..inputs)
        .map(|_| (0..len).map(|_| rng.value()).collect())
        .collect()
}

/// Runs `lane` on the device over `xs` (`len` points), answering its output columns.
fn run_on_device(
    gpu: &Arc<runtime::Gpu>,
    lane: &Lane,
    xs: &[Vec<f64>],
    len: usize,
) -> Vec<Vec<f64>> {
    run_kernel(gpu, lane, &source_of(lane), xs, len)
}

/// Builds `source` (a kernel of `lane`) and runs it on the device over `xs` (`len`
/// points), answering its output columns (filled first with a signalling NaN, so a
/// column the kernel never writes shows).
fn run_kernel(
    gpu: &Arc<runtime::Gpu>,
    lane: &Lane,
    source: &str,
    xs: &[Vec<f64>],
    len: usize,
) -> Vec<Vec<f64>> {
    let kernel = LaneKernel::build(gpu, lane, source).expect("the device builds the kernel");
    let mut out = vec![vec![f64::from_bits(0x7ff4_dead_beef_0001); len]; lane.outputs.len()];
    let inputs: Vec<*const f64> = xs.iter().map(|c| c.as_ptr()).collect();
    let outputs: Vec<*mut f64> = out.iter_mut().map(|c| c.as_mut_ptr()).collect();
    let host = HostColumns {
        len,
        inputs: &inputs,
        outputs: &outputs,
    };
    kernel.run_host(&host).expect("the kernel runs");
    out
}

/// Checks every node of `lane` on the device against the interpreter's operation on the
/// device's own arguments; answers the largest ULP difference seen per operation.
fn check_nodes(gpu: &Arc<runtime::Gpu>, lane: &Lane, seed: u64, len: usize, worst: &mut [u64]) {
    let all = Lane {
        outputs: (0..lane.graph.len()).map(NodeId::from_index).collect(),
        ..lane.clone()
    };
    let mut rng = Rng(seed);
    let xs = columns(&mut rng, lane.symbols + lane.seeds, len);
    let values = run_on_device(gpu, &all, &xs, len);
    for (k, node) in lane.graph.nodes().iter().enumerate() {
        for p in 0..len {
            let got = values[k][p];
            let want = match *node {
                Node::Const(c) => c.value(),
                Node::Symbol(s) => xs[s.index()][p],
                Node::Seed(s) => xs[lane.symbols + s.index()][p],
                Node::Apply(op, args) => {
                    let a: Vec<f64> = args[..op.arity()]
                        .iter()
                        .map(|a| values[a.index()][p])
                        .collect();
                    let want = math::eval(op, &a);
                    assert!(
                        agree(op, &a, got, want),
                        "{} lane, node {k} = {op}{a:?}: device {got:e} ({:#x}), interpreter \
                         {want:e} ({:#x})",
                        lane.kind.name(),
                        got.to_bits(),
                        want.to_bits()
                    );
                    let d = ulps(got, want);
                    if d <= ulp_bound(op) {
                        // (The one accepted exception, acosh past f64::MAX / 2, is not
                        // a difference of the device's.)
                        worst[op as usize] = worst[op as usize].max(d);
                    }
                    continue;
                }
            };
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{} lane, leaf node {k}: device {got:e}, wanted {want:e}",
                lane.kind.name()
            );
        }
    }
}

#[test]
fn every_node_of_random_graphs_agrees_with_the_interpreter() {
    let Some((_serial, gpu)) = device() else {
        return;
    };
    let mut worst = vec![0u64; Op::ALL.len()];
    for seed in 0..8u64 {
        let model = random_model(seed, 40, 3, 2, &Op::ALL);
        for kind in LaneKind::ALL {
            let lane = ddx_ir::lane::build(&model, kind);
            check_nodes(&gpu, &lane, seed ^ 0x5eed, 37, &mut worst);
            let contracted = ddx_ir::contract::contract(&lane);
            check_nodes(&gpu, &contracted, seed ^ 0xc0de, 37, &mut worst);
        }
    }
    for op in Op::ALL {
        if ulp_bound(op) > 0 {
            eprintln!("{op}: largest difference {} ULP", worst[op as usize]);
        }
    }
}

/// Bits of a column, NaNs all alike.
fn bits(c: &[f64]) -> Vec<u64> {
    c.iter()
        .map(|v| if v.is_nan() { u64::MAX } else { v.to_bits() })
        .collect()
}

/// Whether `lane` holds a node the device's math library answers.
fn transcendental(lane: &Lane) -> bool {
    lane.graph.nodes().iter().any(|n| match *n {
        Node::Apply(Op::Pow, [_, b, _]) => {
            !matches!(lane.graph.constant_of(b), Some(2.0 | -1.0 | 0.5))
        }
        Node::Apply(Op::Powi, [_, b, _]) => {
            !matches!(lane.graph.constant_of(b), Some(n) if n.abs() < 2f64.powi(63))
        }
        Node::Apply(op, _) => !EXACT.contains(&op),
        _ => false,
    })
}

/// Runs lane `kind` of `eq` over `xs` as a batch call, answering its output columns.
fn lane_batch(eq: &Equation<System>, kind: LaneKind, xs: &[Vec<f64>], len: usize) -> Vec<Vec<f64>> {
    let outputs = eq.lane(kind).unwrap().outputs.len();
    let mut out = vec![vec![0.0; len]; outputs];
    let ins: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let mut outs: Vec<&mut [f64]> = out.iter_mut().map(Vec::as_mut_slice).collect();
    eq.lane_batch(kind, &ins, &mut outs).expect("columns fit");
    out
}

#[test]
fn batch_calls_of_exact_graphs_equal_the_interpreter_bit_for_bit() {
    let Some((_serial, _gpu)) = device() else {
        return;
    };
    let mut exact_ops: Vec<Op> = EXACT.to_vec();
    exact_ops.push(Op::Pow);
    for seed in 0..6u64 {
        let model = random_model(seed, 60, 3, 2, &exact_ops);
        let oracle = Equation::<System>::from(model.clone());
        let mut eq = Equation::<System>::from(model);
        eq.set_options(Options::with_backend(Backend::Device));
        for kind in LaneKind::ALL {
            assert!(
                eq.wait_for_kernel_of(kind),
                "{kind:?}: {:?}",
                eq.device_status()
            );
            let lane = eq.lane(kind).unwrap().clone();
            let inputs = lane.symbols + lane.seeds;
            for len in [1, 7, 64, 129, 1000] {
                let mut rng = Rng(seed * 1000 + len as u64);
                let xs = columns(&mut rng, inputs, len);
                let got = lane_batch(&eq, kind, &xs, len);
                let want = lane_batch(&oracle, kind, &xs, len);
                if transcendental(&lane) {
                    continue; // checked node by node above
                }
                for (j, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(
                        bits(g),
                        bits(w),
                        "seed {seed}, {kind:?}, output {j}, {len} points"
                    );
                }
            }
        }
        assert!(matches!(eq.device_status(), Some(Ok(_))));
    }
}

/// Arguments where a table-driven `log` or `exp` goes wrong first: every 2⁻⁴⁴ step of the
/// mantissa (each `log` row's two edges and its middle) ± 2 ulp in eight binades from the
/// subnormals to the largest, `1 ± k` ulp, a dense sample of `log`'s hardest row (78, just
/// below 1), random positive bit patterns, `exp`'s range and its edges, and [`AWKWARD`].
fn hard_log_and_exp_arguments() -> Vec<f64> {
    let mut xs = AWKWARD.to_vec();
    for exponent in [0u64, 1, 500, 1022, 1023, 1024, 1500, 2046] {
        for j in 0..256u64 {
            let bits = (exponent << 52) | (j << 44);
            for d in [-2i64, -1, 0, 1, 2] {
                xs.push(f64::from_bits(bits.wrapping_add_signed(d)));
            }
        }
    }
    for k in 0..64u64 {
        xs.push(f64::from_bits(1f64.to_bits() + k));
        xs.push(f64::from_bits(1f64.to_bits() - k));
    }
    let mut rng = Rng(78);
    for _ in 0..4000 {
        let u = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
        xs.push(0.9976 + u * (1.0 - 2f64.powi(-9) - 0.9976));
        xs.push(f64::from_bits(rng.next() >> 1));
        xs.push(u * 1460.0 - 750.0);
    }
    for edge in [
        -745.2,
        -708.4,
        709.7,
        709.79,
        710.0,
        2f64.powi(-54),
        -(2f64.powi(-54)),
    ] {
        xs.extend([
            edge,
            f64::from_bits(edge.to_bits() + 1),
            f64::from_bits(edge.to_bits() - 1),
        ]);
    }
    xs
}

/// The device's `log` and `exp` are ddx's own: the bits of `ddx_ir::math::log` and
/// `ddx_ir::math::exp` (every CPU engine's) at every hard argument, in one kernel that
/// copies both tables.
#[test]
fn log_and_exp_answer_the_cpu_engines_bits_at_hard_arguments() {
    let Some((_serial, _gpu)) = device() else {
        return;
    };
    let model = ddx_ir::build(|| {
        let x = ddx_ir::var("x");
        vec![x.ln(), x.exp()]
    })
    .expect("builds");
    let mut eq = Equation::<System>::from(model);
    eq.set_options(Options::with_backend(Backend::Device));
    assert!(
        eq.wait_for_kernel_of(LaneKind::Value),
        "{:?}",
        eq.device_status()
    );
    let xs = hard_log_and_exp_arguments();
    let got = lane_batch(&eq, LaneKind::Value, std::slice::from_ref(&xs), xs.len());
    let functions: [extern "C" fn(f64) -> f64; 2] = [math::log, math::exp];
    for (j, f) in functions.iter().enumerate() {
        let want: Vec<f64> = xs.iter().map(|&x| f(x)).collect();
        for ((x, g), w) in xs.iter().zip(bits(&got[j])).zip(bits(&want)) {
            assert_eq!(g, w, "output {j} at {x:e} ({:#018x})", x.to_bits());
        }
    }
    assert!(matches!(eq.device_status(), Some(Ok(_))));
}

#[test]
fn a_kernel_the_compiler_refuses_leaves_the_cpu_answering() {
    let Some((_serial, _gpu)) = device() else {
        return;
    };
    let model = random_model(7, 30, 2, 1, &Op::ALL);
    let oracle = Equation::<System>::from(model.clone());
    let mut eq = Equation::<System>::from(model);
    BAD_SOURCE.store(true, Ordering::SeqCst);
    eq.set_options(Options::with_backend(Backend::Device));
    let built = eq.wait_for_kernel_of(LaneKind::Jacobian);
    BAD_SOURCE.store(false, Ordering::SeqCst);
    assert!(!built);
    assert!(!eq.uses_kernel_of(LaneKind::Jacobian));
    let e = eq
        .device_status()
        .expect("device backend")
        .expect_err("refused");
    assert_eq!(e.code(), Errc::DeviceCompile);
    assert!(
        e.to_string().contains("refused on purpose"),
        "the driver's build log is in the status: {e}"
    );
    let xs = columns(&mut Rng(3), 2, 33);
    assert_eq!(
        lane_batch(&eq, LaneKind::Jacobian, &xs, 33)
            .iter()
            .map(|c| bits(c))
            .collect::<Vec<_>>(),
        lane_batch(&oracle, LaneKind::Jacobian, &xs, 33)
            .iter()
            .map(|c| bits(c))
            .collect::<Vec<_>>()
    );
    // Another lane built afterwards is fine: only the refused one answers from the CPU.
    assert!(eq.wait_for_kernel_of(LaneKind::Value));
}

#[test]
fn a_launch_that_fails_retires_the_kernel_and_the_cpu_answers() {
    let Some((_serial, _gpu)) = device() else {
        return;
    };
    let model = random_model(11, 30, 2, 1, &Op::ALL);
    let oracle = Equation::<System>::from(model.clone());
    let mut eq = Equation::<System>::from(model);
    eq.set_options(Options::with_backend(Backend::Device));
    assert!(eq.wait_for_kernel_of(LaneKind::Gradient));
    assert!(eq.uses_kernel_of(LaneKind::Gradient));
    let xs = columns(&mut Rng(5), 2, 50);
    BAD_LAUNCH.store(true, Ordering::SeqCst);
    let got = lane_batch(&eq, LaneKind::Gradient, &xs, 50);
    BAD_LAUNCH.store(false, Ordering::SeqCst);
    let want = lane_batch(&oracle, LaneKind::Gradient, &xs, 50);
    assert_eq!(
        got.iter().map(|c| bits(c)).collect::<Vec<_>>(),
        want.iter().map(|c| bits(c)).collect::<Vec<_>>()
    );
    let e = eq
        .device_status()
        .expect("device backend")
        .expect_err("failed");
    assert_eq!(e.code(), Errc::DeviceLaunch);
    assert!(e.to_string().contains("clEnqueueNDRangeKernel"), "{e}");
    assert!(!eq.uses_kernel_of(LaneKind::Gradient), "retired");
    let again = lane_batch(&eq, LaneKind::Gradient, &xs, 50);
    assert_eq!(
        again.iter().map(|c| bits(c)).collect::<Vec<_>>(),
        want.iter().map(|c| bits(c)).collect::<Vec<_>>()
    );
}

/// Runs `source` (a kernel of `lane`) on the device over `xs`, answering its output
/// columns' bits (NaNs all alike).
fn run_source(
    gpu: &Arc<runtime::Gpu>,
    lane: &Lane,
    source: &str,
    xs: &[Vec<f64>],
    len: usize,
) -> Vec<Vec<u64>> {
    let out = run_kernel(gpu, lane, source, xs, len);
    // Every non-NaN result's bits, signed zeros included (a NaN's payload and sign are
    // no engine's promise: the device compiler may commute an operation's operands).
    out.iter().map(|c| bits(c)).collect()
}

#[test]
fn recomputing_kernels_answer_the_plain_kernels_bits() {
    use super::source::{source_with, Remat};
    let Some((_serial, gpu)) = device() else {
        return;
    };
    // The rule lowered so that lanes small enough for CI are cut into segments: every
    // lane past a budget of 8 live values, short segments, small and large cones.
    let lowered = [
        Remat {
            live_budget: 8,
            segment: 12,
            cone: 24,
            growth: 20,
            max_nodes: usize::MAX,
            second_order: true,
            schedule: false,
        },
        Remat {
            live_budget: 0,
            segment: 3,
            cone: 1000,
            growth: 100,
            max_nodes: usize::MAX,
            second_order: true,
            schedule: false,
        },
    ];
    // Each in graph order and in demand order (`Remat::schedule`).
    let rules: Vec<Remat> = lowered
        .iter()
        .flat_map(|&r| {
            [
                r,
                Remat {
                    schedule: true,
                    ..r
                },
            ]
        })
        .collect();
    let mut models: Vec<Model> = (0..3u64)
        .map(|seed| random_model(seed, 50, 3, 2, &Op::ALL))
        .collect();
    models.extend(family_models(4));
    let mut recomputed = 0;
    for (m, model) in models.iter().enumerate() {
        for kind in LaneKind::ALL {
            let lane = ddx_ir::lane::build(model, kind);
            let len = 67;
            let xs: Vec<Vec<f64>> = if m < 3 {
                columns(&mut Rng(m as u64 ^ 0xabc), lane.symbols + lane.seeds, len)
            } else {
                // The families' own domain: positive fractions.
                (0..lane.symbols + lane.seeds)
                    .map(|k| {
                        (0..len)
                            .map(|p| 0.01 + ((k * 31 + p * 17) % 97) as f64 / 500.0)
                            .collect()
                    })
                    .collect()
            };
            let plain = source_with(&lane, Remat::OFF);
            assert!(!plain.contains("segment 1"));
            let want = run_source(&gpu, &lane, &plain, &xs, len);
            for &rule in &rules {
                let source = source_with(&lane, rule);
                if source.contains("/* segment 1 */") {
                    recomputed += 1;
                    assert!(source.contains("^ z1)"), "an opaque re-read");
                }
                assert_eq!(
                    run_source(&gpu, &lane, &source, &xs, len),
                    want,
                    "model {m}, {kind:?}, {rule:?}"
                );
            }
        }
    }
    // The lowered rules cut most lanes: the comparison is not of plain with plain.
    assert!(
        recomputed > models.len() * LaneKind::ALL.len(),
        "{recomputed}"
    );
}

#[test]
fn only_nvidia_first_order_kernels_are_built_with_a_register_cap() {
    use super::runtime::build_options;
    assert_eq!(
        build_options("NVIDIA CUDA", LaneKind::Gradient),
        "-cl-nv-maxrregcount=168"
    );
    assert_eq!(
        build_options("NVIDIA CUDA", LaneKind::Jacobian),
        "-cl-nv-maxrregcount=168"
    );
    for kind in [LaneKind::Hessian, LaneKind::Hvp, LaneKind::Tensor] {
        assert_eq!(build_options("NVIDIA CUDA", kind), "");
    }
    assert_eq!(
        build_options("Portable Computing Language", LaneKind::Gradient),
        ""
    );
}
