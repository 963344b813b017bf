#!/usr/bin/env python3
"""Print each criterion arm's median time as a ratio of the group's `native` arm (or, in a
group without one, of the `off` arm its name pairs with: `interp/on_100` ÷ `interp/off_100`).

Usage: scripts/criterion_ratios.py [GROUP-PREFIX ...]
Reads $CARGO_TARGET_DIR/criterion/<group>/<arm>/<param>/new/estimates.json (criterion's own
output; `target` at the repository root without CARGO_TARGET_DIR).
"""
import json
import os
import pathlib
import sys

target = os.environ.get("CARGO_TARGET_DIR")
root = (
    pathlib.Path(target) if target else pathlib.Path(__file__).resolve().parent.parent / "target"
) / "criterion"
prefixes = sys.argv[1:] or [""]
groups = {}
for est in sorted(root.glob("**/new/estimates.json")):
    rel = est.relative_to(root).parts[:-2]
    group = "/".join(rel[:-2]) if len(rel) >= 3 else rel[0]
    if not any(group.startswith(p.replace("/", "_")) or group.startswith(p) for p in prefixes):
        continue
    arm = "/".join(rel[len(group.split("/")):])
    median = json.loads(est.read_text())["median"]["point_estimate"]
    groups.setdefault(group, {})[arm] = median
for group, arms in sorted(groups.items()):
    base = next((v for k, v in arms.items() if k.startswith("native")), None)
    print(f"{group}")
    for arm, ns in sorted(arms.items()):
        den = base or arms.get(arm.replace("/on", "/off"))
        ratio = f"{ns / den:6.2f}x" if den else "   -  "
        print(f"  {arm:<28} {ns:12.1f} ns  {ratio}")
