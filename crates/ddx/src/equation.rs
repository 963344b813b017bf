//! [`Equation`]: a sealed model and the lanes prepared from it, answering per-point calls.
//!
//! Each lane (value, Jacobian, gradient, `jvp`, `vjp`, Hessian, `hvp`) is built and lowered
//! in `crate::prepared` (the seam every engine reads) the first time a call needs it,
//! under a [`OnceLock`](std::sync::OnceLock), so a fresh equation may be shared by many threads
//! from its first call: exactly one of them prepares a lane, the others wait for it and
//! then read it. A caller who only evaluates never pays for a derivative.

use crate::device::{Device, DeviceColumns, DeviceInfo};
use crate::jit::Jit;
use crate::options::{JitStatus, OptLevel, Options, Warming};
use crate::point::{Point, Role};
use crate::prepared::{Prepared, PreparedLanes};
use ddx_ir::{Error, Expr, Lane, LaneKind, Model, Sparsity, VectorRole};
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

mod private {
    pub trait Sealed {}
}

/// The output shape of an equation: [`Scalar`] (one function) or [`System`] (several).
pub trait Shape: private::Sealed + 'static {
    /// What `evaluate` answers: `f64` for a scalar function, `Vec<f64>` for a system.
    type Value: fmt::Debug + Clone + PartialEq;
    /// Whether this is the one-output shape.
    const SCALAR: bool;
    /// The value from the `m` output values.
    #[doc(hidden)]
    fn value(values: &[f64]) -> Self::Value;
}

/// Marks an equation of one function, `f: ℝⁿ → ℝ`; `evaluate` answers `f64`.
#[derive(Debug)]
pub enum Scalar {}

/// Marks a system, `f: ℝⁿ → ℝᵐ`; `evaluate` answers `Vec<f64>` of length `m`.
#[derive(Debug)]
pub enum System {}

impl private::Sealed for Scalar {}
impl private::Sealed for System {}
impl private::Sealed for Expr {}
impl<const M: usize> private::Sealed for [Expr; M] {}
impl private::Sealed for Vec<Expr> {}

impl Shape for Scalar {
    type Value = f64;
    const SCALAR: bool = true;
    fn value(values: &[f64]) -> f64 {
        values.first().copied().unwrap_or(f64::NAN)
    }
}

impl Shape for System {
    type Value = Vec<f64>;
    const SCALAR: bool = false;
    fn value(values: &[f64]) -> Vec<f64> {
        values.to_vec()
    }
}

/// What a model closure may return: one [`Expr`] (a scalar function), or an array or `Vec`
/// of them (a system). Sealed: a [`Scalar`] equation always has exactly one output.
pub trait ModelOutput: private::Sealed {
    /// The equation's shape.
    type Shape: Shape;
    /// The outputs, in order.
    fn into_exprs(self) -> Vec<Expr>;
}

impl ModelOutput for Expr {
    type Shape = Scalar;
    fn into_exprs(self) -> Vec<Expr> {
        vec![self]
    }
}

impl<const M: usize> ModelOutput for [Expr; M] {
    type Shape = System;
    fn into_exprs(self) -> Vec<Expr> {
        self.to_vec()
    }
}

impl ModelOutput for Vec<Expr> {
    type Shape = System;
    fn into_exprs(self) -> Vec<Expr> {
        self
    }
}

/// A function of named symbols, ready to answer values and derivatives.
///
/// Built by [`rt::equation`](crate::rt::equation) from a model closure. It owns all it
/// needs (the data the closure read may be dropped), is `Send + Sync`, and may be used by
/// many threads at once from its first call. Cloning is cheap: clones share the graph, the
/// lanes built and the compiled kernels, and each has its own options.
///
/// Conventions: `n` = [`arity`](Equation::arity) symbols in canonical (alphabetical) order,
/// `m` = [`outputs`](Equation::outputs) functions. Matrices are dense and row-major.
pub struct Equation<S: Shape = Scalar> {
    /// The engine seam: the model and the lanes prepared from it, shared by clones.
    pub(crate) lanes: Arc<PreparedLanes>,
    options: Options,
    pub(crate) jit: Jit,
    /// The OpenCL device backend (active under `Backend::Device`).
    pub(crate) device: Device,
    /// Whether it came from a saved equation ([`Equation::loaded`]).
    pub(crate) loaded: bool,
    /// The parameter values bound by [`Equation::with_params`] (`p` of them), or empty
    /// while unbound.
    pub(crate) bound: Arc<[f64]>,
    /// The last-call cache ([`Equation::with_cache`]), shared by clones; `None`: off.
    pub(crate) cache: Option<Arc<dyn crate::cache::ValueCache>>,
    shape: PhantomData<fn() -> S>,
}

/// A clone is cheap and shares everything built so far: the graph, the lanes, and under a
/// compiling backend the kernels and any compile in flight (a kernel that lands answers
/// both). Each clone then has its own options: [`Equation::set_options`] on one leaves the
/// others' options and kernels as they are.
impl<S: Shape> Clone for Equation<S> {
    fn clone(&self) -> Self {
        Self {
            lanes: Arc::clone(&self.lanes),
            options: self.options.clone(),
            jit: self.jit.clone(),
            device: self.device.clone(),
            loaded: self.loaded,
            bound: Arc::clone(&self.bound),
            cache: self.cache.clone(),
            shape: PhantomData,
        }
    }
}

impl<S: Shape> fmt::Debug for Equation<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Equation")
            .field("symbols", &self.symbols())
            .field("outputs", &self.outputs())
            .finish()
    }
}

/// Inputs of one call up to this many are kept on the stack.
const STACK_INPUTS: usize = 32;
/// A thread keeps its input block between calls up to this many values (512 KiB).
const MAX_KEPT_INPUTS: usize = 1 << 16;

thread_local! {
    /// Each thread's input block for calls of more than [`STACK_INPUTS`] inputs.
    static SCRATCH_INPUTS: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
}
/// Outputs of one compiled call up to this many are kept on the stack.
const STACK_OUTPUTS: usize = 64;

impl<S: Shape> Equation<S> {
    pub(crate) fn from_model(model: Model) -> Self {
        Self {
            lanes: Arc::new(PreparedLanes::new(model)),
            options: Options::default(),
            jit: Jit::default(),
            device: Device::default(),
            loaded: false,
            bound: Arc::new([]),
            cache: None,
            shape: PhantomData,
        }
    }

    /// An equation over ready-made lanes (a loaded one), with `options` and `jit` made
    /// for them.
    pub(crate) fn from_parts(lanes: Arc<PreparedLanes>, options: Options, jit: Jit) -> Self {
        let device = Device::new(&options, &lanes, &[]);
        Self {
            lanes,
            options,
            jit,
            device,
            loaded: true,
            bound: Arc::new([]),
            cache: None,
            shape: PhantomData,
        }
    }

    /// The lane `kind` of the variant the options select (contracted or not).
    pub(crate) fn prepared(&self, kind: LaneKind) -> &Prepared {
        self.lanes.prepared(kind, self.options.codegen.contract)
    }

    /// The symbol names in canonical order: alphabetical by the bytes of the name. This is
    /// the order positional points are read in and every result is laid out in.
    pub fn symbols(&self) -> &[String] {
        self.lanes.model.symbols()
    }

    /// The symbol count `n`.
    pub fn arity(&self) -> usize {
        self.lanes.model.arity()
    }

    /// The function count `m` (1 for a [`Scalar`] equation).
    pub fn outputs(&self) -> usize {
        self.lanes.model.outputs().len()
    }

    /// Whether the model calls user functions ([`UserFunction`](crate::UserFunction)).
    /// A binding whose user code takes a global lock (Python's) runs the batches of such
    /// an equation on the calling thread ([`crate::on_calling_thread`]).
    pub fn calls_user_functions(&self) -> bool {
        self.lanes.user_calls
    }

    /// The point as `n` values in canonical order, from any [`Point`] spelling.
    ///
    /// # Errors
    /// [`Error::ShortPoint`], [`Error::WrongArity`], [`Error::MissingSymbol`],
    /// [`Error::UnknownSymbol`], [`Error::DuplicateSymbol`].
    pub fn point(&self, point: impl Point) -> Result<Vec<f64>, Error> {
        let mut x = vec![0.0; self.arity()];
        point.fill(self.symbols(), &mut x)?;
        Ok(x)
    }

    /// Reads `point` (then the bound parameters and, through `seed`, the seed inputs
    /// after them) into an input block on the stack and hands it to `body`.
    ///
    /// # Errors
    /// Those of [`Equation::point`]; [`Error::UnboundParameter`] when the equation has
    /// parameters and none are bound.
    pub(crate) fn with_inputs<R>(
        &self,
        point: &impl Point,
        seeds: usize,
        seed: impl FnOnce(&mut [f64]) -> Result<(), Error>,
        body: impl FnOnce(&[f64]) -> R,
    ) -> Result<R, Error> {
        let len = self.arity() + self.lanes.model.param_count() + seeds;
        if let Some(x) = point
            .as_positional()
            .filter(|x| x.len() == len && len == self.arity())
        {
            // The point is the whole input block (no parameters, no seeds): read where it
            // is, as `Point::fill` would have copied it.
            seed(&mut [])?;
            return self.user_checked(|| body(x));
        }
        if len <= STACK_INPUTS {
            let mut stack = [0.0; STACK_INPUTS];
            return self.inputs_in(&mut stack[..len], point, seed, body);
        }
        // The thread's reused block (taken, so a call made from inside `body` gets a
        // block of its own): no allocation per call, and only the seeds are zeroed, since
        // the point and parameter slots are written before `body` reads them
        // ([`Point::fill`] writes one value per symbol).
        let mut heap = SCRATCH_INPUTS.with(Cell::take);
        if heap.len() < len {
            heap.resize(len, 0.0);
        }
        let r = self.inputs_in(&mut heap[..len], point, seed, body);
        if heap.len() <= MAX_KEPT_INPUTS {
            SCRATCH_INPUTS.with(|c| c.set(heap));
        }
        r
    }

    /// [`Equation::with_inputs`] in the block `x` (its length is the input count).
    fn inputs_in<R>(
        &self,
        x: &mut [f64],
        point: &impl Point,
        seed: impl FnOnce(&mut [f64]) -> Result<(), Error>,
        body: impl FnOnce(&[f64]) -> R,
    ) -> Result<R, Error> {
        let n = self.arity();
        let base = n + self.lanes.model.param_count();
        point.fill(self.symbols(), &mut x[..n])?;
        self.fill_params(&mut x[n..base])?;
        // Seeds start at zero: a seed may set some of them only (`hvp_along`'s basis vector).
        <[f64]>::fill(&mut x[base..], 0.0);
        seed(&mut x[base..])?;
        self.user_checked(|| body(x))
    }

    /// `body()`, or the failure user code recorded on this thread while it ran (a panic,
    /// a missing derivative) when the model calls user functions.
    fn user_checked<R>(&self, body: impl FnOnce() -> R) -> Result<R, Error> {
        if !self.lanes.user_calls {
            return Ok(body());
        }
        let _ = ddx_ir::user::take_failure();
        let r = body();
        ddx_ir::user::take_failure().map_or(Ok(r), Err)
    }

    /// Runs lane `kind` at one point and hands each output `(index, value)` to `sink`, in
    /// order: from the kernel when one answers the lane, else from the interpreter (the
    /// same bits either way).
    pub(crate) fn eval(&self, kind: LaneKind, inputs: &[f64], mut sink: impl FnMut(usize, f64)) {
        if ddx_ir::lane::has_twin(kind) {
            // The answer may be mended after the run, so it is gathered first (on the
            // stack for an `hvp` of up to 62 symbols, whose `2n + 1` outputs the smaller
            // buffer would not hold).
            let n = self.prepared(kind).lane.outputs.len();
            let mut stack = [0.0; 2 * STACK_OUTPUTS];
            let mut heap = Vec::new();
            let out = if n <= stack.len() {
                &mut stack[..n]
            } else {
                heap.resize(n, 0.0);
                &mut heap[..]
            };
            self.eval_into(kind, inputs, out);
            for (i, &v) in out.iter().enumerate() {
                sink(i, v);
            }
            return;
        }
        if let Some(cache) = self.cache.as_deref() {
            if cache.active() && self.remembered(cache, kind, inputs, &mut sink) {
                return;
            }
        }
        let p = self.prepared(kind);
        if let Some(k) = self.jit.point(&self.lanes, kind) {
            let n = p.lane.outputs.len();
            let mut stack = [0.0; STACK_OUTPUTS];
            let mut heap = Vec::new();
            let out = if n <= STACK_OUTPUTS {
                &mut stack[..n]
            } else {
                heap.resize(n, 0.0);
                &mut heap[..]
            };
            k.run_point(inputs, out);
            for (i, &v) in out.iter().enumerate() {
                sink(i, v);
            }
        } else {
            // The lane's own input block: its length holds by construction.
            let ran = p.program().run_with(inputs, sink);
            debug_assert!(ran.is_ok(), "{ran:?}");
        }
    }

    /// The zero-skipping twin of lane `kind` under the equation's options, for `jvp` and
    /// `hvp` ([`ddx_ir::lane::build_twin`]), built on first use: a call asks for it only
    /// at a point where the plain lane's answer holds a NaN, so an equation that never
    /// meets one never builds it (it is as large as the lane).
    pub(crate) fn twin(&self, kind: LaneKind) -> Option<&Prepared> {
        self.lanes.twin(kind, self.options.codegen.contract)
    }

    /// Runs lane `kind` at one point into `out` (one value per output); where a `jvp` or
    /// `hvp` answer holds a NaN, the lane's twin answers the point instead (on the
    /// interpreter: every engine gives a lane's bits, and such points are rare).
    pub(crate) fn eval_into(&self, kind: LaneKind, inputs: &[f64], out: &mut [f64]) {
        self.eval_plain_into(kind, inputs, out);
        if ddx_ir::lane::has_twin(kind) {
            let products = out
                .get(self.prepared(kind).first_product()..)
                .unwrap_or(&[]);
            // Without a branch per output (the common case has no NaN to find).
            if products.iter().fold(false, |nan, v| nan | v.is_nan()) {
                if let Some(twin) = self.twin(kind) {
                    // The twin has the plain lane's inputs and outputs.
                    let ran = twin.program().run(inputs, out);
                    debug_assert!(ran.is_ok(), "{ran:?}");
                }
            }
        }
    }

    /// [`Equation::eval_into`] without the twin.
    fn eval_plain_into(&self, kind: LaneKind, inputs: &[f64], out: &mut [f64]) {
        if let Some(cache) = self.cache.as_deref() {
            if cache.active() && self.remembered(cache, kind, inputs, &mut |k, v| out[k] = v) {
                return;
            }
        }
        match self.jit.point(&self.lanes, kind) {
            Some(k) => k.run_point(inputs, out),
            None => {
                // The caller checked `out`; the inputs are the lane's own block.
                let ran = self.prepared(kind).program().run(inputs, out);
                debug_assert!(ran.is_ok(), "{ran:?}");
            }
        }
    }

    /// Runs lane `kind` at one input block and writes every output of the lane, in the
    /// lane's order ([`Lane::outputs`]: the values, then its Jacobian cells in pattern
    /// order where it has them, then its products or compressed Hessian blocks) — the
    /// per-point form of the batch calls, for layers that lay answers out themselves (the
    /// Python package). `inputs` is the lane's input block: `n` symbols in canonical order,
    /// the `p` parameters, then the lane's seeds (`n` direction values for `jvp`/`hvp`, `m`
    /// weights for `vjp`); with the parameters bound ([`Equation::with_params`]) it may
    /// leave them out (`n` symbols, then the seeds). Remembered like every per-point call
    /// ([`Equation::with_cache`]).
    ///
    /// # Errors
    /// [`Error::WrongArity`] or [`Error::ShortPoint`] unless `inputs` has one of those
    /// lengths; [`Error::WrongOutputLength`] unless `out` is the lane's output count
    /// (nothing is written); [`Error::TensorLane`] for [`LaneKind::Tensor`], whose lanes
    /// are per order ([`Equation::derivative_tensor`]); [`Error::UserFunction`] when user
    /// code fails (a panic, a derivative it does not give).
    pub fn lane_point_into(
        &self,
        kind: LaneKind,
        inputs: &[f64],
        out: &mut [f64],
    ) -> Result<(), Error> {
        fixed(kind, "lane_point_into")?;
        let lane = &self.prepared(kind).lane;
        let (n, p, seeds) = (lane.symbols, lane.params, lane.seeds);
        let whole = n + p + seeds;
        if p > 0 && inputs.len() == n + seeds && self.bound_params().is_some() {
            check_output(out, Some(lane.outputs.len()))?;
            let mut x = Vec::with_capacity(whole);
            x.extend_from_slice(&inputs[..n]);
            x.resize(n + p, 0.0);
            self.fill_params(&mut x[n..])?;
            x.extend_from_slice(&inputs[n..]);
            return self.user_checked(|| self.eval_into(kind, &x, out));
        }
        let expected = whole;
        if inputs.len() != expected {
            return Err(if inputs.len() > expected {
                Error::WrongArity {
                    expected,
                    got: inputs.len(),
                }
            } else {
                Error::ShortPoint {
                    expected,
                    got: inputs.len(),
                }
            });
        }
        check_output(out, Some(lane.outputs.len()))?;
        self.user_checked(|| self.eval_into(kind, inputs, out))
    }

    /// Whether a cache is given and active: per-point calls are remembered.
    pub fn remembers(&self) -> bool {
        self.cache.as_deref().is_some_and(|c| c.active())
    }

    /// The outputs of lane `kind` after its values (the products of `jvp`, `vjp`).
    fn tail(&self, kind: LaneKind, inputs: &[f64]) -> Vec<f64> {
        self.value_and_tail(kind, inputs).1
    }

    /// The values of lane `kind` and its outputs after them, from one run.
    fn value_and_tail(&self, kind: LaneKind, inputs: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let p = self.prepared(kind);
        let values = p.lane.values;
        if ddx_ir::lane::has_twin(kind) {
            // Into the answer itself: the twin may mend it after the run.
            let mut head = zeros(p.lane.outputs.len());
            self.eval_into(kind, inputs, &mut head);
            let out = head.split_off(values);
            return (head, out);
        }
        let mut head = Vec::with_capacity(values);
        let mut out = Vec::with_capacity(p.lane.outputs.len() - values);
        self.eval(kind, inputs, |k, v| {
            if k >= values {
                out.push(v);
            } else {
                head.push(v);
            }
        });
        (head, out)
    }

    fn run(&self, kind: LaneKind, inputs: &[f64]) -> Vec<f64> {
        // The lane's output count, not the program's: a lane a kernel answers never
        // lowers its program (on a million-node lane, 100 ms of a first `evaluate`).
        let mut out = zeros(self.prepared(kind).lane.outputs.len());
        self.eval_into(kind, inputs, &mut out);
        out
    }

    /// `f(x)`: an `f64` for a scalar function, `m` values for a system.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let eq = rt::equation_text("x * exp(y)")?;
    /// assert_eq!(eq.evaluate([2.0, 0.0])?, 2.0);                 // symbol order: x, y
    /// assert_eq!(eq.evaluate([("y", 0.0), ("x", 2.0)])?, 2.0);   // or by name
    /// let sys = rt::system_text(&["x + y", "x * y"])?;
    /// assert_eq!(sys.evaluate([2.0, 3.0])?, [5.0, 6.0]);
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// Those of [`Equation::point`].
    pub fn evaluate(&self, point: impl Point) -> Result<S::Value, Error> {
        self.with_inputs(
            &point,
            0,
            |_| Ok(()),
            |x| S::value(&self.run(LaneKind::Value, x)),
        )
    }

    /// The Jacobian `J(x)`, `J[i·n + j] = ∂fᵢ/∂xⱼ`: dense, row-major, `m × n` (the gradient,
    /// `n` long, when `m == 1`). Cells outside the sparsity pattern are `0`.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let sys = rt::system_text(&["x + y", "x * y"])?;
    /// assert_eq!(sys.jacobian([2.0, 3.0])?, [1.0, 1.0, 3.0, 2.0]);  // row-major 2 × 2
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// Those of [`Equation::point`].
    pub fn jacobian(&self, point: impl Point) -> Result<Vec<f64>, Error> {
        let len = self.answer_len("jacobian", &[self.outputs(), self.arity()])?;
        self.with_inputs(
            &point,
            0,
            |_| Ok(()),
            |x| self.dense(LaneKind::Jacobian, x, len),
        )
    }

    /// The same `m × n` block as [`Equation::jacobian`], from a lane that does not compute
    /// the value: what only the value needs is pruned.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let eq = rt::equation_text("x * exp(y)")?;
    /// assert_eq!(eq.gradient([2.0, 0.0])?, [1.0, 2.0]);
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// Those of [`Equation::point`].
    pub fn gradient(&self, point: impl Point) -> Result<Vec<f64>, Error> {
        let len = self.answer_len("gradient", &[self.outputs(), self.arity()])?;
        self.with_inputs(
            &point,
            0,
            |_| Ok(()),
            |x| self.dense(LaneKind::Gradient, x, len),
        )
    }

    /// `f(x)` and the Jacobian `J(x)` together, from one sweep of the lane that
    /// [`Equation::jacobian`] runs (it computes the value on the way; this keeps it):
    /// `(f, J)` with `f` as [`Equation::evaluate`] answers it and `J` dense, row-major
    /// `m × n` (the gradient, `n` long, for a scalar function), each bit for bit what the
    /// separate calls answer. JAX's `value_and_grad`.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let eq = rt::equation_text("x * exp(y)")?;
    /// let (f, g) = eq.value_and_gradient([2.0, 0.0])?;
    /// assert_eq!((f, &g[..]), (2.0, &[1.0, 2.0][..]));
    /// assert_eq!((f, g), (eq.evaluate([2.0, 0.0])?, eq.jacobian([2.0, 0.0])?));
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::TooLarge`] when `m·n` exceeds
    /// [`Options::answer_limit`](crate::Options::answer_limit); those of
    /// [`Equation::point`].
    #[doc(alias = "value_and_grad")]
    #[doc(alias = "value_and_jacobian")]
    pub fn value_and_gradient(&self, point: impl Point) -> Result<(S::Value, Vec<f64>), Error> {
        let len = self.answer_len("value_and_gradient", &[self.outputs(), self.arity()])?;
        self.with_inputs(
            &point,
            0,
            |_| Ok(()),
            |x| {
                let mut values = Vec::with_capacity(self.outputs());
                let mut dense = zeros(len);
                self.dense_into_with(LaneKind::Jacobian, x, &mut dense, |v| values.push(v));
                (S::value(&values), dense)
            },
        )
    }

    /// `f(x)` written into `out` (`m` values): [`Equation::evaluate`] without allocating,
    /// for calls in a loop.
    ///
    /// # Errors
    /// [`Error::WrongOutputLength`] unless `out` is `m` long (nothing is written); those of
    /// [`Equation::point`].
    pub fn evaluate_into(&self, point: impl Point, out: &mut [f64]) -> Result<(), Error> {
        check_output(out, Some(self.outputs()))?;
        self.with_inputs(
            &point,
            0,
            |_| Ok(()),
            |x| self.eval_into(LaneKind::Value, x, out),
        )
    }

    /// The Jacobian written into `out` (dense, row-major `m × n`): [`Equation::jacobian`]
    /// without allocating, for calls in a loop.
    ///
    /// # Errors
    /// [`Error::WrongOutputLength`] unless `out` is `m·n` long (nothing is written); those
    /// of [`Equation::point`].
    pub fn jacobian_into(&self, point: impl Point, out: &mut [f64]) -> Result<(), Error> {
        check_output(out, self.outputs().checked_mul(self.arity()))?;
        self.with_inputs(
            &point,
            0,
            |_| Ok(()),
            |x| self.dense_into(LaneKind::Jacobian, x, out),
        )
    }

    /// The gradient block written into `out` (dense, row-major `m × n`):
    /// [`Equation::gradient`] without allocating, for calls in a loop.
    ///
    /// # Errors
    /// [`Error::WrongOutputLength`] unless `out` is `m·n` long (nothing is written); those
    /// of [`Equation::point`].
    pub fn gradient_into(&self, point: impl Point, out: &mut [f64]) -> Result<(), Error> {
        check_output(out, self.outputs().checked_mul(self.arity()))?;
        self.with_inputs(
            &point,
            0,
            |_| Ok(()),
            |x| self.dense_into(LaneKind::Gradient, x, out),
        )
    }

    /// Runs a Jacobian-shaped lane and writes its cells into a dense row-major `m × n`.
    fn dense(&self, kind: LaneKind, x: &[f64], len: usize) -> Vec<f64> {
        let mut dense = zeros(len);
        self.dense_into(kind, x, &mut dense);
        dense
    }

    /// [`Equation::dense`] into `dense` (`m·n` long).
    fn dense_into(&self, kind: LaneKind, x: &[f64], dense: &mut [f64]) {
        self.dense_into_with(kind, x, dense, |_| {});
    }

    /// [`Equation::dense_into`], handing the lane's values (if it has any) to `value`, in
    /// order.
    fn dense_into_with(
        &self,
        kind: LaneKind,
        x: &[f64],
        dense: &mut [f64],
        mut value: impl FnMut(f64),
    ) {
        let n = self.arity();
        let p = self.prepared(kind);
        let values = p.lane.values;
        if let Some(pattern) = &p.lane.pattern {
            if values == 0 && pattern.nonzeros() == dense.len() {
                // Every cell, row-major: the lane's outputs are the dense matrix.
                self.eval_into(kind, x, dense);
                return;
            }
            dense.fill(0.0);
            let cells = pattern.entries();
            self.eval(kind, x, |k, v| match k.checked_sub(values) {
                None => value(v),
                Some(k) => {
                    if let Some(c) = cells.get(k) {
                        dense[c.row * n + c.column] = v;
                    }
                }
            });
        }
    }

    /// The length of an answer of `sizes` (its dimensions: `[m, n]`, `[m, n, n]`), checked
    /// against [`Options::answer_limit`] before anything is allocated.
    ///
    /// # Errors
    /// [`Error::TooLarge`] past the limit, naming `call`.
    pub(crate) fn answer_len(&self, call: &'static str, sizes: &[usize]) -> Result<usize, Error> {
        let values = sizes
            .iter()
            .fold(1u128, |p, &s| p.saturating_mul(s as u128));
        let limit = self.options.answer_limit;
        match usize::try_from(values) {
            Ok(len) if len <= limit => Ok(len),
            _ => Err(Error::TooLarge {
                call,
                values,
                limit,
            }),
        }
    }

    /// The Jacobian's sparsity pattern: which `(function, symbol)` cells structurally exist.
    ///
    /// Read from a lane a call has already built when there is one (the lanes of
    /// `gradient`, `jacobian`, `hvp` and `hessian` all carry it); otherwise it builds the
    /// gradient lane, since a cell exists only where the reverse sweep's partial did not
    /// fold to the literal zero.
    pub fn jacobian_pattern(&self) -> &Sparsity {
        self.lanes.jacobian_pattern(self.options.codegen.contract)
    }

    /// `J(x)·v`: the directional derivative of `f` along `v`, `m` long. `v` is one value per
    /// symbol, in any [`Point`] spelling.
    ///
    /// An exactly-zero component of `v` contributes nothing, even where its partial is
    /// infinite or NaN (`ARCHITECTURE.md`, "Exact zeros in a direction"), so along a basis
    /// vector this is the Jacobian's column: `log(0·u + v)` at `v = 0` along `e_u` is `0`.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let sys = rt::system_text(&["x + y", "x * y"])?;
    /// assert_eq!(sys.jvp([1.0, -1.0], [2.0, 3.0])?, [0.0, 1.0]);  // J·v, no J formed
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::WrongDirection`] when `v` is not one value per symbol (or, named, leaves a
    /// symbol out); [`Error::UnknownSymbol`]; those of [`Equation::point`] for `point`.
    pub fn jvp(&self, v: impl Point, point: impl Point) -> Result<Vec<f64>, Error> {
        let fill = |seeds: &mut [f64]| v.fill_as(self.symbols(), seeds, Role::Direction);
        self.with_inputs(&point, self.arity(), fill, |x| self.tail(LaneKind::Jvp, x))
    }

    /// `f(x)` and `J(x)·v` together, from the one sweep [`Equation::jvp`] makes (its lane
    /// computes the value on the way; this keeps it): `(f, J·v)`, each bit for bit what
    /// [`Equation::evaluate`] and [`Equation::jvp`] answer. JAX's `jax.jvp`.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let eq = rt::equation_text("x * exp(y)")?;
    /// let (f, jv) = eq.value_and_jvp([1.0, 1.0], [2.0, 0.0])?;
    /// assert_eq!((f, jv), (2.0, vec![3.0]));
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Equation::jvp`].
    pub fn value_and_jvp(
        &self,
        v: impl Point,
        point: impl Point,
    ) -> Result<(S::Value, Vec<f64>), Error> {
        let fill = |seeds: &mut [f64]| v.fill_as(self.symbols(), seeds, Role::Direction);
        self.with_inputs(&point, self.arity(), fill, |x| {
            let (f, jv) = self.value_and_tail(LaneKind::Jvp, x);
            (S::value(&f), jv)
        })
    }

    /// `wᵀ·J(x)`: the gradient of `w·f`, `n` long. `w` is one weight per function.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let sys = rt::system_text(&["x + y", "x * y"])?;
    /// assert_eq!(sys.vjp(&[1.0, 2.0], [2.0, 3.0])?, [7.0, 5.0]);  // wᵀ·J
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::WrongDirection`] when `w` is not `m` long; those of [`Equation::point`].
    pub fn vjp(&self, w: &[f64], point: impl Point) -> Result<Vec<f64>, Error> {
        let m = self.outputs();
        if w.len() != m {
            return Err(Error::WrongDirection {
                role: VectorRole::Covector,
                expected: m,
                got: w.len(),
            });
        }
        let fill = |seeds: &mut [f64]| {
            seeds.copy_from_slice(w);
            Ok(())
        };
        self.with_inputs(&point, m, fill, |x| self.tail(LaneKind::Vjp, x))
    }
}

/// Options, compiling, and the graphs behind the calls (after the per-point calls, so
/// that they come first on the `Equation` page).
impl<S: Shape> Equation<S> {
    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Sets the options. Setting the value already held does nothing.
    ///
    /// Any other change discards every compiled kernel and abandons any compile in flight
    /// (it is never installed): under [`Backend::Compile`] the lanes already used start
    /// compiling again at once, the others when first needed; under [`Backend::Adapt`]
    /// batch traffic starts counting again from zero; under [`Backend::Device`] the lanes
    /// already used start building for the device (see [`Equation::device_status`]);
    /// [`Backend::Interpret`] asks no compiler at all. Options the code generator cannot honour (a lane width it does not
    /// make) leave the equation interpreting, with the reason in
    /// [`Equation::jit_status`].
    ///
    /// [`Backend::Compile`]: crate::Backend::Compile
    /// [`Backend::Adapt`]: crate::Backend::Adapt
    /// [`Backend::Device`]: crate::Backend::Device
    /// [`Backend::Interpret`]: crate::Backend::Interpret
    pub fn set_options(&mut self, options: Options) -> &mut Self {
        let policy_only = Options {
            answer_limit: self.options.answer_limit,
            ..options.clone()
        } == self.options;
        if policy_only {
            // Only the answer limit differs (or nothing): no kernel depends on it.
            self.options.answer_limit = options.answer_limit;
        } else {
            self.options = options;
            self.jit = Jit::default();
            let prepared = self.lanes.prepared_kinds(self.options.codegen.contract);
            self.jit = Jit::new(&self.options, &self.lanes, &prepared);
            self.device = Device::new(&self.options, &self.lanes, &prepared);
        }
        self
    }

    /// Whether the Jacobian lane's calls ([`Equation::jacobian`], [`Equation::jacobian_batch`])
    /// are answered by compiled code now: [`Equation::uses_kernel_of`] for
    /// [`LaneKind::Jacobian`], the lane the specification's `uses_kernel()` asks about.
    pub fn uses_kernel(&self) -> bool {
        self.uses_kernel_of(LaneKind::Jacobian)
    }

    /// Blocks until the Jacobian lane's compile has landed, and answers whether a kernel
    /// answers it: [`Equation::wait_for_kernel_of`] for [`LaneKind::Jacobian`] (the
    /// specification's default `want`). A caller whose calls run another lane (only
    /// `evaluate_batch`, say) names it with [`Equation::wait_for_kernel_of`], so that no
    /// Jacobian is compiled for nothing.
    pub fn wait_for_kernel(&self) -> bool {
        self.wait_for_kernel_of(LaneKind::Jacobian)
    }

    /// The optimisation level of the kernel answering the Jacobian lane, or `None` while
    /// the interpreter answers it: [`Equation::kernel_level_of`] for [`LaneKind::Jacobian`].
    pub fn kernel_level(&self) -> Option<OptLevel> {
        self.kernel_level_of(LaneKind::Jacobian)
    }

    /// Under [`Backend::Adapt`](crate::Backend::Adapt), how far the Jacobian lane is
    /// towards its next compiled tier: [`Equation::warming_of`] for [`LaneKind::Jacobian`].
    pub fn warming(&self) -> Option<Warming> {
        self.warming_of(LaneKind::Jacobian)
    }

    /// Whether calls of lane `want` are answered by compiled code now (under
    /// [`Backend::Device`], whether its batch calls run on the device).
    ///
    /// [`Backend::Device`]: crate::Backend::Device
    pub fn uses_kernel_of(&self, want: LaneKind) -> bool {
        // The tensor lanes (one per order) are always interpreted.
        if fixed(want, "uses_kernel_of").is_err() {
            return false;
        }
        self.jit.uses_kernel(want) || self.device.uses_kernel(want)
    }

    /// Blocks until no compile of lane `want` is queued or running, and answers whether a
    /// kernel now answers it. Under [`Backend::Compile`] it first asks for the lane's
    /// kernel (as a call of that lane would), so it waits for the optimised tier; under
    /// [`Backend::Adapt`] it waits only for what batch traffic has already bought; under
    /// [`Backend::Device`] it asks for the lane's device kernel and waits for the device's
    /// compiler (`false`: none will come, the reason is in [`Equation::device_status`]).
    /// Under [`Backend::Interpret`] it answers `false` at once. It does not wait for a long
    /// lane's refined kernel, made after the first in the background
    /// ([`Equation::wait_for_refined_kernel_of`] does). With
    /// [`Equation::device_status`] and [`Equation::device_columns`], the only calls that
    /// block.
    ///
    /// What a wait depends on: only on compiles, never on a call. The lane's compile jobs
    /// go to the process's compile pool (a worker per core, at least 2 and at most 8,
    /// shared by every equation), which takes waiting jobs shortest lane first, then in
    /// the order asked. So a wait lasts as long as this lane's own compiles plus the time
    /// until a worker is free for them: the compiles of lanes of as many nodes or fewer,
    /// from any equation, asked earlier or in the meantime, may go first. A lane of at
    /// most 16 384 nodes never waits for a longer lane's compile, since all but one worker
    /// at most compile such longer lanes.
    ///
    /// [`Backend::Compile`]: crate::Backend::Compile
    /// [`Backend::Adapt`]: crate::Backend::Adapt
    /// [`Backend::Device`]: crate::Backend::Device
    /// [`Backend::Interpret`]: crate::Backend::Interpret
    pub fn wait_for_kernel_of(&self, want: LaneKind) -> bool {
        self.wait_for_kernel_in(want)
    }

    /// [`Equation::wait_for_kernel_of`], then, if the lane's kernel is being refined in
    /// the background ([`LaneStatus::refined`](crate::LaneStatus::refined): a lane over
    /// 16 384 nodes compiled again with the slower register allocator that makes faster
    /// code), until that refined kernel answers too. For benchmarks and for callers about
    /// to make many calls of a long lane; answers whether a kernel answers it. Blocks
    /// too, like the calls above.
    pub fn wait_for_refined_kernel_of(&self, want: LaneKind) -> bool {
        let landed = self.wait_for_kernel_in(want);
        if landed && !self.device.active() {
            self.jit.wait_refined(want);
        }
        landed
    }

    fn wait_for_kernel_in(&self, want: LaneKind) -> bool {
        if fixed(want, "wait_for_kernel_of").is_err() {
            return false;
        }
        if self.device.active() {
            self.device.wait(&self.lanes, want)
        } else {
            self.jit.wait(&self.lanes, want)
        }
    }

    /// Under [`Backend::Device`], the device answering (`<platform> / <device> / <driver>
    /// / <version>` when displayed), or why none is: [`Error::NoDevice`] (no OpenCL
    /// library, no platform, no device with double precision, nothing matching
    /// [`Options::device`], a build without the `opencl` feature),
    /// [`Error::DeviceCompile`] with the driver's build log, [`Error::DeviceLaunch`] for a
    /// launch that failed — the last failure, if any; the lanes it concerns answer from
    /// the CPU. `None` under every other backend. Chooses the device if no lane has yet
    /// (blocking while the OpenCL library loads).
    ///
    /// [`Backend::Device`]: crate::Backend::Device
    pub fn device_status(&self) -> Option<Result<DeviceInfo, Error>> {
        self.device.status()
    }

    /// Columns of `len` points for lane `want` kept in device memory across calls, with
    /// the lane's kernel: write inputs, run, read outputs, each only when asked (see
    /// [`DeviceColumns`]). Waits for the lane's device kernel first.
    ///
    /// # Errors
    /// [`Error::NoDevice`] unless the backend is [`Backend::Device`] and a device
    /// answers; the lane's [`Error::DeviceCompile`]; [`Error::DeviceLaunch`] when the
    /// device cannot hold the columns; [`Error::TensorLane`] for [`LaneKind::Tensor`].
    ///
    /// [`Backend::Device`]: crate::Backend::Device
    pub fn device_columns(&self, want: LaneKind, len: usize) -> Result<DeviceColumns, Error> {
        fixed(want, "device_columns")?;
        self.device.columns(&self.lanes, want, len)
    }

    /// How long the device's compiler took to build lane `want`'s kernel, once built.
    pub fn device_build_time(&self, want: LaneKind) -> Option<std::time::Duration> {
        fixed(want, "device_build_time").ok()?;
        self.device.build_time(want)
    }

    /// The optimisation level of the kernel answering lane `want` — first
    /// [`OptLevel::Off`] (the quick tier), then the level the options ask for — or `None`
    /// while the interpreter answers it.
    pub fn kernel_level_of(&self, want: LaneKind) -> Option<OptLevel> {
        fixed(want, "kernel_level_of").ok()?;
        self.jit.level(want)
    }

    /// Under [`Backend::Adapt`], how many batch points lane `want` has seen towards its next
    /// compiled tier, and how many buy it; `None` under other backends or once the top tier
    /// is bought. Per-point calls do not count.
    ///
    /// [`Backend::Adapt`]: crate::Backend::Adapt
    pub fn warming_of(&self, want: LaneKind) -> Option<Warming> {
        fixed(want, "warming_of").ok()?;
        self.jit.warming(want)
    }

    /// What the code generator has done since the options were last set: kernels compiled,
    /// loaded from the cache, cache entries refused and written, and the last failure.
    pub fn jit_status(&self) -> JitStatus {
        self.jit.status()
    }

    /// The sealed value graph.
    pub fn model(&self) -> &Model {
        &self.lanes.model
    }

    /// The lane graph a call of kind `kind` runs (built on first use).
    ///
    /// # Errors
    /// [`Error::TensorLane`] for [`LaneKind::Tensor`]: the tensor lanes are one per order
    /// ([`Equation::derivative_tensor`]), not one of the fixed lanes.
    pub fn lane(&self, kind: LaneKind) -> Result<&Lane, Error> {
        fixed(kind, "lane")?;
        Ok(&self.prepared(kind).lane)
    }
}

/// `kind` itself when it is one of the fixed lanes ([`LaneKind::ALL`]); else
/// [`Error::TensorLane`] naming `call`.
pub(crate) fn fixed(kind: LaneKind, call: &'static str) -> Result<LaneKind, Error> {
    if LaneKind::ALL.contains(&kind) {
        Ok(kind)
    } else {
        Err(Error::TensorLane { call })
    }
}

/// Checks an output buffer's length against `expected` (`None`: a length past `usize`,
/// which no buffer has).
pub(crate) fn check_output(out: &[f64], expected: Option<usize>) -> Result<(), Error> {
    if Some(out.len()) == expected {
        Ok(())
    } else {
        Err(Error::WrongOutputLength {
            expected: expected.unwrap_or(usize::MAX),
            got: out.len(),
        })
    }
}

/// `len` zeros, allocated with `malloc` rather than `calloc`: glibc's `calloc` skips its
/// per-thread cache, and on a per-point call returning a handful of values that costs
/// more than the kernel.
pub(crate) fn zeros(len: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(len);
    v.resize(len, 0.0);
    v
}

impl From<Model> for Equation<System> {
    /// The equation of a sealed model (from [`ddx_ir::text`], a graph tool, or
    /// [`ddx_ir::testing`]), as a system of its outputs.
    fn from(model: Model) -> Self {
        Equation::from_model(model)
    }
}

impl TryFrom<Model> for Equation<Scalar> {
    type Error = Error;

    /// The equation of a one-output model.
    ///
    /// # Errors
    /// [`Error::NotScalar`] when the model has more than one output.
    fn try_from(model: Model) -> Result<Self, Error> {
        match model.outputs().len() {
            1 => Ok(Equation::from_model(model)),
            outputs => Err(Error::NotScalar {
                call: "Equation::<Scalar>::try_from",
                outputs,
            }),
        }
    }
}

/// Builds an equation from a model closure; see [`crate::rt::equation`].
pub(crate) fn build<R: ModelOutput>(
    model: impl FnOnce() -> R,
) -> Result<Equation<R::Shape>, Error> {
    let model = ddx_ir::build(|| model().into_exprs())?;
    Ok(Equation::from_model(model))
}

// Declared after the per-point calls, so that their `impl` blocks follow them in the
// documentation.
// Issue 4: hessian, hvp, univariate_derivative (an `impl` block of their own).
pub(crate) mod second_order;
// Issue 17: parameters (inputs never differentiated), bound by `with_params`.
pub(crate) mod params;
// Issue 11: sparse per-point answers (pattern + values).
pub(crate) mod sparse;
pub(crate) mod tensor;
// Issue 14: the last-call cache.
mod remember;
