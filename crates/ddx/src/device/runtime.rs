//! OpenCL through `opencl3`, loaded at run time: choosing a device, building a lane's
//! kernel on it, moving columns and launching.
//!
//! The OpenCL library (`libOpenCL.so.1`, the ICD loader) is opened the first time a device
//! is chosen, never at link time, so a process on a machine without OpenCL loads and runs;
//! every OpenCL call's failure becomes an [`Error`] (`no_device`, `device_compile`,
//! `device_launch`), never a panic.
//!
//! **Invariants.**
//! - A device is chosen once per selector per process ([`gpu`]): its context and its
//!   in-order command queue are shared by every equation that selects it.
//! - A [`LaneKernel`]'s OpenCL kernel object has its arguments set and is enqueued only
//!   under its lock, so concurrent calls never see each other's arguments.
//! - Every call that enqueues work finishes its queue before it returns, so a host slice
//!   handed to a non-blocking transfer outlives the transfer.

use super::DeviceInfo;
use ddx_ir::{Error, Lane};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::device::{Device, CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_GPU};
use opencl3::error_codes::{ClError, DLOPEN_RUNTIME_LOAD_FAILED};
use opencl3::kernel::Kernel;
use opencl3::memory::{Buffer, ClMem, CL_MEM_READ_ONLY, CL_MEM_WRITE_ONLY};
use opencl3::platform::get_platforms;
use opencl3::program::Program;
use opencl3::types::{cl_double, cl_ulong, CL_NON_BLOCKING};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// A chosen device: its context and command queue.
pub(crate) struct Gpu {
    pub(crate) info: DeviceInfo,
    context: Context,
    pub(crate) queue: CommandQueue,
    /// The largest buffer the device allocates, in bytes.
    pub(crate) max_alloc: u64,
    /// Work-items per work-group a launch asks for (a divisor of the device's maximum).
    local: usize,
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gpu").field("info", &self.info).finish()
    }
}

/// `detail` as a `no_device` error.
fn no_device(detail: impl Into<String>) -> Error {
    Error::NoDevice {
        detail: detail.into(),
    }
}

/// The device `selector` picks, chosen once per process (a failure is remembered too:
/// which devices exist does not change while a process runs).
pub(crate) fn gpu(selector: &str) -> Result<Arc<Gpu>, Error> {
    type Chosen = Mutex<Vec<(String, Result<Arc<Gpu>, Error>)>>;
    static CHOSEN: OnceLock<Chosen> = OnceLock::new();
    let key = selector.trim().to_lowercase();
    let chosen = CHOSEN.get_or_init(Chosen::default);
    let mut chosen = chosen.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, r)) = chosen.iter().find(|(k, _)| *k == key) {
        return r.clone();
    }
    let r = choose(&key).map(Arc::new);
    chosen.push((key, r.clone()));
    r
}

/// A device seen while choosing.
struct Candidate {
    platform: String,
    device: Device,
    name: String,
    gpu: bool,
    fp64: bool,
}

/// Chooses the device for `want` (lower case, trimmed): empty = the first GPU with double
/// precision, else the first device of any kind with it; otherwise the first device with
/// double precision whose platform or device name contains `want`, ignoring case.
fn choose(want: &str) -> Result<Gpu, Error> {
    let platforms = get_platforms().map_err(|e| {
        if e.0 == DLOPEN_RUNTIME_LOAD_FAILED {
            no_device("the OpenCL library (libOpenCL.so.1) cannot be loaded")
        } else {
            no_device(format!("no OpenCL platform ({e})"))
        }
    })?;
    if platforms.is_empty() {
        return Err(no_device("no OpenCL platform is installed"));
    }
    let mut seen = Vec::new();
    for p in &platforms {
        let platform = p.name().unwrap_or_default();
        // A platform without devices answers CL_DEVICE_NOT_FOUND: skipped.
        for id in p.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default() {
            let device = Device::new(id);
            let name = device.name().unwrap_or_default();
            let gpu = device.dev_type().is_ok_and(|t| t & CL_DEVICE_TYPE_GPU != 0);
            let fp64 = device.double_fp_config().is_ok_and(|c| c != 0);
            seen.push(Candidate {
                platform: platform.clone(),
                device,
                name,
                gpu,
                fp64,
            });
        }
    }
    let matches = |c: &Candidate| {
        want.is_empty()
            || c.platform.to_lowercase().contains(want)
            || c.name.to_lowercase().contains(want)
    };
    let pick = if want.is_empty() {
        seen.iter()
            .find(|c| c.fp64 && c.gpu)
            .or_else(|| seen.iter().find(|c| c.fp64))
    } else {
        seen.iter().find(|c| c.fp64 && matches(c))
    };
    let Some(c) = pick else {
        let list = seen
            .iter()
            .map(|c| {
                let fp = if c.fp64 { "" } else { ", no double precision" };
                format!("{} / {}{fp}", c.platform, c.name)
            })
            .collect::<Vec<_>>()
            .join("; ");
        let what = if want.is_empty() {
            "no device has double precision".to_string()
        } else {
            format!("no device with double precision matches {want:?}")
        };
        return Err(no_device(format!("{what} (devices: {list})")));
    };
    open(c)
}

/// The context and queue of a chosen device.
fn open(c: &Candidate) -> Result<Gpu, Error> {
    let d = &c.device;
    let fail = |what: &str, e: ClError| no_device(format!("{what} on {}: {e}", c.name));
    let context = Context::from_device(d).map_err(|e| fail("clCreateContext", e))?;
    // `create_default` is OpenCL 1.2's clCreateCommandQueue: every driver has it.
    #[allow(deprecated)]
    let queue =
        CommandQueue::create_default(&context, 0).map_err(|e| fail("clCreateCommandQueue", e))?;
    let max_group = d.max_work_group_size().unwrap_or(1).max(1);
    // 128 work-items per group: on the H200 a 148-register kernel (regsol16's gradient)
    // runs 25 % faster than at 256, which leaves room for one group per SM only, and no
    // kernel measured was more than 5 % slower (BENCHMARKS.md, "Where the device's time
    // goes").
    let local = [128, 64, 32, 16, 8, 4, 2, 1]
        .into_iter()
        .find(|&l| l <= max_group)
        .unwrap_or(1);
    Ok(Gpu {
        info: DeviceInfo {
            platform: c.platform.clone(),
            device: c.name.clone(),
            driver: d.driver_version().unwrap_or_default(),
            version: d.version().unwrap_or_default(),
        },
        max_alloc: d.max_mem_alloc_size().unwrap_or(1 << 27),
        local,
        context,
        queue,
    })
}

/// A lane's kernel built on a device.
pub(crate) struct LaneKernel {
    pub(crate) gpu: Arc<Gpu>,
    lane: &'static str,
    pub(crate) inputs: usize,
    pub(crate) outputs: usize,
    /// How long the device's compiler took.
    pub(crate) build_time: Duration,
    work: Mutex<Work>,
}

/// What a launch needs exclusive use of: the kernel object (its arguments) and the
/// buffers of the batch calls that copy their columns in and out.
struct Work {
    kernel: Kernel,
    staged: Option<(usize, Buffer<cl_double>, Buffer<cl_double>)>,
}

impl std::fmt::Debug for LaneKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneKernel")
            .field("lane", &self.lane)
            .field("device", &self.gpu.info)
            .finish()
    }
}

/// `e` from OpenCL call `what` as a launch failure of `lane`.
pub(crate) fn launch_error(lane: &'static str, what: &str, e: ClError) -> Error {
    Error::DeviceLaunch {
        lane,
        detail: format!("{what}: {e}"),
    }
}

/// The options `lane`'s kernel is built with on `platform`: none, except on NVIDIA's
/// platform (`NVIDIA CUDA`) a cap of 168 registers for first-order lanes. On the H200 a
/// kernel that would take all 255 registers runs two groups of 128 work-items an SM; at
/// 168 it runs three, and UNIQUAC 16's gradient took 0.91 instead of 1.12 ns/point for
/// 0.6 KB of spills (a cap of 200 gains no group and was slower; kernels under the cap
/// are untouched); second-order lanes were not measured under a cap, so they have none
/// (BENCHMARKS.md, "Demand order"). No option relaxes IEEE arithmetic.
pub(crate) fn build_options(platform: &str, kind: ddx_ir::LaneKind) -> &'static str {
    use ddx_ir::LaneKind::{Hessian, Hvp, Tensor};
    let second = matches!(kind, Hessian | Hvp | Tensor);
    if platform.starts_with("NVIDIA") && !second {
        "-cl-nv-maxrregcount=168"
    } else {
        ""
    }
}

/// Every kernel's `zero` argument (see `source::Remat`).
const ZERO: cl_ulong = 0;

impl LaneKernel {
    /// Builds `source` (the OpenCL C of `lane`) on `gpu`.
    ///
    /// # Errors
    /// [`Error::DeviceCompile`] with the driver's build log.
    pub(crate) fn build(gpu: &Arc<Gpu>, lane: &Lane, source: &str) -> Result<LaneKernel, Error> {
        let name = lane.kind.name();
        let refused = |log: String| Error::DeviceCompile { lane: name, log };
        let start = Instant::now();
        // No option relaxes IEEE arithmetic; contraction is off by pragma in the source.
        #[cfg(test)]
        let source = &super::faults::source(source);
        let options = build_options(&gpu.info.platform, lane.kind);
        let program = Program::create_and_build_from_source(&gpu.context, source, options)
            .map_err(refused)?;
        let kernel = Kernel::create(&program, &super::source::kernel_name(lane))
            .map_err(|e| refused(format!("clCreateKernel: {e}")))?;
        let build_time = start.elapsed();
        Ok(LaneKernel {
            gpu: Arc::clone(gpu),
            lane: name,
            inputs: lane.inputs(),
            outputs: lane.outputs.len(),
            build_time,
            work: Mutex::new(Work {
                kernel,
                staged: None,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Work> {
        self.work.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates a device buffer of `values` doubles.
    pub(crate) fn buffer(
        &self,
        values: usize,
        read_only: bool,
    ) -> Result<Buffer<cl_double>, Error> {
        let flags = if read_only {
            CL_MEM_READ_ONLY
        } else {
            CL_MEM_WRITE_ONLY
        };
        let bytes = (values as u64).saturating_mul(8);
        if bytes > self.gpu.max_alloc {
            return Err(Error::DeviceLaunch {
                lane: self.lane,
                detail: format!(
                    "a buffer of {bytes} bytes is more than the {} the device allocates",
                    self.gpu.max_alloc
                ),
            });
        }
        // SAFETY: no host pointer is given; the buffer is uninitialised device memory that
        // is written before any kernel reads it.
        unsafe {
            Buffer::<cl_double>::create(
                &self.gpu.context,
                flags,
                values.max(1),
                std::ptr::null_mut(),
            )
        }
        .map_err(|e| launch_error(self.lane, "clCreateBuffer", e))
    }

    /// Enqueues the kernel over `len` points of `input` and `output`, whose columns are
    /// `stride` values apart.
    fn enqueue(
        &self,
        work: &Work,
        input: &Buffer<cl_double>,
        output: &Buffer<cl_double>,
        stride: usize,
        len: usize,
    ) -> Result<(), Error> {
        let k = &work.kernel;
        let fail = |what, e| launch_error(self.lane, what, e);
        let (stride, count) = (stride as cl_ulong, len as cl_ulong);
        // SAFETY: the arguments match the kernel's signature (two global double
        // pointers, three ulongs; see `source::source_of`), and the buffers hold
        // `inputs · stride` and `outputs · stride` values.
        unsafe {
            k.set_arg(0, &input.get())
                .map_err(|e| fail("clSetKernelArg", e))?;
            k.set_arg(1, &output.get())
                .map_err(|e| fail("clSetKernelArg", e))?;
            k.set_arg(2, &stride)
                .map_err(|e| fail("clSetKernelArg", e))?;
            k.set_arg(3, &count)
                .map_err(|e| fail("clSetKernelArg", e))?;
            k.set_arg(4, &ZERO).map_err(|e| fail("clSetKernelArg", e))?;
        }
        let local = self.gpu.local;
        #[cfg(test)]
        let local = super::faults::local(local);
        let global = len.div_ceil(local) * local;
        // SAFETY: one dimension; the work sizes live across the call.
        unsafe {
            self.gpu.queue.enqueue_nd_range_kernel(
                k.get(),
                1,
                std::ptr::null(),
                &global,
                &local,
                &[],
            )
        }
        .map_err(|e| fail("clEnqueueNDRangeKernel", e))?;
        Ok(())
    }

    /// Runs the kernel over device-resident columns and waits for it.
    pub(crate) fn launch_resident(
        &self,
        input: &Buffer<cl_double>,
        output: &Buffer<cl_double>,
        len: usize,
    ) -> Result<(), Error> {
        if len == 0 {
            return Ok(());
        }
        let work = self.lock();
        self.enqueue(&work, input, output, len, len)?;
        self.gpu
            .queue
            .finish()
            .map_err(|e| launch_error(self.lane, "clFinish", e))
    }

    /// Runs the kernel over host columns: copies `host`'s inputs in, launches, copies its
    /// outputs back, in chunks that fit the device's largest buffer.
    ///
    /// # Errors
    /// [`Error::DeviceLaunch`]; the outputs may then be partly written.
    pub(crate) fn run_host(&self, host: &HostColumns<'_>) -> Result<(), Error> {
        let len = host.len;
        if len == 0 {
            return Ok(());
        }
        let columns = self.inputs.max(self.outputs).max(1) as u64;
        let fits = (self.gpu.max_alloc / 8 / columns).max(1);
        let chunk = (len as u64).min(fits).min(MAX_CHUNK) as usize;
        let mut work = self.lock();
        let (capacity, mut input, output) = match work.staged.take() {
            Some((c, i, o)) if c >= chunk => (c, i, o),
            _ => (
                chunk,
                self.buffer(self.inputs * chunk, true)?,
                self.buffer(self.outputs * chunk, false)?,
            ),
        };
        let mut start = 0;
        let mut done = Ok(());
        while start < len && done.is_ok() {
            let n = chunk.min(len - start);
            done = self.chunk(&work, host, &mut input, &output, start, n);
            // Whatever was enqueued completes before the host slices are let go.
            let finished = self.gpu.queue.finish();
            if done.is_ok() {
                done = finished.map_err(|e| launch_error(self.lane, "clFinish", e));
            }
            start += n;
        }
        work.staged = Some((capacity, input, output));
        done
    }

    /// Enqueues one chunk of `n` points from `start`: inputs in, the kernel, outputs out.
    fn chunk(
        &self,
        work: &Work,
        host: &HostColumns<'_>,
        input: &mut Buffer<cl_double>,
        output: &Buffer<cl_double>,
        start: usize,
        n: usize,
    ) -> Result<(), Error> {
        let fail = |what, e| launch_error(self.lane, what, e);
        let q = &self.gpu.queue;
        for k in 0..self.inputs {
            // SAFETY: the batch call checked that every column holds `len` values and
            // `start + n <= len`; the caller finishes the queue before the slices go.
            unsafe {
                let column = host.input(k, start, n);
                q.enqueue_write_buffer(input, CL_NON_BLOCKING, k * n * 8, column, &[])
            }
            .map_err(|e| fail("clEnqueueWriteBuffer", e))?;
        }
        self.enqueue(work, input, output, n, n)?;
        for k in 0..self.outputs {
            // SAFETY: as above; output columns are distinct and unaliased.
            unsafe {
                let column = host.output(k, start, n);
                q.enqueue_read_buffer(output, CL_NON_BLOCKING, k * n * 8, column, &[])
            }
            .map_err(|e| fail("clEnqueueReadBuffer", e))?;
        }
        Ok(())
    }
}

/// Points per chunk of a batch call that copies its columns: at most this many are on
/// the device at once (the buffers are reused across calls).
const MAX_CHUNK: u64 = 1 << 22;

/// A batch call's host columns as raw base pointers, all `len` long (checked by the
/// batch call).
pub(crate) struct HostColumns<'a> {
    pub(crate) len: usize,
    pub(crate) inputs: &'a [*const f64],
    pub(crate) outputs: &'a [*mut f64],
}

impl HostColumns<'_> {
    /// Input column `k`, points `start..start + n`.
    ///
    /// # Safety
    /// Every input pointer must address `len` readable values, and `start + n <= len`.
    unsafe fn input(&self, k: usize, start: usize, n: usize) -> &[f64] {
        unsafe { std::slice::from_raw_parts(self.inputs[k].add(start), n) }
    }

    /// Output column `k`, points `start..start + n`.
    ///
    /// # Safety
    /// Every output pointer must address `len` writable values no other reference
    /// reaches while the slice lives, and `start + n <= len`.
    #[allow(clippy::mut_from_ref)]
    unsafe fn output(&self, k: usize, start: usize, n: usize) -> &mut [f64] {
        unsafe { std::slice::from_raw_parts_mut(self.outputs[k].add(start), n) }
    }
}
