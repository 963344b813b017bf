//! `Codegen::contract`: every engine runs the contracted graph and they agree to the bit;
//! the contracted answers stay within rounding of the plain ones; the lanes hold `fma`.

mod common;

use common::{point, random_model, Rng};
use ddx::ir::Op;
use ddx::{Backend, LaneKind, Options};

fn with(contract: bool, backend: Backend) -> Options {
    let mut o = Options::with_backend(backend);
    o.codegen.contract = contract;
    o
}

#[test]
fn every_engine_agrees_on_the_contracted_graph() {
    let mut rng = Rng::new(0xc0);
    for seed in 0..40u64 {
        let n = 2 + (seed % 4) as usize;
        let plain = random_model(seed, n, 12 + (seed % 20) as usize, seed % 2 == 0);
        let mut interp = random_model(seed, n, 12 + (seed % 20) as usize, seed % 2 == 0);
        interp.set_options(with(true, Backend::Interpret));
        let mut jit = random_model(seed, n, 12 + (seed % 20) as usize, seed % 2 == 0);
        jit.set_options(with(true, Backend::Compile));
        let fmas = interp
            .lane(LaneKind::Gradient)
            .unwrap()
            .graph
            .nodes()
            .iter()
            .filter(|n| n.op() == Some(Op::Fma))
            .count();
        let products = plain
            .lane(LaneKind::Gradient)
            .unwrap()
            .graph
            .nodes()
            .iter()
            .filter(|n| n.op() == Some(Op::Mul))
            .count();
        assert!(fmas > 0 || products == 0, "seed {seed}: nothing contracted");
        assert!(
            jit.wait_for_kernel_of(LaneKind::Gradient) && jit.uses_kernel_of(LaneKind::Gradient)
        );
        let len = 9;
        let xs: Vec<Vec<f64>> = (0..len).map(|_| point(&mut rng, n)).collect();
        let cols: Vec<Vec<f64>> = (0..n).map(|j| xs.iter().map(|p| p[j]).collect()).collect();
        let colr: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
        let c = interp.jacobian_columns();
        let mut batch = vec![vec![f64::NAN; len]; c];
        let mut bref: Vec<&mut [f64]> = batch.iter_mut().map(Vec::as_mut_slice).collect();
        interp.gradient_batch(&colr, &mut bref).unwrap();
        for (k, p) in xs.iter().enumerate() {
            let a = interp.gradient(p).unwrap();
            let b = jit.gradient(p).unwrap();
            let want = plain.gradient(p).unwrap();
            for j in 0..n {
                assert_eq!(
                    a[j].to_bits(),
                    b[j].to_bits(),
                    "seed {seed}: interpreter vs JIT"
                );
                let err = (a[j] - want[j]).abs();
                assert!(
                    err <= 1e-9 * want[j].abs().max(1.0),
                    "seed {seed}: {} vs plain {}",
                    a[j],
                    want[j]
                );
            }
            for cell in interp.jacobian_pattern().entries() {
                assert_eq!(
                    batch[cell.slot][k].to_bits(),
                    a[cell.column].to_bits(),
                    "seed {seed}: batch"
                );
            }
        }
    }
}

#[test]
fn contracting_is_rounding_once() {
    // 0.1*10 - 1 is 0 in two roundings and 2⁻⁵⁴·5 ≈ 5.55e-17 in one.
    let plain = ddx::rt::equation_text("x*10 - 1").unwrap();
    let mut fused = ddx::rt::equation_text("x*10 - 1").unwrap();
    fused.set_options(with(true, Backend::Interpret));
    assert_eq!(plain.evaluate(0.1).unwrap(), 0.0);
    assert_eq!(fused.evaluate(0.1).unwrap(), 0.1f64.mul_add(10.0, -1.0));
    assert_ne!(fused.evaluate(0.1).unwrap(), 0.0);
    // Switching back gives the plain graph again.
    fused.set_options(with(false, Backend::Interpret));
    assert_eq!(fused.evaluate(0.1).unwrap(), 0.0);
}
