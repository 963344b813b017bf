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
//! - Every engine gives every point the same bits (but for a NaN's sign and payload, which
//!   may differ between engines, as the README states), so the choice, the trials and the
//!   moment of the decision change no other answer; each point of a batch is computed
//!   once, by one engine.
//! - The choice belongs to one kernel ([`Kernel`](crate::jit::Kernel) holds it): a kernel
//!   that replaces it (a higher tier, a refined kernel) is measured afresh.
//! - Until [`TRIALS`] trials of each engine are in, the points no trial takes run on the
//!   kernel, as before any measurement. The choice is made once, by the trial that
//!   completes the count, and never changes: a trial that ends later, begun before the
//!   choice on another thread, is not counted in it.

use crate::options::BatchEngine;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::time::Instant;

/// Points of one trial: the block interpreter's largest block, so that its trial runs
/// whole blocks as the rest of a batch does (a block of 8 points ran at 36 % of the speed
/// of 128: BENCHMARKS.md, "Batches"). A batch of fewer than two trials' points makes none.
pub(crate) const TRIAL_POINTS: usize = 256;

/// Trials of each engine before the choice; the faster is the one whose fastest trial
/// was faster (the minimum, as timing on a shared machine is only ever slowed down).
pub(crate) const TRIALS: u32 = 3;

/// The measurements of one kernel's batches against the block interpreter's, and the
/// choice they made.
#[derive(Debug)]
pub(crate) struct EngineChoice {
    /// The fastest trial so far of the kernel and of the block interpreter, in
    /// nanoseconds for [`TRIAL_POINTS`] points (`u64::MAX`: none yet).
    best: [AtomicU64; 2],
    /// The trials made of each.
    trials: [AtomicU32; 2],
    /// The choice, once made: [`UNDECIDED`], [`KERNEL`] or [`INTERPRETER`]. Set once, by
    /// the first trial that completes the count; a trial that ends later (begun before the
    /// choice, on another thread) changes nothing.
    decided: AtomicU8,
}

const UNDECIDED: u8 = 0;
const KERNEL: u8 = 1;
const INTERPRETER: u8 = 2;

impl Default for EngineChoice {
    fn default() -> Self {
        EngineChoice {
            best: [AtomicU64::new(u64::MAX), AtomicU64::new(u64::MAX)],
            trials: [AtomicU32::new(0), AtomicU32::new(0)],
            decided: AtomicU8::new(UNDECIDED),
        }
    }
}

impl EngineChoice {
    /// The engine chosen, once every trial is in; `None` before. Never changes once set.
    pub(crate) fn chosen(&self) -> Option<BatchEngine> {
        match self.decided.load(Ordering::Acquire) {
            KERNEL => Some(BatchEngine::Kernel),
            INTERPRETER => Some(BatchEngine::Interpreter),
            _ => None,
        }
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
        while done + 2 * TRIAL_POINTS <= len && self.chosen().is_none() {
            self.trial(0, || kernel(done, TRIAL_POINTS));
            self.trial(1, || blocks(done + TRIAL_POINTS, TRIAL_POINTS));
            done += 2 * TRIAL_POINTS;
        }
        let engine = self.chosen().unwrap_or(BatchEngine::Kernel);
        rest(engine, done, len - done)
    }

    /// Times `body` as a trial of engine `e` (0 the kernel, 1 the interpreter).
    fn trial(&self, e: usize, body: impl FnOnce()) {
        let t = Instant::now();
        body();
        self.record(e, u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }

    /// Records a trial of engine `e` that took `ns`, and makes the choice when it completes
    /// the count of both engines' trials and none is made yet.
    fn record(&self, e: usize, ns: u64) {
        self.best[e].fetch_min(ns, Ordering::AcqRel);
        self.trials[e].fetch_add(1, Ordering::AcqRel);
        let done = |e: usize| self.trials[e].load(Ordering::Acquire) >= TRIALS;
        if done(0) && done(1) {
            let best = |e: usize| self.best[e].load(Ordering::Acquire);
            let engine = if best(1) < best(0) {
                INTERPRETER
            } else {
                KERNEL
            };
            // The first to get here decides; a later trial's time changes nothing.
            let _ = self.decided.compare_exchange(
                UNDECIDED,
                engine,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The choice follows the faster best trial, is made once both engines have their
    /// trials, and stands whatever trial ends later (a trial begun before the choice on
    /// another thread: the fresh tester of session 40 made one flip the choice).
    #[test]
    fn the_faster_engine_is_chosen_once_and_the_choice_stands() {
        let c = EngineChoice::default();
        for _ in 0..TRIALS {
            assert_eq!(c.chosen(), None);
            c.record(0, 1_000);
            c.record(1, 3_000);
        }
        assert_eq!(c.chosen(), Some(BatchEngine::Kernel));
        c.record(1, 10);
        c.record(1, 10);
        assert_eq!(
            c.chosen(),
            Some(BatchEngine::Kernel),
            "a late trial changes nothing"
        );

        let c = EngineChoice::default();
        for k in 0..TRIALS {
            c.record(1, 500 + u64::from(k));
            assert_eq!(c.chosen(), None, "the kernel has no trial yet");
        }
        for _ in 0..TRIALS {
            c.record(0, 900);
        }
        assert_eq!(c.chosen(), Some(BatchEngine::Interpreter));
        c.record(0, 1);
        assert_eq!(c.chosen(), Some(BatchEngine::Interpreter));
    }

    /// `run` gives every point to exactly one engine: trials in turns of
    /// [`TRIAL_POINTS`] while the batch holds a pair and the choice is open, the rest in
    /// one piece after them.
    #[test]
    fn run_gives_every_point_once() {
        use std::cell::RefCell;
        let c = EngineChoice::default();
        for len in [0, 1, 511, 512, 1031, 700, 3001] {
            let seen = RefCell::new(vec![0u8; len]);
            let mark = |start: usize, n: usize| {
                for p in &mut seen.borrow_mut()[start..start + n] {
                    *p += 1;
                }
            };
            c.run(len, mark, mark, |_, start, n| mark(start, n));
            assert!(seen.borrow().iter().all(|&k| k == 1), "len {len}");
        }
        assert!(c.chosen().is_some(), "1031 + 700 points hold three pairs");
    }
}
