//! Compile time and outcome of long lanes: the measurement behind `ddx::MAX_KERNEL_NODES`
//! and the JIT's stack-frame limit (BENCHMARKS.md, "Long lanes").
//!
//! `cargo run --release -p ddx-models --example long_lanes` (add `-- column` for the batch
//! kernels, `f64x2` columns). For each lane it makes a fresh equation twice — once with
//! the quick tier only, once with both tiers — and times `wait_for_kernel`; it prints the
//! lane's length, the times, and whether a kernel landed (else the reason).

use ddx::{rt, Backend, Equation, LaneKind, OptLevel, Options, Shape};
use ddx_models::thermo::{Electrolyte, PengRobinson, ThermoData, Uniquac};
use std::time::Instant;

/// A named way to make a fresh equation.
type Maker<'a> = (&'a str, Box<dyn Fn() -> Equation + 'a>);

/// A long reverse chain: every step's adjoint needs values from the whole forward sweep.
fn chain(n: usize) -> Equation {
    rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        let mut y = a;
        for k in 0..n {
            y = (y * b).sin() + y * (0.5 + k as f64 * 1e-6);
        }
        y
    })
    .expect("the chain builds")
}

fn measure<S: Shape>(name: &str, make: &dyn Fn() -> Equation<S>, kind: LaneKind, column: bool) {
    let nodes = make().lane(kind).unwrap().graph.len();
    let mut cells = Vec::new();
    for level in [OptLevel::Off, OptLevel::Speed] {
        let mut eq = make();
        eq.lane(kind).unwrap(); // the lane's construction is not compile time
        let mut o = Options::with_backend(Backend::Compile);
        o.codegen.opt_level = level;
        if column {
            o.points = 1 << 20;
        }
        let t = Instant::now();
        eq.set_options(o);
        let landed = eq.wait_for_kernel_of(kind);
        let secs = t.elapsed().as_secs_f64();
        let why = eq.jit_status().error.map(|e| e.to_string());
        cells.push(match (landed, why) {
            (true, _) => format!("{secs:.3} s"),
            (false, Some(why)) if why.contains("stack frame") => {
                "interpreted (frame over 1 MiB)".to_string()
            }
            (false, Some(why)) => format!("interpreted ({why})"),
            (false, None) => "interpreted".to_string(),
        });
    }
    println!(
        "| {name} | {kind:?} | {nodes} | {} | {} |",
        cells[0], cells[1]
    );
}

fn main() {
    let column = std::env::args().any(|a| a == "column");
    let data = ThermoData::bundled().expect("bundled thermodynamic data");
    let nist = ddx_models::nist::load_all(&ddx_models::nist::data_dir()).expect("NIST data");
    let gauss1 = nist
        .into_iter()
        .find(|d| d.name == "Gauss1")
        .expect("Gauss1 is bundled");
    println!(
        "{} kernels",
        if column { "column (f64x2)" } else { "point" }
    );
    println!("| lane | kind | nodes | quick tier only | both tiers |");
    println!("|---|---|---|---|---|");
    for n in [1000, 1333, 1366, 3000, 5461, 8000] {
        measure(
            &format!("chain {n}"),
            &|| chain(n),
            LaneKind::Gradient,
            column,
        );
    }
    for n in [1024, 2048, 4096] {
        measure(
            &format!("coupled sum {n}"),
            &|| ddx_models::trend::coupled_sum(n).expect("builds"),
            LaneKind::Gradient,
            column,
        );
    }
    measure(
        "Gauss1 RSS",
        &|| gauss1.rss_equation().expect("builds"),
        LaneKind::Jacobian,
        column,
    );
    let thermo: [Maker; 3] = [
        (
            "electrolyte-32",
            Box::new(|| ddx_models::equation(&Electrolyte::new(32).expect("model")).expect("eq")),
        ),
        (
            "Peng–Robinson-33",
            Box::new(|| {
                ddx_models::equation(&PengRobinson::new(&data, 33).expect("model")).expect("eq")
            }),
        ),
        (
            "UNIQUAC-32",
            Box::new(|| {
                ddx_models::equation(&Uniquac::new(&data, 32).expect("model")).expect("eq")
            }),
        ),
    ];
    for (name, make) in &thermo {
        measure(name, make.as_ref(), LaneKind::Hessian, column);
    }
}
