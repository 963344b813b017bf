//! The engine seam: the lanes an equation has prepared, which every engine reads.
//!
//! [`PreparedLanes`] owns the sealed [`Model`] and, per [`LaneKind`] and per variant (as
//! the passes build it, and contracted by [`ddx_ir::contract`]), one [`Prepared`]: the
//! lane graph with its Jacobian pattern and Hessian layout (colouring), and the
//! interpreter's programs lowered from it. Engines — the interpreter, the Cranelift JIT,
//! the OpenCL device — are executors of these lanes: each takes `&PreparedLanes` (or an
//! `Arc` of it, to build on a background thread) and none of them imports `Equation`.
//! Saving and loading serialise this same place.
//!
//! **Invariants.**
//! - A lane is built once, the first time any caller asks for it, and each of its
//!   interpreter programs is lowered once, the first time the interpreter runs it (a lane
//!   that only a kernel answers is never lowered), each under a [`OnceLock`]: many threads
//!   may ask at once, one builds, the others wait and read.
//! - What is prepared never changes afterwards, so an engine may keep a reference (or an
//!   `Arc` of the whole set) for as long as it runs.
//! - The contracted variant of a lane is built from the plain one, never from the model.

use crate::interp::{Program, Schedule};
use ddx_ir::{Lane, LaneKind, Model};
use std::sync::OnceLock;

/// A lane and its lowered programs.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) lane: Lane,
    /// Scheduled for one point at a time, lowered on the first per-point call the
    /// interpreter answers (a lane a kernel answers never needs it).
    program: OnceLock<Program>,
    /// Scheduled for blocks of points, lowered on the first batch call.
    batch: OnceLock<Program>,
}

impl Prepared {
    /// The lane `lane`; its programs are lowered when first needed.
    pub(crate) fn new(lane: Lane) -> Self {
        Prepared {
            lane,
            program: OnceLock::new(),
            batch: OnceLock::new(),
        }
    }

    /// The program for one point at a time.
    pub(crate) fn program(&self) -> &Program {
        self.program
            .get_or_init(|| Program::lower(&self.lane, Schedule::Level))
    }

    /// The program for blocks of points.
    pub(crate) fn batch(&self) -> &Program {
        self.batch
            .get_or_init(|| Program::lower(&self.lane, Schedule::Graph))
    }
}

/// A model and every lane prepared from it so far.
#[derive(Debug)]
pub(crate) struct PreparedLanes {
    pub(crate) model: Model,
    /// Whether the model calls a user function: calls then check for a failure of user
    /// code ([`ddx_ir::user::take_failure`]).
    pub(crate) user_calls: bool,
    /// The lanes as the passes build them, and contracted (`Codegen::contract`).
    lanes: [[OnceLock<Prepared>; LaneKind::ALL.len()]; 2],
    /// The derivative-tensor lanes, by order (`equation::tensor`); never saved.
    pub(crate) tensors: Box<[OnceLock<crate::equation::tensor::TensorLane>]>,
}

impl PreparedLanes {
    pub(crate) fn new(model: Model) -> Self {
        Self {
            user_calls: ddx_ir::user::first_call(model.graph()).is_some(),
            model,
            lanes: Default::default(),
            tensors: (0..=crate::equation::tensor::MAX_TENSOR_ORDER)
                .map(|_| OnceLock::new())
                .collect(),
        }
    }

    /// The lanes already prepared, of the variant `contract` selects.
    pub(crate) fn prepared_kinds(&self, contract: bool) -> Vec<LaneKind> {
        LaneKind::ALL
            .into_iter()
            .filter(|&k| {
                self.lanes[usize::from(contract)][k as usize]
                    .get()
                    .is_some()
            })
            .collect()
    }

    /// A set whose lanes come ready-made (a loaded equation): each `(contract, lane)` is
    /// placed as if it had been prepared here. The caller has checked each lane
    /// against the model ([`Lane::check_layout`]); a kind given twice keeps the first.
    pub(crate) fn with_lanes(model: Model, lanes: Vec<(bool, Lane)>) -> Self {
        let set = Self::new(model);
        for (contract, lane) in lanes {
            let cell = &set.lanes[usize::from(contract)][lane.kind as usize];
            let _ = cell.set(Prepared::new(lane));
        }
        set
    }

    /// Every lane prepared so far, as `(contract, lane)`: the plain ones first, each
    /// variant in [`LaneKind::ALL`] order.
    pub(crate) fn prepared_lanes(&self) -> impl Iterator<Item = (bool, &Lane)> {
        [false, true].into_iter().flat_map(move |contract| {
            self.lanes[usize::from(contract)]
                .iter()
                .filter_map(move |cell| cell.get().map(|p| (contract, &p.lane)))
        })
    }

    /// The lane `kind`, built on first use; contracted (see
    /// [`ddx_ir::contract`]) when `contract` is set.
    pub(crate) fn prepared(&self, kind: LaneKind, contract: bool) -> &Prepared {
        self.lanes[usize::from(contract)][kind as usize].get_or_init(|| {
            Prepared::new(if contract {
                ddx_ir::contract::contract(&self.prepared(kind, false).lane)
            } else {
                ddx_ir::lane::build(&self.model, kind)
            })
        })
    }
}
