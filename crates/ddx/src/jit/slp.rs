//! Packing pairs: which operations of a straight-line point kernel run two at a time in
//! the lanes of one `f64x2` register (superword-level parallelism; Larsen and
//! Amarasinghe, "Exploiting Superword Level Parallelism with Multimedia Instruction
//! Sets", PLDI 2000), issue 20.
//!
//! A lane's graph holds many operations that do the same thing to different operands and
//! do not depend on each other: the same sum of products for each component of a
//! mixture, the adjoint of each input in the reverse sweep. [`find`] pairs such
//! operations; the lowering computes each pair with one vector instruction whose low lane
//! is one operation and whose high lane is the other. Vector arithmetic is IEEE per lane,
//! so each lane computes exactly what its scalar instruction would: the same operation on
//! the same operands, rounded once, whatever else is paired. Nothing is re-associated or
//! contracted, so the answers are the same bits.
//!
//! **Input**: a lane graph (topologically ordered). **Output**: [`Packs`]: disjoint pairs
//! of operation nodes, each pair two operations of one [`Shape`] (the same operation; for
//! a power, the same constant exponent) at the same depth (the longest path from a leaf),
//! and an emission order in which every node comes after its operands and a pair's two
//! nodes are one item. Equal depth is what makes that order exist: an argument is always
//! shallower than its reader, so no path leads from one node of a pair to the other, and
//! no two pairs wait on each other (an edge between items always goes to a deeper item).
//!
//! **Which pairs** (a greedy search and a cost model, the same for every lane): seeds are
//! pairs of adjacent outputs (stored with one vector store), then operations grouped by
//! shape, depth and the shapes of their arguments, paired in graph order. From each seed a
//! tree grows to the arguments of each pair (bottom-up, as LLVM's SLP vectoriser grows
//! from stores) and to the readers of both nodes at the same argument position
//! (top-down). A tree is kept when it saves instructions by the count of
//! [`Search::cost`]: each pair saves its scalar instructions; each vector operand that is
//! not a pair in the same lane order costs what building it costs (a splat or a gather,
//! shared among the pairs reading it; a pair of constants or of adjacent inputs is one
//! load and costs nothing), and each value of a high lane read as a scalar costs an
//! extraction. Then readers and arguments of pairs are paired where that pays by itself,
//! and finally pairs that cost more than they save, given all the others, are split until
//! none does. Pairing across depths (windows of levels narrowed as pairs are made, which
//! also keeps a schedule) was measured and found more pairs that ran slower: BENCHMARKS.md,
//! "Packed point kernels".

use ddx_ir::{Lane, Node, NodeId, Op};
use std::collections::HashMap;

/// What must agree for two operations to be paired: the operation and, for a power, its
/// constant exponent's bits (the lowering of `pow(x, 2)` is not that of `pow(x, 3)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Shape {
    op: Op,
    exponent: u64,
}

/// The pairs of a lane and the order the lowering emits its nodes in.
#[derive(Debug, Default)]
pub(crate) struct Packs {
    /// Each node's partner, or [`Packs::NONE`].
    partner: Vec<u32>,
    /// Whether each paired node is the high lane (lane 1) of its pair.
    high: Vec<bool>,
    /// The operation nodes in emission order; a pair appears once, as its low node.
    order: Vec<NodeId>,
    /// The number of pairs.
    pairs: usize,
}

impl Packs {
    const NONE: u32 = u32::MAX;

    /// Whether there is no pair (the lane is emitted as it stands).
    pub(crate) fn is_empty(&self) -> bool {
        self.pairs == 0
    }

    /// The operation nodes in the order to emit them, each pair once, as its low node.
    pub(crate) fn order(&self) -> &[NodeId] {
        &self.order
    }

    /// The other node of `id`'s pair, if it has one.
    pub(crate) fn partner(&self, id: NodeId) -> Option<NodeId> {
        let p = *self.partner.get(id.index())?;
        (p != Packs::NONE).then(|| NodeId::from_index(p as usize))
    }

    /// Which lane `id` is computed in: 0 (low) or 1 (high); 0 for a node in no pair.
    pub(crate) fn lane(&self, id: NodeId) -> u8 {
        u8::from(self.high.get(id.index()).copied().unwrap_or(false))
    }
}

/// What [`instructions`] counts an operation on the divider (a division, a square root)
/// as.
const DIVIDER: f64 = 4.0;

/// The scalar instructions an operation costs, as the lowering emits it (x86-64 with AVX:
/// compares and selects are several), and so what pairing two of them saves. A division
/// or a square root counts as four: x86 cores run one every few cycles on a divider that
/// is not pipelined like the adders and multipliers, which take one or two a cycle, and
/// the paired instruction takes about the scalar one's time (Agner Fog's instruction
/// tables). Counted as one, UNIQUAC-16's gradient kernel kept 52 of its 240 divisions
/// scalar; counted as four, 4 (BENCHMARKS.md, "Divisions in pairs").
fn instructions(op: Op, exponent: Option<f64>) -> f64 {
    match op {
        Op::Div | Op::Recip | Op::Sqrt => DIVIDER,
        Op::Pow | Op::Powi if exponent == Some(-1.0) => DIVIDER,
        Op::Max | Op::Min => 4.0,
        Op::Lt | Op::Le | Op::Eq | Op::Select => 3.0,
        Op::Ne => 4.0,
        Op::Sign => 7.0,
        // A square root and four instructions around it.
        Op::Pow if exponent == Some(0.5) => DIVIDER + 4.0,
        // `math::exp` inline: about 30, of which the table reads stay one per lane.
        Op::Exp => 24.0,
        // `math::log` inline (with the fused multiply-add): about 28, three table reads a
        // lane.
        Op::Log => 22.0,
        _ => 1.0,
    }
}

/// The scalar instructions pairing operation `id` of `lane` with another of its shape
/// saves, or `None` if it is not paired (the lowering calls a function for it: see
/// [`calls_out`]; `fma` says whether the target has the instruction).
pub(crate) fn pair_saves(lane: &Lane, id: usize, fma: bool) -> Option<f64> {
    let shape = shape(lane, id, fma)?;
    let exponent = (shape.op.arity() == 2).then(|| match lane.graph.nodes()[id] {
        Node::Apply(_, args) => lane.graph.constant_of(args[1]),
        _ => None,
    });
    Some(instructions(shape.op, exponent.flatten()))
}

/// Whether node `id` of `lane` is an operation the lowering hands to a function (the math
/// table's, or a user function's) rather than computing inline, where the target has a
/// fused multiply-add.
pub(crate) fn calls_out(lane: &Lane, id: usize) -> bool {
    match lane.graph.nodes()[id] {
        Node::Apply(op, _) => {
            ddx_ir::math::MathTable::slot(op).is_some() && shape(lane, id, true).is_none()
        }
        _ => false,
    }
}

/// The shape of operation `id`, if the lowering computes it inline (a single
/// instruction or a few, identical in both lanes): calls of the math table, user calls
/// and packs are never paired; neither is `fma` without the instruction (`fma` says
/// whether the target has it).
fn shape(lane: &Lane, id: usize, fma: bool) -> Option<Shape> {
    let g = &lane.graph;
    let Node::Apply(op, args) = g.nodes()[id] else {
        return None;
    };
    let exponent = |e: Option<f64>| e.map(f64::to_bits);
    let inline = match op {
        Op::Add
        | Op::Sub
        | Op::Mul
        | Op::Div
        | Op::Neg
        | Op::Abs
        | Op::Sqrt
        | Op::Recip
        | Op::Sign
        | Op::Max
        | Op::Min
        | Op::Lt
        | Op::Le
        | Op::Eq
        | Op::Ne
        | Op::Select
        | Op::Exp => Some(0),
        Op::Fma | Op::Log => fma.then_some(0),
        Op::Pow | Op::Powi => {
            let e = g.constant_of(args[1]);
            let inline =
                matches!(e, Some(v) if v == 2.0 || v == -1.0) || (op == Op::Pow && e == Some(0.5));
            if inline {
                exponent(e)
            } else {
                None
            }
        }
        _ => None,
    };
    inline.map(|exponent| Shape { op, exponent })
}

/// The pairing state: the graph's facts and the pairs made so far.
struct Search<'l> {
    lane: &'l Lane,
    shape: Vec<Option<Shape>>,
    /// Each node's depth: the longest path from a leaf (0 for leaves).
    depth: Vec<u32>,
    /// Readers of each node as `(reader, argument position)`, CSR: `readers[from[i]..from[i + 1]]`.
    from: Vec<u32>,
    readers: Vec<(u32, u8)>,
    /// How many times each node is an output.
    outputs: Vec<u32>,
    partner: Vec<u32>,
    high: Vec<bool>,
    /// How many argument positions of pairs read each vector operand `(low, high)`: what
    /// building one costs is shared among them.
    slots: HashMap<(u32, u32), u32>,
    /// Where each segment of the lane starts (`[0]` for a lane emitted as one function):
    /// the two nodes of a pair lie in one.
    starts: &'l [usize],
    /// Nodes grown into a tree that was not kept (its seed aside): no later tree takes
    /// them, so each node is grown into a tree at most once and growing is linear in the
    /// lane (a 255 000-node Hessian lane took 20 s without it, regrowing the same large
    /// trees from each seed); the extension pass still may pair them.
    tried: Vec<bool>,
}

/// The most readers of one node looked at when growing a tree top-down (a node read by
/// thousands, a constant say, would otherwise make growing quadratic).
const MAX_READERS: usize = 16;

impl<'l> Search<'l> {
    fn new(lane: &'l Lane, fma: bool, starts: &'l [usize], except: &[bool]) -> Self {
        let g = &lane.graph;
        let n = g.len();
        let mut depth = vec![0u32; n];
        let mut count = vec![0u32; n + 1];
        for (i, node) in g.nodes().iter().enumerate() {
            let mut d = 0;
            for a in node.args() {
                d = d.max(depth[a.index()] + 1);
                count[a.index() + 1] += 1;
            }
            depth[i] = d;
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let from = count.clone();
        let mut readers = vec![(0u32, 0u8); from[n] as usize];
        let mut next = count;
        for (i, node) in g.nodes().iter().enumerate() {
            for (k, a) in node.args().iter().enumerate() {
                let at = &mut next[a.index()];
                readers[*at as usize] = (i as u32, k as u8);
                *at += 1;
            }
        }
        let mut outputs = vec![0u32; n];
        for o in &lane.outputs {
            outputs[o.index()] += 1;
        }
        Search {
            lane,
            shape: (0..n)
                .map(|i| {
                    if except.get(i).copied().unwrap_or(false) {
                        None
                    } else {
                        shape(lane, i, fma)
                    }
                })
                .collect(),
            depth,
            from,
            readers,
            outputs,
            partner: vec![Packs::NONE; n],
            high: vec![false; n],
            slots: HashMap::new(),
            starts,
            tried: vec![false; n],
        }
    }

    fn node(&self, i: usize) -> &Node {
        self.lane.graph.node(NodeId::from_index(i))
    }

    fn readers(&self, i: usize) -> &[(u32, u8)] {
        &self.readers[self.from[i] as usize..self.from[i + 1] as usize]
    }

    fn paired(&self, i: usize) -> bool {
        self.partner[i] != Packs::NONE
    }

    /// Whether `a` and `b` may be paired now: two free operations of one shape at one
    /// depth.
    fn can_pair(&self, a: usize, b: usize) -> bool {
        a != b
            && !self.paired(a)
            && !self.paired(b)
            && self.shape[a].is_some()
            && self.shape[a] == self.shape[b]
            && self.depth[a] == self.depth[b]
            && self.segment_of(a) == self.segment_of(b)
    }

    /// The segment node `i` is in.
    fn segment_of(&self, i: usize) -> usize {
        self.starts.partition_point(|&s| s <= i)
    }

    /// Pairs `a` (low) and `b` (high).
    fn pair(&mut self, a: usize, b: usize) {
        self.partner[a] = b as u32;
        self.partner[b] = a as u32;
        self.high[a] = false;
        self.high[b] = true;
        self.count_operands(a, b, 1);
    }

    /// Splits the pair whose low node is `a`.
    fn split(&mut self, a: usize) {
        let b = self.partner[a] as usize;
        self.count_operands(a, b, -1);
        self.partner[a] = Packs::NONE;
        self.partner[b] = Packs::NONE;
        self.high[b] = false;
    }

    /// Counts the vector operands of the pair `(a, b)` in (`by = 1`) or out (`-1`).
    fn count_operands(&mut self, a: usize, b: usize, by: i32) {
        let (na, nb) = (*self.node(a), *self.node(b));
        for (&p, &q) in na.args().iter().zip(nb.args()) {
            let key = (p.index() as u32, q.index() as u32);
            let c = self.slots.entry(key).or_insert(0);
            *c = c.saturating_add_signed(by);
            if *c == 0 {
                self.slots.remove(&key);
            }
        }
    }

    /// Grows a tree of pairs from `(a, b)`: pairs the arguments of each pair made at each
    /// position where they may be paired (bottom-up), and a reader of each node at the
    /// same position (top-down). Answers the pairs made, by their low nodes.
    fn grow(&mut self, a: usize, b: usize) -> Vec<usize> {
        let mut made = Vec::new();
        let mut work = vec![(a, b)];
        while let Some((x, y)) = work.pop() {
            if !self.can_pair(x, y) || self.tried[x] || self.tried[y] {
                continue;
            }
            self.pair(x, y);
            made.push(x);
            let (nx, ny) = (*self.node(x), *self.node(y));
            for (&p, &q) in nx.args().iter().zip(ny.args()) {
                if self.can_pair(p.index(), q.index()) {
                    work.push((p.index(), q.index()));
                }
            }
            for &(u, k) in self.readers(x).iter().take(MAX_READERS) {
                let u = u as usize;
                if self.paired(u) || self.shape[u].is_none() {
                    continue;
                }
                let v = self
                    .readers(y)
                    .iter()
                    .take(MAX_READERS)
                    .map(|&(v, kv)| (v as usize, kv))
                    .find(|&(v, kv)| kv == k && self.can_pair(u, v));
                if let Some((v, _)) = v {
                    work.push((u, v));
                }
            }
        }
        made
    }

    /// What building the vector operand `(p, q)` costs one argument position that reads
    /// it, in instructions: nothing for a pair in lane order, a pair of constants (one
    /// load from the kernel's table) or two adjacent inputs (one load); otherwise a splat,
    /// a swap or a gather (one instruction), shared among the positions that read it (it
    /// is built once). Reading a high lane as a scalar is counted at its pair.
    fn operand(&self, p: usize, q: usize) -> f64 {
        if self.partner[p] == q as u32 && !self.high[p] {
            return 0.0;
        }
        let (np, nq) = (self.node(p), self.node(q));
        if matches!(np, Node::Const(_)) && matches!(nq, Node::Const(_)) {
            return 0.0;
        }
        if let (Some(s), Some(t)) = (self.input(p), self.input(q)) {
            if t == s + 1 {
                return 0.0;
            }
        }
        let sharing = self.slots.get(&(p as u32, q as u32)).copied().unwrap_or(1);
        1.0 / f64::from(sharing.max(1))
    }

    /// The input slot `i` loads, if it is an input.
    fn input(&self, i: usize) -> Option<usize> {
        match *self.node(i) {
            Node::Symbol(s) => Some(s.index()),
            Node::Seed(s) => Some(self.lane.seed_base() + s.index()),
            _ => None,
        }
    }

    /// Whether `i`, a paired node, is read as a scalar: by an unpaired reader, by a pair
    /// that does not take it in its own lane, or as an output not stored with its partner.
    fn read_as_scalar(&self, i: usize) -> bool {
        if self.outputs[i] > 0 {
            return true;
        }
        self.readers(i).iter().any(|&(r, k)| {
            let r = r as usize;
            if !self.paired(r) {
                return true;
            }
            let other = self.partner[r] as usize;
            let theirs = self.node(other).args()[k as usize].index();
            !(self.partner[i] == theirs as u32 && self.high[i] == self.high[r])
        })
    }

    /// What the pair at `a` (its low node) costs given every other pair: its operands and
    /// its high node's extraction, less the scalar instructions it saves.
    fn cost(&self, a: usize) -> f64 {
        let b = self.partner[a] as usize;
        let (na, nb) = (*self.node(a), *self.node(b));
        let Node::Apply(op, args) = na else {
            return 0.0;
        };
        let exponent = (op.arity() == 2)
            .then(|| self.lane.graph.constant_of(args[1]))
            .flatten();
        let mut c = -instructions(op, exponent);
        for (&p, &q) in na.args().iter().zip(nb.args()) {
            c += self.operand(p.index(), q.index());
        }
        if self.read_as_scalar(b) {
            c += 1.0;
        }
        c
    }

    /// What the pair at `a` (paired now) saves pairs that read both its nodes at one
    /// position in lane order: each such operand no longer needs building.
    fn readers_gain(&self, a: usize) -> f64 {
        let b = self.partner[a] as usize;
        let mut g = 0.0;
        for &(r, k) in self.readers(a) {
            let r = r as usize;
            if self.paired(r) && !self.high[r] {
                let other = self.partner[r] as usize;
                if self.node(other).args()[k as usize].index() == b {
                    g -= 1.0;
                }
            }
        }
        g
    }

    /// Grows a tree from `(a, b)` and keeps it if its pairs save more than they cost.
    fn try_tree(&mut self, a: usize, b: usize) {
        if !self.can_pair(a, b) {
            return;
        }
        let made = self.grow(a, b);
        let total: f64 = made.iter().map(|&x| self.cost(x)).sum();
        if total >= 0.0 {
            // The seed may seed again; the rest was grown once and is not again.
            for (k, x) in made.into_iter().enumerate() {
                let y = self.partner[x] as usize;
                self.split(x);
                if k > 0 {
                    self.tried[x] = true;
                    self.tried[y] = true;
                }
            }
        }
    }

    /// Pairs readers of both nodes of each pair at one argument position, and arguments
    /// of both at one position, where the new pair pays by itself (counting what it saves
    /// the pairs reading it); answers whether any was made.
    fn extend(&mut self) -> bool {
        let n = self.partner.len();
        let mut changed = false;
        let mut candidates: Vec<(usize, usize)> = Vec::new();
        for x in 0..n {
            if !self.paired(x) || self.high[x] {
                continue;
            }
            let y = self.partner[x] as usize;
            candidates.clear();
            for &(u, k) in self.readers(x).iter().take(MAX_READERS) {
                for &(v, kv) in self.readers(y).iter().take(MAX_READERS) {
                    if kv == k {
                        candidates.push((u as usize, v as usize));
                    }
                }
            }
            let (nx, ny) = (*self.node(x), *self.node(y));
            for (&p, &q) in nx.args().iter().zip(ny.args()) {
                candidates.push((p.index(), q.index()));
            }
            for &(u, v) in &candidates {
                if !self.can_pair(u, v) {
                    continue;
                }
                self.pair(u, v);
                if self.cost(u) + self.readers_gain(u) < 0.0 {
                    changed = true;
                } else {
                    self.split(u);
                }
            }
        }
        changed
    }
}

/// Seeds are grouped by shape, depth and the shapes of the arguments.
type Group = (Shape, u32, [Option<Shape>; 3]);

/// The pairs of `lane` and its emission order (see the module doc); `fma` says whether
/// the target has a fused multiply-add instruction; a pair's two nodes lie in one segment,
/// the segments starting at `starts` (`[0]` for a lane emitted as one function); no node
/// `i` with `except[i]` is paired (the links and terms of dot loops, which
/// [`super::dots`] computes; `except` may be shorter than the lane, or empty).
pub(crate) fn find(lane: &Lane, fma: bool, starts: &[usize], except: &[bool]) -> Packs {
    let g = &lane.graph;
    let n = g.len();
    let mut s = Search::new(lane, fma, starts, except);
    // Seeds: adjacent outputs.
    for w in lane.outputs.windows(2) {
        s.try_tree(w[0].index(), w[1].index());
    }
    // Seeds: operations of one shape, depth and argument shapes, in graph order, deepest
    // first so that trees grow down from their roots.
    let mut groups: HashMap<Group, Vec<usize>> = HashMap::new();
    for i in 0..n {
        if let Some(sh) = s.shape[i] {
            let mut arg = [None; 3];
            for (k, a) in s.node(i).args().iter().enumerate() {
                arg[k] = s.shape[a.index()];
            }
            groups.entry((sh, s.depth[i], arg)).or_default().push(i);
        }
    }
    let mut groups: Vec<(std::cmp::Reverse<u32>, Vec<usize>)> = groups
        .into_iter()
        .filter(|(_, members)| members.len() > 1)
        .map(|(key, members)| (std::cmp::Reverse(key.1), members))
        .collect();
    groups.sort_unstable_by_key(|(depth, members)| (*depth, members[0]));
    for (_, members) in groups {
        let free = |s: &Search<'_>, i: usize| !s.paired(i) && !s.tried[i];
        let (mut i, mut j) = (0, 1);
        while i < members.len() {
            let a = members[i];
            i += 1;
            if !free(&s, a) {
                continue;
            }
            j = j.max(i);
            while j < members.len() && !free(&s, members[j]) {
                j += 1;
            }
            let Some(&b) = members.get(j) else {
                break;
            };
            s.try_tree(a, b);
        }
    }
    for _ in 0..8 {
        if !s.extend() {
            break;
        }
    }
    // Split what costs more than it saves, given the rest, until nothing does.
    for _ in 0..8 {
        let mut changed = false;
        for a in 0..n {
            if s.paired(a) && !s.high[a] && s.cost(a) > 0.0 {
                s.split(a);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let pairs = (0..n).filter(|&a| s.paired(a) && !s.high[a]).count();
    let order = if pairs == 0 {
        Vec::new()
    } else {
        schedule(lane, &s.partner, &s.high)
    };
    Packs {
        partner: s.partner,
        high: s.high,
        order,
        pairs,
    }
}

/// The emission order: every operation after its arguments, a pair as one item (at its
/// low node) after both nodes' arguments, otherwise as close to graph order as that
/// allows (Kahn's algorithm, the item whose first node comes first in the graph taken
/// first).
fn schedule(lane: &Lane, partner: &[u32], high: &[bool]) -> Vec<NodeId> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let g = &lane.graph;
    let n = g.len();
    // The item of each node: its own index, or its pair's low node.
    let item = |i: usize| -> usize {
        if partner[i] != Packs::NONE && high[i] {
            partner[i] as usize
        } else {
            i
        }
    };
    let is_op = |i: usize| matches!(g.nodes()[i], Node::Apply(..));
    // Arguments not yet emitted, per item; readers per item.
    let mut waiting = vec![0u32; n];
    let mut readers: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, node) in g.nodes().iter().enumerate() {
        if !is_op(i) {
            continue;
        }
        let it = item(i);
        for a in node.args() {
            let a = a.index();
            if is_op(a) && item(a) != it {
                waiting[it] += 1;
                readers[item(a)].push(it as u32);
            }
        }
    }
    let first = |it: usize| -> usize {
        if partner[it] != Packs::NONE {
            it.min(partner[it] as usize)
        } else {
            it
        }
    };
    let mut ready: BinaryHeap<Reverse<(usize, usize)>> = (0..n)
        .filter(|&i| is_op(i) && item(i) == i && waiting[i] == 0)
        .map(|i| Reverse((first(i), i)))
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse((_, it))) = ready.pop() {
        order.push(NodeId::from_index(it));
        for &r in &readers[it] {
            let r = r as usize;
            waiting[r] -= 1;
            if waiting[r] == 0 {
                ready.push(Reverse((first(r), r)));
            }
        }
    }
    order
}
