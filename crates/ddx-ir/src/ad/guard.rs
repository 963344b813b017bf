//! Guards: derivative terms that count only where conditions hold.
//!
//! A derivative flowing through an arm of `select(c, t, f)` (or the operand of `max`/`min`
//! not answered, or `pow`/`atan2`/`hypot` at a singular point) counts only where its
//! condition holds. Writing it as `select(c, d, 0)` at once and multiplying on would turn a
//! masked zero times an infinite local partial into NaN, so both passes instead carry each
//! term's guard (a conjunction of conditions) along with its unmasked value: local partials
//! multiply the value, and the guard is applied only where terms of different guards meet
//! ([`combine`]) or where the derivative leaves the pass ([`mask`]). Complementary terms
//! (`c` and `not c`, the two arms of one `select`) merge into one unguarded
//! `select(c, d_t, d_f)`, so piecewise models carry no guards past the point where their
//! arms rejoin.
//!
//! Forward mode (guards travel up to the outputs) and reverse mode (guards travel down to
//! the symbols) share this module, so both exclude exactly the paths through untaken arms:
//! a derivative is the sum over the paths that count, and `∞·0` can arise only on those.

use super::rules::Flow;
use crate::{Graph, NodeId, Op};
use smallvec::SmallVec;

/// A conjunction of conditions: `(cond, when)` holds where `cond` is truthy iff `when`.
/// Sorted by node id, no node twice.
pub(crate) type Guard = SmallVec<[(NodeId, bool); 2]>;

/// A derivative term: `value` where `guard` holds, exactly zero elsewhere.
#[derive(Clone, Debug)]
pub(crate) struct Term {
    pub(crate) guard: Guard,
    pub(crate) value: NodeId,
}

/// The terms of one node's derivative as they arrive.
pub(crate) type Terms = SmallVec<[Term; 1]>;

impl Term {
    /// An unguarded term.
    pub(crate) fn plain(value: NodeId) -> Term {
        Term {
            guard: Guard::new(),
            value,
        }
    }

    /// What this term contributes through one argument edge, given the edge's flow of its
    /// value (`None` when nothing flows or the guards contradict); a long guard is folded
    /// in `g` ([`conjoin`]).
    pub(crate) fn through(&self, g: &mut Graph, flow: Flow) -> Option<Term> {
        match flow {
            Flow::Zero => None,
            Flow::Plain(v) => Some(Term {
                guard: self.guard.clone(),
                value: v,
            }),
            Flow::Guarded { cond, when, value } => {
                conjoin(g, &self.guard, cond, when).map(|guard| Term { guard, value })
            }
        }
    }
}

/// The most conditions a guard holds: a guard this long is folded into one condition
/// before it is extended.
///
/// A derivative that passes through a chain of `max`, `min` or `select` (a running
/// maximum over data) gains a condition at every link, and in reverse mode nothing on the
/// chain merges it away: each adjoint down the chain carries one more condition than the
/// last. Masking every one of them made a lane quadratic in the chain's length (a running
/// maximum over 400 observations gave a gradient lane of 250 199 nodes, against 5 997 for
/// a running sum); [`mask`] now tests a long guard through one shared node, which keeps
/// the lane linear. What remains quadratic is the guards themselves, lists the AD passes
/// hold while they run (about `n²/2` conditions for a chain of `n` links: 800 MB at
/// 10⁴). Past this many conditions a guard is folded into one condition node,
/// `holds(guard)` (1 where it holds, 0 elsewhere), which bounds them. Up to it, guards
/// are kept whole, so contradictions, equal guards and complementary pairs are found
/// exactly as ever and the answers keep their bits; past it, a folded guard no longer
/// shows the conditions inside it, so a contradiction with one of them (a term that is
/// then masked to `+0` instead of dropped: `−0 + 0` is `+0`) or an equal guard folded
/// differently (terms summed in another order: an ulp) can change a result's last bit.
/// Every engine computes the same graph, so they still agree with each other.
const GUARD_LIMIT: usize = 64;

/// Guards at least this long are masked through [`holds`], one node for the whole
/// conjunction, instead of one `select` per condition around each value. Below it, the
/// mask is the graph it always was, so second-order lanes, which differentiate the mask
/// again, keep their bits too: at three, tester 41 found Hessian cells of small models
/// (guards of three conditions) turned from `−0` to `+0`. Past it, a chain's masks cost
/// one node each instead of one per condition; a second-order lane may then differ from
/// the old graph's in a zero's sign, where a masked `+0` meets a `−0`.
const SHARED_MASK: usize = 8;

/// `guard ∧ (cond is when)`, or `None` when that contradicts `guard`. A guard of
/// [`GUARD_LIMIT`] conditions is first folded into one condition, [`holds`] of it, made
/// in `g`.
pub(crate) fn conjoin(g: &mut Graph, guard: &Guard, cond: NodeId, when: bool) -> Option<Guard> {
    match guard.binary_search_by_key(&cond, |&(c, _)| c) {
        Ok(i) if guard[i].1 == when => Some(guard.clone()),
        Ok(_) => None,
        Err(_) if guard.len() >= GUARD_LIMIT => {
            let folded = holds(g, guard);
            let mut guard = Guard::from_slice(&[(folded, true)]);
            match folded.cmp(&cond) {
                std::cmp::Ordering::Less => guard.push((cond, when)),
                std::cmp::Ordering::Greater => guard.insert(0, (cond, when)),
                // `folded` is `cond` itself: it must hold, and `when` says whether it may.
                std::cmp::Ordering::Equal if when => {}
                std::cmp::Ordering::Equal => return None,
            }
            Some(guard)
        }
        Err(i) => {
            let mut extended = guard.clone();
            extended.insert(i, (cond, when));
            Some(extended)
        }
    }
}

/// `1` where `guard` holds, `0` elsewhere: `select(c₁, select(c₂, …, 0), 0)`, the first
/// condition outermost. The graph interns nodes, so a guard shares the node of every
/// guard it extends at the front: along a chain, where each adjoint's guard is the one
/// above it with an older condition (a smaller node id) first, each link adds one node.
fn holds(g: &mut Graph, guard: &Guard) -> NodeId {
    let one = g.constant(1.0);
    select_chain(g, guard, one)
}

/// `value` where `guard` holds, exactly `0` elsewhere: a `select` per condition around it
/// for a short guard, `select(holds(guard), value, 0)` for one of [`SHARED_MASK`]
/// conditions or more (the same answer: `holds` is exactly 1 or 0).
pub(crate) fn mask(g: &mut Graph, guard: &Guard, value: NodeId) -> NodeId {
    if guard.len() >= SHARED_MASK {
        let h = holds(g, guard);
        let zero = g.constant(0.0);
        return g.select(h, value, zero);
    }
    select_chain(g, guard, value)
}

/// `value` inside one `select` per condition of `guard`, the first outermost.
fn select_chain(g: &mut Graph, guard: &Guard, mut value: NodeId) -> NodeId {
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
pub(crate) fn combine(g: &mut Graph, terms: Terms) -> Option<Term> {
    // A sum that folds to the constant zero is a structural zero.
    combine_terms(g, terms).filter(|t| g.constant_of(t.value) != Some(0.0))
}

fn combine_terms(g: &mut Graph, terms: Terms) -> Option<Term> {
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
