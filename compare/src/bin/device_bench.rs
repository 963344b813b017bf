//! The device backend's benchmark: batch gradient ns/point on the OpenCL device with
//! device-resident columns and with transfers, beside the CPU engines (interpreter and
//! JIT, all cores), at growing batch sizes; the device compiler's build time per lane;
//! and the largest ULP difference of each device math function from ddx's CPU one.
//!
//! Models: Huber (2 symbols), regular solution 16 and 32, UNIQUAC 16 (the peers' set,
//! `shared/peers/models.py`). Inputs are drawn as the JAX script draws them.
//!
//! Run: `cargo run --release -p compare --bin device_bench -- [--max 10000000] [--ulp]
//! [--no-build-times]`
//! (the OpenCL device is the first GPU with double precision, else any; `DDX_DEVICE`
//! selects another).

use ddx::{rt, select, Backend, Equation, Expr, LaneKind, Options};
use ddx_models::thermo::{RegularSolution, ThermoData, Uniquac};
use std::time::Instant;

/// SplitMix64 uniform draws.
struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
}

fn huber() -> Equation {
    let data = [(0.0, 2.00), (1.0, 1.21), (2.0, 0.74), (3.0, 0.45)];
    rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        let mut loss = Expr::from(0.0);
        for &(t, y) in &data {
            let r = y - a * (-b * t).exp();
            loss += select(r.abs().lt(0.05), r * r, 0.05 * (2.0 * r.abs() - 0.05));
        }
        loss
    })
    .expect("builds")
}

/// Columns of `len` points for model `name` (as gpu_jax.py draws them).
fn columns(name: &str, n: usize, len: usize) -> Vec<Vec<f64>> {
    let mut rng = Rng(42);
    (0..n)
        .map(|j| {
            (0..len)
                .map(|_| match (name, j) {
                    ("huber", 0) => rng.range(1.5, 2.5),
                    ("huber", _) => rng.range(0.3, 0.7),
                    _ => rng.range(0.01, 0.2),
                })
                .collect()
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median seconds of `reps` runs of `f` after one warm-up.
fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn with(eq: &Equation, backend: Backend) -> Equation {
    let mut e = eq.clone();
    let mut o = Options::with_backend(backend);
    if backend == Backend::Device {
        o.device = std::env::var("DDX_DEVICE").ok();
    }
    if backend == Backend::Compile {
        o.points = 4096;
    }
    e.set_options(o);
    e
}

fn gradient_batch(eq: &Equation, xs: &[Vec<f64>], out: &mut [Vec<f64>]) {
    let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let mut o: Vec<&mut [f64]> = out.iter_mut().map(Vec::as_mut_slice).collect();
    eq.gradient_batch(&cols, &mut o).expect("columns fit");
}

fn bench(name: &str, eq: &Equation, sizes: &[usize]) {
    let n = eq.arity();
    let outs = eq.jacobian_columns();
    let dev = with(eq, Backend::Device);
    if !dev.wait_for_kernel_of(LaneKind::Gradient) {
        println!("{name}: no device kernel: {:?}", dev.device_status());
        return;
    }
    let jit = with(eq, Backend::Compile);
    jit.wait_for_kernel_of(LaneKind::Gradient);
    for &len in sizes {
        let xs = columns(name, n, len);
        let mut out = vec![vec![0.0; len]; outs];
        let reps = if len >= 10_000_000 { 5 } else { 9 };
        // Resident: inputs written once, outputs left on the device.
        let mut cols = dev
            .device_columns(LaneKind::Gradient, len)
            .expect("device memory");
        let ins: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
        cols.write(0, &ins).expect("fits");
        let resident = time(reps, || cols.run().expect("runs"));
        drop(cols);
        let transfers = time(reps, || gradient_batch(&dev, &xs, &mut out));
        let device_out = out.clone();
        let jit_t = time(3.min(reps), || gradient_batch(&jit, &xs, &mut out));
        let jit_out = out.clone();
        let interp_t = if len <= 1_000_000 {
            time(3, || gradient_batch(eq, &xs, &mut out))
        } else {
            f64::NAN
        };
        // Agreement of the device with the JIT (the interpreter's bits), relative.
        let mut worst = 0.0f64;
        for (d, c) in device_out.iter().zip(&jit_out) {
            let scale = c.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
            for (a, b) in d.iter().zip(c) {
                worst = worst.max((a - b).abs() / scale);
            }
        }
        let bytes = (8 * (n + outs) * len) as f64;
        let ns = |t: f64| t / len as f64 * 1e9;
        println!(
            "| {name} | {len:.0e} | {:.4} | {:.3} | {:.4} | {:.4} | {:.4} | {worst:.1e} |",
            ns(resident),
            bytes / resident / 1e12,
            ns(transfers),
            ns(jit_t),
            ns(interp_t),
        );
    }
}

fn build_times(name: &str, eq: &Equation) {
    let dev = with(eq, Backend::Device);
    let mut row = format!("| {name} |");
    for kind in LaneKind::ALL {
        let t = Instant::now();
        let ok = dev.wait_for_kernel_of(kind);
        let wall = t.elapsed().as_secs_f64();
        let built = dev.device_build_time(kind).map(|d| d.as_secs_f64());
        row += &match (ok, built) {
            (true, Some(b)) => {
                format!(
                    " {:.0} ms ({} nodes) |",
                    b * 1e3,
                    eq.lane(kind).unwrap().graph.len()
                )
            }
            _ => format!(" failed after {wall:.1} s: {:?} |", dev.device_status()),
        };
    }
    println!("{row}");
}

/// The largest ULP difference of the device's `f` from ddx's CPU `f` over `len` inputs
/// drawn from `[lo, hi]` (and `[lo2, hi2]` for a second argument).
fn ulps(name: &str, f: impl Fn(Expr, Expr) -> Expr, dom: [f64; 4], len: usize) {
    let eq = rt::equation(|| f(rt::var("a"), rt::var("b"))).expect("builds");
    let dev = with(&eq, Backend::Device);
    if !dev.wait_for_kernel_of(LaneKind::Value) {
        println!("| {name} | no kernel: {:?} |", dev.device_status());
        return;
    }
    let mut rng = Rng(7);
    let a: Vec<f64> = (0..len).map(|_| rng.range(dom[0], dom[1])).collect();
    let b: Vec<f64> = (0..len).map(|_| rng.range(dom[2], dom[3])).collect();
    let xs: Vec<Vec<f64>> = (0..eq.arity())
        .map(|k| if k == 0 { a.clone() } else { b.clone() })
        .collect();
    let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let run = |e: &Equation| {
        let mut v = vec![0.0; len];
        e.evaluate_batch(&cols, &mut [&mut v[..]]).expect("fits");
        v
    };
    let (d, c) = (run(&dev), run(&eq));
    let key = |x: f64| {
        let i = x.to_bits() as i64;
        if i < 0 {
            i64::MIN - i
        } else {
            i
        }
    };
    let mut worst = 0u64;
    let mut at = 0.0;
    for k in 0..len {
        if d[k].is_nan() && c[k].is_nan() {
            continue;
        }
        let u = key(d[k]).abs_diff(key(c[k]));
        if u > worst {
            worst = u;
            at = a[k];
        }
    }
    println!("| {name} | [{}, {}] | {worst} | {at:e} |", dom[0], dom[1]);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let max: usize = args
        .iter()
        .position(|a| a == "--max")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let probe = with(&huber(), Backend::Device);
    println!("device: {:?}", probe.device_status());
    if args.iter().any(|a| a == "--ulp") {
        let len = 1 << 20;
        println!("\n| function | domain | largest ULP difference | at |\n|---|---|---|---|");
        let big = 700.0;
        type F = fn(Expr, Expr) -> Expr;
        let unary: [(&str, F, [f64; 4]); 20] = [
            ("sin", |a, _| a.sin(), [-10.0, 10.0, 0.0, 0.0]),
            ("cos", |a, _| a.cos(), [-10.0, 10.0, 0.0, 0.0]),
            ("tan", |a, _| a.tan(), [-1.5, 1.5, 0.0, 0.0]),
            ("exp", |a, _| a.exp(), [-big, big, 0.0, 0.0]),
            ("log", |a, _| a.ln(), [1e-300, 1e300, 0.0, 0.0]),
            ("log10", |a, _| a.log10(), [1e-5, 1e5, 0.0, 0.0]),
            ("cbrt", |a, _| a.cbrt(), [-1e3, 1e3, 0.0, 0.0]),
            ("asin", |a, _| a.asin(), [-1.0, 1.0, 0.0, 0.0]),
            ("acos", |a, _| a.acos(), [-1.0, 1.0, 0.0, 0.0]),
            ("atan", |a, _| a.atan(), [-50.0, 50.0, 0.0, 0.0]),
            ("sinh", |a, _| a.sinh(), [-20.0, 20.0, 0.0, 0.0]),
            ("cosh", |a, _| a.cosh(), [-20.0, 20.0, 0.0, 0.0]),
            ("tanh", |a, _| a.tanh(), [-5.0, 5.0, 0.0, 0.0]),
            ("asinh", |a, _| a.asinh(), [-50.0, 50.0, 0.0, 0.0]),
            ("acosh", |a, _| a.acosh(), [1.0, 50.0, 0.0, 0.0]),
            ("atanh", |a, _| a.atanh(), [-1.0, 1.0, 0.0, 0.0]),
            ("erf", |a, _| a.erf(), [-6.0, 6.0, 0.0, 0.0]),
            ("log1p", |a, _| ddx::log1p(a), [-0.9, 10.0, 0.0, 0.0]),
            ("expm1", |a, _| ddx::expm1(a), [-5.0, 5.0, 0.0, 0.0]),
            ("log2", |a, _| ddx::log2(a), [1e-5, 1e5, 0.0, 0.0]),
        ];
        for (name, f, dom) in unary {
            ulps(name, f, dom, len);
        }
        ulps("pow", |a, b| a.powf(b), [0.01, 100.0, -5.0, 5.0], len);
        ulps("atan2", |a, b| a.atan2(b), [-10.0, 10.0, -10.0, 10.0], len);
        ulps("hypot", |a, b| a.hypot(b), [-1e3, 1e3, -1e3, 1e3], len);
    }
    let data = ThermoData::bundled().expect("thermo data");
    // NIST Gauss1's residual sum of squares: 750 `exp` calls a gradient. The data from
    // `DDX_NIST_DIR` where set (a machine the binary was carried to), else this repository's.
    let nist = std::env::var_os("DDX_NIST_DIR")
        .map_or_else(ddx_models::nist::data_dir, std::path::PathBuf::from);
    let gauss1 = ddx_models::nist::load(&nist.join("Gauss1.dat"))
        .expect("Gauss1 loads")
        .rss_equation()
        .expect("builds");
    let models: Vec<(&str, Equation)> = vec![
        ("huber", huber()),
        ("gauss1", gauss1),
        (
            "regsol16",
            ddx_models::equation(&RegularSolution::new(16)).expect("builds"),
        ),
        (
            "regsol32",
            ddx_models::equation(&RegularSolution::new(32)).expect("builds"),
        ),
        (
            "uniquac16",
            ddx_models::equation(&Uniquac::new(&data, 16).expect("16")).expect("builds"),
        ),
    ];
    println!(
        "\nDevice build time per lane (the device compiler alone), lanes in LaneKind::ALL order:"
    );
    println!("| model | value | jacobian | gradient | jvp | vjp | hessian | hvp |\n|---|---|---|---|---|---|---|---|");
    if !args.iter().any(|a| a == "--no-build-times") {
        for (name, eq) in &models {
            build_times(name, eq);
        }
    }
    let sizes: Vec<usize> = [1_000, 10_000, 100_000, 1_000_000, 10_000_000]
        .into_iter()
        .filter(|&s| s <= max)
        .collect();
    println!("\nBatch gradient, ns/point (median); resident = columns kept on the device; TB/s = inputs + outputs moved by the resident kernel; JIT and interpreter on every CPU core; agree = largest |device − JIT| / column max");
    println!("| model | points | device resident | TB/s | device with transfers | JIT (CPU) | interpreter (CPU) | agree |\n|---|---|---|---|---|---|---|---|");
    // `--models huber,gauss1`: only those (every model where absent).
    let only: Option<Vec<&str>> = args
        .iter()
        .position(|a| a == "--models")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').collect());
    for (name, eq) in &models {
        if only.as_ref().is_none_or(|o| o.contains(name)) {
            bench(name, eq, &sizes);
        }
    }
}
