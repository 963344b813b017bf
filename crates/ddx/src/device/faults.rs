//! Failures the device tests force on the real driver: a kernel source its compiler
//! refuses, a launch with a work-group size it refuses. Tests that set one hold
//! [`SERIAL`], as every device unit test does, so no other test's kernel sees it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Held by every device unit test.
pub(crate) static SERIAL: Mutex<()> = Mutex::new(());

/// Appends an `#error` directive to every kernel source built while set.
pub(crate) static BAD_SOURCE: AtomicBool = AtomicBool::new(false);

/// Launches with a work-group of 2³⁰ work-items (no device has one) while set.
pub(crate) static BAD_LAUNCH: AtomicBool = AtomicBool::new(false);

/// The source to build.
pub(crate) fn source(s: &str) -> String {
    if BAD_SOURCE.load(Ordering::SeqCst) {
        format!("{s}\n#error \"a kernel refused on purpose by a ddx test\"\n")
    } else {
        s.to_string()
    }
}

/// The work-group size to launch with.
pub(crate) fn local(l: usize) -> usize {
    if BAD_LAUNCH.load(Ordering::SeqCst) {
        1 << 30
    } else {
        l
    }
}
