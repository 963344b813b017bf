//! Sparsity patterns: which cells of a Jacobian structurally exist.

use crate::error::{Block, Error};

/// One structurally nonzero cell of an `rows × columns` matrix, and the slot (compressed
/// column) that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cell {
    /// The function (row) index `i`.
    pub row: usize,
    /// The symbol (column) index `j`, in canonical symbol order.
    pub column: usize,
    /// Where the value of `∂fᵢ/∂xⱼ` sits among the block's columns.
    pub slot: usize,
}

/// The structurally nonzero cells of an `rows × columns` Jacobian, in row-major order;
/// cell `k` of [`Sparsity::entries`] is held in slot `k`.
///
/// A cell exists when the partial is anything other than the literal zero: a symbol a
/// function does not mention has none, and neither has one whose partial folded away.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sparsity {
    rows: usize,
    columns: usize,
    cells: Vec<Cell>,
}

impl Sparsity {
    /// A pattern from `(row, column)` pairs, which must be strictly increasing in row-major
    /// order and inside `rows × columns`; slots are their positions. Only the passes, whose
    /// pairs hold that by construction, call it (checked in debug builds); a pattern from
    /// anywhere else goes through [`Sparsity::try_new`], which checks it.
    pub(crate) fn new(
        rows: usize,
        columns: usize,
        pairs: impl IntoIterator<Item = (usize, usize)>,
    ) -> Self {
        let cells: Vec<Cell> = pairs
            .into_iter()
            .enumerate()
            .map(|(slot, (row, column))| Cell { row, column, slot })
            .collect();
        debug_assert!(cells
            .windows(2)
            .all(|w| (w[0].row, w[0].column) < (w[1].row, w[1].column)));
        debug_assert!(cells.iter().all(|c| c.row < rows && c.column < columns));
        Self {
            rows,
            columns,
            cells,
        }
    }

    /// A pattern from `(row, column)` pairs read from outside (a saved equation, a
    /// caller's own pattern for [`HessianLayout::new`](crate::HessianLayout::new)): `None`
    /// unless they are strictly increasing in row-major order and inside
    /// `rows × columns`.
    pub fn try_new(
        rows: usize,
        columns: usize,
        pairs: impl IntoIterator<Item = (usize, usize)>,
    ) -> Option<Self> {
        let mut cells = Vec::new();
        let mut last: Option<(usize, usize)> = None;
        for (slot, (row, column)) in pairs.into_iter().enumerate() {
            if row >= rows || column >= columns || last.is_some_and(|l| l >= (row, column)) {
                return None;
            }
            last = Some((row, column));
            cells.push(Cell { row, column, slot });
        }
        Some(Self {
            rows,
            columns,
            cells,
        })
    }

    /// Row count `m` (functions).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Column count `n` (symbols).
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Number of structurally nonzero cells (the Jacobian block's column count).
    pub fn nonzeros(&self) -> usize {
        self.cells.len()
    }

    /// Every cell, in row-major order (so slot `k` is `entries()[k]`).
    pub fn entries(&self) -> &[Cell] {
        &self.cells
    }

    /// The slot holding `∂f(row)/∂x(column)`, or `None` off the pattern (including out of
    /// range).
    pub fn at(&self, row: usize, column: usize) -> Option<usize> {
        self.cells
            .binary_search_by(|c| (c.row, c.column).cmp(&(row, column)))
            .ok()
    }

    /// Scatters compressed values (`values[slot]`, [`Sparsity::nonzeros`] long) into a
    /// dense row-major `rows × columns` matrix, zeros elsewhere.
    ///
    /// # Errors
    /// [`Error::WrongColumnCount`] (block [`Block::Partials`]) unless `values` holds one
    /// value per cell, [`Error::WrongOutputLength`] unless `dense` is `rows · columns`
    /// long; nothing is written then.
    pub fn scatter(&self, values: &[f64], dense: &mut [f64]) -> Result<(), Error> {
        if values.len() != self.cells.len() {
            return Err(Error::WrongColumnCount {
                block: Block::Partials,
                expected: self.cells.len(),
                got: values.len(),
            });
        }
        let len = self.rows.checked_mul(self.columns);
        if len != Some(dense.len()) {
            return Err(Error::WrongOutputLength {
                expected: len.unwrap_or(usize::MAX),
                got: dense.len(),
            });
        }
        dense.fill(0.0);
        for (c, v) in self.cells.iter().zip(values) {
            // In range for a pattern made as `new` asks; `get_mut` keeps one made
            // otherwise from indexing out of `dense`.
            if let Some(d) = dense.get_mut(c.row * self.columns + c.column) {
                *d = *v;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scatter_refuses_short_buffers() {
        // [[a, 0, b], [0, c, 0]]
        let p = Sparsity::new(2, 3, [(0, 0), (0, 2), (1, 1)]);
        let mut dense = [7.0; 6];
        assert_eq!(
            p.scatter(&[1.0, 2.0], &mut dense),
            Err(Error::WrongColumnCount {
                block: Block::Partials,
                expected: 3,
                got: 2
            })
        );
        assert_eq!(
            p.scatter(&[1.0, 2.0, 3.0], &mut dense[..4]),
            Err(Error::WrongOutputLength {
                expected: 6,
                got: 4
            })
        );
        assert_eq!(dense, [7.0; 6], "nothing written on an error");
        p.scatter(&[1.0, 2.0, 3.0], &mut dense).unwrap();
        assert_eq!(dense, [1.0, 0.0, 2.0, 0.0, 3.0, 0.0]);
    }
}
