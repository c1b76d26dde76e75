//! Generates the bug-finding programs from the examples corpus (../examples/*/src/lib.rs):
//! each example's source is copied three times with only the module roots of `std::sync`,
//! `std::thread` (and `std::hint`, and for pulse `std::time`) rewritten to `::pulse::std`,
//! loom or shuttle -- the "swap only the imports" port. A tool that lacks an API the example
//! uses gets no copy; the table says "n/a" with the reason found here.
//!
//! Also records tool versions (from Cargo.lock) and rustc's version for the tables.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::{env, fs};

struct ToolSpec {
    name: &'static str,
    /// the replacement of `std` in `std::{mods}` paths
    root: &'static str,
    /// std modules that are rewritten to `root`
    mods: &'static [&'static str],
}

const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "pulse",
        root: "::pulse::std",
        mods: &["sync", "thread", "time", "hint"],
    },
    // `crate::peer::loom` re-exports loom, plus the std conveniences loom 0.7 lacks that are
    // plain sugar over what it has (see src/peer.rs); loom does not model time, so std::time
    // stays std.
    ToolSpec {
        name: "loom",
        root: "crate::peer::loom",
        mods: &["sync", "thread", "hint"],
    },
    // shuttle does not model time either: std::time stays std.
    ToolSpec {
        name: "shuttle",
        root: "::shuttle",
        mods: &["sync", "thread", "hint"],
    },
];

/// (identifier in the comment- and string-free source, tool, why that tool cannot run it)
const DETECT: &[(&str, &str, &str)] = &[
    (
        "Barrier",
        "loom",
        "loom has no Barrier (`loom::sync::Barrier::new` is `unimplemented!`)",
    ),
    ("sync_channel", "loom", "loom's mpsc has no `sync_channel`"),
    (
        "recv_timeout",
        "loom",
        "loom's `recv_timeout` is `unimplemented!`",
    ),
    ("scope", "loom", "loom has no `thread::scope`"),
    (
        "sleep",
        "loom",
        "loom does not model time (no `thread::sleep`)",
    ),
    ("Instant", "loom", "loom does not model time (no `Instant`)"),
    ("SystemTime", "loom", "loom does not model time"),
    (
        "wait_timeout",
        "loom",
        "loom does not model time (`wait_timeout` never times out)",
    ),
    (
        "wait_timeout_while",
        "loom",
        "loom does not model time (no `wait_timeout_while`)",
    ),
    ("park_timeout", "loom", "loom has no `park_timeout`"),
    ("Once", "loom", "loom has no `Once`"),
    ("OnceLock", "loom", "loom has no `OnceLock`"),
    ("LazyLock", "loom", "loom has no `LazyLock`"),
    ("OnceLock", "shuttle", "shuttle has no `OnceLock`"),
    ("LazyLock", "shuttle", "shuttle has no `LazyLock`"),
    (
        "Instant",
        "shuttle",
        "shuttle does not model time (no `Instant`)",
    ),
    ("SystemTime", "shuttle", "shuttle does not model time"),
    (
        "wait_timeout",
        "shuttle",
        "shuttle does not model time (`wait_timeout` never times out)",
    ),
    (
        "wait_timeout_while",
        "shuttle",
        "shuttle does not model time (`wait_timeout_while` never times out)",
    ),
    (
        "recv_timeout",
        "shuttle",
        "shuttle does not model time (`recv_timeout` never times out)",
    ),
    (
        "park_timeout",
        "shuttle",
        "shuttle does not model time (`park_timeout` = `park`)",
    ),
];

/// Reasons the detector above cannot see: (example, tool, reason). Each was confirmed by
/// reading the peer's source (versions in Cargo.lock).
const OVERRIDES: &[(&str, &str, &str)] = &[(
    "mpsc-pipeline",
    "loom",
    "loom's mpsc `Receiver` has no iterator and does not model disconnection (the writer ends when every `Sender` is dropped)",
)];

/// Run despite a detected time API, because time is incidental to the bug there:
/// (example, tool, what the table notes about it).
const ALLOW: &[(&str, &str, &str)] = &[
    (
        "condvar-notify-one",
        "loom",
        "time is only the test's watchdog: loom's `wait_timeout` never times out and `Instant` is the real clock, so the hang shows as loom's deadlock",
    ),
    (
        "condvar-notify-one",
        "shuttle",
        "time is only the test's watchdog: shuttle's `wait_timeout` never times out and `Instant` is the real clock, so the hang shows as shuttle's deadlock",
    ),
];

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    versions(&manifest);

    let examples = manifest.join("../examples");
    println!("cargo:rerun-if-changed={}", examples.display());
    println!("cargo:rerun-if-env-changed=PULSE_BENCH_SKIP_EXAMPLES");
    let skip: Vec<String> = env::var("PULSE_BENCH_SKIP_EXAMPLES")
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let pulse_on = env::var_os("CARGO_FEATURE_PULSE").is_some();

    let mut dirs: Vec<PathBuf> = fs::read_dir(&examples)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();

    let gen_dir = out.join("bugs");
    fs::create_dir_all(&gen_dir).unwrap();
    let mut modules = String::new();
    let mut registry = String::from("pub static PROGRAMS: &[BugProgram] = &[\n");
    let mut skipped = String::from("pub static SKIPPED: &[(&str, &str)] = &[\n");

    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let lib = dir.join("src/lib.rs");
        println!("cargo:rerun-if-changed={}", dir.display());
        println!("cargo:rerun-if-changed={}", dir.join("src").display());
        println!("cargo:rerun-if-changed={}", lib.display());
        if skip.contains(&name) {
            writeln!(
                skipped,
                "    ({name:?}, \"skipped by PULSE_BENCH_SKIP_EXAMPLES\"),"
            )
            .unwrap();
            continue;
        }
        let Ok(src) = fs::read_to_string(&lib) else {
            writeln!(skipped, "    ({name:?}, \"no src/lib.rs yet\"),").unwrap();
            continue;
        };
        if !src.contains("pub fn scenario_buggy") || !src.contains("pub fn scenario_fixed") {
            writeln!(
                skipped,
                "    ({name:?}, \"src/lib.rs has no scenario_buggy/scenario_fixed\"),"
            )
            .unwrap();
            continue;
        }
        if src.lines().any(|l| {
            let t = l.trim_start();
            (t.starts_with("mod ") || t.starts_with("pub mod ")) && t.trim_end().ends_with(';')
        }) {
            writeln!(
                skipped,
                "    ({name:?}, \"src/lib.rs has out-of-line modules\"),"
            )
            .unwrap();
            continue;
        }
        let ident = name.replace('-', "_");
        let code = strip_comments_and_strings(&src);
        // the first sentence of the crate doc
        let doc: Vec<&str> = src
            .lines()
            .map_while(|l| l.trim_start().strip_prefix("//!"))
            .map(str::trim)
            .take_while(|l| !l.is_empty())
            .collect();
        let doc = doc.join(" ");
        let summary = match doc.find(". ") {
            Some(i) => doc[..=i].to_string(),
            None => doc,
        };

        let mut fields = String::new();
        let mut notes: Vec<(&str, String)> = Vec::new();
        for tool in TOOLS {
            let allowed = ALLOW
                .iter()
                .find(|(ex, t, _)| *ex == name && *t == tool.name);
            if let Some((_, t, note)) = allowed {
                notes.push((t, note.to_string()));
            }
            let reason: Option<String> = if tool.name == "pulse" && !pulse_on {
                Some("built without the `pulse` feature".into())
            } else if allowed.is_some() {
                None
            } else {
                OVERRIDES
                    .iter()
                    .find(|(ex, t, _)| *ex == name && *t == tool.name)
                    .map(|(_, _, r)| r.to_string())
                    .or_else(|| {
                        DETECT
                            .iter()
                            .find(|(id, t, _)| *t == tool.name && has_ident(&code, id))
                            .map(|(_, _, r)| r.to_string())
                    })
                    .or_else(|| {
                        (tool.name == "loom" && has_const_static_sync(&code)).then(|| {
                            "loom's primitives have no `const fn new`, so they cannot be `static`s".to_string()
                        })
                    })
            };
            match reason {
                Some(r) => {
                    writeln!(fields, "        {}: Variant::Na({r:?}),", tool.name).unwrap();
                }
                None => {
                    let file = gen_dir.join(format!("{ident}_{}.rs", tool.name));
                    let rewritten = rewrite(&src, tool.root, tool.mods);
                    fs::write(&file, rewritten).unwrap();
                    let modname = format!("{ident}_{}", tool.name);
                    if tool.name == "loom" && has_ident(&code, "wait_while") {
                        notes.push(("loom", "`Condvar::wait_while` comes from the compat layer src/peer.rs (the std-documented loop over `wait`; loom 0.7 lacks it)".to_string()));
                    }
                    if tool.name == "shuttle" && has_ident(&code, "sleep") {
                        notes.push((
                            "shuttle",
                            "shuttle does not model time: its `thread::sleep` is a yield"
                                .to_string(),
                        ));
                    }
                    writeln!(
                        modules,
                        "#[path = {:?}]\n#[allow(warnings, clippy::all)]\npub mod {modname};",
                        file.display().to_string()
                    )
                    .unwrap();
                    writeln!(
                        fields,
                        "        {}: Variant::Run {{ buggy: {modname}::scenario_buggy, fixed: {modname}::scenario_fixed }},",
                        tool.name
                    )
                    .unwrap();
                }
            }
        }
        let notes: Vec<String> = notes
            .iter()
            .map(|(t, n)| format!("({t:?}, {n:?})"))
            .collect();
        writeln!(
            registry,
            "    BugProgram {{\n        name: {name:?},\n        summary: {summary:?},\n{fields}        notes: &[{}],\n    }},",
            notes.join(", ")
        )
        .unwrap();
    }
    registry.push_str("];\n");
    skipped.push_str("];\n");
    fs::write(
        out.join("bug_programs.rs"),
        format!("{modules}\n{registry}\n{skipped}"),
    )
    .unwrap();
}

/// Writes BENCH_*_VERSION env vars for machine.rs.
fn versions(manifest: &Path) {
    println!("cargo:rerun-if-changed=Cargo.lock");
    let lock = fs::read_to_string(manifest.join("Cargo.lock")).unwrap_or_default();
    for (krate, var) in [
        ("loom", "BENCH_LOOM_VERSION"),
        ("shuttle", "BENCH_SHUTTLE_VERSION"),
        ("corosensei", "BENCH_COROSENSEI_VERSION"),
        ("pulse", "BENCH_PULSE_VERSION"),
    ] {
        let needle = format!("name = \"{krate}\"\nversion = \"");
        let v = lock
            .find(&needle)
            .map(|i| {
                let rest = &lock[i + needle.len()..];
                rest[..rest.find('"').unwrap_or(0)].to_string()
            })
            .unwrap_or_else(|| "?".into());
        println!("cargo:rustc-env={var}={v}");
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let v = Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "rustc ?".into());
    println!("cargo:rustc-env=BENCH_RUSTC_VERSION={v}");
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn has_ident(code: &str, ident: &str) -> bool {
    code.match_indices(ident).any(|(i, _)| {
        let before = code[..i].chars().next_back();
        let after = code[i + ident.len()..].chars().next();
        !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
    })
}

/// `static NAME: <..Mutex|RwLock|Condvar|Atomic..> = ...` at item level.
fn has_const_static_sync(code: &str) -> bool {
    code.lines().any(|l| {
        let t = l.trim_start();
        let t = t.strip_prefix("pub ").unwrap_or(t);
        t.starts_with("static ")
            && ["Mutex", "RwLock", "Condvar", "Atomic"]
                .iter()
                .any(|k| t.contains(k))
    })
}

/// Source with comments removed and string/char literal contents blanked, so that detection
/// does not match words in docs or messages.
fn strip_comments_and_strings(src: &str) -> String {
    let mut out = String::new();
    lex(src, |tok, text| match tok {
        Tok::Code => out.push_str(text),
        Tok::Comment => out.push(' '),
        Tok::Literal => out.push_str("\"\""),
    });
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Tok {
    Code,
    Comment,
    Literal,
}

/// A small Rust lexer: splits `src` into code, comments and string/char literals.
fn lex(src: &str, mut emit: impl FnMut(Tok, &str)) {
    let b = src.as_bytes();
    let mut i = 0;
    let mut code_start = 0;
    macro_rules! flush {
        () => {
            if code_start < i {
                emit(Tok::Code, &src[code_start..i]);
            }
        };
    }
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            flush!();
            let end = src[i..].find('\n').map(|e| i + e).unwrap_or(b.len());
            emit(Tok::Comment, &src[i..end]);
            i = end;
            code_start = i;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            flush!();
            let mut depth = 0;
            let start = i;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            emit(Tok::Comment, &src[start..i]);
            code_start = i;
        } else if c == b'"'
            || (c == b'r' && matches!(b.get(i + 1), Some(b'"') | Some(b'#')) && !prev_ident(b, i))
            || (c == b'b' && b.get(i + 1) == Some(&b'"') && !prev_ident(b, i))
        {
            // (raw) string literal
            let start = i;
            let mut hashes = 0;
            let raw = c == b'r';
            if c != b'"' {
                i += 1;
            }
            if raw {
                while b.get(i) == Some(&b'#') {
                    hashes += 1;
                    i += 1;
                }
                if b.get(i) != Some(&b'"') {
                    // `r#ident` raw identifier, not a string
                    i = start + 1;
                    continue;
                }
            }
            flush_at(&mut emit, src, code_start, start);
            i += 1; // opening quote
            while i < b.len() {
                if !raw && b[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i] == b'"' && (0..hashes).all(|h| b.get(i + 1 + h) == Some(&b'#')) {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            emit(Tok::Literal, &src[start..i.min(b.len())]);
            code_start = i;
        } else if c == b'\'' {
            // char literal or lifetime
            let end = if b.get(i + 1) == Some(&b'\\') {
                src[i + 3..].find('\'').map(|e| i + 3 + e + 1)
            } else {
                let ch_len = src[i + 1..]
                    .chars()
                    .next()
                    .map(|ch| ch.len_utf8())
                    .unwrap_or(1);
                (b.get(i + 1 + ch_len) == Some(&b'\'')).then_some(i + 2 + ch_len)
            };
            match end {
                Some(end) => {
                    flush!();
                    emit(Tok::Literal, &src[i..end]);
                    i = end;
                    code_start = i;
                }
                None => i += 1,
            }
        } else {
            i += src[i..].chars().next().map(|ch| ch.len_utf8()).unwrap_or(1);
        }
    }
    flush!();
}

fn prev_ident(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

fn flush_at(emit: &mut impl FnMut(Tok, &str), src: &str, from: usize, to: usize) {
    if from < to {
        emit(Tok::Code, &src[from..to]);
    }
}

/// Rewrites `std::<m>` / `::std::<m>` for `m` in `mods` to `<root>::<m>` in code (not in
/// comments or literals), including `use std::{..}` groups, which become `use {..}` groups
/// of full paths.
fn rewrite(src: &str, root: &str, mods: &[&str]) -> String {
    let mut out = String::new();
    lex(src, |tok, text| {
        if tok == Tok::Code {
            out.push_str(&rewrite_code(text, root, mods));
        } else {
            out.push_str(text);
        }
    });
    out
}

fn rewrite_code(code: &str, root: &str, mods: &[&str]) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(pos) = find_std_path(rest) {
        let (start, after) = pos; // start: where `::std::`/`std::` begins; after: index after `std::`
        out.push_str(&rest[..start]);
        let tail = &rest[after..];
        if tail.starts_with('{') {
            let close = matching_brace(tail).expect("unbalanced `std::{` group");
            let inner = &tail[1..close];
            let items: Vec<String> = split_top_level(inner)
                .into_iter()
                .map(|item| item.trim().to_string())
                .filter(|item| !item.is_empty())
                .map(|item| {
                    let first: String = item.chars().take_while(|&c| is_ident(c)).collect();
                    if item == "self" {
                        "::std::{self}".to_string()
                    } else if mods.contains(&first.as_str()) {
                        format!("{root}::{}", rewrite_code(&item, root, mods))
                    } else {
                        format!("::std::{item}")
                    }
                })
                .collect();
            out.push('{');
            out.push_str(&items.join(", "));
            out.push('}');
            rest = &tail[close + 1..];
        } else {
            let first: String = tail.chars().take_while(|&c| is_ident(c)).collect();
            if mods.contains(&first.as_str()) {
                out.push_str(root);
                out.push_str("::");
            } else {
                out.push_str(&rest[start..after]);
            }
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// The next `std::` that starts a path (not `foo::std::`, not `my_std::`).
fn find_std_path(s: &str) -> Option<(usize, usize)> {
    let mut from = 0;
    while let Some(off) = s[from..].find("std::") {
        let i = from + off;
        let before = &s[..i];
        let prev = before.chars().next_back();
        if prev.is_some_and(is_ident) {
            from = i + 5;
            continue;
        }
        if before.ends_with("::") {
            // `::std::` (absolute) is ours; `x::std::` is someone else's module
            let b2 = before.strip_suffix("::").unwrap_or(before).trim_end();
            if b2
                .chars()
                .next_back()
                .is_some_and(|c| is_ident(c) || c == '>')
            {
                from = i + 5;
                continue;
            }
            return Some((i - 2, i + 5));
        }
        return Some((i, i + 5));
    }
    None
}

fn matching_brace(s: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}
