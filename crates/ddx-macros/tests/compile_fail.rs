//! Every refusal of `#[ddx::derivatives]` is a compile error at the offending span, with a
//! message saying what is accepted (expected messages in `ui/*.stderr`; regenerate with
//! `TRYBUILD=overwrite` after a deliberate change). Kept to a handful of cases: each is a
//! separate compilation.

#[test]
fn refusals_are_compile_errors_at_their_span() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
