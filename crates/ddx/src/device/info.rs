//! [`DeviceInfo`]: what names the device answering (both builds, with and without the
//! `opencl` feature).

use std::fmt;

/// The device answering an equation's lanes: what `Equation::device_status` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The OpenCL platform's name (`NVIDIA CUDA`, `Portable Computing Language`).
    pub platform: String,
    /// The device's name.
    pub device: String,
    /// The driver's version.
    pub driver: String,
    /// The OpenCL version the device supports, as it spells it.
    pub version: String,
}

/// `<platform> / <device> / <driver> / <version>`.
impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} / {} / {} / {}",
            self.platform, self.device, self.driver, self.version
        )
    }
}
