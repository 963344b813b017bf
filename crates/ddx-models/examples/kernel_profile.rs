//! A fixed workload for profiling the JIT's per-point gradient (issue 20): under
//! `valgrind --tool=callgrind` the instruction counts are repeatable on a shared machine.
//!
//! `kernel_profile <model> <arm> <calls> [cache_dir]`: `model` is `electrolyte-16`/`-32`,
//! `chain-<n>` (`ddx_models::trend::Chain`), `quadratic-<n>` (`trend::Quadratic`),
//! `uniquac-16`/`-32`, `regular-<n>`, `electrolyte-<n>`, `peng-robinson-17`/`-33`, `coverage-16`, `gauss1` (NIST Gauss1's residual sum of
//! squares) or `nist-<dataset>` (any NIST StRD dataset's, `nist-ENSO`); `arm` is `native` (one `f64` evaluation), `jit` (`gradient_into` through the
//! kernel, after `wait_for_refined_kernel_of`: the optimised tier's), `interp` (`gradient_into`, interpreted), `batch`
//! (`gradient_batch` over 1024 points a call, the block interpreter, on one thread),
//! `batch-jit` (the same under `Backend::Compile`, `points = 1024`: the column kernel, or
//! the block interpreter where the first batches timed it faster; printed), `emit-c`
//! (writes the gradient lane as C, `grad.c`, the points, `points.bin`, and their
//! interpreted gradients, `grads.bin`, into `cache_dir`: `compare/c_tier.sh`) or `stats`
//! (the interpreted gradient program's instruction mix, printed; `calls` unused). It cycles
//! through 256 sample points. Every timed arm prints its time per point (per call of one
//! point) on stderr. With `cache_dir`, the kernel is
//! also written there (header + machine code), for disassembling with
//! `objdump -D -b binary -mi386:x86-64 --start-address=84`.

use ddx::interp::{Code, Program, Schedule};
use ddx::{Backend, Equation, LaneKind, Options, Scalar};
use ddx_models::coverage::Coverage;
use ddx_models::nist;
use ddx_models::thermo::{Electrolyte, PengRobinson, RegularSolution, ThermoData, Uniquac};
use ddx_models::trend::{Chain, Quadratic};
use ddx_models::BenchModel;
use std::hint::black_box;

fn run<M: BenchModel>(model: &M, arm: &str, calls: usize, cache: Option<String>) {
    let n = model.arity();
    let points = ddx_models::sample_points(model, 7, 256);
    let eq = || ddx_models::equation(model).expect("builds");
    run_with(|x| model.eval(x), eq, n, &points, arm, calls, cache);
}

/// `calls` gradients of `eq` cycling through `points` (`n` coordinates each); prints a sum
/// of their first partials so that none is optimised away.
fn gradients(eq: &Equation<Scalar>, n: usize, points: &[f64], calls: usize) {
    let count = points.len() / n;
    let mut g = vec![0.0; n];
    let mut s = 0.0;
    let t = std::time::Instant::now();
    for k in 0..calls {
        let x = &points[(k % count) * n..][..n];
        eq.gradient_into(black_box(x), &mut g).expect("fits");
        s += g[0];
    }
    let ns = t.elapsed().as_nanos() as f64 / calls.max(1) as f64;
    println!("sum {s}");
    eprintln!("{ns:.2} ns a point");
}

/// Points in one call of the `batch` arms, as the compare harness's batch arms.
const BATCH: usize = 1024;

/// `calls` batch gradients of `eq` over [`BATCH`] points (`points`, `n` coordinates each,
/// tiled), on this thread (a one-thread rayon pool, as the compare harness runs them);
/// after the JIT's column kernel where `jit`. Prints a sum of first partials, and the
/// time per point on stderr.
fn batches(eq: &Equation<Scalar>, n: usize, points: &[f64], calls: usize, jit: bool) {
    let count = points.len() / n;
    let xs: Vec<Vec<f64>> = (0..n)
        .map(|j| (0..BATCH).map(|k| points[(k % count) * n + j]).collect())
        .collect();
    let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let mut out = vec![vec![0.0; BATCH]; n];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool");
    pool.install(|| {
        let mut parts: Vec<&mut [f64]> = out.iter_mut().map(Vec::as_mut_slice).collect();
        eq.gradient_batch(&cols, &mut parts).expect("fits");
        if jit {
            assert!(
                eq.wait_for_kernel_of(LaneKind::Gradient),
                "{:?}",
                eq.jit_status()
            );
            // Two more batches: the trials that choose between the kernel and the block
            // interpreter (three of 256 points each) are all in before the timing.
            eq.gradient_batch(&cols, &mut parts).expect("fits");
            eq.gradient_batch(&cols, &mut parts).expect("fits");
            let lane = eq.jit_status().lanes.into_iter();
            let engine = lane
                .filter(|l| l.kind == LaneKind::Gradient)
                .find_map(|l| l.batch_engine);
            eprintln!("batches run on: {engine:?}");
        }
        let mut s = 0.0;
        let t = std::time::Instant::now();
        for _ in 0..calls {
            eq.gradient_batch(black_box(&cols), &mut parts)
                .expect("fits");
            s += parts[0][0];
        }
        let ns = t.elapsed().as_nanos() as f64 / (calls * BATCH).max(1) as f64;
        println!("sum {s}");
        eprintln!("{ns:.2} ns a point");
    });
}

/// The arms over `native` (one evaluation) and the equation `eq` makes, at `points`
/// (`n` coordinates each).
fn run_with(
    native: impl Fn(&[f64]) -> f64,
    eq: impl Fn() -> Equation<Scalar>,
    n: usize,
    points: &[f64],
    arm: &str,
    calls: usize,
    cache: Option<String>,
) {
    let count = points.len() / n;
    match arm {
        "native" => {
            let mut s = 0.0;
            let t = std::time::Instant::now();
            for k in 0..calls {
                let x = &points[(k % count) * n..][..n];
                s += native(black_box(x));
            }
            let ns = t.elapsed().as_nanos() as f64 / calls.max(1) as f64;
            println!("sum {s}");
            eprintln!("{ns:.2} ns a point");
        }
        "interp" => {
            let eq = eq();
            let mut g = vec![0.0; n];
            eq.gradient_into(&points[..n], &mut g).expect("fits");
            gradients(&eq, n, points, calls);
        }
        "batch" | "batch-jit" => {
            let mut eq = eq();
            if arm == "batch-jit" {
                let mut o = Options::with_backend(Backend::Compile);
                o.points = BATCH;
                eq.set_options(o);
            }
            batches(&eq, n, points, calls, arm == "batch-jit");
        }
        "emit-c" => {
            // The gradient lane as C (`Equation::to_c_source`), the sample points and the
            // interpreter's gradient of each, for `compare/c_tier.sh`.
            let eq = eq();
            let dir = cache.expect("emit-c writes into the directory given after the calls");
            let write = |file: &str, bytes: &[u8]| {
                std::fs::write(format!("{dir}/{file}"), bytes).expect("a writable directory")
            };
            let src = eq
                .to_c_source("grad", LaneKind::Gradient)
                .expect("C source");
            write("grad.c", src.as_bytes());
            let le = |v: &[f64]| v.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
            write("points.bin", &le(points));
            let mut all = vec![0.0; count * n];
            for (x, g) in points.chunks_exact(n).zip(all.chunks_exact_mut(n)) {
                eq.gradient_into(x, g).expect("fits");
            }
            write("grads.bin", &le(&all));
            println!("{n} symbols, {count} points");
        }
        "stats" => {
            let eq = eq();
            let lane = eq.lane(LaneKind::Gradient).expect("lane");
            let block = Program::lower(lane, Schedule::Graph).expect("a lane ddx built");
            println!(
                "block program: instructions {} runs {} slots {} ({} constants), {} points a block",
                block.len(),
                block.runs(),
                block.slot_count(),
                block.constant_count(),
                block.block_size()
            );
            stats(&Program::lower(lane, Schedule::Level).expect("a lane ddx built"))
        }
        "jit" => {
            let mut eq = eq();
            let mut o = Options::with_backend(Backend::Compile);
            o.cache_dir = cache.map(Into::into);
            eq.set_options(o);
            assert!(
                eq.wait_for_refined_kernel_of(LaneKind::Gradient),
                "{:?}",
                eq.jit_status()
            );
            eprintln!(
                "gradient lane: {} nodes",
                eq.lane(LaneKind::Gradient).unwrap().graph.len()
            );
            gradients(&eq, n, points, calls);
        }
        other => panic!("unknown arm {other}"),
    }
}

/// Prints a program's instruction mix: instructions and runs by code, run lengths, what
/// kind of value each operand is, and producer → consumer pairs (with the producer's use
/// count), the candidates for superinstructions.
fn stats(p: &Program) {
    use std::collections::HashMap;
    let instrs = p.instructions();
    let runs = p.run_list();
    println!(
        "instructions {} runs {} ({:.2} a run), slots {}",
        instrs.len(),
        runs.len(),
        instrs.len() as f64 / runs.len().max(1) as f64,
        p.slot_count()
    );
    let mut by_code: HashMap<Code, (usize, usize)> = HashMap::new();
    let mut lengths: HashMap<u32, usize> = HashMap::new();
    for r in runs {
        let e = by_code.entry(r.code).or_default();
        e.0 += (r.end - r.start) as usize;
        e.1 += 1;
        *lengths.entry((r.end - r.start).min(9)).or_default() += 1;
    }
    let mut v: Vec<_> = by_code.into_iter().collect();
    v.sort_by_key(|(_, (i, _))| std::cmp::Reverse(*i));
    for (code, (i, r)) in &v {
        println!("  {code:?}: {i} instructions in {r} runs");
    }
    if std::env::var_os("DDX_RUNS").is_some() {
        let seq: Vec<String> = runs
            .iter()
            .map(|r| format!("{:?}x{}", r.code, r.end - r.start))
            .collect();
        println!("  runs: {}", seq.join(" "));
    }
    let mut l: Vec<_> = lengths.into_iter().collect();
    l.sort();
    println!("  run lengths (9 = 9 or more): {l:?}");
    // Value ids: the instruction that last wrote each slot (`None`: constant or input).
    let mut writer: Vec<Option<usize>> = vec![None; p.slot_count()];
    let mut code_of = vec![Code::Op(ddx::ir::Op::Add); instrs.len()];
    let mut uses = vec![0usize; instrs.len()];
    let mut reads: Vec<(usize, usize, Option<usize>)> = Vec::new(); // (consumer, k, producer)
    for r in runs {
        for k in r.start as usize..r.end as usize {
            code_of[k] = r.code;
            let i = &instrs[k];
            let arity = match r.code {
                Code::CallN => 1,
                c => c.arity(),
            };
            for (j, &a) in i.args[..arity].iter().enumerate() {
                let w = writer[a as usize];
                if let Some(w) = w {
                    uses[w] += 1;
                }
                reads.push((k, j, w));
            }
            writer[i.dst as usize] = Some(k);
        }
    }
    let mut pairs: HashMap<(String, String), usize> = HashMap::new();
    let mut forms: HashMap<(String, String), usize> = HashMap::new();
    for &(k, j, w) in &reads {
        let consumer = format!("{:?}[{j}]", code_of[k]);
        match w {
            Some(w) => {
                let producer = format!("{:?} (uses {})", code_of[w], uses[w].min(3));
                *pairs.entry((producer, consumer.clone())).or_default() += 1;
                *forms.entry((consumer, "temp".into())).or_default() += 1;
            }
            None => {
                *forms.entry((consumer, "const/input".into())).or_default() += 1;
            }
        }
    }
    let mut v: Vec<_> = pairs.into_iter().collect();
    v.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
    println!("  producer -> consumer operand (top 25):");
    for ((a, b), c) in v.iter().take(25) {
        println!("    {c:6}  {a} -> {b}");
    }
    let mut v: Vec<_> = forms.into_iter().collect();
    v.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
    println!("  operand kinds (top 20):");
    for ((a, b), c) in v.iter().take(20) {
        println!("    {c:6}  {a} {b}");
    }
    dot_terms(p);
}

/// The terms of the program's chains ([`Code::Dot`], [`Code::DotConst`], [`Code::DotSub`],
/// [`Code::SubSum`]): how many, how long, how many chains a run, and what kind of slot
/// each factor is (constant, input, temporary; a `DotConst`'s weight is `weight`, a
/// `SubSum`'s single term `-`).
fn dot_terms(p: &Program) {
    use std::collections::HashMap;
    let (consts, inputs) = (p.constant_count(), p.inputs());
    let kind = |slot: u32| match slot as usize {
        s if s < consts => "const",
        s if s < consts + inputs => "input",
        _ => "temp",
    };
    for code in [Code::Dot, Code::DotConst, Code::DotSub, Code::SubSum] {
        let mut kinds: HashMap<(&str, &str), usize> = HashMap::new();
        let (mut chains, mut terms, mut per_run, mut lengths) = (0, 0, Vec::new(), Vec::new());
        for r in p.run_list().iter().filter(|r| r.code == code) {
            per_run.push(r.end - r.start);
            for k in r.start as usize..r.end as usize {
                chains += 1;
                let list: Vec<u32> = p.terms(r, k).collect();
                if matches!(code, Code::DotConst | Code::SubSum) {
                    terms += list.len();
                    lengths.push(list.len());
                    let other = if code == Code::SubSum { "-" } else { "weight" };
                    for &x in &list {
                        *kinds.entry((kind(x), other)).or_default() += 1;
                    }
                    continue;
                }
                lengths.push(list.len() / 2);
                for u in list.chunks_exact(2) {
                    terms += 1;
                    *kinds.entry((kind(u[0]), kind(u[1]))).or_default() += 1;
                }
            }
        }
        if chains == 0 {
            continue;
        }
        per_run.sort_unstable();
        lengths.sort_unstable();
        println!(
            "  {code:?}: {chains} chains, {terms} terms; chains a run {per_run:?}; terms a chain {lengths:?}"
        );
        let mut v: Vec<_> = kinds.into_iter().collect();
        v.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
        for ((a, b), c) in v {
            println!("    {c:6}  {a} * {b}");
        }
    }
}

/// A NIST dataset's residual sum of squares (`name`, as its file is named: `Gauss1`, as
/// `--bench gradient` times it, or `ENSO` ...).
fn nist_rss(name: &str, arm: &str, calls: usize, cache: Option<String>) {
    let ds = nist::load(&nist::data_dir().join(format!("{name}.dat"))).expect("the dataset loads");
    let fam = ds.family().expect("known model");
    let base = ds.certified();
    let n = base.len();
    let mut points = Vec::with_capacity(64 * n);
    for k in 0..64 {
        points.extend(
            base.iter()
                .map(|b| b * (1.0 + 1e-3 * (k as f64 - 32.0) / 32.0)),
        );
    }
    let native = |b: &[f64]| {
        ds.observations.iter().fold(0.0, |s, o| {
            let r = o.y - fam.predict(b, &o.x);
            s + r * r
        })
    };
    let eq = || ds.rss_equation().expect("the model builds");
    run_with(native, eq, n, &points, arm, calls, cache);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (model, arm) = (args[1].as_str(), args[2].as_str());
    let calls: usize = args[3].parse().expect("a call count");
    let cache = args.get(4).cloned();
    let data = || ThermoData::bundled().expect("data/thermo");
    match model {
        "electrolyte-16" => run(&Electrolyte::new(16).expect("n"), arm, calls, cache),
        "electrolyte-32" => run(&Electrolyte::new(32).expect("n"), arm, calls, cache),
        "uniquac-16" => run(&Uniquac::new(&data(), 16).expect("n"), arm, calls, cache),
        "regular-16" => run(&RegularSolution::new(16), arm, calls, cache),
        "peng-robinson-17" => run(
            &PengRobinson::new(&data(), 17).expect("n"),
            arm,
            calls,
            cache,
        ),
        "peng-robinson-33" => run(
            &PengRobinson::new(&data(), 33).expect("n"),
            arm,
            calls,
            cache,
        ),
        "coverage-16" => run(&Coverage::new(16).expect("n"), arm, calls, cache),
        "gauss1" => nist_rss("Gauss1", arm, calls, cache),
        "uniquac-32" => run(&Uniquac::new(&data(), 32).expect("n"), arm, calls, cache),
        "regular-32" => run(&RegularSolution::new(32), arm, calls, cache),
        other => {
            let size = |prefix: &str| other.strip_prefix(prefix)?.parse::<usize>().ok();
            if let Some(n) = size("chain-") {
                run(&Chain::new(n).expect("n"), arm, calls, cache)
            } else if let Some(name) = other.strip_prefix("nist-") {
                nist_rss(name, arm, calls, cache)
            } else if let Some(n) = size("quadratic-") {
                run(&Quadratic::new(n).expect("n"), arm, calls, cache)
            } else if let Some(n) = size("regular-") {
                run(&RegularSolution::new(n), arm, calls, cache)
            } else if let Some(n) = size("electrolyte-") {
                run(&Electrolyte::new(n).expect("n"), arm, calls, cache)
            } else {
                panic!("unknown model {other}")
            }
        }
    }
}
