use ddx::{rt, Backend, LaneKind, Lanes, Options};
#[test]
fn smoke() {
    let mut eq = rt::equation(|| {
        let x = rt::var("x");
        let y = rt::var("y");
        (x * y).sin() + x.max(y) * y.exp() + ddx::select(x.lt(y), x.powf(2.0), y.sqrt())
    })
    .unwrap();
    let p = [0.3, 1.7];
    let want = eq.jacobian(p).unwrap();
    for lanes in [Lanes::Derived, Lanes::Exactly(1), Lanes::Exactly(2)] {
        let mut o = Options::with_backend(Backend::Compile);
        o.codegen.lanes = lanes;
        eq.set_options(o);
        assert!(
            eq.wait_for_kernel(LaneKind::Jacobian),
            "{:?}",
            eq.jit_status()
        );
        println!(
            "{:?} {:?}",
            eq.jit_status(),
            eq.kernel_level(LaneKind::Jacobian)
        );
        let got = eq.jacobian(p).unwrap();
        assert_eq!(want, got);
        let xs = vec![0.3; 5];
        let ys = vec![1.7; 5];
        let mut v = vec![0.0; 5];
        let mut g0 = vec![0.0; 5];
        let mut g1 = vec![0.0; 5];
        eq.jacobian_batch(&[&xs, &ys], &mut [&mut v], &mut [&mut g0, &mut g1])
            .unwrap();
        assert_eq!(g0[4], want[0]);
        assert_eq!(g1[3], want[1]);
    }
}
