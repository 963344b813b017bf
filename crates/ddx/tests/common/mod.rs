//! Shared helpers for the integration tests: a reproducible random-model generator and
//! floating-point distance measures.

#![allow(dead_code)]

use ddx::{rt, select, Equation, Expr};

/// xorshift64: a small deterministic generator, so every random model is reproducible
/// from its seed.
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// A random scalar model over `n` symbols named `s0 … s{n−1}`, built from `steps`
/// operations on a growing pool of subexpressions. Every operation keeps its arguments
/// inside its domain (`log(1 + u²)`, `pow(1 + u², v/2)`, `u / (1 + v²)`, …) so values
/// and derivatives are finite everywhere. With `kinks`, `max`, `min`, `abs` and
/// `select` on a comparison join in (derivatives still finite, but not smooth: finite
/// differences across a kink would be wrong, so smooth-only tests leave them out).
pub fn random_model(seed: u64, n: usize, steps: usize, kinks: bool) -> Equation {
    let names: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
    rt::equation(|| {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut pool: Vec<Expr> = names.iter().map(|s| rt::var(s)).collect();
        let ops = if kinks { 24 } else { 20 };
        for _ in 0..steps {
            let u = pool[rng.below(pool.len())];
            let v = pool[rng.below(pool.len())];
            let c = rng.uniform(0.5, 1.5);
            let e = match rng.below(ops) {
                0 => u + v,
                1 => u - c * v,
                2 => u * v,
                3 => u / (1.0 + v * v),
                4 => u.sin(),
                5 => (c * u).cos(),
                6 => u.tanh().exp(),
                7 => u.atan(),
                8 => u.tanh(),
                9 => u.hypot(1.0),
                10 => (1.0 + u * u).ln(),
                11 => u.erf(),
                12 => u.asinh(),
                13 => (u * u + 1.0).cbrt(),
                14 => (1.0 + u * u).powf(0.5 * v.tanh()),
                15 => u.atan2(1.5 + v * v),
                16 => (u * u + v * v + 0.5).sqrt(),
                17 => u * c + v,
                18 => (0.5 * u.tanh()).atanh() * (u * v).sin(),
                19 => (2.0 + u.sin()).log10() * v,
                20 => u.max(v),
                21 => u.min(c * v),
                22 => (u - v).abs() * u,
                _ => select(u.lt(v), u * v, u.sin() + v),
            };
            pool.push(e);
        }
        // Sum the last few so the output depends on much of the pool.
        let k = pool.len().min(4);
        pool[pool.len() - k..].iter().copied().sum::<Expr>()
    })
    .expect("random model builds")
}

/// The distance between two doubles in units in the last place (`0` for equal values,
/// `+0` and `-0` included; `u64::MAX` if either is NaN).
pub fn ulps(a: f64, b: f64) -> u64 {
    if a == b {
        return 0;
    }
    if a.is_nan() || b.is_nan() {
        return u64::MAX;
    }
    let key = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 {
            i64::MIN - bits
        } else {
            bits
        }
    };
    key(a).abs_diff(key(b))
}

/// A random point with coordinates in `[-1.5, 1.5)`.
pub fn point(rng: &mut Rng, n: usize) -> Vec<f64> {
    (0..n).map(|_| rng.uniform(-1.5, 1.5)).collect()
}
