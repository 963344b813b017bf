//! Panics the public API used to reach (issue 11), each now an error or impossible.

use ddx::interp::{Program, Schedule};
use ddx::{rt, Errc, LaneKind};

#[test]
fn a_sink_may_run_another_program() {
    // `run_with` borrowed the thread's scratch for the whole run, so a sink that ran any
    // program panicked with "RefCell already borrowed".
    let eq = rt::equation(|| {
        let (x, y) = (rt::var("x"), rt::var("y"));
        x * y.sin() + (x / y).exp()
    })
    .unwrap();
    let value = Program::lower(eq.lane(LaneKind::Value), Schedule::Level);
    let gradient = Program::lower(eq.lane(LaneKind::Gradient), Schedule::Level);
    let x = [0.7, 1.3];
    let mut g = [0.0; 2];
    gradient.run(&x, &mut g).unwrap();
    let mut f = [0.0];
    value.run(&x, &mut f).unwrap();

    let mut seen = Vec::new();
    value
        .run_with(&x, |_, v| {
            // Re-entered twice over: the same program, then another one, from the sink.
            let mut inner = [0.0];
            value.run(&x, &mut inner).unwrap();
            let mut inner_g = [0.0; 2];
            gradient
                .run_with(&x, |k, w| {
                    let mut again = [0.0];
                    value.run(&x, &mut again).unwrap();
                    assert_eq!(again, inner);
                    inner_g[k] = w;
                })
                .unwrap();
            seen.push((v, inner[0], inner_g));
        })
        .unwrap();
    assert_eq!(seen, [(f[0], f[0], g)]);
    assert_eq!(f[0], eq.evaluate(x).unwrap());
    assert_eq!(g.to_vec(), eq.gradient(x).unwrap());
    // And after the nesting, the outer scratch still serves plain runs.
    let mut after = [0.0; 2];
    gradient.run(&x, &mut after).unwrap();
    assert_eq!(after, g);
}

#[test]
fn programs_refuse_wrong_lengths() {
    // `run` and `run_with` asserted their slice lengths (a panic on user input).
    let eq = rt::equation(|| rt::var("x") * rt::var("y")).unwrap();
    let p = Program::lower(eq.lane(LaneKind::Gradient), Schedule::Level);
    let mut out = [0.0; 2];
    assert_eq!(
        p.run(&[1.0], &mut out).unwrap_err().code(),
        Errc::ShortPoint
    );
    assert_eq!(
        p.run(&[1.0, 2.0, 3.0], &mut out).unwrap_err().code(),
        Errc::WrongArity
    );
    assert_eq!(
        p.run(&[1.0, 2.0], &mut out[..1]).unwrap_err().code(),
        Errc::WrongOutputLength
    );
    let mut called = false;
    assert!(p.run_with(&[1.0], |_, _| called = true).is_err());
    assert!(!called);
    p.run(&[3.0, 5.0], &mut out).unwrap();
    assert_eq!(out, [5.0, 3.0]);
}
