"""The installed wheel, exercised where no Rust toolchain is (scripts/release-check.sh):
import, a gradient against its closed form, a compile through the JIT, a pickle round
trip, an error with its code, and the version against the one stated in the workspace
``Cargo.toml`` (passed as the argument). Run outside the source tree, so that
``import ddx`` can only find the installed copy.

    python wheel-smoke.py 0.1.0
"""

import importlib.metadata
import math
import pickle
import shutil
import sys

import ddx

assert shutil.which("cargo") is None and shutil.which("rustc") is None, "Rust is on PATH"
assert "site-packages" in ddx.__file__, ddx.__file__

stated = sys.argv[1]
assert ddx.__version__ == stated, (ddx.__version__, stated)
assert importlib.metadata.version("ddx-ad") == stated, importlib.metadata.version("ddx-ad")
assert ddx.version_info == tuple(int(p) for p in stated.split(".")), ddx.version_info

f = ddx.equation("exp(x) * sin(y)")
x, y = 0.7, -1.3
gradient = f.gradient([x, y])
want = [math.exp(x) * math.sin(y), math.exp(x) * math.cos(y)]
assert all(abs(g - w) <= 1e-15 * abs(w) for g, w in zip(gradient, want)), (gradient, want)

compiled = f.compile()
assert ddx.has_jit and compiled.uses_kernel, compiled.jit_status
kernel_gradient = compiled.gradient([x, y])
assert all(abs(g - w) <= 1e-15 * abs(w) for g, w in zip(kernel_gradient, want)), kernel_gradient

again = pickle.loads(pickle.dumps(compiled))
assert again.uses_kernel and again.gradient([x, y]).tobytes() == kernel_gradient.tobytes()

try:
    f.univariate_derivative(-1, 0.0)
except ddx.Error as e:
    assert e.code is ddx.errc.order_too_high, e.code
else:
    raise AssertionError("a negative order answered")

print(f"wheel smoke test: ddx {ddx.__version__} on Python {sys.version.split()[0]}: ok")
