//! Second order: forward mode over the reverse graph.
//!
//! **Input**: a graph holding a model's value nodes and, from [`gradients`], the reverse
//! sweep of each output (the gradient nodes `gʳ_j = ∂fᵣ/∂x_j`, appended to the same graph).
//! **Output**, appended to the same graph:
//! - [`products`]: the tangent of every gradient node for given symbol tangents — with
//!   tangent `v` that is `Hᵣ·v` (forward-over-reverse);
//! - [`pattern`] (read-only: it works on a scratch copy): which cells `Hᵣ(i, j)` the
//!   forward pass can make other than the literal zero.
//!
//! **The `select` rule, second order.** The reverse graph already keeps an untaken arm's
//! first derivative out of every gradient node: it reaches them only inside a
//! `select(c, ·, 0)`-style mask or a merged `select(c, ā_t, ā_f)` (see
//! [`super::reverse`]). Forward mode differentiates those selects as selects (the tangent
//! of `select(c, t, f)` is `select(c, ṫ, ḟ)`, the condition never differentiated), so the
//! untaken arm's *second* derivative is masked the same way and never reaches `H·v`, even
//! where it is NaN or infinite. The `pow`, `atan2`, `hypot` and `max`/`min` guards carry
//! over identically, so the singular-point conventions hold at second order too.
//!
//! **Structural zeros.** [`pattern`] runs the very forward pass [`products`] runs, on a
//! scratch copy, with one distinct seed input per symbol, and then asks which seeds each
//! gradient tangent reaches. A cell `(i, j)` is outside the pattern exactly when seed `j`
//! does not occur in the tangent of `gᵢ` at all. Replacing the seeds by the constant `1`
//! (or a structural zero) for a colour group only folds nodes away, never adds a path, so
//! a product over a group reads only cells of that group that the pattern holds: the
//! pattern's zeros are exact zeros of every product, which is what lets a colouring of it
//! ([`crate::colour`]) recover the nonzeros directly.

use super::forward::{forward_with, Zeros};
use super::reverse::Sweep;
use super::Deriv;
use crate::{Graph, Node, NodeId, SeedId, Sparsity};
use rustc_hash::FxHashMap;

/// One reverse sweep per output: `grads[r][j]` is `∂f_r/∂x_j`, or a structural zero.
pub fn gradients(g: &mut Graph, outputs: &[NodeId], n: usize) -> Vec<Vec<Deriv>> {
    let one = g.constant(1.0);
    let mut sweep = Sweep::default();
    outputs
        .iter()
        .map(|&f| sweep.run(g, &[(f, one)], n))
        .collect()
}

/// The tangent of every gradient node when the symbols move with `tangents` (indexed by
/// symbol; `None` is a structural zero): `out[r][i] = (H_r·v)_i`, or a structural zero.
pub fn products(g: &mut Graph, grads: &[Vec<Deriv>], tangents: &[Deriv]) -> Vec<Vec<Deriv>> {
    products_with(g, grads, tangents, Zeros::Ieee)
}

/// [`products`], with run-time zero tangents treated as `zeros` says (the `hvp` lane's
/// direction: [`Zeros::Skip`]).
pub fn products_with(
    g: &mut Graph,
    grads: &[Vec<Deriv>],
    tangents: &[Deriv],
    zeros: Zeros,
) -> Vec<Vec<Deriv>> {
    let roots: Vec<NodeId> = grads.iter().flatten().flatten().copied().collect();
    let mut dots = forward_with(g, tangents, &roots, zeros).into_iter();
    grads
        .iter()
        .map(|row| {
            row.iter()
                .map(|d| match d {
                    Some(_) => dots.next().flatten(),
                    None => None,
                })
                .collect()
        })
        .collect()
}

/// The structural pattern of each output's Hessian (`n × n`, rows are gradient entries,
/// columns the symbols they move with), as the forward pass over `grads` makes it. `g` is
/// left untouched. See the module doc for why the zeros are exact.
pub fn pattern(g: &Graph, grads: &[Vec<Deriv>], n: usize) -> Vec<Sparsity> {
    let mut scratch = g.clone();
    // Seeds already in the graph (a lane's own inputs) are not ours: number past them.
    let base = g
        .nodes()
        .iter()
        .filter_map(|node| match node {
            Node::Seed(s) => Some(s.index() + 1),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    // Only nodes made from here on can depend on the seeds made now.
    let from = scratch.len();
    let tangents: Vec<Deriv> = (0..n)
        .map(|j| Some(scratch.seed(SeedId::from_index(base + j))))
        .collect();
    let dots = products(&mut scratch, grads, &tangents);
    let reach = SeedsReached::new(&scratch, from, base, n);
    dots.iter()
        .map(|row| {
            let cells = row.iter().enumerate().flat_map(|(i, d)| {
                let cols: &[u32] = match d {
                    Some(id) => reach.of(*id),
                    None => &[],
                };
                cols.iter().map(move |&j| (i, j as usize))
            });
            Sparsity::new(n, n, cells.collect::<Vec<_>>())
        })
        .collect()
}

/// For every node of a graph, the sorted symbols `j` whose seed `base + j` it depends on:
/// each distinct set stored once and named by its index (set 0 is empty), 4 bytes a node
/// made since the seeds (the nodes before them depend on none).
struct SeedsReached {
    from: usize,
    set_of: Vec<u32>,
    sets: Vec<Box<[u32]>>,
}

impl SeedsReached {
    /// One loop up over the nodes of `g` from `from` on; a node with one contributing
    /// argument set has that set, and each union of two sets is made once.
    fn new(g: &Graph, from: usize, base: usize, n: usize) -> Self {
        let mut sets: Vec<Box<[u32]>> = vec![Box::new([])];
        let mut known: FxHashMap<Box<[u32]>, u32> = FxHashMap::default();
        known.insert(Box::new([]), 0);
        let mut unions: FxHashMap<(u32, u32), u32> = FxHashMap::default();
        let mut intern = |set: Vec<u32>, sets: &mut Vec<Box<[u32]>>| -> u32 {
            let set = set.into_boxed_slice();
            *known.entry(set).or_insert_with_key(|set| {
                sets.push(set.clone());
                (sets.len() - 1) as u32
            })
        };
        let mut set_of: Vec<u32> = Vec::with_capacity(g.len().saturating_sub(from));
        for i in from..g.len() {
            let node = g.node(NodeId::from_index(i));
            let id = match *node {
                Node::Seed(s) if s.index() >= base && s.index() < base + n => {
                    intern(vec![(s.index() - base) as u32], &mut sets)
                }
                Node::Apply(..) => {
                    let mut acc = 0u32;
                    for a in node.args() {
                        let x = a.index().checked_sub(from).map_or(0, |k| set_of[k]);
                        acc = match (acc, x) {
                            (0, x) => x,
                            (acc, 0) => acc,
                            (acc, x) if acc == x => acc,
                            (acc, x) => {
                                let key = (acc.min(x), acc.max(x));
                                match unions.get(&key) {
                                    Some(&u) => u,
                                    None => {
                                        let u = union(&sets[acc as usize], &sets[x as usize]);
                                        let u = intern(u, &mut sets);
                                        unions.insert(key, u);
                                        u
                                    }
                                }
                            }
                        };
                    }
                    acc
                }
                _ => 0,
            };
            set_of.push(id);
        }
        SeedsReached { from, set_of, sets }
    }

    /// The set of node `id`.
    fn of(&self, id: NodeId) -> &[u32] {
        let set = id
            .index()
            .checked_sub(self.from)
            .map_or(0, |k| self.set_of[k]);
        &self.sets[set as usize]
    }
}

/// The sorted union of two sorted sets.
fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// The symmetric union of `patterns` (all `n × n`): `(i, j)` is in it when any pattern
/// holds `(i, j)` or `(j, i)`.
pub fn symmetric_union(patterns: &[Sparsity], n: usize) -> Sparsity {
    let mut cells: Vec<(usize, usize)> = patterns
        .iter()
        .flat_map(|p| p.entries())
        .flat_map(|c| [(c.row, c.column), (c.column, c.row)])
        .collect();
    cells.sort_unstable();
    cells.dedup();
    Sparsity::new(n, n, cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{build, var, Op};

    fn cells(p: &Sparsity) -> Vec<(usize, usize)> {
        p.entries().iter().map(|c| (c.row, c.column)).collect()
    }

    #[test]
    fn pattern_is_what_the_forward_pass_reaches() {
        // f = w·x + sin(y) + 3z: (w, x) meet, y meets itself, z is linear.
        let m = build(|| {
            let (w, x, y, z) = (var("w"), var("x"), var("y"), var("z"));
            vec![w * x + y.sin() + 3.0 * z]
        })
        .expect("model builds");
        let mut g = m.graph().clone();
        let grads = gradients(&mut g, m.outputs(), 4);
        let before = g.len();
        let p = pattern(&g, &grads, 4);
        assert_eq!(g.len(), before, "pattern works on a copy");
        assert_eq!(cells(&p[0]), [(0, 1), (1, 0), (2, 2)]);
        let u = symmetric_union(&p, 4);
        assert_eq!(cells(&u), [(0, 1), (1, 0), (2, 2)]);
    }

    #[test]
    fn seeds_already_in_the_graph_are_not_taken_for_symbols() {
        // A graph with a seed input v0 multiplying x·y: the pattern must number its own
        // seeds past v0, and v0 must not read as symbol 0.
        let mut g = Graph::new();
        let x = g.symbol(crate::SymbolId(0));
        let y = g.symbol(crate::SymbolId(1));
        let v = g.seed(SeedId(0));
        let xy = g.binary(Op::Mul, x, y);
        let f = g.binary(Op::Mul, xy, v);
        let grads = gradients(&mut g, &[f], 2);
        let p = pattern(&g, &grads, 2);
        assert_eq!(cells(&p[0]), [(0, 1), (1, 0)]);
    }

    #[test]
    fn products_are_hessian_vector_products() {
        // f = x²y: H = [[2y, 2x], [2x, 0]]; along v = (1, 2) at (3, 5): (10 + 12, 6).
        let m = build(|| {
            let (x, y) = (var("x"), var("y"));
            vec![x * x * y]
        })
        .expect("model builds");
        let mut g = m.graph().clone();
        let grads = gradients(&mut g, m.outputs(), 2);
        let v0 = g.seed(SeedId(0));
        let v1 = g.seed(SeedId(1));
        let hv = products(&mut g, &grads, &[Some(v0), Some(v1)]);
        let roots: Vec<NodeId> = hv[0].iter().map(|d| d.expect("nonzero")).collect();
        assert_eq!(
            g.eval_reference(&roots, &[3.0, 5.0], &[1.0, 2.0]),
            [22.0, 6.0]
        );
    }
}
