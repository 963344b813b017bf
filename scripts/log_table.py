#!/usr/bin/env python3
"""Prints `ddx_ir::math`'s `LOG_TABLE` and `log`'s split constants of ln 2, computed with
mpmath at 300 bits, after checking the two properties `log`'s error analysis rests on.

`log` writes a positive normal x as 2^k * z by the bits of x less `LOG_OFF` (the bits of
0.6875 + 2^-9): z lies in [0.689453125, 1.37890625), and bits 45..51 of that difference
pick one of 128 intervals, interval i holding the z whose bits lie in
[LOG_OFF + i * 2^45, LOG_OFF + (i + 1) * 2^45). 1.0 sits at the middle of interval 79,
which covers [1 - 2^-9, 1 + 2^-8). Each row is (invc, logc_hi, logc_lo, 0), 32 bytes:

- invc: 1 / (the interval's midpoint) rounded to 8 significant bits; exactly 1 in
  interval 79, so that log(x) near 1 is r + r^2 q(r) with r = x - 1 exact and no
  cancellation;
- logc_hi: -log(invc) rounded to a multiple of 2^-42, so that k * LN2_HI + logc_hi is
  exact for |k| < 2^11 (LN2_HI is ln 2 rounded to a multiple of 2^-42);
- logc_lo: -log(invc) - logc_hi, rounded to nearest.

Checked for every interval, at its two ends (|z * invc - 1| is largest at one of them):
1. r = fma(z, invc, -1) is exact: z * invc - 1 is a multiple of ulp(z) * 2^(e - 7), e
   invc's exponent, and under 2^53 of them;
2. |r| < 2^-7.3, the bound the polynomial's truncation error is stated for;
3. Fast2Sum(w, r) with w = k * LN2_HI + logc_hi is exact: for k = 0, w = logc_hi is 0 or
   has an exponent no smaller than r's (|w| > 0.3 for k != 0).

Run `python3 scripts/log_table.py` and paste the output over the table and constants.
"""
import struct
import sys

import mpmath

mpmath.mp.prec = 300

OFF = 0x3FE6100000000000
CENTRE = 79  # the interval whose middle is 1.0


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def double(b: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def round_sig(v, sig: int) -> float:
    """v rounded to nearest with `sig` significant bits."""
    m, e = mpmath.frexp(v)  # v = m * 2^e, 0.5 <= |m| < 1
    n = int(mpmath.nint(m * mpmath.power(2, sig)))
    return float(mpmath.ldexp(n, int(e) - sig))


def round_grid(v, step_log2: int) -> float:
    """v rounded to the nearest multiple of 2^step_log2."""
    n = int(mpmath.nint(v * mpmath.power(2, -step_log2)))
    return float(mpmath.ldexp(n, step_log2))


def ulp(x: float) -> mpmath.mpf:
    return mpmath.ldexp(1, mpmath.frexp(x)[1] - 53)


assert double(OFF + (CENTRE << 45) + (1 << 44)) == 1.0
rows = []
worst_r = mpmath.mpf(0)
for i in range(128):
    lo_bits, hi_bits = OFF + (i << 45), OFF + ((i + 1) << 45) - 1
    a, b = double(lo_bits), double(hi_bits)
    if i == CENTRE:
        invc = 1.0
    else:
        invc = round_sig(2 / (mpmath.mpf(a) + mpmath.mpf(b)), 8)
    logc = -mpmath.log(mpmath.mpf(invc))
    hi = round_grid(logc, -42)
    lo = float(logc - mpmath.mpf(hi))
    unit_invc = mpmath.ldexp(1, mpmath.frexp(invc)[1] - 8)
    r_max = mpmath.mpf(0)
    for z in (a, b):
        r = mpmath.mpf(z) * mpmath.mpf(invc) - 1
        r_max = max(r_max, abs(r))
        if abs(r) >= mpmath.ldexp(ulp(z) * unit_invc, 53):
            sys.exit(f"interval {i}: r = {r} at z = {z} is not exact")
    if r_max >= mpmath.power(2, -7.3):
        sys.exit(f"interval {i}: |r| reaches {r_max}")
    if hi != 0.0 and mpmath.frexp(hi)[1] < mpmath.frexp(r_max)[1]:
        sys.exit(f"interval {i}: logc_hi {hi} is below r's exponent {r_max}")
    worst_r = max(worst_r, r_max)
    rows.append((bits(invc), bits(hi), bits(lo)))

ln2 = mpmath.log(2)
ln2_hi = round_grid(ln2, -42)
ln2_lo = float(ln2 - mpmath.mpf(ln2_hi))
print(f"// largest |r|: 2^{float(mpmath.log(worst_r, 2)):.3f}")
print(f"pub const LOG_LN2_HI: f64 = f64::from_bits(0x{bits(ln2_hi):016x});")
print(f"pub const LOG_LN2_LO: f64 = f64::from_bits(0x{bits(ln2_lo):016x});")
print()
for r in rows:
    print("    " + ", ".join(f"0x{v:016x}" for v in r) + ", 0,")
