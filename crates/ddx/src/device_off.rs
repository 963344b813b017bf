//! The device backend's place in a build without the `opencl` feature: `Backend::Device`
//! is accepted, every call answers from the CPU, and the device status is `no_device`.
//! The OpenCL C emitter ([`source`]) is in every build.

#[path = "device/info.rs"]
mod info;
#[path = "device/source.rs"]
pub(crate) mod source;

pub use info::DeviceInfo;

use crate::options::{Backend, Options};
use crate::prepared::PreparedLanes;
use ddx_ir::{Error, LaneKind};
use std::sync::Arc;
use std::time::Duration;

/// Device-resident columns, of which this build makes none (it has no device backend).
#[derive(Debug)]
pub struct DeviceColumns {
    never: std::convert::Infallible,
}

impl DeviceColumns {
    /// The point count.
    pub fn len(&self) -> usize {
        match self.never {}
    }
    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        match self.never {}
    }
    /// The lane's input columns.
    pub fn inputs(&self) -> usize {
        match self.never {}
    }
    /// The lane's output columns.
    pub fn outputs(&self) -> usize {
        match self.never {}
    }
    /// Copies input columns to the device.
    ///
    /// # Errors
    /// None in this build: no value of this type exists.
    pub fn write(&mut self, _first: usize, _columns: &[&[f64]]) -> Result<(), Error> {
        match self.never {}
    }
    /// Runs the lane's kernel.
    ///
    /// # Errors
    /// None in this build: no value of this type exists.
    pub fn run(&mut self) -> Result<(), Error> {
        match self.never {}
    }
    /// Copies output columns from the device.
    ///
    /// # Errors
    /// None in this build: no value of this type exists.
    pub fn read(&self, _first: usize, _columns: &mut [&mut [f64]]) -> Result<(), Error> {
        match self.never {}
    }
}

/// A device kernel, of which this build has none.
#[derive(Debug)]
pub(crate) enum LaneKernel {}

/// A batch call's host columns (never read in this build: no kernel runs them).
#[allow(dead_code)]
pub(crate) struct HostColumns<'a> {
    pub(crate) len: usize,
    pub(crate) inputs: &'a [*const f64],
    pub(crate) outputs: &'a [*mut f64],
}

/// Whether the backend is `Device` (then every answer is the CPU's).
#[derive(Clone, Debug, Default)]
pub(crate) struct Device {
    active: bool,
}

fn absent() -> Error {
    Error::NoDevice {
        detail: "this build of ddx has no device backend (cargo feature \"opencl\")".into(),
    }
}

impl Device {
    pub(crate) fn new(
        options: &Options,
        _lanes: &Arc<PreparedLanes>,
        _prepared: &[LaneKind],
    ) -> Device {
        Device {
            active: options.backend == Backend::Device,
        }
    }
    pub(crate) fn active(&self) -> bool {
        self.active
    }
    #[inline]
    pub(crate) fn batch(
        &self,
        _lanes: &Arc<PreparedLanes>,
        _kind: LaneKind,
    ) -> Option<&Arc<LaneKernel>> {
        None
    }
    pub(crate) fn run(
        &self,
        kernel: &LaneKernel,
        _kind: LaneKind,
        _host: &HostColumns<'_>,
    ) -> bool {
        match *kernel {}
    }
    pub(crate) fn uses_kernel(&self, _kind: LaneKind) -> bool {
        false
    }
    pub(crate) fn wait(&self, _lanes: &Arc<PreparedLanes>, _kind: LaneKind) -> bool {
        false
    }
    pub(crate) fn status(&self) -> Option<Result<DeviceInfo, Error>> {
        self.active.then(|| Err(absent()))
    }
    pub(crate) fn build_time(&self, _kind: LaneKind) -> Option<Duration> {
        None
    }
    pub(crate) fn columns(
        &self,
        _lanes: &Arc<PreparedLanes>,
        _kind: LaneKind,
        _len: usize,
    ) -> Result<DeviceColumns, Error> {
        Err(absent())
    }
}
