//! The text grammar and the printer: structure, printing, errors, and inputs that must not
//! crash. Golden files live in `tests/golden/`; `DDX_BLESS=1` rewrites them.

use ddx_ir::testing::{canonical, check_golden};
use ddx_ir::text::{infix, parse_model, Formula, MAX_DEPTH};
use ddx_ir::{build, select, var, Errc, Error, Expr, Model};

fn golden(name: &str) -> String {
    format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn model(text: &str) -> Model {
    parse_model(&[text]).unwrap_or_else(|e| panic!("{text:?} does not parse:\n{e}"))
}

/// The text an expression prints as after a parse.
fn reprint(text: &str) -> String {
    let m = model(text);
    infix(m.graph(), m.outputs()[0], m.symbols()).to_string()
}

#[test]
fn parses_as_python_groups() {
    let x = || var("x");
    let y = || var("y");
    let z = || var("z");
    let same = |text: &str, closure: &dyn Fn() -> Expr| {
        let built = build(|| vec![closure()]).unwrap();
        assert_eq!(
            canonical(&model(text)),
            canonical(&built),
            "{text:?} parses to another graph than intended"
        );
    };
    same("-x**2", &|| -(x().powf(2.0)));
    same("(-x)**2", &|| (-x()).powf(2.0));
    same("x**y**z", &|| x().powf(y().powf(z())));
    same("(x**y)**z", &|| x().powf(y()).powf(z()));
    same("x**-y**2", &|| x().powf(-(y().powf(2.0))));
    same("2**-x", &|| Expr::from(2.0).powf(-x()));
    same("x - y - z", &|| x() - y() - z());
    same("x - (y - z)", &|| x() - (y() - z()));
    same("x / y * z", &|| x() / y() * z());
    same("x / (y * z)", &|| x() / (y() * z()));
    same("-x * y", &|| -x() * y());
    same("x + y * z ** 2", &|| x() + y() * z().powf(2.0));
    same("x + y < z * 2", &|| (x() + y()).lt(z() * 2.0));
    same("x > y", &|| x().gt(y()));
    same("x >= y + 1", &|| x().ge(y() + 1.0));
    same("x == y", &|| x().eq(y()));
    same("x != -y", &|| x().ne(-y()));
    same("(x < y) < z", &|| x().lt(y()).lt(z()));
    same("select(x*x < y + 1, x, y)", &|| {
        select((x() * x()).lt(y() + 1.0), x(), y())
    });
    same("+x - +y", &|| x() - y());
    same("--x", &|| x());
    same("1.5e-3 * x + .5 - 5. + 2E2", &|| {
        Expr::from(1.5e-3) * x() + 0.5 - 5.0 + 200.0
    });
    same("atan2(y, x) + hypot(x, y) + pow(x, y)", &|| {
        y().atan2(x()) + x().hypot(y()) + x().powf(y())
    });
    same("max(x, y) - min(x, y,)", &|| x().max(y()) - x().min(y()));
    same("fma(x, y, z)", &|| {
        // Only a contraction pass makes fma in a closure model; the text names it.
        let m = Formula::parse("fma(x, y, z)").unwrap();
        m.expr()
    });
    same("sin(x)*y + 3", &|| x().sin() * y() + 3.0);
}

#[test]
fn prints_the_shortest_text() {
    let cases = [
        ("a - (b - c)", "a - (b - c)"),
        ("a - b - c", "a - b - c"),
        ("a + (b + c)", "a + (b + c)"),
        ("a / (b * c)", "a / (b * c)"),
        ("a / b * c", "a / b * c"),
        ("(a ** b) ** c", "(a ** b) ** c"),
        ("a ** b ** c", "a ** b ** c"),
        ("-(x ** 2)", "-x ** 2"),
        ("(-x) ** 2", "(-x) ** 2"),
        ("x ** -1", "x ** -1"),
        ("2 ** -x", "2 ** -x"),
        ("x ** -y ** 2", "x ** -y ** 2"),
        ("x * -2", "x * -2"),
        ("x - -2", "x - -2"),
        ("x * -y", "x * -y"),
        ("x + -y", "x - y"), // folded: `a + (-b)` is `a - b`
        ("x / -2", "x / -2"),
        ("(-2) ** x", "(-2) ** x"),
        ("-2 ** x", "-2 ** x"),
        ("-(x * y)", "-(x * y)"),
        ("(-x) * y", "-x * y"),
        ("((x))", "x"),
        ("+x", "x"),
        ("x - 0", "x"),
        ("x*1", "x"),
        ("sin(x)*y + 3", "sin(x) * y + 3"),
        ("select(x<y, x, y)", "select(x < y, x, y)"),
        (
            "select((x<y)*(y<2), x, -y)",
            "select((x < y) * (y < 2), x, -y)",
        ),
        ("x > y", "y < x"),
        ("x >= y", "y <= x"),
        ("(x < y) + 1", "(x < y) + 1"),
        ("x < (y < 1)", "x < (y < 1)"),
        ("(x < y) < 1", "(x < y) < 1"),
        ("x + 1 < y * 2", "x + 1 < y * 2"),
        ("-(x + y) ** 2", "-(x + y) ** 2"),
        ("(x + y) * (x - y)", "(x + y) * (x - y)"),
        ("1e300 * x", "1e300 * x"),
        ("1e16 + x", "1e16 + x"),
        ("9999999999999998 + x", "9999999999999998 + x"),
        ("1.5e-7 + x", "1.5e-7 + x"),
        ("0.00001 + x", "0.00001 + x"),
        (".5 * x", "0.5 * x"),
        ("1e999 * x", "1e999 * x"),
        ("-1e999 * x", "-1e999 * x"),
        ("x * -1e999", "x * -1e999"),
        ("0/0 * x", "0 / 0 * x"),
        ("x * (0/0)", "x * (0 / 0)"),
        ("x ** (0/0)", "x ** (0 / 0)"),
        ("(0/0) ** x", "(0 / 0) ** x"),
        ("-0.0 * x", "-0 * x"),
        ("(-0.0) ** x", "(-0) ** x"),
        ("0.1 + x", "0.1 + x"),
        ("pi * e", "pi * e"),
        ("nan + inf", "nan + inf"),
    ];
    let mut wrong = Vec::new();
    for (text, want) in cases {
        let got = reprint(text);
        if got != want {
            wrong.push(format!("{text:?} printed {got:?}, want {want:?}"));
        }
        assert_eq!(reprint(&got), got, "printing {text:?} is not a fixed point");
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn precision_applies_to_every_number() {
    let m = model("2*x + 0.12345 - y / 3 + 1e300*z");
    assert_eq!(
        format!("{:.3}", infix(m.graph(), m.outputs()[0], m.symbols())),
        "2.000 * x + 0.123 - y / 3.000 + 1.000e300 * z"
    );
    assert_eq!(format!("{:.2}", Expr::from(-1.0 / 3.0)), "-0.33");
    assert_eq!(
        format!("{m:.1}"),
        "f0: 2.0 * x + 0.1 - y / 3.0 + 1.0e300 * z"
    );
}

#[test]
fn models_print_one_line_per_output() {
    let m = parse_model(&["x*y", "x - 1", "2"]).unwrap();
    assert_eq!(m.to_string(), "f0: x * y\nf1: x - 1\nf2: 2");
    assert_eq!(m.symbols(), ["x", "y"]);
}

#[test]
fn expressions_print_inside_their_closure() {
    let mut inside = String::new();
    let mut constant = String::new();
    let mut stale = None;
    let mut across = String::new();
    let mut nested = String::new();
    build(|| {
        let x = var("x");
        let e = (x + 1.0) * var("y").sin();
        inside = e.to_string();
        constant = (Expr::from(2.0) * 3.0).to_string();
        across = std::thread::scope(|s| s.spawn(|| e.to_string()).join().unwrap());
        build(|| {
            nested = e.to_string();
            vec![var("t")]
        })
        .unwrap();
        stale = Some(e);
        vec![e]
    })
    .unwrap();
    assert_eq!(inside, "(x + 1) * sin(y)");
    assert_eq!(constant, "6");
    assert_eq!(
        across, "<expression outside its model closure>",
        "another thread"
    );
    assert_eq!(nested, "(x + 1) * sin(y)", "inside a nested model closure");
    assert_eq!(
        stale.unwrap().to_string(),
        "<expression outside its model closure>"
    );
    assert_eq!(
        var("x").to_string(),
        "<poisoned expression: no_arena>",
        "outside a closure"
    );
}

#[test]
fn formulas_bind_inside_a_closure() {
    let f: Formula = "b1 * (1 - exp(-b2 * x))".parse().unwrap();
    assert_eq!(f.names(), ["b1", "b2", "x"]);
    assert_eq!(f.to_string(), "b1 * (1 - exp(-b2 * x))");
    let data = [(1.0, 2.0), (2.0, 3.0)];
    let m = build(|| {
        let sum: Expr = data
            .iter()
            .map(|&(x, y)| {
                let r = y - f.bind(&[("x", x)]);
                r * r
            })
            .sum();
        vec![sum]
    })
    .unwrap();
    assert_eq!(m.symbols(), ["b1", "b2"]);
    let r1 = "(2 - b1 * (1 - exp(-b2)))";
    let r2 = "(3 - b1 * (1 - exp(-b2 * 2)))";
    assert_eq!(m.to_string(), format!("f0: {r1} * {r1} + {r2} * {r2}"));
    // Bound to expressions, and with everything bound: a constant.
    let m = build(|| {
        let t = var("t");
        vec![f.bind(&[("x", t * 2.0), ("b2", Expr::from(0.5))])]
    })
    .unwrap();
    assert_eq!(m.to_string(), "f0: b1 * (1 - exp(-0.5 * (t * 2)))");
    let all = build(|| vec![f.bind(&[("x", 1.0), ("b1", 1.0), ("b2", 0.0)])]);
    assert_eq!(all.unwrap_err(), Error::NoGraph);
}

#[test]
fn literal_only_text_is_no_graph() {
    for text in ["2 + 3", "sin(1)", "x - x + 1"] {
        let r = parse_model(&[text]);
        if text.contains('x') {
            assert!(r.is_ok(), "x - x is not folded (NaN at infinity)");
        } else {
            assert_eq!(r.unwrap_err(), Error::NoGraph, "{text}");
        }
    }
    assert_eq!(parse_model::<&str>(&[]).unwrap_err(), Error::NoOutputs);
    assert!(
        parse_model(&["1", "x"]).is_ok(),
        "one symbolic output is enough"
    );
}

/// Every refusal, with its caret, as a golden file.
#[test]
fn errors_say_where_and_what() {
    let cases = [
        ("x ^ 2", Errc::BadSyntax),
        ("x = 2", Errc::BadSyntax),
        ("a < b < c", Errc::BadSyntax),
        ("a < b + 1 >= c", Errc::BadSyntax),
        ("2x + 1", Errc::BadSyntax),
        ("1e + x", Errc::BadSyntax),
        ("x * 010", Errc::BadSyntax),
        ("x + ", Errc::BadSyntax),
        ("", Errc::BadSyntax),
        ("x y", Errc::BadSyntax),
        ("(x + y", Errc::BadSyntax),
        ("x + y)", Errc::BadSyntax),
        ("sin(x y)", Errc::BadSyntax),
        ("sin + 1", Errc::BadSyntax),
        ("x $ y", Errc::BadSyntax),
        ("x + €", Errc::BadSyntax),
        ("x + 1__0", Errc::BadSyntax),
        ("ln(x)", Errc::UnknownFunction),
        ("x * . ", Errc::BadSyntax),
        ("x\n  + * y", Errc::BadSyntax),
        ("sine(x)", Errc::UnknownFunction),
        ("arctan(x)", Errc::UnknownFunction),
        ("frobnicate(x)", Errc::UnknownFunction),
        ("atan2(x)", Errc::WrongArgumentCount),
        ("sin(x, y, z)", Errc::WrongArgumentCount),
        ("select(x < 1, x)", Errc::WrongArgumentCount),
        ("exp()", Errc::WrongArgumentCount),
        ("pow(x, 2, 3,)", Errc::WrongArgumentCount),
    ];
    let mut out = String::new();
    for (text, code) in cases {
        let e = Formula::parse(text).expect_err(text);
        assert_eq!(e.code(), code, "{text:?}: {e}");
        out.push_str(&format!("==== {text:?}\n{e}\n"));
    }
    let deep = format!(
        "{}x{}",
        "(".repeat(MAX_DEPTH + 1),
        ")".repeat(MAX_DEPTH + 1)
    );
    let e = Formula::parse(&deep).unwrap_err();
    assert!(matches!(
        e,
        Error::BadSyntax {
            problem: ddx_ir::text::Syntax::TooDeep { limit: MAX_DEPTH },
            ..
        }
    ));
    out.push_str(&format!(
        "==== {} levels of parentheses\n{}\n",
        MAX_DEPTH + 1,
        {
            let s = e.to_string();
            s.lines().next().unwrap_or_default().to_string()
        }
    ));
    check_golden(golden("text_errors.txt"), &out);
}

#[test]
fn typos_are_told_the_nearest_name() {
    let near = |text: &str| match Formula::parse(text) {
        Err(Error::UnknownFunction { nearest, .. }) => nearest,
        other => panic!("{other:?}"),
    };
    assert_eq!(near("sine(x)").as_deref(), Some("sin"));
    assert_eq!(near("sqr(x)").as_deref(), Some("sqrt"));
    assert_eq!(near("exp10(x)").as_deref(), Some("exp"));
    assert_eq!(near("atn2(x, y)").as_deref(), Some("atan2"));
    assert_eq!(near("frobnicate(x)"), None);
}

/// Folding can nest a graph deeper than the text it came from (`a * -1` is `-a`, so a flat
/// product chain becomes a nest of negations); printed text deeper than [`MAX_DEPTH`] is
/// refused like any other, and that refusal is the only way a printed text fails to parse.
#[test]
fn printed_text_can_nest_deeper_than_its_input() {
    let reprinted = |reps: usize| {
        let text = format!("x{}", "*y*-1".repeat(reps));
        let m = model(&text);
        let printed = infix(m.graph(), m.outputs()[0], m.symbols()).to_string();
        (m, printed)
    };
    let (m, printed) = reprinted(3);
    assert_eq!(printed, "-(-(-(x * y) * y) * y)");
    assert_eq!(canonical(&model(&printed)), canonical(&m));
    let (_, printed) = reprinted(MAX_DEPTH / 2);
    assert!(matches!(
        Formula::parse(&printed),
        Err(Error::BadSyntax {
            problem: ddx_ir::text::Syntax::TooDeep { limit: MAX_DEPTH },
            ..
        })
    ));
}

/// Shapes of nesting: `(open, core, close, levels each repetition opens)`; `open` repeated
/// `k` times, then `core`, then `close` repeated `k` times.
const NESTINGS: [(&str, &str, &str, usize); 16] = [
    ("(", "x", ")", 1),
    ("-", "x", "", 1),
    ("+", "x", "", 1),
    ("- +", "x", "", 2),
    ("sin(", "x", ")", 1),
    ("x ** ", "y", "", 1),
    ("pow(x, ", "y", ")", 1),
    ("select(c, y, ", "z", ")", 1),
    ("(x + ", "y", ")", 2),
    ("x * (", "y", ")", 2),
    ("sin(-(", "x", "))", 3),
    ("x ** -(", "y", ")", 3),
    ("-(x < ", "y", ")", 3),
    ("select(x < (", "y", "), y, z)", 3),
    ("-sin(x ** (", "y", "))", 4),
    ("atan2(1, -x ** +(", "y", "))", 5),
];

/// `shape` nested to exactly `levels` levels (the whole text is one), padded with
/// parentheses to the exact count.
fn nested((open, core, close, per): (&str, &str, &str, usize), levels: usize) -> String {
    let k = (levels - 1) / per;
    let pad = levels - 1 - k * per;
    format!(
        "{}{}{core}{}{}",
        "(".repeat(pad),
        open.repeat(k),
        close.repeat(k),
        ")".repeat(pad)
    )
}

fn too_deep(text: &str) -> bool {
    matches!(
        Formula::parse(text),
        Err(Error::BadSyntax {
            problem: ddx_ir::text::Syntax::TooDeep { limit: MAX_DEPTH },
            ..
        })
    )
}

/// The parser keeps its levels on the heap, not the stack: every shape of nesting parses
/// at exactly the limit, and is refused one level past it or far past it, on a 256 KiB
/// stack (in the debug build `cargo test` makes, where a recursive descent needed over
/// 1 MiB at the limit).
#[test]
fn nesting_at_the_limit_parses_on_a_small_stack() {
    let run = || {
        for shape in NESTINGS {
            let text = nested(shape, MAX_DEPTH);
            Formula::parse(&text)
                .unwrap_or_else(|e| panic!("{shape:?} at the limit does not parse:\n{e}"));
            // Built, printed and parsed again at a sixteenth of the limit (the whole depth
            // costs a minute per shape in a debug build; `tests/deep_text.rs` in the ddx
            // crate takes a 2·10⁴-level text through every stage).
            let f = Formula::parse(&nested(shape, MAX_DEPTH / 16)).unwrap();
            let m = ddx_ir::text::model(&[f]).unwrap();
            let printed = infix(m.graph(), m.outputs()[0], m.symbols()).to_string();
            assert_eq!(canonical(&model(&printed)), canonical(&m), "{shape:?}");
            assert!(
                too_deep(&nested(shape, MAX_DEPTH + 1)),
                "{shape:?} past the limit"
            );
            let far = format!("{}{}", shape.0.repeat(MAX_DEPTH + 100_000), shape.1);
            let e = Formula::parse(&far).unwrap_err();
            assert_eq!(e.code(), Errc::BadSyntax, "{shape:?} far past the limit");
            let _ = e.to_string();
        }
    };
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn deep_inputs_are_refused_not_overflowed() {
    let n = MAX_DEPTH + 200_000;
    for text in [
        format!("{}x{}", "(".repeat(n), ")".repeat(n)),
        format!("{}x", "-".repeat(n)),
        format!("x{}", "**x".repeat(n)),
        format!("{}x{}", "sin(".repeat(n), ")".repeat(n)),
        "(".repeat(n),
    ] {
        let e = Formula::parse(&text).unwrap_err();
        assert_eq!(e.code(), Errc::BadSyntax);
    }
    // Just inside the limit parses.
    let ok = format!(
        "{}x{}",
        "(".repeat(MAX_DEPTH - 1),
        ")".repeat(MAX_DEPTH - 1)
    );
    assert!(Formula::parse(&ok).is_ok());
    // A long left-associative chain is a loop, not a recursion: no limit.
    let chain = vec!["x"; n].join(" + ");
    let m = model(&chain);
    let printed = infix(m.graph(), m.outputs()[0], m.symbols()).to_string();
    assert_eq!(printed, chain);
}

/// `powi`'s exponent is never differentiated, so text may give it only an integer
/// literal: a symbol or an expression there is `bad_syntax` naming `pow` (it would have had
/// a partial of 0 silently), and every literal form parses and prints back.
#[test]
fn powi_takes_an_integer_literal_exponent() {
    for text in [
        "powi(x, n)",
        "powi(x, 2 * n)",
        "powi(x, 1.5)",
        "powi(x, 2 + 1)",
        "powi(x, -n)",
        "powi(x, y - 2)",
        "powi(x, sin(2))",
    ] {
        match Formula::parse(text) {
            Err(e @ Error::BadSyntax { .. }) => {
                let shown = e.to_string();
                assert!(shown.contains("pow(a, n)"), "{text}: {shown}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    for (text, n) in [
        ("powi(x, 3)", 3),
        ("powi(x, -2)", -2),
        ("powi(x, (4))", 4),
        ("powi(x, +5)", 5),
        ("powi(x, -(1))", -1),
        ("powi(x ** 2, 1)", 1),
    ] {
        let m = model(text);
        let again = reprint(&reprint(text));
        assert_eq!(
            canonical(&model(&again)),
            canonical(&m),
            "{text} -> {again}"
        );
        let x = 1.25_f64;
        let base = if text.contains("**") { x * x } else { x };
        let want = base.powi(n);
        let got = m.graph().eval_reference(m.outputs(), &[x], &[])[0];
        assert!(
            (got - want).abs() <= 1e-15 * want.abs(),
            "{text}: {got} vs {want}"
        );
    }
    // A graph printed from a closure's `powi` reads back.
    let m = build(|| vec![var("x").powi(-3) + var("y").powi(7)]).unwrap();
    let text = infix(m.graph(), m.outputs()[0], m.symbols()).to_string();
    assert_eq!(canonical(&model(&text)), canonical(&m), "{text}");
}

/// Any integer literal is a `powi` exponent, not only an `i32`: the closure API's
/// `powi(i32::MIN)` prints as `powi(x, -2147483648)`, and its derivatives step past the
/// `i32` range (`powi(x, -2147483649)`); every such text parses back to the same graph.
/// The values are checked at `±1` and `2`, where the powers are known exactly.
#[test]
fn powi_exponents_past_i32_parse_and_print_back() {
    let two_31 = 2f64.powi(31);
    for (text, n) in [
        ("powi(x, -2147483648)", -two_31),
        ("powi(x, 2147483647)", two_31 - 1.0),
        ("powi(x, 2147483648)", two_31),
        ("powi(x, -2147483649)", -two_31 - 1.0),
        ("powi(x, 1e10)", 1e10),
        ("powi(x, -(4294967297))", -4_294_967_297.0),
    ] {
        let m = model(text);
        let again = reprint(text);
        assert_eq!(
            canonical(&model(&again)),
            canonical(&m),
            "{text} -> {again}"
        );
        let at = |x: f64| m.graph().eval_reference(m.outputs(), &[x], &[])[0];
        let odd = n % 2.0 != 0.0;
        assert_eq!(at(1.0), 1.0, "{text}");
        assert_eq!(at(-1.0), if odd { -1.0 } else { 1.0 }, "{text}");
        assert_eq!(at(2.0), if n > 0.0 { f64::INFINITY } else { 0.0 }, "{text}");
    }
    // Every output of every lane of `powi(x, i32::MIN)` prints as text that parses back.
    let m = build(|| vec![var("x").powi(i32::MIN) * var("y")]).unwrap();
    let mut printed = 0;
    for kind in ddx_ir::LaneKind::ALL {
        let lane = ddx_ir::lane::build(&m, kind);
        if lane.seeds > 0 {
            continue; // a seed has no name in text
        }
        for &o in &lane.outputs {
            if lane.graph.constant_of(o).is_some() {
                continue; // a literal alone is not a model
            }
            let text = infix(&lane.graph, o, m.symbols()).to_string();
            let back = model(&text);
            for x in [-1.0, 1.0] {
                let at = [x, 3.0];
                let want = lane.graph.eval_reference(&[o], &at, &[])[0];
                // The parsed text's symbols are those it names, alphabetically.
                let by_name: Vec<f64> = back
                    .symbols()
                    .iter()
                    .map(|s| at[m.symbols().iter().position(|t| t == s).unwrap()])
                    .collect();
                let got = back.graph().eval_reference(back.outputs(), &by_name, &[])[0];
                assert_eq!(got.to_bits(), want.to_bits(), "{kind:?}: {text}");
            }
            printed += usize::from(text.contains("2147483649"));
        }
    }
    assert!(printed > 0, "no derivative stepped past the i32 range");
}

/// An integer literal past the `f64` range is refused with `too_large`, as Python's
/// `float(n)` refuses it, at the byte where it starts; one just inside reads as the
/// nearest `f64` (round half to even, as Python's int-to-float conversion); a float
/// literal past the range is infinity, as in Python.
#[test]
fn integer_literals_past_f64_are_too_large() {
    let digits = |n: &str| Formula::parse(&format!("x * {n}"));
    let e = digits(&format!("1{}", "0".repeat(400))).unwrap_err();
    assert_eq!(e.code(), Errc::TooLarge);
    assert!(
        matches!(e, Error::LiteralTooLarge { digits: 401, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("at byte 4"), "{e}");
    // 2¹⁰²⁴ − 2⁹⁷⁰ is halfway between f64::MAX and 2¹⁰²⁴: it rounds to even, past the range
    // (Python: OverflowError); one less rounds to f64::MAX.
    let halfway = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792";
    assert_eq!(digits(halfway).unwrap_err().code(), Errc::TooLarge);
    let below = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497791";
    assert!(digits(below).is_ok());
    assert_eq!(
        reprint(&format!("x * {below}")),
        "x * 1.7976931348623157e308"
    );
    // A float literal past the range is infinity; `_` separators count as nothing.
    assert!(Formula::parse(&format!("x * 1{}.0", "0".repeat(400))).is_ok());
    assert!(Formula::parse("x * 1e400").is_ok());
    assert_eq!(
        Formula::parse(&format!("x * 1_{}", "0".repeat(400)))
            .unwrap_err()
            .code(),
        Errc::TooLarge
    );
}

/// `is_name` is the grammar's rule for a name (a Python identifier, Unicode included, no
/// built-in function's), and a name it accepts parses as exactly that symbol.
#[test]
fn is_name_is_the_grammars_rule() {
    for good in ["x", "_t", "x1", "α", "θ1", "θ_K", "変数", "sinx", "T_K"] {
        assert!(ddx_ir::text::is_name(good), "{good}");
        let f = Formula::parse(&format!("{good} * 2")).unwrap();
        assert_eq!(f.names(), [good]);
    }
    for bad in [
        "", "a b", "2x", "x-y", "₁x", "x₁", "sin", "exp", "a.b", "x ",
    ] {
        assert!(!ddx_ir::text::is_name(bad), "{bad:?}");
    }
}

/// Names Python would not keep apart, or cannot spell, are no names: keywords, names
/// holding an invisible character, names not in NFKC form (which Python normalises into
/// another identifier). Each is refused by `is_name` and, in a text, by the parser with
/// `bad_syntax` saying why (and the NFKC form Python reads); the soft keywords and NFKC
/// names stay names.
#[test]
fn keywords_invisible_characters_and_unnormalised_names_are_refused() {
    use ddx_ir::text::{is_name, why_not_a_name};
    for good in [
        "match", "case", "type", "_", "fi", "x", "\u{3a9}", "\u{e9}", "θ1",
    ] {
        assert!(is_name(good), "{good}");
    }
    let cases: [(&str, &str, Option<&str>); 12] = [
        ("lambda", "keyword", None),
        ("if", "keyword", None),
        ("None", "keyword", None),
        ("True", "keyword", None),
        ("x\u{200d}", "invisible", None),
        ("x\u{200c}y", "invisible", None),
        ("a\u{fe0f}", "invisible", None),
        ("ﬁ", "NFKC", Some("fi")),
        ("ｘ", "NFKC", Some("x")),
        ("ℕ", "NFKC", Some("N")),
        ("e\u{301}", "NFKC", Some("\u{e9}")),
        ("\u{2126}", "NFKC", Some("\u{3a9}")),
    ];
    for (bad, rule, normal) in cases {
        assert!(!is_name(bad), "{bad:?}");
        let why = why_not_a_name(bad).expect("refused");
        assert!(why.contains(rule), "{bad:?}: {why}");
        let e = Formula::parse(&format!("2 * {bad} + 1")).unwrap_err();
        assert_eq!(e.code(), Errc::BadSyntax, "{bad:?}: {e}");
        let msg = e.to_string();
        assert!(
            msg.contains("cannot be a name") && msg.contains(rule),
            "{msg}"
        );
        if let Some(n) = normal {
            assert!(msg.contains(&format!("Python reads it as `{n}`")), "{msg}");
        }
    }
    // A keyword before `(` is no call of an unknown function either.
    let e = Formula::parse("if(x)").unwrap_err();
    assert_eq!(e.code(), Errc::BadSyntax, "{e}");
    // NFKC-equal spellings are never two symbols: the second is refused.
    assert_eq!(
        Formula::parse("fi + ﬁ").unwrap_err().code(),
        Errc::BadSyntax
    );
}

/// The invisible characters' table is Unicode's Default_Ignorable_Code_Point list: the
/// spot checks below are its documented members and neighbours.
#[test]
fn invisible_characters_are_the_default_ignorable_code_points() {
    use ddx_ir::text::is_invisible;
    for c in [
        '\u{ad}',
        '\u{34f}',
        '\u{61c}',
        '\u{115f}',
        '\u{1160}',
        '\u{17b4}',
        '\u{180b}',
        '\u{180f}',
        '\u{200b}',
        '\u{200d}',
        '\u{200f}',
        '\u{202a}',
        '\u{2060}',
        '\u{206f}',
        '\u{3164}',
        '\u{fe00}',
        '\u{fe0f}',
        '\u{feff}',
        '\u{ffa0}',
        '\u{1bca0}',
        '\u{1d173}',
        '\u{e0001}',
        '\u{e0100}',
        '\u{e01ef}',
        '\u{e0fff}',
    ] {
        assert!(is_invisible(c), "{:x}", u32::from(c));
    }
    for c in [
        'a',
        '_',
        '0',
        '\u{ac}',
        '\u{34e}',
        '\u{17b6}',
        '\u{180a}',
        '\u{2010}',
        '\u{2070}',
        '\u{fe10}',
        '\u{fefe}',
        '\u{ffa1}',
        '\u{e1000}',
        'α',
    ] {
        assert!(!is_invisible(c), "{:x}", u32::from(c));
    }
}

/// User functions' names follow the symbols' rule: Unicode identifiers are accepted,
/// and called from text by that name.
#[test]
fn user_function_names_follow_the_symbol_rule() {
    let f = ddx_ir::UserFunction::new("φ", 1, |x| 2.0 * x[0], |_, g| g[0] = 2.0).unwrap();
    let mut fs = ddx_ir::Functions::new();
    fs.add(&f);
    let formula = Formula::parse_with("φ(x) * y", &fs).unwrap();
    assert_eq!(formula.names(), ["x", "y"]);
    for bad in ["a b", "1f", "sin", ""] {
        let e = ddx_ir::UserFunction::new(bad, 1, |x| x[0], |_, g| g[0] = 1.0).unwrap_err();
        assert_eq!(e.code(), Errc::UserFunction, "{bad:?}");
    }
}
