//! A reactor's wait through rustix: polling 3 (smol's, async-std's reactor) waits in
//! rustix's `epoll::wait`, a raw system call pulse cannot see, with its timeout in a timerfd
//! armed on the real clock. The function that waits takes the limit as a parameter
//! (`fn wait_deadline(&self, events: &mut Events, deadline: Option<Instant>)`, polling 3.8+;
//! `fn wait(&self, events: &mut Events, timeout: Option<Duration>)` before), so it gets
//!
//! ```text
//! #[cfg(any(target_os = "linux", target_os = "android"))] let deadline = <shim>::libc::ready_by(&(&self.epoll_fd), deadline);
//! ```
//!
//! first, on its brace's line: inside an execution the thread waits in the scheduler until
//! the instance is readable or the limit passes on the virtual clock, and the function goes
//! on with a limit already due. Matched by shape, not by crate: a function with one
//! parameter `Option<Instant>` or `Option<Duration>` whose body calls `epoll::wait(fd, ..)`
//! with `fd` made of `self` alone (`&self.epoll_fd`), so it can be named at the top.

use syn::visit::{self, Visit};
use syn::{Expr, FnArg, Pat, Type};

/// What to insert into a function that waits on an epoll instance: its limit parameter
/// (and whether it is `mut`) and the instance's expression.
pub(crate) struct ReactorWait<'a> {
    pub(crate) limit: &'a syn::Ident,
    pub(crate) mutable: bool,
    pub(crate) fd: &'a Expr,
}

pub(crate) fn find<'a>(sig: &'a syn::Signature, block: &'a syn::Block) -> Option<ReactorWait<'a>> {
    if already_waits(block) {
        return None;
    }
    let mut limits = sig.inputs.iter().filter_map(|arg| match arg {
        FnArg::Typed(t) if is_wait_limit(&t.ty) => match &*t.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                Some((&p.ident, p.mutability.is_some()))
            }
            _ => None,
        },
        _ => None,
    });
    let (limit, mutable) = limits.next()?;
    if limits.next().is_some() {
        return None;
    }
    let mut calls = EpollWaits::default();
    calls.visit_block(block);
    let fd = calls.fd?;
    Some(ReactorWait { limit, mutable, fd })
}

/// Whether the first statement is the inserted line (instrumenting twice changes nothing).
fn already_waits(block: &syn::Block) -> bool {
    let Some(syn::Stmt::Local(local)) = block.stmts.first() else {
        return false;
    };
    matches!(local.init.as_ref().map(|i| &*i.expr), Some(Expr::Call(c))
        if matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == READY_BY)))
}

/// The shim's function the inserted line calls (`<shim>::libc::ready_by`).
pub(crate) const READY_BY: &str = "ready_by";

/// `Option<Instant>` or `Option<Duration>` (any path to them).
fn is_wait_limit(ty: &Type) -> bool {
    let Type::Path(p) = ty else { return false };
    let Some(option) = p.path.segments.last().filter(|s| s.ident == "Option") else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(args) = &option.arguments else {
        return false;
    };
    matches!(args.args.first(), Some(syn::GenericArgument::Type(Type::Path(inner)))
        if inner.path.segments.last().is_some_and(|s| s.ident == "Instant" || s.ident == "Duration"))
}

/// The first `epoll::wait(fd, ..)` call's `fd`, if it is made of `self` alone.
#[derive(Default)]
struct EpollWaits<'a> {
    fd: Option<&'a Expr>,
}

impl<'a> Visit<'a> for EpollWaits<'a> {
    fn visit_expr_call(&mut self, call: &'a syn::ExprCall) {
        if self.fd.is_none() && is_epoll_wait(&call.func) {
            self.fd = call.args.first().filter(|fd| of_self(fd));
        }
        visit::visit_expr_call(self, call);
    }

    // A nested function's waits are its own.
    fn visit_item_fn(&mut self, _: &'a syn::ItemFn) {}
    fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
}

fn is_epoll_wait(func: &Expr) -> bool {
    let Expr::Path(p) = func else { return false };
    let names: Vec<_> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    names.ends_with(&["epoll".to_string(), "wait".to_string()])
}

/// An expression made of `self`, field accesses, references and argument-free method calls
/// (`&self.epoll_fd`, `self.fd.as_fd()`): valid at the function's first line.
fn of_self(e: &Expr) -> bool {
    match e {
        Expr::Path(p) => p.qself.is_none() && p.path.is_ident("self"),
        Expr::Reference(r) => of_self(&r.expr),
        Expr::Field(f) => of_self(&f.base),
        Expr::Paren(p) => of_self(&p.expr),
        Expr::MethodCall(m) => m.args.is_empty() && m.turbofish.is_none() && of_self(&m.receiver),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(src: &str) -> Option<(String, bool, String)> {
        let f: syn::ImplItemFn = syn::parse_str(src).unwrap();
        find(&f.sig, &f.block).map(|w| {
            let fd = &w.fd;
            (
                w.limit.to_string(),
                w.mutable,
                quote::quote!(#fd).to_string(),
            )
        })
    }

    #[test]
    fn polling_s_waits_are_found_by_shape() {
        // polling 3.11 and 3.7.
        let deadline = "pub fn wait_deadline(&self, events: &mut Events, deadline: Option<Instant>) -> io::Result<()> { let t = deadline; epoll::wait(&self.epoll_fd, spare_capacity(&mut events.list), t.as_ref())?; Ok(()) }";
        assert_eq!(
            found(deadline),
            Some(("deadline".into(), false, "& self . epoll_fd".into()))
        );
        let timeout = "pub fn wait(&self, events: &mut Events, mut timeout: Option<std::time::Duration>) -> io::Result<()> { rustix::event::epoll::wait(self.epoll_fd.as_fd(), &mut events.list, -1)?; Ok(()) }";
        assert_eq!(
            found(timeout),
            Some(("timeout".into(), true, "self . epoll_fd . as_fd ()".into()))
        );
    }

    #[test]
    fn other_functions_are_left_alone() {
        for src in [
            // No limit parameter.
            "fn wait(&self) { epoll::wait(&self.fd, &mut v, -1); }",
            // No epoll wait.
            "fn wait(&self, timeout: Option<Duration>) { self.inner.wait(timeout); }",
            // An instance the first line cannot name.
            "fn wait(&self, timeout: Option<Duration>) { let fd = open(); epoll::wait(&fd, &mut v, -1); }",
            // Two limits: which one is the wait's is unknown.
            "fn wait(&self, a: Option<Duration>, b: Option<Instant>) { epoll::wait(&self.fd, &mut v, -1); }",
            // A closure's wait is the closure's.
            "fn wait(&self, t: Option<Duration>) { let f = || epoll::wait(&self.fd, &mut v, -1); }",
        ] {
            assert_eq!(found(src), None, "{src}");
        }
    }
}
