//! The compiler: Cranelift set up for the host, the background compile thread, and the
//! tier ladder each job climbs.
//!
//! **One compile thread** serves every equation of the process: jobs queue in submission
//! order, so a lane's quick kernel always lands before its optimised one. A job compiles
//! (or loads from the cache) each tier it was asked for and publishes each kernel as it
//! lands; it checks that its state was not abandoned before every tier and publishing
//! checks again, so a change of options never installs stale code. A panic inside the code
//! generator is caught and reported as [`Error::JitModule`]; the lane keeps interpreting.

use super::lower::{self, Shape};
use super::{cache, Kernel, State, Tier};
use crate::options::{OptLevel, MAX_KERNEL_NODES};
use crate::prepared::PreparedLanes;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::isa::{OwnedTargetIsa, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{CodegenError, Context};
use ddx_ir::{Error, Lane, LaneKind};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock};

/// Lanes of more nodes than this get the single-pass register allocator at the optimised
/// tier too (the quick tier always has it): regalloc2's backtracking allocator takes time
/// superlinear in a lane's length when many values live long (a reverse sweep over a long
/// chain: 12k nodes 0.20 s, 24k 0.95 s, 36k 1.9 s, 120k 25 s), the single-pass one about
/// 3.5 µs a node whatever the lane (120k nodes 0.5 s). See BENCHMARKS.md, "Compiling".
pub(crate) const BACKTRACKING_NODES: usize = 1 << 14;

/// The largest stack frame a kernel may have, in bytes. A kernel runs on its caller's
/// stack (a spawned thread's is 2 MiB by default, rayon's workers' too), and a frame larger
/// than what is left there aborts the process; compiled code that needs more is refused
/// and the lane interpreted. Frames grow with the values a lane keeps live across its
/// math calls (a reverse sweep keeps many), spilled. Measured at the quick tier: 5–8
/// bytes a node for point kernels of the bundled models, 27 for a column kernel of a long
/// reverse chain (its slots are 16 bytes; 21 at the optimised tier with the single-pass
/// allocator, 9 with the backtracking one). So a column kernel of such a chain is refused
/// beyond about 40 000 nodes (quick) or 50 000 (optimised), while UNIQUAC-32's
/// 195 350-node Hessian lane fits as a point kernel (0.85 MiB quick, 0.26 MiB optimised)
/// and as a column kernel at the optimised tier (0.54 MiB). See BENCHMARKS.md, "Long lanes".
pub(crate) const MAX_FRAME_BYTES: u32 = 1 << 20;

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
                ("enable_verifier", "true"),
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
        // The shared settings of every configuration (optimisation level, allocator, …).
        for isa in [&quick, &speed, &speed_linear] {
            fingerprint.push_str(&format!(" [{}]", isa.flags()));
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

    /// Compiles `lane` as a kernel of `shape` at `level`; answers its machine code.
    ///
    /// # Errors
    /// [`Error::JitVerify`] when the function fails Cranelift's verifier,
    /// [`Error::JitModule`] when code generation fails, [`Error::JitObject`] when the code
    /// would need relocating, [`Error::JitTarget`] when its stack frame would exceed
    /// [`MAX_FRAME_BYTES`].
    pub(crate) fn compile(
        &self,
        lane: &Lane,
        shape: Shape,
        level: OptLevel,
    ) -> Result<Vec<u8>, Error> {
        let isa: &dyn TargetIsa = match level {
            OptLevel::None => &*self.quick,
            OptLevel::Speed if lane.graph.len() > BACKTRACKING_NODES => &*self.speed_linear,
            OptLevel::Speed => &*self.speed,
        };
        let name = lane.kind.name();
        let mut ctx = Context::for_function(lower::function(lane, shape, isa));
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

/// A request to the compile thread: climb lane `kind` from tier `from` to `upto`.
pub(crate) struct Job {
    pub(crate) state: Arc<State>,
    pub(crate) lanes: Arc<PreparedLanes>,
    pub(crate) kind: LaneKind,
    pub(crate) from: Tier,
    pub(crate) upto: Tier,
}

/// Queues `job` for the compile thread, starting it on first use.
///
/// # Errors
/// [`Error::JitTarget`] when the thread cannot be started.
pub(crate) fn submit(job: Job) -> Result<(), Error> {
    static QUEUE: OnceLock<Result<Mutex<Sender<Job>>, Error>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("ddx-jit".into())
            .spawn(move || {
                for job in rx {
                    run(job);
                }
            })
            .map(|_| Mutex::new(tx))
            .map_err(|e| target(format!("cannot start the compile thread: {e}")))
    });
    let queue = queue.as_ref().map_err(Clone::clone)?;
    let sent = queue.lock().unwrap_or_else(|e| e.into_inner()).send(job);
    sent.map_err(|_| target("the compile thread has stopped"))
}

/// Tests hold this lock to keep the compile thread from starting a job, so that "a
/// compile is in flight" is a state they can set up without timing anything.
#[cfg(test)]
pub(crate) static PAUSE: Mutex<()> = Mutex::new(());

/// Runs one job on the compile thread.
fn run(job: Job) {
    #[cfg(test)]
    let _paused = PAUSE.lock().unwrap_or_else(|e| e.into_inner());
    let Job {
        state,
        lanes,
        kind,
        from,
        upto,
    } = job;
    if !state.abandoned() {
        let climbed = catch_unwind(AssertUnwindSafe(|| {
            let lane = &lanes.prepared(kind, state.config.contract).lane;
            climb(&state, lane, from, upto)
        }));
        match climbed {
            Ok(Ok(())) => {}
            Ok(Err(e)) => state.stats.fail(e),
            Err(_) => state.stats.fail(Error::JitModule {
                lane: kind.name(),
                detail: "the code generator panicked".into(),
            }),
        }
    }
    state.slot(kind).finish();
}

/// Compiles (or loads) and publishes each tier from `from` to `upto`.
///
/// A lane over [`MAX_KERNEL_NODES`] is refused before anything is done. A lane over
/// [`BACKTRACKING_NODES`] asked for both tiers at once skips the quick one: its optimised
/// kernel is made with the same (single-pass) allocator at a little more cost, and the
/// quick one would only delay it.
fn climb(state: &State, lane: &Lane, from: Tier, upto: Tier) -> Result<(), Error> {
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
    // With a cache, the top kernel may be on disk already: then the quick one is moot.
    let peeked = from == Tier::Quick && upto == Tier::Top && c.cache_dir.is_some();
    if peeked {
        if let Some(k) = cached(state, compiler, lane, c.level(Tier::Top)) {
            state.install(lane.kind, k);
            return Ok(());
        }
    }
    for tier in [Tier::Quick, Tier::Top] {
        if tier < from || tier > upto {
            continue;
        }
        if state.abandoned() {
            return Ok(());
        }
        let level = c.level(tier);
        let hit = if peeked && tier == Tier::Top {
            None // looked at above
        } else {
            cached(state, compiler, lane, level)
        };
        let kernel = match hit {
            Some(k) => k,
            None => {
                let code = compiler.compile(lane, c.shape, level)?;
                state.stats.compiled.fetch_add(1, Ordering::Relaxed);
                if let Some(dir) = &c.cache_dir {
                    let key = cache::Key::new(lane, c.shape, level, compiler.fingerprint());
                    match cache::write(dir, &key, &code) {
                        Ok(()) => {
                            state.stats.written.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(e) => state.stats.cache_fail(e),
                    }
                }
                Kernel::new(&code, lane, c.shape, level, c.retain)?
            }
        };
        state.install(lane.kind, kernel);
    }
    Ok(())
}

/// The kernel for `level` from the cache directory, if one is there and valid; counts a
/// refused entry and reports a directory that cannot be read.
fn cached(state: &State, compiler: &Compiler, lane: &Lane, level: OptLevel) -> Option<Kernel> {
    let c = &state.config;
    let dir = c.cache_dir.as_ref()?;
    let key = cache::Key::new(lane, c.shape, level, compiler.fingerprint());
    match cache::read(dir, &key) {
        cache::Entry::Valid(code) => match Kernel::new(&code, lane, c.shape, level, c.retain) {
            Ok(k) => {
                state.stats.loaded.fetch_add(1, Ordering::Relaxed);
                Some(k)
            }
            Err(e) => {
                state.stats.fail(e);
                None
            }
        },
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
