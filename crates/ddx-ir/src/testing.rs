//! Support shared by tests, fuzzers and benchmarks: a seeded random-model generator, a
//! canonical form for comparing graphs, and golden files with a bless switch.
//!
//! Nothing here is needed to use ddx; it is public so that every crate's tests, the fuzz
//! targets and the benchmarks draw their random graphs from one generator.
//!
//! - [`random_model`] makes a model from a seed: every operation of the table, symbols,
//!   and constants including the awkward ones (`±0`, `±inf`, NaN, subnormals, `1e300`).
//!   Nodes are made through [`Graph::add`], so the model is folded and hash-consed like any
//!   other. The same seed and [`ModelSize`] always give the same model.
//! - [`smooth_model`] makes a scalar model from a seed whose every operation stays inside
//!   its domain at every point, so values and derivatives are finite and finite differences
//!   apply (optionally with kinks: `max`, `min`, `abs`, `select`).
//! - [`canonical`] renumbers a model's reachable nodes in one fixed order (depth first from
//!   the outputs, arguments left to right) and its reachable symbols alphabetically, so two
//!   models are the same hash-consed graph exactly when their canonical forms are equal,
//!   whatever order their nodes were made in.
//! - [`check_golden`] compares text with a file, or rewrites the file when `DDX_BLESS=1`.

use crate::{Graph, Model, Node, NodeId, Op, SymbolId, NO_ARG};
use std::path::Path;

/// A small, fast, seeded generator (SplitMix64): reproducible from its seed everywhere.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n == 0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// `true` with probability `percent / 100`.
    pub fn percent(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }

    /// A uniformly chosen element (`None` for an empty slice).
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        items.get(self.below(items.len()))
    }

    /// A number in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The size of a [`random_model`].
#[derive(Clone, Debug)]
pub struct ModelSize {
    /// How many nodes to attempt (folding and sharing make fewer).
    pub nodes: usize,
    /// How many symbols to draw names from (at most 10 get friendly names).
    pub symbols: usize,
    /// How many outputs.
    pub outputs: usize,
    /// The longest path from an output to a leaf, so printed text stays within the
    /// parser's nesting limit: each edge costs the text at most two levels (a right operand
    /// or a sign, and parentheses), a leaf at most one (`-2`, `0 / 0`), the whole text one,
    /// so `2 * max_depth + 2 <= MAX_DEPTH` is enough.
    pub max_depth: usize,
    /// The most nodes an output may have when written out as a tree, so printed text
    /// stays short even where the graph shares a lot.
    pub max_tree: usize,
}

/// [`ModelSize::max_depth`] by default.
const DEFAULT_MAX_DEPTH: usize = 24;
const _: () = assert!(2 * DEFAULT_MAX_DEPTH + 2 <= crate::text::MAX_DEPTH);

impl Default for ModelSize {
    fn default() -> Self {
        Self {
            nodes: 24,
            symbols: 4,
            outputs: 2,
            max_depth: DEFAULT_MAX_DEPTH,
            max_tree: 400,
        }
    }
}

const NAMES: [&str; 10] = ["x", "y", "a", "b", "z", "b1", "x_2", "_t", "alpha", "T"];

/// Constants that tend to find bugs.
const AWKWARD: [f64; 18] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    2.0,
    0.5,
    3.0,
    -2.5,
    0.1,
    1e300,
    -1e-300,
    5e-324,
    1e16,
    123_456.789,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    f64::MAX,
];

/// A constant: an awkward one, a small decimal, or any non-NaN bit pattern.
fn random_constant(rng: &mut Rng) -> f64 {
    match rng.below(3) {
        0 => AWKWARD[rng.below(AWKWARD.len())],
        1 => (rng.unit() * 20.0 - 10.0) * 4.0f64.powi(rng.below(3) as i32 - 1),
        _ => {
            let v = f64::from_bits(rng.next_u64());
            if v.is_nan() {
                1.5
            } else {
                v
            }
        }
    }
}

/// An operation: the arithmetic and comparisons more often than their share of the table,
/// so printed text exercises precedence and not only calls.
fn random_op(rng: &mut Rng) -> Op {
    const ARITHMETIC: [Op; 6] = [Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Pow, Op::Neg];
    const CHOICE: [Op; 5] = [Op::Lt, Op::Le, Op::Eq, Op::Ne, Op::Select];
    match rng.below(20) {
        0..=10 => ARITHMETIC[rng.below(ARITHMETIC.len())],
        11..=13 => CHOICE[rng.below(CHOICE.len())],
        _ => Op::ALL[rng.below(Op::ALL.len())],
    }
}

/// A symbol (more often) or a constant.
fn random_leaf(g: &mut Graph, rng: &mut Rng, symbols: usize) -> NodeId {
    if rng.percent(60) {
        g.symbol(SymbolId::from_index(rng.below(symbols)))
    } else {
        g.constant(random_constant(rng))
    }
}

/// Extends the depth and tree-size tables to every node of `g`.
fn measure(g: &Graph, depth: &mut Vec<usize>, tree: &mut Vec<usize>) {
    while depth.len() < g.len() {
        let node = g.nodes()[depth.len()];
        let (d, t) = node.args().iter().fold((0, 1usize), |(d, t), a| {
            (
                d.max(depth[a.index()] + 1),
                t.saturating_add(tree[a.index()]),
            )
        });
        depth.push(d);
        tree.push(t);
    }
}

/// A model made from `seed` (see the module documentation). At least one output depends on
/// a symbol, so the model is never all literals.
pub fn random_model(seed: u64, size: &ModelSize) -> Model {
    let mut rng = Rng::new(seed);
    let mut g = Graph::new();
    let symbols = size.symbols.max(1);
    let names: Vec<String> = (0..symbols)
        .map(|i| {
            NAMES
                .get(i)
                .map_or_else(|| format!("s{i}"), |n| n.to_string())
        })
        .collect();
    // Per node (by NodeId): the longest path to a leaf and the tree size (saturating).
    let mut depth: Vec<usize> = Vec::new();
    let mut tree: Vec<usize> = Vec::new();
    let mut made: Vec<NodeId> = Vec::new();
    for _ in 0..size.nodes.max(1) {
        let id = if made.is_empty() || rng.percent(25) {
            random_leaf(&mut g, &mut rng, symbols)
        } else {
            let op = random_op(&mut rng);
            let mut args = [NO_ARG; 3];
            let mut node_tree = 1usize;
            for a in args.iter_mut().take(op.arity()) {
                let recent = made.len() - 1 - rng.below(made.len().min(6));
                let pick = if rng.percent(60) {
                    made[recent]
                } else {
                    made[rng.below(made.len())]
                };
                *a = if depth[pick.index()] + 1 > size.max_depth
                    || node_tree.saturating_add(tree[pick.index()]) > size.max_tree
                {
                    let leaf = random_leaf(&mut g, &mut rng, symbols);
                    measure(&g, &mut depth, &mut tree);
                    leaf
                } else {
                    pick
                };
                node_tree = node_tree.saturating_add(tree[a.index()]);
            }
            g.apply(op, &args[..op.arity()])
        };
        measure(&g, &mut depth, &mut tree);
        made.push(id);
    }
    let mut outputs = vec![made[made.len() - 1]];
    for _ in 1..size.outputs.max(1) {
        outputs.push(made[rng.below(made.len())]);
    }
    if outputs.iter().all(|&o| g.constant_of(o).is_some()) {
        outputs[0] = g.symbol(SymbolId(0));
    }
    Model::seal(&g, &outputs, names)
}

/// A model's reachable graph in canonical numbering; see the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct Canonical {
    /// The names of the symbols the outputs reach, alphabetically; `Symbol(s)` indexes it.
    pub symbols: Vec<String>,
    /// The nodes, depth first from the outputs, arguments left to right.
    pub nodes: Vec<Node>,
    /// The outputs' ids among [`Canonical::nodes`].
    pub outputs: Vec<NodeId>,
}

/// `model` in canonical numbering: equal for two models exactly when they are the same
/// hash-consed graph over the same symbol names.
pub fn canonical(model: &Model) -> Canonical {
    let g = model.graph();
    let mut order = Vec::new();
    let mut seen = vec![false; g.len()];
    for &root in model.outputs() {
        let mut stack = vec![(root, 0usize)];
        while let Some((id, next)) = stack.pop() {
            if seen[id.index()] {
                continue;
            }
            let args = g.node(id).args();
            match args.get(next) {
                Some(&a) => {
                    stack.push((id, next + 1));
                    if !seen[a.index()] {
                        stack.push((a, 0));
                    }
                }
                None => {
                    seen[id.index()] = true;
                    order.push(id);
                }
            }
        }
    }
    let mut reached: Vec<SymbolId> = order
        .iter()
        .filter_map(|&id| match g.node(id) {
            Node::Symbol(s) => Some(*s),
            _ => None,
        })
        .collect();
    reached.sort_by(|a, b| model.inputs()[a.index()].cmp(&model.inputs()[b.index()]));
    let mut rank = vec![SymbolId(u32::MAX); model.inputs().len()];
    for (new, s) in reached.iter().enumerate() {
        rank[s.index()] = SymbolId::from_index(new);
    }
    let mut map = vec![NO_ARG; g.len()];
    let mut nodes = Vec::with_capacity(order.len());
    for (new, &id) in order.iter().enumerate() {
        nodes.push(match *g.node(id) {
            Node::Symbol(s) => Node::Symbol(rank[s.index()]),
            other => other.map_args(|a| map[a.index()]),
        });
        map[id.index()] = NodeId::from_index(new);
    }
    Canonical {
        symbols: reached
            .iter()
            .map(|s| model.inputs()[s.index()].clone())
            .collect(),
        nodes,
        outputs: model.outputs().iter().map(|o| map[o.index()]).collect(),
    }
}

/// Compares `actual` with the golden file at `path`; with `DDX_BLESS=1` in the
/// environment, writes `actual` there instead.
///
/// # Panics
/// When the file is missing or differs (the message shows the differing lines and how to
/// bless), or cannot be written while blessing: this is for tests.
pub fn check_golden(path: impl AsRef<Path>, actual: &str) {
    let path = path.as_ref();
    if std::env::var_os("DDX_BLESS").is_some_and(|v| v == "1") {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create the golden file's folder");
        }
        std::fs::write(path, actual).expect("write the golden file");
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|_| {
        panic!(
            "golden file {} is missing; run the test with DDX_BLESS=1 to write it",
            path.display()
        )
    });
    if expected == actual {
        return;
    }
    let mut diff = String::new();
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    for i in 0..e.len().max(a.len()) {
        match (e.get(i), a.get(i)) {
            (Some(x), Some(y)) if x == y => {}
            (x, y) => {
                if let Some(x) = x {
                    diff.push_str(&format!("{:>5} - {x}\n", i + 1));
                }
                if let Some(y) = y {
                    diff.push_str(&format!("{:>5} + {y}\n", i + 1));
                }
            }
        }
    }
    panic!(
        "{} differs from the golden file (- expected, + actual):\n{diff}\
         run with DDX_BLESS=1 to accept the new output",
        path.display()
    );
}

/// A scalar model over `symbols` symbols named `s0 … s{n−1}`, built from `steps`
/// operations on a growing pool of subexpressions through the model-closure API. Every
/// operation keeps its arguments inside its domain (`log(1 + u²)`, `pow(1 + u², v/2)`,
/// `u / (1 + v²)`, …) so values and derivatives are finite everywhere. With `kinks`, `max`,
/// `min`, `abs` and `select` on a comparison join in (derivatives stay finite but not
/// smooth: finite differences across a kink are wrong, so smooth-only tests leave them
/// out). The same arguments always give the same model.
pub fn smooth_model(seed: u64, symbols: usize, steps: usize, kinks: bool) -> Model {
    use crate::{select, var, Expr};
    let names: Vec<String> = (0..symbols.max(1)).map(|i| format!("s{i}")).collect();
    let built = crate::build(|| {
        let mut rng = Rng::new(seed);
        let mut pool: Vec<Expr> = names.iter().map(|s| var(s)).collect();
        let ops = if kinks { 24 } else { 20 };
        for _ in 0..steps {
            let u = pool[rng.below(pool.len())];
            let v = pool[rng.below(pool.len())];
            let c = 0.5 + rng.unit();
            let e = match rng.below(ops) {
                0 => u + v,
                1 => u - c * v,
                2 => u * v,
                3 => u / (1.0 + v * v),
                4 => u.sin(),
                5 => (c * u).cos(),
                6 => u.tanh().exp(),
                7 => u.atan(),
                8 => u.tanh(),
                9 => u.hypot(1.0),
                10 => (1.0 + u * u).ln(),
                11 => u.erf(),
                12 => u.asinh(),
                13 => (u * u + 1.0).cbrt(),
                14 => (1.0 + u * u).powf(0.5 * v.tanh()),
                15 => u.atan2(1.5 + v * v),
                16 => (u * u + v * v + 0.5).sqrt(),
                17 => u * c + v,
                18 => (0.5 * u.tanh()).atanh() * (u * v).sin(),
                19 => (2.0 + u.sin()).log10() * v,
                20 => u.max(v),
                21 => u.min(c * v),
                22 => (u - v).abs() * u,
                _ => select(u.lt(v), u * v, u.sin() + v),
            };
            pool.push(e);
        }
        // Sum the last few so the output depends on much of the pool.
        let k = pool.len().min(4);
        vec![pool[pool.len() - k..].iter().copied().sum::<Expr>()]
    });
    built.unwrap_or_else(|e| panic!("smooth_model({seed}) failed to build: {e}"))
}
