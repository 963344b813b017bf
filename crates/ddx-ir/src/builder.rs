//! The builder arena: what `rt::var` and expression arithmetic write into while a model
//! closure runs.
//!
//! Each thread keeps a stack of open arenas (a model closure may build another equation
//! inside itself). [`build`] pushes one, runs the closure, pops it and seals what the
//! closure returned into a [`Model`]. An [`Expr`] remembers the arena it was made in by a
//! tag unique for the life of the process, so a handle kept past its closure, or carried
//! into a nested one, is caught and reported rather than misread.
//!
//! **Invariant**: arena tags are never reused, so a stale handle can never alias a live
//! arena. Tags are `u64`s counted up from 1: at one build a nanosecond the counter would
//! take 584 years to wrap, so within a process's life it cannot.

use crate::expr::{Expr, Poison, Repr};
use crate::{math, Error, Graph, Model, NodeId, Op, SymbolId};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_TAG: AtomicU64 = AtomicU64::new(1);

/// The next arena tag from `counter`: a `u64`, so never a tag handed out before (see the
/// module invariant; a `u32` wrapped after 2³² builds and let a stale handle alias).
fn next_tag(counter: &AtomicU64) -> u64 {
    counter.fetch_add(1, Ordering::Relaxed)
}

struct Arena {
    tag: u64,
    graph: Graph,
    names: Vec<String>,
    /// Whether each of `names` is a parameter (`param`) rather than a symbol (`var`).
    is_param: Vec<bool>,
    by_name: FxHashMap<String, SymbolId>,
    error: Option<Error>,
}

thread_local! {
    static STACK: RefCell<Vec<Arena>> = const { RefCell::new(Vec::new()) };
}

/// Pops the arena even if the model closure panics.
struct PopGuard {
    depth: usize,
    done: bool,
}

impl Drop for PopGuard {
    fn drop(&mut self) {
        if !self.done {
            STACK.with(|s| s.borrow_mut().truncate(self.depth));
        }
    }
}

/// Runs `model` in a fresh arena and seals the expressions it returns into a [`Model`].
///
/// # Errors
/// - the first error recorded while the closure ran ([`Error::NoArena`],
///   [`Error::SealedArena`], [`Error::ForeignExpression`]), or one carried by an output;
/// - [`Error::NoOutputs`] when the closure returns no outputs;
/// - [`Error::NoGraph`] when no output depends on a symbol (all are literals).
pub fn build(model: impl FnOnce() -> Vec<Expr>) -> Result<Model, Error> {
    let tag = next_tag(&NEXT_TAG);
    let depth = STACK.with(|s| {
        let mut s = s.borrow_mut();
        s.push(Arena {
            tag,
            graph: Graph::new(),
            names: Vec::new(),
            is_param: Vec::new(),
            by_name: FxHashMap::default(),
            error: None,
        });
        s.len() - 1
    });
    let mut guard = PopGuard { depth, done: false };
    let outputs = model();
    let mut arena = STACK
        .with(|s| {
            let mut s = s.borrow_mut();
            let arena = s.pop();
            s.truncate(depth);
            arena
        })
        .filter(|a| a.tag == tag)
        .ok_or(Error::NoArena)?;
    guard.done = true;
    if let Some(e) = arena.error.take() {
        return Err(e);
    }
    if outputs.is_empty() {
        return Err(Error::NoOutputs);
    }
    let mut ids = Vec::with_capacity(outputs.len());
    let mut any_symbolic = false;
    for e in &outputs {
        ids.push(match e.0 {
            Repr::Const(v) => arena.graph.constant(v),
            Repr::Node { arena: t, id } if t == tag => {
                any_symbolic |= arena.graph.constant_of(id).is_none();
                id
            }
            Repr::Node { arena: t, .. } => return Err(stale(t)),
            Repr::Poison(p) => return Err(p.error()),
        });
    }
    if !any_symbolic {
        return Err(Error::NoGraph);
    }
    Ok(Model::seal_with_params(
        &arena.graph,
        &ids,
        arena.names,
        &arena.is_param,
    ))
}

/// The error for a handle from arena `tag`, seen outside it: [`Error::ForeignExpression`]
/// when that arena is open on this thread (an enclosing model), else
/// [`Error::SealedArena`] (it has been sealed, or belongs to another thread's closure).
fn stale(tag: u64) -> Error {
    let open = STACK.with(|s| s.borrow().iter().any(|a| a.tag == tag));
    if open {
        Error::ForeignExpression
    } else {
        Error::SealedArena
    }
}

/// The symbol `name` of the innermost open model, or a handle carrying
/// [`Error::NoArena`] when no model closure is running.
///
/// Any non-empty string names a symbol (a column header read from a file, say); the text
/// grammar reads the names that are Python identifiers. An empty `name` makes the model
/// being built fail with [`Error::BadName`].
pub fn var(name: &str) -> Expr {
    input(name, false)
}

/// The parameter `name` of the innermost open model: an input never differentiated (see
/// [`Model`]). A handle carrying [`Error::NoArena`] when no model closure is running; the
/// model's build fails with [`Error::ParameterConflict`] when the same name is also a
/// symbol.
pub fn param(name: &str) -> Expr {
    input(name, true)
}

/// The input `name`, a parameter if `is_param`, of the innermost open model.
fn input(name: &str, is_param: bool) -> Expr {
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        let Some(a) = s.last_mut() else {
            return Expr(Repr::Poison(Poison::NoArena));
        };
        if name.is_empty() {
            a.error.get_or_insert(Poison::EmptyName.error());
            return Expr(Repr::Poison(Poison::EmptyName));
        }
        let sym = match a.by_name.get(name) {
            Some(&sym) => {
                if a.is_param[sym.index()] != is_param {
                    a.error.get_or_insert(Error::ParameterConflict {
                        name: name.to_string(),
                    });
                }
                sym
            }
            None => {
                let sym = SymbolId::from_index(a.names.len());
                a.names.push(name.to_string());
                a.is_param.push(is_param);
                a.by_name.insert(name.to_string(), sym);
                sym
            }
        };
        let id = a.graph.symbol(sym);
        Expr(Repr::Node { arena: a.tag, id })
    })
}

/// `op(args)` in the innermost open arena: constants fold without one; a poisoned or stale
/// argument poisons the result and is recorded as the arena's error.
pub(crate) fn apply(op: Op, args: &[Expr]) -> Expr {
    debug_assert_eq!(args.len(), op.arity());
    if let Some(p) = args.iter().find_map(|a| match a.0 {
        Repr::Poison(p) => Some(p),
        _ => None,
    }) {
        record(p.error());
        return Expr(Repr::Poison(p));
    }
    // A pack has no value: one of constants stays a node (for the call reading it).
    if op != Op::Pack && args.iter().all(|a| matches!(a.0, Repr::Const(_))) {
        let mut x = [0.0; 3];
        for (xi, a) in x.iter_mut().zip(args) {
            if let Repr::Const(v) = a.0 {
                *xi = v;
            }
        }
        if op != Op::Call {
            return Expr(Repr::Const(math::eval(op, &x)));
        }
        return call_now(|| math::eval(op, &x));
    }
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        let Some(top) = s.last().map(|a| a.tag) else {
            return Expr(Repr::Poison(Poison::Sealed));
        };
        let stale = args.iter().find_map(|a| match a.0 {
            Repr::Node { arena, .. } if arena != top => Some(arena),
            _ => None,
        });
        if let Some(t) = stale {
            let (p, e) = if s.iter().any(|a| a.tag == t) {
                (Poison::Foreign, Error::ForeignExpression)
            } else {
                (Poison::Sealed, Error::SealedArena)
            };
            if let Some(arena) = s.last_mut() {
                arena.error.get_or_insert(e);
            }
            return Expr(Repr::Poison(p));
        }
        let Some(arena) = s.last_mut() else {
            return Expr(Repr::Poison(Poison::Sealed));
        };
        let mut ids = [NodeId(0); 3];
        for (slot, a) in ids.iter_mut().zip(args) {
            *slot = match a.0 {
                Repr::Const(v) => arena.graph.constant(v),
                Repr::Node { id, .. } => id,
                Repr::Poison(_) => return Expr(Repr::Poison(Poison::Sealed)),
            };
        }
        let id = arena.graph.apply(op, &ids[..args.len()]);
        Expr(Repr::Node {
            arena: arena.tag,
            id,
        })
    })
}

/// A user function at constant arguments, run now by `run`: its failure fails the build.
pub(crate) fn call_now(run: impl FnOnce() -> f64) -> Expr {
    let _ = crate::user::take_failure();
    let v = run();
    if let Some(e) = crate::user::take_failure() {
        record(e);
    }
    Expr(Repr::Const(v))
}

/// Records `e` as the innermost arena's error, if it has none yet (so the model's build
/// fails with it); nothing outside a model closure.
pub(crate) fn record_error(e: Error) {
    record(e);
}

/// Records `e` as the innermost arena's error, if it has none yet.
fn record(e: Error) {
    STACK.with(|s| {
        if let Some(a) = s.borrow_mut().last_mut() {
            a.error.get_or_insert(e);
        }
    });
}

/// For printing an [`Expr`]: a copy of what node `id` of the open arena `tag` reaches, the
/// root's id in that copy, and the arena's symbol names (`names[i]` names `SymbolId(i)`).
/// `None` when no arena `tag` is open on this thread, or the arena stack is being changed.
pub(crate) fn snapshot(tag: u64, id: NodeId) -> Option<(Graph, NodeId, Vec<String>)> {
    STACK.with(|s| {
        let s = s.try_borrow().ok()?;
        let a = s.iter().find(|a| a.tag == tag)?;
        if id.index() >= a.graph.len() {
            return None;
        }
        let (graph, roots) = a.graph.extract(&[id]);
        Some((graph, *roots.first()?, a.names.clone()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_do_not_wrap_past_u32() {
        // After 2³² builds a `u32` tag wrapped to 0 and then 1, the first arena's tag:
        // a stale handle from it would have read a live arena's nodes.
        let counter = AtomicU64::new(u64::from(u32::MAX));
        let tags: Vec<u64> = (0..3).map(|_| next_tag(&counter)).collect();
        assert_eq!(tags, [0xffff_ffff, 0x1_0000_0000, 0x1_0000_0001]);
    }
}
