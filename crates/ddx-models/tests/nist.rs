//! NIST's certified values, checked through ddx equations.
//!
//! At the certified parameters `b` (11 significant digits, so within `δb = 5e-11·|b|` of the
//! exact minimiser `b*`):
//! - the RSS computed through an equation equals the native `f64` computation bit for bit
//!   (same operations, same order), and agrees with the certified RSS within what double
//!   precision and the rounding of `b` allow: the certified value's own rounding
//!   (`5e-11` relative), the rounding of each residual (`eᵢ = 16ε(|yᵢ| + |fᵢ|)`, giving
//!   `Σ 2|rᵢ|eᵢ + eᵢ²`) and the move from `b*` to `b` (`|g|·δb + δbᵀ|JᵀJ|δb`);
//! - the gradient `g = 2Jᵀr` is zero up to the same effects: `|gₖ| ≤ 2·(2|JᵀJ|δb)ₖ +
//!   4·Σᵢ 2|Jᵢₖ|eᵢ`.

use ddx_models::nist::{self, Dataset};

fn datasets() -> Vec<Dataset> {
    nist::load_all(&nist::data_dir()).expect("the datasets load")
}

#[test]
fn all_nineteen_datasets_load_as_nist_ships_them() {
    let all = datasets();
    assert_eq!(all.len(), 19);
    for ds in &all {
        let text =
            std::fs::read_to_string(nist::data_dir().join(format!("{}.dat", ds.name))).unwrap();
        let count = |key: &str| -> usize {
            text.lines()
                .find_map(|l| {
                    l.trim()
                        .strip_prefix(key)
                        .map(|r| r.split_whitespace().next().unwrap().parse().unwrap())
                })
                .unwrap()
        };
        assert_eq!(
            ds.observations.len(),
            count("Number of Observations:"),
            "{}",
            ds.name
        );
        let dof = count("Degrees of Freedom:");
        assert_eq!(
            ds.parameters.len(),
            ds.observations.len() - dof,
            "{}",
            ds.name
        );
        assert!(ds.family().is_ok(), "{}", ds.name);
    }
    let misra = all.iter().find(|d| d.name == "Misra1a").unwrap();
    assert_eq!(misra.parameters[0].certified, 2.3894212918E+02);
    assert_eq!(misra.parameters[1].start2, 0.0005);
    assert_eq!(misra.observations[0].y, 10.07);
    assert_eq!(misra.observations[13].x, [760.0]);
    assert_eq!(misra.model_text, "y = b1*(1-exp[-b2*x])  +  e");
    let nelson = all.iter().find(|d| d.name == "Nelson").unwrap();
    assert_eq!(nelson.observations[0].x.len(), 2);
}

#[test]
fn a_damaged_file_is_refused_not_misread() {
    let dir = std::env::temp_dir().join(format!("ddx-nist-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = std::fs::read_to_string(nist::data_dir().join("Misra1a.dat")).unwrap();
    let bad = dir.join("Bad.dat");
    std::fs::write(&bad, good.replace("2.3894212918E+02", "2.38x4E+02")).unwrap();
    assert!(matches!(
        nist::load(&bad),
        Err(nist::NistError::Format { .. })
    ));
    std::fs::write(&bad, &good[..good.len() / 2]).unwrap();
    assert!(nist::load(&bad).is_err());
    assert!(matches!(
        nist::load(&dir.join("absent.dat")),
        Err(nist::NistError::Io { .. })
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `(e, J, JᵀJ)` at `b`: per-residual rounding bounds, the residual Jacobian (row-major) and
/// `|JᵀJ|` (row-major p × p).
fn rounding(ds: &Dataset, b: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let fam = ds.family().unwrap();
    let e: Vec<f64> = ds
        .observations
        .iter()
        .map(|o| 16.0 * f64::EPSILON * (fam.response(o.y).abs() + fam.predict(b, &o.x).abs()))
        .collect();
    let j = ds.residual_system().unwrap().jacobian(b).unwrap();
    let p = b.len();
    let mut jtj = vec![0.0; p * p];
    for row in j.chunks(p) {
        for a in 0..p {
            for c in 0..p {
                jtj[a * p + c] += (row[a] * row[c]).abs();
            }
        }
    }
    (e, j, jtj)
}

#[test]
fn rss_at_the_certified_parameters_is_the_certified_rss() {
    for ds in datasets() {
        let b = ds.certified();
        let p = b.len();
        let eq = ds.rss_equation().unwrap();
        let rss = eq.evaluate(&b).unwrap();
        let native = ds.rss(&b).unwrap();
        assert_eq!(
            rss.to_bits(),
            native.to_bits(),
            "{}: equation {rss} vs native {native}",
            ds.name
        );
        let r = ds.residuals(&b).unwrap();
        let (e, _, jtj) = rounding(&ds, &b);
        let g = eq.gradient(&b).unwrap();
        let db: Vec<f64> = b.iter().map(|v| 5e-11 * v.abs()).collect();
        let mut tol = 5e-11 * ds.certified_rss;
        tol += r
            .iter()
            .zip(&e)
            .map(|(r, e)| 2.0 * r.abs() * e + e * e)
            .sum::<f64>();
        tol += g.iter().zip(&db).map(|(g, d)| g.abs() * d).sum::<f64>();
        for a in 0..p {
            for c in 0..p {
                tol += db[a] * jtj[a * p + c] * db[c];
            }
        }
        let err = (rss - ds.certified_rss).abs();
        assert!(
            err <= tol,
            "{}: RSS {rss:e} vs certified {:e}: error {err:e} > bound {tol:e}",
            ds.name,
            ds.certified_rss
        );
    }
}

#[test]
fn the_gradient_vanishes_at_the_certified_parameters() {
    for ds in datasets() {
        let b = ds.certified();
        let p = b.len();
        let g = ds.rss_equation().unwrap().gradient(&b).unwrap();
        let (e, j, jtj) = rounding(&ds, &b);
        let db: Vec<f64> = b.iter().map(|v| 5e-11 * v.abs()).collect();
        for k in 0..p {
            let moved: f64 = (0..p).map(|c| 2.0 * jtj[k * p + c] * db[c]).sum();
            let rounded: f64 = j
                .chunks(p)
                .zip(&e)
                .map(|(row, e)| 2.0 * row[k].abs() * e)
                .sum();
            let bound = 2.0 * moved + 4.0 * rounded;
            assert!(
                g[k].abs() <= bound,
                "{}: ∂RSS/∂{} = {:e} exceeds the rounding bound {bound:e}",
                ds.name,
                ds.parameters[k].name,
                g[k]
            );
        }
        // The bound is not vacuous: away from the solution the gradient is far larger.
        let start: Vec<f64> = ds.parameters.iter().map(|q| q.start2).collect();
        let g0 = ds.rss_equation().unwrap().gradient(&start).unwrap();
        let (e0, j0, jtj0) = rounding(&ds, &start);
        let exceeds = (0..p).any(|k| {
            let moved: f64 = (0..p).map(|c| 2.0 * jtj0[k * p + c] * db[c]).sum();
            let rounded: f64 = j0
                .chunks(p)
                .zip(&e0)
                .map(|(row, e)| 2.0 * row[k].abs() * e)
                .sum();
            g0[k].abs() > 2.0 * moved + 4.0 * rounded
        });
        assert!(
            exceeds,
            "{}: the bound would also accept the gradient at Start 2",
            ds.name
        );
    }
}

#[test]
fn residual_jacobian_matches_the_rss_gradient() {
    // ∇RSS = 2·Jᵀr, from two different lanes of two different equations.
    for ds in datasets() {
        let b: Vec<f64> = ds.parameters.iter().map(|q| q.start2).collect();
        let p = b.len();
        let g = ds.rss_equation().unwrap().gradient(&b).unwrap();
        let sys = ds.residual_system().unwrap();
        let r = sys.evaluate(&b).unwrap();
        let via_vjp = sys.vjp(&r, &b).unwrap();
        let j = sys.jacobian(&b).unwrap();
        for k in 0..p {
            let jtr: f64 = j.chunks(p).zip(&r).map(|(row, r)| row[k] * r).sum();
            let scale: f64 = j.chunks(p).zip(&r).map(|(row, r)| (row[k] * r).abs()).sum();
            let tol = 1e-12 * scale + f64::MIN_POSITIVE;
            assert!(
                (g[k] - 2.0 * jtr).abs() <= 2.0 * tol,
                "{} ∂{k}: {} vs {}",
                ds.name,
                g[k],
                2.0 * jtr
            );
            assert!(
                (via_vjp[k] - jtr).abs() <= tol,
                "{} vjp ∂{k}: {} vs {}",
                ds.name,
                via_vjp[k],
                jtr
            );
        }
    }
}
