//! Compile-time derivatives for ddx: `#[ddx::derivatives]` (re-exported by the `ddx`
//! crate, feature `macros`, on by default). The documentation with examples is on the
//! re-export, `ddx::derivatives`.
//!
//! At expansion time the macro reads the function body into ddx's graph
//! ([`parse`]), builds the value, gradient, Hessian and tensor lanes with ddx's own passes,
//! and emits each with `ddx_ir::emit` ([`expand`]). A body it cannot read is a compile
//! error at the offending span; the macro never panics on user code.

#![deny(missing_docs)]

mod expand;
mod parse;

use proc_macro::TokenStream;

/// See `ddx::derivatives`.
#[proc_macro_attribute]
pub fn derivatives(attr: TokenStream, item: TokenStream) -> TokenStream {
    match run(attr.into(), item.into()) {
        Ok(t) => t.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn run(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> syn::Result<proc_macro2::TokenStream> {
    let opts = options(attr)?;
    let f: syn::ItemFn = syn::parse2(item)?;
    let sig = parse::signature(&f)?;
    let model = parse::model(&f, &sig)?;
    expand::expand(&f, &sig, &model, &opts)
}

/// The highest `order` the attribute accepts.
const MAX_ORDER: usize = 8;

fn options(attr: proc_macro2::TokenStream) -> syn::Result<expand::Options> {
    let mut opts = expand::Options { order: 3 };
    if attr.is_empty() {
        return Ok(opts);
    }
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("order") {
            let lit: syn::LitInt = meta.value()?.parse()?;
            let k: usize = lit.base10_parse()?;
            if !(1..=MAX_ORDER).contains(&k) {
                return Err(syn::Error::new(
                    lit.span(),
                    format!("ddx::derivatives: `order` must be between 1 and {MAX_ORDER}"),
                ));
            }
            opts.order = k;
            Ok(())
        } else {
            Err(meta.error("ddx::derivatives: the only option is `order = K` (the highest derivative_tensor order, default 3)"))
        }
    });
    syn::parse::Parser::parse2(parser, attr)?;
    Ok(opts)
}
