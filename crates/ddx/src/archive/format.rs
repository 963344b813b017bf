//! The bytes of a saved equation: the header, the body's records, and the checks that turn
//! bytes back into parts an equation can be made of.
//!
//! Layout, little-endian:
//!
//! | bytes | holds |
//! |---|---|
//! | 0..8 | magic `\x89DDXEQN\n` |
//! | 8..12 | format version (`u32`) |
//! | 12..20 | body length (`u64`) |
//! | 20..52 | BLAKE3 hash of bytes 0..20 followed by the body |
//! | 52.. | the body: one [`Body`] in postcard's encoding (varint integers, `f64` as its 8 little-endian bytes) |
//!
//! The body holds the writer's operator table by name (a node's operation is an index into
//! it, so a build that adds or reorders operations still reads the file), the symbols, the
//! model graph, the parameter values bound when it was written (if any), every prepared lane (graph, outputs, input counts, Jacobian pattern,
//! Hessian pattern and colouring), the options (their code-generation identity and
//! policy; not `cache_dir` or `device`, which are the machine's), and each kernel kept with
//! the key it was compiled for and the host fingerprint in that key. A node's arguments are
//! stored as distances back from the node (`i − a ≥ 1`), so small graphs stay small.
//!
//! **Invariant: nothing decoded is used before it is checked.** [`decode`] checks, in
//! order: the length and magic ([`Error::BadArchive`]), the version (the same), the body
//! length and checksum ([`Error::ArchiveCorrupt`]), the body's encoding (every length is
//! bounded by the bytes that remain: serde preallocates at most 1 MiB for a claimed
//! length, and a claim beyond the bytes present runs out of input), and then every part:
//! graphs through [`Graph::from_nodes`] (the IR verifier's per-node check), the model
//! through [`Model::from_parts`], each lane through [`Lane::check_layout`], patterns and
//! colourings through their checked constructors. Lanes are not required to agree with
//! each other or with the model (that would mean rebuilding them): no call relies on one
//! lane's layout to run another (each batch call sizes its blocks from the lane it runs),
//! so lanes that disagree — which only a forged file can hold — answer differently but
//! never reach outside their own outputs, and such an equation saves to a file that
//! loads again.

use super::StoredKernel;
use crate::options::{Backend, Codegen, Lanes, OptLevel, Options};
use ddx_ir::words::{agree, count};
use ddx_ir::{
    Error, Graph, HessianLayout, Lane, LaneKind, Model, Node, NodeId, Op, SeedId, Sparsity,
    SymbolId, NO_ARG,
};
use serde::{Deserialize, Serialize};
use std::path::Path;

const MAGIC: &[u8; 8] = b"\x89DDXEQN\n";
/// The format version this build writes and reads.
/// Version 2 added the parameters (a model's names never differentiated, and each lane's
/// parameter count); version 3 the parameter values bound when it was written; version 4
/// a [`Tail`] after the body. Versions 3 and 4 are read.
pub(crate) const VERSION: u32 = 4;
/// The oldest format version this build reads (its options come back with the default
/// [`Options::answer_limit`]).
const OLDEST: u32 = 3;
pub(super) const HEADER: usize = 52;

/// The body of a file.
#[derive(Serialize, Deserialize)]
struct Body<'a> {
    /// The writing library and version, for messages.
    #[serde(borrow)]
    writer: &'a str,
    /// Whether it is an `Equation<Scalar>` (else `Equation<System>`).
    scalar: bool,
    /// The writer's operator names; a node's operation indexes this table.
    #[serde(borrow)]
    ops: Vec<&'a str>,
    #[serde(borrow)]
    symbols: Vec<&'a str>,
    /// The parameters, in canonical order; `Symbol(n + j)` nodes are parameter `j`.
    #[serde(borrow)]
    params: Vec<&'a str>,
    /// The parameter values bound when it was written (one per parameter), if any.
    bound: Option<Vec<f64>>,
    model: GraphRec,
    lanes: Vec<LaneRec>,
    options: OptionsRec,
    #[serde(borrow)]
    kernels: Vec<KernelRec<'a>>,
}

/// What version 4 added, encoded right after the [`Body`] (so that a version-3 body, which
/// has none, decodes with the same types).
#[derive(Serialize, Deserialize)]
struct Tail {
    /// [`Options::answer_limit`], in values.
    answer_limit: u64,
}

/// A node; an operation's arguments are distances back from the node.
#[derive(Serialize, Deserialize)]
enum NodeRec {
    Const(f64),
    Symbol(u32),
    Seed(u32),
    Unary(u8, u32),
    Binary(u8, u32, u32),
    Ternary(u8, u32, u32, u32),
}

#[derive(Serialize, Deserialize)]
struct GraphRec {
    nodes: Vec<NodeRec>,
    outputs: Vec<u32>,
}

#[derive(Serialize, Deserialize)]
struct PatternRec {
    rows: u32,
    columns: u32,
    cells: Vec<(u32, u32)>,
}

#[derive(Serialize, Deserialize)]
struct HessianRec {
    pattern: PatternRec,
    /// One per symbol; `None` for a symbol off the pattern.
    colours: Vec<Option<u32>>,
}

#[derive(Serialize, Deserialize)]
struct LaneRec {
    kind: u8,
    contract: bool,
    symbols: u32,
    params: u32,
    seeds: u32,
    values: u32,
    graph: GraphRec,
    pattern: Option<PatternRec>,
    hessian: Option<HessianRec>,
}

#[derive(Serialize, Deserialize)]
struct OptionsRec {
    backend: u8,
    points: u64,
    lanes: u8,
    width: u8,
    opt_level: u8,
    contract: bool,
    warm_points: u64,
    hot_points: u64,
    retain_object: bool,
}

#[derive(Serialize, Deserialize)]
struct KernelRec<'a> {
    kind: u8,
    level: u8,
    key: [u8; 32],
    #[serde(borrow)]
    fingerprint: &'a str,
    #[serde(borrow, with = "bytes")]
    code: &'a [u8],
}

/// Byte strings as serde bytes (one length, then the bytes), borrowed when read.
mod bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(b: &&[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(b)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<&'de [u8], D::Error> {
        <&[u8]>::deserialize(d)
    }
}

/// The parts of a checked file.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub(crate) scalar: bool,
    pub(crate) model: Model,
    /// `(contract, lane)`, each checked against the model.
    pub(crate) lanes: Vec<(bool, Lane)>,
    pub(crate) options: Options,
    /// Each for a lane of `lanes` in the variant `options` select.
    pub(crate) kernels: Vec<StoredKernel>,
    /// The bound parameter values (one per parameter), if it was written bound.
    pub(crate) bound: Option<Vec<f64>>,
}

/// What is to be written.
pub(crate) struct Parts<'a> {
    pub(crate) scalar: bool,
    pub(crate) model: &'a Model,
    pub(crate) lanes: Vec<(bool, &'a Lane)>,
    pub(crate) options: &'a Options,
    pub(crate) kernels: &'a [StoredKernel],
    pub(crate) bound: Option<&'a [f64]>,
}

fn u32_of(n: usize) -> u32 {
    // Graph sizes, symbol and seed counts are below `u32::MAX` (node ids are `u32`).
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn graph_rec(graph: &Graph, outputs: &[NodeId]) -> GraphRec {
    let nodes = graph
        .nodes()
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let back = |a: NodeId| u32_of(i - a.index());
            match *node {
                Node::Const(c) => NodeRec::Const(c.value()),
                Node::Symbol(s) => NodeRec::Symbol(s.0),
                Node::Seed(s) => NodeRec::Seed(s.0),
                Node::Apply(op, a) => match op.arity() {
                    1 => NodeRec::Unary(op as u8, back(a[0])),
                    2 => NodeRec::Binary(op as u8, back(a[0]), back(a[1])),
                    _ => NodeRec::Ternary(op as u8, back(a[0]), back(a[1]), back(a[2])),
                },
            }
        })
        .collect();
    GraphRec {
        nodes,
        outputs: outputs.iter().map(|o| o.0).collect(),
    }
}

fn pattern_rec(p: &Sparsity) -> PatternRec {
    PatternRec {
        rows: u32_of(p.rows()),
        columns: u32_of(p.columns()),
        cells: p
            .entries()
            .iter()
            .map(|c| (u32_of(c.row), u32_of(c.column)))
            .collect(),
    }
}

fn options_rec(o: &Options) -> OptionsRec {
    let (lanes, width) = match o.codegen.lanes {
        Lanes::Derived => (0, 0),
        Lanes::Scalar => (1, 0),
        Lanes::Exactly(w) => (2, w),
    };
    OptionsRec {
        backend: match o.backend {
            Backend::Interpret => 0,
            Backend::Compile => 1,
            Backend::Adapt => 2,
            Backend::Device => 3,
        },
        points: o.points as u64,
        lanes,
        width,
        opt_level: level_tag(o.codegen.opt_level),
        contract: o.codegen.contract,
        warm_points: o.warm_points,
        hot_points: o.hot_points,
        retain_object: o.retain_object,
    }
}

fn level_tag(level: OptLevel) -> u8 {
    match level {
        OptLevel::Off => 0,
        OptLevel::Speed => 1,
    }
}

fn level_of(tag: u8) -> Option<OptLevel> {
    match tag {
        0 => Some(OptLevel::Off),
        1 => Some(OptLevel::Speed),
        _ => None,
    }
}

/// The bytes of a file holding `parts`.
///
/// # Errors
/// [`Error::ArchiveIo`] (with `path`) if the encoder fails, which it does not for parts an
/// equation holds.
pub(crate) fn encode(parts: &Parts<'_>, path: &Path) -> Result<Vec<u8>, Error> {
    if let Some(tag) = ddx_ir::user::first_call(parts.model.graph()) {
        // A call names a function of this process; a file could not call it back.
        return Err(ddx_ir::user::unsupported(tag, "a saved equation"));
    }
    let body = Body {
        // `ddx::VERSION`, spelled so that it stays a literal.
        writer: concat!("ddx ", env!("CARGO_PKG_VERSION")),
        scalar: parts.scalar,
        ops: Op::ALL.iter().map(|op| op.name()).collect(),
        symbols: parts.model.symbols().iter().map(String::as_str).collect(),
        params: parts
            .model
            .parameters()
            .iter()
            .map(String::as_str)
            .collect(),
        bound: parts.bound.map(<[f64]>::to_vec),
        model: graph_rec(parts.model.graph(), parts.model.outputs()),
        lanes: parts
            .lanes
            .iter()
            .map(|&(contract, lane)| LaneRec {
                kind: lane.kind as u8,
                contract,
                symbols: u32_of(lane.symbols),
                params: u32_of(lane.params),
                seeds: u32_of(lane.seeds),
                values: u32_of(lane.values),
                graph: graph_rec(&lane.graph, &lane.outputs),
                pattern: lane.pattern.as_ref().map(pattern_rec),
                hessian: lane.hessian.as_ref().map(|h| HessianRec {
                    pattern: pattern_rec(h.pattern()),
                    colours: (0..h.symbols())
                        .map(|j| h.colouring().colour(j).map(u32_of))
                        .collect(),
                }),
            })
            .collect(),
        options: options_rec(parts.options),
        kernels: parts
            .kernels
            .iter()
            .map(|k| KernelRec {
                kind: k.kind as u8,
                level: level_tag(k.level),
                key: k.key,
                fingerprint: &k.fingerprint,
                code: &k.code,
            })
            .collect(),
    };
    let tail = Tail {
        answer_limit: parts.options.answer_limit as u64,
    };
    let encoded = postcard::to_allocvec(&body)
        .and_then(|body| postcard::to_extend(&tail, body))
        .map_err(|e| Error::ArchiveIo {
            path: path.to_path_buf(),
            detail: format!("cannot encode the equation: {e}"),
        })?;
    Ok(frame(&encoded))
}

/// `body`, an encoded equation, framed as a file: the magic, [`VERSION`], the body's
/// length and the checksum of those and the body (the [`HEADER`] bytes), then the body.
pub(crate) fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER.saturating_add(body.len()));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    let sum = checksum(&out, body);
    out.extend_from_slice(&sum);
    out.extend_from_slice(body);
    debug_assert_eq!(out.len(), HEADER + body.len());
    out
}

fn checksum(head: &[u8], body: &[u8]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(head);
    h.update(body);
    *h.finalize().as_bytes()
}

/// Checks `bytes` and answers the parts they hold; `path` names them in errors (empty for
/// bytes in memory).
///
/// # Errors
/// [`Error::BadArchive`] for bytes that are not a ddx equation file or are of another
/// format version; [`Error::ArchiveCorrupt`] for a length, checksum, encoding or structure
/// that does not hold.
pub(crate) fn decode(bytes: &[u8], path: &Path) -> Result<Decoded, Error> {
    let bad = |detail: String| Error::BadArchive {
        path: path.to_path_buf(),
        detail,
    };
    let corrupt = |detail: String| Error::ArchiveCorrupt {
        path: path.to_path_buf(),
        detail,
    };
    // The magic first, as far as the bytes reach: a prefix of a header is a file cut short.
    let magic = bytes.len().min(MAGIC.len());
    if bytes.is_empty() || bytes[..magic] != MAGIC[..magic] {
        let what = if bytes.is_empty() { "empty: " } else { "" };
        return Err(bad(format!("{what}not a ddx equation file (no ddx magic)")));
    }
    let truncated = || {
        corrupt(format!(
            "truncated to {}: the magic is there, but the file is shorter than its \
             {HEADER}-byte header",
            count(bytes.len(), "byte")
        ))
    };
    if bytes.len() < 12 {
        return Err(truncated());
    }
    let word = |at: usize| -> [u8; 4] { [bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]] };
    let version = u32::from_le_bytes(word(8));
    if !(OLDEST..=VERSION).contains(&version) {
        return Err(bad(format!(
            "format version {version}; this build of ddx reads versions {OLDEST} to {VERSION}"
        )));
    }
    let Some(header) = bytes.get(..HEADER) else {
        return Err(truncated());
    };
    let body = &bytes[HEADER..];
    let mut len = [0u8; 8];
    len.copy_from_slice(&header[12..20]);
    let len = u64::from_le_bytes(len);
    if u64::try_from(body.len()).ok() != Some(len) {
        return Err(corrupt(format!(
            "the header gives a body of {}; {} follow{} it",
            count(len, "byte"),
            body.len(),
            agree(body.len(), "s", "")
        )));
    }
    if header[20..52] != checksum(&header[..20], body) {
        return Err(corrupt("the checksum does not match the contents".into()));
    }
    let (body, rest): (Body<'_>, &[u8]) =
        postcard::take_from_bytes(body).map_err(|e| corrupt(format!("undecodable body: {e}")))?;
    let (tail, rest) = if version >= 4 {
        let (tail, rest): (Tail, &[u8]) = postcard::take_from_bytes(rest)
            .map_err(|e| corrupt(format!("undecodable tail: {e}")))?;
        (Some(tail), rest)
    } else {
        (None, rest)
    };
    if !rest.is_empty() {
        return Err(corrupt(format!(
            "{} after the body",
            count(rest.len(), "byte")
        )));
    }
    let mut decoded = parts(body).map_err(|e| match e {
        Refusal::Bad(d) => bad(d),
        Refusal::Corrupt(d) => corrupt(d),
    })?;
    if let Some(tail) = tail {
        // A limit past this machine's address space cannot be reached here: the largest.
        decoded.options.answer_limit = usize::try_from(tail.answer_limit).unwrap_or(usize::MAX);
    }
    Ok(decoded)
}

/// `bytes` (a file of this version) as the version-3 file of the same equation: no tail,
/// the header's version, length and checksum rewritten. For the tests of reading old files.
#[cfg(test)]
pub(crate) fn as_version_3(bytes: &[u8]) -> Vec<u8> {
    let body = &bytes[HEADER..];
    let (_, tail): (Body<'_>, &[u8]) = postcard::take_from_bytes(body).expect("a body");
    let body = &body[..body.len() - tail.len()];
    let mut out = Vec::with_capacity(HEADER + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    let sum = checksum(&out, body);
    out.extend_from_slice(&sum);
    out.extend_from_slice(body);
    out
}

/// Why a decoded body is refused.
enum Refusal {
    /// A format this build does not read (an operation it does not have).
    Bad(String),
    Corrupt(String),
}

impl From<String> for Refusal {
    fn from(s: String) -> Self {
        Refusal::Corrupt(s)
    }
}

/// The parts of a decoded body, every one checked.
fn parts(body: Body<'_>) -> Result<Decoded, Refusal> {
    let ops = body
        .ops
        .iter()
        .map(|name| {
            Op::ALL
                .into_iter()
                .find(|op| op.name() == *name)
                .ok_or_else(|| {
                    Refusal::Bad(format!(
                        "written by {} with operation `{}`, which this build does not have",
                        ddx_ir::text::quoted(body.writer),
                        ddx_ir::text::quoted(name)
                    ))
                })
        })
        .collect::<Result<Vec<Op>, Refusal>>()?;
    let symbols: Vec<String> = body.symbols.iter().map(|s| s.to_string()).collect();
    let params: Vec<String> = body.params.iter().map(|s| s.to_string()).collect();
    let (n, p) = (symbols.len(), params.len());
    let (graph, outputs) = graph(&body.model, &ops, n + p, 0).map_err(|e| format!("model: {e}"))?;
    let m = outputs.len();
    let model = Model::from_parts_with_params(graph, outputs, symbols, params)
        .map_err(|e| format!("model: {e}"))?;
    if let Some(b) = &body.bound {
        if b.len() != p {
            return Err(format!("{} bound values for {p} parameters", b.len()).into());
        }
    }
    if body.scalar && m != 1 {
        return Err(format!("a scalar equation with {m} outputs").into());
    }
    let mut lanes: Vec<(bool, Lane)> = Vec::with_capacity(body.lanes.len());
    for rec in &body.lanes {
        let lane = lane(rec, &ops, m, n, p)?;
        if lanes
            .iter()
            .any(|(c, l)| *c == rec.contract && l.kind == lane.kind)
        {
            return Err(format!("the {} lane is stored twice", lane.kind.name()).into());
        }
        lanes.push((rec.contract, lane));
    }
    let options = options(&body.options)?;
    let mut kernels = Vec::with_capacity(body.kernels.len());
    for k in &body.kernels {
        let kind = kind_of(k.kind)?;
        let level = level_of(k.level).ok_or_else(|| format!("kernel level {}", k.level))?;
        let contract = options.codegen.contract;
        if !lanes.iter().any(|(c, l)| *c == contract && l.kind == kind) {
            return Err(format!("a {} kernel without its lane", kind.name()).into());
        }
        if kernels.iter().any(|s: &StoredKernel| s.kind == kind) {
            return Err(format!("the {} kernel is stored twice", kind.name()).into());
        }
        kernels.push(StoredKernel {
            kind,
            level,
            key: k.key,
            fingerprint: k.fingerprint.to_string(),
            code: k.code.to_vec(),
        });
    }
    Ok(Decoded {
        scalar: body.scalar,
        model,
        lanes,
        options,
        kernels,
        bound: body.bound,
    })
}

fn kind_of(tag: u8) -> Result<LaneKind, String> {
    LaneKind::ALL
        .get(usize::from(tag))
        .copied()
        .ok_or_else(|| format!("lane kind {tag}"))
}

/// A graph and its outputs from `rec`, checked over `symbols` symbols and `seeds` seeds.
fn graph(
    rec: &GraphRec,
    ops: &[Op],
    symbols: usize,
    seeds: usize,
) -> Result<(Graph, Vec<NodeId>), String> {
    // Node ids are `u32`, and `u32::MAX` marks an unused argument.
    if rec.nodes.len() >= u32::MAX as usize {
        return Err(format!("{} nodes", rec.nodes.len()));
    }
    let mut nodes = Vec::with_capacity(rec.nodes.len());
    for (i, n) in rec.nodes.iter().enumerate() {
        nodes.push(match *n {
            NodeRec::Const(v) => Node::Const(ddx_ir::Constant::new(v)),
            NodeRec::Symbol(s) => Node::Symbol(SymbolId(s)),
            NodeRec::Seed(s) => Node::Seed(SeedId(s)),
            NodeRec::Unary(op, a) => apply(ops, i, op, [a, 0, 0], 1)?,
            NodeRec::Binary(op, a, b) => apply(ops, i, op, [a, b, 0], 2)?,
            NodeRec::Ternary(op, a, b, c) => apply(ops, i, op, [a, b, c], 3)?,
        });
    }
    let graph = Graph::from_nodes(nodes, symbols, seeds).map_err(|v| v.to_string())?;
    let outputs = rec.outputs.iter().map(|&o| NodeId(o)).collect();
    Ok((graph, outputs))
}

/// Node `i`: operation `op` (an index into `ops`) of the first `arity` of `backs`, each
/// a distance back from `i`.
#[inline]
fn apply(ops: &[Op], i: usize, op: u8, backs: [u32; 3], arity: usize) -> Result<Node, String> {
    let Some(&found) = ops.get(usize::from(op)) else {
        return Err(bad_node(i, format!("operation {op} of {}", ops.len())));
    };
    if found.arity() != arity {
        return Err(bad_node(
            i,
            format!("{found} with {}", count(arity, "argument")),
        ));
    }
    let mut args = [NO_ARG; 3];
    for (slot, &back) in args.iter_mut().zip(&backs[..arity]) {
        let back = back as usize;
        if back == 0 || back > i {
            return Err(bad_node(i, format!("an argument {back} nodes back")));
        }
        *slot = NodeId::from_index(i - back);
    }
    Ok(Node::Apply(found, args))
}

#[cold]
fn bad_node(i: usize, what: String) -> String {
    format!("n{i}: {what}")
}

fn pattern(rec: &PatternRec) -> Result<Sparsity, String> {
    let pairs = rec.cells.iter().map(|&(r, c)| (r as usize, c as usize));
    Sparsity::try_new(rec.rows as usize, rec.columns as usize, pairs)
        .ok_or_else(|| "a pattern's cells are out of order or out of range".to_string())
}

/// A lane from `rec`, checked against a model of `m` outputs, `n` symbols and `p`
/// parameters.
fn lane(rec: &LaneRec, ops: &[Op], m: usize, n: usize, p: usize) -> Result<Lane, String> {
    let kind = kind_of(rec.kind)?;
    let name = kind.name();
    let seeds = rec.seeds as usize;
    if rec.symbols as usize != n {
        return Err(format!(
            "the {name} lane has {} of {n}",
            count(rec.symbols, "symbol")
        ));
    }
    if rec.params as usize != p {
        return Err(format!(
            "the {name} lane has {} of {p}",
            count(rec.params, "parameter")
        ));
    }
    let (graph, outputs) =
        graph(&rec.graph, ops, n + p, seeds).map_err(|e| format!("{name} lane: {e}"))?;
    let hessian = match &rec.hessian {
        Some(h) => Some(
            HessianLayout::from_colouring(pattern(&h.pattern)?, &h.colours)
                .map_err(|e| format!("{name} lane: {e}"))?,
        ),
        None => None,
    };
    let lane = Lane {
        kind,
        graph,
        outputs,
        symbols: n,
        params: p,
        seeds,
        values: rec.values as usize,
        pattern: rec.pattern.as_ref().map(pattern).transpose()?,
        hessian,
    };
    lane.check_layout(m, n, p)?;
    Ok(lane)
}

fn options(rec: &OptionsRec) -> Result<Options, String> {
    let backend = match rec.backend {
        0 => Backend::Interpret,
        1 => Backend::Compile,
        2 => Backend::Adapt,
        3 => Backend::Device,
        b => return Err(format!("backend {b}")),
    };
    let lanes = match (rec.lanes, rec.width) {
        (0, _) => Lanes::Derived,
        (1, _) => Lanes::Scalar,
        (2, w) => Lanes::Exactly(w),
        (l, _) => return Err(format!("lane width kind {l}")),
    };
    let opt_level =
        level_of(rec.opt_level).ok_or_else(|| format!("opt level {}", rec.opt_level))?;
    let mut o = Options::with_backend(backend);
    o.points = usize::try_from(rec.points).map_err(|_| format!("{} points", rec.points))?;
    o.codegen = Codegen {
        lanes,
        opt_level,
        contract: rec.contract,
    };
    o.warm_points = rec.warm_points;
    o.hot_points = rec.hot_points;
    o.retain_object = rec.retain_object;
    Ok(o)
}
