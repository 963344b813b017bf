//! Parameters on the command line (`--params` marks them in the text, `--param` gives a
//! value, a batch may read them from columns), run as a subprocess: the answers against
//! closed forms and against the library's own calls, bit for bit, and every error path.

mod common;
use common::*;
use ddx::rt;
use std::path::Path;

/// Reads a CSV answer: its header and its rows of numbers.
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let mut r = csv::Reader::from_path(path).expect("the output exists");
    let header = r
        .headers()
        .expect("a header")
        .iter()
        .map(String::from)
        .collect();
    let rows = r
        .records()
        .map(|rec| {
            rec.expect("a record")
                .iter()
                .map(|c| c.parse().expect("a number"))
                .collect()
        })
        .collect();
    (header, rows)
}

#[test]
fn eval_binds_parameters_and_never_differentiates_them() {
    // f = k·x² + T·y; df/dx = 2kx, df/dy = T; no df/dk, no df/dT.
    let out = ok(&[
        "eval",
        "k*x**2 + T*y",
        "--params",
        "k,T",
        "x=1.5",
        "y=-2",
        "--param",
        "k=3",
        "--param",
        "T=300",
        "--gradient",
        "--hessian",
    ]);
    let got = values(&out);
    let want = [
        ("f", 3.0 * 2.25 + 300.0 * -2.0),
        ("df/dx", 2.0 * 3.0 * 1.5),
        ("df/dy", 300.0),
        ("d2f/dxdx", 6.0),
        ("d2f/dxdy", 0.0),
        ("d2f/dydy", 0.0),
    ];
    assert_eq!(got.len(), want.len(), "{out}");
    for ((gk, gv), (wk, wv)) in got.iter().zip(want) {
        assert_eq!(gk, wk);
        assert_eq!(*gv, wv, "{gk}");
    }
    // A parameter's value may also be among the point's pairs; the JSON lists it.
    let json = ok(&[
        "eval",
        "k*x",
        "--params",
        "k",
        "x=2,k=0.25",
        "--gradient",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(v["symbols"], serde_json::json!(["x"]));
    assert_eq!(v["parameters"]["k"], 0.25);
    assert_eq!(v["value"], 0.5);
    assert_eq!(v["gradient"]["x"], 0.25);
    assert!(v["gradient"].get("k").is_none());
}

#[test]
fn eval_parameter_errors() {
    fails(&["eval", "k*x", "--params", "k", "x=2"], 1, 0, &["`k`"]);
    fails(
        &["eval", "k*x", "--params", "k", "x=2", "--param", "k=1,k=2"],
        1,
        0,
        &["`k` is given twice"],
    );
    // Without --params, `k` is a symbol: --param k=… names no parameter.
    fails(
        &["eval", "k*x", "x=2", "--param", "k=1"],
        1,
        0,
        &["`k` is not a parameter", "--params"],
    );
    fails(
        &["eval", "k*x", "--params", "k", "x=2", "--param", "k=abc"],
        1,
        0,
        &["not a number"],
    );
}

#[test]
fn batch_reads_parameter_columns_and_broadcasts_values() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = dir.path().join("in.csv");
    // Misra1a's model as a residual: symbols b1, b2; per-row observations x, y.
    let rows = [
        (77.6, 10.07),
        (114.9, 14.73),
        (141.1, 17.94),
        (190.8, 23.93),
    ];
    let mut text = String::from("b1,b2,x,y,note\n");
    for (x, y) in rows {
        text += &format!("240,0.00055,{x},{y},n\n");
    }
    std::fs::write(&input, text).expect("written");
    let out = dir.path().join("out.csv");
    let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
    let expr = "y - b1*(1 - exp(-b2*x))";
    ok(&[
        "batch", expr, "--params", "x,y", "-i", i, "-o", o, "--want", "hessian",
    ]);
    let (h, got) = read_csv(&out);
    assert_eq!(
        h,
        [
            "f",
            "df/db1",
            "df/db2",
            "d2f/db1db1",
            "d2f/db1db2",
            "d2f/db2db2"
        ]
    );
    let eq = rt::equation_text_with_params(expr, &["x", "y"]).expect("parses");
    for (row, (x, y)) in got.iter().zip(rows) {
        let at = eq.with_params([x, y]).expect("binds");
        let b = [240.0, 0.00055];
        let (f, g) = (
            at.evaluate(b).expect("answers"),
            at.gradient(b).expect("answers"),
        );
        let hm = at.hessian(b).expect("answers");
        let want = [f, g[0], g[1], hm[0], hm[1], hm[3]];
        for (a, b) in row.iter().zip(want) {
            assert_eq!(a.to_bits(), b.to_bits(), "{row:?}");
        }
        // The closed form of the partials: -(1 - e^{-b2 x}), -b1 x e^{-b2 x}.
        let e = (-0.00055 * x).exp();
        assert!((row[1] + (1.0 - e)).abs() <= 1e-15);
        assert!((row[2] + 240.0 * x * e).abs() <= 1e-12 * 240.0 * x);
    }

    // y from the file, x one value for every row; the library broadcast gives the bits.
    ok(&[
        "batch",
        expr,
        "--params",
        "x,y",
        "--param",
        "x=100",
        "-i",
        i,
        "-o",
        o,
        "--want",
        "jacobian",
        "--pass-through",
    ]);
    let mut r = csv::Reader::from_path(&out).expect("the output exists");
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    // Pass-through copies every column that is neither a symbol nor a parameter read.
    assert_eq!(header, ["x", "note", "f", "df/db1", "df/db2"]);
    for (rec, (_, y)) in r.records().zip(rows) {
        let rec = rec.unwrap();
        let at = eq.with_params([100.0, y]).expect("binds");
        let b = [240.0, 0.00055];
        let (f, g) = (
            at.evaluate(b).expect("answers"),
            at.gradient(b).expect("answers"),
        );
        let cells: Vec<f64> = (2..5).map(|k| rec[k].parse().unwrap()).collect();
        assert_eq!(cells[0].to_bits(), f.to_bits());
        assert_eq!(cells[1].to_bits(), g[0].to_bits());
        assert_eq!(cells[2].to_bits(), g[1].to_bits());
    }
}

#[test]
fn batch_parameter_errors() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "a,x\n1,2\n").expect("written");
    let i = input.to_str().unwrap();
    fails(
        &["batch", "a*x*T", "--params", "T", "-i", i],
        1,
        0,
        &["no column `T`", "parameter `T`", "--param T=VALUE"],
    );
    fails(
        &["batch", "a*x", "-i", i, "--param", "T=3"],
        1,
        0,
        &["`T` is not a parameter", "--params"],
    );
    fails(
        &[
            "batch", "a*x*T", "--params", "T", "-i", i, "--param", "T=3,T=4",
        ],
        1,
        0,
        &["given twice"],
    );
    let out = ok(&[
        "batch", "a*x*T", "--params", "T", "-i", i, "--param", "T=3", "--want", "jacobian",
    ]);
    assert_eq!(out, "f,df/da,df/dx\n6.0,6.0,3.0\n");
}

#[test]
fn compile_saves_parameters_and_load_binds_them() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("f.ddx");
    let f = file.to_str().unwrap();
    ok(&["compile", "k*sin(x)", "--params", "k", "-o", f]);
    let described = ok(&["load", f]);
    assert!(described.contains("parameters: k"), "{described}");
    let out = ok(&["load", f, "x=0.5", "--param", "k=2", "--gradient"]);
    let got = values(&out);
    assert_eq!(got[0], ("f".to_string(), 2.0 * 0.5f64.sin()));
    assert_eq!(got[1], ("df/dx".to_string(), 2.0 * 0.5f64.cos()));
    assert_eq!(got.len(), 2);
}
