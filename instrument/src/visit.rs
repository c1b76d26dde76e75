//! The syntax-tree passes.
//!
//! `declarations` runs first and gathers what changes how paths read in this file: aliases
//! of std (`extern crate std as foo`, `use std as s`), local items shadowing `std`, a local
//! `macro_rules! thread_local`, imports (for `atomic` path matching) and `extern` fns.
//!
//! `main` then plans everything that needs structure rather than tokens: it labels each path
//! root with its syntax position (the token sweep does the rewriting), wraps tests, handles
//! atomic markers and atomic-listed calls, and reports FFI, attribute macros and source
//! pulled from outside the tree.

use crate::atomic::{self, Marker, Patterns};
use crate::paths::{self, Crate};
use crate::plan::{abbrev, AttrMacroSite, ExternalRef, Plan};
use crate::reactor_wait;
use crate::report::{FindingKind, RewriteKind};
use crate::tests_wrap;
use crate::textedit::{order, Edit};
use proc_macro2::Span;
use std::collections::HashSet;
use std::ops::Range;
use syn::ext::IdentExt;
use syn::visit::{self, Visit};
use syn::{Attribute, Expr, UseTree};

pub(crate) fn declarations(plan: &mut Plan, file: &syn::File) {
    let whole = 0..plan.src().len();
    Decls {
        plan,
        modules: vec![whole],
    }
    .visit_file(file);
}

/// The syntax tree a file parsed as: items, or one expression (an `include!`d file).
pub(crate) enum Tree<'t> {
    File(&'t syn::File),
    Expr(&'t Expr),
}

pub(crate) fn main(plan: &mut Plan, tree: Tree) {
    let patterns = std::mem::take(&mut plan.patterns);
    let mut v = Main {
        plan,
        patterns,
        kind: RewriteKind::Tokens,
        atomic_depth: 0,
        const_depth: 0,
        fn_depth: 0,
        semi_after: HashSet::new(),
        handled_markers: HashSet::new(),
    };
    match tree {
        Tree::File(file) => v.visit_file(file),
        Tree::Expr(expr) => v.visit_expr(expr),
    }
    v.plan.patterns = v.patterns;
}

struct Decls<'p, 'a> {
    plan: &'p mut Plan<'a>,
    /// Byte ranges of the enclosing modules, innermost last: a shadowing item's scope.
    modules: Vec<Range<usize>>,
}

fn std_crate(name: &str) -> Option<Crate> {
    match name {
        "std" => Some(Crate::Std),
        "core" => Some(Crate::Core),
        "alloc" => Some(Crate::Alloc),
        _ => None,
    }
}

/// `std::alloc::alloc` or `alloc::alloc::alloc`: a function, which lives among values, so
/// importing it does not hide the `alloc` crate (a path's first segment is looked up among
/// crates and modules). `use alloc::alloc::{alloc, dealloc, Layout}` is common in no_std
/// crates (crossbeam-skiplist), and their `alloc::sync::Arc` must still be rewritten.
fn is_allocator_function(prefix: &[String], name: &str) -> bool {
    name == "alloc"
        && matches!(prefix, [krate, module] if module == "alloc" && (krate == "std" || krate == "alloc"))
}

impl Decls<'_, '_> {
    /// Declared in code this build leaves out: it hides and aliases nothing.
    fn inactive(&self, ident: &syn::Ident) -> bool {
        self.plan.is_inactive(self.plan.index.start(ident.span()))
    }

    /// A local item named like a std crate (or `libc`) hides it for relative paths in its module; a path
    /// it leaves alone is said where it is (`Plan::shadowed_path`).
    fn shadowing(&mut self, ident: &syn::Ident) {
        let name = ident.to_string();
        // (A synchronising crate's name, unless it is the alias of another such crate:
        // `use crossbeam_channel as crossbeam;` is followed, not hidden.)
        let hides = std_crate(&name).is_some()
            || name == "libc"
            || (paths::foreign_sync_crate(&name).is_some()
                && self.plan.roots.foreign_crate(&name) == name);
        if hides && !self.inactive(ident) {
            let scope = self.modules.last().cloned().unwrap_or_default();
            self.plan.roots.shadow(&name, scope);
        }
    }

    /// `use crossbeam_channel as mpsc;` (or `extern crate .. as ..`) of a crate whose
    /// synchronisation pulse does not see: `mpsc::..` paths in this file are followed to it.
    fn foreign_alias(&mut self, krate: &str, alias: &syn::Ident) {
        let instrumented = self
            .plan
            .opts
            .instrumented_crates
            .iter()
            .any(|c| c == krate);
        let Some(msg) = paths::foreign_sync_crate(krate) else {
            return;
        };
        if instrumented || self.inactive(alias) {
            return;
        }
        let alias = alias.unraw();
        self.plan.roots.add_foreign_alias(&alias.to_string(), krate);
        let at = self.plan.index.start(alias.span());
        let msg = format!(
            "`{alias}` is an alias of `{krate}` (its paths are followed in this file): {msg}"
        );
        self.plan.finding(at, FindingKind::ForeignSync, msg);
    }

    /// Collects imports (local name -> full path) and std aliases from a use tree.
    fn use_tree(&mut self, tree: &UseTree, prefix: &mut Vec<String>) {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix);
                prefix.pop();
            }
            UseTree::Name(n) => {
                let name = n.ident.to_string();
                if name == "self" {
                    if let Some(last) = prefix.last().cloned() {
                        self.plan.imports.insert(last, prefix.clone());
                    }
                } else {
                    if !prefix.is_empty() && !is_allocator_function(prefix, &name) {
                        self.shadowing(&n.ident);
                    }
                    let mut full = prefix.clone();
                    full.push(name.clone());
                    self.plan.imports.insert(name, full);
                }
            }
            UseTree::Rename(r) => {
                let original = r.ident.to_string();
                let mut full = prefix.clone();
                if original != "self" {
                    full.push(original);
                }
                // `use std as s;` / `use std::{self as s}`: follow `s::sync` in this file.
                if let [root] = full.as_slice() {
                    if let Some(krate) = std_crate(root).filter(|_| !self.inactive(&r.rename)) {
                        let alias = r.rename.to_string();
                        self.plan.roots.add_alias(&alias, krate);
                        let at = self.plan.index.start(r.rename.span());
                        let msg = format!("`{alias}` is an alias of `{root}`: paths through it are rewritten in this file only; modules that import `{alias}` from here reach {root} unrewritten, so import {root}'s modules directly");
                        self.plan.finding(at, FindingKind::StdAlias, msg);
                    } else {
                        self.foreign_alias(root, &r.rename);
                    }
                }
                self.shadowing(&r.rename);
                self.plan.imports.insert(r.rename.to_string(), full);
            }
            UseTree::Glob(_) => self.plan.glob_imports.push(prefix.clone()),
            UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(t, prefix)),
        }
    }
}

impl<'ast> Visit<'ast> for Decls<'_, '_> {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        // A `use` the build leaves out names nothing: once_map aliases std's `RandomState`
        // under a false cfg and ahash's under the true one, and the name is ahash's.
        if !self
            .plan
            .is_inactive(self.plan.index.start(u.use_token.span))
        {
            self.use_tree(&u.tree, &mut Vec::new());
        }
    }

    fn visit_item_extern_crate(&mut self, e: &'ast syn::ItemExternCrate) {
        let name = e.ident.to_string();
        if e.rename.is_none() && std_crate(&name).is_some() && !self.inactive(&e.ident) {
            let scope = self.modules.last().cloned().unwrap_or_default();
            self.plan.roots.declare_extern(&name, scope);
        }
        if let Some((_, alias)) = &e.rename {
            let alias_name = alias.to_string();
            match std_crate(&e.ident.to_string()) {
                // `extern crate core as std;` (no_std builds): still a std-family root, and
                // the shim mirrors the modules core and std share.
                Some(_) if std_crate(&alias_name).is_some() => {}
                Some(_) if self.inactive(alias) => {}
                Some(krate) => self.plan.roots.add_alias(&alias_name, krate),
                None => {
                    self.foreign_alias(&e.ident.to_string(), alias);
                    self.shadowing(alias);
                }
            }
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.shadowing(&m.ident);
        if let Some((brace, _)) = &m.content {
            let range = self.plan.index.range(brace.span.open(), brace.span.close());
            self.plan.roots.module(range.clone());
            self.modules.push(range);
            visit::visit_item_mod(self, m);
            self.modules.pop();
        }
    }

    fn visit_item_macro(&mut self, m: &'ast syn::ItemMacro) {
        if let Some(name) = m.ident.as_ref().filter(|i| !self.inactive(i)) {
            if m.mac.path.is_ident("macro_rules") {
                self.plan.own_macros.insert(name.to_string());
            }
        }
        visit::visit_item_macro(self, m);
    }

    fn visit_foreign_item_fn(&mut self, f: &'ast syn::ForeignItemFn) {
        self.plan.foreign_fns.insert(f.sig.ident.to_string());
    }
}

struct Main<'p, 'a> {
    plan: &'p mut Plan<'a>,
    patterns: Patterns,
    /// The syntax position paths are currently in.
    kind: RewriteKind,
    /// Inside a marked fn/impl, a wrapped expression or a `pulse::atomic(..)` call.
    atomic_depth: usize,
    /// Inside a const context, where a closure call cannot go.
    const_depth: usize,
    /// Inside a fn's body: its own fns are not tests libtest runs (nor a wrapped runtime
    /// test's inner fn, on a second pass).
    fn_depth: usize,
    /// Marker attributes (by offset) on statements that need a `;` once wrapped.
    semi_after: HashSet<usize>,
    handled_markers: HashSet<usize>,
}

impl Main<'_, '_> {
    fn with_kind(&mut self, kind: RewriteKind, f: impl FnOnce(&mut Self)) {
        let saved = std::mem::replace(&mut self.kind, kind);
        f(self);
        self.kind = saved;
    }

    fn atomic(&mut self, f: impl FnOnce(&mut Self)) {
        self.atomic_depth += 1;
        f(self);
        self.atomic_depth -= 1;
    }

    fn constant(&mut self, f: impl FnOnce(&mut Self)) {
        self.const_depth += 1;
        f(self);
        self.const_depth -= 1;
    }

    fn range(&self, first: Span, last: Span) -> Range<usize> {
        self.plan.index.range(first, last)
    }

    /// Marks `range` as already atomic (suppresses blocking-I/O findings there).
    fn region(&mut self, range: Range<usize>) {
        self.plan.atomic_regions.push(range);
    }

    /// Wraps `range` in `<pulse>::atomic(|| ..)`, blanking a marker attribute if given.
    fn wrap(
        &mut self,
        range: Range<usize>,
        kind: RewriteKind,
        marker: Option<&Marker>,
        semicolon: bool,
    ) {
        let mut edits = Vec::new();
        if let Some(m) = marker {
            for &(a, b) in &m.blanks {
                let blank = self.range(a, b);
                let spaces: String = self
                    .plan
                    .index
                    .slice(blank.clone())
                    .chars()
                    .map(|c| if c == '\n' || c == '\r' { c } else { ' ' })
                    .collect();
                edits.push(Edit::replace(blank, spaces));
            }
        }
        let open = format!("{}::atomic(|| ", self.plan.pulse);
        edits.push(Edit::insert(range.start, open.clone(), order::ATOMIC_OPEN));
        edits.push(Edit::insert(range.end, ")", order::ATOMIC_CLOSE));
        if semicolon {
            edits.push(Edit::insert(range.end, ";", order::SEMICOLON));
        }
        let from = abbrev(self.plan.index.slice(range.clone()));
        let to = format!("{open}{from})");
        self.plan.change(range.start, kind, from, to, edits);
        self.region(range);
    }

    /// Handles a marker on an expression (or a `let`'s initializer).
    fn marked_expr(&mut self, e: &Expr, marker: &Marker, marker_at: usize, context: &str) {
        let inner = atomic::peel_try(e);
        if let Some(why) = atomic::escape(inner) {
            let msg = format!("#[pulse::atomic] {context} contains {why}, which cannot move into a closure: mark a smaller expression");
            self.plan
                .finding(marker_at, FindingKind::AtomicNotWrapped, msg);
            return;
        }
        let Some((first, last)) = atomic::bounds(inner) else {
            return;
        };
        let range = self.range(first, last);
        let semicolon = self.semi_after.contains(&marker_at);
        self.wrap(range, RewriteKind::Atomic, Some(marker), semicolon);
    }

    fn marker_at(&self, m: &Marker) -> usize {
        m.blanks
            .first()
            .map_or(0, |(a, _)| self.plan.index.start(*a))
    }

    /// Records attribute macros on an item for the report (decided after the sweep).
    fn attr_macros(&mut self, attrs: &[Attribute], item: Range<usize>) {
        for attr in attrs {
            if self.plan.cfg_attr_off(attr) {
                continue;
            }
            let mut metas = vec![attr.meta.clone()];
            if let syn::Meta::List(l) = &attr.meta {
                if l.path.is_ident("cfg_attr") {
                    if let Ok(items) = l.parse_args_with(
                        syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
                    ) {
                        metas = items.into_iter().skip(1).collect();
                    }
                }
            }
            for meta in metas {
                let segs: Vec<String> = meta
                    .path()
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                if is_inert(&segs)
                    || tests_wrap::is_other_harness(&segs)
                    || atomic::is_atomic_path(meta.path())
                {
                    continue;
                }
                let path = segs.join("::");
                let always = matches!(
                    path.as_str(),
                    "async_std::main" | "actix_rt::main" | "actix_web::main" | "smol_potat::main"
                );
                let at = self.plan.index.start(attr.pound_token.span);
                self.plan.attr_macros.push(AttrMacroSite {
                    at,
                    path,
                    item: item.clone(),
                    always,
                });
            }
        }
    }

    /// Whether `path` (written segments) is std's `sync` module.
    /// `syscall(SYS_futex, ..)` becomes `<shim>::__pulse_futex!(syscall, SYS_futex, ..)`: the
    /// arguments are passed as written, and the function stays named (an imported `syscall`
    /// stays used).
    fn futex_call(&mut self, path: &syn::Path, c: &syn::ExprCall) {
        let first = path
            .leading_colon
            .map_or(path.segments[0].ident.span(), |c| c.spans[0]);
        let range = self.range(first, c.paren_token.span.open());
        let callee = self.range(first, path.segments[path.segments.len() - 1].ident.span());
        let from = abbrev(self.plan.index.slice(range.clone()));
        let spaced = self.plan.index.text()[range.end..].starts_with(char::is_whitespace);
        let to = format!(
            "{}::__pulse_futex!({},{}",
            self.plan.shim,
            self.plan.index.slice(callee),
            if spaced { "" } else { " " }
        );
        let edits = vec![Edit::replace(range.clone(), to.clone())];
        self.plan
            .change(range.start, RewriteKind::FutexCall, from, to, edits);
    }

    fn is_std_sync(&self, path: &[String]) -> bool {
        matches!(path, [root, module] if module == "sync" && self.plan.roots.lookup(root) == Some(Crate::Std))
    }

    /// `Arc::strong_count` and its kin (`arc_twin`) on std's types, however the path reaches
    /// them (`Arc::..` imported from std, `std::sync::Arc::..`, `sync::Arc::..`): the edit
    /// that routes it to the shim's visible twin.
    fn arc_call(&self, path: &syn::Path) -> Option<(Range<usize>, String)> {
        let segs = self.call_path(path);
        let n = segs.len();
        if n < 2 || path.segments[n - 1].arguments != syn::PathArguments::None {
            return None;
        }
        let imported = self.plan.imports.get(&segs[0]);
        let (module, ty): (Vec<String>, &str) = if n == 2 {
            match imported {
                Some(full) if full.len() == 3 => (full[..2].to_vec(), full[2].as_str()),
                Some(_) => return None,
                None => {
                    // `use std::sync::*;`
                    let glob = self.plan.glob_imports.iter().any(|g| self.is_std_sync(g));
                    (
                        if glob {
                            vec!["std".into(), "sync".into()]
                        } else {
                            return None;
                        },
                        segs[0].as_str(),
                    )
                }
            }
        } else {
            let module: Vec<String> = match imported {
                Some(full) => full.iter().chain(&segs[1..n - 2]).cloned().collect(),
                None => segs[..n - 2].to_vec(),
            };
            (module, segs[n - 2].as_str())
        };
        if !self.is_std_sync(&module) {
            return None;
        }
        let twin = arc_twin(ty, &segs[n - 1])?;
        let last = path.segments[n - 1].ident.span();
        Some(if n == 2 {
            let first = path
                .leading_colon
                .map_or(path.segments[0].ident.span(), |c| c.spans[0]);
            (
                self.range(first, last),
                format!("{}::sync::arc_ops::{twin}", self.plan.shim),
            )
        } else {
            // The module's own path is rewritten to the shim's (`std::sync` -> `<shim>::sync`).
            (
                self.range(path.segments[n - 2].ident.span(), last),
                format!("arc_ops::{twin}"),
            )
        })
    }

    /// `HashMap::new` and the other constructors of std's hash collections that pick their
    /// own `RandomState` (`hash_trait`), however the path reaches them (`HashMap` imported
    /// from std, `std::collections::HashSet`, `hash_map::RandomState`): the edits that call
    /// the shim's trait of the same name instead, keyed by the scheduler, every written word
    /// kept (`HashMap::<K, V>::new` -> `<HashMap::<K, V> as <shim>::..::KeyedMap>::new`).
    /// `from` only where the call's argument is an array literal (`array_arg`), the form
    /// every `HashMap::from` in this machine's registry cache takes: a crate may give std's
    /// maps a `From` of its own type.
    fn hash_call(
        &self,
        path: &syn::Path,
        array_arg: bool,
    ) -> Option<(Range<usize>, String, Vec<Edit>)> {
        let segs = self.call_path(path);
        let n = segs.len();
        if n < 2 || path.segments[n - 1].arguments != syn::PathArguments::None {
            return None;
        }
        let full: Vec<String> = match self.plan.imports.get(&segs[0]) {
            Some(full) => full.iter().chain(&segs[1..n - 1]).cloned().collect(),
            None if n == 2 => {
                // `use std::collections::*;`
                let glob = self
                    .plan
                    .glob_imports
                    .iter()
                    .find(|g| self.is_std_hash_module(g))?;
                glob.iter().chain(&segs[..1]).cloned().collect()
            }
            None => segs[..n - 1].to_vec(),
        };
        let (ty, module) = full.split_last()?;
        if !self.is_std_hash_module(module) {
            return None;
        }
        let op = segs[n - 1].as_str();
        let (trait_name, holes) = hash_trait(ty, op)?;
        if op == "from" && !array_arg {
            return None;
        }
        let ty_seg = &path.segments[n - 2];
        let first = path
            .leading_colon
            .map_or(path.segments[0].ident.span(), |c| c.spans[0]);
        let whole = self.range(first, path.segments[n - 1].ident.span());
        let (ty_end, holes) = match &ty_seg.arguments {
            syn::PathArguments::AngleBracketed(a) => (self.plan.index.end(a.gt_token.span), ""),
            _ => (self.plan.index.end(ty_seg.ident.span()), holes),
        };
        let to = format!(
            " as {}::collections::hash_ops::{trait_name}>",
            self.plan.shim
        );
        let edits = vec![
            Edit::insert(whole.start, "<", 50),
            Edit::insert(ty_end, format!("{holes}{to}"), 50),
        ];
        let text = self.plan.index.text();
        let shown = format!(
            "<{}{holes}{to}{}",
            &text[whole.start..ty_end],
            &text[ty_end..whole.end]
        );
        Some((whole, shown, edits))
    }

    /// Whether `path` is a std module that names a hash collection or its `RandomState`.
    fn is_std_hash_module(&self, path: &[String]) -> bool {
        let rest = match path.split_first() {
            Some((root, rest)) if self.plan.roots.lookup(root) == Some(Crate::Std) => rest,
            _ => return false,
        };
        let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
        matches!(
            rest.as_slice(),
            ["collections"] | ["collections", "hash_map"] | ["collections", "hash_set"] | ["hash"]
        )
    }

    /// Whether the file can name std's `sync::Weak` (so a `.upgrade()` may be on one).
    fn names_std_weak(&self) -> bool {
        self.plan
            .imports
            .values()
            .any(|full| full.len() == 3 && full[2] == "Weak" && self.is_std_sync(&full[..2]))
            || self.plan.glob_imports.iter().any(|g| self.is_std_sync(g))
            || self.plan.index.text().contains("sync::Weak")
    }

    /// Whether `path` names std's `UNIX_EPOCH` (`UNIX_EPOCH` imported from `std::time`, by
    /// name, alias or glob; `time::UNIX_EPOCH`; `std::time::UNIX_EPOCH`; the same through
    /// `SystemTime::UNIX_EPOCH`) in a crate whose `std::time` becomes the shim's.
    fn is_std_unix_epoch(&self, path: &syn::Path) -> bool {
        if !paths::is_shim_module(Crate::Std, "time", &self.plan.opts.std_modules)
            || path
                .segments
                .iter()
                .any(|s| s.arguments != syn::PathArguments::None)
        {
            return false;
        }
        let segs = self.call_path(path);
        let is_epoch = |full: &[String]| match full {
            [root, time, rest @ ..] => {
                time == "time"
                    && self.plan.roots.lookup(root) == Some(Crate::Std)
                    && (rest == ["UNIX_EPOCH"] || rest == ["SystemTime", "UNIX_EPOCH"])
            }
            _ => false,
        };
        if path.leading_colon.is_some() {
            return is_epoch(&segs);
        }
        match self.plan.imports.get(&segs[0]) {
            Some(full) => is_epoch(&[full.as_slice(), &segs[1..]].concat()),
            None => {
                is_epoch(&segs)
                    || self
                        .plan
                        .glob_imports
                        .iter()
                        .any(|g| is_epoch(&[g.as_slice(), &segs].concat()))
            }
        }
    }

    fn call_path(&self, path: &syn::Path) -> Vec<String> {
        path.segments.iter().map(|s| s.ident.to_string()).collect()
    }

    fn is_pulse_atomic_call(&self, segs: &[String]) -> bool {
        let pulse = self.plan.pulse.trim_start_matches("::");
        segs.len() >= 2
            && segs[segs.len() - 1] == "atomic"
            && segs[..segs.len() - 1].join("::") == pulse
    }
}

/// Built-in and tool attributes, which expand to nothing that runs.
fn is_inert(segs: &[String]) -> bool {
    // pulse's own (`__private::runtime_test`, `scheduled_proptest`), put by an earlier run.
    if segs.iter().any(|s| s == "__private") {
        return true;
    }
    if segs.len() > 1 {
        return matches!(
            segs[0].as_str(),
            "rustfmt"
                | "clippy"
                | "diagnostic"
                | "rust_analyzer"
                | "miri"
                | "rustversion"
                | "core"
                | "std"
        );
    }
    let name = segs.first().map(String::as_str).unwrap_or_default();
    matches!(
        name,
        "test"
            | "ignore"
            | "should_panic"
            | "bench"
            | "cfg"
            | "cfg_attr"
            | "derive"
            | "allow"
            | "warn"
            | "deny"
            | "forbid"
            | "expect"
            | "doc"
            | "inline"
            | "cold"
            | "track_caller"
            | "must_use"
            | "deprecated"
            | "no_mangle"
            | "export_name"
            | "link_section"
            | "link"
            | "link_name"
            | "target_feature"
            | "repr"
            | "non_exhaustive"
            | "path"
            | "macro_use"
            | "macro_export"
            | "automatically_derived"
            | "used"
            | "global_allocator"
            | "panic_handler"
            | "no_std"
            | "no_main"
            | "unsafe"
            | "naked"
            | "coverage"
            | "instruction_set"
            | "collapse_debuginfo"
            | "debugger_visualizer"
            | "optimize"
            | "stable"
            | "unstable"
            | "rustc_const_stable"
            | "rustc_const_unstable"
            | "feature"
            | "no_implicit_prelude"
            | "rustfmt_skip"
            | "allow_internal_unstable"
            | "const_trait"
    ) || name.starts_with("rustc_")
}

fn fn_range(v: &Main, f_token: Span, block: &syn::Block) -> Range<usize> {
    v.range(f_token, block.brace_token.span.close())
}

impl<'ast> Visit<'ast> for Main<'_, '_> {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        if let Some(first) = p.segments.first() {
            let name = first.ident.to_string();
            if self.plan.roots.lookup(&name).is_some() {
                let at = self.plan.index.start(first.ident.span());
                self.plan.hints.entry(at).or_insert(self.kind);
            }
        }
        visit::visit_path(self, p);
    }

    fn visit_expr(&mut self, e: &'ast Expr) {
        if let Some(m) = atomic::marker(expr_attrs(e)) {
            let at = self.marker_at(&m);
            if self.handled_markers.insert(at) {
                self.marked_expr(e, &m, at, "expression");
                return self
                    .atomic(|v| v.with_kind(RewriteKind::ExprPath, |v| visit::visit_expr(v, e)));
            }
        }
        if let Expr::Call(c) = e {
            let array_arg = c.args.len() == 1 && matches!(c.args.first(), Some(Expr::Array(_)));
            if let Expr::Path(p) = &*c.func {
                let from = p.path.segments.last().is_some_and(|s| s.ident == "from");
                let plain = p.qself.is_none() && self.atomic_depth == 0 && self.const_depth == 0;
                if let Some((range, to, edits)) = (from && array_arg && plain)
                    .then(|| self.hash_call(&p.path, true))
                    .flatten()
                {
                    let from = abbrev(self.plan.index.slice(range.clone()));
                    self.plan
                        .change(range.start, RewriteKind::HashCall, from, to, edits);
                }
            }
        }
        if let Expr::Path(p) = e {
            if p.qself.is_none() && self.atomic_depth == 0 && self.const_depth == 0 {
                if let Some((range, to)) = self.arc_call(&p.path) {
                    let from = abbrev(self.plan.index.slice(range.clone()));
                    let edits = vec![Edit::replace(range.clone(), to.clone())];
                    self.plan
                        .change(range.start, RewriteKind::ArcCall, from, to, edits);
                    // `std::sync` ahead of it is still rewritten by the sweep.
                    return self.with_kind(RewriteKind::ExprPath, |v| visit::visit_expr(v, e));
                }
                if let Some((range, to, edits)) = self.hash_call(&p.path, false) {
                    let from = abbrev(self.plan.index.slice(range.clone()));
                    self.plan
                        .change(range.start, RewriteKind::HashCall, from, to, edits);
                    // Types in a turbofish are still rewritten.
                    return self.with_kind(RewriteKind::ExprPath, |v| visit::visit_expr(v, e));
                }
            }
        }
        self.with_kind(RewriteKind::ExprPath, |v| visit::visit_expr(v, e));
    }

    fn visit_type(&mut self, t: &'ast syn::Type) {
        self.with_kind(RewriteKind::TypePath, |v| visit::visit_type(v, t));
    }

    fn visit_type_array(&mut self, t: &'ast syn::TypeArray) {
        self.visit_type(&t.elem);
        self.constant(|v| v.visit_expr(&t.len));
    }

    fn visit_pat(&mut self, p: &'ast syn::Pat) {
        self.with_kind(RewriteKind::PatPath, |v| visit::visit_pat(v, p));
    }

    fn visit_type_param_bound(&mut self, b: &'ast syn::TypeParamBound) {
        self.with_kind(RewriteKind::BoundPath, |v| {
            visit::visit_type_param_bound(v, b)
        });
    }

    fn visit_attribute(&mut self, a: &'ast Attribute) {
        self.with_kind(RewriteKind::AttrPath, |v| visit::visit_attribute(v, a));
    }

    fn visit_vis_restricted(&mut self, r: &'ast syn::VisRestricted) {
        self.with_kind(RewriteKind::VisPath, |v| visit::visit_vis_restricted(v, r));
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.with_kind(RewriteKind::MacroPath, |v| v.visit_path(&m.path));
        if m.path.segments.last().is_some_and(|s| s.ident == "include") {
            let at = self.plan.index.start(m.path.segments[0].ident.span());
            match m.parse_body::<syn::LitStr>() {
                Ok(_) if self.plan.is_inactive(at) => {}
                Ok(lit) => {
                    let (line, column) = self.plan.index.line_col(at);
                    self.plan.external.push(ExternalRef { line, column, what: "include!", path: lit.value() });
                }
                Err(_) => self.plan.finding(
                    at,
                    FindingKind::ExternalSource,
                    "include! of a computed path (e.g. under OUT_DIR) pulls in code that is not instrumented: generate std-free code or include a file from the source tree",
                ),
            }
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let range = self.range(i.impl_token.span, i.brace_token.span.close());
        self.attr_macros(&i.attrs, range.clone());
        if let Some((bang, path, _)) = &i.trait_ {
            self.with_kind(RewriteKind::BoundPath, |v| v.visit_path(path));
            if bang.is_none() && is_drop(path) && self.plan.opts.drop_acquire {
                for item in &i.items {
                    match item {
                        syn::ImplItem::Fn(f) if f.sig.ident == "drop" => self.drop_acquire(f),
                        _ => {}
                    }
                }
            }
        }
        if atomic::marker(&i.attrs).is_some() {
            self.region(range);
            return self.atomic(|v| visit::visit_item_impl(v, i));
        }
        visit::visit_item_impl(self, i);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let range = fn_range(self, f.sig.fn_token.span, &f.block);
        self.attr_macros(&f.attrs, range.clone());
        if self.fn_depth == 0 {
            tests_wrap::visit_fn(self.plan, f);
        }
        self.fn_depth += 1;
        let is_const = f.sig.constness.is_some();
        if atomic::marker(&f.attrs).is_some() {
            self.region(range);
            self.atomic(|v| visit::visit_item_fn(v, f));
        } else if is_const {
            self.constant(|v| visit::visit_item_fn(v, f));
        } else {
            self.reactor_wait(&f.sig, &f.block);
            visit::visit_item_fn(self, f);
        }
        self.fn_depth -= 1;
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let range = fn_range(self, f.sig.fn_token.span, &f.block);
        self.attr_macros(&f.attrs, range.clone());
        if atomic::marker(&f.attrs).is_some() {
            self.region(range);
            return self.atomic(|v| visit::visit_impl_item_fn(v, f));
        }
        if f.sig.constness.is_some() {
            return self.constant(|v| visit::visit_impl_item_fn(v, f));
        }
        self.reactor_wait(&f.sig, &f.block);
        visit::visit_impl_item_fn(self, f);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let end = m.content.as_ref().map_or_else(
            || m.semi.map_or(m.ident.span(), |s| s.span),
            |(b, _)| b.span.close(),
        );
        let range = self.range(m.mod_token.span, end);
        self.attr_macros(&m.attrs, range);
        for attr in &m.attrs {
            if let syn::Meta::NameValue(nv) = &attr.meta {
                if nv.path.is_ident("path") {
                    if let Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) = &nv.value
                    {
                        let at = self.plan.index.start(attr.pound_token.span);
                        if self.plan.is_inactive(at) || self.plan.cfg_attr_off(attr) {
                            continue;
                        }
                        let (line, column) = self.plan.index.line_col(at);
                        self.plan.external.push(ExternalRef {
                            line,
                            column,
                            what: "#[path]",
                            path: s.value(),
                        });
                    }
                }
            }
        }
        visit::visit_item_mod(self, m);
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        let range = self.range(t.trait_token.span, t.brace_token.span.close());
        self.attr_macros(&t.attrs, range);
        visit::visit_item_trait(self, t);
    }

    fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
        self.constant(|v| visit::visit_item_const(v, c));
    }

    fn visit_item_static(&mut self, s: &'ast syn::ItemStatic) {
        self.constant(|v| visit::visit_item_static(v, s));
    }

    fn visit_impl_item_const(&mut self, c: &'ast syn::ImplItemConst) {
        self.constant(|v| visit::visit_impl_item_const(v, c));
    }

    fn visit_trait_item_const(&mut self, c: &'ast syn::TraitItemConst) {
        self.constant(|v| visit::visit_trait_item_const(v, c));
    }

    fn visit_expr_const(&mut self, c: &'ast syn::ExprConst) {
        self.constant(|v| visit::visit_expr_const(v, c));
    }

    fn visit_variant(&mut self, var: &'ast syn::Variant) {
        self.constant(|v| visit::visit_variant(v, var));
    }

    fn visit_item_foreign_mod(&mut self, f: &'ast syn::ItemForeignMod) {
        let at = self.plan.index.start(f.abi.extern_token.span);
        self.plan.finding(
            at,
            FindingKind::Ffi,
            "extern block: calls into foreign code are invisible to the scheduler; if they block or synchronise, mark the calls #[pulse::atomic]",
        );
        visit::visit_item_foreign_mod(self, f);
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        let last = b.stmts.len().saturating_sub(1);
        for (i, stmt) in b.stmts.iter().enumerate() {
            match stmt {
                // A block-like statement without `;` (`{..}`, `if`, `match`) becomes a call,
                // which needs one unless it is the block's value.
                syn::Stmt::Expr(e, None) if i != last && !matches!(e, Expr::Macro(_)) => {
                    if let Some(m) = atomic::marker(expr_attrs(e)) {
                        let at = self.marker_at(&m);
                        self.semi_after.insert(at);
                    }
                }
                syn::Stmt::Macro(sm) => {
                    if let Some(m) = atomic::marker(&sm.attrs) {
                        let at = self.marker_at(&m);
                        if self.handled_markers.insert(at) {
                            let braces = matches!(sm.mac.delimiter, syn::MacroDelimiter::Brace(_));
                            let semicolon = sm.semi_token.is_none() && braces && i != last;
                            if let Some(why) = atomic::escape(&Expr::Macro(syn::ExprMacro {
                                attrs: Vec::new(),
                                mac: sm.mac.clone(),
                            })) {
                                let msg = format!("#[pulse::atomic] macro statement contains {why}, which cannot move into a closure: mark a smaller expression");
                                self.plan.finding(at, FindingKind::AtomicNotWrapped, msg);
                            } else if let Some((first, last_span)) = atomic::bounds(&sm.mac) {
                                let range = self.range(first, last_span);
                                self.wrap(range, RewriteKind::Atomic, Some(&m), semicolon);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        visit::visit_block(self, b);
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        if let Some(m) = atomic::marker(&l.attrs) {
            let at = self.marker_at(&m);
            if self.handled_markers.insert(at) {
                match &l.init {
                    Some(init) => {
                        self.marked_expr(&init.expr, &m, at, "initializer");
                        return self.atomic(|v| visit::visit_local(v, l));
                    }
                    None => self.plan.finding(
                        at,
                        FindingKind::AtomicNotWrapped,
                        "#[pulse::atomic] on a `let` without an initializer: nothing to wrap",
                    ),
                }
            }
        }
        visit::visit_local(self, l);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        let Expr::Path(p) = &*c.func else {
            return visit::visit_expr_call(self, c);
        };
        if p.qself.is_some() {
            return visit::visit_expr_call(self, c);
        }
        let segs = self.call_path(&p.path);
        if self.is_pulse_atomic_call(&segs) {
            return self.atomic(|v| visit::visit_expr_call(v, c));
        }
        if segs.last().is_some_and(|s| s == "__pulse_file_time") {
            // Passed through already (instrumenting twice changes nothing): the file-time
            // call inside is visited, not wrapped again.
            for arg in &c.args {
                match arg {
                    Expr::MethodCall(inner) => visit::visit_expr_method_call(self, inner),
                    other => self.visit_expr(other),
                }
            }
            return;
        }
        if self.atomic_depth == 0
            && self.const_depth == 0
            && segs.last().is_some_and(|s| s == "syscall")
            && c.args.first().is_some_and(is_sys_futex)
        {
            self.futex_call(&p.path, c);
            for arg in &c.args {
                self.visit_expr(arg);
            }
            return;
        }
        if let Some(last) = segs.last() {
            if self.plan.foreign_fns.contains(last) {
                let at = self.plan.index.start(p.path.segments[0].ident.span());
                let msg = format!("`{last}` is a foreign function: the scheduler cannot see inside it; if it blocks or synchronises, mark the call #[pulse::atomic]");
                self.plan.finding(at, FindingKind::Ffi, msg);
            }
        }
        if self.atomic_depth == 0 && self.const_depth == 0 && !self.patterns.is_empty() {
            let plan = &*self.plan;
            if self
                .patterns
                .matches_call(&segs, &plan.imports, &plan.glob_imports)
            {
                let first = p
                    .path
                    .leading_colon
                    .map_or(p.path.segments[0].ident.span(), |c| c.spans[0]);
                let range = self.range(first, c.paren_token.span.close());
                match c.args.iter().find_map(atomic::escape) {
                    Some(why) => {
                        let msg = format!("`{}` is listed as atomic but its arguments contain {why}: not wrapped; hoist the argument into a `let`", segs.join("::"));
                        self.plan
                            .finding(range.start, FindingKind::AtomicNotWrapped, msg);
                    }
                    None => {
                        self.wrap(range, RewriteKind::AtomicCall, None, false);
                        return self.atomic(|v| visit::visit_expr_call(v, c));
                    }
                }
            }
        }
        visit::visit_expr_call(self, c);
    }

    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        if self.const_depth > 0
            && paths::is_shim_module(Crate::Std, "sync", &self.plan.opts.std_modules)
        {
            self.const_assign(a);
        }
        visit::visit_expr_assign(self, a);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if m.method == "upgrade"
            && m.args.is_empty()
            && m.turbofish.is_none()
            && self.atomic_depth == 0
            && self.const_depth == 0
            && self.names_std_weak()
            && !is_arc_ops_call(&m.receiver)
        {
            if let Some((a, b)) = atomic::bounds(&*m.receiver) {
                let receiver = self.range(a, b);
                let call = self.range(a, m.paren_token.span.close());
                let ops = format!("{}::sync::arc_ops", self.plan.shim);
                let open = format!("{ops}::returned({ops}::receiver(&");
                let from = abbrev(self.plan.index.slice(call.clone()));
                let to = format!(
                    "{open}{}).upgrade())",
                    abbrev(self.plan.index.slice(receiver.clone()))
                );
                let edits = vec![
                    Edit::insert(call.start, open, order::ATOMIC_OPEN),
                    Edit::insert(receiver.end, ")", order::ATOMIC_OPEN),
                    Edit::insert(call.end, ")", order::ATOMIC_CLOSE),
                ];
                self.plan
                    .change(call.start, RewriteKind::ArcMethod, from, to, edits);
            }
        }
        if matches!(
            m.method.to_string().as_str(),
            "modified" | "accessed" | "created"
        ) && m.args.is_empty()
            && m.turbofish.is_none()
            && self.const_depth == 0
            && paths::is_shim_module(Crate::Std, "time", &self.plan.opts.std_modules)
        {
            self.file_time(m);
        }
        if matches!(
            m.method.to_string().as_str(),
            "set_modified" | "set_accessed" | "set_created"
        ) && m.args.len() == 1
            && m.turbofish.is_none()
            && self.const_depth == 0
            && paths::is_shim_module(Crate::Std, "time", &self.plan.opts.std_modules)
        {
            self.file_time_argument(m);
        }
        if m.method == "duration_since"
            && m.turbofish.is_none()
            && self.const_depth == 0
            && !is_system_time_now_or_wrapped(&m.receiver)
        {
            if let [Expr::Path(arg)] = m.args.iter().collect::<Vec<_>>().as_slice() {
                if arg.qself.is_none() && self.is_std_unix_epoch(&arg.path) {
                    self.system_time_receiver(m);
                }
            }
        }
        if self.atomic_depth == 0
            && self.const_depth == 0
            && self.patterns.matches_method(&m.method.to_string())
        {
            let escape =
                atomic::escape(&m.receiver).or_else(|| m.args.iter().find_map(atomic::escape));
            let start = atomic::bounds(&*m.receiver).map(|(a, _)| a);
            match (escape, start) {
                (None, Some(start)) => {
                    let range = self.range(start, m.paren_token.span.close());
                    self.wrap(range, RewriteKind::AtomicMethod, None, false);
                    return self.atomic(|v| visit::visit_expr_method_call(v, m));
                }
                (Some(why), _) => {
                    let at = self.plan.index.start(m.method.span());
                    let msg = format!("`.{}(..)` matches an atomic entry by method name but contains {why}: not wrapped", m.method);
                    self.plan.finding(at, FindingKind::AtomicNotWrapped, msg);
                }
                _ => {}
            }
        }
        visit::visit_expr_method_call(self, m);
    }
}

impl Main<'_, '_> {
    /// `place[i] = value` or `place.field = value` in a `const` context: the old value is
    /// dropped, and pulse's atomics have a `Drop` (decision 34), so a `const fn` that
    /// overwrites a struct holding one no longer compiled (E0493; heapless 0.9.4's
    /// `mpmc::QueueInner::new`). It becomes `{ let _ = ::core::mem::ManuallyDrop::new(
    /// ::core::mem::replace(&mut place[i], value)); }`, which drops nothing: the same for
    /// every value that compiles in a `const` context against std. (`mem::forget` of a
    /// `Copy` value, a pointer or a count, trips rustc's `forgetting_copy_types` lint, an
    /// error under sdd's `#![deny(warnings)]`.) Left alone where `value` names the place's root (the
    /// `&mut` would be taken first) or the place is a local (it may be a deferred
    /// initialisation).
    fn const_assign(&mut self, a: &syn::ExprAssign) {
        use quote::ToTokens;
        let Some(root) = place_root(&a.left) else {
            return;
        };
        if names_ident(a.right.to_token_stream(), &root) {
            return;
        }
        let (Some((start, _)), Some((_, end))) =
            (atomic::bounds(&*a.left), atomic::bounds(&*a.right))
        else {
            return;
        };
        let whole = self.range(start, end);
        let eq = self.range(a.eq_token.span, a.eq_token.span);
        let open = "{ let _ = ::core::mem::ManuallyDrop::new(::core::mem::replace(&mut ";
        let close = ")); }";
        let from = abbrev(self.plan.index.slice(whole.clone()));
        let to = format!("{open}.., ..{close}");
        let edits = vec![
            Edit::insert(whole.start, open, order::ATOMIC_OPEN),
            Edit::replace(eq, ","),
            Edit::insert(whole.end, close, order::ATOMIC_CLOSE),
        ];
        self.plan
            .change(whole.start, RewriteKind::ConstAssign, from, to, edits);
    }

    /// `fn drop(&mut self) {` of a `Drop` impl gets `<shim>::sync::atomic::
    /// __pulse_drop_acquire(&*self);` first, on the brace's line: the memory model learns
    /// that the dropping thread has every other owner's accesses behind it, which the last
    /// of std's `Arc`s going does not tell it (ARCHITECTURE decision 49).
    fn drop_acquire(&mut self, f: &syn::ImplItemFn) {
        const NAME: &str = "__pulse_drop_acquire";
        let done = f.block.stmts.first().is_some_and(|s| {
            matches!(s, syn::Stmt::Expr(Expr::Call(c), _)
                if matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == NAME)))
        });
        if done {
            return;
        }
        let call = format!("{}::sync::atomic::{NAME}(&*self);", self.plan.shim);
        self.insert_first(&f.sig, &f.block, call, RewriteKind::DropAcquire);
    }

    /// Puts `line` first in a fn's `block`, on its brace's line (no line moves), reported
    /// at the fn's head as `kind`.
    fn insert_first(
        &mut self,
        sig: &syn::Signature,
        block: &syn::Block,
        line: String,
        kind: RewriteKind,
    ) {
        let after_brace = self.plan.index.end(block.brace_token.span.open());
        let head = self.range(sig.fn_token.span, block.brace_token.span.open());
        let from = abbrev(self.plan.index.slice(head.clone()));
        let to = format!("{from} {line}");
        let edits = vec![Edit::insert(
            after_brace,
            format!(" {line}"),
            order::ATOMIC_OPEN,
        )];
        self.plan.change(head.start, kind, from, to, edits);
    }

    /// A function that waits in rustix's `epoll::wait` for a limit it takes (polling 3's)
    /// gets `let limit = <shim>::libc::ready_by(&(fd), limit);` first, on the brace's line
    /// (`reactor_wait`).
    fn reactor_wait(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let Some(wait) = reactor_wait::find(sig, block) else {
            return;
        };
        let Some((first, last)) = atomic::bounds(wait.fd) else {
            return;
        };
        let fd = self.plan.index.slice(self.range(first, last)).to_owned();
        let limit = wait.limit;
        let binding = if wait.mutable { "let mut" } else { "let" };
        let line = format!(
            "#[cfg(any(target_os = \"linux\", target_os = \"android\"))] {binding} {limit} = \
             {}::libc::{}(&({fd}), {limit});",
            self.plan.shim,
            reactor_wait::READY_BY,
        );
        self.insert_first(sig, block, line, RewriteKind::ReactorWait);
    }

    /// `recv.modified()` (or `accessed`, `created`): std's `fs::Metadata` answers with std's
    /// `SystemTime`, which meets pulse's where the code has both (`m.modified()
    /// .unwrap_or_else(|_| SystemTime::now())`, a field of pulse's type). It becomes
    /// `<shim>::time::__pulse_file_time(recv.modified()).__pulse_into()`, which gives
    /// pulse's `SystemTime` for std's (in an `io::Result` or not) and any other type's value
    /// as it is: the receiver's type is unknown here.
    fn file_time(&mut self, m: &syn::ExprMethodCall) {
        let Some((a, _)) = atomic::bounds(&*m.receiver) else {
            return;
        };
        let call = self.range(a, m.paren_token.span.close());
        let open = format!("{}::time::__pulse_file_time(", self.plan.shim);
        let from = abbrev(self.plan.index.slice(call.clone()));
        let to = format!("{open}{from}).__pulse_into()");
        let edits = vec![
            Edit::insert(call.start, open, order::ATOMIC_OPEN),
            Edit::insert(call.end, ").__pulse_into()", order::ATOMIC_CLOSE),
        ];
        self.plan
            .change(call.start, RewriteKind::FileTime, from, to, edits);
    }

    /// `times.set_modified(t)` (or `set_accessed`, `set_created`): std's `fs::FileTimes` and
    /// `File::set_modified` take std's `SystemTime`, and a `t` of the instrumented crate's
    /// is pulse's (tokio 1.54's `fs/file_times.rs` did not compile). The argument becomes
    /// `<shim>::time::__pulse_time_arg(t)`, an `Into` to whatever the method takes: std's
    /// from pulse's, or the same type (the crate's own setter of pulse's `SystemTime`).
    fn file_time_argument(&mut self, m: &syn::ExprMethodCall) {
        let Some(arg) = m.args.first() else { return };
        // Passed through already: instrumenting twice changes nothing.
        if let Expr::Call(c) = arg {
            if matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "__pulse_time_arg"))
            {
                return;
            }
        }
        let Some((a, b)) = atomic::bounds(arg) else {
            return;
        };
        let typed_by_context = typed_by_context(arg);
        let arg = self.range(a, b);
        // An argument whose type came from the parameter (`stamp.into()`, filetime 0.2's
        // `FileTimes::set_accessed`) has none of its own inside the pass-through: it is
        // made pulse's `SystemTime`, whatever the method takes.
        let open = match typed_by_context {
            true => format!(
                "{0}::time::__pulse_time_arg::<{0}::time::SystemTime, _>(",
                self.plan.shim
            ),
            false => format!("{}::time::__pulse_time_arg(", self.plan.shim),
        };
        let from = abbrev(self.plan.index.slice(arg.clone()));
        let to = format!("{open}{from})");
        let edits = vec![
            Edit::insert(arg.start, open, order::ATOMIC_OPEN),
            Edit::insert(arg.end, ")", order::ATOMIC_CLOSE),
        ];
        self.plan
            .change(arg.start, RewriteKind::FileTime, from, to, edits);
    }

    /// `recv.duration_since(UNIX_EPOCH)`: std's `duration_since` takes only std's
    /// `SystemTime`, and `UNIX_EPOCH` becomes pulse's, so a receiver of std's type (a file's
    /// `modified()`) would no longer compile. It becomes
    /// `<shim>::time::__pulse_system_time(recv).duration_since(UNIX_EPOCH)`, which takes
    /// std's or pulse's `SystemTime` (or a reference to one) as pulse's.
    fn system_time_receiver(&mut self, m: &syn::ExprMethodCall) {
        let Some((a, b)) = atomic::bounds(&*m.receiver) else {
            return;
        };
        let receiver = self.range(a, b);
        let call = self.range(a, m.paren_token.span.close());
        let open = format!("{}::time::__pulse_system_time(", self.plan.shim);
        let from = abbrev(self.plan.index.slice(call.clone()));
        let to = format!(
            "{open}{}).duration_since(..)",
            abbrev(self.plan.index.slice(receiver.clone()))
        );
        let edits = vec![
            Edit::insert(receiver.start, open, order::ATOMIC_OPEN),
            Edit::insert(receiver.end, ")", order::ATOMIC_CLOSE),
        ];
        self.plan
            .change(call.start, RewriteKind::SystemTimeReceiver, from, to, edits);
    }
}

/// The variable at the root of an indexed or field place (`a` of `a.b[i].c`, `self` of
/// `self.x`); `None` for a local itself or a place reached otherwise (`*p`, a call's result).
fn place_root(e: &Expr) -> Option<proc_macro2::Ident> {
    let mut e = match e {
        Expr::Index(i) => &*i.expr,
        Expr::Field(f) => &*f.base,
        _ => return None,
    };
    loop {
        match e {
            Expr::Index(i) => e = &i.expr,
            Expr::Field(f) => e = &f.base,
            Expr::Paren(p) => e = &p.expr,
            Expr::Path(p) if p.qself.is_none() => return p.path.get_ident().cloned(),
            _ => return None,
        }
    }
}

/// Whether `e` is `SystemTime::now()` (pulse's already, once rewritten: nothing to convert)
/// or a receiver the instrumenter wrapped before (instrumenting twice changes nothing).
fn is_system_time_now_or_wrapped(e: &Expr) -> bool {
    let Some((segs, args)) = called_path(e) else {
        return false;
    };
    segs.ends_with(&["SystemTime".into(), "now".into()]) && args == 0
        || segs.last().is_some_and(|s| s == "__pulse_system_time")
}

/// `e` as a call of a path (`a::b::f(..)`): the path's segments and the number of arguments.
pub(crate) fn called_path(e: &Expr) -> Option<(Vec<String>, usize)> {
    let Expr::Call(c) = e else { return None };
    let Expr::Path(p) = &*c.func else {
        return None;
    };
    let segs = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    Some((segs, c.args.len()))
}

/// Reports attribute macros once the sweep has decided which paths it rewrote.
pub(crate) fn finalize(plan: &mut Plan) {
    for site in std::mem::take(&mut plan.attr_macros) {
        let msg = if site.always {
            format!("`#[{}]` starts an async runtime with its own threads and timers, which pulse does not schedule: test the synchronous core with a plain #[test]", site.path)
        } else if plan
            .changes
            .iter()
            .any(|c| site.item.contains(&c.at) && is_path_kind(c.kind))
        {
            format!("attribute macro `#[{}]` expands after instrumentation: it receives the rewritten paths, but std::sync/thread/time code it generates itself is not rewritten", site.path)
        } else {
            continue;
        };
        plan.finding(site.at, FindingKind::AttributeMacro, msg);
    }
}

/// Declares the facade crate in an edition-2015 crate root (see `Options::declare_facade`).
/// A file that declares the facade already is left alone.
pub(crate) fn declare_facade(plan: &mut Plan, file: &syn::File) {
    let name = plan
        .pulse
        .trim_start_matches("::")
        .split("::")
        .next()
        .unwrap_or("pulse")
        .to_owned();
    let declared = file
        .items
        .iter()
        .any(|i| matches!(i, syn::Item::ExternCrate(e) if e.rename.is_none() && e.ident == name));
    if !declared {
        let text = format!(" #[allow(unused_extern_crates)] extern crate {name};");
        append_item(plan, file, text, order::EXTERN_CRATE);
    }
}

/// Re-exports the facade in a crate root for the crate's `#[macro_export]` macro bodies (see
/// `Options::crate_root`): ` #[doc(hidden)] pub extern crate pulse as __pulse;`. `pub extern
/// crate` rather than `pub use`: an edition-2015 crate cannot re-export its private `extern
/// crate pulse;`, and the item trips no lint (`unused_extern_crates`, `missing_docs`,
/// `unreachable_pub`) in any edition or target kind. A file that has it already is left alone.
pub(crate) fn declare_macro_facade(plan: &mut Plan, file: &syn::File) {
    let Some(krate) = plan.macro_facade.clone() else {
        return;
    };
    let declared = file.items.iter().any(|i| {
        matches!(i, syn::Item::ExternCrate(e)
            if e.rename.as_ref().is_some_and(|(_, r)| r == crate::MACRO_FACADE))
    });
    if !declared {
        let text = format!(
            " #[doc(hidden)] pub extern crate {krate} as {};",
            crate::MACRO_FACADE
        );
        append_item(plan, file, text, order::MACRO_FACADE);
    }
}

/// Appends an `extern crate` item after the file's last item's last token, so it lands on
/// that item's line, after any code and before any trailing comment: no line moves. A file
/// with no items (nothing in it can name the crate) is left alone.
fn append_item(plan: &mut Plan, file: &syn::File, text: String, order: u8) {
    use quote::ToTokens;
    let Some(token) = file
        .items
        .last()
        .and_then(|last| last.to_token_stream().into_iter().last())
    else {
        return;
    };
    let at = plan.index.end(token.span());
    plan.change(
        at,
        RewriteKind::ExternCrate,
        String::new(),
        text.trim_start().to_owned(),
        vec![Edit::insert(at, text, order)],
    );
}

fn is_path_kind(kind: RewriteKind) -> bool {
    !matches!(
        kind,
        RewriteKind::ExternCrate
            | RewriteKind::TestWrapped
            | RewriteKind::Atomic
            | RewriteKind::AtomicCall
            | RewriteKind::AtomicMethod
            | RewriteKind::ArcCall
            | RewriteKind::HashCall
            | RewriteKind::ArcMethod
            | RewriteKind::SystemTimeReceiver
            | RewriteKind::FileTime
            | RewriteKind::ConstAssign
            | RewriteKind::AsmFence
            | RewriteKind::DropAcquire
            | RewriteKind::FutexCall
            | RewriteKind::LibcCall
            | RewriteKind::ReactorWait
    )
}

/// Whether `e` names Linux's futex system call number (`libc::SYS_futex`, `SYS_futex`,
/// also cast: `SYS_futex as c_long`).
fn is_sys_futex(e: &Expr) -> bool {
    match e {
        Expr::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "SYS_futex"),
        Expr::Cast(c) => is_sys_futex(&c.expr),
        Expr::Paren(p) => is_sys_futex(&p.expr),
        _ => false,
    }
}

/// Whether an impl's trait is `Drop` (`Drop`, `ops::Drop`, `core::ops::Drop`, ...).
fn is_drop(path: &syn::Path) -> bool {
    path.segments
        .last()
        .is_some_and(|s| s.ident == "Drop" && s.arguments.is_none())
}

/// Whether `e` is a call into the shim's `arc_ops` already (instrumenting twice changes
/// nothing).
fn is_arc_ops_call(e: &Expr) -> bool {
    called_path(e).is_some_and(|(segs, _)| segs.len() >= 2 && segs[segs.len() - 2] == "arc_ops")
}

/// Whether `tokens` name `ident` anywhere, inside groups too (`((self.0).0[6] & 0x0f)`).
fn names_ident(tokens: proc_macro2::TokenStream, ident: &proc_macro2::Ident) -> bool {
    tokens.into_iter().any(|t| match t {
        proc_macro2::TokenTree::Ident(i) => i == *ident,
        proc_macro2::TokenTree::Group(g) => names_ident(g.stream(), ident),
        _ => false,
    })
}

/// The shim's trait that keys a constructor of std's hash collections that picks its own
/// `RandomState` (`shim-std/src/collections/hash_ops.rs`), and the type's parameters to
/// infer when none are written. `default()` and `from_iter` are generic over the hasher and
/// stay std's.
fn hash_trait(ty: &str, op: &str) -> Option<(&'static str, &'static str)> {
    Some(match (ty, op) {
        ("HashMap", "new" | "with_capacity" | "from") => ("KeyedMap", "<_, _>"),
        ("HashSet", "new" | "with_capacity" | "from") => ("KeyedMap", "<_>"),
        ("RandomState", "new" | "default") => ("KeyedState", ""),
        _ => return None,
    })
}

/// The shim's visible twin of `Type::op` on std's `Arc`/`Weak`, if it has one.
fn arc_twin(ty: &str, op: &str) -> Option<&'static str> {
    Some(match (ty, op) {
        ("Arc", "strong_count") => "strong_count",
        ("Arc", "weak_count") => "weak_count",
        ("Arc", "get_mut") => "get_mut",
        ("Arc", "make_mut") => "make_mut",
        ("Arc", "try_unwrap") => "try_unwrap",
        ("Arc", "into_inner") => "into_inner",
        ("Weak", "upgrade") => "weak::upgrade",
        ("Weak", "strong_count") => "weak::strong_count",
        ("Weak", "weak_count") => "weak::weak_count",
        _ => return None,
    })
}

/// The outer attributes of any expression.
pub(crate) fn expr_attrs(e: &Expr) -> &[Attribute] {
    match e {
        Expr::Array(x) => &x.attrs,
        Expr::Assign(x) => &x.attrs,
        Expr::Async(x) => &x.attrs,
        Expr::Await(x) => &x.attrs,
        Expr::Binary(x) => &x.attrs,
        Expr::Block(x) => &x.attrs,
        Expr::Break(x) => &x.attrs,
        Expr::Call(x) => &x.attrs,
        Expr::Cast(x) => &x.attrs,
        Expr::Closure(x) => &x.attrs,
        Expr::Const(x) => &x.attrs,
        Expr::Continue(x) => &x.attrs,
        Expr::Field(x) => &x.attrs,
        Expr::ForLoop(x) => &x.attrs,
        Expr::Group(x) => &x.attrs,
        Expr::If(x) => &x.attrs,
        Expr::Index(x) => &x.attrs,
        Expr::Infer(x) => &x.attrs,
        Expr::Let(x) => &x.attrs,
        Expr::Lit(x) => &x.attrs,
        Expr::Loop(x) => &x.attrs,
        Expr::Macro(x) => &x.attrs,
        Expr::Match(x) => &x.attrs,
        Expr::MethodCall(x) => &x.attrs,
        Expr::Paren(x) => &x.attrs,
        Expr::Path(x) => &x.attrs,
        Expr::Range(x) => &x.attrs,
        Expr::RawAddr(x) => &x.attrs,
        Expr::Reference(x) => &x.attrs,
        Expr::Repeat(x) => &x.attrs,
        Expr::Return(x) => &x.attrs,
        Expr::Struct(x) => &x.attrs,
        Expr::Try(x) => &x.attrs,
        Expr::TryBlock(x) => &x.attrs,
        Expr::Tuple(x) => &x.attrs,
        Expr::Unary(x) => &x.attrs,
        Expr::Unsafe(x) => &x.attrs,
        Expr::While(x) => &x.attrs,
        Expr::Yield(x) => &x.attrs,
        _ => &[],
    }
}

/// Whether an expression's type is inferred from where it goes: a conversion into it
/// (`x.into()`, `x.try_into()?`, `Into::into(x)`, `From::from(x)`) or
/// `Default::default()`.
fn typed_by_context(e: &Expr) -> bool {
    match e {
        Expr::Paren(p) => typed_by_context(&p.expr),
        Expr::Try(t) => {
            matches!(&*t.expr, Expr::MethodCall(m) if m.method == "try_into" && m.turbofish.is_none())
        }
        Expr::MethodCall(m) => m.method == "into" && m.args.is_empty() && m.turbofish.is_none(),
        Expr::Call(c) => match &*c.func {
            // `Into::into`, `From::from`, `Default::default` (any prefix, no generics): not
            // `SystemTime::from`, whose type is its own.
            Expr::Path(p) if p.qself.is_none() => {
                let mut last = p.path.segments.iter().rev();
                let pair = last
                    .next()
                    .zip(last.next())
                    .filter(|(f, t)| f.arguments.is_none() && t.arguments.is_none());
                pair.is_some_and(|(f, t)| {
                    matches!(
                        (t.ident.to_string().as_str(), f.ident.to_string().as_str()),
                        ("Into", "into") | ("From", "from") | ("Default", "default")
                    )
                })
            }
            _ => false,
        },
        _ => false,
    }
}
