//! The interpreter: a lane graph lowered to a flat instruction list over a slot array.
//!
//! **Lowering** ([`Program::lower`]) gives every constant and every input a fixed slot and
//! every operation a slot taken from a free list: a value's slot is freed after its last
//! use, so the working set stays small. Output slots are never freed. Every slot index is
//! checked against the slot count once, at lowering, which is what lets the execution loop
//! index without bounds checks.
//!
//! **Execution** ([`Program::run`]) is one dispatch per run of equal operations and a
//! tight loop over the run's instructions, with the semantics
//! of [`ddx_ir::math`]: transcendental functions are called through the same `extern "C"`
//! functions the JIT calls, so every engine agrees to the bit. Slot layout:
//! `[constants | symbols | seeds | temporaries]`; each thread keeps one scratch array and
//! re-fills the constants only when it switches programs.

mod block;
mod lower;
pub(crate) mod tape;

pub(crate) use block::Columns;
pub use lower::Schedule;

use ddx_ir::{Error, Op};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// One instruction: `slot[dst] = op(slot[args[0]], slot[args[1]], slot[args[2]])`, its
/// operation given by the [`Run`] it belongs to; unused operands are zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Instr {
    /// Destination slot.
    pub dst: u32,
    /// Operand slots (only the first `op.arity()` are read).
    pub args: [u32; 3],
}

/// What an instruction computes: a graph operation, or a product fused into the sum or
/// difference that is its only use (rounding the product, then the sum, as the graph does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    /// The graph operation.
    Op(Op),
    /// `a*b + c`.
    MulAdd,
    /// `a*b - c`.
    MulSub,
    /// `c - a*b`.
    SubMul,
    /// `(a*b)*c`, the product used only there (level programs only, as the four below).
    MulMul,
    /// `(a*b)/c`.
    MulDiv,
    /// `(a+b)+c`.
    AddAdd,
    /// `c + a/b`.
    AddDiv,
    /// `c - a/b`.
    SubDiv,
    /// `-(a*b)`, the product used only there (level programs only, as the three below):
    /// reverse mode negates many single-use values (the adjoint of a difference, of
    /// `exp(-x)`). The negation flips the sign bit of the rounded product, as `Neg` does.
    MulNeg,
    /// `-(a/b)`.
    DivNeg,
    /// `-(a+b)`.
    AddNeg,
    /// `(-a)/b`, the negation used only there.
    NegDiv,

    /// `a + b`, in a run where each instruction after the first takes the one before's
    /// result as `a` (a running sum, one term per instruction): the sum stays in a register
    /// between terms and every partial sum is still stored, so the run computes what its
    /// `Add`s compute, in the same order, to the bit. Only tape programs have it
    /// (`interp::tape`).
    Accumulate,
    /// A call of a user function of three or more arguments ([`ddx_ir::Graph::call_args`]):
    /// `args = [tag, start, k]`, the tag's slot and the argument slots
    /// `lists[start..start + k]` of its [`Program`].
    CallN,
    /// A chain of [`Code::MulAdd`]s, each but the first taking the one before's result as
    /// its `c`, every partial sum used only there: `args = [c, start, 2m]`, the factors
    /// `a₁, b₁, …, a_m, b_m` at `lists[start..start + 2m]`, computing
    /// `a_m*b_m + (… + (a₁*b₁ + c))` — the same products and additions, in the same order,
    /// each rounded, as the chain's instructions; the partial sums stay in a register and
    /// only the last is stored. [`Schedule::Level`] programs have it one level per run,
    /// so the chains of one run are independent: the loop runs two at a time and stores
    /// both results after reading every operand. [`Schedule::Graph`] (block) programs have
    /// it too, one chain a run; tape programs never.
    Dot,
    /// A [`Code::Dot`] whose every product has a constant factor that is not NaN (a
    /// *weight*): `args = [c, start, m]`, the other factors' slots in the lists of its
    /// [`Program`] and their weights at the same places in its weights, computing
    /// `w_m·x_m + (… + (w₁·x₁ + c))`, each product and sum rounded, in the chain's order.
    /// A product with a factor that is not NaN has the same bits whichever factor comes
    /// first (IEEE multiplication commutes, and with one NaN operand that NaN, quieted, is
    /// the answer), so the chain's bits, NaN payloads included. The weights are read from
    /// the program (not copied into the slot array). A block program's chain has its terms
    /// at `start..start + m`. A [`Schedule::Level`] program's chains of a run (one level,
    /// independent, sorted by length) run in groups of four, in step, in AVX's four lanes
    /// where the CPU has it; a group's chains share one block at `start`, their terms laid
    /// out step by step (`StepTerms`; [`Program::terms`] reads one chain's).
    DotConst,
    /// A chain of [`Code::SubMul`]s, each but the first taking the one before's result as
    /// its `c`, every partial difference used only there: `args = [c, start, 2m]`, the
    /// factors at `lists[start..start + 2m]` as [`Code::Dot`]'s, computing
    /// `(… (c − a₁*b₁) …) − a_m*b_m`, each product and difference rounded, the running
    /// difference as each subtraction's first operand, as the chain's instructions. Reverse
    /// mode makes these where an adjoint is subtracted term by term (the gradient of a
    /// residual `y − f(x)` summed over observations). [`Schedule::Level`] programs only
    /// (one level per run, as `Dot`'s): a block program runs each link over its block
    /// already, and its chains cost more there (NIST Gauss1's batch gradient 1.7 % slower).
    DotSub,
    /// A chain of `Sub`s, each but the first taking the one before's result as its first
    /// operand, every partial difference used only there: `args = [c, start, m]`, the
    /// subtrahends' slots at `lists[start..start + m]`, computing `(… (c − u₁) …) − u_m`
    /// in the chain's order. [`Schedule::Level`] programs only, as [`Code::DotSub`].
    SubSum,
}

impl Code {
    /// How many operand slots the instruction reads.
    pub fn arity(self) -> usize {
        match self {
            Code::Op(op) => op.arity(),
            Code::Accumulate => 2,
            Code::MulAdd | Code::MulSub | Code::SubMul => 3,
            Code::MulMul | Code::MulDiv | Code::AddAdd | Code::AddDiv | Code::SubDiv => 3,
            Code::MulNeg | Code::DivNeg | Code::AddNeg | Code::NegDiv => 2,
            // The tag (or the chain's `c`); the rest is read through the program's lists.
            Code::CallN | Code::Dot | Code::DotConst | Code::DotSub | Code::SubSum => 1,
        }
    }

    /// Whether the instruction is a chain ([`Code::Dot`], [`Code::DotConst`],
    /// [`Code::DotSub`], [`Code::SubSum`]): one instruction for many terms read through
    /// its [`Program`]'s lists, the running result in a register.
    pub fn is_chain(self) -> bool {
        matches!(
            self,
            Code::Dot | Code::DotConst | Code::DotSub | Code::SubSum
        )
    }

    /// Whether the instruction reads slots through its [`Program`]'s lists: a chain or a
    /// [`Code::CallN`].
    pub fn has_list(self) -> bool {
        self == Code::CallN || self.is_chain()
    }
}

impl Code {
    /// The code's byte, as the per-point loop dispatches on it: a plain number, so that the
    /// compiler makes one jump table (on the nested enum it makes two). The numbers are
    /// the compiler's own layout of `Code` (one byte: the operation's discriminant, the
    /// other codes in the niche after them), the same in every use within a build.
    const fn tag(self) -> u8 {
        // SAFETY: `Code` is one byte (or this does not compile), and every byte is a `u8`.
        unsafe { std::mem::transmute::<Code, u8>(self) }
    }
}

/// A run of instructions `start..end` that all perform `code`: one dispatch, one loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// The operation.
    pub code: Code,
    /// First instruction.
    pub start: u32,
    /// One past the last instruction.
    pub end: u32,
}

/// A lowered lane: runs of instructions over a slot array.
#[derive(Debug)]
pub struct Program {
    id: u64,
    slots: usize,
    block: usize,
    schedule: Schedule,
    consts: Vec<f64>,
    inputs: usize,
    runs: Vec<Run>,
    instrs: Vec<Instr>,
    outputs: Vec<u32>,
    /// The argument slots of every [`Code::CallN`] instruction, the factor slots of every
    /// [`Code::Dot`] and the variable factors' slots of every [`Code::DotConst`], one run
    /// of them each.
    lists: Vec<u32>,
    /// Each [`Code::DotConst`] term's weight, at its slot's index in `lists`: the
    /// `DotConst` lists come first in `lists`, and `weights` is exactly as long as they.
    weights: Vec<f64>,
}

static NEXT_PROGRAM: AtomicU64 = AtomicU64::new(1);

/// A thread's slot array, and which program's constants it holds (`0`: none).
struct Scratch {
    program: u64,
    slots: Vec<f64>,
}

impl Scratch {
    const EMPTY: Scratch = Scratch {
        program: 0,
        slots: Vec::new(),
    };
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = const { RefCell::new(Scratch::EMPTY) };
    static BLOCK_SCRATCH: RefCell<Scratch> = const { RefCell::new(Scratch::EMPTY) };
}

impl Program {
    /// Number of inputs (`symbols + seeds`) a run reads.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// Number of outputs a run writes.
    pub fn outputs(&self) -> usize {
        self.outputs.len()
    }

    /// Number of instructions.
    pub fn len(&self) -> usize {
        self.instrs.len()
    }

    /// Number of runs (dispatches per point).
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Whether the program has no instructions (its outputs are inputs or constants).
    pub fn is_empty(&self) -> bool {
        self.instrs.is_empty()
    }

    /// The runs, in execution order (each a dispatch): for tools that profile programs.
    pub fn run_list(&self) -> &[Run] {
        &self.runs
    }

    /// The instructions the runs index.
    pub fn instructions(&self) -> &[Instr] {
        &self.instrs
    }

    /// Number of slots (constants, inputs and temporaries).
    pub fn slot_count(&self) -> usize {
        self.slots
    }

    /// Number of constant slots (slots `0..constants`; the inputs follow them).
    pub fn constant_count(&self) -> usize {
        self.consts.len()
    }

    /// The slot lists that [`Code::CallN`] and the chain instructions index, end to end:
    /// for tools that profile programs. [`Program::terms`] reads one instruction's list
    /// (a level program's [`Code::DotConst`] chains share blocks laid out step by step).
    pub fn lists(&self) -> &[u32] {
        &self.lists
    }

    /// Bytes the program holds (instructions, runs, constants, output slots).
    pub fn memory(&self) -> usize {
        use std::mem::size_of;
        self.instrs.capacity() * size_of::<Instr>()
            + self.runs.capacity() * size_of::<Run>()
            + self.consts.capacity() * size_of::<f64>()
            + self.outputs.capacity() * size_of::<u32>()
            + self.lists.capacity() * size_of::<u32>()
            + self.weights.capacity() * size_of::<f64>()
    }

    /// The slots instruction `k` of run `r` reads: its operands, then the slots of a
    /// [`Code::CallN`]'s argument list or a chain's terms, in the order it reads them
    /// ([`Program::terms`]).
    pub(crate) fn reads(&self, r: &Run, k: usize) -> impl Iterator<Item = u32> + '_ {
        let args = self.instrs[k].args;
        (0..r.code.arity())
            .map(move |a| args[a])
            .chain(self.terms(r, k))
    }

    /// The slots instruction `k` (an index into [`Program::instructions`]) of run `r`
    /// reads through the program's lists, in term order: a [`Code::CallN`]'s arguments, a
    /// [`Code::Dot`]'s factors (two a term), a [`Code::DotConst`]'s variables (each term's
    /// weight is its other factor); empty for codes without a list. For tools that profile
    /// programs.
    ///
    /// A chain's list is `lists[start..start + len]` (`args[1]`, `args[2]`), except a
    /// `DotConst`'s in a [`Schedule::Level`] program, whose chains run in groups of up to
    /// four, their terms laid out step by step (step `j` holds term `j` of each chain of
    /// the group longer than `j`). Empty where `r` is not one of the program's runs or
    /// does not hold `k`.
    pub fn terms(&self, r: &Run, k: usize) -> impl Iterator<Item = u32> + '_ {
        let run = r.start as usize..r.end as usize;
        let found = self.instrs.get(run.clone()).filter(|_| run.contains(&k));
        let (members, i) = match found {
            Some(members) => (members, members[k - run.start]),
            None => (&[][..], Instr::default()),
        };
        let (start, len) = (i.args[1] as usize, i.args[2] as usize);
        let stepped = r.code == Code::DotConst && self.schedule == Schedule::Level;
        let plain = match r.code.has_list() && !stepped && found.is_some() {
            true => self.lists.get(start..start + len).unwrap_or(&[]),
            false => &[],
        };
        let steps = (stepped && found.is_some()).then(|| {
            let at = k - run.start;
            let group = dot_const_groups(members.len())
                .find(|g| g.contains(&at))
                .unwrap_or(at..at + 1);
            let j = at - group.start;
            let group = members.get(group).unwrap_or(&[]);
            StepTerms::new(group, j).filter_map(|pos| self.lists.get(pos).copied())
        });
        plain.iter().copied().chain(steps.into_iter().flatten())
    }

    /// Points per block when running over columns.
    pub fn block_size(&self) -> usize {
        self.block
    }

    /// Evaluates at one point: `inputs` holds [`Program::inputs`] values (symbols in
    /// canonical order, then seeds), `out` receives [`Program::outputs`] values.
    ///
    /// # Errors
    /// As [`Program::run_with`]; [`Error::WrongOutputLength`] unless `out` is
    /// [`Program::outputs`] long. Nothing is written on an error.
    pub fn run(&self, inputs: &[f64], out: &mut [f64]) -> Result<(), Error> {
        if out.len() != self.outputs.len() {
            return Err(Error::WrongOutputLength {
                expected: self.outputs.len(),
                got: out.len(),
            });
        }
        self.run_with(inputs, |k, v| out[k] = v)
    }

    /// Evaluates at one point and hands each output `(index, value)` to `sink`, in order.
    ///
    /// `sink` may run programs itself (this one or another): each thread keeps one
    /// scratch array, and a run that finds it in use by the run whose sink called it works
    /// in a fresh one of its own.
    ///
    /// # Errors
    /// [`Error::WrongArity`] when `inputs` has more than [`Program::inputs`] values,
    /// [`Error::ShortPoint`] when it has fewer; `sink` is not called then.
    pub fn run_with(&self, inputs: &[f64], sink: impl FnMut(usize, f64)) -> Result<(), Error> {
        if inputs.len() != self.inputs {
            return Err(if inputs.len() > self.inputs {
                Error::WrongArity {
                    expected: self.inputs,
                    got: inputs.len(),
                }
            } else {
                Error::ShortPoint {
                    expected: self.inputs,
                    got: inputs.len(),
                }
            });
        }
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut s) => self.run_in(&mut s, inputs, sink),
            // Re-entered from a sink: this thread's scratch is the outer run's.
            Err(_) => {
                let mut fresh = Scratch::EMPTY;
                self.run_in(&mut fresh, inputs, sink)
            }
        });
        Ok(())
    }

    /// [`Program::run_with`] in scratch `s`, once the lengths are checked.
    fn run_in(&self, s: &mut Scratch, inputs: &[f64], mut sink: impl FnMut(usize, f64)) {
        if s.program != self.id {
            s.slots.clear();
            s.slots.resize(self.slots, 0.0);
            s.slots[..self.consts.len()].copy_from_slice(&self.consts);
            s.program = self.id;
        }
        let base = self.consts.len();
        s.slots[base..base + self.inputs].copy_from_slice(inputs);
        // SAFETY: `lower` checked every slot index in `instrs` against `self.slots`,
        // and the scratch array holds exactly `self.slots` values.
        unsafe {
            dispatch(
                &self.runs,
                &self.instrs,
                &self.tables(),
                s.slots.as_mut_ptr(),
            )
        };
        for (k, &slot) in self.outputs.iter().enumerate() {
            sink(k, s.slots[slot as usize]);
        }
    }
}

impl Program {
    /// The program's lists and weights, as the execution loop reads them.
    pub(crate) fn tables(&self) -> Tables<'_> {
        Tables {
            lists: &self.lists,
            weights: &self.weights,
        }
    }
}

#[cfg(test)]
impl Program {
    /// [`Program::run`]'s outputs at `inputs` (checked by the caller), through the build
    /// that CPUs without AVX2 and FMA run: tests compare its bits with the build this CPU
    /// gets.
    pub(crate) fn run_portable(&self, inputs: &[f64]) -> Vec<f64> {
        let mut s = vec![0.0; self.slots];
        let base = self.consts.len();
        s[..base].copy_from_slice(&self.consts);
        s[base..base + self.inputs].copy_from_slice(inputs);
        // SAFETY: `lower` checked every slot index against `self.slots`, the length of `s`.
        unsafe { execute::<false>(&self.runs, &self.instrs, &self.tables(), s.as_mut_ptr()) };
        self.outputs.iter().map(|&o| s[o as usize]).collect()
    }
}

/// What instructions read beside the slot array: [`Program`]'s `lists` and `weights`.
#[derive(Clone, Copy)]
pub(crate) struct Tables<'a> {
    lists: &'a [u32],
    weights: &'a [f64],
}

/// Runs `runs` of `instrs` with a build that has the CPU's fused multiply-add and AVX2
/// (AVX's three-operand forms, four `exp`s or `log`s at once) where it has both
/// (`f64::mul_add` is otherwise a library call).
///
/// # Safety
/// As [`execute`].
unsafe fn dispatch(runs: &[Run], instrs: &[Instr], t: &Tables<'_>, s: *mut f64) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("fma") && std::arch::is_x86_feature_detected!("avx2")
        {
            // SAFETY: the feature is present; the slot contract is the caller's.
            return unsafe { execute_fma(runs, instrs, t, s) };
        }
    }
    // SAFETY: as above.
    unsafe { execute::<false>(runs, instrs, t, s) }
}

/// [`execute`] compiled with FMA and AVX2.
///
/// # Safety
/// The CPU must have FMA and AVX2; otherwise as [`execute`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn execute_fma(runs: &[Run], instrs: &[Instr], t: &Tables<'_>, s: *mut f64) {
    // SAFETY: forwarded; the CPU has AVX.
    unsafe { execute::<true>(runs, instrs, t, s) }
}

/// Runs `runs` of `instrs` over the slot array at `s`, [`Code::CallN`]'s argument slots
/// and the chains' terms in `t.lists`, [`Code::DotConst`]'s weights in `t.weights`;
/// `AVX`: the CPU has AVX2 and FMA (and the caller is compiled for them).
///
/// # Safety
/// Every slot index in `instrs` and `t.lists` must be in bounds of the array `s` points
/// to, every run must lie inside `instrs`, every `CallN`'s and chain's list inside
/// `t.lists` (a `Dot`'s and a `DotSub`'s of even length) and every `DotConst`'s inside
/// `t.weights`, and no chain of a run may read another's destination.
#[inline(always)]
unsafe fn execute<const AVX: bool>(runs: &[Run], instrs: &[Instr], t: &Tables<'_>, s: *mut f64) {
    let lists = t.lists;
    use ddx_ir::math;
    macro_rules! each {
        ($run:expr, |$a:ident| $body:expr) => {
            // SAFETY: runs lie inside `instrs` (checked at lowering).
            for i in unsafe { instrs.get_unchecked($run.start as usize..$run.end as usize) } {
                // SAFETY: every slot index is in bounds (checked at lowering).
                unsafe {
                    let $a = |k: usize| *s.add(i.args[k] as usize);
                    *s.add(i.dst as usize) = $body;
                }
            }
        };
    }
    // One number per code, dense (`Code::tag`): one jump table.
    const T_NEG: u8 = Code::Op(Op::Neg).tag();
    const T_HOLD: u8 = Code::Op(Op::Hold).tag();
    const T_ADD: u8 = Code::Op(Op::Add).tag();
    const T_SUB: u8 = Code::Op(Op::Sub).tag();
    const T_MUL: u8 = Code::Op(Op::Mul).tag();
    const T_DIV: u8 = Code::Op(Op::Div).tag();
    const T_SQRT: u8 = Code::Op(Op::Sqrt).tag();
    const T_ABS: u8 = Code::Op(Op::Abs).tag();
    const T_SIGN: u8 = Code::Op(Op::Sign).tag();
    const T_MAX: u8 = Code::Op(Op::Max).tag();
    const T_MIN: u8 = Code::Op(Op::Min).tag();
    const T_LT: u8 = Code::Op(Op::Lt).tag();
    const T_LE: u8 = Code::Op(Op::Le).tag();
    const T_EQ: u8 = Code::Op(Op::Eq).tag();
    const T_NE: u8 = Code::Op(Op::Ne).tag();
    const T_SELECT: u8 = Code::Op(Op::Select).tag();
    const T_FMA: u8 = Code::Op(Op::Fma).tag();
    const T_CALL: u8 = Code::Op(Op::Call).tag();
    const T_SIN: u8 = Code::Op(Op::Sin).tag();
    const T_COS: u8 = Code::Op(Op::Cos).tag();
    const T_TAN: u8 = Code::Op(Op::Tan).tag();
    const T_EXP: u8 = Code::Op(Op::Exp).tag();
    const T_LOG: u8 = Code::Op(Op::Log).tag();
    const T_LOG10: u8 = Code::Op(Op::Log10).tag();
    const T_CBRT: u8 = Code::Op(Op::Cbrt).tag();
    const T_ASIN: u8 = Code::Op(Op::Asin).tag();
    const T_ACOS: u8 = Code::Op(Op::Acos).tag();
    const T_ATAN: u8 = Code::Op(Op::Atan).tag();
    const T_SINH: u8 = Code::Op(Op::Sinh).tag();
    const T_COSH: u8 = Code::Op(Op::Cosh).tag();
    const T_TANH: u8 = Code::Op(Op::Tanh).tag();
    const T_ASINH: u8 = Code::Op(Op::Asinh).tag();
    const T_ACOSH: u8 = Code::Op(Op::Acosh).tag();
    const T_ATANH: u8 = Code::Op(Op::Atanh).tag();
    const T_ERF: u8 = Code::Op(Op::Erf).tag();
    const T_LOG1P: u8 = Code::Op(Op::Log1p).tag();
    const T_EXPM1: u8 = Code::Op(Op::Expm1).tag();
    const T_LOG2: u8 = Code::Op(Op::Log2).tag();
    const T_RECIP: u8 = Code::Op(Op::Recip).tag();
    const T_POWI: u8 = Code::Op(Op::Powi).tag();
    const T_POW: u8 = Code::Op(Op::Pow).tag();
    const T_ATAN2: u8 = Code::Op(Op::Atan2).tag();
    const T_HYPOT: u8 = Code::Op(Op::Hypot).tag();
    const T_MUL_ADD: u8 = Code::MulAdd.tag();
    const T_MUL_SUB: u8 = Code::MulSub.tag();
    const T_SUB_MUL: u8 = Code::SubMul.tag();
    const T_MUL_MUL: u8 = Code::MulMul.tag();
    const T_MUL_DIV: u8 = Code::MulDiv.tag();
    const T_ADD_ADD: u8 = Code::AddAdd.tag();
    const T_ADD_DIV: u8 = Code::AddDiv.tag();
    const T_SUB_DIV: u8 = Code::SubDiv.tag();
    const T_MUL_NEG: u8 = Code::MulNeg.tag();
    const T_DIV_NEG: u8 = Code::DivNeg.tag();
    const T_ADD_NEG: u8 = Code::AddNeg.tag();
    const T_NEG_DIV: u8 = Code::NegDiv.tag();
    const T_ACCUMULATE: u8 = Code::Accumulate.tag();
    const T_DOT: u8 = Code::Dot.tag();
    const T_DOT_CONST: u8 = Code::DotConst.tag();
    const T_DOT_SUB: u8 = Code::DotSub.tag();
    const T_SUB_SUM: u8 = Code::SubSum.tag();
    const T_CALL_N: u8 = Code::CallN.tag();
    const T_PACK: u8 = Code::Op(Op::Pack).tag();
    for r in runs {
        match r.code.tag() {
            T_NEG => each!(r, |a| -a(0)),
            // Never in a lane (`Graph::extract` removes it).
            T_HOLD => each!(r, |a| ddx_ir::math::eval(Op::Hold, &[a(0)])),
            T_ADD => each!(r, |a| a(0) + a(1)),
            T_SUB => each!(r, |a| a(0) - a(1)),
            T_MUL => each!(r, |a| a(0) * a(1)),
            T_DIV => each!(r, |a| a(0) / a(1)),
            T_SQRT => each!(r, |a| a(0).sqrt()),
            T_ABS => each!(r, |a| a(0).abs()),
            T_SIGN => each!(r, |a| math::sign(a(0))),
            T_MAX => each!(r, |a| math::max(a(0), a(1))),
            T_MIN => each!(r, |a| math::min(a(0), a(1))),
            T_LT => each!(r, |a| math::truth(a(0) < a(1))),
            T_LE => each!(r, |a| math::truth(a(0) <= a(1))),
            T_EQ => each!(r, |a| math::truth(a(0) == a(1))),
            T_NE => each!(r, |a| math::ne(a(0), a(1))),
            T_SELECT => each!(r, |a| math::select(a(0), a(1), a(2))),
            T_FMA => each!(r, |a| a(0).mul_add(a(1), a(2))),
            T_CALL => each!(r, |a| ddx_ir::user::call(a(0), a(1), a(2))),
            T_SIN => each!(r, |a| math::sin(a(0))),
            T_COS => each!(r, |a| math::cos(a(0))),
            T_TAN => each!(r, |a| math::tan(a(0))),
            // SAFETY: runs lie inside `instrs`, every slot in bounds (checked at lowering).
            T_EXP => unsafe {
                fours::<AVX>(
                    instrs.get_unchecked(r.start as usize..r.end as usize),
                    s,
                    |x| math::exp(x),
                    // SAFETY: called only where `AVX`: the CPU has AVX2 and FMA.
                    |x| exp4(x),
                )
            },
            T_LOG => unsafe {
                fours::<AVX>(
                    instrs.get_unchecked(r.start as usize..r.end as usize),
                    s,
                    |x| math::log(x),
                    // SAFETY: called only where `AVX`: the CPU has AVX2 and FMA.
                    |x| log4(x),
                )
            },
            T_LOG10 => each!(r, |a| math::log10(a(0))),
            T_CBRT => each!(r, |a| math::cbrt(a(0))),
            T_ASIN => each!(r, |a| math::asin(a(0))),
            T_ACOS => each!(r, |a| math::acos(a(0))),
            T_ATAN => each!(r, |a| math::atan(a(0))),
            T_SINH => each!(r, |a| math::sinh(a(0))),
            T_COSH => each!(r, |a| math::cosh(a(0))),
            T_TANH => each!(r, |a| math::tanh(a(0))),
            T_ASINH => each!(r, |a| math::asinh(a(0))),
            T_ACOSH => each!(r, |a| math::acosh(a(0))),
            T_ATANH => each!(r, |a| math::atanh(a(0))),
            T_ERF => each!(r, |a| math::erf(a(0))),
            T_LOG1P => each!(r, |a| math::log1p(a(0))),
            T_EXPM1 => each!(r, |a| math::expm1(a(0))),
            T_LOG2 => each!(r, |a| math::log2(a(0))),
            T_RECIP => each!(r, |a| 1.0 / a(0)),
            T_POWI => each!(r, |a| math::powi(a(0), a(1))),
            T_POW => each!(r, |a| math::pow(a(0), a(1))),
            T_ATAN2 => each!(r, |a| math::atan2(a(0), a(1))),
            T_HYPOT => each!(r, |a| math::hypot(a(0), a(1))),
            T_MUL_ADD => each!(r, |a| a(0) * a(1) + a(2)),
            T_MUL_SUB => each!(r, |a| a(0) * a(1) - a(2)),
            T_SUB_MUL => each!(r, |a| a(2) - a(0) * a(1)),
            T_MUL_MUL => each!(r, |a| a(0) * a(1) * a(2)),
            T_MUL_DIV => each!(r, |a| a(0) * a(1) / a(2)),
            T_ADD_ADD => each!(r, |a| a(0) + a(1) + a(2)),
            T_ADD_DIV => each!(r, |a| add_regs_in_order(a(2), a(0) / a(1))),
            T_SUB_DIV => each!(r, |a| a(2) - a(0) / a(1)),
            T_MUL_NEG => each!(r, |a| -opaque(a(0) * a(1))),
            T_DIV_NEG => each!(r, |a| -opaque(a(0) / a(1))),
            T_ADD_NEG => each!(r, |a| -opaque(add_regs_in_order(a(0), a(1)))),
            T_NEG_DIV => each!(r, |a| opaque(-a(0)) / a(1)),
            T_ACCUMULATE => {
                // SAFETY: runs lie inside `instrs` and every slot index is in bounds
                // (checked at lowering); the run is not empty.
                unsafe {
                    let run = instrs.get_unchecked(r.start as usize..r.end as usize);
                    // Every instruction after the first reads the one before's result as
                    // its first operand: `sum` is that slot's value, just stored.
                    let mut sum = *s.add(run[0].args[0] as usize);
                    for i in run {
                        sum = add_in_order(sum, s, i.args[1] as usize);
                        *s.add(i.dst as usize) = sum;
                    }
                }
            }
            // SAFETY: the caller's contract (kept out of line: it needs registers the
            // dispatch loop would otherwise spill).
            T_DOT => unsafe {
                dots::<2, false>(
                    instrs.get_unchecked(r.start as usize..r.end as usize),
                    lists,
                    s,
                )
            },
            // SAFETY: as above.
            T_DOT_SUB => unsafe {
                dots::<2, true>(
                    instrs.get_unchecked(r.start as usize..r.end as usize),
                    lists,
                    s,
                )
            },
            // SAFETY: as above.
            T_SUB_SUM => unsafe {
                dots::<1, true>(
                    instrs.get_unchecked(r.start as usize..r.end as usize),
                    lists,
                    s,
                )
            },
            // SAFETY: as above; `AVX` says the CPU has AVX.
            T_DOT_CONST => unsafe {
                dot_consts::<AVX>(instrs.get_unchecked(r.start as usize..r.end as usize), t, s)
            },
            T_CALL_N => {
                // The arguments gathered on the stack (a few) or in one buffer per run.
                let mut heap: Vec<f64> = Vec::new();
                // SAFETY: runs lie inside `instrs`, every list inside `lists`, and every
                // slot index is in bounds (all checked at lowering).
                for i in unsafe { instrs.get_unchecked(r.start as usize..r.end as usize) } {
                    let (start, k) = (i.args[1] as usize, i.args[2] as usize);
                    let mut stack = [0.0f64; 8];
                    let x: &mut [f64] = if k <= stack.len() {
                        &mut stack[..k]
                    } else {
                        heap.resize(k, 0.0);
                        &mut heap[..]
                    };
                    let list = unsafe { lists.get_unchecked(start..start + k) };
                    for (xj, &slot) in x.iter_mut().zip(list) {
                        *xj = unsafe { *s.add(slot as usize) };
                    }
                    unsafe {
                        let tag = *s.add(i.args[0] as usize);
                        *s.add(i.dst as usize) = ddx_ir::user::call_slice(tag, x);
                    }
                }
            }
            // Never in a lane's instructions: a call reads its pack's arguments.
            T_PACK => {}
            // Every tag is one of the above.
            _ => {}
        }
    }
}

/// [`math::exp_plain4_avx2`] where the target is x86-64, else `None`.
///
/// # Safety
/// The CPU must have AVX2.
#[inline(always)]
pub(crate) unsafe fn exp4(x: [f64; 4]) -> Option<[f64; 4]> {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract.
    return unsafe { ddx_ir::math::exp_plain4_avx2(x) };
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// [`math::log_plain4_avx2`] where the target is x86-64, else `None`.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[inline(always)]
pub(crate) unsafe fn log4(x: [f64; 4]) -> Option<[f64; 4]> {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract.
    return unsafe { ddx_ir::math::log_plain4_avx2(x) };
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// Runs `run`, a run of `Exp` or `Log` instructions, over the slot array at `s`: `one`
/// computes the function of one argument ([`math::exp`], [`math::log`]), `plain4` of four
/// at once, or `None` where one of them is off the function's plain path
/// ([`math::exp_plain4_avx2`], [`math::log_plain4_avx2`]). Where `AVX` (the CPU has AVX2
/// and FMA) four at a time through `plain4` when no one of the four reads another's
/// result (a run may span two levels), otherwise each alone through `one`: the function's
/// bits either way. `plain4` is called only where `AVX`.
///
/// # Safety
/// Every slot of `run` in bounds of the array `s` points to.
#[inline(always)]
unsafe fn fours<const AVX: bool>(
    run: &[Instr],
    s: *mut f64,
    one: impl Fn(f64) -> f64,
    plain4: impl Fn([f64; 4]) -> Option<[f64; 4]>,
) {
    // SAFETY (every access): the caller's contract.
    let one = |i: &Instr| unsafe { *s.add(i.dst as usize) = one(*s.add(i.args[0] as usize)) };
    #[cfg(target_arch = "x86_64")]
    if AVX {
        let mut fours = run.chunks_exact(4);
        for four in &mut fours {
            let apart = (1..4).all(|j| four[..j].iter().all(|i| i.dst != four[j].args[0]));
            let x: [f64; 4] = std::array::from_fn(|l| unsafe { *s.add(four[l].args[0] as usize) });
            match plain4(x).filter(|_| apart) {
                Some(y) => {
                    for (i, y) in four.iter().zip(y) {
                        unsafe { *s.add(i.dst as usize) = y };
                    }
                }
                None => four.iter().for_each(one),
            }
        }
        fours.remainder().iter().for_each(one);
        // The upper halves of the vector registers back to zero before the run loop goes
        // on: its hand-written `addsd`s (`add_regs_in_order`) are legacy SSE, which pays
        // for dirty upper halves on every instruction (Gauss1's gradient ran 4× slower).
        // SAFETY: the CPU has AVX (the caller's contract); no register is live across it.
        unsafe { std::arch::x86_64::_mm256_zeroupper() };
        return;
    }
    run.iter().for_each(one);
}

/// Runs `run`, a run of chain instructions whose terms are `WIDTH` slots each in `lists`,
/// over the slot array at `s`: [`Code::Dot`] (`WIDTH` 2, `SUB` false: `p + a*b`, the
/// product first), [`Code::DotSub`] (2, true: `p - a*b`) or [`Code::SubSum`] (1, true:
/// `p - u`). Two chains at a time, in step while both have terms, both results stored
/// after every operand of the two is read.
///
/// # Safety
/// As [`execute`]: every list inside `lists` with a length a multiple of `WIDTH`, every
/// slot in bounds, and no chain of the run reading another's destination (one level).
#[inline(never)]
unsafe fn dots<const WIDTH: usize, const SUB: bool>(run: &[Instr], lists: &[u32], s: *mut f64) {
    // SAFETY: the caller's contract.
    unsafe {
        let terms = |i: &Instr| {
            let start = i.args[1] as usize;
            lists.get_unchecked(start..start + i.args[2] as usize)
        };
        // One term.
        let term = |u: &[u32], p: f64| match (WIDTH, SUB) {
            (1, _) => p - *s.add(u[0] as usize),
            (_, true) => p - *s.add(u[0] as usize) * *s.add(u[1] as usize),
            _ => mul_add_in_order(s, u[0] as usize, u[1] as usize, p),
        };
        let mut pairs = run.chunks_exact(2);
        for two in &mut pairs {
            let (i, j) = (&two[0], &two[1]);
            let x = terms(i);
            let y = terms(j);
            let mut p = *s.add(i.args[0] as usize);
            let mut q = *s.add(j.args[0] as usize);
            // Both chains in step while both have terms, then the longer alone.
            let common = x.len().min(y.len());
            let (xc, xt) = x.split_at(common);
            let (yc, yt) = y.split_at(common);
            for (u, v) in xc.chunks_exact(WIDTH).zip(yc.chunks_exact(WIDTH)) {
                p = term(u, p);
                q = term(v, q);
            }
            for u in xt.chunks_exact(WIDTH) {
                p = term(u, p);
            }
            for v in yt.chunks_exact(WIDTH) {
                q = term(v, q);
            }
            *s.add(i.dst as usize) = p;
            *s.add(j.dst as usize) = q;
        }
        for i in pairs.remainder() {
            let mut p = *s.add(i.args[0] as usize);
            for u in terms(i).chunks_exact(WIDTH) {
                p = term(u, p);
            }
            *s.add(i.dst as usize) = p;
        }
    }
}

/// The groups of chains a [`Code::DotConst`] run of `n` chains runs in, in step (index
/// ranges into the run): the first `n % 4` chains, the shortest (the lowering sorts a
/// run's chains by length), then fours. A [`Schedule::Level`] program lays each group's
/// terms out step by step ([`StepTerms`]).
pub(crate) fn dot_const_groups(n: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let first = n % DOT_CONST_GROUP;
    (first > 0).then_some(0..first).into_iter().chain(
        (first..n)
            .step_by(DOT_CONST_GROUP)
            .map(|s| s..s + DOT_CONST_GROUP),
    )
}

/// The most [`Code::DotConst`] chains that run in step (measured: two groups of four in
/// step, eight chains, ran no faster than one, see `BENCHMARKS.md`).
const DOT_CONST_GROUP: usize = 4;

/// How the four slots of a step of four [`Code::DotConst`] chains in step lie, relative to
/// the first chain's slot `x₀` ([`step_shape`]). Where every step of a group's four-wide
/// part has one shape, the lowering records it in the group's second chain's `args[1]`
/// ([`StepTerms`]), and the AVX loop reads the step's four values with one load (and a
/// permutation) instead of four: a chain's terms over a run of inputs, or over values the
/// neighbouring chains read too, are common in mixtures' sums and their adjoints.
pub(crate) mod shape {
    /// Any four slots: four loads.
    pub const GATHER: u32 = 0;
    /// `x₀, x₀+1, x₀+2, x₀+3`.
    pub const ASCENDING: u32 = 1;
    /// `x₀, x₀−1, x₀−2, x₀−3`.
    pub const DESCENDING: u32 = 2;
    /// `x₀` four times.
    pub const SAME: u32 = 3;
    /// `x₀, x₀, x₀+1, x₀+1`.
    pub const PAIRS_UP: u32 = 4;
    /// `x₀, x₀, x₀−1, x₀−1`.
    pub const PAIRS_DOWN: u32 = 5;
    /// Steps that alternate between [`DESCENDING`] (steps 0, 2, …) and [`ASCENDING`]
    /// (steps 1, 3, …): the adjoint sums of neighbouring columns whose terms take turns
    /// between two partials (the electrolyte's `Σₖ xₖ bₖₗ + Σₖ (xₖ e) cₖₗ`) read computed
    /// values descending on one step and inputs ascending on the next.
    pub const DOWN_UP: u32 = 6;
    /// [`ASCENDING`] on the even steps, [`DESCENDING`] on the odd ones.
    pub const UP_DOWN: u32 = 7;
}

/// The [`shape`] of one step's four slots.
pub(crate) fn step_shape(x: [u32; 4]) -> u32 {
    let d = x.map(|v| i64::from(v) - i64::from(x[0]));
    match d {
        [0, 1, 2, 3] => shape::ASCENDING,
        [0, -1, -2, -3] => shape::DESCENDING,
        [0, 0, 0, 0] => shape::SAME,
        [0, 0, 1, 1] => shape::PAIRS_UP,
        [0, 0, -1, -1] => shape::PAIRS_DOWN,
        _ => shape::GATHER,
    }
}

/// The positions, in a [`Schedule::Level`] program's lists and weights, of one chain's
/// terms in its group of [`Code::DotConst`] chains ([`dot_const_groups`]).
///
/// **Layout.** A group's chains, `G ≤ 4` of them with lengths `m₀ ≤ m₁ ≤ … ≤ m_{G-1}`,
/// share one block starting at the first chain's `args[1]` (every chain's, but in a group
/// of four the second chain's `args[1]` is the [`shape`] of the first `m₀` steps). The block holds the chains' terms
/// step by step: step `k` holds term `k` of every chain longer than `k`, in the group's
/// order (a suffix of the group, as the lengths ascend). So the first `m₀` steps hold
/// `G` terms each, the next `m₁ − m₀` steps `G − 1`, and so on: the block is `Σ mⱼ` long,
/// and the chains that run in step read neighbouring entries (four weights in one load).
pub(crate) struct StepTerms {
    lens: [usize; DOT_CONST_GROUP],
    /// Chains in the group.
    n: usize,
    /// The chain whose terms are walked.
    j: usize,
    /// The step.
    k: usize,
    /// How many chains have no term at step `k` (the first `a`).
    a: usize,
    /// Where step `k` begins.
    pos: usize,
}

impl StepTerms {
    /// Member `j`'s terms in `members`, a group laid out as the type describes.
    pub(crate) fn new(members: &[Instr], j: usize) -> StepTerms {
        let mut lens = [0; DOT_CONST_GROUP];
        for (l, i) in lens.iter_mut().zip(members) {
            *l = i.args[2] as usize;
        }
        let mut terms = StepTerms {
            lens,
            n: members.len().min(DOT_CONST_GROUP),
            j,
            k: 0,
            a: 0,
            pos: members.first().map_or(0, |i| i.args[1] as usize),
        };
        terms.settle();
        terms
    }

    /// Counts the chains that have ended by step `k`.
    fn settle(&mut self) {
        while self.a < self.n && self.lens[self.a] <= self.k {
            self.a += 1;
        }
    }
}

impl Iterator for StepTerms {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.j >= self.n || self.k >= self.lens[self.j] || self.a > self.j {
            return None;
        }
        let at = self.pos + (self.j - self.a);
        self.pos += self.n - self.a;
        self.k += 1;
        self.settle();
        Some(at)
    }
}

/// Runs `run`, a run of [`Code::DotConst`] instructions of a [`Schedule::Level`] program
/// (independent chains, as [`dots`]'), over the slot array at `s`: group by group
/// ([`dot_const_groups`]), the chains of a group in step while they have terms (four,
/// then three, two, one, as the shorter end), each group's results stored after every
/// operand of the group is read. `AVX`: the CPU has AVX2 (its build is chosen), and four
/// chains in step run in its four lanes: the four products in one multiplication and the
/// four sums in one addition, each lane rounded as the scalar operation is.
///
/// # Safety
/// As [`dots`]; every group laid out as [`StepTerms`] describes, inside `t.lists` and
/// `t.weights`.
#[inline(never)]
unsafe fn dot_consts<const AVX: bool>(run: &[Instr], t: &Tables<'_>, s: *mut f64) {
    #[cfg(target_arch = "x86_64")]
    if AVX {
        // SAFETY: the caller's contract; the CPU has AVX.
        return unsafe { dot_consts_avx(run, t, s) };
    }
    // SAFETY: the caller's contract.
    unsafe { dot_consts_in::<false>(run, t, s) }
}

/// [`dot_consts`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2; otherwise as [`dot_consts`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_consts_avx(run: &[Instr], t: &Tables<'_>, s: *mut f64) {
    // SAFETY: the caller's contract.
    unsafe { dot_consts_in::<true>(run, t, s) };
    // The upper halves back to zero before the run loop's legacy-SSE `addsd`s (as in
    // [`exps`]).
    std::arch::x86_64::_mm256_zeroupper();
}

/// The body of [`dot_consts`]; `AVX`: the CPU has AVX.
///
/// # Safety
/// As [`dot_consts`].
#[inline(always)]
unsafe fn dot_consts_in<const AVX: bool>(run: &[Instr], t: &Tables<'_>, s: *mut f64) {
    for g in dot_const_groups(run.len()) {
        // SAFETY: the caller's contract; the group is inside the run.
        unsafe {
            let g = run.get_unchecked(g);
            match g.len() {
                4 => dot_const_group::<AVX, 4>(g, t, s),
                3 => dot_const_group::<AVX, 3>(g, t, s),
                2 => dot_const_group::<AVX, 2>(g, t, s),
                _ => dot_const_group::<AVX, 1>(g, t, s),
            }
        }
    }
}

/// One group of `N` chains (`g`, `N` long) of [`dot_consts`]: in step while all have
/// terms, then the longer ones in step, and so on (the chains sorted by length; each
/// width's running values at constant places, so that they stay in registers).
///
/// # Safety
/// As [`dot_consts`], for the group `g`.
#[inline(always)]
unsafe fn dot_const_group<const AVX: bool, const N: usize>(
    g: &[Instr],
    t: &Tables<'_>,
    s: *mut f64,
) {
    // SAFETY: the caller's contract: the group's block inside both tables (`Σ mⱼ`
    // entries from `args[1]`, the lengths ascending), every slot in bounds; no chain
    // reads another's destination, and the results are stored after every read.
    unsafe {
        let mut p = [0.0f64; N];
        let mut m = [0usize; N];
        for j in 0..N {
            let i = g.get_unchecked(j);
            p[j] = *s.add(i.args[0] as usize);
            m[j] = i.args[2] as usize;
        }
        let mut pos = g.get_unchecked(0).args[1] as usize;
        let mut done = 0;
        let (x, w) = (t.lists.as_ptr(), t.weights.as_ptr());
        // The shape of the four-wide steps (a group of four only).
        let form = match N {
            4 => g.get_unchecked(1).args[1],
            _ => shape::GATHER,
        };
        // The chains from `a` on run in step to the end of chain `a`.
        macro_rules! width {
            ($a:literal, $width:literal) => {
                if $a < N {
                    let steps = m[$a] - done;
                    let chains = p[$a..].first_chunk_mut::<$width>();
                    let (x, w) = (x.add(pos), w.add(pos));
                    in_step::<AVX, $width>(chains, x, w, steps, s, form);
                    pos += $width * steps;
                    done = m[$a];
                }
            };
        }
        match N {
            4 => {
                width!(0, 4);
                width!(1, 3);
                width!(2, 2);
                width!(3, 1);
            }
            3 => {
                width!(0, 3);
                width!(1, 2);
                width!(2, 1);
            }
            2 => {
                width!(0, 2);
                width!(1, 1);
            }
            _ => width!(0, 1),
        }
        let _ = (pos, done);
        for (i, p) in g.iter().zip(p) {
            *s.add(i.dst as usize) = p;
        }
    }
}

/// `steps` steps of `W` chains in step (running values `p`), step `k`'s terms at
/// `x[W·k + j]` (slots) and `w[W·k + j]` (weights): `p[j] = w·s[x] + p[j]`, rounded
/// twice, the product as the sum's first operand ([`add_regs_ordered`]). `AVX`: the CPU
/// has AVX2 and the caller is compiled for it; four chains then run in AVX's four lanes
/// ([`in_step_four_avx`]), every step's slots of the [`shape`] `form`.
///
/// # Safety
/// The `W · steps` entries inside both tables, every slot in bounds of `s`; where `AVX`
/// and `W` is 4, every step's four slots of the shape `form`.
#[inline(always)]
unsafe fn in_step<const AVX: bool, const W: usize>(
    p: Option<&mut [f64; W]>,
    x: *const u32,
    w: *const f64,
    steps: usize,
    s: *const f64,
    form: u32,
) {
    let Some(p) = p else { return };
    #[cfg(target_arch = "x86_64")]
    if AVX {
        if let Some(p) = p.first_chunk_mut::<4>().filter(|_| W == 4) {
            // SAFETY: the caller's contract.
            return unsafe { in_step_four_avx(p, x, w, steps, s, form) };
        }
    }
    let _ = form;
    let mut q = *p;
    for k in 0..steps {
        for (j, q) in q.iter_mut().enumerate() {
            // SAFETY: the caller's contract.
            *q = unsafe {
                let at = W * k + j;
                add_regs_ordered::<AVX>(*w.add(at) * *s.add(*x.add(at) as usize), *q)
            };
        }
    }
    *p = q;
}

/// [`in_step`] of four chains, in AVX's lanes: each step's four values in one
/// register, multiplied by the step's four weights (one load) and added to the four
/// running values in one `vaddpd`, the products as its first operand, so every lane
/// rounds and answers (a NaN's payload too) as [`in_step`]'s scalar operations do. A
/// weight is never NaN, so the product's bits do not depend on the order of its factors.
///
/// The values are read by the steps' [`shape`] `form`: one 32-byte load for a run of
/// slots (reversed by a permutation where it descends), one broadcast for one slot, one
/// 16-byte load and a permutation for two pairs, each step by its own phase's shape where
/// the form alternates; otherwise the four slots as two 8-byte words and four scalar
/// loads. Every address read is one of the step's own slots.
///
/// # Safety
/// As [`in_step`]; every step's slots of the shape `form`; the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn in_step_four_avx(
    p: &mut [f64; 4],
    x: *const u32,
    w: *const f64,
    steps: usize,
    s: *const f64,
    form: u32,
) {
    use std::arch::x86_64::*;
    // SAFETY (every access): the caller's contract: `4 · steps` entries from `x` and `w`,
    // every slot in bounds of `s`, every step of the shape `form`; the CPU has AVX2.
    unsafe {
        let mut acc = _mm256_loadu_pd(p.as_ptr());
        // Slot `j` of step `k`.
        let slot = |k: usize, j: usize| s.add(*x.add(4 * k + j) as usize);
        // Step `k`: its four products added to the running values.
        macro_rules! step {
            ($k:expr, $values:expr) => {{
                let k = $k;
                let values = $values;
                let products = _mm256_mul_pd(_mm256_loadu_pd(w.add(4 * k)), values);
                let sum: __m256d;
                // `vaddpd` with the products as its first source: where both are
                // NaN, the product's payload, as the scalar `vaddsd` gives (the
                // compiler could swap the operands of `_mm256_add_pd`).
                std::arch::asm!(
                    "vaddpd {sum}, {a}, {b}",
                    sum = lateout(ymm_reg) sum,
                    a = in(ymm_reg) products,
                    b = in(ymm_reg) acc,
                    options(pure, nomem, nostack, preserves_flags)
                );
                acc = sum;
            }};
        }
        macro_rules! steps {
            (|$k:ident| $values:expr) => {
                for $k in 0..steps {
                    step!($k, $values);
                }
            };
        }
        // Steps that alternate: the even ones' values by `$even`, the odd ones' by `$odd`.
        macro_rules! alternating {
            (|$k:ident| $even:expr, $odd:expr) => {{
                let mut $k = 0;
                while $k + 1 < steps {
                    step!($k, $even);
                    $k += 1;
                    step!($k, $odd);
                    $k += 1;
                }
                if $k < steps {
                    step!($k, $even);
                }
            }};
        }
        // `x₀ … x₀+3`, and `x₃ … x₃+3` (`x₃ = x₀−3`) reversed.
        let ascending = |k: usize| _mm256_loadu_pd(slot(k, 0));
        let descending = |k: usize| _mm256_permute4x64_pd::<0x1B>(_mm256_loadu_pd(slot(k, 3)));
        match form {
            // Descending and ascending taking turns, either way round: the adjoint sums'
            // two phases.
            shape::DOWN_UP => alternating!(|k| descending(k), ascending(k)),
            shape::UP_DOWN => alternating!(|k| ascending(k), descending(k)),
            // `x₀ … x₀+3`.
            shape::ASCENDING => steps!(|k| ascending(k)),
            // `x₃ … x₃+3` (`x₃ = x₀−3`), reversed.
            shape::DESCENDING => steps!(|k| descending(k)),
            shape::SAME => steps!(|k| _mm256_broadcast_sd(&*slot(k, 0))),
            // `(x₀, x₀+1)`, lanes 0 0 1 1.
            shape::PAIRS_UP => steps!(|k| _mm256_permute4x64_pd::<0x50>(_mm256_castpd128_pd256(
                _mm_loadu_pd(slot(k, 0))
            ))),
            // `(x₂, x₂+1) = (x₀−1, x₀)`, lanes 1 1 0 0.
            shape::PAIRS_DOWN => steps!(|k| _mm256_permute4x64_pd::<0x05>(_mm256_castpd128_pd256(
                _mm_loadu_pd(slot(k, 2))
            ))),
            _ => steps!(|k| {
                let at = x.add(4 * k).cast::<u64>();
                let (x01, x23) = (at.read_unaligned(), at.add(1).read_unaligned());
                let slot = |v: u64| s.add(v as u32 as usize);
                let lo = _mm_loadh_pd(_mm_load_sd(slot(x01)), slot(x01 >> 32));
                let hi = _mm_loadh_pd(_mm_load_sd(slot(x23)), slot(x23 >> 32));
                _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(lo), hi)
            }),
        }
        _mm256_storeu_pd(p.as_mut_ptr(), acc);
    }
}

/// `a + s[k]` with `a` as the instruction's first operand, as the `Add` loop computes it:
/// the same value in every case, and (where both are NaN) `a`'s payload. The compiler may
/// swap the operands of a plain `+` (an addition commutes, up to which NaN comes out),
/// and did in the accumulate loop, where the sum sits in a register and the term is
/// loaded; on x86-64 the order is therefore fixed by hand.
///
/// # Safety
/// `s.add(k)` must point to an initialised `f64`.
#[inline(always)]
unsafe fn add_in_order(a: f64, s: *const f64, k: usize) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut a = a;
        // SAFETY: `addsd` reads the 8 bytes at `s + 8k` (the caller's promise) and writes
        // only the register `a`; no stack, no flags.
        unsafe {
            std::arch::asm!(
                "addsd {a}, qword ptr [{s} + {k} * 8]",
                a = inout(xmm_reg) a,
                s = in(reg) s,
                k = in(reg) k,
                options(pure, readonly, nostack, preserves_flags)
            );
        }
        a
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: the caller's promise.
        a + unsafe { *s.add(k) }
    }
}

/// `s[a] * s[b] + c`, as the [`Code::MulAdd`] loop computes it: the product rounded, then
/// the sum, the product as the addition's first operand (so, where both are NaN, the
/// product's payload), fixed by hand on x86-64 as in [`add_in_order`].
///
/// # Safety
/// `s.add(a)` and `s.add(b)` must point to initialised `f64`s.
#[inline(always)]
unsafe fn mul_add_in_order(s: *const f64, a: usize, b: usize, c: f64) -> f64 {
    // SAFETY: the caller's promise.
    add_regs_in_order(unsafe { *s.add(a) * *s.add(b) }, c)
}

/// `a + b` with `a` as the addition's first operand (where both are NaN, `a`'s payload),
/// both in registers: the order a plain `+` may swap, fixed by hand on x86-64 as in
/// [`add_in_order`].
#[inline(always)]
fn add_regs_in_order(a: f64, b: f64) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut a = a;
        // SAFETY: `addsd` reads and writes only the registers `a` and `b`; no memory, no
        // stack, no flags.
        unsafe {
            std::arch::asm!(
                "addsd {a}, {b}",
                a = inout(xmm_reg) a,
                b = in(xmm_reg) b,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        a
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        a + b
    }
}

/// [`add_regs_in_order`], in AVX's three-operand form where `AVX` (no copy of `a` to
/// keep `b`); the caller must then be running on a CPU with AVX.
#[inline(always)]
fn add_regs_ordered<const AVX: bool>(a: f64, b: f64) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if AVX {
        let sum;
        // SAFETY: `vaddsd` reads the registers `a` and `b` (the first source's NaN is the
        // answer where both are NaN) and writes `sum`; no memory, no stack, no flags. The
        // caller runs it only where the CPU has AVX.
        unsafe {
            std::arch::asm!(
                "vaddsd {sum}, {a}, {b}",
                sum = lateout(xmm_reg) sum,
                a = in(xmm_reg) a,
                b = in(xmm_reg) b,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        return sum;
    }
    add_regs_in_order(a, b)
}

/// `x`, through a barrier the compiler cannot see through, so that a negation written
/// next to an operation stays where it is written: LLVM moves `-(a*b)` onto an operand,
/// `(-a)*b`, and `(-a)/b` out, `-(a/b)`, which differ in the sign of a NaN that the other
/// operand brings (the fused negations, [`Code::MulNeg`] …, must give the bits of the
/// `Neg` and the operation apart). An empty instruction on x86-64.
#[inline(always)]
pub(crate) fn opaque(x: f64) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut x = x;
        // SAFETY: an empty template: nothing is read or written but the register `x`.
        unsafe {
            std::arch::asm!(
                "/* {x} */",
                x = inout(xmm_reg) x,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        x
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::hint::black_box(x)
    }
}

fn next_id() -> u64 {
    NEXT_PROGRAM.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests;
