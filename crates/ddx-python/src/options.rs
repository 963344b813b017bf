//! `Options` across the boundary.
//!
//! The Python `ddx.Options` is a frozen pydantic model (`ddx/_options.py`) that validates
//! every field on the way in; it crosses as a flat tuple, [`Raw`], which this module turns
//! into [`ddx::Options`] and back. The tuple's layout is private to the two modules.

use ddx::{Backend, Lanes, OptLevel, Options};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;

/// `(backend, points, lanes, opt_level, contract, warm_points, hot_points, retain_object,
/// cache_dir, device, answer_limit)`; `backend` 0–3 as `Backend`'s variants, `lanes` `-1` for
/// `Derived`, `0` for `Scalar` and `k` for `Exactly(k)`, `opt_level` 0 (`Off`) or 1
/// (`Speed`).
pub(crate) type Raw = (
    u8,
    usize,
    i64,
    u8,
    bool,
    u64,
    u64,
    bool,
    Option<PathBuf>,
    Option<String>,
    usize,
);

/// The raw tuple of `o`.
pub(crate) fn to_raw(o: &Options) -> Raw {
    let backend = match o.backend {
        Backend::Interpret => 0,
        Backend::Compile => 1,
        Backend::Adapt => 2,
        _ => 3,
    };
    let lanes = match o.codegen.lanes {
        Lanes::Derived => -1,
        Lanes::Scalar => 0,
        Lanes::Exactly(k) => i64::from(k),
        _ => -1,
    };
    let opt_level = match o.codegen.opt_level {
        OptLevel::Off => 0,
        _ => 1,
    };
    (
        backend,
        o.points,
        lanes,
        opt_level,
        o.codegen.contract,
        o.warm_points,
        o.hot_points,
        o.retain_object,
        o.cache_dir.clone(),
        o.device.clone(),
        o.answer_limit,
    )
}

/// The options of a raw tuple (already validated by pydantic; checked again here).
pub(crate) fn from_raw(raw: Raw) -> PyResult<Options> {
    let (backend, points, lanes, opt_level, contract, warm, hot, retain, cache_dir, device, limit) =
        raw;
    let mut o = Options::default();
    o.backend = match backend {
        0 => Backend::Interpret,
        1 => Backend::Compile,
        2 => Backend::Adapt,
        3 => Backend::Device,
        b => return Err(PyValueError::new_err(format!("no backend numbered {b}"))),
    };
    o.points = points;
    o.codegen.lanes = match lanes {
        -1 => Lanes::Derived,
        0 => Lanes::Scalar,
        k => Lanes::Exactly(
            u8::try_from(k)
                .map_err(|_| PyValueError::new_err(format!("lanes = {k} is not 1 to 255")))?,
        ),
    };
    o.codegen.opt_level = match opt_level {
        0 => OptLevel::Off,
        _ => OptLevel::Speed,
    };
    o.codegen.contract = contract;
    o.warm_points = warm;
    o.hot_points = hot;
    o.retain_object = retain;
    o.cache_dir = cache_dir;
    o.device = device;
    o.answer_limit = limit;
    Ok(o)
}
