//! The model families on the OpenCL device (`Backend::Device`): gradient and Jacobian
//! batches of every family — regular solution, UNIQUAC, Peng–Robinson, the electrolyte,
//! the coverage model of every operation, and NIST StRD's least-squares objectives —
//! against the interpreter. The families made of arithmetic, `sqrt`, `exp` and `log` alone
//! (regular solution, UNIQUAC, Peng–Robinson) agree to the bit, since the device computes
//! ddx's own `exp` and `log`; the others hold `pow`, `sin` …, which are the device's own
//! within a few ULP (`ddx`'s `src/device/tests.rs` bounds each one node by node), so they
//! agree closely rather than to the bit. Skipped, saying so, where no OpenCL device
//! answers.

use ddx::{Backend, Equation, Errc, LaneKind, Options, Shape};
use ddx_models::thermo::{Electrolyte, PengRobinson, RegularSolution, ThermoData, Uniquac};
use ddx_models::{coverage::Coverage, nist, BenchModel};

/// `eq` under `Backend::Device` with lane `kind` built, or `None` where no device answers.
fn on_device<S: Shape>(eq: &Equation<S>, kind: LaneKind) -> Option<Equation<S>> {
    let mut d = eq.clone();
    d.set_options(Options::with_backend(Backend::Device));
    if d.wait_for_kernel_of(kind) {
        return Some(d);
    }
    match d.device_status() {
        Some(Err(e)) if e.code() == Errc::NoDevice => {
            eprintln!("skipped: {e}");
            None
        }
        other => panic!("the device should build the {kind:?} lane: {other:?}"),
    }
}

/// The value and Jacobian columns of a batch of `eq` over `xs`.
fn jacobian_batch<S: Shape>(eq: &Equation<S>, xs: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let len = xs[0].len();
    let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let mut out = vec![vec![0.0; len]; eq.value_columns() + eq.jacobian_columns()];
    let (v, p) = out.split_at_mut(eq.value_columns());
    let mut v: Vec<&mut [f64]> = v.iter_mut().map(Vec::as_mut_slice).collect();
    let mut p: Vec<&mut [f64]> = p.iter_mut().map(Vec::as_mut_slice).collect();
    eq.jacobian_batch(&cols, &mut v, &mut p)
        .expect("columns fit");
    out
}

/// Every value within `rel` of the interpreter's, relative to its column's largest (equal,
/// or both NaN, where `rel` is 0).
fn close(name: &str, got: &[Vec<f64>], want: &[Vec<f64>], rel: f64) {
    for (j, (g, w)) in got.iter().zip(want).enumerate() {
        let scale = w.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
        for (k, (a, b)) in g.iter().zip(w).enumerate() {
            assert!(
                (a - b).abs() <= rel * scale || (a.is_nan() && b.is_nan()),
                "{name}: column {j}, point {k}: device {a:e}, interpreter {b:e}"
            );
        }
    }
}

/// Checks `eq` on the device over `len` points from `flat` (point-major, `n` each).
fn check<S: Shape>(name: &str, eq: &Equation<S>, flat: &[f64], rel: f64) {
    let n = eq.arity();
    let xs: Vec<Vec<f64>> = (0..n)
        .map(|j| flat.chunks_exact(n).map(|p| p[j]).collect())
        .collect();
    let Some(d) = on_device(eq, LaneKind::Jacobian) else {
        return;
    };
    close(
        name,
        &jacobian_batch(&d, &xs),
        &jacobian_batch(eq, &xs),
        rel,
    );
}

fn family<M: BenchModel>(name: &str, m: &M, rel: f64) {
    let eq = ddx_models::equation(m).expect("builds");
    // An odd batch length: the last work-group is partial.
    check(name, &eq, &ddx_models::sample_points(m, 7, 203), rel);
}

#[test]
fn the_thermodynamic_families_of_exp_and_log_agree_to_the_bit() {
    let data = ThermoData::bundled().expect("the thermo tables load");
    family("regular-4", &RegularSolution::new(4), 0.0);
    family("regular-8", &RegularSolution::new(8), 0.0);
    family(
        "uniquac-16",
        &Uniquac::new(&data, 16).expect("16 components"),
        0.0,
    );
    family(
        "peng-robinson-4",
        &PengRobinson::new(&data, 4).expect("4 components"),
        0.0,
    );
}

#[test]
fn the_electrolyte_agrees_closely() {
    // `powf(1.5)` in its Debye–Hückel term is the device's `pow`.
    family(
        "electrolyte-8",
        &Electrolyte::new(8).expect("8 species"),
        1e-10,
    );
}

#[test]
fn the_coverage_model_of_every_operation_agrees_closely() {
    family("coverage-4", &Coverage::new(4).expect("builds"), 1e-10);
}

#[test]
fn nist_objectives_agree_closely() {
    let sets = nist::load_all(&nist::data_dir()).expect("the NIST data loads");
    for set in sets.iter().take(3) {
        let eq = set.rss_equation().expect("builds");
        let start = set.certified();
        let flat: Vec<f64> = (0..65)
            .flat_map(|k| {
                start
                    .iter()
                    .map(move |v| v * (1.0 + (k as f64 - 32.0) * 1e-4))
            })
            .collect();
        check(&set.name, &eq, &flat, 1e-9);
    }
}
