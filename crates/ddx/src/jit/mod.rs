//! The Cranelift JIT: lanes compiled to machine code by a background pool of threads.
//!
//! An equation holds one [`Jit`] for the options in force. Under a compiling backend it
//! owns a [`State`]: one [`Slot`] per lane kind, each with an atomic pointer to the kernel
//! answering that lane (null: the interpreter answers). Calls read that pointer — one
//! atomic load — and never wait; a worker of the compile pool ([`compile`]) publishes a
//! kernel by storing the pointer, after which every call switches to it. Every kernel agrees with the
//! interpreter to the bit, so the moment of the switch is invisible in the answers.
//!
//! **Invariants.**
//! - A kernel, once published in a slot, lives as long as the [`State`] (the slot owns
//!   every kernel it ever published), and the equation keeps its state alive while any of
//!   its calls runs; a better tier replaces the pointer but not the old kernel.
//! - Clones of an equation share its state (its kernels and any compile in flight); the
//!   state counts the equations holding it ([`State::holders`]).
//! - Changing the options replaces the equation's state (`set_options` takes `&mut`, so no
//!   call of it is running); the last equation to let go of a state marks it abandoned; the
//!   compile pool checks that mark before each tier and before publishing, so nothing
//!   compiled for options no equation holds is ever installed or run, and no one waits
//!   for it.
//! - A lane is compiled once per tier per state: [`Slot::asked`] only grows.

pub(crate) mod cache;
mod compile;
mod dots;
mod kernel;
mod lower;
mod reroll;
mod slp;
#[cfg(test)]
mod tests;

pub(crate) use kernel::Kernel;
pub(crate) use lower::Shape;

pub(crate) use crate::archive::StoredKernel;
use crate::options::{Backend, JitStatus, LaneStatus, Lanes, OptLevel, Options, Warming};
use crate::prepared::PreparedLanes;
use ddx_ir::{Error, LaneKind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// The number of lane kinds, one slot each.
const LANES: usize = LaneKind::ALL.len();

/// A rung of the tier ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum Tier {
    /// Nothing asked yet.
    Nothing = 0,
    /// The quick kernel: `opt_level = none`, the fast register allocator.
    Quick = 1,
    /// The kernel at the options' `opt_level`.
    Top = 2,
}

/// What the code generator reads, resolved from [`Options`].
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) backend: Backend,
    /// Whether the lanes are the contracted ones (`Codegen::contract`).
    pub(crate) contract: bool,
    pub(crate) shape: Shape,
    pub(crate) top: OptLevel,
    pub(crate) warm: u64,
    pub(crate) hot: u64,
    pub(crate) retain: bool,
    pub(crate) cache_dir: Option<PathBuf>,
    /// Lanes of more nodes are split into segments of at most this many
    /// ([`compile::SEGMENT_NODES`]).
    pub(crate) segment: usize,
}

impl Config {
    /// The host's `f64` lanes in one vector register that this code generator uses.
    const HOST_WIDTH: u8 = 2;

    fn new(o: &Options) -> Result<Config, Error> {
        let shape = match o.codegen.lanes {
            Lanes::Derived | Lanes::Scalar if o.points <= 1 => Shape::Point,
            Lanes::Derived => Shape::Column {
                width: Self::HOST_WIDTH,
            },
            Lanes::Scalar => Shape::Column { width: 1 },
            Lanes::Exactly(w @ (1 | 2)) => Shape::Column { width: w },
            Lanes::Exactly(w) => {
                return Err(Error::JitTarget {
                    detail: format!("{w} lanes per iteration; this code generator makes 1 or 2"),
                })
            }
        };
        Ok(Config {
            backend: o.backend,
            contract: o.codegen.contract,
            shape,
            top: o.codegen.opt_level,
            warm: o.warm_points,
            hot: o.hot_points,
            retain: o.retain_object,
            cache_dir: o.cache_dir.clone(),
            segment: compile::segment_nodes(),
        })
    }

    /// The optimisation level of `tier`.
    pub(crate) fn level(&self, tier: Tier) -> OptLevel {
        match tier {
            Tier::Top => self.top,
            _ => OptLevel::Off,
        }
    }

    /// The tier a `Compile` backend climbs to: the quick one is the top when the options
    /// ask for no optimisation.
    pub(crate) fn highest(&self) -> Tier {
        match self.top {
            OptLevel::Off => Tier::Quick,
            OptLevel::Speed => Tier::Top,
        }
    }
}

/// The order of kernels: a kernel is replaced only by one of a higher rank. The
/// optimisation level first, then a refined kernel above one that is not.
fn rank(kernel: &Kernel) -> u8 {
    let level = match kernel.level() {
        OptLevel::Off => 0,
        OptLevel::Speed => 1,
    };
    2 * level + u8::from(kernel.is_refined())
}

/// One lane's compiled code and its compile bookkeeping.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    /// The kernel answering, or null.
    kernel: AtomicPtr<Kernel>,
    /// The highest [`Tier`] asked of the compile pool. Written only under `inner`'s
    /// lock, after the job is counted in [`Inner::pending`]; read without it only as a
    /// hint (whether to call [`State::ask`], which decides under the lock).
    asked: AtomicU8,
    /// Under `Adapt`, batch points seen.
    seen: AtomicU64,
    /// A refined kernel (`compile::refine`) is queued or being made.
    pub(crate) refining: AtomicBool,
    inner: Mutex<Inner>,
    done: Condvar,
}

#[derive(Debug, Default)]
struct Inner {
    /// Jobs submitted and not finished.
    pending: usize,
    /// Every kernel ever published, so that a pointer read by a call stays valid. Boxed:
    /// published pointers must not move when the vector grows.
    #[allow(clippy::vec_box)]
    kernels: Vec<Box<Kernel>>,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means a panic elsewhere; the data (a count and owned
        // kernels) is still consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The kernel answering, if any.
    #[inline]
    fn current(&self) -> Option<&Kernel> {
        let k = self.kernel.load(Ordering::Acquire);
        // SAFETY: a non-null pointer was published by `publish` from a box this slot owns
        // until it is dropped, and `&self` keeps the slot alive.
        unsafe { k.as_ref() }
    }

    /// Makes `kernel` the one answering unless a kernel of a rank as high answers
    /// already ([`rank`]: two jobs of one lane may run on two workers at once, and the
    /// quick one may finish last); the slot keeps it alive.
    fn publish(&self, kernel: Kernel) {
        let mut inner = self.lock();
        if self.current().is_some_and(|k| rank(k) >= rank(&kernel)) {
            return;
        }
        let mut boxed = Box::new(kernel);
        let ptr: *mut Kernel = &mut *boxed;
        inner.kernels.push(boxed);
        self.kernel.store(ptr, Ordering::Release);
    }

    /// Marks the refinement finished (under the lock, so a waiter that saw it running is
    /// waiting already) and wakes the waiters.
    pub(crate) fn end_refining(&self) {
        let inner = self.lock();
        self.refining.store(false, Ordering::Release);
        drop(inner);
        self.done.notify_all();
    }

    /// Marks one job finished and wakes the waiters.
    fn finish(&self) {
        let mut inner = self.lock();
        inner.pending = inner.pending.saturating_sub(1);
        drop(inner);
        self.done.notify_all();
    }
}

/// One lane's counters and last failure, for [`LaneStatus`].
#[derive(Debug, Default)]
pub(crate) struct LaneStats {
    pub(crate) compiled: AtomicUsize,
    pub(crate) loaded: AtomicUsize,
    error: Mutex<Option<Error>>,
}

/// Counters and the last failures, for [`JitStatus`]: per lane, and for the cache.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    lanes: [LaneStats; LANES],
    pub(crate) refused: AtomicUsize,
    pub(crate) written: AtomicUsize,
    /// The most recent failure of any lane.
    error: Mutex<Option<Error>>,
    cache_error: Mutex<Option<Error>>,
}

impl Stats {
    /// The counters of lane `kind`.
    pub(crate) fn lane(&self, kind: LaneKind) -> &LaneStats {
        &self.lanes[kind as usize]
    }

    /// Kernels compiled, over every lane.
    #[cfg(test)]
    pub(crate) fn compiled(&self) -> usize {
        self.lanes
            .iter()
            .map(|l| l.compiled.load(Ordering::Relaxed))
            .sum()
    }

    /// Records a failure to make a kernel of lane `kind` ([`LaneStatus::error`], and
    /// [`JitStatus::error`] as the most recent of all).
    pub(crate) fn fail(&self, kind: LaneKind, e: Error) {
        let lock = |m: &'_ Mutex<Option<Error>>| {
            *m.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.clone());
        };
        lock(&self.lane(kind).error);
        lock(&self.error);
    }

    /// Records a failure of the cache directory ([`JitStatus::cache_error`]).
    pub(crate) fn cache_fail(&self, e: Error) {
        *self.cache_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
    }
}

/// Everything compiled for one equation under one set of options.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) config: Config,
    /// The equations (clones) holding this state; the last one to let go abandons it.
    holders: AtomicUsize,
    abandoned: AtomicBool,
    slots: [Slot; LANES],
    pub(crate) stats: Stats,
    /// Tests stop a job here, after it started and before it compiles anything.
    #[cfg(test)]
    pub(crate) hold: tests::Hold,
}

impl State {
    pub(crate) fn slot(&self, kind: LaneKind) -> &Slot {
        &self.slots[kind as usize]
    }

    /// Places each saved kernel whose key matches its lane here (see [`Jit::with_saved`]).
    /// Runs before any job is asked, so the tier it sets is what [`State::ask`] builds on.
    /// Answers the lanes (with their node counts) whose adopted kernel is an optimised one
    /// that is not refined, of a lane over `compile::BACKTRACKING_NODES` nodes: saved
    /// before its refinement landed, it is refined again here.
    fn adopt(&self, lanes: &PreparedLanes, saved: &[StoredKernel]) -> Vec<(LaneKind, usize)> {
        let mut unrefined = Vec::new();
        let refuse = || {
            self.stats.refused.fetch_add(1, Ordering::Relaxed);
        };
        let compiler = match compile::compiler() {
            Ok(c) => c,
            Err(e) => {
                saved.iter().for_each(|_| refuse());
                for s in saved {
                    self.stats.fail(s.kind, e.clone());
                }
                return unrefined;
            }
        };
        let c = &self.config;
        for s in saved {
            let tier = if s.level == c.level(Tier::Top) {
                c.highest()
            } else if s.level == OptLevel::Off {
                Tier::Quick
            } else {
                refuse();
                continue;
            };
            let lane = &lanes.prepared(s.kind, c.contract).lane;
            // A refined kernel (`compile::refine`) is saved under its own key.
            let refined = if compile::key(c, compiler, lane, s.level, false).bytes() == s.key {
                false
            } else if compile::key(c, compiler, lane, s.level, true).bytes() == s.key {
                true
            } else {
                refuse();
                continue;
            };
            let made = Kernel::new(&s.code, lane, c.shape, s.level, c.retain, c.segment);
            match made.map(|k| if refined { k.refined() } else { k }) {
                Ok(k) => {
                    let nodes = lane.graph.len();
                    if !refined && s.level == OptLevel::Speed && nodes > compile::BACKTRACKING_NODES
                    {
                        unrefined.push((s.kind, nodes));
                    }
                    let slot = self.slot(s.kind);
                    slot.publish(k);
                    slot.asked.store(tier as u8, Ordering::Release);
                    self.stats
                        .lane(s.kind)
                        .loaded
                        .fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    refuse();
                    self.stats.fail(s.kind, e);
                }
            }
        }
        unrefined
    }

    pub(crate) fn abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Acquire)
    }

    /// Installs `kernel` for `kind` unless the state was abandoned meanwhile.
    pub(crate) fn install(&self, kind: LaneKind, kernel: Kernel) {
        if !self.abandoned() {
            self.slot(kind).publish(kernel);
        }
    }

    /// Asks the compile pool for `kind` up to tier `upto`; does nothing when that was
    /// already asked.
    ///
    /// Everything happens under the slot's lock: the job is counted in
    /// [`Inner::pending`] before [`Slot::asked`] shows it, and submitted before the lock is
    /// released. So whoever reads `asked` under the lock (as [`Jit::wait`] does, through
    /// this function) and then finds nothing pending knows that every job asked so far
    /// has finished. The jobs of one lane are queued in the order of their tiers (and
    /// [`Slot::publish`] never puts a quick kernel over an optimised one).
    fn ask(self: &Arc<Self>, lanes: &Arc<PreparedLanes>, kind: LaneKind, upto: Tier) {
        let slot = self.slot(kind);
        // A hint without the lock: `asked` only grows, and what it shows is counted.
        if slot.asked.load(Ordering::Acquire) >= upto as u8 {
            return;
        }
        // The lane's length is the job's priority. The lane may be built here (a first
        // call's, or a wait's), outside the slot's lock.
        let nodes = lanes.prepared(kind, self.config.contract).lane.graph.len();
        let mut inner = slot.lock();
        let before = slot.asked.load(Ordering::Acquire);
        if before >= upto as u8 {
            return;
        }
        let from = if before == Tier::Nothing as u8 {
            Tier::Quick
        } else {
            Tier::Top
        };
        inner.pending += 1;
        slot.asked.store(upto as u8, Ordering::Release);
        let job = compile::Job {
            state: Arc::clone(self),
            lanes: Arc::clone(lanes),
            kind,
            nodes,
            from,
            upto,
            refine: false,
        };
        if let Err(e) = compile::submit(job) {
            self.stats.fail(kind, e);
            inner.pending -= 1;
            drop(inner);
            slot.done.notify_all();
        }
    }
}

/// The code generator's part of an equation: nothing under `Interpret` and `Device`, a
/// [`State`] under `Compile` and `Adapt`.
#[derive(Debug, Default)]
pub(crate) struct Jit {
    state: Option<Arc<State>>,
    /// Why the options could not be honoured (they are kept, and calls interpret).
    refused: Option<Error>,
}

impl Clone for Jit {
    /// The same state, one more holder: a clone of an equation shares its kernels.
    fn clone(&self) -> Jit {
        if let Some(s) = &self.state {
            s.holders.fetch_add(1, Ordering::Relaxed);
        }
        Jit {
            state: self.state.clone(),
            refused: self.refused.clone(),
        }
    }
}

impl Drop for Jit {
    fn drop(&mut self) {
        if let Some(s) = &self.state {
            if s.holders.fetch_sub(1, Ordering::AcqRel) == 1 {
                s.abandoned.store(true, Ordering::Release);
            }
        }
    }
}

impl Jit {
    /// The JIT for `options`; under `Compile`, starts compiling every lane in `prepared`
    /// (the lanes already used), the others as they are first needed.
    pub(crate) fn new(options: &Options, lanes: &Arc<PreparedLanes>, prepared: &[LaneKind]) -> Jit {
        Jit::with_saved(options, lanes, prepared, &[])
    }

    /// [`Jit::new`], with the kernels of a saved equation placed first: each one whose key
    /// is the one this build would give its lane on this host, under these options,
    /// answers at once (counted in [`JitStatus::loaded`]); any other is never run
    /// (counted in [`JitStatus::refused`]), and its lane compiles as it would have.
    pub(crate) fn with_saved(
        options: &Options,
        lanes: &Arc<PreparedLanes>,
        prepared: &[LaneKind],
        saved: &[StoredKernel],
    ) -> Jit {
        if !matches!(options.backend, Backend::Compile | Backend::Adapt) {
            // `Device` answers from the interpreter until a device backend exists.
            return Jit::default();
        }
        let mut config = match Config::new(options) {
            Ok(c) => c,
            Err(e) => {
                return Jit {
                    state: None,
                    refused: Some(e),
                }
            }
        };
        let stats = Stats::default();
        if config
            .cache_dir
            .as_ref()
            .is_some_and(|d| d.as_os_str().is_empty())
        {
            // An empty path would put entries in the current directory: refused.
            config.cache_dir = None;
            stats.cache_fail(Error::JitCache {
                path: PathBuf::new(),
                detail: "an empty path names no directory; kernels are kept in memory only".into(),
            });
        }
        let state = Arc::new(State {
            config,
            holders: AtomicUsize::new(1),
            abandoned: AtomicBool::new(false),
            slots: std::array::from_fn(|_| Slot::default()),
            stats,
            #[cfg(test)]
            hold: tests::Hold::default(),
        });
        if !saved.is_empty() {
            for (kind, nodes) in state.adopt(lanes, saved) {
                compile::ask_refine(&state, lanes, kind, nodes);
            }
        }
        if state.config.backend == Backend::Compile {
            for &kind in prepared {
                state.ask(lanes, kind, state.config.highest());
            }
        }
        Jit {
            state: Some(state),
            refused: None,
        }
    }

    /// The machine code of every kernel answering now, with the key it was made for, for
    /// saving: one per lane (the tier answering), where `retain_object` kept the code.
    pub(crate) fn saved(&self, lanes: &PreparedLanes) -> Vec<StoredKernel> {
        let Some(state) = &self.state else {
            return Vec::new();
        };
        let Ok(compiler) = compile::compiler() else {
            return Vec::new();
        };
        let c = &state.config;
        let mut out = Vec::new();
        for kind in LaneKind::ALL {
            let Some(k) = state.slot(kind).current() else {
                continue;
            };
            let Some(code) = k.object() else {
                continue;
            };
            let lane = &lanes.prepared(kind, c.contract).lane;
            let key = compile::key(c, compiler, lane, k.level(), k.is_refined());
            out.push(StoredKernel {
                kind,
                level: k.level(),
                key: key.bytes(),
                fingerprint: compiler.fingerprint().to_string(),
                code: code.to_vec(),
            });
        }
        out
    }

    /// The kernel answering a per-point call of `kind`; asks for one under `Compile` when
    /// none has been asked yet. One atomic load when a kernel is in place.
    #[inline]
    pub(crate) fn point(&self, lanes: &Arc<PreparedLanes>, kind: LaneKind) -> Option<&Kernel> {
        let state = self.state.as_ref()?;
        let slot = state.slot(kind);
        if let Some(k) = slot.current() {
            return Some(k);
        }
        if state.config.backend == Backend::Compile
            && slot.asked.load(Ordering::Relaxed) == Tier::Nothing as u8
        {
            state.ask(lanes, kind, state.config.highest());
        }
        None
    }

    /// The kernel answering a batch call of `kind` over `points` points; counts the points
    /// under `Adapt` and asks for the tiers they buy.
    #[inline]
    pub(crate) fn batch(
        &self,
        lanes: &Arc<PreparedLanes>,
        kind: LaneKind,
        points: usize,
    ) -> Option<&Kernel> {
        let state = self.state.as_ref()?;
        if state.config.backend == Backend::Adapt {
            let slot = state.slot(kind);
            let points = points as u64;
            let seen = slot.seen.fetch_add(points, Ordering::Relaxed) + points;
            let c = &state.config;
            if seen >= c.warm {
                let upto = if seen >= c.warm.saturating_add(c.hot) {
                    c.highest()
                } else {
                    Tier::Quick
                };
                if slot.asked.load(Ordering::Relaxed) < upto as u8 {
                    state.ask(lanes, kind, upto);
                }
            }
            return slot.current();
        }
        self.point(lanes, kind)
    }

    /// Whether a kernel answers `kind` now.
    pub(crate) fn uses_kernel(&self, kind: LaneKind) -> bool {
        self.kernel(kind).is_some()
    }

    fn kernel(&self, kind: LaneKind) -> Option<&Kernel> {
        self.state.as_ref()?.slot(kind).current()
    }

    /// The optimisation level of the kernel answering `kind`.
    pub(crate) fn level(&self, kind: LaneKind) -> Option<OptLevel> {
        self.kernel(kind).map(Kernel::level)
    }

    /// Blocks until no compile of `kind` is queued or running (asking for one first under
    /// `Compile`), then answers whether a kernel answers it.
    ///
    /// Whatever was asked before this call — by it or by any thread — is counted as
    /// pending by the time `asked` shows it ([`State::ask`]), so when this returns every
    /// such job has finished and published whatever it made: under `Compile`, `false`
    /// means no kernel will come for these options (the reason is in the status).
    pub(crate) fn wait(&self, lanes: &Arc<PreparedLanes>, kind: LaneKind) -> bool {
        let Some(state) = &self.state else {
            return false;
        };
        if state.config.backend == Backend::Compile {
            state.ask(lanes, kind, state.config.highest());
        }
        let slot = state.slot(kind);
        let mut inner = slot.lock();
        while inner.pending > 0 {
            inner = slot.done.wait(inner).unwrap_or_else(|e| e.into_inner());
        }
        drop(inner);
        slot.current().is_some()
    }

    /// Blocks while a refined kernel of `kind` is queued or being made
    /// (`compile::refine`): the refine job clears [`Slot::refining`] under the slot's lock
    /// and then wakes the waiters, so none misses it.
    pub(crate) fn wait_refined(&self, kind: LaneKind) {
        let Some(state) = &self.state else {
            return;
        };
        let slot = state.slot(kind);
        let mut inner = slot.lock();
        while slot.refining.load(Ordering::Acquire) {
            inner = slot.done.wait(inner).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Under `Adapt`, the progress towards `kind`'s next tier.
    pub(crate) fn warming(&self, kind: LaneKind) -> Option<Warming> {
        let state = self.state.as_ref()?;
        let c = &state.config;
        if c.backend != Backend::Adapt {
            return None;
        }
        let slot = state.slot(kind);
        let seen = slot.seen.load(Ordering::Relaxed);
        let asked = slot.asked.load(Ordering::Relaxed);
        if asked == Tier::Nothing as u8 {
            Some(Warming {
                points: seen.min(c.warm),
                threshold: c.warm,
            })
        } else if asked < c.highest() as u8 {
            Some(Warming {
                points: seen.saturating_sub(c.warm).min(c.hot),
                threshold: c.hot,
            })
        } else {
            None
        }
    }

    /// The status report.
    pub(crate) fn status(&self) -> JitStatus {
        let Some(s) = &self.state else {
            return JitStatus {
                error: self.refused.clone(),
                ..JitStatus::default()
            };
        };
        let n = |a: &AtomicUsize| a.load(Ordering::Relaxed);
        let last = |m: &Mutex<Option<Error>>| m.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let lanes: Vec<LaneStatus> = LaneKind::ALL
            .into_iter()
            .filter(|&k| {
                s.slot(k).asked.load(Ordering::Acquire) != Tier::Nothing as u8
                    || last(&s.stats.lane(k).error).is_some()
            })
            .map(|kind| {
                let l = s.stats.lane(kind);
                LaneStatus {
                    kind,
                    level: s.slot(kind).current().map(Kernel::level),
                    compiled: n(&l.compiled),
                    loaded: n(&l.loaded),
                    error: last(&l.error),
                    refined: s.slot(kind).current().is_some_and(Kernel::is_refined),
                    refining: s.slot(kind).refining.load(Ordering::Acquire),
                    batch_engine: s
                        .slot(kind)
                        .current()
                        .and_then(|k| k.engine_choice().chosen()),
                }
            })
            .collect();
        JitStatus {
            compiled: lanes.iter().map(|l| l.compiled).sum(),
            loaded: lanes.iter().map(|l| l.loaded).sum(),
            refused: n(&s.stats.refused),
            written: n(&s.stats.written),
            error: last(&s.stats.error),
            cache_error: last(&s.stats.cache_error),
            lanes,
        }
    }
}
