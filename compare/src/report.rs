//! Rendering the results as Markdown, and replacing a marked section of `BENCHMARKS.md`.

use crate::stats::Cell;
use std::fmt::Write as _;

/// One row of a family's table: a model size and a cell per arm.
#[derive(Clone, Debug)]
pub struct Row {
    /// The input count `n`.
    pub n: usize,
    /// `(arm, cell)`; `None` where the arm was skipped or failed.
    pub cells: Vec<(String, Option<Cell>)>,
    /// Median time of one native `f64` evaluation, ns.
    pub native_ns: f64,
    /// The most Rust heap ddx's equations for the row took, in bytes (see `main.rs`).
    pub heap: Option<usize>,
}

/// A family's table.
#[derive(Clone, Debug)]
pub struct Table {
    /// The heading, e.g. "UNIQUAC".
    pub title: String,
    /// A note printed under the heading, if any.
    pub note: Option<String>,
    /// Its rows.
    pub rows: Vec<Row>,
}

fn fmt_cell(c: &Cell, best: bool) -> String {
    let ratio = if c.ratio >= 100.0 {
        format!("{:.0}x", c.ratio)
    } else {
        format!("{:.2}x", c.ratio)
    };
    let ratio = if best { format!("**{ratio}**") } else { ratio };
    format!("{ratio} ±{:.0}%", 100.0 * c.spread)
}

/// `bytes` in KiB below 1 MiB, else in MiB with one decimal.
fn fmt_bytes(bytes: usize) -> String {
    if bytes < 1 << 20 {
        format!("{:.0} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    }
}

/// The Markdown of one table; the lowest ratio of each row is bold.
pub fn render_table(t: &Table) -> String {
    let mut arms: Vec<String> = Vec::new();
    for row in &t.rows {
        for (a, _) in &row.cells {
            if !arms.contains(a) {
                arms.push(a.clone());
            }
        }
    }
    let mut s = String::new();
    let _ = writeln!(s, "**{}**", t.title);
    if let Some(note) = &t.note {
        let _ = writeln!(s, "\n{note}");
    }
    let _ = writeln!(s);
    let heap = t.rows.iter().any(|r| r.heap.is_some());
    let (heap_head, heap_rule) = if heap {
        (" ddx heap |", "---|")
    } else {
        ("", "")
    };
    let _ = writeln!(
        s,
        "| n | {} | one evaluation, ns |{heap_head}",
        arms.join(" | ")
    );
    let _ = writeln!(s, "|---|{}---|{heap_rule}", "---|".repeat(arms.len()));
    for row in &t.rows {
        let best = row
            .cells
            .iter()
            .filter_map(|(_, c)| c.map(|c| c.ratio))
            .fold(f64::INFINITY, f64::min);
        let cells: Vec<String> = arms
            .iter()
            .map(|a| {
                match row
                    .cells
                    .iter()
                    .find(|(name, _)| name == a)
                    .and_then(|(_, c)| *c)
                {
                    Some(c) => fmt_cell(&c, c.ratio == best),
                    None => "—".to_string(),
                }
            })
            .collect();
        let heap = match (heap, row.heap) {
            (false, _) => String::new(),
            (true, None) => " — |".to_string(),
            (true, Some(b)) => format!(" {} |", fmt_bytes(b)),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} |{heap}",
            row.n,
            cells.join(" | "),
            row.native_ns
        );
    }
    s
}

/// `document` with the text between `begin` and `end` (markers kept) replaced by `body`;
/// where the markers are absent (or out of order) the section is appended at the end.
pub fn replace_section(document: &str, begin: &str, end: &str, body: &str) -> String {
    let section = format!("{begin}\n{}\n{end}", body.trim_end());
    if let Some(b) = document.find(begin) {
        if let Some(e) = document[b..].find(end) {
            let e = b + e + end.len();
            return format!("{}{section}{}", &document[..b], &document[e..]);
        }
    }
    let mut out = document.trim_end().to_string();
    if !out.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(&section);
    out.push('\n');
    out
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    // Civil-from-days (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms").
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The CPU's model name from `/proc/cpuinfo`, and the logical CPU count.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|v| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    format!("{cpu}, {cores} logical CPUs")
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: &str = "<!-- compare:begin -->";
    const E: &str = "<!-- compare:end -->";

    #[test]
    fn sections_are_replaced_and_others_survive() {
        let doc = format!("# Benchmarks\n\nintro\n\n{B}\nold\n{E}\n\n## Other\nkept\n");
        let out = replace_section(&doc, B, E, "new table\n");
        assert_eq!(
            out,
            format!("# Benchmarks\n\nintro\n\n{B}\nnew table\n{E}\n\n## Other\nkept\n")
        );
        // Idempotent.
        assert_eq!(replace_section(&out, B, E, "new table\n"), out);
    }

    #[test]
    fn missing_markers_append() {
        assert_eq!(replace_section("", B, E, "x"), format!("{B}\nx\n{E}\n"));
        assert_eq!(
            replace_section("# T\n", B, E, "x"),
            format!("# T\n\n{B}\nx\n{E}\n")
        );
        // An end marker before the begin marker is not a section.
        let odd = format!("{E}\n{B}\n");
        assert!(replace_section(&odd, B, E, "x").ends_with(&format!("{B}\nx\n{E}\n")));
    }

    #[test]
    fn tables_bold_the_best_and_dash_the_skipped() {
        let c = |ratio, spread| Some(Cell { ratio, spread });
        let t = Table {
            title: "UNIQUAC".into(),
            note: None,
            rows: vec![Row {
                n: 16,
                cells: vec![
                    ("ddx-interp".into(), c(2.5, 0.03)),
                    ("num-dual".into(), c(4.0, 0.1)),
                    ("ddx-jit".into(), None),
                ],
                native_ns: 812.4,
                heap: None,
            }],
        };
        let s = render_table(&t);
        assert!(
            s.contains("| n | ddx-interp | num-dual | ddx-jit | one evaluation, ns |\n"),
            "{s}"
        );
        assert!(
            s.contains("| 16 | **2.50x** ±3% | 4.00x ±10% | — | 812 |\n"),
            "{s}"
        );
    }

    #[test]
    fn the_heap_column_is_there_when_a_row_has_one() {
        let row = |n, heap| Row {
            n,
            cells: vec![(
                "ddx-interp".into(),
                Some(Cell {
                    ratio: 2.0,
                    spread: 0.0,
                }),
            )],
            native_ns: 10.0,
            heap,
        };
        let t = Table {
            title: "T".into(),
            note: None,
            rows: vec![row(16, Some(3 << 19)), row(32, Some(2048)), row(64, None)],
        };
        let s = render_table(&t);
        assert!(
            s.contains("| n | ddx-interp | one evaluation, ns | ddx heap |\n|---|---|---|---|\n"),
            "{s}"
        );
        assert!(s.contains("| 16 | **2.00x** ±0% | 10 | 1.5 MiB |\n"), "{s}");
        assert!(s.contains("| 32 | **2.00x** ±0% | 10 | 2 KiB |\n"), "{s}");
        assert!(s.contains("| 64 | **2.00x** ±0% | 10 | — |\n"), "{s}");
    }

    #[test]
    fn today_is_a_date() {
        let d = today();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"));
    }
}
