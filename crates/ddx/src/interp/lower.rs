//! Lowering a lane graph to a [`Program`]: slot assignment with reuse.

use super::{next_id, Instr, Program};
use ddx_ir::{Lane, Node};

/// Sentinel for "this node has no slot yet".
const NONE: u32 = u32::MAX;

impl Program {
    /// Lowers `lane` (a graph extracted to its outputs, so every node is live).
    pub fn lower(lane: &Lane) -> Program {
        let g = &lane.graph;
        let nodes = g.nodes();
        let inputs = lane.symbols + lane.seeds;
        let consts: Vec<f64> = nodes.iter().filter_map(Node::constant).collect();
        let input_base = consts.len();
        let mut next_free = (input_base + inputs) as u32;

        // Last use of every node; outputs live to the end.
        let mut last_use = vec![0usize; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            for a in n.args() {
                last_use[a.index()] = i;
            }
        }
        let mut pinned = vec![false; nodes.len()];
        for o in &lane.outputs {
            pinned[o.index()] = true;
        }

        let mut slot = vec![NONE; nodes.len()];
        let mut free: Vec<u32> = Vec::new();
        let mut instrs = Vec::new();
        let mut const_index = 0u32;
        for (i, n) in nodes.iter().enumerate() {
            match *n {
                Node::Const(_) => {
                    slot[i] = const_index;
                    const_index += 1;
                }
                Node::Symbol(s) => slot[i] = (input_base + s.index()) as u32,
                Node::Seed(s) => slot[i] = (input_base + lane.symbols + s.index()) as u32,
                Node::Apply(op, a) => {
                    let mut args = [0u32; 3];
                    for (k, arg) in a[..op.arity()].iter().enumerate() {
                        args[k] = slot[arg.index()];
                    }
                    // Free arguments used for the last time here (once each), so the
                    // result may take one of their slots.
                    for (k, arg) in a[..op.arity()].iter().enumerate() {
                        let j = arg.index();
                        let temp = matches!(nodes[j], Node::Apply(..));
                        let first = a[..k].iter().all(|p| p != arg);
                        if temp && first && last_use[j] == i && !pinned[j] {
                            free.push(slot[j]);
                        }
                    }
                    let dst = free.pop().unwrap_or_else(|| {
                        next_free += 1;
                        next_free - 1
                    });
                    slot[i] = dst;
                    instrs.push(Instr { op, dst, args });
                }
            }
        }
        let outputs = lane.outputs.iter().map(|o| slot[o.index()]).collect();
        let program = Program {
            id: next_id(),
            slots: next_free as usize,
            consts,
            inputs,
            instrs,
            outputs,
        };
        program.check();
        program
    }

    /// Checks every slot index against the slot count; the execution loop relies on it.
    fn check(&self) {
        let n = self.slots as u32;
        for i in &self.instrs {
            assert!(
                i.dst < n && i.args.iter().all(|&a| a < n),
                "slot out of range in {i:?}"
            );
        }
        assert!(
            self.outputs.iter().all(|&o| o < n),
            "output slot out of range"
        );
        assert!(self.consts.len() + self.inputs <= self.slots);
    }
}
