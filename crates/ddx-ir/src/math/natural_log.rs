//! ddx's own natural logarithm: one fixed sequence of IEEE 754 operations, fused
//! multiply-adds among them, that every engine runs, scalar or in vector lanes, for the same
//! bits. (A fused multiply-add is one correctly rounded operation, so every CPU and C
//! library that has one agrees on it; a CPU without the instruction computes it in software,
//! slower, to the same bits.)
//!
//! The method is table-driven, as Tang's (P. T. P. Tang, "Table-driven implementation of
//! the logarithm function in IEEE floating-point arithmetic", ACM TOMS 16(4), 1990) and
//! the `log` of Arm's optimized-routines, with a reduction that makes no rounding error:
//! - a positive normal `x` is `2^k · z` with `z` in `[0.689453125, 1.37890625)`, by the
//!   bits of `x` less those of [`LOG_OFF`]; bits 45–51 of that difference pick one of 128
//!   intervals of `z`, whose row of [`LOG_TABLE`] holds `invc`, the inverse of the
//!   interval's midpoint rounded to 8 significant bits, and `−log(invc)` split in a head on
//!   the grid of `2⁻⁴²` and a tail. `1` sits at the middle of interval 79, whose `invc` is
//!   exactly `1`;
//! - `r = fma(z, invc, −1)` is exact: `z · invc − 1` is a multiple of `ulp(z)` times
//!   `invc`'s last bit and small enough (`|r| < 2⁻⁷·⁴`) to fit 53 bits;
//! - `log(x) = k · ln2 + log(1/invc) + log(1 + r)`: `w = k · ln2`'s head plus the table's
//!   head is exact (both on the grid of `2⁻⁴²`, under `2⁵³` steps); `hi + lo = w + r`
//!   exactly (Fast2Sum: `w` is zero or has an exponent at least `r`'s); `log(1 + r) − r`
//!   is `r² · q(r)`, its Taylor polynomial of degree 8 (truncation below `2⁻⁶⁹`), `q` by
//!   Estrin's scheme; the small terms are added to `lo` first and `hi` last.
//!
//! Near `1` (interval 79) `w = 0`: the answer is `r + r² · q(r)` with `r = x − 1` exact, so
//! there is no cancellation and no second path. Subnormal arguments are scaled by `2⁵²`
//! first. `log(±0) = −∞`, `log(x < 0) = NaN`, `log(+∞) = +∞`, `log(NaN)` is that NaN
//! (quieted).
//!
//! Accuracy, measured against mpmath (the Python suite's `test_log_is_faithful`): under
//! 0.52 ULP. The worst measured is 0.5127 ULP, at `x = 0.99804…` in row 78, just below
//! `1 − 2⁻⁹`, where `|log x|` is smallest against the terms added to `hi` (their
//! rounding errors reach 0.0144 ULP before the last rounding); away from 1 it is under
//! 0.506 ULP. The table's properties are checked by `scripts/log_table.py`, which computed
//! it, and again by `the_table_keeps_the_reduction_exact`.

/// The bits of `0.689453125 = 0.6875 + 2⁻⁹`: `x`'s bits less these give `k` and the
/// interval of `z`; with this offset `1` is at an interval's middle.
pub const LOG_OFF: u64 = 0x3fe6_1000_0000_0000;
/// `ln 2` rounded to a multiple of `2⁻⁴²`: `k` times it is exact for `|k| < 2¹¹`.
pub const LOG_LN2_HI: f64 = f64::from_bits(0x3fe62e42fefa3800);
/// `ln 2 − LOG_LN2_HI`, rounded.
pub const LOG_LN2_LO: f64 = f64::from_bits(0x3d2ef35793c76730);
/// The Taylor coefficients `−1/2, 1/3, …, −1/8` of `log(1 + r) − r` over `r²`, rounded:
/// `q(r) = c₂ + c₃ r + … + c₈ r⁶`.
pub const LOG_POLY: [f64; 7] = [-0.5, 1.0 / 3.0, -0.25, 0.2, -1.0 / 6.0, 1.0 / 7.0, -0.125];

/// For each of the 128 intervals of `z`, `(invc, logc_hi, logc_lo, 0)` at `[4i]` …
/// `[4i + 3]`, as bits (32 bytes a row): `invc` the inverse of the interval's midpoint
/// rounded to 8 significant bits (exactly 1 in row 79), `logc_hi` `−log(invc)` rounded to
/// a multiple of `2⁻⁴²`, `logc_lo` the rest, rounded. Computed at 300 bits by
/// `scripts/log_table.py` (mpmath).
#[rustfmt::skip]
pub static LOG_TABLE: [u64; 512] = [
    0x3ff7200000000000, 0xbfd792a55fdd4000, 0xbd3e89f057691fea, 0,
    0x3ff7000000000000, 0xbfd739d7f6bbd000, 0xbcba7389314feb50, 0,
    0x3ff6e00000000000, 0xbfd6e08eaa2ba000, 0xbd1e38c139318d71, 0,
    0x3ff6c00000000000, 0xbfd686c81e9b1000, 0xbd32bb110af84054, 0,
    0x3ff6a00000000000, 0xbfd62c82f2b9c000, 0xbd3e54bdbd7c8a98, 0,
    0x3ff6800000000000, 0xbfd5d1bdbf581000, 0x3d38d6bdc9c7c238, 0,
    0x3ff6600000000000, 0xbfd5767717456000, 0x3d364ead9524d7ca, 0,
    0x3ff6400000000000, 0xbfd51aad872e0000, 0x3d3f4bd8db0a7cc1, 0,
    0x3ff6200000000000, 0xbfd4be5f95778000, 0x3d3d7c92cd9ad824, 0,
    0x3ff6000000000000, 0xbfd4618bc21c6000, 0x3d13d82f484c84cc, 0,
    0x3ff5e00000000000, 0xbfd404308686a000, 0xbd3f8ef43049f7d3, 0,
    0x3ff5c00000000000, 0xbfd3a64c55694000, 0xbd37a71cbcd735d0, 0,
    0x3ff5a00000000000, 0xbfd347dd9a988000, 0x3d25594dd4c58092, 0,
    0x3ff5800000000000, 0xbfd2e8e2bae12000, 0x3d267b1e99b72bd8, 0,
    0x3ff5800000000000, 0xbfd2e8e2bae12000, 0x3d267b1e99b72bd8, 0,
    0x3ff5600000000000, 0xbfd2895a13de8000, 0xbd3a8d7ad24c13f0, 0,
    0x3ff5400000000000, 0xbfd22941fbcf8000, 0x3d3a6976f5eb0963, 0,
    0x3ff5200000000000, 0xbfd1c898c169a000, 0x3d381410e5c62aff, 0,
    0x3ff5000000000000, 0xbfd1675cababa000, 0xbd38380e731f55c4, 0,
    0x3ff4e00000000000, 0xbfd1058bf9ae5000, 0x3d34ab9d817d52cd, 0,
    0x3ff4c00000000000, 0xbfd0a324e2739000, 0xbd0c6bee7ef4030e, 0,
    0x3ff4a00000000000, 0xbfd0402594b4d000, 0xbcf036b89ef42d7f, 0,
    0x3ff4a00000000000, 0xbfd0402594b4d000, 0xbcf036b89ef42d7f, 0,
    0x3ff4800000000000, 0xbfcfb9186d5e4000, 0x3d0d572aab993c87, 0,
    0x3ff4600000000000, 0xbfcef0adcbdc6000, 0x3d2b26b79c86af24, 0,
    0x3ff4400000000000, 0xbfce27076e2b0000, 0x3d3a342c2af0003c, 0,
    0x3ff4200000000000, 0xbfcd5c216b4fc000, 0x3d21ba91bbca681b, 0,
    0x3ff4200000000000, 0xbfcd5c216b4fc000, 0x3d21ba91bbca681b, 0,
    0x3ff4000000000000, 0xbfcc8ff7c79aa000, 0x3d27794f689f8434, 0,
    0x3ff3e00000000000, 0xbfcbc286742d8000, 0xbd39ac53f39d121c, 0,
    0x3ff3c00000000000, 0xbfcaf3c94e80c000, 0x3cba4e633fcd9066, 0,
    0x3ff3c00000000000, 0xbfcaf3c94e80c000, 0x3cba4e633fcd9066, 0,
    0x3ff3a00000000000, 0xbfca23bc1fe2c000, 0x3d3539cd91dc9f0b, 0,
    0x3ff3800000000000, 0xbfc9525a9cf46000, 0x3d3297137d9f158f, 0,
    0x3ff3600000000000, 0xbfc87fa06520c000, 0xbd322120401202fc, 0,
    0x3ff3600000000000, 0xbfc87fa06520c000, 0xbd322120401202fc, 0,
    0x3ff3400000000000, 0xbfc7ab890210e000, 0x3d2bdb9072534a58, 0,
    0x3ff3200000000000, 0xbfc6d60fe719e000, 0x3d3bc6e557134767, 0,
    0x3ff3000000000000, 0xbfc5ff3070a7a000, 0x3d38586f183bebf2, 0,
    0x3ff3000000000000, 0xbfc5ff3070a7a000, 0x3d38586f183bebf2, 0,
    0x3ff2e00000000000, 0xbfc526e5e3a1c000, 0x3d3790ba37fc5238, 0,
    0x3ff2c00000000000, 0xbfc44d2b6ccb8000, 0x3d170cc16135783c, 0,
    0x3ff2c00000000000, 0xbfc44d2b6ccb8000, 0x3d170cc16135783c, 0,
    0x3ff2a00000000000, 0xbfc371fc201e8000, 0xbd3ee8779b2d8abc, 0,
    0x3ff2800000000000, 0xbfc29552f8200000, 0x3d35b967f4471dfc, 0,
    0x3ff2800000000000, 0xbfc29552f8200000, 0x3d35b967f4471dfc, 0,
    0x3ff2600000000000, 0xbfc1b72ad52f6000, 0xbd2e80a41811a396, 0,
    0x3ff2400000000000, 0xbfc0d77e7cd08000, 0xbd3cb2cd2ee2f482, 0,
    0x3ff2400000000000, 0xbfc0d77e7cd08000, 0xbd3cb2cd2ee2f482, 0,
    0x3ff2200000000000, 0xbfbfec9131dc0000, 0x3d354555d1ae6607, 0,
    0x3ff2000000000000, 0xbfbe27076e2b0000, 0x3d2a342c2af0003c, 0,
    0x3ff2000000000000, 0xbfbe27076e2b0000, 0x3d2a342c2af0003c, 0,
    0x3ff1e00000000000, 0xbfbc5e548f5bc000, 0xbd1d0c57585fbe06, 0,
    0x3ff1c00000000000, 0xbfba926d3a4ac000, 0xbd3563650bd22a9c, 0,
    0x3ff1c00000000000, 0xbfba926d3a4ac000, 0xbd3563650bd22a9c, 0,
    0x3ff1a00000000000, 0xbfb8c345d6318000, 0xbd3b20f5acb42a66, 0,
    0x3ff1a00000000000, 0xbfb8c345d6318000, 0xbd3b20f5acb42a66, 0,
    0x3ff1800000000000, 0xbfb6f0d28ae58000, 0x3d34b4641b664613, 0,
    0x3ff1600000000000, 0xbfb51b073f060000, 0xbd383f69278e686a, 0,
    0x3ff1600000000000, 0xbfb51b073f060000, 0xbd383f69278e686a, 0,
    0x3ff1400000000000, 0xbfb341d7961bc000, 0xbd31d09299837610, 0,
    0x3ff1400000000000, 0xbfb341d7961bc000, 0xbd31d09299837610, 0,
    0x3ff1200000000000, 0xbfb16536eea38000, 0x3d147c5e768fa309, 0,
    0x3ff1200000000000, 0xbfb16536eea38000, 0x3d147c5e768fa309, 0,
    0x3ff1000000000000, 0xbfaf0a30c0118000, 0x3d2d599e83368e91, 0,
    0x3ff0e00000000000, 0xbfab42dd71198000, 0x3d1c827ae5d6704c, 0,
    0x3ff0e00000000000, 0xbfab42dd71198000, 0x3d1c827ae5d6704c, 0,
    0x3ff0c00000000000, 0xbfa77458f6330000, 0x3d3181dce586af09, 0,
    0x3ff0c00000000000, 0xbfa77458f6330000, 0x3d3181dce586af09, 0,
    0x3ff0a00000000000, 0xbfa39e87b9fe8000, 0xbd3eafd480ad9015, 0,
    0x3ff0a00000000000, 0xbfa39e87b9fe8000, 0xbd3eafd480ad9015, 0,
    0x3ff0800000000000, 0xbf9f829b0e780000, 0xbd2980267c7e09e4, 0,
    0x3ff0800000000000, 0xbf9f829b0e780000, 0xbd2980267c7e09e4, 0,
    0x3ff0600000000000, 0xbf97b91b07d60000, 0x3d33b955b602ace4, 0,
    0x3ff0600000000000, 0xbf97b91b07d60000, 0x3d33b955b602ace4, 0,
    0x3ff0400000000000, 0xbf8fc0a8b0fc0000, 0xbcdf1e7cf6d3a69c, 0,
    0x3ff0400000000000, 0xbf8fc0a8b0fc0000, 0xbcdf1e7cf6d3a69c, 0,
    0x3ff0200000000000, 0xbf7fe02a6b100000, 0xbd19e23f0dda40e4, 0,
    0x3ff0200000000000, 0xbf7fe02a6b100000, 0xbd19e23f0dda40e4, 0,
    0x3ff0000000000000, 0x0000000000000000, 0x0000000000000000, 0,
    0x3fefc00000000000, 0x3f80101575880000, 0x3d3bce251998b506, 0,
    0x3fef800000000000, 0x3f90205658930000, 0x3d3611d27c8e8417, 0,
    0x3fef400000000000, 0x3f98492528c90000, 0xbd2aa0ba325a0c34, 0,
    0x3fef000000000000, 0x3fa0415d89e78000, 0xbd3dddc7f461c516, 0,
    0x3feec00000000000, 0x3fa466aed42e0000, 0xbd2c167375bdfd28, 0,
    0x3feea00000000000, 0x3fa67c94f2d48000, 0x3d3dac20827cca0c, 0,
    0x3fee600000000000, 0x3faaaef2d0fb0000, 0x3d20fc1a353bb42e, 0,
    0x3fee200000000000, 0x3faeea31c0068000, 0x3d3c3dd83606d891, 0,
    0x3fede00000000000, 0x3fb1973bd1464000, 0x3d3566d154f930b3, 0,
    0x3feda00000000000, 0x3fb3bdf5a7d20000, 0xbd319bd0ad125895, 0,
    0x3fed800000000000, 0x3fb4d3115d208000, 0xbcf53a2582f4e1ef, 0,
    0x3fed400000000000, 0x3fb700d30aeac000, 0x3cec1e8da99ded32, 0,
    0x3fed000000000000, 0x3fb9335e5d594000, 0x3d23115c3abd47da, 0,
    0x3fece00000000000, 0x3fba4e7640b1c000, 0xbd0e42b6b94407c8, 0,
    0x3feca00000000000, 0x3fbc885801bc4000, 0x3d2646d1c65aacd3, 0,
    0x3fec800000000000, 0x3fbda72763844000, 0x3d1a89401fa71733, 0,
    0x3fec400000000000, 0x3fbfe89139dbc000, 0x3d356594d82f7a82, 0,
    0x3fec000000000000, 0x3fc1178e8227e000, 0x3d21ef78ce2d07f2, 0,
    0x3febe00000000000, 0x3fc1aa2b7e240000, 0xbd31ac38dde3b366, 0,
    0x3feba00000000000, 0x3fc2d1610c868000, 0x3d039d6ccb81b4a1, 0,
    0x3feb800000000000, 0x3fc365fcb015a000, 0xbd3fd3a0afb9691b, 0,
    0x3feb400000000000, 0x3fc4913d8333c000, 0xbd353e43558124c4, 0,
    0x3feb200000000000, 0x3fc527e5e4a1c000, 0xbd34e60b8d4b411d, 0,
    0x3feb000000000000, 0x3fc5bf406b544000, 0xbd127023eb68981c, 0,
    0x3feac00000000000, 0x3fc6f0128b756000, 0x3d3577390d31ef0f, 0,
    0x3feaa00000000000, 0x3fc7898d85444000, 0x3d38e67be3dbaf3f, 0,
    0x3fea600000000000, 0x3fc8beafeb390000, 0xbd073d54aae92cd1, 0,
    0x3fea400000000000, 0x3fc95a5adcf70000, 0x3d07f22858a0ff6f, 0,
    0x3fea200000000000, 0x3fc9f6c40708a000, 0xbd3337d94bcd3f43, 0,
    0x3fe9e00000000000, 0x3fcb31d8575bc000, 0x3d3c794e562a63cb, 0,
    0x3fe9c00000000000, 0x3fcbd087383be000, 0xbd2d4bc4595412b6, 0,
    0x3fe9a00000000000, 0x3fcc6ffbc6f00000, 0x3d3ee138d3a69d43, 0,
    0x3fe9800000000000, 0x3fcd1037f2656000, 0xbd084a7e75b6f6e4, 0,
    0x3fe9400000000000, 0x3fce530effe72000, 0xbd3fdbdbb13f7c18, 0,
    0x3fe9200000000000, 0x3fcef5ade4dd0000, 0xbcca211565bb8e11, 0,
    0x3fe9000000000000, 0x3fcf991c6cb3c000, 0xbd390d04cd7cc834, 0,
    0x3fe8e00000000000, 0x3fd01eae5626c000, 0x3d3a43dcfade85ae, 0,
    0x3fe8a00000000000, 0x3fd0c42d67616000, 0x3d27188b163ceae9, 0,
    0x3fe8800000000000, 0x3fd1178e8227e000, 0x3d31ef78ce2d07f2, 0,
    0x3fe8600000000000, 0x3fd16b5ccbad0000, 0xbd323299042d74bf, 0,
    0x3fe8400000000000, 0x3fd1bf99635a7000, 0xbd31ac89575c2125, 0,
    0x3fe8200000000000, 0x3fd214456d0ec000, 0xbd3caf0428b728a3, 0,
    0x3fe8000000000000, 0x3fd269621134e000, 0xbd31b61f10522625, 0,
    0x3fe7e00000000000, 0x3fd2bef07cdc9000, 0x3d2a9cfa4a5004f4, 0,
    0x3fe7a00000000000, 0x3fd36b6776be1000, 0x3d116ecdb0f177c8, 0,
    0x3fe7800000000000, 0x3fd3c25277333000, 0x3d183b54b606bd5c, 0,
    0x3fe7600000000000, 0x3fd419b423d5f000, 0xbd3ce379226de3ec, 0,
    0x3fe7400000000000, 0x3fd4718dc271c000, 0x3d306c18fb4c14c5, 0,
];

/// `log(x)`, the natural logarithm, as every ddx engine computes it (the module's method).
#[inline]
pub extern "C" fn log(x: f64) -> f64 {
    if log_is_plain(x) {
        return log_of_bits(x.to_bits());
    }
    log_special(x)
}

/// Whether `log` takes its plain path at `x`: `x` positive, normal and finite. Code
/// generators test exactly this, as two comparisons (`NaN` fails both).
#[inline(always)]
pub fn log_is_plain(x: f64) -> bool {
    (f64::MIN_POSITIVE..=f64::MAX).contains(&x)
}

/// The plain path from `ix`, the bits of a positive normal number, or of a subnormal one
/// scaled by `2⁵²` less `52 << 52` (the steps only need `ix − LOG_OFF`'s top 12 bits to be
/// `k`, two's complement): with the CPU's fused multiply-add where it has one (checked at
/// run time on x86-64), the C library's correctly rounded one where not.
#[inline]
fn log_of_bits(ix: u64) -> f64 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has FMA (checked above).
            return unsafe { log_of_bits_fma(ix) };
        }
    }
    log_steps(ix)
}

/// [`log_steps`] compiled with the FMA instruction.
///
/// # Safety
/// The CPU must have FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn log_of_bits_fma(ix: u64) -> f64 {
    log_steps(ix)
}

/// The plain path's operations, in the order every engine follows, with `f64::mul_add`
/// as the fused multiply-add.
#[inline(always)]
fn log_steps(ix: u64) -> f64 {
    log_steps_with(ix, f64::mul_add)
}

/// The plain path's operations with `fma` as the fused multiply-add (any correctly
/// rounded one answers the same bits; the tests pass a software one).
#[inline(always)]
fn log_steps_with(ix: u64, fma: impl Fn(f64, f64, f64) -> f64) -> f64 {
    let tmp = ix.wrapping_sub(LOG_OFF);
    let i = ((tmp >> 45) & 127) as usize;
    let k = (tmp as i64) >> 52;
    let z = f64::from_bits(ix.wrapping_sub(tmp & (0xfff << 52)));
    let row = |j: usize| f64::from_bits(LOG_TABLE[4 * i + j]);
    let (invc, logc_hi, logc_lo) = (row(0), row(1), row(2));
    let kd = k as f64;
    // The reduction, exact: r = z · invc − 1, w = k · ln2_hi + logc_hi, hi + lo = w + r.
    let r = fma(z, invc, -1.0);
    let w = fma(kd, LOG_LN2_HI, logc_hi);
    let hi = w + r;
    let lo = r - (hi - w);
    // q(r) by Estrin's scheme.
    let [c2, c3, c4, c5, c6, c7, c8] = LOG_POLY;
    let r2 = r * r;
    let a = fma(r, c3, c2);
    let b = fma(r, c5, c4);
    let c = fma(r, c7, c6);
    let u = fma(r2, c8, c);
    let v = fma(r2, b, a);
    let r4 = r2 * r2;
    let q = fma(r4, u, v);
    // The small terms, then hi.
    let t = fma(kd, LOG_LN2_LO, logc_lo);
    let t = t + lo;
    let t = fma(r2, q, t);
    hi + t
}

/// `log` where [`log_is_plain`] does not hold: zeros, negative numbers, `+∞`, NaN and
/// positive subnormal numbers.
#[cold]
fn log_special(x: f64) -> f64 {
    if x.is_nan() {
        return x + x;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x < 0.0 {
        return f64::NAN;
    }
    if x == f64::INFINITY {
        return x;
    }
    // Subnormal: x · 2⁵² is normal (exactly), and k is 52 less.
    log_of_bits(
        (x * f64::from_bits(0x4330_0000_0000_0000))
            .to_bits()
            .wrapping_sub(52 << 52),
    )
}

/// [`log`] of four arguments at once where every one takes the plain path
/// ([`log_is_plain`]), `None` where one does not: lane by lane the plain path's operations
/// in its order, in AVX2 registers, the table read by three gathers. Tested against
/// [`log`] bit for bit in `log_of_four_lanes_is_log_lane_by_lane`.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma")]
pub unsafe fn log_plain4_avx2(x: [f64; 4]) -> Option<[f64; 4]> {
    use std::arch::x86_64::*;
    let c = |v: f64| _mm256_set1_pd(v);
    let w64 = |v: u64| _mm256_set1_epi64x(v as i64);
    // SAFETY: `x` is four `f64`s (unaligned loads and stores); the gathers read entries
    // `4i`, `4i + 1` and `4i + 2` of `LOG_TABLE` for `i < 128`, inside its 512.
    unsafe {
        let x = _mm256_loadu_pd(x.as_ptr());
        let plain = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(x, c(f64::MIN_POSITIVE)),
            _mm256_cmp_pd::<_CMP_LE_OQ>(x, c(f64::MAX)),
        );
        if _mm256_movemask_pd(plain) != 0b1111 {
            return None;
        }
        let ix = _mm256_castpd_si256(x);
        let tmp = _mm256_sub_epi64(ix, w64(LOG_OFF));
        let four_i =
            _mm256_slli_epi64::<2>(_mm256_and_si256(_mm256_srli_epi64::<45>(tmp), w64(127)));
        // k = tmp's top 12 bits, two's complement: as offset binary (top bit flipped) they
        // are k + 2048, which sits in the low bits of 2⁵² + k + 2048 (less 0x4330…0800).
        let biased = _mm256_srli_epi64::<52>(_mm256_xor_si256(tmp, w64(1 << 63)));
        let kd = _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(biased, w64(0x4330_0000_0000_0000))),
            c(f64::from_bits(0x4330_0000_0000_0800)),
        );
        let z = _mm256_castsi256_pd(_mm256_sub_epi64(
            ix,
            _mm256_and_si256(tmp, w64(0xfff << 52)),
        ));
        let table = LOG_TABLE.as_ptr() as *const f64;
        let invc = _mm256_i64gather_pd::<8>(table, four_i);
        let logc_hi = _mm256_i64gather_pd::<8>(table.add(1), four_i);
        let logc_lo = _mm256_i64gather_pd::<8>(table.add(2), four_i);
        let r = _mm256_fmadd_pd(z, invc, c(-1.0));
        let w = _mm256_fmadd_pd(kd, c(LOG_LN2_HI), logc_hi);
        let hi = _mm256_add_pd(w, r);
        let lo = _mm256_sub_pd(r, _mm256_sub_pd(hi, w));
        let [c2, c3, c4, c5, c6, c7, c8] = LOG_POLY;
        let r2 = _mm256_mul_pd(r, r);
        let a = _mm256_fmadd_pd(r, c(c3), c(c2));
        let b = _mm256_fmadd_pd(r, c(c5), c(c4));
        let cc = _mm256_fmadd_pd(r, c(c7), c(c6));
        let u = _mm256_fmadd_pd(r2, c(c8), cc);
        let v = _mm256_fmadd_pd(r2, b, a);
        let r4 = _mm256_mul_pd(r2, r2);
        let q = _mm256_fmadd_pd(r4, u, v);
        let t = _mm256_fmadd_pd(kd, c(LOG_LN2_LO), logc_lo);
        let t = _mm256_add_pd(t, lo);
        let t = _mm256_fmadd_pd(r2, q, t);
        let y = _mm256_add_pd(hi, t);
        let mut out = [0.0; 4];
        _mm256_storeu_pd(out.as_mut_ptr(), y);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A xorshift stream of `u64`s (no dependency, the same draws on every run).
    fn stream(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    /// Arguments of every kind `log` meets: every positive normal binade, near 1 on both
    /// sides (across the borders of the interval around 1), subnormal, and small integers.
    fn argument(draw: &mut impl FnMut() -> u64, k: usize) -> f64 {
        let unit = |u: u64| (u >> 11) as f64 / (1u64 << 53) as f64;
        match k % 8 {
            0 | 1 => f64::from_bits(0x0010_0000_0000_0000 + draw() % 0x7fe0_0000_0000_0000),
            2 => 1.0 + (unit(draw()) - 0.5) / 32.0,
            3 => 1.0 + (unit(draw()) - 0.5) / 1e6,
            4 => f64::from_bits(1 + draw() % 0x000f_ffff_ffff_ffff),
            5 => {
                // Either side of interval 79's ends, 1 − 2⁻⁹ and 1 + 2⁻⁸.
                let end = [1.0 - 1.0 / 512.0, 1.0 + 1.0 / 256.0][(draw() % 2) as usize];
                end * (1.0 + (unit(draw()) - 0.5) * 1e-13)
            }
            6 => 0.5 + unit(draw()) * 1.5,
            _ => (draw() % 100_000 + 1) as f64,
        }
    }

    /// The distance in ULPs of `a` from `b` (both finite, of one sign).
    fn ulps(a: f64, b: f64) -> u64 {
        a.to_bits().abs_diff(b.to_bits())
    }

    #[test]
    fn log_is_within_one_ulp_of_the_c_library() {
        let mut draw = stream(0x2545_f491_4f6c_dd1d);
        let (mut differ, n) = (0usize, 400_000);
        for k in 0..n {
            let x = argument(&mut draw, k);
            let (ours, libc) = (log(x), x.ln());
            let d = ulps(ours, libc);
            assert!(
                d <= 1,
                "log({x:e} = {:#x}): {ours:e} against {libc:e}",
                x.to_bits()
            );
            differ += usize::from(d != 0);
        }
        // Both are faithful, neither correctly rounded: they part in the last bit rarely.
        assert!(differ < n / 100, "{differ} of {n} differ");
    }

    /// The FMA instruction's path and a software fused multiply-add (the `libm` crate's,
    /// which a CPU without the instruction would get the same bits from) agree to the bit.
    #[test]
    fn log_with_and_without_the_fma_instruction_agree() {
        let mut draw = stream(0x0123_4567_89ab_cdef);
        for k in 0..100_000 {
            let x = argument(&mut draw, k);
            if log_is_plain(x) {
                let soft = log_steps_with(x.to_bits(), libm::fma);
                assert_eq!(log(x).to_bits(), soft.to_bits(), "{x:e}");
            }
        }
    }

    #[test]
    fn log_of_special_and_exact_arguments() {
        assert_eq!(log(1.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(log(0.0), f64::NEG_INFINITY);
        assert_eq!(log(-0.0), f64::NEG_INFINITY);
        assert_eq!(log(f64::INFINITY), f64::INFINITY);
        assert!(log(-1.0).is_nan() && log(f64::NEG_INFINITY).is_nan() && log(-1e-310).is_nan());
        let payload = f64::from_bits(0x7ff8_0000_0000_1234);
        assert_eq!(log(payload).to_bits(), payload.to_bits());
        // Powers of two: k · ln 2 rounded once (k · LN2_HI exact, the row of z = 1).
        for k in [-1074, -1060, -1023, -1022, -1, 1, 2, 10, 1023] {
            let x = 2f64.powi(k);
            assert!(ulps(log(x), x.ln()) <= 1, "2^{k}");
        }
        assert_eq!(log(std::f64::consts::E), 1.0);
        assert_eq!(log(f64::MAX), f64::MAX.ln());
        assert_eq!(log(f64::MIN_POSITIVE), f64::MIN_POSITIVE.ln());
        // Next to 1: log(1 + ε) = ε − ε²/2 + …, and ε − ε²/2 = ε − 2⁻¹⁰⁵ is the number
        // below ε; log(1 − ε/2) = −ε/2 − ε²/8 − … rounds to −ε/2.
        assert_eq!(log(1.0 + f64::EPSILON), f64::EPSILON.next_down());
        assert_eq!(log(1.0 - f64::EPSILON / 2.0), -f64::EPSILON / 2.0);
    }

    /// The conditions the method's exactness rests on, checked on the table itself (as
    /// `scripts/log_table.py` checked them when it computed the table).
    #[test]
    fn the_table_keeps_the_reduction_exact() {
        let grid = 2f64.powi(-42);
        assert_eq!((LOG_LN2_HI / grid).fract(), 0.0);
        assert!(LOG_LN2_HI / grid < 2f64.powi(42));
        for i in 0..128u64 {
            let row = |j: usize| f64::from_bits(LOG_TABLE[4 * i as usize + j]);
            let (invc, hi, lo) = (row(0), row(1), row(2));
            // 8 significant bits: the low 45 bits of the significand are zero.
            assert_eq!(invc.to_bits() & ((1 << 45) - 1), 0, "row {i}");
            assert_eq!((hi / grid).fract(), 0.0, "row {i}");
            assert!(lo.abs() <= grid / 2.0, "row {i}");
            let ends = [LOG_OFF + (i << 45), LOG_OFF + ((i + 1) << 45) - 1];
            for z in ends.map(f64::from_bits) {
                // r is exact: the fused multiply-add's r less the product's two parts
                // (z · invc = p + e exactly) minus 1 leaves nothing.
                let r = z.mul_add(invc, -1.0);
                let p = z * invc;
                let e = z.mul_add(invc, -p);
                assert_eq!((p - 1.0) - r + e, 0.0, "row {i}: r = {r:e} is not exact");
                assert!(r.abs() < 2f64.powf(-7.4), "row {i}: r = {r:e}");
                // Fast2Sum's condition for k = 0: logc_hi zero or of r's exponent at least.
                assert!(
                    hi == 0.0 || hi.abs().log2().floor() >= r.abs().log2().floor(),
                    "row {i}"
                );
            }
        }
        // 1 is at the middle of row 79, whose invc is 1 and log 0.
        assert_eq!(
            (
                (1f64.to_bits() - LOG_OFF) >> 45,
                (1f64.to_bits() - LOG_OFF) >> 44 & 1
            ),
            (79, 1)
        );
        assert_eq!(
            (LOG_TABLE[4 * 79], LOG_TABLE[4 * 79 + 1]),
            (1f64.to_bits(), 0)
        );
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn log_of_four_lanes_is_log_lane_by_lane() {
        if !(std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma"))
        {
            return;
        }
        let mut draw = stream(0x9e37_79b9_7f4a_7c15);
        let (mut whole, mut refused) = (0, 0);
        for i in 0..100_000usize {
            let x: [f64; 4] = std::array::from_fn(|l| match (i + l) % 11 {
                9 if i % 53 == 0 => -(argument(&mut draw, i)),
                10 if i % 59 == 0 => [0.0, f64::NAN, f64::INFINITY][i % 3],
                k => argument(&mut draw, k),
            });
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            match unsafe { log_plain4_avx2(x) } {
                Some(y) => {
                    whole += 1;
                    for l in 0..4 {
                        assert_eq!(y[l].to_bits(), log(x[l]).to_bits(), "log({:e})", x[l]);
                    }
                }
                None => {
                    refused += 1;
                    assert!(x.iter().any(|&v| !log_is_plain(v)), "{x:?}");
                }
            }
        }
        assert!(whole > 1000 && refused > 1000, "{whole} {refused}");
    }
}
