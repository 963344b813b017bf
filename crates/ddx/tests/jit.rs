//! The compiling backends through the public API: which backend compiles what, `Adapt`'s
//! tiers, refused options, and the `cache_dir` store (reuse, corruption, mismatch).
//!
//! Bit-for-bit agreement on random graphs lives with the code generator
//! (`src/jit/tests.rs`); here every answer is still compared with the interpreter's.

#![cfg(feature = "jit")]

mod common;

use ddx::{
    rt, select, Backend, BatchEngine, Equation, Errc, Expr, LaneKind, Lanes, OptLevel, Options,
};
use std::path::Path;

fn model() -> Equation {
    rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        let c = rt::var("c");
        let r = (a * (-b * 1.5).exp() - c).abs();
        select(r.lt(0.2), r * r, 0.2 * (2.0 * r - 0.2)) + a.atan2(b) * c.max(a) + (a * c).sin()
    })
    .expect("model builds")
}

const POINT: [f64; 3] = [1.25, 0.5, -0.75];

fn options(backend: Backend) -> Options {
    Options::with_backend(backend)
}

fn cached(dir: &Path) -> Options {
    let mut o = options(Backend::Compile);
    o.cache_dir = Some(dir.to_path_buf());
    o
}

fn entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("cache dir exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ddxk"))
        .collect();
    v.sort();
    v
}

#[test]
fn compile_answers_every_call_kind_like_the_interpreter() {
    let oracle = model();
    let mut eq = model();
    eq.set_options(options(Backend::Compile));
    for kind in LaneKind::ALL {
        assert!(
            eq.wait_for_kernel_of(kind),
            "{kind:?}: {:?}",
            eq.jit_status()
        );
        assert!(eq.uses_kernel_of(kind));
        assert_eq!(eq.kernel_level_of(kind), Some(OptLevel::Speed));
    }
    let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
    assert_eq!(
        eq.evaluate(POINT).expect("fits").to_bits(),
        oracle.evaluate(POINT).expect("fits").to_bits()
    );
    assert_eq!(
        bits(eq.jacobian(POINT).expect("fits")),
        bits(oracle.jacobian(POINT).expect("fits"))
    );
    assert_eq!(
        bits(eq.gradient(POINT).expect("fits")),
        bits(oracle.gradient(POINT).expect("fits"))
    );
    let v = [0.5, -1.0, 2.0];
    assert_eq!(
        bits(eq.jvp(v, POINT).expect("fits")),
        bits(oracle.jvp(v, POINT).expect("fits"))
    );
    assert_eq!(
        bits(eq.vjp(&[3.0], POINT).expect("fits")),
        bits(oracle.vjp(&[3.0], POINT).expect("fits"))
    );
    assert_eq!(
        bits(eq.hessian(POINT).expect("fits")),
        bits(oracle.hessian(POINT).expect("fits"))
    );
    assert_eq!(
        bits(eq.hvp(v, POINT).expect("fits")),
        bits(oracle.hvp(v, POINT).expect("fits"))
    );
    let status = eq.jit_status();
    assert_eq!(status.error, None);
    assert_eq!(
        status.compiled,
        2 * LaneKind::ALL.len(),
        "a quick and an optimised kernel each"
    );
}

#[test]
fn interpret_and_device_never_compile() {
    for backend in [Backend::Interpret, Backend::Device] {
        let mut eq = model();
        eq.set_options(options(backend));
        eq.gradient(POINT).expect("fits");
        if backend == Backend::Interpret {
            assert!(!eq.wait_for_kernel_of(LaneKind::Gradient));
            assert!(!eq.uses_kernel_of(LaneKind::Gradient));
        }
        // Under `Device` a kernel may come from the device (tests/device.rs), never from
        // the Cranelift JIT.
        assert_eq!(eq.kernel_level_of(LaneKind::Gradient), None);
        assert_eq!(eq.jit_status(), Default::default());
    }
}

#[test]
fn a_lane_compiles_only_when_it_is_needed() {
    let mut eq = model();
    eq.set_options(options(Backend::Compile));
    assert!(eq.wait_for_kernel_of(LaneKind::Value));
    assert!(!eq.uses_kernel_of(LaneKind::Gradient));
    assert_eq!(eq.jit_status().compiled, 2);
}

#[test]
fn opt_level_none_stops_at_the_quick_kernel() {
    let mut eq = model();
    let mut o = options(Backend::Compile);
    o.codegen.opt_level = OptLevel::Off;
    eq.set_options(o);
    assert!(eq.wait_for_kernel_of(LaneKind::Jacobian));
    assert_eq!(eq.kernel_level_of(LaneKind::Jacobian), Some(OptLevel::Off));
    assert_eq!(eq.jit_status().compiled, 1);
}

#[test]
fn a_lane_width_the_generator_does_not_make_is_refused_and_interpreted() {
    let oracle = model();
    let mut eq = model();
    let mut o = options(Backend::Compile);
    o.codegen.lanes = Lanes::Exactly(4);
    eq.set_options(o);
    assert!(!eq.wait_for_kernel_of(LaneKind::Jacobian));
    assert_eq!(
        eq.jit_status().error.map(|e| e.code()),
        Some(Errc::JitTarget)
    );
    assert_eq!(eq.jacobian(POINT), oracle.jacobian(POINT));
}

/// Runs a Jacobian batch of `len` points through `eq`.
fn batch(eq: &Equation, len: usize) -> Vec<Vec<f64>> {
    let xs: Vec<Vec<f64>> = POINT
        .iter()
        .map(|v| (0..len).map(|k| v * (1.0 + k as f64 * 1e-3)).collect())
        .collect();
    let cols: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
    jacobian_batch(eq, &cols, len)
}

/// Runs a Jacobian batch of `len` points through `eq` with the column of `a` broadcast
/// (one value for every point).
fn broadcast_batch(eq: &Equation, len: usize) -> Vec<Vec<f64>> {
    let a = [POINT[0]];
    let bc: Vec<Vec<f64>> = POINT[1..]
        .iter()
        .map(|v| (0..len).map(|k| v * (1.0 - k as f64 * 1e-3)).collect())
        .collect();
    jacobian_batch(eq, &[&a[..], &bc[0], &bc[1]], len)
}

/// The values, then the partial columns, of `eq`'s Jacobian batch over `cols`.
fn jacobian_batch(eq: &Equation, cols: &[&[f64]], len: usize) -> Vec<Vec<f64>> {
    let mut out = vec![vec![0.0; len]; 1 + eq.jacobian_columns()];
    let (values, partials) = out.split_at_mut(1);
    let mut v: Vec<&mut [f64]> = values.iter_mut().map(Vec::as_mut_slice).collect();
    let mut p: Vec<&mut [f64]> = partials.iter_mut().map(Vec::as_mut_slice).collect();
    eq.jacobian_batch(cols, &mut v, &mut p)
        .expect("columns fit");
    out
}

/// The engine measured for `kind`'s batches, if any yet.
fn batch_engine(eq: &Equation, kind: LaneKind) -> Option<BatchEngine> {
    eq.jit_status()
        .lanes
        .iter()
        .find(|l| l.kind == kind)
        .and_then(|l| l.batch_engine)
}

/// A compiling backend's batches time the kernel against the block interpreter, three
/// trials of 256 points each, then run on the faster; every point answers the
/// interpreter's bits whichever engine, or trial, took it: in a batch too short for a
/// trial, in batches whose trials leave points over (an odd count), in broadcast batches,
/// across calls that share the trials, and after the choice. Which engine wins is the
/// machine's to say, and is not asserted.
#[test]
fn batches_run_on_the_engine_measured_faster_with_the_same_bits() {
    let kind = LaneKind::Jacobian;
    let oracle = model();
    for (width, broadcast) in [(2, false), (1, false), (2, true)] {
        let mut eq = model();
        let mut o = options(Backend::Compile);
        o.points = 1024;
        o.codegen.lanes = Lanes::Exactly(width);
        eq.set_options(o);
        assert!(eq.wait_for_kernel_of(kind));
        assert_eq!(batch_engine(&eq, kind), None, "nothing measured yet");
        let run = |eq: &Equation, len| {
            if broadcast {
                broadcast_batch(eq, len)
            } else {
                batch(eq, len)
            }
        };
        // 511 points: no trial.
        assert_eq!(run(&eq, 511), run(&oracle, 511));
        assert_eq!(batch_engine(&eq, kind), None);
        // Two trials of each engine, 7 points over on the kernel.
        assert_eq!(run(&eq, 1031), run(&oracle, 1031));
        assert_eq!(batch_engine(&eq, kind), None);
        // The third of each, then the choice for the 188 points over.
        assert_eq!(run(&eq, 700), run(&oracle, 700));
        let chosen = batch_engine(&eq, kind);
        assert!(chosen.is_some(), "width {width}");
        assert_eq!(run(&eq, 3001), run(&oracle, 3001));
        assert_eq!(batch_engine(&eq, kind), chosen, "the choice stands");
        // Per-point calls still run the kernel.
        assert_eq!(eq.jacobian(POINT), oracle.jacobian(POINT));
    }
}

/// A user function that fails inside a trial fails the batch, as it fails any batch,
/// whichever engine's trial met it, and the next batch runs it afresh.
#[test]
fn a_user_function_failing_in_a_trial_fails_the_batch() {
    let bad = common::fragile();
    let eq = rt::equation(|| bad.call(&[rt::var("x")]) * rt::var("y")).expect("model builds");
    // The failing point inside the kernel's first trial, then the interpreter's; the
    // points no trial took run on rayon's threads (past `PARALLEL_WORK`), so the trial's
    // failure is the calling thread's alone.
    let len = 300_000;
    for at in [100, 300] {
        let mut b = eq.clone();
        let mut o = options(Backend::Compile);
        o.points = 1024;
        b.set_options(o);
        assert!(b.wait_for_kernel_of(LaneKind::Value));
        let xs: Vec<f64> = (0..len).map(|k| if k == at { 2.0 } else { 0.5 }).collect();
        let ys = vec![3.0; len];
        let mut out = vec![0.0; len];
        let e = b
            .evaluate_batch(&[&xs, &ys], &mut [&mut out])
            .expect_err("the point fails");
        assert_eq!(e.code(), Errc::UserFunction, "{e}");
        assert!(e.to_string().contains("`fragile`"), "{e}");
        assert!(out[..100].iter().all(|&v| v == 3.0), "answered before it");
        // The next batch, without the failing point, is answered.
        let ok = vec![0.5; len];
        b.evaluate_batch(&[&ok, &ys], &mut [&mut out])
            .expect("no failure");
        assert!(out.iter().all(|&v| v == 3.0));
    }
}

#[test]
fn adapt_buys_the_tiers_with_batch_points() {
    let kind = LaneKind::Jacobian;
    let oracle = model();
    let mut eq = model();
    let mut o = options(Backend::Adapt);
    o.warm_points = 100;
    o.hot_points = 1000;
    o.points = 64;
    eq.set_options(o);
    let w = |eq: &Equation| eq.warming_of(kind).map(|w| (w.points, w.threshold));
    assert_eq!(w(&eq), Some((0, 100)));
    eq.jacobian(POINT).expect("fits"); // per-point calls do not count
    assert_eq!(batch(&eq, 60), batch(&oracle, 60));
    assert_eq!(w(&eq), Some((60, 100)));
    assert!(
        !eq.wait_for_kernel_of(kind),
        "nothing bought yet, nothing to wait for"
    );
    assert_eq!(batch(&eq, 41), batch(&oracle, 41));
    assert!(eq.wait_for_kernel_of(kind));
    assert_eq!(eq.kernel_level_of(kind), Some(OptLevel::Off));
    assert_eq!(w(&eq), Some((1, 1000)));
    assert_eq!(batch(&eq, 999), batch(&oracle, 999));
    assert!(eq.wait_for_kernel_of(kind));
    assert_eq!(eq.kernel_level_of(kind), Some(OptLevel::Speed));
    assert_eq!(w(&eq), None);
    assert_eq!(batch(&eq, 77), batch(&oracle, 77));
    assert_eq!(eq.jit_status().compiled, 2);
}

#[test]
fn a_second_run_loads_from_the_cache_instead_of_compiling() {
    let dir = tempfile::tempdir().expect("temp dir");
    let kind = LaneKind::Gradient;
    let oracle = model();

    let mut first = model();
    first.set_options(cached(dir.path()));
    assert!(first.wait_for_kernel_of(kind));
    let s = first.jit_status();
    assert_eq!((s.compiled, s.loaded, s.written), (2, 0, 2));
    assert_eq!(entries(dir.path()).len(), 2);

    // A new equation of the same model (a second run): the optimised kernel is on disk,
    // so it loads and nothing compiles — not even the quick tier.
    let mut second = model();
    second.set_options(cached(dir.path()));
    assert!(second.wait_for_kernel_of(kind));
    let s = second.jit_status();
    assert_eq!((s.compiled, s.loaded, s.refused), (0, 1, 0));
    assert_eq!(second.kernel_level_of(kind), Some(OptLevel::Speed));
    assert_eq!(second.gradient(POINT), oracle.gradient(POINT));

    // Other code-generation options are another key: compiled, never the other's code.
    let mut narrow = model();
    let mut o = cached(dir.path());
    o.points = 4096;
    narrow.set_options(o);
    assert!(narrow.wait_for_kernel_of(kind));
    let s = narrow.jit_status();
    assert_eq!((s.compiled, s.loaded, s.refused), (2, 0, 0));
    assert_eq!(entries(dir.path()).len(), 4);
    assert_eq!(batch(&narrow, 33), batch(&oracle, 33));

    // So is another graph.
    let mut other = rt::equation(|| rt::var("a") * rt::var("b") + rt::var("c")).expect("builds");
    other.set_options(cached(dir.path()));
    assert!(other.wait_for_kernel_of(kind));
    assert_eq!(other.jit_status().loaded, 0);
}

/// Damages every entry in `dir` with `damage`, then checks that a fresh equation refuses
/// each entry it looks at, compiles instead, answers exactly, and rewrites the entries so
/// that the next run loads again.
fn refused_and_rewritten(damage: impl Fn(&mut Vec<u8>)) {
    let dir = tempfile::tempdir().expect("temp dir");
    let kind = LaneKind::Jacobian;
    let oracle = model();
    let mut eq = model();
    eq.set_options(cached(dir.path()));
    assert!(eq.wait_for_kernel_of(kind));
    for path in entries(dir.path()) {
        let mut bytes = std::fs::read(&path).expect("reads");
        damage(&mut bytes);
        std::fs::write(&path, bytes).expect("writes");
    }
    let mut eq = model();
    eq.set_options(cached(dir.path()));
    assert!(eq.wait_for_kernel_of(kind));
    let s = eq.jit_status();
    assert_eq!(
        (s.loaded, s.refused, s.compiled, s.written),
        (0, 2, 2, 2),
        "{s:?}"
    );
    assert_eq!(eq.jacobian(POINT), oracle.jacobian(POINT));
    assert_eq!(batch(&eq, 9), batch(&oracle, 9));
    let mut eq = model();
    eq.set_options(cached(dir.path()));
    assert!(eq.wait_for_kernel_of(kind));
    assert_eq!(eq.jit_status().loaded, 1, "the rewritten entry loads");
}

#[test]
fn a_flipped_byte_in_the_code_is_refused() {
    refused_and_rewritten(|b| {
        let last = b.len() - 1;
        b[last] ^= 0x01;
    });
}

#[test]
fn a_flipped_byte_in_the_header_is_refused() {
    refused_and_rewritten(|b| b[20] ^= 0x80);
}

#[test]
fn a_truncated_entry_is_refused() {
    refused_and_rewritten(|b| b.truncate(b.len() / 2));
}

#[test]
fn a_foreign_entry_is_refused() {
    // Another equation's intact entry under this one's name: the key inside differs.
    let dir = tempfile::tempdir().expect("temp dir");
    let mut other =
        rt::equation(|| (rt::var("a") * rt::var("b")).sin() + rt::var("c")).expect("builds");
    other.set_options(cached(dir.path()));
    assert!(other.wait_for_kernel_of(LaneKind::Jacobian));
    let foreign = std::fs::read(&entries(dir.path())[0]).expect("reads");
    refused_and_rewritten(move |b| *b = foreign.clone());
}

#[test]
fn an_empty_file_is_refused() {
    refused_and_rewritten(Vec::clear);
}

#[test]
fn expressions_compile_inside_a_sum_of_many_terms() {
    // A long reduction spine: compiled code sums it in the graph's order, so nothing moves.
    let xs: Vec<f64> = (0..80).map(|k| 0.1 + k as f64 * 0.37).collect();
    let build = || {
        rt::equation(|| {
            let a = rt::var("a");
            let mut s = Expr::from(0.0);
            for &x in &xs {
                s += (a * x).sin() / x;
            }
            s
        })
        .expect("builds")
    };
    let oracle = build();
    let mut eq = build();
    eq.set_options(options(Backend::Compile));
    assert!(eq.wait_for_kernel_of(LaneKind::Jacobian));
    for p in [0.3, -1.7, 1e-3, 12.0] {
        let (a, b) = (
            eq.jacobian([p]).expect("fits"),
            oracle.jacobian([p]).expect("fits"),
        );
        assert_eq!(a[0].to_bits(), b[0].to_bits());
    }
}

#[test]
fn an_empty_cache_path_is_reported_and_kernels_stay_in_memory() {
    let oracle = model();
    let mut eq = model();
    let mut o = options(Backend::Compile);
    o.cache_dir = Some(std::path::PathBuf::new());
    eq.set_options(o);
    assert!(eq.wait_for_kernel_of(LaneKind::Gradient));
    let s = eq.jit_status();
    assert_eq!((s.compiled, s.written, s.refused), (2, 0, 0), "{s:?}");
    assert_eq!(s.error, None);
    assert_eq!(s.cache_error.map(|e| e.code()), Some(Errc::JitCache));
    assert_eq!(eq.gradient(POINT), oracle.gradient(POINT));
}

#[test]
fn a_cache_path_that_is_a_file_is_reported_not_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("not-a-directory");
    std::fs::write(&file, b"a file").expect("writes");
    let oracle = model();
    let mut eq = model();
    eq.set_options(cached(&file));
    assert!(eq.wait_for_kernel_of(LaneKind::Jacobian));
    let s = eq.jit_status();
    assert_eq!(
        (s.compiled, s.written, s.refused, s.loaded),
        (2, 0, 0, 0),
        "{s:?}"
    );
    let e = s.cache_error.expect("the cache failure is reported");
    assert_eq!(e.code(), Errc::JitCache);
    assert!(e.to_string().contains("not-a-directory"), "{e}");
    assert!(e.to_string().contains("is not a directory"), "{e}");
    assert_eq!(eq.jacobian(POINT), oracle.jacobian(POINT));
    assert_eq!(
        std::fs::read(&file).expect("reads"),
        b"a file",
        "the file is untouched"
    );
}

/// Compiles the gradient into a cache in a temporary directory, replaces each entry with
/// `replace` (given the entry's path, the file removed), then has a fresh equation use that
/// cache: it answers the interpreter's gradient, and its status is returned.
fn with_entries_replaced(replace: impl Fn(&Path)) -> ddx::JitStatus {
    let dir = tempfile::tempdir().expect("temp dir");
    let kind = LaneKind::Gradient;
    let mut eq = model();
    eq.set_options(cached(dir.path()));
    assert!(eq.wait_for_kernel_of(kind));
    for path in entries(dir.path()) {
        std::fs::remove_file(&path).expect("removes");
        replace(&path);
    }
    let oracle = model();
    let mut eq = model();
    eq.set_options(cached(dir.path()));
    assert!(eq.wait_for_kernel_of(kind));
    assert_eq!(eq.gradient(POINT), oracle.gradient(POINT));
    eq.jit_status()
}

#[test]
fn an_entry_that_cannot_be_read_is_reported_not_refused() {
    // Each entry replaced by a directory of its name: reading it fails (not "absent", not
    // "damaged"), and so does writing it back.
    let s = with_entries_replaced(|path| std::fs::create_dir(path).expect("makes a directory"));
    assert_eq!((s.loaded, s.refused, s.compiled), (0, 0, 2), "{s:?}");
    assert_eq!(s.cache_error.map(|e| e.code()), Some(Errc::JitCache));
}

/// Each entry replaced by a link to a device that never ends (`/dev/zero`): it is reported
/// as unreadable (not a regular file) and compiled again, never read until memory runs out.
#[cfg(unix)]
#[test]
fn an_entry_that_is_not_a_regular_file_is_not_read() {
    let s = with_entries_replaced(|path| {
        std::os::unix::fs::symlink("/dev/zero", path).expect("links");
    });
    assert_eq!(s.compiled, 2, "{s:?}");
    let e = s.cache_error.expect("the unreadable entry is reported");
    assert_eq!(e.code(), Errc::JitCache);
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

#[test]
fn an_entry_that_is_absent_is_not_counted_as_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut eq = model();
    eq.set_options(cached(dir.path()));
    assert!(eq.wait_for_kernel_of(LaneKind::Value));
    let s = eq.jit_status();
    assert_eq!((s.refused, s.written), (0, 2), "{s:?}");
    assert_eq!(s.cache_error, None);
}

/// A lane longer than [`ddx::MAX_KERNEL_NODES`] is never compiled: it is interpreted, the
/// status says why, and its answers are the interpreter's.
#[test]
fn a_lane_over_the_node_limit_is_interpreted_and_reported() {
    let terms = ddx::MAX_KERNEL_NODES / 4 + 1; // four nodes a term
    let build = || {
        rt::equation(|| {
            let a = rt::var("a");
            let mut y = a;
            for k in 0..terms {
                y = y * 0.999_999 + a * (1.0 + k as f64 * 1e-9);
            }
            y
        })
        .expect("builds")
    };
    let mut eq = build();
    let nodes = eq.lane(LaneKind::Value).unwrap().graph.len();
    assert!(nodes > ddx::MAX_KERNEL_NODES, "{nodes} nodes");
    let oracle = eq.clone(); // shares the lane; stays `Interpret`
    eq.set_options(options(Backend::Compile));
    assert!(!eq.wait_for_kernel_of(LaneKind::Value));
    assert!(!eq.uses_kernel_of(LaneKind::Value));
    let s = eq.jit_status();
    assert_eq!(s.compiled, 0);
    let e = s.error.expect("the reason is reported");
    assert_eq!(e.code(), Errc::JitTarget);
    assert!(e.to_string().contains(&nodes.to_string()), "{e}");
    assert_eq!(
        eq.evaluate([0.5]).expect("fits").to_bits(),
        oracle.evaluate([0.5]).expect("fits").to_bits()
    );
}
