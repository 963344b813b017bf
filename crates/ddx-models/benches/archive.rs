//! Saving and loading: build + compile versus load-with-code, on the compile benchmark's
//! model (`ddx_models::trend::coupled_sum`) at 64, 128 and 256 symbols.
//!
//! "build + compile": a fresh equation from the closure to its Jacobian kernel in place
//! (`wait_for_kernel(Jacobian)`, both tiers), as `benches/compile.rs` measures it.
//! "load": `Equation::load` of a file saved from such an equation (the model, its
//! Jacobian lane and kernel), until the Jacobian kernel answers: nothing compiles
//! (checked). "from_bytes": the same from bytes in memory (no
//! file read). Also the file's size per node of the lanes it holds, with and without code.
//!
//! Run: `cargo bench -p ddx-models --bench archive`. Each time is the median of 21 runs in
//! a row (min–max in brackets), after one warm-up, in one process (the compiler is set up
//! once per process, before anything is timed).

use ddx::{Backend, Equation, LaneKind, Options};
use std::time::Instant;

fn build(n: usize) -> Equation {
    ddx_models::trend::coupled_sum(n).expect("model builds")
}

fn compiled(n: usize, retain: bool) -> Equation {
    let mut eq = build(n);
    let mut o = Options::with_backend(Backend::Compile);
    o.retain_object = retain;
    eq.set_options(o);
    assert!(
        eq.wait_for_kernel_of(LaneKind::Jacobian),
        "{:?}",
        eq.jit_status()
    );
    eq
}

fn ms(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

fn stats(mut v: Vec<f64>) -> (f64, String) {
    v.sort_by(f64::total_cmp);
    let med = v[v.len() / 2];
    (med, format!("{med:.3} [{:.3}–{:.3}]", v[0], v[v.len() - 1]))
}

fn main() {
    let dir = std::env::temp_dir().join(format!("ddx-archive-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    compiled(8, true); // the compiler is set up once per process
    if std::env::args().any(|a| a == "--profile-load") {
        // For a profiler: loads only, at 256 symbols.
        let bytes = compiled(256, true).to_bytes().expect("encodes");
        for _ in 0..2000 {
            drop(Equation::<ddx::Scalar>::from_bytes(&bytes).expect("loads"));
        }
        return;
    }
    println!(
        "{:>7} {:>10} {:>22} {:>22} {:>22} {:>8} {:>10} {:>10} {:>11}",
        "symbols",
        "lane nodes",
        "build+compile ms",
        "load ms",
        "from_bytes ms",
        "ratio",
        "file bytes",
        "B/node",
        "B/node (no code)"
    );
    for n in [64, 128, 256] {
        let path = dir.join(format!("coupled-{n}.ddx"));
        let eq = compiled(n, true);
        eq.save(&path).expect("saves");
        let bytes = std::fs::read(&path).expect("reads");
        let plain = compiled(n, false).to_bytes().expect("encodes");
        // The file holds the model graph and the Jacobian lane.
        let nodes = eq.lane(LaneKind::Jacobian).unwrap().graph.len();
        // Each kind of run in a loop of its own (a load right after a compile would find
        // the caches full of the compiler's data, and measure that).
        let c: Vec<f64> = (0..22)
            .map(|_| ms(|| drop(compiled(n, true))))
            .skip(1)
            .collect();
        let l: Vec<f64> = (0..22)
            .map(|_| {
                ms(|| {
                    let eq = Equation::<ddx::Scalar>::load(&path).expect("loads");
                    assert!(eq.uses_kernel_of(LaneKind::Jacobian));
                    assert_eq!(eq.jit_status().compiled, 0);
                })
            })
            .skip(1)
            .collect();
        let b: Vec<f64> = (0..22)
            .map(|_| {
                ms(|| {
                    let eq = Equation::<ddx::Scalar>::from_bytes(&bytes).expect("loads");
                    assert!(eq.uses_kernel_of(LaneKind::Jacobian));
                })
            })
            .skip(1)
            .collect();
        let (cm, cs) = stats(c);
        let (lm, ls) = stats(l);
        let (_, bs) = stats(b);
        println!(
            "{n:>7} {nodes:>10} {cs:>22} {ls:>22} {bs:>22} {:>8.0} {:>10} {:>10.2} {:>11.2}",
            cm / lm,
            bytes.len(),
            bytes.len() as f64 / nodes as f64,
            plain.len() as f64 / nodes as f64,
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
