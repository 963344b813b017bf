//! Every failure the command line reports: one value per kind, each displaying as one line
//! that names the file, row and column where there are any (a parse error adds ddx's caret
//! display under its line). `main` prints it after `ddx: ` on stderr and exits with
//! [`CliError::exit_code`]; nothing here or anywhere in the binary panics on input.

use std::path::{Path, PathBuf};

/// A failure of one `ddx` command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// ddx refused the expression, the point or a call (its message carries the code, and
    /// for a parse error the caret display).
    #[error("{0}")]
    Ddx(#[from] ddx::Error),
    /// A command-line argument that clap accepted but whose content is wrong.
    #[error("argument `{arg}`: {what}")]
    Argument {
        /// The argument as given.
        arg: String,
        /// What is wrong with it.
        what: String,
    },
    /// A file could not be opened, read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A CSV file is malformed as a whole (no header, a symbol with no column).
    #[error("{}: {what}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// One record of a CSV file is malformed (a short row, a bad quote, invalid UTF-8).
    #[error("{}: row {row} (line {line}): {what}", path.display())]
    Row {
        /// The file.
        path: PathBuf,
        /// The 1-based data row (the header is row 0).
        row: u64,
        /// The 1-based line of the file.
        line: u64,
        /// What is wrong.
        what: String,
    },
    /// One cell of a CSV file is not a number.
    #[error(
        "{}: row {row} (line {line}), column {column} `{name}`: `{cell}` is not a number",
        path.display()
    )]
    Cell {
        /// The file.
        path: PathBuf,
        /// The 1-based data row.
        row: u64,
        /// The 1-based line of the file.
        line: u64,
        /// The 1-based column.
        column: usize,
        /// The column's header.
        name: String,
        /// The cell as written.
        cell: String,
    },
    /// One cell of a Parquet file is not a number (a null, or a value `f64` cannot hold).
    #[cfg(feature = "parquet")]
    #[error("{}: row {row}, column {column} `{name}`: {what}", path.display())]
    Value {
        /// The file.
        path: PathBuf,
        /// The 1-based data row.
        row: u64,
        /// The 1-based column.
        column: usize,
        /// The column's name.
        name: String,
        /// What is wrong.
        what: String,
    },
    /// A fit failed: it diverged, or its start or data give non-finite residuals.
    #[error("{0}")]
    Fit(#[from] ddx_fit::FitError),
    /// A NIST StRD file could not be read or its model built.
    #[error("{0}")]
    Nist(#[from] ddx_models::nist::NistError),
    /// The plot could not be drawn.
    #[error("{}: cannot draw the plot: {what}", path.display())]
    Plot {
        /// The SVG file.
        path: PathBuf,
        /// What the plotting library reported.
        what: String,
    },
}

impl CliError {
    /// The process exit status for this failure: always nonzero (`1`; clap's own usage
    /// errors exit with `2`).
    pub fn exit_code(&self) -> u8 {
        1
    }

    /// An I/O failure on `path`.
    pub fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CliError + '_ {
        move |source| CliError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// A bad argument.
    pub fn argument(arg: &str, what: impl Into<String>) -> CliError {
        CliError::Argument {
            arg: arg.to_string(),
            what: what.into(),
        }
    }
}

/// Writes `text` to stdout: a closed pipe (`ddx … | head`) or a full disk is an error
/// value, not the panic `print!` would raise.
pub fn emit(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(CliError::io(Path::new("stdout")))
}
