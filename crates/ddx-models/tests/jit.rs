//! Compiled kernels on real models: every NIST StRD dataset's residual sum of squares,
//! its gradient and Jacobian lanes as point and as `f64x2` column kernels, per point and
//! in a batch of odd length, against the interpreter bit for bit (any NaN matching any
//! NaN).

use ddx::{Backend, Equation, LaneKind, Options, Shape};
use ddx_models::nist;

fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// Every per-point and batch Jacobian answer of `jit` matches `interp` at `points`.
fn check<S: Shape>(name: &str, interp: &Equation<S>, jit: &Equation<S>, points: &[Vec<f64>]) {
    for p in points {
        assert!(
            same(
                &interp.gradient(p).expect("fits"),
                &jit.gradient(p).expect("fits")
            ),
            "{name} gradient at {p:?}"
        );
        assert!(
            same(
                &interp.jacobian(p).expect("fits"),
                &jit.jacobian(p).expect("fits")
            ),
            "{name} jacobian at {p:?}"
        );
    }
    let len = points.len();
    let xs: Vec<Vec<f64>> = (0..interp.arity())
        .map(|j| points.iter().map(|p| p[j]).collect())
        .collect();
    let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let run = |eq: &Equation<S>| {
        let mut out = vec![vec![0.0; len]; eq.value_columns() + eq.jacobian_columns()];
        let (v, g) = out.split_at_mut(eq.value_columns());
        let mut v: Vec<&mut [f64]> = v.iter_mut().map(Vec::as_mut_slice).collect();
        let mut g: Vec<&mut [f64]> = g.iter_mut().map(Vec::as_mut_slice).collect();
        eq.jacobian_batch(&cols, &mut v, &mut g)
            .expect("columns fit");
        out
    };
    for (a, b) in run(interp).iter().zip(&run(jit)) {
        assert!(same(a, b), "{name} batch");
    }
}

#[test]
fn every_nist_model_compiles_to_the_interpreters_bits() {
    for ds in nist::load_all(&nist::data_dir()).expect("the datasets load") {
        // 1, 2, 3 points and then 7: per point, and batches that leave a remainder.
        let points: Vec<Vec<f64>> = (0..7)
            .map(|k| {
                ds.parameters
                    .iter()
                    .map(|p| if k % 2 == 0 { p.start1 } else { p.start2 } * (1.0 + 0.01 * k as f64))
                    .collect()
            })
            .collect();
        let interp = ds.rss_equation().expect("builds");
        for points_hint in [1, 4096] {
            let mut jit = ds.rss_equation().expect("builds");
            let mut o = Options::with_backend(Backend::Compile);
            o.points = points_hint;
            jit.set_options(o);
            for kind in [LaneKind::Gradient, LaneKind::Jacobian] {
                assert!(
                    jit.wait_for_kernel_of(kind),
                    "{}: {:?}",
                    ds.name,
                    jit.jit_status()
                );
            }
            check(&ds.name, &interp, &jit, &points);
        }
    }
}

/// `model`'s equation compiled for per-point calls and for batches agrees with the
/// interpreter at its sample points.
fn check_family<M: ddx_models::BenchModel>(model: &M) {
    let name = format!("{} n={}", model.family(), model.arity());
    let interp = ddx_models::equation(model).expect("builds");
    let n = model.arity();
    let pts: Vec<Vec<f64>> = ddx_models::sample_points(model, 7, 7)
        .chunks_exact(n)
        .map(<[f64]>::to_vec)
        .collect();
    for points_hint in [1, 4096] {
        let mut jit = ddx_models::equation(model).expect("builds");
        let mut o = Options::with_backend(Backend::Compile);
        o.points = points_hint;
        jit.set_options(o);
        for kind in [LaneKind::Gradient, LaneKind::Jacobian] {
            assert!(
                jit.wait_for_kernel_of(kind),
                "{name}: {:?}",
                jit.jit_status()
            );
        }
        check(&name, &interp, &jit, &pts);
    }
}

#[test]
fn the_benchmark_families_compile_to_the_interpreters_bits() {
    use ddx_models::coverage::Coverage;
    use ddx_models::thermo::{Electrolyte, PengRobinson, RegularSolution, ThermoData, Uniquac};
    use ddx_models::trend::{Chain, Quadratic};
    let data = ThermoData::bundled().expect("thermo tables load");
    check_family(&RegularSolution::new(16));
    check_family(&Uniquac::new(&data, 16).expect("size exists"));
    check_family(&PengRobinson::new(&data, 17).expect("size exists"));
    check_family(&Electrolyte::new(16).expect("size exists"));
    check_family(&Coverage::new(16).expect("size exists"));
    check_family(&Chain::new(16).expect("size exists"));
    check_family(&Quadratic::new(16).expect("size exists"));
}

/// The larger sizes, whose gradient kernels run dot loops among their pairs (issue 20):
/// over inputs (the regular solution, the quadratic form), over values stored to the
/// scratch (UNIQUAC, Peng–Robinson), and both (the electrolyte).
#[test]
fn the_benchmark_families_with_dot_loops_compile_to_the_interpreters_bits() {
    use ddx_models::thermo::{Electrolyte, PengRobinson, RegularSolution, ThermoData, Uniquac};
    use ddx_models::trend::Quadratic;
    let data = ThermoData::bundled().expect("thermo tables load");
    check_family(&RegularSolution::new(32));
    check_family(&Uniquac::new(&data, 32).expect("size exists"));
    check_family(&PengRobinson::new(&data, 33).expect("size exists"));
    check_family(&Electrolyte::new(32).expect("size exists"));
    check_family(&Quadratic::new(48).expect("size exists"));
}
