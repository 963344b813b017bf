//! Colouring a symmetric sparsity pattern so that a few Hessian–vector products recover
//! every structural nonzero directly.
//!
//! **Input**: the structural pattern of an `n × n` Hessian (symmetric: `(i, j)` present iff
//! `(j, i)` is; the diagonal may or may not be). **Output**: a [`HessianLayout`] — a colour
//! per symbol, and for every pattern cell the compressed column that holds it. With `v_k`
//! the indicator vector of colour group `k`, the compressed block is the `colours × n`
//! values `(H·v_k)[row]`, column `k·n + row`. Every cell of the pattern is *one* of those
//! values, never a sum to be solved for.
//!
//! **Why star colouring.** Column group `k` read at row `i` is `Σ_{j ∈ k} H(i, j)`, which
//! is `H(i, j)` alone exactly when `j` is the only member of group `k` in row `i`'s
//! pattern. A symmetric matrix is recovered directly — each `H(i, j)` read either at
//! `(colour(j), i)` or, by symmetry, at `(colour(i), j)` — exactly when the colouring is a
//! *star colouring* of the adjacency graph (symbols as vertices, off-diagonal pattern
//! cells as edges): adjacent vertices differ in colour, and every path on four vertices
//! uses at least three colours. The equivalence is Coleman and Moré's (1984), presented as
//! the "symmetrically orthogonal partition"/star colouring correspondence in
//! A. H. Gebremedhin, F. Manne and A. Pothen, *What color is your Jacobian? Graph coloring
//! for computing derivatives*, SIAM Review 47(4):629–705, 2005.
//!
//! **The algorithm** is the greedy star colouring of that paper: visit vertices in order
//! and give each the smallest colour that creates no conflict with the vertices already
//! coloured. A conflict is an edge to a vertex of that colour, or a two-coloured path on
//! four vertices through the new vertex. Every such path is checked the moment its last
//! vertex is coloured, so the final colouring is a star colouring whatever the order. Two
//! shapes of path can end at the new vertex `v` (colour `c` still to choose):
//! - `v – w – x – y` with `colour(y) = colour(w)`: forbids `c = colour(x)`;
//! - `w – v – x – y` with `colour(w) = colour(x)`: forbids `c = colour(y)`.
//!
//! The first is found with a per-vertex count of coloured neighbours by colour, so a
//! vertex costs `O(Σ_{w ∈ N(v)} deg(w))`: the `O(n·d̄₂)` of a distance-2 sweep. This gives 3 colours on a tridiagonal
//! pattern, 2 on an arrowhead (one dense row and column plus the diagonal), and `n` on a
//! dense one; the order visited is discussed at [`star_colouring`].

use crate::error::{Block, Error};
use crate::Sparsity;

/// A colour per vertex of a symmetric pattern, and how many colours there are.
///
/// A vertex whose row of the pattern is empty (the symbol enters the function at most
/// linearly) has no colour: it belongs to no group and is never seeded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Colouring {
    colour: Vec<u32>,
    count: usize,
}

/// The colour of an uncoloured vertex.
const NONE: u32 = u32::MAX;

impl Colouring {
    /// The colour of vertex `j`, or `None` when its row is empty (or `j` is out of range).
    pub fn colour(&self, j: usize) -> Option<usize> {
        match self.colour.get(j) {
            Some(&c) if c != NONE => Some(c as usize),
            _ => None,
        }
    }

    /// How many colours are used (0 when the pattern is empty).
    pub fn count(&self) -> usize {
        self.count
    }
}

/// The off-diagonal neighbours of each vertex of `pattern` (sorted, no repeats).
fn adjacency(pattern: &Sparsity) -> Vec<Vec<usize>> {
    // A vertex per row and per column, so a pattern that is not square (outside the
    // contract, but a public caller can pass one) is coloured instead of indexed past.
    let mut adj = vec![Vec::new(); pattern.columns().max(pattern.rows())];
    for c in pattern.entries() {
        if c.row != c.column {
            adj[c.row].push(c.column);
            adj[c.column].push(c.row);
        }
    }
    for a in &mut adj {
        a.sort_unstable();
        a.dedup();
    }
    adj
}

/// Whether `pattern` is square and holds `(j, i)` wherever it holds `(i, j)`.
fn is_symmetric(pattern: &Sparsity) -> bool {
    let cells: std::collections::HashSet<(usize, usize)> = pattern
        .entries()
        .iter()
        .map(|c| (c.row, c.column))
        .collect();
    pattern.rows() == pattern.columns() && cells.iter().all(|&(i, j)| cells.contains(&(j, i)))
}

/// A greedy star colouring of the adjacency graph of `pattern` (an `n × n` pattern; only
/// its off-diagonal cells matter, read symmetrically). See the module doc.
///
/// Greedy colouring depends on the order vertices are visited in, and canonical symbol
/// order is alphabetical, which need not follow the structure (`x10` sorts before `x2`).
/// So three orders are tried — index order, a Cuthill–McKee breadth-first order (which
/// walks a band or a chain end to end), and largest degree first — and the colouring with
/// the fewest colours kept (the earliest on a tie).
pub fn star_colouring(pattern: &Sparsity) -> Colouring {
    let adj = adjacency(pattern);
    let n = adj.len();
    let mut active = vec![false; n];
    for c in pattern.entries() {
        active[c.row] = true;
        active[c.column] = true;
    }
    let natural: Vec<usize> = (0..n).filter(|&v| active[v]).collect();
    let mut largest = natural.clone();
    largest.sort_by_key(|&v| std::cmp::Reverse(adj[v].len()));
    let orders = [natural.clone(), cuthill_mckee(&adj, &natural), largest];
    let mut best: Option<Colouring> = None;
    for order in &orders {
        let c = greedy_star(&adj, order);
        if best.as_ref().is_none_or(|b| c.count < b.count) {
            best = Some(c);
        }
    }
    best.unwrap_or(Colouring {
        colour: vec![NONE; n],
        count: 0,
    })
}

/// A breadth-first order of the vertices in `active` (index order), each component
/// started at a vertex of least degree and neighbours taken by increasing degree.
fn cuthill_mckee(adj: &[Vec<usize>], active: &[usize]) -> Vec<usize> {
    let mut seen = vec![false; adj.len()];
    let mut order = Vec::with_capacity(active.len());
    let mut starts = active.to_vec();
    starts.sort_by_key(|&v| adj[v].len());
    for &s in &starts {
        if seen[s] {
            continue;
        }
        seen[s] = true;
        let mut head = order.len();
        order.push(s);
        while head < order.len() {
            let v = order[head];
            head += 1;
            let mut next: Vec<usize> = adj[v].iter().copied().filter(|&w| !seen[w]).collect();
            next.sort_by_key(|&w| adj[w].len());
            for w in next {
                seen[w] = true;
                order.push(w);
            }
        }
    }
    order
}

/// The greedy star colouring visiting vertices in `order` (other vertices stay
/// uncoloured).
fn greedy_star(adj: &[Vec<usize>], order: &[usize]) -> Colouring {
    let n = adj.len();
    let mut colour = vec![NONE; n];
    // seen[x][c]: how many coloured neighbours of x have colour c.
    let mut seen: Vec<Vec<u32>> = vec![Vec::new(); n];
    // forbidden[c] == v marks colour c forbidden for the vertex v being coloured.
    let mut forbidden: Vec<usize> = Vec::new();
    // first[c]: a coloured neighbour of v with colour c, to find same-coloured pairs.
    let mut first: Vec<usize> = Vec::new();
    let mut count = 0usize;
    for &v in order {
        let forbid = |forbidden: &mut Vec<usize>, c: u32| {
            let c = c as usize;
            if forbidden.len() <= c {
                forbidden.resize(c + 1, usize::MAX);
            }
            forbidden[c] = v;
        };
        // Colours adjacent to v are forbidden outright. When they are every colour used
        // so far, v takes a new one whatever the paths say: the path checks below are
        // skipped, which keeps a dense pattern at O(n²) rather than O(n³) and changes no
        // colour.
        let mut direct = 0usize;
        for &w in &adj[v] {
            let cw = colour[w];
            if cw != NONE && forbidden.get(cw as usize) != Some(&v) {
                forbid(&mut forbidden, cw);
                direct += 1;
            }
        }
        if direct == count {
            colour[v] = count as u32;
            count += 1;
            for &w in &adj[v] {
                let s = &mut seen[w];
                if s.len() < count {
                    s.resize(count, 0);
                }
                s[count - 1] += 1;
            }
            continue;
        }
        first.clear();
        first.resize(count, usize::MAX);
        let mut repeated: Vec<usize> = Vec::new();
        for &w in &adj[v] {
            let cw = colour[w];
            if cw == NONE {
                continue;
            }
            forbid(&mut forbidden, cw);
            // v – w – x – y, colour(y) = colour(w): x has a coloured neighbour other than
            // w in w's colour.
            for &x in &adj[w] {
                let cx = colour[x];
                if x == v || cx == NONE {
                    continue;
                }
                if seen[x].get(cw as usize).copied().unwrap_or(0) >= 2 {
                    forbid(&mut forbidden, cx);
                }
            }
            match first[cw as usize] {
                usize::MAX => first[cw as usize] = w,
                earlier => {
                    repeated.push(earlier);
                    repeated.push(w);
                }
            }
        }
        // w – v – x – y, colour(w) = colour(x): every coloured neighbour y of x (other
        // than v) forbids its colour.
        repeated.sort_unstable();
        repeated.dedup();
        for &x in &repeated {
            for &y in &adj[x] {
                if y != v && colour[y] != NONE {
                    forbid(&mut forbidden, colour[y]);
                }
            }
        }
        let c = (0..)
            .find(|&c| forbidden.get(c).is_none_or(|&f| f != v))
            .unwrap_or(0);
        colour[v] = c as u32;
        count = count.max(c + 1);
        for &w in &adj[v] {
            let s = &mut seen[w];
            if s.len() <= c {
                s.resize(c + 1, 0);
            }
            s[c] += 1;
        }
    }
    Colouring { colour, count }
}

/// Whether `colouring` is a star colouring of `pattern`'s adjacency graph: the property
/// the compression relies on, checked by brute force over paths (for tests and debug
/// builds). Answers the first offending path, or `None`.
pub fn star_violation(pattern: &Sparsity, colouring: &Colouring) -> Option<Vec<usize>> {
    let adj = adjacency(pattern);
    let c = |v: usize| colouring.colour(v);
    for (v, nv) in adj.iter().enumerate() {
        for &w in nv {
            if c(v) == c(w) {
                return Some(vec![v, w]);
            }
            for &x in &adj[w] {
                if x == v || c(x) != c(v) {
                    continue;
                }
                for &y in &adj[x] {
                    if y != w && y != v && c(y) == c(w) {
                        return Some(vec![v, w, x, y]);
                    }
                }
            }
        }
    }
    None
}

/// The compressed Hessian block's layout: the pattern, its star colouring, and the
/// compressed column holding each cell.
///
/// The block has [`HessianLayout::columns`] `= colours × n` columns; column `k·n + row` is
/// `(H·v_k)[row]`, with `v_k` the indicator vector of colour group `k` (`1` at the symbols
/// of colour `k`, `0` elsewhere).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HessianLayout {
    pattern: Sparsity,
    colouring: Colouring,
    /// For pattern cell `s` (in [`Sparsity::entries`] order), its compressed column.
    columns: Vec<usize>,
}

impl HessianLayout {
    /// The layout for the symmetric `n × n` pattern `pattern` (see the module doc).
    ///
    /// Cell `(i, j)` is read at `(colour(j), i)` when `j` is the only symbol of its colour
    /// in row `i`'s pattern, and otherwise at `(colour(i), j)`, which a star colouring
    /// guarantees is direct. A pattern that is not symmetric (or not square) is outside
    /// that guarantee: it gets a layout, without a panic, but its cells need not be
    /// direct ([`HessianLayout::direct_violation`] tells).
    pub fn new(pattern: Sparsity) -> Self {
        let colouring = star_colouring(&pattern);
        let layout = Self::laid_out(pattern, colouring)
            .expect("star_colouring colours each vertex with an entry in its row or column");
        debug_assert!(
            !is_symmetric(&layout.pattern) || layout.direct_violation().is_none(),
            "a star colouring of a symmetric pattern is direct"
        );
        layout
    }

    /// The layout of a pattern and a colouring read from outside (a saved equation): the
    /// compressed columns follow from them by the rule of [`HessianLayout::new`].
    /// `colours[j]` is symbol `j`'s colour (`None`: uncoloured).
    ///
    /// Checked so that nothing reading the layout can index out of it: the pattern is
    /// square, `colours` has one entry per symbol, and every symbol on the pattern is
    /// coloured. Whether the colouring is a star colouring (that the columns are direct)
    /// is not checked here: [`star_violation`] and [`HessianLayout::direct_violation`]
    /// do that, at a cost superlinear in the pattern.
    ///
    /// # Errors
    /// What does not hold, in words.
    pub fn from_colouring(pattern: Sparsity, colours: &[Option<u32>]) -> Result<Self, String> {
        let n = pattern.columns();
        if pattern.rows() != n {
            return Err(format!(
                "the Hessian pattern is {} × {n}, not square",
                pattern.rows()
            ));
        }
        if colours.len() != n {
            return Err(format!("{} colours for {n} symbols", colours.len()));
        }
        if colours.contains(&Some(NONE)) {
            return Err("a colour is out of range".into());
        }
        let count = colours
            .iter()
            .flatten()
            .max()
            .map_or(0, |&c| c as usize + 1);
        if count > n {
            return Err(format!("{count} colours for {n} symbols"));
        }
        let colouring = Colouring {
            colour: colours.iter().map(|c| c.unwrap_or(NONE)).collect(),
            count,
        };
        Self::laid_out(pattern, colouring)
            .ok_or_else(|| "a symbol on the Hessian pattern has no colour".into())
    }

    /// The layout of `pattern` under `colouring`; `None` when a symbol on the pattern is
    /// uncoloured.
    fn laid_out(pattern: Sparsity, colouring: Colouring) -> Option<Self> {
        let n = pattern.columns();
        let entries = pattern.entries();
        // How many symbols of each colour sit in the current row's pattern (entries are
        // row-major, so one row at a time; cleared after each row).
        let mut in_row = vec![0u32; colouring.count()];
        let mut columns = Vec::with_capacity(entries.len());
        for row in entries.chunk_by(|a, b| a.row == b.row) {
            for c in row {
                in_row[colouring.colour(c.column)?] += 1;
            }
            for c in row {
                let k = colouring.colour(c.column)?;
                columns.push(if in_row[k] == 1 {
                    k * n + c.row
                } else {
                    colouring.colour(c.row)? * n + c.column
                });
            }
            for c in row {
                in_row[colouring.colour(c.column)?] = 0;
            }
        }
        Some(Self {
            pattern,
            colouring,
            columns,
        })
    }

    /// The symmetric `n × n` structural pattern.
    pub fn pattern(&self) -> &Sparsity {
        &self.pattern
    }

    /// The colouring of the symbols.
    pub fn colouring(&self) -> &Colouring {
        &self.colouring
    }

    /// How many colour groups, so how many products `H·v_k` make the block.
    pub fn colours(&self) -> usize {
        self.colouring.count()
    }

    /// The symbol count `n`.
    pub fn symbols(&self) -> usize {
        self.pattern.columns()
    }

    /// The compressed block's column count: `colours × n`.
    pub fn columns(&self) -> usize {
        self.colours() * self.symbols()
    }

    /// Which compressed column holds `H(i, j)`: `colour · n + row` for the product of
    /// colour group `colour`, read at `row`. `None` off the pattern, and for `i` or `j` out
    /// of range.
    pub fn cell(&self, i: usize, j: usize) -> Option<usize> {
        self.pattern.at(i, j).map(|s| self.columns[s])
    }

    /// The symbols of colour group `k`, in order.
    pub fn group(&self, k: usize) -> Vec<usize> {
        (0..self.symbols())
            .filter(|&j| self.colouring.colour(j) == Some(k))
            .collect()
    }

    /// Scatters one compressed block (`block[k·n + row]`, [`HessianLayout::columns`]
    /// long) into a dense, row-major `n × n` matrix, zeros off the pattern.
    ///
    /// # Errors
    /// [`Error::WrongColumnCount`] (block [`Block::Hessians`]) unless `block` is
    /// `columns()` long, [`Error::WrongOutputLength`] unless `dense` is `n · n` long;
    /// nothing is written then.
    pub fn scatter(&self, block: &[f64], dense: &mut [f64]) -> Result<(), Error> {
        self.check_block(block)?;
        let n = self.symbols();
        let len = n.checked_mul(n);
        if len != Some(dense.len()) {
            return Err(Error::WrongOutputLength {
                expected: len.unwrap_or(usize::MAX),
                got: dense.len(),
            });
        }
        dense.fill(0.0);
        for (c, &col) in self.pattern.entries().iter().zip(&self.columns) {
            // Both in range by construction (`laid_out`); `get` keeps it so.
            if let (Some(d), Some(&v)) = (dense.get_mut(c.row * n + c.column), block.get(col)) {
                *d = v;
            }
        }
        Ok(())
    }

    /// Gathers one compressed block (`block[k·n + row]`, [`HessianLayout::columns`] long)
    /// into `values`, one value per cell of [`HessianLayout::pattern`] in its
    /// [`Sparsity::entries`] order: the sparse form of what [`HessianLayout::scatter`]
    /// writes densely.
    ///
    /// # Errors
    /// [`Error::WrongColumnCount`] (block [`Block::Hessians`]) unless `block` is
    /// `columns()` long, [`Error::WrongOutputLength`] unless `values` holds one value per
    /// cell; nothing is written then.
    pub fn gather(&self, block: &[f64], values: &mut [f64]) -> Result<(), Error> {
        self.check_block(block)?;
        if values.len() != self.columns.len() {
            return Err(Error::WrongOutputLength {
                expected: self.columns.len(),
                got: values.len(),
            });
        }
        for (v, &col) in values.iter_mut().zip(&self.columns) {
            *v = block.get(col).copied().unwrap_or(0.0);
        }
        Ok(())
    }

    fn check_block(&self, block: &[f64]) -> Result<(), Error> {
        if block.len() == self.columns() {
            Ok(())
        } else {
            Err(Error::WrongColumnCount {
                block: Block::Hessians,
                expected: self.columns(),
                got: block.len(),
            })
        }
    }

    /// The first cell whose compressed column is not direct (the column's group has a
    /// symbol other than the cell's own in the row it is read at), or `None`. The property
    /// the layout promises; checked in debug builds and tests.
    pub fn direct_violation(&self) -> Option<(usize, usize)> {
        let n = self.symbols();
        // How many symbols of each colour stand in each row's pattern: O(nnz), so debug
        // builds can afford the check on dense patterns too.
        let mut in_row: rustc_hash::FxHashMap<(usize, usize), u32> = Default::default();
        for c in self.pattern.entries() {
            if let Some(k) = self.colouring.colour(c.column) {
                *in_row.entry((c.row, k)).or_insert(0) += 1;
            }
        }
        for (c, &col) in self.pattern.entries().iter().zip(&self.columns) {
            let (k, row) = (col / n, col % n);
            // Read at `row` of group k, the cell is `H(row, other)` with `other` the
            // symbol of the cell that is not `row`; that symbol is in row `row`'s pattern
            // (the pattern is symmetric), so the read is direct iff it is the only one of
            // colour k there.
            let own = if row == c.row { c.column } else { c.row };
            let own_ok = self.colouring.colour(own) == Some(k) && (row == c.row || row == c.column);
            let clash = in_row.get(&(row, k)).copied().unwrap_or(0) != 1;
            if clash || !own_ok {
                return Some((c.row, c.column));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The symmetric pattern with the given off-diagonal pairs and a full diagonal.
    fn symmetric(n: usize, pairs: impl IntoIterator<Item = (usize, usize)>) -> Sparsity {
        let mut cells: Vec<(usize, usize)> = (0..n).map(|i| (i, i)).collect();
        for (i, j) in pairs {
            cells.push((i, j));
            cells.push((j, i));
        }
        cells.sort_unstable();
        cells.dedup();
        Sparsity::new(n, n, cells)
    }

    fn layout(p: Sparsity) -> HessianLayout {
        let l = HessianLayout::new(p);
        assert_eq!(star_violation(l.pattern(), l.colouring()), None);
        assert_eq!(l.direct_violation(), None);
        l
    }

    #[test]
    fn patterns_that_are_not_square_are_coloured_without_panicking() {
        // Outside the contract (a symmetric n × n pattern), but public: a pattern read
        // with `Sparsity::try_new` of 3 × 2 or 2 × 3 must not index past the vertices.
        for (rows, columns, cells) in [
            (3, 2, vec![(0, 0), (1, 1), (2, 0), (2, 1)]),
            (2, 3, vec![(0, 0), (0, 2), (1, 1), (1, 2)]),
        ] {
            let p = Sparsity::try_new(rows, columns, cells).expect("inside the pattern");
            let c = star_colouring(&p);
            assert_eq!(star_violation(&p, &c), None);
            let l = HessianLayout::new(p);
            assert_eq!(l.pattern().entries().len(), 4);
        }
    }

    /// `HessianLayout::new` is public and its `expect` holds for every pattern
    /// `Sparsity::try_new` accepts: random patterns of every shape up to 9 × 9, symmetric
    /// or not, some rows and columns empty, lay out without a panic and keep every cell.
    #[test]
    fn every_checked_pattern_lays_out() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..3000 {
            let (rows, columns) = (1 + next(9), 1 + next(9));
            let mut cells: Vec<(usize, usize)> = (0..next(rows * columns + 1))
                .map(|_| (next(rows), next(columns)))
                .collect();
            cells.sort_unstable();
            cells.dedup();
            let p = Sparsity::try_new(rows, columns, cells.clone()).expect("inside the pattern");
            let l = HessianLayout::new(p);
            assert_eq!(
                l.pattern().entries().len(),
                cells.len(),
                "{rows} × {columns}: {cells:?}"
            );
        }
    }

    #[test]
    fn tridiagonal_takes_three_colours() {
        // A path on four or more vertices has a P4, which needs three colours.
        for n in [4, 5, 64, 257] {
            let l = layout(symmetric(n, (1..n).map(|i| (i - 1, i))));
            assert_eq!(l.colours(), 3, "n = {n}");
        }
        assert_eq!(layout(symmetric(3, [(0, 1), (1, 2)])).colours(), 2);
        assert_eq!(layout(symmetric(2, [(0, 1)])).colours(), 2);
        // The same path with its vertices shuffled (as alphabetical order shuffles x0 …
        // x63): the breadth-first order still finds three.
        let n = 64;
        let perm: Vec<usize> = (0..n).map(|i| (i * 37 + 11) % n).collect();
        let l = layout(symmetric(
            n,
            (1..n).map(|i| {
                let (a, b) = (perm[i - 1], perm[i]);
                (a.min(b), a.max(b))
            }),
        ));
        assert_eq!(l.colours(), 3);
    }

    #[test]
    fn arrowhead_takes_two_colours_wherever_the_hub_is() {
        for hub in [0, 17, 63] {
            let l = layout(symmetric(
                64,
                (0..64)
                    .filter(|&j| j != hub)
                    .map(|j| (hub.min(j), hub.max(j))),
            ));
            assert!(l.colours() <= 3, "hub {hub}: {}", l.colours());
            assert_eq!(l.colours(), 2, "hub {hub}");
        }
    }

    #[test]
    fn dense_takes_n_colours() {
        // 1000: the shortcut for a vertex whose neighbours use every colour keeps this
        // O(n²); the path checks alone made it O(n³) (n = 1000 took 47 s in release).
        for n in [1, 2, 7, 64] {
            let pairs = (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j)));
            assert_eq!(layout(symmetric(n, pairs)).colours(), n);
        }
        // (the brute-force star check is O(n³) on a dense pattern: n distinct colours
        // need none, and the direct check is O(nnz))
        let n = 1000;
        let pairs = (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j)));
        let l = HessianLayout::new(symmetric(n, pairs));
        assert_eq!(l.colours(), n);
        assert_eq!(l.direct_violation(), None);
    }

    #[test]
    fn nearly_dense_patterns_are_star_coloured_and_direct() {
        // Dense but for a few missing cells: the shortcut and the path checks both act.
        let n = 120;
        for gap in [7, 13, 29] {
            let pairs = (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .filter(|&(i, j)| (i * 31 + j * 17) % gap != 0);
            let p = symmetric(n, pairs);
            let c = star_colouring(&p);
            assert_eq!(star_violation(&p, &c), None, "gap {gap}");
            assert_eq!(layout(p).direct_violation(), None, "gap {gap}");
        }
    }

    #[test]
    fn diagonal_only_takes_one_colour_and_empty_none() {
        assert_eq!(layout(symmetric(9, [])).colours(), 1);
        let l = layout(Sparsity::new(3, 3, []));
        assert_eq!(l.colours(), 0);
        assert_eq!(l.columns(), 0);
        assert_eq!(l.cell(0, 0), None);
        assert_eq!(l.colouring().colour(1), None);
        assert_eq!(layout(Sparsity::new(0, 0, [])).colours(), 0);
        // A symbol with an empty row stays out of every group.
        let l = layout(Sparsity::new(3, 3, [(0, 0), (2, 2)]));
        assert_eq!(l.colours(), 1);
        assert_eq!(l.group(0), [0, 2]);
        assert_eq!(l.colouring().colour(1), None);
    }

    #[test]
    fn banded_patterns_are_direct() {
        for (n, b) in [(20, 2), (33, 3), (64, 5)] {
            let pairs = (0..n).flat_map(|i| (i + 1..n.min(i + b + 1)).map(move |j| (i, j)));
            let l = layout(symmetric(n, pairs));
            // A star colouring of a band of half-width b needs at least b + 1 colours;
            // greedy stays within a small multiple.
            assert!(
                l.colours() > b && l.colours() <= 3 * b + 1,
                "{n}, {b}: {}",
                l.colours()
            );
        }
    }

    /// A small deterministic generator (xorshift), so the random patterns are reproducible.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn random_patterns_are_star_coloured_and_direct() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        for trial in 0..200 {
            let n = 1 + (xorshift(&mut s) % 40) as usize;
            let density = 1 + xorshift(&mut s) % 30;
            let mut pairs = Vec::new();
            for i in 0..n {
                for j in i + 1..n {
                    if xorshift(&mut s) % 100 < density {
                        pairs.push((i, j));
                    }
                }
            }
            let mut cells: Vec<(usize, usize)> = Vec::new();
            for &(i, j) in &pairs {
                cells.push((i, j));
                cells.push((j, i));
            }
            // Some diagonals missing.
            for i in 0..n {
                if !xorshift(&mut s).is_multiple_of(3) {
                    cells.push((i, i));
                }
            }
            cells.sort_unstable();
            cells.dedup();
            let l = layout(Sparsity::new(n, n, cells));
            assert!(l.colours() <= n.max(1), "trial {trial}");
        }
    }

    #[test]
    fn recovers_a_known_matrix_from_its_products() {
        // H with a tridiagonal pattern plus one long-range pair; the products H·v_k are
        // formed densely here, independently of any AD, and scattered back.
        let n = 12;
        let mut pairs: Vec<(usize, usize)> = (1..n).map(|i| (i - 1, i)).collect();
        pairs.push((0, 11));
        let p = symmetric(n, pairs);
        let mut h = vec![0.0; n * n];
        for c in p.entries() {
            let (a, b) = (c.row.min(c.column), c.row.max(c.column));
            h[c.row * n + c.column] = 1.0 + a as f64 * 0.5 + b as f64 * 0.25;
        }
        let l = layout(p);
        let mut block = vec![0.0; l.columns()];
        for k in 0..l.colours() {
            for row in 0..n {
                block[k * n + row] = l.group(k).iter().map(|&j| h[row * n + j]).sum();
            }
        }
        let mut dense = vec![f64::NAN; n * n];
        l.scatter(&block, &mut dense).unwrap();
        assert_eq!(dense, h);
        // The sparse form: the same cells, in pattern order.
        let mut values = vec![f64::NAN; l.pattern().nonzeros()];
        l.gather(&block, &mut values).unwrap();
        for (c, v) in l.pattern().entries().iter().zip(&values) {
            assert_eq!(*v, h[c.row * n + c.column]);
        }
        assert_eq!(l.cell(0, 5), None);
        assert_eq!(l.cell(99, 0), None);
        let c = l.cell(0, 11).expect("on the pattern");
        assert_eq!(block[c], h[11]);
    }

    #[test]
    fn scatter_and_gather_refuse_short_buffers() {
        // A tridiagonal pattern of 4 symbols: 3 colours, 12 compressed columns, 10 cells.
        let pairs: Vec<(usize, usize)> = (0..4usize)
            .flat_map(|i| {
                (0..4usize)
                    .filter(move |&j| i.abs_diff(j) <= 1)
                    .map(move |j| (i, j))
            })
            .collect();
        let l = HessianLayout::new(Sparsity::new(4, 4, pairs));
        let block = vec![1.0; l.columns()];
        let mut dense = vec![7.0; 16];
        let short = Error::WrongColumnCount {
            block: Block::Hessians,
            expected: l.columns(),
            got: 3,
        };
        assert_eq!(l.scatter(&block[..3], &mut dense), Err(short.clone()));
        assert_eq!(
            l.scatter(&block, &mut dense[..5]),
            Err(Error::WrongOutputLength {
                expected: 16,
                got: 5
            })
        );
        assert!(
            dense.iter().all(|&d| d == 7.0),
            "nothing written on an error"
        );
        let mut values = vec![7.0; 10];
        assert_eq!(l.gather(&block[..3], &mut values), Err(short));
        assert_eq!(
            l.gather(&block, &mut values[..9]),
            Err(Error::WrongOutputLength {
                expected: 10,
                got: 9
            })
        );
        assert!(l.scatter(&block, &mut dense).is_ok());
        assert!(l.gather(&block, &mut values).is_ok());
    }
}
