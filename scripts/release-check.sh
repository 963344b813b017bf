#!/usr/bin/env bash
# The release checks (issue 22); .ci/run runs them after scripts/test:
#
#   scripts/release-check.sh            # both
#   scripts/release-check.sh crates     # only the dry-run publish
#   scripts/release-check.sh wheel      # only the sdist, the wheel and its Rust-free smoke test
#
# 1. Every published crate packages, and its package builds on its own:
#    `cargo publish --workspace --dry-run` (the crates verified against each other's
#    packages, in dependency order, nothing uploaded).
# 2. The Python package: `maturin sdist`, then `maturin build --release --strip` (symbols
#    stripped: the module 39 MB -> 7 MB, the wheel 9.6 MB -> 2.3 MB) run inside the
#    unpacked sdist — one abi3 manylinux wheel for every CPython >= 3.11 on Linux x86-64,
#    built from the sdist so that the one release build checks both (a file the sdist
#    lacks fails the build). Both land in $CARGO_TARGET_DIR/wheels (target/wheels); the
#    build has a target directory of its own, $CARGO_TARGET_DIR/sdist, so it never shares
#    path-crate artifacts with the source tree's builds.
# 3. The wheel installed into a fresh virtual environment whose PATH holds nothing but
#    that environment (no cargo, no rustc; CARGO_HOME and RUSTUP_HOME unset), binary
#    packages only (pip may build nothing), and scripts/wheel-smoke.py run there, outside
#    the source tree: import, a gradient, a compile through the JIT, a pickle round trip,
#    the version against the workspace Cargo.toml's.
# Needs what scripts/test made: .venv with maturin. Prints each step's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
dirty=()
[[ -n "$(git status --porcelain 2>/dev/null)" ]] && dirty=(--allow-dirty)
python=${PYTHON:-python3}
# The interpreter itself, not a shim (pyenv's need pyenv on PATH).
python=$("$python" -c 'import sys; print(sys.executable)')
version=$("$python" -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["workspace"]["package"]["version"])')

step() {
    local name=$1 start=$SECONDS
    shift
    "$@"
    echo "release-check: $name took $((SECONDS - start)) s"
}

if [[ $what == all || $what == crates ]]; then
    # cargo verifies each package against the others' through a registry of its own
    # ($CARGO_TARGET_DIR/package/tmp-registry). A registry crate is taken never to change:
    # unpacked under the cargo home once per name and version, and built once into the
    # target dir, so a second run at the same version would check the first run's
    # sources. Both go first (the unpacked copies: local registries have no host, so their
    # directories start with `-`; the builds: those whose dep-info names such a copy). A
    # fresh machine has neither.
    target=$(readlink -f "${CARGO_TARGET_DIR:-target}")
    for crate in ddx-ir ddx-macros ddx ddx-fit; do
        rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$crate-$version"
    done
    for d in "$target"/debug/deps/ddx*.d; do
        [[ -f $d ]] && grep -q "/registry/src/-[^/]*/ddx" "$d" || continue
        hash=$(basename "$d" .d)
        hash=${hash##*-}
        rm -rf "$target"/debug/deps/*-"$hash"* "$target"/debug/.fingerprint/*-"$hash"
    done
    step "cargo publish --dry-run" cargo publish --workspace --dry-run --locked "${dirty[@]}"
fi

if [[ $what == all || $what == wheel ]]; then
    target=$(readlink -f "${CARGO_TARGET_DIR:-target}")
    wheels="$target/wheels"
    rm -rf "$wheels"
    fresh=$(mktemp -d)
    trap 'rm -rf "$fresh"' EXIT

    step "maturin sdist" .venv/bin/maturin sdist --manifest-path crates/ddx-python/Cargo.toml \
        --out "$wheels"
    sdist=$(ls "$wheels"/ddx_ad-"$version".tar.gz)
    # Unpacked with fresh times (-m), so cargo never takes a file for older than its build.
    mkdir "$fresh/sdist"
    tar -xzmf "$sdist" -C "$fresh/sdist"
    unpacked="$fresh/sdist/ddx_ad-$version"
    # The sdist's workspace holds only the crates the package needs: its Cargo.lock is
    # the repository's, trimmed by cargo (so no --locked); below, every package the build
    # locked must be the repository's version.
    build_wheel() {
        (cd "$unpacked" && CARGO_TARGET_DIR="$target/sdist" "$OLDPWD/.venv/bin/maturin" build \
            --release --strip --quiet --out "$wheels")
    }
    step "maturin build --release (from the sdist)" build_wheel
    "$python" - Cargo.lock "$unpacked/Cargo.lock" <<'EOF'
import sys, tomllib
def packages(path):
    with open(path, "rb") as f:
        return {(p["name"], p["version"]) for p in tomllib.load(f)["package"]}
ours, built = packages(sys.argv[1]), packages(sys.argv[2])
moved = sorted(built - ours)
if moved:
    sys.exit(f"release-check: the sdist build locked other versions than Cargo.lock: {moved}")
EOF
    ls -l "$wheels"
    wheel=$(ls "$wheels"/ddx_ad-"$version"-cp311-abi3-manylinux*_x86_64.whl)

    # No Rust: PATH is the fresh environment's bin alone, as once activated; no cargo home.
    run() { env -u CARGO_HOME -u RUSTUP_HOME -u CARGO_TARGET_DIR -u VIRTUAL_ENV -u PYTHONPATH \
        PATH="$fresh/venv/bin" "$@"; }
    install_wheel() {
        run "$python" -m venv "$fresh/venv"
        if run /bin/sh -c 'command -v cargo || command -v rustc'; then
            echo "release-check: a Rust toolchain is on the smoke test's PATH" >&2
            exit 1
        fi
        run "$fresh/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            --only-binary=:all: "$wheel"
    }
    step "a fresh venv and pip install of the wheel" install_wheel
    (cd "$fresh" && run "$fresh/venv/bin/python" "$OLDPWD/scripts/wheel-smoke.py" "$version")
fi
