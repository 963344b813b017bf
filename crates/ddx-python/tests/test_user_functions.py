"""User functions written in Python (``ddx.function``): their value and partials are the
user's, called with the GIL by both engines.

Truths: SymPy's derivatives of the closed form the user function stands for; central
finite differences; the interpreter against compiled kernels (the same bits); per-point
calls against a batch (the same bits)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import sympy as sp

import ddx


def xexp_value(a: float, b: float) -> float:
    return a * math.exp(b)


def xexp_first(a: float, b: float) -> tuple[float, float]:
    e = math.exp(b)
    return (e, a * e)


def xexp_second(a: float, b: float) -> list[list[float]]:
    e = math.exp(b)
    return [[0.0, e], [e, a * e]]


XEXP = ddx.function("xexp", 2, xexp_value, xexp_first, xexp_second)
XEXP_FIRST_ONLY = ddx.function("xexp1", 2, xexp_value, xexp_first)
# A one-argument function answering NumPy scalars: accepted as floats.
SOFTPLUS = ddx.function(
    "softplus",
    1,
    lambda t: np.log1p(np.exp(t)),
    lambda t: 1.0 / (1.0 + np.exp(-t)),
    lambda t: np.exp(-t) / (1.0 + np.exp(-t)) ** 2,
)


def model() -> ddx.Expression:
    x, y = ddx.var("x"), ddx.var("y")
    return XEXP(x, y) * ddx.sin(x) + SOFTPLUS(x * y)


def closed_form() -> tuple[sp.Expr, list[sp.Symbol]]:
    x, y = sp.symbols("x y")
    return x * sp.exp(y) * sp.sin(x) + sp.log(1 + sp.exp(x * y)), [x, y]


POINTS = [(0.3, -0.2), (1.7, 0.4), (-1.1, 2.0), (0.0, 0.0)]


def test_the_function_object() -> None:
    assert XEXP.name == "xexp"
    assert XEXP.arity == 2
    assert XEXP.has_second
    assert not XEXP_FIRST_ONLY.has_second
    assert "xexp" in repr(XEXP)
    with pytest.raises(TypeError):
        ddx.Function()
    # Any arity from 1 to 256 (issue 17): 0 and 257 are refused.
    for arity in (0, 257):
        with pytest.raises(ddx.Error) as e:
            ddx.function("many", arity, lambda *a: 0.0, lambda *a: (0.0,) * arity)
        assert e.value.code == ddx.errc.user_function
    with pytest.raises(ddx.Error) as e:
        ddx.function("sin", 1, math.sin, math.cos)
    assert e.value.code == ddx.errc.user_function
    with pytest.raises(TypeError):
        ddx.function("h", 1, math.sin, 3.0)


def test_derivatives_match_sympy() -> None:
    eq = ddx.equation(model)
    assert eq.symbols == ["x", "y"]
    expr, (x, y) = closed_form()
    grad = [sp.diff(expr, s) for s in (x, y)]
    hess = [[sp.diff(g, s) for s in (x, y)] for g in grad]
    for p in POINTS:
        at = {x: p[0], y: p[1]}
        value, g, h = eq.hessian(list(p))
        assert value == pytest.approx(float(expr.subs(at)), rel=1e-14, abs=1e-15)
        for i in range(2):
            assert g[i] == pytest.approx(float(grad[i].subs(at)), rel=1e-13, abs=1e-14)
            for j in range(2):
                assert h[i, j] == pytest.approx(float(hess[i][j].subs(at)), rel=1e-12, abs=1e-13)


def test_gradient_matches_finite_differences() -> None:
    eq = ddx.equation(model)
    step = 1e-6
    for p in POINTS:
        g = eq.gradient(list(p))
        for i in range(2):
            hi, lo = list(p), list(p)
            hi[i] += step
            lo[i] -= step
            fd = (eq.evaluate(hi) - eq.evaluate(lo)) / (2 * step)
            assert g[i] == pytest.approx(fd, rel=1e-7, abs=1e-8)


def test_text_equations_reach_functions_through_the_registry() -> None:
    text = ddx.equation("xexp(x, y) * sin(x) + softplus(x * y)", functions=[XEXP, SOFTPLUS])
    built = ddx.equation(model)
    for p in POINTS:
        v1, g1, h1 = text.hessian(list(p))
        v2, g2, h2 = built.hessian(list(p))
        assert v1 == v2
        assert np.array_equal(g1, g2)
        assert np.array_equal(h1, h2)
    system = ddx.equation(["xexp(x, y)", "softplus(y)"], functions=[XEXP, SOFTPLUS])
    assert system.outputs == 2
    with pytest.raises(ddx.Error) as e:
        ddx.equation("xexp(x) + 1")  # not in the registry: an unknown function
    assert e.value.code == ddx.errc.unknown_function
    with pytest.raises(ddx.Error) as e:
        ddx.equation("xexp(x) + 1", functions=[XEXP])
    assert e.value.code == ddx.errc.user_function
    with pytest.raises(TypeError):
        ddx.equation(model, functions=[XEXP])
    with pytest.raises(TypeError):
        ddx.equation("x", functions=["xexp"])


def test_wrong_argument_count_in_a_model() -> None:
    def bad() -> ddx.Expression:
        return XEXP(ddx.var("x"))

    with pytest.raises(ddx.Error) as e:
        ddx.equation(bad)
    assert e.value.code == ddx.errc.user_function
    assert "xexp" in str(e.value)


@pytest.mark.skipif(not ddx.has_jit, reason="built without the JIT")
def test_interpreter_and_compiled_kernels_agree_to_the_bit() -> None:
    xs = np.random.default_rng(7).uniform(-2, 2, (2, 300))
    interp = ddx.equation(model)
    compiled = ddx.equation(model).compile()
    assert compiled.uses_kernel
    for want, call in ((ddx.Want.JACOBIAN, "jacobian"), (ddx.Want.HESSIAN, "hessian")):
        getattr(compiled, call)(xs[:, 0])
        assert compiled.wait_for_kernel(want=want)
        a, b = getattr(interp, call)(xs), getattr(compiled, call)(xs)
        for u, v in zip(a, b):
            assert np.array_equal(u, v)
    # And each batch column is the per-point call's bits.
    v, j, h = compiled.hessian(xs)
    for i in range(0, 300, 29):
        vi, ji, hi = interp.hessian(xs[:, i])
        assert v[i] == vi
        assert np.array_equal(j[:, i], ji)
        assert np.array_equal(h[:, :, i], hi)


def test_a_large_batch_takes_the_gil_on_every_thread() -> None:
    eq = ddx.equation(model)
    xs = np.random.default_rng(11).uniform(-1, 1, (2, 25_000))
    values, jac = eq.jacobian(xs)
    for i in range(0, 25_000, 499):
        v, g = eq.jacobian(xs[:, i])
        assert values[i] == v
        assert np.array_equal(jac[:, i], g)


def test_python_threads_calling_at_once_never_deadlock() -> None:
    from concurrent.futures import ThreadPoolExecutor

    eq = ddx.equation(model)
    xs = np.random.default_rng(13).uniform(-1, 1, (2, 3000))
    want = eq.jacobian(xs)

    def work(k: int) -> bool:
        if k % 2:  # single points keep the GIL; batches release it
            return all(
                np.array_equal(eq.jacobian(xs[:, i])[1], want[1][:, i]) for i in range(0, 3000, 301)
            )
        got = eq.jacobian(xs)
        return np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8), timeout=120))


@pytest.mark.parametrize("remember", [False, True])
def test_hessian_without_second_partials_is_refused_naming_the_function(remember) -> None:
    # remember=True answers single points through another path (the found fault: a NaN
    # Hessian instead of the error); asked twice, so a remembered entry is tried too.
    eq = ddx.equation(
        lambda: XEXP_FIRST_ONLY(ddx.var("x"), ddx.var("y")) * ddx.var("x"), remember=remember
    )
    value, grad = eq.jacobian([1.0, 0.5])
    assert value == pytest.approx(math.exp(0.5))
    assert list(grad) == pytest.approx([2 * math.exp(0.5), math.exp(0.5)])
    for call in (
        lambda: eq.hessian([1.0, 0.5]),
        lambda: eq.hessian([1.0, 0.5]),
        lambda: eq.hvp([1.0, 0.0], [1.0, 0.5]),
        lambda: eq.hessian(np.ones((2, 5))),
    ):
        with pytest.raises(ddx.Error) as e:
            call()
        assert e.value.code == ddx.errc.user_function
        assert "xexp1" in str(e.value)
        assert "second partials" in str(e.value)


def raising_value(t: float) -> float:
    if t > 1.0:
        raise ValueError("outside the table")
    return t * t


RAISES = ddx.function("tabled", 1, raising_value, lambda t: 2 * t)
WRONG_SHAPE = ddx.function("shapeless", 2, lambda a, b: a * b, lambda a, b: [b, a, 0.0])


@pytest.mark.parametrize("compiled", [False, True])
def test_a_python_exception_is_a_ddx_error(compiled: bool) -> None:
    if compiled and not ddx.has_jit:
        pytest.skip("built without the JIT")
    eq = ddx.equation(lambda: RAISES(ddx.var("x")) + ddx.var("x"))
    if compiled:
        eq = eq.compile()
    assert eq.jacobian([0.5]) == (0.75, pytest.approx(np.array([2.0])))
    for x in ([2.0], np.array([[0.5, 2.0, 0.25]])):
        with pytest.raises(ddx.Error) as e:
            eq.jacobian(x)
        assert e.value.code == ddx.errc.user_function
        assert "tabled" in str(e.value)
        assert "ValueError: outside the table" in str(e.value)
    # The process and the equation survive: the next call answers.
    assert eq.evaluate([1.0]) == 2.0
    bad = ddx.equation(lambda: WRONG_SHAPE(ddx.var("x"), ddx.var("y")))
    assert bad.evaluate([2.0, 3.0]) == 6.0
    with pytest.raises(ddx.Error) as e:
        bad.gradient([2.0, 3.0])
    assert e.value.code == ddx.errc.user_function
    assert "shapeless" in str(e.value) and "3 numbers where 2" in str(e.value)


def test_an_exception_at_constant_arguments_fails_the_build() -> None:
    # A call at constant arguments runs while the model is built (it is folded).
    with pytest.raises(ddx.Error) as e:
        ddx.equation(lambda: RAISES(2.0) + ddx.var("x"))
    assert e.value.code == ddx.errc.user_function
    assert "tabled" in str(e.value) and "ValueError" in str(e.value)
    with pytest.raises(ddx.Error) as e:
        ddx.equation("tabled(3) * x", functions=[RAISES])
    assert e.value.code == ddx.errc.user_function
    assert ddx.equation("tabled(0.5) * x", functions=[RAISES]).evaluate([2.0]) == 0.5


def test_a_nan_flows_as_ieee_says() -> None:
    nan = ddx.function("nanny", 1, lambda t: math.nan, lambda t: 1.0)
    eq = ddx.equation(lambda: nan(ddx.var("x")) + 1.0)
    value, grad = eq.jacobian([0.0])
    assert math.isnan(value)
    assert grad[0] == 1.0


def test_saving_and_pickling_are_refused(tmp_path) -> None:
    eq = ddx.equation(model)
    with pytest.raises(ddx.Error) as e:
        pickle.dumps(eq)
    assert e.value.code == ddx.errc.user_function
    assert "xexp" in str(e.value)
    with pytest.raises(ddx.Error) as e:
        eq.save(tmp_path / "f.ddx")
    assert e.value.code == ddx.errc.user_function
    assert not (tmp_path / "f.ddx").exists()
