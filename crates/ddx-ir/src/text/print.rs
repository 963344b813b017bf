//! The printer: a graph node as the shortest infix text that parses back to it.
//!
//! Input: a graph, a node, and the names of its symbols. Output: text in the grammar of
//! [`crate::text`] that [`Formula::parse`](super::Formula::parse) reads back to the same
//! hash-consed graph — provided every symbol name is a name of the grammar (a Python
//! identifier, not a function name) and the nesting stays within [`MAX_DEPTH`](super::MAX_DEPTH). A graph
//! built by a closure can nest without limit, and even a parsed one can nest deeper than
//! the text it came from, because folding moves negations: `x*y*-1*y*-1` has depth 3 in
//! the parser, but it is the graph `-(-(x * y) * y)`, and so it prints. Text nested too
//! deeply is refused by the parser ([`Syntax::TooDeep`](super::Syntax::TooDeep)), never
//! misread.
//!
//! Parentheses are written only where the operator table's binding powers and
//! associativity need them: `a - (b - c)`, `a / (b * c)`, `(a ** b) ** c`, `(-x) ** 2`,
//! but `a - b - c`, `a ** b ** c`, `-x ** 2` (which is `-(x ** 2)`), `2 ** -1`,
//! `x * -2`, `x - -2`. A signed operand may stand to the right of any infix operator
//! unparenthesised, as in Python. Function arguments are never parenthesised, so a
//! comparison inside `select(…)` needs none.
//!
//! Numbers: without a precision, the shortest text that reads back to the same `f64`
//! (Rust's `{}`, or `{:e}` below `1e-5` and from `1e16` on, so `1e300` is not 301
//! digits); with one (`{:.3}`) every number is written with that many decimals. The
//! values without a literal have fixed spellings that the grammar (and Python) reads
//! back: `inf` is `1e999`, `-inf` is `-1e999`, NaN is `0 / 0` (which folds to NaN), `-0`
//! is `-0`. A negative number prints as a signed operand (`-2`), so it is parenthesised
//! where a sign would be: `(-2) ** x`.
//!
//! The printer walks the expression as a tree with an explicit stack, so deep graphs do
//! not exhaust the stack. A node shared by several parents is written out at each use, so
//! the text can be exponentially longer than the graph: `p = p*p + 1`, thirteen times over
//! from `p = x`, is 28 nodes and prints as 81,913 bytes, and each further step doubles it.
//! For such graphs draw the graph instead ([`fn@super::dot`]). So that a plain `{}` can
//! never exhaust memory, an expression longer than [`MAX_TEXT_NODES`] nodes as a tree is
//! written as a bracketed note giving its size (which does not parse); the alternate flag
//! (`{:#}`) writes it out whatever its length.

use super::NEG_TOKEN;
use crate::builder::snapshot;
use crate::expr::Repr;
use crate::{Assoc, Expr, Graph, Model, Node, NodeId, Notation, Op, PREFIX_POWER};
use std::fmt;

/// The most tree nodes (operations, numbers and names, counting a shared subexpression
/// at each use) an expression is written out with under `{}`; a longer one is written as
/// a note with its size, unless the alternate flag (`{:#}`) asks for all of it. About
/// 10 MB of text at most.
pub const MAX_TEXT_NODES: u64 = 1 << 20;

/// The number of nodes `root` has written out as a tree, saturating at `cap + 1`: one
/// visit per distinct node below `root`, with an explicit stack.
fn tree_size(graph: &Graph, root: NodeId, cap: u64) -> u64 {
    use std::collections::HashMap;
    let mut size: HashMap<NodeId, u64> = HashMap::new();
    let mut stack = vec![(root, false)];
    while let Some((id, children_done)) = stack.pop() {
        if size.contains_key(&id) {
            continue;
        }
        let args = graph.nodes().get(id.index()).map_or(&[][..], Node::args);
        if children_done {
            let total = args.iter().fold(1u64, |t, a| {
                t.saturating_add(size.get(a).copied().unwrap_or(1))
            });
            if total > cap {
                return cap + 1;
            }
            size.insert(id, total);
        } else {
            stack.push((id, true));
            stack.extend(
                args.iter()
                    .filter(|a| !size.contains_key(a))
                    .map(|&a| (a, false)),
            );
        }
    }
    size.get(&root).copied().unwrap_or(1)
}

/// The level of something that never needs parentheses.
const ATOM: u8 = u8::MAX;

/// A node of a graph, displayed as infix text (see the module documentation). A format
/// precision (`{:.3}`) applies to every number.
#[derive(Clone, Copy, Debug)]
pub struct Infix<'a> {
    graph: &'a Graph,
    root: NodeId,
    names: &'a [String],
}

/// Displays `root` of `graph` as infix text; `names[i]` is the name of `SymbolId(i)`. A
/// symbol without a name prints as its id (`s3`), a seed as its id (`v0`), an id outside
/// the graph as `<n12?>`: printing never panics.
pub fn infix<'a>(graph: &'a Graph, root: NodeId, names: &'a [String]) -> Infix<'a> {
    Infix { graph, root, names }
}

/// Writes `v` as the printer does (see the module documentation), with `precision`
/// decimals if given.
///
/// # Errors
/// Those of the formatter.
pub fn write_number(f: &mut impl fmt::Write, v: f64, precision: Option<usize>) -> fmt::Result {
    if v.is_nan() {
        return write!(f, "0 {} 0", infix_token(Op::Div));
    }
    if v.is_infinite() {
        let sign = if v < 0.0 { NEG_TOKEN } else { "" };
        return write!(f, "{sign}1e999");
    }
    let a = v.abs();
    let exponent = a != 0.0 && !(1e-5..1e16).contains(&a);
    match (precision, exponent) {
        (None, false) => write!(f, "{v}"),
        (None, true) => write!(f, "{v:e}"),
        (Some(p), false) => write!(f, "{v:.p$}"),
        (Some(p), true) => write!(f, "{v:.p$e}"),
    }
}

fn infix_token(op: Op) -> &'static str {
    match op.notation() {
        Notation::Infix { token, .. } => token,
        _ => op.name(),
    }
}

/// How tightly a number's text holds together.
fn number_level(v: f64) -> u8 {
    if v.is_nan() {
        level_of(Op::Div)
    } else if v.is_sign_negative() {
        PREFIX_POWER
    } else {
        ATOM
    }
}

/// How tightly an operation's text holds together.
fn level_of(op: Op) -> u8 {
    match op.notation() {
        Notation::Call => ATOM,
        Notation::Prefix => PREFIX_POWER,
        Notation::Infix { power, .. } => power,
    }
}

fn level(graph: &Graph, id: NodeId) -> u8 {
    match graph.nodes().get(id.index()) {
        Some(Node::Const(c)) => number_level(c.value()),
        Some(Node::Apply(op, _)) => level_of(*op),
        _ => ATOM,
    }
}

/// Whether argument `i` of `op`, of level `child`, needs parentheses.
fn needs_parens(op: Op, i: usize, child: u8) -> bool {
    match op.notation() {
        Notation::Call => false,
        Notation::Prefix => child < PREFIX_POWER,
        Notation::Infix { power, .. } if i == 0 => {
            child < power || (child == power && op.assoc() != Assoc::Left)
        }
        Notation::Infix { .. } if child == PREFIX_POWER => false,
        Notation::Infix { power, .. } => {
            child < power || (child == power && op.assoc() != Assoc::Right)
        }
    }
}

enum Task {
    Node(NodeId, bool),
    Text(&'static str),
    Infix(&'static str),
}

impl fmt::Display for Infix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let precision = f.precision();
        if !f.alternate() && tree_size(self.graph, self.root, MAX_TEXT_NODES) > MAX_TEXT_NODES {
            return write!(
                f,
                "<expression of more than {MAX_TEXT_NODES} nodes written out; \
                 format with {{:#}} to write it anyway>"
            );
        }
        let mut stack = vec![Task::Node(self.root, false)];
        while let Some(task) = stack.pop() {
            let (id, parens) = match task {
                Task::Text(s) => {
                    f.write_str(s)?;
                    continue;
                }
                Task::Infix(s) => {
                    write!(f, " {s} ")?;
                    continue;
                }
                Task::Node(id, parens) => (id, parens),
            };
            if parens {
                f.write_str("(")?;
                stack.push(Task::Text(")"));
            }
            let Some(node) = self.graph.nodes().get(id.index()) else {
                write!(f, "<{id}?>")?;
                continue;
            };
            match *node {
                Node::Const(c) => write_number(f, c.value(), precision)?,
                Node::Symbol(s) => match self.names.get(s.index()) {
                    Some(name) => f.write_str(name)?,
                    None => write!(f, "{s}")?,
                },
                Node::Seed(s) => write!(f, "{s}")?,
                Node::Apply(op, args) => {
                    let args = &args[..op.arity()];
                    let child = |i: usize| {
                        let a = args[i];
                        Task::Node(a, needs_parens(op, i, level(self.graph, a)))
                    };
                    match op.notation() {
                        Notation::Call if op == Op::Call => {
                            // A user function: `name(a)`, `name(a, b, c)`, `name_d0(a, b)`,
                            // …, its arguments read through the pack chain.
                            let tag = self.graph.constant_of(args[0]).unwrap_or(f64::NAN);
                            let (name, arity) =
                                crate::user::describe(tag).unwrap_or_else(|| ("call".into(), 2));
                            write!(f, "{name}(")?;
                            stack.push(Task::Text(")"));
                            let leaves: Vec<NodeId> =
                                self.graph.call_args(id).take(arity.max(1)).collect();
                            for (i, &a) in leaves.iter().enumerate().rev() {
                                stack.push(Task::Node(a, false));
                                if i > 0 {
                                    stack.push(Task::Text(", "));
                                }
                            }
                        }
                        Notation::Call => {
                            write!(f, "{}(", op.name())?;
                            stack.push(Task::Text(")"));
                            for i in (0..args.len()).rev() {
                                stack.push(child(i));
                                if i > 0 {
                                    stack.push(Task::Text(", "));
                                }
                            }
                        }
                        Notation::Prefix => {
                            f.write_str(NEG_TOKEN)?;
                            stack.push(child(0));
                        }
                        Notation::Infix { token, .. } => {
                            stack.push(child(1));
                            stack.push(Task::Infix(token));
                            stack.push(child(0));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for Model {
    /// One line per output, `f0: x * y`, in the model's output order; a precision
    /// (`{:.3}`) applies to every number.
    ///
    /// A subexpression shared by several parents is written out at each use, so a heavily
    /// shared graph prints exponentially long text (`p = p*p + 1` repeated 13 times: 28
    /// nodes, 82 kB; each repetition doubles it). Such a graph is better drawn: see
    /// [`fn@crate::text::dot`] (`ddx::Equation::to_dot`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, &out) in self.outputs().iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "f{i}: ")?;
            fmt::Display::fmt(&infix(self.graph(), out, self.inputs()), f)?;
        }
        Ok(())
    }
}

impl fmt::Display for Expr {
    /// Inside the model closure that made it (or one nested in it), the expression as
    /// infix text; a constant as its number; a handle outside its model closure (the model
    /// has been built, or the handle was sent to another thread), or a poisoned one, as a
    /// bracketed note saying so. Never panics. A precision
    /// (`{:.3}`) applies to every number.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Repr::Const(v) => write_number(f, v, f.precision()),
            Repr::Poison(p) => write!(f, "<poisoned expression: {}>", p.error().code()),
            Repr::Node { arena, id } => match snapshot(arena, id) {
                Some((graph, root, names)) => fmt::Display::fmt(&infix(&graph, root, &names), f),
                None => f.write_str("<expression outside its model closure>"),
            },
        }
    }
}
