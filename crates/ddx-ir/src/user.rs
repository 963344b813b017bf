//! User functions: functions of one or two arguments that bring their own partials
//! (CasADi's and CppAD's atomic functions, JAX's `custom_jvp`).
//!
//! [`UserFunction::new`] registers a function's value and first partials (and, with
//! [`UserFunction::with_second`], its second partials) in a process-wide registry, which
//! gives it an id. A call in a graph is the node `call(tag, a, b)` ([`Op::Call`]): `tag` is
//! a constant naming the function and which derivative the node is — the value, the
//! partial `∂/∂a` or `∂/∂b`, or a second partial — and `b` is the constant `0` for a
//! function of one argument. The AD rule of a call is the call of its partial, so every
//! lane, in both modes and at second order, uses the partials the user gave.
//!
//! **Engines.** The interpreter evaluates a call through [`call`], and the JIT calls the
//! same function through the math table ([`crate::math::MathTable`]), so kernels stay free
//! of relocations and the two engines agree to the bit. The device engine, the emitted
//! source and saving refuse a graph holding a call (ids are this process's).
//!
//! **Failures.** User code runs inside [`call`], which never unwinds: a panic is caught
//! there (never crossing a compiled frame), answered as NaN and recorded for the calling
//! thread, as is a call of a derivative the user did not give (a second partial of a
//! function registered without them, or any third partial). The call boundary (in `ddx`)
//! takes the record with [`take_failure`] and answers the error, naming the function. A
//! NaN the user code returns is an ordinary value and flows as IEEE says.
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

/// Which derivative a call node is (the low bits of its tag).
const VALUE: u64 = 0;
/// `∂/∂a`, `∂/∂b`: parts 1 and 2.
const FIRST: u64 = 1;
/// `∂²/∂a²`, `∂²/∂a∂b`, `∂²/∂b²`: parts 3, 4, 5.
const SECOND: u64 = 3;
/// Any third partial: never given.
const THIRD: u64 = 6;
const PARTS: u64 = 8;

/// The tag of function `id`'s derivative `part`: an integer, exact in `f64` for any id
/// below 2⁵⁰.
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
    /// Registers the function `name` of `arity` arguments (1 or 2): `value(x)` is its
    /// value and `first(x, g)` writes its `arity` first partials into `g`. Both must be
    /// pure (a call may be evaluated any number of times, or merged with an equal one) and
    /// thread-safe.
    ///
    /// # Errors
    /// [`Error::UserFunction`] when `arity` is not 1 or 2, or `name` is not an identifier
    /// (ASCII letters, digits, `_`, not starting with a digit) or is a built-in
    /// function's name.
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
        if !(1..=2).contains(&arity) {
            return Err(bad(UserProblem::Arity(arity)));
        }
        let ident = name
            .bytes()
            .enumerate()
            .all(|(i, b)| b == b'_' || b.is_ascii_alphabetic() || (i > 0 && b.is_ascii_digit()));
        if name.is_empty() || !ident || Op::from_call_name(name).is_some() {
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
    /// arguments the model's build fails with [`Error::UserFunction`].
    pub fn call(&self, args: &[Expr]) -> Expr {
        if args.len() != self.entry.arity {
            builder::record_error(Error::UserFunction {
                name: self.entry.name.clone(),
                problem: UserProblem::ArgumentCount(args.len()),
            });
            return Expr::from(f64::NAN);
        }
        let t = Expr::from(tag_of(self.id, VALUE));
        let b = args.get(1).copied().unwrap_or(Expr::from(0.0));
        builder::apply(Op::Call, &[t, args[0], b])
    }

    /// The tag of this function's value node, for the parser.
    pub(crate) fn value_tag(&self) -> f64 {
        tag_of(self.id, VALUE)
    }
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
}

impl Functions {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `f` under its name (replacing one of the same name).
    pub fn add(&mut self, f: &UserFunction) -> &mut Self {
        self.by_name.insert(f.name().to_string(), f.clone());
        self
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
/// (0 or 1), or `None` when it is structurally zero (an argument the function does not
/// take, or a tag that is not one).
pub(crate) fn partial_tag(tag: f64, wrt: usize) -> Option<f64> {
    let (id, part) = decode(tag)?;
    let arity = entry(id)?.arity;
    if wrt >= arity {
        return None;
    }
    let w = wrt as u64;
    let next = match part {
        VALUE => FIRST + w,
        1 | 2 => {
            let (i, j) = ((part - FIRST).min(w), (part - FIRST).max(w));
            SECOND + i + j
        }
        _ => THIRD,
    };
    Some(tag_of(id, next))
}

/// How a call tagged `tag` prints: `name(…)`, `name_d0(…)`, `name_d01(…)`, …, and the
/// function's arity; `None` for a tag that names no function.
pub fn describe(tag: f64) -> Option<(String, usize)> {
    let (id, part) = decode(tag)?;
    let e = entry(id)?;
    let suffix = match part {
        VALUE => String::new(),
        1 | 2 => format!("_d{}", part - 1),
        3 => "_d00".into(),
        4 => "_d01".into(),
        5 => "_d11".into(),
        _ => "_d3".into(),
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

/// Evaluates the call tagged `tag` at `(a, b)`: the value or the partial the tag names,
/// from the user's code. Never unwinds: a panic, an unknown tag or a derivative not given
/// answers NaN and is recorded ([`take_failure`]); once a failure is recorded on this
/// thread, later calls answer NaN without running user code until it is taken. The
/// engines' one entry into user code.
pub extern "C" fn call(tag: f64, a: f64, b: f64) -> f64 {
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
    let x = [a, b];
    let x = &x[..e.arity];
    let missing = |order| {
        fail(Error::UserFunction {
            name: e.name.clone(),
            problem: UserProblem::NotGiven(order),
        });
        f64::NAN
    };
    let run = catch_unwind(AssertUnwindSafe(|| match part {
        VALUE => (e.value)(x),
        1 | 2 => {
            let mut g = [0.0; 2];
            (e.first)(x, &mut g[..e.arity]);
            g[(part - FIRST) as usize]
        }
        3..=5 => match &e.second {
            Some(second) => {
                let mut h = [0.0; 4];
                (second)(x, &mut h[..e.arity * e.arity]);
                let (i, j) = match part {
                    3 => (0, 0),
                    4 => (0, 1),
                    _ => (1, 1),
                };
                h[(i * e.arity + j).min(e.arity * e.arity - 1)]
            }
            None => missing(2),
        },
        _ => missing(3),
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
