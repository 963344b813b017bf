//! Lane graph → OpenCL C: one kernel per lane, one work-item per point.
//!
//! **Layout** (the batch calls' columns, stacked): the kernel takes one input buffer
//! holding the lane's input columns (its symbols, then its seeds) one after another,
//! `stride` values apart, and one output buffer holding its output columns the same way;
//! work-item `i < len` reads `input[k·stride + i]` and writes `output[k·stride + i]`.
//!
//! **Exactness.** `#pragma OPENCL FP_CONTRACT OFF` forbids the device compiler to fuse a
//! multiply and an add; `fma()` appears only where the graph has an `fma` node; the
//! program is built with no option that relaxes IEEE arithmetic. Every node is one
//! statement, in the graph's order, so nothing is re-associated. OpenCL C's own `fmax`,
//! `fmin`, `sign`, comparisons and `select` do not follow ddx's semantics
//! (the repository's [ARCHITECTURE.md, "Semantics"](https://github.com/ddx-ad/ddx/blob/main/ARCHITECTURE.md#semantics)): `fmax(+0, −0)` may answer either zero, `sign(±0)` is
//! `±0`, a vector comparison answers `−1`, and `select` tests the sign bit. So each of
//! those is written out here with scalar conditionals that answer exactly what
//! `ddx_ir::math` answers; `+ − × ÷`, `sqrt` and `fma` are correctly rounded in OpenCL's
//! double precision. Constants are written as hexadecimal floating literals (exact), and
//! non-finite ones by their bits.
//!
//! The transcendental functions are the device's own (`exp`, `sin`, `pow` away from the
//! exponents `2`, `−1`, `½`, …), within the error bounds OpenCL states for double precision;
//! `powi` is ddx's own binary powering, written out, so it is exact too.

use ddx_ir::{Lane, Node, Op};
use std::fmt::Write;

/// The kernel's name for a lane: `ddx_` and the lane's name (`ddx_gradient`).
pub(crate) fn kernel_name(lane: &Lane) -> String {
    format!("ddx_{}", lane.kind.name())
}

/// What every kernel's source starts with: the pragmas and ddx's `pow`.
const PRELUDE: &str = "\
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#pragma OPENCL FP_CONTRACT OFF

/* pow as every ddx engine computes it: three exponents are the correctly rounded
   operation they name (ddx_ir::math::pow), others the device's pow. */
double ddx_pow(double a, double b) {
    if (b == 2.0) return a * a;
    if (b == -1.0) return 1.0 / a;
    if (b == 0.5) return a == -INFINITY ? INFINITY : sqrt(a) + 0.0;
    return pow(a, b);
}

/* powi as every ddx engine computes it (ddx_ir::math::powi): binary powering, low bit
   first, 1 / a^n for n < 0; NaN for an n that is not an integer; the device's pow for
   |n| >= 2^63. */
double ddx_powi(double a, double n) {
    if (n - trunc(n) != 0.0 || isnan(n)) return NAN;
    double m = fabs(n);
    if (m >= 0x1p63) return pow(a, n);
    ulong k = (ulong)m;
    double r = 1.0;
    double b = a;
    for (;;) {
        if (k & 1UL) r *= b;
        k >>= 1;
        if (k == 0UL) break;
        b *= b;
    }
    return n < 0.0 ? 1.0 / r : r;
}

";

/// `v` as an exact OpenCL C double expression.
pub(crate) fn literal(v: f64) -> String {
    if !v.is_finite() {
        return format!("as_double(0x{:016x}UL)", v.to_bits());
    }
    let bits = v.to_bits();
    let sign = if bits >> 63 == 1 { "-" } else { "" };
    let exponent = ((bits >> 52) & 0x7ff) as i64;
    let mantissa = bits & ((1u64 << 52) - 1);
    match (exponent, mantissa) {
        (0, 0) => format!("{sign}0x0p+0"),
        (0, m) => format!("{sign}0x0.{m:013x}p-1022"),
        (e, m) => format!("{sign}0x1.{m:013x}p{:+}", e - 1023),
    }
}

/// The OpenCL C expression of `op` applied to the values named `a`, `b`, `c`.
fn expression(op: Op, a: &str, b: &str, c: &str) -> String {
    use Op::*;
    let call = |f: &str| format!("{f}({a})");
    match op {
        // A lane with a user function is never built for the device (`device::build`).
        Call | Pack => "NAN".into(),
        // Never in a lane (`Graph::extract` removes it); its value is its argument.
        Hold => a.to_string(),
        Neg => format!("-{a}"),
        Sin => call("sin"),
        Cos => call("cos"),
        Tan => call("tan"),
        Exp => call("exp"),
        Log => call("log"),
        Log10 => call("log10"),
        Sqrt => call("sqrt"),
        Cbrt => call("cbrt"),
        Abs => call("fabs"),
        // sign(±0) = 0 and sign(NaN) = NaN: OpenCL's sign answers ±0 for ±0.
        Sign => format!("({a} > 0.0) ? 1.0 : ({a} < 0.0) ? -1.0 : ({a} == 0.0) ? 0.0 : {a}"),
        Asin => call("asin"),
        Acos => call("acos"),
        Atan => call("atan"),
        Sinh => call("sinh"),
        Cosh => call("cosh"),
        Tanh => call("tanh"),
        Asinh => call("asinh"),
        Acosh => call("acosh"),
        Atanh => call("atanh"),
        Erf => call("erf"),
        Add => format!("{a} + {b}"),
        Sub => format!("{a} - {b}"),
        Mul => format!("{a} * {b}"),
        Div => format!("{a} / {b}"),
        Pow => format!("ddx_pow({a}, {b})"),
        Atan2 => format!("atan2({a}, {b})"),
        Hypot => format!("hypot({a}, {b})"),
        // A NaN operand answers the other; a tie (±0 included) answers the first.
        Max => format!("({b} > {a} || isnan({a})) ? {b} : {a}"),
        Min => format!("({b} < {a} || isnan({a})) ? {b} : {a}"),
        // Scalar comparisons answer 0 with a NaN operand; `!=` is written so it does too.
        Lt => format!("({a} < {b}) ? 1.0 : 0.0"),
        Le => format!("({a} <= {b}) ? 1.0 : 0.0"),
        Eq => format!("({a} == {b}) ? 1.0 : 0.0"),
        Ne => format!("({a} < {b} || {a} > {b}) ? 1.0 : 0.0"),
        // NaN counts as true: only a zero condition takes the second arm.
        Select => format!("({a} == 0.0) ? {c} : {b}"),
        Fma => format!("fma({a}, {b}, {c})"),
        Log1p => call("log1p"),
        Expm1 => call("expm1"),
        Log2 => call("log2"),
        Recip => format!("1.0 / {a}"),
        Powi => format!("ddx_powi({a}, {b})"),
    }
}

/// The OpenCL C source of `lane`'s kernel (see the module documentation for its layout):
/// `__kernel void ddx_<lane>(__global const double *input, __global double *output,
/// ulong stride, ulong len)`.
pub fn source_of(lane: &Lane) -> String {
    let nodes = lane.graph.nodes();
    let mut s = String::with_capacity(PRELUDE.len() + 64 * nodes.len() + 256);
    s.push_str(PRELUDE);
    // `write!` into a String cannot fail.
    let _ = writeln!(
        s,
        "/* lane {}: {} inputs ({} symbols, {} parameters, {} seeds), {} outputs, {} nodes */",
        lane.kind.name(),
        lane.inputs(),
        lane.symbols,
        lane.params,
        lane.seeds,
        lane.outputs.len(),
        nodes.len()
    );
    let _ = writeln!(
        s,
        "__kernel void {}(__global const double *restrict input, \
         __global double *restrict output, const ulong stride, const ulong len) {{",
        kernel_name(lane)
    );
    s.push_str("    const ulong i = get_global_id(0);\n    if (i >= len) return;\n");
    let name = |k: usize| format!("v{k}");
    for (k, node) in nodes.iter().enumerate() {
        let value = match *node {
            Node::Const(c) => literal(c.value()),
            Node::Symbol(sym) => format!("input[{}UL * stride + i]", sym.index()),
            Node::Seed(seed) => {
                format!("input[{}UL * stride + i]", lane.seed_base() + seed.index())
            }
            Node::Apply(op, args) => {
                let arg = |j: usize| {
                    if j < op.arity() {
                        name(args[j].index())
                    } else {
                        String::new()
                    }
                };
                expression(op, &arg(0), &arg(1), &arg(2))
            }
        };
        let _ = writeln!(s, "    const double {} = {value};", name(k));
    }
    for (j, out) in lane.outputs.iter().enumerate() {
        let _ = writeln!(s, "    output[{j}UL * stride + i] = {};", name(out.index()));
    }
    s.push_str("}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::literal;

    #[test]
    fn literals_are_exact_hexadecimal() {
        assert_eq!(literal(1.0), "0x1.0000000000000p+0");
        assert_eq!(literal(-2.5), "-0x1.4000000000000p+1");
        assert_eq!(literal(0.0), "0x0p+0");
        assert_eq!(literal(-0.0), "-0x0p+0");
        assert_eq!(literal(5e-324), "0x0.0000000000001p-1022");
        assert_eq!(literal(f64::MAX), "0x1.fffffffffffffp+1023");
        assert_eq!(literal(f64::INFINITY), "as_double(0x7ff0000000000000UL)");
        assert_eq!(
            literal(f64::NEG_INFINITY),
            "as_double(0xfff0000000000000UL)"
        );
        // Parsed back by Rust's own reading of the same digits.
        for v in [0.1, -1e300, 1e-310, f64::MIN_POSITIVE, 123_456.789] {
            let l = literal(v);
            let (neg, rest) = l.strip_prefix('-').map_or((false, &l[..]), |r| (true, r));
            let rest = rest.strip_prefix("0x").expect("hex");
            let (mant, exp) = rest.split_once('p').expect("exponent");
            let (int, frac) = mant.split_once('.').unwrap_or((mant, "0"));
            let frac_bits = u64::from_str_radix(frac, 16).expect("hex digits") as f64
                / 16f64.powi(frac.len() as i32);
            let exp: i32 = exp.parse().expect("exponent");
            let m = u64::from_str_radix(int, 16).expect("digit") as f64 + frac_bits;
            let back = m * 2f64.powi(exp.max(-1022)) * 2f64.powi((exp + 1022).min(0));
            assert_eq!(if neg { -back } else { back }.to_bits(), v.to_bits(), "{l}");
        }
    }
}
