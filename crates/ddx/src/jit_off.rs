//! The code generator's place in a build without the `jit` feature: every lane answers
//! from the interpreter, whatever the backend, and nothing is ever compiled.

use crate::options::{JitStatus, OptLevel, Options, Warming};
use crate::prepared::PreparedLanes;
use ddx_ir::LaneKind;
use std::sync::Arc;

/// A kernel, of which this build has none.
#[derive(Debug)]
pub(crate) enum Kernel {}

impl Kernel {
    pub(crate) fn run_point(&self, _x: &[f64], _out: &mut [f64]) {
        match *self {}
    }

    /// # Safety
    /// Never callable: no kernel exists.
    pub(crate) unsafe fn run_columns(
        &self,
        _inputs: &[*const f64],
        _outputs: &[*mut f64],
        _start: usize,
        _len: usize,
    ) {
        match *self {}
    }

    pub(crate) fn engine_choice(&self) -> &crate::engine_choice::EngineChoice {
        match *self {}
    }
}

/// No compiled code. (A field, not a unit struct, so that `Jit::default()` reads the
/// same in both builds.)
#[derive(Debug, Default, Clone)]
pub(crate) struct Jit {
    _none: (),
}

impl Jit {
    pub(crate) fn new(
        _options: &Options,
        _core: &Arc<PreparedLanes>,
        _prepared: &[LaneKind],
    ) -> Jit {
        Jit::default()
    }
    /// Saved kernels are never run by this build: a loaded equation interprets.
    pub(crate) fn with_saved(
        _options: &Options,
        _core: &Arc<PreparedLanes>,
        _prepared: &[LaneKind],
        _saved: &[crate::archive::StoredKernel],
    ) -> Jit {
        Jit::default()
    }
    pub(crate) fn saved(&self, _core: &PreparedLanes) -> Vec<crate::archive::StoredKernel> {
        Vec::new()
    }
    #[inline]
    pub(crate) fn point(&self, _core: &Arc<PreparedLanes>, _kind: LaneKind) -> Option<&Kernel> {
        None
    }
    #[inline]
    pub(crate) fn batch(
        &self,
        _core: &Arc<PreparedLanes>,
        _kind: LaneKind,
        _points: usize,
    ) -> Option<&Kernel> {
        None
    }
    pub(crate) fn uses_kernel(&self, _kind: LaneKind) -> bool {
        false
    }
    pub(crate) fn level(&self, _kind: LaneKind) -> Option<OptLevel> {
        None
    }
    pub(crate) fn wait(&self, _core: &Arc<PreparedLanes>, _kind: LaneKind) -> bool {
        false
    }
    pub(crate) fn wait_refined(&self, _kind: LaneKind) {}
    pub(crate) fn warming(&self, _kind: LaneKind) -> Option<Warming> {
        None
    }
    pub(crate) fn status(&self) -> JitStatus {
        JitStatus::default()
    }
}
