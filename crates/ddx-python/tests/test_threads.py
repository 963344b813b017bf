"""Threads: batch calls release the GIL; one equation serves many threads at once, with the
bits a serial run gives."""

from __future__ import annotations

import threading
import time

import numpy as np

import ddx

from conftest import huber


def test_batches_in_parallel_threads_give_serial_bits():
    eq = huber()
    rng = np.random.default_rng(7)
    batches = [rng.uniform(0.5, 2.5, size=(2, 5000)) for _ in range(8)]
    serial = [eq.hessian(b) for b in batches]
    results: list = [None] * len(batches)

    def work(k: int) -> None:
        for _ in range(3):
            results[k] = eq.hessian(batches[k])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(batches))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, serial):
        for a, b in zip(got, want):
            assert a.tobytes() == b.tobytes()


def test_a_long_batch_does_not_block_small_calls():
    eq = huber()
    big = np.random.default_rng(3).uniform(0.5, 2.5, size=(2, 2_000_000))
    done = threading.Event()
    small_calls = 0
    expected = eq.jacobian([2.0, 0.5])

    def long_batch() -> None:
        eq.jacobian(big)
        done.set()

    t = threading.Thread(target=long_batch)
    t.start()
    while not done.is_set():
        got = eq.jacobian([2.0, 0.5])
        assert got[0] == expected[0] and got[1].tolist() == expected[1].tolist()
        small_calls += 1
        time.sleep(0)
    t.join()
    # The batch ran without the GIL: this thread kept calling while it did.
    assert small_calls > 10


def test_buffers_on_several_threads():
    eq = huber()
    xs = [np.random.default_rng(k).uniform(0.5, 2.5, size=(2, 3000)) for k in range(4)]
    calls = [eq.buffer(x) for x in xs]
    serial = [eq.jacobian(x) for x in xs]
    threads = [threading.Thread(target=c) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c, (value, jac) in zip(calls, serial):
        assert c.value.tobytes() == value.tobytes() and c.jacobian.tobytes() == jac.tobytes()


def test_options_assigned_while_batches_run():
    eq = ddx.equation("x * log(x) + y * exp(x * y)")
    xs = np.random.default_rng(5).uniform(0.5, 1.5, size=(2, 200_000))
    expected = eq.jacobian(xs)
    stop = threading.Event()
    errors: list = []

    def batches() -> None:
        while not stop.is_set():
            got = eq.jacobian(xs)
            if got[1].tobytes() != expected[1].tobytes():
                errors.append("bits differ")

    t = threading.Thread(target=batches)
    t.start()
    for backend in [ddx.Backend.COMPILE, ddx.Backend.INTERPRET, ddx.Backend.ADAPT] * 2:
        eq.options = ddx.Options(backend=backend)
        time.sleep(0.01)
    eq.compile()
    stop.set()
    t.join()
    assert errors == []


def test_a_batch_through_python_code_runs_on_the_calling_thread():
    """A batch past ``PARALLEL_WORK`` instruction-points is split across rayon's threads,
    but not one calling a Python user function: the GIL would serialise the calls anyway,
    and each call on a thread Python did not start would make and discard a Python
    thread state (16× slower per point). Every call of user code is on the caller's
    thread, from the main thread and from another Python thread; the answers are those of
    the same model with the built-in operation."""
    seen: set[int] = set()

    def value(x: float) -> float:
        seen.add(threading.get_ident())
        return float(np.sinh(x))

    def first(x: float) -> float:
        seen.add(threading.get_ident())
        return float(np.cosh(x))

    f = ddx.function("noted_sinh", 1, value, first)
    eq = ddx.equation(lambda: f(ddx.var("x") * ddx.var("y")) + ddx.var("y"))
    builtin = ddx.equation(lambda: ddx.sinh(ddx.var("x") * ddx.var("y")) + ddx.var("y"))
    points = 2**18 + 1001  # past ddx::PARALLEL_WORK (2^18) for any lane of one instruction
    xs = np.random.default_rng(11).uniform(-1, 1, (2, points))
    want = builtin.jacobian(xs)
    got = eq.jacobian(xs)
    assert seen == {threading.get_ident()}
    for g, w in zip(got, want):
        assert np.allclose(g, w, rtol=1e-15, atol=1e-15)
    seen.clear()
    idents: list[int] = []

    def other() -> None:
        idents.append(threading.get_ident())
        eq.evaluate(xs)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == set(idents)
