//! The IR verifier: checks every invariant of a graph and reports each violation with its
//! node. Passes run it between steps in debug builds and tests, and [`Graph::from_nodes`]
//! runs the same per-node check on nodes read from outside (a saved equation).

use crate::{Graph, Node, NodeId, Op};
use std::fmt;

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The node where it was found.
    pub node: NodeId,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.node, self.what)
    }
}

/// Checks `graph` (topological order, hash-consing, folding) and that its symbol and seed
/// inputs are below `symbols` and `seeds`. Answers every violation found.
pub fn verify(graph: &Graph, symbols: usize, seeds: usize) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut seen = rustc_hash::FxHashMap::default();
    let nodes = graph.nodes();
    for (i, node) in nodes.iter().enumerate() {
        let id = NodeId::from_index(i);
        if let Some(prev) = seen.insert(*node, id) {
            out.push(Violation {
                node: id,
                what: format!("duplicates {prev}"),
            });
        }
        if let Some(what) = node_violation(i, |a| nodes[a], node, symbols, seeds) {
            out.push(Violation { node: id, what });
        }
    }
    out
}

/// What is wrong with `node` placed at index `i`, after the nodes `before` answers for
/// the indices below `i` (every invariant but hash-consing, which needs the whole graph's
/// index), or `None`. Never asks `before` for an index of `i` or more.
pub(crate) fn node_violation(
    i: usize,
    before: impl Fn(usize) -> Node,
    node: &Node,
    symbols: usize,
    seeds: usize,
) -> Option<String> {
    match *node {
        Node::Symbol(s) if s.index() >= symbols => Some(format!("symbol {s} of {symbols}")),
        Node::Seed(s) if s.index() >= seeds => Some(format!("seed {s} of {seeds}")),
        Node::Const(c) if c.value().is_nan() && c.value().to_bits() != f64::NAN.to_bits() => {
            Some("non-canonical NaN".into())
        }
        Node::Apply(op, args) => {
            let args = &args[..op.arity()];
            if let Some(a) = args.iter().find(|a| a.index() >= i) {
                return Some(format!("argument {a} is not earlier"));
            }
            if op != Op::Pack && args.iter().all(|a| before(a.index()).constant().is_some()) {
                return Some(format!("{op} of constants was not folded"));
            }
            // A pack is only a call's last operand or a pack's, and never its first.
            let tail = match op {
                Op::Call | Op::Pack => args.len() - 1,
                _ => usize::MAX,
            };
            args.iter()
                .enumerate()
                .find(|&(k, a)| k != tail && before(a.index()).op() == Some(Op::Pack))
                .map(|(k, _)| format!("a pack is argument {k} of {op}"))
        }
        _ => None,
    }
}
