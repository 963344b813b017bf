//! The IR verifier: checks every invariant of a graph and reports each violation with its
//! node. Passes run it between steps in debug builds and tests.

use crate::{Graph, Node, NodeId};
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
    for (i, node) in graph.nodes().iter().enumerate() {
        let id = NodeId::from_index(i);
        let mut bad = |what: String| out.push(Violation { node: id, what });
        if let Some(prev) = seen.insert(*node, id) {
            bad(format!("duplicates {prev}"));
        }
        match *node {
            Node::Symbol(s) if s.index() >= symbols => bad(format!("symbol {s} of {symbols}")),
            Node::Seed(s) if s.index() >= seeds => bad(format!("seed {s} of {seeds}")),
            Node::Const(c) if c.value().is_nan() && c.value().to_bits() != f64::NAN.to_bits() => {
                bad("non-canonical NaN".into())
            }
            Node::Apply(op, args) => {
                for a in &args[..op.arity()] {
                    if a.index() >= i {
                        bad(format!("argument {a} is not earlier"));
                    }
                }
                if args[..op.arity()]
                    .iter()
                    .all(|a| a.index() < i && graph.constant_of(*a).is_some())
                {
                    bad(format!("{op} of constants was not folded"));
                }
            }
            _ => {}
        }
    }
    out
}
