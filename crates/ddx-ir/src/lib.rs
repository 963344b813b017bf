//! `ddx-ir`: the expression graph of ddx and everything that transforms it.
//!
//! A model is built into a hash-consed, topologically ordered DAG ([`Graph`]); the
//! differentiation modes are passes that read a graph and write new nodes into it
//! ([`ad`]); a [`lane`] is the graph for one kind of call. Engines (in the `ddx` crate)
//! execute lanes exactly. The repository's
//! [ARCHITECTURE.md](https://github.com/ddx-ad/ddx/blob/main/ARCHITECTURE.md) has the map.
//!
//! Most users want the `ddx` crate, which re-exports what is needed from here.

#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod ad;
mod builder;
pub mod colour;
pub mod contract;
pub mod emit;
pub mod error;
mod expr;
pub mod fold;
pub mod graph;
mod ids;
pub mod lane;
pub mod math;
mod model;
mod op;
mod sparsity;
pub mod testing;
pub mod text;
pub mod user;
mod verify;
pub mod words;

pub use builder::{build, param, var};
pub use colour::{Colouring, HessianLayout};
pub use error::{Block, Errc, Error, PointRole, Result, UserProblem, VectorRole};
pub use expr::unary_fns::*;
pub use expr::{atan2, expm1, hypot, log, log1p, max, min, pow, powi, select, Expr};
pub use graph::{CallArgs, Constant, Graph, Node, Nodes, NO_ARG};
pub use ids::{NodeId, SeedId, SymbolId};
pub use lane::{Lane, LaneKind};
pub use model::Model;
pub use op::{Assoc, Notation, Op, MIRRORED, PREFIX_POWER};
pub use sparsity::{Cell, Sparsity};
pub use text::Formula;
pub use user::{Functions, UserFunction};
pub use verify::{verify, Violation};
