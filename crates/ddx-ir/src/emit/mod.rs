//! Source code from a lane: a standalone Rust or C function that computes the lane's
//! outputs exactly as the interpreter does.
//!
//! This is an engine like the interpreter or the JIT: it reads a prepared [`Lane`] and
//! nothing else. The code it writes has no dependency on ddx: arithmetic is the
//! language's own, each graph node is one statement (`let vK` / `const double vK`) in
//! the graph's topological order, and every operation is spelled so that it rounds as
//! [`crate::math`] does. Nothing is re-associated, contracted or reordered: a fused
//! multiply-add appears only where the lane holds an [`Op::Fma`] node.
//!
//! **Signature.** Rust: `pub fn name(x: &[f64; n], seeds: &[f64; s]) -> [f64; m]` (no
//! `seeds` parameter when the lane has none; a `const fn` when every operation can be
//! evaluated in a constant, see [`const_evaluable`]). C:
//! `void name(const double *x, const double *seeds, double *out)`, `x` holding `n`
//! values, `seeds` `s` (may be `NULL` when `s = 0`), `out` receiving `m`. Symbols are in
//! canonical order (byte order of their names); outputs are in the lane's layout
//! ([`crate::lane`]). A `jvp` or `hvp` lane is emitted with its zero-skipping twin
//! ([`rust_mended`], [`c_mended`]): the function answers the plain lane's outputs unless
//! one is NaN, and the twin's then, as ddx's calls do.
//!
//! **Where the platform's math differs from ddx's** (bit-identical everywhere else,
//! tested on random graphs against the interpreter):
//! - `erf`: ddx computes it with the `libm` crate (a port of FreeBSD's `msun`); the
//!   emitted C calls the C library's `erf`, and the emitted Rust, by default, declares and
//!   calls the same C function (Rust's standard library has no `erf`). glibc 2.x answers
//!   differently from ddx in the last bit for about 1% of arguments (within 1 ULP in our
//!   tests). [`RustStyle::erf`] names a Rust function to call instead (the macro passes
//!   ddx's own, so its code is exact).
//! - `asinh`, `acosh`, `atanh` are not the C library's functions in ddx (Rust's standard
//!   library computes `asinh` and `acosh` from `log1p`, `hypot` and `sqrt`, and ddx's
//!   `atanh` is its own odd formula): the emitted C spells those same formulas with the C
//!   library's `log1p`, `log`, `hypot` and `sqrt`, so it answers ddx's bits. glibc's own
//!   `asinh` would differ in about 7% of arguments.
//! - `cbrt`: Rust's standard library computes it itself, correctly rounded; glibc's
//!   `cbrt` is not, and answers differently in the last bit for about half of all
//!   arguments in our tests (within 4 ULP). The emitted Rust calls `f64::cbrt`
//!   (exact); the emitted C calls the C library's (not exact).
//! - `exp` and `log` are ddx's own ([`crate::math::exp`], [`crate::math::log`]): both
//!   languages write their operations and tables out (`ddx_exp`, `ddx_log`, emitted once
//!   per file or function when a lane uses them), so they are exact wherever C and Rust
//!   evaluate `double` in double precision (`FLT_EVAL_METHOD == 0`, as on x86-64 and
//!   AArch64; not x87, below). `log`'s fused multiply-adds are C99's `fma` and Rust's
//!   `f64::mul_add`, correctly rounded on every platform (a library call where the
//!   target lacks the instruction: build with `-mfma` or `-C target-feature=+fma` for
//!   speed).
//! - Every other function (`sin` … `tanh`, `log10`, `pow`, `atan2`, `hypot`, `fma`) is
//!   the C library's in all three (Rust's `f64` methods call it), so it is exact when the
//!   emitted code runs against the same C library as ddx.
//!
//! **Compiling the C.** Any C99 compiler; `-ffp-contract=off` (GCC contracts `a*b + c`
//! into a fused multiply-add in its GNU modes when the target has one, which would change
//! bits), no `-ffast-math`; link with `-lm`. x87 arithmetic (32-bit x86 without SSE2, or
//! `-mfpmath=387`) rounds differently and is not supported: its `ddx_exp` was off by up to
//! 154 ULP in a tester's run.

mod c;
mod rust;

/// Whether `lane` applies `op` anywhere.
fn uses(lane: &Lane, op: Op) -> bool {
    lane.graph.nodes().iter().any(|n| n.op() == Some(op))
}

/// ddx's `exp` ([`crate::math::exp`]) as a C function `double ddx_exp(double)` with its
/// table `ddx_exp_table`: C99 (`static`, `uint64_t`; needs `<stdint.h>`, `<math.h>` and
/// the conversions `ddx_double`, `ddx_bits` of [`c`]'s helpers) or OpenCL C (`__constant`, `ulong`, `as_double`). The same
/// IEEE operations in the same order as ddx's, its table and constants written from ddx's
/// own, so the same bits wherever a multiply and an add are not contracted
/// (`-ffp-contract=off`, `#pragma OPENCL FP_CONTRACT OFF`).
#[doc(hidden)]
pub fn exp_c(opencl: bool) -> String {
    let (decl, param, read) = if opencl {
        (
            "__constant ulong ddx_exp_table[256]",
            ", __local const ulong2 *restrict ddx_t",
            "ulong2 e = ddx_t[i];\n  double tail = as_double(e.x);\n  ulong bits = e.y + (ki << 45);",
        )
    } else {
        (
            "static const uint64_t ddx_exp_table[256]",
            "",
            "double tail = ddx_double(ddx_exp_table[2 * i]);\n  \
             uint64_t bits = ddx_exp_table[2 * i + 1] + (ki << 45);",
        )
    };
    let template = "/* ddx's exp (ddx_ir::math::exp): Tang's table-driven method, 128 entries. */\n\
         {decl} = {\n{rows}};\n\
         {store}double ddx_exp(double x{param}) {\n  \
         double a = fabs(x);\n  \
         if (a < {min}) return 1.0 + x;\n  \
         if (a != a) return x + x;\n  \
         if (a >= 1024.0) return x > 0.0 ? INFINITY : 0.0;\n  \
         double kd = x * {inv} + {shift};\n  \
         {word} ki = {bits_of}(kd);\n  \
         kd = kd - {shift};\n  \
         double r = x + kd * {hi} + kd * {lo};\n  \
         unsigned i = (unsigned)(ki & 127);\n  \
         {read}\n  \
         double r2 = r * r;\n  \
         double tmp = tail + r + r2 * ({c2} + r * {c3}) + r2 * r2 * ({c4} + r * {c5} + r2 * {c6});\n  \
         if (a < {max}) {\n    double s = {double_of}(bits);\n    return s + s * tmp;\n  }\n  \
         if (x > 0.0) {\n    double s = {double_of}(bits - (({word})1009 << 52));\n    \
         return (s + s * tmp) * 0x1p1009;\n  }\n  \
         double s = {double_of}(bits + (({word})1022 << 52));\n  \
         double y = s + s * tmp;\n  \
         if (y < 1.0) {\n    double err = (s - y) + s * tmp;\n    double hi = 1.0 + y;\n    \
         double lo = ((1.0 - hi) + y) + err;\n    y = (hi + lo) - 1.0;\n  }\n  \
         return y * 0x1p-1022;\n}\n";
    let (template, suffix) = in_dialect(template, opencl, decl, param, read);
    let rows = table_lines(&crate::math::EXP_TABLE, "  ", suffix);
    fill_exp(&template, c::literal, &rows)
}

/// ddx's `log` ([`crate::math::log`]) as a C function `double ddx_log(double)` with its
/// table `ddx_log_table`: C99 (`static`, `uint64_t`; needs `<stdint.h>`, `<math.h>` and
/// the conversions `ddx_double`, `ddx_bits` of [`c`]'s helpers) or OpenCL C
/// (`__constant`, `ulong`, `as_double`; the function reads its rows from a copy of the
/// table, `ulong4 ddx_t[128]`, that the kernel makes in local memory). The same IEEE
/// operations in the same order as ddx's, its table and constants written from ddx's own,
/// so the same bits: C99's and OpenCL's `fma` are the correctly rounded fused
/// multiply-add, and nothing else may be contracted (`-ffp-contract=off`,
/// `#pragma OPENCL FP_CONTRACT OFF`).
#[doc(hidden)]
pub fn log_c(opencl: bool) -> String {
    let (decl, param, read) = if opencl {
        (
            "__constant ulong ddx_log_table[512]",
            ", __local const ulong4 *restrict ddx_t",
            "ulong4 row = ddx_t[i];\n  \
             double invc = as_double(row.x);\n  \
             double logc_hi = as_double(row.y);\n  \
             double logc_lo = as_double(row.z);",
        )
    } else {
        (
            "static const uint64_t ddx_log_table[512]",
            "",
            "double invc = ddx_double(ddx_log_table[4 * i]);\n  \
             double logc_hi = ddx_double(ddx_log_table[4 * i + 1]);\n  \
             double logc_lo = ddx_double(ddx_log_table[4 * i + 2]);",
        )
    };
    let template =
        "/* ddx's log (ddx_ir::math::log): table-driven, 128 rows, with fused multiply-adds. */\n\
         {decl} = {\n{rows}};\n\
         {store}double ddx_log(double x{param}) {\n  \
         {word} ix;\n  \
         if (x >= {min} && x <= {max}) ix = {bits_of}(x);\n  \
         else if (x != x) return x + x;\n  \
         else if (x == 0.0) return -INFINITY;\n  \
         else if (x < 0.0) return {nan};\n  \
         else if (x == INFINITY) return x;\n  \
         else ix = {bits_of}(x * 0x1p52) - (({word})52 << 52);\n  \
         {word} tmp = ix - {off};\n  \
         unsigned i = (unsigned)((tmp >> 45) & 127);\n  \
         double kd = (double)((int)((tmp >> 52) ^ 2048) - 2048);\n  \
         double z = {double_of}(ix - (tmp & (({word})0xfff << 52)));\n  \
         {read}\n  \
         double r = fma(z, invc, -1.0);\n  \
         double w = fma(kd, {ln2_hi}, logc_hi);\n  \
         double hi = w + r;\n  \
         double lo = r - (hi - w);\n  \
         double r2 = r * r;\n  \
         double a = fma(r, {c3}, {c2});\n  \
         double b = fma(r, {c5}, {c4});\n  \
         double c = fma(r, {c7}, {c6});\n  \
         double u = fma(r2, {c8}, c);\n  \
         double v = fma(r2, b, a);\n  \
         double r4 = r2 * r2;\n  \
         double q = fma(r4, u, v);\n  \
         double t = fma(kd, {ln2_lo}, logc_lo);\n  \
         t = t + lo;\n  \
         t = fma(r2, q, t);\n  \
         return hi + t;\n}\n";
    let (template, suffix) = in_dialect(template, opencl, decl, param, read);
    let rows = table_lines(&crate::math::LOG_TABLE, "  ", suffix);
    fill_log(&template, c::literal, suffix, &rows)
}

/// `template` (of [`exp_c`] or [`log_c`]) in C99 or OpenCL C: `{decl}` (the table's
/// declaration), `{param}` (the function's parameters after `x`) and `{read}` (its table
/// reads) as given, and the words the two spell differently: `{word}` (a 64-bit unsigned
/// integer), `{store}` (a function's storage class), `{bits_of}` and `{double_of}` (a
/// `double`'s bits and back), `{nan}` (the CPU's NaN, `f64::NAN`: OpenCL's `NAN` is a
/// `float`, whose conversion a device need not keep quiet and positive). Also answers the
/// suffix of a table word's literal.
fn in_dialect(
    template: &str,
    opencl: bool,
    decl: &str,
    param: &str,
    read: &str,
) -> (String, &'static str) {
    let (word, store, bits_of, double_of, nan, suffix) = if opencl {
        (
            "ulong",
            "",
            "as_ulong",
            "as_double",
            "as_double(0x7ff8000000000000UL)",
            "UL",
        )
    } else {
        (
            "uint64_t",
            "static ",
            "ddx_bits",
            "ddx_double",
            "NAN",
            "ULL",
        )
    };
    let text = [
        ("{decl}", decl),
        ("{param}", param),
        ("{read}", read),
        ("{word}", word),
        ("{store}", store),
        ("{bits_of}", bits_of),
        ("{double_of}", double_of),
        ("{nan}", nan),
    ]
    .iter()
    .fold(template.to_string(), |t, (name, v)| t.replace(name, v));
    (text, suffix)
}

/// `template`, a spelling of ddx's `exp` in an emitted language, with its constants
/// written in: `{min}`, `{max}`, `{inv}`, `{shift}`, `{hi}`, `{lo}` and `{c2}` … `{c6}`
/// ([`crate::math`]'s `EXP_*`) as `literal` spells them, `{rows}` as `rows`.
fn fill_exp(template: &str, literal: fn(f64) -> String, rows: &str) -> String {
    use crate::math::{
        EXP_INV_LN2_N, EXP_NEG_LN2_HI_N, EXP_NEG_LN2_LO_N, EXP_PLAIN_MAX, EXP_PLAIN_MIN, EXP_POLY,
        EXP_SHIFT,
    };
    let [c2, c3, c4, c5, c6] = EXP_POLY;
    let constants = [
        ("{min}", EXP_PLAIN_MIN),
        ("{max}", EXP_PLAIN_MAX),
        ("{inv}", EXP_INV_LN2_N),
        ("{shift}", EXP_SHIFT),
        ("{hi}", EXP_NEG_LN2_HI_N),
        ("{lo}", EXP_NEG_LN2_LO_N),
        ("{c2}", c2),
        ("{c3}", c3),
        ("{c4}", c4),
        ("{c5}", c5),
        ("{c6}", c6),
    ];
    constants
        .iter()
        .fold(template.replace("{rows}", rows), |text, &(name, v)| {
            text.replace(name, &literal(v))
        })
}

/// `template`, a spelling of ddx's `log` in an emitted language, with its constants
/// written in: `{off}` ([`crate::math::LOG_OFF`], hexadecimal, followed by `suffix`),
/// `{min}`, `{max}` (the least and greatest positive normal numbers), `{ln2_hi}`,
/// `{ln2_lo}` and `{c2}` … `{c8}` as `literal` spells them, `{rows}` as
/// `rows`.
fn fill_log(template: &str, literal: fn(f64) -> String, suffix: &str, rows: &str) -> String {
    use crate::math::{LOG_LN2_HI, LOG_LN2_LO, LOG_OFF, LOG_POLY};
    let [c2, c3, c4, c5, c6, c7, c8] = LOG_POLY;
    let constants = [
        ("{min}", f64::MIN_POSITIVE),
        ("{max}", f64::MAX),
        ("{ln2_hi}", LOG_LN2_HI),
        ("{ln2_lo}", LOG_LN2_LO),
        ("{c2}", c2),
        ("{c3}", c3),
        ("{c4}", c4),
        ("{c5}", c5),
        ("{c6}", c6),
        ("{c7}", c7),
        ("{c8}", c8),
    ];
    let text = template
        .replace("{rows}", rows)
        .replace("{off}", &format!("0x{LOG_OFF:016x}{suffix}"));
    constants
        .iter()
        .fold(text, |text, &(name, v)| text.replace(name, &literal(v)))
}

/// `table` ([`crate::math::EXP_TABLE`], [`crate::math::LOG_TABLE`]) as the lines of an
/// array initialiser, four entries a line, each hexadecimal word followed by `suffix`.
fn table_lines(table: &[u64], indent: &str, suffix: &str) -> String {
    let mut out = String::new();
    for row in table.chunks(4) {
        let words: Vec<String> = row.iter().map(|w| format!("0x{w:016x}{suffix}")).collect();
        out.push_str(indent);
        out.push_str(&words.join(", "));
        out.push_str(",\n");
    }
    out
}

pub use c::{c, c_mended};
pub use rust::{rust, rust_mended, RustStyle};

use crate::words::count;
use crate::{Error, Lane, Node, Op};

/// Whether every operation of `lane` can be evaluated in a Rust constant (so that the
/// emitted Rust function is a `const fn`): `+ - * /`, negation, `abs`, `sign`,
/// comparisons, `select`, `max`, `min`, `recip`, `pow` with the literal exponent `2` or
/// `-1` (which ddx defines as `a*a` and `1/a`), and `powi` with a literal integer
/// exponent (written out as its multiplications). Every other function calls a library
/// routine that Rust does not evaluate in constants.
pub fn const_evaluable(lane: &Lane) -> bool {
    let g = &lane.graph;
    g.nodes().iter().all(|n| match *n {
        Node::Apply(op, args) => op_is_const(op, || g.constant_of(args[1])),
        _ => true,
    })
}

/// Whether `op` is const-evaluable; `exponent` gives a `pow`/`powi` literal exponent.
fn op_is_const(op: Op, exponent: impl Fn() -> Option<f64>) -> bool {
    use Op::*;
    match op {
        Neg | Add | Sub | Mul | Div | Abs | Sign | Max | Min | Lt | Le | Eq | Ne | Select
        | Recip => true,
        Pow => matches!(exponent(), Some(e) if e == 2.0 || e == -1.0),
        Powi => exponent().and_then(powi_steps).is_some(),
        Sin | Cos | Tan | Exp | Log | Log10 | Sqrt | Cbrt | Asin | Acos | Atan | Sinh | Cosh
        | Tanh | Asinh | Acosh | Atanh | Erf | Atan2 | Hypot | Fma | Log1p | Expm1 | Log2
        | Call | Pack => false,
        // Never in a lane (`Graph::extract` removes it).
        Hold => true,
    }
}

/// `powi(a, n)` for a literal `n` as [`crate::math::powi`] computes it, step by step:
/// the bits of `|n|` from the lowest (multiply the result by the current square where
/// set), and whether to take the reciprocal. `None` where `powi` does not take that path
/// (`n` not an integer, NaN, or `|n| >= 2^63`).
pub(crate) fn powi_steps(n: f64) -> Option<(Vec<bool>, bool)> {
    if n.fract() != 0.0 || n.is_nan() || n.abs() >= 2f64.powi(63) {
        return None;
    }
    let mut m = n.abs() as u64;
    let mut bits = Vec::new();
    loop {
        bits.push(m & 1 == 1);
        m >>= 1;
        if m == 0 {
            break;
        }
    }
    Some((bits, n < 0.0))
}

/// The straight-line statements of `powi(a, n)` for a literal `n` (see [`powi_steps`]),
/// each declared with `decl`, and last the result expression.
pub(crate) fn powi_unrolled(a: &str, bits: &[bool], negative: bool, decl: &str) -> Vec<String> {
    let mut lines = vec![format!("{decl} r0 = 1.0;"), format!("{decl} b0 = {a};")];
    let (mut r, mut b) = (0, 0);
    for (k, &bit) in bits.iter().enumerate() {
        if bit {
            lines.push(format!("{decl} r{} = r{r} * b{b};", r + 1));
            r += 1;
        }
        if k + 1 < bits.len() {
            lines.push(format!("{decl} b{} = b{b} * b{b};", b + 1));
            b += 1;
        }
    }
    lines.push(if negative {
        format!("1.0 / r{r}")
    } else {
        format!("r{r}")
    });
    lines
}

/// Words no emitted function may be called: Rust's and C's keywords, and the names the
/// emitted code itself uses.
const RESERVED: &[&str] = &[
    // Rust (strict and reserved keywords, 2015–2024 editions).
    "as",
    "async",
    "await",
    "break",
    "const",
    "continue",
    "crate",
    "dyn",
    "else",
    "enum",
    "extern",
    "false",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "let",
    "loop",
    "match",
    "mod",
    "move",
    "mut",
    "pub",
    "ref",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "super",
    "trait",
    "true",
    "type",
    "unsafe",
    "use",
    "where",
    "while",
    "abstract",
    "become",
    "box",
    "do",
    "final",
    "macro",
    "override",
    "priv",
    "try",
    "typeof",
    "unsized",
    "virtual",
    "yield",
    // C (C23 keywords).
    "auto",
    "bool",
    "case",
    "char",
    "default",
    "double",
    "float",
    "goto",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "short",
    "signed",
    "sizeof",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "alignas",
    "alignof",
    "constexpr",
    "nullptr",
    "static_assert",
    "thread_local",
    // The emitted code's own names.
    "x",
    "seeds",
    "out",
    "erf",
];

/// Checks that `name` can name the emitted function in both languages: an ASCII
/// identifier (`[A-Za-z_][A-Za-z0-9_]*`), not a keyword, not `_`, not starting with the
/// prefix `ddx_` (the emitted helpers') and not one of the emitted code's own names.
///
/// # Errors
/// [`Error::BadName`] saying which rule `name` breaks.
pub fn check_name(name: &str) -> Result<(), Error> {
    let bad = |why: &'static str| {
        Err(Error::BadName {
            name: name.to_string(),
            what: "an emitted function",
            why,
        })
    };
    let mut chars = name.chars();
    match chars.next() {
        None => return bad("it is empty"),
        Some(c) if !(c.is_ascii_alphabetic() || c == '_') => {
            return bad("it must start with an ASCII letter or `_`")
        }
        _ => {}
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return bad("it may hold only ASCII letters, digits and `_`");
    }
    if name == "_" || RESERVED.contains(&name) {
        return bad("it is a keyword or a name the emitted code uses");
    }
    if name.starts_with("ddx_")
        || (name.len() > 1
            && name.starts_with('v')
            && name[1..].bytes().all(|b| b.is_ascii_digit()))
    {
        return bad("names starting `ddx_` and `v` followed by digits belong to the emitted code");
    }
    Ok(())
}

/// The symbol names and output layout as a comment body (one line each, names escaped
/// with Rust's `{:?}` so that no name can end the comment or start a line).
fn describe(lane: &Lane, symbols: &[String]) -> Vec<String> {
    let names: Vec<String> = symbols
        .iter()
        .map(|s| format!("{s:?}").replace("*/", "*\\/"))
        .collect();
    vec![
        format!(
            "The `{}` lane of ddx: {}, {}, {} ({} first).",
            lane.kind.name(),
            count(lane.symbols, "symbol"),
            count(lane.seeds, "seed"),
            count(lane.outputs.len(), "output"),
            count(lane.values, "function value")
        ),
        if lane.params > 0 {
            format!(
                "Inputs, in this order: [{}]: the symbols, then {} (never differentiated).",
                names.join(", "),
                count(lane.params, "parameter")
            )
        } else {
            format!("Symbols, in this order: [{}].", names.join(", "))
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(check_name("model_grad2").is_ok());
        assert!(check_name("_f").is_ok());
        assert!(check_name("v").is_ok());
        for bad in [
            "", "2f", "f-g", "fn", "double", "x", "ddx_f", "v12", "é", "_",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
