//! Reading a function body into ddx's graph, at expansion time.
//!
//! **Input**: the parsed function (`syn`). **Output**: a [`ddx_ir::Model`] built through
//! [`ddx_ir::Graph::add`] — folded and hash-consed exactly as `ddx::rt::equation` builds
//! the same expression at run time, with `a > b` as `b < a` and `a >= b` as `b <= a` as
//! `Expr::gt`/`Expr::ge` build them — or a [`syn::Error`] at the first construct it
//! cannot read, saying what is accepted. Nothing here panics on user code.
//!
//! The accepted language is documented on `ddx::derivatives` (crate root); each refusal
//! names it.

use ddx_ir::{Graph, Model, NodeId, Op, SymbolId};
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::{BinOp, Expr, FnArg, Lit, Pat, ReturnType, Stmt, Type, UnOp};

/// The most nodes a body may build (unrolled loops included) before it is refused.
pub const MAX_NODES: usize = 200_000;

const ACCEPTED: &str = "accepted: f64 literals and parameters, `let` (and `let mut` with `=`, `+=`, `-=`, `*=`, `/=`), \
`+ - * /`, unary `-`, `if a < b { .. } else { .. }` (any of `< <= > >= == !=`), \
`for i in A..B` with integer bounds, `i as f64`, the f64 methods and functions named in ddx::derivatives' documentation, \
and `f64::consts::*`";

/// A value while reading: a graph node or a compile-time integer (a loop index).
#[derive(Clone, Copy, Debug)]
enum Value {
    Node(NodeId),
    Int(i64),
}

/// A local binding.
#[derive(Clone, Copy, Debug)]
struct Local {
    value: Value,
    mutable: bool,
}

/// The function's symbols, in declaration order, with their spans.
pub struct Signature {
    /// Parameter names, in declaration order.
    pub params: Vec<syn::Ident>,
}

/// Checks the signature: plain `f64` parameters (at least one) and an `f64` result; no
/// generics, `async`, `unsafe`, receivers or patterns.
pub fn signature(f: &syn::ItemFn) -> syn::Result<Signature> {
    let sig = &f.sig;
    let refuse = |span: proc_macro2::Span, what: &str| {
        Err(syn::Error::new(
            span,
            format!("ddx::derivatives: {what}; accepted: `fn name(a: f64, b: f64, ...) -> f64`"),
        ))
    };
    if let Some(t) = &sig.asyncness {
        return refuse(t.span(), "an `async fn` cannot be differentiated");
    }
    if let Some(t) = &sig.unsafety {
        return refuse(t.span(), "an `unsafe fn` is not accepted");
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return refuse(sig.generics.span(), "generic parameters are not accepted");
    }
    if let Some(v) = &sig.variadic {
        return refuse(v.span(), "variadic parameters are not accepted");
    }
    let mut params = Vec::new();
    for arg in &sig.inputs {
        match arg {
            FnArg::Receiver(r) => return refuse(r.span(), "a method receiver is not accepted"),
            FnArg::Typed(t) => {
                let Pat::Ident(p) = &*t.pat else {
                    return refuse(t.pat.span(), "parameters must be plain names");
                };
                if p.by_ref.is_some() || p.subpat.is_some() {
                    return refuse(t.pat.span(), "parameters must be plain names");
                }
                if !is_f64(&t.ty) {
                    return refuse(t.ty.span(), "every parameter must be `f64`");
                }
                if params.iter().any(|q: &syn::Ident| q == &p.ident) {
                    return refuse(p.ident.span(), "a parameter name is used twice");
                }
                params.push(p.ident.clone());
            }
        }
    }
    if params.is_empty() {
        return refuse(
            sig.inputs.span(),
            "the function needs at least one `f64` parameter",
        );
    }
    match &sig.output {
        ReturnType::Type(_, ty) if is_f64(ty) => {}
        ReturnType::Type(_, ty) => return refuse(ty.span(), "the result must be `f64`"),
        ReturnType::Default => return refuse(sig.ident.span(), "the result must be `f64`"),
    }
    Ok(Signature { params })
}

fn is_f64(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("f64"))
}

/// Reads the body of `f` (whose signature [`signature`] accepted) into a model whose
/// symbols are the parameters.
pub fn model(f: &syn::ItemFn, sig: &Signature) -> syn::Result<Model> {
    let mut r = Reader {
        g: Graph::new(),
        scopes: vec![HashMap::new()],
    };
    for (i, p) in sig.params.iter().enumerate() {
        let id = r.g.symbol(SymbolId::from_index(i));
        r.scopes[0].insert(
            p.to_string(),
            Local {
                value: Value::Node(id),
                mutable: false,
            },
        );
    }
    let out = r.block(&f.block)?;
    let Some(out) = out else {
        return Err(syn::Error::new(
            f.block.span(),
            "ddx::derivatives: the body must end with the f64 expression it answers",
        ));
    };
    let out = r.node(out, f.block.span())?;
    let names = sig.params.iter().map(unraw).collect();
    Ok(Model::seal(&r.g, &[out], names))
}

/// An identifier's name without a raw prefix (`r#type` is the symbol `type`).
pub fn unraw(id: &syn::Ident) -> String {
    let s = id.to_string();
    s.strip_prefix("r#").map_or(s.clone(), str::to_string)
}

struct Reader {
    g: Graph,
    scopes: Vec<HashMap<String, Local>>,
}

fn err<T>(span: proc_macro2::Span, what: impl std::fmt::Display) -> syn::Result<T> {
    Err(syn::Error::new(
        span,
        format!("ddx::derivatives: {what}; {ACCEPTED}"),
    ))
}

impl Reader {
    fn lookup(&self, name: &str) -> Option<Local> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn check_size(&self, span: proc_macro2::Span) -> syn::Result<()> {
        if self.g.len() > MAX_NODES {
            return Err(syn::Error::new(
                span,
                format!("ddx::derivatives: the body builds more than {MAX_NODES} nodes (a loop unrolled too far?)"),
            ));
        }
        Ok(())
    }

    /// Reads a block in a new scope; its value is the trailing expression, if any.
    fn block(&mut self, b: &syn::Block) -> syn::Result<Option<Value>> {
        self.scopes.push(HashMap::new());
        let mut last = None;
        for (k, stmt) in b.stmts.iter().enumerate() {
            let tail = k + 1 == b.stmts.len();
            match stmt {
                Stmt::Local(l) => self.local(l)?,
                Stmt::Expr(e, semi) => {
                    if semi.is_none() && tail {
                        last = Some(self.expr(e)?);
                    } else {
                        self.statement(e)?;
                    }
                }
                Stmt::Item(i) => return err(i.span(), "items inside the body are not accepted"),
                Stmt::Macro(m) => return err(m.span(), "macros inside the body are not accepted"),
            }
        }
        self.scopes.pop();
        Ok(last)
    }

    fn local(&mut self, l: &syn::Local) -> syn::Result<()> {
        let (pat, ty) = match &l.pat {
            Pat::Type(t) => (&*t.pat, Some(&*t.ty)),
            p => (p, None),
        };
        let Pat::Ident(p) = pat else {
            return err(pat.span(), "a `let` must bind one plain name");
        };
        if p.by_ref.is_some() || p.subpat.is_some() {
            return err(pat.span(), "a `let` must bind one plain name");
        }
        if let Some(ty) = ty {
            if !is_f64(ty) {
                return err(ty.span(), "a `let` may only be annotated `f64`");
            }
        }
        let Some(init) = &l.init else {
            return err(l.span(), "a `let` needs a value");
        };
        if let Some((_, diverge)) = &init.diverge {
            return err(diverge.span(), "`let ... else` is not accepted");
        }
        let v = self.expr(&init.expr)?;
        let v = Value::Node(self.node(v, init.expr.span())?);
        let name = unraw(&p.ident);
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(
                name,
                Local {
                    value: v,
                    mutable: p.mutability.is_some(),
                },
            );
        }
        Ok(())
    }

    /// An expression statement: an assignment, a compound assignment or a `for` loop.
    fn statement(&mut self, e: &Expr) -> syn::Result<()> {
        match e {
            Expr::Assign(a) => {
                let v = self.expr(&a.right)?;
                let v = self.node(v, a.right.span())?;
                self.assign(&a.left, v)
            }
            Expr::Binary(b) if compound(&b.op).is_some() => {
                let op = compound(&b.op).unwrap_or(Op::Add);
                let old = self.expr(&b.left)?;
                let old = self.node(old, b.left.span())?;
                let rhs = self.expr(&b.right)?;
                let rhs = self.node(rhs, b.right.span())?;
                let v = self.g.binary(op, old, rhs);
                self.assign(&b.left, v)
            }
            Expr::ForLoop(f) => self.for_loop(f),
            other => err(other.span(), "this statement is not accepted"),
        }
    }

    fn assign(&mut self, target: &Expr, v: NodeId) -> syn::Result<()> {
        let Expr::Path(p) = target else {
            return err(target.span(), "only a local name can be assigned");
        };
        let Some(id) = p.path.get_ident() else {
            return err(target.span(), "only a local name can be assigned");
        };
        let name = unraw(id);
        for scope in self.scopes.iter_mut().rev() {
            if let Some(l) = scope.get_mut(&name) {
                if !l.mutable {
                    return err(target.span(), format!("`{name}` is not `let mut`"));
                }
                l.value = Value::Node(v);
                return Ok(());
            }
        }
        err(
            target.span(),
            format!("`{name}` is not a local of the body"),
        )
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> syn::Result<()> {
        let name = match &*f.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(unraw(&p.ident)),
            Pat::Wild(_) => None,
            other => {
                return err(
                    other.span(),
                    "a loop variable must be one plain name or `_`",
                )
            }
        };
        let Expr::Range(r) = &*f.expr else {
            return err(
                f.expr.span(),
                "a loop must run over an integer range `A..B` or `A..=B`",
            );
        };
        let (Some(lo), Some(hi)) = (&r.start, &r.end) else {
            return err(r.span(), "a loop range needs both bounds");
        };
        let lo = self.int(lo)?;
        let mut hi = self.int(hi)?;
        if matches!(r.limits, syn::RangeLimits::Closed(_)) {
            hi = hi.saturating_add(1);
        }
        let mut i = lo;
        while i < hi {
            self.check_size(f.span())?;
            let mut scope = HashMap::new();
            if let Some(name) = &name {
                scope.insert(
                    name.clone(),
                    Local {
                        value: Value::Int(i),
                        mutable: false,
                    },
                );
            }
            self.scopes.push(scope);
            let tail = self.block(&f.body)?;
            self.scopes.pop();
            if tail.is_some() {
                return err(f.body.span(), "a loop body must end with `;`");
            }
            i += 1;
        }
        Ok(())
    }

    /// A compile-time integer: a literal, a loop index, or `+ - *` of those.
    fn int(&mut self, e: &Expr) -> syn::Result<i64> {
        match self.expr(e)? {
            Value::Int(i) => Ok(i),
            Value::Node(_) => err(
                e.span(),
                "a loop bound must be an integer known at compile time",
            ),
        }
    }

    /// A value as a node: integers (loop indices, integer literals) become constants.
    fn node(&mut self, v: Value, span: proc_macro2::Span) -> syn::Result<NodeId> {
        match v {
            Value::Node(id) => Ok(id),
            Value::Int(i) => {
                let f = i as f64;
                if f as i64 != i {
                    return err(span, "this integer has no exact f64");
                }
                Ok(self.g.constant(f))
            }
        }
    }

    fn f(&mut self, e: &Expr) -> syn::Result<NodeId> {
        let v = self.expr(e)?;
        self.check_size(e.span())?;
        self.node(v, e.span())
    }

    fn expr(&mut self, e: &Expr) -> syn::Result<Value> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Float(f) => match f.suffix() {
                    "" | "f64" => match f.base10_parse::<f64>() {
                        Ok(v) => Ok(Value::Node(self.g.constant(v))),
                        Err(e) => Err(e),
                    },
                    _ => err(f.span(), "only f64 literals are accepted"),
                },
                Lit::Int(i) => match i.suffix() {
                    "" | "i32" | "i64" | "usize" | "u32" | "u64" | "isize" => {
                        Ok(Value::Int(i.base10_parse::<i64>()?))
                    }
                    "f64" => Ok(Value::Node(self.g.constant(i.base10_parse::<f64>()?))),
                    _ => err(i.span(), "this literal's type is not accepted"),
                },
                other => err(other.span(), "only numeric literals are accepted"),
            },
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::Block(b) if b.label.is_none() => match self.block(&b.block)? {
                Some(v) => Ok(v),
                None => err(b.span(), "a block must end with an expression"),
            },
            Expr::Path(p) => self.path(p),
            Expr::Unary(u) => match u.op {
                UnOp::Neg(_) => match self.expr(&u.expr)? {
                    Value::Int(i) => Ok(Value::Int(i.checked_neg().unwrap_or(i64::MAX))),
                    Value::Node(a) => Ok(Value::Node(self.g.unary(Op::Neg, a))),
                },
                _ => err(u.span(), "only unary `-` is accepted"),
            },
            Expr::Cast(c) => {
                if !is_f64(&c.ty) {
                    return err(c.ty.span(), "only `as f64` casts are accepted");
                }
                let v = self.expr(&c.expr)?;
                Ok(Value::Node(self.node(v, c.span())?))
            }
            Expr::Binary(b) => self.binary(b),
            Expr::If(i) => self.if_else(i),
            Expr::MethodCall(m) => {
                let recv = self.f(&m.receiver)?;
                let mut args = vec![recv];
                for a in &m.args {
                    args.push(self.f(a)?);
                }
                if m.turbofish.is_some() {
                    return err(m.span(), "type arguments are not accepted");
                }
                self.call(&m.method.to_string(), &args, m.method.span(), true)
            }
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else {
                    return err(c.func.span(), "only calls of named functions are accepted");
                };
                let Some(last) = p.path.segments.last() else {
                    return err(c.func.span(), "only calls of named functions are accepted");
                };
                let name = last.ident.to_string();
                if name == "select" && c.args.len() == 3 {
                    let cond = self.condition(&c.args[0])?;
                    let t = self.f(&c.args[1])?;
                    let f = self.f(&c.args[2])?;
                    return Ok(Value::Node(self.g.select(cond, t, f)));
                }
                let mut args = Vec::new();
                for a in &c.args {
                    args.push(self.f(a)?);
                }
                self.call(&name, &args, last.ident.span(), false)
            }
            other => err(other.span(), "this expression is not accepted"),
        }
    }

    fn path(&mut self, p: &syn::ExprPath) -> syn::Result<Value> {
        if let Some(id) = p.path.get_ident() {
            let name = unraw(id);
            return match self.lookup(&name) {
                Some(l) => Ok(l.value),
                None => err(
                    id.span(),
                    format!("`{name}` is not a parameter or local of the body"),
                ),
            };
        }
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let tail: Vec<&str> = segs
            .iter()
            .map(String::as_str)
            .skip_while(|s| *s == "std" || *s == "core")
            .collect();
        let value = match tail.as_slice() {
            ["f64", "consts", c] => constant(c),
            ["f64", c] => match *c {
                "INFINITY" => Some(f64::INFINITY),
                "NEG_INFINITY" => Some(f64::NEG_INFINITY),
                "NAN" => Some(f64::NAN),
                "MAX" => Some(f64::MAX),
                "MIN" => Some(f64::MIN),
                "MIN_POSITIVE" => Some(f64::MIN_POSITIVE),
                "EPSILON" => Some(f64::EPSILON),
                _ => None,
            },
            _ => None,
        };
        match value {
            Some(v) => Ok(Value::Node(self.g.constant(v))),
            None => err(
                p.span(),
                "unknown name: only parameters, locals and `f64::consts::*` are accepted",
            ),
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> syn::Result<Value> {
        let op = match b.op {
            BinOp::Add(_) => Op::Add,
            BinOp::Sub(_) => Op::Sub,
            BinOp::Mul(_) => Op::Mul,
            BinOp::Div(_) => Op::Div,
            BinOp::Lt(_) | BinOp::Le(_) | BinOp::Gt(_) | BinOp::Ge(_) | BinOp::Eq(_) | BinOp::Ne(_) => {
                return err(
                    b.span(),
                    "a comparison is a `bool`: use it as the condition of `if` or `select`, or write `a.lt(b)` for 1.0 or 0.0",
                )
            }
            _ => return err(b.op.span(), "this operator is not accepted"),
        };
        let l = self.expr(&b.left)?;
        let r = self.expr(&b.right)?;
        if let (Value::Int(x), Value::Int(y)) = (l, r) {
            let v = match op {
                Op::Add => x.checked_add(y),
                Op::Sub => x.checked_sub(y),
                Op::Mul => x.checked_mul(y),
                _ => None,
            };
            if let Some(v) = v {
                return Ok(Value::Int(v));
            }
            if op != Op::Div {
                return err(b.span(), "integer overflow");
            }
        }
        let l = self.node(l, b.left.span())?;
        let r = self.node(r, b.right.span())?;
        Ok(Value::Node(self.g.binary(op, l, r)))
    }

    /// A condition: a comparison (built as `ddx::Expr` builds it), or an f64 value
    /// (true when nonzero or NaN, as `select`'s).
    fn condition(&mut self, e: &Expr) -> syn::Result<NodeId> {
        let e = match e {
            Expr::Paren(p) => &*p.expr,
            e => e,
        };
        if let Expr::Binary(b) = e {
            let cmp = match b.op {
                BinOp::Lt(_) => Some((Op::Lt, false)),
                BinOp::Le(_) => Some((Op::Le, false)),
                BinOp::Gt(_) => Some((Op::Lt, true)),
                BinOp::Ge(_) => Some((Op::Le, true)),
                BinOp::Eq(_) => Some((Op::Eq, false)),
                BinOp::Ne(_) => Some((Op::Ne, false)),
                _ => None,
            };
            if let Some((op, swap)) = cmp {
                let l = self.f(&b.left)?;
                let r = self.f(&b.right)?;
                let (a, c) = if swap { (r, l) } else { (l, r) };
                return Ok(self.g.binary(op, a, c));
            }
        }
        self.f(e)
    }

    fn if_else(&mut self, i: &syn::ExprIf) -> syn::Result<Value> {
        let cond = self.condition(&i.cond)?;
        let Some((_, other)) = &i.else_branch else {
            return err(
                i.span(),
                "an `if` needs an `else` (both arms are evaluated, as in `select`)",
            );
        };
        let t = match self.block(&i.then_branch)? {
            Some(v) => self.node(v, i.then_branch.span())?,
            None => {
                return err(
                    i.then_branch.span(),
                    "an `if` arm must end with an expression",
                )
            }
        };
        let f = self.f(other)?;
        Ok(Value::Node(self.g.select(cond, t, f)))
    }

    /// A call of `name` (a method when `method`: the receiver is `args[0]`).
    fn call(
        &mut self,
        name: &str,
        args: &[NodeId],
        span: proc_macro2::Span,
        method: bool,
    ) -> syn::Result<Value> {
        let unary = |n: &str| -> Option<Op> {
            Some(match n {
                "sin" => Op::Sin,
                "cos" => Op::Cos,
                "tan" => Op::Tan,
                "exp" => Op::Exp,
                "ln" | "log" => Op::Log,
                "log10" => Op::Log10,
                "sqrt" => Op::Sqrt,
                "cbrt" => Op::Cbrt,
                "abs" => Op::Abs,
                "sign" => Op::Sign,
                "asin" => Op::Asin,
                "acos" => Op::Acos,
                "atan" => Op::Atan,
                "sinh" => Op::Sinh,
                "cosh" => Op::Cosh,
                "tanh" => Op::Tanh,
                "asinh" => Op::Asinh,
                "acosh" => Op::Acosh,
                "atanh" => Op::Atanh,
                "erf" => Op::Erf,
                "ln_1p" | "log1p" => Op::Log1p,
                "exp_m1" | "expm1" => Op::Expm1,
                "log2" => Op::Log2,
                "recip" => Op::Recip,
                _ => return None,
            })
        };
        let binary = |n: &str| -> Option<(Op, bool)> {
            Some(match n {
                "powf" | "pow" => (Op::Pow, false),
                "powi" => (Op::Powi, false),
                "atan2" => (Op::Atan2, false),
                "hypot" => (Op::Hypot, false),
                "max" => (Op::Max, false),
                "min" => (Op::Min, false),
                "lt" => (Op::Lt, false),
                "le" => (Op::Le, false),
                "gt" => (Op::Lt, true),
                "ge" => (Op::Le, true),
                "eq" => (Op::Eq, false),
                "ne" => (Op::Ne, false),
                _ => return None,
            })
        };
        if method && name == "log" {
            return err(
                span,
                "`x.log(base)` is not accepted: write `x.ln() / base.ln()` or `x.log10()`",
            );
        }
        if name == "signum" {
            return err(
                span,
                "`signum` is not accepted (it answers ±1 at ±0): write `x.sign()`, ddx's sign",
            );
        }
        let v = match (args.len(), unary(name), binary(name)) {
            (1, Some(op), _) => self.g.unary(op, args[0]),
            (2, _, Some((op, swap))) => {
                let (a, b) = if swap {
                    (args[1], args[0])
                } else {
                    (args[0], args[1])
                };
                self.g.binary(op, a, b)
            }
            (3, _, _) if name == "mul_add" || name == "fma" => self.g.apply(Op::Fma, args),
            (3, _, _) if name == "select" => self.g.select(args[0], args[1], args[2]),
            _ => {
                let known = unary(name).is_some()
                    || binary(name).is_some()
                    || ["mul_add", "fma", "select"].contains(&name);
                return if known {
                    err(
                        span,
                        format!("`{name}` is called with the wrong number of arguments"),
                    )
                } else {
                    err(span, format!("unknown function `{name}`"))
                };
            }
        };
        Ok(Value::Node(v))
    }
}

fn compound(op: &BinOp) -> Option<Op> {
    match op {
        BinOp::AddAssign(_) => Some(Op::Add),
        BinOp::SubAssign(_) => Some(Op::Sub),
        BinOp::MulAssign(_) => Some(Op::Mul),
        BinOp::DivAssign(_) => Some(Op::Div),
        _ => None,
    }
}

fn constant(name: &str) -> Option<f64> {
    use std::f64::consts::*;
    Some(match name {
        "PI" => PI,
        "TAU" => TAU,
        "E" => E,
        "SQRT_2" => SQRT_2,
        "FRAC_1_SQRT_2" => FRAC_1_SQRT_2,
        "LN_2" => LN_2,
        "LN_10" => LN_10,
        "LOG2_E" => LOG2_E,
        "LOG10_E" => LOG10_E,
        "LOG2_10" => LOG2_10,
        "LOG10_2" => LOG10_2,
        "FRAC_PI_2" => FRAC_PI_2,
        "FRAC_PI_3" => FRAC_PI_3,
        "FRAC_PI_4" => FRAC_PI_4,
        "FRAC_PI_6" => FRAC_PI_6,
        "FRAC_PI_8" => FRAC_PI_8,
        "FRAC_1_PI" => FRAC_1_PI,
        "FRAC_2_PI" => FRAC_2_PI,
        "FRAC_2_SQRT_PI" => FRAC_2_SQRT_PI,
        _ => return None,
    })
}
