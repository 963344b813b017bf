"""ddx: automatic differentiation over a runtime expression graph.

Build a function of named symbols while the program runs (a Python callable, or a text
string) and ask it for values, gradients, Jacobians, Hessians and the products ``J·v``,
``wᵀ·J``, ``H·v``: at one point, or for a batch of millions of points in one call.

>>> import ddx
>>> f = ddx.equation("exp(x) * sin(y)")
>>> value, gradient = f.jacobian([0.0, 0.0])
>>> value, list(gradient)
(0.0, [0.0, 1.0])
"""

from __future__ import annotations

import os

from collections.abc import Callable, Sequence
from typing import Any, overload

from ddx import _ddx
from ddx._ddx import (
    Call,
    DeviceColumns,
    Equation,
    Expression,
    Function,
    abs,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    cbrt,
    cos,
    cosh,
    erf,
    exp,
    function,
    expm1,
    hypot,
    ln,
    log,
    log10,
    log1p,
    log2,
    max,
    min,
    pow,
    powi,
    recip,
    select,
    sign,
    sin,
    sinh,
    sqrt,
    tan,
    tanh,
    param,
    var,
)
from ddx._errors import Error, errc
from ddx._options import Backend, Codegen, Options, OptLevel, Want

__version__: str = _ddx.__version__
"""This build's version (``ddx::VERSION``: the workspace ``Cargo.toml``'s, stated once)."""
version_info: tuple[int, int, int] = _ddx.version_info
"""``__version__`` as numbers: ``(major, minor, patch)``."""
has_jit: bool = _ddx.has_jit
"""Whether this copy was built with the Cranelift JIT (otherwise calls interpret)."""
has_opencl: bool = _ddx.has_opencl
"""Whether this copy was built with the OpenCL device backend."""
MAX_ORDER: int = _ddx.MAX_ORDER
"""The highest order ``univariate_derivative`` computes (170: 171! overflows float64)."""

Model = Callable[[], "Expression | float | tuple[Expression | float, ...]"]


@overload
def equation(
    model: Model | str | Sequence[str],
    /,
    *,
    cache: str | os.PathLike[str] | None = None,
    params: Sequence[str] = (),
    functions: Sequence[Function] = (),
    remember: bool = False,
) -> Equation: ...
@overload
def equation(
    model: None = None,
    /,
    *,
    cache: str | os.PathLike[str] | None = None,
    params: Sequence[str] = (),
    functions: Sequence[Function] = (),
    remember: bool = False,
) -> Callable[[Model], Equation]: ...


def equation(
    model: Model | str | Sequence[str] | None = None,
    /,
    *,
    cache: str | os.PathLike[str] | None = None,
    params: Sequence[str] = (),
    functions: Sequence[Function] = (),
    remember: bool = False,
) -> Equation | Callable[[Model], Equation]:
    """The equation of ``model``: a callable of no arguments that names symbols with
    :func:`var` and returns one :class:`Expression` (a scalar function) or a tuple of them
    (a system); or a text such as ``"exp(x) * sin(y)"``; or a list of texts (a system).

    Usable as a decorator, bare (``@ddx.equation``) or called (``@ddx.equation()``). The
    callable runs once, now; an exception it raises propagates unchanged. Raises
    :class:`Error` when it builds no equation (``errc.no_graph`` for a literal,
    ``errc.no_arena`` or ``errc.sealed_arena`` for expressions from outside the model,
    ``errc.bad_syntax`` … for text).

    With ``cache=path`` the file is a cache of the equation: the model runs (or the text
    is read) every time, and when the file holds this very equation (same symbols, same
    graph) it is loaded with every lane and kernel it holds (``loaded`` is True);
    otherwise the equation is built, its value and Jacobian lanes prepared, and saved to
    ``path``. A file that cannot be read is rebuilt, never an error; one that cannot be
    written raises ``errc.archive_io``.

    With ``params=[...]`` (text only) those names are parameters: inputs never
    differentiated, bound with :meth:`Equation.with_params`, or given per point in a
    batch as rows after the symbol rows (shape ``(n + q, points)``, or a dict of columns
    by name; a row of length 1 is broadcast). A string that is no name (the rule of
    :func:`var`) is ``errc.bad_name``, a name listed twice ``errc.duplicate_symbol``, one
    the text does not use ``errc.unknown_symbol``. A model
    callable names its parameters with :func:`param` instead.

    An integer literal in a text past the float64 range is ``errc.too_large`` (as the
    same ``int`` in a model is, and as Python's ``float()`` refuses it); a float literal
    past it (``1e400``) is infinity, as in Python.

    With ``functions=[f, ...]`` (text only) a call in the text may name one of those user
    functions (:func:`function`) by its name, ``"f(x) * y"``; a built-in function's name is
    always the built-in's. A model callable calls its functions directly, ``f(x, y)``.

    With ``remember=True`` the equation keeps its last call of each kind (the last-call
    cache): asked again at the same point (the same bits) it answers with no sweep, and
    with some symbols moved it re-sweeps only what they reach; the numbers are the ones a
    full sweep gives, bit for bit. Single points only, never batches; a lane a compiled
    kernel answers serves a repeat and computes a moved point whole. ``cache_stats()``
    says what it did.
    """
    if model is None:
        return lambda m: equation(
            m, cache=cache, params=params, functions=functions, remember=remember
        )
    if remember:
        built = equation(model, cache=cache, params=params, functions=functions)
        built._set_remember(True)
        return built
    if cache is not None:
        return _cached(equation(model, params=params, functions=functions), os.fspath(cache))
    if isinstance(params, str) or not all(isinstance(p, str) for p in params):
        raise TypeError("params is a list of parameter names")
    if not all(isinstance(f, Function) for f in functions):
        raise TypeError("functions is a list of ddx.Function (made by ddx.function)")
    if isinstance(model, str):
        return _ddx.equation_text(model, list(params), list(functions))
    if isinstance(model, (list, tuple)):
        if not all(isinstance(t, str) for t in model):
            raise TypeError("a system written down is a list of strings")
        return _ddx.system_text(list(model), list(params), list(functions))
    if params:
        raise TypeError("a model callable names its parameters with ddx.param")
    if functions:
        raise TypeError("a model callable calls its user functions directly: f(x, y)")
    if callable(model):
        return _ddx.equation_model(model)
    raise TypeError(
        f"ddx.equation takes a callable, a string or a list of strings, not {type(model).__name__}"
    )


def _cached(built: Equation, path: str) -> Equation:
    try:
        built.verify(path)
        return _ddx.load(path)
    except Error:
        built.nodes(want=Want.VALUE)  # prepares the lanes a first call needs
        built.nodes(want=Want.JACOBIAN)
        built.save(path)
        return built


def load(path: str | os.PathLike[str]) -> Equation:
    """The equation saved at ``path`` (by :meth:`Equation.save`, from Python or Rust): no
    model runs and nothing is rebuilt; a kernel saved for this host and build answers at
    once. Raises :class:`Error`: ``archive_io`` (unreadable), ``bad_archive`` (not a ddx
    file, or a format this build does not read), ``archive_corrupt`` (checksum or
    structure), ``bad_name`` (a name Python could not write, as :func:`var` refuses it,
    which the Rust library's ``rt::var`` takes)."""
    return _ddx.load(os.fspath(path))


def from_bytes(data: bytes | bytearray | memoryview | Any, /) -> Equation:
    """The equation ``data`` holds, as :meth:`Equation.to_bytes` made it (in this process
    or another, by this build or another that reads the format): the inverse of
    ``to_bytes``, and what unpickling an equation does. No model runs and nothing is
    rebuilt; a kernel the bytes hold for this host and build answers at once, and the
    bound parameter values and options come back with it.

    ``data`` is any object of the buffer protocol holding bytes: ``bytes``, ``bytearray``,
    ``memoryview``, a 1-D C-contiguous NumPy array of dtype ``uint8`` or ``int8`` (a file
    read with ``np.fromfile``, a shared-memory block), its items one byte each (formats
    ``B``, ``b``, ``c``). Raises :class:`Error`: ``wrong_dtype`` for a buffer of other
    items (``float64``, ``bool``, ``int16``) or not 1-D and C-contiguous (say which);
    ``bad_archive`` (not a ddx archive, or a format this build does not read),
    ``archive_corrupt`` (damaged or truncated bytes), ``bad_name`` (as :func:`load`); ``TypeError`` for an object that
    is no buffer (a ``str``)."""
    try:
        view = memoryview(data)
    except TypeError:
        raise TypeError(
            f"ddx.from_bytes takes bytes (or any buffer of bytes: bytearray, memoryview, a "
            f"1-D NumPy uint8 array), not {type(data).__name__}"
        ) from None
    with view:
        if view.itemsize != 1 or view.format not in ("B", "b", "c"):
            raise Error(
                f"wrong_dtype: ddx.from_bytes reads a buffer of bytes (items of one byte: "
                f"bytes, bytearray, NumPy uint8 or int8); this {type(data).__name__} holds "
                f"items of format {view.format!r}, {view.itemsize} "
                f"{'byte' if view.itemsize == 1 else 'bytes'} each",
                errc.wrong_dtype,
            )
        if view.ndim != 1 or not view.c_contiguous:
            why = f"of shape {view.shape}" if view.ndim != 1 else "not C-contiguous"
            raise Error(
                f"wrong_dtype: ddx.from_bytes reads a 1-D C-contiguous buffer of bytes; this "
                f"{type(data).__name__} is {why} (memoryview(a).tobytes() copies it into one)",
                errc.wrong_dtype,
            )
        return _ddx.from_bytes(view.tobytes())


def verify(path: str | os.PathLike[str]) -> None:
    """Raises :class:`Error` unless this build can read the equation file at ``path`` (see
    :func:`load` for the codes); :meth:`Equation.verify` also asks that it be *that*
    equation (``archive_mismatch``)."""
    _ddx.verify_file(os.fspath(path))


__all__ = [
    "Backend",
    "Call",
    "Codegen",
    "DeviceColumns",
    "Equation",
    "Error",
    "Expression",
    "Function",
    "MAX_ORDER",
    "OptLevel",
    "Options",
    "Want",
    "__version__",
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "cos",
    "cosh",
    "equation",
    "erf",
    "errc",
    "exp",
    "function",
    "expm1",
    "from_bytes",
    "has_jit",
    "has_opencl",
    "hypot",
    "load",
    "ln",
    "log",
    "log10",
    "log1p",
    "log2",
    "max",
    "min",
    "pow",
    "powi",
    "recip",
    "select",
    "sign",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "param",
    "var",
    "verify",
    "version_info",
]
