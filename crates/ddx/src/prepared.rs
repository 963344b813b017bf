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
//! - The plain `Hessian` and `hvp` lanes (and the `hvp` twin) are built on the plain
//!   Jacobian lane and share its nodes (their graphs start with its graph); a Jacobian
//!   lane prepared only for that is not *asked for*: the compile backend and saving see
//!   only the lanes callers asked for.

use crate::interp::tape::Tape;
use crate::interp::{Program, Schedule};
use ddx_ir::{HessianLayout, Lane, LaneKind, Model, Sparsity};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

/// Identities of prepared lanes and lane sets, never reused within a process: what a
/// remembered call's [`Extent`](crate::cache::Extent) names, so an entry made for one
/// lane is never served to another.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// A lane and its lowered programs.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) lane: Lane,
    /// This lane's identity (unique in the process).
    pub(crate) id: u64,
    /// Scheduled for one point at a time, lowered on the first per-point call the
    /// interpreter answers (a lane a kernel answers never needs it).
    program: OnceLock<Program>,
    /// Scheduled for blocks of points, lowered on the first batch call.
    batch: OnceLock<Program>,
    /// Lowered with a slot per value, for the last-call cache (`crate::cache`): built on
    /// the first call an active cache remembers.
    tape: OnceLock<Tape>,
}

impl Prepared {
    /// The lane `lane`; its programs are lowered when first needed.
    pub(crate) fn new(lane: Lane) -> Self {
        Prepared {
            lane,
            id: next_id(),
            program: OnceLock::new(),
            batch: OnceLock::new(),
            tape: OnceLock::new(),
        }
    }

    /// Where the products of a `jvp` or `hvp` lane start among its outputs: the values
    /// (and an `hvp` lane's gradient cells) before them do not depend on the direction, so
    /// a twin answers them with the plain lane's bits, NaN or not, and only the products
    /// decide whether a point needs the twin.
    pub(crate) fn first_product(&self) -> usize {
        let cells = match self.lane.kind {
            LaneKind::Hvp => self.lane.pattern.as_ref().map_or(0, Sparsity::nonzeros),
            _ => 0,
        };
        self.lane.values + cells
    }

    /// The program for one point at a time.
    pub(crate) fn program(&self) -> &Program {
        self.program
            .get_or_init(|| Program::lower_built(&self.lane, Schedule::Level))
    }

    /// The per-point program, if a call has lowered it.
    #[cfg(all(test, feature = "jit"))]
    pub(crate) fn program_if_built(&self) -> Option<&Program> {
        self.program.get()
    }

    /// The tape program (one slot per value), for the last-call cache.
    pub(crate) fn tape(&self) -> &Tape {
        self.tape.get_or_init(|| Tape::new(&self.lane))
    }

    /// The tape program, if a remembered call has built it.
    pub(crate) fn tape_if_built(&self) -> Option<&Tape> {
        self.tape.get()
    }

    /// The program for blocks of points.
    pub(crate) fn batch(&self) -> &Program {
        self.batch
            .get_or_init(|| Program::lower_built(&self.lane, Schedule::Graph))
    }
}

/// A model and every lane prepared from it so far.
#[derive(Debug)]
pub(crate) struct PreparedLanes {
    pub(crate) model: Model,
    /// This set's identity (unique in the process).
    pub(crate) id: u64,
    /// Whether the model calls a user function: calls then check for a failure of user
    /// code ([`ddx_ir::user::take_failure`]).
    pub(crate) user_calls: bool,
    /// The lanes as the passes build them, and contracted (`Codegen::contract`).
    lanes: [[OnceLock<Prepared>; LaneKind::ALL.len()]; 2],
    /// Whether a caller asked for the plain Jacobian lane ([`PreparedLanes::prepared`]):
    /// one built only to build the second-order lanes on is neither compiled for
    /// [`Backend::Compile`](crate::Backend::Compile) nor saved unless asked for. (Every
    /// other lane is built only when asked for.)
    jacobian_asked: AtomicBool,
    /// The zero-skipping twins of the `jvp` and `hvp` lanes ([`ddx_ir::lane::build_twin`]),
    /// by variant, then `jvp`, `hvp`: run at the points where the plain lane answers a
    /// NaN; never saved (a loaded equation builds them from its model).
    twins: [[OnceLock<Prepared>; 2]; 2],
    /// The derivative-tensor lanes, by order (`equation::tensor`); never saved.
    pub(crate) tensors: Box<[OnceLock<crate::equation::tensor::TensorLane>]>,
    /// The Hessian layout computed alone ([`ddx_ir::lane::hessian_layout`]), for the
    /// column-count accessors asked before any Hessian lane is prepared; never saved.
    hessian_structure: OnceLock<HessianLayout>,
}

impl PreparedLanes {
    pub(crate) fn new(model: Model) -> Self {
        Self {
            user_calls: ddx_ir::user::first_call(model.graph()).is_some(),
            model,
            id: next_id(),
            lanes: Default::default(),
            jacobian_asked: AtomicBool::new(false),
            twins: Default::default(),
            tensors: (0..=crate::equation::tensor::MAX_TENSOR_ORDER)
                .map(|_| OnceLock::new())
                .collect(),
            hessian_structure: OnceLock::new(),
        }
    }

    /// Whether lane `kind` of the variant `contract` selects was asked for, and so is
    /// prepared.
    fn asked(&self, kind: LaneKind, contract: bool) -> bool {
        let base_only =
            kind == LaneKind::Jacobian && !contract && !self.jacobian_asked.load(Ordering::Relaxed);
        !base_only
            && self.lanes[usize::from(contract)][kind as usize]
                .get()
                .is_some()
    }

    /// The lanes already asked for (and so prepared), of the variant `contract` selects.
    pub(crate) fn prepared_kinds(&self, contract: bool) -> Vec<LaneKind> {
        LaneKind::ALL
            .into_iter()
            .filter(|&k| self.asked(k, contract))
            .collect()
    }

    /// A set whose lanes come ready-made (a loaded equation): each `(contract, lane)` is
    /// placed as if it had been prepared here. The caller has checked each lane
    /// against the model ([`Lane::check_layout`]); a kind given twice keeps the first.
    pub(crate) fn with_lanes(model: Model, lanes: Vec<(bool, Lane)>) -> Self {
        let set = Self::new(model);
        for (contract, lane) in lanes {
            if (lane.kind, contract) == (LaneKind::Jacobian, false) {
                set.jacobian_asked.store(true, Ordering::Relaxed);
            }
            let cell = &set.lanes[usize::from(contract)][lane.kind as usize];
            let _ = cell.set(Prepared::new(lane));
        }
        set
    }

    /// Every lane asked for so far, as `(contract, lane)`: the plain ones first, each
    /// variant in [`LaneKind::ALL`] order.
    pub(crate) fn prepared_lanes(&self) -> impl Iterator<Item = (bool, &Lane)> {
        [false, true].into_iter().flat_map(move |contract| {
            LaneKind::ALL.into_iter().filter_map(move |k| {
                let lane = &self.lanes[usize::from(contract)][k as usize].get()?.lane;
                self.asked(k, contract).then_some((contract, lane))
            })
        })
    }

    /// The Jacobian pattern, read from a lane already prepared that carries it (the
    /// gradient, Jacobian, `hvp` and Hessian lanes all carry the same one: the cells of
    /// the model's reverse sweeps), else from the gradient lane of variant `contract`,
    /// built now. So asking for the pattern never builds a lane besides one a call has
    /// built.
    pub(crate) fn jacobian_pattern(&self, contract: bool) -> &Sparsity {
        let kinds = [
            LaneKind::Gradient,
            LaneKind::Jacobian,
            LaneKind::Hvp,
            LaneKind::Hessian,
        ];
        let known = kinds.into_iter().find_map(|k| {
            self.lanes
                .iter()
                .find_map(|variant| variant[k as usize].get()?.lane.pattern.as_ref())
        });
        match known {
            Some(pattern) => pattern,
            None => self
                .prepared(LaneKind::Gradient, contract)
                .lane
                .pattern
                .as_ref()
                .unwrap_or_else(|| unreachable!("a gradient lane always carries its pattern")),
        }
    }

    /// The Hessian layout: the prepared Hessian lane's (either variant), else computed
    /// alone, once ([`ddx_ir::lane::hessian_layout`]: the same layout, without the
    /// compressed products). Asking for the Hessian's column count or colours thus never
    /// builds a Hessian lane.
    pub(crate) fn hessian_layout(&self) -> &HessianLayout {
        let lane = self.lanes.iter().find_map(|variant| {
            variant[LaneKind::Hessian as usize]
                .get()?
                .lane
                .hessian
                .as_ref()
        });
        match lane {
            Some(layout) => layout,
            None => self
                .hessian_structure
                .get_or_init(|| ddx_ir::lane::hessian_layout(&self.model)),
        }
    }

    /// The zero-skipping twin of lane `kind` (only `jvp` and `hvp` have one), built on
    /// first use, of the variant `contract` selects; the contracted twin is built from
    /// the plain twin.
    pub(crate) fn twin(&self, kind: LaneKind, contract: bool) -> Option<&Prepared> {
        let slot = match kind {
            LaneKind::Jvp => 0,
            LaneKind::Hvp => 1,
            _ => return None,
        };
        let cell = &self.twins[usize::from(contract)][slot];
        if let Some(p) = cell.get() {
            return Some(p);
        }
        let lane = if contract {
            ddx_ir::contract::contract(&self.twin(kind, false)?.lane)
        } else if kind == LaneKind::Hvp {
            // On the Jacobian lane, as the plain `hvp` lane: sharing its nodes.
            let jacobian = &self.lane(LaneKind::Jacobian, false).lane;
            ddx_ir::lane::build_twin_on(&self.model, kind, jacobian)?
        } else {
            ddx_ir::lane::build_twin(&self.model, kind)?
        };
        Some(cell.get_or_init(|| Prepared::new(lane)))
    }

    /// The lane `kind`, asked for: built on first use; contracted (see
    /// [`ddx_ir::contract`]) when `contract` is set. The plain `Hessian` and `hvp` lanes
    /// (and the `hvp` twin) are built on the plain Jacobian lane (prepared first if it is
    /// not yet, without marking it asked for), whose nodes they share
    /// ([`ddx_ir::lane::build_on`]); the model's value nodes are shared by every lane that
    /// computes the values.
    #[inline]
    pub(crate) fn prepared(&self, kind: LaneKind, contract: bool) -> &Prepared {
        // Inlined where `kind` is a constant: the test folds away for the other lanes.
        if kind == LaneKind::Jacobian && !contract {
            self.ask_jacobian();
        }
        self.lane(kind, contract)
    }

    /// Marks the plain Jacobian lane asked for (read first: a call per point must not
    /// write a line other threads read).
    fn ask_jacobian(&self) {
        if !self.jacobian_asked.load(Ordering::Relaxed) {
            self.jacobian_asked.store(true, Ordering::Relaxed);
        }
    }

    /// [`PreparedLanes::prepared`], without marking the lane asked for.
    #[inline]
    fn lane(&self, kind: LaneKind, contract: bool) -> &Prepared {
        let cell = &self.lanes[usize::from(contract)][kind as usize];
        match cell.get() {
            Some(p) => p,
            None => self.build_lane(cell, kind, contract),
        }
    }

    /// Builds lane `kind` into `cell` on first use (out of line: a call per point finds
    /// it built).
    #[cold]
    #[inline(never)]
    fn build_lane<'a>(
        &'a self,
        cell: &'a OnceLock<Prepared>,
        kind: LaneKind,
        contract: bool,
    ) -> &'a Prepared {
        cell.get_or_init(|| {
            Prepared::new(if contract {
                ddx_ir::contract::contract(&self.prepared(kind, false).lane)
            } else if matches!(kind, LaneKind::Hessian | LaneKind::Hvp) {
                let jacobian = &self.lane(LaneKind::Jacobian, false).lane;
                ddx_ir::lane::build_on(&self.model, kind, jacobian)
            } else {
                ddx_ir::lane::build(&self.model, kind)
            })
        })
    }
}
