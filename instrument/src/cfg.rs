//! `#[cfg]` and `cfg_attr` predicates evaluated with what the build knows.
//!
//! A crate that swaps in loom or shuttle under a cfg or a feature (`#[cfg(loom)] use
//! loom::sync::Mutex;`, a `#[cfg(feature = "shuttle")] mod std { .. }` shadowing `std`) must be
//! rewritten as this build compiles it: a shadow module that the build leaves out must not
//! stop the real `std::` paths beside it from being rewritten. Given [`Cfgs`]
//! (`Options::cfg`), every predicate is evaluated in three-valued logic: `true`, `false`, or
//! undecided (a name or key the build does not know, e.g. `loom` from RUSTFLAGS or a build
//! script). Code under a predicate that is *false* is inactive: nothing in it is rewritten or
//! reported, and items it declares (`mod std`, `use std as s`, `extern crate std as s`) hide
//! or alias nothing. Code under a true or undecided predicate is treated as today: rewritten,
//! whichever branch the compiler takes. Each predicate met is reported with its value
//! ([`CfgDecision`]).

use crate::plan::Plan;
use crate::report::CfgDecision;
use proc_macro2::{Delimiter, TokenStream, TokenTree};
use quote::ToTokens;
use std::collections::BTreeSet;
use std::ops::Range;
use syn::visit::{self, Visit};
use syn::Attribute;

/// What the build knows about cfgs. A name or `key = "value"` pair is true when it is set,
/// false when it is not set but its name (or key) is *decided*, and undecided otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cfgs {
    /// Names set in this build: `unix`, `test`, `loom` (from `--cfg loom`).
    pub names: BTreeSet<String>,
    /// Pairs set in this build: `("feature", "std")`, `("target_os", "linux")`.
    pub pairs: BTreeSet<(String, String)>,
    /// Names and keys whose every value the build knows, so one not set is false:
    /// `feature`, `target_os`, `unix`, `test`, ...
    pub decided: BTreeSet<String>,
}

/// Names rustc sets only on some targets or tools: when `rustc --print cfg` does not print
/// them, they are false for the build.
const BUILTIN_NAMES: &[&str] = &[
    "unix",
    "windows",
    "miri",
    "doc",
    "doctest",
    "proc_macro",
    "target_thread_local",
];

/// Keys whose values `rustc --print cfg` lists completely for its target.
const TARGET_KEYS: &[&str] = &[
    "target_os",
    "target_family",
    "target_arch",
    "target_env",
    "target_abi",
    "target_vendor",
    "target_endian",
    "target_pointer_width",
    "target_has_atomic",
    "target_has_atomic_load_store",
    "target_has_atomic_equal_alignment",
    "target_feature",
    "panic",
];

impl Cfgs {
    /// The target's cfgs from `rustc --print cfg` output (`name` or `key="value"` per line).
    /// Target keys and rustc's built-in names become decided; `debug_assertions` does not
    /// (it follows the profile, which the caller knows), nor does `test`.
    pub fn from_rustc_print(text: &str) -> Cfgs {
        let mut cfgs = Cfgs::default();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            match line.split_once('=') {
                Some((k, v)) => {
                    let v = v.trim().trim_matches('"');
                    cfgs.pairs.insert((k.trim().to_owned(), v.to_owned()));
                }
                None if line != "debug_assertions" => {
                    cfgs.names.insert(line.to_owned());
                }
                None => {}
            }
        }
        cfgs.decided.extend(
            BUILTIN_NAMES
                .iter()
                .chain(TARGET_KEYS)
                .map(|s| s.to_string()),
        );
        cfgs
    }

    /// Sets the enabled features: every other feature is off.
    pub fn with_features<I: IntoIterator<Item = S>, S: Into<String>>(
        mut self,
        features: I,
    ) -> Cfgs {
        self.pairs.retain(|(k, _)| k != "feature");
        for f in features {
            self.pairs.insert(("feature".to_owned(), f.into()));
        }
        self.decided.insert("feature".to_owned());
        self
    }

    /// Decides a name: set (`true`) or known to be unset (`false`), e.g. `test`.
    pub fn with_name(mut self, name: &str, value: bool) -> Cfgs {
        if value {
            self.names.insert(name.to_owned());
        } else {
            self.names.remove(name);
        }
        self.decided.insert(name.to_owned());
        self
    }

    /// `--cfg` flags (from RUSTFLAGS): `name` or `key="value"`, set for the build.
    pub fn with_cfg_flag(mut self, flag: &str) -> Cfgs {
        match flag.split_once('=') {
            Some((k, v)) => {
                let v = v.trim().trim_matches('"');
                self.pairs.insert((k.trim().to_owned(), v.to_owned()));
            }
            None => {
                self.names.insert(flag.trim().to_owned());
            }
        }
        self
    }

    /// A fingerprint of everything evaluation depends on (for caches keyed by options).
    pub fn key(&self) -> String {
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        let pairs: Vec<String> = self.pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let decided: Vec<&str> = self.decided.iter().map(String::as_str).collect();
        format!(
            "{};{};{}",
            names.join(","),
            pairs.join(","),
            decided.join(",")
        )
    }

    /// Evaluates a cfg predicate's tokens (what is inside `cfg(..)`): `Some(value)` when the
    /// build decides it, `None` when it cannot.
    pub fn eval(&self, predicate: &TokenStream) -> Option<bool> {
        let tokens: Vec<TokenTree> = predicate.clone().into_iter().collect();
        self.eval_tokens(&tokens)
    }

    fn eval_tokens(&self, tokens: &[TokenTree]) -> Option<bool> {
        match tokens {
            [TokenTree::Ident(id)] => {
                let name = id.to_string();
                match name.as_str() {
                    "true" => Some(true),
                    "false" => Some(false),
                    _ if self.names.contains(&name) => Some(true),
                    _ if self.decided.contains(&name) => Some(false),
                    _ => None,
                }
            }
            [TokenTree::Ident(key), TokenTree::Punct(eq), TokenTree::Literal(lit)]
                if eq.as_char() == '=' =>
            {
                let key = key.to_string();
                let value = string_value(&lit.to_string())?;
                if self.pairs.contains(&(key.clone(), value)) {
                    Some(true)
                } else if self.decided.contains(&key) {
                    Some(false)
                } else {
                    None
                }
            }
            [TokenTree::Ident(op), TokenTree::Group(g)]
                if g.delimiter() == Delimiter::Parenthesis =>
            {
                let args: Vec<Vec<TokenTree>> = split_commas(g.stream());
                match op.to_string().as_str() {
                    "all" => args
                        .iter()
                        .try_fold(Some(true), |acc, a| match self.eval_tokens(a) {
                            Some(false) => Err(()),
                            Some(true) => Ok(acc),
                            None => Ok(None),
                        })
                        .unwrap_or(Some(false)),
                    "any" => args
                        .iter()
                        .try_fold(Some(false), |acc, a| match self.eval_tokens(a) {
                            Some(true) => Err(()),
                            Some(false) => Ok(acc),
                            None => Ok(None),
                        })
                        .unwrap_or(Some(true)),
                    "not" if args.len() == 1 => self.eval_tokens(&args[0]).map(|v| !v),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// The value of a plain string literal's source text (`"shuttle"`), if it is one.
fn string_value(lit: &str) -> Option<String> {
    let inner = lit.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('\\')).then(|| inner.to_owned())
}

/// Top-level comma-separated parts of a token stream (empty parts dropped).
fn split_commas(stream: TokenStream) -> Vec<Vec<TokenTree>> {
    let mut parts = vec![Vec::new()];
    for tt in stream {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => parts.push(Vec::new()),
            _ => parts.last_mut().expect("never empty").push(tt),
        }
    }
    parts.retain(|p| !p.is_empty());
    parts
}

/// The one-line text of a predicate, as reports show it: `feature = "shuttle"`, `not(loom)`.
fn predicate_text(tokens: &[TokenTree]) -> String {
    let stream: TokenStream = tokens.iter().cloned().collect();
    let text = stream.to_string();
    // proc-macro2 prints `not (loom)` and `all (a , b)`: close the gaps people do not write.
    text.replace(" (", "(")
        .replace(" ,", ",")
        .replace("( ", "(")
        .replace(" )", ")")
}

/// What the cfgs among an item's attributes say about it, recording each predicate met.
struct Attrs {
    /// The item is compiled: `Some(false)` when a `cfg` predicate is false for this build.
    active: Option<bool>,
    /// `cfg_attr` attributes (by `#` offset) whose predicate is false: their attributes do not
    /// apply.
    off: Vec<usize>,
}

fn attrs(plan: &mut Plan, cfgs: &Cfgs, attrs: &[Attribute]) -> Attrs {
    let mut out = Attrs {
        active: Some(true),
        off: Vec::new(),
    };
    for attr in attrs {
        let syn::Meta::List(list) = &attr.meta else {
            continue;
        };
        let at = plan.index.start(attr.pound_token.span);
        if list.path.is_ident("cfg") {
            let tokens: Vec<TokenTree> = list.tokens.clone().into_iter().collect();
            let value = cfgs.eval_tokens(&tokens);
            record(plan, at, &tokens, value);
            out.active = and(out.active, value);
        } else if list.path.is_ident("cfg_attr") {
            let mut parts = split_commas(list.tokens.clone());
            if parts.is_empty() {
                continue;
            }
            let predicate = parts.remove(0);
            let value = cfgs.eval_tokens(&predicate);
            record(plan, at, &predicate, value);
            if value == Some(false) {
                out.off.push(at);
                continue;
            }
            // `cfg_attr(p, cfg(q))`: q applies when p holds; undecided p leaves it undecided.
            for part in &parts {
                if let [TokenTree::Ident(id), TokenTree::Group(g)] = part.as_slice() {
                    if id == "cfg" && g.delimiter() == Delimiter::Parenthesis {
                        let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                        let q = cfgs.eval_tokens(&inner);
                        let applied = match (value, q) {
                            (_, Some(true)) => Some(true),
                            (Some(true), q) => q,
                            _ => None,
                        };
                        out.active = and(out.active, applied);
                    }
                }
            }
        }
    }
    out
}

fn and(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

fn record(plan: &mut Plan, at: usize, predicate: &[TokenTree], value: Option<bool>) {
    let (line, column) = plan.index.line_col(at);
    plan.cfg_decisions.push(CfgDecision {
        line,
        column,
        predicate: predicate_text(predicate),
        value,
    });
}

/// Whether `attrs` (an item's outer and inner attributes) leave it in the build; `None` when
/// undecided. For callers outside a file's plan (the crate-wide alias scan).
pub(crate) fn active(cfgs: &Cfgs, attrs: &[Attribute]) -> Option<bool> {
    let mut active = Some(true);
    for attr in attrs {
        if let syn::Meta::List(list) = &attr.meta {
            if list.path.is_ident("cfg") {
                active = and(active, cfgs.eval(&list.tokens));
            }
        }
    }
    active
}

/// The first pass over a file when the build's cfgs are known: marks inactive code (the byte
/// ranges of items, statements, expressions, arms, fields under a false predicate) and the
/// `cfg_attr`s that do not apply, and records every predicate met.
pub(crate) fn scan(plan: &mut Plan, file: &syn::File) {
    let Some(cfgs) = plan.opts.cfg.clone() else {
        return;
    };
    let file_attrs = attrs(plan, &cfgs, &file.attrs);
    plan.cfg_off.extend(file_attrs.off);
    if file_attrs.active == Some(false) {
        plan.inactive.push(0..plan.src().len());
        return;
    }
    Scan { plan, cfgs: &cfgs }.visit_file(file);
}

struct Scan<'p, 'a, 'c> {
    plan: &'p mut Plan<'a>,
    cfgs: &'c Cfgs,
}

impl Scan<'_, '_, '_> {
    /// Evaluates a node's attributes; false: marks the node inactive and returns false (do not
    /// descend).
    fn node(&mut self, node_attrs: &[Attribute], node: &dyn ToTokens) -> bool {
        if node_attrs.is_empty() {
            return true;
        }
        let a = attrs(self.plan, self.cfgs, node_attrs);
        self.plan.cfg_off.extend(a.off);
        if a.active != Some(false) {
            return true;
        }
        if let Some(range) = token_range(self.plan, node.to_token_stream()) {
            self.plan.inactive.push(range);
        }
        false
    }
}

/// Byte range from the first to the last token of a node.
fn token_range(plan: &Plan, tokens: TokenStream) -> Option<Range<usize>> {
    let mut iter = tokens.into_iter();
    let first = iter.next()?;
    let last = iter.last().unwrap_or_else(|| first.clone());
    Some(plan.index.range(first.span(), last.span()))
}

macro_rules! gate {
    ($($method:ident($ty:ty) => $walk:path, |$n:ident| $attrs:expr;)*) => {
        $(fn $method(&mut self, $n: &'ast $ty) {
            if self.node($attrs, $n) {
                $walk(self, $n);
            }
        })*
    };
}

impl<'ast> Visit<'ast> for Scan<'_, '_, '_> {
    gate! {
        visit_item(syn::Item) => visit::visit_item, |n| item_attrs(n);
        visit_impl_item(syn::ImplItem) => visit::visit_impl_item, |n| impl_item_attrs(n);
        visit_trait_item(syn::TraitItem) => visit::visit_trait_item, |n| trait_item_attrs(n);
        visit_foreign_item(syn::ForeignItem) => visit::visit_foreign_item, |n| foreign_item_attrs(n);
        visit_local(syn::Local) => visit::visit_local, |n| &n.attrs;
        visit_stmt_macro(syn::StmtMacro) => visit::visit_stmt_macro, |n| &n.attrs;
        visit_expr(syn::Expr) => visit::visit_expr, |n| crate::visit::expr_attrs(n);
        visit_arm(syn::Arm) => visit::visit_arm, |n| &n.attrs;
        visit_field(syn::Field) => visit::visit_field, |n| &n.attrs;
        visit_variant(syn::Variant) => visit::visit_variant, |n| &n.attrs;
        visit_field_value(syn::FieldValue) => visit::visit_field_value, |n| &n.attrs;
    }
}

pub(crate) fn item_attrs(item: &syn::Item) -> &[Attribute] {
    use syn::Item::*;
    match item {
        Const(x) => &x.attrs,
        Enum(x) => &x.attrs,
        ExternCrate(x) => &x.attrs,
        Fn(x) => &x.attrs,
        ForeignMod(x) => &x.attrs,
        Impl(x) => &x.attrs,
        Macro(x) => &x.attrs,
        Mod(x) => &x.attrs,
        Static(x) => &x.attrs,
        Struct(x) => &x.attrs,
        Trait(x) => &x.attrs,
        TraitAlias(x) => &x.attrs,
        Type(x) => &x.attrs,
        Union(x) => &x.attrs,
        Use(x) => &x.attrs,
        _ => &[],
    }
}

fn impl_item_attrs(item: &syn::ImplItem) -> &[Attribute] {
    match item {
        syn::ImplItem::Const(x) => &x.attrs,
        syn::ImplItem::Fn(x) => &x.attrs,
        syn::ImplItem::Type(x) => &x.attrs,
        syn::ImplItem::Macro(x) => &x.attrs,
        _ => &[],
    }
}

fn trait_item_attrs(item: &syn::TraitItem) -> &[Attribute] {
    match item {
        syn::TraitItem::Const(x) => &x.attrs,
        syn::TraitItem::Fn(x) => &x.attrs,
        syn::TraitItem::Type(x) => &x.attrs,
        syn::TraitItem::Macro(x) => &x.attrs,
        _ => &[],
    }
}

fn foreign_item_attrs(item: &syn::ForeignItem) -> &[Attribute] {
    match item {
        syn::ForeignItem::Fn(x) => &x.attrs,
        syn::ForeignItem::Static(x) => &x.attrs,
        syn::ForeignItem::Type(x) => &x.attrs,
        syn::ForeignItem::Macro(x) => &x.attrs,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn linux() -> Cfgs {
        Cfgs::from_rustc_print(
            "debug_assertions\npanic=\"unwind\"\ntarget_arch=\"x86_64\"\ntarget_family=\"unix\"\ntarget_os=\"linux\"\ntarget_pointer_width=\"64\"\nunix\n",
        )
        .with_features(["std", "default"])
        .with_name("test", true)
    }

    fn eval(cfgs: &Cfgs, predicate: &str) -> Option<bool> {
        cfgs.eval(&predicate.parse().unwrap())
    }

    #[test]
    fn predicates_evaluate_in_three_valued_logic() {
        let c = linux();
        for (predicate, value) in [
            ("unix", Some(true)),
            ("windows", Some(false)),
            ("test", Some(true)),
            ("miri", Some(false)),
            ("target_os = \"linux\"", Some(true)),
            ("target_os = \"macos\"", Some(false)),
            ("target_pointer_width = \"64\"", Some(true)),
            ("feature = \"std\"", Some(true)),
            ("feature = \"shuttle\"", Some(false)),
            ("loom", None),
            ("tokio_unstable", None),
            ("my_key = \"x\"", None),
            ("not(loom)", None),
            ("not(feature = \"shuttle\")", Some(true)),
            ("all(unix, feature = \"std\")", Some(true)),
            ("all(unix, loom)", None),
            ("all(windows, loom)", Some(false)),
            ("all()", Some(true)),
            ("any(windows, loom)", None),
            ("any(unix, loom)", Some(true)),
            ("any(windows, miri)", Some(false)),
            ("any()", Some(false)),
            ("not(any(loom, feature = \"shuttle\"))", None),
            ("not(all(test, not(windows)))", Some(false)),
            ("true", Some(true)),
            ("false", Some(false)),
            ("debug_assertions", None),
            ("version(\"1.80\")", None),
            ("not(a, b)", None),
        ] {
            assert_eq!(eval(&c, predicate), value, "{predicate}");
        }
        // A name set by `--cfg` is decided true; test as known false.
        let c = linux().with_cfg_flag("loom").with_name("test", false);
        assert_eq!(eval(&c, "loom"), Some(true));
        assert_eq!(eval(&c, "all(loom, not(test))"), Some(true));
        // Without any knowledge nothing is decided but literals.
        let none = Cfgs::default();
        assert_eq!(eval(&none, "unix"), None);
        assert_eq!(eval(&none, "feature = \"x\""), None);
        assert_eq!(eval(&none, "any(true, x)"), Some(true));
    }

    #[test]
    fn rustc_print_and_key() {
        let c = linux();
        assert!(c.names.contains("unix") && !c.names.contains("debug_assertions"));
        assert!(c.pairs.contains(&("target_os".into(), "linux".into())));
        assert_ne!(c.key(), linux().with_features(["x"]).key());
    }

    fn build(features: &[&str]) -> crate::Options {
        crate::Options {
            cfg: Some(linux().with_features(features.iter().copied())),
            ..crate::Options::default()
        }
    }

    fn text(src: &str, opts: &crate::Options) -> String {
        crate::instrument_source(src, opts).unwrap().text
    }

    const SHADOW: &str = "#[cfg(feature = \"shuttle\")]\nmod std { pub use ::shuttle::{sync, thread}; }\npub fn f() { std::thread::yield_now(); }\n";

    #[test]
    fn a_shadow_module_left_out_of_the_build_hides_nothing() {
        // Today's rule without cfgs, and with the feature on: the shadow hides `std`.
        assert_eq!(text(SHADOW, &crate::Options::default()), SHADOW);
        assert_eq!(text(SHADOW, &build(&["shuttle"])), SHADOW);
        // Feature off: the module is not compiled, `std` is the crate.
        let out = crate::instrument_source(SHADOW, &build(&[])).unwrap();
        assert_eq!(
            out.text,
            SHADOW.replace("{ std::thread", "{ ::pulse::std::thread"),
            "the shadow's own `::shuttle` paths stay, the real std path is rewritten"
        );
        assert!(out.report.findings.is_empty(), "{:?}", out.report.findings);
        assert_eq!(
            out.report.cfgs,
            [crate::CfgDecision {
                line: 1,
                column: 1,
                predicate: "feature = \"shuttle\"".into(),
                value: Some(false)
            }]
        );
    }

    #[test]
    fn code_left_out_is_left_alone_and_undecided_code_is_rewritten() {
        let src = "#[cfg(loom)]\npub(crate) use loom::sync::Mutex;\n#[cfg(not(loom))]\npub(crate) use std::sync::Mutex;\n#[cfg(feature = \"x\")]\nfn a() { std::thread::yield_now() }\n#[cfg(not(feature = \"x\"))]\nfn b() { std::thread::yield_now() }\nfn c() { #[cfg(windows)] std::thread::yield_now(); let _ = 1; }\n";
        let out = crate::instrument_source(src, &build(&[])).unwrap();
        assert_eq!(
            out.text,
            "#[cfg(loom)]\npub(crate) use loom::sync::Mutex;\n#[cfg(not(loom))]\npub(crate) use ::pulse::std::sync::Mutex;\n#[cfg(feature = \"x\")]\nfn a() { std::thread::yield_now() }\n#[cfg(not(feature = \"x\"))]\nfn b() { ::pulse::std::thread::yield_now() }\nfn c() { #[cfg(windows)] std::thread::yield_now(); let _ = 1; }\n"
        );
        let values: Vec<(&str, Option<bool>)> = out
            .report
            .cfgs
            .iter()
            .map(|c| (c.predicate.as_str(), c.value))
            .collect();
        assert_eq!(
            values,
            [
                ("loom", None),
                ("not(loom)", None),
                ("feature = \"x\"", Some(false)),
                ("not(feature = \"x\")", Some(true)),
                ("windows", Some(false)),
            ]
        );
        // `loom` decided off (say, `--cfg` flags known and none set it): nothing changes for
        // the branches, only the report.
        let mut opts = build(&[]);
        opts.cfg = opts.cfg.map(|c| c.with_name("loom", false));
        assert_eq!(crate::instrument_source(src, &opts).unwrap().text, out.text);
    }

    #[test]
    fn a_file_left_out_by_its_inner_cfg_is_untouched() {
        let src = "#![cfg(loom)]\nuse std::sync::Arc;\n#[test]\nfn t() {}\n";
        let mut opts = build(&[]);
        opts.wrap_tests = true;
        let undecided = text(src, &opts);
        assert!(undecided.contains("::pulse::std::sync::Arc") && undecided.contains("run_test"));
        opts.cfg = opts.cfg.map(|c| c.with_name("loom", false));
        let out = crate::instrument_source(src, &opts).unwrap();
        assert_eq!(out.text, src);
        assert!(out.report.rewrites.is_empty());
    }

    #[test]
    fn cfg_attr_with_a_false_predicate_applies_nothing() {
        let src = "#[cfg_attr(feature = \"x\", test)]\nfn t() { std::thread::yield_now() }\n#[cfg_attr(not(feature = \"x\"), test)]\nfn u() {}\n#[cfg_attr(feature = \"x\", cfg(windows))]\nfn v() { std::thread::yield_now() }\n#[cfg_attr(unix, cfg(windows))]\nfn w() { std::thread::yield_now() }\n";
        let mut opts = build(&[]);
        opts.wrap_tests = true;
        let out = text(src, &opts);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[1], "fn t() { ::pulse::std::thread::yield_now() }",
            "not a test"
        );
        assert!(lines[3].contains("run_test"), "{}", lines[3]);
        assert_eq!(
            lines[5], "fn v() { ::pulse::std::thread::yield_now() }",
            "compiled"
        );
        assert_eq!(lines[7], "fn w() { std::thread::yield_now() }", "left out");
    }

    #[test]
    fn aliases_and_facts_left_out_of_the_build_do_not_count() {
        let opts = build(&[]);
        let src = "#[cfg(feature = \"x\")]\nuse std as s;\nmod s { pub fn thread() {} }\nfn f() { s::thread(); }\n";
        assert_eq!(text(src, &opts), src);
        let mut cx = crate::CrateContext::new(std::path::Path::new("/c"));
        cx.add_source("#[cfg(feature = \"x\")]\nextern crate std as s;\n", &opts);
        assert_eq!(cx.key(), "");
        cx.add_source("extern crate std as t;\n", &opts);
        assert_eq!(cx.key(), "t=Std");
        // agnostic-lite 0.7.0's lib.rs, its `std` feature on but undecided here: its
        // `std::time::Instant` elsewhere was left std's, and async-io's pulse `Instant` met it.
        cx.add_source(
            "#[cfg(all(feature = \"alloc\", not(feature = \"std\")))]\nextern crate alloc as std;\n",
            &crate::Options::default(),
        );
        assert_eq!(cx.key(), "t=Std");
        let src = "use std::time::Instant;\n";
        let out = crate::instrument_file(src, std::path::Path::new("src/time.rs"), &opts, &cx);
        assert_ne!(out.unwrap().text, src, "rewritten");
    }
}
