//! The block interpreter: each instruction runs over a block of points.
//!
//! Every input and temporary slot of a block program holds `block` consecutive values, one
//! per point; a constant slot holds no block: an instruction reads its constant operand
//! as one number, the same at every point (so the constants cost no memory traffic and no
//! room in the cache, and blocks stay as long as the temporaries allow). An instruction is
//! a loop over the block that rustc vectorises, one loop for each way its operands come
//! (every one a block, or one of them a constant; a rarer mix reads each operand point by
//! point). Builds of the same loops for AVX-512 (with FMA) and for AVX2+FMA are chosen at
//! run time where the CPU has them. The loops perform the same operation on each point as
//! the per-point interpreter, through the same math functions, so results are
//! bit-identical to it: a fused multiply-add appears only where the graph has an `fma`
//! node (Rust never contracts on its own), and transcendental functions are called point
//! by point through `ddx_ir::math`.

use super::{Code, Instr, Program, Run, Scratch, Tables, BLOCK_SCRATCH};
use ddx_ir::{math, Op};

/// Where a block's inputs come from and its outputs go: base pointers of columns.
pub(crate) trait Columns: Sync {
    /// The first value of input column `k`.
    fn input(&self, k: usize) -> *const f64;
    /// The first value of output column `k`.
    fn output(&self, k: usize) -> *mut f64;
}

impl Program {
    /// Runs points `start..start + len` of `columns` in blocks.
    ///
    /// # Safety
    /// Every input column must hold at least `start + len` readable values and every
    /// output column `start + len` writable ones, and no other thread may write points
    /// `start..start + len` of any output column, nor read them, during the call.
    pub(crate) unsafe fn run_columns(&self, columns: &impl Columns, start: usize, len: usize) {
        BLOCK_SCRATCH.with(|cell| match cell.try_borrow_mut() {
            // SAFETY: the caller's guarantees, passed on.
            Ok(mut s) => unsafe { self.run_columns_in(&mut s, columns, start, len) },
            // Re-entered (user code calling another batch while this thread's block runs
            // one): this thread's scratch is the outer run's, so a fresh one.
            Err(_) => {
                let mut fresh = Scratch::EMPTY;
                // SAFETY: as above.
                unsafe { self.run_columns_in(&mut fresh, columns, start, len) }
            }
        });
    }

    /// [`Program::run_columns`] in scratch `s`: a block for every slot past the constants.
    ///
    /// # Safety
    /// As [`Program::run_columns`].
    unsafe fn run_columns_in(
        &self,
        s: &mut Scratch,
        columns: &impl Columns,
        start: usize,
        len: usize,
    ) {
        let b = self.block;
        let k = self.consts.len();
        if s.program != self.id {
            s.slots.clear();
            s.slots.resize((self.slots - k) * b, 0.0);
            s.program = self.id;
        }
        let mut at = start;
        while at < start + len {
            let n = b.min(start + len - at);
            for j in 0..self.inputs {
                // SAFETY: the caller guarantees `at + n` readable values.
                let src = unsafe { std::slice::from_raw_parts(columns.input(j).add(at), n) };
                s.slots[j * b..j * b + n].copy_from_slice(src);
            }
            let frame = Frame {
                s: s.slots.as_mut_ptr(),
                consts: &self.consts,
                b,
                n,
            };
            // SAFETY: `lower` checked every slot below `self.slots`, the scratch holds a
            // block of `b` for each of the `self.slots - k` slots past the constants, and
            // `n <= b`.
            unsafe { dispatch(&self.runs, &self.instrs, &self.tables(), &frame) };
            for (j, &slot) in self.outputs.iter().enumerate() {
                // SAFETY: the caller guarantees `at + n` writable values that no one
                // else touches.
                let dst = unsafe { std::slice::from_raw_parts_mut(columns.output(j).add(at), n) };
                match frame.arg(slot) {
                    // SAFETY: the slot's block is in bounds (as above).
                    Arg::Block(from) => dst.copy_from_slice(unsafe { from_block(from, n) }),
                    Arg::Splat(c) => dst.fill(c),
                }
            }
            at += n;
        }
    }
}

/// One block's view of the slots: the blocks past the constants at `s` (`b` values each,
/// the first `n` live), and the constants themselves.
struct Frame<'a> {
    s: *mut f64,
    consts: &'a [f64],
    b: usize,
    n: usize,
}

/// How an instruction reads an operand: a block of values, or one constant for every point.
#[derive(Clone, Copy)]
enum Arg {
    Block(*const f64),
    Splat(f64),
}

impl Frame<'_> {
    /// Where slot `slot` is read.
    ///
    /// A constant slot's value, or the start of a block that is in bounds when `slot` is
    /// below the program's slot count (the callers' contract).
    #[inline(always)]
    fn arg(&self, slot: u32) -> Arg {
        let slot = slot as usize;
        match self.consts.get(slot) {
            Some(&c) => Arg::Splat(c),
            None => Arg::Block(self.s.wrapping_add((slot - self.consts.len()) * self.b)),
        }
    }

    /// The block destination slot `slot` is written to (never a constant: an operation's).
    ///
    /// # Safety
    /// `slot` must be a temporary's slot of the program, and nothing else may be borrowed
    /// from its block while the answer lives.
    #[inline(always)]
    unsafe fn out<'b>(&self, slot: u32) -> &'b mut [f64] {
        let at = (slot as usize).saturating_sub(self.consts.len()) * self.b;
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.s.add(at), self.n) }
    }

    /// The value of slot `slot` at point `p`.
    ///
    /// # Safety
    /// `slot` below the program's slot count, `p < n`.
    #[inline(always)]
    unsafe fn at(&self, slot: u32, p: usize) -> f64 {
        match self.arg(slot) {
            // SAFETY: the caller's contract.
            Arg::Block(a) => unsafe { *a.add(p) },
            Arg::Splat(c) => c,
        }
    }
}

/// `n` values of a block.
///
/// # Safety
/// `a` must point to `n` initialised values that nothing writes while the answer lives.
#[inline(always)]
unsafe fn from_block<'a>(a: *const f64, n: usize) -> &'a [f64] {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(a, n) }
}

/// Runs the block loops with the widest instruction set the CPU has.
///
/// # Safety
/// As [`execute`].
unsafe fn dispatch(runs: &[Run], instrs: &[Instr], t: &Tables<'_>, f: &Frame<'_>) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512dq") && has!("avx512vl") && has!("fma") {
            // SAFETY: the features are present; the slot contract is the caller's.
            return unsafe { execute_avx512(runs, instrs, t, f) };
        }
        if has!("avx2") && has!("fma") {
            // SAFETY: as above.
            return unsafe { execute_avx2(runs, instrs, t, f) };
        }
    }
    // SAFETY: as above.
    unsafe { execute::<false>(runs, instrs, t, f) }
}

/// [`execute`] compiled for AVX-512 (512-bit vectors) and FMA.
///
/// # Safety
/// The CPU must have AVX-512 F, DQ, VL and FMA; otherwise as [`execute`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
unsafe fn execute_avx512(runs: &[Run], instrs: &[Instr], t: &Tables<'_>, f: &Frame<'_>) {
    // SAFETY: forwarded; the CPU has AVX2.
    unsafe { execute::<true>(runs, instrs, t, f) }
}

/// [`execute`] compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU must have AVX2 and FMA; otherwise as [`execute`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn execute_avx2(runs: &[Run], instrs: &[Instr], t: &Tables<'_>, f: &Frame<'_>) {
    // SAFETY: forwarded; the CPU has AVX2.
    unsafe { execute::<true>(runs, instrs, t, f) }
}

/// Runs every instruction over the first `f.n` points of each block, [`Code::CallN`]'s
/// argument slots and the chains' factors in `t.lists`.
///
/// # Safety
/// Every slot index (in `instrs` and `t.lists`) must be below the program's slot count
/// (`f.s` holds a block of `f.b` values for each slot past the constants), `f.n <= f.b`,
/// runs must lie inside `instrs` and every list inside `t.lists` (and a
/// [`Code::DotConst`]'s inside `t.weights`), every destination must be a temporary's, and
/// no destination may equal one of its operands. `AVX2`: the CPU has AVX2 (and the caller
/// is compiled for it).
#[inline(always)]
unsafe fn execute<const AVX2: bool>(runs: &[Run], instrs: &[Instr], t: &Tables<'_>, f: &Frame<'_>) {
    let (lists, n) = (t.lists, f.n);
    // SAFETY (all the loops): the caller's contract makes every block in bounds, and the
    // destination block disjoint from the operand blocks.
    macro_rules! run {
        ($r:expr, 1, |$x:ident| $body:expr) => {
            for i in &instrs[$r.start as usize..$r.end as usize] {
                let d = unsafe { f.out(i.dst) };
                match f.arg(i.args[0]) {
                    Arg::Block(a) => {
                        for (d, &$x) in d.iter_mut().zip(unsafe { from_block(a, n) }) {
                            *d = $body;
                        }
                    }
                    Arg::Splat($x) => d.fill($body),
                }
            }
        };
        ($r:expr, 2, |$x:ident, $y:ident| $body:expr) => {
            for i in &instrs[$r.start as usize..$r.end as usize] {
                let d = unsafe { f.out(i.dst) };
                match (f.arg(i.args[0]), f.arg(i.args[1])) {
                    (Arg::Block(a), Arg::Block(c)) => {
                        let (a, c) = unsafe { (from_block(a, n), from_block(c, n)) };
                        for ((d, &$x), &$y) in d.iter_mut().zip(a).zip(c) {
                            *d = $body;
                        }
                    }
                    (Arg::Splat($x), Arg::Block(c)) => {
                        for (d, &$y) in d.iter_mut().zip(unsafe { from_block(c, n) }) {
                            *d = $body;
                        }
                    }
                    (Arg::Block(a), Arg::Splat($y)) => {
                        for (d, &$x) in d.iter_mut().zip(unsafe { from_block(a, n) }) {
                            *d = $body;
                        }
                    }
                    (Arg::Splat($x), Arg::Splat($y)) => d.fill($body),
                }
            }
        };
        ($r:expr, 3, |$x:ident, $y:ident, $z:ident| $body:expr) => {
            for i in &instrs[$r.start as usize..$r.end as usize] {
                let d = unsafe { f.out(i.dst) };
                match (f.arg(i.args[0]), f.arg(i.args[1]), f.arg(i.args[2])) {
                    (Arg::Block(a), Arg::Block(c), Arg::Block(e)) => {
                        let (a, c, e) =
                            unsafe { (from_block(a, n), from_block(c, n), from_block(e, n)) };
                        for (((d, &$x), &$y), &$z) in d.iter_mut().zip(a).zip(c).zip(e) {
                            *d = $body;
                        }
                    }
                    (Arg::Splat($x), Arg::Block(c), Arg::Block(e)) => {
                        let (c, e) = unsafe { (from_block(c, n), from_block(e, n)) };
                        for ((d, &$y), &$z) in d.iter_mut().zip(c).zip(e) {
                            *d = $body;
                        }
                    }
                    (Arg::Block(a), Arg::Splat($y), Arg::Block(e)) => {
                        let (a, e) = unsafe { (from_block(a, n), from_block(e, n)) };
                        for ((d, &$x), &$z) in d.iter_mut().zip(a).zip(e) {
                            *d = $body;
                        }
                    }
                    (Arg::Block(a), Arg::Block(c), Arg::Splat($z)) => {
                        let (a, c) = unsafe { (from_block(a, n), from_block(c, n)) };
                        for ((d, &$x), &$y) in d.iter_mut().zip(a).zip(c) {
                            *d = $body;
                        }
                    }
                    // Two or three constants: each operand read point by point.
                    _ => {
                        for (p, d) in d.iter_mut().enumerate() {
                            let ($x, $y, $z) = unsafe {
                                (f.at(i.args[0], p), f.at(i.args[1], p), f.at(i.args[2], p))
                            };
                            *d = $body;
                        }
                    }
                }
            }
        };
    }
    for r in runs {
        match r.code {
            Code::Op(Op::Neg) => run!(r, 1, |a| -a),
            // Never in a lane (`Graph::extract` removes it).
            Code::Op(Op::Hold) => run!(r, 1, |a| a),
            // Block schedules never have it; it is `Add` over slots either way.
            Code::Op(Op::Add) | Code::Accumulate => run!(r, 2, |a, c| a + c),
            Code::Op(Op::Sub) => run!(r, 2, |a, c| a - c),
            Code::Op(Op::Mul) => run!(r, 2, |a, c| a * c),
            Code::Op(Op::Div) => run!(r, 2, |a, c| a / c),
            Code::Op(Op::Sqrt) => run!(r, 1, |a| a.sqrt()),
            Code::Op(Op::Abs) => run!(r, 1, |a| a.abs()),
            Code::Op(Op::Sign) => run!(r, 1, |a| math::sign(a)),
            Code::Op(Op::Max) => run!(r, 2, |a, c| math::max(a, c)),
            Code::Op(Op::Min) => run!(r, 2, |a, c| math::min(a, c)),
            Code::Op(Op::Lt) => run!(r, 2, |a, c| math::truth(a < c)),
            Code::Op(Op::Le) => run!(r, 2, |a, c| math::truth(a <= c)),
            Code::Op(Op::Eq) => run!(r, 2, |a, c| math::truth(a == c)),
            Code::Op(Op::Ne) => run!(r, 2, |a, c| math::ne(a, c)),
            Code::Op(Op::Select) => run!(r, 3, |c, t, e| math::select(c, t, e)),
            Code::Op(Op::Fma) => run!(r, 3, |a, c, e| a.mul_add(c, e)),
            Code::Op(Op::Call) => run!(r, 3, |a, c, e| ddx_ir::user::call(a, c, e)),
            Code::Op(Op::Pow) => run!(r, 2, |a, c| math::pow(a, c)),
            Code::Op(Op::Atan2) => run!(r, 2, |a, c| math::atan2(a, c)),
            Code::Op(Op::Hypot) => run!(r, 2, |a, c| math::hypot(a, c)),
            Code::Op(Op::Sin) => run!(r, 1, |a| math::sin(a)),
            Code::Op(Op::Cos) => run!(r, 1, |a| math::cos(a)),
            Code::Op(Op::Tan) => run!(r, 1, |a| math::tan(a)),
            // SAFETY (both): the CPU has AVX2 and FMA where `AVX2` (the caller's contract).
            Code::Op(Op::Exp) => unsafe {
                fours_run::<AVX2>(
                    f,
                    &instrs[r.start as usize..r.end as usize],
                    n,
                    |x| math::exp(x),
                    |x| super::exp4(x),
                )
            },
            Code::Op(Op::Log) => unsafe {
                fours_run::<AVX2>(
                    f,
                    &instrs[r.start as usize..r.end as usize],
                    n,
                    |x| math::log(x),
                    |x| super::log4(x),
                )
            },
            Code::Op(Op::Log10) => run!(r, 1, |a| math::log10(a)),
            Code::Op(Op::Cbrt) => run!(r, 1, |a| math::cbrt(a)),
            Code::Op(Op::Asin) => run!(r, 1, |a| math::asin(a)),
            Code::Op(Op::Acos) => run!(r, 1, |a| math::acos(a)),
            Code::Op(Op::Atan) => run!(r, 1, |a| math::atan(a)),
            Code::Op(Op::Sinh) => run!(r, 1, |a| math::sinh(a)),
            Code::Op(Op::Cosh) => run!(r, 1, |a| math::cosh(a)),
            Code::Op(Op::Tanh) => run!(r, 1, |a| math::tanh(a)),
            Code::Op(Op::Asinh) => run!(r, 1, |a| math::asinh(a)),
            Code::Op(Op::Acosh) => run!(r, 1, |a| math::acosh(a)),
            Code::Op(Op::Atanh) => run!(r, 1, |a| math::atanh(a)),
            Code::Op(Op::Erf) => run!(r, 1, |a| math::erf(a)),
            Code::Op(Op::Log1p) => run!(r, 1, |a| math::log1p(a)),
            Code::Op(Op::Expm1) => run!(r, 1, |a| math::expm1(a)),
            Code::Op(Op::Log2) => run!(r, 1, |a| math::log2(a)),
            Code::Op(Op::Recip) => run!(r, 1, |a| 1.0 / a),
            Code::Op(Op::Powi) => run!(r, 2, |a, c| math::powi(a, c)),
            Code::MulAdd => run!(r, 3, |a, b, c| a * b + c),
            Code::MulSub => run!(r, 3, |a, b, c| a * b - c),
            Code::SubMul => run!(r, 3, |a, b, c| c - a * b),
            Code::MulMul => run!(r, 3, |a, b, c| a * b * c),
            Code::MulDiv => run!(r, 3, |a, b, c| a * b / c),
            Code::AddAdd => run!(r, 3, |a, b, c| a + b + c),
            Code::AddDiv => run!(r, 3, |a, b, c| c + a / b),
            Code::SubDiv => run!(r, 3, |a, b, c| c - a / b),
            // Level programs only; as `execute` computes them (`super::opaque`).
            Code::MulNeg => run!(r, 2, |a, b| -super::opaque(a * b)),
            Code::DivNeg => run!(r, 2, |a, b| -super::opaque(a / b)),
            Code::AddNeg => run!(r, 2, |a, b| -super::opaque(super::add_regs_in_order(a, b))),
            Code::NegDiv => run!(r, 2, |a, b| super::opaque(-a) / b),
            // A chain's sum kept in registers for a tile of points while its terms stream
            // through: the products and sums of its `MulAdd`s, in their order.
            // SAFETY: the caller's contract (every listed slot in bounds).
            Code::Dot => unsafe {
                factor_chains::<false>(f, &instrs[r.start as usize..r.end as usize], lists)
            },
            // As `Dot`, each product subtracted from the running difference.
            // SAFETY: as for `Dot`.
            Code::DotSub => unsafe {
                factor_chains::<true>(f, &instrs[r.start as usize..r.end as usize], lists)
            },
            // As `DotSub`, each term a product by one (exact: `x·1 = x`, NaN included).
            Code::SubSum => {
                for i in &instrs[r.start as usize..r.end as usize] {
                    let (start, k) = (i.args[1] as usize, i.args[2] as usize);
                    let xs = &lists[start..start + k];
                    // SAFETY: as for `Dot`.
                    unsafe { chain::<true>(f, i, k, |j| (f.arg(xs[j]), Arg::Splat(1.0))) };
                }
            }
            // As `Dot`, each product's weight from the program.
            Code::DotConst => {
                for i in &instrs[r.start as usize..r.end as usize] {
                    let (start, k) = (i.args[1] as usize, i.args[2] as usize);
                    let (xs, ws) = (&lists[start..start + k], &t.weights[start..start + k]);
                    // SAFETY: as for `Dot`.
                    unsafe { chain::<false>(f, i, k, |j| (f.arg(xs[j]), Arg::Splat(ws[j]))) };
                }
            }
            Code::CallN => {
                let mut x: Vec<f64> = Vec::new();
                for i in &instrs[r.start as usize..r.end as usize] {
                    let (start, k) = (i.args[1] as usize, i.args[2] as usize);
                    let slots = &lists[start..start + k];
                    // SAFETY: every listed slot is in bounds (the caller's contract), and
                    // `p < n`.
                    for (p, d) in unsafe { f.out(i.dst) }.iter_mut().enumerate() {
                        x.clear();
                        x.extend(slots.iter().map(|&slot| unsafe { f.at(slot, p) }));
                        let tag = unsafe { f.at(i.args[0], p) };
                        *d = ddx_ir::user::call_slice(tag, &x);
                    }
                }
            }
            // Never in a lane's instructions: a call reads its pack's arguments.
            Code::Op(Op::Pack) => {}
        }
    }
}

/// Runs `run`, chains whose terms are factor pairs in `lists` ([`Code::Dot`]; [`Code::DotSub`]
/// where `SUB`), through [`chain`].
///
/// # Safety
/// As [`chain`], for every chain of the run.
#[inline(always)]
unsafe fn factor_chains<const SUB: bool>(f: &Frame<'_>, run: &[Instr], lists: &[u32]) {
    for i in run {
        let (start, k) = (i.args[1] as usize, i.args[2] as usize);
        let factors = &lists[start..start + k];
        // SAFETY: the caller's contract.
        unsafe {
            chain::<SUB>(f, i, k / 2, |j| {
                (f.arg(factors[2 * j]), f.arg(factors[2 * j + 1]))
            })
        };
    }
}

/// Runs `run`, a run of `Exp` or `Log` instructions, over the frame's `n` points:
/// `d[p] = f(a[p])`, where `AVX2` four points at a time through `plain4`
/// ([`super::exp4`], [`super::log4`]) when all four take the function's plain path,
/// otherwise (and for the last few) each alone through `one` ([`math::exp`],
/// [`math::log`]): the function's bits either way.
///
/// # Safety
/// The CPU must have AVX2 and FMA where `AVX2` (`plain4` is called only then); the frame's
/// slots as [`execute`]'s.
#[inline(always)]
unsafe fn fours_run<const AVX2: bool>(
    f: &Frame<'_>,
    run: &[Instr],
    n: usize,
    one: impl Fn(f64) -> f64,
    plain4: impl Fn([f64; 4]) -> Option<[f64; 4]>,
) {
    for i in run {
        // SAFETY: the caller's contract.
        let d = unsafe { f.out(i.dst) };
        let a = match f.arg(i.args[0]) {
            // SAFETY: the caller's contract.
            Arg::Block(a) => unsafe { from_block(a, n) },
            Arg::Splat(x) => {
                d.fill(one(x));
                continue;
            }
        };
        if AVX2 {
            let mut d4 = d.chunks_exact_mut(4);
            let mut a4 = a.chunks_exact(4);
            for (d, a) in (&mut d4).zip(&mut a4) {
                let x = [a[0], a[1], a[2], a[3]];
                match plain4(x) {
                    Some(y) => d.copy_from_slice(&y),
                    None => d.iter_mut().zip(x).for_each(|(d, x)| *d = one(x)),
                }
            }
            let rest = d4.into_remainder().iter_mut().zip(a4.remainder());
            rest.for_each(|(d, &x)| *d = one(x));
        } else {
            d.iter_mut().zip(a).for_each(|(d, &x)| *d = one(x));
        }
    }
}

/// Points a chain's sum is kept for in registers: four AVX-512 vectors.
const TILE: usize = 32;

/// Runs chain instruction `i` ([`Code::Dot`] or [`Code::DotConst`]; [`Code::DotSub`] or
/// [`Code::SubSum`] where `SUB`: `args[0]` the first link's running operand) of `m`
/// terms, `term(j)` the factors of term `j`, over the frame's points: for each tile of
/// [`TILE`] points the running value stays in registers while every term's product is
/// rounded and added to it (the product first, as [`Code::MulAdd`] adds it) or
/// subtracted from it (as [`Code::SubMul`]), then it is stored; a last, shorter tile
/// point by point.
///
/// # Safety
/// Every slot `i` and `term` name must be below the program's slot count, and the
/// destination a temporary's, read by no term.
#[inline(always)]
// The product written first, as `MulAdd` adds it.
#[allow(clippy::assign_op_pattern)]
unsafe fn chain<const SUB: bool>(
    f: &Frame<'_>,
    i: &Instr,
    m: usize,
    term: impl Fn(usize) -> (Arg, Arg),
) {
    // One link: the running value `a` and the term's product `x*y`.
    let link = |x: f64, y: f64, a: f64| if SUB { a - x * y } else { x * y + a };
    // SAFETY (all the reads and writes): the caller's contract, and every point below
    // `f.n`.
    let d = unsafe { f.out(i.dst) };
    let n = f.n;
    let mut p0 = 0;
    while p0 + TILE <= n {
        let mut acc = [0.0f64; TILE];
        for (q, a) in acc.iter_mut().enumerate() {
            *a = unsafe { f.at(i.args[0], p0 + q) };
        }
        for j in 0..m {
            match term(j) {
                (Arg::Block(x), Arg::Splat(w)) => {
                    let x = unsafe { from_block(x.add(p0), TILE) };
                    for (a, &x) in acc.iter_mut().zip(x) {
                        *a = link(x, w, *a);
                    }
                }
                (Arg::Block(x), Arg::Block(y)) => {
                    let (x, y) =
                        unsafe { (from_block(x.add(p0), TILE), from_block(y.add(p0), TILE)) };
                    for ((a, &x), &y) in acc.iter_mut().zip(x).zip(y) {
                        *a = link(x, y, *a);
                    }
                }
                (x, y) => {
                    for (q, a) in acc.iter_mut().enumerate() {
                        let (x, y) = unsafe { (arg_at(x, p0 + q), arg_at(y, p0 + q)) };
                        *a = link(x, y, *a);
                    }
                }
            }
        }
        d[p0..p0 + TILE].copy_from_slice(&acc);
        p0 += TILE;
    }
    for (p, d) in d.iter_mut().enumerate().skip(p0) {
        let mut sum = unsafe { f.at(i.args[0], p) };
        for j in 0..m {
            let (x, y) = term(j);
            let (x, y) = unsafe { (arg_at(x, p), arg_at(y, p)) };
            sum = link(x, y, sum);
        }
        *d = sum;
    }
}

/// The value of operand `a` at point `p`.
///
/// # Safety
/// A block operand must hold more than `p` initialised values.
#[inline(always)]
unsafe fn arg_at(a: Arg, p: usize) -> f64 {
    match a {
        // SAFETY: the caller's contract.
        Arg::Block(a) => unsafe { *a.add(p) },
        Arg::Splat(c) => c,
    }
}
