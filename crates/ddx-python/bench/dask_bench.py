"""Throughput of ``ddx.dask``: one chunked 10⁷-point Jacobian in-process, on the threaded
scheduler and on a two-worker ``distributed.LocalCluster`` on loopback; and the per-task
overhead (tiny chunks). Prints the table BENCHMARKS.md quotes ("Dask").

    .venv/bin/python crates/ddx-python/bench/dask_bench.py   # after scripts/test made .venv

Every figure is the best of ``--repeat`` runs (this machine is shared). On the cluster the
points are made on the workers and persisted before the clock starts. The per-chunk overhead
is ``(time of --tiny chunks of 10 points − time of one chunk of the same points) / (--tiny −
1)``, beside the same for a trivial Dask task, so that Dask's own share shows.
"""

from __future__ import annotations

import argparse
import time
import uuid

import dask
import dask.array as da
import distributed
import numpy as np

import ddx
import ddx.dask as dx

MODEL = "x * log(x) + exp(x * y) * sin(y)"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def grid(n: int, chunk: int):
    t = da.arange(n, chunks=chunk) / n
    return da.stack([0.5 + t, 2.0 - t])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=10_000_000)
    ap.add_argument("--chunk", type=int, default=500_000)
    ap.add_argument("--tiny", type=int, default=1_000, help="tasks of the overhead runs")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    n, chunk = a.points, a.chunk
    eq = ddx.equation(MODEL).compile()
    t = np.arange(n) / n
    xs = np.stack([0.5 + t, 2.0 - t])
    x_mem = da.from_array(xs, chunks=(2, chunk))
    rows = []

    s = best(lambda: eq.jacobian(xs), a.repeat)
    rows.append(("in-process `eq.jacobian(xs)` (rayon, both cores)", s, n / s))
    s = best(lambda: dask.compute(*dx.jacobian(eq, x_mem), scheduler="threads"), a.repeat)
    rows.append((f"threaded scheduler, {n // chunk} chunks of {chunk}", s, n / s))

    # Tiny chunks: the cost of a task beyond its points, threads.
    tiny_pts = a.tiny * 10
    x_tiny = da.from_array(xs[:, :tiny_pts], chunks=(2, 10))
    x_one = da.from_array(xs[:, :tiny_pts], chunks=(2, tiny_pts))
    s_tiny = best(lambda: dask.compute(*dx.jacobian(eq, x_tiny), scheduler="threads"), a.repeat)
    s_one = best(lambda: dask.compute(*dx.jacobian(eq, x_one), scheduler="threads"), a.repeat)
    overhead_threads = (s_tiny - s_one) / (a.tiny - 1)

    # The same with a trivial task per chunk (no ddx): what Dask itself costs a chunk.
    bare_tiny = best(lambda: x_tiny.map_blocks(np.negative).compute(scheduler="threads"), a.repeat)
    bare_one = best(lambda: x_one.map_blocks(np.negative).compute(scheduler="threads"), a.repeat)
    bare_threads = (bare_tiny - bare_one) / (a.tiny - 1)

    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
        worker_dashboard_address=None,
    ) as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        # The points are made on the workers and kept there, so the arms time the ddx
        # tasks (and what Dask does around them), not the making of the grid. Each
        # repetition gets points under a new name: the same keys again would be answered
        # from the cluster's memory.
        def timed(x, work, gather=False):
            times = []
            for _ in range(a.repeat):
                xr = client.persist(x.map_blocks(np.copy, name=f"points-{uuid.uuid4().hex}"))
                distributed.wait(xr)
                outs = work(xr)
                t0 = time.perf_counter()
                if gather:
                    client.compute(outs, sync=True)
                else:
                    done = client.persist(outs)
                    distributed.wait(done)
                    del done
                times.append(time.perf_counter() - t0)
                del xr, outs
            return min(times)

        def jac(xr):
            return list(dx.jacobian(eq, xr))

        xg = client.persist(grid(n, chunk))
        distributed.wait(xg)
        s = timed(xg, jac)
        rows.append(("LocalCluster, 2 workers × 1 thread, answers left on the workers", s, n / s))
        s = timed(xg, jac, gather=True)
        rows.append(("LocalCluster, the same, answers gathered to the client", s, n / s))
        del xg

        xt = client.persist(grid(tiny_pts, 10))
        x1 = client.persist(grid(tiny_pts, tiny_pts))
        distributed.wait([xt, x1])
        # A ddx chunk is three tasks (the call, and a view for each of f and J).
        overhead_cluster = (timed(xt, jac) - timed(x1, jac)) / (a.tiny - 1)

        def bare(xr):
            return [xr.map_blocks(np.negative)]

        bare_cluster = (timed(xt, bare) - timed(x1, bare)) / (a.tiny - 1)

    print(f"ddx {ddx.__version__}, dask {dask.__version__}, distributed {distributed.__version__}")
    print(f"{n:,} points, `{MODEL}` compiled, Jacobian (f and J: 24 bytes a point out, 16 in)")
    print()
    print("| arm | seconds | points per second |")
    print("|---|---|---|")
    for name, s, r in rows:
        print(f"| {name} | {s:.3f} | {r / 1e6:.1f} M |")
    print()
    print("| per-chunk overhead (tiny chunks of 10 points) | ddx chunk, µs | a trivial Dask task (`map_blocks(np.negative)`), µs |")
    print("|---|---|---|")
    print(f"| threaded scheduler, {a.tiny} chunks | {overhead_threads * 1e6:.0f} | {bare_threads * 1e6:.0f} |")
    print(
        f"| LocalCluster, 2 workers, {a.tiny} chunks | {overhead_cluster * 1e6:.0f} | {bare_cluster * 1e6:.0f} |"
    )


if __name__ == "__main__":
    main()
