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
//! **Conventions** (DESIGN.md), carried to every order so that these derivatives agree
//! with nested first derivatives and the Hessian lane:
//! - an argument whose series is constant (`a_k = 0` for `k ≥ 1`) contributes nothing:
//!   the result is the constant `[f(a₀), 0, …]` (no `0·∞`);
//! - `abs`: `c_k = sign(a₀)·a_k`, so every derivative is `0` at `a₀ = 0` (`abs'(0) = 0`,
//!   `sign' = 0`); `sign` and comparisons: constants;
//! - `max`/`min`: the operand answered gives all its coefficients; at a tie each gives
//!   half (`c_k = (a_k + b_k)/2`); a NaN operand gives none unless both are NaN;
//! - `select(c, t, f)`: the taken arm's series; `c`'s higher coefficients are ignored and
//!   the untaken arm's never reach the result, even where they are NaN;
//! - `pow(a, b)`: `b ≡ 0` answers `[1, 0, …]`; a base `a ≡ 0` answers `[0ᵇ⁰, 0, …]`
//!   (`∂/∂b = 0` at `a = 0`); a base with `a₀ = 0` and a constant exponent that is a
//!   natural number expands by repeated multiplication (a polynomial has a series);
//! - `atan2` and `hypot` at the origin (`a₀ = b₀ = 0`): every derivative `0`.
//!
//! **Where there is no expansion**, the sweep answers [`Error::UnsupportedScalar`] rather
//! than a number: at a branch point or pole of an operation whose argument moves with `t`
//! — if that node's coefficients reach a requested root. A node that cannot be expanded
//! is carried as "no series" (its value still known) through the operations that read it,
//! but not through those that do not: the untaken arm of a `select`, the operand a
//! `max`/`min` does not answer, the argument of `sign` or a comparison.
//! Exactly these: `sqrt`, `cbrt`, `log`, `log10` at `a₀ = 0`; `pow(a, b)` at `a₀ = 0` unless
//! `b` is a constant natural number (or one of the constant arms above); division by a
//! moving `b` with `b₀ = 0`; `asin`, `acos` at `a₀ = ±1`; `acosh` at `a₀ = ±1`; `atanh` at
//! `a₀ = ±1`; and `atan2` where `a₀² + b₀²` underflows to zero away from the origin. Every
//! other singularity (a NaN or infinite value, an argument outside an operation's domain)
//! propagates as IEEE arithmetic does, as in the other lanes.

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
    // The operation whose expansion failed at or below each node, if one did and its
    // coefficients are used. The value coefficient is kept even then.
    let mut failed: Vec<Option<Op>> = vec![None; top];
    for i in 0..top {
        let node = graph.node(NodeId::from_index(i));
        let out: Vec<f64> = match *node {
            Node::Const(c) => constant(c.value(), w),
            Node::Seed(s) => constant(seeds[s.index()], w),
            Node::Symbol(s) => {
                let mut v = constant(x0[s.index()], w);
                if degree >= 1 {
                    v[1] = direction[s.index()];
                }
                v
            }
            Node::Apply(op, args) => {
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
                let inherited = used(op, a)
                    .iter()
                    .zip(&args[..op.arity()])
                    .find_map(|(&u, arg)| if u { failed[arg.index()] } else { None });
                match inherited.map_or_else(|| apply(op, a), Err) {
                    Ok(c) => c,
                    Err(at) => {
                        failed[i] = Some(at);
                        let mut x = [0.0; 3];
                        for (xi, ai) in x.iter_mut().zip(a) {
                            *xi = ai[0];
                        }
                        let mut c = vec![f64::NAN; w];
                        c[0] = math::eval(op, &x);
                        c
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

/// Whether the series does not move with `t`.
fn is_constant(a: &[f64]) -> bool {
    a[1..].iter().all(|&x| x == 0.0)
}

/// The series of `op` applied to the argument series `a`, or `Err(op)` where `op` has no
/// expansion at this point.
fn apply(op: Op, a: &[&[f64]]) -> Result<Vec<f64>, Op> {
    let w = a[0].len();
    let mut x = [0.0; 3];
    for (xi, ai) in x.iter_mut().zip(a) {
        *xi = ai[0];
    }
    let value = math::eval(op, &x);
    if a.iter().all(|ai| is_constant(ai)) || w == 1 {
        return Ok(constant(value, w));
    }
    let mut c = match op {
        Op::Neg => a[0].iter().map(|v| -v).collect(),
        Op::Add => zip(a[0], a[1], |x, y| x + y),
        Op::Sub => zip(a[0], a[1], |x, y| x - y),
        Op::Mul => mul(a[0], a[1]),
        Op::Div => div(a[0], a[1]).ok_or(op)?,
        Op::Fma => zip(&mul(a[0], a[1]), a[2], |x, y| x + y),
        Op::Exp => exp(a[0], value),
        Op::Sin => sin_cos(a[0], value, math::cos(x[0]), 1.0).0,
        Op::Cos => sin_cos(a[0], math::sin(x[0]), value, 1.0).1,
        Op::Sinh => sin_cos(a[0], value, math::cosh(x[0]), -1.0).0,
        Op::Cosh => sin_cos(a[0], math::sinh(x[0]), value, -1.0).1,
        Op::Tan => tan_tanh(a[0], value, 1.0),
        Op::Tanh => tan_tanh(a[0], value, -1.0),
        Op::Log => integrate(a[0], value, &recip(a[0]).ok_or(op)?),
        Op::Log10 => {
            let b = scale(a[0], std::f64::consts::LN_10);
            integrate(a[0], value, &recip(&b).ok_or(op)?)
        }
        Op::Sqrt => sqrt(a[0], value).ok_or(op)?,
        Op::Cbrt if a[0][0] == 0.0 => return Err(op),
        Op::Cbrt => pow_const(a[0], 1.0 / 3.0, value),
        Op::Asin | Op::Acos => {
            // (1 − a²)^(−1/2), negated for acos.
            let one_minus = sub_from(1.0, &mul(a[0], a[0]));
            let root = sqrt(&one_minus, math::pow(one_minus[0], 0.5));
            let h = root.and_then(|r| recip(&r)).ok_or(op)?;
            let h = if op == Op::Acos { scale(&h, -1.0) } else { h };
            integrate(a[0], value, &h)
        }
        Op::Atan => {
            let d = add_to(1.0, &mul(a[0], a[0]));
            integrate(a[0], value, &recip(&d).ok_or(op)?)
        }
        Op::Asinh => {
            // 1/hypot(a, 1), its value taken as hypot computes it.
            let d = add_to(1.0, &mul(a[0], a[0]));
            let root = sqrt(&d, math::hypot(x[0], 1.0));
            integrate(a[0], value, &root.and_then(|r| recip(&r)).ok_or(op)?)
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
            integrate(a[0], value, &h)
        }
        Op::Atanh => {
            let d = sub_from(1.0, &mul(a[0], a[0]));
            integrate(a[0], value, &recip(&d).ok_or(op)?)
        }
        Op::Erf => {
            // (2/√π)·exp(−a²).
            let na2 = scale(&mul(a[0], a[0]), -1.0);
            let e = exp(&na2, math::exp(na2[0]));
            integrate(a[0], value, &scale(&e, std::f64::consts::FRAC_2_SQRT_PI))
        }
        Op::Abs => scale(a[0], math::sign(x[0])),
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
        Op::Pow => pow(a[0], a[1], value).ok_or(op)?,
        Op::Atan2 => atan2(a[0], a[1]).ok_or(op)?,
        Op::Hypot => hypot(a[0], a[1], value),
    };
    c[0] = value;
    Ok(c)
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

/// The Cauchy product `a·b`, truncated.
fn mul(a: &[f64], b: &[f64]) -> Vec<f64> {
    (0..a.len())
        .map(|k| (0..=k).map(|j| a[j] * b[k - j]).sum())
        .collect()
}

/// `a/b`, or `None` when `b` moves and `b₀ = 0` (a pole, or an indeterminate form).
fn div(a: &[f64], b: &[f64]) -> Option<Vec<f64>> {
    if is_constant(b) {
        return Some(a.iter().map(|x| x / b[0]).collect());
    }
    if b[0] == 0.0 {
        return None;
    }
    let mut c = vec![0.0; a.len()];
    for k in 0..a.len() {
        let s: f64 = (0..k).map(|j| c[j] * b[k - j]).sum();
        c[k] = (a[k] - s) / b[0];
    }
    Some(c)
}

/// `1/b`; see [`div`].
fn recip(b: &[f64]) -> Option<Vec<f64>> {
    div(&constant(1.0, b.len()), b)
}

/// `√a` with value `c0`, or `None` when `a` moves and `a₀ = 0` (a branch point).
fn sqrt(a: &[f64], c0: f64) -> Option<Vec<f64>> {
    if is_constant(a) {
        return Some(constant(c0, a.len()));
    }
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
fn integrate(a: &[f64], c0: f64, h: &[f64]) -> Vec<f64> {
    let mut c = constant(c0, a.len());
    for k in 1..a.len() {
        let s: f64 = (1..=k).map(|j| j as f64 * a[j] * h[k - j]).sum();
        c[k] = s / k as f64;
    }
    c
}

/// `exp(a)` with value `c0`: `c' = c·a'`.
fn exp(a: &[f64], c0: f64) -> Vec<f64> {
    let mut c = constant(c0, a.len());
    for k in 1..a.len() {
        let s: f64 = (1..=k).map(|j| j as f64 * a[j] * c[k - j]).sum();
        c[k] = s / k as f64;
    }
    c
}

/// `(sin a, cos a)` (`sign = 1`) or `(sinh a, cosh a)` (`sign = −1`) with values `s0`,
/// `c0`: `s' = c·a'`, `c' = −sign·s·a'`.
fn sin_cos(a: &[f64], s0: f64, c0: f64, sign: f64) -> (Vec<f64>, Vec<f64>) {
    let mut s = constant(s0, a.len());
    let mut c = constant(c0, a.len());
    for k in 1..a.len() {
        let (mut ss, mut cc) = (0.0, 0.0);
        for j in 1..=k {
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
fn tan_tanh(a: &[f64], t0: f64, sign: f64) -> Vec<f64> {
    let w = a.len();
    let mut t = constant(t0, w);
    // u = 1 + sign·t², built one coefficient behind t.
    let mut u = constant(1.0 + sign * t0 * t0, w);
    for k in 1..w {
        let s: f64 = (1..=k).map(|j| j as f64 * a[j] * u[k - j]).sum();
        t[k] = s / k as f64;
        let tt: f64 = (0..=k).map(|j| t[j] * t[k - j]).sum();
        u[k] = sign * tt;
    }
    t
}

/// `aʳ` for a constant `r`, `a₀ ≠ 0`, value `c0`: from `a·c' = r·a'·c`.
fn pow_const(a: &[f64], r: f64, c0: f64) -> Vec<f64> {
    let mut c = constant(c0, a.len());
    for k in 1..a.len() {
        let s: f64 = (0..k)
            .map(|j| (r * (k - j) as f64 - j as f64) * a[k - j] * c[j])
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

/// `pow(a, b)` with value `value`, or `None` where it has no expansion (module doc).
fn pow(a: &[f64], b: &[f64], value: f64) -> Option<Vec<f64>> {
    let w = a.len();
    if is_constant(b) {
        let r = b[0];
        if r == 0.0 {
            return Some(constant(1.0, w));
        }
        if a[0] != 0.0 {
            return Some(pow_const(a, r, value));
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
    if is_constant(a) && a[0] == 0.0 {
        return Some(constant(value, w));
    }
    // aᵇ = exp(b·ln a), its value taken as pow computes it.
    let l = integrate(a, math::log(a[0]), &recip(a)?);
    let e = mul(b, &l);
    Some(exp(&e, value))
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
    let q = div(&num, &den)?;
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
