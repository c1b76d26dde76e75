//! The changes and findings gathered for one file before any text is touched.
//!
//! The passes (declarations, syntax-tree visitor, token sweep, test wrapping) each add to one
//! `Plan`; `finish` applies the accepted edits once and builds the report, so a file is
//! either fully rewritten or (on a parse error) not at all.

use crate::atomic::Patterns;
use crate::paths::{self, Roots};
use crate::report::{CfgDecision, FileReport, Finding, FindingKind, Rewrite, RewriteKind};
use crate::span::LineIndex;
use crate::textedit::{self, Edit};
use crate::{CrateContext, Options};
use std::collections::{HashMap, HashSet};
use std::ops::Range;

/// Source pulled in from elsewhere (`#[path = ".."] mod`, `include!("..")`), which only the
/// tree walk can check.
#[derive(Debug, Clone)]
pub(crate) struct ExternalRef {
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) what: &'static str,
    pub(crate) path: String,
}

/// A test whose wrapping is decided after the sweep, because the closure's copied return type
/// must carry the sweep's path rewrites too.
#[derive(Debug, Clone)]
pub(crate) struct PendingTest {
    pub(crate) at: usize,
    pub(crate) name: String,
    /// The `TestMeta::name` expression: `"name"`, or `stringify!($name)` in a macro body.
    pub(crate) name_expr: String,
    pub(crate) should_panic: bool,
    /// The facade root the wrapper names (`Plan::pulse` where the test was found).
    pub(crate) facade: String,
    pub(crate) ret: Option<Range<usize>>,
    pub(crate) open: usize,
    pub(crate) close: usize,
}

/// An item under an attribute macro: reported if the macro is a runtime's, or if it receives
/// rewritten paths.
#[derive(Debug, Clone)]
pub(crate) struct AttrMacroSite {
    pub(crate) at: usize,
    pub(crate) path: String,
    pub(crate) item: Range<usize>,
    pub(crate) always: bool,
}

#[derive(Debug)]
pub(crate) struct Change {
    pub(crate) at: usize,
    pub(crate) kind: RewriteKind,
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) edits: Vec<Edit>,
}

pub(crate) struct Plan<'a> {
    pub(crate) index: LineIndex<'a>,
    pub(crate) opts: &'a Options,
    /// The shim root as written into rewritten paths, e.g. `::pulse::std`.
    pub(crate) shim: String,
    /// The facade crate root, e.g. `::pulse`: the shim root without its last segment.
    pub(crate) pulse: String,
    /// `shim` and `pulse` as a `#[macro_export]` macro body writes them (`$crate::__pulse::std`),
    /// swapped in while the sweep is inside one; `None` when the shim root has no such form.
    pub(crate) exported: Option<(String, String)>,
    /// The crate root re-exports this crate as `MACRO_FACADE` when its crate exports macros
    /// (`None`: the exported form needs no re-export, e.g. a `crate::` shim root).
    pub(crate) macro_facade: Option<String>,
    /// The sweep is inside a `#[macro_export]` macro body.
    pub(crate) in_exported_macro: bool,
    /// The sweep is in a `pub use` (any visibility): a re-export, which blocks nowhere.
    pub(crate) in_reexport: bool,
    /// The macro whose input the sweep is in (`proptest` inside `proptest! { .. }`).
    pub(crate) invoked_macro: Option<String>,
    /// The file defines a `#[macro_export] macro_rules!`.
    pub(crate) exports_macros: bool,
    pub(crate) roots: Roots,
    pub(crate) patterns: Patterns,
    pub(crate) changes: Vec<Change>,
    pub(crate) findings: Vec<Finding>,
    /// The syntax position of a path root, keyed by the root ident's byte offset.
    pub(crate) hints: HashMap<usize, RewriteKind>,
    /// Byte ranges already inside an atomic section (marked items, wrapped expressions).
    pub(crate) atomic_regions: Vec<Range<usize>>,
    /// The `macro_rules!` the file defines (its own `thread_local!`, `quickcheck!`).
    pub(crate) own_macros: HashSet<String>,
    /// Local name -> full path, from every `use` in the file (for `atomic` path matching).
    pub(crate) imports: HashMap<String, Vec<String>>,
    pub(crate) glob_imports: Vec<Vec<String>>,
    /// Functions declared in `extern` blocks.
    pub(crate) foreign_fns: HashSet<String>,
    pub(crate) tests: Vec<PendingTest>,
    pub(crate) attr_macros: Vec<AttrMacroSite>,
    pub(crate) external: Vec<ExternalRef>,
    /// Byte ranges left out of this build by a false cfg (see `cfg`): nothing planned inside
    /// them is kept.
    pub(crate) inactive: Vec<Range<usize>>,
    /// `cfg_attr` attributes (by their `#` offset) whose predicate is false.
    pub(crate) cfg_off: Vec<usize>,
    pub(crate) cfg_decisions: Vec<CfgDecision>,
}

impl<'a> Plan<'a> {
    pub(crate) fn new(src: &'a str, opts: &'a Options, cx: &CrateContext) -> Self {
        let shim = opts.shim_root.trim().to_owned();
        let pulse = match shim.rfind("::") {
            Some(i) if i > 0 => shim[..i].to_owned(),
            _ => "::pulse".to_owned(),
        };
        let (exported, macro_facade) = match exported_roots(&shim, &pulse) {
            Some((shim, pulse, krate)) => (Some((shim, pulse)), krate),
            None => (None, None),
        };
        let mut roots = Roots::default();
        for (alias, krate) in &cx.aliases {
            roots.add_alias(alias, *krate);
        }
        Plan {
            index: LineIndex::new(src),
            opts,
            shim,
            pulse,
            exported,
            macro_facade,
            in_exported_macro: false,
            in_reexport: false,
            invoked_macro: None,
            exports_macros: false,
            roots,
            patterns: Patterns::new(&opts.atomic_paths),
            changes: Vec::new(),
            findings: Vec::new(),
            hints: HashMap::new(),
            atomic_regions: Vec::new(),
            own_macros: HashSet::new(),
            imports: HashMap::new(),
            glob_imports: Vec::new(),
            foreign_fns: HashSet::new(),
            tests: Vec::new(),
            attr_macros: Vec::new(),
            external: Vec::new(),
            inactive: Vec::new(),
            cfg_off: Vec::new(),
            cfg_decisions: Vec::new(),
        }
    }

    /// Whether `<name>::<next>` at `at` leads into another crate's synchronisation that this
    /// build does not instrument: the crate it names (through `use krate as name;`) and what
    /// to do. A `relative` path whose `name` a local item hides (crossfire's own `mod
    /// crossbeam`) leads nowhere foreign, nor does a facade's module whose crate is
    /// instrumented (`futures::channel` is `futures_channel`'s).
    pub(crate) fn foreign_sync<'n>(
        &'n self,
        name: &'n str,
        next: Option<&str>,
        at: usize,
        relative: bool,
    ) -> Option<(&'n str, &'static str)> {
        if relative && self.roots.shadowed_at(name, at) {
            return None;
        }
        let krate = self.roots.foreign_crate(name);
        let instrumented = |c: &str| self.opts.instrumented_crates.iter().any(|i| i == c);
        if instrumented(krate) || paths::facade_module(krate, next).is_some_and(instrumented) {
            return None;
        }
        paths::foreign_sync(krate, next).map(|msg| (krate, msg))
    }

    /// Whether byte `at` lies in code this build leaves out.
    pub(crate) fn is_inactive(&self, at: usize) -> bool {
        self.inactive.iter().any(|r| r.contains(&at))
    }

    /// Whether `attr` is a `cfg_attr` whose predicate is false for this build.
    pub(crate) fn cfg_attr_off(&self, attr: &syn::Attribute) -> bool {
        !self.cfg_off.is_empty()
            && self
                .cfg_off
                .contains(&self.index.start(attr.pound_token.span))
    }

    pub(crate) fn src(&self) -> &'a str {
        self.index.text()
    }

    pub(crate) fn change(
        &mut self,
        at: usize,
        kind: RewriteKind,
        from: String,
        to: String,
        edits: Vec<Edit>,
    ) {
        if self.is_inactive(at) {
            return;
        }
        self.changes.push(Change {
            at,
            kind,
            from,
            to,
            edits,
        });
    }

    pub(crate) fn finding(&mut self, at: usize, kind: FindingKind, message: impl Into<String>) {
        if self.is_inactive(at) {
            return;
        }
        let (line, column) = self.index.line_col(at);
        self.findings.push(Finding {
            line,
            column,
            kind,
            message: message.into(),
        });
    }

    /// Whether a relative path `name::module..` at `at` is left alone because a local item
    /// hides the `name` crate there; said (`StdShadowed`) when the crate's `module` is one the
    /// shim mirrors, so the path would have been rewritten. Said where it matters, not at the
    /// declaration: thingbuf's own `mod alloc` was reported four times with no `alloc::sync`
    /// path under it.
    pub(crate) fn shadowed_path(&mut self, name: &str, module: Option<&str>, at: usize) -> bool {
        if !self.roots.shadowed_at(name, at) {
            return false;
        }
        self.say_shadowed(name, module, at);
        true
    }

    /// `shadowed_path` for a `use` path. In edition 2015 one starts at the crate root, so
    /// only the root file's top items hide a crate there, not a module's own `mod core`
    /// (futures 0.1's `task_impl`, whose `use core::sync::atomic` was left std's).
    pub(crate) fn shadowed_use(&mut self, name: &str, module: Option<&str>, at: usize) -> bool {
        if !self.opts.edition_2015 {
            return self.shadowed_path(name, module, at);
        }
        let hidden = self.opts.crate_root && self.roots.shadowed_at_top(name);
        if hidden {
            self.say_shadowed(name, module, at);
        }
        hidden
    }

    /// A finding for a path to a std module left alone because a local item hides its crate.
    fn say_shadowed(&mut self, name: &str, module: Option<&str>, at: usize) {
        let mirrored = self
            .roots
            .lookup(name)
            .zip(module)
            .filter(|(krate, module)| {
                paths::is_shim_module(*krate, module, &self.opts.std_modules)
            });
        if let Some((_, module)) = mirrored {
            self.finding(
                at,
                FindingKind::StdShadowed,
                format!(
                    "`{name}::{module}` left alone: a local `{name}` (a module or an import) hides \
                     the `{name}` crate here; write `::{name}::{module}` for the real crate"
                ),
            );
        }
    }

    pub(crate) fn in_atomic_region(&self, at: usize) -> bool {
        self.atomic_regions.iter().any(|r| r.contains(&at))
    }

    /// The text of `range` after applying `extra` and every planned edit that lies inside it
    /// (insertions on its boundaries belong to the surrounding code and are left out).
    pub(crate) fn render(&self, range: Range<usize>, extra: &[Edit]) -> String {
        let Some(text) = self.src().get(range.clone()) else {
            return String::new();
        };
        let inside = |e: &&Edit| {
            e.range.start >= range.start
                && e.range.end <= range.end
                && (!e.range.is_empty()
                    || (e.range.start > range.start && e.range.start < range.end))
        };
        let shift = |e: &Edit| Edit {
            range: e.range.start - range.start..e.range.end - range.start,
            ..e.clone()
        };
        let changes: Vec<Vec<Edit>> = self
            .changes
            .iter()
            .map(|c| c.edits.as_slice())
            .chain(std::iter::once(extra))
            .map(|edits| edits.iter().filter(inside).map(shift).collect())
            .collect();
        textedit::apply(text, &changes).text
    }

    /// Applies the accepted changes and builds the file's report.
    pub(crate) fn finish(mut self) -> (String, FileReport) {
        let src = self.src();
        let edit_sets: Vec<Vec<Edit>> = self
            .changes
            .iter_mut()
            .map(|c| std::mem::take(&mut c.edits))
            .collect();
        let applied = textedit::apply(src, &edit_sets);
        let mut text = applied.text;
        for &i in &applied.dropped {
            let c = &self.changes[i];
            let message = format!("rewrite of `{}` overlapped another rewrite and was dropped (a pulse bug: please report it)", c.from);
            self.finding(c.at, FindingKind::Internal, message);
        }
        if text.matches('\n').count() != src.matches('\n').count() {
            // Never hand out a file whose line numbers moved: keep the original.
            self.finding(0, FindingKind::Internal, "rewriting would have moved lines; file left unchanged (a pulse bug: please report it)");
            text = src.to_owned();
            self.changes.clear();
        }
        let mut rewrites: Vec<Rewrite> = self
            .changes
            .iter()
            .enumerate()
            .filter(|(i, _)| applied.dropped.binary_search(i).is_err())
            .map(|(_, c)| {
                let (line, column) = self.index.line_col(c.at);
                Rewrite {
                    line,
                    column,
                    kind: c.kind,
                    from: c.from.clone(),
                    to: c.to.clone(),
                }
            })
            .collect();
        rewrites.sort_by_key(|r| (r.line, r.column));
        let mut findings = std::mem::take(&mut self.findings);
        findings.sort_by(|a, b| {
            (a.line, a.column, a.kind as u8).cmp(&(b.line, b.column, b.kind as u8))
        });
        findings.dedup_by(|b, a| a.line == b.line && a.column == b.column && a.kind == b.kind);
        let report = FileReport {
            path: Default::default(),
            rewrites,
            findings,
            parse_error: None,
            cfgs: std::mem::take(&mut self.cfg_decisions),
        };
        (text, report)
    }
}

/// The shim root and the facade root as a `#[macro_export]` macro body must write them, and
/// the crate a crate root then re-exports for them. A macro body's paths resolve where it is
/// expanded, possibly in a crate that is not instrumented and has no dependency on the facade:
/// `::pulse::std` becomes `$crate::__pulse::std` (with `pulse` re-exported as `__pulse`), a
/// crate-local root `crate::peer` becomes `$crate::peer`. A relative root is left as it is.
fn exported_roots(shim: &str, pulse: &str) -> Option<(String, String, Option<String>)> {
    let (prefix, to, krate) = if let Some(rest) = shim.strip_prefix("::") {
        let krate = rest.split("::").next().filter(|k| !k.is_empty())?;
        let to = format!("$crate::{}", crate::MACRO_FACADE);
        (format!("::{krate}"), to, Some(krate.to_owned()))
    } else if shim == "crate" || shim.starts_with("crate::") {
        ("crate".to_owned(), "$crate".to_owned(), None)
    } else {
        return None;
    };
    let map = |p: &str| match p.strip_prefix(prefix.as_str()) {
        Some(rest) if rest.is_empty() || rest.starts_with("::") => format!("{to}{rest}"),
        _ => p.to_owned(),
    };
    Some((map(shim), map(pulse), krate))
}

/// One-line abbreviation of source text for reports.
pub(crate) fn abbrev(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 60 {
        let cut: String = flat.chars().take(57).collect();
        format!("{cut}...")
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::exported_roots;

    #[test]
    fn exported_macro_bodies_reach_the_shim_through_dollar_crate() {
        let got = |shim: &str, pulse: &str| exported_roots(shim, pulse);
        assert_eq!(
            got("::pulse::std", "::pulse"),
            Some((
                "$crate::__pulse::std".into(),
                "$crate::__pulse".into(),
                Some("pulse".into())
            ))
        );
        assert_eq!(
            got("crate::peer::loom", "crate::peer"),
            Some(("$crate::peer::loom".into(), "$crate::peer".into(), None))
        );
        // A one-segment root: the facade (a default) is another crate's, left as it is.
        assert_eq!(
            got("::shuttle", "::pulse"),
            Some((
                "$crate::__pulse".into(),
                "::pulse".into(),
                Some("shuttle".into())
            ))
        );
        assert_eq!(
            got("::pulsex::std", "::pulsex").unwrap().2.as_deref(),
            Some("pulsex")
        );
        assert_eq!(got("pulse::std", "pulse"), None);
    }
}
