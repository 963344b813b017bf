//! How every operation evaluates on `f64`: the one definition that constant folding, the
//! interpreter and the compiled kernels share.
//!
//! The transcendental functions are `extern "C"` so that code generators can call the very
//! same machine code through [`MathTable`]; interpreter and JIT therefore agree to the bit.
//! The rules that IEEE leaves open, or that Rust's standard library spells differently,
//! are fixed here (the repository's [ARCHITECTURE.md, "Semantics"](https://github.com/ddx-ad/ddx/blob/main/ARCHITECTURE.md#semantics)):
//!
//! - `sign(±0) = 0`, `sign(NaN) = NaN` (unlike `f64::signum`);
//! - `max`/`min` with one NaN operand answer the other (IEEE 754-2008 maxNum/minNum); at a
//!   tie, including `+0` against `-0`, they answer the first operand;
//! - a comparison with a NaN operand answers `0.0`, `!=` included;
//! - `select(c, t, f)` takes `t` when `c` is nonzero or NaN.

/// This module's source text (this file's and its submodule's). A code generator that keeps
/// compiled code between runs keys it on this too, so that a development build that
/// changes how an operation evaluates never loads code made before the change (ddx's
/// version number alone would not change).
#[doc(hidden)]
pub const SOURCE: &str = concat!(include_str!("math.rs"), include_str!("math/natural_log.rs"));

mod natural_log;
#[cfg(target_arch = "x86_64")]
pub use natural_log::log_plain4_avx2;
pub use natural_log::{log, log_is_plain, LOG_LN2_HI, LOG_LN2_LO, LOG_OFF, LOG_POLY, LOG_TABLE};

/// The signature of a one-argument math function in [`MathTable`].
pub type UnaryFn = extern "C" fn(f64) -> f64;
/// The signature of a two-argument math function in [`MathTable`].
pub type BinaryFn = extern "C" fn(f64, f64) -> f64;
/// The signature of a three-argument math function in [`MathTable`].
pub type TernaryFn = extern "C" fn(f64, f64, f64) -> f64;

macro_rules! unary_fns {
    ($($name:ident => $body:expr),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($name), "(x)` as every ddx engine computes it.")]
            #[inline]
            pub extern "C" fn $name(x: f64) -> f64 {
                let f: fn(f64) -> f64 = $body;
                f(x)
            }
        )*
    };
}

unary_fns! {
    sin => f64::sin,
    cos => f64::cos,
    tan => f64::tan,
    log10 => f64::log10,
    cbrt => f64::cbrt,
    asin => f64::asin,
    acos => f64::acos,
    atan => f64::atan,
    sinh => f64::sinh,
    cosh => f64::cosh,
    tanh => f64::tanh,
    asinh => f64::asinh,
    acosh => f64::acosh,
    atanh => odd_atanh,
    erf => libm::erf,
    log1p => f64::ln_1p,
    expm1 => f64::exp_m1,
    log2 => f64::log2,
}

/// `exp(x)` as every ddx engine computes it: ddx's own, a fixed sequence of IEEE 754
/// operations (no fused multiply-add) that code generators can emit inline, in vector
/// lanes too, and get the same bits.
///
/// The method is Tang's table-driven one (P. T. P. Tang, "Table-driven implementation of the
/// exponential function in IEEE floating-point arithmetic", ACM TOMS 15(2), 1989), with a
/// table of 128 entries as in the exp of Arm's optimized-routines:
/// - `k = round(x · 128/ln 2)`, `r = x − k · ln2/128` (Cody–Waite: `ln2/128` split in a
///   34-bit head, exact against `k`, and a tail);
/// - `exp(x) = 2^(k div 128) · 2^((k mod 128)/128) · exp(r)`, the middle factor from
///   [`EXP_TABLE`] (its rounded value and that rounding's relative error);
/// - `exp(r) − 1` by its Taylor polynomial of degree 6 (`|r| ≤ ln2/256`: truncation below
///   2⁻⁷²).
///
/// Accuracy, measured against mpmath (the Python suite's `test_exp_is_faithful`): at most
/// 0.51 ULP over the whole range; results in the subnormal range are rounded once (the
/// rounding is moved to the subnormal's last place before scaling). `exp(±0) = 1`,
/// `exp(−∞) = +0`, `exp(+∞) = +∞`, `exp(NaN)` is NaN, `x > 709.78…` overflows to `+∞`, and
/// `x < −745.13…` underflows to `+0`.
#[inline]
pub extern "C" fn exp(x: f64) -> f64 {
    if exp_is_plain(x) {
        let (ki, r) = exp_reduce(x);
        let (scale, tmp) = exp_parts(ki, r);
        return scale + scale * tmp;
    }
    exp_special(x)
}

/// [`exp`] of four arguments at once where every one takes the plain path
/// ([`exp_is_plain`]), `None` where one does not: lane by lane the plain path's
/// operations in its order (so [`exp`]'s bits, NaN never reaching it), in AVX2 registers,
/// the table read by two gathers. Tested against [`exp`] bit for bit in
/// `exp_of_four_lanes_is_exp_lane_by_lane`.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
pub unsafe fn exp_plain4_avx2(x: [f64; 4]) -> Option<[f64; 4]> {
    use std::arch::x86_64::*;
    let c = |v: f64| _mm256_set1_pd(v);
    // SAFETY: `x` is four `f64`s (unaligned loads and stores); the gathers read entries
    // `2i` and `2i + 1` of `EXP_TABLE` for `i < 128`, inside its 256.
    unsafe {
        let x = _mm256_loadu_pd(x.as_ptr());
        // |x| in [2⁻⁵⁴, 512): NaN fails both comparisons, as `exp_is_plain`'s range.
        let a = _mm256_andnot_pd(c(-0.0), x);
        let plain = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(a, c(EXP_PLAIN_MIN)),
            _mm256_cmp_pd::<_CMP_LT_OQ>(a, c(EXP_PLAIN_MAX)),
        );
        if _mm256_movemask_pd(plain) != 0b1111 {
            return None;
        }
        // `exp_reduce`.
        let kd = _mm256_add_pd(_mm256_mul_pd(x, c(EXP_INV_LN2_N)), c(EXP_SHIFT));
        let ki = _mm256_castpd_si256(kd);
        let kd = _mm256_sub_pd(kd, c(EXP_SHIFT));
        let r = _mm256_add_pd(
            _mm256_add_pd(x, _mm256_mul_pd(kd, c(EXP_NEG_LN2_HI_N))),
            _mm256_mul_pd(kd, c(EXP_NEG_LN2_LO_N)),
        );
        // `exp_parts_bits`.
        let two_i = _mm256_slli_epi64::<1>(_mm256_and_si256(ki, _mm256_set1_epi64x(127)));
        let table = EXP_TABLE.as_ptr() as *const i64;
        let tail = _mm256_castsi256_pd(_mm256_i64gather_epi64::<8>(table, two_i));
        let scale = _mm256_add_epi64(
            _mm256_i64gather_epi64::<8>(table.add(1), two_i),
            _mm256_slli_epi64::<45>(ki),
        );
        let scale = _mm256_castsi256_pd(scale);
        let [c2, c3, c4, c5, c6] = EXP_POLY;
        let r2 = _mm256_mul_pd(r, r);
        // tail + r + r2·(c2 + r·c3) + r2·r2·(c4 + r·c5 + r2·c6), left to right.
        let p = _mm256_mul_pd(r2, _mm256_add_pd(c(c2), _mm256_mul_pd(r, c(c3))));
        let q = _mm256_add_pd(
            _mm256_add_pd(c(c4), _mm256_mul_pd(r, c(c5))),
            _mm256_mul_pd(r2, c(c6)),
        );
        let tmp = _mm256_add_pd(
            _mm256_add_pd(_mm256_add_pd(tail, r), p),
            _mm256_mul_pd(_mm256_mul_pd(r2, r2), q),
        );
        let y = _mm256_add_pd(scale, _mm256_mul_pd(scale, tmp));
        let mut out = [0.0; 4];
        _mm256_storeu_pd(out.as_mut_ptr(), y);
        Some(out)
    }
}

/// Whether `exp` takes its plain path at `x`: `2⁻⁵⁴ ≤ |x| < 512` (so `2^(k div 128)` and
/// the result are normal numbers). Code generators test exactly this, as two comparisons.
#[inline(always)]
pub fn exp_is_plain(x: f64) -> bool {
    let a = x.abs();
    (EXP_PLAIN_MIN..EXP_PLAIN_MAX).contains(&a)
}

/// The plain path's lower bound on `|x|`, `2⁻⁵⁴`: below it `exp(x)` rounds to `1 + x`.
pub const EXP_PLAIN_MIN: f64 = f64::from_bits(0x3c90_0000_0000_0000);
/// The plain path's upper bound on `|x|` (exclusive), `512`.
pub const EXP_PLAIN_MAX: f64 = 512.0;
/// `128 / ln 2`, rounded.
pub const EXP_INV_LN2_N: f64 = f64::from_bits(0x4067_1547_652b_82fe);
/// `1.5 · 2⁵²`: adding it rounds a number of magnitude below `2⁵¹` to an integer, which
/// then sits in the low bits of the sum's representation.
pub const EXP_SHIFT: f64 = f64::from_bits(0x4338_0000_0000_0000);
/// `−ln2/128`'s head, 34 significant bits: `k` times it is exact for `|k| < 2¹⁹`.
pub const EXP_NEG_LN2_HI_N: f64 = f64::from_bits(0xbf76_2e42_fef8_0000);
/// `−ln2/128`'s tail: `−(ln2/128 − head)`, rounded.
pub const EXP_NEG_LN2_LO_N: f64 = f64::from_bits(0xbd41_cf79_abc9_e3b4);
/// The Taylor coefficients `1/2!, …, 1/6!` of `exp(r) − 1 − r`, rounded.
pub const EXP_POLY: [f64; 5] = [0.5, 1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0];

/// For `i` in `0..128`, the pair `(tail, scale)` at `[2i]`, `[2i + 1]`: `scale` is the
/// representation of `2^(i/128)` rounded to nearest, less `i << 45`; `tail` the
/// representation of that rounding's relative error, rounded. Computed at 300 bits by
/// `scripts/exp_table.py` (mpmath).
pub static EXP_TABLE: [u64; 256] = [
    0x0000000000000000,
    0x3ff0000000000000,
    0x3c9b3b4f1a88bf6e,
    0x3feff63da9fb3335,
    0xbc7160139cd8dc5d,
    0x3fefec9a3e778061,
    0xbc905e7a108766d1,
    0x3fefe315e86e7f85,
    0x3c8cd2523567f613,
    0x3fefd9b0d3158574,
    0xbc8bce8023f98efa,
    0x3fefd06b29ddf6de,
    0x3c60f74e61e6c861,
    0x3fefc74518759bc8,
    0x3c90a3e45b33d399,
    0x3fefbe3ecac6f383,
    0x3c979aa65d837b6d,
    0x3fefb5586cf9890f,
    0x3c8eb51a92fdeffc,
    0x3fefac922b7247f7,
    0x3c3ebe3d702f9cd1,
    0x3fefa3ec32d3d1a2,
    0xbc6a033489906e0b,
    0x3fef9b66affed31b,
    0xbc9556522a2fbd0e,
    0x3fef9301d0125b51,
    0xbc5080ef8c4eea55,
    0x3fef8abdc06c31cc,
    0xbc91c923b9d5f416,
    0x3fef829aaea92de0,
    0x3c80d3e3e95c55af,
    0x3fef7a98c8a58e51,
    0xbc801b15eaa59348,
    0x3fef72b83c7d517b,
    0xbc8f1ff055de323d,
    0x3fef6af9388c8dea,
    0x3c8b898c3f1353bf,
    0x3fef635beb6fcb75,
    0xbc96d99c7611eb26,
    0x3fef5be084045cd4,
    0x3c9aecf73e3a2f60,
    0x3fef54873168b9aa,
    0xbc8fe782cb86389d,
    0x3fef4d5022fcd91d,
    0x3c8a6f4144a6c38d,
    0x3fef463b88628cd6,
    0x3c807a05b0e4047d,
    0x3fef3f49917ddc96,
    0x3c968efde3a8a894,
    0x3fef387a6e756238,
    0x3c875e18f274487d,
    0x3fef31ce4fb2a63f,
    0x3c80472b981fe7f2,
    0x3fef2b4565e27cdd,
    0xbc96b87b3f71085e,
    0x3fef24dfe1f56381,
    0x3c82f7e16d09ab31,
    0x3fef1e9df51fdee1,
    0xbc3d219b1a6fbffa,
    0x3fef187fd0dad990,
    0x3c8b3782720c0ab4,
    0x3fef1285a6e4030b,
    0x3c6e149289cecb8f,
    0x3fef0cafa93e2f56,
    0x3c834d754db0abb6,
    0x3fef06fe0a31b715,
    0x3c864201e2ac744c,
    0x3fef0170fc4cd831,
    0x3c8fdd395dd3f84a,
    0x3feefc08b26416ff,
    0xbc86a3803b8e5b04,
    0x3feef6c55f929ff1,
    0xbc924aedcc4b5068,
    0x3feef1a7373aa9cb,
    0xbc9907f81b512d8e,
    0x3feeecae6d05d866,
    0xbc71d1e83e9436d2,
    0x3feee7db34e59ff7,
    0xbc991919b3ce1b15,
    0x3feee32dc313a8e5,
    0x3c859f48a72a4c6d,
    0x3feedea64c123422,
    0xbc9312607a28698a,
    0x3feeda4504ac801c,
    0xbc58a78f4817895b,
    0x3feed60a21f72e2a,
    0xbc7c2c9b67499a1b,
    0x3feed1f5d950a897,
    0x3c4363ed60c2ac11,
    0x3feece086061892d,
    0x3c9666093b0664ef,
    0x3feeca41ed1d0057,
    0x3c6ecce1daa10379,
    0x3feec6a2b5c13cd0,
    0x3c93ff8e3f0f1230,
    0x3feec32af0d7d3de,
    0x3c7690cebb7aafb0,
    0x3feebfdad5362a27,
    0x3c931dbdeb54e077,
    0x3feebcb299fddd0d,
    0xbc8f94340071a38e,
    0x3feeb9b2769d2ca7,
    0xbc87deccdc93a349,
    0x3feeb6daa2cf6642,
    0xbc78dec6bd0f385f,
    0x3feeb42b569d4f82,
    0xbc861246ec7b5cf6,
    0x3feeb1a4ca5d920f,
    0x3c93350518fdd78e,
    0x3feeaf4736b527da,
    0x3c7b98b72f8a9b05,
    0x3feead12d497c7fd,
    0x3c9063e1e21c5409,
    0x3feeab07dd485429,
    0x3c34c7855019c6ea,
    0x3feea9268a5946b7,
    0x3c9432e62b64c035,
    0x3feea76f15ad2148,
    0xbc8ce44a6199769f,
    0x3feea5e1b976dc09,
    0xbc8c33c53bef4da8,
    0x3feea47eb03a5585,
    0xbc845378892be9ae,
    0x3feea34634ccc320,
    0xbc93cedd78565858,
    0x3feea23882552225,
    0x3c5710aa807e1964,
    0x3feea155d44ca973,
    0xbc93b3efbf5e2228,
    0x3feea09e667f3bcd,
    0xbc6a12ad8734b982,
    0x3feea012750bdabf,
    0xbc6367efb86da9ee,
    0x3fee9fb23c651a2f,
    0xbc80dc3d54e08851,
    0x3fee9f7df9519484,
    0xbc781f647e5a3ecf,
    0x3fee9f75e8ec5f74,
    0xbc86ee4ac08b7db0,
    0x3fee9f9a48a58174,
    0xbc8619321e55e68a,
    0x3fee9feb564267c9,
    0x3c909ccb5e09d4d3,
    0x3feea0694fde5d3f,
    0xbc7b32dcb94da51d,
    0x3feea11473eb0187,
    0x3c94ecfd5467c06b,
    0x3feea1ed0130c132,
    0x3c65ebe1abd66c55,
    0x3feea2f336cf4e62,
    0xbc88a1c52fb3cf42,
    0x3feea427543e1a12,
    0xbc9369b6f13b3734,
    0x3feea589994cce13,
    0xbc805e843a19ff1e,
    0x3feea71a4623c7ad,
    0xbc94d450d872576e,
    0x3feea8d99b4492ed,
    0x3c90ad675b0e8a00,
    0x3feeaac7d98a6699,
    0x3c8db72fc1f0eab4,
    0x3feeace5422aa0db,
    0xbc65b6609cc5e7ff,
    0x3feeaf3216b5448c,
    0x3c7bf68359f35f44,
    0x3feeb1ae99157736,
    0xbc93091fa71e3d83,
    0x3feeb45b0b91ffc6,
    0xbc5da9b88b6c1e29,
    0x3feeb737b0cdc5e5,
    0xbc6c23f97c90b959,
    0x3feeba44cbc8520f,
    0xbc92434322f4f9aa,
    0x3feebd829fde4e50,
    0xbc85ca6cd7668e4b,
    0x3feec0f170ca07ba,
    0x3c71affc2b91ce27,
    0x3feec49182a3f090,
    0x3c6dd235e10a73bb,
    0x3feec86319e32323,
    0xbc87c50422622263,
    0x3feecc667b5de565,
    0x3c8b1c86e3e231d5,
    0x3feed09bec4a2d33,
    0xbc91bbd1d3bcbb15,
    0x3feed503b23e255d,
    0x3c90cc319cee31d2,
    0x3feed99e1330b358,
    0x3c8469846e735ab3,
    0x3feede6b5579fdbf,
    0xbc82dfcd978e9db4,
    0x3feee36bbfd3f37a,
    0x3c8c1a7792cb3387,
    0x3feee89f995ad3ad,
    0xbc907b8f4ad1d9fa,
    0x3feeee07298db666,
    0xbc55c3d956dcaeba,
    0x3feef3a2b84f15fb,
    0xbc90a40e3da6f640,
    0x3feef9728de5593a,
    0xbc68d6f438ad9334,
    0x3feeff76f2fb5e47,
    0xbc91eee26b588a35,
    0x3fef05b030a1064a,
    0x3c74ffd70a5fddcd,
    0x3fef0c1e904bc1d2,
    0xbc91bdfbfa9298ac,
    0x3fef12c25bd71e09,
    0x3c736eae30af0cb3,
    0x3fef199bdd85529c,
    0x3c8ee3325c9ffd94,
    0x3fef20ab5fffd07a,
    0x3c84e08fd10959ac,
    0x3fef27f12e57d14b,
    0x3c63cdaf384e1a67,
    0x3fef2f6d9406e7b5,
    0x3c676b2c6c921968,
    0x3fef3720dcef9069,
    0xbc808a1883ccb5d2,
    0x3fef3f0b555dc3fa,
    0xbc8fad5d3ffffa6f,
    0x3fef472d4a07897c,
    0xbc900dae3875a949,
    0x3fef4f87080d89f2,
    0x3c74a385a63d07a7,
    0x3fef5818dcfba487,
    0xbc82919e2040220f,
    0x3fef60e316c98398,
    0x3c8e5a50d5c192ac,
    0x3fef69e603db3285,
    0x3c843a59ac016b4b,
    0x3fef7321f301b460,
    0xbc82d52107b43e1f,
    0x3fef7c97337b9b5f,
    0xbc892ab93b470dc9,
    0x3fef864614f5a129,
    0x3c74b604603a88d3,
    0x3fef902ee78b3ff6,
    0x3c83c5ec519d7271,
    0x3fef9a51fbc74c83,
    0xbc8ff7128fd391f0,
    0x3fefa4afa2a490da,
    0xbc8dae98e223747d,
    0x3fefaf482d8e67f1,
    0x3c8ec3bc41aa2008,
    0x3fefba1bee615a27,
    0x3c842b94c3a9eb32,
    0x3fefc52b376bba97,
    0x3c8a64a931d185ee,
    0x3fefd0765b6e4540,
    0xbc8e37bae43be3ed,
    0x3fefdbfdad9cbe14,
    0x3c77893b4d91cd9d,
    0x3fefe7c1819e90d8,
    0x3c5305c14160cc89,
    0x3feff3c22b8f71f1,
];

/// `x`'s reduction: the representation of `k + 1.5 · 2⁵²` (its low bits are `k`), and `r`.
#[inline(always)]
pub fn exp_reduce(x: f64) -> (u64, f64) {
    let z = x * EXP_INV_LN2_N;
    let kd = z + EXP_SHIFT;
    let ki = kd.to_bits();
    let kd = kd - EXP_SHIFT;
    let r = x + kd * EXP_NEG_LN2_HI_N + kd * EXP_NEG_LN2_LO_N;
    (ki, r)
}

/// From the reduction, `(2^(k/128) rounded, tmp)` with `exp(x) ≈ scale + scale · tmp`.
/// `scale`'s exponent wraps for `|k div 128| > 1022`: [`exp_special`] corrects it.
#[inline(always)]
fn exp_parts(ki: u64, r: f64) -> (f64, f64) {
    let (scale_bits, tmp) = exp_parts_bits(ki, r);
    (f64::from_bits(scale_bits), tmp)
}

#[inline(always)]
fn exp_parts_bits(ki: u64, r: f64) -> (u64, f64) {
    let i = (ki & 127) as usize;
    let tail = f64::from_bits(EXP_TABLE[2 * i]);
    let scale = EXP_TABLE[2 * i + 1].wrapping_add(ki << 45);
    let r2 = r * r;
    let [c2, c3, c4, c5, c6] = EXP_POLY;
    let tmp = tail + r + r2 * (c2 + r * c3) + r2 * r2 * (c4 + r * c5 + r2 * c6);
    (scale, tmp)
}

/// `exp` where [`exp_is_plain`] does not hold: tiny, large, infinite and NaN arguments.
#[cold]
fn exp_special(x: f64) -> f64 {
    let a = x.abs();
    if a < EXP_PLAIN_MIN {
        return 1.0 + x;
    }
    if a.is_nan() {
        return x + x;
    }
    if a >= 1024.0 {
        return if x > 0.0 { f64::INFINITY } else { 0.0 };
    }
    let (ki, r) = exp_reduce(x);
    let (bits, tmp) = exp_parts_bits(ki, r);
    if x > 0.0 {
        // 2^(k div 128) may pass the largest exponent: scale down by 2¹⁰⁰⁹, and back after
        // the sum (exact, or an overflow to +∞).
        let scale = f64::from_bits(bits.wrapping_sub(1009 << 52));
        return (scale + scale * tmp) * f64::from_bits(0x7f00_0000_0000_0000);
    }
    // 2^(k div 128) may pass the smallest normal exponent: scale up by 2¹⁰²², and back.
    let scale = f64::from_bits(bits.wrapping_add(1022 << 52));
    let mut y = scale + scale * tmp;
    if y < 1.0 {
        // The result is subnormal: its last place is 2⁻⁵² in y's units. Recover y's rounding
        // error, then round once at that place (adding 1 puts it there), so that the final
        // scaling is exact and the result is not rounded twice.
        let err = (scale - y) + scale * tmp;
        let hi = 1.0 + y;
        let lo = ((1.0 - hi) + y) + err;
        y = (hi + lo) - 1.0;
    }
    y * f64::from_bits(0x0010_0000_0000_0000)
}

/// `atanh(x)` from `|x|`, its sign restored: `½·ln_1p(2|x| / (1 − |x|))`. Rust's
/// `f64::atanh` applies that formula to `x` itself, which is accurate for `x ≥ 0` (and
/// this agrees with it there to the bit) but loses digits as `x → −1`, where
/// `2x/(1 − x) → −1` and `ln_1p` cancels: 3 of them at `x = −0.999999999999999`.
fn odd_atanh(x: f64) -> f64 {
    let a = x.abs();
    (0.5 * (2.0 * a / (1.0 - a)).ln_1p()).copysign(x)
}

/// `pow(a, b)` as every ddx engine computes it: C's `pow` (so `pow(0, 0) = 1`), except
/// that three exponents are answered by the correctly rounded operation they name, as
/// optimising compilers do for native code:
/// - `b == 2`: `a * a`;
/// - `b == -1`: `1 / a`;
/// - `b == 0.5`: `sqrt(a)`, with C's `pow(-0, 0.5) = +0` and `pow(-inf, 0.5) = +inf`.
///
/// Each is within C's own error bound of `pow` and exact where `pow` is not, so a model
/// written `x**2` costs a multiplication, not a library call, in every engine.
#[inline]
pub extern "C" fn pow(a: f64, b: f64) -> f64 {
    if b == 2.0 {
        a * a
    } else if b == -1.0 {
        1.0 / a
    } else if b == 0.5 {
        pow_half(a)
    } else {
        a.powf(b)
    }
}

/// `powi(a, n)`: `a` to the integer power `n`, by binary powering (square and multiply,
/// low bit first, as LLVM's `__powidf2` does), and `1 / aⁿ` for `n < 0`. `powi(a, 0) = 1`
/// (NaN included, as C's `pow`); `powi(a, 1) = a`, `powi(a, 2) = a * a` and
/// `powi(a, −1) = 1 / a` exactly. An `n` that is not an integer (or NaN) answers NaN; an
/// integer `|n| ≥ 2⁶³` (where every finite `a` other than `0` and `±1` over- or
/// underflows anyway) is C's `pow`.
///
/// Unlike `f64::powi`, whose rounding differs between targets and optimisation levels,
/// this is one function every engine calls, so the bits are the same everywhere.
pub extern "C" fn powi(a: f64, n: f64) -> f64 {
    if n.fract() != 0.0 || n.is_nan() {
        return f64::NAN;
    }
    let m = n.abs();
    if m >= 2f64.powi(63) {
        return a.powf(n);
    }
    let mut m = m as u64;
    let mut r = 1.0;
    let mut b = a;
    loop {
        if m & 1 == 1 {
            r *= b;
        }
        m >>= 1;
        if m == 0 {
            break;
        }
        b *= b;
    }
    if n < 0.0 {
        1.0 / r
    } else {
        r
    }
}

/// `pow(a, 0.5)`: `sqrt(a)` with C's answers at `-0` (`+0`) and `-inf` (`+inf`).
#[inline]
pub fn pow_half(a: f64) -> f64 {
    if a == f64::NEG_INFINITY {
        f64::INFINITY
    } else {
        a.sqrt() + 0.0
    }
}

/// `atan2(a, b)`: the angle of the point `(b, a)`, as C's `atan2(y, x)`.
#[inline]
pub extern "C" fn atan2(a: f64, b: f64) -> f64 {
    a.atan2(b)
}

/// `hypot(a, b)`, without undue overflow or underflow.
#[inline]
pub extern "C" fn hypot(a: f64, b: f64) -> f64 {
    a.hypot(b)
}

/// `fma(a, b, c)`: `a * b + c` rounded once. Code generators inline it where the CPU has
/// a fused multiply-add instruction and call this (a correctly rounded software fused
/// multiply-add when the build lacks the `fma` target feature) where it has none.
pub extern "C" fn fma(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}

/// `sign(x)`: `-1`, `0` or `1`; `sign(±0) = 0` and `sign(NaN) = NaN`.
#[inline]
pub fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x == 0.0 {
        0.0
    } else {
        x
    }
}

/// `max(a, b)`: the larger; a NaN operand yields the other; a tie yields `a`.
#[inline]
pub fn max(a: f64, b: f64) -> f64 {
    if b > a || a.is_nan() {
        b
    } else {
        a
    }
}

/// `min(a, b)`: the smaller; a NaN operand yields the other; a tie yields `a`.
#[inline]
pub fn min(a: f64, b: f64) -> f64 {
    if b < a || a.is_nan() {
        b
    } else {
        a
    }
}

/// A comparison's answer: `1.0` when it holds, else `0.0`.
#[inline]
pub fn truth(holds: bool) -> f64 {
    if holds {
        1.0
    } else {
        0.0
    }
}

/// `a != b` with NaN answering `0.0`.
#[inline]
#[allow(clippy::double_comparisons)] // `a != b` is true for NaN; this is not.
pub fn ne(a: f64, b: f64) -> f64 {
    truth(a < b || a > b)
}

/// `select(c, t, f)`: `t` where `c` is nonzero or NaN, else `f`.
#[inline]
pub fn select(c: f64, t: f64, f: f64) -> f64 {
    if c == 0.0 {
        f
    } else {
        t
    }
}

/// The one-argument function behind a unary `op`, or `None` for the operations engines
/// inline (`neg`, `sqrt`, `abs`, `sign`, `recip`).
pub fn unary_fn(op: crate::Op) -> Option<UnaryFn> {
    use crate::Op::*;
    Some(match op {
        Sin => sin,
        Cos => cos,
        Tan => tan,
        Exp => exp,
        Log => log,
        Log10 => log10,
        Cbrt => cbrt,
        Asin => asin,
        Acos => acos,
        Atan => atan,
        Sinh => sinh,
        Cosh => cosh,
        Tanh => tanh,
        Asinh => asinh,
        Acosh => acosh,
        Atanh => atanh,
        Erf => erf,
        Log1p => log1p,
        Expm1 => expm1,
        Log2 => log2,
        _ => return None,
    })
}

/// The two-argument function behind a binary `op`, or `None` for the operations engines
/// inline (arithmetic, `max`, `min`, comparisons).
pub fn binary_fn(op: crate::Op) -> Option<BinaryFn> {
    use crate::Op::*;
    Some(match op {
        Pow => pow,
        Atan2 => atan2,
        Hypot => hypot,
        Powi => powi,
        _ => return None,
    })
}

/// Evaluates `op` on `args` (which hold at least [`Op::arity`](crate::Op::arity) values).
///
/// This is the reference semantics: every engine must answer the same bits.
pub fn eval(op: crate::Op, args: &[f64]) -> f64 {
    use crate::Op::*;
    let a = args[0];
    match op {
        Neg => -a,
        Sqrt => a.sqrt(),
        Recip => 1.0 / a,
        Abs => a.abs(),
        Sign => sign(a),
        Add => a + args[1],
        Sub => a - args[1],
        Mul => a * args[1],
        Div => a / args[1],
        Max => max(a, args[1]),
        Min => min(a, args[1]),
        Lt => truth(a < args[1]),
        Le => truth(a <= args[1]),
        Eq => truth(a == args[1]),
        Ne => ne(a, args[1]),
        Select => select(a, args[1], args[2]),
        Fma => fma(a, args[1], args[2]),
        Call => crate::user::call(a, args[1], args[2]),
        Hold => a,
        // No value of its own: engines read a pack's arguments through the call.
        Pack => f64::NAN,
        _ => match (unary_fn(op), binary_fn(op)) {
            (Some(f), _) => f(a),
            (_, Some(f)) => f(a, args[1]),
            _ => unreachable!("every op is inline, unary or binary"),
        },
    }
}

/// The math functions a code generator calls, by address, in a fixed order.
///
/// Kernels receive a pointer to [`MATH_TABLE`] and load a function from offset
/// `size_of::<usize>() * MathTable::slot(op)`, so compiled code holds no relocations.
/// Entries are only ever appended, so a slot keeps its offset.
#[repr(C)]
#[derive(Debug)]
pub struct MathTable {
    /// One entry per unary operation with an out-of-line function, in
    /// [`MathTable::UNARY_OPS`] order.
    pub unary: [UnaryFn; 17],
    /// `pow`, `atan2`, `hypot`.
    pub binary: [BinaryFn; 3],
    /// `fma`, for code generators on CPUs without a fused multiply-add instruction.
    pub ternary: [TernaryFn; 1],
    /// Unary operations added later, in [`MathTable::MORE_UNARY_OPS`] order (appended, so
    /// the entries above keep their offsets).
    pub more_unary: [UnaryFn; 3],
    /// Binary operations added later: `powi`.
    pub more_binary: [BinaryFn; 1],
    /// Ternary operations added later: a user function's call ([`crate::user::call`]).
    pub more_ternary: [TernaryFn; 1],
    /// The call of a user function of three or more arguments from a pointer to them
    /// ([`crate::user::call_n`]), at [`MathTable::CALL_N`].
    pub call_n: [CallNFn; 1],
    /// [`EXP_TABLE`], for code generators that compute [`exp`] inline, at
    /// [`MathTable::EXP_TABLE`].
    pub exp_table: [&'static [u64; 256]; 1],
    /// [`LOG_TABLE`], for code generators that compute [`log`] inline, at
    /// [`MathTable::LOG_TABLE`].
    pub log_table: [&'static [u64; 512]; 1],
}

/// [`crate::user::call_n`]'s type: `(tag, args, k)`, `args` pointing to `k` values.
pub type CallNFn = unsafe extern "C" fn(f64, *const f64, usize) -> f64;

impl MathTable {
    /// The unary operations in table order.
    pub const UNARY_OPS: [crate::Op; 17] = {
        use crate::Op::*;
        [
            Sin, Cos, Tan, Exp, Log, Log10, Cbrt, Asin, Acos, Atan, Sinh, Cosh, Tanh, Asinh, Acosh,
            Atanh, Erf,
        ]
    };
    /// The binary operations in table order.
    pub const BINARY_OPS: [crate::Op; 3] = [crate::Op::Pow, crate::Op::Atan2, crate::Op::Hypot];
    /// The ternary operations in table order.
    pub const TERNARY_OPS: [crate::Op; 1] = [crate::Op::Fma];
    /// The unary operations appended later, in table order.
    pub const MORE_UNARY_OPS: [crate::Op; 3] =
        [crate::Op::Log1p, crate::Op::Expm1, crate::Op::Log2];
    /// The binary operations appended later, in table order.
    pub const MORE_BINARY_OPS: [crate::Op; 1] = [crate::Op::Powi];
    /// The ternary operations appended later, in table order.
    pub const MORE_TERNARY_OPS: [crate::Op; 1] = [crate::Op::Call];

    /// The entry index (in pointer-sized words from the table's start) of
    /// [`MathTable::call_n`]: after every operation's.
    pub const CALL_N: usize = 26;

    /// The entry index (in pointer-sized words from the table's start) of
    /// [`MathTable::exp_table`]: after [`MathTable::CALL_N`].
    pub const EXP_TABLE: usize = 27;

    /// The entry index (in pointer-sized words from the table's start) of
    /// [`MathTable::log_table`]: after [`MathTable::EXP_TABLE`].
    pub const LOG_TABLE: usize = 28;

    /// The entry index (in pointer-sized words from the table's start) of `op`'s function,
    /// or `None` when the table has none (engines always inline those).
    pub fn slot(op: crate::Op) -> Option<usize> {
        let groups: [&[crate::Op]; 6] = [
            &Self::UNARY_OPS,
            &Self::BINARY_OPS,
            &Self::TERNARY_OPS,
            &Self::MORE_UNARY_OPS,
            &Self::MORE_BINARY_OPS,
            &Self::MORE_TERNARY_OPS,
        ];
        let mut base = 0;
        for group in groups {
            if let Some(i) = group.iter().position(|&o| o == op) {
                return Some(base + i);
            }
            base += group.len();
        }
        None
    }
}

/// The table every CPU engine calls through.
pub static MATH_TABLE: MathTable = MathTable {
    unary: [
        sin, cos, tan, exp, log, log10, cbrt, asin, acos, atan, sinh, cosh, tanh, asinh, acosh,
        atanh, erf,
    ],
    binary: [pow, atan2, hypot],
    ternary: [fma],
    more_unary: [log1p, expm1, log2],
    more_binary: [powi],
    more_ternary: [crate::user::call],
    call_n: [crate::user::call_n],
    exp_table: [&EXP_TABLE],
    log_table: [&LOG_TABLE],
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    #[test]
    fn table_matches_ops() {
        for (i, op) in MathTable::UNARY_OPS.iter().enumerate() {
            let f = unary_fn(*op).expect("listed op has a function");
            assert_eq!(
                f(0.3).to_bits(),
                (MATH_TABLE.unary[i])(0.3).to_bits(),
                "{op}"
            );
            assert_eq!(MathTable::slot(*op), Some(i));
        }
        assert_eq!(MathTable::slot(Op::Hypot), Some(19));
        assert_eq!(MathTable::slot(Op::Fma), Some(20));
        for (i, op) in MathTable::MORE_UNARY_OPS.iter().enumerate() {
            let f = unary_fn(*op).expect("listed op has a function");
            assert_eq!(
                f(0.3).to_bits(),
                (MATH_TABLE.more_unary[i])(0.3).to_bits(),
                "{op}"
            );
            assert_eq!(MathTable::slot(*op), Some(21 + i));
        }
        assert_eq!(MathTable::slot(Op::Powi), Some(24));
        // A user function's call, appended (issue 17).
        assert_eq!(MathTable::slot(Op::Call), Some(25));
        assert_eq!(
            (MATH_TABLE.more_ternary[0])(-1.0, 2.0, 3.0).to_bits(),
            crate::user::call(-1.0, 2.0, 3.0).to_bits()
        );
        // The call of three or more arguments, appended after every operation's entry.
        assert_eq!(
            std::mem::offset_of!(MathTable, call_n),
            MathTable::CALL_N * std::mem::size_of::<usize>()
        );
        // The exp table's address, appended after that.
        assert_eq!(
            std::mem::offset_of!(MathTable, exp_table),
            MathTable::EXP_TABLE * std::mem::size_of::<usize>()
        );
        // The log table's, appended after that.
        assert_eq!(
            std::mem::offset_of!(MathTable, log_table),
            MathTable::LOG_TABLE * std::mem::size_of::<usize>()
        );
        assert_eq!(
            std::mem::size_of::<MathTable>(),
            29 * std::mem::size_of::<usize>()
        );
        assert_eq!(MathTable::slot(Op::Add), None);
        assert_eq!(MathTable::slot(Op::Recip), None);
    }

    #[test]
    fn powi_is_binary_powering() {
        // Exact where the product is exact; the same bits as the named operations.
        assert_eq!(powi(3.0, 4.0), 81.0);
        assert_eq!(powi(-2.0, 3.0), -8.0);
        assert_eq!(powi(2.0, -3.0), 0.125);
        assert_eq!(powi(f64::NAN, 0.0), 1.0);
        assert_eq!(powi(0.0, -1.0), f64::INFINITY);
        assert_eq!(powi(-0.0, -1.0), f64::NEG_INFINITY);
        assert_eq!(powi(-0.0, 3.0).to_bits(), (-0.0f64).to_bits());
        for a in [0.1, -1.7, 1e-200, 3.3e150, f64::INFINITY, -0.0] {
            assert_eq!(powi(a, 2.0).to_bits(), (a * a).to_bits(), "{a}");
            assert_eq!(powi(a, -1.0).to_bits(), (1.0 / a).to_bits(), "{a}");
            assert_eq!(powi(a, 1.0).to_bits(), a.to_bits(), "{a}");
            assert_eq!(powi(a, 5.0).to_bits(), (a * (a * a * (a * a))).to_bits());
        }
        assert!(powi(2.0, 0.5).is_nan());
        assert!(powi(2.0, f64::NAN).is_nan());
        assert!(powi(2.0, f64::INFINITY).is_nan());
        assert_eq!(powi(2.0, 1e19), f64::INFINITY);
        assert_eq!(powi(-1.0, 1e19), 1.0);
        // Within a few ULP of the correctly rounded power (here against C's pow, itself
        // within 1 ULP) for moderate exponents.
        for (a, n) in [(1.000_001f64, 1000.0), (0.987, 77.0), (1.1, -50.0)] {
            let (p, q) = (powi(a, n), a.powf(n));
            assert!(((p - q) / q).abs() < 1e-13, "{a}^{n}: {p} vs {q}");
        }
    }

    #[test]
    fn open_ieee_choices_are_fixed() {
        assert_eq!(sign(0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(sign(-0.0).to_bits(), 0.0f64.to_bits());
        assert!(sign(f64::NAN).is_nan());
        assert_eq!(sign(-3.0), -1.0);
        assert_eq!(max(f64::NAN, 2.0), 2.0);
        assert_eq!(max(2.0, f64::NAN), 2.0);
        assert_eq!(min(f64::NAN, 2.0), 2.0);
        assert_eq!(max(0.0, -0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(max(-0.0, 0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(ne(f64::NAN, 1.0), 0.0);
        assert_eq!(eval(Op::Eq, &[f64::NAN, f64::NAN]), 0.0);
        assert_eq!(select(f64::NAN, 1.0, 2.0), 1.0);
        assert_eq!(select(-0.0, 1.0, 2.0), 2.0);
        assert_eq!(pow(0.0, 0.0), 1.0);
        assert_eq!(pow(3.0, 2.0), 9.0);
        assert_eq!(pow(-0.0, 0.5).to_bits(), 0.0f64.to_bits());
        assert_eq!(pow(f64::NEG_INFINITY, 0.5), f64::INFINITY);
        assert!(pow(-4.0, 0.5).is_nan());
        assert_eq!(pow(4.0, -1.0), 0.25);
        assert_eq!(pow(-0.0, -1.0), f64::NEG_INFINITY);
        // Where C's pow is exact they agree.
        for (a, b) in [
            (1.5, 2.0),
            (-3.25, 2.0),
            (9.0, 0.5),
            (0.0, 0.5),
            (8.0, -1.0),
        ] {
            assert_eq!(pow(a, b), a.powf(b), "pow({a}, {b})");
        }
    }

    /// The distance in units in the last place between two finite `f64`s of one sign.
    fn ulps(a: f64, b: f64) -> u64 {
        let key = |v: f64| {
            let b = v.to_bits() as i64;
            if b < 0 {
                i64::MIN - b
            } else {
                b
            }
        };
        key(a).abs_diff(key(b))
    }

    /// `exp` against the C library's (glibc's, within 0.52 ULP of the truth): within one
    /// ULP everywhere, the same bits at nearly every argument. (The Python suite measures
    /// both against mpmath.)
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn exp_of_four_lanes_is_exp_lane_by_lane() {
        if !std::arch::is_x86_feature_detected!("avx2") {
            return;
        }
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut unit = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut whole, mut refused) = (0, 0);
        for i in 0..50_000 {
            let x: [f64; 4] = std::array::from_fn(|l| match (i + l) % 7 {
                0 => (unit() - 0.5) * 1400.0,
                1 => (unit() - 0.5) * 2.0,
                2 => (unit() - 0.5) * 1e-15,
                3 => -700.0 - unit() * 60.0,
                4 if i % 97 == 0 => f64::NAN,
                5 if i % 89 == 0 => f64::INFINITY,
                _ => (unit() - 0.5) * 60.0,
            });
            // SAFETY: the CPU has AVX2 (checked above).
            match unsafe { exp_plain4_avx2(x) } {
                Some(y) => {
                    whole += 1;
                    for l in 0..4 {
                        assert_eq!(y[l].to_bits(), exp(x[l]).to_bits(), "exp({:e})", x[l]);
                    }
                }
                None => {
                    refused += 1;
                    assert!(x.iter().any(|&v| !exp_is_plain(v)), "{x:?}");
                }
            }
        }
        assert!(whole > 1000 && refused > 1000, "{whole} {refused}");
    }

    #[test]
    fn exp_is_within_one_ulp_of_the_c_library() {
        let mut s: u64 = 0x2545_f491_4f6c_dd1d;
        let mut unit = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut differ, mut n) = (0, 0);
        for i in 0..400_000 {
            let u = unit();
            let x = match i % 5 {
                0 => (u - 0.5) * 1500.0,
                1 => (u - 0.5) * 2.0,
                2 => (u - 0.5) * 1e-6,
                3 => -708.0 - u * 38.0, // subnormal results
                _ => 700.0 + u * 10.0,  // near overflow
            };
            let (got, want) = (exp(x), x.exp());
            if want.is_infinite() || want == 0.0 {
                assert_eq!(got.to_bits(), want.to_bits(), "exp({x:e})");
                continue;
            }
            let d = ulps(got, want);
            assert!(d <= 1, "exp({x:e}) = {got:e}, the C library's {want:e}");
            differ += usize::from(d > 0);
            n += 1;
        }
        assert!(differ * 200 < n, "{differ} of {n} differ");
    }

    #[test]
    fn exp_answers_the_special_values() {
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits();
        assert!(same(exp(0.0), 1.0) && same(exp(-0.0), 1.0));
        assert!(same(exp(f64::INFINITY), f64::INFINITY));
        assert!(same(exp(f64::NEG_INFINITY), 0.0));
        assert!(exp(f64::NAN).is_nan() && exp(-f64::NAN).is_nan());
        assert!(same(exp(1.0), std::f64::consts::E));
        assert!(same(exp(5e-324), 1.0) && same(exp(-1e-300), 1.0));
        // Below 2⁻⁵⁴ the answer is 1 + x rounded; at 2⁻⁵³ it is the next number below 1.
        assert!(same(exp(-f64::EPSILON / 2.0), 1.0f64.next_down()));
        // The last finite result and the first overflow.
        assert!(same(exp(709.782_712_893_384), 1.797_693_134_862_273_2e308));
        assert!(same(exp(709.782_712_893_384f64.next_up()), f64::INFINITY));
        assert!(same(exp(1e300), f64::INFINITY) && same(exp(-1e300), 0.0));
        // Subnormal results, rounded once, and the underflow to zero.
        for x in [-708.4, -720.0, -740.0, -744.44, -745.0, -745.1332191019411] {
            assert!(same(exp(x), x.exp()), "exp({x})");
        }
        assert!(same(exp(-745.133_219_101_941_1), 5e-324));
        assert!(same(exp(-745.2), 0.0) && same(exp(-1023.9), 0.0));
        for x in [512.0, -512.0, 600.0, -600.0, 1023.9] {
            assert!(ulps(exp(x), x.exp()) <= 1 || exp(x) == x.exp(), "exp({x})");
        }
    }

    /// The table against the C library's `pow` (within one ULP of `2^(i/128)`, and the
    /// stored tail is the small relative error of a rounded value).
    #[test]
    fn exp_table_holds_two_to_the_i_over_128() {
        for i in 0..128u64 {
            let scale = f64::from_bits(EXP_TABLE[2 * i as usize + 1] + (i << 45));
            let tail = f64::from_bits(EXP_TABLE[2 * i as usize]);
            assert!(ulps(scale, 2f64.powf(i as f64 / 128.0)) <= 1, "entry {i}");
            assert!(tail.abs() <= f64::EPSILON / 2.0, "entry {i}: tail {tail:e}");
            assert!((1.0..2.0).contains(&scale));
        }
        assert_eq!(EXP_TABLE[0], 0);
        assert_eq!(EXP_TABLE[1], 1f64.to_bits());
    }
}
