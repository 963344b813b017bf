//! The equation's side of the last-call cache (`crate::cache`): turning it on, and
//! answering a per-point call of a lane from a remembered entry, a re-sweep of its tape,
//! or a stored full sweep.
//!
//! Every per-point call of a lane runs through `Equation::eval` or `Equation::eval_into`,
//! and both ask [`Equation::remembered`] first when a cache is given and active; so
//! `evaluate`, `jacobian`, `gradient`, `hessian`, `jvp`, `vjp`, `hvp`, `hvp_along`, the
//! `_into` and sparse forms are all covered, and batches (which run programs over
//! columns) never are. The Taylor calls (`univariate_derivative` and its relatives) keep
//! their own slot, [`CallKind::Taylor`].

use super::{Equation, Shape};
use crate::cache::{CacheStats, CallKind, Entry, Event, Extent, Moved, ValueCache};
use ddx_ir::{Error, LaneKind};
use std::sync::Arc;

impl<S: Shape> Equation<S> {
    /// This equation, remembering its last call of each kind in `cache`: a
    /// [`LastValue`](crate::cache::LastValue), or any [`ValueCache`] (an `Arc` of one, to
    /// keep a handle).
    ///
    /// Asked again at the same input block (the point, then any direction or weights: the
    /// same bits, so `-0.0` differs from `0.0` and NaN payloads are told apart), a
    /// per-point call answers from the cache and sweeps nothing; with some coordinates
    /// moved, it re-runs only the instructions they reach over the remembered tape. The
    /// answers are the ones a full sweep gives, bit for bit. Where a compiled kernel
    /// answers a lane, a repeat is served and a moved point computed whole. Batch calls are
    /// never remembered. Clones share the cache.
    pub fn with_cache(mut self, cache: impl ValueCache + 'static) -> Self {
        self.cache = Some(Arc::new(cache));
        self
    }

    /// Stops remembering (drops this equation's handle on its cache).
    pub fn without_cache(mut self) -> Self {
        self.cache = None;
        self
    }

    /// What the cache has counted (hits, re-sweeps, stored sweeps, busy slots,
    /// instructions run), or `None` without a cache or when it does not count.
    pub fn cache_stats(&self) -> Option<CacheStats> {
        self.cache.as_ref().and_then(|c| c.stats())
    }

    /// Bytes lane `kind` holds for incremental sweeps: its tape program and, once a moved
    /// point has been re-swept, the per-symbol reach lists (each input's instructions in
    /// sweep order, as pieces of the program's runs: a few per symbol where a symbol
    /// reaches the tail of a running sum). `0` until a remembered call has used the lane.
    /// The entries themselves are the cache's ([`crate::cache::Entry::memory`]).
    pub fn tape_memory(&self, kind: LaneKind) -> usize {
        if super::fixed(kind, "tape_memory").is_err() {
            return 0; // the tensor lanes are never remembered
        }
        self.prepared(kind)
            .tape_if_built()
            .map_or(0, |t| t.memory())
    }

    /// Answers lane `kind` at `inputs` through `cache`, handing each output to `sink`;
    /// `false` when no write lease was to be had (the caller sweeps for itself).
    pub(crate) fn remembered(
        &self,
        cache: &dyn ValueCache,
        kind: LaneKind,
        inputs: &[f64],
        sink: &mut dyn FnMut(usize, f64),
    ) -> bool {
        let p = self.prepared(kind);
        let extent = Extent::new(
            CallKind::Lane(kind),
            p.id,
            inputs.len(),
            p.lane.outputs.len(),
            0,
        );
        // Under the read lease: a repeat is served; otherwise, over a tape, where the
        // point moved (compared once: the write lease reuses it unless a write came
        // between, which the entry's stamp tells).
        let mut hit = false;
        let mut seen: Option<(u64, Moved)> = None;
        cache.read(&extent, &mut |e: &Entry| {
            if e.taped_for(&extent) && e.point.len() == inputs.len() {
                let moved = Moved::find(&e.point, inputs);
                if moved.none() && e.outputs.len() == extent.outputs() {
                    serve(e, sink);
                    hit = true;
                } else {
                    seen = Some((e.stamp, moved));
                }
            } else if e.holds(&extent, inputs) && e.outputs.len() == extent.outputs() {
                serve(e, sink);
                hit = true;
            }
        });
        if hit {
            cache.note(Event::Hit);
            return true;
        }
        let user_calls = self.lanes.user_calls;
        if let Some(k) = self.jit.point(&self.lanes, kind) {
            // A kernel keeps no tape: the point is computed whole and stored (a lease of
            // its own, capturing only what it needs).
            let wrote = cache.write(&extent, &mut |e: &mut Entry| {
                e.outputs.clear();
                e.outputs.resize(extent.outputs(), 0.0);
                k.run_point(inputs, &mut e.outputs);
                e.set(extent, inputs, false);
                serve(e, sink);
                if user_calls && ddx_ir::user::failed() {
                    e.clear();
                }
            });
            cache.note(if wrote {
                Event::Sweep { instructions: 0 }
            } else {
                Event::Busy
            });
            return wrote;
        }
        let mut event = Event::Busy;
        let mut lease = |e: &mut Entry| {
            let tape = p.tape();
            if e.taped_for(&extent) && e.point.len() == inputs.len() {
                let moved = match seen {
                    Some((stamp, moved)) if stamp == e.stamp => moved,
                    _ => Moved::find(&e.point, inputs),
                };
                let instructions = tape.resweep(&mut e.tape, &e.point, inputs, &moved);
                event = Event::Resweep { instructions };
                e.set_moved(extent, inputs, &moved);
            } else {
                tape.sweep(&mut e.tape, inputs, true);
                event = Event::Sweep {
                    instructions: tape.len(),
                };
                e.set(extent, inputs, true);
            }
            e.outputs.clear();
            tape.read(&e.tape, |_, v| e.outputs.push(v));
            serve(e, sink);
            // A sweep through failed user code answers an error (the caller takes it):
            // never remembered, so a repeat calls the user's code again.
            if user_calls && ddx_ir::user::failed() {
                e.clear();
            }
        };
        let wrote = cache.write(&extent, &mut lease);
        cache.note(if wrote { event } else { Event::Busy });
        wrote
    }

    /// Serves `extent` at `inputs` from a read lease, if the entry holds exactly that.
    fn served(
        &self,
        cache: &dyn ValueCache,
        extent: &Extent,
        inputs: &[f64],
        sink: &mut dyn FnMut(usize, f64),
    ) -> bool {
        let mut hit = false;
        cache.read(extent, &mut |e: &Entry| {
            if e.holds(extent, inputs) && e.outputs.len() == extent.outputs() {
                serve(e, sink);
                hit = true;
            }
        });
        if hit {
            cache.note(Event::Hit);
        }
        hit
    }

    /// The Taylor coefficients of order `order` at the input block `x` (the symbol, then
    /// the bound parameters) through the cache, when one is
    /// given and active: a repeat is served, anything else computed by `compute` and
    /// stored (no tape: the one symbol moving moves everything).
    pub(crate) fn remembered_taylor(
        &self,
        order: usize,
        x: &[f64],
        compute: impl FnOnce() -> Result<Vec<f64>, Error>,
    ) -> Result<Vec<f64>, Error> {
        let Some(cache) = self.cache.as_deref().filter(|c| c.active()) else {
            return compute();
        };
        let extent = Extent::new(CallKind::Taylor, self.lanes.id, x.len(), order + 1, order);
        let mut out = Vec::new();
        if self.served(cache, &extent, x, &mut |_, v| out.push(v)) {
            return Ok(out);
        }
        let out = compute()?;
        let wrote = cache.write(&extent, &mut |e: &mut Entry| {
            e.outputs.clear();
            e.outputs.extend_from_slice(&out);
            e.set(extent, x, false);
        });
        cache.note(if wrote {
            Event::Sweep { instructions: 0 }
        } else {
            Event::Busy
        });
        Ok(out)
    }
}

/// Hands each of `e`'s outputs to `sink`, in order.
fn serve(e: &Entry, sink: &mut dyn FnMut(usize, f64)) {
    for (k, &v) in e.outputs.iter().enumerate() {
        sink(k, v);
    }
}
