//! A sealed model: the value graph of an equation, its outputs and its symbols.
//!
//! **Invariants**: symbols are listed in canonical order (byte order of the name), with no
//! name twice, and `Symbol(s)` nodes index that list; the graph holds only nodes the
//! outputs reach; there is at least one output.

use crate::{Graph, Node, NodeId, SymbolId, NO_ARG};

/// The value graph of an equation: what a model closure or a text built.
#[derive(Clone, Debug)]
pub struct Model {
    graph: Graph,
    outputs: Vec<NodeId>,
    symbols: Vec<String>,
}

impl Model {
    /// Seals a graph: orders `names` canonically (renumbering the symbol nodes to match)
    /// and keeps only what `outputs` reach. `names[i]` is the name of `SymbolId(i)` in
    /// `graph`; names must be distinct.
    pub fn seal(graph: &Graph, outputs: &[NodeId], names: Vec<String>) -> Model {
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by(|&a, &b| names[a].as_bytes().cmp(names[b].as_bytes()));
        let mut rank = vec![SymbolId(0); names.len()];
        for (new, &old) in order.iter().enumerate() {
            rank[old] = SymbolId::from_index(new);
        }
        let (pruned, roots) = graph.extract(outputs);
        let mut out = Graph::new();
        let mut map = vec![NO_ARG; pruned.len()];
        for (i, node) in pruned.nodes().iter().enumerate() {
            let node = match *node {
                Node::Symbol(s) => Node::Symbol(rank[s.index()]),
                other => other.map_args(|a| map[a.index()]),
            };
            map[i] = out.intern(node);
        }
        let outputs = roots.iter().map(|r| map[r.index()]).collect();
        let symbols = order.into_iter().map(|i| names[i].clone()).collect();
        Model {
            graph: out,
            outputs,
            symbols,
        }
    }

    /// A model from parts read from outside (a saved equation), checked against every
    /// invariant of the module doc: `symbols` strictly increasing in byte order, at least
    /// one output, every output a node of `graph`, every node reached by the outputs, and
    /// `graph` itself built by [`Graph::from_nodes`] over `symbols.len()` symbols and no
    /// seeds (which the caller is trusted to have done: the graph type cannot say).
    ///
    /// # Errors
    /// What does not hold, in words.
    pub fn from_parts(
        graph: Graph,
        outputs: Vec<NodeId>,
        symbols: Vec<String>,
    ) -> Result<Model, String> {
        if let Some(w) = symbols
            .windows(2)
            .find(|w| w[0].as_bytes() >= w[1].as_bytes())
        {
            return Err(format!(
                "the symbols are not in strictly increasing byte order (`{}` then `{}`)",
                w[0], w[1]
            ));
        }
        if outputs.is_empty() {
            return Err("the model has no outputs".into());
        }
        if let Some(o) = outputs.iter().find(|o| o.index() >= graph.len()) {
            return Err(format!(
                "output {o} is not a node of the {}-node graph",
                graph.len()
            ));
        }
        let reached = graph.reach(&outputs);
        if reached != graph.len() {
            return Err(format!(
                "the outputs reach {reached} of the graph's {} nodes",
                graph.len()
            ));
        }
        if let Some((i, _)) = graph.nodes().iter().enumerate().find(|(_, n)| {
            matches!(n, Node::Seed(_)) || matches!(n, Node::Symbol(s) if s.index() >= symbols.len())
        }) {
            return Err(format!("node n{i} is not an input of the model"));
        }
        Ok(Model {
            graph,
            outputs,
            symbols,
        })
    }

    /// The value graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The output nodes, one per function, in the order the model returned them.
    pub fn outputs(&self) -> &[NodeId] {
        &self.outputs
    }

    /// The symbol names in canonical order.
    pub fn symbols(&self) -> &[String] {
        &self.symbols
    }

    /// The symbol count `n`.
    pub fn arity(&self) -> usize {
        self.symbols.len()
    }

    /// The position of symbol `name`, if the model has it.
    pub fn symbol_index(&self, name: &str) -> Option<usize> {
        self.symbols
            .binary_search_by(|s| s.as_bytes().cmp(name.as_bytes()))
            .ok()
    }
}
