//! Kernels: compiled machine code in executable memory, and its two entry points.
//!
//! **Invariants.** A [`Kernel`] owns one anonymous mapping that was written while it was
//! readable and writable, then turned read-and-execute before any call (W^X: it is never
//! writable and executable at once). Its bytes are the code of one function the compiler
//! produced for one lane graph and one [`Shape`], with no relocations (the compiler refuses
//! code that has any), or the same bytes read back from a validated cache entry whose key
//! names that graph, shape, code generator and host. The entry point is the first byte —
//! except for a segmented lane ([`Plan`](super::lower::Plan)), whose code is several point
//! functions, run in order on one heap scratch area, with their offsets at its end (the
//! layout of [`Compiler::compile`](super::compile::Compiler::compile)). A point kernel that
//! is not segmented ends with its constant table (the values its loops and its vector
//! operations read, passed to it as its fourth argument), the table's place and the
//! length of the heap scratch its loops use (its fifth argument). The mapping lives as
//! long as the kernel; whoever calls a kernel keeps it alive for the call.
//!
//! **Scratch.** A call gets its scratch from its thread ([`with_scratch`]): one buffer per
//! thread, grown to the largest a kernel asked for and kept, so a call allocates nothing
//! once warm; a kernel that re-enters ddx on its thread (through a user function) runs
//! the inner call on a fresh buffer.

use super::lower::{self, Plan, Shape};
use super::reroll::MAX_AREA_BYTES;
use crate::engine_choice::EngineChoice;
use crate::options::OptLevel;
use ddx_ir::math::{MathTable, MATH_TABLE};
use ddx_ir::{Error, Lane};
use memmap2::{Mmap, MmapMut};
use std::cell::RefCell;

/// `extern "C" fn(inputs, outputs, table, constants, scratch)` of a [`Shape::Point`]
/// kernel.
type PointFn = unsafe extern "C" fn(*const f64, *mut f64, *const MathTable, *const f64, *mut f64);
/// `extern "C" fn(inputs, outputs, table, scratch)` of one segment of a segmented kernel.
type SegmentFn = unsafe extern "C" fn(*const f64, *mut f64, *const MathTable, *mut f64);
/// `extern "C" fn(inputs, outputs, start, len, table)` of a [`Shape::Column`] kernel.
type ColumnFn =
    unsafe extern "C" fn(*const *const f64, *const *mut f64, usize, usize, *const MathTable);

/// Compiled code for one lane, ready to call.
#[derive(Debug)]
pub(crate) struct Kernel {
    map: Mmap,
    shape: Shape,
    level: OptLevel,
    /// The lane's input count (symbols, then seeds).
    inputs: usize,
    /// The lane's output count.
    outputs: usize,
    /// The code bytes, kept when `retain_object` asks for them (a later save writes them).
    object: Option<Vec<u8>>,
    /// For a segmented lane, each segment's offset in the mapping.
    segments: Option<Segments>,
    /// For a point kernel that is not segmented, the byte offset of its constant table in
    /// the mapping (checked by [`point_trailer`]).
    constants: usize,
    /// The `f64`s of heap scratch a call needs: a segmented kernel's slots, or the areas
    /// of a point kernel's loops (0 for a column kernel).
    scratch: usize,
    /// Whether every function was compiled with the backtracking allocator after a
    /// first kernel that was not (`compile::refine`).
    refined: bool,
    /// Whether its batches run faster than the block interpreter's (measured by the
    /// first batches it runs).
    choice: EngineChoice,
}

/// The byte offset of the constant table of a point kernel's `code` and the length of its
/// scratch in values (see the layout of
/// [`Compiler::compile`](super::compile::Compiler::compile)), checked: the table a
/// multiple of 8 bytes after the code's first byte, the table and its three words ending
/// the code exactly, the scratch within [`MAX_AREA_BYTES`] and within
/// [`lower::MAX_SCRATCH_PER_NODE`] values a node of the lane's `nodes`.
fn point_trailer(code: &[u8], nodes: usize) -> Result<(usize, usize), Error> {
    let bad = || object("a point kernel's constant table is damaged");
    let end = code.len().checked_sub(12).ok_or_else(bad)?;
    let word = |at: usize| u32::from_le_bytes([code[at], code[at + 1], code[at + 2], code[at + 3]]);
    let (at, len, scratch) = (
        word(end) as usize,
        word(end + 4) as usize,
        word(end + 8) as usize,
    );
    let fits = at > 0
        && at % 8 == 0
        && len.checked_mul(8).and_then(|b| b.checked_add(at)) == Some(end)
        && scratch <= MAX_AREA_BYTES / 8
        && scratch <= nodes.saturating_mul(lower::MAX_SCRATCH_PER_NODE);
    fits.then_some((at, scratch)).ok_or_else(bad)
}

thread_local! {
    /// This thread's kernel scratch, grown to the largest asked for.
    static SCRATCH: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// Runs `body` with a pointer to at least `len` writable `f64`s: this thread's scratch,
/// or a fresh buffer when the thread's is in use by an outer call on this thread (a
/// kernel's user function that called back into ddx). A `len` of 0 passes a dangling,
/// aligned pointer, never read.
#[inline]
fn with_scratch<R>(len: usize, body: impl FnOnce(*mut f64) -> R) -> R {
    if len == 0 {
        return body(std::ptr::NonNull::dangling().as_ptr());
    }
    with_thread_scratch(len, body)
}

/// [`with_scratch`] for a `len` above 0 (out of line: most point kernels need none).
#[inline(never)]
fn with_thread_scratch<R>(len: usize, body: impl FnOnce(*mut f64) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut s) => {
            if s.len() < len {
                s.resize(len, 0.0);
            }
            body(s.as_mut_ptr())
        }
        Err(_) => body(vec![0.0; len].as_mut_ptr()),
    })
}

/// Where a segmented kernel's functions start.
#[derive(Debug)]
struct Segments {
    starts: Vec<usize>,
}

impl Segments {
    /// Reads the offset table at the end of `code`, checked against `plan`: one offset per
    /// segment, the first 0, increasing, each inside the code before the table.
    fn read(code: &[u8], plan: &Plan) -> Result<Segments, Error> {
        let bad = || object("a segmented kernel's offset table is damaged");
        let word = |at: usize| -> Result<usize, Error> {
            let b = code.get(at..at + 4).ok_or_else(bad)?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        };
        let count_at = code.len().checked_sub(4).ok_or_else(bad)?;
        let count = word(count_at)?;
        if count != plan.segments() {
            return Err(bad());
        }
        let table = count_at.checked_sub(4 * count).ok_or_else(bad)?;
        let starts = (0..count)
            .map(|k| word(table + 4 * k))
            .collect::<Result<Vec<usize>, Error>>()?;
        let ordered = starts.first() == Some(&0)
            && starts.windows(2).all(|w| w[0] < w[1])
            && starts.last().is_some_and(|&l| l < table);
        if !ordered {
            return Err(bad());
        }
        Ok(Segments { starts })
    }
}

impl Kernel {
    /// Places `code` in fresh executable memory.
    ///
    /// `code` must be the relocation-free code of a function of
    /// [`lower::kernel_shape`]`(lane, shape, segment)`, or for a lane that
    /// [`Plan::new`]`(lane, segment)` splits the segments' functions and their offsets (see
    /// the module doc); the callers are the compiler and the validated cache reader.
    ///
    /// # Errors
    /// [`Error::JitObject`] when the memory cannot be mapped or made executable, when
    /// `code` is empty, when a segmented kernel's offset table does not fit its lane, or
    /// when a point kernel's constant table or scratch length is damaged.
    pub(crate) fn new(
        code: &[u8],
        lane: &Lane,
        shape: Shape,
        level: OptLevel,
        retain: bool,
        segment: usize,
    ) -> Result<Kernel, Error> {
        if !cfg!(target_arch = "x86_64") {
            // Other architectures need the instruction cache made coherent with the bytes
            // just written; this build does not do that yet.
            return Err(Error::JitTarget {
                detail: "compiled kernels run on x86-64 only in this build".into(),
            });
        }
        if code.is_empty() {
            return Err(object("empty code"));
        }
        let shape = lower::kernel_shape(lane, shape, segment);
        let (segments, constants, scratch) = match Plan::new(lane, segment) {
            Some(plan) => (Some(Segments::read(code, &plan)?), 0, plan.scratch),
            None if shape == Shape::Point => {
                let (constants, scratch) = point_trailer(code, lane.graph.len())?;
                (None, constants, scratch)
            }
            None => (None, 0, 0),
        };
        let mut map = MmapMut::map_anon(code.len()).map_err(|e| object(&format!("map: {e}")))?;
        map.copy_from_slice(code);
        let map = map
            .make_exec()
            .map_err(|e| object(&format!("make executable: {e}")))?;
        Ok(Kernel {
            map,
            shape,
            level,
            inputs: lane.inputs(),
            outputs: lane.outputs.len(),
            object: retain.then(|| code.to_vec()),
            segments,
            constants,
            scratch,
            refined: false,
            choice: EngineChoice::default(),
        })
    }

    /// The same kernel, marked refined (see `compile::refine`): it ranks above an
    /// unrefined kernel of its level.
    pub(crate) fn refined(mut self) -> Kernel {
        self.refined = true;
        self
    }

    /// The measurement that chooses between it and the block interpreter for batches.
    pub(crate) fn engine_choice(&self) -> &EngineChoice {
        &self.choice
    }

    /// Whether it is a refined kernel.
    pub(crate) fn is_refined(&self) -> bool {
        self.refined
    }

    /// The number of functions it runs (1 unless its lane was segmented).
    #[cfg(test)]
    pub(crate) fn functions(&self) -> usize {
        self.segments.as_ref().map_or(1, |s| s.starts.len())
    }

    /// The number of values in its constant table (0 for a column or segmented kernel).
    #[cfg(test)]
    pub(crate) fn constants(&self) -> usize {
        if self.constants == 0 {
            return 0;
        }
        let end = self.map.len() - 8;
        u32::from_le_bytes([
            self.map[end],
            self.map[end + 1],
            self.map[end + 2],
            self.map[end + 3],
        ]) as usize
    }

    /// The `f64`s of heap scratch a call needs.
    #[cfg(test)]
    pub(crate) fn scratch(&self) -> usize {
        self.scratch
    }

    /// The optimisation level it was compiled at.
    pub(crate) fn level(&self) -> OptLevel {
        self.level
    }

    /// The retained code bytes, if `retain_object` asked for them.
    pub(crate) fn object(&self) -> Option<&[u8]> {
        self.object.as_deref()
    }

    /// Computes the lane at one point: `x` holds its inputs (symbols, then seeds), `out`
    /// receives its outputs.
    ///
    /// # Panics
    /// If the slices' lengths are not the lane's (callers size them from the lane).
    #[inline]
    pub(crate) fn run_point(&self, x: &[f64], out: &mut [f64]) {
        assert!(x.len() == self.inputs && out.len() == self.outputs);
        match self.shape {
            // SAFETY: the lengths were just checked, and `out` is a distinct `&mut`; the
            // scratch holds the kernel's length.
            Shape::Point => with_scratch(self.scratch, |s| unsafe {
                self.point(x.as_ptr(), out.as_mut_ptr(), s)
            }),
            Shape::Column { .. } => self.run_point_in_columns(x, out),
        }
    }

    /// [`Kernel::run_point`] through a column kernel, as columns of one point (out of
    /// line: its pointer tables would otherwise widen every point call's frame).
    #[inline(never)]
    fn run_point_in_columns(&self, x: &[f64], out: &mut [f64]) {
        let ins: Pointers<*const f64> = x.iter().map(|v| v as *const f64).collect();
        let outs: Pointers<*mut f64> = out.iter_mut().map(|v| v as *mut f64).collect();
        // SAFETY: one pointer per input and per output, each to one valid value
        // (`start + len = 1`); outputs are distinct from inputs and from each other.
        unsafe { self.columns(ins.as_ptr(), outs.as_ptr(), 0, 1) }
    }

    /// Computes the lane at points `start..start + len` of columns: `inputs` holds one base
    /// pointer per lane input, `outputs` one per lane output.
    ///
    /// # Safety
    /// Every input column must hold `start + len` readable values and every output column
    /// `start + len` writable ones that no one else reads or writes during the call; no
    /// output may overlap an input or another output.
    ///
    /// # Panics
    /// If the pointer tables' lengths are not the lane's.
    pub(crate) unsafe fn run_columns(
        &self,
        inputs: &[*const f64],
        outputs: &[*mut f64],
        start: usize,
        len: usize,
    ) {
        assert!(inputs.len() == self.inputs && outputs.len() == self.outputs);
        match self.shape {
            // SAFETY: the tables have the lane's lengths; the columns are the caller's.
            Shape::Column { .. } => unsafe {
                self.columns(inputs.as_ptr(), outputs.as_ptr(), start, len)
            },
            Shape::Point => {
                // A point kernel over columns: gather each point, run it, scatter it.
                let mut x: Pointers<f64> = inputs.iter().map(|_| 0.0).collect();
                let mut out: Pointers<f64> = outputs.iter().map(|_| 0.0).collect();
                with_scratch(self.scratch, |scratch| {
                    for at in start..start + len {
                        for (v, c) in x.iter_mut().zip(inputs) {
                            // SAFETY: `at < start + len`, readable by the caller's contract.
                            *v = unsafe { *c.add(at) };
                        }
                        // SAFETY: `x` and `out` have the lane's lengths and do not overlap;
                        // the scratch holds the kernel's length.
                        unsafe { self.point(x.as_ptr(), out.as_mut_ptr(), scratch) };
                        for (v, c) in out.iter().zip(outputs) {
                            // SAFETY: writable and ours alone by the caller's contract.
                            unsafe { *c.add(at) = *v };
                        }
                    }
                });
            }
        }
    }

    /// Calls a point kernel on `scratch`; a segmented one runs its segments in order.
    ///
    /// # Safety
    /// The kernel must be [`Shape::Point`]; `inputs` must hold the lane's input count of
    /// readable values and `outputs` its output count of writable ones, not overlapping
    /// the inputs; `scratch` must point to `self.scratch` writable values no one else
    /// uses during the call.
    #[inline]
    unsafe fn point(&self, inputs: *const f64, outputs: *mut f64, scratch: *mut f64) {
        debug_assert_eq!(self.shape, Shape::Point);
        if let Some(segments) = &self.segments {
            for &at in &segments.starts {
                // SAFETY: `at` is the offset of a function with the `SegmentFn` signature
                // inside the mapping (checked by `Segments::read`), executable and alive
                // while `self` is; the scratch holds the slots every segment addresses.
                unsafe {
                    let f: SegmentFn =
                        std::mem::transmute::<*const u8, SegmentFn>(self.map.as_ptr().add(at));
                    f(inputs, outputs, &MATH_TABLE, scratch);
                }
            }
            return;
        }
        // SAFETY: the mapping holds a function with the `PointFn` signature and the host's
        // C calling convention (module invariant), executable and alive while `self` is.
        let f: PointFn = unsafe { std::mem::transmute::<*const u8, PointFn>(self.map.as_ptr()) };
        // SAFETY: the caller guarantees the memory the kernel reads and writes; the table
        // is a `'static` of the layout the kernel was compiled against; the constant
        // table lies inside the mapping (checked by `point_trailer`), 8-byte aligned; the
        // scratch holds the length the code records.
        unsafe {
            let constants = self.map.as_ptr().add(self.constants).cast::<f64>();
            f(inputs, outputs, &MATH_TABLE, constants, scratch)
        }
    }

    /// Calls a column kernel over points `start..start + len`.
    ///
    /// # Safety
    /// The kernel must be [`Shape::Column`]; `inputs` must point to one base pointer per
    /// lane input and `outputs` to one per lane output, with the column contract of
    /// [`Kernel::run_columns`].
    #[inline]
    unsafe fn columns(
        &self,
        inputs: *const *const f64,
        outputs: *const *mut f64,
        start: usize,
        len: usize,
    ) {
        debug_assert!(matches!(self.shape, Shape::Column { .. }));
        // SAFETY: as in `point`, for the `ColumnFn` signature.
        let f: ColumnFn = unsafe { std::mem::transmute::<*const u8, ColumnFn>(self.map.as_ptr()) };
        // SAFETY: the caller guarantees the columns.
        unsafe { f(inputs, outputs, start, len, &MATH_TABLE) }
    }
}

/// Small tables on the stack.
type Pointers<T> = smallvec::SmallVec<[T; 32]>;

fn object(detail: &str) -> Error {
    Error::JitObject {
        detail: detail.into(),
    }
}
