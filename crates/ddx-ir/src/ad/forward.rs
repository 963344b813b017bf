//! Forward mode: tangents pushed up the graph.
//!
//! Input: a graph, and a tangent (or structural zero) for each symbol. Output: the tangent
//! of each requested node, written into the same graph as new nodes. A guarded flow (see
//! [`super::rules::Flow`]) becomes a `select` around its contribution, so the untaken arm
//! of a `select` contributes nothing; the two complementary flows of one `select` merge
//! into a single `select(c, ṫ, ḟ)`.
//!
//! A tangent that folds to a constant zero is a structural zero: no node carries it on.

use super::rules::{flow, Flow};
use super::Deriv;
use crate::{Graph, Node, NodeId, Op};

/// Pushes `symbol_tangents` (indexed by symbol) up to every node of `graph` up to
/// `max(roots)` and answers the tangent of each root.
pub fn forward(graph: &mut Graph, symbol_tangents: &[Deriv], roots: &[NodeId]) -> Vec<Deriv> {
    let top = roots.iter().map(|r| r.index() + 1).max().unwrap_or(0);
    let mut tangent: Vec<Deriv> = vec![None; top];
    for i in 0..top {
        let id = NodeId::from_index(i);
        tangent[i] = match *graph.node(id) {
            Node::Const(_) | Node::Seed(_) => None,
            Node::Symbol(s) => symbol_tangents.get(s.index()).copied().flatten(),
            Node::Apply(op, args) => {
                let mut flows: Vec<Flow> = Vec::with_capacity(3);
                for (k, a) in args[..op.arity()].iter().enumerate() {
                    if let Some(t) = tangent[a.index()] {
                        flows.push(flow(graph, id, k, t));
                    }
                }
                combine(graph, flows)
            }
        };
    }
    roots.iter().map(|r| tangent[r.index()]).collect()
}

/// The sum of `flows`, guarded ones turned into `select`s (complementary pairs merged).
fn combine(g: &mut Graph, mut flows: Vec<Flow>) -> Deriv {
    let mut terms: Vec<NodeId> = Vec::with_capacity(flows.len());
    while let Some(f) = flows.pop() {
        match f {
            Flow::Zero => {}
            Flow::Plain(v) => terms.push(v),
            Flow::Guarded { cond, when, value } => {
                let partner = flows.iter().position(|o| {
                    matches!(*o, Flow::Guarded { cond: c, when: w, .. } if c == cond && w != when)
                });
                let other = match partner.map(|p| flows.remove(p)) {
                    Some(Flow::Guarded { value, .. }) => value,
                    _ => g.constant(0.0),
                };
                let (t, e) = if when { (value, other) } else { (other, value) };
                terms.push(g.select(cond, t, e));
            }
        }
    }
    // Flows were popped last-first; sum in argument order.
    terms.reverse();
    let mut sum = terms.into_iter();
    let first = sum.next()?;
    let total = sum.fold(first, |acc, t| g.binary(Op::Add, acc, t));
    match g.constant_of(total) {
        Some(0.0) => None,
        _ => Some(total),
    }
}
