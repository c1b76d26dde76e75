//! Golden tests: every fixture under tests/fixtures/ is instrumented and compared with its
//! `*.expected.rs` (text) and `*.report.txt` (rendered report). `INSTRUMENT_BLESS=1` rewrites the
//! expected files (review the diff before committing it).
//!
//! The second test builds the rewritten fixtures as modules of a scratch crate depending on
//! the real `pulse` facade, so the rewrites are checked against the shim's actual API.

use pulse_instrument::{instrument_file, instrument_source, CrateContext, Options};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The options every fixture runs with; one whose first line says `fixture: crate-root` is
/// instrumented as a crate root (see `Options::crate_root`).
fn options(src: &str) -> Options {
    Options {
        crate_root: src
            .lines()
            .next()
            .unwrap_or_default()
            .contains("fixture: crate-root"),
        wrap_tests: true,
        atomic_paths: vec![
            "std::fs::*".into(),
            "mydb::Client::query".into(),
            "mydb::flush_*".into(),
            "mydb::len_*".into(),
        ],
        ..Options::default()
    }
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// (name, source) of every fixture input, sorted.
fn fixtures() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures exists")
        .map(|e| e.expect("readable dir entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.ends_with(".rs") && !name.ends_with(".expected.rs")
        })
        .map(|p| {
            let name = p
                .file_stem()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            let src = std::fs::read_to_string(&p).expect("fixture is UTF-8");
            (name, src)
        })
        .collect();
    out.sort();
    out
}

/// Instrumented text and rendered report (the report of a parse error included).
fn run(name: &str, src: &str) -> (String, String) {
    match instrument_source(src, &options(src)) {
        Ok(out) => {
            let mut report = out.report;
            report.path = PathBuf::from(format!("{name}.rs"));
            (out.text, report.to_string())
        }
        Err(e) => (
            src.to_owned(),
            format!("{name}.rs:{e} (parse error: file left unchanged)\n"),
        ),
    }
}

fn first_difference(expected: &str, actual: &str) -> String {
    for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        if e != a {
            return format!("line {}:\n  expected: {e}\n  actual:   {a}", i + 1);
        }
    }
    format!(
        "line counts differ: expected {} actual {}",
        expected.lines().count(),
        actual.lines().count()
    )
}

#[test]
fn fixtures_match_expected_output_and_report() {
    let bless = std::env::var_os("INSTRUMENT_BLESS").is_some();
    let mut failures = Vec::new();
    let all = fixtures();
    assert!(all.len() >= 10, "fixtures missing: {}", all.len());
    for (name, src) in &all {
        let (text, report) = run(name, src);
        let text_path = fixtures_dir().join(format!("{name}.expected.rs"));
        let report_path = fixtures_dir().join(format!("{name}.report.txt"));
        if bless {
            std::fs::write(&text_path, &text).expect("write expected");
            std::fs::write(&report_path, &report).expect("write report");
            continue;
        }
        let expected_text = std::fs::read_to_string(&text_path).unwrap_or_default();
        let expected_report = std::fs::read_to_string(&report_path).unwrap_or_default();
        if expected_text != text {
            failures.push(format!(
                "{name}.expected.rs differs, {}",
                first_difference(&expected_text, &text)
            ));
        }
        if expected_report != report {
            failures.push(format!(
                "{name}.report.txt differs, {}",
                first_difference(&expected_report, &report)
            ));
        }
        // Invariants every fixture must keep, whatever the expected files say.
        if text.lines().count() != src.lines().count() {
            failures.push(format!("{name}: line count changed"));
        }
        if let Ok(again) = instrument_source(&text, &options(src)) {
            if again.text != text {
                failures.push(format!(
                    "{name}: not idempotent, {}",
                    first_difference(&text, &again.text)
                ));
            }
        } else if instrument_source(src, &options(src)).is_ok() {
            failures.push(format!("{name}: output does not parse"));
        }
        if report.contains(" Tokens ") {
            failures.push(format!("{name}: a path was rewritten by the sweep alone (kind Tokens): the visitor missed its position"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden failure(s):\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Fixtures marked on their first line are excluded from the compile check.
fn compiles(src: &str) -> bool {
    let first = src.lines().next().unwrap_or_default();
    !first.contains("fixture: no-compile") && !first.contains("fixture: not-a-module")
}

#[test]
fn rewritten_fixtures_compile_against_the_shim() {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pulse = manifest_dir
        .join("../pulse")
        .canonicalize()
        .expect("the pulse facade crate sits beside instrument/");
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fixture-check");
    let src_dir = scratch.join("src");
    let _ = std::fs::remove_dir_all(&src_dir);
    std::fs::create_dir_all(&src_dir).expect("create scratch crate");
    let manifest = format!(
        "[package]\nname = \"pulse-instrument-fixture-check\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\npulse = {{ path = {:?} }}\n\
         # As pulse's own (statem), so the lock file has it.\n\
         proptest = {{ version = \"1.5\", default-features = false, features = [\"std\"] }}\n\
         # The futex fixture calls the system call through it.\n\
         libc = \"0.2\"\n\n[workspace]\n\n[lints.rust]\nunexpected_cfgs = \"allow\"\n",
        pulse.display().to_string()
    );
    std::fs::write(scratch.join("Cargo.toml"), manifest).expect("write manifest");
    // Same dependency versions as the workspace.
    let _ = std::fs::copy(
        manifest_dir.join("../Cargo.lock"),
        scratch.join("Cargo.lock"),
    );
    let mut lib = String::from("#![allow(warnings)]\n");
    // The scratch crate's root is instrumented as one, knowing its modules' exported macros.
    let mut cx = CrateContext::new(&scratch);
    for (name, src) in fixtures() {
        let (text, _) = run(&name, &src);
        std::fs::write(src_dir.join(format!("{name}.rs")), &text).expect("write module");
        if compiles(&src) {
            lib.push_str(&format!("pub mod {name};\n"));
            cx.add_source(&src, &options(&src));
        }
    }
    let root = Options {
        crate_root: true,
        ..options("")
    };
    let lib = instrument_file(&lib, &src_dir.join("lib.rs"), &root, &cx)
        .expect("lib.rs parses")
        .text;
    assert!(lib.contains("pub extern crate pulse as __pulse;"), "{lib}");
    std::fs::write(src_dir.join("lib.rs"), lib).expect("write lib.rs");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "check",
            "--lib",
            "--tests",
            "--quiet",
            "--message-format=short",
        ])
        .current_dir(&scratch)
        .env("CARGO_TARGET_DIR", scratch.join("target"))
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo check");
    assert!(
        out.status.success(),
        "rewritten fixtures do not compile against {}:\n{}",
        pulse.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}
