//! Lowering: one lane graph to one Cranelift function.
//!
//! **Input**: a lane (a graph extracted to its outputs, topologically ordered) and the
//! [`Shape`] of kernel wanted. **Output**: a Cranelift function with the kernel signature of
//! that shape (see [`Shape`]) that computes every output of the lane with exactly the
//! operations of `ddx_ir::math`, in the graph's order, one node at a time:
//!
//! - `+ - * /`, `neg`, `abs`, `sqrt` and (where the CPU has one) `fma` are single IEEE
//!   instructions, which round as Rust's operators do; nothing is contracted or
//!   re-associated, because Cranelift has no rule that fuses or reorders floating-point
//!   arithmetic (its only float rewrites are `--x → x` and moving a pair of negations off
//!   the factors of a product, both exact for every non-NaN input);
//! - `sign`, `max`, `min`, comparisons and `select` are built from ordered compares and
//!   selects so that NaN operands follow ddx's rules, not the CPU's `minsd`/`maxsd`;
//! - `pow` with the constant exponent `2`, `-1` or `0.5` is the correctly rounded operation
//!   `math::pow` defines for it (`powi` with `2` or `-1` likewise, and `recip` is a
//!   division); `exp` is `math::exp`'s operations inline ([`Emit::exp`], its table read
//!   through the `MathTable`), in `f64x2` lanes too; every other transcendental (and `fma`
//!   on a CPU without the instruction) is an indirect call through the `MathTable`
//!   pointer the kernel receives.
//!
//! The function references no symbol and no data outside itself (constants are immediates
//! or sit in its own constant pool), so its machine code needs no relocation; the compiler
//! checks that and refuses the code otherwise.
//!
//! A [`Shape::Point`] kernel of a lane that is not split into segments, has no dot loops
//! (below), and that [`reroll::Rule::KERNEL`] re-rolls (long lanes nearly all made of
//! copies), at the quick tier or, at the optimised tier, past the length where
//! straight-line code gets the single-pass allocator or when its copies are mostly one
//! recurrence ([`keeps_loops`]), computes each run of repeated structure that
//! [`reroll::find`] finds (many copies of one subgraph, as a model looping over data
//! leaves them) as one loop over the copies instead of straight-line copies
//! ([`Emit::rolled`]): each copy does the same
//! operations on the same operands as its straight-line nodes would, so the answers are the
//! same bits, and the code no longer grows with the number of copies. A loop reads a stream
//! of per-copy constants in place from the kernel's constant table (built here, carried at
//! the end of the kernel's code, passed to the kernel as its fourth argument), and writes
//! the outputs its copies are itself where their slots are evenly spaced. Column kernels
//! and segments stay straight-line. Where it pays ([`Pairing::new`]), a loop takes two
//! copies an iteration ([`Emit::copy_pair`]): the template's operations that depend on
//! nothing the copy before carries in (per observation: the model, its residual and
//! derivative terms, every `exp`) run as `f64x2` operations, copy `c` in lane 0 and `c + 1`
//! in lane 1, and the carried ones (the running sums) as scalars, copy `c`'s before copy
//! `c + 1`'s, so that every sum still takes its terms in copy order; an odd copy left over
//! runs after the loop.
//!
//! A [`Shape::Point`] kernel of a lane that is nearly all long sums of weighted inputs (a
//! quadratic form, a linear layer: [`dots`]) computes each group of such sums as one loop
//! over a table of weights ([`Emit::dot_group`]), the sums in `f64x2` pairs, each sum's
//! links in order; the rest of the lane is scalar straight-line code, emitted in
//! [`dots::Dots::order`]. Such a lane is one function however long, provided its
//! straight-line part is at most a segment ([`Plan::new`]).
//!
//! A [`Shape::Point`] kernel of any other lane that is not split into segments computes
//! the pairs [`slp::find`] finds (two operations of one kind that do not depend on each
//! other, as a model's components and their adjoints leave them) as one `f64x2` operation
//! each ([`Emit::packed`]): each lane of a vector instruction is the IEEE operation its
//! scalar node would be, on the same operands, so the answers are the same bits. Pairs of
//! constants it reads come from the kernel's constant table as the loops' streams do.
//!
//! An `f64x2` kernel does the same operation on both lanes: vector arithmetic is IEEE per
//! lane and each math call is made once per lane, so every width answers the same bits.

use super::dots::{self, Dot, Dots, Step};
use super::reroll::{self, Arg, Rolls};
use super::slp::{self, Packs};
use crate::options::OptLevel;
use cranelift_codegen::entity::packed_option::ReservedValue;
use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, BlockArg, Function, InstBuilder, MemFlagsData, SigRef, Signature,
    StackSlotData, StackSlotKind, Type, UserFuncName, Value,
};
use cranelift_codegen::isa::TargetIsa;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use ddx_ir::math::MathTable;
use ddx_ir::{Lane, Node, NodeId, Op};
use std::collections::HashMap;

/// The kind of function a kernel is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Shape {
    /// One point: `extern "C" fn(inputs: *const f64, outputs: *mut f64, table: *const
    /// MathTable, constants: *const f64, scratch: *mut f64)`, with the inputs (symbols,
    /// then seeds) and the outputs contiguous; `constants` is the kernel's constant table
    /// and `scratch` a heap area of the size the kernel's code records, where its loops
    /// keep their values ([`Emit::rolled`]). A segment of a split lane has its own
    /// signature ([`segment_function`]).
    Point,
    /// A loop over points `start..start + len` of columns: `extern "C" fn(inputs: *const
    /// *const f64, outputs: *const *mut f64, start: usize, len: usize, table: *const
    /// MathTable)`, one base pointer per input and per output column, `width` points per
    /// iteration (1 or 2), then one at a time for the remainder.
    Column {
        /// Points per iteration of the main loop.
        width: u8,
    },
}

impl Shape {
    /// A stable byte for the cache key.
    pub(crate) fn tag(self) -> u8 {
        match self {
            Shape::Point => 0,
            Shape::Column { width } => width,
        }
    }
}

/// Whether the target has a fused multiply-add instruction Cranelift will use.
pub(crate) fn native_fma(isa: &dyn TargetIsa) -> bool {
    match isa.name() {
        "x64" => isa
            .isa_flags()
            .iter()
            .any(|f| f.name == "has_fma" && f.as_bool() == Some(true)),
        _ => true,
    }
}

/// The shape of the kernel made for `lane` when `shape` is asked and lanes of more than
/// `per` nodes are long: a point kernel, which a batch runs point by point, whatever was
/// asked for a long lane (its segments ([`Plan`]), or one function whose loops re-roll
/// it), for a lane of more than [`ROLLED_BATCH_NODES`] nodes that re-rolls
/// ([`reroll::Rule::KERNEL`]), and for a lane that makes at least [`BATCH_POINT_CALLS`]
/// calls out of line.
pub(crate) fn kernel_shape(lane: &Lane, shape: Shape, per: usize) -> Shape {
    let len = lane.graph.len();
    let rolls = || {
        !reroll::find(&lane.graph, reroll::Rule::KERNEL)
            .runs
            .is_empty()
    };
    let calls = || {
        (0..len)
            .filter(|&id| slp::calls_out(lane, id))
            .nth(BATCH_POINT_CALLS - 1)
            .is_some()
    };
    if shape == Shape::Point || len > per.max(2) || (len > ROLLED_BATCH_NODES && rolls()) || calls()
    {
        Shape::Point
    } else {
        shape
    }
}

/// Whether a point kernel at `level` of a lane of `nodes` nodes computes `rolls`, the runs
/// of repeated structure [`reroll::find`] kept, as loops ([`Emit::rolled`]) rather than
/// straight-line code:
/// - always at the quick tier, whose loops compile in a fraction of straight-line code's
///   time (NIST Gauss1's gradient, 13 010 nodes: 0.01 s against 0.3 s);
/// - at the optimised tier, for a lane of more than
///   [`BACKTRACKING_NODES`](super::compile::BACKTRACKING_NODES) nodes, whose straight-line
///   code would get the single-pass register allocator (chain-1024, 18 400 nodes: loops
///   18.2 µs, straight-line 21.7);
/// - and for a lane whose copies are mostly one recurrence: when at least half of the
///   copies' operations depend on what the copy before carries in ([`Rolls::carried`]).
///   No two copies of those can run at once, so straight-line code gains few `f64x2`
///   pairs there and costs compile time (a 16 000-node recurrence, 75 % carried: loops
///   10.5 µs, straight-line 12.3–13.0, and 1 s to compile against 0.01).
///
/// Below the limit, a lane of copies mostly independent runs faster as straight-line
/// code with its `f64x2` pairs ([`slp`]): Gauss1 (a fifth of its copies' operations
/// carried) 5.2 µs against 7.0, chain-256 (none) 3.9 against 4.5, recurrences whose
/// copies do much independent work (26–41 % carried) 6–18 % faster; from 63 % carried the
/// loops won by 7–24 % but for one case, level within 4 % (BENCHMARKS.md, "Loops at the
/// quick tier only").
///
/// A lane split into segments ([`Plan`]) is longer than the limit, so a lane that
/// [`Plan::new`] keeps in one function because it re-rolls is re-rolled at every tier.
pub(crate) fn keeps_loops(level: OptLevel, nodes: usize, rolls: &Rolls) -> bool {
    if rolls.runs.is_empty() {
        return false;
    }
    #[cfg(test)]
    if !AS_SHIPPED.get() {
        // Loops at every tier, so that the small random models of the conformance suites
        // exercise them under the optimising compiler too.
        return true;
    }
    level == OptLevel::Off
        || nodes > super::compile::BACKTRACKING_NODES
        || 2 * rolls.carried() >= rolls.covered()
}

const _: () = assert!(super::compile::SEGMENT_NODES > super::compile::BACKTRACKING_NODES);

#[cfg(test)]
thread_local! {
    /// Tests set this to lower point kernels on this thread by the tiers' rule users get
    /// ([`keeps_loops`]) rather than with loops at every tier.
    pub(crate) static AS_SHIPPED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A batch of a lane of more nodes than this that re-rolls runs its re-rolled point kernel
/// point by point rather than an `f64x2` column kernel: above it the column kernel's
/// straight-line code (single-pass allocator, spills) ran slower per point (chain-1000,
/// 18 k nodes: 23.9 µs a point against 14.6); below it the column kernel's two points at
/// a time can win where the lane makes no math calls (Kirby2's gradient: 0.30 µs a point
/// against 0.83–1.09 as a point kernel; Hahn1's value 0.17 against 0.36), though not
/// everywhere (Gauss1, 750 `exp` calls: 10.2 against 5.2). BENCHMARKS.md, "Long lanes
/// that re-roll". The same as `compile::BACKTRACKING_NODES`.
pub(crate) const ROLLED_BATCH_NODES: usize = 1 << 14;

/// A batch of a lane that makes at least this many calls out of line (the math table's
/// functions other than those computed inline, user functions) runs its point kernel point
/// by point: around every call an `f64x2` column kernel spills its live vectors and splits
/// each call in two, and its straight-line code keeps more values live than a point
/// kernel (NIST ENSO's gradient, 672 `sin`/`cos` in 8 960 nodes: 10.8 µs a point as a
/// column kernel, 6.5 as a point kernel; chain-256, 255 calls: 5.0 against 3.4). Below it
/// the column kernel is ahead or level (coverage-16's 56 calls: 0.47 against 0.51;
/// UNIQUAC-32's 96: 1.16 against 1.13; Roszman1's 25: 0.21 against 0.25).
/// BENCHMARKS.md, "Batches of lanes that call out".
pub(crate) const BATCH_POINT_CALLS: usize = 128;

/// Builds the function computing `lane` as a kernel of `shape` for `isa`; answers it with
/// the constant table a [`Shape::Point`] kernel reads through its fourth argument (empty
/// for a column kernel, and for a point kernel whose loops and pairs read no constant),
/// the number of `f64`s of heap scratch a point kernel's loops use through its fifth
/// argument (0 for a column kernel and a kernel without loops), and how many of the
/// lane's nodes it computes in straight-line code. A point kernel is, by the first that
/// applies: with dot loops ([`dots`]; the rest of the lane in `f64x2` pairs where an
/// order for both exists, [`Dots::order_with`]), re-rolled ([`reroll`]), with `f64x2`
/// pairs ([`slp`]), or straight-line.
pub(crate) fn function(lane: &Lane, shape: Shape, level: OptLevel, isa: &dyn TargetIsa) -> Lowered {
    let ptr = isa.pointer_type();
    let call_conv = isa.default_call_conv();
    let mut sig = Signature::new(call_conv);
    let params = 5;
    sig.params
        .extend(std::iter::repeat_n(AbiParam::new(ptr), params));
    let mut func = Function::with_name_signature(UserFuncName::default(), sig);
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry).to_vec();

    let math = MathSigs::new(&mut b, ptr, call_conv);
    let fma = native_fma(isa);
    let mut constants = Vec::new();
    let mut scratch_len = 0;
    let mut straight = lane.graph.len();
    match shape {
        Shape::Point => {
            let (inputs, outputs, table, consts, scratch) =
                (args[0], args[1], args[2], args[3], args[4]);
            let mut e = Emit::new(&mut b, types::F64, 1, table, ptr, &math, fma);
            // Dots first: rows of weighted inputs re-roll too, into loops of one row's
            // links that wait on their sums (a quadratic form's value lane at n = 256:
            // 34.8 µs re-rolled, 6.9 µs with dot loops, the interpreter 15.4 µs).
            let dots = dots::find(lane);
            let rolls = if dots.is_empty() {
                let rolls = reroll::find(&lane.graph, reroll::Rule::LOWERING);
                if keeps_loops(level, lane.graph.len(), &rolls) {
                    rolls
                } else {
                    Rolls::default()
                }
            } else {
                Rolls::default()
            };
            // Pairs around the dots, where an order for both exists (else the dots
            // among scalar code).
            let (packs, paired_order) = if !rolls.runs.is_empty() {
                (Packs::default(), None)
            } else if dots.is_empty() {
                (slp::find(lane, fma, &[0], &[]), None)
            } else if !pairs_around_dots(lane) {
                (Packs::default(), None)
            } else {
                let packs = slp::find(lane, fma, &[0], &dots.except());
                match (!packs.is_empty()).then(|| dots.order_with(lane, &packs)) {
                    Some(Some(order)) => (packs, Some(order)),
                    _ => (Packs::default(), None),
                }
            };
            if !packs.is_empty() {
                let memory = DotMemory {
                    inputs,
                    scratch,
                    consts,
                };
                let with = paired_order.as_deref().map(|order| DotSteps {
                    dots: &dots,
                    order,
                    memory,
                });
                if with.is_some() {
                    straight = dots.straight();
                    scratch_len = dots.scratch;
                    #[cfg(test)]
                    PAIRED_DOT_KERNELS.set(PAIRED_DOT_KERNELS.get() + 1);
                }
                constants = e.packed(lane, &packs, [inputs, outputs], Some(consts), None, with);
            } else if rolls.runs.is_empty() {
                if !dots.is_empty() {
                    straight = dots.straight();
                    scratch_len = dots.scratch;
                }
                let table = (!dots.is_empty()).then_some(DotTable {
                    dots: &dots,
                    memory: DotMemory {
                        inputs,
                        scratch,
                        consts,
                    },
                    table: &mut constants,
                });
                e.body(
                    lane,
                    table,
                    |b, k| b.ins().load(types::F64, data(), inputs, offset(k, 8)),
                    |b, k, v| {
                        b.ins().store(data(), v, outputs, offset(k, 8));
                    },
                );
            } else {
                (constants, scratch_len) =
                    e.rolled(lane, &rolls, [inputs, outputs, consts, scratch]);
            }
            b.ins().return_(&[]);
        }
        Shape::Column { width } => {
            let (inputs, outputs, start, len, table) =
                (args[0], args[1], args[2], args[3], args[4]);
            let end = b.ins().iadd(start, len);
            let exit = b.create_block();
            let mut next = start_loop(&mut b, ptr, start);
            if width > 1 {
                // Main loop: `width` points per iteration while a whole vector fits.
                let (head, i) = next;
                let body = b.create_block();
                let rest = b.create_block();
                let r_i = b.append_block_param(rest, ptr);
                let step = b.ins().iadd_imm_s(i, i64::from(width));
                let fits = b.ins().icmp(
                    cranelift_codegen::ir::condcodes::IntCC::UnsignedLessThanOrEqual,
                    step,
                    end,
                );
                b.ins().brif(fits, body, &[], rest, &[BlockArg::Value(i)]);
                b.switch_to_block(body);
                let ty = types::F64.by(u32::from(width)).unwrap_or(types::F64X2);
                column_body(
                    &mut b, lane, ty, width, inputs, outputs, i, table, ptr, &math, fma,
                );
                b.ins().jump(head, &[BlockArg::Value(step)]);
                b.switch_to_block(rest);
                next = start_loop(&mut b, ptr, r_i);
            }
            // Remainder loop (the whole loop for width 1): one point per iteration.
            let (head, i) = next;
            let body = b.create_block();
            let more = b.ins().icmp(
                cranelift_codegen::ir::condcodes::IntCC::UnsignedLessThan,
                i,
                end,
            );
            b.ins().brif(more, body, &[], exit, &[]);
            b.switch_to_block(body);
            column_body(
                &mut b,
                lane,
                types::F64,
                1,
                inputs,
                outputs,
                i,
                table,
                ptr,
                &math,
                fma,
            );
            let step = b.ins().iadd_imm_s(i, 1i64);
            b.ins().jump(head, &[BlockArg::Value(step)]);
            b.switch_to_block(exit);
            b.ins().return_(&[]);
        }
    }
    b.seal_all_blocks();
    b.finalize(isa.frontend_config());
    Lowered {
        func,
        table: constants,
        scratch: scratch_len,
        straight,
    }
}

/// Whether a point kernel with dot loops pairs the rest of `lane` (where an order for
/// both exists): always, but in this crate's unit tests for half the lanes (those of
/// even length), so that their random models reach the scalar path around the loops
/// too, whatever pairs they hold (the bits do not depend on the path).
fn pairs_around_dots(lane: &Lane) -> bool {
    !cfg!(test) || lane.graph.len().is_multiple_of(2)
}

/// A lane's kernel function as [`function`] builds it.
pub(crate) struct Lowered {
    pub(crate) func: Function,
    /// The constant table a [`Shape::Point`] kernel reads through its fourth argument.
    pub(crate) table: Vec<f64>,
    /// The `f64`s of heap scratch a point kernel's loops use through its fifth argument.
    pub(crate) scratch: usize,
    /// The lane's nodes the function computes in straight-line code: the lane's length
    /// but for a kernel with dot loops ([`Dots::straight`]), whose loops hold the rest.
    pub(crate) straight: usize,
}

/// A long lane split into segments: consecutive ranges of nodes, each lowered as its own
/// function (see [`segment_function`]), run one after the other on the same point.
///
/// A segment reads a value made by an earlier segment from a heap scratch area (one `f64`
/// a slot) instead of keeping it live, so a segment's spills, stack frame and compile
/// memory are bounded by its own length however long the lane; and each value is still
/// computed once, by the same operation, so the answers are those of one function.
///
/// **Where the cuts go.** Every value that crosses a cut costs a store, a load and, where
/// the value was one lane of an `f64x2` pair, an extraction and a rebuild; a cut at a fixed
/// node count can fall where thousands of values are live (the dense quadratic form's
/// gradient lane at `n = 128`: its 8 128 reverse-sweep products, 5× the instructions of the
/// lane in one function, BENCHMARKS.md "Where segments cut"). So each segment ends at the
/// place in the second half of its window where the fewest values are live across the
/// cut: a segment has at most `per` nodes and, but for the last, at least `per / 2`. The
/// places are counted once over the lane (a difference array of live ranges), so the plan
/// is linear in the lane and depends on the lane alone: the loader rebuilds the same plan
/// from the lane it checks a kernel against.
///
/// **Invariants**: the segments cover the graph in order, none empty and none longer than
/// `per`; every node an operation of a later segment reads and that is itself an operation
/// (not a constant or an input, which any segment makes or loads itself) has a scratch
/// slot, written by the segment that computes it before any later segment runs.
#[derive(Debug)]
pub(crate) struct Plan {
    /// Where each segment starts, the first at 0, increasing.
    pub(crate) starts: Vec<usize>,
    len: usize,
    /// The scratch slot of each node, or [`Plan::NONE`].
    slot: Vec<u32>,
    /// Scratch slots in all.
    pub(crate) scratch: usize,
}

impl Plan {
    const NONE: u32 = u32::MAX;

    /// The plan of `lane` in segments of at most `per` nodes (a `per` under 2 is taken as
    /// 2), or `None` when one function computes the lane: when it has no more than `per`
    /// nodes, or when its point kernel has dot loops ([`dots::find`]) or, having none,
    /// re-rolls ([`reroll::Rule::KERNEL`]), leaving no more than `per` operations in
    /// straight-line code (the dense quadratic form's gradient at `n = 256`: 38.1 µs in
    /// segments, 13.8 µs as one function with dot loops, BENCHMARKS.md "Dot loops"). A
    /// re-rolled kernel's code and frame grow with that straight-line part alone (its loops
    /// keep their values in heap scratch), and its loops would be lost to a split: the
    /// long_lanes chain of 3000 links ran 2.2× faster as one re-rolled function than in
    /// segments (BENCHMARKS.md, "Long lanes that re-roll").
    pub(crate) fn new(lane: &Lane, per: usize) -> Option<Plan> {
        let g = &lane.graph;
        let per = per.max(2);
        let len = g.len();
        if len <= per {
            return None;
        }
        // As `function` chooses: dots first, then runs.
        let dots = dots::find(lane);
        if !dots.is_empty() {
            if dots.straight() <= per {
                return None;
            }
        } else {
            let rolls = reroll::find(g, reroll::Rule::KERNEL);
            if !rolls.runs.is_empty() && rolls.straight() <= per {
                return None;
            }
        }
        let mut operands: Vec<NodeId> = Vec::new();
        // The last reader of each operation (itself when none reads it).
        let mut last: Vec<u32> = (0..len as u32).collect();
        for id in 0..len {
            g.operands_into(NodeId::from_index(id), &mut operands);
            for a in &operands {
                last[a.index()] = id as u32;
            }
        }
        // live[k]: the operations made before node k and read at or after it, the values
        // a cut just before node k puts in scratch.
        let mut live = vec![0i64; len + 1];
        for (a, node) in g.nodes().iter().enumerate() {
            let l = last[a] as usize;
            if l > a && matches!(node, Node::Apply(..)) {
                live[a + 1] += 1;
                live[l + 1] -= 1;
            }
        }
        for k in 1..=len {
            live[k] += live[k - 1];
        }
        let mut starts = vec![0];
        let mut start = 0;
        while len - start > per {
            let window = start + per / 2..=start + per;
            // The fewest live values; the latest such place, for fewer segments.
            let cut = window.rev().min_by_key(|&k| live[k]).unwrap_or(start + per);
            starts.push(cut);
            start = cut;
        }
        let mut plan = Plan {
            starts,
            len,
            slot: vec![Plan::NONE; len],
            scratch: 0,
        };
        let mut scratch = 0u32;
        for id in 0..len {
            g.operands_into(NodeId::from_index(id), &mut operands);
            let here = plan.segment_of(id);
            for a in &operands {
                let a = a.index();
                if plan.slot[a] == Plan::NONE
                    && matches!(g.nodes()[a], Node::Apply(..))
                    && plan.segment_of(a) < here
                {
                    plan.slot[a] = scratch;
                    scratch += 1;
                }
            }
        }
        plan.scratch = scratch as usize;
        Some(plan)
    }

    /// Renumbers the scratch slots so that the two lanes of each pair of `packs` that both
    /// cross a cut sit side by side, low lane first: a segment then stores such a pair with
    /// one `f64x2` store, and a later segment that reads the pair in the same lane order
    /// loads it with one. The slots are the same in number, so a loader that checks a
    /// kernel against [`Plan::new`] alone sees the same scratch.
    pub(crate) fn pair_slots(&mut self, packs: &Packs) {
        let mut renumbered = vec![Plan::NONE; self.slot.len()];
        let mut next = 0u32;
        for id in 0..self.slot.len() {
            if self.slot[id] == Plan::NONE || renumbered[id] != Plan::NONE {
                continue;
            }
            let partner = packs
                .partner(NodeId::from_index(id))
                .map(NodeId::index)
                .filter(|&q| self.slot[q] != Plan::NONE);
            match partner {
                Some(q) => {
                    let (lo, hi) = if packs.lane(NodeId::from_index(id)) == 0 {
                        (id, q)
                    } else {
                        (q, id)
                    };
                    renumbered[lo] = next;
                    renumbered[hi] = next + 1;
                    next += 2;
                }
                None => {
                    renumbered[id] = next;
                    next += 1;
                }
            }
        }
        debug_assert_eq!(next as usize, self.scratch);
        self.slot = renumbered;
    }

    /// The number of segments.
    pub(crate) fn segments(&self) -> usize {
        self.starts.len()
    }

    /// The segment node `id` is in.
    pub(crate) fn segment_of(&self, id: usize) -> usize {
        self.starts.partition_point(|&s| s <= id) - 1
    }

    /// Whether node `id` has a scratch slot.
    #[cfg(test)]
    pub(crate) fn has_slot(&self, id: usize) -> bool {
        self.slot[id] != Plan::NONE
    }

    /// Node `id`'s scratch slot, if it has one.
    #[cfg(test)]
    pub(crate) fn slot_of(&self, id: usize) -> Option<usize> {
        (self.slot[id] != Plan::NONE).then_some(self.slot[id] as usize)
    }

    /// The nodes of segment `s`.
    pub(crate) fn range(&self, s: usize) -> std::ops::Range<usize> {
        self.starts[s]..self.starts.get(s + 1).copied().unwrap_or(self.len)
    }
}

#[cfg(test)]
thread_local! {
    /// The `f64x2` scratch stores and loads of pairs ([`Plan::pair_slots`]) this thread's
    /// lowering has emitted: tests check the paths are taken.
    pub(crate) static SCRATCH_PAIRS: std::cell::Cell<[usize; 2]> =
        const { std::cell::Cell::new([0, 0]) };
}

/// Counts a scratch pair's store (`0`) or load (`1`) in tests.
fn count_scratch_pair(_which: usize) {
    #[cfg(test)]
    SCRATCH_PAIRS.with(|c| {
        let mut v = c.get();
        v[_which] += 1;
        c.set(v);
    });
}

/// Builds the function computing segment `s` of `plan` of `lane`:
/// `extern "C" fn(inputs: *const f64, outputs: *mut f64, table: *const MathTable,
/// scratch: *mut f64)`, inputs and outputs as a [`Shape::Point`] kernel's (the segment
/// stores the outputs it computes), `scratch` holding [`Plan::scratch`] slots.
pub(crate) fn segment_function(
    lane: &Lane,
    plan: &Plan,
    packs: &Packs,
    s: usize,
    isa: &dyn TargetIsa,
) -> Function {
    let ptr = isa.pointer_type();
    let call_conv = isa.default_call_conv();
    let mut sig = Signature::new(call_conv);
    sig.params
        .extend(std::iter::repeat_n(AbiParam::new(ptr), 4));
    let mut func = Function::with_name_signature(UserFuncName::default(), sig);
    let mut fctx = FunctionBuilderContext::new();
    let mut b = FunctionBuilder::new(&mut func, &mut fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let args = b.block_params(entry).to_vec();
    let (inputs, outputs, table, scratch) = (args[0], args[1], args[2], args[3]);
    let math = MathSigs::new(&mut b, ptr, call_conv);
    let fma = native_fma(isa);
    let mut e = Emit::new(&mut b, types::F64, 1, table, ptr, &math, fma);
    if packs.is_empty() {
        e.segment(lane, plan, s, inputs, outputs, scratch);
    } else {
        let part = Part {
            plan,
            segment: s,
            scratch,
        };
        e.packed(lane, packs, [inputs, outputs], None, Some(part), None);
    }
    b.ins().return_(&[]);
    b.seal_all_blocks();
    b.finalize(isa.frontend_config());
    func
}

/// The pairs of a lane split by `plan` (each within one segment), for
/// [`segment_function`].
pub(crate) fn segment_packs(lane: &Lane, plan: &Plan, isa: &dyn TargetIsa) -> Packs {
    slp::find(lane, native_fma(isa), &plan.starts, &[])
}

/// Jumps from the current block to a new loop head taking the point index `from`, and
/// leaves the builder in the head; answers the head and its index parameter.
fn start_loop(
    b: &mut FunctionBuilder<'_>,
    ptr: Type,
    from: Value,
) -> (cranelift_codegen::ir::Block, Value) {
    let head = b.create_block();
    let i = b.append_block_param(head, ptr);
    b.ins().jump(head, &[BlockArg::Value(from)]);
    b.switch_to_block(head);
    (head, i)
}

/// One iteration of a column loop: points `i..i + width` of every column.
#[allow(clippy::too_many_arguments)]
fn column_body(
    b: &mut FunctionBuilder<'_>,
    lane: &Lane,
    ty: Type,
    width: u8,
    inputs: Value,
    outputs: Value,
    i: Value,
    table: Value,
    ptr: Type,
    math: &MathSigs,
    fma: bool,
) {
    let at = b.ins().ishl_imm_s(i, 3i64);
    let word = ptr.bytes() as usize;
    let mut e = Emit::new(b, ty, width, table, ptr, math, fma);
    e.body(
        lane,
        None,
        |b, k| {
            let base = b.ins().load(ptr, pointer_table(), inputs, offset(k, word));
            let p = b.ins().iadd(base, at);
            b.ins().load(ty, data(), p, 0)
        },
        |b, k, v| {
            let base = b.ins().load(ptr, pointer_table(), outputs, offset(k, word));
            let p = b.ins().iadd(base, at);
            b.ins().store(data(), v, p, 0);
        },
    );
}

/// Flags for the point values: never trapping (the caller guarantees the memory), not
/// assumed vector-aligned (columns are only `f64`-aligned).
fn data() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// Flags for memory unchanged while a point kernel runs (its inputs, its constant table):
/// never trapping, read-only and movable, so that Cranelift places each load where it is
/// first read (and folds one read once into its reader) instead of where it was emitted.
fn unchanging() -> MemFlagsData {
    MemFlagsData::new()
        .with_notrap()
        .with_readonly()
        .with_can_move()
}

/// Flags for the column-pointer tables and the math table: aligned, never trapping, and
/// unchanged while the kernel runs.
fn pointer_table() -> MemFlagsData {
    MemFlagsData::trusted().with_readonly()
}

/// The byte offset of entry `k` of `size` bytes. Lanes have far fewer than 2³¹ / 8 inputs
/// or outputs (a graph holds at most `u32::MAX` nodes, checked where lanes are built).
fn offset(k: usize, size: usize) -> i32 {
    i32::try_from(k * size).unwrap_or(i32::MAX)
}

/// The imported signatures of the math functions.
struct MathSigs {
    unary: SigRef,
    binary: SigRef,
    ternary: SigRef,
    /// `ddx_ir::user::call_n`: `(tag, args, k)`.
    call_n: SigRef,
}

impl MathSigs {
    fn new(b: &mut FunctionBuilder<'_>, ptr: Type, cc: cranelift_codegen::isa::CallConv) -> Self {
        let mut s = Signature::new(cc);
        s.params.push(AbiParam::new(types::F64));
        s.params.push(AbiParam::new(ptr));
        s.params.push(AbiParam::new(ptr));
        s.returns.push(AbiParam::new(types::F64));
        let call_n = b.import_signature(s);
        let mut sig = |n: usize| {
            let mut s = Signature::new(cc);
            s.params
                .extend(std::iter::repeat_n(AbiParam::new(types::F64), n));
            s.returns.push(AbiParam::new(types::F64));
            b.import_signature(s)
        };
        MathSigs {
            unary: sig(1),
            binary: sig(2),
            ternary: sig(3),
            call_n,
        }
    }
}

/// The constant value of the second argument of a binary operation, if any.
fn exponent(g: &ddx_ir::Graph, op: Op, args: &[NodeId; 3]) -> Option<f64> {
    (op.arity() == 2).then(|| g.constant_of(args[1])).flatten()
}

/// The state of [`Emit::rolled`] between nodes.
struct Rolled<'l> {
    lane: &'l Lane,
    rolls: &'l Rolls,
    /// Each node's run, or [`Rolled::NONE`].
    run_of: Vec<u32>,
    /// The run whose tail ([`reroll::Run::tail`]) each node is in, or [`Rolled::NONE`].
    tail_of: Vec<u32>,
    /// Per run and template position: whether copies are read outside the run.
    stored: Vec<Vec<bool>>,
    /// Per run: the byte offset in the scratch of the area its values read outside it are
    /// stored in, the value of operation `c·period + j` of the run at entry `c·period + j`.
    areas: Vec<Option<i32>>,
    /// The kernel's heap scratch (its fifth argument), and the `f64`s its areas take so far.
    scratch: Value,
    scratch_len: usize,
    /// Each node's value where the code outside loops has reached, once made.
    vals: Vec<Option<Value>>,
    inputs: Value,
    outputs: Value,
    /// Per run and template position: where its loop stores its copies among the
    /// outputs, if it does ([`direct_outputs`]).
    direct: Vec<Vec<Direct>>,
    /// The kernel's constant table (its fourth argument) and what it holds so far: the
    /// constant streams, each stored once, read in place by the loops.
    consts: Value,
    table: Vec<f64>,
    /// Where each constant stream already in `table` starts (by its values' bits).
    tabled: HashMap<Vec<u64>, usize>,
}

/// The most `f64`s of scratch a re-rolled point kernel takes per node of its lane: the
/// runs' areas hold at most one value per operation they cover, and the streams copied
/// before a loop at most one per argument of those operations (three at most).
pub(crate) const MAX_SCRATCH_PER_NODE: usize = 4;

impl Rolled<'_> {
    const NONE: u32 = u32::MAX;

    /// A new area of `len` values in the kernel's scratch: its byte offset. The areas of
    /// one kernel take at most [`reroll::MAX_AREA_BYTES`] (which [`reroll::find`] keeps),
    /// so every offset into them fits an `i32`.
    fn area(&mut self, len: usize) -> i32 {
        let at = 8 * self.scratch_len;
        self.scratch_len += len;
        debug_assert!(8 * self.scratch_len <= reroll::MAX_AREA_BYTES);
        debug_assert!(self.scratch_len <= MAX_SCRATCH_PER_NODE * self.lane.graph.len());
        offset(at, 1)
    }
}

/// What a run's loop reads from before it: the values every copy reads, the template
/// positions whose values the next copy reads (block parameters, in this order), where each
/// stream argument `(position, argument)` is read (`(base, offset, stride)`, entry `c` at
/// `base + offset + c·stride`), and the address of the run's area, if it has one.
struct Loop {
    same: HashMap<NodeId, Value>,
    carried: Vec<u32>,
    streams: HashMap<(usize, usize), (Value, i32, i64)>,
    area: Option<Value>,
}

/// How a loop takes two copies an iteration ([`Emit::copy_pair`]), per template position:
/// whether it depends on a carried value ([`reroll::on_carried`]), and whether it runs as
/// one `f64x2` operation for both copies.
struct Pairing {
    carried: Vec<bool>,
    packed: Vec<bool>,
}

impl Pairing {
    /// Run `r`'s pairing: every operation that carries nothing and is computed inline
    /// ([`slp::pair_saves`]) is packed. Answers it with its gain per iteration, in
    /// instructions: what its `f64x2` operations save, less what they add. Each lane move
    /// counts as two instructions: a stream whose two entries are not adjacent (a second
    /// load put in the high lane), a packed value stored or read as a scalar (its high
    /// lane extracted), an operand built from two scalars. Moves all use one execution
    /// port of an x86 core where arithmetic has two. Measured on NIST Gauss1's gradient
    /// (BENCHMARKS.md, "Two copies an iteration"): its observations' model run gains
    /// 78 − 2·10 and runs 20 % faster paired; its derivative run would gain 23 − 2·22. At
    /// one instruction a move it came out at +3, and paired it executed 1.3 % fewer
    /// instructions but ran 0.6 % slower. `stride(j, k)` is the byte stride of the stream
    /// argument `k` of position `j`.
    fn new(
        st: &Rolled<'_>,
        r: usize,
        stride: impl Fn(usize, usize) -> i64,
        fma: bool,
    ) -> (Pairing, f64) {
        const MOVE: f64 = 2.0;
        let rolls = st.rolls;
        let run = &rolls.runs[r];
        let p = run.period;
        let carried = reroll::on_carried(run);
        let saves: Vec<Option<f64>> = (0..p)
            .map(|j| {
                let id = rolls.node(run, 0, j).index();
                (!carried[j])
                    .then(|| slp::pair_saves(st.lane, id, fma))
                    .flatten()
            })
            .collect();
        let packed: Vec<bool> = saves.iter().map(Option::is_some).collect();
        let mut gain: f64 = saves.iter().flatten().sum();
        // Positions read as scalars (high lane extracted), and built from scalars.
        let mut scalar = vec![false; p];
        let mut built = vec![false; p];
        for j in 0..p {
            scalar[j] |= st.stored[r][j] || st.direct[r][j].is_some();
            for (k, a) in run.args[j].iter().enumerate() {
                match *a {
                    Arg::Internal(i) if packed[j] => built[i as usize] |= !packed[i as usize],
                    Arg::Internal(i) | Arg::Carried(i) => scalar[i as usize] = true,
                    Arg::Stream if packed[j] => gain -= MOVE * f64::from(stride(j, k) != 8),
                    Arg::Stream | Arg::Same(_) | Arg::None => {}
                }
            }
        }
        for j in 0..p {
            gain -= MOVE * (f64::from(packed[j] && scalar[j]) + f64::from(built[j]));
        }
        (Pairing { carried, packed }, gain)
    }
}

/// How a loop decides to take two copies an iteration ([`Emit::pairing`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PairRule {
    /// When it gains ([`Pairing::new`]).
    Gain,
    /// Every other run, by index (whatever the gain): tests exercise both loops, and a
    /// loop of one kind reading the area of the other, on small random models.
    Parity,
}

/// The rule point kernels pair by: [`PairRule::Gain`], or [`PairRule::Parity`] in this
/// crate's unit tests (the bits do not depend on it).
const PAIRING: PairRule = if cfg!(test) {
    PairRule::Parity
} else {
    PairRule::Gain
};

#[cfg(test)]
thread_local! {
    /// The loops this thread's lowering has emitted: `[one copy an iteration, two]`.
    pub(crate) static LOOPS: std::cell::Cell<[usize; 2]> = const { std::cell::Cell::new([0, 0]) };
}

/// Counts a loop in tests: `paired` when it takes two copies an iteration.
fn count_loop(_paired: bool) {
    #[cfg(test)]
    LOOPS.with(|c| {
        let mut v = c.get();
        v[usize::from(_paired)] += 1;
        c.set(v);
    });
}

#[cfg(test)]
thread_local! {
    /// The dot groups this thread's lowering has emitted as loops.
    pub(crate) static DOT_GROUPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The point kernels with dot loops this thread's lowering has emitted among `f64x2`
    /// pairs.
    pub(crate) static PAIRED_DOT_KERNELS: std::cell::Cell<usize> =
        const { std::cell::Cell::new(0) };
    /// The links before dot loops this thread's lowering has made: in pairs whose two
    /// values are one slot, adjacent slots, or two other slots; and alone.
    pub(crate) static PREFIX_LINKS: std::cell::Cell<[usize; 4]> =
        const { std::cell::Cell::new([0; 4]) };
}

/// Counts a link made before a dot loop in tests: in a pair whose values are the slots
/// `Some((a, b))`, or (`None`) alone.
fn count_prefix_link(_pair: Option<(i64, i64)>) {
    #[cfg(test)]
    PREFIX_LINKS.with(|c| {
        let mut v = c.get();
        v[match _pair {
            Some((a, b)) if a == b => 0,
            Some((a, b)) if b == a + 1 => 1,
            Some(_) => 2,
            None => 3,
        }] += 1;
        c.set(v);
    });
}

/// The byte offset of 8-byte slot `k` from a base pointer (saturated: a kernel's slots
/// lie far inside `i32`).
fn slot_byte(k: i64) -> i32 {
    i32::try_from(k * 8).unwrap_or(i32::MAX)
}

/// A loop's copy index `c` and the products `c·stride` made from it, each made once.
struct Steps {
    c: Value,
    made: HashMap<i64, Value>,
}

impl Steps {
    fn new(c: Value) -> Self {
        Steps {
            c,
            made: HashMap::new(),
        }
    }

    /// `base + c·stride`.
    fn address(&mut self, e: &mut Emit<'_, '_, '_>, base: Value, stride: i64) -> Value {
        let c = self.c;
        let o = *self
            .made
            .entry(stride)
            .or_insert_with(|| e.b.ins().imul_imm_s(c, stride));
        e.b.ins().iadd(base, o)
    }
}

/// The state of [`Emit::packed`] between nodes.
struct Paired<'l> {
    lane: &'l Lane,
    packs: &'l Packs,
    inputs: Value,
    /// The kernel's constant table (its fourth argument) and what it holds so far: the
    /// pairs of constants vector operations read, an entry per use. A segment has none
    /// (its pairs of constants are constants of its code).
    consts: Option<Value>,
    table: Vec<f64>,
    /// The first node emitted: a segment reads earlier operations from its scratch area.
    start: usize,
    part: Option<Part<'l>>,
    /// Each node's scalar value, once made (for a paired node, once extracted).
    scalar: Vec<Option<Value>>,
    /// Each pair's vector, at its low node.
    vector: Vec<Option<Value>>,
    /// Vector operands built from nodes that are not a pair in lane order, by `(low, high)`.
    built: HashMap<(u32, u32), Value>,
}

/// The segment [`Emit::packed`] emits: segment `segment` of `plan`, with its scratch area.
#[derive(Clone, Copy)]
struct Part<'p> {
    plan: &'p Plan,
    segment: usize,
    scratch: Value,
}

/// The input slot node `id` loads, if it is an input (a symbol or a seed).
fn input_slot(lane: &Lane, id: NodeId) -> Option<usize> {
    match *lane.graph.node(id) {
        Node::Symbol(s) => Some(s.index()),
        Node::Seed(s) => Some(lane.seed_base() + s.index()),
        _ => None,
    }
}

/// Where a loop stores a template position's copies among the outputs: `(byte offset of
/// copy 0's slot, bytes from one copy's slot to the next)`, or `None`.
type Direct = Option<(i32, i64)>;

/// The outputs a point kernel's loops write themselves: per run and template position, the
/// output slots `(first, step)` when every copy is an output and their first slots are
/// evenly spaced (copy `c`'s at `first + c·step`), and which slots that covers. Other slots
/// (those of other positions, and any further slot of a node) are written after the loops
/// from the runs' areas.
fn direct_outputs(lane: &Lane, rolls: &Rolls) -> (Vec<Vec<Direct>>, Vec<bool>) {
    let mut first: HashMap<NodeId, usize> = HashMap::new();
    for (k, &o) in lane.outputs.iter().enumerate() {
        first.entry(o).or_insert(k);
    }
    let mut written = vec![false; lane.outputs.len()];
    let direct = rolls
        .runs
        .iter()
        .map(|run| {
            (0..run.period)
                .map(|j| {
                    let slot = |c: usize| first.get(&rolls.node(run, c, j)).map(|&k| k as i64);
                    let (s0, s1) = (slot(0)?, slot(1)?);
                    let step = s1 - s0;
                    (2..run.copies)
                        .all(|c| slot(c) == Some(s0 + c as i64 * step))
                        .then_some(())?;
                    let at = i32::try_from(s0 * 8).ok()?;
                    for c in 0..run.copies {
                        written[(s0 + c as i64 * step) as usize] = true;
                    }
                    Some((at, 8 * step))
                })
                .collect()
        })
        .collect();
    (direct, written)
}

/// What a point kernel's dot loops read ([`Emit::dot_group`]): the lane's dots, the
/// kernel's inputs and constant-table arguments, and the table being built.
/// The memory a point kernel's dot loops read: the lane's inputs, the scratch their
/// values of operations are stored in ([`Dots::slot_of`]), the constant table their
/// weights are appended to.
#[derive(Clone, Copy)]
struct DotMemory {
    inputs: Value,
    scratch: Value,
    consts: Value,
}

/// A point kernel's dots emitted among `f64x2` pairs ([`Emit::packed`]): the dots, the
/// order of pairs, nodes and groups ([`Dots::order_with`]), and the memory they read.
#[derive(Clone, Copy)]
struct DotSteps<'d> {
    dots: &'d Dots,
    order: &'d [Step],
    memory: DotMemory,
}

/// A point kernel's dots emitted among scalar code ([`Emit::body`]).
struct DotTable<'t> {
    dots: &'t Dots,
    memory: DotMemory,
    table: &'t mut Vec<f64>,
}

/// Emits the nodes of a lane at one type (`f64` or `f64x2`).
struct Emit<'a, 'b, 'c> {
    b: &'a mut FunctionBuilder<'b>,
    ty: Type,
    width: u8,
    table: Value,
    ptr: Type,
    math: &'c MathSigs,
    fma: bool,
}

impl<'a, 'b, 'c> Emit<'a, 'b, 'c> {
    fn new(
        b: &'a mut FunctionBuilder<'b>,
        ty: Type,
        width: u8,
        table: Value,
        ptr: Type,
        math: &'c MathSigs,
        fma: bool,
    ) -> Self {
        Emit {
            b,
            ty,
            width,
            table,
            ptr,
            math,
            fma,
        }
    }

    /// Emits every node of `lane` in order, reading inputs through `load` and writing each
    /// output through `store`; with `dots` (a point kernel's), in the dots' order
    /// ([`Dots::order`]), each group of dots one loop ([`Emit::dot_group`]), the dots'
    /// links and terms emitted by nothing else, and each value a loop reads from the
    /// scratch stored to its slot where made (by its node's step, or by its loop's for
    /// another dot's result).
    fn body(
        &mut self,
        lane: &Lane,
        mut dots: Option<DotTable<'_>>,
        mut load: impl FnMut(&mut FunctionBuilder<'b>, usize) -> Value,
        mut store: impl FnMut(&mut FunctionBuilder<'b>, usize, Value),
    ) {
        let g = &lane.graph;
        let mut vals: Vec<Value> = vec![Value::reserved_value(); g.len()];
        let order = dots.as_ref().map(|t| t.dots.order.as_slice());
        let natural = (0..g.len()).map(|k| Step::Node(NodeId::from_index(k)));
        let steps: Box<dyn Iterator<Item = Step>> = match order {
            Some(o) => Box::new(o.iter().copied()),
            None => Box::new(natural),
        };
        for step in steps {
            let id = match step {
                Step::Node(id) => id.index(),
                Step::Group(k) => {
                    let Some(t) = dots.as_mut() else {
                        unreachable!("a group step comes with its dots")
                    };
                    let group = &t.dots.groups[k];
                    let starts: Vec<Value> = group
                        .members
                        .iter()
                        .map(|&m| vals[t.dots.dots[m].start.index()])
                        .collect();
                    let sums = self.dot_group(t.dots, group, &starts, t.memory, t.table);
                    for (&m, v) in group.members.iter().zip(sums) {
                        if let Some(&l) = t.dots.dots[m].links.last() {
                            vals[l.index()] = v;
                            // A result a later loop reads as a value (tester 38: it
                            // read a stale slot).
                            self.store_to_slot(t.dots, t.memory, l, v);
                        }
                    }
                    continue;
                }
            };
            let node = g.node(NodeId::from_index(id));
            let v = match *node {
                Node::Const(c) => self.constant(c.value()),
                Node::Symbol(s) => load(self.b, s.index()),
                Node::Seed(s) => load(self.b, lane.seed_base() + s.index()),
                // No value of its own (never read: the call reads its arguments).
                Node::Apply(Op::Pack, _) => self.constant(f64::NAN),
                Node::Apply(Op::Call, args) if g.is_packed_call(NodeId::from_index(id)) => {
                    let leaves: Vec<Value> = g
                        .call_args(NodeId::from_index(id))
                        .map(|a| vals[a.index()])
                        .collect();
                    self.call_n(vals[args[0].index()], &leaves)
                }
                Node::Apply(op, args) => {
                    let arg = |k: usize| vals[args[k].index()];
                    match op.arity() {
                        1 => self.unary(op, arg(0)),
                        2 => {
                            let exponent = g.constant_of(args[1]);
                            self.binary(op, arg(0), arg(1), exponent)
                        }
                        _ => self.ternary(op, arg(0), arg(1), arg(2)),
                    }
                }
            };
            vals[id] = v;
            // A value a dot loop reads, to its scratch slot (every one is a step here).
            if let Some(t) = &dots {
                self.store_to_slot(t.dots, t.memory, NodeId::from_index(id), v);
            }
        }
        for (k, o) in lane.outputs.iter().enumerate() {
            store(self.b, k, vals[o.index()]);
        }
    }

    /// Emits a point kernel's nodes as [`Emit::body`] does, except that each run of
    /// `rolls` is one loop whose body is the run's template (see [`reroll`]): copy `c`
    /// reads its streams at entry `c` of memory (the lane's inputs, or an area of the
    /// kernel's heap scratch, `io[3]`, that a value computed before the run is copied to,
    /// or that an earlier run stored it in), carries what the next copy reads in block
    /// parameters, and stores each value read outside the run at entry `c` of its run's
    /// area in the scratch. Leaves are made where first read outside a loop; a value of a
    /// run read after it is its last copy's from the loop, an earlier copy's loaded from
    /// its area; outputs at evenly spaced slots are stored by their loop
    /// ([`direct_outputs`]). A stream of constants is read from the kernel's constant
    /// table (`io[2]`, the kernel's fourth argument) instead: answers the table, which the
    /// kernel's code must carry (see
    /// [`Compiler::compile`](super::compile::Compiler::compile)), and the scratch's length
    /// in `f64`s, which the code records for its caller to provide. The areas are heap
    /// memory, not stack slots, so a kernel's frame does not grow with its runs: a lane of
    /// any length that re-rolls is one function ([`Plan::new`]).
    fn rolled(&mut self, lane: &Lane, rolls: &Rolls, io: [Value; 4]) -> (Vec<f64>, usize) {
        let [inputs, outputs, consts, scratch] = io;
        let g = &lane.graph;
        let mut run_of = vec![Rolled::NONE; g.len()];
        for (r, run) in rolls.runs.iter().enumerate() {
            for k in run.first..run.first + run.period * run.copies {
                run_of[rolls.ops[k].index()] = r as u32;
            }
        }
        let mut stored: Vec<Vec<bool>> = rolls.runs.iter().map(|r| vec![false; r.period]).collect();
        let mut mark = |a: NodeId, by: u32| {
            let r = run_of[a.index()];
            if r != Rolled::NONE && r != by {
                let run = &rolls.runs[r as usize];
                stored[r as usize][(rolls.at[a.index()] as usize - run.first) % run.period] = true;
            }
        };
        for (i, node) in g.nodes().iter().enumerate() {
            for &a in node.args() {
                mark(a, run_of[i]);
            }
        }
        let (direct, written) = direct_outputs(lane, rolls);
        for (&o, _) in lane.outputs.iter().zip(&written).filter(|(_, w)| !**w) {
            mark(o, Rolled::NONE);
        }
        let mut tail_of = vec![Rolled::NONE; g.len()];
        for (r, run) in rolls.runs.iter().enumerate() {
            let end = run.first + run.period * run.copies;
            for k in end..end + run.tail {
                tail_of[rolls.ops[k].index()] = r as u32;
            }
        }
        let mut st = Rolled {
            lane,
            rolls,
            tail_of,
            areas: vec![None; rolls.runs.len()],
            scratch,
            scratch_len: 0,
            stored,
            run_of,
            vals: vec![None; g.len()],
            inputs,
            outputs,
            direct,
            consts,
            table: Vec::new(),
            tabled: HashMap::new(),
        };
        for (id, node) in g.nodes().iter().enumerate() {
            let v = match *node {
                Node::Const(_) | Node::Symbol(_) | Node::Seed(_) => continue,
                _ if st.run_of[id] != Rolled::NONE => {
                    let r = st.run_of[id] as usize;
                    if rolls.ops[rolls.runs[r].first].index() == id {
                        self.run(&mut st, r);
                    }
                    continue;
                }
                Node::Apply(Op::Pack, _) => self.constant(f64::NAN),
                Node::Apply(Op::Call, args) if g.is_packed_call(NodeId::from_index(id)) => {
                    let tag = self.value_of(&mut st, args[0]);
                    let leaves: Vec<Value> = g
                        .call_args(NodeId::from_index(id))
                        .map(|a| self.value_of(&mut st, a))
                        .collect();
                    self.call_n(tag, &leaves)
                }
                Node::Apply(op, args) => {
                    let mut x = [None; 3];
                    for (k, &a) in args[..op.arity()].iter().enumerate() {
                        x[k] = Some(self.value_of(&mut st, a));
                    }
                    self.apply(op, x, exponent(g, op, &args))
                }
            };
            let r = st.tail_of[id];
            if let Some(area) = st.areas.get(r as usize).copied().flatten() {
                let rel = rolls.at[id] as usize - rolls.runs[r as usize].first;
                let at = area + offset(rel, 8);
                self.b.ins().store(data(), v, st.scratch, at);
            }
            st.vals[id] = Some(v);
        }
        for (k, &o) in lane.outputs.iter().enumerate() {
            if !written[k] {
                let v = self.value_of(&mut st, o);
                self.b.ins().store(data(), v, outputs, offset(k, 8));
            }
        }
        (st.table, st.scratch_len)
    }

    /// Emits a point kernel's nodes as [`Emit::body`] does, except that each pair of
    /// `packs` is one `f64x2` operation (its low node in lane 0, its partner in lane 1),
    /// emitted in the order [`Packs::order`] gives. A scalar read of a paired node extracts
    /// its lane; a vector operand that is not a pair in the same lane order is built
    /// ([`Emit::vector_of`]); two adjacent outputs of one pair, in lane order, are stored
    /// with one vector store. Inputs are read, and pairs of constants read from the
    /// kernel's constant table (`io[2]`, its fourth argument, each use its own entry), by
    /// loads Cranelift may move to where they are read and fold into their reader (both
    /// blocks are unchanged while the kernel runs): a load placed at the top would keep
    /// its value live, and spilled, until its last reader. With `dots` (a point kernel's
    /// dot loops, their nodes in no pair), the order is theirs ([`Dots::order_with`]) and
    /// each group one loop ([`Emit::dot_group`]), its weights in the same table. Answers
    /// the table.
    fn packed(
        &mut self,
        lane: &Lane,
        packs: &Packs,
        io: [Value; 2],
        consts: Option<Value>,
        part: Option<Part<'_>>,
        dots: Option<DotSteps<'_>>,
    ) -> Vec<f64> {
        let [inputs, outputs] = io;
        let g = &lane.graph;
        let range = part.map_or(0..g.len(), |p| p.plan.range(p.segment));
        let order: Box<dyn Iterator<Item = Step>> = match dots {
            Some(d) => Box::new(d.order.iter().copied()),
            None => Box::new(packs.order().iter().map(|&id| Step::Node(id))),
        };
        let mut st = Paired {
            lane,
            packs,
            inputs,
            consts,
            start: range.start,
            part,
            table: Vec::new(),
            scalar: vec![None; g.len()],
            vector: vec![None; g.len()],
            built: HashMap::new(),
        };
        // Per node: stored to its dot scratch slot already.
        let mut stored = vec![false; if dots.is_some() { g.len() } else { 0 }];
        for step in order {
            let id = match step {
                Step::Node(id) => id,
                Step::Group(k) => {
                    let Some(d) = dots else {
                        unreachable!("a group step comes with its dots")
                    };
                    let group = &d.dots.groups[k];
                    // Values not stored where made (inputs, made where first read).
                    for &m in &group.members {
                        for &v in &d.dots.dots[m].values {
                            self.store_value(&mut st, d, &mut stored, v);
                        }
                    }
                    let starts: Vec<Value> = group
                        .members
                        .iter()
                        .map(|&m| self.scalar_of(&mut st, d.dots.dots[m].start))
                        .collect();
                    let sums = self.dot_group(d.dots, group, &starts, d.memory, &mut st.table);
                    for (&m, v) in group.members.iter().zip(sums) {
                        if let Some(l) = d.dots.dots[m].links.last() {
                            st.scalar[l.index()] = Some(v);
                        }
                    }
                    continue;
                }
            };
            if !range.contains(&id.index()) {
                continue;
            }
            let Node::Apply(op, args) = *g.node(id) else {
                continue;
            };

            if let Some(hi) = packs.partner(id) {
                let Node::Apply(_, other) = *g.node(hi) else {
                    continue;
                };
                let mut x = [None; 3];
                for k in 0..op.arity() {
                    x[k] = Some(self.vector_of(&mut st, args[k], other[k]));
                }
                let (ty, width) = (self.ty, self.width);
                (self.ty, self.width) = (types::F64X2, 2);
                let v = self.apply(op, x, exponent(g, op, &args));
                (self.ty, self.width) = (ty, width);
                st.vector[id.index()] = Some(v);
                match st
                    .part
                    .map(|p| (p.plan.slot[id.index()], p.plan.slot[hi.index()], p))
                {
                    Some((lo, high, p)) if lo != Plan::NONE && high == lo + 1 => {
                        let at = offset(lo as usize, 8);
                        self.b.ins().store(data(), v, p.scratch, at);
                        count_scratch_pair(0);
                    }
                    _ => {
                        self.keep(&mut st, id);
                        self.keep(&mut st, hi);
                    }
                }
                if let Some(d) = dots {
                    self.store_value(&mut st, d, &mut stored, id);
                    self.store_value(&mut st, d, &mut stored, hi);
                }
                continue;
            }
            let v = match op {
                Op::Pack => self.constant(f64::NAN),
                Op::Call if g.is_packed_call(id) => {
                    let tag = self.scalar_of(&mut st, args[0]);
                    let leaves: Vec<Value> = g
                        .call_args(id)
                        .map(|a| self.scalar_of(&mut st, a))
                        .collect();
                    self.call_n(tag, &leaves)
                }
                _ => {
                    let mut x = [None; 3];
                    for (k, &a) in args[..op.arity()].iter().enumerate() {
                        x[k] = Some(self.scalar_of(&mut st, a));
                    }
                    self.apply(op, x, exponent(g, op, &args))
                }
            };
            st.scalar[id.index()] = Some(v);
            self.keep(&mut st, id);
            if let Some(d) = dots {
                self.store_value(&mut st, d, &mut stored, id);
            }
        }
        let outs = &lane.outputs;
        let mut k = 0;
        while k < outs.len() {
            let o = outs[k];
            if !range.contains(&o.index()) {
                k += 1;
                continue;
            }
            if let (Some(&next), Some(v)) = (outs.get(k + 1), st.vector[o.index()]) {
                if packs.partner(o) == Some(next) {
                    self.b.ins().store(data(), v, outputs, offset(k, 8));
                    k += 2;
                    continue;
                }
            }
            let v = self.scalar_of(&mut st, o);
            self.b.ins().store(data(), v, outputs, offset(k, 8));
            k += 1;
        }
        st.table
    }

    /// Stores node `id` (made, or a leaf made now) to its slot in the dots' scratch if a
    /// dot loop reads it and it is not `stored` there yet.
    fn store_value(
        &mut self,
        st: &mut Paired<'_>,
        dots: DotSteps<'_>,
        stored: &mut [bool],
        id: NodeId,
    ) {
        if dots.dots.slot_of(id).is_none() {
            return;
        }
        if !std::mem::replace(&mut stored[id.index()], true) {
            let v = self.scalar_of(st, id);
            self.store_to_slot(dots.dots, dots.memory, id, v);
        }
    }

    /// Stores `v`, node `id`'s value, to its slot in the dots' scratch if a dot loop
    /// reads it there ([`Dots::slot_of`]).
    fn store_to_slot(&mut self, dots: &Dots, memory: DotMemory, id: NodeId, v: Value) {
        if let Some(slot) = dots.slot_of(id) {
            let at = offset(slot, 8);
            self.b.ins().store(data(), v, memory.scratch, at);
        }
    }

    /// In a segment, stores node `id` (just made) to its scratch slot if a later segment
    /// reads it.
    fn keep(&mut self, st: &mut Paired<'_>, id: NodeId) {
        let Some(p) = st.part else { return };
        let slot = p.plan.slot[id.index()];
        if slot != Plan::NONE {
            let v = self.scalar_of(st, id);
            self.b
                .ins()
                .store(data(), v, p.scratch, offset(slot as usize, 8));
        }
    }

    /// Node `id` as a scalar where [`Emit::packed`] has reached: a leaf made or loaded at
    /// its first read, a paired node's lane extracted at its first scalar read.
    fn scalar_of(&mut self, st: &mut Paired<'_>, id: NodeId) -> Value {
        if let Some(v) = st.scalar[id.index()] {
            return v;
        }
        let v = match *st.lane.graph.node(id) {
            Node::Const(c) => self.constant(c.value()),
            Node::Symbol(_) | Node::Seed(_) => {
                let k = input_slot(st.lane, id).unwrap_or_else(|| unreachable!("an input"));
                self.b
                    .ins()
                    .load(types::F64, unchanging(), st.inputs, offset(k, 8))
            }
            Node::Apply(..) if id.index() < st.start => {
                let Some(p) = st.part else {
                    unreachable!("only a segment starts after node 0")
                };
                // No segment writes a slot it reads (a slot is written by the segment
                // that makes its value, read by later ones): unchanging while this runs.
                let at = offset(p.plan.slot[id.index()] as usize, 8);
                self.b.ins().load(types::F64, unchanging(), p.scratch, at)
            }
            Node::Apply(..) => {
                let lane = st.packs.lane(id);
                let low = if lane == 0 {
                    id
                } else {
                    st.packs
                        .partner(id)
                        .unwrap_or_else(|| unreachable!("a high lane has a partner"))
                };
                let v = st.vector[low.index()]
                    .unwrap_or_else(|| unreachable!("a pair is emitted before its readers"));
                self.b.ins().extractlane(v, lane)
            }
        };
        st.scalar[id.index()] = Some(v);
        v
    }

    /// The `f64x2` value holding `p` in lane 0 and `q` in lane 1: the pair itself when
    /// they are one in that order; two constants loaded from a new entry of the kernel's
    /// table; else built once and kept: one load of two adjacent inputs, a splat
    /// (`p == q`), or the two scalars put together.
    fn vector_of(&mut self, st: &mut Paired<'_>, p: NodeId, q: NodeId) -> Value {
        if st.packs.partner(p) == Some(q) && st.packs.lane(p) == 0 {
            if let Some(v) = st.vector[p.index()] {
                return v;
            }
        }
        let g = &st.lane.graph;
        if let (Some(a), Some(c)) = (g.constant_of(p), g.constant_of(q)) {
            let Some(consts) = st.consts else {
                // A segment has no table: a constant of its own code.
                let mut bytes = a.to_le_bytes().to_vec();
                bytes.extend_from_slice(&c.to_le_bytes());
                let h = self.b.func.dfg.constants.insert(bytes.into());
                return self.b.ins().vconst(types::F64X2, h);
            };
            // Its own entry: a load read twice is not folded, and would stay live.
            let at = st.table.len();
            st.table.extend([a, c]);
            return self
                .b
                .ins()
                .load(types::F64X2, unchanging(), consts, offset(at, 8));
        }
        let key = (p.index() as u32, q.index() as u32);
        if let Some(&v) = st.built.get(&key) {
            return v;
        }
        // Two values of earlier segments in adjacent scratch slots ([`Plan::pair_slots`]).
        let scratch_pair = st.part.and_then(|part| {
            let (a, c) = (part.plan.slot[p.index()], part.plan.slot[q.index()]);
            let earlier = p.index() < st.start && q.index() < st.start;
            (earlier && a != Plan::NONE && c == a + 1).then_some((part.scratch, a as usize))
        });
        let v = match (input_slot(st.lane, p), input_slot(st.lane, q), scratch_pair) {
            (_, _, Some((scratch, a))) => {
                count_scratch_pair(1);
                self.b
                    .ins()
                    .load(types::F64X2, unchanging(), scratch, offset(a, 8))
            }
            (Some(s), Some(t), None) if t == s + 1 => {
                self.b
                    .ins()
                    .load(types::F64X2, unchanging(), st.inputs, offset(s, 8))
            }
            _ if p == q => {
                let x = self.scalar_of(st, p);
                self.b.ins().splat(types::F64X2, x)
            }
            _ => {
                let lo = self.scalar_of(st, p);
                let hi = self.scalar_of(st, q);
                let v = self.b.ins().splat(types::F64X2, lo);
                self.b.ins().insertlane(v, hi, 1)
            }
        };
        st.built.insert(key, v);
        v
    }

    /// `op` of the operands `x` (the first `op.arity()` present); `exponent` is the second
    /// argument's constant value, if any.
    fn apply(&mut self, op: Op, x: [Option<Value>; 3], exponent: Option<f64>) -> Value {
        let arg = |k: usize| x[k].unwrap_or_else(|| unreachable!("arity"));
        match op.arity() {
            1 => self.unary(op, arg(0)),
            2 => self.binary(op, arg(0), arg(1), exponent),
            _ => self.ternary(op, arg(0), arg(1), arg(2)),
        }
    }

    /// Node `id`'s value where the code outside loops has reached: made now if a leaf,
    /// loaded from its run's area if an earlier copy of a run.
    fn value_of(&mut self, st: &mut Rolled<'_>, id: NodeId) -> Value {
        if let Some(v) = st.vals[id.index()] {
            return v;
        }
        let v = match *st.lane.graph.node(id) {
            Node::Const(c) => self.constant(c.value()),
            Node::Symbol(s) => self.load(st.inputs, s.index()),
            Node::Seed(s) => self.load(st.inputs, st.lane.seed_base() + s.index()),
            Node::Apply(..) => {
                let r = st.run_of[id.index()] as usize;
                let run = &st.rolls.runs[r];
                let rel = st.rolls.at[id.index()] as usize - run.first;
                debug_assert!(st.stored[r][rel % run.period]);
                let area = st.areas[r]
                    .unwrap_or_else(|| unreachable!("a value read outside its run is stored"));
                let at = area + offset(rel, 8);
                self.b.ins().load(types::F64, data(), st.scratch, at)
            }
        };
        st.vals[id.index()] = Some(v);
        v
    }

    /// Emits run `r` as a loop, leaving the builder after it.
    fn run(&mut self, st: &mut Rolled<'_>, r: usize) {
        let g = &st.lane.graph;
        let rolls = st.rolls;
        let run = &rolls.runs[r];
        let (p, copies) = (run.period, run.copies);
        // Before the loop: what every copy reads, what copy 0 carries in, the streams.
        let mut same: HashMap<NodeId, Value> = HashMap::new();
        let mut carried: Vec<u32> = Vec::new();
        let mut streams: HashMap<(usize, usize), (Value, i32, i64)> = HashMap::new();
        let mut by_nodes: HashMap<Vec<NodeId>, (Value, i32, i64)> = HashMap::new();
        for (j, args) in run.args.iter().enumerate() {
            for (k, a) in args.iter().enumerate() {
                match *a {
                    Arg::Same(n) => {
                        let v = self.value_of(st, n);
                        same.insert(n, v);
                    }
                    Arg::Carried(i) if !carried.contains(&i) => carried.push(i),
                    Arg::Stream => {
                        let nodes: Vec<NodeId> = (0..copies)
                            .map(|c| g.node(rolls.node(run, c, j)).args()[k])
                            .collect();
                        let src = match by_nodes.get(&nodes) {
                            Some(&s) => s,
                            None => {
                                let s = self.stream(st, &nodes);
                                by_nodes.insert(nodes, s);
                                s
                            }
                        };
                        streams.insert((j, k), src);
                    }
                    _ => {}
                }
            }
        }
        let init: Vec<BlockArg> = carried
            .iter()
            .map(|&i| {
                let n = rolls.ops[run.first + i as usize - p];
                BlockArg::Value(self.value_of(st, n))
            })
            .collect();
        let area = (st.stored[r].contains(&true) || run.tail > 0).then(|| {
            let at = st.area(copies * p + run.tail);
            st.areas[r] = Some(at);
            self.b.ins().iadd_imm_s(st.scratch, i64::from(at))
        });
        let lp = Loop {
            same,
            carried,
            streams,
            area,
        };
        let way = self.pairing(st, r, &lp);
        let step = if way.is_some() { 2 } else { 1 };
        let same_pairs: HashMap<NodeId, Value> = match way {
            Some(_) => lp
                .same
                .iter()
                .map(|(&n, &v)| (n, self.b.ins().splat(types::F64X2, v)))
                .collect(),
            None => HashMap::new(),
        };
        let body = self.b.create_block();
        let c = self.b.append_block_param(body, self.ptr);
        let params: Vec<Value> = lp
            .carried
            .iter()
            .map(|_| self.b.append_block_param(body, types::F64))
            .collect();
        let zero = self.b.ins().iconst(self.ptr, 0);
        let mut first = vec![BlockArg::Value(zero)];
        first.extend(init);
        self.b.ins().jump(body, &first);
        // The body: copy `c`, or copies `c` and `c + 1`.
        self.b.switch_to_block(body);
        let mut at = Steps::new(c);
        let last = match &way {
            Some(way) => self.copy_pair(st, r, &lp, way, &same_pairs, &mut at, &params),
            None => self.copy(st, r, &lp, &mut at, &params),
        };
        let made = |vals: &[Option<Value>], j: usize| {
            vals[j].unwrap_or_else(|| unreachable!("every operation of a copy is made"))
        };
        let next = self.b.ins().iadd_imm_s(c, step as i64);
        let whole = (copies - copies % step) as i64;
        let done = self.b.ins().icmp_imm_s(IntCC::Equal, next, whole);
        let exit = self.b.create_block();
        let mut again = vec![BlockArg::Value(next)];
        again.extend(
            lp.carried
                .iter()
                .map(|&i| BlockArg::Value(made(&last, i as usize))),
        );
        self.b.ins().brif(done, exit, &[], body, &again);
        self.b.switch_to_block(exit);
        // An odd copy left over: straight-line, after the loop.
        let last = if copies % step == 0 {
            last
        } else {
            let carried_in: Vec<Value> = lp
                .carried
                .iter()
                .map(|&i| made(&last, i as usize))
                .collect();
            let c = self.b.ins().iconst(self.ptr, (copies - 1) as i64);
            self.copy(st, r, &lp, &mut Steps::new(c), &carried_in)
        };
        // The last copy's values, from the loop (its body dominates what follows).
        for j in 0..p {
            st.vals[rolls.node(run, copies - 1, j).index()] = Some(made(&last, j));
        }
    }

    /// Emits copy `c` of run `r` as scalars (`c` is `at`'s copy index), reading `Carried`
    /// arguments from `carried_in` (in [`Loop::carried`]'s order), with its stores.
    /// Answers its operations' values.
    fn copy(
        &mut self,
        st: &mut Rolled<'_>,
        r: usize,
        lp: &Loop,
        at: &mut Steps,
        carried_in: &[Value],
    ) -> Vec<Option<Value>> {
        let period = st.rolls.runs[r].period;
        let mut vals = vec![None; period];
        for j in 0..period {
            let v = self.copy_op(st, r, lp, at, (0, carried_in), &vals, j);
            self.store_op(st, r, lp, at, (0, j), v);
            vals[j] = Some(v);
        }
        vals
    }

    /// Emits copies `c` and `c + 1` of run `r` as `way` says ([`Pairing`]): first the
    /// operations that carry nothing in template order, each an `f64x2` operation (copy
    /// `c` in lane 0) or, for those that call a function, a scalar per copy; then the
    /// carried ones, copy `c` before copy `c + 1`, each copy's in template order: every
    /// value is the same operation on the same operands as in a one-copy loop, and a
    /// running sum still takes its terms copy by copy. Arguments every copy reads are
    /// `same_pairs`' splats; a stream is one load where the two copies' entries are
    /// adjacent and two otherwise. Answers copy `c + 1`'s values.
    #[allow(clippy::too_many_arguments)]
    fn copy_pair(
        &mut self,
        st: &mut Rolled<'_>,
        r: usize,
        lp: &Loop,
        way: &Pairing,
        same_pairs: &HashMap<NodeId, Value>,
        at: &mut Steps,
        params: &[Value],
    ) -> Vec<Option<Value>> {
        let g = &st.lane.graph;
        let rolls = st.rolls;
        let run = &rolls.runs[r];
        let p = run.period;
        let mut pairs: Vec<Option<Value>> = vec![None; p];
        let mut lanes = [vec![None; p], vec![None; p]];
        // Lane `k` of position `i`, extracted from its vector at the first scalar read.
        let lane = |e: &mut Self,
                    pairs: &[Option<Value>],
                    lanes: &mut [Vec<Option<Value>>; 2],
                    i: usize,
                    k: usize| {
            if lanes[k][i].is_none() {
                let v = pairs[i].unwrap_or_else(|| unreachable!("made before its readers"));
                lanes[k][i] = Some(e.b.ins().extractlane(v, k as u8));
            }
        };
        for j in (0..p).filter(|&j| !way.carried[j]) {
            let Node::Apply(op, a0) = *g.node(rolls.node(run, 0, j)) else {
                unreachable!("a run holds operations")
            };
            if !way.packed[j] {
                for k in 0..2 {
                    for a in &run.args[j][..op.arity()] {
                        if let Arg::Internal(i) = *a {
                            lane(self, &pairs, &mut lanes, i as usize, k);
                        }
                    }
                    let v = self.copy_op(st, r, lp, at, (k as i64, &[]), &lanes[k], j);
                    lanes[k][j] = Some(v);
                }
                continue;
            }
            let mut x = [None; 3];
            for (k, slot) in x.iter_mut().enumerate().take(op.arity()) {
                *slot = Some(match run.args[j][k] {
                    Arg::Internal(i) => {
                        let i = i as usize;
                        if pairs[i].is_none() {
                            let two = [lanes[0][i], lanes[1][i]]
                                .map(|v| v.unwrap_or_else(|| unreachable!("made")));
                            pairs[i] = Some(self.vector_from_lanes(types::F64X2, &two));
                        }
                        pairs[i].unwrap_or_else(|| unreachable!("made"))
                    }
                    Arg::Same(n) => same_pairs[&n],
                    Arg::Stream => {
                        let (base, off, stride) = lp.streams[&(j, k)];
                        let addr = at.address(self, base, stride);
                        if stride == 8 {
                            self.b.ins().load(types::F64X2, data(), addr, off)
                        } else {
                            let lo = self.b.ins().load(types::F64, data(), addr, off);
                            let (addr, off) = self.shifted(addr, off, stride);
                            let hi = self.b.ins().load(types::F64, data(), addr, off);
                            self.vector_from_lanes(types::F64X2, &[lo, hi])
                        }
                    }
                    Arg::Carried(_) | Arg::None => unreachable!("carries nothing; arity"),
                });
            }
            let (ty, width) = (self.ty, self.width);
            (self.ty, self.width) = (types::F64X2, 2);
            pairs[j] = Some(self.apply(op, x, exponent(g, op, &a0)));
            (self.ty, self.width) = (ty, width);
        }
        for k in 0..2 {
            for j in (0..p).filter(|&j| !way.carried[j]) {
                lane(self, &pairs, &mut lanes, j, k);
            }
        }
        let [mut low, mut high] = lanes;
        for j in (0..p).filter(|&j| way.carried[j]) {
            low[j] = Some(self.copy_op(st, r, lp, at, (0, params), &low, j));
        }
        let from_low: Vec<Value> = lp
            .carried
            .iter()
            .map(|&i| low[i as usize].unwrap_or_else(|| unreachable!("made")))
            .collect();
        for j in (0..p).filter(|&j| way.carried[j]) {
            high[j] = Some(self.copy_op(st, r, lp, at, (1, &from_low), &high, j));
        }
        self.store_copy(st, r, lp, at, 0, &low);
        self.store_copy(st, r, lp, at, 1, &high);
        high
    }

    /// Emits operation `j` of copy `c + delta` of run `r` as a scalar (`c` is `at`'s copy
    /// index, `(delta, carried_in)` is `copy`), reading `Internal` arguments from `vals`
    /// and `Carried` ones from `carried_in` (in [`Loop::carried`]'s order).
    #[allow(clippy::too_many_arguments)]
    fn copy_op(
        &mut self,
        st: &mut Rolled<'_>,
        r: usize,
        lp: &Loop,
        at: &mut Steps,
        copy: (i64, &[Value]),
        vals: &[Option<Value>],
        j: usize,
    ) -> Value {
        let (delta, carried_in) = copy;
        let g = &st.lane.graph;
        let rolls = st.rolls;
        let run = &rolls.runs[r];
        let Node::Apply(op, a0) = *g.node(rolls.node(run, 0, j)) else {
            unreachable!("a run holds operations")
        };
        let mut x = [None; 3];
        for (k, slot) in x.iter_mut().enumerate().take(op.arity()) {
            *slot = Some(match run.args[j][k] {
                Arg::Internal(i) => {
                    vals[i as usize].unwrap_or_else(|| unreachable!("an earlier operation"))
                }
                Arg::Carried(i) => {
                    let q = lp.carried.iter().position(|&q| q == i);
                    carried_in[q.unwrap_or_else(|| unreachable!("carried"))]
                }
                Arg::Same(n) => lp.same[&n],
                Arg::Stream => {
                    let (base, off, stride) = lp.streams[&(j, k)];
                    let addr = at.address(self, base, stride);
                    let (addr, off) = self.shifted(addr, off, delta * stride);
                    self.b.ins().load(types::F64, data(), addr, off)
                }
                Arg::None => unreachable!("arity"),
            });
        }
        self.apply(op, x, exponent(g, op, &a0))
    }

    /// Stores the values `vals` of copy `c + delta` of run `r` where its loop keeps them
    /// ([`Emit::store_op`]).
    fn store_copy(
        &mut self,
        st: &mut Rolled<'_>,
        r: usize,
        lp: &Loop,
        at: &mut Steps,
        delta: i64,
        vals: &[Option<Value>],
    ) {
        for (j, v) in vals.iter().enumerate() {
            let v = v.unwrap_or_else(|| unreachable!("every operation of a copy is made"));
            self.store_op(st, r, lp, at, (delta, j), v);
        }
    }

    /// Stores `v`, operation `j` of copy `c + delta` of run `r` (`at` holds `c`;
    /// `place` is `(delta, j)`), where its loop keeps it: its run's area, and the outputs
    /// the loop writes itself.
    fn store_op(
        &mut self,
        st: &mut Rolled<'_>,
        r: usize,
        lp: &Loop,
        at: &mut Steps,
        place: (i64, usize),
        v: Value,
    ) {
        let (delta, j) = place;
        if let (Some(area), true) = (lp.area, st.stored[r][j]) {
            let stride = 8 * st.rolls.runs[r].period as i64;
            let addr = at.address(self, area, stride);
            let (addr, off) = self.shifted(addr, offset(j, 8), delta * stride);
            self.b.ins().store(data(), v, addr, off);
        }
        if let Some((off, stride)) = st.direct[r][j] {
            let addr = at.address(self, st.outputs, stride);
            let (addr, off) = self.shifted(addr, off, delta * stride);
            self.b.ins().store(data(), v, addr, off);
        }
    }

    /// Whether run `r`'s loop takes two copies an iteration, and how ([`Pairing`]): by
    /// [`PAIRING`], when its template has an operation to pair.
    fn pairing(&mut self, st: &Rolled<'_>, r: usize, lp: &Loop) -> Option<Pairing> {
        let strides = |j: usize, k: usize| lp.streams[&(j, k)].2;
        let (pairing, gain) = Pairing::new(st, r, strides, self.fma);
        let pays = match PAIRING {
            PairRule::Gain => gain > 0.0,
            PairRule::Parity => r.is_multiple_of(2),
        };
        count_loop(pays && pairing.packed.contains(&true));
        (pays && pairing.packed.contains(&true)).then_some(pairing)
    }

    /// `addr` and `off + by` as a load's address and offset: the offset alone when the sum
    /// fits an `i32`, else `by` added to the address.
    fn shifted(&mut self, addr: Value, off: i32, by: i64) -> (Value, i32) {
        match i32::try_from(i64::from(off) + by) {
            Ok(o) => (addr, o),
            Err(_) => (self.b.ins().iadd_imm_s(addr, by), off),
        }
    }

    /// Where a loop reads the stream `nodes` (one node per copy): `(base, offset, stride)`,
    /// entry `c` at `base + offset + c·stride` bytes. Inputs at evenly spaced places are
    /// read from the input block, values an earlier run stored at evenly spaced copies from
    /// its area; anything else is copied to a new area here.
    fn stream(&mut self, st: &mut Rolled<'_>, nodes: &[NodeId]) -> (Value, i32, i64) {
        let g = &st.lane.graph;
        let input = |n: NodeId| match *g.node(n) {
            Node::Symbol(s) => Some(s.index() as i64),
            Node::Seed(s) => Some((st.lane.seed_base() + s.index()) as i64),
            _ => None,
        };
        let even = |k: &[Option<i64>]| -> Option<(i64, i64)> {
            let first = k[0]?;
            let d = k.get(1).copied().flatten()? - first;
            k.iter()
                .enumerate()
                .all(|(c, x)| *x == Some(first + c as i64 * d))
                .then_some((first, d))
        };
        let places: Vec<Option<i64>> = nodes.iter().map(|&n| input(n)).collect();
        if let Some((first, d)) = even(&places) {
            if let Ok(off) = i32::try_from(first * 8) {
                return (st.inputs, off, d * 8);
            }
        }
        // Values one earlier run stored, evenly spaced in its area.
        let place = |n: NodeId| -> Option<(u32, i64)> {
            let r = st.run_of[n.index()];
            if r == Rolled::NONE {
                return None;
            }
            let run = &st.rolls.runs[r as usize];
            let rel = st.rolls.at[n.index()] as usize - run.first;
            st.stored[r as usize][rel % run.period].then_some((r, rel as i64))
        };
        let place = |n: NodeId| -> Option<(u32, i64)> {
            let r = st.tail_of[n.index()];
            if r == Rolled::NONE {
                return place(n);
            }
            let rel = st.rolls.at[n.index()] as usize - st.rolls.runs[r as usize].first;
            Some((r, rel as i64))
        };
        if let Some((r, _)) = place(nodes[0]) {
            let entries: Vec<Option<i64>> = nodes
                .iter()
                .map(|&n| place(n).filter(|q| q.0 == r).map(|q| q.1))
                .collect();
            if let (Some((c0, d)), Some(area)) = (even(&entries), st.areas[r as usize]) {
                if let Some(off) = i32::try_from(c0 * 8).ok().and_then(|o| o.checked_add(area)) {
                    return (st.scratch, off, d * 8);
                }
            }
        }
        // Constants: read in place from the kernel's table, each stream stored there once.
        let bits: Option<Vec<u64>> = nodes
            .iter()
            .map(|&n| match *g.node(n) {
                Node::Const(c) => Some(c.value().to_bits()),
                _ => None,
            })
            .collect();
        if let Some(bits) = bits {
            let at = match st.tabled.get(&bits) {
                Some(&at) => at,
                None => {
                    let at = st.table.len();
                    st.table.extend(bits.iter().map(|&b| f64::from_bits(b)));
                    st.tabled.insert(bits, at);
                    at
                }
            };
            if let Ok(off) = i32::try_from(at * 8) {
                return (st.consts, off, 8);
            }
        }
        let area = st.area(nodes.len());
        for (c, &n) in nodes.iter().enumerate() {
            let v = self.value_of(st, n);
            self.b
                .ins()
                .store(data(), v, st.scratch, area + offset(c, 8));
        }
        (st.scratch, area, 8)
    }

    /// The `f64x2` of the values at slots `lo` and `hi` (8-byte slots from `base`, `at`
    /// slots further): one load splatted where they are one slot, one 16-byte load where
    /// they are adjacent, else the two values `scalar` loads (given a slot) put together.
    fn slot_pair(
        &mut self,
        flags: MemFlagsData,
        base: Value,
        at: i64,
        (lo, hi): (i64, i64),
        scalar: &mut impl FnMut(&mut Self, i64) -> Value,
    ) -> Value {
        if lo == hi {
            let v = scalar(self, lo);
            self.b.ins().splat(types::F64X2, v)
        } else if hi == lo + 1 {
            self.b
                .ins()
                .load(types::F64X2, flags, base, slot_byte(lo + at))
        } else {
            let (a, b) = (scalar(self, lo), scalar(self, hi));
            self.vector_from_lanes(types::F64X2, &[a, b])
        }
    }

    /// The values of `group`'s dots (see [`dots`]) from their running values `starts`,
    /// by one loop. Members go in pairs, one `f64x2` sum each (lane 0 the first's), the
    /// last alone where their number is odd. Each member's first `len − group.steps`
    /// links are straight-line: a pair's last `min` of them in the pair's lanes (aligned
    /// at their ends, where the loop takes over; the two weights one entry pair of
    /// `table`), the longer member's extra first ones and a lone member's scalar (weights
    /// as immediates). Then `group.steps / UNROLL` iterations each make
    /// [`dots::UNROLL`] links of every member, one pointer stepping through the values
    /// (the lane's inputs, or the scratch where the members' values of operations were
    /// stored; the members share a stride; each reads at its own offset from it) and one
    /// through the weights, appended to `table` (the kernel's constant table,
    /// `memory.consts` at run time) link by link, member by member. A pair's two values
    /// are one load wherever they are one slot or adjacent slots. Every link makes its
    /// product and its sum as its nodes do, operands in their order (the members share
    /// their sides), each lane of a vector operation is that IEEE operation, and each
    /// member's links run in order, so each sum is the straight-line code's to the bit.
    fn dot_group(
        &mut self,
        dots: &Dots,
        group: &dots::Group,
        starts: &[Value],
        memory: DotMemory,
        table: &mut Vec<f64>,
    ) -> Vec<Value> {
        let DotMemory {
            inputs,
            scratch,
            consts,
        } = memory;
        #[cfg(test)]
        DOT_GROUPS.set(DOT_GROUPS.get() + 1);
        let members: Vec<&Dot> = group.members.iter().map(|&m| &dots.dots[m]).collect();
        // Values of operations from the scratch, which this kernel writes (so no load of
        // it is read-only or moved); inputs from the lane's inputs.
        let (values, flags) = if members[0].values.is_empty() {
            (inputs, unchanging())
        } else {
            (scratch, data())
        };
        // One link: its product and its sum, at the type of its operands.
        let (weight_second, term_second) = (members[0].weight_second, members[0].term_second);
        let link = |e: &mut Self, s: Value, x: Value, w: Value| {
            let p = if weight_second {
                e.b.ins().fmul(x, w)
            } else {
                e.b.ins().fmul(w, x)
            };
            if term_second {
                e.b.ins().fadd(s, p)
            } else {
                e.b.ins().fadd(p, s)
            }
        };
        let slot = |dot: &Dot, k: usize| dot.slot as i64 + k as i64 * dot.stride;
        let byte = slot_byte;
        let steps = group.steps;
        let mut sums = starts.to_vec();
        // Members in pairs, an `f64x2` sum each (lane 0 the first member's), the last
        // alone where their number is odd.
        let chunks: Vec<(usize, usize)> = (0..members.len())
            .step_by(2)
            .map(|m| (m, (m + 2).min(members.len())))
            .collect();
        // Link `k` of `dot` before the loop, scalar.
        // A value before the loop.
        let scalar = |e: &mut Self, k: i64| e.b.ins().load(types::F64, data(), values, byte(k));
        let alone = |e: &mut Self, s: Value, dot: &Dot, k: usize| {
            count_prefix_link(None);
            let x = scalar(e, slot(dot, k));
            let w = e.constant(dot.weights[k]);
            link(e, s, x, w)
        };
        // Each member's first links, straight-line: a pair's last ones together, lane by
        // lane (aligned at their ends, where the loop takes over), the longer member's
        // extra first ones alone; each value one load where the pair's two are one slot
        // or adjacent, the two weights one load from `table`.
        let mut entry_sums = Vec::with_capacity(chunks.len());
        for &(m, e) in &chunks {
            if e - m == 1 {
                for k in 0..members[m].links.len() - steps {
                    sums[m] = alone(self, sums[m], members[m], k);
                }
                entry_sums.push(sums[m]);
                continue;
            }
            let (a, b) = (members[m], members[m + 1]);
            let (pa, pb) = (a.links.len() - steps, b.links.len() - steps);
            let both = pa.min(pb);
            for k in 0..pa - both {
                sums[m] = alone(self, sums[m], a, k);
            }
            for k in 0..pb - both {
                sums[m + 1] = alone(self, sums[m + 1], b, k);
            }
            let mut v = self.vector_from_lanes(types::F64X2, &sums[m..e]);
            for r in 0..both {
                let (ka, kb) = (pa - both + r, pb - both + r);
                let (sa, sb) = (slot(a, ka), slot(b, kb));
                count_prefix_link(Some((sa, sb)));
                let x = self.slot_pair(data(), values, 0, (sa, sb), &mut |e, k| scalar(e, k));
                let at = table.len();
                table.extend([a.weights[ka], b.weights[kb]]);
                let w = self
                    .b
                    .ins()
                    .load(types::F64X2, unchanging(), consts, offset(at, 8));
                v = link(self, v, x, w);
            }
            entry_sums.push(v);
        }
        // The loop's weights, link by link, member by member.
        let at = table.len();
        for k in 0..steps {
            for dot in &members {
                table.push(dot.weights[dot.links.len() - steps + k]);
            }
        }
        let stride = members[0].stride;
        let base = slot(members[0], members[0].links.len() - steps);
        let offsets: Vec<i64> = members
            .iter()
            .map(|d| slot(d, d.links.len() - steps) - base)
            .collect();
        let px = self.b.ins().iadd_imm_s(values, base * 8);
        let pw = self.b.ins().iadd_imm_s(consts, (at * 8) as i64);
        let end = self
            .b
            .ins()
            .iadd_imm_s(consts, ((at + steps * members.len()) * 8) as i64);
        let head = self.b.create_block();
        let hx = self.b.append_block_param(head, self.ptr);
        let hw = self.b.append_block_param(head, self.ptr);
        let exit = self.b.create_block();
        let mut entry = vec![BlockArg::Value(px), BlockArg::Value(pw)];
        let mut running = Vec::with_capacity(chunks.len());
        let mut out = Vec::with_capacity(chunks.len());
        for (&(m, e), &v) in chunks.iter().zip(&entry_sums) {
            let ty = if e - m == 2 { types::F64X2 } else { types::F64 };
            entry.push(BlockArg::Value(v));
            running.push(self.b.append_block_param(head, ty));
            out.push(self.b.append_block_param(exit, ty));
        }
        self.b.ins().jump(head, &entry);
        self.b.switch_to_block(head);
        for t in 0..dots::UNROLL {
            // The inputs of link `t`: one load per distinct offset.
            let at = t as i64 * stride;
            let mut loaded: HashMap<i64, Value> = HashMap::new();
            let mut scalar = |e: &mut Self, off: i64| {
                *loaded
                    .entry(off)
                    .or_insert_with(|| e.b.ins().load(types::F64, flags, hx, byte(off + at)))
            };
            for (c, &(m, end)) in chunks.iter().enumerate() {
                let w_at = offset(t * members.len() + m, 8);
                let (x, w) = if end - m == 2 {
                    let pair = (offsets[m], offsets[m + 1]);
                    let x = self.slot_pair(flags, hx, at, pair, &mut scalar);
                    let w = self.b.ins().load(types::F64X2, unchanging(), hw, w_at);
                    (x, w)
                } else {
                    let x = scalar(self, offsets[m]);
                    let w = self.b.ins().load(types::F64, unchanging(), hw, w_at);
                    (x, w)
                };
                running[c] = link(self, running[c], x, w);
            }
        }
        let nx = self
            .b
            .ins()
            .iadd_imm_s(hx, dots::UNROLL as i64 * stride * 8);
        let nw = self
            .b
            .ins()
            .iadd_imm_s(hw, (dots::UNROLL * members.len() * 8) as i64);
        let more = self.b.ins().icmp(IntCC::UnsignedLessThan, nw, end);
        let mut again = vec![BlockArg::Value(nx), BlockArg::Value(nw)];
        again.extend(running.iter().map(|&s| BlockArg::Value(s)));
        let done: Vec<BlockArg> = running.iter().map(|&s| BlockArg::Value(s)).collect();
        self.b.ins().brif(more, head, &again, exit, &done);
        self.b.switch_to_block(exit);
        let mut sums = Vec::with_capacity(members.len());
        for (&(m, e), &v) in chunks.iter().zip(&out) {
            if e - m == 2 {
                sums.push(self.b.ins().extractlane(v, 0));
                sums.push(self.b.ins().extractlane(v, 1));
            } else {
                sums.push(v);
            }
        }
        sums
    }

    /// Emits segment `s` of `plan`: its nodes in order, reading earlier segments' values
    /// from `scratch` and the lane's inputs from `inputs` where first used, writing each
    /// value a later segment reads to its slot and each output it computes to `outputs`.
    fn segment(
        &mut self,
        lane: &Lane,
        plan: &Plan,
        s: usize,
        inputs: Value,
        outputs: Value,
        scratch: Value,
    ) {
        let g = &lane.graph;
        let range = plan.range(s);
        let start = range.start;
        let mut local: Vec<Value> = Vec::with_capacity(range.len());
        let mut earlier: std::collections::HashMap<usize, Value> = Default::default();
        for id in range.clone() {
            let v = match g.nodes()[id] {
                Node::Apply(Op::Pack, _) => self.constant(f64::NAN),
                Node::Apply(Op::Call, args) if g.is_packed_call(NodeId::from_index(id)) => {
                    let mut leaves: Vec<Value> = Vec::new();
                    for a in std::iter::once(args[0]).chain(g.call_args(NodeId::from_index(id))) {
                        let a = a.index();
                        leaves.push(if a >= start {
                            local[a - start]
                        } else if let Some(&v) = earlier.get(&a) {
                            v
                        } else {
                            let v = self.import(lane, plan, a, inputs, scratch);
                            earlier.insert(a, v);
                            v
                        });
                    }
                    self.call_n(leaves[0], &leaves[1..])
                }
                Node::Apply(op, args) => {
                    let mut vals = [None; 3];
                    for (k, a) in args[..op.arity()].iter().enumerate() {
                        let a = a.index();
                        vals[k] = Some(if a >= start {
                            local[a - start]
                        } else if let Some(&v) = earlier.get(&a) {
                            v
                        } else {
                            let v = self.import(lane, plan, a, inputs, scratch);
                            earlier.insert(a, v);
                            v
                        });
                    }
                    let arg = |k: usize| vals[k].unwrap_or_else(|| unreachable!("arity"));
                    match op.arity() {
                        1 => self.unary(op, arg(0)),
                        2 => {
                            let exponent = g.constant_of(args[1]);
                            self.binary(op, arg(0), arg(1), exponent)
                        }
                        _ => self.ternary(op, arg(0), arg(1), arg(2)),
                    }
                }
                _ => self.import(lane, plan, id, inputs, scratch),
            };
            if plan.slot[id] != Plan::NONE {
                let at = offset(plan.slot[id] as usize, 8);
                self.b.ins().store(data(), v, scratch, at);
            }
            local.push(v);
        }
        for (k, o) in lane.outputs.iter().enumerate() {
            if range.contains(&o.index()) {
                let v = local[o.index() - start];
                self.b.ins().store(data(), v, outputs, offset(k, 8));
            }
        }
    }

    /// Node `id` as a segment reads it without computing it: a constant, an input, or
    /// (an operation of an earlier segment) its scratch slot.
    fn import(
        &mut self,
        lane: &Lane,
        plan: &Plan,
        id: usize,
        inputs: Value,
        scratch: Value,
    ) -> Value {
        match lane.graph.nodes()[id] {
            Node::Const(c) => self.constant(c.value()),
            Node::Symbol(s) => self.load(inputs, s.index()),
            Node::Seed(s) => self.load(inputs, lane.seed_base() + s.index()),
            Node::Apply(..) => self.load(scratch, plan.slot[id] as usize),
        }
    }

    fn load(&mut self, base: Value, k: usize) -> Value {
        self.b.ins().load(types::F64, data(), base, offset(k, 8))
    }

    fn constant(&mut self, c: f64) -> Value {
        let s = self.b.ins().f64const(c);
        if self.width == 1 {
            s
        } else {
            self.b.ins().splat(self.ty, s)
        }
    }

    /// A compare's answer as a selector for [`Emit::pick`].
    fn cmp(&mut self, cc: FloatCC, a: Value, c: Value) -> Value {
        self.b.ins().fcmp(cc, a, c)
    }

    /// `if cond { t } else { f }`, lane by lane.
    fn pick(&mut self, cond: Value, t: Value, f: Value) -> Value {
        if self.width == 1 {
            self.b.ins().select(cond, t, f)
        } else {
            let mask = self.reinterpret(self.ty, cond);
            self.b.ins().bitselect(mask, t, f)
        }
    }

    /// `v`'s bits as a value of type `ty` (the same width), lane for lane.
    fn reinterpret(&mut self, ty: Type, v: Value) -> Value {
        let little = MemFlagsData::new().with_endianness(cranelift_codegen::ir::Endianness::Little);
        self.b.ins().bitcast(ty, little, v)
    }

    /// The vector of type `ty` whose lane `k` is `lanes[k]` (one value per point of this
    /// emitter's width, so at least two).
    fn vector_from_lanes(&mut self, ty: Type, lanes: &[Value]) -> Value {
        let Some((&first, rest)) = lanes.split_first() else {
            unreachable!("a vector has at least one lane")
        };
        let mut v = self.b.ins().splat(ty, first);
        for (k, &x) in rest.iter().enumerate() {
            v = self.b.ins().insertlane(v, x, k as u8 + 1);
        }
        v
    }

    /// The integer type of this emitter's width: `i64`, or `i64` lanes as many as its
    /// `f64` lanes.
    fn int_type(&self) -> Type {
        if self.width == 1 {
            types::I64
        } else {
            types::I64.by(u32::from(self.width)).unwrap_or(types::I64X2)
        }
    }

    /// The `f64x2` of `a`'s and `b`'s low lanes (`high`: high lanes), in that order
    /// (`punpcklqdq`, `punpckhqdq`).
    fn interleave(&mut self, a: Value, b: Value, high: bool) -> Value {
        let bytes = types::I8X16;
        let (a, b) = (self.reinterpret(bytes, a), self.reinterpret(bytes, b));
        let mask: Vec<u8> = if high {
            (8..16).chain(24..32).collect()
        } else {
            (0..8).chain(16..24).collect()
        };
        let mask = self.b.func.dfg.immediates.push(mask.as_slice().into());
        let v = self.b.ins().shuffle(a, b, mask);
        self.reinterpret(types::F64X2, v)
    }

    /// `truth(holds)`: `1.0` or `0.0`.
    fn truth(&mut self, holds: Value) -> Value {
        let (one, zero) = (self.constant(1.0), self.constant(0.0));
        self.pick(holds, one, zero)
    }

    fn unary(&mut self, op: Op, a: Value) -> Value {
        match op {
            Op::Neg => self.b.ins().fneg(a),
            Op::Abs => self.b.ins().fabs(a),
            Op::Sqrt => self.b.ins().sqrt(a),
            Op::Recip => {
                let one = self.constant(1.0);
                self.b.ins().fdiv(one, a)
            }
            Op::Sign => {
                // x > 0 → 1; x < 0 → -1; x == 0 → 0; NaN → x.
                let zero = self.constant(0.0);
                let is_zero = self.cmp(FloatCC::Equal, a, zero);
                let r = self.pick(is_zero, zero, a);
                let neg = self.cmp(FloatCC::LessThan, a, zero);
                let m1 = self.constant(-1.0);
                let r = self.pick(neg, m1, r);
                let pos = self.cmp(FloatCC::GreaterThan, a, zero);
                let p1 = self.constant(1.0);
                self.pick(pos, p1, r)
            }
            Op::Exp => self.exp(a),
            Op::Log if self.fma => self.log(a),
            _ => self.call(op, &[a]),
        }
    }

    /// [`ddx_ir::math::exp`] inline, in every lane: the same IEEE operations in the same
    /// order, so the same bits. Arguments off its plain path (`2⁻⁵⁴ ≤ |x| < 512`, tested as
    /// [`ddx_ir::math::exp_is_plain`] does) branch to a cold block that calls the table's
    /// `exp` lane by lane.
    fn exp(&mut self, x: Value) -> Value {
        use ddx_ir::math::{
            EXP_INV_LN2_N, EXP_NEG_LN2_HI_N, EXP_NEG_LN2_LO_N, EXP_PLAIN_MAX, EXP_PLAIN_MIN,
            EXP_POLY, EXP_SHIFT,
        };
        let int = self.int_type();
        // The reduction: k = round(x · 128/ln 2) in ki's low bits, r = x − k · ln2/128.
        let inv = self.constant(EXP_INV_LN2_N);
        let z = self.b.ins().fmul(x, inv);
        let shift = self.constant(EXP_SHIFT);
        let kd = self.b.ins().fadd(z, shift);
        let ki = self.reinterpret(int, kd);
        let kd = self.b.ins().fsub(kd, shift);
        let hi = self.constant(EXP_NEG_LN2_HI_N);
        let t = self.b.ins().fmul(kd, hi);
        let s = self.b.ins().fadd(x, t);
        let lo = self.constant(EXP_NEG_LN2_LO_N);
        let t = self.b.ins().fmul(kd, lo);
        let r = self.b.ins().fadd(s, t);
        // The table's pair for k mod 128, lane by lane.
        let base = self.b.ins().load(
            self.ptr,
            pointer_table(),
            self.table,
            offset(MathTable::EXP_TABLE, self.ptr.bytes() as usize),
        );
        // The address of the pair for `k` (an `i64`) mod 128.
        let pair_at = |e: &mut Self, k: Value| {
            let i = e.b.ins().band_imm_u(k, 127);
            let i = e.b.ins().ishl_imm_u(i, 4);
            let i = if e.ptr == types::I64 {
                i
            } else {
                e.b.ins().ireduce(e.ptr, i)
            };
            e.b.ins().iadd(base, i)
        };
        let entry = |e: &mut Self, k: Value| {
            let at = pair_at(e, k);
            let tail = e.b.ins().load(types::F64, pointer_table(), at, 0);
            let scale = e.b.ins().load(types::I64, pointer_table(), at, 8);
            (tail, scale)
        };
        let (tail, scale) = if self.width == 1 {
            entry(self, ki)
        } else if self.width == 2 {
            // Each lane's pair as one vector, (tail, scale), and the fields side by side
            // by interleaving them.
            let [p0, p1] = [0, 1].map(|lane| {
                let k = self.b.ins().extractlane(ki, lane);
                let at = pair_at(self, k);
                // Not `pointer_table()`'s flags: the table is aligned to 8 bytes only, and
                // a load flagged aligned may fold into an SSE instruction that needs 16.
                self.b.ins().load(types::F64X2, unchanging(), at, 0)
            });
            let tail = self.interleave(p0, p1, false);
            let scale = self.interleave(p0, p1, true);
            (tail, self.reinterpret(int, scale))
        } else {
            let (tails, scales): (Vec<Value>, Vec<Value>) = (0..self.width)
                .map(|lane| {
                    let k = self.b.ins().extractlane(ki, lane);
                    entry(self, k)
                })
                .unzip();
            (
                self.vector_from_lanes(self.ty, &tails),
                self.vector_from_lanes(int, &scales),
            )
        };
        let by = self.b.ins().iconst(types::I64, 45);
        let top = self.b.ins().ishl(ki, by);
        let scale = self.b.ins().iadd(scale, top);
        let scale = self.reinterpret(self.ty, scale);
        // tmp = tail + r + r²(c2 + r c3) + r⁴(c4 + r c5 + r² c6), left to right.
        let [c2, c3, c4, c5, c6] = EXP_POLY.map(|c| self.constant(c));
        let r2 = self.b.ins().fmul(r, r);
        let t = self.b.ins().fmul(r, c3);
        let p = self.b.ins().fadd(c2, t);
        let p = self.b.ins().fmul(r2, p);
        let t = self.b.ins().fmul(r, c5);
        let q = self.b.ins().fadd(c4, t);
        let t = self.b.ins().fmul(r2, c6);
        let q = self.b.ins().fadd(q, t);
        let r4 = self.b.ins().fmul(r2, r2);
        let q = self.b.ins().fmul(r4, q);
        let tmp = self.b.ins().fadd(tail, r);
        let tmp = self.b.ins().fadd(tmp, p);
        let tmp = self.b.ins().fadd(tmp, q);
        let y = self.b.ins().fmul(scale, tmp);
        let y = self.b.ins().fadd(scale, y);
        // Off the plain path in any lane: the table's exp, lane by lane.
        let a = self.b.ins().fabs(x);
        let min = self.constant(EXP_PLAIN_MIN);
        let max = self.constant(EXP_PLAIN_MAX);
        let ge = self.cmp(FloatCC::GreaterThanOrEqual, a, min);
        let lt = self.cmp(FloatCC::LessThan, a, max);
        let plain = self.b.ins().band(ge, lt);
        self.unless_off_path(Op::Exp, x, y, plain)
    }

    /// `y` where `plain` holds in every lane, else `op`'s function from the math table,
    /// lane by lane, in a cold block: inline math's way off its plain path.
    fn unless_off_path(&mut self, op: Op, x: Value, y: Value, plain: Value) -> Value {
        let plain = if self.width == 1 {
            plain
        } else {
            self.b.ins().vall_true(plain)
        };
        let special = self.b.create_block();
        let join = self.b.create_block();
        let out = self.b.append_block_param(join, self.ty);
        self.b.set_cold_block(special);
        self.b
            .ins()
            .brif(plain, join, &[BlockArg::Value(y)], special, &[]);
        self.b.switch_to_block(special);
        let called = self.call(op, &[x]);
        self.b.ins().jump(join, &[BlockArg::Value(called)]);
        self.b.switch_to_block(join);
        out
    }

    /// [`ddx_ir::math::log`] inline, in every lane, where the target has the fused
    /// multiply-add instruction (the caller checks): the same IEEE operations in the same
    /// order, so the same bits. Arguments off its plain path (positive, normal and finite,
    /// tested as [`ddx_ir::math::log_is_plain`] does) branch to a cold block that calls the
    /// table's `log` lane by lane.
    fn log(&mut self, x: Value) -> Value {
        use ddx_ir::math::{LOG_LN2_HI, LOG_LN2_LO, LOG_OFF, LOG_POLY};
        let int = self.int_type();
        let word = |e: &mut Self, v: u64| {
            let s = e.b.ins().iconst(types::I64, v as i64);
            if e.width == 1 {
                s
            } else {
                e.b.ins().splat(int, s)
            }
        };
        // x = 2^k · z by the bits: tmp = ix − LOG_OFF, k its top 12 bits (two's
        // complement), z's bits ix less k's.
        let ix = self.reinterpret(int, x);
        let off = word(self, LOG_OFF);
        let tmp = self.b.ins().isub(ix, off);
        // k as a double: its top bit flipped, k + 2048 sits in the low bits of
        // 2⁵² + k + 2048 (an integer subtraction leaves k; all exact, as `k as f64`).
        let flip = word(self, 1 << 63);
        let biased = self.b.ins().bxor(tmp, flip);
        let biased = self.b.ins().ushr_imm_u(biased, 52);
        let magic = word(self, 0x4330_0000_0000_0000);
        let kb = self.b.ins().bor(biased, magic);
        let kb = self.reinterpret(self.ty, kb);
        let bias = self.constant(f64::from_bits(0x4330_0000_0000_0800));
        let kd = self.b.ins().fsub(kb, bias);
        let top = word(self, 0xfff << 52);
        let high = self.b.ins().band(tmp, top);
        let iz = self.b.ins().isub(ix, high);
        let z = self.reinterpret(self.ty, iz);
        // The table's row for tmp's bits 45–51, lane by lane.
        let base = self.b.ins().load(
            self.ptr,
            pointer_table(),
            self.table,
            offset(MathTable::LOG_TABLE, self.ptr.bytes() as usize),
        );
        let row_at = |e: &mut Self, t: Value| {
            let i = e.b.ins().ushr_imm_u(t, 40);
            let i = e.b.ins().band_imm_u(i, 127 << 5);
            let i = if e.ptr == types::I64 {
                i
            } else {
                e.b.ins().ireduce(e.ptr, i)
            };
            e.b.ins().iadd(base, i)
        };
        let row = |e: &mut Self, t: Value| {
            let at = row_at(e, t);
            [0, 8, 16].map(|o| e.b.ins().load(types::F64, pointer_table(), at, o))
        };
        let [invc, logc_hi, logc_lo] = if self.width == 1 {
            row(self, tmp)
        } else if self.width == 2 {
            // Each lane's row as two vectors, (invc, logc_hi) and (logc_lo, 0), and the
            // fields side by side by interleaving them.
            let [[a0, b0], [a1, b1]] = [0, 1].map(|lane| {
                let t = self.b.ins().extractlane(tmp, lane);
                let at = row_at(self, t);
                // Not aligned to 16 bytes (see `exp`): `unchanging()`'s flags.
                [0, 16].map(|o| self.b.ins().load(types::F64X2, unchanging(), at, o))
            });
            [
                self.interleave(a0, a1, false),
                self.interleave(a0, a1, true),
                self.interleave(b0, b1, false),
            ]
        } else {
            let rows: Vec<[Value; 3]> = (0..self.width)
                .map(|lane| {
                    let t = self.b.ins().extractlane(tmp, lane);
                    row(self, t)
                })
                .collect();
            [0, 1, 2].map(|j| {
                let lanes: Vec<Value> = rows.iter().map(|r| r[j]).collect();
                self.vector_from_lanes(self.ty, &lanes)
            })
        };
        // The reduction, exact: r = z · invc − 1, w = k · ln2_hi + logc_hi, hi + lo = w + r.
        let m1 = self.constant(-1.0);
        let r = self.b.ins().fma(z, invc, m1);
        let ln2_hi = self.constant(LOG_LN2_HI);
        let w = self.b.ins().fma(kd, ln2_hi, logc_hi);
        let hi = self.b.ins().fadd(w, r);
        let d = self.b.ins().fsub(hi, w);
        let lo = self.b.ins().fsub(r, d);
        // q(r) by Estrin's scheme, then the small terms, then hi.
        let [c2, c3, c4, c5, c6, c7, c8] = LOG_POLY.map(|c| self.constant(c));
        let r2 = self.b.ins().fmul(r, r);
        let a = self.b.ins().fma(r, c3, c2);
        let b = self.b.ins().fma(r, c5, c4);
        let c = self.b.ins().fma(r, c7, c6);
        let u = self.b.ins().fma(r2, c8, c);
        let v = self.b.ins().fma(r2, b, a);
        let r4 = self.b.ins().fmul(r2, r2);
        let q = self.b.ins().fma(r4, u, v);
        let ln2_lo = self.constant(LOG_LN2_LO);
        let t = self.b.ins().fma(kd, ln2_lo, logc_lo);
        let t = self.b.ins().fadd(t, lo);
        let t = self.b.ins().fma(r2, q, t);
        let y = self.b.ins().fadd(hi, t);
        // Off the plain path in any lane: the table's log, lane by lane.
        let min = self.constant(f64::MIN_POSITIVE);
        let max = self.constant(f64::MAX);
        let ge = self.cmp(FloatCC::GreaterThanOrEqual, x, min);
        let le = self.cmp(FloatCC::LessThanOrEqual, x, max);
        let plain = self.b.ins().band(ge, le);
        self.unless_off_path(Op::Log, x, y, plain)
    }

    fn binary(&mut self, op: Op, a: Value, c: Value, exponent: Option<f64>) -> Value {
        match op {
            Op::Add => self.b.ins().fadd(a, c),
            Op::Sub => self.b.ins().fsub(a, c),
            Op::Mul => self.b.ins().fmul(a, c),
            Op::Div => self.b.ins().fdiv(a, c),
            Op::Max | Op::Min => {
                // max: b > a or a is NaN → b, else a (a tie answers a); min mirrors it.
                let cc = if op == Op::Max {
                    FloatCC::GreaterThan
                } else {
                    FloatCC::LessThan
                };
                let better = self.cmp(cc, c, a);
                let nan = self.cmp(FloatCC::Unordered, a, a);
                let take = self.b.ins().bor(better, nan);
                self.pick(take, c, a)
            }
            Op::Lt => self.compare(FloatCC::LessThan, a, c),
            Op::Le => self.compare(FloatCC::LessThanOrEqual, a, c),
            Op::Eq => self.compare(FloatCC::Equal, a, c),
            Op::Ne => {
                // `a < b || a > b`, as `math::ne`: NaN answers 0. (x86 has no vector
                // "ordered and unequal" compare.)
                let lt = self.cmp(FloatCC::LessThan, a, c);
                let gt = self.cmp(FloatCC::GreaterThan, a, c);
                let holds = self.b.ins().bor(lt, gt);
                self.truth(holds)
            }
            Op::Pow | Op::Powi if exponent == Some(2.0) => self.b.ins().fmul(a, a),
            Op::Pow | Op::Powi if exponent == Some(-1.0) => {
                let one = self.constant(1.0);
                self.b.ins().fdiv(one, a)
            }
            Op::Pow if exponent == Some(0.5) => {
                // `math::pow_half`: sqrt(a) + 0, and +inf at -inf.
                let r = self.b.ins().sqrt(a);
                let zero = self.constant(0.0);
                let r = self.b.ins().fadd(r, zero);
                let ninf = self.constant(f64::NEG_INFINITY);
                let at_ninf = self.cmp(FloatCC::Equal, a, ninf);
                let inf = self.constant(f64::INFINITY);
                self.pick(at_ninf, inf, r)
            }
            _ => self.call(op, &[a, c]),
        }
    }

    fn compare(&mut self, cc: FloatCC, a: Value, c: Value) -> Value {
        let holds = self.cmp(cc, a, c);
        self.truth(holds)
    }

    fn ternary(&mut self, op: Op, a: Value, c: Value, d: Value) -> Value {
        match op {
            Op::Select => {
                // c == 0 → f, else (nonzero or NaN) → t.
                let zero = self.constant(0.0);
                let off = self.cmp(FloatCC::Equal, a, zero);
                self.pick(off, d, c)
            }
            Op::Fma if self.fma => self.b.ins().fma(a, c, d),
            _ => self.call(op, &[a, c, d]),
        }
    }

    /// Calls a user function of `args.len()` arguments through the math table's
    /// [`MathTable::CALL_N`] entry, once per lane: the arguments are stored to a stack
    /// slot whose address is passed.
    fn call_n(&mut self, tag: Value, args: &[Value]) -> Value {
        let k = args.len();
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (8 * k) as u32,
            3,
        ));
        let callee = self.b.ins().load(
            self.ptr,
            pointer_table(),
            self.table,
            offset(MathTable::CALL_N, self.ptr.bytes() as usize),
        );
        let count = self.b.ins().iconst(self.ptr, k as i64);
        let one = |e: &mut Self, lane: Option<u8>| {
            let scalar = |e: &mut Self, v: Value| match lane {
                Some(l) => e.b.ins().extractlane(v, l),
                None => v,
            };
            for (j, &v) in args.iter().enumerate() {
                let x = scalar(e, v);
                e.b.ins().stack_store(e.ptr, x, slot, (8 * j) as i32);
            }
            let t = scalar(e, tag);
            let addr = e.b.ins().stack_addr(e.ptr, slot, 0);
            let inst =
                e.b.ins()
                    .call_indirect(e.math.call_n, callee, &[t, addr, count]);
            e.b.inst_results(inst)[0]
        };
        if self.width == 1 {
            return one(self, None);
        }
        let results: Vec<Value> = (0..self.width).map(|l| one(self, Some(l))).collect();
        self.vector_from_lanes(self.ty, &results)
    }

    /// Calls `op`'s function from the math table, once per lane.
    fn call(&mut self, op: Op, args: &[Value]) -> Value {
        let slot = MathTable::slot(op).unwrap_or_else(|| {
            unreachable!("{op} is inlined by every engine and has no table entry")
        });
        let sig = match args.len() {
            1 => self.math.unary,
            2 => self.math.binary,
            _ => self.math.ternary,
        };
        let callee = self.b.ins().load(
            self.ptr,
            pointer_table(),
            self.table,
            offset(slot, self.ptr.bytes() as usize),
        );
        if self.width == 1 {
            let inst = self.b.ins().call_indirect(sig, callee, args);
            return self.b.inst_results(inst)[0];
        }
        let results: Vec<Value> = (0..self.width)
            .map(|lane| {
                let scalars: Vec<Value> = args
                    .iter()
                    .map(|&v| self.b.ins().extractlane(v, lane))
                    .collect();
                let inst = self.b.ins().call_indirect(sig, callee, &scalars);
                self.b.inst_results(inst)[0]
            })
            .collect();
        self.vector_from_lanes(self.ty, &results)
    }
}
