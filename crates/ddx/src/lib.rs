//! # ddx — automatic differentiation over a runtime expression graph
//!
//! Build a function over named symbols while the program runs — a closure that loops over
//! a data file, or a text such as `"sin(x)*y + 3"` — and ask it for values, gradients,
//! Jacobians, Hessians, the products `J·v`, `wᵀ·J` and `H·v`, and Taylor derivatives of any
//! order: one point at a time, or a batch of millions of points over columns, interpreted
//! or compiled to machine code. Derivatives are exact to the last bit of the graph they
//! come from, and every engine answers the same bits.
//!
//! ```
//! use ddx::{rt, select, Expr};
//!
//! // Huber loss of the fit m(t) = a·exp(−b·t).
//! let data = [(0.0, 2.00), (1.0, 1.21), (2.0, 0.74), (3.0, 0.45)];
//! let delta = 0.05;
//! let eq = rt::equation(|| {
//!     let a = rt::var("a");
//!     let b = rt::var("b");
//!     let mut loss = Expr::from(0.0);
//!     for &(t, y) in &data {
//!         let r = y - a * (-b * t).exp();
//!         loss += select(r.abs().lt(delta), r * r, delta * (2.0 * r.abs() - delta));
//!     }
//!     loss
//! })?;
//!
//! assert_eq!(eq.symbols(), ["a", "b"]);
//! let f = eq.evaluate([2.0, 0.5])?;                    // positional: alphabetical order
//! let g = eq.jacobian([("b", 0.5), ("a", 2.0)])?;     // by name, any order
//! let (f2, g2) = eq.value_and_gradient([2.0, 0.5])?;  // both from one sweep
//! assert!((f - 4.1343959887e-05).abs() < 1e-15);
//! assert_eq!((f2, g2), (f, g));
//! # Ok::<(), ddx::Error>(())
//! ```
//!
//! ## A tour
//!
//! **Building an equation.** [`rt::equation`] runs a closure that names symbols with
//! [`rt::var`] and combines [`Expr`]s with operators, methods (`x.sin()`, `x.powi(3)`) and
//! the free functions ([`select`], [`pow`], [`max`], …); returning an array or a `Vec` of
//! them makes a [`System`]. The same equations come from text: [`rt::equation_text`] (or
//! `"…".parse::<Equation>()`), [`rt::system_text`], and [`rt::parse_expr`] inside a closure,
//! in Python's arithmetic ([`ir::text`] has the grammar). [`rt::equation_cached`] keeps an
//! equation in a file between runs.
//!
//! **One point at a time.** A point is any [`Point`]: a slice or array in symbol order, or
//! `(name, value)` pairs, a `HashMap`, a `BTreeMap`. On an [`Equation`]:
//! [`evaluate`](Equation::evaluate), [`gradient`](Equation::gradient) and
//! [`jacobian`](Equation::jacobian), [`value_and_gradient`](Equation::value_and_gradient),
//! [`jvp`](Equation::jvp) and [`value_and_jvp`](Equation::value_and_jvp),
//! [`vjp`](Equation::vjp), [`hessian`](Equation::hessian), [`hvp`](Equation::hvp) and
//! [`value_gradient_and_hvp`](Equation::value_gradient_and_hvp); the `_into` forms
//! ([`jacobian_into`](Equation::jacobian_into), [`hessian_into`](Equation::hessian_into),
//! …) write into a buffer, for loops. Past dense sizes, [`sparse_jacobian`](Equation::sparse_jacobian)
//! and [`sparse_hessian`](Equation::sparse_hessian) answer only the structural nonzeros
//! (a [`SparseAnswer`]). For a function of one symbol,
//! [`univariate_derivatives`](Equation::univariate_derivatives) and
//! [`taylor_coefficients`](Equation::taylor_coefficients) give every order up to `K` from
//! one sweep; [`derivative_tensor`](Equation::derivative_tensor) gives every `K`-th partial.
//!
//! **Batches.** [`evaluate_batch`](Equation::evaluate_batch),
//! [`jacobian_batch`](Equation::jacobian_batch), [`hessian_batch`](Equation::hessian_batch)
//! and the product batches take one input column per symbol and fill one output column per
//! value or structural nonzero, split over all cores. The column counts
//! ([`jacobian_columns`](Equation::jacobian_columns),
//! [`hessian_columns`](Equation::hessian_columns), …) size the buffers, and
//! [`jacobian_pattern`](Equation::jacobian_pattern) and
//! [`hessian_cell`](Equation::hessian_cell) say which cell each column holds.
//!
//! **Compiling.** [`Options`] (built in one expression: `Options::new().backend(…)`) choose
//! the engine: [`Backend::Interpret`] (the default), [`Backend::Compile`] (Cranelift, on a
//! background pool; calls interpret until the kernel lands and then answer the same bits),
//! [`Backend::Adapt`] (compile once batch traffic pays for it) and [`Backend::Device`]
//! (OpenCL, see [`cl`]). Set them with [`set_options`](Equation::set_options), block with
//! [`wait_for_kernel`](Equation::wait_for_kernel) if you must, and read
//! [`jit_status`](Equation::jit_status). Kernels run on x86-64; elsewhere the interpreter
//! answers (see [`MAX_KERNEL_NODES`] for the largest lane compiled).
//!
//! **Saving and generated code.** [`save`](Equation::save) and [`Equation::load`] keep an
//! equation with its lanes and machine code; [`to_rust_source`](Equation::to_rust_source)
//! and [`to_c_source`](Equation::to_c_source) emit plain source, and
//! `#[ddx::derivatives]` (the [`derivatives`] attribute) generates value and derivatives
//! while the program compiles.
//!
//! **Errors.** Every failure is an [`Error`] value with a code ([`Errc`]: `wrong_arity`,
//! `unknown_symbol`, `too_large`, …); nothing panics on user input. Dense answers past
//! [`Options::answer_limit`] are refused before anything is allocated.
//!
//! **Tools.** [`ir`] is the intermediate representation — graphs, lanes, the passes, the
//! text grammar — for tools that inspect or transform graphs; [`interp`] is the
//! interpreter over a lane.
//!
//! ## Semantics every call honours
//!
//! - symbols order alphabetically (byte order); naming one twice gives the same symbol;
//! - `abs'(0) = 0`, `sign' = 0`, `max`/`min` split a tie in half, `pow(a, b)` at `a == 0`
//!   answers the zeros of its constant arms, `hypot`/`atan2` have zero partials at the
//!   origin;
//! - `select(c, t, f)` evaluates both arms; the derivative is the taken arm's and **the
//!   untaken arm's derivative never reaches the result**, even where it is NaN or
//!   infinite. Elsewhere the chain rule is plain IEEE arithmetic: `sqrt(x*x)` at `x = 0`
//!   has derivative NaN (`0 · ∞`), because `sqrt'(0) = ∞`.
//!
//! The full list is in the repository's
//! [ARCHITECTURE.md, "Semantics"](https://github.com/ddx-ad/ddx/blob/main/ARCHITECTURE.md#semantics).

#![deny(missing_docs)]
#![warn(clippy::unwrap_used)]

// First, so that `Equation`'s own methods (the per-point calls) lead its page.
mod equation;

mod archive;
mod batch;
mod engine_choice;

/// Hooks for the fuzz targets in the repository's `fuzz/` (hidden: not part of the API,
/// free to change with any release).
#[doc(hidden)]
pub mod fuzzing {
    /// `body` framed as a saved equation's bytes: the header [`crate::Equation::to_bytes`]
    /// writes (this build's format version, the body's length and checksum), then `body`.
    /// The `archive` fuzz target frames random bodies with it, so they reach the loader's
    /// structure checks behind the checksum.
    pub fn frame_archive_body(body: &[u8]) -> Vec<u8> {
        crate::archive::format::frame(body)
    }
}

pub mod cache;
#[cfg(feature = "opencl")]
mod device;
#[cfg(not(feature = "opencl"))]
#[path = "device_off.rs"]
mod device;
pub mod interp;
#[cfg(feature = "jit")]
mod jit;
#[cfg(not(feature = "jit"))]
#[path = "jit_off.rs"]
mod jit;
mod options;
pub mod point;
mod prepared;
mod print;
mod source;
mod text;
mod version;

pub use archive::verify;
pub use batch::{broadcast_points, on_calling_thread, PARALLEL_WORK};
pub use cache::{CacheStats, LastValue, ValueCache};
pub use ddx_ir::{
    abs, acos, acosh, asin, asinh, atan, atan2, atanh, cbrt, cos, cosh, erf, exp, exp_m1, expm1,
    hypot, ln, ln_1p, log, log10, log1p, log2, max, min, pow, powi, recip, select, sign, sin, sinh,
    sqrt, tan, tanh, Block, Cell, Errc, Error, Expr, LaneKind, Model, Sparsity, VectorRole,
};
pub use equation::{Equation, ModelOutput, Scalar, Shape, System};
pub use options::{
    Backend, BatchEngine, Codegen, JitStatus, LaneStatus, Lanes, OptLevel, Options, Warming,
    MAX_KERNEL_NODES,
};
pub use point::{Point, Role};
pub use version::{VERSION, VERSION_MAJOR, VERSION_MINOR, VERSION_PATCH};
// Issue 4: second order (the colouring and the Hessian layout are in `ddx::ir`).
pub use equation::second_order::{SymbolRef, ValueGradientHvp, MAX_ORDER};
pub use equation::sparse::SparseAnswer;
// Issue 16: derivative tensors.
pub use equation::tensor::{MAX_TENSOR_ORDER, MAX_TENSOR_VALUES};
// Issue 3: text.
pub use ddx_ir::text::MAX_TEXT_NODES;
pub use ddx_ir::Formula;
// Issue 17: user functions with their own partials.
pub use ddx_ir::{Functions, UserFunction, UserProblem};

/// The OpenCL device backend (`Backend::Device`): the OpenCL C a lane lowers to, the
/// device answering, and columns kept in device memory across calls.
pub mod cl {
    pub use crate::device::source::{source_of, source_with, Remat};
    pub use crate::device::{DeviceColumns, DeviceInfo};
}
/// Value and derivatives of an `f64` function, generated while the program compiles.
///
/// ```
/// #[ddx::derivatives]
/// const fn f(x: f64, y: f64) -> f64 {
///     x * y + 2.0 * x
/// }
///
/// const G: [f64; 2] = f::gradient(2.0, 3.0); // evaluated by the compiler
/// const _: () = assert!(G[0] == 5.0 && G[1] == 2.0);
/// assert_eq!(f(2.0, 3.0), 10.0);
/// assert_eq!(f::hessian(2.0, 3.0), [[0.0, 1.0], [1.0, 0.0]]);
/// let t = f::derivative_tensor::<3>(1.0, 2.0); // [[[f64; 2]; 2]; 2]
/// assert_eq!(t, [[[0.0; 2]; 2]; 2]);
/// ```
///
/// The attribute reads the body into ddx's graph at expansion time, runs the passes the
/// run-time [`Equation`] runs, and emits plain Rust through the same emitter as
/// [`Equation::to_rust_source`]: the function itself (its value), and a module of the
/// same name holding
///
/// | item | answers |
/// |---|---|
/// | `f::SYMBOLS: [&str; n]` | the parameters in canonical order (byte order of the names) |
/// | `f::value(..) -> f64` | `f` |
/// | `f::gradient(..) -> [f64; n]` | `∂f/∂xᵢ`, in `SYMBOLS` order |
/// | `f::hessian(..) -> [[f64; n]; n]` | `∂²f/∂xᵢ∂xⱼ` (read like [`Equation::hessian`]) |
/// | `f::derivative_tensor::<K>(..)` | every `K`-th partial, `[[…[f64; n]…; n]; n]` (`K` deep), `1 ≤ K ≤ order` |
/// | `f::univariate_derivative::<K>(x)` | `dᴷf/dxᴷ` of a one-parameter function, `0 ≤ K ≤ order` |
///
/// Every call takes the parameters as declared; results are laid out in `SYMBOLS` order
/// (so `fn f(y: f64, x: f64)` has `gradient(y, x) == [∂f/∂x, ∂f/∂y]`). `order` is the
/// attribute's option, `#[ddx::derivatives(order = K)]` (default 3, at most 8); a `K`
/// past it does not compile. Results are the run-time interpreter's bits for the same
/// graph (same passes, same math functions), and the conventions (`select`'s untaken
/// arm, the singular points of `pow`, `atan2`, `hypot`) are the run-time ones.
///
/// **`const fn`.** An item is a `const fn` when its lane uses only what Rust evaluates
/// in constants: `+ - * /`, negation, `abs`, `sign`, comparisons, `if`/`select`, `max`,
/// `min`, `recip`, `powi(n)` with a literal `n`, and `powf` with exponent `2` or `-1`. Any other
/// function (`sin`, `sqrt`, other powers, …) makes the items that reach it ordinary
/// `fn`s. A `const fn` in the source is accepted either way (the attribute decides).
/// `derivative_tensor` and `univariate_derivative` go through a trait and are never
/// `const`.
///
/// **The body** may use: `f64` parameters (at least one; an `f64` result), float and
/// integer literals, `f64::consts::*`, `let` and `let mut` with `=`, `+=`, `-=`, `*=`,
/// `/=`; `+ - * /` and unary `-`; `if a < b { .. } else { .. }` with any comparison
/// (both arms are evaluated: it is `select`); `for i in A..B` (or `A..=B`) with bounds
/// known at compile time, unrolled, and `i as f64`; the methods `sin cos tan exp ln
/// log10 log2 ln_1p exp_m1 recip sqrt cbrt abs sign asin acos atan sinh cosh tanh asinh
/// acosh atanh erf`, `powf powi atan2 hypot max min mul_add`, `lt le gt ge eq ne`
/// (`1.0`/`0.0`), and the same names as free functions (`sin(x)`, `f64::sin(x)`,
/// `pow(a, b)`, `log(x)`, `log1p(x)`, `select(c, a, b)`, `fma(a, b, c)`). `x.powi(n)` is
/// ddx's `powi` (repeated squaring, `const` for a literal `n`), which may round
/// differently from Rust's `f64::powi`. Anything else — a loop it cannot unroll, a call of an unknown
/// function, a non-`f64` type — is a compile error at that span saying what is accepted.
///
/// ```compile_fail
/// #[ddx::derivatives]
/// fn f(x: f64) -> f64 {
///     x.gamma() // error: unknown function `gamma`
/// }
/// ```
#[cfg(feature = "macros")]
pub use ddx_macros::derivatives;

/// The intermediate representation, for tools that inspect or transform graphs.
pub use ddx_ir as ir;

/// `Result` with ddx's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Equations built at run time.
pub mod rt {
    use super::{Equation, Error, ModelOutput};

    pub use ddx_ir::{param, var};

    pub use crate::text::{
        equation_text, equation_text_with_functions, equation_text_with_params, parse_expr,
        system_text, system_text_with_params,
    };

    /// Runs `model` — a closure that names symbols with [`var`] and returns one [`Expr`]
    /// (a scalar function) or an array or `Vec` of them (a system) — and answers the
    /// equation it describes.
    ///
    /// Symbols are ordered by the bytes of their names whatever order the closure names
    /// them in (`B` before `a`, `x10` before `x2`), and a name used twice is one symbol.
    /// The closure runs once, now; nothing it borrowed is kept.
    ///
    /// # Errors
    /// - [`Error::NoGraph`] when every output is a literal (no symbol is involved);
    /// - [`Error::NoOutputs`] when the closure returns an empty system;
    /// - [`Error::NoArena`] when an expression carries a symbol named outside any model
    ///   closure;
    /// - [`Error::SealedArena`] when the closure used an expression made by another model
    ///   closure that is not open on this thread: one that already built its equation, or
    ///   one running on another thread;
    /// - [`Error::ForeignExpression`] when a nested model used its enclosing model's
    ///   expression.
    ///
    /// [`Expr`]: crate::Expr
    pub fn equation<R: ModelOutput>(
        model: impl FnOnce() -> R,
    ) -> Result<Equation<R::Shape>, Error> {
        crate::equation::build(model)
    }

    /// [`equation`], remembering its last call of each kind in `cache` (for example
    /// [`LastValue::default()`](crate::LastValue)): a repeated point is answered with no
    /// sweep, a point with some coordinates moved re-sweeps only what they reach, bit for
    /// bit the full sweep's answer (see [`Equation::with_cache`] and [`crate::cache`]).
    ///
    /// # Errors
    /// Those of [`equation`].
    pub fn equation_with<R: ModelOutput>(
        model: impl FnOnce() -> R,
        cache: impl crate::ValueCache + 'static,
    ) -> Result<Equation<R::Shape>, Error> {
        Ok(crate::equation::build(model)?.with_cache(cache))
    }

    /// The equation of `model`, kept in the file at `path` between runs: `path` is a
    /// cache, `model` the equation as it would be written anyway.
    ///
    /// `model` runs every time (as for [`equation`]). When the file at `path` holds an
    /// equation of this shape over the same symbols and the same model graph, node for
    /// node, that equation is answered, with every lane and kernel it holds
    /// ([`Equation::loaded`] is true). Otherwise — no file, a damaged or foreign one, or
    /// one written for an edited model — the equation is built from `model`, its value
    /// and Jacobian lanes are prepared, and it is saved to `path`, replacing what was
    /// there ([`Equation::loaded`] is false). Call [`Equation::save`] later to keep more
    /// in the file (other lanes, kernels compiled since).
    ///
    /// # Errors
    /// Those of [`equation`] for `model`; [`Error::ArchiveIo`] when the rebuilt
    /// equation cannot be written to `path`. A file that cannot be read or loaded is
    /// never an error: it is rebuilt.
    pub fn equation_cached<R: ModelOutput>(
        path: impl AsRef<std::path::Path>,
        model: impl FnOnce() -> R,
    ) -> Result<Equation<R::Shape>, Error> {
        crate::archive::equation_cached(path.as_ref(), model)
    }

    pub use crate::archive::verify;
}

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
