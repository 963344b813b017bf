"""``buffer``: a Call bound to preallocated arrays, filled in place."""

from __future__ import annotations

import numpy as np
import pytest

import ddx


def test_specification_loop(f):
    call = f.buffer(np.array([2.0, 3.0]))
    jac = call.jacobian
    for step in range(5):
        call()
        assert call.value == f.evaluate(call.x)
        assert call.jacobian is jac  # the same array every time
        assert jac.tolist() == f.jacobian(call.x)[1].tolist()
        call.x[:] = call.x - 0.1 * call.jacobian


def test_array_is_bound_itself(f):
    x = np.array([2.0, 3.0])
    call = f.buffer(x)
    assert call.x is x
    x[0] = 1.0
    call()
    assert call.value == f.evaluate([1.0, 3.0])


def test_list_is_bound_as_a_writable_array(f):
    call = f.buffer([2.0, 3.0])
    assert isinstance(call.x, np.ndarray) and call.x.flags.writeable
    call.x[1] = 1.0
    call()
    assert call.value == f.evaluate([2.0, 1.0])
    named = f.buffer({"y": 3.0, "x": 2.0})
    assert named.x.tolist() == [2.0, 3.0]


@pytest.mark.parametrize(
    "want,blocks",
    [
        (ddx.Want.VALUE, {"value"}),
        (ddx.Want.JACOBIAN, {"value", "jacobian"}),
        (ddx.Want.GRADIENT, {"jacobian"}),
        (ddx.Want.HESSIAN, {"value", "jacobian", "hessian"}),
    ],
)
def test_want_picks_the_blocks(f, want, blocks):
    call = f.buffer([2.0, 3.0], want=want)
    call()
    value, jac, hess = f.hessian([2.0, 3.0])
    for name in ("value", "jacobian", "hessian"):
        if name in blocks:
            got = getattr(call, name)
            expected = {"value": value, "jacobian": jac, "hessian": hess}[name]
            assert np.asarray(got).tolist() == np.asarray(expected).tolist()
        else:
            with pytest.raises(ddx.Error) as e:
                getattr(call, name)
            assert e.value.code is ddx.errc.wrong_column_count


def test_batch_buffer(f, system):
    xs = np.array([[2.0, 2.5, 1.0], [3.0, 3.5, 0.5]])
    call = f.buffer(xs, want=ddx.Want.HESSIAN)
    assert call.x is xs
    call()
    value, jac, hess = f.hessian(xs)
    assert call.value.shape == (3,) and call.value.tolist() == value.tolist()
    assert call.jacobian.tolist() == jac.tolist()
    assert call.hessian.shape == (2, 2, 3) and call.hessian.tolist() == hess.tolist()
    # A system keeps its output axis, Hessians included (one colouring serves all outputs).
    call = system.buffer(xs, want=ddx.Want.HESSIAN)
    call()
    value, jac, hess = system.hessian(xs)
    assert call.value.shape == (2, 3) and call.hessian.shape == (2, 2, 2, 3)
    assert call.hessian.tolist() == hess.tolist()


def test_system_single_point(system):
    call = system.buffer([1.0, 2.0])
    call()
    assert call.value.shape == (2,) and call.jacobian.shape == (2, 2)


def test_other_wants_are_refused(f):
    with pytest.raises(ValueError):
        f.buffer([1.0, 2.0], want=ddx.Want.JVP)


def test_buffer_follows_options_changes(f):
    call = f.buffer([2.0, 3.0])
    f.options = ddx.Options(codegen=ddx.Codegen(contract=True))
    call()
    assert call.jacobian.tolist() == f.jacobian([2.0, 3.0])[1].tolist()
