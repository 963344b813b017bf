//! Typed `u32` indices, declared once.
//!
//! A [`NodeId`] names a node of one [`Graph`](crate::Graph) and is meaningless in any
//! other; a [`SymbolId`] is a position in the canonical (alphabetical) symbol list; a
//! [`SeedId`] is a position in a lane's extra input block (the direction of `jvp`, the
//! weights of `vjp`). Their `Display` is the IR text spelling: `n12`, `s3`, `v0`.

use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
        pub struct $name(pub u32);

        impl $name {
            /// The index as a `usize`, for indexing side tables.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id at position `index`.
            ///
            /// Graphs are limited to `u32::MAX` entries; an index past that is a bug in
            /// the caller, caught in debug builds.
            #[inline]
            pub fn from_index(index: usize) -> Self {
                debug_assert!(index < u32::MAX as usize);
                Self(index as u32)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

id_type!(
    /// A node of a [`Graph`](crate::Graph); children always have smaller ids than parents.
    NodeId,
    "n"
);
id_type!(
    /// A symbol, by its position in the canonical (alphabetical) order.
    SymbolId,
    "s"
);
id_type!(
    /// An extra lane input: a direction component (`jvp`, `hvp`) or a weight (`vjp`).
    SeedId,
    "v"
);
