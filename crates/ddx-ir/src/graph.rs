//! The expression graph: nodes, interning, and the one place nodes are made.
//!
//! **Invariants** (checked by [`crate::verify`]):
//! - nodes are append-only and topologically ordered: every argument id is smaller than
//!   the id of the node using it, so forward sweeps are one loop up and reverse sweeps one
//!   loop down, with no recursion;
//! - the graph is hash-consed: no two nodes are equal, so equal subexpressions share one id;
//! - every node with only constant arguments has been folded to a constant, and the exact
//!   IEEE identities of [`crate::fold`] have been applied.
//!
//! [`Graph::add`] is the only way to make a node.

use crate::{fold, NodeId, Op, SeedId, SymbolId};
use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;
use smallvec::SmallVec;
use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;

/// A constant, held by its bits so that it can be hashed; all NaNs share one bit pattern,
/// while `+0.0` and `-0.0` stay distinct.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Constant(u64);

impl Constant {
    /// The constant `value` (NaNs canonicalised).
    pub fn new(value: f64) -> Self {
        if value.is_nan() {
            Self(f64::NAN.to_bits())
        } else {
            Self(value.to_bits())
        }
    }

    /// The value.
    pub fn value(self) -> f64 {
        f64::from_bits(self.0)
    }
}

impl fmt::Debug for Constant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.value())
    }
}

/// A node of the graph.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Node {
    /// A number.
    Const(Constant),
    /// An input symbol of the model.
    Symbol(SymbolId),
    /// An extra input of a lane: a direction component or a weight.
    Seed(SeedId),
    /// An operation on earlier nodes; only the first [`Op::arity`] arguments are used, the
    /// rest are [`NodeId(u32::MAX)`](NodeId).
    Apply(Op, [NodeId; 3]),
}

/// Marks an unused argument position of [`Node::Apply`].
pub const NO_ARG: NodeId = NodeId(u32::MAX);

impl Node {
    /// The arguments of an operation (empty for constants, symbols and seeds).
    pub fn args(&self) -> &[NodeId] {
        match self {
            Node::Apply(op, args) => &args[..op.arity()],
            _ => &[],
        }
    }

    /// The operation, if this node is one.
    pub fn op(&self) -> Option<Op> {
        match self {
            Node::Apply(op, _) => Some(*op),
            _ => None,
        }
    }

    /// The constant's value, if this node is one.
    pub fn constant(&self) -> Option<f64> {
        match self {
            Node::Const(c) => Some(c.value()),
            _ => None,
        }
    }

    /// The same node with every argument mapped through `f`.
    pub fn map_args(&self, mut f: impl FnMut(NodeId) -> NodeId) -> Node {
        match *self {
            Node::Apply(op, args) => {
                let mut out = [NO_ARG; 3];
                for (o, a) in out.iter_mut().zip(&args[..op.arity()]) {
                    *o = f(*a);
                }
                Node::Apply(op, out)
            }
            other => other,
        }
    }
}

/// A hash-consed, topologically ordered expression DAG. See the module doc for its
/// invariants.
///
/// **Memory.** Hash-consing needs an index from each node to its id; it holds ids only
/// (4 bytes a bucket; the node is read from the graph to compare), and a graph that is
/// only read needs none: a graph made by [`Graph::extract`] or [`Graph::prune`] (every
/// lane, every sealed model) or [`Graph::from_nodes`] has no index until something adds to
/// it, when it is built once from the nodes. So the index holds either every node or, in a
/// graph not added to since it was made, none.
///
/// **Shared nodes.** Such a finished graph is also *frozen*: its nodes sit in reference-
/// counted runs (segments) that no one changes again, so cloning it copies no node, and a
/// graph made from a clone by adding nodes (a lane built from the model, or from the
/// Jacobian lane) holds the runs it started from and only its own new nodes. Extraction
/// and pruning keep each shared run every node of which the roots reach (and that holds
/// no [`Op::Hold`]) and copy only the rest. So the model's value nodes are stored once for
/// every lane that computes the values, and the Jacobian lane's nodes once for it and the
/// second-order lanes built on it ([`crate::lane::build_on`]). [`Graph::nodes`] reads
/// every node, whatever run holds it, in id order.
#[derive(Clone, Default)]
pub struct Graph {
    store: Store,
    intern: HashTable<NodeId>,
}

/// A graph's nodes: frozen runs shared with other graphs (ids `0..base`), then the graph's
/// own open list (ids `base..`).
///
/// **Invariant** (checked in debug builds when runs are made or kept): the runs tile
/// `0..base` in order, none empty, at most [`MAX_RUNS`] of them; no run changes once made
/// (each is behind an `Arc` and only ever read).
#[derive(Clone, Default)]
struct Store {
    /// The frozen runs, lowest ids first: each starts where the one before it ends, the
    /// first at id 0.
    runs: SmallVec<[Arc<Segment>; MAX_RUNS]>,
    /// Nodes in the frozen runs: the first id of `open`.
    base: usize,
    /// Nodes added since the graph was last frozen.
    open: Vec<Node>,
}

/// A frozen run of nodes, ids `start..start + nodes.len()`. Never changed once made.
#[derive(Debug)]
struct Segment {
    start: usize,
    nodes: Vec<Node>,
}

impl Segment {
    fn end(&self) -> usize {
        self.start + self.nodes.len()
    }
}

/// How many frozen runs a graph may stack before freezing copies them into one (a lane
/// built on the Jacobian lane, itself on the model, stacks three).
const MAX_RUNS: usize = 4;

impl Store {
    #[inline]
    fn len(&self) -> usize {
        self.base + self.open.len()
    }

    /// The node at index `i` (which must be below [`Store::len`]; above, the open list's
    /// index panics).
    #[inline(always)]
    fn at(&self, i: usize) -> &Node {
        if i >= self.base {
            return &self.open[i - self.base];
        }
        self.frozen(i)
    }

    /// The node at index `i`, below `base`: in the highest run starting at or below it.
    #[inline]
    fn frozen(&self, i: usize) -> &Node {
        for seg in self.runs.iter().rev() {
            if i >= seg.start {
                return &seg.nodes[i - seg.start];
            }
        }
        unreachable!("the frozen runs hold every id below the open list")
    }

    /// Every node in id order, as contiguous pieces.
    fn pieces(&self) -> SmallVec<[&[Node]; MAX_RUNS + 1]> {
        let mut pieces: SmallVec<[&[Node]; MAX_RUNS + 1]> =
            self.runs.iter().map(|seg| &seg.nodes[..]).collect();
        if !self.open.is_empty() {
            pieces.push(&self.open);
        }
        pieces
    }

    /// Calls `f` with every node from index `start` on and its index, in id order.
    #[inline]
    fn each_from(&self, start: usize, mut f: impl FnMut(usize, &Node)) {
        let mut first = 0;
        for piece in self.pieces() {
            let skip = start.saturating_sub(first).min(piece.len());
            for (k, node) in piece[skip..].iter().enumerate() {
                f(first + skip + k, node);
            }
            first += piece.len();
        }
    }

    /// Moves the open list into a new frozen run on top (copying every run into one if
    /// that would stack more than [`MAX_RUNS`]).
    fn freeze(&mut self) {
        if self.open.is_empty() {
            return;
        }
        let (start, mut nodes) = if self.runs.len() < MAX_RUNS {
            (self.base, std::mem::take(&mut self.open))
        } else {
            let mut all = Vec::with_capacity(self.len());
            for piece in self.pieces() {
                all.extend_from_slice(piece);
            }
            self.open = Vec::new();
            self.runs.clear();
            (0, all)
        };
        nodes.shrink_to_fit();
        self.base = start + nodes.len();
        self.runs.push(Arc::new(Segment { start, nodes }));
        debug_assert!(self.runs_tile(), "frozen runs must tile 0..base");
    }

    /// Whether the frozen runs tile the ids `0..base`, in order, none empty (the layout
    /// [`Store::at`] and every view rely on).
    fn runs_tile(&self) -> bool {
        let mut end = 0;
        for seg in &self.runs {
            if seg.start != end || seg.nodes.is_empty() {
                return false;
            }
            end = seg.end();
        }
        end == self.base && self.runs.len() <= MAX_RUNS
    }

    /// The frozen runs whose nodes all lie below `limit`, as a store with an empty open
    /// list: the longest shared prefix a copy of the first `limit` nodes can keep.
    fn prefix_below(&self, limit: usize) -> Store {
        let runs: SmallVec<[Arc<Segment>; MAX_RUNS]> = self
            .runs
            .iter()
            .take_while(|seg| seg.end() <= limit)
            .cloned()
            .collect();
        let kept = Store {
            base: runs.last().map_or(0, |seg| seg.end()),
            runs,
            open: Vec::new(),
        };
        debug_assert!(kept.runs_tile(), "frozen runs must tile 0..base");
        kept
    }
}

/// The nodes of a [`Graph`] in id order (topological order): what [`Graph::nodes`]
/// answers. Indexed like a slice (`nodes[i]`, [`Nodes::get`]) and iterated in order. It
/// holds each piece's first id and slice, so indexing finds the piece among at most
/// [`MAX_RUNS`]` + 1` without reading the graph again.
#[derive(Clone, Copy)]
pub struct Nodes<'g> {
    /// The highest piece's first id and nodes (read first).
    top_first: usize,
    top: &'g [Node],
    /// The lowest piece (first id 0; read second).
    bottom: &'g [Node],
    /// The pieces, lowest ids first, `(first id, nodes)`; the first `count` are used.
    parts: [(usize, &'g [Node]); MAX_RUNS + 1],
    count: usize,
    len: usize,
}

impl<'g> Nodes<'g> {
    fn of(store: &'g Store) -> Self {
        let mut parts: [(usize, &'g [Node]); MAX_RUNS + 1] = [(0, &[]); MAX_RUNS + 1];
        let mut count = 0;
        for seg in &store.runs {
            parts[count] = (seg.start, &seg.nodes[..]);
            count += 1;
        }
        if !store.open.is_empty() || count == 0 {
            parts[count] = (store.base, &store.open[..]);
            count += 1;
        }
        let (top_first, top) = parts[count - 1];
        Nodes {
            top_first,
            top,
            bottom: parts[0].1,
            parts,
            count,
            len: store.len(),
        }
    }

    /// Number of nodes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The node at index `i`, if there is one.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'g Node> {
        if i < self.len {
            Some(self.at(i))
        } else {
            None
        }
    }

    /// The node at index `i`, which must be below `len` (above it the top piece's index
    /// panics).
    #[inline(always)]
    fn at(&self, i: usize) -> &'g Node {
        if i >= self.top_first {
            return &self.top[i - self.top_first];
        }
        if i < self.bottom.len() {
            return &self.bottom[i];
        }
        self.between(i)
    }

    /// [`Nodes::at`] in a piece between the lowest and the highest.
    #[inline(never)]
    fn between(&self, i: usize) -> &'g Node {
        for &(first, piece) in self.parts[1..self.count - 1].iter().rev() {
            if i >= first {
                return &piece[i - first];
            }
        }
        unreachable!("node {i} is in no piece")
    }

    /// The nodes in id order.
    pub fn iter(&self) -> Iter<'g> {
        let mut pieces: [&'g [Node]; MAX_RUNS + 1] = [&[]; MAX_RUNS + 1];
        for (p, &(_, piece)) in pieces.iter_mut().zip(&self.parts[..self.count]) {
            *p = piece;
        }
        Iter::new(pieces, self.count, self.len)
    }

    /// The nodes as contiguous pieces, in id order (each frozen run, then the open list):
    /// for reading them a slice at a time.
    pub fn pieces(&self) -> impl Iterator<Item = &'g [Node]> {
        let parts = self.parts;
        parts.into_iter().take(self.count).map(|(_, piece)| piece)
    }

    /// The nodes copied into one list.
    pub fn to_vec(&self) -> Vec<Node> {
        let mut out = Vec::with_capacity(self.len());
        for piece in self.pieces() {
            out.extend_from_slice(piece);
        }
        out
    }
}

impl std::ops::Index<usize> for Nodes<'_> {
    type Output = Node;

    /// # Panics
    /// If `i` is not below [`Nodes::len`].
    #[inline]
    fn index(&self, i: usize) -> &Node {
        self.at(i)
    }
}

impl<'g> IntoIterator for Nodes<'g> {
    type Item = &'g Node;
    type IntoIter = Iter<'g>;

    fn into_iter(self) -> Iter<'g> {
        self.iter()
    }
}

impl PartialEq for Nodes<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl fmt::Debug for Nodes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The iterator of [`Nodes::iter`]: a slice iterator over the piece at each end, so a
/// step is a slice iterator's step.
#[derive(Clone)]
pub struct Iter<'g> {
    pieces: [&'g [Node]; MAX_RUNS + 1],
    /// The piece read from the front, and the next piece it moves to.
    front: std::slice::Iter<'g, Node>,
    next: usize,
    /// The piece read from the back; the pieces `next..prev` are untouched.
    back: std::slice::Iter<'g, Node>,
    prev: usize,
    /// Nodes not yet answered from either end.
    left: usize,
}

impl<'g> Iter<'g> {
    fn new(pieces: [&'g [Node]; MAX_RUNS + 1], count: usize, len: usize) -> Self {
        Iter {
            pieces,
            front: [].iter(),
            next: 0,
            back: [].iter(),
            prev: count,
            left: len,
        }
    }
}

impl fmt::Debug for Iter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").field("left", &self.left).finish()
    }
}

impl<'g> Iterator for Iter<'g> {
    type Item = &'g Node;

    #[inline]
    fn next(&mut self) -> Option<&'g Node> {
        loop {
            if let Some(n) = self.front.next() {
                self.left -= 1;
                return Some(n);
            }
            if self.next < self.prev {
                self.front = self.pieces[self.next].iter();
                self.next += 1;
            } else {
                // What is left is in the back piece.
                let n = self.back.next()?;
                self.left -= 1;
                return Some(n);
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    #[inline]
    fn next_back(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(n) = self.back.next_back() {
                self.left -= 1;
                return Some(n);
            }
            if self.prev > self.next {
                self.prev -= 1;
                self.back = self.pieces[self.prev].iter();
            } else {
                let n = self.front.next_back()?;
                self.left -= 1;
                return Some(n);
            }
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}
impl std::iter::FusedIterator for Iter<'_> {}

/// The hash the interning index files `node` under.
fn hash_of(node: &Node) -> u64 {
    FxBuildHasher.hash_one(node)
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Graph ({} nodes)", self.len())?;
        for (i, n) in self.nodes().iter().enumerate() {
            writeln!(f, "  n{i} = {n:?}")?;
        }
        Ok(())
    }
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.store.len() == 0
    }

    /// The node `id`.
    ///
    /// # Panics
    /// If `id` does not belong to this graph (a programming error, never user input).
    #[inline]
    pub fn node(&self, id: NodeId) -> &Node {
        self.store.at(id.index())
    }

    /// All nodes, in topological order (id order), wherever they are stored (see
    /// [`Graph`]'s "Shared nodes").
    pub fn nodes(&self) -> Nodes<'_> {
        Nodes::of(&self.store)
    }

    /// The constant's value if `id` is a constant node.
    #[inline]
    pub fn constant_of(&self, id: NodeId) -> Option<f64> {
        self.node(id).constant()
    }

    /// Whether `id` is the constant `value` (bitwise, so `-0.0` is not `0.0`).
    #[inline]
    pub fn is_constant(&self, id: NodeId, value: f64) -> bool {
        self.node(id) == &Node::Const(Constant::new(value))
    }

    /// Adds `node`, folding it first (see [`crate::fold`]) and answering the existing id
    /// when an equal node is already present. The only way nodes are made.
    pub fn add(&mut self, node: Node) -> NodeId {
        if let Node::Apply(op, args) = node {
            debug_assert!(
                args[..op.arity()].iter().all(|a| a.index() < self.len()),
                "argument of {op} is not an earlier node"
            );
            match fold::fold(self, op, &args[..op.arity()]) {
                Some(fold::Folded::Node(id)) => return id,
                Some(fold::Folded::Const(v)) => return self.intern(Node::Const(Constant::new(v))),
                Some(fold::Folded::Rewrite(op, [a, b])) => {
                    return self.add(Node::Apply(op, [a, b, NO_ARG]));
                }
                None => {}
            }
        }
        self.intern(node)
    }

    /// The graph of `nodes` exactly as given (nothing folded or merged), for nodes read
    /// from outside, such as a saved equation: each node is checked as [`crate::verify`]
    /// checks it (arguments earlier, no node twice, no operation of constants only,
    /// symbols below `symbols` and seeds below `seeds`) before it is taken, so nothing
    /// that reads the graph later can index out of it or loop.
    ///
    /// # Errors
    /// The first [`Violation`](crate::Violation) found.
    pub fn from_nodes(
        nodes: Vec<Node>,
        symbols: usize,
        seeds: usize,
    ) -> Result<Graph, crate::Violation> {
        let mut seen: HashTable<NodeId> = HashTable::new();
        let rehash = |id: &NodeId| hash_of(&nodes[id.index()]);
        seen.reserve(nodes.len(), rehash);
        for (i, node) in nodes.iter().enumerate() {
            let id = NodeId::from_index(i);
            let what = crate::verify::node_violation(i, |a| nodes[a], node, symbols, seeds)
                .or_else(|| {
                    let hash = hash_of(node);
                    match seen.find(hash, |p| nodes[p.index()] == *node) {
                        Some(prev) => Some(format!("duplicates {prev}")),
                        None => {
                            seen.insert_unique(hash, id, rehash);
                            None
                        }
                    }
                });
            if let Some(what) = what {
                return Err(crate::Violation { node: id, what });
            }
        }
        drop(seen);
        // Read, not added to: no index until something adds, and frozen (see [`Graph`]).
        let mut g = Graph {
            store: Store {
                open: nodes,
                ..Store::default()
            },
            intern: HashTable::new(),
        };
        g.store.freeze();
        Ok(g)
    }

    /// Adds a node exactly as given, without folding: for copying nodes that were folded
    /// when first made.
    pub(crate) fn intern(&mut self, node: Node) -> NodeId {
        if self.intern.len() != self.len() {
            self.index();
        }
        let store = &self.store;
        let entry = self.intern.entry(
            hash_of(&node),
            |id| *store.at(id.index()) == node,
            |id| hash_of(store.at(id.index())),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(e) => *e.get(),
            hashbrown::hash_table::Entry::Vacant(e) => {
                let id = NodeId::from_index(self.store.len());
                e.insert(id);
                self.store.open.push(node);
                id
            }
        }
    }

    /// Appends `node`, which the caller knows is not in the graph yet (a node of another
    /// hash-consed graph whose arguments are mapped one-to-one), without looking it up:
    /// into the index too if the graph has one, so the index stays complete or absent.
    pub(crate) fn push_distinct(&mut self, node: Node) -> NodeId {
        let id = NodeId::from_index(self.store.len());
        if !self.intern.is_empty() {
            let store = &self.store;
            debug_assert!(self
                .intern
                .find(hash_of(&node), |i| *store.at(i.index()) == node)
                .is_none());
            self.intern
                .insert_unique(hash_of(&node), id, |i| hash_of(store.at(i.index())));
        }
        self.store.open.push(node);
        id
    }

    /// Builds the interning index from the nodes (a graph made without one is being added
    /// to).
    fn index(&mut self) {
        let store = &self.store;
        let rehash = |id: &NodeId| hash_of(store.at(id.index()));
        self.intern.clear();
        self.intern.reserve(store.len(), rehash);
        let intern = &mut self.intern;
        store.each_from(0, |i, node| {
            intern.insert_unique(hash_of(node), NodeId::from_index(i), rehash);
        });
    }

    /// Drops the interning index and freezes the nodes (see [`Graph`]): for a graph that
    /// is finished (the index is rebuilt, once, if the graph is added to again).
    pub(crate) fn freeze(&mut self) {
        self.intern = HashTable::new();
        self.store.freeze();
    }

    /// The constant `value`.
    pub fn constant(&mut self, value: f64) -> NodeId {
        self.add(Node::Const(Constant::new(value)))
    }

    /// The symbol `s`.
    pub fn symbol(&mut self, s: SymbolId) -> NodeId {
        self.add(Node::Symbol(s))
    }

    /// The seed input `s`.
    pub fn seed(&mut self, s: SeedId) -> NodeId {
        self.add(Node::Seed(s))
    }

    /// `op` applied to `args` (which must hold exactly [`Op::arity`] earlier ids).
    pub fn apply(&mut self, op: Op, args: &[NodeId]) -> NodeId {
        debug_assert_eq!(args.len(), op.arity(), "{op} takes {} args", op.arity());
        let mut a = [NO_ARG; 3];
        a[..args.len()].copy_from_slice(args);
        self.add(Node::Apply(op, a))
    }

    /// `op(a)`.
    pub fn unary(&mut self, op: Op, a: NodeId) -> NodeId {
        self.apply(op, &[a])
    }

    /// `op(a, b)`.
    pub fn binary(&mut self, op: Op, a: NodeId, b: NodeId) -> NodeId {
        self.apply(op, &[a, b])
    }

    /// `select(c, t, f)`.
    pub fn select(&mut self, c: NodeId, t: NodeId, f: NodeId) -> NodeId {
        self.apply(Op::Select, &[c, t, f])
    }

    /// A new graph holding only the nodes `roots` reach, in the same relative order, and
    /// the roots' ids in it. A [`Op::Hold`] is replaced by its argument (and what reads
    /// it folded again), so no extracted graph holds one, and no node that only a folded
    /// node reached. The new graph has no interning
    /// index and is frozen; it shares this graph's frozen runs below the first node that
    /// is not live or is a hold, and copies the rest (see [`Graph`]).
    pub fn extract(&self, roots: &[NodeId]) -> (Graph, Vec<NodeId>) {
        let (live, count, first_hold) = self.liveness(roots);
        let len = self.len();
        let first_dead = live.iter().position(|&l| !l).unwrap_or(len);
        let mut out = Graph {
            store: self.store.prefix_below(first_dead.min(first_hold)),
            intern: HashTable::new(),
        };
        // Kept nodes keep their ids; `map` renumbers the others.
        let kept = out.len();
        out.store.open.reserve_exact(count - kept);
        let mut map = vec![NO_ARG; len - kept];
        let remap = |map: &[NodeId], a: NodeId| match a.index().checked_sub(kept) {
            Some(k) => map[k],
            None => a,
        };
        if first_hold == len {
            // Live nodes of a hash-consed graph with their arguments renumbered one-to-one
            // stay distinct: copied without an index.
            self.store.each_from(kept, |i, node| {
                if live[i] {
                    map[i - kept] = out.push_distinct(node.map_args(|a| remap(&map, a)));
                }
            });
        } else {
            // Whether a node reads a removed `hold` (directly or not): it is folded afresh.
            let mut held = vec![false; len - kept];
            let held_at = |held: &[bool], a: NodeId| a.index() >= kept && held[a.index() - kept];
            self.store.each_from(kept, |i, node| {
                if live[i] {
                    map[i - kept] = match *node {
                        // A stop-gradient has done its work once the AD passes are over:
                        // it is its argument (`Op::Hold`).
                        Node::Apply(Op::Hold, args) => {
                            held[i - kept] = true;
                            remap(&map, args[0])
                        }
                        _ if node.args().iter().any(|&a| held_at(&held, a)) => {
                            held[i - kept] = true;
                            out.add(node.map_args(|a| remap(&map, a)))
                        }
                        _ => out.intern(node.map_args(|a| remap(&map, a))),
                    };
                }
            });
        }
        let roots: Vec<NodeId> = roots.iter().map(|&r| remap(&map, r)).collect();
        out.freeze();
        if first_hold < len && out.reach(&roots) < out.len() {
            // A node rebuilt without its hold may fold to one of its arguments or to an
            // existing node (`neg(hold(neg(x)))` is `x`), leaving nodes made before it that
            // nothing reaches now. The copy has no hold left, so extracting it again
            // only drops them.
            return out.extract(&roots);
        }
        (out, roots)
    }

    /// [`Graph::extract`], consuming the graph: the same graph and root ids. Where every
    /// frozen run is live and no node a [`Op::Hold`] (a lane built from the model or from
    /// another lane whose nodes it all computes), the live open nodes are moved down in
    /// place (each node's new id is at most its old one), so the graph being pruned and
    /// its pruned copy are never held at once (the interning index is dropped first, and
    /// the open list is shrunk to the live nodes); otherwise the graph is extracted as
    /// [`Graph::extract`] does it. The result is frozen.
    pub fn prune(mut self, roots: &[NodeId]) -> (Graph, Vec<NodeId>) {
        self.intern = HashTable::new();
        let (live, count, first_hold) = self.liveness(roots);
        let (len, base) = (self.len(), self.store.base);
        if first_hold < len || live[..base].iter().any(|&l| !l) {
            drop(live);
            return self.extract(roots);
        }
        let mut map = vec![NO_ARG; len - base];
        let remap = |map: &[NodeId], a: NodeId| match a.index().checked_sub(base) {
            Some(k) => map[k],
            None => a,
        };
        let open = &mut self.store.open;
        let mut next = 0;
        for k in 0..open.len() {
            if live[base + k] {
                // Arguments are earlier, so already moved: `map` holds their new ids.
                open[next] = open[k].map_args(|a| remap(&map, a));
                map[k] = NodeId::from_index(base + next);
                next += 1;
            }
        }
        debug_assert_eq!(base + next, count);
        open.truncate(next);
        let roots = roots.iter().map(|&r| remap(&map, r)).collect();
        drop((live, map));
        self.store.freeze();
        (self, roots)
    }

    /// Which nodes `roots` reach, how many, and the lowest index of a live [`Op::Hold`]
    /// (the node count if none is).
    fn liveness(&self, roots: &[NodeId]) -> (Vec<bool>, usize, usize) {
        let len = self.len();
        let mut live = vec![false; len];
        for r in roots {
            live[r.index()] = true;
        }
        let (mut count, mut first_hold) = (0, len);
        let mut end = len;
        for piece in self.store.pieces().into_iter().rev() {
            let first = end - piece.len();
            for (k, node) in piece.iter().enumerate().rev() {
                let i = first + k;
                if live[i] {
                    count += 1;
                    if node.op() == Some(Op::Hold) {
                        first_hold = i;
                    }
                    for a in node.args() {
                        live[a.index()] = true;
                    }
                }
            }
            end = first;
        }
        (live, count, first_hold)
    }

    /// How many of this graph's first nodes are stored once for it and `other` (the
    /// frozen runs both hold): what building one from the other shared.
    pub fn shared_with(&self, other: &Graph) -> usize {
        self.store
            .runs
            .iter()
            .zip(&other.store.runs)
            .take_while(|(a, b)| Arc::ptr_eq(a, b))
            .last()
            .map_or(0, |(seg, _)| seg.end())
    }

    /// The arguments of the user-function call `id` ([`Op::Call`]) in order, read through
    /// its [`Op::Pack`] chain: `a, b` for `call(tag, a, b)` (`b` the constant `0` for a
    /// function of one argument), `a₁, …, a_k` for `call(tag, a₁, pack(a₂, … a_k))`.
    /// Empty for a node that is not a call.
    pub fn call_args(&self, id: NodeId) -> CallArgs<'_> {
        let (first, rest) = match *self.node(id) {
            Node::Apply(Op::Call, args) => (Some(args[1]), Some(args[2])),
            _ => (None, None),
        };
        CallArgs {
            graph: self,
            first,
            rest,
        }
    }

    /// Whether `id` is a call of a function of three or more arguments (its last operand
    /// an [`Op::Pack`] chain), which engines evaluate through [`crate::user::call_slice`].
    #[inline]
    pub fn is_packed_call(&self, id: NodeId) -> bool {
        match *self.node(id) {
            Node::Apply(Op::Call, args) => matches!(self.node(args[2]), Node::Apply(Op::Pack, _)),
            _ => false,
        }
    }

    /// The operands node `id`'s value is computed from, numbered as its AD rule
    /// ([`crate::ad::rules::flow`]) numbers them, into `out` (cleared first): an
    /// operation's arguments; a call's tag and then its arguments through the pack chain
    /// ([`Graph::call_args`]); nothing for a pack (which has no value of its own) or a
    /// leaf.
    pub fn operands_into(&self, id: NodeId, out: &mut Vec<NodeId>) {
        out.clear();
        match *self.node(id) {
            Node::Apply(Op::Pack, _) => {}
            Node::Apply(Op::Call, args) => {
                out.push(args[0]);
                out.extend(self.call_args(id));
            }
            ref n => out.extend_from_slice(n.args()),
        }
    }

    /// How many nodes `roots` reach (the work an evaluation of them does).
    pub fn reach(&self, roots: &[NodeId]) -> usize {
        self.liveness(roots).1
    }

    /// Evaluates `roots` at `symbols` (and `seeds`) with the reference semantics of
    /// [`crate::math::eval`]: a slow, obviously-correct oracle for tests and folding.
    ///
    /// # Panics
    /// If a symbol or seed index is out of range of the slices given.
    pub fn eval_reference(&self, roots: &[NodeId], symbols: &[f64], seeds: &[f64]) -> Vec<f64> {
        let mut v = vec![0.0; self.len()];
        for (i, node) in self.nodes().iter().enumerate() {
            v[i] = match *node {
                Node::Const(c) => c.value(),
                Node::Symbol(s) => symbols[s.index()],
                Node::Seed(s) => seeds[s.index()],
                Node::Apply(Op::Call, args) if self.is_packed_call(NodeId::from_index(i)) => {
                    let x: Vec<f64> = self
                        .call_args(NodeId::from_index(i))
                        .map(|a| v[a.index()])
                        .collect();
                    crate::user::call_slice(v[args[0].index()], &x)
                }
                Node::Apply(op, args) => {
                    let mut x = [0.0; 3];
                    for (xi, a) in x.iter_mut().zip(&args[..op.arity()]) {
                        *xi = v[a.index()];
                    }
                    crate::math::eval(op, &x)
                }
            };
        }
        roots.iter().map(|r| v[r.index()]).collect()
    }
}

/// The arguments of a call, read through its pack chain ([`Graph::call_args`]).
#[derive(Clone, Debug)]
pub struct CallArgs<'g> {
    graph: &'g Graph,
    first: Option<NodeId>,
    rest: Option<NodeId>,
}

impl Iterator for CallArgs<'_> {
    type Item = NodeId;

    fn next(&mut self) -> Option<NodeId> {
        if let Some(a) = self.first.take() {
            return Some(a);
        }
        let r = self.rest.take()?;
        match *self.graph.node(r) {
            Node::Apply(Op::Pack, args) => {
                self.rest = Some(args[1]);
                Some(args[0])
            }
            _ => Some(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `x*y + sin(x)` and a node no root reaches, in a fresh graph.
    fn sample() -> (Graph, NodeId, NodeId) {
        let mut g = Graph::new();
        let x = g.symbol(SymbolId(0));
        let y = g.symbol(SymbolId(1));
        let _dead = g.binary(Op::Sub, x, y);
        let xy = g.binary(Op::Mul, x, y);
        let s = g.unary(Op::Sin, x);
        let root = g.binary(Op::Add, xy, s);
        (g, xy, root)
    }

    #[test]
    fn an_extracted_graph_hash_conses_when_added_to() {
        let (g, _, root) = sample();
        let (mut e, roots) = g.extract(&[root]);
        // Made without an index, with no spare room.
        assert_eq!((e.intern.len(), e.len(), e.store.open.len()), (0, 5, 0));
        // Adding finds every node already there (the index is built from the nodes)…
        let x = e.symbol(SymbolId(0));
        let y = e.symbol(SymbolId(1));
        let xy = e.binary(Op::Mul, x, y);
        let s = e.unary(Op::Sin, x);
        assert_eq!(e.binary(Op::Add, xy, s), roots[0]);
        assert_eq!(e.len(), 5);
        // …and a new node is new, once.
        let d = e.binary(Op::Div, x, y);
        assert_eq!((d, e.binary(Op::Div, x, y), e.len()), (NodeId(5), d, 6));
        assert_eq!(e.intern.len(), 6);
        assert!(crate::verify(&e, 2, 0).is_empty());
    }

    #[test]
    fn pruning_in_place_gives_the_extracted_graph() {
        // Without a hold (moved down in place, the index dropped, no spare room) and with
        // one (extracted), the same nodes and roots as `extract`.
        let (mut g, xy, root) = sample();
        let x = g.symbol(SymbolId(0));
        let h = g.unary(Op::Hold, x);
        let hxy = g.binary(Op::Mul, h, xy);
        for roots in [vec![root, xy], vec![hxy, root]] {
            let (e, e_roots) = g.extract(&roots);
            let (p, p_roots) = g.clone().prune(&roots);
            assert_eq!((p.nodes(), &p_roots), (e.nodes(), &e_roots));
            assert_eq!((p.intern.len(), p.store.open.len()), (0, 0));
            assert!(crate::verify(&p, 2, 0).is_empty());
        }
        assert_eq!(
            g.clone().prune(&[root]).0.len(),
            5,
            "the dead `x - y` is gone"
        );
    }

    #[test]
    fn extraction_through_a_hold_still_merges_equal_nodes() {
        // `hold(x)*y` becomes `x*y` once the hold is gone: one node with the `x*y` the
        // graph already had, not two equal ones.
        let (mut g, xy, _) = sample();
        let x = g.symbol(SymbolId(0));
        let y = g.symbol(SymbolId(1));
        let h = g.unary(Op::Hold, x);
        let hy = g.binary(Op::Mul, h, y);
        let root = g.binary(Op::Add, hy, xy);
        let (e, roots) = g.extract(&[root]);
        assert_eq!(e.len(), 4, "{e:?}");
        assert_eq!(e.intern.len(), 0);
        assert!(crate::verify(&e, 2, 0).is_empty());
        assert_eq!(e.eval_reference(&roots, &[3.0, 5.0], &[]), [30.0]);
    }

    #[test]
    fn nodes_read_from_outside_are_checked_then_hash_consed_on_add() {
        let x = Node::Symbol(SymbolId(0));
        let sin = Node::Apply(Op::Sin, [NodeId(0), NO_ARG, NO_ARG]);
        let err = Graph::from_nodes(vec![x, sin, sin], 1, 0).err().unwrap();
        assert_eq!((err.node, err.what.as_str()), (NodeId(2), "duplicates n1"));
        let mut g = Graph::from_nodes(vec![x, sin], 1, 0).unwrap();
        assert_eq!(g.intern.len(), 0);
        assert_eq!(g.add(sin), NodeId(1));
        assert_eq!(g.len(), 2);
    }

    /// `sample()`'s graph extracted to its root (frozen), and `sin(x*y)` built on a clone
    /// of it, with the root of each.
    fn built_on_frozen() -> (Graph, NodeId, Graph, NodeId) {
        let (g, _, root) = sample();
        let (base, r) = g.extract(&[root]);
        let mut on = base.clone();
        assert_eq!(on.shared_with(&base), base.len(), "a clone copies no node");
        let x = on.symbol(SymbolId(0));
        let y = on.symbol(SymbolId(1));
        let xy = on.binary(Op::Mul, x, y);
        let top = on.unary(Op::Sin, xy);
        (base, r[0], on, top)
    }

    #[test]
    fn a_graph_built_on_a_frozen_one_shares_its_nodes_where_all_are_live() {
        let (base, r, on, top) = built_on_frozen();
        assert_eq!(on.len(), base.len() + 1, "only sin(x*y) is new");
        for roots in [vec![top, r], vec![r, top]] {
            let (e, e_roots) = on.extract(&roots);
            let (p, p_roots) = on.clone().prune(&roots);
            assert_eq!((e.nodes(), &e_roots), (p.nodes(), &p_roots));
            assert_eq!(e.shared_with(&base), base.len());
            assert_eq!(p.shared_with(&base), base.len());
            assert_eq!(
                p.nodes().pieces().count(),
                2,
                "the base's run, then its own"
            );
            assert!(crate::verify(&p, 2, 0).is_empty());
        }
        // Not every base node live: copied into one run of its own.
        let (p, p_roots) = on.clone().prune(&[top]);
        assert_eq!((p.len(), p.shared_with(&base)), (4, 0));
        assert_eq!(p.nodes().pieces().count(), 1);
        assert_eq!(p.eval_reference(&p_roots, &[3.0, 5.0], &[]), [15f64.sin()]);
        assert!(crate::verify(&p, 2, 0).is_empty());
    }

    #[test]
    fn a_hold_above_a_frozen_run_is_removed_and_the_run_kept() {
        let (base, r, mut on, _) = built_on_frozen();
        let x = on.symbol(SymbolId(0));
        let h = on.unary(Op::Hold, x);
        let y = on.symbol(SymbolId(1));
        let hy = on.binary(Op::Mul, h, y);
        let top = on.binary(Op::Add, hy, r);
        let (p, roots) = on.prune(&[top]);
        assert_eq!(p.shared_with(&base), base.len());
        // `hold(x)*y` is the base's `x*y`: nothing new but the sum.
        assert_eq!(p.len(), base.len() + 1);
        assert!(p.nodes().iter().all(|n| n.op() != Some(Op::Hold)));
        assert_eq!(
            p.eval_reference(&roots, &[3.0, 5.0], &[]),
            [15.0 + (15.0 + 3f64.sin())]
        );
    }

    #[test]
    fn runs_stack_up_to_a_limit_then_merge() {
        let mut g = Graph::new();
        let mut top = g.symbol(SymbolId(0));
        let mut frozen = Vec::new();
        for k in 0..2 * MAX_RUNS {
            let c = g.constant(k as f64 + 2.0);
            top = g.binary(Op::Mul, top, c);
            top = g.binary(Op::Add, top, c);
            g.freeze();
            let runs = g.store.runs.len();
            assert!((1..=MAX_RUNS).contains(&runs), "{runs} runs");
            frozen.push(g.nodes().to_vec());
        }
        // Every node kept, in order, through every merge.
        let all = g.nodes().to_vec();
        for f in &frozen {
            assert_eq!(&all[..f.len()], &f[..]);
        }
        assert!(crate::verify(&g, 1, 0).is_empty());
        assert_eq!(g.reach(&[top]), g.len());
    }

    #[test]
    fn the_node_view_reads_every_run_in_order() {
        let (_, _, on, top) = built_on_frozen();
        let nodes = on.nodes();
        let flat = nodes.to_vec();
        assert_eq!(flat.len(), nodes.len());
        for (i, n) in nodes.iter().enumerate() {
            assert_eq!(
                (n, &nodes[i], nodes.get(i)),
                (&flat[i], &flat[i], Some(&flat[i]))
            );
        }
        assert_eq!(nodes.get(flat.len()), None);
        let back: Vec<Node> = nodes.iter().rev().copied().collect();
        assert!(back.iter().eq(flat.iter().rev()));
        // From both ends at once, meeting anywhere.
        for split in 0..=flat.len() {
            let mut it = nodes.iter();
            let mut front: Vec<Node> = it.by_ref().take(split).copied().collect();
            let mut tail: Vec<Node> = it.rev().copied().collect();
            tail.reverse();
            front.extend(tail);
            assert_eq!(front, flat, "split at {split}");
        }
        // Alternating ends.
        let mut it = nodes.iter();
        let (mut front, mut back) = (Vec::new(), Vec::new());
        while it.len() > 0 {
            front.extend(it.next().copied());
            back.extend(it.next_back().copied());
        }
        back.reverse();
        front.extend(back);
        assert_eq!(front, flat);
        assert_eq!(nodes.iter().len(), flat.len());
        assert_eq!(nodes.pieces().map(<[Node]>::len).sum::<usize>(), flat.len());
        assert_eq!(*on.node(top), flat[flat.len() - 1]);
        assert_eq!(nodes, Graph::from_nodes(flat, 2, 0).unwrap().nodes());
    }
}
