//! `ddx batch`: an expression over every row of a CSV or Apache Parquet file, streamed in
//! chunks.
//!
//! Input columns are matched to the expression's symbols by header name (a Parquet file's
//! top-level column names); the other columns are ignored, or copied to the output with
//! `--pass-through`. Names listed with `--params T,P` are parameters (never
//! differentiated: no `df/dT` column): each is a column of the input named like it, or
//! one value for every row given with `--param T=300` (broadcast, as the library's batch
//! calls broadcast a column of length 1). Either file may be CSV or Parquet ([`parquet`]), chosen by
//! `--input-format`/`--output-format` or else by the extension (`.parquet`, `.pq`). The output has one
//! column per result: `f`, then `df/dx` for every symbol (`--want jacobian`), then
//! `d2f/dxdy` for every pair `x ≤ y` in symbol order (`--want hessian`); a structurally
//! zero derivative is a column of zeros. Numbers are written in the shortest form that
//! reads back to the same bits (`ryu`).
//!
//! Memory is bounded by the chunk size, not the file: a reader thread parses records (or
//! decodes Parquet record batches) into chunks of `--chunk` rows and hands them over a channel of capacity one, so at most three
//! chunks exist at once (being read, waiting, being computed). Each CSV chunk's cells are
//! parsed to `f64` on all cores (rayon), computed by one library batch call (which splits
//! across cores itself, with each point's bits independent of the split), and formatted on
//! all cores before being written in order (a Parquet output is one record batch per
//! chunk). A progress bar (indicatif) is drawn on stderr only when stderr is a terminal.
//!
//! Invariant: the numbers written for a row are, bit for bit, what the library's batch
//! call answers for that row's point.

#[cfg(feature = "parquet")]
mod parquet;

use crate::error::CliError;
use clap::{Args, ValueEnum};
use csv::ByteRecord;
use ddx::{rt, Backend, Equation, LaneKind, Options};
use rayon::prelude::*;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

/// Evaluate an expression, and its derivatives, at every row of a CSV file.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  ddx batch 'x*exp(-y)' --input points.csv --output out.csv --want jacobian\n  ddx batch 'x*exp(-y)' --input points.parquet --output out.parquet --pass-through"
)]
pub struct BatchArgs {
    /// The expression; its symbols name columns of the input.
    pub expr: String,
    /// Names of the expression that are parameters, never differentiated: `--params T,P`.
    /// Each is read from its column, or is the value `--param` gives.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub params: Vec<String>,
    /// A parameter's value for every row, `T=300` (repeatable, or several joined by
    /// commas); the input then needs no column for it.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub param: Vec<String>,
    /// The input file: CSV with a header row (`-` reads stdin), or Parquet.
    #[arg(long, short, value_name = "FILE")]
    pub input: PathBuf,
    /// The output file; stdout when left out or `-`.
    #[arg(long, short, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The input's format; by default Parquet for a name ending `.parquet` or `.pq`, else CSV.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub input_format: Option<Format>,
    /// The output's format; by default Parquet for a name ending `.parquet` or `.pq`, else CSV.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub output_format: Option<Format>,
    /// What to compute at each row.
    #[arg(long, value_enum, default_value_t = Want::Value)]
    pub want: Want,
    /// Copy the input columns that are not symbols to the output, before the results.
    #[arg(long)]
    pub pass_through: bool,
    /// Rows per chunk (memory is about three chunks).
    #[arg(long, default_value_t = 16_384, value_parser = clap::value_parser!(u32).range(1..))]
    pub chunk: u32,
    /// Compile the lane to machine code (Cranelift) first; same bits as interpreting.
    #[arg(long)]
    pub compile: bool,
}

/// A file format `ddx batch` reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Comma-separated values with a header row.
    Csv,
    /// Apache Parquet (Snappy-compressed or uncompressed).
    Parquet,
}

impl Format {
    /// `given`, or the format `path`'s extension names.
    fn of(given: Option<Format>, path: Option<&Path>) -> Format {
        given.unwrap_or_else(|| {
            let ext = path
                .and_then(Path::extension)
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase);
            match ext.as_deref() {
                Some("parquet" | "pq") => Format::Parquet,
                _ => Format::Csv,
            }
        })
    }
}

/// What `ddx batch` computes at each row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Want {
    /// `f`.
    Value,
    /// `f` and `df/dx` for every symbol.
    Jacobian,
    /// `f`, `df/dx`, and `d2f/dxdy` for every pair of symbols.
    Hessian,
}

impl Want {
    fn lane(self) -> LaneKind {
        match self {
            Want::Value => LaneKind::Value,
            Want::Jacobian => LaneKind::Jacobian,
            Want::Hessian => LaneKind::Hessian,
        }
    }
}

/// How one chunk's results are laid out: the library's column blocks, and for each output
/// column of the CSV which computed column it copies (`None`: a structural zero).
struct Layout {
    want: Want,
    partials: usize,
    hessians: usize,
    /// Output CSV columns past the pass-through ones: an index into the concatenation
    /// `values ++ partials ++ hessians`, or `None` for a zero column.
    columns: Vec<Option<usize>>,
    header: Vec<String>,
}

impl Layout {
    fn new(eq: &Equation, want: Want) -> Layout {
        let names = eq.symbols();
        let n = names.len();
        let mut header = vec!["f".to_string()];
        let mut columns = vec![Some(0)];
        let mut partials = 0;
        let mut hessians = 0;
        if want != Want::Value {
            partials = eq.jacobian_columns();
            let pattern = eq.jacobian_pattern();
            for (j, name) in names.iter().enumerate() {
                header.push(format!("df/d{name}"));
                columns.push(
                    pattern
                        .entries()
                        .iter()
                        .find(|c| c.column == j)
                        .map(|c| 1 + c.slot),
                );
            }
        }
        if want == Want::Hessian {
            hessians = eq.hessian_columns();
            for i in 0..n {
                for j in i..n {
                    header.push(format!("d2f/d{}d{}", names[i], names[j]));
                    columns.push(eq.hessian_cell(i, j).map(|c| 1 + partials + c));
                }
            }
        }
        Layout {
            want,
            partials,
            hessians,
            columns,
            header,
        }
    }

    fn computed(&self) -> usize {
        1 + self.partials + self.hessians
    }
}

/// One chunk of CSV records, stored flat: every field's bytes back to back in `data`,
/// `ends[r * fields + k]` the end of row `r`'s field `k` there.
#[derive(Default)]
pub(crate) struct CsvChunk {
    data: Vec<u8>,
    ends: Vec<usize>,
    /// Each row's 1-based line in the file.
    lines: Vec<u64>,
    fields: usize,
    len: usize,
    /// The 0-based index of the chunk's first data row.
    first_row: u64,
    /// Bytes of input read up to the chunk's end (for the progress bar).
    bytes: u64,
}

impl CsvChunk {
    fn clear(&mut self, fields: usize) {
        self.data.clear();
        self.ends.clear();
        self.lines.clear();
        self.fields = fields;
        self.len = 0;
    }

    fn push(&mut self, rec: &ByteRecord) {
        let base = self.data.len();
        self.data.extend_from_slice(rec.as_slice());
        let mut end = base;
        for f in rec.iter() {
            end += f.len();
            self.ends.push(end);
        }
        self.lines.push(rec.position().map_or(0, |p| p.line()));
        self.len += 1;
    }

    /// Field `k` of row `r`.
    fn field(&self, r: usize, k: usize) -> &[u8] {
        let i = r * self.fields + k;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }
}

/// One chunk of input rows, as its format reads them.
enum Chunk {
    Csv(CsvChunk),
    #[cfg(feature = "parquet")]
    Arrow(parquet::ArrowChunk),
}

impl Chunk {
    fn len(&self) -> usize {
        match self {
            Chunk::Csv(c) => c.len,
            #[cfg(feature = "parquet")]
            Chunk::Arrow(c) => c.len,
        }
    }

    /// How far the input has been read at the chunk's end, in the progress bar's unit
    /// (bytes of a CSV file, rows of a Parquet one).
    fn progress(&self) -> u64 {
        match self {
            Chunk::Csv(c) => c.bytes,
            #[cfg(feature = "parquet")]
            Chunk::Arrow(c) => c.first_row + c.len as u64,
        }
    }
}

/// The longest record a CSV input may have: a header of 10⁶ columns is a few MB; an
/// endless stream with no line end (`cat /dev/zero |`), or an endless quoted field, is
/// refused here instead of held (the `csv` crate holds a record whole, however long).
const MAX_LINE: u64 = 1 << 28;

/// A reader that fails once a record passes `max` bytes ([`MAX_LINE`]). It follows the
/// `csv` crate's default dialect as far as record ends go: a record ends at `\n` or `\r`
/// outside quotes; a `"` at a field's start (after `,`, a line end or the stream's start)
/// opens a quoted field, where `""` is a quote and a lone `"` closes it; a `"` elsewhere
/// is a character. Only quotes and line ends are looked at (`memchr`), so it costs
/// nothing next to the parsing.
struct RecordLimit<R> {
    inner: R,
    /// Bytes of the current record so far.
    run: u64,
    max: u64,
    /// Inside a quoted field.
    quoted: bool,
    /// A quoted field's `"` was the last byte read: a quote if the next byte is one too,
    /// the field's end otherwise.
    pending: bool,
    /// The last byte read (`None` at the stream's start).
    last: Option<u8>,
}

impl<R> RecordLimit<R> {
    fn new(inner: R, max: u64) -> Self {
        RecordLimit {
            inner,
            run: 0,
            max,
            quoted: false,
            pending: false,
            last: None,
        }
    }

    /// Follows `buf`'s quotes and line ends, counting each record's bytes; `false` as soon
    /// as one passes `max`.
    fn scan(&mut self, buf: &[u8]) -> bool {
        // Where the current record's bytes in `buf` start.
        let mut start = 0;
        // The position a hit must reach to count (past an escaped quote's second `"`).
        let mut from = 0;
        if self.pending {
            self.pending = false;
            if buf.first() == Some(&b'"') {
                from = 1;
            } else {
                self.quoted = false;
            }
        }
        for p in memchr::memchr3_iter(b'"', b'\n', b'\r', buf) {
            if p < from {
                continue;
            }
            match (buf[p], self.quoted) {
                (b'"', true) => match buf.get(p + 1) {
                    Some(b'"') => from = p + 2,
                    Some(_) => self.quoted = false,
                    None => self.pending = true,
                },
                (b'"', false) => {
                    let before = if p == 0 { self.last } else { Some(buf[p - 1]) };
                    self.quoted = matches!(before, None | Some(b',' | b'\n' | b'\r'));
                }
                (_, true) => {}
                (_, false) => {
                    if self.run + (p - start) as u64 > self.max {
                        return false;
                    }
                    self.run = 0;
                    start = p + 1;
                }
            }
        }
        self.last = buf.last().copied().or(self.last);
        self.run += (buf.len() - start) as u64;
        self.run <= self.max
    }
}

impl<R: Read> Read for RecordLimit<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if !self.scan(&buf[..n]) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a record is longer than {} bytes: not CSV", self.max),
            ));
        }
        Ok(n)
    }
}

/// The input as a stream of bytes, its records at most [`MAX_LINE`] long.
fn open_input(path: &Path) -> Result<(Box<dyn Read + Send>, Option<u64>), CliError> {
    let (input, len) = open_raw(path)?;
    Ok((Box::new(RecordLimit::new(input, MAX_LINE)), len))
}

/// The input as a stream of bytes, and its length where it is a file.
fn open_raw(path: &Path) -> Result<(Box<dyn Read + Send>, Option<u64>), CliError> {
    if path == Path::new("-") {
        return Ok((Box::new(io::stdin()), None));
    }
    let f = File::open(path).map_err(CliError::io(path))?;
    let meta = f.metadata().ok();
    // A device (`/dev/zero`, `/dev/urandom`) never ends and has no rows: its "header"
    // would grow without bound. Pipes and files stream as they are.
    #[cfg(unix)]
    if let Some(m) = &meta {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        if t.is_char_device() || t.is_block_device() {
            return Err(CliError::File {
                path: path.to_path_buf(),
                what: "a device, not a file or a pipe of CSV".into(),
            });
        }
    }
    let len = meta.map(|m| m.len());
    Ok((Box::new(f), len))
}

/// A CSV reading error as the one-line message of its row.
pub(crate) fn csv_error(path: &Path, e: &csv::Error) -> CliError {
    let what = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => {
            let s = if *len == 1 { "" } else { "s" };
            format!("{len} field{s}, but the header has {expected_len}")
        }
        csv::ErrorKind::Utf8 { err, .. } => format!("invalid UTF-8: {err}"),
        csv::ErrorKind::Io(err) => {
            return CliError::Io {
                path: path.to_path_buf(),
                source: io::Error::new(err.kind(), err.to_string()),
            }
        }
        _ => e.to_string(),
    };
    match e.position() {
        Some(p) => CliError::Row {
            path: path.to_path_buf(),
            row: p.record(),
            line: p.line(),
            what,
        },
        None => CliError::File {
            path: path.to_path_buf(),
            what,
        },
    }
}

/// Parses one cell.
pub(crate) fn cell(bytes: &[u8]) -> Option<f64> {
    std::str::from_utf8(bytes).ok()?.trim().parse::<f64>().ok()
}

/// Column names a "no column" message lists before it says how many more there are: a
/// header may have millions.
const LISTED_COLUMNS: usize = 12;

/// The input's column for every name in `names` (the symbols, then the parameters read
/// from columns: those past the first `symbols`), and the pass-through columns (every
/// other one when `pass_through`). Linear in the header and the names (a hash of the
/// header's names), whatever their number.
///
/// # Errors
/// A symbol or parameter with no column, or with two.
fn match_columns(
    path: &Path,
    header: &[String],
    names: &[String],
    symbols: usize,
    pass_through: bool,
) -> Result<(Vec<usize>, Vec<usize>), CliError> {
    use std::collections::HashMap;
    // Each name's first column, and whether another has it too.
    let mut columns: HashMap<&str, (usize, bool)> = HashMap::with_capacity(header.len());
    for (k, h) in header.iter().enumerate() {
        columns
            .entry(h.as_str())
            .and_modify(|e| e.1 = true)
            .or_insert((k, false));
    }
    let mut symbol_columns = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let Some(&(k, twice)) = columns.get(name.as_str()) else {
            let what = if i < symbols {
                format!("the symbol `{name}`")
            } else {
                format!("the parameter `{name}` (or give one value: --param {name}=VALUE)")
            };
            let listed: Vec<String> = header[..header.len().min(LISTED_COLUMNS)]
                .iter()
                .map(|h| shown(h.as_bytes()))
                .collect();
            let listed = listed.join(", ");
            let more = match header.len().saturating_sub(LISTED_COLUMNS) {
                0 => String::new(),
                more => format!(", … and {more} more"),
            };
            return Err(CliError::File {
                path: path.to_path_buf(),
                what: format!("no column `{name}` for {what} (the header has {listed}{more})"),
            });
        };
        if twice {
            return Err(CliError::File {
                path: path.to_path_buf(),
                what: format!("two columns are named `{name}`"),
            });
        }
        symbol_columns.push(k);
    }
    let passed = if pass_through {
        let mut used = vec![false; header.len()];
        for &k in &symbol_columns {
            used[k] = true;
        }
        (0..header.len()).filter(|&k| !used[k]).collect()
    } else {
        Vec::new()
    };
    Ok((symbol_columns, passed))
}

/// An opened input: its column names, and what reads its chunks on the reader thread.
enum Input {
    Csv(csv::Reader<Box<dyn Read + Send>>, Option<u64>),
    #[cfg(feature = "parquet")]
    Parquet(parquet::ParquetInput),
}

/// The error for a Parquet file in a build without Parquet support.
#[cfg(not(feature = "parquet"))]
fn no_parquet(path: &Path) -> CliError {
    CliError::File {
        path: path.to_path_buf(),
        what: "this ddx was built without Parquet support (the `parquet` feature)".into(),
    }
}

/// Opens the input and reads its header.
fn open(path: &Path, format: Format) -> Result<(Input, Vec<String>), CliError> {
    match format {
        Format::Csv => {
            let (input, input_len) = open_input(path)?;
            let mut reader = csv::ReaderBuilder::new()
                .has_headers(true)
                .from_reader(input);
            let header = reader
                .byte_headers()
                .map_err(|e| csv_error(path, &e))?
                .iter()
                .map(|h| String::from_utf8_lossy(h).trim().to_string())
                .collect();
            Ok((Input::Csv(reader, input_len), header))
        }
        #[cfg(feature = "parquet")]
        Format::Parquet => {
            let input = parquet::open(path)?;
            let header = input.header.clone();
            Ok((Input::Parquet(input), header))
        }
        #[cfg(not(feature = "parquet"))]
        Format::Parquet => Err(no_parquet(path)),
    }
}

/// Where the results go.
enum Sink {
    Csv(BufWriter<Box<dyn Write>>),
    #[cfg(feature = "parquet")]
    Parquet(Box<parquet::ParquetOutput>),
}

/// Whether `a` and `b` name one existing file (the same inode on Unix, so a hard link or
/// another spelling of the path is caught; the same canonical path elsewhere).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
    }
}

/// Runs `ddx batch`.
///
/// # Errors
/// A parse error of the expression; an unreadable input or unwritable output; an output
/// that is the input file (refused before anything is written); a header
/// that lacks a symbol's column or names one twice; a malformed row; a cell that is not a
/// number (in Parquet: a null, or a column that is not numeric). Rows before a bad row
/// may already have been written.
pub fn run(a: &BatchArgs) -> Result<(), CliError> {
    let mut eq = rt::equation_text_with_params(&a.expr, &a.params)?;
    if a.compile {
        eq.set_options(Options::with_backend(Backend::Compile));
    }
    let (read, sources) = inputs(&eq, &a.param)?;
    let path = a.input.as_path();
    let out_path = a.output.clone().unwrap_or_else(|| PathBuf::from("stdout"));
    let out_format = Format::of(a.output_format, a.output.as_deref());
    let (input, header_names) = open(path, Format::of(a.input_format, Some(path)))?;
    let (symbol_columns, passed) =
        match_columns(path, &header_names, &read, eq.arity(), a.pass_through)?;
    #[cfg(feature = "parquet")]
    if let Input::Parquet(i) = &input {
        i.check_numeric(path, &symbol_columns)?;
    }
    let layout = Layout::new(&eq, a.want);
    if a.compile {
        eq.wait_for_kernel_of(a.want.lane());
    }

    let to_file = a.output.as_deref().filter(|p| *p != Path::new("-"));
    if let Some(p) = to_file.filter(|p| path != Path::new("-") && same_file(path, p)) {
        return Err(CliError::argument(
            "--output",
            format!(
                "`{}` is the input file: writing it would truncate the input before it is \
                 read; write to another file",
                p.display()
            ),
        ));
    }
    let mut sink = match out_format {
        Format::Csv => {
            let output: Box<dyn Write> = match to_file {
                Some(p) => Box::new(File::create(p).map_err(CliError::io(p))?),
                None => Box::new(io::stdout().lock()),
            };
            let mut out = BufWriter::with_capacity(1 << 20, output);
            let names = passed
                .iter()
                .map(|&k| header_names[k].as_str())
                .chain(layout.header.iter().map(String::as_str));
            write_csv_header(&mut out, &out_path, names)?;
            Sink::Csv(out)
        }
        #[cfg(feature = "parquet")]
        Format::Parquet => {
            let output: Box<dyn Write + Send> = match to_file {
                Some(p) => Box::new(BufWriter::with_capacity(
                    1 << 20,
                    File::create(p).map_err(CliError::io(p))?,
                )),
                None => Box::new(io::stdout()),
            };
            let fields = match &input {
                Input::Parquet(i) => i.passed_fields(&passed),
                Input::Csv(..) => passed
                    .iter()
                    .map(|&k| parquet::ParquetOutput::text_field(&header_names[k]))
                    .collect(),
            };
            Sink::Parquet(Box::new(parquet::ParquetOutput::new(
                output,
                &out_path,
                fields,
                &layout.header,
            )?))
        }
        #[cfg(not(feature = "parquet"))]
        Format::Parquet => return Err(no_parquet(&out_path)),
    };

    let chunk = a.chunk as usize;
    let (to_compute, chunks) = mpsc::sync_channel::<Result<Chunk, CliError>>(1);
    let (recycle, spare) = mpsc::channel::<CsvChunk>();
    let input_path = path.to_path_buf();
    let (reader, bar): (Box<dyn FnOnce() + Send>, _) = match input {
        Input::Csv(reader, len) => (
            Box::new(move || read_chunks(reader, &input_path, chunk, &to_compute, &spare)),
            progress(len, false),
        ),
        #[cfg(feature = "parquet")]
        Input::Parquet(i) => {
            let rows = i.rows;
            let r = i.reader(path, &symbol_columns, &passed, chunk)?;
            (
                Box::new(move || r.read_chunks(&to_compute)),
                progress(Some(rows), true),
            )
        }
    };
    let result = std::thread::scope(|s| {
        s.spawn(reader);
        let mut state = Compute::new(&eq, &layout, chunk, symbol_columns.len(), sources);
        for c in chunks {
            let c = c?;
            state.chunk(
                &c,
                path,
                &symbol_columns,
                &header_names,
                &passed,
                &mut sink,
                &out_path,
            )?;
            if let Some(b) = &bar {
                b.set_position(c.progress());
            }
            #[allow(irrefutable_let_patterns)] // without the `parquet` feature
            if let Chunk::Csv(c) = c {
                // The reader may have finished; a failed recycle only costs an allocation.
                let _ = recycle.send(c);
            }
        }
        Ok::<(), CliError>(())
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result?;
    match sink {
        Sink::Csv(mut out) => out.flush().map_err(CliError::io(&out_path)),
        #[cfg(feature = "parquet")]
        Sink::Parquet(p) => p.finish(),
    }
}

/// Where one input of the batch call (a symbol, then a parameter, in canonical order)
/// comes from.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// The `k`-th column read from the input.
    Column(usize),
    /// One value for every row (`--param`), passed as a column of length 1.
    Value(f64),
}

/// The names read from the input's columns (the symbols, then the parameters without a
/// `--param` value) and the source of each batch input.
///
/// # Errors
/// A `--param` pair that is malformed, names no parameter, or names one twice.
fn inputs(eq: &Equation, given: &[String]) -> Result<(Vec<String>, Vec<Source>), CliError> {
    let values = crate::eval::param_values(eq, given)?;
    let mut read: Vec<String> = eq.symbols().to_vec();
    let mut sources: Vec<Source> = (0..read.len()).map(Source::Column).collect();
    for name in eq.parameters() {
        match values.iter().find(|(n, _)| n == name) {
            Some(&(_, v)) => sources.push(Source::Value(v)),
            None => {
                sources.push(Source::Column(read.len()));
                read.push(name.clone());
            }
        }
    }
    Ok((read, sources))
}

/// Writes a CSV output's header row.
fn write_csv_header<'a>(
    out: &mut impl Write,
    out_path: &Path,
    names: impl Iterator<Item = &'a str>,
) -> Result<(), CliError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(names).map_err(|e| CliError::File {
        path: out_path.to_path_buf(),
        what: e.to_string(),
    })?;
    let bytes = w.into_inner().map_err(|e| CliError::File {
        path: out_path.to_path_buf(),
        what: e.to_string(),
    })?;
    out.write_all(&bytes).map_err(CliError::io(out_path))
}

/// A progress bar over the input's bytes (or `rows`), on a terminal only.
fn progress(len: Option<u64>, rows: bool) -> Option<indicatif::ProgressBar> {
    if !io::stderr().is_terminal() {
        return None;
    }
    let len = len?;
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    let template = if rows {
        "{bar:40} {human_pos}/{human_len} rows {elapsed} (eta {eta})"
    } else {
        "{bar:40} {bytes}/{total_bytes} {elapsed} (eta {eta})"
    };
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    Some(bar)
}

/// The CSV reader thread: fills chunks of `chunk` records and sends them; stops at the
/// end of the input, at the first error (sent), or when the receiver has gone.
fn read_chunks<R: Read>(
    mut reader: csv::Reader<R>,
    path: &Path,
    chunk: usize,
    to_compute: &mpsc::SyncSender<Result<Chunk, CliError>>,
    spare: &mpsc::Receiver<CsvChunk>,
) {
    let fields = reader.byte_headers().map_or(0, ByteRecord::len);
    let mut first_row = 0u64;
    let mut rec = ByteRecord::new();
    loop {
        let mut c = spare.try_recv().unwrap_or_default();
        c.clear(fields);
        while c.len < chunk {
            match reader.read_byte_record(&mut rec) {
                Ok(true) => c.push(&rec),
                Ok(false) => break,
                Err(e) => {
                    let _ = to_compute.send(Err(csv_error(path, &e)));
                    return;
                }
            }
        }
        if c.len == 0 {
            return;
        }
        c.first_row = first_row;
        c.bytes = reader.position().byte();
        first_row += c.len as u64;
        let done = c.len < chunk;
        if to_compute.send(Ok(Chunk::Csv(c))).is_err() || done {
            return;
        }
    }
}

/// Rows parsed or formatted by one rayon task.
const BLOCK: usize = 4096;

/// The compute stage's buffers, reused chunk after chunk.
struct Compute<'a> {
    eq: &'a Equation,
    layout: &'a Layout,
    /// The columns read from the input, chunk by chunk.
    inputs: Vec<Vec<f64>>,
    /// Where each batch input comes from (symbols, then parameters).
    sources: Vec<Source>,
    results: Vec<Vec<f64>>,
}

impl<'a> Compute<'a> {
    fn new(
        eq: &'a Equation,
        layout: &'a Layout,
        chunk: usize,
        columns: usize,
        sources: Vec<Source>,
    ) -> Self {
        // Empty until a chunk arrives: they grow to the rows a chunk holds, not to
        // `--chunk` (2³² − 1 rows asked of a one-row file allocate one row).
        let _ = chunk;
        Compute {
            eq,
            layout,
            inputs: vec![Vec::new(); columns],
            sources,
            results: vec![Vec::new(); layout.computed()],
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn chunk(
        &mut self,
        chunk: &Chunk,
        path: &Path,
        symbol_columns: &[usize],
        header: &[String],
        passed: &[usize],
        sink: &mut Sink,
        out_path: &Path,
    ) -> Result<(), CliError> {
        let len = chunk.len();
        for v in self.inputs.iter_mut().chain(&mut self.results) {
            if v.len() < len {
                v.resize(len, 0.0);
            }
        }
        match chunk {
            Chunk::Csv(c) => parse(c, &mut self.inputs, symbol_columns)
                .map_err(|r| bad_cell(path, c, r, symbol_columns, header))?,
            #[cfg(feature = "parquet")]
            Chunk::Arrow(c) => parquet::fill_inputs(c, &mut self.inputs),
        }
        let xs: Vec<&[f64]> = self
            .sources
            .iter()
            .map(|s| match s {
                Source::Column(k) => &self.inputs[*k][..len],
                Source::Value(v) => std::slice::from_ref(v),
            })
            .collect();
        let mut results: Vec<&mut [f64]> = self.results.iter_mut().map(|v| &mut v[..len]).collect();
        let (values, rest) = results.split_at_mut(1);
        let (partials, hessians) = rest.split_at_mut(self.layout.partials);
        match self.layout.want {
            Want::Value => self.eq.evaluate_batch(&xs, values)?,
            Want::Jacobian => self.eq.jacobian_batch(&xs, values, partials)?,
            Want::Hessian => self.eq.hessian_batch(&xs, values, partials, hessians)?,
        }
        let results: Vec<&[f64]> = self.results.iter().map(|v| &v[..len]).collect();
        let columns = &self.layout.columns;
        match sink {
            Sink::Csv(out) => write_csv_rows(chunk, path, passed, &results, columns, out, out_path),
            #[cfg(feature = "parquet")]
            Sink::Parquet(p) => p.write(chunk, passed, &results, columns, len),
        }
    }
}

/// Formats one chunk's rows as CSV on all cores and writes them in order.
fn write_csv_rows(
    chunk: &Chunk,
    path: &Path,
    passed: &[usize],
    results: &[&[f64]],
    columns: &[Option<usize>],
    out: &mut impl Write,
    out_path: &Path,
) -> Result<(), CliError> {
    let len = chunk.len();
    #[cfg(feature = "parquet")]
    if let Chunk::Arrow(c) = chunk {
        // Fails early (a type Arrow cannot display) rather than once per block.
        parquet::CellText::new(c, path)?;
    }
    #[cfg(not(feature = "parquet"))]
    let _ = path;
    let blocks: Vec<Result<Vec<u8>, String>> = (0..len.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let rows = b * BLOCK..((b + 1) * BLOCK).min(len);
            let mut w = csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(Vec::with_capacity(rows.len() * 24 * columns.len()));
            let mut num = ryu::Buffer::new();
            #[cfg(feature = "parquet")]
            let mut text = String::new();
            // Arrow's formatters are not `Sync`: each block makes its own.
            #[cfg(feature = "parquet")]
            let cells = match chunk {
                Chunk::Arrow(c) => parquet::CellText::new(c, path).ok(),
                Chunk::Csv(_) => None,
            };
            for r in rows {
                match chunk {
                    Chunk::Csv(c) => {
                        for &k in passed {
                            w.write_field(c.field(r, k)).map_err(|e| e.to_string())?;
                        }
                    }
                    #[cfg(feature = "parquet")]
                    Chunk::Arrow(_) => {
                        if let Some(cells) = &cells {
                            for j in 0..passed.len() {
                                cells.cell(j, r, &mut text);
                                w.write_field(&text).map_err(|e| e.to_string())?;
                            }
                        }
                    }
                }
                for col in columns {
                    let v = col.map_or(0.0, |k| results[k][r]);
                    let text = if v.is_finite() {
                        num.format_finite(v)
                    } else if v.is_nan() {
                        "NaN"
                    } else if v > 0.0 {
                        "inf"
                    } else {
                        "-inf"
                    };
                    w.write_field(text).map_err(|e| e.to_string())?;
                }
                w.write_record(None::<&[u8]>).map_err(|e| e.to_string())?;
            }
            w.into_inner().map_err(|e| e.to_string())
        })
        .collect();
    for b in blocks {
        let b = b.map_err(|what| CliError::File {
            path: out_path.to_path_buf(),
            what,
        })?;
        out.write_all(&b).map_err(CliError::io(out_path))?;
    }
    Ok(())
}

/// Parses the symbol cells of chunk `c` into `inputs` on all cores; `Err(r)` names a row
/// (chunk-relative) holding a cell that is not a number (the first such row when there
/// are several, so messages do not depend on scheduling).
fn parse(c: &CsvChunk, inputs: &mut [Vec<f64>], columns: &[usize]) -> Result<(), usize> {
    let len = c.len;
    let mut blocks: Vec<Vec<&mut [f64]>> = (0..len.div_ceil(BLOCK))
        .map(|_| Vec::with_capacity(inputs.len()))
        .collect();
    for column in inputs.iter_mut() {
        for (b, piece) in column[..len].chunks_mut(BLOCK).enumerate() {
            blocks[b].push(piece);
        }
    }
    let bad = blocks
        .into_par_iter()
        .enumerate()
        .filter_map(|(b, mut pieces)| {
            let base = b * BLOCK;
            let rows = pieces.first().map_or(0, |p| p.len());
            for r in 0..rows {
                for (piece, &k) in pieces.iter_mut().zip(columns) {
                    match cell(c.field(base + r, k)) {
                        Some(v) => piece[r] = v,
                        None => return Some(base + r),
                    }
                }
            }
            None
        })
        .min();
    bad.map_or(Ok(()), Err)
}

/// The error for row `r` of chunk `c`, which holds a cell that is not a number.
fn bad_cell(path: &Path, c: &CsvChunk, r: usize, columns: &[usize], header: &[String]) -> CliError {
    let k = columns
        .iter()
        .copied()
        .find(|&k| cell(c.field(r, k)).is_none())
        .unwrap_or(0);
    CliError::Cell {
        path: path.to_path_buf(),
        row: c.first_row + r as u64 + 1,
        line: c.lines.get(r).copied().unwrap_or(0),
        column: k + 1,
        name: shown(header.get(k).map_or(&b""[..], |h| h.as_bytes())),
        cell: shown(c.field(r, k)),
    }
}

/// Characters of a cell or a column name a message shows before it says how long the
/// rest is: a cell may be a 100 MB line.
const SHOWN_CHARS: usize = 64;

/// `bytes` as a message shows them: UTF-8 (invalid sequences replaced), control
/// characters escaped (`\0`, `\u{1b}`: a NUL or an escape sequence is not printed to the
/// terminal), at most [`SHOWN_CHARS`] characters and then how many bytes there are.
fn shown(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    for (n, ch) in text.chars().enumerate() {
        if n == SHOWN_CHARS {
            out.push_str(&format!("… ({} bytes in all)", bytes.len()));
            break;
        }
        if ch.is_control() {
            out.extend(ch.escape_default());
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::RecordLimit;
    use std::io::Read;

    /// Reads `input` through a [`RecordLimit`] of `max` bytes, `step` bytes a call.
    fn read_all(input: &[u8], max: u64, step: usize) -> std::io::Result<Vec<u8>> {
        let mut r = RecordLimit::new(input, max);
        let (mut out, mut buf) = (Vec::new(), vec![0u8; step]);
        loop {
            let n = r.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    /// `input` passes a limit of 100 bytes, read in pieces that split it anywhere.
    fn passes(input: &str) {
        for step in [1, 2, 3, 7, 100, 101, 4096] {
            let got = read_all(input.as_bytes(), 100, step);
            assert_eq!(got.ok().as_deref(), Some(input.as_bytes()), "step {step}");
        }
    }

    /// `input` is refused under a limit of 100 bytes, however it is read.
    fn refused(input: &str) {
        for step in [1, 2, 3, 7, 100, 101, 4096] {
            let e = read_all(input.as_bytes(), 100, step).unwrap_err();
            assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
            assert!(e.to_string().contains("longer than 100 bytes"), "{e}");
        }
    }

    #[test]
    fn a_record_past_the_limit_is_an_error_and_shorter_ones_pass() {
        let a100 = "a".repeat(100);
        // Records of exactly the limit, ended by `\n`, `\r\n` or a lone `\r` (tester 38:
        // CR-only files were counted as one line).
        for end in ["\n", "\r\n", "\r"] {
            passes(&format!("{a100}{end}").repeat(50));
            refused(&format!(
                "{}{}",
                format!("{a100}{end}").repeat(5),
                "b".repeat(101)
            ));
        }
        // A quoted field's line ends are inside the record (tester 38: an endless quoted
        // field grew without bound), its `""` a quote.
        let quoted = format!("x\n\"{}\"\n", "y\n".repeat(60));
        refused(&quoted);
        refused(&format!("x,\"{}", "\"\"\n".repeat(40)));
        // A quoted field that closes ends its record at the next line end: short records
        // after it pass.
        passes(&format!("x,\"a\n\"\"b\"\"\nc\"\n{}", "1,2\n".repeat(200)));
        passes(&format!("\"q\"\"\"\r{}", "1,2\r".repeat(200)));
        // A `"` inside an unquoted field is a character (an inch mark), not a quote.
        passes(&format!("x,size\n1,5\"\n{}", "1,2\n".repeat(200)));
    }
}
