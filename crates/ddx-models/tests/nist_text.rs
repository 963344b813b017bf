//! NIST's model lines read through ddx's parser build the same residual systems as the
//! hand-written models: the same hash-consed graph, so the same values and derivatives.

use ddx::ir::testing::canonical;
use ddx_models::nist;

#[test]
fn model_lines_parse_to_the_hand_written_graphs() {
    let all = nist::load_all(&nist::data_dir()).expect("the datasets load");
    assert_eq!(all.len(), 19);
    for ds in &all {
        let text = ds
            .residual_system_text()
            .unwrap_or_else(|e| panic!("{}: {e}", ds.name));
        let hand = ds.residual_system().expect("the hand-written model builds");
        let names: Vec<&str> = ds.parameters.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(text.symbols(), names, "{}", ds.name);
        assert!(
            canonical(text.model()) == canonical(hand.model()),
            "{}: the parsed model line {:?} builds another graph than the hand-written model",
            ds.name,
            ds.model_formulas()
                .map(|(_, p)| p.to_string())
                .unwrap_or_default()
        );
        let b = ds.certified();
        assert_eq!(
            text.evaluate(&b[..]).unwrap(),
            hand.evaluate(&b[..]).unwrap()
        );
    }
}
