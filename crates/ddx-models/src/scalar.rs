//! The scalar type the native models are generic over, and the few operations of ddx's
//! expression table that `num-dual` does not spell the way ddx does.
//!
//! A native model is written once as `fn eval<D: Real>(&self, x: &[D]) -> D`; at `f64` it is
//! the baseline every benchmark ratio divides by, and on `num-dual`'s dual numbers it is the
//! `num-dual` arm. The helpers here follow ddx's conventions (`ARCHITECTURE.md`, "Semantics"):
//! comparisons answer `1.0`/`0.0`, `select` takes its true arm where the
//! condition is nonzero, `max`/`min` answer the other operand when one is NaN, and `sign(±0)`
//! is `0`.
//!
//! `num-dual` 0.11 has no `erf` and no `hypot` on [`DualNum`]. [`erf`] and [`hypot`] take
//! the value from the `f64` function and add the first-order term of the derivative's closed
//! form: exact on the first-order dual numbers the benchmarks use (`Dual64`, `DualVec`),
//! **not** valid for second-order duals; at `f64` (`NDERIV == 0`) they are the bare `f64`
//! function.

use num_dual::DualNum;

/// Working storage of a native model: on the stack up to 40 entries (every benchmark
/// size), so the `f64` baseline allocates nothing.
pub type Scratch<D> = smallvec::SmallVec<[D; 40]>;

/// A scalar a native model can run on: `f64`, or a `num-dual` dual number over `f64`.
pub trait Real: DualNum<f64> + Copy {}

impl<T: DualNum<f64> + Copy> Real for T {}

/// `1.0` or `0.0` as a constant of `D`: the answer of a comparison.
#[inline]
pub fn truth<D: Real>(holds: bool) -> D {
    D::from(if holds { 1.0 } else { 0.0 })
}

/// `a < b` on the real parts, as `1.0` or `0.0` (`0.0` with a NaN operand).
#[inline]
pub fn lt<D: Real>(a: D, b: D) -> D {
    truth(a.re() < b.re())
}

/// `a <= b` on the real parts.
#[inline]
pub fn le<D: Real>(a: D, b: D) -> D {
    truth(a.re() <= b.re())
}

/// `a > b` on the real parts.
#[inline]
pub fn gt<D: Real>(a: D, b: D) -> D {
    truth(a.re() > b.re())
}

/// `a >= b` on the real parts.
#[inline]
pub fn ge<D: Real>(a: D, b: D) -> D {
    truth(a.re() >= b.re())
}

/// `a == b` on the real parts.
#[inline]
#[allow(clippy::float_cmp)]
pub fn eq<D: Real>(a: D, b: D) -> D {
    truth(a.re() == b.re())
}

/// `a != b` on the real parts; `0.0` when either is NaN (as ddx, unlike IEEE).
#[inline]
#[allow(clippy::double_comparisons)] // `a != b` is true for NaN; this is not.
pub fn ne<D: Real>(a: D, b: D) -> D {
    let (a, b) = (a.re(), b.re());
    truth(a < b || a > b)
}

/// `select(c, t, f)`: `t` where `c` is nonzero (or NaN), else `f`. The derivative is the
/// taken arm's.
#[inline]
#[allow(clippy::float_cmp)]
pub fn select<D: Real>(c: D, t: D, f: D) -> D {
    if c.re() == 0.0 {
        f
    } else {
        t
    }
}

/// The larger operand (by real part); a NaN operand yields the other; a tie yields `a`.
#[inline]
pub fn max<D: Real>(a: D, b: D) -> D {
    if b.re() > a.re() || a.re().is_nan() {
        b
    } else {
        a
    }
}

/// The smaller operand (by real part); a NaN operand yields the other; a tie yields `a`.
#[inline]
pub fn min<D: Real>(a: D, b: D) -> D {
    if b.re() < a.re() || a.re().is_nan() {
        b
    } else {
        a
    }
}

/// `sign(x)` in `{-1, 0, 1}` with `sign(±0) = 0` and `sign(NaN) = NaN`; derivative `0`.
#[inline]
pub fn sign<D: Real>(x: D) -> D {
    let a = x.re();
    D::from(if a > 0.0 {
        1.0
    } else if a < 0.0 {
        -1.0
    } else if a == 0.0 {
        0.0
    } else {
        a
    })
}

/// The error function: value `libm::erf`, derivative `2/√π · exp(−x²)` (first order; see
/// the module documentation).
#[inline]
pub fn erf<D: Real>(x: D) -> D {
    let a = x.re();
    if D::NDERIV == 0 {
        return D::from(libm::erf(a)); // plain f64: no derivative to carry
    }
    let slope = std::f64::consts::FRAC_2_SQRT_PI * (-a * a).exp();
    D::from(libm::erf(a)) + (x - a) * slope
}

/// `hypot(a, b) = √(a² + b²)` without undue overflow: value `f64::hypot`, partials `a/h`
/// and `b/h`, both `0` at the origin (as ddx). First order; see the module documentation.
#[inline]
pub fn hypot<D: Real>(a: D, b: D) -> D {
    let (ra, rb) = (a.re(), b.re());
    let h = ra.hypot(rb);
    if D::NDERIV == 0 {
        return D::from(h); // plain f64: no derivative to carry
    }
    let (da, db) = if h == 0.0 {
        (0.0, 0.0)
    } else {
        (ra / h, rb / h)
    };
    D::from(h) + (a - ra) * da + (b - rb) * db
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_dual::{Dual64, DualNum};

    fn seeded(x: f64) -> Dual64 {
        Dual64::new(x, 1.0)
    }

    #[test]
    fn erf_matches_libm_and_its_derivative() {
        let x = 0.3;
        assert_eq!(erf(x), libm::erf(x));
        let d = erf(seeded(x));
        assert_eq!(d.re(), libm::erf(x));
        let closed = 2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp();
        assert!((d.eps - closed).abs() < 1e-15);
    }

    #[test]
    fn hypot_partials_and_origin() {
        assert_eq!(hypot(3.0, 4.0), 5.0);
        let d = hypot(seeded(3.0), Dual64::from(4.0));
        assert!((d.eps - 0.6).abs() < 1e-15);
        let o = hypot(seeded(0.0), Dual64::from(0.0));
        assert_eq!(o.eps, 0.0);
    }

    #[test]
    fn conventions_follow_ddx() {
        assert_eq!(sign(-0.0), 0.0);
        assert!(sign(f64::NAN).is_nan());
        assert_eq!(max(f64::NAN, 2.0), 2.0);
        assert_eq!(min(1.0, f64::NAN), 1.0);
        assert_eq!(ne(f64::NAN, 1.0), 0.0);
        assert_eq!(select(f64::NAN, 1.0, 2.0), 1.0);
        assert_eq!(select(0.0, 1.0, 2.0), 2.0);
        assert_eq!(
            lt(1.0, 2.0) + le(2.0, 2.0) + gt(1.0, 2.0) + ge(2.0, 3.0),
            2.0
        );
        assert_eq!(eq(2.0, 2.0), 1.0);
    }
}
