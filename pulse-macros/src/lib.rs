//! `#[pulse::atomic]`: runs a fn (or every fn of an impl block) as one atomic scheduling
//! step, for code pulse does not instrument (files, sockets, FFI, a component already
//! tested), as PULSE does for declared side-effecting functions (§5.3 of the paper).
//!
//! The expansion calls `::pulse::atomic(|| body)`, which outside a pulse execution just
//! runs the body, so annotated code behaves the same in a normal build.
//!
//! Also, hidden, the attributes `cargo pulse` puts on tests written in `proptest!` and on
//! `#[tokio::test]` and `#[async_std::test]` async tests.

use proc_macro::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{parse_macro_input, Block, ImplItem, Item, ReturnType, Signature};

mod runtime_test;
mod scheduled;

/// Runs a fn that `proptest!` generated from a `#[test]` under pulse's scheduler (put there by
/// `cargo pulse`; see `scheduled.rs`). Not a stable API.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn scheduled_proptest(attr: TokenStream, item: TokenStream) -> TokenStream {
    scheduled::expand(attr.into(), item.into())
        .unwrap_or_else(|e| e.to_compile_error())
        .into()
}

/// Runs an async test under its runtime's attribute (`#[tokio::test]`, `#[async_std::test]`) under pulse's
/// scheduler (put there by `cargo pulse`; see `runtime_test.rs`). Not a stable API.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn runtime_test(attr: TokenStream, item: TokenStream) -> TokenStream {
    runtime_test::expand(attr.into(), item.into())
        .unwrap_or_else(|e| e.to_compile_error())
        .into()
}

#[proc_macro_attribute]
pub fn atomic(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let attr = proc_macro2::TokenStream::from(attr);
        return quote_spanned!(attr.span()=> compile_error!("#[pulse::atomic] takes no arguments");).into();
    }
    let mut item = parse_macro_input!(item as Item);
    let result = match &mut item {
        Item::Fn(f) => wrap(&f.sig, &mut f.block),
        Item::Impl(imp) => imp.items.iter_mut().try_for_each(|i| match i {
            ImplItem::Fn(f) => wrap(&f.sig, &mut f.block),
            _ => Ok(()),
        }),
        other => Err(syn::Error::new(
            other.span(),
            "#[pulse::atomic] goes on a fn or an impl block; on a statement or expression write \
             #[cfg_attr(pulse, pulse::atomic)], which `cargo pulse` rewrites",
        )),
    };
    match result {
        Ok(()) => quote!(#item).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Replaces the body with `{ ::pulse::atomic(|| -> Ret { body }) }`.
fn wrap(sig: &Signature, block: &mut Block) -> syn::Result<()> {
    if let Some(asyncness) = &sig.asyncness {
        return Err(syn::Error::new(
            asyncness.span(),
            "#[pulse::atomic] cannot make an async fn atomic",
        ));
    }
    let ret = match &sig.output {
        ReturnType::Default => quote!(),
        ReturnType::Type(arrow, ty) => quote!(#arrow #ty),
    };
    let body = &block;
    let span = block.span();
    let wrapped: Block = syn::parse2(quote_spanned! {span=> { ::pulse::atomic(|| #ret #body) } })?;
    *block = wrapped;
    Ok(())
}
