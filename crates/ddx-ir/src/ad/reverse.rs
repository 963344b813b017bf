//! Reverse mode: adjoints pulled down the graph.
//!
//! Input: a graph and seeds `(node, adjoint)` (the outputs and their weights: `1` for a
//! gradient or Jacobian row, a seed input for `vjp`). Output: the adjoint of every symbol,
//! written into the same graph as new nodes, or a structural zero.
//!
//! **Guards** ([`super::guard`]): an adjoint term flowing into an untaken arm of a
//! `select` (and the like) carries its guard down to the symbol and is masked there, so an
//! untaken arm's NaN or infinite local partial never reaches a derivative.
//!
//! The pass visits each node once, from the highest seed down (one loop, no recursion).

use super::guard::{combine, mask, Term, Terms};
use super::rules::flow;
use super::Deriv;
use crate::{Graph, Node, NodeId};

/// Pulls `seeds` down `graph` and answers the adjoint of each of `symbols` symbols.
pub fn reverse(graph: &mut Graph, seeds: &[(NodeId, NodeId)], symbols: usize) -> Vec<Deriv> {
    let top = seeds.iter().map(|(n, _)| n.index() + 1).max().unwrap_or(0);
    let mut terms: Vec<Terms> = vec![Terms::new(); top];
    for &(node, seed) in seeds {
        terms[node.index()].push(Term::plain(seed));
    }
    let mut out: Vec<Deriv> = vec![None; symbols];
    for i in (0..top).rev() {
        if terms[i].is_empty() {
            continue;
        }
        let id = NodeId::from_index(i);
        let node = *graph.node(id);
        if matches!(node, Node::Const(_) | Node::Seed(_)) {
            terms[i].clear();
            continue;
        }
        let Some(adjoint) = combine(graph, std::mem::take(&mut terms[i])) else {
            continue;
        };
        match node {
            Node::Symbol(s) => {
                if let Some(slot) = out.get_mut(s.index()) {
                    *slot = Some(mask(graph, &adjoint.guard, adjoint.value));
                }
            }
            Node::Apply(op, args) => {
                for (k, a) in args[..op.arity()].iter().enumerate() {
                    if matches!(graph.node(*a), Node::Const(_) | Node::Seed(_)) {
                        continue;
                    }
                    let edge = flow(graph, id, k, adjoint.value);
                    if let Some(t) = adjoint.through(edge) {
                        terms[a.index()].push(t);
                    }
                }
            }
            Node::Const(_) | Node::Seed(_) => {}
        }
    }
    out
}
