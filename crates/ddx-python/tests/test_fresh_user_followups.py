"""The fresh-user tester's second round of findings (all low severity), each kept as the
input that showed it and generalised to its kind: a ``bool`` or ``float`` where an int is
expected, counts and lists in messages agreeing with their nouns, ``ddx.from_bytes`` on
any buffer of bytes, names Python would not keep apart (keywords, invisible characters,
names not in NFKC form), numbers in messages written as ``repr`` writes them, and an
archive cut inside its header.

The truths are independent of ddx: Python's ``keyword``, ``unicodedata``,
``str.isidentifier`` and ``repr``, and the answers through another spelling."""

from __future__ import annotations

import keyword
import math
import re
import unicodedata

import numpy as np
import pytest

import ddx


def raised(f, kind=ddx.Error):
    with pytest.raises(kind) as e:
        f()
    return e.value


@pytest.fixture
def sine():
    return ddx.equation("sin(x)")


# ---------------------------------------------------------------------------------------
# A bool or a float where an int is expected; a bool where a real argument is.


@pytest.mark.parametrize("k", [True, False])
def test_a_bool_order_is_refused(sine, k):
    for name in ("univariate_derivative", "univariate_derivatives"):
        e = raised(lambda: getattr(sine, name)(k, 0.5), TypeError)
        assert f"Equation.{name}: k={k!r} is a bool; a derivative order is an int" in str(e), str(e)


def test_every_int_argument_refuses_bool_and_float(sine):
    for call, name in (
        (lambda v: sine.nodes(want=v), "Equation.nodes: want"),
        (lambda v: sine.wait_for_kernel(want=v), "Equation.wait_for_kernel: want"),
        (lambda v: sine.univariate_derivative(v, 0.5), "Equation.univariate_derivative: k"),
        (lambda v: sine.buffer([0.5], want=v), "Equation.buffer: want"),
    ):
        for v in (True, 2.0, "1"):
            e = raised(lambda: call(v), TypeError)
            kind = type(v).__name__
            assert f"{name}={v!r} is a {kind}; " in str(e) and " is an int from 0 to " in str(e), str(e)
    # Ints of every spelling are still ints: an IntEnum, a NumPy integer.
    assert sine.nodes(want=ddx.Want.HESSIAN) == sine.nodes(want=int(ddx.Want.HESSIAN))
    assert sine.univariate_derivative(np.int64(1), 0.5) == pytest.approx(math.cos(0.5), rel=1e-15)


def test_a_bool_x0_is_refused(sine):
    e = raised(lambda: sine.univariate_derivative(1, True), TypeError)
    assert "x0=True is a bool" in str(e) and "univariate_derivative" in str(e), str(e)
    assert sine.univariate_derivative(1, 1) == pytest.approx(math.cos(1.0), rel=1e-15)  # an int


@pytest.mark.parametrize("arity, kind", [(2.0, "float"), (True, "bool"), ("2", "str")])
def test_an_arity_that_is_no_int_names_the_argument(arity, kind):
    e = raised(lambda: ddx.function("g", arity, lambda a: a, lambda a: [1.0]), TypeError)
    assert f"ddx.function: arity={arity!r} is a {kind}" in str(e), str(e)
    assert "an argument count is an int from 1 to 256" in str(e), str(e)


@pytest.mark.parametrize("n, kind", [(2.0, "float"), (True, "bool"), ("2", "str"), (None, "NoneType")])
def test_a_powi_exponent_that_is_no_int_names_the_argument(n, kind):
    e = raised(lambda: ddx.powi(ddx.Expression(2.0), n), TypeError)
    assert f"ddx.powi: n={n!r} is a {kind}; the exponent is an int" in str(e), str(e)
    assert ddx.powi(ddx.Expression(2.0), np.int32(3)).constant == 8.0


# ---------------------------------------------------------------------------------------
# Counts and lists agree with their nouns.


def test_unbound_parameters_agree_in_number():
    two = ddx.equation("x * a + b", params=["a", "b"])
    m = str(raised(lambda: two.evaluate([1.0, 2.0, 3.0])))
    assert "parameters (a, b) are not bound: bind them with" in m, m
    assert "is not bound" not in m and "give them per point" in m, m
    one = ddx.equation("x * a", params=["a"])
    m = str(raised(lambda: one.evaluate([1.0, 2.0])))
    assert "parameter (a) is not bound: bind it with" in m and "give it per point" in m, m
    m = str(raised(lambda: two.with_params([1.0, 2.0]).evaluate({"x": 1.0, "a": 2.0})))
    assert "take their bound values" in m, m


def test_user_function_counts_agree_in_number():
    g = ddx.function("g", 2, lambda a, b: a * b, lambda a, b: [b, a])
    e = raised(lambda: ddx.equation(lambda: g(ddx.var("x"))))
    assert "called with 1 argument" in str(e) and "1 arguments" not in str(e), str(e)
    # `first` of a function of one argument answering two numbers.
    h = ddx.function("h", 1, lambda a: a, lambda a: [1.0, 2.0])
    e = raised(lambda: ddx.equation("h(x)", functions=[h]).jacobian([1.0]))
    m = str(e)
    assert "returned 2 numbers where 1 is needed (1 number, flat)" in m, m


NOUN_AFTER_ONE = r"\b1 (value|symbol|argument|number|row|output|point|parameter|byte)s\b"


def test_no_message_says_one_plural():
    """Messages with a count of one, from every layer: none says ``1 <noun>s``."""
    one = ddx.equation("2 * x")
    messages = [
        raised(lambda: one.evaluate(np.ones((2, 3)))),
        raised(lambda: one.hvp([1.0], [1.0, 2.0])),
        raised(lambda: ddx.equation("pow(x)")),
        raised(lambda: ddx.equation("sin(x, y)")),
    ]
    for e in messages:
        assert not re.search(NOUN_AFTER_ONE, str(e)), str(e)


# ---------------------------------------------------------------------------------------
# ddx.from_bytes takes any buffer of bytes.


def test_from_bytes_takes_every_buffer_of_bytes():
    eq = ddx.equation("x * exp(y)")
    data = eq.to_bytes()
    want = eq.hessian([0.5, 2.0])[2].tobytes()
    u8 = np.frombuffer(data, dtype=np.uint8)
    for spelling in (data, bytearray(data), memoryview(data), u8, u8.view(np.int8), u8.copy()):
        got = ddx.from_bytes(spelling).hessian([0.5, 2.0])[2]
        assert got.tobytes() == want


def test_from_bytes_refuses_other_buffers_by_code():
    data = ddx.equation("x * exp(y)").to_bytes()
    u8 = np.frombuffer(data, dtype=np.uint8)
    for other in (np.zeros(8), np.zeros(64, dtype=bool), np.zeros(64, dtype=np.int16)):
        e = raised(lambda: ddx.from_bytes(other))
        assert e.code is ddx.errc.wrong_dtype and "one byte" in str(e), str(e)
    doubled = np.repeat(u8, 2)[::2]  # the bytes, strided
    e = raised(lambda: ddx.from_bytes(doubled))
    assert e.code is ddx.errc.wrong_dtype and "not C-contiguous" in str(e), str(e)
    e = raised(lambda: ddx.from_bytes(u8[: len(u8) // 2 * 2].reshape(2, -1)))
    assert e.code is ddx.errc.wrong_dtype and "of shape (2," in str(e), str(e)
    for no_buffer in ("x * y", 3, None):
        assert "ddx.from_bytes takes bytes" in str(raised(lambda: ddx.from_bytes(no_buffer), TypeError))


def test_a_cut_inside_the_header_is_truncated():
    data = ddx.equation("x * exp(y)").to_bytes()
    assert raised(lambda: ddx.from_bytes(b"")).code is ddx.errc.bad_archive
    for n in range(1, 52):
        e = raised(lambda: ddx.from_bytes(data[:n]))
        assert e.code is ddx.errc.archive_corrupt and "truncated" in str(e), (n, str(e))
        assert "no ddx magic" not in str(e), (n, str(e))


# ---------------------------------------------------------------------------------------
# Names Python would not keep apart.


def name_refused(name):
    return raised(lambda: ddx.var(name)).code is ddx.errc.bad_name


@pytest.mark.parametrize("word", keyword.kwlist)
def test_keywords_are_no_names(word):
    for make in (ddx.var, ddx.param):
        e = raised(lambda: make(word))
        assert e.code is ddx.errc.bad_name and "keyword" in str(e), str(e)
    e = raised(lambda: ddx.function(word, 1, lambda a: a, lambda a: [1.0]))
    assert e.code is ddx.errc.user_function, str(e)
    e = raised(lambda: ddx.equation(f"2 * {word} + x"))
    assert e.code is ddx.errc.bad_syntax and "keyword" in str(e), str(e)


def test_soft_keywords_stay_names():
    for word in keyword.softkwlist:
        if word.isidentifier():
            assert ddx.equation(f"2 * {word}").symbols == [word]


def test_names_python_normalises_are_refused():
    """Every identifier ``"a" + c`` (``c`` in the BMP) that NFKC changes is refused, so no
    two names of ddx are one identifier to Python; and every one holding a format
    character (category Cf: invisible) is refused."""
    checked = 0
    for cp in range(0x80, 0x10000):
        c = chr(cp)
        name = "a" + c
        if not name.isidentifier():
            continue
        if unicodedata.normalize("NFKC", name) != name or unicodedata.category(c) == "Cf":
            assert name_refused(name), f"U+{cp:04X}"
            checked += 1
    assert checked > 500, checked
    e = raised(lambda: ddx.equation("fi + \ufb01"))
    assert e.code is ddx.errc.bad_syntax and "Python reads it as `fi`" in str(e), str(e)
    e = raised(lambda: ddx.var("x\u200d"))
    assert e.code is ddx.errc.bad_name and "invisible" in str(e), str(e)
    e = raised(lambda: ddx.equation("x\u200d * 2"))
    assert e.code is ddx.errc.bad_syntax and "invisible" in str(e), str(e)
    # NFKC names are names, Unicode letters included.
    for good in ("fi", "x", "\u03a9", "\u00e9", "θ1", "変数"):
        assert ddx.equation(f"2 * {good}").symbols == [good]


# ---------------------------------------------------------------------------------------
# Numbers in messages as repr writes them.


def test_asymmetry_message_writes_numbers_as_repr():
    big = 1e308
    f = ddx.function(
        "huge", 2, lambda a, b: a * b, lambda a, b: [b, a], lambda a, b: [[0.0, big], [-big, 0.0]]
    )
    m = str(raised(lambda: ddx.equation("huge(x, y)", functions=[f]).hessian([1.0, 2.0])))
    assert f"(0, 1) is {big!r} and (1, 0) is {-big!r}" in m, m
    assert not re.search(r"\d{20}", m), m


def test_from_bytes_messages_count_bytes_and_their_hint_works():
    eq = ddx.equation("x*y + 1")
    data = eq.to_bytes()
    # One-byte items that are not bytes: "1 byte each", in the singular.
    flags = np.zeros(8, dtype=bool)
    with pytest.raises(ddx.Error, match=r"format '\?', 1 byte each"):
        ddx.from_bytes(flags)
    with pytest.raises(ddx.Error, match=r"format 'd', 8 bytes each"):
        ddx.from_bytes(np.zeros(2))
    # A strided view is refused, and the copy the message names is read.
    doubled = np.frombuffer(bytes(b for b in data for _ in range(2)), dtype=np.uint8)
    strided = memoryview(doubled)[::2]
    with pytest.raises(ddx.Error, match=r"memoryview\(a\)\.tobytes\(\)"):
        ddx.from_bytes(strided)
    again = ddx.from_bytes(memoryview(strided).tobytes())
    assert again.evaluate([2.0, 3.0]) == eq.evaluate([2.0, 3.0])
