//! An equation of parameters only (no symbol): every call answers at its one point, with
//! no partial — a gradient of length 0, an empty Hessian — and a batch of bound values
//! has as many points as its output columns are long.
//!
//! The truths: the closed form evaluated in `f64` with the same operations (the same
//! bits), the parameter columns' batch against the bound per-point calls, and the
//! interpreter against the JIT.

use ddx::{rt, Backend, Errc, LaneKind, Options};

fn model() -> ddx::Equation {
    rt::equation(|| {
        let (k, c) = (rt::param("k"), rt::param("c"));
        k * k.sin() + c
    })
    .unwrap()
}

fn closed(k: f64, c: f64) -> f64 {
    k * k.sin() + c
}

#[test]
fn a_params_only_equation_answers_at_its_point() {
    for backend in [Backend::Interpret, Backend::Compile] {
        let mut eq = model();
        eq.set_options(Options::with_backend(backend));
        assert_eq!(eq.arity(), 0);
        assert_eq!(eq.parameters(), ["c", "k"]);
        let b = eq.with_params([0.25, 0.7]).unwrap();
        for kind in [LaneKind::Value, LaneKind::Jacobian, LaneKind::Hessian] {
            b.wait_for_kernel_of(kind);
        }
        let none: [f64; 0] = [];
        assert_eq!(
            b.evaluate(none).unwrap().to_bits(),
            closed(0.7, 0.25).to_bits()
        );
        assert!(b.gradient(none).unwrap().is_empty());
        assert!(b.jacobian(none).unwrap().is_empty());
        assert!(b.hessian(none).unwrap().is_empty());
        assert_eq!(b.jvp(none, none).unwrap(), [0.0]);
        assert!(b.vjp(&[2.0], none).unwrap().is_empty());
        assert!(b.hvp(none, none).unwrap().is_empty());
        // Unbound, refused as for any equation with parameters.
        assert_eq!(eq.evaluate(none).unwrap_err().code(), Errc::ShortPoint);

        // Bound: as many points as the output columns hold, each the per-point value.
        let mut f = [0.0; 5];
        b.evaluate_batch(&[], &mut [&mut f]).unwrap();
        assert!(f.iter().all(|v| v.to_bits() == closed(0.7, 0.25).to_bits()));
        let mut f = [0.0; 3];
        b.jacobian_batch(&[], &mut [&mut f], &mut []).unwrap();
        assert!(f.iter().all(|v| v.to_bits() == closed(0.7, 0.25).to_bits()));
        let (mut f, mut p) = ([0.0; 4], [0.0; 4]);
        b.vjp_batch(&[], &[&[2.0, 1.0, 0.0, -1.0]], &mut [&mut f], &mut [])
            .unwrap();
        b.jvp_batch(&[], &[], &mut [&mut f], &mut [&mut p]).unwrap();
        assert_eq!(p, [0.0; 4]);
        // Columns of different lengths are still refused.
        let mut f = [0.0; 3];
        let e = b
            .vjp_batch(&[], &[&[1.0; 2]], &mut [&mut f], &mut [])
            .unwrap_err();
        assert_eq!(e.code(), Errc::ColumnLength);

        // Parameter columns: one point per value, each the bound per-point call's bits.
        let ks = [0.1, -2.0, 3.5];
        let cs = [1.0];
        let mut f = [0.0; 3];
        eq.evaluate_batch(&[&cs, &ks], &mut [&mut f]).unwrap();
        for (i, &k) in ks.iter().enumerate() {
            let one = eq.with_params([1.0, k]).unwrap().evaluate(none).unwrap();
            assert_eq!(f[i].to_bits(), one.to_bits());
            assert_eq!(f[i].to_bits(), closed(k, 1.0).to_bits());
        }
    }
}
