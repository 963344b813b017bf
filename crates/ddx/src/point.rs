//! Points: the spellings a call accepts for the values of the symbols.
//!
//! - **Positional**: a slice, array or `Vec` of `f64` in canonical symbol order (the byte
//!   order of the names: `B` before `a`, `x10` before `x2`), or a bare `f64` for a
//!   one-symbol equation. Too few values is [`Error::ShortPoint`], too many
//!   [`Error::WrongArity`].
//! - **Named**: any collection of `(name, value)` pairs — slices, arrays and `Vec`s of
//!   tuples, `HashMap`, `BTreeMap` — in any order. It must be whole: a symbol left without a
//!   value is [`Error::MissingSymbol`] (`short_point`), a name the equation lacks is
//!   [`Error::UnknownSymbol`], a name given twice [`Error::DuplicateSymbol`] (which says
//!   whether the pairs were a point or a direction).
//!
//! Directions (`jvp`, `hvp`) take the same spellings; a direction of the wrong length, or
//! a named one that is not whole, is [`Error::WrongDirection`].

use ddx_ir::{error::nearest_name, Error, VectorRole};
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;

/// What a vector passed to a call stands for (a point, or a direction over the symbols);
/// decides which error a mismatch is, and how [`Error::DuplicateSymbol`] words it.
pub use ddx_ir::PointRole as Role;

/// Values for every symbol of an equation, in one of the accepted spellings.
pub trait Point {
    /// Writes one value per symbol into `out` (canonical order; `out.len() ==
    /// symbols.len()`): every entry, or an error. `out` may hold an earlier call's values
    /// (calls reuse their input block), so an implementation that left an entry unwritten
    /// would leave such a value there.
    ///
    /// # Errors
    /// As the module documentation lists.
    fn fill(&self, symbols: &[String], out: &mut [f64]) -> Result<(), Error> {
        self.fill_as(symbols, out, Role::Point)
    }

    /// [`Point::fill`] for a vector of the given role (a direction reports
    /// [`Error::WrongDirection`] where a point reports `short_point` or `wrong_arity`).
    ///
    /// # Errors
    /// As the module documentation lists.
    fn fill_as(&self, symbols: &[String], out: &mut [f64], role: Role) -> Result<(), Error>;

    /// The values as they are, for a positional spelling (a slice, array or `Vec` of
    /// `f64`, or a bare `f64`): what [`Point::fill`] would copy when the lengths agree.
    /// `None` (the default) for named spellings. A call whose input block is the point
    /// alone (no parameters, no seeds) reads it where it is instead of copying it.
    fn as_positional(&self) -> Option<&[f64]> {
        None
    }
}

fn positional(values: &[f64], out: &mut [f64], role: Role) -> Result<(), Error> {
    let (expected, got) = (out.len(), values.len());
    if expected == got {
        out.copy_from_slice(values);
        return Ok(());
    }
    Err(match role {
        Role::Direction => Error::WrongDirection {
            role: VectorRole::Direction,
            expected,
            got,
        },
        Role::Point if got < expected => Error::ShortPoint { expected, got },
        Role::Point => Error::WrongArity { expected, got },
    })
}

fn named<'a>(
    pairs: impl Iterator<Item = (&'a str, f64)>,
    symbols: &[String],
    out: &mut [f64],
    role: Role,
) -> Result<(), Error> {
    let mut seen = vec![false; symbols.len()];
    for (name, value) in pairs {
        let Ok(i) = symbols.binary_search_by(|s| s.as_bytes().cmp(name.as_bytes())) else {
            return Err(Error::UnknownSymbol {
                name: name.to_string(),
                nearest: nearest_name(name, symbols.iter().map(String::as_str)),
            });
        };
        if std::mem::replace(&mut seen[i], true) {
            return Err(Error::DuplicateSymbol {
                name: name.to_string(),
                role,
            });
        }
        out[i] = value;
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(match role {
            Role::Point => Error::MissingSymbol {
                name: symbols[i].clone(),
            },
            Role::Direction => Error::WrongDirection {
                role: VectorRole::Direction,
                expected: symbols.len(),
                got: seen.iter().filter(|s| **s).count(),
            },
        });
    }
    Ok(())
}

impl Point for [f64] {
    fn fill_as(&self, _: &[String], out: &mut [f64], role: Role) -> Result<(), Error> {
        positional(self, out, role)
    }
    fn as_positional(&self) -> Option<&[f64]> {
        Some(self)
    }
}

impl<const N: usize> Point for [f64; N] {
    fn fill_as(&self, _: &[String], out: &mut [f64], role: Role) -> Result<(), Error> {
        positional(self, out, role)
    }
    fn as_positional(&self) -> Option<&[f64]> {
        Some(self)
    }
}

impl Point for Vec<f64> {
    fn fill_as(&self, _: &[String], out: &mut [f64], role: Role) -> Result<(), Error> {
        positional(self, out, role)
    }
    fn as_positional(&self) -> Option<&[f64]> {
        Some(self)
    }
}

impl Point for f64 {
    fn fill_as(&self, _: &[String], out: &mut [f64], role: Role) -> Result<(), Error> {
        positional(std::slice::from_ref(self), out, role)
    }
    fn as_positional(&self) -> Option<&[f64]> {
        Some(std::slice::from_ref(self))
    }
}

impl<K: AsRef<str>> Point for [(K, f64)] {
    fn fill_as(&self, symbols: &[String], out: &mut [f64], role: Role) -> Result<(), Error> {
        named(
            self.iter().map(|(k, v)| (k.as_ref(), *v)),
            symbols,
            out,
            role,
        )
    }
}

impl<K: AsRef<str>, const N: usize> Point for [(K, f64); N] {
    fn fill_as(&self, symbols: &[String], out: &mut [f64], role: Role) -> Result<(), Error> {
        self.as_slice().fill_as(symbols, out, role)
    }
}

impl<K: AsRef<str>> Point for Vec<(K, f64)> {
    fn fill_as(&self, symbols: &[String], out: &mut [f64], role: Role) -> Result<(), Error> {
        self.as_slice().fill_as(symbols, out, role)
    }
}

impl<K: AsRef<str>, S: BuildHasher> Point for HashMap<K, f64, S> {
    fn fill_as(&self, symbols: &[String], out: &mut [f64], role: Role) -> Result<(), Error> {
        named(
            self.iter().map(|(k, v)| (k.as_ref(), *v)),
            symbols,
            out,
            role,
        )
    }
}

impl<K: AsRef<str>> Point for BTreeMap<K, f64> {
    fn fill_as(&self, symbols: &[String], out: &mut [f64], role: Role) -> Result<(), Error> {
        named(
            self.iter().map(|(k, v)| (k.as_ref(), *v)),
            symbols,
            out,
            role,
        )
    }
}

impl<P: Point + ?Sized> Point for &P {
    fn fill_as(&self, symbols: &[String], out: &mut [f64], role: Role) -> Result<(), Error> {
        (**self).fill_as(symbols, out, role)
    }
    fn as_positional(&self) -> Option<&[f64]> {
        (**self).as_positional()
    }
}
