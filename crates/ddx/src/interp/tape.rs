//! The tape: a lane lowered so that one sweep leaves every value in its own slot, and the
//! incremental sweep that re-runs only what moved inputs reach.
//!
//! [`Tape`] owns a [`Program`] lowered under [`Schedule::Tape`] (no slot reuse; instruction
//! `k` writes slot `first + k`, so program order is destination order), and — built once,
//! lazily, on the first incremental sweep — [`Reach`]: for each input (symbol, then seed)
//! the instructions that read it directly or through other instructions, in program order,
//! as *pieces* of the program's own runs (a run `start..end` over the program's instruction
//! list, inside one of its runs). Nothing is copied: a coordinate that reaches a running
//! sum from term `p` on holds one piece for the whole tail of the sum, however long.
//!
//! **Invariants.**
//! - A tape array holds [`Program::slot_count`] values with the constants in their slots.
//!   After [`Tape::sweep`] at inputs `x` (or [`Tape::resweep`] from a tape of `x₀` to `x`),
//!   every slot holds the value a full sweep at `x` gives it, to the bit: each instruction
//!   is the full program's own, run by the same execution loop on the same operand values,
//!   once, in program order, after every moved input is written; an instruction no moved
//!   input reaches reads only slots that did not change.
//! - A reach list is sorted, its pieces disjoint, each inside one program run (so two
//!   lists' pieces that overlap have one operation, and their union is again such a list).
//! - An input reaching more than half of the instructions keeps no list (memory stays in
//!   proportion to what an incremental sweep can save); moving it sweeps in full.

use super::{dispatch, lower::Schedule, Code, Program, Run};
use crate::cache::Moved;
use ddx_ir::Op;
use std::cell::Cell;
use std::sync::OnceLock;

/// A lane's tape program and its per-input reach, built on first use.
#[derive(Debug)]
pub(crate) struct Tape {
    program: Program,
    reach: OnceLock<Reach>,
}

/// For each input, the instructions it reaches (`None`: more than half of them).
#[derive(Debug)]
struct Reach {
    inputs: Vec<Option<Part>>,
}

/// Some of a program's instructions: pieces of its runs over its own instruction list,
/// sorted and disjoint.
#[derive(Debug, Default)]
struct Part {
    pieces: Box<[Run]>,
    /// Instructions the pieces hold.
    count: usize,
}

thread_local! {
    /// Two piece lists a re-sweep of several moved inputs merges in (taken and put back,
    /// so that a re-sweep entered from user code gets lists of its own).
    static UNION: Cell<(Vec<Run>, Vec<Run>)> = const { Cell::new((Vec::new(), Vec::new())) };
}

/// `out` := the union of the piece lists `a` and `b` (each sorted, disjoint, every piece
/// inside one program run): sorted and disjoint again, overlapping pieces (of one run)
/// joined. Answers the instructions it holds.
fn union_into(a: &[Run], b: &[Run], out: &mut Vec<Run>) -> usize {
    out.clear();
    out.reserve(a.len() + b.len());
    let (mut a, mut b) = (a, b);
    let mut count = 0usize;
    let mut last: Option<Run> = None;
    loop {
        let next = match (a.first(), b.first()) {
            (Some(x), Some(y)) => {
                if x.start <= y.start {
                    a = &a[1..];
                    *x
                } else {
                    b = &b[1..];
                    *y
                }
            }
            (Some(x), None) => {
                a = &a[1..];
                *x
            }
            (None, Some(y)) => {
                b = &b[1..];
                *y
            }
            (None, None) => break,
        };
        match &mut last {
            // Overlapping pieces lie inside one run: one operation.
            Some(l) if next.start < l.end => {
                debug_assert!(l.code == next.code);
                if next.end > l.end {
                    count += (next.end - l.end) as usize;
                    l.end = next.end;
                }
            }
            _ => {
                count += (next.end - next.start) as usize;
                if let Some(l) = last.replace(next) {
                    out.push(l);
                }
            }
        }
    }
    out.extend(last);
    count
}

/// The fewest instructions a running sum needs to become a [`Code::Accumulate`] run of
/// its own (splitting an `Add` run costs a dispatch or two).
const MIN_ACCUMULATE: u32 = 8;

/// Makes each running sum in `p`'s `Add` runs — a stretch of at least
/// [`MIN_ACCUMULATE`] instructions, each taking the one before's result as its first
/// operand — a [`Code::Accumulate`] run: the same additions in the same order, the sum
/// kept in a register. (The level schedule puts a left-to-right sum's additions one per
/// level, so they are adjacent, each reading the last.)
fn accumulate(p: &mut Program) {
    let add = Code::Op(Op::Add);
    if !p
        .runs
        .iter()
        .any(|r| r.code == add && r.end - r.start >= MIN_ACCUMULATE)
    {
        return;
    }
    let mut runs = Vec::with_capacity(p.runs.len() + 2);
    for r in &p.runs {
        if r.code != add {
            runs.push(*r);
            continue;
        }
        let mut plain = r.start; // the first instruction not yet in a run
        let mut k = r.start;
        while k < r.end {
            let mut e = k + 1;
            while e < r.end && p.instrs[e as usize].args[0] == p.instrs[e as usize - 1].dst {
                e += 1;
            }
            if e - k >= MIN_ACCUMULATE {
                if plain < k {
                    runs.push(Run {
                        code: add,
                        start: plain,
                        end: k,
                    });
                }
                runs.push(Run {
                    code: Code::Accumulate,
                    start: k,
                    end: e,
                });
                plain = e;
            }
            k = e;
        }
        if plain < r.end {
            runs.push(Run {
                code: add,
                start: plain,
                end: r.end,
            });
        }
    }
    p.runs = runs;
}

impl Tape {
    /// The tape program of `lane`; the reach lists are built on the first
    /// [`Tape::resweep`] that needs them.
    pub(crate) fn new(lane: &ddx_ir::Lane) -> Self {
        let mut program = Program::lower_built(lane, Schedule::Tape);
        accumulate(&mut program);
        debug_assert!({
            let first = program.consts.len() + program.inputs;
            program
                .instrs
                .iter()
                .enumerate()
                .all(|(k, i)| i.dst as usize == first + k)
        });
        Tape {
            program,
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
                + r.inputs
                    .iter()
                    .flatten()
                    .map(|p| std::mem::size_of_val(&*p.pieces))
                    .sum::<usize>()
        });
        self.program.memory() + reach
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
        unsafe { dispatch(&p.runs, &p.instrs, &p.tables(), tape.as_mut_ptr()) };
    }

    /// Moves `tape` — a sweep at `old` — to `new`, `moved` being where they differ
    /// ([`Moved::find`]`(old, new)`), running only the instructions the moved inputs reach,
    /// or everything when every input moved, when one of them keeps no reach list, or when
    /// the union of their lists is more than half of the program. Answers the number of
    /// instructions run.
    ///
    /// Every moved input is written first; then the union of their lists runs, once, in
    /// program order. So each instruction that runs reads final operands (an operand that
    /// moved is an input written before, or an instruction of the union, which comes
    /// earlier in program order), and user code is called once per call, on a full
    /// sweep's operands: the tape ends as a full sweep at `new` leaves it, bit for bit.
    /// One moved input runs its list as it is; several are merged (a pass over their
    /// pieces, not their instructions).
    ///
    /// The caller guarantees `tape` came from [`Tape::sweep`] or `resweep` of this tape
    /// at `old`; a tape of the wrong length is swept afresh.
    pub(crate) fn resweep(
        &self,
        tape: &mut Vec<f64>,
        old: &[f64],
        new: &[f64],
        moved: &Moved,
    ) -> usize {
        let p = &self.program;
        if tape.len() != p.slots || old.len() != p.inputs || new.len() != p.inputs {
            self.sweep(tape, new, true);
            return self.len();
        }
        if moved.all() {
            // A stream of new points: everything an input reaches runs, and no list is
            // needed (nor built).
            self.sweep(tape, new, false);
            return self.len();
        }
        if moved.none() {
            return 0;
        }
        match moved.few() {
            Some(few) => self.rerun(tape, new, few.iter().map(|&i| i as usize)),
            // More than the few: filtered again where they are needed.
            None => self.rerun(
                tape,
                new,
                (0..p.inputs).filter(|&i| old[i].to_bits() != new[i].to_bits()),
            ),
        }
    }

    /// [`Tape::resweep`] once the moved inputs are known (at least one, not all): their
    /// lists' union, unless it (or any input's list) is more than half of the program.
    fn rerun(
        &self,
        tape: &mut Vec<f64>,
        new: &[f64],
        moved: impl Iterator<Item = usize> + Clone,
    ) -> usize {
        let p = &self.program;
        let reach = self.reach();
        let half = self.len() / 2;
        let whole = |tape: &mut Vec<f64>| {
            self.sweep(tape, new, false);
            self.len()
        };
        let mut total = 0;
        let mut lists = 0;
        let mut only: &[Run] = &[];
        for i in moved.clone() {
            match &reach.inputs[i] {
                Some(part) => {
                    total += part.count;
                    lists += 1;
                    only = &part.pieces;
                }
                None => return whole(tape),
            }
        }
        let base = p.consts.len();
        if lists == 1 {
            if total > half {
                return whole(tape);
            }
            for i in moved {
                tape[base + i] = new[i];
            }
            // SAFETY: `only` holds pieces of this program's runs (slots checked at
            // lowering against `p.slots`, the length of `tape`).
            unsafe { dispatch(only, &p.instrs, &p.tables(), tape.as_mut_ptr()) };
            return total;
        }
        // The union: a pass over the lists' pieces (their sum bounds it; lists that share
        // a running sum's tail share most of it).
        let (mut acc, mut next) = UNION.with(Cell::take);
        let mut parts = moved.clone().filter_map(|i| reach.inputs[i].as_ref());
        acc.clear();
        let mut ran = 0;
        if let Some(first) = parts.next() {
            acc.extend_from_slice(&first.pieces);
            ran = first.count;
        }
        for part in parts {
            ran = union_into(&acc, &part.pieces, &mut next);
            std::mem::swap(&mut acc, &mut next);
        }
        let ran = if ran > half {
            whole(tape)
        } else {
            for i in moved {
                tape[base + i] = new[i];
            }
            // SAFETY: `acc` holds pieces of this program's runs, as each list does.
            unsafe { dispatch(&acc, &p.instrs, &p.tables(), tape.as_mut_ptr()) };
            ran
        };
        UNION.with(|c| c.set((acc, next)));
        ran
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
    /// consumer index), marking each once in a bit set, which is then read in program
    /// order as intervals and cut at the program's run boundaries.
    fn build_reach(&self) -> Reach {
        let p = &self.program;
        let len = p.instrs.len();
        let base = p.consts.len();
        // run_of[k] = the program run holding instruction k.
        let mut run_of = vec![0u32; len];
        for (r, run) in p.runs.iter().enumerate() {
            run_of[run.start as usize..run.end as usize].fill(r as u32);
        }
        // consumers[slot] = instructions reading `slot` (CSR over slots).
        let mut start = vec![0u32; p.slots + 1];
        let mut used: Vec<u32> = Vec::new();
        for (k, &r) in run_of.iter().enumerate() {
            used.clear();
            used.extend(p.reads(&p.runs[r as usize], k));
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
        for (k, &r) in run_of.iter().enumerate() {
            used.clear();
            used.extend(p.reads(&p.runs[r as usize], k));
            for (j, &a) in used.iter().enumerate() {
                if !used[..j].contains(&a) {
                    consumers[fill[a as usize] as usize] = k as u32;
                    fill[a as usize] += 1;
                }
            }
        }
        // Whether instruction k's only consumer is k + 1, in one accumulate run: the walk
        // goes down such a stretch without the stack.
        let mut next_only = vec![false; len];
        for r in p.runs.iter().filter(|r| r.code == Code::Accumulate) {
            let run = r.start as usize..r.end as usize - 1;
            for (k, only) in run.clone().zip(&mut next_only[run]) {
                let dst = p.instrs[k].dst as usize;
                *only = start[dst + 1] - start[dst] == 1;
            }
        }
        // The instructions the current input reaches (cleared after each input).
        let mut seen = vec![0u64; len.div_ceil(64)];
        let mut stack: Vec<u32> = Vec::new();
        let mut pieces: Vec<Run> = Vec::new();
        // Appends the instructions `a..b` to `pieces`, cut at run boundaries.
        let cut = |pieces: &mut Vec<Run>, mut a: usize, b: usize| {
            while a < b {
                let run = p.runs[run_of[a] as usize];
                let end = b.min(run.end as usize);
                pieces.push(Run {
                    code: run.code,
                    start: a as u32,
                    end: end as u32,
                });
                a = end;
            }
        };
        let inputs = (0..p.inputs)
            .map(|input| {
                let (mut count, mut lo, mut hi) = (0usize, usize::MAX, 0usize);
                stack.clear();
                stack.push((base + input) as u32);
                while let Some(slot) = stack.pop() {
                    let (a, b) = (start[slot as usize], start[slot as usize + 1]);
                    for &k in &consumers[a as usize..b as usize] {
                        let mut k = k as usize;
                        if seen[k / 64] & (1 << (k % 64)) != 0 {
                            continue;
                        }
                        loop {
                            seen[k / 64] |= 1 << (k % 64);
                            count += 1;
                            lo = lo.min(k / 64);
                            hi = hi.max(k / 64);
                            if !next_only[k] {
                                stack.push(p.instrs[k].dst);
                                break;
                            }
                            // k's value goes only to k + 1: down the running sum.
                            k += 1;
                            if seen[k / 64] & (1 << (k % 64)) != 0 {
                                break; // reached already, and what it reaches
                            }
                        }
                    }
                }
                if count == 0 {
                    return Some(Part::default());
                }
                if count > len / 2 {
                    seen[lo..=hi].fill(0);
                    return None;
                }
                // Read the set in order: maximal intervals, joined across words.
                pieces.clear();
                let mut open: Option<(usize, usize)> = None;
                for (w, word) in seen.iter_mut().enumerate().take(hi + 1).skip(lo) {
                    let mut word = std::mem::take(word);
                    while word != 0 {
                        let tz = word.trailing_zeros() as usize;
                        let ones = (!(word >> tz)).trailing_zeros() as usize;
                        let (a, b) = (w * 64 + tz, w * 64 + tz + ones);
                        word = if tz + ones >= 64 {
                            0
                        } else {
                            word & !(((1u64 << ones) - 1) << tz)
                        };
                        open = match open {
                            Some((s, e)) if e == a => Some((s, b)),
                            Some((s, e)) => {
                                cut(&mut pieces, s, e);
                                Some((a, b))
                            }
                            None => Some((a, b)),
                        };
                    }
                }
                if let Some((s, e)) = open {
                    cut(&mut pieces, s, e);
                }
                Some(Part {
                    pieces: pieces.as_slice().into(),
                    count,
                })
            })
            .collect();
        Reach { inputs }
    }
}

#[cfg(test)]
mod tests {
    //! The tape against full sweeps, slot by slot: every re-sweep must leave the whole
    //! tape (not only the outputs) as a full sweep at the new point does.

    use super::*;
    use crate::{rt, Equation, Expr, LaneKind, System};
    use ddx_ir::testing::Rng;

    /// `n` symbols in a running sum of `n` terms `sin(xᵢ·xᵢ₊₁) + xᵢ²` (`plain`: the
    /// symbols themselves), added left to right except every `flip`-th, which puts the sum
    /// on the right; every `tap`-th partial sum also feeds an output of its own (`0`:
    /// neither).
    fn chain(n: usize, plain: bool, flip: usize, tap: usize) -> Equation<System> {
        rt::equation(move || {
            let x: Vec<Expr> = (0..n).map(|i| rt::var(&format!("x{i:03}"))).collect();
            let mut f = x[0].cos();
            let mut outputs = Vec::new();
            for i in 0..n {
                let t = if plain {
                    x[i]
                } else {
                    (x[i] * x[(i + 1) % n]).sin() + x[i] * x[i]
                };
                f = if flip > 0 && i % flip == flip - 1 {
                    t + f
                } else {
                    f + t
                };
                if tap > 0 && i % tap == tap - 1 {
                    outputs.push(f.exp());
                }
            }
            outputs.insert(0, f);
            outputs
        })
        .expect("builds")
    }

    fn bits(v: &[f64]) -> Vec<u64> {
        v.iter().map(|v| v.to_bits()).collect()
    }

    /// A coordinate: mostly ordinary, sometimes a signed zero, an infinity or a NaN with
    /// one of several payloads.
    fn coordinate(rng: &mut Rng) -> f64 {
        match rng.below(20) {
            0 => -0.0,
            1 => 0.0,
            2 => f64::INFINITY,
            3 => f64::from_bits(0x7ff8_0000_0000_0000 | (1 + rng.below(4) as u64)),
            _ => (rng.below(2001) as f64 - 1000.0) / 256.0,
        }
    }

    #[test]
    fn running_sums_become_accumulate_runs() {
        let long = chain(40, false, 0, 0);
        let tape = Tape::new(long.lane(LaneKind::Value).expect("lane"));
        let longest = tape
            .program
            .runs
            .iter()
            .filter(|r| r.code == Code::Accumulate)
            .map(|r| r.end - r.start)
            .max();
        assert!(longest >= Some(38), "{:?}", tape.program.runs);
        let short = chain(MIN_ACCUMULATE as usize - 2, true, 0, 0);
        let tape = Tape::new(short.lane(LaneKind::Value).expect("lane"));
        assert!(tape.program.runs.iter().all(|r| r.code != Code::Accumulate));
    }

    #[test]
    fn resweeps_leave_every_slot_as_a_full_sweep_does() {
        let mut rng = Rng::new(14);
        let mut accumulated = 0;
        for n in [1, 2, 7, 8, 9, 17, 33, 100] {
            for (plain, flip, tap) in [
                (false, 0, 0),
                (true, 0, 0),
                (false, 5, 0),
                (true, 0, 3),
                (false, 9, 4),
            ] {
                let eq = chain(n, plain, flip, tap);
                for kind in [LaneKind::Value, LaneKind::Gradient] {
                    let lane = eq.lane(kind).expect("lane");
                    let tape = Tape::new(lane);
                    accumulated += tape
                        .program
                        .runs
                        .iter()
                        .filter(|r| r.code == Code::Accumulate)
                        .count();
                    // The level program (plain `Add`s) is the reference for the values.
                    let level = Program::lower_built(lane, Schedule::Level);
                    let inputs = tape.program.inputs;
                    let mut x: Vec<f64> = (0..inputs).map(|_| coordinate(&mut rng)).collect();
                    let mut t = Vec::new();
                    tape.sweep(&mut t, &x, true);
                    for step in 0..40 {
                        let mut y = x.clone();
                        let moves: Vec<usize> = match step % 8 {
                            0 => vec![0],
                            1 => vec![inputs - 1],
                            2 => vec![0, inputs - 1],
                            3 => (0..1 + rng.below(5)).map(|_| rng.below(inputs)).collect(),
                            4 => (0..inputs.min(20)).collect(), // more than the few
                            5 => (0..inputs).collect(),
                            6 => vec![],
                            _ => vec![rng.below(inputs)],
                        };
                        for i in moves {
                            y[i] = coordinate(&mut rng);
                        }
                        let moved = Moved::find(&x, &y);
                        let ran = tape.resweep(&mut t, &x, &y, &moved);
                        assert!(ran <= tape.len());
                        let mut whole = Vec::new();
                        tape.sweep(&mut whole, &y, true);
                        assert_eq!(bits(&t), bits(&whole), "n {n}, {kind:?}, step {step}");
                        let mut plain_out = vec![0.0; level.outputs()];
                        level.run(&y, &mut plain_out).expect("runs");
                        let mut out = Vec::new();
                        tape.read(&t, |_, v| out.push(v));
                        assert_eq!(bits(&out), bits(&plain_out), "n {n}, {kind:?}");
                        x = y;
                    }
                }
            }
        }
        // At least the value lanes of the plain chains of 9 terms or more (a partial sum used
        // elsewhere puts its other use between the additions, which then stay `Add`s).
        assert!(accumulated >= 8, "{accumulated} running sums accumulated");
    }

    #[test]
    fn reach_lists_are_pieces_not_copies() {
        // Each symbol of a 400-term running sum reaches the sum's tail: copied, that is
        // about n²/2 instructions in all; as pieces, a few per symbol.
        let n = 400;
        let eq = chain(n, false, 0, 0);
        let tape = Tape::new(eq.lane(LaneKind::Value).expect("lane"));
        let before = tape.memory();
        let reach = tape.reach();
        let pieces: usize = reach.inputs.iter().flatten().map(|p| p.pieces.len()).sum();
        let reached: usize = reach.inputs.iter().flatten().map(|p| p.count).sum();
        assert!(reached > n * n / 3, "{reached}");
        assert!(pieces < 16 * n, "{pieces} pieces");
        assert!(tape.memory() - before < 16 * n * std::mem::size_of::<Run>() + 64 * n);
    }
}
