//! Batch calls against per-point calls, bit for bit, on every NIST model: for batch
//! lengths 0, 1, 2, 3, the block size ± 1 and a few thousand, on 1 and 2 threads; buffers
//! poisoned with NaN are fully written; on every error nothing is written.

use ddx::{Block, Equation, Errc, Error, System};
use ddx_models::nist;

/// `len` points spread around the dataset's Start 2 (deterministic).
fn points(ds: &nist::Dataset, len: usize) -> Vec<Vec<f64>> {
    ds.parameters
        .iter()
        .enumerate()
        .map(|(j, p)| {
            (0..len)
                .map(|k| p.start2 * (1.0 + 0.05 * (((k * 7 + j * 3) % 23) as f64 / 23.0 - 0.5)))
                .collect()
        })
        .collect()
}

fn cols(v: &[Vec<f64>]) -> Vec<&[f64]> {
    v.iter().map(Vec::as_slice).collect()
}

fn cols_mut(v: &mut [Vec<f64>]) -> Vec<&mut [f64]> {
    v.iter_mut().map(Vec::as_mut_slice).collect()
}

fn nan_block(columns: usize, len: usize) -> Vec<Vec<f64>> {
    vec![vec![f64::NAN; len]; columns]
}

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits()
}

/// Every batch call of `eq` over `xs` equals the per-point calls, bit for bit.
fn check_all(name: &str, eq: &Equation<System>, xs: &[Vec<f64>]) {
    let len = xs[0].len();
    let (n, m, c) = (eq.arity(), eq.outputs(), eq.jacobian_columns());
    let pattern = eq.jacobian_pattern();
    let x = cols(xs);
    let mut values = nan_block(m, len);
    let mut partials = nan_block(c, len);
    eq.jacobian_batch(&x, &mut cols_mut(&mut values), &mut cols_mut(&mut partials))
        .unwrap();
    let mut only_values = nan_block(m, len);
    eq.evaluate_batch(&x, &mut cols_mut(&mut only_values))
        .unwrap();
    let mut only_partials = nan_block(c, len);
    eq.gradient_batch(&x, &mut cols_mut(&mut only_partials))
        .unwrap();
    let dirs: Vec<Vec<f64>> = (0..n)
        .map(|j| (0..len).map(|k| ((j + k) % 3) as f64 - 1.0).collect())
        .collect();
    let mut jv_values = nan_block(m, len);
    let mut jv = nan_block(m, len);
    eq.jvp_batch(
        &x,
        &cols(&dirs),
        &mut cols_mut(&mut jv_values),
        &mut cols_mut(&mut jv),
    )
    .unwrap();
    let weights: Vec<Vec<f64>> = (0..m)
        .map(|i| (0..len).map(|k| ((i * 5 + k) % 4) as f64 * 0.5).collect())
        .collect();
    let mut wj_values = nan_block(m, len);
    let mut wj = nan_block(n, len);
    eq.vjp_batch(
        &x,
        &cols(&weights),
        &mut cols_mut(&mut wj_values),
        &mut cols_mut(&mut wj),
    )
    .unwrap();

    for k in 0..len {
        let p: Vec<f64> = xs.iter().map(|col| col[k]).collect();
        let f = eq.evaluate(&p).unwrap();
        let j = eq.jacobian(&p).unwrap();
        for i in 0..m {
            assert!(same(values[i][k], f[i]), "{name} value {i} at point {k}");
            assert!(
                same(only_values[i][k], f[i]),
                "{name} evaluate_batch {i} at {k}"
            );
            assert!(same(jv_values[i][k], f[i]) && same(wj_values[i][k], f[i]));
        }
        for cell in pattern.entries() {
            let want = j[cell.row * n + cell.column];
            assert!(
                same(partials[cell.slot][k], want),
                "{name} partial {cell:?} at {k}"
            );
            assert!(
                same(only_partials[cell.slot][k], want),
                "{name} gradient_batch {cell:?} at {k}"
            );
        }
        let v: Vec<f64> = dirs.iter().map(|col| col[k]).collect();
        let per_point = eq.jvp(&v, &p).unwrap();
        for i in 0..m {
            assert!(same(jv[i][k], per_point[i]), "{name} jvp {i} at {k}");
        }
        let w: Vec<f64> = weights.iter().map(|col| col[k]).collect();
        let per_point = eq.vjp(&w, &p).unwrap();
        for j in 0..n {
            assert!(same(wj[j][k], per_point[j]), "{name} vjp {j} at {k}");
        }
    }
}

#[test]
fn batches_equal_per_point_calls_on_every_nist_model() {
    let pool = |t| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap()
    };
    let (one, two) = (pool(1), pool(2));
    for ds in nist::load_all(&nist::data_dir()).unwrap() {
        let eq = ds.residual_system().unwrap();
        let block = 16; // the smallest block any program uses; larger ones are multiples
        for len in [0, 1, 2, 3, block - 1, block + 1, 255, 257] {
            one.install(|| check_all(&ds.name, &eq, &points(&ds, len)));
        }
        two.install(|| check_all(&ds.name, &eq, &points(&ds, 3)));
    }
}

#[test]
fn large_batches_split_across_threads_give_the_same_bits() {
    // Gauss1's residual system is large enough (250 × 8 cells) that a few thousand points
    // pass the parallel threshold.
    let ds = nist::load(&nist::data_dir().join("Gauss1.dat")).unwrap();
    let eq = ds.residual_system().unwrap();
    let len = 3000;
    let xs = points(&ds, len);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut partials = nan_block(eq.jacobian_columns(), len);
        let mut values = nan_block(eq.outputs(), len);
        pool.install(|| {
            eq.jacobian_batch(
                &cols(&xs),
                &mut cols_mut(&mut values),
                &mut cols_mut(&mut partials),
            )
        })
        .unwrap();
        (values, partials)
    };
    let (v1, p1) = run(1);
    let (v2, p2) = run(2);
    let bits = |b: &[Vec<f64>]| b.iter().flatten().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&v1), bits(&v2));
    assert_eq!(bits(&p1), bits(&p2));
    assert!(
        p1.iter().flatten().all(|v| !v.is_nan()),
        "every cell written"
    );
    two_thread_points_match_per_point(&eq, &xs, &p2);
}

fn two_thread_points_match_per_point(
    eq: &Equation<System>,
    xs: &[Vec<f64>],
    partials: &[Vec<f64>],
) {
    let n = eq.arity();
    for k in [0, 1, 1499, 1500, 2999] {
        let p: Vec<f64> = xs.iter().map(|col| col[k]).collect();
        let j = eq.jacobian(&p).unwrap();
        for cell in eq.jacobian_pattern().entries() {
            assert!(same(partials[cell.slot][k], j[cell.row * n + cell.column]));
        }
    }
}

#[test]
fn errors_write_nothing() {
    let ds = nist::load(&nist::data_dir().join("Misra1a.dat")).unwrap();
    let eq = ds.residual_system().unwrap();
    let (m, c) = (eq.outputs(), eq.jacobian_columns());
    assert_eq!(
        (eq.value_columns(), c, eq.jvp_columns(), eq.vjp_columns()),
        (14, 28, 14, 2)
    );
    let xs = points(&ds, 5);
    let short = vec![xs[0].clone(), xs[1][..4].to_vec()];
    let mut values = nan_block(m, 5);
    let mut partials = nan_block(c, 5);
    let untouched = |v: &[Vec<f64>]| v.iter().flatten().all(|x| x.is_nan());

    let e = eq.jacobian_batch(
        &cols(&xs[..1]),
        &mut cols_mut(&mut values),
        &mut cols_mut(&mut partials),
    );
    assert_eq!(
        e.unwrap_err(),
        Error::WrongColumnCount {
            block: Block::Points,
            expected: 2,
            got: 1
        }
    );
    let e = eq.jacobian_batch(
        &cols(&short),
        &mut cols_mut(&mut values),
        &mut cols_mut(&mut partials),
    );
    assert_eq!(
        e.unwrap_err(),
        Error::ColumnLength {
            block: Block::Points,
            column: 1,
            expected: 5,
            got: 4
        }
    );
    let e = eq.jacobian_batch(
        &cols(&xs),
        &mut cols_mut(&mut values[..3]),
        &mut cols_mut(&mut partials),
    );
    assert_eq!(e.unwrap_err().code(), Errc::WrongColumnCount);
    let mut short_partials = partials.clone();
    short_partials[27].pop();
    let e = eq.jacobian_batch(
        &cols(&xs),
        &mut cols_mut(&mut values),
        &mut cols_mut(&mut short_partials),
    );
    assert_eq!(
        e.unwrap_err(),
        Error::ColumnLength {
            block: Block::Partials,
            column: 27,
            expected: 5,
            got: 4
        }
    );
    assert!(untouched(&values) && untouched(&partials) && untouched(&short_partials));

    let mut products = nan_block(m, 5);
    let e = eq.jvp_batch(
        &cols(&xs),
        &cols(&xs[..1]),
        &mut cols_mut(&mut values),
        &mut cols_mut(&mut products),
    );
    assert_eq!(
        e.unwrap_err(),
        Error::WrongColumnCount {
            block: Block::Directions,
            expected: 2,
            got: 1
        }
    );
    let e = eq.vjp_batch(
        &cols(&xs),
        &cols(&xs),
        &mut cols_mut(&mut values),
        &mut cols_mut(&mut products),
    );
    assert_eq!(
        e.unwrap_err(),
        Error::WrongColumnCount {
            block: Block::Weights,
            expected: 14,
            got: 2
        }
    );
    let e = eq.gradient_batch(&cols(&xs), &mut cols_mut(&mut partials[..2]));
    assert_eq!(
        e.unwrap_err(),
        Error::WrongColumnCount {
            block: Block::Partials,
            expected: 28,
            got: 2
        }
    );
    let e = eq.evaluate_batch(&cols(&xs), &mut cols_mut(&mut partials));
    assert_eq!(
        e.unwrap_err(),
        Error::WrongColumnCount {
            block: Block::Values,
            expected: 14,
            got: 28
        }
    );
    assert!(untouched(&values) && untouched(&partials) && untouched(&products));
    assert!(Error::WrongColumnCount {
        block: Block::Points,
        expected: 2,
        got: 1
    }
    .to_string()
    .starts_with("wrong_column_count"));
}

#[test]
fn second_order_batches_equal_per_point_calls() {
    let pool = |t| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap()
    };
    let (one, two) = (pool(1), pool(2));
    for name in [
        "Misra1a", "Chwirut2", "Gauss1", "ENSO", "Nelson", "Roszman1",
    ] {
        let ds = nist::load(&nist::data_dir().join(format!("{name}.dat"))).unwrap();
        let eq = ds.rss_equation().unwrap();
        let (n, c, h) = (eq.arity(), eq.jacobian_columns(), eq.hessian_columns());
        for (threads, len) in [(&one, 0), (&one, 1), (&one, 17), (&two, 33)] {
            let xs = points(&ds, len);
            let x = cols(&xs);
            let (mut f, mut g, mut hb) = (nan_block(1, len), nan_block(c, len), nan_block(h, len));
            threads
                .install(|| {
                    eq.hessian_batch(
                        &x,
                        &mut cols_mut(&mut f),
                        &mut cols_mut(&mut g),
                        &mut cols_mut(&mut hb),
                    )
                })
                .unwrap();
            let dirs: Vec<Vec<f64>> = (0..n)
                .map(|j| (0..len).map(|k| ((j * 3 + k) % 5) as f64 - 2.0).collect())
                .collect();
            let (mut f2, mut g2, mut hv) =
                (nan_block(1, len), nan_block(c, len), nan_block(n, len));
            threads
                .install(|| {
                    eq.hvp_batch(
                        &x,
                        &cols(&dirs),
                        &mut cols_mut(&mut f2),
                        &mut cols_mut(&mut g2),
                        &mut cols_mut(&mut hv),
                    )
                })
                .unwrap();
            for k in 0..len {
                let p: Vec<f64> = xs.iter().map(|col| col[k]).collect();
                let fp = eq.evaluate(&p).unwrap();
                let hp = eq.hessian(&p).unwrap();
                let jp = eq.jacobian(&p).unwrap();
                assert!(
                    same(f[0][k], fp) && same(f2[0][k], fp),
                    "{name} value at {k}"
                );
                for cell in eq.jacobian_pattern().entries() {
                    assert!(
                        same(g[cell.slot][k], jp[cell.column]),
                        "{name} partial at {k}"
                    );
                    assert!(
                        same(g2[cell.slot][k], jp[cell.column]),
                        "{name} hvp partial at {k}"
                    );
                }
                for i in 0..n {
                    for j in 0..n {
                        let dense = hp[i * n + j];
                        match eq.hessian_cell(i, j) {
                            Some(col) => {
                                assert!(same(hb[col][k], dense), "{name} H({i},{j}) at {k}")
                            }
                            None => assert_eq!(dense, 0.0, "{name} H({i},{j}) off the pattern"),
                        }
                    }
                }
                let v: Vec<f64> = dirs.iter().map(|col| col[k]).collect();
                let per_point = eq.hvp(&v, &p).unwrap();
                for j in 0..n {
                    assert!(same(hv[j][k], per_point[j]), "{name} hvp {j} at {k}");
                }
            }
        }
    }
}

#[test]
fn second_order_batch_errors_write_nothing() {
    let ds = nist::load(&nist::data_dir().join("Misra1a.dat")).unwrap();
    let eq = ds.rss_equation().unwrap();
    let xs = points(&ds, 4);
    let (c, h) = (eq.jacobian_columns(), eq.hessian_columns());
    assert_eq!(eq.hvp_columns(), 2);
    let (mut f, mut g, mut hb) = (nan_block(1, 4), nan_block(c, 4), nan_block(h, 4));
    let e = eq.hessian_batch(
        &cols(&xs),
        &mut cols_mut(&mut f),
        &mut cols_mut(&mut g),
        &mut cols_mut(&mut hb[..1]),
    );
    assert_eq!(
        e.unwrap_err(),
        Error::WrongColumnCount {
            block: Block::Hessians,
            expected: h,
            got: 1
        }
    );
    let mut hv = nan_block(2, 4);
    let e = eq.hvp_batch(
        &cols(&xs),
        &cols(&xs[..1]),
        &mut cols_mut(&mut f),
        &mut cols_mut(&mut g),
        &mut cols_mut(&mut hv),
    );
    assert_eq!(e.unwrap_err().code(), Errc::WrongColumnCount);
    assert!([&f, &g, &hb, &hv]
        .iter()
        .all(|b| b.iter().flatten().all(|v| v.is_nan())));
    // hvp is one output only; a system's hessian block is m blocks.
    let sys = ds.residual_system().unwrap();
    let (m, sc, sh) = (sys.outputs(), sys.jacobian_columns(), sys.hessian_columns());
    let (mut f, mut g, mut hv) = (nan_block(m, 4), nan_block(sc, 4), nan_block(2, 4));
    let e = sys.hvp_batch(
        &cols(&xs),
        &cols(&xs),
        &mut cols_mut(&mut f),
        &mut cols_mut(&mut g),
        &mut cols_mut(&mut hv),
    );
    assert_eq!(e.unwrap_err().code(), Errc::NotScalar);
    let mut hb = nan_block(m * sh, 4);
    sys.hessian_batch(
        &cols(&xs),
        &mut cols_mut(&mut f),
        &mut cols_mut(&mut g),
        &mut cols_mut(&mut hb),
    )
    .unwrap();
    let p: Vec<f64> = xs.iter().map(|col| col[2]).collect();
    let dense = sys.hessian(&p).unwrap();
    for r in 0..m {
        for i in 0..2 {
            for j in 0..2 {
                let want = dense[r * 4 + i * 2 + j];
                match sys.hessian_cell(i, j) {
                    Some(col) => assert!(same(hb[r * sh + col][2], want), "output {r} H({i},{j})"),
                    None => assert_eq!(want, 0.0),
                }
            }
        }
    }
}
