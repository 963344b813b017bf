//! Saving and loading through the public API: round trips of every lane kind, scalar and
//! system, with and without kernels (every call answers the same bits before and after, in
//! both engines); a file read by a fresh process; shapes, `verify`, the paired cache; and
//! damage: every bit flip and truncation of a small file, a sample of a large one.
//!
//! Forged structures (a checksummed file claiming 2^60 nodes, a kernel for another host)
//! are made with the format's own types, in `src/archive/tests.rs`.

#[cfg(feature = "jit")]
use ddx::Backend;
use ddx::{rt, select, Equation, Errc, Expr, LaneKind, Options, Scalar, Shape, System};
use std::path::Path;

fn scalar_model() -> Equation {
    rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        let c = rt::var("c");
        let r = (a * (-b * 1.5).exp() - c).abs();
        select(r.lt(0.2), r * r, 0.2 * (2.0 * r - 0.2)) + a.atan2(b) * c.max(a) + (a * c).sin()
    })
    .expect("model builds")
}

fn system_model() -> Equation<System> {
    rt::equation(|| {
        let x = rt::var("x");
        let y = rt::var("y");
        let z = rt::var("z");
        [
            x * (y * 0.5).exp(),
            (x - z).powf(Expr::from(3.0)) + y.hypot(z),
            (x * y * z).tanh(),
        ]
    })
    .expect("model builds")
}

const POINT: [f64; 3] = [1.25, 0.5, -0.75];

/// Every call's answer, as bits: per point at two points, and the batch calls over five.
fn answers<S: Shape>(eq: &Equation<S>) -> Vec<u64> {
    let (n, m) = (eq.arity(), eq.outputs());
    let mut out = Vec::new();
    let mut push = |v: &[f64]| out.extend(v.iter().map(|x| x.to_bits()));
    for x in [POINT, [-0.3, 2.0, 0.1]] {
        let mut f = vec![0.0; m];
        eq.evaluate_into(x, &mut f).expect("fits");
        push(&f);
        push(&eq.jacobian(x).expect("fits"));
        push(&eq.gradient(x).expect("fits"));
        push(&eq.jvp([0.5, -1.0, 2.0], x).expect("fits"));
        push(&eq.vjp(&vec![1.5; m], x).expect("fits"));
        push(&eq.hessian(x).expect("fits"));
        if m == 1 {
            push(&eq.hvp([0.25, 1.0, -2.0], x).expect("fits"));
        }
    }
    let p = 5;
    let cols: Vec<Vec<f64>> = (0..n)
        .map(|j| {
            (0..p)
                .map(|k| 0.3 * k as f64 - 0.2 * j as f64 + 0.1)
                .collect()
        })
        .collect();
    let xs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
    let mut values = vec![vec![0.0; p]; m];
    let mut partials = vec![vec![0.0; p]; eq.jacobian_columns()];
    let mut hessians = vec![vec![0.0; p]; m * eq.hessian_columns()];
    {
        let mut v: Vec<&mut [f64]> = values.iter_mut().map(Vec::as_mut_slice).collect();
        let mut d: Vec<&mut [f64]> = partials.iter_mut().map(Vec::as_mut_slice).collect();
        let mut h: Vec<&mut [f64]> = hessians.iter_mut().map(Vec::as_mut_slice).collect();
        eq.hessian_batch(&xs, &mut v, &mut d, &mut h).expect("fits");
    }
    for c in values.iter().chain(&partials).chain(&hessians) {
        push(c);
    }
    out
}

/// Under `Compile`, every lane's optimised kernel in place.
#[cfg(feature = "jit")]
fn compiled<S: Shape>(mut eq: Equation<S>, contract: bool) -> Equation<S> {
    let mut o = Options::with_backend(Backend::Compile);
    o.codegen.contract = contract;
    eq.set_options(o);
    for kind in LaneKind::ALL {
        if kind == LaneKind::Hvp && eq.outputs() > 1 {
            continue;
        }
        assert!(
            eq.wait_for_kernel_of(kind),
            "{kind:?}: {:?}",
            eq.jit_status()
        );
    }
    eq
}

fn round_trip<S: Shape>(eq: &Equation<S>) -> Equation<S> {
    let bytes = eq.to_bytes().expect("encodes");
    let back = Equation::<S>::from_bytes(&bytes).expect("decodes");
    assert!(back.loaded() && !eq.loaded());
    assert_eq!(back.symbols(), eq.symbols());
    assert_eq!(back.options(), eq.options());
    // Writing the loaded equation gives the same bytes.
    assert_eq!(back.to_bytes().expect("encodes"), bytes);
    back
}

#[test]
fn interpreted_round_trips_answer_the_same_bits() {
    let eq = scalar_model();
    let before = answers(&eq); // prepares every lane
    let back = round_trip(&eq);
    for kind in LaneKind::ALL {
        // Every lane came from the file, identical.
        assert_eq!(
            back.lane(kind).unwrap().graph.nodes(),
            eq.lane(kind).unwrap().graph.nodes(),
            "{kind:?}"
        );
        assert_eq!(
            back.lane(kind).unwrap().outputs,
            eq.lane(kind).unwrap().outputs
        );
    }
    assert_eq!(answers(&back), before);

    let sys = system_model();
    let before = answers(&sys);
    let back = round_trip(&sys);
    assert_eq!(back.hessian_pattern(), sys.hessian_pattern());
    assert_eq!(back.hessian_colors(), sys.hessian_colors());
    assert_eq!(answers(&back), before);
}

#[test]
fn lanes_whose_reverse_sweeps_hold_an_exponent_round_trip() {
    // `b ** -a`: the reverse sweep holds the exponent `-a`, and the second-order lanes
    // were once saved with a node their outputs no longer reached, which the loader
    // refused (`archive_corrupt`).
    let eq = rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        let c = rt::var("c");
        b.powf(-a) + ((c * c + 1.0) * 2.5).powf(-a).exp() + (a + b).powf(-(c * b))
    })
    .expect("model builds");
    let before = answers(&eq); // prepares every lane
    let back = round_trip(&eq);
    assert_eq!(answers(&back), before);
}

#[test]
fn an_equation_saved_before_any_call_builds_its_lanes_after_loading() {
    let eq = scalar_model();
    let back = round_trip(&eq);
    assert_eq!(answers(&back), answers(&eq));
    let sys = system_model();
    sys.lane(LaneKind::Value).unwrap();
    let back = round_trip(&sys);
    assert_eq!(answers(&back), answers(&sys));
}

#[test]
fn the_answer_limit_is_saved_with_the_other_options() {
    // Saved since format version 4: a loaded equation refuses what the saved one refused.
    let mut eq = system_model();
    eq.set_options(Options::new().answer_limit(9));
    let refused = eq
        .hessian(POINT)
        .expect_err("3·3·3 values past a limit of 9");
    assert_eq!(refused.code(), Errc::TooLarge);
    let back = round_trip(&eq);
    assert_eq!(back.options().answer_limit, 9);
    let again = back.hessian(POINT).expect_err("still refused");
    assert_eq!(again.code(), Errc::TooLarge);
    // The 3·3 Jacobian fits the limit, before and after.
    assert_eq!(back.jacobian(POINT), eq.jacobian(POINT));
}

#[cfg(feature = "jit")]
#[test]
fn compiled_round_trips_answer_from_the_saved_kernels_at_once() {
    for contract in [false, true] {
        let interpreted = scalar_model();
        let eq = compiled(scalar_model(), contract);
        let before = answers(&eq);
        if !contract {
            assert_eq!(before, answers(&interpreted));
        }
        let back = round_trip(&eq);
        for kind in LaneKind::ALL {
            assert!(back.uses_kernel_of(kind), "{kind:?} contract {contract}");
        }
        let s = back.jit_status();
        assert_eq!((s.compiled, s.loaded, s.refused), (0, 7, 0), "{s:?}");
        assert_eq!(answers(&back), before);
        assert_eq!(back.jit_status().compiled, 0);

        let sys = compiled(system_model(), contract);
        let before = answers(&sys);
        let back = round_trip(&sys);
        assert!(back.uses_kernel_of(LaneKind::Hessian));
        assert_eq!(back.jit_status().compiled, 0);
        assert_eq!(answers(&back), before);
    }
}

#[cfg(feature = "jit")]
#[test]
fn without_retained_code_a_loaded_equation_compiles_again() {
    let mut eq = scalar_model();
    let mut o = Options::with_backend(Backend::Compile);
    o.retain_object = false;
    eq.set_options(o);
    assert!(eq.wait_for_kernel_of(LaneKind::Jacobian));
    let before = answers(&eq);
    let back = round_trip(&eq);
    assert_eq!(back.jit_status().loaded, 0);
    assert!(back.wait_for_kernel_of(LaneKind::Jacobian));
    assert!(back.jit_status().compiled > 0);
    assert_eq!(answers(&back), before);
}

/// The child half of `a_fresh_process_loads_without_compiling`: loads the file named by
/// `DDX_ARCHIVE_CHILD` and prints what it found.
#[cfg(feature = "jit")]
#[test]
fn child_loads_the_saved_file() {
    let Some(path) = std::env::var_os("DDX_ARCHIVE_CHILD") else {
        return; // run as an ordinary test: nothing to do
    };
    let eq = Equation::<Scalar>::load(&path).expect("loads");
    let kernels = LaneKind::ALL.iter().all(|&k| eq.uses_kernel_of(k));
    let bits: Vec<String> = answers(&eq).iter().map(u64::to_string).collect();
    let s = eq.jit_status();
    println!(
        "CHILD loaded={} kernels={kernels} compiled={} bits={}",
        s.loaded,
        s.compiled,
        bits.join(",")
    );
}

#[cfg(feature = "jit")]
#[test]
fn a_fresh_process_loads_without_compiling() {
    if std::env::var_os("DDX_ARCHIVE_CHILD").is_some() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("f.ddx");
    let eq = compiled(scalar_model(), false);
    let before = answers(&eq);
    eq.save(&path).expect("saves");
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "child_loads_the_saved_file",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("DDX_ARCHIVE_CHILD", &path)
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("CHILD ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no report in {stdout}"));
    let bits: Vec<String> = before.iter().map(u64::to_string).collect();
    assert_eq!(
        line,
        format!("loaded=7 kernels=true compiled=0 bits={}", bits.join(","))
    );
}

#[test]
fn shapes_are_not_adapted() {
    let scalar = scalar_model().to_bytes().expect("encodes");
    let e = Equation::<System>::from_bytes(&scalar).expect_err("a scalar file");
    assert_eq!(e.code(), Errc::ArchiveMismatch);
    assert!(e.to_string().contains("scalar"), "{e}");
    let sys = system_model().to_bytes().expect("encodes");
    let e = Equation::<Scalar>::from_bytes(&sys).expect_err("a system file");
    assert_eq!(e.code(), Errc::ArchiveMismatch);
    assert!(e.to_string().contains("3 functions"), "{e}");
    // A system of one output is a system, not a scalar equation.
    let one: Equation<System> = rt::equation(|| vec![rt::var("x").exp()]).expect("builds");
    let bytes = one.to_bytes().expect("encodes");
    assert!(Equation::<System>::from_bytes(&bytes).is_ok());
    let e = Equation::<Scalar>::from_bytes(&bytes).expect_err("a system file");
    assert_eq!(e.code(), Errc::ArchiveMismatch);
}

#[test]
fn files_save_load_and_verify() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("f.ddx");
    let eq = scalar_model();
    eq.jacobian(POINT).expect("fits");
    eq.save(&path).expect("saves");
    // Nothing but the file is left in the directory (the temporary file was renamed).
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("lists")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["f.ddx"]);
    ddx::verify(&path).expect("readable");
    rt::verify(&path).expect("readable");
    eq.verify(&path).expect("this equation");
    let back = Equation::<Scalar>::load(&path).expect("loads");
    assert!(back.loaded());
    assert_eq!(answers(&back), answers(&eq));

    // Another equation over the same symbols is a mismatch; so is another shape.
    let other = rt::equation(|| rt::var("a") + rt::var("b") * rt::var("c")).expect("builds");
    let e = other.verify(&path).expect_err("another equation");
    assert_eq!(e.code(), Errc::ArchiveMismatch);
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    let e = system_model().verify(&path).expect_err("another shape");
    assert_eq!(e.code(), Errc::ArchiveMismatch);

    // Saving over the file replaces it.
    other.save(&path).expect("saves");
    other.verify(&path).expect("now this one");

    // Absent, a directory, not a ddx file, another version.
    let missing = dir.path().join("missing.ddx");
    for e in [
        Equation::<Scalar>::load(&missing).expect_err("absent"),
        ddx::verify(&missing).expect_err("absent"),
        eq.verify(&missing).expect_err("absent"),
        Equation::<Scalar>::load(dir.path()).expect_err("a directory"),
    ] {
        assert_eq!(e.code(), Errc::ArchiveIo, "{e}");
        assert!(e.to_string().starts_with("archive_io: "), "{e}");
    }
    // A device that never ends is refused as not a regular file, not read until memory
    // runs out; so is a link to it.
    #[cfg(unix)]
    {
        let link = dir.path().join("zero.ddx");
        std::os::unix::fs::symlink("/dev/zero", &link).expect("links");
        for path in [Path::new("/dev/zero"), link.as_path()] {
            for e in [
                Equation::<Scalar>::load(path).expect_err("a device"),
                ddx::verify(path).expect_err("a device"),
            ] {
                assert_eq!(e.code(), Errc::ArchiveIo, "{e}");
                assert!(e.to_string().contains("not a regular file"), "{e}");
            }
        }
    }
    let e = eq
        .save(dir.path().join("no/such/dir/f.ddx"))
        .expect_err("no dir");
    assert_eq!(e.code(), Errc::ArchiveIo);
    let text = dir.path().join("t.ddx");
    std::fs::write(&text, "x + y").expect("writes");
    let e = ddx::verify(&text).expect_err("text");
    assert_eq!(e.code(), Errc::BadArchive);
    assert!(e.to_string().contains("t.ddx"), "{e}");
    let mut bytes = eq.to_bytes().expect("encodes");
    bytes[8] = 99;
    let e = Equation::<Scalar>::from_bytes(&bytes).expect_err("version 99");
    assert_eq!(e.code(), Errc::BadArchive);
    assert!(e.to_string().contains("version 99"), "{e}");
}

#[test]
fn the_paired_cache_builds_loads_and_rebuilds() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("c.ddx");
    let model = |k: f64| {
        move || {
            let x = rt::var("x");
            let y = rt::var("y");
            (x * k).exp() * y
        }
    };
    let first = rt::equation_cached(&path, model(1.0)).expect("builds");
    assert!(!first.loaded());
    first.verify(&path).expect("written");
    let second = rt::equation_cached(&path, model(1.0)).expect("loads");
    assert!(second.loaded());
    assert_eq!(answers2(&second), answers2(&first));
    // An edited model rebuilds and overwrites.
    let edited = rt::equation_cached(&path, model(2.0)).expect("rebuilds");
    assert!(!edited.loaded());
    edited.verify(&path).expect("rewritten");
    assert_eq!(
        first.verify(&path).expect_err("stale").code(),
        Errc::ArchiveMismatch
    );
    // A damaged file is rebuilt too, never refused.
    std::fs::write(&path, b"garbage").expect("writes");
    let again = rt::equation_cached(&path, model(2.0)).expect("rebuilds");
    assert!(!again.loaded());
    assert!(rt::equation_cached(&path, model(2.0))
        .expect("loads")
        .loaded());
    // A system under the same path is another shape: rebuilt.
    let sys = rt::equation_cached(&path, || vec![rt::var("x") * rt::var("y")]).expect("builds");
    assert!(!sys.loaded());
}

/// Loads `bytes` as a scalar equation: refused with an archive code, or an equation that
/// answers `expected`. Never anything else.
fn refused_or_identical(bytes: &[u8], expected: &[u64], what: &str) {
    match Equation::<Scalar>::from_bytes(bytes) {
        Err(e) => assert!(
            matches!(
                e.code(),
                Errc::BadArchive | Errc::ArchiveCorrupt | Errc::ArchiveMismatch
            ),
            "{what}: {e}"
        ),
        Ok(eq) => assert_eq!(
            answers(&eq),
            expected,
            "{what}: loaded, answering otherwise"
        ),
    }
}

#[test]
fn every_bit_flip_and_truncation_of_a_small_file_is_refused() {
    let eq = rt::equation(|| rt::var("x").sin() * rt::var("y") + 2.0).expect("builds");
    eq.jacobian([0.5, 1.0]).expect("fits");
    let good = eq.to_bytes().expect("encodes");
    assert!(good.len() < 1024, "a small file: {} bytes", good.len());
    let expected = answers2(&eq);
    for i in 0..good.len() {
        for bit in 0..8 {
            let mut bad = good.clone();
            bad[i] ^= 1 << bit;
            refused_small(&bad, &expected, &format!("byte {i} bit {bit}"));
        }
        refused_small(&good[..i], &expected, &format!("cut at {i}"));
    }
}

/// [`answers`] for a two-symbol scalar equation.
fn answers2(eq: &Equation) -> Vec<u64> {
    let mut out = Vec::new();
    for x in [[0.5, 1.0], [-2.0, 0.25]] {
        out.push(eq.evaluate(x).expect("fits").to_bits());
        out.extend(eq.jacobian(x).expect("fits").iter().map(|v| v.to_bits()));
        out.extend(eq.hessian(x).expect("fits").iter().map(|v| v.to_bits()));
    }
    out
}

fn refused_small(bytes: &[u8], expected: &[u64], what: &str) {
    match Equation::<Scalar>::from_bytes(bytes) {
        Err(e) => assert!(
            matches!(
                e.code(),
                Errc::BadArchive | Errc::ArchiveCorrupt | Errc::ArchiveMismatch
            ),
            "{what}: {e}"
        ),
        Ok(eq) => assert_eq!(
            answers2(&eq),
            expected,
            "{what}: loaded, answering otherwise"
        ),
    }
}

#[test]
fn sampled_damage_to_a_large_file_is_refused() {
    // Every lane, and under the JIT every kernel's code too.
    #[cfg(feature = "jit")]
    let eq = compiled(scalar_model(), false);
    #[cfg(not(feature = "jit"))]
    let eq = scalar_model();
    let expected = answers(&eq);
    let good = eq.to_bytes().expect("encodes");
    assert!(good.len() > 4096, "a large file: {} bytes", good.len());
    // A fixed pseudo-random sample (SplitMix64) of bit flips and cuts, and every bit of
    // the header.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as usize
    };
    let mut flips: Vec<usize> = (0..52 * 8).collect();
    flips.extend((0..400).map(|_| next() % (good.len() * 8)));
    for f in flips {
        let mut bad = good.clone();
        bad[f / 8] ^= 1 << (f % 8);
        refused_or_identical(&bad, &expected, &format!("bit {f}"));
    }
    for _ in 0..100 {
        let cut = next() % good.len();
        refused_or_identical(&good[..cut], &expected, &format!("cut at {cut}"));
    }
}

#[test]
fn errors_name_the_path_and_the_trouble() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("g.ddx");
    let mut bytes = scalar_model().to_bytes().expect("encodes");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).expect("writes");
    let e = Equation::<Scalar>::load(&path).expect_err("damaged");
    assert_eq!(e.code(), Errc::ArchiveCorrupt);
    let text = e.to_string();
    assert!(text.starts_with("archive_corrupt: "), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains("checksum"), "{text}");
    // In memory, the message says so.
    let e = Equation::<Scalar>::from_bytes(&bytes[..20]).expect_err("cut");
    assert!(e.to_string().contains("the equation bytes"), "{e}");
}

/// Writes the seed corpus of the `archive` fuzz target (`fuzz/corpus/archive/`) when
/// `DDX_WRITE_FUZZ_CORPUS` names a directory: each file twice, whole (mode byte 0) and as a
/// body to be wrapped (mode byte 1). Otherwise it only checks that the seeds encode.
#[test]
fn fuzz_seed_corpus() {
    let small = rt::equation(|| rt::var("x").sin() * rt::var("y") + 2.0).expect("builds");
    small.hessian([0.5, 1.0]).expect("fits");
    let quiet = rt::equation(|| rt::var("x").exp()).expect("builds");
    let sys: Equation<System> =
        rt::equation(|| [rt::var("u") * rt::var("v"), rt::var("u").max(rt::var("v"))])
            .expect("builds");
    sys.jacobian([1.0, 2.0]).expect("fits");
    sys.jvp([1.0, 0.0], [1.0, 2.0]).expect("fits");
    let mut contracted = scalar_model();
    let mut o = Options::default();
    o.codegen.contract = true;
    contracted.set_options(o);
    contracted.gradient(POINT).expect("fits");
    let seeds = [
        ("small", small.to_bytes()),
        ("quiet", quiet.to_bytes()),
        ("system", sys.to_bytes()),
        ("contracted", contracted.to_bytes()),
    ];
    let dir = std::env::var_os("DDX_WRITE_FUZZ_CORPUS");
    for (name, bytes) in seeds {
        let bytes = bytes.expect("encodes");
        if let Some(dir) = &dir {
            let dir = Path::new(dir);
            let whole = [&[0u8][..], &bytes].concat();
            let body = [&[1u8][..], &bytes[52..]].concat();
            std::fs::write(dir.join(format!("{name}-file")), whole).expect("writes");
            std::fs::write(dir.join(format!("{name}-body")), body).expect("writes");
        }
    }
}
