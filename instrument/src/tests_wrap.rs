//! Wrapping `#[test]` fn bodies so libtest runs them under the pulse scheduler.
//!
//! The contract with `pulse::__private::run_test`: the body becomes a closure passed to it,
//! on the same lines (prefix right after the body's `{`, or after its inner attributes;
//! suffix right before its `}`):
//!
//! ```text
//! fn foo() -> R {<pulse>::__private::run_test(<pulse>::__private::TestMeta { module_path: module_path!(), name: "foo", should_panic: false }, || -> R {
//!     body
//! })}
//! ```
//!
//! `-> R` is copied (with its own paths rewritten) unless absent, `()` or `impl Trait`.
//! Not wrapped, but reported: `async fn`, `unsafe fn`, and fns whose harness is another
//! attribute (`#[test_case]`, `#[rstest]`, ...); `#[tokio::test]` and `#[async_std::test]`
//! go through pulse-macros' `runtime_test`. `#[ignore]` stays for libtest.

use crate::plan::{PendingTest, Plan};
use crate::report::{FindingKind, RewriteKind};
use crate::textedit::{order, Edit};
use syn::punctuated::Punctuated;
use syn::{Attribute, Meta, Token};

/// What a fn's attributes say about it being a test.
#[derive(Debug, Default)]
pub(crate) struct TestAttrs {
    pub(crate) test: bool,
    pub(crate) should_panic: bool,
    /// Another harness's attribute, as written.
    pub(crate) other: Option<String>,
}

pub(crate) fn classify<'a>(attrs: impl IntoIterator<Item = &'a Attribute>) -> TestAttrs {
    let mut out = TestAttrs::default();
    for attr in attrs {
        classify_meta(&attr.meta, &mut out);
    }
    out
}

fn classify_meta(meta: &Meta, out: &mut TestAttrs) {
    let path = meta.path();
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let last = segs.last().map(String::as_str).unwrap_or_default();
    if segs.len() == 1 && last == "cfg_attr" {
        if let Meta::List(list) = meta {
            if let Ok(items) = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            {
                items.iter().skip(1).for_each(|m| classify_meta(m, out));
            }
        }
        return;
    }
    if is_libtest(&segs) {
        out.test = true;
    } else if segs.len() == 1 && last == "should_panic" {
        out.should_panic = true;
    } else if is_other_harness(&segs) {
        out.other = Some(segs.join("::"));
    }
}

/// `#[test]` and its prelude spellings (`#[core::prelude::v1::test]`, ...).
fn is_libtest(segs: &[String]) -> bool {
    match segs {
        [t] => t == "test",
        [krate, prelude, _edition, t] => {
            matches!(krate.as_str(), "core" | "std") && prelude == "prelude" && t == "test"
        }
        _ => false,
    }
}

/// Attributes that make a fn a test through another harness.
pub(crate) fn is_other_harness(segs: &[String]) -> bool {
    let last = segs.last().map(String::as_str).unwrap_or_default();
    (segs.len() > 1 && last == "test" && !is_libtest(segs))
        || matches!(
            last,
            "test_case"
                | "test_matrix"
                | "rstest"
                | "quickcheck"
                | "proptest"
                | "wasm_bindgen_test"
                | "test_with"
        )
}

/// Records a pending wrap (or a finding) for a free fn.
pub(crate) fn visit_fn(plan: &mut Plan, f: &syn::ItemFn) {
    // A `cfg_attr(p, test)` whose `p` is false for this build does not make a test.
    let attrs = classify(f.attrs.iter().filter(|a| !plan.cfg_attr_off(a)));
    if !plan.opts.wrap_tests || (!attrs.test && attrs.other.is_none()) {
        return;
    }
    let at = plan.index.start(f.sig.ident.span());
    let name = f.sig.ident.to_string();
    if runtime_test(plan, f, &attrs) {
        return;
    }
    if let Some(other) = &attrs.other {
        let msg = format!("test `{name}` runs under `#[{other}]`, not the pulse scheduler: call the code from a plain #[test] fn to have it checked");
        plan.finding(at, FindingKind::TestNotWrapped, msg);
        return;
    }
    if f.sig.asyncness.is_some() || f.sig.unsafety.is_some() {
        let what = if f.sig.asyncness.is_some() {
            "async"
        } else {
            "unsafe"
        };
        let msg = format!("{what} test `{name}` is not run under the pulse scheduler: make it a plain fn (block on the future / use an unsafe block inside)");
        plan.finding(at, FindingKind::TestNotWrapped, msg);
        return;
    }
    if already_wrapped(&f.block) {
        return;
    }
    let ret = match &f.sig.output {
        syn::ReturnType::Type(_, ty) if !is_unit(ty) && !has_impl_trait(ty) => {
            crate::atomic::bounds(&**ty).map(|(a, b)| plan.index.start(a)..plan.index.end(b))
        }
        _ => None,
    };
    let brace = &f.block.brace_token.span;
    let inner_attrs_end = f
        .attrs
        .iter()
        .filter(|a| matches!(a.style, syn::AttrStyle::Inner(_)))
        .map(|a| plan.index.end(a.bracket_token.span.close()))
        .max();
    let open = plan
        .index
        .end(brace.open())
        .max(inner_attrs_end.unwrap_or(0));
    let close = plan.index.start(brace.close());
    let should_panic = attrs.should_panic;
    let name = name.trim_start_matches("r#").to_owned();
    let name_expr = format!("{name:?}");
    plan.tests.push(PendingTest {
        at,
        name,
        name_expr,
        should_panic,
        facade: plan.pulse.clone(),
        ret,
        open,
        close,
    });
}

/// The async runtimes' test attributes whose expansion is a `#[test]` fn that blocks on the
/// body: `#[tokio::test]` builds the runtime its arguments ask for, `#[async_std::test]`
/// calls `async_std::task::block_on`.
const RUNTIME_TESTS: &[&str] = &["tokio::test", "async_std::test"];

/// `#[tokio::test]` or `#[tokio::test(..)]` (or another of `RUNTIME_TESTS`) on an `async fn`
/// (written as such, not under `cfg_attr`) becomes `#[<pulse>::__private::runtime_test(
/// <pulse>, should_panic, tokio::test(..))]` (pulse-macros' `runtime_test`): the fn becomes a
/// plain `#[test]` whose body, run under the scheduler, is an inner fn under the runtime's
/// own attribute, which builds the runtime its arguments ask for (any tokio version's) and
/// blocks on the original body. Returns whether it was one.
fn runtime_test(plan: &mut Plan, f: &syn::ItemFn, attrs: &TestAttrs) -> bool {
    let Some(runtime) = attrs.other.as_deref().filter(|o| RUNTIME_TESTS.contains(o)) else {
        return false;
    };
    if attrs.test || f.sig.unsafety.is_some() {
        return false;
    }
    let Some(attr) = f.attrs.iter().find(|a| {
        let segs: Vec<String> = (a.path().segments.iter())
            .map(|s| s.ident.to_string())
            .collect();
        segs.join("::") == runtime
    }) else {
        return false;
    };
    if f.sig.asyncness.is_none() {
        return false;
    }
    let p = plan.pulse.clone();
    let open = plan.index.end(attr.bracket_token.span.open());
    let close = plan.index.start(attr.bracket_token.span.close());
    let meta = plan.index.slice(open..close).to_owned();
    let shown = meta.split_whitespace().collect::<Vec<_>>().join(" ");
    let prefix = format!("{p}::__private::runtime_test({p}, {}, ", attrs.should_panic);
    let edits = vec![
        Edit::insert(open, prefix.clone(), order::TEST_OPEN),
        Edit::insert(close, ")", order::TEST_CLOSE),
    ];
    let at = plan.index.start(f.sig.ident.span());
    let name = f.sig.ident.to_string();
    plan.change(
        at,
        RewriteKind::TestWrapped,
        format!("#[{shown}] async fn {name}"),
        format!("#[{prefix}{shown})] async fn {name}"),
        edits,
    );
    true
}

/// A body that is one call to `..::__private::run_test(..)` was wrapped by an earlier run.
fn already_wrapped(block: &syn::Block) -> bool {
    let [syn::Stmt::Expr(call, None)] = block.stmts.as_slice() else {
        return false;
    };
    crate::visit::called_path(call)
        .is_some_and(|(segs, _)| segs.ends_with(&["__private".to_owned(), "run_test".to_owned()]))
}

fn is_unit(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Tuple(t) if t.elems.is_empty())
}

fn has_impl_trait(ty: &syn::Type) -> bool {
    struct Find(bool);
    impl<'ast> syn::visit::Visit<'ast> for Find {
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut f = Find(false);
    syn::visit::Visit::visit_type(&mut f, ty);
    f.0
}

/// Turns pending tests into changes, once the sweep's path rewrites are known (they must
/// also apply to the return type copied into the closure).
pub(crate) fn finalize(plan: &mut Plan) {
    for t in std::mem::take(&mut plan.tests) {
        let ret = match &t.ret {
            Some(range) => {
                let text = plan.render(range.clone(), &[]);
                if text.contains("//") || text.contains("/*") {
                    let msg = format!("test `{}` has comments in its return type, which cannot be copied onto one line: not wrapped", t.name);
                    plan.finding(t.at, FindingKind::TestNotWrapped, msg);
                    continue;
                }
                format!(
                    " -> {}",
                    text.split_whitespace().collect::<Vec<_>>().join(" ")
                )
            }
            None => String::new(),
        };
        let p = &t.facade;
        let prefix = format!(
            "{p}::__private::run_test({p}::__private::TestMeta {{ module_path: module_path!(), name: {}, should_panic: {} }}, ||{ret} {{",
            t.name_expr, t.should_panic
        );
        let edits = vec![
            Edit::insert(t.open, prefix, order::TEST_OPEN),
            Edit::insert(t.close, "})", order::TEST_CLOSE),
        ];
        let to = format!("{p}::__private::run_test(.., ||{ret} {{ .. }})");
        plan.change(
            t.at,
            RewriteKind::TestWrapped,
            format!("fn {}", t.name),
            to,
            edits,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(src: &str) -> TestAttrs {
        let f: syn::ItemFn = syn::parse_str(&format!("{src} fn f() {{}}")).unwrap();
        classify(&f.attrs)
    }

    #[test]
    fn recognises_test_spellings() {
        assert!(attrs("#[test]").test);
        assert!(attrs("#[::core::prelude::v1::test]").test);
        assert!(attrs("#[cfg_attr(not(miri), test)]").test);
        assert!(!attrs("#[cfg(test)]").test);
        assert!(attrs("#[test] #[should_panic(expected = \"x\")]").should_panic);
        assert_eq!(
            attrs("#[tokio::test]").other.as_deref(),
            Some("tokio::test")
        );
        assert_eq!(attrs("#[test_case(1)]").other.as_deref(), Some("test_case"));
        assert!(attrs("#[rstest]").other.is_some());
        assert!(attrs("#[test] #[ignore]").other.is_none());
    }
}
