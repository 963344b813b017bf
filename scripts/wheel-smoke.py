"""The installed wheel, exercised where no Rust toolchain is (scripts/release-check.sh):
import, a gradient against its closed form, a compile, a pickle. Run outside the source
tree, so that ``import ddx`` can only find the installed copy."""

import math
import pickle
import shutil
import sys

import ddx

assert shutil.which("cargo") is None and shutil.which("rustc") is None, "Rust is on PATH"
assert "site-packages" in ddx.__file__, ddx.__file__

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

print(f"wheel smoke test: ddx {ddx.__version__} on Python {sys.version.split()[0]}: ok")
