//! `ddx batch` with Apache Parquet files, run as a subprocess: CSV in and Parquet out,
//! Parquet in (several numeric types, several row groups) and CSV or Parquet out, each
//! against the library's batch call bit for bit, the pass-through columns' types and
//! text, every Parquet error path (the 10⁶-row file through bounded memory is
//! `parquet_memory.rs`, alone in its process).
#![cfg(feature = "parquet")]

mod common;
use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{
    Array, ArrayRef, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::DataType;
use common::*;
use ddx::rt;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use std::path::Path;
use std::sync::Arc;

/// Writes `columns` as a Parquet file, `rows_per_group` rows per row group.
fn write_parquet(path: &Path, columns: Vec<(&str, ArrayRef)>, rows_per_group: usize) {
    let batch = RecordBatch::try_from_iter(columns).expect("a batch");
    let props = WriterProperties::builder()
        .set_max_row_group_size(rows_per_group)
        .build();
    let file = std::fs::File::create(path).expect("created");
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("a writer");
    w.write(&batch).expect("written");
    w.close().expect("closed");
}

/// Reads a Parquet file whole: its column names, types and record batches concatenated.
fn read_parquet(path: &Path) -> (Vec<(String, DataType)>, RecordBatch) {
    let file = std::fs::File::open(path).expect("the output exists");
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("Parquet");
    let schema = builder.schema().clone();
    let batches: Vec<RecordBatch> = builder
        .build()
        .expect("a reader")
        .map(|b| b.expect("a batch"))
        .collect();
    let all = arrow_select_concat(&schema, &batches);
    let fields = schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect();
    (fields, all)
}

/// The batches' columns joined end to end (only the types the outputs hold).
fn arrow_select_concat(schema: &arrow_schema::SchemaRef, batches: &[RecordBatch]) -> RecordBatch {
    let columns: Vec<ArrayRef> = (0..schema.fields().len())
        .map(|k| -> ArrayRef {
            match schema.field(k).data_type() {
                DataType::Float64 => {
                    Arc::new(Float64Array::from_iter_values(batches.iter().flat_map(
                        |b| b.column(k).as_primitive::<Float64Type>().values().to_vec(),
                    )))
                }
                DataType::Int64 => {
                    Arc::new(Int64Array::from_iter_values(batches.iter().flat_map(|b| {
                        b.column(k).as_primitive::<Int64Type>().values().to_vec()
                    })))
                }
                DataType::Utf8 => {
                    let text: Vec<String> = batches
                        .iter()
                        .flat_map(|b| {
                            let s = b.column(k).as_string::<i32>();
                            (0..s.len())
                                .map(|r| s.value(r).to_string())
                                .collect::<Vec<_>>()
                        })
                        .collect();
                    Arc::new(StringArray::from_iter_values(text))
                }
                t => panic!("unexpected type {t}"),
            }
        })
        .collect();
    RecordBatch::try_new(schema.clone(), columns).expect("a batch")
}

/// Column `name` of `b` as `f64` bits.
fn bits(b: &RecordBatch, name: &str) -> Vec<u64> {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"))
        .as_primitive::<Float64Type>()
        .values()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

/// The library's batch Hessian of `expr` at `cols`: `f`, then each `df/d·`, then each
/// `d2f/d·d·` of the upper triangle, as the CLI names them, each as bits.
fn library_hessian(expr: &str, cols: &[Vec<f64>]) -> Vec<(String, Vec<u64>)> {
    let eq = rt::equation_text(expr).expect("parses");
    let rows = cols[0].len();
    let names = eq.symbols().to_vec();
    let n = names.len();
    let mut values = [vec![0.0; rows]];
    let mut partials = vec![vec![0.0; rows]; eq.jacobian_columns()];
    let mut hessians = vec![vec![0.0; rows]; eq.hessian_columns()];
    {
        let xs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
        let mut v: Vec<&mut [f64]> = values.iter_mut().map(Vec::as_mut_slice).collect();
        let mut p: Vec<&mut [f64]> = partials.iter_mut().map(Vec::as_mut_slice).collect();
        let mut h: Vec<&mut [f64]> = hessians.iter_mut().map(Vec::as_mut_slice).collect();
        eq.hessian_batch(&xs, &mut v, &mut p, &mut h).expect("runs");
    }
    let to_bits = |c: &[f64]| c.iter().map(|v| v.to_bits()).collect::<Vec<u64>>();
    let zero = vec![0.0; rows];
    let mut out = vec![("f".to_string(), to_bits(&values[0]))];
    for (j, name) in names.iter().enumerate() {
        let slot = eq.jacobian_pattern().at(0, j);
        out.push((
            format!("df/d{name}"),
            to_bits(slot.map_or(&zero, |s| &partials[s])),
        ));
    }
    for i in 0..n {
        for j in i..n {
            let c = eq.hessian_cell(i, j);
            out.push((
                format!("d2f/d{}d{}", names[i], names[j]),
                to_bits(c.map_or(&zero, |c| &hessians[c])),
            ));
        }
    }
    out
}

const EXPR: &str = "x*exp(-y) + sin(z)*y**2";

#[test]
fn csv_in_parquet_out_holds_the_librarys_bits() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = dir.path().join("in.csv");
    let mut text = String::from("label,x,y,z\n");
    let mut cols = vec![vec![]; 3];
    for r in 0..1000 {
        let p = [
            (r as f64 * 0.37).sin() * 3.0,
            r as f64 / 999.0,
            (r as f64).sqrt() - 7.0,
        ];
        text += &format!("\"row {r}, quoted\",{},{},{}\n", p[0], p[1], p[2]);
        for (c, v) in cols.iter_mut().zip(p) {
            c.push(v);
        }
    }
    std::fs::write(&input, text).expect("written");
    let out = dir.path().join("out.parquet");
    let r = run(&[
        "batch",
        EXPR,
        "-i",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--want",
        "hessian",
        "--pass-through",
        "--chunk",
        "300",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let (fields, batch) = read_parquet(&out);
    let want = library_hessian(EXPR, &cols);
    let mut names = vec![("label".to_string(), DataType::Utf8)];
    names.extend(want.iter().map(|(n, _)| (n.clone(), DataType::Float64)));
    assert_eq!(fields, names);
    assert_eq!(batch.num_rows(), 1000);
    let labels = batch.column(0).as_string::<i32>();
    assert_eq!(labels.value(0), "row 0, quoted");
    assert_eq!(labels.value(999), "row 999, quoted");
    for (name, w) in &want {
        assert_eq!(&bits(&batch, name), w, "{name}");
    }
    // `--output-format` overrides the extension; stdout may take Parquet too.
    let out2 = dir.path().join("out.bin");
    ok(&[
        "batch",
        EXPR,
        "-i",
        input.to_str().unwrap(),
        "-o",
        out2.to_str().unwrap(),
        "--output-format",
        "parquet",
    ]);
    let (fields, batch) = read_parquet(&out2);
    assert_eq!(fields, [("f".to_string(), DataType::Float64)]);
    assert_eq!(bits(&batch, "f"), want[0].1);
}

#[test]
fn parquet_in_of_several_types_and_row_groups() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = dir.path().join("in.parquet");
    let rows = 700usize;
    let x: Vec<f64> = (0..rows).map(|r| (r as f64 * 0.11).cos() * 2.5).collect();
    let y: Vec<i32> = (0..rows as i32).map(|r| r % 5 - 2).collect();
    let z: Vec<f32> = (0..rows).map(|r| r as f32 * 0.125 - 3.0).collect();
    write_parquet(
        &input,
        vec![
            (
                "id",
                Arc::new(Int64Array::from_iter_values(0..rows as i64)) as ArrayRef,
            ),
            ("z", Arc::new(Float32Array::from(z.clone()))),
            ("x", Arc::new(Float64Array::from(x.clone()))),
            (
                "name",
                Arc::new(StringArray::from_iter_values(
                    (0..rows).map(|r| format!("p{r}")),
                )),
            ),
            ("y", Arc::new(Int32Array::from(y.clone()))),
        ],
        128,
    );
    let cols = vec![
        x,
        y.iter().map(|&v| f64::from(v)).collect(),
        z.iter().map(|&v| f64::from(v)).collect(),
    ];
    let want = library_hessian(EXPR, &cols);
    let i = input.to_str().unwrap();

    // Parquet to Parquet: the pass-through columns keep their types.
    let out = dir.path().join("out.pq");
    ok(&[
        "batch",
        EXPR,
        "-i",
        i,
        "-o",
        out.to_str().unwrap(),
        "--want",
        "hessian",
        "--pass-through",
        "--chunk",
        "100",
    ]);
    let (fields, batch) = read_parquet(&out);
    assert_eq!(fields[0], ("id".to_string(), DataType::Int64));
    assert_eq!(fields[1], ("name".to_string(), DataType::Utf8));
    assert_eq!(fields.len(), 2 + want.len());
    let ids = batch.column(0).as_primitive::<Int64Type>();
    assert!((0..rows).all(|r| ids.value(r) == r as i64));
    assert_eq!(batch.column(1).as_string::<i32>().value(699), "p699");
    for (name, w) in &want {
        assert_eq!(&bits(&batch, name), w, "{name}");
    }

    // Parquet to CSV (stdout): the same bits in shortest round-trip text.
    let text = ok(&[
        "batch",
        EXPR,
        "-i",
        i,
        "--want",
        "jacobian",
        "--pass-through",
    ]);
    let mut r = csv::Reader::from_reader(text.as_bytes());
    assert_eq!(
        r.headers().expect("a header"),
        vec!["id", "name", "f", "df/dx", "df/dy", "df/dz"]
    );
    let records: Vec<csv::StringRecord> = r.records().map(|r| r.expect("a record")).collect();
    assert_eq!(records.len(), rows);
    for (row, rec) in records.iter().enumerate() {
        assert_eq!(&rec[0], row.to_string());
        assert_eq!(&rec[1], format!("p{row}"));
        for (k, (_, w)) in want[..4].iter().enumerate() {
            let got: f64 = rec[2 + k].parse().expect("a number");
            assert_eq!(got.to_bits(), w[row], "row {row} column {k}");
        }
    }
}

#[test]
fn parquet_errors_are_one_line() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let d = dir.path();
    let nulls = d.join("nulls.parquet");
    write_parquet(
        &nulls,
        vec![
            (
                "x",
                Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0, 4.0, 5.0])) as ArrayRef,
            ),
            (
                "y",
                Arc::new(Float64Array::from(vec![
                    Some(1.0),
                    Some(2.0),
                    Some(3.0),
                    Some(4.0),
                    None,
                ])),
            ),
            (
                "s",
                Arc::new(StringArray::from(vec!["a", "b", "c", "d", "e"])),
            ),
        ],
        2,
    );
    let good = d.join("good.parquet");
    write_parquet(
        &good,
        vec![(
            "x",
            Arc::new(Float64Array::from(vec![1.0, 2.0])) as ArrayRef,
        )],
        2,
    );
    std::fs::write(d.join("text.parquet"), "x,y\n1,2\n").expect("written");
    let bytes = std::fs::read(&good).expect("read");
    std::fs::write(d.join("cut.parquet"), &bytes[..bytes.len() / 2]).expect("written");
    let f = |args: &[&str], needles: &[&str]| fails_in(d, args, 1, 0, needles);
    f(
        &[
            "batch",
            "x*y",
            "-i",
            "nulls.parquet",
            "--chunk",
            "2",
            "-o",
            "o.csv",
        ],
        &["nulls.parquet: row 5, column 2 `y`: a null is not a number"],
    );
    f(
        &["batch", "x*s", "-i", "nulls.parquet"],
        &["nulls.parquet: column 3 `s` holds Utf8, not numbers"],
    );
    f(
        &["batch", "x*z", "-i", "nulls.parquet"],
        &["no column `z`", "x, y, s"],
    );
    f(
        &["batch", "x", "-i", "text.parquet"],
        &["text.parquet: not a readable Parquet file"],
    );
    f(
        &["batch", "x", "-i", "cut.parquet"],
        &["cut.parquet: not a readable Parquet file"],
    );
    f(&["batch", "x", "-i", "nosuch.parquet"], &["nosuch.parquet"]);
    f(
        &["batch", "x", "-i", "-", "--input-format", "parquet"],
        &["Parquet input must be a file"],
    );
    f(
        &[
            "batch",
            "x",
            "-i",
            "good.parquet",
            "-o",
            "no/such/dir/o.parquet",
        ],
        &["no/such/dir/o.parquet"],
    );
    // A CSV file read as Parquet by flag, and a Parquet file read as CSV.
    std::fs::write(d.join("plain.csv"), "x\n1\n").expect("written");
    f(
        &["batch", "x", "-i", "plain.csv", "--input-format", "parquet"],
        &["plain.csv: not a readable Parquet file"],
    );
    f(
        &["batch", "x", "-i", "good.parquet", "--input-format", "csv"],
        &["good.parquet"],
    );
}

/// A damaged Parquet file is an error, never a crash: the `parquet` and `arrow` crates
/// panic on some damage (tester 37 found nine places, from a flipped bit in the footer's
/// schema to a negative column length), which `ddx batch` answers as an error. Every
/// byte of a small file ddx wrote has one bit flipped in turn.
#[test]
fn damaged_parquet_files_are_errors_not_crashes() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let d = dir.path();
    std::fs::write(d.join("s.csv"), "x,y\n1,2\n3,4\n").expect("written");
    let r = run_in(d, &["batch", "x+y", "-i", "s.csv", "-o", "s.parquet"]);
    assert_eq!(r.code, 0, "{r:?}");
    let good = std::fs::read(d.join("s.parquet")).expect("read");
    let mut refused = 0;
    for (k, _) in good.iter().enumerate() {
        let mut bad = good.clone();
        bad[k] ^= 1 << (k % 8);
        std::fs::write(d.join("bad.parquet"), &bad).expect("written");
        let r = run_in(d, &["batch", "f", "-i", "bad.parquet"]);
        assert!(r.code == 0 || r.code == 1, "byte {k}: {r:?}");
        assert!(!r.stderr.contains("panicked"), "byte {k}: {r:?}");
        if r.code == 1 {
            assert!(r.stderr.starts_with("ddx: "), "byte {k}: {r:?}");
            refused += 1;
        }
    }
    assert!(
        refused > good.len() / 4,
        "{refused} of {} refused",
        good.len()
    );
}
