"""Per-call and batch timings of the Python package against JAX and CasADi, in one run.

Run by ``crates/ddx-python/bench/run.sh`` (which builds the release wheel into
compare/.venv, where JAX and CasADi are). The model is the README's Huber loss of
``a·exp(−b·t)`` over four observations; the points are the same for every arm.

- ``call()``: a ``Call`` bound by ``f.buffer(x)`` (value and Jacobian), called in a loop, with
  the next point written into ``call.x`` each time (and without, to show the write's share);
- allocating ``f.jacobian(point)``, the point a tuple of two floats;
- JAX: ``jax.jit(jax.grad(loss))`` called per point (float64), ``block_until_ready``;
- CasADi: an ``SX`` ``Function`` returning the loss and its gradient, called per point;
- a ``(2, 10⁶)`` batch Jacobian from NumPy (allocating, and into a bound ``Call``) against
  the same Rust ``jacobian_batch`` (``cargo run --release -p ddx --example huber_batch``),
  interpreted and compiled.

Per-call numbers are the best of 7 loops of 20 000 calls; batch numbers the median of 7.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import ddx

DATA = [(0.0, 2.00), (1.0, 1.21), (2.0, 0.74), (3.0, 0.45)]
DELTA = 0.05
CALLS = 20_000
REPS = 7
BATCH = 1_000_000


def huber() -> ddx.Equation:
    @ddx.equation
    def model():
        a, b = ddx.var("a"), ddx.var("b")
        loss = 0.0
        for t, y in DATA:
            r = y - a * ddx.exp(-b * t)
            loss = loss + ddx.select(abs(r) < DELTA, r * r, DELTA * (2.0 * abs(r) - DELTA))
        return loss

    return model


def sequence(n: int) -> np.ndarray:
    """The points, as ``examples/huber_batch.rs`` makes them: shape (2, n)."""
    k = np.arange(n)
    a = 1.5 + (k % 1000) / 1000.0
    b = 0.3 + ((k * 7919) % 1000) / 2500.0
    return np.stack([a, b])


def per_call(loop) -> float:
    """Best of REPS runs of ``loop()`` (CALLS calls), in ns per call."""
    best = float("inf")
    for _ in range(REPS):
        start = time.perf_counter_ns()
        loop()
        best = min(best, (time.perf_counter_ns() - start) / CALLS)
    return best


def median_ms(f) -> float:
    f()  # warm: lanes, batch programs
    times = []
    for _ in range(REPS):
        start = time.perf_counter()
        f()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rust", help="the output of the huber_batch example")
    args = parser.parse_args()

    f = huber()
    pts = sequence(CALLS)
    pairs = [(float(a), float(b)) for a, b in pts.T]
    rows = []

    call = f.buffer(np.array(pairs[0]))
    x = call.x

    def bound_moving():
        for a, b in pairs:
            x[0] = a
            x[1] = b
            call()

    def bound_still():
        for _ in range(CALLS):
            call()

    def allocating():
        jac = f.jacobian
        for p in pairs:
            jac(p)

    rows.append(("ddx `call()` on a bound buffer, next point written into `call.x`", per_call(bound_moving)))
    rows.append(("ddx `call()` on a bound buffer, the point left as it is", per_call(bound_still)))
    rows.append(("ddx allocating `f.jacobian((a, b))`", per_call(allocating)))
    f.compile()
    rows.append(("ddx `call()`, compiled (`f.compile()`)", per_call(bound_moving)))
    rows.append(("ddx allocating `f.jacobian((a, b))`, compiled", per_call(allocating)))
    f.options = ddx.Options()

    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)

        def loss(p):
            total = 0.0
            for t, y in DATA:
                r = y - p[0] * jnp.exp(-p[1] * t)
                total = total + jnp.where(jnp.abs(r) < DELTA, r * r, DELTA * (2 * jnp.abs(r) - DELTA))
            return total

        grad = jax.jit(jax.grad(loss))
        arrays = [np.array(p) for p in pairs]
        grad(arrays[0]).block_until_ready()

        def jax_loop():
            for p in arrays:
                grad(p).block_until_ready()

        rows.append((f"JAX {jax.__version__} `jit(grad)` per point", per_call(jax_loop)))
        np.testing.assert_allclose(np.asarray(grad(arrays[3])), f.jacobian(pairs[3])[1], rtol=1e-12)
    except ImportError:
        rows.append(("JAX (not installed)", float("nan")))

    try:
        import casadi as ca

        xs = ca.SX.sym("x", 2)
        total = 0
        for t, y in DATA:
            r = y - xs[0] * ca.exp(-xs[1] * t)
            total = total + ca.if_else(ca.fabs(r) < DELTA, r * r, DELTA * (2 * ca.fabs(r) - DELTA))
        fn = ca.Function("huber", [xs], [total, ca.gradient(total, xs)])
        arrays = [np.array(p) for p in pairs]

        def casadi_loop():
            for p in arrays:
                fn(p)

        rows.append((f"CasADi {ca.__version__} `Function` (value, gradient) per point", per_call(casadi_loop)))
        np.testing.assert_allclose(np.asarray(fn(arrays[3])[1]).ravel(), f.jacobian(pairs[3])[1], rtol=1e-12)
    except ImportError:
        rows.append(("CasADi (not installed)", float("nan")))

    print("| per point (Huber loss, value and gradient) | ns per call |")
    print("|---|---|")
    for name, ns in rows:
        print(f"| {name} | {ns:.0f} |")

    rust = {}
    if args.rust:
        for line in args.rust.splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "rust":
                rust[parts[1]] = float(parts[2])
    batch = sequence(BATCH)
    print()
    print("| (2, 10⁶) batch Jacobian | Python allocating `f.jacobian(xs)` | Python bound `Call` | Rust `jacobian_batch` | allocating ÷ Rust | bound ÷ Rust |")
    print("|---|---|---|---|---|---|")
    for name, options in (("Interpret", ddx.Options()), ("Compile", ddx.Options(backend="compile", points=BATCH))):
        f.options = options
        f.wait_for_kernel()
        allocating_ms = median_ms(lambda: f.jacobian(batch))
        bound = f.buffer(batch)
        bound_ms = median_ms(bound)
        r = rust.get(name, float("nan"))
        print(f"| {name} | {allocating_ms:.2f} ms | {bound_ms:.2f} ms | {r:.2f} ms | {allocating_ms / r:.3f}× | {bound_ms / r:.3f}× |")


if __name__ == "__main__":
    main()
