//! Phase 1: MINPACK's Levenberg–Marquardt (`lmder`, as the `levenberg-marquardt` crate
//! implements it, with its default tolerances) over a ddx residual system, with ddx's
//! exact Jacobian.
//!
//! Input: a residual system and a start. Output: the last parameters LM held (finite or
//! not), its Jacobian evaluations and why it stopped. Never fails: a ddx error or a
//! non-finite residual makes LM stop, and phase 2 decides what to do from there.

use ddx::{Equation, System};
use levenberg_marquardt::{LeastSquaresProblem, LevenbergMarquardt, TerminationReason};
use nalgebra::{storage::Owned, DMatrix, DVector, Dyn};
use std::cell::Cell;

/// The least-squares problem LM sees: ddx's residual system at the current parameters.
struct Problem<'a> {
    eq: &'a Equation<System>,
    b: DVector<f64>,
    jacobians: Cell<usize>,
}

impl LeastSquaresProblem<f64, Dyn, Dyn> for Problem<'_> {
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
        let r = self.eq.evaluate(self.b.as_slice()).ok()?;
        Some(DVector::from_vec(r))
    }

    fn jacobian(&self) -> Option<DMatrix<f64>> {
        self.jacobians.set(self.jacobians.get() + 1);
        let j = self.eq.jacobian(self.b.as_slice()).ok()?;
        Some(DMatrix::from_row_slice(
            self.eq.outputs(),
            self.eq.arity(),
            &j,
        ))
    }
}

/// What phase 1 ended with.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The parameters LM stopped at.
    pub parameters: Vec<f64>,
    /// Jacobian evaluations (LM's outer iterations).
    pub jacobians: usize,
    /// Why it stopped.
    pub stop: String,
}

/// Why LM stopped, in words.
fn reason(t: &TerminationReason) -> String {
    match t {
        TerminationReason::Converged { ftol, xtol } => match (ftol, xtol) {
            (true, true) => "relative reduction and step below tolerance".into(),
            (true, false) => "relative reduction below tolerance".into(),
            _ => "relative step below tolerance".into(),
        },
        TerminationReason::Orthogonal => "residuals orthogonal to the Jacobian".into(),
        TerminationReason::ResidualsZero => "the residuals are zero".into(),
        TerminationReason::LostPatience => "evaluation limit reached".into(),
        TerminationReason::NoImprovementPossible(what) => {
            format!("no improvement possible ({what})")
        }
        TerminationReason::Numerical(what) => format!("non-finite {what}"),
        TerminationReason::User(what) => format!("a ddx call failed ({what})"),
        other => format!("{other:?}"),
    }
}

/// Runs LM from `start` with `patience` (evaluations per parameter and one).
pub fn minimize(eq: &Equation<System>, start: &[f64], patience: usize) -> Outcome {
    let problem = Problem {
        eq,
        b: DVector::from_column_slice(start),
        jacobians: Cell::new(0),
    };
    let (problem, report) = LevenbergMarquardt::new()
        .with_patience(patience)
        .minimize(problem);
    Outcome {
        parameters: problem.b.as_slice().to_vec(),
        jacobians: problem.jacobians.get(),
        stop: reason(&report.termination),
    }
}
