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
//!   and an instruction no moved input reaches reads only slots that did not change.
//! - An input reaching more than half of the instructions keeps no list (memory stays in
//!   proportion to what an incremental sweep can save); moving it sweeps in full.

use super::{dispatch, lower::Schedule, Code, Instr, Program, Run};
use ddx_ir::Lane;
use std::cell::RefCell;
use std::sync::OnceLock;

/// A lane's tape program and its per-input reach, built on first use.
#[derive(Debug)]
pub(crate) struct Tape {
    program: Program,
    /// The first temporary slot: instruction `k` writes slot `first + k`.
    first: usize,
    /// Each instruction's operation, by instruction index.
    codes: Vec<Code>,
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
    fn clear(&mut self) {
        self.instrs.clear();
        self.runs.clear();
    }

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

thread_local! {
    /// The merged instructions of several moved inputs (reused across calls).
    static MERGED: RefCell<Part> = RefCell::new(Part::default());
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
        unsafe { dispatch(&p.runs, &p.instrs, tape.as_mut_ptr()) };
    }

    /// Moves `tape` — a sweep at `old` — to `new`, running only the instructions the moved
    /// inputs (those whose bits differ) reach, or everything when they reach more than
    /// half. Answers the number of instructions run.
    ///
    /// The caller guarantees `tape` came from [`Tape::sweep`] or `resweep` of this tape
    /// at `old`; a tape of the wrong length is swept afresh.
    pub(crate) fn resweep(&self, tape: &mut Vec<f64>, old: &[f64], new: &[f64]) -> usize {
        let p = &self.program;
        if tape.len() != p.slots || old.len() != p.inputs || new.len() != p.inputs {
            self.sweep(tape, new, true);
            return self.len();
        }
        let moved = |i: &usize| old[*i].to_bits() != new[*i].to_bits();
        let mut moved_inputs = (0..p.inputs).filter(moved);
        let Some(first) = moved_inputs.next() else {
            return 0;
        };
        let reach = self.reach();
        let base = p.consts.len();
        let half = self.len() / 2;
        let whole = |tape: &mut Vec<f64>| {
            self.sweep(tape, new, false);
            self.len()
        };
        let Some(one) = &reach.inputs[first] else {
            return whole(tape);
        };
        let Some(second) = moved_inputs.next() else {
            tape[base + first] = new[first];
            // SAFETY: `one` holds this program's instructions (slots checked at lowering
            // against `p.slots`, the length of `tape`), its runs tiling them.
            unsafe { dispatch(&one.runs, &one.instrs, tape.as_mut_ptr()) };
            return one.instrs.len();
        };
        MERGED.with(|cell| {
            let Ok(mut merged) = cell.try_borrow_mut() else {
                return whole(tape);
            };
            let mut all: Vec<&Part> = vec![one];
            for i in std::iter::once(second).chain(moved_inputs) {
                match &reach.inputs[i] {
                    Some(part) => all.push(part),
                    None => return whole(tape),
                }
            }
            if all.iter().map(|part| part.instrs.len()).sum::<usize>() > half {
                // The union may still be small, but the check costs what the sweep saves.
                return whole(tape);
            }
            let mut instrs: Vec<Instr> = all
                .iter()
                .flat_map(|part| part.instrs.iter().copied())
                .collect();
            instrs.sort_unstable_by_key(|i| i.dst);
            instrs.dedup_by_key(|i| i.dst);
            merged.clear();
            for i in instrs {
                merged.push(self.codes[i.dst as usize - self.first], i);
            }
            for (i, (o, n)) in old.iter().zip(new).enumerate() {
                if o.to_bits() != n.to_bits() {
                    tape[base + i] = *n;
                }
            }
            // SAFETY: as above; `merged` holds this program's instructions.
            unsafe { dispatch(&merged.runs, &merged.instrs, tape.as_mut_ptr()) };
            merged.instrs.len()
        })
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
        for (k, i) in p.instrs.iter().enumerate() {
            let used = &i.args[..self.codes[k].arity()];
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
            let used = &i.args[..self.codes[k].arity()];
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
