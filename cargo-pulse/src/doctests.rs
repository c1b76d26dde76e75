//! The doctests a run leaves out. `cargo test` runs a library's doctests; pulse cannot
//! (rustdoc builds each from its comment's text, which pulse neither rewrites nor schedules,
//! `cli::DOCTESTS`), so the summary names the libraries that have some instead of passing
//! over them. Named, not counted: which blocks rustdoc runs depends on `cfg`s (a block in
//! `#[cfg_attr(feature = "std", doc = "..")]`, an item behind a feature) that a reading of
//! the text cannot settle (a count was 2 for ringbuf's 23, 115 for thingbuf's 61).

use std::path::Path;

/// Whether the doc comments (`///`, `//!`) of the `.rs` files under `src_dir` have a Rust
/// code block, which rustdoc would build as a doctest (`ignore`d ones left out). Blocks in
/// docs a crate pulls in with `#[doc = include_str!(..)]` are not seen.
pub fn any(src_dir: &Path) -> bool {
    walkdir::WalkDir::new(src_dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "rs"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .any(|text| in_source(&text) > 0)
}

/// Doctests in one file's doc comments.
fn in_source(text: &str) -> usize {
    let mut open = false; // inside a fence
    let mut found = 0;
    for line in text.lines() {
        let line = line.trim_start();
        let Some(doc) = line
            .strip_prefix("///")
            .or_else(|| line.strip_prefix("//!"))
        else {
            continue;
        };
        let Some(info) = doc.trim_start().strip_prefix("```") else {
            continue;
        };
        if !open {
            found += usize::from(is_doctest(info));
        }
        open = !open;
    }
    found
}

/// Whether a fence's info string makes its block a doctest: no language, or `rust`, with
/// rustdoc's attributes (`no_run`, `should_panic`, `compile_fail`, `edition2021`, an error
/// code `E0277`, ...), and not `ignore`.
fn is_doctest(info: &str) -> bool {
    let words = info
        .split(|c: char| c == ',' || c.is_whitespace())
        .map(str::trim)
        .filter(|w| !w.is_empty() && !w.starts_with('{'));
    let mut doctest = true;
    for word in words {
        match word {
            "rust" | "no_run" | "should_panic" | "compile_fail" | "test_harness"
            | "standalone_crate" => {}
            w if w.starts_with("edition") => {}
            w if w.len() == 5
                && w.starts_with('E')
                && w[1..].bytes().all(|b| b.is_ascii_digit()) => {}
            _ => doctest = false, // `ignore`, `text`, `toml`, `sh`, ...
        }
    }
    doctest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_blocks_in_doc_comments_count_and_others_do_not() {
        let src = r#"
//! ```
//! assert!(true);
//! ```
/// ```rust,no_run
/// run();
/// ```
/// ```text
/// not code
/// ```
/// ```ignore
/// skipped();
/// ```
/// ```should_panic
/// panic!();
/// ```
// ```
// a plain comment's fence
// ```
fn f() {}
/// ```edition2018
/// ok();
/// ```
/// ```compile_fail,E0277
/// let x: u32 = "no";
/// ```
"#;
        assert_eq!(in_source(src), 5);
    }

    #[test]
    fn a_fence_inside_a_text_block_does_not_close_it_twice() {
        // The second ``` closes the toml block; the third opens a doctest.
        let src = "/// ```toml\n/// a = 1\n/// ```\n/// ```\n/// x();\n/// ```\n";
        assert_eq!(in_source(src), 1);
    }
}
