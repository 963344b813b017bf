//! `ddx compile` and `ddx load` run as a subprocess: a saved equation answers what the
//! text answers, and a damaged or missing file is a one-line error.

mod common;
use common::*;

#[test]
fn compile_then_load_answers_as_eval() {
    let dir = tempfile::tempdir().expect("a temp dir");
    for jit in [false, true] {
        let file = dir.path().join(format!("f{jit}.ddx"));
        let f = file.to_str().unwrap();
        let mut args = vec!["compile", "x*exp(-y) + sin(x*y)", "-o", f];
        if jit {
            args.push("--jit");
        }
        let out = ok(&args);
        assert!(out.contains("hessian lane: "), "{out}");
        assert_eq!(out.contains("machine code"), jit, "{out}");
        let point = ["x=2", "y=0.5", "--gradient", "--hessian", "--jvp", "1,-1"];
        let loaded = ok(&[&["load", f][..], &point].concat());
        let fresh = ok(&[&["eval", "x*exp(-y) + sin(x*y)"][..], &point].concat());
        assert_eq!(loaded, fresh, "jit: {jit}");
        let about = ok(&["load", f]);
        assert!(about.starts_with("f0: "), "{about}");
        assert!(about.contains("symbols: x, y\n"), "{about}");
    }
}

#[test]
fn damaged_or_missing_files_are_one_line_errors() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let file = dir.path().join("f.ddx");
    let f = file.to_str().unwrap();
    ok(&["compile", "x*y", "-o", f]);
    let mut bytes = std::fs::read(&file).expect("written");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    let bad = dir.path().join("bad.ddx");
    std::fs::write(&bad, &bytes).expect("written");
    fails(
        &["load", bad.to_str().unwrap()],
        1,
        0,
        &["archive_corrupt", "bad.ddx"],
    );
    std::fs::write(&bad, b"not an equation").expect("written");
    fails(&["load", bad.to_str().unwrap()], 1, 0, &["bad.ddx"]);
    fails(&["load", "nosuch.ddx"], 1, 0, &["nosuch.ddx"]);
    fails(&["load", f, "x=1"], 1, 0, &["short_point", "`y`"]);
    fails(
        &["compile", "x*y", "-o", "no/such/dir/f.ddx"],
        1,
        0,
        &["no/such/dir"],
    );
}
