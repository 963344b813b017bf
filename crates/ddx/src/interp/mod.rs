//! The interpreter: a lane graph lowered to a flat instruction list over a slot array.
//!
//! **Lowering** ([`Program::lower`]) gives every constant and every input a fixed slot and
//! every operation a slot taken from a free list: a value's slot is freed after its last
//! use, so the working set stays small. Output slots are never freed. Every slot index is
//! checked against the slot count once, at lowering, which is what lets the execution loop
//! index without bounds checks.
//!
//! **Execution** ([`Program::run`]) is one loop over the instructions with the semantics
//! of [`ddx_ir::math`]: transcendental functions are called through the same `extern "C"`
//! functions the JIT calls, so every engine agrees to the bit. Slot layout:
//! `[constants | symbols | seeds | temporaries]`; each thread keeps one scratch array and
//! re-fills the constants only when it switches programs.

mod lower;

use ddx_ir::Op;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// One instruction: `slot[dst] = op(slot[a], slot[b], slot[c])`, unused operands zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Instr {
    /// The operation.
    pub op: Op,
    /// Destination slot.
    pub dst: u32,
    /// Operand slots (only the first `op.arity()` are read).
    pub args: [u32; 3],
}

/// A lowered lane: instructions over a slot array.
#[derive(Debug)]
pub struct Program {
    id: u64,
    slots: usize,
    consts: Vec<f64>,
    inputs: usize,
    instrs: Vec<Instr>,
    outputs: Vec<u32>,
}

static NEXT_PROGRAM: AtomicU64 = AtomicU64::new(1);

struct Scratch {
    program: u64,
    slots: Vec<f64>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = const { RefCell::new(Scratch { program: 0, slots: Vec::new() }) };
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

    /// Whether the program has no instructions (its outputs are inputs or constants).
    pub fn is_empty(&self) -> bool {
        self.instrs.is_empty()
    }

    /// Number of slots (constants, inputs and temporaries).
    pub fn slot_count(&self) -> usize {
        self.slots
    }

    /// Evaluates at one point: `inputs` holds [`Program::inputs`] values (symbols in
    /// canonical order, then seeds), `out` receives [`Program::outputs`] values.
    ///
    /// # Panics
    /// If the slice lengths differ from the program's (callers check them first).
    pub fn run(&self, inputs: &[f64], out: &mut [f64]) {
        assert_eq!(inputs.len(), self.inputs, "input count");
        assert_eq!(out.len(), self.outputs.len(), "output count");
        SCRATCH.with(|s| {
            let mut s = s.borrow_mut();
            let s = &mut *s;
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
            unsafe { execute(&self.instrs, s.slots.as_mut_ptr()) };
            for (o, &slot) in out.iter_mut().zip(&self.outputs) {
                *o = s.slots[slot as usize];
            }
        });
    }
}

/// Runs `instrs` over the slot array at `s`.
///
/// # Safety
/// Every slot index in `instrs` must be in bounds of the array `s` points to.
#[inline(never)]
unsafe fn execute(instrs: &[Instr], s: *mut f64) {
    use ddx_ir::math;
    for i in instrs {
        // SAFETY: the caller guarantees every index is in bounds.
        let ld = |k: usize| unsafe { *s.add(i.args[k] as usize) };
        let r = match i.op {
            Op::Neg => -ld(0),
            Op::Add => ld(0) + ld(1),
            Op::Sub => ld(0) - ld(1),
            Op::Mul => ld(0) * ld(1),
            Op::Div => ld(0) / ld(1),
            Op::Sqrt => ld(0).sqrt(),
            Op::Abs => ld(0).abs(),
            Op::Sign => math::sign(ld(0)),
            Op::Max => math::max(ld(0), ld(1)),
            Op::Min => math::min(ld(0), ld(1)),
            Op::Lt => math::truth(ld(0) < ld(1)),
            Op::Le => math::truth(ld(0) <= ld(1)),
            Op::Eq => math::truth(ld(0) == ld(1)),
            Op::Ne => math::ne(ld(0), ld(1)),
            Op::Select => math::select(ld(0), ld(1), ld(2)),
            Op::Fma => ld(0).mul_add(ld(1), ld(2)),
            Op::Sin => math::sin(ld(0)),
            Op::Cos => math::cos(ld(0)),
            Op::Tan => math::tan(ld(0)),
            Op::Exp => math::exp(ld(0)),
            Op::Log => math::log(ld(0)),
            Op::Log10 => math::log10(ld(0)),
            Op::Cbrt => math::cbrt(ld(0)),
            Op::Asin => math::asin(ld(0)),
            Op::Acos => math::acos(ld(0)),
            Op::Atan => math::atan(ld(0)),
            Op::Sinh => math::sinh(ld(0)),
            Op::Cosh => math::cosh(ld(0)),
            Op::Tanh => math::tanh(ld(0)),
            Op::Asinh => math::asinh(ld(0)),
            Op::Acosh => math::acosh(ld(0)),
            Op::Atanh => math::atanh(ld(0)),
            Op::Erf => math::erf(ld(0)),
            Op::Pow => math::pow(ld(0), ld(1)),
            Op::Atan2 => math::atan2(ld(0), ld(1)),
            Op::Hypot => math::hypot(ld(0), ld(1)),
        };
        // SAFETY: as above.
        unsafe { *s.add(i.dst as usize) = r };
    }
}

fn next_id() -> u64 {
    NEXT_PROGRAM.fetch_add(1, Ordering::Relaxed)
}
