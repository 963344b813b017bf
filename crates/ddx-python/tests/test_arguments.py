"""Integer arguments (orders, indices, counts, lanes, limits) given out of range: a
negative or oversized ``int`` is a ``ddx.Error`` with the code the call raises for that
argument, naming the method and the argument — never PyO3's bare ``OverflowError``, a
``TypeError`` spelled in Rust, or a panic. ``Options``' integer fields are validated by
pydantic (``ValidationError``, a ``ValueError`` naming the field).

The walk reads the interface from the stubs (``_ddx.pyi``, held to the module by
stubtest): every parameter annotated ``int`` of every public method and function is
called with negative and oversized values, so an integer parameter added later is walked
without this file changing."""

from __future__ import annotations

import ast
import inspect
import math
from pathlib import Path

import numpy as np
import pydantic
import pytest

import ddx

STUBS = Path(ddx.__file__).with_name("_ddx.pyi")

# Signed integers, not counts: a negative one is meaningful (x⁻²).
SIGNED = {("powi", "n")}

BAD = [-1, -7, -(2**63), -(2**70), 2**64, 2**70]


def int_parameters() -> list[tuple[str | None, str, str]]:
    """``(class or None, function, parameter)`` for every ``int`` parameter in the stubs."""
    tree = ast.parse(STUBS.read_text())
    found = []

    def visit(fn: ast.FunctionDef, owner: str | None) -> None:
        if fn.name.startswith("_") and fn.name != "__call__":
            return
        args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
        for a in args:
            text = ast.unparse(a.annotation) if a.annotation else ""
            if text in ("int", "int | None") and (fn.name, a.arg) not in SIGNED:
                found.append((owner, fn.name, a.arg))

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            visit(node, None)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    visit(item, node.name)
    return found


PARAMETERS = int_parameters()

# The code each call raises for the argument out of range.
CODES = {
    ("Equation", "univariate_derivative", "k"): ddx.errc.order_too_high,
    ("Equation", "univariate_derivatives", "k"): ddx.errc.order_too_high,
    ("Equation", "nodes", "want"): ddx.errc.index_out_of_range,
    ("Equation", "wait_for_kernel", "want"): ddx.errc.index_out_of_range,
    ("Equation", "buffer", "want"): ddx.errc.index_out_of_range,
    ("Equation", "device_columns", "want"): ddx.errc.index_out_of_range,
    ("Equation", "device_columns", "points"): ddx.errc.column_length,
    ("DeviceColumns", "write", "first"): ddx.errc.wrong_column_count,
    ("DeviceColumns", "read", "first"): ddx.errc.wrong_column_count,
    ("DeviceColumns", "read", "count"): ddx.errc.wrong_column_count,
    (None, "function", "arity"): ddx.errc.user_function,
}


def test_the_stubs_name_every_integer_parameter_this_file_knows():
    """The walk is complete: each integer parameter has its expected code here, and no
    code here names a parameter the stubs lost."""
    assert set(PARAMETERS) == set(CODES), set(PARAMETERS) ^ set(CODES)


def univariate() -> ddx.Equation:
    return ddx.equation("exp(x) * sin(x)")


def receiver(owner: str | None):
    """An object to call the method on, or None to skip (no device here)."""
    if owner == "Equation":
        return univariate()
    if owner == "DeviceColumns":
        eq = univariate().compile(backend=ddx.Backend.DEVICE)
        try:
            eq.device_status
        except ddx.Error:
            return None
        return eq.device_columns(4)
    return ddx


def arguments(owner: str | None, name: str, param: str, value: int) -> tuple[list, dict]:
    """Valid arguments for every other parameter of ``owner.name``, and ``value`` for
    ``param``."""
    valid = {
        "k": 2,
        "x0": 0.5,
        "x": [0.5],
        "points": 4,
        "columns": np.zeros((1, 4)),
    }
    if (owner, name) == (None, "function"):
        valid.update(name="f", value=lambda *a: 0.0, first=lambda *a: 0.0)
    target = receiver(owner)
    method = getattr(target, name)
    sig = inspect.signature(method)
    args, kwargs = [], {}
    for p in sig.parameters.values():
        v = value if p.name == param else valid.get(p.name, p.default)
        if p.kind is inspect.Parameter.KEYWORD_ONLY:
            kwargs[p.name] = v
        elif v is not inspect.Parameter.empty:
            args.append(v)
    return [method, *args], kwargs


@pytest.mark.parametrize(("owner", "name", "param"), PARAMETERS)
@pytest.mark.parametrize("value", BAD)
def test_an_integer_out_of_range_is_a_ddx_error(owner, name, param, value):
    if receiver(owner) is None:
        pytest.skip("no OpenCL device: DeviceColumns cannot be made")
    (method, *args), kwargs = arguments(owner, name, param, value)
    with pytest.raises(ddx.Error) as e:
        method(*args, **kwargs)
    message = str(e.value)
    assert e.value.code is CODES[(owner, name, param)], message
    assert message.startswith(e.value.code.name), message
    assert f"{param}={value}" in message, message
    assert f"{owner or 'ddx'}.{name}" in message, message
    assert ("negative" if value < 0 else "too large") in message, message


def test_a_valid_integer_still_answers():
    eq = univariate()
    assert eq.univariate_derivative(0, 0.5) == eq.evaluate([0.5])
    assert eq.univariate_derivative(ddx.MAX_ORDER, 0.0) == eq.univariate_derivative(
        np.int64(ddx.MAX_ORDER), 0.0
    )
    assert eq.nodes(want=ddx.Want.HESSIAN) == eq.nodes(want=5) > 0
    with pytest.raises(TypeError, match="Equation.nodes: want=True is a bool"):
        eq.nodes(want=True)  # a bool is no lane number (test_fresh_user_followups.py)


def test_a_lane_number_past_want_is_index_out_of_range():
    eq = univariate()
    for want in (len(ddx.Want), 255, 256):
        with pytest.raises(ddx.Error, match=rf"want={want} is too large") as e:
            eq.nodes(want=want)
        assert e.value.code is ddx.errc.index_out_of_range


def test_an_order_past_max_order_names_the_highest():
    with pytest.raises(ddx.Error, match=rf"from 0 to {ddx.MAX_ORDER}") as e:
        univariate().univariate_derivatives(ddx.MAX_ORDER + 1, 0.5)
    assert e.value.code is ddx.errc.order_too_high


def test_not_an_integer_is_pythons_type_error():
    eq = univariate()
    for bad in (1.5, "2", None):
        with pytest.raises(TypeError, match="Equation.univariate_derivative: k=.* is an? ") as e:
            eq.univariate_derivative(bad, 0.5)
        assert "Py" not in str(e.value).replace("Python", ""), str(e.value)


@pytest.mark.parametrize(
    "field", ["points", "warm_points", "hot_points", "answer_limit", "codegen"]
)
@pytest.mark.parametrize("value", [-1, -(2**70), 2**70])
def test_options_integer_fields_out_of_range_name_the_field(field, value):
    """Options are a pydantic model: out of range is its ValidationError naming the field,
    at ``Options(...)``, at ``compile(...)`` and at assigning ``options``."""
    fields = {"codegen": {"lanes": value}} if field == "codegen" else {field: value}
    name = "lanes" if field == "codegen" else field
    eq = univariate()
    for make in (
        lambda: ddx.Options(**fields),
        lambda: eq.compile(**fields),
        lambda: setattr(eq, "options", {**eq.options.model_dump(), **fields}),
    ):
        with pytest.raises(pydantic.ValidationError, match=name):
            make()


@pytest.mark.parametrize("value", [-1, -(2**70), 99])
def test_dask_want_out_of_range_is_a_ddx_error(value):
    pytest.importorskip("dask")
    import ddx.dask as dx

    with pytest.raises(ddx.Error, match=rf"want={value}") as e:
        dx.column_names(univariate(), want=value)
    assert e.value.code is ddx.errc.index_out_of_range


def test_ints_past_the_float64_range_are_too_large_errors() -> None:
    """``float(10**400)`` raises ``OverflowError``; ddx says ``too_large``, naming where the
    number was given — as a constant of a model, a coordinate, a direction, a parameter
    value, ``x0`` — and a ``powi`` exponent past 32 bits likewise (signed: ``-2**31`` is
    in range)."""
    huge = 10**400
    eq = ddx.equation("x * y")
    bound = ddx.equation("k * x", params=["k"])
    uni = ddx.equation("sin(x)")
    calls = {
        "a constant of the model": [
            lambda: ddx.equation(lambda: ddx.var("x") + huge),
            lambda: ddx.equation(lambda: ddx.var("x") ** -huge),
            lambda: ddx.sin(huge),
        ],
        "ddx.Expression(value)": [lambda: ddx.Expression(huge)],
        "the point": [
            lambda: eq.evaluate([huge, 1.0]),
            lambda: eq.jacobian({"x": 1.0, "y": -huge}),
            lambda: uni.evaluate(huge),
        ],
        "the direction": [lambda: eq.jvp([huge, 1.0], [1.0, 2.0])],
        "the parameter values": [lambda: bound.with_params([huge]), lambda: bound.with_params({"k": huge})],
        # Batches given row by row or as a dict of columns (found by the fresh-user tester:
        # these said wrong_arity, "each a 1-D real sequence or a number; got int").
        "a row of the points": [
            lambda: bound.evaluate({"x": [1.0, 2.0], "k": huge}),
            lambda: bound.evaluate([[1.0, 2.0], [huge]]),
            lambda: bound.evaluate([[1.0, 2.0], huge]),
            lambda: eq.jacobian([[1.0, huge], [2.0, 3.0]]),
        ],
        "x0": [
            lambda: uni.univariate_derivative(1, huge),
            lambda: uni.univariate_derivatives(2, -huge),
        ],
    }
    for where, fns in calls.items():
        for fn in fns:
            with pytest.raises(ddx.Error) as e:
                fn()
            assert e.value.code is ddx.errc.too_large
            assert where in str(e.value) and "401 digits" in str(e.value), str(e.value)
    assert uni.univariate_derivative(0, 10**300) == math.sin(1e300)  # in range: as float()
    x = ddx.var("x")
    for n in (2**31, -(2**31) - 1, 2**70, -(2**64)):
        with pytest.raises(ddx.Error) as e:
            ddx.powi(x, n)
        assert e.value.code is ddx.errc.too_large
        assert f"n={n}" in str(e.value) and "-2147483648 to 2147483647" in str(e.value)
    low = ddx.equation(lambda: ddx.powi(ddx.var("x"), -(2**31)) + ddx.powi(ddx.var("x"), 2**31 - 1))
    assert low.evaluate(1.0) == 2.0
    # Its text parses back (the text takes any integer literal as exponent), and so does the
    # text of its derivative, whose exponents step past 32 bits.
    lines = str(low).splitlines()
    again = ddx.equation(lines[0].removeprefix("f0: "))
    assert again.evaluate(-1.0) == low.evaluate(-1.0) == 0.0
    assert again.gradient(-1.0).tobytes() == low.gradient(-1.0).tobytes()
    derivative = next(line.split(": ", 1)[1] for line in lines if "d/dx" in line)
    assert "2147483649" in derivative
    assert ddx.equation(derivative).evaluate(-1.0) == low.gradient(-1.0)[0] == 2.0**32 - 1
