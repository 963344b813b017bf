//! The OpenCL device backend (`Backend::Device`): lanes built as OpenCL kernels on a
//! background thread, batch calls launched on the device.
//!
//! An equation holds one [`Device`] for the options in force. Under `Backend::Device` it
//! owns a [`State`]: the selector, and one [`Slot`] per lane kind holding the lane's
//! kernel once the device's compiler has built it. A batch call reads the slot (one
//! atomic load); while it is empty, or after the kernel failed, the CPU answers. The one
//! build thread ([`submit`]) chooses the device (once per selector per process, see
//! [`runtime::gpu`]) and builds each lane the first time a call needs it. Per-point calls
//! always answer from the CPU: one launch per point would cost more than the point.
//!
//! **Invariants.**
//! - Engines read lanes from [`PreparedLanes`]; this module never sees `Equation`.
//! - Every failure — no OpenCL library, no platform, no device matching the selector,
//!   a kernel the compiler refuses, a launch that fails — is recorded in the state
//!   (reported by `Equation::device_status`) and leaves the lane answering from the CPU;
//!   a failed launch retires the lane's kernel for the life of the state.
//! - A lane is built at most once per state: [`Slot::asked`] is set under the slot's
//!   lock, with the job counted as pending, before the job is submitted.
//! - Options changed = a new state; a build for the old one finishes into a state no
//!   equation holds, and is never seen.

mod columns;
#[cfg(test)]
pub(crate) mod faults;
mod info;
mod runtime;
pub(crate) mod source;
#[cfg(test)]
mod tests;

pub use columns::DeviceColumns;
pub use info::DeviceInfo;
pub(crate) use runtime::HostColumns;

use crate::options::{Backend, Options};
use crate::prepared::PreparedLanes;
use ddx_ir::{Error, LaneKind};
use runtime::{Gpu, LaneKernel};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// One lane's kernel and its build bookkeeping.
#[derive(Debug, Default)]
struct Slot {
    kernel: OnceLock<Arc<LaneKernel>>,
    /// A launch failed: the CPU answers this lane from now on.
    retired: AtomicBool,
    /// A build was asked (set under `pending`'s lock).
    asked: AtomicBool,
    /// Builds submitted and not finished.
    pending: Mutex<usize>,
    done: Condvar,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, usize> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The kernel answering, unless none was built or it was retired.
    fn current(&self) -> Option<&Arc<LaneKernel>> {
        if self.retired.load(Ordering::Acquire) {
            return None;
        }
        self.kernel.get()
    }

    fn finish(&self) {
        let mut pending = self.lock();
        *pending = pending.saturating_sub(1);
        drop(pending);
        self.done.notify_all();
    }
}

/// Everything the device backend holds for one equation under one set of options.
#[derive(Debug)]
pub(crate) struct State {
    selector: String,
    contract: bool,
    slots: [Slot; LaneKind::ALL.len()],
    /// The last failure, for the status.
    error: Mutex<Option<Error>>,
}

impl State {
    fn slot(&self, kind: LaneKind) -> &Slot {
        &self.slots[kind as usize]
    }

    fn fail(&self, e: Error) {
        *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
    }

    fn last_error(&self) -> Option<Error> {
        self.error.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The device the selector picks (chosen on first use, then remembered).
    fn gpu(&self) -> Result<Arc<Gpu>, Error> {
        runtime::gpu(&self.selector)
    }

    /// Asks the build thread for `kind`'s kernel, once.
    fn ask(self: &Arc<Self>, lanes: &Arc<PreparedLanes>, kind: LaneKind) {
        let slot = self.slot(kind);
        if slot.asked.load(Ordering::Acquire) {
            return;
        }
        let mut pending = slot.lock();
        if slot.asked.load(Ordering::Acquire) {
            return;
        }
        *pending += 1;
        slot.asked.store(true, Ordering::Release);
        let job = Job {
            state: Arc::clone(self),
            lanes: Arc::clone(lanes),
            kind,
        };
        if let Err(e) = submit(job) {
            self.fail(e);
            *pending -= 1;
            drop(pending);
            slot.done.notify_all();
        }
    }
}

/// The device backend's part of an equation: nothing unless the backend is `Device`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Device {
    state: Option<Arc<State>>,
}

impl Device {
    /// The device backend for `options`; under `Device`, starts building every lane in
    /// `prepared` (the lanes already used), the others as they are first needed.
    pub(crate) fn new(
        options: &Options,
        lanes: &Arc<PreparedLanes>,
        prepared: &[LaneKind],
    ) -> Device {
        if options.backend != Backend::Device {
            return Device::default();
        }
        let state = Arc::new(State {
            selector: options.device.clone().unwrap_or_default(),
            contract: options.codegen.contract,
            slots: Default::default(),
            error: Mutex::new(None),
        });
        for &kind in prepared {
            state.ask(lanes, kind);
        }
        Device { state: Some(state) }
    }

    /// Whether the backend is `Device`.
    pub(crate) fn active(&self) -> bool {
        self.state.is_some()
    }

    /// The kernel answering a batch call of `kind`, asking for one when none was asked.
    #[inline]
    pub(crate) fn batch(
        &self,
        lanes: &Arc<PreparedLanes>,
        kind: LaneKind,
    ) -> Option<&Arc<LaneKernel>> {
        let state = self.state.as_ref()?;
        let slot = state.slot(kind);
        if let Some(k) = slot.current() {
            return Some(k);
        }
        state.ask(lanes, kind);
        None
    }

    /// Runs `kind`'s kernel over `host`; `false` (the failure recorded, the kernel
    /// retired) when the device failed, and the caller answers from the CPU.
    pub(crate) fn run(&self, kernel: &LaneKernel, kind: LaneKind, host: &HostColumns<'_>) -> bool {
        match kernel.run_host(host) {
            Ok(()) => true,
            Err(e) => {
                if let Some(s) = &self.state {
                    s.slot(kind).retired.store(true, Ordering::Release);
                    s.fail(e);
                }
                false
            }
        }
    }

    /// Whether a device kernel answers `kind` now.
    pub(crate) fn uses_kernel(&self, kind: LaneKind) -> bool {
        self.state
            .as_ref()
            .is_some_and(|s| s.slot(kind).current().is_some())
    }

    /// Asks for `kind`'s kernel, blocks until its build finished, and answers whether a
    /// device kernel now answers it.
    pub(crate) fn wait(&self, lanes: &Arc<PreparedLanes>, kind: LaneKind) -> bool {
        let Some(state) = &self.state else {
            return false;
        };
        state.ask(lanes, kind);
        let slot = state.slot(kind);
        let mut pending = slot.lock();
        while *pending > 0 {
            pending = slot.done.wait(pending).unwrap_or_else(|e| e.into_inner());
        }
        drop(pending);
        slot.current().is_some()
    }

    /// The device answering, or why none is; `None` unless the backend is `Device`.
    /// Chooses the device if no build has yet.
    pub(crate) fn status(&self) -> Option<Result<DeviceInfo, Error>> {
        let state = self.state.as_ref()?;
        Some(match (state.last_error(), state.gpu()) {
            (Some(e), _) | (None, Err(e)) => Err(e),
            (None, Ok(gpu)) => Ok(gpu.info.clone()),
        })
    }

    /// How long the device's compiler took over `kind`'s kernel, once it is built.
    pub(crate) fn build_time(&self, kind: LaneKind) -> Option<Duration> {
        let k = self.state.as_ref()?.slot(kind).kernel.get()?;
        Some(k.build_time)
    }

    /// Device-resident columns of `len` points for `kind` (waiting for its kernel).
    pub(crate) fn columns(
        &self,
        lanes: &Arc<PreparedLanes>,
        kind: LaneKind,
        len: usize,
    ) -> Result<DeviceColumns, Error> {
        let Some(state) = &self.state else {
            return Err(Error::NoDevice {
                detail: "device columns need Backend::Device".into(),
            });
        };
        if !self.wait(lanes, kind) {
            return Err(match state.last_error() {
                Some(e) => e,
                None => state.gpu().err().unwrap_or_else(|| Error::NoDevice {
                    detail: format!("the {} lane has no device kernel", kind.name()),
                }),
            });
        }
        let kernel = state.slot(kind).current().ok_or_else(|| Error::NoDevice {
            detail: format!("the {} lane's device kernel was retired", kind.name()),
        })?;
        let twin = ddx_ir::lane::has_twin(kind).then(|| (Arc::clone(lanes), state.contract));
        DeviceColumns::new(Arc::clone(kernel), kind, len, twin)
    }
}

/// A request to the build thread: build lane `kind` of `lanes` for `state`.
struct Job {
    state: Arc<State>,
    lanes: Arc<PreparedLanes>,
    kind: LaneKind,
}

/// Queues `job` for the build thread, starting it on first use.
fn submit(job: Job) -> Result<(), Error> {
    static QUEUE: OnceLock<Result<Mutex<Sender<Job>>, Error>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("ddx-device".into())
            .spawn(move || {
                for job in rx {
                    build(job);
                }
            })
            .map(|_| Mutex::new(tx))
            .map_err(|e| Error::NoDevice {
                detail: format!("cannot start the device build thread: {e}"),
            })
    });
    let queue = queue.as_ref().map_err(Clone::clone)?;
    let sent = queue.lock().unwrap_or_else(|e| e.into_inner()).send(job);
    sent.map_err(|_| Error::NoDevice {
        detail: "the device build thread has stopped".into(),
    })
}

/// Builds one lane on the build thread; a panic in the driver's wrapper is a failure.
fn build(job: Job) {
    let Job { state, lanes, kind } = job;
    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let gpu = state.gpu()?;
        let lane = &lanes.prepared(kind, state.contract).lane;
        if lane.graph.len() > crate::options::MAX_KERNEL_NODES {
            return Err(Error::DeviceCompile {
                lane: kind.name(),
                log: format!(
                    "the lane has {} nodes, more than the {} a kernel is built for",
                    lane.graph.len(),
                    crate::options::MAX_KERNEL_NODES
                ),
            });
        }
        if let Some(tag) = ddx_ir::user::first_call(&lane.graph) {
            // User code runs on the CPU only: the CPU answers this lane.
            return Err(ddx_ir::user::unsupported(tag, "the OpenCL device"));
        }
        LaneKernel::build(&gpu, lane, &source::source_of(lane))
    }));
    match made {
        Ok(Ok(k)) => {
            let _ = state.slot(kind).kernel.set(Arc::new(k));
        }
        Ok(Err(e)) => state.fail(e),
        Err(_) => state.fail(Error::DeviceCompile {
            lane: kind.name(),
            log: "the OpenCL wrapper panicked".into(),
        }),
    }
    state.slot(kind).finish();
}
