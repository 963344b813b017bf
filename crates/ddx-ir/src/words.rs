//! Words for messages: counts that agree with their nouns and verbs, and numbers written
//! as Python writes them. Every message of the workspace that holds a count, a list or an
//! `f64` is built with these, so none says "1 arguments" or prints `1e308` as 309 digits.

/// `n` and `noun`, in the plural unless `n` is 1: `1 value`, `0 values`, `2 values`
/// (nouns whose plural adds `s`; [`agree`] picks between two spellings).
pub fn count<N: std::fmt::Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    let s = if n == N::from(1) { "" } else { "s" };
    format!("{n} {noun}{s}")
}

/// `one` when `n` is 1, else `many`: the verb or pronoun that agrees with a count or a
/// list of `n` items (`agree(k, "is", "are")`, `agree(k, "it", "them")`).
pub fn agree<'a>(n: usize, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// `v` as Python's `repr(float)` writes it: the shortest digits that read back to the
/// same bits, in positional form for `1e-4 ≤ |v| < 1e16` (`2.5`, `1.0`, `0.0001`,
/// `1000000000000000.0`) and in scientific form otherwise (`1e+16`, `1e+308`, `1e-05`,
/// `-1.5e-300`, `5e-324`); `nan`, `inf`, `-inf`. Rust's `{}` writes every digit of a large
/// value (`1e308` as 309 digits); its `{:?}` has the same digits and thresholds as
/// `repr`, and only the exponent's spelling differs (`1e308`, `1e-5`), which is rewritten.
pub fn real(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    let debug = format!("{v:?}");
    match debug.split_once('e') {
        Some((mantissa, exponent)) => {
            let (sign, digits) = match exponent.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exponent),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => debug,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Python's `repr` of each value (written down from CPython 3.11), the truth.
    #[test]
    fn real_is_pythons_repr() {
        let cases: [(f64, &str); 22] = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (2.5, "2.5"),
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (1e-4, "0.0001"),
            (1e-5, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e15, "1000000000000000.0"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
            (1e16, "1e+16"),
            (1.2345e17, "1.2345e+17"),
            (1e100, "1e+100"),
            (1e308, "1e+308"),
            (-1e308, "-1e+308"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "5e-324"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (v, want) in cases {
            assert_eq!(real(v), want, "{v:?}");
        }
    }

    #[test]
    fn counts_agree() {
        assert_eq!(count(1, "argument"), "1 argument");
        assert_eq!(count(0, "argument"), "0 arguments");
        assert_eq!(count(2, "argument"), "2 arguments");
        assert_eq!(count(1u64, "byte"), "1 byte");
        assert_eq!(agree(1, "is", "are"), "is");
        assert_eq!(agree(2, "is", "are"), "are");
        assert_eq!(agree(0, "it", "them"), "them");
    }
}
