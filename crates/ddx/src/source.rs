//! Generated source: a lane as a standalone Rust or C function (`ddx_ir::emit`), for
//! embedding a model in firmware or another build without ddx.

use crate::{Equation, Error, LaneKind, Shape};
use ddx_ir::emit;

impl<S: Shape> Equation<S> {
    /// The lane `lane` as a standalone Rust function `name` (no dependency on ddx; math
    /// through `std`, and the C library's `erf`):
    ///
    /// ```text
    /// pub [const] fn name(x: &[f64; n][, seeds: &[f64; s]]) -> [f64; m]
    /// ```
    ///
    /// `x` in canonical symbol order, `seeds` the lane's direction or weights when it has
    /// any, the result in the lane's output layout (`ddx::ir::lane` describes each). It is
    /// a `const fn` when every operation can be evaluated in a constant
    /// ([`ddx_ir::emit::const_evaluable`]). The function answers the calls' bits
    /// for the lane as prepared under the equation's options (for `jvp` and `hvp`, with
    /// the zero-skipping twin the calls answer with where the plain lane gives a NaN,
    /// [`ddx_ir::emit::rust_mended`]) (with fused multiply-adds
    /// where `codegen.contract` is on), except where `erf` is used: the C library's `erf`
    /// differs from ddx's in the last bit for about 1% of arguments
    /// (`ddx_ir::emit` lists what depends on the platform).
    ///
    /// ```
    /// let eq = ddx::rt::equation(|| ddx::rt::var("x") * ddx::rt::var("y"))?;
    /// let src = eq.to_rust_source("grad_xy", ddx::LaneKind::Gradient)?;
    /// assert!(src.contains("pub const fn grad_xy(x: &[f64; 2]) -> [f64; 2]"));
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::BadName`] when `name` is not an identifier both Rust and C accept
    /// ([`ddx_ir::emit::check_name`]); [`Error::TensorLane`] for [`LaneKind::Tensor`].
    pub fn to_rust_source(&self, name: &str, lane: LaneKind) -> Result<String, Error> {
        emit::check_name(name)?;
        let main = self.lane(lane)?;
        let style = emit::RustStyle::default();
        match self.twin(lane) {
            Some(twin) => emit::rust_mended(
                main,
                &twin.lane,
                self.prepared(lane).first_product(),
                self.model().inputs(),
                name,
                &style,
            ),
            None => emit::rust(main, self.model().inputs(), name, &style),
        }
    }

    /// The lane `lane` as a standalone C function `name`, preceded by
    /// `#include <math.h>` and the small helpers it calls (guarded, so several emitted
    /// functions can share one file):
    ///
    /// ```text
    /// void name(const double *x, const double *seeds, double *out)
    /// ```
    ///
    /// `x` holds the `n` symbols in canonical order (then the `p` parameters), `seeds` the lane's `s` extra inputs
    /// (`NULL` when it has none), `out` receives the lane's outputs. Compile with
    /// `-ffp-contract=off` and without `-ffast-math`, link `-lm`; it then answers the
    /// interpreter's bits except where `erf` or `cbrt` is used: the C library's differ
    /// from ddx's (Rust's correctly rounded `cbrt`) in the last bit (`ddx_ir::emit`).
    ///
    /// # Errors
    /// [`Error::BadName`] when `name` is not an identifier both Rust and C accept;
    /// [`Error::TensorLane`] for [`LaneKind::Tensor`].
    pub fn to_c_source(&self, name: &str, lane: LaneKind) -> Result<String, Error> {
        emit::check_name(name)?;
        let main = self.lane(lane)?;
        match self.twin(lane) {
            Some(twin) => emit::c_mended(
                main,
                &twin.lane,
                self.prepared(lane).first_product(),
                self.model().inputs(),
                name,
            ),
            None => emit::c(main, self.model().inputs(), name),
        }
    }
}
