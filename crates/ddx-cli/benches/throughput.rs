//! `ddx batch` throughput on a 10⁷-row CSV against reading the same file with the `csv`
//! crate and doing nothing, so the parse cost is visible (issue 18's benchmark).
//!
//! Run: `cargo bench -p ddx-cli --bench throughput` (rows with `DDX_BENCH_ROWS`, the
//! file's folder with `DDX_BENCH_DIR`; the file is written once and kept). Arms, timed
//! in the same run and interleaved round by round (three rounds, the median taken):
//! - `csv read`: `csv::Reader::read_byte_record` over every row, one thread, nothing else;
//! - `csv read + f64 parse`: the same, each symbol cell parsed to `f64` (what `batch`
//!   does per cell, there on all cores);
//! - `library jacobian_batch`: the derivative work alone, the columns already in memory
//!   (all cores, chunks of 16384 rows as `batch` calls it);
//! - `ddx batch --want value|jacobian|hessian`: the binary end to end, output to
//!   `/dev/null` (formatting counted, the disk write not).
//!
//! Each is printed as rows per second and as a ratio to `csv read`.

use std::hint::black_box;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const EXPR: &str = "x*exp(-y) + sin(z)*y**2";
const CHUNK: usize = 16_384;

/// Row `r`'s point: deterministic, spread over a few decades, about 19 digits a cell.
fn point(r: u64) -> [f64; 3] {
    let t = r as f64;
    [
        (t * 1e-3).sin() * 2.0,
        (t * 7e-4).cos().abs(),
        t * 1e-6 + 0.1,
    ]
}

/// Writes the input once (kept between runs when its size matches).
fn input(dir: &Path, rows: u64) -> PathBuf {
    let path = dir.join(format!("ddx-throughput-{rows}.csv"));
    if path.exists() {
        return path;
    }
    let tmp = path.with_extension("part");
    let mut f = BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp).expect("created"));
    let mut buf = ryu::Buffer::new();
    f.write_all(b"x,y,z\n").expect("written");
    for r in 0..rows {
        let p = point(r);
        for (k, v) in p.into_iter().enumerate() {
            f.write_all(buf.format(v).as_bytes()).expect("written");
            f.write_all(if k == 2 { b"\n" } else { b"," })
                .expect("written");
        }
    }
    f.flush().expect("written");
    drop(f);
    std::fs::rename(&tmp, &path).expect("renamed");
    path
}

fn csv_read(path: &Path) -> u64 {
    let mut r = csv::Reader::from_path(path).expect("opens");
    let mut rec = csv::ByteRecord::new();
    let mut rows = 0;
    while r.read_byte_record(&mut rec).expect("a record") {
        rows += 1;
    }
    black_box(&rec);
    rows
}

fn csv_parse(path: &Path) -> u64 {
    let mut r = csv::Reader::from_path(path).expect("opens");
    let mut rec = csv::ByteRecord::new();
    let mut rows = 0;
    let mut sum = 0.0;
    while r.read_byte_record(&mut rec).expect("a record") {
        for f in rec.iter() {
            let v: f64 = std::str::from_utf8(f)
                .expect("utf-8")
                .trim()
                .parse()
                .expect("a number");
            sum += v;
        }
        rows += 1;
    }
    black_box(sum);
    rows
}

fn ddx_batch(path: &Path, want: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_ddx"))
        .args(["batch", EXPR, "--want", want, "-o", "/dev/null", "-i"])
        .arg(path)
        .output()
        .expect("ddx runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn main() {
    let rows: u64 = std::env::var("DDX_BENCH_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let dir = std::env::var_os("DDX_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let path = input(&dir, rows);
    let bytes = std::fs::metadata(&path).expect("exists").len();
    assert_eq!(csv_read(&path), rows);

    // The derivative work alone: the same columns, in memory, one call per chunk.
    let eq = ddx::rt::equation_text(EXPR).expect("parses");
    let cols: Vec<Vec<f64>> = (0..3)
        .map(|k| (0..rows).map(|r| point(r)[k]).collect())
        .collect();
    let mut results = vec![vec![0.0; CHUNK]; 1 + eq.jacobian_columns()];
    let mut library = || {
        for start in (0..rows as usize).step_by(CHUNK) {
            let end = (start + CHUNK).min(rows as usize);
            let xs: Vec<&[f64]> = cols.iter().map(|c| &c[start..end]).collect();
            let mut outs: Vec<&mut [f64]> =
                results.iter_mut().map(|v| &mut v[..end - start]).collect();
            let (values, partials) = outs.split_at_mut(1);
            eq.jacobian_batch(&xs, values, partials).expect("runs");
        }
        black_box(&results);
    };

    let names = [
        "csv read (nothing else)",
        "csv read + f64 parse",
        "library jacobian_batch, columns in memory",
        "ddx batch --want value",
        "ddx batch --want jacobian",
        "ddx batch --want hessian",
    ];
    let mut seconds: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for _round in 0..3 {
        for (arm, s) in seconds.iter_mut().enumerate() {
            let t = Instant::now();
            match arm {
                0 => {
                    black_box(csv_read(&path));
                }
                1 => {
                    black_box(csv_parse(&path));
                }
                2 => library(),
                3 => ddx_batch(&path, "value"),
                4 => ddx_batch(&path, "jacobian"),
                _ => ddx_batch(&path, "hessian"),
            }
            s.push(t.elapsed().as_secs_f64());
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let med: Vec<f64> = seconds.iter_mut().map(median).collect();
    println!(
        "{rows} rows, {:.0} MB, `{EXPR}`, {} threads",
        bytes as f64 / 1e6,
        rayon::current_num_threads()
    );
    println!("| arm | seconds | rows/s | ÷ csv read |");
    println!("|---|---|---|---|");
    for (name, s) in names.iter().zip(&med) {
        println!(
            "| {name} | {s:.2} | {:.2e} | {:.2}x |",
            rows as f64 / s,
            s / med[0]
        );
    }
}
