"""``ddx.dask``: Dask arrays and frames, on every scheduler and on a real two-worker
``distributed.LocalCluster`` on loopback (started and stopped here).

The truth for every Dask answer is the in-process call on the same points, bit for bit.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time

import numpy as np
import pytest

import ddx

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")
distributed = pytest.importorskip("distributed")

import ddx.dask as dx  # noqa: E402

pytestmark = pytest.mark.timeout(300)

CALLS = ("evaluate", "jacobian", "hessian")


def same_bits(got, want):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        assert g.tobytes() == w.tobytes()


def equation_keys(collection):
    return [k for k in collection.__dask_graph__() if str(k).startswith("ddx-equation-")]


@pytest.fixture
def scalar() -> ddx.Equation:
    return ddx.equation("x * log(x) + exp(x * y) * sin(y)")


@pytest.fixture
def points() -> np.ndarray:
    return np.random.default_rng(19).uniform(0.5, 1.5, size=(2, 1000))


# ---------------------------------------------------------------------------------------
# Local schedulers.


@pytest.fixture(scope="module")
def pool():
    """One pool of two spawned processes for the ``processes`` scheduler (a pool per
    compute would spawn, and import, afresh every time)."""
    import concurrent.futures
    import multiprocessing

    with concurrent.futures.ProcessPoolExecutor(2, multiprocessing.get_context("spawn")) as p:
        yield p


@pytest.fixture(params=["sync", "threads", "processes"])
def scheduler(request, pool):
    with dask.config.set(scheduler=request.param, pool=pool if request.param == "processes" else None):
        yield request.param


def test_every_call_every_local_scheduler(scheduler, scalar, system, points):
    x = da.from_array(points, chunks=(1, 128))  # ragged chunks, rows split on purpose
    compiled = scalar.compile()
    v = np.random.default_rng(3).normal(size=(2, 1000))
    for eq in (scalar, compiled, system):
        for call in CALLS:
            got = dask.compute(*_as_tuple(getattr(dx, call)(eq, x)))
            same_bits(got, getattr(eq, call)(points))
        same_bits(
            dask.compute(*dx.jvp(eq, [0.5, -2.0], x)),
            eq.jvp([0.5, -2.0], points),
        )
        same_bits(  # a direction per point, as NumPy and as Dask chunked otherwise
            dask.compute(*dx.jvp(eq, da.from_array(v, chunks=(2, 300)), x)),
            eq.jvp(v, points),
        )
        w = np.ones(eq.outputs) if eq is system else np.ones(1)
        same_bits(dask.compute(*dx.vjp(eq, w, x)), eq.vjp(w, points))
    same_bits(dask.compute(*dx.hvp(scalar, v, x)), scalar.hvp(v, points))


def _as_tuple(a):
    return a if isinstance(a, tuple) else (a,)


def test_shapes_and_one_task_per_chunk(scalar, system, points):
    x = da.from_array(points, chunks=(2, 250))
    f, j, h = dx.hessian(scalar, x)
    assert (f.shape, j.shape, h.shape) == ((1000,), (2, 1000), (2, 2, 1000))
    assert h.chunks == ((2,), (2,), (250,) * 4)
    graph = dict(h.__dask_graph__())
    calls = [k for k in graph if isinstance(k, tuple) and len(k) == 2 and k[0].startswith("ddx-hessian-")]
    assert len(calls) == 4  # one task per chunk; f, J and H are views of it
    assert len(equation_keys(h)) == 1  # the equation is one key, shared by every chunk
    f, j, h = dx.hessian(system, x)
    assert (f.shape, j.shape, h.shape) == ((2, 1000), (2, 2, 1000), (2, 2, 2, 1000))


def test_refusals_are_errors_now(scalar, system, points):
    with pytest.raises(ddx.Error) as e:
        dx.jacobian(scalar, da.ones((3, 10)))
    assert e.value.code is ddx.errc.wrong_arity and "x, y" in str(e.value)
    with pytest.raises(ddx.Error) as e:
        dx.hvp(system, [1.0, 0.0], da.from_array(points))
    assert e.value.code is ddx.errc.not_scalar
    with pytest.raises(ddx.Error) as e:
        dx.jvp(scalar, [1.0, 0.0, 3.0], da.from_array(points))
    assert e.value.code is ddx.errc.wrong_direction
    with pytest.raises(TypeError):
        dx.evaluate("x * y", da.from_array(points))


def test_threads_use_the_callers_equation(scalar, points):
    eq = scalar.compile()
    before = {d: dict(c) for d, c in dx.worker_stats().items()}
    f, j = dx.jacobian(eq, da.from_array(points, chunks=(2, 100)))
    dask.compute(f, j, scheduler="threads")
    after = dx.worker_stats()
    assert {d: c for d, c in after.items() if "unpickled" in c} == {
        d: c for d, c in before.items() if "unpickled" in c
    }  # nothing pickled, nothing decoded: the threads share the caller's equation


class _Locked:
    """A callable holding a lock: ``cloudpickle`` cannot carry it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __call__(self, a: float, b: float) -> float:
        with self.lock:
            return a * math.exp(b)


def scaled_exp(value=None):
    """A user function of two arguments (lambdas: ``cloudpickle`` carries them by value)."""
    return ddx.function(
        "scaled_exp",
        2,
        value or (lambda a, b: a * math.exp(b)),
        lambda a, b: (math.exp(b), a * math.exp(b)),
        lambda a, b: ((0.0, math.exp(b)), (math.exp(b), a * math.exp(b))),
    )


def test_user_functions_run_on_every_local_scheduler(points, pool):
    """A Python user function's equation has no archive bytes: the threaded and
    synchronous schedulers use the caller's equation, the processes scheduler rebuilds it
    from its recipe (cloudpickled); every answer is the in-process bits. One whose
    callables cannot be pickled is refused there with ``user_function``, naming it."""
    eq = ddx.equation("scaled_exp(x, y) + x * y", functions=[scaled_exp()])
    want = eq.jacobian(points)
    for scheduler in ("sync", "threads", "processes"):
        with dask.config.set(scheduler=scheduler, pool=pool if scheduler == "processes" else None):
            got = dask.compute(*dx.jacobian(eq, da.from_array(points, chunks=(2, 250))))
        same_bits(got, want)
    locked = ddx.equation("scaled_exp(x, y) + x * y", functions=[scaled_exp(_Locked())])
    same_bits(
        dask.compute(*dx.jacobian(locked, da.from_array(points, chunks=(2, 250))), scheduler="threads"),
        want,
    )
    with pytest.raises(ddx.Error) as e:
        with dask.config.set(scheduler="processes", pool=pool):
            dask.compute(*dx.jacobian(locked, da.from_array(points, chunks=(2, 250))))
    assert e.value.code is ddx.errc.user_function
    assert "scaled_exp" in str(e.value) and "cloudpickle" in str(e.value), str(e.value)


def test_points_that_are_not_real_are_wrong_dtype(scalar, points):
    for bad in (da.from_array(points.astype(complex), chunks=(2, 250)), points.astype(complex)):
        with pytest.raises(ddx.Error) as e:
            dx.evaluate(scalar, bad)
        assert e.value.code is ddx.errc.wrong_dtype
    with pytest.raises(ddx.Error) as e:
        dx.evaluate(scalar, {"x": points[0], "y": points[1].astype(complex)})
    assert e.value.code is ddx.errc.wrong_dtype
    with pytest.raises(ddx.Error) as e:
        dx.jvp(scalar, np.array([1j, 0]), da.from_array(points, chunks=(2, 250)))
    assert e.value.code is ddx.errc.wrong_dtype
    for row in (1j, "a", None):  # a broadcast row: None was read as NaN
        with pytest.raises(ddx.Error) as e:
            dx.evaluate(scalar, [da.from_array(points[0], chunks=250), row])
        assert e.value.code is ddx.errc.wrong_dtype, row


# ---------------------------------------------------------------------------------------
# Data frames.


def test_assign_pandas_columns_by_name(scalar, points):
    frame = pd.DataFrame({"y": points[1], "other": 7.0, "x": points[0]})  # not in symbol order
    out = dx.assign(scalar, frame, want=ddx.Want.HESSIAN)
    f, j, h = scalar.hessian(points)
    assert list(out.columns) == ["y", "other", "x", "f", "df/dx", "df/dy"] + [
        "d2f/dxdx",
        "d2f/dxdy",
        "d2f/dydy",
    ]
    same_bits(out["f"].to_numpy(), f)
    same_bits(out["df/dx"].to_numpy(), j[0])
    same_bits(out["df/dy"].to_numpy(), j[1])
    same_bits(out["d2f/dxdy"].to_numpy(), h[0, 1])
    same_bits(out["d2f/dydy"].to_numpy(), h[1, 1])
    assert (out["other"] == 7.0).all() and "f" not in frame.columns  # a new frame
    assert list(dx.assign(scalar, frame, want=ddx.Want.VALUE).columns)[-1] == "f"


def test_assign_system_numbers_outputs(system, points):
    frame = pd.DataFrame({"x": points[0], "y": points[1]})
    out = dx.assign(system, frame)
    f, j = system.jacobian(points)
    assert list(out.columns)[2:] == ["f0", "df0/dx", "df0/dy", "f1", "df1/dx", "df1/dy"]
    same_bits(out["df1/dx"].to_numpy(), j[1, 0])
    same_bits(out["f1"].to_numpy(), f[1])


def test_assign_refusals(scalar, points):
    with pytest.raises(ddx.Error) as e:
        dx.assign(scalar, pd.DataFrame({"x": points[0], "z": points[1]}))
    assert e.value.code is ddx.errc.short_point
    assert "`y`" in str(e.value) and "x, z" in str(e.value)
    lazy = dd.from_pandas(pd.DataFrame({"x": points[0]}), npartitions=2)
    with pytest.raises(ddx.Error, match="no column `y`"):
        dx.assign(scalar, lazy)  # refused when built, not when computed
    with pytest.raises(ddx.Error) as e:
        dx.assign(scalar, pd.DataFrame({"x": [1.0], "y": [2.0], "f": [0.0]}))
    assert e.value.code is ddx.errc.duplicate_symbol and "`f`" in str(e.value)
    # Column names a message lists are escaped, as every quoted name is (tester29).
    with pytest.raises(ddx.Error) as e:
        dx.assign(scalar, pd.DataFrame({"x": points[0], "z\u200d\x1b": points[1]}))
    message = str(e.value)
    assert message.startswith("short_point: ") and "z\\u{200d}\\u{1b}" in message, message
    with pytest.raises(ValueError):
        dx.assign(scalar, pd.DataFrame({"x": [1.0], "y": [2.0]}), want=ddx.Want.HVP)


def test_assign_dask_frame_equals_pandas(scheduler, scalar, points):
    frame = pd.DataFrame({"x": points[0], "y": points[1], "id": np.arange(1000)})
    lazy = dx.assign(scalar.compile(), dd.from_pandas(frame, npartitions=4))
    pd.testing.assert_frame_equal(
        lazy.compute(), dx.assign(scalar, frame), check_exact=True
    )


def test_assign_reads_a_bound_parameter_on_every_frame(scheduler):
    # No column for `k`: its bound value, broadcast; an empty frame (dask's metadata is
    # one) is a batch of no points, as NumPy broadcasts lengths 0 and 1.
    eq = ddx.equation("k * x * x", params=["k"]).with_params([2.0])
    f, j = eq.jacobian({"x": np.empty(0)})
    assert f.shape == (0,) and j.shape == (1, 0)
    frame = pd.DataFrame({"x": [1.0, -3.0, 0.5]})
    out = dx.assign(eq, frame)
    assert out["f"].tolist() == [2.0, 18.0, 0.5] and out["df/dx"].tolist() == [4.0, -12.0, 2.0]
    assert len(dx.assign(eq, frame.iloc[:0])) == 0
    lazy = dx.assign(eq, dd.from_pandas(frame, npartitions=2))
    pd.testing.assert_frame_equal(lazy.compute(), out, check_exact=True)


# ---------------------------------------------------------------------------------------
# A real cluster: two worker processes on loopback.


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        worker_dashboard_address=None,
    ) as cluster, distributed.Client(cluster) as c:
        c.wait_for_workers(2)
        yield c


def grid(n: int, chunk: int):
    """Points on a line through (0.5, 2.0): computed where the chunk is, the same bits
    everywhere (integers over an integer)."""
    t = da.arange(n, chunks=chunk) / n
    return da.stack([0.5 + t, 2.0 - t])


def test_cluster_batch_jacobian_bit_for_bit(client, scalar):
    n = 10_000_000
    eq = scalar.compile()
    x = grid(n, 500_000)
    f, j = dx.jacobian(eq, x)
    (key,) = equation_keys(j)
    got = client.compute([f, j], sync=True)
    t = np.arange(n) / n
    xs = np.stack([0.5 + t, 2.0 - t])
    same_bits(xs, x.compute(scheduler="sync"))
    same_bits(tuple(got), eq.jacobian(xs))

    digest = key.removeprefix("ddx-equation-")
    stats = client.run(dx.worker_stats)
    used = [s[digest] for s in stats.values() if s.get(digest, {}).get("tasks", 0) > 0]
    assert used, stats
    assert sum(s["tasks"] for s in used) == len(x.chunks[1])  # every chunk task, once
    for s in used:
        # Once per worker, not once per task: the key was fetched and decoded once ...
        assert s["deserialised"] == 1, stats
        assert s["unpickled"] == 1, stats
        # ... and its kernels came with it: nothing compiled on the worker.
        if ddx.has_jit:
            assert s["jit_status"]["compiled"] == 0 and s["jit_status"]["loaded"] > 0, stats


def slowly(block):
    time.sleep(0.05)  # an input pipeline slow enough to kill a worker in the middle
    return block


def test_cluster_survives_a_killed_worker(client, scalar):
    n, chunk = 400_000, 10_000
    x = grid(n, chunk).map_blocks(slowly)
    f, j = dx.jacobian(scalar, x)
    futures = client.compute(list(j.to_delayed().ravel()))
    pids = client.run(os.getpid)
    done = 0
    for _ in distributed.as_completed(futures):
        done += 1
        if done == 4:
            break
    victim = next(iter(pids.values()))
    os.kill(victim, signal.SIGKILL)  # the nanny starts another; the scheduler reschedules
    got = np.concatenate(client.gather(futures), axis=-1)
    xs = grid(n, chunk).compute(scheduler="sync")
    same_bits(got, scalar.jacobian(xs)[1])
    client.wait_for_workers(2, timeout=60)
    assert victim not in client.run(os.getpid).values()


def test_cluster_corrupted_equation_is_an_error(client, scalar, monkeypatch):
    damaged_digests = set()

    def damaged(self):
        # The graph is pickled more than once on its way (client, scheduler): damage it
        # the first time only, so that a second flip cannot repair it.
        if self.digest in damaged_digests:
            return (dx._revive, (self.data,))
        data = bytearray(self.data)
        data[len(data) // 2] ^= 0xFF
        damaged_digests.add(dx._Shipped(None, bytes(data)).digest)
        return (dx._revive, (bytes(data),))

    client.wait_for_workers(2, timeout=60)
    pids = client.run(os.getpid)
    monkeypatch.setattr(dx._Shipped, "__reduce__", damaged)  # damaged on the way out
    f = dx.evaluate(scalar, grid(1000, 250))
    with pytest.raises(ddx.Error) as e:
        client.compute(f, sync=True)
    assert e.value.code in (ddx.errc.archive_corrupt, ddx.errc.bad_archive)
    monkeypatch.undo()
    assert client.run(os.getpid) == pids  # no worker interpreter died
    # The workers go on computing (another equation: the failed keys stay failed).
    other = ddx.equation("x * log(x) + exp(x * y) * cos(y)")
    again = dx.evaluate(other, grid(1000, 200))
    same_bits(client.compute(again, sync=True), other.evaluate(grid(1000, 200).compute()))


def test_cluster_user_functions(client, points):
    """Equations calling Python user functions on a real cluster: text with a bound
    parameter, and a model callable; rebuilt once per worker from the cloudpickled
    recipe, the answers are the in-process bits."""
    f = scaled_exp()
    text = ddx.equation("scaled_exp(x, y) * T + x * y", params=["T"], functions=[f])
    text = text.with_params({"T": 2.0})
    model = ddx.equation(lambda: f(ddx.var("x"), ddx.var("y")) * ddx.var("x"))
    x = da.from_array(points, chunks=(2, 250))
    for eq in (text, model):
        for call in ("evaluate", "hessian"):
            got = client.compute(list(_tuple(getattr(dx, call)(eq, x))), sync=True)
            same_bits(tuple(got), getattr(eq, call)(points))
    # A row per point for the parameter, as in-process.
    rows = {"x": x[0], "y": x[1], "T": da.from_array(points[0] + 1.0, chunks=250)}
    got = client.compute(dx.evaluate(text, rows), sync=True)
    same_bits(got, text.evaluate({"x": points[0], "y": points[1], "T": points[0] + 1.0}))
    (key,) = equation_keys(dx.evaluate(model, x))
    digest = key.removeprefix("ddx-equation-")
    stats = [s[digest] for s in client.run(dx.worker_stats).values() if digest in s]
    assert stats and all(s["deserialised"] == 1 for s in stats), stats  # once per worker


def test_cluster_unpicklable_user_function_is_a_ddx_error(client, points):
    """A user function ``cloudpickle`` cannot carry, on a real cluster: the call made
    while the client is the scheduler refuses at once with ``user_function`` naming the
    function, the pickling failure as ``__cause__`` (not ``distributed``'s own
    serialisation ``TypeError``); a graph built for threads and computed on the cluster
    anyway fails its tasks with the same ``ddx.Error``. The threads still run it."""
    locked = ddx.equation("scaled_exp(x, y) + x * y", functions=[scaled_exp(_Locked())])
    x = da.from_array(points, chunks=(2, 250))
    with pytest.raises(ddx.Error) as e:
        dx.jacobian(locked, x)
    assert e.value.code is ddx.errc.user_function
    assert "`scaled_exp`" in str(e.value) and "cloudpickle" in str(e.value), str(e.value)
    assert isinstance(e.value.__cause__, TypeError), repr(e.value.__cause__)
    with dask.config.set(scheduler="threads"):
        f, j = dx.jacobian(locked, x)
        same_bits(dask.compute(f, j), locked.jacobian(points))
    with pytest.raises(ddx.Error) as e:
        client.compute([f, j], sync=True)
    assert e.value.code is ddx.errc.user_function
    assert "`scaled_exp`" in str(e.value), str(e.value)


def _tuple(a):
    return a if isinstance(a, tuple) else (a,)


def test_cluster_assign(client, scalar, points):
    frame = pd.DataFrame({"x": points[0], "y": points[1]})
    lazy = dx.assign(scalar, dd.from_pandas(frame, npartitions=5), want=ddx.Want.HESSIAN)
    pd.testing.assert_frame_equal(
        client.compute(lazy, sync=True), dx.assign(scalar, frame, want=ddx.Want.HESSIAN)
    )


# ---------------------------------------------------------------------------------------
# Parameters: parameter rows after the symbol rows, rows one by one, broadcast rows, and
# parameter columns of a frame. The truth: the in-process call on the same spelling.


def misra() -> ddx.Equation:
    """NIST Misra1a's residual: symbols b1, b2; the observation (x, y) as parameters."""
    return ddx.equation("y - b1 * (1 - exp(-b2 * x))", params=["x", "y"])


def observations(count: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(23)
    x = rng.uniform(70, 800, count)
    return x, 240 * (1 - np.exp(-5.5e-4 * x)) + rng.normal(0, 0.1, count)


def test_parameter_rows_every_local_scheduler(scheduler):
    eq = misra()
    assert eq.symbols == ["b1", "b2"] and eq.parameters == ["x", "y"]
    x, y = observations(1000)
    b = [238.0, 5.6e-4]
    stacked = np.vstack([np.full(1000, b[0]), np.full(1000, b[1]), x, y])
    lazy_x, lazy_y = da.from_array(x, chunks=300), da.from_array(y, chunks=250)
    spellings = [
        # (symbols + parameters, points), the rows split across chunks on purpose
        (da.from_array(stacked, chunks=(1, 128)), stacked),
        # row by row: numbers and a length-1 row broadcast, Dask and NumPy rows
        ([b[0], [b[1]], lazy_x, y], [b[0], [b[1]], x, y]),
        # a length-1 Dask row is broadcast as a length-1 NumPy row is (the fresh-user
        # tester: it was refused with column_length)
        ([da.from_array(np.array([b[0]])), b[1], lazy_x, y], [b[0], b[1], x, y]),
        # by name, in any order
        ({"y": lazy_y, "b2": b[1], "x": lazy_x, "b1": b[0]}, {"y": y, "b2": b[1], "x": x, "b1": b[0]}),
    ]
    # A NumPy row before the Dask rows: the Dask rows' chunks are kept.
    _, j = dx.jacobian(eq, [b[0], b[1], x, lazy_y])
    assert j.chunks[1] == lazy_y.chunks[0] == (250,) * 4
    for lazy, eager in spellings:
        for call in CALLS:
            want = getattr(eq, call)(eager)
            got = dask.compute(*_as_tuple(getattr(dx, call)(eq, lazy)))
            same_bits(got, want)
        same_bits(dask.compute(*dx.vjp(eq, [2.0], lazy)), eq.vjp([2.0], eager))
        same_bits(
            dask.compute(*dx.jvp(eq, [1.0, -3.0], lazy)), eq.jvp([1.0, -3.0], eager)
        )
    # The Jacobian in closed form: -(1 - e^{-b2 x}), -b1 x e^{-b2 x}.
    _, jac = dask.compute(*dx.jacobian(eq, spellings[1][0]))
    e = np.exp(-b[1] * x)
    assert np.allclose(jac[0], -(1 - e), rtol=1e-14, atol=0)
    assert np.allclose(jac[1], -b[0] * x * e, rtol=1e-13, atol=0)
    # A bound equation takes the symbol rows alone, its parameters broadcast.
    bound = eq.with_params([300.0, 1.0])
    sym = da.from_array(stacked[:2], chunks=(2, 400))
    same_bits(dask.compute(*dx.jacobian(bound, sym)), bound.jacobian(stacked[:2]))


def test_parameter_refusals_are_errors_now():
    eq = misra()
    x, _ = observations(100)
    lazy = da.from_array(x, chunks=30)
    cases = [
        (da.ones((3, 10)), ddx.errc.wrong_arity),  # neither n nor n + q rows
        (da.ones((2, 10)), ddx.errc.short_point),  # the parameters unbound
        ([1.0, 2.0, lazy, da.ones(7)], ddx.errc.column_length),
        ([1.0, 2.0, 3.0, 4.0], ddx.errc.wrong_arity),  # no row with a point axis
        ([1.0, 2.0, lazy, np.ones((2, 100))], ddx.errc.wrong_arity),
        ({"b1": 1.0, "b2": 2.0, "x": lazy}, ddx.errc.short_point),  # y unbound
        ({"b1": 1.0, "b2": 2.0, "x": lazy, "z": 1.0}, ddx.errc.unknown_symbol),
        ([10**400, 2.0, lazy, lazy], ddx.errc.too_large),  # was a raw OverflowError
    ]
    for given, code in cases:
        with pytest.raises(ddx.Error) as e:
            dx.jacobian(eq, given)
        assert e.value.code is code, given
    with pytest.raises(ddx.Error) as e:
        dx.jacobian(eq, da.ones((3, 10)))
    assert "2 parameters (x, y)" in str(e.value)


def arrhenius() -> ddx.Equation:
    """A rate with the temperature `T` as a parameter: symbols a, b."""
    return ddx.equation("a * exp(-b / T)", params=["T"])


def test_assign_reads_parameter_columns(scheduler):
    eq = arrhenius()
    rng = np.random.default_rng(29)
    frame = pd.DataFrame(
        {"T": rng.uniform(250, 400, 600), "a": rng.uniform(1, 2, 600), "b": rng.uniform(10, 90, 600)}
    )
    out = dx.assign(eq, frame)
    assert list(out.columns) == ["T", "a", "b", "f", "df/da", "df/db"]  # no partial in T
    f, j = eq.jacobian({c: frame[c].to_numpy() for c in ("a", "b", "T")})
    same_bits(out["f"].to_numpy(), f)
    same_bits(out["df/db"].to_numpy(), j[1])
    t, a, b = (frame[c].to_numpy() for c in ("T", "a", "b"))
    assert np.allclose(out["df/da"], np.exp(-b / t), rtol=1e-15, atol=0)
    assert np.allclose(out["df/db"], -a / t * np.exp(-b / t), rtol=1e-15, atol=0)
    lazy = dx.assign(eq, dd.from_pandas(frame, npartitions=3), want=ddx.Want.HESSIAN)
    pd.testing.assert_frame_equal(lazy.compute(), dx.assign(eq, frame, want=ddx.Want.HESSIAN))
    # Without the column: the bound value, broadcast; unbound, refused when built.
    bound = eq.with_params([300.0])
    no_t = frame[["a", "b"]]
    same_bits(dx.assign(bound, no_t)["f"].to_numpy(), bound.jacobian(no_t.to_numpy().T)[0])
    # A column wins over the bound value.
    same_bits(dx.assign(bound, frame)["f"].to_numpy(), f)
    for refused in (no_t, dd.from_pandas(no_t, npartitions=2)):
        with pytest.raises(ddx.Error) as e:
            dx.assign(eq, refused)
        assert e.value.code is ddx.errc.short_point and "T" in str(e.value)
    with pytest.raises(ddx.Error) as e:
        dx.assign(eq, pd.concat([frame, frame[["T"]]], axis=1))
    assert e.value.code is ddx.errc.duplicate_symbol


def test_cluster_parameter_rows_and_columns(client):
    eq = misra().compile()
    n = 200_000
    t = da.arange(n, chunks=40_000) / n
    x, y = 70 + 730 * t, 240 * (1 - da.exp(-5.5e-4 * (70 + 730 * t)))
    rows = {"b1": 238.0, "b2": 5.6e-4, "x": x, "y": y}
    got = client.compute(list(dx.jacobian(eq, rows)), sync=True)
    eager = {k: v if isinstance(v, float) else v.compute(scheduler="sync") for k, v in rows.items()}
    same_bits(tuple(got), eq.jacobian(eager))
    frame = pd.DataFrame({"T": np.linspace(250, 400, 1000), "a": 1.5, "b": np.linspace(10, 90, 1000)})
    lazy = dx.assign(arrhenius(), dd.from_pandas(frame, npartitions=4))
    pd.testing.assert_frame_equal(client.compute(lazy, sync=True), dx.assign(arrhenius(), frame))
