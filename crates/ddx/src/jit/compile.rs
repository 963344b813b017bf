//! The compiler: Cranelift set up for the host, the background compile pool, and the
//! tier ladder each job climbs.
//!
//! **The compile pool** serves every equation of the process: as many workers as the
//! process may use cores, at least 2 and at most 8 ([`pool_size`]). Waiting jobs are
//! taken fewest lane nodes first, then in submission order ([`Queue`]), so a small lane
//! overtakes every large one queued; and at most all workers but one compile lanes of
//! more than [`SMALL_NODES`] nodes at once, so a small lane never waits for a large
//! lane's compile to end. A job compiles (or loads from the cache) each tier it was asked
//! for and publishes each kernel as it lands; it checks that its state was not abandoned
//! before every tier and publishing checks again, so a change of options never installs
//! stale code. Two jobs of one lane (the quick tier, then the optimised one bought later
//! by batch traffic) may run at once on two workers: a slot never replaces a kernel by
//! one of a lower rank (its optimisation level, then whether it is refined). A panic
//! inside the code generator is caught and reported as [`Error::JitModule`]; the lane
//! keeps interpreting.
//!
//! **Refinement.** The optimised kernel of a long lane gives its large functions the
//! single-pass register allocator, so that it comes quickly; when it did, the job that
//! published it asks for a refined kernel ([`refine`]): the same code again with the
//! backtracking allocator in every function, a job of a worker of its own that no one
//! waits for, published over the first when it lands (it ranks higher). A refinement
//! that fails leaves the first kernel answering.

use super::lower::{self, Shape};
use super::{cache, Kernel, State, Tier};
use crate::options::{OptLevel, MAX_KERNEL_NODES};
use crate::prepared::PreparedLanes;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::isa::{OwnedTargetIsa, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{CodegenError, Context};
use ddx_ir::{Error, Lane, LaneKind};
use std::collections::BinaryHeap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

/// Lanes of more nodes than this get the single-pass register allocator at the optimised
/// tier too (the quick tier always has it): regalloc2's backtracking allocator takes time
/// superlinear in a lane's length when many values live long (a reverse sweep over a long
/// chain: 12k nodes 0.20 s, 24k 0.95 s, 36k 1.9 s, 120k 25 s), the single-pass one about
/// 3.5 µs a node whatever the lane (120k nodes 0.5 s). See BENCHMARKS.md, "Compiling".
pub(crate) const BACKTRACKING_NODES: usize = 1 << 14;

/// A function of a lane over [`BACKTRACKING_NODES`] gets the single-pass allocator only
/// when it holds more than this many Cranelift instructions: the straight-line code of
/// such a lane (or of one of its segments) holds 0.62–0.8 instructions a node, so this is
/// where [`BACKTRACKING_NODES`] puts the limit for straight-line code; a re-rolled
/// function, whose loops hold a long lane in a few hundred instructions, keeps the
/// backtracking allocator (the long_lanes chain of 3000 links: 43 → 30.5 µs a gradient).
pub(crate) const BACKTRACKING_INSTS: usize = 10_000;

/// The largest stack frame a kernel function may have, in bytes. A kernel runs on its
/// caller's stack (a spawned thread's is 2 MiB by default, rayon's workers' too), and a
/// frame larger than what is left there aborts the process; compiled code that needs more
/// is refused and the lane interpreted. Frames grow with the values a function keeps live
/// across its math calls (a reverse sweep keeps many), spilled: measured at the quick
/// tier, 5–9 bytes a node for point kernels of the bundled models, 27 for a column kernel
/// of a long reverse chain (its slots are 16 bytes). Lanes over [`SEGMENT_NODES`] are
/// split, so a frame is bounded by a segment's length (32 768 nodes at 27 bytes:
/// 0.84 MiB). See BENCHMARKS.md, "Long lanes".
pub(crate) const MAX_FRAME_BYTES: u32 = 1 << 20;

/// Lanes of more nodes than this are split into segments of at most this many nodes (and,
/// but the last, at least half as many), cut where the fewest values cross, each compiled
/// as its own function ([`lower::Plan`]): a segment's stack frame and compile memory stay
/// bounded by its length (at ≈ 9 bytes a node at most for the bundled models' point
/// kernels, 0.3 MiB, well inside [`MAX_FRAME_BYTES`]), however long the lane. A lane
/// that re-rolls with at most this many nodes of straight-line code is one function
/// instead (its loops' values in heap scratch). Either way a long lane's kernel is a
/// point kernel: a batch runs it point by point.
pub(crate) const SEGMENT_NODES: usize = 1 << 15;

#[cfg(test)]
thread_local! {
    /// Tests set this to split short lanes, before setting an equation's options on the
    /// same thread.
    pub(crate) static SEGMENT_OVERRIDE: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}

/// The segment length for options set now: [`SEGMENT_NODES`] (tests may override it).
pub(crate) fn segment_nodes() -> usize {
    #[cfg(test)]
    if let Some(n) = SEGMENT_OVERRIDE.with(std::cell::Cell::get) {
        return n;
    }
    SEGMENT_NODES
}

/// `Ok` when a kernel of the `name` lane with a stack frame of `frame` bytes may run;
/// an unknown frame is refused.
fn frame_fits(name: &str, frame: Option<u32>) -> Result<(), Error> {
    match frame {
        Some(f) if f <= MAX_FRAME_BYTES => Ok(()),
        _ => Err(target(format!(
            "the {name} kernel would need a stack frame of {} bytes, more than the \
             {MAX_FRAME_BYTES} a kernel may have",
            frame.map_or_else(|| "unknown".to_string(), |f| f.to_string())
        ))),
    }
}

/// Cranelift, configured for this host: the quick tier, and the optimised tier with each
/// register allocator.
pub(crate) struct Compiler {
    quick: OwnedTargetIsa,
    speed: OwnedTargetIsa,
    /// The optimised tier with the single-pass allocator, for lanes over
    /// [`BACKTRACKING_NODES`].
    speed_linear: OwnedTargetIsa,
    fingerprint: String,
}

impl std::fmt::Debug for Compiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiler")
            .field("host", &self.fingerprint)
            .finish()
    }
}

/// Cranelift's `enable_verifier` setting: `"true"` in debug builds, `"false"` in release.
const VERIFIER: &str = if cfg!(debug_assertions) {
    "true"
} else {
    "false"
};

/// The process's compiler, made on first use.
pub(crate) fn compiler() -> Result<&'static Compiler, Error> {
    static COMPILER: OnceLock<Result<Compiler, Error>> = OnceLock::new();
    COMPILER
        .get_or_init(Compiler::new)
        .as_ref()
        .map_err(Clone::clone)
}

fn target(detail: impl std::fmt::Display) -> Error {
    Error::JitTarget {
        detail: detail.to_string(),
    }
}

impl Compiler {
    fn new() -> Result<Compiler, Error> {
        let isa = |opt: &str, regalloc: &str| -> Result<OwnedTargetIsa, Error> {
            let mut flags = settings::builder();
            for (name, value) in [
                ("opt_level", opt),
                ("regalloc_algorithm", regalloc),
                // Large frames (many spilled values) touch each guard page in order.
                ("enable_probestack", "true"),
                ("probestack_strategy", "inline"),
                // Cranelift's IR verifier checks our lowering's output between passes:
                // on in debug builds (every test of the code generator runs it), off in
                // release, where it took a quarter of each compile (BENCHMARKS.md,
                // "Compile time without the verifier"). It changes no code.
                ("enable_verifier", VERIFIER),
            ] {
                flags.set(name, value).map_err(target)?;
            }
            cranelift_native::builder()
                .map_err(target)?
                .finish(settings::Flags::new(flags))
                .map_err(target)
        };
        let quick = isa("none", "single_pass")?;
        let speed = isa("speed", "backtracking")?;
        let speed_linear = isa("speed", "single_pass")?;
        let mut fingerprint = format!("{} {} cranelift-0.135", speed.triple(), speed.name());
        for f in speed.isa_flags() {
            fingerprint.push_str(&format!(" {}={}", f.name, f.value_string()));
        }
        // The shared settings of every configuration (optimisation level, allocator, …),
        // less the verifier's, which changes no code: a kernel made by a debug build loads
        // in a release one.
        for isa in [&quick, &speed, &speed_linear] {
            let flags = isa.flags().to_string();
            let code: Vec<&str> = flags
                .lines()
                .filter(|l| !l.starts_with("enable_verifier"))
                .collect();
            fingerprint.push_str(&format!(" [{}]", code.join("\n")));
        }
        Ok(Compiler {
            quick,
            speed,
            speed_linear,
            fingerprint,
        })
    }

    /// The host's identity for the cache key: target triple, code generator, every CPU
    /// feature flag it compiles for, and the settings of each configuration.
    pub(crate) fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Compiles `lane` as a kernel of `shape` at `level`, every function of the optimised
    /// tier with the backtracking allocator when `refined` (see [`refine`]); answers its
    /// machine code, and whether some function is large enough to be given the
    /// single-pass allocator at the optimised tier when not refined (so that a refined
    /// kernel differs). Answers `None` without finishing when `stop()` answers true before
    /// a function is emitted, and when `refined` and the lane is one function that is not
    /// large (the refined kernel would be the same code). A
    /// lane of more than `segment` nodes, or a re-rolling one of more than
    /// [`lower::ROLLED_BATCH_NODES`], gets a point kernel
    /// whatever `shape` ([`lower::kernel_shape`]); a long one is split ([`lower::Plan`])
    /// unless it re-rolls: a split
    /// kernel's code is each segment's function in order, each starting at a multiple of
    /// 16 bytes, followed by the byte offset of each function (`u32`, little-endian) and
    /// their count (`u32`). Otherwise a [`Shape::Point`] kernel's code is its function,
    /// then its constant table ([`lower::function`]) from the next multiple of 8 bytes
    /// (`f64`s, little-endian), then the table's byte offset, its length in values and the
    /// length in values of the heap scratch its loops use (`u32` each); a column kernel's
    /// is its function alone.
    ///
    /// # Errors
    /// [`Error::JitVerify`] when a function fails Cranelift's verifier (debug builds),
    /// [`Error::JitModule`] when code generation fails, [`Error::JitObject`] when the code
    /// would need relocating, [`Error::JitTarget`] when a stack frame would exceed
    /// [`MAX_FRAME_BYTES`] or the code 4 GiB.
    pub(crate) fn compile(
        &self,
        lane: &Lane,
        shape: Shape,
        level: OptLevel,
        segment: usize,
        refined: bool,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Compiled>, Error> {
        let mut coarse = false;
        // Lowering is the same for both optimised configurations (one host, one
        // pointer type and calling convention); each function is emitted by the one its
        // size asks for (`Self::emit`).
        let isa: &dyn TargetIsa = match level {
            OptLevel::Off => &*self.quick,
            OptLevel::Speed => &*self.speed,
        };
        let Some(mut plan) = lower::Plan::new(lane, segment) else {
            let shape = lower::kernel_shape(lane, shape, segment);
            let lower::Lowered {
                func,
                table,
                scratch,
                straight,
            } = lower::function(lane, shape, level, isa);
            if stop() || (refined && !large(straight, &func)) {
                return Ok(None);
            }
            let mut code = self.emit(lane, straight, func, level, refined, &mut coarse)?;
            if shape == Shape::Point {
                code.resize(code.len().next_multiple_of(8), 0xCC);
                let at = u32::try_from(code.len()).map_err(|_| target("code over 4 GiB"))?;
                let len = u32::try_from(table.len()).map_err(|_| target("table over 4 GiB"))?;
                let scratch =
                    u32::try_from(scratch).map_err(|_| target("scratch over 2³² values"))?;
                for v in &table {
                    code.extend_from_slice(&v.to_le_bytes());
                }
                for word in [at, len, scratch] {
                    code.extend_from_slice(&word.to_le_bytes());
                }
            }
            return Ok(Some(Compiled { code, coarse }));
        };
        let mut code = Vec::new();
        let packs = lower::segment_packs(lane, &plan, isa);
        plan.pair_slots(&packs);
        let mut starts = Vec::with_capacity(plan.segments());
        for s in 0..plan.segments() {
            // Padding that traps (`int3` on x86-64) should anything jump into it.
            code.resize(code.len().next_multiple_of(16), 0xCC);
            starts.push(u32::try_from(code.len()).map_err(|_| target("code over 4 GiB"))?);
            let f = lower::segment_function(lane, &plan, &packs, s, isa);
            if stop() {
                return Ok(None);
            }
            let nodes = lane.graph.len();
            code.extend_from_slice(&self.emit(lane, nodes, f, level, refined, &mut coarse)?);
        }
        for at in &starts {
            code.extend_from_slice(&at.to_le_bytes());
        }
        let count = u32::try_from(starts.len()).map_err(|_| target("too many segments"))?;
        code.extend_from_slice(&count.to_le_bytes());
        Ok(Some(Compiled { code, coarse }))
    }

    /// Compiles one function of `lane`'s kernel at `level`; answers its machine code,
    /// checked to need no relocation and to fit its frame. Unless `refined`, the optimised
    /// tier uses the single-pass allocator for a function that is [`large`]; `coarse` is
    /// set when the function is large at that tier, refined or not.
    fn emit(
        &self,
        lane: &Lane,
        straight: usize,
        func: cranelift_codegen::ir::Function,
        level: OptLevel,
        refined: bool,
        coarse: &mut bool,
    ) -> Result<Vec<u8>, Error> {
        let large = large(straight, &func);
        *coarse |= large && level == OptLevel::Speed;
        let isa: &dyn TargetIsa = match level {
            OptLevel::Off => &*self.quick,
            OptLevel::Speed if large && !refined => &*self.speed_linear,
            OptLevel::Speed => &*self.speed,
        };
        let name = lane.kind.name();
        let mut ctx = Context::for_function(func);
        let code = ctx
            .compile(isa, &mut ControlPlane::default())
            .map_err(|e| match e.inner {
                CodegenError::Verifier(v) => Error::JitVerify {
                    lane: name,
                    detail: v.to_string(),
                },
                other => Error::JitModule {
                    lane: name,
                    detail: other.to_string(),
                },
            })?;
        if let Some(r) = code.buffer.relocs().first() {
            return Err(Error::JitObject {
                detail: format!("the {name} kernel needs relocation ({:?})", r.kind),
            });
        }
        // Cranelift records the frame whenever it emits code.
        frame_fits(
            name,
            code.buffer.frame_layout().map(|l| l.frame_to_fp_offset),
        )?;
        Ok(code.code_buffer().to_vec())
    }
}

/// A kernel's machine code, as [`Compiler::compile`] makes it.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) code: Vec<u8>,
    /// Whether some function is [`large`] at the optimised tier (a refined kernel
    /// differs).
    pub(crate) coarse: bool,
}

/// Whether `func`, a function of a lane's kernel that computes `straight` of the lane's
/// nodes in straight-line code (the lane's length, but for a kernel whose dot loops hold
/// the rest: [`lower::Lowered::straight`]), is large: more than [`BACKTRACKING_INSTS`]
/// instructions and `straight` over [`BACKTRACKING_NODES`], which the optimised tier
/// compiles with the single-pass allocator unless refined. (A dot kernel's loops keep few
/// values live: the quadratic form's gradient at `n = 256`, over 10 000 instructions with
/// a short straight-line part, compiles in the same 0.3 s with either
/// allocator, and runs 1.36× faster with the backtracking one: BENCHMARKS.md, "Dot
/// loops".)
fn large(straight: usize, func: &cranelift_codegen::ir::Function) -> bool {
    straight > BACKTRACKING_NODES && func.dfg.num_insts() > BACKTRACKING_INSTS
}

/// A request to the compile pool: climb lane `kind` from tier `from` to `upto`.
pub(crate) struct Job {
    pub(crate) state: Arc<State>,
    pub(crate) lanes: Arc<PreparedLanes>,
    pub(crate) kind: LaneKind,
    /// The lane's node count: the job's priority (fewer first) and its class (a lane over
    /// [`SMALL_NODES`] is large).
    pub(crate) nodes: usize,
    pub(crate) from: Tier,
    pub(crate) upto: Tier,
    /// A refinement ([`refine`]): not counted as pending, so no one waits for it.
    pub(crate) refine: bool,
}

/// Lanes of at most this many nodes are small: one worker of the pool is kept for them,
/// so a small lane's kernel never waits for a large lane's compile (which takes from
/// about 0.05 s at this length to seconds; a small lane compiles in milliseconds).
pub(crate) const SMALL_NODES: usize = BACKTRACKING_NODES;

/// The pool's worker count: the cores the process may use, at least 2 (so that one worker
/// is always free for small lanes) and at most 8.
fn pool_size() -> usize {
    std::thread::available_parallelism()
        .map_or(2, std::num::NonZeroUsize::get)
        .clamp(2, 8)
}

/// The compile queue: jobs waiting for a worker, fewest nodes first, then in submission
/// order (so the jobs of one lane start in the order they were asked).
///
/// **Invariant**: at most `workers − 1` jobs of large lanes run at once, so one worker is
/// always free for small ones; a large job waits in the queue while that many run.
#[derive(Debug)]
pub(crate) struct Queue<T> {
    waiting: BinaryHeap<Queued<T>>,
    submitted: u64,
    large_running: usize,
    workers: usize,
}

#[derive(Debug)]
struct Queued<T> {
    nodes: usize,
    order: u64,
    job: T,
}

impl<T> PartialEq for Queued<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.nodes, self.order) == (other.nodes, other.order)
    }
}
impl<T> Eq for Queued<T> {}
impl<T> PartialOrd for Queued<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Queued<T> {
    /// The heap's greatest is the job to run first: fewest nodes, then first submitted.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.nodes, other.order).cmp(&(self.nodes, self.order))
    }
}

impl<T> Queue<T> {
    pub(crate) fn new(workers: usize) -> Self {
        Queue {
            waiting: BinaryHeap::new(),
            submitted: 0,
            large_running: 0,
            workers,
        }
    }

    pub(crate) fn push(&mut self, nodes: usize, job: T) {
        self.waiting.push(Queued {
            nodes,
            order: self.submitted,
            job,
        });
        self.submitted += 1;
    }

    /// The job a free worker takes now, with whether it is large (the worker hands that
    /// back to [`Queue::done`]); `None` when nothing waits or only large jobs wait and
    /// `workers − 1` of them run already.
    pub(crate) fn take(&mut self) -> Option<(T, bool)> {
        let first = self.waiting.peek()?;
        let large = first.nodes > SMALL_NODES;
        // The fewest nodes come first, so a large job first means no small one waits.
        if large && self.large_running + 1 >= self.workers.max(2) {
            return None;
        }
        let q = self.waiting.pop()?;
        if large {
            self.large_running += 1;
        }
        Some((q.job, large))
    }

    /// Marks a job taken by [`Queue::take`] finished.
    pub(crate) fn done(&mut self, large: bool) {
        if large {
            self.large_running -= 1;
        }
    }
}

/// The process's compile pool: its queue, and the workers' wake-up.
struct Pool {
    queue: Mutex<Queue<Job>>,
    ready: Condvar,
}

impl Pool {
    fn lock(&self) -> MutexGuard<'_, Queue<Job>> {
        // A poisoned lock means a panic outside a job (jobs catch theirs); the queue's
        // counts are updated only by non-panicking code, so it is consistent.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A worker: takes the first job it may, runs it, forever.
    fn work(&self) {
        let mut queue = self.lock();
        loop {
            match queue.take() {
                Some((job, large)) => {
                    drop(queue);
                    run(job);
                    queue = self.lock();
                    queue.done(large);
                    // A large job's end may let a waiting large one start.
                    self.ready.notify_all();
                }
                None => queue = self.ready.wait(queue).unwrap_or_else(|e| e.into_inner()),
            }
        }
    }
}

/// Queues `job` for the compile pool, or a refinement ([`refine`]) for the refine worker,
/// starting their threads on first use. The refine worker is one thread of its own, so a
/// refinement (seconds on a long lane) never holds a worker of the pool: the first kernel
/// of another lane does not wait for it.
///
/// # Errors
/// [`Error::JitTarget`] when no worker thread can be started.
pub(crate) fn submit(job: Job) -> Result<(), Error> {
    static POOL: OnceLock<Result<&'static Pool, Error>> = OnceLock::new();
    static REFINE: OnceLock<Result<&'static Pool, Error>> = OnceLock::new();
    let pool = if job.refine {
        REFINE.get_or_init(|| start(1, "ddx-jit-refine"))
    } else {
        POOL.get_or_init(|| start(pool_size(), "ddx-jit"))
    };
    let pool = *pool.as_ref().map_err(Clone::clone)?;
    pool.lock().push(job.nodes, job);
    pool.ready.notify_all();
    Ok(())
}

/// Starts a pool of `size` workers named `name`-k. A pool of one runs one job at a time,
/// large or small ([`Queue::take`] keeps a worker for small lanes only when it has two).
fn start(size: usize, name: &str) -> Result<&'static Pool, Error> {
    let pool: &'static Pool = Box::leak(Box::new(Pool {
        queue: Mutex::new(Queue::new(size)),
        ready: Condvar::new(),
    }));
    let mut started = 0;
    let mut failure = None;
    for k in 0..size {
        match std::thread::Builder::new()
            .name(format!("{name}-{k}"))
            .spawn(move || pool.work())
        {
            Ok(_) => started += 1,
            Err(e) => failure = Some(e),
        }
    }
    if started == 0 {
        let e = failure.map_or_else(String::new, |e| e.to_string());
        return Err(target(format!("cannot start a compile thread: {e}")));
    }
    pool.lock().workers = started;
    Ok(pool)
}

/// Tests hold this lock to keep the pool from starting a job, so that "a compile is in
/// flight" is a state they can set up without timing anything.
#[cfg(test)]
pub(crate) static PAUSE: Mutex<()> = Mutex::new(());

/// Runs one job on a worker of the pool.
fn run(job: Job) {
    #[cfg(test)]
    drop(PAUSE.lock().unwrap_or_else(|e| e.into_inner()));
    let Job {
        state,
        lanes,
        kind,
        nodes,
        from,
        upto,
        refine: refining,
    } = job;
    if refining {
        if !state.abandoned() {
            // A refinement that fails (or panics) leaves the top kernel answering.
            let _ = catch_unwind(AssertUnwindSafe(|| {
                let lane = &lanes.prepared(kind, state.config.contract).lane;
                refine(&state, lane)
            }));
        }
        state.slot(kind).end_refining();
        return;
    }
    if !state.abandoned() {
        #[cfg(test)]
        state.hold.enter();
        let climbed = catch_unwind(AssertUnwindSafe(|| {
            let lane = &lanes.prepared(kind, state.config.contract).lane;
            climb(&state, lane, from, upto)
        }));
        match climbed {
            Ok(Ok(false)) => {}
            Ok(Ok(true)) => ask_refine(&state, &lanes, kind, nodes),
            Ok(Err(e)) => state.stats.fail(kind, e),
            Err(_) => state.stats.fail(
                kind,
                Error::JitModule {
                    lane: kind.name(),
                    detail: "the code generator panicked".into(),
                },
            ),
        }
    }
    state.slot(kind).finish();
}

/// Compiles (or loads) and publishes each tier from `from` to `upto`; answers whether a
/// refined kernel should follow ([`refine`]): when the optimised kernel gave some function
/// the single-pass allocator (or came from the cache for a lane over
/// [`BACKTRACKING_NODES`] with no refined kernel there).
///
/// A lane over [`MAX_KERNEL_NODES`] is refused before anything is done. A lane over
/// [`BACKTRACKING_NODES`] asked for both tiers at once skips the quick one: its optimised
/// kernel is made with the same (single-pass) allocator at a little more cost, and the
/// quick one would only delay it. A refined kernel in the cache is taken for the
/// optimised tier directly.
fn climb(state: &State, lane: &Lane, from: Tier, upto: Tier) -> Result<bool, Error> {
    let nodes = lane.graph.len();
    if nodes > MAX_KERNEL_NODES {
        return Err(target(format!(
            "the {} lane has {nodes} nodes, more than the {MAX_KERNEL_NODES} a kernel is \
             compiled for",
            lane.kind.name()
        )));
    }
    let compiler = compiler()?;
    let c = &state.config;
    let upto = upto.min(c.highest());
    let from = if from == Tier::Quick && upto == Tier::Top && nodes > BACKTRACKING_NODES {
        Tier::Top
    } else {
        from
    };
    // Whether the optimised tier of this lane may be refined.
    let refinable = |level: OptLevel| level == OptLevel::Speed && nodes > BACKTRACKING_NODES;
    let top = c.level(Tier::Top);
    // With a cache, the top kernel may be on disk already: then the quick one is moot.
    let peeked = from == Tier::Quick && upto == Tier::Top && c.cache_dir.is_some();
    if peeked {
        if refinable(top) {
            if let Some(k) = cached(state, compiler, lane, top, true) {
                state.install(lane.kind, k);
                return Ok(false);
            }
        }
        if let Some(k) = cached(state, compiler, lane, top, false) {
            state.install(lane.kind, k);
            return Ok(refinable(top));
        }
    }
    let mut refine = false;
    for tier in [Tier::Quick, Tier::Top] {
        if tier < from || tier > upto {
            continue;
        }
        if state.abandoned() {
            return Ok(false);
        }
        let level = c.level(tier);
        let best = tier == Tier::Top && refinable(level);
        if best && !peeked {
            if let Some(k) = cached(state, compiler, lane, level, true) {
                state.install(lane.kind, k);
                return Ok(false);
            }
        }
        let hit = if peeked && tier == Tier::Top {
            None // looked at above
        } else {
            cached(state, compiler, lane, level, false)
        };
        let kernel = match hit {
            Some(k) => {
                refine = best;
                k
            }
            None => {
                let stop = || state.abandoned();
                let made = compiler.compile(lane, c.shape, level, c.segment, false, &stop)?;
                let Some(made) = made else {
                    return Ok(false); // abandoned
                };
                refine = best && made.coarse;
                write(state, compiler, lane, level, false, &made.code);
                Kernel::new(&made.code, lane, c.shape, level, c.retain, c.segment)?
            }
        };
        state.install(lane.kind, kernel);
    }
    Ok(refine)
}

/// Queues the refinement of lane `kind` ([`refine`]) of `nodes` nodes for the refine
/// worker, marking it under way ([`Slot::refining`](super::Slot)) first; with no worker,
/// marks it ended (the top kernel answers).
pub(crate) fn ask_refine(
    state: &Arc<State>,
    lanes: &Arc<crate::prepared::PreparedLanes>,
    kind: LaneKind,
    nodes: usize,
) {
    let job = Job {
        state: Arc::clone(state),
        lanes: Arc::clone(lanes),
        kind,
        nodes,
        from: Tier::Top,
        upto: Tier::Top,
        refine: true,
    };
    state.slot(kind).refining.store(true, Ordering::Release);
    if submit(job).is_err() {
        state.slot(kind).end_refining();
    }
}

/// Counts a compile of `lane` and writes its `code` (at `level`, `refined` or not) to
/// the cache directory, if there is one and the lane calls no user function.
fn write(
    state: &State,
    compiler: &Compiler,
    lane: &Lane,
    level: OptLevel,
    refined: bool,
    code: &[u8],
) {
    let c = &state.config;
    state
        .stats
        .lane(lane.kind)
        .compiled
        .fetch_add(1, Ordering::Relaxed);
    let shareable = ddx_ir::user::first_call(&lane.graph).is_none();
    if let Some(dir) = c.cache_dir.as_ref().filter(|_| shareable) {
        match cache::write(dir, &key(c, compiler, lane, level, refined), code) {
            Ok(()) => {
                state.stats.written.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => state.stats.cache_fail(e),
        }
    }
}

/// Compiles `lane`'s optimised kernel again with the backtracking allocator in every
/// function and installs it over the top kernel (its rank is higher: see
/// [`Kernel::refined`]). For a lane over [`BACKTRACKING_NODES`] whose optimised kernel
/// gave functions of more than [`BACKTRACKING_INSTS`] instructions the single-pass
/// allocator, so that its first kernel came quickly: the refined one takes seconds on
/// long lanes and runs up to 1.9× faster (UNIQUAC-32's 205 k-node Hessian: 126 → 66 µs,
/// compiled in 0.35 s, refined in 6.3 s; BENCHMARKS.md, "Refined kernels"). Runs on the
/// refine worker ([`submit`]), after the top kernel is published and its job counted as
/// finished, so `wait_for_kernel` does not wait for it; written to the cache under its
/// own key ([`key`]).
///
/// A refined kernel already in the cache (another equation of the lane made it) is taken
/// instead; a lane whose kernel has no large function is left as it is (a kernel taken
/// from the cache, whose allocators are not known, may be such); an abandoned state stops
/// the compile between functions.
fn refine(state: &State, lane: &Lane) -> Result<(), Error> {
    let compiler = compiler()?;
    let c = &state.config;
    let level = c.level(Tier::Top);
    if let Some(k) = cached(state, compiler, lane, level, true) {
        state.install(lane.kind, k);
        return Ok(());
    }
    let stop = || state.abandoned();
    let made = compiler.compile(lane, c.shape, level, c.segment, true, &stop)?;
    let Some(made) = made.filter(|m| m.coarse && !state.abandoned()) else {
        return Ok(());
    };
    write(state, compiler, lane, level, true, &made.code);
    let kernel = Kernel::new(&made.code, lane, c.shape, level, c.retain, c.segment)?.refined();
    state.install(lane.kind, kernel);
    Ok(())
}

/// The cache key of `lane`'s kernel at `level` under `c`, `refined` or not ([`refine`]):
/// the host's fingerprint names the segment length too, which decides how the code is
/// laid out, and a refined kernel's allocator.
pub(crate) fn key(
    c: &super::Config,
    compiler: &Compiler,
    lane: &Lane,
    level: OptLevel,
    refined: bool,
) -> cache::Key {
    let host = format!(
        "{} segment={}{}",
        compiler.fingerprint(),
        c.segment,
        if refined { " refined" } else { "" }
    );
    cache::Key::new(lane, c.shape, level, &host)
}

/// The kernel for `level` from the cache directory, if one is there and valid; counts a
/// refused entry and reports a directory that cannot be read.
fn cached(
    state: &State,
    compiler: &Compiler,
    lane: &Lane,
    level: OptLevel,
    refined: bool,
) -> Option<Kernel> {
    let c = &state.config;
    let dir = c.cache_dir.as_ref()?;
    if ddx_ir::user::first_call(&lane.graph).is_some() {
        // A call's tag names this process's function: its code is never shared.
        return None;
    }
    match cache::read(dir, &key(c, compiler, lane, level, refined)) {
        cache::Entry::Valid(code) => {
            let made = Kernel::new(&code, lane, c.shape, level, c.retain, c.segment);
            match made.map(|k| if refined { k.refined() } else { k }) {
                Ok(k) => {
                    state
                        .stats
                        .lane(lane.kind)
                        .loaded
                        .fetch_add(1, Ordering::Relaxed);
                    Some(k)
                }
                Err(e) => {
                    state.stats.fail(lane.kind, e);
                    None
                }
            }
        }
        cache::Entry::Refused => {
            state.stats.refused.fetch_add(1, Ordering::Relaxed);
            None
        }
        cache::Entry::Unreadable(e) => {
            state.stats.cache_fail(e);
            None
        }
        cache::Entry::Absent => None,
    }
}

#[cfg(test)]
mod frame_tests {
    use super::{frame_fits, MAX_FRAME_BYTES};

    #[test]
    fn a_frame_over_the_limit_or_unknown_is_refused() {
        assert!(frame_fits("gradient", Some(0)).is_ok());
        assert!(frame_fits("gradient", Some(MAX_FRAME_BYTES)).is_ok());
        let over = frame_fits("gradient", Some(MAX_FRAME_BYTES + 1)).expect_err("refused");
        assert_eq!(over.code(), ddx_ir::Errc::JitTarget);
        assert!(over
            .to_string()
            .contains(&(MAX_FRAME_BYTES + 1).to_string()));
        assert!(frame_fits("gradient", None).is_err());
    }
}
