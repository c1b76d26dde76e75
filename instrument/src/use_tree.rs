//! Rewriting `use` trees, whose groups may mix shim and non-shim std modules.
//!
//! `use std::sync::Mutex;` only needs its root swapped. A group that mixes
//! (`use std::{sync::Arc, collections::HashMap};`) is split in place without touching any
//! newline: the `std::` before the group is deleted and every item gets its own root,
//! giving `use {::pulse::std::sync::Arc, std::collections::HashMap};` (a rootless group is
//! valid since edition 2018).

use crate::paths::{self, Crate};
use crate::plan::{abbrev, Plan};
use crate::report::{FindingKind, RewriteKind};
use crate::textedit::Edit;
use proc_macro2::Span;
use std::ops::Range;
use syn::spanned::Spanned;
use syn::UseTree;

/// Plans the rewrite of one `use` tree. `leading` is the byte range of a `::` written before
/// the tree (`use ::std::sync::Arc;`).
pub(crate) fn rewrite(plan: &mut Plan, tree: &UseTree, leading: Option<Range<usize>>) {
    at_root(plan, tree, leading, false);
}

/// `tree` sits where a path starts. `implicit` means it is inside a `::{..}` group, so a root
/// written there is already crate-rooted and takes the shim root without its leading `::`.
fn at_root(plan: &mut Plan, tree: &UseTree, leading: Option<Range<usize>>, implicit: bool) {
    match tree {
        UseTree::Group(g) => {
            for item in &g.items {
                at_root(plan, item, None, implicit || leading.is_some());
            }
        }
        // `use self::std::sync::Once;` where this module says `extern crate std;` (lazy_static
        // 1.x's `inline_lazy.rs`, in a `no_std` crate): `self::` roots the path as `::` would.
        UseTree::Path(p)
            if p.ident == "self"
                && leading.is_none()
                && !implicit
                && matches!(&*p.tree, UseTree::Path(q)
                    if plan.roots.declared_at(&q.ident.to_string(), plan.index.start(q.ident.span()))) =>
        {
            let start = plan.index.start(p.ident.span());
            let end = plan.index.end(p.colon2_token.spans[1]);
            at_root(plan, &p.tree, Some(start..end), false);
        }
        UseTree::Path(p) => {
            let name = p.ident.to_string();
            let next = first_ident(&p.tree);
            let relative = leading.is_none() && !implicit;
            let ident_at = plan.index.start(p.ident.span());
            let krate = plan
                .roots
                .lookup(&name)
                .filter(|_| !(relative && plan.shadowed_use(&name, next.as_deref(), ident_at)));
            let Some(krate) = krate else {
                // (In edition 2015 a `use` path starts at the crate root: a module's own item
                // does not hide a crate there.)
                let hideable = relative && !plan.opts.edition_2015;
                if let Some((foreign, msg)) =
                    plan.foreign_sync(&name, next.as_deref(), ident_at, hideable)
                {
                    let at = ident_at;
                    let path = format!("{name}::{}", next.unwrap_or_default());
                    let msg = if foreign == name {
                        format!("`use {path}`: {msg}")
                    } else {
                        format!("`use {path}` (`{name}` is `{foreign}`): {msg}")
                    };
                    plan.finding(at, FindingKind::ForeignSync, msg);
                }
                return;
            };
            let ident = plan.index.start(p.ident.span())..plan.index.end(p.ident.span());
            let root = leading.as_ref().map_or(ident.start, |l| l.start)..ident.end;
            let shim = shim_text(plan, implicit);
            match &*p.tree {
                UseTree::Glob(g) => {
                    if krate == Crate::Std {
                        let at = plan.index.start(g.star_token.span);
                        plan.finding(
                            at,
                            FindingKind::StdGlob,
                            "`use std::*` imports std's sync/thread/time modules unrewritten: import the modules you use by name",
                        );
                    }
                }
                UseTree::Group(g) => {
                    split_group(plan, krate, &name, root, p.colon2_token.spans[1], g, &shim)
                }
                leaf => {
                    let module = next.unwrap_or_default();
                    if paths::is_shim_module(krate, &module, &plan.opts.std_modules) {
                        let end = end_of(plan, leaf);
                        let to = format!("{shim}{}", plan.index.slice(root.end..end));
                        let from = abbrev(plan.index.slice(root.start..end));
                        plan.change(
                            root.start,
                            RewriteKind::UsePath,
                            from,
                            abbrev(&to),
                            vec![Edit::replace(root.clone(), shim)],
                        );
                    } else {
                        unscheduled(plan, krate, &name, leaf, root.start);
                    }
                }
            }
        }
        // `use std as s;` and `use std;` bring no module in; aliases were collected earlier.
        UseTree::Name(_) | UseTree::Rename(_) | UseTree::Glob(_) => {}
    }
}

/// `<root>::{a, b, ..}`: swap the root when every item goes to the shim, split when mixed.
#[allow(clippy::too_many_arguments)]
fn split_group(
    plan: &mut Plan,
    krate: Crate,
    root_name: &str,
    root: Range<usize>,
    colon2_end: Span,
    group: &syn::UseGroup,
    shim: &str,
) {
    let mut leaves = Vec::new();
    flatten(group, &mut leaves);
    let shim_leaves = leaves
        .iter()
        .filter(|l| {
            first_ident(l).is_some_and(|m| paths::is_shim_module(krate, &m, &plan.opts.std_modules))
        })
        .count();
    for leaf in &leaves {
        let at = plan.index.start(leaf.span());
        match first_ident(leaf) {
            Some(_) => unscheduled(plan, krate, root_name, leaf, at),
            None if krate == Crate::Std => plan.finding(
                at,
                FindingKind::StdGlob,
                "`use std::{*}` imports std's sync/thread/time modules unrewritten: import the modules you use by name",
            ),
            None => {}
        }
    }
    let whole = root.start..plan.index.end(group.brace_token.span.close());
    let from = abbrev(plan.index.slice(whole.clone()));
    if shim_leaves == 0 {
        return;
    }
    let edits = if shim_leaves == leaves.len() {
        vec![Edit::replace(root.clone(), shim)]
    } else {
        let root_text = plan.index.slice(root.clone()).to_owned();
        let mut edits = vec![Edit::replace(root.start..plan.index.end(colon2_end), "")];
        for leaf in &leaves {
            let at = plan.index.start(leaf.span());
            match leaf {
                UseTree::Name(n) if n.ident == "self" => {
                    edits.push(Edit::replace(
                        at..plan.index.end(n.ident.span()),
                        root_text.clone(),
                    ));
                }
                UseTree::Rename(r) if r.ident == "self" => {
                    edits.push(Edit::replace(
                        at..plan.index.end(r.ident.span()),
                        root_text.clone(),
                    ));
                }
                _ => {
                    let goes_to_shim = first_ident(leaf)
                        .is_some_and(|m| paths::is_shim_module(krate, &m, &plan.opts.std_modules));
                    let prefix = if goes_to_shim {
                        format!("{shim}::")
                    } else {
                        format!("{root_text}::")
                    };
                    edits.push(Edit::insert(at, prefix, 50));
                }
            }
        }
        edits
    };
    let to = abbrev(&plan.render(whole, &edits));
    plan.change(root.start, RewriteKind::UsePath, from, to, edits);
}

/// The items of a group, with nested rootless groups (`{{a, b}, c}`) flattened.
fn flatten<'t>(group: &'t syn::UseGroup, out: &mut Vec<&'t UseTree>) {
    for item in &group.items {
        match item {
            UseTree::Group(g) => flatten(g, out),
            other => out.push(other),
        }
    }
}

fn first_ident(tree: &UseTree) -> Option<String> {
    match tree {
        UseTree::Path(p) => Some(p.ident.to_string()),
        UseTree::Name(n) => Some(n.ident.to_string()),
        UseTree::Rename(r) => Some(r.ident.to_string()),
        UseTree::Glob(_) | UseTree::Group(_) => None,
    }
}

fn end_of(plan: &Plan, tree: &UseTree) -> usize {
    plan.index.end(tree.span())
}

fn shim_text(plan: &Plan, implicit: bool) -> String {
    if implicit {
        plan.shim.trim_start_matches("::").to_owned()
    } else {
        plan.shim.clone()
    }
}

/// Reports `use <root>::<module>..` of a std module pulse does not schedule; `tree` starts at
/// the module.
fn unscheduled(plan: &mut Plan, krate: Crate, root: &str, tree: &UseTree, at: usize) {
    let Some(module) = first_ident(tree) else {
        return;
    };
    let mut items = Vec::new();
    items_after_module(tree, &mut items);
    // A re-export names its items for others and calls none; a module it re-exports is
    // still reported here, since calls through it are not followed.
    let found = (items.iter())
        .filter(|item| !plan.in_reexport || matches!(item, UseItem::Module))
        .find_map(|item| paths::std_unscheduled(krate, &module, item.as_item()));
    if let Some((kind, msg)) = found {
        if !plan.in_atomic_region(at) && !plan.patterns.covers_module(&[root, &module]) {
            plan.finding(at, kind, format!("`use {root}::{module}`: {msg}"));
        }
    }
}

/// What a `use` brings in from the module `tree` starts at.
enum UseItem {
    Named(String),
    Module,
    Any,
}

impl UseItem {
    fn as_item(&self) -> paths::Item<'_> {
        match self {
            UseItem::Named(n) => paths::Item::Named(n),
            UseItem::Module => paths::Item::Module,
            UseItem::Any => paths::Item::Any,
        }
    }
}

fn items_after_module(tree: &UseTree, out: &mut Vec<UseItem>) {
    let UseTree::Path(p) = tree else {
        // `use std::process;` / `use std::process as p;`: the module itself.
        out.push(UseItem::Module);
        return;
    };
    fn collect(tree: &UseTree, out: &mut Vec<UseItem>) {
        match tree {
            UseTree::Name(n) if n.ident == "self" => out.push(UseItem::Module),
            UseTree::Rename(r) if r.ident == "self" => out.push(UseItem::Module),
            UseTree::Name(n) => out.push(UseItem::Named(n.ident.to_string())),
            UseTree::Rename(r) => out.push(UseItem::Named(r.ident.to_string())),
            UseTree::Path(p) => out.push(UseItem::Named(p.ident.to_string())),
            UseTree::Glob(_) => out.push(UseItem::Any),
            UseTree::Group(g) => g.items.iter().for_each(|t| collect(t, out)),
        }
    }
    collect(&p.tree, out);
}
