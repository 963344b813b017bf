//! Lanes: the graph for one kind of call, built from a model by the AD passes.
//!
//! This is the orchestrator: it clones the model's value graph (which copies no node: the
//! clone shares the model's frozen run, see [`Graph`]'s "Shared nodes"), runs the passes
//! a lane needs (they append to the clone, sharing value nodes by hash-consing), then
//! prunes it to what the lane's outputs reach, so a lane computes nothing it does not
//! answer and stores only the nodes it adds to the model. The second-order lanes are
//! built the same way on the Jacobian lane's graph ([`build_on`]), whose nodes they
//! share. In debug builds every lane is verified.
//!
//! Output layout (every engine answers in this order):
//!
//! | kind | seeds | outputs |
//! |---|---|---|
//! | `Value` | – | `f₀ … f_{m−1}` |
//! | `Jacobian` | – | `f₀ … f_{m−1}`, then one per structurally nonzero cell, row-major |
//! | `Gradient` | – | one per structurally nonzero cell, row-major (no values) |
//! | `Jvp` | `v₀ … v_{n−1}` | `f₀ … f_{m−1}`, then `(Jv)₀ … (Jv)_{m−1}` |
//! | `Vjp` | `w₀ … w_{m−1}` | `f₀ … f_{m−1}`, then `(wᵀJ)₀ … (wᵀJ)_{n−1}` |
//! | `Hessian` | – | `f₀ … f_{m−1}`, the Jacobian cells as `Jacobian` has them, then per output `r` its compressed block: `C·n` values, value `k·n + i` being `(Hᵣ·v_k)ᵢ` |
//! | `Hvp` | `v₀ … v_{n−1}` | `f₀ … f_{m−1}`, the Jacobian cells as `Jacobian` has them, then per output `r`: `(Hᵣv)₀ … (Hᵣv)_{n−1}` |
//!
//! Second order (`Hessian`, `Hvp`) is forward mode over the reverse graph
//! ([`crate::ad::hessian`]). In the `Hessian` lane `C` is the colour count of
//! [`Lane::hessian`] and `v_k` is the indicator vector of colour group `k`, seeded as the
//! constant `1` on that group's symbols: one forward sweep per colour serves every output,
//! because the colouring is of the symmetric union of all outputs' patterns. A cell that
//! is a structural zero for one output but not another reads an exact `0` for the first.

use crate::ad::forward::{forward_with, Zeros};
use crate::ad::tensor::{self, TensorLayout};
use crate::ad::{hessian, reverse::reverse, rules, Deriv};
use crate::colour::HessianLayout;
use crate::{Error, Graph, Model, Node, NodeId, Op, SeedId, Sparsity};

/// Which kind of call a lane answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LaneKind {
    /// Values only.
    Value,
    /// Values and every structurally nonzero partial.
    Jacobian,
    /// The partials alone: what only the value needs is not computed.
    Gradient,
    /// Values and `J·v`.
    Jvp,
    /// Values and `wᵀ·J`.
    Vjp,
    /// Values, the Jacobian cells, and each output's colour-compressed Hessian block.
    Hessian,
    /// Values, the Jacobian cells, and `H·v` for each output.
    Hvp,
    /// Every partial of one order `k` ([`build_tensor`]): per output, one per sorted
    /// multi-index, in the order of [`crate::ad::tensor::TensorLayout`]. Built per order on
    /// request, so not in [`LaneKind::ALL`] (an equation's fixed lane slots).
    Tensor,
}

impl LaneKind {
    /// Every lane kind.
    pub const ALL: [LaneKind; 7] = [
        LaneKind::Value,
        LaneKind::Jacobian,
        LaneKind::Gradient,
        LaneKind::Jvp,
        LaneKind::Vjp,
        LaneKind::Hessian,
        LaneKind::Hvp,
    ];

    /// The lane's name, as `want` spells it (`"value"`, `"jacobian"`, …).
    pub fn name(self) -> &'static str {
        match self {
            LaneKind::Value => "value",
            LaneKind::Jacobian => "jacobian",
            LaneKind::Gradient => "gradient",
            LaneKind::Jvp => "jvp",
            LaneKind::Vjp => "vjp",
            LaneKind::Hessian => "hessian",
            LaneKind::Hvp => "hvp",
            LaneKind::Tensor => "tensor",
        }
    }
}

/// The graph one kind of call runs, with its input and output layout.
#[derive(Clone, Debug)]
pub struct Lane {
    /// What the lane answers.
    pub kind: LaneKind,
    /// The lane's graph: only what [`Lane::outputs`] reach.
    pub graph: Graph,
    /// The output nodes, in the layout of the module table.
    pub outputs: Vec<NodeId>,
    /// Symbol inputs (`n`): the inputs differentiated.
    pub symbols: usize,
    /// Parameter inputs (`p`): read after the symbols, never differentiated.
    pub params: usize,
    /// Seed inputs (direction or weights), read after the parameters.
    pub seeds: usize,
    /// How many leading outputs are function values (`m`, or 0 for a gradient lane).
    pub values: usize,
    /// For Jacobian, gradient, Hessian and `hvp` lanes, which cell each partial output is.
    pub pattern: Option<Sparsity>,
    /// For Hessian lanes, the pattern, colouring and compressed-column layout of the
    /// Hessian blocks (one layout shared by every output).
    pub hessian: Option<HessianLayout>,
}

impl Lane {
    /// Where the seed inputs start in the input block: after the `n` symbols and the `p`
    /// parameters (the block is `[symbols | parameters | seeds]`).
    pub fn seed_base(&self) -> usize {
        self.symbols + self.params
    }

    /// The length of the input block: symbols, parameters and seeds.
    pub fn inputs(&self) -> usize {
        self.symbols + self.params + self.seeds
    }

    /// How many times each node is read, by node index: once per argument slot of a node
    /// that names it, and once per output it is.
    pub fn use_counts(&self) -> Vec<u32> {
        let nodes = self.graph.nodes();
        let mut uses = vec![0u32; nodes.len()];
        for n in nodes {
            for a in n.args() {
                uses[a.index()] += 1;
            }
        }
        // An output past the graph (a lane edited by hand, which `Lane::check` refuses)
        // counts for nothing.
        for o in &self.outputs {
            if let Some(u) = uses.get_mut(o.index()) {
                *u += 1;
            }
        }
        uses
    }
}

impl Lane {
    /// Checks the invariants that lowering and emitting rely on, for a lane that did not
    /// come from ddx (assembled or edited by hand): its inputs and nodes fit 32-bit slot
    /// indices, its graph passes the IR verifier ([`crate::verify::verify`]) over its
    /// symbols and parameters and its seeds, and every output names a node of its graph
    /// that is a value (not the pack of a call's arguments). Lanes ddx builds hold
    /// them by construction.
    ///
    /// # Errors
    /// [`crate::Error::BadLane`], saying what does not hold.
    pub fn check(&self) -> Result<(), crate::Error> {
        let bad = |detail: String| crate::Error::BadLane {
            lane: self.kind.name(),
            detail,
        };
        let len = self.graph.len();
        // Programs index slots (constants, inputs, values) with 32-bit words.
        let slots = self
            .symbols
            .checked_add(self.params)
            .and_then(|n| n.checked_add(self.seeds))
            .and_then(|n| n.checked_add(len))
            .filter(|&n| n < u32::MAX as usize);
        if slots.is_none() {
            return Err(bad(format!(
                "{} symbols, {} parameters, {} seeds and {len} nodes are past 2³² − 1 slots",
                self.symbols, self.params, self.seeds
            )));
        }
        if let Some(o) = self.outputs.iter().find(|o| o.index() >= len) {
            return Err(bad(format!("output {o} names no node of its {len}")));
        }
        if let Some(o) = self
            .outputs
            .iter()
            .find(|&&o| matches!(self.graph.node(o), Node::Apply(crate::Op::Pack, _)))
        {
            return Err(bad(format!(
                "output {o} is a pack of a call's arguments, not a value"
            )));
        }
        if let Some(v) = crate::verify::verify(&self.graph, self.symbols + self.params, self.seeds)
            .into_iter()
            .next()
        {
            return Err(bad(v.to_string()));
        }
        Ok(())
    }
}

impl Lane {
    /// Checks that this lane has the layout of the module table for a model of `m`
    /// outputs, `n` symbols and `p` parameters, for a lane read from outside (a saved
    /// equation): its input counts, its value count, its pattern and Hessian layout (present exactly for
    /// the kinds that carry them, `m × n` and `n × n`), its output count, every output a
    /// node of its graph, and every node reached by an output. The graph itself is
    /// trusted to have been checked by [`Graph::from_nodes`] over `n + p` inputs and this
    /// lane's seeds.
    ///
    /// # Errors
    /// What does not hold, in words.
    pub fn check_layout(&self, m: usize, n: usize, p: usize) -> Result<(), String> {
        if self.params != p {
            return Err(format!(
                "the {} lane has {} parameters; {p} expected",
                self.kind.name(),
                self.params
            ));
        }
        use LaneKind as K;
        let name = self.kind.name();
        let (seeds, values) = match self.kind {
            K::Jvp | K::Hvp => (n, m),
            K::Vjp => (m, m),
            K::Gradient | K::Tensor => (0, 0),
            K::Value | K::Jacobian | K::Hessian => (0, m),
        };
        if (self.symbols, self.seeds, self.values) != (n, seeds, values) {
            return Err(format!(
                "the {name} lane has {} symbols, {} seeds and {} values; {n}, {seeds} and \
                 {values} expected",
                self.symbols, self.seeds, self.values
            ));
        }
        let patterned = matches!(self.kind, K::Jacobian | K::Gradient | K::Hessian | K::Hvp);
        let nnz = match (&self.pattern, patterned) {
            (Some(p), true) if p.rows() == m && p.columns() == n => p.nonzeros(),
            (None, false) => 0,
            _ => {
                return Err(format!(
                    "the {name} lane's Jacobian pattern is not {m} × {n}"
                ))
            }
        };
        let block = match (&self.hessian, self.kind == K::Hessian) {
            (Some(h), true) if h.symbols() == n => Some(h.columns()),
            (None, false) => None,
            _ => return Err(format!("the {name} lane's Hessian layout is not {n} × {n}")),
        };
        let expected = match self.kind {
            K::Value => Some(m),
            K::Jacobian => m.checked_add(nnz),
            K::Gradient => Some(nnz),
            K::Jvp => m.checked_mul(2),
            K::Vjp => m.checked_add(n),
            K::Hessian => m
                .checked_mul(block.unwrap_or(0))
                .and_then(|b| b.checked_add(m + nnz)),
            K::Hvp => m.checked_mul(n).and_then(|b| b.checked_add(m + nnz)),
            // The order is not recorded in the lane: any count of partials.
            K::Tensor => Some(self.outputs.len()),
        };
        if expected != Some(self.outputs.len()) {
            return Err(format!(
                "the {name} lane has {} outputs, not the {} its layout needs",
                self.outputs.len(),
                expected.map_or_else(|| "overflowing count".into(), |e| e.to_string())
            ));
        }
        if let Some(o) = self.outputs.iter().find(|o| o.index() >= self.graph.len()) {
            return Err(format!(
                "the {name} lane's output {o} is not a node of its graph"
            ));
        }
        let reached = self.graph.reach(&self.outputs);
        if reached != self.graph.len() {
            return Err(format!(
                "the {name} lane's outputs reach {reached} of its {} nodes",
                self.graph.len()
            ));
        }
        Ok(())
    }
}

/// Builds the lane `kind` of `model`.
///
/// The `jvp` and `hvp` lanes multiply a tangent into its partials plainly (`0·∞ = NaN`);
/// their [`build_twin`] skips exact zeros. A call answers the plain lane's outputs at a
/// point unless one of them is NaN, and the twin's there (`ad::forward`, "Exact zeros of
/// a direction": the twin gives the plain lane's bits wherever those are not NaN, so the
/// call answers the twin's bits at every point).
///
/// The second-order lanes (`Hessian`, `Hvp`) are built on the Jacobian lane: this builds
/// it first, and [`build_on`] takes one already built. Either way the lane is the same
/// (see [`build_on`]).
pub fn build(model: &Model, kind: LaneKind) -> Lane {
    build_with(model, kind, Zeros::Ieee, None)
}

/// [`build`], building the `Hessian` and `Hvp` lanes on `jacobian`, the lane
/// [`build`]`(model, LaneKind::Jacobian)` answered (for the other kinds `jacobian` is not
/// read). Such a lane's graph starts with `jacobian`'s nodes, with the same ids, and
/// shares them (see [`Graph`]'s "Shared nodes"): the values and the Jacobian cells are
/// stored once for the three lanes, and the cells are read from `jacobian`'s outputs
/// instead of swept again. The lane is the one [`build`] answers, node for node.
///
/// Two exceptions, answered as [`build`] answers them: a model whose reverse sweeps make
/// an [`Op::Hold`] (a `pow` with a moving exponent, a `powi`) has its second-order lanes
/// built in one graph from the model, since the forward sweeps must meet the holds that
/// extracting the Jacobian lane removed; and a `jacobian` that cannot be `model`'s (its
/// layout, or its first nodes not the model's: a lane of a file that pairs it with another
/// model) is not built on.
pub fn build_on(model: &Model, kind: LaneKind, jacobian: &Lane) -> Lane {
    build_with(model, kind, Zeros::Ieee, Some(jacobian))
}

/// The zero-skipping twin of the `jvp` or `hvp` lane ([`Zeros::Skip`]): the same inputs,
/// outputs and layout as [`build`]'s lane of `kind`, answering where a plain output is NaN.
/// `None` for the other kinds, whose seeds (if any) never meet an infinite partial alone.
pub fn build_twin(model: &Model, kind: LaneKind) -> Option<Lane> {
    has_twin(kind).then(|| build_with(model, kind, Zeros::Skip, None))
}

/// [`build_twin`], the `hvp` twin built on `jacobian` as [`build_on`] builds the `hvp` lane.
pub fn build_twin_on(model: &Model, kind: LaneKind, jacobian: &Lane) -> Option<Lane> {
    has_twin(kind).then(|| build_with(model, kind, Zeros::Skip, Some(jacobian)))
}

/// Whether lane `kind` has a zero-skipping twin ([`build_twin`] answers one): the `jvp`
/// and `hvp` lanes.
pub fn has_twin(kind: LaneKind) -> bool {
    matches!(kind, LaneKind::Jvp | LaneKind::Hvp)
}

/// [`build_on`] (on `jacobian`, or on the Jacobian lane built here when `None`), the
/// run-time direction's zeros treated as `zeros` says.
fn build_with(model: &Model, kind: LaneKind, zeros: Zeros, jacobian: Option<&Lane>) -> Lane {
    let n = model.arity();
    let m = model.outputs().len();
    // A clone of the sealed model copies no node: the lane shares them (see [`Graph`]).
    let mut g = model.graph().clone();
    let values: Vec<NodeId> = model.outputs().to_vec();
    let mut layout = None;
    let (outputs, seeds, value_count, pattern) = match kind {
        LaneKind::Value => (values, 0, m, None),
        LaneKind::Jacobian | LaneKind::Gradient => {
            let (cells, pattern) = jacobian_cells(&mut g, &values, n);
            if kind == LaneKind::Jacobian {
                let mut outs = values;
                outs.extend(cells);
                (outs, 0, m, Some(pattern))
            } else {
                (cells, 0, 0, Some(pattern))
            }
        }
        LaneKind::Jvp => {
            let tangents: Vec<Deriv> = (0..n)
                .map(|j| Some(g.seed(SeedId::from_index(j))))
                .collect();
            let jv = forward_with(&mut g, &tangents, &values, zeros);
            let mut outs = values;
            outs.extend(jv.into_iter().map(|t| or_zero(&mut g, t)));
            (outs, n, m, None)
        }
        LaneKind::Vjp => {
            let seeds: Vec<(NodeId, NodeId)> = values
                .iter()
                .enumerate()
                .map(|(i, &f)| (f, g.seed(SeedId::from_index(i))))
                .collect();
            let wj = reverse(&mut g, &seeds, n);
            let mut outs = values;
            outs.extend(wj.into_iter().map(|t| or_zero(&mut g, t)));
            (outs, m, m, None)
        }
        LaneKind::Tensor => return tensor_lane(model, 1),
        LaneKind::Hessian | LaneKind::Hvp => {
            let holds = makes_holds(model);
            if let Some(jacobian) = jacobian.filter(|j| !holds && fits_as_jacobian(j, model)) {
                return second_order(model, kind, zeros, jacobian);
            }
            if !holds {
                let jacobian = build_with(model, LaneKind::Jacobian, Zeros::Ieee, None);
                return second_order(model, kind, zeros, &jacobian);
            }
            // In one graph with the reverse sweeps' holds (see [`makes_holds`]).
            let grads = hessian::gradients(&mut g, &values, n);
            let (cells, pattern) = cells_of(&grads, n);
            let mut outs = values;
            outs.extend(cells);
            let (seeds, hl) = second_order_outputs(&mut g, &grads, &mut outs, kind, zeros, n);
            layout = hl;
            (outs, seeds, m, Some(pattern))
        }
    };
    finish(
        model,
        kind,
        g,
        &outputs,
        seeds,
        value_count,
        pattern,
        layout,
    )
}

/// Whether the reverse sweeps over `model` make an [`Op::Hold`](crate::Op::Hold): a
/// `pow` or `powi` whose partial holds its exponent ([`rules::holds_exponent`]). A lane's
/// holds are gone once it is extracted, and the forward sweeps of the second order must
/// meet them (they stop the exponent's tangent), so the second-order lanes of such a
/// model are built from the model in one graph, not on its Jacobian lane.
fn makes_holds(model: &Model) -> bool {
    let g = model.graph();
    g.nodes().iter().any(|node| match *node {
        Node::Apply(op @ (Op::Pow | Op::Powi), [a, b, _]) => rules::holds_exponent(g, op, a, b),
        _ => false,
    })
}

/// Whether `jacobian` can be `model`'s Jacobian lane (what [`build_on`] reads from it):
/// its kind, inputs, values and pattern, and its first nodes the model's (shared, or
/// equal: a lane read from a file holds its own copy). A lane read from a file that
/// belongs to another model fails here and is not built on.
fn fits_as_jacobian(jacobian: &Lane, model: &Model) -> bool {
    let (n, m) = (model.arity(), model.outputs().len());
    let g = model.graph();
    jacobian.kind == LaneKind::Jacobian
        && (
            jacobian.symbols,
            jacobian.params,
            jacobian.seeds,
            jacobian.values,
        ) == (n, model.param_count(), 0, m)
        && jacobian.pattern.as_ref().is_some_and(|p| {
            p.rows() == m && p.columns() == n && jacobian.outputs.len() == m + p.nonzeros()
        })
        && jacobian.outputs[..m] == *model.outputs()
        && (jacobian.graph.shared_with(g) >= g.len()
            || (jacobian.graph.len() >= g.len()
                && g.nodes()
                    .iter()
                    .zip(jacobian.graph.nodes())
                    .all(|(a, b)| a == b)))
}

/// The `Hessian` or `Hvp` lane of `model` on `jacobian` (its Jacobian lane, checked by
/// [`fits_as_jacobian`]): the gradient nodes are its cells, and the forward sweeps over
/// them are appended to a clone of its graph, which shares its nodes.
fn second_order(model: &Model, kind: LaneKind, zeros: Zeros, jacobian: &Lane) -> Lane {
    let n = model.arity();
    let m = model.outputs().len();
    let mut g = jacobian.graph.clone();
    let mut outs = jacobian.outputs.clone();
    let pattern = jacobian
        .pattern
        .clone()
        .unwrap_or_else(|| Sparsity::new(m, n, []));
    // `grads[r][j]` = ∂f_r/∂x_j: the cells, as the reverse sweeps made them.
    let mut grads: Vec<Vec<Deriv>> = vec![vec![None; n]; m];
    for (cell, &id) in pattern.entries().iter().zip(&jacobian.outputs[m..]) {
        grads[cell.row][cell.column] = Some(id);
    }
    let (seeds, hl) = second_order_outputs(&mut g, &grads, &mut outs, kind, zeros, n);
    finish(model, kind, g, &outs, seeds, m, Some(pattern), hl)
}

/// Appends the outputs a second-order lane adds to `outs` (the values and the Jacobian
/// cells): for `Hvp` the `n` products `H·v` with the seeds as the direction, for `Hessian`
/// the colour-compressed blocks. Answers the lane's seed count and, for `Hessian`, its
/// layout. `grads[r][j]` is `∂f_r/∂x_j` in `g`, for the `n` symbols.
fn second_order_outputs(
    g: &mut Graph,
    grads: &[Vec<Deriv>],
    outs: &mut Vec<NodeId>,
    kind: LaneKind,
    zeros: Zeros,
    n: usize,
) -> (usize, Option<HessianLayout>) {
    if kind == LaneKind::Hvp {
        let tangents: Vec<Deriv> = (0..n)
            .map(|j| Some(g.seed(SeedId::from_index(j))))
            .collect();
        for row in hessian::products_with(g, grads, &tangents, zeros) {
            outs.extend(row.into_iter().map(|t| or_zero(g, t)));
        }
        (n, None)
    } else {
        let per_output = hessian::pattern(g, grads, n);
        let hl = HessianLayout::new(hessian::symmetric_union(&per_output, n));
        outs.extend(compressed_blocks(g, grads, &hl, &per_output));
        (0, Some(hl))
    }
}

/// The lane of `kind` over the passes' graph `g`: pruned to `outputs` (in place, never
/// beside a copy) and verified in debug builds.
#[allow(clippy::too_many_arguments)]
fn finish(
    model: &Model,
    kind: LaneKind,
    g: Graph,
    outputs: &[NodeId],
    seeds: usize,
    values: usize,
    pattern: Option<Sparsity>,
    hessian: Option<HessianLayout>,
) -> Lane {
    let (graph, outputs) = g.prune(outputs);
    let lane = Lane {
        kind,
        graph,
        outputs,
        symbols: model.arity(),
        params: model.param_count(),
        seeds,
        values,
        pattern,
        hessian,
    };
    debug_assert!(
        crate::verify(&lane.graph, lane.seed_base(), lane.seeds).is_empty(),
        "lane {kind:?} fails verification: {:?}",
        crate::verify(&lane.graph, lane.seed_base(), lane.seeds)
    );
    lane
}

/// The [`HessianLayout`] that [`build`]`(model, LaneKind::Hessian)` carries, computed without
/// building the lane: the reverse sweep of each output, the structural pattern of each
/// output's Hessian and their colouring, none of the compressed products (the lane's
/// forward sweeps, one per colour) and no extraction. What the column-count accessors read
/// before a Hessian lane exists.
pub fn hessian_layout(model: &Model) -> HessianLayout {
    let n = model.arity();
    let mut g = model.graph().clone();
    let grads = hessian::gradients(&mut g, model.outputs(), n);
    let per_output = hessian::pattern(&g, &grads, n);
    HessianLayout::new(hessian::symmetric_union(&per_output, n))
}

/// The lane of every order-`order` partial of `model` (`order ≥ 1`): per output `r`, the
/// partials at each sorted multi-index of [`TensorLayout::new`]`(n, order)`, structural
/// zeros as the constant `0`; no values, no seeds. Built by nested differentiation
/// ([`crate::ad::tensor`]); order 1 is the gradient lane's nodes.
///
/// # Errors
/// [`Error::OrderTooHigh`] for `order == 0` or above [`MAX_TENSOR_ORDER`];
/// [`Error::TooLarge`] when `m·C(n+order−1, order)` outputs would pass
/// [`MAX_TENSOR_OUTPUTS`] (checked before anything is built).
pub fn build_tensor(model: &Model, order: usize) -> Result<Lane, Error> {
    if order == 0 || order > MAX_TENSOR_ORDER {
        return Err(Error::OrderTooHigh {
            order,
            max: MAX_TENSOR_ORDER,
        });
    }
    let (n, m) = (model.arity(), model.outputs().len());
    // C(n+k−1, k), saturating, before any allocation.
    let mut unique: usize = 1;
    for t in 0..order {
        unique = unique.saturating_mul(n + t) / (t + 1);
        if unique > MAX_TENSOR_OUTPUTS {
            break;
        }
    }
    let size = unique.saturating_mul(m);
    if size > MAX_TENSOR_OUTPUTS {
        return Err(Error::TooLarge {
            call: "derivative_tensor",
            values: size as u128,
            limit: MAX_TENSOR_OUTPUTS,
        });
    }
    Ok(tensor_lane(model, order))
}

/// The highest order [`build_tensor`] builds.
pub const MAX_TENSOR_ORDER: usize = 32;
/// The most outputs (distinct partials over all outputs) a tensor lane may have.
pub const MAX_TENSOR_OUTPUTS: usize = 1 << 20;

fn tensor_lane(model: &Model, order: usize) -> Lane {
    let n = model.arity();
    let mut g = model.graph().clone();
    let layout = TensorLayout::new(n, order);
    let rows = tensor::tensors(&mut g, model.outputs(), n, &layout);
    let outs: Vec<NodeId> = rows
        .into_iter()
        .flatten()
        .map(|d| or_zero(&mut g, d))
        .collect();
    let (graph, outputs) = g.prune(&outs);
    let lane = Lane {
        kind: LaneKind::Tensor,
        graph,
        outputs,
        symbols: n,
        params: model.param_count(),
        seeds: 0,
        values: 0,
        pattern: None,
        hessian: None,
    };
    debug_assert!(crate::verify(&lane.graph, lane.seed_base(), lane.seeds).is_empty());
    lane
}

/// A structural zero as the constant `0`, for outputs that must exist.
fn or_zero(g: &mut Graph, d: Deriv) -> NodeId {
    d.unwrap_or_else(|| g.constant(0.0))
}

/// One reverse sweep per function; the structurally nonzero partials in row-major order and
/// their pattern.
fn jacobian_cells(g: &mut Graph, values: &[NodeId], n: usize) -> (Vec<NodeId>, Sparsity) {
    let grads = hessian::gradients(g, values, n);
    cells_of(&grads, n)
}

/// The structurally nonzero entries of `grads` (one row per function) in row-major order,
/// and their pattern.
fn cells_of(grads: &[Vec<Deriv>], n: usize) -> (Vec<NodeId>, Sparsity) {
    let mut cells = Vec::new();
    let mut pairs = Vec::new();
    for (i, row) in grads.iter().enumerate() {
        for (j, d) in row.iter().enumerate() {
            if let Some(d) = *d {
                cells.push(d);
                pairs.push((i, j));
            }
        }
    }
    (cells, Sparsity::new(grads.len(), n, pairs))
}

/// One forward sweep over the gradients per colour group of `layout`, seeded with the
/// constant `1` on the group's symbols; per output, the `colours × n` compressed block
/// (value `k·n + i` is `(Hᵣ·v_k)ᵢ`, structural zeros as the constant `0`).
///
/// In debug builds, checks each product against `per_output`: a product read at row `i`
/// may be nonzero only if its group meets the pattern of row `i` (the pattern's zeros are
/// the forward pass's).
fn compressed_blocks(
    g: &mut Graph,
    grads: &[Vec<Deriv>],
    layout: &HessianLayout,
    per_output: &[Sparsity],
) -> Vec<NodeId> {
    let n = layout.symbols();
    let one = g.constant(1.0);
    let columns: Vec<Vec<Vec<Deriv>>> = (0..layout.colours())
        .map(|k| {
            let tangents: Vec<Deriv> = (0..n)
                .map(|j| (layout.colouring().colour(j) == Some(k)).then_some(one))
                .collect();
            hessian::products(g, grads, &tangents)
        })
        .collect();
    let mut outs = Vec::with_capacity(grads.len() * layout.columns());
    for (r, pattern) in per_output.iter().enumerate() {
        for (k, column) in columns.iter().enumerate() {
            for (i, d) in column[r].iter().enumerate() {
                debug_assert!(
                    d.is_none_or(|d| g.is_constant(d, 0.0))
                        || layout.group(k).iter().any(|&j| pattern.at(i, j).is_some()),
                    "output {r}: product of group {k} at row {i} is outside the pattern"
                );
                outs.push(or_zero(g, *d));
            }
        }
    }
    outs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{random_model, ModelSize};
    use crate::SymbolId;

    /// The second-order lane of `kind` built as it was before lanes shared nodes: every
    /// pass appended to one copy of the model, then pruned.
    fn in_one_graph(model: &Model, kind: LaneKind, zeros: Zeros) -> Lane {
        let (n, m) = (model.arity(), model.outputs().len());
        let mut g = model.graph().clone();
        let grads = hessian::gradients(&mut g, model.outputs(), n);
        let (cells, pattern) = cells_of(&grads, n);
        let mut outs = model.outputs().to_vec();
        outs.extend(cells);
        let (seeds, hl) = second_order_outputs(&mut g, &grads, &mut outs, kind, zeros, n);
        finish(model, kind, g, &outs, seeds, m, Some(pattern), hl)
    }

    /// `lane`'s nodes depth first from its outputs, arguments left to right, renumbered in
    /// that order, and its outputs: equal for two lanes exactly when they are the same
    /// hash-consed graph, whatever order their nodes were made in.
    fn depth_first(lane: &Lane) -> (Vec<Node>, Vec<NodeId>) {
        let g = &lane.graph;
        let mut map = vec![crate::NO_ARG; g.len()];
        let mut nodes = Vec::new();
        for &root in &lane.outputs {
            let mut stack = vec![(root, 0usize)];
            while let Some((id, next)) = stack.pop() {
                if map[id.index()] != crate::NO_ARG {
                    continue;
                }
                match g.node(id).args().get(next) {
                    Some(&a) => {
                        stack.push((id, next + 1));
                        stack.push((a, 0));
                    }
                    None => {
                        map[id.index()] = NodeId::from_index(nodes.len());
                        nodes.push(g.node(id).map_args(|a| map[a.index()]));
                    }
                }
            }
        }
        (nodes, lane.outputs.iter().map(|o| map[o.index()]).collect())
    }

    #[test]
    fn second_order_lanes_on_the_jacobian_lane_are_the_one_graph_lanes() {
        // The same graph as every pass appending to one copy of the model (its nodes
        // made in another order: those the Jacobian lane left out come after its own),
        // node for node whether the Jacobian lane is given or not.
        let mut sharing = 0;
        for seed in 0..300 {
            let size = ModelSize {
                nodes: 8 + (seed as usize % 5) * 12,
                symbols: 1 + seed as usize % 4,
                outputs: 1 + seed as usize % 3,
                ..ModelSize::default()
            };
            let model = random_model(seed, &size);
            let jacobian = build(&model, LaneKind::Jacobian);
            for (kind, zeros) in [
                (LaneKind::Hessian, Zeros::Ieee),
                (LaneKind::Hvp, Zeros::Ieee),
                (LaneKind::Hvp, Zeros::Skip),
            ] {
                let want = in_one_graph(&model, kind, zeros);
                let on = build_with(&model, kind, zeros, Some(&jacobian));
                let alone = build_with(&model, kind, zeros, None);
                assert_eq!(
                    on.graph.nodes(),
                    alone.graph.nodes(),
                    "seed {seed} {kind:?}"
                );
                assert_eq!(on.outputs, alone.outputs, "seed {seed} {kind:?}");
                assert_eq!(depth_first(&on), depth_first(&want), "seed {seed} {kind:?}");
                assert_eq!((&on.pattern, &on.hessian), (&want.pattern, &want.hessian));
                // The Jacobian lane's nodes are stored once (the model's, where the
                // reverse sweeps make holds).
                let shared = on.graph.shared_with(&jacobian.graph);
                if makes_holds(&model) {
                    assert_eq!(shared, model.graph().len(), "seed {seed}");
                } else {
                    assert_eq!(shared, jacobian.graph.len(), "seed {seed}");
                    sharing += 1;
                }
            }
        }
        assert!(
            sharing > 300,
            "{sharing} of 900 lanes built on the Jacobian lane"
        );
    }

    #[test]
    fn every_lane_built_passes_the_loaders_check() {
        // What a saved equation's loader demands of a lane ([`Lane::check_layout`]), every
        // lane ddx builds must meet: in particular every node reached by an output, also
        // where removing the reverse sweeps' holds lets the rebuilt nodes fold.
        let mut g = Graph::new();
        let (x, y) = (g.symbol(SymbolId(0)), g.symbol(SymbolId(1)));
        let minus_x = g.unary(Op::Neg, x);
        // The tester's case: `y ** -x` (its Hessian lane once kept a node nothing reached).
        let pow = g.binary(Op::Pow, y, minus_x);
        let pow_model = Model::seal(&g, &[pow], vec!["x".into(), "y".into()]);
        let models = std::iter::once(pow_model).chain((0..1000).map(|seed| {
            random_model(
                seed,
                &ModelSize {
                    nodes: 6 + seed as usize % 20,
                    symbols: 1 + seed as usize % 3,
                    outputs: 1 + seed as usize % 2,
                    ..ModelSize::default()
                },
            )
        }));
        for (k, model) in models.enumerate() {
            let (m, n, p) = (model.outputs().len(), model.arity(), model.param_count());
            for kind in LaneKind::ALL {
                let lane = build(&model, kind);
                assert_eq!(lane.check_layout(m, n, p), Ok(()), "model {k} {kind:?}");
                if let Some(twin) = build_twin(&model, kind) {
                    assert_eq!(
                        twin.check_layout(m, n, p),
                        Ok(()),
                        "model {k} twin {kind:?}"
                    );
                }
            }
            let tensor = build_tensor(&model, 2).expect("order 2");
            assert_eq!(tensor.check_layout(m, n, p), Ok(()), "model {k} tensor");
        }
    }

    #[test]
    fn lanes_share_the_model_nodes_they_compute() {
        let model = random_model(7, &ModelSize::default());
        let shared = |kind| build(&model, kind).graph.shared_with(model.graph());
        let all = model.graph().len();
        for kind in [
            LaneKind::Value,
            LaneKind::Jacobian,
            LaneKind::Jvp,
            LaneKind::Vjp,
            LaneKind::Hessian,
            LaneKind::Hvp,
        ] {
            assert_eq!(shared(kind), all, "{kind:?}");
        }
        let twin = build_twin(&model, LaneKind::Jvp).map(|t| t.graph.shared_with(model.graph()));
        assert_eq!(twin, Some(all));
    }
}
