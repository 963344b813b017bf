"""Golden K-th derivatives for crates/ddx/tests/taylor.rs.

Each value is d^K f / dx^K at x0 for K = 0..6, computed by mpmath's numerical
differentiation (mpmath.diff) at 60 significant digits and printed to 17, so each is
the correctly rounded f64 of the true derivative. Run with mpmath 1.4.1:

    python3 -m venv /tmp/mp && /tmp/mp/bin/pip install mpmath
    /tmp/mp/bin/python crates/ddx/tests/golden/taylor.py
"""
import mpmath as mp

mp.mp.dps = 60

CASES = [
    ("neg", lambda x: -x, "0.5"),
    ("sin", mp.sin, "0.5"),
    ("cos", mp.cos, "0.5"),
    ("tan", mp.tan, "0.5"),
    ("exp", mp.exp, "0.5"),
    ("ln", mp.log, "0.5"),
    ("log10", mp.log10, "0.5"),
    ("sqrt", mp.sqrt, "0.5"),
    ("cbrt", mp.cbrt, "0.5"),
    ("cbrt", lambda x: -mp.cbrt(-x), "-0.5"),
    ("abs", abs, "-0.5"),
    ("sign", mp.sign, "-0.5"),
    ("asin", mp.asin, "0.5"),
    ("acos", mp.acos, "0.5"),
    ("atan", mp.atan, "0.5"),
    ("sinh", mp.sinh, "0.5"),
    ("cosh", mp.cosh, "0.5"),
    ("tanh", mp.tanh, "0.5"),
    ("asinh", mp.asinh, "0.5"),
    ("acosh", mp.acosh, "1.5"),
    ("atanh", mp.atanh, "0.5"),
    ("erf", mp.erf, "0.5"),
    # Binary operations with both operands moving.
    ("x ** x", lambda x: x ** x, "1.3"),
    ("x ** 2.5", lambda x: x ** mp.mpf("2.5"), "1.3"),
    ("atan2(x, 1 + x*x)", lambda x: mp.atan2(x, 1 + x * x), "0.7"),
    ("hypot(x, 2*x + 1)", lambda x: mp.hypot(x, 2 * x + 1), "0.7"),
    ("sin(x) / (2 + cos(x))", lambda x: mp.sin(x) / (2 + mp.cos(x)), "0.7"),
]

for name, f, x0 in CASES:
    ds = [mp.diff(f, mp.mpf(x0), k) for k in range(7)]
    print(f"// {name} at {x0}")
    print("[" + ", ".join(mp.nstr(d, 17, min_fixed=-5, max_fixed=5) if d != 0 else "0.0" for d in ds) + "],")
