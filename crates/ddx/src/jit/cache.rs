//! The `cache_dir` store: compiled kernels kept between runs.
//!
//! An entry is one file, `<key>.ddxk`, named by the hex of its [`Key`]: a BLAKE3 hash of
//! everything the machine code depends on — this format's version and ddx's, the lane graph
//! (every node, the outputs, the input counts), the kernel's shape and optimisation level,
//! the math table's layout, and the host (target triple, code generator, every CPU feature
//! flag it compiles for). Layout, little-endian:
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

use super::lower::Shape;
use crate::options::OptLevel;
use ddx_ir::math::MathTable;
use ddx_ir::{Lane, Node};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const MAGIC: &[u8; 8] = b"DDXJITK\0";
const VERSION: u32 = 1;
const HEADER: usize = 84;

/// What an entry is for: a hash of everything its code depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key([u8; 32]);

impl Key {
    /// The key of `lane` compiled as `shape` at `level` on the host `fingerprint`.
    pub(crate) fn new(lane: &Lane, shape: Shape, level: OptLevel, fingerprint: &str) -> Key {
        let mut h = blake3::Hasher::new();
        let mut text = |s: &str| {
            h.update(&(s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        };
        text("ddx jit kernel");
        text(env!("CARGO_PKG_VERSION"));
        text(fingerprint);
        for op in MathTable::UNARY_OPS
            .iter()
            .chain(&MathTable::BINARY_OPS)
            .chain(&MathTable::TERNARY_OPS)
        {
            text(op.name());
        }
        text(lane.kind.name());
        h.update(&VERSION.to_le_bytes());
        h.update(&[shape.tag(), level_tag(level)]);
        for n in [
            lane.symbols,
            lane.seeds,
            lane.graph.len(),
            lane.outputs.len(),
        ] {
            h.update(&(n as u64).to_le_bytes());
        }
        for node in lane.graph.nodes() {
            match *node {
                Node::Const(c) => {
                    h.update(&[0]);
                    h.update(&c.value().to_bits().to_le_bytes());
                }
                Node::Symbol(s) => {
                    h.update(&[1]);
                    h.update(&s.0.to_le_bytes());
                }
                Node::Seed(s) => {
                    h.update(&[2]);
                    h.update(&s.0.to_le_bytes());
                }
                Node::Apply(op, _) => {
                    h.update(&[3, op as u8]);
                    for a in node.args() {
                        h.update(&a.0.to_le_bytes());
                    }
                }
            }
        }
        for o in &lane.outputs {
            h.update(&o.0.to_le_bytes());
        }
        Key(*h.finalize().as_bytes())
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
        OptLevel::None => 0,
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
}

/// Reads and validates the entry for `key` in `dir`.
pub(crate) fn read(dir: &Path, key: &Key) -> Entry {
    match std::fs::read(key.file(dir)) {
        Ok(bytes) => match validate(&bytes, key) {
            Some(()) => Entry::Valid(bytes[HEADER..].to_vec()),
            None => Entry::Refused,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Entry::Absent,
        Err(_) => Entry::Refused,
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
/// Any I/O error; the cache is then left as it was.
pub(crate) fn write(dir: &Path, key: &Key, code: &[u8]) -> std::io::Result<()> {
    static UNIQUE: AtomicU64 = AtomicU64::new(0);
    std::fs::create_dir_all(dir)?;
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
    let placed = written.and_then(|()| std::fs::rename(&tmp, key.file(dir)));
    if placed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    placed
}

#[cfg(test)]
mod tests {
    use super::*;

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
