//! Device-resident columns: a lane's input and output columns kept in device memory
//! across calls, written and read only when the caller asks.
//!
//! A sequence of batch calls over the same points then pays no transfer: write the
//! inputs once, [`DeviceColumns::run`] as often as needed (after rewriting only the
//! columns that change, a seed for instance), read the outputs that are wanted.
//!
//! **Layout**: the lane's order. Inputs are its symbols (canonical order) then its seeds;
//! outputs are its outputs (values, then partials or products, as the batch calls lay
//! them out one block after another).
//!
//! **Products that hold a NaN** (`jvp`, `hvp`): where a product column read holds a NaN
//! at a point, [`DeviceColumns::read`] answers that point from the lane's zero-skipping
//! twin on the CPU, as the batch and per-point calls do (so `0 · ∞` from a zero
//! direction does not poison a product): it reads that point's inputs back and runs the
//! twin there. Reading every output column answers exactly what a batch call answers.
//! The inputs read back are those on the device when `read` is called: read a run's
//! outputs before writing the next inputs.

use super::runtime::{launch_error, LaneKernel};
use crate::prepared::PreparedLanes;
use ddx_ir::{Block, Error, LaneKind};
use opencl3::memory::Buffer;
use opencl3::types::{cl_double, CL_BLOCKING};
use std::sync::Arc;

/// Up to this many points to answer from the twin, [`DeviceColumns::read`] reads their
/// inputs back value by value; more, column by column.
const FEW_POINTS: usize = 64;

/// A lane's columns of `len` points in device memory, and the kernel that runs over them.
///
/// Made by [`Equation::device_columns`](crate::Equation::device_columns). Holds the
/// device's memory until dropped.
pub struct DeviceColumns {
    kernel: Arc<LaneKernel>,
    kind: LaneKind,
    len: usize,
    input: Buffer<cl_double>,
    output: Buffer<cl_double>,
    /// For a lane with a zero-skipping twin (`jvp`, `hvp`): the lanes and the `contract`
    /// option the kernel was built under, to answer points whose products hold a NaN.
    twin: Option<(Arc<PreparedLanes>, bool)>,
}

impl std::fmt::Debug for DeviceColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceColumns")
            .field("lane", &self.kind)
            .field("len", &self.len)
            .field("inputs", &self.inputs())
            .field("outputs", &self.outputs())
            .finish()
    }
}

impl DeviceColumns {
    pub(crate) fn new(
        kernel: Arc<LaneKernel>,
        kind: LaneKind,
        len: usize,
        twin: Option<(Arc<PreparedLanes>, bool)>,
    ) -> Result<Self, Error> {
        let input = kernel.buffer(kernel.inputs.saturating_mul(len), true)?;
        let output = kernel.buffer(kernel.outputs.saturating_mul(len), false)?;
        Ok(DeviceColumns {
            kernel,
            kind,
            len,
            input,
            output,
            twin,
        })
    }

    /// The point count.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The lane's input columns: symbols, then seeds.
    pub fn inputs(&self) -> usize {
        self.kernel.inputs
    }

    /// The lane's output columns.
    pub fn outputs(&self) -> usize {
        self.kernel.outputs
    }

    /// Checks that `columns` are `len` long and fit from column `first` of `count`.
    fn check<T: AsRef<[f64]>>(
        &self,
        block: Block,
        first: usize,
        columns: &[T],
        count: usize,
    ) -> Result<(), Error> {
        if first.saturating_add(columns.len()) > count {
            return Err(Error::WrongColumnCount {
                block,
                expected: count.saturating_sub(first),
                got: columns.len(),
            });
        }
        for (column, c) in columns.iter().enumerate() {
            if c.as_ref().len() != self.len {
                return Err(Error::ColumnLength {
                    block,
                    column: first + column,
                    expected: self.len,
                    got: c.as_ref().len(),
                });
            }
        }
        Ok(())
    }

    /// Copies `columns` to the device as input columns `first, first + 1, …`.
    ///
    /// # Errors
    /// [`Error::WrongColumnCount`] when they run past the lane's inputs,
    /// [`Error::ColumnLength`] when one is not [`len`](DeviceColumns::len) long (nothing is
    /// copied then); [`Error::DeviceLaunch`] when the device refuses the copy.
    pub fn write(&mut self, first: usize, columns: &[&[f64]]) -> Result<(), Error> {
        self.check(Block::Points, first, columns, self.inputs())?;
        let q = &self.kernel.gpu.queue;
        for (k, c) in columns.iter().enumerate() {
            if self.len == 0 {
                break;
            }
            // SAFETY: the buffer holds `inputs · len` values and column `first + k` lies
            // inside it; the copy is blocking, so `c` outlives it.
            unsafe {
                q.enqueue_write_buffer(
                    &mut self.input,
                    CL_BLOCKING,
                    (first + k) * self.len * 8,
                    c,
                    &[],
                )
            }
            .map_err(|e| launch_error(self.kind.name(), "clEnqueueWriteBuffer", e))?;
        }
        Ok(())
    }

    /// Runs the lane's kernel over the resident columns and waits for it.
    ///
    /// # Errors
    /// [`Error::DeviceLaunch`] when the launch fails (the outputs are then undefined;
    /// an equation's batch calls still answer from the CPU).
    pub fn run(&mut self) -> Result<(), Error> {
        self.kernel
            .launch_resident(&self.input, &self.output, self.len)
    }

    /// Copies output columns `first, first + 1, …` from the device into `columns`; at a
    /// point where a product column read holds a NaN, the twin's answer at the inputs on
    /// the device now (see the module documentation).
    ///
    /// # Errors
    /// [`Error::WrongColumnCount`], [`Error::ColumnLength`] as for
    /// [`write`](DeviceColumns::write) (nothing is copied then); [`Error::DeviceLaunch`]
    /// when the device refuses the copy.
    pub fn read(&self, first: usize, columns: &mut [&mut [f64]]) -> Result<(), Error> {
        self.read_plain(first, columns)?;
        self.mend(first, columns)
    }

    /// [`DeviceColumns::read`] without the twin.
    fn read_plain(&self, first: usize, columns: &mut [&mut [f64]]) -> Result<(), Error> {
        self.check(Block::Values, first, columns, self.outputs())?;
        let q = &self.kernel.gpu.queue;
        for (k, c) in columns.iter_mut().enumerate() {
            if self.len == 0 {
                break;
            }
            // SAFETY: as in `write`; the copy is blocking.
            unsafe {
                q.enqueue_read_buffer(
                    &self.output,
                    CL_BLOCKING,
                    (first + k) * self.len * 8,
                    c,
                    &[],
                )
            }
            .map_err(|e| launch_error(self.kind.name(), "clEnqueueReadBuffer", e))?;
        }
        Ok(())
    }

    /// Answers from the twin, in `columns` (output columns `first, …`, as read), the
    /// points where one of them that is a product holds a NaN.
    fn mend(&self, first: usize, columns: &mut [&mut [f64]]) -> Result<(), Error> {
        let Some((lanes, contract)) = &self.twin else {
            return Ok(());
        };
        let first_product = lanes.prepared(self.kind, *contract).first_product();
        let skip = first_product.saturating_sub(first);
        let points: Vec<usize> = (0..self.len)
            .filter(|&k| columns.iter().skip(skip).any(|c| c[k].is_nan()))
            .collect();
        if points.is_empty() {
            return Ok(());
        }
        let Some(twin) = lanes.twin(self.kind, *contract) else {
            return Ok(());
        };
        // The points' inputs, point-major: value by value for a few points, else column by
        // column (one transfer each, gathered).
        let inputs = self.inputs();
        let mut x = vec![0.0; points.len() * inputs];
        if points.len() <= FEW_POINTS {
            for (p, &k) in points.iter().enumerate() {
                for j in 0..inputs {
                    self.read_input(j * self.len + k, &mut x[p * inputs + j..][..1])?;
                }
            }
        } else {
            let mut column = vec![0.0; self.len];
            for j in 0..inputs {
                self.read_input(j * self.len, &mut column)?;
                for (p, &k) in points.iter().enumerate() {
                    x[p * inputs + j] = column[k];
                }
            }
        }
        let program = twin.program();
        let mut out = vec![0.0; self.outputs()];
        for (p, &k) in points.iter().enumerate() {
            // The twin has the lane's inputs and outputs; a device lane has no user call.
            let ran = program.run(&x[p * inputs..][..inputs], &mut out);
            debug_assert!(ran.is_ok(), "{ran:?}");
            for (c, v) in columns.iter_mut().zip(&out[first..]) {
                c[k] = *v;
            }
        }
        Ok(())
    }

    /// Copies `into.len()` values of the input buffer from value `at` on.
    fn read_input(&self, at: usize, into: &mut [f64]) -> Result<(), Error> {
        // SAFETY: callers read inside the buffer, which holds `inputs · len` values; the
        // copy is blocking.
        unsafe {
            self.kernel
                .gpu
                .queue
                .enqueue_read_buffer(&self.input, CL_BLOCKING, at * 8, into, &[])
        }
        .map(|_| ())
        .map_err(|e| launch_error(self.kind.name(), "clEnqueueReadBuffer", e))
    }
}
