//! Batch calls: one column per symbol (then per parameter) in, one column per value,
//! Jacobian cell or product out; the point count is the longest input column's length
//! (with no input column at all — an equation of bound parameters only — the output
//! columns' length).
//!
//! **Broadcast.** An input column of length 1 — a symbol's, a parameter's, a direction's
//! or a weight's — holds one value for every point. Such a batch runs in stages of
//! [`STAGE`] points, each with a small buffer per broadcast column filled with its value,
//! so no column is ever materialised at the batch's length; each point still runs the same
//! instructions as its per-point call. Given only the symbol columns, an equation with
//! bound parameters (`Equation::with_params`) broadcasts the bound values.
//!
//! Every column is checked before anything runs, so an error writes nothing. The lane's
//! block program then runs over the points in blocks (see `interp::block`); above
//! [`PARALLEL_WORK`] instruction-points a batch is split into chunks across rayon's
//! threads (except inside [`on_calling_thread`], for user code under a global lock). Each point is computed by the same instructions whichever block, chunk or
//! thread it lands in, so results are bit-identical to the per-point calls for any number
//! of threads. A call allocates nothing but its column-pointer table when the lane has
//! more than 64 input or output columns; per-thread scratch is reused across calls.

use crate::device::HostColumns;
use crate::equation::{Equation, Shape};
use crate::interp::{Columns, Program};
use crate::options::BatchEngine;
use crate::prepared::Prepared;
use ddx_ir::{Block, Error, LaneKind, Sparsity};
use rayon::prelude::*;
use smallvec::SmallVec;

/// Instruction-points (instructions × points) below which a batch runs on the calling
/// thread alone: splitting costs about as much as it saves there.
///
/// Measured (Jacobian batch of NIST Misra1a's and Kirby2's RSS, 2 cores, split against
/// not split): at 2.6·10⁵ instruction-points splitting broke even (1.02× and 0.96×); at
/// 1.1·10⁶ it gained 1.4× (Kirby2); from 4.5·10⁶ on, 1.9–2.1×.
pub const PARALLEL_WORK: usize = 1 << 18;

thread_local! {
    /// Set while [`on_calling_thread`] runs: batches are not split across threads.
    static CALLING_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `body`, every batch call it makes running on this thread alone, whatever its
/// size (no rayon split; the answers are the same bits, as for any thread count).
///
/// For user functions whose code takes a global lock: Python's, under the GIL. There the
/// other threads would only wait for the lock, and each call of Python code on a thread
/// Python did not start makes and discards a Python thread state — a batch split across
/// rayon's threads ran 16× slower per point than the same batch on the caller's thread
/// (`crates/ddx-python/bench/user_batch.py`, BENCHMARKS.md). Nests; restores the
/// previous setting on return, and on unwinding.
pub fn on_calling_thread<R>(body: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            CALLING_THREAD.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CALLING_THREAD.with(|c| c.replace(true)));
    body()
}

type Pointers<T> = SmallVec<[T; 64]>;

/// The columns of one call as raw base pointers, taken on the calling thread after each
/// block is checked.
#[derive(Default)]
struct Table {
    len: usize,
    inputs: Pointers<*const f64>,
    /// Whether each input is one value broadcast to every point (a column of length 1 in
    /// a batch of another length).
    broadcast: Pointers<bool>,
    outputs: Pointers<*mut f64>,
    /// No input column was given (an equation of parameters only, bound, with no
    /// direction or weight columns): the first output block's length is the point count.
    sized_by_outputs: bool,
}

// SAFETY: the pointers are only dereferenced by `Program::run_columns` for disjoint point
// ranges, while the borrows they came from are held by the batch call.
unsafe impl Sync for Table {}

impl Columns for Table {
    fn input(&self, k: usize) -> *const f64 {
        self.inputs[k]
    }
    fn output(&self, k: usize) -> *mut f64 {
        self.outputs[k]
    }
}

/// The number of points of a batch whose input columns are `lengths` long, as the batch
/// calls count it: the longest length other than 1 (columns of one value are broadcast to
/// it, as NumPy broadcasts, so an empty column beside them makes a batch of no points), or
/// 1 when every column holds one value; `None` for no column at all. Columns of two
/// different lengths other than 1 are refused by the call itself
/// ([`Error::ColumnLength`]).
pub fn broadcast_points(lengths: impl IntoIterator<Item = usize>) -> Option<usize> {
    let mut any = None;
    let mut longest = None;
    for l in lengths {
        any = Some(1);
        if l != 1 {
            longest = longest.max(Some(l));
        }
    }
    longest.or(any)
}

impl Table {
    /// A table whose point count is the length of the longest input column of `blocks`
    /// that is not of length 1 (columns of length 1 are broadcast to it, as NumPy
    /// broadcasts: with an empty column, to no point at all), or 1 when every input column
    /// is of length 1; with no input column at all, the length of the first output
    /// block's columns ([`Table::write`]).
    fn new(blocks: &[&[&[f64]]]) -> Self {
        let longest = broadcast_points(blocks.iter().flat_map(|b| b.iter().map(|c| c.len())));
        Table {
            len: longest.unwrap_or(0),
            sized_by_outputs: longest.is_none(),
            ..Table::default()
        }
    }

    /// Checks and appends an input block of `expected` columns, each `len` long or of
    /// length 1 (broadcast).
    fn read(
        &mut self,
        block: Block,
        columns: &[&[f64]],
        expected: usize,
    ) -> Result<&mut Self, Error> {
        check(block, columns, expected, self.len, true)?;
        self.inputs.extend(columns.iter().map(|c| c.as_ptr()));
        let len = self.len;
        self.broadcast
            .extend(columns.iter().map(|c| c.len() != len));
        Ok(self)
    }

    /// Checks and appends the point block: `n` symbol columns then `p` parameter columns,
    /// or only the `n` symbol columns when `bound` holds the `p` parameter values (each is
    /// then broadcast).
    ///
    /// # Errors
    /// [`Error::UnboundParameter`] (from `unbound`) for `n` columns with nothing bound;
    /// [`Error::WrongColumnCount`] (expecting `n + p`) for any other count but `n`; those
    /// of [`Table::read`].
    fn points(
        &mut self,
        xs: &[&[f64]],
        n: usize,
        p: usize,
        bound: &[f64],
        unbound: impl FnOnce() -> Error,
    ) -> Result<&mut Self, Error> {
        if p == 0 || xs.len() == n + p {
            return self.read(Block::Points, xs, n + p);
        }
        if xs.len() != n {
            return Err(Error::WrongColumnCount {
                block: Block::Points,
                expected: n + p,
                got: xs.len(),
            });
        }
        if bound.len() != p {
            return Err(unbound());
        }
        self.read(Block::Points, xs, n)?;
        self.inputs.extend(bound.iter().map(|v| v as *const f64));
        let one = self.len != 1;
        self.broadcast.extend(bound.iter().map(|_| one));
        Ok(self)
    }

    /// Checks and appends an output block of `expected` columns.
    fn write(
        &mut self,
        block: Block,
        columns: &mut [&mut [f64]],
        expected: usize,
    ) -> Result<&mut Self, Error> {
        if std::mem::take(&mut self.sized_by_outputs) {
            // Every input is a bound value, broadcast (`points` flagged each so).
            self.len = columns.first().map_or(0, |c| c.len());
        }
        check(block, columns, expected, self.len, false)?;
        self.outputs
            .extend(columns.iter_mut().map(|c| c.as_mut_ptr()));
        Ok(self)
    }
}

/// Checks that `block` has `expected` columns of `len` points (or, with `broadcast`, of
/// one point: an input column broadcast to every point).
fn check<T: AsRef<[f64]>>(
    block: Block,
    columns: &[T],
    expected: usize,
    len: usize,
    broadcast: bool,
) -> Result<(), Error> {
    if columns.len() != expected {
        return Err(Error::WrongColumnCount {
            block,
            expected,
            got: columns.len(),
        });
    }
    for (column, c) in columns.iter().enumerate() {
        let got = c.as_ref().len();
        if got != len && !(broadcast && got == 1) {
            return Err(Error::ColumnLength {
                block,
                column,
                expected: len,
                got,
            });
        }
    }
    Ok(())
}

impl<S: Shape> Equation<S> {
    /// Columns a batch `evaluate` fills: one per function (`m`).
    pub fn value_columns(&self) -> usize {
        self.outputs()
    }

    /// Columns a batch `jacobian` or `gradient` fills with partials: one per structurally
    /// nonzero cell of the Jacobian, placed by [`Equation::jacobian_pattern`].
    pub fn jacobian_columns(&self) -> usize {
        self.jacobian_pattern().nonzeros()
    }

    /// Product columns a batch `jvp` fills: `m`.
    pub fn jvp_columns(&self) -> usize {
        self.outputs()
    }

    /// Product columns a batch `vjp` fills: `n`.
    pub fn vjp_columns(&self) -> usize {
        self.arity()
    }

    /// Product columns a batch `hvp` fills: `n`.
    pub fn hvp_columns(&self) -> usize {
        self.arity()
    }

    /// The partial columns lane `kind` writes: the cells of its own pattern. Each batch
    /// call sizes its partial block from the lane it runs (which a loaded equation's checks
    /// tie to that lane's outputs), never from another lane's pattern.
    fn cells(&self, kind: LaneKind) -> usize {
        self.prepared(kind)
            .lane
            .pattern
            .as_ref()
            .map_or(0, Sparsity::nonzeros)
    }

    /// Runs lane `kind` over a checked table: through the lane's kernel when one answers
    /// it, else the block interpreter.
    ///
    /// # Errors
    /// [`Error::UserFunction`] when user code failed at some point (a panic, a derivative
    /// not given); the outputs are written all the same, NaN where it failed.
    fn batch(&self, kind: LaneKind, table: &Table) -> Result<(), Error> {
        let _ = ddx_ir::user::take_failure();
        let mut failed = self.batch_run(kind, table);
        if ddx_ir::lane::has_twin(kind) {
            // SAFETY: the columns were checked for `table.len` points, and the run that
            // wrote them is over.
            let first = self.prepared(kind).first_product();
            let mended = unsafe { mend(|| self.twin(kind), first, table) };
            failed = failed.or(mended);
        }
        failed.map_or(Ok(()), Err)
    }

    /// [`Equation::batch`], answering the first failure of user code: on the device where
    /// one answers the lane, else on the lane's kernel or the block interpreter, whichever
    /// [`EngineChoice`](crate::engine_choice::EngineChoice) measured faster (the
    /// interpreter alone where no kernel answers).
    fn batch_run(&self, kind: LaneKind, table: &Table) -> Option<Error> {
        let broadcasts = table.broadcasts();
        if let Some(kernel) = self.device.batch(&self.lanes, kind) {
            if broadcasts {
                if let Some(full) = table.materialised() {
                    // The device reads whole columns: the broadcast ones are spelled out.
                    return self.batch_run(kind, &full.table());
                }
            } else {
                let host = HostColumns {
                    len: table.len,
                    inputs: &table.inputs,
                    outputs: &table.outputs,
                };
                if self.device.run(kernel, kind, &host) {
                    return None;
                }
                // The device failed (recorded in its status): the CPU answers, writing
                // every output.
            }
        }
        let p = self.prepared(kind);
        // Each engine as a runner of points `start..start + len`; `piece` gives the points
        // per piece (a multiple of) when a batch is split across threads.
        let blocks = |start: usize, len: usize| {
            let program = p.batch();
            if broadcasts {
                table.staged(start, len, |inputs, outputs, n| {
                    let stage = Stage { inputs, outputs };
                    // SAFETY: `staged` hands out pointers to `n` readable values per input
                    // (a stage of the caller's checked columns, or a broadcast buffer) and
                    // `n` writable ones per output, disjoint from every other stage's.
                    unsafe { program.run_columns(&stage, 0, n) }
                });
            } else {
                // SAFETY: `batch` callers checked every column holds `table.len` values,
                // and `split` hands out disjoint point ranges inside them.
                unsafe { program.run_columns(table, start, len) }
            }
        };
        let piece = |block: usize| if broadcasts { STAGE } else { block };
        let Some(kernel) = self.jit.batch(&self.lanes, kind, table.len) else {
            let program = p.batch();
            debug_assert_eq!(table.inputs.len(), program.inputs());
            debug_assert_eq!(table.outputs.len(), program.outputs());
            let work = table.len.saturating_mul(program.len().max(1));
            return split(0..table.len, work, piece(program.block_size()), blocks);
        };
        let on_kernel = |start: usize, len: usize| {
            if broadcasts {
                table.staged(start, len, |inputs, outputs, n| {
                    // SAFETY: as for the block interpreter above.
                    unsafe { kernel.run_columns(inputs, outputs, 0, n) }
                });
            } else {
                // SAFETY: `batch` callers checked every column holds `table.len` values;
                // the ranges are disjoint and inside them; inputs are `&[f64]` and outputs
                // distinct `&mut [f64]`, so none overlap.
                unsafe { kernel.run_columns(&table.inputs, &table.outputs, start, len) }
            }
        };
        let failed =
            kernel
                .engine_choice()
                .run(table.len, on_kernel, blocks, |engine, start, len| {
                    if len == 0 {
                        return None;
                    }
                    let range = start..start + len;
                    match engine {
                        BatchEngine::Kernel => {
                            let work = len.saturating_mul(p.lane.graph.len().max(1));
                            split(range, work, piece(KERNEL_CHUNK), on_kernel)
                        }
                        BatchEngine::Interpreter => {
                            let program = p.batch();
                            let work = len.saturating_mul(program.len().max(1));
                            split(range, work, piece(program.block_size()), blocks)
                        }
                    }
                });
        // A failure of user code in a trial (on this thread) that no piece of the rest
        // took: the rest ran on other threads, or not at all.
        failed.or_else(ddx_ir::user::take_failure)
    }

    /// `f` at every point of a batch.
    ///
    /// `xs` holds one column per symbol (canonical order), all of one length `p` (the
    /// point count); `values` receives one column per function (`m`, see
    /// [`Equation::value_columns`]), each `p` long: `values[i][k] = fᵢ(x_k)`.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let eq = rt::equation_text("x * exp(y)")?;
    /// let (x, y) = ([1.0, 2.0, 3.0], [0.0, 0.0, 0.0]);   // one column per symbol
    /// let mut f = [0.0; 3];                              // one column per function
    /// eq.evaluate_batch(&[&x, &y], &mut [&mut f])?;
    /// assert_eq!(f, [1.0, 2.0, 3.0]);
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::WrongColumnCount`] when a block has the wrong number of columns,
    /// [`Error::ColumnLength`] when a column is not `p` long. Nothing is written then.
    pub fn evaluate_batch(&self, xs: &[&[f64]], values: &mut [&mut [f64]]) -> Result<(), Error> {
        let mut t = Table::new(&[xs]);
        t.points(xs, self.arity(), self.param_count(), &self.bound, || {
            self.unbound()
        })?
        .write(Block::Values, values, self.outputs())?;
        self.batch(LaneKind::Value, &t)
    }

    /// Values and the Jacobian's structural nonzeros at every point of a batch.
    ///
    /// `partials[c][k]` is cell `c` of [`Equation::jacobian_pattern`] at point `k` (there
    /// are [`Equation::jacobian_columns`] of them); otherwise as
    /// [`Equation::evaluate_batch`].
    ///
    /// # Errors
    /// As [`Equation::evaluate_batch`].
    pub fn jacobian_batch(
        &self,
        xs: &[&[f64]],
        values: &mut [&mut [f64]],
        partials: &mut [&mut [f64]],
    ) -> Result<(), Error> {
        let mut t = Table::new(&[xs]);
        t.points(xs, self.arity(), self.param_count(), &self.bound, || {
            self.unbound()
        })?
        .write(Block::Values, values, self.outputs())?
        .write(Block::Partials, partials, self.cells(LaneKind::Jacobian))?;
        self.batch(LaneKind::Jacobian, &t)
    }

    /// The Jacobian's structural nonzeros at every point, from a lane that does not
    /// compute the values; `partials` as in [`Equation::jacobian_batch`].
    ///
    /// # Errors
    /// As [`Equation::evaluate_batch`].
    pub fn gradient_batch(&self, xs: &[&[f64]], partials: &mut [&mut [f64]]) -> Result<(), Error> {
        let mut t = Table::new(&[xs]);
        t.points(xs, self.arity(), self.param_count(), &self.bound, || {
            self.unbound()
        })?
        .write(Block::Partials, partials, self.cells(LaneKind::Gradient))?;
        self.batch(LaneKind::Gradient, &t)
    }

    /// Values and `J·v` at every point: `vs` holds one direction column per symbol;
    /// `products` receives `m` columns, `products[i][k] = (J(x_k)·v_k)ᵢ`.
    ///
    /// # Errors
    /// As [`Equation::evaluate_batch`].
    pub fn jvp_batch(
        &self,
        xs: &[&[f64]],
        vs: &[&[f64]],
        values: &mut [&mut [f64]],
        products: &mut [&mut [f64]],
    ) -> Result<(), Error> {
        let (n, m) = (self.arity(), self.outputs());
        let mut t = Table::new(&[xs, vs]);
        t.points(xs, n, self.param_count(), &self.bound, || self.unbound())?
            .read(Block::Directions, vs, n)?
            .write(Block::Values, values, m)?
            .write(Block::Products, products, m)?;
        self.batch(LaneKind::Jvp, &t)
    }

    /// Values and `wᵀ·J` at every point: `ws` holds one weight column per function;
    /// `products` receives `n` columns, `products[j][k] = (w_kᵀ·J(x_k))ⱼ`.
    ///
    /// # Errors
    /// As [`Equation::evaluate_batch`].
    pub fn vjp_batch(
        &self,
        xs: &[&[f64]],
        ws: &[&[f64]],
        values: &mut [&mut [f64]],
        products: &mut [&mut [f64]],
    ) -> Result<(), Error> {
        let (n, m) = (self.arity(), self.outputs());
        let mut t = Table::new(&[xs, ws]);
        t.points(xs, n, self.param_count(), &self.bound, || self.unbound())?
            .read(Block::Weights, ws, m)?
            .write(Block::Values, values, m)?
            .write(Block::Products, products, n)?;
        self.batch(LaneKind::Vjp, &t)
    }
}

#[cfg(all(test, any(feature = "jit", feature = "opencl")))]
impl<S: Shape> Equation<S> {
    /// Runs lane `kind` over raw columns: its inputs (symbols, then seeds) and outputs in
    /// the lane's order, checked as a batch call checks them.
    pub(crate) fn lane_batch(
        &self,
        kind: LaneKind,
        inputs: &[&[f64]],
        outputs: &mut [&mut [f64]],
    ) -> Result<(), Error> {
        let lane = &self.prepared(kind).lane;
        let mut t = Table::new(&[inputs]);
        t.read(Block::Points, inputs, lane.inputs())?.write(
            Block::Values,
            outputs,
            lane.outputs.len(),
        )?;
        self.batch(kind, &t)
    }
}

impl<S: Shape> Equation<S> {
    /// Values, the Jacobian's structural nonzeros and the colour-compressed Hessian at
    /// every point of a batch.
    ///
    /// `hessians` holds `m ×` [`Equation::hessian_columns`] columns: output `r`'s block
    /// starts at column `r · hessian_columns()`, and within it column
    /// [`Equation::hessian_cell`]`(i, j)` holds `H(i, j)` (cells off the pattern are
    /// structurally zero and have no column). `values` and `partials` are as in
    /// [`Equation::jacobian_batch`].
    ///
    /// # Errors
    /// As [`Equation::evaluate_batch`].
    pub fn hessian_batch(
        &self,
        xs: &[&[f64]],
        values: &mut [&mut [f64]],
        partials: &mut [&mut [f64]],
        hessians: &mut [&mut [f64]],
    ) -> Result<(), Error> {
        let m = self.outputs();
        let mut t = Table::new(&[xs]);
        t.points(xs, self.arity(), self.param_count(), &self.bound, || {
            self.unbound()
        })?
        .write(Block::Values, values, m)?
        .write(Block::Partials, partials, self.cells(LaneKind::Hessian))?
        .write(Block::Hessians, hessians, m * self.hessian_columns())?;
        self.batch(LaneKind::Hessian, &t)
    }

    /// Values, the gradient's structural nonzeros and `H·v` at every point: `vs` holds one
    /// direction column per symbol; `products` receives `n` columns,
    /// `products[j][k] = (H(x_k)·v_k)ⱼ`. The gradient comes out of the same sweep the
    /// product is built on, so `partials` (as in [`Equation::jacobian_batch`]) costs
    /// nothing extra. One output only.
    ///
    /// # Errors
    /// [`Error::NotScalar`] on a system of more than one output; otherwise as
    /// [`Equation::evaluate_batch`].
    pub fn hvp_batch(
        &self,
        xs: &[&[f64]],
        vs: &[&[f64]],
        values: &mut [&mut [f64]],
        partials: &mut [&mut [f64]],
        products: &mut [&mut [f64]],
    ) -> Result<(), Error> {
        self.scalar_only("hvp_batch")?;
        let n = self.arity();
        let mut t = Table::new(&[xs, vs]);
        t.points(xs, n, self.param_count(), &self.bound, || self.unbound())?
            .read(Block::Directions, vs, n)?
            .write(Block::Values, values, 1)?
            .write(Block::Partials, partials, self.cells(LaneKind::Hvp))?
            .write(Block::Products, products, n)?;
        self.batch(LaneKind::Hvp, &t)
    }
}

impl<S: Shape> Equation<S> {
    /// [`Equation::derivative_tensor`] at every point of a batch: `xs` holds one column
    /// per symbol, `tensors` [`Equation::tensor_columns`]`(k)` = `m·nᵏ` columns in the
    /// dense layout of [`Equation::derivative_tensor`] (column `r·nᵏ + d`). Each point's
    /// entries are the per-point call's bits. Every column is checked before anything is
    /// built or written.
    ///
    /// # Errors
    /// As [`Equation::derivative_tensor`] for the order; [`Error::WrongColumnCount`] and
    /// [`Error::ColumnLength`] for the columns.
    pub fn derivative_tensor_batch(
        &self,
        k: usize,
        xs: &[&[f64]],
        tensors: &mut [&mut [f64]],
    ) -> Result<(), Error> {
        let size = self.tensor_size(k)?;
        let mut t = Table::new(&[xs]);
        t.points(xs, self.arity(), self.param_count(), &self.bound, || {
            self.unbound()
        })?;
        check(Block::Tensors, tensors, size, t.len, false)?;
        let lane = self.tensor_lane(k)?;
        let dense = lane.unique_of.len().max(1);
        // Each distinct partial is written to the first dense column that holds it, then
        // copied to the others.
        let mut first = vec![usize::MAX; lane.unique * self.outputs()];
        for r in 0..self.outputs() {
            for (d, &u) in lane.unique_of.iter().enumerate() {
                let slot = &mut first[r * lane.unique + u as usize];
                if *slot == usize::MAX {
                    *slot = r * dense + d;
                }
            }
        }
        t.outputs
            .extend(first.iter().map(|&c| tensors[c].as_mut_ptr()));
        let program = lane.batch();
        let _ = ddx_ir::user::take_failure();
        let failed = if t.broadcasts() {
            let work = t.len.saturating_mul(program.len().max(1));
            split(0..t.len, work, STAGE, |start, len| {
                t.staged(start, len, |inputs, outputs, n| {
                    let stage = Stage { inputs, outputs };
                    // SAFETY: as in `Equation::batch`.
                    unsafe { program.run_columns(&stage, 0, n) }
                });
            })
        } else {
            run(program, &t)
        };
        if let Some(e) = failed {
            return Err(e);
        }
        for r in 0..self.outputs() {
            for (d, &u) in lane.unique_of.iter().enumerate() {
                let src = first[r * lane.unique + u as usize];
                let dst = r * dense + d;
                if src != dst {
                    let (a, b) = tensors.split_at_mut(dst.max(src));
                    if src < dst {
                        b[0].copy_from_slice(a[src]);
                    } else {
                        a[dst].copy_from_slice(b[0]);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Points per stage of a batch with broadcast columns: a multiple of every block size and
/// vector width, and small enough that a stage's broadcast buffers stay in cache.
const STAGE: usize = 1024;

/// One stage's column pointers (`Table::staged`), as the block interpreter reads them.
struct Stage<'a> {
    inputs: &'a [*const f64],
    outputs: &'a [*mut f64],
}

// SAFETY: as `Table`: the pointers are read by one thread, for one stage.
unsafe impl Sync for Stage<'_> {}

impl Columns for Stage<'_> {
    fn input(&self, k: usize) -> *const f64 {
        self.inputs[k]
    }
    fn output(&self, k: usize) -> *mut f64 {
        self.outputs[k]
    }
}

/// A table's columns with every broadcast one spelled out at the batch's length.
struct Materialised {
    len: usize,
    columns: Vec<Vec<f64>>,
    inputs: Pointers<*const f64>,
    broadcast: Pointers<bool>,
    outputs: Pointers<*mut f64>,
}

impl Materialised {
    fn table(&self) -> Table {
        let mut spelled = self.columns.iter();
        Table {
            len: self.len,
            inputs: self
                .inputs
                .iter()
                .zip(&self.broadcast)
                .map(|(&p, &b)| {
                    if b {
                        spelled.next().map_or(p, |c| c.as_ptr())
                    } else {
                        p
                    }
                })
                .collect(),
            broadcast: self.broadcast.iter().map(|_| false).collect(),
            outputs: self.outputs.clone(),
            sized_by_outputs: false,
        }
    }
}

impl Table {
    /// Whether some input is broadcast.
    fn broadcasts(&self) -> bool {
        self.broadcast.iter().any(|&b| b)
    }

    /// The broadcast columns spelled out at the batch's length (for the device, which
    /// reads whole columns); `None` when they would take more memory than is sensible
    /// (the CPU answers then).
    fn materialised(&self) -> Option<Materialised> {
        let count = self.broadcast.iter().filter(|&&b| b).count();
        if count.checked_mul(self.len)? > 1 << 28 {
            return None;
        }
        let columns = self
            .inputs
            .iter()
            .zip(&self.broadcast)
            .filter(|(_, &b)| b)
            // SAFETY: a broadcast input points at one readable value (checked).
            .map(|(&p, _)| vec![unsafe { *p }; self.len])
            .collect();
        Some(Materialised {
            len: self.len,
            columns,
            inputs: self.inputs.clone(),
            broadcast: self.broadcast.clone(),
            outputs: self.outputs.clone(),
        })
    }

    /// Calls `body(inputs, outputs, n)` for each stage of at most [`STAGE`] points of
    /// `start..start + len`: pointers to the stage's first point in every column, a
    /// broadcast input pointing at a buffer of `n` copies of its value.
    fn staged(
        &self,
        start: usize,
        len: usize,
        mut body: impl FnMut(&[*const f64], &[*mut f64], usize),
    ) {
        let buffers: Vec<Vec<f64>> = self
            .inputs
            .iter()
            .zip(&self.broadcast)
            .filter(|(_, &b)| b)
            // SAFETY: a broadcast input points at one readable value (checked).
            .map(|(&p, _)| vec![unsafe { *p }; STAGE.min(len)])
            .collect();
        let mut inputs: Pointers<*const f64> = self.inputs.clone();
        let mut outputs: Pointers<*mut f64> = self.outputs.clone();
        let mut at = start;
        while at < start + len {
            let n = STAGE.min(start + len - at);
            let mut b = buffers.iter();
            for ((slot, &base), &broadcast) in
                inputs.iter_mut().zip(&self.inputs).zip(&self.broadcast)
            {
                *slot = if broadcast {
                    b.next().map_or(base, |v| v.as_ptr())
                } else {
                    // The column holds `self.len` values, and `at < self.len`.
                    base.wrapping_add(at)
                };
            }
            for (slot, &base) in outputs.iter_mut().zip(&self.outputs) {
                *slot = base.wrapping_add(at);
            }
            body(&inputs, &outputs, n);
            at += n;
        }
    }
}

/// Points per chunk of a kernel's batch are a multiple of this (any vector width divides
/// it, so only a batch's last chunk runs a remainder loop).
const KERNEL_CHUNK: usize = 64;

/// Points per piece of the NaN scan of [`mend`] (a longer batch is scanned on rayon's
/// threads).
const SCAN: usize = 1 << 14;

/// Runs the zero-skipping twin (`ddx_ir::lane::build_twin`; `twin` builds it, asked only
/// when some point needs it) at the points of `table` whose products (the outputs from `first_product` on) hold a NaN, writing its outputs
/// there: a `jvp` or `hvp` batch then
/// answers each point as the per-point call does. The outputs are scanned in pieces
/// across threads; the points found are gathered into columns of their own and run as
/// one batch of the twin's block program (the interpreter: every engine answers a lane's
/// bits), split across threads when large, then scattered back. Answers the first
/// failure of user code in the twin's run.
///
/// # Safety
/// Every column of `table` holds `table.len` values (one, broadcast, where `broadcast`
/// says), and nothing else reads or writes the outputs meanwhile.
unsafe fn mend<'a>(
    twin: impl FnOnce() -> Option<&'a Prepared>,
    first_product: usize,
    table: &Table,
) -> Option<Error> {
    // Column by column (a loop the compiler vectorises), then the points flagged.
    let scan = |start: usize, end: usize| -> Vec<usize> {
        let mut nan = vec![0u64; end - start];
        for &o in table.outputs.get(first_product..).unwrap_or(&[]) {
            // SAFETY: `start..end` lies inside every output column, which nothing writes
            // while it is read.
            let column = unsafe { std::slice::from_raw_parts(o.add(start), end - start) };
            for (flag, v) in nan.iter_mut().zip(column) {
                // A flag as wide as the value, so the compare and the `or` vectorise.
                *flag |= u64::from(v.is_nan());
            }
        }
        (start..end)
            .zip(nan)
            .filter(|&(_, f)| f != 0)
            .map(|(k, _)| k)
            .collect()
    };
    let len = table.len;
    let points: Vec<usize> = if len <= SCAN || CALLING_THREAD.with(std::cell::Cell::get) {
        scan(0, len)
    } else {
        (0..len.div_ceil(SCAN))
            .into_par_iter()
            .flat_map_iter(|c| scan(c * SCAN, ((c + 1) * SCAN).min(len)))
            .collect()
    };
    if points.is_empty() {
        return None;
    }
    let twin = twin()?;
    let inputs: Vec<Vec<f64>> = table
        .inputs
        .iter()
        .zip(&table.broadcast)
        .map(|(&p, &broadcast)| {
            points
                .iter()
                // SAFETY: a broadcast input holds one value, any other `table.len`.
                .map(|&k| unsafe {
                    if broadcast {
                        *p
                    } else {
                        *p.add(k)
                    }
                })
                .collect()
        })
        .collect();
    let mut outputs: Vec<Vec<f64>> = table
        .outputs
        .iter()
        .map(|_| vec![0.0; points.len()])
        .collect();
    let gathered = Table {
        len: points.len(),
        inputs: inputs.iter().map(|c| c.as_ptr()).collect(),
        broadcast: inputs.iter().map(|_| false).collect(),
        outputs: outputs.iter_mut().map(|c| c.as_mut_ptr()).collect(),
        sized_by_outputs: false,
    };
    let failed = run(twin.batch(), &gathered);
    for (&o, column) in table.outputs.iter().zip(&outputs) {
        for (&k, &v) in points.iter().zip(column) {
            // SAFETY: as above.
            unsafe { *o.add(k) = v };
        }
    }
    failed
}

/// Runs `program` over the points of `table`, split across threads when large; answers
/// the first failure of user code.
fn run(program: &Program, table: &Table) -> Option<Error> {
    let work = table.len.saturating_mul(program.len().max(1));
    split(0..table.len, work, program.block_size(), |start, len| {
        // SAFETY: `batch` checked every column holds `table.len` values, and `split`
        // hands out disjoint point ranges inside them.
        unsafe { program.run_columns(table, start, len) }
    })
}

/// Calls `body(start, len)` over the points of `range`: at once on this thread when `work`
/// (instruction-points) is below [`PARALLEL_WORK`] or inside [`on_calling_thread`], else
/// in disjoint chunks of a multiple of `block` points across rayon's threads.
///
/// Answers the first failure user code recorded (`ddx_ir::user::take_failure`) on any of
/// the threads, taken after each piece.
fn split(
    range: std::ops::Range<usize>,
    work: usize,
    block: usize,
    body: impl Fn(usize, usize) + Sync,
) -> Option<Error> {
    let (first, len) = (range.start, range.len());
    let threads = rayon::current_num_threads();
    if threads <= 1 || work < PARALLEL_WORK || CALLING_THREAD.with(std::cell::Cell::get) {
        body(first, len);
        return ddx_ir::user::take_failure();
    }
    let chunk = len.div_ceil(threads * 4).div_ceil(block) * block;
    let failed = std::sync::Mutex::new(None);
    (0..len.div_ceil(chunk)).into_par_iter().for_each(|c| {
        let start = c * chunk;
        body(first + start, chunk.min(len - start));
        if let Some(e) = ddx_ir::user::take_failure() {
            if let Ok(mut f) = failed.lock() {
                f.get_or_insert(e);
            }
        }
    });
    failed.into_inner().ok().flatten()
}
