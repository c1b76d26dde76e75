//! Instruments every example crate's `src/lib.rs`, and every SCTBench-style program in
//! `tests/sct/`, with the real instrumenter and gathers them as modules of one file each, so
//! the corpus tests run that code (written against plain std) under pulse without
//! cargo-pulse in the loop.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    println!("cargo:rerun-if-changed={}", examples.display());
    // Examples may mark code `#[cfg_attr(pulse, pulse::atomic)]` (`cargo pulse test` sets it).
    println!("cargo::rustc-check-cfg=cfg(pulse)");
    let mut out = String::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&examples)
        .expect("examples/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("src/lib.rs").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        let lib = dir.join("src/lib.rs");
        println!("cargo:rerun-if-changed={}", lib.display());
        let source = std::fs::read_to_string(&lib).expect("readable example");
        let instrumented =
            pulse_instrument::instrument_source(&source, &pulse_instrument::Options::default())
                .unwrap_or_else(|e| panic!("{}: {e}", lib.display()));
        let name = dir.file_name().unwrap().to_string_lossy().replace('-', "_");
        writeln!(
            out,
            "#[allow(dead_code, unused_imports, clippy::all)]\npub mod {name} {{\n{}\n}}",
            instrumented.text
        )
        .unwrap();
    }
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("corpus.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
    sct();
}

/// `tests/sct/*.rs`, one module per file, into `sct.rs`.
fn sct() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sct");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/sct/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    let mut out = String::new();
    for file in files {
        println!("cargo:rerun-if-changed={}", file.display());
        let source = std::fs::read_to_string(&file).expect("readable program");
        let instrumented =
            pulse_instrument::instrument_source(&source, &pulse_instrument::Options::default())
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let name = file.file_stem().unwrap().to_string_lossy().into_owned();
        writeln!(
            out,
            "#[allow(dead_code, unused_imports, clippy::all)]\npub mod {name} {{\n{}\n}}",
            instrumented.text
        )
        .unwrap();
    }
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("sct.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
