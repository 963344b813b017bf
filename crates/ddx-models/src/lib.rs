//! Reference models and datasets for ddx's tests, examples and benchmarks.
//!
//! - [`nist`]: NIST's StRD nonlinear-regression datasets and their models;
//! - [`model_text`]: the same models read from NIST's model lines through ddx's parser;
//! - [`thermo`]: four Gibbs-energy model families (regular solid solution, UNIQUAC,
//!   Peng–Robinson, a mixed-solvent electrolyte) over the tables in `data/thermo/`;
//! - [`coverage`]: a function using every operation of the expression table;
//! - [`trend`]: synthetic families of free size (a banded chain, a dense quadratic form);
//! - [`BenchModel`]: how each is written twice — natively, generic over the scalar type
//!   (`f64` or a `num-dual` dual number, see [`scalar`]), and as a ddx model closure — with
//!   its deterministic points ([`points`]).
//!
//! ```
//! use ddx_models::{equation, thermo::RegularSolution, BenchModel};
//!
//! let model = RegularSolution::new(16);
//! let eq = equation(&model)?;
//! let x = ddx_models::sample_points(&model, 1, 1);
//! assert_eq!(eq.evaluate(&x[..])?, model.eval(&x[..]));
//! # Ok::<(), ddx::Error>(())
//! ```

#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]
// The models index arrays the way their equations do (`xᵢ`, `aᵢⱼ`); iterator chains would
// hide the correspondence.
#![allow(clippy::needless_range_loop)]

pub mod coverage;
mod model;
pub mod model_text;
pub mod nist;
pub mod points;
pub mod scalar;
pub mod thermo;
pub mod trend;

pub use model::{
    equation, indexed_names, num_dual_gradient, num_dual_passes, sample_points, BenchModel,
    GradientFn, NUM_DUAL_SIZES,
};
