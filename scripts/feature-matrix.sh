#!/usr/bin/env bash
# Lints every supported feature combination of every workspace crate, so a combination
# the default build does not use (e.g. `ddx` without `jit`) cannot stop building silently.
#
# The combinations come from `cargo metadata`: for each workspace package, every subset of
# its features (other than `default` and the implicit `dep:` ones) with default features
# off. The subset equal to the default set is skipped: `cargo clippy --workspace` and
# `cargo test --workspace` in .ci/run cover it. A package with more than MAX_POWERSET
# features gets each feature alone and all of them instead of the whole power set.
# A feature added to any Cargo.toml later is picked up here with no edit.
#
# It runs `cargo clippy --all-targets -- -D warnings` (the cost of `cargo check`, and
# dead code behind a feature is an error); tests run for the default set only.
#
# Usage: scripts/feature-matrix.sh [--list | CARGO-ARGS...]
#   --list prints the combinations only; other arguments go to each `cargo clippy`
#   (e.g. `--profile NAME`).
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_POWERSET=${MAX_POWERSET:-4}

combos=$(cargo metadata --format-version 1 --no-deps --locked |
    python3 -c '
import itertools, json, sys
meta = json.load(sys.stdin)
limit = int(sys.argv[1])
members = set(meta["workspace_members"])
for pkg in sorted(meta["packages"], key=lambda p: p["name"]):
    if pkg["id"] not in members:
        continue
    feats = pkg["features"]
    default = set(feats.get("default", []))
    names = sorted(f for f in feats if f != "default")
    if len(names) <= limit:
        sets = [c for k in range(len(names) + 1) for c in itertools.combinations(names, k)]
    else:
        sets = [()] + [(f,) for f in names] + [tuple(names)]
    for s in sets:
        if set(s) == default:
            continue
        print(pkg["name"], ",".join(s) or "-")
' "$MAX_POWERSET")

if [[ "${1:-}" == "--list" ]]; then
    echo "$combos"
    exit 0
fi

while read -r pkg feats; do
    [[ -z "$pkg" ]] && continue
    args=(-p "$pkg" --no-default-features)
    [[ "$feats" != "-" ]] && args+=(--features "$feats")
    echo "feature-matrix: cargo clippy ${args[*]} --all-targets"
    cargo clippy --locked "${args[@]}" "$@" --all-targets -- -D warnings
done <<<"$combos"
