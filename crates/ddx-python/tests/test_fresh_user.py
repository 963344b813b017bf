"""The fresh-user tester's findings on the Python package (notes/tester.md, 2026-12-01),
each kept as the input that showed it: shape and name messages that say where parameters
go, ``ddx.function``'s checks (arity, names, the formats of ``first``/``second``, an
asymmetric ``second``), exceptions chained and Ctrl-C propagated, ``ddx.from_bytes``, the
``wrong_dtype`` code, integer literals past float64, partial ``with_params``, ``params=``
checks, ``answer_limit`` on a single point, and symbol names the text cannot spell.

The truths are independent of ddx: closed forms, Python's own ``float()`` and
``str.isidentifier()``, and the equation's answers through another spelling."""

from __future__ import annotations

import math
import pickle
import sys
import threading

import numpy as np
import pytest

import ddx

EPS = sys.float_info.epsilon


def raised(f):
    with pytest.raises(ddx.Error) as e:
        f()
    return e.value


# ---------------------------------------------------------------------------------------
# 1, 2. Points on an equation with parameters: the messages name the shape that works.


@pytest.fixture
def with_t():
    return ddx.equation("x * T + y", params=["T"])


def test_batch_shape_message_names_the_symbols_then_parameters_shape(with_t):
    e = raised(lambda: with_t.evaluate(np.ones((4, 3))))
    assert e.code is ddx.errc.wrong_arity
    assert "(3, points)" in str(e) and "x, y" in str(e) and "(T)" in str(e), str(e)
    assert "(2, points)" not in str(e), str(e)  # unbound: the symbols alone do not do
    # The shape it names answers, as the per-point formula does.
    xs = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert with_t.evaluate(xs).tolist() == [1.0 * 5.0 + 3.0, 2.0 * 6.0 + 4.0]
    # Bound: both shapes are accepted, and the message names both.
    bound = with_t.with_params([2.0])
    e = raised(lambda: bound.evaluate(np.ones((4, 3))))
    assert "(2, points)" in str(e) and "(3, points)" in str(e), str(e)
    assert bound.evaluate(xs[:2]).tolist() == [1.0 * 2.0 + 3.0, 2.0 * 2.0 + 4.0]
    # The same message for a nested list read as an array.
    e = raised(lambda: with_t.evaluate([[1.0, 2.0]] * 4))
    assert e.code is ddx.errc.wrong_arity and "(3, points)" in str(e), str(e)


def test_a_parameter_in_a_single_point_is_said_to_be_one(with_t):
    e = raised(lambda: with_t.evaluate({"x": 1.0, "y": 2.0, "T": 3.0}))
    assert e.code is ddx.errc.unknown_symbol
    message = str(e)
    assert "`T` is a parameter" in message and "with_params" in message, message
    assert "did you mean" not in message, message
    assert "(3, points)" in message, message
    # What it says works: bound, or as a batch of one point.
    assert with_t.with_params({"T": 3.0}).evaluate({"x": 1.0, "y": 2.0}) == 5.0
    assert with_t.evaluate(np.array([[1.0], [2.0], [3.0]])).tolist() == [5.0]
    # n + q values positionally: the same hint.
    e = raised(lambda: with_t.evaluate([1.0, 2.0, 3.0]))
    assert e.code is ddx.errc.wrong_arity and "parameter (T)" in str(e), str(e)
    # On a bound equation it says the bound value is used.
    e = raised(lambda: with_t.with_params([3.0]).evaluate({"x": 1.0, "y": 2.0, "T": 3.0}))
    assert "bound value" in str(e), str(e)
    # A name that is neither still gets the nearest-name suggestion.
    e = raised(lambda: with_t.evaluate({"x": 1.0, "yy": 2.0}))
    assert e.code is ddx.errc.unknown_symbol and "did you mean `y`" in str(e), str(e)


# ---------------------------------------------------------------------------------------
# 3, 14. ddx.function's arity and names.


def one(a):
    return a


def d_one(a):
    return 1.0


@pytest.mark.parametrize("arity", [True, False])
def test_a_bool_arity_is_refused(arity):
    with pytest.raises(TypeError, match="arity=(True|False) is a bool"):
        ddx.function("g", arity, one, d_one)


@pytest.mark.parametrize("arity", [0, -1, 257, 2**70])
def test_arity_range_is_one_to_256(arity):
    e = raised(lambda: ddx.function("g", arity, one, d_one))
    assert e.code is ddx.errc.user_function
    assert "from 1 to 256" in str(e) and "0 to" not in str(e), str(e)


def test_arity_bounds_are_accepted():
    assert ddx.function("g", np.int64(1), one, d_one).arity == 1
    assert ddx.function("g", 256, lambda *a: 0.0, lambda *a: [0.0] * 256).arity == 256


@pytest.mark.parametrize("name", ["φ", "θ1", "変数", "_t", "f2"])
def test_user_function_names_follow_the_symbol_rule(name):
    # The rule is Python's identifier rule, as for symbols (checked against Python's).
    assert name.isidentifier()
    f = ddx.function(name, 1, lambda a: a * a, lambda a: 2 * a)
    text = ddx.equation(f"{name}(x) * y", functions=[f])
    model = ddx.equation(lambda: f(ddx.var("x")) * ddx.var("y"))
    for eq in (text, model):
        value, gradient = eq.jacobian([3.0, 2.0])
        assert value == 18.0 and gradient.tolist() == [12.0, 9.0]


@pytest.mark.parametrize("name", ["a b", "1f", "x₁", "f-g", "", "sin", "exp"])
def test_user_function_names_the_text_cannot_spell_are_refused(name):
    assert not name.isidentifier() or name in ("sin", "exp")
    e = raised(lambda: ddx.function(name, 1, one, d_one))
    assert e.code is ddx.errc.user_function and "name" in str(e), str(e)


# ---------------------------------------------------------------------------------------
# 13. Symbol and parameter names.


@pytest.mark.parametrize("name", ["a b", "2x", "x₁", "x-y", "", "sin", "a.b"])
@pytest.mark.parametrize("make", [ddx.var, ddx.param])
def test_names_the_text_cannot_spell_are_refused(make, name):
    e = raised(lambda: make(name))
    assert e.code is ddx.errc.bad_name and repr(name)[1:-1] in str(e), str(e)


@pytest.mark.parametrize("name", ["α", "θ1", "T_K", "変数", "sinx"])
def test_unicode_names_are_symbols_and_print_back(name):
    eq = ddx.equation(lambda: ddx.var(name) * ddx.param("k"))
    assert eq.symbols == [name]
    text = str(eq).splitlines()[0].split(": ", 1)[1]  # "f0: α * k"
    again = ddx.equation(text, params=["k"])
    assert again.symbols == [name]
    assert again.with_params([2.0]).evaluate([3.0]) == eq.with_params([2.0]).evaluate([3.0])


# ---------------------------------------------------------------------------------------
# 4, 15. The formats `first` and `second` may answer in; an asymmetric `second`.


def mixed(a, b):
    return a * a * b


def mixed_first(a, b):
    return [2 * a * b, a * a]


def mixed_second_rows(a, b):
    return [[2 * b, 2 * a], [2 * a, 0.0]]


FIRSTS = {
    "list": mixed_first,
    "tuple": lambda a, b: tuple(mixed_first(a, b)),
    "numpy": lambda a, b: np.array(mixed_first(a, b)),
    "numpy float32": lambda a, b: np.array(mixed_first(a, b), dtype=np.float32),
    "generator": lambda a, b: (v for v in mixed_first(a, b)),
    "numpy scalars": lambda a, b: [np.float64(v) for v in mixed_first(a, b)],
    "ints": lambda a, b: [int(v) for v in mixed_first(a, b)],
}
SECONDS = {
    "nested lists": mixed_second_rows,
    "tuples": lambda a, b: tuple(tuple(r) for r in mixed_second_rows(a, b)),
    "numpy 2-D": lambda a, b: np.array(mixed_second_rows(a, b)),
    "flat list": lambda a, b: [v for r in mixed_second_rows(a, b) for v in r],
    "flat numpy": lambda a, b: np.array(mixed_second_rows(a, b)).ravel(),
    "generator of rows": lambda a, b: (iter(r) for r in mixed_second_rows(a, b)),
}


@pytest.mark.parametrize("first", FIRSTS)
@pytest.mark.parametrize("second", SECONDS)
def test_every_documented_format_is_read(first, second):
    f = ddx.function("mixed", 2, mixed, FIRSTS[first], SECONDS[second])
    eq = ddx.equation("mixed(x, y)", functions=[f])
    value, gradient, hessian = eq.hessian([3.0, 2.0])
    # a²b at (3, 2): closed forms.
    assert value == 18.0
    assert gradient.tolist() == [12.0, 9.0]
    assert hessian.tolist() == [[4.0, 6.0], [6.0, 0.0]]


@pytest.mark.parametrize(
    "value",
    [
        lambda a: a * a,
        lambda a: np.float64(a * a),
        lambda a: np.array(a * a),  # 0-d
        lambda a: int(a * a),
    ],
)
def test_value_formats_and_one_argument_partials(value):
    f = ddx.function("sq", 1, value, lambda a: 2 * a, lambda a: 2.0)
    g = ddx.function("sq", 1, value, lambda a: [2 * a], lambda a: [[2.0]])
    for fn in (f, g):
        eq = ddx.equation("sq(x)", functions=[fn])
        value, gradient, hessian = eq.hessian([3.0])
        assert value == 9.0 and gradient.tolist() == [6.0] and hessian.tolist() == [[2.0]]


@pytest.mark.parametrize(
    "role, answer, words",
    [
        ("value", [1.0], "not one number"),
        ("first", [[12.0, 9.0]], "not 2 numbers, flat"),
        ("first", [12.0], "1 number where 2 are needed"),
        ("second", [[4.0, 6.0, 6.0, 0.0]], "row of 4 numbers"),
        ("second", [[4.0, 6.0], [6.0, 0.0], [0.0, 0.0]], "3 rows where 2"),
        ("second", [4.0, [6.0, 6.0]], "mixed"),
        ("second", [4.0, 6.0, 6.0], "3 numbers where 4"),
        ("value", 10**400, "past the float64 range"),
        ("first", [10**400, 1], "past the float64 range"),
    ],
)
def test_other_formats_are_refused_not_flattened(role, answer, words):
    parts = {"value": mixed, "first": mixed_first, "second": mixed_second_rows}
    parts[role] = lambda a, b: answer
    f = ddx.function("shaped", 2, parts["value"], parts["first"], parts["second"])
    eq = ddx.equation("shaped(x, y)", functions=[f])
    e = raised(lambda: eq.hessian([3.0, 2.0]))
    assert e.code is ddx.errc.user_function
    assert "shaped" in str(e) and f"`{role}`" in str(e) and words in str(e), str(e)


def test_an_asymmetric_second_is_refused():
    f = ddx.function(
        "skew", 2, lambda a, b: a * b, lambda a, b: [b, a], lambda a, b: [[0, 1], [7, 0]]
    )
    eq = ddx.equation("skew(x, y)", functions=[f])
    for call in (
        lambda: eq.hessian([1.0, 2.0]),
        lambda: eq.hvp([1.0, 0.0], [1.0, 2.0]),
        lambda: eq.hessian(np.ones((2, 5))),
    ):
        e = raised(call)
        assert e.code is ddx.errc.user_function
        message = str(e)
        assert "skew" in message and "asymmetric" in message, message
        assert "(0, 1) is 1" in message and "(1, 0) is 7" in message, message
    # Value and first partials do not need `second`, and still answer.
    assert eq.jacobian([1.0, 2.0])[1].tolist() == [2.0, 1.0]


@pytest.mark.parametrize(
    "second, accepted",
    [
        ([[math.inf, 1.0], [-5.0, 0.0]], False),  # an infinity elsewhere widens nothing
        ([[0.0, math.inf], [1.0, 0.0]], False),  # an infinite entry against a finite one
        ([[0.0, math.inf], [math.inf, 0.0]], True),
        ([[0.0, -math.inf], [math.inf, 0.0]], False),
        ([[math.inf, 1.0], [1.0, 0.0]], True),
    ],
)
def test_infinite_entries_never_switch_the_symmetry_check_off(second, accepted):
    f = ddx.function("inf2", 2, lambda a, b: 0.0, lambda a, b: [0.0, 0.0], lambda a, b: second)
    eq = ddx.equation("inf2(x, y)", functions=[f])
    if accepted:
        assert eq.hessian([1.0, 2.0])[2].tolist() == [second[0], [second[0][1], second[1][1]]]
    else:
        assert raised(lambda: eq.hessian([1.0, 2.0])).code is ddx.errc.user_function


@pytest.mark.parametrize("ulps, accepted", [(0, True), (4, True), (16, True), (64, False)])
def test_symmetry_tolerance_is_sixteen_epsilon_of_the_largest_entry(ulps, accepted):
    big = 3.0  # the largest magnitude: the tolerance is 16·ε·3
    off = 1.0 + ulps * EPS * big
    f = ddx.function(
        "near",
        2,
        lambda a, b: 0.0,
        lambda a, b: [0.0, 0.0],
        lambda a, b: [[big, 1.0], [off, 0.0]],
    )
    eq = ddx.equation("near(x, y)", functions=[f])
    if accepted:
        # The upper triangle is what the Hessian holds.
        assert eq.hessian([1.0, 2.0])[2].tolist() == [[big, 1.0], [1.0, 0.0]]
    else:
        assert raised(lambda: eq.hessian([1.0, 2.0])).code is ddx.errc.user_function


def test_nan_partials_on_both_sides_are_symmetric():
    f = ddx.function(
        "undefined",
        2,
        lambda a, b: 0.0,
        lambda a, b: [0.0, 0.0],
        lambda a, b: [[0.0, math.nan], [math.nan, 0.0]],
    )
    h = ddx.equation("undefined(x, y)", functions=[f]).hessian([1.0, 2.0])[2]
    assert math.isnan(h[0, 1]) and math.isnan(h[1, 0])


# ---------------------------------------------------------------------------------------
# 6. Exceptions in user functions: chained; KeyboardInterrupt and SystemExit propagate.


@pytest.mark.parametrize("role", ["value", "first", "second"])
@pytest.mark.parametrize("batch", [False, True])
def test_the_python_exception_is_the_cause(role, batch):
    original = ValueError("outside the table")

    def fail(*_):
        raise original

    parts = {"value": mixed, "first": mixed_first, "second": mixed_second_rows}
    parts[role] = fail
    f = ddx.function("tabled", 2, parts["value"], parts["first"], parts["second"])
    eq = ddx.equation("tabled(x, y) + x", functions=[f])
    x = np.ones((2, 50)) if batch else [1.0, 2.0]
    e = raised(lambda: eq.hessian(x))
    assert e.code is ddx.errc.user_function and "tabled" in str(e)
    assert e.__cause__ is original
    assert e.__cause__.__traceback__ is not None  # the callback's frames are kept
    # The next call is a fresh one: it fails alike, and a good point after it answers.
    assert raised(lambda: eq.hessian(x)).__cause__ is original


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_keyboard_interrupt_and_system_exit_propagate(stop):
    calls = {"n": 0}

    def value(a):
        calls["n"] += 1
        if calls["n"] == 1:
            raise stop()
        return a * a

    f = ddx.function("stoppable", 1, value, lambda a: 2 * a)
    eq = ddx.equation("stoppable(x)", functions=[f])
    with pytest.raises(stop):
        eq.evaluate([3.0])
    assert eq.evaluate([3.0]) == 9.0  # nothing left behind
    calls["n"] = 0
    with pytest.raises(stop):
        eq.evaluate(np.ones((1, 40)))  # a batch, with the GIL released
    calls["n"] = 0
    with pytest.raises(stop):
        ddx.equation("stoppable(2.0) * x", functions=[f])  # folded while building


def test_a_chained_failure_from_another_thread_is_its_own():
    """Two threads fail at once with different exceptions: each gets its own."""

    def make(tag):
        def value(a):
            raise LookupError(tag)

        return ddx.function(f"fails_{tag}", 1, value, lambda a: 1.0)

    results = {}

    def run(tag):
        eq = ddx.equation(f"fails_{tag}(x)", functions=[make(tag)])
        for _ in range(50):
            try:
                eq.evaluate(np.ones((1, 20)))
            except ddx.Error as e:
                results.setdefault(tag, set()).add(str(e.__cause__))

    threads = [threading.Thread(target=run, args=(t,)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {"a": {"a"}, "b": {"b"}}


# ---------------------------------------------------------------------------------------
# 7. ddx.from_bytes, the inverse of Equation.to_bytes.


def test_from_bytes_round_trips():
    eq = ddx.equation(["a * exp(-b / T) + x * y", "sin(x) * y"], params=["T"])
    eq = eq.with_params({"T": 300.0})
    eq.options = eq.options.model_copy(update={"points": 3, "warm_points": 5})
    data = eq.to_bytes()
    points = np.random.default_rng(7).uniform(0.5, 2.0, size=(4, 64))
    for spelling in (data, bytearray(data), memoryview(data)):
        again = ddx.from_bytes(spelling)
        assert again.symbols == eq.symbols and again.parameters == eq.parameters
        assert again.options == eq.options
        for a, b in zip(again.hessian(points), eq.hessian(points)):
            assert a.tobytes() == b.tobytes()
        assert again.loaded and not eq.loaded
    # The same as unpickling.
    unpickled = pickle.loads(pickle.dumps(eq))
    for a, b in zip(unpickled.hessian(points), eq.hessian(points)):
        assert a.tobytes() == b.tobytes()


def test_from_bytes_refuses_hostile_bytes():
    data = ddx.equation("x * log(x) + exp(x * y)").to_bytes()
    codes = {ddx.errc.bad_archive, ddx.errc.archive_corrupt}
    for cut in sorted({0, 1, 7, 8, 16, len(data) // 2, len(data) - 1}):
        assert raised(lambda: ddx.from_bytes(data[:cut])).code in codes, cut
    rng = np.random.default_rng(5)
    for _ in range(40):
        damaged = bytearray(data)
        damaged[int(rng.integers(len(data)))] ^= 1 << int(rng.integers(8))
        assert raised(lambda: ddx.from_bytes(bytes(damaged))).code in codes
    assert raised(lambda: ddx.from_bytes(rng.bytes(4096))).code in codes
    with pytest.raises(TypeError):
        ddx.from_bytes("x * y")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------
# 8. Values that are not real numbers: wrong_dtype.


NOT_REAL = [
    np.array([1 + 1j, 2.0]),
    np.array(["a", "b"]),
    np.array([object(), object()]),
    None,
]


@pytest.mark.parametrize("x", NOT_REAL, ids=["complex", "str", "object", "None"])
def test_points_that_are_not_real_are_wrong_dtype(x):
    eq = ddx.equation("x * y")
    assert raised(lambda: eq.evaluate(x)).code is ddx.errc.wrong_dtype
    assert raised(lambda: eq.jvp(x, [1.0, 2.0])).code is ddx.errc.wrong_dtype


def test_batches_and_rows_that_are_not_real_are_wrong_dtype():
    eq = ddx.equation("x * y * T", params=["T"])
    assert raised(lambda: eq.evaluate(np.ones((3, 4), dtype=complex))).code is ddx.errc.wrong_dtype
    rows = [np.ones(4), np.ones(4, dtype=complex)]
    assert raised(lambda: eq.with_params([1.0]).evaluate(rows)).code is ddx.errc.wrong_dtype
    e = raised(lambda: eq.evaluate({"x": np.ones(4), "y": ["a"] * 4, "T": 1.0}))
    assert e.code is ddx.errc.wrong_dtype
    assert raised(lambda: eq.with_params(np.array([1j]))).code is ddx.errc.wrong_dtype
    # Real dtypes of every kind are read.
    for dtype in (np.float32, np.int16, np.uint8, bool):
        assert eq.with_params([2.0]).evaluate(np.ones((2, 3), dtype=dtype)).tolist() == [2.0] * 3


# ---------------------------------------------------------------------------------------
# 9. An integer literal past float64 in text: too_large, as a model constant.


@pytest.mark.parametrize(
    "n",
    [
        10**400,
        2**1024,
        2**1024 - 2**970,  # halfway: rounds to even, past the range
        2**1024 - 2**970 - 1,  # rounds to the largest float
        2**1023,
        10**308,
    ],
)
def test_integer_literals_agree_with_pythons_float(n):
    try:
        want = float(n)
    except OverflowError:
        want = None
    if want is None:
        e = raised(lambda: ddx.equation(f"x * {n}"))
        assert e.code is ddx.errc.too_large and "literal" in str(e), str(e)
        # The same number as a model constant is too_large as well.
        m = raised(lambda: ddx.equation(lambda: ddx.var("x") * n))
        assert m.code is ddx.errc.too_large
    else:
        assert ddx.equation(f"x * {n}").evaluate([1.0]) == want


def test_float_literals_past_the_range_are_infinity_as_in_python():
    assert ddx.equation("x * 1e400").evaluate([1.0]) == float("1e400") == math.inf
    assert ddx.equation("x * 1" + "0" * 400 + ".0").evaluate([1.0]) == math.inf


# ---------------------------------------------------------------------------------------
# 10, 11. with_params on some parameters; params= checks.


def test_with_params_rebinds_some_of_a_bound_equation():
    eq = ddx.equation("x * T + P", params=["T", "P"])
    bound = eq.with_params({"T": 5.0, "P": 1.0})
    again = bound.with_params({"T": 6.0})
    assert again.evaluate([2.0]) == 2.0 * 6.0 + 1.0
    assert bound.evaluate([2.0]) == 2.0 * 5.0 + 1.0  # the original is kept
    assert bound.with_params({"P": -1.0}).evaluate([2.0]) == 2.0 * 5.0 - 1.0
    e = raised(lambda: bound.with_params({"Q": 1.0}))
    assert e.code is ddx.errc.unknown_symbol and "parameter `Q`" in str(e), str(e)
    # Not bound yet: all at once, and the message says so.
    e = raised(lambda: eq.with_params({"T": 5.0}))
    assert e.code is ddx.errc.short_point
    assert "`P`" in str(e) and "every parameter at once" in str(e), str(e)
    # Positional values are all of them, bound or not.
    assert raised(lambda: bound.with_params([1.0])).code is ddx.errc.short_point


@pytest.mark.parametrize("system", [False, True])
def test_params_refuses_duplicates_and_unused_names(system):
    def make(params):
        text = ["x * T", "x + T"] if system else "x * T"
        return ddx.equation(text, params=params)

    e = raised(lambda: make(["T", "T"]))
    assert e.code is ddx.errc.duplicate_symbol and "`T` twice" in str(e), str(e)
    e = raised(lambda: make(["T", "Tt"]))
    assert e.code is ddx.errc.unknown_symbol and "`Tt`" in str(e), str(e)
    assert "did you mean `T`" in str(e), str(e)
    assert make(["T"]).parameters == ["T"]


# ---------------------------------------------------------------------------------------
# 12. answer_limit applies to a single point's value too.


def test_answer_limit_applies_to_every_call():
    scalar = ddx.equation("x * y").compile(answer_limit=0)
    system = ddx.equation(["x * y", "x + y"]).compile(answer_limit=1)
    for call in (
        lambda: scalar.evaluate([1.0, 2.0]),
        lambda: scalar([1.0, 2.0]),
        lambda: scalar.jacobian([1.0, 2.0]),
        lambda: system.evaluate([1.0, 2.0]),
        lambda: scalar.evaluate(np.ones((2, 1))),
    ):
        e = raised(call)
        assert e.code is ddx.errc.too_large and "answer_limit" in str(e), str(e)
    # The count agrees with its noun (tester29: "would answer 1 values").
    assert "would answer 1 value," in str(raised(lambda: scalar.evaluate([1.0, 2.0])))
    assert "would answer 2 values," in str(raised(lambda: system.evaluate([1.0, 2.0])))
    assert scalar.compile(answer_limit=1).evaluate([1.0, 2.0]) == 2.0
    assert system.compile(answer_limit=2).evaluate([1.0, 2.0]).tolist() == [2.0, 3.0]


def test_answer_limit_travels_with_the_saved_equation():
    # Bytes, pickles and files keep the limit (archive format 4): the copy refuses what the
    # original refuses, and answers what it answers.
    system = ddx.equation(["x * y", "x + y"]).compile(answer_limit=4)
    assert raised(lambda: system.hessian([1.0, 2.0])).code is ddx.errc.too_large
    for copy in (ddx.from_bytes(system.to_bytes()), pickle.loads(pickle.dumps(system))):
        e = raised(lambda: copy.hessian([1.0, 2.0]))
        assert e.code is ddx.errc.too_large and "answer_limit" in str(e), str(e)
        f, jac = copy.jacobian([1.0, 2.0])
        assert jac.tolist() == [[2.0, 1.0], [1.0, 1.0]] and f.tolist() == [2.0, 3.0]
