//! The local derivative rule of every operation, in one `match`.
//!
//! [`flow`] answers what a seed `s` (a tangent going up, or an adjoint coming down)
//! contributes along argument `i` of the node `y = op(args)`. Because every operation is
//! scalar, its Jacobian is one row, and pushing a tangent forward through argument `i` is
//! the same multiplication as pulling an adjoint back through it: one rule serves both
//! modes.
//!
//! Conventions (the repository's [ARCHITECTURE.md, "Semantics"](https://github.com/ddx-ad/ddx/blob/main/ARCHITECTURE.md#semantics)): `abs'(0) = 0` (through `sign`); `sign' = 0`; comparisons have
//! no derivative; `max`/`min` give each side half at a tie and otherwise flow to the operand
//! answered (a NaN operand is never answered unless both are); `pow(a, b)` at `a == 0` has
//! `∂/∂b = 0`, and `∂/∂a = 0` when also `b == 0`, else IEEE's `b·a^(b−1)` with the exponent
//! held there ([`Op::Hold`]: it does not move `∂/∂a` where it does not move the function, so
//! the mixed second partials agree; `powi`'s always); `hypot` and `atan2`
//! have both partials `0` at the origin; `select`'s condition is never differentiated.

use crate::{Graph, Node, NodeId, Op};

/// What flows along one argument edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Nothing: the partial is structurally zero.
    Zero,
    /// This contribution.
    Plain(NodeId),
    /// A contribution that counts only where `cond` is truthy (`when == true`) or falsy
    /// (`when == false`); elsewhere it is exactly zero, whatever `value` holds there.
    Guarded {
        /// The condition node (truthy: nonzero or NaN, as `select` reads it).
        cond: NodeId,
        /// Which truth value of `cond` lets the contribution through.
        when: bool,
        /// The contribution where it counts.
        value: NodeId,
    },
}

/// `s · local`, with the structural shortcuts: a literal-zero partial is [`Flow::Zero`],
/// `±1` make no multiplication.
fn scale(g: &mut Graph, s: NodeId, local: NodeId) -> Flow {
    if let Some(l) = g.constant_of(local) {
        if l == 0.0 {
            return Flow::Zero;
        }
        if l == -1.0 {
            return Flow::Plain(g.unary(Op::Neg, s));
        }
    }
    Flow::Plain(g.binary(Op::Mul, s, local))
}

/// `s · local` counted only where `cond` is falsy.
fn unless(g: &mut Graph, cond: NodeId, s: NodeId, local: NodeId) -> Flow {
    match scale(g, s, local) {
        Flow::Plain(value) => Flow::Guarded {
            cond,
            when: false,
            value,
        },
        other => other,
    }
}

/// Whether `id` is a constant other than zero (so a singular point guarded by it being
/// zero cannot occur).
fn nonzero_constant(g: &Graph, id: NodeId) -> bool {
    g.constant_of(id).is_some_and(|v| v != 0.0)
}

/// Whether the partial `∂/∂a` of `op(a, b)` (a `pow` or `powi`) holds its exponent
/// ([`Op::Hold`]) somewhere, as [`flow`] writes it: unless the exponent is a constant or
/// (`pow`) the base a nonzero constant. A graph differentiated once holds a hold exactly
/// where it has such a node; a second sweep must see the hold, so it differentiates the
/// graph the first sweep made, not its extracted copy (from which the holds are gone).
pub fn holds_exponent(g: &Graph, op: Op, a: NodeId, b: NodeId) -> bool {
    match op {
        Op::Pow => g.constant_of(b).is_none() && !nonzero_constant(g, a),
        Op::Powi => g.constant_of(b).is_none(),
        _ => false,
    }
}

/// What seed `s` contributes along argument `i` of node `y`.
///
/// # Panics
/// If `y` is not an operation or `i` is not one of its argument positions (a bug in the
/// calling pass).
pub fn flow(g: &mut Graph, y: NodeId, i: usize, s: NodeId) -> Flow {
    let Node::Apply(op, args) = *g.node(y) else {
        panic!("flow through a leaf node {y}");
    };
    let (a, b) = (args[0], args[1]);
    let c = |g: &mut Graph, v: f64| g.constant(v);
    match op {
        Op::Neg => Flow::Plain(g.unary(Op::Neg, s)),
        Op::Hold => Flow::Zero,
        Op::Add => Flow::Plain(s),
        Op::Sub if i == 0 => Flow::Plain(s),
        Op::Sub => Flow::Plain(g.unary(Op::Neg, s)),
        Op::Mul => scale(g, s, if i == 0 { b } else { a }),
        Op::Div if i == 0 => Flow::Plain(g.binary(Op::Div, s, b)),
        Op::Div => {
            // −s·y/b, as −(s·y)/b: every intermediate is a quantity of the chain rule (the
            // adjoint times the quotient, then the contribution itself), so it is in range
            // wherever the contribution is. The local partial −y/b alone underflows at
            // y = 1e−170, b = 1e170 even when s·y/b is 1e−40; `s/b` alone has a derivative
            // `1/b²` that underflows at b = 1e200, halving the Hessian of `1e300/b`.
            let sy = g.binary(Op::Mul, s, y);
            let q = g.binary(Op::Div, sy, b);
            Flow::Plain(g.unary(Op::Neg, q))
        }
        Op::Sin => {
            let l = g.unary(Op::Cos, a);
            scale(g, s, l)
        }
        Op::Cos => {
            let sin = g.unary(Op::Sin, a);
            let l = g.unary(Op::Neg, sin);
            scale(g, s, l)
        }
        Op::Tan => {
            let yy = g.binary(Op::Mul, y, y);
            let one = c(g, 1.0);
            let l = g.binary(Op::Add, one, yy);
            scale(g, s, l)
        }
        Op::Exp => scale(g, s, y),
        Op::Log => Flow::Plain(g.binary(Op::Div, s, a)),
        Op::Log10 => {
            let ln10 = c(g, std::f64::consts::LN_10);
            let d = g.binary(Op::Mul, a, ln10);
            Flow::Plain(g.binary(Op::Div, s, d))
        }
        Op::Sqrt => {
            let two = c(g, 2.0);
            let d = g.binary(Op::Mul, two, y);
            Flow::Plain(g.binary(Op::Div, s, d))
        }
        Op::Cbrt => {
            let three = c(g, 3.0);
            let yy = g.binary(Op::Mul, y, y);
            let d = g.binary(Op::Mul, three, yy);
            Flow::Plain(g.binary(Op::Div, s, d))
        }
        Op::Abs => {
            let l = g.unary(Op::Sign, a);
            scale(g, s, l)
        }
        Op::Sign | Op::Lt | Op::Le | Op::Eq | Op::Ne => Flow::Zero,
        Op::Asin | Op::Acos => {
            let r = one_minus_square(g, a);
            let d = g.unary(Op::Sqrt, r);
            let q = g.binary(Op::Div, s, d);
            Flow::Plain(if op == Op::Asin {
                q
            } else {
                g.unary(Op::Neg, q)
            })
        }
        Op::Atan => {
            let one = c(g, 1.0);
            let aa = g.binary(Op::Mul, a, a);
            let d = g.binary(Op::Add, one, aa);
            Flow::Plain(g.binary(Op::Div, s, d))
        }
        Op::Sinh => {
            let l = g.unary(Op::Cosh, a);
            scale(g, s, l)
        }
        Op::Cosh => {
            let l = g.unary(Op::Sinh, a);
            scale(g, s, l)
        }
        Op::Tanh => {
            // sech²(a), written three ways and chosen by `select`s (each form is sech²
            // everywhere, so every derivative of the one taken is right; `abs` would cut
            // them at 0 by its convention):
            // - |a| < ½: 1 − y² (y = tanh a ≤ 0.47, so nothing cancels, and its derivative
            //   −2y·y' is formed without cancellation, where the forms below difference
            //   terms of size 32 to make 2a);
            // - elsewhere 4u/(1 + u)² with u = e^(∓2a) ≤ 1: `1 − y²` cancels to 0 from
            //   a ≈ 19, and `1/cosh²` overflows from |a| ≈ 356, where its own derivative
            //   reads ∞/∞ and a Hessian turns NaN.
            let zero = c(g, 0.0);
            let negative = g.binary(Op::Lt, a, zero);
            let up = sech2_arm(g, a, 2.0);
            let down = sech2_arm(g, a, -2.0);
            let far = g.select(negative, up, down);
            let one = c(g, 1.0);
            let yy = g.binary(Op::Mul, y, y);
            let near = g.binary(Op::Sub, one, yy);
            let abs = g.unary(Op::Abs, a);
            let half = c(g, 0.5);
            let small = g.binary(Op::Lt, abs, half);
            let l = g.select(small, near, far);
            scale(g, s, l)
        }
        Op::Asinh => {
            let one = c(g, 1.0);
            let d = g.binary(Op::Hypot, a, one);
            Flow::Plain(g.binary(Op::Div, s, d))
        }
        Op::Acosh => {
            let one = c(g, 1.0);
            let lo = g.binary(Op::Sub, a, one);
            let hi = g.binary(Op::Add, a, one);
            let (lo, hi) = (g.unary(Op::Sqrt, lo), g.unary(Op::Sqrt, hi));
            let d = g.binary(Op::Mul, lo, hi);
            Flow::Plain(g.binary(Op::Div, s, d))
        }
        Op::Atanh => {
            let d = one_minus_square(g, a);
            Flow::Plain(g.binary(Op::Div, s, d))
        }
        Op::Erf => {
            let k = c(g, std::f64::consts::FRAC_2_SQRT_PI);
            let aa = g.binary(Op::Mul, a, a);
            let naa = g.unary(Op::Neg, aa);
            let e = g.unary(Op::Exp, naa);
            let l = g.binary(Op::Mul, k, e);
            scale(g, s, l)
        }
        Op::Log1p => {
            // 1/(1 + a): 1 + a rounds by at most half an ULP of a result near 1, so the
            // partial keeps its digits where log1p is used for them (a near 0).
            let one = c(g, 1.0);
            let d = g.binary(Op::Add, one, a);
            Flow::Plain(g.binary(Op::Div, s, d))
        }
        Op::Expm1 => {
            // exp(a), not y + 1: for a below about −37, y rounds to −1 and y + 1 to 0.
            let l = g.unary(Op::Exp, a);
            scale(g, s, l)
        }
        Op::Log2 => {
            let ln2 = c(g, std::f64::consts::LN_2);
            let d = g.binary(Op::Mul, a, ln2);
            Flow::Plain(g.binary(Op::Div, s, d))
        }
        Op::Recip => {
            // −s·y/a as −(s·y)/a, for the range reasons of the quotient's second operand.
            let sy = g.binary(Op::Mul, s, y);
            let q = g.binary(Op::Div, sy, a);
            Flow::Plain(g.unary(Op::Neg, q))
        }
        Op::Pow | Op::Powi if i == 0 => {
            // ∂/∂a = b·a^(b−1) (for powi a powi too), and exactly 0 at the singular point
            // a == 0, b == 0 (where IEEE would say 0·∞). Nowhere else: at b == 0 with
            // a ≠ 0 the formula is already 0, and a guard there would also cut the
            // (finite) derivatives of this partial at higher orders.
            if g.constant_of(b) == Some(0.0) {
                return Flow::Zero;
            }
            // The exponent as the partial reads it. Differentiating the partial again
            // must not move the exponent where the exponent does not move the function:
            // never for `powi` (∂/∂n = 0), and at a == 0 for `pow` (∂/∂b = 0 there). So
            // it is held there, and ∂²f/∂b∂a is the ∂²f/∂a∂b = 0 that differentiating
            // ∂f/∂b gives, at every order (the held exponent's own partials are `pow`s
            // of a == 0 again). Without it ∂/∂b of b·a^(b−1) keeps a^(b−1) (∞ for
            // b < 1) and the Hessian is not symmetric.
            let e = if !holds_exponent(g, op, a, b) {
                b
            } else if op == Op::Powi {
                g.unary(Op::Hold, b)
            } else {
                let zero = c(g, 0.0);
                let a_zero = g.binary(Op::Eq, a, zero);
                let held = g.unary(Op::Hold, b);
                g.select(a_zero, held, b)
            };
            let one = c(g, 1.0);
            let em1 = g.binary(Op::Sub, e, one);
            let p = g.binary(op, a, em1);
            let l = g.binary(Op::Mul, e, p);
            if g.constant_of(b).is_some() || nonzero_constant(g, a) {
                return scale(g, s, l);
            }
            let zero = c(g, 0.0);
            let b_zero = g.binary(Op::Eq, b, zero);
            let cond = if g.constant_of(a) == Some(0.0) {
                b_zero
            } else {
                let a_zero = g.binary(Op::Eq, a, zero);
                g.binary(Op::Mul, a_zero, b_zero)
            };
            unless(g, cond, s, l)
        }
        // The exponent is an integer (elsewhere the value is NaN): never differentiated.
        Op::Powi => Flow::Zero,
        Op::Pow => {
            // ∂/∂b = a^b·ln(a), and exactly 0 wherever a == 0.
            if g.constant_of(a) == Some(0.0) {
                return Flow::Zero;
            }
            let ln = g.unary(Op::Log, a);
            let l = g.binary(Op::Mul, y, ln);
            if g.constant_of(a).is_some() {
                scale(g, s, l)
            } else {
                let zero = c(g, 0.0);
                let cond = g.binary(Op::Eq, a, zero);
                unless(g, cond, s, l)
            }
        }
        Op::Atan2 => {
            // atan2(a, b): ∂/∂a = b/h², ∂/∂b = −a/h², h = hypot(a, b); 0 at the origin.
            let h = g.binary(Op::Hypot, a, b);
            let (num, other) = if i == 0 { (b, a) } else { (a, b) };
            let q = g.binary(Op::Div, num, h);
            let q = g.binary(Op::Div, q, h);
            let l = if i == 0 { q } else { g.unary(Op::Neg, q) };
            guard_origin(g, h, other, num, s, l)
        }
        Op::Hypot => {
            // ∂/∂a = a/h; 0 at the origin.
            let (mine, other) = if i == 0 { (a, b) } else { (b, a) };
            let l = g.binary(Op::Div, mine, y);
            guard_origin(g, y, other, mine, s, l)
        }
        Op::Max | Op::Min => {
            let w = tie_weight(g, op, a, b, i);
            match scale(g, s, w) {
                Flow::Plain(value) => Flow::Guarded {
                    cond: w,
                    when: true,
                    value,
                },
                other => other,
            }
        }
        Op::Select => match i {
            0 => Flow::Zero,
            1 => Flow::Guarded {
                cond: a,
                when: true,
                value: s,
            },
            _ => Flow::Guarded {
                cond: a,
                when: false,
                value: s,
            },
        },
        Op::Call => match g.constant_of(args[0]).and_then(|t| {
            let wrt = i.checked_sub(1)?;
            crate::user::partial_tag(t, wrt)
        }) {
            // The partial of a call is the call of the user's partial.
            Some(t) => {
                let tag = g.constant(t);
                let l = g.apply(Op::Call, &[tag, args[1], args[2]]);
                scale(g, s, l)
            }
            None => Flow::Zero,
        },
        // No value of its own: a call's rule flows to the pack's arguments directly.
        Op::Pack => Flow::Zero,
        Op::Fma => match i {
            0 => scale(g, s, b),
            1 => scale(g, s, a),
            _ => Flow::Plain(s),
        },
    }
}

/// `4u/(1 + u)²` with `u = e^(k·a)`: `sech²(a)` for `k = ±2`, without overflow where
/// `k·a ≤ 0`.
fn sech2_arm(g: &mut Graph, a: NodeId, k: f64) -> NodeId {
    let k = g.constant(k);
    let e = g.binary(Op::Mul, k, a);
    let u = g.unary(Op::Exp, e);
    let one = g.constant(1.0);
    let d = g.binary(Op::Add, one, u);
    let dd = g.binary(Op::Mul, d, d);
    let four = g.constant(4.0);
    let n = g.binary(Op::Mul, four, u);
    g.binary(Op::Div, n, dd)
}

/// `1 − a²`, accurate in value and in derivative: `1 − a·a` for `|a| < ½` (its derivative
/// `−2a` is formed without cancellation, where `(1 − a)(1 + a)` would form it as the
/// difference `(1 − a) − (1 + a)` and lose the digits of a small `a`), `(1 − a)·(1 + a)`
/// elsewhere (near `|a| = 1` the subtraction `1 − a` is exact, where `1 − a·a` loses the
/// digits of the result to the rounding of `a·a`: 7 of them at `a = 1 − 10⁻¹⁰`).
fn one_minus_square(g: &mut Graph, a: NodeId) -> NodeId {
    let one = g.constant(1.0);
    let aa = g.binary(Op::Mul, a, a);
    let inner = g.binary(Op::Sub, one, aa);
    let lo = g.binary(Op::Sub, one, a);
    let hi = g.binary(Op::Add, one, a);
    let outer = g.binary(Op::Mul, lo, hi);
    let abs = g.unary(Op::Abs, a);
    let half = g.constant(0.5);
    let small = g.binary(Op::Lt, abs, half);
    g.select(small, inner, outer)
}

/// `s·l`, guarded off where `h == 0` unless one of the two operands is a nonzero constant
/// (then the origin cannot be reached).
fn guard_origin(
    g: &mut Graph,
    h: NodeId,
    other: NodeId,
    mine: NodeId,
    s: NodeId,
    l: NodeId,
) -> Flow {
    if nonzero_constant(g, other) || nonzero_constant(g, mine) {
        return scale(g, s, l);
    }
    let zero = g.constant(0.0);
    let cond = g.binary(Op::Eq, h, zero);
    unless(g, cond, s, l)
}

/// The share of `max(a, b)`'s (or `min`'s) derivative that goes to argument `i`: `1` for
/// the operand answered, `0` for the other, `½` each at a tie. A NaN operand is answered
/// only when both are NaN (then `a` gets it all).
fn tie_weight(g: &mut Graph, op: Op, a: NodeId, b: NodeId, i: usize) -> NodeId {
    let one = g.constant(1.0);
    let half = g.constant(0.5);
    // a wins outright: b < a for max, a < b for min.
    let wins = if op == Op::Max {
        g.binary(Op::Lt, b, a)
    } else {
        g.binary(Op::Lt, a, b)
    };
    let tie = g.binary(Op::Eq, a, b);
    // Neither wins nor ties: a loses, unless b is NaN (then a is answered).
    let b_ordered = g.binary(Op::Le, b, b);
    let b_nan = g.binary(Op::Sub, one, b_ordered);
    let rest = g.select(tie, half, b_nan);
    let wa = g.select(wins, one, rest);
    if i == 0 {
        wa
    } else {
        g.binary(Op::Sub, one, wa)
    }
}
