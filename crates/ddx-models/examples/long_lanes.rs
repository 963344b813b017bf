//! Compile time and outcome of long lanes: the measurement behind `ddx::MAX_KERNEL_NODES`
//! and the JIT's stack-frame limit (BENCHMARKS.md, "Long lanes").
//!
//! `cargo run --release -p ddx-models --example long_lanes` (add `-- column` for the batch
//! kernels, `f64x2` columns). For each lane it makes a fresh equation twice — once with
//! the quick tier only, once with both tiers — and times `wait_for_kernel`; it prints the
//! lane's length, the times, and whether a kernel landed (else the reason), and when the
//! kernel was refined in the background (from the same start), if it was.
//!
//! `… --example long_lanes -- speed`: for long lanes of the trend families and the
//! thermodynamic Hessians, the time of one call of the lane (`lane_point_into`, best of
//! three rounds) through its compiled kernel (both tiers) and interpreted, and their ratio.

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

/// `Σᵢ (a·exp(−b·tᵢ) + c − yᵢ)²` over `terms` observations: a least-squares objective
/// (the one `crates/ddx/tests/long_lanes.rs` compiles).
fn least_squares(terms: usize) -> Equation {
    rt::equation(|| {
        let (a, b, c) = (rt::var("a"), rt::var("b"), rt::var("c"));
        let mut sum = a * 0.0;
        for i in 0..terms {
            let t = i as f64 / terms as f64;
            let y = 2.0 * (-0.7 * t).exp() + 0.1 + 1e-3 * (i % 7) as f64;
            let r = a * (-(b * t)).exp() + c - y;
            sum += r * r;
        }
        sum
    })
    .expect("the least-squares objective builds")
}

fn measure<S: Shape>(name: &str, make: &dyn Fn() -> Equation<S>, kind: LaneKind, column: bool) {
    let nodes = make().lane(kind).unwrap().graph.len();
    let mut cells = Vec::new();
    let mut refined = None;
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
        if level == OptLevel::Speed {
            // The refined kernel, if the first one is refined (see `LaneStatus::refined`).
            eq.wait_for_refined_kernel_of(kind);
            refined = eq
                .jit_status()
                .lane(kind)
                .is_some_and(|l| l.refined)
                .then(|| format!("{:.3} s", t.elapsed().as_secs_f64()));
        }
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
        "| {name} | {kind:?} | {nodes} | {} | {} | {} |",
        cells[0],
        cells[1],
        refined.as_deref().unwrap_or("—")
    );
}

/// Microseconds a call of lane `kind` of `eq` takes, cycling through 64 points: the best
/// of three rounds of about 0.2 s each.
fn per_call<S: Shape>(eq: &Equation<S>, kind: LaneKind, inputs: &[Vec<f64>]) -> f64 {
    let mut out = vec![0.0; eq.lane(kind).expect("built").outputs.len()];
    let once = |out: &mut [f64], k: usize| {
        eq.lane_point_into(kind, std::hint::black_box(&inputs[k % inputs.len()]), out)
            .expect("the lane runs");
    };
    let t = Instant::now();
    let mut calls = 0;
    while t.elapsed().as_secs_f64() < 0.05 || calls < 3 {
        once(&mut out, calls);
        calls += 1;
    }
    let calls = (calls * 4).max(3);
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let t = Instant::now();
        for k in 0..calls {
            once(&mut out, k);
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e6 / calls as f64);
    }
    best
}

/// `speed` mode: a lane's call compiled (both tiers) against interpreted, one row.
fn speed<S: Shape>(name: &str, make: &dyn Fn() -> Equation<S>, kind: LaneKind) {
    let mut eq = make();
    let (nodes, width) = {
        let lane = eq.lane(kind).expect("the lane builds");
        (lane.graph.len(), lane.symbols + lane.params + lane.seeds)
    };
    let inputs: Vec<Vec<f64>> = (0..64)
        .map(|k| {
            (0..width)
                .map(|j| 0.3 + 0.01 * ((k * 7 + j * 3) % 29) as f64)
                .collect()
        })
        .collect();
    eq.set_options(Options::with_backend(Backend::Compile));
    // A long lane's first kernel may be refined in the background: time the kernel the
    // lane ends with.
    let landed = eq.wait_for_refined_kernel_of(kind);
    let refined = eq.jit_status().lane(kind).is_some_and(|l| l.refined);
    // Lanes over 32 768 nodes (`ddx::MAX_KERNEL_NODES`'s doc) are long: compiled in
    // segments, or as one function of loops when they re-roll.
    let long = nodes > 1 << 15;
    let compiled = per_call(&eq, kind, &inputs);
    eq.set_options(Options::with_backend(Backend::Interpret));
    let interpreted = per_call(&eq, kind, &inputs);
    println!(
        "| {name} | {kind:?} | {nodes} | {} | {compiled:.1} | {interpreted:.1} | {:.2} |",
        match (landed, long, refined) {
            (false, ..) => "none (interpreted)",
            (true, true, false) => "long: segments or loops",
            (true, true, true) => "long, refined",
            (true, false, false) => "one function",
            (true, false, true) => "one function, refined",
        },
        compiled / interpreted
    );
}

fn main() {
    if std::env::args().any(|a| a == "speed") {
        println!("| lane | kind | nodes | kernel | compiled µs | interpreted µs | ratio |");
        println!("|---|---|---|---|---|---|---|");
        for n in [64, 96, 128, 192, 256] {
            let q = ddx_models::trend::Quadratic::new(n).expect("model");
            speed(
                &format!("quadratic {n}"),
                &|| ddx_models::equation(&q).expect("eq"),
                LaneKind::Gradient,
            );
        }
        for n in [100, 1000, 3000, 8000] {
            speed(&format!("chain {n}"), &|| chain(n), LaneKind::Gradient);
        }
        speed("chain 3000", &|| chain(3000), LaneKind::Hessian);
        for n in [64, 256, 1024, 2048, 4096] {
            speed(
                &format!("coupled sum {n}"),
                &|| ddx_models::trend::coupled_sum(n).expect("builds"),
                LaneKind::Gradient,
            );
        }
        for n in [1000, 5000] {
            for kind in [LaneKind::Gradient, LaneKind::Hessian] {
                speed(&format!("least squares {n}"), &|| least_squares(n), kind);
            }
        }
        let data = ThermoData::bundled().expect("bundled thermodynamic data");
        speed(
            "electrolyte-32",
            &|| ddx_models::equation(&Electrolyte::new(32).expect("model")).expect("eq"),
            LaneKind::Hessian,
        );
        speed(
            "Peng–Robinson-33",
            &|| ddx_models::equation(&PengRobinson::new(&data, 33).expect("model")).expect("eq"),
            LaneKind::Hessian,
        );
        speed(
            "UNIQUAC-32",
            &|| ddx_models::equation(&Uniquac::new(&data, 32).expect("model")).expect("eq"),
            LaneKind::Hessian,
        );
        return;
    }
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
    println!("| lane | kind | nodes | quick tier only | both tiers | refined kernel |");
    println!("|---|---|---|---|---|---|");
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
