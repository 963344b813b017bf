//! `ddx._ddx`: the compiled half of the Python package `ddx` (distribution `ddx-ad`).
//!
//! The pure-Python layer (`python/ddx/`) re-exports what is here and adds what is easier
//! in Python: [`Options`](../python/ddx/_options.py) as a pydantic model, the `errc` enum
//! and the `ddx.Error` exception, and the dispatch of `ddx.equation`.
//!
//! Module map:
//! - [`errors`]: the one conversion from [`ddx::Error`] to `ddx.Error`, in Python's
//!   spellings;
//! - [`args`]: integer arguments (orders, indices, counts, lanes) read as any `int` and
//!   range-checked into `ddx.Error`;
//! - [`expression`]: `Expression`, `var`, the free functions and `select`;
//! - [`function`]: `Function`, user functions written in Python with their partials;
//! - [`points`]: reading a point, a direction or a batch from any Python spelling;
//! - [`blocks`]: running one lane over columns into dense NumPy answers;
//! - [`equation`]: `Equation` and its calls;
//! - [`call`]: `Call`, the preallocated buffers of `Equation.buffer`;
//! - [`device`]: `DeviceColumns`, a lane's columns resident on an OpenCL device;
//! - [`options`]: `Options` across the boundary;
//! - [`shape`]: an equation of either shape (`Scalar`, `System`), as Rust has them.
//!
//! Invariants: nothing here panics on what a Python caller passes (every size is checked
//! before an array is allocated or a slice taken); the GIL is released for every batch
//! call and every wait for the compiler, and never while a Python object is touched.

#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

use pyo3::prelude::*;

mod args;
mod blocks;
mod call;
mod device;
mod equation;
mod errors;
mod expression;
mod function;
mod names;
mod options;
mod points;
mod shape;

/// The extension module `ddx._ddx`.
#[pymodule]
fn _ddx(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", ddx::VERSION)?;
    m.add(
        "version_info",
        (ddx::VERSION_MAJOR, ddx::VERSION_MINOR, ddx::VERSION_PATCH),
    )?;
    // Which source tree built this module: scripts/test sets it and checks it, since
    // worktrees sharing one cargo target directory overwrite each other's `lib_ddx.so`.
    m.add(
        "_build_stamp",
        option_env!("DDX_PYTHON_BUILD_STAMP").unwrap_or_default(),
    )?;
    m.add("has_jit", cfg!(feature = "jit"))?;
    m.add("has_opencl", cfg!(feature = "opencl"))?;
    m.add("ERRC_NAMES", errors::names())?;
    m.add("MAX_ORDER", ddx::MAX_ORDER)?;
    m.add_function(wrap_pyfunction!(default_options, m)?)?;
    expression::register(m)?;
    function::register(m)?;
    equation::register(m)?;
    m.add_class::<call::Call>()?;
    m.add_class::<device::DeviceColumns>()?;
    Ok(())
}

/// The Rust `Options::default()` as the raw tuple `ddx._options` reads.
#[pyfunction]
fn default_options() -> options::Raw {
    options::to_raw(&ddx::Options::default())
}
