"""``Options``: a frozen pydantic model, validated on the way in; compiling from Python."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

import ddx
from ddx import _options


def test_defaults_are_the_rust_defaults():
    assert ddx.Options() == _options.DEFAULT
    eq = ddx.equation("x * y")
    assert eq.options == ddx.Options()


def test_frozen_and_validated():
    o = ddx.Options()
    with pytest.raises(pydantic.ValidationError):
        o.points = 5  # type: ignore[misc]
    for bad in (
        {"points": -1},
        {"points": 1.5},
        {"warm_points": 2**64},
        {"backend": 7},
        {"backend": "fast"},
        {"retain_object": "yes"},
        {"codegen": {"lanes": 0}},
        {"codegen": {"lanes": 256}},
        {"codegen": {"lanes": "wide"}},
        {"unknown": 1},
    ):
        with pytest.raises(pydantic.ValidationError):
            ddx.Options(**bad)


def test_round_trip_through_an_equation(tmp_path):
    eq = ddx.equation("x * y")
    o = ddx.Options(
        backend="adapt",
        points=1000,
        codegen=ddx.Codegen(lanes=2, opt_level="off", contract=True),
        warm_points=10,
        hot_points=20,
        retain_object=False,
        cache_dir=tmp_path,
        device="pocl",
    )
    eq.options = o
    assert eq.options == o
    assert eq.options.backend is ddx.Backend.ADAPT
    assert eq.options.cache_dir == Path(tmp_path)
    eq.options = {"backend": ddx.Backend.INTERPRET}  # anything that validates
    assert eq.options == ddx.Options()
    with pytest.raises(pydantic.ValidationError):
        eq.options = {"points": -3}


def test_compile_waits_and_answers_the_same_bits():
    import numpy as np

    eq = ddx.equation("x * log(x) + y * exp(x * y)")
    xs = np.array([[1.5, 2.0, 0.5], [0.2, 0.1, 0.3]])
    before = eq.jacobian(xs)
    point = eq.jacobian([1.5, 0.2])
    same = eq.compile(points=xs.shape[1])
    assert same is eq
    assert eq.options.backend is ddx.Backend.COMPILE and eq.options.points == 3
    assert eq.uses_kernel is ddx.has_jit
    after = eq.jacobian(xs)
    assert after[0].tolist() == before[0].tolist() and after[1].tolist() == before[1].tolist()
    assert eq.jacobian([1.5, 0.2])[1].tolist() == point[1].tolist()
    assert eq.wait_for_kernel(want=ddx.Want.HESSIAN) is ddx.has_jit
    eq.options = ddx.Options(backend=ddx.Backend.INTERPRET)
    assert not eq.uses_kernel


def test_compile_fields_are_validated():
    eq = ddx.equation("x * y")
    with pytest.raises(pydantic.ValidationError):
        eq.compile(points="many")
    assert eq.options == ddx.Options()


def test_device_backend_answers_single_points_from_the_cpu():
    # Device, or no device (then the CPU answers everything): the same answers either way;
    # test_device.py checks the device itself.
    eq = ddx.equation("x * y")
    eq.compile(backend=ddx.Backend.DEVICE)
    assert eq.options.backend is ddx.Backend.DEVICE
    assert eq.jacobian([2.0, 3.0])[1].tolist() == [3.0, 2.0]


def test_an_empty_cache_dir_is_refused_not_taken_for_the_current_directory(tmp_path, monkeypatch):
    # pathlib reads "" as ".": kernels would have been written where the program runs.
    monkeypatch.chdir(tmp_path)
    eq = ddx.equation("x*y + 1")
    for empty in ["", b""]:
        with pytest.raises(pydantic.ValidationError, match="empty path"):
            ddx.Options(cache_dir=empty)
        with pytest.raises(pydantic.ValidationError, match="empty path"):
            eq.compile(backend=ddx.Backend.COMPILE, cache_dir=empty)
    assert list(tmp_path.iterdir()) == []
    # "." written out is a directory the caller named, and is kept.
    assert ddx.Options(cache_dir=".").cache_dir == Path(".")
