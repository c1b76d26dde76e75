//! Coverage on real code: every .rs file of a handful of registry crates that lean on
//! std::sync/thread/time (dev-dependencies, so cargo has unpacked their sources) is
//! instrumented. No panics, no parse errors, lines kept, idempotent, and a token scan of the
//! output finds no std sync/thread/time path that was neither rewritten nor reported on its
//! line. Building the rewritten crates is cargo-pulse's `--instrument-dep` end-to-end test.

mod common;

use common::registry::{rust_files, source_dir, CRATES};

use pulse_instrument::{instrument_source, Options};

#[test]
fn registry_crates_are_fully_rewritten_or_reported() {
    let opts = Options {
        wrap_tests: true,
        ..Options::default()
    };
    let mut problems = Vec::new();
    let (mut files, mut lines, mut rewrites, mut findings) = (0, 0, 0, 0);
    for name in CRATES {
        let dir = source_dir(name).unwrap_or_else(|| {
            panic!("{name} sources not unpacked: run `cargo fetch` / build the dev-dependencies")
        });
        for path in rust_files(&dir) {
            let shown = path
                .strip_prefix(&dir)
                .unwrap_or(&path)
                .display()
                .to_string();
            let shown = format!("{name}/{shown}");
            let src = std::fs::read_to_string(&path).unwrap();
            files += 1;
            lines += src.lines().count();
            let out = match std::panic::catch_unwind(|| instrument_source(&src, &opts)) {
                Err(_) => {
                    problems.push(format!("{shown}: panicked"));
                    continue;
                }
                Ok(Err(e)) => {
                    problems.push(format!("{shown}:{e}: parse error"));
                    continue;
                }
                Ok(Ok(out)) => out,
            };
            rewrites += out.report.rewrites.len();
            findings += out.report.findings.len();
            if out.text.lines().count() != src.lines().count() {
                problems.push(format!("{shown}: line count changed"));
            }
            if let Err(e) = common::words_keep_their_lines(&src, &out.text) {
                problems.push(format!("{shown}: {e}"));
            }
            match instrument_source(&out.text, &opts) {
                Ok(again) if again.text == out.text => {}
                Ok(_) => problems.push(format!("{shown}: not idempotent")),
                Err(e) => problems.push(format!("{shown}: output does not parse: {e}")),
            }
            for (line, site) in common::remaining_std_sites(&out.text) {
                if !out.report.findings.iter().any(|f| f.line == line) {
                    problems.push(format!(
                        "{shown}:{line}: `{site}` neither rewritten nor reported"
                    ));
                }
            }
            for f in &out.report.findings {
                if f.kind == pulse_instrument::FindingKind::Internal {
                    problems.push(format!("{shown}:{}: internal: {}", f.line, f.message));
                }
            }
        }
    }
    eprintln!(
        "instrumented {files} files, {lines} lines: {rewrites} rewrites, {findings} findings"
    );
    assert!(
        files > 50 && rewrites > 300,
        "suspiciously little: {files} files, {rewrites} rewrites"
    );
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}
