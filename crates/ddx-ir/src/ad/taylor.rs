//! Truncated Taylor arithmetic over the value graph.
//!
//! **Input**: a verified value graph, a point `x₀`, a direction `v` and a degree `d`
//! (at most [`MAX_DEGREE`]).
//! **Output**: for each requested node `y`, the coefficients `y₀ … y_d` of the
//! univariate function `t ↦ y(x₀ + t·v)` expanded at `t = 0`, so that
//! `dᵏ/dtᵏ y = k!·y_k`; or [`Error::UnsupportedScalar`] where an operation has no
//! expansion there. Nothing is written to the graph: this is an evaluation in series
//! arithmetic, one loop up the nodes (no recursion), each node's `d + 1` coefficients
//! computed from its arguments'.
//!
//! The value coefficient of every node is computed by [`crate::math::eval`], so `y₀` is
//! bit for bit what the value lane answers.
//!
//! **Recurrences** (A. Griewank and A. Walther, *Evaluating Derivatives: Principles and
//! Techniques of Algorithmic Differentiation*, 2nd ed., SIAM 2008, chapter 13, "Taylor
//! and Tensor Coefficients", table 13.1 and 13.2): with `c = a·b`, `c_k = Σ_{j≤k} a_j
//! b_{k−j}`; `c = a/b`, `c_k = (a_k − Σ_{j<k} c_j b_{k−j}) / b₀`; `c = √a`,
//! `c_k = (a_k − Σ_{0<j<k} c_j c_{k−j}) / (2c₀)`; `c = aʳ` (constant `r`),
//! `c_k = Σ_{j<k} (r(k−j) − j) a_{k−j} c_j / (k a₀)`; and for `c = F(a)` with `F' = h(a)`,
//! `c_k = (1/k) Σ_{1≤j≤k} j a_j h_{k−j}`, where `h`'s series is formed by the same
//! arithmetic (coupled, for `exp`, `sin`/`cos`, `sinh`/`cosh`, `tan`, `tanh`, whose
//! derivative is a function of the result).
//!
//! **What moves.** Whether a node *moves with `t`* is decided from the graph, once per
//! sweep, never from its truncated coefficients: `x·x` at `x₀ = 0` has the coefficients
//! `[0, 0]` at degree 1, yet it moves, and `1/(x·x)` has a pole there at every degree. A
//! node moves exactly when forward mode gives it a tangent (`ad::forward`, through the
//! structural zeros of `ad::rules`): a symbol moves when its direction is not zero; an
//! operation moves when one of its arguments moves along an edge whose partial is not
//! structurally zero — so not through `sign`, a comparison or a `select` condition, not
//! through a factor of `mul`/`fma` whose other factor is the literal `0`, not through
//! `pow`'s base under the literal exponent `0` or its exponent over the literal base `0`.
//!
//! **Conventions** (the repository's [ARCHITECTURE.md, "Semantics"](https://github.com/ddx-ad/ddx/blob/main/ARCHITECTURE.md#semantics)), carried to every order so that these derivatives agree
//! with nested first derivatives and the Hessian lane:
//! - a node that does not move is the constant `[f(a₀), 0, …]`, and an argument that does
//!   not move contributes nothing (no `0·∞`): a factor that does not move scales the
//!   other's series;
//! - a node that is a polynomial in `t` (symbols, sums, products, negation, `abs`, a
//!   quotient by what does not move, a `select`/`max`/`min` of such) has its degree
//!   tracked, and its coefficients past the degree are structural zeros that multiply
//!   nothing: so a NaN or infinite value (`log(x)` at `x = −1` in `log(x)·x`) reaches a
//!   coefficient exactly where forward mode's tangents would carry it, as in the Hessian;
//! - `abs`: `c_k = sign(a₀)·a_k`, so every derivative is `0` at `a₀ = 0` (`abs'(0) = 0`,
//!   `sign' = 0`); `sign` and comparisons: constants;
//! - `max`/`min`: the operand answered gives all its coefficients; at a tie each gives
//!   half (`c_k = (a_k + b_k)/2`); a NaN operand gives none unless both are NaN;
//! - `select(c, t, f)`: the taken arm's series; `c`'s higher coefficients are ignored and
//!   the untaken arm's never reach the result, even where they are NaN (the `select`
//!   moves when either arm does);
//! - `pow(a, b)` with an exponent that does not move: `b₀ = 0` answers `[1, 0, …]`; a base
//!   with `a₀ = 0` expands only when `b₀` is a natural number (by repeated multiplication:
//!   a polynomial has a series). With a base that does not move and `a₀ = 0`: `[0ᵇ⁰, 0, …]`
//!   (`∂/∂b = 0` at `a = 0`);
//! - `atan2` and `hypot` at the origin (`a₀ = b₀ = 0`): every derivative `0`.
//!
//! **Where there is no expansion**, the sweep answers [`Error::UnsupportedScalar`] rather
//! than a number, at every degree `d ≥ 1` (the library's `univariate_derivative` then
//! answers through the gradient, Hessian and tensor lanes instead, see `ARCHITECTURE.md`,
//! "Taylor at branch points"): at a branch point or pole of an operation whose
//! argument moves — if that node's coefficients reach a requested root. A node that cannot
//! be expanded is carried as "no series" (its value still known) through the operations
//! that read it, but not through those that do not: the untaken arm of a `select`, the
//! operand a `max`/`min` does not answer, the argument of `sign` or a comparison, an
//! argument along a structurally zero edge (above).
//! Exactly these, each with a moving argument: `sqrt`, `cbrt`, `log`, `log10`, `log2`,
//! `recip` at `a₀ = 0`; `log1p` at `a₀ = −1`; `powi` with a negative exponent at `a₀ = 0`; `pow(a, b)` with a moving base at `a₀ = 0`, unless `b` does not move and `b₀`
//! is `0` or a natural number; division by a moving `b` with `b₀ = 0`; `asin`, `acos` at
//! `a₀ = ±1`; `acosh` at `a₀ = ±1`; `atanh` at `a₀ = ±1`; and `atan2` where `a₀² + b₀²`
//! underflows to zero away from the origin. Every other singularity (a NaN or infinite
//! value, an argument outside an operation's domain, a division by a zero that does not
//! move) propagates as IEEE arithmetic does, as in the other lanes.

use crate::{math, Error, Graph, Node, NodeId, Op};

/// The highest degree [`expand`] computes: `170`, the largest `k` whose `k!` is finite in
/// `f64` (`171!` overflows), so the highest order whose derivative `k!·y_k` can be a
/// finite number. Every coefficient array is `degree + 1` long and the recurrences cost
/// `O(degree²)` per node, so the bound also keeps a sweep's memory and time proportional
/// to the graph.
pub const MAX_DEGREE: usize = 170;

/// The Taylor coefficients `0 ..= degree` of `roots` along `x(t) = x0 + t·direction`.
///
/// `x0` and `direction` hold one value per symbol (canonical order); seeds, if the graph
/// has any, are held constant at `seeds`.
///
/// # Errors
/// [`Error::OrderTooHigh`] when `degree` exceeds [`MAX_DEGREE`];
/// [`Error::UnsupportedScalar`] at an operation that has no expansion at the point (see
/// the module doc).
///
/// # Panics
/// If a symbol or seed index is outside `x0`, `direction` or `seeds` (a bug in the
/// caller, which sizes them from the graph's model).
pub fn expand(
    graph: &Graph,
    roots: &[NodeId],
    x0: &[f64],
    direction: &[f64],
    seeds: &[f64],
    degree: usize,
) -> Result<Vec<Vec<f64>>, Error> {
    if degree > MAX_DEGREE {
        return Err(Error::OrderTooHigh {
            order: degree,
            max: MAX_DEGREE,
        });
    }
    let w = degree + 1;
    let top = roots.iter().map(|r| r.index() + 1).max().unwrap_or(0);
    let mut coef = vec![0.0; top * w];
    // Whether each node moves with t (module doc), decided from the graph alone.
    let mut moves = vec![false; top];
    // The operation whose expansion failed at or below each node, if one did and its
    // coefficients are used. The value coefficient is kept even then.
    let mut failed: Vec<Option<Op>> = vec![None; top];
    // The degree of each node as a polynomial in t ([`FULL`] when it is none): its
    // coefficients past it are structural zeros ([`term`]).
    let mut deg = vec![0usize; top];
    for i in 0..top {
        let node = graph.node(NodeId::from_index(i));
        let out: Vec<f64> = match *node {
            Node::Const(c) => constant(c.value(), w),
            Node::Seed(s) => constant(seeds[s.index()], w),
            Node::Symbol(s) => {
                let v = direction[s.index()];
                moves[i] = v != 0.0;
                deg[i] = usize::from(moves[i]);
                let mut c = constant(x0[s.index()], w);
                if degree >= 1 {
                    c[1] = v;
                }
                c
            }
            // No value of its own: the call reading it reads its arguments.
            Node::Apply(Op::Pack, _) => constant(f64::NAN, w),
            Node::Apply(Op::Call, args) if graph.is_packed_call(NodeId::from_index(i)) => {
                let leaves: Vec<NodeId> = graph.call_args(NodeId::from_index(i)).collect();
                let x: Vec<f64> = leaves.iter().map(|a| coef[a.index() * w]).collect();
                let tag = coef[args[0].index() * w];
                let value = crate::user::call_slice(tag, &x);
                moves[i] = leaves.iter().any(|a| moves[a.index()]);
                if !moves[i] || degree == 0 {
                    constant(value, w)
                } else {
                    let inherited = leaves
                        .iter()
                        .filter(|a| moves[a.index()])
                        .find_map(|a| failed[a.index()]);
                    deg[i] = FULL;
                    let a: Vec<&[f64]> = leaves
                        .iter()
                        .map(|a| &coef[a.index() * w..(a.index() + 1) * w])
                        .collect();
                    let c = inherited
                        .map_or_else(|| call_packed(tag, &a, &x, value).ok_or(Op::Call), Err);
                    c.unwrap_or_else(|at| {
                        failed[i] = Some(at);
                        let mut c = vec![f64::NAN; w];
                        c[0] = value;
                        c
                    })
                }
            }
            Node::Apply(op, args) => {
                let args = &args[..op.arity()];
                let mut x = [0.0; 3];
                for (xi, a) in x.iter_mut().zip(args) {
                    *xi = coef[a.index() * w];
                }
                let value = math::eval(op, &x);
                let live = live(graph, op, args, &moves);
                moves[i] = live.iter().any(|&l| l);
                if !moves[i] || degree == 0 {
                    // Nothing moves into this node (or only the value is asked): no
                    // argument's higher coefficients are read, so none's failure either.
                    constant(value, w)
                } else {
                    let arg = |k: usize| {
                        let a = args[k].index() * w;
                        &coef[a..a + w]
                    };
                    let a: [&[f64]; 3] = [
                        arg(0),
                        if op.arity() > 1 { arg(1) } else { &[] },
                        if op.arity() > 2 { arg(2) } else { &[] },
                    ];
                    let a = &a[..op.arity()];
                    // A failure below is this node's if it reads that argument here.
                    let read = used(op, a);
                    let inherited = (0..op.arity())
                        .filter(|&k| read[k] && live[k])
                        .find_map(|k| failed[args[k].index()]);
                    let mut d = [0; 3];
                    for (dk, arg) in d.iter_mut().zip(args) {
                        *dk = deg[arg.index()];
                    }
                    deg[i] = degree_of(op, d, live);
                    match inherited.map_or_else(|| apply(op, a, d, live, value), Err) {
                        Ok(c) => c,
                        Err(at) => {
                            failed[i] = Some(at);
                            deg[i] = FULL;
                            let mut c = vec![f64::NAN; w];
                            c[0] = value;
                            c
                        }
                    }
                }
            }
        };
        coef[i * w..(i + 1) * w].copy_from_slice(&out);
    }
    roots
        .iter()
        .map(|r| match failed[r.index()] {
            Some(op) => Err(Error::UnsupportedScalar { op: op.name() }),
            None => Ok(coef[r.index() * w..(r.index() + 1) * w].to_vec()),
        })
        .collect()
}

/// The degree in `t` of `op` over arguments of degrees `d` (a node that does not move
/// has degree 0), or [`FULL`].
fn degree_of(op: Op, d: [usize; 3], live: [bool; 3]) -> usize {
    let live_deg = |k: usize| if live[k] { d[k] } else { 0 };
    match op {
        Op::Neg | Op::Abs => d[0],
        Op::Add | Op::Sub | Op::Max | Op::Min => live_deg(0).max(live_deg(1)),
        Op::Select => live_deg(1).max(live_deg(2)),
        Op::Mul => live_deg(0).saturating_add(live_deg(1)),
        Op::Fma => live_deg(0).saturating_add(live_deg(1)).max(live_deg(2)),
        Op::Div if !live[1] => d[0],
        _ => FULL,
    }
}

/// Which arguments of `op(args)` move into it: those that move along an edge whose
/// partial is not structurally zero — the edges `ad::forward` carries a tangent along
/// (`ad::rules`): none of `sign` and the comparisons, not `select`'s condition, not a
/// factor of `mul`/`fma` whose other factor is the literal `0`, not `pow`'s base under
/// the literal exponent `0` nor its exponent over the literal base `0`.
fn live(graph: &Graph, op: Op, args: &[NodeId], moves: &[bool]) -> [bool; 3] {
    let m = |k: usize| moves[args[k].index()];
    let zero = |k: usize| graph.constant_of(args[k]) == Some(0.0);
    match op {
        Op::Sign | Op::Lt | Op::Le | Op::Eq | Op::Ne | Op::Hold => [false; 3],
        Op::Select => [false, m(1), m(2)],
        Op::Call => [false, m(1), m(2)],
        Op::Mul | Op::Pow => [m(0) && !zero(1), m(1) && !zero(0), false],
        Op::Powi => [m(0) && !zero(1), false, false],
        Op::Fma => [m(0) && !zero(1), m(1) && !zero(0), m(2)],
        _ => {
            let mut l = [false; 3];
            for (k, lk) in l.iter_mut().enumerate().take(args.len()) {
                *lk = m(k);
            }
            l
        }
    }
}

/// Which arguments' higher coefficients `op` reads at this point: all of them, except
/// that `select` reads only the arm taken, `max`/`min` only the operand(s) answered, and
/// `sign` and the comparisons none. An argument that could not be expanded matters only
/// if it is read — the untaken arm of a `select` never reaches the result.
fn used(op: Op, a: &[&[f64]]) -> [bool; 3] {
    match op {
        Op::Sign | Op::Lt | Op::Le | Op::Eq | Op::Ne => [false; 3],
        Op::Select => {
            let t = math::select(a[0][0], 1.0, 0.0) == 1.0;
            [false, t, !t]
        }
        Op::Max | Op::Min => {
            let wa = tie_weight(op, a[0][0], a[1][0]);
            [wa != 0.0, wa != 1.0, false]
        }
        _ => [true; 3],
    }
}

/// The share of `max(a, b)`'s (or `min`'s) derivative that goes to `a`, as the rule
/// table gives it: `1` when `a` is answered outright, `½` at a tie, `0` otherwise; a NaN
/// operand is answered only when both are NaN.
fn tie_weight(op: Op, a: f64, b: f64) -> f64 {
    let wins = if op == Op::Max { b < a } else { a < b };
    if wins {
        1.0
    } else if a == b {
        0.5
    } else if b.is_nan() {
        1.0
    } else {
        0.0
    }
}

/// `[v, 0, 0, …]`, `w` long.
fn constant(v: f64, w: usize) -> Vec<f64> {
    let mut c = vec![0.0; w];
    c[0] = v;
    c
}

/// The series of `op` applied to the argument series `a` (degree at least 1), whose value
/// is `value`, or `Err(op)` where `op` has no expansion at this point. `live` says which
/// arguments move into the node ([`live`]); at least one does, so every argument of a
/// unary operation, and every series formed from it, moves.
fn apply(
    op: Op,
    a: &[&[f64]],
    deg: [usize; 3],
    live: [bool; 3],
    value: f64,
) -> Result<Vec<f64>, Op> {
    let da = deg[0];
    let w = a[0].len();
    let mut x = [0.0; 3];
    for (xi, ai) in x.iter_mut().zip(a) {
        *xi = ai[0];
    }
    let mut c = match op {
        Op::Neg => a[0].iter().map(|v| -v).collect(),
        // The value alone: a held argument does not move.
        Op::Hold => {
            let mut c = vec![0.0; w];
            c[0] = x[0];
            c
        }
        Op::Add => zip(a[0], a[1], |x, y| x + y),
        Op::Sub => zip(a[0], a[1], |x, y| x - y),
        // A factor that does not move is a constant: it scales the other's series, and
        // its own zero coefficients never meet the other's (NaN or infinite) ones.
        Op::Mul if !live[1] => scale(a[0], x[1]),
        Op::Mul if !live[0] => scale(a[1], x[0]),
        Op::Mul => mul_deg(a[0], da, a[1], deg[1]),
        Op::Div => div(a[0], a[1], deg[1], live[1]).ok_or(op)?,
        Op::Fma => {
            let p = if !live[1] {
                scale(a[0], x[1])
            } else if !live[0] {
                scale(a[1], x[0])
            } else {
                mul_deg(a[0], da, a[1], deg[1])
            };
            zip(&p, a[2], |x, y| x + y)
        }
        Op::Exp => exp(a[0], da, value),
        Op::Sin => sin_cos(a[0], da, value, math::cos(x[0]), 1.0).0,
        Op::Cos => sin_cos(a[0], da, math::sin(x[0]), value, 1.0).1,
        Op::Sinh => sin_cos(a[0], da, value, math::cosh(x[0]), -1.0).0,
        Op::Cosh => sin_cos(a[0], da, math::sinh(x[0]), value, -1.0).1,
        Op::Tan => tan_tanh(a[0], da, value, 1.0, 1.0 + value * value),
        Op::Tanh => tan_tanh(a[0], da, value, -1.0, sech2(x[0])),
        Op::Log => integrate(a[0], da, value, &recip_deg(a[0], da).ok_or(op)?),
        Op::Log10 => {
            let b = scale(a[0], std::f64::consts::LN_10);
            integrate(a[0], da, value, &recip(&b).ok_or(op)?)
        }
        Op::Sqrt => sqrt(a[0], value).ok_or(op)?,
        Op::Cbrt if a[0][0] == 0.0 => return Err(op),
        Op::Cbrt => pow_const(a[0], da, 1.0 / 3.0, value),
        Op::Asin | Op::Acos => {
            // (1 − a²)^(−1/2), negated for acos.
            let one_minus = one_minus_square(a[0]);
            let root = sqrt(&one_minus, math::pow(one_minus[0], 0.5));
            let h = root.and_then(|r| recip(&r)).ok_or(op)?;
            let h = if op == Op::Acos { scale(&h, -1.0) } else { h };
            integrate(a[0], da, value, &h)
        }
        Op::Atan => {
            let d = add_to(1.0, &mul(a[0], a[0]));
            integrate(a[0], da, value, &recip(&d).ok_or(op)?)
        }
        Op::Asinh => {
            // 1/hypot(a, 1), its value taken as hypot computes it.
            let d = add_to(1.0, &mul(a[0], a[0]));
            let root = sqrt(&d, math::hypot(x[0], 1.0));
            integrate(a[0], da, value, &root.and_then(|r| recip(&r)).ok_or(op)?)
        }
        Op::Acosh => {
            // 1/(√(a − 1)·√(a + 1)).
            let lo = add_to(-1.0, a[0]);
            let hi = add_to(1.0, a[0]);
            let lo = sqrt(&lo, lo[0].sqrt());
            let hi = sqrt(&hi, hi[0].sqrt());
            let h = lo
                .zip(hi)
                .and_then(|(l, h)| recip(&mul(&l, &h)))
                .ok_or(op)?;
            integrate(a[0], da, value, &h)
        }
        Op::Atanh => {
            let d = one_minus_square(a[0]);
            integrate(a[0], da, value, &recip(&d).ok_or(op)?)
        }
        Op::Erf => {
            // (2/√π)·exp(−a²).
            let na2 = scale(&mul(a[0], a[0]), -1.0);
            let e = exp(&na2, FULL, math::exp(na2[0]));
            integrate(
                a[0],
                da,
                value,
                &scale(&e, std::f64::consts::FRAC_2_SQRT_PI),
            )
        }
        Op::Log1p => integrate(a[0], da, value, &recip(&add_to(1.0, a[0])).ok_or(op)?),
        Op::Expm1 => exp(a[0], da, math::exp(x[0])),
        Op::Log2 => {
            let b = scale(a[0], std::f64::consts::LN_2);
            integrate(a[0], da, value, &recip(&b).ok_or(op)?)
        }
        Op::Recip => recip_deg(a[0], da).ok_or(op)?,
        Op::Powi => powi(a[0], x[1]).ok_or(op)?,
        Op::Abs => scale(a[0], math::sign(x[0])),
        // Never moves (see `live`); kept for a total match.
        Op::Sign | Op::Lt | Op::Le | Op::Eq | Op::Ne => constant(value, w),
        Op::Max | Op::Min => {
            let (p, q) = (a[0], a[1]);
            let wins = if op == Op::Max {
                q[0] < p[0]
            } else {
                p[0] < q[0]
            };
            if wins || (p[0] != q[0] && q[0].is_nan()) {
                p.to_vec()
            } else if p[0] == q[0] {
                zip(p, q, |x, y| 0.5 * x + 0.5 * y)
            } else {
                q.to_vec()
            }
        }
        Op::Select => {
            if math::select(x[0], 1.0, 0.0) == 1.0 {
                a[1].to_vec()
            } else {
                a[2].to_vec()
            }
        }
        Op::Pow => pow(a[0], a[1], [live[0], live[1]], value).ok_or(op)?,
        Op::Atan2 => atan2(a[0], a[1]).ok_or(op)?,
        Op::Hypot => hypot(a[0], a[1], value),
        Op::Call => call(a, value).ok_or(op)?,
        // Never expanded (`expand` gives a pack no coefficients of its own).
        Op::Pack => return Err(op),
    };
    c[0] = value;
    Ok(c)
}

/// A user function's series to degree 2 from its partials (Faà di Bruno):
/// `c₁ = Σ ∂ᵢ·aᵢ₁`, `c₂ = Σ ∂ᵢ·aᵢ₂ + ½ Σᵢⱼ ∂ᵢⱼ·aᵢ₁·aⱼ₁`; `None` past degree 2 (no user
/// function gives third partials). `a[0]` is the call's tag.
fn call(a: &[&[f64]], value: f64) -> Option<Vec<f64>> {
    let w = a[0].len();
    if w > 3 {
        return None;
    }
    let tag = a[0][0];
    let (x, y) = (a[1][0], a[2][0]);
    let part = |t: Option<f64>| t.map_or(0.0, |t| crate::user::call(t, x, y));
    let d = [0, 1].map(|i| crate::user::partial_tag(tag, i));
    let mut c = vec![0.0; w];
    c[0] = value;
    if w > 1 {
        let g = d.map(part);
        c[1] = g[0] * a[1][1] + g[1] * a[2][1];
        if w > 2 {
            let h = |i: usize, j: usize| part(d[i].and_then(|t| crate::user::partial_tag(t, j)));
            let (u, v) = (a[1][1], a[2][1]);
            c[2] = g[0] * a[1][2]
                + g[1] * a[2][2]
                + 0.5 * (h(0, 0) * u * u + 2.0 * h(0, 1) * u * v + h(1, 1) * v * v);
        }
    }
    Some(c)
}

/// [`call`] for a function of `k ≥ 3` arguments, `a` their coefficients and `x` their
/// values: `c₁ = Σ ∂ᵢ·aᵢ₁`, `c₂ = Σ ∂ᵢ·aᵢ₂ + ½ Σᵢ≤ⱼ (2 − δᵢⱼ) ∂ᵢⱼ·aᵢ₁·aⱼ₁`, summed in
/// index order; `None` past degree 2.
fn call_packed(tag: f64, a: &[&[f64]], x: &[f64], value: f64) -> Option<Vec<f64>> {
    let w = a.first()?.len();
    if w > 3 {
        return None;
    }
    let part = |t: Option<f64>| t.map_or(0.0, |t| crate::user::call_slice(t, x));
    let d: Vec<Option<f64>> = (0..a.len())
        .map(|i| crate::user::partial_tag(tag, i))
        .collect();
    let sum = |terms: &mut dyn Iterator<Item = f64>| {
        let first = terms.next().unwrap_or(0.0);
        terms.fold(first, |s, t| s + t)
    };
    let mut c = vec![0.0; w];
    c[0] = value;
    if w > 1 {
        let g: Vec<f64> = d.iter().map(|&t| part(t)).collect();
        c[1] = sum(&mut g.iter().zip(a).map(|(g, a)| g * a[1]));
        if w > 2 {
            let h = |i: usize, j: usize| part(d[i].and_then(|t| crate::user::partial_tag(t, j)));
            let k = a.len();
            let quad = sum(&mut (0..k)
                .flat_map(|i| (i..k).map(move |j| (i, j)))
                .map(|(i, j)| {
                    let (u, v) = (a[i][1], a[j][1]);
                    if i == j {
                        h(i, i) * u * u
                    } else {
                        2.0 * h(i, j) * u * v
                    }
                }));
            c[2] = sum(&mut g.iter().zip(a).map(|(g, a)| g * a[2])) + 0.5 * quad;
        }
    }
    Some(c)
}

/// Coefficientwise `f(a_k, b_k)`.
fn zip(a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64) -> Vec<f64> {
    a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
}

/// `s·a`.
fn scale(a: &[f64], s: f64) -> Vec<f64> {
    a.iter().map(|x| s * x).collect()
}

/// `s + a`.
fn add_to(s: f64, a: &[f64]) -> Vec<f64> {
    let mut c = a.to_vec();
    c[0] += s;
    c
}

/// `s − a`.
fn sub_from(s: f64, a: &[f64]) -> Vec<f64> {
    let mut c: Vec<f64> = a.iter().map(|x| -x).collect();
    c[0] += s;
    c
}

/// A degree no polynomial reaches: the series of a node that is not a polynomial in `t`.
const FULL: usize = usize::MAX;

/// `p·q` where `p` is an argument's coefficient of index `j` and the argument is a
/// polynomial of degree `d` in `t`: exactly `0` past the degree (a structural zero, as in
/// forward mode: it never meets a NaN or infinite `q`, which the rule routes never read).
fn term(j: usize, d: usize, p: f64, q: f64) -> f64 {
    if j > d {
        0.0
    } else {
        p * q
    }
}

/// The Cauchy product `a·b`, truncated.
fn mul(a: &[f64], b: &[f64]) -> Vec<f64> {
    mul_deg(a, FULL, b, FULL)
}

/// [`mul`] of polynomials of degree `da` and `db` ([`term`]).
fn mul_deg(a: &[f64], da: usize, b: &[f64], db: usize) -> Vec<f64> {
    (0..a.len())
        .map(|k| {
            (0..=k)
                .map(|j| {
                    if k - j > db {
                        0.0
                    } else {
                        term(j, da, a[j], b[k - j])
                    }
                })
                .sum()
        })
        .collect()
}

/// `a/b`, or `None` when `b` moves (`b_moves`) and `b₀ = 0` (a pole, or an
/// indeterminate form). A `b` that does not move divides coefficientwise, as IEEE does.
fn div(a: &[f64], b: &[f64], db: usize, b_moves: bool) -> Option<Vec<f64>> {
    if !b_moves {
        return Some(a.iter().map(|x| x / b[0]).collect());
    }
    if b[0] == 0.0 {
        return None;
    }
    let mut c = vec![0.0; a.len()];
    for k in 0..a.len() {
        let s: f64 = (0..k).map(|j| term(k - j, db, b[k - j], c[j])).sum();
        c[k] = (a[k] - s) / b[0];
    }
    Some(c)
}

/// `1/b` for a moving `b`, or `None` at `b₀ = 0`; see [`div`].
fn recip(b: &[f64]) -> Option<Vec<f64>> {
    recip_deg(b, FULL)
}

/// [`recip`] of a polynomial of degree `db`.
fn recip_deg(b: &[f64], db: usize) -> Option<Vec<f64>> {
    div(&constant(1.0, b.len()), b, db, true)
}

/// `√a` for a moving `a`, with value `c0`, or `None` at `a₀ = 0` (a branch point).
fn sqrt(a: &[f64], c0: f64) -> Option<Vec<f64>> {
    if a[0] == 0.0 {
        return None;
    }
    let mut c = constant(c0, a.len());
    for k in 1..a.len() {
        let s: f64 = (1..k).map(|j| c[j] * c[k - j]).sum();
        c[k] = (a[k] - s) / (2.0 * c0);
    }
    Some(c)
}

/// `c = F(a)` from `c₀` and the series `h` of `F'(a)` (degree one lower suffices):
/// `c_k = (1/k) Σ_{1≤j≤k} j a_j h_{k−j}`.
fn integrate(a: &[f64], da: usize, c0: f64, h: &[f64]) -> Vec<f64> {
    let mut c = constant(c0, a.len());
    for k in 1..a.len() {
        let s: f64 = (1..=k)
            .map(|j| term(j, da, j as f64 * a[j], h[k - j]))
            .sum();
        c[k] = s / k as f64;
    }
    c
}

/// `exp(a)` with value `c0`: `c' = c·a'`.
fn exp(a: &[f64], da: usize, c0: f64) -> Vec<f64> {
    let mut c = constant(c0, a.len());
    for k in 1..a.len() {
        let s: f64 = (1..=k)
            .map(|j| term(j, da, j as f64 * a[j], c[k - j]))
            .sum();
        c[k] = s / k as f64;
    }
    c
}

/// `(sin a, cos a)` (`sign = 1`) or `(sinh a, cosh a)` (`sign = −1`) with values `s0`,
/// `c0`: `s' = c·a'`, `c' = −sign·s·a'`.
fn sin_cos(a: &[f64], da: usize, s0: f64, c0: f64, sign: f64) -> (Vec<f64>, Vec<f64>) {
    let mut s = constant(s0, a.len());
    let mut c = constant(c0, a.len());
    for k in 1..a.len() {
        let (mut ss, mut cc) = (0.0, 0.0);
        for j in 1..=k.min(da) {
            let ja = j as f64 * a[j];
            ss += ja * c[k - j];
            cc += ja * s[k - j];
        }
        s[k] = ss / k as f64;
        c[k] = -sign * cc / k as f64;
    }
    (s, c)
}

/// `tan a` (`sign = 1`) or `tanh a` (`sign = −1`) with value `t0`: `t' = (1 + sign·t²)·a'`.
fn tan_tanh(a: &[f64], da: usize, t0: f64, sign: f64, u0: f64) -> Vec<f64> {
    let w = a.len();
    let mut t = constant(t0, w);
    // u = 1 + sign·t², built one coefficient behind t; its value `u0` is given, so that
    // tanh's can be computed without cancellation ([`sech2`]).
    let mut u = constant(u0, w);
    for k in 1..w {
        let s: f64 = (1..=k)
            .map(|j| term(j, da, j as f64 * a[j], u[k - j]))
            .sum();
        t[k] = s / k as f64;
        let tt: f64 = (0..=k).map(|j| t[j] * t[k - j]).sum();
        u[k] = sign * tt;
    }
    t
}

/// `sech²(x) = 1 − tanh²(x)` without cancellation or overflow: `4v/(1 + v)²`, `v = e^(−2|x|)`
/// (the value the reverse and forward rules form).
fn sech2(x: f64) -> f64 {
    let v = math::exp(-2.0 * x.abs());
    4.0 * v / ((1.0 + v) * (1.0 + v))
}

/// The series of `1 − a²`, its value `(1 − a₀)(1 + a₀)`: exact subtraction near `|a₀| = 1`
/// (`1 − a₀²` would lose the digits of the result there to the rounding of `a₀²`).
fn one_minus_square(a: &[f64]) -> Vec<f64> {
    let mut d = sub_from(1.0, &mul(a, a));
    d[0] = (1.0 - a[0]) * (1.0 + a[0]);
    d
}

/// `aʳ` for a constant `r`, `a₀ ≠ 0`, value `c0`: from `a·c' = r·a'·c`.
fn pow_const(a: &[f64], da: usize, r: f64, c0: f64) -> Vec<f64> {
    let mut c = constant(c0, a.len());
    for k in 1..a.len() {
        let s: f64 = (0..k)
            .map(|j| term(k - j, da, (r * (k - j) as f64 - j as f64) * a[k - j], c[j]))
            .sum();
        c[k] = s / (k as f64 * a[0]);
    }
    c
}

/// `aⁿ` for a natural `n`, by repeated squaring: valid at `a₀ = 0`.
fn pow_natural(a: &[f64], mut n: u64) -> Vec<f64> {
    let mut result = constant(1.0, a.len());
    let mut base = a.to_vec();
    while n > 0 {
        if n & 1 == 1 {
            result = mul(&result, &base);
        }
        n >>= 1;
        if n > 0 {
            base = mul(&base, &base);
        }
    }
    result
}

/// `powi(a, n)` for a moving `a` and the integer `n` (which never moves): a polynomial
/// for `n ≥ 0`, valid at `a₀ = 0`; its reciprocal for `n < 0`, `None` at `a₀ = 0`. NaN
/// coefficients for an `n` that is not an integer (where the value is NaN).
fn powi(a: &[f64], n: f64) -> Option<Vec<f64>> {
    let w = a.len();
    if n.fract() != 0.0 || n.is_nan() {
        return Some(vec![f64::NAN; w]);
    }
    let m = n.abs();
    let p = if m >= 4_294_967_296.0 {
        // Past any degree: aⁿ = t^|n|·(…) at a₀ = 0; elsewhere the constant-power rule.
        if a[0] == 0.0 {
            vec![0.0; w]
        } else {
            return Some(pow_const(a, FULL, n, math::powi(a[0], n)));
        }
    } else if a[0] == 0.0 && m > (w - 1) as f64 {
        vec![0.0; w]
    } else {
        pow_natural(a, m as u64)
    };
    if n < 0.0 {
        recip(&p)
    } else {
        Some(p)
    }
}

/// `pow(a, b)` with value `value`, or `None` where it has no expansion (module doc).
/// `live` says whether the base and the exponent move into the node (at least one does).
fn pow(a: &[f64], b: &[f64], live: [bool; 2], value: f64) -> Option<Vec<f64>> {
    let w = a.len();
    let [a_moves, b_moves] = live;
    if !b_moves {
        // The base moves; the exponent is the constant b₀.
        let r = b[0];
        if r == 0.0 {
            return Some(constant(1.0, w));
        }
        if a[0] != 0.0 {
            return Some(pow_const(a, FULL, r, value));
        }
        // a₀ = 0 and a moves: only a polynomial has a series. Past the degree, every
        // kept coefficient of aⁿ is zero (a = t·(…)), so large n need no loop.
        if r > 0.0 && r.fract() == 0.0 {
            if r > (w - 1) as f64 {
                return Some(vec![0.0; w]);
            }
            return Some(pow_natural(a, r as u64));
        }
        return None;
    }
    if !a_moves {
        // aᵇ = exp(b·ln a₀) for a constant base; ∂/∂b = 0 at a₀ = 0.
        if a[0] == 0.0 {
            return Some(constant(value, w));
        }
        let e = scale(b, math::log(a[0]));
        return Some(exp(&e, FULL, value));
    }
    // Both move: aᵇ = exp(b·ln a), its value taken as pow computes it; no series at a₀ = 0.
    let l = integrate(a, FULL, math::log(a[0]), &recip(a)?);
    let e = mul(b, &l);
    Some(exp(&e, FULL, value))
}

/// `atan2(a, b)` (the angle of `(b, a)`): `c' = (b·a' − a·b')/(a² + b²)`; all zero at the
/// origin; `None` where `a₀² + b₀²` underflows away from it.
fn atan2(a: &[f64], b: &[f64]) -> Option<Vec<f64>> {
    let w = a.len();
    if a[0] == 0.0 && b[0] == 0.0 {
        return Some(vec![0.0; w]);
    }
    let da = derivative(a);
    let db = derivative(b);
    let bt = &b[..w - 1];
    let at = &a[..w - 1];
    let num = zip(&mul(bt, &da), &mul(at, &db), |x, y| x - y);
    let den = zip(&mul(at, at), &mul(bt, bt), |x, y| x + y);
    if den[0] == 0.0 {
        return None;
    }
    let q = div(&num, &den, FULL, true)?;
    let mut c = vec![0.0; w];
    for k in 1..w {
        c[k] = q[k - 1] / k as f64;
    }
    Some(c)
}

/// `hypot(a, b)` with value `value`: `√(a² + b²)`, all zero at the origin.
fn hypot(a: &[f64], b: &[f64], value: f64) -> Vec<f64> {
    let w = a.len();
    if a[0] == 0.0 && b[0] == 0.0 {
        return vec![0.0; w];
    }
    let s = zip(&mul(a, a), &mul(b, b), |x, y| x + y);
    let mut c = constant(value, w);
    for k in 1..w {
        let t: f64 = (1..k).map(|j| c[j] * c[k - j]).sum();
        c[k] = (s[k] - t) / (2.0 * value);
    }
    c
}

/// The series of `a'` (one shorter): `(a')_k = (k + 1)·a_{k+1}`.
fn derivative(a: &[f64]) -> Vec<f64> {
    (1..a.len()).map(|k| k as f64 * a[k]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ad::forward::forward;
    use crate::{build, select, var, Expr, Model, SymbolId};

    fn model(f: impl Fn(Expr) -> Expr) -> Model {
        build(|| vec![f(var("x"))]).expect("model builds")
    }

    /// `f⁽ᵏ⁾(x0)` for `k = 0 ..= 6` by nesting forward mode: each pass differentiates the
    /// previous derivative's node through `ad::rules`, sharing nothing with the Taylor
    /// recurrences.
    fn nested(graph: &Graph, root: NodeId, x0: f64) -> Vec<f64> {
        let mut g = graph.clone();
        let one = g.constant(1.0);
        let mut node = Some(root);
        let mut out = Vec::new();
        for _ in 0..=6 {
            out.push(match node {
                Some(n) => g.eval_reference(&[n], &[x0], &[])[0],
                None => 0.0,
            });
            node = node.and_then(|n| forward(&mut g, &[Some(one)], &[n])[0]);
        }
        out
    }

    fn taylor(graph: &Graph, root: NodeId, x0: f64) -> Vec<f64> {
        let c = expand(graph, &[root], &[x0], &[1.0], &[], 6).expect("expands");
        let mut fact = 1.0;
        c[0].iter()
            .enumerate()
            .map(|(k, &ck)| {
                if k > 0 {
                    fact *= k as f64;
                }
                fact * ck
            })
            .collect()
    }

    fn agree(name: &str, graph: &Graph, root: NodeId, x0: f64) {
        let t = taylor(graph, root, x0);
        let n = nested(graph, root, x0);
        for k in 0..=6 {
            let scale = n[k].abs().max(1.0);
            assert!(
                (t[k] - n[k]).abs() <= 1e-11 * scale,
                "{name} at {x0}, K = {k}: taylor {} nested {}",
                t[k],
                n[k]
            );
        }
    }

    type Case = (&'static str, fn(Expr) -> Expr, f64);

    #[test]
    fn every_operation_agrees_with_nested_first_derivatives() {
        let cases: Vec<Case> = vec![
            ("neg", |x| -(x * x * x), 0.7),
            ("sin", |x| (2.0 * x).sin(), 0.7),
            ("cos", |x| (x * x).cos(), 0.7),
            ("tan", |x| (0.5 * x + 0.1).tan(), 0.7),
            ("exp", |x| (x * x).exp(), 0.7),
            ("log", |x| (x * x + 1.0).ln(), 0.7),
            ("log10", |x| (x + 2.0).log10(), 0.7),
            ("sqrt", |x| (x * x + 0.5).sqrt(), 0.7),
            ("cbrt", |x| (x - 2.0).cbrt(), 0.7),
            ("abs", |x| (x.sin() - 0.9).abs(), 0.7),
            ("sign", |x| x.sign() * x * x, 0.7),
            ("asin", |x| (0.5 * x).asin(), 0.7),
            ("acos", |x| (x * x - 0.2).acos(), 0.7),
            ("atan", |x| (3.0 * x).atan(), 0.7),
            ("sinh", |x| (x * x).sinh(), 0.7),
            ("cosh", |x| (x - 1.0).cosh(), 0.7),
            ("tanh", |x| (2.0 * x).tanh(), 0.7),
            ("asinh", |x| (x * x * 3.0).asinh(), 0.7),
            ("acosh", |x| (x + 1.5).acosh(), 0.7),
            ("atanh", |x| (0.9 * x).atanh(), 0.7),
            ("erf", |x| (x * x).erf(), 0.7),
            ("log1p", |x| (x * x - 0.3).ln_1p(), 0.7),
            ("expm1", |x| (x * x).exp_m1(), 0.7),
            ("log2", |x| (x + 2.0).log2(), 0.7),
            ("recip", |x| (x * x + 0.5).recip(), 0.7),
            ("powi", |x| (x + 1.0).powi(5), 0.7),
            ("powi negative", |x| (x - 2.0).powi(-3), 0.7),
            ("powi at 0", |x| x.powi(4), 0.0),
            ("powi below the degree at 0", |x| (x * x).powi(9), 0.0),
            (
                "add/sub/mul/div",
                |x| (x + 1.0) * (x - 3.0) / (x * x + 2.0),
                0.7,
            ),
            ("pow const", |x| (x + 1.0).powf(-1.5), 0.7),
            ("pow moving", |x| (x + 1.0).powf(x.sin()), 0.7),
            ("pow const base", |x| crate::pow(2.5, x * x), 0.7),
            ("atan2", |x| (x * x).atan2(x - 2.0), 0.7),
            ("hypot", |x| (x * x).hypot(x.exp()), 0.7),
            ("max", |x| x.sin().max(x.cos()), 0.7),
            ("min", |x| x.sin().min(x.cos()), 0.7),
            (
                "compare",
                |x| x.lt(1.0) * x + x.le(0.0) + x.eq(0.7) * x * x + x.ne(2.0),
                0.7,
            ),
            ("select", |x| select(x.gt(0.5), x.exp(), x.ln()), 0.7),
        ];
        for (name, f, x0) in cases {
            let m = model(f);
            agree(name, m.graph(), m.outputs()[0], x0);
        }
    }

    #[test]
    fn fma_agrees_with_nested_first_derivatives() {
        // Only contraction passes make fma, so the graph is built by hand.
        let mut g = Graph::new();
        let x = g.symbol(SymbolId(0));
        let s = g.unary(Op::Sin, x);
        let e = g.unary(Op::Exp, x);
        let xx = g.binary(Op::Mul, x, x);
        let f = g.apply(Op::Fma, &[s, e, xx]);
        agree("fma", &g, f, 0.7);
        let c = expand(&g, &[f], &[0.7], &[1.0], &[], 2).expect("expands");
        assert_eq!(
            c[0][0].to_bits(),
            0.7f64.sin().mul_add(0.7f64.exp(), 0.49).to_bits()
        );
    }

    #[test]
    fn a_direction_scales_each_coefficient() {
        // f(x0 + t·v) for two symbols: c₁ = ∇f·v, c₂ = vᵀHv/2 for f = x²y + y³.
        let m = build(|| {
            let (x, y) = (var("x"), var("y"));
            vec![x * x * y + y * y * y]
        })
        .expect("model builds");
        let c = expand(m.graph(), m.outputs(), &[1.0, 2.0], &[0.5, -1.0], &[], 3).expect("expands");
        // ∇f = (2xy, x² + 3y²) = (4, 13); H = [[2y, 2x], [2x, 6y]] = [[4, 2], [2, 12]].
        assert_eq!(c[0][1], 4.0 * 0.5 - 13.0);
        // vᵀHv = 4·0.25 + 2·2·(0.5·(−1)) + 12·1 = 11.
        assert_eq!(c[0][2], 11.0 / 2.0);
        // Third: the cubic terms of x²y and y³ along v: v_x²·v_y + v_y³ = −0.25 − 1.
        assert_eq!(c[0][3], -1.25);
    }

    /// Whether `t` and `n` are the same number: equal, both NaN, or within `1e-11` of the
    /// larger of `|n|` and 1.
    fn same(t: f64, n: f64) -> bool {
        t == n || (t.is_nan() && n.is_nan()) || (t - n).abs() <= 1e-11 * n.abs().max(1.0)
    }

    /// `root` at `x0`, at every degree `1 ..= 6`: either refused at every one of them, or
    /// every coefficient `k ≤ d` of degree `d`, times `k!`, is what nested first
    /// derivatives give (so no answer depends on where the series is truncated).
    /// Answers whether it was refused.
    fn refuses_or_agrees(name: &str, g: &Graph, root: NodeId, x0: f64) -> bool {
        let n = nested(g, root, x0);
        let mut refused = None;
        for d in 1..=6 {
            match expand(g, &[root], &[x0], &[1.0], &[], d) {
                Ok(c) => {
                    assert_ne!(refused, Some(true), "{name}: refused below degree {d} only");
                    refused = Some(false);
                    let mut fact = 1.0;
                    for (k, &ck) in c[0].iter().enumerate() {
                        if k > 0 {
                            fact *= k as f64;
                        }
                        assert!(
                            same(fact * ck, n[k]),
                            "{name} at {x0}, degree {d}, k = {k}: taylor {} nested {}",
                            fact * ck,
                            n[k]
                        );
                    }
                }
                Err(Error::UnsupportedScalar { .. }) => {
                    assert_ne!(refused, Some(false), "{name}: refused at degree {d} only");
                    refused = Some(true);
                }
                Err(e) => panic!("{name}: {e}"),
            }
        }
        refused == Some(true)
    }

    /// An argument built into a fresh graph from its symbol `x`.
    type Arg = (String, Box<dyn Fn(&mut Graph, NodeId) -> NodeId>);

    /// `c + s·u` for `c ∈ {0, 1, −1}`, `s = ±1`, `u ∈ {x², x³, x⁴}`: arguments that move
    /// with `x` but whose low coefficients vanish at `x = 0`, sitting on every singular
    /// point an operation has (`0`, `±1`), from either side. Named `"c ± xᵖ"`.
    fn slow_arguments() -> Vec<Arg> {
        let mut out: Vec<Arg> = Vec::new();
        for c in [0.0, 1.0, -1.0] {
            for (us, p) in [("x²", 2), ("x³", 3), ("x⁴", 4)] {
                for s in [1.0, -1.0] {
                    let sign = if s > 0.0 { '+' } else { '-' };
                    let build = move |g: &mut Graph, x: NodeId| {
                        let mut u = x;
                        for _ in 1..p {
                            u = g.binary(Op::Mul, u, x);
                        }
                        let su = if s > 0.0 { u } else { g.unary(Op::Neg, u) };
                        let cc = g.constant(c);
                        g.binary(Op::Add, cc, su)
                    };
                    out.push((format!("{c} {sign} {us}"), Box::new(build)));
                }
            }
        }
        out
    }

    /// The value at `x = 0` of `f` built over a fresh graph.
    fn value_at_zero(f: impl Fn(&mut Graph, NodeId) -> NodeId) -> f64 {
        let mut g = Graph::new();
        let x = g.symbol(SymbolId(0));
        let root = f(&mut g, x);
        g.eval_reference(&[root], &[0.0], &[])[0]
    }

    /// `f` built over a fresh graph of one symbol: refused, or agreeing (see
    /// [`refuses_or_agrees`]) at `x = 0`.
    fn sweep(name: &str, f: impl Fn(&mut Graph, NodeId) -> NodeId) -> bool {
        let mut g = Graph::new();
        let x = g.symbol(SymbolId(0));
        let root = f(&mut g, x);
        refuses_or_agrees(name, &g, root, 0.0)
    }

    #[test]
    fn a_slowly_moving_argument_at_a_singular_point_refuses_or_agrees() {
        // Every unary operation of c ± x², x³, x⁴ at x = 0.
        let mut refused = Vec::new();
        for op in Op::ALL.into_iter().filter(|op| op.arity() == 1) {
            for (an, a) in &slow_arguments() {
                let name = format!("{}({an})", op.name());
                if sweep(&name, |g, x| {
                    let a = a(g, x);
                    g.unary(op, a)
                }) {
                    refused.push(name);
                }
            }
        }
        // The branch points and poles are refused, at every degree, whichever slow
        // argument reaches them.
        for must in [
            "sqrt(0 + x²)",
            "sqrt(0 - x³)",
            "cbrt(0 + x⁴)",
            "log(0 + x²)",
            "log(0 + x⁴)",
            "log10(0 - x²)",
            "asin(1 - x²)",
            "acos(-1 + x³)",
            "acosh(1 + x²)",
            "acosh(-1 - x²)",
            "atanh(-1 + x⁴)",
        ] {
            assert!(refused.iter().any(|r| r == must), "{must} answered");
        }
        // And only those: no refusal away from one.
        for r in &refused {
            let at_zero = [
                "sqrt(0 ", "cbrt(0 ", "log(0 ", "log10(0 ", "log2(0 ", "recip(0 ",
            ];
            let at_minus_one = ["log1p(-1 "];
            let at_one = ["asin(", "acos(", "acosh(", "atanh("];
            let singular = at_zero.iter().any(|f| r.starts_with(f))
                || at_minus_one.iter().any(|f| r.starts_with(f))
                || at_one
                    .iter()
                    .any(|f| r.starts_with(f) && !r.contains("(0 "));
            assert!(singular, "{r} refused");
        }
    }

    #[test]
    fn division_and_pow_by_a_slowly_moving_argument_refuse_or_agree() {
        fn c(v: f64) -> impl Fn(&mut Graph, NodeId) -> NodeId {
            move |g: &mut Graph, _| g.constant(v)
        }
        let mut others: Vec<Arg> = vec![
            ("x".into(), Box::new(|_: &mut Graph, x| x)),
            (
                "x + 1".into(),
                Box::new(|g: &mut Graph, x| {
                    let one = g.constant(1.0);
                    g.binary(Op::Add, x, one)
                }),
            ),
            (
                "2 + x²".into(),
                Box::new(|g: &mut Graph, x| {
                    let two = g.constant(2.0);
                    let x2 = g.binary(Op::Mul, x, x);
                    g.binary(Op::Add, two, x2)
                }),
            ),
            // Moves (the graph cannot know it is 0 everywhere).
            (
                "x - x".into(),
                Box::new(|g: &mut Graph, x| g.binary(Op::Sub, x, x)),
            ),
            (
                "0.5 + x".into(),
                Box::new(|g: &mut Graph, x| {
                    let h = g.constant(0.5);
                    g.binary(Op::Add, h, x)
                }),
            ),
        ];
        for v in [1.0, 2.0, 0.5, 1.5, 1.0 / 3.0, -1.0, -2.0, 3.0, 7.0] {
            others.push((format!("{v}"), Box::new(c(v))));
        }
        // Whether the named argument moves through 0 at x = 0.
        let at_zero = |name: &str| name.starts_with("0 ") || name == "x" || name == "x - x";
        let slow = slow_arguments();
        for (an, a) in &slow {
            let a_at_zero = at_zero(an);
            for (bn, b) in others.iter().chain(&slow) {
                let b_at_zero = at_zero(bn);
                // b / a: refused exactly where a is 0.
                let f = |g: &mut Graph, x| {
                    let (a, b) = (a(g, x), b(g, x));
                    g.binary(Op::Div, b, a)
                };
                assert_eq!(
                    sweep(&format!("({bn}) / ({an})"), f),
                    a_at_zero,
                    "{bn} / {an}"
                );
                let f = |g: &mut Graph, x| {
                    let (a, b) = (a(g, x), b(g, x));
                    g.binary(Op::Div, a, b)
                };
                assert_eq!(
                    sweep(&format!("({an}) / ({bn})"), f),
                    b_at_zero,
                    "{an} / {bn}"
                );
                // pow(a, b) and pow(b, a): the rule table's guard on ∂/∂base acts only at
                // the singular point (base and exponent both 0), so every case is compared
                // but one: a negative base under an exponent that moves has no real power
                // nearby (Taylor answers NaN; nested forward mode, seeing `x − x` fold to a
                // constant tangent, answers the base's share alone).
                for (base, bname, exp, ename) in [(a, an, b, bn), (b, bn, a, an)] {
                    let base_at_zero = at_zero(bname);
                    let constant = ename.parse::<f64>().ok();
                    if constant.is_none() && value_at_zero(base) < 0.0 {
                        continue;
                    }
                    let name = format!("pow({bname}, {ename})");
                    let refused = sweep(&name, |g: &mut Graph, x| {
                        let (p, q) = (base(g, x), exp(g, x));
                        g.binary(Op::Pow, p, q)
                    });
                    // A moving zero base is refused unless the exponent is a constant 0
                    // or natural number; nothing else is.
                    let natural = constant.is_some_and(|r| r >= 0.0 && r.fract() == 0.0);
                    assert_eq!(refused, base_at_zero && !natural, "{name}");
                }
            }
        }
        // A constant base 0, or an exponent that does not move (0·x: a product with the
        // literal 0 carries no derivative): a constant, not refused.
        assert!(!sweep("pow(0, x²)", |g, x| {
            let (z, x2) = (g.constant(0.0), g.binary(Op::Mul, x, x));
            g.binary(Op::Pow, z, x2)
        }));
        assert!(!sweep("pow(x², 0·x)", |g, x| {
            let z = g.constant(0.0);
            let (zx, x2) = (g.binary(Op::Mul, z, x), g.binary(Op::Mul, x, x));
            g.binary(Op::Pow, x2, zx)
        }));
        assert!(!sweep("1 / (x²·0)", |g, x| {
            let (one, z) = (g.constant(1.0), g.constant(0.0));
            let x2 = g.binary(Op::Mul, x, x);
            let d = g.binary(Op::Mul, x2, z);
            g.binary(Op::Div, one, d)
        }));
    }

    #[test]
    fn the_other_binary_operations_at_a_slowly_moving_origin_agree() {
        // atan2 and hypot at the origin, max/min ties, and every other binary operation
        // over pairs of slow arguments through the same point: never refused, always the
        // nested derivatives.
        let slow = slow_arguments();
        let point = |name: &str| name.split(' ').next().map(str::to_owned);
        for op in Op::ALL
            .into_iter()
            // powi with a moving exponent is NaN wherever the exponent is not an integer:
            // no derivative to compare (its constant exponents are tested with the base).
            .filter(|&op| op.arity() == 2 && !matches!(op, Op::Div | Op::Pow | Op::Powi))
        {
            for (an, a) in &slow {
                for (bn, b) in slow.iter().filter(|(bn, _)| point(bn) == point(an)) {
                    let name = format!("{}({an}, {bn})", op.name());
                    let refused = sweep(&name, |g, x| {
                        let (p, q) = (a(g, x), b(g, x));
                        g.binary(op, p, q)
                    });
                    assert!(!refused, "{name} refused");
                }
            }
        }
    }

    #[test]
    fn a_degree_above_the_maximum_is_refused() {
        let mut g = Graph::new();
        let x = g.symbol(SymbolId(0));
        let f = g.unary(Op::Sin, x);
        for degree in [MAX_DEGREE + 1, 1 << 40, usize::MAX] {
            assert_eq!(
                expand(&g, &[f], &[0.5], &[1.0], &[], degree),
                Err(Error::OrderTooHigh {
                    order: degree,
                    max: MAX_DEGREE
                })
            );
        }
        let c = expand(&g, &[f], &[0.5], &[1.0], &[], MAX_DEGREE).expect("expands");
        assert_eq!(c[0].len(), MAX_DEGREE + 1);
    }

    #[test]
    fn seeds_and_degree_zero() {
        let mut g = Graph::new();
        let x = g.symbol(SymbolId(0));
        let v = g.seed(crate::SeedId(0));
        let f = g.binary(Op::Mul, x, v);
        let c = expand(&g, &[f], &[3.0], &[1.0], &[4.0], 0).expect("expands");
        assert_eq!(c, [[12.0]]);
        let c = expand(&g, &[f], &[3.0], &[1.0], &[4.0], 2).expect("expands");
        assert_eq!(c, [[12.0, 4.0, 0.0]]);
    }
}
