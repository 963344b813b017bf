//! Equations from text and as text: the public API, printed equations (golden files,
//! `DDX_BLESS=1` rewrites them), derivative rows that parse back, Graphviz and node counts.

mod common;

use common::huber;

use ddx::ir::testing::{canonical, check_golden};
use ddx::{rt, select, Equation, Errc, Error, Expr, Formula, LaneKind, System};

fn golden(name: &str) -> String {
    format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn text_and_closure_build_the_same_equation() {
    let text = rt::equation_text("sin(x)*y + 3").unwrap();
    let closure = rt::equation(|| rt::var("x").sin() * rt::var("y") + 3.0).unwrap();
    assert_eq!(canonical(text.model()), canonical(closure.model()));
    assert_eq!(text.symbols(), ["x", "y"]);
    let p = [0.3, -1.7];
    assert_eq!(text.evaluate(p).unwrap(), closure.evaluate(p).unwrap());
    assert_eq!(text.jacobian(p).unwrap(), closure.jacobian(p).unwrap());

    let parsed: Equation = "y * exp(-x)".parse().unwrap();
    assert_eq!(parsed.evaluate([0.0, 2.0]).unwrap(), 2.0);

    let sys: Equation<System> = rt::system_text(&["x*x + y*y - 4", "x*y - 1"]).unwrap();
    assert_eq!(sys.evaluate([1.0, 2.0]).unwrap(), vec![1.0, 1.0]);
    assert_eq!(sys.jacobian([1.0, 2.0]).unwrap(), vec![2.0, 4.0, 2.0, 1.0]);
    let owned = vec!["b".to_string(), "a".to_string()];
    assert_eq!(rt::system_text(&owned).unwrap().symbols(), ["a", "b"]);
}

#[test]
fn text_errors_pass_through() {
    assert_eq!(
        rt::equation_text("x ^ 2").unwrap_err().code(),
        Errc::BadSyntax
    );
    assert_eq!(
        rt::equation_text("2 + 3").unwrap_err(),
        Error::NoGraph,
        "a literal-only text"
    );
    assert_eq!(
        rt::system_text(&["x", "sine(x)"]).unwrap_err().code(),
        Errc::UnknownFunction
    );
    assert_eq!(
        "hypot(x)".parse::<Equation>().unwrap_err().code(),
        Errc::WrongArgumentCount
    );
    let empty = rt::system_text::<&str>(&[]).unwrap_err();
    assert_eq!(empty, Error::NoOutputs, "no texts is not a literal");
    assert_eq!(empty.code(), Errc::NoGraph);
    assert_eq!(empty.to_string(), "no_graph: the system has no outputs");
    assert_eq!(
        rt::system_text(&["1", "2"]).unwrap_err().to_string(),
        "no_graph: every output is a literal; none depends on a symbol"
    );
}

/// A system's parse error says which text failed, and the caret still sits under the byte.
#[test]
fn system_text_errors_name_the_text() {
    let e = rt::system_text(&["x*x + y*y - 4", "x*y - 1", "x ^ 2"]).unwrap_err();
    assert_eq!(e.code(), Errc::BadSyntax);
    assert_eq!(
        e.to_string(),
        "bad_syntax: `^` is not an operator; write `**` for a power\n  in text 2, at byte 2:\n    \
         x ^ 2\n      ^"
    );
    let Error::BadSyntax { at, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!((at.output, at.offset), (Some(2), 2));
    let e = rt::system_text(&["x", "1 +\n sine(x)"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown_function: there is no function `sine` (did you mean `sin`?)\n  in text 1, at \
         byte 5 (line 2, column 2):\n     sine(x)\n     ^"
    );
    let e = rt::system_text(&["hypot(x)", "y"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("\n  in text 0, at byte 7:\n    hypot(x)\n           ^"),
        "{e}"
    );
    // A text parsed alone has no index.
    let e = rt::equation_text("x ^ 2").unwrap_err();
    assert!(e.to_string().contains("\n  at byte 2:\n"), "{e}");
}

#[test]
fn parse_expr_works_inside_a_model_closure() {
    let data = [(1.0, 0.5), (2.0, 0.25), (3.0, 0.125)];
    let text = rt::equation(|| {
        let mut loss = Expr::from(0.0);
        for &(t, y) in &data {
            let m = rt::parse_expr("a * exp(-b * t)", &[("t", t)]).unwrap();
            loss += (y - m) * (y - m);
        }
        loss
    })
    .unwrap();
    let closure = rt::equation(|| {
        let mut loss = Expr::from(0.0);
        for &(t, y) in &data {
            let m = rt::var("a") * (-rt::var("b") * t).exp();
            loss += (y - m) * (y - m);
        }
        loss
    })
    .unwrap();
    assert_eq!(canonical(text.model()), canonical(closure.model()));
    // Bound to an expression of the closure.
    let eq = rt::equation(|| {
        let u = rt::var("u");
        rt::parse_expr("x * x + 1", &[("x", u.sin())]).unwrap()
    })
    .unwrap();
    assert_eq!(
        eq.to_string().lines().next(),
        Some("f0: sin(u) * sin(u) + 1")
    );
    // A parse error comes back at once; outside a closure the handle is poisoned.
    assert_eq!(
        rt::parse_expr::<f64>("x +", &[]).unwrap_err().code(),
        Errc::BadSyntax
    );
    let outside = rt::parse_expr::<f64>("x + 1", &[]).unwrap();
    assert_eq!(outside.error(), Some(Error::NoArena));
    // A formula parsed once and bound many times.
    let f: Formula = "a * exp(-b * t)".parse().unwrap();
    let bound = rt::equation(|| {
        let mut loss = Expr::from(0.0);
        for &(t, y) in &data {
            let m = f.bind(&[("t", t)]);
            loss += (y - m) * (y - m);
        }
        loss
    })
    .unwrap();
    assert_eq!(canonical(bound.model()), canonical(closure.model()));
}

/// Printed equations: closure-built and text-built, scalar and system, with and without a
/// precision.
#[test]
fn printed_equations() {
    let mut out = String::new();
    let mut show = |title: &str, text: String| {
        out.push_str(&format!("==== {title}\n{text}\n"));
    };
    let xy = rt::equation(|| rt::var("x") * rt::var("y")).unwrap();
    show("x * y", xy.to_string());
    show("huber loss", huber().to_string());
    show("huber loss {:.3}", format!("{:.3}", huber()));
    for text in [
        "sin(x)*y + 3",
        "-x**2 + (-x)**2 + 2**-y",
        "select(x*x < y + 1, x, y)",
        "x > y",
        "atan2(y, x) + hypot(x, y)",
        "max(x, y) * min(x, 2)",
        "abs(x) + sign(y) + sqrt(x*y)",
        "a - (b - c) + a / (b * c) + (a ** b) ** c",
        "pow(x, 0.5) + x ** 3 + 1e-7 * x + 1e300 * x",
        "log(x) / log10(x) + erf(x) + cbrt(x)",
    ] {
        show(text, rt::equation_text(text).unwrap().to_string());
    }
    let sys = rt::system_text(&["x*x + y*y - 4", "x*y - 1", "z"]).unwrap();
    show("system", sys.to_string());
    show("system {:.2}", format!("{sys:.2}"));
    check_golden(golden("printed_equations.txt"), &out);
}

/// Every line an equation prints — the functions and each partial — parses back, and
/// prints again as the same text; the parsed partial evaluates as the Jacobian does.
#[test]
fn printed_rows_parse_back() {
    let eqs: Vec<Equation<System>> = vec![
        rt::equation(|| vec![huber_expr()]).unwrap(),
        rt::system_text(&[
            "select(x*x < y + 1, x*y, y - x) + exp(-x**2)",
            "atan2(y, x) * hypot(x, y) / (1 + x**2)",
            "max(x, y) - min(x, -y) + abs(x - y) ** 1.5",
        ])
        .unwrap(),
    ];
    for eq in eqs {
        let p = [0.7, 1.3];
        let jac = eq.jacobian(p).unwrap();
        let printed = eq.to_string();
        let mut row = 0;
        for line in printed.lines() {
            let (head, text) = line.trim_start().split_once(": ").unwrap();
            let back = rt::equation_text(text);
            let back = match back {
                Ok(back) => back,
                Err(Error::NoGraph) => continue, // a constant partial
                Err(e) => panic!("{line:?} does not parse back:\n{e}"),
            };
            let reprinted = back.to_string();
            assert_eq!(reprinted.lines().next().unwrap(), format!("f0: {text}"));
            if let Some(name) = head.strip_prefix("d/d") {
                let col = eq.symbols().iter().position(|s| s == name).unwrap();
                let at: Vec<(&str, f64)> = back
                    .symbols()
                    .iter()
                    .map(|s| {
                        let k = eq.symbols().iter().position(|t| t == s).unwrap();
                        (s.as_str(), p[k])
                    })
                    .collect();
                let v = back.evaluate(&at[..]).unwrap();
                assert_eq!(v.to_bits(), jac[row * eq.arity() + col].to_bits(), "{line}");
            } else {
                row = head[1..].parse().unwrap();
            }
        }
    }
}

fn huber_expr() -> Expr {
    let a = rt::var("a");
    let b = rt::var("b");
    let r = 0.74 - a * (-b * 2.0).exp();
    select(r.abs().lt(0.05), r * r, 0.05 * (2.0 * r.abs() - 0.05))
}

#[test]
fn graphviz_and_node_counts() {
    let eq = rt::equation_text("exp(x) * y + sin(x)").unwrap();
    let lean = eq.to_dot(false);
    let all = eq.to_dot(true);
    check_golden(
        golden("dot.txt"),
        &format!("==== to_dot(false)\n{lean}==== to_dot(true)\n{all}"),
    );
    let drawn = |dot: &str| {
        dot.lines()
            .filter(|l| {
                l.contains("[label=") && l.trim_start().starts_with('n') && !l.contains("->")
            })
            .count()
    };
    assert_eq!(drawn(&lean), eq.nodes(LaneKind::Gradient).unwrap());
    assert!(
        drawn(&all) > drawn(&lean),
        "the value-only nodes appear with all"
    );
    assert!(all.contains("style=dashed"));
    assert!(!lean.contains("style=dashed"));

    // The gradient lane prunes what only the value needs.
    assert!(eq.nodes(LaneKind::Gradient).unwrap() < eq.nodes(LaneKind::Jacobian).unwrap());
    assert_eq!(eq.nodes(LaneKind::Value).unwrap(), eq.model().graph().len());
    for kind in LaneKind::ALL {
        assert_eq!(eq.nodes(kind).unwrap(), eq.lane(kind).unwrap().graph.len());
    }
    let h = huber();
    assert!(h.nodes(LaneKind::Gradient).unwrap() <= h.nodes(LaneKind::Jacobian).unwrap());
    assert!(h.to_dot(true).starts_with("digraph ddx {"));
}

mod random {
    use super::*;
    use ddx::ir::testing::{random_model, ModelSize};
    use ddx::ir::text::infix;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Random models, printed with their partials: every row parses back and prints
        /// the same again, and drawing never panics.
        #[test]
        fn printed_partials_of_random_models_parse_back(seed in any::<u64>(), nodes in 1usize..48) {
            let size = ModelSize { nodes, ..ModelSize::default() };
            let m = random_model(seed, &size);
            let rows: Vec<String> = m
                .outputs()
                .iter()
                .map(|&o| infix(m.graph(), o, m.symbols()).to_string())
                .collect();
            let eq = rt::system_text(&rows).unwrap();
            for line in eq.to_string().lines() {
                let (_, text) = line.trim_start().split_once(": ").unwrap();
                match rt::equation_text(text) {
                    Ok(back) => {
                        let again = back.to_string();
                        prop_assert_eq!(again.lines().next().unwrap(), format!("f0: {text}"));
                    }
                    Err(Error::NoGraph) => {}
                    Err(e) => return Err(TestCaseError::fail(format!("{line:?}:\n{e}"))),
                }
            }
            let dot = eq.to_dot(true);
            prop_assert!(dot.ends_with("}\n"), "{}", dot);
            prop_assert!(eq.nodes(LaneKind::Gradient).unwrap() <= eq.nodes(LaneKind::Jacobian).unwrap());
        }
    }
}

/// `p = p*p + 1` applied `steps` times from `p = x`: `steps·2 + 2` nodes, about `2^steps`
/// nodes written out as a tree.
fn doubling(steps: usize) -> Equation {
    rt::equation(|| {
        let mut p = rt::var("x");
        for _ in 0..steps {
            p = p * p + 1.0;
        }
        p
    })
    .unwrap()
}

/// A plain `{}` never writes more than `MAX_TEXT_NODES` nodes of an expression: beyond,
/// a note (the reviewer's 1000-step chain printed 12 GB before); `{:#}` writes all of it.
#[test]
fn printing_is_bounded_unless_asked_for_in_full() {
    // 2^18 leaves: under the limit, written out, and it parses back.
    let small = doubling(17);
    let text = small.to_string();
    let first = text.lines().next().unwrap().trim_start_matches("f0: ");
    assert!(!first.starts_with('<') && first.len() > 1 << 18);
    assert_eq!(
        canonical(rt::equation_text(first).unwrap().model()),
        canonical(small.model())
    );
    // 2^40 leaves as a tree: a note, at once, for the value and its derivative row.
    let huge = doubling(40);
    let text = huge.to_string();
    assert!(text.len() < 1000, "{} bytes", text.len());
    assert_eq!(
        text.matches(&format!("more than {} nodes", ddx::MAX_TEXT_NODES))
            .count(),
        2,
        "{text}"
    );
    // The reviewer's chain: each derivative term repeats the chain below it.
    let chain = rt::equation(|| {
        let (x, c) = (rt::var("x"), rt::var("c"));
        let mut e = x;
        for _ in 0..1000 {
            e = (e * 0.999 + c).sin() + x * 1e-3;
        }
        e
    })
    .unwrap();
    assert!(chain.to_string().len() < 1 << 24);
    // In full on request: the alternate flag lifts the limit (the model alone: the
    // equation's derivative row would be some 100 MB).
    let eq = doubling(21);
    assert!(eq
        .model()
        .to_string()
        .starts_with("f0: <expression of more than"));
    let full = format!("{:#}", eq.model());
    assert!(full.len() > 1 << 22, "{} bytes", full.len());
}
