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

#[cfg(feature = "jit")]
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
        assert!(eq.wait_for_kernel(kind));
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
    assert!(back.wait_for_kernel(LaneKind::Jacobian));
    assert!(back.wait_for_kernel(LaneKind::Hessian));
    assert!(back.jit_status().compiled >= 2);
    assert_eq!(answers(&back), answers(&oracle));

    // A kernel whose key is right but whose options differ (another opt level asked) is
    // refused the same way: the key is recomputed from the loaded options.
    let mut eq = model();
    let mut o = Options::with_backend(Backend::Compile);
    o.codegen.opt_level = crate::OptLevel::None;
    eq.set_options(o);
    assert!(eq.wait_for_kernel(LaneKind::Jacobian));
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
            d.lanes.retain(|(_, l)| l.kind != LaneKind::Gradient);
        }),
        "patterns without the gradient lane",
    );
    corrupt(
        forged(&good, |d| {
            let l = &mut d
                .lanes
                .iter_mut()
                .find(|(_, l)| l.kind == LaneKind::Jacobian)
                .expect("lane")
                .1;
            l.pattern = Some(ddx_ir::Sparsity::new(1, 2, [(0, 0)]));
            l.outputs.pop();
        }),
        "lanes disagreeing on the pattern",
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
