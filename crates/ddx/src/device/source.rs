//! Lane graph → OpenCL C: one kernel per lane, one work-item per point.
//!
//! **Layout** (the batch calls' columns, stacked): the kernel takes one input buffer
//! holding the lane's input columns (its symbols, then its seeds) one after another,
//! `stride` values apart, and one output buffer holding its output columns the same way;
//! work-item `i < len` reads `input[k·stride + i]` and writes `output[k·stride + i]`.
//!
//! **Exactness.** `#pragma OPENCL FP_CONTRACT OFF` forbids the device compiler to fuse a
//! multiply and an add; `fma()` appears only where the graph has an `fma` node; the
//! program is built with no option that relaxes IEEE arithmetic. Every node is one
//! statement, so nothing is re-associated; a first-order lane's statements are emitted
//! in the order their uses demand them rather than the graph's, and a long lane may also
//! recompute some values from the inputs instead of keeping them live ([`Remat`]): the
//! same operations on the same operands, so with the same bits. OpenCL C's own `fmax`,
//! `fmin`, `sign`, comparisons and `select` do not follow ddx's semantics
//! (the repository's [ARCHITECTURE.md, "Semantics"](https://github.com/ddx-ad/ddx/blob/main/ARCHITECTURE.md#semantics)): `fmax(+0, −0)` may answer either zero, `sign(±0)` is
//! `±0`, a vector comparison answers `−1`, and `select` tests the sign bit. So each of
//! those is written out here with scalar conditionals that answer exactly what
//! `ddx_ir::math` answers; `+ − × ÷`, `sqrt` and `fma` are correctly rounded in OpenCL's
//! double precision. Constants are written as hexadecimal floating literals (exact), and
//! non-finite ones by their bits.
//!
//! `exp` and `log` are ddx's own ([`ddx_ir::math::exp`], [`ddx_ir::math::log`], written out
//! by [`ddx_ir::emit::exp_c`] and [`ddx_ir::emit::log_c`]): the same IEEE operations with
//! the same tables, so the same bits as every CPU engine (`log`'s fused multiply-adds are
//! OpenCL's `fma`, correctly rounded in double precision). A kernel that uses either first
//! copies its table from constant to local memory (`exp`'s 2 KiB as `(tail, scale)` pairs,
//! `log`'s 4 KiB as rows of four words), a pair or row per work-item, and waits at one
//! barrier before any work-item leaves: work-items read a table at different indices,
//! which constant memory serves one address at a time on NVIDIA hardware (BENCHMARKS.md,
//! "ddx's exp on the device"). The other transcendental functions are the device's own
//! (`sin`, `log10`, `pow` away from the
//! exponents `2`, `−1`, `½`, …), within the error bounds OpenCL states for double precision;
//! `powi` is ddx's own binary powering, written out, so it is exact too. The CPU engines
//! lower no other constant exponent of `pow` ([`ddx_ir::math::pow`] calls the C library's
//! `pow` for `x ** 3`), so neither does the device: a `pow(x, 3)` answers the device's
//! `pow`, 1–2 ULP from the CPU's on PoCL, where `powi(x, 3)` agrees to the bit. Matching
//! the bits would need the C library's `pow` itself on the device.

use ddx_ir::{Lane, LaneKind, Node, NodeId, Nodes, Op};
use std::fmt::Write;

/// The kernel's name for a lane: `ddx_` and the lane's name (`ddx_gradient`).
pub(crate) fn kernel_name(lane: &Lane) -> String {
    format!("ddx_{}", lane.kind.name())
}

/// What every kernel's source starts with: the pragmas and ddx's `pow`.
const PRELUDE: &str = "\
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* pow as every ddx engine computes it: three exponents are the correctly rounded
   operation they name (ddx_ir::math::pow), others the device's pow. */
double ddx_pow(double a, double b) {
    if (b == 2.0) return a * a;
    if (b == -1.0) return 1.0 / a;
    if (b == 0.5) return a == -INFINITY ? INFINITY : sqrt(a) + 0.0;
    return pow(a, b);
}

/* powi as every ddx engine computes it (ddx_ir::math::powi): binary powering, low bit
   first, 1 / a^n for n < 0; NaN for an n that is not an integer; the device's pow for
   |n| >= 2^63. */
double ddx_powi(double a, double n) {
    if (n - trunc(n) != 0.0 || isnan(n)) return NAN;
    double m = fabs(n);
    if (m >= 0x1p63) return pow(a, n);
    ulong k = (ulong)m;
    double r = 1.0;
    double b = a;
    for (;;) {
        if (k & 1UL) r *= b;
        k >>= 1;
        if (k == 0UL) break;
        b *= b;
    }
    return n < 0.0 ? 1.0 / r : r;
}

";

/// `v` as an exact OpenCL C double expression.
pub(crate) fn literal(v: f64) -> String {
    if !v.is_finite() {
        return format!("as_double(0x{:016x}UL)", v.to_bits());
    }
    let bits = v.to_bits();
    let sign = if bits >> 63 == 1 { "-" } else { "" };
    let exponent = ((bits >> 52) & 0x7ff) as i64;
    let mantissa = bits & ((1u64 << 52) - 1);
    match (exponent, mantissa) {
        (0, 0) => format!("{sign}0x0p+0"),
        (0, m) => format!("{sign}0x0.{m:013x}p-1022"),
        (e, m) => format!("{sign}0x1.{m:013x}p{:+}", e - 1023),
    }
}

/// The OpenCL C expression of `op` applied to the values named `a`, `b`, `c`.
fn expression(op: Op, a: &str, b: &str, c: &str) -> String {
    use Op::*;
    let call = |f: &str| format!("{f}({a})");
    match op {
        // A lane with a user function is never built for the device (`device::build`).
        Call | Pack => "NAN".into(),
        // Never in a lane (`Graph::extract` removes it); its value is its argument.
        Hold => a.to_string(),
        Neg => format!("-{a}"),
        Sin => call("sin"),
        Cos => call("cos"),
        Tan => call("tan"),
        Exp => format!("ddx_exp({a}, ddx_exp_local)"),
        Log => format!("ddx_log({a}, ddx_log_local)"),
        Log10 => call("log10"),
        Sqrt => call("sqrt"),
        Cbrt => call("cbrt"),
        Abs => call("fabs"),
        // sign(±0) = 0 and sign(NaN) = NaN: OpenCL's sign answers ±0 for ±0.
        Sign => format!("({a} > 0.0) ? 1.0 : ({a} < 0.0) ? -1.0 : ({a} == 0.0) ? 0.0 : {a}"),
        Asin => call("asin"),
        Acos => call("acos"),
        Atan => call("atan"),
        Sinh => call("sinh"),
        Cosh => call("cosh"),
        Tanh => call("tanh"),
        Asinh => call("asinh"),
        Acosh => call("acosh"),
        Atanh => call("atanh"),
        Erf => call("erf"),
        Add => format!("{a} + {b}"),
        Sub => format!("{a} - {b}"),
        Mul => format!("{a} * {b}"),
        Div => format!("{a} / {b}"),
        Pow => format!("ddx_pow({a}, {b})"),
        Atan2 => format!("atan2({a}, {b})"),
        Hypot => format!("hypot({a}, {b})"),
        // A NaN operand answers the other; a tie (±0 included) answers the first.
        Max => format!("({b} > {a} || isnan({a})) ? {b} : {a}"),
        Min => format!("({b} < {a} || isnan({a})) ? {b} : {a}"),
        // Scalar comparisons answer 0 with a NaN operand; `!=` is written so it does too.
        Lt => format!("({a} < {b}) ? 1.0 : 0.0"),
        Le => format!("({a} <= {b}) ? 1.0 : 0.0"),
        Eq => format!("({a} == {b}) ? 1.0 : 0.0"),
        Ne => format!("({a} < {b} || {a} > {b}) ? 1.0 : 0.0"),
        // NaN counts as true: only a zero condition takes the second arm.
        Select => format!("({a} == 0.0) ? {c} : {b}"),
        Fma => format!("fma({a}, {b}, {c})"),
        Log1p => call("log1p"),
        Expm1 => call("expm1"),
        Log2 => call("log2"),
        Recip => format!("1.0 / {a}"),
        Powi => format!("ddx_powi({a}, {b})"),
    }
}

/// In which order a kernel's statements are emitted, and when it recomputes values
/// instead of keeping them live (rematerialisation).
///
/// A long lane (a gradient's reverse sweep) uses values made early in its forward part
/// late in its reverse part: kept live, they overflow the device's registers and spill
/// to memory, which costs far more than computing them again. With [`Remat::schedule`]
/// the statements are first put in demand order (each value made just before its first
/// use, depth first from the outputs: the device compiler keeps close to the source's
/// order); if that order keeps at most [`Remat::live_budget`] values live at once, the
/// kernel is that order, uncut. Otherwise (and without [`Remat::schedule`], when the
/// lane's graph order keeps more than [`Remat::live_budget`] values live), the kernel is cut
/// into segments of [`Remat::segment`] nodes in graph order, and each segment recomputes
/// what it uses from earlier segments from the inputs, read again — every value whose
/// whole cone (the operations it depends on) is at most [`Remat::segment`] operations,
/// each recomputed once per segment that uses it; larger values are kept live. A
/// segment's re-read of an input is made opaque to the device compiler
/// (`as_double(as_ulong(x) ^ z)`, `z` the kernel argument `zero`, always 0, times the
/// segment's number), so it cannot merge the recomputation back into the first value.
/// The recomputation is the same operations on the same bits, so the kernel's results
/// are the plain kernel's to the bit; so is the demand order, a reordering of the same
/// statements. Output columns are written as soon as their value is made. The rule is the same for every lane; a lane within the budget is emitted
/// plain, and so is one whose recomputation would more than triple its statements, and
/// one of more than [`Remat::max_nodes`] nodes, and, unless [`Remat::second_order`], a
/// second-order lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remat {
    /// Emit the kernel plain when at most this many values are live at once.
    pub live_budget: usize,
    /// Nodes per segment.
    pub segment: usize,
    /// The most operations a recomputed value's cone may hold.
    pub cone: usize,
    /// The most statements the kernel may have, as a multiple of the lane's nodes;
    /// a lane that would need more is emitted plain.
    pub growth: usize,
    /// Lanes of more nodes are emitted plain: the device compiler's time grows faster
    /// than linearly in a kernel's size (92 s for a 36 287-node Hessian lane on the
    /// H200), and a rematerialised kernel is larger.
    pub max_nodes: usize,
    /// Whether second-order lanes ([`LaneKind::Hessian`], [`LaneKind::Hvp`],
    /// [`LaneKind::Tensor`]) are recomputed too. [`Remat::RULE`] leaves them plain: on the
    /// H200 the regular solution 32's 2992-node Hessian lane took the device compiler
    /// 32.9 s rematerialised instead of 3.6 s, UNIQUAC 16's `hvp` 11.4 s, and their run
    /// times were not measured; the gain was measured on first-order lanes.
    ///
    /// [`LaneKind::Hessian`]: ddx_ir::LaneKind::Hessian
    /// [`LaneKind::Hvp`]: ddx_ir::LaneKind::Hvp
    /// [`LaneKind::Tensor`]: ddx_ir::LaneKind::Tensor
    pub second_order: bool,
    /// Whether the statements are emitted in the order their uses demand them (depth
    /// first from the last uses, within each segment, so that a value is made just
    /// before its first use) instead of the graph's order. On the H200 this alone took
    /// UNIQUAC 16's gradient kernel from 2.8 KB of spills to none (3.04 → 1.12 ns/point,
    /// 1.21 with the segments of the rule before it), regsol32's from 255 registers to
    /// 94 and regsol16's from 148 to 62 (BENCHMARKS.md, "Rematerialisation").
    pub schedule: bool,
}

impl Remat {
    /// The rule every kernel is built with ([`source_of`]).
    pub const RULE: Remat = Remat {
        live_budget: 256,
        segment: 1024,
        cone: 1024,
        growth: 3,
        max_nodes: 1 << 14,
        second_order: false,
        schedule: true,
    };
    /// Never recompute: one statement per node, in graph order.
    pub const OFF: Remat = Remat {
        live_budget: usize::MAX,
        segment: usize::MAX,
        cone: 0,
        growth: 1,
        max_nodes: 0,
        second_order: false,
        schedule: false,
    };
}

/// The OpenCL C source of `lane`'s kernel (see the module documentation for its layout):
/// `__kernel void ddx_<lane>(__global const double *input, __global double *output,
/// ulong stride, ulong len, ulong zero)`, `zero` always 0 (see [`Remat`]), built with
/// [`Remat::RULE`].
pub fn source_of(lane: &Lane) -> String {
    source_with(lane, Remat::RULE)
}

/// [`source_of`] with the rematerialisation rule `remat` (a measuring tool's choice:
/// [`Remat::OFF`] is the plain kernel). Every rule gives the same results to the bit.
pub fn source_with(lane: &Lane, remat: Remat) -> String {
    let nodes = lane.graph.nodes();
    let mut s = String::with_capacity(PRELUDE.len() + 64 * nodes.len() + 256);
    s.push_str(PRELUDE);
    let uses = |op: Op| nodes.iter().any(|n| n.op() == Some(op));
    let (uses_exp, uses_log) = (uses(Op::Exp), uses(Op::Log));
    if uses_exp {
        s.push_str(&ddx_ir::emit::exp_c(true));
        s.push('\n');
    }
    if uses_log {
        s.push_str(&ddx_ir::emit::log_c(true));
        s.push('\n');
    }
    let body = remat_body(lane, remat);
    // `write!` into a String cannot fail.
    let _ = writeln!(
        s,
        "/* lane {}: {} inputs ({} symbols, {} parameters, {} seeds), {} outputs, {} nodes{} */",
        lane.kind.name(),
        lane.inputs(),
        lane.symbols,
        lane.params,
        lane.seeds,
        lane.outputs.len(),
        nodes.len(),
        match &body {
            Some((_, true)) => format!(
                ", demand order, {} nodes a segment, recomputed",
                remat.segment
            ),
            Some((_, false)) => ", demand order".to_string(),
            None => String::new(),
        }
    );
    let _ = writeln!(
        s,
        "__kernel void {}(__global const double *restrict input, \
         __global double *restrict output, const ulong stride, const ulong len, \
         const ulong zero) {{",
        kernel_name(lane)
    );
    if uses_exp {
        s.push_str(
            "    __local ulong2 ddx_exp_local[128];\n    \
             for (uint j = get_local_id(0); j < 128; j += get_local_size(0)) \
             ddx_exp_local[j] = vload2(j, ddx_exp_table);\n",
        );
    }
    if uses_log {
        s.push_str(
            "    __local ulong4 ddx_log_local[128];\n    \
             for (uint j = get_local_id(0); j < 128; j += get_local_size(0)) \
             ddx_log_local[j] = vload4(j, ddx_log_table);\n",
        );
    }
    if uses_exp || uses_log {
        s.push_str("    barrier(CLK_LOCAL_MEM_FENCE);\n");
    }
    s.push_str("    const ulong i = get_global_id(0);\n    if (i >= len) return;\n");
    match body {
        Some((body, _)) => s.push_str(&body),
        None => {
            for (k, node) in nodes.iter().enumerate() {
                let value = statement(lane, node, |a| format!("v{}", a.index()));
                let _ = writeln!(s, "    const double v{k} = {value};");
            }
            for (j, out) in lane.outputs.iter().enumerate() {
                let _ = writeln!(s, "    output[{j}UL * stride + i] = v{};", out.index());
            }
        }
    }
    s.push_str("}\n");
    s
}

/// The OpenCL C expression of `node`, its arguments named by `arg`.
fn statement(lane: &Lane, node: &Node, mut arg: impl FnMut(NodeId) -> String) -> String {
    match *node {
        Node::Const(c) => literal(c.value()),
        Node::Symbol(sym) => format!("input[{}UL * stride + i]", sym.index()),
        Node::Seed(seed) => format!("input[{}UL * stride + i]", lane.seed_base() + seed.index()),
        Node::Apply(op, args) => {
            let mut name = |j: usize| {
                if j < op.arity() {
                    arg(args[j])
                } else {
                    String::new()
                }
            };
            let (a, b, c) = (name(0), name(1), name(2));
            expression(op, &a, &b, &c)
        }
    }
}

/// The most values live at once when `nodes` are computed in order and `outputs` written
/// at the end (constants are literals, never live), and each node's last use.
fn liveness(nodes: Nodes<'_>, outputs: &[NodeId]) -> (usize, Vec<usize>) {
    let n = nodes.len();
    let mut last = vec![usize::MAX; n];
    for (k, node) in nodes.iter().enumerate() {
        for a in node.args() {
            last[a.index()] = k;
        }
    }
    for out in outputs {
        last[out.index()] = n;
    }
    let mut ends = vec![0usize; n + 1];
    let (mut live, mut most) = (0usize, 0usize);
    for (k, node) in nodes.iter().enumerate() {
        if !matches!(node, Node::Const(_)) && last[k] != usize::MAX {
            live += 1;
            ends[last[k]] += 1;
        }
        most = most.max(live);
        live -= ends[k];
    }
    (most, last)
}

/// Which nodes a later segment may recompute: those whose cone holds at most `limit`
/// operations (inputs and constants count none). Each cone is kept only while a later
/// node can still use it.
fn recomputable(nodes: Nodes<'_>, last: &[usize], limit: usize) -> Vec<bool> {
    let mut ok = vec![false; nodes.len()];
    let mut cones: Vec<Option<Vec<u32>>> = vec![None; nodes.len()];
    let mut dies: Vec<Vec<usize>> = vec![Vec::new(); nodes.len() + 1];
    for (k, node) in nodes.iter().enumerate() {
        let cone = match node {
            Node::Apply(..) => {
                let mut cone: Option<Vec<u32>> = Some(vec![k as u32]);
                for a in node.args() {
                    cone = match (cone, &cones[a.index()]) {
                        (Some(c), Some(d)) => Some(union(&c, d)),
                        _ => None,
                    };
                }
                cone.filter(|c| c.len() <= limit)
            }
            _ => Some(Vec::new()),
        };
        ok[k] = cone.is_some();
        if last[k] != usize::MAX {
            cones[k] = cone;
            dies[last[k]].push(k);
        }
        for d in std::mem::take(&mut dies[k]) {
            cones[d] = None;
        }
    }
    ok
}

/// The union of two sorted lists.
fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        out.push(x.min(y));
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// One statement of a kernel body under a [`Remat`] rule: its lines (the definition and
/// any output stores), the statements it reads, its segment, and whether it is a
/// constant (a literal, never live).
struct Stmt {
    text: String,
    args: Vec<usize>,
    seg: usize,
    constant: bool,
}

/// The kernel body under `remat` (see [`Remat`]) and whether it recomputes, or `None`
/// where the lane is emitted plain (one statement per node in graph order).
fn remat_body(lane: &Lane, remat: Remat) -> Option<(String, bool)> {
    let (stmts, order, cut) = plan(lane, remat)?;
    let mut s = String::with_capacity(64 * stmts.len());
    let mut seg = 0;
    for t in order {
        if stmts[t].seg != seg {
            seg = stmts[t].seg;
            let _ = writeln!(
                s,
                "    /* segment {seg} */\n    const ulong z{seg} = zero * {seg}UL;"
            );
        }
        s.push_str(&stmts[t].text);
    }
    Some((s, cut))
}

/// The statements of `lane`'s kernel under `remat`, the order to emit them in, and
/// whether they are cut into segments; `None` for the plain kernel. With
/// [`Remat::schedule`] the lane is first put in demand order uncut, and cut only where
/// that order still keeps more than [`Remat::live_budget`] values live.
fn plan(lane: &Lane, remat: Remat) -> Option<(Vec<Stmt>, Vec<usize>, bool)> {
    let nodes = lane.graph.nodes();
    let n = nodes.len();
    let second = matches!(
        lane.kind,
        LaneKind::Hessian | LaneKind::Hvp | LaneKind::Tensor
    );
    if n > remat.max_nodes || (second && !remat.second_order) {
        return None;
    }
    let (most, last) = liveness(nodes, &lane.outputs);
    if remat.schedule {
        let stmts = statements(lane, usize::MAX, &[], usize::MAX)?;
        let order = demand_order(&stmts);
        if most_live(&stmts, &order) <= remat.live_budget {
            return Some((stmts, order, false));
        }
    } else if most <= remat.live_budget {
        return None;
    }
    if remat.segment == 0 {
        return None;
    }
    let ok = recomputable(nodes, &last, remat.cone);
    let limit = remat.growth.saturating_mul(n);
    let stmts = statements(lane, remat.segment, &ok, limit)?;
    let order = if remat.schedule {
        demand_order(&stmts)
    } else {
        (0..stmts.len()).collect()
    };
    Some((stmts, order, true))
}

/// The most values live at once when `stmts` are emitted in `order` (a value lives from
/// its statement to its last reader; constants never).
fn most_live(stmts: &[Stmt], order: &[usize]) -> usize {
    let mut last: Vec<Option<usize>> = vec![None; stmts.len()];
    for (p, &t) in order.iter().enumerate() {
        for &a in &stmts[t].args {
            last[a] = Some(p);
        }
    }
    let mut ends = vec![0usize; order.len() + 1];
    let (mut live, mut most) = (0usize, 0usize);
    for (p, &t) in order.iter().enumerate() {
        if let (false, Some(l)) = (stmts[t].constant, last[t]) {
            live += 1;
            ends[l] += 1;
        }
        most = most.max(live);
        live -= ends[p];
    }
    most
}

/// The statements of `lane`'s kernel cut into segments of `len` nodes in graph order,
/// each segment recomputing what it reads from earlier segments where `ok` (see
/// [`Remat`]); `None` where there would be more than `limit` statements.
fn statements(lane: &Lane, len: usize, ok: &[bool], limit: usize) -> Option<Vec<Stmt>> {
    let nodes = lane.graph.nodes();
    let n = nodes.len();
    let mut stores: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (j, out) in lane.outputs.iter().enumerate() {
        stores[out.index()].push(j);
    }
    let mut stmts: Vec<Stmt> = Vec::with_capacity(2 * n);
    // The statement defining each node's value `v`, and per segment its recomputed copy.
    let mut defined = vec![usize::MAX; n];
    let mut copy = vec![usize::MAX; n];
    // Per segment: the recomputed copies made so far (node → made).
    let mut made = vec![usize::MAX; n];
    let mut stack: Vec<(usize, bool)> = Vec::new();
    for (k, node) in nodes.iter().enumerate() {
        let seg = k / len;
        // Recompute, in dependency order, what this node uses from earlier segments.
        for a in node.args() {
            let a = a.index();
            if a / len == seg
                || !ok.get(a).copied().unwrap_or(false)
                || matches!(nodes[a], Node::Const(_))
                || made[a] == seg
            {
                continue;
            }
            stack.push((a, false));
            while let Some((u, ready)) = stack.pop() {
                if made[u] == seg {
                    continue;
                }
                let far = |v: usize| !matches!(nodes[v], Node::Const(_)) && made[v] != seg;
                if !ready {
                    stack.push((u, true));
                    for b in nodes[u].args() {
                        if far(b.index()) {
                            stack.push((b.index(), false));
                        }
                    }
                    continue;
                }
                let mut args = Vec::new();
                let value = match nodes[u] {
                    Node::Symbol(_) | Node::Seed(_) => format!(
                        "as_double(as_ulong({}) ^ z{seg})",
                        statement(lane, &nodes[u], |_| String::new())
                    ),
                    ref other => statement(lane, other, |b| {
                        let b = b.index();
                        if matches!(nodes[b], Node::Const(_)) {
                            args.push(defined[b]);
                            format!("v{b}")
                        } else {
                            args.push(copy[b]);
                            format!("r{seg}_{b}")
                        }
                    }),
                };
                copy[u] = stmts.len();
                stmts.push(Stmt {
                    text: format!("    const double r{seg}_{u} = {value};\n"),
                    args,
                    seg,
                    constant: false,
                });
                made[u] = seg;
            }
        }
        let mut args = Vec::new();
        let value = statement(lane, node, |a| {
            let a = a.index();
            if made[a] == seg && a / len != seg {
                args.push(copy[a]);
                format!("r{seg}_{a}")
            } else {
                args.push(defined[a]);
                format!("v{a}")
            }
        });
        let mut text = format!("    const double v{k} = {value};\n");
        for j in &stores[k] {
            let _ = writeln!(text, "    output[{j}UL * stride + i] = v{k};");
        }
        defined[k] = stmts.len();
        stmts.push(Stmt {
            text,
            args,
            seg,
            constant: matches!(node, Node::Const(_)),
        });
        if stmts.len() > limit {
            return None;
        }
    }
    Some(stmts)
}

/// The statements of each segment (segments in order) in the order their uses demand
/// them: depth first from each statement that no later statement of its segment reads
/// (taken in their order), each argument emitted just before its first reader, the
/// argument that needs the most statements of its own first (Sethi–Ullman's rule on
/// the segment's graph). A value then lives from just before its first use instead of
/// from its place in the graph's order; the operations and operands are the same.
fn demand_order(stmts: &[Stmt]) -> Vec<usize> {
    let n = stmts.len();
    let mut readers = vec![0usize; n];
    for t in stmts {
        for &a in &t.args {
            if stmts[a].seg == t.seg {
                readers[a] += 1;
            }
        }
    }
    // How many statements of its segment each statement needs, itself included (a
    // tree count: shared arguments count once per reader; only an ordering key).
    let mut need = vec![1usize; n];
    for (k, t) in stmts.iter().enumerate() {
        for &a in &t.args {
            if stmts[a].seg == t.seg {
                need[k] = need[k].saturating_add(need[a]);
            }
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    let mut stack: Vec<(usize, bool)> = Vec::new();
    let mut start = 0;
    while start < n {
        let seg = stmts[start].seg;
        let end = start + stmts[start..].iter().take_while(|t| t.seg == seg).count();
        for root in (start..end).filter(|&k| readers[k] == 0) {
            stack.push((root, false));
            while let Some((u, ready)) = stack.pop() {
                if done[u] {
                    continue;
                }
                if ready {
                    done[u] = true;
                    order.push(u);
                    continue;
                }
                stack.push((u, true));
                let mut args: Vec<usize> = stmts[u]
                    .args
                    .iter()
                    .copied()
                    .filter(|&a| stmts[a].seg == seg && !done[a])
                    .collect();
                // Pushed smallest first, so the largest is emitted first.
                args.sort_by_key(|&a| need[a]);
                stack.extend(args.into_iter().map(|a| (a, false)));
            }
        }
        start = end;
    }
    order
}

#[cfg(test)]
pub(super) mod tests {
    use super::{demand_order, literal, most_live, source_of, statements};
    use ddx_ir::{LaneKind, Model};

    /// A regular-solution-like model over `n` symbols (`Σ xᵢ ln xᵢ + Σ aᵢⱼ xᵢ xⱼ`) and a
    /// UNIQUAC-like one (`Σ xᵢ ln(Σⱼ tᵢⱼ xⱼ / Σⱼ xⱼ)`): the model families' shapes, small
    /// (here, beside the emitter, so that builds without the `opencl` feature have it too;
    /// the device tests run them).
    pub(crate) fn family_models(n: usize) -> [Model; 2] {
        let names: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
        let coef = |i: usize, j: usize| 0.3 + ((i * 7 + j * 3) % 11) as f64 / 8.0;
        let regsol = ddx_ir::build(|| {
            let x: Vec<_> = names.iter().map(|s| ddx_ir::var(s)).collect();
            let mut g = x[0] * x[0].ln();
            for xi in &x[1..] {
                g += *xi * xi.ln();
            }
            for i in 0..n {
                for j in i + 1..n {
                    g += coef(i, j) * x[i] * x[j];
                }
            }
            vec![g]
        })
        .expect("builds");
        let uniquac = ddx_ir::build(|| {
            let x: Vec<_> = names.iter().map(|s| ddx_ir::var(s)).collect();
            let mut total = x[0];
            for xj in &x[1..] {
                total += *xj;
            }
            let mut g = None;
            for i in 0..n {
                let mut s = coef(i, 0) * x[0];
                for (j, xj) in x.iter().enumerate().skip(1) {
                    s += coef(i, j) * *xj;
                }
                let term = x[i] * (s / total).ln();
                g = Some(g.map_or(term, |g| g + term));
            }
            vec![g.expect("n > 0")]
        })
        .expect("builds");
        [regsol, uniquac]
    }

    /// The UNIQUAC-like model of [`family_models`], its gradient lane.
    fn uniquac_like(n: usize) -> ddx_ir::Lane {
        let [_, uniquac] = family_models(n);
        ddx_ir::lane::build(&uniquac, LaneKind::Gradient)
    }

    #[test]
    fn demand_order_reads_nothing_before_it_is_made_and_keeps_fewer_values_live() {
        let lane = uniquac_like(12);
        let stmts = statements(&lane, usize::MAX, &[], usize::MAX).expect("statements");
        let order = demand_order(&stmts);
        // A permutation in which every statement comes after those it reads.
        let mut at = vec![usize::MAX; stmts.len()];
        for (p, &t) in order.iter().enumerate() {
            assert_eq!(at[t], usize::MAX, "statement {t} twice");
            at[t] = p;
        }
        assert!(at.iter().all(|&p| p != usize::MAX), "every statement");
        for (t, st) in stmts.iter().enumerate() {
            for &a in &st.args {
                assert!(at[a] < at[t], "{a} read by {t} before it is made");
            }
        }
        let graph: Vec<usize> = (0..stmts.len()).collect();
        let (demand, plain) = (most_live(&stmts, &order), most_live(&stmts, &graph));
        assert!(
            2 * demand < plain,
            "{demand} live in demand order, {plain} in graph order"
        );
        // The rule emits a first-order lane in demand order.
        assert!(source_of(&lane).contains(", demand order"));
    }

    /// A kernel that uses `exp` or `log` copies their tables to local memory and waits for
    /// the whole group, once, before any work-item may leave (a work-item that returned
    /// before a barrier would leave the others waiting); one with neither has no table and
    /// no barrier; and neither function is the device's own.
    #[test]
    fn table_kernels_copy_their_tables_before_any_work_item_leaves() {
        let build = |f: fn(ddx_ir::Expr) -> ddx_ir::Expr| {
            ddx_ir::build(|| {
                let x = ddx_ir::var("x");
                vec![f(x)]
            })
            .expect("builds")
        };
        let exp = build(|x| (x * x).exp() + x.exp());
        let log = build(|x| x * x.ln() + (x + 1.0).ln());
        let both = build(|x| (x * x).exp() * x.ln());
        let neither = build(|x| x * x * x + x.sqrt());
        let tables = [
            "__local ulong2 ddx_exp_local[128];",
            "__local ulong4 ddx_log_local[128];",
        ];
        for kind in [LaneKind::Value, LaneKind::Gradient, LaneKind::Hessian] {
            for (model, wants) in [
                (&exp, [true, false]),
                (&log, [false, true]),
                (&both, [true, true]),
            ] {
                let src = source_of(&ddx_ir::lane::build(model, kind));
                let barrier = src
                    .find("barrier(CLK_LOCAL_MEM_FENCE);")
                    .expect("a barrier");
                let leave = src.find("if (i >= len) return;").expect("the bounds check");
                assert!(barrier < leave, "{kind:?}:\n{src}");
                assert_eq!(src.matches("barrier(").count(), 1, "{kind:?}");
                for (table, want) in tables.iter().zip(wants) {
                    match src.find(table) {
                        Some(copy) => assert!(want && copy < barrier, "{kind:?}:\n{src}"),
                        None => assert!(!want, "{kind:?}: no {table}\n{src}"),
                    }
                }
                assert!(!src.contains(" exp(") && !src.contains(" log("), "{kind:?}");
            }
            let plain = source_of(&ddx_ir::lane::build(&neither, kind));
            assert!(
                !plain.contains("ddx_exp")
                    && !plain.contains("ddx_log")
                    && !plain.contains("barrier("),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn literals_are_exact_hexadecimal() {
        assert_eq!(literal(1.0), "0x1.0000000000000p+0");
        assert_eq!(literal(-2.5), "-0x1.4000000000000p+1");
        assert_eq!(literal(0.0), "0x0p+0");
        assert_eq!(literal(-0.0), "-0x0p+0");
        assert_eq!(literal(5e-324), "0x0.0000000000001p-1022");
        assert_eq!(literal(f64::MAX), "0x1.fffffffffffffp+1023");
        assert_eq!(literal(f64::INFINITY), "as_double(0x7ff0000000000000UL)");
        assert_eq!(
            literal(f64::NEG_INFINITY),
            "as_double(0xfff0000000000000UL)"
        );
        // Parsed back by Rust's own reading of the same digits.
        for v in [0.1, -1e300, 1e-310, f64::MIN_POSITIVE, 123_456.789] {
            let l = literal(v);
            let (neg, rest) = l.strip_prefix('-').map_or((false, &l[..]), |r| (true, r));
            let rest = rest.strip_prefix("0x").expect("hex");
            let (mant, exp) = rest.split_once('p').expect("exponent");
            let (int, frac) = mant.split_once('.').unwrap_or((mant, "0"));
            let frac_bits = u64::from_str_radix(frac, 16).expect("hex digits") as f64
                / 16f64.powi(frac.len() as i32);
            let exp: i32 = exp.parse().expect("exponent");
            let m = u64::from_str_radix(int, 16).expect("digit") as f64 + frac_bits;
            let back = m * 2f64.powi(exp.max(-1022)) * 2f64.powi((exp + 1022).min(0));
            assert_eq!(if neg { -back } else { back }.to_bits(), v.to_bits(), "{l}");
        }
    }
}
