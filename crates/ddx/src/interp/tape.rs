//! The tape: a lane lowered so that one sweep leaves every value in its own slot, and the
//! incremental sweep that re-runs only what moved inputs reach.
//!
//! [`Tape`] owns a [`Program`] lowered under [`Schedule::Tape`] (no slot reuse; instruction
//! `k` writes slot `first + k`, so program order is destination order), and — built once,
//! lazily, on the first incremental sweep — [`Reach`]: for each input (symbol, then seed)
//! the instructions that read it directly or through other instructions, in program order,
//! grouped into runs of equal operations exactly as the full program's are.
//!
//! **Invariants.**
//! - A tape array holds [`Program::slot_count`] values with the constants in their slots.
//!   After [`Tape::sweep`] at inputs `x` (or [`Tape::resweep`] from a tape of `x₀` to `x`),
//!   every slot holds the value a full sweep at `x` gives it, to the bit: each instruction
//!   is the full program's own, run by the same execution loop on the same operand values,
//!   and an instruction no moved input reaches reads only slots that did not change (with
//!   several inputs moved, an instruction that more than one reaches runs once per list,
//!   the last time on final operands: see [`Tape::resweep`]).
//! - An input reaching more than half of the instructions keeps no list (memory stays in
//!   proportion to what an incremental sweep can save); moving it sweeps in full.

use super::{dispatch, lower::Schedule, Code, Instr, Program, Run};
use crate::cache::{every_moved, next_moved};
use ddx_ir::Lane;
use ddx_ir::Op;
use std::sync::OnceLock;

/// A lane's tape program and its per-input reach, built on first use.
#[derive(Debug)]
pub(crate) struct Tape {
    program: Program,
    /// The first temporary slot: instruction `k` writes slot `first + k`.
    first: usize,
    /// Each instruction's operation, by instruction index.
    codes: Vec<Code>,
    /// Whether the program calls user code (which must see only a full sweep's operands,
    /// and once per call: several moved inputs' lists are then merged, not run in turn).
    calls_user: bool,
    reach: OnceLock<Reach>,
}

/// For each input, the instructions it reaches (`None`: more than half of them).
#[derive(Debug)]
struct Reach {
    inputs: Vec<Option<Part>>,
}

/// Some of a program's instructions, in program order, with runs tiling them.
#[derive(Debug, Default)]
struct Part {
    instrs: Vec<Instr>,
    runs: Vec<Run>,
}

impl Part {
    /// Appends instruction `i`, computing `code`.
    fn push(&mut self, code: Code, i: Instr) {
        let at = self.instrs.len() as u32;
        match self.runs.last_mut() {
            Some(r) if r.code == code => r.end += 1,
            _ => self.runs.push(Run {
                code,
                start: at,
                end: at + 1,
            }),
        }
        self.instrs.push(i);
    }

    fn bytes(&self) -> usize {
        self.instrs.capacity() * std::mem::size_of::<Instr>()
            + self.runs.capacity() * std::mem::size_of::<Run>()
    }
}

impl Tape {
    /// The tape program of `lane`; the reach lists are built on the first
    /// [`Tape::resweep`].
    pub(crate) fn new(lane: &Lane) -> Self {
        let program = Program::lower(lane, Schedule::Tape);
        let first = program.consts.len() + program.inputs;
        let mut codes = Vec::with_capacity(program.instrs.len());
        for r in &program.runs {
            codes.extend((r.start..r.end).map(|_| r.code));
        }
        debug_assert!(program
            .instrs
            .iter()
            .enumerate()
            .all(|(k, i)| i.dst as usize == first + k));
        Tape {
            calls_user: codes.contains(&Code::Op(Op::Call)) || codes.contains(&Code::CallN),
            program,
            first,
            codes,
            reach: OnceLock::new(),
        }
    }

    /// Instructions in a full sweep.
    pub(crate) fn len(&self) -> usize {
        self.program.instrs.len()
    }

    /// Bytes held by the tape program and (once built) the reach lists: the memory the
    /// incremental sweep costs this lane, beside each remembered tape array itself
    /// ([`Program::slot_count`] values).
    pub(crate) fn memory(&self) -> usize {
        let reach = self.reach.get().map_or(0, |r| {
            r.inputs.capacity() * std::mem::size_of::<Option<Part>>()
                + r.inputs.iter().flatten().map(Part::bytes).sum::<usize>()
        });
        self.program.memory() + self.codes.capacity() * std::mem::size_of::<Code>() + reach
    }

    /// Sweeps in full at `inputs` (the program's input count) into `tape`, which is
    /// resized and given the constants unless it already holds this program's slots.
    pub(crate) fn sweep(&self, tape: &mut Vec<f64>, inputs: &[f64], fresh: bool) {
        let p = &self.program;
        let base = p.consts.len();
        if fresh || tape.len() != p.slots {
            tape.clear();
            tape.resize(p.slots, 0.0);
            tape[..base].copy_from_slice(&p.consts);
        }
        tape[base..base + p.inputs].copy_from_slice(inputs);
        // SAFETY: `lower` checked every slot index against `p.slots`, the length of `tape`.
        unsafe { dispatch(&p.runs, &p.instrs, &p.lists, tape.as_mut_ptr()) };
    }

    /// Moves `tape` — a sweep at `old` — to `new`, running only the instructions the moved
    /// inputs (those whose bits differ) reach, or everything when every input moved, when
    /// one of them keeps no reach list, or when their lists add up to more than half of
    /// the program. Answers the number of instructions run.
    ///
    /// Several moved inputs run their lists one after the other, each in program order,
    /// after every moved input is written: an instruction two inputs reach runs twice, and
    /// its last run reads final operands (every list holding an operand that moved also
    /// holds the instruction, so the operand's last run comes before it: in an earlier
    /// list, or earlier in the same one), so the tape ends as a full sweep leaves it, bit
    /// for bit. That costs at most the lists' total, which is bounded by half a sweep, and
    /// nothing to merge them (sorting the union cost more than the sweep it saved). A
    /// program that calls user code is the exception: its lists are merged into their
    /// union, so that user code runs once per call and never on a mix of old and new
    /// operands.
    ///
    /// The caller guarantees `tape` came from [`Tape::sweep`] or `resweep` of this tape
    /// at `old`; a tape of the wrong length is swept afresh.
    pub(crate) fn resweep(&self, tape: &mut Vec<f64>, old: &[f64], new: &[f64]) -> usize {
        let p = &self.program;
        if tape.len() != p.slots || old.len() != p.inputs || new.len() != p.inputs {
            self.sweep(tape, new, true);
            return self.len();
        }
        let whole = |tape: &mut Vec<f64>| {
            self.sweep(tape, new, false);
            self.len()
        };
        if !new.is_empty() && every_moved(old, new) {
            // A stream of new points: everything an input reaches runs, and no list is
            // needed (nor built).
            return whole(tape);
        }
        // The moved inputs: the first few located (skipping eight unmoved at a time: a
        // coordinate search or a finite difference moves one or two).
        const FEW: usize = 16;
        let mut few = [0usize; FEW];
        let mut count = 0;
        let mut at = 0;
        while let Some(i) = next_moved(old, new, at) {
            if count == FEW {
                count += 1;
                break;
            }
            few[count] = i;
            count += 1;
            at = i + 1;
        }
        if count == 0 {
            return 0;
        }
        // More than the few: filtered again where they are needed (`count` is then only
        // known to be more than `FEW`).
        let (listed, rest) = if count <= FEW {
            (count, 0)
        } else {
            (0, p.inputs)
        };
        let moved = || {
            few[..listed]
                .iter()
                .copied()
                .chain((0..rest).filter(move |&i| old[i].to_bits() != new[i].to_bits()))
        };
        let reach = self.reach();
        let half = self.len() / 2;
        let mut total = 0;
        for i in moved() {
            match &reach.inputs[i] {
                Some(part) if total + part.instrs.len() <= half => total += part.instrs.len(),
                _ => return whole(tape),
            }
        }
        let base = p.consts.len();
        for i in moved() {
            tape[base + i] = new[i];
        }
        if self.calls_user && count > 1 {
            // User code sees each call once, on final operands: the union, in program
            // order (instruction `k` writes slot `first + k`, so sorting by destination
            // is program order).
            let mut instrs: Vec<Instr> = moved()
                .filter_map(|i| reach.inputs[i].as_ref())
                .flat_map(|part| part.instrs.iter().copied())
                .collect();
            instrs.sort_unstable_by_key(|i| i.dst);
            instrs.dedup_by_key(|i| i.dst);
            let mut merged = Part::default();
            for i in instrs {
                merged.push(self.codes[i.dst as usize - self.first], i);
            }
            // SAFETY: `merged` holds this program's instructions (slots checked at
            // lowering against `p.slots`, the length of `tape`), its runs tiling them.
            unsafe { dispatch(&merged.runs, &merged.instrs, &p.lists, tape.as_mut_ptr()) };
            return merged.instrs.len();
        }
        for part in moved().filter_map(|i| reach.inputs[i].as_ref()) {
            // SAFETY: `part` holds this program's instructions (slots checked at lowering
            // against `p.slots`, the length of `tape`), its runs tiling them.
            unsafe { dispatch(&part.runs, &part.instrs, &p.lists, tape.as_mut_ptr()) };
        }
        total
    }

    /// Hands output `k`'s value in `tape` to `sink`, for every output in order.
    pub(crate) fn read(&self, tape: &[f64], mut sink: impl FnMut(usize, f64)) {
        for (k, &slot) in self.program.outputs.iter().enumerate() {
            sink(k, tape[slot as usize]);
        }
    }

    /// The reach lists, built on first use.
    fn reach(&self) -> &Reach {
        self.reach.get_or_init(|| self.build_reach())
    }

    /// For each input, a walk over the instructions that consume it (through a
    /// consumer index), marking each once; then sorted into program order.
    fn build_reach(&self) -> Reach {
        let p = &self.program;
        let len = p.instrs.len();
        let base = p.consts.len();
        // consumers[slot] = instructions reading `slot` (CSR over slots).
        let mut start = vec![0u32; p.slots + 1];
        let mut used: Vec<u32> = Vec::new();
        for (k, i) in p.instrs.iter().enumerate() {
            used.clear();
            used.extend(p.reads(self.codes[k], i));
            for (j, &a) in used.iter().enumerate() {
                if !used[..j].contains(&a) {
                    start[a as usize + 1] += 1;
                }
            }
        }
        for s in 0..p.slots {
            start[s + 1] += start[s];
        }
        let mut fill = start.clone();
        let mut consumers = vec![0u32; start[p.slots] as usize];
        for (k, i) in p.instrs.iter().enumerate() {
            used.clear();
            used.extend(p.reads(self.codes[k], i));
            for (j, &a) in used.iter().enumerate() {
                if !used[..j].contains(&a) {
                    consumers[fill[a as usize] as usize] = k as u32;
                    fill[a as usize] += 1;
                }
            }
        }
        let mut mark = vec![u32::MAX; len];
        let mut stack: Vec<u32> = Vec::new();
        let mut found: Vec<u32> = Vec::new();
        let inputs = (0..p.inputs)
            .map(|input| {
                found.clear();
                stack.clear();
                stack.push((base + input) as u32);
                while let Some(slot) = stack.pop() {
                    let (a, b) = (start[slot as usize], start[slot as usize + 1]);
                    for &k in &consumers[a as usize..b as usize] {
                        if mark[k as usize] != input as u32 {
                            mark[k as usize] = input as u32;
                            found.push(k);
                            stack.push(p.instrs[k as usize].dst);
                        }
                    }
                }
                if found.len() > len / 2 {
                    return None;
                }
                found.sort_unstable();
                let mut part = Part::default();
                part.instrs.reserve_exact(found.len());
                for &k in &found {
                    part.push(self.codes[k as usize], p.instrs[k as usize]);
                }
                part.runs.shrink_to_fit();
                Some(part)
            })
            .collect();
        Reach { inputs }
    }
}
