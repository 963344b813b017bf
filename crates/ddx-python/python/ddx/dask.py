"""``ddx.dask``: batches past one machine, as Dask arrays and data frames.

The calls of an :class:`~ddx.Equation` over a ``dask.array`` of shape ``(symbols, points)``
chunked along points, answering Dask arrays of the shapes the in-process calls answer
(the point axis last; a system's answers lead with the output axis; the Hessian dense per
point), and :func:`assign`, which adds value and partial columns to a pandas or Dask frame
whose columns are named by symbols (and parameters). Needs the extra:
``pip install ddx-ad[dask]``.

Points are spelled as the in-process batch calls spell them: a ``(symbols, points)``
array (bound parameters broadcast), a ``(symbols + parameters, points)`` array (the
parameter rows after the symbol rows), or rows one by one — a sequence in that order, or a
dict by name — each a 1-D array of one value per point (NumPy or Dask) or a number (or a
length-1 array) broadcast to every point. Rows with a point axis are chunked alike; a
broadcast row travels as a constant inside each task.

How the equation travels (the invariants):

- One task per chunk computes every answer of a call for that chunk (the arrays a call
  returns are views of that one task; computing them together runs it once).
- The equation enters the task graph once, as a single key that every chunk task depends
  on. On a ``distributed`` cluster a worker fetches that key once and keeps it; with the
  ``processes`` scheduler the bytes travel with each task. Either way a process turns
  the bytes into an equation **once**: a per-process cache keyed by the bytes' BLAKE2b
  digest (:func:`worker_stats` counts it). The threaded and synchronous schedulers use the
  caller's equation itself and deserialise nothing.
- Kernels travel in the pickle: with ``Backend.COMPILE`` the caller waits for the lane's
  kernel before the equation is shipped, so a worker on a matching host and build runs
  the shipped machine code and compiles nothing; a worker on another host compiles the
  lane once (the equation is cached per process), never once per task. No ``cache_dir``
  needs to be shared.
- Bytes damaged on the way fail the task with a :class:`ddx.Error` (``archive_corrupt``
  or ``bad_archive``), raised in the task, never in the worker's deserialiser, so the
  worker lives on and the caller's ``compute`` raises the error.
- An equation calling Python user functions (:func:`ddx.function`) has no archive bytes
  (their code is Python's). It travels as its recipe instead — its text, parameters and
  user functions, or its model callable, with the bound parameter values and the
  options — pickled with ``cloudpickle`` (which Dask's ``distributed`` brings), which
  carries lambdas and closures by value. A worker rebuilds the equation from it once
  (the same per-process cache, by the recipe's digest) and compiles its own kernels; the
  answers are the same bits. User functions ``cloudpickle`` cannot carry (a callable
  holding a lock or an open file) make a scheduler that pickles fail with a
  :class:`ddx.Error` ``user_function`` saying so; the threaded and synchronous schedulers
  always use the caller's equation.
- Nothing ddx-specific is needed on the workers beyond the package itself.
"""

from __future__ import annotations

import functools
import hashlib
import operator
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

try:
    import dask
    import dask.array as da
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph
except ImportError as e:  # pragma: no cover - the extra is not installed
    raise ImportError("ddx.dask needs Dask: pip install ddx-ad[dask]") from e

from ddx import _ddx
from ddx._ddx import Equation
from ddx._errors import Error, errc
from ddx._options import Backend, Want

__all__ = [
    "assign",
    "column_names",
    "evaluate",
    "hessian",
    "hvp",
    "jacobian",
    "jvp",
    "vjp",
    "worker_stats",
]

# ---------------------------------------------------------------------------------------
# The equation in transit, and the per-process cache of equations it resolves to.

_CACHE_SIZE = 16
_cache: OrderedDict[str, Equation] = OrderedDict()
_cache_lock = threading.Lock()
# Per equation (by digest): how often its bytes were unpickled, decoded, and used by a task.
_counts: dict[str, dict[str, int]] = {}


def _count(digest: str, what: str) -> None:
    c = _counts.setdefault(digest, {"unpickled": 0, "deserialised": 0, "tasks": 0})
    c[what] += 1


def worker_stats() -> dict[str, dict[str, Any]]:
    """What this process has done with each shipped equation, by its digest (the
    ``digest`` attribute of the shipped key's value, also the tail of its key name):
    ``unpickled`` (how often its bytes arrived), ``deserialised`` (how often they were
    decoded into an equation: once per process while it stays cached), ``tasks`` (chunk
    or partition tasks that used it) and, while cached, ``jit_status`` (``compiled``
    stays 0 where the shipped kernels answered). Run it on workers with
    ``client.run(ddx.dask.worker_stats)``."""
    with _cache_lock:
        out: dict[str, dict[str, Any]] = {d: dict(c) for d, c in _counts.items()}
        for digest, eq in _cache.items():
            out.setdefault(digest, {})["jit_status"] = eq.jit_status
        return out


def _revive(data: bytes, kind: str = "archive") -> _Shipped:
    """The unpickler of :class:`_Shipped`: keeps the bytes; nothing is decoded here, so a
    damaged archive fails in the task that needs it, not in the worker's deserialiser."""
    shipped = _Shipped(None, bytes(data), kind)
    with _cache_lock:
        _count(shipped.digest, "unpickled")
    return shipped


class _Shipped:
    """An equation on its way to a task: the live equation where the task runs in the
    caller's process, elsewhere the archive bytes (kernels included; ``kind`` is
    ``"archive"``) or, for an equation calling Python user functions, its recipe pickled
    with ``cloudpickle`` (``"recipe"``: :func:`_recipe_bytes`)."""

    __slots__ = ("_live", "data", "digest", "kind")

    def __init__(self, live: Equation | None, data: bytes | Error, kind: str = "archive") -> None:
        self._live = live
        self.data = data
        self.kind = kind
        if isinstance(data, Error):
            # No bytes (user functions cloudpickle cannot carry): the live equation only.
            self.digest = f"live-{id(live):x}"
        else:
            h = hashlib.blake2b(data, digest_size=16)
            if kind != "archive":
                h.update(kind.encode())
            self.digest = h.hexdigest()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        if isinstance(self.data, Error):
            # Leaving the caller's process needs the bytes, and there are none: the
            # refusal travels instead, and the task that needs the equation raises it.
            # (Raising here would surface as the scheduler's own serialisation error:
            # ``distributed`` wraps it in a ``TypeError``.)
            return (_refused, (str(self.data),))
        if self.kind == "archive":
            return (_revive, (self.data,))
        return (_revive, (self.data, self.kind))

    def __dask_tokenize__(self) -> str:
        return self.digest

    def equation(self) -> Equation:
        if self._live is not None:
            return self._live
        if isinstance(self.data, Error):
            raise Error(str(self.data), errc.user_function)
        with _cache_lock:
            _count(self.digest, "tasks")
            eq = _cache.get(self.digest)
            if eq is not None:
                _cache.move_to_end(self.digest)
                return eq
            # Raises ddx.Error (archive_corrupt, bad_archive) for damaged bytes. Under
            # the lock: concurrent tasks of one worker wait for the one decode.
            assert isinstance(self.data, bytes)
            eq = _ddx.from_bytes(self.data) if self.kind == "archive" else _rebuild(self.data)
            _count(self.digest, "deserialised")
            _cache[self.digest] = eq
            while len(_cache) > _CACHE_SIZE:
                _cache.popitem(last=False)
            return eq


def _refused(message: str) -> _Shipped:
    """The unpickler of a :class:`_Shipped` whose equation could not travel: it carries
    the refusal (``user_function``), which the task needing the equation raises."""
    return _Shipped(None, Error(message, errc.user_function), "recipe")


def _pickling_scheduler() -> str | None:
    """The scheduler in effect now (``dask.compute``'s choice: ``scheduler=`` config, then
    a ``distributed`` client, then the collection's default), when it pickles the graph:
    ``"distributed"`` or ``"processes"``; ``None`` for the threaded and synchronous ones."""
    from dask.base import get_scheduler

    try:
        get = get_scheduler(collections=[da.zeros(1)])
    except (RuntimeError, ValueError):
        return None
    owner = getattr(get, "__self__", None)
    if owner is not None and "Client" in type(owner).__name__:
        return "distributed"
    import dask.multiprocessing

    return "processes" if get is dask.multiprocessing.get else None


def _recipe_bytes(eq: Equation, refusal: Error) -> bytes | Error:
    """How to rebuild ``eq`` (which calls Python user functions, so ``to_bytes`` refused
    it with ``refusal``) on a worker: its recipe, bound parameter values and options,
    pickled with ``cloudpickle``; or the error a scheduler that pickles raises."""
    recipe, bound = eq._recipe()
    if recipe is None:
        return refusal
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - distributed depends on it
        return Error(
            f"{refusal}; ddx.dask ships such an equation with cloudpickle, which is not "
            f"installed (pip install cloudpickle)",
            errc.user_function,
        )
    try:
        return bytes(cloudpickle.dumps((recipe, bound, eq.options)))
    except Exception as e:
        names = ", ".join(f"`{f.name}`" for f in _unpicklable(_functions(recipe), cloudpickle))
        names = names or "its model callable"
        error = Error(
            f"user_function: ddx.dask ships an equation calling Python user functions "
            f"({refusal}) by pickling them with cloudpickle, which failed for {names}: "
            f"{type(e).__name__}: {e}; only the threaded and synchronous schedulers run it",
            errc.user_function,
        )
        error.__cause__ = e
        return error


def _unpicklable(functions: list[Any], cloudpickle: Any) -> list[Any]:
    """Those of ``functions`` that ``cloudpickle`` cannot carry."""
    out = []
    for f in functions:
        try:
            cloudpickle.dumps(f)
        except Exception:
            out.append(f)
    return out


def _functions(recipe: Any) -> list[Any]:
    """The user functions (``ddx.Function``) a recipe holds, those of a model callable
    found in its closure and globals, for messages."""
    if recipe[0] in ("text", "system"):
        return list(recipe[3] or [])
    f = recipe[1]
    seen = [*(getattr(c, "cell_contents", None) for c in (getattr(f, "__closure__", None) or ()))]
    code = getattr(f, "__code__", None)
    names = code.co_names if code is not None else ()
    seen += [getattr(f, "__globals__", {}).get(n) for n in names]
    return [g for g in seen if isinstance(g, _ddx.Function)]


def _rebuild(data: bytes) -> Equation:
    """The equation a recipe of :func:`_recipe_bytes` describes, built here."""
    import pickle

    recipe, bound, options = pickle.loads(data)
    if recipe[0] == "text":
        eq = _ddx.equation_text(recipe[1], recipe[2], recipe[3])
    elif recipe[0] == "system":
        eq = _ddx.system_text(recipe[1], recipe[2], recipe[3])
    else:
        eq = _ddx.equation_model(recipe[1])
    if bound is not None:
        eq = eq.with_params(bound)
    eq.options = options
    return eq


def _ship(eq: Equation, want: Want) -> Any:
    """``eq`` as one Dask key (a ``Delayed``), its kernel for ``want`` included."""
    if eq.options.backend is Backend.COMPILE:
        eq.wait_for_kernel(want=want)
    kind = "archive"
    try:
        data: bytes | Error = eq.to_bytes()
    except Error as e:
        if e.code is not errc.user_function:
            raise
        # An equation calling Python user functions: its recipe travels instead (or, when
        # that cannot be pickled, it runs on the threaded and synchronous schedulers
        # only, and other schedulers raise this).
        data, kind = _recipe_bytes(eq, e), "recipe"
        if isinstance(data, Error) and _pickling_scheduler() is not None:
            # The scheduler in effect would pickle the graph: refuse now, the pickling
            # failure as the cause (a graph computed later elsewhere fails its tasks).
            raise data
    shipped = _Shipped(eq, data, kind)
    return dask.delayed(shipped, pure=True, name=f"ddx-equation-{shipped.digest}")


# ---------------------------------------------------------------------------------------
# Arrays.

_LANES = {
    "evaluate": Want.VALUE,
    "jacobian": Want.JACOBIAN,
    "hessian": Want.HESSIAN,
    "jvp": Want.JVP,
    "vjp": Want.VJP,
    "hvp": Want.HVP,
}


def _run_chunk(call: str, layout: tuple[int, Any], shipped: _Shipped, *args: Any) -> Any:
    """One task: ``call`` over one chunk. ``layout`` is ``(k, form)``: ``args`` are ``k``
    directions, then the points as ``form`` says (:class:`_Points`): one ``(rows, c)``
    block (``None``), a row each (``"rows"``), or a row each for the names of a tuple (a
    dict by name)."""
    eq = shipped.equation()
    k, form = layout
    blocks = [np.ascontiguousarray(a, dtype=np.float64) for a in args]
    out = getattr(eq, call)(*blocks[:k], _Points.assemble(form, blocks[k:]))
    return out if isinstance(out, tuple) else (out,)


class _Points:
    """The points of a call as its tasks take them: a 2-D ``(rows, points)`` Dask array
    (the symbol rows, then optionally the parameter rows), or rows one by one — a
    sequence, or a dict by name — each a 1-D array of the points' length (NumPy or Dask)
    or a number (or length-1 array) broadcast to every point, as in the in-process
    batch calls. Rows with a point axis are chunked alike; a broadcast row travels as a
    constant with each task."""

    def __init__(self, eq: Equation, x: Any) -> None:
        n, q = eq.arity, len(eq.parameters)
        self.form: Any = None  # one 2-D block
        self.rows: list[Any] = []
        if isinstance(x, dict) or (
            isinstance(x, (list, tuple)) and any(not _is_number(r) for r in x)
        ):
            self._rows(eq, x)
            return
        x = x if isinstance(x, da.Array) else da.asarray(x)
        if x.ndim != 2:
            raise Error(
                f"ddx.dask takes points as a (symbols, points) array, or rows one by one "
                f"(a sequence or a dict by name); this one has shape {_shape(x.shape)}",
                errc.wrong_arity,
            )
        if x.shape[0] not in (n, n + q):
            then = f", then {_counted(q, 'parameter')} ({', '.join(eq.parameters)})" if q else ""
            raise Error(
                f"the equation has {_counted(n, 'symbol')} ({', '.join(eq.symbols)}){then}; the "
                f"points have {_counted(x.shape[0], 'row')}",
                errc.wrong_arity,
            )
        _check_real(x, "the points")
        if x.dtype != np.float64:
            x = x.astype(np.float64)
        self.rows = [x.rechunk({0: -1})]  # every chunk holds whole points
        self.chunks = self.rows[0].chunks[1]

    def _rows(self, eq: Equation, x: Any) -> None:
        names = list(x) if isinstance(x, dict) else None
        given = list(x.values()) if isinstance(x, dict) else list(x)
        self.form = "rows" if names is None else tuple(str(k) for k in names)
        length = None
        # One value (a number, or a NumPy or Dask row of length 1) is broadcast.
        def single(r: Any) -> bool:
            if isinstance(r, da.Array):
                return r.ndim <= 1 and r.size == 1
            return _is_number(r) or np.size(r) == 1

        # The chunks of the first row given as a Dask array with a point axis (NumPy rows
        # follow them).
        lazy = [r for r in given if isinstance(r, da.Array) and not single(r)]
        for k, r in enumerate(given):
            if single(r):
                what = f"`{names[k]}`" if names else f"{k}"
                try:
                    value = r.compute() if isinstance(r, da.Array) else r
                    # An int past int64 reads as an object array: too_large below.
                    if not (isinstance(value, int) and not isinstance(value, bool)):
                        _check_real(np.asarray(value), f"row {what} of the points")
                    given[k] = np.asarray(value, dtype=np.float64).reshape(1)
                except OverflowError:
                    raise Error(
                        f"too_large: row {what} of the points is a number past the float64 "
                        f"range",
                        errc.too_large,
                    ) from None
                continue
            a = r if isinstance(r, da.Array) else da.asarray(np.asarray(r))
            what = f"`{names[k]}`" if names else f"{k}"
            _check_real(a, f"row {what} of the points")
            if a.ndim != 1:
                raise Error(
                    f"wrong_arity: row {what} of the points has shape {_shape(a.shape)}: a "
                    f"row is 1-D (one value per point) or a number (broadcast)",
                    errc.wrong_arity,
                )
            if length is not None and a.shape[0] != length:
                raise Error(
                    f"column_length: rows of the points have {length} and {a.shape[0]} "
                    f"values: each has one per point, or one (broadcast)",
                    errc.column_length,
                )
            length = a.shape[0]
            given[k] = a.astype(np.float64)
        arrays = [r for r in given if isinstance(r, da.Array)]
        if not arrays:
            raise Error(
                "wrong_arity: ddx.dask needs a row with a point axis (one value per point); "
                "every row given is one number",
                errc.wrong_arity,
            )
        chunks = (lazy or arrays)[0].chunks
        self.rows = [r.rechunk(chunks) if isinstance(r, da.Array) else r for r in given]
        self.chunks = chunks[0]

    @staticmethod
    def assemble(form: Any, rows: list[np.ndarray]) -> Any:
        """The points argument of the in-process call, from the task's rows."""
        if form is None:
            return rows[0]
        if form == "rows":
            return rows
        return dict(zip(form, rows))

    def probe(self) -> Any:
        """The points with no point: every row empty (a broadcast row too, so the
        lengths agree), for the call that finds the answers' shapes and the errors."""
        if self.form is None:
            return np.zeros((self.rows[0].shape[0], 0))
        return _Points.assemble(self.form, [np.zeros(0) for _ in self.rows])

    def task_args(self, i: int) -> list[Any]:
        """Chunk ``i``'s arguments: a key of each Dask row, each constant as it is."""
        if self.form is None:
            return [(self.rows[0].name, 0, i)]
        return [(r.name, i) if isinstance(r, da.Array) else r for r in self.rows]

    def dependencies(self) -> list[Any]:
        return [r for r in self.rows if isinstance(r, da.Array)]

    def token(self) -> list[Any]:
        return [self.form, *[r.name if isinstance(r, da.Array) else r for r in self.rows]]


def _check_real(a: Any, what: str) -> None:
    """Raises ``wrong_dtype`` unless ``a`` (a NumPy or Dask array) holds real numbers
    (floats, integers, bool: read as float64), as the in-process calls do."""
    if np.dtype(a.dtype).kind not in "fiub":
        raise Error(
            f"wrong_dtype: {what}: real numbers (floats, integers, bool) are read; got "
            f"dtype {a.dtype}",
            errc.wrong_dtype,
        )


def _is_number(r: Any) -> bool:
    return isinstance(r, (int, float, np.integer, np.floating)) and not isinstance(r, bool)


def _counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1 (``1 row``, ``2 rows``), as the
    Rust messages count (``ddx::ir::words::count``)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _shape(shape: Sequence[int]) -> str:
    """A shape as Python spells it: ``(2,)``, ``(2, 3)``."""
    return str(tuple(int(s) for s in shape))


def _direction(d: Any, points: _Points) -> tuple[Any, Any]:
    """A direction as a task argument: a small array (the same for every point) as a
    constant, one with a point axis as a Dask array chunked like the points; and its
    shape with no points, for the probe call."""
    if isinstance(d, da.Array) or np.ndim(d) == 2:
        d = d if isinstance(d, da.Array) else da.asarray(d)
        count = sum(points.chunks)
        if d.ndim != 2 or d.shape[1] != count:
            raise Error(
                f"a direction per point has shape (k, {count}); this one has {_shape(d.shape)}",
                errc.wrong_direction,
            )
        _check_real(d, "a direction")
        d = d.astype(np.float64).rechunk(((d.shape[0],), points.chunks))
        return d, np.zeros((d.shape[0], 0))
    _check_real(np.asarray(d), "a direction")
    const = np.asarray(d, dtype=np.float64)
    return const, const


def _call(call: str, eq: Equation, directions: Sequence[Any], x: Any) -> tuple[Any, ...]:
    if not isinstance(eq, Equation):
        raise TypeError(f"ddx.dask needs a ddx.Equation, not {type(eq).__name__}")
    points = _Points(eq, x)
    args = [_direction(d, points) for d in directions]
    # The call with no points: its shapes (less the point axis) are the answers' leading
    # shapes, and its errors (a system's hvp, a wrong direction, a parameter neither given
    # nor bound) are the caller's, now.
    probe = getattr(eq, call)(*[p for _, p in args], points.probe())
    probe = probe if isinstance(probe, tuple) else (probe,)
    eq_key = _ship(eq, _LANES[call])

    token = tokenize(call, eq_key.key, *points.token(), *[a for a, _ in args])
    name = f"ddx-{call}-{token}"
    chunks = points.chunks
    deps: list[Any] = [*points.dependencies(), eq_key]
    task_args: list[Any] = []
    for a, _ in args:
        if isinstance(a, da.Array):
            deps.append(a)
            task_args.append(a.name)
        else:
            task_args.append(a)

    def chunk_arg(a: Any, i: int) -> Any:
        return (a, 0, i) if isinstance(a, str) else a

    run = functools.partial(_run_chunk, call, (len(args), points.form))
    layer = {
        (name, i): (
            run,
            eq_key.key,
            *[chunk_arg(a, i) for a in task_args],
            *points.task_args(i),
        )
        for i in range(len(chunks))
    }
    graph = HighLevelGraph.from_collections(name, layer, dependencies=deps)
    answers = []
    for k, p in enumerate(probe):
        lead = p.shape[:-1]
        part = f"{name}-{k}"
        zeros = (0,) * len(lead)
        sub = {
            (part, *zeros, i): (operator.getitem, (name, i), k) for i in range(len(chunks))
        }
        g = HighLevelGraph.from_collections(part, sub, dependencies=[])
        layers = {**graph.layers, **g.layers}
        dependencies = {**graph.dependencies, part: {name}}
        answers.append(
            da.Array(
                HighLevelGraph(layers, dependencies),
                part,
                chunks=tuple((n,) for n in lead) + (chunks,),
                dtype=np.float64,
                meta=np.empty((0,) * (len(lead) + 1)),
            )
        )
    return tuple(answers)


def evaluate(eq: Equation, x: Any) -> Any:
    """The values at every point of ``x`` (a ``(symbols, points)`` Dask array, or any
    spelling of the module's docstring): shape ``(points,)``, a system's
    ``(outputs, points)``. Errors as :meth:`Equation.evaluate`
    (``wrong_arity`` for points of the wrong shape, now; others when computed)."""
    return _call("evaluate", eq, (), x)[0]


def jacobian(eq: Equation, x: Any) -> tuple[Any, Any]:
    """``(f, J)`` at every point: ``J`` of shape ``(symbols, points)``, a system's
    ``(outputs, symbols, points)``; as :meth:`Equation.jacobian`."""
    f, j = _call("jacobian", eq, (), x)
    return f, j


def hessian(eq: Equation, x: Any) -> tuple[Any, Any, Any]:
    """``(f, J, H)`` at every point, ``H`` dense: ``(symbols, symbols, points)``, a
    system's ``(outputs, symbols, symbols, points)``; as :meth:`Equation.hessian`."""
    f, j, h = _call("hessian", eq, (), x)
    return f, j, h


def jvp(eq: Equation, v: Any, x: Any) -> tuple[Any, Any]:
    """``(f, J·v)`` at every point; ``v`` of shape ``(symbols,)`` (one direction for every
    point) or ``(symbols, points)`` (a NumPy or Dask array, one per point)."""
    f, t = _call("jvp", eq, (v,), x)
    return f, t


def vjp(eq: Equation, w: Any, x: Any) -> tuple[Any, Any]:
    """``(f, wᵀ·J)`` at every point; ``w`` of shape ``(outputs,)`` or ``(outputs, points)``;
    the answer ``(symbols, points)``."""
    f, a = _call("vjp", eq, (w,), x)
    return f, a


def hvp(eq: Equation, v: Any, x: Any) -> tuple[Any, Any, Any]:
    """``(f, ∇f, H·v)`` at every point of a scalar equation; ``v`` as for :func:`jvp`."""
    f, g, hv = _call("hvp", eq, (v,), x)
    return f, g, hv


# ---------------------------------------------------------------------------------------
# Data frames.

_FRAME_WANTS = (Want.VALUE, Want.JACOBIAN, Want.HESSIAN)


def column_names(eq: Equation, want: Want = Want.JACOBIAN) -> list[str]:
    """The names of the columns :func:`assign` adds, as ``ddx batch`` names them: ``f``,
    ``df/dx`` for every symbol, ``d2f/dxdy`` for every pair ``x ≤ y`` in symbol order (the
    Hessian is symmetric). A system's outputs are numbered: ``f0``, ``df0/dx``, ``d2f0/dxdy``."""
    want = _frame_want(want, "ddx.dask.column_names")
    names = eq.symbols
    stems = [f"f{k}" for k in range(eq.outputs)] if _is_system(eq) else ["f"]
    out = []
    for f in stems:
        out.append(f)
        if want >= Want.JACOBIAN:
            out += [f"d{f}/d{s}" for s in names]
        if want == Want.HESSIAN:
            out += [
                f"d2{f}/d{names[i]}d{names[j]}"
                for i in range(len(names))
                for j in range(i, len(names))
            ]
    return out


def _is_system(eq: Equation) -> bool:
    # No point, every parameter row given (bound or not).
    return np.ndim(eq.evaluate(np.zeros((eq.arity + len(eq.parameters), 0)))) == 2


def _frame_want(want: Any, call: str = "ddx.dask.assign") -> Want:
    if isinstance(want, int) and not 0 <= want < len(Want):
        raise Error(
            f"index_out_of_range: {call}: want={want} names no ddx.Want "
            f"(a lane is an int from 0 to {len(Want) - 1})",
            errc.index_out_of_range,
        )
    want = Want(want)
    if want not in _FRAME_WANTS:
        raise ValueError(f"assign computes VALUE, JACOBIAN or HESSIAN columns, not {want.name}")
    return want


def _shown(name: str) -> str:
    """`name` as a message shows it: control and format characters as `\\u{…}` escapes."""
    return "".join(c if c.isprintable() or c == " " else f"\\u{{{ord(c):x}}}" for c in name)


def _check_columns(eq: Equation, columns: Sequence[str], added: Sequence[str]) -> None:
    present = [str(c) for c in columns]
    for name in eq.symbols:
        if present.count(name) == 0:
            shown = ", ".join(_shown(c) for c in present) or "no columns"
            raise Error(
                f"short_point: no column `{_shown(name)}` for the symbol `{_shown(name)}` "
                f"(the frame has {shown})",
                errc.short_point,
            )
    for name in [*eq.symbols, *eq.parameters]:
        if present.count(name) > 1:
            raise Error(
                f"duplicate_symbol: two columns are named `{_shown(name)}`",
                errc.duplicate_symbol,
            )
    clash = [c for c in added if c in present]
    if clash:
        raise Error(
            f"the frame already has the column `{clash[0]}` that assign would add",
            errc.duplicate_symbol,
        )


def _assign_pandas(frame: Any, eq: Equation, want: Want, names: list[str]) -> Any:
    # The symbols' columns, and each parameter's where the frame has one (else its
    # bound value, broadcast; neither is the in-process call's `short_point`).
    present = {str(c) for c in frame.columns}
    x = {
        name: frame[name].to_numpy(dtype=np.float64)
        for name in [*eq.symbols, *eq.parameters]
        if name in present
    }
    n, p = eq.arity, len(frame)
    if want == Want.VALUE:
        answers: tuple[Any, ...] = (eq.evaluate(x),)
    elif want == Want.JACOBIAN:
        answers = eq.jacobian(x)
    else:
        answers = eq.hessian(x)
    system = np.ndim(answers[0]) == 2
    m = eq.outputs if system else 1
    f = np.reshape(answers[0], (m, p))
    columns = []
    upper = [(i, j) for i in range(n) for j in range(i, n)]
    for k in range(m):
        columns.append(f[k])
        if want >= Want.JACOBIAN:
            jac = np.reshape(answers[1], (m, n, p))[k]
            columns += [jac[i] for i in range(n)]
        if want == Want.HESSIAN:
            hes = np.reshape(answers[2], (m, n, n, p))[k]
            columns += [hes[i, j] for i, j in upper]
    return frame.assign(**{c: np.array(v) for c, v in zip(names, columns)})


def _assign_partition(frame: Any, shipped: _Shipped, want: int, names: list[str]) -> Any:
    return _assign_pandas(frame, shipped.equation(), Want(want), names)


def assign(eq: Equation, df: Any, want: Want = Want.JACOBIAN) -> Any:
    """``df`` with the value and partial columns of ``eq`` added, computed from the
    columns named by its symbols, and by its parameters where the frame has them (a
    parameter without a column takes its bound value, ``Equation.with_params``); see
    :func:`column_names` for the names added (a parameter has no partial). ``df`` is a
    pandas frame (computed now) or a Dask frame (one task per partition, the equation
    shipped as for the arrays). ``want``: ``Want.VALUE``, ``JACOBIAN`` or ``HESSIAN``.

    Raises :class:`ddx.Error`: ``short_point`` naming a symbol with no column, or a
    parameter with neither a column nor a bound value; ``duplicate_symbol`` for a symbol
    or parameter named by two columns or an added column the frame already has."""
    if not isinstance(eq, Equation):
        raise TypeError(f"assign needs a ddx.Equation, not {type(eq).__name__}")
    want = _frame_want(want)
    names = column_names(eq, want)
    _check_columns(eq, list(df.columns), names)
    if hasattr(df, "map_partitions") and hasattr(df, "npartitions"):
        shipped = _ship(eq, want)
        meta = _assign_pandas(df._meta, eq, want, names)
        return df.map_partitions(_assign_partition, shipped, int(want), names, meta=meta)
    return _assign_pandas(df, eq, want, names)
