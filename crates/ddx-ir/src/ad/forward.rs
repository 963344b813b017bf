//! Forward mode: tangents pushed up the graph.
//!
//! Input: a graph, and a tangent (or structural zero) for each symbol. Output: the tangent
//! of each requested node, written into the same graph as new nodes, or a structural zero.
//!
//! **Guards** ([`super::guard`]): a tangent term leaving an arm of a `select` (and the
//! like) carries its guard up to the output and is masked there, exactly as reverse mode
//! carries it down to the symbol, so the two modes exclude the same paths: a tangent
//! masked at the `select` and then divided by `sqrt'(0) = ∞` would otherwise be NaN where
//! the adjoint is 0. The two arms of one `select` merge into a single `select(c, ṫ, ḟ)`.
//!
//! A tangent that folds to a constant zero is a structural zero: no node carries it on.

use super::guard::{combine, mask, Term, Terms};
use super::rules::flow;
use super::Deriv;
use crate::{Graph, Node, NodeId};

/// Pushes `symbol_tangents` (indexed by symbol) up to every node of `graph` up to
/// `max(roots)` and answers the tangent of each root.
pub fn forward(graph: &mut Graph, symbol_tangents: &[Deriv], roots: &[NodeId]) -> Vec<Deriv> {
    let top = roots.iter().map(|r| r.index() + 1).max().unwrap_or(0);
    let mut tangent: Vec<Option<Term>> = vec![None; top];
    for i in 0..top {
        let id = NodeId::from_index(i);
        tangent[i] = match *graph.node(id) {
            Node::Const(_) | Node::Seed(_) => None,
            Node::Symbol(s) => symbol_tangents
                .get(s.index())
                .copied()
                .flatten()
                .filter(|&t| graph.constant_of(t) != Some(0.0))
                .map(Term::plain),
            Node::Apply(op, args) => {
                let mut terms = Terms::new();
                for (k, a) in args[..op.arity()].iter().enumerate() {
                    if let Some(t) = tangent[a.index()].clone() {
                        let edge = flow(graph, id, k, t.value);
                        terms.extend(t.through(edge));
                    }
                }
                combine(graph, terms)
            }
        };
    }
    roots
        .iter()
        .map(|r| {
            let t = tangent[r.index()].as_ref()?;
            Some(mask(graph, &t.guard, t.value))
        })
        .collect()
}
