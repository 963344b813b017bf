"""Parameters (``ddx.param``, ``params=`` for text): inputs never differentiated, bound
with ``Equation.with_params``; a batch broadcasts the bound values to every point, or takes
parameter columns after the symbol rows, any row of length 1 broadcast.

Truths: closed forms; the model with the parameter's value written as a literal (the same
bits); per-point calls against the batch (the same bits)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ddx


def model() -> ddx.Expression:
    x, y, k = ddx.var("x"), ddx.var("y"), ddx.param("k")
    return k * x * x + ddx.sin(k * y)


def test_a_parameter_has_no_partial() -> None:
    eq = ddx.equation(model)
    assert eq.symbols == ["x", "y"]
    assert eq.parameters == ["k"]
    b = eq.with_params([1.5])
    value, grad = b.jacobian([0.3, -0.2])
    assert grad.shape == (2,)
    # d/dx = 2kx, d/dy = k cos(ky)
    assert grad[0] == pytest.approx(2 * 1.5 * 0.3, abs=1e-15)
    assert grad[1] == pytest.approx(1.5 * np.cos(1.5 * -0.2), abs=1e-15)
    _, _, h = b.hessian({"x": 0.3, "y": -0.2})
    assert h.shape == (2, 2)
    assert h[0, 0] == pytest.approx(3.0)


def test_rebinding_gives_the_literal_models_bits() -> None:
    eq = ddx.equation(model)
    for k in (0.5, -2.0, 3.25):
        literal = ddx.equation(
            lambda k=k: k * ddx.var("x") * ddx.var("x") + ddx.sin(k * ddx.var("y"))
        )
        b = eq.with_params({"k": k})
        p = [0.7, 1.1]
        assert b.evaluate(p) == literal.evaluate(p)
        assert np.array_equal(b.jacobian(p)[1], literal.jacobian(p)[1])
        assert np.array_equal(b.hessian(p)[2], literal.hessian(p)[2])


def test_batches_broadcast_the_bound_values() -> None:
    b = ddx.equation(model).with_params([0.75])
    xs = np.random.default_rng(3).uniform(-2, 2, (2, 1000))
    values, jac = b.jacobian(xs)
    for i in range(0, 1000, 37):
        v, g = b.jacobian(xs[:, i])
        assert values[i] == v
        assert np.array_equal(jac[:, i], g)


def test_unbound_and_text_parameters() -> None:
    eq = ddx.equation("b * x + a * y", params=["b"])
    assert eq.symbols == ["a", "x", "y"]
    assert eq.parameters == ["b"]
    with pytest.raises(ddx.Error) as e:
        eq.evaluate([1.0, 2.0, 3.0])
    assert e.value.code == ddx.errc.short_point
    assert list(eq.with_params([10.0]).gradient([1.0, 2.0, 3.0])) == [3.0, 10.0, 1.0]
    with pytest.raises(ddx.Error) as e:
        eq.with_params([1.0, 2.0])
    assert e.value.code == ddx.errc.wrong_arity
    sys = ddx.equation(["k * x", "k + y"], params=["k"])
    assert sys.parameters == ["k"]
    with pytest.raises(TypeError):
        ddx.equation(model, params=["k"])


def residual() -> ddx.Expression:
    """NIST Misra1a's residual: symbols b1, b2; the observation (x, y) as parameters."""
    b1, b2 = ddx.var("b1"), ddx.var("b2")
    x, y = ddx.param("x"), ddx.param("y")
    return y - b1 * (1.0 - ddx.exp(-b2 * x))


def observations(count: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    x = rng.uniform(70, 800, count)
    return x, 240 * (1 - np.exp(-5.5e-4 * x)) + rng.normal(0, 0.1, count)


@pytest.mark.parametrize("compiled", [False, True])
def test_parameter_columns_equal_the_per_point_calls(compiled: bool) -> None:
    if compiled and not ddx.has_jit:
        pytest.skip("built without the JIT")
    eq = ddx.equation(residual)
    if compiled:
        eq = eq.compile()
    assert eq.symbols == ["b1", "b2"] and eq.parameters == ["x", "y"]
    x, y = observations(400)
    b = [238.0, 5.6e-4]
    spellings = [
        {"b1": b[0], "b2": b[1], "x": x, "y": y},  # by name, the symbols broadcast
        [b[0], [b[1]], x, y],  # row by row: a number and a length-1 row broadcast
        np.vstack([np.full(400, b[0]), np.full(400, b[1]), x, y]),  # (n + q, points)
    ]
    for want, call in ((ddx.Want.JACOBIAN, "jacobian"), (ddx.Want.HESSIAN, "hessian")):
        if compiled:
            getattr(eq, call)(spellings[0])
            assert eq.wait_for_kernel(want=want)
        answers = [getattr(eq, call)(s) for s in spellings]
        for other in answers[1:]:
            for u, v in zip(answers[0], other):
                assert np.array_equal(u, v)
        value, jac = answers[0][0], answers[0][1]
        assert value.shape == (400,) and jac.shape == (2, 400)
        for i in range(0, 400, 23):
            one = getattr(eq.with_params([x[i], y[i]]), call)(b)
            for u, v in zip(answers[0], one):
                assert np.array_equal(u[..., i], v)
    # The residual's Jacobian in closed form: -(1 - e^{-b2 x}), -b1 x e^{-b2 x}.
    _, jac = eq.jacobian(spellings[0])
    e = np.exp(-b[1] * x)
    assert np.allclose(jac[0], -(1 - e), rtol=1e-14, atol=0)
    assert np.allclose(jac[1], -b[0] * x * e, rtol=1e-13, atol=0)


def test_columns_fill_from_bound_values_and_say_what_is_wrong() -> None:
    eq = ddx.equation(residual)
    x, y = observations(50)
    bound = eq.with_params([0.0, 7.0])
    # y not given: its bound value is broadcast.
    a = bound.jacobian({"b1": np.full(50, 2.0), "b2": 0.01, "x": x})
    b = eq.jacobian({"b1": np.full(50, 2.0), "b2": 0.01, "x": x, "y": 7.0})
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    # The symbol rows alone broadcast the bound parameters, as before.
    c = bound.jacobian(np.vstack([np.full(50, 2.0), np.full(50, 0.01)]))
    d = eq.jacobian(np.vstack([np.full(50, 2.0), np.full(50, 0.01), np.zeros(50), np.full(50, 7.0)]))
    assert np.array_equal(c[1], d[1])
    cases = [
        ({"b1": 1.0, "b2": [0.1, 0.2], "x": x}, ddx.errc.short_point),  # y unbound
        ({"b1": 1.0, "x": x, "y": y}, ddx.errc.short_point),  # a symbol missing
        ({"b1": 1.0, "b2": 1.0, "xx": x, "y": y}, ddx.errc.unknown_symbol),
        ({"b1": [1.0, 2.0], "b2": 1.0, "x": x, "y": y}, ddx.errc.column_length),
        ([1.0, 2.0, x], ddx.errc.wrong_arity),  # three rows: neither n nor n + q
        (np.ones((3, 50)), ddx.errc.wrong_arity),
    ]
    for given, code in cases:
        with pytest.raises(ddx.Error) as err:
            eq.jacobian(given)
        assert err.value.code == code, given
    with pytest.raises(ddx.Error) as err:
        eq.jacobian({"b1": 1.0, "b2": 1.0, "x": np.ones((2, 2)), "y": y})
    assert err.value.code == ddx.errc.wrong_arity


def test_symbol_rows_of_length_one_broadcast_too() -> None:
    eq = ddx.equation("a * exp(b * t)")
    t = np.linspace(0, 1, 30)
    values, jac = eq.jacobian([2.0, 0.5, t])
    for i in (0, 7, 29):
        v, g = eq.jacobian([2.0, 0.5, t[i]])
        assert values[i] == v and np.array_equal(jac[:, i], g)


def test_pickling_keeps_the_binding_and_remember() -> None:
    import pickle

    eq = ddx.equation("k * exp(x) + c", params=["c", "k"], remember=True)
    bound = eq.with_params({"c": 1.0, "k": 2.0})
    back = pickle.loads(pickle.dumps(bound))
    assert back.remember
    assert back.parameters == ["c", "k"]
    assert back.evaluate([0.5]) == bound.evaluate([0.5]) == 2.0 * math.exp(0.5) + 1.0
    assert back.evaluate([0.5]) == back.evaluate([0.5])
    stats = back.cache_stats()
    assert stats is not None and stats["hits"] >= 1
    plain = pickle.loads(pickle.dumps(ddx.equation("k * exp(x)", params=["k"])))
    assert not plain.remember
    with pytest.raises(ddx.Error) as e:
        plain.evaluate([0.5])
    assert e.value.code is ddx.errc.short_point


def test_an_equation_of_parameters_only_answers_at_its_point() -> None:
    """No symbol: every call answers at the one point there is, with no partial (length-0
    gradient, a 0×0 Hessian, empty products); a batch is the parameter columns. The
    truth: the closed form in float64 with the same operations (the same bits)."""
    eq = ddx.equation("k * sin(k) + c", params=["k", "c"])
    assert eq.symbols == [] and eq.parameters == ["c", "k"] and eq.arity == 0
    b = eq.with_params({"k": 0.7, "c": 0.25})
    want = 0.7 * math.sin(0.7) + 0.25
    for compiled in (False, True):
        if compiled and not ddx.has_jit:
            continue
        e = b.compile() if compiled else b
        if compiled:
            e.evaluate([]), e.jacobian([]), e.hessian([])
            for w in (ddx.Want.VALUE, ddx.Want.JACOBIAN, ddx.Want.HESSIAN):
                assert e.wait_for_kernel(want=w)
        assert e.evaluate([]) == e.evaluate({}) == e([]) == want
        assert e.gradient([]).shape == (0,)
        value, grad = e.jacobian([])
        assert value == want and grad.shape == (0,)
        value, grad, hess = e.hessian([])
        assert value == want and grad.shape == (0,) and hess.shape == (0, 0)
        assert e.jvp([], []) == (want, 0.0)
        value, wj = e.vjp([2.0], [])
        assert value == want and wj.shape == (0,)
        value, grad, hv = e.hvp([], [])
        assert value == want and grad.shape == (0,) and hv.shape == (0,)
    # Parameter columns: a batch, each point the bound per-point call's bits.
    ks = np.array([0.1, -2.0, 3.5])
    values, jac = eq.jacobian({"k": ks, "c": 1.0})
    assert jac.shape == (0, 3)
    for i, k in enumerate(ks):
        assert values[i] == eq.with_params([1.0, k]).evaluate([]) == k * math.sin(k) + 1.0
    assert np.array_equal(eq.evaluate(np.vstack([np.ones(3), ks])), values)
    with pytest.raises(ddx.Error) as err:
        eq.evaluate([])
    assert err.value.code is ddx.errc.short_point


def test_parameter_messages_say_parameters_and_python_shapes() -> None:
    eq = ddx.equation("k * x + c", params=["k", "c"])
    cases = [
        ([1.0, 2.0, 3.0], ddx.errc.wrong_arity, "3 parameter values given, but the equation has 2 parameters (c, k)"),
        ([1.0], ddx.errc.short_point, "1 parameter value given, but the equation has 2 parameters"),
        ({"k": 1.0, "z": 2.0}, ddx.errc.unknown_symbol, "no parameter `z`"),
        ({"k": 1.0}, ddx.errc.short_point, "no value for parameter `c`"),
        (np.ones((2, 2, 2)), ddx.errc.wrong_arity, "got an array of shape (2, 2, 2)"),
        (np.ones((2, 5)), ddx.errc.wrong_arity, "not a batch"),
    ]
    for given, code, text in cases:
        with pytest.raises(ddx.Error) as err:
            eq.with_params(given)
        assert err.value.code is code, given
        assert text in str(err.value), str(err.value)
        message = str(err.value).split(": ", 1)[1]  # past the code's name
        assert "symbol" not in message, message
    point = ddx.equation("x * y")
    for given, shape in ((np.ones((2, 2, 2)), "(2, 2, 2)"), (np.ones((3, 4)), "(3, 4)")):
        with pytest.raises(ddx.Error) as err:
            point.evaluate(given)
        assert f"got an array of shape {shape}" in str(err.value) or f"got {shape}" in str(
            err.value
        ), str(err.value)
        assert "[" not in str(err.value), str(err.value)
