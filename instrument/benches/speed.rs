//! Instrumentation speed: the sources of the registry crates the coverage test uses,
//! repeated to at least 100,000 lines, instrumented one file at a time (as `instrument_tree`
//! does). Prints lines/s; exits non-zero if the run takes 2 s or more.
//!
//! `cargo bench -p pulse-instrument --bench speed`

use pulse_instrument::{instrument_source, Options};
use std::path::{Path, PathBuf};
use std::time::Instant;

const CRATES: &[&str] = &[
    "crossbeam-utils",
    "crossbeam-channel",
    "once_cell",
    "lazy_static",
    "thread_local",
    "spin",
    "scopeguard",
];
const MIN_LINES: usize = 100_000;
const BUDGET_SECS: f64 = 2.0;

fn source_dir(name: &str) -> Option<PathBuf> {
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

fn rust_files(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            if let Ok(text) = std::fs::read_to_string(&path) {
                out.push(text);
            }
        }
    }
}

fn main() {
    let mut corpus = Vec::new();
    for name in CRATES {
        match source_dir(name) {
            Some(dir) => rust_files(&dir, &mut corpus),
            None => {
                eprintln!("warning: {name} sources not found (build the dev-dependencies first)")
            }
        }
    }
    let once: usize = corpus.iter().map(|s| s.lines().count()).sum();
    if once == 0 {
        eprintln!("no sources to instrument");
        std::process::exit(1);
    }
    let repeat = MIN_LINES.div_ceil(once);
    let files: Vec<&String> = std::iter::repeat_n(&corpus, repeat).flatten().collect();
    let lines: usize = files.iter().map(|s| s.lines().count()).sum();
    let opts = Options {
        wrap_tests: true,
        atomic_paths: vec!["std::fs::*".into()],
        ..Options::default()
    };

    let start = Instant::now();
    let mut rewrites = 0;
    for src in &files {
        if let Ok(out) = instrument_source(src, &opts) {
            rewrites += out.report.rewrites.len();
        }
        proc_macro2::extra::invalidate_current_thread_spans();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "instrumented {lines} lines ({} files, {rewrites} rewrites) in {secs:.3} s: {:.0} lines/s",
        files.len(),
        lines as f64 / secs
    );
    if secs >= BUDGET_SECS {
        eprintln!("too slow: budget is {BUDGET_SECS} s for {MIN_LINES}+ lines");
        std::process::exit(1);
    }
}
