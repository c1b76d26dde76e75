//! The files a Rust source file has the compiler read: `mod name;` declarations (with their
//! `#[path]` and the inline modules around them) and `include!("file")`. Read at the token
//! level, macro bodies included (`cfg_if!` declares modules), so every edition lexes;
//! nothing is resolved here, the caller knows where the file lies.

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// A file named by a source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileRef {
    /// `mod name;`, inside the inline modules `dirs` (outermost first, each by its name or
    /// its own `#[path]`), with its `#[path = ".."]` if it has one.
    Module {
        dirs: Vec<String>,
        name: String,
        path: Option<String>,
    },
    /// `include!("path")`, relative to the including file's directory.
    Include(String),
}

/// The files `src` names, in order; `None` when it does not lex (the caller cannot tell
/// which files it names).
pub fn file_refs(src: &str) -> Option<Vec<FileRef>> {
    let stream: TokenStream = src.parse().ok()?;
    let mut out = Vec::new();
    scan(stream, &mut Vec::new(), &mut out);
    Some(out)
}

fn scan(stream: TokenStream, dirs: &mut Vec<String>, out: &mut Vec<FileRef>) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    // The `#[path]` of the item being read, until its `mod` (or the item's end).
    let mut path: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Punct(p) if p.as_char() == '#' => {
                let inner =
                    matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                let at = i + 1 + inner as usize;
                if let Some(TokenTree::Group(g)) = tokens.get(at) {
                    if g.delimiter() == Delimiter::Bracket {
                        if let Some(p) = path_attribute(g.stream()) {
                            path = Some(p);
                        }
                        i = at + 1;
                        continue;
                    }
                }
            }
            TokenTree::Ident(id) if id == "mod" => {
                if let Some(TokenTree::Ident(name)) = tokens.get(i + 1) {
                    let name = name.to_string();
                    let name = name.strip_prefix("r#").unwrap_or(&name).to_string();
                    match tokens.get(i + 2) {
                        Some(TokenTree::Punct(p)) if p.as_char() == ';' => {
                            out.push(FileRef::Module {
                                dirs: dirs.clone(),
                                name,
                                path: path.take(),
                            });
                        }
                        Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Brace => {
                            dirs.push(path.take().unwrap_or(name));
                            scan(g.stream(), dirs, out);
                            dirs.pop();
                        }
                        _ => {}
                    }
                    i += 3;
                    continue;
                }
            }
            TokenTree::Ident(id) if id == "include" => {
                let bang =
                    matches!(tokens.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == '!');
                if let (true, Some(TokenTree::Group(g))) = (bang, tokens.get(i + 2)) {
                    if let Some(TokenTree::Literal(l)) = g.stream().into_iter().next() {
                        if let Some(file) = string_literal(&l.to_string()) {
                            out.push(FileRef::Include(file));
                        }
                    }
                    i += 3;
                    continue;
                }
            }
            TokenTree::Punct(p) if p.as_char() == ';' => path = None,
            TokenTree::Group(g) => {
                if g.delimiter() == Delimiter::Brace {
                    path = None;
                }
                scan(g.stream(), dirs, out);
            }
            _ => {}
        }
        i += 1;
    }
}

/// `path = "x"` (an attribute's inside) as `x`.
fn path_attribute(attr: TokenStream) -> Option<String> {
    let tokens: Vec<TokenTree> = attr.into_iter().collect();
    match &tokens[..] {
        [TokenTree::Ident(id), TokenTree::Punct(eq), TokenTree::Literal(l)]
            if id == "path" && eq.as_char() == '=' =>
        {
            string_literal(&l.to_string())
        }
        _ => None,
    }
}

/// A string literal's text (`"a/b.rs"`, `r"a\b.rs"`, `r#"x"#`), or `None` for another
/// literal.
fn string_literal(lit: &str) -> Option<String> {
    if let Some(raw) = lit.strip_prefix('r') {
        let hashes = raw.len() - raw.trim_start_matches('#').len();
        let body = raw.get(hashes..raw.len().checked_sub(hashes)?)?;
        return Some(body.strip_prefix('"')?.strip_suffix('"')?.to_string());
    }
    let body = lit.strip_prefix('"')?.strip_suffix('"')?;
    Some(body.replace("\\\\", "\\").replace("\\\"", "\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(dirs: &[&str], name: &str, path: Option<&str>) -> FileRef {
        FileRef::Module {
            dirs: dirs.iter().map(|d| d.to_string()).collect(),
            name: name.to_string(),
            path: path.map(str::to_string),
        }
    }

    #[test]
    fn modules_paths_inline_modules_macros_and_includes_are_named() {
        let src = r##"
            #![allow(unused)]
            mod plain;
            pub(crate) mod r#async;
            #[cfg(unix)]
            #[path = "sys/unix.rs"]
            pub mod imp;
            mod inline {
                mod nested;
                #[path = "other"] mod renamed { mod deep; }
            }
            cfg_if::cfg_if! {
                if #[cfg(loom)] { mod loom_impl; } else { mod std_impl; }
            }
            #[path = "unused.rs"]
            fn not_a_module() {}
            mod after;
            include!(concat!(env!("OUT_DIR"), "/gen.rs"));
            include!("generated/table.rs");
            include!(r#"raw.rs"#);
            fn f() { let _ = include_str!("data.txt"); }
        "##;
        assert_eq!(
            file_refs(src).unwrap(),
            vec![
                module(&[], "plain", None),
                module(&[], "async", None),
                module(&[], "imp", Some("sys/unix.rs")),
                module(&["inline"], "nested", None),
                module(&["inline", "other"], "deep", None),
                module(&[], "loom_impl", None),
                module(&[], "std_impl", None),
                module(&[], "after", None),
                FileRef::Include("generated/table.rs".into()),
                FileRef::Include("raw.rs".into()),
            ]
        );
    }

    #[test]
    fn a_file_that_does_not_lex_names_nothing_known() {
        assert_eq!(file_refs("mod a; fn f() { \"unterminated"), None);
    }
}
