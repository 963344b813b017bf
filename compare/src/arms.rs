//! The arms: each computes the gradient at one point, the point changing every call.
//!
//! In-process arms (native, ddx, num-dual, both CasADi arms) are timed by one loop
//! ([`time_loop`]): it cycles through a pool of distinct points, so no call sees the point
//! of the call before, passes inputs and outputs through `black_box`, and runs until the
//! measurement has lasted its target duration, checking the clock once per chunk of calls.
//! The JAX arms time themselves in their subprocess (see [`crate::python`]).

use crate::clock::{Clock, Stopwatch};
use crate::python::JaxPeer;
use std::cell::RefCell;
use std::hint::black_box;
use std::rc::Rc;
use std::time::Duration;

/// A competitor for one model.
pub trait Arm {
    /// The column name.
    fn name(&self) -> &str;

    /// Whether the gate compares its answers (every gradient arm; not `native`).
    fn gated(&self) -> bool {
        true
    }

    /// The gradient at each of `points`.
    ///
    /// # Errors
    /// The arm's failure, as a message.
    fn gradients(&mut self, points: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, String>;

    /// One measurement about `target` long on `clock`: nanoseconds per point.
    ///
    /// # Errors
    /// The arm's failure, as a message.
    fn time(&mut self, target: Duration, clock: Clock) -> Result<f64, String>;
}

/// A call of an in-process arm: reads a point, writes the gradient (or, for `native`, the
/// value into the first slot).
pub type Call<'a> = Box<dyn FnMut(&[f64], &mut [f64]) -> Result<(), String> + 'a>;

/// An arm that runs in this process.
pub struct RustArm<'a> {
    name: String,
    gated: bool,
    call: Call<'a>,
    pool: Rc<Vec<f64>>,
    n: usize,
    chunk: usize,
}

impl<'a> RustArm<'a> {
    /// An arm named `name` calling `call`, timed over the flattened `pool` of points of
    /// `n` inputs each.
    pub fn new(name: &str, call: Call<'a>, pool: Rc<Vec<f64>>, n: usize) -> Self {
        Self {
            name: name.to_string(),
            gated: true,
            call,
            pool,
            n,
            chunk: 1,
        }
    }

    /// The same, excluded from the gate (the `native` value arm).
    pub fn ungated(mut self) -> Self {
        self.gated = false;
        self
    }
}

impl Arm for RustArm<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn gated(&self) -> bool {
        self.gated
    }

    fn gradients(&mut self, points: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, String> {
        points
            .iter()
            .map(|x| {
                let mut g = vec![0.0; self.n];
                (self.call)(x, &mut g)?;
                Ok(g)
            })
            .collect()
    }

    fn time(&mut self, target: Duration, clock: Clock) -> Result<f64, String> {
        time_loop(
            &self.pool,
            self.n,
            target,
            clock,
            &mut self.chunk,
            &mut self.call,
        )
    }
}

/// Calls `call` on the points of `pool` in turn until `target` has passed on `clock`;
/// answers the nanoseconds per call. `chunk` (calls between clock readings) adapts to about
/// a twentieth of the target.
///
/// # Errors
/// The first failure of `call`.
pub fn time_loop(
    pool: &[f64],
    n: usize,
    target: Duration,
    clock: Clock,
    chunk: &mut usize,
    call: &mut Call<'_>,
) -> Result<f64, String> {
    let points = (pool.len() / n.max(1)).max(1);
    let mut g = vec![0.0; n.max(1)];
    let mut calls = 0usize;
    let mut p = 0usize;
    let start = Stopwatch::start(clock);
    loop {
        for _ in 0..*chunk {
            let x = &pool[p * n..(p + 1) * n];
            call(black_box(x), black_box(&mut g))?;
            p += 1;
            if p == points {
                p = 0;
            }
        }
        calls += *chunk;
        let elapsed = start.elapsed();
        // (The wall-clock guard ends a measurement whose CPU clock does not advance.)
        if elapsed >= target || start.wall() >= target * 50 {
            let per_call = elapsed.as_nanos() as f64 / calls as f64;
            let wanted = target.as_nanos() as f64 / 20.0 / per_call;
            *chunk = (wanted as usize).clamp(1, 1 << 20);
            return Ok(per_call);
        }
        if elapsed < target / 20 {
            *chunk = (*chunk * 2).min(1 << 20);
        }
    }
}

/// `Equation::gradient_batch` over a batch of points, timed per point: the ddx batch
/// arms, beside `jax/vmap`.
///
/// The batch is the pool tiled to `batch` points, as the JAX peer tiles it, held as one
/// column per symbol; the partials land in one column per cell of the gradient's pattern
/// (scattered into a dense gradient only for the gate). The timing loop runs on the one
/// thread of its own rayon pool, so ddx's batch splitting stays on the timing thread and
/// its CPU clock counts all of the work.
pub struct BatchArm<'a> {
    name: String,
    eq: &'a ddx::Equation,
    n: usize,
    columns: Vec<Vec<f64>>,
    partials: Vec<Vec<f64>>,
    threads: rayon::ThreadPool,
    chunk: usize,
}

impl<'a> BatchArm<'a> {
    /// The arm `name` for `eq`, over the flattened `pool` of points of `n` inputs each,
    /// tiled to `batch` points.
    ///
    /// # Errors
    /// When the one-thread pool cannot be made.
    pub fn new(
        name: &str,
        eq: &'a ddx::Equation,
        pool: &[f64],
        n: usize,
        batch: usize,
    ) -> Result<Self, String> {
        let points = pool.len() / n.max(1);
        let columns = (0..n)
            .map(|j| (0..batch).map(|k| pool[(k % points) * n + j]).collect())
            .collect();
        let cells = eq.jacobian_pattern().nonzeros();
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self {
            name: name.to_string(),
            eq,
            n,
            columns,
            partials: vec![vec![0.0; batch]; cells],
            threads,
            chunk: 1,
        })
    }
}

/// Runs `eq`'s gradient batch over `columns` into `partials`.
fn gradient_batch(
    eq: &ddx::Equation,
    columns: &[Vec<f64>],
    partials: &mut [Vec<f64>],
) -> Result<(), String> {
    let xs: Vec<&[f64]> = columns.iter().map(Vec::as_slice).collect();
    let mut out: Vec<&mut [f64]> = partials.iter_mut().map(Vec::as_mut_slice).collect();
    eq.gradient_batch(black_box(&xs), black_box(&mut out))
        .map_err(|e| e.to_string())
}

impl Arm for BatchArm<'_> {
    fn name(&self) -> &str {
        &self.name
    }

    fn gradients(&mut self, points: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, String> {
        let columns: Vec<Vec<f64>> = (0..self.n)
            .map(|j| points.iter().map(|x| x[j]).collect())
            .collect();
        let pattern = self.eq.jacobian_pattern();
        let mut partials = vec![vec![0.0; points.len()]; pattern.nonzeros()];
        gradient_batch(self.eq, &columns, &mut partials)?;
        Ok((0..points.len())
            .map(|k| {
                let mut g = vec![0.0; self.n];
                for c in pattern.entries() {
                    g[c.column] = partials[c.slot][k];
                }
                g
            })
            .collect())
    }

    fn time(&mut self, target: Duration, clock: Clock) -> Result<f64, String> {
        let (eq, columns, partials, chunk) =
            (self.eq, &self.columns, &mut self.partials, &mut self.chunk);
        let batch = columns.first().map_or(1, Vec::len).max(1);
        let per_call = self.threads.install(|| {
            let mut call: Call<'_> = Box::new(|_, _| gradient_batch(eq, columns, partials));
            // One "point" of the loop is one whole batch.
            time_loop(&[0.0], 1, target, clock, chunk, &mut call)
        })?;
        Ok(per_call / batch as f64)
    }
}

/// One of the JAX figures, timed by the peer.
pub struct JaxArm {
    name: String,
    variant: &'static str,
    index: usize,
    model: String,
    peer: Rc<RefCell<JaxPeer>>,
}

impl JaxArm {
    /// The arm `name` for `variant` (index `index` of [`crate::python::JAX_VARIANTS`]).
    pub fn new(
        name: &str,
        variant: &'static str,
        index: usize,
        model: &str,
        peer: Rc<RefCell<JaxPeer>>,
    ) -> Self {
        Self {
            name: name.to_string(),
            variant,
            index,
            model: model.to_string(),
            peer,
        }
    }
}

impl Arm for JaxArm {
    fn name(&self) -> &str {
        &self.name
    }

    fn gradients(&mut self, points: &[Vec<f64>]) -> Result<Vec<Vec<f64>>, String> {
        let mut all = self.peer.borrow_mut().gradients(&self.model, points)?;
        if self.index < all.len() {
            Ok(all.swap_remove(self.index))
        } else {
            Err("the JAX peer answered too few variants".to_string())
        }
    }

    fn time(&mut self, target: Duration, clock: Clock) -> Result<f64, String> {
        let ms = target.as_secs_f64() * 1e3;
        self.peer
            .borrow_mut()
            .time(&self.model, self.variant, ms, clock.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_loop_visits_every_point_and_reports_per_call() {
        let pool = Rc::new(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s = Rc::clone(&seen);
        let call: Call<'_> = Box::new(move |x, g| {
            s.borrow_mut().push(x[0]);
            g[0] = x[0] + x[1];
            Ok(())
        });
        let mut arm = RustArm::new("t", call, pool, 2);
        let ns = arm.time(Duration::from_millis(2), Clock::Cpu).unwrap();
        assert!(ns > 0.0);
        let seen = seen.borrow();
        assert!(seen.len() >= 3);
        // Consecutive calls never see the same point.
        assert!(seen.windows(2).all(|w| w[0] != w[1]));
        assert_eq!(&seen[..3], &[1.0, 3.0, 5.0]);
    }

    #[test]
    fn the_batch_arm_answers_the_per_point_gradients_and_times_per_point() {
        // Against the per-point gradient, bit for bit: the batch lane's partials, scattered
        // through the pattern into dense gradients.
        let eq = ddx::rt::equation_text("x * exp(y) + y").unwrap();
        let pool = [1.0, 0.5, 2.0, -1.0, 3.0, 0.25];
        let mut arm = BatchArm::new("b", &eq, &pool, 2, 5).unwrap();
        // The pool tiled to 5 points, one column per symbol.
        assert_eq!(
            arm.columns,
            [
                vec![1.0, 2.0, 3.0, 1.0, 2.0],
                vec![0.5, -1.0, 0.25, 0.5, -1.0]
            ]
        );
        let points: Vec<Vec<f64>> = pool.chunks(2).map(<[f64]>::to_vec).collect();
        let got = arm.gradients(&points).unwrap();
        for (x, g) in points.iter().zip(&got) {
            assert_eq!(g, &eq.gradient(x.as_slice()).unwrap());
        }
        let ns = arm.time(Duration::from_millis(2), Clock::Cpu).unwrap();
        assert!(ns > 0.0 && ns.is_finite());
    }

    #[test]
    fn failures_surface() {
        let call: Call<'_> = Box::new(|_, _| Err("boom".to_string()));
        let mut arm = RustArm::new("t", call, Rc::new(vec![0.0; 4]), 2);
        assert_eq!(
            arm.time(Duration::from_millis(1), Clock::Wall).unwrap_err(),
            "boom"
        );
        assert_eq!(arm.gradients(&[vec![0.0, 0.0]]).unwrap_err(), "boom");
    }
}
