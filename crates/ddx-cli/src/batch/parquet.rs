//! Apache Parquet input and output for `ddx batch` (the `parquet` and `arrow` crates,
//! built without their default features: Snappy is the one compression codec, the one
//! pandas, pyarrow and Polars write by default).
//!
//! Input: only the symbol columns and, with `--pass-through`, the other top-level columns
//! are read (a projection), in record batches of `--chunk` rows, so memory is bounded by a
//! chunk and one row group's pages, not by the file. A symbol column may hold any numeric
//! Arrow type (integers, floats, decimals: converted to `f64` by `arrow-cast`); a null in
//! one is an error naming its row and column.
//!
//! Output: one row group per `ROW_GROUP` rows, Snappy-compressed; the result columns are
//! non-null `Float64`, named as in the CSV header (`f`, `df/dx`, `d2f/dxdy`); pass-through
//! columns keep their Arrow type from a Parquet input and are `Utf8` (the cells as
//! written) from a CSV one.
//!
//! Invariant: the `f64` a symbol cell holds reaches the library unchanged (a `Float64`
//! column is copied; other types are converted exactly where `f64` can hold them), so a
//! Parquet input gives the bits a CSV holding the shortest round-trip text would.

use super::{Chunk, CsvChunk};
use crate::error::CliError;
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;

/// Rows per row group of a Parquet output: large enough for Parquet readers to read
/// efficiently, small enough that the writer's buffered row group stays a few MB.
const ROW_GROUP: usize = 1 << 17;

/// `read()`, with a panic inside it an error about `path`: the `parquet` and `arrow`
/// crates panic on some damaged files (a flipped bit in the footer's schema, a negative
/// column length) instead of answering an error, and a damaged input must not crash the
/// command.
///
/// The process's panic hook stays as it was for every other panic; one raised while this
/// thread is inside `read` is answered as that error and not printed.
fn unpanicked<T>(path: &Path, read: impl FnOnce() -> T) -> Result<T, CliError> {
    thread_local! {
        static READING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        let before = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !READING.with(std::cell::Cell::get) {
                before(info);
            }
        }));
    });
    READING.with(|r| r.set(true));
    let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read));
    READING.with(|r| r.set(false));
    answer.map_err(|_| file_error(path, "not a readable Parquet file (damaged)"))
}

/// A library error as one line about `path`.
fn file_error(path: &Path, e: impl std::fmt::Display) -> CliError {
    CliError::File {
        path: path.to_path_buf(),
        what: e.to_string().replace('\n', " "),
    }
}

/// One record batch of a Parquet input: the symbol columns as `f64` arrays (in symbol
/// order) and the pass-through columns as read.
pub(super) struct ArrowChunk {
    pub symbols: Vec<Float64Array>,
    pub passed: Vec<ArrayRef>,
    /// The 0-based index of the chunk's first data row.
    pub first_row: u64,
    pub len: usize,
}

/// An opened Parquet input: its top-level column names and a reader of the projection.
pub(super) struct ParquetInput {
    /// Every top-level column's name, in file order.
    pub header: Vec<String>,
    /// Every top-level column's field, in file order.
    fields: Vec<FieldRef>,
    builder: ParquetRecordBatchReaderBuilder<File>,
    /// Data rows, from the footer (for the progress bar).
    pub rows: u64,
}

/// Opens a Parquet file and reads its footer.
///
/// # Errors
/// An unreadable file; one that is not Parquet (no footer, a damaged one).
pub(super) fn open(path: &Path) -> Result<ParquetInput, CliError> {
    if path == Path::new("-") {
        return Err(file_error(
            path,
            "Parquet input must be a file, not stdin (its footer is at the end)",
        ));
    }
    let file = File::open(path).map_err(CliError::io(path))?;
    let builder = unpanicked(path, || ParquetRecordBatchReaderBuilder::try_new(file))?
        .map_err(|e| file_error(path, format!("not a readable Parquet file: {e}")))?;
    let fields: Vec<FieldRef> = builder.schema().fields().iter().cloned().collect();
    let rows = u64::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    Ok(ParquetInput {
        header: fields.iter().map(|f| f.name().clone()).collect(),
        fields,
        builder,
        rows,
    })
}

impl ParquetInput {
    /// Checks that every symbol column is numeric (before any output is written).
    ///
    /// # Errors
    /// A symbol column whose type is not numeric.
    pub fn check_numeric(&self, path: &Path, symbol_columns: &[usize]) -> Result<(), CliError> {
        for &k in symbol_columns {
            let f = &self.fields[k];
            if !f.data_type().is_numeric() {
                return Err(file_error(
                    path,
                    format!(
                        "column {} `{}` holds {}, not numbers",
                        k + 1,
                        f.name(),
                        f.data_type()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A reader of the symbol and pass-through columns in batches of `chunk` rows.
    ///
    /// # Errors
    /// The reader cannot be built.
    pub fn reader(
        self,
        path: &Path,
        symbol_columns: &[usize],
        passed: &[usize],
        chunk: usize,
    ) -> Result<ParquetReader, CliError> {
        let mut selected: Vec<usize> = symbol_columns.iter().chain(passed).copied().collect();
        selected.sort_unstable();
        let position = |k: usize| selected.binary_search(&k).unwrap_or(0);
        let mask = ProjectionMask::roots(self.builder.parquet_schema(), selected.iter().copied());
        let builder = self.builder.with_projection(mask).with_batch_size(chunk);
        let reader = unpanicked(path, || builder.build())?.map_err(|e| file_error(path, e))?;
        Ok(ParquetReader {
            reader,
            symbols: symbol_columns.iter().map(|&k| position(k)).collect(),
            symbol_columns: symbol_columns.to_vec(),
            names: self.header,
            passed: passed.iter().map(|&k| position(k)).collect(),
            path: path.to_path_buf(),
        })
    }

    /// The fields of columns `passed`, for a Parquet output.
    pub fn passed_fields(&self, passed: &[usize]) -> Vec<FieldRef> {
        passed.iter().map(|&k| self.fields[k].clone()).collect()
    }
}

/// Reads record batches and hands them on as [`ArrowChunk`]s.
pub(super) struct ParquetReader {
    reader: ParquetRecordBatchReader,
    /// Each symbol's column within a batch of the projection.
    symbols: Vec<usize>,
    /// Each symbol's column in the file (for messages).
    symbol_columns: Vec<usize>,
    names: Vec<String>,
    /// Each pass-through column within a batch.
    passed: Vec<usize>,
    path: PathBuf,
}

impl ParquetReader {
    /// The reader thread: sends one chunk per record batch; stops at the end, at the
    /// first error (sent), or when the receiver has gone.
    pub fn read_chunks(self, to_compute: &mpsc::SyncSender<Result<Chunk, CliError>>) {
        let mut first_row = 0u64;
        let mut reader = self.reader;
        loop {
            let Some(batch) = unpanicked(&self.path, || reader.next()).transpose() else {
                return;
            };
            let chunk = batch
                .and_then(|b| b.map_err(|e| file_error(&self.path, e)))
                .and_then(|b| {
                    let len = b.num_rows();
                    let symbols = self
                        .symbols
                        .iter()
                        .zip(&self.symbol_columns)
                        .map(|(&i, &k)| {
                            numbers(b.column(i), &self.path, first_row, k, &self.names[k])
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    let passed = self.passed.iter().map(|&i| b.column(i).clone()).collect();
                    Ok(ArrowChunk {
                        symbols,
                        passed,
                        first_row,
                        len,
                    })
                });
            let failed = chunk.is_err();
            if let Ok(c) = &chunk {
                first_row += c.len as u64;
            }
            if to_compute.send(chunk.map(Chunk::Arrow)).is_err() || failed {
                return;
            }
        }
    }
}

/// A symbol column as `f64`s; a null is an error naming its (1-based) row.
fn numbers(
    column: &ArrayRef,
    path: &Path,
    first_row: u64,
    k: usize,
    name: &str,
) -> Result<Float64Array, CliError> {
    let cast = arrow_cast::cast(column, &DataType::Float64).map_err(|e| file_error(path, e))?;
    // The cast turns a value it cannot convert into a null, so this check covers both.
    if let Some(r) = (0..cast.len()).find(|&r| cast.is_null(r)) {
        let what = if column.is_null(r) {
            "a null is not a number".to_string()
        } else {
            format!("{} does not convert to f64", column.data_type())
        };
        return Err(CliError::Value {
            path: path.to_path_buf(),
            row: first_row + r as u64 + 1,
            column: k + 1,
            name: name.to_string(),
            what,
        });
    }
    Ok(cast.as_primitive::<Float64Type>().clone())
}

/// Copies the symbol columns of `c` into `inputs`.
pub(super) fn fill_inputs(c: &ArrowChunk, inputs: &mut [Vec<f64>]) {
    for (column, array) in inputs.iter_mut().zip(&c.symbols) {
        column[..c.len].copy_from_slice(array.values());
    }
}

/// Formats pass-through cells of a Parquet input for a CSV output (Arrow's display form;
/// a null is an empty cell).
pub(super) struct CellText<'a> {
    formatters: Vec<arrow_cast::display::ArrayFormatter<'a>>,
}

impl<'a> CellText<'a> {
    /// Formatters for every pass-through column of `c`.
    ///
    /// # Errors
    /// A column type Arrow cannot display.
    pub fn new(c: &'a ArrowChunk, path: &Path) -> Result<Self, CliError> {
        let options = arrow_cast::display::FormatOptions::default();
        let formatters = c
            .passed
            .iter()
            .map(|a| arrow_cast::display::ArrayFormatter::try_new(a.as_ref(), &options))
            .collect::<Result<_, _>>()
            .map_err(|e| file_error(path, e))?;
        Ok(CellText { formatters })
    }

    /// Writes column `j`'s cell of row `r` into `buf` (cleared first).
    pub fn cell(&self, j: usize, r: usize, buf: &mut String) {
        use std::fmt::Write as _;
        buf.clear();
        let _ = write!(buf, "{}", self.formatters[j].value(r));
    }
}

/// A Parquet output: the schema and an [`ArrowWriter`] writing row groups as they fill.
pub(super) struct ParquetOutput {
    writer: ArrowWriter<Box<dyn Write + Send>>,
    schema: SchemaRef,
    path: PathBuf,
}

impl ParquetOutput {
    /// Starts a file with the pass-through `passed` fields, then one non-null `Float64`
    /// column per name of `results`.
    ///
    /// # Errors
    /// The writer cannot be created (a type Parquet cannot store).
    pub fn new(
        out: Box<dyn Write + Send>,
        path: &Path,
        passed: Vec<FieldRef>,
        results: &[String],
    ) -> Result<Self, CliError> {
        let fields: Vec<FieldRef> = passed
            .into_iter()
            .chain(
                results
                    .iter()
                    .map(|n| Arc::new(Field::new(n, DataType::Float64, false))),
            )
            .collect();
        let schema = Arc::new(Schema::new(fields));
        // Derivatives rarely repeat: a dictionary would cost time and memory for nothing.
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_size(ROW_GROUP)
            .set_dictionary_enabled(false)
            .build();
        let writer = ArrowWriter::try_new(out, schema.clone(), Some(props))
            .map_err(|e| file_error(path, e))?;
        Ok(ParquetOutput {
            writer,
            schema,
            path: path.to_path_buf(),
        })
    }

    /// The pass-through field of a CSV column: its cells as text.
    pub fn text_field(name: &str) -> FieldRef {
        Arc::new(Field::new(name, DataType::Utf8, false))
    }

    /// Writes one chunk: its pass-through columns (from a Parquet input as read, from a
    /// CSV one as text) and the result columns, `columns[j]` naming the computed column
    /// of output `j` (`None`: a structural zero).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(
        &mut self,
        chunk: &Chunk,
        passed: &[usize],
        results: &[&[f64]],
        columns: &[Option<usize>],
        len: usize,
    ) -> Result<(), CliError> {
        let mut arrays: Vec<ArrayRef> = match chunk {
            Chunk::Arrow(c) => c.passed.clone(),
            Chunk::Csv(c) => passed.iter().map(|&k| text_column(c, k)).collect(),
        };
        arrays.extend(columns.iter().map(|col| -> ArrayRef {
            Arc::new(match col {
                Some(k) => Float64Array::from(results[*k][..len].to_vec()),
                None => Float64Array::from(vec![0.0; len]),
            })
        }));
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| file_error(&self.path, e))?;
        self.writer
            .write(&batch)
            .map_err(|e| file_error(&self.path, e))
    }

    /// Writes the last row group and the footer.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn finish(mut self) -> Result<(), CliError> {
        self.writer
            .finish()
            .map_err(|e| file_error(&self.path, e))?;
        self.writer
            .inner_mut()
            .flush()
            .map_err(CliError::io(&self.path))
    }
}

/// Column `k` of a CSV chunk as text (invalid UTF-8 replaced).
fn text_column(c: &CsvChunk, k: usize) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(
        (0..c.len).map(|r| String::from_utf8_lossy(c.field(r, k))),
    ))
}
