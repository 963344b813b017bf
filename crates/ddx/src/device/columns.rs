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

use super::runtime::{launch_error, LaneKernel};
use ddx_ir::{Block, Error, LaneKind};
use opencl3::memory::Buffer;
use opencl3::types::{cl_double, CL_BLOCKING};
use std::sync::Arc;

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
    pub(crate) fn new(kernel: Arc<LaneKernel>, kind: LaneKind, len: usize) -> Result<Self, Error> {
        let input = kernel.buffer(kernel.inputs.saturating_mul(len), true)?;
        let output = kernel.buffer(kernel.outputs.saturating_mul(len), false)?;
        Ok(DeviceColumns {
            kernel,
            kind,
            len,
            input,
            output,
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

    /// Copies output columns `first, first + 1, …` from the device into `columns`.
    ///
    /// # Errors
    /// [`Error::WrongColumnCount`], [`Error::ColumnLength`] as for
    /// [`write`](DeviceColumns::write) (nothing is copied then); [`Error::DeviceLaunch`]
    /// when the device refuses the copy.
    pub fn read(&self, first: usize, columns: &mut [&mut [f64]]) -> Result<(), Error> {
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
}
