"""Every spelling of a point, a direction and weights; arrays in place and copied."""

from __future__ import annotations

import numpy as np
import pytest

import ddx

X, Y = 2.0, 3.0


@pytest.mark.parametrize(
    "point",
    [
        [X, Y],
        (X, Y),
        [2, 3],  # integers
        {"x": X, "y": Y},
        {"y": Y, "x": X},  # any order
        {"x": 2, "y": np.float64(Y)},
        np.array([X, Y]),
        np.array([2, 3], dtype=np.int64),
        np.array([X, Y], dtype=np.float32),
        np.array([X, 0.0, Y, 0.0])[::2],  # strided
        [np.float64(X), np.float64(Y)],  # NumPy scalars in a list
        memoryview(np.array([X, Y])),  # any array-like
    ],
    ids=lambda p: type(p).__name__,
)
def test_point_spellings(f, point):
    value, grad = f.jacobian(point)
    assert value == f.evaluate([X, Y])
    assert grad.tolist() == f.jacobian([X, Y])[1].tolist()


@pytest.mark.parametrize(
    "batch",
    [
        np.array([[2.0, 2.5], [3.0, 3.5]]),
        [[2.0, 2.5], [3.0, 3.5]],  # nested lists are an array
        np.asfortranarray(np.array([[2.0, 2.5], [3.0, 3.5]])),  # copied to C order
        np.array([[2, 5], [3, 7]]).astype(np.int32) / np.array([[1, 2], [1, 2]]),
        np.array([[2.0, 9.0, 2.5], [3.0, 9.0, 3.5]])[:, ::2],  # strided
    ],
    ids=["c", "lists", "fortran", "computed", "strided"],
)
def test_batch_spellings(f, batch):
    arr = np.asarray(batch, dtype=np.float64)
    value, jac = f.jacobian(batch)
    assert value.shape == (2,) and jac.shape == (2, 2)
    for k in range(2):
        assert value[k] == f.evaluate(arr[:, k])
        assert jac[:, k].tolist() == f.jacobian(arr[:, k])[1].tolist()


def test_batch_of_one(f):
    value, jac = f.jacobian(np.array([[X], [Y]]))
    assert value.shape == (1,) and jac.shape == (2, 1)
    assert value[0] == f.evaluate([X, Y])


def test_bare_number_for_one_symbol():
    eq = ddx.equation("x * x")
    assert eq.evaluate(3.0) == 9.0
    assert eq.evaluate(3) == 9.0
    assert eq.evaluate(np.float64(3.0)) == 9.0
    assert eq.evaluate(np.array(3.0)) == 9.0
    assert eq.gradient(3.0).tolist() == [6.0]


def test_direction_spellings(f):
    expected = f.jvp([1.0, 2.0], [X, Y])
    for v in ([1.0, 2.0], (1, 2), {"y": 2.0, "x": 1.0}, np.array([1.0, 2.0])):
        assert f.jvp(v, [X, Y]) == expected
        assert f.hvp(v, {"x": X, "y": Y})[2].tolist() == f.hvp([1.0, 2.0], [X, Y])[2].tolist()


def test_direction_broadcasts_against_a_batch(f):
    xs = np.array([[2.0, 2.5, 3.0], [3.0, 3.5, 4.0]])
    value, jv = f.jvp([1.0, 0.0], xs)
    assert jv.shape == (3,)
    for k in range(3):
        assert jv[k] == f.jvp([1.0, 0.0], xs[:, k])[1]
    # A batch of directions at one point.
    vs = np.array([[1.0, 0.0], [0.0, 1.0]])
    value, hv = f.hvp(vs, [X, Y])[0], f.hvp(vs, [X, Y])[2]
    assert value.shape == (2,) and hv.shape == (2, 2)
    assert hv.tolist() == f.hessian([X, Y])[2].T.tolist() or np.allclose(hv, f.hessian([X, Y])[2])


def test_weights_are_positional(system):
    value, wj = system.vjp(np.array([1.0, 0.0]), [1.0, 2.0])
    assert wj.tolist() == system.jacobian([1.0, 2.0])[1][0].tolist()
    with pytest.raises(ddx.Error) as e:
        system.vjp({"f0": 1.0, "f1": 0.0}, [1.0, 2.0])
    assert e.value.code is ddx.errc.wrong_direction
    ws = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 2.0]])
    xs = np.full((2, 3), 1.5)
    value, wj = system.vjp(ws, xs)
    assert wj.shape == (2, 3)
    assert wj[:, 2].tolist() == system.vjp([2.0, 2.0], [1.5, 1.5])[1].tolist()


def test_batch_input_is_not_copied_or_changed(f):
    xs = np.array([[2.0, 2.5], [3.0, 3.5]])
    before = xs.copy()
    f.hessian(xs)
    assert xs.tolist() == before.tolist()


def test_outputs_are_fresh_arrays(f):
    a = f.jacobian([X, Y])[1]
    b = f.jacobian([X, Y])[1]
    assert a is not b and not np.shares_memory(a, b)
    assert a.flags.c_contiguous and a.flags.writeable and a.dtype == np.float64


def test_unaligned_batch_is_read(f):
    # Arrays rebuilt from network frames (Dask's `distributed`) may sit at any address.
    raw = np.frombuffer(bytearray(8 * 2 * 5 + 1), dtype=np.uint8)[1:]
    unaligned = raw.view(np.float64).reshape(2, 5)
    assert not unaligned.flags.aligned
    unaligned[...] = np.linspace(0.1, 1.0, 10).reshape(2, 5)
    want = f.jacobian(unaligned.copy())
    got = f.jacobian(unaligned)
    for g, w in zip(got, want):
        assert g.tobytes() == w.tobytes()
