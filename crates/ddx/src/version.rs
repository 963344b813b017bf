//! The version of this build, stated once: the workspace `Cargo.toml`'s
//! `[workspace.package] version`, which every crate and the Python package inherit.
//!
//! Invariant: [`VERSION`] is `"{VERSION_MAJOR}.{VERSION_MINOR}.{VERSION_PATCH}"`, and the
//! same text is what `ddx --version`, `ddx.__version__` and the writer recorded in every
//! saved equation say (the agreement tests: `crates/ddx-cli/tests/version.rs`,
//! `crates/ddx-python/tests/test_version.py`).

/// This build's version, `major.minor.patch` (Semantic Versioning), e.g. `"0.1.0"`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The major number of [`VERSION`].
pub const VERSION_MAJOR: u32 = number(env!("CARGO_PKG_VERSION_MAJOR"));
/// The minor number of [`VERSION`].
pub const VERSION_MINOR: u32 = number(env!("CARGO_PKG_VERSION_MINOR"));
/// The patch number of [`VERSION`].
pub const VERSION_PATCH: u32 = number(env!("CARGO_PKG_VERSION_PATCH"));

/// The decimal digits `s` as a number, at compile time (Cargo gives the parts as text).
const fn number(s: &str) -> u32 {
    let digits = s.as_bytes();
    let mut n = 0u32;
    let mut i = 0;
    while i < digits.len() {
        n = n * 10 + (digits[i] - b'0') as u32;
        i += 1;
    }
    n
}
