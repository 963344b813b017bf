//! The models' parameters as JSON (`models.json`), for the Python peers.
//!
//! The Python spellings (`compare/python/models.py`) read every constant from here, so
//! synthetic parameters exist in one place (the Rust constructors) and numbers cross as
//! shortest round-trip decimals, exactly.

use ddx_models::coverage::Coverage;
use ddx_models::thermo::{
    Electrolyte, PengRobinson, RegularSolution, Uniquac, DH_A_WATER, DH_B_WATER, SOLVENTS, SR_A1,
};
use ddx_models::BenchModel;
use serde_json::{json, Value};

/// A model whose parameters the Python peers can rebuild it from.
pub trait Export: BenchModel {
    /// The family-specific parameters (the harness adds `id`, `cid`, `family`, `n`).
    fn params(&self) -> Value;
}

impl Export for RegularSolution {
    fn params(&self) -> Value {
        json!({"rt": self.rt, "w": self.w})
    }
}

impl Export for Uniquac {
    fn params(&self) -> Value {
        json!({"r": self.r, "q": self.q, "tau": self.tau, "half_z": self.half_z})
    }
}

impl Export for PengRobinson {
    fn params(&self) -> Value {
        json!({"a": self.a, "b": self.b})
    }
}

fn solvent(s: &ddx_models::thermo::Solvent) -> Value {
    json!({
        "name": s.name,
        "molar_mass": s.molar_mass,
        "density": s.density,
        "permittivity": s.permittivity,
    })
}

impl Export for Electrolyte {
    fn params(&self) -> Value {
        json!({
            "solvents": self.solvents.iter().map(solvent).collect::<Vec<_>>(),
            "water": solvent(&SOLVENTS[0]),
            "charge": self.charge,
            "size": self.size,
            "b": self.b,
            "c": self.c,
            "dh_a": DH_A_WATER,
            "dh_b": DH_B_WATER,
            "sr_a1": SR_A1,
        })
    }
}

impl Export for Coverage {
    fn params(&self) -> Value {
        json!({})
    }
}

/// The full record of one model: `id`, `cid` (a C identifier), `family`, `n` and its
/// parameters.
pub fn record<M: Export>(model: &M, id: &str) -> Value {
    let mut v = model.params();
    if let Value::Object(map) = &mut v {
        map.insert("id".into(), json!(id));
        map.insert("cid".into(), json!(c_identifier(id)));
        map.insert("family".into(), json!(model.family()));
        map.insert("n".into(), json!(model.arity()));
    }
    v
}

/// `id` with every character that may not appear in a C identifier replaced by `_`.
pub fn c_identifier(id: &str) -> String {
    id.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_carry_identity_and_parameters() {
        let m = RegularSolution::new(4);
        let r = record(&m, "regular-4");
        assert_eq!(r["cid"], "regular_4");
        assert_eq!(r["family"], "regular");
        assert_eq!(r["n"], 4);
        assert_eq!(r["w"].as_array().map(Vec::len), Some(16));
        // Shortest round-trip decimals: the numbers come back bit for bit.
        let back: Vec<f64> = serde_json::from_value(r["w"].clone()).unwrap();
        assert_eq!(back, m.w);
    }
}
