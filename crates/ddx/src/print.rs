//! An equation as text and as a picture: `Display` with derivative rows, Graphviz, and the
//! size of what each kind of call evaluates.

use crate::{Equation, LaneKind, Shape};
use ddx_ir::text::infix;
use std::fmt;

impl<S: Shape> fmt::Display for Equation<S> {
    /// Each output on its own line, with its structurally nonzero partials underneath
    /// (from the Jacobian lane, which is prepared if it was not yet):
    ///
    /// ```text
    /// f0: x * y
    ///   d/dx: y
    ///   d/dy: x
    /// ```
    ///
    /// Every expression is the shortest infix text that parses back to the same graph, and
    /// a precision (`{:.3}`) applies to every number. A partial that is structurally zero
    /// has no row. Symbol names are written as given to `rt::var`: one that is not a
    /// Python-style identifier (a data file's `"T (K)"`, say) prints faithfully but does
    /// not parse back, since the text grammar has no quoting.
    ///
    /// Text is a tree: a subexpression shared by several parents is written out at each
    /// use, so the text of a heavily shared graph grows exponentially with its depth, and
    /// its derivative rows faster still. `p = p*p + 1` repeated 13 times from `p = x` is a
    /// graph of 28 nodes whose value prints as 82 kB and whose one derivative row as
    /// 447 MB. For such graphs use [`Equation::to_dot`], which draws each node once, and
    /// [`Equation::nodes`] for their size. So that a plain `{}` never exhausts memory, an
    /// expression of more than [`MAX_TEXT_NODES`](crate::MAX_TEXT_NODES) nodes written out
    /// is printed as a bracketed note with that limit; the alternate flag (`{:#}`) prints
    /// every expression in full.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let model = self.model();
        // Expressions name parameters too (they follow the symbols); the derivative rows
        // are one per symbol.
        let names = model.inputs();
        let lane = self.lane(LaneKind::Jacobian);
        let cells = lane.pattern.as_ref().map_or(&[][..], |p| p.entries());
        for (i, &out) in model.outputs().iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "f{i}: ")?;
            fmt::Display::fmt(&infix(model.graph(), out, names), f)?;
            for c in cells.iter().filter(|c| c.row == i) {
                let name = names.get(c.column).map_or("?", String::as_str);
                write!(f, "\n  d/d{name}: ")?;
                match lane.outputs.get(lane.values + c.slot) {
                    Some(&d) => fmt::Display::fmt(&infix(&lane.graph, d, names), f)?,
                    None => f.write_str("?")?,
                }
            }
        }
        Ok(())
    }
}

impl<S: Shape> Equation<S> {
    /// The gradient lane in Graphviz (DOT) form: what [`Equation::gradient`] evaluates,
    /// each partial labelled `∂f0/∂x`. With `all`, the value-graph nodes that lane pruned
    /// (needed for the value but not for any partial) are drawn too, dashed and grey, and
    /// the value outputs are marked `f0`, `f1`, …. Render with `dot -Tsvg`.
    pub fn to_dot(&self, all: bool) -> String {
        ddx_ir::text::dot(self.model(), self.lane(LaneKind::Gradient), all)
    }

    /// How many nodes a call of kind `want` evaluates: the node count of its lane graph,
    /// which holds only what the call's outputs reach — inputs and constants included. So
    /// `nodes(LaneKind::Gradient) <= nodes(LaneKind::Jacobian)`, and the graph
    /// [`Equation::to_dot`]`(false)` draws has `nodes(LaneKind::Gradient)` nodes.
    pub fn nodes(&self, want: LaneKind) -> usize {
        self.lane(want).graph.len()
    }
}
