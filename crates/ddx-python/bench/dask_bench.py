"""Throughput of ``ddx.dask``: one chunked 10⁷-point Jacobian in-process, on the threaded
scheduler and on a two-worker ``distributed.LocalCluster`` on loopback; and the per-task
overhead (tiny chunks). Prints the table BENCHMARKS.md quotes ("Dask").

    .venv/bin/python crates/ddx-python/bench/dask_bench.py   # after scripts/test made .venv

Every figure is the best of ``--repeat`` runs (this machine is shared).
"""

from __future__ import annotations

import argparse
import time

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

    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
        worker_dashboard_address=None,
    ) as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        xg = grid(n, chunk)
        f, j = dx.jacobian(eq, xg)

        def on_cluster():  # points made and answers kept on the workers
            done = client.persist([f, j])
            distributed.wait(done)
            del done

        def gathered():  # the answers brought back to the client
            client.compute([f, j], sync=True)

        s = best(on_cluster, a.repeat)
        rows.append(("LocalCluster, 2 workers × 1 thread, answers left on the workers", s, n / s))
        s = best(gathered, a.repeat)
        rows.append(("LocalCluster, the same, answers gathered to the client", s, n / s))

        xt = grid(tiny_pts, 10)
        x1 = grid(tiny_pts, tiny_pts)
        ft, jt = dx.jacobian(eq, xt)
        f1, j1 = dx.jacobian(eq, x1)
        c_tiny = best(lambda: distributed.wait(client.persist([ft, jt])), a.repeat)
        c_one = best(lambda: distributed.wait(client.persist([f1, j1])), a.repeat)
        # A chunk is three tasks here (arange, stack+rechunk, the ddx call and its views):
        # this is per ddx chunk, everything it brings along included.
        overhead_cluster = (c_tiny - c_one) / (a.tiny - 1)

    print(f"ddx {ddx.__version__}, dask {dask.__version__}, distributed {distributed.__version__}")
    print(f"{n:,} points, `{MODEL}` compiled, Jacobian (f and J: 24 bytes a point out, 16 in)")
    print()
    print("| arm | seconds | points per second |")
    print("|---|---|---|")
    for name, s, r in rows:
        print(f"| {name} | {s:.3f} | {r / 1e6:.1f} M |")
    print()
    print("| per-task overhead (tiny chunks of 10 points) | µs per chunk |")
    print("|---|---|")
    print(f"| threaded scheduler, {a.tiny} chunks | {overhead_threads * 1e6:.0f} |")
    print(f"| LocalCluster, 2 workers, {a.tiny} chunks | {overhead_cluster * 1e6:.0f} |")


if __name__ == "__main__":
    main()
