//! The `cache_dir` store: compiled kernels kept between runs.
//!
//! An entry is one file, `<key>.ddxk`, named by the hex of its [`Key`]: a BLAKE3 hash of
//! everything the machine code depends on — this format's version and ddx's, the build's
//! code generator ([`build_identity`]: the source of the lowering, the compiler set-up,
//! the kernel calling code and `ddx_ir::math`), the lane graph (every node, the outputs,
//! the input counts), the kernel's shape and optimisation level, the math table's layout,
//! and the host (target triple, code generator, every CPU feature flag and setting it
//! compiles with). Layout, little-endian:
//!
//! | bytes | holds |
//! |---|---|
//! | 0..8 | magic `DDXJITK\0` |
//! | 8..12 | format version (`u32`) |
//! | 12..44 | the key again |
//! | 44..52 | code length (`u64`) |
//! | 52..84 | BLAKE3 checksum of bytes 0..52 followed by the code |
//! | 84.. | the code |
//!
//! **Invariant: only a valid entry is run.** [`read`] checks the length, magic, version,
//! key, code length and checksum before answering any code; anything else is
//! [`Entry::Refused`] and the caller compiles (and rewrites the entry). Entries are written
//! to a temporary file and renamed into place, so a reader never sees half an entry from
//! a live writer.
//!
//! The checksum detects accidents (a torn or damaged file), not forgery: whoever can write
//! the directory can write an entry with a correct checksum, and its code is run. The
//! directory must be trusted like the program's own executable files.
//!
//! A directory that cannot be read or written is [`Entry::Unreadable`] / a [`write`] error
//! ([`Error::JitCache`]): reported in the status, never counted as a refused entry.

use super::lower::Shape;
use crate::options::OptLevel;
use ddx_ir::math::MathTable;
use ddx_ir::{Error, Lane, Node};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

const MAGIC: &[u8; 8] = b"DDXJITK\0";
const VERSION: u32 = 1;
const HEADER: usize = 84;

/// The sources whose text decides the machine code made for a graph, besides the graph:
/// a development build that changes any of them changes [`build_identity`], and so every
/// key, even when ddx's version number stays the same.
const CODEGEN_SOURCES: [&str; 7] = [
    include_str!("lower.rs"),
    include_str!("dots.rs"),
    include_str!("reroll.rs"),
    include_str!("slp.rs"),
    include_str!("compile.rs"),
    include_str!("kernel.rs"),
    ddx_ir::math::SOURCE,
];

/// The identity of `sources`: a BLAKE3 hash of each one's length and text, in order.
fn identity(sources: &[&str]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    for s in sources {
        h.update(&(s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    }
    *h.finalize().as_bytes()
}

/// This build's code generator: the identity of [`CODEGEN_SOURCES`], hashed on first use.
pub(crate) fn build_identity() -> &'static [u8; 32] {
    static ID: OnceLock<[u8; 32]> = OnceLock::new();
    ID.get_or_init(|| identity(&CODEGEN_SOURCES))
}

/// What an entry is for: a hash of everything its code depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key([u8; 32]);

impl Key {
    /// The key of `lane` compiled as `shape` at `level` on the host `fingerprint` by this
    /// build's code generator.
    pub(crate) fn new(lane: &Lane, shape: Shape, level: OptLevel, fingerprint: &str) -> Key {
        Key::for_build(lane, shape, level, fingerprint, build_identity())
    }

    /// The key of `lane` as [`Key::new`] makes it, for the code generator `build`.
    fn for_build(
        lane: &Lane,
        shape: Shape,
        level: OptLevel,
        fingerprint: &str,
        build: &[u8; 32],
    ) -> Key {
        let mut h = blake3::Hasher::new();
        let text = |h: &mut blake3::Hasher, s: &str| {
            h.update(&(s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        };
        text(&mut h, "ddx jit kernel");
        text(&mut h, env!("CARGO_PKG_VERSION"));
        h.update(build);
        text(&mut h, fingerprint);
        for op in MathTable::UNARY_OPS
            .iter()
            .chain(&MathTable::BINARY_OPS)
            .chain(&MathTable::TERNARY_OPS)
        {
            text(&mut h, op.name());
        }
        text(&mut h, lane.kind.name());
        h.update(&VERSION.to_le_bytes());
        h.update(&[shape.tag(), level_tag(level)]);
        // The kernel reads `seed_base()` inputs before the seeds, whichever of them are
        // parameters: the code depends on the block's layout, not on which are differentiated.
        for n in [
            lane.seed_base(),
            lane.seeds,
            lane.graph.len(),
            lane.outputs.len(),
        ] {
            h.update(&(n as u64).to_le_bytes());
        }
        // The nodes and outputs as one buffer, hashed at once: the same bytes as one
        // `update` per field, without a call per field.
        let mut buf = Vec::with_capacity(lane.graph.len() * 14 + lane.outputs.len() * 4);
        for node in lane.graph.nodes() {
            match *node {
                Node::Const(c) => {
                    buf.push(0);
                    buf.extend_from_slice(&c.value().to_bits().to_le_bytes());
                }
                Node::Symbol(s) => {
                    buf.push(1);
                    buf.extend_from_slice(&s.0.to_le_bytes());
                }
                Node::Seed(s) => {
                    buf.push(2);
                    buf.extend_from_slice(&s.0.to_le_bytes());
                }
                Node::Apply(op, _) => {
                    buf.extend_from_slice(&[3, op as u8]);
                    for a in node.args() {
                        buf.extend_from_slice(&a.0.to_le_bytes());
                    }
                }
            }
        }
        for o in &lane.outputs {
            buf.extend_from_slice(&o.0.to_le_bytes());
        }
        h.update(&buf);
        Key(*h.finalize().as_bytes())
    }

    /// The hash itself (a saved equation stores it beside each kernel's code).
    pub(crate) fn bytes(&self) -> [u8; 32] {
        self.0
    }

    fn file(&self, dir: &Path) -> PathBuf {
        let mut name = String::with_capacity(69);
        for b in self.0 {
            name.push_str(&format!("{b:02x}"));
        }
        name.push_str(".ddxk");
        dir.join(name)
    }
}

fn level_tag(level: OptLevel) -> u8 {
    match level {
        OptLevel::Off => 0,
        OptLevel::Speed => 1,
    }
}

/// What the cache holds for a key.
#[derive(Debug)]
pub(crate) enum Entry {
    /// No entry.
    Absent,
    /// An entry that is not valid for the key (damaged, truncated, foreign, other version).
    Refused,
    /// The code of a valid entry.
    Valid(Vec<u8>),
    /// The entry could not be read for a reason other than its absence (the directory is
    /// a file, or not readable): [`Error::JitCache`].
    Unreadable(Error),
}

/// Reads and validates the entry for `key` in `dir`.
pub(crate) fn read(dir: &Path, key: &Key) -> Entry {
    let file = key.file(dir);
    match crate::archive::read_regular(&file) {
        Ok(bytes) => match validate(&bytes, key) {
            Some(()) => Entry::Valid(bytes[HEADER..].to_vec()),
            None => Entry::Refused,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Entry::Absent,
        Err(e) => Entry::Unreadable(failure(&file, "cannot read the entry", &e)),
    }
}

fn failure(path: &Path, what: &str, e: &std::io::Error) -> Error {
    Error::JitCache {
        path: path.to_path_buf(),
        detail: format!("{what}: {e}"),
    }
}

/// `Some` when `bytes` is a complete, intact entry for `key`.
fn validate(bytes: &[u8], key: &Key) -> Option<()> {
    let header = bytes.get(..HEADER)?;
    let code = &bytes[HEADER..];
    let version = u32::from_le_bytes(header[8..12].try_into().ok()?);
    let len = u64::from_le_bytes(header[44..52].try_into().ok()?);
    let ok = &header[..8] == MAGIC
        && version == VERSION
        && header[12..44] == key.0
        && u64::try_from(code.len()).ok()? == len
        && !code.is_empty()
        && header[52..84] == checksum(&header[..52], code);
    ok.then_some(())
}

fn checksum(header: &[u8], code: &[u8]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(header);
    h.update(code);
    *h.finalize().as_bytes()
}

/// Writes the entry for `key` holding `code` into `dir` (made if missing), replacing any
/// entry there.
///
/// # Errors
/// [`Error::JitCache`] for any I/O error; the cache is then left as it was.
pub(crate) fn write(dir: &Path, key: &Key, code: &[u8]) -> Result<(), Error> {
    static UNIQUE: AtomicU64 = AtomicU64::new(0);
    if dir.exists() && !dir.is_dir() {
        return Err(Error::JitCache {
            path: dir.to_path_buf(),
            detail: "the path exists and is not a directory".into(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|e| failure(dir, "cannot make the directory", &e))?;
    let mut bytes = Vec::with_capacity(HEADER + code.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&key.0);
    bytes.extend_from_slice(&(code.len() as u64).to_le_bytes());
    let sum = checksum(&bytes, code);
    bytes.extend_from_slice(&sum);
    bytes.extend_from_slice(code);
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::File::create(&tmp).and_then(|mut f| {
        f.write_all(&bytes)?;
        f.sync_all()
    });
    let file = key.file(dir);
    let placed = written.and_then(|()| std::fs::rename(&tmp, &file));
    if placed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    placed.map_err(|e| failure(&file, "cannot write the entry", &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every module the lowering imports (`use super::…` in `lower.rs`) is part of the code
    /// generator's identity, so that a change in it changes every cache key (`reroll.rs`,
    /// which decides which loops a kernel holds, was missing).
    #[test]
    fn the_identity_covers_every_module_the_lowering_uses() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/jit");
        let lower = std::fs::read_to_string(dir.join("lower.rs")).expect("reads lower.rs");
        let mut modules = 0;
        for line in lower.lines().filter_map(|l| l.strip_prefix("use super::")) {
            let name: String = line
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let text = std::fs::read_to_string(dir.join(format!("{name}.rs")))
                .unwrap_or_else(|e| panic!("{name}.rs: {e}"));
            assert!(
                CODEGEN_SOURCES.contains(&text.as_str()),
                "{name}.rs is not in CODEGEN_SOURCES"
            );
            modules += 1;
        }
        assert!(modules >= 1, "lower.rs imports no sibling module");
    }

    fn key(b: u8) -> Key {
        Key([b; 32])
    }

    #[test]
    fn entries_round_trip_and_damage_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let k = key(7);
        assert!(matches!(read(dir.path(), &k), Entry::Absent));
        write(dir.path(), &k, &[1, 2, 3, 4]).expect("writes");
        assert!(matches!(read(dir.path(), &k), Entry::Valid(c) if c == [1, 2, 3, 4]));
        let file = k.file(dir.path());
        let good = std::fs::read(&file).expect("reads");
        // Every single flipped byte, and every truncation, is refused.
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            std::fs::write(&file, &bad).expect("writes");
            assert!(matches!(read(dir.path(), &k), Entry::Refused), "byte {i}");
            std::fs::write(&file, &good[..i]).expect("writes");
            assert!(matches!(read(dir.path(), &k), Entry::Refused), "cut at {i}");
        }
        // An intact entry for another key, placed under this key's name, is refused.
        write(dir.path(), &key(8), &[1, 2, 3, 4]).expect("writes");
        std::fs::copy(key(8).file(dir.path()), &file).expect("copies");
        assert!(matches!(read(dir.path(), &k), Entry::Refused));
    }
}
