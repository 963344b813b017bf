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

/// This file's source text. A code generator that keeps compiled code between runs keys it
/// on this too, so that a development build that changes how an operation evaluates never
/// loads code made before the change (ddx's version number alone would not change).
#[doc(hidden)]
pub const SOURCE: &str = include_str!("math.rs");

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
    exp => f64::exp,
    log => f64::ln,
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
pub extern "C" fn atan2(a: f64, b: f64) -> f64 {
    a.atan2(b)
}

/// `hypot(a, b)`, without undue overflow or underflow.
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
        assert_eq!(
            std::mem::size_of::<MathTable>(),
            27 * std::mem::size_of::<usize>()
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
}
