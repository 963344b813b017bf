//! From a model to items: the lanes the macro answers, emitted by `ddx_ir::emit` (the
//! same emitter as `Equation::to_rust_source`), and the wrappers that give them their
//! shapes.
//!
//! Every lane is built by `ddx_ir::lane` — the passes the run-time equation runs — and
//! emitted with ddx's own `erf` (`::ddx::ir::math::erf`), so each result is the
//! interpreter's bits for the same graph.

use crate::parse::{unraw, Signature};
use ddx_ir::ad::tensor::TensorLayout;
use ddx_ir::emit::{self, RustStyle};
use ddx_ir::lane::{self, LaneKind};
use ddx_ir::{Lane, Model};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};

/// The most values one `derivative_tensor::<K>` may hold (`nᵏ`); larger orders are
/// refused at expansion with a message.
pub const MAX_DENSE: usize = 1 << 16;
/// The most nodes all emitted lanes together may hold.
pub const MAX_EMITTED_NODES: usize = 400_000;

/// What the attribute asks.
pub struct Options {
    /// Tensors (and univariate derivatives) are generated for orders `1..=order`.
    pub order: usize,
}

fn emitted(lane: &Lane, symbols: &[String], name: &str) -> syn::Result<(TokenStream, bool)> {
    let style = RustStyle {
        erf: Some("::ddx::ir::math::erf".into()),
        crate_visible: false,
    };
    let src = emit::rust(lane, symbols, name, &style)
        .map_err(|e| syn::Error::new(Span::call_site(), format!("ddx::derivatives: {e}")))?;
    let tokens: TokenStream = src.parse().map_err(|e| {
        syn::Error::new(
            Span::call_site(),
            format!("ddx::derivatives: internal: {e}"),
        )
    })?;
    Ok((tokens, emit::const_evaluable(lane)))
}

/// The items replacing `f`.
pub fn expand(
    f: &syn::ItemFn,
    sig: &Signature,
    model: &Model,
    opts: &Options,
) -> syn::Result<TokenStream> {
    let n = model.arity();
    let symbols = model.symbols().to_vec();
    // The canonical point from the parameters: symbol i is the parameter named symbols[i].
    let params: Vec<&syn::Ident> = symbols
        .iter()
        .map(|s| {
            sig.params.iter().find(|p| &unraw(p) == s).ok_or_else(|| {
                syn::Error::new(
                    Span::call_site(),
                    "ddx::derivatives: internal: symbol without parameter",
                )
            })
        })
        .collect::<syn::Result<_>>()?;
    let point = quote! { &[#(#params),*] };
    let declared = &sig.params;
    let decl = quote! { #(#declared: f64),* };

    let mut total = 0usize;
    let mut budget = |lane: &Lane| -> syn::Result<()> {
        total += lane.graph.len();
        if total > MAX_EMITTED_NODES {
            return Err(syn::Error::new(
                f.sig.ident.span(),
                format!("ddx::derivatives: the derivatives of this function need more than {MAX_EMITTED_NODES} nodes; lower `order`"),
            ));
        }
        Ok(())
    };

    let value_lane = lane::build(model, LaneKind::Value);
    budget(&value_lane)?;
    let (value_fn, value_const) = emitted(&value_lane, &symbols, "__ddx_value")?;
    let gradient_lane = lane::build(model, LaneKind::Gradient);
    budget(&gradient_lane)?;
    let (gradient_fn, gradient_const) = emitted(&gradient_lane, &symbols, "__ddx_gradient")?;
    let hessian_lane = lane::build(model, LaneKind::Hessian);
    budget(&hessian_lane)?;
    let (hessian_fn, hessian_const) = emitted(&hessian_lane, &symbols, "__ddx_hessian")?;

    // Gradient: lane outputs are the structurally nonzero cells, in column order.
    let mut grad_cells = vec![quote! { 0.0 }; n];
    if let Some(p) = &gradient_lane.pattern {
        for (k, c) in p.entries().iter().enumerate() {
            let k = syn::Index::from(k);
            grad_cells[c.column] = quote! { o[#k] };
        }
    }
    // Hessian: values, Jacobian cells, then the compressed block.
    let skip = hessian_lane.values + hessian_lane.pattern.as_ref().map_or(0, |p| p.nonzeros());
    let layout = hessian_lane.hessian.as_ref();
    let rows: Vec<TokenStream> = (0..n)
        .map(|i| {
            let cells = (0..n).map(|j| match layout.and_then(|l| l.cell(i, j)) {
                Some(c) => {
                    let k = syn::Index::from(skip + c);
                    quote! { o[#k] }
                }
                None => quote! { 0.0 },
            });
            quote! { [#(#cells),*] }
        })
        .collect();

    let konst = |c: bool| {
        if c {
            quote! { const }
        } else {
            quote! {}
        }
    };
    let (vk, gk, hk) = (
        konst(value_const),
        konst(gradient_const),
        konst(hessian_const),
    );

    // Tensors of orders 1..=order.
    let mut tensor_items = Vec::new();
    for k in 1..=opts.order {
        let layout = TensorLayout::new(n, k);
        let dense = layout.dense().filter(|&d| d <= MAX_DENSE).ok_or_else(|| {
            syn::Error::new(
                f.sig.ident.span(),
                format!("ddx::derivatives: derivative_tensor::<{k}> over {n} symbols would hold more than {MAX_DENSE} values; lower `order`"),
            )
        })?;
        let lane = lane::build_tensor(model, k)
            .map_err(|e| syn::Error::new(f.sig.ident.span(), format!("ddx::derivatives: {e}")))?;
        budget(&lane)?;
        let name = format!("__ddx_tensor_{k}");
        let (tensor_fn, _) = emitted(&lane, &symbols, &name)?;
        let fn_name = format_ident!("{}", name);
        // The nested array type and value: [[..; n]; n], index digits row-major.
        let mut ty = quote! { f64 };
        for _ in 0..k {
            ty = quote! { [#ty; #n] };
        }
        let leaves: Vec<TokenStream> = (0..dense)
            .map(|d| {
                let u = syn::Index::from(layout.unique_of(d));
                quote! { o[#u] }
            })
            .collect();
        let mut level = leaves;
        for _ in 0..k {
            level = level
                .chunks(n.max(1))
                .map(|c| quote! { [#(#c),*] })
                .collect();
        }
        let value = level.into_iter().next().unwrap_or_else(|| quote! { [] });
        let kk = k;
        tensor_items.push(quote! {
            #tensor_fn
            impl Tensor for Order<#kk> {
                type Output = #ty;
                fn tensor(x: &[f64; #n]) -> #ty {
                    let o = #fn_name(x);
                    #value
                }
            }
        });
        if n == 1 {
            tensor_items.push(quote! {
                impl Univariate for Order<#kk> {
                    fn derivative(x: f64) -> f64 {
                        #fn_name(&[x])[0]
                    }
                }
            });
        }
    }
    let univariate = if n == 1 {
        let p = &sig.params[0];
        quote! {
            /// The one-symbol function's derivative of order `K`, for `K` in `0..=order`
            /// (`K = 0` is the value): the single entry of `derivative_tensor::<K>`.
            pub trait Univariate {
                /// `dᴷf/dxᴷ` at `x`.
                fn derivative(x: f64) -> f64;
            }
            impl Univariate for Order<0> {
                fn derivative(x: f64) -> f64 {
                    __ddx_value(&[x])[0]
                }
            }
            /// `dᴷf/dxᴷ` at the point (`K = 0`: the value), for `K` up to the attribute's
            /// `order`; a larger `K` does not compile.
            pub fn univariate_derivative<const K: usize>(#p: f64) -> f64
            where
                Order<K>: Univariate,
            {
                <Order<K> as Univariate>::derivative(#p)
            }
        }
    } else {
        quote! {}
    };

    let vis = &f.vis;
    let attrs = &f.attrs;
    let name = &f.sig.ident;
    let sym_strs = symbols.iter();
    let order = opts.order;
    Ok(quote! {
        #(#attrs)*
        #vis #vk fn #name(#decl) -> f64 {
            #name::value(#(#declared),*)
        }

        #[doc = concat!("Value and derivatives of [`", stringify!(#name), "`], generated by `ddx::derivatives`.")]
        #[allow(non_snake_case, dead_code, clippy::all, clippy::pedantic)]
        #vis mod #name {
            /// The symbols in canonical order (byte order of the names): the order of
            /// every gradient entry, Hessian row and column and tensor index.
            pub const SYMBOLS: [&str; #n] = [#(#sym_strs),*];
            /// The highest order `derivative_tensor` is generated for.
            pub const ORDER: usize = #order;

            #value_fn
            #gradient_fn
            #hessian_fn

            /// The function's value.
            pub #vk fn value(#decl) -> f64 {
                __ddx_value(#point)[0]
            }

            /// `∂f/∂xᵢ` for every symbol, in [`SYMBOLS`] order.
            pub #gk fn gradient(#decl) -> [f64; #n] {
                let o = __ddx_gradient(#point);
                [#(#grad_cells),*]
            }

            /// `H[i][j] = ∂²f/∂xᵢ∂xⱼ`, in [`SYMBOLS`] order; read as the run-time
            /// `Equation::hessian` reads its colour-compressed lane, so `H[i][j]` and
            /// `H[j][i]` may differ in the last bit.
            pub #hk fn hessian(#decl) -> [[f64; #n]; #n] {
                let o = __ddx_hessian(#point);
                [#(#rows),*]
            }

            /// A derivative order, as a type.
            #[derive(Clone, Copy, Debug)]
            pub struct Order<const K: usize>;

            /// The derivative tensor of one order; implemented for `Order<1>` to
            /// `Order<ORDER>`.
            pub trait Tensor {
                /// `[[…[f64; n]…; n]; n]`, `K` levels deep.
                type Output;
                /// Every `K`-th order partial at the canonical point `x`.
                fn tensor(x: &[f64; #n]) -> Self::Output;
            }

            #(#tensor_items)*

            /// Every `K`-th order partial, `T[i₁]…[i_K] = ∂ᴷf/∂x_{i₁}…∂x_{i_K}` in
            /// [`SYMBOLS`] order (exactly symmetric: one computation per sorted
            /// multi-index), for `K` in `1..=ORDER`; a larger `K` does not compile.
            pub fn derivative_tensor<const K: usize>(#decl) -> <Order<K> as Tensor>::Output
            where
                Order<K>: Tensor,
            {
                <Order<K> as Tensor>::tensor(#point)
            }

            #univariate
        }
    })
}
