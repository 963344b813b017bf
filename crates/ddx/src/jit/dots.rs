//! Dot loops: the long sums of weighted values that a point kernel computes in a loop over
//! a table of weights instead of as straight-line code (issue 20).
//!
//! A model that multiplies its inputs by a matrix of constants (a quadratic form, a linear
//! layer, a design matrix) leaves in its lanes long chains of links `s ← s + x·w` — `Add`
//! of the running sum and a product of an input by a constant — in its value (a row of
//! `Qx`) and in its adjoints (a column of `Qᵀx̄`, where the adjoint reaching each term is
//! itself an input or a constant multiple of one). A mixture's sums over its components
//! (`Σⱼ τᵢⱼ θⱼ`, `Σₗ bₖₗ xₗ` with computed `θ` or adjoints) leave the same chains over
//! computed values. Straight-line, each link is three instructions and a constant, and a
//! 256-symbol quadratic form's gradient is 165 000 nodes (1.3 MB of code, run from L2, in
//! segments). A loop reads the same values and the same weights (from the kernel's
//! constant table) and makes the same product and the same sum, link after link: the
//! same IEEE operations on the same operands in the same order, so every bit is the
//! straight-line code's.
//!
//! [`find`] takes a chain as a loop when
//! - every link is `Add` of the running value (the link before, read by nothing else) and
//!   a *term*: a `Mul` of a value and a constant, read by nothing else;
//! - its links all put the term on the same side of the `Add`, and their terms the
//!   constant on the same side of the `Mul` (so the loop's operations are the nodes' own,
//!   operands in order);
//! - its values sit at evenly spaced slots (`first + k·stride`), so the loop steps one
//!   pointer through them and one through its weights:
//!   - when every value is an input (a symbol or a seed), the slots are the inputs' own,
//!     at any stride of either sign or 0;
//!   - otherwise each value gets a slot of the kernel's scratch, stored there once made,
//!     and the chain reads them at stride 1 or −1. The slots are laid out by `lay_out`:
//!     each value has at most one successor and one predecessor, so the values form
//!     paths, each path on consecutive slots. The columns of a triangular sum share
//!     their values, a long column making the path and the shorter ones reading a window
//!     of it;
//! - it has at least [`MIN_LINKS`] links.
//!
//! A chain that breaks one of these is cut there, and each piece long enough is a dot of
//! its own (a piece's first link reads the piece before's last as a value made before).
//!
//! One dot alone is a chain of dependent additions, each waiting on the one before (four
//! cycles each), where straight-line code overlaps the additions of many sums; so dots are
//! computed in [`Group`]s, link `k` of every member in one iteration, and a dot in no
//! group of at least [`MIN_GROUP`] stays straight-line. The members of a group are the
//! rows of `Qx` or the columns of `Qᵀx̄`: the graph makes them one after the other, each
//! one's first link after the previous one's result is read, so a group's loop runs where
//! the graph's order would not have all its members' starting values yet. [`Dots::order`]
//! is the order a kernel emits in: the graph's, but for each group's loop in its first
//! member's place once every member's start is made, the readers of its results after it.
//! The loop runs its members in `f64x2` pairs (lane 0 one member's link, lane 1 the
//! next's: each lane the IEEE operation of its scalar node), and a lane keeps its dots
//! only when they cover at least [`MIN_COVERED`] nodes: a loop saves code, which pays
//! only where the straight-line kernel outgrows the instruction cache.
//!
//! The rest of the lane is paired as any other ([`super::slp`], the dots' nodes left
//! out), and [`Dots::order_with`] emits pairs, single nodes and loops in one topological
//! order. A pair and a group can wait on each other (one node of the pair feeds a
//! member's start, the other reads another member's result), which no grouping rule here
//! excludes; such a lane has no order with its pairs and is emitted without them, the
//! dots among scalar straight-line code.
//!
//! **Invariants**: a dot's links and terms are read by nothing outside the dot but its
//! last link, and no lane output is one of them but the last link; its values are never
//! a dot's inner links or terms (an inner link is read by its next link alone, a term by
//! its link alone), but a value may be another dot's result, its last link. Every member's start
//! and values reach (through the graph's operands) no result of a found dot at or after
//! the group's key (its first member's last link), so each group's dependencies are on
//! groups of smaller keys and [`Dots::order`] exists (the proof is in [`group`]). The
//! members of a group read values of one kind (inputs, or the scratch), and a value's
//! scratch slot is written before any loop reading it runs: by the step that makes it,
//! by the loop that makes it (another dot's result), or (an input, with pairs) by the
//! reading loop's own step.

use super::slp::Packs;
use ddx_ir::{Lane, Node, NodeId, Op};

/// The fewest links a dot has. Measured (BENCHMARKS.md, "Dot loops"): 8 against 16 and
/// 32 took the quadratic form at `n = 32` / `64` from 271 / 957 ns and 288 / 1121 ns to
/// 245 / 953 ns; 4 made it slower at every size (loops of one iteration).
pub(crate) const MIN_LINKS: usize = 8;

/// The most dots one loop computes together: four `f64x2` sums, enough to hide an
/// addition's latency. Measured on the quadratic form at `n = 256`: groups of 4 with 2
/// links an iteration ran 43.9 µs, groups of 8 / 12 / 16 with 4 links an iteration 20.7 /
/// 19.5 / 19.2 µs.
pub(crate) const GROUP: usize = 8;

/// The fewest dots one loop computes together: a dot alone waits on its additions'
/// latency, link after link, where straight-line code overlaps many sums (measured: the
/// quadratic form at `n = 64` ran 3× slower with every dot a loop of its own).
pub(crate) const MIN_GROUP: usize = 2;

/// How many dots after a group's first one (by their last link's position) are looked at
/// for the rest of the group: keeps the grouping linear in the lane.
const WINDOW: usize = 64;

/// Links a loop makes of each member an iteration (measured with [`GROUP`] 8, the
/// quadratic form at `n = 64` / `256`: 2 / 4 / 8 / 16 ran 1469 / 1237 / 1121 / 1324 ns
/// and 26.2 / 20.9 / 19.0 / 22.9 µs).
pub(crate) const UNROLL: usize = 8;

/// The fewest nodes (links and terms) a lane's dots must cover to be kept. A loop saves
/// code, not operations: where the straight-line kernel fits the instruction cache, its
/// `f64x2` pairs ([`super::slp`], which pair the chains' links too) run level with or
/// ahead of the loops. Measured (BENCHMARKS.md, "Dot loops among pairs"), gradient lanes,
/// dots among pairs against pairs alone, by nodes covered: the regular solution at
/// `n = 16 / 20 / 24 / 32` (334 / 606 / 942 / 1 806) +3 / +5 / +2 / −2 %, the quadratic form
/// (368 / 648 / 992 / 1 872) +12 / +8 / −5 / −17 %, the electrolyte at `n = 16 / 24 / 32`
/// (308 / 900 / 1 748) 0 / −1 / −7 %, Peng–Robinson at 17 / 33 (184 / 936) −3 / −4 %.
pub(crate) const MIN_COVERED: usize = 900;

/// Whether dots covering `nodes` nodes are kept: at least [`MIN_COVERED`], or any in
/// this crate's unit tests, whose small random models then reach the dot loops wherever
/// they hold dots (and keep their runs where they hold none).
fn enough(nodes: usize) -> bool {
    cfg!(test) || nodes >= MIN_COVERED
}

/// One chain of links computed as a loop.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Dot {
    /// The running value the first link reads (made before the dot).
    pub(crate) start: NodeId,
    /// The links, in order; the last one's value is the dot's.
    pub(crate) links: Vec<NodeId>,
    /// Empty when the terms read inputs (the slots below are the lane's input slots);
    /// else each link's value, in order, stored in the kernel's scratch (the slots below
    /// are scratch slots, [`Dots::slot_of`]).
    pub(crate) values: Vec<NodeId>,
    /// The slot of the first link's value.
    pub(crate) slot: usize,
    /// The slots from one link's value to the next's.
    pub(crate) stride: i64,
    /// Whether each link is `Add(s, term)` (`true`) or `Add(term, s)`.
    pub(crate) term_second: bool,
    /// Whether each term is `Mul(x, w)` (`true`) or `Mul(w, x)`.
    pub(crate) weight_second: bool,
    /// Each link's weight, in order.
    pub(crate) weights: Vec<f64>,
}

/// Dots computed together by one loop, [`GROUP`] at most: link `k` of every member in
/// one iteration, so that their sums overlap instead of each waiting on its own
/// additions' latency.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Group {
    /// The members (indices into [`Dots::dots`]), by their last link's position; all of
    /// one stride.
    pub(crate) members: Vec<usize>,
    /// The links of each member the loop makes (its last ones; a multiple of
    /// [`UNROLL`], at most the shortest member's length): member `m`'s first
    /// `len − steps` links are straight-line, before the loop (in the pair's lanes where
    /// its partner has links there too).
    pub(crate) steps: usize,
}

/// What a kernel emits next: a node of the lane, or a group's loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Node(NodeId),
    Group(usize),
}

/// The dots of a lane, their groups, which nodes they hold and the order to emit in.
#[derive(Clone, Debug, Default)]
pub(crate) struct Dots {
    /// The dots in groups, group by group.
    pub(crate) dots: Vec<Dot>,
    pub(crate) groups: Vec<Group>,
    /// Per node: `NONE`, or the dot whose link or term it is.
    member: Vec<u32>,
    /// Per node: `NONE`, or its scratch slot, where it is a value a dot's terms read.
    slot: Vec<u32>,
    /// The scratch slots the kept dots' values need (1 + the highest; some below it may
    /// hold nothing: the layout's paths also hold values of dots that were not kept).
    pub(crate) scratch: usize,
    /// Nodes inside dots (links and terms).
    pub(crate) covered: usize,
    /// The lane's operations (nodes that are neither constants nor inputs).
    ops: usize,
    /// Every node but the dots' links and terms, and every group, in the order a kernel
    /// emits them (see the module doc).
    pub(crate) order: Vec<Step>,
}

impl Dots {
    const NONE: u32 = u32::MAX;

    /// Whether no chain became a loop.
    pub(crate) fn is_empty(&self) -> bool {
        self.dots.is_empty()
    }

    /// The operations outside every dot: those a kernel computes in straight-line code
    /// (0 when there are no dots: then nothing was counted).
    pub(crate) fn straight(&self) -> usize {
        self.ops - self.covered
    }

    /// Per node of the lane, whether it is a dot's link or term: the nodes
    /// [`super::slp::find`] leaves unpaired around the dots.
    pub(crate) fn except(&self) -> Vec<bool> {
        self.member.iter().map(|&d| d != Dots::NONE).collect()
    }

    /// The order to emit `lane` in with these dots and `packs` (pairs found with
    /// [`Dots::except`]): each pair one step at its low node, leaves made where first
    /// read; `None` where a pair and a group wait on each other (see [`order`]).
    pub(crate) fn order_with(&self, lane: &Lane, packs: &Packs) -> Option<Vec<Step>> {
        let o = order(lane, self, Some(packs));
        #[cfg(test)]
        if o.is_none() {
            PAIRED_ORDERS_REFUSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        o
    }

    /// The scratch slot of node `id`, if it is a value a kept dot's terms read (stored
    /// there once made, before the dot's loop runs).
    pub(crate) fn slot_of(&self, id: NodeId) -> Option<usize> {
        match self.slot.get(id.index()) {
            Some(&s) if s != Dots::NONE => Some(s as usize),
            _ => None,
        }
    }

    /// The dot node `id` belongs to (as a link or a term), if any.
    pub(crate) fn dot_of(&self, id: NodeId) -> Option<usize> {
        match self.member.get(id.index()) {
            Some(&d) if d != Dots::NONE => Some(d as usize),
            _ => None,
        }
    }
}

#[cfg(test)]
/// How many times [`Dots::order_with`] found no order with pairs in this process (then
/// the kernel is emitted without pairs).
pub(crate) static PAIRED_ORDERS_REFUSED: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

#[cfg(test)]
/// How many times [`order`] found no order in this process (never, by [`group`]'s proof;
/// tests check).
pub(crate) static ORDERS_REFUSED: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// A link's shape: its running operand, its term, the term's value (an input's slot or
/// an operation), its weight, and the two sides.
#[derive(Clone, Copy)]
struct Link {
    running: NodeId,
    term: NodeId,
    value: NodeId,
    input: Option<usize>,
    weight: f64,
    term_second: bool,
    weight_second: bool,
}

impl Link {
    fn sides(&self) -> (bool, bool) {
        (self.term_second, self.weight_second)
    }
}

/// A dot found, before grouping: the dot, its terms, and the latest found dot's result
/// its start or values reach (see [`find`]'s `reach`).
struct Found {
    dot: Dot,
    terms: Vec<NodeId>,
    reach: u32,
}

/// The dots of `lane` (see the module doc), grouped, with the order to emit in; empty
/// when no group forms. Linear in the lane but for the order's heap (`O(n log n)`).
pub(crate) fn find(lane: &Lane) -> Dots {
    let g = &lane.graph;
    let len = g.len();
    // Uses of every node, lane outputs counted (saturating at 2: only "once" matters).
    let mut uses = vec![0u8; len];
    let mut operands = Vec::new();
    for id in 0..len {
        g.operands_into(NodeId::from_index(id), &mut operands);
        for a in &operands {
            let u = &mut uses[a.index()];
            *u = u.saturating_add(1).min(2);
        }
    }
    for o in &lane.outputs {
        let u = &mut uses[o.index()];
        *u = u.saturating_add(1).min(2);
    }
    let input_slot = |id: NodeId| match *g.node(id) {
        Node::Symbol(s) => Some(s.index()),
        Node::Seed(s) => Some(lane.seed_base() + s.index()),
        _ => None,
    };
    // The term `t` as `(value, weight, weight_second)`: a product of a value (an input
    // or an operation) and a constant, read once.
    let term = |t: NodeId| {
        let Node::Apply(Op::Mul, args) = *g.node(t) else {
            return None;
        };
        if uses[t.index()] != 1 {
            return None;
        }
        match (g.constant_of(args[0]), g.constant_of(args[1])) {
            (None, Some(w)) => Some((args[0], w, true)),
            (Some(w), None) => Some((args[1], w, false)),
            _ => None,
        }
    };
    let link = |k: usize| {
        let Node::Apply(Op::Add, args) = *g.node(NodeId::from_index(k)) else {
            return None;
        };
        // A term on the second side first: `s + x·w` is how sums are written.
        for (t, r, term_second) in [(args[1], args[0], true), (args[0], args[1], false)] {
            if let Some((value, weight, weight_second)) = term(t) {
                return Some(Link {
                    running: r,
                    term: t,
                    value,
                    input: input_slot(value),
                    weight,
                    term_second,
                    weight_second,
                });
            }
        }
        None
    };
    // `inner[k]`: link `k`'s only reader is a link that runs on it.
    let mut inner = vec![false; len];
    for l in (0..len).filter_map(link) {
        let r = l.running.index();
        if uses[r] == 1 && link(r).is_some() {
            inner[r] = true;
        }
    }
    // Every chain piece long enough: pieces over inputs read them where they are, the
    // others (`valued`, laid out below) read their values from the scratch.
    let mut found: Vec<Found> = Vec::new();
    let mut valued: Vec<Vec<(usize, Link)>> = Vec::new();
    let mut chain: Vec<(usize, Link)> = Vec::new();
    for top in 0..len {
        if inner[top] {
            continue;
        }
        let Some(mut l) = link(top) else {
            continue;
        };
        // Down from the chain's last link to its first.
        chain.clear();
        let mut at = top;
        loop {
            chain.push((at, l));
            let r = l.running.index();
            if !inner[r] {
                break;
            }
            at = r;
            l = link(r).unwrap_or_else(|| unreachable!("an inner link is a link"));
        }
        chain.reverse();
        // Cut where the sides change; a run of inputs also where their stride does.
        for run in chain.chunk_by(|a, b| a.1.sides() == b.1.sides()) {
            if run.len() < MIN_LINKS {
                continue;
            }
            if run.iter().any(|(_, l)| l.input.is_none()) {
                valued.push(run.to_vec());
                continue;
            }
            let slot = |k: usize| run[k].1.input.unwrap_or(0) as i64;
            let mut from = 0;
            while from < run.len() {
                let mut to = from + 1;
                while to < run.len()
                    && (to == from + 1 || slot(to) - slot(to - 1) == slot(from + 1) - slot(from))
                {
                    to += 1;
                }
                let stride = if to > from + 1 {
                    slot(from + 1) - slot(from)
                } else {
                    0
                };
                found.push(piece(
                    &run[from..to],
                    Vec::new(),
                    slot(from) as usize,
                    stride,
                ));
                from = to;
            }
        }
    }
    let layout = lay_out(&mut valued, len);
    for (run, cuts) in valued.iter().zip(&layout.cuts) {
        for w in cuts.windows(2) {
            let part = &run[w[0]..w[1]];
            let values: Vec<NodeId> = part.iter().map(|(_, l)| l.value).collect();
            let first = layout.slot[values[0].index()] as usize;
            let stride = match values.get(1) {
                Some(v) => layout.slot[v.index()] as i64 - first as i64,
                None => 0,
            };
            found.push(piece(part, values, first, stride));
        }
    }
    found.retain(|f| f.dot.links.len() >= MIN_LINKS);
    // Grouping only drops dots: a lane whose found dots cannot cover enough stops here.
    let ops = g
        .nodes()
        .iter()
        .filter(|n| matches!(n, Node::Apply(..)))
        .count();
    let most: usize = found.iter().map(|f| 2 * f.dot.links.len()).sum();
    if found.is_empty() || !enough(most) {
        return Dots::default();
    }
    // reach[v]: 1 + the latest last link of a found dot that `v` is or reads through its
    // operands (0: none).
    let mut is_last = vec![false; len];
    for f in &found {
        is_last[last(&f.dot)] = true;
    }
    let mut reach = vec![0u32; len];
    for id in 0..len {
        g.operands_into(NodeId::from_index(id), &mut operands);
        let mut r = 0;
        for a in &operands {
            let a = a.index();
            r = r.max(reach[a]);
        }
        if is_last[id] {
            r = id as u32 + 1;
        }
        reach[id] = r;
    }
    for f in &mut found {
        let d = &f.dot;
        f.reach = d
            .values
            .iter()
            .map(|v| reach[v.index()])
            .fold(reach[d.start.index()], u32::max);
    }
    let mut dots = group(found, len);
    if dots.is_empty() {
        return Dots::default();
    }
    dots.ops = ops;
    // Scratch slots for the kept dots' values; the layout's other values stay unstored.
    dots.slot = vec![Dots::NONE; len];
    for d in &dots.dots {
        for v in &d.values {
            let slot = layout.slot[v.index()];
            dots.slot[v.index()] = slot;
            dots.scratch = dots.scratch.max(slot as usize + 1);
        }
    }
    if !enough(dots.covered) {
        return Dots::default();
    }
    match order(lane, &dots, None) {
        Some(o) => dots.order = o,
        None => {
            #[cfg(test)]
            ORDERS_REFUSED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Dots::default();
        }
    }
    dots
}

/// The dot of the links `part` (with their indices), reading `values` (empty for inputs)
/// from `slot` on, `stride` apart.
fn piece(part: &[(usize, Link)], values: Vec<NodeId>, slot: usize, stride: i64) -> Found {
    let first = part[0].1;
    Found {
        dot: Dot {
            start: first.running,
            links: part.iter().map(|&(k, _)| NodeId::from_index(k)).collect(),
            values,
            slot,
            stride,
            term_second: first.term_second,
            weight_second: first.weight_second,
            weights: part.iter().map(|(_, l)| l.weight).collect(),
        },
        terms: part.iter().map(|(_, l)| l.term).collect(),
        reach: 0,
    }
}

/// Where the values of dots over operations go in the scratch, and where their runs
/// are cut.
struct Layout {
    /// Per node: its scratch slot, or [`Dots::NONE`].
    slot: Vec<u32>,
    /// Per run (as given to [`lay_out`]): the places its pieces start, and its length.
    cuts: Vec<Vec<usize>>,
}

/// Lays out the values of `runs` (chains of links of one pair of sides, some term over an
/// operation) in the scratch so that each piece of a run reads its values at evenly
/// spaced slots: values become paths, each value with at most one successor and one
/// predecessor, and each path consecutive slots. The runs' neighbouring values are linked
/// longest run first (the columns of a triangular matrix share their values: a long
/// column makes the path, the shorter ones read a window of it, in either direction); a
/// pair of neighbours that would give a value a second successor or predecessor, or close
/// a loop, cuts the run there. Runs are sorted by length (longest first) in place, and
/// cut pieces may be shorter than [`MIN_LINKS`] (the caller drops them).
fn lay_out(runs: &mut [Vec<(usize, Link)>], len: usize) -> Layout {
    const NONE: u32 = Dots::NONE;
    runs.sort_by_key(|r| std::cmp::Reverse(r.len()));
    let (mut next, mut prev) = (vec![NONE; len], vec![NONE; len]);
    // The paths as disjoint sets (a representative per path, halving on each find), so
    // that a link closing a loop is seen in near-constant time however long the path.
    let mut root: Vec<u32> = (0..len as u32).collect();
    let mut cuts = Vec::with_capacity(runs.len());
    for run in runs.iter() {
        let mut at = vec![0];
        let mut dir = 0i8;
        for k in 1..run.len() {
            let (a, b) = (run[k - 1].1.value.index(), run[k].1.value.index());
            let ok = if dir >= 0 && next[a] == b as u32 {
                dir = 1;
                true
            } else if dir <= 0 && prev[a] == b as u32 {
                dir = -1;
                true
            } else if dir >= 0 && next[a] == NONE && prev[b] == NONE && join(&mut root, a, b) {
                next[a] = b as u32;
                prev[b] = a as u32;
                dir = 1;
                true
            } else {
                false
            };
            if !ok {
                at.push(k);
                dir = 0;
            }
        }
        at.push(run.len());
        cuts.push(at);
    }
    let mut slot = vec![NONE; len];
    let mut slots = 0u32;
    for v in 0..len {
        if prev[v] == NONE && next[v] != NONE {
            let mut w = v;
            loop {
                slot[w] = slots;
                slots += 1;
                if next[w] == NONE {
                    break;
                }
                w = next[w] as usize;
            }
        }
    }
    Layout { slot, cuts }
}

/// Joins the sets of `a` and `b` in `root` (disjoint sets, a representative each, paths
/// halved on each find); `false`, joining nothing, when they are one set already.
fn join(root: &mut [u32], a: usize, b: usize) -> bool {
    let mut find = |mut v: usize| {
        while root[v] as usize != v {
            let up = root[root[v] as usize];
            root[v] = up;
            v = up as usize;
        }
        v
    };
    let (ra, rb) = (find(a), find(b));
    if ra == rb {
        return false;
    }
    root[rb] = ra as u32;
    true
}

/// The index of `d`'s last link.
fn last(d: &Dot) -> usize {
    d.links.last().map_or(0, |l| l.index())
}

/// The groups of `found` (dots with their terms, of a lane of `len` nodes), and those
/// dots that are in a group of at least [`MIN_GROUP`]: taken by their last link's
/// position, each group is the next dot free and the free dots after it (among the
/// [`WINDOW`] next, up to [`GROUP`]) of its stride and kind of values whose lengths keep
/// the loop to at least half of the longest member and whose start and values reach
/// ([`Found::reach`]) no found dot's result at or after the group's key, its first
/// member's last link.
///
/// That last condition makes every group's dependencies groups of smaller keys: if a
/// member's start or value of group `H` reads a result of a member of `G`, that result is
/// at or after `key(G)` and (the condition) before `key(H)`; a path between groups
/// through straight-line nodes only moves later. So no chain of dependencies returns to a
/// group. (The first member needs no check: its start and values come before its links.)
fn group(mut found: Vec<Found>, len: usize) -> Dots {
    found.sort_by_key(|f| last(&f.dot));
    let mut dots = Dots {
        member: vec![Dots::NONE; len],
        ..Dots::default()
    };
    let mut taken = vec![false; found.len()];
    for a in 0..found.len() {
        if taken[a] {
            continue;
        }
        let head = &found[a].dot;
        let key = last(head) as u32 + 1;
        let mut members = vec![a];
        let (mut short, mut long) = (head.links.len(), head.links.len());
        for b in a + 1..found.len().min(a + 1 + WINDOW) {
            if members.len() == GROUP {
                break;
            }
            let d = &found[b].dot;
            let n = d.links.len();
            if taken[b]
                || d.stride != head.stride
                || d.values.is_empty() != head.values.is_empty()
                || d.term_second != head.term_second
                || d.weight_second != head.weight_second
                || found[b].reach >= key
                || short.min(n) * 2 < long.max(n)
            {
                continue;
            }
            members.push(b);
            (short, long) = (short.min(n), long.max(n));
        }
        if members.len() < MIN_GROUP {
            continue;
        }
        let mut kept = Vec::with_capacity(members.len());
        for &m in &members {
            taken[m] = true;
            let d = dots.dots.len();
            let Found { dot, terms, .. } = &found[m];
            for &id in dot.links.iter().chain(terms) {
                dots.member[id.index()] = d as u32;
            }
            dots.covered += 2 * dot.links.len();
            dots.dots.push(dot.clone());
            kept.push(d);
        }
        dots.groups.push(Group {
            members: kept,
            steps: short / UNROLL * UNROLL,
        });
    }
    dots
}

/// The order a kernel emits `lane` in with `dots` (see the module doc): a topological
/// order of the lane with each group one step (reading its members' starts, read where
/// its members' results are), the dots' other nodes left out, taking at each point the
/// ready step that comes first in the graph (a group at its key, a pair at its first
/// node). With `packs` (pairs found around the dots, [`super::slp::find`] with
/// [`Dots::except`]), only operations are steps (the kernel makes leaves where first
/// read) and a pair is one step, at its low node.
///
/// `None` if some step never becomes ready. Without pairs no grouping [`group`] makes
/// allows that; with them it can happen: a pair whose one node feeds a group that the
/// other node reads waits on itself, and the kernel then goes without pairs.
fn order(lane: &Lane, dots: &Dots, packs: Option<&Packs>) -> Option<Vec<Step>> {
    use std::cmp::Reverse;
    let g = &lane.graph;
    let len = g.len();
    let groups = dots.groups.len();
    // Step ids: nodes `0..len`, group `k` at `len + k`.
    let group_of_dot: Vec<usize> = {
        let mut v = vec![0; dots.dots.len()];
        for (k, gr) in dots.groups.iter().enumerate() {
            for &m in &gr.members {
                v[m] = k;
            }
        }
        v
    };
    // The step that stands for node `a` as an operand: its dot's group for a dot's last
    // link, none for another link or a term; with pairs, none for a leaf and the low
    // node for a pair's high one; else itself.
    let step_of = |a: usize| {
        let id = NodeId::from_index(a);
        match dots.dot_of(id) {
            Some(d) if last(&dots.dots[d]) == a => Some(len + group_of_dot[d]),
            Some(_) => None,
            None => match packs {
                None => Some(a),
                Some(_) if !matches!(g.node(id), Node::Apply(..)) => None,
                Some(p) => Some(match p.partner(id) {
                    Some(low) if p.lane(id) == 1 => low.index(),
                    _ => a,
                }),
            },
        }
    };
    let key = |s: usize| {
        if s < len {
            let partner = packs.and_then(|p| p.partner(NodeId::from_index(s)));
            partner.map_or(s, |p| s.min(p.index()))
        } else {
            last(&dots.dots[dots.groups[s - len].members[0]])
        }
    };
    // Each step's operands (as steps), counted, and its readers, in compressed rows.
    let steps = len + groups;
    let mut waiting = vec![0u32; steps];
    let mut degree = vec![0u32; steps + 1];
    let mut operands = Vec::new();
    let mut edges = |visit: &mut dyn FnMut(usize, usize)| {
        for id in 0..len {
            let Some(s) = step_of(id) else { continue };
            if s >= len {
                continue;
            }
            g.operands_into(NodeId::from_index(id), &mut operands);
            for a in &operands {
                match step_of(a.index()) {
                    Some(from) if from != s => visit(from, s),
                    _ => {}
                }
            }
        }
        for (k, gr) in dots.groups.iter().enumerate() {
            for &m in &gr.members {
                let d = &dots.dots[m];
                for v in std::iter::once(&d.start).chain(&d.values) {
                    if let Some(from) = step_of(v.index()) {
                        visit(from, len + k);
                    }
                }
            }
        }
    };
    edges(&mut |from, _| degree[from + 1] += 1);
    for k in 0..steps {
        degree[k + 1] += degree[k];
    }
    let mut readers = vec![0u32; degree[steps] as usize];
    let mut fill = degree.clone();
    edges(&mut |from, to| {
        readers[fill[from] as usize] = to as u32;
        fill[from] += 1;
        waiting[to] += 1;
    });
    let is_step = |s: usize| s >= len || step_of(s) == Some(s);
    let mut ready = std::collections::BinaryHeap::new();
    for (s, &w) in waiting.iter().enumerate() {
        if is_step(s) && w == 0 {
            ready.push(Reverse((key(s), s)));
        }
    }
    let live = (0..steps).filter(|&s| is_step(s)).count();
    let mut out = Vec::with_capacity(live);
    while let Some(Reverse((_, s))) = ready.pop() {
        out.push(if s < len {
            Step::Node(NodeId::from_index(s))
        } else {
            Step::Group(s - len)
        });
        for &r in &readers[degree[s] as usize..degree[s + 1] as usize] {
            let r = r as usize;
            waiting[r] -= 1;
            if waiting[r] == 0 {
                ready.push(Reverse((key(r), r)));
            }
        }
    }
    (out.len() == live).then_some(out)
}
