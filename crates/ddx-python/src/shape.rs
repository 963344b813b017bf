//! [`AnyEquation`]: a Rust equation of either shape, as Python holds it.
//!
//! A model returning one expression (or one text) is an `Equation<Scalar>`, a tuple (or a
//! list of texts) an `Equation<System>`, exactly as in Rust, so a file saved from Python
//! loads in Rust as the same shape and the other way round. Everything the Python layer
//! asks of an equation is generic over the shape; [`on!`] dispatches.

use ddx::{Equation, Error, JitStatus, LaneKind, Model, Options, Scalar, Sparsity, System};
use std::path::Path;

/// An equation of one output (`Scalar`) or a system (`System`).
#[derive(Clone)]
pub(crate) enum AnyEquation {
    /// Built from one expression or one text.
    Scalar(Equation<Scalar>),
    /// Built from a tuple of expressions or a list of texts.
    System(Equation<System>),
}

/// Runs `$body` with `$eq` bound to the equation of whichever shape `$any` holds.
macro_rules! on {
    ($any:expr, $eq:ident => $body:expr) => {
        match $any {
            $crate::shape::AnyEquation::Scalar($eq) => $body,
            $crate::shape::AnyEquation::System($eq) => $body,
        }
    };
}
pub(crate) use on;

impl AnyEquation {
    /// The equation of `model`: a system when `system`, else a scalar function.
    pub(crate) fn from_model(model: Model, system: bool) -> Result<Self, Error> {
        Ok(if system {
            AnyEquation::System(Equation::from(model))
        } else {
            AnyEquation::Scalar(Equation::try_from(model)?)
        })
    }

    /// The equation `bytes` hold, of the shape they were saved as.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        match Equation::<Scalar>::from_bytes(bytes) {
            Ok(e) => Ok(AnyEquation::Scalar(e)),
            Err(Error::ArchiveMismatch { .. }) => {
                Equation::<System>::from_bytes(bytes).map(AnyEquation::System)
            }
            Err(e) => Err(e),
        }
    }

    /// The equation saved at `path`, of the shape it was saved as.
    pub(crate) fn load(path: &Path) -> Result<Self, Error> {
        match Equation::<Scalar>::load(path) {
            Ok(e) => Ok(AnyEquation::Scalar(e)),
            Err(Error::ArchiveMismatch { .. }) => {
                Equation::<System>::load(path).map(AnyEquation::System)
            }
            Err(e) => Err(e),
        }
    }

    pub(crate) fn remembers(&self) -> bool {
        on!(self, e => e.remembers())
    }
    pub(crate) fn is_system(&self) -> bool {
        matches!(self, AnyEquation::System(_))
    }
    pub(crate) fn arity(&self) -> usize {
        on!(self, e => e.arity())
    }
    pub(crate) fn outputs(&self) -> usize {
        on!(self, e => e.outputs())
    }
    pub(crate) fn symbols(&self) -> &[String] {
        on!(self, e => e.symbols())
    }
    pub(crate) fn parameters(&self) -> &[String] {
        on!(self, e => e.parameters())
    }
    /// The same equation with its parameters bound to `values` (canonical order).
    pub(crate) fn with_params(&self, values: &[f64]) -> Result<Self, Error> {
        Ok(match self {
            AnyEquation::Scalar(e) => AnyEquation::Scalar(e.with_params(values)?),
            AnyEquation::System(e) => AnyEquation::System(e.with_params(values)?),
        })
    }
    pub(crate) fn evaluate_into(&self, x: &[f64], out: &mut [f64]) -> Result<(), Error> {
        on!(self, e => e.evaluate_into(x, out))
    }
    pub(crate) fn options(&self) -> &Options {
        on!(self, e => e.options())
    }
    pub(crate) fn set_options(&mut self, o: Options) {
        on!(self, e => { e.set_options(o); })
    }
    pub(crate) fn uses_kernel_of(&self, want: LaneKind) -> bool {
        on!(self, e => e.uses_kernel_of(want))
    }
    pub(crate) fn device_status(&self) -> Option<Result<ddx::cl::DeviceInfo, Error>> {
        on!(self, e => e.device_status())
    }
    pub(crate) fn device_columns(
        &self,
        want: LaneKind,
        points: usize,
    ) -> Result<ddx::cl::DeviceColumns, Error> {
        on!(self, e => e.device_columns(want, points))
    }
    pub(crate) fn wait_for_kernel_of(&self, want: LaneKind) -> bool {
        on!(self, e => e.wait_for_kernel_of(want))
    }
    pub(crate) fn jit_status(&self) -> JitStatus {
        on!(self, e => e.jit_status())
    }
    pub(crate) fn to_dot(&self, all: bool) -> String {
        on!(self, e => e.to_dot(all))
    }
    pub(crate) fn nodes(&self, want: LaneKind) -> usize {
        on!(self, e => e.nodes(want))
    }
    pub(crate) fn text(&self) -> String {
        on!(self, e => e.to_string())
    }
    pub(crate) fn hessian_colors(&self) -> usize {
        on!(self, e => e.hessian_colors())
    }
    pub(crate) fn jacobian_pattern(&self) -> &Sparsity {
        on!(self, e => e.jacobian_pattern())
    }
    pub(crate) fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        on!(self, e => e.to_bytes())
    }
    pub(crate) fn save(&self, path: &Path) -> Result<(), Error> {
        on!(self, e => e.save(path))
    }
    pub(crate) fn verify(&self, path: &Path) -> Result<(), Error> {
        on!(self, e => e.verify(path))
    }
    pub(crate) fn loaded(&self) -> bool {
        on!(self, e => e.loaded())
    }
}
