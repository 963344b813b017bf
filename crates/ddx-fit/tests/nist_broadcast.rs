//! NIST StRD fits driven by one small parameterised model with broadcast symbols: the
//! residual `r = response(y) − prediction(b; x)` as a scalar equation whose symbols are
//! the parameters `b1 … bp` and whose ddx parameters (`rt::param`) are the predictors and
//! `y`. One batch Jacobian call over the observation columns — `b` given as columns of
//! length 1, broadcast — answers the residual vector and Jacobian LM needs, from a graph of
//! a few nodes instead of a system with one output per observation.
//!
//! The truth: the residuals are the residual system's bits and the Jacobian its numbers
//! (the sign of a zero aside, see below); Levenberg–Marquardt run on them takes the very
//! steps it takes on the residual system (`ddx_fit::lm`), so it stops at the same
//! parameters, bit for bit (to 6 digits where a zero's sign differs); and those reach
//! NIST's certified values where LM alone does.

use ddx::{rt, Equation, Expr, Scalar};
use ddx_models::nist::{self, Dataset};
use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt};
use nalgebra::{storage::Owned, DMatrix, DVector, Dyn};

/// The residual of one observation, parameters `b1 … bp` as symbols, predictors and `y`
/// as ddx parameters.
fn residual_model(ds: &Dataset) -> Equation<Scalar> {
    let (response, prediction) = ds.model_formulas().expect("the model line parses");
    let predictors = ds.predictor_names();
    rt::equation(|| {
        let mut bindings: Vec<(&str, Expr)> = vec![("pi", std::f64::consts::PI.into())];
        bindings.extend(predictors.iter().map(|p| (p.as_str(), rt::param(p))));
        bindings.push(("y", rt::param("y")));
        response.bind(&bindings) - prediction.bind(&bindings)
    })
    .expect("the residual model builds")
}

/// The observations as parameter columns, in the order of `eq.parameters()`.
fn columns(ds: &Dataset, eq: &Equation<Scalar>) -> Vec<Vec<f64>> {
    let predictors = ds.predictor_names();
    eq.parameters()
        .iter()
        .map(|name| {
            ds.observations
                .iter()
                .map(|o| match predictors.iter().position(|p| p == name) {
                    Some(k) => o.x[k],
                    None => o.y,
                })
                .collect()
        })
        .collect()
}

struct Broadcast<'a> {
    eq: &'a Equation<Scalar>,
    data: &'a [Vec<f64>],
    b: DVector<f64>,
}

impl Broadcast<'_> {
    /// Residuals and the dense `N × p` Jacobian at `b`, from one batch call.
    fn run(&self) -> (Vec<f64>, Vec<f64>) {
        let (n, p) = (self.data[0].len(), self.eq.arity());
        let b: Vec<[f64; 1]> = self.b.iter().map(|&v| [v]).collect();
        let mut xs: Vec<&[f64]> = b.iter().map(|c| &c[..]).collect();
        xs.extend(self.data.iter().map(Vec::as_slice));
        let cells = self.eq.jacobian_columns();
        let mut values = vec![0.0; n];
        let mut partials = vec![vec![0.0; n]; cells];
        let mut pr: Vec<&mut [f64]> = partials.iter_mut().map(|c| &mut c[..]).collect();
        self.eq
            .jacobian_batch(&xs, &mut [&mut values], &mut pr)
            .expect("the columns fit");
        let mut dense = vec![0.0; n * p];
        for (c, cell) in self.eq.jacobian_pattern().entries().iter().enumerate() {
            for k in 0..n {
                dense[k * p + cell.column] = partials[c][k];
            }
        }
        (values, dense)
    }
}

impl LeastSquaresProblem<f64, Dyn, Dyn> for Broadcast<'_> {
    type ResidualStorage = Owned<f64, Dyn>;
    type JacobianStorage = Owned<f64, Dyn, Dyn>;
    type ParameterStorage = Owned<f64, Dyn>;

    fn set_params(&mut self, b: &DVector<f64>) {
        self.b.copy_from(b);
    }

    fn params(&self) -> DVector<f64> {
        self.b.clone()
    }

    fn residuals(&self) -> Option<DVector<f64>> {
        Some(DVector::from_vec(self.run().0))
    }

    fn jacobian(&self) -> Option<DMatrix<f64>> {
        let (n, p) = (self.data[0].len(), self.eq.arity());
        Some(DMatrix::from_row_slice(n, p, &self.run().1))
    }
}

#[test]
fn broadcast_fits_take_the_residual_systems_steps() {
    let datasets = nist::load_all(&nist::data_dir()).expect("the datasets load");
    assert_eq!(datasets.len(), 19);
    let patience = 100;
    let (mut same, mut certified) = (0, 0);
    for ds in &datasets {
        let eq = residual_model(ds);
        assert!(
            eq.nodes(ddx::LaneKind::Jacobian) < 80,
            "{}: a small lane",
            ds.name
        );
        let data = columns(ds, &eq);
        let system = ds.residual_system_text().expect("the model line parses");
        for start in [1, 2] {
            let b0: Vec<f64> = ds
                .parameters
                .iter()
                .map(|p| if start == 1 { p.start1 } else { p.start2 })
                .collect();
            // The first residuals and Jacobian: the residual system's bits.
            let problem = Broadcast {
                eq: &eq,
                data: &data,
                b: DVector::from_column_slice(&b0),
            };
            let (r, j) = problem.run();
            let r0 = system.evaluate(&b0[..]).expect("evaluates");
            let j0 = system.jacobian(&b0[..]).expect("differentiates");
            let bits = |a: &[f64], b: &[f64]| {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
            };
            assert!(bits(&r, &r0), "{} start {start}: residuals", ds.name);
            // The same numbers; where an observation's `x` is 0 the residual system's
            // literal `0` makes a structural zero (`+0`) that the parameter computes as
            // `±0` (DESIGN: literal zeros are structural).
            assert!(
                j.len() == j0.len() && j.iter().zip(&j0).all(|(a, b)| a == b),
                "{} start {start}: Jacobian",
                ds.name
            );
            let (problem, _) = LevenbergMarquardt::new()
                .with_patience(patience)
                .minimize(problem);
            let reference = ddx_fit::lm::minimize(&system, &b0, patience);
            if bits(&j, &j0) {
                // The same Jacobians, bit for bit: the same steps, the same stop.
                assert!(
                    bits(problem.b.as_slice(), &reference.parameters),
                    "{} start {start}: {:?} vs {:?}",
                    ds.name,
                    problem.b.as_slice(),
                    reference.parameters
                );
                same += 1;
            } else {
                // A zero's sign moves a Householder reflection: the path differs in the
                // last bits, the destination does not.
                let agree = problem
                    .b
                    .iter()
                    .zip(&reference.parameters)
                    .map(|(a, b)| nist::digits(*a, *b))
                    .fold(f64::INFINITY, f64::min);
                assert!(agree >= 6.0, "{} start {start}: {agree} digits", ds.name);
            }
            let digits = ds
                .parameters
                .iter()
                .zip(problem.b.iter())
                .map(|(p, v)| nist::digits(*v, p.certified))
                .fold(f64::INFINITY, f64::min);
            if digits >= 6.0 {
                certified += 1;
            }
        }
    }
    eprintln!(
        "{same} fits took the residual system's steps; {certified} reached 6 certified digits"
    );
    assert!(same >= 30, "{same}");
    // Every dataset from both of NIST's starts, to 6 certified digits.
    assert_eq!(certified, 38);
}
