//! The Rust emitter: one function per lane (see the parent module for the signature and
//! the functions whose bits depend on the platform).

use super::{check_name, const_evaluable, describe, powi_steps, powi_unrolled, table_lines, uses};
use crate::{Error, Lane, Node, NodeId, Op};
use std::fmt::Write;

/// Choices of the Rust emitter.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RustStyle {
    /// A path to a Rust function `fn(f64) -> f64` computing `erf` (for instance
    /// `::ddx::ir::math::erf`, ddx's own); `None` declares and calls the C library's `erf`
    /// (standalone, but see the parent module for how its bits differ).
    pub erf: Option<String>,
    /// Write `pub(crate)` rather than `pub` before `fn`.
    pub crate_visible: bool,
}

/// A Rust function `name` computing `lane`'s outputs (module doc of [`crate::emit`]).
/// `symbols` are the lane's symbol names in canonical order; they appear only in the
/// function's documentation.
///
/// # Errors
/// [`Error::BadName`] when `name` cannot name the function ([`super::check_name`]);
/// [`Error::BadLane`] when the lane fails [`Lane::check`] (one assembled or edited by hand).
pub fn rust(
    lane: &Lane,
    symbols: &[String],
    name: &str,
    style: &RustStyle,
) -> Result<String, Error> {
    check_name(name)?;
    lane.check()?;
    if let Some(tag) = crate::user::first_call(&lane.graph) {
        return Err(crate::user::unsupported(tag, "emitted source"));
    }
    let mut out = String::new();
    for line in describe(lane, symbols) {
        let _ = writeln!(out, "/// {line}");
    }
    let constness = if const_evaluable(lane) { "const " } else { "" };
    let _ = writeln!(
        out,
        "#[allow(unused_variables, unused_parens, invalid_nan_comparisons, clippy::all, clippy::pedantic, clippy::nursery)]\n\
         {} {constness}fn {name}{} {{",
        visibility(style),
        signature(lane)
    );
    body(lane, style, "    ", &mut out);
    out.push_str("}\n");
    Ok(out)
}

/// A Rust function `name` answering what a call of a `jvp` or `hvp` lane answers: the
/// plain `lane`'s outputs, unless one of its products (the outputs from `first_product`
/// on, after the values and an `hvp`'s gradient cells) is NaN, and then those of its
/// zero-skipping `twin` ([`crate::lane::build_twin`]; the two have one signature). Both are nested
/// functions of `name`, which is a `const fn` when both can be.
///
/// # Errors
/// As [`rust`].
pub fn rust_mended(
    lane: &Lane,
    twin: &Lane,
    first_product: usize,
    symbols: &[String],
    name: &str,
    style: &RustStyle,
) -> Result<String, Error> {
    check_name(name)?;
    lane.check()?;
    twin.check()?;
    if let Some(tag) = crate::user::first_call(&lane.graph) {
        return Err(crate::user::unsupported(tag, "emitted source"));
    }
    let (s, m) = (lane.seeds, lane.outputs.len());
    let mut out = String::new();
    for line in describe(lane, symbols) {
        let _ = writeln!(out, "/// {line}");
    }
    out.push_str(
        "///\n/// Where the plain sweep answers a NaN, the sweep that skips a direction's exact zeros\n\
         /// answers the point (ddx's `jvp`/`hvp` calls do the same).\n",
    );
    let constness = if const_evaluable(lane) && const_evaluable(twin) {
        "const "
    } else {
        ""
    };
    let allow = "#[allow(unused_variables, unused_parens, invalid_nan_comparisons, clippy::all, clippy::pedantic, clippy::nursery)]";
    let _ = writeln!(
        out,
        "{allow}\n{} {constness}fn {name}{} {{",
        visibility(style),
        signature(lane)
    );
    for (inner, l) in [("plain", lane), ("twin", twin)] {
        let _ = writeln!(
            out,
            "    {allow}\n    {constness}fn {inner}{} {{",
            signature(l)
        );
        body(l, style, "        ", &mut out);
        out.push_str("    }\n");
    }
    let args = if s > 0 { "x, seeds" } else { "x" };
    let _ = writeln!(
        out,
        "    let out = plain({args});\n    let mut k = {first_product};\n    while k < {m} {{\n        \
         if out[k] != out[k] {{\n            return twin({args});\n        }}\n        \
         k += 1;\n    }}\n    out\n}}"
    );
    Ok(out)
}

fn visibility(style: &RustStyle) -> &'static str {
    if style.crate_visible {
        "pub(crate)"
    } else {
        "pub"
    }
}

/// `(x: &[f64; n][, seeds: &[f64; s]]) -> [f64; m]`.
fn signature(lane: &Lane) -> String {
    let (n, s, m) = (lane.seed_base(), lane.seeds, lane.outputs.len());
    let seeds = if s > 0 {
        format!(", seeds: &[f64; {s}]")
    } else {
        String::new()
    };
    format!("(x: &[f64; {n}]{seeds}) -> [f64; {m}]")
}

/// ddx's `exp` ([`crate::math::exp`]) as a function item `ddx_exp`, each line after
/// `indent`: the same IEEE operations in the same order, its table and constants written
/// from ddx's own, so the same bits.
fn exp_helper(indent: &str) -> String {
    let template = "/// ddx's exp (`ddx_ir::math::exp`): Tang's table-driven method, 128 entries.\n\
         fn ddx_exp(x: f64) -> f64 {\n    \
         static TABLE: [u64; 256] = [\n{rows}    ];\n    \
         let a = x.abs();\n    \
         if a < {min} {\n        return 1.0 + x;\n    }\n    \
         if a.is_nan() {\n        return x + x;\n    }\n    \
         if a >= 1024.0 {\n        return if x > 0.0 { f64::INFINITY } else { 0.0 };\n    }\n    \
         let kd = x * {inv} + {shift};\n    \
         let ki = kd.to_bits();\n    \
         let kd = kd - {shift};\n    \
         let r = x + kd * {hi} + kd * {lo};\n    \
         let i = (ki & 127) as usize;\n    \
         let tail = f64::from_bits(TABLE[2 * i]);\n    \
         let bits = TABLE[2 * i + 1].wrapping_add(ki << 45);\n    \
         let r2 = r * r;\n    \
         let tmp = tail + r + r2 * ({c2} + r * {c3}) + r2 * r2 * ({c4} + r * {c5} + r2 * {c6});\n    \
         if a < {max} {\n        let s = f64::from_bits(bits);\n        return s + s * tmp;\n    }\n    \
         if x > 0.0 {\n        let s = f64::from_bits(bits.wrapping_sub(1009 << 52));\n        \
         return (s + s * tmp) * f64::from_bits(0x7f00_0000_0000_0000);\n    }\n    \
         let s = f64::from_bits(bits.wrapping_add(1022 << 52));\n    \
         let mut y = s + s * tmp;\n    \
         if y < 1.0 {\n        let err = (s - y) + s * tmp;\n        let hi = 1.0 + y;\n        \
         let lo = ((1.0 - hi) + y) + err;\n        y = (hi + lo) - 1.0;\n    }\n    \
         y * f64::from_bits(0x0010_0000_0000_0000)\n}\n";
    let rows = table_lines(&crate::math::EXP_TABLE, "        ", "");
    indented(&super::fill_exp(template, literal, &rows), indent)
}

/// ddx's `log` ([`crate::math::log`]) as a function item `ddx_log`, each line after
/// `indent`: the same IEEE operations in the same order (`f64::mul_add` is the correctly
/// rounded fused multiply-add), its table and constants written from ddx's own, so the
/// same bits.
fn log_helper(indent: &str) -> String {
    let template =
        "/// ddx's log (`ddx_ir::math::log`): table-driven, 128 rows, with fused multiply-adds.\n\
         fn ddx_log(x: f64) -> f64 {\n    \
         static TABLE: [u64; 512] = [\n{rows}    ];\n    \
         let ix = if x >= {min} && x <= {max} {\n        x.to_bits()\n    \
         } else if x.is_nan() {\n        return x + x;\n    \
         } else if x == 0.0 {\n        return f64::NEG_INFINITY;\n    \
         } else if x < 0.0 {\n        return f64::NAN;\n    \
         } else if x == f64::INFINITY {\n        return x;\n    \
         } else {\n        (x * 4503599627370496.0).to_bits().wrapping_sub(52 << 52)\n    };\n    \
         let tmp = ix.wrapping_sub({off});\n    \
         let i = ((tmp >> 45) & 127) as usize;\n    \
         let kd = ((tmp as i64) >> 52) as f64;\n    \
         let z = f64::from_bits(ix.wrapping_sub(tmp & (0xfff << 52)));\n    \
         let invc = f64::from_bits(TABLE[4 * i]);\n    \
         let logc_hi = f64::from_bits(TABLE[4 * i + 1]);\n    \
         let logc_lo = f64::from_bits(TABLE[4 * i + 2]);\n    \
         let r = z.mul_add(invc, -1.0);\n    \
         let w = kd.mul_add({ln2_hi}, logc_hi);\n    \
         let hi = w + r;\n    \
         let lo = r - (hi - w);\n    \
         let r2 = r * r;\n    \
         let a = r.mul_add({c3}, {c2});\n    \
         let b = r.mul_add({c5}, {c4});\n    \
         let c = r.mul_add({c7}, {c6});\n    \
         let u = r2.mul_add({c8}, c);\n    \
         let v = r2.mul_add(b, a);\n    \
         let r4 = r2 * r2;\n    \
         let q = r4.mul_add(u, v);\n    \
         let t = kd.mul_add({ln2_lo}, logc_lo);\n    \
         let t = t + lo;\n    \
         let t = r2.mul_add(q, t);\n    \
         hi + t\n}\n";
    let rows = table_lines(&crate::math::LOG_TABLE, "        ", "");
    indented(&super::fill_log(template, literal, "", &rows), indent)
}

/// `text`'s lines, each after `indent`.
fn indented(text: &str, indent: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        out.push_str(indent);
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The statements of `lane`'s function body, each line after `indent`: one `let` per
/// node, then the output array.
fn body(lane: &Lane, style: &RustStyle, indent: &str, out: &mut String) {
    let g = &lane.graph;
    if uses(lane, Op::Exp) {
        out.push_str(&exp_helper(indent));
    }
    if uses(lane, Op::Log) {
        out.push_str(&log_helper(indent));
    }
    if style.erf.is_none() && uses(lane, Op::Erf) {
        let _ = writeln!(
            out,
            "{indent}unsafe extern \"C\" {{\n{indent}    safe fn erf(x: f64) -> f64;\n{indent}}}"
        );
    }
    for (i, node) in g.nodes().iter().enumerate() {
        if let Node::Apply(op, args) = *node {
            let a = |k: usize| operand(lane, args[k]);
            let exponent = if matches!(op, Op::Pow | Op::Powi) {
                g.constant_of(args[1])
            } else {
                None
            };
            let e = expression(op, &a, exponent, style);
            let _ = writeln!(out, "{indent}let v{i}: f64 = {e};");
        }
    }
    let outs: Vec<String> = lane.outputs.iter().map(|&o| operand(lane, o)).collect();
    let _ = writeln!(out, "{indent}[{}]", outs.join(", "));
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

/// `v` as a Rust expression of type `f64` with exactly its bits (NaN: some NaN).
pub(crate) fn literal(v: f64) -> String {
    if v.is_nan() {
        "f64::NAN".into()
    } else if v == f64::INFINITY {
        "f64::INFINITY".into()
    } else if v == f64::NEG_INFINITY {
        "f64::NEG_INFINITY".into()
    } else if v.is_sign_negative() {
        format!("(-{:?}_f64)", -v)
    } else {
        format!("{v:?}_f64")
    }
}

/// The expression computing `op` on the operands `a(0)`, `a(1)`, `a(2)`, rounding as
/// [`crate::math::eval`] does. `exponent` is `pow`'s literal exponent, if it has one.
fn expression(
    op: Op,
    a: &dyn Fn(usize) -> String,
    exponent: Option<f64>,
    style: &RustStyle,
) -> String {
    use Op::*;
    let m = |method: &str| format!("{}.{method}()", a(0));
    let truth = |cond: String| format!("if {cond} {{ 1.0 }} else {{ 0.0 }}");
    match op {
        // Refused before any expression is written (`rust`).
        Call | Pack => "f64::NAN".into(),
        // Never in a lane (`Graph::extract` removes it); its value is its argument.
        Hold => a(0),
        Neg => format!("-{}", a(0)),
        Add => format!("{} + {}", a(0), a(1)),
        Sub => format!("{} - {}", a(0), a(1)),
        Mul => format!("{} * {}", a(0), a(1)),
        Div => format!("{} / {}", a(0), a(1)),
        Sqrt => m("sqrt"),
        Abs => m("abs"),
        Sign => format!(
            "{{ let a = {}; if a > 0.0 {{ 1.0 }} else if a < 0.0 {{ -1.0 }} else if a == 0.0 {{ 0.0 }} else {{ a }} }}",
            a(0)
        ),
        Max => format!(
            "{{ let (a, b) = ({}, {}); if b > a || a.is_nan() {{ b }} else {{ a }} }}",
            a(0),
            a(1)
        ),
        Min => format!(
            "{{ let (a, b) = ({}, {}); if b < a || a.is_nan() {{ b }} else {{ a }} }}",
            a(0),
            a(1)
        ),
        Lt => truth(format!("{} < {}", a(0), a(1))),
        Le => truth(format!("{} <= {}", a(0), a(1))),
        Eq => truth(format!("{} == {}", a(0), a(1))),
        Ne => format!(
            "{{ let (a, b) = ({}, {}); if a < b || a > b {{ 1.0 }} else {{ 0.0 }} }}",
            a(0),
            a(1)
        ),
        Select => format!("if {} == 0.0 {{ {} }} else {{ {} }}", a(0), a(2), a(1)),
        Fma => format!("{}.mul_add({}, {})", a(0), a(1), a(2)),
        Sin => m("sin"),
        Cos => m("cos"),
        Tan => m("tan"),
        Exp => format!("ddx_exp({})", a(0)),
        Log => format!("ddx_log({})", a(0)),
        Log10 => m("log10"),
        Cbrt => m("cbrt"),
        Asin => m("asin"),
        Acos => m("acos"),
        Atan => m("atan"),
        Sinh => m("sinh"),
        Cosh => m("cosh"),
        Tanh => m("tanh"),
        Asinh => m("asinh"),
        Acosh => m("acosh"),
        // `ddx_ir::math::atanh`: odd, from |x|.
        Atanh => format!(
            "{{ let a = {}; let t = a.abs(); (0.5 * (2.0 * t / (1.0 - t)).ln_1p()).copysign(a) }}",
            a(0)
        ),
        Erf => match &style.erf {
            Some(path) => format!("{path}({})", a(0)),
            None => format!("erf({})", a(0)),
        },
        // `ddx_ir::math::pow`: three exponents are the operation they name.
        Pow => match exponent {
            Some(2.0) => format!("{} * {}", a(0), a(0)),
            Some(-1.0) => format!("1.0 / {}", a(0)),
            Some(0.5) => format!(
                "{{ let a = {}; if a == f64::NEG_INFINITY {{ f64::INFINITY }} else {{ a.sqrt() + 0.0 }} }}",
                a(0)
            ),
            Some(_) => format!("{}.powf({})", a(0), a(1)),
            None => format!(
                "{{ let (a, b) = ({}, {}); if b == 2.0 {{ a * a }} else if b == -1.0 {{ 1.0 / a }} \
                 else if b == 0.5 {{ if a == f64::NEG_INFINITY {{ f64::INFINITY }} else {{ a.sqrt() + 0.0 }} }} \
                 else {{ a.powf(b) }} }}",
                a(0),
                a(1)
            ),
        },
        Atan2 => format!("{}.atan2({})", a(0), a(1)),
        Hypot => format!("{}.hypot({})", a(0), a(1)),
        Log1p => m("ln_1p"),
        Expm1 => m("exp_m1"),
        Log2 => m("log2"),
        Recip => format!("1.0 / {}", a(0)),
        // `ddx_ir::math::powi`: repeated squaring, written out for a literal exponent.
        Powi => match exponent.and_then(powi_steps) {
            Some((bits, negative)) => {
                let mut lines = powi_unrolled(&a(0), &bits, negative, "let");
                let last = lines.pop().unwrap_or_default();
                format!("{{ {} {last} }}", lines.join(" "))
            }
            None => format!(
                "{{ let (a, n) = ({}, {}); if n.fract() != 0.0 || n.is_nan() {{ f64::NAN }} \
                 else if n.abs() >= 9223372036854775808.0 {{ a.powf(n) }} else {{ \
                 let mut m = n.abs() as u64; let mut r = 1.0; let mut b = a; \
                 loop {{ if m & 1 == 1 {{ r *= b; }} m >>= 1; if m == 0 {{ break; }} b *= b; }} \
                 if n < 0.0 {{ 1.0 / r }} else {{ r }} }} }}",
                a(0),
                a(1)
            ),
        },
    }
}
