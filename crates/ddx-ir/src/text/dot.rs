//! Graphviz: a lane drawn as a `digraph`, optionally with the value-graph nodes it pruned.
//!
//! Input: a model and one of its lanes. Output: DOT text. Nodes are drawn bottom-up
//! (inputs at the bottom): symbols as boxes, constants as plain text, operations as
//! ellipses labelled with their operator or function name; an edge runs from each argument
//! to its user, labelled with the argument's position where the order matters. Each lane
//! output hangs off its node as a label (`f0`, `∂f0/∂x`, `jvp[0]`).
//!
//! With `all`, the model's value graph is merged in (hash-consing identifies the nodes the
//! two share), and the value nodes the lane does not need are drawn dashed and grey, with
//! the value outputs marked `f0`, `f1`, …. Node names (`n7`) are ids of that merged graph,
//! so they are stable between the two pictures of one lane.

use super::print::write_number;
use crate::{Graph, Lane, Model, Node, NodeId, Notation, Op, NO_ARG};
use std::fmt::Write;

/// The lane `lane` of `model` in Graphviz form; `all` adds the value nodes the lane pruned,
/// drawn dashed and grey.
pub fn dot(model: &Model, lane: &Lane, all: bool) -> String {
    let mut merged = Graph::new();
    let value = merge(&mut merged, model.graph());
    let in_lane = merge(&mut merged, &lane.graph);
    let mut drawn_lane = vec![false; merged.len()];
    let mut drawn_value = vec![false; merged.len()];
    for &u in &in_lane {
        drawn_lane[u.index()] = true;
    }
    for &u in &value {
        drawn_value[u.index()] = true;
    }
    let names = model.inputs();
    let mut out = String::from("digraph ddx {\n  rankdir=BT;\n  node [fontname=\"Helvetica\"];\n");
    let pruned_style = ", style=dashed, color=gray50, fontcolor=gray50";
    for (i, node) in merged.nodes().iter().enumerate() {
        let pruned = !drawn_lane[i];
        if pruned && !(all && drawn_value[i]) {
            continue;
        }
        let style = if pruned { pruned_style } else { "" };
        let (label, shape) = label(node, names);
        let _ = writeln!(
            out,
            "  n{i} [label=\"{}\", shape={shape}{style}];",
            escape(&label)
        );
        if let Node::Apply(op, args) = node {
            let ordered = op.arity() > 1 && !matches!(op, Op::Add | Op::Mul | Op::Eq | Op::Ne);
            for (k, a) in args[..op.arity()].iter().enumerate() {
                let tail = if ordered {
                    format!(" [label=\"{k}\"{style}]")
                } else if pruned {
                    format!(" [{}]", &style[2..])
                } else {
                    String::new()
                };
                let _ = writeln!(out, "  n{} -> n{i}{tail};", a.index());
            }
        }
    }
    for (k, &u) in in_lane_outputs(lane, &in_lane).iter().enumerate() {
        let _ = writeln!(
            out,
            "  out{k} [label=\"{}\", shape=none];\n  n{} -> out{k} [arrowhead=none];",
            escape(&output_label(lane, k, names)),
            u.index()
        );
    }
    if all && lane.values == 0 {
        for (i, &o) in model.outputs().iter().enumerate() {
            let u = value[o.index()];
            let style = if drawn_lane[u.index()] {
                ""
            } else {
                pruned_style
            };
            let _ = writeln!(
                out,
                "  value{i} [label=\"f{i}\", shape=none{style}];\n  n{} -> value{i} [arrowhead=none{style}];",
                u.index()
            );
        }
    }
    out.push_str("}\n");
    out
}

/// Copies `from` into `into` (hash-consed, so shared nodes meet); answers each node's id
/// in `into`. Nodes were folded when first made, so they are interned as they are.
fn merge(into: &mut Graph, from: &Graph) -> Vec<NodeId> {
    let mut map = vec![NO_ARG; from.len()];
    for (i, node) in from.nodes().iter().enumerate() {
        map[i] = into.intern(node.map_args(|a| map[a.index()]));
    }
    map
}

fn in_lane_outputs(lane: &Lane, in_lane: &[NodeId]) -> Vec<NodeId> {
    lane.outputs.iter().map(|o| in_lane[o.index()]).collect()
}

/// `f0` for a value, `∂f0/∂x` for a Jacobian cell, `jvp[0]` (the lane's name) otherwise.
fn output_label(lane: &Lane, k: usize, names: &[String]) -> String {
    if k < lane.values {
        return format!("f{k}");
    }
    let j = k - lane.values;
    match lane.pattern.as_ref().and_then(|p| p.entries().get(j)) {
        Some(c) => format!(
            "∂f{}/∂{}",
            c.row,
            names.get(c.column).map_or("?", String::as_str)
        ),
        None => format!("{}[{j}]", lane.kind.name()),
    }
}

/// A node's label and shape.
fn label(node: &Node, names: &[String]) -> (String, &'static str) {
    match *node {
        Node::Const(c) => {
            let v = c.value();
            let mut s = String::new();
            if v.is_finite() {
                let _ = write_number(&mut s, v, None);
            } else {
                let _ = write!(s, "{v}");
            }
            (s, "plaintext")
        }
        Node::Symbol(s) => (
            names
                .get(s.index())
                .cloned()
                .unwrap_or_else(|| s.to_string()),
            "box",
        ),
        Node::Seed(s) => (s.to_string(), "box"),
        Node::Apply(op, _) => match op.notation() {
            Notation::Infix { token, .. } => (token.to_string(), "ellipse"),
            Notation::Prefix => (super::NEG_TOKEN.to_string(), "ellipse"),
            Notation::Call => (op.name().to_string(), "ellipse"),
        },
    }
}

/// Escapes a label for a DOT double-quoted string.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
