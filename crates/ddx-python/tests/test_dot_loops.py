"""A dense quadratic form and a linear layer through Python, interpreted and compiled.

Their lanes are almost all long sums of inputs times constants, which the JIT computes in
loops over a table of weights (issue 20, `jit::dots` in the Rust crate). Whatever code it
makes, a compiled kernel answers the interpreter's bits; here that is checked through the
Python API, against NumPy's closed forms too (the gradient ``Qx + c``, the Hessian ``Q``
exactly, the Jacobian of ``Ax + b`` exactly ``A``).
"""

from __future__ import annotations

import numpy as np

import ddx

N = 48


def problem(seed: int = 7):
    rng = np.random.default_rng(seed)
    q = rng.uniform(-1.0, 1.0, (N, N))
    q = (q + q.T) / 2.0
    c = rng.uniform(-1.0, 1.0, N)
    return q, c


def quadratic(q: np.ndarray, c: np.ndarray) -> ddx.Equation:
    """``½ xᵀQx + cᵀx``, summed over the upper triangle row by row."""

    def build():
        # Zero-padded names: symbols are ordered by name.
        x = [ddx.var(f"x{i:02d}") for i in range(N)]
        f = None
        for i in range(N):
            s = x[i] * float(q[i, i] * 0.5) + float(c[i])
            for j in range(i + 1, N):
                s = s + x[j] * float(q[i, j])
            t = x[i] * s
            f = t if f is None else f + t
        return f

    return ddx.equation(build)


def bits(a) -> list[int]:
    return np.asarray(a, dtype=np.float64).view(np.uint64).ravel().tolist()


def compile_and_check_jacobians(eq: ddx.Equation, xs: np.ndarray, want: ddx.Want) -> None:
    """Compiles ``eq`` (per-point kernels, up to ``want``) and checks that its Jacobians at
    the columns of ``xs``, one by one and as a batch, keep the interpreter's bits."""
    before = [eq.jacobian(xs[:, k]) for k in range(xs.shape[1])]
    batch_before = eq.jacobian(xs)
    eq.compile(points=1)
    assert eq.wait_for_kernel(want=want) is ddx.has_jit
    for k in range(xs.shape[1]):
        value, gradient = eq.jacobian(xs[:, k])
        assert bits(value) == bits(before[k][0])
        assert bits(gradient) == bits(before[k][1])
    values, gradients = eq.jacobian(xs)
    assert bits(values) == bits(batch_before[0])
    assert bits(gradients) == bits(batch_before[1])


def test_a_quadratic_forms_compiled_gradient_and_hessian_are_the_interpreters():
    q, c = problem()
    eq = quadratic(q, c)
    rng = np.random.default_rng(11)
    xs = rng.uniform(-2.0, 2.0, (N, 5))
    xs[:, 4] = [(-0.0, 1e300, 5e-324, 3.5)[i % 4] for i in range(N)]
    hessian_before = eq.hessian(xs[:, 0])
    compile_and_check_jacobians(eq, xs, ddx.Want.HESSIAN)
    value, gradient, hessian = eq.hessian(xs[:, 0])
    assert bits(hessian) == bits(hessian_before[2])
    # Closed forms: the gradient Qx + c to rounding, the Hessian Q exactly.
    x = xs[:, 0]
    exact = q @ x + c
    scale = np.abs(q) @ np.abs(x) + 1.0
    assert np.all(np.abs(gradient - exact) <= 1e-13 * scale)
    assert np.abs(value - (0.5 * x @ q @ x + c @ x)) <= 1e-12 * (np.abs(x) @ np.abs(q) @ np.abs(x) + 1.0)
    assert bits(hessian) == bits(q)


def test_a_linear_layers_compiled_jacobian_is_its_matrix():
    rng = np.random.default_rng(5)
    a = rng.uniform(-1.0, 1.0, (12, N))
    b = rng.uniform(-1.0, 1.0, 12)

    def build():
        x = [ddx.var(f"x{j:02d}") for j in range(N)]
        rows = []
        for i in range(12):
            s = x[0] * float(a[i, 0]) + float(b[i])
            for j in range(1, N):
                s = s + x[j] * float(a[i, j])
            rows.append(s)
        return rows

    eq = ddx.equation(build)
    x = rng.uniform(-3.0, 3.0, N)
    values, jacobian = eq.jacobian(x)
    eq.compile(points=1)
    got_values, got_jacobian = eq.jacobian(x)
    assert bits(got_values) == bits(values)
    assert bits(got_jacobian) == bits(jacobian)
    assert bits(got_jacobian) == bits(a)
    assert np.all(np.abs(got_values - (a @ x + b)) <= 1e-13 * (np.abs(a) @ np.abs(x) + 1.0))


def test_a_triangular_sum_over_computed_values_compiles_to_the_interpreters_bits():
    """``f = Σᵢ xᵢ Σ_{j>i} wᵢⱼ log xⱼ``: the inner sums weight computed values (the logs),
    which the kernel stores once and reads in loops, each row a window of one sequence;
    the gradient's adjoints ``Σ_{i<k} xᵢ wᵢₖ`` are loops over inputs. Bits against the
    interpreter, per point and in a batch, and the closed form
    ``∂f/∂xₖ = Σ_{j>k} wₖⱼ log xⱼ + (Σ_{i<k} xᵢ wᵢₖ) / xₖ`` to rounding."""
    rng = np.random.default_rng(38)
    w = np.triu(rng.uniform(-1.0, 1.0, (N, N)), k=1)

    def build():
        x = [ddx.var(f"x{i:02d}") for i in range(N)]
        logs = [ddx.log(v) for v in x]
        f = None
        for i in range(N - 1):
            s = logs[i + 1] * float(w[i, i + 1])
            for j in range(i + 2, N):
                s = s + logs[j] * float(w[i, j])
            t = x[i] * s
            f = t if f is None else f + t
        return f

    eq = ddx.equation(build)
    xs = rng.uniform(0.05, 3.0, (N, 4))
    xs[:, 3] = [(1e-300, 7.0, 5e-324, 0.5)[i % 4] for i in range(N)]
    compile_and_check_jacobians(eq, xs, ddx.Want.JACOBIAN)
    x = xs[:, 0]
    _, gradient = eq.jacobian(x)
    logs = np.log(x)
    exact = w @ logs + (x @ w) / x
    scale = np.abs(w) @ np.abs(logs) + (np.abs(x) @ np.abs(w)) / x + 1.0
    assert np.all(np.abs(gradient - exact) <= 1e-13 * scale)


def test_compiled_batches_run_on_the_engine_measured_faster():
    """Under a compiling backend, a lane's first batches time its kernel against the block
    interpreter (three trials of 256 points each) and the faster runs every later batch:
    ``jit_status["lanes"]["jacobian"]["batch_engine"]`` says which. Every answer keeps the
    interpreter's bits, before, during and after the trials; which engine wins is the
    machine's to say, so only that one was chosen is checked."""
    q, c = problem()
    eq = quadratic(q, c)
    xs = np.random.default_rng(3).uniform(-1.0, 1.0, (N, 1500))
    values, gradients = eq.jacobian(xs)
    assert eq.jit_status["lanes"] == {}, "no lane status while nothing compiles"
    eq.compile(points=1024)
    assert eq.wait_for_kernel() is ddx.has_jit
    lanes = eq.jit_status["lanes"]
    if ddx.has_jit:
        assert set(lanes["jacobian"]) == {
            "level",
            "compiled",
            "loaded",
            "error",
            "refined",
            "refining",
            "batch_engine",
        }
        assert lanes["jacobian"]["level"] == "speed"
        assert lanes["jacobian"]["error"] is None
        assert lanes["jacobian"]["batch_engine"] is None, "no batch yet"
    # 1500 points: two trials of each engine, then one more and the choice.
    for _ in range(3):
        v, g = eq.jacobian(xs)
        assert bits(v) == bits(values)
        assert bits(g) == bits(gradients)
    if ddx.has_jit:
        lane = eq.jit_status["lanes"]["jacobian"]
        assert lane["batch_engine"] in ("kernel", "interpreter")
        assert lane["compiled"] >= 1
