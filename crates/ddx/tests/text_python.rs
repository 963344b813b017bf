//! The grammar agrees with Python's: for hundreds of expressions — hand-picked precedence
//! and associativity cases plus generated ones (fixed seed) — the value ddx computes from
//! the string equals what Python 3's own `eval` computes from the same string.
//!
//! Python is run once, on all expressions, with the function names mapped to `math`.
//! Expressions Python refuses to evaluate (a domain error, a complex result, a division by
//! zero, an overflow) are left out, and the test requires that most are compared. When no
//! `python3` is on the machine the test says so and passes.

use ddx::ir::testing::Rng;
use ddx::{rt, Formula};
use std::io::Write;
use std::process::{Command, Stdio};

const SYMBOLS: [(&str, f64); 4] = [("w", -0.6), ("x", 0.7), ("y", 1.3), ("z", 2.1)];

/// Cases written by hand: one per rule of precedence, grouping and literal spelling.
const CASES: [&str; 40] = [
    "-x**2",
    "(-x)**2",
    "-x**2*y",
    "2**-1*x",
    "2**-x",
    "x**-y**2",
    "x**y**z",
    "(x**y)**z",
    "2**3**2*x",
    "-2**2*x",
    "-2**-2*x",
    "x**-1",
    "x - y - z",
    "x - (y - z)",
    "x / y / z",
    "x / (y * z)",
    "x / y * z",
    "x + y * z",
    "(x + y) * z",
    "x - -y",
    "x * -y",
    "-x * -y",
    "- -x",
    "--x + +y - +-z",
    "1.5e-3 * x",
    ".5 * x + 5. * y",
    "1e1 * x + 2E-1 * y + 1e+1 * z",
    "0.25e1 * x - 007.5 * y + 00 * z",
    "x < y + 1",
    "x + 1 < y",
    "(x < y) + (y < z)",
    "(x < y) < z",
    "x >= y",
    "x > y - 1",
    "x != y",
    "x == x * 1",
    "select(x <= y, x, -y)",
    "select(w, x, y) + select(x - x, y, z)",
    "x ** 2 ** -1 * 3 + w ** 2 ** 1",
    "pow(x, -y) * atan2(w, -x) + hypot(w, z)",
];

/// Functions with a Python spelling (`fma` has none before Python 3.13).
const FUNCTIONS: [(&str, usize); 24] = [
    ("sin", 1),
    ("cos", 1),
    ("tan", 1),
    ("exp", 1),
    ("log", 1),
    ("log10", 1),
    ("sqrt", 1),
    ("cbrt", 1),
    ("abs", 1),
    ("sign", 1),
    ("asin", 1),
    ("acos", 1),
    ("atan", 1),
    ("sinh", 1),
    ("cosh", 1),
    ("tanh", 1),
    ("asinh", 1),
    ("erf", 1),
    ("pow", 2),
    ("atan2", 2),
    ("hypot", 2),
    ("max", 2),
    ("min", 2),
    ("select", 3),
];

const LITERALS: [&str; 14] = [
    "1", "2", "3", "0.5", ".5", "5.", "1.5e-3", "2E1", "1e+1", "0.25e1", "10.0", "1e-2", "7", "0.1",
];

fn atom(rng: &mut Rng) -> String {
    if rng.percent(65) {
        SYMBOLS[rng.below(SYMBOLS.len())].0.to_string()
    } else {
        LITERALS[rng.below(LITERALS.len())].to_string()
    }
}

/// Random spacing, so the lexer sees `x**-y` as well as `x ** - y`.
fn space(rng: &mut Rng) -> &'static str {
    if rng.percent(50) {
        " "
    } else {
        ""
    }
}

/// An expression of at most `depth` levels, with no comparison at its outer level.
fn arith(rng: &mut Rng, depth: usize) -> String {
    if depth == 0 || rng.percent(20) {
        return atom(rng);
    }
    let s = space(rng);
    match rng.below(10) {
        0..=3 => {
            let op = ["+", "-", "*", "/"][rng.below(4)];
            format!(
                "{}{s}{op}{s}{}",
                arith(rng, depth - 1),
                arith(rng, depth - 1)
            )
        }
        4 => {
            // Power: an atom or parenthesised base, a small or signed exponent.
            let base = if rng.percent(50) {
                atom(rng)
            } else {
                format!("({})", arith(rng, depth - 1))
            };
            let exponent = match rng.below(5) {
                0 => "2".to_string(),
                1 => format!("-{}", ["1", "2", "y", "x"][rng.below(4)]),
                2 => format!("{}**{}", atom(rng), ["2", "-1", "0.5"][rng.below(3)]),
                3 => format!("-{}**2", atom(rng)),
                _ => atom(rng),
            };
            format!("{base}{s}**{s}{exponent}")
        }
        5 => format!("-{s}{}", arith(rng, depth - 1)),
        6 => format!("({})", arith(rng, depth - 1)),
        7 => format!("({})", compare(rng, depth - 1)),
        _ => {
            let (name, arity) = FUNCTIONS[rng.below(FUNCTIONS.len())];
            let args: Vec<String> = (0..arity)
                .map(|k| {
                    if name == "select" && k == 0 && rng.percent(70) {
                        compare(rng, depth - 1)
                    } else {
                        arith(rng, depth - 1)
                    }
                })
                .collect();
            format!("{name}({})", args.join(&format!(",{s}")))
        }
    }
}

/// A comparison of two arithmetic expressions.
fn compare(rng: &mut Rng, depth: usize) -> String {
    let op = ["<", "<=", ">", ">=", "==", "!="][rng.below(6)];
    let s = space(rng);
    format!("{}{s}{op}{s}{}", arith(rng, depth), arith(rng, depth))
}

fn generated(count: usize) -> Vec<String> {
    let mut rng = Rng::new(0x00dd_c0de);
    let mut out = Vec::new();
    while out.len() < count {
        let e = if rng.percent(10) {
            compare(&mut rng, 3)
        } else {
            arith(&mut rng, 4)
        };
        let names = Formula::parse(&e).map(|f| f.names().len());
        if names.unwrap_or_else(|err| panic!("generated {e:?} does not parse:\n{err}")) > 0 {
            out.push(e);
        }
    }
    out
}

const PYTHON: &str = r#"
import math, sys
ns = {n: getattr(math, n) for n in ("sin cos tan exp log log10 sqrt asin acos atan sinh "
                                    "cosh tanh asinh erf atan2 hypot").split()}
ns.update(abs=abs, pow=pow, max=max, min=min,
          cbrt=getattr(math, "cbrt", lambda v: math.copysign(abs(v) ** (1 / 3), v)),
          sign=lambda v: v if v != v else float((v > 0) - (v < 0)),
          select=lambda c, t, f: t if c else f)
for assignment in sys.argv[1:]:
    name, value = assignment.split("=")
    ns[name] = float(value)
for line in sys.stdin:
    try:
        v = eval(line, {"__builtins__": {}}, ns)
        print("error" if isinstance(v, complex) else repr(float(v)))
    except Exception:
        print("error")
"#;

/// What Python's `eval` answers for each line (`None` where it raises), or `None` when
/// there is no `python3` to ask.
fn python_values(exprs: &[String]) -> Option<Vec<Option<f64>>> {
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(PYTHON)
        .args(SYMBOLS.iter().map(|(n, v)| format!("{n}={v:?}")))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let input = exprs.join("\n") + "\n";
    let mut stdin = child.stdin.take()?;
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().ok()?;
    writer.join().ok()?.ok()?;
    assert!(out.status.success(), "python3 failed: {out:?}");
    let text = String::from_utf8(out.stdout).ok()?;
    let values: Vec<Option<f64>> = text.lines().map(|l| l.parse().ok()).collect();
    assert_eq!(values.len(), exprs.len(), "one answer per expression");
    Some(values)
}

fn ddx_value(text: &str) -> f64 {
    let eq = rt::equation_text(text).unwrap_or_else(|e| panic!("{text:?}:\n{e}"));
    let point: Vec<(&str, f64)> = SYMBOLS
        .iter()
        .filter(|(n, _)| eq.symbols().iter().any(|s| s == n))
        .copied()
        .collect();
    eq.evaluate(&point[..]).expect("every symbol has a value")
}

fn agree(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits()
        || a == b
        || (a.is_nan() && b.is_nan())
        || (a - b).abs() <= 1e-13 * a.abs().max(b.abs())
}

#[test]
fn values_match_python_eval() {
    let mut exprs: Vec<String> = CASES.iter().map(|s| s.to_string()).collect();
    exprs.extend(generated(400));
    let Some(python) = python_values(&exprs) else {
        eprintln!("SKIPPED: no python3 on this machine to compare the grammar with");
        return;
    };
    let (mut compared, mut exact) = (0, 0);
    let mut wrong = Vec::new();
    for (i, (text, py)) in exprs.iter().zip(&python).enumerate() {
        let ours = ddx_value(text);
        let Some(py) = *py else {
            assert!(i >= CASES.len(), "Python refused hand-picked case {text:?}");
            continue;
        };
        compared += 1;
        exact += usize::from(ours.to_bits() == py.to_bits() || ours == py);
        if !agree(ours, py) {
            wrong.push(format!("{text:?}: ddx {ours:?}, Python {py:?}"));
        }
    }
    eprintln!(
        "compared {compared} of {} expressions with Python; {exact} agree to the bit",
        exprs.len()
    );
    assert!(wrong.is_empty(), "disagreements:\n{}", wrong.join("\n"));
    assert!(
        compared >= 300,
        "only {compared} expressions could be compared"
    );
}

#[test]
fn generated_expressions_cover_the_grammar() {
    let all = generated(400).join("\n");
    for needle in [
        "**-", "** -", "-x", "(", "select(", "<=", "!=", "e-3", ".5", "5.",
    ] {
        assert!(
            all.contains(needle),
            "no generated expression has {needle:?}"
        );
    }
}
