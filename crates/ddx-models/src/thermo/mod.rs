//! Gibbs-energy models of chemical thermodynamics, the four model families of the compare
//! benchmark, and the tables they read.
//!
//! Every model is written twice (see [`BenchModel`](crate::BenchModel)): natively, generic
//! over the scalar type, and as a ddx model closure. Each type's documentation states its
//! equations, units, parameter sources, and which parameters are synthetic because
//! `data/thermo/` does not carry them.

pub mod data;
mod electrolyte;
mod peng_robinson;
mod regular;
mod uniquac;

pub use data::{Component, DataError, ThermoData};
pub use electrolyte::{Electrolyte, Solvent, DH_A_WATER, DH_B_WATER, SOLVENTS, SR_A1};
pub use peng_robinson::{PengRobinson, PR_P, PR_T};
pub use regular::RegularSolution;
pub use uniquac::{Uniquac, UNIQUAC_T};

/// The molar gas constant `R`, J/(mol·K) (CODATA 2018, exact).
pub const GAS_CONSTANT: f64 = 8.314_462_618;
