//! Checks shared by the property and coverage tests.
#![allow(dead_code)]

pub mod registry;

use proc_macro2::{Spacing, TokenStream, TokenTree};

/// A `std::{sync,thread,time,hint}`, `core::{sync,hint}` or `alloc::sync` path root left in
/// `text`: (line, `root::module`). Roots after `::` + an identifier (`pulse::std::sync`,
/// `my::std::sync`) or `$` (macro variables) are not roots.
pub fn remaining_std_sites(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    if let Ok(ts) = text.parse::<TokenStream>() {
        walk(ts, &mut out);
    }
    out
}

fn walk(ts: TokenStream, out: &mut Vec<(usize, String)>) {
    let tokens: Vec<TokenTree> = ts.into_iter().collect();
    for (i, tt) in tokens.iter().enumerate() {
        match tt {
            TokenTree::Group(g) => walk(g.stream(), out),
            TokenTree::Ident(root) => {
                let module = match (tokens.get(i + 1), tokens.get(i + 2), tokens.get(i + 3)) {
                    (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(m)),
                    ) if a.as_char() == ':'
                        && a.spacing() == Spacing::Joint
                        && b.as_char() == ':' =>
                    {
                        m.to_string()
                    }
                    _ => continue,
                };
                let root_s = root.to_string();
                let shim = match root_s.as_str() {
                    "std" => matches!(
                        module.as_str(),
                        "sync" | "thread" | "time" | "hint" | "thread_local"
                    ),
                    "core" => matches!(module.as_str(), "sync" | "hint"),
                    "alloc" => module == "sync",
                    _ => false,
                };
                if !shim {
                    continue;
                }
                let punct = |k: usize| match tokens.get(k) {
                    Some(TokenTree::Punct(p)) => Some(p.as_char()),
                    _ => None,
                };
                if i >= 1 && punct(i - 1) == Some('$') {
                    continue;
                }
                if i >= 3 && punct(i - 1) == Some(':') && punct(i - 2) == Some(':') {
                    if let Some(TokenTree::Ident(prev)) = tokens.get(i - 3) {
                        let keyword = matches!(
                            prev.to_string().as_str(),
                            "use"
                                | "as"
                                | "in"
                                | "return"
                                | "dyn"
                                | "impl"
                                | "for"
                                | "let"
                                | "pub"
                                | "mut"
                                | "ref"
                                | "where"
                                | "move"
                                | "unsafe"
                                | "else"
                                | "match"
                                | "if"
                                | "while"
                                | "const"
                                | "static"
                                | "type"
                                | "break"
                                | "async"
                                | "await"
                                | "box"
                                | "yield"
                                | "struct"
                                | "enum"
                                | "fn"
                                | "mod"
                                | "trait"
                                | "extern"
                                | "loop"
                        );
                        if !keyword {
                            continue;
                        }
                    }
                }
                out.push((root.span().start().line, format!("{root_s}::{module}")));
            }
            _ => {}
        }
    }
}

/// (line, text) of every identifier and literal, in order.
pub fn words(text: &str) -> Vec<(usize, String)> {
    fn go(ts: TokenStream, out: &mut Vec<(usize, String)>) {
        for tt in ts {
            match tt {
                TokenTree::Group(g) => go(g.stream(), out),
                TokenTree::Ident(i) => out.push((i.span().start().line, i.to_string())),
                TokenTree::Literal(l) => out.push((l.span().start().line, l.to_string())),
                TokenTree::Punct(_) => {}
            }
        }
    }
    let mut out = Vec::new();
    if let Ok(ts) = text.parse::<TokenStream>() {
        go(ts, &mut out);
    }
    out
}

/// Identifiers a rewrite may remove or replace: roots (and the fixtures' aliases of them),
/// the atomic marker's parts, and the type of `Arc::strong_count`-like calls (routed to
/// `arc_ops::strong_count`).
pub const REMOVABLE: &[&str] = &[
    "std", "core", "alloc", "stdlib", "corelib", "s", "pulse", "atomic", "cfg_attr", "self", "Arc",
    "Weak",
];

/// Every untouched identifier and literal of `input` is on the same line in `output`, in the
/// same order: per line, the input's words (less removable ones) are a subsequence of the
/// output's. Returns the first offending line.
pub fn words_keep_their_lines(input: &str, output: &str) -> Result<(), String> {
    let a = words(input);
    let b = words(output);
    let lines = a.iter().chain(&b).map(|(l, _)| *l).max().unwrap_or(0);
    let mut per_line_a = vec![Vec::new(); lines + 1];
    let mut per_line_b = vec![Vec::new(); lines + 1];
    for (l, w) in a {
        if !REMOVABLE.contains(&w.as_str()) {
            per_line_a[l].push(w);
        }
    }
    for (l, w) in b {
        per_line_b[l].push(w);
    }
    for line in 1..=lines {
        let mut it = per_line_b[line].iter();
        for w in &per_line_a[line] {
            if !it.any(|x| x == w) {
                return Err(format!(
                    "line {line}: `{w}` moved or vanished\n  in:  {:?}\n  out: {:?}",
                    per_line_a[line], per_line_b[line]
                ));
            }
        }
    }
    Ok(())
}
