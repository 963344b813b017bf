"""Batch throughput through a user function written in Python (``ddx.function``): the
Jacobian batch of ``sq(x) * y + sin(x)`` (``sq`` a Python function with its partial) at
10³ … 10⁶ points. Prints the table BENCHMARKS.md quotes ("Python user functions").

    .venv/bin/python crates/ddx-python/bench/user_batch.py

Every point calls Python twice (``value`` and ``first``) under the GIL. Past
``ddx.PARALLEL_WORK`` instruction-points a batch without user code is split across rayon's
threads; one calling Python code is not (it runs on the caller's thread, which holds a
Python thread state: a call on one of rayon's threads would make and discard one).
Each figure is the best of ``--repeat`` calls (one call at 10⁶ points).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import ddx


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--largest", type=int, default=6, help="the largest size, 10**largest")
    a = ap.parse_args()
    sq = ddx.function("sq", 1, lambda x: x * x, lambda x: 2.0 * x)
    eq = ddx.equation(lambda: sq(ddx.var("x")) * ddx.var("y") + ddx.sin(ddx.var("x")))
    rng = np.random.default_rng(1)
    print("| points | s per call | points/s | µs per point |")
    print("|---|---|---|---|")
    for e in range(3, a.largest + 1):
        p = 10**e
        xs = rng.uniform(-1, 1, (2, p))
        s = best(lambda: eq.jacobian(xs), a.repeat if e < 6 else 1)
        print(f"| 10^{e} | {s:.4f} | {p / s:,.0f} | {s / p * 1e6:.2f} |", flush=True)


if __name__ == "__main__":
    main()
