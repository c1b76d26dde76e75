//! The one place that calls the instrumenter: turns a Rust source file of the user's into its
//! instrumented text plus a JSON note (the file's report) kept with the mirror's state, and
//! summarizes those notes for people.
//!
//! A file syn cannot parse is mirrored unchanged: the compiler then reports the real error
//! against the user's file, which is more useful than our parse error.

use std::path::Path;

use pulse_instrument::{instrument_source, Options};
use serde_json::{json, Value};

use crate::copy_tree::Transformed;

pub fn options(atomic_paths: &[String]) -> Options {
    Options {
        shim_root: "::pulse::std".to_string(),
        wrap_tests: true,
        atomic_paths: atomic_paths.to_vec(),
        declare_facade: false,
    }
}

/// A fingerprint of everything the instrumented text depends on besides the source.
pub fn options_key(opts: &Options) -> String {
    format!(
        "{}|{}|{}",
        opts.shim_root,
        opts.wrap_tests,
        opts.atomic_paths.join(",")
    )
}

/// Instruments one file; `user_path` is where the user sees it (named in the report).
/// `crate_root_2015`: the file is the crate root of an edition-2015 target.
pub fn instrument_file(
    user_path: &Path,
    bytes: Vec<u8>,
    opts: &Options,
    crate_root_2015: bool,
) -> Transformed {
    let Ok(text) = String::from_utf8(bytes.clone()) else {
        return Transformed { bytes, note: None };
    };
    let root_opts;
    let opts = if crate_root_2015 {
        root_opts = Options {
            declare_facade: true,
            ..opts.clone()
        };
        &root_opts
    } else {
        opts
    };
    match instrument_source(&text, opts) {
        Ok(out) => {
            let mut report = out.report;
            report.path = user_path.to_path_buf();
            let note = serde_json::to_value(&report).ok();
            Transformed {
                bytes: out.text.into_bytes(),
                note,
            }
        }
        Err(e) => {
            let note = json!({
                "path": user_path,
                "rewrites": [],
                "findings": [],
                "parse_error": { "line": e.line, "column": e.column, "message": e.message },
            });
            Transformed {
                bytes,
                note: Some(note),
            }
        }
    }
}

/// Counts over the notes of all mirrored files.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub files: usize,
    pub rewrites: usize,
    /// (user file, line, column, message)
    pub findings: Vec<(String, u64, u64, String)>,
    pub parse_errors: Vec<(String, u64, u64, String)>,
}

impl Summary {
    pub fn from_notes<'a>(notes: impl Iterator<Item = &'a Value>) -> Summary {
        let mut s = Summary::default();
        for note in notes {
            s.files += 1;
            let path = note
                .get("path")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string();
            s.rewrites += note
                .get("rewrites")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let pos = |v: &Value| {
                (
                    v.get("line").and_then(Value::as_u64).unwrap_or(0),
                    v.get("column").and_then(Value::as_u64).unwrap_or(0),
                    v.get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                )
            };
            for f in note
                .get("findings")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let (l, c, m) = pos(f);
                s.findings.push((path.clone(), l, c, m));
            }
            if let Some(e) = note.get("parse_error").filter(|e| !e.is_null()) {
                let (l, c, m) = pos(e);
                s.parse_errors.push((path.clone(), l, c, m));
            }
        }
        s.findings.sort();
        s.parse_errors.sort();
        s
    }
}
