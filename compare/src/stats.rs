//! Turning interleaved repetitions into table cells.
//!
//! Every repetition times each arm once, right after a timing of `native`, so a burst of
//! machine noise lasting longer than the pair lands on both terms of its ratio. A cell is
//! the median over repetitions of those ratios `arm ÷ native`, with the spread
//! `(max − min) / median` of the same ratios.

/// A table cell: the median ratio and its spread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cell {
    /// Median over repetitions of `arm time ÷ native time`.
    pub ratio: f64,
    /// `(max − min) / median` of those ratios.
    pub spread: f64,
}

/// The median of `v` (the mean of the middle two for an even count); NaN when empty.
pub fn median(v: &[f64]) -> f64 {
    let mut s: Vec<f64> = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => 0.5 * (s[n / 2 - 1] + s[n / 2]),
    }
}

/// `(max − min) / median`; NaN when empty.
pub fn spread(v: &[f64]) -> f64 {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (hi - lo) / median(v)
}

/// The cell of an arm timed `arm[k]` in repetition `k` against `native[k]`.
pub fn cell(arm: &[f64], native: &[f64]) -> Cell {
    let ratios: Vec<f64> = arm.iter().zip(native).map(|(a, n)| a / n).collect();
    Cell {
        ratio: median(&ratios),
        spread: spread(&ratios),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(spread(&[1.0, 2.0, 3.0]), 1.0);
    }

    #[test]
    fn ratios_are_taken_within_a_repetition() {
        // A repetition where the whole machine was twice as slow leaves the ratio alone.
        let native = [100.0, 200.0, 100.0];
        let arm = [300.0, 600.0, 300.0];
        let c = cell(&arm, &native);
        assert_eq!(c.ratio, 3.0);
        assert_eq!(c.spread, 0.0);
    }
}
