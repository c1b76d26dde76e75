//! Rewrites a crate's uses of std's concurrency (`std::sync`, `std::thread`, `std::time`,
//! `std::hint`, `thread_local!`) into pulse's shim, and reports what it could not rewrite.
//!
//! [`instrument_source`] is a pure function from one file's text to rewritten text plus a
//! [`FileReport`]; [`instrument_tree`] applies it in place to every `.rs` file of a copied
//! crate. Edits are byte-range patches on the original text, never a reprint: every line
//! keeps its number, untouched text stays byte-identical, and instrumenting twice changes
//! nothing more.
//!
//! # What is rewritten
//! Every path that reaches `std::{sync, thread, time, hint}`, `core::{sync, hint}`,
//! `alloc::sync` or `std::thread_local!` has its root swapped for [`Options::shim_root`]
//! (`std::sync::Mutex` -> `::pulse::std::sync::Mutex`), wherever it is written: `use` trees
//! (mixed groups are split on the same line), expressions, types, patterns, bounds, impl
//! headers, attributes, and the tokens of macro invocations and `macro_rules!` bodies.
//! Roots reached through `extern crate std as foo` and `use std as s` are followed.
//! Inside a `#[macro_export] macro_rules!` body, which other crates expand (some of them not
//! instrumented, with no dependency on the facade), the root becomes
//! `$crate::`[`MACRO_FACADE`] (`$crate::__pulse::std::sync::Mutex`) and every crate root of a
//! crate that exports macros re-exports the facade under that name (see
//! [`Options::crate_root`]).
//! A bare `thread_local!` becomes `<shim>::thread_local!` unless the file defines its own.
//! `Arc`, `Weak`, `Duration` and the other types the shim re-exports from std are rewritten
//! too: the result is the same type, and one uniform rule is easier to trust.
//! Without [`Options::cfg`] code under every `#[cfg]` branch is rewritten; with it, code the
//! build leaves out is left alone and only undecided predicates keep that rule (see
//! [`Cfgs`]). Comments,
//! string literals and doc comments are never touched, nor are look-alike paths
//! (`my::std::sync`, `crate::sync`, `self::thread::x`).
//!
//! # What is reported
//! See [`FindingKind`]: other crates' synchronisation, blocking I/O, raw intrinsics and
//! `asm!`, FFI, attribute macros, tests that cannot be wrapped, atomic markers that cannot
//! be wrapped, std aliases and globs, and source pulled from outside the tree. A file syn
//! cannot parse is reported with its error position and left byte-identical.
//!
//! # Tests and atomic sections
//! With [`Options::wrap_tests`], `#[test]` bodies are run through
//! `::pulse::__private::run_test` (contract in the `tests_wrap` module docs). Atomic markers
//! and `[package.metadata.pulse] atomic` entries are described in the `atomic` module docs
//! and the crate README.

mod atomic;
mod cfg;
mod edition;
mod modules;
mod paths;
mod plan;
mod reactor_wait;
mod report;
mod span;
mod tests_wrap;
mod textedit;
mod tokens;
mod tree;
mod use_tree;
mod visit;

pub use cfg::Cfgs;
pub use modules::{file_refs, FileRef};
pub use report::{
    CfgDecision, FileReport, Finding, FindingKind, ParseError, Rewrite, RewriteKind, TreeReport,
};
pub use tree::instrument_tree;

use plan::{ExternalRef, Plan};
use proc_macro2::TokenStream;
use span::LineIndex;
use std::path::{Path, PathBuf};

/// How to instrument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Path that replaces `std` in rewritten paths. Its parent (`::pulse`) is taken as the
    /// facade crate for `run_test` and `atomic`.
    pub shim_root: String,
    /// Wrap `#[test]` fn bodies in `run_test` (for `cargo pulse test`).
    pub wrap_tests: bool,
    /// Call paths to run as one atomic step (`std::fs::*`, `mydb::Client::query`).
    pub atomic_paths: Vec<String>,
    /// The file is the root of an edition-2015 crate (lib, bin, test, bench or example). There
    /// a leading `::name` and a `use name::..` resolve from the crate root, not from the extern
    /// prelude, so the facade must be declared: ` #[allow(unused_extern_crates)] extern crate
    /// pulse;` is appended after the file's last item, on that item's line, so no line or
    /// earlier column moves. [`instrument_tree`] sets it for the roots it is given.
    pub declare_facade: bool,
    /// The file is a crate root (lib, bin, test, bench or example; any edition). If its crate
    /// defines a `#[macro_export] macro_rules!` (this file, or any file [`CrateContext`] saw),
    /// ` #[doc(hidden)] pub extern crate pulse as __pulse;` is appended after the file's last
    /// item, as for [`Options::declare_facade`]: exported macro bodies name the shim through
    /// `$crate::__pulse` (see [`MACRO_FACADE`]), which must resolve in every crate that expands
    /// them, instrumented or not. A caller instrumenting a crate marks every root it builds
    /// (an unmarked one leaves those paths dangling); [`instrument_tree`] marks cargo's
    /// conventional roots and the facade roots it is given.
    pub crate_root: bool,
    /// std's modules whose paths go to `shim_root` (default: `sync`, `thread`, `time`, `hint`,
    /// `thread_local`, the last also covering a bare `thread_local!`). `core::{sync, hint}` and
    /// `alloc::sync` follow their std namesake. A port to a tool that does not model time
    /// leaves `time` out.
    pub std_modules: Vec<String>,
    /// What the build knows about cfgs (features, target, `test`, `--cfg` flags). `None`
    /// rewrites under every `#[cfg]` branch; `Some` leaves code the build leaves out alone and
    /// reports each predicate as decided or not (see [`Cfgs`]).
    pub cfg: Option<Cfgs>,
    /// The file belongs to an edition-2015 crate, where `try`, `async`, `await` and `dyn` (when
    /// it does not start a trait object) are plain identifiers (`pub fn try(&self)`). syn
    /// follows 2018's keywords, so they are read as raw identifiers (`r#try`, same span);
    /// the output keeps the original spelling. Wrong for a 2018+ file (`async fn` no longer
    /// parses): set it only for 2015 crates.
    pub edition_2015: bool,
    /// Crates that are instrumented themselves (the crate's own name, its workspace's members,
    /// the dependencies instrumented with it): their paths are not reported as
    /// [`FindingKind::ForeignSync`]. Names as written in paths (`crossbeam_utils`).
    pub instrumented_crates: Vec<String>,
    /// Put `<shim>::sync::atomic::__pulse_drop_acquire(&*self);` first in every `Drop::drop`
    /// (pulse's relaxed memory model learns that the dropping thread has every other owner's
    /// accesses behind it). On by default; a port to another tool's shim (bench's loom and
    /// shuttle columns), which has no such hook, turns it off.
    pub drop_acquire: bool,
}

/// The name under which a crate root re-exports the facade crate for its exported macros'
/// bodies (`$crate::__pulse::std::sync::atomic::AtomicU8`): the crate expanding such a macro
/// may not be instrumented and so may not depend on the facade itself.
pub const MACRO_FACADE: &str = "__pulse";

/// std's modules the shim mirrors: [`Options::std_modules`]' default.
pub const SHIM_MODULES: &[&str] = &["sync", "thread", "time", "hint", "thread_local"];

impl Default for Options {
    fn default() -> Self {
        Options {
            shim_root: "::pulse::std".to_owned(),
            wrap_tests: false,
            atomic_paths: Vec::new(),
            declare_facade: false,
            crate_root: false,
            std_modules: SHIM_MODULES.iter().map(|m| m.to_string()).collect(),
            cfg: None,
            edition_2015: false,
            instrumented_crates: Vec::new(),
            drop_acquire: true,
        }
    }
}

/// Facts about a whole crate that one of its files cannot see: the `extern crate std as foo;`
/// aliases declared anywhere in it (which hold crate-wide), whether any of its files defines a
/// `#[macro_export] macro_rules!` (its roots then re-export the facade, see
/// [`Options::crate_root`]), and its directory (source pulled in from outside it is reported).
/// Collected once per crate by [`CrateContext::scan`] (what [`instrument_tree`] does) and
/// handed to [`instrument_file`] for each file, so instrumenting a crate file by file and as a
/// tree give the same text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrateContext {
    dir: PathBuf,
    aliases: Vec<(String, paths::Crate)>,
    exports_macros: bool,
}

impl CrateContext {
    /// Reads every `.rs` file [`instrument_tree`] would instrument under `crate_dir` (the same
    /// walk and `skip` rules), minus the files of packages nested in it, and collects the
    /// crate-wide facts; `opts.cfg` decides which declarations this build compiles.
    pub fn scan(crate_dir: &Path, skip: &[PathBuf], opts: &Options) -> std::io::Result<Self> {
        let files = tree::rust_files(crate_dir, skip, true)?;
        let mut cx = CrateContext::new(crate_dir);
        for path in files {
            if let Ok(text) = std::fs::read_to_string(&path) {
                cx.add_source(&text, opts);
            }
        }
        Ok(cx)
    }

    /// An empty context for the crate in `dir`.
    pub fn new(dir: &Path) -> Self {
        CrateContext {
            dir: dir.to_path_buf(),
            aliases: Vec::new(),
            exports_macros: false,
        }
    }

    /// Adds the crate-wide declarations of one of the crate's files.
    pub fn add_source(&mut self, src: &str, opts: &Options) {
        for alias in extern_crate_aliases(src, opts) {
            if !self.aliases.contains(&alias) {
                self.aliases.push(alias);
            }
        }
        self.exports_macros |= tokens::exports_macro(src);
    }

    /// The crate's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A fingerprint of the facts (for caches of instrumented files).
    pub fn key(&self) -> String {
        let names: Vec<String> = self
            .aliases
            .iter()
            .map(|(alias, krate)| format!("{alias}={krate:?}"))
            .collect();
        let exports = if self.exports_macros {
            "|macro_export"
        } else {
            ""
        };
        format!("{}{exports}", names.join(","))
    }
}

/// A rewritten file and what was done to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instrumented {
    pub text: String,
    pub report: FileReport,
}

/// Instruments one file's source text on its own (no crate context). Fails (and rewrites
/// nothing) if syn cannot parse it.
pub fn instrument_source(src: &str, opts: &Options) -> Result<Instrumented, ParseError> {
    instrument(src, opts, &CrateContext::default()).map(|(instrumented, _)| instrumented)
}

/// Instruments one file of the crate `cx` describes: `path` is where the file sits (under
/// `cx.dir()`, used to report `#[path]` modules and `include!`s from outside the crate; the
/// report's `path` is left for the caller). The one per-file function: [`instrument_tree`]
/// calls it for each file, and so do tools that instrument file by file.
pub fn instrument_file(
    src: &str,
    path: &Path,
    opts: &Options,
    cx: &CrateContext,
) -> Result<Instrumented, ParseError> {
    let (mut out, external) = instrument(src, opts, cx)?;
    let root = tree::normalize(&cx.dir);
    let dir = path.parent().unwrap_or(&cx.dir);
    for ext in external {
        let target = tree::normalize(&dir.join(&ext.path));
        if !target.starts_with(&root) {
            out.report.findings.push(Finding {
                line: ext.line,
                column: ext.column,
                kind: FindingKind::ExternalSource,
                message: format!(
                    "{} `{}` is outside the crate directory and is not instrumented: move it into the crate",
                    ext.what, ext.path
                ),
            });
        }
    }
    Ok(out)
}

/// Whether `src` parses as the instrumenter reads it (the same lexing, edition-2015 keywords
/// and grammar as [`instrument_file`]), rewriting nothing. cargo-pulse checks every file of a
/// dependency with it first: a crate is instrumented whole or not at all.
pub fn check_parse(src: &str, opts: &Options) -> Result<(), ParseError> {
    parse(src, opts, &LineIndex::new(src)).map(|_| ())
}

/// A file's tokens (read as 2018) and its syntax tree: a file, or (what `include!` pulls into
/// expression position) one expression.
fn parse(
    src: &str,
    opts: &Options,
    index: &LineIndex,
) -> Result<(TokenStream, Result<syn::File, syn::Expr>), ParseError> {
    let lexable = span::lexable(src);
    let tokens = lexable.parse().map_err(|e: proc_macro2::LexError| {
        let (line, column) = index.line_col(index.offset(e.span().start()));
        let message = "cannot tokenize: unbalanced delimiter or invalid token".to_owned();
        ParseError {
            line,
            column,
            message,
        }
    })?;
    let (tokens, file) = edition::read_file(tokens, opts);
    // A file holding one expression is what `include!` pulls into expression position: the
    // token sweep alone handles it.
    let parsed = match file {
        Ok(file) => Ok(file),
        Err(e) => match syn::parse2::<syn::Expr>(tokens.clone()) {
            Ok(expr) => Err(expr),
            Err(_) => {
                let message = e.to_string();
                // At the end of input syn can only point at the call site (line 1).
                let at = if message.contains("end of input") {
                    src.len()
                } else {
                    index.offset(e.span().start())
                };
                let (line, column) = index.line_col(at);
                return Err(ParseError {
                    line,
                    column,
                    message,
                });
            }
        },
    };
    Ok((tokens, parsed))
}

/// The full pipeline for one file, also returning the external sources it pulls in.
pub(crate) fn instrument(
    src: &str,
    opts: &Options,
    cx: &CrateContext,
) -> Result<(Instrumented, Vec<ExternalRef>), ParseError> {
    let index = LineIndex::new(src);
    let (tokens, parsed) = parse(src, opts, &index)?;
    let mut plan = Plan::new(src, opts, cx);
    match &parsed {
        Ok(file) => {
            cfg::scan(&mut plan, file);
            visit::declarations(&mut plan, file);
            visit::main(&mut plan, visit::Tree::File(file));
            if opts.declare_facade {
                visit::declare_facade(&mut plan, file);
            }
        }
        Err(expr) => visit::main(&mut plan, visit::Tree::Expr(expr)),
    }
    tokens::sweep(&mut plan, tokens);
    if let (true, Ok(file)) = (opts.crate_root, &parsed) {
        if cx.exports_macros || plan.exports_macros {
            visit::declare_macro_facade(&mut plan, file);
        }
    }
    tests_wrap::finalize(&mut plan);
    visit::finalize(&mut plan);
    let external = std::mem::take(&mut plan.external);
    let (text, report) = plan.finish();
    Ok((Instrumented { text, report }, external))
}

/// `extern crate std as foo;` aliases declared in a file, which hold crate-wide (those the
/// build leaves out by a false cfg excepted).
fn extern_crate_aliases(src: &str, opts: &Options) -> Vec<(String, paths::Crate)> {
    if !src.contains("extern crate") {
        return Vec::new();
    }
    let Ok(tokens) = span::lexable(src).parse::<TokenStream>() else {
        return Vec::new();
    };
    let (_, Ok(file)) = edition::read_file(tokens, opts) else {
        return Vec::new();
    };
    let out_of_build = |attrs: &[syn::Attribute]| {
        opts.cfg
            .as_ref()
            .is_some_and(|c| cfg::active(c, attrs) == Some(false))
    };
    if out_of_build(&file.attrs) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for item in &file.items {
        if let syn::Item::ExternCrate(e) = item {
            if out_of_build(&e.attrs) {
                continue;
            }
            let krate = match e.ident.to_string().as_str() {
                "std" => paths::Crate::Std,
                "core" => paths::Crate::Core,
                "alloc" => paths::Crate::Alloc,
                _ => continue,
            };
            // `extern crate alloc as std;` (agnostic-lite, under a cfg undecided here): a
            // std-family name stays a std-family root, as in a file's own declarations. A
            // path through a module only std has compiles only where it is std.
            if let Some((_, alias)) = e
                .rename
                .as_ref()
                .filter(|(_, a)| !matches!(a.to_string().as_str(), "std" | "core" | "alloc"))
            {
                out.push((alias.to_string(), krate));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_parse_reads_as_instrument_does() {
        let opts = Options::default();
        assert!(check_parse("use std::sync::Mutex; fn f() {}", &opts).is_ok());
        // An anonymous parameter, which only 2015 allows.
        let anonymous = "trait T {\n    fn f(&self, u8);\n}";
        let e = check_parse(anonymous, &opts).unwrap_err();
        assert_eq!((e.line, e.column), (2, 19), "{e:?}");
        // 2015's forms are read as instrument reads them.
        let o2015 = Options {
            edition_2015: true,
            ..Options::default()
        };
        assert!(check_parse("fn try() {}", &o2015).is_ok());
        assert!(check_parse(anonymous, &o2015).is_ok());
        // A 2018 bare closure object (clap 2.34) is read, as instrument reads it.
        assert!(check_parse("type Action = Fn(&u8) + Send + Sync;", &opts).is_ok());
    }

    #[test]
    fn parse_errors_point_at_the_problem_and_rewrite_nothing() {
        let e = instrument_source(
            "use std::sync::Arc;\nfn f() { let x = ; }\n",
            &Options::default(),
        )
        .unwrap_err();
        assert_eq!((e.line, e.column), (2, 18), "{e}");
        let e =
            instrument_source("use std::sync::Arc;\nfn f()\n", &Options::default()).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let e = instrument_source(
            "fn f() {\n  let s = \"unterminated;\n}\n",
            &Options::default(),
        )
        .unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(e.to_string().starts_with("2:"));
    }

    #[test]
    fn an_edition_2015_root_declares_the_facade_without_moving_lines() {
        let opts = Options {
            declare_facade: true,
            ..Options::default()
        };
        let src = "#![allow(dead_code)]\n//! doc\nuse std::sync::Mutex;\nfn f() {}\n// trailing\n";
        let out = instrument_source(src, &opts).unwrap();
        assert_eq!(
            out.text,
            "#![allow(dead_code)]\n//! doc\nuse ::pulse::std::sync::Mutex;\nfn f() {} #[allow(unused_extern_crates)] extern crate pulse;\n// trailing\n"
        );
        assert!(out
            .report
            .rewrites
            .iter()
            .any(|r| r.kind == RewriteKind::ExternCrate && r.line == 4));
        // Declared already, or nothing to declare it after: left alone.
        for src in ["extern crate pulse;\nfn f() {}\n", "//! only docs\n"] {
            assert_eq!(instrument_source(src, &opts).unwrap().text, src);
        }
        // Not a 2015 root: nothing added.
        let out = instrument_source("fn f() {}\n", &Options::default()).unwrap();
        assert_eq!(out.text, "fn f() {}\n");
    }

    #[test]
    fn an_edition_2015_file_with_try_as_a_name_is_instrumented_in_its_own_spelling() {
        // spin 0.5.2's src/once.rs: `pub fn try(&self)` and `match self.try() {`.
        let src = "use std::sync::atomic::{AtomicUsize, Ordering};\npub struct Once(AtomicUsize);\nimpl Once {\n    pub fn try(&self) -> usize { self.0.load(Ordering::SeqCst) }\n    pub fn get(&self) -> usize { match self.try() { n => try!(Ok::<_, ()>(n)).max(std::thread::panicking() as usize) } }\n    fn async(&self, dyn: Box<dyn Fn()>) { dyn() }\n}\n";
        let e = instrument_source(src, &Options::default()).unwrap_err();
        assert_eq!(e.line, 4, "{e}");
        let opts = Options {
            edition_2015: true,
            ..Options::default()
        };
        let out = instrument_source(src, &opts).unwrap();
        assert_eq!(
            out.text,
            src.replace("use std::", "use ::pulse::std::")
                .replace("max(std::", "max(::pulse::std::")
        );
        assert!(out.report.parse_error.is_none());
        assert_eq!(instrument_source(&out.text, &opts).unwrap().text, out.text);
    }

    /// An edition-2015 `use` path starts at the crate root: a module's own `mod core`
    /// hides the crate from its expression paths, not from its `use`s (futures 0.1's
    /// `task_impl`). In 2018 it hides both; in a 2015 crate root a top item hides both.
    #[test]
    fn an_edition_2015_use_path_starts_at_the_crate_root() {
        let src = "pub mod inner {\n    mod core {}\n    pub fn f() {\n        use core::sync::atomic::AtomicUsize;\n        let _ = core::mem::size_of::<AtomicUsize>();\n    }\n}\n";
        let o2015 = Options {
            edition_2015: true,
            ..Options::default()
        };
        let out = instrument_source(src, &o2015).unwrap();
        assert!(
            out.text
                .contains("use ::pulse::std::sync::atomic::AtomicUsize;"),
            "{}",
            out.text
        );
        assert!(out.text.contains("let _ = core::mem"), "{}", out.text);
        let out = instrument_source(src, &Options::default()).unwrap();
        assert_eq!(out.text, src);
        let root = Options {
            crate_root: true,
            ..o2015
        };
        let top = src.replace(
            "pub mod inner {\n    mod core {}",
            "mod core {}\npub mod inner {",
        );
        assert_eq!(instrument_source(&top, &root).unwrap().text, top);
    }

    /// A port to another tool's shim (which has no memory-model hook) leaves `Drop` alone.
    #[test]
    fn drop_acquire_is_pulse_s_own_hook() {
        let src = "struct S;\nimpl Drop for S {\n    fn drop(&mut self) {}\n}\n";
        let out = instrument_source(src, &Options::default()).unwrap();
        assert!(
            out.text.contains(
                "fn drop(&mut self) { ::pulse::std::sync::atomic::__pulse_drop_acquire(&*self);}"
            ),
            "{}",
            out.text
        );
        let port = Options {
            shim_root: "::shuttle".into(),
            drop_acquire: false,
            ..Options::default()
        };
        assert_eq!(instrument_source(src, &port).unwrap().text, src);
    }

    fn findings(src: &str, opts: &Options) -> Vec<(usize, FindingKind, String)> {
        let out = instrument_source(src, opts).unwrap();
        let mut found: Vec<_> = out
            .report
            .findings
            .into_iter()
            .map(|f| (f.line, f.kind, f.message))
            .collect();
        found.sort_by_key(|f| f.0);
        found
    }

    #[test]
    fn a_renamed_synchronising_crate_is_followed() {
        // /tmp/trial/repro/alias-foreign (bus: `use crossbeam_channel as mpsc;`).
        let src = "use crossbeam_channel as mpsc;\nuse crossbeam_channel::Receiver;\n\npub fn a(r: mpsc::Receiver<u8>) -> u8 { r.recv().unwrap() }\npub fn b(r: Receiver<u8>) -> u8 { r.recv().unwrap() }\nextern crate parking_lot as pl;\nfn c(m: &pl::Mutex<u8>) {}\nuse serde as s;\nfn d(x: s::Value) {}\n";
        let found = findings(src, &Options::default());
        let lines: Vec<usize> = found.iter().map(|f| f.0).collect();
        assert_eq!(lines, [1, 2, 4, 6, 7], "{found:#?}");
        assert!(found.iter().all(|f| f.1 == FindingKind::ForeignSync));
        assert!(
            found[0]
                .2
                .starts_with("`mpsc` is an alias of `crossbeam_channel`"),
            "{}",
            found[0].2
        );
        assert!(
            found[2].2.starts_with(
                "`mpsc::Receiver` (`mpsc` is `crossbeam_channel`): pulse does not schedule it"
            ),
            "{}",
            found[2].2
        );
        assert!(
            found[4]
                .2
                .starts_with("`pl::Mutex` (`pl` is `parking_lot`)"),
            "{}",
            found[4].2
        );
        // An alias in code the build leaves out aliases nothing.
        let src = "#[cfg(any())]\nuse crossbeam_channel as mpsc;\nfn a(r: mpsc::Receiver<u8>) {}\n";
        let opts = Options {
            cfg: Some(Cfgs::default()),
            ..Options::default()
        };
        assert_eq!(findings(src, &opts), []);
    }

    #[test]
    fn instrumented_crates_are_not_foreign_synchronisation() {
        // crossbeam-queue's tests/array_queue.rs, spin's examples, flume's tests.
        let src = "use crossbeam_queue::ArrayQueue;\nuse crossbeam_utils::Backoff as B;\nuse crossbeam_utils as cu;\nfn f() { let m = spin::Mutex::new(0); cu::thread::scope(|_| ()); }\nuse parking_lot::Mutex;\n";
        let opts = Options {
            instrumented_crates: vec![
                "crossbeam_queue".into(),
                "crossbeam_utils".into(),
                "spin".into(),
            ],
            ..Options::default()
        };
        let found = findings(src, &opts);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!((found[0].0, found[0].1), (5, FindingKind::ForeignSync));
        assert_eq!(findings(src, &Options::default()).len(), 6);
    }

    #[test]
    fn a_module_s_own_extern_crate_std_roots_its_self_paths() {
        // lazy_static 1.5.0's inline_lazy.rs (the crate is `no_std`): its `Once` blocked on a
        // real futex while another thread's initialiser yielded.
        let src = "extern crate std;\nuse self::std::cell::Cell;\nuse self::std::sync::Once;\npub use self::std::sync::ONCE_INIT;\nmod inner { use self::std::sync::Once; }\n";
        let out = crate::instrument_source(src, &Options::default())
            .unwrap()
            .text;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[1], "use self::std::cell::Cell;");
        assert_eq!(lines[2], "use ::pulse::std::sync::Once;");
        assert_eq!(lines[3], "pub use ::pulse::std::sync::ONCE_INIT;");
        // A nested module has no `std` of its own: left as it is.
        assert_eq!(lines[4], "mod inner { use self::std::sync::Once; }");
    }

    #[test]
    fn a_facade_s_module_is_its_instrumented_crate_s() {
        // futures-channel's and crossbeam's users: `use futures::channel::oneshot`,
        // `crossbeam::scope(..)`, while the crates behind them are instrumented.
        let src = "use futures::channel::oneshot;\nfn f() { crossbeam::scope(|_| ()); }\nuse crossbeam::channel::bounded;\nuse futures::lock::Mutex;\n";
        let opts = Options {
            instrumented_crates: vec!["futures_channel".into(), "crossbeam_utils".into()],
            ..Options::default()
        };
        let found = findings(src, &opts);
        let lines: Vec<usize> = found.iter().map(|f| f.0).collect();
        assert_eq!(lines, [3, 4], "{found:#?}");
        assert_eq!(findings(src, &Options::default()).len(), 4);
    }

    #[test]
    fn a_local_module_named_like_a_synchronising_crate_is_not_it() {
        // crossfire's `mod crossbeam; pub use crossbeam::err::*;`.
        let src = "mod crossbeam;\npub use crossbeam::err::*;\nfn f() { crossbeam::err::x(); }\nmod inner { use crossbeam::channel; }\nfn g() { ::crossbeam::channel::bounded::<u8>(1); }\n";
        let found = findings(src, &Options::default());
        let lines: Vec<usize> = found.iter().map(|f| f.0).collect();
        // Inside `inner` and through `::`, `crossbeam` is the crate again.
        assert_eq!(lines, [4, 5], "{found:#?}");
        // An alias of a synchronising crate under such a name is followed, not hidden.
        let aliased =
            "use crossbeam_channel as crossbeam;\nfn f() { crossbeam::bounded::<u8>(1); }\n";
        assert_eq!(findings(aliased, &Options::default()).len(), 2);
    }

    #[test]
    fn only_a_child_process_is_blocking_io() {
        // crossbeam-channel's src/counter.rs: `use std::process;` for `process::abort()`.
        let quiet = "use std::process;\nfn f() { process::abort(); std::process::exit(1); ::std::process::id(); }\nuse std::process::{abort, exit as leave};\n";
        assert_eq!(findings(quiet, &Options::default()), []);
        let src = "use std::process;\nfn f() { process::Command::new(\"x\").status(); }\nuse std::process::Command;\nuse std::{fs, process::{self, Child}};\nfn g() { std::process::Command::new(\"y\"); }\nuse std::process::*;\nuse std::process as p;\nfn h(c: p::Child) {}\n";
        let found = findings(src, &Options::default());
        let at: Vec<(usize, FindingKind)> = found.iter().map(|f| (f.0, f.1)).collect();
        use FindingKind::BlockingIo as B;
        // (Line 8's `p::Child` is a parameter's type: nothing blocks there.)
        assert_eq!(
            at,
            [(2, B), (3, B), (4, B), (4, B), (5, B), (6, B)],
            "{found:#?}"
        );
        assert!(
            found[0].2.starts_with("`process::Command`: blocking I/O"),
            "{}",
            found[0].2
        );
        assert!(
            found[4].2.starts_with("`std::process`: blocking I/O"),
            "{}",
            found[4].2
        );
        // An atomic entry covering the module silences it, as for std::fs.
        let opts = Options {
            atomic_paths: vec!["std::process::*".into()],
            ..Options::default()
        };
        assert!(findings(src, &opts).iter().all(|f| f.2.contains("std::fs")));
    }

    #[test]
    fn a_use_the_build_leaves_out_names_nothing() {
        // once_map 0.4.24: `RandomStateInner` is ahash's with the default features, std's
        // under the false cfg; its `::new()` was rewritten to the shim's keyed state (E0277).
        let src = "mod myhash { pub struct RandomState; impl RandomState { pub fn new() -> Self { RandomState } } }\n#[cfg(feature = \"alt\")]\nuse myhash::RandomState as Inner;\n#[cfg(not(feature = \"alt\"))]\nuse std::collections::hash_map::RandomState as Inner;\npub fn make() -> Inner { Inner::new() }\n";
        let build = |alt: bool| {
            let mut cfg = Cfgs::default();
            cfg.decided.insert("feature".into());
            if alt {
                cfg.pairs.insert(("feature".into(), "alt".into()));
            }
            let opts = Options {
                cfg: Some(cfg),
                ..Options::default()
            };
            instrument_source(src, &opts).unwrap().text
        };
        assert!(build(true).ends_with("pub fn make() -> Inner { Inner::new() }\n"));
        assert!(
            build(false).contains("KeyedState>::new()"),
            "{}",
            build(false)
        );
    }

    #[test]
    fn blocking_io_is_reported_where_it_is_called_not_where_its_types_are_named() {
        // async-io's lib.rs re-exports std's socket types and implements its own traits for
        // them: no call there, and nothing that blocks.
        let quiet = "pub use std::net::{TcpListener, TcpStream};\npub(crate) use std::fs::File;\nunsafe impl IoSafe for std::fs::File {}\nstruct S { f: std::fs::File }\nfn f(s: &std::net::UdpSocket) -> Option<std::process::Child> { None }\n";
        assert_eq!(findings(quiet, &Options::default()), []);
        let src = "fn f() { std::fs::read_to_string(\"p\"); std::fs::File::open(\"q\"); std::fs::read::<&str>(\"r\"); }\npub use std::fs;\nuse std::net::TcpStream;\n";
        let found = findings(src, &Options::default());
        let lines: Vec<usize> = found.iter().map(|f| f.0).collect();
        assert_eq!(lines, [1, 1, 1, 2, 3], "{found:#?}");
        assert!(found.iter().all(|f| f.1 == FindingKind::BlockingIo));
    }

    #[test]
    fn custom_shim_root_and_facade() {
        let opts = Options {
            shim_root: "::mypulse::std".into(),
            wrap_tests: true,
            ..Options::default()
        };
        let out =
            instrument_source("#[test]\nfn t() { std::thread::yield_now() }\n", &opts).unwrap();
        assert_eq!(
            out.text,
            "#[test]\nfn t() {::mypulse::__private::run_test(::mypulse::__private::TestMeta { module_path: module_path!(), name: \"t\", should_panic: false }, || { ::mypulse::std::thread::yield_now() })}\n"
        );
    }
}
