//! Lowering a lane graph to a [`Program`]: scheduling, run grouping and slot assignment.
//!
//! **Schedule.** For one point at a time ([`Schedule::Level`]), operations are ordered by
//! dependency level (the longest path from an input) and within a level by operation, so
//! that equal operations sit next to each other; a *run* of equal operations is executed
//! by one dispatch and a tight loop. Models that sum over data (one identical chain per
//! observation) become long runs. For blocks of points ([`Schedule::Graph`]) dispatch is
//! already shared by the block, and the graph's own order keeps fewer values alive (each
//! live slot is a whole block). Reordering independent operations cannot change any
//! result: every node still computes the same operation on the same values.
//!
//! **Slots.** Constants and inputs have fixed slots; each operation takes a slot from a
//! free list, and a value's slot returns to the list after its last use in schedule order.
//! Output slots are never freed.

use super::{next_id, Instr, Program, Run};
use ddx_ir::{Lane, Node, Op};

/// Sentinel for "this node has no slot yet".
const NONE: u32 = u32::MAX;

/// The order instructions are laid out in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// By dependency level, equal operations grouped: fewest dispatches (one point).
    Level,
    /// The graph's topological order: fewest live values (blocks of points).
    Graph,
}

impl Program {
    /// Lowers `lane` (a graph extracted to its outputs, so every node is live).
    pub fn lower(lane: &Lane, schedule: Schedule) -> Program {
        let g = &lane.graph;
        let nodes = g.nodes();
        let inputs = lane.symbols + lane.seeds;
        let consts: Vec<f64> = nodes.iter().filter_map(Node::constant).collect();
        let input_base = consts.len();

        // Dependency levels and the schedule: (level, op, id).
        let mut level = vec![0u32; nodes.len()];
        let mut order: Vec<(u32, Op, usize)> = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            if let Node::Apply(op, _) = *n {
                level[i] = 1 + n.args().iter().map(|a| level[a.index()]).max().unwrap_or(0);
                let key = match schedule {
                    Schedule::Level => level[i],
                    Schedule::Graph => 0,
                };
                order.push((key, lowered_op(g, op, n), i));
            }
        }
        match schedule {
            Schedule::Level => order.sort_unstable(),
            Schedule::Graph => {}
        }

        // Last use of every node in schedule order; outputs live to the end.
        let mut position = vec![usize::MAX; nodes.len()];
        for (k, &(_, _, i)) in order.iter().enumerate() {
            position[i] = k;
        }
        let mut last_use = vec![0usize; nodes.len()];
        for &(_, _, i) in &order {
            for a in nodes[i].args() {
                last_use[a.index()] = last_use[a.index()].max(position[i]);
            }
        }
        for o in &lane.outputs {
            last_use[o.index()] = usize::MAX;
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
                Node::Seed(s) => (input_base + lane.symbols + s.index()) as u32,
                Node::Apply(..) => NONE,
            };
        }
        let mut next_free = (input_base + inputs) as u32;
        let mut free: Vec<u32> = Vec::new();
        let mut instrs = Vec::with_capacity(order.len());
        let mut runs: Vec<Run> = Vec::new();
        for (k, &(_, op, i)) in order.iter().enumerate() {
            let node = &nodes[i];
            let mut args = [0u32; 3];
            for (a, arg) in args.iter_mut().zip(node.args()) {
                *a = slot[arg.index()];
            }
            if op != node.op().unwrap_or(op) {
                // `pow(a, 2)` lowered to `a * a`.
                args[1] = args[0];
            }
            // Temporaries used for the last time here (once each) go back to the free list:
            // one point at a time, before the result takes a slot, so it may reuse one;
            // for blocks, after, so a block's destination never overlaps its operands.
            let release = |free: &mut Vec<u32>| {
                for (j, arg) in node.args().iter().enumerate() {
                    let a = arg.index();
                    let temp = matches!(nodes[a], Node::Apply(..));
                    let first = node.args()[..j].iter().all(|p| p != arg);
                    if temp && first && last_use[a] == k {
                        free.push(slot[a]);
                    }
                }
            };
            if schedule == Schedule::Level {
                release(&mut free);
            }
            let dst = free.pop().unwrap_or_else(|| {
                next_free += 1;
                next_free - 1
            });
            if schedule == Schedule::Graph {
                release(&mut free);
            }
            slot[i] = dst;
            match runs.last_mut() {
                Some(r) if r.op == op => r.end += 1,
                _ => runs.push(Run {
                    op,
                    start: instrs.len() as u32,
                    end: instrs.len() as u32 + 1,
                }),
            }
            instrs.push(Instr { dst, args });
        }
        let outputs = lane.outputs.iter().map(|o| slot[o.index()]).collect();
        let slots = next_free as usize;
        let program = Program {
            id: next_id(),
            block: block_size(slots),
            slots,
            consts,
            inputs,
            runs,
            instrs,
            outputs,
            schedule,
        };
        program.check();
        program
    }

    /// Checks every slot index against the slot count and every run against the
    /// instruction list; the execution loops rely on both. Under a block schedule a
    /// destination never overlaps an operand.
    fn check(&self) {
        let n = self.slots as u32;
        for i in &self.instrs {
            assert!(
                i.dst < n && i.args.iter().all(|&a| a < n),
                "slot out of range in {i:?}"
            );
        }
        if self.schedule == Schedule::Graph {
            for r in &self.runs {
                for i in &self.instrs[r.start as usize..r.end as usize] {
                    let used = &i.args[..r.op.arity()];
                    assert!(
                        !used.contains(&i.dst),
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

/// The operation an engine executes for `node`: `pow(a, 2)` is `a * a` by definition
/// (see `ddx_ir::math::pow`).
fn lowered_op(g: &ddx_ir::Graph, op: Op, node: &Node) -> Op {
    match op {
        Op::Pow if g.constant_of(node.args()[1]) == Some(2.0) => Op::Mul,
        other => other,
    }
}

/// Points per block: as many as keep every slot's block within about 1 MiB (half a
/// typical server core's L2), a multiple of 8 between 16 and 256. Measured on Kirby2's
/// Jacobian: 8 points per block run at 36% of the speed of 128, and 256 no faster.
fn block_size(slots: usize) -> usize {
    let fit = (1024 * 1024 / 8) / slots.max(1);
    (fit / 8 * 8).clamp(16, 256)
}
