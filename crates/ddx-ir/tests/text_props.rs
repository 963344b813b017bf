//! Properties of the text layer over random inputs:
//! - random models print to text that parses back to the same hash-consed graph;
//! - no string, arbitrary or nearly valid, makes the parser panic, and whatever parses
//!   prints to text that parses back to the same graph, unless folding nested it deeper
//!   than `MAX_DEPTH` (then the parser refuses it as too deep, and nothing else).

use ddx_ir::testing::{canonical, random_model, ModelSize};
use ddx_ir::text::{infix, model, parse_model, Formula, Syntax};
use ddx_ir::Error;
use ddx_ir::Model;
use proptest::prelude::*;

/// Each output of `m` as text.
fn texts(m: &Model) -> Vec<String> {
    m.outputs()
        .iter()
        .map(|&o| infix(m.graph(), o, m.symbols()).to_string())
        .collect()
}

/// Print → parse → the same graph, and printing again gives the same text.
fn round_trip(m: &Model) -> Result<(), TestCaseError> {
    let printed = texts(m);
    let back = parse_model(&printed)
        .map_err(|e| TestCaseError::fail(format!("printed text does not parse:\n{e}")))?;
    prop_assert_eq!(canonical(&back), canonical(m), "printed: {:?}", printed);
    prop_assert_eq!(texts(&back), printed);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_models_round_trip(seed in any::<u64>(), nodes in 1usize..48, outputs in 1usize..4) {
        let size = ModelSize { nodes, outputs, ..ModelSize::default() };
        round_trip(&random_model(seed, &size))?;
    }
}

/// Tokens, and near-tokens, of the grammar.
fn token() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "x", "y", "b1", "_", "sin", "pow", "select", "fma", "sine", "pi", "nan", "(", ")", ",",
        "+", "-", "*", "/", "**", "***", "^", "<", "<=", ">", ">=", "==", "!=", "=", "!", "0", "2",
        "1e999", ".5", "5.", "1e-3", "1e", "0.0", "-0", "2x", ".", " ", "\n", "\t", "é", "\u{0}",
        "1e308", "0/0",
    ])
}

fn parse_and_reprint(text: &str) -> Result<(), TestCaseError> {
    let Ok(f) = Formula::parse(text) else {
        return Ok(());
    };
    if let Ok(m) = model(&[f]) {
        let too_deep = texts(&m).iter().any(|t| {
            matches!(
                Formula::parse(t),
                Err(Error::BadSyntax {
                    problem: Syntax::TooDeep { .. },
                    ..
                })
            )
        });
        if !too_deep {
            round_trip(&m)?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        parse_and_reprint(&text)?;
    }

    #[test]
    fn token_soups_never_panic(tokens in prop::collection::vec(token(), 0..40)) {
        parse_and_reprint(&tokens.concat())?;
        parse_and_reprint(&tokens.join(" "))?;
    }

    #[test]
    fn error_display_never_panics(text in any::<String>(), cut in any::<prop::sample::Index>()) {
        // Every prefix of an input, so errors land at every kind of position.
        let mut at = cut.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        if let Err(e) = Formula::parse(&text[..at]) {
            let shown = e.to_string();
            prop_assert!(shown.contains('^'), "{}", shown);
        }
    }
}
