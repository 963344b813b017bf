//! Lowering a lane graph to a [`Program`]: scheduling, run grouping and slot assignment.
//!
//! **Schedule.** For one point at a time ([`Schedule::Level`]), instructions are ordered by
//! their level (the longest path of instructions from an input, counted after fusion, so a
//! chain is one step) and within a level by operation, so that equal operations sit next
//! to each other; a *run* of equal operations is executed
//! by one dispatch and a tight loop. Models that sum over data (one identical chain per
//! observation) become long runs. For blocks of points ([`Schedule::Graph`]) dispatch is
//! already shared by the block, and the graph's own order keeps fewer values alive (each
//! live slot is a whole block). Reordering independent operations cannot change any
//! result: every node still computes the same operation on the same values.
//!
//! **Slots.** Constants and inputs have fixed slots; each operation takes a slot from a
//! free list, and a value's slot returns to the list after its last use in schedule order.
//! Output slots are never freed. Under [`Schedule::Tape`] nothing is freed: every value
//! keeps its slot.

use super::{dot_const_groups, next_id, shape, step_shape, Code, Instr, Program, Run};
use ddx_ir::{Lane, Node, NodeId, Op};

/// Sentinel for "this node has no slot yet".
const NONE: u32 = u32::MAX;

/// The order instructions are laid out in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// By dependency level, equal operations grouped: fewest dispatches (one point).
    Level,
    /// The graph's topological order: fewest live values (blocks of points).
    Graph,
    /// As [`Schedule::Level`], but no slot is ever reused: after a run the slot array is a
    /// *tape* holding every operation's value, and instruction `k` writes slot
    /// `constants + inputs + k` (so destinations increase with the schedule). The last-call
    /// cache sweeps again over it, running only what moved inputs reach (`interp::tape`).
    Tape,
}

/// One instruction before slots are assigned: what it computes and from which nodes (node
/// indices as `u32`, as a graph's ids are: 24 bytes an instruction, one per operation of
/// the lane while it is lowered; [`Program::lower`] turns the list into the program's
/// instructions in place).
struct Emit {
    /// Schedule key (the dependency level, or 0 for the graph's order).
    key: u32,
    code: Code,
    /// The node whose value it produces.
    node: u32,
    /// The operand nodes; a [`Code::CallN`] or a chain ([`Code::is_chain`], of arity 1) has
    /// in `operands[1..]` its arguments' or terms' `(start, count)` in the list [`select`]
    /// returns beside the emits (where its instruction has them in the program's lists).
    operands: [u32; 3],
}

impl Emit {
    /// The nodes read through the list `packed` (a [`Code::CallN`]'s arguments or a
    /// chain's terms; empty for the other codes).
    fn leaves<'p>(&self, packed: &'p [u32]) -> &'p [u32] {
        if self.code.has_list() {
            let [_, start, count] = self.operands.map(|a| a as usize);
            &packed[start..start + count]
        } else {
            &[]
        }
    }
}

impl Program {
    /// Lowers `lane` (a graph extracted to its outputs, so every node is live), after
    /// checking it ([`Lane::check`]): a lane from [`Equation::lane`](crate::Equation::lane)
    /// passes, and one assembled or edited by hand is refused rather than lowered wrong.
    ///
    /// # Errors
    /// [`Error::BadLane`](ddx_ir::Error::BadLane) when `lane` fails [`Lane::check`].
    pub fn lower(lane: &Lane, schedule: Schedule) -> Result<Program, ddx_ir::Error> {
        lane.check()?;
        Ok(Self::lower_built(lane, schedule))
    }

    /// [`Program::lower`] of a lane ddx built, which holds [`Lane::check`]'s invariants by
    /// construction (so it is not checked again).
    pub(crate) fn lower_built(lane: &Lane, schedule: Schedule) -> Program {
        let g = &lane.graph;
        let nodes = g.nodes();
        let inputs = lane.inputs();
        let consts: Vec<f64> = nodes.iter().filter_map(Node::constant).collect();
        let input_base = consts.len();

        let (emits, packed) = select(lane, schedule);
        // Made before the per-node arrays below, which are then freed from above what
        // the program keeps: the argument lists (one entry per packed leaf but weights).
        // A `DotConst`'s variables come first, at the index of their weights (so
        // `weights` is exactly as long as they are), then the other lists.
        let weighted: usize = emits
            .iter()
            .filter(|e| e.code == Code::DotConst)
            .map(|e| e.leaves(&packed).len() / 2)
            .sum();
        let mut lists: Vec<u32> = vec![0; packed.len() - weighted];
        let mut weights: Vec<f64> = Vec::with_capacity(weighted);
        let mut plain = weighted;

        // Last use of every node in schedule order; outputs live to the end.
        // (`u32`: instructions are fewer than nodes, whose ids are `u32`.)
        let mut last_use = vec![0u32; nodes.len()];
        for (k, e) in emits.iter().enumerate() {
            for &a in e.operands[..e.code.arity()].iter().chain(e.leaves(&packed)) {
                let a = a as usize;
                last_use[a] = last_use[a].max(k as u32);
            }
        }
        for o in &lane.outputs {
            last_use[o.index()] = u32::MAX;
        }

        let mut slot = vec![NONE; nodes.len()];
        let mut const_index = 0u32;
        for (i, n) in nodes.iter().enumerate() {
            slot[i] = match *n {
                Node::Const(_) => {
                    const_index += 1;
                    const_index - 1
                }
                Node::Symbol(s) => (input_base + s.index()) as u32,
                Node::Seed(s) => (input_base + lane.seed_base() + s.index()) as u32,
                Node::Apply(..) => NONE,
            };
        }
        let mut next_free = (input_base + inputs) as u32;
        let fixed = next_free;
        let mut free: Vec<u32> = Vec::new();
        let mut runs: Vec<Run> = Vec::new();
        let mut reads: Vec<u32> = Vec::new();
        let mut previous_key = None;
        // Each emit becomes its instruction in schedule order, collected in place (the
        // instructions, 16 bytes each, are written over the emits, 24 bytes each, whose
        // buffer is then shrunk): the two lists are never held at once.
        let mut instrs: Vec<Instr> = emits
            .into_iter()
            .enumerate()
            .map(|(k, e)| {
                let leaves = e.leaves(&packed);
                reads.clear();
                reads.extend_from_slice(&e.operands[..e.code.arity()]);
                reads.extend_from_slice(leaves);
                let used = &reads[..];
                let mut args = [0u32; 3];
                for (a, &node) in args.iter_mut().zip(&e.operands[..e.code.arity()]) {
                    *a = slot[node as usize];
                }
                if matches!(
                    e.code,
                    Code::CallN | Code::Dot | Code::DotSub | Code::SubSum
                ) {
                    // The arguments' slots, read through the list (live until here).
                    args[1] = plain as u32;
                    args[2] = leaves.len() as u32;
                    for (to, &a) in lists[plain..].iter_mut().zip(leaves) {
                        *to = slot[a as usize];
                    }
                    plain += leaves.len();
                } else if e.code == Code::DotConst {
                    // `(variable, weight)` node pairs: the variables' slots in the list,
                    // the weights' values at the same index.
                    args[1] = weights.len() as u32;
                    args[2] = (leaves.len() / 2) as u32;
                    for u in leaves.chunks_exact(2) {
                        lists[weights.len()] = slot[u[0] as usize];
                        weights.push(nodes[u[1] as usize].constant().unwrap_or(f64::NAN));
                    }
                }
                // Temporaries used for the last time here (once each: a released node's last
                // use is marked past the end) go back to the free list: one point at a time,
                // before the result takes a slot, so it may reuse one; for blocks, after, so a
                // block's destination never overlaps its operands.
                let release = |free: &mut Vec<u32>, last_use: &mut [u32]| {
                    for &id in used {
                        let a = id as usize;
                        // An operation's slot is past the fixed ones (constants, inputs).
                        let temp = slot[a] >= fixed;
                        if temp && last_use[a] == k as u32 {
                            free.push(slot[a]);
                            last_use[a] = u32::MAX;
                        }
                    }
                };
                if schedule == Schedule::Level {
                    release(&mut free, &mut last_use);
                }
                let dst = free.pop().unwrap_or_else(|| {
                    next_free += 1;
                    next_free - 1
                });
                if schedule == Schedule::Graph {
                    release(&mut free, &mut last_use);
                }
                slot[e.node as usize] = dst;
                // A run of chains holds one level (its chains are independent).
                let same_level = !e.code.is_chain() || previous_key.is_none_or(|p| p == e.key);
                previous_key = Some(e.key);
                match runs.last_mut() {
                    Some(r) if r.code == e.code && same_level => r.end += 1,
                    _ => runs.push(Run {
                        code: e.code,
                        start: k as u32,
                        end: k as u32 + 1,
                    }),
                }
                Instr { dst, args }
            })
            .collect();
        instrs.shrink_to_fit();
        debug_assert_eq!(
            (plain, weights.len(), lists.len() + weighted),
            (lists.len(), weighted, packed.len()),
            "every packed leaf is listed once, a weight as a weight"
        );
        let outputs = lane.outputs.iter().map(|o| slot[o.index()]).collect();
        drop((last_use, slot));
        let slots = next_free as usize;
        let mut program = Program {
            id: next_id(),
            block: block_size(slots - consts.len()),
            slots,
            consts,
            inputs,
            runs,
            instrs,
            outputs,
            schedule,
            lists,
            weights,
        };
        if schedule == Schedule::Level {
            program.lay_out_steps();
        }
        program.check();
        program
    }

    /// Lays out the terms of every [`Code::DotConst`] run's chains group by group
    /// ([`dot_const_groups`]), step by step ([`super::StepTerms`]), each chain's `args[1]` its
    /// group's block (a [`Schedule::Level`] program's layout; the lists hold each chain's
    /// terms in order before). The blocks take the lists' and weights' place, in the
    /// runs' order.
    fn lay_out_steps(&mut self) {
        let mut lists = Vec::with_capacity(self.weights.len());
        let mut weights = Vec::with_capacity(self.weights.len());
        for r in self.runs.iter().filter(|r| r.code == Code::DotConst) {
            let run = &mut self.instrs[r.start as usize..r.end as usize];
            for g in dot_const_groups(run.len()) {
                let members = &mut run[g];
                let block = lists.len() as u32;
                let longest = members.iter().map(|i| i.args[2]).max().unwrap_or(0);
                for k in 0..longest {
                    for i in members.iter().filter(|i| k < i.args[2]) {
                        let at = (i.args[1] + k) as usize;
                        lists.push(self.lists[at]);
                        weights.push(self.weights[at]);
                    }
                }
                for i in members.iter_mut() {
                    i.args[1] = block;
                }
                // A four: the shape its four-wide steps share (`shape::GATHER` where they
                // differ) in the second chain's `args[1]`.
                if let [first, second, _, _] = members {
                    let block = &lists[block as usize..];
                    second.args[1] = four_wide_shape(block, first.args[2] as usize);
                }
            }
        }
        debug_assert_eq!(weights.len(), self.weights.len());
        self.lists[..lists.len()].copy_from_slice(&lists);
        self.weights = weights;
    }

    /// Checks the step layout of a [`Schedule::Level`] program's [`Code::DotConst`]
    /// groups ([`super::StepTerms`]): a group's chains share their block (in a four, the
    /// second holds the shape of its four-wide steps instead, and every such step has that
    /// shape), sorted by length, and the block lies inside the lists and the weights.
    fn check_steps(&self) {
        if self.schedule != Schedule::Level {
            return;
        }
        for r in self.runs.iter().filter(|r| r.code == Code::DotConst) {
            let run = &self.instrs[r.start as usize..r.end as usize];
            for g in dot_const_groups(run.len()) {
                let members = &run[g];
                let block = members[0].args[1] as usize;
                let len: usize = members.iter().map(|i| i.args[2] as usize).sum();
                let four = members.len() == 4;
                assert!(
                    (members.iter().enumerate())
                        .all(|(j, i)| (four && j == 1) || i.args[1] as usize == block),
                    "a group's chains share their block: {members:?}"
                );
                assert!(
                    members.windows(2).all(|p| p[0].args[2] <= p[1].args[2]),
                    "a group's chains are sorted by length: {members:?}"
                );
                assert!(
                    block + len <= self.lists.len().min(self.weights.len()),
                    "a group's block out of range: {members:?}"
                );
                if four {
                    let form = members[1].args[1];
                    let steps = &self.lists[block..];
                    let shared = four_wide_shape(steps, members[0].args[2] as usize);
                    assert!(
                        form == shape::GATHER || form == shared,
                        "a four's steps have their shape {form}: {members:?}"
                    );
                }
            }
        }
    }

    /// Checks every slot index against the slot count and every run against the
    /// instruction list; the execution loops rely on both. Under a block schedule a
    /// destination never overlaps an operand.
    fn check(&self) {
        let n = self.slots as u32;
        self.check_steps();
        for r in &self.runs {
            let instrs = self.instrs.get(r.start as usize..r.end as usize);
            let instrs = instrs.expect("runs lie inside the instructions");
            // A level program's `DotConst` lists are checked by `check_steps`.
            let stepped = r.code == Code::DotConst && self.schedule == Schedule::Level;
            for (k, i) in (r.start as usize..).zip(instrs) {
                if r.code.has_list() && !stepped {
                    let (start, k) = (i.args[1] as usize, i.args[2] as usize);
                    assert!(
                        start + k <= self.lists.len(),
                        "argument list out of range in {i:?}"
                    );
                    assert!(
                        r.code != Code::DotConst || start + k <= self.weights.len(),
                        "weights out of range in {i:?}"
                    );
                    assert!(
                        !matches!(r.code, Code::Dot | Code::DotSub) || k % 2 == 0,
                        "odd factor list in {i:?}"
                    );
                    assert!(i.args[0] < n, "slot out of range in {i:?}");
                } else if stepped {
                    assert!(i.args[0] < n, "slot out of range in {i:?}");
                } else {
                    assert!(i.args.iter().all(|&a| a < n), "slot out of range in {i:?}");
                }
                assert!(
                    i.dst < n && self.reads(r, k).all(|a| a < n),
                    "slot out of range in {i:?}"
                );
                assert!(
                    i.dst as usize >= self.consts.len() + self.inputs,
                    "a destination is a temporary's slot: {i:?}"
                );
                if self.schedule == Schedule::Graph {
                    assert!(
                        self.reads(r, k).all(|a| a != i.dst),
                        "block destination overlaps an operand"
                    );
                }
            }
        }
        let mut at = 0;
        for r in &self.runs {
            assert!(
                r.start == at && r.start < r.end,
                "runs must tile the instructions"
            );
            at = r.end;
        }
        assert_eq!(at as usize, self.instrs.len());
        assert!(
            self.outputs.iter().all(|&o| o < n),
            "output slot out of range"
        );
        assert!(self.consts.len() + self.inputs <= self.slots);
    }
}

/// The [`shape`] every one of the first `steps` four-wide steps of a group's block
/// (`block`, from its start) has; else [`shape::DOWN_UP`] or [`shape::UP_DOWN`] where the
/// even steps descend and the odd ones ascend or the other way round; else
/// [`shape::GATHER`].
fn four_wide_shape(block: &[u32], steps: usize) -> u32 {
    let shapes: Vec<u32> = block
        .chunks_exact(4)
        .take(steps)
        .map(|x| step_shape([x[0], x[1], x[2], x[3]]))
        .collect();
    // The shape every `2`nd step from `from` shares, if one does.
    let shared = |from: usize, by: usize| {
        let first = *shapes.get(from)?;
        shapes
            .iter()
            .skip(from)
            .step_by(by)
            .all(|&s| s == first)
            .then_some(first)
    };
    match (shared(0, 1), shared(0, 2), shared(1, 2)) {
        (Some(one), _, _) => one,
        (None, Some(shape::DESCENDING), Some(shape::ASCENDING)) => shape::DOWN_UP,
        (None, Some(shape::ASCENDING), Some(shape::DESCENDING)) => shape::UP_DOWN,
        _ => shape::GATHER,
    }
}

/// The instructions for `lane`'s operations, in schedule order, and the arguments of its
/// calls of three or more arguments end to end (each call's `Emit::leaves` indexes them).
///
/// `pow(a, 2)` is `a * a` by definition (see `ddx_ir::math::pow`). A product used only by
/// one sum or difference is fused into it (`c + a*b`, `c - a*b`, `a*b - c`): one
/// instruction that still rounds the product and then the sum, so the result is the
/// graph's to the bit. Level programs also fuse other single-use pairs (`(a*b)*c`,
/// `(a*b)/c`, `(a+b)+c`, `c + a/b`, `c - a/b`, and the negations `-(a*b)`, `-(a/b)`,
/// `-(a+b)`, `(-a)/b`) and make chains of `MulAdd`s one
/// [`Code::Dot`] each ([`dot_chains`]), with the same operations in the same order.
fn select(lane: &Lane, schedule: Schedule) -> (Vec<Emit>, Vec<u32>) {
    let (emits, packed) = select_with(lane, schedule, true);
    let negations = emits
        .iter()
        .filter(|e| {
            matches!(
                e.code,
                Code::MulNeg | Code::DivNeg | Code::AddNeg | Code::NegDiv
            )
        })
        .count();
    if negations == 0 || negations >= MIN_NEGATIONS {
        (emits, packed)
    } else {
        drop((emits, packed));
        select_with(lane, schedule, false)
    }
}

/// [`select`], fusing negations where `negations`.
fn select_with(lane: &Lane, schedule: Schedule, negations: bool) -> (Vec<Emit>, Vec<u32>) {
    let g = &lane.graph;
    let nodes = g.nodes();
    // How often each node is read, counted to 2 (only "once" is asked): a byte a node.
    let mut uses = vec![0u8; nodes.len()];
    for n in nodes.iter() {
        for a in n.args() {
            uses[a.index()] = uses[a.index()].saturating_add(1).min(2);
        }
    }
    for o in &lane.outputs {
        uses[o.index()] = uses[o.index()].saturating_add(1).min(2);
    }
    // Whether a node's instruction is its own operation (it absorbed no other node): only
    // such a node may itself be absorbed by its consumer (set as nodes are selected).
    let mut plain = vec![false; nodes.len()];
    // The product `(a, b)` a node is, when it is one a single consumer may absorb.
    let product = |plain: &[bool], id: usize| -> Option<[u32; 2]> {
        match nodes[id] {
            Node::Apply(Op::Mul, [a, b, _]) if uses[id] == 1 && plain[id] => Some([a.0, b.0]),
            Node::Apply(Op::Pow | Op::Powi, [a, b, _])
                if uses[id] == 1 && nodes[b.index()].constant() == Some(2.0) =>
            {
                Some([a.0, a.0])
            }
            _ => None,
        }
    };
    // The operation `op(x, y)` fused with the one operand it absorbs (used only there, its
    // own operation): the code, the absorbed node, and the operands (see [`Code`]).
    // Whether a node is used only as an operand of a sum or difference.
    let mut sum_operand = vec![false; nodes.len()];
    // The products a sum or difference absorbs (as the `Op::Add` and `Op::Sub` arms below
    // decide: a product used only by a sum is its own operation, so `plain`), known
    // before the loop so that they are never emitted: the list is sized for the others.
    let mut in_sum = vec![false; nodes.len()];
    let squares = |b: NodeId| nodes[b.index()].constant() == Some(2.0);
    for n in nodes {
        if let Node::Apply(Op::Add | Op::Sub, [x, y, _]) = *n {
            for a in [x, y] {
                sum_operand[a.index()] = uses[a.index()] == 1;
            }
            if x != y {
                for p in [y, x] {
                    let product = uses[p.index()] == 1
                        && match nodes[p.index()] {
                            Node::Apply(Op::Mul, _) => true,
                            Node::Apply(Op::Pow | Op::Powi, [_, b, _]) => squares(b),
                            _ => false,
                        };
                    if product {
                        in_sum[p.index()] = true;
                        break;
                    }
                }
            }
        }
    }
    let pair =
        |op: Op, i: usize, plain: &[bool], x: u32, y: u32| -> Option<(Code, u32, [u32; 3])> {
            let inner = |id: u32, want: Op| match nodes.get(id as usize) {
                Some(&Node::Apply(o, [a, b, _]))
                    if o == want && x != y && uses[id as usize] == 1 && plain[id as usize] =>
                {
                    Some([a.0, b.0])
                }
                _ => None,
            };
            let (code, absorbed, [a, b], c) = match op {
                // Not where the product is itself a sum's only use: the sum fuses it instead
                // (as the tape program does, so both pass on the same NaN where two are NaN).
                Op::Mul if !sum_operand[i] => (Code::MulMul, x, inner(x, Op::Mul)?, y),
                Op::Div => match inner(x, Op::Mul) {
                    Some(ab) => (Code::MulDiv, x, ab, y),
                    // `(-a)/b`: `c` unused.
                    None if negations => (Code::NegDiv, x, [inner(x, Op::Neg)?[0], y], 0),
                    None => return None,
                },
                Op::Add => match inner(x, Op::Add) {
                    Some(ab) => (Code::AddAdd, x, ab, y),
                    None => (Code::AddDiv, y, inner(y, Op::Div)?, x),
                },
                Op::Sub => (Code::SubDiv, y, inner(y, Op::Div)?, x),
                // `-(a∘b)`: `c` unused (the code's arity is 2).
                Op::Neg if negations => match (inner(x, Op::Mul), inner(x, Op::Div)) {
                    (Some(ab), _) => (Code::MulNeg, x, ab, 0),
                    (None, Some(ab)) => (Code::DivNeg, x, ab, 0),
                    (None, None) => (Code::AddNeg, x, inner(x, Op::Add)?, 0),
                },
                _ => return None,
            };
            Some((code, absorbed, [a, b, c]))
        };
    let mut fused = vec![false; nodes.len()];
    let mut level = vec![0u32; nodes.len()];
    let operations = nodes
        .iter()
        .zip(&in_sum)
        .filter(|&(n, &absorbed)| n.op().is_some() && !absorbed)
        .count();
    let mut emits: Vec<Emit> = Vec::with_capacity(operations);
    // The arguments of every call of three or more, end to end (`Emit::leaves`).
    let mut packed: Vec<u32> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        let Node::Apply(op, args) = *n else { continue };
        level[i] = 1 + n.args().iter().map(|a| level[a.index()]).max().unwrap_or(0);
        if op == Op::Pack {
            // No value of its own: the call reading it reads its arguments.
            continue;
        }
        let id = NodeId::from_index(i);
        // A call of three or more arguments (its last operand a pack chain).
        let packed_call = op == Op::Call && nodes[args[2].index()].op() == Some(Op::Pack);
        let leaves = if packed_call {
            let start = packed.len() as u32;
            packed.extend(g.call_args(id).map(|a| a.0));
            [start, packed.len() as u32 - start]
        } else {
            [0, 0]
        };
        let (x, y) = (args[0].0, args[1].0);
        // Level programs only: the tape's running sums stay `Add`s (its accumulate runs),
        // and blocks are not measured with them.
        let paired = match schedule {
            Schedule::Level => pair(op, i, &plain, x, y),
            _ => None,
        };
        let (code, operands) = match op {
            Op::Call if leaves[1] > 0 => (Code::CallN, [x, leaves[0], leaves[1]]),
            Op::Add if x != y && product(&plain, y as usize).is_some() => {
                let [a, b] = product(&plain, y as usize).unwrap_or_default();
                fused[y as usize] = true;
                (Code::MulAdd, [a, b, x])
            }
            Op::Add if x != y && product(&plain, x as usize).is_some() => {
                let [a, b] = product(&plain, x as usize).unwrap_or_default();
                fused[x as usize] = true;
                (Code::MulAdd, [a, b, y])
            }
            Op::Sub if x != y && product(&plain, y as usize).is_some() => {
                let [a, b] = product(&plain, y as usize).unwrap_or_default();
                fused[y as usize] = true;
                (Code::SubMul, [a, b, x])
            }
            Op::Sub if x != y && product(&plain, x as usize).is_some() => {
                let [a, b] = product(&plain, x as usize).unwrap_or_default();
                fused[x as usize] = true;
                (Code::MulSub, [a, b, y])
            }
            Op::Pow | Op::Powi if nodes[args[1].index()].constant() == Some(2.0) => {
                (Code::Op(Op::Mul), [x, x, 0])
            }
            _ if paired.is_some() => {
                let (code, inner, operands) = paired.unwrap_or((Code::Op(op), u32::MAX, [0; 3]));
                if let Some(f) = fused.get_mut(inner as usize) {
                    *f = true;
                }
                (code, operands)
            }
            _ => (
                Code::Op(op),
                [x, args[1].0, args[2].0].map(|a| a.min(nodes.len() as u32)),
            ),
        };
        plain[i] = matches!(code, Code::Op(_));
        if in_sum[i] {
            // Computed inside the sum that absorbs it (which marks it fused).
            continue;
        }
        let key = match schedule {
            Schedule::Level | Schedule::Tape => level[i],
            Schedule::Graph => 0,
        };
        emits.push(Emit {
            key,
            code,
            node: i as u32,
            operands,
        });
    }
    // A fused product is computed inside its consumer (which comes later in node order).
    debug_assert!(
        (0..nodes.len()).all(|i| !in_sum[i] || fused[i]),
        "a product marked for a sum was not absorbed by it"
    );
    emits.retain(|e| !fused[e.node as usize]);
    // Only the use counts are read from here on.
    // The graph's levels are in the emits' keys: the per-node arrays go before the chains
    // make theirs (one per node too), and the instruction levels take a fresh one after.
    drop((plain, sum_operand, fused, in_sum, level));
    if schedule != Schedule::Tape {
        // A factor that is a constant other than NaN: a `DotConst`'s weight.
        let weight = |id: u32| nodes[id as usize].constant().filter(|w| !w.is_nan());
        let differences = schedule == Schedule::Level || block_differences();
        dot_chains(
            &mut emits,
            &mut packed,
            &uses,
            nodes.len(),
            weight,
            differences,
        );
    }
    if schedule == Schedule::Level {
        instruction_levels(&mut emits, &packed, &mut vec![0u32; nodes.len()]);
    }
    // The absorbed nodes' emits are gone: their room too, before the slots are assigned.
    emits.shrink_to_fit();
    for e in emits.iter_mut().filter(|e| !e.code.has_list()) {
        for k in e.code.arity()..3 {
            e.operands[k] = 0;
        }
    }
    if schedule != Schedule::Graph {
        // The keys are distinct (one node each): an unstable sort gives the stable order,
        // without the stable sort's buffer of half the list.
        // Chains of one level by length, so that those run in step have similar lengths.
        let chain = |e: &Emit| if e.code.is_chain() { e.operands[2] } else { 0 };
        emits.sort_unstable_by_key(|e| (e.key, e.code, chain(e), e.node));
    }
    (emits, packed)
}

/// Keys `emits` (in node order, so every operand's emit comes before its reader's) by
/// their level among the instructions themselves: one above the highest instruction they
/// read, inputs and constants at 0. The graph's own levels count a fused product and every
/// link of a [`Code::Dot`]'s chain as a level of its own, so independent chains of
/// different lengths would sit on different levels, each a run (a dispatch) of its own;
/// by these levels they share one. `level` is scratch, one entry per node.
fn instruction_levels(emits: &mut [Emit], packed: &[u32], level: &mut [u32]) {
    level.fill(0);
    for e in emits.iter_mut() {
        let reads = e.operands[..e.code.arity()].iter().chain(e.leaves(packed));
        e.key = 1 + reads.map(|&a| level[a as usize]).max().unwrap_or(0);
        level[e.node as usize] = e.key;
    }
}

/// The fewest negations a lane's level program fuses into their operand's operation or
/// their reader's (`-(a*b)`, `-(a/b)`, `-(a+b)`, `(-a)/b`); a lane with fewer fuses none
/// ([`select`] lowers it again without them). A fusion saves an instruction but may take
/// it out of a run of its old code into a run of its own, a dispatch more: with many (a
/// model summing over data) the fused instructions share runs. Measured
/// (`kernel_profile <model> interp`, BENCHMARKS.md, "Negations fused"): NIST Gauss1's
/// gradient 8 268 → 7 016 instructions and 8.51 → 7.87 µs; the electrolyte-16's four
/// fusions, each a run of its own, 3–4 % slower.
pub(crate) const MIN_NEGATIONS: usize = 16;

/// The fewest [`Code::MulAdd`]s a chain needs to become one [`Code::Dot`] (measured:
/// shorter chains save less than the out-of-line call and loop setup cost, on UNIQUAC-16
/// where the level schedule already runs many short chains in one `MulAdd` run; 3 and 6
/// within 1% elsewhere, see `BENCHMARKS.md`).
pub(crate) const MIN_DOT: usize = 6;

/// The fewest terms, each with a weight, that become one [`Code::DotConst`] (measured,
/// instructions per gradient: 4 against 6 saves 3–7% on UNIQUAC and Peng–Robinson and
/// 0.7% on electrolyte-16, within 0.1% elsewhere; 3 costs electrolyte 0.3–0.9% more).
pub(crate) const MIN_DOT_CONST: usize = 4;

#[cfg(test)]
thread_local! {
    /// Whether this thread's block programs get difference chains too (tests of the block
    /// loop's [`Code::DotSub`] and [`Code::SubSum`], which lowering otherwise never gives
    /// a block program).
    pub(super) static BLOCK_DIFFERENCES: std::cell::Cell<bool> =
        const { std::cell::Cell::new(false) };
}

/// Whether block programs get difference chains: only in tests ([`BLOCK_DIFFERENCES`]).
#[cfg(test)]
fn block_differences() -> bool {
    BLOCK_DIFFERENCES.get()
}

/// Whether block programs get difference chains: never (measured: NIST Gauss1's batch
/// gradient ran 1.7 % slower with them; a block's links are loops over its points already).
#[cfg(not(test))]
fn block_differences() -> bool {
    false
}

/// Where a chain link keeps its running value among its operands: a [`Code::MulAdd`]'s
/// and a [`Code::SubMul`]'s `c`, a `Sub`'s minuend; `None` for a code that is no link.
fn running_operand(code: Code) -> Option<usize> {
    match code {
        Code::MulAdd | Code::SubMul => Some(2),
        Code::Op(Op::Sub) => Some(0),
        _ => None,
    }
}

/// Makes each chain of emits of one link code — each but the first taking the one
/// before's value as its running operand ([`running_operand`]), that value used nowhere
/// else — one chain emit in the last one's place (its level: above every operand of the
/// chain), its terms appended to `packed`:
/// - `MulAdd` chains of at least [`MIN_DOT`] become a [`Code::Dot`] (factor pairs); a
///   piece of at least [`MIN_DOT_CONST`] whose every product has a factor that `weight`
///   answers (a constant other than NaN) becomes a [`Code::DotConst`] (`(variable,
///   weight)` pairs);
/// - where `differences`, `SubMul` chains of at least [`MIN_DOT`] become a
///   [`Code::DotSub`] (factor pairs) and `Sub` chains of at least [`MIN_DOT`] a
///   [`Code::SubSum`] (the subtrahends).
///
/// `uses` counts every node's uses (outputs included, counted to 2) among `nodes` nodes.
fn dot_chains(
    emits: &mut Vec<Emit>,
    packed: &mut Vec<u32>,
    uses: &[u8],
    nodes: usize,
    weight: impl Fn(u32) -> Option<f64>,
    differences: bool,
) {
    const NO: u32 = u32::MAX;
    let link = |code: Code| code == Code::MulAdd || differences;
    let mut emit_of = vec![NO; nodes];
    for (k, e) in emits.iter().enumerate() {
        if running_operand(e.code).is_some() && link(e.code) {
            emit_of[e.node as usize] = k as u32;
        }
    }
    // The emit of the same code whose value is link `e`'s running operand, where that
    // value has no other use.
    let below = |emits: &[Emit], e: &Emit| {
        let c = e.operands[running_operand(e.code)?] as usize;
        let b = emit_of[c];
        (b != NO && uses[c] == 1 && emits[b as usize].code == e.code).then_some(b as usize)
    };
    // `absorbed[k]`: emit k is a link whose only use is the running operand of another
    // link of its code.
    let mut absorbed = vec![false; emits.len()];
    for e in emits.iter() {
        if let Some(b) = below(emits, e) {
            absorbed[b] = true;
        }
    }
    let mut removed = vec![false; emits.len()];
    let mut chain: Vec<usize> = Vec::new();
    // Whether each term of `chain` has a weight.
    let mut weighted: Vec<bool> = Vec::new();
    for k in 0..emits.len() {
        let Some(run_at) = running_operand(emits[k].code) else {
            continue;
        };
        if absorbed[k] || !link(emits[k].code) {
            continue;
        }
        let link = emits[k].code;
        // Down from the chain's last link to its first.
        chain.clear();
        let mut at = k;
        loop {
            chain.push(at);
            match below(emits, &emits[at]) {
                Some(b) if absorbed[b] => at = b,
                _ => break,
            }
        }
        if chain.len() < MIN_DOT.min(MIN_DOT_CONST) {
            continue;
        }
        // Up from the first link: the chain in pieces of terms that all have a weight or
        // all have none (only sums have weighted pieces); a piece long enough is one
        // instruction in its last link's place, its running operand the piece below's
        // last link (or the chain's own).
        chain.reverse();
        weighted.clear();
        weighted.extend(chain.iter().map(|&m| {
            let [a, b, _] = emits[m].operands;
            link == Code::MulAdd && (weight(a).is_some() || weight(b).is_some())
        }));
        let mut from = 0;
        while from < chain.len() {
            let w = weighted[from];
            let to = from + weighted[from..].iter().take_while(|&&v| v == w).count();
            let piece = &chain[from..to];
            from = to;
            if piece.len() < if w { MIN_DOT_CONST } else { MIN_DOT } {
                continue;
            }
            let start = packed.len() as u32;
            for &m in piece {
                let [a, b, _] = emits[m].operands;
                match link {
                    // The subtrahend.
                    Code::Op(Op::Sub) => packed.push(b),
                    // The weight second (either factor may be it: the product is the
                    // same).
                    _ if w && weight(b).is_none() => packed.extend_from_slice(&[b, a]),
                    _ => packed.extend_from_slice(&[a, b]),
                }
            }
            let first = emits[piece[0]].operands[run_at];
            let (&last, below) = piece.split_last().unwrap_or((&piece[0], &[]));
            for &m in below {
                removed[m] = true;
            }
            let e = &mut emits[last];
            e.code = match link {
                Code::MulAdd if w => Code::DotConst,
                Code::MulAdd => Code::Dot,
                Code::SubMul => Code::DotSub,
                _ => Code::SubSum,
            };
            e.operands = [first, start, packed.len() as u32 - start];
        }
    }
    let mut k = 0;
    emits.retain(|_| {
        k += 1;
        !removed[k - 1]
    });
}

/// Points per block: as many as keep every block (one per input and temporary slot: the
/// constants have none) within about 1 MiB (half a typical server core's L2), a multiple
/// of 8 between 16 and 256. Measured on Kirby2's Jacobian: 8 points per block run at 36%
/// of the speed of 128, and 256 no faster.
fn block_size(slots: usize) -> usize {
    let fit = (1024 * 1024 / 8) / slots.max(1);
    (fit / 8 * 8).clamp(16, 256)
}
