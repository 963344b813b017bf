"""``Backend.DEVICE`` from Python: the status, batch calls on the device against the
interpreter (bit for bit where the graph has only arithmetic), device-resident columns,
and the fallback when no device answers.

CI has PoCL (a real OpenCL CPU device); where a machine has no OpenCL device the tests
check the fallback instead: ``device_status`` raises ``no_device`` and every call still
answers the interpreter's bits.
"""

from __future__ import annotations

import numpy as np
import pytest

import ddx

# Arithmetic, comparisons, select, abs, sign, max, min, sqrt: the device computes these
# to the bit, and exp and log (ddx's own); the other transcendentals are the device's own
# math library.
EXACT = "select(abs(a*b - c) < 0.5, (a*b - c)**2, max(a, b) / sqrt(c*c + 1)) + sign(a)*min(b, c)"


def batch(n: int, p: int, seed: int = 7) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, size=(n, p))
    x[:, ::5] = 0.0  # exact zeros: the select and sign branches
    return x


def on_device(f: ddx.Equation, want: ddx.Want = ddx.Want.JACOBIAN) -> ddx.Equation | None:
    """``f`` switched to DEVICE with lane ``want`` built there, or None (after checking
    that the status says why) where no device answers."""
    f.options = ddx.Options(backend=ddx.Backend.DEVICE)
    if f.wait_for_kernel(want=want):
        return f
    with pytest.raises(ddx.Error) as e:
        _ = f.device_status
    assert e.value.code in (ddx.errc.no_device, ddx.errc.device_compile)
    return None


def test_built_with_the_device_backend():
    assert ddx.has_opencl is True


def test_status_is_none_under_other_backends():
    f = ddx.equation("x * y")
    assert f.device_status is None
    f.options = ddx.Options(backend=ddx.Backend.COMPILE)
    assert f.device_status is None


def test_batch_calls_on_the_device_equal_the_interpreter_bit_for_bit():
    f = ddx.equation(EXACT)
    x = batch(3, 1001)  # an odd length: no multiple of any work-group size
    want_f, want_j = f.jacobian(x)
    want_h = f.hessian(x)[2]
    d = pickle_copy(f)
    dev = on_device(d)
    if dev is not None:
        status = dev.device_status
        assert isinstance(status, str) and status.count(" / ") == 3
        assert dev.uses_kernel
    got_f, got_j = d.jacobian(x)
    assert got_f.tobytes() == want_f.tobytes()
    assert got_j.tobytes() == want_j.tobytes()
    assert d.hessian(x)[2].tobytes() == want_h.tobytes()
    assert d.gradient(x).tobytes() == f.gradient(x).tobytes()


def test_exp_and_log_agree_bit_for_bit():
    # ddx's own exp and log, written out for the device: a thermodynamic-style model
    # answers the CPU's bits in every column, with arguments across both functions'
    # ranges (zeros, negatives, subnormals, huge values, 1 and its neighbours).
    f = ddx.equation("a * log(a) + b * log(a*a + b*b) - exp(-a*b) + log(abs(c)) * exp(c / 7)")
    rng = np.random.default_rng(78)
    x = rng.uniform(-3.0, 3.0, size=(3, 1013))
    edges = [0.0, -0.0, 1.0, np.nextafter(1.0, 2.0), np.nextafter(1.0, 0.0), 5e-324, 1e-310,
             2.2250738585072014e-308, 1e300, -1.0, np.inf, -np.inf, np.nan, 709.0, -745.0]
    for k, e in enumerate(edges):
        x[k % 3, 7 * k] = e
    x[0, 500:900] = rng.uniform(0.9976, 1.0 - 2.0**-9, size=400)  # log's hardest row
    want_f, want_j = f.jacobian(x)
    d = pickle_copy(f)
    on_device(d)
    got_f, got_j = d.jacobian(x)
    for got, want in [(got_f, want_f), (got_j, want_j)]:
        # The same bits, and a NaN wherever the CPU has one (its payload may differ: the
        # device's arithmetic makes its own NaNs).
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        assert got[~nan].tobytes() == want[~nan].tobytes()
        assert nan.any() and not nan.all()


def test_transcendentals_agree_closely():
    f = ddx.equation("exp(-a*b) * log(1 + c*c) + sin(a) * atan(b)")
    x = batch(3, 513)
    d = pickle_copy(f)
    on_device(d)
    np.testing.assert_allclose(d.jacobian(x)[1], f.jacobian(x)[1], rtol=1e-13, atol=1e-300)


def test_resident_columns_answer_the_batch_call():
    f = ddx.equation(EXACT)
    d = pickle_copy(f)
    dev = on_device(d, ddx.Want.GRADIENT)
    if dev is None:
        with pytest.raises(ddx.Error) as e:
            d.device_columns(8, want=ddx.Want.GRADIENT)
        assert e.value.code is ddx.errc.no_device
        return
    x = batch(3, 777)
    cols = dev.device_columns(x.shape[1], want=ddx.Want.GRADIENT)
    assert (cols.points, cols.inputs, cols.outputs, cols.want) == (777, 3, 3, 2)
    assert "GRADIENT" in repr(cols).upper()
    cols.write(x)
    for _ in range(3):
        cols.run()
    assert cols.read().tobytes() == f.gradient(x).tobytes()
    # One input column rewritten, one output column read back.
    x2 = x.copy()
    x2[1] *= 0.5
    cols.write(x2[1:2], first=1)
    cols.run()
    assert cols.read(2, 1).tobytes() == f.gradient(x2)[2:3].tobytes()
    # Errors copy nothing and name the shape expected.
    with pytest.raises(ddx.Error) as e:
        cols.write(np.zeros((1, 5)))
    assert e.value.code is ddx.errc.column_length and "(columns, 777)" in str(e.value)
    with pytest.raises(ddx.Error) as e:
        cols.write(np.zeros((2, 777)), first=2)
    assert e.value.code is ddx.errc.wrong_column_count
    with pytest.raises(ddx.Error) as e:
        cols.read(1, 3)
    assert e.value.code is ddx.errc.wrong_column_count
    with pytest.raises(ddx.Error) as e:
        cols.write(np.zeros(777))
    assert e.value.code is ddx.errc.column_length


def test_a_selector_nothing_matches_answers_from_the_cpu():
    f = ddx.equation(EXACT)
    d = pickle_copy(f)
    d.options = ddx.Options(backend=ddx.Backend.DEVICE, device="no such device anywhere")
    assert not d.wait_for_kernel()
    with pytest.raises(ddx.Error) as e:
        _ = d.device_status
    assert e.value.code is ddx.errc.no_device
    x = batch(3, 64)
    assert d.jacobian(x)[1].tobytes() == f.jacobian(x)[1].tobytes()
    with pytest.raises(ddx.Error) as e:
        d.device_columns(64)
    assert e.value.code is ddx.errc.no_device


def pickle_copy(f: ddx.Equation) -> ddx.Equation:
    import pickle

    return pickle.loads(pickle.dumps(f))
