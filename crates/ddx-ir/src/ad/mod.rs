//! Differentiation as graph-to-graph passes.
//!
//! - [`rules`] is the one place each operation's local derivative is written down; forward
//!   and reverse mode both read it.
//! - [`forward`] pushes tangents up the graph (`jvp`, and forward-over-reverse for the
//!   Hessian lanes).
//! - [`reverse`] pulls adjoints down the graph (gradients, Jacobian rows, `vjp`).
//! - [`hessian`] runs forward mode over the reverse graph: `H·v`, the Hessian's structural
//!   pattern, and the colour-compressed columns (with [`crate::colour`]).
//! - [`tensor`] nests forward mode over the reverse sweep: every partial of any order.
//! - [`taylor`] is not a graph pass but an evaluation: truncated Taylor arithmetic over
//!   the value graph, for K-th derivatives along a line.
//!
//! Both passes *append* to the graph they are given, so value nodes keep their ids and the
//! derivative nodes share them through hash-consing; a lane then [`extract`s](crate::Graph::extract)
//! what its outputs need.
//!
//! **The `select` rule.** A derivative flowing through an arm of `select(c, t, f)` (and
//! through the operand `max`/`min` did not answer, and through `pow`, `atan2` and `hypot`
//! at their singular points) is *guarded*: it counts only where the condition holds.
//! Forward mode writes the guard as a `select` around the tangent; reverse mode carries
//! the guard down with the adjoint to every symbol it reaches and applies it there, so an
//! untaken arm's NaN or infinite local partial never multiplies a masked zero. The
//! condition itself is never differentiated.

pub mod forward;
mod guard;
pub mod hessian;
pub mod reverse;
pub mod rules;
pub mod taylor;
pub mod tensor;

/// What a derivative pass knows of one node's tangent or adjoint: `None` is a structural
/// zero (no node is made for it).
pub type Deriv = Option<crate::NodeId>;
