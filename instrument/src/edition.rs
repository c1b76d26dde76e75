//! Reading an edition-2015 file with syn, which follows 2018's keywords.
//!
//! `try`, `async` and `await` are plain identifiers in 2015 (spin 0.5's `pub fn try(&self)`),
//! and `dyn` is one unless it starts a trait object. Each such identifier becomes a raw one
//! (`r#try`) with the same span before parsing: syn then accepts the file, every span still
//! points into the original text, so the byte-range edits apply to it unchanged and the
//! output keeps the original spelling. `try!(..)` becomes `r#try!(..)`, the same macro.
//!
//! A bare closure trait object (`type Action = Fn(&siginfo_t) + Send + Sync;`, `Box<Fn(u8)>`,
//! `&Fn()`), which 2015 allows and syn does not read, gets a `dyn` with the `Fn`'s span
//! before it: signal-hook-registry 1.4, a dependency of tokio's, was left uninstrumented
//! for that one line. Other bare trait objects (`Box<Error + Send>`) syn reads as they are.

use proc_macro2::{Group, Ident, Spacing, TokenStream, TokenTree};

/// `tokens` with 2015's identifiers that are 2018 keywords made raw, when
/// `Options::edition_2015` says the file is a 2015 one; otherwise `tokens` as they are.
pub(crate) fn read_as_2018(tokens: TokenStream, opts: &crate::Options) -> TokenStream {
    if opts.edition_2015 {
        raw_keywords(tokens)
    } else {
        tokens
    }
}

fn raw_keywords(tokens: TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    for (i, tree) in trees.iter().enumerate() {
        if let TokenTree::Ident(id) = tree {
            if is_bare_closure_object(&trees, i, id) {
                out.push(TokenTree::Ident(Ident::new("dyn", id.span())));
            }
        }
        out.push(match tree {
            TokenTree::Group(g) => {
                let mut inner = Group::new(g.delimiter(), raw_keywords(g.stream()));
                inner.set_span(g.span());
                TokenTree::Group(inner)
            }
            TokenTree::Ident(id) if is_2015_identifier(&trees, i, id) => {
                TokenTree::Ident(Ident::new_raw(&id.to_string(), id.span()))
            }
            other => other.clone(),
        });
    }
    out.into_iter().collect()
}

fn is_2015_identifier(trees: &[TokenTree], i: usize, id: &Ident) -> bool {
    match id.to_string().as_str() {
        "try" | "async" | "await" => true,
        "dyn" => !starts_trait_object(trees, i),
        _ => false,
    }
}

/// `Fn(..)`, `FnMut(..)` or `FnOnce(..)` where a type starts (after `<`, `&`, the `=` of a
/// type alias, or a pointer's `mut` or lifetime, `pointee_starts`): a trait object. After `:`
/// or `+` it is a bound, which needs no `dyn`; `impl Fn(..)` and `dyn Fn(..)` are left alone.
fn is_bare_closure_object(trees: &[TokenTree], i: usize, id: &Ident) -> bool {
    let closure = matches!(id.to_string().as_str(), "Fn" | "FnMut" | "FnOnce")
        && matches!(trees.get(i + 1), Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis);
    if !closure || i == 0 {
        return false;
    }
    match &trees[i - 1] {
        // `Box<Fn()>`, `&Fn()`, `type A = Fn()` (not `==`, `<=`, `>=`, `!=`, `=>`).
        TokenTree::Punct(p) => match p.as_char() {
            '<' | '&' => true,
            '=' => {
                !matches!(i.checked_sub(2).map(|k| &trees[k]), Some(TokenTree::Punct(q)) if q.spacing() == Spacing::Joint)
            }
            _ => false,
        },
        TokenTree::Ident(_) => pointee_starts(trees, i),
        _ => false,
    }
}

/// Whether the token before `i` ends a pointer type's prefix, so a type starts at `i`: the
/// `mut` of `&mut` or `*mut`, or a lifetime (`&'a`, `&'static`: its name is not a keyword
/// there, whatever it spells).
fn pointee_starts(trees: &[TokenTree], i: usize) -> bool {
    let at = |k: Option<usize>| k.and_then(|k| trees.get(k));
    let punct = |k: Option<usize>, c: &[char]| matches!(at(k), Some(TokenTree::Punct(q)) if c.contains(&q.as_char()));
    let mut_ = matches!(at(i.checked_sub(1)), Some(TokenTree::Ident(m)) if m == "mut");
    (mut_ && punct(i.checked_sub(2), &['&', '*'])) || punct(i.checked_sub(2), &['\''])
}

/// rustc's 2015 rule, without knowing whether a type or an expression is being read: `dyn`
/// starts a trait object when the next token can begin a bound (a path, a lifetime, `?`,
/// `for`) and does not continue a path (`::`, `<`). rustc also takes `dyn (Bound)` in a type;
/// here `dyn(` is a call, and a `dyn` being declared (`fn dyn`, `let dyn`) or a method
/// (`.dyn`) is a name.
fn starts_trait_object(trees: &[TokenTree], i: usize) -> bool {
    let named = match i.checked_sub(1).and_then(|p| trees.get(p)) {
        // `&mut dyn Trait`, `*mut dyn Trait`, `&'static dyn Trait`; `let mut dyn` is a name.
        Some(TokenTree::Ident(_)) if pointee_starts(trees, i) => false,
        Some(TokenTree::Ident(prev)) => matches!(
            prev.to_string().as_str(),
            "fn" | "let"
                | "mod"
                | "struct"
                | "enum"
                | "union"
                | "trait"
                | "type"
                | "const"
                | "static"
                | "macro_rules"
                | "as"
                | "mut"
                | "ref"
        ),
        Some(TokenTree::Punct(p)) => p.as_char() == '.',
        _ => false,
    };
    if named {
        return false;
    }
    match trees.get(i + 1) {
        Some(TokenTree::Ident(next)) => !matches!(
            next.to_string().as_str(),
            "as" | "in" | "if" | "else" | "where" | "move"
        ),
        Some(TokenTree::Punct(p)) => match p.as_char() {
            '?' => true,
            // A lifetime (`dyn 'a + Trait`): `'` joint with the ident after it.
            '\'' => p.spacing() == Spacing::Joint,
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(src: &str) -> String {
        let opts = crate::Options {
            edition_2015: true,
            ..crate::Options::default()
        };
        read_as_2018(src.parse().unwrap(), &opts).to_string()
    }

    #[test]
    fn keywords_of_2018_are_identifiers_in_2015() {
        assert_eq!(
            read("pub fn try(&self) { self.try() }"),
            "pub fn r#try (& self) { self . r#try () }"
        );
        assert_eq!(
            read("let async = 1; x.await"),
            "let r#async = 1 ; x . r#await"
        );
        assert_eq!(read("try!(f())"), "r#try ! (f ())");
        // `dyn` stays a keyword where it starts a trait object.
        assert_eq!(read("Box<dyn Fn()>"), "Box < dyn Fn () >");
        assert_eq!(read("&dyn 'a + ?Sized"), "& dyn 'a + ? Sized");
        // log 0.4.14's `visitor: &mut dyn Visitor<'kvs>` (a `mut` before it is a pointer's).
        assert_eq!(
            read("fn f(v: &mut dyn V, p: *mut dyn V) { let mut dyn = 1; }"),
            "fn f (v : & mut dyn V , p : * mut dyn V) { let mut r#dyn = 1 ; }"
        );
        // And log 0.4.14's `logger: &'static dyn Log`.
        assert_eq!(
            read("fn g(l: &'static dyn Log) { static dyn: u8 = 0; }"),
            "fn g (l : &'static dyn Log) { static r#dyn : u8 = 0 ; }"
        );
        assert_eq!(
            read("fn dyn() { dyn::f(); x.dyn(); let dyn = 2; dyn(); }"),
            "fn r#dyn () { r#dyn :: f () ; x . r#dyn () ; let r#dyn = 2 ; r#dyn () ; }"
        );
    }

    #[test]
    fn a_bare_closure_trait_object_gets_its_dyn() {
        assert_eq!(
            read("type Action = Fn(&siginfo_t) + Send + Sync;"),
            "type Action = dyn Fn (& siginfo_t) + Send + Sync ;"
        );
        assert_eq!(
            read("fn f(a: Box<Fn(u8) -> u8 + Send>, b: &Fn(), c: &'a FnMut(), d: &mut FnOnce()) {}"),
            "fn f (a : Box < dyn Fn (u8) -> u8 + Send >, b : & dyn Fn () , c : &'a dyn FnMut () , d : & mut dyn FnOnce ()) { }"
        );
        // Bounds, `impl`, `dyn` already there, and expressions stay as they are.
        for src in [
            "fn g<F: Fn(u8) + Send>(f: F) where G: 'static + FnMut() {}",
            "fn h(f: impl Fn()) -> Box<dyn Fn()> { x == Fn(1) }",
        ] {
            assert_eq!(read(src), src.parse::<TokenStream>().unwrap().to_string());
        }
    }

    #[test]
    fn later_editions_are_read_as_they_are() {
        let tokens: TokenStream = "async fn f() { g().await }".parse().unwrap();
        let out = read_as_2018(tokens.clone(), &crate::Options::default());
        assert_eq!(out.to_string(), tokens.to_string());
    }

    #[test]
    fn spans_stay_on_the_original_text() {
        let src = "fn f() {\n    self.try()\n}\n";
        let opts = crate::Options {
            edition_2015: true,
            ..crate::Options::default()
        };
        let out = read_as_2018(src.parse().unwrap(), &opts);
        let TokenTree::Group(body) = out.into_iter().nth(3).unwrap() else {
            panic!("no body")
        };
        let try_ = body.stream().into_iter().nth(2).unwrap();
        assert_eq!(try_.to_string(), "r#try");
        let start = try_.span().start();
        assert_eq!((start.line, start.column), (2, 9));
        assert_eq!(try_.span().end().column, 12);
    }
}
