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
//! The pass visits each node its seeds reach once, highest first (one loop, no recursion).

use super::guard::{combine, mask, Term, Terms};
use super::rules::flow;
use super::Deriv;
use crate::{Graph, Node, NodeId, Op, NO_ARG};
use std::collections::BinaryHeap;

/// Pulls `seeds` down `graph` and answers the adjoint of each of `symbols` symbols.
pub fn reverse(graph: &mut Graph, seeds: &[(NodeId, NodeId)], symbols: usize) -> Vec<Deriv> {
    Sweep::default().run(graph, seeds, symbols)
}

/// Scratch for reverse sweeps, reused across them: the terms arriving at each node, and
/// the nodes holding some in a max-heap, so that a sweep visits only the nodes its seeds
/// reach (highest first, as a dependency order requires) and not every node below them.
/// One sweep per output of a residual system over a data file thus costs what that
/// output reaches, not the whole graph: the first Jacobian of `m` residuals is linear in
/// `m`, not quadratic.
///
/// The pending terms sit in one pool, each node's as a list (4 bytes a node for its
/// latest term): only the terms pending at once are held, not a term list a node (40
/// bytes a node, 32 MB for a model of 800 000 nodes).
#[derive(Debug, Default)]
pub struct Sweep {
    /// By node index, the pool slot of its latest pending term ([`NONE`] between sweeps).
    latest: Vec<u32>,
    /// Pending terms, each with the slot of the one that arrived before it at its node.
    pool: Vec<(Term, u32)>,
    /// Slots of `pool` free for reuse.
    free: Vec<u32>,
    /// The indices of nodes with pending terms, each once.
    pending: BinaryHeap<usize>,
    /// The operands of the call being swept ([`Graph::operands_into`]).
    operands: Vec<NodeId>,
}

impl Sweep {
    /// Pulls `seeds` down `graph` and answers the adjoint of each of `symbols` symbols.
    pub fn run(
        &mut self,
        graph: &mut Graph,
        seeds: &[(NodeId, NodeId)],
        symbols: usize,
    ) -> Vec<Deriv> {
        let top = seeds.iter().map(|(n, _)| n.index() + 1).max().unwrap_or(0);
        if self.latest.len() < top {
            self.latest.resize(top, NONE);
        }
        for &(node, seed) in seeds {
            self.add(node.index(), Term::plain(seed));
        }
        let mut out: Vec<Deriv> = vec![None; symbols];
        while let Some(i) = self.pending.pop() {
            let terms = self.take(i);
            let id = NodeId::from_index(i);
            let node = *graph.node(id);
            if matches!(node, Node::Const(_) | Node::Seed(_)) {
                continue;
            }
            let Some(adjoint) = combine(graph, terms) else {
                continue;
            };
            match node {
                Node::Symbol(s) => {
                    if let Some(slot) = out.get_mut(s.index()) {
                        *slot = Some(mask(graph, &adjoint.guard, adjoint.value));
                    }
                }
                Node::Apply(op, args) => {
                    // A call's operands run through its pack chain (a pack has none).
                    let mut ops = std::mem::take(&mut self.operands);
                    if matches!(op, Op::Call | Op::Pack) {
                        graph.operands_into(id, &mut ops);
                    } else {
                        ops.clear();
                        ops.extend_from_slice(&args[..op.arity()]);
                    }
                    for (k, a) in ops.iter().enumerate() {
                        if matches!(graph.node(*a), Node::Const(_) | Node::Seed(_)) {
                            continue;
                        }
                        let edge = flow(graph, id, k, adjoint.value);
                        if let Some(t) = adjoint.through(graph, edge) {
                            self.add(a.index(), t);
                        }
                    }
                    self.operands = ops;
                }
                Node::Const(_) | Node::Seed(_) => {}
            }
        }
        out
    }

    /// Queues `t` for node `i`.
    fn add(&mut self, i: usize, t: Term) {
        let before = self.latest[i];
        if before == NONE {
            self.pending.push(i);
        }
        let entry = (t, before);
        self.latest[i] = match self.free.pop() {
            Some(slot) => {
                self.pool[slot as usize] = entry;
                slot
            }
            None => {
                self.pool.push(entry);
                (self.pool.len() - 1) as u32
            }
        };
    }

    /// The terms pending at node `i`, in the order they arrived; none are left there.
    fn take(&mut self, i: usize) -> Terms {
        let mut terms = Terms::new();
        let mut at = std::mem::replace(&mut self.latest[i], NONE);
        while at != NONE {
            let (t, before) =
                std::mem::replace(&mut self.pool[at as usize], (Term::plain(NO_ARG), NONE));
            terms.push(t);
            self.free.push(at);
            at = before;
        }
        terms.reverse();
        terms
    }
}

/// No pending term ([`Sweep`]).
const NONE: u32 = u32::MAX;
