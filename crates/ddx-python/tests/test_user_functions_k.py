"""User functions of more than two arguments (``ddx.function(name, k, ...)``, issue 17).

Truths: SymPy's derivatives of the closed form the user function stands for; central
finite differences; the interpreter against compiled kernels (the same bits); per-point
calls against a batch (the same bits)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import ddx


def abexp_value(a: float, b: float, c: float) -> float:
    return a * b * math.exp(c)


def abexp_first(a: float, b: float, c: float) -> list[float]:
    e = math.exp(c)
    return [b * e, a * e, a * b * e]


def abexp_second(a: float, b: float, c: float) -> list[list[float]]:
    e = math.exp(c)
    return [[0.0, e, b * e], [e, 0.0, a * e], [b * e, a * e, a * b * e]]


ABEXP = ddx.function("abexp", 3, abexp_value, abexp_first, abexp_second)
ABEXP_FIRST_ONLY = ddx.function("abexp1", 3, abexp_value, abexp_first)

# Four arguments, second partials answered flat (row-major) as a NumPy array.
SINSQ = ddx.function(
    "sinsq",
    4,
    lambda a, b, c, d: math.sin(a * b) + c * d * d,
    lambda a, b, c, d: (b * math.cos(a * b), a * math.cos(a * b), d * d, 2 * c * d),
    lambda a, b, c, d: np.array(
        [
            [-b * b * math.sin(a * b), math.cos(a * b) - a * b * math.sin(a * b), 0, 0],
            [math.cos(a * b) - a * b * math.sin(a * b), -a * a * math.sin(a * b), 0, 0],
            [0, 0, 0, 2 * d],
            [0, 0, 2 * d, 2 * c],
        ]
    ).ravel(),
)


def model() -> ddx.Expression:
    x, y, z = ddx.var("x"), ddx.var("y"), ddx.var("z")
    return ABEXP(x * y, ddx.sin(y), z - x) + SINSQ(x, y * z, z, 1.5) * x


def closed_form() -> tuple[sp.Expr, list[sp.Symbol]]:
    x, y, z = sp.symbols("x y z")
    f = x * y * sp.sin(y) * sp.exp(z - x) + (sp.sin(x * y * z) + z * sp.Rational(9, 4)) * x
    return f, [x, y, z]


POINTS = [(0.3, -0.2, 0.5), (1.7, 0.4, -0.3), (-1.1, 2.0, 0.25), (0.0, 0.0, 0.0)]


def test_the_function_object() -> None:
    assert ABEXP.arity == 3 and ABEXP.has_second
    assert SINSQ.arity == 4
    assert not ABEXP_FIRST_ONLY.has_second
    # A larger arity is taken; the wrong count of arguments in a model is refused.
    f7 = ddx.function("s7", 7, lambda *a: sum(a), lambda *a: [1.0] * 7)
    eq = ddx.equation(lambda: f7(*[ddx.var(f"x{i}") for i in range(7)]))
    assert eq.gradient([float(i) for i in range(7)]).tolist() == [1.0] * 7
    assert eq.evaluate([float(i) for i in range(7)]) == 21.0
    with pytest.raises(ddx.Error) as e:
        ddx.equation(lambda: ABEXP(ddx.var("x"), ddx.var("y")))
    assert e.value.code == ddx.errc.user_function


def test_derivatives_match_sympy() -> None:
    eq = ddx.equation(model)
    assert eq.symbols == ["x", "y", "z"]
    expr, syms = closed_form()
    grad = [sp.diff(expr, s) for s in syms]
    hess = [[sp.diff(g, s) for s in syms] for g in grad]
    for p in POINTS:
        at = dict(zip(syms, p))
        value, jac, h = eq.hessian(p)
        assert value == pytest.approx(float(expr.subs(at)), rel=1e-14, abs=1e-14)
        want = [float(g.subs(at)) for g in grad]
        assert jac.tolist() == pytest.approx(want, rel=1e-13, abs=1e-13)
        want_h = [[float(c.subs(at)) for c in row] for row in hess]
        assert np.allclose(h, np.array(want_h), rtol=1e-12, atol=1e-12)
        v = np.array([0.5, -1.0, 0.25])
        assert np.allclose(eq.hvp(v, p)[2], h @ v, rtol=1e-13, atol=1e-13)


def test_gradient_matches_finite_differences() -> None:
    eq = ddx.equation(model)
    h = 1e-6
    for p in POINTS:
        g = eq.gradient(p)
        for i in range(3):
            a, b = list(p), list(p)
            a[i] += h
            b[i] -= h
            d = (eq.evaluate(a) - eq.evaluate(b)) / (2 * h)
            assert g[i] == pytest.approx(d, rel=1e-7, abs=1e-7)


def test_text_equations_and_duplicate_names() -> None:
    text = ddx.equation(
        "abexp(x * y, sin(y), z - x) + sinsq(x, y * z, z, 1.5) * x", functions=[ABEXP, SINSQ]
    )
    closure = ddx.equation(model)
    for p in POINTS:
        assert np.array_equal(text.hessian(p)[2], closure.hessian(p)[2])
    # The same function twice is one; two functions of one name are refused.
    ddx.equation("abexp(x, y, z)", functions=[ABEXP, ABEXP])
    twin = ddx.function("abexp", 3, abexp_value, abexp_first)
    with pytest.raises(ddx.Error) as e:
        ddx.equation("abexp(x, y, z)", functions=[ABEXP, twin])
    assert e.value.code == ddx.errc.user_function
    assert "abexp" in str(e.value) and "two different functions" in str(e.value)


def test_hessian_without_second_partials_is_refused_naming_the_function() -> None:
    eq = ddx.equation(lambda: ABEXP_FIRST_ONLY(ddx.var("x"), ddx.var("y"), ddx.var("z")))
    assert eq.gradient([1.0, 2.0, 0.0]).tolist() == [2.0, 1.0, 2.0]
    with pytest.raises(ddx.Error) as e:
        eq.hessian([1.0, 2.0, 0.0])
    assert e.value.code == ddx.errc.user_function
    assert "abexp1" in str(e.value)


def test_interpreter_and_compiled_kernels_agree_to_the_bit() -> None:
    xs = np.random.default_rng(11).uniform(-2, 2, (3, 200))
    interp = ddx.equation(model)
    compiled = ddx.equation(model).compile()
    for want, call in ((ddx.Want.JACOBIAN, "jacobian"), (ddx.Want.HESSIAN, "hessian")):
        getattr(compiled, call)(xs[:, 0])
        assert compiled.wait_for_kernel(want=want)
        a, b = getattr(interp, call)(xs), getattr(compiled, call)(xs)
        for u, v in zip(a, b):
            assert np.array_equal(u, v)
    v, j, h = compiled.hessian(xs)
    for i in range(0, 200, 23):
        vi, ji, hi = interp.hessian(xs[:, i])
        assert v[i] == vi
        assert np.array_equal(j[:, i], ji)
        assert np.array_equal(h[:, :, i], hi)
