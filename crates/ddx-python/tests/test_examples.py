"""The specification's Python examples, as written (its "Python" section)."""

from __future__ import annotations

import numpy as np
import pytest

import ddx


def test_decorator_and_text_and_system():
    @ddx.equation
    def f():
        x = ddx.var("x")
        y = ddx.var("y")
        return ddx.exp(x) * ddx.sin(y)

    g = ddx.equation("exp(x) * sin(y)")
    sys = ddx.equation(["x*x + y*y - 4", "x*y - 1"])
    assert f.symbols == g.symbols == sys.symbols == ["x", "y"]
    assert f.arity == 2 and f.outputs == 1 and sys.outputs == 2
    assert f.evaluate([2.0, 3.0]) == g.evaluate([2.0, 3.0])

    # Points.
    a = f.jacobian([2.0, 3.0])  # positional, alphabetical
    b = f.jacobian({"x": 2.0, "y": 3.0})  # by name
    c = f.jacobian(np.array([[2.0], [3.0]]))  # a batch of one
    d = f.jacobian(np.array([[2.0, 2.5], [3.0, 3.5]]))  # a batch of two
    assert a[0] == b[0] == c[0][0] == d[0][0]
    assert c[1].shape == (2, 1) and d[1].shape == (2, 2)

    # Values and derivatives.
    value, gradient = f.jacobian([2.0, 3.0])
    value, gradient, hessian = f.hessian([2.0, 3.0])
    assert hessian.shape == (2, 2)
    value, gradient, hv = f.hvp([1.0, 0.0], [2.0, 3.0])
    assert hv.shape == (2,)


def test_calling_in_a_loop(f):
    def next_point(jacobian):
        return np.array([2.0, 3.0]) - 0.01 * jacobian

    call = f.buffer(np.array([2.0, 3.0]))
    for _ in range(3):
        call()  # fills call.value and call.jacobian
        call.x[:] = next_point(call.jacobian)
    assert isinstance(call.value, float)


def test_errors(f):
    try:
        f.jacobian({"z": 1.0})
    except ddx.Error as e:
        print(e)  # the library's text
        assert e.code is ddx.errc.unknown_symbol
    else:
        pytest.fail("no error")


def test_compiling(f):
    batch = np.array([[2.0, 2.5], [3.0, 3.5]])
    f.compile(points=batch.shape[1]).jacobian(batch)
    assert f.uses_kernel is ddx.has_jit  # True, once it has landed
    f.options = ddx.Options(backend=ddx.Backend.INTERPRET)  # discards the kernel
    assert not f.uses_kernel
