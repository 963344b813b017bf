"""``ddx.Error`` and ``errc``: the error codes of the Rust library, as Python sees them.

``errc`` is built from the codes the compiled module lists, numbered from 1 in that order,
so the two cannot drift apart. The compiled module raises through :func:`_make`.
"""

from __future__ import annotations

import enum

from ddx._ddx import ERRC_NAMES

errc = enum.IntEnum("errc", [(name, i) for i, name in enumerate(ERRC_NAMES, start=1)])
errc.__doc__ = """The error codes: an ``IntEnum``, so it compares and formats as its number;
``code.name`` is the spelling (``errc.unknown_symbol.name == "unknown_symbol"``)."""
errc.__module__ = "ddx"


class Error(RuntimeError):
    """A failure of a ddx call; ``code`` says which (an :class:`errc` member) and the
    message is the library's text."""

    code: errc

    def __init__(self, message: str, code: errc) -> None:
        super().__init__(message)
        self.code = code

    def __reduce__(self) -> tuple[type[Error], tuple[str, errc]]:
        return (Error, (str(self), self.code))


Error.__module__ = "ddx"


def _make(code: str, message: str) -> Error:
    """The exception for the code spelled ``code`` (called by the compiled module)."""
    return Error(message, errc[code])
