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
use crate::equation::Core;
use crate::options::OptLevel;
use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::isa::{OwnedTargetIsa, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_codegen::{CodegenError, Context};
use ddx_ir::{Error, Lane, LaneKind};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock};

/// Cranelift, configured for this host at both optimisation levels.
pub(crate) struct Compiler {
    quick: OwnedTargetIsa,
    speed: OwnedTargetIsa,
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
        let isa = |opt: &str| -> Result<OwnedTargetIsa, Error> {
            let mut flags = settings::builder();
            for (name, value) in [
                ("opt_level", opt),
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
        let speed = isa("speed")?;
        let mut fingerprint = format!("{} {} cranelift-0.135", speed.triple(), speed.name());
        for f in speed.isa_flags() {
            fingerprint.push_str(&format!(" {}={}", f.name, f.value_string()));
        }
        Ok(Compiler {
            quick: isa("none")?,
            speed,
            fingerprint,
        })
    }

    /// The host's identity for the cache key: target triple, code generator and every
    /// CPU feature flag it compiles for.
    pub(crate) fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Compiles `lane` as a kernel of `shape` at `level`; answers its machine code.
    ///
    /// # Errors
    /// [`Error::JitVerify`] when the function fails Cranelift's verifier,
    /// [`Error::JitModule`] when code generation fails, [`Error::JitObject`] when the code
    /// would need relocating.
    pub(crate) fn compile(
        &self,
        lane: &Lane,
        shape: Shape,
        level: OptLevel,
    ) -> Result<Vec<u8>, Error> {
        let isa: &dyn TargetIsa = match level {
            OptLevel::None => &*self.quick,
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
        Ok(code.code_buffer().to_vec())
    }
}

/// A request to the compile thread: climb lane `kind` from tier `from` to `upto`.
pub(crate) struct Job {
    pub(crate) state: Arc<State>,
    pub(crate) core: Arc<Core>,
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
        core,
        kind,
        from,
        upto,
    } = job;
    if !state.abandoned() {
        let climbed = catch_unwind(AssertUnwindSafe(|| {
            let lane = &core.prepared(kind, state.config.contract).lane;
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
fn climb(state: &State, lane: &Lane, from: Tier, upto: Tier) -> Result<(), Error> {
    let compiler = compiler()?;
    let c = &state.config;
    let upto = upto.min(c.highest());
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
                    if cache::write(dir, &key, &code).is_ok() {
                        state.stats.written.fetch_add(1, Ordering::Relaxed);
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
/// refused entry.
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
            Err(_) => None,
        },
        cache::Entry::Refused => {
            state.stats.refused.fetch_add(1, Ordering::Relaxed);
            None
        }
        cache::Entry::Absent => None,
    }
}
