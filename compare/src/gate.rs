//! The gate: before anything is timed, every arm's gradient is compared with every other
//! arm's at the same points, and a disagreement stops the run, naming the model and the arm.
//!
//! **Tolerance.** Partial `k` of arms `a` and `b` agree when
//!
//! ```text
//! |aₖ − bₖ| ≤ 1e-10 · max(|aₖ|, |bₖ|, 10⁻³ · ‖g‖∞)
//! ```
//!
//! with `‖g‖∞` the largest partial magnitude either arm reports at that point: relative to
//! the partial itself, except that a partial a thousand times smaller than the largest one
//! (where it comes from cancellation and different but correct operation orders may leave
//! few of its digits) is measured against a thousandth of the largest. Every value must be
//! finite.
//!
//! **Naming.** With three or more arms the culprit is the arm that disagrees with the most
//! others (a wrong arm disagrees with all the right ones); with two, both are named.

use std::fmt;

/// The relative tolerance of the gate.
pub const TOLERANCE: f64 = 1e-10;
/// The fraction of the largest partial below which a partial is measured against it.
pub const FLOOR: f64 = 1e-3;

/// One arm's gradients at the gate's points, in the points' order.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The arm's name as the table prints it.
    pub arm: String,
    /// One gradient per point.
    pub gradients: Vec<Vec<f64>>,
}

/// Why the gate stopped the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Disagreement {
    /// The model, e.g. `uniquac n=16`.
    pub model: String,
    /// The arm judged wrong.
    pub arm: String,
    /// The arm it was compared with at the first disagreement found.
    pub against: String,
    /// The point's index among the gate's points.
    pub point: usize,
    /// The input index of the partial.
    pub component: usize,
    /// The culprit's value.
    pub got: f64,
    /// The other arm's value.
    pub expected: f64,
    /// Whether another arm disagrees as often as the culprit (e.g. only two arms), so the
    /// gate cannot tell which of the two is wrong.
    pub ambiguous: bool,
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = (&self.arm, &self.against);
        let (m, p, k) = (&self.model, self.point, self.component);
        let values = format!(
            "at gate point {p}, partial {k}: {:e} vs {:e} (tolerance {:e} relative)",
            self.got, self.expected, TOLERANCE
        );
        if self.ambiguous {
            write!(f, "gate: model {m}: arms `{a}` and `{b}` disagree, and no third arm says which is wrong, {values}")
        } else {
            write!(f, "gate: model {m}: arm `{a}` disagrees with `{b}` (and the arms that agree with it) {values}")
        }
    }
}

impl std::error::Error for Disagreement {}

/// Whether `a` and `b` agree as partials of a gradient whose largest magnitude is `scale`.
pub fn agree(a: f64, b: f64, scale: f64) -> bool {
    a.is_finite()
        && b.is_finite()
        && (a - b).abs() <= TOLERANCE * a.abs().max(b.abs()).max(FLOOR * scale)
}

/// The first partial at which `a` and `b` disagree: `(point, component)`.
fn first_difference(a: &Answer, b: &Answer) -> Option<(usize, usize)> {
    if a.gradients.len() != b.gradients.len() {
        return Some((a.gradients.len().min(b.gradients.len()), 0));
    }
    for (p, (ga, gb)) in a.gradients.iter().zip(&b.gradients).enumerate() {
        if ga.len() != gb.len() {
            return Some((p, ga.len().min(gb.len())));
        }
        let scale =
            ga.iter().chain(gb).fold(
                0.0_f64,
                |m, v| if v.is_finite() { m.max(v.abs()) } else { m },
            );
        if let Some(k) = (0..ga.len()).find(|&k| !agree(ga[k], gb[k], scale)) {
            return Some((p, k));
        }
    }
    None
}

/// Compares every arm with every other; `Ok` when all agree.
///
/// # Errors
/// The [`Disagreement`] naming the arm judged wrong.
pub fn check(model: &str, answers: &[Answer]) -> Result<(), Disagreement> {
    let m = answers.len();
    let mut against = vec![0usize; m];
    let mut first: Option<(usize, usize, usize, usize)> = None;
    for i in 0..m {
        for j in i + 1..m {
            if let Some((p, k)) = first_difference(&answers[i], &answers[j]) {
                against[i] += 1;
                against[j] += 1;
                first.get_or_insert((i, j, p, k));
            }
        }
    }
    let Some((i0, j0, _, _)) = first else {
        return Ok(());
    };
    // The culprit: the most disagreeing arm (ties: the first of the first failing pair).
    let worst = against.iter().copied().max().unwrap_or(0);
    let culprit = if against[i0] == worst {
        i0
    } else if against[j0] == worst {
        j0
    } else {
        (0..m).find(|&i| against[i] == worst).unwrap_or(i0)
    };
    // Report it against the first arm it disagrees with.
    let other = (0..m)
        .filter(|&o| o != culprit)
        .find(|&o| first_difference(&answers[culprit], &answers[o]).is_some())
        .unwrap_or(if culprit == i0 { j0 } else { i0 });
    let (p, k) = first_difference(&answers[culprit], &answers[other]).unwrap_or((0, 0));
    let ambiguous = (0..m).any(|i| i != culprit && against[i] == worst);
    let at = |a: &Answer| {
        a.gradients
            .get(p)
            .and_then(|g| g.get(k))
            .copied()
            .unwrap_or(f64::NAN)
    };
    Err(Disagreement {
        model: model.to_string(),
        arm: answers[culprit].arm.clone(),
        against: answers[other].arm.clone(),
        point: p,
        component: k,
        got: at(&answers[culprit]),
        expected: at(&answers[other]),
        ambiguous,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(arm: &str, gradients: Vec<Vec<f64>>) -> Answer {
        Answer {
            arm: arm.to_string(),
            gradients,
        }
    }

    fn truth() -> Vec<Vec<f64>> {
        vec![vec![1.0, -2.5, 3e4, 1e-9], vec![0.5, 0.25, -7.0, 2.0]]
    }

    #[test]
    fn agreeing_arms_pass() {
        let mut close = truth();
        close[0][2] *= 1.0 + 1e-12;
        // A partial far below the largest may differ in more digits (cancellation).
        close[0][3] = 1.3e-9;
        let answers = [
            answer("ddx-interp", truth()),
            answer("num-dual", close),
            answer("casadi/j", truth()),
        ];
        assert_eq!(check("m", &answers), Ok(()));
    }

    #[test]
    fn a_wrong_arm_is_caught_and_named() {
        let mut wrong = truth();
        wrong[1][1] *= 1.0 + 1e-8;
        let answers = [
            answer("ddx-interp", truth()),
            answer("num-dual", truth()),
            answer("jax", wrong),
            answer("casadi/r", truth()),
        ];
        let e = check("uniquac n=16", &answers).unwrap_err();
        assert_eq!(e.arm, "jax");
        assert_eq!(e.model, "uniquac n=16");
        assert_eq!((e.point, e.component), (1, 1));
        assert_eq!(e.expected, 0.25);
        assert!(!e.ambiguous);
        let msg = e.to_string();
        assert!(
            msg.contains("uniquac n=16") && msg.contains("`jax`"),
            "{msg}"
        );
    }

    #[test]
    fn the_first_arm_can_be_the_culprit() {
        let mut wrong = truth();
        wrong[0][0] = -1.0;
        let answers = [
            answer("ddx-interp", wrong),
            answer("num-dual", truth()),
            answer("casadi/j", truth()),
        ];
        assert_eq!(check("m", &answers).unwrap_err().arm, "ddx-interp");
    }

    #[test]
    fn non_finite_and_short_answers_fail() {
        let mut nan = truth();
        nan[0][1] = f64::NAN;
        let answers = [answer("a", truth()), answer("b", nan), answer("c", truth())];
        assert_eq!(check("m", &answers).unwrap_err().arm, "b");
        let mut short = truth();
        short[1].pop();
        let answers = [
            answer("a", truth()),
            answer("b", truth()),
            answer("c", short),
        ];
        assert_eq!(check("m", &answers).unwrap_err().arm, "c");
    }

    #[test]
    fn two_arms_cannot_tell_which() {
        let mut wrong = truth();
        wrong[0][0] = 2.0;
        let e = check("m", &[answer("a", truth()), answer("b", wrong)]).unwrap_err();
        assert!(e.ambiguous);
        assert!(e.to_string().contains("no third arm"), "{e}");
    }

    #[test]
    fn tolerance_is_relative() {
        assert!(agree(1e6, 1e6 * (1.0 + 5e-11), 1e6));
        assert!(!agree(1e6, 1e6 * (1.0 + 5e-10), 1e6));
        assert!(!agree(f64::INFINITY, f64::INFINITY, 1.0));
    }
}
