//! The level program's superinstructions against a node-by-node reference evaluation of
//! the lane (`ddx_ir::math::eval`; any NaN matching any NaN, since `MulAdd` already puts
//! the product first whichever side of the sum it was on) and, to every bit, NaN payloads
//! included, against the tape program of the same lane, which has none of them (its chains
//! stay `MulAdd`s, its pairs two instructions): the program the last-call cache's tests
//! compare the level program with.

use super::{
    lower::{MIN_DOT, MIN_DOT_CONST},
    tape::Tape,
    Code, Columns, Program, Schedule,
};
use crate::{rt, Equation, Expr, LaneKind, System};
use ddx_ir::testing::Rng;
use ddx_ir::{math, Lane, Node};

/// Every node of `lane` evaluated in graph order at `inputs` (symbols, then seeds).
fn reference(lane: &Lane, inputs: &[f64]) -> Vec<f64> {
    let nodes = lane.graph.nodes();
    let mut v = vec![0.0; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        v[i] = match *n {
            Node::Const(_) => n.constant().expect("a constant"),
            Node::Symbol(s) => inputs[s.index()],
            Node::Seed(s) => inputs[lane.seed_base() + s.index()],
            Node::Apply(op, args) => {
                let x: Vec<f64> = args[..op.arity()].iter().map(|a| v[a.index()]).collect();
                math::eval(op, &x)
            }
        };
    }
    lane.outputs.iter().map(|o| v[o.index()]).collect()
}

/// An input: mostly ordinary, often a signed zero, an infinity or a NaN with a payload.
fn coordinate(rng: &mut Rng) -> f64 {
    match rng.below(12) {
        0 => -0.0,
        1 => 0.0,
        2 => f64::INFINITY,
        3 => f64::NEG_INFINITY,
        4 => f64::from_bits(0x7ff8_0000_0000_0000 | (1 + rng.below(4) as u64)),
        5 => f64::MIN_POSITIVE / 4.0,
        _ => (rng.below(2001) as f64 - 1000.0) / 64.0,
    }
}

/// Sums of products over `n` symbols: `outputs` chains `c + a₁b₁ + … + a_m b_m` of random
/// lengths (odd and even, some of one term), their factors symbols, sines of symbols or
/// earlier chains (so chains sit on several levels and feed one another), every so often a
/// partial sum also an output of its own (which keeps it out of the chain).
fn sums(seed: u64, n: usize, outputs: usize) -> Equation<System> {
    rt::equation(move || {
        let mut rng = Rng::new(seed);
        let x: Vec<Expr> = (0..n).map(|i| rt::var(&format!("x{i:02}"))).collect();
        let mut made: Vec<Expr> = Vec::new();
        let mut outs = Vec::new();
        for _ in 0..outputs {
            let factor = |rng: &mut Rng, made: &[Expr]| match rng.below(6) {
                0 if !made.is_empty() => made[rng.below(made.len())],
                1 => x[rng.below(n)].sin(),
                _ => x[rng.below(n)],
            };
            let mut f = factor(&mut rng, &made);
            for _ in 0..rng.below(20) {
                let (a, b) = (factor(&mut rng, &made), factor(&mut rng, &made));
                f = if rng.below(2) == 0 {
                    f + a * b
                } else {
                    a * b + f
                };
                if rng.below(16) == 0 {
                    outs.push(f);
                }
            }
            made.push(f);
            outs.push(f);
        }
        outs
    })
    .expect("builds")
}

fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

/// How many `Dot` instructions `p` has, and whether a run holds two or more (run in step).
fn dots(p: &Program) -> (usize, bool) {
    let runs = p.run_list().iter().filter(|r| r.code == Code::Dot);
    runs.fold((0, false), |(n, two), r| {
        (n + (r.end - r.start) as usize, two || r.end - r.start >= 2)
    })
}

/// `p` and the tape program of `lane` at `inputs`: the same outputs, to the bit.
fn run_both(p: &Program, tape: &Tape, inputs: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut out = vec![0.0; p.outputs()];
    p.run(inputs, &mut out).expect("runs");
    let mut t = Vec::new();
    tape.sweep(&mut t, inputs, true);
    let mut from_tape = Vec::new();
    tape.read(&t, |_, v| from_tape.push(v));
    (out, from_tape)
}

/// `p` (lowered from `lane`) at `points` random points ([`coordinate`]): the reference
/// values, and the tape program's bits (NaN payloads and signs included); `case` names
/// the model in a failure.
fn agrees_at_points(p: &Program, lane: &Lane, rng: &mut Rng, points: usize, case: &str) {
    let tape = Tape::new(lane);
    for _ in 0..points {
        let x: Vec<f64> = (0..p.inputs()).map(|_| coordinate(rng)).collect();
        let (out, from_tape) = run_both(p, &tape, &x);
        assert!(same(&out, &reference(lane, &x)), "{case} at {x:?}");
        assert_eq!(bits(&out), bits(&from_tape), "{case} at {x:?}");
        if p.schedule == Schedule::Level {
            let portable = p.run_portable(&x);
            assert_eq!(
                bits(&out),
                bits(&portable),
                "{case}, portable build, at {x:?}"
            );
        }
    }
}

#[test]
fn dot_chains_give_the_reference_values_and_the_tape_programs_bits() {
    let mut rng = Rng::new(20);
    let (mut total, mut in_step, mut odd) = (0, false, false);
    for seed in 0..60 {
        let eq = sums(seed, 2 + (seed as usize % 6), 1 + (seed as usize % 7));
        for kind in [LaneKind::Value, LaneKind::Gradient, LaneKind::Hessian] {
            let lane = eq.lane(kind).expect("lane");
            let p = Program::lower_built(lane, Schedule::Level);
            let (count, two) = dots(&p);
            chains_independent(&p);
            total += count;
            in_step |= two;
            odd |= p
                .run_list()
                .iter()
                .filter(|r| r.code == Code::Dot)
                .any(|r| (r.end - r.start) % 2 == 1);
            agrees_at_points(&p, lane, &mut rng, 12, &format!("seed {seed} {kind:?}"));
        }
    }
    assert!(total > 60, "{total} chains");
    assert!(in_step && odd, "runs of two or more chains, and odd runs");
}

#[test]
fn exp_runs_give_exps_bits_four_at_a_time_and_alone() {
    // Runs of `Exp` of many lengths, on two levels that may share a run (`exp(exp(x))`
    // beside `exp(x)`: a four must not read a result made within it), at points where
    // some lanes leave the plain path (NaN, ±∞, tiny, huge, subnormal results): each value
    // `exp`'s bits, per point and in blocks.
    let mut rng = Rng::new(24);
    for k in [1, 3, 4, 5, 8, 13, 31] {
        let eq = rt::equation(move || {
            let x: Vec<Expr> = (0..k).map(|i| rt::var(&format!("x{i:02}"))).collect();
            let mut outs: Vec<Expr> = x.iter().map(|&v| v.exp()).collect();
            outs.extend(x.iter().step_by(2).map(|&v| (v * 0.01).exp().exp()));
            outs
        })
        .expect("builds");
        let lane = eq.lane(LaneKind::Value).expect("lane");
        let level = Program::lower_built(lane, Schedule::Level);
        let block = Program::lower_built(lane, Schedule::Graph);
        let special = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-300,
            -0.0,
            750.0,
            -740.0,
            -745.5,
            709.0,
        ];
        let len = 67;
        let inputs: Vec<Vec<f64>> = (0..k)
            .map(|_| {
                (0..len)
                    .map(|_| match rng.below(5) {
                        0 => special[rng.below(special.len())],
                        _ => (rng.below(4001) as f64 - 2000.0) / 16.0,
                    })
                    .collect()
            })
            .collect();
        let mut out = vec![vec![0.0; len]; block.outputs()];
        let cols = Cols {
            inputs,
            outputs: out.iter_mut().map(|c| c.as_mut_ptr()).collect(),
        };
        // SAFETY: every column holds `len` values, and only this call touches them.
        unsafe { block.run_columns(&cols, 0, len) };
        let mut got = vec![0.0; level.outputs()];
        for p in 0..len {
            let x: Vec<f64> = cols.inputs.iter().map(|c| c[p]).collect();
            level.run(&x, &mut got).expect("runs");
            let want = reference(lane, &x);
            assert_eq!(bits(&got), bits(&want), "{k} symbols at {x:?}");
            let from_block: Vec<f64> = out.iter().map(|c| c[p]).collect();
            assert_eq!(
                bits(&from_block),
                bits(&want),
                "{k} symbols, block, at {x:?}"
            );
        }
    }
}

/// Running differences over `n` symbols: `outputs` chains `c − t₁ − … − t_m` of random
/// lengths (around [`MIN_DOT`], some far longer), each term `tⱼ` a product `a·b` (a
/// `SubMul` link) or a lone value (a `Sub` link) — all of one kind in most chains, mixed
/// in some — the factors and lone values symbols, sines of symbols or earlier chains;
/// every so often a partial difference also an output (which cuts the chain there).
fn differences(seed: u64, n: usize, outputs: usize) -> Equation<System> {
    rt::equation(move || {
        let mut rng = Rng::new(seed);
        let x: Vec<Expr> = (0..n).map(|i| rt::var(&format!("x{i:02}"))).collect();
        let mut made: Vec<Expr> = Vec::new();
        let mut outs = Vec::new();
        let value = |rng: &mut Rng, made: &[Expr]| match rng.below(4) {
            0 if !made.is_empty() => made[rng.below(made.len())],
            1 => x[rng.below(n)].sin(),
            _ => x[rng.below(n)],
        };
        for _ in 0..outputs {
            let mut f = value(&mut rng, &made);
            // 0: products only, 1: lone values only, 2: mixed.
            let kind = rng.below(3);
            let links = if rng.below(5) == 0 {
                40 + rng.below(90)
            } else {
                rng.below(16)
            };
            for _ in 0..links {
                let product = match kind {
                    0 => true,
                    1 => false,
                    _ => rng.below(2) == 0,
                };
                f = if product {
                    let (a, b) = (value(&mut rng, &made), value(&mut rng, &made));
                    f - a * b
                } else {
                    f - value(&mut rng, &made)
                };
                if rng.below(24) == 0 {
                    outs.push(f);
                }
            }
            made.push(f);
            outs.push(f);
        }
        outs
    })
    .expect("builds")
}

#[test]
fn difference_chains_give_the_reference_values_and_the_tape_programs_bits() {
    let mut rng = Rng::new(22);
    let (mut products, mut lone, mut in_step, mut odd) = (0, 0, false, false);
    for seed in 0..60 {
        let eq = differences(seed, 2 + (seed as usize % 6), 1 + (seed as usize % 7));
        for kind in [LaneKind::Value, LaneKind::Gradient, LaneKind::Hessian] {
            let lane = eq.lane(kind).expect("lane");
            let p = Program::lower_built(lane, Schedule::Level);
            chains_independent(&p);
            for r in p.run_list() {
                let len = (r.end - r.start) as usize;
                match r.code {
                    Code::DotSub => products += len,
                    Code::SubSum => lone += len,
                    _ => continue,
                }
                in_step |= len >= 2;
                odd |= len % 2 == 1;
            }
            agrees_at_points(&p, lane, &mut rng, 12, &format!("seed {seed} {kind:?}"));
        }
    }
    assert!(products > 20 && lone > 20, "{products} {lone} chains");
    assert!(in_step && odd, "runs of two or more chains, and odd runs");
}

/// A residual sum of squares over `m` observations, `Σᵢ (yᵢ − a·exp(−b·tᵢ) − c)²`: reverse
/// mode subtracts each residual's share from the adjoints of `a`, `b` and `c` one
/// observation after another, the shape the difference chains are for.
fn residual_sum(m: usize) -> Equation<System> {
    rt::equation(move || {
        let (a, b, c) = (rt::var("a"), rt::var("b"), rt::var("c"));
        let mut f = Expr::from(0.0);
        for i in 0..m {
            let t = i as f64 / 8.0;
            let y = 2.0 * (-0.3 * t).exp() + 0.5 + 0.01 * (i % 7) as f64;
            let r = y - a * (-b * t).exp() - c;
            f += r * r;
        }
        vec![f]
    })
    .expect("builds")
}

#[test]
fn a_residual_sums_gradient_runs_its_differences_as_chains() {
    let mut rng = Rng::new(23);
    // Three observations make links too few for a chain.
    for m in [3, 57, 250] {
        let eq = residual_sum(m);
        let lane = eq.lane(LaneKind::Gradient).expect("lane");
        let p = Program::lower_built(lane, Schedule::Level);
        let chains = p
            .run_list()
            .iter()
            .filter(|r| matches!(r.code, Code::DotSub | Code::SubSum))
            .count();
        assert_eq!(chains > 0, m > 3, "{m}: {:?}", p.run_list());
        agrees_at_points(&p, lane, &mut rng, 40, &format!("{m} observations"));
        let x = [2.0, 0.3, 0.5];
        let mut out = vec![0.0; 3];
        p.run(&x, &mut out).expect("runs");
        assert_eq!(bits(&out), bits(&reference(lane, &x)), "{m}");
    }
}

#[test]
fn a_partial_sum_used_elsewhere_ends_a_chain() {
    // f = (((c + ab) + ab) + …) + ab, eight products: one chain; with the fifth partial sum
    // an output too, the chain is cut there, into two of fewer than `MIN_DOT` `MulAdd`s,
    // which stay plain.
    const { assert!(MIN_DOT <= 8 && MIN_DOT > 5) };
    let build = |tap: bool| {
        rt::equation(move || {
            let x: Vec<Expr> = (0..9).map(|i| rt::var(&format!("x{i}"))).collect();
            let mut f = x[0];
            let mut outs = Vec::new();
            for i in 0..8 {
                f += x[i] * x[i + 1];
                if tap && i == 4 {
                    outs.push(f);
                }
            }
            outs.push(f);
            outs
        })
        .expect("builds")
    };
    let chained = build(false);
    let p = Program::lower_built(
        chained.lane(LaneKind::Value).expect("lane"),
        Schedule::Level,
    );
    assert_eq!(dots(&p).0, 1);
    assert_eq!(p.len(), 1);
    let cut = build(true);
    let lane = cut.lane(LaneKind::Value).expect("lane");
    let p = Program::lower_built(lane, Schedule::Level);
    assert_eq!(dots(&p).0, 0, "{:?}", p.run_list());
    let x = [1.5, -0.0, f64::INFINITY, 3.0, -2.0, 0.0, 7.0, f64::NAN, 1.0];
    let mut out = vec![0.0; 2];
    p.run(&x, &mut out).expect("runs");
    assert!(same(&out, &reference(lane, &x)));
}

/// Random expressions over `n` symbols of products, quotients, sums, differences and
/// negations, most values used once (so that pairs fuse), some twice (so that they do not),
/// every so often an inner value an output too.
fn pairs(seed: u64, n: usize, steps: usize) -> Equation<System> {
    rt::equation(move || {
        let mut rng = Rng::new(seed);
        let x: Vec<Expr> = (0..n).map(|i| rt::var(&format!("x{i:02}"))).collect();
        let mut pool: Vec<Expr> = x.clone();
        let mut outs = Vec::new();
        for _ in 0..steps {
            // Take a value out of the pool (used once), or leave it in (used again).
            let take = |rng: &mut Rng, pool: &mut Vec<Expr>| {
                let k = rng.below(pool.len());
                if pool.len() > n && rng.below(4) != 0 {
                    pool.swap_remove(k)
                } else {
                    pool[k]
                }
            };
            let a = take(&mut rng, &mut pool);
            let v = match rng.below(6) {
                0 => a * take(&mut rng, &mut pool),
                1 => a / take(&mut rng, &mut pool),
                2 => a + take(&mut rng, &mut pool),
                3 => a - take(&mut rng, &mut pool),
                4 => -a,
                _ => take(&mut rng, &mut pool) * a,
            };
            if rng.below(12) == 0 {
                outs.push(v);
            }
            pool.push(v);
        }
        outs.extend(pool.iter().skip(n).copied());
        if outs.is_empty() {
            outs.push(pool[0]);
        }
        outs
    })
    .expect("builds")
}

#[test]
fn pair_superinstructions_give_the_reference_values_and_the_tape_programs_bits() {
    use std::collections::HashSet;
    let mut rng = Rng::new(21);
    let mut seen: HashSet<Code> = HashSet::new();
    for seed in 0..80 {
        let eq = pairs(seed, 2 + (seed as usize % 5), 8 + (seed as usize % 23));
        for kind in [LaneKind::Value, LaneKind::Gradient] {
            let lane = eq.lane(kind).expect("lane");
            let p = Program::lower_built(lane, Schedule::Level);
            seen.extend(p.run_list().iter().map(|r| r.code));
            agrees_at_points(&p, lane, &mut rng, 10, &format!("seed {seed} {kind:?}"));
        }
    }
    for code in [
        Code::MulMul,
        Code::MulDiv,
        Code::AddAdd,
        Code::AddDiv,
        Code::SubDiv,
    ] {
        assert!(seen.contains(&code), "{code:?} never lowered: {seen:?}");
    }
}

/// `copies` negated single-use values over `n` symbols, as reverse mode leaves over data:
/// `-(a*b)`, `-(a/b)`, `-(a+b)` and `(-s)/b` (`s` a sine, so that the negation is its own
/// operation), each times another symbol.
fn negations(seed: u64, n: usize, copies: usize) -> Equation<System> {
    rt::equation(move || {
        let mut rng = Rng::new(seed);
        let x: Vec<Expr> = (0..n).map(|i| rt::var(&format!("x{i:02}"))).collect();
        let mut outs = Vec::new();
        for _ in 0..copies {
            let [a, b, c] = [0; 3].map(|_| x[rng.below(n)]);
            let v = match rng.below(4) {
                0 => -(a * b),
                1 => -(a / b),
                2 => -(a + b),
                _ => -a.sin() / b,
            };
            outs.push(v * c);
        }
        outs
    })
    .expect("builds")
}

/// Negations fused into their operand's operation or their reader's (`MulNeg`, `DivNeg`,
/// `AddNeg`, `NegDiv`) give the reference values and, NaN payloads and signs included, the
/// bits of the tape program, which fuses none; a lane with fewer than `MIN_NEGATIONS`
/// fusions has none.
#[test]
fn negation_fusions_give_the_reference_values_and_the_tape_programs_bits() {
    use super::lower::MIN_NEGATIONS;
    use std::collections::HashSet;
    let fused = [Code::MulNeg, Code::DivNeg, Code::AddNeg, Code::NegDiv];
    let mut rng = Rng::new(34);
    let mut seen: HashSet<Code> = HashSet::new();
    for seed in 0..24 {
        let few = seed % 4 == 0;
        let copies = if few {
            3
        } else {
            2 * MIN_NEGATIONS + seed as usize
        };
        let eq = negations(seed, 3 + (seed as usize % 4), copies);
        for kind in [LaneKind::Value, LaneKind::Gradient] {
            let lane = eq.lane(kind).expect("lane");
            let p = Program::lower_built(lane, Schedule::Level);
            let codes: Vec<Code> = p.run_list().iter().map(|r| r.code).collect();
            let count: usize = p
                .run_list()
                .iter()
                .filter(|r| fused.contains(&r.code))
                .map(|r| (r.end - r.start) as usize)
                .sum();
            assert!(
                count == 0 || count >= MIN_NEGATIONS,
                "seed {seed} {kind:?}: {count} fused"
            );
            if few {
                assert_eq!(count, 0, "seed {seed} {kind:?}: {codes:?}");
            }
            seen.extend(codes);
            agrees_at_points(&p, lane, &mut rng, 10, &format!("seed {seed} {kind:?}"));
        }
    }
    for code in fused {
        assert!(seen.contains(&code), "{code:?} never lowered: {seen:?}");
    }
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|v| v.to_bits()).collect()
}

/// A weight: mostly ordinary, often a signed zero, an infinity, a subnormal or (not a
/// weight then: such a term is a general one) a NaN with a payload.
fn weight(rng: &mut Rng) -> f64 {
    match rng.below(16) {
        0 => -0.0,
        1 => 0.0,
        2 => f64::NEG_INFINITY,
        3 => f64::from_bits(0x7ff8_0000_0000_0000 | (5 + rng.below(4) as u64)),
        4 => f64::MIN_POSITIVE / 8.0,
        5 => 1e300,
        _ => (rng.below(2001) as f64 - 1000.0) / 16.0,
    }
}

/// Weighted sums over `n` symbols: `outputs` chains `c + w₁f₁ + … + w_m f_m` of random
/// lengths (up to 40, so the chains of a level run four, two and one at a time with
/// lengths that differ), each weight a constant on either side of its product, now and
/// then a product of two variables instead (a general term, splitting the chain into
/// pieces), the factors symbols, sines of symbols or earlier chains, every so often a
/// partial sum an output of its own.
fn weighted_sums(seed: u64, n: usize, outputs: usize) -> Equation<System> {
    rt::equation(move || {
        let mut rng = Rng::new(seed);
        let x: Vec<Expr> = (0..n).map(|i| rt::var(&format!("x{i:02}"))).collect();
        let mut made: Vec<Expr> = Vec::new();
        let mut outs = Vec::new();
        for _ in 0..outputs {
            let factor = |rng: &mut Rng, made: &[Expr]| match rng.below(8) {
                0 if !made.is_empty() => made[rng.below(made.len())],
                1 => x[rng.below(n)].sin(),
                _ => x[rng.below(n)],
            };
            let mut f = factor(&mut rng, &made);
            for _ in 0..rng.below(41) {
                let a = factor(&mut rng, &made);
                let term = match rng.below(12) {
                    0 => a * factor(&mut rng, &made),
                    1..=5 => a * weight(&mut rng),
                    _ => weight(&mut rng) * a,
                };
                f = if rng.below(2) == 0 {
                    f + term
                } else {
                    term + f
                };
                if rng.below(24) == 0 {
                    outs.push(f);
                }
            }
            made.push(f);
            outs.push(f);
        }
        outs
    })
    .expect("builds")
}

#[test]
fn weighted_chains_give_the_reference_values_and_the_tape_programs_bits() {
    const { assert!(MIN_DOT_CONST <= 8) };
    let mut rng = Rng::new(30);
    let (mut chains, mut fours, mut remainders, mut pieces) = (0, false, false, false);
    // Groups run in step, by size, and fours whose chains end at different steps (so the
    // three, two and one longest run on in step after the vector lanes).
    let (mut sizes, mut stairs) = ([0usize; 5], 0);
    for seed in 0..100 {
        let eq = weighted_sums(seed, 2 + (seed as usize % 6), 1 + (seed as usize % 11));
        for kind in [LaneKind::Value, LaneKind::Gradient, LaneKind::Hessian] {
            let lane = eq.lane(kind).expect("lane");
            let p = Program::lower_built(lane, Schedule::Level);
            for r in p.run_list().iter().filter(|r| r.code == Code::DotConst) {
                let n = (r.end - r.start) as usize;
                chains += n;
                fours |= n >= 4;
                remainders |= !n.is_multiple_of(4);
                let run = &p.instructions()[r.start as usize..r.end as usize];
                for g in super::dot_const_groups(n) {
                    let lens: Vec<u32> = run[g].iter().map(|i| i.args[2]).collect();
                    sizes[lens.len()] += 1;
                    stairs += usize::from(lens.len() == 4 && lens[0] < lens[3]);
                }
            }
            pieces |= split(&p);
            chains_independent(&p);
            agrees_at_points(&p, lane, &mut rng, 8, &format!("seed {seed} {kind:?}"));
        }
    }
    assert!(chains > 100, "{chains} weighted chains");
    assert!(
        fours && remainders && pieces,
        "{fours} {remainders} {pieces}"
    );
    assert!(
        sizes[1..].iter().all(|&n| n >= 5) && stairs >= 5,
        "groups by size {sizes:?}, {stairs} fours of unequal chains"
    );
}

#[test]
fn fours_of_every_step_shape_give_the_tape_programs_bits() {
    use super::shape;
    // Seven families (shape, length, the symbol chain `i` reads at step `k`) of four
    // weighted sums over the symbols, each family of its own length
    // (so the run, sorted by length, groups each family as one four): chain `i` of a
    // family reads, at step `k`, the symbol that makes the family's shape (the last two
    // taking turns between descending and ascending steps, odd lengths: the last step
    // alone).
    type Family = (u32, usize, fn(usize, usize) -> usize);
    let families: [Family; 7] = [
        (shape::SAME, 12, |_, k| k),
        (shape::ASCENDING, 13, |i, k| i + k),
        (shape::DESCENDING, 14, |i, k| 30 - i - k),
        (shape::PAIRS_UP, 15, |i, k| i / 2 + k),
        (shape::PAIRS_DOWN, 16, |i, k| (3 - i) / 2 + k),
        (shape::DOWN_UP, 17, |i, k| match k % 2 {
            0 => 30 - i - k / 2,
            _ => i + k / 2,
        }),
        (shape::UP_DOWN, 18, |i, k| match k % 2 {
            0 => i + k / 2,
            _ => 30 - i - k / 2,
        }),
    ];
    let mut rng = Rng::new(40);
    for seed in 0..20 {
        let eq = rt::equation(|| {
            let mut wr = Rng::new(seed);
            let x: Vec<Expr> = (0..32).map(|i| rt::var(&format!("x{i:02}"))).collect();
            let mut outs = Vec::new();
            for &(_, len, at) in &families {
                for i in 0..4 {
                    // Weights that are no NaN (a NaN is no weight): large, tiny, signed;
                    // all distinct, so that no two chains share a product (a product used
                    // twice is its own instruction, and cuts both chains there).
                    let mut w = || {
                        let u = wr.below(1 << 24) as f64 + 0.5;
                        match wr.below(8) {
                            0 => 1e300 * (1.0 + u / 16777216.0),
                            1 => -f64::MIN_POSITIVE / u,
                            _ => u / 65536.0 - 128.0,
                        }
                    };
                    // A symbol is the chain's start, then `len` links (the last chain one
                    // more, so that it goes on alone after the four-wide steps).
                    let mut f = x[31];
                    for k in 0..len + usize::from(i == 3) {
                        f += x[at(i, k)] * w();
                    }
                    outs.push(f);
                }
            }
            outs
        })
        .expect("builds");
        let lane = eq.lane(LaneKind::Value).expect("lane");
        let p = Program::lower_built(lane, Schedule::Level);
        let runs: Vec<_> = p
            .run_list()
            .iter()
            .filter(|r| r.code == Code::DotConst)
            .collect();
        assert_eq!(runs.len(), 1, "{:?}", p.run_list());
        let run = &p.instructions()[runs[0].start as usize..runs[0].end as usize];
        let groups: Vec<(u32, Vec<u32>)> = (run.chunks_exact(4))
            .map(|g| (g[1].args[1], g.iter().map(|i| i.args[2]).collect()))
            .collect();
        let want: Vec<(u32, Vec<u32>)> = (families.iter())
            .map(|&(form, len, _)| {
                (
                    form,
                    vec![len as u32, len as u32, len as u32, len as u32 + 1],
                )
            })
            .collect();
        assert_eq!(groups, want, "seed {seed}");
        agrees_at_points(&p, lane, &mut rng, 16, &format!("seed {seed}"));
        // The gradient's adjoint sums too, whatever their shapes.
        let lane = eq.lane(LaneKind::Gradient).expect("lane");
        let p = Program::lower_built(lane, Schedule::Level);
        agrees_at_points(&p, lane, &mut rng, 8, &format!("seed {seed} gradient"));
    }
}

/// Asserts that no chain of a chain run of `p` ([`Code::is_chain`]) reads an earlier
/// one's destination: the per-point loop runs a run's chains in step, every read before
/// any store (so a run must hold one level).
fn chains_independent(p: &Program) {
    let chains = p.run_list().iter().filter(|r| r.code.is_chain());
    for r in chains {
        let run = &p.instructions()[r.start as usize..r.end as usize];
        // A later chain may reuse a slot an earlier one read last (all reads come first),
        // but none may read what an earlier one writes.
        for (k, i) in run.iter().enumerate() {
            for (l, j) in run.iter().enumerate().skip(k + 1) {
                assert!(
                    !p.reads(r, r.start as usize + l).any(|x| x == i.dst),
                    "{:?}: {j:?} reads {i:?}'s destination",
                    r.code
                );
            }
        }
    }
}

/// Whether some [`Code::DotConst`] in `p` starts from a [`Code::MulAdd`]'s sum: a chain
/// split into pieces at a general term.
fn split(p: &Program) -> bool {
    let mut writer = vec![None; p.slot_count()];
    let mut found = false;
    for r in p.run_list() {
        for i in &p.instructions()[r.start as usize..r.end as usize] {
            found |= r.code == Code::DotConst && writer[i.args[0] as usize] == Some(Code::MulAdd);
            writer[i.dst as usize] = Some(r.code);
        }
    }
    found
}

#[test]
fn independent_chains_of_different_lengths_share_one_run() {
    // Eight weighted sums of the symbols, of 8 to 15 terms: by the graph's levels each
    // would end on a level of its own; every one reads only symbols, so one run holds all.
    let eq = rt::equation(|| {
        let x: Vec<Expr> = (0..16).map(|i| rt::var(&format!("x{i:02}"))).collect();
        (0..8)
            .map(|k| {
                let mut f = x[k];
                for (j, &xj) in x.iter().enumerate().take(8 + k) {
                    f += xj * (1.5 + j as f64 + 0.125 * k as f64);
                }
                f
            })
            .collect::<Vec<_>>()
    })
    .expect("builds");
    let lane = eq.lane(LaneKind::Value).expect("lane");
    let p = Program::lower_built(lane, Schedule::Level);
    let weighted: Vec<_> = p
        .run_list()
        .iter()
        .filter(|r| r.code == Code::DotConst)
        .collect();
    assert_eq!(weighted.len(), 1, "{:?}", p.run_list());
    assert_eq!(weighted[0].end - weighted[0].start, 8);
    // Each chain's terms, read back from the groups' step-by-step blocks: the symbols
    // `x00 … x(7+k)` in order (the chains sorted by length, the first term `x_k` its
    // start), and nothing for an instruction outside the run.
    let r = weighted[0];
    for (k, at) in (r.start as usize..r.end as usize).enumerate() {
        let want: Vec<u32> = (0..8 + k as u32)
            .map(|j| (p.constant_count() as u32) + j)
            .collect();
        assert_eq!(p.terms(r, at).collect::<Vec<_>>(), want, "chain {k}");
    }
    assert_eq!(p.terms(r, r.end as usize).count(), 0);
    let x: Vec<f64> = (0..16).map(|i| 0.25 * i as f64 - 1.0).collect();
    let mut out = vec![0.0; 8];
    p.run(&x, &mut out).expect("runs");
    assert_eq!(bits(&out), bits(&reference(lane, &x)));
}

/// Input and output columns for [`Program::run_columns`].
struct Cols {
    inputs: Vec<Vec<f64>>,
    outputs: Vec<*mut f64>,
}

// SAFETY: the test runs one block run at a time on one thread.
unsafe impl Sync for Cols {}

impl Columns for Cols {
    fn input(&self, k: usize) -> *const f64 {
        self.inputs[k].as_ptr()
    }
    fn output(&self, k: usize) -> *mut f64 {
        self.outputs[k]
    }
}

#[test]
fn block_chains_give_the_per_point_values() {
    // The chains of a block program (weighted, general, differences) run a tile of points at a time
    // (a shorter last tile point by point); every point must answer what the per-point
    // program answers, NaN for NaN, for lengths around the tile and the block.
    let mut rng = Rng::new(31);
    let (mut weighted, mut general) = (false, false);
    let mut subtracted = std::collections::HashSet::new();
    // Lowering gives block programs no difference chains; this thread's do get them, so
    // that the block loop's are checked too.
    super::lower::BLOCK_DIFFERENCES.set(true);
    for seed in 0..30 {
        let (n, outputs) = (2 + (seed as usize % 6), 1 + (seed as usize % 9));
        let (eq, general_eq) = (weighted_sums(seed, n, outputs), sums(seed, n, outputs));
        let differences_eq = differences(seed, n, outputs);
        for (eq, kind) in [
            (&eq, LaneKind::Value),
            (&eq, LaneKind::Gradient),
            (&general_eq, LaneKind::Value),
            (&differences_eq, LaneKind::Value),
            (&differences_eq, LaneKind::Gradient),
        ] {
            let lane = eq.lane(kind).expect("lane");
            let block = Program::lower_built(lane, Schedule::Graph);
            let level = Program::lower_built(lane, Schedule::Level);
            for r in block.run_list() {
                weighted |= r.code == Code::DotConst;
                general |= r.code == Code::Dot;
                subtracted.insert(r.code);
            }
            let b = block.block_size();
            for len in [1, 31, 32, 33, 65, b - 1, b + 1, 2 * b + 37] {
                let inputs: Vec<Vec<f64>> = (0..block.inputs())
                    .map(|_| (0..len).map(|_| coordinate(&mut rng)).collect())
                    .collect();
                let mut out = vec![vec![0.0; len]; block.outputs()];
                let cols = Cols {
                    inputs,
                    outputs: out.iter_mut().map(|c| c.as_mut_ptr()).collect(),
                };
                // SAFETY: every column holds `len` values, and only this call touches them.
                unsafe { block.run_columns(&cols, 0, len) };
                let mut want = vec![0.0; level.outputs()];
                for p in 0..len {
                    let x: Vec<f64> = cols.inputs.iter().map(|c| c[p]).collect();
                    level.run(&x, &mut want).expect("runs");
                    let got: Vec<f64> = out.iter().map(|c| c[p]).collect();
                    assert!(
                        same(&got, &want),
                        "seed {seed} {kind:?} len {len} point {p}"
                    );
                }
            }
        }
    }
    assert!(weighted && general, "{weighted} {general}");
    assert!(
        subtracted.contains(&Code::DotSub) && subtracted.contains(&Code::SubSum),
        "{subtracted:?}"
    );
}
