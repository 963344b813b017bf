"""Saving, loading, verifying, the file as a cache, and pickling (through the archive)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ddx

from conftest import huber


def same_bits(a, b):
    for x, y in zip(a, b):
        assert np.asarray(x).tobytes() == np.asarray(y).tobytes()


def test_save_load_same_bits(tmp_path, f):
    path = tmp_path / "f.ddx"
    xs = np.array([[2.0, 2.5], [3.0, 3.5]])
    before = f.hessian(xs)
    f.save(path)
    same = ddx.load(path)
    assert same.loaded and not f.loaded
    assert same.symbols == f.symbols
    same_bits(same.hessian(xs), before)
    same_bits(same.jacobian([2.0, 3.0]), f.jacobian([2.0, 3.0]))
    f.verify(path)
    ddx.verify(path)


def test_shapes_survive(tmp_path, system):
    system.save(tmp_path / "s.ddx")
    again = ddx.load(tmp_path / "s.ddx")
    assert again.outputs == 2 and again.jacobian([1.0, 2.0])[1].shape == (2, 2)
    one = ddx.equation(lambda: (ddx.var("x") * 2.0,))  # a system of one output
    one.save(tmp_path / "one.ddx")
    assert ddx.load(tmp_path / "one.ddx").evaluate([1.0]).shape == (1,)


def test_archive_codes(tmp_path, f):
    with pytest.raises(ddx.Error) as e:
        ddx.load(tmp_path / "missing.ddx")
    assert e.value.code is ddx.errc.archive_io
    (tmp_path / "junk.ddx").write_bytes(b"not an equation at all")
    with pytest.raises(ddx.Error) as e:
        ddx.load(tmp_path / "junk.ddx")
    assert e.value.code is ddx.errc.bad_archive
    f.save(tmp_path / "f.ddx")
    data = bytearray((tmp_path / "f.ddx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "bad.ddx").write_bytes(bytes(data))
    with pytest.raises(ddx.Error) as e:
        ddx.load(tmp_path / "bad.ddx")
    assert e.value.code is ddx.errc.archive_corrupt
    other = ddx.equation("x * y")
    with pytest.raises(ddx.Error) as e:
        other.verify(tmp_path / "f.ddx")
    assert e.value.code is ddx.errc.archive_mismatch
    with pytest.raises(ddx.Error) as e:
        f.save(tmp_path / "no-such-dir" / "f.ddx")
    assert e.value.code is ddx.errc.archive_io


def test_cache(tmp_path):
    path = tmp_path / "cache.ddx"

    def model() -> ddx.Expression:
        x, y = ddx.var("x"), ddx.var("y")
        return ddx.exp(x) * y

    first = ddx.equation(model, cache=path)
    assert not first.loaded and path.exists()
    second = ddx.equation(model, cache=path)
    assert second.loaded
    assert second.jacobian([1.0, 2.0])[1].tolist() == first.jacobian([1.0, 2.0])[1].tolist()
    edited = ddx.equation(lambda: ddx.var("x") * ddx.var("y"), cache=path)
    assert not edited.loaded  # another equation: rebuilt and saved over it
    text = ddx.equation("exp(x) * y", cache=tmp_path / "text.ddx")
    assert not text.loaded and ddx.equation("exp(x) * y", cache=tmp_path / "text.ddx").loaded

    @ddx.equation(cache=tmp_path / "decorated.ddx")
    def decorated():
        return ddx.var("x") ** 2

    assert decorated.gradient([3.0]).tolist() == [6.0]


def test_pickle_round_trip():
    eq = huber()
    xs = np.random.default_rng(2).uniform(0.5, 2.5, size=(2, 100))
    before = eq.hessian(xs)
    again = pickle.loads(pickle.dumps(eq))
    assert again.loaded and again.symbols == eq.symbols
    same_bits(again.hessian(xs), before)
    same_bits(again.jacobian([2.0, 0.5]), eq.jacobian([2.0, 0.5]))


def test_pickle_after_a_hessian_whose_sweep_holds_an_exponent():
    """``y ** -x``: the reverse sweep holds the exponent, and a Hessian lane once kept a
    node no output reached, so its pickle did not load (``archive_corrupt``)."""
    eq = ddx.equation("y ** -x + exp((2.5 * y) ** -x)")
    before = eq.hessian([1.5, 2.0])
    hvp = eq.hvp([0.5, -1.0], [1.5, 2.0])
    again = pickle.loads(pickle.dumps(eq))
    same_bits(again.hessian([1.5, 2.0]), before)
    same_bits(again.hvp([0.5, -1.0], [1.5, 2.0]), hvp)


def test_pickle_with_kernels():
    eq = ddx.equation("x * log(x) + y * exp(x * y)").compile()
    data = pickle.dumps(eq)
    again = pickle.loads(data)
    assert again.options.backend is ddx.Backend.COMPILE
    if ddx.has_jit:
        assert again.uses_kernel  # the same host and build: the kernel came along
    same_bits(again.jacobian([1.5, 0.2]), eq.jacobian([1.5, 0.2]))


def test_unpickling_garbage_is_an_error():
    with pytest.raises(ddx.Error) as e:
        ddx._ddx.from_bytes(b"\x00" * 64)
    assert e.value.code is ddx.errc.bad_archive
