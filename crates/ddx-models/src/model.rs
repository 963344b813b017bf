//! [`BenchModel`]: one benchmark function written twice — once natively, generic over the
//! scalar type, and once as a ddx model closure doing the same arithmetic — with the points
//! it is evaluated at.
//!
//! The two spellings are independent code, so they check each other: the test suite asks
//! that the native `f64` value equals ddx's value and that ddx's gradient equals
//! `num-dual`'s (run on the native spelling) at several points.

use crate::points::SplitMix64;
use crate::scalar::Real;
use ddx::{rt, Equation, Expr};
use nalgebra_num_dual::SVector;
use num_dual::{Dual64, DualSVec64};

/// A benchmark function `f: ℝⁿ → ℝ` with its domain.
pub trait BenchModel: Send + Sync {
    /// The family's short name, as the harness prints it (`"regular"`, `"uniquac"`, …).
    fn family(&self) -> &'static str;

    /// The input count `n`.
    fn arity(&self) -> usize;

    /// The symbol names, in the order [`BenchModel::eval`] reads its inputs. They sort
    /// alphabetically in that order, so a ddx point in canonical order is the same slice.
    fn symbols(&self) -> Vec<String> {
        indexed_names("x", self.arity())
    }

    /// The function, natively: at `f64` the baseline, on dual numbers the `num-dual` arm.
    /// `x` has [`BenchModel::arity`] entries.
    fn eval<D: Real>(&self, x: &[D]) -> D;

    /// The same arithmetic on ddx expressions, for a model closure; `x` holds the symbols
    /// in the order of [`BenchModel::symbols`].
    fn build(&self, x: &[Expr]) -> Expr;

    /// Writes one point of the domain into `out` (`arity` values), drawn from `rng`.
    fn sample(&self, rng: &mut SplitMix64, out: &mut [f64]);
}

/// `n` names `{prefix}00`, `{prefix}01`, … zero-padded so that alphabetical order is index
/// order (at least two digits).
pub fn indexed_names(prefix: &str, n: usize) -> Vec<String> {
    let width = n.saturating_sub(1).to_string().len().max(2);
    (0..n).map(|i| format!("{prefix}{i:0width$}")).collect()
}

/// The ddx equation of `model`: its symbols named in order, then [`BenchModel::build`].
///
/// # Errors
/// Those of [`rt::equation`].
pub fn equation<M: BenchModel + ?Sized>(model: &M) -> ddx::Result<Equation> {
    let names = model.symbols();
    rt::equation(|| {
        let x: Vec<Expr> = names.iter().map(|s| rt::var(s)).collect();
        model.build(&x)
    })
}

/// `count` points of `model`'s domain, flattened (`count × arity`), from the stream seeded
/// with `seed`.
pub fn sample_points<M: BenchModel + ?Sized>(model: &M, seed: u64, count: usize) -> Vec<f64> {
    let n = model.arity();
    let mut rng = SplitMix64::new(seed);
    let mut out = vec![0.0; n * count];
    for p in out.chunks_exact_mut(n.max(1)) {
        model.sample(&mut rng, p);
    }
    out
}

/// The input counts [`num_dual_gradient`] is compiled for.
pub const NUM_DUAL_SIZES: [usize; 9] = [4, 8, 16, 17, 32, 33, 64, 128, 256];

/// A gradient routine: writes `∇f(x)` into the second slice and answers `f(x)`.
pub type GradientFn<M> = fn(&M, &[f64], &mut [f64]) -> f64;

/// The `num-dual` gradient routine for `model`'s arity that carries every tangent in one
/// pass, or `None` when the arity is not in [`NUM_DUAL_SIZES`].
///
/// It runs [`BenchModel::eval`] once on `DualSVec64<N>` (`num_dual::gradient`): forward
/// mode with all `N` directional derivatives in a fixed-size vector. The value arithmetic
/// runs once, but every operation moves an `N`-vector; compare [`num_dual_passes`].
pub fn num_dual_gradient<M: BenchModel>(model: &M) -> Option<GradientFn<M>> {
    macro_rules! sized {
        ($($n:literal),*) => {
            match model.arity() {
                $($n => Some(gradient_n::<M, $n> as GradientFn<M>),)*
                _ => None,
            }
        };
    }
    sized!(4, 8, 16, 17, 32, 33, 64, 128, 256)
}

/// The gradient by `n` forward passes of [`BenchModel::eval`] on `Dual64`, each seeding one
/// input; answers `f(x)`. Any arity. It repeats the value arithmetic `n` times but each
/// operation carries one tangent, which for many models of a few dozen inputs is faster
/// than [`num_dual_gradient`]'s single vector pass.
pub fn num_dual_passes<M: BenchModel + ?Sized>(model: &M, x: &[f64], g: &mut [f64]) -> f64 {
    let mut xd: Vec<Dual64> = x.iter().map(|&v| Dual64::from(v)).collect();
    let mut f = f64::NAN;
    for (i, gi) in g.iter_mut().enumerate().take(x.len()) {
        xd[i] = Dual64::new(x[i], 1.0);
        let y = model.eval(&xd);
        *gi = y.eps;
        f = y.re;
        xd[i] = Dual64::from(x[i]);
    }
    f
}

fn gradient_n<M: BenchModel, const N: usize>(model: &M, x: &[f64], g: &mut [f64]) -> f64 {
    let x = SVector::<f64, N>::from_iterator(x.iter().copied());
    let (f, grad) = num_dual::gradient(|v: SVector<DualSVec64<N>, N>| model.eval(v.as_slice()), x);
    for (o, v) in g.iter_mut().zip(grad.iter()) {
        *o = *v;
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_in_index_order() {
        for n in [1, 9, 10, 11, 100, 101, 256] {
            let names = indexed_names("x", n);
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted, "n = {n}");
        }
        assert_eq!(indexed_names("x", 3), ["x00", "x01", "x02"]);
    }
}
