//! Contraction: a product feeding a sum becomes one fused multiply-add.
//!
//! Input: a lane. Output: the same lane (same inputs, outputs, pattern and layout) in which
//! every product whose only use is a sum or a difference is fused into it:
//!
//! | before | after |
//! |---|---|
//! | `a*b + c`, `c + a*b` | `fma(a, b, c)` |
//! | `a*b - c` | `fma(a, b, -c)` |
//! | `c - a*b` | `fma(-a, b, c)` |
//!
//! (`pow(a, 2)` is the product `a*a`.) The fused operation rounds once where the graph
//! rounded twice, so results change in the last bits — usually for the better — which is
//! why it is a choice (`Codegen::contract`), and why it is a *pass*: every engine then
//! runs the contracted graph and they still agree to the bit. Negation is exact, so the
//! two rewrites with a minus sign round exactly as the fused form of the difference.

use crate::{Graph, Lane, Node, NodeId, Op, NO_ARG};

/// The contracted copy of `lane`.
pub fn contract(lane: &Lane) -> Lane {
    let g = &lane.graph;
    let nodes = g.nodes();
    let uses = lane.use_counts();
    let mut out = Graph::new();
    let mut map = vec![NO_ARG; nodes.len()];
    for (i, node) in nodes.iter().enumerate() {
        let id = match *node {
            Node::Apply(op @ (Op::Add | Op::Sub), [x, y, _]) if x != y => {
                let product = |p: NodeId| -> Option<(NodeId, NodeId)> {
                    if uses[p.index()] != 1 {
                        return None;
                    }
                    match *g.node(p) {
                        Node::Apply(Op::Mul, [a, b, _]) => Some((a, b)),
                        Node::Apply(Op::Pow, [a, b, _]) if g.constant_of(b) == Some(2.0) => {
                            Some((a, a))
                        }
                        _ => None,
                    }
                };
                let m = |id: NodeId| map[id.index()];
                match (op, product(y), product(x)) {
                    (Op::Add, Some((a, b)), _) => out.apply(Op::Fma, &[m(a), m(b), m(x)]),
                    (Op::Add, None, Some((a, b))) => out.apply(Op::Fma, &[m(a), m(b), m(y)]),
                    (Op::Sub, Some((a, b)), _) => {
                        let na = out.unary(Op::Neg, m(a));
                        out.apply(Op::Fma, &[na, m(b), m(x)])
                    }
                    (Op::Sub, None, Some((a, b))) => {
                        let nc = out.unary(Op::Neg, m(y));
                        out.apply(Op::Fma, &[m(a), m(b), nc])
                    }
                    _ => out.add(node.map_args(|a| map[a.index()])),
                }
            }
            _ => out.add(node.map_args(|a| map[a.index()])),
        };
        map[i] = id;
    }
    let outputs: Vec<NodeId> = lane.outputs.iter().map(|o| map[o.index()]).collect();
    // The fused products are no longer used; keep only what the outputs reach.
    let (graph, outputs) = out.prune(&outputs);
    // Field by field: `..lane.clone()` would copy the whole plain graph to drop it.
    Lane {
        kind: lane.kind,
        graph,
        outputs,
        symbols: lane.symbols,
        params: lane.params,
        seeds: lane.seeds,
        values: lane.values,
        pattern: lane.pattern.clone(),
        hessian: lane.hessian.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{lane, var, LaneKind};

    #[test]
    fn products_with_one_use_fuse() {
        let model = crate::build(|| {
            let (x, y, z) = (var("x"), var("y"), var("z"));
            let shared = x * y;
            vec![x * y + z, z - x * z, shared * shared - y, x.powf(2.0) + y]
        })
        .expect("builds");
        let l = lane::build(&model, LaneKind::Value);
        let c = contract(&l);
        let count = |g: &Graph, op| g.nodes().iter().filter(|n| n.op() == Some(op)).count();
        // x*y has three uses (two in shared*shared, one in x*y + z): it stays a product.
        assert_eq!(count(&c.graph, Op::Fma), 3, "{:?}", c.graph);
        let p = [1.5, -0.25, 3.0];
        let got = c.graph.eval_reference(&c.outputs, &p, &[]);
        let want = [
            1.5f64.mul_add(-0.25, 3.0),
            (-1.5f64).mul_add(3.0, 3.0),
            (1.5f64 * -0.25) * (1.5 * -0.25) - -0.25,
            1.5f64.mul_add(1.5, -0.25),
        ];
        assert_eq!(got, want);
        assert!(crate::verify(&c.graph, 3, 0).is_empty());
    }
}
