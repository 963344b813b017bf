//! `Backend::Device` through the public API, on whatever OpenCL device this machine has
//! (PoCL's CPU device in CI): the status, the selector, device-resident columns, odd
//! batch lengths, the select/NaN rules, and every fallback path —
//! each answering exactly what the interpreter answers where the device cannot.
//!
//! Tests that need a device skip (saying so) where none answers. The paths that need a
//! process of their own (no OpenCL library, no platform: which devices exist is chosen
//! once per process) run this test binary again as a child with the environment changed.
//!
//! Node-by-node agreement on random graphs lives with the backend (`src/device/tests.rs`);
//! the model families run on the device in `crates/ddx-models/tests/device.rs`.

#![cfg(feature = "opencl")]

use ddx::{rt, select, Backend, Equation, Errc, Expr, LaneKind, Options};
use std::process::Command;

fn device_options(selector: Option<&str>) -> Options {
    let mut o = Options::with_backend(Backend::Device);
    o.device = selector.map(str::to_string);
    o
}

/// An equation under `Backend::Device` whose lane `kind` runs on the device, or `None`
/// (saying why) where no device answers.
fn on_device<S: ddx::Shape>(eq: &Equation<S>, kind: LaneKind) -> Option<Equation<S>> {
    let mut d = eq.clone();
    d.set_options(device_options(None));
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

/// `len` points of `n` columns around `base`.
fn points(n: usize, len: usize, base: f64) -> Vec<Vec<f64>> {
    (0..n)
        .map(|j| {
            (0..len)
                .map(|k| base + 0.37 * j as f64 + (k as f64 * 0.618_033_988_7).fract())
                .collect()
        })
        .collect()
}

/// A gradient batch of `eq` over `xs`.
fn gradient_batch<S: ddx::Shape>(eq: &Equation<S>, xs: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let len = xs[0].len();
    let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let mut out = vec![vec![0.0; len]; eq.jacobian_columns()];
    let mut o: Vec<&mut [f64]> = out.iter_mut().map(Vec::as_mut_slice).collect();
    eq.gradient_batch(&cols, &mut o).expect("columns fit");
    out
}

/// The bits of a Hessian batch's value, gradient and Hessian columns.
type HessianBits = (Vec<Vec<u64>>, Vec<Vec<u64>>, Vec<Vec<u64>>);

/// A Hessian batch of `eq` over `xs`, as bits.
fn hessian_batch_bits(eq: &Equation, xs: &[Vec<f64>]) -> HessianBits {
    let len = xs[0].len();
    let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let mut v = vec![vec![0.0; len]; 1];
    let mut p = vec![vec![0.0; len]; eq.jacobian_columns()];
    let mut h = vec![vec![0.0; len]; eq.hessian_columns()];
    let mut vv: Vec<&mut [f64]> = v.iter_mut().map(Vec::as_mut_slice).collect();
    let mut pp: Vec<&mut [f64]> = p.iter_mut().map(Vec::as_mut_slice).collect();
    let mut hh: Vec<&mut [f64]> = h.iter_mut().map(Vec::as_mut_slice).collect();
    eq.hessian_batch(&cols, &mut vv, &mut pp, &mut hh)
        .expect("fits");
    (bits(&v), bits(&p), bits(&h))
}

fn bits(cols: &[Vec<f64>]) -> Vec<Vec<u64>> {
    cols.iter()
        .map(|c| {
            c.iter()
                .map(|v| if v.is_nan() { 0 } else { v.to_bits() })
                .collect()
        })
        .collect()
}

#[test]
fn the_status_names_the_device_and_other_backends_have_none() {
    let eq = huber();
    assert_eq!(eq.device_status(), None, "interpret: no device status");
    let Some(d) = on_device(&eq, LaneKind::Gradient) else {
        return;
    };
    let info = d
        .device_status()
        .expect("device backend")
        .expect("a device");
    let shown = info.to_string();
    assert_eq!(shown.matches(" / ").count(), 3, "{shown}");
    assert!(!info.device.is_empty() && !info.platform.is_empty());
    assert!(d.uses_kernel_of(LaneKind::Gradient));
    assert_eq!(
        d.kernel_level_of(LaneKind::Gradient),
        None,
        "no level for a device kernel"
    );
    assert!(d.device_build_time(LaneKind::Gradient).is_some());
    assert_eq!(
        d.jit_status(),
        Default::default(),
        "the JIT compiles nothing"
    );
    let mut back = d.clone();
    back.set_options(Options::default());
    assert_eq!(back.device_status(), None);
    assert!(!back.uses_kernel_of(LaneKind::Gradient));
}

#[test]
fn the_selector_is_matched_ignoring_case_and_a_miss_leaves_the_cpu_answering() {
    let eq = huber();
    let Some(d) = on_device(&eq, LaneKind::Gradient) else {
        return;
    };
    let info = d
        .device_status()
        .expect("device backend")
        .expect("a device");
    // The platform's name, shouted, selects the same device.
    let mut by_name = eq.clone();
    by_name.set_options(device_options(Some(&info.platform.to_uppercase())));
    assert!(by_name.wait_for_kernel_of(LaneKind::Gradient));
    assert_eq!(by_name.device_status(), Some(Ok(info.clone())));
    // So does a part of the device's name in lower case.
    let part: String = info
        .device
        .chars()
        .take(6)
        .collect::<String>()
        .to_lowercase();
    let mut by_part = eq.clone();
    by_part.set_options(device_options(Some(&part)));
    assert!(by_part.wait_for_kernel_of(LaneKind::Gradient));

    let mut miss = eq.clone();
    miss.set_options(device_options(Some("no such device, surely")));
    assert!(!miss.wait_for_kernel_of(LaneKind::Gradient));
    assert!(!miss.uses_kernel_of(LaneKind::Gradient));
    let e = miss
        .device_status()
        .expect("device backend")
        .expect_err("nothing matches");
    assert_eq!(e.code(), Errc::NoDevice);
    assert!(e.to_string().contains("no such device, surely"), "{e}");
    let xs = points(2, 41, 1.5);
    assert_eq!(
        bits(&gradient_batch(&miss, &xs)),
        bits(&gradient_batch(&eq, &xs))
    );
    assert!(miss.device_columns(LaneKind::Gradient, 8).is_err());
}

#[test]
fn arithmetic_models_agree_bit_for_bit_at_odd_batch_lengths() {
    // Only + - * / sqrt abs sign max min select comparisons: every lane exact (a `pow`
    // would bring the device's own `pow` into the derivative lanes).
    let eq = rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        let c = rt::var("c");
        let r = (a * b - c).abs();
        select(r.lt(0.5), r * r, a.max(b) / (c * c + 1.0).sqrt())
            + a.sign() * b.min(c)
            + select(a.ne(b), a - b, c)
            + b.powi(3)
            + c.powi(-2)
    })
    .expect("builds");
    for kind in [
        LaneKind::Value,
        LaneKind::Jacobian,
        LaneKind::Gradient,
        LaneKind::Hessian,
    ] {
        let Some(d) = on_device(&eq, kind) else {
            return;
        };
        for len in [1, 2, 3, 63, 65, 255, 257, 1001] {
            let xs = points(3, len, -1.3);
            assert_eq!(
                bits(&gradient_batch(&d, &xs)),
                bits(&gradient_batch(&eq, &xs))
            );
            assert_eq!(
                hessian_batch_bits(&d, &xs),
                hessian_batch_bits(&eq, &xs),
                "{kind:?}, {len} points"
            );
        }
    }
}

/// `exp` and `log` are ddx's own on the device too (`ddx_ir::emit::exp_c`, `log_c`): a
/// model of exponentials (NIST's Gauss family, with the Huber loss above) and logarithms
/// (the thermodynamic families') answers the CPU's bits in every lane, at ordinary points
/// and across the edges of both functions' ranges (tiny, overflowing, subnormal and
/// underflowing results, zeros, negative arguments, infinities, NaN).
#[test]
fn exp_and_log_models_agree_bit_for_bit_on_the_device() {
    let eq = rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        let t = rt::var("t");
        a * (-b * t).exp()
            + (-(t - a).powi(2) / (b * b)).exp()
            + (a * t).exp()
            + b * (a * a + 1.0).ln()
            + t.abs().ln()
            + (a * t).ln()
    })
    .expect("builds");
    let edges = [
        0.0,
        -0.0,
        1e-300,
        5e-324,
        0.3,
        -2.5,
        511.9,
        512.0,
        -512.0,
        709.78,
        709.79,
        -708.4,
        -745.0,
        -745.2,
        1100.0,
        -1100.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    for kind in [LaneKind::Gradient, LaneKind::Hessian] {
        let Some(d) = on_device(&eq, kind) else {
            return;
        };
        let mut xs = points(3, 301, -1.1);
        // Column 0 (a) and 2 (t) take every edge with b = 1 and b = the point's own.
        for (k, &e) in edges.iter().enumerate() {
            xs[0][k] = e;
            xs[2][k] = 1.0;
            xs[1][k + 40] = 1.0;
            xs[2][k + 40] = e;
            xs[0][k + 80] = 1.0;
            xs[2][k + 80] = e;
        }
        if kind == LaneKind::Hessian {
            assert_eq!(
                hessian_batch_bits(&d, &xs),
                hessian_batch_bits(&eq, &xs),
                "{kind:?}"
            );
        } else {
            assert_eq!(
                bits(&gradient_batch(&d, &xs)),
                bits(&gradient_batch(&eq, &xs)),
                "{kind:?}"
            );
        }
    }
}

#[test]
fn select_and_nan_follow_the_rules_on_the_device() {
    // NaN conditions take the first arm, NaN comparisons answer 0 (`!=` too), max and min
    // answer the non-NaN operand, sign(±0) = 0, and the untaken arm's NaN derivative
    // never reaches the gradient.
    let eq = rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        select(a, b * 2.0, b * 3.0)
            + a.lt(b) * 10.0
            + a.ne(b) * 100.0
            + a.eq(b) * 1000.0
            + a.max(b)
            + a.min(b) * 0.5
            + a.sign() * 7.0
            + select(b.gt(0.0), b.sqrt(), -b)
    })
    .expect("builds");
    let Some(d) = on_device(&eq, LaneKind::Jacobian) else {
        return;
    };
    let nan = f64::NAN;
    let a = vec![nan, 0.0, -0.0, 1.0, nan, 2.0, -3.0, f64::INFINITY];
    let b = vec![1.0, nan, 0.0, 1.0, nan, -2.0, 0.0, -0.0];
    let xs = [a, b];
    let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    let run = |e: &Equation| {
        let mut v = vec![vec![0.0; 8]; 1];
        let mut p = vec![vec![0.0; 8]; 2];
        let mut vv: Vec<&mut [f64]> = v.iter_mut().map(Vec::as_mut_slice).collect();
        let mut pp: Vec<&mut [f64]> = p.iter_mut().map(Vec::as_mut_slice).collect();
        e.jacobian_batch(&cols, &mut vv, &mut pp).expect("fits");
        (bits(&v), bits(&p))
    };
    assert_eq!(run(&d), run(&eq));
    // And the rules themselves, from the device's own answers.
    let mut v = vec![vec![0.0; 8]; 1];
    let mut vv: Vec<&mut [f64]> = v.iter_mut().map(Vec::as_mut_slice).collect();
    d.evaluate_batch(&cols, &mut vv).expect("fits");
    // a = 1, b = 1: select → 2, lt 0, ne 0, eq 1000, max 1, min 0.5, sign 7, sqrt 1.
    assert_eq!(v[0][3], 2.0 + 1000.0 + 1.0 + 0.5 + 7.0 + 1.0);
}

#[test]
fn resident_columns_answer_what_a_batch_call_answers() {
    let eq = huber();
    let Some(d) = on_device(&eq, LaneKind::Gradient) else {
        return;
    };
    let len = 1001;
    let xs = points(2, len, 1.5);
    let want = gradient_batch(&d, &xs);
    let mut cols = d
        .device_columns(LaneKind::Gradient, len)
        .expect("device memory");
    assert_eq!((cols.len(), cols.inputs(), cols.outputs()), (len, 2, 2));
    let ins: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    cols.write(0, &ins).expect("fits");
    for _ in 0..3 {
        cols.run().expect("runs");
    }
    let mut got = vec![vec![0.0; len]; 2];
    let mut g: Vec<&mut [f64]> = got.iter_mut().map(Vec::as_mut_slice).collect();
    cols.read(0, &mut g).expect("fits");
    assert_eq!(bits(&got), bits(&want));
    // Rewriting one column and reading one back.
    let b2: Vec<f64> = xs[1].iter().map(|v| v * 0.5).collect();
    cols.write(1, &[&b2]).expect("fits");
    cols.run().expect("runs");
    let mut one = vec![0.0; len];
    cols.read(1, &mut [&mut one[..]]).expect("fits");
    let want2 = gradient_batch(&d, &[xs[0].clone(), b2]);
    assert_eq!(bits(&[one]), bits(&want2[1..]));
    // Errors write nothing and say what is wrong.
    let short = vec![0.0; 3];
    assert_eq!(
        cols.write(0, &[&short]).expect_err("short").code(),
        Errc::ColumnLength
    );
    assert_eq!(
        cols.write(2, &[&xs[0]]).expect_err("past the end").code(),
        Errc::WrongColumnCount
    );
    let mut extra = vec![vec![0.0; len]; 3];
    let mut e: Vec<&mut [f64]> = extra.iter_mut().map(Vec::as_mut_slice).collect();
    assert_eq!(
        cols.read(0, &mut e).expect_err("too many").code(),
        Errc::WrongColumnCount
    );
    assert_eq!(
        eq.device_columns(LaneKind::Gradient, 4)
            .expect_err("interpret")
            .code(),
        Errc::NoDevice
    );
}

/// Resident `jvp` and `hvp` columns answer what the per-point calls answer where a zero
/// direction meets an infinite partial (`0 · ∞`): the product the plain kernel makes NaN
/// is the zero-skipping twin's, read whole or a column at a time, at a few such points
/// and at many.
#[test]
fn resident_products_answer_the_twin_where_the_plain_lane_makes_nan() {
    let eq = rt::equation(|| {
        let x = rt::var("x");
        let y = rt::var("y");
        x.ln() * y + x * y * y
    })
    .expect("builds");
    for kind in [LaneKind::Jvp, LaneKind::Hvp] {
        let Some(d) = on_device(&eq, kind) else {
            return;
        };
        for (len, every) in [(129usize, 40usize), (1000, 3)] {
            // Columns x, y, then the direction: x = 0 (an infinite partial) with a zero
            // x-direction at every `every`-th point, ordinary points elsewhere.
            let mut xs = points(4, len, 0.7);
            for k in (0..len).step_by(every) {
                xs[0][k] = 0.0;
                xs[2][k] = 0.0;
            }
            let mut cols = d.device_columns(kind, len).expect("device memory");
            let ins: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
            cols.write(0, &ins).expect("fits");
            cols.run().expect("runs");
            let outputs = cols.outputs();
            let mut want = vec![vec![0.0; len]; outputs];
            let mut out = vec![0.0; outputs];
            for k in 0..len {
                let x: Vec<f64> = xs.iter().map(|c| c[k]).collect();
                eq.lane_point_into(kind, &x, &mut out).expect("fits");
                for (c, v) in want.iter_mut().zip(&out) {
                    c[k] = *v;
                }
            }
            assert!(want.iter().flatten().all(|v| !v.is_nan()), "{kind:?}");
            let mut got = vec![vec![0.0; len]; outputs];
            let mut g: Vec<&mut [f64]> = got.iter_mut().map(Vec::as_mut_slice).collect();
            cols.read(0, &mut g).expect("fits");
            assert_eq!(bits(&got), bits(&want), "{kind:?}, {len} points");
            for j in 0..outputs {
                let mut one = vec![0.0; len];
                cols.read(j, &mut [&mut one[..]]).expect("fits");
                assert_eq!(bits(&[one]), bits(&want[j..=j]), "{kind:?}, column {j}");
            }
        }
    }
}

/// Runs `test` of this binary in a child process with `env` set (an empty value removes
/// the variable), under `wrapper` (a program and its arguments, given the binary and its
/// arguments after them) if any, and asserts it passed; answers `false` (saying why) when
/// the wrapper could not start it.
fn in_child(test: &str, env: &[(&str, &str)], wrapper: &[String]) -> bool {
    let exe = std::env::current_exe().expect("the test binary");
    let mut cmd = match wrapper.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    cmd.args([test, "--exact", "--nocapture", "--test-threads=1"]);
    cmd.env("DDX_DEVICE_CHILD", test);
    for (k, v) in env {
        if v.is_empty() {
            cmd.env_remove(k);
        } else {
            cmd.env(k, v);
        }
    }
    let Ok(out) = cmd.output() else {
        eprintln!("skipped: {wrapper:?} cannot be run");
        return false;
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !text.contains("running 1 test") {
        eprintln!("skipped: {wrapper:?} did not start the child:\n{text}");
        return false;
    }
    assert!(out.status.success(), "child {test} failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "child {test} did not run:\n{text}"
    );
    true
}

/// Every `libOpenCL.so*` the dynamic loader could open besides the usual folders: those
/// `ldconfig -p` lists (a CUDA toolkit's, say) and those in `LD_LIBRARY_PATH`'s folders.
fn opencl_libraries_on_search_path() -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    if let Ok(out) = Command::new("ldconfig").arg("-p").output() {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((name, path)) = line.trim().split_once(" => ") {
                if name.starts_with("libOpenCL.so") {
                    found.push(std::path::PathBuf::from(path.trim()));
                }
            }
        }
    }
    for dir in std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
    {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with("libOpenCL.so") {
                    found.push(e.path());
                }
            }
        }
    }
    found
}

/// In a child: the backend answers `no_device` with `detail` in its message, and the CPU
/// answers every call.
fn child_answers_no_device(expected: &str) {
    let eq = huber();
    let mut d = eq.clone();
    d.set_options(device_options(None));
    assert!(!d.wait_for_kernel_of(LaneKind::Gradient));
    assert!(!d.uses_kernel_of(LaneKind::Gradient));
    let e = d
        .device_status()
        .expect("device backend")
        .expect_err("no device");
    assert_eq!(e.code(), Errc::NoDevice);
    assert!(e.to_string().contains(expected), "{e}");
    let xs = points(2, 77, 1.5);
    assert_eq!(
        bits(&gradient_batch(&d, &xs)),
        bits(&gradient_batch(&eq, &xs))
    );
    assert_eq!(d.gradient([2.0, 0.5]), eq.gradient([2.0, 0.5]));
}

#[test]
fn no_platform_answers_no_device_and_the_cpu_answers() {
    match std::env::var("DDX_DEVICE_CHILD").as_deref() {
        Ok("no_platform_answers_no_device_and_the_cpu_answers") => {
            child_answers_no_device("platform");
        }
        Ok(_) => {}
        Err(_) => {
            let empty = tempfile::tempdir().expect("temp dir");
            let dir = empty.path().to_str().expect("utf-8 path");
            // The ICD loader finds its drivers through OCL_ICD_VENDORS (an empty folder
            // here) unless OCL_ICD_FILENAMES names them (removed: some machines register
            // their drivers there).
            in_child(
                "no_platform_answers_no_device_and_the_cpu_answers",
                &[
                    ("OCL_ICD_VENDORS", dir),
                    ("OPENCL_VENDOR_PATH", dir),
                    ("OCL_ICD_FILENAMES", ""),
                ],
                &[],
            );
        }
    }
}

#[test]
fn no_opencl_library_answers_no_device_and_the_cpu_answers() {
    match std::env::var("DDX_DEVICE_CHILD").as_deref() {
        Ok("no_opencl_library_answers_no_device_and_the_cpu_answers") => {
            child_answers_no_device("cannot be loaded");
        }
        Ok(_) => {}
        Err(_) => {
            // The child runs in a mount namespace of its own (`unshare -r -m`, no
            // privileges needed where user namespaces are allowed) with /dev/null bound
            // over every libOpenCL.so.1 the dynamic loader could find, so opening it at
            // run time fails as on a machine without OpenCL.
            let mut targets: Vec<std::path::PathBuf> = [
                "/usr/lib/x86_64-linux-gnu/libOpenCL.so.1",
                "/lib/x86_64-linux-gnu/libOpenCL.so.1",
                "/usr/lib/aarch64-linux-gnu/libOpenCL.so.1",
                "/usr/lib64/libOpenCL.so.1",
                "/usr/lib/libOpenCL.so.1",
                "/usr/local/lib/libOpenCL.so.1",
            ]
            .iter()
            .map(std::path::PathBuf::from)
            .chain(opencl_libraries_on_search_path())
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect();
            targets.sort();
            targets.dedup();
            let binds: Vec<String> = targets
                .iter()
                .map(|t| format!("mount --bind /dev/null '{}' && ", t.display()))
                .collect();
            let script = format!("{}exec \"$0\" \"$@\"", binds.concat());
            let wrapper: Vec<String> = ["unshare", "-r", "-m", "sh", "-c", &script]
                .iter()
                .map(|s| s.to_string())
                .collect();
            in_child(
                "no_opencl_library_answers_no_device_and_the_cpu_answers",
                &[],
                &wrapper,
            );
        }
    }
}
