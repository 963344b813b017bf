//! Reverse mode: adjoints pulled down the graph.
//!
//! Input: a graph and seeds `(node, adjoint)` (the outputs and their weights: `1` for a
//! gradient or Jacobian row, a seed input for `vjp`). Output: the adjoint of every symbol,
//! written into the same graph as new nodes, or a structural zero.
//!
//! **Guards.** An adjoint flowing into an arm of `select(c, t, f)` (or the operand of
//! `max`/`min` not answered, or `pow`/`atan2`/`hypot` at a singular point) counts only
//! where its condition holds. Writing it as `select(c, ā, 0)` and multiplying on would turn
//! a masked zero times an infinite local partial into NaN. Instead each adjoint term
//! carries its guard (a conjunction of conditions) all the way down: local partials
//! multiply the unmasked value, and the guard is applied only where terms of different
//! guards meet, or at the symbol. Complementary terms (`c` and `not c`, as the two arms of
//! one `select` give) merge into one unguarded `select(c, ā_t, ā_f)`, so the common
//! piecewise models carry no guards past the point where their arms rejoin.
//!
//! The pass visits each node once, from the highest seed down (one loop, no recursion).

use super::rules::{flow, Flow};
use super::Deriv;
use crate::{Graph, Node, NodeId, Op};
use smallvec::SmallVec;

/// A conjunction of conditions: `(cond, when)` holds where `cond` is truthy iff `when`.
/// Sorted by node id, no node twice.
type Guard = SmallVec<[(NodeId, bool); 2]>;

/// An adjoint term: counts where `guard` holds.
#[derive(Clone, Debug)]
struct Term {
    guard: Guard,
    value: NodeId,
}

/// Pulls `seeds` down `graph` and answers the adjoint of each of `symbols` symbols.
pub fn reverse(graph: &mut Graph, seeds: &[(NodeId, NodeId)], symbols: usize) -> Vec<Deriv> {
    let top = seeds.iter().map(|(n, _)| n.index() + 1).max().unwrap_or(0);
    let mut terms: Vec<SmallVec<[Term; 1]>> = vec![SmallVec::new(); top];
    for &(node, seed) in seeds {
        terms[node.index()].push(Term {
            guard: Guard::new(),
            value: seed,
        });
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
        let Some(Term { guard, value }) = combine(graph, std::mem::take(&mut terms[i])) else {
            continue;
        };
        match node {
            Node::Symbol(s) => {
                if let Some(slot) = out.get_mut(s.index()) {
                    *slot = Some(mask(graph, &guard, value));
                }
            }
            Node::Apply(op, args) => {
                for (k, a) in args[..op.arity()].iter().enumerate() {
                    if matches!(graph.node(*a), Node::Const(_) | Node::Seed(_)) {
                        continue;
                    }
                    match flow(graph, id, k, value) {
                        Flow::Zero => {}
                        Flow::Plain(v) => terms[a.index()].push(Term {
                            guard: guard.clone(),
                            value: v,
                        }),
                        Flow::Guarded {
                            cond,
                            when,
                            value: v,
                        } => {
                            if let Some(g) = conjoin(&guard, cond, when) {
                                terms[a.index()].push(Term { guard: g, value: v });
                            }
                        }
                    }
                }
            }
            Node::Const(_) | Node::Seed(_) => {}
        }
    }
    out
}

/// `guard ∧ (cond is when)`, or `None` when that contradicts `guard`.
fn conjoin(guard: &Guard, cond: NodeId, when: bool) -> Option<Guard> {
    match guard.binary_search_by_key(&cond, |&(c, _)| c) {
        Ok(i) if guard[i].1 == when => Some(guard.clone()),
        Ok(_) => None,
        Err(i) => {
            let mut g = guard.clone();
            g.insert(i, (cond, when));
            Some(g)
        }
    }
}

/// `value` where `guard` holds, exactly `0` elsewhere.
fn mask(g: &mut Graph, guard: &Guard, mut value: NodeId) -> NodeId {
    for &(cond, when) in guard.iter().rev() {
        let zero = g.constant(0.0);
        value = if when {
            g.select(cond, value, zero)
        } else {
            g.select(cond, zero, value)
        };
    }
    value
}

/// If `a` and `b` differ only in the polarity of one condition, that condition's index.
fn complementary(a: &Guard, b: &Guard) -> Option<usize> {
    if a.len() != b.len() {
        return None;
    }
    let mut differ = None;
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x.0 != y.0 {
            return None;
        }
        if x.1 != y.1 {
            if differ.is_some() {
                return None;
            }
            differ = Some(i);
        }
    }
    differ
}

/// Most distinct guards one node's terms are merged pairwise over; past this the terms are
/// summed under a disjunction instead (correct, just less compact).
const MERGE_LIMIT: usize = 16;

/// One term standing for all of `terms`: equal guards summed, complementary guards merged
/// into `select`s, and any remaining mix summed with each part masked.
fn combine(g: &mut Graph, terms: SmallVec<[Term; 1]>) -> Option<Term> {
    let mut groups: Vec<Term> = Vec::with_capacity(terms.len());
    for t in terms {
        if g.constant_of(t.value) == Some(0.0) {
            continue;
        }
        add_into(g, &mut groups, t);
    }
    if groups.len() > 1 && groups.len() <= MERGE_LIMIT {
        'merge: loop {
            for i in 0..groups.len() {
                for j in i + 1..groups.len() {
                    if let Some(k) = complementary(&groups[i].guard, &groups[j].guard) {
                        let b = groups.remove(j);
                        let a = groups.remove(i);
                        let (cond, when) = a.guard[k];
                        let (t, f) = if when {
                            (a.value, b.value)
                        } else {
                            (b.value, a.value)
                        };
                        let mut guard = a.guard;
                        guard.remove(k);
                        let value = g.select(cond, t, f);
                        add_into(g, &mut groups, Term { guard, value });
                        continue 'merge;
                    }
                }
            }
            break;
        }
    }
    match groups.len() {
        0 => None,
        1 => groups.pop(),
        _ => {
            let unguarded = groups.iter().any(|t| t.guard.is_empty());
            let mut sum: Option<NodeId> = None;
            let mut any: Option<NodeId> = None;
            for t in &groups {
                let v = mask(g, &t.guard, t.value);
                sum = Some(match sum {
                    Some(s) => g.binary(Op::Add, s, v),
                    None => v,
                });
                if !unguarded {
                    let one = g.constant(1.0);
                    let holds = mask(g, &t.guard, one);
                    any = Some(match any {
                        Some(p) => g.select(p, one, holds),
                        None => holds,
                    });
                }
            }
            let value = sum?;
            let guard = match any {
                Some(p) => Guard::from_slice(&[(p, true)]),
                None => Guard::new(),
            };
            Some(Term { guard, value })
        }
    }
}

/// Adds `t` to the group with the same guard, or starts one.
fn add_into(g: &mut Graph, groups: &mut Vec<Term>, t: Term) {
    match groups.iter_mut().find(|o| o.guard == t.guard) {
        Some(o) => o.value = g.binary(Op::Add, o.value, t.value),
        None => groups.push(t),
    }
}
