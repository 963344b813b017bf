#!/usr/bin/env bash
# The Python package's benchmark, from any directory:
#
#   crates/ddx-python/bench/run.sh
#
# Builds the release wheel and installs it into compare/.venv (made with the pinned peers
# of compare/requirements.txt, JAX and CasADi, if missing), builds and runs the Rust side
# of the batch comparison (the huber_batch example), then bench.py, which prints the
# tables BENCHMARKS.md quotes ("Python").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$root"
venv=compare/.venv
if [ ! -x "$venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r compare/requirements.txt
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check maturin==1.16.0 pydantic==2.14.4
wheels=$(mktemp -d)
"$venv/bin/maturin" build --quiet --release --manifest-path crates/ddx-python/Cargo.toml -o "$wheels"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/*.whl
cargo build --quiet --release -p ddx --example huber_batch
rust=$("${CARGO_TARGET_DIR:-target}/release/examples/huber_batch")
echo "$rust"
cd "$venv/.."   # not the source tree, so that `import ddx` finds the installed wheel
"$root/$venv/bin/python" "$root/crates/ddx-python/bench/bench.py" --rust "$rust"
