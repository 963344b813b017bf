//! Which engine runs the batches of a lane that has a kernel: the kernel, or the block
//! interpreter, whichever measured faster on this machine.
//!
//! Neither wins everywhere. A column kernel runs two points an instruction (Cranelift's
//! vectors are 128 bits) with every value in a register or a spill slot; the block
//! interpreter runs each instruction over a block of up to 256 points in the host's widest
//! vectors (four or eight points), and a weighted sum as one instruction whose running
//! sums stay in registers. On an AVX2 machine the kernel was 8–13 % faster on small lanes
//! (regular solution n = 8, electrolyte n = 8, NIST Kirby2) and 1.3–2.3× slower on lanes
//! made mostly of weighted sums (regular solution n = 32 / 64, UNIQUAC n = 32, a quadratic
//! form at n = 64): BENCHMARKS.md, "Which engine runs a batch". No count of a lane's
//! nodes or terms separated the two (a rule by terms a node put regular n = 16 and
//! Peng–Robinson n = 33 on the same side, 3 % and 42 % apart), and the balance moves with
//! the host's vector width, so the choice is measured, as FFTW's planner measures.
//!
//! **Invariants.**
//! - Every engine gives every point the same bits, so the choice, the trials and the
//!   moment of the decision never change an answer; each point of a batch is computed
//!   once, by one engine.
//! - The choice belongs to one kernel ([`Kernel`](crate::jit::Kernel) holds it): a kernel
//!   that replaces it (a higher tier, a refined kernel) is measured afresh.
//! - Until [`TRIALS`] trials of each engine are in, the points no trial takes run on the
//!   kernel, as before any measurement; afterwards the choice never changes.

use crate::options::BatchEngine;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

/// Points of one trial: the block interpreter's largest block, so that its trial runs
/// whole blocks as the rest of a batch does (a block of 8 points ran at 36 % of the speed
/// of 128: BENCHMARKS.md, "Batches"). A batch of fewer than two trials' points makes none.
pub(crate) const TRIAL_POINTS: usize = 256;

/// Trials of each engine before the choice; the faster is the one whose fastest trial
/// was faster (the minimum, as timing on a shared machine is only ever slowed down).
pub(crate) const TRIALS: u32 = 3;

/// The measurements of one kernel's batches against the block interpreter's.
#[derive(Debug)]
pub(crate) struct EngineChoice {
    /// The fastest trial so far of the kernel and of the block interpreter, in
    /// nanoseconds for [`TRIAL_POINTS`] points (`u64::MAX`: none yet).
    best: [AtomicU64; 2],
    /// The trials made of each.
    trials: [AtomicU32; 2],
}

impl Default for EngineChoice {
    fn default() -> Self {
        EngineChoice {
            best: [AtomicU64::new(u64::MAX), AtomicU64::new(u64::MAX)],
            trials: [AtomicU32::new(0), AtomicU32::new(0)],
        }
    }
}

impl EngineChoice {
    /// The engine chosen, once every trial is in; `None` before.
    pub(crate) fn chosen(&self) -> Option<BatchEngine> {
        let done = |e: usize| self.trials[e].load(Ordering::Acquire) >= TRIALS;
        (done(0) && done(1)).then(|| {
            let best = |e: usize| self.best[e].load(Ordering::Acquire);
            if best(1) < best(0) {
                BatchEngine::Interpreter
            } else {
                BatchEngine::Kernel
            }
        })
    }

    /// Runs points `0..len` of a batch. While no engine is chosen, it first runs trials of
    /// [`TRIAL_POINTS`] points, the kernel's and the interpreter's in turn (`kernel(start,
    /// len)` and `blocks(start, len)` on this thread, each timed), as many as the batch
    /// holds and the choice still needs; then `rest(engine, start, len)` runs the points
    /// no trial took, on the engine chosen (the kernel while trials remain). Answers what
    /// `rest` answers.
    pub(crate) fn run<R>(
        &self,
        len: usize,
        kernel: impl Fn(usize, usize),
        blocks: impl Fn(usize, usize),
        rest: impl FnOnce(BatchEngine, usize, usize) -> R,
    ) -> R {
        let mut done = 0;
        if self.chosen().is_none() {
            while done + 2 * TRIAL_POINTS <= len && self.chosen().is_none() {
                self.trial(0, || kernel(done, TRIAL_POINTS));
                self.trial(1, || blocks(done + TRIAL_POINTS, TRIAL_POINTS));
                done += 2 * TRIAL_POINTS;
            }
        }
        let engine = self.chosen().unwrap_or(BatchEngine::Kernel);
        rest(engine, done, len - done)
    }

    /// Times `body` as a trial of engine `e` (0 the kernel, 1 the interpreter).
    fn trial(&self, e: usize, body: impl FnOnce()) {
        let t = Instant::now();
        body();
        let ns = u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.best[e].fetch_min(ns, Ordering::AcqRel);
        self.trials[e].fetch_add(1, Ordering::AcqRel);
    }
}
