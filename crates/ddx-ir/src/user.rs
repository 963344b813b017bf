//! User functions: functions of `k ≥ 1` arguments that bring their own partials
//! (CasADi's and CppAD's atomic functions, JAX's `custom_jvp`).
//!
//! [`UserFunction::new`] registers a function's value and first partials (and, with
//! [`UserFunction::with_second`], its second partials) in a process-wide registry, which
//! gives it an id. A call in a graph is the node `call(tag, a, b)` ([`Op::Call`]): `tag` is
//! a constant naming the function and which derivative the node is — the value, a first
//! partial `∂/∂aᵢ`, or a second partial `∂²/∂aᵢ∂aⱼ` — and `b` is the constant `0` for a
//! function of one argument, the second argument for two, and for `k ≥ 3` the chain
//! `pack(a₂, pack(a₃, … pack(a_{k−1}, a_k)))` of [`Op::Pack`] nodes, so that every node's
//! [`crate::Node::args`] stays its true dependency list (sparsity, extraction, liveness)
//! and [`crate::Graph::call_args`] reads the `k` arguments back. The AD rule of a call is
//! the call of its partial on the same operands, so every lane, in both modes and at
//! second order, uses the partials the user gave.
//!
//! **Engines.** The interpreter evaluates a call through [`call`] (`k ≤ 2`) or
//! [`call_slice`] (`k ≥ 3`, its arguments gathered from their slots), and the JIT calls the
//! same user code through the math table ([`crate::math::MathTable`]: [`call`], and
//! [`call_n`] with the `k` values stored to a stack slot), so kernels stay free of
//! relocations and the two engines agree to the bit. The device engine, the emitted
//! source and saving refuse a graph holding a call (ids are this process's).
//!
//! **Cost.** A node computes one partial, and each call of a partial runs the user's code
//! for all of them (`k` first partials, `k × k` second partials) and keeps one: a Hessian
//! through a call of `k` arguments runs the second partials `k(k + 1)/2` times per point.
//!
//! **Failures.** User code runs inside [`call`] and [`call_slice`], which never unwind: a
//! panic is caught there (never crossing a compiled frame), answered as NaN and recorded for
//! the calling thread, as is a call of a derivative the user did not give (a second partial
//! of a function registered without them, or any third partial). The call boundary (in
//! `ddx`) takes the record with [`take_failure`] and answers the error, naming the function.
//! A NaN the user code returns is an ordinary value and flows as IEEE says.
//!
//! **Invariants**: the registry only grows; an id names one function for the life of the
//! process; user code is never called while the registry's lock is held.

use crate::{builder, Error, Expr, Op, UserProblem};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, RwLock};

/// A function's value at its arguments (`arity` of them).
pub type ValueFn = dyn Fn(&[f64]) -> f64 + Send + Sync;
/// A function's partials at its arguments: the first partials (`arity` values), or the
/// second partials (`arity × arity`, row-major, symmetric).
pub type PartialsFn = dyn Fn(&[f64], &mut [f64]) + Send + Sync;

struct Entry {
    name: String,
    arity: usize,
    value: Arc<ValueFn>,
    first: Arc<PartialsFn>,
    second: Option<Arc<PartialsFn>>,
}

static REGISTRY: RwLock<Vec<Arc<Entry>>> = RwLock::new(Vec::new());

/// The most arguments a user function takes (its second partials are `k × k` values).
pub const MAX_ARITY: usize = 256;

/// Tags per function: a tag is `id · PARTS + part`, exact in `f64` for any id below 2³³.
/// `part` numbers the derivatives with `K = max(arity, 2)`: `0` the value, `1 + i` the
/// first partial `∂/∂aᵢ`, `1 + K + j(j + 1)/2 + i` the second partial `∂²/∂aᵢ∂aⱼ`
/// (`i ≤ j`), `1 + K + K(K + 1)/2` any third partial (never given). For one or two
/// arguments that is the value `0`, `∂/∂a`, `∂/∂b` `1, 2`, `∂²/∂a²`, `∂²/∂a∂b`, `∂²/∂b²`
/// `3, 4, 5`, third `6`.
const PARTS: u64 = 1 << 20;
const VALUE: u64 = 0;

/// Which derivative a part is, for a function of `arity` arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Value,
    First(usize),
    /// `(i, j)` with `i ≤ j`.
    Second(usize, usize),
    Third,
}

impl Part {
    fn width(arity: usize) -> u64 {
        arity.max(2) as u64
    }

    fn of(part: u64, arity: usize) -> Option<Part> {
        let k = Part::width(arity);
        let seconds = k * (k + 1) / 2;
        Some(match part {
            0 => Part::Value,
            p if p <= k => Part::First((p - 1) as usize),
            p if p <= k + seconds => {
                let t = p - 1 - k;
                // The row j with j(j+1)/2 <= t < (j+1)(j+2)/2.
                let mut j = 0u64;
                while (j + 1) * (j + 2) / 2 <= t {
                    j += 1;
                }
                Part::Second((t - j * (j + 1) / 2) as usize, j as usize)
            }
            p if p == k + seconds + 1 => Part::Third,
            _ => return None,
        })
    }

    fn number(self, arity: usize) -> u64 {
        let k = Part::width(arity);
        match self {
            Part::Value => VALUE,
            Part::First(i) => 1 + i as u64,
            Part::Second(i, j) => 1 + k + (j * (j + 1) / 2 + i) as u64,
            Part::Third => 1 + k + k * (k + 1) / 2,
        }
    }
}

/// The tag of function `id`'s derivative `part`.
fn tag_of(id: u64, part: u64) -> f64 {
    (id * PARTS + part) as f64
}

/// The function id and part of `tag`, if it is one.
fn decode(tag: f64) -> Option<(u64, u64)> {
    if !(tag >= 0.0 && tag < (1u64 << 53) as f64 && tag.fract() == 0.0) {
        return None;
    }
    let t = tag as u64;
    Some((t / PARTS, t % PARTS))
}

fn entry(id: u64) -> Option<Arc<Entry>> {
    let r = REGISTRY.read().unwrap_or_else(|p| p.into_inner());
    r.get(usize::try_from(id).ok()?).cloned()
}

/// A registered user function; cloning is cheap (it is the id and a reference).
///
/// ```
/// use ddx_ir::{UserFunction, build, var};
///
/// // f(x, y) = x·eʸ with its partials (eʸ, x·eʸ) and second partials.
/// let f = UserFunction::new("xexp", 2, |x| x[0] * x[1].exp(), |x, g| {
///     g[0] = x[1].exp();
///     g[1] = x[0] * x[1].exp();
/// })?
/// .with_second(|x, h| {
///     let e = x[1].exp();
///     h.copy_from_slice(&[0.0, e, e, x[0] * e]);
/// })?;
/// let model = build(|| vec![f.call(&[var("x"), var("y")]) + 1.0])?;
/// assert_eq!(model.symbols(), ["x", "y"]);
/// # Ok::<(), ddx_ir::Error>(())
/// ```
#[derive(Clone)]
pub struct UserFunction {
    id: u64,
    entry: Arc<Entry>,
}

impl std::fmt::Debug for UserFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserFunction")
            .field("name", &self.entry.name)
            .field("arity", &self.entry.arity)
            .field("second", &self.entry.second.is_some())
            .finish()
    }
}

impl UserFunction {
    /// Registers the function `name` of `arity` arguments (1 to [`MAX_ARITY`]):
    /// `value(x)` is its value at `x` (`arity` values) and `first(x, g)` writes its
    /// `arity` first partials into `g`. Both must be pure (a call may be evaluated any
    /// number of times, or merged with an equal one) and thread-safe.
    ///
    /// # Errors
    /// [`Error::UserFunction`] when `arity` is 0 or above [`MAX_ARITY`], or `name` is not
    /// a name of the text syntax ([`crate::text::is_name`]: a Python identifier, Unicode
    /// letters included, as a symbol's name is; not a built-in function's name).
    pub fn new(
        name: &str,
        arity: usize,
        value: impl Fn(&[f64]) -> f64 + Send + Sync + 'static,
        first: impl Fn(&[f64], &mut [f64]) + Send + Sync + 'static,
    ) -> Result<UserFunction, Error> {
        let bad = |problem| Error::UserFunction {
            name: name.to_string(),
            problem,
        };
        if !(1..=MAX_ARITY).contains(&arity) {
            return Err(bad(UserProblem::Arity(arity)));
        }
        if !crate::text::is_name(name) {
            return Err(bad(UserProblem::Name));
        }
        Ok(register(Entry {
            name: name.to_string(),
            arity,
            value: Arc::new(value),
            first: Arc::new(first),
            second: None,
        }))
    }

    /// The same function with second partials: `second(x, h)` writes the `arity × arity`
    /// second partials, row-major, into `h`. Registers a new function (a new id) sharing
    /// the value and first partials; calls made with `self` keep having none.
    ///
    /// # Errors
    /// None today; a `Result` so that registration may refuse in future.
    pub fn with_second(
        &self,
        second: impl Fn(&[f64], &mut [f64]) + Send + Sync + 'static,
    ) -> Result<UserFunction, Error> {
        let e = &self.entry;
        Ok(register(Entry {
            name: e.name.clone(),
            arity: e.arity,
            value: Arc::clone(&e.value),
            first: Arc::clone(&e.first),
            second: Some(Arc::new(second)),
        }))
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.entry.name
    }

    /// How many arguments it takes.
    pub fn arity(&self) -> usize {
        self.entry.arity
    }

    /// Whether it has second partials (so Hessians through it are answered).
    pub fn has_second(&self) -> bool {
        self.entry.second.is_some()
    }

    /// The call `f(args)` in the model closure running now. With the wrong number of
    /// arguments the model's build fails with [`Error::UserFunction`]. At constant
    /// arguments the function runs now, and its failure fails the build.
    pub fn call(&self, args: &[Expr]) -> Expr {
        if args.len() != self.entry.arity {
            builder::record_error(Error::UserFunction {
                name: self.entry.name.clone(),
                problem: UserProblem::ArgumentCount(args.len()),
            });
            return Expr::from(f64::NAN);
        }
        call_tagged(tag_of(self.id, VALUE), args)
    }

    /// The tag of this function's value node, for the parser.
    pub(crate) fn value_tag(&self) -> f64 {
        tag_of(self.id, VALUE)
    }
}

/// The call tagged `tag` (a value tag) of `args` (the function's arity of them, at least
/// one) in the model closure running now: `call(tag, a, b)`, `b` the constant `0` for one
/// argument and a pack chain for three or more; at constant arguments the function runs
/// now, and its failure fails the build.
pub(crate) fn call_tagged(tag: f64, args: &[Expr]) -> Expr {
    let t = Expr::from(tag);
    if args.len() <= 2 {
        let b = args.get(1).copied().unwrap_or(Expr::from(0.0));
        return builder::apply(Op::Call, &[t, args[0], b]);
    }
    if let Some(x) = args
        .iter()
        .map(Expr::as_constant)
        .collect::<Option<Vec<f64>>>()
    {
        return builder::call_now(|| call_slice(tag, &x));
    }
    let (last, init) = args[1..].split_last().unwrap_or((&args[0], &[]));
    let rest = init
        .iter()
        .rev()
        .fold(*last, |rest, &a| builder::apply(Op::Pack, &[a, rest]));
    builder::apply(Op::Call, &[t, args[0], rest])
}

/// [`call_tagged`] in `graph`, for the parser (folded alike: a user function at constant
/// arguments runs now, its failure recorded for the caller to take).
pub(crate) fn call_in(graph: &mut crate::Graph, tag: f64, args: &[crate::NodeId]) -> crate::NodeId {
    let t = graph.constant(tag);
    if args.len() <= 2 {
        let b = match args.get(1) {
            Some(&b) => b,
            None => graph.constant(0.0),
        };
        return graph.apply(Op::Call, &[t, args[0], b]);
    }
    if let Some(x) = args
        .iter()
        .map(|&a| graph.constant_of(a))
        .collect::<Option<Vec<f64>>>()
    {
        let v = call_slice(tag, &x);
        return graph.constant(v);
    }
    let (last, init) = args[1..].split_last().unwrap_or((&args[0], &[]));
    let rest = init
        .iter()
        .rev()
        .fold(*last, |rest, &a| graph.binary(Op::Pack, a, rest));
    graph.apply(Op::Call, &[t, args[0], rest])
}

fn register(entry: Entry) -> UserFunction {
    let entry = Arc::new(entry);
    let mut w = REGISTRY.write().unwrap_or_else(|p| p.into_inner());
    let id = w.len() as u64;
    w.push(Arc::clone(&entry));
    UserFunction { id, entry }
}

/// User functions by name, for the text parser ([`crate::Formula::parse_with`]).
#[derive(Clone, Debug, Default)]
pub struct Functions {
    by_name: BTreeMap<String, UserFunction>,
    /// The first name added twice for two different functions: a parse with this set
    /// fails with it ([`Functions::check`]).
    clash: Option<String>,
}

impl Functions {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `f` under its name. Adding a *different* function under a name already taken
    /// (another registration, even of the same code, and so also `f` and
    /// `f.with_second(…)`) keeps the first and makes every parse with this set fail
    /// ([`Functions::check`]): which of the two a text means would otherwise be a silent
    /// choice. Adding the same function (a clone) again changes nothing.
    pub fn add(&mut self, f: &UserFunction) -> &mut Self {
        match self.by_name.get(f.name()) {
            Some(old) if old.id != f.id => {
                self.clash.get_or_insert_with(|| f.name().to_string());
            }
            Some(_) => {}
            None => {
                self.by_name.insert(f.name().to_string(), f.clone());
            }
        }
        self
    }

    /// Whether the set is usable: no name was added for two different functions.
    ///
    /// # Errors
    /// [`Error::UserFunction`] with [`UserProblem::Duplicate`], naming the first name
    /// added twice.
    pub fn check(&self) -> Result<(), Error> {
        match &self.clash {
            Some(name) => Err(Error::UserFunction {
                name: name.clone(),
                problem: UserProblem::Duplicate,
            }),
            None => Ok(()),
        }
    }

    /// The function called `name`, if any.
    pub fn get(&self, name: &str) -> Option<&UserFunction> {
        self.by_name.get(name)
    }

    /// The names, in byte order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.by_name.keys().map(String::as_str)
    }
}

/// The tag of the partial of the call tagged `tag` with respect to its argument `wrt`
/// (`0 ≤ wrt < arity`), or `None` when it is structurally zero (an argument the function
/// does not take, or a tag that is not one).
pub(crate) fn partial_tag(tag: f64, wrt: usize) -> Option<f64> {
    let (id, part) = decode(tag)?;
    let arity = entry(id)?.arity;
    if wrt >= arity {
        return None;
    }
    let next = match Part::of(part, arity)? {
        Part::Value => Part::First(wrt),
        Part::First(i) => Part::Second(i.min(wrt), i.max(wrt)),
        Part::Second(..) | Part::Third => Part::Third,
    };
    Some(tag_of(id, next.number(arity)))
}

/// How a call tagged `tag` prints: `name(…)`, `name_d0(…)`, `name_d01(…)`, …, and the
/// function's arity; `None` for a tag that names no function.
pub fn describe(tag: f64) -> Option<(String, usize)> {
    let (id, part) = decode(tag)?;
    let e = entry(id)?;
    let suffix = match Part::of(part, e.arity)? {
        Part::Value => String::new(),
        // One digit per index below 10 (`_d0`, `_d01`, as for one or two arguments);
        // `_` between indices past that (`_d3_12`).
        Part::First(i) => format!("_d{i}"),
        Part::Second(i, j) if e.arity <= 10 => format!("_d{i}{j}"),
        Part::Second(i, j) => format!("_d{i}_{j}"),
        Part::Third => "_d3".into(),
    };
    Some((format!("{}{suffix}", e.name), e.arity))
}

/// The name of the function a call tagged `tag` calls.
pub fn name_of(tag: f64) -> Option<String> {
    let (id, _) = decode(tag)?;
    Some(entry(id)?.name.clone())
}

thread_local! {
    /// The first failure of user code on this thread since it was last taken.
    static FAILURE: RefCell<Option<Error>> = const { RefCell::new(None) };
}

fn fail(e: Error) {
    FAILURE.with(|f| {
        if let Ok(mut f) = f.try_borrow_mut() {
            f.get_or_insert(e);
        }
    });
}

/// The first failure recorded by [`call`] on this thread since the last take, if any.
pub fn take_failure() -> Option<Error> {
    FAILURE.with(|f| f.try_borrow_mut().ok().and_then(|mut f| f.take()))
}

/// Records that the user function `name`, called now on this thread, failed with
/// `message` (a Python exception, say), for code that reports failures rather than
/// panicking: the call boundary answers [`Error::UserFunction`] with
/// [`UserProblem::Raised`]. The user code then returns NaN (or any value: the call's
/// answer is the error). Only the first failure before the next [`take_failure`] is kept.
pub fn report(name: &str, message: impl Into<String>) {
    fail(Error::UserFunction {
        name: name.to_string(),
        problem: UserProblem::Raised(message.into()),
    });
}

/// Whether a failure is recorded on this thread (left in place for [`take_failure`]).
pub fn failed() -> bool {
    FAILURE.with(|f| f.try_borrow().is_ok_and(|f| f.is_some()))
}

/// Evaluates the call tagged `tag` at `(a, b)` (a function of one or two arguments; `b`
/// is ignored for one): the value or the partial the tag names, from the user's code.
/// Never unwinds: a panic, an unknown tag, a function of another arity or a derivative
/// not given answers NaN and is recorded ([`take_failure`]); once a failure is recorded on
/// this thread, later calls answer NaN without running user code until it is taken. The
/// engines' entry into user code for one or two arguments.
pub extern "C" fn call(tag: f64, a: f64, b: f64) -> f64 {
    evaluate(tag, &[a, b], false)
}

/// [`call`] for a function of any arity at `x` (exactly its arity values): the entry the
/// interpreter and the graph's reference evaluation use for three or more arguments. A
/// slice of the wrong length answers NaN (recorded as the wrong argument count).
pub fn call_slice(tag: f64, x: &[f64]) -> f64 {
    evaluate(tag, x, true)
}

/// [`call_slice`] over the `k` values at `args`, for compiled code: the JIT stores a
/// call's arguments to a stack slot and calls this through the math table.
///
/// # Safety
/// `args` must point to `k` readable `f64` values (it is not read when `k` is 0).
pub unsafe extern "C" fn call_n(tag: f64, args: *const f64, k: usize) -> f64 {
    if k == 0 || args.is_null() {
        return call_slice(tag, &[]);
    }
    // SAFETY: the caller's contract.
    let x = unsafe { std::slice::from_raw_parts(args, k) };
    call_slice(tag, x)
}

thread_local! {
    /// Partials buffers for functions of three or more arguments, reused across calls
    /// (taken while user code runs, so a call from inside user code makes its own).
    static BUFFER: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` over `n` zeros, from the thread's buffer when it is free.
fn with_zeros<R>(n: usize, f: impl FnOnce(&mut [f64]) -> R) -> R {
    let mut buf = BUFFER
        .with(|b| b.try_borrow_mut().map(|mut b| std::mem::take(&mut *b)))
        .unwrap_or_default();
    buf.clear();
    buf.resize(n, 0.0);
    let r = f(&mut buf);
    BUFFER.with(|b| {
        if let Ok(mut b) = b.try_borrow_mut() {
            *b = buf;
        }
    });
    r
}

/// The one body of [`call`] and [`call_slice`]: the arguments are `given` (all of them when
/// `exact`; else its first `arity`, for a function of at most two).
fn evaluate(tag: f64, given: &[f64], exact: bool) -> f64 {
    // The call already fails (every entry takes the record first and answers it after):
    // user code is not run again, so a function that panics is not re-entered for every
    // remaining point of a batch.
    if failed() {
        return f64::NAN;
    }
    let Some((id, part)) = decode(tag) else {
        return f64::NAN;
    };
    let Some(e) = entry(id) else {
        return f64::NAN;
    };
    let Some(part) = Part::of(part, e.arity) else {
        return f64::NAN;
    };
    let fits = if exact {
        given.len() == e.arity
    } else {
        e.arity <= given.len()
    };
    if !fits {
        fail(Error::UserFunction {
            name: e.name.clone(),
            problem: UserProblem::ArgumentCount(given.len()),
        });
        return f64::NAN;
    }
    let x = &given[..e.arity];
    let missing = |order| {
        fail(Error::UserFunction {
            name: e.name.clone(),
            problem: UserProblem::NotGiven(order),
        });
        f64::NAN
    };
    let k = e.arity;
    let run = catch_unwind(AssertUnwindSafe(|| match part {
        Part::Value => (e.value)(x),
        Part::First(i) if k <= 2 => {
            let mut g = [0.0; 2];
            (e.first)(x, &mut g[..k]);
            g[i]
        }
        Part::First(i) => with_zeros(k, |g| {
            (e.first)(x, g);
            g[i]
        }),
        Part::Second(i, j) => match &e.second {
            Some(second) if k <= 2 => {
                let mut h = [0.0; 4];
                (second)(x, &mut h[..k * k]);
                h[(i * k + j).min(k * k - 1)]
            }
            Some(second) => with_zeros(k * k, |h| {
                (second)(x, h);
                h[i * k + j]
            }),
            None => missing(2),
        },
        Part::Third => missing(3),
    }));
    run.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        fail(Error::UserFunction {
            name: e.name.clone(),
            problem: UserProblem::Panicked(message),
        });
        f64::NAN
    })
}

/// The tag of the first user-function call in `graph`, if it holds one.
pub fn first_call(graph: &crate::Graph) -> Option<f64> {
    graph.nodes().iter().find_map(|n| match *n {
        crate::Node::Apply(Op::Call, args) => Some(graph.constant_of(args[0]).unwrap_or(f64::NAN)),
        _ => None,
    })
}

/// The error for `what` refusing a graph that holds the call tagged `tag`.
pub fn unsupported(tag: f64, what: &'static str) -> Error {
    Error::UserFunction {
        name: name_of(tag).unwrap_or_default(),
        problem: UserProblem::Unsupported(what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{build, var, Graph, Node, SymbolId};

    /// The part numbering is one-to-one for every arity, and for one or two arguments it
    /// is the layout the tags had before functions of more arguments (0–6).
    #[test]
    fn parts_number_one_to_one() {
        for arity in 1..=12 {
            let k = arity.max(2);
            let mut all = vec![Part::Value, Part::Third];
            all.extend((0..k).map(Part::First));
            all.extend((0..k).flat_map(|j| (0..=j).map(move |i| Part::Second(i, j))));
            let mut numbers: Vec<u64> = all.iter().map(|p| p.number(arity)).collect();
            for (p, &n) in all.iter().zip(&numbers) {
                assert_eq!(Part::of(n, arity), Some(*p), "arity {arity}");
            }
            numbers.sort_unstable();
            assert_eq!(numbers, (0..all.len() as u64).collect::<Vec<_>>());
            assert_eq!(Part::of(all.len() as u64, arity), None);
        }
        let old = [
            Part::Value,
            Part::First(0),
            Part::First(1),
            Part::Second(0, 0),
            Part::Second(0, 1),
            Part::Second(1, 1),
            Part::Third,
        ];
        for arity in [1, 2] {
            for (n, p) in old.iter().enumerate() {
                assert_eq!(p.number(arity), n as u64);
            }
        }
        assert!(MAX_ARITY * (MAX_ARITY + 1) / 2 + MAX_ARITY + 2 <= PARTS as usize);
    }

    fn sum3() -> UserFunction {
        UserFunction::new("sum3", 3, |x| x[0] + x[1] + x[2], |_, g| g.fill(1.0)).unwrap()
    }

    /// A call of three arguments is `call(tag, a, pack(b, c))`: the graph verifies, the
    /// arguments read back in order, a pack of constants stays a node, and its partials'
    /// names print.
    #[test]
    fn a_call_reads_its_arguments_through_a_pack_chain() {
        let f = sum3();
        let m = build(|| vec![f.call(&[var("x"), 2.0.into(), 3.0.into()])]).unwrap();
        let g = m.graph();
        assert!(
            crate::verify(g, 1, 0).is_empty(),
            "{:?}",
            crate::verify(g, 1, 0)
        );
        let call = m.outputs()[0];
        assert!(g.is_packed_call(call));
        let args: Vec<Option<f64>> = g.call_args(call).map(|a| g.constant_of(a)).collect();
        assert_eq!(args, [None, Some(2.0), Some(3.0)]);
        assert_eq!(g.eval_reference(&[call], &[1.0], &[]), [6.0]);
        let tag = g.constant_of(g.node(call).args()[0]).unwrap();
        let d2 = partial_tag(tag, 2).unwrap();
        assert_eq!(describe(d2), Some(("sum3_d2".into(), 3)));
        let d12 = partial_tag(d2, 1).unwrap();
        assert_eq!(describe(d12), Some(("sum3_d12".into(), 3)));
        assert_eq!(partial_tag(tag, 3), None);
        assert_eq!(call_slice(d2, &[1.0, 2.0, 3.0]), 1.0);
        // The second partial was not given: NaN, recorded.
        let _ = take_failure();
        assert!(call_slice(d12, &[1.0, 2.0, 3.0]).is_nan());
        assert!(take_failure().is_some());
        // The wrong number of values: NaN, recorded.
        assert!(call_slice(tag, &[1.0, 2.0]).is_nan());
        assert!(take_failure().is_some());
    }

    /// A pack anywhere but a call's or a pack's last operand is a violation.
    #[test]
    fn a_misplaced_pack_is_a_violation() {
        let mut g = Graph::new();
        let x = g.symbol(SymbolId(0));
        let y = g.symbol(SymbolId(1));
        let p = g.binary(Op::Pack, x, y);
        assert!(crate::verify(&g, 2, 0).is_empty());
        let _ = g.binary(Op::Add, p, x);
        let v = crate::verify(&g, 2, 0);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].what.contains("a pack is argument 0 of add"), "{v:?}");
        let _ = g.binary(Op::Pack, p, y);
        assert_eq!(crate::verify(&g, 2, 0).len(), 2);
        assert!(matches!(g.node(p), Node::Apply(Op::Pack, _)));
    }

    /// Calling through the JIT's entry reads `k` values from a pointer.
    #[test]
    fn call_n_reads_k_values() {
        let f = sum3();
        let x = [1.0, 2.0, 4.0];
        // SAFETY: three values.
        let v = unsafe { call_n(f.value_tag(), x.as_ptr(), 3) };
        assert_eq!(v, 7.0);
        // SAFETY: as above (through the table's entry).
        let t = unsafe { (crate::math::MATH_TABLE.call_n[0])(f.value_tag(), x.as_ptr(), 3) };
        assert_eq!(t, 7.0);
    }
}
