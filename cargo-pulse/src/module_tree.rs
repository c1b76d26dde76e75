//! Which `.rs` files a package's targets compile: each target's root and every file a
//! `mod` declaration or an `include!` reaches from one (`pulse_instrument::file_refs`),
//! resolved as rustc resolves them. A file none reaches is not Rust the crate runs: a
//! fixture a test reads as text or hands to rustc itself (trybuild's `tests/ui/*.rs`), which
//! the mirror copies as written.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pulse_instrument::FileRef;

use crate::workspace::normalize;

/// The files reached from `roots` (normalized paths), or `None` when one of them does not
/// lex and what it names is unknown.
pub fn compiled_files(roots: &[PathBuf]) -> Option<BTreeSet<PathBuf>> {
    let mut seen: BTreeSet<PathBuf> = BTreeSet::new();
    let mut pending: Vec<(PathBuf, bool)> = roots.iter().map(|r| (r.clone(), true)).collect();
    while let Some((file, is_root)) = pending.pop() {
        if !seen.insert(file.clone()) {
            continue;
        }
        // A file that is not there is not compiled either (a `#[cfg]`'d-out platform module).
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let refs = pulse_instrument::file_refs(&text)?;
        let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
        // Where `mod name;` looks: beside a crate root or `mod.rs`, else in the directory
        // named after the file (`src/a.rs`'s `mod b;` is `src/a/b.rs`).
        let owns_dir = is_root || file.file_name().is_some_and(|n| n == "mod.rs");
        let stem = file.file_stem().map(PathBuf::from).unwrap_or_default();
        let module_dir = if owns_dir {
            dir.clone()
        } else {
            dir.join(&stem)
        };
        for r in refs {
            let candidates: Vec<PathBuf> = match r {
                FileRef::Include(p) => vec![dir.join(p)],
                FileRef::Module { dirs, name, path } => {
                    let inline: PathBuf = dirs.iter().collect();
                    match path {
                        // Outside inline modules a `#[path]` is the declaring file's
                        // directory's; inside them, the module directory's.
                        Some(p) if dirs.is_empty() => vec![dir.join(p)],
                        Some(p) => vec![module_dir.join(&inline).join(p)],
                        None => {
                            let base = module_dir.join(&inline);
                            vec![
                                base.join(format!("{name}.rs")),
                                base.join(&name).join("mod.rs"),
                            ]
                        }
                    }
                }
            };
            for c in candidates {
                let c = normalize(&c);
                if c.is_file() && !seen.contains(&c) {
                    pending.push((c, false));
                }
            }
        }
    }
    Some(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn modules_are_followed_as_rustc_finds_them_and_fixtures_are_not() {
        let dir = std::env::temp_dir().join(format!("pulse-module-tree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        write(
            &dir,
            "src/lib.rs",
            "mod a; mod b; #[path = \"sys/unix.rs\"] mod imp; mod gone;",
        );
        write(&dir, "src/a.rs", "mod inner; include!(\"table.rs\");");
        write(&dir, "src/a/inner.rs", "");
        write(&dir, "src/table.rs", "");
        write(&dir, "src/b/mod.rs", "mod c { mod d; }");
        write(&dir, "src/b/c/d.rs", "");
        write(&dir, "src/sys/unix.rs", "");
        write(&dir, "src/unreached.rs", "");
        write(&dir, "tests/it.rs", "mod common;");
        write(&dir, "tests/common/mod.rs", "");
        write(
            &dir,
            "tests/ui/spawn.rs",
            "fn main() { std::thread::spawn(|| {}); }",
        );
        let roots = [dir.join("src/lib.rs"), dir.join("tests/it.rs")];
        let files = compiled_files(&roots).unwrap();
        let rel: Vec<String> = files
            .iter()
            .map(|f| f.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        assert_eq!(
            rel,
            [
                "src/a/inner.rs",
                "src/a.rs",
                "src/b/c/d.rs",
                "src/b/mod.rs",
                "src/lib.rs",
                "src/sys/unix.rs",
                "src/table.rs",
                "tests/common/mod.rs",
                "tests/it.rs",
            ]
        );
        write(&dir, "tests/it.rs", "mod common; fn f() { \"unterminated");
        assert_eq!(compiled_files(&roots), None, "unknown, not empty");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
