//! Remembering the last call: the cache an equation may be given, one slot per kind of call.
//!
//! An equation made with a cache ([`rt::equation_with`](crate::rt::equation_with),
//! [`Equation::with_cache`](crate::Equation::with_cache)) keeps, per kind of call, the
//! input block of its last call (the point, then any direction or weights), the outputs,
//! and — where the interpreter answered — the *tape*: every value of the sweep. Asked again
//! with the same bits, it answers from the slot and sweeps nothing; with some inputs moved,
//! it re-runs over the tape only the instructions those inputs reach
//! (`crate::interp::tape`). Either way the answer is the full sweep's, bit for bit. A lane
//! a compiled kernel answers keeps the point and outputs but no tape: a repeat is served,
//! a moved point is computed whole. Batches are never remembered.
//!
//! This module owns the contract between the equation and a cache:
//! - [`ValueCache`] (the specification's `CValueCache`): [`ValueCache::active`], and a
//!   read and a write *lease* per [`Extent`], each lending one [`Entry`] for the length of
//!   a closure. A cache never blocks: a lease it cannot give at once it refuses, and the
//!   call then sweeps for itself.
//! - [`Extent`]: what an entry must hold (which call, which prepared lane, how many inputs
//!   and outputs, which Taylor order) — the equation serves an entry only when its whole
//!   extent is the one asked for, so a re-prepared lane or new options (another lane
//!   variant) are never served a stale entry, whatever the cache does.
//! - [`LastValue`], the cache ddx ships: one slot per kind behind a reader-writer lock,
//!   taken with `try_read`/`try_write` only.
//!
//! **Invariants.** An inactive cache (or none) costs a call one branch: the point is read
//! once, as without a cache. An entry's point, outputs and tape are written only by the
//! equation, inside a write lease, and only together (its fields are private), so an entry
//! whose extent matches always holds one call's inputs with that call's answer.

use ddx_ir::LaneKind;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

/// Which kind of call a slot remembers: one lane's, or the Taylor sweep of
/// [`Equation::univariate_derivative`](crate::Equation::univariate_derivative) and its
/// relatives (which builds no lane).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// A per-point call answered by this lane (`evaluate` by [`LaneKind::Value`], `jvp` by
    /// [`LaneKind::Jvp`], …).
    Lane(LaneKind),
    /// A truncated-Taylor sweep of the value graph at one point.
    Taylor,
}

impl CallKind {
    /// The number of distinct [`CallKind::index`] values.
    pub const COUNT: usize = LaneKind::ALL.len() + 2;

    /// A dense index in `0..COUNT`, for a cache keeping its slots in an array.
    pub fn index(self) -> usize {
        match self {
            CallKind::Lane(kind) => kind as usize,
            CallKind::Taylor => Self::COUNT - 1,
        }
    }
}

/// What an entry has to hold, and for which prepared lane: two calls share an entry only
/// where their whole extent is equal.
///
/// The lane is named by an identity unique in the process (a lane prepared again, or the
/// contracted variant that [`Codegen::contract`](crate::Codegen::contract) selects, is
/// another lane), so a cache shared by several equations, or kept across
/// [`Equation::set_options`](crate::Equation::set_options), still never serves one
/// lane's entry to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Extent {
    call: CallKind,
    lane: u64,
    inputs: usize,
    outputs: usize,
    order: usize,
}

impl Extent {
    pub(crate) fn new(
        call: CallKind,
        lane: u64,
        inputs: usize,
        outputs: usize,
        order: usize,
    ) -> Self {
        Extent {
            call,
            lane,
            inputs,
            outputs,
            order,
        }
    }

    /// Which call the entry remembers.
    pub fn call(&self) -> CallKind {
        self.call
    }

    /// The identity of the prepared lane (or, for [`CallKind::Taylor`], of the
    /// equation's lane set) the entry was computed on.
    pub fn lane(&self) -> u64 {
        self.lane
    }

    /// The length of the input block: `n` symbols, then any seeds (a direction's `n`
    /// values, a covector's `m`).
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// How many output values the entry holds.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// The Taylor order (`0` for lanes).
    pub fn order(&self) -> usize {
        self.order
    }
}

/// One remembered call: its extent, its input block, its outputs, and (where the
/// interpreter answered) its tape — every slot of the sweep. Made empty by
/// [`Entry::default`]; filled only by the equation, inside a write lease.
#[derive(Clone, Debug, Default)]
pub struct Entry {
    extent: Option<Extent>,
    pub(crate) point: Vec<f64>,
    pub(crate) outputs: Vec<f64>,
    pub(crate) tape: Vec<f64>,
    /// Whether `tape` is the sweep at `point` (false when a kernel answered).
    pub(crate) taped: bool,
    /// Which write made the entry what it is: unique in the process (`0`: none, or no
    /// tape), so a comparison made under a read lease ([`Moved`]) is reused under the
    /// write lease only if no write came between.
    pub(crate) stamp: u64,
}

/// The next [`Entry::stamp`].
static NEXT_STAMP: AtomicU64 = AtomicU64::new(1);

impl Entry {
    /// The extent of the call held, or `None` when empty.
    pub fn extent(&self) -> Option<&Extent> {
        self.extent.as_ref()
    }

    /// The input block of the call held (empty when the entry is).
    pub fn point(&self) -> &[f64] {
        &self.point
    }

    /// The outputs of the call held, in the lane's output order.
    pub fn outputs(&self) -> &[f64] {
        &self.outputs
    }

    /// The tape of the call held: every slot of the interpreter's sweep (constants,
    /// inputs, then each instruction's value), or `None` where a kernel answered.
    pub fn tape(&self) -> Option<&[f64]> {
        self.taped.then_some(&self.tape[..])
    }

    /// Bytes the entry holds.
    pub fn memory(&self) -> usize {
        (self.point.capacity() + self.outputs.capacity() + self.tape.capacity())
            * std::mem::size_of::<f64>()
    }

    /// Empties the entry (keeping its buffers for reuse).
    pub fn clear(&mut self) {
        self.extent = None;
        self.stamp = 0;
        self.point.clear();
        self.outputs.clear();
        self.taped = false;
    }

    /// Whether the entry holds a call of `extent` at exactly the input block `inputs`
    /// (bits compared, so `-0.0` is not `0.0` and NaN payloads are told apart).
    pub(crate) fn holds(&self, extent: &Extent, inputs: &[f64]) -> bool {
        self.extent.as_ref() == Some(extent) && same_bits(&self.point, inputs)
    }

    /// Whether the entry holds a call of `extent` with its tape.
    pub(crate) fn taped_for(&self, extent: &Extent) -> bool {
        self.taped && self.extent.as_ref() == Some(extent)
    }

    /// Makes the entry one of `extent` at `inputs`; the caller writes the outputs and
    /// tape to match.
    ///
    /// Only an entry with a tape takes a fresh stamp: a stamp is compared only where the
    /// entry has one ([`Entry::taped_for`]), and `0` is never handed out.
    pub(crate) fn set(&mut self, extent: Extent, inputs: &[f64], taped: bool) {
        self.extent = Some(extent);
        if self.point.len() == inputs.len() {
            copy(&mut self.point, inputs);
        } else {
            self.point.clear();
            self.point.extend_from_slice(inputs);
        }
        self.taped = taped;
        if taped {
            self.stamp = NEXT_STAMP.fetch_add(1, Ordering::Relaxed);
        } else {
            self.tape.clear();
            self.stamp = 0;
        }
    }

    /// [`Entry::set`] with a tape, from an entry of `extent` whose point differs from
    /// `inputs` only where `moved` says: only the moved coordinates are copied.
    pub(crate) fn set_moved(&mut self, extent: Extent, inputs: &[f64], moved: &Moved) {
        match moved.few() {
            Some(few) if self.extent == Some(extent) && self.point.len() == inputs.len() => {
                for &i in few {
                    self.point[i as usize] = inputs[i as usize];
                }
                self.taped = true;
                self.stamp = NEXT_STAMP.fetch_add(1, Ordering::Relaxed);
            }
            _ => self.set(extent, inputs, true),
        }
    }
}

/// Where an input block differs from a remembered one (bits compared): every coordinate,
/// or the first [`Moved::FEW`] that do (in order), or word that more than those do.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Moved {
    few: [u32; Moved::FEW],
    /// How many of `few` are set; `FEW + 1` when more than `FEW` moved (or all did).
    count: usize,
    all: bool,
}

impl Moved {
    /// How many moved coordinates are listed (a coordinate search or a finite difference
    /// moves one or two).
    pub(crate) const FEW: usize = 16;

    /// Compares `new` with `old` (one length), many coordinates at a time where nothing
    /// moved (compiled with AVX2 where the CPU has it).
    pub(crate) fn find(old: &[f64], new: &[f64]) -> Moved {
        debug_assert_eq!(old.len(), new.len());
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the feature is present.
                return unsafe { find_avx2(old, new) };
            }
        }
        find(old, new)
    }

    /// Whether nothing moved.
    pub(crate) fn none(&self) -> bool {
        self.count == 0
    }

    /// Whether every coordinate moved (and there is at least one).
    pub(crate) fn all(&self) -> bool {
        self.all
    }

    /// The moved coordinates, in order, unless more than [`Moved::FEW`] moved.
    pub(crate) fn few(&self) -> Option<&[u32]> {
        (self.count <= Self::FEW).then(|| &self.few[..self.count])
    }
}

/// [`Moved::find`] compiled with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn find_avx2(old: &[f64], new: &[f64]) -> Moved {
    find(old, new)
}

/// [`Moved::find`]'s body.
#[inline(always)]
fn find(old: &[f64], new: &[f64]) -> Moved {
    let mut m = Moved {
        few: [0; Moved::FEW],
        count: 0,
        all: false,
    };
    if !new.is_empty() && every_moved(old, new) {
        m.all = true;
        m.count = Moved::FEW + 1;
        return m;
    }
    let mut at = 0;
    while let Some(i) = scan(old, new, at) {
        if m.count == Moved::FEW {
            m.count += 1;
            break;
        }
        m.few[m.count] = i as u32;
        m.count += 1;
        at = i + 1;
    }
    m
}

/// Whether `a` and `b` hold the same bits (the first coordinate tested here, since a
/// new point usually differs there already).
#[inline]
pub(crate) fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && match (a.first(), b.first()) {
            (Some(x), Some(y)) => x.to_bits() == y.to_bits() && next_moved(a, b, 1).is_none(),
            _ => true,
        }
}

/// Copies `src` into `dst` (one length): thirty-two coordinates a block (eight AVX2
/// registers, where the CPU has AVX2), then sixteen and eight, the last eight overlapping
/// the ones before: a point of a hundred coordinates costs ≈ 80 instructions against
/// `memcpy`'s ≈ 110 (its size dispatch, then 128 bytes a step).
fn copy(dst: &mut [f64], src: &[f64]) {
    debug_assert_eq!(dst.len(), src.len());
    #[cfg(target_arch = "x86_64")]
    {
        if src.len() >= BLOCK && std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the feature is present.
            return unsafe { copy_avx2(dst, src) };
        }
    }
    dst.copy_from_slice(src);
}

/// Coordinates [`copy`] moves a block.
#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 32;

/// [`copy`] compiled with AVX2, for at least [`BLOCK`] coordinates.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn copy_avx2(dst: &mut [f64], src: &[f64]) {
    let n = dst.len().min(src.len());
    if n < BLOCK {
        dst[..n].copy_from_slice(&src[..n]);
        return;
    }
    use std::arch::x86_64::{_mm256_loadu_pd, _mm256_storeu_pd};
    let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
    // Four coordinates at each of `$at + $k…` (a macro, so the loads and stores are
    // compiled with this function's AVX2), written out rather than looped: a loop of one
    // store a step is what the compiler turns back into a `memcpy` call.
    macro_rules! block {
        ($at:expr; $($k:expr),+) => {{
            let at: usize = $at;
            // SAFETY: the callers keep `at + 4 + (the largest k) <= n`, so every lane read
            // and written is in bounds; the slices do not overlap (one is borrowed mutably).
            unsafe {
                $(_mm256_storeu_pd(d.add(at + $k), _mm256_loadu_pd(s.add(at + $k)));)+
            }
        }};
    }
    let mut at = 0;
    while at + BLOCK <= n {
        block!(at; 0, 4, 8, 12, 16, 20, 24, 28);
        at += BLOCK;
    }
    // The rest (fewer than 32) without a loop, which the compiler would turn back into a
    // `memcpy` call: sixteen, eight, then the last eight overlapping the ones before.
    if at + 16 <= n {
        block!(at; 0, 4, 8, 12);
        at += 16;
    }
    if at + 8 <= n {
        block!(at; 0, 4);
        at += 8;
    }
    if at < n {
        block!(n - 8; 0, 4);
    }
}

/// Whether every coordinate of `a` differs in bits from `b`'s (one length), compared
/// eight at a time without a branch.
#[inline(always)]
fn every_moved(a: &[f64], b: &[f64]) -> bool {
    const LANES: usize = 8;
    let mut i = 0;
    while let (Some(x), Some(y)) = (a[i..].first_chunk::<LANES>(), b[i..].first_chunk::<LANES>()) {
        let mut same = false;
        for k in 0..LANES {
            same |= x[k].to_bits() == y[k].to_bits();
        }
        if same {
            return false;
        }
        i += LANES;
    }
    !a[i..]
        .iter()
        .zip(&b[i..])
        .any(|(x, y)| x.to_bits() == y.to_bits())
}

/// The first index `i ≥ from` (below the shorter length) at which `a[i]` and `b[i]` differ
/// in bits, or `None` (compiled with AVX2 where the CPU has it).
pub(crate) fn next_moved(a: &[f64], b: &[f64], from: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the feature is present.
            return unsafe { next_moved_avx2(a, b, from) };
        }
    }
    scan(a, b, from)
}

/// [`next_moved`] compiled with AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn next_moved_avx2(a: &[f64], b: &[f64], from: usize) -> Option<usize> {
    scan(a, b, from)
}

/// [`next_moved`]'s loop: thirty-two coordinates compared at a time without a branch
/// (four AVX2 registers' worth), then eight, so a long stretch that did not move costs a
/// fraction of an element-wise scan.
#[inline(always)]
fn scan(a: &[f64], b: &[f64], from: usize) -> Option<usize> {
    let n = a.len().min(b.len());
    if from >= n {
        return None;
    }
    if a[from].to_bits() != b[from].to_bits() {
        return Some(from); // the next one moved too (a stream of new points)
    }
    let (a, b) = (&a[..n], &b[..n]);
    let mut i = from + 1;
    while let (Some(x), Some(y)) = (a[i..].first_chunk::<32>(), b[i..].first_chunk::<32>()) {
        if differ(x, y) {
            break;
        }
        i += 32;
    }
    while let (Some(x), Some(y)) = (a[i..].first_chunk::<8>(), b[i..].first_chunk::<8>()) {
        if differ(x, y) {
            break;
        }
        i += 8;
    }
    (i..n).find(|&k| a[k].to_bits() != b[k].to_bits())
}

/// Whether `x` and `y` differ in any bit.
#[inline(always)]
fn differ<const N: usize>(x: &[f64; N], y: &[f64; N]) -> bool {
    let mut d = 0u64;
    for k in 0..N {
        d |= x[k].to_bits() ^ y[k].to_bits();
    }
    d != 0
}

/// What a remembered call did, as reported to [`ValueCache::note`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// Answered from the entry: nothing swept.
    Hit,
    /// Re-swept over the remembered tape: this many instructions ran (`0` when another
    /// thread had just stored the same point).
    Resweep {
        /// Instructions run.
        instructions: usize,
    },
    /// Computed whole (a new extent, a compiled kernel, or inputs moved too far) and
    /// stored; `instructions` ran (`0` when a kernel answered or no lane is involved).
    Sweep {
        /// Instructions run.
        instructions: usize,
    },
    /// No lease was to be had (another thread was writing the slot): the call swept for
    /// itself and stored nothing.
    Busy,
}

/// A cache an equation remembers its last calls in (the specification's `CValueCache`).
///
/// The equation asks [`active`](ValueCache::active) first, before reading the point:
/// `false` makes the call exactly the call of an equation without a cache. Otherwise it
/// asks for a read lease on the slot of the call's [`Extent`] (enough to serve a repeat),
/// and on a miss for a write lease, in which it updates the entry; a lease is the length
/// of one call of the closure passed. An implementation must never block: a lease it
/// cannot give at once it refuses (answering `false`), and the call sweeps for itself.
/// The equation checks every entry's extent and point itself, so a cache that lends the
/// wrong entry costs a sweep, never a wrong answer.
pub trait ValueCache: Send + Sync + fmt::Debug {
    /// Whether calls may be served at all.
    fn active(&self) -> bool;

    /// Lends the entry kept for `extent`'s kind of call (for reading) to `lease`, and
    /// answers `true`; or answers `false` without calling it.
    fn read(&self, extent: &Extent, lease: &mut dyn FnMut(&Entry)) -> bool;

    /// Lends the entry kept for `extent`'s kind of call (for writing) to `lease`, and
    /// answers `true`; or answers `false` without calling it.
    fn write(&self, extent: &Extent, lease: &mut dyn FnMut(&mut Entry)) -> bool;

    /// Told what each remembered call did (by default, nothing is kept).
    fn note(&self, event: Event) {
        let _ = event;
    }

    /// What the cache has counted, if it counts (by default it does not).
    fn stats(&self) -> Option<CacheStats> {
        None
    }
}

/// What [`LastValue`] has counted since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Calls answered from an entry.
    pub hits: u64,
    /// Calls re-swept over a remembered tape.
    pub resweeps: u64,
    /// Calls computed whole and stored.
    pub sweeps: u64,
    /// Calls that found their slot being written and swept for themselves.
    pub busy: u64,
    /// Instructions run by the re-sweeps and stored sweeps (not by busy calls).
    pub instructions: u64,
}

/// The last-call cache ddx ships: one [`Entry`] per [`CallKind`], each behind a
/// reader-writer lock taken only with `try_read` and `try_write`, so any number of threads
/// are served one entry at once and a thread finding it being written sweeps for itself.
/// It counts what it does ([`CacheStats`], through
/// [`Equation::cache_stats`](crate::Equation::cache_stats)).
#[derive(Debug, Default)]
pub struct LastValue {
    slots: [RwLock<Entry>; CallKind::COUNT],
    hits: AtomicU64,
    resweeps: AtomicU64,
    sweeps: AtomicU64,
    busy: AtomicU64,
    instructions: AtomicU64,
}

impl LastValue {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes the entries hold now.
    pub fn memory(&self) -> usize {
        self.slots
            .iter()
            .filter_map(|s| s.try_read().ok().map(|e| e.memory()))
            .sum()
    }
}

impl ValueCache for LastValue {
    fn active(&self) -> bool {
        true
    }

    fn read(&self, extent: &Extent, lease: &mut dyn FnMut(&Entry)) -> bool {
        match self.slots[extent.call.index()].try_read() {
            Ok(entry) => {
                lease(&entry);
                true
            }
            Err(_) => false,
        }
    }

    fn write(&self, extent: &Extent, lease: &mut dyn FnMut(&mut Entry)) -> bool {
        match self.slots[extent.call.index()].try_write() {
            Ok(mut entry) => {
                lease(&mut entry);
                true
            }
            Err(_) => false,
        }
    }

    fn note(&self, event: Event) {
        let add = |c: &AtomicU64, v: usize| {
            c.fetch_add(v as u64, Ordering::Relaxed);
        };
        match event {
            Event::Hit => add(&self.hits, 1),
            Event::Resweep { instructions } => {
                add(&self.resweeps, 1);
                add(&self.instructions, instructions);
            }
            Event::Sweep { instructions } => {
                add(&self.sweeps, 1);
                add(&self.instructions, instructions);
            }
            Event::Busy => add(&self.busy, 1),
        }
    }

    fn stats(&self) -> Option<CacheStats> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Some(CacheStats {
            hits: get(&self.hits),
            resweeps: get(&self.resweeps),
            sweeps: get(&self.sweeps),
            busy: get(&self.busy),
            instructions: get(&self.instructions),
        })
    }
}

/// An `Arc` of a cache is the cache: the caller may keep a handle to it (to read what it
/// holds) while the equation uses it.
impl<C: ValueCache + ?Sized> ValueCache for std::sync::Arc<C> {
    fn active(&self) -> bool {
        (**self).active()
    }
    fn read(&self, extent: &Extent, lease: &mut dyn FnMut(&Entry)) -> bool {
        (**self).read(extent, lease)
    }
    fn write(&self, extent: &Extent, lease: &mut dyn FnMut(&mut Entry)) -> bool {
        (**self).write(extent, lease)
    }
    fn note(&self, event: Event) {
        (**self).note(event)
    }
    fn stats(&self) -> Option<CacheStats> {
        (**self).stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` coordinates of distinct bits, some of them NaN payloads, `-0.0` and infinities.
    fn coords(n: usize, salt: u64) -> Vec<f64> {
        (0..n as u64)
            .map(|i| match i % 5 {
                0 => f64::from_bits(0x7ff8_0000_0000_0001 + i + salt),
                1 => -0.0,
                2 => f64::INFINITY,
                _ => (i as f64 + 0.25) * (salt as f64 + 1.0),
            })
            .collect()
    }

    #[test]
    fn copy_moves_every_bit_and_nothing_outside() {
        for n in 0..=200 {
            let src = coords(n, 7);
            // The destination sits between sentinels, so a write out of bounds shows.
            let mut buf = vec![f64::from_bits(0xdead); n + 2];
            copy(&mut buf[1..n + 1], &src);
            assert_eq!(buf[0].to_bits(), 0xdead, "n = {n}");
            assert_eq!(buf[n + 1].to_bits(), 0xdead, "n = {n}");
            let got: Vec<u64> = buf[1..n + 1].iter().map(|v| v.to_bits()).collect();
            let want: Vec<u64> = src.iter().map(|v| v.to_bits()).collect();
            assert_eq!(got, want, "n = {n}");
        }
    }

    #[test]
    fn same_bits_tells_every_coordinate() {
        for n in [0, 1, 2, 7, 8, 31, 32, 33, 100, 129] {
            let a = coords(n, 3);
            assert!(same_bits(&a, &a.clone()), "n = {n}");
            for i in 0..n {
                let mut b = a.clone();
                b[i] = f64::from_bits(b[i].to_bits() ^ 1); // one bit, NaN payloads too
                assert!(!same_bits(&a, &b), "n = {n}, i = {i}");
            }
            if n > 0 {
                assert!(!same_bits(&a, &a[..n - 1]), "n = {n}: lengths differ");
            }
        }
        assert!(!same_bits(&[0.0], &[-0.0]));
    }

    #[test]
    fn set_keeps_the_point_and_stamps_only_taped_entries() {
        let extent = Extent::new(CallKind::Lane(LaneKind::Value), 1, 40, 1, 0);
        let mut e = Entry::default();
        let (a, b) = (coords(40, 1), coords(40, 2));
        e.set(extent, &a, true);
        let first = e.stamp;
        assert_ne!(first, 0);
        e.set(extent, &b, true); // the same length: copied in place
        assert!(e.stamp != 0 && e.stamp != first);
        assert!(e.holds(&extent, &b) && e.taped_for(&extent));
        e.set(extent, &a, false);
        assert_eq!(e.stamp, 0);
        assert!(e.holds(&extent, &a) && !e.taped_for(&extent));
        assert!(e.tape().is_none());
        let short = coords(5, 4);
        let other = Extent::new(CallKind::Lane(LaneKind::Value), 1, 5, 1, 0);
        e.set(other, &short, false); // another length: the point is remade
        assert!(e.holds(&other, &short) && !e.holds(&extent, &a));
    }
}
