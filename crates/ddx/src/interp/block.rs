//! The block interpreter: each instruction runs over a block of points.
//!
//! Slot `s` of a block program holds `block` consecutive values, one per point; an
//! instruction is a loop over the block that rustc vectorises. Where the CPU has AVX2 and
//! FMA, an AVX2+FMA build of the same loops is chosen at run time. The loops perform the
//! same operation on each point as the per-point interpreter, through the same math
//! functions, so results are bit-identical to it: a fused multiply-add appears only where
//! the graph has an `fma` node (Rust never contracts on its own), and transcendental
//! functions are called point by point through `ddx_ir::math`.

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

    /// [`Program::run_columns`] in scratch `s`.
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
        if s.program != self.id {
            s.slots.clear();
            s.slots.resize(self.slots * b, 0.0);
            for (k, c) in self.consts.iter().enumerate() {
                s.slots[k * b..(k + 1) * b].fill(*c);
            }
            s.program = self.id;
        }
        let base = self.consts.len();
        let mut at = start;
        while at < start + len {
            let n = b.min(start + len - at);
            for k in 0..self.inputs {
                // SAFETY: the caller guarantees `at + n` readable values.
                let src = unsafe { std::slice::from_raw_parts(columns.input(k).add(at), n) };
                s.slots[(base + k) * b..(base + k) * b + n].copy_from_slice(src);
            }
            // SAFETY: `lower` checked every slot below `self.slots`, the scratch holds
            // `self.slots * b` values, and `n <= b`.
            unsafe {
                dispatch(
                    &self.runs,
                    &self.instrs,
                    &self.tables(),
                    s.slots.as_mut_ptr(),
                    b,
                    n,
                )
            };
            for (k, &slot) in self.outputs.iter().enumerate() {
                let from = &s.slots[slot as usize * b..slot as usize * b + n];
                // SAFETY: the caller guarantees `at + n` writable values that no one
                // else touches.
                let dst = unsafe { std::slice::from_raw_parts_mut(columns.output(k).add(at), n) };
                dst.copy_from_slice(from);
            }
            at += n;
        }
    }
}

/// Runs the block loops with the widest instruction set the CPU has.
///
/// # Safety
/// As [`execute`].
unsafe fn dispatch(
    runs: &[Run],
    instrs: &[Instr],
    t: &Tables<'_>,
    s: *mut f64,
    b: usize,
    n: usize,
) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the features are present; the slot contract is the caller's.
            return unsafe { execute_avx2(runs, instrs, t, s, b, n) };
        }
    }
    // SAFETY: as above.
    unsafe { execute(runs, instrs, t, s, b, n) }
}

/// [`execute`] compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU must have AVX2 and FMA; otherwise as [`execute`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn execute_avx2(
    runs: &[Run],
    instrs: &[Instr],
    t: &Tables<'_>,
    s: *mut f64,
    b: usize,
    n: usize,
) {
    // SAFETY: forwarded.
    unsafe { execute(runs, instrs, t, s, b, n) }
}

/// Runs every instruction over the first `n` points of each slot's block of `b`,
/// [`Code::CallN`]'s argument slots in `t.lists`.
///
/// # Safety
/// Every slot index (in `instrs` and `t.lists`) must be below the scratch's slot count (`s`
/// holds `slots * b` values), `n <= b`, runs must lie inside `instrs` and every list
/// inside `t.lists` (and a [`Code::DotConst`]'s inside `t.weights`), and no destination
/// may equal one of its operands.
#[inline(always)]
unsafe fn execute(runs: &[Run], instrs: &[Instr], t: &Tables<'_>, s: *mut f64, b: usize, n: usize) {
    let lists = t.lists;
    // SAFETY (all three): the caller's contract makes every block in bounds, and the
    // destination block disjoint from the operand blocks.
    let block = |slot: u32| unsafe { std::slice::from_raw_parts(s.add(slot as usize * b), n) };
    let out = |slot: u32| unsafe { std::slice::from_raw_parts_mut(s.add(slot as usize * b), n) };
    macro_rules! run {
        ($r:expr, 1, |$x:ident| $body:expr) => {
            for i in &instrs[$r.start as usize..$r.end as usize] {
                let a = block(i.args[0]);
                for (d, &$x) in out(i.dst).iter_mut().zip(a) {
                    *d = $body;
                }
            }
        };
        ($r:expr, 2, |$x:ident, $y:ident| $body:expr) => {
            for i in &instrs[$r.start as usize..$r.end as usize] {
                let (a, c) = (block(i.args[0]), block(i.args[1]));
                for ((d, &$x), &$y) in out(i.dst).iter_mut().zip(a).zip(c) {
                    *d = $body;
                }
            }
        };
        ($r:expr, 3, |$x:ident, $y:ident, $z:ident| $body:expr) => {
            for i in &instrs[$r.start as usize..$r.end as usize] {
                let (a, c, e) = (block(i.args[0]), block(i.args[1]), block(i.args[2]));
                for (((d, &$x), &$y), &$z) in out(i.dst).iter_mut().zip(a).zip(c).zip(e) {
                    *d = $body;
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
            Code::Op(Op::Select) => run!(r, 3, |c, t, f| math::select(c, t, f)),
            Code::Op(Op::Fma) => run!(r, 3, |a, c, e| a.mul_add(c, e)),
            Code::Op(Op::Call) => run!(r, 3, |a, c, e| ddx_ir::user::call(a, c, e)),
            Code::Op(Op::Pow) => run!(r, 2, |a, c| math::pow(a, c)),
            Code::Op(Op::Atan2) => run!(r, 2, |a, c| math::atan2(a, c)),
            Code::Op(Op::Hypot) => run!(r, 2, |a, c| math::hypot(a, c)),
            Code::Op(Op::Sin) => run!(r, 1, |a| math::sin(a)),
            Code::Op(Op::Cos) => run!(r, 1, |a| math::cos(a)),
            Code::Op(Op::Tan) => run!(r, 1, |a| math::tan(a)),
            Code::Op(Op::Exp) => run!(r, 1, |a| math::exp(a)),
            Code::Op(Op::Log) => run!(r, 1, |a| math::log(a)),
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
            // Level programs only have it; over blocks it is the chain's `MulAdd`s, point
            // by point.
            Code::Dot => {
                for i in &instrs[r.start as usize..r.end as usize] {
                    let (start, k) = (i.args[1] as usize, i.args[2] as usize);
                    let factors = &lists[start..start + k];
                    let c = block(i.args[0]);
                    for (p, d) in out(i.dst).iter_mut().enumerate() {
                        let mut sum = c[p];
                        for u in factors.chunks_exact(2) {
                            // SAFETY: every listed slot's block is in bounds (the caller's
                            // contract) and `p < n`.
                            let (a, b) = unsafe {
                                (*s.add(u[0] as usize * b + p), *s.add(u[1] as usize * b + p))
                            };
                            // The product first, as `MulAdd` adds it.
                            #[allow(clippy::assign_op_pattern)]
                            {
                                sum = a * b + sum;
                            }
                        }
                        *d = sum;
                    }
                }
            }
            // As `Dot`, the weights from the program.
            Code::DotConst => {
                for i in &instrs[r.start as usize..r.end as usize] {
                    let (start, k) = (i.args[1] as usize, i.args[2] as usize);
                    let (xs, ws) = (&lists[start..start + k], &t.weights[start..start + k]);
                    let c = block(i.args[0]);
                    for (p, d) in out(i.dst).iter_mut().enumerate() {
                        let mut sum = c[p];
                        for (&x, &w) in xs.iter().zip(ws) {
                            // SAFETY: as for `Dot`.
                            let x = unsafe { *s.add(x as usize * b + p) };
                            #[allow(clippy::assign_op_pattern)]
                            {
                                sum = w * x + sum;
                            }
                        }
                        *d = sum;
                    }
                }
            }
            Code::CallN => {
                let mut x: Vec<f64> = Vec::new();
                for i in &instrs[r.start as usize..r.end as usize] {
                    let (start, k) = (i.args[1] as usize, i.args[2] as usize);
                    let slots = &lists[start..start + k];
                    let tag = block(i.args[0]);
                    for (p, d) in out(i.dst).iter_mut().enumerate() {
                        x.clear();
                        // SAFETY: every listed slot's block is in bounds (the caller's
                        // contract) and `p < n`.
                        x.extend(
                            slots
                                .iter()
                                .map(|&slot| unsafe { *s.add(slot as usize * b + p) }),
                        );
                        *d = ddx_ir::user::call_slice(tag[p], &x);
                    }
                }
            }
            // Never in a lane's instructions: a call reads its pack's arguments.
            Code::Op(Op::Pack) => {}
        }
    }
}
