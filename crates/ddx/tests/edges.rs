//! Names and texts at the edges (issue 11): bounded parse-error messages, empty names,
//! Python's identifier rule and numeric literals, and spellings from other languages.

use ddx::{rt, Errc};

/// A parse error's message, whatever the text's length, stays a few hundred bytes: a
/// window of the faulty line around the byte, and quoted tokens and names cut short.
#[test]
fn parse_errors_on_a_two_megabyte_line_are_short() {
    // 2 MB, one line: a long name lexes fast in a debug build, where a megabyte of
    // `x + x + …` takes seconds to parse.
    let name = "x".repeat(2_000_000);
    let head = format!("{name} + "); // the fault comes after this
    let cases = [
        // A bad character at the end, in the middle, at the start.
        (format!("{head}$"), Errc::BadSyntax, head.len()),
        (format!("{head}$ + {name}"), Errc::BadSyntax, head.len()),
        (format!("$ + {name}"), Errc::BadSyntax, 0),
        // A 2 MB token found where an operator belongs.
        (format!("x {name}"), Errc::BadSyntax, 2),
        // A 2 MB function name, then a wrong argument count deep in the line.
        (
            format!("{}(x)", "f".repeat(2_000_000)),
            Errc::UnknownFunction,
            0,
        ),
        (
            format!("{head}sin(x, y) + {name}"),
            Errc::WrongArgumentCount,
            head.len() + 7,
        ),
    ];
    for (text, code, at) in cases {
        assert!(text.len() >= 2_000_000);
        let e = rt::equation_text(&text).unwrap_err();
        assert_eq!(
            e.code(),
            code,
            "{}",
            &e.to_string()[..200.min(e.to_string().len())]
        );
        let message = e.to_string();
        assert!(message.len() < 600, "{} bytes: {message}", message.len());
        assert!(message.contains(&format!("at byte {at}")), "{message}");
        // The caret still sits under the faulty byte of the window shown.
        let lines: Vec<&str> = message.lines().collect();
        let (shown, caret) = (lines[lines.len() - 2], lines[lines.len() - 1]);
        let col = caret.chars().count() - 1;
        let under: char = shown.chars().nth(col).unwrap();
        let expected = text[at..].chars().next().unwrap();
        assert_eq!(under, expected, "{message}");
    }
    // A short text is shown whole, as before.
    let e = rt::equation_text("x + $").unwrap_err();
    assert!(e.to_string().ends_with("    x + $\n        ^"), "{e}");
}

#[test]
fn an_empty_symbol_name_is_refused() {
    let e = rt::equation(|| rt::var("") * 2.0).unwrap_err();
    assert_eq!(e.code(), Errc::BadName);
    assert!(e.to_string().contains("a symbol needs a name"), "{e}");
    // Made but unused, it still fails the model.
    let e = rt::equation(|| {
        let _ = rt::var("");
        rt::var("x") * 2.0
    })
    .unwrap_err();
    assert_eq!(e.code(), Errc::BadName);
    // Any other string names a symbol (a data file's column header, say).
    let eq = rt::equation(|| rt::var("T (K)") * 2.0).unwrap();
    assert_eq!(eq.symbols(), ["T (K)"]);
}

/// Text reads the names Python reads (`str.isidentifier`), and they are the symbols
/// `rt::var` makes of the same strings.
#[test]
fn text_names_are_python_identifiers_as_rt_var_has_them() {
    let text = "α * θ1 + 変数 ** 2 - _T_K / ñ";
    let from_text = rt::equation_text(text).unwrap();
    let from_closure = rt::equation(|| {
        let (a, t, v, tk, n) = (
            rt::var("α"),
            rt::var("θ1"),
            rt::var("変数"),
            rt::var("_T_K"),
            rt::var("ñ"),
        );
        a * t + v.powi(2) - tk / n
    })
    .unwrap();
    assert_eq!(from_text.symbols(), from_closure.symbols());
    let by_name = [
        ("α", 0.3),
        ("θ1", 1.7),
        ("変数", -0.4),
        ("_T_K", 2.5),
        ("ñ", 1.25),
    ];
    let at = |eq: &ddx::Equation<ddx::Scalar>| {
        let mut p = [0.0; 5];
        for (i, s) in eq.symbols().iter().enumerate() {
            p[i] = by_name.iter().find(|(n, _)| n == s).unwrap().1;
        }
        p
    };
    let closed = 0.3 * 1.7 + (-0.4f64).powi(2) - 2.5 / 1.25;
    assert_eq!(from_text.evaluate(at(&from_text)).unwrap(), closed);
    assert_eq!(from_closure.evaluate(at(&from_closure)).unwrap(), closed);
    assert_eq!(from_text.evaluate(by_name).unwrap(), closed);
    // Printed text parses back to the same equation.
    let printed = from_closure.to_string();
    let value = printed
        .lines()
        .next()
        .unwrap()
        .strip_prefix("f0: ")
        .unwrap();
    let reread = rt::equation_text(value).unwrap();
    assert_eq!(reread.evaluate(by_name).unwrap(), closed);
    // Not identifiers in Python either: a subscript digit first, a currency sign.
    for bad in ["₁x + 1", "x + €"] {
        assert_eq!(
            rt::equation_text(bad).unwrap_err().code(),
            Errc::BadSyntax,
            "{bad}"
        );
    }
}

#[test]
fn numbers_take_underscores_between_digits() {
    let eq = rt::equation_text("1_000 * x + 0.000_5 + 1e1_0 * y").unwrap();
    assert_eq!(eq.evaluate([2.0, 1.0]).unwrap(), 2000.0 + 0.0005 + 1e10);
    for bad in ["1__000 * x", "1_ * x", "x * 1_.5", "x + 1._5", "x * 1e_3"] {
        let e = rt::equation_text(bad).unwrap_err();
        assert_eq!(e.code(), Errc::BadSyntax, "{bad}");
        assert!(e.to_string().contains("between two digits"), "{e}");
    }
}

#[test]
fn other_languages_spellings_are_suggested() {
    for (written, ours) in [
        ("ln", "log"),
        ("arctan", "atan"),
        ("fabs", "abs"),
        ("sine", "sin"),
    ] {
        let e = rt::equation_text(&format!("{written}(x)")).unwrap_err();
        assert_eq!(e.code(), Errc::UnknownFunction);
        assert!(
            e.to_string().contains(&format!("did you mean `{ours}`?")),
            "{written}: {e}"
        );
    }
}
