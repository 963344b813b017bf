//! Second order and Taylor: `hessian`, `hvp`, `univariate_derivative`.
//!
//! The Hessian lane is forward mode over the reverse graph, seeded once per colour group
//! of a star colouring of the Hessian's structural pattern (see `ddx_ir::colour`); the
//! `hvp` lane is the same forward-over-reverse pass seeded with the direction. Both are
//! prepared on first use, like every lane. `univariate_derivative` sweeps the value graph
//! in truncated Taylor arithmetic (`ddx_ir::ad::taylor`); it builds no lane.
//!
//! **Systems.** A system's `hessian` answers one `n × n` Hessian per output, from one lane:
//! the colouring is of the symmetric union of every output's pattern, so one forward sweep
//! per colour serves all outputs, and one cell layout ([`Equation::hessian_cell`]) holds
//! for every output's block. `hvp` is defined for one output only and refuses a system
//! with [`Error::NotScalar`].

use super::{Equation, Shape};
use crate::point::{Point, Role};
use ddx_ir::ad::taylor;
use ddx_ir::{error::nearest_name, Error, HessianLayout, LaneKind, Sparsity};

/// A way to name one symbol of an equation: its name (`"a"`, a `String`) or its position
/// in canonical (alphabetical) order (a `usize`).
pub trait SymbolRef {
    /// The symbol's position among `symbols` (canonical order).
    ///
    /// # Errors
    /// [`Error::UnknownSymbol`] for a name the equation lacks (with the nearest name it
    /// has, when one is close); [`Error::IndexOutOfRange`] for a position `≥ n`.
    fn position(&self, symbols: &[String]) -> Result<usize, Error>;
}

impl SymbolRef for str {
    fn position(&self, symbols: &[String]) -> Result<usize, Error> {
        symbols
            .binary_search_by(|s| s.as_bytes().cmp(self.as_bytes()))
            .map_err(|_| Error::UnknownSymbol {
                name: self.to_string(),
                nearest: nearest_name(self, symbols.iter().map(String::as_str)),
            })
    }
}

impl SymbolRef for String {
    fn position(&self, symbols: &[String]) -> Result<usize, Error> {
        self.as_str().position(symbols)
    }
}

impl SymbolRef for usize {
    fn position(&self, symbols: &[String]) -> Result<usize, Error> {
        if *self < symbols.len() {
            Ok(*self)
        } else {
            Err(Error::IndexOutOfRange {
                index: *self,
                len: symbols.len(),
            })
        }
    }
}

impl<T: SymbolRef + ?Sized> SymbolRef for &T {
    fn position(&self, symbols: &[String]) -> Result<usize, Error> {
        (**self).position(symbols)
    }
}

/// What [`Equation::value_gradient_and_hvp`] answers: `(f, ∇f, H·v)`, the value as
/// [`Equation::evaluate`] answers it, the gradient and `H·v` each `n` long.
pub type ValueGradientHvp<S> = (<S as Shape>::Value, Vec<f64>, Vec<f64>);

/// The highest order `K` that [`Equation::univariate_derivative`] computes: 170, the
/// largest `K` whose `K!` is finite in `f64` (`171!` overflows), so the highest order
/// whose derivative can be a finite number. The bound also keeps one call's memory and
/// time in proportion to the graph (`K + 1` coefficients per node, `O(K²)` work per
/// operation) whatever `K` is asked.
pub const MAX_ORDER: usize = taylor::MAX_DEGREE;

impl<S: Shape> Equation<S> {
    /// The Hessian layout, without building the Hessian lane when none is built yet (see
    /// `PreparedLanes::hessian_layout`).
    pub(crate) fn hessian_layout(&self) -> &HessianLayout {
        self.lanes.hessian_layout()
    }

    /// The Hessians `Hᵣ(x)`, `Hᵣ(i, j) = ∂²fᵣ/∂xᵢ∂xⱼ`, dense: `m × n × n`, row-major, so
    /// `H[r·n·n + i·n + j]` (`n × n` for a scalar function). Cells outside the structural
    /// pattern are `0`.
    ///
    /// Each cell is read from one product `Hᵣ·v_k` of the colour compression
    /// ([`Equation::hessian_cell`]); `H(i, j)` and `H(j, i)` may come from different
    /// products and then differ by rounding (in the last ULP where nothing cancels) —
    /// symmetrise before a solver that checks. Where the function is not twice
    /// differentiable (a kink, or a singular point of `pow`, `hypot`, `atan2`) the two can
    /// differ outright: `pow(x, y)` at `(0, 1)` has `H(x, y) = 1` and `H(y, x) = 0`. Where an expression's second derivative is not finite (IEEE arithmetic,
    /// e.g. `sqrt` at 0), the cell says so; an untaken `select` arm's never reaches it.
    ///
    /// Dense Hessians hold `m·n²` values: past [`Options::answer_limit`] (2²⁸ by
    /// default) the call refuses before computing anything, and
    /// [`Equation::sparse_hessian`] answers the structural nonzeros only.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let eq = rt::equation_text("x * x * y")?;
    /// assert_eq!(eq.hessian([3.0, 2.0])?, [4.0, 6.0, 6.0, 0.0]);  // row-major 2 × 2
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::TooLarge`] when `m·n·n` exceeds [`Options::answer_limit`] (checked
    /// first); those of [`Equation::point`].
    ///
    /// [`Options::answer_limit`]: crate::Options::answer_limit
    pub fn hessian(&self, point: impl Point) -> Result<Vec<f64>, Error> {
        let (m, n) = (self.outputs(), self.arity());
        let len = self.answer_len("hessian", &[m, n, n])?;
        let mut dense = super::zeros(len);
        self.with_inputs(&point, 0, |_| Ok(()), |x| self.dense_hessian(x, &mut dense))??;
        Ok(dense)
    }

    /// The Hessians written into `out` (dense, `m × n × n`, row-major, as
    /// [`Equation::hessian`] lays them out): [`Equation::hessian`] without allocating the
    /// answer, for calls in a loop. (The compressed products, `m ·`
    /// [`hessian_columns`](Equation::hessian_columns) values, are still gathered in a
    /// scratch buffer.)
    ///
    /// # Errors
    /// [`Error::WrongOutputLength`] unless `out` is `m·n·n` long (nothing is written);
    /// those of [`Equation::point`].
    pub fn hessian_into(&self, point: impl Point, out: &mut [f64]) -> Result<(), Error> {
        let (m, n) = (self.outputs(), self.arity());
        super::check_output(out, m.checked_mul(n).and_then(|mn| mn.checked_mul(n)))?;
        self.with_inputs(&point, 0, |_| Ok(()), |x| self.dense_hessian(x, out))?
    }

    /// Runs the Hessian lane at `x` and scatters its blocks into `dense` (`m·n·n` long).
    fn dense_hessian(&self, x: &[f64], dense: &mut [f64]) -> Result<(), Error> {
        let p = self.prepared(LaneKind::Hessian);
        let layout = self.hessian_layout();
        let (m, n) = (self.outputs(), self.arity());
        let nnz = p.lane.pattern.as_ref().map_or(0, Sparsity::nonzeros);
        let skip = p.lane.values + nnz;
        let mut blocks = Vec::with_capacity(m * layout.columns());
        self.eval(LaneKind::Hessian, x, |k, v| {
            if k >= skip {
                blocks.push(v);
            }
        });
        let c = layout.columns();
        dense.fill(0.0);
        if c > 0 {
            for (block, h) in blocks
                .chunks_exact(c)
                .zip(dense.chunks_exact_mut((n * n).max(1)))
            {
                layout.scatter(block, h)?;
            }
        }
        Ok(())
    }

    /// How many colour groups compress the Hessian: the number of products `H·v_k` one
    /// Hessian costs (0 when every symbol enters at most linearly; `n` when every pair
    /// interacts). Builds no lane: before the Hessian lane exists it is computed alone (the
    /// reverse sweeps and the pattern's forward pass, none of the compressed products).
    pub fn hessian_colors(&self) -> usize {
        self.hessian_layout().colours()
    }

    /// The compressed Hessian block's column count per output: `hessian_colors() × n`.
    pub fn hessian_columns(&self) -> usize {
        self.hessian_layout().columns()
    }

    /// Which column of the compressed Hessian block holds `H(i, j)`, or `None` when the
    /// cell is a structural zero (or `i`, `j` are out of range).
    ///
    /// Layout: column `k·n + row` holds `(H·v_k)[row]`, where `v_k` is the indicator
    /// vector of colour group `k` (`1` on the group's symbols). For a system the layout is
    /// the same for every output (the colouring is of the union of their patterns); a
    /// cell one output does not have reads as an exact `0` in that output's block.
    pub fn hessian_cell(&self, i: usize, j: usize) -> Option<usize> {
        self.hessian_layout().cell(i, j)
    }

    /// The Hessian's structural pattern, `n × n` and symmetric: the cells some output's
    /// Hessian can make other than the literal zero.
    pub fn hessian_pattern(&self) -> &Sparsity {
        self.hessian_layout().pattern()
    }

    /// `H(x)·v`, `n` long: the directional derivative of `∇f` along `v`, from one
    /// forward-over-reverse sweep (the Hessian is never formed). `v` is one value per
    /// symbol, in any [`Point`] spelling. One output only.
    ///
    /// An exactly-zero component of `v` contributes nothing, even through an infinite
    /// partial (`ARCHITECTURE.md`, "Exact zeros in a direction"): along a basis vector
    /// this is the Hessian's column wherever [`Equation::hessian`] answers a number.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let eq = rt::equation_text("x * x * y")?;
    /// assert_eq!(eq.hvp([1.0, 0.0], [3.0, 2.0])?, [4.0, 6.0]);  // H·v, no H formed
    /// assert_eq!(eq.hvp_along("x", [3.0, 2.0])?, [4.0, 6.0]);   // the same, by name
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::NotScalar`] on a system of more than one output; [`Error::WrongDirection`]
    /// when `v` is not one value per symbol (or, named, leaves one out);
    /// [`Error::UnknownSymbol`] or [`Error::DuplicateSymbol`] for a named `v`; those of
    /// [`Equation::point`] for `point`.
    pub fn hvp(&self, v: impl Point, point: impl Point) -> Result<Vec<f64>, Error> {
        self.scalar_only("hvp")?;
        let fill = |seeds: &mut [f64]| v.fill_as(self.symbols(), seeds, Role::Direction);
        self.with_inputs(&point, self.arity(), fill, |x| self.run_hvp(x))
    }

    /// [`Equation::hvp`] written into `out` (`n` values), without allocating, for calls
    /// in a loop.
    ///
    /// # Errors
    /// [`Error::WrongOutputLength`] unless `out` is `n` long (nothing is written); those
    /// of [`Equation::hvp`].
    pub fn hvp_into(&self, v: impl Point, point: impl Point, out: &mut [f64]) -> Result<(), Error> {
        self.scalar_only("hvp")?;
        super::check_output(out, Some(self.arity()))?;
        let fill = |seeds: &mut [f64]| v.fill_as(self.symbols(), seeds, Role::Direction);
        self.with_inputs(&point, self.arity(), fill, |x| {
            self.hvp_parts(x, |_| {}, |_, _| {}, out);
        })
    }

    /// `f(x)`, `∇f(x)` and `H(x)·v` together, from the one forward-over-reverse sweep
    /// [`Equation::hvp`] makes (its lane computes the value and the gradient on the way;
    /// this keeps them): `(f, ∇f, H·v)`, the gradient dense and `n` long, each bit for
    /// bit what [`Equation::evaluate`], [`Equation::jacobian`] and [`Equation::hvp`]
    /// answer. What a Newton–CG or trust-region step asks per iterate. One output only.
    ///
    /// ```
    /// use ddx::rt;
    ///
    /// let eq = rt::equation_text("x * x * y")?;
    /// let (f, g, hv) = eq.value_gradient_and_hvp([1.0, 0.0], [3.0, 2.0])?;
    /// assert_eq!((f, g, hv), (18.0, vec![12.0, 9.0], vec![4.0, 6.0]));
    /// # Ok::<(), ddx::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`Equation::hvp`].
    #[doc(alias = "value_and_hvp")]
    pub fn value_gradient_and_hvp(
        &self,
        v: impl Point,
        point: impl Point,
    ) -> Result<ValueGradientHvp<S>, Error> {
        self.scalar_only("hvp")?;
        let n = self.arity();
        let fill = |seeds: &mut [f64]| v.fill_as(self.symbols(), seeds, Role::Direction);
        let (mut f, mut g, mut hv) = (Vec::with_capacity(1), super::zeros(n), super::zeros(n));
        self.with_inputs(&point, n, fill, |x| {
            self.hvp_parts(x, |v| f.push(v), |j, d| g[j] = d, &mut hv);
        })?;
        Ok((S::value(&f), g, hv))
    }

    /// `H(x)·e_s`, the Hessian column of one symbol, `n` long: [`Equation::hvp`] along
    /// the basis vector of `symbol`, named (`"a"`) or by position in canonical order
    /// (`0usize`).
    ///
    /// # Errors
    /// [`Error::NotScalar`] on a system; [`Error::UnknownSymbol`] for a name the equation
    /// lacks; [`Error::IndexOutOfRange`] for a position `≥ n`; those of
    /// [`Equation::point`].
    pub fn hvp_along(&self, symbol: impl SymbolRef, point: impl Point) -> Result<Vec<f64>, Error> {
        self.scalar_only("hvp")?;
        let j = symbol.position(self.symbols())?;
        let fill = |seeds: &mut [f64]| {
            seeds[j] = 1.0;
            Ok(())
        };
        self.with_inputs(&point, self.arity(), fill, |x| self.run_hvp(x))
    }

    pub(crate) fn scalar_only(&self, call: &'static str) -> Result<(), Error> {
        match self.outputs() {
            1 => Ok(()),
            outputs => Err(Error::NotScalar { call, outputs }),
        }
    }

    fn run_hvp(&self, x: &[f64]) -> Vec<f64> {
        let mut out = super::zeros(self.arity());
        self.hvp_parts(x, |_| {}, |_, _| {}, &mut out);
        out
    }

    /// Runs the `hvp` lane (one output) at `x`: its value to `value`, each structurally
    /// nonzero gradient entry `(symbol, ∂f/∂x)` to `partial`, and `H·v` into `hv`
    /// (`n` long).
    fn hvp_parts(
        &self,
        x: &[f64],
        mut value: impl FnMut(f64),
        mut partial: impl FnMut(usize, f64),
        hv: &mut [f64],
    ) {
        let p = self.prepared(LaneKind::Hvp);
        let cells = p.lane.pattern.as_ref().map_or(&[][..], Sparsity::entries);
        let values = p.lane.values;
        let skip = values + cells.len();
        self.eval(LaneKind::Hvp, x, |k, v| {
            if k < values {
                value(v);
            } else if k < skip {
                if let Some(c) = cells.get(k - values) {
                    partial(c.column, v);
                }
            } else if let Some(h) = hv.get_mut(k - skip) {
                *h = v;
            }
        });
    }

    /// The `K`-th derivative `dᴷf/dxᴷ` at `x0` of a function of one symbol and one output,
    /// by one sweep of truncated Taylor arithmetic over the value graph (`K!` times the
    /// `K`-th Taylor coefficient). `K = 0` is the value. `K` is at most [`MAX_ORDER`]
    /// (170, the largest `K` whose `K!` is finite in `f64`: above it no derivative could
    /// be a finite number; the bound also keeps the sweep's memory and time, `K + 1`
    /// coefficients per node and `O(K²)` work per operation, in proportion to the graph).
    ///
    /// Every operation has a rule. Kinks follow the first-derivative conventions at every
    /// order (`abs` at 0 and `sign` give 0; a `max`/`min` tie gives each side half;
    /// `hypot`, `atan2` at the origin give 0; `select` takes the arm the point is on), so
    /// these derivatives agree with nested first derivatives and the Hessian. An argument
    /// that does not move contributes nothing, so a factor whose value is NaN or infinite
    /// but does not move scales the series instead of meeting its zero coefficients
    /// (`3·log(x)` at `x = −1` has derivative `−3`, as the gradient says).
    ///
    /// **Branch points and poles.** Where the series has no expansion — `sqrt`, `cbrt`,
    /// `log` of a moving 0, a division by a moving 0, `pow` of a moving 0 base unless the
    /// exponent is constant and 0 or a natural number, `asin`, `acos`, `acosh`, `atanh` at
    /// ±1 (whether an argument *moves with `x`* is decided from the graph, never from the
    /// truncated series: `x*x` moves at `x = 0`) — the derivative is the one the rule
    /// routes give: `K = 1` is [`Equation::gradient`]'s bits, `K = 2`
    /// [`Equation::hessian`]'s, `K ≥ 3` [`Equation::derivative_tensor`]'s (nested forward
    /// mode over the reverse sweep). That is the one-sided limit where the rules reach it
    /// (`sqrt` at 0: `∞`, then `−∞`; `x**1.5` at 0: `0`, then `∞`), and NaN where they
    /// meet `0·∞` (`sqrt(x*x)` at 0). Only an untaken `select` arm (or an operand
    /// `max`/`min` does not answer) meeting one is ignored, as every route ignores it.
    ///
    /// # Errors
    /// [`Error::OrderTooHigh`] when `K` exceeds [`MAX_ORDER`] (checked first);
    /// [`Error::NotUnivariate`] unless the equation has exactly one symbol and one output;
    /// [`Error::UnsupportedScalar`] at a branch point or pole (above) for `K` above
    /// [`MAX_TENSOR_ORDER`](crate::MAX_TENSOR_ORDER), where no route answers.
    pub fn univariate_derivative<const K: usize>(&self, x0: f64) -> Result<f64, Error> {
        self.univariate_derivative_of_order(K, x0)
    }

    /// [`Equation::univariate_derivative`] with the order `order` chosen at run time:
    /// `dᵒʳᵈᵉʳf/dxᵒʳᵈᵉʳ` at `x0`, the same bits as the const-generic form.
    ///
    /// # Errors
    /// As [`Equation::univariate_derivative`].
    pub fn univariate_derivative_of_order(&self, order: usize, x0: f64) -> Result<f64, Error> {
        Ok(match self.series(order, x0)? {
            Series::Taylor(c) => factorial(order) * c[order],
            Series::Rules(d) => d[order],
        })
    }

    /// Every derivative `f(x0), f'(x0), …, f⁽ᵒʳᵈᵉʳ⁾(x0)` (`order + 1` values) from one
    /// sweep: entry `k` is [`Equation::univariate_derivative_of_order`]`(k, x0)`, bit for
    /// bit (a sweep of degree `order` computes every lower coefficient exactly as a sweep
    /// of that lower degree does).
    ///
    /// # Errors
    /// As [`Equation::univariate_derivative`].
    pub fn univariate_derivatives(&self, order: usize, x0: f64) -> Result<Vec<f64>, Error> {
        Ok(match self.series(order, x0)? {
            Series::Taylor(mut c) => {
                for (k, ck) in c.iter_mut().enumerate() {
                    *ck *= factorial(k);
                }
                c
            }
            Series::Rules(d) => d,
        })
    }

    /// The Taylor coefficients `f(x0), f'(x0), f''(x0)/2!, …, f⁽ᵒʳᵈᵉʳ⁾(x0)/order!`
    /// (`order + 1` values) of the function of one symbol at `x0`, from one sweep. The
    /// coefficients stay finite where high derivatives overflow (`k!` is `7.3e306` at
    /// `k = 170`). At a branch point or pole, each derivative the rule routes give
    /// ([`Equation::univariate_derivative`]) divided by `k!`.
    ///
    /// # Errors
    /// As [`Equation::univariate_derivative`].
    pub fn taylor_coefficients(&self, order: usize, x0: f64) -> Result<Vec<f64>, Error> {
        Ok(match self.series(order, x0)? {
            Series::Taylor(c) => c,
            Series::Rules(mut d) => {
                for (k, dk) in d.iter_mut().enumerate() {
                    *dk /= factorial(k);
                }
                d
            }
        })
    }

    /// The Taylor sweep's coefficients, or where it has no expansion, the derivatives the
    /// rule routes give.
    fn series(&self, order: usize, x0: f64) -> Result<Series, Error> {
        if order > MAX_ORDER {
            return Err(Error::OrderTooHigh {
                order,
                max: MAX_ORDER,
            });
        }
        let (n, m) = (self.arity(), self.outputs());
        if n != 1 || m != 1 {
            return Err(Error::NotUnivariate {
                symbols: n,
                outputs: m,
            });
        }
        let model = self.model();
        // The one symbol moves; the parameters (after it) stay at their bound values.
        let x = self.with_inputs(&[x0], 0, |_| Ok(()), |x| x.to_vec())?;
        // The series is swept in a step `s` of the symbol (a power of two near |x0| when
        // x0 is far from 1) and scaled back: Taylor arithmetic is homogeneous (coefficient
        // k of every node scales as s^k) and a power of two scales without rounding, so
        // the bits are those of the unit step wherever that step neither overflows nor
        // underflows — and right where it would (`log`'s −1/(2x²) at x = 1e200).
        let step = taylor_step(x0);
        let mut direction = vec![0.0; x.len()];
        direction[0] = step;
        let taylor = self.remembered_taylor(order, &x, || {
            let _ = ddx_ir::user::take_failure();
            let mut series =
                taylor::expand(model.graph(), model.outputs(), &x, &direction, &[], order)?;
            if let Some(e) = ddx_ir::user::take_failure() {
                return Err(e);
            }
            let mut c = series.swap_remove(0);
            if step != 1.0 {
                let back = 1.0 / step; // exact: a power of two in range
                for (k, ck) in c.iter_mut().enumerate() {
                    for _ in 0..k {
                        *ck *= back;
                    }
                }
            }
            Ok(c)
        });
        match taylor {
            Ok(c) => Ok(Series::Taylor(c)),
            Err(Error::UnsupportedScalar { .. }) if order <= crate::MAX_TENSOR_ORDER => {
                self.derivatives_by_rules(order, x0).map(Series::Rules)
            }
            Err(e) => Err(e),
        }
    }

    /// `f(x0), f'(x0), …` from the value, gradient, Hessian and tensor lanes.
    fn derivatives_by_rules(&self, order: usize, x0: f64) -> Result<Vec<f64>, Error> {
        let x = [x0];
        let mut d = Vec::with_capacity(order + 1);
        let mut value = [0.0];
        self.evaluate_into(&x[..], &mut value)?;
        d.push(value[0]);
        for k in 1..=order {
            let dk = match k {
                1 => self.gradient(&x[..])?,
                2 => self.hessian(&x[..])?,
                _ => self.derivative_tensor(k, &x[..])?,
            };
            d.push(dk[0]);
        }
        Ok(d)
    }
}

/// What [`Equation::series`] answers: Taylor coefficients, or derivatives.
enum Series {
    Taylor(Vec<f64>),
    Rules(Vec<f64>),
}

/// `k!` as `f64`, multiplied up from 1 (exact to `22!`, then rounded at each step).
fn factorial(k: usize) -> f64 {
    (1..=k).map(|i| i as f64).product()
}

/// The step a univariate Taylor sweep at `x0` takes in its symbol: 1 for `|x0|` within
/// `2^±64` (and at 0, ±∞, NaN), else the power of two `2^⌊log₂|x0|⌋` (at least `2^−1022`),
/// so that every coefficient stays near the scale of the value.
fn taylor_step(x0: f64) -> f64 {
    let a = x0.abs();
    if !a.is_finite() || a == 0.0 || (2f64.powi(-64)..=2f64.powi(64)).contains(&a) {
        return 1.0;
    }
    // The biased exponent of a normal number; a subnormal one takes the smallest normal.
    let biased = ((a.to_bits() >> 52) & 0x7ff).max(1);
    f64::from_bits(biased << 52)
}
