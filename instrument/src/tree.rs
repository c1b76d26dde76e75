//! Instrumenting a copied crate in place: every `.rs` file under its directory.
//!
//! Walking the directory rather than following `mod` declarations covers `#[path]` modules,
//! `include!`d files, `mod.rs` trees, tests/, benches/ and examples/ without resolving
//! anything. Build scripts run on the host outside the scheduler and are skipped.

use crate::report::{FileReport, ParseError, TreeReport};
use crate::{instrument_file, CrateContext, Options};
use std::io;
use std::path::{Path, PathBuf};

/// Rewrites in place every .rs file under `crate_dir`, skipping `target/` directories, hidden
/// directories, `build.rs` next to a `Cargo.toml`, and the files in `skip` (absolute, or
/// relative to `crate_dir`). The files in `facade_roots` (same forms) are the crate roots of
/// edition-2015 targets: their copy declares the facade (see `Options::declare_facade`). Those
/// and the files where cargo looks for crate roots by convention (`src/lib.rs`, `src/main.rs`,
/// `src/bin/*.rs`, `tests/*.rs`, `benches/*.rs`, `examples/*.rs`, and `*/main.rs` one level
/// into the last four) are crate roots (see `Options::crate_root`); a target whose root is
/// elsewhere (`[lib] path = ..`) and exports macros needs the file-by-file [`crate::instrument_file`].
/// Returns the report of every file that was rewritten or has
/// findings or a parse error (`FileReport::path` relative to `crate_dir`); files that do not
/// parse are left untouched.
pub fn instrument_tree(
    crate_dir: &Path,
    skip: &[PathBuf],
    facade_roots: &[PathBuf],
    opts: &Options,
) -> io::Result<TreeReport> {
    let skip: Vec<PathBuf> = skip.iter().map(|p| normalize(&crate_dir.join(p))).collect();
    let files = rust_files(crate_dir, &skip, false)?;
    let roots: Vec<PathBuf> = facade_roots
        .iter()
        .map(|p| normalize(&crate_dir.join(p)))
        .collect();
    // proc-macro2 keeps every parsed file's text in a thread-local table; a private thread
    // lets it be cleared between files without invalidating the caller's spans.
    std::thread::scope(|s| {
        s.spawn(|| instrument_files(crate_dir, &files, &roots, opts))
            .join()
            .unwrap_or_else(|_| {
                Err(io::Error::other(
                    "pulse-instrument panicked (a bug: please report it)",
                ))
            })
    })
}

fn instrument_files(
    crate_dir: &Path,
    files: &[PathBuf],
    facade_roots: &[PathBuf],
    opts: &Options,
) -> io::Result<TreeReport> {
    let root_opts = Options {
        crate_root: true,
        ..opts.clone()
    };
    let facade_opts = Options {
        declare_facade: true,
        ..root_opts.clone()
    };
    let cx = CrateContext::scan(crate_dir, &[], opts)?;
    let mut sources = Vec::with_capacity(files.len());
    for path in files {
        let bytes = std::fs::read(path).map_err(|e| with_path(e, path))?;
        sources.push(String::from_utf8(bytes).ok());
    }
    proc_macro2::extra::invalidate_current_thread_spans();
    let mut report = TreeReport::default();
    for (path, src) in files.iter().zip(sources) {
        let shown = path.strip_prefix(crate_dir).unwrap_or(path).to_path_buf();
        let Some(src) = src else {
            let error = ParseError {
                line: 1,
                column: 1,
                message: "not valid UTF-8".into(),
            };
            report.files.push(FileReport {
                path: shown,
                parse_error: Some(error),
                ..FileReport::default()
            });
            continue;
        };
        let file_opts = if facade_roots.contains(&normalize(path)) {
            &facade_opts
        } else if is_conventional_root(crate_dir, path) {
            &root_opts
        } else {
            opts
        };
        let outcome = instrument_file(&src, path, file_opts, &cx);
        proc_macro2::extra::invalidate_current_thread_spans();
        let mut file_report = match outcome {
            Ok(instrumented) => {
                if instrumented.text != src {
                    std::fs::write(path, &instrumented.text).map_err(|e| with_path(e, path))?;
                }
                instrumented.report
            }
            Err(error) => FileReport {
                parse_error: Some(error),
                ..FileReport::default()
            },
        };
        if !file_report.is_empty() {
            file_report.path = shown;
            report.files.push(file_report);
        }
    }
    Ok(report)
}

/// Every `.rs` file to instrument, sorted for a stable report; with `own_only`, not those of
/// packages nested in `crate_dir` (another crate).
pub(crate) fn rust_files(
    crate_dir: &Path,
    skip: &[PathBuf],
    own_only: bool,
) -> io::Result<Vec<PathBuf>> {
    let skip: Vec<PathBuf> = skip.iter().map(|p| normalize(&crate_dir.join(p))).collect();
    let skip = &skip;
    let mut files = Vec::new();
    let walk = walkdir::WalkDir::new(crate_dir)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0
                || !(e.file_type().is_dir()
                    && (is_hidden(e.path())
                        || is_target_dir(e.path())
                        || (own_only && e.path().join("Cargo.toml").is_file())))
        });
    for entry in walk {
        let entry = entry.map_err(|e| {
            let path = e
                .path()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| crate_dir.to_path_buf());
            with_path(io::Error::other(e), &path)
        })?;
        let path = entry.path();
        if !entry.file_type().is_file() || path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        if is_build_script(path) || skip.contains(&normalize(path)) {
            continue;
        }
        files.push(path.to_path_buf());
    }
    files.sort();
    Ok(files)
}

/// Whether `path` is where cargo looks for a target's crate root when the manifest names
/// none.
fn is_conventional_root(crate_dir: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(crate_dir) else {
        return false;
    };
    let parts: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
    match parts.as_slice() {
        ["src", "lib.rs" | "main.rs"] => true,
        ["src", "bin", file] | ["tests" | "benches" | "examples", file] => file.ends_with(".rs"),
        ["src", "bin", _, "main.rs"] | ["tests" | "benches" | "examples", _, "main.rs"] => true,
        _ => false,
    }
}

fn is_hidden(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
}

/// A cargo target directory: `target` beside a manifest, or any directory cargo tagged.
fn is_target_dir(path: &Path) -> bool {
    let beside_manifest = path.file_name().is_some_and(|n| n == "target")
        && path
            .parent()
            .is_some_and(|p| p.join("Cargo.toml").is_file());
    beside_manifest || path.join("CACHEDIR.TAG").is_file()
}

/// `build.rs` beside a manifest is the package's default build script.
fn is_build_script(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "build.rs")
        && path
            .parent()
            .is_some_and(|p| p.join("Cargo.toml").is_file())
}

/// Lexically normalises `.` and `..` (no filesystem access: the files may not exist).
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

fn with_path(e: io::Error, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::FindingKind;

    fn tempdir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "pulse-instrument-tree-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn rewrites_sources_and_skips_build_scripts_targets_and_hidden_dirs() {
        let dir = tempdir("walk");
        let uses = "use std::sync::Arc;\n";
        write(&dir, "Cargo.toml", "[package]\nname = \"x\"\n");
        for f in [
            "src/lib.rs",
            "src/m/mod.rs",
            "tests/t.rs",
            "benches/b.rs",
            "examples/e.rs",
            "gen/custom_build.rs",
        ] {
            write(&dir, f, uses);
        }
        for f in ["build.rs", "target/debug/x.rs", ".git/x.rs"] {
            write(&dir, f, uses);
        }
        write(&dir, "src/broken.rs", "fn f( {\n");
        write(&dir, "src/lib2.rs", "extern crate std as foo;\n");
        write(
            &dir,
            "src/uses_alias.rs",
            "fn f() { foo::thread::yield_now(); }\n",
        );
        let report = instrument_tree(
            &dir,
            &[PathBuf::from("gen/custom_build.rs")],
            &[],
            &Options::default(),
        )
        .unwrap();
        for f in [
            "src/lib.rs",
            "src/m/mod.rs",
            "tests/t.rs",
            "benches/b.rs",
            "examples/e.rs",
        ] {
            assert_eq!(
                std::fs::read_to_string(dir.join(f)).unwrap(),
                "use ::pulse::std::sync::Arc;\n",
                "{f}"
            );
        }
        for f in [
            "build.rs",
            "target/debug/x.rs",
            ".git/x.rs",
            "gen/custom_build.rs",
        ] {
            assert_eq!(std::fs::read_to_string(dir.join(f)).unwrap(), uses, "{f}");
        }
        assert_eq!(
            std::fs::read_to_string(dir.join("src/uses_alias.rs")).unwrap(),
            "fn f() { ::pulse::std::thread::yield_now(); }\n"
        );
        assert_eq!(
            std::fs::read_to_string(dir.join("src/broken.rs")).unwrap(),
            "fn f( {\n"
        );
        let errors = report.parse_errors();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].0, Path::new("src/broken.rs"));
        assert_eq!(report.rewrite_count(), 6);
        let text = report.to_string();
        assert!(
            text.contains("src/lib.rs:1:5 UsePath std::sync::Arc -> ::pulse::std::sync::Arc"),
            "{text}"
        );
        assert!(
            text.ends_with("instrumented 6 files: 6 rewrites, 0 findings, 1 parse error\n"),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn path_modules_outside_the_crate_are_reported() {
        let dir = tempdir("external");
        write(
            &dir,
            "src/lib.rs",
            "#[path = \"../../elsewhere.rs\"] mod a;\n#[path = \"inside.rs\"] mod b;\n",
        );
        let report = instrument_tree(&dir, &[], &[], &Options::default()).unwrap();
        let findings: Vec<_> = report.files.iter().flat_map(|f| &f.findings).collect();
        assert_eq!(findings.len(), 1, "{report}");
        assert_eq!(findings[0].kind, FindingKind::ExternalSource);
        assert_eq!(findings[0].line, 1);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_the_given_roots_declare_the_facade() {
        let dir = tempdir("facade");
        let src = "use std::sync::Arc;\npub fn f() {} // the end\n";
        for f in ["src/lib.rs", "src/m.rs", "tests/t.rs"] {
            write(&dir, f, src);
        }
        let roots = [dir.join("src/lib.rs"), PathBuf::from("tests/t.rs")];
        instrument_tree(&dir, &[], &roots, &Options::default()).unwrap();
        let declared = "use ::pulse::std::sync::Arc;\npub fn f() {} #[allow(unused_extern_crates)] extern crate pulse; // the end\n";
        for (f, expected) in [
            ("src/lib.rs", declared),
            ("tests/t.rs", declared),
            (
                "src/m.rs",
                "use ::pulse::std::sync::Arc;\npub fn f() {} // the end\n",
            ),
        ] {
            assert_eq!(
                std::fs::read_to_string(dir.join(f)).unwrap(),
                expected,
                "{f}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn conventional_roots_re_export_the_facade_for_exported_macros() {
        let dir = tempdir("macro-export");
        write(&dir, "Cargo.toml", "[package]\nname = \"x\"\n");
        let root = "mod m;\npub fn f() {}\n";
        for f in [
            "src/lib.rs",
            "tests/t.rs",
            "src/bin/b/main.rs",
            "tests/common/mod.rs",
        ] {
            write(&dir, f, root);
        }
        write(
            &dir,
            "src/m.rs",
            "#[macro_export]\nmacro_rules! m { () => { std::thread::yield_now() } }\n",
        );
        instrument_tree(&dir, &[], &[], &Options::default()).unwrap();
        let declared = "mod m;\npub fn f() {} #[doc(hidden)] pub extern crate pulse as __pulse;\n";
        for (f, expected) in [
            ("src/lib.rs", declared),
            ("tests/t.rs", declared),
            ("src/bin/b/main.rs", declared),
            ("tests/common/mod.rs", root),
            (
                "src/m.rs",
                "#[macro_export]\nmacro_rules! m { () => { $crate::__pulse::std::thread::yield_now() } }\n",
            ),
        ] {
            assert_eq!(
                std::fs::read_to_string(dir.join(f)).unwrap(),
                expected,
                "{f}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn file_by_file_with_the_crate_context_equals_the_tree() {
        let dir = tempdir("context");
        write(&dir, "Cargo.toml", "[package]\nname = \"x\"\n");
        write(&dir, "src/lib.rs", "extern crate std as s;\nmod m;\n");
        let m =
            "pub fn f() -> s::time::Duration { s::thread::yield_now(); s::time::Duration::ZERO }\n";
        write(&dir, "src/m.rs", m);
        // A nested package's alias is another crate's.
        write(&dir, "nested/Cargo.toml", "[package]\nname = \"y\"\n");
        write(&dir, "nested/src/lib.rs", "extern crate std as n;\n");
        let opts = Options {
            std_modules: vec!["sync".into(), "thread".into()],
            ..Options::default()
        };
        let cx = CrateContext::scan(&dir, &[], &opts).unwrap();
        assert_eq!(cx.key(), "s=Std");
        let by_file = instrument_file(m, &dir.join("src/m.rs"), &opts, &cx).unwrap();
        assert_eq!(
            by_file.text,
            "pub fn f() -> s::time::Duration { ::pulse::std::thread::yield_now(); s::time::Duration::ZERO }\n",
            "only the listed modules"
        );
        instrument_tree(&dir, &[], &[], &opts).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.join("src/m.rs")).unwrap(),
            by_file.text
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
