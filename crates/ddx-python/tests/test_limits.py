"""Dense answers past ``Options.answer_limit`` raise ``errc.too_large`` before anything is
allocated (never a panic or a half-made array), in the allocating calls and in
``buffer``; the limit is the Rust one, and raising it lets the same call through."""

from __future__ import annotations

import numpy as np
import pytest

import ddx


def sum_of_squares(n: int) -> ddx.Equation:
    def model():
        xs = [ddx.var(f"x{i}") for i in range(n)]
        s = 0.0
        for v in xs:
            s = s + v * v
        return s * xs[0]

    return ddx.equation(model)


def test_the_default_is_the_rust_default():
    assert ddx.Options().answer_limit == 1 << 28
    assert ddx.equation("x").options.answer_limit == 1 << 28


def test_a_hessian_batch_past_the_limit_is_refused_before_allocating():
    # 20 000 symbols and 100 points: a 298 GiB Hessian block (the tester's case).
    f = sum_of_squares(20_000)
    with pytest.raises(ddx.Error) as e:
        f.hessian(np.ones((20_000, 100)))
    assert e.value.code is ddx.errc.too_large
    assert "hessian" in str(e.value)
    with pytest.raises(ddx.Error) as e:
        f.buffer(np.ones((20_000, 100)), want=ddx.Want.HESSIAN)
    assert e.value.code is ddx.errc.too_large


def test_the_limit_counts_values_and_can_be_raised():
    f = sum_of_squares(3)
    x = np.linspace(0.5, 1.5, 3 * 5).reshape(3, 5)
    want = f.hessian(x)
    f.options = ddx.Options(answer_limit=3 * 3 * 5 - 1)  # one value short of the Hessian
    with pytest.raises(ddx.Error) as e:
        f.hessian(x)
    assert e.value.code is ddx.errc.too_large
    # The Jacobian (3·5 values) still fits, and answers what it answered before.
    assert f.jacobian(x)[1].tobytes() == want[1].tobytes()
    f.options = ddx.Options(answer_limit=3 * 3 * 5)
    got = f.hessian(x)
    assert all(g.tobytes() == w.tobytes() for g, w in zip(got, want))


def test_large_blocks_within_the_limit_are_made_by_numpy():
    # Past the direct-allocation size (2^16 values), the block comes from NumPy.
    f = ddx.equation("x * y + sin(x)")
    x = np.random.default_rng(1).uniform(-1, 1, (2, 70_000))
    value, grad = f.jacobian(x)
    assert grad.shape == (2, 70_000) and grad.dtype == np.float64 and grad.flags.c_contiguous
    np.testing.assert_array_equal(grad[1], x[0])
    # NumPy's cos may be its own SIMD one: close, not necessarily the same bits.
    np.testing.assert_allclose(grad[0], x[1] + np.cos(x[0]), rtol=1e-15, atol=1e-16)


def test_opt_level_none_is_the_earlier_name_of_off():
    assert ddx.OptLevel.NONE is ddx.OptLevel.OFF
    assert ddx.Codegen(opt_level="NONE").opt_level is ddx.OptLevel.OFF
