#!/usr/bin/env bash
# What a second, ahead-of-time code generator would give on ddx's own lanes (issue 20's
# "LLVM tier" direction), measured without building one: each model's gradient lane is
# emitted as C (`Equation::to_c_source`), compiled by a C compiler at -O3 for this CPU
# (`-march=native`: AVX2 and FMA where present, 256-bit vectors that Cranelift cannot
# emit) with `-ffp-contract=off` (the lane's own roundings, so the answers are checked to
# the bit against the interpreter's), and timed per point beside one native `f64`
# evaluation and the JIT's gradient (`kernel_profile`), interleaved, in one run.
#
#   compare/c_tier.sh [rounds] [calls]      (defaults 2 and 200000)
#
# Environment: CC (default: clang, else clang-14, else gcc), C_TIER_FLAGS (default
# "-O3 -march=native"), MODELS (default: the compare harness's nine).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
rounds="${1:-2}"
calls="${2:-200000}"
cc="${CC:-$(command -v clang || command -v clang-14 || command -v gcc)}"
cflags="${C_TIER_FLAGS:--O3 -march=native}"
models="${MODELS:-regular-16 regular-32 uniquac-16 uniquac-32 peng-robinson-17 peng-robinson-33 electrolyte-16 electrolyte-32 coverage-16}"
cargo build --release --quiet -p ddx-models --example kernel_profile --manifest-path "$root/Cargo.toml"
profile="$root/target/release/examples/kernel_profile"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for m in $models; do
  mkdir -p "$work/$m"
  "$profile" "$m" emit-c 1 "$work/$m" | sed -n 's/^\([0-9]*\) symbols.*/\1/p' > "$work/$m/symbols"
  start=$(date +%s%N)
  # shellcheck disable=SC2086
  "$cc" $cflags -ffp-contract=off -c "$work/$m/grad.c" -o "$work/$m/grad.o"
  end=$(date +%s%N)
  echo "$m: compiled by $(basename "$cc") $cflags in $(( (end - start) / 1000000 )) ms"
  "$cc" -O2 "$root/compare/c_tier/driver.c" "$work/$m/grad.o" -lm -o "$work/$m/driver"
done
ns() { "$@" 2>&1 > /dev/null | tail -1 | awk '{print $1}'; }
printf '%-18s %10s %16s %16s %s\n' model native "ddx-jit" "C $(basename "$cc")" "bits (mismatched points)"
for r in $(seq "$rounds"); do
  for m in $models; do
    n="$(cat "$work/$m/symbols")"
    native=$(ns "$profile" "$m" native "$calls")
    jit=$(ns "$profile" "$m" jit "$calls")
    read -r bad count c < <(cd "$work/$m" && ./driver "$n" "$calls" 2> /dev/null)
    awk -v m="$m" -v a="$native" -v j="$jit" -v c="$c" -v bad="$bad" -v count="$count" 'BEGIN {
      printf "%-18s %7.1f ns %7.1f (%.2fx) %7.1f (%.2fx) %s of %s\n", m, a, j, j / a, c, c / a, bad, count }'
  done
done
