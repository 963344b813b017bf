//! Files forged with the format's own types: kernels keyed for another host, a checksummed
//! body that lies about its parts. (Damage and round trips are in `tests/archive.rs`.)

use super::format::{self, Parts};
use crate::{rt, Equation, Errc, LaneKind, Scalar};
use std::path::Path;

fn model() -> Equation {
    rt::equation(|| {
        let a = rt::var("a");
        let b = rt::var("b");
        (a * b).sin() + a.exp() / b
    })
    .expect("builds")
}

fn answers(eq: &Equation) -> Vec<u64> {
    let x = [0.75, 1.5];
    let mut out = vec![eq.evaluate(x).expect("fits").to_bits()];
    out.extend(eq.jacobian(x).expect("fits").iter().map(|v| v.to_bits()));
    out.extend(eq.hessian(x).expect("fits").iter().map(|v| v.to_bits()));
    out
}

/// `bytes` decoded, changed by `edit`, and encoded again (a valid checksum).
fn forged(bytes: &[u8], edit: impl FnOnce(&mut format::Decoded)) -> Vec<u8> {
    let mut d = format::decode(bytes, Path::new("")).expect("decodes");
    edit(&mut d);
    format::encode(
        &Parts {
            scalar: d.scalar,
            model: &d.model,
            lanes: d.lanes.iter().map(|(c, l)| (*c, l)).collect(),
            options: &d.options,
            kernels: &d.kernels,
            bound: d.bound.as_deref(),
        },
        Path::new(""),
    )
    .expect("encodes")
}

#[cfg(feature = "jit")]
#[test]
fn kernels_keyed_for_another_host_are_never_run_and_their_lanes_compile() {
    use crate::jit::{cache::Key, Shape};
    use crate::{Backend, Options};
    let oracle = model();
    let mut eq = model();
    eq.set_options(Options::with_backend(Backend::Compile));
    for kind in [LaneKind::Jacobian, LaneKind::Hessian] {
        assert!(eq.wait_for_kernel_of(kind));
    }
    let bytes = eq.to_bytes().expect("encodes");
    let bytes = forged(&bytes, |d| {
        assert_eq!(d.kernels.len(), 2);
        for k in &mut d.kernels {
            let lane = &d
                .lanes
                .iter()
                .find(|(_, l)| l.kind == k.kind)
                .expect("lane")
                .1;
            k.fingerprint = "x86_64-unknown-linux-gnu x64 has_avx512f=true (forged)".into();
            k.key = Key::new(lane, Shape::Point, k.level, &k.fingerprint).bytes();
            // Code that must never run: a trap, then nothing.
            k.code = vec![0x0f, 0x0b];
        }
    });
    let back = Equation::<Scalar>::from_bytes(&bytes).expect("loads");
    let s = back.jit_status();
    assert_eq!((s.loaded, s.refused), (0, 2), "{s:?}");
    assert!(back.wait_for_kernel_of(LaneKind::Jacobian));
    assert!(back.wait_for_kernel_of(LaneKind::Hessian));
    assert!(back.jit_status().compiled >= 2);
    assert_eq!(answers(&back), answers(&oracle));

    // A kernel whose key is right but whose options differ (another opt level asked) is
    // refused the same way: the key is recomputed from the loaded options.
    let mut eq = model();
    let mut o = Options::with_backend(Backend::Compile);
    o.codegen.opt_level = crate::OptLevel::Off;
    eq.set_options(o);
    assert!(eq.wait_for_kernel_of(LaneKind::Jacobian));
    let bytes = forged(&eq.to_bytes().expect("encodes"), |d| {
        d.options.points = 1024; // a column kernel now, not the point kernel saved
    });
    let back = Equation::<Scalar>::from_bytes(&bytes).expect("loads");
    let s = back.jit_status();
    assert_eq!((s.loaded, s.refused), (0, 1), "{s:?}");
    assert_eq!(answers(&back), answers(&oracle));
}

#[test]
fn checksummed_lies_about_the_structure_are_refused() {
    let eq = model();
    eq.hessian([0.5, 0.5]).expect("fits");
    eq.jacobian([0.5, 0.5]).expect("fits");
    eq.evaluate([0.5, 0.5]).expect("fits");
    let good = eq.to_bytes().expect("encodes");
    let corrupt = |bytes: Vec<u8>, what: &str| {
        let e = Equation::<Scalar>::from_bytes(&bytes).expect_err(what);
        assert_eq!(e.code(), Errc::ArchiveCorrupt, "{what}: {e}");
    };
    corrupt(
        forged(&good, |d| {
            let l = &mut d
                .lanes
                .iter_mut()
                .find(|(_, l)| l.kind == LaneKind::Jacobian)
                .expect("lane")
                .1;
            l.outputs.pop();
        }),
        "a Jacobian lane one output short",
    );
    corrupt(
        forged(&good, |d| {
            let l = &mut d
                .lanes
                .iter_mut()
                .find(|(_, l)| l.kind == LaneKind::Value)
                .expect("lane")
                .1;
            l.seeds = 3;
        }),
        "a value lane with seeds",
    );
}

/// A checksummed file whose lanes are another model's (same symbols and output count,
/// another Jacobian pattern): lanes built later from the file's model disagree with the
/// loaded ones, and no call may panic or overrun — each sizes its blocks from the lane it
/// runs, so the worst is a refused column count.
#[test]
fn lanes_of_another_model_never_overrun() {
    let dense = rt::equation(|| rt::var("x") * rt::var("y")).expect("builds");
    let sparse = rt::equation(|| rt::var("x").sin() + rt::var("y") * 0.0).expect("builds");
    assert_ne!(
        dense.jacobian_pattern().nonzeros(),
        sparse.jacobian_pattern().nonzeros()
    );
    dense.jacobian([1.0, 2.0]).expect("fits");
    dense.hessian([1.0, 2.0]).expect("fits");
    let bytes = forged(&dense.to_bytes().expect("encodes"), |d| {
        d.model = sparse.model().clone();
    });
    let eq = Equation::<Scalar>::from_bytes(&bytes).expect("loads: the lanes are sound");
    // Lanes built from the file's model now disagree with the loaded ones; saved, they
    // load again.
    eq.gradient([0.5, 1.5]).expect("fits");
    let again = eq.to_bytes().expect("encodes");
    Equation::<Scalar>::from_bytes(&again).expect("what it saved loads");
    let x = [0.5, 1.5];
    let _ = eq.jacobian(x).expect("fits");
    let _ = eq.gradient(x).expect("fits");
    let _ = eq.hessian(x).expect("fits");
    let _ = eq.hvp(x, x).expect("fits");
    let cols = [vec![0.5; 4], vec![1.5; 4]];
    let xs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
    for partials in [eq.jacobian_columns(), dense.jacobian_columns()] {
        let mut v = [vec![0.0; 4]];
        let mut d = vec![vec![0.0; 4]; partials];
        let mut h = vec![vec![0.0; 4]; eq.hessian_columns()];
        let mut p = vec![vec![0.0; 4]; 2];
        let mut vv: Vec<&mut [f64]> = v.iter_mut().map(Vec::as_mut_slice).collect();
        let mut dd: Vec<&mut [f64]> = d.iter_mut().map(Vec::as_mut_slice).collect();
        let mut hh: Vec<&mut [f64]> = h.iter_mut().map(Vec::as_mut_slice).collect();
        let mut pp: Vec<&mut [f64]> = p.iter_mut().map(Vec::as_mut_slice).collect();
        let _ = eq.jacobian_batch(&xs, &mut vv, &mut dd);
        let _ = eq.gradient_batch(&xs, &mut dd);
        let _ = eq.hessian_batch(&xs, &mut vv, &mut dd, &mut hh);
        let _ = eq.hvp_batch(&xs, &xs, &mut vv, &mut dd, &mut pp);
    }
}

/// A file whose bound values are not one per parameter is refused as corrupt (the count
/// is checked before any call could read them).
#[test]
fn bound_values_of_the_wrong_count_are_refused() {
    let eq = crate::rt::equation(|| crate::rt::param("k") * crate::rt::var("x")).unwrap();
    let bytes = eq.with_params([2.0]).unwrap().to_bytes().unwrap();
    for bad in [vec![], vec![1.0, 2.0]] {
        let forged = forged(&bytes, |d| d.bound = Some(bad.clone()));
        let e = Equation::<crate::Scalar>::from_bytes(&forged).unwrap_err();
        assert_eq!(e.code(), crate::Errc::ArchiveCorrupt, "{e}");
    }
}

#[test]
fn version_3_files_are_read_with_the_default_answer_limit() {
    use crate::Options;
    let mut eq = model();
    eq.set_options(Options::new().answer_limit(3));
    let x = [0.75, 1.5];
    let v4 = eq.to_bytes().expect("encodes");
    let back = Equation::<Scalar>::from_bytes(&v4).expect("version 4");
    assert_eq!(back.options().answer_limit, 3);
    assert_eq!(
        back.hessian(x).expect_err("4 values").code(),
        Errc::TooLarge
    );

    let v3 = format::as_version_3(&v4);
    assert!(v3.len() < v4.len());
    let old = Equation::<Scalar>::from_bytes(&v3).expect("version 3 is read");
    assert_eq!(old.options().answer_limit, Options::DEFAULT_ANSWER_LIMIT);
    assert_eq!(
        old.hessian(x).expect("the default limit"),
        model().hessian(x).expect("fits")
    );
    assert_eq!(old.symbols(), eq.symbols());

    // A version-4 header over a version-3 body has no tail: corrupt, not misread.
    let mut headless = v3.clone();
    headless[8..12].copy_from_slice(&4u32.to_le_bytes());
    let sum = blake3::Hasher::new()
        .update(&headless[..20])
        .update(&headless[52..])
        .finalize();
    headless[20..52].copy_from_slice(sum.as_bytes());
    let e = Equation::<Scalar>::from_bytes(&headless).expect_err("no tail");
    assert_eq!(e.code(), Errc::ArchiveCorrupt, "{e}");
    // Versions on either side of the ones read are refused as another format.
    for v in [2u32, 5] {
        let mut other = v4.clone();
        other[8..12].copy_from_slice(&v.to_le_bytes());
        let e = Equation::<Scalar>::from_bytes(&other).expect_err("another version");
        assert_eq!(e.code(), Errc::BadArchive, "{e}");
        assert!(e.to_string().contains("reads versions 3 to 4"), "{e}");
    }
}

/// Every cut of a file inside its header (0 to 52 bytes): empty is no ddx file, and each
/// cut holding the magic as far as it reaches is a file cut short (`archive_corrupt`,
/// "truncated", its length), never "no magic", whether the version bytes are there or
/// not; the whole header with no body is a body of the wrong length. A cut of other
/// bytes is "no magic".
#[test]
fn every_cut_inside_the_header_says_truncated() {
    let good = model().to_bytes().expect("encodes");
    let msg = |bytes: &[u8]| {
        let e = Equation::<Scalar>::from_bytes(bytes).expect_err("refused");
        (e.code(), e.to_string())
    };
    let (code, text) = msg(&[]);
    assert_eq!(code, Errc::BadArchive, "{text}");
    assert!(
        text.contains("empty") && text.contains("no ddx magic"),
        "{text}"
    );
    for n in 1..format::HEADER {
        let (code, text) = msg(&good[..n]);
        assert_eq!(code, Errc::ArchiveCorrupt, "{n}: {text}");
        let bytes = if n == 1 { "byte" } else { "bytes" };
        assert!(
            text.contains(&format!("truncated to {n} {bytes}"))
                && text.contains("shorter than its 52-byte header")
                && !text.contains("no ddx magic"),
            "{n}: {text}"
        );
        let mut other = good[..n].to_vec();
        other[n - 1] ^= 0x40;
        let (code, text) = msg(&other);
        if n <= 8 {
            assert_eq!(code, Errc::BadArchive, "{n}: {text}");
            assert!(text.contains("no ddx magic"), "{n}: {text}");
        } else if (9..12).contains(&n) {
            // The version cut short: still truncated.
            assert_eq!(code, Errc::ArchiveCorrupt, "{n}: {text}");
        }
    }
    let (code, text) = msg(&good[..format::HEADER]);
    assert_eq!(code, Errc::ArchiveCorrupt, "{text}");
    assert!(text.contains("the header gives a body of"), "{text}");
}

#[test]
fn the_fuzzers_frame_is_the_files_own() {
    // `crate::fuzzing::frame_archive_body` of a file's body is the file: the `archive`
    // fuzz target's framed bodies carry this build's version and a correct checksum, and
    // reach the structure checks (its hand-written header once stayed at version 1, so
    // every body it framed stopped at the version check).
    let eq = model();
    eq.hessian([0.5, 1.5]).expect("fits");
    let bytes = eq.to_bytes().expect("encodes");
    let framed = crate::fuzzing::frame_archive_body(&bytes[format::HEADER..]);
    assert_eq!(framed, bytes);
    let back = Equation::<Scalar>::from_bytes(&framed).expect("loads");
    assert_eq!(answers(&back), answers(&eq));
}
