//! The reference specification's opening example: the Huber loss of an exponential fit.
//! Expected numbers are the specification's own (printed to 11 significant digits).

mod common;

use common::huber;

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn values_and_gradients_match_the_specification() {
    let eq = huber();
    let f = eq.evaluate([2.0, 0.5]).unwrap();
    assert!(close(f, 4.1343959887e-05, 1e-10), "{f}");
    let g = eq.jacobian([2.0, 0.5]).unwrap();
    assert!(close(g[0], -0.0010757424682, 1e-10), "{g:?}");
    assert!(close(g[1], 0.0150678475595, 1e-10), "{g:?}");
    let f = eq.evaluate([1.8, 0.45]).unwrap();
    assert!(close(f, 2.1570396028e-02, 1e-10), "{f}");
    let g = eq.jacobian([1.8, 0.45]).unwrap();
    assert!(close(g[0], -0.1617863027, 1e-9), "{g:?}");
    assert_eq!(eq.gradient([1.8, 0.45]).unwrap(), g);
}
