//! `compare`: measures ddx's per-point gradient against native code, `num-dual`, CasADi and
//! JAX on the benchmark models of `ddx-models`, and writes the table into `BENCHMARKS.md`.
//!
//! Every cell is an arm's time for one gradient divided by the time of one native `f64`
//! evaluation of the same function, the median over interleaved repetitions, with the
//! spread `(max − min)/median`. Before anything is timed, the gate ([`gate`]) compares every
//! arm's gradient with every other's. See `compare/README.md`.

mod arms;
mod casadi;
mod clock;
mod export;
mod gate;
mod heap;
mod python;
mod report;
mod stats;

use arms::{Arm, BatchArm, Call, JaxArm, RustArm};
use clap::Parser;
use ddx::{Backend, LaneKind, Options};
use ddx_models::coverage::Coverage;
use ddx_models::thermo::{Electrolyte, PengRobinson, RegularSolution, ThermoData, Uniquac};
use ddx_models::trend::{Chain, Quadratic};
use ddx_models::{equation, num_dual_gradient, num_dual_passes, sample_points, BenchModel};
use report::{Row, Table};
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Measures ddx's per-point gradient against native code, num-dual, CasADi and JAX.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    /// The Python interpreter that has `casadi` and `jax` (default: compare/.venv/bin/python
    /// when it exists).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Run without the Python-hosted peers (no CasADi, no JAX).
    #[arg(long)]
    no_python: bool,
    /// Interleaved repetitions per model.
    #[arg(long, default_value_t = 7)]
    reps: usize,
    /// Duration of one measurement of one arm, in milliseconds.
    #[arg(long, default_value_t = 10.0)]
    target_ms: f64,
    /// The clock measurements are read with: CPU time (default; time given to other
    /// processes is not counted) or wall time.
    #[arg(long, value_enum, default_value_t = clock::Clock::Cpu)]
    clock: clock::Clock,
    /// Replace this Markdown file's marked section with the tables (created if absent).
    #[arg(long)]
    write: Option<PathBuf>,
    /// Where generated files go (models.json, CasADi's C and serialized Functions, logs).
    #[arg(long)]
    build_dir: Option<PathBuf>,
    /// Run the synthetic scaling families (n = 4 … 256) for ddx, native and num-dual.
    #[arg(long)]
    trend: bool,
    /// Only models whose id contains this text (e.g. `uniquac`, `-16`).
    #[arg(long)]
    only: Option<String>,
    /// Self-check of the gate: perturb this arm's first partial by one part in a million
    /// before the gate compares (the run must then stop, naming the arm).
    #[arg(long, value_name = "ARM")]
    sabotage: Option<String>,
}

#[global_allocator]
static HEAP: heap::Counting = heap::Counting;

/// Distinct points each timing cycles through.
const POOL: usize = 256;
/// Points at which the gate compares the arms.
const GATE_POINTS: usize = 4;
/// Points per call of the batched figures (JAX's and ddx's).
const JAX_BATCH: usize = 1024;

/// The columns, in table order.
const ARM_ORDER: [&str; 10] = [
    "ddx-interp",
    "ddx-jit",
    "ddx-interp/batch",
    "ddx-jit/batch",
    "num-dual",
    "casadi/r",
    "casadi/j",
    "jax",
    "jax/scan",
    "jax/vmap",
];

/// The benchmark models of the main table.
enum Model {
    Regular(RegularSolution),
    Uniquac(Uniquac),
    PengRobinson(PengRobinson),
    Electrolyte(Electrolyte),
    Coverage(Coverage),
}

macro_rules! with_model {
    ($m:expr, $x:ident => $body:expr) => {
        match $m {
            Model::Regular($x) => $body,
            Model::Uniquac($x) => $body,
            Model::PengRobinson($x) => $body,
            Model::Electrolyte($x) => $body,
            Model::Coverage($x) => $body,
        }
    };
}

fn models(data: &ThermoData) -> Result<Vec<(String, Model)>, String> {
    let missing = |what: &str| format!("{what}: the data has too few components");
    let mut out = Vec::new();
    for n in [16, 32] {
        out.push((
            format!("regular-{n}"),
            Model::Regular(RegularSolution::new(n)),
        ));
    }
    for n in [16, 32] {
        let m = Uniquac::new(data, n).ok_or_else(|| missing("UNIQUAC"))?;
        out.push((format!("uniquac-{n}"), Model::Uniquac(m)));
    }
    for n in [17, 33] {
        let m = PengRobinson::new(data, n).ok_or_else(|| missing("Peng-Robinson"))?;
        out.push((format!("peng-robinson-{n}"), Model::PengRobinson(m)));
    }
    for n in [16, 32] {
        let m = Electrolyte::new(n).ok_or("electrolyte: bad size")?;
        out.push((format!("electrolyte-{n}"), Model::Electrolyte(m)));
    }
    let m = Coverage::new(16).ok_or("coverage: bad size")?;
    out.push(("coverage-16".to_string(), Model::Coverage(m)));
    Ok(out)
}

fn family_title(family: &str) -> (&'static str, Option<&'static str>) {
    match family {
        "regular" => ("Regular solid solution", None),
        "uniquac" => ("UNIQUAC", None),
        "peng-robinson" => ("Peng–Robinson", Some("n counts N−1 mole fractions plus Z.")),
        "electrolyte" => ("Mixed-solvent electrolyte", None),
        "coverage" => ("Operation coverage", None),
        "chain" => ("Banded chain (extended Rosenbrock)", None),
        "quadratic" => ("Dense quadratic form", None),
        _ => ("?", None),
    }
}

/// What the Python side provides, found once per run.
#[derive(Default)]
struct Peers {
    info: python::Info,
    casadi: Option<casadi::CasadiRuntime>,
    casadi_skip: Option<String>,
    exported: HashMap<String, python::Exported>,
    compiled: HashMap<String, Result<PathBuf, String>>,
    jax: Option<Rc<RefCell<python::JaxPeer>>>,
    jax_skip: Option<String>,
}

fn compare_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn setup_peers(cli: &Cli, build: &Path, models_json: &Path) -> Peers {
    let mut peers = Peers::default();
    if cli.no_python {
        peers.casadi_skip = Some("--no-python".into());
        peers.jax_skip = Some("--no-python".into());
        return peers;
    }
    let python = cli
        .python
        .clone()
        .unwrap_or_else(|| compare_dir().join(".venv/bin/python"));
    let script = compare_dir().join("python/peer.py");
    match python::info(&python, &script) {
        Err(e) => {
            let why = format!("no usable Python ({e}); run compare/run.sh to make the venv");
            peers.casadi_skip = Some(why.clone());
            peers.jax_skip = Some(why);
            return peers;
        }
        Ok(info) => peers.info = info,
    }
    // CasADi: export from Python, compile the C, load libcasadi.so.
    match (&peers.info.casadi, &peers.info.casadi_dir) {
        (Some(_), Some(dir)) => {
            let out = build.join("casadi");
            let t = Instant::now();
            match python::casadi_export(&python, &script, models_json, &out) {
                Ok(list) => {
                    eprintln!(
                        "casadi: exported {} gradient Functions in {:.1} s; compiling their C",
                        list.len(),
                        t.elapsed().as_secs_f64()
                    );
                    for e in &list {
                        eprintln!("  {}: {} SX instructions", e.id, e.instructions);
                    }
                    let t = Instant::now();
                    let handles: Vec<_> = list
                        .iter()
                        .map(|e| {
                            let c = e.c.clone();
                            (
                                e.id.clone(),
                                std::thread::spawn(move || casadi::compile(&c)),
                            )
                        })
                        .collect();
                    for (id, h) in handles {
                        let r = h
                            .join()
                            .unwrap_or_else(|_| Err("compiler thread died".into()));
                        peers.compiled.insert(id, r);
                    }
                    eprintln!("casadi: compiled in {:.1} s", t.elapsed().as_secs_f64());
                    peers.exported = list.into_iter().map(|e| (e.id.clone(), e)).collect();
                }
                Err(e) => peers.casadi_skip = Some(format!("export failed: {e}")),
            }
            match casadi::CasadiRuntime::open(dir) {
                Ok(rt) => peers.casadi = Some(rt),
                Err(e) => peers.casadi_skip = Some(e),
            }
        }
        _ => {
            peers.casadi_skip = Some(format!(
                "casadi is not importable by {} ({})",
                python.display(),
                peers.info.problems.join("; ")
            ))
        }
    }
    if peers.info.jax.is_some() {
        match python::JaxPeer::spawn(&python, &script, models_json, &build.join("jax.log")) {
            Ok(p) => peers.jax = Some(Rc::new(RefCell::new(p))),
            Err(e) => peers.jax_skip = Some(e),
        }
    } else {
        peers.jax_skip = Some(format!(
            "jax is not importable by {} ({})",
            python.display(),
            peers.info.problems.join("; ")
        ));
    }
    peers
}

/// A per-model seed: FNV-1a of the id, so each model has its own points.
fn seed(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Why the run stops.
enum Fatal {
    Gate(String),
    Other(String),
}

/// The arms' results for one model.
struct Measured {
    row: Row,
    /// `(arm, why)` for arms not in the row.
    skipped: Vec<(String, String)>,
    /// `(arm, what)`: choices made for this model.
    notes: Vec<(String, String)>,
}

/// The faster of `num-dual`'s two ways to a gradient for `model` — one pass on
/// `DualSVec64<n>` (where compiled for `n`) or `n` passes on `Dual64` — by the median of
/// three interleaved short timings; answers the arm and which way it takes.
fn fastest_num_dual<'a, M: BenchModel>(
    model: &'a M,
    pool: &Rc<Vec<f64>>,
    cli: &Cli,
) -> Result<(RustArm<'a>, String), String> {
    let n = model.arity();
    let passes = || -> Call<'a> {
        Box::new(move |x, g| {
            num_dual_passes(model, x, g);
            Ok(())
        })
    };
    let Some(vector) = num_dual_gradient(model) else {
        let arm = RustArm::new("num-dual", passes(), Rc::clone(pool), n);
        return Ok((
            arm,
            format!("{n} passes on `Dual64` (no `DualSVec64<{n}>` compiled)"),
        ));
    };
    let vector_call = move || -> Call<'a> {
        Box::new(move |x, g| {
            vector(model, x, g);
            Ok(())
        })
    };
    let mut a = RustArm::new("num-dual", vector_call(), Rc::clone(pool), n);
    let mut b = RustArm::new("num-dual", passes(), Rc::clone(pool), n);
    let short = Duration::from_secs_f64(cli.target_ms / 2e3);
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        ta.push(a.time(short, cli.clock)?);
        tb.push(b.time(short, cli.clock)?);
    }
    let (ma, mb) = (stats::median(&ta), stats::median(&tb));
    Ok(if ma <= mb {
        (
            a,
            format!(
                "one pass on `DualSVec64<{n}>` ({ma:.0} ns; {n} `Dual64` passes took {mb:.0} ns)"
            ),
        )
    } else {
        (
            b,
            format!(
                "{n} passes on `Dual64` ({mb:.0} ns; one `DualSVec64<{n}>` pass took {ma:.0} ns)"
            ),
        )
    })
}

/// The model's equation under `Backend::Compile` for batches of `points`, once its
/// gradient kernel is ready; `None` when none lands.
fn ddx_jit(model: &impl BenchModel, points: usize) -> Result<Option<ddx::Equation>, String> {
    let mut eq = equation(model).map_err(|e| e.to_string())?;
    let mut options = Options::with_backend(Backend::Compile);
    options.points = points;
    eq.set_options(options);
    // A long lane's kernel is refined in the background: time the one it ends with.
    eq.wait_for_refined_kernel_of(LaneKind::Gradient);
    Ok(eq.uses_kernel_of(LaneKind::Gradient).then_some(eq))
}

const JIT_SKIP: &str = "after `wait_for_kernel(Gradient)` under `Backend::Compile`, \
                        `uses_kernel(Gradient)` is false: this ddx build has no compiled \
                        gradient kernel (the JIT has not landed)";

fn measure<M: BenchModel>(
    model: &M,
    id: &str,
    peers: &Peers,
    cli: &Cli,
    with_peers: bool,
) -> Result<Measured, Fatal> {
    let n = model.arity();
    let label = format!("{} n={n}", model.family());
    let other = |e: String| Fatal::Other(format!("{label}: {e}"));
    let pool = Rc::new(sample_points(model, seed(id), POOL));
    let gate_points: Vec<Vec<f64>> = sample_points(model, !seed(id), GATE_POINTS)
        .chunks_exact(n)
        .map(<[f64]>::to_vec)
        .collect();
    // The equations outlive the arms that borrow them. The heap they take, from here until
    // each has run once (lanes, programs, kernels compiled), is the row's "ddx heap".
    let base = heap::reset_peak();
    let eq = equation(model).map_err(|e| other(e.to_string()))?;
    let jit = ddx_jit(model, 1).map_err(other)?;
    // The batch arms are in the main table only (the trend is per point).
    let jit_batch = match with_peers {
        true => ddx_jit(model, JAX_BATCH).map_err(other)?,
        false => None,
    };
    let mut skipped: Vec<(String, String)> = Vec::new();
    let mut notes: Vec<(String, String)> = Vec::new();
    let mut arms: Vec<Box<dyn Arm + '_>> = Vec::new();

    let native: Call<'_> = Box::new(move |x, g| {
        g[0] = model.eval(x);
        Ok(())
    });
    arms.push(Box::new(
        RustArm::new("native", native, Rc::clone(&pool), n).ungated(),
    ));

    // The value check: both spellings of the function give the same number.
    for x in &gate_points {
        let (a, b) = (
            model.eval(x),
            eq.evaluate(x).map_err(|e| other(e.to_string()))?,
        );
        if !gate::agree(a, b, a.abs()) {
            return Err(Fatal::Gate(format!(
                "gate: model {label}: native value {a:e} but ddx-interp evaluates {b:e}"
            )));
        }
    }
    let eq_ref = &eq;
    let interp: Call<'_> =
        Box::new(move |x, g| eq_ref.gradient_into(x, g).map_err(|e| e.to_string()));
    arms.push(Box::new(RustArm::new(
        "ddx-interp",
        interp,
        Rc::clone(&pool),
        n,
    )));

    match &jit {
        Some(eq) => {
            let call: Call<'_> =
                Box::new(move |x, g| eq.gradient_into(x, g).map_err(|e| e.to_string()));
            arms.push(Box::new(RustArm::new("ddx-jit", call, Rc::clone(&pool), n)));
        }
        None => skipped.push(("ddx-jit".into(), JIT_SKIP.into())),
    }
    if with_peers {
        let batch = BatchArm::new("ddx-interp/batch", &eq, &pool, n, JAX_BATCH).map_err(other)?;
        arms.push(Box::new(batch));
        match &jit_batch {
            Some(eq) => {
                let arm = BatchArm::new("ddx-jit/batch", eq, &pool, n, JAX_BATCH).map_err(other)?;
                arms.push(Box::new(arm));
            }
            None => skipped.push(("ddx-jit/batch".into(), JIT_SKIP.into())),
        }
    }
    let ddx_heap = {
        let x = &gate_points[0];
        let mut g = vec![0.0; n];
        for e in [Some(&eq), jit.as_ref(), jit_batch.as_ref()]
            .into_iter()
            .flatten()
        {
            e.gradient_into(x, &mut g)
                .map_err(|e| other(e.to_string()))?;
            let columns: Vec<&[f64]> = x.iter().map(std::slice::from_ref).collect();
            let cells = e.jacobian_pattern().nonzeros();
            let mut partials = vec![[0.0]; cells];
            let mut out: Vec<&mut [f64]> = partials.iter_mut().map(|c| &mut c[..]).collect();
            e.gradient_batch(&columns, &mut out)
                .map_err(|e| other(e.to_string()))?;
        }
        heap::peak() - base
    };

    let (num_dual, how) = fastest_num_dual(model, &pool, cli).map_err(other)?;
    arms.push(Box::new(num_dual));
    notes.push(("num-dual".into(), how));

    if with_peers {
        push_casadi(&mut arms, &mut skipped, peers, id, &pool, n);
        match &peers.jax {
            Some(peer) => {
                let pts: Vec<Vec<f64>> = pool.chunks_exact(n).map(<[f64]>::to_vec).collect();
                let loaded = peer.borrow_mut().load(id, &pts, JAX_BATCH);
                match loaded {
                    Ok(()) => {
                        for (i, (variant, name)) in python::JAX_VARIANTS.iter().enumerate() {
                            let arm = JaxArm::new(name, variant, i, id, Rc::clone(peer));
                            arms.push(Box::new(arm));
                        }
                    }
                    Err(e) => skipped.push(("jax".into(), e)),
                }
            }
            None => skipped.push(("jax".into(), peers.jax_skip.clone().unwrap_or_default())),
        }
    }

    // The gate, before anything is timed.
    let mut answers = Vec::new();
    for arm in arms.iter_mut().filter(|a| a.gated()) {
        let gradients = arm.gradients(&gate_points).map_err(|e| {
            Fatal::Gate(format!(
                "gate: model {label}: arm `{}` failed: {e}",
                arm.name()
            ))
        })?;
        let mut gradients = gradients;
        if cli.sabotage.as_deref() == Some(arm.name()) {
            if let Some(g) = gradients.first_mut().and_then(|g| g.first_mut()) {
                *g *= 1.0 + 1e-6;
            }
        }
        answers.push(gate::Answer {
            arm: arm.name().to_string(),
            gradients,
        });
    }
    gate::check(&label, &answers).map_err(|d| Fatal::Gate(d.to_string()))?;
    eprintln!(
        "{label}: gate passed ({} arms agree at {GATE_POINTS} points); timing",
        answers.len()
    );

    // Interleaved repetitions. In each, every gradient arm is timed once, in an order that
    // rotates from one repetition to the next, and each arm's timing directly follows a
    // timing of `native`: the ratio of the pair is taken within a few tens of milliseconds,
    // so a burst of load on the shared machine that lasts longer than that hits both alike.
    let target = Duration::from_secs_f64(cli.target_ms / 1e3);
    let m = arms.len();
    let mut times = vec![vec![f64::NAN; cli.reps]; m];
    let mut natives = vec![vec![f64::NAN; cli.reps]; m];
    let mut failed: Vec<Option<String>> = vec![None; m];
    for rep in 0..cli.reps {
        for k in 0..m - 1 {
            let i = 1 + (k + rep) % (m - 1);
            if failed[i].is_some() {
                continue;
            }
            let paired = arms[0]
                .time(target, cli.clock)
                .and_then(|native| Ok((native, arms[i].time(target, cli.clock)?)));
            match paired {
                Ok((native, ns)) => {
                    natives[i][rep] = native;
                    times[i][rep] = ns;
                }
                Err(e) => failed[i] = Some(e),
            }
        }
    }
    let native_ns: Vec<f64> = natives
        .iter()
        .flatten()
        .copied()
        .filter(|v| !v.is_nan())
        .collect();
    let mut cells = Vec::new();
    for (i, arm) in arms.iter().enumerate().skip(1) {
        match &failed[i] {
            Some(e) => {
                skipped.push((arm.name().to_string(), format!("failed while timed: {e}")));
                cells.push((arm.name().to_string(), None));
            }
            None => cells.push((
                arm.name().to_string(),
                Some(stats::cell(&times[i], &natives[i])),
            )),
        }
    }
    for (name, _) in &skipped {
        if !cells.iter().any(|(a, _)| a == name) {
            cells.push((name.clone(), None));
        }
    }
    cells.sort_by_key(|(a, _)| ARM_ORDER.iter().position(|o| o == a).unwrap_or(usize::MAX));
    Ok(Measured {
        row: Row {
            n,
            cells,
            native_ns: stats::median(&native_ns),
            heap: Some(ddx_heap),
        },
        skipped,
        notes,
    })
}

fn push_casadi<'a>(
    arms: &mut Vec<Box<dyn Arm + 'a>>,
    skipped: &mut Vec<(String, String)>,
    peers: &'a Peers,
    id: &str,
    pool: &Rc<Vec<f64>>,
    n: usize,
) {
    let (Some(rt), Some(exp)) = (&peers.casadi, peers.exported.get(id)) else {
        let why = peers
            .casadi_skip
            .clone()
            .unwrap_or_else(|| format!("no CasADi export of {id}"));
        skipped.push(("casadi/r".into(), why.clone()));
        skipped.push(("casadi/j".into(), why));
        return;
    };
    match rt.function(&exp.casadi, &exp.cid) {
        Ok(mut f) => {
            let call: Call<'a> = Box::new(move |x, g| f.call(x, g));
            arms.push(Box::new(RustArm::new("casadi/r", call, Rc::clone(pool), n)));
        }
        Err(e) => skipped.push(("casadi/r".into(), e)),
    }
    match peers.compiled.get(id) {
        Some(Ok(so)) => match casadi::CompiledFunction::open(so, &exp.cid) {
            Ok(mut f) => {
                let call: Call<'a> = Box::new(move |x, g| f.call(x, g));
                arms.push(Box::new(RustArm::new("casadi/j", call, Rc::clone(pool), n)));
            }
            Err(e) => skipped.push(("casadi/j".into(), e)),
        },
        Some(Err(e)) => skipped.push(("casadi/j".into(), e.clone())),
        None => skipped.push(("casadi/j".into(), format!("no compiled C for {id}"))),
    }
}

/// Groups rows into one table per family, in first-seen order.
fn tables(rows: Vec<(&'static str, Row)>) -> Vec<Table> {
    let mut out: Vec<(&'static str, Table)> = Vec::new();
    for (family, row) in rows {
        if let Some((_, t)) = out.iter_mut().find(|(f, _)| *f == family) {
            t.rows.push(row);
        } else {
            let (title, note) = family_title(family);
            out.push((
                family,
                Table {
                    title: title.to_string(),
                    note: note.map(str::to_string),
                    rows: vec![row],
                },
            ));
        }
    }
    out.into_iter().map(|(_, t)| t).collect()
}

const ARMS_DOC: &str = "\
| arm | what it is, and how overhead is kept out |
|---|---|
| `native` | one `f64` evaluation of the model's native Rust function (the denominator of every ratio) |
| `ddx-interp` | `Equation::gradient_into`: the gradient lane interpreted, written into the arm's buffer (as the CasADi arms write into theirs) |
| `ddx-jit` | the same equation under `Backend::Compile`, `points = 1`, after `wait_for_refined_kernel(Gradient)` (the kernel a long lane ends with); present only where `uses_kernel(Gradient)` is then true |
| `ddx-interp/batch` | `Equation::gradient_batch` over 1024 points (the pool tiled, one column per symbol, one per partial), time ÷ 1024: the block interpreter, on one thread (ddx's batch splitting runs inside a one-thread pool on the timing thread) |
| `ddx-jit/batch` | the same under `Backend::Compile` with `points = 1024` (the column kernel, or the block interpreter where the first batches timed it faster: `LaneStatus::batch_engine`), after `wait_for_refined_kernel(Gradient)` |
| `num-dual` | the same generic Rust function on num-dual's dual numbers, the faster (measured per model, listed below) of one forward pass on `DualSVec64<n>` (`num_dual::gradient`, all `n` tangents at once) and `n` forward passes on `Dual64` |
| `casadi/r` | CasADi's SX gradient `Function` (reverse mode, `casadi.gradient`), serialized, loaded into `libcasadi.so` through its C API and evaluated by CasADi's virtual machine from Rust: no Python in the loop |
| `casadi/j` | the C that CasADi generates for that `Function`, compiled by `cc -O3 -shared -fPIC` and called from Rust through FFI |
| `jax` | `jax.jit(jax.grad(f))`, called once per point from a Python loop with `block_until_ready`: **includes Python's call and dispatch** |
| `jax/scan` | `jax.jit(lambda P: lax.map(grad(f), P))`: the same per-point gradient looped inside XLA over 1024 points, time ÷ 1024; no Python per point |
| `jax/vmap` | `jax.jit(jax.vmap(jax.grad(f)))` over a batch of 1024 points, time ÷ 1024: batched, not per-point work |
";

fn header(cli: &Cli, peers: &Peers, trend: bool) -> String {
    let mut s = String::new();
    s.push_str(if trend {
        "## Scaling trend (`compare --trend`)\n\n"
    } else {
        "## Against other libraries\n\n"
    });
    s.push_str(&format!(
        "Measured by `compare/run.sh` on {}, {}. Versions: ddx {}, num-dual 0.11",
        report::today(),
        report::machine(),
        env!("CARGO_PKG_VERSION"),
    ));
    if let Some(v) = &peers.info.casadi {
        s.push_str(&format!(", CasADi {v}"));
    }
    if let Some(v) = &peers.info.jax {
        s.push_str(&format!(", JAX {v} (CPU, float64, one thread)"));
    }
    if !peers.info.python.is_empty() {
        s.push_str(&format!(", CPython {}", peers.info.python));
    }
    s.push_str(".\n\n");
    s.push_str(&format!(
        "A gradient with respect to every input at one point, the point changing every call \
         (each timing cycles through {POOL} distinct points). Every cell is the time for the \
         gradient divided by the time of one plain `f64` evaluation of the same function — \
         lower is better, below `1.00x` the gradient cost less than the function — as the \
         median over {} interleaved repetitions of the ratio (each repetition times every \
         arm once, {} ms, in rotating order, each arm right after a timing of the native \
         evaluation of the same length, which is its denominator), with the spread \
         `(max − min) / median` of the ratios. The last column is the native evaluation \
         (median of all its timings). \
         The lowest ratio of each row is bold. Times are {}. The machine is shared, so \
         absolute times are noisy; ratios of adjacent timings much less so.\n\n",
        cli.reps,
        cli.target_ms,
        match cli.clock {
            clock::Clock::Cpu => {
                "CPU time (of the timing thread; of the whole process for JAX, XLA's threads \
                 included), so time the scheduler gave other processes is not counted"
            }
            clock::Clock::Wall => "wall-clock time",
        }
    ));
    s.push_str(&format!(
        "Before anything is timed, the gate compares every arm's gradient with every other \
         arm's at {GATE_POINTS} points: partial `k` agrees when `|aₖ − bₖ| ≤ {:e} · max(|aₖ|, \
         |bₖ|, {:e} · max partial)`, and the native value must equal ddx's to the same \
         tolerance. A disagreement stops the run and names the arm.\n\n",
        gate::TOLERANCE,
        gate::FLOOR
    ));
    if trend {
        s.push_str(
            "Arms: `native`, `ddx-interp`, `ddx-jit` and `num-dual` as in the table above; the \
             two families (`ddx_models::trend`) are a banded chain (`O(n)` operations) and a \
             dense quadratic form (`O(n²)`).\n\n",
        );
    } else {
        s.push_str(ARMS_DOC);
        s.push('\n');
    }
    s
}

fn write_section(path: &Path, begin: &str, end: &str, body: &str) -> Result<(), String> {
    let old = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "# Benchmarks\n".to_string(),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let new = report::replace_section(&old, begin, end, body);
    std::fs::write(path, new).map_err(|e| format!("{}: {e}", path.display()))
}

fn run(cli: &Cli) -> Result<(), Fatal> {
    let build = cli
        .build_dir
        .clone()
        .unwrap_or_else(|| compare_dir().join("build"));
    std::fs::create_dir_all(&build)
        .map_err(|e| Fatal::Other(format!("{}: {e}", build.display())))?;
    let mut rows: Vec<(&'static str, Row)> = Vec::new();
    let mut skipped: Vec<(String, String, String)> = Vec::new();
    let mut notes: Vec<(String, String, String)> = Vec::new();
    let keep = |id: &str| cli.only.as_deref().is_none_or(|o| id.contains(o));
    let peers;
    if cli.trend {
        peers = Peers::default();
        for n in [4, 8, 16, 32, 64, 128, 256] {
            let chain = Chain::new(n).ok_or_else(|| Fatal::Other("chain".into()))?;
            let quad = Quadratic::new(n).ok_or_else(|| Fatal::Other("quadratic".into()))?;
            let (cid, qid) = (format!("chain-{n}"), format!("quadratic-{n}"));
            if keep(&cid) {
                let m = measure(&chain, &cid, &peers, cli, false)?;
                notes.extend(m.notes.into_iter().map(|(a, w)| (cid.clone(), a, w)));
                skipped.extend(m.skipped.into_iter().map(|(a, w)| (cid.clone(), a, w)));
                rows.push(("chain", m.row));
            }
            if keep(&qid) {
                let m = measure(&quad, &qid, &peers, cli, false)?;
                notes.extend(m.notes.into_iter().map(|(a, w)| (qid.clone(), a, w)));
                skipped.extend(m.skipped.into_iter().map(|(a, w)| (qid.clone(), a, w)));
                rows.push(("quadratic", m.row));
            }
        }
    } else {
        let data = ThermoData::bundled().map_err(|e| Fatal::Other(e.to_string()))?;
        let all = models(&data).map_err(Fatal::Other)?;
        let all: Vec<_> = all.into_iter().filter(|(id, _)| keep(id)).collect();
        let records: Vec<_> = all
            .iter()
            .map(|(id, m)| with_model!(m, x => export::record(x, id)))
            .collect();
        let models_json = build.join("models.json");
        let text = serde_json::to_string(&records).map_err(|e| Fatal::Other(e.to_string()))?;
        std::fs::write(&models_json, text)
            .map_err(|e| Fatal::Other(format!("{}: {e}", models_json.display())))?;
        peers = setup_peers(cli, &build, &models_json);
        for (id, m) in &all {
            let family = with_model!(m, x => x.family());
            let r = with_model!(m, x => measure(x, id, &peers, cli, true))?;
            notes.extend(r.notes.into_iter().map(|(a, w)| (id.clone(), a, w)));
            skipped.extend(r.skipped.into_iter().map(|(a, w)| (id.clone(), a, w)));
            rows.push((family, r.row));
        }
    }
    let mut body = header(cli, &peers, cli.trend);
    for t in tables(rows) {
        body.push_str(&report::render_table(&t));
        body.push('\n');
    }
    // Skips: one line per (arm, reason), listing the models.
    let mut reasons: Vec<(String, String, Vec<String>)> = Vec::new();
    for (model, arm, why) in skipped {
        match reasons.iter_mut().find(|(a, w, _)| *a == arm && *w == why) {
            Some((_, _, ms)) => ms.push(model),
            None => reasons.push((arm, why, vec![model])),
        }
    }
    if !reasons.is_empty() {
        body.push_str("Arms not in the table (—):\n\n");
        for (arm, why, models) in &reasons {
            body.push_str(&format!("- `{arm}` ({}): {why}\n", models.join(", ")));
        }
    }
    if !notes.is_empty() {
        body.push_str(
            "\nHow `num-dual` was run (the faster of its two ways, measured per model):\n\n",
        );
        for (model, arm, what) in &notes {
            body.push_str(&format!("- {model}, `{arm}`: {what}\n"));
        }
    }
    println!("{body}");
    if let Some(path) = &cli.write {
        let (b, e) = if cli.trend {
            ("<!-- compare-trend:begin -->", "<!-- compare-trend:end -->")
        } else {
            ("<!-- compare:begin -->", "<!-- compare:end -->")
        };
        write_section(path, b, e, &body).map_err(Fatal::Other)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.reps == 0 || !cli.target_ms.is_finite() || cli.target_ms <= 0.0 {
        eprintln!("compare: --reps and --target-ms must be positive");
        return ExitCode::from(2);
    }
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fatal::Gate(msg)) => {
            eprintln!("{msg}\ncompare: stopped by the gate; nothing was timed for this model");
            ExitCode::from(3)
        }
        Err(Fatal::Other(msg)) => {
            eprintln!("compare: {msg}");
            ExitCode::FAILURE
        }
    }
}
