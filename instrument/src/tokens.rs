//! The token sweep: finds every std sync/thread/time path root in the file's tokens.
//!
//! Macro arguments (`vec![..]`, `assert!(..)`, `thread_local! {..}`, `macro_rules!` bodies)
//! and attribute arguments are opaque to syn, so paths there are only visible as tokens.
//! The sweep walks the whole file's token tree once, which also makes it the single place
//! that decides every path rewrite: the syntax-tree visitor only labels what a site is
//! (expression, type, ...) through `Plan::hints`. Comments never become tokens and string
//! literals are single tokens, so neither can match.

use crate::paths::{self, Crate};
use crate::plan::Plan;
use crate::report::{FindingKind, RewriteKind};
use crate::textedit::{order, Edit};
use crate::use_tree;
use proc_macro2::{Delimiter, Ident, Spacing, TokenStream, TokenTree};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Code,
    Macro,
    Attr,
}

pub(crate) fn sweep(plan: &mut Plan, stream: TokenStream) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    scan(plan, &tokens, Ctx::Code);
}

fn scan(plan: &mut Plan, tokens: &[TokenTree], ctx: Ctx) {
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(g) => {
                let own = group_ctx(tokens, i);
                let inner = own.unwrap_or(ctx);
                let inner_tokens: Vec<TokenTree> = g.stream().into_iter().collect();
                let outer_macro = (own == Some(Ctx::Macro))
                    .then(|| std::mem::replace(&mut plan.invoked_macro, invoked_name(tokens, i)));
                if inner == Ctx::Attr && ctx == Ctx::Macro && is_test_attr(&inner_tokens) {
                    macro_test(plan, tokens, i);
                }
                if own == Some(Ctx::Macro) && plan.invoked_macro.as_deref() == Some("quickcheck") {
                    quickcheck_tests(plan, &inner_tokens);
                }
                let exported = macro_rules_body(tokens, i) && exported(tokens, i);
                plan.exports_macros |= exported;
                // Other crates expand it, maybe uninstrumented ones: its paths name the shim
                // through `$crate` (a nested `macro_rules!` keeps that: it is expanded where
                // the exported one is).
                let swap = exported && !plan.in_exported_macro && plan.exported.is_some();
                if swap {
                    swap_exported_roots(plan);
                }
                scan(plan, &inner_tokens, inner);
                if swap {
                    swap_exported_roots(plan);
                }
                if let Some(outer) = outer_macro {
                    plan.invoked_macro = outer;
                }
            }
            TokenTree::Ident(id) => {
                if id == "use" {
                    if let Some(next) = use_statement(plan, tokens, i) {
                        i = next;
                        continue;
                    }
                }
                ident(plan, tokens, i, id, ctx);
            }
            _ => {}
        }
        i += 1;
    }
}

/// What precedes an ident: decides whether it starts a path.
enum Before {
    /// Starts a path; `Some(k)` when a leading `::` at tokens[k..k+2] belongs to it.
    Root(Option<usize>),
    /// Continues a path (`a::std`), names a field (`x.std`) or a macro variable (`$std`).
    NotRoot,
    /// `>::ident`: continues a path after generics (`Vec<T>::new`) or starts one after a
    /// generic list (`impl<T> ::std::x`); only the syntax tree can tell.
    AfterGenerics(usize),
}

fn before(tokens: &[TokenTree], i: usize) -> Before {
    let punct = |k: usize| match tokens.get(k) {
        Some(TokenTree::Punct(p)) => Some((p.as_char(), p.spacing())),
        _ => None,
    };
    if i == 0 {
        return Before::Root(None);
    }
    match punct(i - 1) {
        Some(('$' | '.', _)) => return Before::NotRoot,
        Some((':', _)) if i >= 2 && punct(i - 2) == Some((':', Spacing::Joint)) => {}
        _ => return Before::Root(None),
    }
    // `::ident`: a leading `::` unless something path-like comes before it.
    let colon = i - 2;
    if colon == 0 {
        return Before::Root(Some(colon));
    }
    match &tokens[colon - 1] {
        TokenTree::Ident(prev) => {
            if paths::is_expr_keyword(&prev.to_string()) {
                Before::Root(Some(colon))
            } else {
                Before::NotRoot
            }
        }
        // `<T>::std` continues a path; `-> ::std` and `=> ::std` start one.
        TokenTree::Punct(p) if p.as_char() == '>' => {
            let arrow = colon >= 2
                && matches!(&tokens[colon - 2], TokenTree::Punct(q) if matches!(q.as_char(), '-' | '=') && q.spacing() == Spacing::Joint);
            if arrow {
                Before::Root(Some(colon))
            } else {
                Before::AfterGenerics(colon)
            }
        }
        _ => Before::Root(Some(colon)),
    }
}

/// The ident after `tokens[i] ::`, if any.
fn next_segment(tokens: &[TokenTree], i: usize) -> Option<&Ident> {
    match (tokens.get(i + 1), tokens.get(i + 2), tokens.get(i + 3)) {
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(m)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':' =>
        {
            Some(m)
        }
        _ => None,
    }
}

/// `asm!` at `tokens[i]` whose template is a memory fence: given a `SeqCst` fence before
/// it, the one the weak-memory model sees (concurrent-queue's and event-listener's
/// `full_fence` is x86's `lock not` on a local, cheaper than `mfence`; unseen, a load after
/// it read stale values, a false alarm). Returns whether it was one.
fn asm_fence(plan: &mut Plan, tokens: &[TokenTree], i: usize) -> bool {
    let Some(TokenTree::Group(args)) = tokens.get(i + 2) else {
        return false;
    };
    let fences = args.stream().into_iter().any(|t| match t {
        TokenTree::Literal(l) => is_fence_template(&l.to_string()),
        _ => false,
    });
    if !fences {
        return false;
    }
    let first = path_start(tokens, i);
    if follows_fence(tokens, first) {
        return true; // instrumented already: `fence(..); asm!(..)`
    }
    let start = plan.index.start(tokens[first].span());
    let end = plan.index.end(args.span());
    let from = plan.index.slice(start..end).to_owned();
    let fence = format!(
        "{shim}::sync::atomic::fence({shim}::sync::atomic::Ordering::SeqCst);",
        shim = plan.shim
    );
    let edits = vec![
        Edit::insert(start, format!("{{ {fence} "), order::ATOMIC_OPEN),
        Edit::insert(end, " }", order::ATOMIC_CLOSE),
    ];
    let to = format!("{{ {fence} {from} }}");
    plan.change(start, RewriteKind::AsmFence, from, to, edits);
    true
}

/// Whether an assembly template is a full or store/load fence on some architecture: an
/// x86 `lock` prefix, `mfence` or `xchg`; ARM's `dmb`/`dsb`; RISC-V's `fence`; POWER's
/// `sync`/`hwsync`/`lwsync` (counted as full: a stronger fence hides no false alarm).
fn is_fence_template(literal: &str) -> bool {
    const FENCES: &[&str] = &[
        "lock", "mfence", "xchg", "dmb", "dsb", "fence", "sync", "hwsync", "lwsync",
    ];
    let text = literal.to_ascii_lowercase();
    literal.contains('"')
        && text
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|word| FENCES.contains(&word))
}

/// Whether `tokens[i]` comes right after `fence(..);`.
fn follows_fence(tokens: &[TokenTree], i: usize) -> bool {
    i >= 3
        && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == ';')
        && matches!(&tokens[i - 2], TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis)
        && matches!(&tokens[i - 3], TokenTree::Ident(f) if f == "fence")
}

/// The first token of the path that ends at `tokens[i]` (`core::arch::asm`, `::std::x`).
fn path_start(tokens: &[TokenTree], mut i: usize) -> usize {
    let colons = |k: usize| {
        matches!((tokens.get(k), tokens.get(k + 1)), (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':')
    };
    while i >= 2 && colons(i - 2) {
        match tokens.get(i.wrapping_sub(3)) {
            Some(TokenTree::Ident(_)) if i >= 3 => i -= 3,
            _ => return i - 2,
        }
    }
    i
}

fn is_bang(tokens: &[TokenTree], i: usize) -> bool {
    matches!(tokens.get(i), Some(TokenTree::Punct(p)) if p.as_char() == '!')
}

fn ident(plan: &mut Plan, tokens: &[TokenTree], i: usize, id: &Ident, ctx: Ctx) {
    let name = id.to_string();
    let before = before(tokens, i);
    // Reported wherever they sit, even under a path (`core::arch::asm!`, `ptr::read_volatile`).
    let raw = match name.as_str() {
        "asm" | "global_asm" | "naked_asm" if is_bang(tokens, i + 1) => Some("inline assembly"),
        "read_volatile" | "write_volatile" | "volatile_load" | "volatile_store" => {
            Some("volatile memory access")
        }
        _ => None,
    };
    if let Some(what) = raw {
        if name == "asm" && ctx == Ctx::Code && asm_fence(plan, tokens, i) {
            return;
        }
        if !matches!(tokens.get(i.wrapping_sub(1)), Some(TokenTree::Punct(p)) if p.as_char() == '$')
        {
            let at = plan.index.start(id.span());
            if !plan.in_atomic_region(at) {
                plan.finding(
                    at,
                    FindingKind::RawAtomics,
                    format!("`{name}`: {what} is invisible to the scheduler: use std::sync::atomic, or mark the block #[pulse::atomic] if it does not synchronise"),
                );
            }
        }
        return;
    }
    if os_thread_handle(plan, id) {
        return;
    }
    let leading = match before {
        Before::Root(leading) => leading,
        Before::NotRoot => return,
        // The visitor hints every syntax-tree path's first segment.
        Before::AfterGenerics(colon) if plan.hints.contains_key(&plan.index.start(id.span())) => {
            Some(colon)
        }
        Before::AfterGenerics(_) => return,
    };
    if name == "libc" && libc_call(plan, tokens, leading, i) {
        return;
    }
    if name == "thread_local" && leading.is_none() && is_bang(tokens, i + 1) {
        thread_local(plan, id);
        return;
    }
    if tsc_read(plan, tokens, leading, i, ctx) {
        return;
    }
    let module = next_segment(tokens, i);
    let module_text = module.map(|m| m.to_string());
    let at = plan.index.start(id.span());
    let krate = plan
        .roots
        .lookup(&name)
        .filter(|_| leading.is_some() || !plan.shadowed_path(&name, module_text.as_deref(), at));
    if let Some(krate) = krate {
        let Some(module) = module else { return };
        let module_name = module.to_string();
        if paths::is_shim_module(krate, &module_name, &plan.opts.std_modules) {
            root_rewrite(plan, tokens, leading, id, module, ctx);
        } else {
            let item = next_segment(tokens, i + 3).map(|m| m.to_string());
            let used = item.is_none() || goes_on(tokens, i + 6);
            let item = item.as_deref().map_or(paths::Item::Any, paths::Item::Named);
            let root = if krate == Crate::Core { "core" } else { "std" };
            let shown = format!("{root}::{module_name}");
            std_unscheduled(plan, id, krate, [&name, &module_name], &shown, item, used);
        }
    } else if let Some((krate, root, module_name)) = std_module_import(plan, &name) {
        // `use std::process;` then `process::Command::new(..)`: judged here.
        let item = module.map(|m| m.to_string());
        let used = item.is_none() || goes_on(tokens, i + 3);
        let shown = format!("{name}::{}", item.as_deref().unwrap_or_default());
        let item = item.as_deref().map_or(paths::Item::Any, paths::Item::Named);
        std_unscheduled(plan, id, krate, [&root, &module_name], &shown, item, used);
    } else if let Some((foreign, msg)) =
        plan.foreign_sync(&name, module_text.as_deref(), at, leading.is_none())
    {
        if !plan.in_atomic_region(at) {
            let module = module.map(|m| m.to_string()).unwrap_or_default();
            let msg = if foreign == name {
                format!("`{name}::{module}`: {msg}")
            } else {
                format!("`{name}::{module}` (`{name}` is `{foreign}`): {msg}")
            };
            plan.finding(at, FindingKind::ForeignSync, msg);
        }
    }
}

/// The std module a local name was imported as (`use std::process;`, `use std::process as
/// p;`) when only some of its items block, so its uses are judged where they are written (a
/// module reported at its `use`, like `std::fs`, is not followed): its crate, root and name.
fn std_module_import(plan: &Plan, name: &str) -> Option<(Crate, String, String)> {
    let [root, module] = plan.imports.get(name)?.as_slice() else {
        return None;
    };
    let krate = plan.roots.lookup(root)?;
    let reported = |item| paths::std_unscheduled(krate, module, item).is_some();
    if reported(paths::Item::Module) || !reported(paths::Item::Any) {
        return None;
    }
    Some((krate, root.clone(), module.clone()))
}

/// Reports a path into a std module pulse does not schedule (`path`: the crate and module
/// as written; `shown`: the path named in the message), unless an atomic section or entry
/// covers it, or it is blocking I/O's type and not a call (`used`).
fn std_unscheduled(
    plan: &mut Plan,
    id: &Ident,
    krate: Crate,
    path: [&str; 2],
    shown: &str,
    item: paths::Item,
    used: bool,
) {
    let Some((kind, msg)) = paths::std_unscheduled(krate, path[1], item) else {
        return;
    };
    if kind == FindingKind::BlockingIo && !used {
        return;
    }
    let at = plan.index.start(id.span());
    if !plan.in_atomic_region(at) && !plan.patterns.covers_module(&path) {
        plan.finding(at, kind, format!("`{shown}`: {msg}"));
    }
}

/// `JoinHandleExt` (in code or a `use`): reported, since the shim's threads are virtual
/// (the shim implements it with the execution's own pthread).
fn os_thread_handle(plan: &mut Plan, id: &Ident) -> bool {
    if id != "JoinHandleExt" {
        return false;
    }
    let at = plan.index.start(id.span());
    plan.finding(
        at,
        FindingKind::Ffi,
        "`JoinHandleExt`: a virtual thread has no OS thread of its own: `as_pthread_t` gives the pthread the whole execution runs on, so signalling or tuning it acts on every thread of the test",
    );
    true
}

/// `std::sync` -> `<shim>::sync`: only the root (with its leading `::`) is replaced.
fn root_rewrite(
    plan: &mut Plan,
    tokens: &[TokenTree],
    leading: Option<usize>,
    root: &Ident,
    module: &Ident,
    ctx: Ctx,
) {
    let ident_at = plan.index.start(root.span());
    let start = leading.map_or(ident_at, |k| plan.index.start(tokens[k].span()));
    let end = plan.index.end(root.span());
    let module_end = plan.index.end(module.span());
    let kind = plan.hints.get(&ident_at).copied().unwrap_or(match ctx {
        Ctx::Code => RewriteKind::Tokens,
        Ctx::Macro => RewriteKind::MacroTokens,
        Ctx::Attr => RewriteKind::AttrTokens,
    });
    let from = plan.index.slice(start..module_end).to_owned();
    let to = format!("{}{}", plan.shim, plan.index.slice(end..module_end));
    let edit = Edit::replace(start..end, plan.shim.clone());
    plan.change(start, kind, from, to, vec![edit]);
}

/// The libc calls pulse schedules (`<shim>::libc`): the waits for I/O readiness, and the
/// clock (read raw by TSC clock crates, quanta among them, to calibrate against).
const LIBC_SCHEDULED: &[&str] = &["epoll_wait", "epoll_pwait", "clock_gettime"];

/// `libc::epoll_wait` (a readiness wait), or `libc::$f` in a `macro_rules!` body (mio's
/// `syscall!(epoll_wait(..))` calls `libc::$fn(..)`), at `tokens[i]`: `libc` becomes
/// `<shim>::libc`, all of libc re-exported with those waits scheduled. Returns whether it
/// was one.
fn libc_call(plan: &mut Plan, tokens: &[TokenTree], leading: Option<usize>, i: usize) -> bool {
    let waits = next_segment(tokens, i).is_some_and(|f| LIBC_SCHEDULED.iter().any(|w| f == w));
    let metavar = matches!(
        (tokens.get(i + 1), tokens.get(i + 2), tokens.get(i + 3), tokens.get(i + 4)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Punct(d)), Some(TokenTree::Ident(_)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':' && d.as_char() == '$'
    );
    let id = &tokens[i];
    let local = leading.is_none() && plan.roots.shadowed_at("libc", plan.index.start(id.span()));
    if !waits && !metavar || local {
        return false;
    }
    let start = leading.map_or(plan.index.start(id.span()), |k| {
        plan.index.start(tokens[k].span())
    });
    let end = plan.index.end(id.span());
    let last = if metavar { i + 4 } else { i + 3 };
    let call_end = plan.index.end(tokens[last].span());
    let from = plan.index.slice(start..call_end).to_owned();
    let to = format!("{}::libc{}", plan.shim, plan.index.slice(end..call_end));
    let edit = Edit::replace(start..end, format!("{}::libc", plan.shim));
    plan.change(start, RewriteKind::LibcCall, from, to, vec![edit]);
    true
}

/// `core::arch::x86_64::_rdtsc` (or `__rdtscp`, `x86`'s, through `std::`) at `tokens[i]`:
/// the CPU's time-stamp counter, read from pulse's clock (`<shim>::arch`, which has the
/// same paths). Returns whether it was one.
fn tsc_read(
    plan: &mut Plan,
    tokens: &[TokenTree],
    leading: Option<usize>,
    i: usize,
    ctx: Ctx,
) -> bool {
    let TokenTree::Ident(root) = &tokens[i] else {
        return false;
    };
    let name = root.to_string();
    let at = plan.index.start(root.span());
    let std_root = (plan.roots.lookup(&name))
        .filter(|_| leading.is_some() || !plan.shadowed_path(&name, Some("arch"), at))
        .is_some_and(|k| matches!(k, Crate::Std | Crate::Core));
    let segment = |k: usize| next_segment(tokens, i + 3 * k).map(|s| s.to_string());
    let (Some(module), true) = (next_segment(tokens, i), std_root) else {
        return false;
    };
    let tsc = module == "arch"
        && matches!(segment(1).as_deref(), Some("x86_64" | "x86"))
        && matches!(segment(2).as_deref(), Some("_rdtsc" | "__rdtscp"));
    if tsc {
        root_rewrite(plan, tokens, leading, root, module, ctx);
    }
    tsc
}

/// A bare `thread_local!` is std's prelude macro unless the file defines its own.
fn thread_local(plan: &mut Plan, id: &Ident) {
    if plan.own_macros.contains("thread_local")
        || !plan.opts.std_modules.iter().any(|m| m == "thread_local")
    {
        return;
    }
    let range = plan.index.start(id.span())..plan.index.end(id.span());
    let to = format!("{}::thread_local", plan.shim);
    plan.change(
        range.start,
        RewriteKind::ThreadLocal,
        "thread_local!".into(),
        format!("{to}!"),
        vec![Edit::replace(range, to)],
    );
}

/// The item at `tokens[i]` has a visibility: `pub`, `pub(crate)`, `pub(in path)`.
fn is_visible(tokens: &[TokenTree], i: usize) -> bool {
    let is_pub = |j: usize| matches!(tokens.get(j), Some(TokenTree::Ident(id)) if id == "pub");
    match i.checked_sub(1).map(|j| &tokens[j]) {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
            i >= 2 && is_pub(i - 2)
        }
        Some(_) => is_pub(i - 1),
        None => false,
    }
}

/// Whether the path whose last segment so far is `tokens[i]` goes on to a call or an
/// associated item (`read_to_string(`, `File::open(`, `read::<P>(`): a type there
/// (`&std::fs::File`, an impl's self type, a field's type) blocks nowhere.
fn goes_on(tokens: &[TokenTree], i: usize) -> bool {
    match tokens.get(i + 1) {
        Some(TokenTree::Group(g)) => g.delimiter() == Delimiter::Parenthesis,
        Some(TokenTree::Punct(p)) => p.as_char() == ':' && p.spacing() == Spacing::Joint,
        _ => false,
    }
}

/// `use <tree>;` at tokens[i]: hands the tree to `use_tree` and returns the index after the
/// `;`. `None` (scan on as plain tokens) when it is not a parseable use tree, e.g. a
/// `macro_rules!` body's `use $crate::x;` or `impl Trait + use<'a>`.
fn use_statement(plan: &mut Plan, tokens: &[TokenTree], i: usize) -> Option<usize> {
    let semi = (i + 1..tokens.len())
        .find(|&j| matches!(&tokens[j], TokenTree::Punct(p) if p.as_char() == ';'))?;
    let mut start = i + 1;
    let mut leading = None;
    if let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) =
        (tokens.get(start), tokens.get(start + 1))
    {
        if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':' {
            leading = Some(plan.index.start(a.span())..plan.index.end(b.span()));
            start += 2;
        }
    }
    let stream: TokenStream = tokens[start..semi].iter().cloned().collect();
    let tree: syn::UseTree = syn::parse2(stream).ok()?;
    plan.in_reexport = is_visible(tokens, i);
    use_tree::rewrite(plan, &tree, leading);
    plan.in_reexport = false;
    for tt in &tokens[start..semi] {
        if let TokenTree::Group(g) = tt {
            g.stream().into_iter().for_each(|t| {
                if let TokenTree::Ident(id) = &t {
                    os_thread_handle(plan, id);
                }
            });
        } else if let TokenTree::Ident(id) = tt {
            os_thread_handle(plan, id);
        }
    }
    Some(semi + 1)
}

/// The context a group's tokens are in: attribute arguments, a macro's input, or unchanged.
fn group_ctx(tokens: &[TokenTree], i: usize) -> Option<Ctx> {
    let TokenTree::Group(g) = &tokens[i] else {
        return None;
    };
    let punct = |k: Option<usize>, c: char| matches!(k.and_then(|k| tokens.get(k)), Some(TokenTree::Punct(p)) if p.as_char() == c);
    let back = |n: usize| i.checked_sub(n);
    if g.delimiter() == Delimiter::Bracket
        && (punct(back(1), '#') || (punct(back(1), '!') && punct(back(2), '#')))
    {
        return Some(Ctx::Attr);
    }
    // `name!(..)`, but not `if !(..)`.
    if invoked_name(tokens, i)
        .is_some_and(|n| !paths::is_expr_keyword(&n) && n != "if" && n != "match")
    {
        return Some(Ctx::Macro);
    }
    if macro_rules_body(tokens, i) {
        return Some(Ctx::Macro);
    }
    None
}

/// The name of the macro `tokens[i]` is the input of (`name!(..)`, `path::name! {..}`).
fn invoked_name(tokens: &[TokenTree], i: usize) -> Option<String> {
    let bang = matches!(i.checked_sub(1).map(|k| &tokens[k]), Some(TokenTree::Punct(p)) if p.as_char() == '!');
    match i.checked_sub(2).map(|k| &tokens[k]) {
        Some(TokenTree::Ident(id)) if bang => Some(id.to_string()),
        _ => None,
    }
}

/// Whether `tokens[i]` is the body of `macro_rules! name { .. }`.
fn macro_rules_body(tokens: &[TokenTree], i: usize) -> bool {
    let at = |n: usize| i.checked_sub(n).and_then(|k| tokens.get(k));
    matches!(tokens.get(i), Some(TokenTree::Group(_)))
        && matches!(at(1), Some(TokenTree::Ident(_)))
        && matches!(at(2), Some(TokenTree::Punct(p)) if p.as_char() == '!')
        && matches!(at(3), Some(TokenTree::Ident(id)) if id == "macro_rules")
}

/// Whether the `macro_rules!` whose body is `tokens[i]` is exported: one of the attributes
/// right before it names `macro_export` (`#[macro_export]`, `#[macro_export(local_inner_macros)]`,
/// `#[cfg_attr(feature = "x", macro_export)]`, with any others and doc comments around it).
/// A conditional export counts: `$crate` paths are right in a macro that is not exported too.
fn exported(tokens: &[TokenTree], i: usize) -> bool {
    fn names_macro_export(stream: TokenStream) -> bool {
        stream.into_iter().any(|t| match t {
            TokenTree::Ident(id) => id == "macro_export",
            TokenTree::Group(g) => names_macro_export(g.stream()),
            _ => false,
        })
    }
    // `tokens[k]` is the `macro_rules` ident, then each attribute before it.
    let mut k = i - 3;
    while k >= 2 {
        let (TokenTree::Punct(pound), TokenTree::Group(attr)) = (&tokens[k - 2], &tokens[k - 1])
        else {
            break;
        };
        if pound.as_char() != '#' || attr.delimiter() != Delimiter::Bracket {
            break;
        }
        if names_macro_export(attr.stream()) {
            return true;
        }
        k -= 2;
    }
    false
}

/// Swaps the shim and facade roots for their `#[macro_export]` body forms, or back.
fn swap_exported_roots(plan: &mut Plan) {
    if let Some((shim, pulse)) = &mut plan.exported {
        std::mem::swap(&mut plan.shim, shim);
        std::mem::swap(&mut plan.pulse, pulse);
    }
    plan.in_exported_macro = !plan.in_exported_macro;
}

/// Whether a file's source defines a `#[macro_export] macro_rules!` anywhere (also inside a
/// module, a function or another macro's tokens, like `cfg_if!`'s). `false` when it does not
/// lex.
pub(crate) fn exports_macro(src: &str) -> bool {
    fn walk(stream: TokenStream) -> bool {
        let tokens: Vec<TokenTree> = stream.into_iter().collect();
        (0..tokens.len()).any(|i| match &tokens[i] {
            TokenTree::Group(g) => {
                (macro_rules_body(&tokens, i) && exported(&tokens, i)) || walk(g.stream())
            }
            _ => false,
        })
    }
    src.contains("macro_export")
        && crate::span::lexable(src)
            .parse::<TokenStream>()
            .is_ok_and(walk)
}

/// `quickcheck! { fn prop(..) -> bool { .. } }` writes `#[test]` on each fn itself, in its
/// own expansion, where pulse cannot wrap it: libtest runs it on real threads (reported NOT
/// SCHEDULED). Each such fn is named here, so `cargo pulse instrument` lists them.
fn quickcheck_tests(plan: &mut Plan, tokens: &[TokenTree]) {
    if !plan.opts.wrap_tests || plan.own_macros.contains("quickcheck") {
        return;
    }
    for k in 1..tokens.len() {
        let (TokenTree::Ident(kw), TokenTree::Ident(name)) = (&tokens[k - 1], &tokens[k]) else {
            continue;
        };
        if kw == "fn" {
            let at = plan.index.start(name.span());
            let msg = format!(
                "`{name}` is a test `quickcheck!` writes itself: it is not run under the pulse \
                 scheduler (it runs on real threads, reported NOT SCHEDULED); call \
                 `quickcheck::quickcheck(prop as fn(..) -> bool)` from a plain #[test] fn"
            );
            plan.finding(at, FindingKind::TestNotWrapped, msg);
        }
    }
}

fn is_test_attr(tokens: &[TokenTree]) -> bool {
    matches!(tokens, [TokenTree::Ident(id)] if id == "test")
}

/// A `#[test] fn` in a macro body (`macro_rules! tests { ($n:ident) => { #[test] fn $n() {..} } }`)
/// gets the same wrapping as a syntax-tree test, named `stringify!($n)` when the name is a
/// macro variable; shapes it cannot follow are reported. `tokens[i]` is the `[test]` group.
fn macro_test(plan: &mut Plan, tokens: &[TokenTree], i: usize) {
    let at = plan.index.start(tokens[i].span());
    let unwrapped = |plan: &mut Plan, why: &str| {
        let msg = format!("#[test] generated by a macro is not run under the pulse scheduler ({why}): write it as a plain #[test] fn");
        plan.finding(at, FindingKind::TestNotWrapped, msg);
    };
    if !plan.opts.wrap_tests {
        return;
    }
    let ident = |k: usize| match tokens.get(k) {
        Some(TokenTree::Ident(id)) => Some(id.to_string()),
        _ => None,
    };
    let punct =
        |k: usize, c: char| matches!(tokens.get(k), Some(TokenTree::Punct(p)) if p.as_char() == c);
    let mut k = i + 1;
    let mut should_panic = false;
    // Further attributes, visibility.
    loop {
        if punct(k, '#') {
            if let Some(TokenTree::Group(g)) = tokens.get(k + 1) {
                let first = g
                    .stream()
                    .into_iter()
                    .next()
                    .map(|t| t.to_string())
                    .unwrap_or_default();
                should_panic |= first == "should_panic";
                if crate::tests_wrap::is_other_harness(&[first]) {
                    return unwrapped(plan, "another test harness attribute");
                }
                k += 2;
                continue;
            }
        }
        if ident(k).as_deref() == Some("pub") {
            k += 1;
            if matches!(tokens.get(k), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis)
            {
                k += 1;
            }
            continue;
        }
        break;
    }
    match ident(k).as_deref() {
        Some("fn") => k += 1,
        Some("async" | "unsafe" | "const" | "extern") => return unwrapped(plan, "not a plain fn"),
        _ => return unwrapped(plan, "unrecognised shape"),
    }
    let (name, name_expr) = match (tokens.get(k), tokens.get(k + 1)) {
        (Some(TokenTree::Ident(id)), _) => {
            k += 1;
            let n = id.to_string().trim_start_matches("r#").to_owned();
            (n.clone(), format!("{n:?}"))
        }
        (Some(TokenTree::Punct(p)), Some(TokenTree::Ident(var))) if p.as_char() == '$' => {
            k += 2;
            (format!("${var}"), format!("stringify!(${var})"))
        }
        _ => return unwrapped(plan, "unrecognised name"),
    };
    match tokens.get(k) {
        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis => {
            if !g.stream().is_empty() {
                // A test with inputs is a property test's: proptest generates the fn, from
                // `proptest! {..}` or from a macro that hands it there (`x in strategy`
                // parameters are proptest's syntax, not Rust's).
                let in_params = g
                    .stream()
                    .into_iter()
                    .any(|t| matches!(t, TokenTree::Ident(id) if id == "in"));
                return if in_params || plan.invoked_macro.as_deref() == Some("proptest") {
                    proptest_test(plan, tokens, i, name)
                } else {
                    unwrapped(plan, "unrecognised parameters")
                };
            }
        }
        _ => return unwrapped(plan, "unrecognised parameters"),
    }
    k += 1;
    let mut ret = None;
    if punct(k, '-') && punct(k + 1, '>') {
        let first = k + 2;
        let body = (first..tokens.len()).find(
            |&j| matches!(&tokens[j], TokenTree::Group(g) if g.delimiter() == Delimiter::Brace),
        );
        let Some(body) = body.filter(|&b| b > first) else {
            return unwrapped(plan, "unrecognised return type");
        };
        if (first..body).any(|j| ident(j).is_some_and(|w| w == "where" || w == "impl")) {
            return unwrapped(plan, "unrecognised return type");
        }
        ret = Some(plan.index.start(tokens[first].span())..plan.index.end(tokens[body - 1].span()));
        k = body;
    }
    let Some(TokenTree::Group(body)) = tokens
        .get(k)
        .filter(|t| matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace))
    else {
        return unwrapped(plan, "unrecognised body");
    };
    // The prefix goes after the body's inner attributes (`#![allow(..)]`), which stay on the fn.
    let inner: Vec<TokenTree> = body.stream().into_iter().collect();
    let mut open = plan.index.end(body.span_open());
    let mut j = 0;
    while let (Some(TokenTree::Punct(h)), Some(TokenTree::Punct(b)), Some(TokenTree::Group(g))) =
        (inner.get(j), inner.get(j + 1), inner.get(j + 2))
    {
        if h.as_char() != '#' || b.as_char() != '!' {
            break;
        }
        open = plan.index.end(g.span());
        j += 3;
    }
    // Wrapped by an earlier run: the body starts with `<pulse>::__private::run_test`.
    let head: Vec<String> = inner
        .iter()
        .skip(j)
        .take(12)
        .map(|t| t.to_string())
        .collect();
    if head.iter().any(|t| t == "run_test") && head.iter().any(|t| t == "__private") {
        return;
    }
    let close = plan.index.start(body.span_close());
    plan.tests.push(crate::plan::PendingTest {
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

/// A `#[test] fn name(x in strategy, ..)` in `proptest! { .. }` (or in a macro that hands it
/// there): proptest passes the test's attributes on to the fn it generates, so an attribute
/// put before them wraps that fn's body (proptest's case loop) in `run_proptest`
/// (pulse-macros' `scheduled_proptest`). `tokens[i]` is the `[test]` group, after its `#`.
fn proptest_test(plan: &mut Plan, tokens: &[TokenTree], i: usize, name: String) {
    let hash = plan.index.start(tokens[i - 1].span());
    // The first of the fn's attributes, so that the wrapper sees `#[should_panic]`.
    let mut first = i - 1;
    while first >= 2
        && matches!(&tokens[first - 1], TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket)
        && matches!(&tokens[first - 2], TokenTree::Punct(p) if p.as_char() == '#')
    {
        first -= 2;
    }
    // Put there by an earlier run.
    let wrapped = tokens[first..i].iter().any(|t| match t {
        TokenTree::Group(g) => g.stream().into_iter().any(|t| t.to_string() == "__private"),
        _ => false,
    });
    if wrapped {
        return;
    }
    let at = plan.index.start(tokens[first].span());
    let p = plan.pulse.clone();
    let attr = format!("#[{p}::__private::scheduled_proptest({p})] ");
    plan.change(
        hash,
        crate::report::RewriteKind::TestWrapped,
        format!("proptest fn {name}"),
        format!("{p}::__private::run_proptest(..) around proptest's cases"),
        vec![Edit::insert(at, attr, crate::textedit::order::TEST_OPEN)],
    );
}

#[cfg(test)]
mod tests {
    use crate::{instrument_source, Options, RewriteKind};

    fn run(src: &str) -> (String, Vec<RewriteKind>) {
        let out = instrument_source(src, &Options::default()).unwrap();
        (
            out.text,
            out.report.rewrites.iter().map(|r| r.kind).collect(),
        )
    }

    #[test]
    fn paths_in_macro_tokens() {
        let (text, kinds) = run("fn f() { let v = vec![std::sync::Mutex::new(1)]; assert!(::std::thread::panicking()); }");
        assert_eq!(
            text,
            "fn f() { let v = vec![::pulse::std::sync::Mutex::new(1)]; assert!(::pulse::std::thread::panicking()); }"
        );
        assert_eq!(kinds, [RewriteKind::MacroTokens, RewriteKind::MacroTokens]);
    }

    #[test]
    fn look_alikes_are_left_alone() {
        let src = "fn f() { my::std::sync::x(); crate::sync::y(); self::thread::z(); x.std; let s = \"std::sync::X\"; } // std::thread\nmacro_rules! m { ($std:ident) => { $std::sync::X } }";
        assert_eq!(run(src).0, src);
    }

    #[test]
    fn leading_colon_after_keywords_and_arrows() {
        let (text, _) = run("fn f() -> ::std::time::Instant { return ::std::time::Instant::now() }\nfn g() { match 1 { _ => ::std::thread::yield_now() } }");
        assert_eq!(
            text,
            "fn f() -> ::pulse::std::time::Instant { return ::pulse::std::time::Instant::now() }\nfn g() { match 1 { _ => ::pulse::std::thread::yield_now() } }"
        );
    }

    #[test]
    fn root_right_after_generics_is_resolved_by_the_syntax_tree() {
        let src = "fn f<T>() where for<'a> ::std::sync::Arc<&'a T>: Send {}\nmacro_rules! m { () => { Vec<u8>::std::sync::X } }";
        let (text, kinds) = run(src);
        assert_eq!(
            text,
            "fn f<T>() where for<'a> ::pulse::std::sync::Arc<&'a T>: Send {}\nmacro_rules! m { () => { Vec<u8>::std::sync::X } }"
        );
        assert_eq!(kinds, [RewriteKind::TypePath]);
    }

    #[test]
    fn exported_macro_bodies_reach_the_shim_through_dollar_crate() {
        // cpufeatures 0.3.1's `new!`, expanded by chacha20 (not instrumented).
        let src = "#[macro_export]\nmacro_rules! new { ($n:ident) => { mod $n { use core::sync::atomic::{AtomicU8, Ordering::Relaxed}; } } }\nmacro_rules! local { () => { std::thread::yield_now() } }\n";
        let (text, _) = run(src);
        assert_eq!(
            text,
            src.replace("use core::", "use $crate::__pulse::std::")
                .replace("{ std::", "{ ::pulse::std::")
        );
        // Inside another macro's tokens (`cfg_if!`), after doc comments, conditionally.
        for src in [
            "cfg_if! { if #[cfg(x)] { #[macro_export] macro_rules! m { () => { std::thread::yield_now() } } } }",
            "/// Docs.\n#[macro_export]\n/// More.\n#[allow(unused)]\nmacro_rules! m { () => { std::thread::yield_now() } }",
            "#[cfg_attr(feature = \"x\", macro_export)] macro_rules! m { () => { std::thread::yield_now() } }",
        ] {
            let (text, _) = run(src);
            assert_eq!(
                text,
                src.replace("std::thread", "$crate::__pulse::std::thread"),
                "{src}"
            );
            assert!(super::exports_macro(src), "{src}");
        }
        // An attribute of the item before does not count.
        let src = "#[macro_export] macro_rules! a { () => {} }\nfn f() {}\nmacro_rules! m { () => { std::thread::yield_now() } }";
        assert!(run(src).0.contains("{ ::pulse::std::thread"));
        assert!(super::exports_macro(src));
        assert!(!super::exports_macro(
            "// #[macro_export]\nmacro_rules! m { () => {} }\nconst S: &str = \"#[macro_export]\";"
        ));
    }

    #[test]
    fn a_crate_root_re_exports_the_facade_when_its_crate_exports_macros() {
        let opts = Options {
            crate_root: true,
            ..Options::default()
        };
        let root = "mod m;\npub fn f() {}\n";
        let text = |src: &str, cx: &crate::CrateContext| {
            crate::instrument_file(src, std::path::Path::new("src/lib.rs"), &opts, cx)
                .unwrap()
                .text
        };
        // No exported macro in the crate: nothing added.
        let mut cx = crate::CrateContext::new(std::path::Path::new("."));
        assert_eq!(text(root, &cx), root);
        // One in another file: the root re-exports the facade, once.
        cx.add_source("#[macro_export] macro_rules! m { () => {} }", &opts);
        let declared = "mod m;\npub fn f() {} #[doc(hidden)] pub extern crate pulse as __pulse;\n";
        assert_eq!(text(root, &cx), declared);
        assert_eq!(text(declared, &cx), declared);
        // One in the root itself, with no crate context.
        let src = "#[macro_export]\nmacro_rules! m { () => { std::thread::yield_now() } }\n";
        let out = crate::instrument_source(src, &opts).unwrap().text;
        assert_eq!(out, "#[macro_export]\nmacro_rules! m { () => { $crate::__pulse::std::thread::yield_now() } } #[doc(hidden)] pub extern crate pulse as __pulse;\n");
        // An edition-2015 root declares the facade too.
        let o2015 = Options {
            declare_facade: true,
            ..opts.clone()
        };
        let out = crate::instrument_source(src, &o2015).unwrap().text;
        assert!(out.ends_with("} #[allow(unused_extern_crates)] extern crate pulse; #[doc(hidden)] pub extern crate pulse as __pulse;\n"), "{out}");
        // A crate-local shim root needs no re-export.
        let local = Options {
            shim_root: "crate::peer::loom".into(),
            ..opts.clone()
        };
        let out = crate::instrument_source(src, &local).unwrap().text;
        assert_eq!(
            out,
            "#[macro_export]\nmacro_rules! m { () => { $crate::peer::loom::thread::yield_now() } }\n"
        );
    }

    #[test]
    fn an_asm_fence_gets_a_seqcst_fence_before_it_and_other_asm_a_finding() {
        let fence =
            "::pulse::std::sync::atomic::fence(::pulse::std::sync::atomic::Ordering::SeqCst);";
        for (src, asm) in [
            (
                "fn f(p: *mut usize) { unsafe { core::arch::asm!(\"lock not qword ptr [{0}]\", in(reg) p) }; }",
                "core::arch::asm!(\"lock not qword ptr [{0}]\", in(reg) p)",
            ),
            (
                "fn f() { unsafe { asm!(\"dmb ish\") } }",
                "asm!(\"dmb ish\")",
            ),
            ("fn f() { unsafe { ::std::arch::asm!(\"mfence\") } }", "::std::arch::asm!(\"mfence\")"),
        ] {
            let out = instrument_source(src, &Options::default()).unwrap();
            assert_eq!(
                out.text,
                src.replace(asm, &format!("{{ {fence} {asm} }}")),
                "{src}"
            );
            let kinds: Vec<_> = out.report.rewrites.iter().map(|r| r.kind).collect();
            assert_eq!(kinds, [RewriteKind::AsmFence]);
            assert!(out.report.findings.is_empty(), "{:?}", out.report.findings);
        }
        // Not a fence (a `lock` in an operand's name is no prefix): left alone, reported.
        let src = "fn f(x: u64) { unsafe { asm!(\"nop\", in(reg) x) } }";
        let out = instrument_source(src, &Options::default()).unwrap();
        assert_eq!(out.text, src);
        assert_eq!(out.report.findings.len(), 1);
    }

    #[test]
    fn bare_thread_local_unless_shadowed() {
        let (text, kinds) = run("thread_local! { static X: u8 = 0; }");
        assert_eq!(text, "::pulse::std::thread_local! { static X: u8 = 0; }");
        assert_eq!(kinds, [RewriteKind::ThreadLocal]);
        let own = "macro_rules! thread_local { () => {} }\nthread_local!();";
        assert_eq!(run(own).0, own);
    }
}
