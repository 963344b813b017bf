#!/usr/bin/env python3
"""Prints `ddx_ir::math`'s `EXP_TABLE`: for i in 0..128, the pair
(tail, scale) of 2^(i/128), computed with mpmath at 300 bits.

- scale: the bits of 2^(i/128) rounded to nearest, minus i << 45 (the index bits that
  `exp`'s integer k carries into the exponent field are taken out again);
- tail: (2^(i/128) - d) / d rounded to nearest, d being that rounded value: the relative
  error of d, which `exp` adds back inside its polynomial.

Run `python3 scripts/exp_table.py` and paste the output over the table.
"""
import struct

import mpmath

mpmath.mp.prec = 300


def bits(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


rows = []
for i in range(128):
    v = mpmath.power(2, mpmath.mpf(i) / 128)
    d = float(v)  # mpmath rounds to nearest
    tail = float((v - mpmath.mpf(d)) / mpmath.mpf(d))
    scale = (bits(d) - (i << 45)) % (1 << 64)
    rows.append((bits(tail), scale))

for k in range(0, 128, 2):
    line = ", ".join(f"0x{t:016x}, 0x{s:016x}" for t, s in rows[k : k + 2])
    print(f"    {line},")
