"""``Options``: how an equation's calls are answered, as a frozen pydantic model.

The fields are those of the Rust ``ddx::Options`` (and its ``Codegen``), validated when an
``Options`` is made, so a value the library cannot take never reaches it. An equation's
``options`` property reads and assigns one; ``compile(**fields)`` changes some fields.
The compiled module moves options across as a flat tuple (``_to_raw``/``_from_raw``).
"""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator

from ddx import _ddx

_U64 = Annotated[StrictInt, Field(ge=0, le=2**64 - 1)]


class Backend(enum.IntEnum):
    """Which engine answers calls."""

    INTERPRET = 0
    """The interpreter; no compiler is asked. The default."""
    COMPILE = 1
    """Compile each lane with Cranelift when first needed; calls interpret until it lands."""
    ADAPT = 2
    """Compile once batch traffic has paid for it (``warm_points``, then ``hot_points``)."""
    DEVICE = 3
    """An OpenCL device (``Options.device``); interprets where this build has none."""


class OptLevel(enum.IntEnum):
    """How hard the code generator optimises the top tier."""

    OFF = 0
    SPEED = 1
    NONE = 0
    """The earlier name of ``OFF`` (an alias: ``OptLevel.NONE is OptLevel.OFF``)."""


class Want(enum.IntEnum):
    """A kind of call (a lane): for ``buffer``, ``nodes`` and ``wait_for_kernel``."""

    VALUE = 0
    JACOBIAN = 1
    GRADIENT = 2
    JVP = 3
    VJP = 4
    HESSIAN = 5
    HVP = 6


def _by_name(cls: type[enum.IntEnum], value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, enum.Enum):
        try:
            return cls[value.upper()]
        except KeyError:
            names = ", ".join(m.name for m in cls)
            raise ValueError(f"{value!r} is not one of {names}") from None
    return value


class Codegen(BaseModel):
    """What the code generator reads: the identity of a compiled kernel."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lanes: Union[Literal["derived", "scalar"], Annotated[StrictInt, Field(ge=1, le=255)]] = (
        "derived"
    )
    """Points per loop iteration of a batch kernel: the host's width, one, or exactly k."""
    opt_level: OptLevel = OptLevel.SPEED
    """Optimisation level of the top tier."""
    contract: StrictBool = False
    """Fuse each product whose only use is a sum into one fma, in every engine alike."""

    @field_validator("opt_level", mode="before")
    @classmethod
    def _opt_level(cls, v: Any) -> Any:
        return _by_name(OptLevel, v)


class Options(BaseModel):
    """How an equation's calls are answered (the Rust ``ddx::Options``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Backend = Backend.INTERPRET
    """The engine."""
    points: Annotated[StrictInt, Field(ge=0, le=2**64 - 1)] = 1
    """The batch size the caller intends to pass (decides the lane width only)."""
    codegen: Codegen = Codegen()
    """Code generation settings."""
    warm_points: _U64 = 65_536
    """Under ADAPT, batch points that buy the first compiled tier."""
    hot_points: _U64 = 1_048_576
    """Under ADAPT, further points that buy the optimised tier."""
    retain_object: StrictBool = True
    """Keep a copy of each kernel's machine code, for saving the equation with its code."""
    cache_dir: Path | None = None
    """Keep compiled code in this directory between runs (trust it like executable code)."""
    device: str | None = None
    """Under DEVICE, a case-insensitive match on platform and device name."""
    answer_limit: Annotated[StrictInt, Field(ge=0, le=2**64 - 1)] = 1 << 28
    """The most float64 values one answer block may hold (a dense Jacobian ``m·n·p``, a
    dense Hessian ``m·n·n·p``): past it a call raises ``errc.too_large`` before allocating."""

    @field_validator("backend", mode="before")
    @classmethod
    def _backend(cls, v: Any) -> Any:
        return _by_name(Backend, v)

    @field_validator("cache_dir", mode="before")
    @classmethod
    def _cache_dir(cls, v: Any) -> Any:
        # `Path("")` is `Path(".")`: an empty path would quietly mean the current directory
        # (the Rust options refuse an empty path for the same reason).
        if isinstance(v, (str, bytes)) and len(v) == 0:
            raise ValueError("an empty path names no directory: give a directory, or None")
        return _encodable(v, "a directory's path")

    @field_validator("device", mode="before")
    @classmethod
    def _device(cls, v: Any) -> Any:
        return _encodable(v, "a device's name")


def _encodable(v: Any, what: str) -> Any:
    """``v``, unless it is a ``str`` holding a lone surrogate (no character: it has no
    UTF-8 form, and no path or device name holds it)."""
    s = os.fspath(v) if isinstance(v, os.PathLike) else v
    if isinstance(s, str):
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                f"{ascii(s)} holds a lone surrogate (a code point from U+D800 to U+DFFF "
                f"alone), which is no character; {what} is a str of characters"
            ) from None
    return v


Raw = tuple[int, int, int, int, bool, int, int, bool, "str | None", "str | None", int]


def _to_raw(value: Any) -> Raw:
    """The flat tuple of an ``Options`` (or of anything that validates as one)."""
    o = value if isinstance(value, Options) else Options.model_validate(value)
    lanes = o.codegen.lanes
    raw_lanes = -1 if lanes == "derived" else 0 if lanes == "scalar" else int(lanes)
    return (
        int(o.backend),
        o.points,
        raw_lanes,
        int(o.codegen.opt_level),
        o.codegen.contract,
        o.warm_points,
        o.hot_points,
        o.retain_object,
        None if o.cache_dir is None else str(o.cache_dir),
        o.device,
        o.answer_limit,
    )


def _from_raw(raw: Raw) -> Options:
    """The ``Options`` of a flat tuple from the compiled module."""
    backend, points, lanes, opt_level, contract, warm, hot, retain, cache_dir, device, limit = raw
    return Options(
        backend=Backend(backend),
        points=points,
        codegen=Codegen(
            lanes="derived" if lanes == -1 else "scalar" if lanes == 0 else lanes,
            opt_level=OptLevel(opt_level),
            contract=contract,
        ),
        warm_points=warm,
        hot_points=hot,
        retain_object=retain,
        cache_dir=None if cache_dir is None else Path(cache_dir),
        device=device,
        answer_limit=limit,
    )


def _compiled(current: Raw, fields: dict[str, Any] | None) -> Raw:
    """``current`` with ``fields`` changed and ``backend=COMPILE`` unless given."""
    changes = dict(fields or {})
    changes.setdefault("backend", Backend.COMPILE)
    merged = {**_from_raw(current).model_dump(), **changes}
    return _to_raw(Options.model_validate(merged))


DEFAULT = _from_raw(_ddx.default_options())
"""The Rust defaults, read from the compiled module (a test holds ``Options()`` to them)."""
