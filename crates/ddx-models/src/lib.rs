//! Reference models and datasets for ddx's tests, examples and benchmarks.
//!
//! - [`nist`]: NIST's StRD nonlinear-regression datasets and their models.
//! - [`model_text`]: the same models read from NIST's model lines through ddx's parser.

#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod model_text;
pub mod nist;
