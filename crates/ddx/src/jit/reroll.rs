//! Re-rolling: finding the repeated stretches of a lane that a point kernel computes in a
//! loop instead of as straight-line copies (issue 20).
//!
//! A model closure that loops over data (observations, links of a chain, components)
//! leaves many copies of one subgraph in its lanes, and the AD passes keep the copies
//! together: the graph's operations, in order, hold stretches where operation `i + p` does
//! what operation `i` did, `p` operations earlier. [`find`] finds such stretches, each a
//! [`Run`] of `copies` consecutive copies of a `period`-operation template, by one rule for
//! every lane: scanning the operations in order, at each one it takes the period (up to
//! [`MAX_PERIOD`]) whose run covers the most operations, lengthens a short period to at
//! least [`MIN_BODY`] operations, and keeps the run when it has at least [`MIN_COPIES`]
//! copies; otherwise it moves on by one operation.
//!
//! Operation `j` of copy `c + 1` matches operation `j` of copy `c` when they are the same
//! operation and each argument relates to the earlier copy's in one way, the same for every
//! copy of the run ([`Arg`]): the value `d` operations back inside the copy, or in the copy
//! before (the loop carries it; copy 0 reads the operation just as far back before the
//! run), one node every copy reads, or a node per copy made before the run starts (a
//! constant, an input, a value computed earlier: a stream the loop reads from memory).
//! Each copy then computes what its straight-line nodes computed: the same operation on
//! the same operands, so every bit is the same whatever the order the loop runs them in.
//! Operations that read the graph beyond their arguments (calls, packs) never match, nor
//! does a `pow` whose exponent is a constant in one copy and not the same constant in the
//! next (the lowering of a constant exponent depends on its value).
//!
//! A lane is re-rolled only as a whole ([`Rule::KERNEL`]): its runs are kept when the
//! lane has at least 1024 operations and the runs together cover at least 90 % of them,
//! and dropped (the lane stays straight-line) otherwise. Both halves come from what a loop
//! costs and saves:
//! - a loop runs more instructions than the copies it replaces (its counter, its stream
//!   loads); what it saves is code size, which pays once the straight-line code would not
//!   fit the instruction cache: the lowering emits about 36 bytes of x86-64 code per
//!   operation (the chain family, measured), so 1024 operations are about the 32 KiB of a
//!   common L1 instruction cache;
//! - every value that crosses between a loop and straight-line code goes through memory
//!   (a loop's values are stored to its area for readers outside it, a stream computed
//!   outside is copied in before the loop), where straight-line code keeps it in a
//!   register: a lane that is nearly all loops has few such crossings, a lane with loops
//!   among straight-line code has many.
//!
//! Measured (BENCHMARKS.md, "Which lanes are re-rolled"): the gradient lanes of NIST
//! Gauss1 and the chain family are 97–100 % covered; re-rolled, Gauss1 and chain-256 run
//! 1.8× and 2.2× faster, chain-64 (1 070 operations) 1.09× faster and chain-16 (254
//! operations, 9 KiB of straight-line code) 1.16× slower. The component sums of UNIQUAC,
//! the electrolyte, the regular solution and the quadratic form leave lanes 11–69 %
//! covered, which ran 1.3–2.2× slower re-rolled.
//!
//! Which tiers keep a lane's runs is the lowering's choice (`lower::keeps_loops`): since
//! point kernels pair operations in `f64x2` (after the figures above), straight-line code
//! of independent copies runs faster than the loops wherever it gets the backtracking
//! register allocator, so the optimised tier keeps the loops only for longer lanes and
//! for recurrences ([`Rolls::carried`]; BENCHMARKS.md, "Loops at the quick tier only").

use ddx_ir::{Graph, Node, NodeId, Op};
use std::collections::HashSet;

/// The fewest copies a run has.
pub(crate) const MIN_COPIES: usize = 4;
/// The fewest operations a loop body has: a shorter period is unrolled to at least this.
pub(crate) const MIN_BODY: usize = 8;
/// The longest period looked for.
pub(crate) const MAX_PERIOD: usize = 96;
/// The fewest operations a run covers.
pub(crate) const MIN_COVER: usize = 48;
/// Which lanes keep their runs (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    /// The fewest operations a lane has to be re-rolled.
    pub(crate) min_lane_ops: usize,
    /// The least share of a lane's operations, in percent, that its runs must cover.
    pub(crate) min_covered_percent: usize,
    /// The least share, in percent, that they must cover less the stream entries their
    /// loops cannot read in place ([`Rolls::copied`]).
    pub(crate) min_in_place_percent: usize,
}

impl Rule {
    /// The rule of the kernels users get: lanes of at least 1024 operations, at least
    /// 90 % covered.
    pub(crate) const KERNEL: Rule = Rule {
        min_lane_ops: 1024,
        min_covered_percent: 90,
        min_in_place_percent: 80,
    };
    /// Every run found, whatever the lane.
    pub(crate) const EVERY_RUN: Rule = Rule {
        min_lane_ops: 0,
        min_covered_percent: 0,
        min_in_place_percent: 0,
    };
    /// The rule point kernels are lowered by: [`Rule::KERNEL`], or [`Rule::EVERY_RUN`] in
    /// this crate's unit tests, so that their small random models exercise the lowering of
    /// loops among straight-line code (the bits do not depend on which runs are kept).
    pub(crate) const LOWERING: Rule = if cfg!(test) {
        Rule::EVERY_RUN
    } else {
        Rule::KERNEL
    };
}

/// The most bytes the loops' areas may take in all, counted as if every value of every
/// run were stored and every stream copied (8 bytes a copy each); runs past it stay
/// straight-line. The areas are the kernel's heap scratch (not its stack frame), which
/// the caller provides once per thread; the bound keeps every offset into them within
/// an `i32` and a kernel's scratch within what its lane's interpreter would take anyway
/// (about a value per node), for lanes of up to 2²⁷ operations.
pub(crate) const MAX_AREA_BYTES: usize = 1 << 30;

/// How an argument of a template operation is read in every copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arg {
    /// No argument in this position.
    None,
    /// Operation `j` of the same copy (`j` is before the reader).
    Internal(u32),
    /// Operation `j` of the copy before; for copy 0, the operation `period - j` operations
    /// before the run.
    Carried(u32),
    /// The same node in every copy, made before the run.
    Same(NodeId),
    /// A node per copy (the argument of this position in that copy), made before the run.
    Stream,
}

/// A run of copies of one template: operations `first + c·period + j` of the graph's
/// operation order (see [`Rolls::ops`]) for `c < copies`, `j < period`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    /// Where the run starts in [`Rolls::ops`].
    pub(crate) first: usize,
    /// Operations per copy.
    pub(crate) period: usize,
    /// Copies (at least [`MIN_COPIES`]).
    pub(crate) copies: usize,
    /// Operations right after the last copy that continue the repetition but make less
    /// than a whole copy (a period lengthened to [`MIN_BODY`] leaves them): straight-line,
    /// but stored in the run's area beside the copies, so that a later loop reading the
    /// run's values together with them reads them evenly spaced.
    pub(crate) tail: usize,
    /// How each argument of each template operation is read.
    pub(crate) args: Vec<[Arg; 3]>,
}

/// Which operations of `run`'s template depend on a value the copy before carries in:
/// those with an [`Arg::Carried`] argument and those reading, within the copy, one that
/// does. The others depend on nothing of another copy, so any copies of them may be
/// computed at once. Length `run.period`.
pub(crate) fn on_carried(run: &Run) -> Vec<bool> {
    let mut on = vec![false; run.period];
    for (j, args) in run.args.iter().enumerate() {
        on[j] = args.iter().any(|a| match *a {
            Arg::Carried(_) => true,
            Arg::Internal(i) => on[i as usize],
            Arg::None | Arg::Same(_) | Arg::Stream => false,
        });
    }
    on
}

/// The runs of a graph, with the index from nodes to operations.
#[derive(Debug, Default)]
pub(crate) struct Rolls {
    /// The graph's operation nodes (`Node::Apply`) in order.
    pub(crate) ops: Vec<NodeId>,
    /// Each node's place in `ops` (`u32::MAX` for a leaf).
    pub(crate) at: Vec<u32>,
    /// The runs, in order, not overlapping.
    pub(crate) runs: Vec<Run>,
}

impl Rolls {
    /// The node of operation `j` of copy `c` of `run`.
    pub(crate) fn node(&self, run: &Run, c: usize, j: usize) -> NodeId {
        self.ops[run.first + c * run.period + j]
    }

    /// The operations the runs cover (their copies and tails).
    pub(crate) fn covered(&self) -> usize {
        self.runs.iter().map(|r| r.copies * r.period + r.tail).sum()
    }

    /// The operations of the runs' copies that depend on a value the copy before carries
    /// in ([`on_carried`]): a chain from the first copy to the last, which no two copies
    /// can compute at once.
    pub(crate) fn carried(&self) -> usize {
        self.runs
            .iter()
            .map(|r| r.copies * on_carried(r).iter().filter(|&&c| c).count())
            .sum()
    }

    /// The operations outside every run: those a kernel computes in straight-line code.
    pub(crate) fn straight(&self) -> usize {
        self.ops.len() - self.covered()
    }

    /// The stream entries the loops of `g`'s runs cannot read in place, which a kernel
    /// copies to memory in straight-line code before the loop, one store a copy: every
    /// stream but constants (read from the kernel's table), inputs at evenly spaced
    /// places (symbols, or seeds) and values of one earlier run (or its tail) at evenly
    /// spaced places of its area — the cases the lowering reads in place
    /// (`lower::Emit::stream`). A run whose streams are copied saves no code: each
    /// copy's entry is a straight-line store instead of its straight-line operation.
    pub(crate) fn copied(&self, g: &Graph) -> usize {
        // Each operation's run and place in it (copies and tail), if any.
        let mut place: Vec<(u32, u32)> = vec![(u32::MAX, 0); g.len()];
        for (r, run) in self.runs.iter().enumerate() {
            for k in 0..run.copies * run.period + run.tail {
                place[self.ops[run.first + k].index()] = (r as u32, k as u32);
            }
        }
        let even = |k: &[Option<i64>]| -> bool {
            let (Some(first), Some(Some(second))) = (k[0], k.get(1).copied()) else {
                return false;
            };
            let d = second - first;
            k.iter()
                .enumerate()
                .all(|(c, x)| *x == Some(first + c as i64 * d))
        };
        let mut copied = 0;
        let mut seen: HashSet<Vec<NodeId>> = HashSet::new();
        for run in &self.runs {
            for (j, args) in run.args.iter().enumerate() {
                for (k, a) in args.iter().enumerate() {
                    if *a != Arg::Stream {
                        continue;
                    }
                    let nodes: Vec<NodeId> = (0..run.copies)
                        .map(|c| g.node(self.node(run, c, j)).args()[k])
                        .collect();
                    if !seen.insert(nodes.clone()) {
                        continue; // the lowering copies a stream once per loop that reads it
                    }
                    let of = |f: &dyn Fn(&Node) -> Option<i64>| -> Vec<Option<i64>> {
                        nodes.iter().map(|&n| f(g.node(n))).collect()
                    };
                    let constants = nodes.iter().all(|&n| g.constant_of(n).is_some());
                    let symbols = of(&|n| match *n {
                        Node::Symbol(s) => Some(s.index() as i64),
                        _ => None,
                    });
                    let seeds = of(&|n| match *n {
                        Node::Seed(s) => Some(s.index() as i64),
                        _ => None,
                    });
                    let r0 = place[nodes[0].index()].0;
                    let area: Vec<Option<i64>> = nodes
                        .iter()
                        .map(|&n| {
                            let (r, at) = place[n.index()];
                            (r == r0 && r != u32::MAX).then_some(i64::from(at))
                        })
                        .collect();
                    if !(constants || even(&symbols) || even(&seeds) || even(&area)) {
                        copied += nodes.len();
                    }
                }
            }
        }
        copied
    }
}

/// Finds the runs of `g`: none when `g` has fewer than `rule.min_lane_ops` operations or
/// the runs would cover less than `rule.min_covered_percent` of them (see the module doc).
pub(crate) fn find(g: &Graph, rule: Rule) -> Rolls {
    let mut ops = Vec::new();
    let mut at = vec![u32::MAX; g.len()];
    for (i, n) in g.nodes().iter().enumerate() {
        if let Node::Apply(..) = n {
            at[i] = ops.len() as u32;
            ops.push(NodeId::from_index(i));
        }
    }
    let mut rolls = Rolls {
        ops,
        at,
        runs: Vec::new(),
    };
    let code: Vec<Option<Op>> = rolls.ops.iter().map(|&n| g.node(n).op()).collect();
    let len = rolls.ops.len();
    if len < rule.min_lane_ops {
        return rolls;
    }
    let mut s = 0;
    let mut area = 0;
    // Operations left out of every run so far: once more than the rule allows, no run
    // found later can bring the cover up, and the search stops (a lane that does not
    // repeat costs a tenth of a scan under `Rule::KERNEL`).
    let mut uncovered = 0;
    let most_uncovered = (100 - rule.min_covered_percent.min(100)) * len / 100;
    while s + MIN_COVER <= len {
        if uncovered > most_uncovered {
            rolls.runs.clear();
            return rolls;
        }
        let mut best: Option<(usize, usize)> = None; // (cover, period)
        let mut found: Vec<usize> = Vec::new();
        for p in 1..=MAX_PERIOD.min((len - s) / 2) {
            // Multiples of a period that repeats are not tried (its run covers theirs).
            if found.iter().any(|f| p % f == 0) || (0..p).any(|j| code[s + j] != code[s + p + j]) {
                continue;
            }
            let (c, _) = count(g, &rolls, s, p);
            if c >= 2 {
                found.push(p);
                if best.is_none_or(|(cover, _)| c * p > cover) {
                    best = Some((c * p, p));
                }
            }
        }
        if let Some((cover, p)) = best {
            let p = p * MIN_BODY.div_ceil(p);
            let (c, args) = count(g, &rolls, s, p);
            let tail = cover.saturating_sub(c * p).min(p - 1);
            let streams = args.iter().flatten().filter(|a| **a == Arg::Stream).count();
            let bytes = 8 * (c * (p + streams) + tail);
            if c >= MIN_COPIES && c * p >= MIN_COVER && area + bytes <= MAX_AREA_BYTES {
                area += bytes;
                rolls.runs.push(Run {
                    first: s,
                    period: p,
                    copies: c,
                    tail,
                    args,
                });
                s += c * p + tail;
                continue;
            }
        }
        s += 1;
        uncovered += 1;
    }
    let covered = rolls.covered();
    // A stream entry copied before a loop is a straight-line store.
    let in_place = covered.saturating_sub(rolls.copied(g));
    if covered * 100 < rule.min_covered_percent * len
        || in_place * 100 < rule.min_in_place_percent * len
    {
        rolls.runs.clear();
    }
    rolls
}

/// How many consecutive copies of period `p` from operation `s` match (1 when the second
/// does not), and the template's arguments as the first two copies relate.
fn count(g: &Graph, r: &Rolls, s: usize, p: usize) -> (usize, Vec<[Arg; 3]>) {
    let mut args = vec![[Arg::None; 3]; p];
    let mut c = 0;
    while s + (c + 2) * p <= r.ops.len() && pair(g, r, s, p, c, &mut args) {
        c += 1;
    }
    (c + 1, args)
}

/// Whether copy `c + 1` of period `p` from `s` matches copy `c`; for `c == 0`, fills
/// `args` with the template's arguments, which later copies must keep.
fn pair(g: &Graph, r: &Rolls, s: usize, p: usize, c: usize, args: &mut [[Arg; 3]]) -> bool {
    let before = |n: NodeId| r.at[n.index()] == u32::MAX || (r.at[n.index()] as usize) < s;
    let next = s + (c + 1) * p;
    for (j, template) in args.iter_mut().enumerate() {
        let (x, y) = (r.ops[next - p + j], r.ops[next + j]);
        let (Node::Apply(op, xa), Node::Apply(op2, ya)) = (*g.node(x), *g.node(y)) else {
            return false;
        };
        if op != op2 || matches!(op, Op::Call | Op::Pack) {
            return false;
        }
        for k in 0..op.arity() {
            let (a, b) = (xa[k], ya[k]);
            let (ra, rb) = (r.at[a.index()], r.at[b.index()]);
            let kind = if a == b {
                if !before(a) {
                    return false;
                }
                Arg::Same(a)
            } else if ra != u32::MAX
                && rb != u32::MAX
                && rb as usize == ra as usize + p
                && rb as usize + p >= next
            {
                let off = rb as isize - next as isize;
                if off >= 0 {
                    Arg::Internal(off as u32)
                } else {
                    Arg::Carried((off + p as isize) as u32)
                }
            } else {
                let constant_exponent = k == 1
                    && matches!(op, Op::Pow | Op::Powi)
                    && (g.constant_of(a).is_some() || g.constant_of(b).is_some());
                if constant_exponent || !before(a) || !before(b) {
                    return false;
                }
                Arg::Stream
            };
            if c == 0 {
                template[k] = kind;
            } else if template[k] != kind {
                return false;
            }
        }
    }
    true
}
