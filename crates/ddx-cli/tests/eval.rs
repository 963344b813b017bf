//! `ddx eval`, `ddx check`, `ddx dot` and `--help`, run as a subprocess; every answer
//! against a closed form written here.

mod common;
use common::*;

/// `f = x·exp(−y)` and its derivatives in closed form.
fn closed_form(x: f64, y: f64) -> Vec<(String, f64)> {
    let e = (-y).exp();
    [
        ("f", x * e),
        ("df/dx", e),
        ("df/dy", -x * e),
        ("d2f/dxdx", 0.0),
        ("d2f/dxdy", -e),
        ("d2f/dydy", x * e),
        ("jvp", 0.25 * e - 0.5 * x * e),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

#[test]
fn eval_text_matches_closed_form() {
    let out = ok(&[
        "eval",
        "x*exp(-y)",
        "x=2",
        "y=0.5",
        "--gradient",
        "--hessian",
        "--jvp",
        "0.25,0.5",
    ]);
    let got = values(&out);
    let want = closed_form(2.0, 0.5);
    assert_eq!(got.len(), want.len(), "{out}");
    for ((gk, gv), (wk, wv)) in got.iter().zip(&want) {
        assert_eq!(gk, wk);
        assert!(
            (gv - wv).abs() <= 1e-15 * wv.abs().max(1.0),
            "{gk}: {gv} vs {wv}"
        );
    }
    // Only the value without flags; names in any order, several per argument.
    let out = ok(&["eval", "x*exp(-y)", "y=0.5,x=2"]);
    assert_eq!(values(&out).len(), 1);
    assert_eq!(values(&out)[0].1, 2.0 * (-0.5f64).exp());
}

#[test]
fn eval_json_is_machine_readable() {
    let out = ok(&[
        "eval",
        "x*exp(-y)",
        "x=2",
        "y=0.5",
        "--gradient",
        "--hessian",
        "--jvp",
        "y=0.5,x=0.25",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
    let want = closed_form(2.0, 0.5);
    let close = |a: &serde_json::Value, w: f64| {
        let a = a.as_f64().expect("a number");
        assert!((a - w).abs() <= 1e-15 * w.abs().max(1.0), "{a} vs {w}");
    };
    assert_eq!(v["symbols"], serde_json::json!(["x", "y"]));
    close(&v["value"], want[0].1);
    close(&v["gradient"]["x"], want[1].1);
    close(&v["gradient"]["y"], want[2].1);
    close(&v["hessian"][0][0], want[3].1);
    close(&v["hessian"][0][1], want[4].1);
    close(&v["hessian"][1][0], want[4].1);
    close(&v["hessian"][1][1], want[5].1);
    close(&v["jvp"], want[6].1);
    // A NaN is null: JSON has no NaN.
    let out = ok(&["eval", "sqrt(x)", "x=-1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON object");
    assert!(v["value"].is_null());
}

#[test]
fn eval_errors_are_one_line() {
    fails(&["eval", "x*y", "x=2"], 1, 0, &["short_point", "`y`"]);
    fails(
        &["eval", "x*y", "x=2", "y=1", "z=3"],
        1,
        0,
        &["unknown_symbol", "`z`"],
    );
    fails(
        &["eval", "x*y", "x=2", "y=1", "x=3"],
        1,
        0,
        &["duplicate_symbol", "`x`"],
    );
    fails(
        &["eval", "x*y", "x=2", "y=abc"],
        1,
        0,
        &["`y=abc`", "`abc` is not a number"],
    );
    fails(&["eval", "x*y", "x2"], 1, 0, &["`x2`", "name=value"]);
    fails(
        &["eval", "x*y", "x=1", "y=2", "--jvp", "1"],
        1,
        0,
        &["wrong_direction"],
    );
    fails(
        &["eval", "x*y", "x=1", "y=2", "--jvp", "1,q"],
        1,
        0,
        &["`q` is not a number"],
    );
    fails(&["eval", "2 + 3"], 1, 0, &["no_graph"]);
    // A parse error shows the caret display under its one-line message.
    fails(
        &["eval", "x ^ 2", "x=1"],
        1,
        3,
        &["bad_syntax", "    x ^ 2", "      ^"],
    );
    fails(
        &["eval", "sinn(x)", "x=1"],
        1,
        3,
        &["unknown_function", "`sin`"],
    );
    // clap's own usage errors exit with 2.
    let r = run(&["eval"]);
    assert_eq!(r.code, 2, "{r:?}");
    let r = run(&["frobnicate"]);
    assert_eq!(r.code, 2, "{r:?}");
}

#[test]
fn check_prints_canonical_form_symbols_and_lanes() {
    let out = ok(&["check", "sin(x)*y + 3"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "f0: sin(x) * y + 3");
    assert_eq!(lines[1], "  d/dx: y * cos(x)");
    assert_eq!(lines[2], "  d/dy: sin(x)");
    assert_eq!(lines[3], "symbols: x, y");
    assert!(lines[4].starts_with("nodes: value "), "{out}");
    // Every lane kind is counted; the value lane is x, y, sin(x), ·, 3, + = 6 nodes.
    for kind in [
        "value 6,", "jacobian", "gradient", "jvp", "vjp", "hessian", "hvp",
    ] {
        assert!(lines[4].contains(kind), "{out}");
    }
    // Symbols in byte order, whatever order the text names them in.
    let out = ok(&["check", "b*a + B"]);
    assert!(out.contains("symbols: B, a, b\n"), "{out}");
    fails(
        &["check", "x +"],
        1,
        3,
        &["bad_syntax", "    x +", "       ^"],
    );
}

#[test]
fn dot_draws_the_gradient_lane() {
    let out = ok(&["dot", "sin(x)*y"]);
    assert!(out.starts_with("digraph ddx {"), "{out}");
    assert!(out.trim_end().ends_with('}'), "{out}");
    assert!(out.contains("∂f0/∂x") && out.contains("∂f0/∂y"), "{out}");
    let all = ok(&["dot", "sin(x)*y", "--all"]);
    assert!(all.contains("dashed"), "{all}");
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("f.dot");
    let p = path.to_str().expect("utf-8 path");
    assert_eq!(ok(&["dot", "sin(x)*y", "-o", p]), "");
    assert_eq!(std::fs::read_to_string(&path).expect("written"), out);
    let missing = dir.path().join("no/such/dir/f.dot");
    let m = missing.to_str().expect("utf-8 path");
    fails(&["dot", "x*y", "-o", m], 1, 0, &[m]);
}

#[test]
fn help_shows_an_example_per_subcommand() {
    let top = ok(&["--help"]);
    for sub in [
        "eval", "batch", "fit", "check", "dot", "compile", "load", "codegen",
    ] {
        assert!(
            top.contains(&format!("  ddx {sub} ")),
            "no {sub} example in:\n{top}"
        );
        let help = ok(&[sub, "--help"]);
        assert!(
            help.contains(&format!("Example:\n  ddx {sub} ")),
            "{sub}:\n{help}"
        );
    }
}

#[test]
fn values_group_digits_with_underscores_as_the_expressions_do() {
    // The expression `1_000 * x` and the point `x=2_500.000_5` read the same rule: an
    // underscore between two digits; the answers are those of the plain spellings.
    let grouped = ok(&[
        "eval",
        "1_000 * x * y",
        "x=2_500.000_5",
        "y=1e1_0",
        "--json",
    ]);
    let plain = ok(&["eval", "1000 * x * y", "x=2500.0005", "y=1e10", "--json"]);
    assert_eq!(grouped, plain);
    for bad in ["x=_1", "x=1_", "x=1__0", "x=1._5", "x=1_.5", "x=1e_5"] {
        let value = &bad[2..];
        fails(
            &["eval", "x", bad],
            1,
            0,
            &[&format!("`{value}` is not a number"), "between two digits"],
        );
    }
}
