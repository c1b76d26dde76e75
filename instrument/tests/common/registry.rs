//! The registry crates the coverage test and the speed bench instrument: dev-dependencies,
//! so cargo has unpacked their sources under `$CARGO_HOME/registry/src`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub const CRATES: &[&str] = &[
    "crossbeam-utils",
    "crossbeam-channel",
    "once_cell",
    "lazy_static",
    "thread_local",
    "spin",
    "scopeguard",
];

/// The unpacked source directory of a registry package, at the version Cargo.lock pins.
pub fn source_dir(name: &str) -> Option<PathBuf> {
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock"))
        .ok()?;
    let mut lines = lock.lines();
    let version = loop {
        if lines.next()? == format!("name = \"{name}\"") {
            break lines
                .next()?
                .strip_prefix("version = \"")?
                .trim_end_matches('"')
                .to_owned();
        }
    };
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
    std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join(format!("{name}-{version}")))
        .find(|p| p.is_dir())
}

/// Every `.rs` file under `dir` but build scripts, `target/` and hidden directories, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0
                || !(e.file_type().is_dir()
                    && (e.file_name() == "target"
                        || e.file_name().to_string_lossy().starts_with('.')))
        })
        .filter_map(|e| e.ok())
        .map(|e| e.into_path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "rs")
                && p.file_name().is_some_and(|n| n != "build.rs")
        })
        .collect();
    files.sort();
    files
}
