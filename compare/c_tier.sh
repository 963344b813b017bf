#!/usr/bin/env bash
# What a second, ahead-of-time code generator would give on ddx's own lanes (issue 20's
# "LLVM tier" direction), measured without building one: each model's gradient lane is
# emitted as C (`Equation::to_c_source`), compiled by a C compiler at -O3 for this CPU
# (`-march=native`: AVX2 and FMA where present, 256-bit vectors that Cranelift cannot
# emit) with `-ffp-contract=off` (the lane's own roundings, so the answers are checked to
# the bit against the interpreter's), and timed per point beside one native `f64`
# evaluation and the JIT's gradient (`kernel_profile`), interleaved, in one run. Times are
# wall-clock per call (`CLOCK_MONOTONIC` in the driver, `Instant` in `kernel_profile`).
#
#   compare/c_tier.sh [rounds] [calls]      (defaults 2 and 200000)
#
# Environment: C_TIER_CC (the C compiler; default: clang, else clang-14, else gcc),
# C_TIER_FLAGS (default "-O3 -march=native"), MODELS (default: the compare harness's
# nine; any model `kernel_profile` knows), CARGO_TARGET_DIR (as cargo reads it).
#
# Exit status: 0, or 1 where the compiled C answered other bits than the interpreter at
# some point of a model whose lane calls no function the C library computes differently
# (`erf`, `cbrt`: ddx_ir::emit's documentation; such a model's count is printed as a
# note), or 2 on a usage or build error.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
fail() {
  echo "c_tier: $*" >&2
  exit 2
}
rounds="${1:-2}"
calls="${2:-200000}"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || fail "rounds must be a positive integer, not '$rounds'"
[[ "$calls" =~ ^[1-9][0-9]*$ ]] || fail "calls must be a positive integer, not '$calls'"
cc="${C_TIER_CC:-$(command -v clang || command -v clang-14 || command -v gcc || true)}"
[ -n "$cc" ] || fail "no C compiler found (set C_TIER_CC)"
command -v "$cc" > /dev/null || fail "C compiler '$cc' not found"
cflags="${C_TIER_FLAGS:--O3 -march=native}"
models="${MODELS:-regular-16 regular-32 uniquac-16 uniquac-32 peng-robinson-17 peng-robinson-33 electrolyte-16 electrolyte-32 coverage-16}"
cargo build --release --quiet -p ddx-models --example kernel_profile --manifest-path "$root/Cargo.toml" ||
  fail "could not build kernel_profile"
profile="${CARGO_TARGET_DIR:-$root/target}/release/examples/kernel_profile"
[ -x "$profile" ] || fail "no $profile after the build"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for m in $models; do
  mkdir -p "$work/$m"
  "$profile" "$m" emit-c 1 "$work/$m" > "$work/$m/emitted" 2> "$work/$m/errors" ||
    fail "kernel_profile cannot emit model '$m': $(head -c 300 "$work/$m/errors")"
  sed -n 's/^\([0-9]*\) symbols.*/\1/p' "$work/$m/emitted" > "$work/$m/symbols"
  start=$(date +%s%N)
  # shellcheck disable=SC2086
  "$cc" $cflags -ffp-contract=off -c "$work/$m/grad.c" -o "$work/$m/grad.o" ||
    fail "$cc could not compile $m's lane"
  end=$(date +%s%N)
  echo "$m: compiled by $(basename "$cc") $cflags in $(( (end - start) / 1000000 )) ms"
  "$cc" -O2 "$root/compare/c_tier/driver.c" "$work/$m/grad.o" -lm -o "$work/$m/driver" ||
    fail "$cc could not build the driver"
done
# The time a point of `kernel_profile`'s arm, or a failure.
ns() {
  local out
  out="$("$@" 2>&1 > /dev/null | tail -1)" || fail "$* failed: $out"
  awk '{print $1}' <<< "$out"
}
printf '%-18s %10s %16s %16s %s\n' model native "ddx-jit" "C $(basename "$cc")" "bits (mismatched points)"
differ=""
for r in $(seq "$rounds"); do
  for m in $models; do
    n="$(cat "$work/$m/symbols")"
    native=$(ns "$profile" "$m" native "$calls")
    jit=$(ns "$profile" "$m" jit "$calls")
    line="$(cd "$work/$m" && ./driver "$n" "$calls" 2> "$work/$m/driver.err")" ||
      fail "the driver failed on $m: $(cat "$work/$m/driver.err")"
    read -r bad count c <<< "$line"
    awk -v m="$m" -v a="$native" -v j="$jit" -v c="$c" -v bad="$bad" -v count="$count" 'BEGIN {
      printf "%-18s %7.1f ns %7.1f (%.2fx) %7.1f (%.2fx) %s of %s\n", m, a, j, j / a, c, c / a, bad, count }'
    if [ "$r" = 1 ] && [ "$bad" != 0 ]; then
      if grep -qE '\b(erf|cbrt)\(' "$work/$m/grad.c"; then
        echo "note: $m calls erf or cbrt, whose C library answers differ from ddx's in the last bit" >&2
      else
        differ="$differ $m"
      fi
    fi
  done
done
if [ -n "$differ" ]; then
  echo "c_tier: the compiled C answered other bits than the interpreter on:$differ" >&2
  exit 1
fi
