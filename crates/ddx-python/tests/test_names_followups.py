"""The fresh-user tester's third round of findings on names and strings (tester28, all
low severity), each kept as the input that showed it and generalised to its kind:

- a message never carries an invisible or control character (zero-width joiner, bidi
  controls, Hangul fillers, variation selectors, NUL, ESC, newline): every name or string
  it quotes is escaped by one helper (``ddx_ir::text::quoted``);
- every name that enters from Python (``ddx.var``/``ddx.param``, ``params=``, the keys of
  points, parameter values and columns, user-function names) follows one rule, so a bad
  name is ``bad_name`` wherever it is given, not ``unknown_symbol``;
- a ``str`` with a lone surrogate is a ``ddx.Error`` with the argument's code
  (``bad_name``, ``bad_syntax``), never ``UnicodeEncodeError``;
- ``x0`` given a ``str``, ``None``, a ``complex`` or an array names the call, the
  argument and what is expected;
- an equation saved from Rust with a name Python could not write is refused on loading
  (``bad_name``);
- the name rule agrees with the running Python's ``str.isidentifier()`` (whose Unicode
  tables may be older than ddx's).

The truths are Python's own: ``str.isidentifier``, ``unicodedata``, ``str.isprintable``."""

from __future__ import annotations

import pathlib
import pickle
import unicodedata

import numpy as np
import pytest

import ddx


def raised(f, kind=ddx.Error):
    with pytest.raises(kind) as e:
        f()
    return e.value


#: Names of every kind of fault that shows as nothing or moves the cursor.
UNSEEN = [
    "x\u200d",  # zero-width joiner
    "x\u200b",  # zero-width space
    "x\u202e",  # right-to-left override (bidi)
    "x\u2066y",  # left-to-right isolate (bidi)
    "x\u3164",  # Hangul filler (a letter, default-ignorable)
    "x\u115f",  # Hangul choseong filler
    "x\ufe0f",  # variation selector
    "x\u034f",  # combining grapheme joiner
    "x\x00",  # NUL
    "x\x1b[31m",  # ESC
    "x\ny",  # newline
    "x\x7f",  # DEL
]


def shows_everything(message: str) -> bool:
    """Whether every character of ``message`` draws as itself: no control (Cc), format
    (Cf) or default-ignorable character (the Hangul fillers, variation selectors and the
    combining grapheme joiner are letters or marks to ``unicodedata`` but draw nothing)."""
    hidden = {0x115F, 0x1160, 0x3164, 0xFFA0, 0x034F, 0x17B4, 0x17B5}
    hidden |= set(range(0xFE00, 0xFE10)) | set(range(0x180B, 0x1810))
    return not any(
        unicodedata.category(c) in ("Cc", "Cf") and c != "\n" or ord(c) in hidden
        for c in message
    )


def no_unseen_in_quotes(message: str) -> bool:
    # Messages may hold newlines of their own (a caret line); a quoted name may not.
    lines = message.split("\n")
    return all(shows_everything(line) for line in lines)


@pytest.mark.parametrize("name", UNSEEN)
def test_messages_quote_names_visibly(name):
    """Each entry point a name reaches gives a message with the name escaped."""
    eq = ddx.equation("x * y")
    bound = ddx.equation("x * T", params=["T"])
    calls = [
        lambda: ddx.var(name),
        lambda: ddx.param(name),
        lambda: ddx.equation("x * y", params=[name]),
        lambda: ddx.equation(["x", "y"], params=[name]),
        lambda: eq.evaluate({"x": 1.0, name: 2.0}),
        lambda: eq.evaluate({"x": np.ones(2), name: np.ones(2)}),
        lambda: bound.with_params({name: 1.0}),
        lambda: ddx.function(name, 1, lambda a: a, lambda a: [1.0]),
    ]
    for call in calls:
        e = raised(call)
        text = str(e)
        assert no_unseen_in_quotes(text), ascii(text)
        assert name not in text, ascii(text)
        # The name is shown escaped: its visible part and an escape for the rest.
        assert "`x\\" in text, ascii(text)
    # A text holding it: the name is quoted escaped, the line shows it as U+FFFD.
    text = str(raised(lambda: ddx.equation(f"2 * {name}")))
    assert no_unseen_in_quotes(text) and name not in text, ascii(text)


# ---------------------------------------------------------------------------------------
# One name rule wherever a name enters from Python.

#: Strings that are no name, each for another rule: not NFKC, invisible, not an
#: identifier, a keyword, a built-in's name.
NOT_NAMES = ["\ufb01", "x\u200d", "\uff58", "a b", "1x", "lambda", "sin", ""]


@pytest.mark.parametrize("name", NOT_NAMES)
def test_every_name_from_python_follows_the_rule(name):
    eq = ddx.equation("x * y")
    bound = ddx.equation("x * T", params=["T"])
    for call in (
        lambda: ddx.var(name),
        lambda: ddx.param(name),
        lambda: ddx.equation("x * y", params=[name]),
        lambda: ddx.equation(["x", "y"], params=[name]),
        lambda: eq.evaluate({"x": 1.0, "y": 2.0, name: 2.0}),
        lambda: eq.jacobian({"x": np.ones(3), "y": np.ones(3), name: np.ones(3)}),
        lambda: bound.with_params({name: 1.0}),
        lambda: bound.evaluate({"x": 1.0, name: 1.0}),
    ):
        e = raised(call)
        assert e.code is ddx.errc.bad_name, (ascii(name), str(e))
    e = raised(lambda: ddx.function(name, 1, lambda a: a, lambda a: [1.0]))
    assert e.code is ddx.errc.user_function, str(e)


def test_unknown_names_stay_unknown():
    """A name by the rule that the equation lacks is still ``unknown_symbol``, with the
    nearest name."""
    eq = ddx.equation("x * alpha")
    e = raised(lambda: eq.evaluate({"x": 1.0, "alpah": 2.0}))
    assert e.code is ddx.errc.unknown_symbol and "did you mean `alpha`" in str(e), str(e)
    e = raised(lambda: ddx.equation("x * alpha", params=["alpah"]))
    assert e.code is ddx.errc.unknown_symbol and "did you mean `alpha`" in str(e), str(e)


# ---------------------------------------------------------------------------------------
# Lone surrogates.

SURROGATE = "a\ud800"


def test_a_lone_surrogate_is_a_ddx_error():
    eq = ddx.equation("x * y")
    bound = ddx.equation("x * T", params=["T"])
    cases = [
        (lambda: ddx.var(SURROGATE), ddx.errc.bad_name),
        (lambda: ddx.param(SURROGATE), ddx.errc.bad_name),
        (lambda: ddx.function(SURROGATE, 1, lambda a: a, lambda a: [1.0]), ddx.errc.bad_name),
        (lambda: ddx.equation("x * y", params=[SURROGATE]), ddx.errc.bad_name),
        (lambda: ddx.equation(["x", "y"], params=[SURROGATE]), ddx.errc.bad_name),
        (lambda: eq.evaluate({"x": 1.0, SURROGATE: 2.0}), ddx.errc.bad_name),
        (lambda: eq.evaluate({"x": np.ones(2), SURROGATE: np.ones(2)}), ddx.errc.bad_name),
        (lambda: bound.with_params({SURROGATE: 1.0}), ddx.errc.bad_name),
        (lambda: ddx.equation(f"2 * {SURROGATE}"), ddx.errc.bad_syntax),
        (lambda: ddx.equation(["x", f"2 * {SURROGATE}"]), ddx.errc.bad_syntax),
    ]
    for call, code in cases:
        e = raised(call)
        assert e.code is code, str(e)
        assert "lone surrogate" in str(e) and "\\ud800" in str(e), str(e)
        str(e).encode("utf-8")  # the message itself is a proper str


def test_a_lone_surrogate_in_a_path_or_an_option_is_refused(tmp_path):
    eq = ddx.equation("x * y")
    bad = str(tmp_path / "a\ud800.ddx")
    for call in (
        lambda: ddx.load(bad),
        lambda: ddx.verify(bad),
        lambda: eq.save(bad),
        lambda: eq.verify(bad),
        lambda: ddx.load(pathlib.Path(bad)),
    ):
        e = raised(call)
        assert e.code is ddx.errc.archive_io and "lone surrogate" in str(e), str(e)
    for field in ("device", "cache_dir"):
        for value in (bad, pathlib.Path(bad)) if field == "cache_dir" else (bad,):
            e = raised(lambda: ddx.Options(**{field: value}), ValueError)
            assert "lone surrogate" in str(e), str(e)
            e = raised(lambda: eq.compile(**{field: value}), ValueError)
            assert "lone surrogate" in str(e), str(e)


# ---------------------------------------------------------------------------------------
# x0 of another type.


@pytest.mark.parametrize(
    "x0, kind", [("0.5", "a str"), (None, "a NoneType"), (1 + 2j, "a complex"), (True, "a bool")]
)
def test_x0_of_another_type_names_the_argument(x0, kind):
    eq = ddx.equation("sin(x)")
    for method in ("univariate_derivative", "univariate_derivatives"):
        e = raised(lambda: getattr(eq, method)(3, x0), TypeError)
        text = str(e)
        assert text.startswith(f"Equation.{method}: x0={x0!r} is {kind}"), text
        assert "a real number (a float or an int) is expected" in text, text


def test_x0_as_an_array_names_the_argument():
    eq = ddx.equation("sin(x)")
    e = raised(lambda: eq.univariate_derivatives(3, np.array([0.5, 1.0])), TypeError)
    assert "Equation.univariate_derivatives: x0=" in str(e), str(e)
    assert "is a ndarray" in str(e) or "is an ndarray" in str(e), str(e)
    # Numbers of every kind are read as before.
    for x0 in (0.5, 1, np.float64(0.5), np.float32(0.5), np.int64(1)):
        assert eq.univariate_derivative(1, x0) == pytest.approx(np.cos(float(x0)))


# ---------------------------------------------------------------------------------------
# Names of an equation saved from Rust.

#: `ddx::rt::equation(|| rt::var("a b") * 2.0)?.to_bytes()?`, written by the Rust library
#: (whose `rt::var` takes any non-empty name) at format version 4.
RUST_SAVED = bytes.fromhex(
    "8944445845514e0a04000000fa000000000000000ecfa5a6ca01449c71088674de193a8fca3fed25"
    "71c16c2b27d3ecc6e49144f10964647820302e312e300129036e65670373696e03636f730374616e"
    "03657870036c6f67056c6f6731300473717274046362727403616273047369676e046173696e0461"
    "636f73046174616e0473696e6804636f73680474616e68056173696e680561636f7368056174616e"
    "68036572660361646403737562036d756c0364697603706f77056174616e32056879706f74036d61"
    "78036d696e026c74026c65026571026e650673656c65637403666d61056c6f673170056578706d31"
    "046c6f673205726563697004706f7769010361206200010003010000000000000000004004170201"
    "01020000010000010080800480804001008080808001"
)


def test_an_equation_saved_from_rust_with_a_bad_name_is_refused(tmp_path):
    e = raised(lambda: ddx.from_bytes(RUST_SAVED))
    assert e.code is ddx.errc.bad_name and "`a b`" in str(e), str(e)
    assert "loads" in str(e), str(e)
    path = tmp_path / "rust.ddx"
    path.write_bytes(RUST_SAVED)
    e = raised(lambda: ddx.load(path))
    assert e.code is ddx.errc.bad_name, str(e)
    ok = ddx.equation("2 * a_b")
    assert ddx.from_bytes(ok.to_bytes()).symbols == ["a_b"]
    assert pickle.loads(pickle.dumps(ok)).symbols == ["a_b"]


# ---------------------------------------------------------------------------------------
# Unicode tables newer than the running Python's.

#: Characters that became XID_Continue after Unicode 14 (Python 3.11), with the version:
#: KATAKANA MIDDLE DOT (15.1), KAWI LETTER A (15.0).
NEWER = [("\u30fb", (15, 1, 0)), ("\U00011f04", (15, 0, 0))]


@pytest.mark.parametrize("c, since", NEWER)
def test_names_agree_with_this_pythons_isidentifier(c, since):
    name = "x" + c
    ours = tuple(int(p) for p in unicodedata.unidata_version.split("."))
    if ours >= since:
        pytest.skip(f"this Python has Unicode {unicodedata.unidata_version}")
    assert not name.isidentifier()
    for make in (ddx.var, ddx.param):
        e = raised(lambda: make(name))
        assert e.code is ddx.errc.bad_name and "isidentifier" in str(e), str(e)
    e = raised(lambda: ddx.equation("x * y", params=[name]))
    assert e.code is ddx.errc.bad_name, str(e)
    e = raised(lambda: ddx.function(name, 1, lambda a: a, lambda a: [1.0]))
    assert e.code is ddx.errc.user_function, str(e)


def test_every_name_ddx_takes_is_a_python_identifier():
    """Over the BMP: ``"x" + c`` is taken by ``ddx.var`` only when this Python says it
    is an identifier."""
    for cp in range(0x80, 0x10000):
        if 0xD800 <= cp < 0xE000:
            continue
        name = "x" + chr(cp)
        try:
            ddx.var(name)
        except ddx.Error:
            continue
        assert name.isidentifier(), f"U+{cp:04X}"


# tester29's findings, each generalised to its kind.


@pytest.mark.parametrize("c, since", NEWER)
def test_a_text_cannot_use_a_name_this_python_cannot_write(c, since):
    """The text's grammar (Unicode 16 tables) takes ``x・``; Python 3.11 does not: a text
    using it is refused when built (``bad_syntax``, as for any non-name in a text), so no
    equation the package holds fails to load back."""
    name = "x" + c
    ours = tuple(int(p) for p in unicodedata.unidata_version.split("."))
    if ours >= since:
        pytest.skip(f"this Python has Unicode {unicodedata.unidata_version}")
    for build in (lambda: ddx.equation(f"{name} + 1"), lambda: ddx.equation([f"{name} * 2", "1"])):
        e = raised(build)
        assert e.code is ddx.errc.bad_syntax and "isidentifier" in str(e), str(e)


@pytest.mark.parametrize("unseen", ["\x1b[31m", "\u202e", "\x07", "\u200d"])
def test_archive_messages_show_the_path_escaped(tmp_path, unseen):
    path = tmp_path / f"no{unseen}file"
    for call in (lambda: ddx.load(path), lambda: ddx.verify(path)):
        e = raised(call)
        assert e.code is ddx.errc.archive_io, str(e)
        assert shows_everything(str(e)) and "file" in str(e), repr(str(e))
    eq = ddx.equation("x * y")
    e = raised(lambda: eq.save(tmp_path / f"missing{unseen}dir" / "eq.ddx"))
    assert shows_everything(str(e)), repr(str(e))


@pytest.mark.parametrize("unseen", ["\x1b[31m", "\u202e", "\x00"])
def test_a_user_functions_message_is_shown_escaped(unseen):
    def fails(a):
        raise RuntimeError(f"bad{unseen}input\non two lines")

    f = ddx.function("f", 1, fails, lambda a: [1.0])
    eq = ddx.equation("f(x) + y", functions=[f])
    e = raised(lambda: eq.evaluate([1.0, 2.0]))
    assert e.code is ddx.errc.user_function, str(e)
    message = str(e)
    assert no_unseen_in_quotes(message) and "on two lines" in message, repr(message)


def test_the_univariate_message_names_no_other_method():
    eq = ddx.equation(["x * y", "x"])
    for call in (
        lambda: eq.univariate_derivative(2, 1.0),
        lambda: eq.univariate_derivatives(2, 1.0),
    ):
        e = raised(call)
        assert e.code is ddx.errc.not_univariate and "univariate derivative" in str(e), str(e)


def test_a_dict_direction_of_columns_names_the_direction():
    eq = ddx.equation("x * y")
    e = raised(lambda: eq.jvp({"x": np.ones(3), "y": np.ones(3)}, [1.0, 2.0]), TypeError)
    assert "the direction" in str(e), str(e)
