//! Every route answers alike at the hard points (issue 21): the accumulation order each
//! mode documents (`ARCHITECTURE.md`, "Semantics").

use ddx::rt;

/// Reverse mode sums a shared node's adjoints before its partial, forward mode after:
/// where a term cancels, the two round differently, as documented.
#[test]
fn accumulation_order_is_the_documented_one() {
    let eq = rt::equation_text("50*x*exp(100*x) + (50*x - 50*x*exp(100*x))").unwrap();
    let x = 0.6;
    // In double, 50x = 30 is lost beside 50x·e^(100x) ≈ 3.4e27, so the value is 0.
    assert_eq!(eq.evaluate(x).unwrap(), 0.0);
    // Forward: ȧ + (50 − ȧ), with ȧ ≈ 3.5e29, rounds the 50 away.
    assert_eq!(eq.jvp([1.0], x).unwrap(), [0.0]);
    // Reverse: the adjoint of a is 1 − 1 = 0 exactly, and 50 comes in alone (the true
    // derivative of 50x, to which the function is equal).
    assert_eq!(eq.gradient(x).unwrap(), [50.0]);
    assert_eq!(eq.vjp(&[1.0], x).unwrap(), [50.0]);
    assert_eq!(eq.jacobian(x).unwrap(), [50.0]);
}
