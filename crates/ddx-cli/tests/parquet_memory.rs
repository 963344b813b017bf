//! `ddx batch` on a 10⁶-row Parquet file, run as a subprocess in a test binary of its
//! own (the child's peak RSS starts from this process's, so nothing else may run here):
//! memory bounded by a chunk and a row group, and the library's bits.
#![cfg(all(feature = "parquet", target_os = "linux"))]

mod common;
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{ArrayRef, Float64Array, RecordBatch};
use arrow_schema::DataType;
use common::*;
use ddx::rt;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use std::sync::Arc;

const EXPR: &str = "x*exp(-y) + sin(z)*y**2";

/// Peak resident memory (bytes) of a finished child, from `wait4`.
fn wait_peak_rss(child: std::process::Child) -> (i32, u64) {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `rusage` is plain data that wait4 fills; `pid` is our own unreaped child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4 failed");
    assert!(libc::WIFEXITED(status), "the child did not exit normally");
    (libc::WEXITSTATUS(status), usage.ru_maxrss as u64 * 1024)
}

#[test]
fn a_million_parquet_rows_in_bounded_memory() {
    const ROWS: usize = 1_000_000;
    const GROUP: usize = 1 << 16;
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = dir.path().join("big.parquet");
    let output = dir.path().join("out.parquet");
    let point = |r: usize| {
        let t = r as f64;
        [(t * 1e-3).sin() * 2.0, (t * 7e-4).cos().abs(), t * 1e-5]
    };
    // Written one row group at a time, so the test process stays small when it spawns
    // the child (whose peak RSS starts from the parent's on Linux).
    {
        let file = std::fs::File::create(&input).expect("created");
        let schema = Arc::new(arrow_schema::Schema::new(
            ["x", "y", "z"]
                .map(|n| arrow_schema::Field::new(n, DataType::Float64, false))
                .to_vec(),
        ));
        let props = WriterProperties::builder()
            .set_max_row_group_size(GROUP)
            .build();
        let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props)).expect("a writer");
        for start in (0..ROWS).step_by(GROUP) {
            let rows = start..(start + GROUP).min(ROWS);
            let cols: Vec<ArrayRef> = (0..3)
                .map(|k| -> ArrayRef {
                    Arc::new(Float64Array::from_iter_values(
                        rows.clone().map(|r| point(r)[k]),
                    ))
                })
                .collect();
            w.write(&RecordBatch::try_new(schema.clone(), cols).expect("a batch"))
                .expect("written");
        }
        w.close().expect("closed");
    }
    let child = ddx()
        .args(["batch", EXPR, "--want", "jacobian", "-i"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .spawn()
        .expect("runs");
    let (code, peak) = wait_peak_rss(child);
    assert_eq!(code, 0);
    // 24 MB of inputs and 32 MB of outputs as f64: memory is bounded by a chunk and a
    // row group, not the file (a CSV batch of the same rows peaks near 25 MiB).
    eprintln!("peak RSS {:.1} MiB", peak as f64 / 1048576.0);
    assert!(peak < 40 << 20, "peak RSS {peak} bytes");
    assert!(
        peak < (ROWS as u64 * 8 * 7) * 3 / 4,
        "peak RSS {peak} bytes"
    );

    let mut cols: Vec<Vec<f64>> = (0..3).map(|_| Vec::with_capacity(ROWS)).collect();
    for r in 0..ROWS {
        for (c, v) in cols.iter_mut().zip(point(r)) {
            c.push(v);
        }
    }
    let eq = rt::equation_text(EXPR).expect("parses");
    let mut want = vec![vec![0.0; ROWS]; 4];
    {
        let xs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
        let (values, partials) = want.split_at_mut(1);
        let mut values: Vec<&mut [f64]> = values.iter_mut().map(Vec::as_mut_slice).collect();
        let mut partials: Vec<&mut [f64]> = partials.iter_mut().map(Vec::as_mut_slice).collect();
        assert_eq!(eq.jacobian_columns(), 3);
        eq.jacobian_batch(&xs, &mut values, &mut partials)
            .expect("runs");
    }
    let file = std::fs::File::open(&output).expect("the output exists");
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).expect("Parquet");
    let names: Vec<String> = builder
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["f", "df/dx", "df/dy", "df/dz"]);
    let mut row = 0;
    for batch in builder.build().expect("a reader") {
        let batch = batch.expect("a batch");
        for (k, w) in want.iter().enumerate() {
            let got = batch.column(k).as_primitive::<Float64Type>().values();
            let bad = (0..got.len()).find(|&r| got[r].to_bits() != w[row + r].to_bits());
            assert!(bad.is_none(), "{} row {:?}", names[k], bad.map(|r| row + r));
        }
        row += batch.num_rows();
    }
    assert_eq!(row, ROWS);
}
