//! A sealed model: the value graph of an equation, its outputs, its symbols and its
//! parameters.
//!
//! A *parameter* (`rt::param`) is an input that is never differentiated: it is read like a
//! symbol, but no lane has a partial with respect to it. In the graph a parameter is a
//! `Symbol` node numbered after every symbol, so engines read it from the input block as
//! they read a symbol, and the AD passes — which differentiate with respect to the first
//! `n` inputs only — give it no tangent and no adjoint.
//!
//! **Invariants**: the inputs are listed as the symbols in canonical order (byte order of
//! the name), then the parameters in canonical order, with no name twice in either list nor
//! in both; `Symbol(s)` nodes index that list (`s < n` a symbol, `s ≥ n` parameter `s − n`);
//! the graph holds only nodes the outputs reach; there is at least one output.

use crate::{Graph, Node, NodeId, SymbolId, NO_ARG};

/// The value graph of an equation: what a model closure or a text built.
#[derive(Clone, Debug)]
pub struct Model {
    graph: Graph,
    outputs: Vec<NodeId>,
    /// The symbols in canonical order, then the parameters in canonical order.
    names: Vec<String>,
    /// How many of `names` are symbols (`n`).
    symbols: usize,
}

impl Model {
    /// Seals a graph: orders `names` canonically (renumbering the symbol nodes to match)
    /// and keeps only what `outputs` reach. `names[i]` is the name of `SymbolId(i)` in
    /// `graph`; names must be distinct.
    pub fn seal(graph: &Graph, outputs: &[NodeId], names: Vec<String>) -> Model {
        let params = vec![false; names.len()];
        Model::seal_with_params(graph, outputs, names, &params)
    }

    /// [`Model::seal`] where `is_param[i]` says whether `names[i]` is a parameter: the
    /// symbols come first in canonical order, then the parameters in canonical order (see
    /// the module doc). `is_param` is as long as `names`.
    pub fn seal_with_params(
        graph: &Graph,
        outputs: &[NodeId],
        names: Vec<String>,
        is_param: &[bool],
    ) -> Model {
        debug_assert_eq!(names.len(), is_param.len());
        let param = |i: usize| is_param.get(i).copied().unwrap_or(false);
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by(|&a, &b| {
            (param(a), names[a].as_bytes()).cmp(&(param(b), names[b].as_bytes()))
        });
        let symbols = order.iter().filter(|&&i| !param(i)).count();
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
            // Symbols renumbered by a permutation: the nodes stay distinct.
            map[i] = out.push_distinct(node);
        }
        out.freeze();
        let outputs = roots.iter().map(|r| map[r.index()]).collect();
        let names = order.into_iter().map(|i| names[i].clone()).collect();
        Model {
            graph: out,
            outputs,
            names,
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
        Model::from_parts_with_params(graph, outputs, symbols, Vec::new())
    }

    /// [`Model::from_parts`] with parameters: `params` strictly increasing in byte order
    /// too, no name both a symbol and a parameter, and `graph` built over
    /// `symbols.len() + params.len()` inputs.
    ///
    /// # Errors
    /// What does not hold, in words.
    pub fn from_parts_with_params(
        graph: Graph,
        outputs: Vec<NodeId>,
        symbols: Vec<String>,
        params: Vec<String>,
    ) -> Result<Model, String> {
        for (list, what) in [(&symbols, "symbols"), (&params, "parameters")] {
            if let Some(w) = list.windows(2).find(|w| w[0].as_bytes() >= w[1].as_bytes()) {
                return Err(format!(
                    "the {what} are not in strictly increasing byte order (`{}` then `{}`)",
                    crate::text::quoted(&w[0]),
                    crate::text::quoted(&w[1])
                ));
            }
        }
        if let Some(p) = params.iter().find(|p| {
            symbols
                .binary_search_by(|s| s.as_bytes().cmp(p.as_bytes()))
                .is_ok()
        }) {
            return Err(format!(
                "`{}` is both a symbol and a parameter",
                crate::text::quoted(p)
            ));
        }
        let n = symbols.len();
        let mut names = symbols;
        names.extend(params);
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
            matches!(n, Node::Seed(_)) || matches!(n, Node::Symbol(s) if s.index() >= names.len())
        }) {
            return Err(format!("node n{i} is not an input of the model"));
        }
        Ok(Model {
            graph,
            outputs,
            names,
            symbols: n,
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

    /// The symbol names in canonical order (the inputs differentiated).
    pub fn symbols(&self) -> &[String] {
        &self.names[..self.symbols]
    }

    /// The parameter names in canonical order (inputs never differentiated).
    pub fn parameters(&self) -> &[String] {
        &self.names[self.symbols..]
    }

    /// Every input's name, as `Symbol(s)` nodes index them: the symbols, then the
    /// parameters.
    pub fn inputs(&self) -> &[String] {
        &self.names
    }

    /// The symbol count `n`.
    pub fn arity(&self) -> usize {
        self.symbols
    }

    /// The parameter count `p`.
    pub fn param_count(&self) -> usize {
        self.names.len() - self.symbols
    }

    /// The position of symbol `name`, if the model has it.
    pub fn symbol_index(&self, name: &str) -> Option<usize> {
        self.symbols()
            .binary_search_by(|s| s.as_bytes().cmp(name.as_bytes()))
            .ok()
    }

    /// The position of parameter `name` among the parameters, if the model has it.
    pub fn parameter_index(&self, name: &str) -> Option<usize> {
        self.parameters()
            .binary_search_by(|s| s.as_bytes().cmp(name.as_bytes()))
            .ok()
    }
}
