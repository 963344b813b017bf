#!/usr/bin/env bash
# The release checks (CI runs them after scripts/test; issue 22):
#
#   scripts/release-check.sh            # all three
#   scripts/release-check.sh crates     # only the dry-run publish
#   scripts/release-check.sh wheel      # only the wheel and its Rust-free smoke test
#
# 1. Every published crate packages, and its package builds on its own:
#    `cargo publish --workspace --dry-run` (the crates verified against each other's
#    packages, in dependency order, nothing uploaded).
# 2. The Python package: `maturin build --release` (one abi3 manylinux wheel for every
#    CPython >= 3.11 on Linux x86-64) and `maturin sdist`, into target/wheels.
# 3. The wheel installed into a fresh virtual environment with no Rust toolchain on PATH
#    (binary packages only: nothing may be built), and scripts/wheel-smoke.py run there,
#    outside the source tree.
# Needs what scripts/test made: .venv with maturin.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
dirty=()
[[ -n "$(git status --porcelain 2>/dev/null)" ]] && dirty=(--allow-dirty)

if [[ $what == all || $what == crates ]]; then
    cargo publish --workspace --dry-run --locked "${dirty[@]}"
fi

if [[ $what == all || $what == wheel ]]; then
    target=${CARGO_TARGET_DIR:-target}
    wheels="$target/wheels"
    rm -rf "$wheels"
    .venv/bin/maturin build --release --locked --quiet \
        --manifest-path crates/ddx-python/Cargo.toml --out "$wheels"
    .venv/bin/maturin sdist --manifest-path crates/ddx-python/Cargo.toml --out "$wheels"
    ls -l "$wheels"
    wheel=$(ls "$wheels"/ddx_ad-*-abi3-manylinux*.whl)
    ls "$wheels"/ddx_ad-*.tar.gz >/dev/null

    python=$(command -v "${PYTHON:-python3}")
    fresh=$(mktemp -d)
    # No Rust: only the interpreter's directory and the system's on PATH, no cargo home.
    norust="$(dirname "$(readlink -f "$python")"):/usr/bin:/bin"
    run() { env -u CARGO_HOME -u RUSTUP_HOME -u CARGO_TARGET_DIR -u VIRTUAL_ENV PATH="$norust" "$@"; }
    if run sh -c 'command -v cargo || command -v rustc'; then
        echo "release-check: a Rust toolchain is on the smoke test's PATH" >&2
        exit 1
    fi
    run "$python" -m venv "$fresh/venv"
    run "$fresh/venv/bin/python" -m pip install --quiet --only-binary=:all: "$wheel"
    (cd "$fresh" && run "$fresh/venv/bin/python" "$OLDPWD/scripts/wheel-smoke.py")
    rm -rf "$fresh"
fi
