//! Reference models and datasets for ddx's tests, examples and benchmarks.
//!
//! - [`nist`]: NIST's StRD nonlinear-regression datasets and their models.

#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod nist;
