"""Every call and its shapes: single points, batches, systems; against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ddx

from conftest import closed_form, huber


def test_properties(f):
    assert f.symbols == ["x", "y"]
    assert f.arity == 2
    assert f.outputs == 1
    assert "symbols=['x', 'y']" in repr(f)
    assert str(f).startswith("f0: exp(x) * sin(y)")


def test_symbols_sort_by_bytes():
    eq = ddx.equation(lambda: ddx.var("x2") + ddx.var("x10") * ddx.var("a") + ddx.var("B"))
    assert eq.symbols == ["B", "a", "x10", "x2"]


def test_same_name_is_one_symbol():
    eq = ddx.equation(lambda: ddx.var("x") * ddx.var("x"))
    assert eq.arity == 1
    assert eq.gradient([3.0]).tolist() == [6.0]


def test_single_point_shapes_and_values(f):
    x, y = 2.0, 3.0
    v0, g0, h0 = closed_form(x, y)
    v = f.evaluate([x, y])
    assert isinstance(v, float) and math.isclose(v, v0, rel_tol=1e-15)
    assert f([x, y]) == v
    value, grad = f.jacobian([x, y])
    assert value == v and grad.shape == (2,)
    np.testing.assert_allclose(grad, g0, rtol=1e-15)
    g = f.gradient([x, y])
    assert g.shape == (2,) and g.tolist() == grad.tolist()
    value, grad2, hess = f.hessian([x, y])
    assert value == v and grad2.tolist() == grad.tolist() and hess.shape == (2, 2)
    np.testing.assert_allclose(hess, h0, rtol=1e-14)
    value, jv = f.jvp([1.0, 0.0], [x, y])
    assert value == v and isinstance(jv, float) and jv == grad[0]
    value, wj = f.vjp([2.0], [x, y])
    assert value == v and wj.shape == (2,) and wj.tolist() == (2.0 * grad).tolist()
    value, grad3, hv = f.hvp([1.0, 0.0], [x, y])
    assert value == v and grad3.tolist() == grad.tolist() and hv.shape == (2,)
    np.testing.assert_allclose(hv, h0[:, 0], rtol=1e-14)


def test_batch_shapes_and_bits(f):
    rng = np.random.default_rng(1)
    xs = rng.uniform(-2, 2, size=(2, 37))
    values = f.evaluate(xs)
    assert values.shape == (37,)
    value, jac = f.jacobian(xs)
    assert value.shape == (37,) and jac.shape == (2, 37)
    grad = f.gradient(xs)
    assert grad.shape == (2, 37)
    value_h, jac_h, hess = f.hessian(xs)
    assert hess.shape == (2, 2, 37)
    vs = rng.uniform(-1, 1, size=(2, 37))
    value_j, jv = f.jvp(vs, xs)
    assert jv.shape == (37,)
    ws = rng.uniform(-1, 1, size=(1, 37))
    value_v, wj = f.vjp(ws, xs)
    assert wj.shape == (2, 37)
    value_hv, grad_hv, hv = f.hvp(vs, xs)
    assert grad_hv.shape == (2, 37) and hv.shape == (2, 37)
    for k in range(37):
        x = xs[:, k]
        # A batch computes each point with the per-point instructions: the same bits.
        assert values[k] == f.evaluate(x) == value[k] == value_h[k] == value_j[k]
        assert jac[:, k].tolist() == f.jacobian(x)[1].tolist() == grad[:, k].tolist()
        assert hess[:, :, k].tolist() == f.hessian(x)[2].tolist()
        assert jv[k] == f.jvp(vs[:, k], x)[1]
        assert wj[:, k].tolist() == f.vjp(ws[:, k], x)[1].tolist()
        assert hv[:, k].tolist() == f.hvp(vs[:, k], x)[2].tolist()
        v0, g0, h0 = closed_form(*x)
        np.testing.assert_allclose(hess[:, :, k], h0, rtol=1e-13, atol=1e-300)


def test_system_shapes(system):
    x = [1.5, 0.5]
    value, jac = system.jacobian(x)
    assert value.shape == (2,) and jac.shape == (2, 2)
    assert value.tolist() == [1.5**2 + 0.25 - 4, 0.75 - 1]
    assert jac.tolist() == [[3.0, 1.0], [0.5, 1.5]]
    value, jac, hess = system.hessian(x)
    assert hess.shape == (2, 2, 2)
    assert hess.tolist() == [[[2.0, 0.0], [0.0, 2.0]], [[0.0, 1.0], [1.0, 0.0]]]
    value, jv = system.jvp([1.0, 2.0], x)
    assert jv.shape == (2,) and jv.tolist() == [3.0 + 2.0, 0.5 + 3.0]
    value, wj = system.vjp([1.0, -1.0], x)
    assert wj.tolist() == [3.0 - 0.5, 1.0 - 1.5]
    xs = np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]])
    value, jac = system.jacobian(xs)
    assert value.shape == (2, 3) and jac.shape == (2, 2, 3)
    value, jac, hess = system.hessian(xs)
    assert hess.shape == (2, 2, 2, 3)
    assert system.evaluate(xs).shape == (2, 3)
    assert system.gradient(xs).shape == (2, 2, 3)
    with pytest.raises(ddx.Error) as e:
        system.hvp([1.0, 0.0], x)
    assert e.value.code is ddx.errc.not_scalar


def test_tuple_of_one_is_a_system():
    eq = ddx.equation(lambda: (ddx.var("x") * 2.0,))
    assert eq.outputs == 1
    assert eq.evaluate([1.5]).shape == (1,)
    value, jac = eq.jacobian([1.5])
    assert value.shape == (1,) and jac.shape == (1, 1)


def test_structural_zeros_are_zero():
    eq = ddx.equation(["x * y", "z + 1"])
    value, jac = eq.jacobian([2.0, 3.0, 4.0])
    assert jac.tolist() == [[3.0, 2.0, 0.0], [0.0, 0.0, 1.0]]
    value, jac = eq.jacobian(np.full((3, 5), 2.0))
    assert jac[0, 2].tolist() == [0.0] * 5 and jac[1, 0].tolist() == [0.0] * 5


def test_empty_batch(f):
    value, jac = f.jacobian(np.zeros((2, 0)))
    assert value.shape == (0,) and jac.shape == (2, 0)
    value, jac, hess = f.hessian(np.zeros((2, 0)))
    assert hess.shape == (2, 2, 0)


def test_huber_readme_numbers():
    eq = huber()
    assert eq.symbols == ["a", "b"]
    assert abs(eq.evaluate([2.0, 0.5]) - 4.1343959887e-05) < 1e-15
    # The specification's batch: f[0] at (1.8, 0.45) and its ∂/∂a.
    value, jac = eq.jacobian(np.array([[1.8, 1.9, 2.0, 2.1], [0.45, 0.48, 0.50, 0.52]]))
    assert abs(value[0] - 2.1570396028e-02) < 1e-11
    assert abs(jac[0, 0] - -0.1617863027) < 1e-9
    assert value[2] == eq.evaluate([2.0, 0.5])


def test_univariate_derivative():
    eq = ddx.equation("sin(x)")
    for k in range(8):
        expected = [math.sin, math.cos, lambda t: -math.sin(t), lambda t: -math.cos(t)][k % 4]
        assert math.isclose(eq.univariate_derivative(k, 0.5), expected(0.5), rel_tol=1e-14)
    every = eq.univariate_derivatives(7, 0.5)
    assert every.tolist() == [eq.univariate_derivative(k, 0.5) for k in range(8)]
    with pytest.raises(ddx.Error) as e:
        eq.univariate_derivative(ddx.MAX_ORDER + 1, 0.5)
    assert e.value.code is ddx.errc.order_too_high
    with pytest.raises(ddx.Error) as e:
        ddx.equation("x * y").univariate_derivative(1, 0.5)
    assert e.value.code is ddx.errc.not_univariate


def test_introspection(f):
    assert f.hessian_colors == 2
    assert f.jacobian_pattern == [(0, 0), (0, 1)]
    assert f.nodes(want=ddx.Want.GRADIENT) <= f.nodes(want=ddx.Want.JACOBIAN)
    assert f.nodes() == f.nodes(want=ddx.Want.JACOBIAN)
    dot = f.to_dot()
    assert dot.startswith("digraph") and len(f.to_dot(all=True)) >= len(dot)


def test_added_operations_against_closed_forms():
    # log1p, expm1, log2, recip, powi: values as Python's math computes them, gradients
    # against the textbook derivatives; log1p keeps the digits of a tiny x.
    eq = ddx.equation(
        lambda: ddx.log1p(ddx.var("x"))
        + ddx.expm1(ddx.var("y"))
        + ddx.log2(ddx.var("x") + 1)
        + ddx.recip(ddx.var("y") + 2)
        + ddx.powi(ddx.var("x"), 3)
    )
    for x, y in [(0.5, 0.25), (1e-12, -1e-9), (3.0, 2.0)]:
        want = math.log1p(x) + math.expm1(y) + math.log2(x + 1) + 1 / (y + 2) + x * (x * x)
        assert math.isclose(eq.evaluate([x, y]), want, rel_tol=1e-15)
        g = eq.gradient([x, y])
        gx = 1 / (1 + x) + 1 / ((x + 1) * math.log(2)) + 3 * x * x
        gy = math.exp(y) - 1 / (y + 2) ** 2
        assert math.isclose(g[0], gx, rel_tol=1e-14) and math.isclose(g[1], gy, rel_tol=1e-14)
    tiny = ddx.equation(lambda: ddx.log1p(ddx.var("x")))
    assert tiny.evaluate([1e-17]) == 1e-17
