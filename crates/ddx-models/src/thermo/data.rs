//! Reading `data/thermo/components.csv` and `data/thermo/kij.csv`.
//!
//! The files, their units and their provenance are described in `data/thermo/README.md`
//! (ChemSep 8.32 UNIQUAC `r`/`q` and Peng–Robinson `kij` as shipped in the MIT-licensed
//! `chemicals` 1.5.2 and `thermo` 0.6.1 packages; critical constants from the sources each row
//! names). A copy of both files is compiled into the crate ([`ThermoData::bundled`]); any
//! other copy can be read with [`ThermoData::from_dir`] or [`ThermoData::from_readers`].

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// One row of `components.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct Component {
    /// English name, as in the file.
    pub name: String,
    /// CAS registry number.
    pub cas: String,
    /// Critical temperature, K.
    pub tc: f64,
    /// Critical pressure, Pa.
    pub pc: f64,
    /// Acentric factor, dimensionless.
    pub omega: f64,
    /// UNIQUAC volume parameter `r`, dimensionless.
    pub r: f64,
    /// UNIQUAC surface-area parameter `q`, dimensionless.
    pub q: f64,
}

/// The pure-component table and the binary Peng–Robinson interaction parameters.
#[derive(Clone, Debug)]
pub struct ThermoData {
    components: Vec<Component>,
    kij: HashMap<(usize, usize), f64>,
}

/// What went wrong reading the thermodynamic tables.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    /// A file could not be opened.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The CSV reader refused a record (malformed quoting, a short row, bad UTF-8…).
    #[error("{table}: {source}")]
    Csv {
        /// `"components"` or `"kij"`.
        table: &'static str,
        /// The cause.
        source: csv::Error,
    },
    /// A required column is missing from the header.
    #[error("{table}: no column named {column:?}")]
    MissingColumn {
        /// `"components"` or `"kij"`.
        table: &'static str,
        /// The column.
        column: &'static str,
    },
    /// A numeric field did not parse as a finite number.
    #[error("{table}, record {record}: {column} = {text:?} is not a finite number")]
    BadNumber {
        /// `"components"` or `"kij"`.
        table: &'static str,
        /// The 1-based record number (header excluded).
        record: usize,
        /// The column.
        column: &'static str,
        /// The text found.
        text: String,
    },
    /// A `kij` row names a CAS number that `components.csv` does not have.
    #[error("kij, record {record}: unknown CAS number {cas:?}")]
    UnknownCas {
        /// The 1-based record number.
        record: usize,
        /// The CAS number.
        cas: String,
    },
}

const COMPONENTS_CSV: &str = include_str!("../../../../data/thermo/components.csv");
const KIJ_CSV: &str = include_str!("../../../../data/thermo/kij.csv");

impl ThermoData {
    /// The tables as compiled into the crate from the repository's `data/thermo/`.
    ///
    /// # Errors
    /// None in practice (the copy is checked by the tests); the `Result` is that of the
    /// reader it shares with [`ThermoData::from_readers`].
    pub fn bundled() -> Result<Self, DataError> {
        Self::from_readers(COMPONENTS_CSV.as_bytes(), KIJ_CSV.as_bytes())
    }

    /// Reads `components.csv` and `kij.csv` from `dir`.
    ///
    /// # Errors
    /// [`DataError`] for an unreadable file or a malformed table.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, DataError> {
        let open = |name: &str| {
            let path = dir.as_ref().join(name);
            std::fs::File::open(&path).map_err(|source| DataError::Open { path, source })
        };
        Self::from_readers(open("components.csv")?, open("kij.csv")?)
    }

    /// Reads the two tables from any readers (CSV with a header row).
    ///
    /// # Errors
    /// [`DataError`] for a malformed table or a `kij` row naming an unknown component.
    pub fn from_readers(components: impl Read, kij: impl Read) -> Result<Self, DataError> {
        let components = read_components(components)?;
        let by_cas: HashMap<&str, usize> = components
            .iter()
            .enumerate()
            .map(|(i, c)| (c.cas.as_str(), i))
            .collect();
        let mut pairs = HashMap::new();
        let table = "kij";
        let mut rdr = csv::Reader::from_reader(kij);
        let header = rdr
            .headers()
            .map_err(|source| DataError::Csv { table, source })?
            .clone();
        let col = |column| column_index(&header, table, column);
        let (ci, cj, ck) = (col("CAS_i")?, col("CAS_j")?, col("kij")?);
        for (k, rec) in rdr.records().enumerate() {
            let rec = rec.map_err(|source| DataError::Csv { table, source })?;
            let record = k + 1;
            let index = |c: usize| {
                let cas = rec.get(c).unwrap_or_default();
                by_cas
                    .get(cas)
                    .copied()
                    .ok_or_else(|| DataError::UnknownCas {
                        record,
                        cas: cas.to_string(),
                    })
            };
            let (i, j) = (index(ci)?, index(cj)?);
            let v = number(&rec, ck, table, record, "kij")?;
            pairs.insert((i.min(j), i.max(j)), v);
        }
        Ok(Self {
            components,
            kij: pairs,
        })
    }

    /// The components, in file order.
    pub fn components(&self) -> &[Component] {
        &self.components
    }

    /// The symmetric binary parameter `kij` between components `i` and `j` (file order),
    /// `0` where the table has none and on the diagonal.
    pub fn kij(&self, i: usize, j: usize) -> f64 {
        self.kij.get(&(i.min(j), i.max(j))).copied().unwrap_or(0.0)
    }

    /// How many pairs the `kij` table holds.
    pub fn kij_pairs(&self) -> usize {
        self.kij.len()
    }

    /// The index of the component named `name`, if present.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.components.iter().position(|c| c.name == name)
    }
}

fn column_index(
    header: &csv::StringRecord,
    table: &'static str,
    column: &'static str,
) -> Result<usize, DataError> {
    header
        .iter()
        .position(|h| h == column)
        .ok_or(DataError::MissingColumn { table, column })
}

fn number(
    rec: &csv::StringRecord,
    col: usize,
    table: &'static str,
    record: usize,
    column: &'static str,
) -> Result<f64, DataError> {
    let text = rec.get(col).unwrap_or_default();
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(DataError::BadNumber {
            table,
            record,
            column,
            text: text.to_string(),
        }),
    }
}

fn read_components(src: impl Read) -> Result<Vec<Component>, DataError> {
    let table = "components";
    let mut rdr = csv::Reader::from_reader(src);
    let header = rdr
        .headers()
        .map_err(|source| DataError::Csv { table, source })?
        .clone();
    let col = |column| column_index(&header, table, column);
    let (name, cas) = (col("name")?, col("CAS")?);
    let (tc, pc, omega, r, q) = (
        col("Tc_K")?,
        col("Pc_Pa")?,
        col("omega")?,
        col("r")?,
        col("q")?,
    );
    let mut out = Vec::new();
    for (k, rec) in rdr.records().enumerate() {
        let rec = rec.map_err(|source| DataError::Csv { table, source })?;
        let record = k + 1;
        let num = |c, column| number(&rec, c, table, record, column);
        out.push(Component {
            name: rec.get(name).unwrap_or_default().to_string(),
            cas: rec.get(cas).unwrap_or_default().to_string(),
            tc: num(tc, "Tc_K")?,
            pc: num(pc, "Pc_Pa")?,
            omega: num(omega, "omega")?,
            r: num(r, "r")?,
            q: num(q, "q")?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_tables_read_as_documented() {
        let d = ThermoData::bundled().unwrap();
        assert_eq!(d.components().len(), 40);
        assert_eq!(d.kij_pairs(), 75);
        let methane = &d.components()[0];
        assert_eq!(methane.name, "methane");
        assert_eq!(methane.tc, 190.564);
        assert_eq!(methane.pc, 4_599_200.0);
        let ethanol = &d.components()[d.index_of("ethanol").unwrap()];
        assert_eq!((ethanol.r, ethanol.q), (2.11, 1.97));
        // Symmetric, zero where absent and on the diagonal.
        assert_eq!(d.kij(0, 1), -0.0059);
        assert_eq!(d.kij(1, 0), -0.0059);
        let water = d.index_of("water").unwrap();
        assert_eq!(d.kij(0, water), 0.0);
        assert_eq!(d.kij(3, 3), 0.0);
        // The outliers the README keeps.
        let (octane, n2) = (
            d.index_of("n-octane").unwrap(),
            d.index_of("nitrogen").unwrap(),
        );
        assert_eq!(d.kij(octane, n2), -0.4);
    }

    #[test]
    fn bundled_copy_matches_the_repository_files() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/thermo");
        let from_disk = ThermoData::from_dir(dir).unwrap();
        let bundled = ThermoData::bundled().unwrap();
        assert_eq!(from_disk.components(), bundled.components());
        assert_eq!(from_disk.kij, bundled.kij);
    }

    #[test]
    fn malformed_tables_are_errors_not_panics() {
        let comps = "name,CAS,Tc_K,Pc_Pa,omega,r,q\nx,1-1-1,100,2e6,0.1,1,1\n";
        let bad_num = "name,CAS,Tc_K,Pc_Pa,omega,r,q\nx,1-1-1,hot,2e6,0.1,1,1\n";
        let kij_ok = "CAS_i,CAS_j,kij\n1-1-1,1-1-1,0.5\n";
        let kij_unknown = "CAS_i,CAS_j,kij\n1-1-1,9-9-9,0.5\n";
        let no_col = "name,CAS,Tc_K\nx,1,1\n";
        assert!(ThermoData::from_readers(comps.as_bytes(), kij_ok.as_bytes()).is_ok());
        assert!(matches!(
            ThermoData::from_readers(bad_num.as_bytes(), kij_ok.as_bytes()),
            Err(DataError::BadNumber {
                record: 1,
                column: "Tc_K",
                ..
            })
        ));
        assert!(matches!(
            ThermoData::from_readers(comps.as_bytes(), kij_unknown.as_bytes()),
            Err(DataError::UnknownCas { record: 1, .. })
        ));
        assert!(matches!(
            ThermoData::from_readers(no_col.as_bytes(), kij_ok.as_bytes()),
            Err(DataError::MissingColumn {
                column: "Pc_Pa",
                ..
            })
        ));
        assert!(matches!(
            ThermoData::from_dir("/nonexistent/dir"),
            Err(DataError::Open { .. })
        ));
    }
}
