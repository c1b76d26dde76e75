//! Reading an edition-2015 or 2018 file with syn, which follows 2021's grammar.
//!
//! `try`, `async` and `await` are plain identifiers in 2015 (spin 0.5's `pub fn try(&self)`),
//! and `dyn` is one unless it starts a trait object. Each such identifier becomes a raw one
//! (`r#try`) with the same span before parsing: syn then accepts the file, every span still
//! points into the original text, so the byte-range edits apply to it unchanged and the
//! output keeps the original spelling. `try!(..)` becomes `r#try!(..)`, the same macro.
//!
//! A bare closure trait object (`type Action = Fn(&siginfo_t) + Send + Sync;`, `Box<Fn(u8)>`,
//! `&'a (Fn() + 'a)`), which 2015 and 2018 allow and syn does not read, gets a `dyn` with the
//! `Fn`'s span before it: signal-hook-registry 1.4 (2015), clap 2.34 (2018) and url 1.7 (2015)
//! were left uninstrumented for such lines. Other bare trait objects (`Box<Error + Send>`)
//! syn reads as they are.
//!
//! A 2015 trait method may name its parameters' types alone (`fn reseed(&mut self, Seed);`,
//! rand 0.4; `fn fmt_scheme(&self, &mut fmt::Formatter)`, hyper 0.7): each gets a `_:` with
//! its type's span before it.
//!
//! A 2018 file is read as it is, and again with its bare closure objects given their `dyn`
//! only if that fails ([`read_file`]), so a file that parses is never read differently.

use proc_macro2::{Delimiter, Group, Ident, Punct, Spacing, TokenStream, TokenTree};

/// The syntax tree of a file, and the tokens it was read from: for a 2015 file
/// ([`crate::Options::edition_2015`]) read with its 2015 forms made 2018 ones; for a later
/// one read as it is, or with bare closure objects given their `dyn` when only that parses.
/// On failure, the tokens and syn's error of the reading that got further.
pub(crate) fn read_file(
    tokens: TokenStream,
    opts: &crate::Options,
) -> (TokenStream, syn::Result<syn::File>) {
    if opts.edition_2015 {
        let tokens = rewrite(tokens, Reading::Edition2015);
        let file = syn::parse2(tokens.clone());
        return (tokens, file);
    }
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(file) => (tokens, Ok(file)),
        Err(e) => {
            let lenient = rewrite(tokens.clone(), Reading::BareObjects);
            match syn::parse2(lenient.clone()) {
                Ok(file) => (lenient, Ok(file)),
                Err(l) if position(&l) > position(&e) => (lenient, Err(l)),
                Err(_) => (tokens, Err(e)),
            }
        }
    }
}

fn position(e: &syn::Error) -> (usize, usize) {
    let start = e.span().start();
    (start.line, start.column)
}

/// What a reading adds to the grammar syn reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// 2015's identifiers that are keywords since, bare closure objects, anonymous parameters.
    Edition2015,
    /// Bare closure objects alone (2018, where the rest is as 2021 reads it).
    BareObjects,
}

fn rewrite(tokens: TokenStream, reading: Reading) -> TokenStream {
    rewrite_at(tokens, reading, false)
}

/// `type_at_start`: the stream is a parenthesized type's (`&'a (Fn() + 'a)`), so its first
/// token starts a type.
fn rewrite_at(tokens: TokenStream, reading: Reading, type_at_start: bool) -> TokenStream {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut out = Vec::with_capacity(trees.len());
    for (i, tree) in trees.iter().enumerate() {
        if let TokenTree::Ident(id) = tree {
            if is_bare_closure_object(&trees, i, type_at_start) {
                out.push(TokenTree::Ident(Ident::new("dyn", id.span())));
            }
        }
        out.push(match tree {
            TokenTree::Group(g) => {
                let paren = g.delimiter() == Delimiter::Parenthesis;
                let mut inner = rewrite_at(g.stream(), reading, paren && type_starts(&trees, i));
                if reading == Reading::Edition2015 && paren && is_fn_parameter_list(&trees, i) {
                    inner = name_anonymous_parameters(inner);
                }
                let mut group = Group::new(g.delimiter(), inner);
                group.set_span(g.span());
                TokenTree::Group(group)
            }
            TokenTree::Ident(id)
                if reading == Reading::Edition2015 && is_2015_identifier(&trees, i, id) =>
            {
                TokenTree::Ident(Ident::new_raw(&id.to_string(), id.span()))
            }
            other => other.clone(),
        });
    }
    out.into_iter().collect()
}

/// Whether the parenthesized group at `i` is a function's parameter list: `fn name(..)` or
/// `fn name<..>(..)` (a `fn(..)` pointer type has no name).
fn is_fn_parameter_list(trees: &[TokenTree], i: usize) -> bool {
    let mut k = i;
    if matches!(trees.get(k.wrapping_sub(1)), Some(TokenTree::Punct(p)) if p.as_char() == '>') {
        let mut depth = 0i32;
        loop {
            k = match k.checked_sub(1) {
                Some(k) => k,
                None => return false,
            };
            match &trees[k] {
                TokenTree::Punct(p) if p.as_char() == '>' && !is_arrow_head(trees, k) => depth += 1,
                TokenTree::Punct(p) if p.as_char() == '<' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                break;
            }
        }
    }
    let ident = |k: Option<usize>| match k.and_then(|k| trees.get(k)) {
        Some(TokenTree::Ident(id)) => Some(id.to_string()),
        _ => None,
    };
    ident(k.checked_sub(1)).is_some() && ident(k.checked_sub(2)).as_deref() == Some("fn")
}

/// The `>` of a `->`.
fn is_arrow_head(trees: &[TokenTree], k: usize) -> bool {
    matches!(k.checked_sub(1).map(|p| &trees[p]), Some(TokenTree::Punct(m)) if m.as_char() == '-' && m.spacing() == Spacing::Joint)
}

/// A parameter list with `_:` before each parameter that is a type alone. A list with a
/// macro's `$` in it is left alone (a macro body, which syn does not read as items).
fn name_anonymous_parameters(params: TokenStream) -> TokenStream {
    let trees: Vec<TokenTree> = params.into_iter().collect();
    if trees
        .iter()
        .any(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == '$'))
    {
        return trees.into_iter().collect();
    }
    let mut out = Vec::with_capacity(trees.len() + 2);
    let mut depth = 0i32;
    let mut start = 0;
    for k in 0..=trees.len() {
        let end = match trees.get(k) {
            None => true,
            Some(TokenTree::Punct(p)) => {
                match p.as_char() {
                    '<' => depth += 1,
                    '>' if !is_arrow_head(&trees, k) => depth -= 1,
                    _ => {}
                }
                p.as_char() == ',' && depth == 0
            }
            Some(_) => false,
        };
        if !end {
            continue;
        }
        let param = &trees[start..k];
        if is_type_alone(param) {
            let span = param[0].span();
            out.push(TokenTree::Ident(Ident::new("_", span)));
            let mut colon = Punct::new(':', Spacing::Alone);
            colon.set_span(span);
            out.push(TokenTree::Punct(colon));
        }
        out.extend(trees[start..(k + 1).min(trees.len())].iter().cloned());
        start = k + 1;
    }
    out.into_iter().collect()
}

/// A parameter with no pattern: not empty, not a receiver (`self`, `&'a mut self`), and no
/// `:` of its own (a path's `::` is not one).
fn is_type_alone(param: &[TokenTree]) -> bool {
    let lone_colon = param.iter().enumerate().any(|(k, t)| {
        let TokenTree::Punct(p) = t else { return false };
        let colon =
            |t: Option<&TokenTree>| matches!(t, Some(TokenTree::Punct(q)) if q.as_char() == ':');
        p.as_char() == ':'
            && !(p.spacing() == Spacing::Joint && colon(param.get(k + 1)))
            && !(k > 0
                && colon(param.get(k - 1))
                && matches!(&param[k - 1], TokenTree::Punct(q) if q.spacing() == Spacing::Joint))
    });
    let receiver = matches!(param.last(), Some(TokenTree::Ident(id)) if id == "self");
    !param.is_empty() && !lone_colon && !receiver
}

fn is_2015_identifier(trees: &[TokenTree], i: usize, id: &Ident) -> bool {
    match id.to_string().as_str() {
        "try" | "async" | "await" => true,
        "dyn" => !starts_trait_object(trees, i),
        _ => false,
    }
}

/// `Fn(..)`, `FnMut(..)` or `FnOnce(..)`, or one with a binder (`for<'a> Fn(&'a u8)`), where
/// a type starts ([`type_starts`], or first in a parenthesized type): a trait object. After
/// `:` or `+` it is a bound, which needs no `dyn`; `impl Fn(..)` and `dyn Fn(..)` are left
/// alone.
fn is_bare_closure_object(trees: &[TokenTree], i: usize, type_at_start: bool) -> bool {
    let at = after_higher_ranked_binder(trees, i).unwrap_or(i);
    let closure = matches!(trees.get(at), Some(TokenTree::Ident(id)) if matches!(id.to_string().as_str(), "Fn" | "FnMut" | "FnOnce"))
        && matches!(trees.get(at + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
    closure && (type_starts(trees, i) || (i == 0 && type_at_start))
}

/// Whether a type starts at `i`, by the token before it: `<`, `&`, the `=` of a type alias
/// (not `==`, `<=`, `>=`, `!=`), or a pointer's `mut`, `const` or lifetime
/// ([`pointee_starts`]).
fn type_starts(trees: &[TokenTree], i: usize) -> bool {
    match i.checked_sub(1).map(|p| &trees[p]) {
        Some(TokenTree::Punct(p)) => match p.as_char() {
            '<' | '&' => true,
            '=' => {
                !matches!(i.checked_sub(2).map(|k| &trees[k]), Some(TokenTree::Punct(q)) if q.spacing() == Spacing::Joint)
            }
            _ => false,
        },
        Some(TokenTree::Ident(_)) => pointee_starts(trees, i),
        _ => false,
    }
}

/// Whether the token before `i` ends a pointer type's prefix, so a type starts at `i`: the
/// `mut` of `&mut`, `&'a mut` or `*mut`, the `const` of `*const`, or a lifetime (`&'a`, `&'static`: its
/// name is not a keyword there, whatever it spells).
fn pointee_starts(trees: &[TokenTree], i: usize) -> bool {
    let at = |k: Option<usize>| k.and_then(|k| trees.get(k));
    let punct = |k: Option<usize>, c: &[char]| matches!(at(k), Some(TokenTree::Punct(q)) if c.contains(&q.as_char()));
    let before =
        |word: &str| matches!(at(i.checked_sub(1)), Some(TokenTree::Ident(m)) if m == word);
    (before("mut") && punct(i.checked_sub(2), &['&', '*']))
        || (before("mut") && punct(i.checked_sub(3), &['\'']))
        || (before("const") && punct(i.checked_sub(2), &['*']))
        || punct(i.checked_sub(2), &['\''])
}

/// The index after a higher-ranked binder, `for<'a, 'b>`, that starts at `i`.
fn after_higher_ranked_binder(trees: &[TokenTree], i: usize) -> Option<usize> {
    let is =
        |k: usize, c: char| matches!(trees.get(k), Some(TokenTree::Punct(p)) if p.as_char() == c);
    if !matches!(trees.get(i), Some(TokenTree::Ident(f)) if f == "for") || !is(i + 1, '<') {
        return None;
    }
    (i + 2..trees.len()).find(|&k| is(k, '>')).map(|k| k + 1)
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
        rewrite(src.parse().unwrap(), Reading::Edition2015).to_string()
    }

    /// `src` as the token printer spells it.
    fn tokens(src: &str) -> String {
        src.parse::<TokenStream>().unwrap().to_string()
    }

    /// The tokens a file is parsed from, and whether it parsed.
    fn read_file_of(src: &str, edition_2015: bool) -> (String, bool) {
        let opts = crate::Options {
            edition_2015,
            ..crate::Options::default()
        };
        let (tokens, file) = read_file(src.parse().unwrap(), &opts);
        (tokens.to_string(), file.is_ok())
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
        // log 0.4.11's `visitor: &'s mut dyn Visitor<'f>`.
        assert_eq!(
            read("fn v(x: &'s mut dyn V<'f>) {}"),
            tokens("fn v(x: &'s mut dyn V<'f>) {}")
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
    fn a_parenthesized_bare_closure_object_gets_its_dyn() {
        // url 1.7.2's `NewFn(&'a (Fn(SyntaxViolation) + 'a))`.
        assert_eq!(
            read("struct S<'a>(&'a (Fn(V) + 'a), &(FnMut() + Send)); fn f() { g(Fn(1)) }"),
            tokens(
                "struct S<'a>(&'a (dyn Fn(V) + 'a), &(dyn FnMut() + Send)); fn f() { g(Fn(1)) }"
            )
        );
        // After a higher-ranked binder or a `*const`.
        assert_eq!(
            read("type A = (Box<for<'a> Fn(&'a u8) + Send>, *const Fn(), fn(u8) -> u8);"),
            tokens("type A = (Box<dyn for<'a> Fn(&'a u8) + Send>, *const dyn Fn(), fn(u8) -> u8);")
        );
    }

    #[test]
    fn an_anonymous_parameter_gets_a_pattern() {
        // rand 0.4.6's `fn reseed(&mut self, Seed);`, hyper 0.7.2's `&mut fmt::Formatter`.
        assert_eq!(
            read("trait R { fn reseed(&mut self, Seed); fn f<T: A<B, C>>(&'a self, &mut fmt::F, HashMap<K, V>, x: u8, (a, b): (u8, u8), <T as I>::Item) -> u8; }"),
            tokens("trait R { fn reseed(&mut self, _: Seed); fn f<T: A<B, C>>(&'a self, _: &mut fmt::F, _: HashMap<K, V>, x: u8, (a, b): (u8, u8), _: <T as I>::Item) -> u8; }")
        );
        // `fn(u8)` pointers, `Fn(u8) -> R` bounds and macro bodies are left alone.
        for src in [
            "type F = fn(u8, u16) -> u8;",
            "fn g<F: Fn(u8) -> u8>(f: F) {}",
            "macro_rules! m { () => { fn $name(&self, $($t),*) {} } }",
        ] {
            assert_eq!(read(src), tokens(src));
        }
        let (tokens, parsed) = read_file_of(
            "trait A { fn f(&self, Vec<u8>, &mut String) -> bool; }",
            true,
        );
        assert!(parsed, "{tokens}");
    }

    #[test]
    fn a_2018_file_is_read_as_it_is_unless_only_its_bare_closure_objects_stop_syn() {
        let src = "async fn f() { g().await }";
        assert_eq!(
            read_file_of(src, false),
            (src.parse::<TokenStream>().unwrap().to_string(), true)
        );
        // clap 2.34.0 (2018): `Option<Rc<Fn(String) -> Result<(), String>>>`.
        let (tokens, parsed) = read_file_of(
            "struct A { v: Option<Rc<Fn(String) -> R>> } async fn g() {}",
            false,
        );
        assert!(parsed);
        assert!(tokens.contains("< dyn Fn (String)"), "{tokens}");
        // A file that fails for another reason reports the first reading's error.
        let (tokens, parsed) = read_file_of("fn f(&self, Seed) {}", false);
        assert!(!parsed);
        assert!(!tokens.contains('_'), "{tokens}");
    }

    #[test]
    fn spans_stay_on_the_original_text() {
        let src = "fn f() {\n    self.try()\n}\n";
        let opts = crate::Options {
            edition_2015: true,
            ..crate::Options::default()
        };
        let (out, _) = read_file(src.parse().unwrap(), &opts);
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
