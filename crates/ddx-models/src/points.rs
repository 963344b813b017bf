//! Deterministic numbers: a SplitMix64 stream for points, and a hash for synthetic
//! parameters.
//!
//! Nothing here depends on the platform or on a crate's version, so a model's parameters
//! and points are the same on every machine and in every language that re-implements the
//! two functions (the compare harness hands its parameters to Python as numbers anyway).

/// A SplitMix64 stream (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): 64-bit state, one multiply-xorshift finaliser per draw.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A stream starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.state)
    }

    /// A uniform draw in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform draw in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// `n` mole fractions, each positive, summing to less than 1: the first `n` of `n + 1`
    /// weights drawn in `[0.5, 1.5)` and normalised to sum 1. The implied last fraction is at
    /// least `1/(3n + 1)`.
    pub fn fractions(&mut self, out: &mut [f64]) {
        let last = self.uniform(0.5, 1.5);
        let mut total = last;
        for v in out.iter_mut() {
            *v = self.uniform(0.5, 1.5);
            total += *v;
        }
        for v in out.iter_mut() {
            *v /= total;
        }
    }
}

/// The SplitMix64 finaliser: a bijective 64-bit mix.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A deterministic number in `[0, 1)` for the synthetic parameter `(table, i, j)`: the
/// SplitMix64 finaliser of the three mixed together.
pub fn synthetic(table: u64, i: usize, j: usize) -> f64 {
    let h = mix(mix(mix(table) ^ i as u64) ^ (j as u64).rotate_left(32));
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_is_deterministic_and_in_range() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..1000 {
            let u = a.unit();
            assert_eq!(u, b.unit());
            assert!((0.0..1.0).contains(&u));
        }
    }

    #[test]
    fn fractions_are_positive_and_sum_below_one() {
        let mut r = SplitMix64::new(1);
        let mut x = [0.0; 33];
        for _ in 0..100 {
            r.fractions(&mut x);
            assert!(x.iter().all(|&v| v > 0.0));
            let s: f64 = x.iter().sum();
            assert!(s < 1.0 - 1.0 / (3.0 * 33.0 + 1.0) + 1e-12, "{s}");
        }
    }

    #[test]
    fn synthetic_differs_by_index() {
        assert_ne!(synthetic(1, 2, 3), synthetic(1, 3, 2));
        assert_ne!(synthetic(1, 2, 3), synthetic(2, 2, 3));
        assert_eq!(synthetic(1, 2, 3), synthetic(1, 2, 3));
    }
}
