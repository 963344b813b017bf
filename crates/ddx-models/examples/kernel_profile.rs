//! A fixed workload for profiling the JIT's per-point gradient (issue 20): under
//! `valgrind --tool=callgrind` the instruction counts are repeatable on a shared machine.
//!
//! `kernel_profile <model> <arm> <calls> [cache_dir]`: `model` is `electrolyte-32`,
//! `chain-256` (`ddx_models::trend::Chain`), `uniquac-32`, `regular-32`, or `gauss1` (the
//! residual sum of squares of NIST's Gauss1, 250 observations); `arm` is `native`
//! (one `f64` evaluation) or `jit` (`gradient_into` through the kernel, after
//! `wait_for_kernel`). It cycles through 256 sample points. With `cache_dir`, the kernel is
//! also written there (header + machine code), for disassembling with
//! `objdump -D -b binary -mi386:x86-64 --start-address=84`.

use ddx::{Backend, LaneKind, Options};
use ddx_models::nist;
use ddx_models::thermo::{Electrolyte, RegularSolution, ThermoData, Uniquac};
use ddx_models::trend::Chain;
use ddx_models::BenchModel;
use std::hint::black_box;

fn run<M: BenchModel>(model: &M, arm: &str, calls: usize, cache: Option<String>) {
    let n = model.arity();
    let points = ddx_models::sample_points(model, 7, 256);
    match arm {
        "native" => {
            let mut s = 0.0;
            for k in 0..calls {
                let x = &points[(k % 256) * n..][..n];
                s += model.eval(black_box(x));
            }
            println!("sum {s}");
        }
        "jit" => {
            let mut eq = ddx_models::equation(model).expect("builds");
            let mut o = Options::with_backend(Backend::Compile);
            o.cache_dir = cache.map(Into::into);
            eq.set_options(o);
            assert!(
                eq.wait_for_kernel_of(LaneKind::Gradient),
                "{:?}",
                eq.jit_status()
            );
            eprintln!(
                "gradient lane: {} nodes",
                eq.lane(LaneKind::Gradient).unwrap().graph.len()
            );
            let mut g = vec![0.0; n];
            let mut s = 0.0;
            for k in 0..calls {
                let x = &points[(k % 256) * n..][..n];
                eq.gradient_into(black_box(x), &mut g).expect("fits");
                s += g[0];
            }
            println!("sum {s}");
        }
        other => panic!("unknown arm {other}"),
    }
}

/// Gauss1's RSS: `native` is the model's own prediction summed over the observations,
/// `jit` the equation's gradient, at 64 points scaled around the certified values (as the
/// `gradient` bench).
fn gauss1(arm: &str, calls: usize) {
    let ds = nist::load(&nist::data_dir().join("Gauss1.dat")).expect("Gauss1 loads");
    let fam = ds.family().expect("known model");
    let base = ds.certified();
    let points: Vec<Vec<f64>> = (0..64)
        .map(|k| {
            base.iter()
                .map(|v| v * (1.0 + 1e-3 * (k as f64 - 32.0) / 32.0))
                .collect()
        })
        .collect();
    let mut s = 0.0;
    match arm {
        "native" => {
            for k in 0..calls {
                let b = black_box(&points[k % 64][..]);
                s += ds.observations.iter().fold(0.0, |s, o| {
                    let r = o.y - fam.predict(b, &o.x);
                    s + r * r
                });
            }
        }
        "jit" => {
            let mut eq = ds.rss_equation().expect("Gauss1 builds");
            eq.set_options(Options::with_backend(Backend::Compile));
            assert!(
                eq.wait_for_kernel_of(LaneKind::Gradient),
                "{:?}",
                eq.jit_status()
            );
            let mut g = vec![0.0; base.len()];
            for k in 0..calls {
                eq.gradient_into(black_box(&points[k % 64][..]), &mut g)
                    .expect("fits");
                s += g[0];
            }
        }
        other => panic!("unknown arm {other}"),
    }
    println!("sum {s}");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (model, arm) = (args[1].as_str(), args[2].as_str());
    let calls: usize = args[3].parse().expect("a call count");
    let cache = args.get(4).cloned();
    let data = || ThermoData::bundled().expect("data/thermo");
    match model {
        "electrolyte-32" => run(&Electrolyte::new(32).expect("n"), arm, calls, cache),
        "chain-256" => run(&Chain::new(256).expect("n"), arm, calls, cache),
        "uniquac-32" => run(&Uniquac::new(&data(), 32).expect("n"), arm, calls, cache),
        "regular-32" => run(&RegularSolution::new(32), arm, calls, cache),
        "gauss1" => gauss1(arm, calls),
        other => panic!("unknown model {other}"),
    }
}
