//! [`Expr`]: the handle a model closure computes with.
//!
//! An `Expr` is `Copy`: a constant, a node of the arena it was made in, or a poisoned
//! handle that carries the reason it could not be one. Arithmetic mixes with `f64` on
//! either side; math is available as methods named like `f64`'s and as free functions.
//! Comparisons are methods answering an `Expr` of `1.0` or `0.0`, since Rust's
//! `PartialOrd` must answer `bool`.

use crate::builder::apply;
use crate::{Error, Op};
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// Why a handle is poisoned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Poison {
    NoArena,
    Sealed,
    Foreign,
    /// `var("")`: a symbol needs a name.
    EmptyName,
}

impl Poison {
    pub(crate) fn error(self) -> Error {
        match self {
            Poison::NoArena => Error::NoArena,
            Poison::Sealed => Error::SealedArena,
            Poison::Foreign => Error::ForeignExpression,
            Poison::EmptyName => Error::BadName {
                name: String::new(),
                what: "a symbol",
                why: "a symbol needs a name",
            },
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Repr {
    Const(f64),
    Node { arena: u64, id: crate::NodeId },
    Poison(Poison),
}

/// An expression under construction inside a model closure: a small `Copy` handle.
///
/// Build it from [`var`](crate::var), from `f64` (`Expr::from(0.0)`, or by mixing a number
/// into arithmetic), and combine with operators, methods and the crate's free functions
/// ([`select`](crate::select), [`pow`](crate::pow), …). A handle is meaningful only inside the closure that made it, on that
/// closure's thread; using it afterwards, or on another thread, makes the equation being
/// built report [`Error::SealedArena`].
#[derive(Clone, Copy, Debug)]
pub struct Expr(pub(crate) Repr);

impl From<f64> for Expr {
    fn from(v: f64) -> Self {
        Expr(Repr::Const(v))
    }
}

impl From<f32> for Expr {
    fn from(v: f32) -> Self {
        Expr(Repr::Const(f64::from(v)))
    }
}

impl From<i32> for Expr {
    fn from(v: i32) -> Self {
        Expr(Repr::Const(f64::from(v)))
    }
}

impl Default for Expr {
    /// The constant `0.0`: the start of an accumulation.
    fn default() -> Self {
        Expr(Repr::Const(0.0))
    }
}

impl Expr {
    /// The value if this handle is a constant (a literal, or folded from literals).
    pub fn as_constant(&self) -> Option<f64> {
        match self.0 {
            Repr::Const(v) => Some(v),
            _ => None,
        }
    }

    /// The error this handle carries, if it is poisoned.
    pub fn error(&self) -> Option<Error> {
        match self.0 {
            Repr::Poison(p) => Some(p.error()),
            _ => None,
        }
    }

    fn unary(self, op: Op) -> Expr {
        apply(op, &[self])
    }

    fn binary(self, op: Op, rhs: impl Into<Expr>) -> Expr {
        apply(op, &[self, rhs.into()])
    }
}

macro_rules! unary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl Expr {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $name(self) -> Expr {
                    self.unary(Op::$op)
                }
            )*
        }
        /// The math functions as free functions, each taking anything convertible to an
        /// [`Expr`] (so `exp(2.0)` is a folded constant).
        pub mod unary_fns {
            use super::Expr;
            $(
                $(#[$doc])*
                pub fn $name(x: impl Into<Expr>) -> Expr {
                    x.into().$name()
                }
            )*
        }
    };
}

unary_methods! {
    /// `sin(x)`; derivative `cos(x)`.
    sin => Sin,
    /// `cos(x)`; derivative `-sin(x)`.
    cos => Cos,
    /// `tan(x)`; derivative `1 + tan(x)²`.
    tan => Tan,
    /// `exp(x)`; derivative `exp(x)`.
    exp => Exp,
    /// `ln(x)`, the natural logarithm (`log` in the text grammar); derivative `1/x`.
    ln => Log,
    /// `log10(x)`; derivative `1/(x ln 10)`.
    log10 => Log10,
    /// `sqrt(x)`; derivative `1/(2 sqrt(x))`, `+inf` at 0.
    sqrt => Sqrt,
    /// `cbrt(x)`; derivative `1/(3 cbrt(x)²)`.
    cbrt => Cbrt,
    /// `|x|`; derivative `sign(x)`, so `0` at `x = 0`.
    abs => Abs,
    /// `sign(x)` in `{-1, 0, 1}` (`sign(±0) = 0`, unlike `f64::signum`); derivative `0`.
    sign => Sign,
    /// `asin(x)`; derivative `1/sqrt(1 - x²)`.
    asin => Asin,
    /// `acos(x)`; derivative `-1/sqrt(1 - x²)`.
    acos => Acos,
    /// `atan(x)`; derivative `1/(1 + x²)`.
    atan => Atan,
    /// `sinh(x)`; derivative `cosh(x)`.
    sinh => Sinh,
    /// `cosh(x)`; derivative `sinh(x)`.
    cosh => Cosh,
    /// `tanh(x)`; derivative `1 - tanh(x)²`.
    tanh => Tanh,
    /// `asinh(x)`; derivative `1/hypot(x, 1)`.
    asinh => Asinh,
    /// `acosh(x)`; derivative `1/(sqrt(x - 1) sqrt(x + 1))`.
    acosh => Acosh,
    /// `atanh(x)`; derivative `1/(1 - x²)`.
    atanh => Atanh,
    /// `erf(x)`, the error function; derivative `2/sqrt(pi) exp(-x²)`.
    erf => Erf,
    /// `ln(1 + x)` without the rounding of `1 + x` (`log1p` in the text grammar), so it
    /// keeps every digit of a small `x`; derivative `1/(1 + x)`.
    ln_1p => Log1p,
    /// `exp(x) − 1` without cancellation near `x = 0` (`expm1` in the text grammar);
    /// derivative `exp(x)`.
    exp_m1 => Expm1,
    /// `log2(x)`; derivative `1/(x ln 2)`.
    log2 => Log2,
    /// `1/x`, correctly rounded (as `1.0 / x`); derivative `−1/x²`.
    recip => Recip,
}

impl Expr {
    /// `self ** exponent` (`pow` in the text grammar). At `self == 0` the partials are the
    /// constant arms' zeros: `∂/∂exponent = 0`, and `∂/∂self = 0` when `exponent == 0`.
    #[must_use]
    pub fn powf(self, exponent: impl Into<Expr>) -> Expr {
        self.binary(Op::Pow, exponent)
    }

    /// `self` to the integer power `n` (`powi(x, n)` in the text grammar), by binary
    /// powering (`ddx_ir::math::powi`; unlike `f64::powi` the same bits on every target);
    /// derivative `n·x^(n−1)`, also a `powi`, so `0` at `x = 0` for `n ≥ 2` and no
    /// singular point for `n ≥ 0` at any order.
    #[must_use]
    pub fn powi(self, n: i32) -> Expr {
        self.binary(Op::Powi, n)
    }

    /// `atan2(self, x)`: the angle of the point `(x, self)`, as `f64::atan2`. Both partials
    /// are `0` at the origin.
    #[must_use]
    pub fn atan2(self, x: impl Into<Expr>) -> Expr {
        self.binary(Op::Atan2, x)
    }

    /// `hypot(self, other)`; both partials are `0` at the origin.
    #[must_use]
    pub fn hypot(self, other: impl Into<Expr>) -> Expr {
        self.binary(Op::Hypot, other)
    }

    /// The larger of the two; a NaN operand yields the other. At a tie each side gets half
    /// the derivative; otherwise the derivative flows to the operand answered.
    #[must_use]
    pub fn max(self, other: impl Into<Expr>) -> Expr {
        self.binary(Op::Max, other)
    }

    /// The smaller of the two; the mirror of [`Expr::max`].
    #[must_use]
    pub fn min(self, other: impl Into<Expr>) -> Expr {
        self.binary(Op::Min, other)
    }

    /// `self < other` as `1.0` or `0.0` (`0.0` when either is NaN).
    #[must_use]
    pub fn lt(self, other: impl Into<Expr>) -> Expr {
        self.binary(Op::Lt, other)
    }

    /// `self <= other` as `1.0` or `0.0`.
    #[must_use]
    pub fn le(self, other: impl Into<Expr>) -> Expr {
        self.binary(Op::Le, other)
    }

    /// `self > other`, built as `other < self`.
    #[must_use]
    pub fn gt(self, other: impl Into<Expr>) -> Expr {
        apply(Op::Lt, &[other.into(), self])
    }

    /// `self >= other`, built as `other <= self`.
    #[must_use]
    pub fn ge(self, other: impl Into<Expr>) -> Expr {
        apply(Op::Le, &[other.into(), self])
    }

    /// `self == other` as `1.0` or `0.0` (`NaN == NaN` is `0.0`).
    #[must_use]
    #[allow(clippy::should_implement_trait)]
    pub fn eq(self, other: impl Into<Expr>) -> Expr {
        self.binary(Op::Eq, other)
    }

    /// `self != other` as `1.0` or `0.0`; `0.0` when either is NaN (unlike IEEE).
    #[must_use]
    pub fn ne(self, other: impl Into<Expr>) -> Expr {
        self.binary(Op::Ne, other)
    }
}

/// `select(cond, if_true, if_false)`: `if_true` where `cond` is nonzero (NaN counts as
/// nonzero), else `if_false`. Both arms are evaluated; the derivative is the taken arm's,
/// the condition is never differentiated, and the untaken arm's derivative never reaches
/// the result, even where it is NaN or infinite.
pub fn select(cond: impl Into<Expr>, if_true: impl Into<Expr>, if_false: impl Into<Expr>) -> Expr {
    apply(Op::Select, &[cond.into(), if_true.into(), if_false.into()])
}

/// `pow(base, exponent)`; see [`Expr::powf`].
pub fn pow(base: impl Into<Expr>, exponent: impl Into<Expr>) -> Expr {
    base.into().powf(exponent)
}

/// `powi(x, n)`: `x` to the integer power `n`; see [`Expr::powi`].
pub fn powi(x: impl Into<Expr>, n: i32) -> Expr {
    x.into().powi(n)
}

/// `log1p(x) = ln(1 + x)`, spelled as in the text grammar; see [`Expr::ln_1p`].
pub fn log1p(x: impl Into<Expr>) -> Expr {
    x.into().ln_1p()
}

/// `expm1(x) = exp(x) − 1`, spelled as in the text grammar; see [`Expr::exp_m1`].
pub fn expm1(x: impl Into<Expr>) -> Expr {
    x.into().exp_m1()
}

/// `atan2(y, x)`; see [`Expr::atan2`].
pub fn atan2(y: impl Into<Expr>, x: impl Into<Expr>) -> Expr {
    y.into().atan2(x)
}

/// `hypot(a, b)`; see [`Expr::hypot`].
pub fn hypot(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    a.into().hypot(b)
}

/// `max(a, b)`; see [`Expr::max`].
pub fn max(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    a.into().max(b)
}

/// `min(a, b)`; see [`Expr::min`].
pub fn min(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    a.into().min(b)
}

/// `log(x)`, the natural logarithm, spelled as in the text grammar; see [`Expr::ln`].
pub fn log(x: impl Into<Expr>) -> Expr {
    x.into().ln()
}

macro_rules! arithmetic {
    ($Trait:ident, $method:ident, $Assign:ident, $assign:ident, $op:ident) => {
        impl<R: Into<Expr>> $Trait<R> for Expr {
            type Output = Expr;
            fn $method(self, rhs: R) -> Expr {
                apply(Op::$op, &[self, rhs.into()])
            }
        }
        impl $Trait<Expr> for f64 {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                apply(Op::$op, &[Expr::from(self), rhs])
            }
        }
        impl $Trait<Expr> for i32 {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                apply(Op::$op, &[Expr::from(self), rhs])
            }
        }
        impl<R: Into<Expr>> $Assign<R> for Expr {
            fn $assign(&mut self, rhs: R) {
                *self = apply(Op::$op, &[*self, rhs.into()]);
            }
        }
    };
}

arithmetic!(Add, add, AddAssign, add_assign, Add);
arithmetic!(Sub, sub, SubAssign, sub_assign, Sub);
arithmetic!(Mul, mul, MulAssign, mul_assign, Mul);
arithmetic!(Div, div, DivAssign, div_assign, Div);

impl Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        apply(Op::Neg, &[self])
    }
}

impl std::iter::Sum for Expr {
    /// Left-to-right sum; the first term starts it (no `0 + x` node), and an empty sum is
    /// `0.0`.
    fn sum<I: Iterator<Item = Expr>>(mut iter: I) -> Expr {
        match iter.next() {
            Some(first) => iter.fold(first, |acc, x| acc + x),
            None => Expr::from(0.0),
        }
    }
}

impl std::iter::Product for Expr {
    /// Left-to-right product; `1.0` when empty.
    fn product<I: Iterator<Item = Expr>>(mut iter: I) -> Expr {
        match iter.next() {
            Some(first) => iter.fold(first, |acc, x| acc * x),
            None => Expr::from(1.0),
        }
    }
}
