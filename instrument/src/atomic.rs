//! Atomic sections: `#[pulse::atomic]` markers on statements and expressions, and calls
//! listed in `[package.metadata.pulse] atomic`, become `::pulse::atomic(|| ..)`, so the
//! scheduler treats them as one step (paper §5.3, side-effect declarations).
//!
//! Rules:
//! - a marker on a fn or impl is left for the `pulse-macros` attribute;
//! - a marker on a statement or expression is blanked (spaces, lines kept) and the
//!   expression wrapped; for `let` the initializer is wrapped; a trailing `?` stays outside
//!   the closure (`f()?` -> `::pulse::atomic(|| f())?`);
//! - an expression that would leave the closure (`return`, `?` inside, `break`/`continue`
//!   to an outer loop, `.await`, `yield`) is not wrapped but reported;
//! - an `atomic` entry `a::b::c` matches a call whose written path, or whose path after
//!   expanding the first segment through the file's `use`s, is `a::b::c`; a last segment
//!   ending in `*` matches any rest (`std::fs::*`, `mydb::read_*`);
//! - an entry `path::Type::method` (second-to-last segment capitalised) also wraps every
//!   method call `.method(..)`, whatever the receiver: reported as "wrapped by method name";
//! - nothing is wrapped inside an atomic section already (marked items, wrapped
//!   expressions, `::pulse::atomic(..)` calls), nor in const contexts.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::{HashMap, HashSet};
use syn::punctuated::Punctuated;
use syn::visit::Visit;
use syn::{Attribute, Expr, Meta, Token};

/// The atomic markers on a node: the (first, last) token spans of every piece of attribute
/// text to blank. All of them go, so a duplicated marker cannot wrap twice.
pub(crate) struct Marker {
    pub(crate) blanks: Vec<(Span, Span)>,
}

pub(crate) fn is_atomic_path(path: &syn::Path) -> bool {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    segs == ["pulse", "atomic"]
}

/// The atomic markers among `attrs`: `#[pulse::atomic]` and `#[cfg_attr(p, pulse::atomic)]`
/// go whole; in `#[cfg_attr(p, other, pulse::atomic)]` only the entry (with its following
/// comma, if any: a trailing comma is valid there) goes.
pub(crate) fn marker(attrs: &[Attribute]) -> Option<Marker> {
    let mut blanks = Vec::new();
    for attr in attrs {
        let whole = (attr.pound_token.span, attr.bracket_token.span.close());
        match &attr.meta {
            Meta::Path(p) if is_atomic_path(p) => blanks.push(whole),
            Meta::List(list) if list.path.is_ident("cfg_attr") => {
                let Ok(items) =
                    list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                else {
                    continue;
                };
                let pairs: Vec<_> = items.pairs().collect();
                let is_marker =
                    |k: usize| matches!(pairs[k].value(), Meta::Path(p) if is_atomic_path(p));
                let markers: Vec<usize> = (1..pairs.len()).filter(|&k| is_marker(k)).collect();
                if markers.is_empty() {
                    continue;
                }
                if markers.len() == pairs.len() - 1 {
                    blanks.push(whole);
                    continue;
                }
                for k in markers {
                    let entry = pairs[k].value();
                    let (Some(first), Some(last)) = (
                        first_token_span(entry.to_token_stream()),
                        last_token_span(entry.to_token_stream()),
                    ) else {
                        continue;
                    };
                    blanks.push((first, pairs[k].punct().map_or(last, |comma| comma.span)));
                }
            }
            _ => {}
        }
    }
    (!blanks.is_empty()).then_some(Marker { blanks })
}

pub(crate) fn first_token_span(tokens: TokenStream) -> Option<Span> {
    tokens.into_iter().next().map(|t| t.span())
}

pub(crate) fn last_token_span(tokens: TokenStream) -> Option<Span> {
    tokens.into_iter().last().map(|t| t.span())
}

/// First and last token spans of a node, skipping its outer attributes.
pub(crate) fn bounds(node: &impl ToTokens) -> Option<(Span, Span)> {
    let tokens: Vec<TokenTree> = node.to_token_stream().into_iter().collect();
    let mut i = 0;
    while let Some(TokenTree::Punct(p)) = tokens.get(i) {
        if p.as_char() != '#' {
            break;
        }
        match (tokens.get(i + 1), tokens.get(i + 2)) {
            (Some(TokenTree::Group(_)), _) => i += 2,
            (Some(TokenTree::Punct(b)), Some(TokenTree::Group(_))) if b.as_char() == '!' => i += 3,
            _ => break,
        }
    }
    Some((tokens.get(i)?.span(), tokens.last()?.span()))
}

/// Peels trailing `?`s: they must stay outside the closure.
pub(crate) fn peel_try(mut e: &Expr) -> &Expr {
    while let Expr::Try(t) = e {
        e = &t.expr;
    }
    e
}

/// Why `expr` cannot move into a closure, if it cannot.
pub(crate) fn escape(expr: &Expr) -> Option<&'static str> {
    let mut v = Escape {
        loops: 0,
        labels: Vec::new(),
        found: None,
    };
    v.visit_expr(expr);
    v.found
}

struct Escape {
    loops: usize,
    labels: Vec<String>,
    found: Option<&'static str>,
}

impl Escape {
    fn jump(&mut self, label: Option<&syn::Lifetime>, what: &'static str) {
        let leaves = match label {
            Some(l) => !self.labels.contains(&l.ident.to_string()),
            None => self.loops == 0,
        };
        if leaves {
            self.found.get_or_insert(what);
        }
    }

    fn looping(&mut self, label: Option<&syn::Label>, f: impl FnOnce(&mut Self)) {
        self.loops += 1;
        if let Some(l) = label {
            self.labels.push(l.name.ident.to_string());
        }
        f(self);
        if label.is_some() {
            self.labels.pop();
        }
        self.loops -= 1;
    }
}

impl<'ast> Visit<'ast> for Escape {
    fn visit_expr_try(&mut self, e: &'ast syn::ExprTry) {
        self.found.get_or_insert("`?`");
        syn::visit::visit_expr_try(self, e);
    }
    fn visit_expr_return(&mut self, _: &'ast syn::ExprReturn) {
        self.found.get_or_insert("`return`");
    }
    fn visit_expr_await(&mut self, _: &'ast syn::ExprAwait) {
        self.found.get_or_insert("`.await`");
    }
    fn visit_expr_yield(&mut self, _: &'ast syn::ExprYield) {
        self.found.get_or_insert("`yield`");
    }
    fn visit_expr_break(&mut self, e: &'ast syn::ExprBreak) {
        self.jump(e.label.as_ref(), "`break`");
        syn::visit::visit_expr_break(self, e);
    }
    fn visit_expr_continue(&mut self, e: &'ast syn::ExprContinue) {
        self.jump(e.label.as_ref(), "`continue`");
    }
    fn visit_expr_loop(&mut self, e: &'ast syn::ExprLoop) {
        self.looping(e.label.as_ref(), |v| syn::visit::visit_expr_loop(v, e));
    }
    fn visit_expr_while(&mut self, e: &'ast syn::ExprWhile) {
        self.looping(e.label.as_ref(), |v| syn::visit::visit_expr_while(v, e));
    }
    fn visit_expr_for_loop(&mut self, e: &'ast syn::ExprForLoop) {
        self.looping(e.label.as_ref(), |v| syn::visit::visit_expr_for_loop(v, e));
    }
    fn visit_expr_block(&mut self, e: &'ast syn::ExprBlock) {
        // A labelled block is a `break 'label` target but not a `continue`/plain `break` one.
        match &e.label {
            Some(l) => {
                self.labels.push(l.name.ident.to_string());
                syn::visit::visit_expr_block(self, e);
                self.labels.pop();
            }
            None => syn::visit::visit_expr_block(self, e),
        }
    }
    // Control flow inside these stays inside them.
    fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    fn visit_item(&mut self, _: &'ast syn::Item) {}
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if let Some(what) = macro_escape(&m.tokens) {
            self.found.get_or_insert(what);
        }
        let name = m
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if matches!(
            name.as_str(),
            "bail" | "ensure" | "try" | "throw" | "return_err"
        ) {
            self.found.get_or_insert("a macro that returns early");
        }
    }
}

/// Control flow hidden in a macro's tokens.
fn macro_escape(tokens: &TokenStream) -> Option<&'static str> {
    for tt in tokens.clone() {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == '?' => return Some("`?`"),
            TokenTree::Ident(id) if id == "return" => return Some("`return`"),
            TokenTree::Ident(id) if id == "await" => return Some("`.await`"),
            TokenTree::Group(g) => {
                if let Some(w) = macro_escape(&g.stream()) {
                    return Some(w);
                }
            }
            _ => {}
        }
    }
    None
}

/// The `[package.metadata.pulse] atomic` entries, compiled for matching.
#[derive(Debug, Default)]
pub(crate) struct Patterns {
    paths: Vec<Vec<String>>,
    methods: HashSet<String>,
}

impl Patterns {
    pub(crate) fn new(entries: &[String]) -> Self {
        let mut out = Patterns::default();
        for entry in entries {
            let segs: Vec<String> = entry
                .trim()
                .trim_start_matches("::")
                .split("::")
                .map(|s| s.trim().to_owned())
                .collect();
            if segs.iter().any(|s| s.is_empty()) {
                continue;
            }
            let n = segs.len();
            if n >= 2
                && !segs[n - 1].contains('*')
                && segs[n - 2].starts_with(|c: char| c.is_uppercase())
            {
                out.methods.insert(segs[n - 1].clone());
            }
            out.paths.push(segs);
        }
        out
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Whether an entry `<module>::*` makes every call into `module` atomic, so uses of
    /// the module need no blocking-I/O finding.
    pub(crate) fn covers_module(&self, module: &[&str]) -> bool {
        self.paths.iter().any(|p| {
            p.len() == module.len() + 1
                && p[module.len()] == "*"
                && p.iter().zip(module).all(|(a, b)| a == b)
        })
    }

    pub(crate) fn matches_method(&self, name: &str) -> bool {
        self.methods.contains(name)
    }

    /// Whether a call through `written` (leading `::` already stripped) matches, directly or
    /// after expanding its first segment through the file's imports.
    pub(crate) fn matches_call(
        &self,
        written: &[String],
        imports: &HashMap<String, Vec<String>>,
        globs: &[Vec<String>],
    ) -> bool {
        if self.matches(written) {
            return true;
        }
        let Some(first) = written.first() else {
            return false;
        };
        if let Some(full) = imports.get(first) {
            let expanded: Vec<String> = full.iter().chain(&written[1..]).cloned().collect();
            if self.matches(&expanded) {
                return true;
            }
        } else if written.len() == 1 {
            return globs
                .iter()
                .any(|g| self.matches(&g.iter().chain(written).cloned().collect::<Vec<_>>()));
        }
        false
    }

    fn matches(&self, path: &[String]) -> bool {
        self.paths.iter().any(|pat| pattern_matches(pat, path))
    }
}

fn pattern_matches(pat: &[String], path: &[String]) -> bool {
    let Some((last, init)) = pat.split_last() else {
        return false;
    };
    if let Some(prefix) = last.strip_suffix('*') {
        return path.len() > init.len()
            && path[..init.len()] == *init
            && path[init.len()].starts_with(prefix);
    }
    path == pat
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segs(s: &str) -> Vec<String> {
        s.split("::").map(str::to_owned).collect()
    }

    #[test]
    fn patterns_match_written_and_imported_paths() {
        let p = Patterns::new(&[
            "std::fs::*".into(),
            "mydb::Client::query".into(),
            "db::read_*".into(),
        ]);
        let mut imports = HashMap::new();
        imports.insert("fs".to_owned(), segs("std::fs"));
        imports.insert("Client".to_owned(), segs("mydb::Client"));
        let none = [];
        assert!(p.matches_call(&segs("std::fs::read"), &imports, &none));
        assert!(p.matches_call(&segs("fs::read_to_string"), &imports, &none));
        assert!(p.matches_call(&segs("std::fs::File::open"), &imports, &none));
        assert!(!p.matches_call(&segs("std::fs"), &imports, &none));
        assert!(p.matches_call(&segs("Client::query"), &imports, &none));
        assert!(!p.matches_call(&segs("Client::connect"), &imports, &none));
        assert!(p.matches_call(&segs("db::read_all"), &imports, &none));
        assert!(!p.matches_call(&segs("db::write"), &imports, &none));
        assert!(p.matches_call(&segs("read"), &HashMap::new(), &[segs("std::fs")]));
        assert!(p.matches_method("query"));
        assert!(p.covers_module(&["std", "fs"]));
        assert!(!p.covers_module(&["std", "net"]));
        assert!(!p.matches_method("read"));
    }

    #[test]
    fn escapes() {
        let e = |s: &str| escape(&syn::parse_str::<Expr>(s).unwrap());
        assert_eq!(e("f(a)"), None);
        assert_eq!(e("f(a?)"), Some("`?`"));
        assert_eq!(e("{ return 1 }"), Some("`return`"));
        assert_eq!(e("loop { break }"), None);
        assert_eq!(e("{ break }"), Some("`break`"));
        assert_eq!(e("'a: loop { loop { break 'a } }"), None);
        assert_eq!(e("loop { break 'outer }"), Some("`break`"));
        assert_eq!(e("|| { return 1 }"), None);
        assert_eq!(e("x.await"), Some("`.await`"));
        assert_eq!(e("println!(\"{}\", f()?)"), Some("`?`"));
        assert_eq!(
            e("anyhow::bail!(\"x\")"),
            Some("a macro that returns early")
        );
    }
}
