"""``remember=True``: the last-call cache, against an equation without one, bit for bit.

Random walks of points (repeat, one symbol moved, several, back to an earlier point,
signed zeros, NaN payloads) through every single-point call; then the counts that show
a repeat is served and a moved point re-swept, and that batches are never remembered.
"""

from __future__ import annotations

import threading

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import ddx


def model():
    a, b, c = ddx.var("a"), ddx.var("b"), ddx.var("c")
    r = a * ddx.exp(-b * c) - 1.0
    return ddx.select(r < 0.3, r * r, ddx.sin(a * b) + ddx.sqrt(c * c + 1.0)) + 1.0 / c


def system():
    a, b, c = ddx.var("a"), ddx.var("b"), ddx.var("c")
    return (a * b + c, ddx.exp(a) * ddx.cos(c), b / c)


def bits(value) -> list[int]:
    """The bits of every number in an answer (a float, an array, or a tuple of them)."""
    if isinstance(value, tuple):
        return [b for v in value for b in bits(v)]
    return np.asarray(value, dtype=np.float64).reshape(-1).view(np.int64).tolist()


def calls(eq, x, v, w):
    """Every single-point call at ``x`` (direction ``v``, weights ``w``), as bits."""
    out = [
        bits(eq(x)),
        bits(eq.evaluate({"c": x[2], "a": x[0], "b": x[1]})),
        bits(eq.jacobian(x)),
        bits(eq.gradient(np.array(x))),
        bits(eq.hessian(x)),
        bits(eq.jvp(v, x)),
        bits(eq.vjp(w, x)),
    ]
    if eq.outputs == 1 and not isinstance(eq(x), np.ndarray):
        out.append(bits(eq.hvp(v, x)))
    return out


coordinate = st.one_of(
    st.floats(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, float("inf"), float("nan")]),
    st.integers(1, 2**51 - 1).map(
        lambda p: np.array([0x7FF8_0000_0000_0000 | p], dtype=np.int64).view(np.float64)[0]
    ),
)
step = st.tuples(st.integers(0, 5), st.integers(0, 2), coordinate)


@settings(max_examples=40, deadline=None)
@given(st.lists(step, min_size=1, max_size=25), st.lists(coordinate, min_size=3, max_size=3))
def test_remembered_calls_equal_the_plain_ones_bit_for_bit(steps, start):
    for build in (model, system):
        plain = ddx.equation(build)
        remembered = ddx.equation(build, remember=True)
        assert remembered.remember and not plain.remember
        x, v, w = list(start), [1.0, -0.5, 2.0], [0.5] * plain.outputs
        history = [list(x)]
        for kind, i, c in steps:
            if kind == 1:
                x[i] = c
            elif kind == 2:
                x = [c, x[1], c]
            elif kind == 3:
                x = list(history[i % len(history)])
            elif kind == 4:
                v[i] = c
            # kind 0 and 5: the same point again
            history.append(list(x))
            assert calls(remembered, x, v, w) == calls(plain, x, v, w), (x, v)


def test_a_repeat_is_served_and_a_moved_point_resweeps():
    f = ddx.equation(model, remember=True)
    x = [0.7, 0.2, 1.5]
    f(x)
    f.gradient(x)  # its own lane
    f(x)  # nothing swept
    stats = f.cache_stats()
    assert stats is not None
    assert (stats["sweeps"], stats["hits"], stats["resweeps"]) == (2, 1, 0)
    f([0.7, 0.2, 1.25])  # one symbol moved
    assert f.cache_stats()["resweeps"] == 1
    assert ddx.equation(model).cache_stats() is None


def test_batches_are_not_remembered():
    f = ddx.equation(model, remember=True)
    xs = np.array([[0.7, 0.7], [0.2, 0.2], [1.5, 1.5]])
    f.jacobian(xs)
    f(xs)
    assert f.cache_stats() == {"hits": 0, "resweeps": 0, "sweeps": 0, "busy": 0, "instructions": 0}


def test_decorator_text_and_options_keep_remembering():
    @ddx.equation(remember=True)
    def g():
        return ddx.var("x") * ddx.sin(ddx.var("y"))

    assert g.remember
    g([1.0, 2.0])
    g([1.0, 2.0])
    assert g.cache_stats()["hits"] == 1
    g.options = ddx.Options(codegen=ddx.Codegen(contract=True))
    assert g.remember
    assert bits(g([1.0, 2.0])) == bits(ddx.equation("x * sin(y)")([1.0, 2.0]))
    t = ddx.equation("x**2 + y", remember=True)
    assert t.remember and t([3.0, 1.0]) == 10.0 and t([3.0, 1.0]) == 10.0
    assert t.cache_stats()["hits"] == 1


def test_the_buffer_call_is_remembered():
    f = ddx.equation(model, remember=True)
    call = f.buffer(np.array([0.7, 0.2, 1.5]))
    call()
    first = bits(call.jacobian)
    call()
    assert f.cache_stats()["hits"] >= 1
    assert bits(call.jacobian) == first


def test_threads_share_one_remembering_equation():
    f = ddx.equation(model, remember=True)
    plain = ddx.equation(model)
    points = [[0.7, 0.2, 1.5], [0.7, 0.2, 1.25], [0.1, 0.9, 2.0]]
    truth = [bits(plain.jacobian(p)) for p in points]
    failures = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(300):
            k = int(rng.integers(len(points)))
            if bits(f.jacobian(points[k])) != truth[k]:
                failures.append(k)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert failures == []
