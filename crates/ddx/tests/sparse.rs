//! Answers too large to be dense (issue 11): the dense calls refuse past
//! `Options::answer_limit` with `too_large` instead of aborting the process on a failed
//! allocation, and the sparse per-point answers (pattern + values) agree with the dense
//! ones, bit for bit, wherever both fit.

mod common;

use ddx::ir::testing::{random_model, ModelSize};
use ddx::{rt, Equation, Errc, Error, Expr, Options, Shape, System};

/// Symbol `i` of `n`, zero-padded so that byte order is index order.
fn name(i: usize) -> String {
    format!("x{i:06}")
}

/// The tridiagonal system `rᵢ = xᵢ₋₁ − 2xᵢ + xᵢ₊₁ + xᵢ²·xᵢ₊₁` (ends dropped) of `n`
/// symbols: `∂²rᵢ/∂xᵢ² = 2xᵢ₊₁`, `∂²rᵢ/∂xᵢ∂xᵢ₊₁ = 2xᵢ`, nothing else.
fn tridiagonal_system(n: usize) -> Equation<System> {
    rt::equation(|| {
        let x: Vec<Expr> = (0..n).map(|i| rt::var(&name(i))).collect();
        (0..n)
            .map(|i| {
                let mut r = -2.0 * x[i];
                if i > 0 {
                    r += x[i - 1];
                }
                if i + 1 < n {
                    r += x[i + 1] + x[i] * x[i] * x[i + 1];
                }
                r
            })
            .collect::<Vec<_>>()
    })
    .unwrap()
}

/// The scalar `f = Σ xᵢ²·xᵢ₊₁ + sin xᵢ` of `n` symbols: a tridiagonal Hessian,
/// `H(i, i) = 2xᵢ₊₁ − sin xᵢ` (`− sin xᵢ` for the last), `H(i, i+1) = 2xᵢ`.
fn tridiagonal_scalar(n: usize) -> Equation {
    rt::equation(|| {
        let x: Vec<Expr> = (0..n).map(|i| rt::var(&name(i))).collect();
        let mut f = Expr::from(0.0);
        for i in 0..n {
            f += x[i].sin();
            if i + 1 < n {
                f += x[i] * x[i] * x[i + 1];
            }
        }
        f
    })
    .unwrap()
}

fn same_bits(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// Every sparse value equals the dense answer's cell, and the dense answer is zero off
/// the pattern.
fn check_against_dense<S: Shape>(eq: &Equation<S>, x: &[f64]) {
    let (m, n) = (eq.outputs(), eq.arity());
    let dense = eq.jacobian(x).unwrap();
    let sparse = eq.sparse_jacobian(x).unwrap();
    assert_eq!(
        sparse.blocks(),
        usize::from(sparse.pattern().nonzeros() > 0)
    );
    let mut scattered = vec![f64::NAN; m * n];
    sparse
        .pattern()
        .scatter(sparse.values(), &mut scattered)
        .unwrap();
    assert!(same_bits(&scattered, &dense), "{scattered:?} vs {dense:?}");
    let mut into = vec![f64::NAN; sparse.values().len()];
    eq.sparse_jacobian_into(x, &mut into).unwrap();
    assert!(same_bits(&into, sparse.values()));

    let dense = eq.hessian(x).unwrap();
    let sparse = eq.sparse_hessian(x).unwrap();
    let nnz = sparse.pattern().nonzeros();
    assert_eq!(sparse.values().len(), m * nnz);
    for r in 0..m {
        let h = &dense[r * n * n..(r + 1) * n * n];
        let mut scattered = vec![f64::NAN; n * n];
        let block = sparse.block(r).unwrap();
        sparse.pattern().scatter(block, &mut scattered).unwrap();
        assert!(
            same_bits(&scattered, h),
            "output {r}: {scattered:?} vs {h:?}"
        );
        for (i, j, v) in sparse.triplets(r) {
            assert!(same_bits(&[v], &[h[i * n + j]]));
        }
    }
    let mut into = vec![f64::NAN; m * nnz];
    eq.sparse_hessian_into(x, &mut into).unwrap();
    assert!(same_bits(&into, sparse.values()));
}

#[test]
fn sparse_answers_equal_the_dense_ones_on_random_models() {
    let mut rng = common::Rng::new(11);
    for seed in 0..40u64 {
        let size = ModelSize {
            symbols: 1 + (seed as usize % 6),
            nodes: 30,
            outputs: 1 + (seed as usize % 3),
            ..ModelSize::default()
        };
        let eq = Equation::<System>::from(random_model(seed, &size));
        let x = common::point(&mut rng, eq.arity());
        check_against_dense(&eq, &x);
    }
    for seed in 0..20u64 {
        let eq = common::random_model(seed, 4, 40, seed % 2 == 0);
        let x = common::point(&mut rng, eq.arity());
        check_against_dense(&eq, &x);
    }
    check_against_dense(&common::huber(), &[2.0, 0.5]);
}

#[test]
fn sparse_hessian_of_a_tridiagonal_system_is_its_closed_form() {
    let n = 60;
    let eq = tridiagonal_system(n);
    let x: Vec<f64> = (0..n).map(|i| 0.5 + 0.01 * i as f64).collect();
    check_against_dense(&eq, &x);
    let h = eq.sparse_hessian(&x[..]).unwrap();
    // The last residual is linear: no `(n−1, n−1)` cell.
    assert_eq!(h.pattern().nonzeros(), 3 * n - 3);
    for r in 0..n {
        for (i, j, v) in h.triplets(r) {
            let want = match (i == r, j == r) {
                (true, true) if r + 1 < n => 2.0 * x[r + 1],
                (true, false) | (false, true) if i.max(j) == r + 1 => 2.0 * x[r],
                _ => 0.0,
            };
            assert_eq!(v, want, "H_{r}({i}, {j})");
        }
    }
}

#[test]
fn a_2000_symbol_system_hessian_is_refused_not_aborted() {
    // Dense, 2000 × 2000 × 2000 values: 64 GB. Today's code asks the allocator for it
    // and the process aborts; now the call refuses before computing anything.
    let n = 2000;
    let eq = tridiagonal_system(n);
    let x = vec![0.5; n];
    let e = eq.hessian(&x[..]).unwrap_err();
    assert_eq!(e.code(), Errc::TooLarge);
    assert_eq!(
        e,
        Error::TooLarge {
            call: "hessian",
            values: 8_000_000_000,
            limit: Options::DEFAULT_ANSWER_LIMIT,
        }
    );
    assert!(e
        .to_string()
        .starts_with("too_large: `hessian` would answer"));
    // The dense Jacobian (4 · 10⁶ values) fits; its sparse form holds 3n − 2.
    let j = eq.jacobian(&x[..]).unwrap();
    let s = eq.sparse_jacobian(&x[..]).unwrap();
    assert_eq!(s.values().len(), 3 * n - 2);
    for (i, k, v) in s.triplets(0) {
        assert_eq!(j[i * n + k].to_bits(), v.to_bits());
    }
}

#[test]
fn a_large_scalar_hessian_is_sparse() {
    // 10⁵ symbols: a dense Hessian of 10¹⁰ values (80 GB) is refused at once, before
    // any lane is built.
    let big = tridiagonal_scalar(100_000);
    let e = big.hessian(&vec![1.0; 100_000][..]).unwrap_err();
    assert_eq!(e.code(), Errc::TooLarge);
    drop(big);
    // The sparse answer holds 3n − 2 cells; at 2000 symbols the dense one (4 · 10⁶
    // values) is refused once the limit is below it.
    let n = 2000;
    let mut eq = tridiagonal_scalar(n);
    let mut o = eq.options().clone();
    o.answer_limit = 3 * n;
    eq.set_options(o);
    let x: Vec<f64> = (0..n).map(|i| 1.0 + 1e-4 * i as f64).collect();
    assert_eq!(eq.hessian(&x[..]).unwrap_err().code(), Errc::TooLarge);
    let h = eq.sparse_hessian(&x[..]).unwrap();
    assert_eq!(h.blocks(), 1);
    assert_eq!(h.pattern().nonzeros(), 3 * n - 2);
    for (i, j, v) in h.triplets(0) {
        let want = if i == j {
            let linked = if i + 1 < n { 2.0 * x[i + 1] } else { 0.0 };
            linked - x[i].sin()
        } else {
            2.0 * x[i.min(j)]
        };
        assert!(
            (v - want).abs() <= 4.0 * f64::EPSILON * want.abs(),
            "H({i}, {j})"
        );
    }
}

#[test]
fn the_answer_limit_is_the_users() {
    let mut eq = tridiagonal_system(30);
    let x = vec![0.25; 30];
    let dense = eq.hessian(&x[..]).unwrap();
    // Lowered below the Jacobian's 900 values: every dense call refuses, naming itself.
    let mut o = eq.options().clone();
    o.answer_limit = 899;
    eq.set_options(o.clone());
    for (e, call, values) in [
        (eq.jacobian(&x[..]).unwrap_err(), "jacobian", 900),
        (eq.gradient(&x[..]).unwrap_err(), "gradient", 900),
        (eq.hessian(&x[..]).unwrap_err(), "hessian", 27_000),
    ] {
        assert_eq!(
            e,
            Error::TooLarge {
                call,
                values,
                limit: 899
            }
        );
    }
    // The sparse Jacobian (88 cells) still answers; the sparse Hessians, 30 blocks of
    // 87 cells, are over this limit too, and answer once it is raised to them.
    assert_eq!(eq.sparse_jacobian(&x[..]).unwrap().values().len(), 88);
    let e = eq.sparse_hessian(&x[..]).unwrap_err();
    assert_eq!(
        e,
        Error::TooLarge {
            call: "sparse_hessian",
            values: 30 * 87,
            limit: 899
        }
    );
    o.answer_limit = 30 * 87;
    eq.set_options(o.clone());
    assert_eq!(eq.sparse_hessian(&x[..]).unwrap().values().len(), 30 * 87);
    // Raised, the dense answer is back, with the same bits.
    o.answer_limit = 27_000;
    eq.set_options(o);
    assert!(same_bits(&eq.hessian(&x[..]).unwrap(), &dense));
}

#[test]
fn output_lengths_past_usize_are_refused() {
    let eq = tridiagonal_system(3);
    let mut out = [0.0; 4];
    assert_eq!(
        eq.sparse_jacobian_into([1.0, 2.0, 3.0], &mut out)
            .unwrap_err()
            .code(),
        Errc::WrongOutputLength
    );
    assert_eq!(
        eq.sparse_hessian_into([1.0, 2.0, 3.0], &mut out)
            .unwrap_err()
            .code(),
        Errc::WrongOutputLength
    );
}
