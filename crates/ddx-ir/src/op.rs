//! The operator table: every operation the graph can hold, with its spelling, arity and
//! how it prints.
//!
//! This is the single source of truth consumed by the parser, the printer, the
//! interpreter's lowering and the code generators. How each operation *evaluates* lives
//! in [`crate::math`]; how each is *differentiated* lives in `ad::rules`; both are one
//! `match` over [`Op`].
//!
//! Only `<`, `<=`, `==` and `!=` are operations: `a > b` is built as `b < a` and `a >= b`
//! as `b <= a`.

use std::fmt;

/// An operation of the expression graph.
///
/// The first group is unary, then binary, then ternary, then operations added later
/// (appended, so an operation's discriminant never changes); [`Op::arity`] says which.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
#[repr(u8)]
pub enum Op {
    /// `-a`
    Neg,
    /// `sin(a)`
    Sin,
    /// `cos(a)`
    Cos,
    /// `tan(a)`
    Tan,
    /// `exp(a)`
    Exp,
    /// `log(a)`, the natural logarithm
    Log,
    /// `log10(a)`
    Log10,
    /// `sqrt(a)`
    Sqrt,
    /// `cbrt(a)`
    Cbrt,
    /// `abs(a)`
    Abs,
    /// `sign(a)`: `-1`, `0` or `1`; `sign(±0) = 0`, `sign(NaN) = NaN`
    Sign,
    /// `asin(a)`
    Asin,
    /// `acos(a)`
    Acos,
    /// `atan(a)`
    Atan,
    /// `sinh(a)`
    Sinh,
    /// `cosh(a)`
    Cosh,
    /// `tanh(a)`
    Tanh,
    /// `asinh(a)`
    Asinh,
    /// `acosh(a)`
    Acosh,
    /// `atanh(a)`
    Atanh,
    /// `erf(a)`, the error function
    Erf,
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// `pow(a, b)`, printed `a ** b`
    Pow,
    /// `atan2(a, b)`: the angle of the point `(b, a)`, as C's `atan2(y, x)`
    Atan2,
    /// `hypot(a, b)`
    Hypot,
    /// `max(a, b)`; a NaN operand yields the other (IEEE maxNum)
    Max,
    /// `min(a, b)`; a NaN operand yields the other (IEEE minNum)
    Min,
    /// `a < b`, answering `1.0` or `0.0`
    Lt,
    /// `a <= b`
    Le,
    /// `a == b`
    Eq,
    /// `a != b`; `0.0` when either side is NaN
    Ne,
    /// `select(c, t, f)`: `t` where `c` is nonzero (NaN counts as nonzero), else `f`
    Select,
    /// `fma(a, b, c)`: `a * b + c` with one rounding. Only contraction passes make it.
    Fma,
    /// `log1p(a)`: `ln(1 + a)`, accurate for `a` near 0
    Log1p,
    /// `expm1(a)`: `exp(a) − 1`, accurate for `a` near 0
    Expm1,
    /// `log2(a)`
    Log2,
    /// `recip(a)`: `1 / a`, correctly rounded
    Recip,
    /// `powi(a, n)`: `a` to an integer power `n` by repeated squaring
    /// ([`crate::math::powi`]); NaN where `n` is not an integer. `n` is never
    /// differentiated (its derivative is `0`, as for `sign`).
    Powi,
    /// `call(tag, a, b)`: a user function's value or partial at `(a, b)`
    /// ([`crate::user`]); `tag` is a constant naming which. For a function of `k ≥ 3`
    /// arguments `b` is an [`Op::Pack`] chain holding the other `k − 1`. Made only by
    /// [`crate::UserFunction::call`], the parser given user functions and the AD rule of a
    /// call; not in [`Op::ALL`] (no text spells it, no random graph holds it, no archive
    /// stores it).
    Call,
    /// `hold(a)`: the value `a`, whose derivative is `0` (a stop-gradient). Made only by
    /// the AD rules (the exponent a `pow` partial must not differentiate, see
    /// [`crate::ad::rules`]) and removed by [`crate::Graph::extract`], which every lane,
    /// model and contracted lane comes out of, so no engine ever meets it; not in
    /// [`Op::ALL`] (no text spells it, no random graph holds it, no archive stores it).
    Hold,
    /// `pack(a, rest)`: no value of its own; the arguments after the first of a call of a
    /// user function of three or more arguments, as a chain
    /// `pack(a₂, pack(a₃, … pack(a_{k−1}, a_k)))` that is the last operand of an
    /// [`Op::Call`] (and only there: [`crate::verify`] checks it), so that
    /// [`crate::Node::args`] stays every node's true dependency list.
    /// [`crate::Graph::call_args`] reads a call's arguments through it; engines evaluate
    /// no pack on its own, only the call reading it, and no pack of constants folds. Made
    /// only by [`crate::UserFunction::call`] and the parser given user functions; not in
    /// [`Op::ALL`].
    Pack,
}

/// How an operation prints, and how tightly it binds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Notation {
    /// A function call: `name(args)`.
    Call,
    /// Prefix minus.
    Prefix,
    /// An infix operator with its token and binding power (larger binds tighter).
    Infix {
        /// The operator as written, e.g. `"+"`.
        token: &'static str,
        /// Binding power: comparison 1, additive 2, multiplicative 3, power 5.
        power: u8,
    },
}

/// Binding power of unary minus: above `* /`, below `**` (so `-x**2` is `-(x**2)`).
pub const PREFIX_POWER: u8 = 4;

impl Op {
    /// Every operation, in declaration order.
    pub const ALL: [Op; 41] = [
        Op::Neg,
        Op::Sin,
        Op::Cos,
        Op::Tan,
        Op::Exp,
        Op::Log,
        Op::Log10,
        Op::Sqrt,
        Op::Cbrt,
        Op::Abs,
        Op::Sign,
        Op::Asin,
        Op::Acos,
        Op::Atan,
        Op::Sinh,
        Op::Cosh,
        Op::Tanh,
        Op::Asinh,
        Op::Acosh,
        Op::Atanh,
        Op::Erf,
        Op::Add,
        Op::Sub,
        Op::Mul,
        Op::Div,
        Op::Pow,
        Op::Atan2,
        Op::Hypot,
        Op::Max,
        Op::Min,
        Op::Lt,
        Op::Le,
        Op::Eq,
        Op::Ne,
        Op::Select,
        Op::Fma,
        Op::Log1p,
        Op::Expm1,
        Op::Log2,
        Op::Recip,
        Op::Powi,
    ];

    /// The function-call spelling (`"sin"`, `"pow"`, `"select"`); for the arithmetic
    /// operators a descriptive name (`"add"`).
    pub fn name(self) -> &'static str {
        match self {
            Op::Neg => "neg",
            Op::Sin => "sin",
            Op::Cos => "cos",
            Op::Tan => "tan",
            Op::Exp => "exp",
            Op::Log => "log",
            Op::Log10 => "log10",
            Op::Sqrt => "sqrt",
            Op::Cbrt => "cbrt",
            Op::Abs => "abs",
            Op::Sign => "sign",
            Op::Asin => "asin",
            Op::Acos => "acos",
            Op::Atan => "atan",
            Op::Sinh => "sinh",
            Op::Cosh => "cosh",
            Op::Tanh => "tanh",
            Op::Asinh => "asinh",
            Op::Acosh => "acosh",
            Op::Atanh => "atanh",
            Op::Erf => "erf",
            Op::Add => "add",
            Op::Sub => "sub",
            Op::Mul => "mul",
            Op::Div => "div",
            Op::Pow => "pow",
            Op::Atan2 => "atan2",
            Op::Hypot => "hypot",
            Op::Max => "max",
            Op::Min => "min",
            Op::Lt => "lt",
            Op::Le => "le",
            Op::Eq => "eq",
            Op::Ne => "ne",
            Op::Select => "select",
            Op::Fma => "fma",
            Op::Log1p => "log1p",
            Op::Expm1 => "expm1",
            Op::Log2 => "log2",
            Op::Recip => "recip",
            Op::Powi => "powi",
            Op::Call => "call",
            Op::Hold => "hold",
            Op::Pack => "pack",
        }
    }

    /// How many arguments the operation takes: 1, 2 or 3.
    pub fn arity(self) -> usize {
        match self {
            Op::Neg
            | Op::Sin
            | Op::Cos
            | Op::Tan
            | Op::Exp
            | Op::Log
            | Op::Log10
            | Op::Sqrt
            | Op::Cbrt
            | Op::Abs
            | Op::Sign
            | Op::Asin
            | Op::Acos
            | Op::Atan
            | Op::Sinh
            | Op::Cosh
            | Op::Tanh
            | Op::Asinh
            | Op::Acosh
            | Op::Atanh
            | Op::Erf
            | Op::Log1p
            | Op::Expm1
            | Op::Log2
            | Op::Recip
            | Op::Hold => 1,
            Op::Add
            | Op::Sub
            | Op::Mul
            | Op::Div
            | Op::Pow
            | Op::Atan2
            | Op::Hypot
            | Op::Max
            | Op::Min
            | Op::Lt
            | Op::Le
            | Op::Eq
            | Op::Ne
            | Op::Powi
            | Op::Pack => 2,
            Op::Select | Op::Fma | Op::Call => 3,
        }
    }

    /// How the operation prints.
    pub fn notation(self) -> Notation {
        let infix = |token, power| Notation::Infix { token, power };
        match self {
            Op::Neg => Notation::Prefix,
            Op::Add => infix("+", 2),
            Op::Sub => infix("-", 2),
            Op::Mul => infix("*", 3),
            Op::Div => infix("/", 3),
            Op::Pow => infix("**", 5),
            Op::Lt => infix("<", 1),
            Op::Le => infix("<=", 1),
            Op::Eq => infix("==", 1),
            Op::Ne => infix("!=", 1),
            _ => Notation::Call,
        }
    }

    /// Whether the operation answers only `1.0` or `0.0` (a comparison).
    pub fn is_comparison(self) -> bool {
        matches!(self, Op::Lt | Op::Le | Op::Eq | Op::Ne)
    }

    /// The operation called `name` in the text grammar's function-call form (`sin`, `pow`,
    /// `select`, `fma`, …), or `None`. Infix-only operations have no call spelling.
    pub fn from_call_name(name: &str) -> Option<Op> {
        Op::ALL
            .into_iter()
            .find(|op| op.notation() == Notation::Call && op.name() == name)
            .or(match name {
                "pow" => Some(Op::Pow),
                _ => None,
            })
    }
}

// ---- The text grammar's view of the table (used by `crate::text`). ----

/// How a chain of one infix operator groups when written without parentheses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Assoc {
    /// `a - b - c` is `(a - b) - c`.
    Left,
    /// `a ** b ** c` is `a ** (b ** c)`.
    Right,
    /// Does not chain: `a < b < c` is refused.
    None,
}

/// Infix spellings that are a comparison of the table read the other way round: `a > b` is
/// built as `b < a`, `a >= b` as `b <= a`.
pub const MIRRORED: [(&str, Op); 2] = [(">", Op::Lt), (">=", Op::Le)];

impl Op {
    /// How a chain of this infix operation groups: `**` to the right, comparisons not at
    /// all, the rest to the left. Meaningful only for [`Notation::Infix`] operations.
    pub fn assoc(self) -> Assoc {
        match self {
            Op::Pow => Assoc::Right,
            op if op.is_comparison() => Assoc::None,
            _ => Assoc::Left,
        }
    }

    /// The operation written `token` between its operands (`"+"`, `"**"`, `"<="`), and
    /// whether its operands are swapped (`">"` is `<` with the operands swapped).
    pub fn from_infix_token(token: &str) -> Option<(Op, bool)> {
        Op::ALL
            .into_iter()
            .find(|op| matches!(op.notation(), Notation::Infix { token: t, .. } if t == token))
            .map(|op| (op, false))
            .or_else(|| {
                MIRRORED
                    .iter()
                    .find(|(t, _)| *t == token)
                    .map(|&(_, op)| (op, true))
            })
    }

    /// Every infix spelling the grammar reads: the table's tokens and [`MIRRORED`].
    pub fn infix_tokens() -> impl Iterator<Item = &'static str> {
        Op::ALL
            .into_iter()
            .filter_map(|op| match op.notation() {
                Notation::Infix { token, .. } => Some(token),
                _ => None,
            })
            .chain(MIRRORED.iter().map(|&(t, _)| t))
    }

    /// The operation another language spells `name` where the grammar spells it otherwise
    /// (`ln` is [`Op::Log`], NumPy's `arctan` is [`Op::Atan`], C's `fabs` is [`Op::Abs`]):
    /// what an [`UnknownFunction`](crate::Error::UnknownFunction) error suggests first.
    pub fn other_spelling(name: &str) -> Option<Op> {
        Some(match name {
            "ln" => Op::Log,
            "arcsin" => Op::Asin,
            "arccos" => Op::Acos,
            "arctan" => Op::Atan,
            "arcsinh" => Op::Asinh,
            "arccosh" => Op::Acosh,
            "arctanh" => Op::Atanh,
            "arctan2" => Op::Atan2,
            "fabs" => Op::Abs,
            "fmax" | "maximum" => Op::Max,
            "fmin" | "minimum" => Op::Min,
            "sgn" | "signum" => Op::Sign,
            _ => return None,
        })
    }

    /// Every name the grammar accepts in a call (`sin`, `pow`, `select`, …).
    pub fn call_names() -> impl Iterator<Item = &'static str> {
        Op::ALL
            .into_iter()
            .filter(|op| op.notation() == Notation::Call || *op == Op::Pow)
            .map(Op::name)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_complete_and_ordered() {
        for (i, op) in Op::ALL.iter().enumerate() {
            assert_eq!(*op as usize, i, "{op} out of place");
        }
        assert_eq!(Op::ALL.iter().filter(|op| op.arity() == 1).count(), 25);
        assert_eq!(Op::ALL.iter().filter(|op| op.arity() == 2).count(), 14);
    }

    #[test]
    fn call_names_round_trip() {
        for op in Op::ALL {
            if op.notation() == Notation::Call || op == Op::Pow {
                assert_eq!(Op::from_call_name(op.name()), Some(op));
            }
        }
        assert_eq!(Op::from_call_name("add"), None);
        assert_eq!(Op::from_call_name("neg"), None);
        for name in Op::call_names() {
            assert!(Op::from_call_name(name).is_some(), "{name}");
        }
    }

    #[test]
    fn infix_tokens_resolve() {
        for t in Op::infix_tokens() {
            assert!(Op::from_infix_token(t).is_some(), "{t}");
        }
        assert_eq!(Op::from_infix_token(">"), Some((Op::Lt, true)));
        assert_eq!(Op::from_infix_token("**"), Some((Op::Pow, false)));
        assert_eq!(Op::from_infix_token("^"), None);
        assert_eq!(Op::Pow.assoc(), Assoc::Right);
        assert_eq!(Op::Le.assoc(), Assoc::None);
        assert_eq!(Op::Sub.assoc(), Assoc::Left);
    }
}
