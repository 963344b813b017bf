//! A checksummed file whose lengths lie — 2^60 nodes, symbols, operator names or code
//! bytes — is refused at once, and loading it never allocates more than a few MiB: no
//! allocation is sized by a length the file claims. Bytes are laid out by hand from the
//! format's documentation (`src/archive/format.rs`), so this also pins the format.
//!
//! Its own test binary: the counting allocator sees every allocation of the process.

use ddx::{Equation, Errc, Scalar};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout, as given.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: allocated by `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn text(s: &str, out: &mut Vec<u8>) {
    varint(s.len() as u64, out);
    out.extend_from_slice(s.as_bytes());
}

/// The file around `body`: magic, version 3, length, checksum.
fn file(body: &[u8]) -> Vec<u8> {
    let mut out = b"\x89DDXEQN\n".to_vec();
    out.extend_from_slice(&3u32.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    let mut h = blake3::Hasher::new();
    h.update(&out);
    h.update(body);
    out.extend_from_slice(h.finalize().as_bytes());
    out.extend_from_slice(body);
    out
}

/// Loads `bytes` and answers the error and the peak of live heap bytes during the load.
fn load(bytes: &[u8]) -> (ddx::Error, usize) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let e = Equation::<Scalar>::from_bytes(bytes).expect_err("refused");
    (e, PEAK.load(Ordering::Relaxed) - base)
}

const LIMIT: usize = 4 << 20;
const HUGE: u64 = 1 << 60;

#[test]
fn claimed_lengths_are_never_allocated() {
    // writer, scalar, ops ["neg", "sin"], symbols ["x"], no parameters, no bound values,
    // then the model's node count.
    let mut head = Vec::new();
    text("ddx test", &mut head);
    head.push(1);
    varint(2, &mut head);
    text("neg", &mut head);
    text("sin", &mut head);
    varint(1, &mut head);
    text("x", &mut head);
    varint(0, &mut head);
    head.push(0); // no bound values

    // 2^60 model nodes, two present.
    let mut body = head.clone();
    varint(HUGE, &mut body);
    body.extend_from_slice(&[1, 0]); // Symbol(0)
    body.extend_from_slice(&[3, 1, 1]); // Unary(sin, 1 back)
    let (e, peak) = load(&file(&body));
    assert_eq!(e.code(), Errc::ArchiveCorrupt, "{e}");
    assert!(peak < LIMIT, "{peak} bytes for a claim of 2^60 nodes");

    // 2^60 symbols.
    let mut body = Vec::new();
    text("ddx test", &mut body);
    body.push(1);
    varint(0, &mut body);
    varint(HUGE, &mut body);
    text("x", &mut body);
    let (e, peak) = load(&file(&body));
    assert_eq!(e.code(), Errc::ArchiveCorrupt, "{e}");
    assert!(peak < LIMIT, "{peak} bytes for a claim of 2^60 symbols");

    // 2^60 bound parameter values.
    let mut body = head[..head.len() - 1].to_vec();
    body.push(1); // Some
    varint(HUGE, &mut body);
    body.extend_from_slice(&1.0f64.to_le_bytes());
    let (e, peak) = load(&file(&body));
    assert_eq!(e.code(), Errc::ArchiveCorrupt, "{e}");
    assert!(
        peak < LIMIT,
        "{peak} bytes for a claim of 2^60 bound values"
    );

    // A writer name of 2^60 bytes.
    let mut body = Vec::new();
    varint(HUGE, &mut body);
    body.extend_from_slice(b"ddx");
    let (e, peak) = load(&file(&body));
    assert_eq!(e.code(), Errc::ArchiveCorrupt, "{e}");
    assert!(peak < LIMIT, "{peak} bytes for a claim of a 2^60-byte name");

    // A sound model, then 2^60 lanes.
    let mut body = head.clone();
    varint(2, &mut body);
    body.extend_from_slice(&[1, 0, 3, 1, 1]); // x, sin(x)
    varint(1, &mut body);
    varint(1, &mut body); // outputs [n1]
    varint(HUGE, &mut body);
    let (e, peak) = load(&file(&body));
    assert_eq!(e.code(), Errc::ArchiveCorrupt, "{e}");
    assert!(peak < LIMIT, "{peak} bytes for a claim of 2^60 lanes");

    // The header claims a body of 2^60 bytes.
    let mut bytes = file(&body);
    bytes[12..20].copy_from_slice(&HUGE.to_le_bytes());
    let (e, peak) = load(&bytes);
    assert_eq!(e.code(), Errc::ArchiveCorrupt, "{e}");
    assert!(peak < LIMIT, "{peak} bytes for a claim of a 2^60-byte body");
}

#[test]
fn a_hand_made_file_loads() {
    // The same layout, complete: sin(x), no lanes, default options, no kernels.
    let mut body = Vec::new();
    text("ddx test", &mut body);
    body.push(1);
    varint(2, &mut body);
    text("neg", &mut body);
    text("sin", &mut body);
    varint(1, &mut body);
    text("x", &mut body);
    varint(0, &mut body); // no parameters
    body.push(0); // no bound values
    varint(2, &mut body);
    body.extend_from_slice(&[1, 0, 3, 1, 1]);
    varint(1, &mut body);
    varint(1, &mut body);
    varint(0, &mut body); // no lanes
                          // options: backend, points, lanes, width, opt level, contract, warm, hot, retain
    body.extend_from_slice(&[0, 1, 0, 0, 1, 0]);
    varint(65_536, &mut body);
    varint(1_048_576, &mut body);
    body.push(1);
    varint(0, &mut body); // no kernels
    let eq = Equation::<Scalar>::from_bytes(&file(&body)).expect("loads");
    assert_eq!(eq.symbols(), ["x"]);
    assert_eq!(eq.evaluate([0.5]).expect("fits"), 0.5f64.sin());
    assert_eq!(eq.jacobian([0.5]).expect("fits"), [0.5f64.cos()]);
}
