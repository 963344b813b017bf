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
//!
//! **Exact zeros of a direction** ([`Zeros::Skip`], the twins of the `jvp` and `hvp`
//! lanes, whose direction is a run-time input): a tangent that is exactly `±0` at run time
//! contributes nothing through an edge whose partial is `∞` or NaN — ForwardDiff.jl's
//! NaN-safe mode, and JAX's symbolic zeros decided at run time. Each edge whose contribution
//! `c` is not the tangent `ṡ` itself, its negation or a finite constant multiple of it is
//! written `select(c == c, c, select(ṡ, c, 0))`: the plain product wherever it is a number
//! (so a finite partial keeps its signed zero), `0` where it is NaN and `ṡ` is zero. So
//! the twin answers the plain sweep's bits wherever the plain sweep answers no NaN (a NaN
//! contribution that does not reach an output was masked by a `select`, which masks the
//! twin's `0` alike, and tangents meet no other operation that swallows a NaN), and
//! engines run the twin only at points where the plain lane answers a NaN
//! (`ddx_ir::lane::build_twin`). A node that does not move along the direction has a zero
//! tangent, and a forward sweep along a basis vector sums the same path products as the
//! reverse sweep that reaches that symbol. [`Zeros::Ieee`] (the plain `jvp` and `hvp`
//! lanes, the Hessian's colour groups, whose seeds are structural, and derivative tensors)
//! multiplies plainly.

use super::guard::{combine, mask, Guard, Term, Terms};
use super::rules::{flow, Flow};
use super::Deriv;
use crate::{Graph, Node, NodeId, Op, NO_ARG};
use rustc_hash::FxHashMap;

/// How a forward sweep treats a tangent that is exactly zero at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Zeros {
    /// Plain IEEE: `0·∞ = NaN` in the chain rule.
    Ieee,
    /// An exactly-zero tangent contributes exactly `0` through every edge (module doc).
    Skip,
}

/// Pushes `symbol_tangents` (indexed by symbol) up to every node that some root depends on
/// and answers the tangent of each root.
///
/// Only the roots' ancestors get a tangent: a node outside them (a model's value
/// accumulation under its gradient nodes, say) would add tangent nodes nobody reads, and
/// for a long sum those grow with its length — quadratic work for [`super::hessian`]'s
/// pattern, which follows every node it is given.
pub fn forward(graph: &mut Graph, symbol_tangents: &[Deriv], roots: &[NodeId]) -> Vec<Deriv> {
    forward_with(graph, symbol_tangents, roots, Zeros::Ieee)
}

/// [`forward`], with run-time zero tangents treated as `zeros` says.
pub fn forward_with(
    graph: &mut Graph,
    symbol_tangents: &[Deriv],
    roots: &[NodeId],
    zeros: Zeros,
) -> Vec<Deriv> {
    let top = roots.iter().map(|r| r.index() + 1).max().unwrap_or(0);
    let mut needed = vec![false; top];
    for r in roots {
        needed[r.index()] = true;
    }
    for i in (0..top).rev() {
        if needed[i] {
            for a in graph.node(NodeId::from_index(i)).args() {
                needed[a.index()] = true;
            }
        }
    }
    let mut tangent = Tangents::new(top);
    let mut operands: Vec<NodeId> = Vec::new();
    for (i, &need) in needed.iter().enumerate() {
        if !need {
            continue;
        }
        let id = NodeId::from_index(i);
        let t = match *graph.node(id) {
            Node::Const(_) | Node::Seed(_) => None,
            Node::Symbol(s) => symbol_tangents
                .get(s.index())
                .copied()
                .flatten()
                .filter(|&t| graph.constant_of(t) != Some(0.0))
                .map(Term::plain),
            Node::Apply(op, args) => {
                let mut terms = Terms::new();
                // A call's operands run through its pack chain (a pack has none).
                if matches!(op, Op::Call | Op::Pack) {
                    graph.operands_into(id, &mut operands);
                } else {
                    operands.clear();
                    operands.extend_from_slice(&args[..op.arity()]);
                }
                for (k, a) in operands.iter().enumerate() {
                    if let Some(t) = tangent.get(a.index()) {
                        let mut edge = flow(graph, id, k, t.value);
                        if zeros == Zeros::Skip {
                            edge = skip_zero(graph, t.value, edge);
                        }
                        terms.extend(t.through(graph, edge));
                    }
                }
                combine(graph, terms)
            }
        };
        tangent.set(i, t);
    }
    roots
        .iter()
        .map(|r| {
            let t = tangent.get(r.index())?;
            Some(mask(graph, &t.guard, t.value))
        })
        .collect()
}

/// The tangent of each node of a sweep, by index: its value in 4 bytes a node ([`NO_ARG`]
/// for a structural zero), the guards of the few guarded ones aside. (A [`Term`] a node
/// would be 40 bytes: 64 MB for the Jacobian lane under a 10⁵-term `hvp` lane.)
struct Tangents {
    value: Vec<NodeId>,
    guards: FxHashMap<u32, Guard>,
}

impl Tangents {
    /// Every node of `len` a structural zero.
    fn new(len: usize) -> Self {
        Tangents {
            value: vec![NO_ARG; len],
            guards: FxHashMap::default(),
        }
    }

    /// The tangent of node `i`.
    fn get(&self, i: usize) -> Option<Term> {
        let value = self.value[i];
        if value == NO_ARG {
            return None;
        }
        let guard = if self.guards.is_empty() {
            Guard::new()
        } else {
            self.guards.get(&(i as u32)).cloned().unwrap_or_default()
        };
        Some(Term { guard, value })
    }

    /// Sets the tangent of node `i` (a structural zero until now).
    fn set(&mut self, i: usize, t: Option<Term>) {
        if let Some(t) = t {
            self.value[i] = t.value;
            if !t.guard.is_empty() {
                self.guards.insert(i as u32, t.guard);
            }
        }
    }
}

/// `edge` (what tangent `s` contributes along one argument) made `0` where it is NaN and
/// `s` is exactly zero (module doc), unless it is `±0` wherever `s` is, whatever the
/// partial: `s`, `−s`, or `s` times (or divided by) a finite (nonzero) constant.
fn skip_zero(g: &mut Graph, s: NodeId, edge: Flow) -> Flow {
    let mut guard = |v: NodeId| {
        if g.constant_of(s).is_some() || zero_through(g, s, v) {
            return v;
        }
        let zero = g.constant(0.0);
        let skipped = g.select(s, v, zero);
        let number = g.binary(Op::Eq, v, v);
        g.select(number, v, skipped)
    };
    match edge {
        Flow::Zero => Flow::Zero,
        Flow::Plain(v) => Flow::Plain(guard(v)),
        Flow::Guarded { cond, when, value } => Flow::Guarded {
            cond,
            when,
            value: guard(value),
        },
    }
}

/// Whether `v` is `±0` wherever `s` is: `s` itself, `−s`, `s·c` or `c·s` with `c` a finite
/// constant, `s/c` with `c` a nonzero finite constant.
fn zero_through(g: &Graph, s: NodeId, v: NodeId) -> bool {
    if v == s {
        return true;
    }
    let finite = |id: NodeId| g.constant_of(id).is_some_and(f64::is_finite);
    match *g.node(v) {
        Node::Apply(Op::Neg, args) => args[0] == s,
        Node::Apply(Op::Mul, args) => {
            (args[0] == s && finite(args[1])) || (args[1] == s && finite(args[0]))
        }
        Node::Apply(Op::Div, args) => {
            args[0] == s && finite(args[1]) && g.constant_of(args[1]) != Some(0.0)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::forward;
    use crate::{Graph, Op, SymbolId};

    /// Nodes the roots do not depend on get no tangent: a long sum built before the root
    /// adds nothing to the graph, however long it is.
    #[test]
    fn only_the_roots_ancestors_get_tangents() {
        let grown = |terms: usize| {
            let mut g = Graph::new();
            let x = g.symbol(SymbolId(0));
            let y = g.symbol(SymbolId(1));
            let mut sum = x;
            for k in 0..terms {
                let c = g.constant(1.0 + k as f64);
                let t = g.binary(Op::Mul, c, x);
                let s = g.unary(Op::Sin, t);
                sum = g.binary(Op::Add, sum, s);
            }
            let root = g.binary(Op::Mul, x, y);
            let (tx, ty) = (g.symbol(SymbolId(1)), g.symbol(SymbolId(0)));
            let before = g.len();
            let dots = forward(&mut g, &[Some(tx), Some(ty)], &[root]);
            let d = dots[0].expect("x·y moves");
            // d(x·y) along (y, x) at (x, y) = (2, 3): y·y + x·x = 13.
            assert_eq!(g.eval_reference(&[d], &[2.0, 3.0], &[]), [13.0]);
            assert!(sum.index() < root.index());
            g.len() - before
        };
        assert_eq!(grown(10), grown(1000));
    }
}
