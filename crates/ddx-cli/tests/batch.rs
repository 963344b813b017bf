//! `ddx batch` run as a subprocess: small files against closed forms and the library's
//! batch calls, every error path, and a 10⁶-row file through bounded memory with the
//! library's bits.

mod common;
use common::*;
use ddx::rt;
use std::fmt::Write as _;
use std::path::Path;

/// Reads a CSV answer: its header and its rows of cells.
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).expect("the output exists");
    let header = r
        .headers()
        .expect("a header")
        .iter()
        .map(String::from)
        .collect();
    let rows = r
        .records()
        .map(|rec| rec.expect("a record").iter().map(String::from).collect())
        .collect();
    (header, rows)
}

#[test]
fn small_files_match_closed_forms() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "x,label,y\n1,a,0.5\n2,\"b,c\",-1\n-3,d,2\n").expect("written");
    let out = dir.path().join("out.csv");
    let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
    let points = [(1.0f64, 0.5f64), (2.0, -1.0), (-3.0, 2.0)];

    // Values only; extra columns ignored.
    assert_eq!(ok(&["batch", "x*exp(-y)", "-i", i, "-o", o]), "");
    let (h, rows) = read_csv(&out);
    assert_eq!(h, ["f"]);
    for (row, &(x, y)) in rows.iter().zip(&points) {
        assert_eq!(row[0].parse::<f64>().unwrap(), x * (-y).exp());
    }

    // The Hessian, with the extra column passed through.
    ok(&[
        "batch",
        "x*exp(-y)",
        "-i",
        i,
        "-o",
        o,
        "--want",
        "hessian",
        "--pass-through",
    ]);
    let (h, rows) = read_csv(&out);
    assert_eq!(
        h,
        ["label", "f", "df/dx", "df/dy", "d2f/dxdx", "d2f/dxdy", "d2f/dydy"]
    );
    assert_eq!(rows.len(), 3);
    for (row, &(x, y)) in rows.iter().zip(&points) {
        let e = (-y).exp();
        let want = [x * e, e, -x * e, 0.0, -e, x * e];
        let got: Vec<f64> = row[1..].iter().map(|c| c.parse().unwrap()).collect();
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() <= 1e-15 * w.abs().max(1.0), "{row:?}");
        }
    }
    assert_eq!(rows[1][0], "b,c");

    // Stdout when no output is named; stdin with `-`.
    let text = ok(&["batch", "x + y", "-i", i, "--want", "jacobian"]);
    assert_eq!(
        text,
        "f,df/dx,df/dy\n1.5,1.0,1.0\n1.0,1.0,1.0\n-1.0,1.0,1.0\n"
    );
    let mut child = ddx()
        .args(["batch", "2*x", "-i", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("a pipe");
        stdin.write_all(b"x\n1.5\nnan\n-inf\n").expect("written");
    }
    let r: Run = child.wait_with_output().expect("finishes").into();
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout, "f\n3.0\nNaN\n-inf\n");
}

#[test]
fn error_paths_name_file_row_and_column() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let d = dir.path();
    let w = |name: &str, text: &str| std::fs::write(d.join(name), text).expect("written");
    w("ok.csv", "x,y\n1,2\n");
    w("short.csv", "x,y\n1,2\n3\n");
    w("cell.csv", "x,y\n1,2\n3,4\n5,abc\n6,\n");
    w("empty_cell.csv", "x,y\n1,\n");
    w("dup.csv", "x,y,x\n1,2,3\n");
    w("empty.csv", "");
    let o = d.join("out.csv");
    let o = o.to_str().unwrap();
    let f = |args: &[&str], needles: &[&str]| fails_in(d, args, 1, 0, needles);
    f(
        &["batch", "x*y*z", "-i", "ok.csv", "-o", o],
        &["ok.csv", "no column `z`", "x, y"],
    );
    f(
        &["batch", "x*y", "-i", "nosuch.csv", "-o", o],
        &["nosuch.csv"],
    );
    f(
        &["batch", "x*y", "-i", "short.csv", "-o", o],
        &["short.csv: row 2 (line 3)", "1 field, but the header has 2"],
    );
    f(
        &["batch", "x*y", "-i", "cell.csv", "-o", o, "--chunk", "2"],
        &["cell.csv: row 3 (line 4), column 2 `y`: `abc` is not a number"],
    );
    f(
        &["batch", "x*y", "-i", "empty_cell.csv", "-o", o],
        &["row 1 (line 2), column 2 `y`: `` is not a number"],
    );
    f(
        &["batch", "x*y", "-i", "dup.csv", "-o", o],
        &["two columns are named `x`"],
    );
    // A cell's control characters are escaped, and a long cell is cut short.
    w("nul.csv", "x,y\n1,2\u{0}3\u{1b}[31m\n");
    f(
        &["batch", "x*y", "-i", "nul.csv", "-o", o],
        &["column 2 `y`: `2\\u{0}3\\u{1b}[31m` is not a number"],
    );
    w("long.csv", &format!("x,y\n1,{}\n", "q".repeat(1 << 20)));
    f(
        &["batch", "x*y", "-i", "long.csv", "-o", o],
        &["`qqqqqqqqqq", "… (1048576 bytes in all)` is not a number"],
    );
    f(
        &["batch", "x*y", "-i", "empty.csv", "-o", o],
        &["empty.csv", "no column `x`"],
    );
    f(
        &["batch", "x*y", "-i", "ok.csv", "-o", "no/such/dir/out.csv"],
        &["no/such/dir/out.csv"],
    );
    fails_in(d, &["batch", "x*", "-i", "ok.csv"], 1, 3, &["bad_syntax"]);
    let r = run_in(d, &["batch", "x", "-i", "ok.csv", "--chunk", "0"]);
    assert_eq!(r.code, 2, "{r:?}");
}

/// Deterministic points `(x, y, z)` in `[-2, 2) × [0, 1) × [0, 10)` from a 64-bit LCG.
struct Points(u64);

impl Points {
    fn new() -> Self {
        Points(0x2545_f491_4f6c_dd1d)
    }
    fn next_unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
    fn next_point(&mut self) -> [f64; 3] {
        [
            4.0 * self.next_unit() - 2.0,
            self.next_unit(),
            10.0 * self.next_unit(),
        ]
    }
}

/// Peak resident memory (bytes) of a finished child, from `wait4`.
#[cfg(target_os = "linux")]
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

#[cfg(target_os = "linux")]
#[test]
fn a_million_rows_in_bounded_memory_with_library_bits() {
    const ROWS: usize = 1_000_000;
    let dir = tempfile::tempdir().expect("a temp dir");
    let input = dir.path().join("big.csv");
    let output = dir.path().join("out.csv");
    // Written streaming, and regenerated for the comparison: the test process must stay
    // small when it spawns the child, whose peak RSS starts from the parent's on Linux.
    let input_bytes = {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&input).expect("created"));
        let mut buf = ryu::Buffer::new();
        f.write_all(b"x,y,z\n").expect("written");
        let mut points = Points::new();
        for _ in 0..ROWS {
            let p = points.next_point();
            for (k, v) in p.into_iter().enumerate() {
                f.write_all(buf.format(v).as_bytes()).expect("written");
                f.write_all(if k == 2 { b"\n" } else { b"," })
                    .expect("written");
            }
        }
        f.flush().expect("written");
        std::fs::metadata(&input).expect("exists").len()
    };

    let expr = "x*exp(-y) + sin(z)*y**2";
    let child = ddx()
        .args(["batch", expr, "--want", "jacobian", "-i"])
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .spawn()
        .expect("runs");
    let (code, peak) = wait_peak_rss(child);
    assert_eq!(code, 0);
    // Memory is bounded by the chunk, not the file (inputs 57 MB, outputs ~80 MB).
    eprintln!(
        "peak RSS {:.1} MiB for {:.1} MB of input",
        peak as f64 / 1048576.0,
        input_bytes as f64 / 1e6
    );
    assert!(peak < 32 << 20, "peak RSS {peak} bytes");
    assert!(
        peak < input_bytes / 2,
        "peak RSS {peak} bytes, input {input_bytes}"
    );

    // The same bits as the library's batch call on the same columns.
    let mut cols = [vec![], vec![], vec![]];
    let mut points = Points::new();
    for _ in 0..ROWS {
        for (c, v) in cols.iter_mut().zip(points.next_point()) {
            c.push(v);
        }
    }
    let eq = rt::equation_text(expr).expect("parses");
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
    let mut r = csv::Reader::from_path(&output).expect("the output exists");
    assert_eq!(
        r.headers().expect("a header"),
        vec!["f", "df/dx", "df/dy", "df/dz"]
    );
    let mut rec = csv::ByteRecord::new();
    let mut row = 0;
    let mut first_bad = String::new();
    while r.read_byte_record(&mut rec).expect("a record") {
        for k in 0..4 {
            let got: f64 = std::str::from_utf8(&rec[k]).unwrap().parse().unwrap();
            if got.to_bits() != want[k][row].to_bits() && first_bad.is_empty() {
                let _ = write!(first_bad, "row {row} column {k}: {got} vs {}", want[k][row]);
            }
        }
        row += 1;
    }
    assert_eq!(row, ROWS);
    assert!(first_bad.is_empty(), "{first_bad}");
}

#[test]
fn the_output_may_not_be_the_input() {
    // Writing the input file would truncate it before it is read: refused, the file
    // left as it was, under any spelling of its path (and through a hard link).
    let dir = tempfile::tempdir().expect("a temp dir");
    let d = dir.path();
    let text = "x,y\n1,2\n3,4\n";
    std::fs::write(d.join("in.csv"), text).expect("written");
    std::fs::create_dir(d.join("sub")).expect("a subdirectory");
    std::fs::hard_link(d.join("in.csv"), d.join("link.csv")).expect("a hard link");
    for out in ["in.csv", "./in.csv", "sub/../in.csv", "link.csv"] {
        fails_in(
            d,
            &["batch", "x*y", "-i", "in.csv", "-o", out],
            1,
            0,
            &["--output", "is the input file"],
        );
        assert_eq!(std::fs::read_to_string(d.join("in.csv")).unwrap(), text);
    }
    // Another file is written as before.
    let r = run_in(d, &["batch", "x*y", "-i", "in.csv", "-o", "out.csv"]);
    assert_eq!(r.code, 0, "{r:?}");
    let (header, rows) = read_csv(&d.join("out.csv"));
    assert_eq!(header, ["f"]);
    let f: Vec<f64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
    assert_eq!(f, [2.0, 12.0]);
}

/// `--chunk` sizes the buffers by the rows a chunk holds, not by the flag: the largest
/// chunk on a one-row file answers at once (it used to allocate 32 GiB and abort); a
/// device such as `/dev/zero`, which never ends, is refused instead of read forever.
#[test]
fn a_wide_headers_missing_column_is_named_briefly() {
    // 200 000 columns, `y` not among them: the message names the first few and counts the
    // rest (it printed every name: 9 MB for 10⁶ columns, tester 37). The columns are
    // matched through a hash, so wide headers with many symbols stay linear.
    let dir = tempfile::tempdir().expect("a temp dir");
    let d = dir.path();
    let names: Vec<String> = (0..200_000).map(|k| format!("c{k}")).collect();
    let row = vec!["1"; names.len()].join(",");
    std::fs::write(d.join("wide.csv"), format!("{}\n{row}\n", names.join(","))).expect("written");
    let r = run_in(d, &["batch", "c0+c199999+y", "-i", "wide.csv"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stderr.len() < 400,
        "{} bytes: {}",
        r.stderr.len(),
        r.stderr
    );
    for needle in ["no column `y`", "c0, c1, c2", "… and 199988 more"] {
        assert!(r.stderr.contains(needle), "`{needle}` not in {}", r.stderr);
    }
    // Names listed as cells are shown: escaped, and cut (tester 38).
    let long = "n".repeat(1 << 20);
    std::fs::write(
        d.join("odd.csv"),
        format!("\u{1b}[31mRED,a\u{0}b,{long},x\n1,2,3,4\n"),
    )
    .expect("written");
    let r = run_in(d, &["batch", "x+y", "-i", "odd.csv"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stderr.len() < 400, "{} bytes", r.stderr.len());
    assert!(
        !r.stderr.contains('\u{1b}') && !r.stderr.contains('\u{0}'),
        "{:?}",
        r.stderr
    );
    for needle in [
        "\\u{1b}[31mRED, a\\u{0}b, nnnn",
        "(1048576 bytes in all), x)",
    ] {
        assert!(
            r.stderr.contains(needle),
            "`{needle}` not in {:?}",
            r.stderr
        );
    }
    // 10 000 symbols (an argument stays under Linux's 128 KiB), the other 190 000
    // columns passed through.
    let sum = names[..10_000].join("+");
    let r = run_in(d, &["batch", &sum, "-i", "wide.csv", "--pass-through"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut lines = r.stdout.lines();
    let (head, row) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    assert!(head.starts_with("c10000,c10001,") && head.ends_with(",c199999,f"));
    assert_eq!(head.split(',').count(), 190_001);
    assert!(
        row.starts_with("1,1,") && row.ends_with(",1,10000.0"),
        "{}",
        &row[..40]
    );
}

#[test]
fn a_huge_chunk_and_a_device_input_are_answered() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let d = dir.path();
    std::fs::write(d.join("ok.csv"), "x,y\n1,2\n").expect("written");
    let r = run_in(
        d,
        &["batch", "x+y", "-i", "ok.csv", "--chunk", "4294967295"],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.stdout.trim(), "f\n3.0", "{r:?}");
    if Path::new("/dev/zero").exists() {
        fails_in(
            d,
            &["batch", "x", "-i", "/dev/zero"],
            1,
            0,
            &["/dev/zero", "a device"],
        );
    }
}
