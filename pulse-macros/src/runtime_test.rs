//! `#[<pulse>::__private::runtime_test(<pulse>, should_panic, tokio::test(..))]`: put by
//! `cargo pulse` in place of `#[tokio::test(..)]` on an `async fn`. The fn becomes a plain
//! `#[test]` whose body runs under the scheduler, as `#[test]` bodies are (`tests_wrap` in
//! pulse-instrument); in it, an inner fn of the same name under tokio's own attribute,
//! called at once. tokio's macro turns that inner fn into one that builds the runtime its
//! arguments ask for, in the test's tokio version, and blocks on the original body, whose
//! tokens keep their spans (a panic names the user's line). libtest does not run an inner
//! `#[test]` fn (`unnameable_test_items`, allowed here).

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{ItemFn, LitBool, Meta, Path, ReturnType, Token};

struct Args {
    facade: Path,
    should_panic: LitBool,
    runtime: Meta,
}

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let facade = input.call(Path::parse_mod_style)?;
        input.parse::<Token![,]>()?;
        let should_panic = input.parse()?;
        input.parse::<Token![,]>()?;
        let runtime = input.parse()?;
        Ok(Args {
            facade,
            should_panic,
            runtime,
        })
    }
}

pub(crate) fn expand(args: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let Args {
        facade,
        should_panic,
        runtime,
    } = syn::parse2(args)?;
    let mut outer: ItemFn = syn::parse2(item)?;
    let mut inner = outer.clone();
    inner.attrs = vec![syn::parse_quote!(#[#runtime])];
    outer.sig.asyncness = None;
    let name = outer.sig.ident.to_string();
    let name = name.trim_start_matches("r#");
    let ident = &outer.sig.ident;
    let ret = match &outer.sig.output {
        ReturnType::Default => quote!(),
        ReturnType::Type(arrow, ty) => quote!(#arrow #ty),
    };
    outer.block = syn::parse_quote!({
        #facade::__private::run_test(
            #facade::__private::TestMeta {
                module_path: ::core::module_path!(),
                name: #name,
                should_panic: #should_panic,
            },
            || #ret {
                #inner
                #ident()
            },
        )
    });
    Ok(quote! {
        #[test]
        #[allow(unnameable_test_items)]
        #outer
    })
}
