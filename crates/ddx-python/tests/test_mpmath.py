"""mpmath as an independent truth (issue 21): ddx's gradients, Hessians, ``hvp`` and
univariate derivatives against mpmath's high-precision numerical derivatives
(``mpmath.diff``, ``mpmath.taylor``) of the same function written with mpmath's own
functions, at ordinary points and at the hard points of ARCHITECTURE.md's Semantics.

Tolerances, stated per kind of point:

- **Ordinary points** (every function analytic around the point): the truth is mpmath's
  derivative at 50 digits of the function at the float point itself, rounded to a double
  ``t``; ddx's ``d`` passes when ``|d − t| ≤ ULPS · ulp(max(|t|, scale))`` with ``ULPS =
  16`` for first and second order (a few roundings per operation of a short formula and
  a sum of a few terms, which can cancel: ``scale`` is the largest partial of that order
  at the point; 3.75 ULP is the worst seen), and ``|d − t| ≤ 1e-13 · max(|t|, 1)`` for
  univariate derivatives of order up to 6 (Taylor arithmetic rounds once per coefficient
  product, ``O(K²)`` of them; 1e-14 is the worst seen).
- **Branch points** (``sqrt``, ``cbrt``, ``x**1.3``, ``log``, ``1/x`` at 0, ``asin`` and
  ``acosh`` at 1; ``e^800`` overflowing): there is no derivative at the point, and ddx
  answers the documented one-sided limit (ARCHITECTURE.md, "Derivatives" and "Taylor at
  branch points"), or NaN where the rules meet ``0·∞`` (plain IEEE, documented; then
  only the NaN is checked). mpmath checks the limit from the side the function is
  defined on: its derivative at
  ``h = 1e-30`` and ``1e-40`` (at 120 digits, step ``1e-80``) must move towards ddx's
  answer — grow in magnitude by at least 10× with ddx's sign for ``±∞``, shrink for
  ``0`` (to below ``1e-3``), and agree to ``1e-6`` relative for a finite limit. Where
  the double itself overflows (``c·e^(−d)`` at ``d = −800``), mpmath's exact derivative
  rounded to a double is ``±∞`` and must equal ddx's.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import ddx

ULPS = 16


def _cbrt(v):
    """The real cube root (mpmath.cbrt answers the principal, complex, root below 0)."""
    return mpmath.sign(v) * mpmath.cbrt(abs(v))


# (ddx text, the same function of (x, y) in mpmath)
TWO = [
    ("x*exp(y) + sin(x*y)", lambda x, y: x * mpmath.exp(y) + mpmath.sin(x * y)),
    ("log(x*x + y) / (1 + y*y)", lambda x, y: mpmath.log(x * x + y) / (1 + y * y)),
    ("x**y + atan2(y, x)", lambda x, y: mpmath.power(x, y) + mpmath.atan2(y, x)),
    ("sqrt(x*x + y*y) * cos(y)", lambda x, y: mpmath.sqrt(x * x + y * y) * mpmath.cos(y)),
    ("tanh(x - y) * erf(x)", lambda x, y: mpmath.tanh(x - y) * mpmath.erf(x)),
    ("powi(x, 3) * cbrt(y)", lambda x, y: x**3 * _cbrt(y)),
    ("hypot(x, y) - asinh(x*y)", lambda x, y: mpmath.hypot(x, y) - mpmath.asinh(x * y)),
    ("x**2.5 * log1p(y*y)", lambda x, y: mpmath.power(x, 2.5) * mpmath.log1p(y * y)),
]
POINTS = [(0.7, 1.3), (1.9, -0.4), (2.5, 0.25), (0.35, 2.75)]

ONE = [
    ("exp(sin(x))", lambda x: mpmath.exp(mpmath.sin(x))),
    ("log1p(x*x) / (1 + x)", lambda x: mpmath.log1p(x * x) / (1 + x)),
    ("x**2.5 + sqrt(x)", lambda x: mpmath.power(x, 2.5) + mpmath.sqrt(x)),
    ("atan(x) * cosh(x)", lambda x: mpmath.atan(x) * mpmath.cosh(x)),
    ("cbrt(x) / (2 + x*x)", lambda x: _cbrt(x) / (2 + x * x)),
]
POINTS_1 = [0.3, 1.1, 2.7]


def _ulp(v: float) -> float:
    return math.ulp(v) if math.isfinite(v) else math.inf


def _close(d: float, t: float, scale: float, text: str) -> None:
    bound = ULPS * _ulp(max(abs(t), scale))
    assert abs(d - t) <= bound, f"{text}: ddx {d!r}, mpmath {t!r}, off by {abs(d - t) / _ulp(max(abs(t), scale)):.1f} ulp"


@pytest.mark.parametrize(("text", "f"), TWO, ids=[t for t, _ in TWO])
def test_gradients_and_hessians_at_ordinary_points(text, f):
    eq = ddx.equation(text)
    assert eq.symbols == ["x", "y"]
    with mpmath.workdps(50):
        for p in POINTS:
            x0 = [mpmath.mpf(v) for v in p]
            grad = [float(mpmath.diff(f, x0, (1 - j, j))) for j in range(2)]
            hess = [
                [float(mpmath.diff(f, x0, (2 - i - j, i + j))) for j in range(2)]
                for i in range(2)
            ]
            g = eq.gradient(list(p))
            _, gh, h = eq.hessian(list(p))
            h = np.asarray(h).reshape(2, 2)
            g1 = max(abs(v) for v in grad)
            h1 = max(abs(v) for row in hess for v in row)
            for j in range(2):
                _close(float(g[j]), grad[j], g1, f"{text} at {p}: d/d{'xy'[j]}")
                _close(float(gh[j]), grad[j], g1, f"{text} at {p}: hessian's gradient {j}")
                _, _, hv = eq.hvp([1.0 if k == j else 0.0 for k in range(2)], list(p))
                for i in range(2):
                    _close(float(h[i, j]), hess[i][j], h1, f"{text} at {p}: H[{i},{j}]")
                    _close(float(hv[i]), hess[i][j], h1, f"{text} at {p}: hvp(e_{j})[{i}]")
            # A direction with no zero: H·v against the truth's H·v.
            v = (0.75, -1.25)
            _, _, hv = eq.hvp(list(v), list(p))
            for i in range(2):
                t = hess[i][0] * v[0] + hess[i][1] * v[1]
                _close(float(hv[i]), t, 2 * h1, f"{text} at {p}: (H·v)[{i}]")


@pytest.mark.parametrize(("text", "f"), ONE, ids=[t for t, _ in ONE])
def test_univariate_derivatives_at_ordinary_points(text, f):
    eq = ddx.equation(text)
    with mpmath.workdps(50):
        for x0 in POINTS_1:
            coeffs = mpmath.taylor(f, mpmath.mpf(x0), 6)
            ds = eq.univariate_derivatives(6, x0)
            for k in range(7):
                t = float(coeffs[k] * mpmath.factorial(k))
                d = float(ds[k])
                assert d == eq.univariate_derivative(k, x0)
                assert abs(d - t) <= 1e-13 * max(abs(t), 1.0), f"{text} at {x0}: K={k}: ddx {d!r}, mpmath {t!r}"
            # K = 1, 2 against the gradient and the Hessian (other arithmetic, so within
            # rounding; at branch points below they are the same bits).
            g = float(eq.gradient([x0])[0])
            h = float(np.asarray(eq.hessian([x0])[2]).ravel()[0])
            _close(float(ds[1]), g, abs(g), f"{text} at {x0}: K=1 vs gradient")
            _close(float(ds[2]), h, abs(h), f"{text} at {x0}: K=2 vs hessian")


def _one_sided(f, x0: float, k: int, side: float) -> list[float]:
    """mpmath's k-th derivative of f at x0 + side·1e-30 and x0 + side·1e-40 (120 digits)."""
    with mpmath.workdps(120):
        step = mpmath.mpf("1e-80")
        return [
            float(mpmath.diff(f, mpmath.mpf(x0) + side * mpmath.mpf(h), k, h=step))
            for h in ("1e-30", "1e-40")
        ]


def _approaches(limit: float, near: list[float], what: str) -> None:
    a, b = near
    if math.isinf(limit):
        assert math.copysign(1.0, b) == math.copysign(1.0, limit), f"{what}: {near} → {limit}"
        assert abs(b) > 10 * abs(a), f"{what}: {near} does not grow towards {limit}"
    elif limit == 0.0:
        assert abs(b) < abs(a) and abs(b) < 1e-3, f"{what}: {near} does not shrink to 0"
    else:
        assert abs(b - limit) <= 1e-6 * abs(limit), f"{what}: {near} → {limit}"


# (text, mpmath function, the branch point, the side the function is defined on, ddx's
# documented one-sided limits for K = 1, 2, 3)
BRANCH = [
    ("sqrt(x)", mpmath.sqrt, 0.0, 1.0, [math.inf, -math.inf, math.inf]),
    # cbrt' = 1/(3·cbrt(x)²): its derivative meets cbrt(x)·cbrt'(x) = 0·∞ (plain IEEE,
    # ARCHITECTURE.md "What the rules guard"), so K ≥ 2 is NaN although the limits exist.
    ("cbrt(x)", _cbrt, 0.0, 1.0, [math.inf, math.nan, math.nan]),
    ("x**1.3", lambda x: mpmath.power(x, 1.3), 0.0, 1.0, [0.0, math.inf, -math.inf]),
    ("x**2.5", lambda x: mpmath.power(x, 2.5), 0.0, 1.0, [0.0, 0.0, math.inf]),
    ("log(x)", mpmath.log, 0.0, 1.0, [math.inf, -math.inf, math.inf]),
    ("1/x", lambda x: 1 / x, 0.0, 1.0, [-math.inf, math.inf, -math.inf]),
    ("2*x - x**2.3", lambda x: 2 * x - mpmath.power(x, 2.3), 0.0, 1.0, [2.0, 0.0, -math.inf]),
    ("asin(x)", mpmath.asin, 1.0, -1.0, [math.inf, math.inf, math.inf]),
    # K = 3 meets 0·∞ in the rules (NaN), as cbrt's K = 2.
    ("acosh(x)", mpmath.acosh, 1.0, 1.0, [math.inf, -math.inf, math.nan]),
]


@pytest.mark.parametrize(("text", "f", "x0", "side", "limits"), BRANCH, ids=[b[0] for b in BRANCH])
def test_branch_points_answer_the_one_sided_limits(text, f, x0, side, limits):
    eq = ddx.equation(text)
    for k, limit in enumerate(limits, start=1):
        d = eq.univariate_derivative(k, x0)
        if math.isnan(limit):
            assert math.isnan(d), f"{text} at {x0}: K={k}: ddx {d}, documented NaN"
            continue
        assert d == limit, f"{text} at {x0}: K={k}: ddx {d}, documented {limit}"
        _approaches(limit, _one_sided(f, x0, k, side), f"{text} at {x0}, K={k}")
    # K = 1, 2 are the gradient's and the Hessian's bits there too.
    same = lambda a, b: a == b or (math.isnan(a) and math.isnan(b))  # noqa: E731
    assert same(eq.univariate_derivative(1, x0), float(eq.gradient([x0])[0]))
    assert same(eq.univariate_derivative(2, x0), float(np.asarray(eq.hessian([x0])[2]).ravel()[0]))


def test_overflowing_partials_are_the_truth_rounded():
    # c·e^(−d) at d = −800: e^800 ≈ 2.7e347 is past the doubles, so the exact partials
    # (e^800, −c·e^800) and second partials (0, −e^800, c·e^800) round to ±∞; forward and
    # reverse mode both answer that (the zero-tangent rule), and so does H along e_c, e_d.
    eq = ddx.equation("c*exp(-d)")
    p = [1.0, -800.0]
    f = lambda c, d: c * mpmath.exp(-d)  # noqa: E731
    with mpmath.workdps(50):
        x0 = [mpmath.mpf(v) for v in p]
        grad = [float(mpmath.diff(f, x0, (1 - j, j))) for j in range(2)]
        hess = [[float(mpmath.diff(f, x0, (2 - i - j, i + j))) for j in range(2)] for i in range(2)]
    assert grad == [math.inf, -math.inf]
    assert list(eq.gradient(p)) == grad
    for j in range(2):
        _, jv = eq.jvp([1.0 if k == j else 0.0 for k in range(2)], p)
        assert float(jv) == grad[j]
        _, _, hv = eq.hvp([1.0 if k == j else 0.0 for k in range(2)], p)
        assert [float(hv[i]) for i in range(2)] == [hess[i][j] for i in range(2)]
    _, _, h = eq.hessian(p)
    assert np.asarray(h).reshape(2, 2).tolist() == hess


def _ulps_from_truth(d: float, x: float) -> float:
    """|d − e^x| in units in the last place of the double nearest e^x (subnormals too)."""
    t = mpmath.exp(mpmath.mpf(x))
    e = max(int(mpmath.floor(mpmath.log(t, 2))), -1022)
    return float(abs(mpmath.mpf(d) - t) / mpmath.mpf(2) ** (e - 52))


def test_log_is_faithful():
    """ddx's own ``log`` (``ddx_ir::math::log``, with fused multiply-adds) against mpmath:
    within 0.52 ULP of the truth (0.5127 at worst, measured) over every binade, near 1
    (across the ends of the interval around it), and at subnormal arguments; interpreted
    (four lanes at once and one at a time) and compiled alike to the bit."""
    rng = np.random.default_rng(20261205)
    xs = np.concatenate(
        [
            np.exp2(rng.uniform(-1021.9, 1023.9, 4000)),
            rng.uniform(0.5, 2.0, 3000),
            1.0 + rng.uniform(-1.0 / 32.0, 1.0 / 32.0, 3000),
            1.0 + rng.uniform(-1e-6, 1e-6, 500),
            (1.0 - 2.0**-9) * (1.0 + rng.uniform(-1e-12, 1e-12, 250)),
            (1.0 + 2.0**-8) * (1.0 + rng.uniform(-1e-12, 1e-12, 250)),
            # The row below 1 - 2^-9, where the terms added to hi weigh most against the
            # result: the largest errors measured (0.5127, 0.5126, 0.5117 ULP) and more.
            rng.uniform(0.9976, 1.0 - 2.0**-9, 20000),
            np.array([0x3FEFEFF26DCFD69C, 0x3FEFEF42ED0CD76F, 0x3FEFEF92D119070E]).view(np.float64),
            np.exp2(rng.uniform(-1074.0, -1022.5, 500)),  # subnormal arguments
        ]
    )
    xs = xs[xs != 1.0]
    interpreted = ddx.equation("log(x)")
    compiled = ddx.equation("log(x)").compile()
    assert compiled.wait_for_kernel()
    got = np.asarray(interpreted.evaluate(xs[np.newaxis, :]))
    same = np.asarray(compiled.evaluate(xs[np.newaxis, :]))
    assert got.tobytes() == same.tobytes()

    def ulps(d: float, x: float) -> float:
        t = mpmath.log(mpmath.mpf(x))
        e = int(mpmath.floor(mpmath.log(abs(t), 2)))
        return float(abs(mpmath.mpf(d) - t) / mpmath.mpf(2) ** (e - 52))

    with mpmath.workdps(40):
        worst = max(ulps(float(d), float(x)) for d, x in zip(got, xs))
    assert worst <= 0.52, worst
    for x in xs[::97]:
        assert interpreted.evaluate([float(x)]) == compiled.evaluate([float(x)])
    assert interpreted.evaluate([1.0]) == 0.0
    assert interpreted.evaluate([0.0]) == -math.inf
    assert compiled.evaluate([math.inf]) == math.inf
    assert math.isnan(compiled.evaluate([-1.0]))


def test_exp_is_faithful():
    """ddx's own ``exp`` (``ddx_ir::math::exp``) against mpmath: within 0.51 ULP of the
    truth across its whole range (subnormal results included), interpreted and compiled
    alike to the bit, in batches and at single points."""
    rng = np.random.default_rng(20261203)
    xs = np.concatenate(
        [
            rng.uniform(-745.0, 709.7, 6000),
            rng.uniform(-1.0, 1.0, 3000),
            rng.uniform(-1e-6, 1e-6, 500),
            rng.uniform(-745.1, -708.4, 1500),  # subnormal results
            rng.uniform(700.0, 709.78, 500),
        ]
    )
    interpreted = ddx.equation("exp(x)")
    compiled = ddx.equation("exp(x)").compile()
    assert compiled.wait_for_kernel()
    got = np.asarray(interpreted.evaluate(xs[np.newaxis, :]))
    same = np.asarray(compiled.evaluate(xs[np.newaxis, :]))
    assert got.tobytes() == same.tobytes()
    with mpmath.workdps(40):
        worst = max(_ulps_from_truth(float(d), float(x)) for d, x in zip(got, xs))
    assert worst <= 0.51, worst
    for x in xs[::97]:
        assert interpreted.evaluate([float(x)]) == compiled.evaluate([float(x)])
    assert interpreted.evaluate([709.782712893384]) == 1.7976931348622732e308
    assert interpreted.evaluate([-745.1332191019411]) == 5e-324
    assert math.isinf(compiled.evaluate([709.7827128933841]))
