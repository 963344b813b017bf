//! Load arbitrary bytes as a saved equation. Whatever is refused must be refused with an
//! archive code; whatever loads must answer every call without panicking, and save to
//! bytes that load to the same equation.
//!
//! The first byte picks how the rest is read: even, as a whole file (so the header and
//! checksum are fuzzed); odd, as a body, wrapped in a header with its correct checksum (so
//! the structure behind the checksum is fuzzed too — random bytes would almost never get
//! past it otherwise).
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run archive -- -dict=fuzz/archive.dict` from the
//! repository root (or `fuzz/`).

#![no_main]

use ddx::{Equation, Errc, Scalar, Shape, System};
use libfuzzer_sys::fuzz_target;

fn exercise<S: Shape>(bytes: &[u8]) {
    let eq = match Equation::<S>::from_bytes(bytes) {
        Ok(eq) => eq,
        Err(e) => {
            assert!(
                matches!(
                    e.code(),
                    Errc::BadArchive | Errc::ArchiveCorrupt | Errc::ArchiveMismatch
                ),
                "refused with {e}"
            );
            let _ = e.to_string();
            return;
        }
    };
    let again = eq.to_bytes().expect("encodes");
    let back = Equation::<S>::from_bytes(&again).expect("what it saved loads");
    assert_eq!(back.to_bytes().expect("encodes"), again);
    let (n, m) = (eq.arity(), eq.outputs());
    // Keep each input small: lanes are built on demand, and a huge model is slow, not
    // wrong.
    if n > 64 || m > 16 || eq.model().graph().len() > 4096 {
        return;
    }
    let x: Vec<f64> = (0..n).map(|j| 0.5 + j as f64 * 0.25).collect();
    let mut f = vec![0.0; m];
    // A model of parameters saved before any were bound answers nothing until they are.
    if let Err(e) = eq.evaluate_into(&x[..], &mut f) {
        assert!(matches!(e, ddx::Error::UnboundParameter { .. }), "{e}");
        return;
    }
    // The answer limit is a saved option, as low as 1: a dense answer past it is refused.
    let limit = eq.options().answer_limit;
    let fits = |r: Result<Vec<f64>, ddx::Error>| {
        if let Err(e) = r {
            assert_eq!(e.code(), Errc::TooLarge, "{e} (limit {limit})");
        }
    };
    fits(eq.jacobian(&x[..]));
    fits(eq.gradient(&x[..]));
    fits(eq.jvp(&x[..], &x[..]));
    fits(eq.vjp(&f, &x[..]));
    if n <= 16 {
        fits(eq.hessian(&x[..]));
    }
    if m == 1 {
        fits(eq.hvp(&x[..], &x[..]));
    }
    let cols: Vec<Vec<f64>> = x.iter().map(|&v| vec![v, -v, 2.0 * v]).collect();
    let xs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
    let mut values = vec![vec![0.0; 3]; m];
    let mut partials = vec![vec![0.0; 3]; eq.jacobian_columns()];
    let mut v: Vec<&mut [f64]> = values.iter_mut().map(Vec::as_mut_slice).collect();
    let mut d: Vec<&mut [f64]> = partials.iter_mut().map(Vec::as_mut_slice).collect();
    // A checksummed file may hold lanes that disagree with its model (forged): then the
    // columns counted from the model's pattern do not fit the loaded lane, and the call
    // is refused — never overrun.
    if let Err(e) = eq.jacobian_batch(&xs, &mut v, &mut d) {
        assert_eq!(e.code(), Errc::WrongColumnCount, "{e}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = if mode & 1 == 1 {
        ddx::fuzzing::frame_archive_body(rest)
    } else {
        rest.to_vec()
    };
    exercise::<Scalar>(&bytes);
    exercise::<System>(&bytes);
});
