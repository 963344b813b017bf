//! Errors: every failure ddx reports, as data.
//!
//! [`Error`] carries what went wrong with the names and numbers involved; [`Errc`] is the
//! bare code, spelled as the reference specification's `errc` (`"wrong_arity"`, …), for
//! callers that branch on the kind of failure or report it across a language boundary.
//! Several variants may share one code ([`Error::ShortPoint`] and [`Error::MissingSymbol`]
//! are both `short_point`). Nothing in ddx panics on user input: every refusal is one of
//! these.

use std::fmt;

use crate::text::quoted;
pub use crate::text::{Expected, Location, Syntax};
use crate::words::count;

/// What a vector argument of a product call is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VectorRole {
    /// A direction `v`, one value per symbol (`jvp`, `hvp`).
    Direction,
    /// A covector (weights) `w`, one value per function (`vjp`).
    Covector,
}

/// What a named vector (a collection of `(name, value)` pairs) stands for; decides the
/// wording of [`Error::DuplicateSymbol`], and, in `ddx`, which error a positional mismatch
/// is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointRole {
    /// A point: the values of the symbols.
    Point,
    /// A direction over the symbols (`jvp`, `hvp`).
    Direction,
}

impl fmt::Display for PointRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PointRole::Point => "point",
            PointRole::Direction => "direction",
        })
    }
}

impl fmt::Display for VectorRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            VectorRole::Direction => "direction (one value per symbol)",
            VectorRole::Covector => "covector (one weight per function)",
        })
    }
}

/// What went wrong with a user function ([`Error::UserFunction`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UserProblem {
    /// It was registered with this many arguments; 1 to [`crate::user::MAX_ARITY`] are
    /// taken.
    Arity(usize),
    /// Its name is not an identifier, or is a built-in function's.
    Name,
    /// It was called with this many arguments.
    ArgumentCount(usize),
    /// Its code panicked, with this message.
    Panicked(String),
    /// Its code reported a failure (a Python exception, say), with this message
    /// ([`crate::user::report`]).
    Raised(String),
    /// A lane needs its partials of this order (2 or more), which were not given.
    NotGiven(usize),
    /// What cannot hold one: saving, the device, emitted source, the kernel cache.
    Unsupported(&'static str),
    /// Two different functions of this name were given to one parse (a
    /// [`crate::Functions`] set, or a Python `functions=` list).
    Duplicate,
}

impl fmt::Display for UserProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UserProblem::Arity(k) => write!(
                f,
                "a user function takes 1 to {} arguments, not {k}",
                crate::user::MAX_ARITY
            ),
            UserProblem::Name => f.write_str(
                "the name must be a name of the text syntax, as a symbol's is (a Python \
                 identifier: a letter or `_`, then letters, digits or `_`, Unicode ones \
                 included, in NFKC form, with no invisible character; no Python keyword) and \
                 no built-in function's",
            ),
            UserProblem::ArgumentCount(k) => write!(f, "called with {}", count(*k, "argument")),
            UserProblem::Panicked(m) => write!(f, "the function panicked: {}", lines(m)),
            UserProblem::Raised(m) => write!(f, "the function failed: {}", lines(m)),
            UserProblem::NotGiven(2) => f.write_str(
                "the call needs second partials, which the function was registered without \
                 (register them with `with_second`; from Python, `second=`)",
            ),
            UserProblem::NotGiven(k) => write!(
                f,
                "the call needs partials of order {k}; user functions give at most 2"
            ),
            UserProblem::Unsupported(what) => write!(f, "{what} cannot hold a user function"),
            UserProblem::Duplicate => f.write_str(
                "two different functions of this name were given to one parse; give each \
                 name once",
            ),
        }
    }
}

/// Which block of a batch call a column belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Block {
    /// The point columns, one per symbol.
    Points,
    /// The direction columns of `jvp`/`hvp`, one per symbol.
    Directions,
    /// The weight columns of `vjp`, one per function.
    Weights,
    /// The value columns, one per function.
    Values,
    /// The partial-derivative columns: one per structurally nonzero Jacobian cell.
    Partials,
    /// The product columns of `jvp` (`m`), `vjp` (`n`) or `hvp` (`n`).
    Products,
    /// The compressed Hessian columns.
    Hessians,
    /// The derivative-tensor columns (`derivative_tensor_batch`).
    Tensors,
}

impl fmt::Display for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Block::Points => "point",
            Block::Directions => "direction",
            Block::Weights => "weight",
            Block::Values => "value",
            Block::Partials => "partial",
            Block::Products => "product",
            Block::Hessians => "hessian",
            Block::Tensors => "tensor",
        })
    }
}

/// An error from building or calling an equation.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A positional point gives more values than there are symbols.
    #[error(
        "wrong_arity: the point gives {}, but the equation has {}",
        count(*.got, "value"),
        count(*.expected, "symbol")
    )]
    WrongArity {
        /// The symbol count.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// An output buffer passed to a per-point `*_into` call has the wrong length.
    #[error(
        "wrong_output_length: the output buffer holds {}, the call writes {expected}",
        count(*.got, "value")
    )]
    WrongOutputLength {
        /// The length the call writes (`m`, `m·n` or `m·n·n`).
        expected: usize,
        /// The buffer's length.
        got: usize,
    },
    /// A direction or covector has the wrong length.
    #[error(
        "wrong_direction: the {role} has {}, {expected} expected",
        count(*.got, "value")
    )]
    WrongDirection {
        /// Which vector.
        role: VectorRole,
        /// The length it must have.
        expected: usize,
        /// The length given.
        got: usize,
    },
    // -- issue 4 (second order) ------------------------------------------------------
    /// A call defined for one output only (`hvp`) was made on a system.
    #[error(
        "not_scalar: `{call}` needs an equation of one output; this one has {}",
        count(*.outputs, "output")
    )]
    NotScalar {
        /// The call refused.
        call: &'static str,
        /// The equation's output count.
        outputs: usize,
    },
    // -- end issue 4 -----------------------------------------------------------------
    /// A positional point gives fewer values than there are symbols.
    #[error(
        "short_point: the point gives {}, but the equation has {}",
        count(*.got, "value"),
        count(*.expected, "symbol")
    )]
    ShortPoint {
        /// The symbol count.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// A named point gives no value for a symbol.
    #[error("short_point: the named point gives no value for symbol `{}`", quoted(.name))]
    MissingSymbol {
        /// The first symbol (in canonical order) left without a value.
        name: String,
    },
    /// A named point names a symbol the equation does not have.
    #[error(
        "unknown_symbol: the equation has no symbol `{}`{}",
        quoted(.name),
        suggest(.nearest)
    )]
    UnknownSymbol {
        /// The name given.
        name: String,
        /// The closest symbol name the equation does have, if any is close.
        nearest: Option<String>,
    },
    /// A named point or direction gives two values for one symbol.
    #[error(
        "duplicate_symbol: the named {role} gives symbol `{}` more than once",
        quoted(.name)
    )]
    DuplicateSymbol {
        /// The repeated name.
        name: String,
        /// Whether the pairs were a point or a direction (`jvp`, `hvp`).
        role: PointRole,
    },
    /// One name was used both as a symbol (`rt::var`) and as a parameter (`rt::param`) of
    /// one model, or listed twice as a text's parameter. Its code is
    /// [`Errc::DuplicateSymbol`].
    #[error(
        "duplicate_symbol: `{}` is both a symbol and a parameter of the model",
        quoted(.name)
    )]
    ParameterConflict {
        /// The name.
        name: String,
    },
    /// A call of an equation with parameters was given no values for them: bind them with
    /// `Equation::with_params` (or, in a batch call, give one column per parameter after
    /// the symbol columns). Its code is [`Errc::ShortPoint`].
    #[error(
        "short_point: parameter `{}` has no value: bind the parameters with \
         `with_params`, or give a batch call one column per parameter after the symbols'",
        quoted(.name)
    )]
    UnboundParameter {
        /// The first parameter (in canonical order) without a value.
        name: String,
    },
    /// A user function ([`crate::UserFunction`]) was registered or called wrongly, or its
    /// code failed during a call: the call answers this instead of a value.
    #[error("user_function: `{}`: {problem}", quoted(.name))]
    UserFunction {
        /// The function's name.
        name: String,
        /// What went wrong.
        problem: UserProblem,
    },
    /// [`LaneKind::Tensor`](crate::LaneKind::Tensor) was given where one of an equation's
    /// fixed lanes ([`LaneKind::ALL`](crate::LaneKind::ALL)) is meant: the tensor lanes are
    /// one per order, built on request by `derivative_tensor(k, …)`.
    #[error(
        "tensor_lane: `{call}` takes one of the fixed lane kinds (Value, Jacobian, Gradient, \
         Jvp, Vjp, Hessian, Hvp); the tensor lanes are one per order: ask \
         `derivative_tensor(k, point)`"
    )]
    TensorLane {
        /// The call that was given `LaneKind::Tensor`.
        call: &'static str,
    },
    /// An index does not name a symbol of the equation.
    #[error(
        "index_out_of_range: index {index} names no symbol; the equation has {}",
        count(*.len, "symbol")
    )]
    IndexOutOfRange {
        /// The index given.
        index: usize,
        /// The symbol count.
        len: usize,
    },
    /// A batch block has the wrong number of columns.
    #[error(
        "wrong_column_count: {} given, {expected} expected",
        count(*.got, &format!("{block} column"))
    )]
    WrongColumnCount {
        /// Which block.
        block: Block,
        /// The column count the equation needs (see the `*_columns()` accessors).
        expected: usize,
        /// Columns given.
        got: usize,
    },
    /// A batch column's length differs from the point count (the longest input column's
    /// length), and is not 1 (an input column of length 1 is broadcast).
    #[error(
        "column_length: {block} column {column} holds {}, but the batch has {} (the length \
         of the longest input column; an input column of 1 value is broadcast)",
        count(*.got, "value"),
        count(*.expected, "point")
    )]
    ColumnLength {
        /// Which block.
        block: Block,
        /// The column's index in its block.
        column: usize,
        /// The point count.
        expected: usize,
        /// Its length.
        got: usize,
    },
    /// A symbol was named, or an expression combined, outside an equation's model closure.
    #[error("no_arena: a symbol was named outside an `rt::equation` model closure")]
    NoArena,
    /// An expression handle was used outside the model closure that made it, and that
    /// closure is not open on this thread: it has returned (its equation is built), or it
    /// runs on another thread.
    #[error(
        "sealed_arena: an expression was used outside the model closure that made it, which \
         has already returned or is running on another thread; build every expression \
         inside the closure that returns it, on that closure's thread"
    )]
    SealedArena,
    /// An expression from an enclosing, still-running model was used inside a nested one.
    #[error(
        "foreign_expression: an expression from an enclosing model closure was used inside a \
         nested `rt::equation`; each model's expressions stay in its own closure"
    )]
    ForeignExpression,
    /// Every output of the model is a literal, so there is no function of any symbol.
    #[error("no_graph: every output is a literal; none depends on a symbol")]
    NoGraph,
    /// The model has no outputs at all: no texts were given, or the model closure returned
    /// an empty system. Its code is [`Errc::NoGraph`].
    #[error("no_graph: the system has no outputs")]
    NoOutputs,
    // ---- The text parser (`crate::text`). ----
    /// A text does not follow the grammar.
    #[error("bad_syntax: {problem}\n{at}")]
    BadSyntax {
        /// The text and the byte where the problem is.
        at: Location,
        /// What is wrong there.
        problem: Syntax,
    },
    /// A text calls a function the grammar does not have.
    #[error(
        "unknown_function: there is no function `{}`{}\n{at}",
        quoted(.name),
        suggest(.nearest)
    )]
    UnknownFunction {
        /// The text and the byte where the name starts.
        at: Location,
        /// The name called.
        name: String,
        /// The closest function name there is, if any is close.
        nearest: Option<String>,
    },
    /// A text calls a function with the wrong number of arguments.
    #[error(
        "wrong_argument_count: `{function}` takes {}, {given} given\n{at}",
        count(*.expected, "argument")
    )]
    WrongArgumentCount {
        /// The text and the byte of the first surplus argument, or of the `)` that came too
        /// soon.
        at: Location,
        /// The function called.
        function: crate::Op,
        /// How many it takes.
        expected: usize,
        /// How many were given.
        given: usize,
    },
    /// `univariate_derivative` on a model that is not one symbol and one output.
    #[error(
        "not_univariate: a univariate derivative needs one symbol and one output, \
         the equation has {} and {}",
        count(*.symbols, "symbol"),
        count(*.outputs, "output")
    )]
    NotUnivariate {
        /// Symbol count.
        symbols: usize,
        /// Output count.
        outputs: usize,
    },
    /// Taylor arithmetic cannot expand an operation at the point asked (a branch point or
    /// pole of the operation, where no power series exists; see `ddx_ir::ad::taylor`).
    #[error(
        "unsupported_scalar: truncated Taylor arithmetic cannot expand `{op}` here \
         (a branch point or pole of the operation)"
    )]
    UnsupportedScalar {
        /// The operation's name.
        op: &'static str,
    },
    /// `univariate_derivative` (or a Taylor sweep) was asked for an order above the most
    /// it computes (`ddx_ir::ad::taylor::MAX_DEGREE`, past which `K!` overflows `f64`), or
    /// `derivative_tensor` for an order outside `1..=max` (order 0 too: its answer is the
    /// value, which `value` gives).
    #[error("order_too_high: {}", order_message(*order, *max))]
    OrderTooHigh {
        /// The order asked.
        order: usize,
        /// The highest order computed.
        max: usize,
    },
    /// No kernel is made for a lane: the code generator cannot target this machine (or
    /// this lane width on it), or the lane or its kernel is over a size limit (its node
    /// count, its stack frame). The lane is interpreted.
    #[error("jit_target: the lane is interpreted, not compiled: {detail}")]
    JitTarget {
        /// What was refused, and why.
        detail: String,
    },
    /// The code generator failed on a lane's function.
    #[error("jit_module: the code generator failed on the {lane} lane: {detail}")]
    JitModule {
        /// The lane's name (`"jacobian"`, …).
        lane: &'static str,
        /// The code generator's message.
        detail: String,
    },
    /// Compiled code could not be made runnable (it needs relocation, or executable memory
    /// could not be had).
    #[error("jit_object: compiled code cannot be run: {detail}")]
    JitObject {
        /// Why.
        detail: String,
    },
    /// The code generator's verifier rejected a lane's function (a bug in ddx's lowering).
    /// Debug builds run the verifier on every function; release builds skip it (it changes
    /// no code, and took a quarter of each compile).
    #[error("jit_verify: the {lane} lane's function fails verification: {detail}")]
    JitVerify {
        /// The lane's name.
        lane: &'static str,
        /// The verifier's report.
        detail: String,
    },
    /// The kernel cache directory cannot be used (an empty path, a path that is not a
    /// directory, a read or write the system refused). Reported in the JIT's status, never
    /// by a call: kernels are then compiled and kept in memory only.
    #[error("jit_cache: the kernel cache {path:?} cannot be used: {detail}")]
    JitCache {
        /// The directory (or the entry in it) concerned.
        path: std::path::PathBuf,
        /// What failed.
        detail: String,
    },
    /// No OpenCL device answers under `Backend::Device`: the OpenCL library cannot be
    /// loaded, no platform is installed, no device has double precision, nothing matches
    /// the selector, or this build has no device backend. Reported in the device status;
    /// calls answer from the CPU.
    #[error("no_device: no OpenCL device answers: {detail}")]
    NoDevice {
        /// Why, in the words of what was tried.
        detail: String,
    },
    /// The device's compiler refused a lane's OpenCL C. Reported in the device status;
    /// the lane answers from the CPU.
    #[error("device_compile: the device could not build the {lane} lane's kernel: {log}")]
    DeviceCompile {
        /// The lane's name.
        lane: &'static str,
        /// The driver's build log (or the call that failed).
        log: String,
    },
    /// A device kernel could not be launched or its columns moved. Reported in the device
    /// status (or answered by a call on device-resident columns); the lane then answers
    /// from the CPU.
    #[error("device_launch: the {lane} lane's kernel failed on the device: {detail}")]
    DeviceLaunch {
        /// The lane's name.
        lane: &'static str,
        /// The OpenCL call and its error code.
        detail: String,
    },
    /// A saved equation could not be read or written: the system refused (the OS error is
    /// in `detail`).
    #[error("archive_io: {}: {detail}", archive_source(.path))]
    ArchiveIo {
        /// The file (empty for bytes in memory).
        path: std::path::PathBuf,
        /// What failed, with the system's message.
        detail: String,
    },
    /// The bytes are not a ddx equation file, or are of a format version this build does
    /// not read.
    #[error("bad_archive: {}: {detail}", archive_source(.path))]
    BadArchive {
        /// The file (empty for bytes in memory).
        path: std::path::PathBuf,
        /// What was found instead.
        detail: String,
    },
    /// A ddx equation file whose checksum or structure does not hold (damaged, truncated,
    /// or inconsistent).
    #[error("archive_corrupt: {}: {detail}", archive_source(.path))]
    ArchiveCorrupt {
        /// The file (empty for bytes in memory).
        path: std::path::PathBuf,
        /// What does not hold.
        detail: String,
    },
    /// A sound ddx equation file that does not describe this equation, or not one of this
    /// shape (a scalar file loaded as a system, or the other way round).
    #[error("archive_mismatch: {}: {detail}", archive_source(.path))]
    ArchiveMismatch {
        /// The file (empty for bytes in memory).
        path: std::path::PathBuf,
        /// What differs.
        detail: String,
    },
    // ---- Generated source (`crate::emit`) and derivative tensors. ----
    /// A name cannot name what it was given for: an emitted function (it must be an
    /// identifier in Rust and C), or a symbol (`rt::var("")`: a symbol needs a name).
    #[error("bad_name: `{}` cannot name {what}: {why}", quoted(.name))]
    BadName {
        /// The name given.
        name: String,
        /// What it was to name: `"an emitted function"` or `"a symbol"`.
        what: &'static str,
        /// Which rule it breaks.
        why: &'static str,
    },
    /// A call's answer would hold more values than allowed: nothing was allocated or
    /// computed. For the dense per-point answers the limit is `ddx::Options::answer_limit`
    /// (2²⁸ values by default): raise it, or ask for the sparse answer (`sparse_jacobian`,
    /// `sparse_hessian`), which holds only the structural nonzeros. `derivative_tensor`'s
    /// limits are fixed (`ddx::MAX_TENSOR_VALUES`).
    #[error("too_large: {}", too_large_message(call, *values, *limit))]
    TooLarge {
        /// The call refused.
        call: &'static str,
        /// How many `f64` values its answer would hold (`m·n` for a dense Jacobian,
        /// `m·n·n` for dense Hessians), exactly; `u128::MAX` stands for that many or more
        /// (a tensor of 2¹⁶ symbols at order 8 holds 2¹²⁸ per function).
        values: u128,
        /// The limit in force.
        limit: usize,
    },
    /// An integer literal of a text is past the `f64` range: its value rounds to
    /// infinity (|n| ≥ 2¹⁰²⁴ less half an ulp), where Python's `float(n)` raises
    /// `OverflowError` and an `int` that large given as a value is refused likewise. A
    /// float literal past the range (`1e999`) is infinity, as in Python. The code is
    /// [`Errc::TooLarge`].
    #[error(
        "too_large: this integer literal ({digits} digits) is past the float64 range: it \
         would round to infinity (Python's float() refuses it too); write a float literal \
         such as `1e400` if infinity is meant\n{at}"
    )]
    LiteralTooLarge {
        /// The text and the byte where the literal starts.
        at: Location,
        /// How many digits the literal has.
        digits: usize,
    },
    /// Values that should be real numbers were given in another type: from a binding, an
    /// array of complex numbers, strings or objects where `f64` values are read. The Rust
    /// API takes `f64` and never raises it.
    #[error("wrong_dtype: {what}")]
    WrongDtype {
        /// What was given, and what was expected.
        what: String,
    },
    /// A lane given to a public function that lowers or emits it (`ddx::interp::Program`,
    /// `ddx::ir::emit`) breaks the invariants of the lanes ddx builds: a lane assembled or
    /// edited by hand whose graph fails the IR verifier for its input counts, or whose
    /// outputs name no node of its graph.
    #[error("bad_lane: the {lane} lane is not one ddx can run: {detail}")]
    BadLane {
        /// The lane's kind, by name.
        lane: &'static str,
        /// What does not hold.
        detail: String,
    },
}

/// A user function's own message, each line escaped ([`crate::text::escaped`]): its line
/// breaks kept, every other control or invisible character shown as an escape.
fn lines(m: &str) -> String {
    m.split('\n')
        .map(crate::text::escaped)
        .collect::<Vec<_>>()
        .join("\n")
}

/// How an archive error names where the bytes came from: the path whole, escaped
/// ([`crate::text::escaped`]: a control or invisible character in a file's name shows as
/// an escape, never raw).
fn archive_source(path: &std::path::Path) -> String {
    if path.as_os_str().is_empty() {
        "the equation bytes".into()
    } else {
        crate::text::escaped(&path.display().to_string())
    }
}

fn suggest(nearest: &Option<String>) -> String {
    match nearest {
        Some(n) => format!(" (did you mean `{}`?)", quoted(n)),
        None => String::new(),
    }
}

/// The bare error codes, spelled as the reference specification's `errc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Errc {
    /// See [`Error::WrongArity`].
    WrongArity,
    /// See [`Error::WrongDirection`].
    WrongDirection,
    /// See [`Error::WrongOutputLength`].
    WrongOutputLength,
    /// See [`Error::NotScalar`].
    NotScalar,
    /// See [`Error::ShortPoint`] and [`Error::MissingSymbol`].
    ShortPoint,
    /// See [`Error::UnknownSymbol`].
    UnknownSymbol,
    /// See [`Error::DuplicateSymbol`].
    DuplicateSymbol,
    /// See [`Error::IndexOutOfRange`].
    IndexOutOfRange,
    /// See [`Error::WrongColumnCount`].
    WrongColumnCount,
    /// See [`Error::ColumnLength`].
    ColumnLength,
    /// See [`Error::NoArena`].
    NoArena,
    /// See [`Error::SealedArena`].
    SealedArena,
    /// See [`Error::ForeignExpression`].
    ForeignExpression,
    /// See [`Error::NoGraph`] and [`Error::NoOutputs`].
    NoGraph,
    /// See [`Error::BadSyntax`].
    BadSyntax,
    /// See [`Error::UnknownFunction`].
    UnknownFunction,
    /// See [`Error::WrongArgumentCount`].
    WrongArgumentCount,
    /// See [`Error::NotUnivariate`].
    NotUnivariate,
    /// See [`Error::UnsupportedScalar`].
    UnsupportedScalar,
    /// See [`Error::OrderTooHigh`].
    OrderTooHigh,
    /// See [`Error::JitTarget`].
    JitTarget,
    /// See [`Error::JitModule`].
    JitModule,
    /// See [`Error::JitObject`].
    JitObject,
    /// See [`Error::JitVerify`].
    JitVerify,
    /// See [`Error::JitCache`].
    JitCache,
    /// See [`Error::NoDevice`].
    NoDevice,
    /// See [`Error::DeviceCompile`].
    DeviceCompile,
    /// See [`Error::DeviceLaunch`].
    DeviceLaunch,
    /// See [`Error::ArchiveIo`].
    ArchiveIo,
    /// See [`Error::BadArchive`].
    BadArchive,
    /// See [`Error::ArchiveCorrupt`].
    ArchiveCorrupt,
    /// See [`Error::ArchiveMismatch`].
    ArchiveMismatch,
    /// See [`Error::BadName`].
    BadName,
    /// See [`Error::TooLarge`].
    TooLarge,
    /// See [`Error::UserFunction`].
    UserFunction,
    /// See [`Error::TensorLane`].
    TensorLane,
    /// See [`Error::WrongDtype`].
    WrongDtype,
    /// See [`Error::BadLane`].
    BadLane,
}

impl Errc {
    /// Every code, in declaration order: the order Python's `ddx.errc` numbers them
    /// (from 1), so each binding lists the codes from here rather than keeping its own copy.
    pub const ALL: &'static [Errc] = &[
        Errc::WrongArity,
        Errc::WrongDirection,
        Errc::WrongOutputLength,
        Errc::NotScalar,
        Errc::ShortPoint,
        Errc::UnknownSymbol,
        Errc::DuplicateSymbol,
        Errc::IndexOutOfRange,
        Errc::WrongColumnCount,
        Errc::ColumnLength,
        Errc::NoArena,
        Errc::SealedArena,
        Errc::ForeignExpression,
        Errc::NoGraph,
        Errc::BadSyntax,
        Errc::UnknownFunction,
        Errc::WrongArgumentCount,
        Errc::NotUnivariate,
        Errc::UnsupportedScalar,
        Errc::OrderTooHigh,
        Errc::JitTarget,
        Errc::JitModule,
        Errc::JitObject,
        Errc::JitVerify,
        Errc::JitCache,
        Errc::NoDevice,
        Errc::DeviceCompile,
        Errc::DeviceLaunch,
        Errc::ArchiveIo,
        Errc::BadArchive,
        Errc::ArchiveCorrupt,
        Errc::ArchiveMismatch,
        Errc::BadName,
        Errc::TooLarge,
        Errc::UserFunction,
        Errc::TensorLane,
        Errc::WrongDtype,
        Errc::BadLane,
    ];

    /// The code's spelling, e.g. `"wrong_arity"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Errc::WrongArity => "wrong_arity",
            Errc::WrongDirection => "wrong_direction",
            Errc::WrongOutputLength => "wrong_output_length",
            Errc::NotScalar => "not_scalar",
            Errc::ShortPoint => "short_point",
            Errc::UnknownSymbol => "unknown_symbol",
            Errc::DuplicateSymbol => "duplicate_symbol",
            Errc::IndexOutOfRange => "index_out_of_range",
            Errc::WrongColumnCount => "wrong_column_count",
            Errc::ColumnLength => "column_length",
            Errc::NoArena => "no_arena",
            Errc::SealedArena => "sealed_arena",
            Errc::ForeignExpression => "foreign_expression",
            Errc::NoGraph => "no_graph",
            Errc::BadSyntax => "bad_syntax",
            Errc::UnknownFunction => "unknown_function",
            Errc::WrongArgumentCount => "wrong_argument_count",
            Errc::NotUnivariate => "not_univariate",
            Errc::UnsupportedScalar => "unsupported_scalar",
            Errc::OrderTooHigh => "order_too_high",
            Errc::JitTarget => "jit_target",
            Errc::JitModule => "jit_module",
            Errc::JitObject => "jit_object",
            Errc::JitVerify => "jit_verify",
            Errc::JitCache => "jit_cache",
            Errc::NoDevice => "no_device",
            Errc::DeviceCompile => "device_compile",
            Errc::DeviceLaunch => "device_launch",
            Errc::ArchiveIo => "archive_io",
            Errc::BadArchive => "bad_archive",
            Errc::ArchiveCorrupt => "archive_corrupt",
            Errc::ArchiveMismatch => "archive_mismatch",
            Errc::BadName => "bad_name",
            Errc::TooLarge => "too_large",
            Errc::UserFunction => "user_function",
            Errc::TensorLane => "tensor_lane",
            Errc::WrongDtype => "wrong_dtype",
            Errc::BadLane => "bad_lane",
        }
    }
}

impl fmt::Display for Errc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// The error's code.
    pub fn code(&self) -> Errc {
        match self {
            Error::WrongArity { .. } => Errc::WrongArity,
            Error::WrongDirection { .. } => Errc::WrongDirection,
            Error::WrongOutputLength { .. } => Errc::WrongOutputLength,
            Error::NotScalar { .. } => Errc::NotScalar,
            Error::ShortPoint { .. }
            | Error::MissingSymbol { .. }
            | Error::UnboundParameter { .. } => Errc::ShortPoint,
            Error::UnknownSymbol { .. } => Errc::UnknownSymbol,
            Error::DuplicateSymbol { .. } | Error::ParameterConflict { .. } => {
                Errc::DuplicateSymbol
            }
            Error::IndexOutOfRange { .. } => Errc::IndexOutOfRange,
            Error::WrongColumnCount { .. } => Errc::WrongColumnCount,
            Error::ColumnLength { .. } => Errc::ColumnLength,
            Error::NoArena => Errc::NoArena,
            Error::SealedArena => Errc::SealedArena,
            Error::ForeignExpression => Errc::ForeignExpression,
            Error::NoGraph | Error::NoOutputs => Errc::NoGraph,
            Error::BadSyntax { .. } => Errc::BadSyntax,
            Error::UnknownFunction { .. } => Errc::UnknownFunction,
            Error::WrongArgumentCount { .. } => Errc::WrongArgumentCount,
            Error::NotUnivariate { .. } => Errc::NotUnivariate,
            Error::UnsupportedScalar { .. } => Errc::UnsupportedScalar,
            Error::OrderTooHigh { .. } => Errc::OrderTooHigh,
            Error::JitTarget { .. } => Errc::JitTarget,
            Error::JitModule { .. } => Errc::JitModule,
            Error::JitObject { .. } => Errc::JitObject,
            Error::JitVerify { .. } => Errc::JitVerify,
            Error::JitCache { .. } => Errc::JitCache,
            Error::NoDevice { .. } => Errc::NoDevice,
            Error::DeviceCompile { .. } => Errc::DeviceCompile,
            Error::DeviceLaunch { .. } => Errc::DeviceLaunch,
            Error::ArchiveIo { .. } => Errc::ArchiveIo,
            Error::BadArchive { .. } => Errc::BadArchive,
            Error::ArchiveCorrupt { .. } => Errc::ArchiveCorrupt,
            Error::ArchiveMismatch { .. } => Errc::ArchiveMismatch,
            Error::BadName { .. } => Errc::BadName,
            Error::TooLarge { .. } | Error::LiteralTooLarge { .. } => Errc::TooLarge,
            Error::UserFunction { .. } => Errc::UserFunction,
            Error::TensorLane { .. } => Errc::TensorLane,
            Error::WrongDtype { .. } => Errc::WrongDtype,
            Error::BadLane { .. } => Errc::BadLane,
        }
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The name in `candidates` nearest to `name` by edit distance, if it is close enough to be
/// a plausible typo (at most a third of the longer name's length, and at least 1 edit).
pub fn nearest_name<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let mut best: Option<(usize, &str)> = None;
    let len = name.chars().count();
    for c in candidates {
        let c_len = c.chars().count();
        if len.abs_diff(c_len) > len.max(c_len).div_ceil(3).max(1) {
            continue; // the distance is at least the difference in length: too far
        }
        let d = edit_distance(name, c);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    let (d, c) = best?;
    let limit = (name.chars().count().max(c.chars().count()))
        .div_ceil(3)
        .max(1);
    (d <= limit).then(|| c.to_string())
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// [`Error::TooLarge`]'s message: the size (past `u128`, "more than 3.4e38"), the
/// limit, and what can be done, which for `derivative_tensor` (a fixed limit) is not
/// what it is for the dense per-point answers.
fn too_large_message(call: &str, values: u128, limit: usize) -> String {
    let values = if values == u128::MAX {
        "more than 3.4e38".to_string()
    } else {
        values.to_string()
    };
    let advice = if call.starts_with("derivative_tensor") {
        "the limit is fixed (MAX_TENSOR_VALUES): ask for a lower order or over fewer symbols"
    } else {
        "Options::answer_limit for dense per-point answers: raise it, or ask for the sparse \
         answer, sparse_jacobian or sparse_hessian"
    };
    format!("`{call}` would answer {values} values, more than the limit of {limit} ({advice})")
}

/// [`Error::OrderTooHigh`]'s message: order 0 (which only `derivative_tensor` refuses) is
/// not too high, and is named as what it is.
fn order_message(order: usize, max: usize) -> String {
    if order == 0 {
        format!(
            "a derivative tensor of order 0 was asked; orders run from 1 to {max} (order 0 \
             is the value itself: use `value`)"
        )
    } else {
        format!("a derivative of order {order} was asked; the highest is {max}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_names() {
        assert_eq!(
            nearest_name("sine", ["sin", "cos", "sinh"]).as_deref(),
            Some("sin")
        );
        assert_eq!(nearest_name("alpha", ["a", "b"]), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn messages_name_the_code() {
        let e = Error::WrongArity {
            expected: 1,
            got: 2,
        };
        assert!(e.to_string().starts_with("wrong_arity"));
        assert_eq!(e.code().as_str(), "wrong_arity");
        let e = Error::UnknownSymbol {
            name: "bb".into(),
            nearest: Some("b".into()),
        };
        assert!(e.to_string().contains("did you mean `b`"));
    }

    /// Every message quoting a name given by the user quotes it escaped
    /// ([`quoted`]): none carries a control or invisible character.
    #[test]
    fn messages_quote_names_escaped() {
        for raw in ["x\u{200d}", "x\0", "x\u{3164}", "x\u{202e}y", "x\u{1b}[0m"] {
            let name = || raw.to_string();
            let errors = [
                Error::MissingSymbol { name: name() },
                Error::UnknownSymbol {
                    name: name(),
                    nearest: Some(name()),
                },
                Error::DuplicateSymbol {
                    name: name(),
                    role: PointRole::Point,
                },
                Error::ParameterConflict { name: name() },
                Error::UnboundParameter { name: name() },
                Error::UserFunction {
                    name: name(),
                    problem: UserProblem::Name,
                },
                Error::BadName {
                    name: name(),
                    what: "a symbol",
                    why: "",
                },
            ];
            for e in errors {
                let m = e.to_string();
                assert!(
                    !m.chars()
                        .any(|c| c.is_control() || crate::text::is_invisible(c)),
                    "{m:?}"
                );
                assert!(m.contains(&format!("`{}`", quoted(raw))), "{m:?}");
            }
        }
    }
}

#[cfg(test)]
mod errc_tests {
    use super::Errc;

    /// The match is exhaustive: a new code does not compile here until it is named, and
    /// the assertion then fails until it is in [`Errc::ALL`] too.
    #[test]
    fn all_lists_every_code_once() {
        fn listed(c: Errc) -> bool {
            match c {
                Errc::WrongArity
                | Errc::WrongDirection
                | Errc::WrongOutputLength
                | Errc::NotScalar
                | Errc::ShortPoint
                | Errc::UnknownSymbol
                | Errc::DuplicateSymbol
                | Errc::IndexOutOfRange
                | Errc::WrongColumnCount
                | Errc::ColumnLength
                | Errc::NoArena
                | Errc::SealedArena
                | Errc::ForeignExpression
                | Errc::NoGraph
                | Errc::BadSyntax
                | Errc::UnknownFunction
                | Errc::WrongArgumentCount
                | Errc::NotUnivariate
                | Errc::UnsupportedScalar
                | Errc::OrderTooHigh
                | Errc::JitTarget
                | Errc::JitModule
                | Errc::JitObject
                | Errc::JitVerify
                | Errc::JitCache
                | Errc::NoDevice
                | Errc::DeviceCompile
                | Errc::DeviceLaunch
                | Errc::ArchiveIo
                | Errc::BadArchive
                | Errc::ArchiveCorrupt
                | Errc::ArchiveMismatch
                | Errc::BadName
                | Errc::TooLarge
                | Errc::UserFunction
                | Errc::TensorLane
                | Errc::WrongDtype
                | Errc::BadLane => Errc::ALL.contains(&c),
            }
        }
        for &c in Errc::ALL {
            assert!(listed(c));
        }
        let mut names: Vec<&str> = Errc::ALL.iter().map(|c| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Errc::ALL.len(), "a code listed twice");
        assert_eq!(Errc::ALL.len(), 38);
    }
}
