"""Every error code reachable from Python, as ``ddx.Error`` with its ``errc``; and the
exceptions that are not ddx's (a model's own, TypeError for a non-number)."""

from __future__ import annotations

import pickle
import threading

import numpy as np
import pytest

import ddx


def code_of(call) -> ddx.errc:
    with pytest.raises(ddx.Error) as e:
        call()
    assert isinstance(e.value, RuntimeError)
    assert str(e.value).startswith(e.value.code.name)
    return e.value.code


def test_errc_is_an_int_enum():
    assert isinstance(ddx.errc.unknown_symbol, int)
    assert ddx.errc.unknown_symbol.name == "unknown_symbol"
    assert ddx.errc(int(ddx.errc.wrong_arity)) is ddx.errc.wrong_arity
    assert [c.value for c in ddx.errc] == list(range(1, len(ddx.errc) + 1))
    assert f"{ddx.errc.wrong_arity}" == str(int(ddx.errc.wrong_arity))


def test_specification_example(f):
    try:
        f.jacobian({"z": 1.0})
    except ddx.Error as e:
        assert "no symbol `z`" in str(e)
        assert e.code is ddx.errc.unknown_symbol
    else:
        pytest.fail("no error")


def test_point_codes(f):
    assert code_of(lambda: f.jacobian([1.0])) is ddx.errc.short_point
    assert code_of(lambda: f.jacobian([1.0, 2.0, 3.0])) is ddx.errc.wrong_arity
    assert code_of(lambda: f.jacobian({"x": 1.0})) is ddx.errc.short_point
    assert code_of(lambda: f.jacobian({"x": 1.0, "y": 2.0, "z": 3.0})) is ddx.errc.unknown_symbol
    assert code_of(lambda: f.jacobian(np.zeros((1, 4)))) is ddx.errc.short_point
    assert code_of(lambda: f.jacobian(np.zeros((3, 4)))) is ddx.errc.wrong_arity
    assert code_of(lambda: f.evaluate(np.zeros((2, 2, 2)))) is ddx.errc.wrong_arity
    # A dtype that is not real is its own code (it was wrong_arity).
    assert code_of(lambda: f.evaluate(np.array(["a", "b"]))) is ddx.errc.wrong_dtype
    assert code_of(lambda: f.evaluate(np.array([1 + 1j, 2]))) is ddx.errc.wrong_dtype
    # Rows one by one, as every batch call reads them: of two lengths neither 1, refused
    # (a row of length 1 is broadcast: `[[1.0, 2.0], [3.0]]` is two points).
    assert code_of(lambda: f.evaluate([[1.0, 2.0], [3.0, 4.0, 5.0]])) is ddx.errc.column_length
    assert list(f.evaluate([[1.0, 2.0], [3.0]])) == list(f.jacobian([[1.0, 2.0], [3.0]])[0])


def test_shape_errors_name_the_shape(f):
    with pytest.raises(ddx.Error, match=r"\(2, points\)"):
        f.evaluate(np.zeros((3, 4)))
    with pytest.raises(ddx.Error, match=r"shape \(2,\)"):
        f.evaluate(np.zeros((2, 2, 2)))


def test_direction_codes(f):
    assert code_of(lambda: f.jvp([1.0], [1.0, 2.0])) is ddx.errc.wrong_direction
    assert code_of(lambda: f.hvp({"x": 1.0}, [1.0, 2.0])) is ddx.errc.wrong_direction
    assert code_of(lambda: f.jvp({"q": 1.0, "x": 1.0}, [1.0, 2.0])) is ddx.errc.unknown_symbol
    assert code_of(lambda: f.vjp([1.0, 2.0], [1.0, 2.0])) is ddx.errc.wrong_direction
    assert code_of(lambda: f.jvp(np.zeros((3, 2)), np.zeros((2, 2)))) is ddx.errc.wrong_direction
    assert (
        code_of(lambda: f.jvp(np.zeros((2, 3)), np.zeros((2, 2)))) is ddx.errc.column_length
    )


def test_not_scalar_and_univariate(system):
    assert code_of(lambda: system.hvp([1.0, 0.0], [1.0, 2.0])) is ddx.errc.not_scalar
    assert code_of(lambda: system.univariate_derivative(1, 0.5)) is ddx.errc.not_univariate
    eq = ddx.equation("sqrt(x)")
    # At the branch point the rule routes answer (sqrt'(0) = inf, as the gradient says);
    # above the tensor lanes' highest order none does.
    assert eq.univariate_derivative(1, 0.0) == float("inf")
    assert code_of(lambda: eq.univariate_derivative(33, 0.0)) is ddx.errc.unsupported_scalar
    assert code_of(lambda: eq.univariate_derivative(200, 1.0)) is ddx.errc.order_too_high


def test_build_codes():
    assert code_of(lambda: ddx.equation(lambda: ddx.Expression(2.0))) is ddx.errc.no_graph
    assert code_of(lambda: ddx.equation(lambda: 2.0)) is ddx.errc.no_graph
    assert code_of(lambda: ddx.equation(lambda: ())) is ddx.errc.no_graph
    assert code_of(lambda: ddx.equation([])) is ddx.errc.no_graph
    assert code_of(lambda: ddx.equation("2 + 3")) is ddx.errc.no_graph
    outside = ddx.var("x")  # named outside any model
    assert code_of(lambda: ddx.equation(lambda: outside * 2.0)) is ddx.errc.no_arena


def test_an_expression_used_after_its_model_returned():
    kept = []

    def first():
        x = ddx.var("x")
        kept.append(x)
        return x * x

    ddx.equation(first)
    stale = kept[0]
    assert code_of(lambda: ddx.equation(lambda: stale + ddx.var("y"))) is ddx.errc.sealed_arena


def test_an_expression_from_another_thread():
    made = []

    def model():
        t = threading.Thread(target=lambda: made.append(ddx.var("x")))
        t.start()
        t.join()
        return made[0] + ddx.var("y")

    assert code_of(lambda: ddx.equation(model)) is ddx.errc.no_arena


def test_a_nested_model_using_its_enclosing_models_expression():
    def outer():
        x = ddx.var("x")
        ddx.equation(lambda: x * ddx.var("y"))
        return x

    assert code_of(lambda: ddx.equation(outer)) is ddx.errc.foreign_expression


def test_text_codes():
    assert code_of(lambda: ddx.equation("x ^ 2")) is ddx.errc.bad_syntax
    assert code_of(lambda: ddx.equation("sine(x)")) is ddx.errc.unknown_function
    assert code_of(lambda: ddx.equation("pow(x)")) is ddx.errc.wrong_argument_count
    assert code_of(lambda: ddx.equation(["x", "y +"])) is ddx.errc.bad_syntax


def test_caret_display_in_the_message():
    with pytest.raises(ddx.Error) as e:
        ddx.equation("x ^ 2")
    assert str(e.value).endswith("    x ^ 2\n      ^")


def test_buffer_codes(f):
    call = f.buffer([1.0, 2.0], want=ddx.Want.VALUE)
    assert code_of(lambda: call.jacobian) is ddx.errc.wrong_column_count
    assert code_of(lambda: call.hessian) is ddx.errc.wrong_column_count
    call = f.buffer([1.0, 2.0], want=ddx.Want.GRADIENT)
    assert code_of(lambda: call.value) is ddx.errc.wrong_column_count
    call = f.buffer(np.zeros(2))
    call.x.resize(5, refcheck=False)
    assert code_of(call) is ddx.errc.wrong_output_length


def test_jit_cache_error_is_status_not_exception(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    eq = ddx.equation("x * y")
    eq.compile(cache_dir=blocker)
    assert eq.jacobian([1.0, 2.0])[1].tolist() == [2.0, 1.0]
    status = eq.jit_status
    if ddx.has_jit:
        assert status["cache_error"] is not None and status["cache_error"].startswith("jit_cache")


def test_model_exceptions_propagate_unchanged():
    class Mine(Exception):
        pass

    def model():
        ddx.var("x")
        raise Mine("from the model")

    with pytest.raises(Mine, match="from the model"):
        ddx.equation(model)
    # The failed build left nothing behind: the next model builds normally.
    assert ddx.equation(lambda: ddx.var("x") * 2.0).evaluate([1.0]) == 2.0


def test_type_errors():
    with pytest.raises(TypeError):
        ddx.equation(lambda: "x")
    with pytest.raises(TypeError):
        ddx.equation(lambda: (ddx.var("x"), "y"))
    with pytest.raises(TypeError):
        ddx.equation(42)
    with pytest.raises(TypeError):
        ddx.equation(["x", 2])
    with pytest.raises(TypeError):
        ddx.sin("x")
    x = ddx.var("x")
    with pytest.raises(TypeError):
        bool(x < 1.0)
    with pytest.raises(TypeError):
        float(x)
    with pytest.raises(TypeError):
        x + "y"
    eq = ddx.equation("x * y")
    with pytest.raises(TypeError):
        eq.evaluate({1: 2.0, "y": 3.0})
    with pytest.raises(TypeError):
        eq.evaluate({"x": "a", "y": 3.0})
    with pytest.raises(TypeError):
        ddx.Equation()


def test_error_pickles():
    e = ddx.Error("wrong_arity: x", ddx.errc.wrong_arity)
    again = pickle.loads(pickle.dumps(e))
    assert str(again) == str(e) and again.code is ddx.errc.wrong_arity


def test_compiler_failures_are_status_not_exceptions():
    """jit_target and its kin are never raised: the lane interprets, same bits, and
    ``jit_status`` says why."""
    eq = ddx.equation("x * y + sin(x)")
    expected = eq.jacobian(np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]]))
    eq.compile(codegen=ddx.Codegen(lanes=3))  # a lane width the code generator does not make
    got = eq.jacobian(np.array([[1.0, 2.0, 3.0], [0.5, 0.5, 0.5]]))
    assert got[1].tolist() == expected[1].tolist()
    if ddx.has_jit:
        error = eq.jit_status["error"]
        assert error is not None and error.startswith("jit_target"), error


def test_codes_python_cannot_reach():
    """``duplicate_symbol`` needs a name twice in one point (a dict cannot hold that); it
    exists in ``errc`` all the same, with the Rust numbering. ``index_out_of_range`` is
    Python's for a ``want`` that names no lane (no Python call takes a symbol by
    position)."""
    assert ddx.errc.duplicate_symbol.name == "duplicate_symbol"
    assert code_of(lambda: ddx.equation("x").nodes(want=-1)) is ddx.errc.index_out_of_range
