//! Generates the bug-finding programs from the examples corpus (../examples/*/src/lib.rs):
//! each example's source is ported three times by `pulse-instrument` (the rewriter `cargo
//! pulse` uses) with only the module roots of `std::sync`, `std::thread` (and `std::hint`, and
//! for pulse `std::time`) rewritten to `::pulse::std`, loom or shuttle -- the "swap only the
//! imports" port. A tool that lacks an API the example
//! uses gets no copy; the table says "n/a" with the reason found here.
//!
//! Also records tool versions (from Cargo.lock) and rustc's version for the tables.

use proc_macro2::{TokenStream, TokenTree};
use std::collections::HashSet;
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
    println!("cargo:rerun-if-env-changed=BENCH_SKIP_EXAMPLES");
    let skip: Vec<String> = env::var("BENCH_SKIP_EXAMPLES")
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
                "    ({name:?}, \"skipped by BENCH_SKIP_EXAMPLES\"),"
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
        let code = idents(&src);
        if code.outline_mod {
            writeln!(
                skipped,
                "    ({name:?}, \"src/lib.rs has out-of-line modules\"),"
            )
            .unwrap();
            continue;
        }
        let ident = name.replace('-', "_");
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
                            .find(|(id, t, _)| *t == tool.name && code.has(id))
                            .map(|(_, _, r)| r.to_string())
                    })
                    .or_else(|| {
                        (tool.name == "loom" && code.sync_static).then(|| {
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
                    let rewritten = port(&src, &lib, tool);
                    fs::write(&file, rewritten).unwrap();
                    let modname = format!("{ident}_{}", tool.name);
                    if tool.name == "loom" && code.has("wait_while") {
                        notes.push(("loom", "`Condvar::wait_while` comes from the compat layer src/peer.rs (the std-documented loop over `wait`; loom 0.7 lacks it)".to_string()));
                    }
                    if tool.name == "shuttle" && code.has("sleep") {
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
    sct(&manifest, &gen_dir, pulse_on, &mut modules, &mut registry);
    registry.push_str("];\n");
    skipped.push_str("];\n");
    fs::write(
        out.join("bug_programs.rs"),
        format!("{modules}\n{registry}\n{skipped}"),
    )
    .unwrap();
}

/// The SCTBench-style corpus (`../tests/sct/*.rs`, each with `buggy(n)` / `fixed(n)`): one port
/// per file and tool, one program per instance (file, size), named `sct/<name>`.
const SCT_INSTANCES: &[(&str, &[usize])] = &[
    ("account", &[0]),
    ("deadlock01", &[0]),
    ("lazy01", &[0]),
    ("reorder", &[3, 5, 10, 20]),
    ("twostage", &[2, 20, 100]),
    ("wronglock", &[3, 10]),
    ("circular_buffer", &[0]),
    ("queue", &[0]),
    ("stack", &[0]),
    ("token_ring", &[0]),
    ("dining_philosophers", &[0]),
    ("carter", &[0]),
    ("bluetooth_driver", &[0]),
    ("lost_wakeup", &[0]),
    ("spinlock", &[0]),
    ("double_checked", &[0]),
];

/// Threads (main included) an instance of a sized family runs: loom models at most 5.
fn sct_threads(file: &str, n: usize) -> usize {
    match file {
        "reorder" => n.max(2) + 1,
        "twostage" | "wronglock" => n + 2,
        _ => 4,
    }
}

fn sct(
    manifest: &Path,
    gen_dir: &Path,
    pulse_on: bool,
    modules: &mut String,
    registry: &mut String,
) {
    let dir = manifest.join("../tests/sct");
    println!("cargo:rerun-if-changed={}", dir.display());
    for (file, sizes) in SCT_INSTANCES {
        let path = dir.join(format!("{file}.rs"));
        println!("cargo:rerun-if-changed={}", path.display());
        let Ok(src) = fs::read_to_string(&path) else {
            continue;
        };
        let code = idents(&src);
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
        let mut ported = Vec::new();
        for tool in TOOLS {
            let reason: Option<String> = if tool.name == "pulse" && !pulse_on {
                Some("built without the `pulse` feature".into())
            } else {
                DETECT
                    .iter()
                    .find(|(id, t, _)| *t == tool.name && code.has(id))
                    .map(|(_, _, r)| r.to_string())
            };
            if reason.is_none() {
                let modname = format!("sct_{file}_{}", tool.name);
                let out = gen_dir.join(format!("{modname}.rs"));
                fs::write(&out, port(&src, &path, tool)).unwrap();
                writeln!(
                    modules,
                    "#[path = {:?}]\n#[allow(warnings, clippy::all)]\npub mod {modname};",
                    out.display().to_string()
                )
                .unwrap();
            }
            ported.push((tool.name, reason));
        }
        for &n in *sizes {
            let name = if n == 0 {
                format!("sct/{file}")
            } else {
                format!("sct/{file}_{n}")
            };
            let mut fields = String::new();
            for (tool, reason) in &ported {
                let reason = reason.clone().or_else(|| {
                    (*tool == "loom" && sct_threads(file, n) > 5).then(|| {
                        "loom models at most 5 threads (MAX_THREADS, incl. main)".to_string()
                    })
                });
                match reason {
                    Some(r) => writeln!(fields, "        {tool}: Variant::Na({r:?}),").unwrap(),
                    None => writeln!(
                        fields,
                        "        {tool}: Variant::Run {{ buggy: || sct_{file}_{tool}::buggy({n}), fixed: || sct_{file}_{tool}::fixed({n}) }},"
                    )
                    .unwrap(),
                }
            }
            writeln!(
                registry,
                "    BugProgram {{\n        name: {name:?},\n        summary: {summary:?},\n{fields}        notes: &[],\n    }},"
            )
            .unwrap();
        }
    }
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

/// Every identifier in the code, found by Rust's tokenizer (proc-macro2): comments are not
/// tokens and literals are single tokens, so words in docs and messages never match.
fn idents(src: &str) -> Idents {
    fn walk(stream: TokenStream, out: &mut Idents) {
        let tokens: Vec<TokenTree> = stream.into_iter().collect();
        for (i, tt) in tokens.iter().enumerate() {
            match tt {
                TokenTree::Group(g) => walk(g.stream(), out),
                TokenTree::Ident(id) => {
                    let name = id.to_string();
                    let lifetime = matches!(i.checked_sub(1).map(|k| &tokens[k]), Some(TokenTree::Punct(p)) if p.as_char() == '\'');
                    // `static NAME: <..Mutex|RwLock|Condvar|Atomic..> = ...;`
                    if name == "static" && !lifetime {
                        let sync = tokens[i + 1..]
                            .iter()
                            .take_while(|t| !matches!(t, TokenTree::Punct(p) if p.as_char() == ';'))
                            .flat_map(flatten)
                            .any(|w| {
                                ["Mutex", "RwLock", "Condvar", "Atomic"]
                                    .iter()
                                    .any(|k| w.contains(k))
                            });
                        out.sync_static |= sync;
                    }
                    // `mod name;`
                    if name == "mod"
                        && matches!(tokens.get(i + 1), Some(TokenTree::Ident(_)))
                        && matches!(tokens.get(i + 2), Some(TokenTree::Punct(p)) if p.as_char() == ';')
                    {
                        out.outline_mod = true;
                    }
                    out.names.insert(name);
                }
                _ => {}
            }
        }
    }
    fn flatten(tt: &TokenTree) -> Vec<String> {
        match tt {
            TokenTree::Group(g) => g.stream().into_iter().flat_map(|t| flatten(&t)).collect(),
            TokenTree::Ident(id) => vec![id.to_string()],
            _ => vec![],
        }
    }
    let mut out = Idents::default();
    let stream: TokenStream = src
        .parse()
        .unwrap_or_else(|e| panic!("an example does not tokenize: {e:?}"));
    walk(stream, &mut out);
    out
}

#[derive(Default)]
struct Idents {
    names: HashSet<String>,
    /// A `static` whose type or initializer names a lock, condvar or atomic.
    sync_static: bool,
    /// An out-of-line `mod name;`.
    outline_mod: bool,
}

impl Idents {
    fn has(&self, ident: &str) -> bool {
        self.names.contains(ident)
    }
}

/// The "swap only the imports" port, by the instrumenter `cargo pulse` uses: only the roots of
/// `std::{tool.mods}` paths (and their `core`/`alloc` namesakes) change, to `tool.root`; tests
/// are not wrapped and cfgs are not evaluated (every branch ported).
fn port(src: &str, lib: &Path, tool: &ToolSpec) -> String {
    let opts = pulse_instrument::Options {
        shim_root: tool.root.to_string(),
        std_modules: tool.mods.iter().map(|m| m.to_string()).collect(),
        // pulse's memory-model hook in every `Drop`: the peers' shims have none.
        drop_acquire: tool.name == "pulse",
        ..pulse_instrument::Options::default()
    };
    match pulse_instrument::instrument_source(src, &opts) {
        Ok(out) => out.text,
        Err(e) => panic!("{}:{e}", lib.display()),
    }
}
