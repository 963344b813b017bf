"""Parameters (``ddx.param``, ``params=`` for text): inputs never differentiated, bound
with ``Equation.with_params``; a batch broadcasts the bound values to every point.

Truths: closed forms; the model with the parameter's value written as a literal (the same
bits); per-point calls against the batch (the same bits)."""

from __future__ import annotations

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
