//! Running the `ddx` binary as a subprocess.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// What one run of `ddx` answered.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// The binary under test.
pub fn ddx() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ddx"))
}

/// Runs `ddx args…` in `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Run {
    ddx()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the ddx binary runs")
        .into()
}

/// Runs `ddx args…`.
pub fn run(args: &[&str]) -> Run {
    ddx()
        .args(args)
        .output()
        .expect("the ddx binary runs")
        .into()
}

/// Runs `ddx args…` and insists it succeeds; answers stdout.
pub fn ok(args: &[&str]) -> String {
    let r = run(args);
    assert_eq!(r.code, 0, "ddx {args:?} failed: {}", r.stderr);
    r.stdout
}

/// Runs `ddx args…` (in `dir`) and insists it fails with exit status `code` and a stderr
/// of exactly one line (plus `extra_lines` more, for a parse error's caret display) that
/// contains every one of `needles`.
pub fn fails_in(dir: &Path, args: &[&str], code: i32, extra_lines: usize, needles: &[&str]) {
    let r = run_in(dir, args);
    assert_eq!(r.code, code, "ddx {args:?}: {r:?}");
    assert!(r.stdout.is_empty(), "ddx {args:?} wrote to stdout: {r:?}");
    let lines: Vec<&str> = r.stderr.lines().collect();
    assert_eq!(lines.len(), 1 + extra_lines, "ddx {args:?}: {r:?}");
    assert!(lines[0].starts_with("ddx: "), "{r:?}");
    assert!(!r.stderr.contains("panicked"), "{r:?}");
    for n in needles {
        assert!(
            r.stderr.contains(n),
            "ddx {args:?}: `{n}` not in {:?}",
            r.stderr
        );
    }
}

/// [`fails_in`] in the current directory.
pub fn fails(args: &[&str], code: i32, extra_lines: usize, needles: &[&str]) {
    fails_in(Path::new("."), args, code, extra_lines, needles);
}

/// `name = value` lines of a text answer, as pairs.
pub fn values(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(" = ")?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}
