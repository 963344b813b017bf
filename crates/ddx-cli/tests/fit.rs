//! `ddx fit` run as a subprocess: every NIST StRD dataset from both starts against the
//! certified values (read from the files here, not from the command's own digit columns),
//! a NIST file no code here has a model for, a CSV fit, the plot, and the error paths.

mod common;
use common::*;
use ddx_models::nist;
use std::path::{Path, PathBuf};

/// One fit's report: per parameter (estimate, std error), and the RSS.
#[derive(Debug)]
struct Report {
    rows: Vec<(String, f64, f64)>,
    rss: f64,
}

/// The reports in `ddx fit` output, in order.
fn reports(out: &str) -> Vec<Report> {
    let mut all = Vec::new();
    let mut cur: Option<Report> = None;
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if line.contains(" observations") {
            if let Some(r) = cur.take() {
                all.push(r);
            }
            cur = Some(Report {
                rows: vec![],
                rss: f64::NAN,
            });
        } else if let (Some(r), Some(&first)) = (cur.as_mut(), f.first()) {
            if first == "rss" {
                r.rss = f[1].parse().expect("a number");
            } else if first != "parameter" && first != "residual_sd" && first != "iterations" {
                let v = f[1].parse().expect("a number");
                let se = f[2].parse().expect("a number");
                r.rows.push((first.to_string(), v, se));
            }
        }
    }
    all.extend(cur);
    all
}

fn nist_dir() -> PathBuf {
    nist::data_dir()
}

/// Checks one NIST file's two fits against its certified values: every parameter to
/// ≥ 6 significant digits; every standard error to ≥ 6 digits once scaled by the RSS
/// (`sᵢ/√RSS` depends only on `J`), and unscaled where the RSS itself is resolved to
/// 6 digits (Lanczos1's certified RSS, 1.4e-25, is below what its residuals resolve).
fn check_nist_file(path: &Path) -> (f64, f64) {
    let ds = nist::load(path).expect("NIST's file reads");
    let out = ok(&["fit", "--nist", path.to_str().expect("utf-8")]);
    let reports = reports(&out);
    assert_eq!(reports.len(), 2, "{out}");
    let mut worst = (f64::INFINITY, f64::INFINITY);
    for r in &reports {
        assert_eq!(r.rows.len(), ds.parameters.len(), "{out}");
        // The RSS through the fitted equation: to 6 digits, except where the certified
        // RSS is below what double precision resolves (Lanczos1's 1.4e-25, residuals of
        // ~1e-13 each), where 2.
        let rss_digits = nist::digits(r.rss, ds.certified_rss);
        let resolvable = ds.certified_rss > 1e-20;
        assert!(
            rss_digits >= if resolvable { 6.0 } else { 2.0 },
            "{}: RSS {} vs {}",
            ds.name,
            r.rss,
            ds.certified_rss
        );
        for ((name, v, se), p) in r.rows.iter().zip(&ds.parameters) {
            assert_eq!(name, &p.name);
            let d = nist::digits(*v, p.certified);
            assert!(
                d >= 6.0,
                "{} {name}: {v} vs certified {} ({d:.1} digits)",
                ds.name,
                p.certified
            );
            let scaled = nist::digits(se / r.rss.sqrt(), p.std_dev / ds.certified_rss.sqrt());
            assert!(
                scaled >= 6.0,
                "{} {name}: se {se} vs {} (scaled: {scaled:.1} digits)",
                ds.name,
                p.std_dev
            );
            if rss_digits >= 6.0 {
                let sd = nist::digits(*se, p.std_dev);
                assert!(
                    sd >= 6.0,
                    "{} {name}: se {se} vs {} ({sd:.1} digits)",
                    ds.name,
                    p.std_dev
                );
                worst.1 = worst.1.min(sd);
            }
            worst.0 = worst.0.min(d);
        }
    }
    worst
}

#[test]
fn every_nist_dataset_from_both_starts() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(nist_dir())
        .expect("the data directory")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "dat"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 19);
    let results: Vec<(f64, f64)> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .chunks(files.len().div_ceil(2))
            .map(|part| {
                s.spawn(move || part.iter().map(|p| check_nist_file(p)).collect::<Vec<_>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("no failure"))
            .collect()
    });
    let worst = results.iter().fold((f64::INFINITY, f64::INFINITY), |a, b| {
        (a.0.min(b.0), a.1.min(b.1))
    });
    eprintln!(
        "fewest digits: parameters {:.1}, standard errors {:.1}",
        worst.0, worst.1
    );
}

#[test]
fn a_nist_file_without_a_hand_written_model() {
    // MGH10 (Meyer's thermistor data, NIST's higher difficulty): ddx_models has no
    // hand-written model for it, so its RSS can only come through the fitted equation.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/MGH10.dat");
    let ds = nist::load(&path).expect("reads");
    assert!(
        ds.family().is_err(),
        "MGH10 must have no hand-written model"
    );
    check_nist_file(&path);
    let out = ok(&["fit", "--nist", path.to_str().unwrap(), "--start-set", "1"]);
    let r = reports(&out);
    assert_eq!(r.len(), 1);
    assert!(r[0].rss.is_finite());
}

/// Misra1a's data as a CSV file.
fn misra_csv(dir: &Path) -> PathBuf {
    let ds = nist::load(&nist_dir().join("Misra1a.dat")).expect("reads");
    let mut text = String::from("x,y,note\n");
    for o in &ds.observations {
        text += &format!("{:?},{:?},n\n", o.x[0], o.y);
    }
    let path = dir.join("misra1a.csv");
    std::fs::write(&path, text).expect("written");
    path
}

#[test]
fn csv_fit_matches_the_nist_fit_and_plots() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let csv = misra_csv(dir.path());
    let svg = dir.path().join("fit.svg");
    let out = ok(&[
        "fit",
        "b1*(1-exp(-b2*x))",
        "--data",
        csv.to_str().unwrap(),
        "--response",
        "y",
        "--start",
        "b1=500,b2=1e-4",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let csv_fit = reports(&out);
    let nist_out = ok(&[
        "fit",
        "--nist",
        nist_dir().join("Misra1a.dat").to_str().unwrap(),
        "--start-set",
        "1",
    ]);
    let nist_fit = reports(&nist_out);
    // The same residual system, built two ways: the same bits.
    assert_eq!(format!("{:?}", csv_fit[0]), format!("{:?}", nist_fit[0]));
    assert!(out.contains("iterations "), "{out}");
    let picture = std::fs::read_to_string(&svg).expect("the plot is written");
    assert!(
        picture.starts_with("<svg"),
        "{}",
        &picture[..80.min(picture.len())]
    );
    // 14 observations, drawn above and as residuals below.
    assert_eq!(picture.matches("<circle").count(), 28);
    assert!(picture.contains("<polyline"));
    assert!(picture.contains("<text") && picture.contains("residual"));
}

#[test]
fn fit_errors_are_one_line() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let d = dir.path();
    let csv = misra_csv(d);
    let c = csv.to_str().unwrap();
    let w = |name: &str, text: &str| {
        std::fs::write(d.join(name), text).expect("written");
        d.join(name).to_str().unwrap().to_string()
    };
    let bad_cell = w("bad.csv", "x,y\n1,2\n2,x3\n");
    let short = w("short.csv", "x,y\n1,2\n2\n");
    let flat = w("flat.csv", "x,y\n1,0\n2,0\n3,0\n");
    let notnist = w("not.dat", "hello\n");
    let f = |args: &[&str], needles: &[&str]| fails_in(d, args, 1, 0, needles);
    f(
        &["fit", "b1*x", "--data", &bad_cell, "--start", "b1=1"],
        &["bad.csv: row 2 (line 3), column 2 `y`: `x3` is not a number"],
    );
    f(
        &["fit", "b1*x", "--data", &short, "--start", "b1=1"],
        &["short.csv: row 2 (line 3)"],
    );
    f(
        &["fit", "b1*q", "--data", c, "--start", "b1=1"],
        &["misra1a.csv", "`q` is neither a parameter", "x, y, note"],
    );
    f(
        &["fit", "b1*x", "--data", c, "--start", "b1=1,b2=3"],
        &["no parameter `b2`"],
    );
    f(
        &["fit", "b1*x", "--data", c, "--start", "b1=abc"],
        &["`abc` is not a number"],
    );
    f(
        &["fit", "b1*x", "--data", "nosuch.csv", "--start", "b1=1"],
        &["nosuch.csv"],
    );
    f(
        &["fit", "sqrt(b1)*x", "--data", c, "--start", "b1=-1"],
        &["the residual of observation 1 is NaN at the start"],
    );
    // sqrt(b1 − 5)·x against zeros: the minimum is on the edge of the domain, where the
    // derivative is infinite; the fit cannot become stationary.
    f(
        &["fit", "sqrt(b1 - 5)*x", "--data", &flat, "--start", "b1=6"],
        &["the fit diverged"],
    );
    f(&["fit", "--nist", "nosuch.dat"], &["nosuch.dat"]);
    f(&["fit", "--nist", &notnist], &["not.dat"]);
    fails_in(
        d,
        &["fit", "b1*", "--data", c, "--start", "b1=1"],
        1,
        3,
        &["bad_syntax"],
    );
    // The Nelson model has two predictors: no plot.
    let nelson = nist_dir().join("Nelson.dat");
    f(
        &[
            "fit",
            "--nist",
            nelson.to_str().unwrap(),
            "--start-set",
            "2",
            "--plot",
            "n.svg",
        ],
        &["n.svg: cannot draw the plot", "one predictor"],
    );
    // Usage errors are clap's (exit 2).
    assert_eq!(run_in(d, &["fit", "b1*x"]).code, 2);
    assert_eq!(run_in(d, &["fit", "--nist", "a.dat", "--data", c]).code, 2);
}
