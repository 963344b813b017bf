//! Equations, symbols, points and every error code the core can return.

use ddx::{rt, Errc, Error, Expr, Role, VectorRole};
use std::collections::{BTreeMap, HashMap};

fn xy() -> ddx::Equation {
    rt::equation(|| {
        let y = rt::var("y"); // named first, ordered second
        let x = rt::var("x");
        x * 10.0 + y
    })
    .unwrap()
}

#[test]
fn symbols_are_alphabetical_and_named_once() {
    let eq = rt::equation(|| {
        let names = ["zeta", "alpha", "Beta", "alpha", "b10", "b2"];
        names.iter().map(|n| rt::var(n)).sum::<Expr>()
    })
    .unwrap();
    // Byte order: upper case before lower case, "b10" before "b2".
    assert_eq!(eq.symbols(), ["Beta", "alpha", "b10", "b2", "zeta"]);
    assert_eq!(eq.arity(), 5);
    assert_eq!(eq.outputs(), 1);
    // "alpha" appears twice in the sum: its partial is 2.
    assert_eq!(eq.jacobian([1.0; 5]).unwrap(), [1.0, 2.0, 1.0, 1.0, 1.0]);
}

#[test]
fn a_named_but_unused_symbol_stays_a_symbol() {
    let eq = rt::equation(|| {
        let _unused = rt::var("b");
        rt::var("a") * 2.0
    })
    .unwrap();
    assert_eq!(eq.symbols(), ["a", "b"]);
    assert_eq!(eq.jacobian([1.0, 5.0]).unwrap(), [2.0, 0.0]);
}

#[test]
fn every_point_spelling_gives_the_same_answer() {
    let eq = xy();
    let want = 12.0;
    assert_eq!(eq.evaluate([1.0, 2.0]).unwrap(), want);
    assert_eq!(eq.evaluate(&[1.0, 2.0][..]).unwrap(), want);
    assert_eq!(eq.evaluate(vec![1.0, 2.0]).unwrap(), want);
    assert_eq!(eq.evaluate([("y", 2.0), ("x", 1.0)]).unwrap(), want);
    assert_eq!(
        eq.evaluate(vec![("y".to_string(), 2.0), ("x".to_string(), 1.0)])
            .unwrap(),
        want
    );
    let h: HashMap<String, f64> = [("x".to_string(), 1.0), ("y".to_string(), 2.0)].into();
    assert_eq!(eq.evaluate(&h).unwrap(), want);
    let b: BTreeMap<&str, f64> = [("x", 1.0), ("y", 2.0)].into();
    assert_eq!(eq.evaluate(&b).unwrap(), want);
    assert_eq!(eq.point([("y", 2.0), ("x", 1.0)]).unwrap(), [1.0, 2.0]);
    let one = rt::equation(|| rt::var("t").exp()).unwrap();
    assert_eq!(one.evaluate(0.0).unwrap(), 1.0);
}

#[test]
fn systems_from_arrays_and_vecs() {
    let arr = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        [x * y + x.sin(), x.exp() - y * y]
    })
    .unwrap();
    assert_eq!(arr.outputs(), 2);
    let (x, y) = (1.3, 0.7);
    assert_eq!(
        arr.evaluate([x, y]).unwrap(),
        vec![x * y + x.sin(), x.exp() - y * y]
    );
    let j = arr.jacobian([x, y]).unwrap();
    assert_eq!(j, vec![y + x.cos(), x, x.exp(), -(y + y)]);
    let vecs = rt::equation(|| {
        (0..3)
            .map(|i| rt::var("x") * f64::from(i))
            .collect::<Vec<_>>()
    })
    .unwrap();
    assert_eq!(vecs.evaluate(2.0).unwrap(), vec![0.0, 2.0, 4.0]);
    // A constant output next to symbolic ones is allowed.
    let mixed = rt::equation(|| vec![rt::var("x"), Expr::from(3.0)]).unwrap();
    assert_eq!(mixed.evaluate(5.0).unwrap(), vec![5.0, 3.0]);
    assert_eq!(mixed.jacobian(5.0).unwrap(), vec![1.0, 0.0]);
}

#[test]
fn the_jacobian_pattern_keeps_structural_nonzeros() {
    // Tridiagonal residual over six symbols: 16 cells, not 36.
    let eq = rt::equation(|| {
        let x: Vec<Expr> = (0..6).map(|i| rt::var(&format!("x{i}"))).collect();
        (0..6)
            .map(|i| {
                let mut r = x[i] * x[i] * 2.0;
                if i > 0 {
                    r -= x[i - 1];
                }
                if i < 5 {
                    r -= x[i + 1];
                }
                r
            })
            .collect::<Vec<_>>()
    })
    .unwrap();
    let p = eq.jacobian_pattern();
    assert_eq!(p.nonzeros(), 16);
    assert_eq!(p.at(0, 1), Some(1));
    assert_eq!(p.at(0, 2), None);
    assert_eq!(p.at(9, 9), None);
    let j = eq.jacobian([1.0; 6]).unwrap();
    for c in p.entries() {
        assert_ne!(j[c.row * 6 + c.column], 0.0);
    }
    assert_eq!(j.iter().filter(|v| **v != 0.0).count(), 16);
}

#[test]
fn point_errors() {
    let eq = xy();
    let err = |e: Result<f64, Error>| e.unwrap_err();
    assert_eq!(
        err(eq.evaluate([1.0])),
        Error::ShortPoint {
            expected: 2,
            got: 1
        }
    );
    assert_eq!(
        err(eq.evaluate([1.0, 2.0, 3.0])),
        Error::WrongArity {
            expected: 2,
            got: 3
        }
    );
    assert_eq!(
        err(eq.evaluate([("x", 1.0)])),
        Error::MissingSymbol { name: "y".into() }
    );
    let e = err(eq.evaluate([("x", 1.0), ("yy", 2.0)]));
    assert_eq!(e.code(), Errc::UnknownSymbol);
    assert!(e.to_string().contains("did you mean `y`"), "{e}");
    let e = err(eq.evaluate([("x", 1.0), ("x", 2.0), ("y", 1.0)]));
    assert_eq!(
        e,
        Error::DuplicateSymbol {
            name: "x".into(),
            role: Role::Point
        }
    );
    // Every per-point call checks its point.
    assert_eq!(eq.jacobian([1.0]).unwrap_err().code(), Errc::ShortPoint);
    assert_eq!(
        eq.gradient([1.0, 2.0, 3.0]).unwrap_err().code(),
        Errc::WrongArity
    );
    assert_eq!(
        eq.jvp([1.0, 0.0], [1.0]).unwrap_err().code(),
        Errc::ShortPoint
    );
    assert_eq!(
        eq.vjp(&[1.0], [("q", 1.0)]).unwrap_err().code(),
        Errc::UnknownSymbol
    );
}

#[test]
fn direction_errors() {
    let eq = xy();
    let e = eq.jvp([1.0], [1.0, 2.0]).unwrap_err();
    assert_eq!(
        e,
        Error::WrongDirection {
            role: VectorRole::Direction,
            expected: 2,
            got: 1
        }
    );
    assert!(e.to_string().starts_with("wrong_direction"));
    assert_eq!(
        eq.jvp([1.0, 0.0, 0.0], [1.0, 2.0]).unwrap_err().code(),
        Errc::WrongDirection
    );
    assert_eq!(
        eq.jvp([("x", 1.0)], [1.0, 2.0]).unwrap_err().code(),
        Errc::WrongDirection
    );
    assert_eq!(
        eq.jvp([("x", 1.0), ("y", 0.0)], [1.0, 2.0]).unwrap(),
        [10.0]
    );
    let e = eq.vjp(&[1.0, 1.0], [1.0, 2.0]).unwrap_err();
    assert_eq!(
        e,
        Error::WrongDirection {
            role: VectorRole::Covector,
            expected: 1,
            got: 2
        }
    );
    // A named direction that names a symbol twice says it is a direction, not a point.
    let twice = [("x", 1.0), ("x", 2.0), ("y", 0.0)];
    for e in [
        eq.jvp(twice, [1.0, 2.0]).unwrap_err(),
        eq.hvp(twice, [1.0, 2.0]).unwrap_err(),
    ] {
        assert_eq!(
            e,
            Error::DuplicateSymbol {
                name: "x".into(),
                role: Role::Direction
            }
        );
        assert_eq!(
            e.to_string(),
            "duplicate_symbol: the named direction gives symbol `x` more than once"
        );
    }
    // The point of the same call is still a point.
    assert_eq!(
        eq.jvp([1.0, 0.0], twice).unwrap_err().to_string(),
        "duplicate_symbol: the named point gives symbol `x` more than once"
    );
}

/// Counts in messages agree with their nouns: `1 value`, `2 values`.
#[test]
fn messages_count_in_the_singular_and_the_plural() {
    let eq = xy();
    let one = rt::equation(|| rt::var("x") * 2.0).unwrap();
    let msg = |r: Result<f64, Error>| r.unwrap_err().to_string();
    assert_eq!(
        msg(eq.evaluate([1.0])),
        "short_point: the point gives 1 value, but the equation has 2 symbols"
    );
    assert_eq!(
        msg(one.evaluate([1.0, 2.0])),
        "wrong_arity: the point gives 2 values, but the equation has 1 symbol"
    );
    assert_eq!(
        msg(eq.evaluate([0.0; 0])),
        "short_point: the point gives 0 values, but the equation has 2 symbols"
    );
    assert_eq!(
        eq.jvp([1.0], [1.0, 2.0]).unwrap_err().to_string(),
        "wrong_direction: the direction (one value per symbol) has 1 value, 2 expected"
    );
    let shown = [
        Error::WrongOutputLength {
            expected: 2,
            got: 1,
        },
        Error::IndexOutOfRange { index: 3, len: 1 },
        Error::WrongColumnCount {
            block: ddx::ir::Block::Points,
            expected: 2,
            got: 1,
        },
        Error::ColumnLength {
            block: ddx::ir::Block::Values,
            column: 0,
            expected: 1,
            got: 1,
        },
        Error::NotUnivariate {
            symbols: 1,
            outputs: 2,
        },
    ]
    .map(|e| e.to_string());
    assert_eq!(
        shown,
        [
            "wrong_output_length: the output buffer holds 1 value, the call writes 2",
            "index_out_of_range: index 3 names no symbol; the equation has 1 symbol",
            "wrong_column_count: 1 point column given, 2 expected",
            "column_length: value column 0 holds 1 value, but the batch has 1 point (the \
             length of the longest input column; an input column of 1 value is broadcast)",
            "not_univariate: a univariate derivative needs one symbol and one output, the \
             equation has 1 symbol and 2 outputs",
        ]
    );
}

#[test]
fn build_errors() {
    // A literal-only model, and an empty system.
    assert_eq!(
        rt::equation(|| Expr::from(2.0) * 3.0).unwrap_err(),
        Error::NoGraph
    );
    let empty = rt::equation(Vec::<Expr>::new).unwrap_err();
    assert_eq!(empty, Error::NoOutputs);
    assert_eq!(empty.code(), Errc::NoGraph);
    assert_eq!(empty.to_string(), "no_graph: the system has no outputs");
    // A symbol named outside any model closure.
    let outside = rt::var("x");
    assert_eq!(outside.error(), Some(Error::NoArena));
    assert_eq!(rt::equation(|| outside * 2.0).unwrap_err(), Error::NoArena);
    // A handle kept past the closure that made it.
    let mut leaked = None;
    let _first = rt::equation(|| {
        let x = rt::var("x");
        leaked = Some(x);
        x
    })
    .unwrap();
    let leaked = leaked.unwrap();
    assert_eq!(
        rt::equation(|| leaked + rt::var("y")).unwrap_err(),
        Error::SealedArena
    );
    assert_eq!(rt::equation(|| leaked).unwrap_err(), Error::SealedArena);
    // Arithmetic on it outside any closure poisons, without panicking.
    assert_eq!((leaked * 2.0).error(), Some(Error::SealedArena));
    // A handle from a model closure still running on another thread: the message says so.
    let across = rt::equation(|| {
        let x = rt::var("x");
        let e = std::thread::scope(|s| {
            s.spawn(|| rt::equation(|| x + rt::var("y")).unwrap_err())
                .join()
                .unwrap()
        });
        assert_eq!(e, Error::SealedArena);
        assert!(e.to_string().contains("running on another thread"), "{e}");
        x
    });
    assert!(across.is_ok());
    // A nested model using its enclosing model's handle.
    let outer = rt::equation(|| {
        let x = rt::var("x");
        let inner = rt::equation(|| x + rt::var("y"));
        assert_eq!(inner.unwrap_err(), Error::ForeignExpression);
        x
    });
    assert!(outer.is_ok());
    // A nested model of its own is fine, and the outer one carries on.
    let outer = rt::equation(|| {
        let x = rt::var("x");
        let inner = rt::equation(|| rt::var("y").sin()).unwrap();
        assert_eq!(inner.symbols(), ["y"]);
        x * 2.0
    })
    .unwrap();
    assert_eq!(outer.symbols(), ["x"]);
    // A closure that panics leaves no arena behind.
    let caught = std::panic::catch_unwind(|| rt::equation(|| -> Expr { panic!("model failed") }));
    assert!(caught.is_err());
    assert_eq!(rt::var("z").error(), Some(Error::NoArena));
}

#[test]
fn error_codes_spell_as_the_specification() {
    let codes = [
        (Errc::WrongArity, "wrong_arity"),
        (Errc::WrongDirection, "wrong_direction"),
        (Errc::ShortPoint, "short_point"),
        (Errc::UnknownSymbol, "unknown_symbol"),
        (Errc::NoArena, "no_arena"),
        (Errc::NoGraph, "no_graph"),
        (Errc::SealedArena, "sealed_arena"),
    ];
    for (c, s) in codes {
        assert_eq!(c.to_string(), s);
    }
}

#[test]
fn a_fresh_equation_shared_by_threads_answers_identically() {
    for _ in 0..20 {
        let eq = rt::equation(|| {
            let (a, b) = (rt::var("a"), rt::var("b"));
            let mut s = Expr::from(0.0);
            for k in 0..200 {
                let t = f64::from(k) * 0.01;
                s += (a * (-b * t).exp() - t.sin()).powf(2.0);
            }
            s
        })
        .unwrap();
        let eq = &eq;
        let barrier = std::sync::Barrier::new(4);
        let barrier = &barrier;
        let answers: Vec<(f64, Vec<f64>, Vec<f64>)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|k| {
                    s.spawn(move || {
                        barrier.wait();
                        // Different threads touch the lanes in different orders.
                        if k % 2 == 0 {
                            let g = eq.gradient([1.5, 0.3]).unwrap();
                            let j = eq.jacobian([1.5, 0.3]).unwrap();
                            (eq.evaluate([1.5, 0.3]).unwrap(), j, g)
                        } else {
                            let f = eq.evaluate([1.5, 0.3]).unwrap();
                            let j = eq.jacobian([1.5, 0.3]).unwrap();
                            (f, j, eq.gradient([1.5, 0.3]).unwrap())
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for a in &answers[1..] {
            assert_eq!(a.0.to_bits(), answers[0].0.to_bits());
            assert_eq!(a.1, answers[0].1);
            assert_eq!(a.2, answers[0].2);
        }
        assert_eq!(answers[0].1, eq.jacobian([1.5, 0.3]).unwrap());
    }
}

#[test]
fn equations_are_send_sync_and_clone() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<ddx::Equation>();
    check::<ddx::Equation<ddx::System>>();
}

#[test]
fn into_calls_equal_the_allocating_calls_and_check_their_buffer() {
    let sys = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        [x * y + x.sin(), x.exp() - y * y, y.sqrt()]
    })
    .unwrap();
    let p = [1.3, 0.7];
    let mut f = [f64::NAN; 3];
    sys.evaluate_into(p, &mut f).unwrap();
    assert_eq!(f.to_vec(), sys.evaluate(p).unwrap());
    let mut j = [f64::NAN; 6];
    sys.jacobian_into(p, &mut j).unwrap();
    assert_eq!(j.to_vec(), sys.jacobian(p).unwrap());
    // The gradient lane writes only structural nonzeros; the rest must be zeroed.
    let mut g = [f64::NAN; 6];
    sys.gradient_into(p, &mut g).unwrap();
    assert_eq!(g.to_vec(), sys.gradient(p).unwrap());
    assert_eq!(g[4], 0.0, "∂sqrt(y)/∂x is a structural zero");
    let mut short = [f64::NAN; 5];
    let e = sys.jacobian_into(p, &mut short).unwrap_err();
    assert_eq!(
        e,
        Error::WrongOutputLength {
            expected: 6,
            got: 5
        }
    );
    assert_eq!(e.code(), Errc::WrongOutputLength);
    assert_eq!(
        sys.gradient_into(p, &mut short).unwrap_err().code(),
        Errc::WrongOutputLength
    );
    assert_eq!(
        sys.evaluate_into(p, &mut short).unwrap_err().code(),
        Errc::WrongOutputLength
    );
    assert!(short.iter().all(|v| v.is_nan()), "nothing written on error");
    assert_eq!(
        sys.jacobian_into([1.0], &mut j).unwrap_err().code(),
        Errc::ShortPoint
    );
}
