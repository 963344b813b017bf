//! Parse arbitrary bytes. Whatever is refused must display its error without panicking;
//! whatever parses into a model must print to text that parses back to the same
//! hash-consed graph, and print the same again — unless folding nested the graph deeper
//! than the text it came from (`x*y*-1*y*-1…` prints as `-(-(x * y) * y)…`) and past
//! `MAX_DEPTH`, where the only refusal allowed is `TooDeep`.
//!
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run parse` from the repository root (or `fuzz/`).

#![no_main]

use ddx_ir::testing::canonical;
use ddx_ir::text::{infix, model, parse_model, Formula, Syntax};
use ddx_ir::Error;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let formula = match Formula::parse(&text) {
        Ok(f) => f,
        Err(e) => {
            let shown = e.to_string();
            assert!(shown.contains('^'), "an error without a caret: {shown}");
            return;
        }
    };
    let Ok(m) = model(&[formula]) else {
        return;
    };
    let printed: Vec<String> = m
        .outputs()
        .iter()
        .map(|&o| infix(m.graph(), o, m.symbols()).to_string())
        .collect();
    let _ = format!("{m:.3}");
    let back = match parse_model(&printed) {
        Ok(back) => back,
        Err(Error::BadSyntax {
            problem: Syntax::TooDeep { .. },
            ..
        }) => return,
        Err(e) => panic!("{text:?} printed as {printed:?}, which does not parse:\n{e}"),
    };
    assert_eq!(
        canonical(&back),
        canonical(&m),
        "{text:?} printed as {printed:?}"
    );
    let again: Vec<String> = back
        .outputs()
        .iter()
        .map(|&o| infix(back.graph(), o, back.symbols()).to_string())
        .collect();
    assert_eq!(again, printed);
});
