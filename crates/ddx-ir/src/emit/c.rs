//! The C emitter: one translation-unit fragment per lane (see the parent module for the
//! signature, the compiler flags and the functions whose bits depend on the platform).

use super::{check_name, describe, uses};
use crate::{Error, Lane, Node, NodeId, Op};
use std::fmt::Write;

/// The helpers every emitted C function may call, guarded so that several emitted
/// functions can share one file. Each is the formula of the function of
/// [`crate::math`] (or of Rust's standard library) it is named after.
const HELPERS: &str = r#"#include <math.h>
#ifndef DDX_EMIT_HELPERS_1
#define DDX_EMIT_HELPERS_1
/* ddx's pow: exponents 2, -1 and 0.5 are a*a, 1/a and sqrt (with C's answers at -0, -inf). */
static inline double ddx_pow(double a, double b) {
  if (b == 2.0) return a * a;
  if (b == -1.0) return 1.0 / a;
  if (b == 0.5) return a == -INFINITY ? INFINITY : sqrt(a) + 0.0;
  return pow(a, b);
}
/* Rust's f64::asinh. */
static inline double ddx_asinh(double x) {
  double ax = fabs(x);
  double ix = 1.0 / ax;
  return copysign(log1p(ax + ax / (hypot(1.0, ix) + ix)), x);
}
/* Rust's f64::acosh. */
static inline double ddx_acosh(double x) {
  if (x < 1.0) return NAN;
  return log(x + sqrt(x - 1.0) * sqrt(x + 1.0));
}
/* ddx's powi: repeated squaring; NaN unless n is an integer. */
static inline double ddx_powi(double a, double n) {
  if (n - trunc(n) != 0.0 || isnan(n)) return NAN;
  double m = fabs(n);
  if (m >= 9223372036854775808.0) return pow(a, n);
  unsigned long long k = (unsigned long long)m;
  double r = 1.0, b = a;
  for (;;) {
    if (k & 1) r *= b;
    k >>= 1;
    if (k == 0) break;
    b *= b;
  }
  return n < 0.0 ? 1.0 / r : r;
}
/* ddx's atanh: odd, from |x|. */
static inline double ddx_atanh(double x) {
  double t = fabs(x);
  return copysign(0.5 * log1p(2.0 * t / (1.0 - t)), x);
}
#endif
"#;

/// The conversions between a `double` and its bits that `ddx_exp` and `ddx_log` use,
/// guarded. (C emitted before `ddx_log` existed defined them in its `exp` helper, guarded
/// by `DDX_EMIT_EXP_1`; that guard skips them too, so the two can share a file.)
const BITS: &str = "#if !defined(DDX_EMIT_BITS_1) && !defined(DDX_EMIT_EXP_1)\n\
#define DDX_EMIT_BITS_1\n#include <stdint.h>\n\
#include <string.h>\n\
static inline double ddx_double(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }\n\
static inline uint64_t ddx_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }\n\
#endif\n";

/// ddx's `exp` in C, guarded ([`super::exp_c`]).
fn exp_helper() -> String {
    format!(
        "#ifndef DDX_EMIT_EXP_1\n#define DDX_EMIT_EXP_1\n{}#endif\n",
        super::exp_c(false)
    )
}

/// ddx's `log` in C, guarded ([`super::log_c`]).
fn log_helper() -> String {
    format!(
        "#ifndef DDX_EMIT_LOG_1\n#define DDX_EMIT_LOG_1\n{}#endif\n",
        super::log_c(false)
    )
}

/// [`HELPERS`], and [`BITS`], [`exp_helper`], [`log_helper`] when `lanes` use `exp` or
/// `log`.
fn helpers(lanes: &[&Lane]) -> String {
    let mut out = String::from(HELPERS);
    let exp = lanes.iter().any(|l| uses(l, Op::Exp));
    let log = lanes.iter().any(|l| uses(l, Op::Log));
    if exp || log {
        out.push_str(BITS);
    }
    if exp {
        out.push_str(&exp_helper());
    }
    if log {
        out.push_str(&log_helper());
    }
    out
}

/// A C function `name` computing `lane`'s outputs, preceded by `#include <math.h>` and
/// the (guarded) helpers it calls (module doc of [`crate::emit`]). `symbols` are the
/// lane's symbol names in canonical order; they appear only in a comment.
///
/// # Errors
/// [`Error::BadName`] when `name` cannot name the function ([`super::check_name`]);
/// [`Error::BadLane`] when the lane fails [`Lane::check`] (one assembled or edited by hand).
pub fn c(lane: &Lane, symbols: &[String], name: &str) -> Result<String, Error> {
    check_name(name)?;
    lane.check()?;
    if let Some(tag) = crate::user::first_call(&lane.graph) {
        return Err(crate::user::unsupported(tag, "emitted source"));
    }
    let mut out = helpers(&[lane]);
    out.push_str("/*\n");
    for line in describe(lane, symbols) {
        let _ = writeln!(out, " * {line}");
    }
    out.push_str(
        " * Compile with -ffp-contract=off and without -ffast-math; link with -lm.\n */\n",
    );
    let _ = writeln!(
        out,
        "void {name}(const double *x, const double *seeds, double *out) {{"
    );
    statements(lane, &mut out);
    out.push_str("}\n");
    Ok(out)
}

/// A C function `name` answering what a call of a `jvp` or `hvp` lane answers: the plain
/// `lane`'s outputs, unless one of its products (the outputs from `first_product` on) is
/// NaN, and then those of its zero-skipping `twin`
/// ([`crate::lane::build_twin`]), each a `static` function (`name_plain`, `name_twin`)
/// before it.
///
/// # Errors
/// As [`c`].
pub fn c_mended(
    lane: &Lane,
    twin: &Lane,
    first_product: usize,
    symbols: &[String],
    name: &str,
) -> Result<String, Error> {
    check_name(name)?;
    lane.check()?;
    twin.check()?;
    if let Some(tag) = crate::user::first_call(&lane.graph) {
        return Err(crate::user::unsupported(tag, "emitted source"));
    }
    let mut out = helpers(&[lane, twin]);
    for (inner, l) in [("plain", lane), ("twin", twin)] {
        let _ = writeln!(
            out,
            "static void {name}_{inner}(const double *x, const double *seeds, double *out) {{"
        );
        statements(l, &mut out);
        out.push_str("}\n");
    }
    out.push_str("/*\n");
    for line in describe(lane, symbols) {
        let _ = writeln!(out, " * {line}");
    }
    out.push_str(
        " * Where the plain sweep answers a NaN, the sweep that skips a direction's exact\n \
         * zeros answers the point (ddx's jvp/hvp calls do the same).\n \
         * Compile with -ffp-contract=off and without -ffast-math; link with -lm.\n */\n",
    );
    let m = lane.outputs.len();
    let _ = writeln!(
        out,
        "void {name}(const double *x, const double *seeds, double *out) {{\n  \
         {name}_plain(x, seeds, out);\n  \
         for (int k = {first_product}; k < {m}; k++) {{\n    \
         if (isnan(out[k])) {{\n      {name}_twin(x, seeds, out);\n      return;\n    }}\n  }}\n}}"
    );
    Ok(out)
}

/// The statements of `lane`'s C function body: one `const double` per node, then the
/// outputs.
fn statements(lane: &Lane, out: &mut String) {
    let g = &lane.graph;
    out.push_str("  (void)x;\n  (void)seeds;\n");
    for (i, node) in g.nodes().iter().enumerate() {
        if let Node::Apply(op, args) = *node {
            let a = |k: usize| operand(lane, args[k]);
            let exponent = if matches!(op, Op::Pow | Op::Powi) {
                g.constant_of(args[1])
            } else {
                None
            };
            let e = expression(op, &a, exponent);
            let _ = writeln!(out, "  const double v{i} = {e};");
        }
    }
    for (k, &o) in lane.outputs.iter().enumerate() {
        let _ = writeln!(out, "  out[{k}] = {};", operand(lane, o));
    }
}

/// How node `id` is read: a literal, `x[i]`, `seeds[i]` or `vK`.
fn operand(lane: &Lane, id: NodeId) -> String {
    match *lane.graph.node(id) {
        Node::Const(c) => literal(c.value()),
        Node::Symbol(s) => format!("x[{}]", s.index()),
        Node::Seed(s) => format!("seeds[{}]", s.index()),
        Node::Apply(..) => format!("v{}", id.index()),
    }
}

/// `v` as a C `double` expression with exactly its bits (NaN: some NaN). The shortest
/// decimal that reads back as `v` (C requires correctly rounded conversion of decimal
/// literals only approximately, but GCC, Clang and MSVC round them correctly).
pub(super) fn literal(v: f64) -> String {
    if v.is_nan() {
        "NAN".into()
    } else if v == f64::INFINITY {
        "INFINITY".into()
    } else if v == f64::NEG_INFINITY {
        "(-INFINITY)".into()
    } else if v.is_sign_negative() {
        format!("(-{:e})", -v)
    } else {
        format!("{v:e}")
    }
}

/// The C expression computing `op` on the operands, rounding as [`crate::math::eval`]
/// does. `exponent` is `pow`'s literal exponent, if it has one.
fn expression(op: Op, a: &dyn Fn(usize) -> String, exponent: Option<f64>) -> String {
    use Op::*;
    let call = |f: &str| format!("{f}({})", a(0));
    let call2 = |f: &str| format!("{f}({}, {})", a(0), a(1));
    let truth = |cond: String| format!("(({cond}) ? 1.0 : 0.0)");
    match op {
        // Refused before any expression is written (`c`).
        Call | Pack => "NAN".into(),
        // Never in a lane (`Graph::extract` removes it); its value is its argument.
        Hold => a(0),
        Neg => format!("-{}", a(0)),
        Add => format!("{} + {}", a(0), a(1)),
        Sub => format!("{} - {}", a(0), a(1)),
        Mul => format!("{} * {}", a(0), a(1)),
        Div => format!("{} / {}", a(0), a(1)),
        Sqrt => call("sqrt"),
        Abs => call("fabs"),
        Sign => {
            let x = a(0);
            format!("({x} > 0.0 ? 1.0 : {x} < 0.0 ? -1.0 : {x} == 0.0 ? 0.0 : {x})")
        }
        Max => {
            let (x, y) = (a(0), a(1));
            format!("(({y} > {x} || isnan({x})) ? {y} : {x})")
        }
        Min => {
            let (x, y) = (a(0), a(1));
            format!("(({y} < {x} || isnan({x})) ? {y} : {x})")
        }
        Lt => truth(format!("{} < {}", a(0), a(1))),
        Le => truth(format!("{} <= {}", a(0), a(1))),
        Eq => truth(format!("{} == {}", a(0), a(1))),
        Ne => {
            let (x, y) = (a(0), a(1));
            truth(format!("{x} < {y} || {x} > {y}"))
        }
        Select => format!("({} == 0.0 ? {} : {})", a(0), a(2), a(1)),
        Fma => format!("fma({}, {}, {})", a(0), a(1), a(2)),
        Sin => call("sin"),
        Cos => call("cos"),
        Tan => call("tan"),
        Exp => call("ddx_exp"),
        Log => call("ddx_log"),
        Log10 => call("log10"),
        Cbrt => call("cbrt"),
        Asin => call("asin"),
        Acos => call("acos"),
        Atan => call("atan"),
        Sinh => call("sinh"),
        Cosh => call("cosh"),
        Tanh => call("tanh"),
        Asinh => call("ddx_asinh"),
        Acosh => call("ddx_acosh"),
        Atanh => call("ddx_atanh"),
        Erf => call("erf"),
        Pow => match exponent {
            Some(2.0) => format!("{} * {}", a(0), a(0)),
            Some(-1.0) => format!("1.0 / {}", a(0)),
            _ => call2("ddx_pow"),
        },
        Atan2 => call2("atan2"),
        Hypot => call2("hypot"),
        Log1p => call("log1p"),
        Expm1 => call("expm1"),
        Log2 => call("log2"),
        Recip => format!("1.0 / {}", a(0)),
        Powi => call2("ddx_powi"),
    }
}
