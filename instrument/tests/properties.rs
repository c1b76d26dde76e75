//! Property tests over generated files: random combinations of the fixtures' top-level
//! items, nested in modules, interleaved with comments, strings and non-ASCII text, with LF
//! or CRLF line ends. For each: the output parses, instrumenting it again changes nothing,
//! the line count is kept, every untouched word keeps its line, and no std sync/thread/time
//! path is left unrewritten and unreported. Randomly corrupted inputs must never panic.
//!
//! Hand-rolled (xorshift) rather than proptest, to keep the build small; a failing case
//! prints its seed, and `INSTRUMENT_PROPERTIES_SEED`/`INSTRUMENT_PROPERTIES_CASES` replay or widen a run.

mod common;

use pulse_instrument::{instrument_source, FindingKind, Options};
use std::path::Path;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Top-level chunks of the fixtures: text between blank lines that starts at column 0 and
/// is not a file-level attribute or doc.
fn fragments() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for path in names {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".rs")
            || name.ends_with(".expected.rs")
            || name == "broken.rs"
            || name == "included_expr.rs"
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let mut chunk = String::new();
        for line in text.lines() {
            if line.trim().is_empty() && !chunk.is_empty() {
                let last_is_top = chunk.lines().last().is_some_and(|l| !l.starts_with(' '));
                if last_is_top {
                    out.push(std::mem::take(&mut chunk));
                    continue;
                }
            }
            chunk.push_str(line);
            chunk.push('\n');
        }
        if !chunk.is_empty() {
            out.push(chunk);
        }
    }
    out.retain(|c| {
        !c.trim().is_empty()
            && !c
                .lines()
                .any(|l| l.starts_with("//!") || l.starts_with("#!"))
    });
    out
}

const NOISE: &[&str] = &[
    "// a comment naming std::sync::Mutex and std::thread::spawn\n",
    "/* block comment: std::time::Instant::now()\n   over two lines */\n",
    "const NOISE_STR: &str = \"std::sync::Arc<std::thread::JoinHandle>\";\n",
    "// ünïcödé 日本語 std::hint::spin_loop()\n",
    "\n",
    "static NOISE_U: &str = \"ß\"; fn noise_fn() -> u8 { let _é = \"é\"; std::thread::yield_now(); 1 }\n",
    "/// doc: use std::sync::Mutex;\nfn documented() {}\n",
];

fn generate(rng: &mut Rng, frags: &[String]) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for k in 0..1 + rng.below(8) {
        if rng.chance(30) {
            out.push_str(NOISE[rng.below(NOISE.len())]);
        }
        if rng.chance(25) {
            let attr = if rng.chance(50) { "#[cfg(test)]\n" } else { "" };
            out.push_str(&format!("{attr}mod gen_{k} {{\n"));
            depth += 1;
        }
        out.push_str(&frags[rng.below(frags.len())]);
        if depth > 0 && rng.chance(50) {
            out.push_str("}\n");
            depth -= 1;
        }
    }
    out.push_str(&"}\n".repeat(depth));
    if rng.chance(20) {
        out = out.replace('\n', "\r\n");
    }
    out
}

fn options(rng: &mut Rng) -> Options {
    Options {
        wrap_tests: rng.chance(50),
        atomic_paths: if rng.chance(50) {
            vec!["std::fs::*".into(), "mydb::Client::query".into()]
        } else {
            vec![]
        },
        declare_facade: rng.chance(30),
        ..Options::default()
    }
}

fn seeds() -> (u64, usize) {
    let seed = std::env::var("INSTRUMENT_PROPERTIES_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let cases = std::env::var("INSTRUMENT_PROPERTIES_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    (seed, cases)
}

fn check(src: &str, opts: &Options) -> Result<(), String> {
    let out =
        instrument_source(src, opts).map_err(|e| format!("generated file did not parse: {e}"))?;
    let text = &out.text;
    if text.matches('\n').count() != src.matches('\n').count() {
        return Err("line count changed".into());
    }
    let again =
        instrument_source(text, opts).map_err(|e| format!("output does not parse: {e}\n{text}"))?;
    if &again.text != text {
        return Err(format!(
            "not idempotent:\n--- once\n{text}\n--- twice\n{}",
            again.text
        ));
    }
    common::words_keep_their_lines(src, text)?;
    let shadowed = out
        .report
        .findings
        .iter()
        .any(|f| f.kind == FindingKind::StdShadowed);
    let left = common::remaining_std_sites(text);
    if !left.is_empty() && !shadowed {
        return Err(format!(
            "std paths left unrewritten and unreported: {left:?}\n{text}"
        ));
    }
    Ok(())
}

#[test]
fn generated_files_keep_every_invariant() {
    let frags = fragments();
    assert!(frags.len() > 40, "too few fragments: {}", frags.len());
    let (seed, cases) = seeds();
    for case in 0..cases {
        let case_seed = seed
            .wrapping_add(case as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            | 1;
        let mut rng = Rng(case_seed);
        let src = generate(&mut rng, &frags);
        let opts = options(&mut rng);
        let result = std::panic::catch_unwind(|| check(&src, &opts))
            .unwrap_or_else(|_| Err("panicked".into()));
        if let Err(e) = result {
            panic!("case {case} (INSTRUMENT_PROPERTIES_SEED={seed}, seed {case_seed:#x}) failed: {e}\n--- input\n{src}");
        }
    }
}

/// Random damage: delete, duplicate or insert text. Never a panic; when the damaged file
/// still parses, the output parses, is idempotent and keeps its lines.
#[test]
fn corrupted_inputs_never_panic() {
    let frags = fragments();
    let (seed, cases) = seeds();
    const JUNK: &[&str] = &[
        "{",
        "}",
        "(",
        "::",
        "#[",
        "std::sync::",
        "#[test]",
        "#[pulse::atomic]",
        "é",
        "\"",
        "r#\"",
        "'",
        "/*",
        "use std::{",
        ";",
        "\n",
    ];
    let mut parsed = 0;
    for case in 0..cases {
        let case_seed = seed
            .wrapping_add(1000 + case as u64)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            | 1;
        let mut rng = Rng(case_seed);
        let mut src = generate(&mut rng, &frags);
        for _ in 0..1 + rng.below(3) {
            let mut at = rng.below(src.len() + 1);
            while !src.is_char_boundary(at) {
                at -= 1;
            }
            match rng.below(3) {
                0 => {
                    let mut end = (at + rng.below(20)).min(src.len());
                    while !src.is_char_boundary(end) {
                        end += 1;
                    }
                    src.replace_range(at..end, "");
                }
                1 => src.insert_str(at, JUNK[rng.below(JUNK.len())]),
                _ => {
                    let line: String = src[at..].lines().next().unwrap_or_default().to_owned();
                    src.insert_str(at, &line);
                }
            }
        }
        let opts = Options {
            wrap_tests: true,
            atomic_paths: vec!["std::fs::*".into()],
            ..Options::default()
        };
        let result = std::panic::catch_unwind(|| match instrument_source(&src, &opts) {
            Err(_) => Ok(false),
            Ok(out) => {
                if out.text.matches('\n').count() != src.matches('\n').count() {
                    return Err("line count changed".to_owned());
                }
                match instrument_source(&out.text, &opts) {
                    Ok(again) if again.text == out.text => Ok(true),
                    Ok(again) => Err(format!(
                        "not idempotent:\n--- once\n{}\n--- twice\n{}",
                        out.text, again.text
                    )),
                    Err(e) => Err(format!("output does not parse: {e}")),
                }
            }
        });
        match result {
            Ok(Ok(p)) => parsed += p as usize,
            Ok(Err(e)) => panic!("case {case} (seed {case_seed:#x}) failed: {e}\n--- input\n{src}"),
            Err(_) => panic!("case {case} (seed {case_seed:#x}) panicked\n--- input\n{src}"),
        }
    }
    // Some damage leaves valid Rust (a deleted comment, a duplicated line): make sure both
    // paths were exercised.
    assert!(parsed > 0 && parsed < cases, "parsed {parsed} of {cases}");
}
