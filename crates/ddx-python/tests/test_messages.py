"""The messages of ``ddx.Error`` in Python's spellings: the Rust library's texts name Rust
items (``rt::equation``, ``Backend::Device``, ``Options::answer_limit``,
``Equation<Scalar>``, model closures), which the binding respells as the Python package
names them (``ddx.equation``, ``Backend.DEVICE``, ``Options.answer_limit``, the method
called). The code is the Rust one, unchanged, and each message still starts with it."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest

import ddx

# What a Python user has never seen: paths, generics, slices, Rust's `closure`.
RUST = re.compile(r"::|\b(Vec|Option|Result|Equation|LaneKind)<|&\[|\bclosure\b|\brt\.|\bcargo\b")


def raised(call) -> ddx.Error:
    with pytest.raises(ddx.Error) as e:
        call()
    message = str(e.value)
    assert message.startswith(e.value.code.name), message
    assert not RUST.search(message), message
    return e.value


def test_a_symbol_named_outside_a_model():
    outside = ddx.var("x")
    e = raised(lambda: ddx.equation(lambda: outside * 2.0))
    assert e.code is ddx.errc.no_arena
    assert "ddx.var" in str(e) and "ddx.equation" in str(e)


def test_an_expression_from_another_thread():
    made = []

    def model():
        t = threading.Thread(target=lambda: made.append(ddx.var("x")))
        t.start()
        t.join()
        return made[0] + ddx.var("y")

    assert raised(lambda: ddx.equation(model)).code is ddx.errc.no_arena


def test_an_expression_kept_past_its_model():
    kept = []

    def first():
        x = ddx.var("x")
        kept.append(x)
        return x * x

    ddx.equation(first)
    e = raised(lambda: ddx.equation(lambda: kept[0] + ddx.var("y")))
    assert e.code is ddx.errc.sealed_arena
    assert "model function" in str(e) and "ddx.equation" in str(e)


def test_a_nested_model():
    def outer():
        x = ddx.var("x")
        ddx.equation(lambda: x * ddx.var("y"))
        return x

    e = raised(lambda: ddx.equation(outer))
    assert e.code is ddx.errc.foreign_expression
    assert "nested ddx.equation" in str(e)


def test_too_large_names_the_method_and_the_python_option():
    f = ddx.equation("x * y + sin(x)")
    f.options = ddx.Options(answer_limit=10)
    x = np.ones((2, 6))
    for call, method in ((f.hessian, "Equation.hessian"), (f.jacobian, "Equation.jacobian")):
        e = raised(lambda: call(x))
        assert e.code is ddx.errc.too_large
        assert method in str(e) and "Options.answer_limit" in str(e), str(e)
    e = raised(lambda: f.evaluate(np.ones((2, 11))))
    assert "Equation.evaluate" in str(e)
    e = raised(lambda: f.buffer(x, want=ddx.Want.HESSIAN))
    assert "Equation.buffer" in str(e)
    # The remedy the message gives is Python that runs, and lets the call through.
    e = raised(lambda: f.hessian(x))
    remedy = re.search(r"eq\.options = (.*)\)$", str(e)).group(1)
    eq = f
    eq.options = eval(remedy)  # noqa: S307 -- the message's own suggestion
    assert f.hessian(x)[2].shape == (2, 2, 6)


def test_not_scalar_names_the_method(system):
    e = raised(lambda: system.hvp([1.0, 0.0], [1.0, 2.0]))
    assert e.code is ddx.errc.not_scalar and "Equation.hvp" in str(e)


def test_a_file_of_the_other_shape(tmp_path, system):
    path = tmp_path / "system.ddx"
    system.save(path)
    scalar = ddx.equation("x * y")
    e = raised(lambda: scalar.verify(path))
    assert e.code is ddx.errc.archive_mismatch
    assert "this equation has one output" in str(e), str(e)
    path = tmp_path / "scalar.ddx"
    scalar.save(path)
    e = raised(lambda: system.verify(path))
    assert "this equation is a system" in str(e), str(e)


def test_device_columns_under_another_backend():
    e = raised(lambda: ddx.equation("x * y").device_columns(8))
    assert e.code is ddx.errc.no_device and "Backend.DEVICE" in str(e), str(e)


def test_an_unbound_parameter_names_with_params():
    eq = ddx.equation("b * x + a * y", params=["b"])
    e = raised(lambda: eq.evaluate([1.0, 2.0, 3.0]))
    assert e.code is ddx.errc.short_point
    assert "parameter `b`" in str(e) and "Equation.with_params" in str(e), str(e)
    assert "column" not in str(e), str(e)  # Python batches hold the symbols only


def test_messages_the_rust_library_spells_alike_are_kept():
    """What Rust and Python spell the same is passed through unchanged."""
    f = ddx.equation("x * y")
    e = raised(lambda: f.jacobian({"z": 1.0}))
    assert "no symbol `z`" in str(e)
    e = raised(lambda: ddx.equation("x ^ 2"))
    assert e.code is ddx.errc.bad_syntax and str(e).endswith("    x ^ 2\n      ^")
    e = raised(lambda: ddx.equation("sin(x)").univariate_derivative(200, 1.0))
    assert e.code is ddx.errc.order_too_high
