//! Options: which engine answers an equation's calls, and how its code is generated.
//!
//! `codegen` is everything a code generator reads, so it is the identity a stored kernel is
//! matched against; the fields around it are policy and change no machine code.

use std::path::PathBuf;

/// Which engine answers calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// The interpreter; no compiler is ever asked. The default.
    #[default]
    Interpret,
    /// Compile each lane to machine code when it is first needed; calls interpret until
    /// the kernel lands.
    Compile,
    /// Compile once batch traffic has paid for it (`warm_points`, then `hot_points`).
    Adapt,
    /// Build each lane for an OpenCL device; calls answer from the CPU until it lands.
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
    /// Fastest compile.
    None,
    /// Fastest code.
    #[default]
    Speed,
}

/// What the code generator reads: the identity of a compiled kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
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

/// How an equation's calls are answered.
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
    /// Keep compiled code so that a save can write it.
    pub retain_object: bool,
    /// Keep compiled code here between runs.
    pub cache_dir: Option<PathBuf>,
    /// Under [`Backend::Device`], a case-insensitive match on platform and device name.
    pub device: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            backend: Backend::Interpret,
            points: 1,
            codegen: Codegen::default(),
            warm_points: 65_536,
            hot_points: 1_048_576,
            retain_object: true,
            cache_dir: None,
            device: None,
        }
    }
}

impl Options {
    /// Default options with `backend`.
    pub fn with_backend(backend: Backend) -> Self {
        Self {
            backend,
            ..Self::default()
        }
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
    /// Kernels loaded from [`Options::cache_dir`] instead of compiled.
    pub loaded: usize,
    /// Cache entries found but refused (damaged, truncated, stale or for another key); each
    /// was compiled instead and rewritten.
    pub refused: usize,
    /// Cache entries written.
    pub written: usize,
    /// The most recent failure: [`Error::JitTarget`], [`Error::JitModule`],
    /// [`Error::JitObject`] or [`Error::JitVerify`].
    ///
    /// [`Error::JitTarget`]: ddx_ir::Error::JitTarget
    /// [`Error::JitModule`]: ddx_ir::Error::JitModule
    /// [`Error::JitObject`]: ddx_ir::Error::JitObject
    /// [`Error::JitVerify`]: ddx_ir::Error::JitVerify
    pub error: Option<ddx_ir::Error>,
}
