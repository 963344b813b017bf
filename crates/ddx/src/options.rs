//! Options: which engine answers an equation's calls, and how its code is generated.
//!
//! `codegen` is everything a code generator reads, so it is the identity a stored kernel is
//! matched against; the fields around it are policy and change no machine code.

use std::path::PathBuf;

/// The longest lane, in graph nodes, that [`Backend::Compile`] and [`Backend::Adapt`]
/// compile (2²⁰, a little over a million): a longer lane is interpreted, and
/// [`JitStatus::error`] says why ([`Error::JitTarget`](ddx_ir::Error::JitTarget)).
///
/// A lane of more than 32 768 nodes is split into segments of at most that many (each cut
/// where the fewest values cross it), each compiled as its own function, which reads the
/// values earlier segments made from a heap scratch area: so no kernel's stack frame or
/// compile memory grows with its lane. A long lane made nearly all of copies of one
/// subgraph (a model looping over links, terms or observations) is not split: it is one
/// function whose loops compute the copies, keeping their values in heap scratch, with at
/// most 32 768 of its operations outside the loops (besides copies of values the loops
/// read). Above 16 384 nodes the straight-line code is
/// made with a register allocator whose time is linear in the lane (about 3 µs a node of
/// a point kernel in a release build), so at this limit a compile takes a few seconds of
/// one worker of the compile pool; that kernel is then compiled again in the background
/// with the slower allocator that makes better code, and replaced when that lands
/// ([`LaneStatus::refined`]); small lanes do not wait for either (see
/// [`Equation::wait_for_kernel`](crate::Equation::wait_for_kernel)). A long lane's kernel
/// is a point kernel: a batch runs it point by point. Measurements in the
/// repository's [BENCHMARKS.md, "Long lanes"](https://github.com/ddx-ad/ddx/blob/main/BENCHMARKS.md#long-lanes).
pub const MAX_KERNEL_NODES: usize = 1 << 20;

/// Which engine answers calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// The interpreter; no compiler is ever asked. The default.
    #[default]
    Interpret,
    /// Compile each lane to machine code when it is first needed; calls interpret until
    /// the kernel lands.
    ///
    /// A lane gets a quick kernel first (no optimisation, the single-pass register
    /// allocator: compile time linear in the lane's length), then one at
    /// [`Codegen::opt_level`]. A lane of more than 16 384 nodes skips the quick kernel and
    /// is optimised with the single-pass allocator too, because the backtracking one takes
    /// time superlinear in such lanes (a long lane that re-rolls into loops keeps it: its
    /// function is short); that kernel is then refined in the background
    /// ([`LaneStatus::refined`]). A lane of more than 32 768 nodes is compiled in segments or,
    /// when it re-rolls, as one function of loops (see [`MAX_KERNEL_NODES`]). A lane of more than [`MAX_KERNEL_NODES`] nodes,
    /// or one of whose functions would need a stack frame over 1 MiB, is not compiled: it
    /// is interpreted, with the reason in [`JitStatus::lanes`].
    Compile,
    /// Compile once batch traffic has paid for it (`warm_points`, then `hot_points`), with
    /// the same tiers and limits as [`Backend::Compile`].
    Adapt,
    /// Run batch calls on an OpenCL device ([`Options::device`] chooses it): each lane is
    /// built as an OpenCL kernel on a background thread the first time a batch call needs
    /// it, and batch calls launch it from then on. Until the kernel is built, and for good
    /// where no device matches, the device's compiler refuses the kernel or a launch
    /// fails, the CPU interpreter answers; `Equation::device_status` says which device
    /// answers or why none does. Per-point calls always answer from the CPU (one launch
    /// per point would cost more than the point). Nothing is compiled for the CPU, and
    /// [`JitStatus`] stays empty. A build without the `opencl` feature accepts this
    /// backend and answers every call from the CPU (`device_status`: `no_device`).
    ///
    /// The device gives the CPU's bits on arithmetic (`+ − × ÷`, `sqrt`, comparisons,
    /// `select`, the powers written out inline: ARCHITECTURE.md, "Semantics", lists them)
    /// and on `exp` and `log` (ddx's own, written out); the other transcendental functions
    /// (`log10`, `pow`, `hypot`, …) are the device's own, within OpenCL's stated error bounds
    /// (measured per function in BENCHMARKS.md).
    Device,
}

/// Points per loop iteration of a batch kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Lanes {
    /// The host's register width for `f64`, or scalar for a batch too short to fill it.
    #[default]
    Derived,
    /// One point per iteration.
    Scalar,
    /// Exactly this many points per iteration (1 or 2 on x86-64 SSE2).
    Exactly(u8),
}

/// How hard the code generator optimises.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OptLevel {
    /// No optimisation: fastest compile (the quick tier every compiled lane starts with).
    Off,
    /// Fastest code.
    #[default]
    Speed,
}

/// What the code generator reads: the identity of a compiled kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Codegen {
    /// Points per loop iteration.
    pub lanes: Lanes,
    /// Optimisation level of the top tier.
    pub opt_level: OptLevel,
    /// Contract each product whose only use is a sum or difference into one fused
    /// multiply-add ([`ddx_ir::contract`]). Off by default: results are then those of
    /// plain `f64` arithmetic on the graph. On, each fused pair rounds once instead of
    /// twice (usually more accurate) and the lanes are shorter; since it is a graph pass,
    /// the interpreter, the batch interpreter and the JIT all run the contracted graph
    /// and still agree to the bit. It applies to every engine, `Interpret` included.
    pub contract: bool,
}

impl Default for Codegen {
    fn default() -> Self {
        Self::new()
    }
}

/// How an equation's calls are answered. Built with [`Options::new`] and its setters
/// (`Options::new().backend(Backend::Compile).points(4096)`), or from
/// [`Options::default`] by assigning fields.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Options {
    /// The engine.
    pub backend: Backend,
    /// The batch size the caller intends to pass (decides the lane width only).
    pub points: usize,
    /// Code generation settings.
    pub codegen: Codegen,
    /// Under [`Backend::Adapt`], batch points that buy the first compiled tier.
    pub warm_points: u64,
    /// Under [`Backend::Adapt`], further points that buy the optimised tier.
    pub hot_points: u64,
    /// Keep a copy of each kernel's machine code, so that [`Equation::save`] (and
    /// [`Equation::to_bytes`]) can write it: a loaded equation then answers from that
    /// code at once, compiling nothing.
    ///
    /// It costs one heap copy of every kernel's code (about 15–25 bytes per lane node;
    /// both tiers of a lane are kept) for as long as the options are in force. On by
    /// default; a caller who never saves turns it off, and a saved file then holds the
    /// equation and its lanes but no code.
    ///
    /// [`Equation::save`]: crate::Equation::save
    /// [`Equation::to_bytes`]: crate::Equation::to_bytes
    pub retain_object: bool,
    /// Keep compiled code in this directory between runs (made when missing).
    ///
    /// Each kernel is one file, named by a hash of everything its code depends on: the lane
    /// graph, the kernel's shape and optimisation level, the host CPU and its features,
    /// ddx's version, and the source of ddx's code generator (so a development build that
    /// changes code generation never loads code made before the change). An entry is
    /// checked (length, header, key, BLAKE3 checksum) before it is run, and compiled and
    /// rewritten when the check fails ([`JitStatus::refused`]).
    ///
    /// **Trust this directory like executable code.** The checksum detects accidents (a
    /// torn or damaged file), not forgery: anyone who can write an entry with a recomputed
    /// checksum has their code run. Do not point it at a directory others can write.
    ///
    /// A relative path is resolved against the current directory when an entry is read or
    /// written. An empty path, a path that is not a directory, or one that cannot be read or
    /// written is reported in [`JitStatus::cache_error`]; kernels are then compiled and
    /// kept in memory only, and calls are unaffected.
    pub cache_dir: Option<PathBuf>,
    /// Under [`Backend::Device`], a case-insensitive match on platform and device name.
    pub device: Option<String>,
    /// The most `f64` values one per-point call may allocate for its answer:
    /// [`Options::DEFAULT_ANSWER_LIMIT`] (2²⁸ values, 2 GiB) unless raised.
    ///
    /// A call whose answer would hold more — a dense Jacobian (`m·n` values), dense
    /// Hessians (`m·n·n`), a sparse answer (its nonzeros, per output) — answers
    /// [`Error::TooLarge`](ddx_ir::Error::TooLarge) before it allocates or computes
    /// anything, so asking too much is an error value, never an allocation failure that
    /// aborts the process. Past dense sizes, the sparse calls
    /// ([`Equation::sparse_jacobian`](crate::Equation::sparse_jacobian),
    /// [`Equation::sparse_hessian`](crate::Equation::sparse_hessian)) answer only the
    /// structural nonzeros. Policy only: changing it keeps every compiled kernel.
    pub answer_limit: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

impl Codegen {
    /// The defaults: [`Lanes::Derived`], [`OptLevel::Speed`], no contraction.
    pub const fn new() -> Self {
        Self {
            lanes: Lanes::Derived,
            opt_level: OptLevel::Speed,
            contract: false,
        }
    }
}

/// Setters, each taking and answering the options, so that options are built in one
/// expression (the struct is `#[non_exhaustive]` and cannot be written as a literal
/// outside ddx); all but [`Options::cache_dir`] and [`Options::device`] are `const`:
///
/// ```
/// use ddx::{Backend, Lanes, Options};
///
/// const BATCH: Options = Options::new().backend(Backend::Compile).points(4096);
/// let o = BATCH.lanes(Lanes::Scalar).contract(true).answer_limit(1 << 30);
/// assert_eq!(o.codegen.lanes, Lanes::Scalar);
/// assert_eq!((o.backend, o.points, o.answer_limit), (Backend::Compile, 4096, 1 << 30));
/// ```
impl Options {
    /// The defaults: [`Backend::Interpret`], `points` 1, [`Codegen::new`], `warm_points`
    /// 65 536, `hot_points` 1 048 576, `retain_object` on, no cache directory, no device
    /// name, [`Options::DEFAULT_ANSWER_LIMIT`]. The same as [`Options::default`], in a
    /// `const`.
    pub const fn new() -> Self {
        Self {
            backend: Backend::Interpret,
            points: 1,
            codegen: Codegen::new(),
            warm_points: 65_536,
            hot_points: 1_048_576,
            retain_object: true,
            cache_dir: None,
            device: None,
            answer_limit: Self::DEFAULT_ANSWER_LIMIT,
        }
    }

    /// Sets [`Options::backend`].
    #[must_use]
    pub const fn backend(mut self, backend: Backend) -> Self {
        self.backend = backend;
        self
    }

    /// Sets [`Options::points`].
    #[must_use]
    pub const fn points(mut self, points: usize) -> Self {
        self.points = points;
        self
    }

    /// Sets [`Options::codegen`] whole.
    #[must_use]
    pub const fn codegen(mut self, codegen: Codegen) -> Self {
        self.codegen = codegen;
        self
    }

    /// Sets [`Codegen::lanes`].
    #[must_use]
    pub const fn lanes(mut self, lanes: Lanes) -> Self {
        self.codegen.lanes = lanes;
        self
    }

    /// Sets [`Codegen::opt_level`].
    #[must_use]
    pub const fn opt_level(mut self, opt_level: OptLevel) -> Self {
        self.codegen.opt_level = opt_level;
        self
    }

    /// Sets [`Codegen::contract`].
    #[must_use]
    pub const fn contract(mut self, contract: bool) -> Self {
        self.codegen.contract = contract;
        self
    }

    /// Sets [`Options::warm_points`].
    #[must_use]
    pub const fn warm_points(mut self, points: u64) -> Self {
        self.warm_points = points;
        self
    }

    /// Sets [`Options::hot_points`].
    #[must_use]
    pub const fn hot_points(mut self, points: u64) -> Self {
        self.hot_points = points;
        self
    }

    /// Sets [`Options::retain_object`].
    #[must_use]
    pub const fn retain_object(mut self, retain: bool) -> Self {
        self.retain_object = retain;
        self
    }

    /// Sets [`Options::answer_limit`].
    #[must_use]
    pub const fn answer_limit(mut self, values: usize) -> Self {
        self.answer_limit = values;
        self
    }

    /// Sets [`Options::cache_dir`].
    #[must_use]
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Sets [`Options::device`].
    #[must_use]
    pub fn device(mut self, device: impl Into<String>) -> Self {
        self.device = Some(device.into());
        self
    }
}

impl Options {
    /// The default [`Options::answer_limit`]: 2²⁸ = 268 435 456 values (2 GiB of `f64`),
    /// e.g. a dense `16384 × 16384` Jacobian or a scalar function's dense Hessian of
    /// 16 384 symbols.
    pub const DEFAULT_ANSWER_LIMIT: usize = 1 << 28;

    /// Default options with `backend`: `Options::new().backend(backend)`.
    pub const fn with_backend(backend: Backend) -> Self {
        Self::new().backend(backend)
    }
}

/// Under [`Backend::Adapt`], how far a lane is along the batch traffic that buys its next
/// compiled tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Warming {
    /// Batch points seen towards the next tier.
    pub points: u64,
    /// Points that buy it ([`Options::warm_points`] for the quick kernel, then
    /// [`Options::hot_points`] for the optimised one).
    pub threshold: u64,
}

/// What the code generator has done for an equation since its options were last set.
///
/// A failed compile is reported here and never as a call's error: the lane keeps
/// answering from the interpreter, with the same bits.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct JitStatus {
    /// Kernels compiled by the code generator.
    pub compiled: usize,
    /// Kernels loaded from [`Options::cache_dir`], or from a saved equation
    /// ([`Equation::load`](crate::Equation::load)), instead of compiled.
    pub loaded: usize,
    /// Cache entries found but refused (damaged, truncated, stale or for another key); each
    /// was compiled instead and rewritten. An entry that is simply not there is not
    /// counted, nor one that could not be read (see [`JitStatus::cache_error`]). Also the
    /// kernels of a loaded equation that were not made for this host, this build's code
    /// generator or these options: they are never run, and their lanes compile.
    pub refused: usize,
    /// Cache entries written.
    pub written: usize,
    /// The most recent failure to make a kernel, of any lane (each lane's own is in
    /// [`JitStatus::lanes`]): [`Error::JitTarget`] (including a lane
    /// over [`MAX_KERNEL_NODES`] or a kernel function whose stack frame would exceed 1 MiB),
    /// [`Error::JitModule`], [`Error::JitObject`] or [`Error::JitVerify`]. The lane it
    /// concerns is interpreted.
    ///
    /// [`Error::JitTarget`]: ddx_ir::Error::JitTarget
    /// [`Error::JitModule`]: ddx_ir::Error::JitModule
    /// [`Error::JitObject`]: ddx_ir::Error::JitObject
    /// [`Error::JitVerify`]: ddx_ir::Error::JitVerify
    pub error: Option<ddx_ir::Error>,
    /// The most recent failure of [`Options::cache_dir`]
    /// ([`Error::JitCache`](ddx_ir::Error::JitCache)): an empty path, or a read or write the
    /// system refused. Not fatal: kernels are compiled and kept in memory as without a
    /// cache, and calls are unaffected.
    pub cache_error: Option<ddx_ir::Error>,
    /// Each lane the code generator was asked for, in the order of
    /// [`LaneKind::ALL`](ddx_ir::LaneKind::ALL): its kernel, counts and own last failure
    /// (one lane's failure never hides another's).
    pub lanes: Vec<LaneStatus>,
}

impl JitStatus {
    /// The report of lane `kind`, if the code generator was asked for it.
    pub fn lane(&self, kind: ddx_ir::LaneKind) -> Option<&LaneStatus> {
        self.lanes.iter().find(|l| l.kind == kind)
    }
}

/// What the code generator has done for one lane ([`JitStatus::lanes`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LaneStatus {
    /// The lane.
    pub kind: ddx_ir::LaneKind,
    /// The optimisation level of the kernel answering it now; `None` while the
    /// interpreter answers.
    pub level: Option<OptLevel>,
    /// Its kernels compiled by the code generator (one per tier, and one more for a
    /// refined kernel: see [`LaneStatus::refined`]).
    pub compiled: usize,
    /// Its kernels loaded from [`Options::cache_dir`].
    pub loaded: usize,
    /// The most recent failure to make a kernel of this lane (the kinds of
    /// [`JitStatus::error`]); the lane is interpreted while no kernel answers it.
    pub error: Option<ddx_ir::Error>,
    /// Whether the kernel answering is a refined one: a lane over 16 384 nodes whose
    /// optimised kernel was made with the single-pass register allocator (so that it came
    /// quickly) is compiled again in the background with the backtracking allocator, up
    /// to 1.9× faster, and that kernel replaces the first when it lands (also for a kernel
    /// taken from [`Options::cache_dir`] or a saved equation, when the refined one is not
    /// there). Answers are the same bits either way.
    pub refined: bool,
    /// Whether such a refined kernel is being made now (`wait_for_kernel` does not wait
    /// for it), or looked for: a kernel taken from the cache or a saved equation may need
    /// none, which the refine job finds out (in milliseconds for a re-rolled one).
    pub refining: bool,
    /// The engine that runs this lane's batches while this kernel answers it, once
    /// measured: the kernel, or the block interpreter where that ran faster on this machine
    /// (the first batches of at least 512 points time both, three trials of 256 points
    /// each; answers are the same bits either way, but for a NaN's sign and payload). Made
    /// once, it stands for this kernel. `None` while no kernel answers, or while the trials
    /// are not all in (batches then run on the kernel).
    pub batch_engine: Option<BatchEngine>,
}

/// The engine that runs a lane's batches under a compiling backend
/// ([`LaneStatus::batch_engine`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BatchEngine {
    /// The lane's kernel.
    Kernel,
    /// The block interpreter (each instruction over a block of points), measured faster
    /// than the kernel.
    Interpreter,
}
