//! Saving and loading: an equation, its prepared lanes and its kernels in one checked file.
//!
//! [`Equation::save`] writes what the equation has prepared so far — the symbols, the model
//! graph, every lane built (with its Jacobian pattern and Hessian colouring), its options
//! and, where [`Options::retain_object`] kept it, each kernel's machine code — and
//! [`Equation::load`] reads it back without the model closure: nothing is rebuilt, and a
//! kernel made for this host by this build answers at once. The file format is
//! [`format`]'s; the in-memory forms [`Equation::to_bytes`] and [`Equation::from_bytes`]
//! are the same bytes.
//!
//! **Invariants.**
//! - Loading trusts nothing in the bytes: every length, count, index and structure is
//!   checked before it is used (see [`format`]), so no file makes a later call panic,
//!   loop or allocate without bound.
//! - Stored code runs only when its key — the BLAKE3 hash of the lane graph, the kernel's
//!   shape and level, the host (CPU and its features) and this build's code generator, as
//!   `cache_dir` entries are keyed — is the key this process gives the loaded lane; any
//!   other kernel is never run, and its lane compiles instead.
//! - A save never leaves a torn file: it writes a temporary file in the same directory
//!   and renames it over the path.
//!
//! The checksum detects damage, not forgery: a file's machine code is run when its key
//! matches, so load equations with kernels only from sources as trusted as the program's
//! own executables (an equation saved without kernels is data, and safe to load from
//! anywhere).

pub(crate) mod format;
#[cfg(test)]
mod tests;

use crate::equation::{Equation, ModelOutput, Shape};
use crate::options::OptLevel;
use crate::prepared::PreparedLanes;
use ddx_ir::words::count;
use ddx_ir::{Error, LaneKind, Model};
use format::{Decoded, Parts};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// A kernel's machine code as a file holds it.
#[derive(Clone, Debug)]
pub(crate) struct StoredKernel {
    /// The lane it answers (of the variant the saved options select).
    pub(crate) kind: LaneKind,
    /// The tier's optimisation level.
    pub(crate) level: OptLevel,
    /// The `cache_dir` key it was made for (see the module doc).
    pub(crate) key: [u8; 32],
    /// The host fingerprint hashed into that key, kept for messages and tests.
    #[allow(dead_code)]
    pub(crate) fingerprint: String,
    /// The relocation-free code.
    pub(crate) code: Vec<u8>,
}

fn io(path: &Path, what: &str, e: &std::io::Error) -> Error {
    Error::ArchiveIo {
        path: path.to_path_buf(),
        detail: format!("{what}: {e}"),
    }
}

fn read(path: &Path) -> Result<Vec<u8>, Error> {
    read_regular(path).map_err(|e| io(path, "cannot read", &e))
}

/// The bytes of the regular file at `path` (links followed). Anything else — a directory,
/// a FIFO, a device such as `/dev/zero` that never ends — is refused with
/// [`std::io::ErrorKind::InvalidInput`] instead of being read until memory runs out; the
/// buffer is reserved for the file's length with `try_reserve`, so a length past memory is
/// [`std::io::ErrorKind::OutOfMemory`], not an abort. Saved equations and JIT cache entries
/// are read through it.
pub(crate) fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let len = usize::try_from(meta.len()).map_err(|_| Error::from(ErrorKind::OutOfMemory))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(len)
        .map_err(|_| Error::from(ErrorKind::OutOfMemory))?;
    // At most the length read above: a file that grows meanwhile fails its checksum.
    file.take(meta.len()).read_to_end(&mut bytes)?;
    Ok(bytes)
}

fn mismatch(path: &Path, detail: String) -> Error {
    Error::ArchiveMismatch {
        path: path.to_path_buf(),
        detail,
    }
}

/// How `file` differs from `model`, or `None` when they are the same equation: the same
/// symbols, outputs and graph, node for node.
fn difference(file: &Model, model: &Model) -> Option<String> {
    if file.symbols() != model.symbols() {
        return Some(format!(
            "the file's symbols are {:?}, the equation's {:?}",
            file.symbols(),
            model.symbols()
        ));
    }
    if file.parameters() != model.parameters() {
        return Some(format!(
            "the file's parameters are {:?}, the equation's {:?}",
            file.parameters(),
            model.parameters()
        ));
    }
    if file.outputs().len() != model.outputs().len() {
        return Some(format!(
            "the file has {}, the equation {}",
            count(file.outputs().len(), "output"),
            model.outputs().len()
        ));
    }
    let (a, b) = (file.graph().nodes(), model.graph().nodes());
    if let Some(i) = (0..a.len().min(b.len())).find(|&i| a[i] != b[i]) {
        return Some(format!("the model graphs differ from node n{i} on"));
    }
    if a.len() != b.len() || file.outputs() != model.outputs() {
        return Some(format!(
            "the model graphs differ ({} nodes in the file, {} in the equation)",
            a.len(),
            b.len()
        ));
    }
    None
}

/// Why a file of `scalar` shape cannot be loaded as `S`.
fn shape_mismatch<S: Shape>(d: &Decoded, path: &Path) -> Option<Error> {
    (d.scalar != S::SCALAR).then(|| {
        let held = if d.scalar {
            "a scalar equation".to_string()
        } else {
            format!("a system of {} functions", d.model.outputs().len())
        };
        let asked = if S::SCALAR { "Scalar" } else { "System" };
        mismatch(
            path,
            format!("the file holds {held}; asked for Equation<{asked}>"),
        )
    })
}

impl<S: Shape> Equation<S> {
    /// This equation as the bytes [`Equation::save`] writes: symbols, parameters and their
    /// bound values (if bound: loading gives the equation bound to them), model graph, every
    /// lane prepared so far (with its Jacobian pattern and Hessian colouring), the options
    /// (less [`Options::cache_dir`] and [`Options::device`], which are the machine's), and
    /// each kernel answering now whose code [`Options::retain_object`] kept.
    ///
    /// # Errors
    /// None in practice: [`Error::ArchiveIo`] if the encoder fails.
    ///
    /// [`Options::cache_dir`]: crate::Options::cache_dir
    /// [`Options::device`]: crate::Options::device
    /// [`Options::retain_object`]: crate::Options::retain_object
    pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        self.encode(Path::new(""))
    }

    fn encode(&self, path: &Path) -> Result<Vec<u8>, Error> {
        let core = &self.lanes;
        let kernels = self.jit.saved(core);
        let mut options = self.options().clone();
        options.cache_dir = None;
        options.device = None;
        format::encode(
            &Parts {
                scalar: S::SCALAR,
                model: &core.model,
                lanes: core.prepared_lanes().collect(),
                options: &options,
                kernels: &kernels,
                bound: self.bound_params(),
            },
            path,
        )
    }

    /// The equation held by `bytes` (as [`Equation::to_bytes`] made them), with the
    /// options it was saved under; [`Equation::loaded`] is true. Nothing is rebuilt: the
    /// lanes saved are answered from as they are, and each saved kernel that was made for
    /// this host by this build answers at once ([`Equation::uses_kernel`] is true,
    /// [`JitStatus::loaded`](crate::JitStatus::loaded) counts it). Any other kernel is
    /// never run (counted in [`JitStatus::refused`](crate::JitStatus::refused)). Loading
    /// asks nothing of the compiler: under [`Backend::Compile`](crate::Backend::Compile) a
    /// lane without a kernel of its own compiles when it is first called (or waited for),
    /// as any lane first used after the options were set does.
    ///
    /// # Errors
    /// - [`Error::BadArchive`]: not a ddx equation, or a format version this build does
    ///   not read;
    /// - [`Error::ArchiveCorrupt`]: the length, checksum or structure does not hold;
    /// - [`Error::ArchiveMismatch`]: a scalar equation read as a system, or the other way
    ///   round.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        Self::decode(bytes, Path::new(""))
    }

    fn decode(bytes: &[u8], path: &Path) -> Result<Self, Error> {
        let d = format::decode(bytes, path)?;
        if let Some(e) = shape_mismatch::<S>(&d, path) {
            return Err(e);
        }
        Ok(Self::from_decoded(d))
    }

    fn from_decoded(d: Decoded) -> Self {
        let core = Arc::new(PreparedLanes::with_lanes(d.model, d.lanes));
        // Nothing is asked of the compiler now: a lane without a (matching) kernel
        // compiles when it is first called, as a lane first prepared after the options
        // were set does.
        let jit = crate::jit::Jit::with_saved(&d.options, &core, &[], &d.kernels);
        let mut eq = Equation::from_parts(core, d.options, jit);
        if let Some(b) = d.bound {
            // Checked against the parameter count when decoded.
            eq.bound = b.into();
        }
        eq
    }

    /// Writes this equation to `path` ([`Equation::to_bytes`]'s bytes), replacing any file
    /// there. The bytes go to a temporary file in the same directory, which is then
    /// renamed over `path`: a reader sees the old file or the new one, never part of one.
    ///
    /// # Errors
    /// [`Error::ArchiveIo`] with the system's message when the file cannot be written (the
    /// file at `path`, if any, is then as it was).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        let bytes = self.encode(path)?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut tmp = tempfile::Builder::new()
            .prefix(".ddx-save-")
            .suffix(".tmp")
            .tempfile_in(dir)
            .map_err(|e| io(path, "cannot make a temporary file beside it", &e))?;
        tmp.write_all(&bytes)
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(|e| io(path, "cannot write", &e))?;
        tmp.persist(path)
            .map_err(|e| io(path, "cannot put the file in place", &e.error))?;
        Ok(())
    }

    /// The equation saved at `path`; see [`Equation::from_bytes`].
    ///
    /// # Errors
    /// [`Error::ArchiveIo`] when the file cannot be read; otherwise those of
    /// [`Equation::from_bytes`], naming `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        Self::decode(&read(path)?, path)
    }

    /// Whether the file at `path` holds *this* equation: one this build reads, of this
    /// shape, over the same symbols and the same model graph, node for node. (Which lanes
    /// and kernels it holds does not matter.) [`verify`](crate::verify) asks only
    /// whether the file can be read.
    ///
    /// # Errors
    /// Those of [`Equation::load`]; [`Error::ArchiveMismatch`] when the file holds another
    /// equation, saying what differs.
    pub fn verify(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        let d = format::decode(&read(path)?, path)?;
        if let Some(e) = shape_mismatch::<S>(&d, path) {
            return Err(e);
        }
        match difference(&d.model, self.model()) {
            Some(what) => Err(mismatch(path, what)),
            None => Ok(()),
        }
    }

    /// Whether this equation was loaded from a saved one ([`Equation::load`],
    /// [`Equation::from_bytes`], or a [`rt::equation_cached`](crate::rt::equation_cached)
    /// whose file still described the model) rather than built from its model. Clones
    /// keep it.
    pub fn loaded(&self) -> bool {
        self.loaded
    }
}

/// Whether this build can read the equation file at `path` at all: its magic, version,
/// checksum and every part of its structure are checked, as a load would. Whether it
/// holds a scalar equation or a system, and which, is not asked: see
/// [`Equation::verify`].
///
/// # Errors
/// [`Error::ArchiveIo`], [`Error::BadArchive`] or [`Error::ArchiveCorrupt`], as
/// [`Equation::load`].
pub fn verify(path: impl AsRef<Path>) -> Result<(), Error> {
    let path = path.as_ref();
    format::decode(&read(path)?, path).map(drop)
}

/// See [`crate::rt::equation_cached`].
pub(crate) fn equation_cached<R: ModelOutput>(
    path: &Path,
    model: impl FnOnce() -> R,
) -> Result<Equation<R::Shape>, Error> {
    let built = ddx_ir::build(|| model().into_exprs())?;
    if let Ok(bytes) = read_regular(path) {
        if let Ok(d) = format::decode(&bytes, path) {
            if d.scalar == <R::Shape as Shape>::SCALAR && difference(&d.model, &built).is_none() {
                return Ok(Equation::from_decoded(d));
            }
        }
    }
    let eq = Equation::from_model(built);
    eq.prepared(LaneKind::Value);
    eq.prepared(LaneKind::Jacobian);
    eq.save(path)?;
    Ok(eq)
}
