//! The column-count accessors build no lane a call has not built (issue 11): the Hessian's
//! columns and colours come from its layout computed alone, and the Jacobian's pattern
//! from whichever lane a call already built.

use ddx::{rt, Backend, Equation, LaneKind, Options, System};

/// The lanes an equation has prepared, as the compile backend sees them: setting
/// `Backend::Compile` asks the code generator for every lane already prepared, and
/// `jit_status().lanes` lists those it was asked for.
fn prepared<S: ddx::Shape>(eq: &Equation<S>) -> Vec<LaneKind> {
    let mut probe = eq.clone();
    probe.set_options(Options::new().backend(Backend::Compile));
    probe.jit_status().lanes.iter().map(|l| l.kind).collect()
}

fn tridiagonal(n: usize) -> Equation<System> {
    let texts: Vec<String> = (0..n)
        .map(|i| {
            let left = if i > 0 {
                format!("x{} * ", i - 1)
            } else {
                String::new()
            };
            let right = if i + 1 < n {
                format!(" - sin(x{})", i + 1)
            } else {
                String::new()
            };
            format!("{left}x{i} ** 3{right} + exp(x{i} * x{i})")
        })
        .collect();
    rt::system_text(&texts).unwrap()
}

#[test]
fn hessian_columns_and_colours_build_no_lane() {
    for n in [1, 2, 6, 13] {
        let alone = tridiagonal(n);
        let (columns, colours) = (alone.hessian_columns(), alone.hessian_colors());
        let pattern = alone.hessian_pattern().clone();
        let cells: Vec<Option<usize>> = (0..n * n)
            .map(|k| alone.hessian_cell(k / n, k % n))
            .collect();
        if cfg!(all(feature = "jit", target_arch = "x86_64")) {
            assert_eq!(prepared(&alone), [], "n = {n}: no lane was built");
        }
        // The same layout the Hessian lane carries, cell for cell.
        let built = tridiagonal(n);
        let x: Vec<f64> = (0..n).map(|i| 0.3 + 0.1 * i as f64).collect();
        let h = built.hessian(&x[..]).unwrap();
        assert_eq!(built.hessian_columns(), columns);
        assert_eq!(built.hessian_colors(), colours);
        assert_eq!(*built.hessian_pattern(), pattern);
        for (k, &c) in cells.iter().enumerate() {
            assert_eq!(built.hessian_cell(k / n, k % n), c);
        }
        // The batch call sized by the layout computed alone answers the same Hessians.
        let xs: Vec<Vec<f64>> = x.iter().map(|&v| vec![v]).collect();
        let xs: Vec<&[f64]> = xs.iter().map(Vec::as_slice).collect();
        let m = alone.outputs();
        let (mut f, mut g) = (
            vec![vec![0.0]; m],
            vec![vec![0.0]; alone.jacobian_columns()],
        );
        let mut hb = vec![vec![0.0]; m * columns];
        {
            let mut fr: Vec<&mut [f64]> = f.iter_mut().map(Vec::as_mut_slice).collect();
            let mut gr: Vec<&mut [f64]> = g.iter_mut().map(Vec::as_mut_slice).collect();
            let mut hr: Vec<&mut [f64]> = hb.iter_mut().map(Vec::as_mut_slice).collect();
            alone.hessian_batch(&xs, &mut fr, &mut gr, &mut hr).unwrap();
        }
        for r in 0..m {
            for i in 0..n {
                for j in 0..n {
                    let want = h[r * n * n + i * n + j];
                    let got = alone
                        .hessian_cell(i, j)
                        .map_or(0.0, |c| hb[r * columns + c][0]);
                    assert_eq!(got.to_bits(), want.to_bits(), "n {n} r {r} ({i}, {j})");
                }
            }
        }
    }
}

#[test]
fn the_jacobian_pattern_is_read_from_the_lane_a_call_built() {
    let eq = tridiagonal(6);
    let x = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6];
    let _ = eq.jacobian(x).unwrap(); // the Jacobian lane
    assert_eq!(
        eq.jacobian_columns(),
        16,
        "the spec's tridiagonal example: 16 of 36"
    );
    if cfg!(all(feature = "jit", target_arch = "x86_64")) {
        assert_eq!(
            prepared(&eq),
            [LaneKind::Jacobian],
            "no gradient lane built for it"
        );
    }
    // Every lane that carries the pattern carries the same one.
    let fresh = tridiagonal(6);
    let from_gradient = fresh.jacobian_pattern().clone();
    assert_eq!(*eq.jacobian_pattern(), from_gradient);
    let scalar = rt::equation_text("x * y + sin(z) * x").unwrap();
    let _ = scalar.hvp([1.0, 0.0, 0.0], [1.0, 2.0, 3.0]).unwrap();
    let cols = scalar.jacobian_columns();
    if cfg!(all(feature = "jit", target_arch = "x86_64")) {
        assert_eq!(prepared(&scalar), [LaneKind::Hvp]);
    }
    assert_eq!(
        cols,
        rt::equation_text("x * y + sin(z) * x")
            .unwrap()
            .jacobian_columns()
    );
}
