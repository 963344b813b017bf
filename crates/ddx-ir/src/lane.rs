//! Lanes: the graph for one kind of call, built from a model by the AD passes.
//!
//! This is the orchestrator: it copies the model's value graph, runs the passes a lane
//! needs (they append to the copy, sharing value nodes by hash-consing), then extracts
//! only what the lane's outputs reach, so a lane computes nothing it does not answer.
//! In debug builds every lane is verified.
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

use crate::ad::{forward::forward, reverse::reverse, Deriv};
use crate::{Graph, Model, NodeId, SeedId, Sparsity};

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
}

impl LaneKind {
    /// Every lane kind.
    pub const ALL: [LaneKind; 5] = [
        LaneKind::Value,
        LaneKind::Jacobian,
        LaneKind::Gradient,
        LaneKind::Jvp,
        LaneKind::Vjp,
    ];

    /// The lane's name, as `want` spells it (`"value"`, `"jacobian"`, …).
    pub fn name(self) -> &'static str {
        match self {
            LaneKind::Value => "value",
            LaneKind::Jacobian => "jacobian",
            LaneKind::Gradient => "gradient",
            LaneKind::Jvp => "jvp",
            LaneKind::Vjp => "vjp",
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
    /// Symbol inputs (`n`).
    pub symbols: usize,
    /// Seed inputs (direction or weights).
    pub seeds: usize,
    /// How many leading outputs are function values (`m`, or 0 for a gradient lane).
    pub values: usize,
    /// For Jacobian and gradient lanes, which cell each partial output is.
    pub pattern: Option<Sparsity>,
}

/// Builds the lane `kind` of `model`.
pub fn build(model: &Model, kind: LaneKind) -> Lane {
    let n = model.arity();
    let m = model.outputs().len();
    let mut g = model.graph().clone();
    let values: Vec<NodeId> = model.outputs().to_vec();
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
            let jv = forward(&mut g, &tangents, &values);
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
    };
    let (graph, outputs) = g.extract(&outputs);
    let lane = Lane {
        kind,
        graph,
        outputs,
        symbols: n,
        seeds,
        values: value_count,
        pattern,
    };
    debug_assert!(
        crate::verify(&lane.graph, lane.symbols, lane.seeds).is_empty(),
        "lane {kind:?} fails verification: {:?}",
        crate::verify(&lane.graph, lane.symbols, lane.seeds)
    );
    lane
}

/// A structural zero as the constant `0`, for outputs that must exist.
fn or_zero(g: &mut Graph, d: Deriv) -> NodeId {
    d.unwrap_or_else(|| g.constant(0.0))
}

/// One reverse sweep per function; the structurally nonzero partials in row-major order and
/// their pattern.
fn jacobian_cells(g: &mut Graph, values: &[NodeId], n: usize) -> (Vec<NodeId>, Sparsity) {
    let one = g.constant(1.0);
    let mut cells = Vec::new();
    let mut pairs = Vec::new();
    for (i, &f) in values.iter().enumerate() {
        let row = reverse(g, &[(f, one)], n);
        for (j, d) in row.into_iter().enumerate() {
            if let Some(d) = d {
                cells.push(d);
                pairs.push((i, j));
            }
        }
    }
    (cells, Sparsity::new(values.len(), n, pairs))
}
