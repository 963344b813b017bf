//! NIST's model lines read through ddx's text parser, instead of hand-written models.
//!
//! A NIST model line is close to ddx's grammar. [`translate`] closes the gap: square
//! brackets become parentheses (`exp[-b1*x]`, `log[y]`), `arctan` becomes `atan`, and the
//! trailing error term `+ e` is dropped. What is left of the `=` is the response (`y`, or
//! `log(y)` for Nelson) and what is right of it the prediction. `pi` stays a name in the
//! text and is bound to `π` when the formula is instantiated, as are the predictors (`x`,
//! or `x1`, `x2`) and the response `y`; the parameters `b1 … bp` are the symbols.
//!
//! [`Dataset::residual_system_text`] builds the same residual system as
//! [`Dataset::residual_system`] does from the hand-written [`Family`](crate::nist::Family)
//! models, parsing the line once and instantiating it per observation.

use crate::nist::{Dataset, NistError};
use ddx::{rt, Equation, Expr, Formula, System};
use std::path::PathBuf;

/// NIST's model line (`y = exp[-b1*x]/(b2+b3*x)  +  e`) as two texts in ddx's grammar:
/// the response (`y`) and the prediction (`exp(-b1*x)/(b2+b3*x)`). `None` when the line
/// has no `=`.
pub fn translate(model_line: &str) -> Option<(String, String)> {
    let (lhs, rhs) = model_line.split_once('=')?;
    let brackets = |s: &str| s.replace('[', "(").replace(']', ")");
    let rhs = rename(&brackets(strip_error_term(rhs)), "arctan", "atan");
    Some((brackets(lhs.trim()), rhs.trim().to_string()))
}

/// `s` without a trailing `+ e` (NIST's error term), if it has one.
fn strip_error_term(s: &str) -> &str {
    let t = s.trim_end();
    if let Some(before) = t.strip_suffix('e') {
        let name_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
        if !before.ends_with(name_char) {
            if let Some(rest) = before.trim_end().strip_suffix('+') {
                return rest.trim_end();
            }
        }
    }
    t
}

/// `s` with every whole name `from` replaced by `to`.
fn rename(s: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut name = String::new();
    let flush = |name: &mut String, out: &mut String| {
        out.push_str(if name == from { to } else { name });
        name.clear();
    };
    for c in s.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            name.push(c);
        } else {
            flush(&mut name, &mut out);
            out.push(c);
        }
    }
    flush(&mut name, &mut out);
    out
}

/// A problem with the model line itself.
fn bad_line(ds: &Dataset, what: String) -> NistError {
    NistError::Format {
        path: PathBuf::from(format!("{}.dat", ds.name)),
        what,
    }
}

impl Dataset {
    /// The names of the predictors in the model line: `x`, or `x1`, `x2`, … when there are
    /// several.
    pub fn predictor_names(&self) -> Vec<String> {
        let k = self.observations.first().map_or(1, |o| o.x.len());
        if k == 1 {
            vec!["x".to_string()]
        } else {
            (1..=k).map(|i| format!("x{i}")).collect()
        }
    }

    /// The model line parsed by ddx: the response (`y`, or `log(y)`) and the prediction,
    /// after [`translate`].
    ///
    /// # Errors
    /// [`NistError::Ddx`] with the parse error (its caret points into the translated
    /// text); [`NistError::Format`] when the line has no `=`, or names something that is
    /// none of the parameters, the predictors, `y` and `pi`.
    pub fn model_formulas(&self) -> Result<(Formula, Formula), NistError> {
        let (lhs, rhs) = translate(&self.model_text)
            .ok_or_else(|| bad_line(self, format!("no `=` in the model `{}`", self.model_text)))?;
        let response = Formula::parse(&lhs)?;
        let prediction = Formula::parse(&rhs)?;
        let predictors = self.predictor_names();
        let known = |n: &str| {
            n == "y"
                || n == "pi"
                || predictors.iter().any(|p| p == n)
                || self.parameters.iter().any(|p| p.name == n)
        };
        if let Some(stray) = response
            .names()
            .iter()
            .chain(prediction.names())
            .find(|n| !known(n))
        {
            return Err(bad_line(
                self,
                format!(
                    "the model `{rhs}` names `{stray}`, which is no parameter, predictor, \
                     `y` or `pi`"
                ),
            ));
        }
        Ok((response, prediction))
    }

    /// The residual system `rᵢ = response(yᵢ) − prediction(xᵢ)`, one output per
    /// observation, from the dataset's model line read through ddx's parser (see the
    /// module documentation); the symbols are the parameters `b1 … bp`.
    ///
    /// # Errors
    /// Those of [`Dataset::model_formulas`]; a ddx build error.
    pub fn residual_system_text(&self) -> Result<Equation<System>, NistError> {
        let (response, prediction) = self.model_formulas()?;
        let predictors = self.predictor_names();
        Ok(rt::equation(|| {
            let mut bindings: Vec<(&str, f64)> = vec![("pi", std::f64::consts::PI)];
            bindings.extend(predictors.iter().map(|p| (p.as_str(), 0.0)));
            self.observations
                .iter()
                .map(|o| {
                    for (slot, &x) in bindings[1..].iter_mut().zip(&o.x) {
                        slot.1 = x;
                    }
                    response.bind(&[("y", o.y)]) - prediction.bind(&bindings)
                })
                .collect::<Vec<Expr>>()
        })?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translates_nist_notation() {
        let t = |s: &str| translate(s).expect("has an =");
        assert_eq!(
            t("y = exp[-b1*x]/(b2+b3*x)  +  e"),
            ("y".into(), "exp(-b1*x)/(b2+b3*x)".into())
        );
        assert_eq!(
            t("log[y] = b1 - b2*x1 * exp[-b3*x2]  +  e"),
            ("log(y)".into(), "b1 - b2*x1 * exp(-b3*x2)".into())
        );
        assert_eq!(
            t("y =  b1 - b2*x - arctan[b3/(x-b4)]/pi  +  e").1,
            "b1 - b2*x - atan(b3/(x-b4))/pi"
        );
        assert_eq!(t("y = b1*x + base").1, "b1*x + base", "only a lone `+ e`");
        assert_eq!(t("y = b1*x**e").1, "b1*x**e");
        assert_eq!(
            rename("arctan(x) + arctan2", "arctan", "atan"),
            "atan(x) + arctan2"
        );
        assert_eq!(translate("no equals sign"), None);
    }
}
