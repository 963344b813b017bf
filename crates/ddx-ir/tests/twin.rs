//! The zero-skipping twins of the `jvp` and `hvp` lanes (`lane::build_twin`) against the
//! plain lanes: a call answers the plain lane's outputs at a point unless one is NaN, and
//! the twin's there, which is the twin's answer everywhere only if the twin gives the
//! plain bits (signed zeros included) wherever the plain lane answers no NaN. Checked on
//! random models (every operation, awkward constants) at points and directions with
//! exact zeros of both signs, infinities and overflowing values.

use ddx_ir::lane::{build, build_twin};
use ddx_ir::testing::{random_model, ModelSize, Rng};
use ddx_ir::LaneKind;

fn awkward(rng: &mut Rng) -> f64 {
    const VALUES: [f64; 10] = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 800.0, -800.0, 1e-300, 3.0];
    if rng.percent(60) {
        VALUES[rng.below(VALUES.len())]
    } else {
        rng.unit() * 8.0 - 4.0
    }
}

#[test]
fn the_twin_answers_the_plain_bits_wherever_the_plain_lane_answers_no_nan() {
    let size = ModelSize {
        nodes: 40,
        symbols: 3,
        outputs: 2,
        max_depth: 12,
        max_tree: 400,
    };
    let (mut compared, mut mended, mut differ) = (0usize, 0usize, 0usize);
    for seed in 0..300u64 {
        let model = random_model(seed, &size);
        let n = model.arity();
        for kind in [LaneKind::Jvp, LaneKind::Hvp] {
            let plain = build(&model, kind);
            let twin = build_twin(&model, kind).expect("jvp and hvp have twins");
            assert_eq!(plain.outputs.len(), twin.outputs.len());
            assert_eq!(plain.inputs(), twin.inputs());
            let mut rng = Rng::new(seed ^ 0x5eed);
            for _ in 0..12 {
                let x: Vec<f64> = (0..n).map(|_| awkward(&mut rng)).collect();
                // Directions with exact zeros (of both signs) most of the time.
                let v: Vec<f64> = (0..n)
                    .map(|_| match rng.below(4) {
                        0 => 0.0,
                        1 => -0.0,
                        _ => awkward(&mut rng),
                    })
                    .collect();
                let a = plain.graph.eval_reference(&plain.outputs, &x, &v);
                let b = twin.graph.eval_reference(&twin.outputs, &x, &v);
                if a.iter().any(|z| z.is_nan()) {
                    mended += 1;
                    // Where the plain lane has a number, so does the twin, with its bits
                    // unless the twin skipped a zero whose NaN reached this output.
                    differ += a
                        .iter()
                        .zip(&b)
                        .filter(|(p, t)| !p.is_nan() && p.to_bits() != t.to_bits())
                        .count();
                    continue;
                }
                compared += 1;
                for (k, (p, t)) in a.iter().zip(&b).enumerate() {
                    assert_eq!(
                        p.to_bits(),
                        t.to_bits(),
                        "seed {seed} {kind:?} output {k} at {x:?} along {v:?}: plain {p}, twin {t}"
                    );
                }
            }
        }
    }
    // The check is not vacuous: both kinds of point occur.
    assert!(compared > 1000 && mended > 100, "{compared} {mended}");
    assert_eq!(
        differ, 0,
        "a twin changed an output the plain lane had a number for"
    );
}
