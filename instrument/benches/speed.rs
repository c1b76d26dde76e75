//! Instrumentation speed: the sources of the registry crates the coverage test uses,
//! repeated to at least 100,000 lines, instrumented one file at a time (as `instrument_tree`
//! does). Prints lines/s; exits non-zero if the run takes 2 s or more.
//!
//! `cargo bench -p pulse-instrument --bench speed`

#[path = "../tests/common/registry.rs"]
mod registry;

use pulse_instrument::{instrument_source, Options};
use registry::{rust_files, source_dir, CRATES};
use std::time::Instant;

const MIN_LINES: usize = 100_000;
const BUDGET_SECS: f64 = 2.0;

fn main() {
    let mut corpus = Vec::new();
    for name in CRATES {
        match source_dir(name) {
            Some(dir) => corpus.extend(
                rust_files(&dir)
                    .iter()
                    .filter_map(|p| std::fs::read_to_string(p).ok()),
            ),
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
