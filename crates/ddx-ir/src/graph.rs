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
use std::fmt;
use std::hash::BuildHasher;

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
/// (4 bytes a bucket; the node is read from [`Graph::nodes`] to compare), and a graph that
/// is only read needs none: a graph made by [`Graph::extract`] or [`Graph::prune`] (every
/// lane, every sealed model) or [`Graph::from_nodes`] has no index until something adds to
/// it, when it is built once from the nodes. So the index holds either every node or, in a
/// graph not added to since it was made, none.
#[derive(Clone, Default)]
pub struct Graph {
    nodes: Vec<Node>,
    intern: HashTable<NodeId>,
}

/// The hash the interning index files `node` under.
fn hash_of(node: &Node) -> u64 {
    FxBuildHasher.hash_one(node)
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Graph ({} nodes)", self.nodes.len())?;
        for (i, n) in self.nodes.iter().enumerate() {
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
        self.nodes.len()
    }

    /// Whether the graph has no nodes.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The node `id`.
    ///
    /// # Panics
    /// If `id` does not belong to this graph (a programming error, never user input).
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    /// All nodes, in topological order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The constant's value if `id` is a constant node.
    pub fn constant_of(&self, id: NodeId) -> Option<f64> {
        self.node(id).constant()
    }

    /// Whether `id` is the constant `value` (bitwise, so `-0.0` is not `0.0`).
    pub fn is_constant(&self, id: NodeId, value: f64) -> bool {
        self.node(id) == &Node::Const(Constant::new(value))
    }

    /// Adds `node`, folding it first (see [`crate::fold`]) and answering the existing id
    /// when an equal node is already present. The only way nodes are made.
    pub fn add(&mut self, node: Node) -> NodeId {
        if let Node::Apply(op, args) = node {
            debug_assert!(
                args[..op.arity()]
                    .iter()
                    .all(|a| a.index() < self.nodes.len()),
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
            let what =
                crate::verify::node_violation(&nodes[..i], node, symbols, seeds).or_else(|| {
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
        // Read, not added to: no index until something adds (see [`Graph`]).
        Ok(Graph {
            nodes,
            intern: HashTable::new(),
        })
    }

    /// Adds a node exactly as given, without folding: for copying nodes that were folded
    /// when first made.
    pub(crate) fn intern(&mut self, node: Node) -> NodeId {
        if self.intern.len() != self.nodes.len() {
            self.index();
        }
        let nodes = &self.nodes;
        let entry = self.intern.entry(
            hash_of(&node),
            |id| nodes[id.index()] == node,
            |id| hash_of(&nodes[id.index()]),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(e) => *e.get(),
            hashbrown::hash_table::Entry::Vacant(e) => {
                let id = NodeId::from_index(self.nodes.len());
                e.insert(id);
                self.nodes.push(node);
                id
            }
        }
    }

    /// Appends `node`, which the caller knows is not in the graph yet (a node of another
    /// hash-consed graph whose arguments are mapped one-to-one), without looking it up:
    /// into the index too if the graph has one, so the index stays complete or absent.
    pub(crate) fn push_distinct(&mut self, node: Node) -> NodeId {
        let id = NodeId::from_index(self.nodes.len());
        if !self.intern.is_empty() {
            let nodes = &self.nodes;
            debug_assert!(self
                .intern
                .find(hash_of(&node), |i| nodes[i.index()] == node)
                .is_none());
            self.intern
                .insert_unique(hash_of(&node), id, |i| hash_of(&nodes[i.index()]));
        }
        self.nodes.push(node);
        id
    }

    /// Builds the interning index from the nodes (a graph made without one is being added
    /// to).
    fn index(&mut self) {
        let nodes = &self.nodes;
        let rehash = |id: &NodeId| hash_of(&nodes[id.index()]);
        self.intern.clear();
        self.intern.reserve(nodes.len(), rehash);
        for (i, node) in nodes.iter().enumerate() {
            self.intern
                .insert_unique(hash_of(node), NodeId::from_index(i), rehash);
        }
    }

    /// Drops the interning index and the spare capacity of the node list: for a graph that
    /// is finished (it is rebuilt, once, if the graph is added to again).
    pub(crate) fn freeze(&mut self) {
        self.intern = HashTable::new();
        self.nodes.shrink_to_fit();
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
    /// it folded again), so no extracted graph holds one. The new graph has no interning
    /// index and no spare capacity (see [`Graph`]).
    pub fn extract(&self, roots: &[NodeId]) -> (Graph, Vec<NodeId>) {
        let (live, count, holds) = self.liveness(roots);
        let mut out = Graph {
            nodes: Vec::with_capacity(count),
            intern: HashTable::new(),
        };
        if !holds {
            // Live nodes of a hash-consed graph with their arguments renumbered one-to-one
            // stay distinct: copied without an index.
            let mut map = vec![NO_ARG; self.nodes.len()];
            for (i, node) in self.nodes.iter().enumerate() {
                if live[i] {
                    map[i] = out.push_distinct(node.map_args(|a| map[a.index()]));
                }
            }
            let roots = roots.iter().map(|r| map[r.index()]).collect();
            return (out, roots);
        }
        let mut map = vec![NO_ARG; self.nodes.len()];
        // Whether a node reads a removed `hold` (directly or not): it is folded afresh.
        let mut held = vec![false; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate() {
            if live[i] {
                map[i] = match *node {
                    // A stop-gradient has done its work once the AD passes are over: it
                    // is its argument (`Op::Hold`).
                    Node::Apply(Op::Hold, args) => {
                        held[i] = true;
                        map[args[0].index()]
                    }
                    _ if node.args().iter().any(|a| held[a.index()]) => {
                        held[i] = true;
                        out.add(node.map_args(|a| map[a.index()]))
                    }
                    _ => out.intern(node.map_args(|a| map[a.index()])),
                };
            }
        }
        let roots = roots.iter().map(|r| map[r.index()]).collect();
        out.freeze();
        (out, roots)
    }

    /// [`Graph::extract`], consuming the graph: the same graph and root ids, made by moving
    /// the live nodes down in place (each node's new id is at most its old one) in a graph
    /// with no [`Op::Hold`], so the graph being pruned and its pruned copy are never held
    /// at once (the interning index is dropped first, and the node list is shrunk to the
    /// live nodes). A graph with a hold is extracted as [`Graph::extract`] does it.
    pub fn prune(mut self, roots: &[NodeId]) -> (Graph, Vec<NodeId>) {
        self.intern = HashTable::new();
        let (live, count, holds) = self.liveness(roots);
        if holds {
            drop(live);
            return self.extract(roots);
        }
        let mut map = vec![NO_ARG; self.nodes.len()];
        let mut next = 0;
        for i in 0..self.nodes.len() {
            if live[i] {
                // Arguments are earlier, so already moved: `map` holds their new ids.
                self.nodes[next] = self.nodes[i].map_args(|a| map[a.index()]);
                map[i] = NodeId::from_index(next);
                next += 1;
            }
        }
        debug_assert_eq!(next, count);
        self.nodes.truncate(count);
        self.nodes.shrink_to_fit();
        let roots = roots.iter().map(|r| map[r.index()]).collect();
        (self, roots)
    }

    /// Which nodes `roots` reach, how many, and whether one of them is an [`Op::Hold`].
    fn liveness(&self, roots: &[NodeId]) -> (Vec<bool>, usize, bool) {
        let mut live = vec![false; self.nodes.len()];
        for r in roots {
            live[r.index()] = true;
        }
        let (mut count, mut holds) = (0, false);
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                count += 1;
                holds |= self.nodes[i].op() == Some(Op::Hold);
                for a in self.nodes[i].args() {
                    live[a.index()] = true;
                }
            }
        }
        (live, count, holds)
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
        let mut live = vec![false; self.nodes.len()];
        for r in roots {
            live[r.index()] = true;
        }
        let mut count = 0;
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                count += 1;
                for a in self.nodes[i].args() {
                    live[a.index()] = true;
                }
            }
        }
        count
    }

    /// Evaluates `roots` at `symbols` (and `seeds`) with the reference semantics of
    /// [`crate::math::eval`]: a slow, obviously-correct oracle for tests and folding.
    ///
    /// # Panics
    /// If a symbol or seed index is out of range of the slices given.
    pub fn eval_reference(&self, roots: &[NodeId], symbols: &[f64], seeds: &[f64]) -> Vec<f64> {
        let mut v = vec![0.0; self.nodes.len()];
        for (i, node) in self.nodes.iter().enumerate() {
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
        assert_eq!((e.intern.len(), e.len(), e.nodes.capacity()), (0, 5, 5));
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
            assert_eq!((p.intern.len(), p.nodes.capacity()), (0, p.len()));
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
}
