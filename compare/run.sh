#!/usr/bin/env bash
# The compare benchmark in one command, from any directory:
#
#   compare/run.sh [harness options...]     e.g. compare/run.sh --reps 11
#
# 1. makes (or reuses) the virtual environment compare/.venv and installs the pinned
#    Python peers of compare/requirements.txt into it (CasADi, JAX on the CPU, NumPy);
# 2. builds the harness in release mode;
# 3. runs it (gate, then timing) and writes the table into BENCHMARKS.md between
#    <!-- compare:begin --> and <!-- compare:end -->, then the --trend run between
#    <!-- compare-trend:begin --> and <!-- compare-trend:end -->; the rest of the file is kept.
#
# Options are passed to the main run (see `cargo run -p compare --release -- --help`).
# Set PYTHON to choose the interpreter that makes the venv (default: python3) and
# COMPARE_SKIP_TREND=1 to skip the trend run.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="compare/.venv"
start=$(date +%s)

if [ ! -x "$venv/bin/python" ]; then
    echo "compare: creating $venv" >&2
    "${PYTHON:-python3}" -m venv "$venv"
fi
echo "compare: installing the Python peers (compare/requirements.txt)" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r compare/requirements.txt

echo "compare: building the harness (release)" >&2
cargo build --release --locked -p compare

./target/release/compare --python "$venv/bin/python" --write BENCHMARKS.md "$@"
if [ "${COMPARE_SKIP_TREND:-0}" != 1 ]; then
    ./target/release/compare --trend --write BENCHMARKS.md
fi
echo "compare: done in $(( $(date +%s) - start )) s; tables in BENCHMARKS.md" >&2
