//! Constant folding and the exact IEEE identities, applied by [`Graph::add`].
//!
//! Input: an operation whose arguments are already in the graph. Output: either nothing
//! (make the node) or what the node equals *bit for bit at every input*, signed zero
//! included (NaN payloads aside). So `x * 1 → x`, `x + (-0) → x`, `a + (-b) → a - b`,
//! `(-a) * (-b) → a * b` are here, while `x * 0 → 0` (wrong at infinity and NaN),
//! `x + 0 → x` (wrong at `-0`) and `-(a + b) → (-a) + (-b)` (wrong when `a + b` is a
//! zero) are not. Folding evaluates through [`crate::math::eval`], the same semantics
//! every engine has.

use crate::{math, Graph, NodeId, Op, NO_ARG};

/// What a node folds to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Folded {
    /// An existing node.
    Node(NodeId),
    /// A constant.
    Const(f64),
    /// Another operation on existing nodes (itself folded in turn).
    Rewrite(Op, [NodeId; 2]),
}

/// `a` if `id` is `-a`.
fn negated(graph: &Graph, id: NodeId) -> Option<NodeId> {
    match graph.node(id) {
        crate::Node::Apply(Op::Neg, inner) => Some(inner[0]),
        _ => None,
    }
}

/// What `op(args)` folds to, or `None` when it must be made as a node.
pub fn fold(graph: &Graph, op: Op, args: &[NodeId]) -> Option<Folded> {
    if op == Op::Pack {
        // No value of its own (the call reading it folds, or not, as a whole).
        return None;
    }
    let consts: Vec<Option<f64>> = args.iter().map(|&a| graph.constant_of(a)).collect();
    if consts.iter().all(Option::is_some) {
        let mut x = [0.0; 3];
        for (xi, c) in x.iter_mut().zip(&consts) {
            *xi = c.unwrap_or_default();
        }
        return Some(Folded::Const(math::eval(op, &x)));
    }
    let is = |i: usize, v: f64| consts[i].is_some_and(|c| c.to_bits() == v.to_bits());
    match op {
        Op::Mul if is(1, 1.0) => Some(Folded::Node(args[0])),
        Op::Mul if is(0, 1.0) => Some(Folded::Node(args[1])),
        Op::Div if is(1, 1.0) => Some(Folded::Node(args[0])),
        Op::Add if is(1, -0.0) => Some(Folded::Node(args[0])),
        Op::Add if is(0, -0.0) => Some(Folded::Node(args[1])),
        Op::Sub if is(1, 0.0) => Some(Folded::Node(args[0])),
        Op::Pow if is(1, 1.0) => Some(Folded::Node(args[0])),
        // Binary powering: one factor is `a` itself; no factor at all is the empty product.
        Op::Powi if is(1, 1.0) => Some(Folded::Node(args[0])),
        Op::Powi if is(1, 0.0) || is(1, -0.0) => Some(Folded::Const(1.0)),
        Op::Neg => negated(graph, args[0]).map(Folded::Node),
        Op::Mul if is(1, -1.0) => Some(Folded::Rewrite(Op::Neg, [args[0], NO_ARG])),
        Op::Mul if is(0, -1.0) => Some(Folded::Rewrite(Op::Neg, [args[1], NO_ARG])),
        // Negations cancel or move into the operation (exact: IEEE negation commutes with
        // rounding to nearest, and `a + (-b)` is by definition `a - b`).
        Op::Add => match (negated(graph, args[0]), negated(graph, args[1])) {
            (_, Some(b)) => Some(Folded::Rewrite(Op::Sub, [args[0], b])),
            (Some(a), None) => Some(Folded::Rewrite(Op::Sub, [args[1], a])),
            _ => None,
        },
        Op::Sub => negated(graph, args[1]).map(|b| Folded::Rewrite(Op::Add, [args[0], b])),
        Op::Mul | Op::Div => match (negated(graph, args[0]), negated(graph, args[1])) {
            (Some(a), Some(b)) => Some(Folded::Rewrite(op, [a, b])),
            _ => None,
        },
        Op::Select => match consts[0] {
            Some(c) => Some(Folded::Node(if math::select(c, 1.0, 0.0) == 1.0 {
                args[1]
            } else {
                args[2]
            })),
            None if args[1] == args[2] => Some(Folded::Node(args[1])),
            None => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SymbolId;

    #[test]
    fn folds_only_exact_identities() {
        let mut g = Graph::new();
        let x = g.symbol(SymbolId(0));
        let one = g.constant(1.0);
        let zero = g.constant(0.0);
        let mzero = g.constant(-0.0);
        assert_eq!(g.binary(Op::Mul, x, one), x);
        assert_eq!(g.binary(Op::Mul, one, x), x);
        assert_eq!(g.binary(Op::Add, x, mzero), x);
        assert_ne!(
            g.binary(Op::Add, x, zero),
            x,
            "x + 0 is -0 + 0 = +0 at x = -0"
        );
        assert_ne!(g.binary(Op::Mul, x, zero), zero, "inf * 0 is NaN");
        assert_eq!(g.binary(Op::Sub, x, zero), x);
        let nx = g.unary(Op::Neg, x);
        assert_eq!(g.unary(Op::Neg, nx), x);
        let two = g.constant(2.0);
        let three = g.binary(Op::Add, one, two);
        assert_eq!(g.constant_of(three), Some(3.0));
        assert_eq!(g.select(zero, one, x), x);
        assert_eq!(g.select(mzero, one, x), x);
        let nan = g.constant(f64::NAN);
        assert_eq!(g.select(nan, one, x), one);
        assert_eq!(g.select(x, two, two), two);
        // Negations fold into arithmetic.
        let y = g.symbol(SymbolId(1));
        let ny = g.unary(Op::Neg, y);
        let sub = g.binary(Op::Sub, x, y);
        assert_eq!(g.binary(Op::Add, x, ny), sub);
        assert_eq!(g.binary(Op::Add, ny, x), g.binary(Op::Sub, x, y));
        assert_eq!(g.binary(Op::Sub, x, ny), g.binary(Op::Add, x, y));
        assert_eq!(g.binary(Op::Mul, nx, ny), g.binary(Op::Mul, x, y));
        assert_eq!(g.binary(Op::Div, nx, ny), g.binary(Op::Div, x, y));
        // A negation stays inside a product: it may be shared (`-b` times every datum).
        let p = g.binary(Op::Mul, nx, y);
        assert_eq!(g.node(p), &crate::Node::Apply(Op::Mul, [nx, y, NO_ARG]));
        let m1 = g.constant(-1.0);
        assert_eq!(g.binary(Op::Mul, x, m1), nx);
        // (-a) + (-b) becomes (-a) - b, never -(a + b) (wrong at a zero sum).
        let both = g.binary(Op::Add, nx, ny);
        assert_eq!(g.node(both), &crate::Node::Apply(Op::Sub, [nx, y, NO_ARG]));
    }

    #[test]
    #[allow(clippy::neg_multiply)] // the point is that `a * -1.0` and `-a` agree
    fn negation_rewrites_are_exact() {
        let vals = [
            0.0,
            -0.0,
            1.5,
            -2.25,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-310,
            3.0,
        ];
        for a in vals {
            for b in vals {
                let same =
                    |x: f64, y: f64| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
                assert!(same(a + (-b), a - b));
                assert!(same((-a) + b, b - a));
                assert!(same(a - (-b), a + b));
                assert!(same((-a) * (-b), a * b));
                assert!(same((-a) / (-b), a / b));
                assert!(same((-a) * b, -(a * b)));
                assert!(same(a / (-b), -(a / b)));
                assert!(same(a * -1.0, -a));
                assert!(same((-a) + (-b), (-a) - b));
            }
        }
    }

    #[test]
    fn hash_consing_shares_equal_nodes() {
        let mut g = Graph::new();
        let x = g.symbol(SymbolId(0));
        let a = g.unary(Op::Sin, x);
        let b = g.unary(Op::Sin, x);
        assert_eq!(a, b);
        assert_eq!(g.len(), 2);
        let n1 = g.constant(f64::NAN);
        let n2 = g.constant(-f64::NAN);
        assert_eq!(n1, n2, "NaNs share one constant");
        assert_ne!(g.constant(0.0), g.constant(-0.0));
    }
}
