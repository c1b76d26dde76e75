//! `#[<pulse>::__private::scheduled_proptest(<pulse>)]`: put by `cargo pulse` on a `#[test]`
//! written inside `proptest! { .. }`. proptest passes a test's attributes on to the fn it
//! generates, so this attribute lands on that fn, whose body (proptest's whole case loop) it
//! runs under the scheduler as `#[test]` bodies are (`tests_wrap` in pulse-instrument).
//!
//! The instrumenter places it before the test's other attributes, so it sees them all
//! (`#[should_panic]` among them).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{ItemFn, ReturnType};

pub(crate) fn expand(facade: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let mut f: ItemFn = syn::parse2(item)?;
    if facade.is_empty() {
        return Err(syn::Error::new(
            f.sig.ident.span(),
            "scheduled_proptest takes the path of the pulse facade",
        ));
    }
    if let Some(a) = &f.sig.asyncness {
        return Err(syn::Error::new(
            a.span(),
            "a pulse-scheduled test cannot be async",
        ));
    }
    let should_panic = f.attrs.iter().any(|a| a.path().is_ident("should_panic"));
    let name = f.sig.ident.to_string();
    let name = name.trim_start_matches("r#");
    let ret = match &f.sig.output {
        ReturnType::Default => quote!(),
        ReturnType::Type(arrow, ty) => quote!(#arrow #ty),
    };
    let body = &f.block;
    let span = body.span();
    f.block = syn::parse2(quote_spanned! {span=> {
        #facade::__private::run_proptest(
            #facade::__private::TestMeta {
                module_path: ::core::module_path!(),
                name: #name,
                should_panic: #should_panic,
            },
            || #ret #body,
        )
    }})?;
    Ok(quote!(#f))
}
