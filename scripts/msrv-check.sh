#!/usr/bin/env bash
# Fails if any locked dependency declares a `rust-version` newer than the workspace's own
# (`[workspace.package] rust-version` in Cargo.toml), so the minimum Rust version ddx
# states stays true when Cargo.lock moves. Every workspace crate must state the same one.
#
# It reads `cargo metadata --locked` (every package in Cargo.lock that any target, feature
# or platform can reach) and compares versions numerically (1.95 == 1.95.0 < 1.100).
#
# Usage: scripts/msrv-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

cargo metadata --format-version 1 --locked --all-features |
    python3 -c '
import json, sys

def parse(v):
    parts = [int(p) for p in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))

meta = json.load(sys.stdin)
members = set(meta["workspace_members"])
ours = {p["name"]: p["rust_version"] for p in meta["packages"] if p["id"] in members}
stated = set(ours.values())
if None in stated or len(stated) != 1:
    sys.exit(f"msrv-check: the workspace crates must all state one rust-version: {ours}")
msrv = stated.pop()
newer = sorted(
    (parse(p["rust_version"]), p["name"], p["version"], p["rust_version"])
    for p in meta["packages"]
    if p["id"] not in members
    and p["rust_version"] is not None
    and parse(p["rust_version"]) > parse(msrv)
)
if newer:
    for _, name, version, rv in newer:
        print(f"msrv-check: {name} {version} needs Rust {rv}, newer than ours ({msrv})")
    sys.exit(1)
print(f"msrv-check: rust-version {msrv}; no locked dependency needs newer")
'
