"""SymPy as an independent truth: random expressions over the whole operation table,
differentiated symbolically and compared with ``jacobian``, ``hessian``, ``hvp`` and
``univariate_derivative`` at random points.

Each test puts every operation (unary, binary, constant powers, comparisons, ``select``)
at the root in turn, over random subtrees drawn from every operation; hypothesis draws the
seeds. Operations with a restricted domain get their argument through a guard, the
same in both builds (``log(a*a + 1/2)``, ``asin(9/10·tanh(a))`` …), so that almost every
draw is defined; draws whose truth is not finite are skipped. The truth is SymPy's
derivative evaluated at 30 digits (lambdified to mpmath), and a ddx answer ``d`` passes against the
truth ``t`` when ``|d − t| ≤ 1e-9 · (1 + |t|)``: several hundred ULP of the magnitude,
room for the float rounding of trees a few levels deep and nothing more.

Trees and points are drawn by NumPy from a seed hypothesis chooses, not by hypothesis's
own strategies (which favour the first choices and 0 and small integers): a point exactly on a kink or a tie is where ddx's
conventions and SymPy's distributions part, and is tested separately
(``test_conventions``).
"""

from __future__ import annotations

import math

import mpmath

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import ddx

SYMBOLS = ("x", "y", "z")
REAL = {s: sp.Symbol(s, real=True) for s in SYMBOLS}
DIGITS = 30
RTOL = 1e-9

# Each unary op: (ddx function, sympy function, guard applied to the argument).
HALF = sp.Rational(1, 2)


def _pos(a, lib):  # a*a + 1/2 > 0
    return a * a + (HALF if lib is sp else 0.5)


def _acosh_dom(a, lib):  # > 1
    return a * a + (sp.Rational(5, 4) if lib is sp else 1.25)


def _unit(a, lib):  # |.| < 0.9
    return (sp.Rational(9, 10) * sp.tanh(a)) if lib is sp else 0.9 * ddx.tanh(a)


def _tan_dom(a, lib):  # |.| < 1.2 < pi/2
    return (sp.Rational(6, 5) * sp.tanh(a)) if lib is sp else 1.2 * ddx.tanh(a)


def _bounded(a, lib):  # |.| < 2, so exp and friends stay small
    return (2 * sp.tanh(a)) if lib is sp else 2.0 * ddx.tanh(a)


def _id(a, lib):
    return a


UNARY = {
    "sin": (ddx.sin, sp.sin, _id),
    "cos": (ddx.cos, sp.cos, _id),
    "tan": (ddx.tan, sp.tan, _tan_dom),
    "exp": (ddx.exp, sp.exp, _bounded),
    "log": (ddx.log, sp.log, _pos),
    "log10": (ddx.log10, lambda a: sp.log(a, 10), _pos),
    "sqrt": (ddx.sqrt, sp.sqrt, _pos),
    "cbrt": (ddx.cbrt, lambda a: sp.sign(a) * sp.Abs(a) ** sp.Rational(1, 3), _id),
    "abs": (ddx.abs, sp.Abs, _id),
    # SymPy leaves d sign(g(x))/dx unevaluated; as a Piecewise its derivative is 0.
    "sign": (ddx.sign, lambda a: sp.Piecewise((1, a > 0), (-1, a < 0), (0, True)), _id),
    "asin": (ddx.asin, sp.asin, _unit),
    "acos": (ddx.acos, sp.acos, _unit),
    "atan": (ddx.atan, sp.atan, _id),
    "sinh": (ddx.sinh, sp.sinh, _bounded),
    "cosh": (ddx.cosh, sp.cosh, _bounded),
    "tanh": (ddx.tanh, sp.tanh, _id),
    "asinh": (ddx.asinh, sp.asinh, _id),
    "acosh": (ddx.acosh, sp.acosh, _acosh_dom),
    "atanh": (ddx.atanh, sp.atanh, _unit),
    "erf": (ddx.erf, sp.erf, _id),
    "neg": (lambda a: -a, lambda a: -a, _id),
    "log1p": (ddx.log1p, lambda a: sp.log(1 + a), _pos),
    "expm1": (ddx.expm1, lambda a: sp.exp(a) - 1, _bounded),
    "log2": (ddx.log2, lambda a: sp.log(a, 2), _pos),
    "recip": (ddx.recip, lambda a: 1 / a, _pos),
}

BINARY = ("add", "sub", "mul", "div", "pow", "atan2", "hypot", "max", "min")
INTEGER_POWERS = (-3, -1, 0, 2, 5)
COMPARE = ("lt", "le", "gt", "ge")
POWERS = (2.0, 3.0, -1.0, 0.5, -2.0, 1.5)


OPS = (
    [("unary", name) for name in sorted(UNARY)]
    + [("binary", name) for name in BINARY]
    + [("powc", p) for p in POWERS]
    + [("powi", k) for k in INTEGER_POWERS]
    + [("compare", name) for name in COMPARE]
    + [("select", name) for name in COMPARE]
)
"""Every operation a tree can hold; each test puts every one at the root in turn."""


def random_tree(rng, symbols, depth, root=None):
    """A random tree over ``symbols``: ``root`` (an entry of OPS) at the top when given,
    then operations drawn uniformly from OPS down to ``depth``, leaves symbols or constants."""
    if root is None:
        if depth == 0 or rng.random() < 0.3:
            if rng.random() < 0.7:
                return ("sym", symbols[rng.integers(len(symbols))])
            return ("const", float(rng.choice([0.5, 1.5, 2.0, -0.75, 3.0])))
        root = OPS[rng.integers(len(OPS))]
    kind, name = root
    sub = lambda: random_tree(rng, symbols, depth - 1)  # noqa: E731
    if kind == "unary":
        return ("unary", name, sub())
    if kind == "binary":
        return ("binary", name, sub(), sub())
    if kind in ("powc", "powi"):
        return (kind, sub(), name)
    if kind == "compare":
        return ("compare", name, sub(), sub())
    return ("select", name, sub(), sub(), sub(), sub())


def _compare(op, a, b, lib):
    if lib is sp:
        rel = {"lt": sp.Lt, "le": sp.Le, "gt": sp.Gt, "ge": sp.Ge}[op](a, b)
        return rel
    return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[op]


def build(t, lib, env):
    """The tree ``t`` as a ddx Expression (``lib`` is ``ddx``) or a SymPy expression."""
    kind = t[0]
    if kind == "sym":
        return env[t[1]]
    if kind == "const":
        return sp.Float(t[1]) if lib is sp else ddx.Expression(t[1])
    if kind == "unary":
        d, s, guard = UNARY[t[1]]
        a = guard(build(t[2], lib, env), lib)
        return s(a) if lib is sp else d(a)
    if kind == "binary":
        op, a, b = t[1], build(t[2], lib, env), build(t[3], lib, env)
        if op == "add":
            return a + b
        if op == "sub":
            return a - b
        if op == "mul":
            return a * b
        if op == "div":
            return a / _pos(b, lib)
        if op == "pow":
            base, exponent = _pos(a, lib), _tan_dom(b, lib)
            return base**exponent if lib is sp else ddx.pow(base, exponent)
        if op == "atan2":
            return sp.atan2(a, b) if lib is sp else ddx.atan2(a, b)
        if op == "hypot":
            return sp.sqrt(a * a + b * b) if lib is sp else ddx.hypot(a, b)
        if op == "max":
            return sp.Max(a, b) if lib is sp else ddx.max(a, b)
        if op == "min":
            return sp.Min(a, b) if lib is sp else ddx.min(a, b)
    if kind == "powc":
        a, p = build(t[1], lib, env), t[2]
        if p in (0.5, -1.0, -2.0, 1.5):
            a = _pos(a, lib)
        if lib is sp:
            return a ** (sp.Integer(int(p)) if p.is_integer() else sp.Rational(str(p)))
        return a**p
    if kind == "powi":
        a, k = build(t[1], lib, env), t[2]
        if k < 0:
            a = _pos(a, lib)
        return a ** sp.Integer(k) if lib is sp else ddx.powi(a, k)
    if kind == "compare":
        rel = _compare(t[1], build(t[2], lib, env), build(t[3], lib, env), lib)
        return sp.Piecewise((1, rel), (0, True)) if lib is sp else rel
    if kind == "select":
        rel = _compare(t[1], build(t[2], lib, env), build(t[3], lib, env), lib)
        a, b = build(t[4], lib, env), build(t[5], lib, env)
        return sp.Piecewise((a, rel), (b, True)) if lib is sp else ddx.select(rel, a, b)
    raise AssertionError(t)


class _Vars(dict):
    """Names a symbol the first time the tree uses it (so unused names are no symbols)."""

    def __missing__(self, name):
        self[name] = ddx.var(name)
        return self[name]


def pair(t):
    """The ddx equation of tree ``t`` (or None when it names no symbol) and its SymPy twin."""
    try:
        eq = ddx.equation(lambda: build(t, ddx, _Vars()))
    except ddx.Error as e:
        assert e.code is ddx.errc.no_graph
        return None, None
    expr = build(t, sp, REAL)
    if {str(s) for s in expr.free_symbols} != set(eq.symbols):
        # The tree cancels structurally (`x - x`, SymPy folds it): there the chain rule in
        # IEEE arithmetic may meet `∞·0` (NaN) where SymPy's algebra answers 0. That is
        # ddx's documented plain-IEEE rule, not an error; such trees are not compared.
        return None, None
    return eq, expr


def _heaviside(x, h0=0.5):
    return mpmath.mpf(h0) if x == 0 else mpmath.mpf(1) if x > 0 else mpmath.mpf(0)


def _dirac(x, *_):
    return mpmath.inf if x == 0 else mpmath.mpf(0)


_MODULES = [{"Heaviside": _heaviside, "DiracDelta": _dirac, "sign": mpmath.sign}, "mpmath"]


def truth(expr, point):
    """``expr`` at ``point`` (SymPy symbol → value), at DIGITS digits, as a float; NaN
    where it is not a finite real number."""
    if expr.has(sp.Derivative):
        return math.nan  # SymPy could not differentiate it: no truth to compare with
    names = sorted(point, key=str)
    f = sp.lambdify(names, expr, modules=_MODULES)
    with mpmath.workdps(DIGITS):
        try:
            v = f(*(mpmath.mpf(point[s]) for s in names))
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            return math.nan
        if isinstance(v, mpmath.mpc):
            return math.nan
        v = float(v)
    return v if math.isfinite(v) else math.nan


def close(got, want):
    return abs(got - want) <= RTOL * (1.0 + abs(want))


def check(got, want, what):
    if math.isfinite(want):
        assert close(got, want), f"{what}: ddx {got!r}, SymPy {want!r}"


def random_point(eq, seed):
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.2, 1.8, size=eq.arity) * rng.choice([-1.0, 1.0], size=eq.arity)
    return values, {REAL[s]: float(v) for s, v in zip(eq.symbols, values)}


seeds = st.integers(0, 2**32 - 1)
every_op = pytest.mark.parametrize("root", OPS, ids=lambda r: f"{r[0]}-{r[1]}")


@every_op
@settings(max_examples=12)
@given(seed=seeds)
def test_jacobian_against_sympy(root, seed):
    rng = np.random.default_rng(seed)
    eq, expr = pair(random_tree(rng, SYMBOLS, 3, root))
    if eq is None:
        return
    x, point = random_point(eq, seed)
    value, jac = eq.jacobian(x)
    check(value, truth(expr, point), f"value of {expr}")
    for j, s in enumerate(eq.symbols):
        check(jac[j], truth(sp.diff(expr, REAL[s]), point), f"d/d{s} of {expr}")


@every_op
@settings(max_examples=6)
@given(seed=seeds)
def test_hessian_and_hvp_against_sympy(root, seed):
    rng = np.random.default_rng(seed)
    eq, expr = pair(random_tree(rng, SYMBOLS, 2, root))
    if eq is None:
        return
    x, point = random_point(eq, seed)
    names = [REAL[s] for s in eq.symbols]
    H = np.array([[truth(sp.diff(expr, a, b), point) for b in names] for a in names])
    value, jac, hess = eq.hessian(x)
    for i in range(eq.arity):
        for j in range(eq.arity):
            check(hess[i, j], H[i, j], f"H[{i},{j}] of {expr}")
    v = np.random.default_rng(seed + 1).uniform(-1, 1, size=eq.arity)
    _, grad, hv = eq.hvp(v, x)
    np.testing.assert_array_equal(grad, jac)  # the same sweep: the same bits, NaN included
    if np.all(np.isfinite(H)):
        for i in range(eq.arity):
            # The truth of (H·v)_i to the same tolerance, scaled by the terms' sizes.
            want = float(np.dot(H[i], v))
            scale = float(np.dot(np.abs(H[i]), np.abs(v)))
            assert abs(hv[i] - want) <= RTOL * (1.0 + scale), f"(Hv)[{i}] of {expr}"


@every_op
@settings(max_examples=6)
@given(seed=seeds, k=st.integers(0, 4))
def test_univariate_derivative_against_sympy(root, seed, k):
    rng = np.random.default_rng(seed)
    eq, expr = pair(random_tree(rng, ("x",), 2, root))
    if eq is None:
        return
    x, point = random_point(eq, seed)
    try:
        got = eq.univariate_derivative(k, float(x[0]))
    except ddx.Error as e:
        # Refused only at a branch point or pole, which a random point does not hit.
        pytest.fail(f"{e} for {expr} at {x[0]}")
    want = truth(sp.diff(expr, REAL["x"], k), point)
    if math.isfinite(want):
        # Taylor coefficients of order k carry k! and cancel more: a looser floor.
        assert abs(got - want) <= 1e-8 * (1.0 + abs(want)), f"d^{k}/dx^{k} of {expr}"


def test_conventions():
    """The documented values at singular points (README, "Semantics worth knowing")."""
    g = lambda text, x: ddx.equation(text).gradient(x).tolist()  # noqa: E731
    assert g("abs(x)", [0.0]) == [0.0]
    assert g("sign(x)", [0.0]) == [0.0] and g("sign(x)", [2.0]) == [0.0]
    assert g("max(x, y)", [1.0, 1.0]) == [0.5, 0.5]
    assert g("min(x, y)", [1.0, 1.0]) == [0.5, 0.5]
    assert g("max(x, y)", [math.nan, 2.0]) == [0.0, 1.0]
    assert ddx.equation("max(x, y)").evaluate([math.nan, 2.0]) == 2.0
    assert g("pow(x, y)", [0.0, 0.0]) == [0.0, 0.0]
    assert g("pow(x, y)", [0.0, 2.0]) == [0.0, 0.0]
    assert g("pow(x, y)", [0.0, 0.5]) == [math.inf, 0.0]
    assert g("hypot(x, y)", [0.0, 0.0]) == [0.0, 0.0]
    assert g("atan2(x, y)", [0.0, 0.0]) == [0.0, 0.0]
    assert math.isnan(g("sqrt(x*x)", [0.0])[0])  # plain IEEE elsewhere
    assert ddx.equation("x != y").evaluate([math.nan, 1.0]) == 0.0
    assert ddx.equation("x < y").evaluate([math.nan, 1.0]) == 0.0
    # The untaken arm's NaN never reaches a derivative, at any order.
    eq = ddx.equation("select(x > 0, log(x), x * x)")
    value, grad, hess = eq.hessian([-1.0])
    assert (value, grad.tolist(), hess.tolist()) == (1.0, [-2.0], [[2.0]])
    assert eq.hvp([1.0], [-1.0])[2].tolist() == [2.0]
    assert eq.jvp([1.0], [-1.0])[1] == -2.0
    assert [eq.univariate_derivative(k, -1.0) for k in range(4)] == [1.0, -2.0, 2.0, 0.0]
    # A NaN condition takes the first arm.
    assert ddx.equation("select(x, y, 2 * y)").evaluate([math.nan, 3.0]) == 3.0
