//! Batch calls against per-point calls on random graphs (every operation, awkward
//! constants and inputs), bit for bit — NaN matching NaN — for every lane, batch lengths
//! 0, 1, 2, 3, the block size ± 1 and a few thousand, on 1 and 2 threads.

// Points and columns are indexed as the batch layout states them.
#![allow(clippy::needless_range_loop)]

use ddx::ir::testing::{random_model, ModelSize, Rng};
use ddx::{Equation, System};
use proptest::prelude::*;

/// Inputs: ordinary numbers mostly, and the values that break things.
fn input(rng: &mut Rng) -> f64 {
    const AWKWARD: [f64; 9] = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        5e-324,
        1e300,
    ];
    if rng.percent(15) {
        AWKWARD[rng.below(AWKWARD.len())]
    } else {
        rng.unit() * 6.0 - 3.0
    }
}

fn block(rng: &mut Rng, columns: usize, len: usize) -> Vec<Vec<f64>> {
    (0..columns)
        .map(|_| (0..len).map(|_| input(rng)).collect())
        .collect()
}

fn cols(v: &[Vec<f64>]) -> Vec<&[f64]> {
    v.iter().map(Vec::as_slice).collect()
}

fn cols_mut(v: &mut [Vec<f64>]) -> Vec<&mut [f64]> {
    v.iter_mut().map(Vec::as_mut_slice).collect()
}

fn poisoned(columns: usize, len: usize) -> Vec<Vec<f64>> {
    vec![vec![f64::from_bits(0x7ff8_dead_beef_0001); len]; columns]
}

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn row(block: &[Vec<f64>], k: usize) -> Vec<f64> {
    block.iter().map(|c| c[k]).collect()
}

/// Every batch call of `eq` against the per-point calls on `len` random points.
fn conform(eq: &Equation<System>, seed: u64, len: usize) -> Result<(), TestCaseError> {
    let mut rng = Rng::new(seed ^ 0x5eed);
    let (n, m) = (eq.arity(), eq.outputs());
    let (c, h) = (eq.jacobian_columns(), eq.hessian_columns());
    let xs = block(&mut rng, n, len);
    let vs = block(&mut rng, n, len);
    let ws = block(&mut rng, m, len);
    let x = cols(&xs);

    let mut f = poisoned(m, len);
    eq.evaluate_batch(&x, &mut cols_mut(&mut f)).unwrap();
    let (mut jf, mut jg) = (poisoned(m, len), poisoned(c, len));
    eq.jacobian_batch(&x, &mut cols_mut(&mut jf), &mut cols_mut(&mut jg))
        .unwrap();
    let mut gg = poisoned(c, len);
    eq.gradient_batch(&x, &mut cols_mut(&mut gg)).unwrap();
    let (mut vf, mut jv) = (poisoned(m, len), poisoned(m, len));
    eq.jvp_batch(
        &x,
        &cols(&vs),
        &mut cols_mut(&mut vf),
        &mut cols_mut(&mut jv),
    )
    .unwrap();
    let (mut wf, mut wj) = (poisoned(m, len), poisoned(n, len));
    eq.vjp_batch(
        &x,
        &cols(&ws),
        &mut cols_mut(&mut wf),
        &mut cols_mut(&mut wj),
    )
    .unwrap();
    let (mut hf, mut hg, mut hh) = (poisoned(m, len), poisoned(c, len), poisoned(m * h, len));
    eq.hessian_batch(
        &x,
        &mut cols_mut(&mut hf),
        &mut cols_mut(&mut hg),
        &mut cols_mut(&mut hh),
    )
    .unwrap();

    for k in 0..len {
        let p = row(&xs, k);
        let value = eq.evaluate(&p).unwrap();
        let jac = eq.jacobian(&p).unwrap();
        let hess = eq.hessian(&p).unwrap();
        for i in 0..m {
            for (name, got) in [
                ("evaluate", f[i][k]),
                ("jacobian", jf[i][k]),
                ("jvp", vf[i][k]),
                ("vjp", wf[i][k]),
                ("hessian", hf[i][k]),
            ] {
                prop_assert!(
                    same(got, value[i]),
                    "{name} value {i} at point {k}: {got} vs {}",
                    value[i]
                );
            }
        }
        for cell in eq.jacobian_pattern().entries() {
            let want = jac[cell.row * n + cell.column];
            for (name, got) in [
                ("jacobian", jg[cell.slot][k]),
                ("gradient", gg[cell.slot][k]),
                ("hessian", hg[cell.slot][k]),
            ] {
                prop_assert!(
                    same(got, want),
                    "{name} partial {cell:?} at {k}: {got} vs {want}"
                );
            }
        }
        let per = eq.jvp(row(&vs, k), &p).unwrap();
        for i in 0..m {
            prop_assert!(same(jv[i][k], per[i]), "jvp {i} at {k}");
        }
        let per = eq.vjp(&row(&ws, k), &p).unwrap();
        for j in 0..n {
            prop_assert!(same(wj[j][k], per[j]), "vjp {j} at {k}");
        }
        for r in 0..m {
            for i in 0..n {
                for j in 0..n {
                    if let Some(col) = eq.hessian_cell(i, j) {
                        let want = hess[r * n * n + i * n + j];
                        prop_assert!(same(hh[r * h + col][k], want), "H{r}({i},{j}) at {k}");
                    }
                }
            }
        }
    }
    if m == 1 {
        let (mut pf, mut pg, mut hv) = (poisoned(1, len), poisoned(c, len), poisoned(n, len));
        eq.hvp_batch(
            &x,
            &cols(&vs),
            &mut cols_mut(&mut pf),
            &mut cols_mut(&mut pg),
            &mut cols_mut(&mut hv),
        )
        .unwrap();
        let scalar = Equation::<ddx::Scalar>::try_from(eq.model().clone()).unwrap();
        for k in 0..len {
            let per = scalar.hvp(row(&vs, k), row(&xs, k)).unwrap();
            for j in 0..n {
                prop_assert!(same(hv[j][k], per[j]), "hvp {j} at {k}");
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn batches_equal_per_point_calls_on_random_graphs(
        seed in any::<u64>(),
        nodes in 1usize..40,
        outputs in 1usize..3,
        len in prop::sample::select(vec![0usize, 1, 2, 3, 15, 16, 17, 255, 257, 3001]),
        threads in 1usize..=2,
    ) {
        let size = ModelSize { nodes, outputs, ..ModelSize::default() };
        let eq = Equation::from(random_model(seed, &size));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| conform(&eq, seed, len))?;
    }
}
