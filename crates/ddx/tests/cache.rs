//! The last-call cache (`ddx::cache`) against a cache-off twin: on random models and random
//! walks of points (repeat, one coordinate moved, several, back to an earlier point, all
//! new; `-0.0`, NaN payloads), every per-point call answers the twin's bits exactly,
//! interpreted and compiled. Then: a line search and a finite-difference loop hit the
//! cache (counted), many threads on one equation, users' own caches, and extents that must
//! never be served.

use ddx::cache::{CallKind, Entry, Event, Extent, LastValue, ValueCache};
use ddx::ir::testing::{random_model, smooth_model, ModelSize, Rng};
use ddx::{rt, Equation, Errc, Expr, LaneKind, Scalar, System};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

type Answer = Result<Vec<u64>, Errc>;

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// A NaN with a payload of our choosing (quiet, so no hardware rewrites it).
fn nan(payload: u64) -> f64 {
    f64::from_bits(0x7ff8_0000_0000_0000 | (payload & 0x7_ffff_ffff_ffff) | 1)
}

/// A coordinate: ordinary mostly, awkward sometimes (signed zeros, NaN payloads, ∞).
fn coordinate(rng: &mut Rng) -> f64 {
    match rng.below(12) {
        0 => 0.0,
        1 => -0.0,
        2 => nan(rng.next_u64()),
        3 => f64::INFINITY,
        4 => 1.0,
        _ => rng.unit() * 6.0 - 3.0,
    }
}

/// Every per-point call of `eq` at `x` (direction `v`, weights `w`), the ones `mask`
/// selects, as bits; the order is fixed so both twins ask the same things in turn.
fn answers(eq: &Equation<System>, x: &[f64], v: &[f64], w: &[f64], mask: u64) -> Vec<Answer> {
    let (n, m) = (eq.arity(), eq.outputs());
    let code = |e: ddx::Error| e.code();
    let mut out: Vec<Answer> = Vec::new();
    let mut ask = |k: u32, f: &dyn Fn() -> Answer| {
        if mask >> k & 1 == 1 {
            out.push(f());
        }
    };
    ask(0, &|| eq.evaluate(x).map(|v| bits(&v)).map_err(code));
    ask(1, &|| {
        let mut o = vec![0.0; m];
        eq.evaluate_into(x, &mut o).map(|_| bits(&o)).map_err(code)
    });
    ask(2, &|| eq.jacobian(x).map(|v| bits(&v)).map_err(code));
    ask(3, &|| eq.gradient(x).map(|v| bits(&v)).map_err(code));
    ask(4, &|| {
        let mut o = vec![0.0; m * n];
        eq.jacobian_into(x, &mut o).map(|_| bits(&o)).map_err(code)
    });
    ask(5, &|| {
        let mut o = vec![0.0; m * n];
        eq.gradient_into(x, &mut o).map(|_| bits(&o)).map_err(code)
    });
    ask(6, &|| eq.jvp(v, x).map(|v| bits(&v)).map_err(code));
    ask(7, &|| eq.vjp(w, x).map(|v| bits(&v)).map_err(code));
    ask(8, &|| eq.hessian(x).map(|v| bits(&v)).map_err(code));
    ask(9, &|| eq.hvp(v, x).map(|v| bits(&v)).map_err(code));
    ask(10, &|| {
        eq.hvp_along(n - 1, x).map(|v| bits(&v)).map_err(code)
    });
    ask(11, &|| {
        eq.sparse_jacobian(x)
            .map(|a| bits(a.values()))
            .map_err(code)
    });
    ask(12, &|| {
        eq.sparse_hessian(x).map(|a| bits(a.values())).map_err(code)
    });
    // Named spellings: pairs in reverse order, and a map.
    let names = eq.symbols().to_vec();
    ask(13, &|| {
        let pairs: Vec<(&str, f64)> = names
            .iter()
            .map(String::as_str)
            .zip(x.iter().copied())
            .rev()
            .collect();
        eq.evaluate(&pairs[..]).map(|v| bits(&v)).map_err(code)
    });
    ask(14, &|| {
        let map: HashMap<String, f64> = names.iter().cloned().zip(x.iter().copied()).collect();
        eq.gradient(&map).map(|v| bits(&v)).map_err(code)
    });
    ask(15, &|| {
        eq.univariate_derivative_of_order(3, x[0])
            .map(|v| vec![v.to_bits()])
            .map_err(code)
    });
    ask(16, &|| {
        eq.univariate_derivatives(2, x[0])
            .map(|v| bits(&v))
            .map_err(code)
    });
    ask(17, &|| {
        eq.univariate_derivative::<1>(x[0])
            .map(|v| vec![v.to_bits()])
            .map_err(code)
    });
    // The value-returning forms and the remaining `_into` forms.
    ask(18, &|| {
        eq.value_and_gradient(x)
            .map(|(f, g)| [bits(&f), bits(&g)].concat())
            .map_err(code)
    });
    ask(19, &|| {
        eq.value_and_jvp(v, x)
            .map(|(f, jv)| [bits(&f), bits(&jv)].concat())
            .map_err(code)
    });
    ask(20, &|| {
        eq.value_gradient_and_hvp(v, x)
            .map(|(f, g, hv)| [bits(&f), bits(&g), bits(&hv)].concat())
            .map_err(code)
    });
    ask(21, &|| {
        let mut o = vec![0.0; m * n * n];
        eq.hessian_into(x, &mut o).map(|_| bits(&o)).map_err(code)
    });
    ask(22, &|| {
        let mut o = vec![0.0; n];
        eq.hvp_into(v, x, &mut o).map(|_| bits(&o)).map_err(code)
    });
    out
}

/// A walk of input blocks: each step repeats, moves one coordinate, moves several, goes
/// back to an earlier point, or moves everything; directions and weights move too.
struct Walk {
    rng: Rng,
    history: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)>,
}

impl Walk {
    fn new(seed: u64, n: usize, m: usize) -> Self {
        let mut rng = Rng::new(seed);
        let x = (0..n).map(|_| coordinate(&mut rng)).collect();
        let v = (0..n).map(|_| coordinate(&mut rng)).collect();
        let w = (0..m).map(|_| coordinate(&mut rng)).collect();
        Walk {
            rng,
            history: vec![(x, v, w)],
        }
    }

    fn step(&mut self) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let rng = &mut self.rng;
        let (mut x, mut v, mut w) = self.history.last().cloned().unwrap_or_default();
        let n = x.len();
        match rng.below(8) {
            0 | 1 => {}
            2 | 3 => {
                let i = rng.below(n);
                x[i] = if rng.percent(30) && x[i].is_nan() {
                    nan(x[i].to_bits() + 2) // the same NaN, another payload
                } else if rng.percent(20) {
                    -x[i] // -0.0 for 0.0, and back
                } else {
                    coordinate(rng)
                };
            }
            4 => {
                for _ in 0..1 + rng.below(n) {
                    let i = rng.below(n);
                    x[i] = coordinate(rng);
                }
            }
            5 => {
                let back = rng.below(self.history.len());
                (x, v, w) = self.history[back].clone();
            }
            6 => x.iter_mut().for_each(|c| *c = coordinate(rng)),
            _ => {
                let i = rng.below(n);
                v[i] = coordinate(rng);
                if let Some(c) = w.first_mut() {
                    *c = coordinate(rng);
                }
            }
        }
        self.history.push((x.clone(), v.clone(), w.clone()));
        (x, v, w)
    }
}

/// Walks `steps` points through `on` (with a cache) and `off` (without), asking random
/// subsets of the calls, and requires the same bits from both at every call.
fn twin_walk(on: &Equation<System>, off: &Equation<System>, seed: u64, steps: usize) {
    let mut walk = Walk::new(seed, on.arity(), on.outputs());
    let mut rng = Rng::new(seed ^ 0xca11);
    for step in 0..steps {
        let (x, v, w) = walk.step();
        let mask = if rng.percent(30) {
            u64::MAX
        } else {
            rng.next_u64()
        };
        let a = answers(on, &x, &v, &w, mask);
        let b = answers(off, &x, &v, &w, mask);
        assert_eq!(
            a, b,
            "seed {seed}, step {step}, point {x:?}, mask {mask:#x}"
        );
    }
}

#[test]
fn random_models_answer_the_twins_bits_on_random_walks() {
    let mut totals = ddx::CacheStats::default();
    for seed in 0..60u64 {
        let mut rng = Rng::new(seed);
        let size = ModelSize {
            nodes: 10 + rng.below(60),
            symbols: 1 + rng.below(6),
            outputs: 1 + rng.below(3),
            ..ModelSize::default()
        };
        let off = Equation::from(random_model(seed, &size));
        let on = off.clone().with_cache(LastValue::new());
        twin_walk(&on, &off, seed, 60);
        let s = on.cache_stats().expect("LastValue counts");
        totals.hits += s.hits;
        totals.resweeps += s.resweeps;
        totals.sweeps += s.sweeps;
        totals.busy += s.busy;
    }
    // The walks exercised every path: repeats served, moved points re-swept.
    assert!(totals.hits > 1000, "{totals:?}");
    assert!(totals.resweeps > 1000, "{totals:?}");
    assert!(totals.sweeps > 100, "{totals:?}");
    assert_eq!(totals.busy, 0, "one thread never finds its own slot busy");
}

#[test]
fn larger_models_with_many_symbols_resweep_exactly() {
    for seed in 100..112u64 {
        let size = ModelSize {
            nodes: 300,
            symbols: 24,
            outputs: 2,
            ..ModelSize::default()
        };
        let off = Equation::from(random_model(seed, &size));
        let on = off.clone().with_cache(LastValue::new());
        twin_walk(&on, &off, seed, 40);
        assert!(on.tape_memory(LaneKind::Value) > 0);
    }
    // Smooth models: finite everywhere, so the moved values are numbers.
    for seed in 0..8u64 {
        let off = Equation::from(smooth_model(seed, 12, 120, seed % 2 == 0));
        let on = off.clone().with_cache(LastValue::new());
        twin_walk(&on, &off, seed, 40);
    }
}

#[cfg(feature = "jit")]
#[test]
fn compiled_lanes_serve_repeats_and_compute_moved_points_whole() {
    use ddx::{Backend, Options};
    let same = |a: &[Answer], b: &[Answer]| {
        a.len() == b.len()
            && a.iter().zip(b).all(|(a, b)| match (a, b) {
                (Ok(a), Ok(b)) => {
                    a.len() == b.len()
                        && a.iter().zip(b).all(|(&a, &b)| {
                            let (a, b) = (f64::from_bits(a), f64::from_bits(b));
                            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
                        })
                }
                (a, b) => a == b,
            })
    };
    for seed in 200..204u64 {
        let size = ModelSize {
            nodes: 40,
            symbols: 3,
            outputs: 1,
            ..ModelSize::default()
        };
        let mut off = Equation::from(random_model(seed, &size));
        off.set_options(Options::with_backend(Backend::Compile));
        let on = off.clone().with_cache(LastValue::new());
        for kind in [
            LaneKind::Value,
            LaneKind::Jacobian,
            LaneKind::Gradient,
            LaneKind::Jvp,
            LaneKind::Vjp,
            LaneKind::Hessian,
            LaneKind::Hvp,
        ] {
            assert!(off.wait_for_kernel_of(kind), "{kind:?} compiles");
        }
        let mut walk = Walk::new(seed, on.arity(), on.outputs());
        for step in 0..30 {
            let (x, v, w) = walk.step();
            let a = answers(&on, &x, &v, &w, u64::MAX);
            let b = answers(&off, &x, &v, &w, u64::MAX);
            assert!(same(&a, &b), "seed {seed} step {step}: {a:?} vs {b:?}");
        }
        let s = on.cache_stats().expect("counts");
        assert!(s.hits > 0, "{s:?}");
        assert_eq!(s.resweeps, 0, "a kernel's lane keeps no tape: {s:?}");
    }
}

/// `1/x + y`: the sign of a zero and the payload of a NaN both show in the answer.
fn signs() -> (Equation<Scalar>, Equation<Scalar>) {
    let off = rt::equation(|| 1.0 / rt::var("x") + rt::var("y")).expect("builds");
    let on = off.clone().with_cache(LastValue::new());
    (on, off)
}

#[test]
fn signed_zeros_and_nan_payloads_are_different_points() {
    let (on, off) = signs();
    let points = [
        [0.0, 1.0],
        [-0.0, 1.0],
        [0.0, 1.0],
        [1.0, nan(7)],
        [1.0, nan(9)],
        [1.0, nan(9)],
        [1.0, -nan(9)],
    ];
    for p in points {
        let a = on.evaluate(p).expect("evaluates");
        let b = off.evaluate(p).expect("evaluates");
        assert_eq!(a.to_bits(), b.to_bits(), "at {p:?}");
        let a = on.gradient(p).expect("differentiates");
        let b = off.gradient(p).expect("differentiates");
        assert_eq!(bits(&a), bits(&b), "at {p:?}");
    }
    let s = on.cache_stats().expect("counts");
    // Only the one exact repeat (nan(9) twice) is a hit, per lane.
    assert_eq!(s.hits, 2, "{s:?}");
    // Where the outputs carry the payload, a served stale answer would show it.
    assert_eq!(on.evaluate([1.0, nan(5)]).expect("evaluates").to_bits(), {
        off.evaluate([1.0, nan(5)]).expect("evaluates").to_bits()
    });
}

/// `Σ (x_{i+1} − x_i²)² + (1 − x_i)²` over `n` symbols: each symbol reaches two terms.
fn chain(n: usize) -> impl Fn() -> Expr {
    move || {
        let x: Vec<Expr> = (0..n).map(|i| rt::var(&format!("x{i:04}"))).collect();
        let mut f = Expr::from(0.0);
        for i in 0..n - 1 {
            let d = x[i + 1] - x[i] * x[i];
            let e = 1.0 - x[i];
            f += 100.0 * d * d + e * e;
        }
        f
    }
}

#[test]
fn a_line_search_hits_the_cache() {
    let n = 40;
    let off = rt::equation(chain(n)).expect("builds");
    let on = rt::equation_with(chain(n), LastValue::new()).expect("builds");
    let mut x: Vec<f64> = (0..n)
        .map(|i| if i % 2 == 0 { -1.2 } else { 1.0 })
        .collect();
    let iterations = 12;
    for _ in 0..iterations {
        // Backtracking (Armijo): the accepted trial point is the next iteration's start.
        let f0 = on.evaluate(&x[..]).expect("evaluates");
        assert_eq!(
            f0.to_bits(),
            off.evaluate(&x[..]).expect("evaluates").to_bits()
        );
        let g = on.gradient(&x[..]).expect("differentiates");
        assert_eq!(
            bits(&g),
            bits(&off.gradient(&x[..]).expect("differentiates"))
        );
        let slope: f64 = g.iter().map(|g| g * g).sum();
        let mut t = 1.0;
        loop {
            let trial: Vec<f64> = x.iter().zip(&g).map(|(x, g)| x - t * g).collect();
            let ft = on.evaluate(&trial[..]).expect("evaluates");
            assert_eq!(
                ft.to_bits(),
                off.evaluate(&trial[..]).expect("evaluates").to_bits()
            );
            if ft <= f0 - 1e-4 * t * slope || t < 1e-12 {
                x = trial;
                break;
            }
            t *= 0.5;
        }
    }
    let s = on.cache_stats().expect("counts");
    // Every iteration after the first starts where the last one accepted: served.
    assert!(s.hits >= iterations - 1, "{s:?}");
}

#[test]
fn a_finite_difference_loop_resweeps_only_what_each_coordinate_reaches() {
    let n = 200;
    let off = rt::equation(chain(n)).expect("builds");
    let cache = Arc::new(LastValue::new());
    let on = rt::equation_with(chain(n), Arc::clone(&cache)).expect("builds");
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
    let fd = |eq: &Equation<Scalar>| -> Vec<f64> {
        let f0 = eq.evaluate(&x[..]).expect("evaluates");
        let mut xh = x.clone();
        (0..n)
            .map(|i| {
                let h = 1e-7 * x[i].abs().max(1.0);
                xh[i] = x[i] + h;
                let f = eq.evaluate(&xh[..]).expect("evaluates");
                xh[i] = x[i];
                (f - f0) / h
            })
            .collect()
    };
    assert_eq!(bits(&fd(&on)), bits(&fd(&off)));
    let s = cache.stats().expect("counts");
    assert_eq!((s.sweeps, s.resweeps, s.hits), (1, n as u64, 0), "{s:?}");
    // One full sweep, then n re-sweeps, each of the terms its coordinates reach and the
    // running sum after them (about n²/2 additions in all): far below n full sweeps.
    let tape = on.lane(LaneKind::Value).unwrap().graph.len() as u64;
    assert!(
        s.instructions < n as u64 * tape / 4,
        "{} instructions for {n} re-sweeps of a {tape}-node lane",
        s.instructions
    );
    // The second pass is the same loop from the same start: x is one step away.
    assert_eq!(bits(&fd(&on)), bits(&fd(&off)));
}

#[test]
fn a_stream_of_new_points_sweeps_whole_and_builds_no_reach_lists() {
    let n = 50;
    let off = rt::equation(chain(n)).expect("builds");
    let on = rt::equation_with(chain(n), LastValue::new()).expect("builds");
    let point =
        |k: usize| -> Vec<f64> { (0..n).map(|i| 0.3 + 0.01 * (i * 7 + k) as f64).collect() };
    for k in 0..6 {
        let x = point(k);
        assert_eq!(
            on.evaluate(&x[..]).expect("evaluates").to_bits(),
            off.evaluate(&x[..]).expect("evaluates").to_bits()
        );
    }
    let s = on.cache_stats().expect("counts");
    assert_eq!((s.sweeps, s.resweeps, s.hits), (1, 5, 0), "{s:?}");
    assert_eq!(s.instructions % 6, 0, "six full sweeps: {s:?}");
    let program = on.tape_memory(LaneKind::Value);
    assert!(program > 0);
    // Every coordinate moved each time: the reach lists were never needed, nor built.
    let mut x = point(5);
    x[7] += 0.25;
    assert_eq!(
        on.evaluate(&x[..]).expect("evaluates").to_bits(),
        off.evaluate(&x[..]).expect("evaluates").to_bits()
    );
    assert!(
        on.tape_memory(LaneKind::Value) > program,
        "one coordinate moved: the lists are built"
    );
    let t = on.cache_stats().expect("counts");
    assert!(
        t.instructions - s.instructions < s.instructions / 6 / 2,
        "one coordinate re-swept less than half a sweep: {s:?} then {t:?}"
    );
}

#[test]
fn several_moved_coordinates_sharing_instructions_resweep_exactly() {
    let n = 60;
    let off = rt::equation(chain(n)).expect("builds");
    let on = rt::equation_with(chain(n), LastValue::new()).expect("builds");
    let x0: Vec<f64> = (0..n).map(|i| (i as f64 * 0.61).cos()).collect();
    // Neighbours (a term and the running sum after it shared), far apart, the first and
    // last, sixteen and seventeen at once (both sides of the located few), all but one.
    let moves: Vec<Vec<usize>> = vec![
        vec![3, 4],
        vec![10, 40],
        vec![0, n - 1],
        (20..36).collect(),
        (20..37).collect(),
        (1..n).collect(),
        vec![5],
    ];
    for (round, moved) in moves.iter().enumerate() {
        for _ in 0..2 {
            // From x0 to the moved point and back (moving the same ones back), twice.
            let x = &x0;
            let mut y = x.clone();
            for &i in moved {
                y[i] += 0.125 * (1 + round) as f64;
            }
            for p in [&y, x] {
                assert_eq!(
                    on.evaluate(&p[..]).expect("evaluates").to_bits(),
                    off.evaluate(&p[..]).expect("evaluates").to_bits(),
                    "round {round}: {moved:?}"
                );
                assert_eq!(
                    bits(&on.gradient(&p[..]).expect("differentiates")),
                    bits(&off.gradient(&p[..]).expect("differentiates")),
                    "round {round}: {moved:?}"
                );
            }
        }
    }
    let s = on.cache_stats().expect("counts");
    assert!(s.resweeps > 40, "{s:?}");
}

/// The arguments every call of `seen` received (the test below).
static SEEN: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

#[test]
fn user_code_sees_only_full_sweep_operands_when_several_inputs_move() {
    let seen = ddx::UserFunction::new(
        "seen",
        2,
        |x| {
            SEEN.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((x[0].to_bits(), x[1].to_bits()));
            x[0] * x[1]
        },
        |x, g| {
            g[0] = x[1];
            g[1] = x[0];
        },
    )
    .expect("a user function");
    // Both moved inputs reach the call, each through its own instruction first; the
    // terms in `c` make the lists of `a` and `b` short against the whole program.
    let model = || {
        let c = rt::var("c");
        let terms: Expr = (0..40).map(|k| (c + f64::from(k)).sin()).sum();
        terms + seen.call(&[rt::var("a").sin(), rt::var("b").cos()])
    };
    let on = rt::equation_with(model, LastValue::new()).expect("builds");
    let off = rt::equation(model).expect("builds");
    let args = |p: [f64; 3]| (p[0].sin().to_bits(), p[1].cos().to_bits());
    let points = [
        [0.3, 0.7, 1.0],
        [0.4, 0.9, 1.0],
        [0.4, 0.9, 2.0],
        [0.1, 0.2, 2.0],
    ];
    for (k, p) in points.into_iter().enumerate() {
        SEEN.lock().unwrap_or_else(|e| e.into_inner()).clear();
        let f = on.evaluate(p).expect("evaluates");
        let calls = std::mem::take(&mut *SEEN.lock().unwrap_or_else(|e| e.into_inner()));
        assert!(
            calls.len() <= 1,
            "point {k}: user code called {} times",
            calls.len()
        );
        assert!(calls.iter().all(|c| *c == args(p)), "point {k}: {calls:?}");
        assert_eq!(f.to_bits(), off.evaluate(p).expect("evaluates").to_bits());
    }
    assert!(on.cache_stats().expect("counts").resweeps >= 2);
}

/// A running sum of `n` terms, left to right (the interpreter keeps the sum in a register
/// over such a chain, and a coordinate's reach into it is one piece): the terms
/// `sin(xᵢ·xᵢ₊₁) + xᵢ²`, the sum on the right every `flip`-th term, and every `tap`-th
/// partial sum also an output of its own (a partial sum with another use).
fn running_sum(n: usize, flip: usize, tap: usize) -> Equation<System> {
    rt::equation(move || {
        let x: Vec<Expr> = (0..n).map(|i| rt::var(&format!("x{i:03}"))).collect();
        let mut f = x[0] * 0.5;
        let mut outputs = Vec::new();
        for i in 0..n {
            let t = (x[i] * x[(i + 1) % n]).sin() + x[i] * x[i];
            f = if flip > 0 && i % flip == flip - 1 {
                t + f
            } else {
                f + t
            };
            if tap > 0 && i % tap == tap - 1 {
                outputs.push(f.tanh());
            }
        }
        outputs.insert(0, f);
        outputs
    })
    .expect("builds")
}

#[test]
fn running_sums_answer_the_twins_bits_on_random_walks() {
    for (seed, (n, flip, tap)) in [
        (3, 0, 0),
        (9, 0, 0),
        (12, 5, 0),
        (30, 0, 7),
        (70, 11, 0),
        (70, 0, 0),
    ]
    .into_iter()
    .enumerate()
    {
        let off = running_sum(n, flip, tap);
        let on = off.clone().with_cache(LastValue::new());
        twin_walk(&on, &off, 1400 + seed as u64, 40);
        // Each coordinate of the chain moved at the start, the end and in the middle,
        // one at a time and together, there and back.
        let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin()).collect();
        for moved in [
            vec![0],
            vec![n - 1],
            vec![n / 2],
            vec![0, n - 1],
            vec![1, n / 2],
        ] {
            let mut y = x.clone();
            for &i in &moved {
                y[i] += 0.375;
            }
            for p in [&y, &x] {
                assert_eq!(
                    bits(&on.evaluate(&p[..]).expect("evaluates")),
                    bits(&off.evaluate(&p[..]).expect("evaluates")),
                    "n {n}: {moved:?}"
                );
                assert_eq!(
                    bits(&on.jacobian(&p[..]).expect("differentiates")),
                    bits(&off.jacobian(&p[..]).expect("differentiates")),
                    "n {n}: {moved:?}"
                );
            }
        }
        assert!(on.cache_stats().expect("counts").resweeps > 10);
    }
}

/// The arguments every call of `pair` received (the test below).
static PAIRS: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

#[test]
fn a_running_sum_of_user_calls_calls_each_once_on_final_operands() {
    let pair = ddx::UserFunction::new(
        "pair",
        2,
        |x| {
            PAIRS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((x[0].to_bits(), x[1].to_bits()));
            x[0] * x[1].sin()
        },
        |x, g| {
            g[0] = x[1].sin();
            g[1] = x[0] * x[1].cos();
        },
    )
    .expect("a user function");
    let n = 40;
    let model = || {
        let x: Vec<Expr> = (0..n).map(|i| rt::var(&format!("x{i:02}"))).collect();
        let mut f = Expr::from(0.0);
        for i in 0..n - 1 {
            f = if i == 0 {
                pair.call(&[x[0], x[1]])
            } else {
                f + pair.call(&[x[i], x[i + 1]])
            };
        }
        f
    };
    let on = rt::equation_with(model, LastValue::new()).expect("builds");
    let off = rt::equation(model).expect("builds");
    let x0: Vec<f64> = (0..n).map(|i| 1.0 + i as f64 / 8.0).collect();
    let mut x = x0.clone();
    // 39 calls and 38 additions: the first call sweeps them; a coordinate past the
    // middle reaches less than half (two calls and the sum after them), and so do three
    // of them together (the union: their calls and one tail of the sum), though their
    // lists add up to more; the first coordinate reaches more than half.
    let mut len = 0;
    for moved in [
        vec![],
        vec![30],
        vec![0, n - 1],
        vec![25, 26, 35],
        vec![30, 31, 32, 33],
    ] {
        for &i in &moved {
            x[i] += 0.5 + i as f64 / 4096.0; // no two coordinates equal
        }
        PAIRS.lock().unwrap_or_else(|e| e.into_inner()).clear();
        let f = on.evaluate(&x[..]).expect("evaluates");
        let calls = std::mem::take(&mut *PAIRS.lock().unwrap_or_else(|e| e.into_inner()));
        // Each term at most once, on the new point; every term a moved coordinate reaches
        // among them (all of them where the re-sweep would have run more than half the
        // program, and at the first call, which sweeps in full).
        let point_pairs: Vec<(u64, u64)> = (0..n - 1)
            .map(|i| (x[i].to_bits(), x[i + 1].to_bits()))
            .collect();
        let mut got = calls.clone();
        got.sort_unstable();
        got.dedup();
        assert_eq!(
            got.len(),
            calls.len(),
            "{moved:?}: a term called twice: {calls:?}"
        );
        assert!(
            calls.iter().all(|c| point_pairs.contains(c)),
            "{moved:?}: {calls:?}"
        );
        let reached = (0..n - 1)
            .filter(|i| moved.is_empty() || moved.contains(i) || moved.contains(&(i + 1)));
        for i in reached {
            assert!(
                calls.contains(&point_pairs[i]),
                "{moved:?}: term {i} not called"
            );
        }
        assert_eq!(
            f.to_bits(),
            off.evaluate(&x[..]).expect("evaluates").to_bits()
        );
        if moved.is_empty() {
            len = on.cache_stats().expect("counts").instructions;
        }
    }
    let s = on.cache_stats().expect("counts");
    assert_eq!((s.sweeps, s.resweeps, len), (1, 4, 77), "{s:?}");
    // One sweep, one whole re-sweep, three unions of less than half.
    assert!(s.instructions < 2 * len + 3 * len / 2, "{s:?}");
}

/// Value, gradient, Hessian and one `hvp` column at a point, as bits.
type Truth = (u64, Vec<u64>, Vec<u64>, Vec<u64>);

#[test]
fn many_threads_on_one_equation_never_block_and_answer_correctly() {
    let model = smooth_model(7, 6, 60, true);
    let off: Equation<Scalar> = Equation::try_from(model).expect("scalar");
    let on = off.clone().with_cache(LastValue::new());
    let mut rng = Rng::new(99);
    let points: Vec<Vec<f64>> = (0..6)
        .map(|k| {
            let mut p: Vec<f64> = (0..6).map(|_| rng.unit() * 2.0 - 1.0).collect();
            if k % 2 == 1 {
                p[k] += 0.25; // one coordinate from its neighbour
            }
            p
        })
        .collect();
    let truth: Vec<Truth> = points
        .iter()
        .map(|p| {
            (
                off.evaluate(&p[..]).expect("evaluates").to_bits(),
                bits(&off.gradient(&p[..]).expect("differentiates")),
                bits(&off.hessian(&p[..]).expect("hessian")),
                bits(&off.hvp_along(0usize, &p[..]).expect("hvp")),
            )
        })
        .collect();
    let threads = 8;
    let rounds = 1500;
    let (done, finished) = std::sync::mpsc::channel();
    let worker = {
        let on = on.clone();
        std::thread::spawn(move || {
            std::thread::scope(|s| {
                for t in 0..threads {
                    let (on, points, truth) = (&on, &points, &truth);
                    s.spawn(move || {
                        let mut rng = Rng::new(t as u64);
                        for _ in 0..rounds {
                            let k = rng.below(points.len());
                            let p = &points[k][..];
                            match rng.below(4) {
                                0 => assert_eq!(on.evaluate(p).expect("ok").to_bits(), truth[k].0),
                                1 => assert_eq!(bits(&on.gradient(p).expect("ok")), truth[k].1),
                                2 => assert_eq!(bits(&on.hessian(p).expect("ok")), truth[k].2),
                                _ => assert_eq!(
                                    bits(&on.hvp_along(0usize, p).expect("ok")),
                                    truth[k].3
                                ),
                            }
                        }
                    });
                }
            });
            let _ = done.send(());
        })
    };
    // A deadlock, or a call waiting on another's lease, would stop the workers.
    finished
        .recv_timeout(std::time::Duration::from_secs(300))
        .expect("the threads finish");
    worker.join().expect("no thread panicked");
    let s = on.cache_stats().expect("counts");
    assert_eq!(
        s.hits + s.resweeps + s.sweeps + s.busy,
        (threads * rounds) as u64,
        "every call accounted for: {s:?}"
    );
}

/// A user's cache: one entry per extent in a map, behind a mutex taken with `try_lock`.
#[derive(Debug, Default)]
struct Shelf {
    entries: Mutex<HashMap<Extent, Entry>>,
    hits: AtomicUsize,
}

impl ValueCache for Shelf {
    fn active(&self) -> bool {
        true
    }
    fn read(&self, extent: &Extent, lease: &mut dyn FnMut(&Entry)) -> bool {
        let Ok(map) = self.entries.try_lock() else {
            return false;
        };
        map.get(extent).map(lease).is_some()
    }
    fn write(&self, extent: &Extent, lease: &mut dyn FnMut(&mut Entry)) -> bool {
        let Ok(mut map) = self.entries.try_lock() else {
            return false;
        };
        lease(map.entry(*extent).or_default());
        true
    }
    fn note(&self, event: Event) {
        if event == Event::Hit {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[test]
fn a_users_cache_is_served_from() {
    let shelf = Arc::new(Shelf::default());
    let off = Equation::from(random_model(5, &ModelSize::default()));
    let on = off.clone().with_cache(Arc::clone(&shelf));
    twin_walk(&on, &off, 5, 80);
    assert!(shelf.hits.load(Ordering::Relaxed) > 10);
    let map = shelf.entries.lock().expect("not poisoned");
    // One entry per kind of call asked, each holding its lane's outputs.
    assert!(map.len() >= 6, "{}", map.len());
    for (extent, entry) in map.iter() {
        assert_eq!(entry.extent(), Some(extent));
        assert_eq!(entry.outputs().len(), extent.outputs());
        assert_eq!(entry.point().len(), extent.inputs());
        if let CallKind::Lane(_) = extent.call() {
            assert!(entry.tape().is_some(), "the interpreter keeps its tape");
        }
    }
}

/// A careless cache: one entry for every extent, whatever is asked.
#[derive(Debug, Default)]
struct OneEntry(Mutex<Entry>);

impl ValueCache for OneEntry {
    fn active(&self) -> bool {
        true
    }
    fn read(&self, _: &Extent, lease: &mut dyn FnMut(&Entry)) -> bool {
        self.0.try_lock().map(|e| lease(&e)).is_ok()
    }
    fn write(&self, _: &Extent, lease: &mut dyn FnMut(&mut Entry)) -> bool {
        self.0.try_lock().map(|mut e| lease(&mut e)).is_ok()
    }
}

#[test]
fn an_extent_mismatch_is_never_served() {
    // One entry for every kind of call: each call finds another call's entry, at the
    // same point, and must not answer from it.
    let off = Equation::from(random_model(11, &ModelSize::default()));
    let on = off.clone().with_cache(OneEntry::default());
    twin_walk(&on, &off, 11, 80);

    // One LastValue shared by two equations of the same shape and different graphs.
    let shared = Arc::new(LastValue::new());
    let f = rt::equation_with(|| rt::var("x") * 2.0, Arc::clone(&shared)).expect("builds");
    let g = rt::equation_with(|| rt::var("x") * 3.0, Arc::clone(&shared)).expect("builds");
    for _ in 0..3 {
        assert_eq!(f.evaluate([1.5]).expect("ok"), 3.0);
        assert_eq!(g.evaluate([1.5]).expect("ok"), 4.5);
        assert_eq!(f.univariate_derivative::<1>(1.5).expect("ok"), 2.0);
        assert_eq!(g.univariate_derivative::<1>(1.5).expect("ok"), 3.0);
    }
    // Different Taylor orders at one point are different extents.
    assert_eq!(f.univariate_derivative::<2>(1.5).expect("ok"), 0.0);
    assert_eq!(f.univariate_derivative::<1>(1.5).expect("ok"), 2.0);

    // New options select another lane variant (contracted): never the old lane's entry.
    let mut on = rt::equation_with(
        || {
            let (a, b, c) = (rt::var("a"), rt::var("b"), rt::var("c"));
            a * b + c
        },
        LastValue::new(),
    )
    .expect("builds");
    let p = [0.1, 0.3, -0.03];
    let plain = on.evaluate(p).expect("ok");
    let mut o = on.options().clone();
    o.codegen.contract = true;
    on.set_options(o.clone());
    let mut twin = rt::equation(|| {
        let (a, b, c) = (rt::var("a"), rt::var("b"), rt::var("c"));
        a * b + c
    })
    .expect("builds");
    twin.set_options(o);
    let contracted = twin.evaluate(p).expect("ok");
    assert_ne!(
        plain.to_bits(),
        contracted.to_bits(),
        "fma rounds once here"
    );
    assert_eq!(on.evaluate(p).expect("ok").to_bits(), contracted.to_bits());
}

/// A cache that says no: nothing else of it may be asked.
#[derive(Debug, Default)]
struct Off(AtomicUsize);

impl ValueCache for Off {
    fn active(&self) -> bool {
        self.0.fetch_add(1, Ordering::Relaxed);
        false
    }
    fn read(&self, _: &Extent, _: &mut dyn FnMut(&Entry)) -> bool {
        panic!("an inactive cache is never read")
    }
    fn write(&self, _: &Extent, _: &mut dyn FnMut(&mut Entry)) -> bool {
        panic!("an inactive cache is never written")
    }
}

#[test]
fn an_inactive_cache_is_asked_only_whether_it_is_active() {
    let off = Arc::new(Off::default());
    let eq = Equation::from(random_model(3, &ModelSize::default())).with_cache(Arc::clone(&off));
    let twin = Equation::from(random_model(3, &ModelSize::default()));
    twin_walk(&eq, &twin, 3, 20);
    assert!(off.0.load(Ordering::Relaxed) > 0);
    assert_eq!(eq.cache_stats(), None);
    assert_eq!(eq.tape_memory(LaneKind::Value), 0, "no tape is built");
}

#[test]
fn batches_are_not_remembered() {
    let on = rt::equation_with(|| rt::var("x").sin(), LastValue::new()).expect("builds");
    let xs = [0.5, 0.5, 0.7];
    let mut f = [0.0; 3];
    on.evaluate_batch(&[&xs[..]], &mut [&mut f[..]])
        .expect("batch");
    assert_eq!(
        on.cache_stats().expect("counts"),
        ddx::CacheStats::default()
    );
    assert_eq!(f[0].to_bits(), on.evaluate([0.5]).expect("ok").to_bits());
}
