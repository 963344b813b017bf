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

from collections.abc import Callable, Sequence
from typing import overload

from ddx import _ddx
from ddx._ddx import (
    Call,
    Equation,
    Expression,
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
    var,
)
from ddx._errors import Error, errc
from ddx._options import Backend, Codegen, Options, OptLevel, Want

__version__: str = _ddx.__version__
has_jit: bool = _ddx.has_jit
"""Whether this copy was built with the Cranelift JIT (otherwise calls interpret)."""
has_opencl: bool = _ddx.has_opencl
"""Whether this copy was built with the OpenCL device backend."""
MAX_ORDER: int = _ddx.MAX_ORDER
"""The highest order ``univariate_derivative`` computes (170: 171! overflows float64)."""

Model = Callable[[], "Expression | float | tuple[Expression | float, ...]"]


@overload
def equation(model: Model | str | Sequence[str], /) -> Equation: ...
@overload
def equation(model: None = None, /) -> Callable[[Model], Equation]: ...


def equation(
    model: Model | str | Sequence[str] | None = None, /
) -> Equation | Callable[[Model], Equation]:
    """The equation of ``model``: a callable of no arguments that names symbols with
    :func:`var` and returns one :class:`Expression` (a scalar function) or a tuple of them
    (a system); or a text such as ``"exp(x) * sin(y)"``; or a list of texts (a system).

    Usable as a decorator, bare (``@ddx.equation``) or called (``@ddx.equation()``). The
    callable runs once, now; an exception it raises propagates unchanged. Raises
    :class:`Error` when it builds no equation (``errc.no_graph`` for a literal,
    ``errc.no_arena`` or ``errc.sealed_arena`` for expressions from outside the model,
    ``errc.bad_syntax`` … for text).
    """
    if model is None:
        return _decorator
    if isinstance(model, str):
        return _ddx.equation_text(model)
    if isinstance(model, (list, tuple)):
        if not all(isinstance(t, str) for t in model):
            raise TypeError("a system written down is a list of strings")
        return _ddx.system_text(list(model))
    if callable(model):
        return _ddx.equation_model(model)
    raise TypeError(
        f"ddx.equation takes a callable, a string or a list of strings, not {type(model).__name__}"
    )


def _decorator(model: Model) -> Equation:
    return equation(model)


__all__ = [
    "Backend",
    "Call",
    "Codegen",
    "Equation",
    "Error",
    "Expression",
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
    "expm1",
    "has_jit",
    "has_opencl",
    "hypot",
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
    "var",
]
